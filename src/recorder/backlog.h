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

/* The backlog's bound, in times the session's shared buffers, and at most
 * REC_BACKLOG_MAX: its memory stays bounded by the buffers, not the
 * threads. 1000 threads in bursts beside an unprivileged recorder
 * (bench/threads, 512 x 16 KiB buffers): the backlog peaked at 7 to 20 MiB
 * in runs that lost nothing, and a bound of 4 times (32 MiB) was reached in
 * 1 run of 4. A file-mode session of 1 GiB of buffers gets no more than
 * REC_BACKLOG_MAX: its pool is headroom enough. */
#define REC_BACKLOG_POOLS 8
#define REC_BACKLOG_MAX ((size_t)256 << 20)

/* What an entry holds. Everything the recorder takes out of shared memory
 * goes through the backlog, so the file gets it in the order it was taken:
 * metadata pulled before a block is written before it (its layouts, and a
 * PROCESS record after an exec, which starts the pid's stacks afresh, after
 * the old image's last blocks), and a buffer counts as written once its
 * last block is. */
enum rec_backlog_kind {
    REC_BACKLOG_BLOCK, /* a block of events: info and its records */
    REC_BACKLOG_META,  /* metadata records, framed (drain.c) */
    REC_BACKLOG_DONE,  /* a buffer of collector info.collector is complete: no data */
    REC_BACKLOG_GONE,  /* process info.pid went: the writer's tables for it go, after its blocks */
};

typedef struct rec_backlog_entry {
    struct rec_backlog_entry *next;
    ltr_block_info info;
    uint32_t len;
    uint8_t kind;
    uint8_t data[];
} rec_backlog_entry;

typedef struct rec_backlog {
    rec_backlog_entry *head, *tail;
    size_t bytes, cap; /* held, entries' headers counted; cap 0: no backlog, all is written as it comes */
    size_t peak;       /* the most bytes held at once */
    uint64_t pushed, dropped; /* entries pushed so far, and taken out */
} rec_backlog;

/* Copies an entry in at the tail. -ENOSPC when it would pass the cap (the
 * caller writes the oldest first), -ENOMEM when memory is short. */
int rec_backlog_push(rec_backlog *b, enum rec_backlog_kind kind, const ltr_block_info *info, const uint8_t *data,
                     uint32_t len);
/* Would an entry of len bytes fit now? */
static inline int rec_backlog_fits(const rec_backlog *b, uint32_t len)
{
    return b->bytes + sizeof(rec_backlog_entry) + len <= b->cap;
}
/* The oldest block, or NULL; rec_backlog_drop frees it. */
static inline rec_backlog_entry *rec_backlog_oldest(const rec_backlog *b)
{
    return b->head;
}
void rec_backlog_drop(rec_backlog *b);
void rec_backlog_free(rec_backlog *b);

#endif
