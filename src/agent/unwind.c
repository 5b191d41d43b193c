/*
 * agent/unwind.c — the agent's fast unwinder (x86-64), used by stacks.c for
 * every allocation's stack, with libunwind as the fallback.
 *
 * Why not libunwind alone: its unw_backtrace cost about 20 ns per frame on
 * the benchmark (bench/heap/run.sh: 1015 ns per operation against 114
 * uninstrumented with 40-level chains, an overhead 0.58 of heaptrack's where
 * the goal is 0.20; docs/heap-tracing.md). Per stack it builds a full
 * unw_cursor, and per frame it goes through its generic register machinery
 * and validates memory. Here the hot walk is: pc -> one 64-bit word of a
 * lock-free table -> CFA = SP or BP + offset, return address at CFA - 8,
 * BP saved at CFA - k or unchanged -> next frame, a few ns per frame.
 *
 * The rule of an address is derived once, from the .eh_frame of the object
 * holding it, with elfutils' libdw (dwarf_cfi_addrframe), under a try-lock:
 * a thread that finds it taken, and any frame whose rule is more than the
 * table can say (signal frames, DWARF expressions, a CFA on another
 * register), gives up and the whole stack goes to libunwind. Derived
 * rules, including "give up here", stay in a direct-mapped table of 2^16
 * words (512 KiB, bounded); a collision just derives again.
 *
 * Code without unwind information (a JIT's, in no ELF object, and V8's
 * builtins, in node's text without FDEs) is stepped over by its frame
 * pointer, as libunwind does (x86_64/Gstep.c: CFA = BP + 16, taken only
 * while BP lies at most 16 KiB above SP; else the stack ends there). Such
 * frames went to libunwind before: on node most stacks did (800 000 of
 * 1.26 million allocations of a loop of Buffer.alloc), each after two
 * fstat of fallback.c's pipe check and libunwind's validating reads, and
 * node ran 2.5 times as long under ltr as under heaptrack.
 *
 * Safety in the traced program: the walk reads memory only inside the
 * thread's stack (bounds from pthread_getattr_np, once per thread, never
 * from inside the program's own call of it: agent.h) and only
 * at CFAs that move strictly up the stack; anything else is a give-up.
 */
#include "agent/agent.h"
#include "agent/perthread.h"
#include "agent/procmaps.h"
#include "agent/trie.h"
#include "agent/unwind.h"

#if defined(__x86_64__)

#include <elfutils/libdw.h>
#include <dwarf.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- rules: one 32-bit word, stored beside a 32-bit address tag ---------- */

/* The CFA offset is the low 16 bits: the walk's chain from one frame to the
 * next (return address -> rule -> CFA -> return address) is then a mask and
 * an add. */
#define R_CFA_OFF_MAX 0xffffu                                 /* bits 0-15 */
enum { R_EMPTY = 0, R_STEP = 1, R_END = 2, R_GIVE_UP = 3 };  /* bits 16-17 */
#define R_KIND_SHIFT 16
#define R_CFA_BP (1u << 18)                                   /* else SP */
enum { BP_SAME = 0, BP_SAVED = 1, BP_LOST = 2 };              /* bits 19-20 */
#define R_BP_SHIFT 19
#define R_BP_OFF_SHIFT 21  /* bits 21-30: BP saved at CFA - 8 * this */
#define R_BP_OFF_MAX 0x3ffu /* 8 KiB: callee-saved pushes come before a frame's locals */
#define R_GUESS (1u << 31) /* no unwind information: the frame pointer's step (above) */
/* The plain step, most frames of a walk (bench/heap: 85 %): the CFA at SP
 * plus a multiple of 8, BP unchanged, no guess; one test of the word and
 * the bounds' one (the walk, below). Its CFA is above SP (no such rule has
 * offset 0: cfa_rule) and aligned as SP is (every SP the walk goes on
 * with is: unwind_fast, and the CFAs checked or so made). */
#define R_PLAIN_MASK 0xffff0007u
#define R_PLAIN (1u << R_KIND_SHIFT) /* kind_rule(R_STEP) */
/* libunwind's bound on a frame pointer taken as one: at most this above SP */
#define GUESS_SPAN 0x4000u

#define DWARF_RSP 7
#define DWARF_RBP 6
#define DWARF_RIP 16

static inline uint32_t rule_kind(uint32_t r) { return (r >> R_KIND_SHIFT) & 3u; }
static inline uint32_t rule_bp(uint32_t r) { return (r >> R_BP_SHIFT) & 3u; }
static inline uint32_t rule_cfa_off(uint32_t r) { return r & R_CFA_OFF_MAX; }
static inline uint32_t kind_rule(uint32_t kind) { return kind << R_KIND_SHIFT; }
static inline uint32_t rule_bp_off(uint32_t r) { return 8u * ((r >> R_BP_OFF_SHIFT) & R_BP_OFF_MAX); }

/* ---- the rule table ------------------------------------------------------- */

#define TABLE_BITS 16
#define TABLE_MASK ((1u << TABLE_BITS) - 1)

/* Rules are keyed by return address: the rule of the code at a is kept
 * under a + 1 (a return address is the instruction after its call, and one
 * subtraction fewer in the walk's chain).
 * Word = (key >> 16) << 32 | rule, at index key & mask: the index and the
 * tag together give back the whole key, so one atomic word says both which
 * address it is for and its rule (no torn pairs). The index is the key's low
 * bits alone, one operation in the walk's chain: mixing in the high bits
 * (3 operations) made a frame 4.8 ns instead of 3.4 in a walk of distinct
 * functions, and return addresses' low bits are as spread as any hash. */
static _Atomic uint64_t rules[1u << TABLE_BITS];

static inline uint32_t table_index(uintptr_t a) { return (uint32_t)a & TABLE_MASK; }

static inline uint32_t table_get(uintptr_t a)
{
    uint64_t w = atomic_load_explicit(&rules[table_index(a)], memory_order_relaxed);
    return (w >> 32) == (uint64_t)(a >> 16) ? (uint32_t)w : R_EMPTY;
}

static inline void table_put(uintptr_t a, uint32_t rule)
{
    uint64_t w = (uint64_t)(a >> 16) << 32 | rule;
    atomic_store_explicit(&rules[table_index(a)], w, memory_order_relaxed);
}

/* Counts the changes that void every thread's cached walk (below). */
static _Atomic unsigned epoch;

static void void_caches(void)
{
    atomic_fetch_add_explicit(&epoch, 1, memory_order_relaxed);
}

void unwind_flush(void)
{
    void_caches();
    for (uint32_t i = 0; i <= TABLE_MASK; i++)
        atomic_store_explicit(&rules[i], 0, memory_order_relaxed);
}

/* ---- loaded objects and their CFI (under derive_lock) -------------------- */

#define MAX_MODULES 512

typedef struct umod {
    uintptr_t lo, hi, bias; /* executable segments; load bias */
    char *path;
    Elf *elf;
    Dwarf_CFI *cfi;
    bool tried;
} umod;

static atomic_int derive_lock;
static umod mods[MAX_MODULES];
static int nmods;
static unsigned long long seen_adds, seen_subs;
static _Atomic unsigned generation;

unsigned unwind_modules_generation(void)
{
    return atomic_load_explicit(&generation, memory_order_relaxed);
}

static void drop_modules(bool release)
{
    for (int i = 0; release && i < nmods; i++) {
        if (mods[i].cfi)
            dwarf_cfi_end(mods[i].cfi);
        if (mods[i].elf)
            elf_end(mods[i].elf);
        free(mods[i].path);
    }
    nmods = 0;
}

static bool known_module(uintptr_t lo)
{
    for (int i = 0; i < nmods; i++)
        if (mods[i].lo == lo)
            return true;
    return false;
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    unsigned long long *counts = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        counts[0] = info->dlpi_adds;
        counts[1] = info->dlpi_subs;
    }
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        lo = start < lo ? start : lo;
        hi = start + ph->p_memsz > hi ? start + ph->p_memsz : hi;
    }
    if (hi == 0 || known_module(lo) || nmods == MAX_MODULES)
        return 0;
    /* The first object, named "", is the program itself. */
    char *path = info->dlpi_name && info->dlpi_name[0] ? procmaps_object_path(info) : strdup("/proc/self/exe");
    if (path)
        mods[nmods++] = (umod){.lo = lo, .hi = hi, .bias = info->dlpi_addr, .path = path};
    return 0;
}

/* Whether a rule was derived for an address in no object (a JIT's) since
 * the table was last emptied. */
static bool guessed_outside;

/* Objects come and go with dlopen/dlclose: look again when an address is in
 * none we know; an unload since the last look voids every rule, and so does
 * a load where addresses in no object were given the frame pointer's step
 * (a JIT's pages unmapped, an object loaded there: a return address kept
 * with its old rule would not be looked at again). False if the list could
 * not be read (a fork under way). */
static bool rescan(void)
{
    unsigned long long counts[2] = {seen_adds, seen_subs};
    if (agent_iterate_phdr(scan_one, counts) < 0)
        return false; /* looked at next time */
    if (counts[0] == seen_adds && counts[1] == seen_subs)
        return true;
    atomic_fetch_add_explicit(&generation, 1, memory_order_relaxed);
    void_caches();
    seen_adds = counts[0];
    if (counts[1] == seen_subs && guessed_outside) {
        unwind_flush();
        guessed_outside = false;
    }
    if (counts[1] != seen_subs) {
        drop_modules(true);
        unwind_flush();
        guessed_outside = false;
        if (agent_iterate_phdr(scan_one, counts) == 0)
            seen_subs = counts[1]; /* else looked at again next time */
    }
    return true;
}

/* The object holding a; NULL with *sure false if the loader's list could
 * not be read just now (a fork under way). */
static umod *module_of(uintptr_t a, bool *sure)
{
    *sure = true;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < nmods; i++)
            if (a >= mods[i].lo && a < mods[i].hi)
                return &mods[i];
        if (pass == 0)
            *sure = rescan();
    }
    return NULL;
}

static Dwarf_CFI *module_cfi(umod *m)
{
    if (m->tried)
        return m->cfi;
    m->tried = true;
    elf_version(EV_CURRENT);
    int fd = open(m->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    /* The whole file mapped (ELF_C_READ_MMAP), libelf lets go of the fd
     * (ELF_C_FDREAD: reads what is not mapped, then never touches it again)
     * and it is closed at once: kept, it was a number of the program's for
     * the process's life (fd 9 of a traced sh read /usr/bin/dash), which a
     * daemon closing every fd then reused (test_daemon_closing_every_fd). */
    m->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (m->elf && elf_cntl(m->elf, ELF_C_FDREAD) != 0) {
        elf_end(m->elf);
        m->elf = NULL;
    }
    close(fd);
    if (m->elf)
        m->cfi = dwarf_getcfi_elf(m->elf);
    return m->cfi;
}

/* ---- deriving a rule from the CFI ----------------------------------------- */

/* The CFA as SP or BP + offset, else 0. */
static uint32_t cfa_rule(Dwarf_Frame *fr)
{
    Dwarf_Op *ops;
    size_t n;
    if (dwarf_frame_cfa(fr, &ops, &n) != 0 || n != 1)
        return 0;
    Dwarf_Word reg;
    int64_t off;
    if (ops[0].atom == DW_OP_bregx) {
        reg = ops[0].number;
        off = (int64_t)ops[0].number2;
    } else if (ops[0].atom == DW_OP_breg0 + DWARF_RSP || ops[0].atom == DW_OP_breg0 + DWARF_RBP) {
        reg = ops[0].atom - DW_OP_breg0;
        off = (int64_t)ops[0].number;
    } else {
        return 0;
    }
    /* SP + 0 is no frame's (its return address would be below SP): the
     * walk gave such a CFA up at every frame; its rule now says so */
    if ((reg != DWARF_RSP && reg != DWARF_RBP) || off < (reg == DWARF_RSP) || off > (int64_t)R_CFA_OFF_MAX)
        return 0;
    return (reg == DWARF_RBP ? R_CFA_BP : 0) | (uint32_t)off | kind_rule(R_STEP);
}

/* Offset from the CFA of a register saved at CFA + offset; 1 if it is not
 * such a rule. */
static int64_t saved_at(const Dwarf_Op *ops, size_t n)
{
    if (n == 1 && ops[0].atom == DW_OP_call_frame_cfa)
        return 0;
    if (n == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst)
        return (int64_t)ops[1].number;
    return 1;
}

/* R_END if the return address is undefined (outermost frame), 0 if it is not
 * at CFA - 8, else R_STEP (kinds, not shifted). */
static uint32_t ra_rule(Dwarf_Frame *fr)
{
    Dwarf_Op mem[3], *ops;
    size_t n;
    if (dwarf_frame_register(fr, DWARF_RIP, mem, &ops, &n) != 0)
        return 0;
    if (n == 0)
        return ops ? R_END : 0;
    return saved_at(ops, n) == -8 ? R_STEP : 0;
}

/* The BP bits of the rule, or UINT32_MAX if BP's rule is not expressible. */
static uint32_t bp_rule(Dwarf_Frame *fr)
{
    Dwarf_Op mem[3], *ops;
    size_t n;
    if (dwarf_frame_register(fr, DWARF_RBP, mem, &ops, &n) != 0)
        return UINT32_MAX;
    if (n == 0)
        return (uint32_t)(ops ? BP_LOST : BP_SAME) << R_BP_SHIFT;
    int64_t off = saved_at(ops, n);
    if (off > 0 || off % 8 || -off / 8 > (int64_t)R_BP_OFF_MAX)
        return UINT32_MAX;
    return (uint32_t)BP_SAVED << R_BP_SHIFT | (uint32_t)(-off / 8) << R_BP_OFF_SHIFT;
}

/* The frame pointer's step, for code without unwind information (above):
 * CFA = BP + 16, the return address at CFA - 8, BP saved at CFA - 16. */
#define GUESS_RULE (kind_rule(R_STEP) | R_CFA_BP | 16u | (uint32_t)BP_SAVED << R_BP_SHIFT | 2u << R_BP_OFF_SHIFT | R_GUESS)

static uint32_t rule_from_cfi(Dwarf_CFI *cfi, Dwarf_Addr a)
{
    Dwarf_Frame *fr;
    if (dwarf_cfi_addrframe(cfi, a, &fr) != 0)
        return GUESS_RULE; /* no FDE covers it: libunwind's dwarf_step fails so and guesses too */
    bool signal = false;
    uint32_t rule = kind_rule(R_GIVE_UP);
    if (dwarf_frame_info(fr, NULL, NULL, &signal) == DWARF_RIP && !signal) {
        uint32_t ra = ra_rule(fr), cfa = cfa_rule(fr), bp = bp_rule(fr);
        if (ra == R_END)
            rule = kind_rule(R_END);
        else if (ra && cfa && bp != UINT32_MAX)
            rule = cfa | bp;
    }
    free(fr);
    return rule;
}

/* The rule kept under key (of the code at key - 1), derived now; R_EMPTY if
 * another thread is deriving (the caller gives up this stack rather than
 * wait). */
__attribute__((noinline, cold)) static uint32_t derive(uintptr_t key)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong_explicit(&derive_lock, &expected, 1, memory_order_acquire,
                                                 memory_order_relaxed))
        return R_EMPTY;
    uintptr_t a = key - 1;
    bool sure;
    umod *m = module_of(a, &sure);
    /* an object whose CFI cannot be read (its file gone, another mount
     * namespace's) is left to libunwind, which reads it from memory */
    Dwarf_CFI *cfi = m ? module_cfi(m) : NULL;
    uint32_t rule = cfi ? rule_from_cfi(cfi, a - m->bias) : m ? kind_rule(R_GIVE_UP) : GUESS_RULE;
    if (!m && !sure) {
        rule = R_EMPTY; /* not kept: an object may be there */
    } else {
        guessed_outside = guessed_outside || !m;
        table_put(key, rule);
    }
    atomic_store_explicit(&derive_lock, 0, memory_order_release);
    return rule;
}

void unwind_after_fork(void)
{
    /* A thread of the parent may have been inside libdw: leave its objects
     * alone (a leak, once per fork that found the lock taken). */
    if (atomic_load(&derive_lock))
        drop_modules(false);
    atomic_store(&derive_lock, 0);
    void_caches();
}

/* ---- the walk ------------------------------------------------------------- */

static __thread uintptr_t stack_lo __attribute__((tls_model("initial-exec")));
static __thread uintptr_t stack_hi __attribute__((tls_model("initial-exec")));

/* False if this thread's stack cannot be bounded (now: inside
 * pthread_getattr_np, agent.h, it is asked again next time). */
static bool stack_bounds(void)
{
    if (__builtin_expect(stack_hi != 0, 1))
        return stack_hi > 1;
    if (agent_in_getattr)
        return false;
    pthread_attr_t at;
    void *addr;
    size_t size;
    stack_hi = 1; /* tried */
    if (pthread_getattr_np(pthread_self(), &at) != 0)
        return false;
    if (pthread_attr_getstack(&at, &addr, &size) == 0 && size) {
        stack_lo = (uintptr_t)addr;
        stack_hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&at);
    return stack_hi > 1;
}

static inline uintptr_t load(uintptr_t a) { return *(const uintptr_t *)a; }

/* ---- reusing the outer part of the previous walk ---------------------------
 *
 * Consecutive allocations of a thread nearly always share most of their
 * outer frames (a parser's recursion, a server's request loop), and walking
 * those again was most of the agent's cost on deep stacks (cc1plus). So each
 * thread keeps its last walk that reached the outermost frame: per frame its
 * rule key (the return address), its CFA, BP as the frame was entered, and
 * the saved-BP slot an outer frame's rule took its BP from.
 *
 * Why the cached rest is exactly what a full walk would find: the walk is a
 * function of its state entering a frame (key, SP, BP, whether BP is known)
 * and of the words it loads; the rule of a key is fixed while the same code
 * is loaded there. Once the new walk has stepped over a frame whose key and
 * CFA equal a cached frame's: its next SP is that CFA; if the frame's CFA is
 * BP-based, the same key (same rule, same offset) and CFA mean the same BP
 * too; an SP-based one leaves BP as it was, so when the cached rest used that
 * BP (need_bp) it must equal the cached one, which is compared. From there
 * on the walk loads only at addresses given by that state and by the words
 * loaded before: each frame's return-address slot (CFA - 8) and, where an
 * outer CFA rule used the BP restored there, the saved-BP slot. If each of
 * those still holds the cached word (one load each, no rules), the full walk
 * would step through the same states, pass the same bounds checks (against
 * the same stack top) and end the same way, so the cached keys are its
 * frames. If one slot differs (a longjmp, other callers at the same depth),
 * the walk goes on the long way from this frame.
 *
 * Never reused: a walk cut at max or that gave up (it did not reach the
 * outermost frame: not stored), a walk longer than CACHE_MAX, anything
 * cached before an object was loaded or unloaded (the epoch: rescan,
 * unwind_flush after dlclose) or before a fork (the child's copy of the
 * cache is of its parent's rules), nor while the thread's reuse is paused
 * (below: the cache is empty then). Signal frames are give-ups, so no
 * cached walk goes through one. The cache is per thread and keyed by CFA
 * on this thread's stack: a walk on another stack (sigaltstack,
 * coroutines off the thread's stack) gives up before it could match, and
 * each word it checks lies above the matched CFA, itself above the current
 * SP, and at or below the stack top: inside the thread's stack. Only this
 * thread reads or writes its cache, with the agent's guard set (a signal
 * handler's allocation meanwhile is not traced): no locks, no allocation. */

#define CACHE_MAX 128
#define CFA_NONE UINTPTR_MAX /* the outermost frame, R_END: no CFA */

/* The frames of the last walk in its last n slots, outermost at the end. */
typedef struct walk_cache {
    int n;          /* 0: nothing to reuse */
    unsigned epoch; /* of the rules and objects it was walked with */
    uintptr_t key[CACHE_MAX];
    uintptr_t cfa[CACHE_MAX];
    uintptr_t bp_in[CACHE_MAX]; /* BP as the frame was entered */
    uintptr_t bp_at[CACHE_MAX]; /* where its rule restored the BP an outer frame used; 0 */
    bool need_bp[CACHE_MAX];    /* the walk from this frame out used bp_in */
    uint64_t sums[CACHE_MAX][2]; /* trie.h's sums of the keys from this slot out */
} walk_cache;

static bool reuse_on = true;

void unwind_set_reuse(bool on)
{
    reuse_on = on;
}

/* What the walk records per frame, for the cache. */
typedef struct walk_rec {
    uintptr_t key0; /* frame 0's key (pcs[0] + 1 when walking from here) */
    uintptr_t cfa[CACHE_MAX], bp_in[CACHE_MAX];
    uint32_t rule[CACHE_MAX];
} walk_rec;

/* ---- guessing each frame's CFA ----------------------------------------------
 *
 * A walk is a chain: a frame's return address is loaded from its CFA, its
 * rule from the table under that address, the next CFA from the rule, and
 * each load waits for the one before (about 13 cycles a frame, most of a
 * deep stack's cost where the reuse above does not pay: the deep workload's
 * innermost ten frames differ from one allocation to the next, its CFAs do
 * not). So a plain walk (not recording) keeps the CFA of each of its frames,
 * and the next one takes them as guesses: at each frame it computes the CFA
 * as ever and compares it with the guess, but loads the return address (and
 * a saved BP) at the guess, which comes from memory of its own and is hidden
 * from the compiler's knowledge of the equality (an empty asm): the next
 * frame's loads need not wait for this one's rule, and the processor runs
 * ahead through the frames while the comparisons, predicted, catch up.
 *
 * Exact: a frame is stepped over only once its computed CFA equals the
 * guess, so every value the walk goes on with is the one the chain would
 * give, and it loads nothing at an address the chain would not (a guess is
 * dereferenced only after it was checked, and after the bounds of the
 * chain's own checks). At the first frame whose guess fails, or that is not
 * an ordinary step (the outermost, a give-up, BP unknown), it leaves that
 * frame, its state untouched, to the chain. The guesses are this thread's
 * own CFAs, of the same stack, and never trusted.
 *
 * Keeping the guesses costs a store a frame and a second look at the first
 * frame that fails: on bench/heap's random depths, whose CFAs rarely repeat,
 * 5 % more instructions. So, as the reuse above, a thread guesses in windows
 * of PROBE_WALKS walks and goes on while at least half their frames were
 * guessed, else walks plainly for a pause that doubles from PAUSE_MIN to
 * PAUSE_MAX walks. */

typedef struct walk_guess {
    int n; /* CFAs of frames 0 .. n-1 of the thread's last guessing walk */
    int left;                 /* walks left in this window, or pause (off) */
    bool off;
    unsigned frames, guessed; /* in this window */
    unsigned pause;           /* walks in the next pause (0: PAUSE_MIN) */
    uintptr_t cfa[TRIE_SUM_MAX];
} walk_guess;

/* This thread's cache and the walk in progress: not in TLS (glibc takes TLS
 * from every thread's stack) nor on the program's stack (2.6 KB), but in a
 * block of the thread's own (perthread.h). */
typedef struct unwind_block {
    walk_cache cache;
    walk_rec rec;
    walk_guess guess;
} unwind_block;

/* The first slot at or after s whose words no longer hold what the cached
 * walk loaded there; CACHE_MAX if all do. */
static int first_changed(const unwind_block *ub, int s)
{
    for (int k = s; k < CACHE_MAX && ub->cache.cfa[k] != CFA_NONE; k++) {
        uintptr_t ra = k + 1 < CACHE_MAX ? ub->cache.key[k + 1] : 0;
        if (load(ub->cache.cfa[k] - 8) != ra)
            return k;
        if (ub->cache.bp_at[k] && load(ub->cache.bp_at[k]) != ub->cache.bp_in[k + 1])
            return k;
    }
    return CACHE_MAX;
}

/* Stores frames 0..count-1 of the walk in slots base.., below what is
 * cached from slot base + count out (the reused rest, or nothing). */
static void cache_store(unwind_block *ub, void *const *pcs, const walk_rec *w, int count, int base, unsigned e)
{
    if (base < 0) {
        ub->cache.n = 0;
        return;
    }
    bool need = base + count < CACHE_MAX && ub->cache.need_bp[base + count];
    static const uint64_t none[2];
    for (int f = count - 1; f >= 0; f--) {
        int s = base + f;
        uint32_t rule = w->rule[f];
        ub->cache.key[s] = f ? (uintptr_t)pcs[f] : w->key0;
        trie_sum_inner(ub->cache.sums[s], (void *)ub->cache.key[s],
                       s + 1 < CACHE_MAX ? ub->cache.sums[s + 1] : none);
        ub->cache.cfa[s] = w->cfa[f];
        ub->cache.bp_in[s] = w->bp_in[f];
        ub->cache.bp_at[s] = rule_bp(rule) == BP_SAVED && need ? w->cfa[f] - rule_bp_off(rule) : 0;
        need = rule_kind(rule) == R_STEP &&
               ((rule & R_CFA_BP) || (rule_bp(rule) == BP_SAME && need));
        ub->cache.need_bp[s] = need;
    }
    ub->cache.n = CACHE_MAX - base;
    ub->cache.epoch = e;
}

/* The walk, at frame n - 1, matched cached slot s and its rest still holds:
 * the cached outer frames complete pcs (up to max). */
static int finish_reused(unwind_block *ub, void **pcs, int n, int max, int s, const walk_rec *w, unsigned e,
                         int *shared)
{
    int outer = CACHE_MAX - 1 - s, take = n + outer > max ? max - n : outer;
    memcpy(pcs + n, &ub->cache.key[s + 1], sizeof(void *) * (size_t)take);
    cache_store(ub, pcs, w, n - 1, s - (n - 1), e);
    *shared = take == outer ? outer : 0;
    return n + take;
}

/* The sums of pcs[0 .. n), a walk just stored: the cache's from its
 * innermost slot, which hold them when its keys are pcs (a walk from the
 * agent's own pc keys frame 0 by pc + 1), else a pass over pcs. */
static void cached_sums(const unwind_block *ub, void *const *pcs, int n, uint64_t sums[2])
{
    int base = CACHE_MAX - ub->cache.n;
    if (ub->cache.n == n && ub->cache.key[base] == (uintptr_t)pcs[0]) {
        sums[0] = ub->cache.sums[base][0];
        sums[1] = ub->cache.sums[base][1];
        return;
    }
    sums[0] = sums[1] = 0;
    for (int i = 0; i < n; i++)
        trie_sum_frame(sums, pcs[i], i);
}

/* ---- when to record: reuse only where it pays ------------------------------
 *
 * Recording every frame and storing the walk costs about as much per frame
 * as walking it (bench/heap: +30..70 ns of CPU per operation), and pays only
 * when the next walks take a good part of their frames from it: on cc1plus
 * 77 % of the frames walked came from the previous walk (98 % of the walks
 * took at least half), on bench/heap, whose random 40-level paths share
 * little more than the thread's outermost frames, 9 %. So each thread
 * records for a window of PROBE_WALKS walks, goes on while at least a third
 * of their frames were reused, and otherwise walks plainly (nothing
 * recorded, nothing reused: the walk before the reuse) for a pause that
 * doubles at each window that did not pay, from PAUSE_MIN to PAUSE_MAX
 * walks, then probes again. A paused thread's cache is empty, so exactness
 * does not depend on the switch. */

#define PROBE_WALKS 16
#define PAUSE_MIN 64
#define PAUSE_MAX 4096

typedef struct reuse_policy {
    bool recording;
    int left;               /* walks left in this window or pause */
    unsigned frames, reused; /* in this window */
    unsigned pause;          /* walks in the next pause (0: PAUSE_MIN) */
} reuse_policy;

static __thread reuse_policy policy __attribute__((tls_model("initial-exec")));

/* Whether this thread's next walk records (and may reuse). */
static inline bool policy_records(void)
{
    if (policy.recording || --policy.left > 0)
        return policy.recording;
    policy = (reuse_policy){.recording = true, .left = PROBE_WALKS, .pause = policy.pause};
    return true;
}

/* After a recording walk of frames frames (0: it gave up), reused of them
 * taken from the previous walk. */
static void policy_count(unwind_block *ub, int frames, int reused)
{
    policy.frames += (unsigned)frames;
    policy.reused += (unsigned)reused;
    if (--policy.left > 0)
        return;
    if (policy.reused * 3 > policy.frames) {
        policy = (reuse_policy){.recording = true, .left = PROBE_WALKS};
        return;
    }
    unsigned pause = policy.pause ? policy.pause : PAUSE_MIN;
    policy = (reuse_policy){.left = (int)pause, .pause = pause < PAUSE_MAX ? 2 * pause : pause};
    ub->cache.n = 0;
}

/* Whether this thread's next plain walk guesses. */
static inline bool guess_on(walk_guess *g)
{
    if (!g->off)
        return true;
    if (--g->left > 0)
        return false;
    g->off = false; /* a window again, from no guesses */
    g->n = 0;
    g->left = PROBE_WALKS;
    return true;
}

/* After a guessing walk of frames frames, guessed of them stepped over at a
 * guess. */
static void guess_count(walk_guess *g, int frames, int guessed)
{
    g->frames += (unsigned)frames;
    g->guessed += (unsigned)guessed;
    if (--g->left > 0)
        return;
    bool paid = g->guessed * 2 >= g->frames;
    unsigned pause = g->pause ? g->pause : PAUSE_MIN;
    g->frames = g->guessed = 0;
    g->off = !paid;
    g->left = paid ? PROBE_WALKS : (int)pause;
    g->pause = paid ? 0 : pause < PAUSE_MAX ? 2 * pause : pause;
}

/* ---- the walk ------------------------------------------------------------ */

/* From the state (pc, sp, bp, key) of frame 0, into pcs[0..]. record: keep
 * each frame for the cache and reuse the cached outer part (a constant at
 * each call: two loops, the plain one without the bookkeeping).
 * Each frame's CFA must be above the last (so the walk ends) and its return
 * address inside the stack; a BP saved below the CFA too. Anything else, and
 * BP needed where it is not known, is a give-up (-1). */
static inline __attribute__((always_inline)) int
walk(unwind_block *ub, void **pcs, int max, uintptr_t pc, uintptr_t sp, uintptr_t bp, uintptr_t key,
     const bool record, const bool guessing, unwind_info *info)
{
    const uintptr_t hi = stack_hi;
    const unsigned e = atomic_load_explicit(&epoch, memory_order_relaxed);
    walk_rec *const w = record ? &ub->rec : NULL;
    if (record)
        w->key0 = key;
    /* cs: the next cached slot the walk's CFAs have not passed */
    int cs = record && ub->cache.n && ub->cache.epoch == e ? CACHE_MAX - ub->cache.n : CACHE_MAX;
    bool bp_known = true;
    int n = 0;
    /* each frame's terms of the path's hash (trie.h): they wait for nothing
     * but the frame, and run beside the walk's chain of loads */
    uint64_t sum[2] = {0, 0};
    if (!record)
        trie_sum_frame(sum, (void *)pc, 0);
    pcs[n++] = (void *)pc;
    int ncfa = 0; /* frames whose CFA is known: 0 .. ncfa-1 */
    int guessed = 0;
    walk_guess *const guess = guessing ? &ub->guess : NULL;
    /* the frames the guesses hold (above); the first that fails, the chain's */
    for (int g = guessing ? guess->n : 0; n < max && n - 1 < g;) {
        uint32_t rule = table_get(key);
        const bool plain = (rule & R_PLAIN_MASK) == R_PLAIN; /* as in the chain's loop below */
        if (!plain) {
            if (key >> 48)
                break;
            if (rule == R_EMPTY)
                rule = derive(key);
            if (rule_kind(rule) != R_STEP || ((rule & R_CFA_BP) && !bp_known) ||
                ((rule & R_GUESS) && (bp < sp || bp - sp > GUESS_SPAN)))
                break;
        }
        uintptr_t cfa = guess->cfa[n - 1];
        if (((rule & R_CFA_BP) ? bp : sp) + rule_cfa_off(rule) != cfa)
            break;
        __asm__("" : "+r"(cfa)); /* the guess's, not the rule's: the loads below wait for no rule */
        if (cfa > hi || (!plain && (cfa <= sp || (cfa & 7))))
            break;
        uintptr_t ra = load(cfa - 8), bp_out = bp;
        if (!plain && rule_bp(rule) == BP_SAVED) {
            uintptr_t at = cfa - rule_bp_off(rule);
            if (at < sp || at + 8 > hi)
                break;
            bp_out = load(at);
        }
        bp_known = bp_known && (plain || rule_bp(rule) != BP_LOST);
        bp = bp_out;
        sp = cfa;
        ncfa = n;
        guessed = n;
        if (!ra)
            goto walked;
        trie_sum_frame(sum, (void *)ra, n);
        pcs[n++] = (void *)ra;
        key = ra;
    }
    while (n < max) {
        uint32_t rule = table_get(key);
        if (!record && __builtin_expect((rule & R_PLAIN_MASK) == R_PLAIN, 1)) {
            /* the plain step (above): the CFA above SP and aligned as SP is */
            uintptr_t cfa = sp + rule_cfa_off(rule);
            if (cfa > hi)
                goto give_up;
            if (guessing)
                guess->cfa[n - 1] = cfa;
            ncfa = n;
            uintptr_t ra = load(cfa - 8);
            sp = cfa;
            if (!ra)
                break;
            trie_sum_frame(sum, (void *)ra, n);
            pcs[n++] = (void *)ra;
            key = ra;
            continue;
        }
        if (key >> 48) /* never in the table: its tag is key >> 16 */
            goto give_up;
        if (rule == R_EMPTY)
            rule = derive(key);
        if (__builtin_expect(rule_kind(rule) != R_STEP, 0)) {
            if (rule_kind(rule) != R_END)
                goto give_up;
            if (record && n <= CACHE_MAX) {
                w->cfa[n - 1] = CFA_NONE;
                w->rule[n - 1] = rule;
            }
            break;
        }
        uintptr_t base = sp, bp_in = bp;
        bool bp_known_in = bp_known;
        if (__builtin_expect(rule & R_CFA_BP, 0)) {
            if (!bp_known)
                goto give_up;
            base = bp;
        }
        if (__builtin_expect((rule & R_GUESS) && (bp < sp || bp - sp > GUESS_SPAN), 0)) {
            /* BP is no frame pointer here: libunwind ends the stack at this
             * frame, and so does the walk (decided by BP, which the cache
             * compares, as for any CFA on BP) */
            if (record && n <= CACHE_MAX) {
                w->cfa[n - 1] = CFA_NONE;
                w->rule[n - 1] = rule;
            }
            break;
        }
        uintptr_t cfa = base + rule_cfa_off(rule);
        if (cfa <= sp || cfa > hi || (cfa & 7))
            goto give_up;
        if (guessing)
            guess->cfa[n - 1] = cfa;
        ncfa = n;
        uintptr_t ra = load(cfa - 8);
        uint32_t bp_rule = rule_bp(rule);
        if (bp_rule == BP_SAVED) {
            uintptr_t at = cfa - rule_bp_off(rule);
            if (at < sp || at + 8 > hi)
                goto give_up;
            bp = load(at);
        } else if (bp_rule == BP_LOST) {
            bp_known = false;
        }
        if (record && n <= CACHE_MAX) {
            w->cfa[n - 1] = cfa;
            w->bp_in[n - 1] = bp_in;
            w->rule[n - 1] = rule;
        }
        while (record && cs < CACHE_MAX && ub->cache.cfa[cs] < cfa)
            cs++;
        if (record && cs < CACHE_MAX && ub->cache.cfa[cs] == cfa && ub->cache.key[cs] == key) {
            int changed = ub->cache.need_bp[cs] && (!bp_known_in || bp_in != ub->cache.bp_in[cs])
                              ? cs : first_changed(ub, cs);
            if (changed == CACHE_MAX) {
                int total = finish_reused(ub, pcs, n, max, cs, w, e, &info->shared);
                cached_sums(ub, pcs, total, info->sums);
                policy_count(ub, total, total - n);
                return total;
            }
            cs = changed + 1;
        }
        sp = cfa;
        if (!ra)
            break;
        if (!record)
            trie_sum_frame(sum, (void *)ra, n);
        pcs[n++] = (void *)ra;
        key = ra;
    }
walked:
    if (!record) {
        if (guessing) {
            guess->n = ncfa;
            guess_count(guess, n, guessed);
        }
        info->guessed = guessed;
        info->sums[0] = sum[0];
        info->sums[1] = sum[1];
        return n;
    }
    if (n == max) /* cut: it did not reach the outermost frame */
        ub->cache.n = 0;
    else
        cache_store(ub, pcs, w, n, CACHE_MAX - n, e);
    cached_sums(ub, pcs, n, info->sums);
    policy_count(ub, n, 0);
    return n;
give_up:
    if (guessing) {
        guess->n = ncfa;
        guess_count(guess, n, guessed);
    }
    if (record) {
        ub->cache.n = 0;
        policy_count(ub, 0, 0);
    }
    return -1;
}

__attribute__((noinline)) int unwind_fast(void **pcs, int max, const void *frame, unwind_info *info)
{
    uintptr_t pc, sp, bp, key;
    info->shared = info->guessed = 0;
    if (frame) {
        /* saved BP at frame, return address above it: the caller's registers */
        const uintptr_t *f = frame;
        sp = (uintptr_t)(f + 2);
        bp = f[0];
        pc = key = f[1];
    } else {
        /* One asm: the three are of the same instruction, whose CFI row holds. */
        __asm__ volatile("mov %%rbp, %2\n\tlea 0(%%rip), %0\n\tmov %%rsp, %1"
                         : "=&r"(pc), "=&r"(sp), "=&r"(bp));
        key = pc + 1; /* pc's rule, as if it were a return address */
    }
    unwind_block *ub = reuse_on ? agent_thread_block(AGENT_BLOCK_UNWIND, sizeof *ub) : NULL;
    if (max > TRIE_SUM_MAX) /* not from stacks.c, whose stacks are shorter */
        max = TRIE_SUM_MAX;
    /* an SP not 8-aligned (no compiled code's) is given up: the walk's
     * plain step relies on it */
    if (max <= 0 || (sp & 7) || !stack_bounds() || sp - 16 < stack_lo || sp >= stack_hi) {
        if (ub)
            ub->cache.n = 0;
        return -1;
    }
    if (ub && policy_records())
        return walk(ub, pcs, max, pc, sp, bp, key, true, false, info);
    if (ub && guess_on(&ub->guess))
        return walk(ub, pcs, max, pc, sp, bp, key, false, true, info);
    return walk(ub, pcs, max, pc, sp, bp, key, false, false, info);
}

#else /* not x86-64: libunwind does it all */

int unwind_fast(void **pcs, int max, const void *frame, unwind_info *info)
{
    (void)pcs;
    (void)max;
    (void)frame;
    info->shared = info->guessed = 0;
    return -1;
}

void unwind_set_reuse(bool on) { (void)on; }

void unwind_flush(void) {}
unsigned unwind_modules_generation(void) { return 0; }
void unwind_after_fork(void) {}

#endif
