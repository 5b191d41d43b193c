/*
 * agent/emit.c — writing heap events into the sessions that enable Ltr.Heap.
 *
 * The first time this process writes into a session (per session
 * incarnation), it "prepares" it: no stack of the table is in it yet, and
 * every loaded module is written. The first time a thread writes into a
 * session, its THREAD record (name) is written. Then each event: the stack is
 * unwound once, whatever the number of sessions; the records of its frame
 * nodes are written into a session before the first event that uses it; the event record is
 * encoded here directly into the thread's buffer (reserve/commit), compact:
 * addresses, sizes and stack ids are varints (docs/heap-events.md).
 */
#include "agent/agent.h"
#include "agent/perthread.h"
#include "agent/snapshot.h"
#include "agent/sysev.h"
#include "event/event.h"
#include "base/heap_events.h"
#include "base/records.h"
#include "prim/prim.h"

#include <pthread.h>
#include <sys/prctl.h>
#include <unistd.h>

static ltr_provider heap_provider = {.name = LTR_HEAP_PROVIDER, .state = &ltr_never_enabled};

static const ltr_field_desc alloc_fields[] = {
    {"address", LTR_TYPE_PVAR}, {"size", LTR_TYPE_UVAR}, {"stack", LTR_TYPE_UVAR},
    {"function", LTR_TYPE_U8}};
static const ltr_field_desc free_fields[] = {{"address", LTR_TYPE_PVAR}, {"function", LTR_TYPE_U8}};
static const ltr_field_desc realloc_fields[] = {
    {"old_address", LTR_TYPE_PVAR}, {"address", LTR_TYPE_PVAR}, {"size", LTR_TYPE_UVAR},
    {"stack", LTR_TYPE_UVAR}, {"function", LTR_TYPE_U8}};
LTR_EVENT_DEFINE(ev_alloc, heap_provider, LTR_HEAP_EV_ALLOC, LTR_LEVEL_VERBOSE, 0, "Alloc", alloc_fields);
LTR_EVENT_DEFINE(ev_free, heap_provider, LTR_HEAP_EV_FREE, LTR_LEVEL_VERBOSE, 0, "Free", free_fields);
LTR_EVENT_DEFINE(ev_realloc, heap_provider, LTR_HEAP_EV_REALLOC, LTR_LEVEL_VERBOSE, 0, "Realloc", realloc_fields);

const uint32_t *volatile agent_heap_state = &ltr_never_enabled;
__thread uint64_t agent_event_ts __attribute__((tls_model("initial-exec")));

static ltr_registry *reg;
static pthread_mutex_t prep_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t prepared_inc[LTR_MAX_SESSIONS];
static ltr_attach *prepared_att[LTR_MAX_SESSIONS];

/* Per thread: the session incarnation its THREAD record was written for
 * (agent_thread.named); NULL: no memory, the record is written each time. */
/* Renames of a thread by another (pthread_setname_np(t, ...), t not the
 * caller: main naming its workers). The renamed thread's tid is not known
 * to the caller, so every thread compares this count with the one it last
 * saw at its next event and writes its record again, its name read anew:
 * one relaxed load per event, one record per thread per rename. */
static _Atomic uint32_t other_renames;

static agent_thread *thread_named(void)
{
    agent_thread *t = agent_thread_block(AGENT_BLOCK_THREAD, sizeof(agent_thread));
    if (!t)
        return NULL;
    uint32_t r = atomic_load_explicit(&other_renames, memory_order_relaxed);
    if (__builtin_expect(r != t->renames_seen, 0)) {
        memset(t->named, 0, sizeof t->named);
        t->renames_seen = r;
    }
    return t;
}

static void uids_check(ltr_grain_clock *c, uint64_t ns);

void emit_init(void)
{
    agent_busy++;
    ltr_error err;
    reg = ltr_registry_get(&err);
    if (reg && ltr_provider_register(&heap_provider) == 0) {
        /* not at the first event: that may be inside an allocation glibc
         * makes holding the lock atexit takes (node's 33rd atexit hung) */
        ltr_producer_init();
        stacks_init();
        modules_init();
        pthread_atfork(NULL, NULL, emit_after_fork);
        ltr_grain_set_due(uids_check);
        __atomic_store_n(&agent_heap_state, heap_provider.state, __ATOMIC_RELEASE);
        snapshot_init(reg);
        sysev_init();
    }
    agent_leave();
}

void emit_after_fork(void)
{
    for (unsigned s = 0; s < LTR_MAX_SESSIONS; s++) {
        atomic_store(&prepared_inc[s], 0);
        prepared_att[s] = NULL;
    }
    emit_thread_renamed();
    pthread_mutex_init(&prep_lock, NULL);
    stacks_after_fork();
    modules_after_fork();
    snapshot_after_fork();
}

ltr_attach *emit_prepared(unsigned s)
{
    ltr_attach *a = prepared_att[s];
    uint64_t inc = atomic_load_explicit(&prepared_inc[s], memory_order_acquire);
    return a && inc && atomic_load_explicit(&a->incarnation, memory_order_relaxed) == inc ? a : NULL;
}

void emit_other_thread_renamed(void)
{
    atomic_fetch_add_explicit(&other_renames, 1, memory_order_relaxed);
}

void emit_thread_renamed(void)
{
    agent_thread *t = agent_blocks[AGENT_BLOCK_THREAD];
    if (t)
        memset(t->named, 0, sizeof t->named);
}

/* The loader's list is read before prep_lock is taken: a thread that waits
 * for the loader must hold no lock that a thread inside the loader (a free
 * in dlclose) may wait for (modules.c). */
static void prepare(unsigned s, ltr_attach *a, uint64_t inc)
{
    modules_view *v = modules_look();
    pthread_mutex_lock(&prep_lock);
    if (atomic_load(&prepared_inc[s]) != inc) {
        stacks_forget_session(s);
        modules_publish_all(s, a, v);
        v = NULL;
        prepared_att[s] = a;
        atomic_store_explicit(&prepared_inc[s], inc, memory_order_release);
    }
    pthread_mutex_unlock(&prep_lock);
    modules_view_free(v);
}

static void write_thread(ltr_attach *a)
{
    char name[17] = "";
    prctl(PR_GET_NAME, name, 0, 0, 0);
    size_t n = strnlen(name, 16);
    uint8_t rec[LTR_RECORD_HEADER_SIZE + 18 + 16];
    uint32_t size = (uint32_t)(LTR_RECORD_HEADER_SIZE + 18 + n);
    ltr_put_u16(rec, LTR_META_THREAD);
    ltr_put_u16(rec + 2, 0);
    ltr_put_u32(rec + 4, size);
    ltr_put_u32(rec + 8, a->pid);
    ltr_put_u32(rec + 12, (uint32_t)ltr_gettid());
    ltr_put_u64(rec + 16, ltr_now_ns());
    ltr_put_u16(rec + 24, (uint16_t)n);
    memcpy(rec + 26, name, n);
    ltr_producer_meta_append(a, rec, size);
}

/* The slot's session the way session_for finds it the first time, or when
 * the thread's shortcut does not hold. */
static __attribute__((noinline)) ltr_attach *session_anew(unsigned s, unsigned c)
{
    bool unreachable;
    ltr_attach *a = ltr_producer_session(reg, s, &unreachable);
    if (!a) {
        if (unreachable)
            ltr_event_count_unattached(reg, s, c);
        return NULL;
    }
    uint64_t inc = atomic_load_explicit(&a->incarnation, memory_order_acquire);
    if (atomic_load_explicit(&prepared_inc[s], memory_order_acquire) != inc)
        prepare(s, a, inc);
    if (__builtin_expect(atomic_load_explicit(&agent_modules_owed, memory_order_relaxed) != 0, 0))
        modules_pay_owed(); /* a module's load record found the region full before */
    agent_thread *t = thread_named();
    if (!t || t->named[s] != inc) {
        write_thread(a);
        if (t) {
            t->named[s] = inc;
            t->att[s] = a;
            memset(t->layouts[s], 0, sizeof t->layouts[s]); /* another session's, or the parent's */
        }
    }
    return a;
}

/* The thread's shortcut (perthread.h): slot s holds the session this thread
 * did its first duties for (prepared, its THREAD record written), still
 * attached, with no rename since and no module record owed. What
 * ltr_producer_session and session_anew check comes to this when it holds;
 * their calls were a sixth of a free event's instructions (callgrind of
 * heap-workload 1 50000 12 at --depth 0). A fork clears named (the child's
 * one thread), and the child's prepared_inc with it. */
static inline ltr_attach *known_session(const agent_thread *t, unsigned s)
{
    uint64_t inc = t->named[s];
    ltr_attach *a = t->att[s];
    if (!inc || !a || atomic_load_explicit(&reg->sessions[s].incarnation, memory_order_acquire) != inc ||
        atomic_load_explicit(&a->incarnation, memory_order_acquire) != inc ||
        atomic_load_explicit(&other_renames, memory_order_relaxed) != t->renames_seen ||
        atomic_load_explicit(&agent_modules_owed, memory_order_relaxed) != 0)
        return NULL;
    return a;
}

/* emit_session, inlined into emit_next_session and so into every event's
 * loop: the calls in between were a tenth of the agent's instructions an
 * event on bench/heap's deep workload (callgrind). */
static inline __attribute__((always_inline)) ltr_attach *session_for(unsigned s, unsigned c)
{
    agent_thread *t = agent_thread_block(AGENT_BLOCK_THREAD, sizeof(agent_thread));
    ltr_attach *a = t ? known_session(t, s) : NULL;
    return __builtin_expect(a != NULL, 1) ? a : session_anew(s, c);
}

/* The attachment to write into for session slot s, prepared; NULL to skip. */
ltr_attach *emit_session(unsigned s, unsigned c) { return session_for(s, c); }

static inline __attribute__((always_inline)) ltr_attach *
next_session(const ltr_reg_provider *slot, uint32_t mask, uint8_t level, uint64_t kw, unsigned *s, unsigned *c)
{
    for (; slot && *s < LTR_MAX_SESSIONS && (mask >> *s); ++*s) {
        *s += (unsigned)__builtin_ctz(mask >> *s); /* straight to the next slot with a session */
        if (!ltr_reg_wants(slot, *s, level, kw))
            continue;
        *c = atomic_load_explicit(&slot->per[*s].collector, memory_order_relaxed);
        ltr_attach *a = session_for(*s, *c);
        if (a)
            return a;
    }
    return NULL;
}

ltr_attach *emit_next_session(const ltr_reg_provider *slot, uint32_t mask, uint8_t level, uint64_t kw,
                              unsigned *s, unsigned *c)
{
    return next_session(slot, mask, level, kw, s, c);
}

/* One heap event's values, encoded once its stack id is known. */
typedef struct heap_event {
    ltr_event_desc *d;
    uint64_t old, addr, size;
    uint8_t fn;
    const void *frame; /* where the stack starts (emit_alloc) */
} heap_event;

#define HEAP_PAYLOAD_MAX (4 * LTR_VARINT_MAX + 1)

/* The payload in the field order of the layouts above; returns its length. */
static inline __attribute__((always_inline)) uint32_t encode(const heap_event *e, uint32_t stack, uint8_t *p)
{
    size_t n = 0;
    if (e->d == &ev_realloc)
        n += ltr_put_uvar(p + n, e->old);
    n += ltr_put_uvar(p + n, e->addr);
    if (e->d != &ev_free) {
        n += ltr_put_uvar(p + n, e->size);
        n += ltr_put_uvar(p + n, stack);
    }
    p[n++] = e->fn;
    return (uint32_t)n;
}

void emit_put(ltr_attach *a, unsigned s, unsigned c, ltr_event_desc *d, uint64_t ts,
              const uint8_t *payload, uint32_t n)
{
    uint64_t inc = atomic_load_explicit(&a->incarnation, memory_order_acquire);
    ltr_cevent_in in = {.layout = ltr_event_layout_id(d, a, s), .payload = n, .ts = ts};
    if (in.layout && ltr_producer_put(a, inc, s, c, in.layout, ts, payload, n))
        return;
    if (!in.layout) {
        ltr_producer_count_lost(a, c);
        return;
    }
    bool lost;
    uint8_t *p = ltr_producer_reserve_event(a, s, c, &in, &lost);
    if (!p)
        return;
    memcpy(p, payload, n);
    ltr_producer_commit();
}

/* A heap event's record: its layout id from the thread's shortcut, which
 * holds for the session session_for found (named[s] is its incarnation);
 * the producer writes it only into that incarnation. Otherwise, and when
 * the buffer is full, emit_put's general way. */
static inline void put_heap(ltr_attach *a, unsigned s, unsigned c, ltr_event_desc *d, uint64_t ts,
                            const uint8_t *payload, uint32_t n)
{
    agent_thread *t = agent_blocks[AGENT_BLOCK_THREAD];
    uint64_t inc = t && t->att[s] == a ? t->named[s] : 0;
    if (inc) {
        uint32_t *layout = &t->layouts[s][d->id - LTR_HEAP_EV_ALLOC];
        if (!*layout) { /* kept only when taken while the session was still inc */
            uint32_t id = ltr_event_layout_id(d, a, s);
            if (atomic_load_explicit(&a->incarnation, memory_order_acquire) == inc)
                *layout = id;
        }
        if (*layout && ltr_producer_put(a, inc, s, c, *layout, ts, payload, n))
            return;
    }
    emit_put(a, s, c, d, ts, payload, n);
}

/* The live-block table of heap snapshots (snapshot.h) follows the event:
 * its stack is the one the sessions get. (A realloc's old block left the
 * table before the allocator ran: hooks.c.) */
static void keep(const heap_event *e, uint32_t stack, uint64_t ts)
{
    if (e->d == &ev_free)
        snap_table_remove((uintptr_t)e->addr);
    else
        snap_table_insert((uintptr_t)e->addr, e->size, stack, snapshot_now_s(ts));
}

/* A thread's uids, at its clock's first read (its first event) and then at
 * the first read UIDS_CHECK_NS later (ltr_grain_set_due): a setuid made by
 * a `syscall` instruction of the program's own (Go's RawSyscall), which no
 * hook sees (credentials.c), leaves the registry and the sessions' memory
 * (ltr_producer_leave) within 10 ms of the thread's events. A getpid and a
 * getresuid; at every event they were two system calls on the write path,
 * and a test of the time at every event was 4 instructions an event more
 * (callgrind of heap-workload 1 50000 12 under ltr record, --depth 0:
 * emit_timestamp 0.58 M to 0.79 M; docs/benchmarks.md, "Leaving the
 * registry (session 39)"). Linux changes the calling thread's uids alone:
 * the thread that made the call is the one that sees it. */
#define UIDS_CHECK_NS (10 * 1000000ull)

static void uids_check(ltr_grain_clock *c, uint64_t ns)
{
    c->due_ns = ns + UIDS_CHECK_NS;
    ltr_producer_leave();
}

/* The stamp from the thread's clock between grain edges (prim.h): 18.8 ns
 * instead of clock_gettime's 23.5 on this machine. The clock's state is in
 * the thread's block, not TLS (perthread.h: the agent keeps only words
 * there); without a block, the clock itself. */
static uint64_t grain_now(void)
{
    agent_thread *t = agent_thread_block(AGENT_BLOCK_THREAD, sizeof(agent_thread));
    if (t)
        return ltr_grain_now(&t->clock, AGENT_TS_GRAIN_NS);
    uint64_t ns = ltr_now_ns();
    return ns - ns % AGENT_TS_GRAIN_NS;
}

uint64_t emit_timestamp(void)
{
    uint64_t ts = grain_now();
    uint64_t after = atomic_load_explicit(&agent_module_change_ts, memory_order_acquire);
    if (__builtin_expect(ts <= after, 0))
        ts = after + 1;
    return ts;
}

/* Writes one event into every session that wants it; events other than Free
 * carry the caller's stack, unwound at most once. Inlined into each of
 * emit_alloc, emit_free and emit_realloc, with encode: each copy knows its
 * event, so their tests of the kind fold away (callgrind of heap-workload
 * 1 50000 12 at --depth 0: 68.8 M to 66.9 M instructions). */
static inline __attribute__((always_inline)) void emit(const heap_event *e)
{
    agent_busy++;
    bool snap = snapshot_active();
    const ltr_reg_provider *slot = heap_provider.internal;
    uint32_t mask = __atomic_load_n(heap_provider.state, __ATOMIC_RELAXED);
    /* Rounded down to 100 microseconds: finer digits are noise to a heap
     * analysis (heaptrack keeps 10 ms) and cost bytes: at the microsecond, a
     * fifth of a real program's trace (cc1plus; docs/heap-events.md).
     * Rounding down keeps the order that matters: a free is stamped before the
     * block can be handed out again. But never at or before the last module
     * record: a library unloaded a moment ago must not look loaded to an
     * event that came after. */
    uint64_t ts = emit_timestamp();
    agent_event_ts = ts;
    bool with_stack = e->d != &ev_free;
    stack_ref st = {0};
    bool captured = snap && with_stack;
    if (captured)
        st = stacks_capture(e->frame);
    uint8_t payload[HEAP_PAYLOAD_MAX];
    uint32_t n = 0;
    ltr_attach *a;
    unsigned c;
    for (unsigned s = 0; (a = next_session(slot, mask, LTR_LEVEL_VERBOSE, 0, &s, &c)); s++) {
        if (!n) {
            if (with_stack && !captured)
                st = stacks_capture(e->frame);
            n = encode(e, st.id, payload);
        }
        if (st.id)
            stacks_publish(st, s, a);
        put_heap(a, s, c, e->d, ts, payload, n);
    }
    if (snap)
        keep(e, st.id, ts);
    agent_event_ts = 0;
    agent_blocks_settle();
    agent_leave();
}

void emit_alloc(void *p, size_t size, int fn, const void *frame)
{
    emit(&(heap_event){&ev_alloc, 0, (uint64_t)(uintptr_t)p, size, (uint8_t)fn, frame});
}

void emit_free(void *p, int fn)
{
    emit(&(heap_event){&ev_free, 0, (uint64_t)(uintptr_t)p, 0, (uint8_t)fn, NULL});
}

void emit_realloc(void *old, void *p, size_t size, int fn, const void *frame)
{
    emit(&(heap_event){&ev_realloc, (uint64_t)(uintptr_t)old, (uint64_t)(uintptr_t)p, size,
                       (uint8_t)fn, frame});
}
