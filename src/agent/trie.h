/*
 * agent/trie.h — the per-process frame trie of the heap agent (trie.c): the
 * nodes that stacks.c names its stacks by, and the prefix table that finds a
 * node from hashes of the frames of its path. stacks.c unwinds and decides
 * what to look up; trie.c owns the memory and the rules of adding.
 */
#ifndef LTR_AGENT_TRIE_H
#define LTR_AGENT_TRIE_H

#include "agent/agent.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define TRIE_MAX_NODES (1u << 20)

/* A frame node: the frame ip called from the frames of node parent (0: ip is
 * the outermost frame). Indexed by node id, 1, 2, 3 ... in creation order. */
typedef struct fnode {
    uint64_t ip;
    uint32_t parent;
    _Atomic uint32_t claimed, written; /* bit s: its record in session slot s */
    uint32_t slot;                     /* its slot in the table it was added to */
} fnode;

extern fnode *trie_nodes;

/* A slot of the prefix table (trie.c says what the words hold). */
typedef struct pslot {
    _Atomic uint64_t key, val;
} pslot;

/* One generation of the prefix table; lookups keep the one they started
 * with (an older one holds fewer nodes, never wrong ones). */
typedef struct trie_table {
    pslot *slot;
    uint64_t mask;
} trie_table;

/* Reserves the nodes' address space; false if there is none (no stacks then). */
bool trie_init(void);
/* The longest path hashed. */
#define TRIE_MAX_PATH 256

/* The sums behind a path's two hashes (64 + 24 bits). Each is a polynomial
 * of the frames' mixes, the outermost the highest power, so a path's sums
 * are one term a frame, its mix times the base's power of its place from the
 * innermost: terms that wait for nothing, kept where the path is made (the
 * unwinder adds each frame's as it steps to it, where the multiplies hide
 * under the walk's loads). The prefix of a path's outermost k frames is
 * then the path's sums less those of its innermost n - k frames, divided by
 * the base's power n - k (the bases are odd: their powers have inverses).
 * s[0], s[1] of frames 0 .. n-1, frame i the i-th from the innermost, i
 * below TRIE_SUM_MAX. */
#define TRIE_SUM_MAX 512
extern uint64_t trie_pow[TRIE_SUM_MAX][2]; /* the bases' powers (trie_init) */

static inline uint64_t trie_mix(const void *ip)
{
    uint64_t m = (uint64_t)(uintptr_t)ip * 0xbf58476d1ce4e5b9ull;
    return m ^ m >> 31;
}

/* Adds frame ip, the i-th from the innermost, to the sums s. */
static inline void trie_sum_frame(uint64_t s[2], const void *ip, int i)
{
    uint64_t m = trie_mix(ip);
    s[0] += m * trie_pow[i][0];
    s[1] += m * trie_pow[i][1];
}

/* The sums of frame ip followed outward by a path of sums outer. */
static inline void trie_sum_inner(uint64_t s[2], const void *ip, const uint64_t outer[2])
{
    uint64_t m = trie_mix(ip);
    s[0] = m + outer[0] * trie_pow[1][0];
    s[1] = m + outer[1] * trie_pow[1][1];
}

/* The sums of the n frames f (innermost first): for a path the unwinder
 * did not sum as it walked. */
void trie_path_sums(void *const *f, int n, uint64_t s[2]);
/* The hashes of a path from its sums. */
void trie_hash_sums(const uint64_t s[2], uint64_t *h1, uint32_t *h2);

/* A new path's prefixes, hashed as asked: the sums of its innermost frames
 * are made only as far as the prefixes looked at need (a new stack mostly
 * differs from a known one in its few innermost frames). */
#define TRIE_NEAR 4
typedef struct trie_hashes {
    void *const *f; /* the path, innermost first */
    int n;          /* its frames, at most TRIE_MAX_PATH */
    int summed;     /* inner[0 .. summed] are made */
    int near;       /* near_h1/h2[q - 1]: the prefix of n - q frames, q <= near */
    uint64_t total[2];
    uint64_t near_h1[TRIE_NEAR];
    uint32_t near_h2[TRIE_NEAR];
    uint64_t inner[TRIE_MAX_PATH + 1][2]; /* the sums of the innermost q frames */
} trie_hashes;

/* Starts h on the n frames f whose sums are total. */
void trie_hashes_start(trie_hashes *h, void *const *f, int n, const uint64_t total[2]);
/* The hashes of the prefix of h's outermost k frames, 1 <= k <= n. */
void trie_prefix_hash(trie_hashes *h, int k, uint64_t *h1, uint32_t *h2);
/* Hashes, in one pass, the prefixes a new stack's search looks at first (a
 * frame shorter than the path, two, up to TRIE_NEAR), kept in h for
 * trie_prefix_hash, and prefetches their slots in t (if not NULL). */
void trie_hash_near(trie_hashes *h, const trie_table *t);

/* The table to look up in; NULL until the first node is added. */
const trie_table *trie_current(void);
static inline void trie_prefetch(const trie_table *t, uint64_t h1)
{
    __builtin_prefetch(&t->slot[h1 & t->mask]);
}
/* The node of prefix (h1, h2) in t, id 0 if none. Lock-free. */
stack_ref trie_find(const trie_table *t, uint64_t h1, uint32_t h2);
/* Adds prefixes from..n of h's n frames below node parent, the node of
 * prefix from - 1 (those another thread added meanwhile are found, not
 * added twice); returns the node of prefix n, id 0 when the trie is full. */
stack_ref trie_add(int from, trie_hashes *h, uint32_t parent);
/* Nodes so far. */
uint32_t trie_count(void);
/* Clears, in every node, the claimed and written bits not in keep. */
void trie_forget(uint32_t keep);
/* In a fork child: the lock another thread held is free. */
void trie_after_fork(void);

/* The copy of the written bit of session slot s kept beside the node's key
 * (slots 0..7 only: for the others it is never set). */
#define TRIE_HINT(s) ((s) < 8 ? 1ull << (32 + (s)) : 0)

#endif
