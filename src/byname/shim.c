/*
 * byname/shim.c — libltr-byname.so, the shim that /etc/ld.so.preload loads
 * into every new dynamically linked process while `ltr heaptracingconfig`
 * has a name enabled. Its constructor reads the root-owned names file and
 * the process's executable name, and loads the heap agent (dormant until a
 * session enables it) only on a match. Everything else pays a library
 * mapping and five system calls (docs/benchmarks.md).
 *
 * It runs in every process, setuid ones included, so it trusts nothing: no
 * environment variable is read, a secure-execution process (AT_SECURE) is
 * left alone, the names file must be a regular root-owned file that no one
 * else can write and of bounded size, reads are bounded, errno is kept, and
 * nothing is ever printed: a failure means only that the agent is not
 * loaded. It also takes little of the stack it runs on, every process's:
 * it read the whole names file and the executable's path into 20.7 KB of
 * it, and under a stack limit of 12 to 24 KB (ulimit -s), where /bin/true
 * and sh run, every process of the machine died of SIGSEGV at its start.
 */
#include "byname/byname.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

/* A piece of the names file: room for a whole line of the longest name and
 * some more, so that a usual file (a few names) is one read. */
#define PIECE (LTR_BYNAME_NAME_MAX + 1 + 512)

/* Whether the size bytes of fd (at most) list exe, read a piece at a time:
 * whole lines are matched, a line cut at a piece's end waits for the next,
 * and one longer than a piece (no name is) is passed over. */
static bool scan(int fd, size_t size, const char *exe)
{
    char buf[PIECE];
    size_t have = 0;
    bool in_long_line = false;
    while (size) {
        ssize_t n = read(fd, buf + have, size < PIECE - have ? size : PIECE - have);
        if (n <= 0)
            break;
        size -= (size_t)n;
        have += (size_t)n;
        const char *end = memrchr(buf, '\n', have), *from = buf;
        if (!end) {
            in_long_line |= have == PIECE;
            have = have == PIECE ? 0 : have;
            continue;
        }
        if (in_long_line)
            from = (const char *)memchr(buf, '\n', have) + 1, in_long_line = false;
        if (end >= from && ltr_byname_match(from, (size_t)(end - from), exe))
            return true;
        have -= (size_t)(end + 1 - buf);
        memmove(buf, end + 1, have);
    }
    return have && !in_long_line && ltr_byname_match(buf, have, exe);
}

/* Whether the names file, if it can be trusted, lists exe. */
static bool listed(const char *exe)
{
    int fd = open(LTR_BYNAME_NAMES, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return false;
    struct stat st;
    bool yes = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && !(st.st_mode & 022) &&
               st.st_size > 0 && (size_t)st.st_size <= LTR_BYNAME_FILE_MAX && scan(fd, (size_t)st.st_size, exe);
    close(fd);
    return yes;
}

/* The last part of this process's executable's path, or NULL. A path longer
 * than the stack's buffer (rare) is read into a static one. */
static const char *exe_name(char *path, size_t size)
{
    static char long_path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, size);
    if (n >= (ssize_t)size) {
        path = long_path;
        n = readlink("/proc/self/exe", path, sizeof long_path - 1);
    }
    if (n <= 0 || n >= PATH_MAX)
        return NULL;
    path[n] = 0;
    const char *base = strrchr(path, '/');
    return base ? base + 1 : path;
}

__attribute__((constructor)) static void ltr_byname_shim(void)
{
    if (getauxval(AT_SECURE))
        return;
    int saved = errno;
    char path[512];
    const char *exe = exe_name(path, sizeof path);
    if (exe && listed(exe)) {
        /* RTLD_NODELETE: the agent's hooks stay valid for the process's life. */
        if (!dlopen(LTR_BYNAME_AGENT, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE))
            (void)dlerror();
    }
    errno = saved;
}
