/*
 * byname/config.c — the persistent by-name setting: the names file, copies of
 * the shim and the agent in /etc/ltr, and the shim's line in
 * /etc/ld.so.preload. Every write is a new file renamed over the old one in
 * the same directory (a reader sees the old or the new content, never half),
 * made with O_EXCL so no link is followed, under an flock of /etc so that
 * concurrent enables and disables take turns. What /etc/ld.so.preload was
 * before the first name is kept in a state file, so that removing the last
 * name gives back the same bytes, or no file.
 */
#include "byname/byname.h"
#include "prim/prim.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SHIM_LINE LTR_BYNAME_SHIM "\n"
#define PRELOAD_MAX (1u << 20)
#define NAMES_READ (1u << 20) /* of a names file larger than the shim reads */

int ltr_byname_check(const char *name, ltr_error *err)
{
    size_t n = strlen(name);
    char shown[LTR_BYNAME_NAME_MAX + 1];
    switch (ltr_byname_fault(name, n)) {
    case LTR_BYNAME_OK:
        return 0;
    case LTR_BYNAME_EMPTY:
        return ltr_fail(err, EINVAL, "the NAME is empty: give an executable's file name, e.g. 'myservice'");
    case LTR_BYNAME_TOO_LONG:
        return ltr_fail(err, EINVAL, "the NAME is %zu bytes long, more than a file name can be (%d)", n,
                        LTR_BYNAME_NAME_MAX);
    case LTR_BYNAME_BLANK:
        return ltr_fail(err, EINVAL, "the NAME holds a space or a control character: give the "
                        "executable's file name as 'ls' shows it");
    case LTR_BYNAME_NOT_TEXT: /* printed, its bytes would act on the terminal: shown with '?' */
        shown[ltr_shown_text(name, n, shown, false)] = 0;
        return ltr_fail(err, EINVAL, "the NAME '%s' is not UTF-8 text or holds a control character (each "
                        "shown as '?'): ltr takes only names it can print as they are; rename the executable",
                        shown);
    case LTR_BYNAME_PATH:
        return ltr_fail(err, EINVAL, "'%s' is a path: give the executable's file name only, e.g. '%s'", name,
                        strrchr(name, '/')[1] ? strrchr(name, '/') + 1 : "myservice");
    case LTR_BYNAME_LTR:
        return ltr_fail(err, EINVAL, "ltr itself cannot be heap-traced: give the name of the program to trace");
    default:
        return ltr_fail(err, EINVAL, "'%s' cannot be an executable's file name", name);
    }
}

void ltr_byname_stray_text(const ltr_byname_stray *s, char *out, size_t size)
{
    static const char *const why[] = {
        [LTR_BYNAME_TOO_LONG] = "longer than a file name can be (255 bytes)",
        [LTR_BYNAME_BLANK] = "it holds a space or a control character",
        [LTR_BYNAME_NOT_TEXT] = "it is not UTF-8 text or holds a control character (each shown as '?')",
        [LTR_BYNAME_PATH] = "a path, not a file name",
        [LTR_BYNAME_NOT_FILE] = "it cannot be a file name",
        [LTR_BYNAME_LTR] = "ltr itself is never heap-traced",
    };
    char shown[60];
    size_t n = s->len < sizeof shown - 1 ? s->len : sizeof shown - 1;
    shown[ltr_shown_text(s->text, n, shown, false)] = 0;
    const char *reason = s->fault > 0 && s->fault <= LTR_BYNAME_LTR && why[s->fault] ? why[s->fault] : "no name";
    snprintf(out, size, "'%s%s': matches no process: %s", shown, n < s->len ? "..." : "", reason);
}

/* ---- small file helpers ------------------------------------------------- */

/* Reads the whole of fd, a regular file of at most max bytes, into a new
 * NUL-terminated buffer, and closes fd. 0 or -errno. */
static int slurp_fd(int fd, char **out, size_t *len, size_t max)
{
    struct stat st;
    int rc = fstat(fd, &st) != 0 ? -errno : !S_ISREG(st.st_mode) ? -EINVAL : (size_t)st.st_size > max ? -EFBIG : 0;
    if (rc) {
        close(fd);
        return rc;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    ssize_t n = buf ? read(fd, buf, (size_t)st.st_size) : -1;
    close(fd);
    if (n < 0) {
        free(buf);
        return buf ? -EIO : -ENOMEM;
    }
    buf[n] = 0;
    *out = buf;
    *len = (size_t)n;
    return 0;
}

/* Reads a whole file into a new NUL-terminated buffer. -ENOENT if absent. */
static int slurp(const char *path, char **out, size_t *len, size_t max)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
    return fd < 0 ? -errno : slurp_fd(fd, out, len, max);
}

/* Writes path anew: a temporary beside it, owned and moded as asked,
 * synced, renamed over it. */
static int write_atomic(const char *path, const void *data, size_t len, mode_t mode, uid_t uid, gid_t gid)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    int fd = ltr_create_temp(tmp);
    if (fd < 0)
        return fd;
    int rc = ltr_write_all(fd, data, len);
    if (!rc && (fchown(fd, uid, gid) != 0 || fchmod(fd, mode) != 0 || fsync(fd) != 0))
        rc = -errno;
    if (close(fd) != 0 && !rc)
        rc = -errno;
    if (!rc && rename(tmp, path) != 0)
        rc = -errno;
    if (rc)
        unlink(tmp);
    return rc;
}

static int copy_file(const char *from, const char *to, ltr_error *err)
{
    char *data = NULL;
    size_t len = 0;
    /* The copy goes into processes of every user, root's too (the shim into
     * every one, through /etc/ld.so.preload): a file another user could
     * have written (LTR_HEAP_AGENT, or a build tree, may lead there) would
     * run their code as root. The fd read is the one checked, with the
     * rule `ltr boottrace` applies to what it runs (prim's
     * ltr_open_roots_alone). */
    ltr_error why;
    int fd = ltr_open_roots_alone(from, &why);
    if (fd == -EPERM)
        return ltr_fail(err, EPERM, "only root may write what is loaded into every process: %s (or use an ltr "
                        "installed as root where only root can write, e.g. cmake --install BUILD --prefix "
                        "/opt/ltr)", why.msg);
    int rc = fd < 0 ? fd : slurp_fd(fd, &data, &len, 256u << 20);
    if (rc)
        return ltr_fail(err, -rc, "cannot read %s: %s", from, strerror(-rc));
    rc = write_atomic(to, data, len, 0644, 0, 0);
    free(data);
    if (rc)
        return ltr_fail(err, -rc, "cannot write %s: %s", to, strerror(-rc));
    return 0;
}

/* ---- the names file ------------------------------------------------------- */

static int find_name(const ltr_byname_list *l, const char *name)
{
    for (unsigned i = 0; i < l->n; i++)
        if (!strcmp(l->names[i], name))
            return (int)i;
    return -1;
}

/* An entry of the names file into the list (a line for ltr_byname_lines):
 * a name, each once (a hand edit that listed one twice was disabled once,
 * and the shim still loaded the agent for the other line), or what matches
 * nothing. */
static bool collect(const char *line, size_t len, bool cut, void *arg)
{
    ltr_byname_list *l = arg;
    const char *name;
    size_t n;
    if (!ltr_byname_entry(line, len, &name, &n))
        return false;
    if (l->n + l->n_strays + l->twice == LTR_BYNAME_MAX_NAMES) /* the shim reads no further */
        return l->more = true;
    int fault = cut ? LTR_BYNAME_TOO_LONG : ltr_byname_fault(name, n);
    if (fault == LTR_BYNAME_OK) {
        memcpy(l->names[l->n], name, n);
        l->names[l->n][n] = 0;
        bool again = find_name(l, l->names[l->n]) >= 0;
        l->n += !again, l->twice += again;
        return false;
    }
    ltr_byname_stray *s = &l->strays[l->n_strays++];
    s->len = n;
    s->fault = fault;
    memcpy(s->text, name, n < sizeof s->text ? n : sizeof s->text);
    return false;
}

int ltr_byname_read(ltr_byname_list *out, ltr_error *err)
{
    memset(out, 0, sizeof *out);
    int fd = open(LTR_BYNAME_NAMES, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
    struct stat st;
    if (fd < 0 && errno == ENOENT)
        return 0;
    int rc = fd < 0 ? -errno : fstat(fd, &st) != 0 ? -errno : !S_ISREG(st.st_mode) ? -EINVAL : 0;
    if (rc) {
        if (fd >= 0)
            close(fd);
        return ltr_fail(err, -rc, "cannot read %s: %s; 'ltr heaptracingconfig --disable-all' removes the "
                        "setting", LTR_BYNAME_NAMES, rc == -EINVAL || rc == -ELOOP ? "not a regular file" :
                        strerror(-rc));
    }
    out->present = true;
    /* The shim's conditions (shim.c): it reads no other file. */
    if ((uint64_t)st.st_size > LTR_BYNAME_FILE_MAX)
        snprintf(out->inert, sizeof out->inert, "%s is %llu bytes, more than the %u the shim reads%s",
                 LTR_BYNAME_NAMES, (unsigned long long)st.st_size, (unsigned)LTR_BYNAME_FILE_MAX,
                 (uint64_t)st.st_size > NAMES_READ ? " (ltr lists what its first MiB holds)" : "");
    else if (st.st_uid != 0 || (st.st_mode & 022))
        snprintf(out->inert, sizeof out->inert, "%s is not root's alone (uid %u, mode %04o): the shim "
                 "trusts it not", LTR_BYNAME_NAMES, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
    /* Read like the shim, a piece at a time: a file the shim ignores can
     * still be listed, and its names disabled. Memory stays bounded, and
     * time (the first 64 entries, of the first MiB: a sparse file of a
     * terabyte planted there would take hours). */
    char piece[LTR_BYNAME_PIECE];
    ltr_byname_lines(fd, (uint64_t)st.st_size < NAMES_READ ? (size_t)st.st_size : NAMES_READ, piece, collect, out);
    close(fd);
    return 0;
}

bool ltr_byname_listed(const ltr_byname_list *l, const char *name)
{
    return !l->inert[0] && find_name(l, name) >= 0;
}

static int write_names(const ltr_byname_list *l)
{
    char *buf = malloc(LTR_BYNAME_FILE_MAX);
    if (!buf)
        return -ENOMEM;
    int len = snprintf(buf, 256, "# ltr heaptracingconfig: new processes of these names start with the heap "
                       "agent, dormant.\n# Change it with 'ltr heaptracingconfig NAME enable|disable' only.\n");
    for (unsigned i = 0; i < l->n; i++)
        len += snprintf(buf + len, LTR_BYNAME_FILE_MAX - (size_t)len, "%s\n", l->names[i]);
    int rc = write_atomic(LTR_BYNAME_NAMES, buf, (size_t)len, 0644, 0, 0);
    free(buf);
    return rc;
}

/* ---- /etc/ld.so.preload ----------------------------------------------------- */

/* The state file: what /etc/ld.so.preload and /etc/ltr were before. */
typedef struct prior {
    bool preload_absent;   /* no /etc/ld.so.preload: remove it again */
    bool newline_added;    /* it did not end with a newline: one was added */
    bool dir_created;      /* /etc/ltr was made for the setting */
} prior;

static void read_prior(prior *p)
{
    char buf[256];
    memset(p, 0, sizeof *p);
    if (ltr_read_small_file(LTR_BYNAME_STATE, buf, sizeof buf) < 0)
        return;
    p->preload_absent = strstr(buf, "preload=absent") != NULL;
    p->newline_added = strstr(buf, "newline-added") != NULL;
    p->dir_created = strstr(buf, "dir=created") != NULL;
}

static int write_prior(const prior *p)
{
    char buf[256];
    int n = snprintf(buf, sizeof buf, "# what ltr heaptracingconfig changed, to undo it exactly\n"
                     "preload=%s%s\ndir=%s\n", p->preload_absent ? "absent" : "present",
                     p->newline_added ? " newline-added" : "", p->dir_created ? "created" : "existed");
    return write_atomic(LTR_BYNAME_STATE, buf, (size_t)n, 0644, 0, 0);
}

/* Where the shim's line starts in text, or NULL. */
static char *find_line(char *text, size_t len)
{
    size_t n = strlen(SHIM_LINE) - 1;
    for (char *p = text; p < text + len;) {
        char *nl = memchr(p, '\n', (size_t)(text + len - p));
        size_t l = nl ? (size_t)(nl - p) : (size_t)(text + len - p);
        if (l == n && !memcmp(p, LTR_BYNAME_SHIM, n))
            return p;
        p += l + 1;
    }
    return NULL;
}

/* The mode and owner /etc/ld.so.preload has (a new one: root's, 0644). */
static void preload_owner(mode_t *mode, uid_t *uid, gid_t *gid)
{
    struct stat st;
    *mode = 0644, *uid = 0, *gid = 0;
    if (lstat(LTR_BYNAME_PRELOAD, &st) == 0 && S_ISREG(st.st_mode))
        *mode = st.st_mode & 07777, *uid = st.st_uid, *gid = st.st_gid;
}

static int preload_add(prior *p, ltr_error *err)
{
    char *text = NULL;
    size_t len = 0;
    int rc = slurp(LTR_BYNAME_PRELOAD, &text, &len, PRELOAD_MAX);
    if (rc && rc != -ENOENT)
        return ltr_fail(err, -rc, "cannot read %s: %s", LTR_BYNAME_PRELOAD, strerror(-rc));
    if (!rc && find_line(text, len)) {
        free(text);
        return 0;
    }
    p->preload_absent = rc == -ENOENT;
    p->newline_added = len && text[len - 1] != '\n';
    size_t n = len + 1 + strlen(SHIM_LINE);
    char *out = malloc(n + 1);
    if (!out) {
        free(text);
        return ltr_fail(err, ENOMEM, "out of memory");
    }
    int m = snprintf(out, n + 1, "%.*s%s%s", (int)len, text ? text : "", p->newline_added ? "\n" : "", SHIM_LINE);
    free(text);
    mode_t mode;
    uid_t uid;
    gid_t gid;
    preload_owner(&mode, &uid, &gid);
    /* The state first: a crash between the two leaves a line to remove, never a lost origin. */
    if ((rc = write_prior(p)) == 0)
        rc = write_atomic(LTR_BYNAME_PRELOAD, out, (size_t)m, mode, uid, gid);
    free(out);
    if (rc)
        return ltr_fail(err, -rc, "cannot write %s: %s", LTR_BYNAME_PRELOAD, strerror(-rc));
    return 0;
}

/* Takes the shim's line out. 1 if it was there, 0 if not, or -errno. */
static int preload_remove(const prior *p, ltr_error *err)
{
    char *text = NULL;
    size_t len = 0;
    int rc = slurp(LTR_BYNAME_PRELOAD, &text, &len, PRELOAD_MAX);
    if (rc == -ENOENT)
        return 0;
    if (rc)
        return ltr_fail(err, -rc, "cannot read %s: %s", LTR_BYNAME_PRELOAD, strerror(-rc));
    char *at = find_line(text, len);
    if (!at) {
        free(text);
        return 0;
    }
    size_t cut = strlen(SHIM_LINE), start = (size_t)(at - text);
    if (start + cut > len) /* the line without its newline, at the end */
        cut = len - start;
    bool last = start + cut == len;
    if (last && p->newline_added && start > 0 && text[start - 1] == '\n')
        start--, cut++;
    memmove(text + start, text + start + cut, len - start - cut);
    len -= cut;
    mode_t mode;
    uid_t uid;
    gid_t gid;
    preload_owner(&mode, &uid, &gid);
    if (!len && p->preload_absent)
        rc = unlink(LTR_BYNAME_PRELOAD) == 0 ? 0 : -errno;
    else
        rc = write_atomic(LTR_BYNAME_PRELOAD, text, len, mode, uid, gid);
    free(text);
    if (rc)
        return ltr_fail(err, -rc, "cannot write %s: %s", LTR_BYNAME_PRELOAD, strerror(-rc));
    return 1;
}

/* ---- enable and disable ---------------------------------------------------- */

/* The lock every change holds: /etc itself (a file of ours would have to
 * outlive the setting). */
static int lock_etc(ltr_error *err)
{
    char etc[sizeof LTR_BYNAME_DIR];
    snprintf(etc, sizeof etc, "%s", LTR_BYNAME_DIR);
    *strrchr(etc, '/') = 0;
    int fd = open(etc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return ltr_fail(err, e, "cannot lock %s: %s", etc, strerror(e));
    }
    return fd;
}

static int need_root(ltr_error *err)
{
    if (geteuid() != 0)
        return ltr_fail(err, EPERM, "changing the by-name setting needs root: it edits %s and %s, which every "
                        "process reads (run it with sudo)", LTR_BYNAME_PRELOAD, LTR_BYNAME_DIR);
    return 0;
}

/* /etc/ltr, made if missing (*created), and refused unless root's and
 * writable by root only. */
static int own_dir(bool *created, ltr_error *err)
{
    *created = mkdir(LTR_BYNAME_DIR, 0755) == 0;
    if (!*created && errno != EEXIST)
        return ltr_fail(err, errno, "cannot create %s: %s", LTR_BYNAME_DIR, strerror(errno));
    if (*created && chmod(LTR_BYNAME_DIR, 0755) != 0) /* whatever the umask: every process reads it */
        return ltr_fail(err, errno, "cannot chmod %s: %s", LTR_BYNAME_DIR, strerror(errno));
    struct stat st;
    if (lstat(LTR_BYNAME_DIR, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022))
        return ltr_fail(err, EPERM, "%s is not a directory of root's that only root can write: "
                        "move it away and enable again", LTR_BYNAME_DIR);
    return 0;
}

static void remove_files(bool dir_too)
{
    const char *files[] = {LTR_BYNAME_SHIM, LTR_BYNAME_AGENT, LTR_BYNAME_NAMES, LTR_BYNAME_STATE};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        unlink(files[i]);
    if (dir_too)
        rmdir(LTR_BYNAME_DIR);
}

/* Whether the names file is as ltr writes it: read by the shim, nothing in
 * it that matches no process. Otherwise a change writes it anew. */
static bool clean(const ltr_byname_list *l)
{
    return !l->inert[0] && !l->n_strays && !l->twice && !l->more;
}

static int enable_locked(const char *name, const char *shim_src, const char *agent_src, ltr_byname_list *l,
                         ltr_error *err)
{
    prior p;
    read_prior(&p);
    bool created, had = false;
    int rc = own_dir(&created, err);
    if (!rc)
        rc = ltr_byname_read(l, err);
    bool first = !rc && !l->present;
    if (first) /* a new setting: what the directory was comes now */
        p.dir_created = created;
    if (!rc && (had = find_name(l, name) >= 0) == false && l->n == LTR_BYNAME_MAX_NAMES)
        rc = ltr_fail(err, E2BIG, "%d names are enabled already, the most there can be: disable one",
                      LTR_BYNAME_MAX_NAMES);
    /* Order: the files the line names exist before the line does. */
    if (!rc)
        rc = copy_file(agent_src, LTR_BYNAME_AGENT, err);
    if (!rc)
        rc = copy_file(shim_src, LTR_BYNAME_SHIM, err);
    if (!rc && (!had || !clean(l))) {
        ltr_byname_list *now = malloc(sizeof *now);
        if (now) {
            *now = *l;
            if (!had)
                snprintf(now->names[now->n++], sizeof now->names[0], "%s", name);
        }
        if ((rc = now ? write_names(now) : -ENOMEM) != 0)
            ltr_fail(err, -rc, "cannot write %s: %s", LTR_BYNAME_NAMES, strerror(-rc));
        free(now);
    }
    if (!rc)
        rc = preload_add(&p, err);
    if (rc && first) /* the first name failed: leave nothing of it (the line was not added) */
        remove_files(p.dir_created);
    return rc ? rc : had && clean(l);
}

/* Runs change under the lock of /etc, as root, with the setting as it was
 * read in *was (or a list of its own). */
static int locked(const char *name, int (*change)(const char *, const char *, const char *, ltr_byname_list *,
                                                  ltr_error *),
                  const char *shim_src, const char *agent_src, ltr_byname_list *was, ltr_error *err)
{
    int rc = name ? ltr_byname_check(name, err) : 0;
    if (!rc)
        rc = need_root(err);
    if (rc)
        return rc;
    ltr_byname_list *l = was ? was : malloc(sizeof *l);
    if (!l)
        return ltr_fail(err, ENOMEM, "out of memory");
    int lock = lock_etc(err);
    rc = lock < 0 ? lock : change(name, shim_src, agent_src, l, err);
    if (lock >= 0)
        close(lock);
    if (l != was)
        free(l);
    return rc;
}

int ltr_byname_enable(const char *name, const char *shim_src, const char *agent_src, ltr_byname_list *was,
                      ltr_error *err)
{
    return locked(name, enable_locked, shim_src, agent_src, was, err);
}

/* Removes the name file at path: 1, 0 if there was none, or -errno. A
 * directory put there is removed too (if empty): nothing may keep the
 * setting on against --disable-all. */
static int remove_file(const char *path)
{
    if (unlink(path) == 0 || (errno == EISDIR && rmdir(path) == 0))
        return 1;
    return errno == ENOENT ? 0 : -errno;
}

/* Everything of the setting. Returns how many of its things were there
 * (the line, the files), or -errno. */
static int remove_all(ltr_error *err)
{
    prior p;
    read_prior(&p);
    int rc = preload_remove(&p, err), removed = rc;
    if (rc < 0)
        return rc;
    /* A process that read /etc/ld.so.preload just before the line went
     * opens the shim a moment later: removed at once, the loader printed
     * "ERROR: ld.so: object '/etc/ltr/libltr-byname.so' from
     * /etc/ld.so.preload cannot be preloaded" on that process's stderr (2
     * of 872 starts of /bin/true during 60 enable/disable cycles, load 10).
     * The files go a second after the line: that moment is microseconds,
     * a few milliseconds for a process preempted in it. */
    if (rc == 1)
        nanosleep(&(struct timespec){1, 0}, NULL);
    const char *files[] = {LTR_BYNAME_SHIM, LTR_BYNAME_AGENT, LTR_BYNAME_NAMES, LTR_BYNAME_STATE};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        if ((rc = remove_file(files[i])) < 0)
            return ltr_fail(err, -rc, "cannot remove %s: %s", files[i], strerror(-rc));
        removed += rc;
    }
    if (p.dir_created && rmdir(LTR_BYNAME_DIR) != 0 && errno != ENOTEMPTY && errno != EEXIST && errno != ENOENT)
        return ltr_fail(err, errno, "cannot remove %s: %s", LTR_BYNAME_DIR, strerror(errno));
    return removed;
}

static int disable_locked(const char *name, const char *shim_src, const char *agent_src, ltr_byname_list *l,
                          ltr_error *err)
{
    (void)shim_src, (void)agent_src;
    int rc = ltr_byname_read(l, err), at = rc ? -1 : find_name(l, name);
    if (!rc && at < 0)
        rc = ltr_fail(err, ENOENT, "heap tracing by name is not enabled for '%s': nothing changed", name);
    if (rc)
        return rc;
    ltr_byname_list *now = malloc(sizeof *now);
    if (!now)
        return ltr_fail(err, ENOMEM, "out of memory");
    *now = *l;
    memmove(now->names[at], now->names[at + 1], (now->n - (unsigned)at - 1) * sizeof now->names[0]);
    now->n--;
    /* The last name: what else the file holds matches nothing, the line goes. */
    if (now->n && (rc = write_names(now)) != 0)
        ltr_fail(err, -rc, "cannot write %s: %s", LTR_BYNAME_NAMES, strerror(-rc));
    else if (!now->n)
        rc = remove_all(err);
    free(now);
    return rc < 0 ? rc : 0;
}

int ltr_byname_disable(const char *name, ltr_byname_list *was, ltr_error *err)
{
    return locked(name, disable_locked, NULL, NULL, was, err);
}

static int disable_all_locked(const char *name, const char *shim_src, const char *agent_src, ltr_byname_list *l,
                              ltr_error *err)
{
    (void)name, (void)shim_src, (void)agent_src, (void)l;
    int rc = remove_all(err);
    return rc < 0 ? rc : rc > 0;
}

int ltr_byname_disable_all(ltr_error *err)
{
    return locked(NULL, disable_all_locked, NULL, NULL, NULL, err);
}
