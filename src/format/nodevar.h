/*
 * format/nodevar.h — FRAME_NODES records in both their forms
 * (docs/heap-events.md): kind 8 as the heap agent writes it (fixed u32 ids,
 * u64 addresses) and kind 9 FRAME_NODES_V, the varint form the trace writer
 * turns each one into on its way to the file (about half the compressed
 * bytes). Both are read node by node through one iterator, so the writer's
 * rewrite and the reader share the rules of what a good record is.
 *
 * Kind 9 numbers its first node from the last node of the previous kind 9
 * record of the same pid in the same METADATA chunk (the "base"): the agent's
 * ids grow by one per node, so the delta is nearly always 0. The writer
 * cannot use the agent's records for this (its threads write concurrently),
 * and bases never cross a chunk, so a lost chunk can never shift the ids of
 * the chunks after it. A PROCESS record restarts its pid's base at 0 (exec:
 * ids start over).
 */
#ifndef LTR_FORMAT_NODEVAR_H
#define LTR_FORMAT_NODEVAR_H

#include "base/records.h"

#include <stddef.h>
#include <stdint.h>

/* One FRAME_NODES or FRAME_NODES_V record, read node by node. */
typedef struct ltr_nodes_rec {
    uint32_t pid, parent; /* parent of the first node; 0: outermost frame */
    uint32_t count;
    /* the iterator's own */
    const uint8_t *p;
    size_t len, pos, readable; /* readable >= len: kind 9's varints are read 8 bytes at a time up to it */
    uint32_t i, id, base;
    int var;
} ltr_nodes_rec;

/* Opens a kind 8 body: -1 when its header or its count nodes do not fit. */
int ltr_nodes_open(ltr_nodes_rec *r, const uint8_t *body, size_t len);
/* Opens a kind 9 body up to its nodes (pid, parent, count): -2 when even
 * the pid is bad, -1 when what follows it is (r->pid is then set). The
 * first node's id counts from r->base, 0 until the caller sets it.
 * readable (>= len) bytes from body may be read, none of them past len
 * used: the last node's address, 6 or 7 bytes at the record's end, read
 * byte by byte when readable was len, was a third of reading bench/heap's
 * nodes (callgrind: 7.9 M of 22.5 M instructions in ltr_nodes_take). */
int ltr_nodes_open_var(ltr_nodes_rec *r, const uint8_t *body, size_t len, size_t readable);
/* The next node: 1 and its id and address, 0 after the last, -1 when the
 * record is bad there (a varint or an id that is not below 2^24). */
int ltr_nodes_next(ltr_nodes_rec *r, uint32_t *id, uint64_t *ip);

/* One node as read: its id and return address. */
typedef struct ltr_node {
    uint64_t ip;
    uint32_t id;
} ltr_node;

/* Reads up to max next nodes of r into v, each checked as ltr_nodes_check
 * checks them: how many, 0 after the last, -1 when the record is bad among
 * them. The reader takes a record of up to LTR_NODES_BATCH nodes whole and
 * stores it from v, reading it once instead of checking it then reading it
 * again: FRAME_NODES_V read in 6.9 ms instead of 9.2 on cc1plus's trace
 * (585 k nodes, 67 k records), 3.0 instead of 3.5 on bench/heap's (126 k,
 * 62 k): ltr_meta_parse of all their METADATA chunks, least of 40 rounds
 * (the harness is in the commit that made this). Every record of both
 * has fewer than 64 nodes (1 kB of stack). */
int ltr_nodes_take(ltr_nodes_rec *r, ltr_node *v, uint32_t max);
#define LTR_NODES_BATCH 64u
/* Reads every node of a copy of r: 0 when all are good (each id above its
 * parent, below 2^24, not 0), with *last the last id (r.parent if none). */
int ltr_nodes_check(ltr_nodes_rec r, uint32_t *last);

/* The bases of one METADATA chunk, per pid. A pid is "spoiled" after a bad
 * kind 9 record of it: its base is unknown, so its later kind 9 records of
 * the chunk cannot be read; a record whose pid is unknown spoils them all. */
typedef struct ltr_node_base ltr_node_base;
typedef struct ltr_node_bases {
    ltr_node_base *v; /* open addressing on pid */
    ltr_node_base *hot; /* the entry last set (NULL: none), met first: a chunk's records are nearly all one pid's */
    size_t cap, n;
    int all; /* 0, or the LTR_NODE_BASE_* every pid without an entry has */
} ltr_node_bases;

enum { LTR_NODE_BASE_SPOILED = -1, LTR_NODE_BASE_NO_MEMORY = -2 };

/* A new chunk: every base back to 0. */
void ltr_node_bases_clear(ltr_node_bases *b);
void ltr_node_bases_free(ltr_node_bases *b);
/* 0 and pid's base, or LTR_NODE_BASE_SPOILED / LTR_NODE_BASE_NO_MEMORY. */
int ltr_node_bases_get(const ltr_node_bases *b, uint32_t pid, uint32_t *base);
/* Sets pid's base (a PROCESS record sets 0); without memory every pid
 * becomes LTR_NODE_BASE_NO_MEMORY for the rest of the chunk. */
void ltr_node_bases_set(ltr_node_bases *b, uint32_t pid, uint32_t base);
void ltr_node_bases_spoil(ltr_node_bases *b, uint32_t pid);
void ltr_node_bases_spoil_all(ltr_node_bases *b);

/* Appends the METADATA records of p (len bytes, whole records) to out, with
 * every good FRAME_NODES record as a FRAME_NODES_V; the rest, and records
 * it cannot parse, as they are. Returns 0, or -ENOMEM (out is then
 * unusable: the caller writes the records as they came). */
int ltr_nodevar_rewrite(const uint8_t *p, size_t len, ltr_bytes *out);

/* The reader (heapmeta.c): a FRAME_NODES_V record into the same node tables
 * as kind 8, its first id counted from b (the bases of its chunk so far).
 * -1 when it is a bad record (none of its nodes used). */
struct ltr_trace;
struct ltr_cursor;
int ltr_meta_parse_frame_nodes_v(struct ltr_trace *t, struct ltr_cursor *c, ltr_node_bases *b);

#endif
