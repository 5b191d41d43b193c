/*
 * agent/stacks.c — the call stack of each allocation, and the per-process
 * frame trie that gives each distinct stack an id.
 *
 * Unwinding reads the DWARF call frame information (.eh_frame), so stacks
 * are right in code built without frame pointers (Debian's libraries): the
 * agent's own unwinder (unwind.c, rules cached per address) for the common
 * case, libunwind's unw_backtrace for stacks it gives up on (signal frames,
 * DWARF expressions; fallback.c). LTR_HEAP_UNWIND=libunwind uses libunwind only;
 * LTR_HEAP_UNWIND=full walks every stack to its end (no reuse of the
 * previous walk's outer frames, unwind.c: for measuring);
 * LTR_HEAP_UNWIND=check unwinds each stack both ways, compares (and the
 * walk's sums of its hashes with a pass of their own), and says at
 * exit (stderr) how many stacks each way gave and how many differed, and
 * how many of the fast stacks' frames were the previous walk's, and how
 * many were stepped over at a guessed CFA.
 *
 * Stacks share their outer frames, as in heaptrack: a node of the trie
 * (trie.c) is (parent node, return address), a stack's id is the id of its
 * innermost node, and a new stack costs only the nodes it does not share (the
 * cost of new stacks was most of the agent's overhead when each was stored
 * and written whole). A known stack costs one probe of the trie's prefix
 * table, keyed by hashes of its frames; a new one finds its longest known
 * prefix and adds the rest. Each node remembers, per session slot, that its
 * FRAME_NODES record was claimed and written; an event names a stack only
 * after all its nodes are in the session's metadata region
 * (docs/heap-events.md).
 */
#include "agent/agent.h"
#include "agent/perthread.h"
#include "agent/trie.h"
#include "agent/unwind.h"
#include "base/records.h"

#include <link.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_DEPTH TRIE_MAX_PATH

/* This thread's prefix hashes of a new stack (4 KB): a block of the
 * thread's own (perthread.h), not TLS. */
typedef struct stacks_block {
    trie_hashes hashes;
} stacks_block;

static bool trie_ready;
static int depth = 64;
enum { UNWIND_FAST, UNWIND_LIBUNWIND, UNWIND_CHECK };
static int unwind_mode = UNWIND_FAST;
static _Atomic uint64_t n_fast, n_fallback, n_mismatch; /* stacks, for UNWIND_CHECK */
static _Atomic uint64_t n_frames, n_shared, n_guessed; /* fast stacks' frames, those reused, guessed */
static uintptr_t agent_lo, agent_hi;

static int find_agent(struct dl_phdr_info *info, size_t size, void *arg)
{
    uintptr_t self = (uintptr_t)arg, lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        lo = start < lo ? start : lo;
        hi = start + ph->p_memsz > hi ? start + ph->p_memsz : hi;
    }
    if (self < lo || self >= hi)
        return 0;
    agent_lo = lo;
    agent_hi = hi;
    return 1;
}

void stacks_init(void)
{
    const char *d = getenv("LTR_HEAP_DEPTH");
    if (d && *d) {
        long v = strtol(d, NULL, 10);
        depth = v < 0 ? 0 : v > MAX_DEPTH ? MAX_DEPTH : (int)v;
    }
    const char *u = getenv("LTR_HEAP_UNWIND");
    if (u && !strcmp(u, "libunwind"))
        unwind_mode = UNWIND_LIBUNWIND;
    else if (u && !strcmp(u, "check"))
        unwind_mode = UNWIND_CHECK;
    else if (u && !strcmp(u, "full"))
        unwind_set_reuse(false);
    dl_iterate_phdr(find_agent, (void *)(uintptr_t)stacks_init);
    trie_ready = trie_init();
    fallback_init();
}

bool stacks_in_agent(uintptr_t ip)
{
    return ip >= agent_lo && ip < agent_hi;
}

/* The node of the prefix of h's outermost k frames in t, id 0 if none. */
static stack_ref find_prefix(const trie_table *t, trie_hashes *h, int k)
{
    uint64_t h1;
    uint32_t h2;
    trie_prefix_hash(h, k, &h1, &h2);
    return trie_find(t, h1, h2);
}

/* The longest prefix of h's n frames that is in table t, known to be shorter
 * than n: its length (0: none) and node (id 0: none). New stacks mostly
 * differ from known ones in their few innermost frames: it looks 1, 2, 3, 4,
 * then 8, 16... frames in from the innermost (the first four prefetched by
 * the caller), then bisects. */
static int longest_prefix(const trie_table *t, trie_hashes *h, stack_ref *node)
{
    int n = h->n, lo = 0, hi = n; /* prefix lo is in (or is the root), hi is not */
    *node = (stack_ref){0};
    for (int step = 1; n - step > lo; step = step < TRIE_NEAR ? step + 1 : step * 2) {
        stack_ref r = find_prefix(t, h, n - step);
        if (r.id) {
            lo = n - step;
            *node = r;
            break;
        }
        hi = n - step;
    }
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        stack_ref r = find_prefix(t, h, mid);
        if (r.id) {
            lo = mid;
            *node = r;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* The node of the n frames f, whose hashes' sums are sums (trie.h), or to
 * be made (NULL). A known stack costs one probe; a new one hashes the
 * prefixes it looks at (hashes), to find the longest it shares. */
static stack_ref lookup_or_add(trie_hashes *hashes, void *const *f, int n, const uint64_t *sums,
                               bool rescan)
{
    if (n == 0)
        return (stack_ref){0};
    uint64_t made[2], path1;
    uint32_t path2;
    if (!sums)
        trie_path_sums(f, n, made);
    trie_hash_sums(sums ? sums : made, &path1, &path2);
    const trie_table *t = trie_current();
    stack_ref ref = {0}, base = {0};
    if (t && (ref = trie_find(t, path1, path2)).id)
        return ref;
    trie_hashes_start(hashes, f, n, sums ? sums : made);
    int known = 0;
    if (t) {
        /* A new stack's probes (longest_prefix) start now: their misses
         * overlap. */
        trie_hash_near(hashes, t);
        known = longest_prefix(t, hashes, &base);
    }
    /* publishing reads it (its slot's hint is set only if a stack ended
     * there): the miss overlaps the adding */
    __builtin_prefetch(&trie_nodes[base.id]);
    if (!(ref = trie_add(known + 1, hashes, base.id)).id)
        return ref; /* full: no more stacks */
    ref.known = base.id;
    ref.known_hint = base.hint;
    if (rescan)
        modules_rescan(true); /* new code may have been loaded */
    return ref;
}

/* Index of the first frame of buf that is not the agent's: some hooks call
 * others (reallocarray calls realloc while the real one is not known). */
static int past_agent(void *const *buf, int n)
{
    int i = 0;
    while (i < n && stacks_in_agent((uintptr_t)buf[i]))
        i++;
    return i;
}

/* Index of the caller's frame in buf: past the unwinder's own frames (at
 * most a few, libunwind's) and then the agent's (the hook, emit). */
static int first_caller_frame(void *const *buf, int n)
{
    int i = 0;
    while (i < n && i < 8 && !stacks_in_agent((uintptr_t)buf[i]))
        i++;
    return i + past_agent(buf + i, n - i);
}

static void say(const char *msg)
{
    ssize_t rc = write(2, msg, strlen(msg));
    (void)rc;
}

/* UNWIND_CHECK: the fast stack a (n frames from the caller on) against
 * libunwind's; the first few differences are told in full. */
__attribute__((noinline)) static void check_against_libunwind(void *const *a, int n, int max)
{
    void *b[MAX_DEPTH + 16];
    int m = fallback_backtrace(b, max);
    if (m < 0)
        return;
    int j = first_caller_frame(b, m);
    m = m - j > depth ? depth : m - j;
    if (m == n && !memcmp(a, b + j, sizeof(void *) * (size_t)n))
        return;
    if (atomic_fetch_add(&n_mismatch, 1) >= 5)
        return;
    char line[160];
    snprintf(line, sizeof line, "ltr-heap[%d]: unwind check: fast %d frames, libunwind %d\n",
             (int)getpid(), n, m);
    say(line);
    for (int k = 0; k < n || k < m; k++) {
        snprintf(line, sizeof line, "  %2d %18p %18p%s\n", k, k < n ? a[k] : NULL,
                 k < m ? b[j + k] : NULL, k < n && k < m && a[k] == b[j + k] ? "" : "  <--");
        say(line);
    }
}

/* UNWIND_CHECK: the hashes of the stack's n frames f from the walk's sums
 * against those of a pass of their own (a wrong sum would cost a needless
 * search of the trie at each event, never a wrong stack). */
static void check_sums(void *const *f, int n, const uint64_t sums[2])
{
    uint64_t made[2], a1, b1;
    uint32_t a2, b2;
    trie_path_sums(f, n, made);
    trie_hash_sums(made, &a1, &a2);
    trie_hash_sums(sums, &b1, &b2);
    if ((a1 == b1 && a2 == b2) || atomic_fetch_add(&n_mismatch, 1) >= 5)
        return;
    char line[160];
    snprintf(line, sizeof line, "ltr-heap[%d]: unwind check: the walk's hash of %d frames is not theirs\n",
             (int)getpid(), n);
    say(line);
}

__attribute__((destructor)) static void check_report(void)
{
    if (unwind_mode != UNWIND_CHECK)
        return;
    char line[160];
    snprintf(line, sizeof line,
             "ltr-heap[%d]: unwind check: %llu fast, %llu fallback, %llu mismatched, %llu refused "
             "(libunwind's pipe gone)\n", (int)getpid(), (unsigned long long)n_fast,
             (unsigned long long)n_fallback, (unsigned long long)n_mismatch,
             (unsigned long long)fallback_refused());
    say(line);
    snprintf(line, sizeof line, "ltr-heap[%d]: unwind reuse: %llu of %llu frames\n", (int)getpid(),
             (unsigned long long)n_shared, (unsigned long long)n_frames);
    say(line);
    snprintf(line, sizeof line, "ltr-heap[%d]: unwind guesses: %llu of %llu frames\n", (int)getpid(),
             (unsigned long long)n_guessed, (unsigned long long)n_frames);
    say(line);
    snprintf(line, sizeof line, "ltr-heap[%d]: %u frame nodes\n", (int)getpid(),
             (unsigned)trie_count());
    say(line);
}

/* For a stack from the fast unwinder: whether it met objects loaded or
 * unloaded since the last time (it looks them up for every new address),
 * so that modules.c need not ask the loader at every new stack (a third of
 * the benchmark's time when it did). */
static bool modules_moved(void)
{
    /* Read before writing: an exchange at every stack moved the line between
     * the threads' CPUs each time (a tenth of the benchmark's samples). */
    static struct {
        _Alignas(64) _Atomic unsigned v;
    } seen;
    unsigned gen = unwind_modules_generation();
    if (atomic_load_explicit(&seen.v, memory_order_relaxed) == gen)
        return false;
    return atomic_exchange_explicit(&seen.v, gen, memory_order_relaxed) != gen;
}

stack_ref stacks_capture(const void *frame)
{
    stacks_block *sb = trie_ready && depth ? agent_thread_block(AGENT_BLOCK_STACKS, sizeof *sb) : NULL;
    if (!sb)
        return (stack_ref){0}; /* no stack: as with stacks off */
    void *buf[MAX_DEPTH + 16];
    int n = -1, i = 0, max = frame ? depth + 4 : depth + 16;
    unwind_info ui;
    if (unwind_mode != UNWIND_LIBUNWIND) /* from frame: few agent frames, if any */
        n = unwind_fast(buf, max, frame, &ui);
    bool fast = n >= 0;
    if (fast)
        i = frame ? past_agent(buf, n) : first_caller_frame(buf, n);
    else if ((n = fallback_backtrace(buf, depth + 16)) >= 0)
        i = first_caller_frame(buf, n);
    else
        n = 0; /* a fork holds the loader's list, or libunwind's pipe is gone: this event goes without its stack */
    int count = n - i > depth ? depth : n - i;
    if (unwind_mode == UNWIND_CHECK) {
        atomic_fetch_add(fast ? &n_fast : &n_fallback, 1);
        if (fast) {
            atomic_fetch_add(&n_frames, (uint64_t)n);
            atomic_fetch_add(&n_shared, (uint64_t)ui.shared);
            atomic_fetch_add(&n_guessed, (uint64_t)ui.guessed);
            check_against_libunwind(buf + i, count, depth + 16);
        }
    }
    /* the walk's sums are the stack's when it is all of the walk */
    bool summed = fast && i == 0 && count == n;
    if (unwind_mode == UNWIND_CHECK && summed)
        check_sums(buf, count, ui.sums);
    return lookup_or_add(&sb->hashes, buf + i, count, summed ? ui.sums : NULL, !fast || modules_moved());
}

/* Node records waiting to be appended: consecutive nodes of one path,
 * outermost first, so each is the parent of the next. */
typedef struct node_batch {
    uint16_t n;
    uint32_t id[MAX_DEPTH];
} node_batch;

/* Appends one FRAME_NODES record of the batch and marks its nodes written.
 * When the session's metadata region has no room (the recorder far behind,
 * or stopped), gives their claims back instead and returns false: the next
 * stack through them writes them. Marked written regardless, they stayed
 * missing for good: every later event through them had no stack, long
 * after the recorder caught up. */
static bool flush(node_batch *b, uint32_t bit, ltr_attach *a)
{
    if (!b->n)
        return true;
    uint8_t rec[LTR_RECORD_HEADER_SIZE + 10 + 12 * MAX_DEPTH];
    uint32_t size = LTR_RECORD_HEADER_SIZE + 10 + 12u * b->n;
    ltr_put_u16(rec, LTR_META_FRAME_NODES);
    ltr_put_u16(rec + 2, 0);
    ltr_put_u32(rec + 4, size);
    ltr_put_u32(rec + 8, a->pid); /* the session's name for this process (producer.h) */
    ltr_put_u32(rec + 12, trie_nodes[b->id[0]].parent);
    ltr_put_u16(rec + 16, b->n);
    for (uint16_t i = 0; i < b->n; i++) {
        ltr_put_u32(rec + 18 + 12u * i, b->id[i]);
        ltr_put_u64(rec + 22 + 12u * i, trie_nodes[b->id[i]].ip);
    }
    bool ok = ltr_producer_meta_append(a, rec, size) == 0;
    for (uint16_t i = 0; i < b->n; i++) {
        if (ok)
            atomic_fetch_or_explicit(&trie_nodes[b->id[i]].written, bit, memory_order_release);
        else
            atomic_fetch_and_explicit(&trie_nodes[b->id[i]].claimed, ~bit, memory_order_release);
    }
    b->n = 0;
    return ok;
}

/* Waits for node nd, claimed by another thread, to be written; or takes its
 * claim when that thread gave it back (its append found no room): true
 * then, and this thread writes it. */
static bool wait_or_claim(fnode *nd, uint32_t bit)
{
    for (;;) {
        if (atomic_load_explicit(&nd->written, memory_order_acquire) & bit)
            return false;
        if (!(atomic_load_explicit(&nd->claimed, memory_order_acquire) & bit) &&
            !(atomic_fetch_or(&nd->claimed, bit) & bit))
            return true;
        sched_yield();
    }
}

/* Writes the nodes of stack ref that session slot s lacks, outermost first,
 * so that a node's parent is always before it. A node another thread is
 * writing is waited for, after this thread's own claims are written: a
 * waiting thread holds no unwritten claim, so waits never form a cycle.
 * After an append that found no room, nothing more of the stack is
 * written (a node's parent must be in before it), and the stack is not
 * marked published: its next event tries again. */
void stacks_publish(stack_ref ref, unsigned s, ltr_attach *a)
{
    if (atomic_load_explicit(ref.hint, memory_order_acquire) & TRIE_HINT(s))
        return;
    uint32_t bit = 1u << s, chain[MAX_DEPTH];
    int n = 0;
    for (uint32_t id = ref.id; id && n < MAX_DEPTH; id = trie_nodes[id].parent) {
        /* the known part of a new stack: its slot, just probed, rather than
         * its node, a cache miss */
        if (id == ref.known && (atomic_load_explicit(ref.known_hint, memory_order_acquire) &
                                TRIE_HINT(s)))
            break;
        if (atomic_load_explicit(&trie_nodes[id].written, memory_order_acquire) & bit)
            break;
        chain[n++] = id;
    }
    node_batch b;
    b.n = 0;
    while (n--) {
        fnode *nd = &trie_nodes[chain[n]];
        if (!(atomic_fetch_or(&nd->claimed, bit) & bit)) {
            b.id[b.n++] = chain[n];
            continue;
        }
        if (!flush(&b, bit, a))
            return;
        if (wait_or_claim(nd, bit))
            b.id[b.n++] = chain[n];
    }
    if (flush(&b, bit, a))
        atomic_fetch_or_explicit(ref.hint, TRIE_HINT(s), memory_order_release);
}

void stacks_forget_session(unsigned s)
{
    trie_forget(~(1u << s));
}

void stacks_after_fork(void)
{
    /* The child is a process of its own: its sessions hold none of its stacks
     * yet. Ids stay: they are per process, and the child's are its parent's. */
    trie_after_fork();
    trie_forget(0);
    unwind_after_fork();
}
