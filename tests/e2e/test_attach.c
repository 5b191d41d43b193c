/*
 * tests/e2e/test_attach.c — attaching to running processes through the ltr
 * command: a multi-threaded program started without ltr is attached while
 * its threads allocate, and from then on its allocations are in the trace
 * with exact counts and their stacks; 50 start/stop cycles against a busy
 * program that checks its own results (one injection, then the dormant agent
 * enabled again each time, exact counts in each trace); `ltr record --pid`
 * (and its word on a process idle while recorded); malloc through pointers
 * from dlsym looked up after the attach, traced where a preloaded agent's
 * would be, and still working once the session stopped (what such a
 * lookup costs beside 800 libraries: bench/attach/dlsym-many.sh); 800
 * libraries dlopen'ed after the attach, each one's allocations traced;
 * and the refusals with their messages and exit status (a kernel thread
 * among them); `ltr start` interrupted while it attaches cancels its
 * session; what the attaches say comes in order in a log. The targets are tests/programs/inject_target.c's. ptrace
 * needs root here (CI runs as root): the tests skip, saying so, when not
 * root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/heap_events.h"
#include "util/testutil.h"

#include <ltr/trace.h>

#include <elf.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define LTR tu_ltr()

typedef struct target {
    pid_t pid, parent;
    int in, status;
    FILE *out;
    unsigned long long site;
} target;

/* inject-target MODE, a child of a parent of its own (not of ltr, not of
 * this test), started without ltr; waits for its "ready". */
static target start(const char *mode)
{
    target t = {0};
    int in[2], out[2], rep[2];
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    assert_int_equal(pipe2(rep, O_CLOEXEC), 0);
    t.parent = fork();
    pid_t child = t.parent ? -1 : fork();
    if (child > 0) {
        int st = 0;
        close(in[1]);
        close(out[0]);
        if (write(rep[1], &child, sizeof child) != sizeof child || waitpid(child, &st, 0) != child ||
            write(rep[1], &st, sizeof st) != sizeof st)
            _exit(1);
        _exit(0);
    }
    if (child == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        execl(tu_test_bin("inject-target"), "inject-target", mode, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(rep[1]);
    t.status = rep[0];
    assert_int_equal(read(t.status, &t.pid, sizeof t.pid), (ssize_t)sizeof t.pid);
    t.in = in[1];
    t.out = fdopen(out[0], "r");
    char line[128];
    while (fgets(line, sizeof line, t.out) && strcmp(line, "ready\n") != 0)
        sscanf(line, "site %llx", &t.site);
    return t;
}

/* start(mode), then `ltr start heap --pid` on it: a file-mode session. */
static target start_attached(const char *mode)
{
    target t = start(mode);
    tu_result r = tu_run("%s start heap --filemode --pid %d", LTR, (int)t.pid);
    if (r.status != 0)
        fail_msg("start: %s%s", r.out, r.err);
    tu_free(&r);
    return t;
}

static void expect_line(target *t, const char *want)
{
    char line[128] = "";
    assert_non_null(fgets(line, sizeof line, t->out));
    assert_string_equal(line, want);
}

/* The target's next line, within secs: a target that hangs is killed
 * (the test fails, saying so, instead of waiting forever). */
static void expect_line_within(target *t, const char *want, int secs)
{
    struct pollfd p = {.fd = fileno(t->out), .events = POLLIN};
    if (poll(&p, 1, secs * 1000) != 1) {
        kill(t->pid, SIGKILL);
        fail_msg("the target printed nothing in %d s: it hangs (expected \"%.*s\")", secs,
                 (int)strcspn(want, "\n"), want);
    }
    expect_line(t, want);
}

static int finish(target *t)
{
    close(t->in);
    int st = -1;
    assert_int_equal(read(t->status, &st, sizeof st), (ssize_t)sizeof st);
    waitpid(t->parent, NULL, 0);
    close(t->status);
    fclose(t->out);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static uint64_t field(const ltr_event *ev, const char *name)
{
    uint64_t v = 0;
    ltr_event_get_u64(ev, name, &v);
    return v;
}

/* Allocs of size by pid (by any process but -pid when negative) in the
 * trace, and how many have their innermost frame within 64 bytes after
 * site (the small allocating function). */
static size_t count_allocs(const char *path, pid_t pid, uint64_t size, uint64_t site, size_t *at_site,
                           uint64_t *lost)
{
    ltr_trace *t;
    ltr_error err;
    if (ltr_trace_open(path, &t, &err) != 0)
        fail_msg("%s: %s", path, err.msg);
    size_t n = 0;
    *at_site = 0;
    const ltr_event *ev;
    while (ltr_trace_next(t, &ev, &err) == 1) {
        if (strcmp(ev->layout->provider->name, LTR_HEAP_PROVIDER) || strcmp(ev->layout->name, "Alloc") ||
            field(ev, "size") != size || (pid > 0 ? ev->pid != (uint32_t)pid : ev->pid == (uint32_t)-pid))
            continue;
        n++;
        const ltr_stack *st = ltr_trace_stack_find(t, ev->pid, (uint32_t)field(ev, "stack"));
        uint64_t ip = st && st->frame_count ? st->frames[0] - 1 : 0;
        *at_site += ip >= site && ip < site + 64;
    }
    ltr_trace_close(t);
    tu_trace tt = tu_read_trace(path, LTR_HEAP_PROVIDER);
    *lost = tt.events_lost + tt.process_events_lost;
    return n;
}

/* `ltr stop` into DIR/NAMEk.ltr, then count_allocs of t's allocations of
 * size there; the trace is removed after (fifty cycles of them). */
static size_t stop_and_count(const char *dir, const char *name, int k, const target *t, uint64_t size,
                             size_t *at_site, uint64_t *lost)
{
    char trace[512];
    snprintf(trace, sizeof trace, "%s/%s%d.ltr", dir, name, k);
    tu_expect_ok(tu_run("%s stop %s", LTR, trace));
    size_t n = count_allocs(trace, t->pid, size, t->site, at_site, lost);
    unlink(trace);
    return n;
}

static bool need_root(void)
{
    if (geteuid() == 0)
        return true;
    printf("skipped: attaching needs ptrace rights over the target; this test runs as root (CI does)\n");
    return false;
}

static void test_attach_running_program(void **state)
{
    if (!need_root())
        skip();
    const char *dir = getenv("TMPDIR");
    target t = start("attach");
    tu_result r = tu_run("%s start heap --filemode --pid %d", LTR, (int)t.pid);
    if (r.status != 0)
        fail_msg("start: %s%s", r.out, r.err);
    assert_non_null(strstr(r.out, "heap agent loaded"));
    tu_free(&r);
    assert_int_equal(write(t.in, "go\n", 3), 3);
    expect_line(&t, "done\n");
    r = tu_run("%s status", LTR);
    assert_int_equal(r.status, 0);
    char attached[64];
    snprintf(attached, sizeof attached, "%d", (int)t.pid);
    assert_non_null(strstr(r.out, attached)); /* listed among the processes attached */
    tu_free(&r);
    char trace[512];
    snprintf(trace, sizeof trace, "%s/attach.ltr", dir);
    tu_expect_ok(tu_run("%s stop %s", LTR, trace));
    size_t at_site;
    uint64_t lost;
    size_t n = count_allocs(trace, t.pid, 4243, t.site, &at_site, &lost);
    assert_int_equal(lost, 0);
    assert_int_equal(n, 4 * 500); /* every one, from four threads */
    assert_int_equal(at_site, n);  /* each with attach_alloc_site as its innermost frame */
    r = tu_run("%s analyze %s", LTR, trace);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "attach_alloc_site"));
    tu_free(&r);
    assert_int_equal(finish(&t), 0); /* its own checks held */
}

/* The stacks the agent's unwinder leaves to libunwind (code without unwind
 * information, as a JIT's), in a program attached while its threads open
 * and close files. The agent learned the numbers of libunwind's pipe by a
 * pipe it opened and closed just before libunwind's: a file opened on
 * another thread in between took them about 1 time in 2, the agent found
 * no pipe there, and every such stack of the process went without its
 * frames (agent/fallback.c). Five processes: each attach is one more
 * chance (without the fix, all five pass about 1 time in 30). */
static void test_libunwind_stacks_after_attach_beside_open_files(void **state)
{
    if (!need_root())
        skip();
    const char *dir = getenv("TMPDIR");
    for (int k = 0; k < 5; k++) {
        target t = start_attached("fdchurn");
        assert_int_equal(write(t.in, "go\n", 3), 3);
        expect_line(&t, "done\n");
        size_t at_site;
        uint64_t lost;
        size_t n = stop_and_count(dir, "fdchurn", k, &t, 4244, &at_site, &lost);
        assert_int_equal(n, 100);
        if (at_site != n)
            fail_msg("attach %d: %zu of 100 allocations from the JIT page have their stack", k, at_site);
        assert_int_equal(finish(&t), 0);
    }
}

static void test_fifty_cycles(void **state)
{
    if (!need_root())
        skip();
    const char *dir = getenv("TMPDIR");
    target t = start("cycles");
    for (int i = 0; i < 50; i++) {
        tu_result r = tu_run("%s start heap --filemode --pid %d", LTR, (int)t.pid);
        if (r.status != 0)
            fail_msg("cycle %d, start: %s%s", i, r.out, r.err);
        /* injected once; then the dormant agent is enabled again */
        assert_non_null(strstr(r.out, i == 0 ? "heap agent loaded" : "heap agent already there"));
        tu_free(&r);
        assert_int_equal(write(t.in, "go\n", 3), 3);
        expect_line(&t, "did\n");
        size_t at_site;
        uint64_t lost;
        size_t n = stop_and_count(dir, "cycle-", i, &t, 31337, &at_site, &lost);
        if (n != 100 || at_site != 100 || lost)
            fail_msg("cycle %d: %zu allocations, %zu at the site, %llu lost", i, n, at_site,
                     (unsigned long long)lost);
    }
    char maps[64];
    snprintf(maps, sizeof maps, "/proc/%d/maps", (int)t.pid);
    char *m = tu_read_file(maps);
    assert_non_null(m);
    char *first = strstr(m, "libltr-heap.so");
    assert_non_null(first);
    free(m);
    assert_int_equal(finish(&t), 0); /* the busy threads' checks held throughout */
}

/* One round of the "cycles" target into a session: its allocations of the
 * round's size in the trace (and none lost). */
static size_t cycle_into(target *t, const char *start_args, const char *trace)
{
    tu_result r = tu_run("%s start heap --filemode %s", LTR, start_args);
    if (r.status != 0)
        fail_msg("start %s: %s%s", start_args, r.out, r.err);
    tu_free(&r);
    assert_int_equal(write(t->in, "go\n", 3), 3);
    expect_line(t, "did\n");
    tu_expect_ok(tu_run("%s stop %s", LTR, trace));
    size_t at_site;
    uint64_t lost;
    size_t n = count_allocs(trace, t->pid, 31337, t->site, &at_site, &lost);
    assert_int_equal(lost, 0);
    return n;
}

/* A process attached to once keeps the agent, and joins every heap session
 * after: one that names no process (no --pid, no --name) does not trace it
 * (a review's unrelated `ltr start heap` recorded a service attached to
 * earlier), and says so in its status; one that names it does. Its trace
 * does not describe it either (a review: `ltr record -- ./daemon` listed
 * about 170 children of a perl service attached to earlier, with their
 * command lines). */
static void test_attached_not_in_open_sessions(void **state)
{
    if (!need_root())
        skip();
    const char *dir = getenv("TMPDIR");
    target t = start("cycles");
    char trace[512], args[64];
    snprintf(args, sizeof args, "--pid %d", (int)t.pid);
    snprintf(trace, sizeof trace, "%s/named.ltr", dir);
    assert_int_equal(cycle_into(&t, args, trace), 100);
    /* an open session: the target joins it (its allocations try to) but is not traced */
    tu_expect_ok(tu_run("%s start heap --filemode --instance open", LTR));
    assert_int_equal(write(t.in, "go\n", 3), 3);
    expect_line(&t, "did\n");
    tu_result st = tu_run("%s status --instance open", LTR);
    if (!strstr(st.out, "0 processes attached (1 more joined, not traced: given the agent by an attach"))
        fail_msg("ltr status: %s", st.out);
    tu_free(&st);
    snprintf(trace, sizeof trace, "%s/open.ltr", dir);
    tu_expect_ok(tu_run("%s stop --instance open %s", LTR, trace));
    size_t at_site;
    uint64_t lost;
    assert_int_equal(count_allocs(trace, t.pid, 31337, t.site, &at_site, &lost), 0);
    ltr_trace *tr;
    ltr_error err;
    ltr_trace_summary sum;
    assert_int_equal(ltr_trace_open(trace, &tr, &err), 0);
    assert_int_equal(ltr_trace_scan(tr, &sum, &err), 0);
    const ltr_process *described = ltr_trace_process_find(tr, (uint32_t)t.pid);
    if (described && described->known)
        fail_msg("the open session's trace describes pid %d: %s", (int)t.pid, described->exe);
    /* nor its modules, threads or stacks (the agent wrote them all) */
    for (size_t i = 0; i < ltr_trace_module_count(tr); i++)
        if (ltr_trace_module_at(tr, i)->pid == (uint32_t)t.pid)
            fail_msg("the open session's trace holds module %s of pid %d", ltr_trace_module_at(tr, i)->path,
                     (int)t.pid);
    for (size_t i = 0; i < ltr_trace_stack_count(tr); i++)
        if (ltr_trace_stack_at(tr, i)->pid == (uint32_t)t.pid)
            fail_msg("the open session's trace holds stack %u of pid %d", ltr_trace_stack_at(tr, i)->id,
                     (int)t.pid);
    for (size_t i = 0; i < ltr_trace_thread_count(tr); i++)
        if (ltr_trace_thread_at(tr, i)->pid == (uint32_t)t.pid)
            fail_msg("the open session's trace names thread %u of pid %d", ltr_trace_thread_at(tr, i)->tid,
                     (int)t.pid);
    ltr_trace_close(tr);
    snprintf(trace, sizeof trace, "%s/named2.ltr", dir);
    assert_int_equal(cycle_into(&t, args, trace), 100); /* named again: traced again */
    assert_int_equal(finish(&t), 0);
}

/* The same when the injector took another thread than the main one, which
 * waits in epoll_wait (node's, or any event loop's): the agent asked the
 * main thread's status whether a tracer held it, found none, took itself
 * for preloaded, and the target joined every open session, traced. */
static void test_attached_through_a_thread_not_in_open_sessions(void **state)
{
    if (!need_root())
        skip();
    target t = start("epoll-thread");
    tu_result r = tu_run("%s record --pid %d --duration 0.3 --no-symbols -o %s/a.ltr", LTR, (int)t.pid,
                         getenv("TMPDIR"));
    if (r.status != 0 || !strstr(r.err, "heap agent loaded (thread "))
        fail_msg("record --pid: %d %s", r.status, r.err);
    char main_thread[64];
    snprintf(main_thread, sizeof main_thread, "loaded (thread %d ", (int)t.pid);
    bool other_thread = !strstr(r.err, main_thread);
    tu_free(&r);
    tu_expect_ok(tu_run("%s start heap --instance open", LTR));
    bool said = false;
    tu_result st = {0};
    for (int i = 0; i < 300 && !said; i++) { /* it allocates every 10 ms: it joins at once */
        tu_free(&st);
        st = tu_run("%s status --instance open", LTR);
        said = strstr(st.out, "1 more joined, not traced: given the agent by an attach") != NULL;
        if (!said)
            usleep(10000);
    }
    tu_expect_ok(tu_run("%s cancel --instance open", LTR));
    assert_int_equal(write(t.in, "go\n", 3), 3);
    assert_int_equal(finish(&t), 0);
    if (!other_thread)
        print_message("the injector took the main thread: nothing was checked\n");
    else if (!said)
        fail_msg("ltr status: %s", st.out);
    tu_free(&st);
}

static void test_record_pid(void **state)
{
    if (!need_root())
        skip();
    const char *dir = getenv("TMPDIR");
    target t = start("cycles");
    char trace[512];
    snprintf(trace, sizeof trace, "%s/rec.ltr", dir);
    pid_t rec = fork();
    if (rec == 0) {
        char pid[16];
        snprintf(pid, sizeof pid, "%d", (int)t.pid);
        execl(LTR, "ltr", "record", "--pid", pid, "-o", trace, (char *)NULL);
        _exit(127);
    }
    char maps[64];
    snprintf(maps, sizeof maps, "/proc/%d/maps", (int)t.pid);
    for (double end = tu_now_s() + 20;; usleep(10000)) { /* until the agent is in */
        char *m = tu_read_file(maps);
        bool in = m && strstr(m, "libltr-heap.so");
        free(m);
        if (in)
            break;
        assert_true(tu_now_s() < end);
    }
    usleep(100000); /* the agent's constructor ends after its mapping appears */
    assert_int_equal(write(t.in, "go\n", 3), 3);
    expect_line(&t, "did\n");
    kill(rec, SIGINT); /* Ctrl-C */
    int st;
    assert_int_equal(waitpid(rec, &st, 0), rec);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    size_t at_site;
    uint64_t lost;
    assert_int_equal(count_allocs(trace, t.pid, 31337, t.site, &at_site, &lost), 100);
    assert_int_equal(at_site, 100);
    assert_int_equal(finish(&t), 0);
    /* --duration ends it by itself; the target, untouched, goes on */
    target u = start("cycles");
    tu_result r = tu_run("%s record --pid %d --duration 1 -o %s/dur.ltr", LTR, (int)u.pid, dir);
    if (r.status != 0)
        fail_msg("%s%s", r.out, r.err);
    assert_non_null(strstr(r.err, "trace written"));
    /* the count it says is the trace's, as ltr info says it: its threads
     * churn to the stop, and the count asked before the stop was short of
     * the trace ('10451 heap events' of 10452) */
    const char *said = strstr(r.err, " heap events)");
    while (said && said > r.err && said[-1] != '(')
        said--;
    unsigned long long recorded = said ? strtoull(said, NULL, 10) : 0;
    tu_free(&r);
    r = tu_run("%s info %s/dur.ltr | sed -n 's/^ *events: *\\([0-9]*\\) written.*/\\1/p'", LTR, dir);
    if (r.status != 0 || !recorded || strtoull(r.out, NULL, 10) != recorded)
        fail_msg("record said %llu heap events, ltr info: %s%s", recorded, r.out, r.err);
    tu_free(&r);
    assert_int_equal(write(u.in, "go\n", 3), 3);
    expect_line(&u, "did\n");
    assert_int_equal(finish(&u), 0);
    /* idle all the while (blocked in read): said of the process, not of a
     * command that "never called the shared C library's malloc family" */
    target v = start("read");
    r = tu_run("%s record --pid %d --duration 1 -o %s/idle.ltr", LTR, (int)v.pid, dir);
    char idle[64];
    snprintf(idle, sizeof idle, "pid %d made no allocation", (int)v.pid);
    if (r.status != 0 || strstr(r.err, "the command never called") || !strstr(r.err, idle))
        fail_msg("%s%s", r.out, r.err);
    tu_free(&r);
    assert_int_equal(write(v.in, "x\n", 2), 2);
    assert_int_equal(finish(&v), 0);
}

/* inject-target dlsym's kinds of malloc pointer (sizes 100001 + kind): what
 * dlsym returns after the attach, which lookups reach the agent's hook */
static const char *const dlsym_kinds[] = {
    "dlsym(RTLD_DEFAULT)", "dlsym(dlopen(NULL))", "dlvsym(RTLD_DEFAULT)", "dlsym(RTLD_NEXT) from the program",
    "dlsym(libc's handle)", "dlsym(RTLD_DEFAULT) before the attach",
};

/* The blocks of each kind in the trace against want (each at the site). */
static void expect_dlsym_kinds(const char *trace, pid_t pid, uint64_t site, const size_t want[6])
{
    for (int k = 0; k < 6; k++) {
        size_t at_site;
        uint64_t lost;
        size_t n = count_allocs(trace, pid, 100001 + (uint64_t)k, site, &at_site, &lost);
        if (n != want[k] || at_site != n || lost)
            fail_msg("%s: %zu blocks of %d bytes (%zu at the site, %llu lost), expected %zu", dlsym_kinds[k], n,
                     100001 + k, at_site, (unsigned long long)lost, want[k]);
    }
}

/* Lookups made after the attach get the agent's hooks where a preloaded
 * agent's would (RTLD_DEFAULT, the handle of dlopen(NULL), RTLD_NEXT from
 * the program): an attached python3 whose ctypes leaked through
 * ctypes.CDLL(None).malloc showed nothing. libc's own handle finds libc's
 * malloc, and dlvsym the versioned one, preloaded too; a pointer taken
 * before the attach stays libc's (nothing rewrites a program's own memory). The other lookups
 * return what they did (the target checks: RTLD_NEXT's scope is the
 * caller's). After the session stops, the pointers handed out still
 * allocate and free (the agent stays, dormant). */
static void test_dlsym_after_attach(void **state)
{
    if (!need_root())
        skip();
    target t = start_attached("dlsym");
    assert_int_equal(write(t.in, "go\n", 3), 3);
    expect_line(&t, "done\n");
    char trace[512];
    snprintf(trace, sizeof trace, "%s/dlsym.ltr", getenv("TMPDIR"));
    tu_expect_ok(tu_run("%s stop %s", LTR, trace));
    expect_dlsym_kinds(trace, t.pid, t.site, (const size_t[6]){100, 100, 0, 100, 0, 0});
    assert_int_equal(write(t.in, "go\n", 3), 3);
    expect_line(&t, "did\n");
    assert_int_equal(finish(&t), 0);
}

/* inject-target dlopen-many: 800 copies of libheapchain.so dlopen'ed after
 * the attach, each calling its own malloc once (12345 bytes, through the
 * copy's own slot): every block is in the trace, so the sweep after each
 * dlopen redirected every copy (one it left out allocates untraced), each
 * found by the sweep's cursor on the loader's list. What such a dlopen
 * costs: bench/attach/dlopen-many.sh (tests time nothing). */
static void test_many_dlopens_after_attach(void **state)
{
    if (!need_root())
        skip();
    target t = start_attached("dlopen-many");
    assert_int_equal(write(t.in, "go\n", 3), 3);
    char line[128] = "";
    assert_non_null(fgets(line, sizeof line, t.out));
    assert_int_equal(strncmp(line, "cost ", 5), 0); /* the round went through: each copy loaded, called, unloaded */
    char trace[512];
    snprintf(trace, sizeof trace, "%s/dlopen-many.ltr", getenv("TMPDIR"));
    tu_expect_ok(tu_run("%s stop %s", LTR, trace));
    size_t at_site;
    uint64_t lost;
    size_t n = count_allocs(trace, t.pid, 12345, 0, &at_site, &lost);
    if (n != 800 || lost)
        fail_msg("%zu blocks of 12345 bytes from 800 libraries dlopen'ed after the attach (%llu lost)", n,
                 (unsigned long long)lost);
    assert_int_equal(finish(&t), 0);
}

/* inject-target's mode (its fork handler registered before the attach),
 * attached, told to fork; it must say "forked" within 30 s, not hang. The
 * recording's allocations of `size` bytes by the target. */
/* Allocations of `size` by the target after the attach, in a mode that
 * forks at a line; *in_children: the blocks its children allocated (each
 * one, tests/programs/inject_target.c's CHILD_BLOCK). */
#define CHILD_BLOCK 4321
static size_t forks_after_attach(const char *mode, uint64_t size, size_t *in_children)
{
    target t = start(mode);
    unsetenv("LTR_HEAP_UNWIND");
    tu_result r = tu_run("%s start heap --filemode --pid %d", LTR, (int)t.pid);
    if (r.status != 0)
        fail_msg("start: %s%s", r.out, r.err);
    tu_free(&r);
    assert_int_equal(write(t.in, "go\n", 3), 3);
    expect_line_within(&t, "forked\n", 30);
    char trace[512];
    snprintf(trace, sizeof trace, "%s/%s.ltr", getenv("TMPDIR"), mode);
    tu_expect_ok(tu_run("%s stop %s", LTR, trace));
    size_t at_site;
    uint64_t lost;
    size_t n = count_allocs(trace, t.pid, size, 0, &at_site, &lost);
    *in_children = count_allocs(trace, -t.pid, CHILD_BLOCK, 0, &at_site, &lost); /* any pid but the target's */
    assert_int_equal(write(t.in, "go\n", 3), 3);
    assert_int_equal(finish(&t), 0);
    return n;
}

/* A program's fork handler registered before the attach runs after the
 * late agent's, which holds the agent's loader lock for the fork: a
 * malloc there, traced, took that lock again from the forking thread
 * (EDEADLK, unchecked) and let it go, and the agent's handler after the
 * fork let it go once more: the next fork hung for good. */
static void test_fork_handler_that_allocates(void **state)
{
    if (!need_root())
        skip();
    size_t children;
    assert_int_equal(forks_after_attach("atfork", 100, &children), 3); /* one a fork, traced */
    /* children forked after the attach carry the agent: traced by the session
     * that names their parent (they were listed with no event) */
    assert_int_equal(children, 3);
}

/* A library's fork handler that takes its mutex, held by another thread
 * around its mallocs: the late agent's handler, run first, holds its lock
 * for the fork; the worker, in a traced malloc, waited for that lock (a
 * look at the loader's list: libunwind's, asked for here so that every
 * stack takes it; the fast unwinder takes it only to look at modules
 * again), and the fork for the worker's mutex: both for good. The agent
 * no longer waits on a fork. */
static void test_fork_handler_that_waits_for_a_thread_in_malloc(void **state)
{
    if (!need_root())
        skip();
    setenv("LTR_HEAP_UNWIND", "libunwind", 1); /* the target's: every stack through the loader's list */
    size_t children;
    assert_true(forks_after_attach("atfork-lock", 64, &children) > 0); /* the worker traced meanwhile */
    assert_int_equal(children, 50);
}

/* The same program preloaded (ltr record -- ...): what the attach emulates,
 * but for the pointer taken at start, the hook here. */
static void test_dlsym_preloaded(void **state)
{
    char trace[512];
    snprintf(trace, sizeof trace, "%s/dlsym-preloaded.ltr", getenv("TMPDIR"));
    tu_result r = tu_run("printf 'go\\ngo\\n' | %s record -o %s -- %s dlsym", LTR, trace, tu_test_bin("inject-target"));
    const char *pid = strstr(r.out, "pid "), *site = strstr(r.out, "site ");
    if (r.status != 0 || !pid || !site || !strstr(r.out, "did\n"))
        fail_msg("%d\n%s%s", r.status, r.out, r.err);
    expect_dlsym_kinds(trace, (pid_t)atoi(pid + 4), strtoull(site + 5, NULL, 16),
                       (const size_t[6]){100, 100, 0, 100, 0, 100});
    tu_free(&r);
}

static void expect_refused(tu_result r, const char *words)
{
    if (r.status != 1 || !strstr(r.err, words))
        fail_msg("expected exit 1 and \"%s\"; got %d:\n%s%s", words, r.status, r.out, r.err);
    tu_free(&r);
}

static void expect_no_session(void)
{
    tu_result r = tu_run("%s status", LTR);
    assert_null(strstr(r.out, "session 'ltr'"));
    tu_free(&r);
}

/* A copy of the C library whose executable segment's offset is near 2^64,
 * its size such that offset + size wraps to a small number. */
static void crafted_libc(const char *path)
{
    char *maps = tu_read_file("/proc/self/maps"), *at = maps ? strstr(maps, "/libc.so.6") : NULL;
    assert_non_null(at);
    char *start = at;
    while (start > maps && start[-1] != ' ')
        start--;
    char real[512];
    snprintf(real, sizeof real, "%.*s", (int)(at + strlen("/libc.so.6") - start), start);
    free(maps);
    tu_expect_ok(tu_run("cp %s %s", real, path));
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    Elf64_Ehdr eh;
    assert_int_equal(pread(fd, &eh, sizeof eh, 0), (ssize_t)sizeof eh);
    bool patched = false;
    for (unsigned i = 0; i < eh.e_phnum && !patched; i++) {
        Elf64_Phdr ph;
        off_t off = (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize);
        assert_int_equal(pread(fd, &ph, sizeof ph, off), (ssize_t)sizeof ph);
        if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
            continue;
        ph.p_offset = 0ull - 0x40000000ull;
        ph.p_filesz = 0x40001000ull;
        assert_int_equal(pwrite(fd, &ph, sizeof ph, off), (ssize_t)sizeof ph);
        patched = true;
    }
    close(fd);
    assert_true(patched);
}

/* A pid named by --pid is that process: another that gets the pid after it
 * exits, carrying the agent, does not join the session (it did: a service
 * of the same user traced into a root session). In a pid namespace of its
 * own, where the next pid can be chosen (/proc/sys/kernel/ns_last_pid). */
static void test_listed_pid_reused(void **state)
{
    (void)state;
    if (!need_root())
        skip();
    char agent[4200], trace[512];
    snprintf(agent, sizeof agent, "%s/../lib/libltr-heap.so", getenv("LTR_TEST_BIN"));
    snprintf(trace, sizeof trace, "%s/reuse.ltr", getenv("TMPDIR"));
    const char *hold = tu_test_bin("ltr-test-memhold");
    long long a = tu_pid_again("command -v unshare >/dev/null || exit 77; unshare --pid --fork --mount-proc sh -c '"
                               "%s 1 -1 >/dev/null & A=$!; sleep 0.2; %s start heap --filemode -o %s --pid $A "
                               ">/dev/null || exit 1; kill $A; wait $A; echo $((A - 1)) > /proc/sys/kernel/ns_last_pid; "
                               "LD_PRELOAD=%s %s 3 0 >/dev/null & B=$!; wait $B; %s stop %s >/dev/null; echo A=$A B=$B'",
                               hold, LTR, trace, agent, hold, LTR, trace);
    assert_true(a >= 0);
    if (!a)
        skip();
    size_t at_site;
    uint64_t lost;
    assert_int_equal(count_allocs(trace, (pid_t)a, 1 << 20, 0, &at_site, &lost), 0);
}

/* A process that maps such a file as its "libc": its segment table is read
 * with every sum checked (an attacker review's crashed root's ltr start and
 * ltr watch --name); ltr attaches or refuses, and says which. */
static void test_crafted_libc(void **state)
{
    if (!need_root())
        skip();
    char lib[512];
    snprintf(lib, sizeof lib, "%s/libc.so.6", getenv("TMPDIR"));
    crafted_libc(lib);
    int in[2], out[2];
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    pid_t p = fork();
    if (p == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        execl(tu_test_bin("inject-target"), "inject-target", "maplib", lib, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    char line[64] = "";
    FILE *o = fdopen(out[0], "r");
    assert_non_null(fgets(line, sizeof line, o));
    assert_string_equal(line, "ready\n");
    tu_result r = tu_run("%s start heap --pid %d", LTR, (int)p);
    close(in[1]); /* it ends */
    int st;
    waitpid(p, &st, 0);
    fclose(o);
    if ((r.status != 0 && r.status != 1) || strstr(r.err, "Sanitizer") || strstr(r.err, "Segmentation"))
        fail_msg("ltr start heap --pid on a crafted libc: %d\n%s%s", r.status, r.out, r.err);
    bool started = r.status == 0;
    tu_free(&r);
    if (started)
        tu_expect_ok(tu_run("%s cancel", LTR));
}

static void test_refusals(void **state)
{
    if (!need_root())
        skip();
    pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    waitpid(gone, NULL, 0);
    expect_refused(tu_run("%s start heap --pid %d", LTR, (int)gone), "no such process");
    expect_refused(tu_run("%s record --pid %d -o %s/x.ltr", LTR, (int)gone, getenv("TMPDIR")),
                   "no such process");
    /* heaptrack's -p is --pid (it was "record: invalid option -- 'p'") */
    expect_refused(tu_run("%s record -p %d -o %s/x.ltr", LTR, (int)gone, getenv("TMPDIR")), "no such process");
    pid_t zombie = fork();
    if (zombie == 0)
        _exit(0);
    usleep(200000);
    expect_refused(tu_run("%s start heap --pid %d", LTR, (int)zombie), "zombie");
    waitpid(zombie, NULL, 0);
    expect_refused(tu_run("%s < /dev/zero & p=$!; sleep 0.2; %s start heap --pid $p; s=$?; kill $p; exit $s",
                          tu_test_bin("inject-static"), LTR), "statically linked");
    /* a process that ends after its first check is said to be gone, as
     * before it (it was "/proc/P/environ: No such file or directory") */
    expect_refused(tu_run("sleep 5 & p=$!; sleep 0.2; ASAN_OPTIONS=\"$ASAN_OPTIONS:verify_asan_link_order=0\" "
                          "LTR_TEST_ENVIRON_GONE=1 LD_PRELOAD=%s/libltr-test-gone.so %s start heap --pid $p; "
                          "s=$?; kill $p; exit $s", tu_test_bin(""), LTR),
                   "no such process (it exited); nothing was started");
    /* a kernel thread (a pid from pgrep that matched a kworker) is said to be
     * one: it ignores every signal, and was told to be started with 'ltr run' */
    tu_result k = tu_run("grep -l '^Kthread:[[:space:]]*1' /proc/[0-9]*/status 2>/dev/null | head -1 | cut -d/ -f3");
    int kthread = atoi(k.out);
    tu_free(&k);
    if (kthread > 0) /* none seen: a kernel that does not say, or a pid namespace */
        expect_refused(tu_run("%s record --pid %d -o %s/k.ltr", LTR, kthread, getenv("TMPDIR")),
                       "is a kernel thread: it runs no program");
    /* a process whose environment names no runtime directory (a service
     * systemd started) is said to use its user's default, not one its
     * environment chose (it was "from its environment: LTR_RUNTIME_DIR or
     * XDG_RUNTIME_DIR" of a process started with env -i) */
    expect_refused(tu_run("env -i sleep 5 & p=$!; sleep 0.2; %s start heap --pid $p; s=$?; kill $p; exit $s", LTR),
                   "(its user's default: its environment sets neither LTR_RUNTIME_DIR nor XDG_RUNTIME_DIR)");
    /* a process whose runtime directory is another one of the same name in a
     * mount namespace of its own (systemd's PrivateTmp=, for a service whose
     * runtime directory is /tmp/ltr-UID): its agent would never find the
     * session; it was "heap agent loaded" and then nothing, 'ltr status'
     * saying it "has not allocated since the session began" */
    expect_refused(tu_run("unshare -m --propagation private sh -c 'mount -t tmpfs tmpfs \"$LTR_RUNTIME_DIR\" && "
                          "exec sleep 5' & p=$!; sleep 0.3; %s start heap --pid $p; s=$?; kill $p; exit $s", LTR),
                   "runs in a mount namespace of its own");
    /* the same directory, read-only in its mount namespace (systemd's
     * ProtectSystem=strict over /run/ltr): its agent cannot open the
     * registry; it was "heap agent loaded", then nothing recorded */
    expect_refused(tu_run("unshare -m --propagation private sh -c 'mount --bind \"$LTR_RUNTIME_DIR\" "
                          "\"$LTR_RUNTIME_DIR\" && mount -o remount,bind,ro \"$LTR_RUNTIME_DIR\" && exec sleep 5' & "
                          "p=$!; sleep 0.3; %s start heap --pid $p; s=$?; kill $p; exit $s", LTR),
                   "read-only");
    /* another user's process, for root's sessions */
    expect_refused(tu_run("setpriv --reuid=65534 --regid=65534 --clear-groups sleep 5 & p=$!; sleep 0.2; "
                          "%s start heap --pid $p; s=$?; kill $p; exit $s", LTR), "runs as user");
    /* another user attaching to root's process: refused for whose it is,
     * before anything of it is read (its files may be crafted) */
    char rt[512];
    snprintf(rt, sizeof rt, "%s/nobody-run", getenv("TMPDIR"));
    mkdir(rt, 0700);
    assert_int_equal(chown(rt, 65534, 65534), 0);
    chmod(getenv("TMPDIR"), 0755);
    expect_refused(tu_run("sleep 5 & p=$!; sleep 0.2; LTR_RUNTIME_DIR=%s setpriv --reuid=65534 --regid=65534 "
                          "--clear-groups %s start heap --pid $p; s=$?; kill $p; exit $s", rt, LTR),
                   "runs as user root (uid 0)");
    expect_no_session();
}

/* Ctrl-C (here SIGTERM) while `ltr start heap --pid` attaches: the session
 * is cancelled and the command says so, status 1; it was killed at the end
 * of the attach, and the session recorded on with none of its processes. */
static void test_start_interrupted_while_attaching(void **state)
{
    if (!need_root())
        skip();
    /* the signal once the session runs: its attach then lasts 3 s. The
     * wait for it is bounded by time, not by rounds: under ASan at load 8
     * 200 rounds of 'ltr status' ran out before the session was up (a
     * helper's run), and the signal came before it. */
    tu_result r = tu_run("%s libc-long > /dev/null & p=$!; sleep 0.3; %s start heap --pid $p --instance intr & "
                         "s=$!; t0=$(date +%%s); until %s status --instance intr > /dev/null 2>&1 || "
                         "[ $(($(date +%%s) - t0)) -gt 60 ]; do sleep 0.02; done; kill -TERM $s; wait $s; rc=$?; "
                         "kill $p; exit $rc", tu_test_bin("inject-target"), LTR, LTR);
    tu_result st = tu_run("%s status --instance intr", LTR);
    bool running = st.status == 0;
    tu_free(&st);
    if (running)
        tu_expect_ok(tu_run("%s cancel --instance intr", LTR));
    bool said = r.status == 1 && strstr(r.err, "interrupted (Terminated) while attaching; the session was cancelled");
    if (running || !said) {
        print_message("status %d: %s%s", r.status, r.out, r.err);
        tu_free(&r);
        fail_msg("%s", running ? "the session still ran after its start was interrupted" : "not said as above");
    }
    tu_free(&r);
}

/* A start whose attach finds no moment (inject-target libc-long: SIGSEGV
 * blocked in both threads) ends the session, and says so after it said the
 * session started, in one stream as a log or a pipe has them: stdout was
 * flushed at the exit, its "started" below the stderr's "cancelled". */
static void test_start_then_cancel_said_in_order(void **state)
{
    if (!need_root())
        skip();
    tu_result r = tu_run("%s libc-long > /dev/null & p=$!; sleep 0.3; %s start heap --pid $p --instance ord 2>&1 | "
                         "cat; kill $p", tu_test_bin("inject-target"), LTR);
    const char *started = strstr(r.out, "session 'ord' started"), *ended = strstr(r.out, "the session was cancelled");
    if (!started || !ended || started > ended || !strstr(r.out, "no safe moment"))
        fail_msg("not said in order:\n%s", r.out);
    tu_free(&r);
    expect_no_session();
}

/* What each --pid's attach said comes before what --name says next, in
 * one stream as a log has them: "pid P: heap agent loaded" (stdout,
 * flushed at the exit) came below --name's warning (stderr). */
static void test_attach_said_before_name_warning(void **state)
{
    if (!need_root())
        skip();
    tu_result r = tu_run("sleep 30 & p=$!; sleep 0.1; %s start heap --pid $p --name ltr-no-such-program "
                         "--instance ordn 2>&1 | cat; kill $p", LTR);
    const char *loaded = strstr(r.out, "heap agent loaded"), *named = strstr(r.out, "ltr-no-such-program");
    if (!loaded || !named || loaded > named)
        fail_msg("not said in order:\n%s", r.out);
    tu_free(&r);
    tu_expect_ok(tu_run("%s cancel --instance ordn", LTR));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_attach_running_program, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_libunwind_stacks_after_attach_beside_open_files, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_fifty_cycles, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_attached_not_in_open_sessions, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_attached_through_a_thread_not_in_open_sessions, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_record_pid, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_dlsym_after_attach, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_dlsym_preloaded, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_many_dlopens_after_attach, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_fork_handler_that_allocates, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_fork_handler_that_waits_for_a_thread_in_malloc, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_crafted_libc, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_refusals, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_start_then_cancel_said_in_order, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_attach_said_before_name_warning, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_start_interrupted_while_attaching, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_listed_pid_reused, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
