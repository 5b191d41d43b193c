/*
 * tests/event/test_producer_fds.c — the producer's fds (the session's
 * socket and eventfd; its memfd is closed once mapped) live in the traced
 * program's fd table, above its usual range (prim.h, ltr_fd_move_high), which is
 * the program's: a daemon closes every fd above 2 after the agent attached
 * and opens its own files in their numbers. Then the wake-up wrote 8 bytes
 * into one of them, the session's end closed two, and giving the memory
 * back punched zeros over a third (python3 under 'ltr start heap --pid',
 * its 100 000-byte database zeroed at the next session). Here this process
 * is the program: it writes events, closes the producer's fds, puts files
 * in their numbers (dup2: a daemon's own files take the lowest), writes on, and a second session follows the first; its
 * files must stay whole and open. And the registry's fd: a lock the program
 * holds on its own file in that number stays held when a provider is
 * registered (the registry's lock is taken and released).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <ltr/provider.h>

#include "prim/prim.h"
#include "recorder/client.h"
#include "recorder/recorder.h"
#include "util/testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FILE_BYTES 4096
#define NFILES 32

static ltr_provider prov = {.state = &ltr_never_enabled, .name = "Test.Fds"};
static const ltr_field_desc fields[] = {{"seq", LTR_TYPE_UVAR}, {"blob", LTR_TYPE_BLOB}};
static ltr_event_desc ev = {.provider = &prov, .id = 1, .name = "Tick", .fields = fields, .field_count = 2};

/* A memory-mode session of small buffers (many hand-overs, each a wake-up)
 * that enables Test.Fds. */
static void launch(const char *name)
{
    static ltr_session_config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.name, sizeof cfg.name, "%s", name);
    cfg.mode = LTR_MODE_MEMORY;
    cfg.ncollectors = 1;
    snprintf(cfg.collectors[0].name, sizeof cfg.collectors[0].name, "events");
    cfg.collectors[0].buffer_kb = 4;
    cfg.collectors[0].buffers = 16;
    ltr_error err = {0};
    if (ltr_provider_spec_parse("Test.Fds", &cfg.providers[0], &err))
        fail_msg("%s", err.msg);
    cfg.nproviders = 1;
    if (ltr_recorder_launch(&cfg, &err))
        fail_msg("the recorder did not start: %s", err.msg);
    for (int i = 0; i < 500 && !ltr_event_enabled(&ev); i++)
        usleep(10000);
    assert_true(ltr_event_enabled(&ev));
}

static void write_events(int n)
{
    static char blob[200];
    for (int i = 0; i < n; i++) {
        const ltr_value v[] = {LTR_UVAR((uint64_t)i), LTR_BLOB(blob, sizeof blob)};
        ltr_event_write_values(&ev, v, 2, NULL);
    }
}

/* The highest fd number to look at: the table's size. */
static int fd_limit(void)
{
    long max = sysconf(_SC_OPEN_MAX);
    return max > 0 && max < 1 << 20 ? (int)max : 1 << 20;
}

/* The fds the producer holds now: its socket and eventfd (a memfd would be
 * one too). */
static int producer_fds(int *out, int max)
{
    int n = 0;
    for (int fd = 3; fd < fd_limit() && n < max; fd++) {
        char path[64], link[256] = "";
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        ssize_t k = readlink(path, link, sizeof link - 1);
        if (k > 0 && (strstr(link, "memfd:ltr-session") || strstr(link, "[eventfd]") || !strncmp(link, "socket:", 7)))
            out[n++] = fd;
    }
    return n;
}

static void test_program_reuses_the_producers_fds(void **state)
{
    const char *dir = *state;
    assert_int_equal(ltr_provider_register(&prov), 0);
    launch("fds-a");
    write_events(10); /* attached */
    int theirs[8];
    int n = producer_fds(theirs, 8);
    assert_true(n >= 2);
    for (int i = 0; i < n; i++) /* the daemon's close-every-fd */
        close(theirs[i]);
    int files[NFILES];
    char names[NFILES][512];
    char data[FILE_BYTES];
    memset(data, 'D', sizeof data);
    for (int i = 0; i < NFILES; i++) {
        snprintf(names[i], sizeof names[i], "%s/db.%d", dir, i);
        files[i] = open(names[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
        assert_true(files[i] >= 0);
        if (i < n && files[i] != theirs[i]) { /* into the producer's number */
            assert_int_equal(dup2(files[i], theirs[i]), theirs[i]);
            close(files[i]);
            files[i] = theirs[i];
        }
        assert_int_equal(write(files[i], data, sizeof data), (ssize_t)sizeof data);
    }
    int reused = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < NFILES; k++)
            reused += files[k] == theirs[i];
    assert_int_equal(reused, n); /* every number of the producer's is a file of ours now */
    write_events(20000);          /* buffers handed over: wake-ups */
    ltr_error err = {0};
    assert_int_equal(ltr_client_op("fds-a", "cancel", NULL, NULL, false, NULL, &err), 0);
    usleep(300000);
    launch("fds-b"); /* the old attachment retired, its memory given back */
    write_events(20000);
    usleep(300000);
    write_events(20000);
    assert_int_equal(ltr_client_op("fds-b", "cancel", NULL, NULL, false, NULL, &err), 0);
    for (int i = 0; i < NFILES; i++) {
        if (fcntl(files[i], F_GETFD) < 0)
            fail_msg("%s (fd %d) was closed under the program", names[i], files[i]);
        struct stat st;
        assert_int_equal(fstat(files[i], &st), 0);
        char got[FILE_BYTES + 64];
        ssize_t k = pread(files[i], got, sizeof got, 0);
        if (k != FILE_BYTES || memcmp(got, data, FILE_BYTES) != 0)
            fail_msg("%s (fd %d) changed under the program: %zd bytes, first %02x", names[i], files[i], k,
                     k > 0 ? (unsigned char)got[0] : 0);
        close(files[i]);
    }
    ltr_provider_unregister(&prov);
}

/* The registry's fd likewise: a provider registered after the program put
 * its pidfile, locked, in that number took the registry's lock on the
 * pidfile and its unlock released the program's lock. */
static void test_program_reuses_the_registrys_fd(void **state)
{
    const char *dir = *state;
    assert_int_equal(ltr_provider_register(&prov), 0); /* the registry is mapped */
    int reg = -1;
    for (int fd = 3; fd < fd_limit() && reg < 0; fd++) {
        char path[64], link[4200] = "";
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        ssize_t k = readlink(path, link, sizeof link - 1);
        if (k > 0 && strstr(link, "/registry"))
            reg = fd;
    }
    assert_true(reg >= 0);
    close(reg);
    char pidfile[512];
    snprintf(pidfile, sizeof pidfile, "%s/daemon.pid", dir);
    int fd = open(pidfile, O_RDWR | O_CREAT, 0600);
    assert_true(fd >= 0);
    if (fd != reg) { /* a lower number was free: put it where the registry's was */
        assert_int_equal(dup2(fd, reg), reg);
        close(fd);
        fd = reg;
    }
    assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0); /* the daemon's single-instance lock */
    static ltr_provider later = {.state = &ltr_never_enabled, .name = "Test.Fds.Later"};
    assert_int_equal(ltr_provider_register(&later), 0); /* claims a slot: the registry's lock */
    int other = open(pidfile, O_RDWR);
    assert_true(other >= 0);
    if (flock(other, LOCK_EX | LOCK_NB) == 0)
        fail_msg("the program's lock on its pidfile (fd %d) was released under it", fd);
    close(other);
    assert_int_equal(fcntl(fd, F_GETFD) >= 0, 1);
    close(fd);
    ltr_provider_unregister(&later);
    ltr_provider_unregister(&prov);
}

int main(void)
{
    /* one sandbox for both: the process maps one registry, its first */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_program_reuses_the_producers_fds),
        cmocka_unit_test(test_program_reuses_the_registrys_fd),
    };
    return cmocka_run_group_tests(tests, tu_setup_sandbox, tu_teardown_sandbox);
}
