/*
 * tests/e2e/test_format_cli.c — `ltr info` and `ltr dump` run as a user runs them
 * ($LTR_BIN), on traces this test writes: their output, and their exit
 * statuses for complete, cut-short, damaged, missing and non-trace files and
 * for bad usage.
 */
#include "format/gen.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct run {
    int status;
    char *out, *err;
    size_t out_len, err_len;
} run;

static void run_free(run *r)
{
    free(r->out);
    free(r->err);
}

/* Runs $LTR_BIN with the given arguments (NULL-terminated), capturing output. */
static run run_ltr(const char *arg, ...)
{
    const char *bin = getenv("LTR_BIN");
    assert_non_null(bin);
    const char *argv[16] = {bin};
    int argc = 1;
    va_list ap;
    va_start(ap, arg);
    for (const char *a = arg; a && argc < 15; a = va_arg(ap, const char *))
        argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    const char *out = strdup(gen_tmp("out")), *err = strdup(gen_tmp("err"));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600), e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(o, 1);
        dup2(e, 2);
        alarm(600); /* kept across exec: a reader that never ends fails its test (SIGALRM), not the suite */
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    run r = {.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st)};
    r.out = (char *)gen_slurp(out, &r.out_len);
    r.err = (char *)gen_slurp(err, &r.err_len);
    r.out = realloc(r.out, r.out_len + 1);
    r.err = realloc(r.err, r.err_len + 1);
    r.out[r.out_len] = r.err[r.err_len] = 0;
    unlink(out);
    unlink(err);
    free((void *)out);
    free((void *)err);
    return r;
}

static void expect_in(const char *hay, const char *needle)
{
    if (!strstr(hay, needle))
        fail_msg("'%s' not found in:\n%s", needle, hay);
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static const char *write_trace(const char *name, int with_end)
{
    const char *path = gen_tmp(name);
    gen_opts o = {.blocks = 30, .events_per_block = 10, .chunk_target = 2000, .with_end = with_end};
    assert_int_equal(gen_write(path, &o, NULL), 0);
    return path;
}

static void test_info(void **state)
{
    const char *path = write_trace("info.ltr", 1);
    run r = run_ltr("info", path, NULL);
    assert_int_equal(r.status, 0);
    expect_in(r.out, "session:     gen-session");
    expect_in(r.out, "state:       complete");
    expect_in(r.out, "started:     2023-11-14T22:13:20.123456789Z");
    expect_in(r.out, "duration:    0.002000000 s");
    expect_in(r.out, "description: gen \"desc\"");
    expect_in(r.out, "events:      300 in 30 blocks");
    expect_in(r.out, "  100      1        200        /usr/bin/alpha");
    expect_in(r.out, "/usr/bin/beta 'with space'");
    expect_in(r.out, "0a1b2c3d-4e5f-4061-8293-a4b5c6d7e8f9 200        Test.Alpha");
    expect_in(r.out, "events:  10 written, 20 lost, 50 overwritten");
    expect_in(r.out, "buffers: 30 written, 40 lost, 60 overwritten");
    expect_in(r.out, "pid 200, collector 0: 7 events lost, 1 buffers lost");
    expect_in(r.out, "damage:      none");
    assert_int_equal(r.err_len, 0);
    run_free(&r);

    r = run_ltr("info", "--json", path, NULL);
    assert_int_equal(r.status, 0);
    expect_in(r.out, "\"complete\":true");
    expect_in(r.out, "\"events\":300");
    expect_in(r.out, "\"session.name\":\"gen-session\"");
    expect_in(r.out, "\"argv\":[\"/usr/bin/beta\",\"with space\"]");
    expect_in(r.out, "\"events_lost\":20");
    expect_in(r.out, "\"damage_count\":0");
    assert_int_equal(count_lines(r.out), 1);
    run_free(&r);
    unlink(path);
}

static void test_dump(void **state)
{
    const char *path = write_trace("dump.ltr", 1);
    run r = run_ltr("dump", path, NULL);
    assert_int_equal(r.status, 0);
    assert_int_equal(count_lines(r.out), 300);
    expect_in(r.out, "0.000000001 100/100 Test.Alpha/Alloc n=0 addr=0x7f0000000000 size=0 "
                     "tag=\"t\\\"0\\t\xc3\xa9\" delta=0 ok=false\n");
    expect_in(r.out, "\n0.000299001 200/200 Test.Beta/Tick n=299 u=89700 i=-399 p=0x7f000000112b\n");
    /* its counters: 20 lost, 50 overwritten (a memory-mode save of a flight
     * recorder's tail said nothing of the 58714 events before it) */
    expect_in(r.err, "ltr dump: warning: the trace lacks events the session was sent: 20 lost while recording "
                     "(no free buffer) and 50 older ones overwritten");
    run_free(&r);

    r = run_ltr("dump", "--json", path, NULL);
    assert_int_equal(r.status, 0);
    assert_int_equal(count_lines(r.out), 300);
    expect_in(r.out, "{\"t\":0.000002001,\"ts\":1000000002001,\"pid\":100,\"tid\":100,\"collector\":0,"
                     "\"provider\":\"Test.Beta\",\"event\":\"Tick\",\"id\":103,\"level\":4,\"fields\":{\"n\":2,\"u\":600,\"i\":-102,\"p\":\"0x7f0000001002\"}}\n");
    run_free(&r);
    unlink(path);
}

static void test_cut_short(void **state)
{
    const char *path = write_trace("short.ltr", 0);
    run r = run_ltr("dump", path, NULL);
    assert_int_equal(r.status, 0);
    assert_int_equal(count_lines(r.out), 300);
    expect_in(r.err, "cut short");
    run_free(&r);
    r = run_ltr("info", path, NULL);
    assert_int_equal(r.status, 0);
    expect_in(r.out, "state:       cut short (no END chunk)");
    expect_in(r.out, "counters: none in the trace");
    run_free(&r);
    unlink(path);
}

/* The middle of the payload of the first EVENTS chunk that ends past the
 * file's middle (a byte changed there is one damaged chunk, whatever the
 * chunks after the events: INDEX, SPANS, END). */
static size_t middle_events_payload(const uint8_t *data, size_t len)
{
    for (size_t off = LTR_FILE_HEADER_SIZE; off + LTR_CHUNK_HEADER_SIZE <= len;) {
        uint16_t type = (uint16_t)(data[off + 4] | data[off + 5] << 8);
        size_t size = (size_t)data[off + 8] | (size_t)data[off + 9] << 8 | (size_t)data[off + 10] << 16 |
                      (size_t)data[off + 11] << 24;
        if (type == LTR_CHUNK_EVENTS && off + LTR_CHUNK_HEADER_SIZE + size > len / 2)
            return off + LTR_CHUNK_HEADER_SIZE + size / 2;
        off += LTR_CHUNK_HEADER_SIZE + size;
    }
    fail_msg("no EVENTS chunk past the middle");
    return 0;
}

static void test_damaged(void **state)
{
    const char *path = write_trace("damaged.ltr", 1);
    size_t len;
    uint8_t *data = gen_slurp(path, &len);
    data[middle_events_payload(data, len)] ^= 0x40; /* one EVENTS chunk in the middle */
    assert_int_equal(gen_spit(path, data, len), 0);
    run r = run_ltr("dump", path, NULL);
    assert_int_equal(r.status, 3);
    size_t lines = count_lines(r.out);
    assert_true(lines > 200 && lines < 300);
    expect_in(r.out, " n=299 u=89700"); /* events after the damage are printed */
    expect_in(r.err, "is damaged");
    expect_in(r.err, "offset ");
    run_free(&r);
    r = run_ltr("info", path, NULL);
    assert_int_equal(r.status, 3);
    expect_in(r.out, "damage:      1 problem(s)");
    expect_in(r.err, "is damaged");
    run_free(&r);

    assert_int_equal(gen_spit(path, data, len - 5), 0); /* cut inside END */
    r = run_ltr("dump", "--json", path, NULL);
    assert_int_equal(r.status, 3);
    expect_in(r.err, "truncated");
    run_free(&r);
    free(data);
    unlink(path);
}

/* A hole of a sparse file is no trace (a chunk header starts with 'L', a
 * hole reads as zeros): the resync after damage skips it instead of
 * reading it (a 1 TiB hole read at about 1 GB/s: a quarter of an hour;
 * any user can make one with `truncate`, no disk spent). The chunks after
 * the hole are still found. */
static void test_sparse_hole(void **state)
{
    const char *path = write_trace("sparse.ltr", 1);
    size_t len;
    uint8_t *data = gen_slurp(path, &len);
    int fd = open(path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    const off_t hole = (off_t)1 << 40;
    assert_int_equal(pwrite(fd, data, len / 2, 0), (ssize_t)(len / 2));
    if (pwrite(fd, data + len / 2, len - len / 2, hole + (off_t)(len / 2)) != (ssize_t)(len - len / 2)) {
        close(fd);
        free(data);
        unlink(path);
        skip(); /* a file system without files of a TiB */
    }
    close(fd);
    run r = run_ltr("dump", path, NULL);
    assert_int_equal(r.status, 3);
    expect_in(r.out, " n=299 u=89700"); /* the last event, after the hole */
    expect_in(r.err, "is damaged");
    run_free(&r);
    free(data);
    unlink(path);
}

static void test_bad_files_and_usage(void **state)
{
    run r = run_ltr("dump", "/nonexistent/t.ltr", NULL);
    assert_int_equal(r.status, 1);
    expect_in(r.err, "ltr dump: opening /nonexistent/t.ltr: No such file or directory");
    assert_int_equal(r.out_len, 0);
    run_free(&r);
    const char *path = gen_tmp("notatrace.txt");
    assert_int_equal(gen_spit(path, "hello, world\n", 13), 0);
    r = run_ltr("info", path, NULL);
    assert_int_equal(r.status, 1);
    expect_in(r.err, "not an ltr trace");
    run_free(&r);
    unlink(path);
    r = run_ltr("dump", NULL);
    assert_int_equal(r.status, 2);
    expect_in(r.err, "no TRACE given");
    run_free(&r);
    r = run_ltr("info", "--bogus", "x", NULL);
    assert_int_equal(r.status, 2);
    expect_in(r.err, "unknown option '--bogus'");
    run_free(&r);
    r = run_ltr("dump", "a", "b", NULL);
    assert_int_equal(r.status, 2);
    run_free(&r);
    r = run_ltr("dump", "--help", NULL);
    assert_int_equal(r.status, 0);
    expect_in(r.out, "exit status");
    expect_in(r.out, "3  the trace is damaged");
    run_free(&r);
    r = run_ltr("info", "-h", NULL);
    assert_int_equal(r.status, 0);
    expect_in(r.out, "--json");
    run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_info),
        cmocka_unit_test(test_dump),
        cmocka_unit_test(test_cut_short),
        cmocka_unit_test(test_damaged),
        cmocka_unit_test(test_sparse_hole),
        cmocka_unit_test(test_bad_files_and_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
