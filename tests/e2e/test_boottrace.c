/*
 * tests/e2e/test_boottrace.c — `ltr boottrace` as root runs it, in a
 * private /etc (tests/util/private_etc.h: the machine's /etc is never
 * touched): the unit and its wants link are written (systemd does not run
 * in the test's container: enabled by hand, and said so), `systemd-analyze
 * verify` accepts the unit, the command line the unit runs starts a session
 * that `ltr stop` ends with a complete trace (the boot, played by hand),
 * --disable leaves /etc/systemd as it found it; and the refusals: not root
 * (as nobody, through setpriv), bad usage, a bad profile, a unit that is not
 * ours, an ltr binary or heap agent that another user could change (the
 * cases of tests/util/roots_alone.h, which test_heaptracingconfig runs
 * too, and the binary's own), a profile file that is not root's alone. The ltr that sets the boot trace up is a
 * copy in the private /etc (tu_private_ltr): the build tree may be where
 * the rule refuses it. Needs root (it writes /etc/systemd); skipped where
 * systemd runs the machine (systemctl would enable the unit on the real
 * system).
 */
#include "util/private_etc.h"
#include "util/roots_alone.h"
#include "util/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#define UNIT "/etc/systemd/system/ltr-boottrace.service"
#define LINK "/etc/systemd/system/sysinit.target.wants/ltr-boottrace.service"

static const char *why_skip;

static int fresh(void **state)
{
    if (why_skip)
        return 0;
    return tu_private_etc_reset() || tu_setup_sandbox(state);
}

static int done(void **state)
{
    return why_skip ? 0 : tu_teardown_sandbox(state);
}

#define SKIP_IF_NEEDED()                                     \
    do {                                                     \
        if (why_skip) {                                      \
            printf("skipped: %s\n", why_skip);               \
            skip();                                          \
        }                                                    \
    } while (0)

static void expect(tu_result r, int status, const char *in_err)
{
    if (r.status != status || (in_err && !strstr(r.err, in_err)))
        fail_msg("status %d (expected %d), stderr lacks '%s':\n%s%s", r.status, status, in_err ? in_err : "",
                 r.out, r.err);
    tu_free(&r);
}

/* /etc/systemd as a listing: names, types and modes. */
static char *etc_systemd(void)
{
    tu_result r = tu_run("find /etc/systemd -printf '%%p %%y %%m\\n' 2>/dev/null | sort");
    free(r.err);
    return r.out;
}

/* The words of the unit's ExecStart as a shell command line (single-quoted),
 * undoing systemd's quoting: "..." words, \\ and \", %% and $$. */
static void exec_start(const char *unit, char *out, size_t size)
{
    const char *p = strstr(unit, "\nExecStart=");
    assert_non_null(p);
    p += 11;
    size_t k = 0;
    while (*p == '"') {
        out[k++] = '\'';
        for (p++; *p && *p != '"'; p++) {
            if (*p == '\\' || ((*p == '%' || *p == '$') && p[1] == *p))
                p++;
            assert_true(*p != '\'' && k + 8 < size);
            out[k++] = *p;
        }
        assert_int_equal(*p++, '"');
        out[k++] = '\'';
        out[k++] = ' ';
        if (*p == ' ')
            p++;
    }
    assert_int_equal(*p, '\n');
    out[k] = 0;
}

static void test_file_mode_boot_and_disable(void **state)
{
    SKIP_IF_NEEDED();
    const char *dir = *state;
    char *before = etc_systemd();
    const char *ltr = tu_private_ltr();
    assert_non_null(ltr);
    tu_result r = tu_run("%s boottrace heap --filemode -o %s/boot.ltr --buffers 64", ltr, dir);
    if (r.status != 0)
        fail_msg("boottrace failed (%d): %s%s", r.status, r.out, r.err);
    assert_non_null(strstr(r.out, "wrote " UNIT));
    assert_non_null(strstr(r.out, "enabled it by hand with the link " LINK));
    tu_free(&r);
    char *unit = tu_read_file(UNIT);
    assert_non_null(unit);
    char want[700];
    snprintf(want, sizeof want, "\"start\" \"heap\" \"--instance\" \"ltr\" \"--filemode\" \"-o\" \"%s/boot.ltr\" "
                                "\"--buffers\" \"64\"\n", dir);
    assert_non_null(strstr(unit, want));
    r = tu_run("readlink " LINK);
    assert_string_equal(r.out, UNIT "\n");
    tu_free(&r);
    struct stat st;
    assert_int_equal(stat(UNIT, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0644);

    r = tu_run("command -v systemd-analyze");
    bool analyze = r.status == 0;
    tu_free(&r);
    if (analyze) { /* systemd-analyze warns on stderr (exit 0) about a line it ignores */
        r = tu_run("systemd-analyze verify " UNIT);
        if (r.status != 0 || strstr(r.err, "ltr-boottrace.service"))
            fail_msg("systemd-analyze verify (%d):\n%s%s", r.status, r.out, r.err);
        tu_free(&r);
    } else {
        printf("systemd-analyze is not installed: the unit was not verified by systemd\n");
    }

    /* the boot, by hand: what ExecStart runs starts the session (in the
     * test's runtime directory, not the unit's /run/ltr), and ltr stop ends it */
    char cmd[2000];
    exec_start(unit, cmd, sizeof cmd);
    tu_expect_ok(tu_run("%s", cmd));
    r = tu_run("%s status", tu_ltr());
    assert_non_null(strstr(r.out, "boot.ltr"));
    tu_free(&r);
    tu_expect_ok(tu_run("%s stop %s/boot.ltr", tu_ltr(), dir));
    char trace[700];
    snprintf(trace, sizeof trace, "%s/boot.ltr", dir);
    tu_trace t = tu_read_trace(trace, "Ltr.Heap");
    assert_true(t.ok && t.complete);
    free(unit);

    r = tu_run("%s boottrace --disable", ltr);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "removed " LINK "\nremoved " UNIT "\n"));
    tu_free(&r);
    char *after = etc_systemd();
    assert_string_equal(after, before);
    free(after);
    free(before);
    r = tu_run("%s boottrace --disable", ltr);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "nothing to remove"));
    tu_free(&r);
}

static void test_memory_mode_replaces(void **state)
{
    SKIP_IF_NEEDED();
    const char *dir = *state, *ltr = tu_private_ltr();
    assert_non_null(ltr);
    tu_expect_ok(tu_run("%s boottrace heap --filemode -o %s/a.ltr", ltr, dir));
    tu_result r = tu_run("%s boottrace heap.light --memory -o %s/m.ltr --instance early --name myservice", ltr,
                         dir);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "replaced " UNIT));
    /* the by-name setting is off for it (the private /etc has none): said */
    assert_non_null(strstr(r.err, "--name myservice: new processes of this name do not start with the heap agent"));
    tu_free(&r);
    char *unit = tu_read_file(UNIT);
    assert_null(strstr(unit, "--filemode"));
    assert_non_null(strstr(unit, "\"--name\" \"myservice\""));
    char want[700];
    snprintf(want, sizeof want, "\"stop\" \"%s/m.ltr\" \"--instance\" \"early\" \"--force\"\n", dir);
    assert_non_null(strstr(unit, want)); /* written at shutdown if still running */
    free(unit);
    tu_expect_ok(tu_run("%s boottrace --disable", ltr));
    assert_int_equal(access(UNIT, F_OK), -1);
    assert_int_equal(access(LINK, F_OK), -1);
}

static void test_refusals(void **state)
{
    SKIP_IF_NEEDED();
    const char *dir = *state;
    char *before = etc_systemd();
    /* not root: refused before anything is read or written */
    tu_result r = tu_run("setpriv --reuid=nobody --regid=nogroup --clear-groups %s boottrace heap --memory", tu_ltr());
    expect(r, 1, "needs root");
    expect(tu_run("setpriv --reuid=nobody --regid=nogroup --clear-groups %s boottrace --disable", tu_ltr()), 1,
           "needs root");
    expect(tu_run("%s boottrace heap", tu_ltr()), 2, "say --filemode or --memory");
    expect(tu_run("%s boottrace heap --filemode --memory -o x", tu_ltr()), 2, "say --filemode or --memory");
    expect(tu_run("%s boottrace heap --filemode", tu_ltr()), 2, "needs -o FILE");
    expect(tu_run("%s boottrace --memory", tu_ltr()), 2, "at least one PROFILE");
    expect(tu_run("%s boottrace heap --memory --force", tu_ltr()), 2, "--force is for --filemode");
    expect(tu_run("%s boottrace --disable heap", tu_ltr()), 2, "--disable takes nothing else");
    expect(tu_run("%s boottrace heap --memory --instance ../x", tu_ltr()), 2, "may hold only");
    expect(tu_run("%s boottrace heap --memory --buffers 0", tu_ltr()), 2, "--buffers");
    expect(tu_run("%s boottrace heap --memory --name a/b", tu_ltr()), 2, "--name");
    expect(tu_run("%s boottrace heap --memory --pid 1", tu_ltr()), 2, "--pid has no meaning at boot");
    expect(tu_run("%s boottrace no-such-profile --memory", tu_ltr()), 1, "the profiles have errors");
    expect(tu_run("%s boottrace heap --filemode -o %s/no/such/dir/t.ltr", tu_ltr(), dir), 1,
           "is not there: the session could not write its trace");
    char *after = etc_systemd();
    assert_string_equal(after, before); /* none of them wrote anything */
    free(after);

    /* a unit of that name that ltr did not write stays, also at --disable */
    tu_expect_ok(tu_run("mkdir -p /etc/systemd/system && printf '[Unit]\\n' > " UNIT));
    expect(tu_run("%s boottrace heap --memory", tu_private_ltr()), 1, "was not written by ltr boottrace");
    expect(tu_run("%s boottrace --disable", tu_private_ltr()), 1, "was not written by ltr boottrace");
    char *unit = tu_read_file(UNIT);
    assert_string_equal(unit, "[Unit]\n");
    free(unit);
    free(before);
}

static char *systemd_before;

/* After a case: a refusal wrote nothing; an accepted one is taken away by
 * --disable, whole. */
static void boottrace_undone(const roots_alone_case *c)
{
    if (!c->refusal)
        tu_expect_ok(tu_run(ROOTS_ALONE_BASE "/t/bin/ltr boottrace --disable"));
    char *after = etc_systemd();
    assert_string_equal(after, systemd_before);
    free(after);
}

/* The rule for what the unit runs as root at every boot (the ltr binary
 * and the heap agent beside it), case by case: tests/util/roots_alone.h's
 * cases, the ones `ltr heaptracingconfig` is tested with, and the binary's
 * own (another user's; in a directory others may write). A refusal says
 * why and writes nothing; what is root's alone is set up, and removed. */
static void test_roots_alone_cases(void **state)
{
    SKIP_IF_NEEDED();
    (void)state;
    static const roots_alone_case own[] = {
        {"the ltr binary another user's", "chown nobody t/bin/ltr", "@/t/bin/ltr belongs to nobody, not root"},
        {"the ltr binary's directory writable by every user", "chmod 0777 t/bin",
         "@/t/bin may be written by the members of group root and every user"},
    };
    systemd_before = etc_systemd();
    char msg[4096];
    if (roots_alone_run_cases(own, sizeof own / sizeof *own, "boottrace heap --memory", "at every boot, and whoever can change it",
                              boottrace_undone, msg, sizeof msg))
        fail_msg("%s", msg);
    free(systemd_before);
}

/* The agent the unit loads at boot is the one checked: its name beside
 * ltr may lead through a symlink in a directory every user may write
 * (BASE/t/lib -> BASE/w/lib -> BASE/r), where another user could point it
 * elsewhere after the check; the check is made on where it leads (root's
 * alone here), and the unit names that path, not the name beside ltr. */
static void test_agent_named_as_checked(void **state)
{
    SKIP_IF_NEEDED();
    (void)state;
    assert_int_equal(roots_alone_tree(true, "mkdir -m 0777 w && mv t/lib r && ln -s ../r w/lib && "
                                            "ln -s ../w/lib t/lib"), 0);
    tu_result r = tu_run(ROOTS_ALONE_BASE "/t/bin/ltr boottrace heap --memory");
    if (r.status != 0)
        fail_msg("boottrace failed (%d): %s%s", r.status, r.out, r.err);
    tu_free(&r);
    char *unit = tu_read_file(UNIT);
    assert_non_null(unit);
    if (!strstr(unit, "\nEnvironment=\"LTR_HEAP_AGENT=" ROOTS_ALONE_BASE "/r/libltr-heap.so\"\n"))
        fail_msg("the unit does not name the agent checked, " ROOTS_ALONE_BASE "/r/libltr-heap.so:\n%s", unit);
    free(unit);
    tu_expect_ok(tu_run(ROOTS_ALONE_BASE "/t/bin/ltr boottrace --disable"));
    tu_expect_ok(tu_run("rm -rf " ROOTS_ALONE_BASE));
}

/* No agent beside ltr to check (its lib a symlink into a directory every
 * user may write, leading nowhere yet): refused, nothing written. A unit
 * naming no agent had the session look beside ltr at boot, by the name
 * never checked, and load into the services what another user put there
 * meanwhile. */
static void test_agent_not_there_refused(void **state)
{
    SKIP_IF_NEEDED();
    (void)state;
    assert_int_equal(roots_alone_tree(true, "mkdir -m 0777 w && mv t/lib r && ln -s ../w/lib t/lib"), 0);
    char *before = etc_systemd();
    expect(tu_run(ROOTS_ALONE_BASE "/t/bin/ltr boottrace heap --memory --name myservice"), 1,
           "the heap agent beside this ltr cannot be checked");
    char *after = etc_systemd();
    assert_string_equal(after, before);
    free(after);
    free(before);
    tu_expect_ok(tu_run("rm -rf " ROOTS_ALONE_BASE));
}

/* A profile of a .wprp file is read by root at every boot too: one where
 * another user may write (the sandbox, under /tmp) is refused, nothing
 * written; it chose the boot session's buffers (all of the memory, in a
 * flight recorder) and the services it traces. One of root's alone, given
 * by a relative name, is named in the unit by its real path: the unit runs
 * in "/", where the name given was looked for at boot. */
static void test_profile_file(void **state)
{
    SKIP_IF_NEEDED();
    const char *dir = *state, *ltr = tu_private_ltr();
    assert_non_null(ltr);
    char *before = etc_systemd();
    tu_expect_ok(tu_run("cp %s/profiles/general.wprp %s/p.wprp", getenv("LTR_SOURCE_DIR"), dir));
    expect(tu_run("%s boottrace '%s/p.wprp!general' --memory", ltr, dir), 1,
           "would read the profile");
    char *after = etc_systemd();
    assert_string_equal(after, before);
    free(after);
    free(before);
    tu_expect_ok(tu_run("mkdir -m 0755 /etc/tu-prof && cp %s/p.wprp /etc/tu-prof/ && chmod 0644 /etc/tu-prof/p.wprp && "
                        "cd /etc/tu-prof && %s boottrace 'p.wprp!general' --memory",
                        dir, ltr));
    char *unit = tu_read_file(UNIT);
    assert_non_null(unit);
    if (!strstr(unit, "\nExecStart=\"") || !strstr(unit, "\"start\" \"/etc/tu-prof/p.wprp!general\" "))
        fail_msg("the unit does not name the profile by its real path, /etc/tu-prof/p.wprp:\n%s", unit);
    free(unit);
    tu_expect_ok(tu_run("%s boottrace --disable && rm -r /etc/tu-prof", ltr));
}

int main(void)
{
    if (geteuid() != 0)
        why_skip = "not root: ltr boottrace writes /etc/systemd, in a private mount namespace that needs root";
    else if (access("/run/systemd/system", F_OK) == 0)
        why_skip = "systemd runs this machine: ltr boottrace would have it enable the unit for real";
    else if (tu_private_etc() != 0)
        why_skip = "no private /etc could be made (overlayfs, mount namespaces)";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_file_mode_boot_and_disable, fresh, done),
        cmocka_unit_test_setup_teardown(test_memory_mode_replaces, fresh, done),
        cmocka_unit_test_setup_teardown(test_refusals, fresh, done),
        cmocka_unit_test_setup_teardown(test_roots_alone_cases, fresh, done),
        cmocka_unit_test_setup_teardown(test_agent_named_as_checked, fresh, done),
        cmocka_unit_test_setup_teardown(test_agent_not_there_refused, fresh, done),
        cmocka_unit_test_setup_teardown(test_profile_file, fresh, done),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
