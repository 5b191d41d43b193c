/*
 * agent/snapshot.c — heap snapshots in the agent (snapshot.h): learning from
 * the registry that this process is to keep its live-block table, and
 * writing the table into the sessions that enable Ltr.HeapSnapshot when ltr
 * asks (docs/heap-events.md, "Heap snapshots").
 *
 * Nothing reaches the program from outside: ltr changes this process's entry
 * in the registry and moves its word `gen`. A hook sees the word move at its
 * next allocation (agent_wanted: one more load) and looks at the entry; the
 * first time the table is wanted, it starts a thread of the agent's own, with
 * every signal blocked, which sleeps on `gen` (a futex ltr wakes) or until
 * the next periodic snapshot, and writes each snapshot: the program's
 * threads never wait for it except for the copy of one shard, and never see
 * a signal or an interrupted call.
 *
 * A snapshot is a SnapshotBegin, a SnapshotStack per stack (live blocks,
 * bytes, the oldest age, bytes older than a minute, ten minutes, an hour and
 * a day) and a SnapshotEnd with the totals: a reader that finds no End knows
 * the snapshot was cut (the process exited). Each stack's frame nodes are put
 * into the session's metadata before its record, so a snapshot names its
 * stacks in any session, however old its allocations.
 */
#include "agent/snapshot.h"
#include "event/event.h"
#include "base/heap_events.h"
#include "base/records.h"
#include "prim/prim.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static ltr_provider snap_provider = {.name = LTR_HEAP_SNAPSHOT_PROVIDER, .state = &ltr_never_enabled};

static const ltr_field_desc begin_fields[] = {
    {"snapshot", LTR_TYPE_UVAR}, {"reason", LTR_TYPE_U8}, {"tracking_since_ns", LTR_TYPE_UVAR}};
static const ltr_field_desc stack_fields[] = {
    {"snapshot", LTR_TYPE_UVAR}, {"stack", LTR_TYPE_UVAR}, {"blocks", LTR_TYPE_UVAR},
    {"bytes", LTR_TYPE_UVAR}, {"oldest_s", LTR_TYPE_UVAR}, {"bytes_older_1m", LTR_TYPE_UVAR},
    {"bytes_older_10m", LTR_TYPE_UVAR}, {"bytes_older_1h", LTR_TYPE_UVAR},
    {"bytes_older_1d", LTR_TYPE_UVAR}};
static const ltr_field_desc end_fields[] = {
    {"snapshot", LTR_TYPE_UVAR}, {"stacks", LTR_TYPE_UVAR}, {"blocks", LTR_TYPE_UVAR},
    {"bytes", LTR_TYPE_UVAR}, {"untracked", LTR_TYPE_UVAR}, {"table_bytes", LTR_TYPE_UVAR},
    {"pause_ns", LTR_TYPE_UVAR}, {"duration_ns", LTR_TYPE_UVAR}};
LTR_EVENT_DEFINE(ev_begin, snap_provider, LTR_SNAP_EV_BEGIN, LTR_LEVEL_INFO, 0, "SnapshotBegin", begin_fields);
LTR_EVENT_DEFINE(ev_stack, snap_provider, LTR_SNAP_EV_STACK, LTR_LEVEL_INFO, 0, "SnapshotStack", stack_fields);
LTR_EVENT_DEFINE(ev_end, snap_provider, LTR_SNAP_EV_END, LTR_LEVEL_INFO, 0, "SnapshotEnd", end_fields);

enum { REASON_SINGLE = 1, REASON_PERIODIC = 2 };

_Atomic int snapshot_tracking;
static const _Atomic uint32_t odd_gen = 1; /* before the registry: never equal */
const _Atomic uint32_t *volatile agent_snap_gen = &odd_gen;
_Atomic uint32_t agent_snap_expect = 1;

static ltr_registry *reg;
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint32_t seen_gen = 1;
static uint32_t my_pid;
static uint64_t my_start;
static ltr_reg_snap_proc *_Atomic mine;
static uint64_t epoch_ns; /* when the table started: its seconds count from here */
static bool thread_started;
static uint64_t seq;      /* snapshots of this process */

uint32_t snapshot_now_s(uint64_t now_ns)
{
    return now_ns > epoch_ns ? (uint32_t)((now_ns - epoch_ns) / 1000000000u) : 0;
}

/* Our entry: ltr names a container's process by its pid outside, and says
 * which pid it has inside (snap_own_pid); without that, `ltr singlesnapshot`
 * of a process in a pid namespace of its own said it "exited before it
 * wrote its snapshot". */
static ltr_reg_snap_proc *find_mine(void)
{
    for (unsigned i = 0; i < LTR_SNAP_PROCS; i++) {
        ltr_reg_snap_proc *e = &reg->snap.procs[i];
        uint32_t pid = atomic_load(&e->pid);
        if (pid && (pid == my_pid || atomic_load(&reg->snap_own_pid[i]) == my_pid) &&
            atomic_load(&e->start) == my_start)
            return e;
    }
    return NULL;
}

/* The entry a new instance of an enabled name takes (the registry's lock is
 * held): its own old one, a free one, or one of a process that is gone. */
static ltr_reg_snap_proc *claim_entry(void)
{
    ltr_reg_snap_proc *e = find_mine();
    for (unsigned i = 0; !e && i < LTR_SNAP_PROCS; i++) {
        ltr_reg_snap_proc *c = &reg->snap.procs[i];
        uint32_t pid = atomic_load(&c->pid);
        if (!pid || !ltr_pid_alive((pid_t)pid))
            e = c;
    }
    if (!e)
        return NULL;
    atomic_store(&e->pid, 0);
    atomic_store(&reg->snap_own_pid[e - reg->snap.procs], 0);
    atomic_store(&e->start, my_start);
    atomic_store(&e->requested, 0);
    atomic_store(&e->written, 0);
    atomic_store(&e->period_s, 0);
    atomic_store(&e->tracking, 0);
    atomic_store(&e->snapshots, 0);
    atomic_store(&e->enabled, 1);
    atomic_store(&e->pid, my_pid);
    return e;
}

/* The file name of this process's executable (/proc/self/exe), read once at
 * start ("" if longer than a registry name can be): the name 'ltr start
 * --name', 'ltr watch --name' and heaptracingconfig go by, so that one name
 * serves all of them, however long: its comm is cut at 15 characters. A fork
 * child runs the same executable. */
static char exe_name[LTR_SNAP_LONG_NAME_MAX];

static void read_exe_name(void)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe_name[0] = 0;
    if (n <= 0)
        return;
    exe[n] = 0;
    char *deleted = strstr(exe, " (deleted)"); /* replaced on disk since it started */
    if (deleted && !deleted[10])
        *deleted = 0;
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    if (strlen(base) < sizeof exe_name)
        strcpy(exe_name, base);
}

/* name is the registry's, which any process of the user may write: each
 * comparison reads no more of it than its buffer could hold. */
static bool name_is_mine(const char *name, const char *comm)
{
    return !strncmp(name, comm, LTR_SNAP_NAME_MAX) ||
           (exe_name[0] && !strncmp(name, exe_name, LTR_SNAP_LONG_NAME_MAX));
}

/* `ltr snapshotconfig heap --name N enable`: new instances of N keep their
 * table from the start. N is the kernel's name of the process (comm) or its
 * executable's file name: a program started through a link (python3 ->
 * python3.11) has the link's name as comm, and was missed under the name
 * the other --name options know it by. */
static void enable_by_name(void)
{
    char comm[LTR_SNAP_NAME_MAX] = "";
    prctl(PR_GET_NAME, comm, 0, 0, 0);
    bool named = false;
    for (unsigned i = 0; i < LTR_SNAP_NAMES && !named; i++)
        named = atomic_load(&reg->snap.names[i].used) && name_is_mine(ltr_reg_snap_name_of(reg, i), comm);
    if (!named || ltr_registry_lock_by(ltr_now_ns() + LTR_REGISTRY_WAIT_NS) != 0)
        return;
    if (claim_entry())
        atomic_fetch_add(&reg->snap.gen, 2);
    ltr_registry_unlock();
}

void snapshot_init(ltr_registry *r)
{
    reg = r;
    my_pid = (uint32_t)getpid();
    my_start = ltr_proc_start_time(0);
    read_exe_name();
    enable_by_name();
    /* seen_gen and the expected word stay odd: the first hook looks */
    __atomic_store_n(&agent_snap_gen, &r->snap.gen, __ATOMIC_RELEASE);
}

static void *snap_thread(void *unused);

/* The snapshot thread, with every signal blocked: a signal sent to the
 * process goes to one of the program's own threads, as without the agent. */
static void start_thread(void)
{
    if (thread_started)
        return;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    thread_started = pthread_create(&t, &at, snap_thread, NULL) == 0;
    pthread_attr_destroy(&at);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void snapshot_changed(void)
{
    pthread_mutex_lock(&ctl_lock);
    uint32_t g = atomic_load(&reg->snap.gen);
    ltr_reg_snap_proc *e = find_mine();
    bool want = e && atomic_load(&e->enabled);
    if (want && !atomic_load(&snapshot_tracking)) {
        /* what an earlier enabling left (a hook still inserting as it was
         * turned off) would be blocks freed since: start empty */
        snap_table_clear();
        epoch_ns = ltr_now_ns();
        atomic_store(&snapshot_tracking, 1);
        start_thread();
    } else if (!want && atomic_load(&snapshot_tracking)) {
        atomic_store(&snapshot_tracking, 0);
        snap_table_clear();
    }
    if (e)
        atomic_store(&e->tracking, (uint32_t)atomic_load(&snapshot_tracking));
    atomic_store(&mine, e);
    atomic_store(&seen_gen, g);
    atomic_store_explicit(&agent_snap_expect, atomic_load(&snapshot_tracking) ? g | 1 : g,
                          memory_order_release);
    pthread_mutex_unlock(&ctl_lock);
}

void snapshot_after_fork(void)
{
    pthread_mutex_init(&ctl_lock, NULL);
    atomic_store(&snapshot_tracking, 0);
    snap_table_after_fork();
    thread_started = false; /* threads do not cross a fork */
    seq = 0;
    atomic_store(&mine, NULL);
    my_pid = (uint32_t)getpid();
    my_start = ltr_proc_start_time(0);
    atomic_store(&seen_gen, 1);
    atomic_store(&agent_snap_expect, 1);
    /* a new process of its name, as one that starts (`--name`): a prefork
     * service's workers kept no table, only their parent did (a review) */
    if (reg)
        enable_by_name();
}

bool snapshot_active(void)
{
    if (__builtin_expect(atomic_load_explicit(agent_snap_gen, memory_order_relaxed) !=
                             atomic_load_explicit(&seen_gen, memory_order_relaxed), 0) &&
        reg)
        snapshot_changed();
    return atomic_load_explicit(&snapshot_tracking, memory_order_relaxed);
}

bool snapshot_realloc_begin(void *old, uint64_t kept[2])
{
    agent_busy++;
    bool took = old && snapshot_active() && snap_table_take((uintptr_t)old, kept);
    agent_leave();
    return took;
}

void snapshot_realloc_failed(void *old, const uint64_t kept[2])
{
    snap_table_put_back((uintptr_t)old, kept);
}

/* ---- aggregation by stack ---------------------------------------------------- */

typedef struct stack_sum {
    uint32_t stack, oldest_s;
    uint64_t blocks, bytes, older[LTR_SNAP_AGES];
} stack_sum;

typedef struct sums {
    stack_sum *v; /* open addressing by stack id + 1 (0: empty) */
    uint64_t mask, n, blocks, bytes;
    bool full;
} sums;

static bool sums_grow(sums *m)
{
    uint64_t cap = m->v ? (m->mask + 1) * 2 : 1024;
    stack_sum *nv = mmap(NULL, cap * sizeof *nv, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (nv == MAP_FAILED)
        return false;
    for (uint64_t j = 0; m->v && j <= m->mask; j++) {
        if (!m->v[j].blocks)
            continue;
        uint64_t i = (m->v[j].stack * 0x9E3779B1u) & (cap - 1);
        while (nv[i].blocks)
            i = (i + 1) & (cap - 1);
        nv[i] = m->v[j];
    }
    if (m->v)
        munmap(m->v, (m->mask + 1) * sizeof *m->v);
    m->v = nv;
    m->mask = cap - 1;
    return true;
}

static void sums_add(const snap_block *b, void *arg)
{
    sums *m = arg;
    if ((!m->v || (m->n + 1) * 2 > m->mask + 1) && !sums_grow(m) && (!m->v || m->n + 1 > m->mask)) {
        m->full = true;
        return;
    }
    uint64_t i = (b->stack * 0x9E3779B1u) & m->mask;
    while (m->v[i].blocks && m->v[i].stack != b->stack)
        i = (i + 1) & m->mask;
    stack_sum *s = &m->v[i];
    if (!s->blocks) {
        s->stack = b->stack;
        m->n++;
    }
    s->blocks++;
    s->bytes += b->size;
    s->oldest_s = b->age_s > s->oldest_s ? b->age_s : s->oldest_s;
    for (unsigned k = 0; k < LTR_SNAP_AGES; k++)
        if (b->age_s >= ltr_snap_age_s[k])
            s->older[k] += b->size;
    m->blocks++;
    m->bytes += b->size;
}

/* ---- writing ------------------------------------------------------------------ */

static uint64_t event_ts(void)
{
    uint64_t ts = ltr_now_ns();
    uint64_t after = atomic_load_explicit(&agent_module_change_ts, memory_order_acquire);
    return ts <= after ? after + 1 : ts;
}

static void put(ltr_attach *a, unsigned s, unsigned c, ltr_event_desc *d, const uint64_t *v,
                unsigned nv, int u8_at)
{
    uint8_t payload[16 * LTR_VARINT_MAX];
    uint32_t n = 0;
    for (unsigned i = 0; i < nv; i++) {
        if ((int)i == u8_at)
            payload[n++] = (uint8_t)v[i];
        else
            n += (uint32_t)ltr_put_uvar(payload + n, v[i]);
    }
    emit_put(a, s, c, d, event_ts(), payload, n);
}

typedef struct snap_totals {
    uint64_t untracked, table_bytes, pause_ns, duration_ns;
} snap_totals;

static void write_into(unsigned s, unsigned c, const sums *m, const snap_totals *t, int reason)
{
    ltr_attach *a = emit_session(s, c);
    if (!a)
        return;
    put(a, s, c, &ev_begin, (uint64_t[]){seq, (uint64_t)reason, epoch_ns}, 3, 1);
    for (uint64_t i = 0; m->v && i <= m->mask; i++) {
        const stack_sum *ss = &m->v[i];
        if (!ss->blocks)
            continue;
        if (ss->stack) {
            _Atomic uint64_t none = 0;
            stacks_publish((stack_ref){.id = ss->stack, .hint = &none, .known_hint = &none}, s, a);
        }
        put(a, s, c, &ev_stack,
            (uint64_t[]){seq, ss->stack, ss->blocks, ss->bytes, ss->oldest_s, ss->older[0],
                         ss->older[1], ss->older[2], ss->older[3]},
            9, -1);
    }
    put(a, s, c, &ev_end,
        (uint64_t[]){seq, m->n, m->blocks, m->bytes, t->untracked, t->table_bytes, t->pause_ns,
                     t->duration_ns},
        8, -1);
}

/* Takes one snapshot into every session that wants snapshots; true if some
 * session got it. */
static bool take(int reason)
{
    if (!snap_provider.internal) /* registration failed: try again */
        ltr_provider_register(&snap_provider);
    uint32_t mask = __atomic_load_n(snap_provider.state, __ATOMIC_RELAXED);
    const ltr_reg_provider *slot = snap_provider.internal;
    if (!mask || !slot)
        return false;
    uint64_t t0 = ltr_now_ns();
    sums m = {0};
    snap_totals t = {0};
    uint64_t blocks;
    if (snap_table_walk(snapshot_now_s(t0), sums_add, &m, &t.pause_ns) != 0 || m.full) {
        if (m.v)
            munmap(m.v, (m.mask + 1) * sizeof *m.v);
        return false;
    }
    snap_table_stats(&blocks, &t.table_bytes, &t.untracked);
    t.duration_ns = ltr_now_ns() - t0;
    seq++;
    bool any = false;
    for (unsigned s = 0; s < LTR_MAX_SESSIONS && (mask >> s); s++) {
        if (!(mask & (1u << s)) || !ltr_reg_wants(slot, s, LTR_LEVEL_INFO, 0))
            continue;
        write_into(s, atomic_load_explicit(&slot->per[s].collector, memory_order_relaxed), &m, &t,
                   reason);
        any = true;
    }
    ltr_producer_flush_thread_to_files(); /* a file's now, not when the buffer fills: the recorder writes it */
    if (m.v)
        munmap(m.v, (m.mask + 1) * sizeof *m.v);
    return any;
}

/* ---- the thread -------------------------------------------------------------- */

static void wait_gen(uint32_t g, uint64_t timeout_ns)
{
    struct timespec ts = {.tv_sec = (time_t)(timeout_ns / 1000000000u),
                          .tv_nsec = (long)(timeout_ns % 1000000000u)};
    /* not FUTEX_PRIVATE: ltr wakes it from another process */
    syscall(SYS_futex, &reg->snap.gen, FUTEX_WAIT, g, timeout_ns ? &ts : NULL, NULL, 0);
}

static void *snap_thread(void *unused)
{
    (void)unused;
    agent_busy = 1; /* what this thread allocates is the agent's */
    prctl(PR_SET_NAME, "ltr-snapshot", 0, 0, 0);
    /* here, not in the hook that started the thread: claiming the
     * provider's slot may wait for the registry's lock */
    if (!snap_provider.internal)
        ltr_provider_register(&snap_provider);
    uint32_t period = 0;
    uint64_t due = 0;
    for (;;) {
        uint32_t g = atomic_load(&reg->snap.gen);
        if (g != atomic_load(&seen_gen))
            snapshot_changed();
        ltr_reg_snap_proc *e = atomic_load(&mine);
        uint64_t now = ltr_now_ns();
        if (e && atomic_load(&snapshot_tracking)) {
            uint64_t req = atomic_load(&e->requested);
            if (req > atomic_load(&e->written)) {
                if (take(REASON_SINGLE))
                    atomic_fetch_add(&e->snapshots, 1);
                atomic_store(&e->written, req);
            }
            uint32_t p = atomic_load(&e->period_s);
            if (p != period) /* a new period starts with a snapshot */
                due = now;
            period = p;
            if (period && now >= due) {
                if (take(REASON_PERIODIC))
                    atomic_fetch_add(&e->snapshots, 1);
                due += period * 1000000000ull;
                now = ltr_now_ns();
                if (due <= now) /* the snapshot took longer than the period */
                    due = now + period * 1000000000ull;
            }
        } else {
            period = 0;
        }
        wait_gen(g, !period ? 0 : due > now ? due - now : 1);
    }
    return NULL;
}
