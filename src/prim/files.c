/*
 * prim/files.c — creating and publishing the files ltr writes (traces, their
 * temporaries, exports). ltr often runs as root and writes where other users
 * can write too (/tmp, shared directories): a file is therefore only ever
 * created new (never through a symlink, never reusing what someone planted),
 * temporaries get unpredictable names, and a finished file takes its final
 * name without replacing what is there unless the user said --force. And
 * opening what ltr reads where others may have put something: regular files
 * only, never a FIFO's or a device's open (ltr_open_regular), and what root
 * runs at every boot or copies into every process only if root alone can
 * change it, on its whole way from "/" (ltr_open_roots_alone).
 */
#include "prim/prim.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int ltr_create_new(const char *path)
{
    /* O_EXCL fails on any existing name, a dangling symlink included;
     * O_NOFOLLOW says the same for kernels and filesystems that differ. */
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    return fd < 0 ? -errno : fd;
}

int ltr_create_temp(char *tmpl)
{
    char *x = NULL;
    for (char *p = strstr(tmpl, "XXXXXX"); p; p = strstr(p + 1, "XXXXXX"))
        x = p;
    if (!x)
        return -EINVAL;
    /* mkostemps: O_CREAT | O_EXCL, mode 0600, a name no one can guess. */
    int fd = mkostemps(tmpl, (int)strlen(x + 6), O_CLOEXEC);
    if (fd < 0)
        return -errno;
    /* held while the file is written, and let go however its writer ends
     * (a SIGKILL too): ltr_leftover_temps tells a temporary being written
     * from one a killed writer left (new, so nobody else holds it) */
    flock(fd, LOCK_EX | LOCK_NB);
    return fd;
}

int ltr_temp_name(char *out, size_t size, const char *dest)
{
    return snprintf(out, size, "%s.XXXXXX.part", dest) >= (int)size ? -ENAMETOOLONG : 0;
}

/* Whether name is base.XXXXXX.part, the temporary ltr_temp_name makes of
 * base (mkostemps fills XXXXXX with letters and digits). */
static bool temp_of(const char *name, const char *base)
{
    size_t n = strlen(base);
    if (strlen(name) != n + sizeof ".XXXXXX.part" - 1 || strncmp(name, base, n) != 0 || name[n] != '.' ||
        strcmp(name + n + 7, ".part") != 0)
        return false;
    for (size_t i = n + 1; i < n + 7; i++)
        if (!isalnum((unsigned char)name[i]))
            return false;
    return true;
}

/* Whether the file at dirfd/name is a temporary of ours that nobody writes:
 * a regular file (no symlink followed, no FIFO opened), this user's, whose
 * writer's lock (ltr_create_temp) is gone. Its status in st. */
static bool left_over(int dirfd, const char *name, struct stat *st)
{
    if (fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st->st_mode) || st->st_uid != geteuid())
        return false;
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat now;
    bool left = fstat(fd, &now) == 0 && now.st_ino == st->st_ino && now.st_dev == st->st_dev &&
                flock(fd, LOCK_SH | LOCK_NB) == 0;
    close(fd);
    return left;
}

int ltr_leftover_temps(const char *dest, void (*each)(const char *path, const struct stat *st, void *arg),
                       void *arg)
{
    const char *slash = strrchr(dest, '/'), *base = slash ? slash + 1 : dest;
    int prefix = (int)(base - dest); /* dest's directory, with its '/' */
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", prefix ? prefix : 1, prefix ? dest : ".");
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    int n = 0;
    struct dirent *e;
    struct stat st;
    while ((e = readdir(d)) != NULL) {
        if (!temp_of(e->d_name, base) || !left_over(dirfd(d), e->d_name, &st))
            continue;
        char path[4400];
        snprintf(path, sizeof path, "%.*s%s", prefix, dest, e->d_name);
        each(path, &st, arg);
        n++;
    }
    closedir(d);
    return n;
}

/* What lstat and stat say of path, as a word for the messages. */
static const char *kind_of(mode_t m)
{
    return S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" : S_ISFIFO(m) ? "a FIFO"
         : S_ISSOCK(m) ? "a socket" : S_ISDIR(m) ? "a directory" : "not a regular file";
}

int ltr_replaceable(const char *path, ltr_error *err)
{
    struct stat st, to;
    if (lstat(path, &st) != 0 || S_ISREG(st.st_mode))
        return 0;
    if (S_ISLNK(st.st_mode) && (stat(path, &to) != 0 || S_ISREG(to.st_mode)))
        return 0; /* replaced, not followed: dangling, or to a file */
    bool link = S_ISLNK(st.st_mode);
    return ltr_fail(err, EPERM, "%s is %s%s: --force replaces a file (or a symbolic link to one), never "
                    "this%s", path, link ? "a symbolic link to " : "", kind_of(link ? to.st_mode : st.st_mode),
                    link ? " (standard output is '-' where a command takes it)" : "");
}

int ltr_publish(const char *tmp, const char *dest, bool replace)
{
    /* a symlink at dest is replaced, not followed; a device, FIFO or
     * socket, or a link to one, is not replaced at all: as root,
     * '-o /dev/null --force' made /dev/null a file of root's, mode 0600,
     * and '/dev/stdout' one no longer pointing at anyone's output */
    ltr_error ignored;
    if (replace && ltr_replaceable(dest, &ignored) != 0)
        return -EPERM;
    if (replace)
        return rename(tmp, dest) == 0 ? 0 : -errno;
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dest, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -errno;
    /* A filesystem without RENAME_NOREPLACE: link() never replaces either. */
    if (link(tmp, dest) != 0)
        return -errno;
    unlink(tmp);
    return 0;
}

bool ltr_path_taken(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

int ltr_fail_exists(ltr_error *err, const char *path)
{
    return ltr_fail(err, EEXIST, "%s already exists: it was not overwritten (--force replaces it)", path);
}

int ltr_absolute_path(const char *path, char *out, size_t size, ltr_error *err)
{
    if (!*path)
        return ltr_fail(err, EINVAL, "the file name is empty");
    char cwd[4096];
    if (path[0] != '/' && !getcwd(cwd, sizeof cwd))
        return ltr_fail(err, errno, "cannot tell the current directory");
    int n = path[0] == '/' ? snprintf(out, size, "%s", path) : snprintf(out, size, "%s/%s", cwd, path);
    if (n < 0 || (size_t)n >= size)
        return ltr_fail(err, ENAMETOOLONG, "%s: path too long", path);
    return 0;
}

int ltr_write_new_file(const char *path, bool replace, int (*write)(FILE *f, void *arg), void *arg,
                       ltr_error *err)
{
    char tmp[4200];
    if (ltr_temp_name(tmp, sizeof tmp, path) < 0)
        return ltr_fail(err, ENAMETOOLONG, "%s: path too long", path);
    int fd = ltr_create_temp(tmp);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "wb");
    if (!f) {
        int e = fd < 0 ? -fd : errno;
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        return ltr_fail(err, e, "cannot create %s: %s", path, strerror(e));
    }
    /* The writers say -EIO for any failed write to f; the call that failed
     * left its reason in errno, and "Input/output error" for a full disk
     * sent users looking for a broken one. */
    errno = 0;
    int rc = write(f, arg);
    if (rc == -EIO && errno && errno != EIO)
        rc = -errno;
    if (fclose(f) != 0 && rc >= 0)
        rc = errno ? -errno : -EIO;
    if (rc >= 0)
        rc = ltr_publish(tmp, path, replace);
    if (rc < 0)
        unlink(tmp);
    if (rc == -EEXIST)
        return ltr_fail_exists(err, path);
    if (rc < 0)
        return ltr_fail(err, -rc, "writing %s failed: %s", path, strerror(-rc));
    return 0;
}

int ltr_open_regular(const char *path)
{
    /* O_PATH runs no driver's open and does not wait on a FIFO; only a
     * regular file is then opened for reading, through /proc/self/fd: the
     * inode just checked, whatever the name points to by then. */
    int pfd = open(path, O_PATH | O_CLOEXEC);
    if (pfd < 0)
        return -errno;
    struct stat st;
    if (fstat(pfd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(pfd);
        return -EINVAL;
    }
    char again[64];
    snprintf(again, sizeof again, "/proc/self/fd/%d", pfd);
    int fd = open(again, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    int e = errno;
    close(pfd);
    return fd < 0 ? -e : fd;
}

/* ---- what root runs or copies into every process: root's alone ---------- */

enum roots_alone_verdict { ROOTS_ALONE, WRITE_BITS, NOT_ROOTS, STICKY, WRONG_TYPE };

/* One component against the rule: the file (last) or a directory on its way. */
static enum roots_alone_verdict roots_alone_one(const struct stat *st, bool last)
{
    if (last ? !S_ISREG(st->st_mode) : !S_ISDIR(st->st_mode))
        return WRONG_TYPE;
    if (st->st_uid != 0)
        return NOT_ROOTS;
    if (S_ISDIR(st->st_mode) && (st->st_mode & S_IWOTH) && (st->st_mode & S_ISVTX))
        return STICKY;
    return st->st_mode & (S_IWGRP | S_IWOTH) ? WRITE_BITS : ROOTS_ALONE;
}

/* Why a component that no chmod fixes fails, and the way out. */
static int refuse_component(const struct stat *st, const char *comp, enum roots_alone_verdict v, ltr_error *err)
{
    char who[64];
    if (v == NOT_ROOTS)
        return ltr_fail(err, EPERM, "%s belongs to %s, not root: %s could replace what is there; it must be "
                        "somewhere only root can write", comp, ltr_user_name(st->st_uid, who, sizeof who), who);
    if (v == STICKY)
        return ltr_fail(err, EPERM, "%s is a directory every user may write (sticky, mode %04o, like /tmp): "
                        "once root's file there is gone (a reboot, tmp cleaning) anyone may put theirs at its "
                        "name; it must be somewhere only root can write", comp, (unsigned)(st->st_mode & 07777));
    return ltr_fail(err, EPERM, "%s is %s", comp,
                    S_ISLNK(st->st_mode) ? "a symlink now: it changed while it was checked"
                    : S_ISDIR(st->st_mode) ? "a directory, not a regular file" : "not a regular file");
}

/* Why components whose write bits alone stand in the way fail (list: all
 * of them, first: the first one's stat), and the chmod that leaves them to
 * root alone; on Debian with /etc/staff-group-for-usr-local (/usr/local
 * writable by group staff, whose members are root-equivalent by Debian's
 * own base-passwd documentation), also that file to remove, or base-files
 * makes /usr/local's directories group-writable again when installed. */
static int refuse_writable(const struct stat *first, const char *list, ltr_error *err)
{
    char group[64], who[128];
    const struct group *g = getgrgid(first->st_gid);
    if (g)
        snprintf(group, sizeof group, "%s", g->gr_name);
    else
        snprintf(group, sizeof group, "gid %u", (unsigned)first->st_gid);
    bool staff = g && !strcmp(g->gr_name, "staff") && access("/etc/staff-group-for-usr-local", F_OK) == 0;
    if (first->st_mode & S_IWGRP)
        snprintf(who, sizeof who, "the members of group %s%s", group,
                 first->st_mode & S_IWOTH ? " and every user" : "");
    else
        snprintf(who, sizeof who, "every user");
    return ltr_fail(err, EPERM, "%s may be written by %s, not by root alone, who could replace what is there; "
                    "to leave it to root alone: chmod go-w %s%s", list, who, list,
                    staff ? "; rm /etc/staff-group-for-usr-local (while it exists, Debian's base-files makes "
                            "/usr/local's directories writable by group staff)" : "");
}

int ltr_open_roots_alone(const char *path, ltr_error *err)
{
    char real[PATH_MAX], list[400] = "";
    if (!realpath(path, real))
        return ltr_fail(err, errno, "cannot find %s: %s", path, strerror(errno));
    size_t n = strlen(real); /* canonical: no "//", no "..", no symlink, no '/' at the end */
    struct stat st, first = {0};
    int fd = -1;
    /* "/", then real up to each later '/', then all of it: each opened from
     * the one before without following a symlink, and checked as opened */
    for (size_t i = 0; i <= n; i++) {
        if (i && i < n && real[i] != '/')
            continue;
        char comp[PATH_MAX];
        snprintf(comp, sizeof comp, "%.*s", i ? (int)i : 1, real);
        int next = !i ? open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)
                      : openat(fd, strrchr(comp, '/') + 1, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        if (fd >= 0)
            close(fd);
        if ((fd = next) < 0 || fstat(fd, &st) != 0) {
            e = fd < 0 ? e : errno;
            if (fd >= 0)
                close(fd);
            return ltr_fail(err, e, "cannot check %s: %s", comp, strerror(e));
        }
        enum roots_alone_verdict v = roots_alone_one(&st, i == n);
        if (v != ROOTS_ALONE && v != WRITE_BITS) {
            close(fd);
            return refuse_component(&st, comp, v, err);
        }
        size_t used = strlen(list), len = strlen(comp);
        if (v == WRITE_BITS && !used)
            first = st;
        if (v == WRITE_BITS && used + 1 + len + sizeof " ..." <= sizeof list) {
            if (used)
                list[used++] = ' ';
            memcpy(list + used, comp, len + 1);
        } else if (v == WRITE_BITS && !strstr(list, " ...")) { /* too many to list: the first ones */
            memcpy(list + used, " ...", sizeof " ...");
        }
    }
    if (list[0]) {
        close(fd);
        return refuse_writable(&first, list, err);
    }
    char again[64];
    snprintf(again, sizeof again, "/proc/self/fd/%d", fd);
    int rfd = ltr_open_regular(again); /* the inode just checked, whatever the name leads to now */
    close(fd);
    return rfd >= 0 ? rfd : ltr_fail(err, -rfd, "cannot open %s: %s", real, strerror(-rfd));
}
