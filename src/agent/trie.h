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

/* Two independent hashes of each prefix of a path: h1[k], h2[k] of its
 * outermost k frames, and the state they were made from (a, b), from which
 * the hashes of longer prefixes go on. */
typedef struct trie_hashes {
    uint64_t h1[TRIE_MAX_PATH + 1], a[TRIE_MAX_PATH + 1], b[TRIE_MAX_PATH + 1];
    uint32_t h2[TRIE_MAX_PATH + 1];
} trie_hashes;

/* Hashes prefixes from + 1 .. n of the n frames f (innermost first, n at
 * most TRIE_MAX_PATH); prefixes 1 .. from in h are these frames' already
 * (a caller's earlier path with the same outermost from frames). */
void trie_hash(void *const *f, int n, int from, trie_hashes *h);
/* The table to look up in; NULL until the first node is added. */
const trie_table *trie_current(void);
static inline void trie_prefetch(const trie_table *t, uint64_t h1)
{
    __builtin_prefetch(&t->slot[h1 & t->mask]);
}
/* The node of prefix (h1, h2) in t, id 0 if none. Lock-free. */
stack_ref trie_find(const trie_table *t, uint64_t h1, uint32_t h2);
/* Adds prefixes from..n of the n frames f below node parent, the node of
 * prefix from - 1 (those another thread added meanwhile are found, not
 * added twice); returns the node of prefix n, id 0 when the trie is full. */
stack_ref trie_add(int from, int n, const uint64_t *h1, const uint32_t *h2, void *const *f,
                   uint32_t parent);
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
