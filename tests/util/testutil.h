/*
 * tests/util/testutil.h — helpers of the tests that drive the ltr command:
 * a private runtime directory per test, running a command and capturing its
 * output and exit status, and reading a trace back through the public reader;
 * and this process's memory figures, for tests that bound a table's peak.
 */
#ifndef LTR_TESTUTIL_H
#define LTR_TESTUTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct tu_result {
    int status; /* exit status, or 128 + signal */
    char *out, *err;
} tu_result;

/* A fresh directory under /tmp; also sets LTR_RUNTIME_DIR and TMPDIR into it. */
const char *tu_sandbox(void);
/* Removes the sandbox after cancelling any session still running in it. */
void tu_sandbox_end(void);
/* cmocka fixtures: a sandbox per test, its path in *state. */
int tu_setup_sandbox(void **state);
int tu_teardown_sandbox(void **state);
/* Runs a shell command (printf-style), waits, captures stdout and stderr. */
tu_result tu_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tu_free(tu_result *r);
/* Prints r's status and output when the status is not 0, frees r, and
 * returns the status: tu_expect_ok asserts it is 0 (cmocka.h first). */
int tu_ok(tu_result r);
#define tu_expect_ok(r) assert_int_equal(tu_ok(r), 0)
/* A small file's whole text, malloc'd and NUL-terminated; NULL if it cannot be read. */
char *tu_read_file(const char *path);
/* Writes text to dir/name (created or replaced); aborts the test if it cannot. */
void tu_write_file(const char *dir, const char *name, const char *text);
/* CLOCK_MONOTONIC in seconds, for the tests' deadlines. */
double tu_now_s(void);
/* Runs argv (from PATH) in the background and returns its pid once it runs
 * argv[0] (after its exec: a close-on-exec pipe reads EOF). An ltr command
 * given the pid of a child not yet past its exec read this test's
 * environment as it began, without the sandbox's LTR_RUNTIME_DIR (setenv
 * does not change /proc/PID/environ), and refused it as looking for
 * sessions in /run/ltr (test_watch under load, after a fork without the wait). */
pid_t tu_start_argv(char *const argv[]);
/* A child waiting in open() of the FIFO at path, for writing, from 0.2 s
 * after this returns: any open of the FIFO's read side lets it through, so
 * one still waiting at its alarm, 2 s later, means nobody opened it (no
 * reader waited on it, no blocking open hung). tu_fifo_opened waits for
 * the child and says whether it got through. */
pid_t tu_fifo_writer(const char *path);
int tu_fifo_opened(pid_t writer);
/* Path of build/bin/ltr, and of a test program built beside the tests. */
const char *tu_ltr(void);
const char *tu_test_bin(const char *name);
/* A copy of test program prog in dir named prefix-PID (this test process's
 * pid; 15 characters at most with a short prefix, whole in comm): what a
 * by-name test (watch --name, start --name) names, so that it meets its own
 * processes only, never another run's of prog beside it on the machine.
 * Its name is *name when name is not NULL; the path is returned (static). */
const char *tu_own_program(const char *dir, const char *prog, const char *prefix, const char **name);
/* The demo's programs (demo/leaky.c...), built beside bin/: build/demo. */
const char *tu_demo_dir(void);
/* Reads a key=value number from text like "written=12 lost=3". -1 if absent. */
long long tu_field(const char *text, const char *key);
/* The first byte of text that a terminal could act on: a C0 or C1 control
 * (also as a lone 8-bit byte), DEL, or the start of a bidirectional control
 * (U+202A..U+202E, U+2066..U+2069); the newlines and tabs of a command's
 * own lines aside. NULL if none: for names a traced program or a file chose. */
const char *tu_acted_on(const char *text);
/* Runs a shell command (printf-style) that runs two processes in a pid namespace of
 * its own, the second given the first's pid again (ns_last_pid), and
 * prints "A=pid B=pid"; it exits 77 where no namespace can be had. The pid
 * both had; 0 when that cannot be here (said why: skip the test); -1 on
 * another failing status (its output printed). */
long long tu_pid_again(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Whether this machine lets us make pid namespaces (unshare --pid); says
 * "skipped" when not (a test skips then). */
bool tu_pid_namespaces_allowed(void);
/* Whether the page's drawing in chromium is left to the plain build (says
 * so): the sanitized build records and writes the pages (ltr under ASan and
 * UBSan), but chromium is not sanitized, and its runs were 45 of the ASan
 * tests' 950 s of CPU in test_report (docs/benchmarks.md "The test suite's
 * time (session 38)"), about 12 s in test_snapshot_cli (session 39). */
bool tu_drawn_by_the_plain_build(void);
/* A python3 script for a pid namespace's tests: a thread that allocates,
 * names itself 'ns-worker' by prctl (unseen by the heap agent), writes its
 * tid (its namespace's) to ARGV1/tid, and waits for ARGV1/exit (120 s at
 * most: a failed test's leftover ends by itself). */
extern const char tu_ns_worker_py[];
/* The number `ltr status --instance INSTANCE` prints after key ("recorder
 * pid ", "processes attached: "), or 0 when it prints none. */
long tu_session_pid(const char *instance, const char *key);

/* Line number of the first line of the file at path holding text, or -1. */
long long tu_source_line(const char *path, const char *text);

/* What a trace holds, read with the public reader. */
typedef struct tu_trace {
    int ok;                  /* opened and read to the end */
    uint64_t events;         /* all events */
    uint64_t provider_events; /* events of the provider named in tu_read_trace */
    uint64_t markers;        /* ltr/Marker events */
    uint64_t events_lost, events_overwritten, buffers_lost; /* summed over collectors */
    uint64_t events_written, shm_damage;                     /* summed over collectors */
    uint64_t process_events_lost, process_buffers_lost;     /* summed over processes */
    int complete, has_counters;
    uint64_t damage;
    char description[256];
    uint64_t seq_min, seq_max; /* of the provider's events' "seq" field, if any */
} tu_trace;
tu_trace tu_read_trace(const char *path, const char *provider);

/* A field of /proc/self/status, in KiB (-1: not there). */
long tu_status_kb(const char *field);
/* Starts this process's peak (VmHWM) again from what it holds now; 0 when
 * the kernel would not (the peak then is the whole run's). */
int tu_peak_reset(void);

#endif
