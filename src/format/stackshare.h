/*
 * format/stackshare.h — the trace writer's rewriting of STACK records into
 * STACK_REF records (docs/trace-format.md): a stack is told as "the outermost
 * k frames of earlier stack B of this process, then these new frames", like
 * heaptrack's frame trie. The heap agent writes every frame of every distinct
 * stack; most of them repeat the outer frames of stacks before, and this is
 * what keeps them out of the file.
 *
 * The writer keeps, per process, a trie of the frames of the stacks it wrote
 * (outermost first), each node naming the stack that first went through it.
 * A PROCESS record for a pid (a new process, or exec) starts a new trie, as
 * the stack ids of a new image start over. Memory is bounded: past
 * LTR_STACKSHARE_MAX_NODES nodes, new stacks are matched but add no nodes.
 */
#ifndef LTR_FORMAT_STACKSHARE_H
#define LTR_FORMAT_STACKSHARE_H

#include "base/records.h"

#include <stddef.h>
#include <stdint.h>

#define LTR_STACKSHARE_MAX_NODES (1u << 21)
#define LTR_STACKSHARE_PATH 256 /* levels of the last path remembered */

typedef struct ltr_stack_node ltr_stack_node;

typedef struct ltr_stackshare {
    ltr_stack_node *nodes; /* open addressing on (tree, parent, ip) */
    size_t cap, n;
    uint32_t next_node, next_tree;
    uint32_t *tree_pid, *tree_id; /* pid -> its current trie, open addressing */
    size_t tcap, tn;
    /* The trie path of the last stack, outermost first: consecutive stacks
     * share outer frames, and comparing them here saves a cache-missing
     * probe of the node table per frame. */
    uint32_t last_tree, last_n;
    uint64_t last_ip[LTR_STACKSHARE_PATH];
    uint32_t last_node[LTR_STACKSHARE_PATH], last_stack[LTR_STACKSHARE_PATH];
} ltr_stackshare;

/* Appends the METADATA records of p (len bytes, whole records) to out, STACK
 * records rewritten where they share frames with earlier ones. Records it
 * cannot parse are copied as they are. Returns 0, or -ENOMEM (out is then
 * unusable and the state reset: the caller writes the records as they came). */
int ltr_stackshare_rewrite(ltr_stackshare *s, const uint8_t *p, size_t len, ltr_bytes *out);
/* Forgets every stack: after records that may not have reached the file. */
void ltr_stackshare_reset(ltr_stackshare *s);
void ltr_stackshare_free(ltr_stackshare *s);

#endif
