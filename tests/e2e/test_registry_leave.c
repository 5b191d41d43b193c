/*
 * tests/e2e/test_registry_leave.c — a process that stops being the user
 * whose registry the agent mapped gives it up (event/registry.h,
 * ltr_registry_leave; docs/design.md, "A shim in every process"). A root
 * service's worker made nobody kept root's registry mapped writable, and
 * the registry's fd open: code run in it could switch root's sessions'
 * providers and forge what root's `ltr` commands read. tests/programs/
 * registry_leaver.c is that worker, the agent preloaded; as root only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *agent(void)
{
    static char path[600];
    snprintf(path, sizeof path, "%s/../lib/libltr-heap.so", getenv("LTR_TEST_BIN"));
    return path;
}

/* registry-leaver MODE run with the agent preloaded, or dlopen'ed when
 * late (after `ltr start heap` when session; a "retired-" MODE's parent
 * stops that session and starts another between its allocations): what
 * it printed, its status 0 asserted. */
static char *leave(const char *dir, const char *mode, bool session, bool late)
{
    char start[700] = "", stop[700] = "", preload[1400], dlopened[700] = "";
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", agent());
    if (!strncmp(mode, "retired-", 8))
        snprintf(preload, sizeof preload,
                 "LEAVER_BETWEEN='env -u LD_PRELOAD %s stop --instance lv >/dev/null && env -u LD_PRELOAD %s "
                 "start heap --instance lv --filemode -o lv2.ltr >/dev/null' LD_PRELOAD=%s",
                 tu_ltr(), tu_ltr(), agent());
    if (late) {
        snprintf(dlopened, sizeof dlopened, " %s", agent());
        preload[0] = 0;
    }
    if (session) {
        snprintf(start, sizeof start, "%s start heap --instance lv --filemode -o lv.ltr && ", tu_ltr());
        snprintf(stop, sizeof stop, "; st=$?; %s stop --instance lv >/dev/null; exit $st", tu_ltr());
    }
    tu_result r = tu_run("cd %s && { %s%s %s %s %s/run/registry%s%s; }", dir, start, preload,
                         tu_test_bin("registry-leaver"), mode, dir, dlopened, stop);
    if (r.status != 0 || strstr(r.out, "worker exit 0\n") == NULL)
        fail_msg("%s: status %d\n%s%s", mode, r.status, r.out, r.err);
    char *out = strdup(r.out);
    tu_free(&r);
    return out;
}

static void expect_left(const char *dir, const char *mode, bool session, bool late)
{
    char *out = leave(dir, mode, session, late);
    if (!strstr(out, "calls ok\n") || !strstr(out, "mapped 0\n") || !strstr(out, "fds 0\n") ||
        !strstr(out, "sessions 0\n") || !strstr(out, "file same\n"))
        fail_msg("%s: a worker made nobody still holds root's registry or a session's memory:\n%s", mode, out);
    free(out);
}

static void skip_unless_root(void)
{
    if (geteuid() != 0)
        skip();
}

/* setuid, setreuid, setresuid through libc: the agent's hooks give the
 * registry up; each call returns what it would without ltr (0, errno
 * untouched; a later setuid(0) fails with EPERM). */
static void test_setuid_family_gives_up_the_registry(void **state)
{
    skip_unless_root();
    expect_left(*state, "setuid", false, false);
    expect_left(*state, "setreuid", false, false);
    expect_left(*state, "setresuid", false, false);
}

/* The agent come late (the by-name shim's dlopen, nginx's case): the
 * program's setuid, and its syscall(SYS_setresuid), reach the hooks
 * through their redirected GOT slots. */
static void test_setuid_gives_it_up_when_the_agent_came_late(void **state)
{
    skip_unless_root();
    expect_left(*state, "setuid", false, true);
    expect_left(*state, "raw", false, true);
}

/* A setresuid by syscall(2), which no hook sees: the producer gives the
 * registry up when it next tries to attach (a session enables the heap). */
static void test_raw_setuid_gives_it_up_at_the_attach(void **state)
{
    skip_unless_root();
    expect_left(*state, "raw", true, false);
}

/* The same call with no session: the agent replaces syscall(2) too, so
 * the registry goes at once (it stayed mapped writable for as long as the
 * process ran). */
static void test_raw_setuid_gives_it_up_without_a_session(void **state)
{
    skip_unless_root();
    expect_left(*state, "raw", false, false);
}

/* A setresuid by a `syscall` instruction of the program's own (Go's
 * RawSyscall), made by a worker attached to root's session already: the
 * agent's look at the uids every 10 ms of events gives up the registry
 * and the session's memory (the worker kept both, writing into root's
 * session as nobody). */
static void test_inline_setuid_gives_it_up_while_recording(void **state)
{
    skip_unless_root();
    expect_left(*state, "attached-inline", true, false);
}

/* A worker attached to root's session as root, then made nobody: the
 * session's memory holds every process's events, so it goes with the
 * registry (it stayed mapped, readable and writable by nobody's code). */
static void test_setuid_gives_up_a_live_sessions_memory(void **state)
{
    skip_unless_root();
    expect_left(*state, "attached-setuid", true, false);
}

/* A worker forked while its root parent held an ended session's memory
 * (retired: the parent attached to the next session of the slot) gives it
 * up: the child unmaps its parent's, which it kept mapped writable when it
 * became nobody. */
static void test_worker_gives_up_retired_sessions(void **state)
{
    skip_unless_root();
    expect_left(*state, "retired-setuid", true, false);
}

/* A worker forked while its root parent was attached: the child unmaps
 * the parent's session, and what it maps there since is its own; leaving
 * the registry must give up only what the child holds (a table copied
 * from the parent would have put zero pages over the child's memory). */
static void test_worker_leaves_its_own_memory_alone(void **state)
{
    skip_unless_root();
    char *out = leave(*state, "forked-setuid", true, false);
    if (!strstr(out, "calls ok\n") || !strstr(out, "mapped 0\n") || !strstr(out, "sessions 0\n") ||
        !strstr(out, "own intact\n"))
        fail_msg("forked-setuid:\n%s", out);
    free(out);
}

/* seteuid keeps the saved uid 0: the process may take root back (and
 * does), so it keeps the registry, and is traced again as root. */
static void test_seteuid_keeps_it(void **state)
{
    skip_unless_root();
    char *out = leave(*state, "seteuid", false, false);
    if (!strstr(out, "calls ok\n") || !strstr(out, "mapped 1\n"))
        fail_msg("seteuid:\n%s", out);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_setuid_family_gives_up_the_registry, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_setuid_gives_it_up_when_the_agent_came_late, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_raw_setuid_gives_it_up_at_the_attach, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_raw_setuid_gives_it_up_without_a_session, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_inline_setuid_gives_it_up_while_recording, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_setuid_gives_up_a_live_sessions_memory, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_worker_gives_up_retired_sessions, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_worker_leaves_its_own_memory_alone, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_seteuid_keeps_it, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
