/*
 * agent/fileio.c — FileIO (Ltr.System keyword 0x20, docs/system-provider.md):
 * the files the program works on. open, open64, openat, openat64, creat,
 * creat64 and close are replaced, and read, write, pread, pwrite, readv,
 * writev (and their 64 forms) counted, like the malloc family (hooks.c;
 * redirect.c when the agent comes late). Each calls the next definition.
 *
 * An open writes a FileOpen event (the path, as /proc/self/fd names the file
 * opened, else as given; flags; the descriptor or errno). Bytes are not an
 * event per call: a read or write adds to its descriptor's counters in a
 * table (atomic adds, no lock: safe in a signal handler and on any thread),
 * and the close writes them in one FileClose. That keeps a program that
 * reads a file 4 KB at a time from writing an event per read: per call the
 * cost is the adds (docs/benchmarks.md, "FileIO"), and the trace holds two
 * events per file opened. Descriptors still open at exit have their
 * counters written by the agent's destructor; a descriptor past the table
 * (65536) writes one event per call.
 *
 * glibc's stdio (fopen, fread, fprintf) calls its internal entry points,
 * not the PLT, so its opens and bytes are not seen; nor are the agent's own
 * files, nor raw syscall(2). Built with frame pointers, as hooks.c.
 */
#include "agent/redirect.h"
#include "agent/sysev.h"
#include "base/heap_events.h"
#include "base/records.h"
#include "base/system_events.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
/* A session wants system events, and the call is not the agent's own. */
#define WANTED() (sysev_wanted() && !stacks_in_agent((uintptr_t)__builtin_return_address(0)))

static const ltr_field_desc open_fields[] = {
    {"path", LTR_TYPE_STRING}, {"flags", LTR_TYPE_UVAR}, {"mode", LTR_TYPE_UVAR},
    {"fd", LTR_TYPE_IVAR},     {"error", LTR_TYPE_UVAR}, {"function", LTR_TYPE_U8}};
static const ltr_field_desc close_fields[] = {
    {"fd", LTR_TYPE_IVAR},     {"bytes_read", LTR_TYPE_UVAR}, {"bytes_written", LTR_TYPE_UVAR},
    {"reads", LTR_TYPE_UVAR}, {"writes", LTR_TYPE_UVAR},      {"reason", LTR_TYPE_U8}};
LTR_EVENT_DEFINE(ev_open, agent_sys_provider, LTR_FILE_EV_OPEN, LTR_LEVEL_INFO, LTR_SYSKW_FILEIO, "FileOpen",
                 open_fields);
LTR_EVENT_DEFINE(ev_close, agent_sys_provider, LTR_FILE_EV_CLOSE, LTR_LEVEL_INFO, LTR_SYSKW_FILEIO, "FileClose",
                 close_fields);

/* ---- the counters ----------------------------------------------------------- */

/* Descriptors with counters: 1.5 MB of zero pages, a page touched per 170
 * descriptors used (a server with thousands of connections stays in it). */
#define FIO_FDS 65536

typedef struct fd_count {
    _Atomic uint64_t rbytes, wbytes;
    _Atomic uint32_t reads, writes;
} fd_count;

static fd_count counts[FIO_FDS];
/* The highest descriptor counted so far, -1 none: what the fork and exit
 * handlers walk. */
static _Atomic int counted_top = -1;

typedef struct close_event {
    int64_t fd;
    uint64_t rbytes, wbytes, reads, writes;
    uint8_t reason;
} close_event;

static uint32_t encode_close(const void *ctx, uint32_t stack, uint8_t *p)
{
    (void)stack;
    const close_event *e = ctx;
    size_t n = ltr_put_uvar(p, ltr_zigzag(e->fd));
    n += ltr_put_uvar(p + n, e->rbytes);
    n += ltr_put_uvar(p + n, e->wbytes);
    n += ltr_put_uvar(p + n, e->reads);
    n += ltr_put_uvar(p + n, e->writes);
    p[n++] = e->reason;
    return (uint32_t)n;
}

static void put_close(const close_event *e)
{
    sysev_emit(&ev_close, LTR_SYSKW_FILEIO, NULL, false, encode_close, e);
}

/* Takes fd's counters (zeroing them); false when there were none. */
static bool take(int fd, close_event *e)
{
    if (fd < 0 || fd >= FIO_FDS)
        return false;
    fd_count *c = &counts[fd];
    e->fd = fd;
    if (!atomic_load_explicit(&c->reads, memory_order_relaxed) &&
        !atomic_load_explicit(&c->writes, memory_order_relaxed)) { /* leaves unused pages untouched */
        e->rbytes = e->wbytes = e->reads = e->writes = 0;
        return false;
    }
    e->rbytes = atomic_exchange_explicit(&c->rbytes, 0, memory_order_relaxed);
    e->wbytes = atomic_exchange_explicit(&c->wbytes, 0, memory_order_relaxed);
    e->reads = atomic_exchange_explicit(&c->reads, 0, memory_order_relaxed);
    e->writes = atomic_exchange_explicit(&c->writes, 0, memory_order_relaxed);
    return e->reads || e->writes;
}

/* n bytes moved on fd by one call (read when rd). */
static void count(int fd, ssize_t n, bool rd)
{
    if (n < 0)
        return;
    if (fd >= 0 && fd < FIO_FDS) {
        fd_count *c = &counts[fd];
        int top = atomic_load_explicit(&counted_top, memory_order_relaxed);
        while (fd > top && !atomic_compare_exchange_weak_explicit(&counted_top, &top, fd, memory_order_relaxed,
                                                                  memory_order_relaxed)) {
        }
        atomic_fetch_add_explicit(rd ? &c->rbytes : &c->wbytes, (uint64_t)n, memory_order_relaxed);
        atomic_fetch_add_explicit(rd ? &c->reads : &c->writes, 1, memory_order_relaxed);
    } else {
        put_close(&(close_event){.fd = fd, .rbytes = rd ? (uint64_t)n : 0, .wbytes = rd ? 0 : (uint64_t)n,
                                 .reads = rd, .writes = !rd, .reason = LTR_FILE_UNTRACKED});
    }
}

/* A fork child starts with no bytes of its own. */
static void fio_after_fork(void)
{
    int top = atomic_load_explicit(&counted_top, memory_order_relaxed);
    if (top >= 0)
        memset(counts, 0, (size_t)(top + 1) * sizeof counts[0]);
}

/* Descriptors still open at exit: what they moved so far. */
__attribute__((destructor)) static void fio_at_exit(void)
{
    if (!sysev_wanted())
        return;
    int top = atomic_load_explicit(&counted_top, memory_order_relaxed);
    for (int fd = 0; fd <= top; fd++) {
        close_event e;
        if (take(fd, &e)) {
            e.reason = LTR_FILE_AT_EXIT;
            put_close(&e);
        }
    }
}

/* ---- the next definitions ---------------------------------------------------- */

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef int (*creat_fn)(const char *, mode_t);
typedef int (*close_fn)(int);
typedef ssize_t (*rw_fn)(int, void *, size_t);
typedef ssize_t (*prw_fn)(int, void *, size_t, off_t);
typedef ssize_t (*rwv_fn)(int, const struct iovec *, int);

static struct {
    open_fn open, open64;
    openat_fn openat, openat64;
    creat_fn creat, creat64;
    close_fn close;
    rw_fn read, write;
    prw_fn pread, pread64, pwrite, pwrite64;
    rwv_fn readv, writev;
} next;

__attribute__((constructor(102))) static void fio_resolve(void)
{
    next.open = (open_fn)agent_next_sym("open");
    next.open64 = (open_fn)agent_next_sym("open64");
    next.openat = (openat_fn)agent_next_sym("openat");
    next.openat64 = (openat_fn)agent_next_sym("openat64");
    next.creat = (creat_fn)agent_next_sym("creat");
    next.creat64 = (creat_fn)agent_next_sym("creat64");
    next.close = (close_fn)agent_next_sym("close");
    next.read = (rw_fn)agent_next_sym("read");
    next.write = (rw_fn)agent_next_sym("write");
    next.pread = (prw_fn)agent_next_sym("pread");
    next.pread64 = (prw_fn)agent_next_sym("pread64");
    next.pwrite = (prw_fn)agent_next_sym("pwrite");
    next.pwrite64 = (prw_fn)agent_next_sym("pwrite64");
    next.readv = (rwv_fn)agent_next_sym("readv");
    next.writev = (rwv_fn)agent_next_sym("writev");
    pthread_atfork(NULL, NULL, fio_after_fork);
}

/* Before the constructor (another library's constructor reading a file),
 * the hooks make the system calls themselves (syscall(2) sets errno). */
/* ---- opens and closes --------------------------------------------------------- */

#define PATH_KEEP 900 /* bytes of a path kept in the event (the payload is bounded) */

typedef struct open_event {
    const char *path;
    size_t len;
    uint64_t flags, mode, error;
    int64_t fd;
    uint8_t fn;
} open_event;

static uint32_t encode_open(const void *ctx, uint32_t stack, uint8_t *p)
{
    (void)stack;
    const open_event *e = ctx;
    uint16_t len = (uint16_t)(e->len < PATH_KEEP ? e->len : PATH_KEEP);
    ltr_put_u16(p, len);
    memcpy(p + 2, e->path, len);
    size_t n = 2 + len;
    n += ltr_put_uvar(p + n, e->flags);
    n += ltr_put_uvar(p + n, e->mode);
    n += ltr_put_uvar(p + n, ltr_zigzag(e->fd));
    n += ltr_put_uvar(p + n, e->error);
    p[n++] = e->fn;
    return (uint32_t)n;
}

/* What an open did: the file's name as the kernel has it when it opened
 * (relative paths and dirfd resolved), else the path given. Keeps errno. */
static void report_open(const char *path, int flags, mode_t mode, int fd, uint8_t fn)
{
    if (!sysev_kw_wanted(LTR_SYSKW_FILEIO))
        return;
    int err = errno;
    char buf[PATH_KEEP + 1];
    const char *name = path ? path : "";
    size_t len = strnlen(name, PATH_KEEP);
    if (fd >= 0) {
        char link[40];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, buf, sizeof buf - 1);
        if (n > 0) {
            name = buf;
            len = (size_t)n;
        }
        close_event stale; /* bytes of an earlier file at this number that no close of ours saw */
        take(fd, &stale);
    }
    sysev_emit(&ev_open, LTR_SYSKW_FILEIO, NULL, false, encode_open,
               &(open_event){name, len, (unsigned)flags, mode, fd >= 0 ? 0 : (uint64_t)err, fd < 0 ? -1 : fd, fn});
    errno = err;
}

/* The mode argument is there only with O_CREAT or O_TMPFILE (whose bits
 * include O_DIRECTORY's: all of them, as glibc's __OPEN_NEEDS_MODE). */
#define OPEN_MODE(flags, mode)                                           \
    do {                                                                 \
        if (((flags) & O_CREAT) || ((flags) & O_TMPFILE) == O_TMPFILE) { \
            va_list ap;                                                  \
            va_start(ap, flags);                                         \
            mode = (mode_t)va_arg(ap, unsigned);                         \
            va_end(ap);                                                  \
        }                                                                \
    } while (0)

static int do_open(open_fn f, const char *path, int flags, mode_t mode, bool want)
{
    int fd = f ? f(path, flags, mode) : (int)(syscall(SYS_openat, AT_FDCWD, path, flags, mode));
    if (want)
        report_open(path, flags, mode, fd, LTR_FILE_FN_OPEN);
    return fd;
}

EXPORT int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    OPEN_MODE(flags, mode);
    return do_open(next.open, path, flags, mode, WANTED());
}

EXPORT int open64(const char *path, int flags, ...)
{
    mode_t mode = 0;
    OPEN_MODE(flags, mode);
    return do_open(next.open64, path, flags, mode, WANTED());
}

static int do_openat(openat_fn f, int dir, const char *path, int flags, mode_t mode, bool want)
{
    int fd = f ? f(dir, path, flags, mode) : (int)(syscall(SYS_openat, dir, path, flags, mode));
    if (want)
        report_open(path, flags, mode, fd, LTR_FILE_FN_OPENAT);
    return fd;
}

EXPORT int openat(int dir, const char *path, int flags, ...)
{
    mode_t mode = 0;
    OPEN_MODE(flags, mode);
    return do_openat(next.openat, dir, path, flags, mode, WANTED());
}

EXPORT int openat64(int dir, const char *path, int flags, ...)
{
    mode_t mode = 0;
    OPEN_MODE(flags, mode);
    return do_openat(next.openat64, dir, path, flags, mode, WANTED());
}

static int do_creat(creat_fn f, const char *path, mode_t mode, bool want)
{
    int flags = O_CREAT | O_WRONLY | O_TRUNC;
    int fd = f ? f(path, mode) : (int)(syscall(SYS_openat, AT_FDCWD, path, flags, mode));
    if (want)
        report_open(path, flags, mode, fd, LTR_FILE_FN_CREAT);
    return fd;
}

EXPORT int creat(const char *path, mode_t mode)
{
    return do_creat(next.creat, path, mode, WANTED());
}

EXPORT int creat64(const char *path, mode_t mode)
{
    return do_creat(next.creat64, path, mode, WANTED());
}

EXPORT int close(int fd)
{
    bool want = WANTED();
    close_event e = {0};
    if (want)
        take(fd, &e);
    int rc = next.close ? next.close(fd) : (int)(syscall(SYS_close, fd));
    if (want && (rc == 0 || errno != EBADF)) { /* closed, even when it reports an I/O error */
        e.fd = fd;
        e.reason = LTR_FILE_CLOSED;
        put_close(&e);
    }
    return rc;
}

/* ---- bytes ---------------------------------------------------------------------- */

EXPORT ssize_t read(int fd, void *buf, size_t n)
{
    ssize_t r = next.read ? next.read(fd, buf, n) : (syscall(SYS_read, fd, buf, n));
    if (WANTED())
        count(fd, r, true);
    return r;
}

EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
    ssize_t r = next.write ? next.write(fd, (void *)buf, n) : (syscall(SYS_write, fd, buf, n));
    if (WANTED())
        count(fd, r, false);
    return r;
}

#define PRW_HOOK(name, nr, rd, constq)                                                           \
    EXPORT ssize_t name(int fd, constq void *buf, size_t n, off_t off)                          \
    {                                                                                            \
        ssize_t r = next.name ? next.name(fd, (void *)buf, n, off)                               \
                              : (syscall(nr, fd, buf, n, off));                        \
        if (WANTED())                                                                            \
            count(fd, r, rd);                                                                    \
        return r;                                                                                \
    }
PRW_HOOK(pread, SYS_pread64, true, )
PRW_HOOK(pread64, SYS_pread64, true, )
PRW_HOOK(pwrite, SYS_pwrite64, false, const)
PRW_HOOK(pwrite64, SYS_pwrite64, false, const)

EXPORT ssize_t readv(int fd, const struct iovec *v, int n)
{
    ssize_t r = next.readv ? next.readv(fd, v, n) : (syscall(SYS_readv, fd, v, n));
    if (WANTED())
        count(fd, r, true);
    return r;
}

EXPORT ssize_t writev(int fd, const struct iovec *v, int n)
{
    ssize_t r = next.writev ? next.writev(fd, v, n) : (syscall(SYS_writev, fd, v, n));
    if (WANTED())
        count(fd, r, false);
    return r;
}
