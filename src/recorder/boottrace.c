/*
 * recorder/boottrace.c — the systemd unit of `ltr boottrace` (boottrace.h):
 * its text, and writing and removing it and its wants link under a root
 * directory. Everything is done through directory fds opened without
 * following a symlink, written to a temporary and renamed into place, under
 * a lock of the unit directory; a unit or link of that name that is not ours
 * is left alone and refused.
 */
#include "recorder/boottrace.h"
#include "prim/prim.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define MARK "# Written by 'ltr boottrace'; 'ltr boottrace --disable' removes it.\n"
#define MADE "# made by ltr boottrace: " /* then a directory it made, under the root */
#define UNIT_MAX (64u << 10)

/* ---- the unit's text ------------------------------------------------------- */

/* A text double-quoted for systemd: \ and " escaped, % doubled, and $ too
 * where it would expand a variable (a command line, not an Environment=
 * line, where $ means itself). */
static int put_quoted(ltr_bytes *out, const char *arg, bool dollar, ltr_error *err)
{
    /* Text systemd takes as it is: valid UTF-8 (it ignores a line that is
     * not: the unit then fails to load at boot, said only in its journal)
     * and no control character (a newline would start a line of the
     * caller's). The refusal shows '?' for what was wrong (prim/text.c). */
    size_t len = strlen(arg);
    char shown[4200];
    if (len >= sizeof shown)
        return ltr_fail(err, EINVAL, "an argument of %zu bytes cannot go into a systemd unit", len);
    size_t n = ltr_shown_text(arg, len, shown, false);
    shown[n] = 0;
    if (n != len || memcmp(shown, arg, len))
        return ltr_fail(err, EINVAL, "the argument '%s' holds a control character or is not valid UTF-8 "
                        "('?' here): systemd would not take it in a unit", shown);
    ltr_bytes_put_u8(out, '"');
    for (const char *p = arg; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '\\' || c == '"')
            ltr_bytes_put_u8(out, '\\');
        else if (c == '%' || (c == '$' && dollar))
            ltr_bytes_put_u8(out, c);
        ltr_bytes_put_u8(out, c);
    }
    ltr_bytes_put_u8(out, '"');
    return 0;
}

/* One argument as a systemd command line word. */
static int put_word(ltr_bytes *out, bool first, const char *arg, ltr_error *err)
{
    if (!strcmp(arg, ";"))
        return ltr_fail(err, EINVAL, "an argument ';' cannot go into a systemd unit");
    if (!first)
        ltr_bytes_put_u8(out, ' ');
    return put_quoted(out, arg, true, err);
}

static void put_text(ltr_bytes *out, const char *text)
{
    ltr_bytes_put_mem(out, text, strlen(text));
}

/* A directory for RequiresMountsFor: the output's, without the quoting a
 * space-separated list would need (a path with spaces is left out). */
static void put_mounts_for(ltr_bytes *out, const char *output)
{
    const char *slash = output ? strrchr(output, '/') : NULL;
    if (!slash || slash == output || strpbrk(output, " \t\\%$\""))
        return;
    put_text(out, "RequiresMountsFor=");
    ltr_bytes_put_mem(out, output, (size_t)(slash - output));
    put_text(out, "\n");
}

int ltr_boottrace_unit(const ltr_boottrace *bt, ltr_bytes *out, ltr_error *err)
{
    put_text(out, MARK);
    put_text(out, "# Starts the session '");
    put_text(out, bt->instance);
    put_text(out, "' at boot; 'ltr stop FILE' (as root) ends it and writes its trace.\n"
                  "[Unit]\nDescription=ltr boot trace (session ");
    put_text(out, bt->instance);
    put_text(out, ")\nDefaultDependencies=no\nAfter=local-fs.target\n"
                  "Before=sysinit.target shutdown.target\nConflicts=shutdown.target\n");
    put_mounts_for(out, bt->output);
    /* `ltr start` returns once the recorder runs: the recorder is the main process */
    put_text(out, "\n[Service]\nType=forking\nEnvironment=LTR_RUNTIME_DIR=" LTR_BOOT_RUNTIME_DIR "\n");
    int rc = 0;
    if (bt->agent) { /* the agent checked, not a name that may lead elsewhere by the next boot */
        put_text(out, "Environment=");
        char assign[4200];
        snprintf(assign, sizeof assign, "LTR_HEAP_AGENT=%s", bt->agent);
        rc = put_quoted(out, assign, false, err);
        put_text(out, "\n");
    }
    put_text(out, "ExecStart=");
    if (!rc)
        rc = put_word(out, true, bt->ltr, err);
    for (size_t i = 0; !rc && i < bt->nargs; i++)
        rc = put_word(out, false, bt->start_args[i], err);
    if (!rc && bt->output) { /* at shutdown, a session still running writes its trace */
        put_text(out, "\nExecStop=-");
        const char *stop[] = {bt->ltr, "stop", bt->output, "--instance", bt->instance, "--force"};
        size_t n = bt->filemode ? 5 : 6; /* file mode stops into its own file: nothing to replace */
        for (size_t i = 0; !rc && i < n; i++)
            rc = put_word(out, i == 0, stop[i], err);
    }
    put_text(out, "\nTimeoutStopSec=120\n\n[Install]\nWantedBy=sysinit.target\n");
    if (!rc && out->failed)
        rc = ltr_fail(err, ENOMEM, "out of memory");
    return rc;
}

/* ---- files under the root ---------------------------------------------------- */

static int open_dir_at(int at, const char *path)
{
    int fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* The unit directory, made if missing (*made) when its parent is there:
 * without etc/systemd, systemd is not installed. Locked. */
static int unit_dir(const char *root, bool make, bool *made, ltr_error *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", root, LTR_BOOT_UNIT_DIR);
    int fd = open_dir_at(AT_FDCWD, path);
    if (fd == -ENOENT && make) {
        if (mkdir(path, 0755) != 0 && errno != EEXIST) {
            int e = errno;
            return e == ENOENT ? ltr_fail(err, ENOENT, "%s/etc/systemd is missing: a boot trace needs systemd",
                                          strcmp(root, "/") ? root : "")
                               : ltr_fail(err, e, "cannot make %s: %s", path, strerror(e));
        }
        *made = true;
        fd = open_dir_at(AT_FDCWD, path);
    }
    if (fd < 0)
        return fd == -ENOENT && !make ? fd : ltr_fail(err, -fd, "cannot open %s: %s", path, strerror(-fd));
    if (flock(fd, LOCK_EX) != 0) {
        int e = errno;
        close(fd);
        return ltr_fail(err, e, "cannot lock %s: %s", path, strerror(e));
    }
    return fd;
}

/* The unit's text if the file is ours: 1 (*text malloc'd), 0 if there is
 * none, -EEXIST if something else has its name. */
static int read_ours(int dirfd, char **text)
{
    *text = NULL;
    int fd = openat(dirfd, LTR_BOOT_UNIT, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -EEXIST; /* ELOOP: a symlink, not what we write */
    struct stat st;
    char *buf = malloc(UNIT_MAX + 1);
    ssize_t n = buf && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, buf, UNIT_MAX) : -1;
    close(fd);
    if (n < (ssize_t)strlen(MARK) || memcmp(buf, MARK, strlen(MARK)) != 0) {
        free(buf);
        return -EEXIST;
    }
    buf[n] = 0;
    *text = buf;
    return 1;
}

static bool made_listed(const char *text, const char *dir)
{
    char line[300];
    snprintf(line, sizeof line, "\n" MADE "%s\n", dir);
    return text && strstr(text, line);
}

/* A new name in dirfd no one can guess, for a temporary. */
static void temp_name(char *out, size_t size)
{
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, 0) != sizeof r)
        r = ((uint64_t)getpid() << 32) ^ (uint64_t)ltr_now_ns();
    snprintf(out, size, ".ltr-boottrace.%016llx", (unsigned long long)r);
}

/* Writes name in dirfd anew: a temporary (O_EXCL), mode 0644, synced, renamed over it. */
static int write_at(int dirfd, const char *name, const void *data, size_t len)
{
    char tmp[64];
    temp_name(tmp, sizeof tmp);
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    int rc = ltr_write_all(fd, data, len);
    if (!rc && (fchmod(fd, 0644) != 0 || fsync(fd) != 0))
        rc = -errno;
    if (close(fd) != 0 && !rc)
        rc = -errno;
    if (!rc && renameat(dirfd, tmp, dirfd, name) != 0)
        rc = -errno;
    if (rc)
        unlinkat(dirfd, tmp, 0);
    return rc;
}

/* Whether the entry name of dirfd is a symlink to our unit: 1, 0 absent, -EEXIST something else. */
static int link_ours(int dirfd, const char *name)
{
    char target[4200];
    ssize_t n = readlinkat(dirfd, name, target, sizeof target - 1);
    if (n < 0)
        return errno == ENOENT ? 0 : -EEXIST;
    target[n] = 0;
    return !strcmp(target, "/" LTR_BOOT_UNIT_DIR "/" LTR_BOOT_UNIT) ? 1 : -EEXIST;
}

static int make_link(int sysfd, bool *made, ltr_boottrace_done *done, ltr_error *err)
{
    int wfd = open_dir_at(sysfd, LTR_BOOT_WANTS);
    if (wfd == -ENOENT) {
        if (mkdirat(sysfd, LTR_BOOT_WANTS, 0755) != 0 && errno != EEXIST)
            return ltr_fail(err, errno, "cannot make %s: %s", done->link, strerror(errno));
        *made = true;
        wfd = open_dir_at(sysfd, LTR_BOOT_WANTS);
    }
    if (wfd < 0)
        return ltr_fail(err, -wfd, "cannot open the directory of %s: %s", done->link, strerror(-wfd));
    int rc = link_ours(wfd, LTR_BOOT_UNIT);
    if (rc == 1) { /* there from an earlier install */
        close(wfd);
        return 0;
    }
    if (rc < 0) {
        close(wfd);
        return ltr_fail(err, EEXIST, "%s is there and is not ltr boottrace's link: it was left as it is", done->link);
    }
    if (rc == 0) {
        char tmp[64];
        temp_name(tmp, sizeof tmp);
        rc = symlinkat("/" LTR_BOOT_UNIT_DIR "/" LTR_BOOT_UNIT, wfd, tmp) == 0 ? 0 : -errno;
        if (!rc && renameat(wfd, tmp, wfd, LTR_BOOT_UNIT) != 0) {
            rc = -errno;
            unlinkat(wfd, tmp, 0);
        }
        if (!rc)
            fsync(wfd);
    }
    close(wfd);
    done->linked = rc == 0;
    return rc ? ltr_fail(err, -rc, "cannot make %s: %s", done->link, strerror(-rc)) : 0;
}

static void paths(const char *root, ltr_boottrace_done *done)
{
    const char *r = strcmp(root, "/") ? root : "";
    snprintf(done->unit, sizeof done->unit, "%s/%s/%s", r, LTR_BOOT_UNIT_DIR, LTR_BOOT_UNIT);
    snprintf(done->link, sizeof done->link, "%s/%s/%s/%s", r, LTR_BOOT_UNIT_DIR, LTR_BOOT_WANTS, LTR_BOOT_UNIT);
}

/* The unit as written: its text, then the directories made by this and
 * every earlier install (removing takes them away). */
static void with_made(ltr_bytes *out, const ltr_bytes *unit, const char *old, bool sys_made, bool wants_made)
{
    ltr_bytes_put_mem(out, unit->data, unit->len);
    if (sys_made || made_listed(old, LTR_BOOT_UNIT_DIR))
        put_text(out, MADE LTR_BOOT_UNIT_DIR "\n");
    if (wants_made || made_listed(old, LTR_BOOT_UNIT_DIR "/" LTR_BOOT_WANTS))
        put_text(out, MADE LTR_BOOT_UNIT_DIR "/" LTR_BOOT_WANTS "\n");
}

int ltr_boottrace_install(const char *root, const ltr_bytes *unit, bool link, ltr_boottrace_done *done,
                          ltr_error *err)
{
    memset(done, 0, sizeof *done);
    paths(root, done);
    bool sys_made = false, wants_made = false;
    int sysfd = unit_dir(root, true, &sys_made, err);
    if (sysfd < 0)
        return sysfd;
    char *old;
    int rc = read_ours(sysfd, &old);
    if (rc < 0) {
        close(sysfd);
        return ltr_fail(err, EEXIST, "%s is there and was not written by ltr boottrace: it was left as it is "
                        "(remove it first if it is no longer wanted)", done->unit);
    }
    done->replaced = rc == 1;
    if (link && (rc = make_link(sysfd, &wants_made, done, err)) == 0)
        fsync(sysfd);
    ltr_bytes text = {0};
    if (!link || !rc) {
        with_made(&text, unit, old, sys_made, wants_made);
        rc = text.failed ? -ENOMEM : write_at(sysfd, LTR_BOOT_UNIT, text.data, text.len);
        if (rc)
            ltr_fail(err, -rc, "cannot write %s: %s", done->unit, strerror(-rc));
        else
            fsync(sysfd);
    }
    if (rc && done->linked && !done->replaced) { /* no link to a unit that is not there */
        char wants[64];
        snprintf(wants, sizeof wants, "%s/%s", LTR_BOOT_WANTS, LTR_BOOT_UNIT);
        unlinkat(sysfd, wants, 0);
        done->linked = false;
    }
    if (rc && wants_made) /* nothing of a failed install stays */
        unlinkat(sysfd, LTR_BOOT_WANTS, AT_REMOVEDIR);
    ltr_bytes_free(&text);
    free(old);
    close(sysfd);
    if (rc && sys_made) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%s", root, LTR_BOOT_UNIT_DIR);
        rmdir(dir);
    }
    return rc;
}

int ltr_boottrace_remove(const char *root, ltr_boottrace_done *done, ltr_error *err)
{
    memset(done, 0, sizeof *done);
    paths(root, done);
    bool unused = false;
    int sysfd = unit_dir(root, false, &unused, err);
    if (sysfd == -ENOENT)
        return 0;
    if (sysfd < 0)
        return sysfd;
    char *text;
    int ours = read_ours(sysfd, &text);
    int wfd = open_dir_at(sysfd, LTR_BOOT_WANTS);
    if (wfd >= 0 && link_ours(wfd, LTR_BOOT_UNIT) == 1) {
        done->link_removed = unlinkat(wfd, LTR_BOOT_UNIT, 0) == 0;
        done->found = true;
    }
    if (wfd >= 0)
        close(wfd);
    int rc = 0;
    if (ours == 1) {
        done->found = true;
        done->unit_removed = unlinkat(sysfd, LTR_BOOT_UNIT, 0) == 0;
        if (!done->unit_removed)
            rc = ltr_fail(err, errno, "cannot remove %s: %s", done->unit, strerror(errno));
        if (made_listed(text, LTR_BOOT_UNIT_DIR "/" LTR_BOOT_WANTS))
            done->dirs_removed = unlinkat(sysfd, LTR_BOOT_WANTS, AT_REMOVEDIR) == 0;
        fsync(sysfd);
    } else if (ours < 0) {
        rc = ltr_fail(err, EEXIST, "%s was not written by ltr boottrace: it was left as it is", done->unit);
    }
    close(sysfd);
    if (ours == 1 && made_listed(text, LTR_BOOT_UNIT_DIR)) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%s", root, LTR_BOOT_UNIT_DIR);
        done->dirs_removed |= rmdir(dir) == 0; /* only if empty: someone else's files stay */
    }
    free(text);
    return rc;
}

int ltr_boottrace_installed(const char *root)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", root, LTR_BOOT_UNIT_DIR);
    int dirfd = open_dir_at(AT_FDCWD, path);
    if (dirfd < 0)
        return 0;
    char *text;
    int rc = read_ours(dirfd, &text);
    free(text);
    close(dirfd);
    return rc;
}

/* ---- systemd ------------------------------------------------------------------ */

bool ltr_systemd_running(void)
{
    struct stat st;
    return lstat("/run/systemd/system", &st) == 0 && S_ISDIR(st.st_mode);
}

int ltr_systemctl(ltr_error *err, const char *arg, ...)
{
    const char *argv[8] = {"systemctl"};
    size_t n = 1;
    va_list ap;
    va_start(ap, arg);
    for (const char *a = arg; a && n < 7; a = va_arg(ap, const char *))
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    pid_t pid;
    int rc = posix_spawnp(&pid, "systemctl", NULL, NULL, (char *const *)argv, environ);
    if (rc)
        return ltr_fail(err, rc, "cannot run systemctl: %s", strerror(rc));
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return ltr_fail(err, errno, "waiting for systemctl: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return ltr_fail(err, EIO, "'systemctl %s %s' failed (exit status %d)", arg, n > 2 ? argv[2] : "",
                        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    return 0;
}
