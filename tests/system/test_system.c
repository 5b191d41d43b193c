/*
 * tests/system/test_system.c — the system provider's /proc readers
 * (src/system/meminfo.c): a process's counters agree with what /proc says
 * and follow memory it touches; a process that is gone is said to be gone.
 */
#include "system/system.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
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
    /* read twice a few instructions apart: within a few pages of each other */
    assert_true(llabs((long long)after.private_bytes - (anon + swap) * 1024) <= 64 * 1024);
    assert_true(llabs((long long)after.rss - rss * 1024) <= 64 * 1024);
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

static void test_system_memory(void **state)
{
    (void)state;
    uint64_t total, avail;
    assert_int_equal(ltr_system_memory_read(&total, &avail), 0);
    assert_true(total > 0 && avail > 0 && avail <= total);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counters_follow_touched_memory),
        cmocka_unit_test(test_gone_process),
        cmocka_unit_test(test_zombie_is_gone),
        cmocka_unit_test(test_system_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
