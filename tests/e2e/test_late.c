/*
 * tests/e2e/test_late.c — the heap agent arriving late: late-target (see
 * late_target.cpp) runs without LD_PRELOAD, dlopen()s libltr-heap.so while
 * its threads allocate (what ltr's injector makes a process do), and a heap
 * session started afterwards records its known allocations exactly, with
 * their stacks, as if it had been preloaded. Also: dormant, fork, a second
 * load, a library dlopen'ed later, and real interpreters loading the agent.
 */
#include "base/heap_events.h"
#include "util/testutil.h"

#include <ltr/trace.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* `function` numbers of docs/heap-events.md */
enum { FN_MALLOC = 1, FN_CALLOC = 2, FN_REALLOC = 3, FN_POSIX_MEMALIGN = 5, FN_NEW = 10, FN_NEW_ARR = 11 };

static const char *agent(void)
{
    static char path[600];
    snprintf(path, sizeof path, "%s/../lib/libltr-heap.so", getenv("LTR_TEST_BIN"));
    return path;
}

/* What a run printed and the trace it left (NULL t: no session). */
typedef struct run {
    tu_result r;
    ltr_trace *t;
    char trace[600];
} run;

/* late-target MODE started plainly (env: a prefix such as LD_PRELOAD=...,
 * or ""); once it has loaded the agent, a heap
 * session (session_opts, "-" for none) starts and its gate opens; the trace
 * is read when it has exited. The shell prints "target STATUS". */
static const char *target_name = "late-target";

static run run_target_env(const char *env, const char *mode, const char *session_opts)
{
    run x = {0};
    const char *tmp = getenv("TMPDIR");
    static int runs; /* a trace of its own per run: stop writes over none */
    snprintf(x.trace, sizeof x.trace, "%s/late-%d.ltr", tmp, runs++);
    bool session = strcmp(session_opts, "-") != 0;
    x.r = tu_run("rm -f %s/go %s/out; %s %s %s %s %s > %s/out & p=$!; "
                 "i=0; while ! grep -q '^loaded' %s/out && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; "
                 "%s%s%s%s touch %s/go; wait $p; echo target $? >> %s/out; cat %s/out; "
                 "%s%s%s%s",
                 tmp, tmp, env, tu_test_bin(target_name), mode, agent(), tmp, tmp, tmp,
                 session ? tu_ltr() : "", session ? " start heap --instance late --filemode " : "",
                 session ? session_opts : "", session ? " && " : "", tmp, tmp, tmp,
                 session ? tu_ltr() : "", session ? " stop --instance late " : "", session ? x.trace : "",
                 session ? " >&2" : "");
    if (x.r.status != 0 || !strstr(x.r.out, "target 0"))
        fail_msg("late-target %s: status %d\n%s%s", mode, x.r.status, x.r.out, x.r.err);
    if (session) {
        ltr_error err;
        if (ltr_trace_open(x.trace, &x.t, &err) != 0)
            fail_msg("no trace: %s", err.msg);
    }
    return x;
}

static run run_target(const char *mode, const char *session_opts)
{
    return run_target_env("", mode, session_opts);
}

static void run_free(run *x)
{
    if (x->t)
        ltr_trace_close(x->t);
    tu_free(&x->r);
}

static unsigned long target_pid(const run *x)
{
    const char *p = strstr(x->r.out, "pid ");
    return p ? strtoul(p + 4, NULL, 10) : 0;
}

/* The range of a function late-target printed ("name start size"). */
static void fn_range(const run *x, const char *name, uint64_t *start, uint64_t *size)
{
    char key[64];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *p = strstr(x->r.out, key);
    unsigned long long s = 0, n = 0;
    if (!p || sscanf(p + strlen(key), "%llx %llu", &s, &n) != 2)
        fail_msg("late-target did not print the range of %s:\n%s", name, x->r.out);
    *start = s;
    *size = n;
}

static uint64_t field(const ltr_event *ev, const char *name)
{
    uint64_t v = 0;
    ltr_event_get_u64(ev, name, &v);
    return v;
}

/* What the trace holds of one kind of allocation. */
typedef struct tally {
    size_t n;           /* events */
    uint64_t bytes;     /* their sizes */
    size_t in_fn;       /* whose innermost frame is in [start, start+size) */
    size_t other_pid;   /* made by another process than pid */
} tally;

/* One kind of allocation looked for: Alloc or Realloc events (name) of
 * sizes [size, size + sizes), of function fn (0: any), of process pid (0:
 * any), their stacks checked against [start, +len); c is what was found. */
typedef struct query {
    const char *name;
    uint64_t size, sizes;
    int fn;
    unsigned long pid;
    uint64_t start, len;
    tally c;
} query;

/* Tallies every query in one pass over the trace: a pass read each event
 * and its fields through the reader, and the trace was read again for each
 * query (9 a run of late-target, 128 an interpreter's, all under ASan in
 * its build). */
static void count_all(ltr_trace *t, query *q, size_t nq)
{
    ltr_error err;
    assert_int_equal(ltr_trace_rewind(t, &err), 0);
    const ltr_event *ev;
    while (ltr_trace_next(t, &ev, &err) == 1) {
        if (strcmp(ev->layout->provider->name, LTR_HEAP_PROVIDER))
            continue;
        uint64_t size = field(ev, "size"), fn = field(ev, "function");
        for (query *k = q; k < q + nq; k++) {
            if (strcmp(ev->layout->name, k->name) || size < k->size || size - k->size >= k->sizes ||
                (k->fn && fn != (uint64_t)k->fn))
                continue;
            if (k->pid && ev->pid != k->pid) {
                k->c.other_pid++;
                continue;
            }
            k->c.n++;
            k->c.bytes += size;
            const ltr_stack *st = ltr_trace_stack_find(t, ev->pid, (uint32_t)field(ev, "stack"));
            uint64_t ip = st && st->frame_count ? st->frames[0] - 1 : 0; /* return address: inside the call */
            k->c.in_fn += k->len && ip >= k->start && ip < k->start + k->len;
        }
    }
}

/* An allocation of late_target.cpp expected n times in fn (NULL: anywhere). */
typedef struct known {
    const char *name;
    uint64_t size;
    int func;
    size_t n;
    const char *fn;
} known;

/* The known allocations of late_target.cpp, each exactly once per call. */
static const known allocations[] = {
    {"Alloc", 5001, FN_MALLOC, 10, "late_alloc_c"},
    {"Alloc", 5010, FN_CALLOC, 10, "late_alloc_c"},
    {"Alloc", 5003, FN_POSIX_MEMALIGN, 10, "late_alloc_c"},
    {"Alloc", 5004, FN_REALLOC, 10, "late_alloc_c"},
    {"Alloc", 5005, FN_NEW_ARR, 10, "late_alloc_cxx"},
    {"Alloc", 5006, FN_NEW, 10, "late_alloc_cxx"},
    /* libheapdl.so, dlopen'ed after the agent came */
    {"Alloc", 3600, FN_MALLOC, 1, "dl_alloc"},
    /* liblatesub.so, found only through the RUNPATH of the library that
     * dlopened it: the agent's dlopen wrapper searched as ld.so would */
    {"Alloc", 3700, FN_MALLOC, 1, "sub_alloc"},
    /* the realloc of a block allocated before the agent came (expect_known only) */
    {"Realloc", 7004, FN_REALLOC, 1, NULL},
};
enum { N_KNOWN = sizeof allocations / sizeof allocations[0] };

/* The first nk of allocations[] in the trace of x, in one pass: each n
 * times, all n bytes, all with its fn as the innermost frame. */
static void expect_in(const run *x, size_t nk)
{
    query q[N_KNOWN];
    for (size_t i = 0; i < nk; i++) {
        const known *k = &allocations[i];
        q[i] = (query){.name = k->name, .size = k->size, .sizes = 1, .fn = k->func, .pid = target_pid(x)};
        if (k->fn)
            fn_range(x, k->fn, &q[i].start, &q[i].len);
    }
    count_all(x->t, q, nk);
    for (size_t i = 0; i < nk; i++) {
        const known *k = &allocations[i];
        const tally *c = &q[i].c;
        if (c->n != k->n || c->bytes != k->n * k->size || (k->fn && c->in_fn != k->n))
            fail_msg("%s of %llu bytes (function %d): %zu events, %llu bytes, %zu in %s; expected %zu", k->name,
                     (unsigned long long)k->size, k->func, c->n, (unsigned long long)c->bytes, c->in_fn,
                     k->fn ? k->fn : "-", k->n);
    }
}

static void expect_known_allocations(const run *x)
{
    expect_in(x, N_KNOWN - 1);
}

static void expect_known(const run *x)
{
    expect_in(x, N_KNOWN);
}

static const char *result_of(const run *x)
{
    const char *p = strstr(x->r.out, "result ");
    assert_non_null(p);
    return p;
}

/* The main case: exact counts, bytes and stacks from the moment of the load
 * on, while four threads allocate; the workers' own checks all held. And
 * the frees of blocks the trace never saw are counted apart by the analysis. */
static void test_late_load_records_exactly(void **state)
{
    run x = run_target("late", "--pid $p");
    expect_known(&x);
    assert_non_null(strstr(x.r.out, "/libltr-heap.so\n")); /* the program's malloc slot */
    tu_result a = tu_run("%s analyze %s", tu_ltr(), x.trace);
    assert_int_equal(a.status, 0);
    const char *u = strstr(a.out, "frees of unseen allocations: ");
    long long unseen = u ? atoll(u + strlen("frees of unseen allocations: ")) : -1;
    if (unseen < 2) /* free(early[0]), delete[] early[1] at least */
        fail_msg("frees of unseen allocations: %lld\n%s", unseen, a.out);
    tu_free(&a);
    run_free(&x);
}

/* A program built without -pie that takes malloc's address exports its PLT
 * entry as "malloc": the agent must call the real one, late or preloaded
 * (it recursed into itself once: node). */
static void test_program_not_position_independent(void **state)
{
    char preload[700];
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", agent());
    target_name = "late-target-nopie";
    run x = run_target("late", "--pid $p");
    expect_known(&x);
    run_free(&x);
    x = run_target_env(preload, "twice", "--pid $p");
    expect_known(&x);
    run_free(&x);
    target_name = "late-target";
}

/* Loaded by a thread that is not the main one: the same. */
static void test_load_from_another_thread(void **state)
{
    run x = run_target("thread", "--pid $p");
    expect_known(&x);
    run_free(&x);
}

/* Loaded with no session: the program's results are those of a run without
 * the agent, and it exits 0. */
static void test_dormant_changes_nothing(void **state)
{
    run none = run_target("none", "-"), dormant = run_target("dormant", "-");
    assert_string_equal(result_of(&none), result_of(&dormant));
    run_free(&none);
    run_free(&dormant);
}

/* A second dlopen of the agent, by its path and from a copy elsewhere, is a
 * no-op, whether the first came late or was preloaded: every allocation is
 * recorded once, and the program's malloc slot stays the first copy's. */
static void test_second_load_is_a_no_op(void **state)
{
    char preload[700];
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", agent());
    const char *envs[] = {"", preload};
    for (int i = 0; i < 2; i++) {
        run x = run_target_env(envs[i], "twice", "--pid $p");
        expect_known(&x);
        const char *in = strstr(x.r.out, "malloc-in ");
        assert_non_null(in);
        assert_ptr_equal(strstr(in, "/libltr-heap.so\n"), strchr(in, '\n') - strlen("/libltr-heap.so"));
        run_free(&x);
    }
}

/* After a session stops the agent stays, dormant; the next session enables
 * it again, with no second load: both traces hold the known allocations of
 * their round exactly. */
static void test_next_session_without_second_load(void **state)
{
    const char *tmp = getenv("TMPDIR");
    run x = {0}, y = {0};
    snprintf(x.trace, sizeof x.trace, "%s/round1.ltr", tmp);
    snprintf(y.trace, sizeof y.trace, "%s/round2.ltr", tmp);
    x.r = tu_run("%s again %s %s > %s/out & p=$!; "
                 "i=0; while ! grep -q '^loaded' %s/out && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; "
                 "%s start heap --instance a1 --filemode --pid $p >&2 && touch %s/go; "
                 "i=0; while ! grep -q '^round1' %s/out && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; "
                 "%s stop --instance a1 %s >&2; "
                 "%s start heap --instance a2 --filemode --pid $p >&2 && touch %s/go2; "
                 "wait $p; echo target $? >> %s/out; cat %s/out; %s stop --instance a2 %s >&2",
                 tu_test_bin("late-target"), agent(), tmp, tmp, tmp, tu_ltr(), tmp, tmp, tu_ltr(), x.trace,
                 tu_ltr(), tmp, tmp, tmp, tu_ltr(), y.trace);
    if (x.r.status != 0 || !strstr(x.r.out, "target 0"))
        fail_msg("late-target again: status %d\n%s%s", x.r.status, x.r.out, x.r.err);
    y.r = (tu_result){.out = strdup(x.r.out), .err = strdup("")};
    ltr_error err;
    assert_int_equal(ltr_trace_open(x.trace, &x.t, &err), 0);
    assert_int_equal(ltr_trace_open(y.trace, &y.t, &err), 0);
    expect_known(&x);
    expect_known_allocations(&y);
    run_free(&x);
    run_free(&y);
}

/* A child forked after the late load is traced as a preloaded child is. */
static void test_fork_child_keeps_the_redirection(void **state)
{
    run x = run_target("fork", "");
    expect_known(&x);
    query q = {.name = "Alloc", .size = 6001, .sizes = 1, .fn = FN_MALLOC, .pid = target_pid(&x)};
    count_all(x.t, &q, 1);
    assert_int_equal(q.c.n, 0);          /* not the parent's */
    assert_int_equal(q.c.other_pid, 10); /* the child's, all of them */
    run_free(&x);
}

/* Real interpreters loading the agent themselves (ctypes, DynaLoader),
 * then allocating big blocks through libc's malloc from their own code. */
static void interpreter(const char *prog, const char *script, uint64_t size)
{
    const char *tmp = getenv("TMPDIR");
    char trace[600];
    snprintf(trace, sizeof trace, "%s/interp.ltr", tmp);
    tu_result r = tu_run("command -v %s >/dev/null || { echo absent; exit 0; }; "
                         "%s %s %s %s > %s/out & p=$!; "
                         "i=0; while ! grep -q '^loaded' %s/out && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; "
                         "%s start heap --instance i --filemode --pid $p && touch %s/go; wait $p; "
                         "echo target $?; cat %s/out; %s stop --instance i %s >&2",
                         prog, prog, script, agent(), tmp, tmp, tmp, tu_ltr(), tmp, tmp, tu_ltr(),
                         trace);
    if (strstr(r.out, "absent")) {
        printf("skipped: %s is not installed\n", prog);
        tu_free(&r);
        return;
    }
    if (r.status != 0 || !strstr(r.out, "target 0") || !strstr(r.out, "done"))
        fail_msg("%s: status %d\n%s%s", prog, r.status, r.out, r.err);
    tu_free(&r);
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(trace, &t, &err), 0);
    query q[2] = {{.name = "Alloc", .size = size, .sizes = 64}, {.name = "Realloc", .size = size, .sizes = 64}};
    count_all(t, q, 2);
    size_t n = q[0].c.n + q[1].c.n;
    ltr_trace_close(t);
    if (n < 5)
        fail_msg("%s: %zu allocations of about %llu bytes recorded, expected 5 at least", prog, n,
                 (unsigned long long)size);
}

static void test_python_loads_the_agent(void **state)
{
    interpreter("python3",
                "-c 'import ctypes, os, sys, time\n"
                "ctypes.CDLL(sys.argv[1], os.RTLD_NOW)\n"
                "print(\"loaded\", flush=True)\n"
                "while not os.path.exists(sys.argv[2] + \"/go\"): time.sleep(0.01)\n"
                "keep = [bytearray(3000001) for i in range(5)]\n"
                "print(\"done\", sum(len(k) for k in keep))'",
                3000001);
}

static void test_perl_loads_the_agent(void **state)
{
    interpreter("perl",
                "-e 'use DynaLoader; $| = 1; DynaLoader::dl_load_file($ARGV[0], 0) or die; "
                "print \"loaded\\n\"; select(undef, undef, undef, 0.01) until -e \"$ARGV[1]/go\"; "
                "my @keep = map { \"x\" x 3000001 } 1..5; print \"done \", scalar(@keep), \"\\n\"'",
                3000001);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_late_load_records_exactly, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_load_from_another_thread, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_program_not_position_independent, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_dormant_changes_nothing, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_second_load_is_a_no_op, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_next_session_without_second_load, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_fork_child_keeps_the_redirection, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_python_loads_the_agent, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_perl_loads_the_agent, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
