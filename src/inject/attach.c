/*
 * inject/attach.c — attaching ltr's heap agent to a process by pid, for
 * every command that names one (`ltr start heap --pid`, `ltr record --pid`).
 *
 * Before anything is injected it checks that the agent would be of use: an
 * agent finds its sessions in the registry of the runtime directory of its
 * own process (its euid and environment, prim.c's rules), so a process of
 * another user, or one whose environment names another runtime directory,
 * would never reach our sessions: refused, with the fix. A process that
 * carries the agent already (preloaded, or attached by an earlier session:
 * ltr stop leaves it dormant) is not injected again.
 */
#include "inject/inject.h"
#include "inject/internal.h"
#include "prim/prim.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* Does pid map a libltr-heap.so? 1, 0, or -errno. */
static int carries_agent(pid_t pid)
{
    char path[64], line[4200];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return errno == ENOENT ? -ESRCH : -errno;
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        const char *s = strrchr(line, '/');
        found = s && !strncmp(s + 1, "libltr-heap.so", 14);
    }
    fclose(f);
    return found;
}

/* VAR's value in pid's environment (as it started), or "" if absent. */
static void environ_get(const char *env, size_t len, const char *var, char *out, size_t size)
{
    size_t vl = strlen(var);
    out[0] = 0;
    for (const char *p = env; p < env + len; p += strlen(p) + 1)
        if (!strncmp(p, var, vl) && p[vl] == '=') {
            snprintf(out, size, "%s", p + vl + 1);
            return;
        }
}

static const char *user_name(uid_t uid, char *buf, size_t size)
{
    struct passwd *pw = getpwuid(uid);
    snprintf(buf, size, "%s", pw ? pw->pw_name : "?");
    return buf;
}

/* The runtime directory pid's agent would use, by prim's rules from its
 * environment (same user as we are), and which of it chose it in *from.
 * 0 or -errno. */
static int target_runtime_dir(pid_t pid, uid_t euid, char *out, size_t size, const char **from, ltr_error *err)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) /* it ended after its check: said as target.c says it (a new user's review) */
        return ltr_fail(err, ESRCH, "pid %d: no such process (it exited)", (int)pid);
    if (fd < 0)
        return ltr_fail(err, errno, "pid %d: %s: %s", (int)pid, path, strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *env = malloc(cap + 1);
    ssize_t n;
    while (env && (n = read(fd, env + len, cap - len)) > 0 && (len += (size_t)n) == cap) {
        char *bigger = cap < (8u << 20) ? realloc(env, 2 * cap + 1) : NULL;
        if (!bigger)
            break;
        env = bigger, cap *= 2;
    }
    close(fd);
    if (!env)
        return ltr_fail(err, ENOMEM, "out of memory");
    env[len] = 0;
    static char explicit_dir[4096], xdg[4096], home[4096];
    char user_dir[64];
    environ_get(env, len, "LTR_RUNTIME_DIR", explicit_dir, sizeof explicit_dir);
    environ_get(env, len, "XDG_RUNTIME_DIR", xdg, sizeof xdg);
    environ_get(env, len, "HOME", home, sizeof home);
    free(env);
    /* a service systemd started has neither: its user's default is no
     * choice of its environment, which the refusal said it was */
    *from = explicit_dir[0] ? "from its environment's LTR_RUNTIME_DIR"
            : xdg[0]        ? "from its environment's XDG_RUNTIME_DIR"
                            : "its user's default: its environment sets neither LTR_RUNTIME_DIR nor XDG_RUNTIME_DIR";
    snprintf(user_dir, sizeof user_dir, "/run/user/%u", (unsigned)euid);
    ltr_rundir_places p = {.explicit_dir = explicit_dir[0] ? explicit_dir : NULL,
                           .user_dir = xdg[0] ? xdg : user_dir,
                           .system_dir = "/run",
                           .tmp = "/tmp",
                           .home = home[0] ? home : NULL,
                           /* a check: nothing made where its environment says (a review's
                            * su with LTR_RUNTIME_DIR=/etc/x had root create /etc/x) */
                           .look_only = true};
    ltr_error local;
    int dfd = ltr_runtime_dir_in(&p, out, size, &local);
    if (dfd == -ENOENT)
        return 0; /* not made yet: its agent would make it there (out), which is not ours */
    if (dfd < 0)
        return ltr_fail(err, EACCES, "pid %d: the runtime directory its agent would use is not usable: %s",
                        (int)pid, local.msg);
    close(dfd);
    return 0;
}

/* Whether pid sees, at the path dir names in its mount namespace
 * (/proc/PID/root), the directory that ltr sees there. A service with a
 * private /tmp (systemd's PrivateTmp=, DynamicUser= implies it) has another
 * /tmp/ltr-UID, or none yet, where its agent would look for sessions in
 * vain. Unknown (not readable) counts as alike: the checks before stand. */
static bool seen_alike(pid_t pid, const char *dir)
{
    char there[PATH_MAX + 64];
    struct stat ours, theirs;
    snprintf(there, sizeof there, "/proc/%d/root%s", (int)pid, dir);
    if (dir[0] != '/' || stat(dir, &ours) != 0)
        return true;
    if (stat(there, &theirs) != 0)
        return errno != ENOENT;
    return ours.st_dev == theirs.st_dev && ours.st_ino == theirs.st_ino;
}

/* Whether pid's mount namespace has dir read-only where ltr's has it
 * writable (systemd's ProtectSystem=strict or ReadOnlyPaths= over /run/ltr):
 * its agent cannot open the registry there. Unknown counts as writable. */
static bool read_only_there(pid_t pid, const char *dir)
{
    char there[PATH_MAX + 64];
    struct statvfs ours, theirs;
    snprintf(there, sizeof there, "/proc/%d/root%s", (int)pid, dir);
    return dir[0] == '/' && statvfs(dir, &ours) == 0 && !(ours.f_flag & ST_RDONLY) &&
           statvfs(there, &theirs) == 0 && (theirs.f_flag & ST_RDONLY);
}

static bool same_dir(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];
    if (!realpath(a, ra) || !realpath(b, rb))
        return !strcmp(a, b);
    return !strcmp(ra, rb);
}

int ltr_attach_check(pid_t pid, const char *runtime_dir, ltr_error *err)
{
    static inj_target t;
    int has = carries_agent(pid);
    if (has == -ESRCH)
        return ltr_fail(err, ESRCH, "pid %d: no such process: check the pid (ps, pgrep)", (int)pid);
    /* Whose it is, first: the injection check reads the files the process
     * maps, which another user may have crafted (an attacker review's libc
     * with a wrapping segment offset crashed root's ltr before it refused). */
    int rc = inj_target_read(pid, &t, false, err);
    if (rc != 0)
        return rc;
    char who[64], us[64];
    if (t.euid != geteuid()) {
        if (has > 0)
            return ltr_fail(err, EACCES, "pid %d carries ltr's heap agent already, for user %s (uid %u): its "
                            "events go to that user's sessions, never to those of %s (uid %u); run ltr as %s "
                            "(e.g. sudo -u %s ltr ...)", (int)pid, user_name(t.euid, who, sizeof who),
                            (unsigned)t.euid, user_name(geteuid(), us, sizeof us), (unsigned)geteuid(), who, who);
        return ltr_fail(err, EACCES, "pid %d runs as user %s (uid %u): its agent would report to that user's "
                        "sessions, not to those of %s (uid %u); run ltr as %s (e.g. sudo -u %s ltr ...)",
                        (int)pid, user_name(t.euid, who, sizeof who), (unsigned)t.euid,
                        user_name(geteuid(), us, sizeof us), (unsigned)geteuid(), who, who);
    }
    if (has <= 0 && (rc = ltr_inject_check(pid, err)) != 0) /* it needs an injection: can it have one? */
        return rc;
    char theirs[4096];
    const char *from = "";
    if ((rc = target_runtime_dir(pid, t.euid, theirs, sizeof theirs, &from, err)) != 0)
        return rc;
    if (!same_dir(theirs, runtime_dir))
        return ltr_fail(err, EACCES, "pid %d would look for sessions in %s (%s), and ltr's are in %s: run ltr "
                        "with LTR_RUNTIME_DIR=%s", (int)pid, theirs, from, runtime_dir, theirs);
    if (!seen_alike(pid, theirs))
        return ltr_fail(err, EACCES, "pid %d runs in a mount namespace of its own where %s, the runtime directory "
                        "its agent would use, is another directory than ltr's (a private /tmp: systemd's "
                        "PrivateTmp=, or DynamicUser=): it would never find the session; give the service a "
                        "runtime directory outside /tmp that both see (LTR_RUNTIME_DIR in its environment, "
                        "Environment= in its unit) and restart it, then run ltr with the same LTR_RUNTIME_DIR",
                        (int)pid, theirs);
    if (read_only_there(pid, theirs))
        return ltr_fail(err, EACCES, "pid %d runs in a mount namespace of its own where %s, the runtime directory "
                        "its agent would use, is read-only (systemd's ProtectSystem=strict or ReadOnlyPaths=): it "
                        "cannot open the session registry there; give the service ReadWritePaths=%s in its unit "
                        "and restart it", (int)pid, theirs, theirs);
    return has > 0;
}

int ltr_attach_agent(pid_t pid, const char *agent_path, const char *runtime_dir, unsigned timeout_ms,
                     ltr_inject_report *rep, ltr_error *err)
{
    if (rep)
        memset(rep, 0, sizeof *rep);
    uint64_t deadline = ltr_now_ns() + (uint64_t)(timeout_ms ? timeout_ms : LTR_INJECT_TIMEOUT_MS) * 1000000u;
    for (;;) {
        int rc = ltr_attach_check(pid, runtime_dir, err);
        if (rc < 0)
            return rc;
        if (rc > 0)
            return LTR_ATTACH_ALREADY;
        uint64_t now = ltr_now_ns();
        unsigned left = now < deadline ? (unsigned)((deadline - now) / 1000000u) : 0;
        rc = ltr_inject_dlopen(pid, agent_path, left ? left : 1, rep, err);
        /* a pid taken as its shell forked it may exec its program during the
         * attach ('perl ... & ltr start heap --pid $!'): the program it runs
         * now is checked and attached afresh, within the same time */
        if (rc != -ESTALE || ltr_now_ns() >= deadline)
            return rc ? rc : LTR_ATTACH_INJECTED;
    }
}

bool ltr_seccomp_said(pid_t pid, char *out, size_t size)
{
    char path[64], line[256];
    unsigned n = 0;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    while (fgets(line, sizeof line, f) && sscanf(line, "Seccomp_filters: %u", &n) != 1) {
    }
    fclose(f);
    if (n)
        snprintf(out, size, "it runs under a seccomp filter (Seccomp_filters in /proc/%d/status: systemd's "
                 "SystemCallFilter= or RestrictAddressFamilies=), and its agent reaches ltr through a Unix socket "
                 "(AF_UNIX), which such a filter may refuse (RestrictAddressFamilies= must list AF_UNIX)", (int)pid);
    return n != 0;
}

void ltr_attach_explain(pid_t pid, const char *runtime_dir, char *out, size_t size)
{
    char filtered[400];
    ltr_error err = {0};
    int rc = ltr_attach_check(pid, runtime_dir, &err);
    if (rc == -ESRCH && !strstr(err.msg, "zombie"))
        snprintf(out, size, "pid %d is not running (it exited)", (int)pid);
    else if (rc < 0)
        snprintf(out, size, "%s", err.msg);
    else if (rc == 0)
        snprintf(out, size, "pid %d does not carry the heap agent (its attach failed or it was restarted): "
                 "'ltr start heap --pid %d' in a new session attaches it", (int)pid, (int)pid);
    else if (ltr_seccomp_said(pid, filtered, sizeof filtered))
        /* a service allocating all along was said to have not allocated */
        snprintf(out, size, "pid %d carries the heap agent and has not joined: %s; if it allows them, it joins "
                 "at its first allocation", (int)pid, filtered);
    else
        snprintf(out, size, "pid %d carries the heap agent and has not allocated since the session began "
                 "(it joins at its first allocation)", (int)pid);
}

static volatile sig_atomic_t wait_signal;

static void on_signal(int sig)
{
    wait_signal = sig;
}

ltr_wait_end ltr_attach_wait(pid_t pid, uint64_t duration_ns)
{
    struct sigaction sa = {.sa_handler = on_signal}, old[3];
    static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    wait_signal = 0;
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &sa, &old[i]);
    uint64_t end = duration_ns ? ltr_now_ns() + duration_ns : UINT64_MAX;
    ltr_wait_end why = LTR_WAIT_DURATION;
    for (;;) {
        if (wait_signal) {
            why = LTR_WAIT_SIGNAL;
            break;
        }
        char path[64], buf[512] = "";
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
        if (fd >= 0)
            close(fd);
        const char *p = n > 0 ? strrchr(buf, ')') : NULL;
        if (!p || p[2] == 'Z' || p[2] == 'X') {
            why = LTR_WAIT_EXITED;
            break;
        }
        if (ltr_now_ns() >= end)
            break;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL); /* a signal cuts it short */
    }
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &old[i], NULL);
    return why;
}
