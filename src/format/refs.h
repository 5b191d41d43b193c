/*
 * format/refs.h — the writer's half of address references (format 4,
 * docs/trace-format.md "Address references"; the reader's half is
 * refseq.c). The heap agent writes every Free with the block's address; the
 * writer tells most of them as "the address of the allocation n back in this
 * process's file order" instead, which compresses to about a byte where the
 * address took six. It is a re-encoding, not a pairing: a reference names an
 * earlier allocation with the same address, so the reader gets back exactly
 * the address the agent wrote, whatever the order threads' buffers reached
 * the file in. Private to format/ (the writer and its tests).
 */
#ifndef LTR_FORMAT_REFS_H
#define LTR_FORMAT_REFS_H

#include <ltr/common.h>

#include "base/hmap.h"
#include "base/records.h"

#include <stddef.h>
#include <stdint.h>

#define REFS_PLAN_CACHE 8

/* How much longer a re-encoded payload can get: its pnew and its pref field
 * (one of each), each a 1-byte address, become a 0 and a 10-byte varint at
 * most, or a reference of up to 3 bytes. (A reference is not always
 * shorter: the agent's addresses are, but a traced program may write any; a
 * reserve of 2 let a Realloc of two tiny addresses write past the buffer.) */
#define REFS_GROWTH (2 * (1 + LTR_VARINT_MAX))

typedef struct ltr_refwriter {
    an_hmap plans; /* layout id -> how its fields are re-encoded */
    uint64_t cache_id[REFS_PLAN_CACHE]; /* layout id + 1 of the plan below, by id; 0: none */
    const void *cache_plan[REFS_PLAN_CACHE];
    uint64_t uses; /* blocks that used a process's tables, to find the least recently used */
    an_hmap seqs;  /* collector << 32 | pid -> its allocations' addresses */
    uint64_t high; /* past every count of every sequence so far: where a new sequence starts */
    an_hmap others; /* layout ids whose first description was not planned: never planned after */
    ltr_bytes in;  /* the block being re-encoded, copied out of shared memory */
    ltr_bytes out; /* the last block re-encoded */
    int trusted;   /* LAYOUTs come from trace files: their pnew and pref stay */
    int no_model;  /* allocations told without the allocator model (format 4's codes) */
    int no_next;   /* nor the next address (format 5's codes) */
    int no_delta;  /* nor addresses stored as differences (format 6's codes) */
} ltr_refwriter;

void ltr_refwriter_init(ltr_refwriter *w);
void ltr_refwriter_free(ltr_refwriter *w);

/* METADATA records on their way to the file (a copy the writer owns): the
 * LAYOUT records of the heap provider's Alloc, Free and Realloc get pnew and
 * pref in place of their pvar address fields, and the writer re-encodes
 * those layouts' events from then on. A LAYOUT that names pnew or pref itself
 * (no producer may) gets type 0 there, so that readers refuse it, unless the
 * writer is trusted (its metadata comes from trace files). */
void ltr_refwriter_layouts(ltr_refwriter *w, uint8_t *records, size_t len);

/* A METADATA chunk holding these records was written (ok) or not. A layout
 * whose LAYOUT never reached the file loses its plan: the reader takes the
 * first description of an id it finds, which may be another one. */
void ltr_refwriter_layouts_written(ltr_refwriter *w, const uint8_t *records, size_t len, int ok);

/* The compact records of a block of (collector, pid), re-encoded into w->out
 * when any of them has a re-encoded layout (its records must be: their
 * LAYOUT says pnew and pref). Returns 1 and the block's bases (allocations',
 * frees') for a block with references (LTR_BLOCK_FLAG_REFS); 2 for one whose
 * addresses are all stored as themselves (plain asked for, or no memory for
 * the process's tables: no flag, nothing counted); 0 when the block has no
 * such record (it goes as it came); -1 when memory ran out (the block cannot
 * be written: it is lost). */
int ltr_refwriter_block(ltr_refwriter *w, uint16_t collector, uint32_t pid, const uint8_t *p, size_t len,
                        int plain, uint64_t base[2]);

/* A chunk was not written: no later reference may name what it held. */
void ltr_refwriter_forget(ltr_refwriter *w);
/* Process pid ended: its tables go (any later block of that pid starts a
 * new sequence, as after an eviction). */
void ltr_refwriter_forget_process(ltr_refwriter *w, uint32_t pid);

/* Whether a LAYOUT of this id has come to the writer (and, when planned,
 * reached the file): a reader knows how to read its records. */
int ltr_refwriter_described(const ltr_refwriter *w, uint32_t id);

#endif
