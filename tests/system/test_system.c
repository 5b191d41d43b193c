/*
 * tests/system/test_system.c — the system provider's /proc readers
 * (src/system/meminfo.c): a process's counters agree with what /proc says
 * and follow memory it touches; a process that is gone is said to be gone;
 * a zombie's exit status is read as its parent would get it.
 */
#include "system/system.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A "Key:  N kB" line of /proc/self/status read here, independently. */
static long long status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long long v = -1;
    size_t k = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, k) && line[k] == ':')
            v = atoll(line + k + 1);
    if (f)
        fclose(f);
    return v;
}

static void test_counters_follow_touched_memory(void **state)
{
    (void)state;
    ltr_proc_memory before, after;
    assert_int_equal(ltr_proc_memory_read(getpid(), &before), 0);
    size_t size = 32u << 20;
    char *p = malloc(size);
    assert_non_null(p);
    memset(p, 7, size);
    assert_int_equal(ltr_proc_memory_read(getpid(), &after), 0);
    long long anon = status_kb("RssAnon"), swap = status_kb("VmSwap"), rss = status_kb("VmRSS");
    /* read twice a few instructions apart: within a few pages of each other
     * (RSS also counts file pages the code between the reads faults in: more
     * under sanitizers) */
    assert_true(llabs((long long)after.private_bytes - (anon + swap) * 1024) <= 256 * 1024);
    assert_true(llabs((long long)after.rss - rss * 1024) <= 2 * 1024 * 1024);
    assert_true(after.private_bytes >= before.private_bytes + size - (1u << 20));
    assert_true(after.minflt >= before.minflt + size / 4096 / 2); /* fault-around may map a few at once */
    assert_true(after.start_ticks > 0 && after.start_ticks == before.start_ticks);
    assert_int_equal(after.rss_anon + after.rss_file + after.rss_shmem, after.rss);
    free(p);
}

static void test_gone_process(void **state)
{
    (void)state;
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    int st;
    waitpid(child, &st, 0);
    ltr_proc_memory m;
    assert_int_equal(ltr_proc_memory_read(child, &m), -ENOENT);
    assert_int_equal(ltr_proc_start_ticks(child), 0);
}

static void test_zombie_is_gone(void **state)
{
    (void)state;
    pid_t child = fork();
    if (child == 0)
        _exit(3);
    /* a zombie keeps its /proc entry but no memory: not a process to sample */
    ltr_proc_memory m;
    int rc = 0;
    for (int i = 0; i < 2000 && rc == 0; i++) {
        rc = ltr_proc_memory_read(child, &m);
        if (rc == 0)
            usleep(1000);
    }
    assert_int_equal(rc, -ENOENT);
    int st;
    waitpid(child, &st, 0);
}

/* A child that ended by status or signal, not reaped: its wait status read
 * from /proc as its parent would get it; running, reaped or another start
 * time: not known (ltr watch --pid says how its target ended). */
static pid_t ended_child(int how)
{
    pid_t child = fork();
    if (child == 0) {
        if (how)
            raise(how);
        _exit(7);
    }
    siginfo_t si;
    assert_int_equal(waitid(P_PID, (id_t)child, &si, WEXITED | WNOWAIT), 0); /* a zombie, not reaped */
    return child;
}

static void test_exit_status_of_a_zombie(void **state)
{
    (void)state;
    int st = -1;
    assert_int_equal(ltr_proc_exit_status(getpid(), ltr_proc_start_ticks(getpid()), &st), -ESRCH);
    pid_t child = ended_child(0);
    uint64_t ticks = ltr_proc_start_ticks(child);
    assert_int_equal(ltr_proc_exit_status(child, ticks + 1, &st), -ESRCH);
    assert_int_equal(ltr_proc_exit_status(child, ticks, &st), 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 7);
    waitpid(child, NULL, 0);
    assert_int_equal(ltr_proc_exit_status(child, ticks, &st), -ESRCH);
    child = ended_child(SIGKILL);
    assert_int_equal(ltr_proc_exit_status(child, ltr_proc_start_ticks(child), &st), 0);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    waitpid(child, NULL, 0);
}

static void test_system_memory(void **state)
{
    (void)state;
    uint64_t total, avail;
    assert_int_equal(ltr_system_memory_read(&total, &avail), 0);
    assert_true(total > 0 && avail > 0 && avail <= total);
}

/* The machine's CPU pressure: microseconds some task waited for a CPU,
 * which only grow (how much is timing: not asserted). Without PSI the
 * reader says -ENOENT. */
static void test_cpu_waited(void **state)
{
    (void)state;
    uint64_t a = 0, b = 0;
    if (access("/proc/pressure/cpu", R_OK) != 0) {
        assert_int_equal(ltr_cpu_waited_us(&a), -ENOENT);
        return;
    }
    assert_int_equal(ltr_cpu_waited_us(&a), 0);
    usleep(20000);
    assert_int_equal(ltr_cpu_waited_us(&b), 0);
    assert_true(b >= a);
}

/* Another user than root may not sample the whole system (perf_event_paranoid
 * above 0): the probe says so, naming what would permit it. Run as root to
 * become that user (a child that drops to nobody). */
static void test_cpu_probe_refused(void **state)
{
    (void)state;
    char why[512];
    if (geteuid() != 0) {
        int rc = ltr_system_cpu_probe(why, sizeof why);
        if (rc == 0) {
            printf("skipped: this user may sample the whole system\n");
            skip();
        }
        assert_non_null(strstr(why, "perf_event_paranoid"));
        return;
    }
    FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
    int paranoid = 2;
    if (f && fscanf(f, "%d", &paranoid) != 1)
        paranoid = 2;
    if (f)
        fclose(f);
    if (paranoid <= 0) {
        printf("skipped: perf_event_paranoid %d lets every user sample\n", paranoid);
        skip();
    }
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t child = fork();
    if (child == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(2);
        int rc = ltr_system_cpu_probe(why, sizeof why);
        if (write(fds[1], why, strlen(why) + 1) < 0)
            _exit(3);
        _exit(rc < 0 ? 0 : 1);
    }
    close(fds[1]);
    memset(why, 0, sizeof why);
    ssize_t n = read(fds[0], why, sizeof why - 1);
    close(fds[0]);
    int st;
    waitpid(child, &st, 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_true(n > 0);
    assert_non_null(strstr(why, "perf_event_paranoid"));
    assert_non_null(strstr(why, "CAP_PERFMON"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counters_follow_touched_memory),
        cmocka_unit_test(test_cpu_waited),
        cmocka_unit_test(test_gone_process),
        cmocka_unit_test(test_zombie_is_gone),
        cmocka_unit_test(test_exit_status_of_a_zombie),
        cmocka_unit_test(test_system_memory),
        cmocka_unit_test(test_cpu_probe_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
