/*
 * agent/procmaps.c — the process's own mappings as the kernel lists them
 * (procmaps.h). Runs inside the loader's lock (dl_iterate_phdr callbacks)
 * and the agent's: system calls and the real allocator only.
 */
#include "agent/procmaps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void procmaps_each(int fd, procmaps_line_fn fn, void *ctx)
{
    char buf[8192];
    size_t have = 0;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
        if (n <= 0)
            return;
        have += (size_t)n;
        buf[have] = 0;
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n'))) {
            *nl = 0;
            /* "lo-hi perms offset dev inode   name" */
            char *end, *name = line;
            uintptr_t lo = strtoull(line, &end, 16), hi = strtoull(end + 1, &end, 16);
            const char *perms = end + 1;
            for (int field = 0; field < 5 && *name; field++) { /* past the range, perms, offset, dev, inode */
                name = strchr(name, ' ');
                name = name ? name + 1 : line + strlen(line);
            }
            while (*name == ' ')
                name++;
            if (!fn(lo, hi, perms, name, ctx))
                return;
            line = nl + 1;
        }
        have -= (size_t)(line - buf);
        if (have == sizeof buf - 1) /* a line longer than the buffer: not a path we could use */
            have = 0;
        memmove(buf, line, have);
    }
}

typedef struct name_at {
    uintptr_t addr;
    char *name;
} name_at;

static bool take_name(uintptr_t lo, uintptr_t hi, const char *perms, const char *name, void *ctx)
{
    (void)perms;
    name_at *w = ctx;
    if (w->addr < lo || w->addr >= hi)
        return true;
    w->name = strdup(name);
    return false;
}

/* The name of the file mapped at addr, malloc'd (NULL: none known). Read
 * from the file, not asked by PROCMAP_QUERY: an object named by a relative
 * path is rare, and an ioctl a seccomp filter does not know may kill the
 * process (the late agent's sweep takes that risk for its speed beside
 * hundreds of libraries; this has no such need). */
static char *file_at(uintptr_t addr)
{
    int saved = errno;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    name_at w = {.addr = addr};
    if (fd >= 0) {
        procmaps_each(fd, take_name, &w);
        close(fd);
    }
    errno = saved;
    return w.name;
}

char *procmaps_object_path(const struct dl_phdr_info *info)
{
    const char *name = info->dlpi_name;
    if (!name || !name[0])
        return NULL;
    /* absolute, or no path at all (the vDSO's "linux-vdso.so.1": no file
     * to find, and reading the maps for it at every look cost each process
     * about 0.27 ms: a shell loop of 200 commands recorded 10 % slower) */
    if (name[0] == '/' || !strchr(name, '/'))
        return strdup(name);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        char *file = file_at(info->dlpi_addr + ph->p_vaddr);
        size_t n = file ? strlen(file) : 0;
        static const char deleted[] = " (deleted)";
        if (file && file[0] == '/' && !(n >= sizeof deleted - 1 && !strcmp(file + n - (sizeof deleted - 1), deleted)))
            return file;
        free(file);
        break;
    }
    return strdup(name); /* as the loader has it: better than nothing */
}
