/*
 * recorder/backlog.h — the recorder's private backlog: blocks copied out of
 * the shared buffers, waiting to be written to the trace.
 *
 * Why: a buffer is free for producers again only once the recorder is done
 * with it, and writing it (re-encoding addresses, compressing) costs about a
 * hundred times what copying it does. A recorder short of CPU (unprivileged,
 * beside 1000 threads that keep both CPUs busy) fell behind while the pool
 * ran dry, and producers lost events. Copied out first, the pool is free at
 * once and the writing waits here, in file order, within a bound. Knows
 * nothing of traces: drain.c decides what goes in and writes what comes out.
 */
#ifndef LTR_RECORDER_BACKLOG_H
#define LTR_RECORDER_BACKLOG_H

#include "format/writer.h"

#include <stddef.h>
#include <stdint.h>

/* The backlog's bound, in times the session's shared buffers: its memory
 * stays bounded by the buffers, not the threads. 1000 threads in bursts
 * beside an unprivileged recorder (bench/threads, 512 x 16 KiB buffers):
 * the backlog peaked at 7 to 20 MiB in runs that lost nothing, and a bound
 * of 4 times (32 MiB) was reached in 1 run of 4. */
#define REC_BACKLOG_POOLS 8

typedef struct rec_backlog_entry {
    struct rec_backlog_entry *next;
    ltr_block_info info;
    uint32_t len;
    uint8_t data[];
} rec_backlog_entry;

typedef struct rec_backlog {
    rec_backlog_entry *head, *tail;
    size_t bytes, cap; /* of data held; cap 0: no backlog, blocks are written as they come */
    size_t peak;       /* the most bytes held at once */
    uint64_t blocks, dropped; /* pushed so far, and taken out */
} rec_backlog;

/* Copies a block in at the tail. -ENOSPC when it would pass the cap (the
 * caller writes the oldest first), -ENOMEM when memory is short. */
int rec_backlog_push(rec_backlog *b, const ltr_block_info *info, const uint8_t *data, uint32_t len);
/* Would a block of len bytes fit now? */
static inline int rec_backlog_fits(const rec_backlog *b, uint32_t len)
{
    return b->bytes + len <= b->cap;
}
/* The oldest block, or NULL; rec_backlog_drop frees it. */
static inline rec_backlog_entry *rec_backlog_oldest(const rec_backlog *b)
{
    return b->head;
}
void rec_backlog_drop(rec_backlog *b);
void rec_backlog_free(rec_backlog *b);

#endif
