/*
 * prim/files.c — creating and publishing the files ltr writes (traces, their
 * temporaries, exports). ltr often runs as root and writes where other users
 * can write too (/tmp, shared directories): a file is therefore only ever
 * created new (never through a symlink, never reusing what someone planted),
 * temporaries get unpredictable names, and a finished file takes its final
 * name without replacing what is there unless the user said --force.
 */
#include "prim/prim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    return fd < 0 ? -errno : fd;
}

int ltr_temp_name(char *out, size_t size, const char *dest)
{
    return snprintf(out, size, "%s.XXXXXX.part", dest) >= (int)size ? -ENAMETOOLONG : 0;
}

int ltr_publish(const char *tmp, const char *dest, bool replace)
{
    if (replace) /* a symlink at dest is replaced, not followed */
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
    int rc = write(f, arg);
    if (fclose(f) != 0 && rc >= 0)
        rc = -EIO;
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
