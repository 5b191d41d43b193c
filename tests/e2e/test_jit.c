/*
 * tests/e2e/test_jit.c — frames of JIT-compiled code named from the perf
 * map its program writes (/tmp/perf-PID.map: src/symbols/perfmap.c), at the
 * end of `ltr record`: jitleak (tests/programs) leaks from code it copied
 * into a page of its own and maps it itself. The analysis names that frame
 * (the map's last entry for it); a map that /tmp's other users could have
 * put there or changed (a symlink, a FIFO, another user's, one anyone may
 * write) is refused and said so, its frame left an address; a zombie's
 * map is read at 'ltr stop', and an ended process's map is not taken from
 * the live process its pid was given to since; a hostile
 * map's name reaches the terminal without its escape sequences; and
 * `ltr symbolize` later, where the maps may be anyone's, reads none.
 */
#include "util/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

typedef struct jit_run {
    unsigned pid;
    char *record_err; /* what ltr record said */
    char *text;       /* ltr analyze's text report */
} jit_run;

/* Records jitleak MODE with record_opts, removes the map it left, and analyzes the trace. */
static jit_run record_jit(const char *mode, const char *record_opts)
{
    jit_run j = {0};
    tu_result r = tu_run("rm -f jit.ltr && '%s' record %s -o jit.ltr -- '%s' %s", tu_ltr(), record_opts,
                         tu_test_bin("ltr-test-jitleak"), mode);
    const char *at = strstr(r.err, "jitleak pid ");
    if (at)
        j.pid = (unsigned)strtoul(at + 12, NULL, 10);
    tu_result rm = tu_run("rm -f /tmp/perf-%u.map /tmp/perf-%u.map.target", j.pid, j.pid);
    tu_free(&rm);
    if (r.status != 0)
        fprintf(stderr, "record: %d: %s\n", r.status, r.err);
    assert_int_equal(r.status, 0);
    assert_true(j.pid > 0);
    j.record_err = r.err;
    r.err = NULL;
    tu_free(&r);
    r = tu_run("'%s' analyze jit.ltr", tu_ltr());
    assert_int_equal(r.status, 0);
    j.text = r.out;
    r.out = NULL;
    tu_free(&r);
    return j;
}

static void jit_free(jit_run *j)
{
    free(j->record_err);
    free(j->text);
}

static void skip_unless_x86_64(void)
{
#if !defined(__x86_64__)
    skip(); /* jitleak's code is x86-64's */
#endif
}

/* The leak's frame is named by the map's last entry for it, and record says where the name came from. */
static void jit_frame_named(void **state)
{
    (void)state;
    skip_unless_x86_64();
    jit_run j = record_jit("map", "");
    char said[128];
    snprintf(said, sizeof said, "JIT frames of process %u named from /tmp/perf-%u.map: 1 address\n", j.pid, j.pid);
    assert_non_null(strstr(j.record_err, said));
    const char *leak = strstr(j.text, "#1 AIFO 256 KiB in 64 allocations");
    assert_non_null(leak);
    assert_non_null(strstr(leak, "jit_leaky_function  0x"));
    assert_null(strstr(j.text, "stale_jit_function"));
    jit_free(&j);
    /* names that travel with the trace: analyzed without the map */
    tu_result r = tu_run("'%s' analyze jit.ltr --format json --top 0", tu_ltr());
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "\"function\":\"jit_leaky_function\""));
    tu_free(&r);
}

/* A map refused: said with its reason, the frame left an address. */
static void refused(const char *mode, const char *why)
{
    jit_run j = record_jit(mode, "");
    char said[256];
    snprintf(said, sizeof said, "/tmp/perf-%u.map not read: %s", j.pid, why);
    if (!strstr(j.record_err, said))
        fprintf(stderr, "%s: no '%s' in: %s\n", mode, said, j.record_err);
    assert_non_null(strstr(j.record_err, said));
    assert_null(strstr(j.text, "jit_leaky_function"));
    assert_non_null(strstr(j.text, "??  0x"));
    jit_free(&j);
}

static void untrusted_maps_refused(void **state)
{
    (void)state;
    skip_unless_x86_64();
    refused("symlink", "it is a symbolic link");
    refused("fifo", "it is not a regular file (a FIFO)");
    refused("writable", "any user may write it (mode 666)");
    if (geteuid() == 0) /* only root gives a file away */
        refused("other", "it is owned by nobody");
}

/* Junk lines are skipped, a line of 1 MiB too, and a name's escape sequences never reach the terminal. */
static void hostile_map_shown_safely(void **state)
{
    (void)state;
    skip_unless_x86_64();
    jit_run j = record_jit("hostile", "");
    assert_non_null(strstr(j.text, "PWN"));
    assert_non_null(strstr(j.text, "jit_escape  0x"));
    assert_null(strchr(j.text, '\x1b'));
    assert_null(strchr(j.text, '\x07'));
    jit_free(&j);
}

/* 'ltr symbolize' later reads no map: by then the pid and /tmp may be anyone's. */
static void symbolize_later_reads_no_map(void **state)
{
    (void)state;
    skip_unless_x86_64();
    tu_result r = tu_run("rm -f jit.ltr && '%s' record --no-symbols -o jit.ltr -- '%s' map && '%s' symbolize jit.ltr",
                         tu_ltr(), tu_test_bin("ltr-test-jitleak"), tu_ltr());
    const char *at = strstr(r.err, "jitleak pid ");
    unsigned pid = at ? (unsigned)strtoul(at + 12, NULL, 10) : 0;
    tu_result rm = tu_run("rm -f /tmp/perf-%u.map", pid);
    tu_free(&rm);
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "JIT frames"));
    tu_free(&r);
    r = tu_run("'%s' analyze jit.ltr", tu_ltr());
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.out, "jit_leaky_function"));
    tu_free(&r);
}

/* A process that ended but was not reaped yet (a zombie: its parent execs
 * sleep) at 'ltr stop': its /tmp map is read as an ended one's, not looked
 * for under its /proc/PID/root, which a zombie has no more (the map was
 * passed over, nothing said). */
static void zombie_map_read(void **state)
{
    (void)state;
    skip_unless_x86_64();
    tu_result r = tu_run("'%s' start heap --filemode >/dev/null 2>&1 || exit 9\n"
                         "{ '%s' run -- sh -c \"'%s' map & exec sleep 10\" >zombie.out 2>&1 & }\n"
                         "for i in $(seq 200); do P=$(sed -n 's/jitleak pid //p' zombie.out)\n"
                         "  [ -n \"$P\" ] && grep -q '^State:.*Z' /proc/$P/status && echo zombie && break\n"
                         "  sleep 0.05; done\n"
                         "'%s' stop zombie.ltr; s=$?; echo \"pid $P\"; rm -f /tmp/perf-$P.map; exit $s",
                         tu_ltr(), tu_ltr(), tu_test_bin("ltr-test-jitleak"), tu_ltr());
    if (r.status != 0)
        fprintf(stderr, "%d: %s\n%s\n", r.status, r.out, r.err);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "zombie\n"));
    const char *at = strstr(r.out, "pid ");
    assert_non_null(at);
    unsigned pid = (unsigned)strtoul(at + 4, NULL, 10);
    char said[128];
    snprintf(said, sizeof said, "JIT frames of process %u named from /tmp/perf-%u.map: 1 address\n", pid, pid);
    if (!strstr(r.err, said))
        fprintf(stderr, "no '%s' in: %s\n", said, r.err);
    assert_non_null(strstr(r.err, said));
    tu_free(&r);
}

/* The pid of a process that ended, given again to a live process of
 * another mount namespace whose /tmp holds a map of its own before 'ltr
 * stop': the ended process's frames are named from its own map, not from
 * the live one's (/proc/PID/root/tmp/perf-PID.map: 'other_process_function'
 * was). In a pid namespace of its own, where the next pid can be chosen
 * (ns_last_pid, as test_analyze's test_pid_used_again_is_no_exec). */
static void pid_used_again_not_read(void **state)
{
    (void)state;
    skip_unless_x86_64();
    const char *dir = "."; /* the sandbox, made by setup */
    /* the second process: not traced, and alive at the stop, in a /tmp of its own */
    tu_write_file(dir, "reuse.sh",
                  "\"$1\" map & A=$!\n"
                  "wait $A\n"
                  "echo $((A - 1)) > /proc/sys/kernel/ns_last_pid\n"
                  "env -u LD_PRELOAD setsid unshare -m sh -c 'mount -t tmpfs none /tmp && "
                  "echo \"0 7fffffffffff other_process_function\" > /tmp/perf-$$.map && : > ready && exec sleep 10' &\n"
                  "B=$!\n"
                  "while [ ! -e ready ]; do sleep 0.05; done\n"
                  "echo \"A=$A B=$B\" > pids.txt\n");
    tu_write_file(dir, "outer.sh",
                  "\"$1\" start heap --filemode >/dev/null || exit 77\n"
                  "\"$1\" run -- sh reuse.sh \"$2\" >/dev/null 2>&1 &\n"
                  "while [ ! -e pids.txt ]; do sleep 0.05; done\n"
                  "\"$1\" stop --force reused.ltr 2>stop.err\n"
                  "cat pids.txt\n");
    long long a = tu_pid_again("command -v unshare >/dev/null || exit 77; rm -f ready pids.txt; "
                               "unshare %s --pid --fork --mount-proc sh outer.sh '%s' '%s' || exit 77",
                               geteuid() ? "--user --map-root-user" : "", tu_ltr(), tu_test_bin("ltr-test-jitleak"));
    char rm[64];
    snprintf(rm, sizeof rm, "/tmp/perf-%lld.map", a);
    if (a > 0)
        unlink(rm);
    assert_true(a >= 0);
    if (!a)
        skip();
    char *err = tu_read_file("stop.err");
    assert_non_null(err);
    char said[128];
    snprintf(said, sizeof said, "JIT frames of process %lld named from /tmp/perf-%lld.map", a, a);
    if (!strstr(err, said))
        fprintf(stderr, "no '%s' in: %s\n", said, err);
    assert_non_null(strstr(err, said));
    free(err);
    tu_result r = tu_run("'%s' analyze reused.ltr", tu_ltr());
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "jit_leaky_function  0x"));
    assert_null(strstr(r.out, "other_process_function"));
    tu_free(&r);
}

static int setup(void **state)
{
    (void)state;
    return chdir(tu_sandbox()) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tu_sandbox_end();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(jit_frame_named),
        cmocka_unit_test(untrusted_maps_refused),
        cmocka_unit_test(hostile_map_shown_safely),
        cmocka_unit_test(symbolize_later_reads_no_map),
        cmocka_unit_test(zombie_map_read),
        cmocka_unit_test(pid_used_again_not_read),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
