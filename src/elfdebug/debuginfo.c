/*
 * elfdebug/debuginfo.c — the find_debuginfo callback ltr gives libdwfl (the
 * symbolizer, symbols/dwarf.c, and the CPU samples' unwinder, system/cpu.c):
 * elfutils' standard lookup of a module's separate debug file, done here
 * step by step so that no name a traced program or another user can
 * change is opened unless it is a regular file, and without its last step
 * when there is nothing for that step to do.
 *
 * elfutils 0.188's dwfl_standard_find_debuginfo (libdwfl/find-debuginfo.c)
 * tries in turn: (1) the build-id under each absolute debug directory
 * (dwfl_build_id_find_debuginfo); (2) the .gnu_debuglink name, or FILE.debug
 * and FILE when there is none, in the places each debug path entry names;
 * (3) the same for the file's real path; (4) when all failed, debuginfod.
 *
 * Why (2) and (3) are ours. Their places are beside the module and under
 * it (.debug/), where whoever owns the module's directory (a traced
 * program, as another user than root) puts what it likes, and libdwfl
 * opens each name with a blocking open(O_RDONLY). A FIFO there, or a
 * symlink to one, left root's `ltr analyze` of the trace (and the
 * recorder's CPU sampler) waiting in open() for good; a symlink to a device
 * runs its driver's open (/dev/watchdog arms). A check by name first (a
 * stat() here, then libdwfl's open) only narrowed that to a race: the
 * review's LD_PRELOAD swapped the file for a FIFO right after the stat, and
 * the analysis hung. So here every candidate is opened by
 * ltr_open_regular (O_PATH, fstat, then the inode checked is opened
 * O_NONBLOCK: a swap afterwards changes nothing) and checked as libdwfl's
 * validate checks it: the build-id when the module has one (for a dwz
 * alternate file the one its DWARF names), else the debuglink CRC where the
 * path entry asks for it ('+'/'-'); the module's own file is passed over.
 * The candidates and their order are find_debuginfo_in_path's (try_open,
 * explore_dir, the .dwz directory for an alternate file), so the file found
 * and the name returned are those the standard callback returns for
 * regular files; a FIFO, a device or a directory fails the checks (libdwfl
 * opens a directory and rejects it; the others it waited on or opened).
 *
 * Why (1) is ours too. It looks only at DIR/.build-id/xx/yyyy.debug under
 * the absolute debug directories, but those are /usr/lib/debug or what
 * --debug-dir names, and a --debug-dir may be a directory another user
 * writes (a shared build tree, a colleague's symbol store): libdwfl opens
 * the name with a blocking open() too, so a FIFO there (or a symlink to
 * one) hung root's `ltr analyze --debug-dir` in open() for good, and a
 * device ran its driver's open. So step (1) is libdwfl's
 * __libdwfl_open_by_build_id with dwfl_build_id_find_debuginfo's check
 * (by_build_id): the same candidates in the same order, each opened by
 * ltr_open_regular and its build-id checked (the module's, or for a dwz
 * alternate file the one the DWARF names). Where libdwfl ends the step at
 * the first name it could open, valid or not, a name that is not a regular
 * file with that build-id is passed over here for the next directory (what
 * a writable --debug-dir holds cannot hide /usr/lib/debug's file), and a
 * candidate that fails to open otherwise than by not being there (EACCES)
 * does not end the whole lookup as libdwfl's errno then did: steps (2) and
 * (3) still run. For files that are there and valid, the file found and the
 * name returned are libdwfl's (tests/symbols/test_debuginfo compares them,
 * libc6-dbg's among them).
 *
 * (4), when DEBUGINFOD_URLS is set, asks the debuginfod client as libdwfl
 * does (__libdwfl_debuginfod_find_debuginfo: libdebuginfod.so.1 dlopened
 * once, debuginfod_find_debuginfo with the build-id of step (1)), but not
 * through the standard callback, whose own step (1) would open the same
 * names again with its blocking open() (a system that sets DEBUGINFOD_URLS
 * for every login, as Debian's libdebuginfod-common can, sets it for root).
 *
 * Why (4) is skipped otherwise. The first use of (4) dlopens
 * libdebuginfod.so.1, which loads some 30 libraries (libcurl-gnutls,
 * gnutls, krb5, ldap...) and runs their constructors, though with
 * DEBUGINFOD_URLS unset or empty the client then answers -ENOSYS at once,
 * without reading even its cache (debuginfod/debuginfod-client.c,
 * debuginfod_query_server). That dlopen was 4.5 ms of every analysis of a
 * trace naming a module with no debug file here (`perf stat -r 30`: dlopen
 * of libdebuginfod.so.1 alone 5.3 ms, of nothing 0.7 ms). Without it
 * (`paired timing -n 20 --vs "OLD/bin/ltr analyze --format json T" --
 * NEW/bin/ltr analyze --format json T`, Release, 2 cores, medians): T = a
 * trace of GCC's cc1plus, CPU 0.242 s against 0.247 s (pairwise ratio
 * 0.975), wall 0.173 s against 0.176 s, peak 87.3 MiB against 94.2; T =
 * heap-workload's with --local-symbols (three modules, no debug file), CPU
 * 71 ms against 78 (0.888), peak 32.3 MiB against 39.8. libdw has no
 * switch for (4): with debuginfod not configured, when (1) to (3) found
 * nothing this answers "none" itself, as the standard callback would have
 * after asking the client.
 *
 * dbg_file_by_name_here, symbols.c's check whether to open a module at all,
 * only stat()s the same places (a superset of the candidates, nothing
 * opened).
 */
#include "elfdebug/debuginfo.h"
#include "prim/prim.h"

#include <dlfcn.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <libelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* elfutils' DEFAULT_DEBUGINFO_PATH (libdwfl/libdwflP.h), used when a Dwfl's
 * debuginfo_path is NULL */
#define DEFAULT_DEBUG_PATH ":.debug:/usr/lib/debug"

bool dbg_debuginfod_configured(void)
{
    const char *urls = getenv("DEBUGINFOD_URLS");
    return urls && *urls;
}

/* ---- Whether a file is there (symbols.c's check before opening a module) */

/* dir/sub/name (sub may be NULL) is a file the lookup below may take: a
 * regular file, not the module's own, or a name that fails otherwise than
 * ENOENT and ENOTDIR (the lookup stops at those). stat() only: nothing is
 * opened here. */
static bool is_there(const struct stat *self, const char *dir, const char *sub, const char *name)
{
    char p[PATH_MAX];
    int n = snprintf(p, sizeof p, "%s/%s%s%s", dir, sub ? sub : "", sub ? "/" : "", name);
    if (n < 0 || n >= (int)sizeof p)
        return true; /* cannot tell: the lookup looks */
    struct stat st;
    if (stat(p, &st) != 0)
        return errno != ENOENT && errno != ENOTDIR;
    return S_ISREG(st.st_mode) && (st.st_dev != self->st_dev || st.st_ino != self->st_ino);
}

/* The names looked for in each place: the debuglink (or FILE.debug), its
 * last component (a dwz alternate file's name under an absolute entry) and,
 * with no debuglink, FILE itself. */
typedef struct wanted {
    const char *name[3];
    size_t n;
    const char *last; /* the debuglink's last component */
    const struct stat *self;
} wanted;

/* dir/sub, dir/each tail of sub after a '/', and dir itself: the lookup
 * follows that chain when a name is not in a place, and looks for a dwz
 * alternate file in dir/.dwz. */
static bool in_tree(wanted *w, const char *dir, const char *sub)
{
    for (const char *s = sub;; s = strchr(s, '/') ? strchr(s, '/') + 1 : NULL) {
        for (size_t i = 0; i < w->n; i++)
            if (is_there(w->self, dir, s, w->name[i]))
                return true;
        if (!s)
            return is_there(w->self, dir, ".dwz", w->last);
    }
}

/* Whether steps (2) and (3) might find a file for file_name: the places of
 * each debug_path entry ("" the file's directory, a relative entry under
 * it, an absolute one with the file's directory under it; a leading '+' or
 * '-' says whether to check CRCs). */
static bool by_name_here(const char *file_name, const char *debuglink, const char *debug_path,
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
        if (there)
            return true;
        if (!p[n])
            return false;
        p += n + 1;
    }
}

int dbg_file_by_name_here(const char *file_name, const char *debuglink, const char *debug_path)
{
    struct stat self;
    if (stat(file_name, &self) != 0)
        self = (struct stat){0};
    if (by_name_here(file_name, debuglink, debug_path, &self))
        return DBG_HERE;
    char *real = realpath(file_name, NULL);
    bool here = real && strcmp(real, file_name) && by_name_here(real, debuglink, debug_path, &self);
    free(real);
    return here ? DBG_HERE : DBG_NONE;
}

/* ---- Steps (2) and (3): the lookup by name, done here ------------------ */

/* What a candidate must be. */
typedef struct lookup {
    struct stat self;        /* the module's own file: passed over (try_open) */
    const void *id;          /* the build-id it must have, or NULL: then the CRC */
    int id_len;
    bool alt;                /* a dwz alternate file: its name is needed, its build-id checked */
    GElf_Word crc;           /* the .gnu_debuglink CRC, 0 for none */
} lookup;

#define NOT_REGULAR (-2) /* try_open: there, but not a regular file */

/* libdwfl's try_open: [dir/][sub/]name, its name in *fname (malloc'd) and
 * the fd, opened only if a regular file (ltr_open_regular: no FIFO's
 * blocking open, no device's). -1 with errno when it is not there (ENOENT,
 * ENOTDIR, the module's own file) or cannot be opened; NOT_REGULAR for a
 * FIFO, a device or a directory, which libdwfl opens and we take as a file
 * that fails the checks. */
static int try_open(const lookup *l, const char *dir, const char *sub, const char *name, char **fname)
{
    char *f;
    if (!dir && !sub)
        f = strdup(name);
    else if ((!sub ? asprintf(&f, "%s/%s", dir, name)
              : !dir ? asprintf(&f, "%s/%s", sub, name)
              : asprintf(&f, "%s/%s/%s", dir, sub, name)) < 0)
        f = NULL;
    if (!f) {
        errno = ENOMEM;
        return -1;
    }
    int fd = ltr_open_regular(f);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_ino == l->self.st_ino && st.st_dev == l->self.st_dev) {
        close(fd); /* the module's file by another name */
        fd = -ENOENT;
    }
    if (fd < 0) {
        free(f);
        if (fd == -EINVAL)
            return NOT_REGULAR;
        errno = -fd;
        return -1;
    }
    *fname = f;
    return fd;
}

/* The CRC-32 of .gnu_debuglink (zlib's, elfutils' __libdwfl_crc32_file) of
 * the whole file; false when it cannot be read. */
static uint32_t crc_table[256];

static void make_crc_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

static bool file_crc(int fd, uint32_t *crc)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT; /* the symbolizer's threads */
    pthread_once(&once, make_crc_table);
    enum { CHUNK = 65536 };
    unsigned char *buf = malloc(CHUNK); /* not on the stack of a sampler's thread */
    if (!buf)
        return false;
    uint32_t c = 0xffffffffu;
    ssize_t n;
    for (off_t at = 0; (n = pread(fd, buf, CHUNK, at)) != 0; at += n > 0 ? n : 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        for (ssize_t i = 0; i < n; i++)
            c = crc_table[(c ^ buf[i]) & 0xff] ^ (c >> 8);
    }
    free(buf);
    *crc = c ^ 0xffffffffu;
    return n == 0;
}

/* libdwfl's validate: with a build-id to match, only that (a dwz alternate
 * file always has one: find_debug_altlink asks only then); else the CRC
 * when the entry checks it. */
static bool valid(const lookup *l, int fd, bool check)
{
    if (l->id || l->alt) {
        Elf *elf = l->id ? dwelf_elf_begin(fd) : NULL;
        const void *bits;
        ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, &bits) : -1;
        bool ok = n > 0 && n == l->id_len && !memcmp(bits, l->id, (size_t)n);
        if (elf)
            elf_end(elf);
        return ok;
    }
    uint32_t crc;
    return !check || (file_crc(fd, &crc) && crc == l->crc);
}

/* libdwfl's find_debuginfo_in_path, each candidate opened by try_open above:
 * the fd of the first valid one and its name in *found, or -1 with errno 0
 * when none is (errno set: a candidate could not be opened for another
 * reason than not being there, which ends the lookup by name, as there). */
/* The names in_path looks for: the module's directory and last
 * component, and the debug file's name (the debuglink, or FILE.debug for
 * a module without one). */
typedef struct names {
    const char *dirname, *base, *debuglink, *link_last;
    bool link_null;
} names;

/* One debug path entry P: its candidates in find_debuginfo_in_path's
 * order. Returns a descriptor, NOT_REGULAR (look no further in P), or -1:
 * with errno ENOENT or ENOTDIR when P holds none, any other errno is a
 * failure in_path reports. */
static int in_entry(const lookup *l, const char *p, const names *n, char **fname)
{
    const char *dir = n->dirname, *sub = NULL, *file = n->debuglink;
    bool try_base = n->link_null;
    if (!p[0]) {
        try_base = false; /* the file's own directory: FILE is the module */
    } else if (p[0] == '/') {
        /* under an absolute entry, the file's absolute directory and
         * each tail of it, then the entry itself; a dwz alternate file
         * by its last component */
        if (!l->alt && (!n->dirname || n->dirname[0] != '/'))
            return errno = ENOENT, -1;
        dir = p;
        if (l->alt)
            file = n->link_last;
        else if (!*(sub = n->dirname + 1))
            return errno = ENOENT, -1;
    } else {
        sub = p; /* relative: under the file's directory */
    }
    for (;;) {
        int fd = try_open(l, dir, sub, file, fname);
        if (fd == -1 && try_base)
            fd = try_open(l, dir, sub, n->base, fname);
        if (fd != -1 || (errno != ENOENT && errno != ENOTDIR))
            return fd;
        if (l->alt && (!p[0] || p[0] == '/'))
            return try_open(l, dir, ".dwz", strrchr(file, '/') ? strrchr(file, '/') + 1 : file, fname);
        if (l->alt || !sub)
            return -1;
        sub = strchr(sub, '/') ? strchr(sub, '/') + 1 : NULL; /* one directory less */
        if (sub && !*sub)
            return -1;
    }
}

static int in_path(const lookup *l, const char *file_name, const char *debuglink, const char *debug_path,
                   char **found)
{
    bool cancheck = l->crc != 0;
    const char *slash = file_name ? strrchr(file_name, '/') : NULL;
    names n = {.base = slash ? slash + 1 : file_name, .link_null = !debuglink};
    char *invented = NULL, *dirname = NULL, *path = NULL;
    int fd = -1;
    if (n.link_null) {
        /* a dwz alternate file needs its name; a debug file may be FILE.debug */
        if (!n.base || l->alt) {
            errno = 0;
            return -1;
        }
        if (asprintf(&invented, "%s.debug", n.base) < 0) {
            errno = ENOMEM;
            return -1;
        }
        debuglink = invented;
        cancheck = false;
    }
    bool defcheck = true;
    if (debug_path[0] == '-' || debug_path[0] == '+')
        defcheck = *debug_path++ == '+';
    path = strdup(debug_path);
    dirname = slash ? strndup(file_name, (size_t)(slash - file_name)) : NULL;
    if (!path || (slash && !dirname)) {
        errno = ENOMEM;
        goto out;
    }
    n.dirname = dirname;
    n.debuglink = debuglink;
    n.link_last = strrchr(debuglink, '/') ? strrchr(debuglink, '/') + 1 : debuglink;
    for (char *rest = path, *p; (p = strsep(&rest, ":"));) {
        bool check = defcheck;
        if (*p == '+' || *p == '-')
            check = *p++ == '+';
        char *fname = NULL;
        fd = in_entry(l, p, &n, &fname);
        if (fd == -1 && errno != ENOENT && errno != ENOTDIR)
            goto out;
        if (fd >= 0 && valid(l, fd, check && cancheck)) {
            *found = fname;
            goto out;
        }
        if (fd >= 0)
            close(fd);
        free(fname);
        fd = -1;
    }
    errno = 0; /* nothing found */
out:;
    int e = errno;
    free(invented);
    free(dirname);
    free(path);
    errno = e;
    return fd;
}

/* What mod's debug file (or, once its DWARF is open, its dwz alternate
 * file) must be, as libdwfl checks it: its build-id, the debuglink's CRC,
 * not the module's own file. */
static void lookup_of(Dwfl_Module *mod, const char *file_name, GElf_Word crc, lookup *out)
{
    lookup l = {.crc = crc};
    const unsigned char *bits;
    GElf_Addr vaddr;
    Dwarf_Addr dwbias;
    const char *main_file = NULL;
    dwfl_module_info(mod, NULL, NULL, NULL, &dwbias, NULL, &main_file, NULL);
    /* libdwfl asks for a dwz alternate file once the DWARF is open: the
     * debug file's, or the module's own (mod->dw; dwbias is -1 until one
     * of them is open) */
    l.alt = dwbias != (Dwarf_Addr)-1;
    if (l.alt) {
        Dwarf_Addr bias;
        Dwarf *dw = dwfl_module_getdwarf(mod, &bias); /* open already: nothing looked up */
        const char *altname;
        ssize_t n = dw ? dwelf_dwarf_gnu_debugaltlink(dw, &altname, &l.id) : -1;
        l.id_len = n > 0 ? (int)n : 0;
        if (n <= 0)
            l.id = NULL;
    } else if ((l.id_len = dwfl_module_build_id(mod, &bits, &vaddr)) > 0) {
        l.id = bits;
    } else {
        l.id_len = 0;
    }
    /* libdwfl compares with the module's open file (mod->main.fd), which a
     * callback cannot see: its name is the next best */
    if (!(main_file && stat(main_file, &l.self) == 0) && !(file_name && stat(file_name, &l.self) == 0))
        l.self = (struct stat){0};
    *out = l;
}

/* Step (1): libdwfl's __libdwfl_open_by_build_id (dwfl_build_id_find_elf.c)
 * and dwfl_build_id_find_debuginfo's check, each candidate opened by
 * try_open: DIR/.build-id/xx/rest.debug under each absolute entry of the
 * debug path (its '+' or '-' left out), in order, for the build-id the
 * file must have (the module's; for a dwz alternate file the one its DWARF
 * names, and none without). The first that is a regular file with that
 * build-id is taken, its name the path it was opened by as the kernel
 * resolved it (/proc/self/fd: libdwfl's realpath() of the name, without a
 * second look by name). Unlike libdwfl, which ends this step at the first
 * name it could open, whatever it was, a name that is not a regular file
 * with that build-id is passed over for the next directory: what one debug
 * directory holds (--debug-dir may name one that others write) cannot hide
 * the file a later one (/usr/lib/debug) has. -1 with errno 0 when none is. */
static int by_build_id(const lookup *l, const char *debug_path, char **found)
{
    enum { MIN_ID = 3, MAX_ID = 64 }; /* libdwfl's MIN_BUILD_ID_BYTES, MAX_BUILD_ID_BYTES */
    const unsigned char *id = l->id;
    if (!id || l->id_len < MIN_ID || l->id_len > MAX_ID) {
        errno = 0;
        return -1;
    }
    char name[sizeof ".build-id/xx/" + 2 * MAX_ID + sizeof ".debug"];
    int n = snprintf(name, sizeof name, ".build-id/%02x/", id[0]);
    for (int i = 1; i < l->id_len; i++)
        n += snprintf(name + n, sizeof name - (size_t)n, "%02x", id[i]);
    snprintf(name + n, sizeof name - (size_t)n, ".debug");
    lookup any = *l;
    any.self = (struct stat){0}; /* the module's own file is not passed over here */
    char *path = strdup(debug_path);
    if (!path) {
        errno = ENOMEM;
        return -1;
    }
    int fd = -1;
    for (char *rest = path, *dir; fd < 0 && (dir = strsep(&rest, ":"));) {
        dir += *dir == '+' || *dir == '-';
        if (dir[0] != '/') /* only absolute directories, as libdwfl */
            continue;
        char *fname = NULL;
        fd = try_open(&any, dir, NULL, name, &fname);
        if (fd >= 0 && !valid(&any, fd, false)) {
            close(fd);
            fd = -1;
        }
        if (fd < 0) {
            free(fname);
            continue;
        }
        char self[64], real[PATH_MAX];
        snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
        ssize_t k = readlink(self, real, sizeof real - 1);
        if (k > 0 && real[0] == '/') {
            real[k] = 0;
            char *copy = strdup(real);
            if (copy) {
                free(fname);
                fname = copy;
            }
        }
        *found = fname;
    }
    free(path);
    errno = 0;
    return fd < 0 ? -1 : fd;
}

/* Steps (2) and (3): file_name's debug file by name, then its real path's. */
static int by_name(const lookup *l, const char *file_name, const char *debuglink, const char *debug_path,
                   char **found)
{
    int fd = in_path(l, file_name, debuglink, debug_path, found);
    if (fd < 0 && errno == 0 && file_name) { /* a symlink's debug file may be beside its target */
        char *real = realpath(file_name, NULL);
        if (real && strcmp(real, file_name))
            fd = in_path(l, real, debuglink, debug_path, found);
        free(real);
    }
    return fd;
}

/* ---- Step (4): the debuginfod client --------------------------------- */

/* libdebuginfod's API (elfutils/debuginfod.h, not needed to build: the
 * library is dlopened, as libdwfl does, only when debuginfod is asked). */
static struct {
    debuginfod_client *(*begin)(void);
    int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int, char **);
    debuginfod_client *client; /* one for the process: not thread-safe, so under lock */
    pthread_mutex_t lock;
} dfd = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void dfd_load(void)
{
    void *so = dlopen("libdebuginfod.so.1", RTLD_LAZY);
    if (!so)
        return;
    *(void **)&dfd.begin = dlsym(so, "debuginfod_begin");
    *(void **)&dfd.find_debuginfo = dlsym(so, "debuginfod_find_debuginfo");
    dfd.client = dfd.begin && dfd.find_debuginfo ? dfd.begin() : NULL;
}

/* libdwfl's __libdwfl_debuginfod_find_debuginfo for the build-id l wants:
 * the fd of the file the client fetched (into its cache), or -1. */
static int from_debuginfod(const lookup *l)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (!l->id || l->id_len <= 0)
        return -1;
    pthread_once(&once, dfd_load);
    if (!dfd.client)
        return -1;
    pthread_mutex_lock(&dfd.lock);
    int fd = dfd.find_debuginfo(dfd.client, l->id, l->id_len, NULL);
    pthread_mutex_unlock(&dfd.lock);
    return fd >= 0 ? fd : -1;
}

int dbg_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                       const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                       char **debuginfo_file_name)
{
    if (!mod)
        return -1;
    const char *const *path = *userdata;
    const char *debug_path = path && *path ? *path : DEFAULT_DEBUG_PATH;
    const unsigned char *bits;
    GElf_Addr vaddr;
    lookup l;
    lookup_of(mod, file_name, debuglink_crc, &l);
    char *found = NULL;
    int fd = -1;
    if (dwfl_module_build_id(mod, &bits, &vaddr) > 0) /* step (1), where the standard callback runs it */
        fd = by_build_id(&l, debug_path, &found);
    if (fd < 0)
        fd = by_name(&l, file_name, debuglink_file, debug_path, &found);
    if (fd >= 0) {
        free(*debuginfo_file_name);
        *debuginfo_file_name = found;
        return fd;
    }
    errno = 0; /* found nothing, as the standard callback says it */
    return dbg_debuginfod_configured() ? from_debuginfod(&l) : -1;
}
