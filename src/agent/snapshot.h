/*
 * agent/snapshot.h — heap snapshots in the agent: the live-block table kept
 * while snapshots are enabled for this process (snapshot_table.c), and the
 * control that learns of it through the registry and writes snapshots into
 * the sessions that enable Ltr.HeapSnapshot (snapshot.c).
 *
 * The table costs no event per allocation: an allocation inserts (address,
 * size, stack id, time) into one of 64 shards, a free removes it. A snapshot
 * copies one shard at a time under that shard's lock, so a block freed
 * meanwhile is in it or not, never half, and only threads touching the shard
 * being copied wait, for the length of a copy.
 */
#ifndef LTR_AGENT_SNAPSHOT_H
#define LTR_AGENT_SNAPSHOT_H

#include "agent/agent.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the table (snapshot_table.c) ---- */

/* One live block as a snapshot sees it. */
typedef struct snap_block {
    uint64_t size;
    uint32_t stack;
    uint32_t age_s; /* seconds since its allocation */
} snap_block;

/* Sizes above this are kept as this (a 1 TiB block). */
#define SNAP_SIZE_MAX ((1ull << 40) - 1)

void snap_table_insert(uintptr_t addr, uint64_t size, uint32_t stack, uint32_t now_s);
void snap_table_remove(uintptr_t addr);
/* Removes the block at addr, returning its entry (for realloc to put back
 * if the allocator fails); false if it was not in the table. */
bool snap_table_take(uintptr_t addr, uint64_t out[2]);
void snap_table_put_back(uintptr_t addr, const uint64_t e[2]);
/* Calls fn for every block, one shard at a time, each shard copied under its
 * lock; *pause_ns gets the longest a shard was held. 0, or -ENOMEM. */
int snap_table_walk(uint32_t now_s, void (*fn)(const snap_block *b, void *arg), void *arg,
                    uint64_t *pause_ns);
/* Empties the table and gives its memory back (snapshots disabled). Only
 * with no hook inserting: called when tracking stops, after it is off. */
void snap_table_clear(void);
/* Blocks and bytes of table memory now; blocks not kept (no memory, an
 * address beyond 47 bits). */
void snap_table_stats(uint64_t *blocks, uint64_t *table_bytes, uint64_t *untracked);
void snap_table_after_fork(void);

/* ---- control (snapshot.c) ---- */

/* Nonzero while this process keeps its table. */
extern _Atomic int snapshot_tracking;

/* From emit_init: this process's entry (by name: new instances). */
void snapshot_init(ltr_registry *reg);
/* A hook saw the registry's snapshot word move: looks at this process's
 * entry, starts or stops tracking. Called with the guard set. */
void snapshot_changed(void);
/* Does this process keep its table? Looks at the registry's entry first if
 * its word moved. Called with the guard set. */
bool snapshot_active(void);
/* realloc: the old block leaves the table before the allocator may hand
 * its address to another thread, and comes back if the allocator fails. */
bool snapshot_realloc_begin(void *old, uint64_t kept[2]);
void snapshot_realloc_failed(void *old, const uint64_t kept[2]);
/* The seconds clock of the table's times. */
uint32_t snapshot_now_s(uint64_t now_ns);
void snapshot_after_fork(void);

#endif
