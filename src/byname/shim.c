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
 * loaded.
 */
#include "byname/byname.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

/* The names file's text, or 0 if it cannot be trusted. */
static ssize_t read_names(char *buf, size_t size)
{
    int fd = open(LTR_BYNAME_NAMES, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return 0;
    struct stat st;
    ssize_t n = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && !(st.st_mode & 022) &&
        st.st_size > 0 && (size_t)st.st_size <= size)
        n = read(fd, buf, size);
    close(fd);
    return n > 0 ? n : 0;
}

static bool exe_listed(const char *names, size_t len)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return false;
    exe[n] = 0;
    const char *base = strrchr(exe, '/');
    return ltr_byname_match(names, len, base ? base + 1 : exe);
}

__attribute__((constructor)) static void ltr_byname_shim(void)
{
    if (getauxval(AT_SECURE))
        return;
    int saved = errno;
    char names[LTR_BYNAME_FILE_MAX];
    ssize_t len = read_names(names, sizeof names);
    if (len > 0 && exe_listed(names, (size_t)len)) {
        /* RTLD_NODELETE: the agent's hooks stay valid for the process's life. */
        if (!dlopen(LTR_BYNAME_AGENT, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE))
            (void)dlerror();
    }
    errno = saved;
}
