/*
 * event/registry.h — the per-user registry: one small shared file in the
 * runtime directory that lists the running sessions and, for every provider
 * any process or session has named, which sessions enable it with what level
 * and keywords. A producer's "is my provider enabled" check reads one word of
 * it (ltr_reg_provider.sessions), so enablement changes reach running
 * processes at once, with no thread and no signal. Changes are made under an
 * flock of the file; reads take no lock.
 */
#ifndef LTR_EVENT_REGISTRY_H
#define LTR_EVENT_REGISTRY_H

#include <ltr/common.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define LTR_MAX_SESSIONS 32
#define LTR_MAX_PROVIDERS 1024
#define LTR_SESSION_NAME_MAX 64
#define LTR_REGISTRY_MAGIC 0x3247455252544cull /* "LTRREG2" */

typedef struct ltr_reg_session {
    _Atomic uint64_t incarnation; /* 0: slot free */
    uint32_t recorder_pid;
    /* Set by a producer whose attach went unanswered for its whole wait (the
     * recorder is stopped or busy): producers then do not wait for an answer
     * at all. The recorder clears it whenever it runs its loop. */
    _Atomic uint32_t unanswered;
    char name[LTR_SESSION_NAME_MAX];
    /* Events of processes that could not attach to the session (its recorder
     * did not answer), per collector: lost, and counted here since there is
     * no shared memory to count them in. Reset when the slot is claimed. */
    _Atomic uint64_t unattached_lost[4];
} ltr_reg_session;

typedef struct ltr_reg_enable {
    _Atomic uint8_t level;     /* events with level <= this; 0 = all */
    _Atomic uint8_t collector; /* which of the session's collectors gets them */
    uint8_t pad[6];
    _Atomic uint64_t any;      /* event keywords must share a bit with any (0 = all) */
    _Atomic uint64_t all;      /* ... and hold every bit of all */
} ltr_reg_enable;

typedef struct ltr_reg_provider {
    _Atomic uint32_t sessions; /* bit s: enabled in session slot s. The fast-path word. */
    _Atomic uint32_t used;
    ltr_guid guid;
    char name[104];
    ltr_reg_enable per[LTR_MAX_SESSIONS];
} ltr_reg_provider;

/* Heap snapshots (docs/heap-tracing.md, "Heap snapshots"): which processes
 * keep a live-block table, and their requests. Written by ltr under the
 * registry's lock; the agent of process pid reads its own entry and writes
 * only the words marked "agent". */
#define LTR_SNAP_PROCS 512
#define LTR_SNAP_NAMES 64
#define LTR_SNAP_NAME_MAX 16 /* a process name (comm, or an executable's file name as short), with its 0 */
#define LTR_SNAP_LONG_NAME_MAX 256 /* an executable's file name (NAME_MAX), with its 0 */

typedef struct ltr_reg_snap_proc {
    _Atomic uint32_t pid;       /* 0: entry free */
    _Atomic uint32_t enabled;   /* the table is to be kept */
    _Atomic uint64_t start;     /* ltr_proc_start_time of the process: a reused pid is another */
    _Atomic uint64_t requested; /* snapshots asked for so far (singlesnapshot adds one) */
    _Atomic uint32_t period_s;  /* a snapshot every period_s seconds; 0: none */
    _Atomic uint32_t tracking;  /* agent: 1 while its table is kept */
    _Atomic uint64_t written;   /* agent: the requests answered so far */
    _Atomic uint64_t snapshots; /* agent: snapshots written (any reason) */
} ltr_reg_snap_proc;

typedef struct ltr_reg_snap_name {
    _Atomic uint32_t used;
    char name[LTR_SNAP_NAME_MAX];
} ltr_reg_snap_name;

typedef struct ltr_reg_snapshots {
    /* Moves (by 2, so never odd) at every change below. A hook of the agent
     * compares it with what it saw (agent.h: agent_wanted), so a change
     * reaches a process at its next allocation with no signal; the agent's
     * snapshot thread sleeps on it (a futex: ltr wakes it). */
    _Alignas(64) _Atomic uint32_t gen;
    uint32_t pad[15];
    ltr_reg_snap_proc procs[LTR_SNAP_PROCS];
    ltr_reg_snap_name names[LTR_SNAP_NAMES];
} ltr_reg_snapshots;

typedef struct ltr_registry {
    uint64_t magic;
    uint32_t nsessions, nproviders;
    _Atomic uint64_t next_incarnation;
    uint8_t pad[40];
    ltr_reg_session sessions[LTR_MAX_SESSIONS];
    ltr_reg_provider providers[LTR_MAX_PROVIDERS];
    /* Last, so that a registry file of an ltr before snapshots grows into
     * it (open_registry sizes it) and older readers map what they know. */
    ltr_reg_snapshots snap;
    /* Per entry of snap.procs, the process's pid in its own pid namespace
     * when that is not its pid here (a container's process: its agent
     * knows itself by that one, getpid()), else 0; written before the
     * entry's pid. Last, as snap is, for the same reason. */
    _Atomic uint32_t snap_own_pid[LTR_SNAP_PROCS];
    /* Per entry of snap.names, a name longer than the kernel's 15
     * characters (an executable's file name, which only /proc/self/exe can
     * match: its comm is cut), the entry's own name then empty, which no
     * process's is; else empty. Last, as snap is, for the same reason. */
    char snap_long_names[LTR_SNAP_NAMES][LTR_SNAP_LONG_NAME_MAX];
} ltr_registry;

/* The name of snap.names[i]: its own, or its long one. */
static inline const char *ltr_reg_snap_name_of(const ltr_registry *r, unsigned i)
{
    return r->snap.names[i].name[0] ? r->snap.names[i].name : r->snap_long_names[i];
}

/* Whether name is a session's name as `ltr start` takes one: 1 to
 * LTR_SESSION_NAME_MAX - 1 ASCII letters, digits, '_', '.' and '-'. So it
 * and any suffix make one file name in the runtime directory: no '/'. */
bool ltr_session_name_ok(const char *name);
/* Copies the name of session rs out of the shared registry into out (one
 * read: a writer cannot change it between the check and the use), true when
 * it is a session name (ltr_session_name_ok); else out is empty. Any process
 * that maps the registry can write it: a name such as "../../tmp/x" made
 * root's traced programs attach to a socket of that writer's and root's
 * `ltr status` open files outside the runtime directory (test_registry.c). */
bool ltr_reg_session_name(const ltr_reg_session *rs, char out[LTR_SESSION_NAME_MAX]);

/* Maps the registry of this user (creating it), once per process. NULL on
 * failure, with err filled. */
ltr_registry *ltr_registry_get(ltr_error *err);
/* Whether this process, as it is now, is of the registry it mapped: the
 * same effective user, and dirfd (its runtime directory opened now; -1 if
 * it could not be) the directory the registry is in. A process that
 * mapped root's registry and then became another user (a service's
 * worker, setuid after fork) is not: the sessions that registry lists are
 * not its to join, nor are those of the same name in its new user's
 * directory. */
bool ltr_registry_reaches(int dirfd);
/* Gives the registry up when this process can no longer become the user
 * who mapped it (none of its real, effective and saved uids is that one: a
 * root service's worker made www-data for good; a seteuid that keeps the
 * way back gives nothing up, since code run then could take it back and
 * open the file anyway). Its pages become zero pages of its own in one mmap
 * (MAP_FIXED: every address stays readable, with no moment a load faults,
 * so a thread that reads a provider word then reads 0, disabled) and its fd
 * is closed: code run in the process can then write neither root's
 * registry nor the file. From then on the registry is that empty copy: no
 * session, no provider, no lock. Called by the agent's hooks of the setuid
 * family after a call that succeeded, and by a producer that finds it no
 * longer reaches its registry (a raw setuid system call; libltr without
 * the agent), through ltr_producer_leave, which gives the sessions' memory
 * up with it. No lock, no allocation, errno kept; true when it left the
 * registry now. */
bool ltr_registry_leave(void);
/* Locks / unlocks the registry for changes (flock, across processes). */
void ltr_registry_lock(void);
void ltr_registry_unlock(void);
/* The lock for a traced program, which must never hang on ltr: waits no
 * later than deadline_ns (ltr_now_ns's clock); 0 or -ETIMEDOUT. */
int ltr_registry_lock_by(uint64_t deadline_ns);
/* The longest a traced program waits for the registry's lock. */
#define LTR_REGISTRY_WAIT_NS (250 * 1000000ull)

/* The provider slot with this GUID, if one was claimed; takes no lock (a slot
 * once claimed keeps its GUID). */
ltr_reg_provider *ltr_registry_find_provider(ltr_registry *r, const ltr_guid *g);

/* Finds the provider slot with this GUID, or claims a free one (caller holds the lock). */
ltr_reg_provider *ltr_registry_provider(ltr_registry *r, const ltr_guid *g, const char *name);

/* Does a session in slot s enable an event of this level and keywords? */
static inline bool ltr_reg_wants(const ltr_reg_provider *p, unsigned s, uint8_t level, uint64_t kw)
{
    const ltr_reg_enable *e = &p->per[s];
    uint8_t lv = atomic_load_explicit(&e->level, memory_order_relaxed);
    uint64_t any = atomic_load_explicit(&e->any, memory_order_relaxed);
    uint64_t all = atomic_load_explicit(&e->all, memory_order_relaxed);
    if (lv && level > lv)
        return false;
    if (kw == 0)
        return true;
    return (any == 0 || (kw & any)) && (kw & all) == all;
}

/* Ends the session of slot s if the slot still holds that incarnation:
 * clears its provider bits, then frees the slot; false when it was ended
 * already. Once freed, a slot may be claimed by another session at once, so
 * only the incarnation may say whose the bits are (a recorder that cleared
 * them twice, at stop and at exit, once silenced the session started
 * between: test_registry.c). Caller holds the lock. */
bool ltr_registry_release(ltr_registry *r, unsigned s, uint64_t incarnation);

/* Clears slots whose recorder is gone (killed), and those whose name is no
 * session name (ltr_reg_session_name: written by another process): their
 * sessions and provider bits. Caller holds the lock. A recorder's pid is as
 * its own pid namespace numbers it: seen from another one (a container
 * sharing the runtime directory) a live recorder looks gone, so lives, when
 * given, is asked too (the recorder's side: its session record still
 * locked). Returns how many of the slots cleared had a name that is none. */
unsigned ltr_registry_reap(ltr_registry *r, bool (*lives)(const ltr_reg_session *rs, uint64_t inc, void *ctx),
                           void *ctx);

#endif
