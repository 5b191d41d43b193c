/*
 * prim/prim.h — the platform layer: the Linux calls that several parts make,
 * or that need care to make right, each made once here (clocks, the per-user
 * runtime directory, Unix sockets with their addresses, modes and timeouts,
 * fd passing, shared memory: memfd and mappings, whole reads and writes,
 * output files that never follow a symlink, host facts). Other parts use
 * these instead of the system calls, so that they read as logic.
 *
 * What it does not cover, on purpose: a call that is the very subject of the
 * one file making it stays there, in plain sight, rather than behind a name
 * that would only rename it. So recorder/launch.c forks twice and setsid()s
 * (the daemon), recorder/heaprun.c forks, execs, waits, forwards signals and
 * becomes a subreaper (running CMD), recorder/loop.c polls, accepts and
 * redirects its stdio (the recorder's loop), recorder/setup.c makes its
 * eventfd and signalfd, recorder/leftovers.c and event/registry.c take and
 * drop their flocks and walk the runtime directory by fd (openat, unlinkat:
 * what each checks is the point of the file), format/ seeks, syncs and
 * truncates its trace, profiles/ resolves paths of the files it reads. The
 * heap agent (src/agent) maps its tables, installs its signal handlers and
 * makes raw system calls itself: it runs inside malloc, in any thread and in
 * signal handlers, where it must not allocate nor go through a general
 * wrapper's error paths; it uses prim for clocks and thread ids, and through
 * event/ for attaching like any producer.
 */
#ifndef LTR_PRIM_H
#define LTR_PRIM_H

#include <ltr/common.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* CLOCK_MONOTONIC in ns: the one clock every process of a session shares. */
uint64_t ltr_now_ns(void);
/* CLOCK_REALTIME in ns since the epoch, for the wall-clock anchor. */
uint64_t ltr_wall_ns(void);
/* ltr_now_ns rounded down to a multiple of grain_ns, for a caller that asks
 * very often (the heap agent, at every event): between a grain's edges it is
 * read from the CPU's time-stamp counter where the kernel keeps time with it
 * (grainclock.c says why that is exact). c is the calling thread's own,
 * zeroed before its first use; the same grain_ns at every call with it. */
typedef struct ltr_grain_clock {
    uint64_t tsc_last, tsc_edge, grain_ts;
    uint64_t tsc_read, ns_read; /* the counter before the last clock read, and that read */
    uint64_t clock_reads; /* the calls that asked clock_gettime */
    uint64_t due_ns;      /* the due function's time (below) */
} ltr_grain_clock;
uint64_t ltr_grain_now(ltr_grain_clock *c, uint64_t grain_ns);
/* Whether ltr_grain_now reads the clock at every call from now on: the
 * counter is not trusted here, or it once ran slower than the clock. */
bool ltr_grain_counter_dropped(void);
/* Work to do now and then rather than at every call: fn(c, ns) is called
 * by ltr_grain_now when it reads the clock (once a grain, or at each call
 * where the counter is not used) and ns has reached c->due_ns, which fn
 * moves on. At no cost between reads (the heap agent's look at a thread's
 * uids: agent/emit.c). Set once, for every clock of the process. */
void ltr_grain_set_due(void (*fn)(ltr_grain_clock *c, uint64_t ns));
/* Whether ltr_grain_now may read the counter, given the kernel's clock
 * source as sysfs names it ("tsc", no line end) and the fewest counter ticks that
 * clock_gettime and the same clock by system call took (grainclock.c). */
bool ltr_grain_counter_trusted(const char *source, uint64_t vdso_ticks, uint64_t syscall_ticks);

/* Fills ltr_error: code and a printf-style message. Returns -code. */
int ltr_fail(ltr_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The per-user directory for sockets, the registry and logs, first of:
 * $LTR_RUNTIME_DIR; $XDG_RUNTIME_DIR/ltr (else /run/user/UID/ltr) when that
 * directory is ours; /run/ltr for root; /tmp/ltr-UID, and when another user
 * holds that name, a private /tmp/ltr-UID-XXXXXX recorded in ~/.ltr-runtime-dir.
 * Created 0700 if missing. Opened without following a symbolic link, and
 * refused unless the opened directory is ours with mode 0700. */
typedef struct ltr_rundir_places {
    const char *explicit_dir; /* $LTR_RUNTIME_DIR: used as it is, or refused */
    const char *user_dir;     /* $XDG_RUNTIME_DIR or /run/user/UID */
    const char *system_dir;   /* /run: root's, writable by root only */
    const char *tmp;          /* /tmp */
    const char *home;         /* $HOME: where a private fallback is recorded */
    bool look_only;           /* open what is there, create nothing: another process's, checked */
} ltr_rundir_places;
/* Returns the opened directory (close it) with its path in out, or -errno.
 * When it is a fallback past a squatter, err->msg says so (err->code 0). */
int ltr_runtime_dir_in(const ltr_rundir_places *p, char *out, size_t size, ltr_error *err);
int ltr_runtime_dir_open(char *out, size_t size, ltr_error *err);
/* The same, path only (checked now; prefer the fd to work in it). 0 or -errno. */
int ltr_runtime_dir(char *out, size_t size, ltr_error *err);
/* The address of socket `name` in the opened directory dirfd (path dir):
 * through /proc/self/fd, so that it is the directory checked. 0 or -errno. */
struct sockaddr_un;
int ltr_dir_sockaddr(int dirfd, const char *dir, const char *name, struct sockaddr_un *sa, ltr_error *err);
/* A session's files in the runtime directory are named after the session:
 * NAME.sock, its recorder's control socket; NAME.log, the recorder's log. The
 * recorder makes them, clients and producers find them, the sweep of
 * leftovers cleans them: all through this one helper and these suffixes. */
#define LTR_RUN_SOCK ".sock"
#define LTR_RUN_LOG ".log"
/* Writes "<session><suffix>" into out. 0, or -ENAMETOOLONG when it does not fit. */
int ltr_runtime_name(char *out, size_t size, const char *session, const char *suffix);

/* Whole-buffer I/O that retries on EINTR and short counts. Return 0 or -errno. */
int ltr_write_all(int fd, const void *buf, size_t len);
int ltr_read_all(int fd, void *buf, size_t len); /* -EPIPE at a clean end of file */
int ltr_pwrite_all(int fd, const void *buf, size_t len, uint64_t offset);

/* A message with up to `nfds` file descriptors attached (SCM_RIGHTS). */
int ltr_send_msg(int sock, const void *buf, size_t len, const int *fds, int nfds);
/* Receives one framed message (u32 length + body) into a malloc'd buffer, with
 * any fds passed alongside. Returns body length, or -errno. */
ssize_t ltr_recv_msg(int sock, uint8_t **body, int *fds, int *nfds, size_t max_len);
/* The same, waiting no later than deadline_ns (ltr_now_ns's clock; 0: no
 * limit); -ETIMEDOUT past it with nothing taken (a message cut by the deadline
 * is -EPROTO). Once past it, what has arrived already is still taken, so a
 * deadline in the past means "only if it is there now". A traced
 * program's side uses these: a recorder that is stopped or slow must cost it a
 * bounded wait, never a hang. */
int ltr_send_msg_by(int sock, const void *buf, size_t len, const int *fds, int nfds,
                    uint64_t deadline_ns);
ssize_t ltr_recv_msg_by(int sock, uint8_t **body, int *fds, int *nfds, size_t max_len,
                        uint64_t deadline_ns);
/* One framed message read as its bytes come, never waiting: for a server
 * that must not let a slow or silent client hold it (the recorder: an
 * attacker review's client sending a byte every 5 s stalled a session, its
 * programs losing their events). Zeroed to start. */
typedef struct ltr_msg_in {
    uint8_t hdr[4];
    uint32_t hdr_got, len, got;
    uint8_t *body; /* malloc'd, len + 1 bytes (a 0 after them) once the header is in */
} ltr_msg_in;
/* Takes what has arrived: 1 when the message is whole (m->body, m->len are
 * then the caller's to free), 0 when more is to come, -errno on an error,
 * an end of the stream or a message longer than max_len (m freed). Fds
 * passed alongside are not taken (the kernel closes them). */
int ltr_msg_in_read(int sock, ltr_msg_in *m, size_t max_len);
void ltr_msg_in_free(ltr_msg_in *m);

/* A stream socket connected to the AF_UNIX socket at path, or -errno. With
 * nonblock, a listener whose backlog is full is not waited for (-EAGAIN), and
 * the socket stays non-blocking. */
int ltr_unix_connect(const char *path, bool nonblock);
/* The same to an address (ltr_dir_sockaddr's, to go through a checked directory). */
int ltr_unix_connect_addr(const struct sockaddr_un *sa, bool nonblock);
/* A non-blocking stream socket listening at sa, made with umask 077 (no
 * access for group and others: its owner's only), or -errno. */
int ltr_unix_listen(const struct sockaddr_un *sa, int backlog);
/* A receive on sock waits at most that long (SO_RCVTIMEO). 0 or -errno. */
int ltr_sock_recv_timeout(int sock, unsigned seconds);
/* fd made non-blocking (O_NONBLOCK). 0 or -errno. */
int ltr_set_nonblock(int fd);
/* A descriptor a producer keeps open inside a traced program (the heap
 * agent's, a provider's), moved out of the program's range: a copy at or
 * above ltr_fd_floor(), close-on-exec, and fd closed; fd itself when there is
 * no room up there (then it stays where it was, as before). */
int ltr_fd_move_high(int fd);
/* Where those descriptors go, from RLIMIT_NOFILE (prim.c says why); 0: no
 * room above the program's range, nothing is moved. */
int ltr_fd_floor(void);

/* An exclusive flock of fd, waiting no later than deadline_ns (0: no limit);
 * -ETIMEDOUT past it. */
int ltr_flock_by(int fd, uint64_t deadline_ns);

/* malloc for a tool process's tables of megabytes (bigheap.c): one arena
 * that keeps what is freed (no mmap below 32 MiB, no trim below 256 MiB);
 * then, for a reserve of address space, the heap grown by it once and the
 * range advised transparent huge pages. Before any thread is started. */
void ltr_bigheap_keep(void);
void ltr_bigheap_huge(size_t reserve);

/* Anonymous shared memory of `size` bytes, sealed against resizing. */
int ltr_memfd_create(const char *name, size_t size, ltr_error *err);
/* RLIMIT_FSIZE (ulimit -f): ltr's own processes ignore SIGXFSZ, so a trace
 * past the limit is a write that fails with EFBIG and is reported like a full
 * disk; a command ltr launches gets the disposition ltr itself was given. */
void ltr_ignore_sigxfsz(void);
void ltr_restore_sigxfsz(void);
/* ftruncate of a shared file (registry, memfd) to size: 0 or -errno. The limit
 * is meant for files a user writes, so in ltr's own processes the soft limit
 * is lifted to the hard one for the call; in a traced program, which must not
 * be killed by SIGXFSZ nor see its limits move, a size past it is -EFBIG. */
int ltr_size_shared_file(int fd, size_t size);
/* Maps size bytes of fd (a session's memory, the registry) shared and
 * read-write into *addr. 0 or -errno. */
int ltr_map_shared(int fd, size_t size, void **addr);
void ltr_unmap(void *addr, size_t size);
/* Puts zero pages of the process's own in place of the size bytes mapped
 * at addr, in one mmap(MAP_FIXED): every address stays readable and
 * writable, with no moment a load faults, and the file or memfd mapped
 * there is no longer reached. What a thread writes there afterwards stays
 * in the process. False when the mmap failed (the process's map count at
 * its limit): as it was. errno kept. */
bool ltr_map_zeros(void *addr, size_t size);

/* Makes room for element n of a growable array (*v, *cap elements of elem
 * bytes), doubling from `first`. Returns 0, or -ENOMEM leaving it as it was. */
int ltr_reserve(void **v, size_t *cap, size_t n, size_t elem, size_t first);
/* The capacity such an array grows to for element n: doubled from cap, or
 * from first when it has none, until n fits. */
size_t ltr_grown_capacity(size_t cap, size_t n, size_t first);
/* The same for a large array (prim/table.c): past LTR_TABLE_MAPPED bytes it
 * is a mapping of its own, grown by mremap, so that growing never copies
 * it or touches fresh pages. Freed only with ltr_table_free, given its
 * capacity. A growth to more than LTR_TABLE_MAPPED bytes adds zero bytes
 * (fresh pages) past the old capacity, unless the array was written past
 * its capacity or cut by ltr_table_shrink (which keeps the bytes of its
 * last huge page). */
#define LTR_TABLE_MAPPED ((size_t)1 << 20)
int ltr_table_reserve(void **v, size_t *cap, size_t n, size_t elem, size_t first);
void ltr_table_free(void *v, size_t cap, size_t elem);
/* Gives back what is past n elements of an array that is done growing (it
 * may grow again): a heap one reallocated to n, a mapping cut to the huge
 * pages n needs while it stays a mapping (cut to the heap's size, a mapping
 * freed as a heap block crashed the analysis). 0, or -ENOMEM with the
 * array as it was. */
int ltr_table_shrink(void **v, size_t *cap, size_t n, size_t elem);

bool ltr_pid_alive(pid_t pid);
/* When process pid (0: this one) started, in clock ticks after boot (field 22
 * of /proc/PID/stat): with the pid, names a process even after its pid is
 * reused. 0 if it cannot be read (no such process). */
uint64_t ltr_proc_start_time(uint32_t pid);
/* Whether pid is stopped (state T: SIGSTOP, Ctrl-Z; t: a debugger holds it). */
bool ltr_pid_stopped(uint32_t pid);
/* The parent of process pid (0: this one), from /proc/PID/stat; 0 when it
 * cannot be read (gone, or another pid namespace's). */
uint32_t ltr_proc_ppid(uint32_t pid);
/* Process pid's pid in its own pid namespace (the last of /proc/PID/status's
 * NSpid), what its getpid() says: pid itself outside a container, 0 when it
 * cannot be read. */
uint32_t ltr_proc_own_pid(uint32_t pid);
/* Thread tid of process pid (both as this process sees them) by its id in
 * its own pid namespace (the last of /proc/PID/task/TID/status's NSpid), what
 * its gettid() says and the heap agent writes: tid itself outside a
 * container, 0 when it cannot be read (ended). */
uint32_t ltr_task_own_tid(uint32_t pid, uint32_t tid);
uint64_t ltr_total_ram(void);
/* The width in columns of the terminal fd is, or 0 when fd is not a
 * terminal (then output is for programs: lines are not cut). $COLUMNS, when
 * set, wins, as for ls. */
unsigned ltr_terminal_width(int fd);
/* This boot's id (/proc/sys/kernel/random/boot_id, a UUID): traces with the
 * same one share CLOCK_MONOTONIC. 0, or -errno. */
int ltr_boot_id(char *out, size_t size);
/* The thread id, cached per thread (gettid is a system call). */
uint32_t ltr_gettid(void);
/* Called in a fork child: the cached id is the parent's. */
void ltr_gettid_forget(void);

/* Reads a small file (/proc/...) into buf, NUL-terminated. Returns bytes or -errno. */
ssize_t ltr_read_small_file(const char *path, char *buf, size_t size);

/* Text from a trace as it is shown (prim/text.c): UTF-8 kept, but an invalid
 * byte, a control character (C0, DEL, C1: U+0080..U+009F, which terminals
 * act on) and the bidirectional controls (U+202A..U+202E, U+2066..U+2069:
 * they reorder what follows) become '?'; with keep_lines, newlines and tabs
 * stay (a whole report's text). out has room for len bytes and may be str
 * itself; returns the length written (no NUL is added). */
size_t ltr_shown_text(const char *str, size_t len, char *out, bool keep_lines);
/* Whether ltr_shown_text (keep_lines false) shows the len bytes at str as
 * they are: UTF-8 text without a control character. No allocation, no system
 * call (the by-name shim runs it in every process). */
bool ltr_text_shown_as_is(const char *str, size_t len);

/* Opens path for reading if it is a regular file, and never opens anything
 * else (prim/files.c): a path a trace names may lead to a device, whose
 * driver acts on the open itself (a watchdog arms, a tape rewinds, a pty is
 * made), or to a FIFO. Returns the fd (O_NONBLOCK, close-on-exec), -EINVAL
 * for a file of another type, or -errno. */
int ltr_open_regular(const char *path);

/* Opens path for reading only if root alone can change it: what root runs
 * at every boot (`ltr boottrace`) or copies into every process (`ltr
 * heaptracingconfig`). The rule, for the file and every directory on its
 * real path from "/" (symlinks resolved first, then each component opened
 * without following one and checked as opened): owned by root, and
 * writable by neither group nor others, whatever the group (gid 0 too: a
 * group bit is also the mask of an ACL that may let any user write, and
 * Debian's group staff, which may write /usr/local, is not root); a sticky
 * directory writable by all (/tmp) is refused too (anyone may take a name
 * there once root's file is gone). The file must be regular. Returns the fd
 * (O_NONBLOCK, close-on-exec), or -errno with err naming the component,
 * what is wrong, and the command that fixes it where one does
 * (prim/files.c). */
int ltr_open_roots_alone(const char *path, ltr_error *err);
/* A user's name, or "uid N" when there is none, in buf. */
const char *ltr_user_name(uid_t uid, char *buf, size_t size);

/* Output files (prim/files.c): never written through a symlink nor into a file
 * that exists already, whoever made it. */
/* Creates path new, mode 0600 (O_CREAT|O_EXCL|O_NOFOLLOW). Returns the fd
 * (read-write, close-on-exec) or -errno (-EEXIST when anything is there). */
int ltr_create_new(const char *path);
/* Creates a new file, mode 0600, from tmpl: its last "XXXXXX" becomes a name
 * no one can guess (tmpl is updated). Returns the fd or -errno. */
int ltr_create_temp(char *tmpl);
/* The template of a temporary beside dest, for ltr_create_temp: DEST.XXXXXX.part. */
int ltr_temp_name(char *out, size_t size, const char *dest);
/* The temporaries of dest (DEST.XXXXXX.part) that a writer killed while
 * writing left: regular files of this user that no ltr_create_temp caller
 * holds open (its lock is gone), never through a symlink. Each is given to
 * each, with its status; nothing is removed (it holds what was written).
 * One between its writer's close and its rename (an instant) counts too.
 * Returns how many, or -errno when dest's directory cannot be read. */
struct stat;
int ltr_leftover_temps(const char *dest, void (*each)(const char *path, const struct stat *st, void *arg),
                       void *arg);
/* Gives the finished file tmp the name dest. Unless replace, whatever is at dest
 * (a file, a symlink) stays and -EEXIST is returned, atomically (a check before
 * would race with its creation); with replace, a symlink at dest is replaced,
 * never followed, and what ltr_replaceable refuses stays (-EPERM). Returns 0
 * or -errno; tmp stays on failure. */
int ltr_publish(const char *tmp, const char *dest, bool replace);
/* Whether --force may replace what is at path: nothing, a regular file, or a
 * symlink (replaced, not followed) that is dangling or to a regular file.
 * Never a device, FIFO, socket or directory, nor a symlink to one
 * (/dev/stdout): 0, or -EPERM with err saying what it is. */
int ltr_replaceable(const char *path, ltr_error *err);
/* Whether anything (a file, a symlink, even a dangling one) has that name. */
bool ltr_path_taken(const char *path);
/* Fills err: path exists and was not overwritten, --force replaces it (EEXIST). */
int ltr_fail_exists(ltr_error *err, const char *path);
/* path made absolute against the current directory (a recorder runs in /,
 * so paths sent to it must be). Returns 0, or -errno with err saying why
 * (an empty name, a path too long). */
int ltr_absolute_path(const char *path, char *out, size_t size, ltr_error *err);
/* Writes the new file path with write(f, arg), which returns < 0 (-errno) on
 * failure: into a temporary beside path that takes its name once complete
 * (ltr_publish, so nothing at path is replaced unless replace). Nothing is
 * left behind on failure. Returns 0, or -errno with err naming path
 * (-EEXIST: something is there). */
int ltr_write_new_file(const char *path, bool replace, int (*write)(FILE *f, void *arg), void *arg,
                       ltr_error *err);

#endif
