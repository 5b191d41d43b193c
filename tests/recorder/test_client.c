/*
 * tests/recorder/test_client.c — what the session commands ask of
 * recorder/client.h and recorder/config.c instead of computing it: a typed
 * request to a recorder started in this process, the file a file-mode
 * session grows its trace in, the events a trace keeps and the programs
 * emitted, a file-mode session's default trace name, and what is left of a
 * session whose recorder was killed (its partial trace's size and age).
 */
#include "prim/prim.h"
#include "recorder/client.h"
#include "recorder/recorder.h"
#include "util/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* output_temp: output is a template, as ltr start makes without -o */
static void launch_as(const char *name, int mode, const char *output, bool output_temp)
{
    static ltr_session_config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.name, sizeof cfg.name, "%s", name);
    cfg.mode = mode;
    cfg.ncollectors = 1;
    snprintf(cfg.collectors[0].name, sizeof cfg.collectors[0].name, "events");
    cfg.collectors[0].buffer_kb = 4;
    cfg.collectors[0].buffers = 4;
    if (output)
        snprintf(cfg.output, sizeof cfg.output, "%s", output);
    cfg.output_temp = output_temp;
    ltr_error err = {0};
    if (ltr_recorder_launch(&cfg, &err))
        fail_msg("the recorder did not start: %s", err.msg);
}

static void launch(const char *name, int mode, const char *output)
{
    launch_as(name, mode, output, false);
}

/* Every op of the protocol goes through one typed call; the recorder's
 * refusal comes back as the error, and a session that is gone names itself. */
static void test_op(void **state)
{
    (void)state;
    launch("op-test", LTR_MODE_MEMORY, NULL);
    ltr_error err = {0};
    assert_int_equal(ltr_client_op("op-test", "marker", NULL, "a marker", false, NULL, &err), 0);
    ltr_kvlist resp;
    assert_int_equal(ltr_client_op("op-test", "status", NULL, NULL, false, &resp, &err), 0);
    char name[64];
    assert_non_null(ltr_kvlist_get(&resp, "name", name, sizeof name));
    assert_string_equal(name, "op-test");
    ltr_kvlist_free(&resp);
    assert_true(ltr_client_op("op-test", "no-such-op", NULL, NULL, false, &resp, &err) < 0);
    assert_true(err.msg[0] != 0);
    ltr_kvlist_free(&resp);
    assert_int_equal(ltr_client_op("op-test", "cancel", NULL, NULL, false, NULL, &err), 0);
    memset(&err, 0, sizeof err);
    assert_true(ltr_client_op("op-test", "status", NULL, NULL, false, NULL, &err) < 0);
    assert_non_null(strstr(err.msg, "op-test"));
}

/* A file-mode session's status names the file it grows its trace in, and
 * whether that is ltr's temporary name (ltr stop then needs a FILE) or the
 * -o FILE (ltr stop may leave FILE out, and says when it moves the trace). */
static void test_status_output(void **state)
{
    const char *dir = *state;
    char out[512], tmpl[512];
    snprintf(out, sizeof out, "%s/grows.ltr", dir);
    snprintf(tmpl, sizeof tmpl, "%s/ltr-tmp-XXXXXX.ltr.part", dir);
    static ltr_session_status given, temp;
    ltr_error err;
    launch("out-test", LTR_MODE_FILE, out);
    int rc = ltr_client_status("out-test", &given, &err);
    ltr_client_op("out-test", "cancel", NULL, NULL, false, NULL, &err);
    launch_as("tmp-test", LTR_MODE_FILE, tmpl, true);
    int rc_temp = ltr_client_status("tmp-test", &temp, &err);
    ltr_client_op("tmp-test", "cancel", NULL, NULL, false, NULL, &err);
    assert_int_equal(rc, 0);
    assert_true(given.has_output && !given.output_temp);
    assert_string_equal(given.output, out);
    assert_int_equal(rc_temp, 0);
    assert_true(temp.has_output && temp.output_temp);
    assert_null(strstr(temp.output, "XXXXXX")); /* the name made of the template */
    /* no such session: said as such (ltr stop says that first, a review) */
    assert_int_equal(ltr_client_status("nobody-here", &temp, &err), -ESRCH);
    assert_non_null(strstr(err.msg, "no session named 'nobody-here'"));
}

/* flush and capturestate, typed: a file-mode session's trace is a readable
 * trace when flush returns (here with only its header and counters: no
 * program writes into it); memory mode refuses flush; a session without the
 * system provider captures nothing of it; a bad name is refused before
 * anything is asked. */
static void test_flush_and_capture(void **state)
{
    const char *dir = *state;
    char out[512];
    snprintf(out, sizeof out, "%s/flushed.ltr", dir);
    launch("fl-test", LTR_MODE_FILE, out);
    launch("mem-test", LTR_MODE_MEMORY, NULL);
    ltr_flush_result res;
    ltr_error err;
    int flushed = ltr_client_flush("fl-test", &res, &err);
    tu_trace t = tu_read_trace(out, NULL);
    int refused = ltr_client_flush("mem-test", &res, &err);
    char why[sizeof err.msg];
    snprintf(why, sizeof why, "%s", err.msg);
    ltr_capture_result cap;
    int captured = ltr_client_capture_state("mem-test", &cap, &err);
    ltr_client_op("fl-test", "cancel", NULL, NULL, false, NULL, &err);
    ltr_client_op("mem-test", "cancel", NULL, NULL, false, NULL, &err);
    assert_int_equal(flushed, 0);
    assert_true(t.ok && t.has_counters && !t.complete);
    assert_int_equal(refused, -EINVAL);
    assert_non_null(strstr(why, "'ltr save FILE'"));
    assert_int_equal(captured, 0);
    assert_false(cap.system);
    assert_int_equal(cap.processes + cap.threads + cap.modules + cap.named_threads, 0);
    assert_int_equal(ltr_client_flush("../x", &res, &err), -EINVAL);
    assert_int_equal(ltr_client_capture_state("no-such-session", &cap, &err), -ESRCH);
}

/* The log a stop names is read by one accessor, not by its key in each command. */
static void test_reply_log(void **state)
{
    (void)state;
    ltr_bytes b = {0};
    ltr_bytes_put_kv(&b, "ok", "1");
    ltr_kvlist none = {b.data, b.len};
    char log[64];
    assert_null(ltr_client_reply_log(&none, log, sizeof log));
    ltr_bytes_put_kv(&b, "log", "/run/ltr/s.log");
    ltr_kvlist kept = {b.data, b.len};
    assert_non_null(ltr_client_reply_log(&kept, log, sizeof log));
    assert_string_equal(log, "/run/ltr/s.log");
    ltr_bytes_free(&b);
}

static void test_kept_and_emitted(void **state)
{
    (void)state;
    ltr_collector_status c = {.events_recorded = 1000, .events_overwritten = 300, .events_lost = 7};
    assert_int_equal(ltr_collector_events_kept(&c), 700);
    assert_int_equal(ltr_collector_events_emitted(&c), 1007);
    /* counters read at different moments never make a negative count */
    c.events_overwritten = 1001;
    assert_int_equal(ltr_collector_events_kept(&c), 0);
}

static void test_default_output(void **state)
{
    (void)state;
    static ltr_session_config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.name, sizeof cfg.name, "svc");
    ltr_error err;
    setenv("TMPDIR", "/var/tmp/x", 1);
    assert_int_equal(ltr_session_default_output(&cfg, &err), 0);
    assert_string_equal(cfg.output, "/var/tmp/x/ltr-svc-XXXXXX.ltr.part");
    assert_true(cfg.output_temp);
    setenv("TMPDIR", "", 1);
    assert_int_equal(ltr_session_default_output(&cfg, &err), 0);
    assert_string_equal(cfg.output, "/tmp/ltr-svc-XXXXXX.ltr.part");
    unsetenv("TMPDIR");
    assert_int_equal(ltr_session_default_output(&cfg, &err), 0);
    assert_string_equal(cfg.output, "/tmp/ltr-svc-XXXXXX.ltr.part");
    /* a template cut short would lose its XXXXXX: refused, cfg as it was */
    static char longdir[sizeof cfg.output];
    memset(longdir, 'd', sizeof longdir - 1);
    longdir[0] = '/';
    setenv("TMPDIR", longdir, 1);
    cfg.output_temp = false;
    assert_int_equal(ltr_session_default_output(&cfg, &err), -ENAMETOOLONG);
    assert_non_null(strstr(err.msg, "TMPDIR"));
    assert_string_equal(cfg.output, "/tmp/ltr-svc-XXXXXX.ltr.part");
    assert_false(cfg.output_temp);
    unsetenv("TMPDIR");
}

/* A session record as a recorder writes it, left unlocked as a killed one leaves it. */
static void plant_record(const char *rundir, const char *name, const char *mode, const char *output)
{
    ltr_bytes kv = {0};
    ltr_bytes_put_kv(&kv, "name", name);
    ltr_bytes_put_kv(&kv, "pid", "4242");
    ltr_bytes_put_kv(&kv, "mode", mode);
    ltr_bytes_put_kv(&kv, "start_wall_ns", "1700000000000000000");
    if (output)
        ltr_bytes_put_kv(&kv, "output", output);
    ltr_bytes_put_kv(&kv, "log", "");
    char path[600];
    snprintf(path, sizeof path, "%s/%s.1.session", rundir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, kv.data, kv.len), (ssize_t)kv.len);
    close(fd);
    ltr_bytes_free(&kv);
}

static const ltr_dead_session *find(const ltr_dead_session *d, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(d[i].name, name))
            return &d[i];
    return NULL;
}

/* The partial trace's size and last write come with the dead session; a
 * file-mode session whose trace is gone is forgotten. */
static void test_dead_sessions(void **state)
{
    const char *dir = *state;
    char rundir[4096], part[600], gone[600], record[4200];
    ltr_error err;
    assert_int_equal(ltr_runtime_dir(rundir, sizeof rundir, &err), 0);
    snprintf(part, sizeof part, "%s/dead.ltr.part", dir);
    snprintf(gone, sizeof gone, "%s/gone.ltr.part", dir);
    int fd = open(part, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    static char bytes[3000];
    assert_int_equal(write(fd, bytes, sizeof bytes), (ssize_t)sizeof bytes);
    struct timespec when[2] = {{1700000123, 5}, {1700000123, 5}};
    assert_int_equal(futimens(fd, when), 0);
    close(fd);
    plant_record(rundir, "dead-file", "file", part);
    plant_record(rundir, "dead-memory", "memory", NULL);
    plant_record(rundir, "dead-gone", "file", gone);
    static ltr_dead_session d[8];
    int n = ltr_client_dead_sessions(d, 8, &err);
    assert_int_equal(n, 2);
    const ltr_dead_session *f = find(d, n, "dead-file"), *m = find(d, n, "dead-memory");
    assert_non_null(f);
    assert_non_null(m);
    assert_true(f->file_mode && f->has_partial);
    assert_string_equal(f->output, part);
    assert_int_equal(f->partial_size, 3000);
    assert_int_equal(f->partial_mtime_ns, 1700000123000000005ull);
    assert_int_equal(f->pid, 4242);
    assert_false(m->file_mode || m->has_partial);
    assert_null(find(d, n, "dead-gone"));
    snprintf(record, sizeof record, "%s/dead-gone.1.session", rundir);
    assert_int_not_equal(access(record, F_OK), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_op, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_status_output, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_flush_and_capture, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test(test_reply_log),
        cmocka_unit_test(test_kept_and_emitted),
        cmocka_unit_test(test_default_output),
        cmocka_unit_test_setup_teardown(test_dead_sessions, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
