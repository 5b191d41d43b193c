/*
 * recorder/savewin.c — memory mode: a save writes each thread's buffers
 * together, a bounded window at a time, so that the writer merges them.
 *
 * A thread holds a buffer of the ring of its own from its first event, and
 * the ring's history keeps buffers in the order they were published: two
 * busy threads' buffers alternate there. The writer merges a thread's
 * buffers into one block only when they come one after the other, and a
 * block's columns start afresh; a save wrote each buffer as a block, so
 * with 64 KB buffers the save of two long threads (`heap-workload 2
 * 4000000`) took 37.7 MB in 1 733 blocks, against 36.0 MB in 111 with the
 * default 1 MB buffers (docs/benchmarks.md, session 27).
 *
 * So a save copies the buffers it takes into a window and writes the window
 * a thread at a time, each thread's buffers in their order, told to the
 * writer as the thread's next (ltr_block_info.thread_next: their seq are
 * not consecutive), merged up to SAVE_MERGE_MAX, as large as a default
 * buffer's block. Threads go in the order of their first buffer in the
 * window, but the thread written last goes first: its merge goes on.
 *
 * The window is bounded, SAVE_WINDOW_BYTES of records (the recorder's
 * memory during a save grows by that and the writer's merge, no more) and
 * SAVE_WINDOW_EVENTS events: an event moves in the file, against other
 * threads' events, by at most the window. The analysis puts a save's events
 * back in time order holding 2 M of them (docs/analysis.md); a window of a
 * quarter of that leaves the rest to the buffers being filled, which a save
 * writes last. A CPU's buffer (records of several threads) is not held: the
 * window is written before it, so a thread's records there keep their place
 * among its own buffers.
 */
#include "recorder/internal.h"
#include "base/hmap.h"
#include "prim/prim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SAVE_WINDOW_BYTES ((size_t)8 << 20)
#define SAVE_WINDOW_EVENTS (512u << 10)
#define SAVE_MERGE_MAX ((size_t)1 << 20)

struct rec_window_buf {
    ltr_block_info info;
    size_t off; /* of its records in the window's bytes */
    uint32_t len;
    uint32_t rank; /* its thread's place in the window's order (window_order) */
};

static uint64_t thread_key(const ltr_block_info *info)
{
    return (uint64_t)info->pid << 32 | info->tid;
}

void rec_window_begin(rec_save_window *sw, ltr_writer *w)
{
    memset(sw, 0, sizeof *sw);
    ltr_writer_set_merge_max(w, SAVE_MERGE_MAX);
}

int rec_window_add(rec_save_window *sw, const ltr_block_info *info, const uint8_t *data, uint32_t len)
{
    if (ltr_reserve((void **)&sw->bufs, &sw->cap, sw->n, sizeof *sw->bufs, 64))
        return -ENOMEM;
    size_t off = sw->recs.len;
    ltr_bytes_put_mem(&sw->recs, data, len);
    if (sw->recs.failed) {
        sw->recs.failed = 0;
        sw->recs.len = off;
        return -ENOMEM;
    }
    sw->bufs[sw->n++] = (struct rec_window_buf){.info = *info, .off = off, .len = len};
    sw->events += info->event_count;
    return 0;
}

bool rec_window_full(const rec_save_window *sw)
{
    return sw->recs.len >= SAVE_WINDOW_BYTES || sw->events >= SAVE_WINDOW_EVENTS;
}

void rec_window_break(rec_save_window *sw)
{
    sw->last_on = false;
}

static int by_rank(const void *a, const void *b)
{
    const struct rec_window_buf *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off; /* in the window's order: stable */
}

/* Ranks the buffers by their thread's first buffer in the window, the
 * thread written last first; -1 without memory. */
static int window_order(rec_save_window *sw)
{
    an_hmap first; /* thread key -> rank */
    an_hmap_init(&first, 2 * sizeof(uint64_t));
    uint32_t next = 1;
    for (size_t i = 0; i < sw->n; i++) {
        struct rec_window_buf *b = &sw->bufs[i];
        uint64_t key = thread_key(&b->info);
        if (sw->last_on && b->info.collector == sw->last_collector && key == sw->last_thread) {
            b->rank = 0;
            continue;
        }
        int created;
        uint64_t *e = an_hmap_put(&first, key, &created);
        if (!e) {
            an_hmap_free(&first);
            return -1;
        }
        if (created)
            e[1] = next++;
        b->rank = (uint32_t)e[1];
    }
    an_hmap_free(&first);
    if (sw->n > 1) /* an empty window has no array (qsort's is declared non-null) */
        qsort(sw->bufs, sw->n, sizeof *sw->bufs, by_rank);
    return 0;
}

/* Whether b is the next buffer of the thread of the one written before. */
static bool follows_last(const rec_save_window *sw, const ltr_block_info *b)
{
    return sw->last_on && b->collector == sw->last_collector && thread_key(b) == sw->last_thread;
}

int rec_window_write(rec_save_window *sw, ltr_writer *w, ltr_error *err)
{
    if (window_order(sw) < 0) /* no memory to group them: in the ring's order, as they came */
        sw->last_on = false;
    int rc = 0;
    for (size_t i = 0; i < sw->n && !rc; i++) {
        struct rec_window_buf *b = &sw->bufs[i];
        b->info.thread_next = follows_last(sw, &b->info);
        rc = ltr_writer_block(w, &b->info, sw->recs.data + b->off, b->len, err);
        sw->last_on = true;
        sw->last_collector = b->info.collector;
        sw->last_thread = thread_key(&b->info);
    }
    sw->n = 0;
    sw->recs.len = 0;
    sw->events = 0;
    return rc;
}

void rec_window_free(rec_save_window *sw)
{
    ltr_bytes_free(&sw->recs);
    free(sw->bufs);
    memset(sw, 0, sizeof *sw);
}
