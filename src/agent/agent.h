/*
 * agent/agent.h — the heap agent (libltr-heap.so), shared by its files.
 *
 * The agent is preloaded into a program and replaces the malloc family and
 * C++ operator new/delete (hooks.c). Each hook calls the real allocator and,
 * when some session enables the Ltr.Heap provider for this process (one load
 * of the registry word: the dormant cost), writes an Alloc/Free/Realloc
 * event (emit.c) with the id of the caller's stack (stacks.c). Stack nodes and the
 * loaded ELF objects (modules.c) go into the session's metadata region once.
 * docs/heap-events.md is the contract of what is written. It also records
 * two parts of the system provider that only the traced process sees, its
 * own mappings and its files (sysev.h: vmem.c, fileio.c).
 *
 * Everything the agent does itself runs with the thread's reentrancy guard
 * set, so its own allocations (attaching, libdw, libunwind, dl_iterate_phdr)
 * go untraced to the agent's own heap (ownheap.h), not the program's.
 */
#ifndef LTR_AGENT_AGENT_H
#define LTR_AGENT_AGENT_H

#include "event/producer.h"

#include <ltr/provider.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* `function` numbers of docs/heap-events.md */
enum heap_fn {
    FN_MALLOC = 1, FN_CALLOC = 2, FN_REALLOC = 3, FN_REALLOCARRAY = 4, FN_POSIX_MEMALIGN = 5,
    FN_ALIGNED_ALLOC = 6, FN_MEMALIGN = 7, FN_VALLOC = 8, FN_PVALLOC = 9,
    FN_NEW = 10, FN_NEW_ARR = 11, FN_NEW_NOTHROW = 12, FN_NEW_ARR_NOTHROW = 13,
    FN_NEW_AL = 14, FN_NEW_ARR_AL = 15, FN_NEW_AL_NOTHROW = 16, FN_NEW_ARR_AL_NOTHROW = 17,
    FN_FREE = 20, FN_DELETE = 21, FN_DELETE_ARR = 22, FN_DELETE_SIZED = 23,
    FN_DELETE_ARR_SIZED = 24, FN_DELETE_AL = 25, FN_DELETE_ARR_AL = 26,
    FN_DELETE_SIZED_AL = 27, FN_DELETE_ARR_SIZED_AL = 28, FN_DELETE_NOTHROW = 29,
    FN_DELETE_ARR_NOTHROW = 30, FN_DELETE_AL_NOTHROW = 31, FN_DELETE_ARR_AL_NOTHROW = 32,
};

/* Heap event timestamps are multiples of this, rounded down, but never at or
 * before the last module record (docs/heap-events.md). */
#define AGENT_TS_GRAIN_NS 100000u

/* The timestamp of the newest module record written (modules.c), which the
 * next events must come after (emit.c). */
extern _Atomic uint64_t agent_module_change_ts;

/* Nonzero while this thread runs agent code: hooks then only pass through.
 * Its low 16 bits count stretches of the agent's own work, whose
 * allocations come from the agent's heap (ownheap.h); AGENT_PASS counts
 * hooks that hand a program's call on unrecorded (operator new to malloc,
 * reallocarray to realloc), whose blocks stay the program's. */
extern __thread int agent_busy __attribute__((tls_model("initial-exec")));
#define AGENT_PASS (1 << 16)

/* Whether this thread runs the agent's own work now. */
static inline bool agent_own(void)
{
    return (agent_busy & (AGENT_PASS - 1)) != 0;
}

/* signals.c: signals of the program's handlers that came while this thread
 * ran agent code, to be sent again when it leaves. */
extern __thread uint64_t agent_held __attribute__((tls_model("initial-exec")));
void signals_release(void);

/* The end of a stretch of agent code (agent_busy++ at its start). */
static inline void agent_leave(void)
{
    if (--agent_busy == 0 && __builtin_expect(agent_held != 0, 0))
        signals_release();
}

/* The end of a hook's passing on (agent_busy += AGENT_PASS at its start). */
static inline void agent_pass_leave(void)
{
    if ((agent_busy -= AGENT_PASS) == 0 && __builtin_expect(agent_held != 0, 0))
        signals_release();
}

/* Nonzero while this thread is inside pthread_getattr_np (hooks.c). glibc
 * holds the lock of the thread asked about while it allocates there (the
 * main thread's stack comes from fopen("/proc/self/maps"), every thread's
 * CPU set from realloc), so the unwinder must not call it then for its own
 * stack bounds: that lock is not recursive. Rust's runtime asks at start. */
extern __thread int agent_in_getattr __attribute__((tls_model("initial-exec")));

/* Timestamp of the event this thread is writing, 0 outside one. */
extern __thread uint64_t agent_event_ts __attribute__((tls_model("initial-exec")));

/* The word of the registry that says which sessions enable Ltr.Heap; points
 * at a zero until the agent is set up. */
extern const uint32_t *volatile agent_heap_state;

/* Heap snapshots (snapshot.h): the registry's word that moves when any
 * process's snapshot setting changes, and the value this process expects of
 * it (odd while it keeps its table: never equal, so every hook comes in). */
extern const _Atomic uint32_t *volatile agent_snap_gen;
extern _Atomic uint32_t agent_snap_expect;

static inline bool agent_wanted(void)
{
    uint32_t snap = atomic_load_explicit(agent_snap_gen, memory_order_relaxed) ^
                    atomic_load_explicit(&agent_snap_expect, memory_order_relaxed);
    return __builtin_expect((__atomic_load_n(agent_heap_state, __ATOMIC_RELAXED) | snap) != 0, 0) &&
           !agent_busy;
}

/* credentials.c: the next syscall(2) looked up (from the constructor:
 * before, the hook makes the system call itself). */
void credentials_init(void);

/* emit.c: the events. Called with the guard clear; they set it. frame: the
 * hook's frame pointer (__builtin_frame_address(0) in a function built with
 * frame pointers), whose caller's stack is the event's; NULL: unwind from
 * emit.c and cut the agent's frames. */
void emit_alloc(void *p, size_t size, int fn, const void *frame);
void emit_free(void *p, int fn);
void emit_realloc(void *old, void *p, size_t size, int fn, const void *frame);
/* An event's timestamp: now, rounded down to AGENT_TS_GRAIN_NS, after the
 * last module record (docs/heap-events.md). */
uint64_t emit_timestamp(void);
/* Registers the provider (once, from the constructor). */
void emit_init(void);
/* Forgets per-process state in a fork child. */
void emit_after_fork(void);
/* The attachment to write into for session slot s, collector c, prepared
 * (modules, this thread's name); NULL to skip. */
ltr_attach *emit_session(unsigned s, unsigned c);
/* The next session slot, from *s on, of the provider whose registry slot
 * and enable mask are given, that wants (level, kw): its attachment,
 * prepared (emit_session), with its slot in *s and collector in *c; NULL
 * when none is left. */
ltr_attach *emit_next_session(const ltr_reg_provider *slot, uint32_t mask, uint8_t level, uint64_t kw,
                              unsigned *s, unsigned *c);
/* Writes one event record of d, its payload encoded already. */
void emit_put(ltr_attach *a, unsigned s, unsigned c, ltr_event_desc *d, uint64_t ts,
              const uint8_t *payload, uint32_t n);
/* The attachment of slot s if this process wrote into it already, else NULL. */
ltr_attach *emit_prepared(unsigned s);
/* The thread's name may have changed: write it again with the next event. */
void emit_thread_renamed(void);
/* Another thread's name changed (pthread_setname_np of a thread not the
 * caller): every thread writes its record again with its next event. */
void emit_other_thread_renamed(void);

/* stacks.c: the caller's stack, and the FRAME_NODES records of its trie nodes. */
typedef struct stack_ref {
    uint32_t id;            /* its innermost node; 0: none */
    uint32_t known;         /* for a new stack: the node of its longest known prefix */
    _Atomic uint64_t *hint; /* the prefix table's word of node id (trie.h) */
    _Atomic uint64_t *known_hint; /* and of node known */
} stack_ref;
void stacks_init(void);
/* The caller's stack: that of the caller of frame (see emit_alloc). */
stack_ref stacks_capture(const void *frame);
/* Appends the records of the nodes of ref that session slot s lacks. */
void stacks_publish(stack_ref ref, unsigned s, ltr_attach *a);
/* Session slot s is a new session: no stack is in it yet. */
void stacks_forget_session(unsigned s);
void stacks_after_fork(void);
bool stacks_in_agent(uintptr_t ip);

/* modules.c: MODULE records. */
void modules_init(void);
/* The loader's list now. Taken with no lock of the agent's held: it waits
 * for the loader's write lock, which glibc holds while it frees in dlclose
 * (whose frees come here). NULL if out of memory. */
typedef struct modules_view modules_view;
modules_view *modules_look(void);
void modules_view_free(modules_view *v);
/* Writes every loaded object into a session this process just attached to;
 * v (from modules_look, consumed) brings the list up to date first. */
void modules_publish_all(unsigned s, ltr_attach *a, modules_view *v);
/* Looks for objects loaded or unloaded since the last look and writes them
 * into every session this process writes into. cheap = only if the loader's
 * load/unload counters moved. */
void modules_rescan(bool cheap);
/* Load records that found a session's metadata region full are owed
 * (agent_modules_owed set) and written again by a later event, at most
 * once a millisecond (modules.c). */
extern _Atomic unsigned agent_modules_owed;
void modules_pay_owed(void);
void modules_after_fork(void);

/* The agent's uses of the loader's list (dl_iterate_phdr, libunwind's
 * lookups) hold this, and a fork waits until none runs: glibc 2.36 does not
 * reset the loader's list lock in a fork child, so a child forked while
 * another thread was in dl_iterate_phdr hung at its own first one (its
 * first event). Set up by modules_init.
 * agent_loader_enter never waits: false while a fork holds the lock (then
 * the caller does without the list, and does not call leave). A late
 * agent's fork handler runs before the program's own, and one of those may
 * wait for a thread that is in malloc: had that thread waited for the fork
 * here, neither would go on (test_e2e_attach's fork-handler tests). The
 * forking thread itself enters freely: it holds the lock for writing.
 * agent_loader_wait waits, for the one use that cannot do without
 * (redirect_all after a dlopen). */
struct dl_phdr_info;
bool agent_loader_enter(void);
void agent_loader_wait(void);
void agent_loader_leave(void);
/* dl_iterate_phdr, entered; -1 without calling cb while a fork holds the list. */
int agent_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg);

#endif
