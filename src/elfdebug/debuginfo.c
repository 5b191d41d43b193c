/*
 * elfdebug/debuginfo.c — the find_debuginfo callback ltr gives libdwfl (the
 * symbolizer, symbols/dwarf.c, and the CPU samples' unwinder, system/cpu.c):
 * elfutils' standard lookup, kept whole wherever it may find a file, but not
 * its last step when there is nothing for that step to do.
 *
 * elfutils 0.188's dwfl_standard_find_debuginfo (libdwfl/find-debuginfo.c)
 * tries in turn: (1) the build-id under each absolute debug directory
 * (dwfl_build_id_find_debuginfo); (2) the .gnu_debuglink name, or FILE.debug
 * and FILE when there is none, in the places each debug path entry names;
 * (3) the same for the file's real path; (4) when all failed, debuginfod.
 * The first use of (4) dlopens libdebuginfod.so.1, which loads some 30
 * libraries (libcurl-gnutls, gnutls, krb5, ldap...) and runs their
 * constructors, though with DEBUGINFOD_URLS unset or empty the client then
 * answers -ENOSYS at once, without reading even its cache
 * (debuginfod/debuginfod-client.c, debuginfod_query_server). That dlopen was
 * 4.5 ms of every analysis of a trace naming a module with no debug file
 * here (`perf stat -r 30`: dlopen of libdebuginfod.so.1 alone 5.3 ms, of
 * nothing 0.7 ms). Without it (`farm-bench -n 20 --vs "OLD/bin/ltr analyze
 * --format json T" -- NEW/bin/ltr analyze --format json T`, Release, 2
 * cores, medians): T = a trace of GCC's cc1plus, CPU 0.242 s against 0.247 s
 * (pairwise ratio 0.975), wall 0.173 s against 0.176 s, peak 87.3 MiB
 * against 94.2; T = heap-workload's with --local-symbols (three modules, no
 * debug file), CPU 71 ms against 78 (0.888), peak 32.3 MiB against 39.8.
 *
 * libdw has no switch for (4), and no public function for (2) and (3)
 * alone. So with debuginfod not configured this runs (1) through the public
 * dwfl_build_id_find_debuginfo and, for (2) and (3), looks only whether any
 * name they could open is there: a superset of their candidates, without
 * their checks (CRC, build-id), which stay libdwfl's. When one is there the
 * standard callback runs whole, so a file found is the one it finds and a
 * file it rejects costs the dlopen as before; when none is, it would have
 * found nothing locally and debuginfod would have answered nothing.
 */
#include "elfdebug/debuginfo.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* elfutils' DEFAULT_DEBUGINFO_PATH (libdwfl/libdwflP.h), used when a Dwfl's
 * debuginfo_path is NULL */
#define DEFAULT_DEBUG_PATH ":.debug:/usr/lib/debug"

bool dbg_debuginfod_configured(void)
{
    const char *urls = getenv("DEBUGINFOD_URLS");
    return urls && *urls;
}

/* dir/sub/name (sub may be NULL) is something libdwfl's open() of it would
 * not pass over: there and not the module's own file (try_open skips that),
 * or failing otherwise than ENOENT and ENOTDIR (it stops at those). A FIFO
 * or a device there sets *unsafe: libdwfl opens without O_NONBLOCK, and an
 * attacker review's FIFO named prog.debug beside a stripped program hung
 * root's `ltr analyze` of its trace for good. */
static bool is_there(const struct stat *self, const char *dir, const char *sub, const char *name, bool *unsafe)
{
    char p[PATH_MAX];
    int n = snprintf(p, sizeof p, "%s/%s%s%s", dir, sub ? sub : "", sub ? "/" : "", name);
    if (n < 0 || n >= (int)sizeof p)
        return true; /* cannot tell: libdwfl looks */
    struct stat st;
    if (stat(p, &st) != 0)
        return errno != ENOENT && errno != ENOTDIR;
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
        *unsafe = true;
    return st.st_dev != self->st_dev || st.st_ino != self->st_ino;
}

/* The names looked for in each place: the debuglink (or FILE.debug), its
 * last component (a dwz alternate file's name under an absolute entry) and,
 * with no debuglink, FILE itself. */
typedef struct wanted {
    const char *name[3];
    size_t n;
    const char *last; /* the debuglink's last component */
    const struct stat *self;
    bool unsafe;      /* a candidate is a FIFO or a device (is_there) */
} wanted;

/* dir/sub, dir/each tail of sub after a '/', and dir itself: libdwfl
 * follows that chain when a name is not in a place (explore_dir), and looks
 * for a dwz alternate file in dir/.dwz. */
static bool in_tree(wanted *w, const char *dir, const char *sub)
{
    for (const char *s = sub;; s = strchr(s, '/') ? strchr(s, '/') + 1 : NULL) {
        for (size_t i = 0; i < w->n; i++)
            if (is_there(w->self, dir, s, w->name[i], &w->unsafe))
                return true;
        if (!s)
            return is_there(w->self, dir, ".dwz", w->last, &w->unsafe);
    }
}

/* Whether steps (2) and (3) might find a file for file_name: the places of
 * each debug_path entry ("" the file's directory, a relative entry under
 * it, an absolute one with the file's directory under it; a leading '+' or
 * '-' says whether to check CRCs). */
static int by_name_here(const char *file_name, const char *debuglink, const char *debug_path,
                        const struct stat *self)
{
    const char *slash = strrchr(file_name, '/'), *base = slash ? slash + 1 : file_name;
    char dir[PATH_MAX], invented[NAME_MAX + sizeof ".debug"];
    if (snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - file_name) : 1, slash ? file_name : ".") >=
        (int)sizeof dir)
        return true;
    if (!debuglink && snprintf(invented, sizeof invented, "%s.debug", base) >= (int)sizeof invented)
        return true;
    const char *link = debuglink ? debuglink : invented, *link_base = strrchr(link, '/');
    wanted w = {.name = {link}, .n = 1, .last = link_base ? link_base + 1 : link, .self = self};
    if (link_base)
        w.name[w.n++] = w.last;
    if (!debuglink)
        w.name[w.n++] = base;
    const char *p = debug_path + (debug_path[0] == '+' || debug_path[0] == '-');
    for (;;) {
        p += *p == '+' || *p == '-';
        size_t n = strcspn(p, ":");
        char entry[PATH_MAX];
        if (n >= sizeof entry)
            return true;
        snprintf(entry, sizeof entry, "%.*s", (int)n, p);
        bool there = !n ? in_tree(&w, dir, NULL)
                   : entry[0] == '/' ? in_tree(&w, entry, dir + (dir[0] == '/'))
                   : in_tree(&w, dir, entry);
        if (w.unsafe)
            return DBG_UNSAFE;
        if (there)
            return DBG_HERE;
        if (!p[n])
            return DBG_NONE;
        p += n + 1;
    }
}

int dbg_file_by_name_here(const char *file_name, const char *debuglink, const char *debug_path)
{
    struct stat self;
    if (stat(file_name, &self) != 0)
        self = (struct stat){0};
    int here = by_name_here(file_name, debuglink, debug_path, &self);
    if (here != DBG_NONE)
        return here;
    char *real = realpath(file_name, NULL);
    here = real && strcmp(real, file_name) ? by_name_here(real, debuglink, debug_path, &self) : DBG_NONE;
    free(real);
    return here;
}

int dbg_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                       const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                       char **debuginfo_file_name)
{
    const char *const *path = *userdata;
    const char *debug_path = path && *path ? *path : DEFAULT_DEBUG_PATH;
    int here = file_name ? dbg_file_by_name_here(file_name, debuglink_file, debug_path) : DBG_HERE;
    if (here == DBG_UNSAFE) { /* no lookup by name at all: libdwfl would wait on it */
        errno = 0;
        return -1;
    }
    if (!dbg_debuginfod_configured()) {
        const unsigned char *bits;
        GElf_Addr vaddr;
        if (dwfl_module_build_id(mod, &bits, &vaddr) > 0) { /* step (1), as the standard callback runs it */
            int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
                                                  debuglink_crc, debuginfo_file_name);
            if (fd >= 0 || errno != 0)
                return fd;
        }
        if (here == DBG_NONE) {
            errno = 0; /* found nothing, as the standard callback says it */
            return -1;
        }
    }
    return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                                        debuginfo_file_name);
}
