/*
 * tests/e2e/test_heap.c — heap tracing end to end: `ltr record` (and
 * `ltr start heap` + `ltr run`) around heap-target / heap-target-cxx, then the
 * trace read back with the public reader. Each test names the target mode it
 * runs; target.c says what that mode allocates.
 */
#include "base/heap_events.h"
#include "prim/prim.h"
#include "util/testutil.h"

#include <ltr/trace.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

enum { ALLOC = 1, FREE = 2, REALLOC = 3 };

typedef struct hev {
    uint32_t pid, tid, stack;
    int kind, fn;
    uint64_t addr, old, size, ts;
    uint64_t seq;  /* of its buffer */
    size_t index; /* in file order */
} hev;

typedef struct heap_trace {
    ltr_trace *t; /* kept open: stacks, modules, processes, threads */
    hev *v;
    size_t n, cap;
    uint64_t damage, overwritten, lost;
} heap_trace;

static uint64_t field(const ltr_event *ev, const char *name)
{
    uint64_t v = 0;
    ltr_event_get_u64(ev, name, &v);
    return v;
}

static void add_event(heap_trace *h, const ltr_event *ev)
{
    const char *name = ev->layout->name;
    hev e = {.pid = ev->pid, .tid = ev->tid, .ts = ev->ts, .fn = (int)field(ev, "function"),
             .addr = field(ev, "address"), .size = field(ev, "size"),
             .stack = (uint32_t)field(ev, "stack"), .old = field(ev, "old_address"), .seq = ev->buffer_seq};
    e.kind = !strcmp(name, "Alloc") ? ALLOC : !strcmp(name, "Free") ? FREE : REALLOC;
    if (h->n == h->cap) { /* geometric: ASan's realloc always copies */
        h->cap = h->cap ? h->cap * 2 : 1024;
        h->v = realloc(h->v, h->cap * sizeof *h->v);
        assert_non_null(h->v);
    }
    e.index = h->n;
    h->v[h->n++] = e;
}

static heap_trace read_heap(const char *path)
{
    heap_trace h = {0};
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &h.t, &err), 0);
    const ltr_event *ev;
    while (ltr_trace_next(h.t, &ev, &err) == 1)
        if (!strcmp(ev->layout->provider->name, LTR_HEAP_PROVIDER))
            add_event(&h, ev);
    ltr_trace_summary s;
    ltr_trace_summarize(h.t, &s);
    h.damage = s.damage;
    for (size_t i = 0; i < ltr_trace_collector_count(h.t); i++) {
        h.overwritten += ltr_trace_collector_at(h.t, i)->events_overwritten;
        h.lost += ltr_trace_collector_at(h.t, i)->events_lost;
    }
    return h;
}

static void heap_free(heap_trace *h)
{
    ltr_trace_close(h->t);
    free(h->v);
}

/* Events of this kind, function (0: any) and size (0: any). */
static size_t count(const heap_trace *h, int kind, int fn, uint64_t size)
{
    size_t n = 0;
    for (size_t i = 0; i < h->n; i++)
        n += h->v[i].kind == kind && (!fn || h->v[i].fn == fn) && (!size || h->v[i].size == size);
    return n;
}

static const hev *find(const heap_trace *h, int kind, uint64_t size)
{
    for (size_t i = 0; i < h->n; i++)
        if (h->v[i].kind == kind && h->v[i].size == size)
            return &h->v[i];
    return NULL;
}

/* The event that ends the block event e made (Free or Realloc of its address), or NULL. */
static const hev *ender(const heap_trace *h, const hev *e)
{
    for (const hev *x = e + 1; x < h->v + h->n; x++)
        if (x->pid == e->pid && ((x->kind == FREE && x->addr == e->addr) ||
                                 (x->kind == REALLOC && x->old == e->addr)))
            return x;
    return NULL;
}

/* Every allocation of this size was made by fn and freed by free_fn, n times. */
static void expect_pairs(const heap_trace *h, uint64_t size, int fn, int free_fn, size_t n)
{
    size_t seen = 0;
    for (const hev *e = h->v; e < h->v + h->n; e++) {
        if (e->kind != ALLOC || e->size != size)
            continue;
        seen++;
        assert_int_equal(e->fn, fn);
        assert_int_not_equal(e->stack, 0);
        const hev *f = ender(h, e);
        assert_non_null(f);
        assert_int_equal(f->fn, free_fn);
    }
    if (seen != n)
        fail_msg("size %llu: %zu allocations, expected %zu", (unsigned long long)size, seen, n);
}

static char trace_path[512];

/* ltr record -o TRACE [opts] -- target ARGS; returns the result. */
static tu_result record(const char *opts, const char *target, const char *args)
{
    snprintf(trace_path, sizeof trace_path, "%s/t.ltr", getenv("TMPDIR"));
    /* --force: a test records several times into the same trace */
    return tu_run("%s record --force -o %s %s -- %s %s", tu_ltr(), trace_path, opts, tu_test_bin(target), args);
}


/* ltr record ... with the exit status expected, then the trace read back. */
static heap_trace record_read(const char *opts, const char *target, const char *args, int status)
{
    tu_result r = record(opts, target, args);
    assert_int_equal(r.status, status);
    tu_free(&r);
    return read_heap(trace_path);
}

/* ---- counts ----------------------------------------------------------------- */

/* docs/heap-events.md: a heap event's time is rounded down to 100 us, or is
 * one nanosecond after a module record of its process that came later. */
static void expect_coarse_times(const heap_trace *h)
{
    size_t coarse = 0;
    for (size_t i = 0; i < h->n; i++) {
        if (h->v[i].ts % 100000 == 0) {
            coarse++;
            continue;
        }
        bool after_module = false;
        for (size_t k = 0; k < ltr_trace_module_count(h->t) && !after_module; k++) {
            const ltr_module *m = ltr_trace_module_at(h->t, k);
            after_module = m->pid == h->v[i].pid && m->ts + 1 == h->v[i].ts;
        }
        if (!after_module)
            fail_msg("event %zu at %llu ns: neither on the 100 us grain nor just after a module record", i,
                     (unsigned long long)h->v[i].ts);
    }
    assert_true(coarse > h->n / 2);
}

static void test_c_functions_exact(void **state)
{
    tu_result r = record("", "heap-target", "counts");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "trace written to"));
    tu_free(&r);
    heap_trace h = read_heap(trace_path);
    assert_int_equal(h.damage, 0);
    expect_coarse_times(&h);
    expect_pairs(&h, 1001, 1, 20, 3);
    expect_pairs(&h, 2001, 2, 20, 3);
    expect_pairs(&h, 3001, 5, 20, 3);
    expect_pairs(&h, 4032, 6, 20, 3);
    expect_pairs(&h, 5001, 7, 20, 3);
    expect_pairs(&h, 6001, 8, 20, 3);
    expect_pairs(&h, 7001, 9, 20, 3);
    /* realloc: NULL -> Alloc, moved, in place or moved, (p, 0) -> Free */
    const hev *a = find(&h, ALLOC, 8001), *grow = find(&h, REALLOC, 800001),
              *shrink = find(&h, REALLOC, 8002);
    assert_non_null(a);
    assert_non_null(grow);
    assert_non_null(shrink);
    assert_int_equal(a->fn, 3);
    assert_int_equal(grow->old, a->addr);
    assert_int_equal(shrink->old, grow->addr);
    const hev *gone = ender(&h, shrink);
    assert_non_null(gone);
    assert_int_equal(gone->kind, FREE);
    assert_int_equal(gone->fn, 3);
    /* reallocarray */
    const hev *ra = find(&h, ALLOC, 9002), *rb = find(&h, REALLOC, 18004);
    assert_non_null(ra);
    assert_non_null(rb);
    assert_int_equal(ra->fn, 4);
    assert_int_equal(rb->fn, 4);
    assert_int_equal(rb->old, ra->addr);
    assert_int_equal(ender(&h, rb)->fn, 20);
    heap_free(&h);
}

static void test_cxx_operators_exact(void **state)
{
    heap_trace h = record_read("", "heap-target-cxx", "", 0);
    static const struct { uint64_t size; int fn, free_fn; } ops[] = {
        {1101, 10, 21}, {1201, 11, 22}, {1301, 12, 29}, {1401, 13, 30}, {1501, 14, 25},
        {1601, 15, 26}, {1701, 16, 31}, {1801, 17, 32}, {1901, 10, 23}, {1911, 11, 24},
        {1921, 14, 27}, {1931, 15, 28}, {40, 11, 22}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        expect_pairs(&h, ops[i].size, ops[i].fn, ops[i].free_fn, i == 12 ? 1 : 3);
    /* operator new calls malloc inside: it must not count twice */
    assert_int_equal(count(&h, ALLOC, 1, 1101), 0);
    heap_free(&h);
}

/* ---- stacks and modules ------------------------------------------------------- */

typedef struct fnrange {
    char name[32];
    uint64_t start, size;
} fnrange;

/* The targets print "name start size" per function whose frames a test checks. */
static void read_fn_ranges(const char *p, fnrange *fr, int n)
{
    for (int i = 0; i < n; i++) {
        unsigned long long start, size;
        int used;
        assert_int_equal(sscanf(p, "%31s %llx %llu\n%n", fr[i].name, &start, &size, &used), 3);
        fr[i].start = start;
        fr[i].size = size;
        p += used;
    }
}

static const ltr_module *module_of(const heap_trace *h, uint32_t pid, uint64_t addr, uint64_t ts)
{
    const ltr_module *found = NULL;
    for (size_t i = 0; i < ltr_trace_module_count(h->t); i++) {
        const ltr_module *m = ltr_trace_module_at(h->t, i);
        if (m->pid != pid || m->ts > ts)
            continue;
        for (uint16_t s = 0; s < m->segment_count; s++)
            if (addr >= m->segments[s].start && addr < m->segments[s].end)
                found = m->event == 1 ? m : NULL;
    }
    return found;
}

/* The module of the innermost frame of the first allocation of size
 * (whose stack the trace must hold), at its time; NULL if none. */
static const ltr_module *innermost_module(const heap_trace *h, uint64_t size)
{
    const hev *e = find(h, ALLOC, size);
    assert_non_null(e);
    const ltr_stack *st = ltr_trace_stack_find(h->t, e->pid, e->stack);
    assert_non_null(st);
    return module_of(h, e->pid, st->frames[0], e->ts);
}

static void test_stack_of_known_chain(void **state)
{
    tu_result r = record("", "heap-target", "chain");
    assert_int_equal(r.status, 0);
    fnrange fr[4];
    read_fn_ranges(r.out, fr, 4);
    tu_free(&r);
    heap_trace h = read_heap(trace_path);
    const hev *e = find(&h, ALLOC, 12345);
    assert_non_null(e);
    const ltr_stack *st = ltr_trace_stack_find(h.t, e->pid, e->stack);
    assert_non_null(st);
    assert_true(st->frame_count >= 4);
    for (int i = 0; i < 4; i++) {
        uint64_t ip = st->frames[i] - 1; /* return address -> inside the call */
        if (ip < fr[i].start || ip >= fr[i].start + fr[i].size)
            fail_msg("frame %d is %#llx, not in %s [%#llx, +%llu)", i, (unsigned long long)ip,
                     fr[i].name, (unsigned long long)fr[i].start, (unsigned long long)fr[i].size);
    }
    const ltr_module *m = module_of(&h, e->pid, st->frames[0], e->ts);
    assert_non_null(m);
    assert_non_null(strstr(m->path, "libheapchain.so"));
    assert_int_equal(m->build_id_len, 20);
    const ltr_module *main_m = module_of(&h, e->pid, st->frames[3], e->ts);
    assert_non_null(main_m);
    assert_non_null(strstr(main_m->path, "heap-target"));
    heap_free(&h);
}

/* tree.c: 16 threads x 2^16 paths of 16 levels; every frame of every stack
 * checked, while the agent's prefix table grows under racing threads. */
enum { TREE_DEPTH = 16, TREE_THREADS = 16, TREE_SIZE_BASE = 100000 };

static int in_fn(uint64_t ret, const fnrange *f)
{
    return ret - 1 >= f->start && ret - 1 < f->start + f->size; /* return address -> inside the call */
}

static void check_tree_stack(const heap_trace *h, const hev *e, fnrange fr[TREE_DEPTH][2])
{
    unsigned path = (unsigned)(e->size - TREE_SIZE_BASE);
    if (!e->stack)
        fail_msg("path %u: allocation without a stack", path);
    const ltr_stack *st = ltr_trace_stack_find(h->t, e->pid, e->stack);
    if (!st || st->frame_count < TREE_DEPTH + 1)
        fail_msg("path %u: stack %u missing or short", path, e->stack);
    for (int i = 0; i < TREE_DEPTH; i++) {
        int level = TREE_DEPTH - 1 - i, variant = (int)(path >> level) & 1;
        if (!in_fn(st->frames[i], &fr[level][variant]))
            fail_msg("path %u frame %d: %#llx is not in %s", path, i,
                     (unsigned long long)st->frames[i], fr[level][variant].name);
    }
}

static void test_stacks_of_many_threads(void **state)
{
    tu_result r = record("--buffers 512", "heap-target", "tree");
    assert_int_equal(r.status, 0);
    fnrange fr[TREE_DEPTH][2];
    const char *p = r.out;
    for (int i = 0; i < TREE_DEPTH * 2; i++) {
        int l, v, used;
        unsigned long long start, size;
        assert_int_equal(sscanf(p, "%d %d %llx %llu\n%n", &l, &v, &start, &size, &used), 4);
        assert_true(l == i / 2 && v == i % 2);
        snprintf(fr[l][v].name, sizeof fr[l][v].name, "tree_%d_%d", l, v);
        fr[l][v].start = start;
        fr[l][v].size = size;
        p += used;
    }
    tu_free(&r);
    heap_trace h = read_heap(trace_path);
    assert_int_equal(h.damage, 0);
    unsigned *seen = calloc(1u << TREE_DEPTH, sizeof *seen);
    for (const hev *e = h.v; e < h.v + h.n; e++) {
        if (e->kind != ALLOC || e->size < TREE_SIZE_BASE || e->size >= TREE_SIZE_BASE + (1u << TREE_DEPTH))
            continue;
        check_tree_stack(&h, e, fr);
        seen[e->size - TREE_SIZE_BASE]++;
    }
    /* Every path once per thread; on a loaded machine the buffers may fill,
     * and then every missing allocation must be among the events counted lost. */
    uint64_t missing = 0;
    for (unsigned path = 0; path < 1u << TREE_DEPTH; path++) {
        if (seen[path] > TREE_THREADS)
            fail_msg("path %u: %u allocations, expected %d", path, seen[path], TREE_THREADS);
        missing += TREE_THREADS - seen[path];
    }
    if (missing > h.lost)
        fail_msg("%llu allocations missing, only %llu events lost", (unsigned long long)missing,
                 (unsigned long long)h.lost);
    free(seen);
    heap_free(&h);
}

/* reuse.c: each allocation's size names its path; every frame of every stack
 * checked, innermost first: leaf, mid, outer_a|b, rec x (levels + 1),
 * [fp], step. A walk that wrongly reused the previous one's outer frames
 * gives the other outer function, the wrong recursion depth, or frames a
 * longjmp popped. */
enum { REUSE_FNS = 7, REUSE_SIZE_BASE = 200000, REUSE_CALLS = 4000 };
enum { R_LEAF, R_MID, R_OUTER_A, R_OUTER_B, R_REC, R_FP, R_STEP };

/* The expected functions of the stack of code, innermost first; how many. */
static int reuse_expected(unsigned code, int *fn)
{
    int n = 0;
    fn[n++] = R_LEAF;
    fn[n++] = R_MID;
    fn[n++] = code & 1 ? R_OUTER_B : R_OUTER_A;
    for (unsigned l = 0; l <= ((code >> 1) & 15u); l++)
        fn[n++] = R_REC;
    if (code & 32)
        fn[n++] = R_FP;
    fn[n++] = R_STEP;
    return n;
}

static void check_reuse_stack(const heap_trace *h, const hev *e, const fnrange *fr)
{
    unsigned code = (unsigned)(e->size - REUSE_SIZE_BASE);
    int fn[32], n = reuse_expected(code, fn);
    const ltr_stack *st = e->stack ? ltr_trace_stack_find(h->t, e->pid, e->stack) : NULL;
    if (!st || st->frame_count < (uint32_t)n + 1)
        fail_msg("code %#x: stack %u missing or short (%u frames, want %d + callers)", code,
                 e->stack, st ? st->frame_count : 0, n);
    for (int i = 0; i < n; i++)
        if (!in_fn(st->frames[i], &fr[fn[i]]))
            fail_msg("code %#x frame %d: %#llx is not in %s", code, i,
                     (unsigned long long)st->frames[i], fr[fn[i]].name);
    if (in_fn(st->frames[n], &fr[R_STEP]) || in_fn(st->frames[n], &fr[R_REC]))
        fail_msg("code %#x frame %d: one frame too many", code, n);
}

static void test_stacks_reusing_outer_frames(void **state)
{
    tu_result r = record("", "heap-target", "reuse");
    assert_int_equal(r.status, 0);
    fnrange fr[REUSE_FNS];
    read_fn_ranges(r.out, fr, REUSE_FNS);
    tu_free(&r);
    heap_trace h = read_heap(trace_path);
    size_t seen = 0;
    for (const hev *e = h.v; e < h.v + h.n; e++)
        if (e->kind == ALLOC && e->size >= REUSE_SIZE_BASE && e->size < REUSE_SIZE_BASE + 128) {
            check_reuse_stack(&h, e, fr);
            seen++;
        }
    assert_int_equal(seen, REUSE_CALLS);
    heap_free(&h);
}

static void test_dlopen_dlclose_modules(void **state)
{
    char args[600];
    snprintf(args, sizeof args, "dlopen %s", tu_test_bin("libheapdl.so"));
    heap_trace h = record_read("", "heap-target", args, 0);
    const hev *e = find(&h, ALLOC, 3600), *after = find(&h, ALLOC, 3601);
    assert_non_null(e);
    assert_non_null(after);
    const ltr_stack *st = ltr_trace_stack_find(h.t, e->pid, e->stack);
    assert_non_null(st);
    const ltr_module *m = module_of(&h, e->pid, st->frames[0], e->ts);
    assert_non_null(m);
    assert_non_null(strstr(m->path, "libheapdl.so"));
    bool unloaded = false;
    for (size_t i = 0; i < ltr_trace_module_count(h.t); i++) {
        const ltr_module *u = ltr_trace_module_at(h.t, i);
        if (u->event == 2 && strstr(u->path, "libheapdl.so")) {
            unloaded = true;
            assert_true(u->ts > e->ts);
            assert_true(u->ts < after->ts);
        }
    }
    assert_true(unloaded);
    heap_free(&h);
}

/* dlopen("./libheapdl.so"): the loader names the object by that relative
 * path, which says where the file is only from the working directory of
 * that moment. Its MODULE record names it by the file's absolute path
 * (the kernel's mapping of it), so that a reader elsewhere finds it, and the
 * analysis names the function: with the loader's name it showed
 * "?? libheapdl.so+0x..." (the symbolizer opens no relative path). */
static void test_dlopen_by_relative_path(void **state)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tu_test_bin("libheapdl.so"));
    *strrchr(dir, '/') = 0;
    snprintf(trace_path, sizeof trace_path, "%s/t.ltr", getenv("TMPDIR"));
    tu_expect_ok(tu_run("cd '%s' && %s record --force -o %s -- %s dlopen ./libheapdl.so", dir, tu_ltr(), trace_path,
                        tu_test_bin("heap-target")));
    heap_trace h = read_heap(trace_path);
    const ltr_module *m = innermost_module(&h, 3600);
    assert_non_null(m);
    char want[600];
    snprintf(want, sizeof want, "%s/libheapdl.so", dir);
    if (strcmp(m->path, want))
        fail_msg("the module is recorded as '%s', not '%s'", m->path, want);
    heap_free(&h);
    tu_result r = tu_run("cd / && %s analyze %s", tu_ltr(), trace_path);
    if (r.status != 0 || !strstr(r.out, "dl_alloc"))
        fail_msg("ltr analyze does not name dl_alloc:\n%s%s", r.out, r.err);
    tu_free(&r);
}

/* A daemon closing every fd after the agent attached (heap-target
 * closeall): its connection to the session closes, and it runs on, writing
 * into the buffers it holds. The recorder took it for gone and finished
 * those buffers under it: "shared memory written over" in its log, and the
 * 1 000 allocations after the close-all were neither in the trace nor
 * counted lost. And the unwinder kept the module files it read open: at
 * the next unload it closed them, the program's files in their numbers,
 * and opened the modules again there (its fds then read libc.so). And
 * libunwind, for the stack of an allocation from code without unwind
 * information, read from one of its files and closed two, in the numbers of
 * the pipe it opened at its start (agent/fallback.c). Now the allocations
 * are all there, nothing lost, no damage, and the program's files still its
 * own, at the same offsets. */
static void test_daemon_closing_every_fd(void **state)
{
    const char *dir = getenv("TMPDIR");
    char args[1800];
    tu_expect_ok(tu_run("cp '%s' '%s/libcopy.so'", tu_test_bin("libheapdl.so"), dir));
    snprintf(args, sizeof args, "closeall %s %s/libcopy.so %s", tu_test_bin("libheapdl.so"), dir, dir);
    tu_result r = record("", "heap-target", args);
    assert_int_equal(r.status, 0);
    if (!strstr(r.out, "files ok") || strstr(r.err, "problems"))
        fail_msg("%s%s", r.out, r.err);
    tu_free(&r);
    heap_trace h = read_heap(trace_path);
    size_t after = 0;
    for (size_t i = 0; i < h.n; i++)
        after += h.v[i].kind == ALLOC && h.v[i].size == 3601;
    assert_int_equal(after, 1000);
    size_t copy = 0, jit = 0; /* through the copy loaded after; from code without unwind information */
    for (size_t i = 0; i < h.n; i++) {
        copy += h.v[i].kind == ALLOC && h.v[i].size == 3602;
        jit += h.v[i].kind == ALLOC && h.v[i].size == 3603;
    }
    assert_int_equal(copy, 100);
    assert_int_equal(jit, 1); /* recorded, without its stack: libunwind's pipe is the program's file now */
    assert_int_equal(h.lost, 0);
    assert_int_equal(h.damage, 0);
    heap_free(&h);
}

static size_t count_allocs(const heap_trace *h, uint64_t size)
{
    size_t n = 0;
    for (size_t i = 0; i < h->n; i++)
        n += h->v[i].kind == ALLOC && h->v[i].size == size;
    return n;
}

/* A traced program's fd table is its own: heap-target fds, after the agent
 * attached and its unwinders started, says what its first open() got and
 * every fd it has below 1024, and that is what it says without ltr (its
 * first open 3, none). The agent kept 7 there, from 3: libunwind's pipe,
 * the registry, the session's memfd, socket and eventfd, and the modules
 * its unwinder read ("first open 10", "fd 3 -> pipe:[...]", "fd 9 ->
 * .../heap-target"). Then the program's dup2 onto 3 to 9 leaves the
 * allocations after it recorded. Under a limit of 4096 the agent's go from
 * 1024 up (prim.c, ltr_fd_floor). */
static void test_agent_fds_out_of_the_way(void **state)
{
    (void)state;
    tu_result plain = tu_run("ulimit -n 4096 && %s fds", tu_test_bin("heap-target"));
    assert_int_equal(plain.status, 0);
    snprintf(trace_path, sizeof trace_path, "%s/t.ltr", getenv("TMPDIR"));
    tu_result r = tu_run("ulimit -n 4096 && %s record --force -o %s -- %s fds", tu_ltr(), trace_path,
               tu_test_bin("heap-target"));
    assert_int_equal(r.status, 0);
    if (!strstr(plain.out, "dup2 ok") || strcmp(r.out, plain.out))
        fail_msg("under ltr record:\n%s\nwithout:\n%s", r.out, plain.out);
    tu_free(&r);
    tu_free(&plain);
    heap_trace h = read_heap(trace_path);
    assert_int_equal(count_allocs(&h, 3610), 11);
    assert_int_equal(count_allocs(&h, 3611), 50);
    assert_int_equal(h.lost, 0);
    heap_free(&h);
}

/* Waits for analyze-manystacks's round r (go.r, done.r in dir). */
static bool manystacks_round(const char *dir, int r)
{
    char name[32], done[512];
    snprintf(name, sizeof name, "go.%d", r);
    tu_write_file(dir, name, "");
    snprintf(done, sizeof done, "%s/done.%d", dir, r);
    for (int i = 0; i < 6000 && access(done, F_OK) != 0; i++)
        usleep(10000);
    return access(done, F_OK) == 0;
}

/* Frame nodes that found no room in the session's metadata region (its
 * recorder stopped, LTR_META_KB=64) are written by the next stack through
 * them, once there is room. analyze-manystacks takes 2^11 paths while the
 * recorder is stopped (about 150 KB of frame nodes), then the same paths
 * again, round after round, the recorder reading the region between: every
 * stack of the last round is in the trace. The agent marked nodes written
 * whether or not their append succeeded, and the later rounds' events had
 * no stack, for good. */
static void test_stacks_after_a_full_metadata_region(void **state)
{
    enum { DEPTH = 11, ROUNDS = 5 };
    const char *dir = getenv("TMPDIR");
    char trace[512];
    snprintf(trace, sizeof trace, "%s/mfull.ltr", dir);
    tu_expect_ok(tu_run("LTR_META_KB=64 %s start heap --instance mfull --filemode -o %s.part", tu_ltr(), trace));
    tu_result r = tu_run("%s run --instance mfull -- %s %d %s %d >/dev/null 2>&1 & echo $!", tu_ltr(),
                         tu_test_bin("analyze-manystacks"), DEPTH, dir, ROUNDS);
    long run = atol(r.out);
    tu_free(&r);
    long rec = tu_session_pid("mfull", "recorder pid "), target = 0;
    for (int i = 0; i < 2000 && !(target = tu_session_pid("mfull", "processes attached: ")); i++)
        usleep(10000);
    assert_true(run > 0 && rec > 0 && target > 0);
    assert_int_equal(kill((pid_t)rec, SIGSTOP), 0);
    bool first = manystacks_round(dir, 0);
    kill((pid_t)rec, SIGCONT);
    assert_true(first);
    for (int k = 1; k < ROUNDS; k++) {
        tu_expect_ok(tu_run("%s flush --instance mfull", tu_ltr())); /* the region read: room again */
        assert_true(manystacks_round(dir, k));
    }
    for (int i = 0; i < 6000 && ltr_pid_alive((pid_t)target); i++)
        usleep(10000);
    tu_expect_ok(tu_run("%s stop --instance mfull %s", tu_ltr(), trace));
    heap_trace h = read_heap(trace);
    uint64_t meta_lost = 0;
    for (size_t c = 0; c < ltr_trace_collector_count(h.t); c++)
        meta_lost += ltr_trace_collector_at(h.t, c)->metadata_lost;
    size_t last = 0, stackless = 0;
    for (size_t i = 0; i < h.n; i++) {
        if (h.v[i].kind != ALLOC || (h.v[i].size != 32 && h.v[i].size != 33))
            continue;
        last++;
        const ltr_stack *st = ltr_trace_stack_find(h.t, h.v[i].pid, h.v[i].stack);
        stackless += !st || st->frame_count < DEPTH;
    }
    print_message("metadata records lost: %llu; last round: %zu allocations, %zu without their stack\n",
                  (unsigned long long)meta_lost, last, stackless);
    heap_free(&h);
    assert_true(meta_lost > 100); /* the region did fill */
    assert_int_equal(last, 1u << DEPTH);
    assert_int_equal(stackless, 0);
}

/* Whether `ltr status` of the instance says text within 20 s. */
static bool status_says(const char *instance, const char *text)
{
    bool said = false;
    for (int i = 0; i < 2000 && !said; i++) {
        tu_result st = tu_run("%s status --instance %s", tu_ltr(), instance);
        said = strstr(st.out, text) != NULL;
        tu_free(&st);
        if (!said)
            usleep(10000);
    }
    return said;
}

/* A module's load record that found no room in the session's metadata
 * region is written by a later event. heap-target dlgated loads
 * libheapdl.so while the region is full (its recorder stopped, and
 * analyze-manystacks's 2^11 paths taken meanwhile) and allocates through
 * it, then again once the recorder read the region: the second block's
 * innermost frame is in a module the trace holds, libheapdl.so. Before,
 * the record was not written again, and no frame of that library had a
 * module in the trace (no name, no symbolization), for good. */
static void test_module_after_a_full_metadata_region(void **state)
{
    const char *dir = getenv("TMPDIR");
    char trace[512], lib[600];
    snprintf(trace, sizeof trace, "%s/mmod.ltr", dir);
    snprintf(lib, sizeof lib, "%s", tu_test_bin("libheapdl.so"));
    tu_expect_ok(tu_run("LTR_META_KB=64 %s start heap --instance mmod --filemode -o %s.part", tu_ltr(), trace));
    tu_result r = tu_run("%s run --instance mmod -- %s 11 %s 1 >/dev/null 2>&1 & %s run --instance mmod -- %s "
                         "dlgated %s %s/g1 %s/dl-done %s/g2 >/dev/null 2>&1 & echo started", tu_ltr(),
                         tu_test_bin("analyze-manystacks"), dir, tu_ltr(), tu_test_bin("heap-target"), lib, dir, dir,
                         dir);
    tu_free(&r);
    long rec = tu_session_pid("mmod", "recorder pid ");
    assert_true(rec > 0 && status_says("mmod", " 2 processes attached"));
    assert_int_equal(kill((pid_t)rec, SIGSTOP), 0);
    bool filled = manystacks_round(dir, 0); /* the region full */
    tu_write_file(dir, "g1", "");
    char done[512];
    snprintf(done, sizeof done, "%s/dl-done", dir);
    for (int i = 0; i < 6000 && access(done, F_OK) != 0; i++)
        usleep(10000);
    kill((pid_t)rec, SIGCONT);
    assert_true(filled);
    assert_int_equal(access(done, F_OK), 0);
    tu_expect_ok(tu_run("%s flush --instance mmod", tu_ltr())); /* the region read: room again */
    usleep(20000); /* past the agent's millisecond between tries */
    tu_write_file(dir, "g2", "");
    assert_true(status_says("mmod", " 0 processes attached"));
    tu_expect_ok(tu_run("%s stop --instance mmod %s", tu_ltr(), trace));
    heap_trace h = read_heap(trace);
    const ltr_module *m = innermost_module(&h, 3612);
    if (!m || !strstr(m->path, "libheapdl.so"))
        fail_msg("the block's innermost frame is in %s", m ? m->path : "no module");
    heap_free(&h);
}

/* heap-target dlmany (tests/programs/dlmany.c): copies of libheapdl.so
 * loaded and unloaded, some unloaded behind the agent's back and loaded
 * again in each other's places, so that the agent's next look finds every
 * change at once. Each allocation's innermost frame must be in a module
 * recorded as that copy, loaded then: a merge of the module lists that
 * lost a load, or took a copy loaded where another was for that one, names
 * another copy or none. And every copy is recorded loaded and unloaded as
 * many times as it was. */
enum { DLMANY_COPIES = 300, DLMANY_SIZE = 50000 };

static void expect_own_copy(const heap_trace *h, const hev *e, int copy)
{
    const ltr_stack *st = ltr_trace_stack_find(h->t, e->pid, e->stack);
    assert_non_null(st);
    const ltr_module *m = module_of(h, e->pid, st->frames[0], e->ts);
    char want[32];
    snprintf(want, sizeof want, "/dlmany-%d.so", copy);
    const char *tail = m && strlen(m->path) >= strlen(want) ? m->path + strlen(m->path) - strlen(want) : "";
    if (strcmp(tail, want) != 0)
        fail_msg("%llu bytes, by copy %d: its frame %#llx is in %s", (unsigned long long)e->size, copy,
                 (unsigned long long)st->frames[0], m ? m->path : "no module");
}

/* How many times each copy was recorded loaded (loads[i]) and unloaded;
 * true if some copy was loaded where another one had been. */
static bool dlmany_records(const heap_trace *h, int *loads, int *unloads)
{
    bool moved_in = false;
    for (size_t i = 0; i < ltr_trace_module_count(h->t); i++) {
        const ltr_module *m = ltr_trace_module_at(h->t, i);
        const char *name = strrchr(m->path, '/');
        int copy;
        if (!name || sscanf(name, "/dlmany-%d.so", &copy) != 1 || copy < 0 || copy >= DLMANY_COPIES)
            continue;
        (m->event == 1 ? loads : unloads)[copy]++;
        for (size_t k = 0; k < i && m->event == 1; k++) {
            const ltr_module *o = ltr_trace_module_at(h->t, k);
            moved_in |= o->pid == m->pid && o->load_bias == m->load_bias && strcmp(o->path, m->path) != 0;
        }
    }
    return moved_in;
}

static void test_many_dlopened_copies_told_apart(void **state)
{
    /* copies, not links: the loader takes one file under two names for one module */
    tu_expect_ok(tu_run("for i in $(seq 0 %d); do cp %s \"$TMPDIR/dlmany-$i.so\"; done", DLMANY_COPIES - 1,
                        tu_test_bin("libheapdl.so")));
    char args[64];
    snprintf(args, sizeof args, "dlmany %d", DLMANY_COPIES);
    heap_trace h = record_read("", "heap-target", args, 0);
    size_t seen[3] = {0, 0, 0};
    for (const hev *e = h.v; e < h.v + h.n; e++) {
        if (e->kind != ALLOC || e->size < DLMANY_SIZE || e->size >= DLMANY_SIZE + 3000)
            continue;
        int phase = (int)(e->size - DLMANY_SIZE) / 1000, copy = (int)(e->size - DLMANY_SIZE) % 1000;
        expect_own_copy(&h, e, copy);
        seen[phase]++;
    }
    assert_int_equal(seen[0], DLMANY_COPIES);
    assert_int_equal(seen[1], DLMANY_COPIES / 2);
    assert_int_equal(seen[2], DLMANY_COPIES / 2);
    int loads[DLMANY_COPIES] = {0}, unloads[DLMANY_COPIES] = {0};
    /* else the run did not try what the test is for: the kernel placed no copy where another was */
    assert_true(dlmany_records(&h, loads, unloads));
    assert_int_equal(h.damage, 0); /* each copy loaded where another was unloaded first: no conflict */
    for (int i = 0; i < DLMANY_COPIES; i++)
        if (loads[i] != (i % 2 ? 1 : 2) || unloads[i] != 1)
            fail_msg("copy %d: recorded loaded %d times and unloaded %d", i, loads[i], unloads[i]);
    heap_free(&h);
}

/* ---- processes and threads ----------------------------------------------------- */

static void test_threads_and_names(void **state)
{
    heap_trace h = record_read("", "heap-target", "threads", 0);
    for (int t = 0; t < 4; t++) {
        assert_int_equal(count(&h, ALLOC, 1, 2001 + (uint64_t)t), 1000);
        const hev *e = find(&h, ALLOC, 2001 + (uint64_t)t);
        const ltr_thread *th = ltr_trace_thread_find(h.t, e->pid, e->tid);
        assert_non_null(th);
        char want[16];
        snprintf(want, sizeof want, "worker-%d", t);
        assert_string_equal(th->name, want);
        assert_int_not_equal(e->tid, e->pid);
    }
    heap_free(&h);
}

/* main renames a thread that already wrote its record: the thread's next
 * event writes it again with the new name. */
static void test_renamed_by_another_thread(void **state)
{
    heap_trace h = record_read("", "heap-target", "renamed", 0);
    const hev *before = find(&h, ALLOC, 2101), *after = find(&h, ALLOC, 2102);
    assert_non_null(before);
    assert_non_null(after);
    assert_int_equal(before->tid, after->tid);
    const ltr_thread *th = ltr_trace_thread_find(h.t, after->pid, after->tid);
    assert_non_null(th);
    assert_string_equal(th->name, "renamed-late");
    heap_free(&h);
}

static void test_fork_child_is_its_own_process(void **state)
{
    heap_trace h = record_read("", "heap-target", "fork", 0);
    const hev *parent = find(&h, ALLOC, 3100), *child = find(&h, ALLOC, 3200),
              *later = find(&h, ALLOC, 3300);
    assert_non_null(parent);
    assert_non_null(child);
    assert_non_null(later);
    assert_int_equal(count(&h, ALLOC, 1, 3200), 5);
    assert_int_not_equal(child->pid, parent->pid);
    assert_int_equal(later->pid, parent->pid);
    const ltr_process *cp = ltr_trace_process_find(h.t, child->pid);
    assert_non_null(cp);
    assert_int_equal(cp->ppid, parent->pid);
    assert_non_null(ltr_trace_stack_find(h.t, child->pid, child->stack));
    assert_non_null(ltr_trace_stack_find(h.t, parent->pid, later->stack));
    heap_free(&h);
}

/* A thread whose first act is pthread_getattr_np (glibc allocates inside it,
 * holding that thread's lock): the program runs through (the target's alarm
 * kills it otherwise), and the allocations after it have their stacks. */
static void test_program_asking_its_stack_bounds(void **state)
{
    heap_trace h = record_read("", "heap-target", "getattr", 0);
    const hev *on_main = find(&h, ALLOC, 3701), *on_thread = find(&h, ALLOC, 3702);
    assert_non_null(on_main);
    assert_non_null(on_thread);
    assert_int_equal(on_main->tid, on_main->pid);
    assert_int_not_equal(on_thread->tid, on_thread->pid);
    const hev *both[] = {on_main, on_thread};
    for (int i = 0; i < 2; i++) {
        const ltr_stack *st = ltr_trace_stack_find(h.t, both[i]->pid, both[i]->stack);
        assert_non_null(st);
        assert_true(st->frame_count >= 2);
        const ltr_module *m = module_of(&h, both[i]->pid, st->frames[0], both[i]->ts);
        assert_non_null(m);
        assert_non_null(strstr(m->path, "heap-target"));
    }
    heap_free(&h);
}

/* The process's first traced allocation is glibc's own, made inside atexit
 * with the exit-functions lock held: the agent's first event must take no
 * lock of glibc's that the caller may hold (it registered its own atexit
 * there, and hung). The program runs through, and both are recorded. */
static void test_first_allocation_inside_atexit(void **state)
{
    heap_trace h = record_read("", "heap-target", "atexit", 0);
    assert_non_null(find(&h, ALLOC, 3750));
    assert_true(count(&h, ALLOC, 2 /* calloc: atexit's */, 0) >= 1);
    heap_free(&h);
}

/* Starts heap-target MODE dormant, then a session, then opens its gate;
 * the trace when it ended. */
static heap_trace run_gated(const char *mode)
{
    const char *tmp = getenv("TMPDIR");
    char agent[600], trace[600];
    snprintf(agent, sizeof agent, "%s/../lib/libltr-heap.so", getenv("LTR_TEST_BIN"));
    snprintf(trace, sizeof trace, "%s/g.ltr", tmp);
    tu_result r = tu_run("LD_PRELOAD=%s %s %s %s/go & p=$!; sleep 0.3; "
                         "%s start heap --instance g --filemode --buffers 8 --buffer-size 64 && "
                         "touch %s/go; wait $p; echo target $?; %s stop --instance g %s",
                         agent, tu_test_bin("heap-target"), mode, tmp, tu_ltr(), tmp, tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    if (!strstr(r.out, "target 0")) /* 142: the target's alarm ended a deadlock */
        fail_msg("the target did not run through: %s%s", r.out, r.err);
    tu_free(&r);
    return read_heap(trace);
}

/* A thread inside the loader's write lock (as in dlclose's frees) makes its
 * first event of a session while the others make theirs: the agent must not
 * hold a lock of its own while it waits for the loader (modules.c). The
 * target is started dormant, the session after it, then the gate opens. */
static void test_first_event_inside_loader_lock(void **state)
{
    heap_trace h = run_gated("loaderlock");
    assert_int_equal(count(&h, ALLOC, 1, 3760), 1);
    assert_int_equal(count(&h, ALLOC, 1, 3761), 200);
    heap_free(&h);
}

/* A signal handler that siglongjmps out of the agent (sent while the
 * thread's first event waits inside it): the agent holds the signal until
 * it is done, so the thread goes on being traced and no lock is left held. */
static void test_handler_jumping_out_of_agent(void **state)
{
    heap_trace h = run_gated("longjmp");
    assert_int_equal(count(&h, ALLOC, 1, 3770), 1);
    assert_int_equal(count(&h, ALLOC, 1, 3771), 10);
    assert_int_equal(count(&h, ALLOC, 1, 3772), 1);
    heap_free(&h);
}

/* ltr record says what the trace is missing: events lost for want of
 * buffers (with how many of how many), or every event (a static program). */
/* `ltr record` with two 4 KB buffers around mode_many, its recorder stopped
 * (SIGSTOP) from before the program's first event of the 200 001 until after
 * the program ended: the program runs on, the buffers fill, and every later
 * event is lost, whatever the machine's load. (Before, the test raced the
 * recorder against the program, as SCHED_IDLE on the program's CPU; it still
 * found no loss once in CI.) Returns what ltr record said and its status. */
static tu_result record_beside_stopped_recorder(void)
{
    const char *dir = getenv("TMPDIR");
    char err_path[512], gate[512];
    snprintf(err_path, sizeof err_path, "%s/record.err", dir);
    snprintf(gate, sizeof gate, "%s/go", dir);
    pid_t record = fork();
    assert_true(record >= 0);
    if (record == 0) {
        int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 2) < 0)
            _exit(126);
        execl(tu_ltr(), "ltr", "record", "--force", "-o", trace_path, "--buffers", "2", "--buffer-size", "4",
              "--", tu_test_bin("heap-target"), "manygate", gate, (char *)NULL);
        _exit(127);
    }
    long recorder = 0, target = 0;
    char instance[32];
    snprintf(instance, sizeof instance, "record-%ld", (long)record);
    for (int i = 0; i < 2000 && !(recorder && target); i++) {
        recorder = tu_session_pid(instance, "recorder pid ");
        target = tu_session_pid(instance, "processes attached: ");
        if (!(recorder && target))
            usleep(10000);
    }
    bool stopped = recorder && target && kill((pid_t)recorder, SIGSTOP) == 0;
    tu_write_file(dir, "go", "");
    for (int i = 0; i < 2000 && stopped && ltr_pid_alive((pid_t)target); i++)
        usleep(10000);
    bool ended = !ltr_pid_alive((pid_t)target); /* gone, or a zombie its parent was not told of yet */
    if (recorder)
        kill((pid_t)recorder, SIGCONT);
    int status = 0;
    assert_int_equal(waitpid(record, &status, 0), record);
    assert_true(stopped);
    assert_true(ended);
    tu_result r = {.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                   .err = tu_read_file(err_path)};
    assert_non_null(r.err);
    return r;
}

static void test_record_says_what_is_missing(void **state)
{
    snprintf(trace_path, sizeof trace_path, "%s/t.ltr", getenv("TMPDIR"));
    tu_result r = record_beside_stopped_recorder();
    assert_int_equal(r.status, 0);
    /* said before it ran: too few buffers for this machine (8 a CPU) */
    const char *w = strstr(r.err, "ltr record: warning: --buffers 2 is likely to lose heap events on ");
    if (!w || !(w = strstr(w + 1, "ltr record: warning: ")))
        fail_msg("no warning of 2 buffers, or no loss reported; ltr record said:\n%s", r.err);
    assert_non_null(w);
    unsigned long long lost = 0, all = 0;
    assert_int_equal(sscanf(w, "ltr record: warning: %llu of %llu heap events were lost", &lost, &all), 2);
    assert_int_equal(all, 2 + 2 * 100000 + 1); /* manygate: a pair, mode_many's 100000 and one more */
    assert_true(lost > 0 && lost < all);
    assert_non_null(strstr(r.err, "(now --buffers 2 --buffer-size 4)"));
    tu_free(&r);
    heap_trace h = read_heap(trace_path);
    assert_int_equal(h.n + lost, all); /* the rest is in the trace */
    assert_int_equal(h.lost, lost);     /* and the trace counts the same loss */
    heap_free(&h);
    r = record("", "heap-static", "");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "allocated"));
    assert_non_null(strstr(r.err, "(0 heap events)"));
    assert_non_null(strstr(r.err, "no heap events were recorded"));
    tu_free(&r);
    /* a C++ program did call malloc, in libstdc++'s constructor before the
     * agent's: not "the command never called" it (heaptrack shows the call) */
    r = record("", "heap-cxx-idle", "");
    assert_int_equal(r.status, 0);
    if (!strstr(r.err, "no heap events were recorded") || strstr(r.err, "never called") ||
        !strstr(r.err, "constructors before the agent's own"))
        fail_msg("ltr record of an idle C++ program said:\n%s", r.err);
    tu_free(&r);
    r = record("", "heap-target", "counts");
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "warning"));
    tu_free(&r);
}

/* A thread with a 32 KB stack, 20 KB of it in use at each allocation: the
 * agent's TLS (taken from every thread's stack) and its hooks' frames fit
 * in the rest, dormant or recording. */
static void test_threads_with_small_stacks(void **state)
{
    heap_trace h = record_read("", "heap-target", "smallstack", 0);
    for (uint64_t i = 0; i < 32; i++) {
        const hev *e = find(&h, ALLOC, 3750 + i);
        assert_non_null(e);
        assert_non_null(ltr_trace_stack_find(h.t, e->pid, e->stack));
    }
    heap_free(&h);
    tu_result r = tu_run("LD_PRELOAD=%s/../lib/libltr-heap.so %s smallstack", getenv("LTR_TEST_BIN"),
                         tu_test_bin("heap-target")); /* dormant: no session */
    assert_int_equal(r.status, 0);
    tu_free(&r);
}

/* A pool of 100 threads that hold their buffers between bursts: with
 * ltr record's default buffers every thread has one, and nothing is lost
 * (64 buffers lost every event of the threads past them). */
static void test_thread_pool_with_default_buffers(void **state)
{
    tu_result r = record("", "heap-target", "pool");
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "lost"));
    tu_free(&r);
    heap_trace h = read_heap(trace_path);
    assert_int_equal(h.lost, 0);
    uint64_t allocs = 0, frees = 0;
    for (size_t i = 0; i < h.n; i++) {
        allocs += h.v[i].kind == ALLOC && h.v[i].size >= 3870 && h.v[i].size < 3878;
        frees += h.v[i].kind == FREE && h.v[i].tid != h.v[i].pid;
    }
    assert_int_equal(allocs, 100 * 20 * 20);
    assert_true(frees >= allocs);
    heap_free(&h);
}

/* Threads whose last frees come after every key destructor (glibc's
 * __libc_thread_freeres frees strerror's message): each such free is in
 * the trace, by its thread, and the agent's per-thread blocks go with the
 * thread (they stayed mapped: 2000 such threads left 16 MB more mapped,
 * 8 kB each). */
static void test_frees_after_thread_destructors(void **state)
{
    tu_result r = record("", "heap-target", "exitfrees");
    assert_int_equal(r.status, 0);
    const char *grew = strstr(r.out, "exitfrees grew ");
    assert_non_null(grew);
    long kb = atol(grew + strlen("exitfrees grew "));
    if (kb > 1024)
        fail_msg("2000 threads left %ld kB more mapped", kb);
    tu_free(&r);
    heap_trace h = read_heap(trace_path);
    assert_int_equal(h.lost, 0);
    size_t msgs = 0;
    for (const hev *e = h.v; e < h.v + h.n; e++) {
        if (e->kind != ALLOC || e->size != 20 || e->tid == e->pid)
            continue;
        msgs++;
        const hev *f = h.v;
        while (f < h.v + h.n && !(f->kind == FREE && f->tid == e->tid && f->addr == e->addr))
            f++;
        if (f == h.v + h.n)
            fail_msg("thread %u's message at %#llx: no free", e->tid, (unsigned long long)e->addr);
    }
    assert_int_equal(msgs, 2200);
    heap_free(&h);
}

/* A thread's own key destructor, running after the agent's, frees its
 * cache of 200 nodes: a flight recorder of 16 buffers keeps every event,
 * and their frees (each such event took a buffer of the ring: 16 of 401
 * events kept, 385 overwritten). */
static void test_key_destructor_frees_fill_no_ring(void **state)
{
    heap_trace h = record_read("--memory --buffers 16 --buffer-size 64", "heap-target", "keyfrees", 0);
    assert_int_equal(h.overwritten, 0);
    assert_int_equal(h.lost, 0);
    size_t frees = 0;
    for (const hev *e = h.v; e < h.v + h.n; e++)
        frees += e->kind == FREE && e->tid != e->pid;
    assert_int_equal(frees, 200);
    heap_free(&h);
}

/* By thread, then time; file order kept at equal times (the index). */
static int by_thread_time(const void *a, const void *b)
{
    const hev *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* 600 threads alive at once, more than a ring of 512 buffers (half the
 * default on one CPU) gives buffers of their own: the rest write to their
 * CPUs' buffers (ring.h). Nothing is lost, every event is there once, under its
 * own thread, and the analysis comes out exact. */
static void test_more_threads_than_buffers(void **state)
{
    tu_result r = record("--buffers 512", "heap-target", "crowd");
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "lost"));
    tu_free(&r);
    heap_trace h = read_heap(trace_path);
    assert_int_equal(h.lost, 0);
    assert_int_equal(h.damage, 0);
    uint64_t allocs = 0, frees = 0;
    uint32_t seq_tid[4096] = {0};
    bool shared = false; /* a buffer held several threads' events: a CPU's */
    for (size_t i = 0; i < h.n; i++) {
        allocs += h.v[i].kind == ALLOC && h.v[i].size >= 5000 && h.v[i].size < 5008;
        frees += h.v[i].kind == FREE && h.v[i].tid != h.v[i].pid;
        uint64_t seq = h.v[i].seq;
        if (seq < 4096 && h.v[i].tid != h.v[i].pid) {
            if (!seq_tid[seq])
                seq_tid[seq] = h.v[i].tid;
            else if (seq_tid[seq] != h.v[i].tid)
                shared = true;
        }
    }
    assert_int_equal(allocs, 600 * 80);
    assert_int_equal(frees, 600 * 78);
    assert_true(shared);
    /* the report names a dozen of its 601 threads, and says how many more */
    r = tu_run("%s analyze %s", tu_ltr(), trace_path);
    assert_int_equal(r.status, 0);
    const char *threads = strstr(r.out, "  threads: "), *eol = threads ? strchr(threads, '\n') : NULL;
    assert_non_null(eol);
    int named = 0;
    for (const char *c = threads; c < eol; c++)
        named += *c == '(';
    const char *more = strstr(threads, ", and 589 more (--format json lists them)");
    if (named != 13 || !more || more > eol) /* 12 names, and the note's parenthesis */
        fail_msg("%.*s", (int)(eol - threads), threads);
    tu_free(&r);
    /* Each thread's two last blocks stay: paired by address, each thread's
     * events in its time order (a block is freed by the thread that made
     * it; a thread's events from two CPUs' buffers may come in either file
     * order, their times to the nanosecond tell, trace-format.md). */
    qsort(h.v, h.n, sizeof *h.v, by_thread_time);
    enum { SLOTS = 1 << 17 };
    uint64_t *addr = calloc(SLOTS, sizeof *addr), *size = calloc(SLOTS, sizeof *size);
    uint64_t leaked = 0, want = 0;
    for (size_t i = 0; i < h.n; i++) {
        const hev *e = &h.v[i];
        uint64_t key = e->addr ^ (uint64_t)e->tid << 48; /* per thread: file order is not time order across threads */
        uint64_t k = (key * 0x9e3779b97f4a7c15ull) >> 47;
        if (e->kind == ALLOC && e->size >= 5000 && e->size < 5008) {
            while (addr[k] && addr[k] != key)
                k = (k + 1) & (SLOTS - 1);
            addr[k] = key;
            size[k] += e->size; /* a block already there (an event missed) would add up */
            leaked += e->size;
        } else if (e->kind == FREE) {
            while (addr[k] && addr[k] != key)
                k = (k + 1) & (SLOTS - 1);
            leaked -= addr[k] ? size[k] : 0;
            size[k] = 0;
        }
    }
    for (int t = 0; t < 600; t++)
        want += 2 * (5000 + t % 8);
    assert_int_equal(leaked, want);
    free(addr);
    free(size);
    size_t events = h.n;
    heap_free(&h);
    r = tu_run("%s analyze --format json %s", tu_ltr(), trace_path);
    assert_int_equal(r.status, 0);
    char field[64];
    snprintf(field, sizeof field, "\"heap_events\":%zu,", events);
    assert_non_null(strstr(r.out, field));
    assert_non_null(strstr(r.out, "\"events_lost\":0,"));
    tu_free(&r);
}

static void test_exec_keeps_tracing(void **state)
{
    heap_trace h = record_read("", "heap-target", "exec", 0);
    const hev *before = find(&h, ALLOC, 3400), *after = find(&h, ALLOC, 3500);
    assert_non_null(before);
    assert_non_null(after);
    assert_int_equal(before->pid, after->pid);
    const ltr_stack *st = ltr_trace_stack_find(h.t, after->pid, after->stack);
    assert_non_null(st);
    assert_non_null(module_of(&h, after->pid, st->frames[0], after->ts));
    heap_free(&h);
}

static void test_signal_handler_allocates(void **state)
{
    heap_trace h = record_read("", "heap-target", "signal", 0);
    assert_int_equal(count(&h, ALLOC, 1, 3700), 10);
    assert_int_equal(count(&h, ALLOC, 1, 2011), 1000);
    heap_free(&h);
}

static void test_killed_target_leaves_readable_trace(void **state)
{
    heap_trace h = record_read("", "heap-target", "kill", 128 + 9);
    assert_int_equal(h.damage, 0);
    assert_int_equal(count(&h, ALLOC, 1, 3800), 100);
    heap_free(&h);
}

/* ---- dormant, memory mode, sessions ------------------------------------------- */

static void test_dormant_agent_changes_nothing(void **state)
{
    const char *agent = getenv("LTR_TEST_AGENT");
    char path[600];
    snprintf(path, sizeof path, "%s/../lib/libltr-heap.so", getenv("LTR_TEST_BIN"));
    if (!agent)
        agent = path;
    tu_result plain = tu_run("%s dormant", tu_test_bin("heap-target"));
    tu_result pre = tu_run("LD_PRELOAD=%s %s dormant", agent, tu_test_bin("heap-target"));
    assert_int_equal(plain.status, 0);
    assert_int_equal(pre.status, 0);
    assert_string_equal(plain.out, pre.out);
    assert_string_equal(pre.err, "");
    tu_free(&plain);
    tu_free(&pre);
    /* a session that does not enable heap tracing gets no heap event */
    char trace[600];
    snprintf(trace, sizeof trace, "%s/d.ltr", getenv("TMPDIR"));
    tu_result r = tu_run("%s start --instance d --filemode --provider Some.Other && "
                         "LD_PRELOAD=%s %s counts && %s stop --instance d %s",
                         tu_ltr(), agent, tu_test_bin("heap-target"), tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    heap_trace h = read_heap(trace);
    assert_int_equal(h.n, 0);
    heap_free(&h);
}

/* A traced thread's arena is laid out as without the agent: the agent builds
 * the records that describe an event's layout (written by the thread that
 * makes the first such event) in pages of its own, not in blocks of the
 * program's heap, whose reuse shifted every later block (arena_walk in
 * target.c; on `heap-workload 1 200000 12` glibc trimmed at other points,
 * 600 more page faults). */
static void arena_as_without_agent(const char *opts)
{
    tu_result plain = tu_run("%s arena", tu_test_bin("heap-target"));
    tu_result traced = record(opts, "heap-target", "arena");
    assert_int_equal(plain.status, 0);
    assert_int_equal(traced.status, 0);
    assert_non_null(strchr(plain.out, '\n'));
    assert_string_equal(plain.out, traced.out);
    tu_free(&plain);
    tu_free(&traced);
}

static void test_arena_as_without_agent(void **state)
{
    arena_as_without_agent("--depth 0");
}

/* And with stacks: what the unwinder allocates on the thread's first walks
 * (libdw's CFI of each module met, pthread_getattr_np's reading of
 * /proc/self/maps) comes from the agent's own heap (ownheap.c): in the
 * thread's arena it moved the blocks by 640 bytes ("832 672 944" against
 * "192 32 304"). */
static void test_arena_as_without_agent_unwinding(void **state)
{
    arena_as_without_agent("");
}

static void test_memory_mode_keeps_newest(void **state)
{
    heap_trace h = record_read("--memory --buffers 4 --buffer-size 16", "heap-target", "many", 0);
    assert_true(h.overwritten > 0);
    assert_int_equal(count(&h, ALLOC, 1, 3999), 1);   /* the newest event */
    assert_true(count(&h, ALLOC, 1, 3900) < 100000 / 16); /* older ones were overwritten */
    const hev *last = find(&h, ALLOC, 3999);
    assert_non_null(ltr_trace_stack_find(h.t, last->pid, last->stack)); /* stacks are all kept */
    heap_free(&h);
}

/* One thread's events of heap-target alternate, in file order, as it made
 * them: allocation j of size base + 2 * (j % 4), each freed next. */
static void expect_turns_in_order(const heap_trace *h, uint32_t tid, size_t want)
{
    size_t j = 0, n = 0;
    uint64_t base = 0, addr = 0, ts = 0;
    for (const hev *e = h->v; e < h->v + h->n; e++) {
        if (e->tid != tid)
            continue;
        if (e->ts < ts)
            fail_msg("thread %u: event %zu at %llu ns after one at %llu", tid, n, (unsigned long long)e->ts,
                     (unsigned long long)ts);
        ts = e->ts;
        if (n % 2 == 0) {
            base = j ? base : e->size;
            if (e->kind != ALLOC || e->size != base + 2 * (j % 4))
                fail_msg("thread %u: event %zu is not allocation %zu of its turns (kind %d, size %llu)", tid, n,
                         j, e->kind, (unsigned long long)e->size);
            addr = e->addr;
            j++;
        } else if (e->kind != FREE || e->addr != addr) {
            fail_msg("thread %u: event %zu is not the free of allocation %zu", tid, n, j - 1);
        }
        n++;
    }
    assert_int_equal(n, want);
}

/* Two threads whose small buffers alternate in the ring (heap-target
 * alternate: 400 turns of 200 events, 16 KB buffers): a save writes each
 * thread's buffers together, merged into blocks of up to 1 MB
 * (recorder/savewin.c), where it wrote each buffer as a block, 2 threads'
 * 80 000 events in 63 blocks (3 now); each thread's events all there, in
 * their order. */
static void test_save_merges_each_threads_buffers(void **state)
{
    (void)state;
    heap_trace h = record_read("--memory --buffers 256 --buffer-size 16", "heap-target", "alternate 400 200", 0);
    assert_int_equal(h.damage, 0);
    assert_int_equal(h.overwritten + h.lost, 0);
    uint32_t tids[2] = {0};
    for (size_t i = 0; i < h.n; i++) /* the two workers: the threads of sizes 2001.. and 2101.. */
        if (h.v[i].kind == ALLOC && h.v[i].size >= 2001 && h.v[i].size < 2200)
            tids[h.v[i].size >= 2101] = h.v[i].tid;
    assert_int_not_equal(tids[0], 0);
    assert_int_not_equal(tids[1], 0);
    expect_turns_in_order(&h, tids[0], 40000);
    expect_turns_in_order(&h, tids[1], 40000);
    ltr_trace_summary s;
    ltr_trace_summarize(h.t, &s);
    if (s.blocks > 12)
        fail_msg("%llu blocks: each thread's buffers were not merged", (unsigned long long)s.blocks);
    heap_free(&h);
}

static void test_start_heap_then_run(void **state)
{
    char trace[600];
    snprintf(trace, sizeof trace, "%s/s.ltr", getenv("TMPDIR"));
    tu_result r = tu_run("%s start heap --instance hs --buffers 8 --buffer-size 64", tu_ltr());
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "heap tracing: not available"));
    tu_free(&r);
    r = tu_run("%s run -- %s counts", tu_ltr(), tu_test_bin("heap-target"));
    assert_int_equal(r.status, 0);
    tu_free(&r);
    r = tu_run("%s stop --instance hs %s", tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    heap_trace h = read_heap(trace);
    expect_pairs(&h, 1001, 1, 20, 3);
    heap_free(&h);
}

/* Too few buffers for this machine's CPUs are said when the session starts,
 * and the events they lost when it stops, with the options to raise: a
 * review's 2 buffers of 4 KB lost nearly all, said by 'ltr analyze' alone,
 * as "no free buffer, or a size limit". The loss made sure of as in
 * record_beside_stopped_recorder: the recorder stopped (SIGSTOP) while the
 * program runs (under the suite's load, 2 buffers kept up with
 * analyze-churn's 40 000 events). A profile's own count is no warning. */
static void test_start_and_stop_say_too_few_buffers(void **state)
{
    const char *dir = getenv("TMPDIR");
    char trace[600];
    snprintf(trace, sizeof trace, "%s/few.ltr", dir);
    tu_result r = tu_run("%s start heap --instance few --filemode --buffers 2 --buffer-size 4", tu_ltr());
    assert_int_equal(r.status, 0);
    if (!strstr(r.err, "ltr start: warning: --buffers 2 is likely to lose heap events on ") ||
        !strstr(r.err, " per CPU, runs of 1 to 8 threads lost events 3 times in 4"))
        fail_msg("no warning of 2 buffers:\n%s", r.err);
    tu_free(&r);
    tu_expect_ok(tu_run("%s run --instance few -- %s manygate %s/go >/dev/null 2>&1 &", tu_ltr(),
                        tu_test_bin("heap-target"), dir));
    long recorder = 0, target = 0;
    for (int i = 0; i < 2000 && !(recorder && target); i++) {
        recorder = tu_session_pid("few", "recorder pid ");
        target = tu_session_pid("few", "processes attached: ");
        if (!(recorder && target))
            usleep(10000);
    }
    assert_true(recorder && target && kill((pid_t)recorder, SIGSTOP) == 0);
    tu_write_file(dir, "go", "");
    for (int i = 0; i < 2000 && ltr_pid_alive((pid_t)target); i++)
        usleep(10000);
    kill((pid_t)recorder, SIGCONT);
    assert_false(ltr_pid_alive((pid_t)target));
    r = tu_run("%s stop --instance few --no-symbols %s", tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    unsigned long long lost = 0, all = 0;
    const char *w = strstr(r.err, "ltr stop: warning: ");
    if (!w || sscanf(w, "ltr stop: warning: %llu of %llu events were lost: no buffer was free", &lost, &all) != 2)
        fail_msg("no loss said at the stop:\n%s", r.err);
    assert_non_null(strstr(w, "start the session again with more or larger buffers (ltr Heap Collector had "
                              "--buffers 2 --buffer-size 4)"));
    tu_free(&r);
    heap_trace h = read_heap(trace);
    assert_int_equal(h.lost, lost); /* what the trace counts */
    assert_int_equal(h.n + lost, all);
    heap_free(&h);
    r = tu_run("%s analyze %s", tu_ltr(), trace); /* and the analysis names the options too */
    assert_non_null(strstr(r.out, " event(s) were lost while recording (no free buffer: record again with more or "
                                  "larger ones, --buffers N --buffer-size KB of ltr start or ltr record;"));
    tu_free(&r);
    r = tu_run("%s start heap --filemode && %s cancel", tu_ltr(), tu_ltr());
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "--buffers"));
    tu_free(&r);
}

static size_t events_of(const heap_trace *h, uint32_t pid)
{
    size_t n = 0;
    for (size_t i = 0; i < h->n; i++)
        n += h->v[i].pid == pid;
    return n;
}

/* --pid: of two traced processes, the session takes the listed one only; and a
 * private `ltr record` session takes only what it launched. */
static void test_pid_filter_and_private_record(void **state)
{
    const char *tmp = getenv("TMPDIR");
    char agent[600], trace[600], rec[600];
    snprintf(agent, sizeof agent, "%s/../lib/libltr-heap.so", getenv("LTR_TEST_BIN"));
    snprintf(trace, sizeof trace, "%s/pid.ltr", tmp);
    snprintf(rec, sizeof rec, "%s/rec.ltr", tmp);
    tu_result r = tu_run("LD_PRELOAD=%s %s gate %s/go > /dev/null & echo $! > %s/a.pid; "
                         "LD_PRELOAD=%s %s gate %s/go > /dev/null & echo $! > %s/b.pid; "
                         /* go only once the attach is done: a fixed wait before it ended A first on a
                          * loaded machine ("pid A exited during the attach") */
                         "%s start heap --instance pf --pid $(cat %s/a.pid) || exit 1; "
                         "%s record -o %s -- %s gate %s/go > /dev/null & "
                         "sleep 0.5; touch %s/go; wait; %s stop --instance pf %s; echo pids $(cat %s/a.pid %s/b.pid)",
                         agent, tu_test_bin("heap-target"), tmp, tmp, agent, tu_test_bin("heap-target"),
                         tmp, tmp, tu_ltr(), tmp, tu_ltr(), rec, tu_test_bin("heap-target"), tmp, tmp,
                         tu_ltr(), trace, tmp, tmp);
    assert_int_equal(r.status, 0);
    unsigned a = 0, b = 0;
    const char *pids = strstr(r.out, "pids ");
    assert_non_null(pids);
    assert_int_equal(sscanf(pids, "pids %u %u", &a, &b), 2);
    if (access(trace, R_OK) != 0 || access(rec, R_OK) != 0)
        fail_msg("no trace written; out: %s\nerr: %s", r.out, r.err);
    tu_free(&r);
    heap_trace h = read_heap(trace), own = read_heap(rec);
    /* The three processes ran the same allocations. */
    assert_true(own.n > 20);
    assert_int_equal(events_of(&own, a) + events_of(&own, b), 0); /* `ltr record`: its own command only */
    assert_int_equal(events_of(&h, a), own.n); /* the listed process, all of it */
    assert_int_equal(events_of(&h, b), 0);
    assert_int_equal(h.n, events_of(&h, a)); /* nor the one `ltr record` launched */
    heap_free(&h);
    heap_free(&own);
    r = tu_run("%s start --pid 12 --instance nopid", tu_ltr());
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--pid limits heap tracing"));
    tu_free(&r);
}

static void test_bad_usage(void **state)
{
    tu_result r = tu_run("%s record -o x.ltr", tu_ltr());
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "no command given"));
    tu_free(&r);
    r = tu_run("%s record -o %s/n.ltr -- /nonexistent/prog", tu_ltr(), getenv("TMPDIR"));
    assert_int_equal(r.status, 127);
    assert_non_null(strstr(r.err, "/nonexistent/prog: No such file or directory"));
    tu_free(&r);
    r = tu_run("%s record --depth 999 -- true", tu_ltr());
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--depth"));
    tu_free(&r);
    r = tu_run("%s run", tu_ltr());
    assert_int_equal(r.status, 2);
    tu_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_c_functions_exact, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_cxx_operators_exact, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_stack_of_known_chain, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_stacks_of_many_threads, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_stacks_reusing_outer_frames, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_dlopen_dlclose_modules, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_dlopen_by_relative_path, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_daemon_closing_every_fd, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_agent_fds_out_of_the_way, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_many_dlopened_copies_told_apart, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_threads_and_names, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_renamed_by_another_thread, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_fork_child_is_its_own_process, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_program_asking_its_stack_bounds, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_first_allocation_inside_atexit, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_first_event_inside_loader_lock, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_handler_jumping_out_of_agent, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_record_says_what_is_missing, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_threads_with_small_stacks, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_thread_pool_with_default_buffers, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_frees_after_thread_destructors, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_key_destructor_frees_fill_no_ring, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_more_threads_than_buffers, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_exec_keeps_tracing, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_signal_handler_allocates, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_killed_target_leaves_readable_trace, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_dormant_agent_changes_nothing, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_arena_as_without_agent, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_arena_as_without_agent_unwinding, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_memory_mode_keeps_newest, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_save_merges_each_threads_buffers, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_start_heap_then_run, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_start_and_stop_say_too_few_buffers, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_pid_filter_and_private_record, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_bad_usage, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_stacks_after_a_full_metadata_region, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_module_after_a_full_metadata_region, tu_setup_sandbox,
                                        tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
