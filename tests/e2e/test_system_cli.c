/*
 * tests/e2e/test_system_cli.c — the system provider through the ltr command
 * (docs/system-provider.md): `ltr start memory --pid P` records P's memory
 * counters as /proc shows them; the built-in profiles general and memory
 * record system events instead of starting nothing; `ltr analyze` puts the
 * private bytes beside the heap's outstanding bytes.
 */
#include "util/testutil.h"
#include "base/system_events.h"

#include <ltr/trace.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LTR tu_ltr()
#define MEMHOLD tu_test_bin("ltr-test-memhold")

/* The ProcessMemory samples of pid in a trace: their private bytes (at most
 * cap) and how many; and the SystemMemory events in *sys. */
static size_t samples_of(const char *path, uint32_t pid, uint64_t *priv, size_t cap, uint64_t *sys)
{
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    const ltr_event *ev;
    size_t n = 0;
    *sys = 0;
    while (ltr_trace_next(t, &ev, &err) > 0) {
        const ltr_layout *l = ev->layout;
        if (!l || !l->provider || strcmp(l->provider->name, LTR_SYSTEM_PROVIDER))
            continue;
        uint64_t p = 0, v = 0;
        if (l->event_id == LTR_SYS_EV_SYSTEM_MEMORY)
            ++*sys;
        if (l->event_id != LTR_SYS_EV_PROCESS_MEMORY || ltr_event_get_u64(ev, "pid", &p) || p != pid)
            continue;
        assert_int_equal(ltr_event_get_u64(ev, "private_bytes", &v), 0);
        if (n < cap)
            priv[n] = v;
        n++;
    }
    ltr_trace_close(t);
    return n;
}

/* Private bytes of pid now, from /proc, as the docs define them. */
static uint64_t proc_private(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    char *text = tu_read_file(path);
    assert_non_null(text);
    const char *a = strstr(text, "RssAnon:"), *s = strstr(text, "VmSwap:");
    assert_non_null(a);
    uint64_t v = strtoull(a + 8, NULL, 10) + (s ? strtoull(s + 7, NULL, 10) : 0);
    free(text);
    return v * 1024;
}

/* A number after "key": in JSON text; -1 if absent. */
static long long jfield(const char *text, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(text, pat);
    return p ? atoll(p + strlen(pat)) : -1;
}

/* Starts memhold MB holding until killed; returns its pid once it is ready. */
static pid_t start_memhold(int mb)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        char arg[16];
        snprintf(arg, sizeof arg, "%d", mb);
        execl(MEMHOLD, MEMHOLD, arg, "-1", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char buf[8] = {0};
    assert_int_equal(read(fds[0], buf, 6), 6);
    close(fds[0]);
    assert_string_equal(buf, "ready\n");
    return pid;
}

/* Waits until the session's system collector has recorded at least n more events. */
static void wait_events(const char *session, long long n)
{
    long long first = -1, now = -1;
    double deadline = tu_now_s() + 30;
    while (tu_now_s() < deadline) {
        tu_result r = tu_run("%s status --instance %s", LTR, session);
        const char *line = r.out ? strstr(r.out, "System Collector") : NULL;
        long long b = 0, s = 0, f = 0, rec = -1;
        if (line)
            sscanf(line, "System Collector %lld %lld KB %lld %lld", &b, &s, &f, &rec);
        tu_free(&r);
        now = rec;
        if (first < 0)
            first = now;
        if (now >= 0 && now - first >= n)
            return;
        usleep(20000);
    }
    fail_msg("the session recorded %lld events in 30 s, not %lld more", now - first, n);
}

/* Memory counters agree with /proc within one sample: P holds its memory
 * still, so the sample after a /proc read says the same. */
static void test_memory_counters_agree_with_proc(void **state)
{
    const char *dir = *state;
    pid_t p = start_memhold(24);
    char trace[4200];
    snprintf(trace, sizeof trace, "%s/mem.ltr", dir);
    tu_expect_ok(tu_run("%s start memory --filemode --instance m1 --pid %d --memory-interval 0.05 -o %s", LTR,
                        (int)p, trace));
    wait_events("m1", 4);
    /* the recorder writes the system events itself: not a process attached */
    long rec = tu_session_pid("m1", "recorder pid ");
    tu_result st = tu_run("%s status --instance m1", LTR);
    char own[64];
    snprintf(own, sizeof own, "processes attached: %ld", rec);
    if (rec <= 0 || !strstr(st.out, " 0 processes attached") || strstr(st.out, own))
        fail_msg("ltr status: %s", st.out);
    /* no heap in the session: its --pid has no agent to join it with, and
     * status and stop warned of a pid "not attached", "never joined" (said
     * once P is gone: a failure here left it holding the test's output) */
    bool warned = strstr(st.err, "--pid") != NULL;
    tu_free(&st);
    uint64_t seen = proc_private(p);
    wait_events("m1", 4);
    tu_result stop = tu_run("%s stop %s --instance m1 --force", LTR, trace);
    assert_int_equal(stop.status, 0);
    /* no stack in it: nothing to name, and nothing said of names after a stop */
    warned |= strstr(stop.err, "--pid") != NULL;
    if (strstr(stop.err, "named") || strstr(stop.err, "symbols") || strstr(stop.err, "names"))
        fail_msg("ltr stop of a trace without stacks spoke of names:\n%s", stop.err);
    tu_free(&stop);
    stop = tu_run("%s symbolize %s", LTR, trace);
    assert_int_equal(stop.status, 0);
    assert_non_null(strstr(stop.err, "the trace holds no call stack: nothing to name"));
    tu_free(&stop);
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
    if (warned)
        fail_msg("ltr status or stop of a session without heap warned of its --pid");
    /* named by the system provider's ProcessStart (the trace has no PROCESS
     * record of a process not attached: it said "process P :") */
    tu_result an = tu_run("%s analyze %s", LTR, trace);
    char named[128];
    snprintf(named, sizeof named, "process %d %.15s: memory counters", (int)p, strrchr(MEMHOLD, '/') + 1);
    if (!strstr(an.out, named))
        fail_msg("no '%s' in:\n%s", named, an.out);
    tu_free(&an);
    uint64_t priv[4096], sys;
    size_t n = samples_of(trace, (uint32_t)p, priv, 4096, &sys);
    assert_true(n >= 2 && n <= 4096);
    assert_true(sys >= n / 2); /* the machine's figure at each interval too */
    size_t equal = 0;
    for (size_t i = 0; i < n; i++) {
        assert_true(priv[i] >= 24u << 20); /* every sample sees the 24 MB held */
        equal += priv[i] == seen;
    }
    assert_true(equal >= 1);
}

/* The built-in profiles record system events rather than nothing. */
static void check_profile_records(const char *dir, const char *profile)
{
    char trace[4200];
    snprintf(trace, sizeof trace, "%s/%s.ltr", dir, profile);
    tu_result r = tu_run("%s start %s --filemode --instance p1 --memory-interval 0.05 -o %s", LTR, profile, trace);
    assert_null(strstr(r.err, "starts nothing"));
    tu_expect_ok(r);
    wait_events("p1", 3);
    tu_expect_ok(tu_run("%s stop %s --instance p1", LTR, trace));
    tu_trace t = tu_read_trace(trace, LTR_SYSTEM_PROVIDER);
    assert_true(t.ok);
    assert_true(t.provider_events >= 3);
    assert_int_equal(t.events_lost, 0);
}

static void test_start_memory_records(void **state) { check_profile_records(*state, "memory"); }
static void test_start_general_records(void **state) { check_profile_records(*state, "general"); }

/* --pid with only the system provider is accepted; --memory-interval without it is refused. */
static void test_options(void **state)
{
    (void)state;
    tu_result r = tu_run("%s start --memory-interval 1 --instance o1", LTR);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--memory-interval"));
    tu_free(&r);
    r = tu_run("%s start memory --memory-interval 0 --instance o1", LTR);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "0.01"));
    tu_free(&r);
    /* CPU samples are of the targets only (WPR's are system-wide): with none
     * named, start says so; with --pid, or without samples, it does not */
    static const struct { const char *args; bool note; } cases[] = {
        {"general", true}, {"general --pid 1", false}, {"memory", false}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        r = tu_run("%s start %s --instance o2", LTR, cases[i].args);
        assert_int_equal(r.status, 0);
        bool note = cases[i].note && geteuid() == 0; /* else: a warning that none are taken at all */
        if (!!strstr(r.err, "taken of the session's target processes only") != note)
            fail_msg("ltr start %s said: %s", cases[i].args, r.err);
        tu_free(&r);
        tu_expect_ok(tu_run("%s cancel --instance o2", LTR));
    }
}

/* analyze: private bytes over the window beside the heap's outstanding bytes,
 * and how much of them the heap explains: memhold's 24 MB of malloc are most
 * of its private bytes. */
static void test_analyze_heap_share(void **state)
{
    const char *dir = *state;
    char trace[4200];
    snprintf(trace, sizeof trace, "%s/heapmem.ltr", dir);
    tu_expect_ok(tu_run("%s start heap memory --filemode --instance a1 --memory-interval 0.05 -o %s", LTR, trace));
    tu_expect_ok(tu_run("%s run --instance a1 -- %s 24 600", LTR, MEMHOLD));
    tu_expect_ok(tu_run("%s stop %s --instance a1", LTR, trace));
    tu_result r = tu_run("%s analyze %s --format json", LTR, trace);
    assert_int_equal(r.status, 0);
    const char *m = strstr(r.out, "\"memory\":[{");
    assert_non_null(m);
    long long samples = jfield(m, "samples"), priv = jfield(m, "private_last"), heap = jfield(m, "heap_last");
    tu_free(&r);
    assert_true(samples >= 2);
    assert_true(heap >= 24ll << 20);
    assert_true(priv >= heap && heap * 100 / priv >= 80);
    r = tu_run("%s analyze %s", LTR, trace);
    assert_non_null(strstr(r.out, "the heap explains"));
    /* in units, as the rest of the report: "24.6 MiB at 0.051 s", not
     * "25806848 at 0.051 s" (a new user's watch trace read raw bytes) */
    const char *line = strstr(r.out, "private bytes (RssAnon + VmSwap): ");
    assert_non_null(line);
    const char *at = strstr(line, " at "), *end = strchr(line, '\n');
    /* the first sample's unit is the size's: KiB when it came right after
     * the program started (a run under load failed on "912 KiB at") */
    if (!at || !end || at > end || at[-1] != 'B' || !strstr(line, "MiB outstanding in the heap"))
        fail_msg("private bytes not in MiB:\n%s", r.out);
    tu_free(&r);
    /* --cpu of a trace recorded without CPU samples says which profile has them */
    r = tu_run("%s analyze %s --cpu", LTR, trace);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "no CPU samples (SampledProfile) in the window: the general profile records them"));
    tu_free(&r);
}

/* ---- processes, threads and modules ------------------------------------- */

typedef struct target {
    pid_t pid;
    FILE *to, *from;
} target;

static target start_target(void)
{
    int in[2], out[2];
    assert_int_equal(pipe(in), 0);
    assert_int_equal(pipe(out), 0);
    target t = {.pid = fork()};
    if (t.pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        execl(tu_test_bin("ltr-test-proctarget"), "ltr-test-proctarget", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    t.to = fdopen(in[1], "w");
    t.from = fdopen(out[0], "r");
    return t;
}

/* Sends a command and returns the answer line's number (its pid for 'k'). */
static long command(target *t, char c)
{
    char line[256];
    fputc(c, t->to);
    fflush(t->to);
    assert_non_null(fgets(line, sizeof line, t->from));
    return atol(line);
}

/* The first event of the trace (read as far as it was flushed) named `event`
 * whose pid field is pid and whose string field `key` holds `text` (NULL:
 * any); *tid gets its tid field, *code its exit_code, *sig its signal,
 * *known its status_known. 0 if none yet. */
typedef struct found {
    uint64_t tid, sig, known;
    int64_t code;
} found;

static int find_event(const char *path, const char *event, uint32_t pid, const char *key, const char *text,
                      found *f)
{
    ltr_trace *t;
    ltr_error err;
    if (ltr_trace_open(path, &t, &err) != 0)
        return 0;
    const ltr_event *ev;
    int hit = 0;
    while (!hit && ltr_trace_next(t, &ev, &err) > 0) {
        const ltr_layout *l = ev->layout;
        uint64_t p;
        if (!l || !l->provider || strcmp(l->provider->name, LTR_SYSTEM_PROVIDER) || strcmp(l->name, event) ||
            ltr_event_get_u64(ev, "pid", &p) || p != pid)
            continue;
        const char *str = NULL;
        size_t len = 0;
        if (key && (ltr_event_get_str(ev, key, &str, &len) || !memmem(str, len, text, strlen(text))))
            continue;
        memset(f, 0, sizeof *f);
        ltr_event_get_u64(ev, "tid", &f->tid);
        ltr_event_get_u64(ev, "signal", &f->sig);
        ltr_event_get_u64(ev, "status_known", &f->known);
        ltr_event_get_i64(ev, "exit_code", &f->code);
        hit = 1;
    }
    ltr_trace_close(t);
    return hit;
}

/* How many events named `event` of pid the whole trace holds. */
static int count_events(const char *path, const char *event, uint32_t pid)
{
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    const ltr_event *ev;
    int n = 0;
    while (ltr_trace_next(t, &ev, &err) > 0) {
        const ltr_layout *l = ev->layout;
        uint64_t p;
        n += l && l->provider && !strcmp(l->provider->name, LTR_SYSTEM_PROVIDER) && !strcmp(l->name, event) &&
             !ltr_event_get_u64(ev, "pid", &p) && p == pid;
    }
    ltr_trace_close(t);
    return n;
}

/* Waits (30 s at most: the file gets partial buffers every second) for such an event. */
static found wait_event(const char *path, const char *event, uint32_t pid, const char *key, const char *text)
{
    found f;
    double deadline = tu_now_s() + 30;
    while (tu_now_s() < deadline) {
        if (find_event(path, event, pid, key, text, &f))
            return f;
        usleep(50000);
    }
    fail_msg("no %s event of pid %u%s%s in %s after 30 s", event, pid, key ? " with " : "", key ? text : "", path);
    return f;
}

/* Either the thread's start already had its name, or its renaming says it. */
static found wait_named_thread(const char *path, uint32_t pid, const char *name)
{
    found f;
    double deadline = tu_now_s() + 30;
    while (tu_now_s() < deadline) {
        if (find_event(path, "ThreadStart", pid, "name", name, &f) ||
            find_event(path, "ThreadName", pid, "name", name, &f))
            return f;
        usleep(50000);
    }
    fail_msg("no thread named %s in process %u after 30 s", name, pid);
    return f;
}

/* Each step of the target is checked in the trace before the next. */
static void check_processes(const char *dir, bool connector)
{
    if (connector && geteuid() != 0) {
        /* the process connector needs CAP_NET_ADMIN */
        printf("skipped: the process connector needs root\n");
        skip();
    }
    char trace[4200];
    snprintf(trace, sizeof trace, "%s/procs.ltr", dir);
    target t = start_target();
    tu_expect_ok(tu_run("%s%s start general.light --filemode --instance pt --pid %d -o %s",
                        connector ? "" : "LTR_SYSTEM_NO_CONNECTOR=1 ", LTR, (int)t.pid, trace));
    wait_event(trace, "ThreadStart", (uint32_t)t.pid, NULL, NULL); /* the target is followed */
    wait_event(trace, "ModuleLoad", (uint32_t)t.pid, "path", "libc.so");
    command(&t, 't');
    found th = wait_named_thread(trace, (uint32_t)t.pid, "worker-x");
    assert_true(th.tid != 0 && th.tid != (uint64_t)t.pid);
    command(&t, 'e');
    found end = wait_event(trace, "ThreadEnd", (uint32_t)t.pid, "name", "worker-x");
    assert_int_equal(end.tid, th.tid);
    command(&t, 'l');
    wait_event(trace, "ModuleLoad", (uint32_t)t.pid, "path", "libz.so");
    command(&t, 'u');
    wait_event(trace, "ModuleUnload", (uint32_t)t.pid, "path", "libz.so");
    long killed = command(&t, 'k');
    if (connector) { /* a child of a target, seen with its signal */
        found k = wait_event(trace, "ProcessExit", (uint32_t)killed, NULL, NULL);
        assert_int_equal(k.sig, SIGTERM);
        assert_int_equal(k.code, -1);
        assert_int_equal(k.known, 1);
        wait_event(trace, "ProcessStart", (uint32_t)killed, NULL, NULL);
    }
    fputc('x', t.to);
    fclose(t.to);
    int st;
    assert_int_equal(waitpid(t.pid, &st, 0), t.pid);
    assert_int_equal(WEXITSTATUS(st), 7);
    found ex = wait_event(trace, "ProcessExit", (uint32_t)t.pid, "name", "ltr-test-procta");
    if (connector) {
        assert_int_equal(ex.known, 1);
        assert_int_equal(ex.code, 7);
        assert_int_equal(ex.sig, 0);
    } else { /* from /proc only a parent could know */
        assert_int_equal(ex.known, 0);
        assert_int_equal(ex.code, -1);
    }
    fclose(t.from);
    tu_expect_ok(tu_run("%s stop %s --instance pt", LTR, trace));
    tu_trace tt = tu_read_trace(trace, LTR_SYSTEM_PROVIDER);
    assert_true(tt.ok);
    assert_int_equal(tt.events_lost, 0);
    /* each said once, by whichever source saw it first */
    assert_int_equal(count_events(trace, "ProcessExit", (uint32_t)t.pid), 1);
    assert_int_equal(count_events(trace, "ThreadEnd", (uint32_t)t.pid), 2); /* worker-x and the main thread */
    if (connector)
        assert_int_equal(count_events(trace, "ProcessExit", (uint32_t)killed), 1);
}

static void test_processes_connector(void **state) { check_processes(*state, true); }
static void test_processes_proc(void **state) { check_processes(*state, false); }

/* Heap events of pid's thread tid in the trace at path. */
static long heap_events_of(const char *path, uint32_t pid, uint32_t tid)
{
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    const ltr_event *ev;
    long n = 0;
    while (ltr_trace_next(t, &ev, &err) > 0)
        n += ev->layout && ev->layout->provider && !strcmp(ev->layout->provider->name, "Ltr.Heap") &&
             ev->pid == pid && ev->tid == tid;
    ltr_trace_close(t);
    return n;
}

/* A container's thread is written by the tid its process sees, the one its
 * heap events carry, so that the two join: the provider wrote ours from
 * /proc and the connector (ThreadStart pid=P tid=22930 beside heap events of
 * P's thread 1), and no thread event named a thread of the heap events. */
static void check_container_threads(const char *dir, bool connector)
{
    if (!tu_pid_namespaces_allowed())
        skip();
    if (connector && geteuid() != 0) {
        printf("skipped: the process connector needs root\n");
        skip();
    }
    tu_write_file(dir, "ns.py", tu_ns_worker_py);
    char trace[4200], path[4200];
    snprintf(trace, sizeof trace, "%s/ns.ltr", dir);
    tu_expect_ok(tu_run("%s%s start heap --provider Ltr.System:0x1 --filemode --instance ns -o %s",
                        connector ? "" : "LTR_SYSTEM_NO_CONNECTOR=1 ", LTR, trace));
    tu_expect_ok(tu_run("%s run --instance ns -- unshare --pid --fork --mount-proc /usr/bin/python3 %s/ns.py %s "
                        "> %s/run.out 2>&1 &", LTR, dir, dir, dir));
    snprintf(path, sizeof path, "%s/tid", dir);
    char *text = NULL;
    for (double end = tu_now_s() + 60; !(text = tu_read_file(path)) || !*text; usleep(10000)) {
        free(text);
        if (tu_now_s() > end)
            fail_msg("the python3 in its pid namespace did not start its thread");
    }
    uint32_t own = (uint32_t)atoi(text);
    free(text);
    tu_result r = tu_run("pgrep -xf '/usr/bin/python3 %s/ns.py %s'", dir, dir);
    uint32_t pid = (uint32_t)atol(r.out);
    tu_free(&r);
    assert_true(pid > 1 && pid != own);
    found th = wait_named_thread(trace, pid, "ns-worker");
    tu_expect_ok(tu_run("touch %s/exit", dir));
    found end = wait_event(trace, "ThreadEnd", pid, "name", "ns-worker");
    tu_expect_ok(tu_run("%s stop %s --instance ns", LTR, trace));
    if (th.tid != own || end.tid != own)
        fail_msg("the thread of tid %u in its namespace started as tid %llu and ended as tid %llu", own,
                 (unsigned long long)th.tid, (unsigned long long)end.tid);
    assert_true(heap_events_of(trace, pid, own) > 0);
}

static void test_container_threads_connector(void **state) { check_container_threads(*state, true); }
static void test_container_threads_proc(void **state) { check_container_threads(*state, false); }

/* ---- CPU samples ---------------------------------------------------------- */

/* The CPU samples of prog, which spins for ms milliseconds of CPU after
 * "ready" on its stdout and a byte on its stdin, in dir/cpu.ltr (trace:
 * its path): the session of profiles (the general one, and the heap's
 * too if asked) follows it from before it spins to its end. Sampling the
 * system needs root: skipped without. */
static void cpu_trace(const char *dir, const char *prog, const char *ms, const char *profiles, char *trace,
                      size_t size)
{
    if (geteuid() != 0) {
        /* system-wide perf sampling needs root or CAP_PERFMON (perf_event_paranoid is 2 by default) */
        printf("skipped: CPU samples need root here\n");
        skip();
    }
    int in[2], out[2];
    assert_int_equal(pipe(in), 0);
    assert_int_equal(pipe(out), 0);
    pid_t p = fork();
    if (p == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        execl(tu_test_bin(prog), prog, ms, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    char buf[8] = {0};
    assert_int_equal(read(out[0], buf, 6), 6);
    snprintf(trace, size, "%s/cpu.ltr", dir);
    tu_result r = tu_run("%s start %s --filemode --instance c1 --pid %d -o %s", LTR, profiles, (int)p, trace);
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "CPU samples")); /* no warning: root may sample */
    tu_free(&r);
    wait_event(trace, "ThreadStart", (uint32_t)p, NULL, NULL); /* the session follows it */
    assert_int_equal(write(in[1], "g", 1), 1);
    int st;
    assert_int_equal(waitpid(p, &st, 0), p);
    assert_int_equal(WEXITSTATUS(st), 0);
    close(in[1]);
    close(out[0]);
    tu_expect_ok(tu_run("%s stop %s --instance c1", LTR, trace));
}

/* A busy function tops the CPU samples, its stack unwound without frame
 * pointers (busy.c is built with -fomit-frame-pointer). */
static void test_cpu_samples(void **state)
{
    const char *dir = *state;
    char trace[4200];
    cpu_trace(dir, "ltr-test-busy", "800", "general", trace, sizeof trace);
    tu_result r = tu_run("%s analyze %s --cpu --format json --top 1", LTR, trace);
    assert_int_equal(r.status, 0);
    long long total = jfield(r.out, "cpu_samples"), top = jfield(r.out, "samples");
    assert_true(total >= 200); /* 800 ms of CPU at one sample a millisecond; a loaded machine loses few */
    assert_true(top * 100 >= total * 80);
    assert_non_null(strstr(r.out, "\"frames\":[\"busy_spin\",\"busy_middle\",\"busy_outer\",\"main\""));
    tu_free(&r);
    r = tu_run("%s export %s --cpu --format folded -o -", LTR, trace);
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "no CPU samples"));
    assert_non_null(strstr(r.out, "ltr-test-busy-"));
    assert_non_null(strstr(r.out, ";main;busy_outer;busy_middle;busy_spin "));
    tu_free(&r);
    /* a window without samples: an empty export, said */
    r = tu_run("%s export %s --cpu --format folded --to 0 -o -", LTR, trace);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.out[0], 0);
    assert_non_null(strstr(r.err, "the trace has no CPU samples (SampledProfile) in the window: the export is empty"));
    tu_free(&r);
    char pb[4300];
    snprintf(pb, sizeof pb, "%s/cpu.pb.gz", dir);
    tu_expect_ok(tu_run("%s export %s --cpu --format pprof -o %s", LTR, trace, pb));
    r = tu_run("gzip -dc %s | wc -c", pb);
    assert_true(atol(r.out) > 100);
    tu_free(&r);
    r = tu_run("%s analyze %s --cpu --format csv", LTR, trace);
    assert_int_equal(r.status, 2);
    tu_free(&r);
}

/* A call site without a name is the same module+0xOFFSET in the CPU
 * samples' stacks as in the heap's: ltr-test-busy-stripped (no symbol
 * table) keeps a block made in busy_spin, and its stack and the samples' in
 * busy_spin share the frames of busy_middle, busy_outer and main. The
 * sampler kept a return address less one: "+0x1328" where the heap's
 * stack of the same call said "+0x1329". */
static void test_cpu_and_heap_name_a_site_alike(void **state)
{
    char trace[4200];
    cpu_trace(*state, "ltr-test-busy-stripped", "300", "general heap", trace, sizeof trace);
    tu_result c = tu_run("%s analyze %s --cpu --format json --top 1", LTR, trace);
    tu_result h = tu_run("%s analyze %s --format json --top 1", LTR, trace);
    assert_int_equal(c.status, 0);
    assert_int_equal(h.status, 0);
    const char *cf = strstr(c.out, "\"frames\":[\""), *hf = strstr(h.out, "\"stacks\":[");
    assert_non_null(cf);
    assert_non_null(hf);
    assert_non_null(strstr(hf, "\"bytes\":123457,"));
    for (int k = 0; k < 4; k++) { /* the innermost frame differs: the sampled pc, the call of malloc */
        cf = strchr(cf + 1, '"');
        cf = cf ? strchr(cf + 1, '"') : NULL;
        hf = strstr(hf + 1, "\"offset\":\"");
        assert_non_null(cf);
        assert_non_null(hf);
        if (!k)
            continue;
        char want[96];
        snprintf(want, sizeof want, "ltr-test-busy-stripped+%.*s\"", (int)strcspn(hf + 10, "\""), hf + 10);
        if (strncmp(cf + 1, want, strlen(want)))
            fail_msg("frame %d: the samples' %.40s, the heap's %s\n%s\n%s", k, cf + 1, want, c.out, h.out);
    }
    tu_free(&c);
    tu_free(&h);
}

/* Two stacks of the samples whose names read the same once demangled (Foo's
 * D1 and D0 destructors, both "Foo::~Foo()") are one folded line, their
 * samples summed: flamegraph.pl and speedscope take one line a stack (it
 * was printed twice, 101 and 93 samples). The lines hold every sample. */
static void test_cpu_folded_one_line_per_stack(void **state)
{
    char trace[4200];
    cpu_trace(*state, "ltr-test-busy-dtors", "300", "general", trace, sizeof trace);
    tu_result r = tu_run("%s analyze %s --cpu --format json --top 1", LTR, trace);
    assert_int_equal(r.status, 0);
    long long total = jfield(r.out, "cpu_samples");
    tu_free(&r);
    r = tu_run("%s export %s --cpu --format folded -o - > %s.folded && sed 's/ [0-9]*$//' %s.folded | sort | uniq -d; "
               "grep -c 'main;Foo::~Foo() ' %s.folded; awk '{ s += $NF } END { print s }' %s.folded",
               LTR, trace, trace, trace, trace, trace);
    assert_int_equal(r.status, 0);
    long long lines = 0, sum = 0;
    if (sscanf(r.out, "%lld %lld", &lines, &sum) != 2 || lines != 1 || sum != total)
        fail_msg("the folded stacks repeat a line, or lose samples (of %lld): %s", total, r.out);
    tu_free(&r);
}

/* CPU samples of a container's thread carry the tid its heap events do,
 * its own namespace's: perf says ours, and no sample joined a heap event's
 * thread (of 257 samples of the python3, none of its spinning thread 2). */
static void test_cpu_samples_of_a_container(void **state)
{
    const char *dir = *state;
    if (geteuid() != 0) {
        printf("skipped: CPU samples need root here\n");
        skip();
    }
    if (!tu_pid_namespaces_allowed())
        skip();
    tu_write_file(dir, "busy.py",
                  "import sys, threading, time\n"
                  "def work():\n"
                  "    x = [str(i) for i in range(1000)]\n"
                  "    open(sys.argv[1] + '/tid', 'w').write(str(threading.get_native_id()))\n"
                  "    end = time.time() + 0.6\n"
                  "    while time.time() < end: pass\n"
                  "t = threading.Thread(target=work); t.start(); t.join()\n");
    char trace[4200], path[4200];
    snprintf(trace, sizeof trace, "%s/cpu.ltr", dir);
    tu_expect_ok(tu_run("%s start heap --provider Ltr.System:0x9 --filemode --instance cn -o %s", LTR, trace));
    tu_expect_ok(tu_run("%s run --instance cn -- unshare --pid --fork --mount-proc /usr/bin/python3 %s/busy.py %s",
                        LTR, dir, dir));
    tu_expect_ok(tu_run("%s stop %s --instance cn", LTR, trace));
    snprintf(path, sizeof path, "%s/tid", dir);
    char *text = tu_read_file(path);
    assert_non_null(text);
    uint32_t own = (uint32_t)atoi(text), pid = 0;
    free(text);
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(trace, &t, &err), 0);
    const ltr_event *ev;
    long samples = 0, joined = 0;
    while (ltr_trace_next(t, &ev, &err) > 0) {
        const ltr_layout *l = ev->layout;
        if (l && l->provider && !strcmp(l->provider->name, "Ltr.Heap") && ev->tid == own)
            pid = ev->pid; /* the worker's heap events come before its samples */
        uint64_t p, tid;
        if (l && l->provider && !strcmp(l->provider->name, LTR_SYSTEM_PROVIDER) && !strcmp(l->name, "CpuSample") &&
            !ltr_event_get_u64(ev, "pid", &p) && !ltr_event_get_u64(ev, "tid", &tid) && pid && p == pid) {
            samples++;
            joined += tid == own;
        }
    }
    ltr_trace_close(t);
    if (!pid || !joined || joined < samples / 2)
        fail_msg("of %ld CPU samples of pid %u, %ld are of its thread %u, which spun", samples, pid, joined, own);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_memory_counters_agree_with_proc, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_start_memory_records, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_start_general_records, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_options, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_analyze_heap_share, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_processes_connector, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_processes_proc, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_container_threads_connector, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_container_threads_proc, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_cpu_samples, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_cpu_folded_one_line_per_stack, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_cpu_and_heap_name_a_site_alike, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_cpu_samples_of_a_container, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
