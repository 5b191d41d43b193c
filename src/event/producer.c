/*
 * event/producer.c — attachments, per-thread buffer slots and the write path.
 *
 * The common path of a write is: find this thread's slot for (session,
 * collector) among LTR_THREAD_SLOTS, check the session is running, check the
 * record fits, copy, and one release store of the commit word. Everything else
 * (attaching, taking a new buffer, handing a full one over) is the slow path.
 */
#include "event/producer.h"
#include "base/records.h"
#include "prim/prim.h"
#include "prim/sha1.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/un.h>
#include <unistd.h>

typedef struct tslot {
    uint64_t incarnation; /* 0: empty */
    ltr_ring_view *ring;  /* the attachment's checked view (never the shared header's word) */
    uint8_t *data;     /* own buffer; NULL: the thread writes to its CPU's (cpus) */
    uint32_t *cpus;    /* the process's CPU buffers of this session and collector */
    uint32_t buf, bytes, events, cap;
    uint16_t session, collector;
    uint32_t last_use;
    uint64_t last_ts; /* of the buffer's last record: compact timestamps count from it */
} tslot;

/* A record for a CPU's buffer is built here, then copied in at commit
 * (ring/percpu.c): the thread id, the compact header and a payload of up to
 * CPU_PAYLOAD_MAX bytes. A heap event's payload is under 40 bytes, the
 * agent's largest (FileOpen with its path) under 1 KiB (agent/sysev.h); a
 * larger event of a thread without a buffer of its own is lost, and
 * counted. */
#define CPU_PAYLOAD_MAX 1024

typedef struct thread_state {
    uint32_t epoch;     /* process epoch the slots belong to (fork changes it) */
    uint32_t use_clock;
    bool registered;    /* exit destructor installed */
    tslot *pending;     /* slot of the last reserve, for commit */
    tslot *hot;         /* slot ltr_producer_put wrote to last (within slots) */
    uint32_t pending_size;
    uint64_t pending_ts;
    tslot slots[LTR_THREAD_SLOTS];
    uint8_t scratch[LTR_VARINT_MAX + LTR_CEVENT_HEADER_MAX + CPU_PAYLOAD_MAX];
} thread_state;

#ifdef LTR_PRODUCER_STATE_OUTSIDE_TLS
/* The heap agent may be dlopen'ed into a running process, where static TLS
 * is a few hundred bytes shared by every late module: it keeps this state in
 * a per-thread block of its own (agent/perthread.h). create: map it if the
 * thread has none; NULL: none (then the event is lost, counted). */
void *ltr_producer_thread_state(size_t size, bool create);
#define THREAD_STATE(create) ((thread_state *)ltr_producer_thread_state(sizeof(thread_state), create))
#else
static __thread thread_state t_state __attribute__((tls_model("initial-exec")));
#define THREAD_STATE(create) (&t_state)
#endif

/* Mappings of sessions that ended, kept until their recorder is done. */
typedef struct retired {
    ltr_shm *shm;
    size_t size;
    uint32_t recorder_pid;
} retired;

static struct {
    pthread_mutex_t lock;
    pthread_once_t once;
    pthread_key_t exit_key;
    _Atomic uint32_t epoch;
    const char *only_session; /* $LTR_SESSION: this process writes to that session only */
    bool injected;            /* the heap agent came by an attach (ltr_producer_set_injected) */
    uint32_t ncpu;            /* CPUs the tables of CPU buffers have room for */
    ltr_attach att[LTR_MAX_SESSIONS];
    retired retired[LTR_MAX_SESSIONS]; /* under lock */
    unsigned nretired;
    _Atomic bool leave_owed; /* ltr_producer_leave's bookkeeping, for the next holder of lock */
} g = {.lock = PTHREAD_MUTEX_INITIALIZER, .once = PTHREAD_ONCE_INIT, .epoch = 1};

/* ---- the agent's fds in the program's table ----------------------------------
 * A daemon closes every fd above 2 once it runs (after the agent attached,
 * at its first allocation) and opens its own files, which get the numbers
 * of the session's socket and eventfd (moved high since, prim.h: rarer). Used blindly, the wake-up
 * wrote 8 bytes into one of its files, the end of the session closed two of
 * them, and giving the memory back punched a hole the size of the session
 * (zeros) into another: a test program's 100 000-byte database. So each is
 * used only while fstat still says it is what the recorder handed over; once
 * it is not, the number is the program's and is forgotten. (An eventfd of
 * the program's own, in the wake-up's number, is the one case fstat cannot
 * tell: eventfds share their inode; a spurious wake-up is all it costs.) */

static ltr_fd_id fd_id(int fd)
{
    struct stat st;
    ltr_fd_id id = {0, 0};
    if (fd >= 0 && fstat(fd, &st) == 0)
        id = (ltr_fd_id){(uint64_t)st.st_dev, (uint64_t)st.st_ino};
    return id;
}

static bool fd_is(int fd, ltr_fd_id id)
{
    struct stat st;
    return fd >= 0 && (id.dev || id.ino) && fstat(fd, &st) == 0 && (uint64_t)st.st_dev == id.dev &&
           (uint64_t)st.st_ino == id.ino;
}

/* Closes fd if it is still ours; forgets it either way. */
static void close_ours(int *fd, ltr_fd_id id)
{
    if (fd_is(*fd, id))
        close(*fd);
    *fd = -1;
}

/* The memory of an ended session given back, through the mapping:
 * MADV_REMOVE punches the memfd's pages as fallocate would, for the recorder
 * and every producer at once (the memfd itself is closed once mapped:
 * finish_attach). */
static void give_back(retired *r)
{
    madvise(r->shm, r->size, MADV_REMOVE);
}

/* ---- the sessions' memory this process holds ---------------------------------
 * A session's memory is one memfd for all its processes: whoever maps it
 * reads every process's events (their addresses, which defeat ASLR, and
 * the payloads programs write) and can write over them. A process that
 * leaves its registry (ltr_producer_leave: a root service's worker made
 * www-data) gives up every mapping of it, the live sessions' and those
 * retired (ended, the recorder not done yet), at once and without the
 * producer's lock (another thread may hold it while it waits for an
 * attach's answer): so each mapping this process holds is a word of its
 * own here, its address and size in 4 KiB pages, written and read whole.
 * A mapping is never unmapped while the process runs (threads may hold
 * pointers into it): a word read late still names memory of ours, which
 * is made zero pages of ours in place (ltr_map_zeros). Live sessions
 * (LTR_MAX_SESSIONS) and retired ones (as many) bound the table; a word
 * is 0 when free. Written under g.lock. */
#define HELD_MAX (2 * LTR_MAX_SESSIONS)
#define HELD_PAGE_BITS 12
#define HELD_SIZE_BITS 28 /* up to 1 TiB a session */
static _Atomic uint64_t held[HELD_MAX];

static uint64_t held_word(const void *at, size_t size)
{
    uint64_t page = (uint64_t)(uintptr_t)at >> HELD_PAGE_BITS;
    uint64_t pages = ((uint64_t)size + (1u << HELD_PAGE_BITS) - 1) >> HELD_PAGE_BITS;
    if (page >> (64 - HELD_SIZE_BITS) || pages >> HELD_SIZE_BITS)
        return 0; /* past what a word holds: not kept (no address space has it) */
    return page << HELD_SIZE_BITS | pages;
}

static void held_zero(uint64_t w)
{
    uint64_t mask = ((uint64_t)1 << HELD_SIZE_BITS) - 1;
    ltr_map_zeros((void *)(uintptr_t)((w >> HELD_SIZE_BITS) << HELD_PAGE_BITS),
                  (size_t)(w & mask) << HELD_PAGE_BITS);
}

static void held_add(const void *at, size_t size)
{
    uint64_t w = held_word(at, size);
    for (unsigned i = 0; w && i < HELD_MAX; i++)
        if (!atomic_load(&held[i])) {
            atomic_store(&held[i], w);
            return;
        }
}

/* The mapping at `at` made zero pages of ours, and no longer held. */
static void held_drop(const void *at, size_t size)
{
    uint64_t w = held_word(at, size);
    for (unsigned i = 0; w && i < HELD_MAX; i++)
        if (atomic_load(&held[i]) == w)
            atomic_store(&held[i], 0);
    ltr_map_zeros((void *)at, size);
}

/* Every held mapping made zero pages of ours, every attachment ended,
 * its connection and wake-up closed (the recorder sees the process go):
 * no lock taken, so words and fds are read as they are (a number the
 * program took since is left alone: close_ours). */
static void leave_sessions(void)
{
    for (unsigned i = 0; i < HELD_MAX; i++) {
        uint64_t w = atomic_exchange(&held[i], 0);
        if (w)
            held_zero(w);
    }
    for (unsigned s = 0; s < LTR_MAX_SESSIONS; s++) {
        ltr_attach *a = &g.att[s];
        atomic_store(&a->incarnation, 0);
        close_ours(&a->sock, a->sock_id);
        close_ours(&a->wakefd, a->wakefd_id);
    }
}

/* The same under g.lock, with the bookkeeping: an attach another thread
 * completed meanwhile goes too. */
static void leave_locked(void)
{
    atomic_store(&g.leave_owed, false);
    leave_sessions();
    for (unsigned s = 0; s < LTR_MAX_SESSIONS; s++) {
        g.att[s].mapped = false;
        g.att[s].pending_inc = 0;
    }
    g.nretired = 0;
}

bool ltr_producer_leave(void)
{
    int saved = errno;
    if (!ltr_registry_leave())
        return false;
    /* Before the memory goes: a thread that holds the lock (waiting for an
     * attach's answer, or this one, in connect_session) finishes what
     * another attach left, before it lets go. */
    atomic_store(&g.leave_owed, true);
    leave_sessions();
    if (pthread_mutex_trylock(&g.lock) == 0) {
        if (atomic_load(&g.leave_owed))
            leave_locked();
        pthread_mutex_unlock(&g.lock);
    }
    errno = saved;
    return true;
}

/* ---- attaching ------------------------------------------------------------ */

/* How long a traced program may wait on a recorder. The first attach of a
 * process to a session waits for the answer, so that a healthy recorder (it
 * answers in well under a millisecond) gets the program's first events; a
 * recorder that does not answer in time (stopped, stuck in a long save)
 * leaves the request pending, looked at without waiting every
 * PENDING_CHECK_NS, its events lost and counted meanwhile, and marks the
 * session unanswered in the registry so that other processes do not wait
 * either, until the recorder runs again. A failed attach (no recorder
 * listening, a refused answer) is tried again after RETRY_MIN_NS, doubling up
 * to RETRY_MAX_NS. */
#define ATTACH_WAIT_NS (250 * 1000000ull)
#define PENDING_CHECK_NS (10 * 1000000ull)
#define RETRY_MIN_NS (100 * 1000000ull)
#define RETRY_MAX_NS (5000 * 1000000ull)

static int connect_session(const char *name)
{
    char dir[4096], sock[LTR_SESSION_NAME_MAX + 8];
    struct sockaddr_un sa;
    if (ltr_runtime_name(sock, sizeof sock, name, LTR_RUN_SOCK) != 0)
        return -1;
    int dirfd = ltr_runtime_dir_open(dir, sizeof dir, NULL);
    /* A process that became another user since it mapped the registry
     * (root's service, its worker setuid to www-data) looked for the
     * session's socket in that user's directory, where that user could
     * have a session of the same name take its events; and as it could
     * reach none, root's session counted all of them lost. */
    if (!ltr_registry_reaches(dirfd)) {
        if (dirfd >= 0)
            close(dirfd);
        ltr_producer_leave(); /* for good, when it cannot go back (a raw setuid: no hook saw it) */
        return -EXDEV;
    }
    if (dirfd < 0)
        return -1;
    /* Through the checked directory's fd, so a swapped path cannot redirect
     * us; non-blocking, so a stopped recorder with a full backlog is not
     * waited for. */
    int fd = ltr_dir_sockaddr(dirfd, dir, sock, &sa, NULL) ? -1 : ltr_unix_connect(sa.sun_path, true);
    close(dirfd);
    return ltr_fd_move_high(fd); /* kept while attached: out of the program's way (prim.h) */
}

static uint64_t kv_u64(const uint8_t *p, size_t len, const char *key)
{
    char v[32];
    return ltr_kv_find(p, len, key, v, sizeof v) ? strtoull(v, NULL, 10) : 0;
}

/* Gives back the pages of ended sessions whose recorder is done with them.
 * Threads may still hold pointers into such a mapping, so it stays mapped
 * (a late write sees a fresh zero page); punching the memfd frees the memory,
 * for the recorder and every producer at once, so it must wait for DONE (or
 * for the recorder to be gone: killed). */
static void reap_retired(void)
{
    for (unsigned i = 0; i < g.nretired;) {
        retired *r = &g.retired[i];
        if (atomic_load(&r->shm->state) != LTR_SESSION_DONE && ltr_pid_alive((pid_t)r->recorder_pid)) {
            i++;
            continue;
        }
        give_back(r);
        held_drop(r->shm, r->size); /* and the memfd, which the recorder closed: nothing left of it */
        g.retired[i] = g.retired[--g.nretired];
    }
}

/* The layout and CPU table of an attachment replaced by the next one of
 * its slot: never freed (a thread still writing to the ended session may
 * read them, producer.h), but kept where they can be found, so that they
 * are not lost (LeakSanitizer: 288 bytes a session, when a process met two
 * sessions one after the other). Under the producer's lock. */
static struct {
    void **v;
    size_t n, cap;
} kept;

static void keep_forever(void *p)
{
    if (!p)
        return;
    if (kept.n == kept.cap) {
        size_t cap = kept.cap ? kept.cap * 2 : 8;
        void **v = realloc(kept.v, cap * sizeof *v);
        if (!v)
            return;
        kept.v = v;
        kept.cap = cap;
    }
    kept.v[kept.n++] = p;
}

static void retire(ltr_attach *a)
{
    atomic_store(&a->incarnation, 0);
    close_ours(&a->sock, a->sock_id);
    close_ours(&a->wakefd, a->wakefd_id);
    if (a->mapped) {
        if (g.nretired == LTR_MAX_SESSIONS) { /* full: the last retired gives its mapping up (not the recorder's) */
            g.nretired--;
            held_drop(g.retired[g.nretired].shm, g.retired[g.nretired].size);
        }
        g.retired[g.nretired++] = (retired){a->shm, a->size, a->recorder_pid};
    }
    a->mapped = false;
    a->sock = a->wakefd = -1;
}

/* What tells this process image apart: the kernel's 16 random bytes of
 * the exec (AT_RANDOM), the same for every producer library in the image
 * and new after an exec. A program writing its own events (libltr-provider)
 * under the heap agent attaches twice; the recorder describes the process
 * once for both (the second PROCESS record was taken for an exec, its
 * stacks lost). Hashed: glibc makes the stack protector's canary and the
 * pointer guard of those bytes, which must not leave the process. 0: not
 * known. */
static uint64_t image_token(void)
{
    const unsigned char *r = (const unsigned char *)getauxval(AT_RANDOM);
    if (!r)
        return 0;
    ltr_sha1 h;
    uint8_t digest[LTR_SHA1_DIGEST_SIZE];
    ltr_sha1_init(&h);
    ltr_sha1_update(&h, "ltr image", 9);
    ltr_sha1_update(&h, r, 16);
    ltr_sha1_digest(&h, digest);
    uint64_t v;
    memcpy(&v, digest, sizeof v);
    return v;
}

/* Sends `attach` on a new connection, without waiting; the answer is read
 * by finish_attach. 0, -EXDEV when this process is not of the registry's
 * user (connect_session), else -1. */
static int start_attach(ltr_attach *a, const ltr_reg_session *rs, uint64_t inc)
{
    char name[LTR_SESSION_NAME_MAX];
    if (!ltr_reg_session_name(rs, name)) /* "../../tmp/x": a socket of whoever wrote it */
        return -1;
    int sock = connect_session(name);
    if (sock < 0)
        return sock == -EXDEV ? -EXDEV : -1;
    ltr_bytes req = {0};
    char pid[16];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    ltr_bytes_put_kv(&req, "op", "attach");
    ltr_bytes_put_kv(&req, "pid", pid);
    char image[24];
    snprintf(image, sizeof image, "%llu", (unsigned long long)image_token());
    ltr_bytes_put_kv(&req, "image", image);
    ltr_bytes_put_kv(&req, "session", g.only_session ? g.only_session : "");
    if (g.injected)
        ltr_bytes_put_kv(&req, "injected", "1");
    int rc = req.failed ? -ENOMEM : ltr_send_msg_by(sock, req.data, req.len, NULL, 0, 1);
    ltr_bytes_free(&req);
    if (rc) {
        close(sock);
        return -1;
    }
    a->sock = sock;
    a->sock_id = fd_id(sock);
    a->pending_inc = inc;
    return 0;
}

static void drop_pending(ltr_attach *a)
{
    close_ours(&a->sock, a->sock_id);
    a->pending_inc = 0;
}

/* The events lost while attaching, now in this process's loss counters: the
 * session counted them already (the registry's unattached_lost), the
 * process's row did not. */
static void claim_unattached(ltr_attach *a)
{
    for (unsigned c = 0; c < 4; c++) {
        uint64_t n = atomic_exchange_explicit(&a->unattached_lost[c], 0, memory_order_relaxed);
        if (n && c < a->lay->ncollectors && a->proc_slot < a->lay->nprocs)
            atomic_fetch_add_explicit(&a->lay->procs[a->proc_slot].events_lost[c], n, memory_order_relaxed);
    }
}

void ltr_producer_note_unattached(unsigned s, unsigned c)
{
    atomic_fetch_add_explicit(&g.att[s].unattached_lost[c & 3], 1, memory_order_relaxed);
}

/* Where the rings, the metadata region and the loss counters are, from the
 * header of a session's shared memory of `size` bytes, each word read once
 * and checked: the header is shared, and a traced program may have written
 * over it already. False when it cannot be a session's: no attach. */
static bool take_layout(ltr_shm_layout *lay, ltr_shm *shm, size_t size)
{
    uint8_t *base = (uint8_t *)shm;
    uint32_t ncol = __atomic_load_n(&shm->ncollectors, __ATOMIC_RELAXED);
    if (ncol > LTR_MAX_COLLECTORS)
        return false;
    for (unsigned c = 0; c < ncol; c++) {
        uint64_t off = __atomic_load_n(&shm->collectors[c].ring_offset, __ATOMIC_RELAXED);
        if (off >= size || !ltr_ring_view_attach(&lay->rings[c], base + off, size - off))
            return false;
    }
    uint64_t meta = __atomic_load_n(&shm->meta_offset, __ATOMIC_RELAXED);
    uint64_t cap = __atomic_load_n(&shm->meta_capacity, __ATOMIC_RELAXED);
    uint64_t procs = __atomic_load_n(&shm->procs_offset, __ATOMIC_RELAXED);
    uint32_t nprocs = __atomic_load_n(&shm->nprocs, __ATOMIC_RELAXED);
    /* Records are 8-aligned (their kind is stored atomically), so are the counters. */
    if (meta > size || cap > size - meta || meta % 8 || cap < 4096 || cap % 8 || procs > size || procs % 8 ||
        nprocs > (size - procs) / sizeof(ltr_shm_proc))
        return false;
    lay->ncollectors = ncol;
    lay->meta = base + meta;
    lay->meta_capacity = cap;
    lay->procs = (ltr_shm_proc *)(base + procs);
    lay->nprocs = nprocs;
    return true;
}

/* Takes the recorder's answer to the pending attach, waiting no later than
 * deadline. 0: attached; -ETIMEDOUT: no answer yet (still pending); else the
 * attach failed and is no longer pending. */
static int finish_attach(ltr_attach *a, const ltr_reg_session *rs, uint64_t deadline)
{
    uint64_t inc = a->pending_inc;
    uint8_t *body = NULL;
    int fds[2] = {-1, -1}, nfds = 2;
    if (!fd_is(a->sock, a->sock_id)) { /* the program closed it: its number may be a file of its own */
        drop_pending(a);
        return -EPROTO;
    }
    ssize_t n = ltr_recv_msg_by(a->sock, &body, fds, &nfds, 4096, deadline);
    if (n == -ETIMEDOUT)
        return -ETIMEDOUT;
    char ok[4];
    if (n < 0 || nfds != 2 || !ltr_kv_find(body, (size_t)n, "ok", ok, sizeof ok) || ok[0] != '1' ||
        kv_u64(body, (size_t)n, "incarnation") != inc)
        goto fail;
    size_t size = (size_t)kv_u64(body, (size_t)n, "size");
    void *mem;
    if (ltr_map_shared(fds[0], size, &mem) != 0)
        goto fail;
    ltr_shm *shm = mem;
    ltr_shm_layout *lay = calloc(1, sizeof *lay);
    if (!lay || shm->magic != LTR_SHM_MAGIC || shm->size != size || shm->incarnation != inc ||
        !take_layout(lay, shm, size)) {
        free(lay);
        ltr_unmap(mem, size);
        goto fail;
    }
    /* The mapping is all the session's memory needs: its memfd would only
     * take a descriptor of the program's (give_back punches through the
     * mapping). */
    close(fds[0]);
    fds[0] = -1;
    /* Waking the recorder must never block the writer (the recorder makes
     * the eventfd non-blocking; this holds whoever made it). Kept: out of
     * the program's way (prim.h). */
    ltr_set_nonblock(fds[1]);
    fds[1] = ltr_fd_move_high(fds[1]);
    held_add(shm, size);
    keep_forever(a->lay); /* an earlier session's, in this slot */
    keep_forever(a->cpus);
    a->shm = shm;
    a->mapped = true;
    a->lay = lay;
    a->size = size;
    a->wakefd = fds[1];
    a->wakefd_id = fd_id(fds[1]);
    a->owner = (uint32_t)kv_u64(body, (size_t)n, "owner");
    a->proc_slot = (uint32_t)kv_u64(body, (size_t)n, "proc");
    a->denied = (uint32_t)kv_u64(body, (size_t)n, "deny");
    a->recorder_pid = rs->recorder_pid;
    uint64_t tpid = kv_u64(body, (size_t)n, "trace_pid"); /* an older recorder's answer has none */
    a->pid = tpid && tpid <= UINT32_MAX ? (uint32_t)tpid : (uint32_t)getpid();
    a->cpus = g.ncpu ? calloc((size_t)g.ncpu * 4, sizeof *a->cpus) : NULL; /* NULL: own buffers only */
    a->pending_inc = 0; /* the connection stays, as the attachment's */
    free(body);
    claim_unattached(a);
    atomic_store_explicit(&a->incarnation, inc, memory_order_release);
    return 0;
fail:
    free(body);
    for (int i = 0; i < nfds && i < 2; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    drop_pending(a);
    return -EPROTO;
}

/* No attach step for incarnation inc before time t. */
static void pause_until(ltr_attach *a, uint64_t inc, uint64_t t)
{
    atomic_store_explicit(&a->retry_ns, t, memory_order_relaxed);
    atomic_store_explicit(&a->retry_inc, inc, memory_order_relaxed);
}

static bool paused(ltr_attach *a, uint64_t inc)
{
    return atomic_load_explicit(&a->retry_inc, memory_order_relaxed) == inc &&
           ltr_now_ns() < atomic_load_explicit(&a->retry_ns, memory_order_relaxed);
}

static void back_off(ltr_attach *a, uint64_t inc, uint64_t now)
{
    a->backoff_ns = a->backoff_ns ? a->backoff_ns * 2 : RETRY_MIN_NS;
    if (a->backoff_ns > RETRY_MAX_NS)
        a->backoff_ns = RETRY_MAX_NS;
    pause_until(a, inc, now + a->backoff_ns);
}

/* One step towards attaching to incarnation inc of the session; caller holds
 * g.lock. Only the first try for an incarnation waits (ATTACH_WAIT_NS). */
static void try_attach(ltr_attach *a, ltr_reg_session *rs, uint64_t inc)
{
    if (paused(a, inc))
        return; /* another thread tried a moment ago */
    if (a->lost_inc != inc) { /* losses noted so far were another session's */
        for (unsigned c = 0; c < 4; c++)
            atomic_store_explicit(&a->unattached_lost[c], 0, memory_order_relaxed);
        a->lost_inc = inc;
    }
    uint64_t now = ltr_now_ns();
    if (a->sock >= 0 && a->pending_inc != inc) {
        drop_pending(a); /* asked of an older session of this slot */
        a->backoff_ns = 0;
    }
    int rc = a->sock < 0 ? start_attach(a, rs, inc) : 0;
    atomic_store_explicit(&a->foreign_inc, rc == -EXDEV ? inc : 0, memory_order_relaxed);
    if (rc) {
        back_off(a, inc, now);
        return;
    }
    uint64_t deadline = 1; /* what has arrived, without waiting */
    bool wait = a->waited_inc != inc && !atomic_load_explicit(&rs->unanswered, memory_order_relaxed);
    if (wait) {
        a->waited_inc = inc;
        deadline = now + ATTACH_WAIT_NS;
    }
    rc = finish_attach(a, rs, deadline);
    if (rc == 0) {
        a->backoff_ns = 0;
    } else if (rc == -ETIMEDOUT) {
        if (wait && atomic_load(&rs->incarnation) == inc) /* spare other processes the wait */
            atomic_store_explicit(&rs->unanswered, 1, memory_order_relaxed);
        pause_until(a, inc, ltr_now_ns() + PENDING_CHECK_NS);
    } else {
        back_off(a, inc, now);
    }
}

static void at_fork_child(void);
static void on_thread_exit(void *arg);
static void at_process_exit(void);

static void init_once(void)
{
    const char *only = getenv("LTR_SESSION");
    g.only_session = only && *only ? only : NULL;
    if (ltr_ring_cpu_usable()) {
        int n = get_nprocs_conf();
        g.ncpu = n > 0 && n <= 65536 ? (uint32_t)n : 0;
    }
    for (unsigned s = 0; s < LTR_MAX_SESSIONS; s++)
        g.att[s].sock = g.att[s].wakefd = -1;
    pthread_key_create(&g.exit_key, on_thread_exit);
    pthread_atfork(NULL, NULL, at_fork_child);
    atexit(at_process_exit);
}

void ltr_producer_init(void) { pthread_once(&g.once, init_once); }

void ltr_producer_set_injected(void) { g.injected = true; }

ltr_attach *ltr_producer_session(ltr_registry *reg, unsigned s, bool *unreachable)
{
    ltr_attach *a = &g.att[s];
    *unreachable = false;
    uint64_t want = atomic_load_explicit(&reg->sessions[s].incarnation, memory_order_acquire);
    uint64_t have = atomic_load_explicit(&a->incarnation, memory_order_acquire);
    if (want && have == want)
        return a;
    pthread_once(&g.once, init_once);
    if (g.only_session && strncmp(reg->sessions[s].name, g.only_session, LTR_SESSION_NAME_MAX) != 0)
        return NULL; /* launched for another session */
    /* Not attached and not the time to try again: no lock, no system call. */
    if (!want || !paused(a, want)) {
        pthread_mutex_lock(&g.lock);
        reap_retired();
        have = atomic_load(&a->incarnation);
        if (have && have != want)
            retire(a);
        if (!want)
            drop_pending(a);
        else if (have != want)
            try_attach(a, &reg->sessions[s], want);
        if (atomic_load(&g.leave_owed)) /* left meanwhile (connect_session, or another thread) */
            leave_locked();
        pthread_mutex_unlock(&g.lock);
    }
    if (want && atomic_load(&a->incarnation) == want)
        return a;
    /* Still the same session and we could not reach it: not its end, nor
     * another user's process. */
    *unreachable = want && atomic_load(&reg->sessions[s].incarnation) == want &&
                   atomic_load_explicit(&a->foreign_inc, memory_order_relaxed) != want;
    return NULL;
}

/* ---- losses --------------------------------------------------------------- */

void ltr_producer_count_lost(ltr_attach *a, unsigned c)
{
    /* c may come from the registry, which any process of the user can
     * write: a collector the session does not have has no counter. */
    ltr_shm_layout *lay = a->lay;
    if (c >= lay->ncollectors)
        return;
    atomic_fetch_add_explicit(&lay->rings[c].shared->events_lost, 1, memory_order_relaxed);
    if (a->proc_slot < lay->nprocs)
        atomic_fetch_add_explicit(&lay->procs[a->proc_slot].events_lost[c], 1, memory_order_relaxed);
}

int ltr_producer_meta_append(ltr_attach *a, const uint8_t *record, uint32_t size)
{
    ltr_shm_layout *lay = a->lay;
    /* A session that denies this process every collector (its --pid or
     * names do not cover it, or an exclusive session it was not started
     * for) takes none of its events, so it needs none of its metadata: the
     * trace kept out its PROCESS record, but not the paths of every module
     * it loaded, its threads' names and its stacks (a review: beside
     * 'ltr start heap --pid P', a sqlite3 and a python3 run with the agent
     * left 40 modules, their threads and 1 242 symbolized addresses in the
     * trace). Taken as written: nothing is owed to such a session. */
    uint32_t all = lay->ncollectors >= 32 ? UINT32_MAX : (1u << lay->ncollectors) - 1;
    if (all && (a->denied & all) == all)
        return 0;
    return ltr_shm_meta_append_to(lay->meta, lay->meta_capacity, a->shm, record, size);
}

/* ---- thread slots --------------------------------------------------------- */

static void wake_recorder(unsigned s)
{
    uint64_t one = 1;
    int fd = g.att[s].wakefd;
    if (fd_is(fd, g.att[s].wakefd_id) && write(fd, &one, sizeof one) < 0) {
        /* The recorder polls anyway; a failed wake only delays it. */
    }
}

/* Hands the slot's buffer to the recorder, if the session it came from still runs. */
static void hand_over(tslot *sl)
{
    if (!sl->incarnation)
        return;
    ltr_attach *a = &g.att[sl->session];
    if (sl->data && atomic_load_explicit(&a->incarnation, memory_order_acquire) == sl->incarnation &&
        ltr_ring_publish(sl->ring, sl->buf))
        wake_recorder(sl->session);
    sl->incarnation = 0;
}

static void ensure_registered(thread_state *t)
{
    uint32_t epoch = atomic_load_explicit(&g.epoch, memory_order_relaxed);
    if (t->epoch != epoch) { /* first use, or we are a fork child with the parent's slots */
        memset(t->slots, 0, sizeof t->slots);
        t->epoch = epoch;
    }
    if (!t->registered) {
        pthread_once(&g.once, init_once);
        pthread_setspecific(g.exit_key, t);
        t->registered = true;
    }
}

static tslot *find_slot(thread_state *t, unsigned s, unsigned c, uint64_t inc)
{
    tslot *victim = &t->slots[0];
    for (unsigned i = 0; i < LTR_THREAD_SLOTS; i++) {
        tslot *sl = &t->slots[i];
        if (sl->incarnation && sl->session == s && sl->collector == c) {
            if (sl->incarnation == inc)
                return sl;
            sl->incarnation = 0; /* an older session in the same slot: forget it */
        }
        if (!sl->incarnation || sl->last_use < victim->last_use)
            victim = sl;
    }
    hand_over(victim);
    victim->session = (uint16_t)s;
    victim->collector = (uint16_t)c;
    return victim;
}

/* A buffer of the thread's own for the slot; when the ring keeps the rest
 * for the CPUs' buffers, the slot writes to those from now on (for as long
 * as it serves this session and collector: a thread's events stay in one
 * kind of buffer, in order). False when neither can be had. */
static bool take_buffer(tslot *sl, ltr_attach *a, unsigned c, uint64_t inc)
{
    ltr_ring_view *r = &a->lay->rings[c];
    bool cpus = a->cpus && ltr_ring_cpu_usable();
    uint32_t idx = ltr_ring_acquire_own(r, a->pid, ltr_gettid(), a->owner,
                                        cpus ? ltr_ring_own_max(r, g.ncpu) : UINT32_MAX);
    sl->ring = r;
    sl->cpus = a->cpus ? a->cpus + (size_t)c * g.ncpu : NULL;
    if (idx == LTR_RING_NONE) {
        if (ltr_ring_want_wake(r)) /* until now it was asked, not woken: up to 50 ms of losses */
            wake_recorder(sl->session);
        /* Past the limit, or (file mode) no buffer free at all: the CPU's
         * buffer may still have room (python3 with 700 threads lost 12
         * events of 169 483 when only threads past the limit went there: the
         * pool was empty for a moment, its buffers held by threads or
         * waiting to be written). A memory-mode ring always has a buffer to
         * take over unless every one is being written: there a thread goes
         * to its CPU only past the limit, as its tests have it. */
        bool limited = atomic_load_explicit(&r->shared->own_count, memory_order_relaxed) >= ltr_ring_own_max(r, g.ncpu);
        if (!cpus || (!limited && (r->flags & LTR_RING_OVERWRITE)))
            return false;
        sl->incarnation = inc;
        sl->data = NULL;
        return true;
    }
    sl->incarnation = inc;
    sl->buf = idx;
    sl->data = ltr_ring_vdata(r, idx);
    sl->cap = r->buffer_size;
    sl->bytes = sl->events = 0;
    sl->last_ts = 0; /* a new buffer is a new block: its first delta is from 0 */
    return true;
}

/* The slot to write into with room for a record of `payload` bytes after the
 * header written into hdr (*hn bytes); NULL when no buffer is free. */
static tslot *slot_with_room(thread_state *t, ltr_attach *a, unsigned s, unsigned c, uint64_t inc,
                             const ltr_cevent_in *in, uint8_t *hdr, size_t *hn)
{
    tslot *sl = find_slot(t, s, c, inc);
    sl->last_use = ++t->use_clock;
    if (sl->incarnation && !sl->data)
        return sl; /* on its CPU's buffer */
    if (sl->incarnation) {
        *hn = ltr_put_cevent_header(hdr, in->layout, in->ts, sl->last_ts, in->payload);
        if (sl->bytes + *hn + in->payload <= sl->cap)
            return sl;
        hand_over(sl);
    }
    if (!take_buffer(sl, a, c, inc))
        return NULL;
    *hn = ltr_put_cevent_header(hdr, in->layout, in->ts, 0, in->payload);
    return sl;
}

/* A record for the CPU's buffer: built in the thread's scratch, with the
 * thread id first and a whole timestamp (its delta counts from 0: records
 * of other threads come between). The time is taken again, to the
 * nanosecond, never before the caller's (the heap agent's are rounded
 * down to 100 us): a thread that moved between CPUs has records in two
 * buffers, which reach the file in either order, and only distinct times
 * tell which came first (docs/trace-format.md, "Per-CPU buffers"). */
static uint8_t *reserve_on_cpu(thread_state *t, tslot *sl, const ltr_cevent_in *in)
{
    if (in->payload > CPU_PAYLOAD_MAX)
        return NULL;
    uint64_t ts = ltr_now_ns();
    if (ts < in->ts)
        ts = in->ts;
    size_t n = ltr_put_uvar(t->scratch, ltr_gettid());
    n += ltr_put_cevent_header(t->scratch + n, in->layout, ts, 0, in->payload);
    t->pending = sl;
    t->pending_size = (uint32_t)n + in->payload;
    return t->scratch + n;
}

static bool commit_on_cpu(thread_state *t, tslot *sl)
{
    ltr_attach *a = &g.att[sl->session];
    if (atomic_load_explicit(&a->incarnation, memory_order_acquire) != sl->incarnation)
        return true; /* the session ended meanwhile: not a loss */
    bool wake = false;
    enum ltr_cpu_append rc = ltr_ring_cpu_append(sl->ring, sl->cpus, g.ncpu, a->pid, a->owner, t->scratch,
                                                 t->pending_size, &wake);
    if (rc != LTR_CPU_APPENDED) {
        wake = wake || ltr_ring_want_wake(sl->ring);
        ltr_producer_count_lost(a, sl->collector);
    }
    if (wake)
        wake_recorder(sl->session);
    return rc == LTR_CPU_APPENDED;
}

uint8_t *ltr_producer_reserve_event(ltr_attach *a, unsigned s, unsigned c, const ltr_cevent_in *in,
                                    bool *lost)
{
    thread_state *t = THREAD_STATE(true);
    uint64_t inc = atomic_load_explicit(&a->incarnation, memory_order_acquire);
    *lost = false;
    ltr_shm_layout *lay = a->lay;
    if (!inc || c >= lay->ncollectors || (a->denied & (1u << c)))
        return NULL; /* the session does not want this process: never its event */
    uint32_t state = atomic_load_explicit(&a->shm->state, memory_order_relaxed);
    if (state != LTR_SESSION_RUNNING) {
        /* ending: not its event, unless the stop fails; any other value was
         * written by a traced program: the recorder counts it lost */
        atomic_fetch_add_explicit(&a->shm->stopping_refused[c], 1, memory_order_relaxed);
        return NULL;
    }
    *lost = true;
    if (in->payload > LTR_MAX_EVENT_PAYLOAD || LTR_CEVENT_HEADER_MAX + in->payload > lay->rings[c].buffer_size) {
        ltr_producer_count_lost(a, c);
        return NULL;
    }
    if (!t) {
        ltr_producer_count_lost(a, c);
        return NULL;
    }
    ensure_registered(t);
    uint8_t hdr[LTR_CEVENT_HEADER_MAX];
    size_t hn;
    tslot *sl = slot_with_room(t, a, s, c, inc, in, hdr, &hn);
    if (!sl) {
        ltr_producer_count_lost(a, c);
        return NULL;
    }
    if (!sl->data) {
        uint8_t *payload = reserve_on_cpu(t, sl, in);
        if (!payload)
            ltr_producer_count_lost(a, c);
        *lost = !payload;
        return payload;
    }
    *lost = false;
    uint8_t *rec = sl->data + sl->bytes;
    memcpy(rec, hdr, hn);
    t->pending = sl;
    t->pending_size = (uint32_t)hn + in->payload;
    t->pending_ts = in->ts;
    return rec + hn;
}

/* The common case in one call: the thread's slot of this session's
 * incarnation and collector has a buffer of its own with room. What
 * reserve_event checks again at every event (the payload's bound, whether
 * the session wants this process) held when that buffer was taken and
 * cannot change while the incarnation stays. On bench/heap's deep workload
 * (callgrind) reserve, the header's copy and commit were 300 instructions
 * an event; this is 150. */
bool ltr_producer_put(ltr_attach *a, uint64_t inc, unsigned s, unsigned c, uint32_t layout, uint64_t ts,
                      const uint8_t *payload, uint32_t n)
{
    thread_state *t = THREAD_STATE(false);
    if (__builtin_expect(!t || t->epoch != atomic_load_explicit(&g.epoch, memory_order_relaxed), 0))
        return false;
    if (!inc || atomic_load_explicit(&a->incarnation, memory_order_acquire) != inc || n > LTR_MAX_EVENT_PAYLOAD ||
        atomic_load_explicit(&a->shm->state, memory_order_relaxed) != LTR_SESSION_RUNNING)
        return false;
    tslot *sl = t->hot; /* the slot of the thread's last record, most often this one's */
    if (!sl || sl->incarnation != inc || sl->session != s || sl->collector != c) {
        sl = NULL;
        for (unsigned i = 0; i < LTR_THREAD_SLOTS && !sl; i++)
            if (t->slots[i].incarnation == inc && t->slots[i].session == s && t->slots[i].collector == c)
                sl = &t->slots[i];
        if (!sl)
            return false;
        t->hot = sl;
    }
    if (!sl->data)
        return false;
    uint64_t delta = ltr_zigzag((int64_t)(ts - sl->last_ts));
    size_t inner = ltr_uvar_len(layout) + ltr_uvar_len(delta) + n;
    size_t total = ltr_uvar_len(inner) + inner;
    if (sl->bytes + total > sl->cap)
        return false; /* the general way hands the buffer over and takes another */
    uint8_t *p = sl->data + sl->bytes;
    p += ltr_put_uvar(p, inner);
    p += ltr_put_uvar(p, layout);
    p += ltr_put_uvar(p, delta);
    memcpy(p, payload, n);
    sl->last_use = ++t->use_clock;
    sl->bytes += (uint32_t)total;
    sl->events++;
    sl->last_ts = ts;
    ltr_ring_commit(sl->ring, sl->buf, sl->bytes, sl->events);
    return true;
}

bool ltr_producer_commit(void)
{
    thread_state *t = THREAD_STATE(false); /* reserve made it */
    tslot *sl = t->pending;
    if (__builtin_expect(!sl->data, 0))
        return commit_on_cpu(t, sl);
    sl->bytes += t->pending_size;
    sl->events++;
    sl->last_ts = t->pending_ts;
    ltr_ring_commit(sl->ring, sl->buf, sl->bytes, sl->events);
    return true;
}

void ltr_producer_flush_thread(void)
{
    thread_state *t = THREAD_STATE(false);
    if (!t || t->epoch != atomic_load(&g.epoch))
        return;
    for (unsigned i = 0; i < LTR_THREAD_SLOTS; i++)
        hand_over(&t->slots[i]);
}

void ltr_producer_flush_thread_to_files(void)
{
    thread_state *t = THREAD_STATE(false);
    if (!t || t->epoch != atomic_load(&g.epoch))
        return;
    for (unsigned i = 0; i < LTR_THREAD_SLOTS; i++) {
        tslot *sl = &t->slots[i];
        ltr_attach *a = sl->incarnation ? &g.att[sl->session] : NULL;
        if (a && atomic_load_explicit(&a->incarnation, memory_order_acquire) == sl->incarnation && a->shm &&
            a->shm->mode == LTR_MODE_FILE)
            hand_over(sl);
    }
}

static void on_thread_exit(void *arg)
{
    ltr_producer_flush_thread();
}

static void at_process_exit(void)
{
    ltr_producer_flush_thread();
}

static void at_fork_child(void)
{
    /* One thread now, and the attachments are the parent's: drop them. The
     * child attaches as a process of its own on its next write. */
    atomic_fetch_add(&g.epoch, 1);
    ltr_gettid_forget();
    pthread_mutex_init(&g.lock, NULL);
    /* The parent's to give back, not ours; and not kept mapped: a worker
     * forked while its root parent held an ended session's memory kept it
     * mapped writable once it became another user. The one thread here is
     * in fork, not in a write, as for the live sessions below. */
    for (unsigned i = 0; i < g.nretired; i++)
        ltr_unmap(g.retired[i].shm, g.retired[i].size);
    g.nretired = 0;
    for (unsigned i = 0; i < HELD_MAX; i++) /* all the parent's: unmapped here */
        atomic_store(&held[i], 0);
    atomic_store(&g.leave_owed, false);
    for (unsigned s = 0; s < LTR_MAX_SESSIONS; s++) {
        ltr_attach *a = &g.att[s];
        drop_pending(a); /* the parent's connection, attached or pending */
        pause_until(a, 0, 0);
        a->backoff_ns = a->waited_inc = a->lost_inc = 0;
        atomic_store(&a->foreign_inc, 0);
        for (unsigned c = 0; c < 4; c++) /* the parent's */
            atomic_store(&a->unattached_lost[c], 0);
        if (!atomic_load(&a->incarnation))
            continue;
        atomic_store(&a->incarnation, 0);
        a->cpus = NULL; /* the parent's CPU buffers */
        close_ours(&a->wakefd, a->wakefd_id);
        if (a->mapped)
            ltr_unmap(a->shm, a->size);
        a->mapped = false;
        a->wakefd = -1;
    }
}
