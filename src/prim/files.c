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
