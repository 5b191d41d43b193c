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
 * else can write and of bounded size, reads are bounded (a larger file is
 * not read at all), errno is kept, and
 * nothing is ever printed: a failure means only that the agent is not
 * loaded. An executable whose name ltr would refuse to enable (a space, a
 * control character, not UTF-8: ltr_byname_fault) never matches a line, so
 * that a line ltr lists as matching no process matches none. It also takes little of the stack it runs on, every process's:
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

/* Whether the names file, if it can be trusted, lists exe. */
static bool listed(const char *exe)
{
    int fd = open(LTR_BYNAME_NAMES, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return false;
    struct stat st;
    bool yes = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && !(st.st_mode & 022) &&
               st.st_size > 0 && (size_t)st.st_size <= LTR_BYNAME_FILE_MAX;
    if (yes) { /* read as ltr reads it (match.c), a piece at a time */
        char piece[LTR_BYNAME_PIECE];
        ltr_byname_want w;
        ltr_byname_want_init(&w, exe);
        yes = !w.over && ltr_byname_lines(fd, (size_t)st.st_size, piece, ltr_byname_want_line, &w) && w.found;
    }
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
