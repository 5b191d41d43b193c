/*
 * tests/e2e/test_nowait.c — a traced program never waits on ltr, and a
 * recorder never outlives the `ltr record` that owns it: programs run on at
 * full speed beside a stopped recorder (SIGSTOP) or a registry lock held by a
 * stuck process, their events counted as lost; a killed `ltr record` still
 * leaves its trace, and no recorder behind.
 */
#include "base/heap_events.h"
#include "prim/prim.h"
#include "util/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LTR tu_ltr()
#define PRODUCER tu_test_bin("ltr-test-producer")
#define TARGET tu_test_bin("heap-target")

/* A traced program that hangs is killed after this long (the test then
 * fails); one that does not wait on ltr finishes in a fraction of it. */
#define HANG_LIMIT_S 20

static const char *agent(void)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/../lib/libltr-heap.so", getenv("LTR_TEST_BIN"));
    return path;
}

/* The recorder pid `ltr status` names for a session; 0 if none. */
static long recorder_pid(const char *instance) { return tu_session_pid(instance, "recorder pid "); }

/* A column of the collector's line in `ltr status`: 0 recorded, 1 lost. */
static long long status_count(const char *instance, const char *collector, int which)
{
    tu_result st = tu_run("%s status --instance %s", LTR, instance);
    long long v[2] = {-1, -1};
    size_t len = strlen(collector);
    for (const char *line = st.out; line; line = strchr(line, '\n')) {
        line += *line == '\n';
        line += strspn(line, " ");
        unsigned long long bufs, free_bufs;
        char size[32], unit[8];
        /* the collector's name may hold spaces ("ltr Heap Collector") */
        if (!strncmp(line, collector, len) && line[len] == ' ' &&
            sscanf(line + len, " %llu %31s %7s %llu %lld %lld", &bufs, size, unit, &free_bufs, &v[0], &v[1]) == 6)
            break;
        v[0] = v[1] = -1;
    }
    tu_free(&st);
    return v[which];
}

/* Runs a traced command under a hang limit; returns its result and how long it took. */
static tu_result run_bounded(double *took, const char *cmd)
{
    double t0 = tu_now_s();
    tu_result r = tu_run("timeout -s KILL %d %s", HANG_LIMIT_S, cmd);
    *took = tu_now_s() - t0;
    if (r.status == 128 + SIGKILL || r.status == 137)
        fprintf(stderr, "the traced program hung on ltr: killed after %d s\n",
                HANG_LIMIT_S);
    return r;
}

/* A provider's program beside a stopped recorder: it finishes at once, every
 * event counted as lost; once the recorder runs again the session works and
 * the loss is in its counters and trace. */
static void test_stopped_recorder_provider(void **state)
{
    const char *dir = *state;
    tu_expect_ok(tu_run("%s start --instance s --provider Test.Producer", LTR));
    long rec = recorder_pid("s");
    assert_true(rec > 0);
    assert_int_equal(kill((pid_t)rec, SIGSTOP), 0);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s --threads 3 --events 2000", PRODUCER);
    double took;
    tu_result p = run_bounded(&took, cmd);
    kill((pid_t)rec, SIGCONT);
    assert_int_equal(p.status, 0);
    assert_int_equal(tu_field(p.out, "written"), 0);
    assert_int_equal(tu_field(p.out, "lost"), 6000);
    assert_true(took < HANG_LIMIT_S / 2);
    tu_free(&p);

    /* Running again (it answers: it is past its poll), a new process
     * attaches and loses nothing. */
    tu_expect_ok(tu_run("%s status --instance s", LTR));
    p = tu_run("%s --threads 3 --events 2000 --wait-enabled 5", PRODUCER);
    assert_int_equal(p.status, 0);
    assert_int_equal(tu_field(p.out, "written"), 6000);
    assert_int_equal(tu_field(p.out, "lost"), 0);
    tu_free(&p);
    assert_int_equal(status_count("s", "events", 1), 6000);
    tu_expect_ok(tu_run("%s stop --instance s %s/s.ltr", LTR, dir));
    char path[512];
    snprintf(path, sizeof path, "%s/s.ltr", dir);
    tu_trace t = tu_read_trace(path, "Test.Producer");
    assert_true(t.ok && t.complete && t.has_counters);
    assert_int_equal(t.provider_events, 6000);
    assert_int_equal(t.events_lost, 6000);
}

/* The heap agent beside a stopped recorder: programs (and a fork child) run
 * with their own output, unchanged, and their events count as lost. */
static void test_stopped_recorder_heap_agent(void **state)
{
    const char *dir = *state;
    tu_expect_ok(tu_run("%s start heap --instance h --buffers 8 --buffer-size 64", LTR));
    tu_result plain = tu_run("%s dormant", TARGET);
    assert_int_equal(plain.status, 0);
    long rec = recorder_pid("h");
    assert_true(rec > 0);
    assert_int_equal(kill((pid_t)rec, SIGSTOP), 0);
    char cmd[2048];
    double took, took_fork;
    snprintf(cmd, sizeof cmd, "env LD_PRELOAD=%s %s dormant", agent(), TARGET);
    tu_result r = run_bounded(&took, cmd);
    snprintf(cmd, sizeof cmd, "env LD_PRELOAD=%s %s fork", agent(), TARGET);
    tu_result f = run_bounded(&took_fork, cmd);
    kill((pid_t)rec, SIGCONT);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, plain.out);
    assert_int_equal(f.status, 0);
    assert_true(took < HANG_LIMIT_S / 2 && took_fork < HANG_LIMIT_S / 2);
    tu_free(&r);
    tu_free(&f);
    tu_free(&plain);
    long long lost = status_count("h", "ltr Heap Collector", 1);
    assert_true(lost >= 3 * 1999); /* dormant's mallocs, reallocs and frees at least */

    /* Running again: the next program is traced, and loses nothing. */
    tu_expect_ok(tu_run("%s status --instance h", LTR));
    r = tu_run("LD_PRELOAD=%s %s dormant", agent(), TARGET);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    assert_int_equal(status_count("h", "ltr Heap Collector", 1), lost);
    assert_true(status_count("h", "ltr Heap Collector", 0) >= 3 * 1999);
    tu_expect_ok(tu_run("%s stop --instance h %s/h.ltr", LTR, dir));
    char path[512];
    snprintf(path, sizeof path, "%s/h.ltr", dir);
    tu_trace t = tu_read_trace(path, LTR_HEAP_PROVIDER);
    assert_true(t.ok && t.complete && t.has_counters);
    assert_true(t.provider_events >= 3 * 1999);
    assert_int_equal(t.events_lost, (uint64_t)lost);
}

/* Polls (up to 20 s) for a process to be gone. */
static bool gone_within(long pid);

/* The shared memory of a process's mappings, in kB (RssShmem), or -1. */
static long rss_shmem_kb(long pid)
{
    char path[64], buf[8192];
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    if (ltr_read_small_file(path, buf, sizeof buf) <= 0)
        return -1;
    const char *p = strstr(buf, "RssShmem:");
    return p ? atol(p + strlen("RssShmem:")) : -1;
}

/* A program that wrote into a session and runs on after the session
 * stopped does not keep the session's buffers: the recorder gives their
 * pages back as it ends (before, they stayed until the program's next event
 * of another session, or its exit: a stopped 1 GB session's whole pool in a
 * service that runs for weeks). */
static void test_stopped_session_pages_given_back(void **state)
{
    const char *dir = *state;
    tu_expect_ok(tu_run("%s start heap --instance g --buffers 64 --buffer-size 64", LTR));
    tu_result r = tu_run("LD_PRELOAD=%s %s manyhold %s/go >/dev/null 2>&1 & echo $!", agent(), TARGET, dir);
    long target = atol(r.out);
    tu_free(&r);
    assert_true(target > 0);
    long held = -1;
    for (int i = 0; i < 2000 && (held = rss_shmem_kb(target)) < 1024; i++)
        usleep(10000); /* its 200 001 events fill some 1.2 MB of buffers */
    tu_result st = tu_run("%s stop --instance g %s/g.ltr", LTR, dir);
    long after = -1;
    for (int i = 0; i < 500 && (after = rss_shmem_kb(target)) >= 256; i++)
        usleep(10000);
    tu_write_file(dir, "go", "");
    assert_true(gone_within(target));
    assert_int_equal(st.status, 0);
    tu_free(&st);
    assert_true(held >= 1024);
    assert_true(after >= 0 && after < 256);
}

/* The recorder's heap, where its tables of megabytes go (backlog, chunk
 * buffers, zstd's workspace), is advised transparent huge pages: 4 600 page
 * faults of the recorder while bench/heap's two threads kept both CPUs busy
 * became 380 (recorder/setup.c). Seen as the "hg" flag of a mapping of its
 * heap in /proc/PID/smaps; a kernel without THP has nothing to see. */
static void test_recorder_heap_on_huge_pages(void **state)
{
    (void)state;
#ifdef __SANITIZE_ADDRESS__
    skip(); /* ASan's malloc is not glibc's: no arena, no brk heap to advise */
#endif
    if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) != 0)
        skip();
    tu_expect_ok(tu_run("%s start heap --instance t --buffers 8 --buffer-size 64", LTR));
    long pid = recorder_pid("t");
    assert_true(pid > 0);
    tu_result r = tu_run("awk '/^[0-9a-f]+-[0-9a-f]+ / { heap = ($NF == \"[heap]\") } "
                         "heap && /^VmFlags:/ && / hg/ { n++ } END { print n + 0 }' /proc/%ld/smaps",
                         pid);
    tu_expect_ok(tu_run("%s cancel --instance t", LTR));
    assert_int_equal(r.status, 0);
    int advised = atoi(r.out);
    tu_free(&r);
    if (advised < 1)
        fail_msg("no part of the recorder's heap is advised huge pages");
}

/* Every process with the agent joins every heap session, but one that the
 * session's --pid denies everything is not traced: `ltr status` counts it
 * apart and does not list it among the processes attached (a review took
 * such a service for a traced one). */
static void test_untraced_joiners_apart(void **state)
{
    const char *dir = *state;
    long pid[2];
    for (int i = 0; i < 2; i++) {
        tu_result r = tu_run("LD_PRELOAD=%s %s gatehold %s/go1 %s/go2 >/dev/null 2>&1 & echo $!", agent(), TARGET,
                             dir, dir);
        pid[i] = atol(r.out);
        tu_free(&r);
        assert_true(pid[i] > 0);
    }
    tu_expect_ok(tu_run("%s start heap --instance u --pid %ld --buffers 8 --buffer-size 64", LTR, pid[0]));
    tu_write_file(dir, "go1", "");
    char *out = NULL;
    for (int i = 0; i < 500; i++, usleep(10000)) { /* both joined once they allocate */
        tu_result st = tu_run("%s status --instance u", LTR);
        free(out);
        out = malloc(strlen(st.out) + strlen(st.err) + 32);
        assert_non_null(out);
        sprintf(out, "%s%s(status %d)\n", st.out, st.err, st.status);
        tu_free(&st);
        if (strstr(out, "1 process attached (1 more joined"))
            break;
    }
    tu_write_file(dir, "go2", "");
    gone_within(pid[0]);
    gone_within(pid[1]);
    tu_expect_ok(tu_run("%s cancel --instance u", LTR));
    char want[64], other[64];
    snprintf(want, sizeof want, "processes attached: %ld\n", pid[0]);
    snprintf(other, sizeof other, " %ld", pid[1]);
    if (!strstr(out, "1 process attached (1 more joined, not traced") || !strstr(out, want))
        fail_msg("ltr status said:\n%s", out);
    assert_null(strstr(out, other));
    free(out);
}

/* Whether a process sleeps in usleep (the target's gate), read from /proc. */
static bool in_gate(long pid)
{
    char path[64], wchan[64];
    snprintf(path, sizeof path, "/proc/%ld/wchan", pid);
    return ltr_read_small_file(path, wchan, sizeof wchan) > 0 && strstr(wchan, "nanosleep");
}

/* A program that started while the recorder was stopped is traced once the
 * recorder runs again, and the events it lost before are counted as its own. */
static void test_pending_attach_completes(void **state)
{
    const char *dir = *state;
    tu_expect_ok(tu_run("%s start heap --instance p --buffers 8 --buffer-size 64", LTR));
    long rec = recorder_pid("p");
    assert_true(rec > 0);
    assert_int_equal(kill((pid_t)rec, SIGSTOP), 0);
    tu_result r = tu_run("LD_PRELOAD=%s %s countsgate %s/go >/dev/null 2>&1 & echo $!", agent(), TARGET, dir);
    long target = atol(r.out);
    tu_free(&r);
    assert_true(target > 0);
    /* Its first allocations found no answer; it now waits at its gate, its
     * attach pending. */
    bool gated = false; /* seen once is enough: between two sleeps it runs */
    for (int i = 0; i < 2000 && !(gated = in_gate(target)); i++)
        usleep(10000);
    kill((pid_t)rec, SIGCONT);
    assert_true(gated);
    /* The recorder answers the pending attach; the target takes the answer at
     * its next event, past the gate. */
    bool answered = false;
    for (int i = 0; i < 2000 && !answered; i++) {
        tu_result st = tu_run("%s status --instance p", LTR);
        answered = strstr(st.out, " 1 process attached") != NULL;
        tu_free(&st);
        if (!answered)
            usleep(10000);
    }
    assert_true(answered);
    r = tu_run("touch %s/go", dir);
    tu_free(&r);
    bool done = gone_within(target);
    if (!done)
        kill((pid_t)target, SIGKILL);
    assert_true(done);
    tu_expect_ok(tu_run("%s stop --instance p %s/p.ltr", LTR, dir));
    char path[512];
    snprintf(path, sizeof path, "%s/p.ltr", dir);
    tu_trace t = tu_read_trace(path, LTR_HEAP_PROVIDER);
    assert_true(t.ok && t.complete && t.has_counters);
    assert_true(t.provider_events >= 40); /* mode_counts, after the gate */
    assert_true(t.events_lost >= 40);     /* and before it */
    assert_int_equal(t.process_events_lost, t.events_lost); /* all of them its own */
}

/* A memory-mode session of Test.Producer whose ring holds 6 M events (a
 * save of seconds), its ltr and recorder run with env before them. */
static void start_full_ring_with(const char *instance, const char *env)
{
    tu_expect_ok(tu_run("%s %s start --instance %s --provider Test.Producer --buffers 256 --buffer-size 1024", env,
                        LTR, instance));
    tu_result fill = tu_run("%s --threads 2 --events 3000000 --wait-enabled 5", PRODUCER);
    assert_int_equal(tu_field(fill.out, "written"), 6000000);
    tu_free(&fill);
}

/* The save's hold (libltr-test-enospc.so) is let go first: a failed test
 * leaves no recorder waiting on it for the sandbox's cancel. */
static int teardown_hold(void **state)
{
    char path[600];
    snprintf(path, sizeof path, "%s/hold", (const char *)*state);
    unlink(path);
    return tu_teardown_sandbox(state);
}

/* A process that starts while the recorder writes a save is answered
 * meanwhile (rec_meanwhile), not after the save: it waited 250 ms for its
 * attach and then lost its events until the save ended (a review's sqlite3
 * lost 583 038 of them with most buffers free). A status is answered
 * meanwhile too. The save is held (libltr-test-enospc.so) but for the
 * writes between which the recorder answers what waits for it, and does not
 * end until the test lets it: before, the test took a save of about 2 s to
 * outlast starting the program and a status, and on a loaded machine one
 * did not ('the save ended before the program did', the flake helper's 10
 * rounds of two at once). */
/* start_full_ring whose recorder's saves are held (libltr-test-enospc.so)
 * while DIR/hold exists, made here; its path into hold. */
static void start_held_ring(const char *instance, const char *dir, char *hold, size_t size)
{
    char env[1800];
    snprintf(hold, size, "%s/hold", dir);
    FILE *f = fopen(hold, "w");
    assert_non_null(f);
    fclose(f);
    /* ASan (the sanitized build) wants its runtime first: the shim goes first here, as in test_disk_full */
    snprintf(env, sizeof env,
             "ASAN_OPTIONS=\"$ASAN_OPTIONS:verify_asan_link_order=0\" LD_PRELOAD=%s/libltr-test-enospc.so "
             "LTR_TEST_HOLD_SAVE=%s", tu_test_bin(""), hold);
    start_full_ring_with(instance, env);
}

static void test_attach_answered_during_save(void **state)
{
    const char *dir = *state;
    char cmd[1800], part[600], hold[600];
    start_held_ring("sv", dir, hold, sizeof hold);
    snprintf(cmd, sizeof cmd, "%s save --instance sv %s/saved.ltr >%s/save.out 2>&1 & echo $!", LTR, dir, dir);
    tu_result bg = tu_run("%s", cmd);
    pid_t saver = (pid_t)atol(bg.out);
    tu_free(&bg);
    assert_true(saver > 0);
    snprintf(part, sizeof part, "ls %s/saved.ltr.*.part >/dev/null 2>&1", dir);
    bool writing = false;
    for (int i = 0; i < 2000 && !writing; i++) {
        tu_result ls = tu_run("%s", part);
        writing = ls.status == 0;
        tu_free(&ls);
        if (!writing)
            usleep(2000);
    }
    assert_true(writing);
    double took;
    snprintf(cmd, sizeof cmd, "%s --threads 1 --events 2000 --wait-enabled 5", PRODUCER);
    tu_result p = run_bounded(&took, cmd);
    tu_result st = tu_run("%s status --instance sv", LTR);
    tu_result still = tu_run("%s", part);
    assert_int_equal(still.status, 0); /* the save is not over: it is held */
    tu_free(&still);
    unlink(hold);
    assert_true(gone_within(saver));
    if (tu_field(p.out, "written") != 2000 || tu_field(p.out, "lost") != 0)
        fail_msg("a program started during a save: %s", p.out);
    if (st.status != 0 || !strstr(st.out, "session 'sv'"))
        fail_msg("ltr status during a save: %d: %s%s", st.status, st.out, st.err);
    tu_free(&p);
    tu_free(&st);
    snprintf(cmd, sizeof cmd, "cat %s/save.out", dir);
    tu_result out = tu_run("%s", cmd);
    assert_non_null(strstr(out.out, "saved session 'sv'"));
    tu_free(&out);
    assert_int_equal(status_count("sv", "events", 1), 0);
    tu_expect_ok(tu_run("%s cancel --instance sv", LTR));
}

/* A status that comes in the same round as a save (both sent while the
 * recorder was stopped for a moment) is answered before the save ends, not
 * after it (a review's). The save is held (start_held_ring) and cannot end
 * until the test lets it: before, the test took a save of 6 M events to
 * last 0.2 s past the status's answer, whatever the machine's speed. */
static void test_status_beside_save_first(void **state)
{
    const char *dir = *state;
    char hold[600], path[600];
    start_held_ring("sq", dir, hold, sizeof hold);
    long rec = recorder_pid("sq");
    assert_true(rec > 0);
    assert_int_equal(kill((pid_t)rec, SIGSTOP), 0);
    tu_result bg = tu_run("(%s save --instance sq %s/sq.ltr >%s/save.out 2>&1 &) ; sleep 0.05; "
                          "(%s status --instance sq >%s/status.out 2>&1 &) ; sleep 0.3", LTR, dir, dir, LTR, dir);
    tu_free(&bg);
    kill((pid_t)rec, SIGCONT);
    snprintf(path, sizeof path, "%s/status.out", dir);
    struct stat st;
    for (int i = 0; i < 3000 && (stat(path, &st) != 0 || st.st_size == 0); i++)
        usleep(10000);
    char *text = tu_read_file(path);
    snprintf(path, sizeof path, "%s/sq.ltr", dir);
    bool saved_first = access(path, F_OK) == 0;
    unlink(hold);
    if (!text || !strstr(text, "session 'sq': memory mode") || saved_first)
        fail_msg("a status sent with a save: %s: %s", saved_first ? "answered after the save" : "not answered",
                 text ? text : "");
    free(text);
    bool saved = false;
    for (int i = 0; i < 3000 && !saved; i++) {
        saved = access(path, F_OK) == 0;
        if (!saved)
            usleep(10000);
    }
    assert_true(saved);
    tu_expect_ok(tu_run("%s cancel --instance sq", LTR));
}

/* A process stuck while it holds the registry's lock (a recorder stopped
 * while it starts or ends a session) does not hang a traced program, nor keep
 * it from being traced by a session that runs. */
static void test_registry_lock_held(void **state)
{
    const char *dir = *state;
    tu_expect_ok(tu_run("%s start heap --instance l --buffers 8 --buffer-size 64", LTR));
    char path[512];
    snprintf(path, sizeof path, "%s/registry", getenv("LTR_RUNTIME_DIR"));
    int fd = open(path, O_RDWR | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX), 0);
    char cmd[2048];
    double took;
    snprintf(cmd, sizeof cmd, "env LD_PRELOAD=%s %s dormant", agent(), TARGET);
    tu_result r = run_bounded(&took, cmd);
    close(fd);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "sum "));
    assert_true(took < HANG_LIMIT_S / 2);
    tu_free(&r);
    tu_expect_ok(tu_run("%s stop --instance l %s/l.ltr", LTR, dir));
    snprintf(path, sizeof path, "%s/l.ltr", dir);
    tu_trace t = tu_read_trace(path, LTR_HEAP_PROVIDER);
    assert_true(t.ok && t.complete);
    assert_true(t.provider_events >= 3 * 1999);
    assert_int_equal(t.events_lost, 0);
}

/* Alive and not a zombie (whoever adopted it may not reap it at once). */
static bool alive(long pid)
{
    return ltr_pid_alive((pid_t)pid);
}

/* Polls (up to 20 s) for a process to be gone. */
static bool gone_within(long pid)
{
    for (int i = 0; i < 2000 && alive(pid); i++)
        usleep(10000);
    return !alive(pid);
}

/* SIGKILL of `ltr record` in the middle of a long command: its recorder
 * stops, writes the trace where record would have, and exits. */
static void killed_record(const char *dir, const char *mode)
{
    char trace[512], go[512], instance[64];
    snprintf(trace, sizeof trace, "%s/X%s.ltr", dir, mode);
    snprintf(go, sizeof go, "%s/go%s", dir, mode);
    tu_result r = tu_run("%s record %s -o %s -- %s gate %s >/dev/null 2>&1 & echo $!", LTR, mode,
                         trace, TARGET, go);
    long ltr_pid = atol(r.out);
    tu_free(&r);
    assert_true(ltr_pid > 0);
    snprintf(instance, sizeof instance, "record-%ld", ltr_pid);
    long rec = 0;
    for (int i = 0; i < 2000 && !(rec = recorder_pid(instance)); i++)
        usleep(10000);
    assert_true(rec > 0);
    /* The command is running under the agent (waiting for go). */
    long target = 0;
    for (int i = 0; i < 2000 && !target; i++) {
        r = tu_run("pgrep -P %ld", ltr_pid);
        target = atol(r.out);
        tu_free(&r);
        if (!target)
            usleep(10000);
    }
    assert_true(target > 0);
    assert_int_equal(kill((pid_t)ltr_pid, SIGKILL), 0);
    bool rec_gone = gone_within(rec);
    if (!rec_gone)
        kill((pid_t)rec, SIGKILL);
    assert_true(rec_gone);
    tu_trace t = tu_read_trace(trace, LTR_HEAP_PROVIDER);
    assert_true(t.ok && t.complete && t.has_counters);
    char part[600];
    snprintf(part, sizeof part, "%s.part", trace);
    assert_int_equal(access(part, F_OK), -1);
    /* The command itself runs on, untraced, and ends as it would have. */
    assert_true(alive(target));
    FILE *f = fopen(go, "w");
    assert_non_null(f);
    fclose(f);
    bool target_gone = gone_within(target);
    if (!target_gone)
        kill((pid_t)target, SIGKILL);
    assert_true(target_gone);
}

static void test_killed_record_file_mode(void **state)
{
    killed_record(*state, "--filemode");
}

static void test_killed_record_memory_mode(void **state)
{
    killed_record(*state, "--memory");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stopped_recorder_provider, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_stopped_recorder_heap_agent, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_attach_answered_during_save, tu_setup_sandbox, teardown_hold),
        cmocka_unit_test_setup_teardown(test_status_beside_save_first, tu_setup_sandbox, teardown_hold),
        cmocka_unit_test_setup_teardown(test_pending_attach_completes, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_stopped_session_pages_given_back, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_untraced_joiners_apart, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_recorder_heap_on_huge_pages, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_registry_lock_held, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_killed_record_file_mode, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_killed_record_memory_mode, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
