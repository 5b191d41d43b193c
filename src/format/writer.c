/*
 * format/writer.c — the trace file writer (see writer.h). Each chunk is
 * compressed into a scratch buffer and written at the end of the last complete
 * chunk; a failed write is cut off again with ftruncate, so a reader never
 * sees half a chunk from us and a later write can still succeed.
 */
#include "prim/prim.h"
#include "format/writer.h"

#include "format/chunk.h"
#include "format/chunkindex.h"
#include "format/columns.h"
#include "format/compact.h"
#include "format/nodevar.h"
#include "format/refs.h"
#include "format/stackshare.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#define DEFAULT_CHUNK_TARGET (1u << 20)
/* EVENTS at level 7: with column blocks and the allocator model (format 5)
 * it packs cc1plus's trace 9.5 % smaller than level 3 (3.84 → 3.47 MB) for
 * about 30 ns an event of the recorder's CPU, which neither the traced
 * program's run time nor bench/heap's overhead showed (docs/benchmarks.md,
 * "Format 5"). A recorder that is behind (its blocks go plain) gets level 3
 * back for the chunks that hold them. */
#define ZSTD_LEVEL 7
#define ZSTD_LEVEL_BEHIND 3
/* Levels of a writer told that the CPUs have none to spare
 * (ltr_writer_set_thrifty: the recorder sees tasks waiting for a CPU). On
 * bench/heap's workload, whose two threads keep both CPUs busy, level 7
 * packed the events at 17 to 28 MB/s and the metadata (its stacks' nodes)
 * at 28, level 3 at 92 to 97 and 144 to 174 (zstd -b on the chunks, load
 * 9): the recorder's CPU 146-220 ms (median 179) at 7 and 7, 85-142 (115) at
 * 3 and 3, for a trace 6.8 % larger (5.71 -> 6.09 bytes an event;
 * heaptrack's: 8.36). Where a CPU is spare, level 7 costs the program
 * nothing and keeps cc1plus's trace 9.5 % smaller (0.901 against 0.987
 * bytes an event). docs/benchmarks.md, "The recorder's CPU beside a busy
 * program". Not for events that repeat themselves (below): zstd packs them
 * fast at level 7 anyway, and perl's leak at level 3 took 0.080 bytes an
 * event against 0.048 (heaptrack's: 0.048). */
#define ZSTD_LEVEL_THRIFTY 3
#define ZSTD_LEVEL_METADATA_THRIFTY 3
/* Events that repeat themselves (a program filling a structure: perl's hash
 * of 1 M strings, every event "the next address" with one of two sizes and
 * stacks) are searched deeper, once the last EVENTS chunk packed at least
 * REPEATS_RATIO to one: level 7's search of 16 candidates (searchLog 4)
 * missed most of their matches. On perl's leak 64 rather than 16 made the
 * events 81 to 46 KB, and zstd faster (930 to 1 180 MB/s); on bench/heap's
 * (1.8 to one) no smaller for 55 % more time, on cc1plus's (8 to one) 3 %
 * smaller for 40 % more (`zstd -b7 --zstd=slog=6`, docs/benchmarks.md
 * "Events that repeat themselves"). */
#define REPEATS_RATIO 16
#define REPEATS_SEARCH_LOG 6
/* METADATA is mostly STACK_REF records, few bytes for their worth to analysis:
 * level 7 packs them a sixth smaller for little time (docs/heap-tracing.md). */
#define ZSTD_LEVEL_METADATA 7
/* SYMBOLS is written once, after the session (ltr record, stop, symbolize),
 * outside the recorder: cc1plus's names 33 KiB at level 7, 32 at 12, 29 at
 * 15 and at 19; `ltr symbolize` 0.07, 0.08, 0.08 and 0.10 s. */
#define ZSTD_LEVEL_SYMBOLS 15

typedef struct pending_block {
    ltr_block_info info;
    uint32_t byte_count;
} pending_block;

/* A thread's consecutive whole buffers written as one block. A block's
 * columns start afresh at each block, and a chunk holds the columns of its
 * blocks one block after the other: with 16 KB buffers (ltr record's) a
 * program's trace was mostly the cost of that. sqlite3 inserting 200 000
 * rows (7.6 M events) took 287 KB with 16 KB buffers, 176 KB with 64 KB and
 * 108 KB with 256 KB (heaptrack's: 157 KB); cc1plus's 3.43 MB against 3.16
 * MB. So a whole buffer (not a piece of one: those are anchored by their
 * sequence number) waits here, and the next whole buffer of the same
 * thread, if it comes next and is the next of its collector's buffers,
 * joins it, up to MERGE_MAX bytes of records; anything else writes it
 * first. Its first record's time, counted from 0 as every buffer's first
 * is, is counted from the record before it instead. A caller may set the
 * bound higher (ltr_writer_set_merge_max: a save, whose default 1 MB
 * buffers are blocks of 1 MB) and may vouch for a buffer being its
 * thread's next whatever its seq (ltr_block_info.thread_next). */
#define MERGE_MAX (256u << 10)
#define MERGE_MAX_MOST (16u << 20)

typedef struct merging {
    int on;
    ltr_block_info info; /* the first buffer's; event_count and nbuffers summed */
    ltr_bytes recs;
    uint64_t last_ts;    /* of its last record */
    uint64_t last_seq;   /* its last buffer's sequence number */
} merging;

struct ltr_writer {
    int fd;
    char *path;
    uint64_t size;  /* end of the last complete chunk */
    uint64_t limit; /* 0 = none */
    uint64_t seq;   /* sequence number of the next chunk */
    size_t chunk_target;
    ZSTD_CCtx *cctx;
    int repeats;      /* the last EVENTS chunk packed REPEATS_RATIO to one or better */
    int thrifty;      /* ltr_writer_set_thrifty: the cheaper levels */
    ltr_bytes zbuf;   /* compressed payload scratch */
    ltr_bytes events; /* raw payload of the pending EVENTS chunk */
    pending_block *blocks;
    size_t nblocks, cap_blocks;
    ltr_writer_drop_fn drop;
    void *drop_ctx;
    ltr_anchors anchors; /* compact buffers written in pieces: where each left off */
    ltr_stackshare stacks; /* the stacks written so far, to share their frames */
    ltr_bytes meta;        /* METADATA records as rewritten */
    ltr_bytes nodes;       /* the same, FRAME_NODES as FRAME_NODES_V */
    ltr_bytes meta_wait;   /* METADATA come while EVENTS were pending: written just before them */
    ltr_bytes ends_wait;   /* PROCESS_END records come meanwhile: written just after them */
    ltr_bytes meta_rest;   /* a METADATA batch without its PROCESS_END records */
    ltr_refwriter refs;    /* frees' addresses told as references (format 4) */
    ltr_bytes meta_in;     /* METADATA as received, heap layouts converted */
    ltr_colwriter cols;    /* compact blocks stored as columns (format 5) */
    int columns;           /* 0: compact blocks stay in rows (LTR_COLUMNS=0, ltr_writer_set_columns) */
    merging merge;         /* whole buffers of one thread waiting to be one block */
    size_t merge_max;      /* bytes of records a merged block holds at most */
    ltr_chunk_index index; /* the timed blocks and chunks written, for the INDEX chunk before END */
    ltr_chunk_index index_wait; /* the pending EVENTS' blocks, their seq not known yet */
    int indexed;           /* the INDEX chunk was written (ltr_writer_index) */
};

/* METADATA that comes while EVENTS are pending waits for them and goes out
 * as one chunk just before them, instead of cutting them short: the
 * recorder writes the metadata new since its last round before each round's
 * blocks, and a recorder whose rounds are short (a buffer or two) made a
 * chunk of each. bench/heap's trace: 159 to 493 chunks, 7.86 to 8.76 bytes
 * per event, depending on the recorder's timing. Safe because the events
 * waiting do not need metadata that came after them, and all of it comes
 * before the events that do. Only records whose place among events means
 * something wait (providers, layouts, stacks, frame nodes); a PROCESS
 * record (after exec a process's frame node ids start again), a THREAD or a
 * MODULE record is written where it comes. So is a FRAME_NODES_V record
 * (ltr merge copying a trace's): its ids count from the records before it
 * in its chunk, and waiting would put another call's records in that chunk
 * (a merged trace's stacks came out wrong). */
#define META_WAIT_MAX (4u << 20)

static int deferrable(const uint8_t *p, size_t len)
{
    for (size_t off = 0; off + LTR_RECORD_HEADER_SIZE <= len;) {
        uint16_t kind = ltr_get_u16(p + off);
        uint32_t size = ltr_get_u32(p + off + 4);
        if (kind == LTR_META_PROCESS || kind == LTR_META_THREAD || kind == LTR_META_MODULE ||
            kind == LTR_META_FRAME_NODES_V || size < LTR_RECORD_HEADER_SIZE || size > len - off)
            return 0;
        off += size;
    }
    return 1;
}



/* The pending events hold a block the recorder wrote plain: it is behind. */
static int events_behind(const ltr_writer *w)
{
    for (size_t i = 0; i < w->nblocks; i++)
        if (w->blocks[i].info.plain)
            return 1;
    return 0;
}

static int compress_payload(ltr_writer *w, uint16_t type, const void *raw, size_t len, ltr_error *err)
{
    size_t bound = ZSTD_compressBound(len);
    w->zbuf.len = 0;
    if (!ltr_bytes_grow(&w->zbuf, bound) || w->zbuf.failed) {
        w->zbuf.failed = 0;
        return ltr_fail(err, ENOMEM, "writing %s: out of memory for a chunk of %zu bytes", w->path, len);
    }
    int level = type == LTR_CHUNK_SYMBOLS                      ? ZSTD_LEVEL_SYMBOLS
                : type == LTR_CHUNK_METADATA && w->thrifty     ? ZSTD_LEVEL_METADATA_THRIFTY
                : type == LTR_CHUNK_METADATA                   ? ZSTD_LEVEL_METADATA
                : type == LTR_CHUNK_EVENTS && events_behind(w) ? ZSTD_LEVEL_BEHIND
                : type == LTR_CHUNK_EVENTS && w->thrifty && !w->repeats ? ZSTD_LEVEL_THRIFTY
                                                               : ZSTD_LEVEL;
    int deeper = type == LTR_CHUNK_EVENTS && level == ZSTD_LEVEL && w->repeats;
    size_t n = ZSTD_CCtx_reset(w->cctx, ZSTD_reset_parameters);
    if (!ZSTD_isError(n))
        n = ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, level);
    if (!ZSTD_isError(n) && deeper)
        n = ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_searchLog, REPEATS_SEARCH_LOG);
    if (!ZSTD_isError(n))
        n = ZSTD_compress2(w->cctx, w->zbuf.data, bound, raw, len);
    if (ZSTD_isError(n))
        return ltr_fail(err, EIO, "writing %s: compressing a chunk: %s", w->path, ZSTD_getErrorName(n));
    if (type == LTR_CHUNK_EVENTS)
        w->repeats = n && len / n >= REPEATS_RATIO;
    w->zbuf.len = n;
    return 0;
}

/* A chunk written (seq w->seq), into the index: an EVENTS chunk's blocks,
 * a METADATA chunk's process ends (the analysis orders them with the events). */
static void note_index(ltr_writer *w, uint16_t type, const void *raw, size_t len)
{
    if (type == LTR_CHUNK_EVENTS) {
        /* one not of ltr_writer_block's blocks (ltr_writer_chunk's) cannot be named: no index */
        w->index.failed |= w->index_wait.failed || !w->index_wait.n;
        for (size_t i = 0; i < w->index_wait.n; i++) {
            const ltr_index_entry *e = &w->index_wait.e[i];
            ltr_chunk_index_add(&w->index, w->seq, e->end, e->flags, e->ts);
            ltr_chunk_index_span(&w->index, e->pid, e->events, e->last);
        }
    }
    uint32_t n, pid;
    uint64_t last, ends = type == LTR_CHUNK_METADATA ? ltr_meta_ends_first_ts(raw, len, &n, &last, &pid) : UINT64_MAX;
    if (ends != UINT64_MAX) {
        ltr_chunk_index_add(&w->index, w->seq, (uint32_t)len, 0, ends);
        ltr_chunk_index_span(&w->index, pid, n, last);
    }
}

/* The pending EVENTS are written or dropped: their blocks' entries go. */
static void index_wait_clear(ltr_writer *w)
{
    w->index_wait.n = 0;
    w->index_wait.failed = 0;
}

/* Writes one chunk at w->size, or leaves the file as it was. */
static int write_chunk(ltr_writer *w, uint16_t type, const void *raw, size_t len, ltr_error *err)
{
    if (len > LTR_CHUNK_MAX_RAW)
        return ltr_fail(err, E2BIG, "writing %s: chunk of %zu bytes is over the %u-byte limit", w->path,
                    len, LTR_CHUNK_MAX_RAW);
    int rc = compress_payload(w, type, raw, len, err);
    if (rc < 0)
        return rc;
    uint64_t total = LTR_CHUNK_HEADER_SIZE + w->zbuf.len;
    if (w->limit && w->size + total > w->limit)
        return ltr_fail(err, EFBIG, "writing %s: a chunk of %llu bytes would pass the size limit of %llu bytes",
                    w->path, (unsigned long long)total, (unsigned long long)w->limit);
    ltr_chunk_header h = {.type = type, .flags = LTR_CHUNK_FLAG_ZSTD,
                          .payload_size = (uint32_t)w->zbuf.len, .raw_size = (uint32_t)len,
                          .seq = w->seq, .payload_crc = ltr_crc32(w->zbuf.data, w->zbuf.len)};
    uint8_t hdr[LTR_CHUNK_HEADER_SIZE];
    ltr_chunk_header_encode(&h, hdr);
    rc = ltr_pwrite_all(w->fd, hdr, sizeof hdr, w->size);
    if (rc == 0)
        rc = ltr_pwrite_all(w->fd, w->zbuf.data, w->zbuf.len, w->size + sizeof hdr);
    if (rc < 0) {
        /* Cut off the partial chunk; on a device that cannot be truncated there is
         * nothing partial to cut (its writes failed whole). */
        (void)!ftruncate(w->fd, (off_t)w->size);
        return ltr_fail(err, -rc, "writing %s: %s", w->path, strerror(-rc));
    }
    w->size += total;
    note_index(w, type, raw, len);
    w->seq++;
    return 0;
}

/* A writer of fd, named path in messages; fd is closed on failure. */
static ltr_writer *new_writer(int fd, const char *path, ltr_error *err)
{
    ltr_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path)) || !(w->cctx = ZSTD_createCCtx())) {
        if (w)
            free(w->path);
        free(w);
        close(fd);
        ltr_fail(err, ENOMEM, "opening %s: out of memory", path);
        return NULL;
    }
    w->chunk_target = DEFAULT_CHUNK_TARGET;
    w->merge_max = MERGE_MAX;
    w->fd = fd;
    ltr_refwriter_init(&w->refs);
    ltr_colwriter_init(&w->cols);
    const char *c = getenv("LTR_COLUMNS"); /* rows only, to compare them with columns (tests, benchmarks) */
    w->columns = !(c && !strcmp(c, "0"));
    const char *r = getenv("LTR_TIME_RUNS"); /* time columns as format 7 stored them, to compare (benchmarks) */
    w->cols.time = !(r && !strcmp(r, "0"));
    return w;
}

int ltr_writer_fd(const ltr_writer *w) { return w->fd; }

int ltr_writer_open_fd(ltr_writer **out, int fd, const char *path, ltr_error *err)
{
    *out = NULL;
    ltr_writer *w = new_writer(fd, path, err);
    if (!w)
        return -ENOMEM;
    uint8_t hdr[LTR_FILE_HEADER_SIZE] = {0};
    memcpy(hdr, LTR_FILE_MAGIC, 8);
    ltr_put_u32(hdr + 8, LTR_FORMAT_VERSION);
    int rc = ltr_pwrite_all(w->fd, hdr, sizeof hdr, 0);
    if (rc < 0) {
        ltr_writer_close(w);
        return ltr_fail(err, -rc, "writing %s: %s", path, strerror(-rc));
    }
    w->size = sizeof hdr;
    *out = w;
    return 0;
}

int ltr_writer_open(ltr_writer **out, const char *path, ltr_error *err)
{
    *out = NULL;
    int fd = ltr_create_new(path);
    if (fd == -EEXIST)
        return ltr_fail_exists(err, path);
    if (fd < 0)
        return ltr_fail(err, -fd, "creating %s: %s", path, strerror(-fd));
    return ltr_writer_open_fd(out, fd, path, err);
}

int ltr_writer_open_append(ltr_writer **out, const char *path, uint64_t size, uint64_t next_seq, uint64_t dev,
                           uint64_t ino, ltr_error *err)
{
    *out = NULL;
    int fd = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return ltr_fail(err, errno, "opening %s to add to it: %s", path,
                        errno == ELOOP ? "it is a symlink" : strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) { /* held until close: one adds at a time, and checks under it */
        int e = errno;
        close(fd);
        return ltr_fail(err, e, "%s: %s: nothing was added to it", path,
                        e == EWOULDBLOCK ? "another ltr is adding to it now" : strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != size || (uint64_t)st.st_dev != dev ||
        (uint64_t)st.st_ino != ino) {
        close(fd);
        return ltr_fail(err, ESTALE, "%s changed or was replaced while it was read (%llu bytes then): nothing "
                        "was added to it", path, (unsigned long long)size);
    }
    ltr_writer *w = new_writer(fd, path, err);
    if (!w)
        return -ENOMEM;
    w->size = size;
    w->seq = next_seq;
    *out = w;
    return 0;
}

void ltr_writer_set_drop_callback(ltr_writer *w, ltr_writer_drop_fn fn, void *ctx)
{
    w->drop = fn;
    w->drop_ctx = ctx;
}

void ltr_writer_trust_layouts(ltr_writer *w) { w->refs.trusted = 1; }

void ltr_writer_set_columns(ltr_writer *w, int on) { w->columns = on; }

void ltr_writer_set_limit(ltr_writer *w, uint64_t max_file_bytes) { w->limit = max_file_bytes; }

void ltr_writer_set_model(ltr_writer *w, int on) { w->refs.no_model = !on; }

void ltr_writer_set_thrifty(ltr_writer *w, int on)
{
    w->thrifty = on != 0;
}

void ltr_writer_set_next(ltr_writer *w, int on) { w->refs.no_next = !on; }

void ltr_writer_set_delta(ltr_writer *w, int on) { w->refs.no_delta = !on; }
void ltr_writer_set_time_runs(ltr_writer *w, int on) { w->cols.time = on; }

void ltr_writer_set_merge_max(ltr_writer *w, size_t bytes)
{
    w->merge_max = bytes < MERGE_MAX_MOST ? bytes : MERGE_MAX_MOST;
}

void ltr_writer_set_chunk_target(ltr_writer *w, size_t raw_bytes)
{
    w->chunk_target = raw_bytes ? raw_bytes : 1;
}


static void drop_pending(ltr_writer *w)
{
    for (size_t i = 0; i < w->nblocks; i++)
        if (w->drop)
            w->drop(w->drop_ctx, &w->blocks[i].info, w->blocks[i].byte_count);
    w->nblocks = 0;
    w->events.len = 0;
    index_wait_clear(w);
}

static int flush_events(ltr_writer *w, ltr_error *err)
{
    if (w->nblocks == 0)
        return 0;
    int rc = w->events.failed
                 ? ltr_fail(err, ENOMEM, "writing %s: out of memory collecting events", w->path)
                 : write_chunk(w, LTR_CHUNK_EVENTS, w->events.data, w->events.len, err);
    if (rc < 0) {
        drop_pending(w);
        ltr_refwriter_forget(&w->refs); /* what they held is not in the file */
    }
    w->nblocks = 0;
    w->events.len = 0;
    w->events.failed = 0;
    index_wait_clear(w);
    return rc;
}

static int write_metadata_now(ltr_writer *w, const void *records, size_t len, int kept, ltr_error *err);

/* The metadata waiting, then the pending events. Metadata that could not
 * be written waits on, tried again first at the next seal: its caller was
 * told it was taken, and the producers never send a stack twice. The events
 * pending meanwhile are dropped and counted, not written: some came after
 * it and would be read without their stacks (a disk full for a moment left
 * 55 671 events whose stacks the trace never held, and no damage reported;
 * found by a review). */
static int emit_merge(ltr_writer *w, ltr_error *err);

static int seal(ltr_writer *w, ltr_error *err)
{
    int merged = emit_merge(w, err); /* the buffers waiting to be merged, into this chunk */
    if (merged < 0)
        err = NULL; /* the first error is the one told */
    int rc = 0;
    if (w->meta_wait.len && w->meta_wait.failed) {
        rc = ltr_fail(err, ENOMEM, "writing %s: out of memory collecting metadata", w->path);
        w->meta_wait.len = 0;
        w->meta_wait.failed = 0;
    } else if (w->meta_wait.len) {
        rc = write_metadata_now(w, w->meta_wait.data, w->meta_wait.len, 1, err);
        if (rc == 0)
            w->meta_wait.len = 0;
    }
    if (rc < 0 && w->nblocks) {
        drop_pending(w);
        ltr_refwriter_forget(&w->refs); /* what they held is not in the file */
        w->events.failed = 0;
        return merged < 0 ? merged : rc;
    }
    int rc2 = flush_events(w, rc < 0 ? NULL : err);
    int rc3 = 0;
    if (w->ends_wait.len && !w->ends_wait.failed) /* lost otherwise: those processes only end late */
        rc3 = write_metadata_now(w, w->ends_wait.data, w->ends_wait.len, 0, rc < 0 || rc2 < 0 ? NULL : err);
    w->ends_wait.len = 0;
    w->ends_wait.failed = 0;
    return merged < 0 ? merged : rc < 0 ? rc : rc2 < 0 ? rc2 : rc3;
}

/* Flushes pending events, then writes a chunk; the first error is returned, but the
 * chunk is attempted anyway, since later events may need it. */
static int flush_then_write(ltr_writer *w, uint16_t type, const void *p, size_t len, ltr_error *err)
{
    int rc = seal(w, err);
    int rc2 = write_chunk(w, type, p, len, rc < 0 ? NULL : err);
    return rc < 0 ? rc : rc2;
}

/* Just before END (only a complete trace has one: a reader trusts it for
 * what comes after it), the INDEX chunk and its SPANS. Best effort: a
 * trace without them is read as any older one. */
int ltr_writer_index(ltr_writer *w, ltr_error *err)
{
    int rc = seal(w, err);
    uint8_t *p;
    size_t len;
    w->indexed = 1;
    if (w->index.failed || !w->index.n || ltr_chunk_index_encode(&w->index, &p, &len) < 0)
        return rc;
    int written = write_chunk(w, LTR_CHUNK_INDEX, p, len, NULL) == 0;
    free(p);
    if (written && ltr_chunk_index_encode_spans(&w->index, &p, &len) == 0) {
        (void)write_chunk(w, LTR_CHUNK_SPANS, p, len, NULL);
        free(p);
    }
    return rc;
}

/* Pending events go first, so END really is the last chunk. */
int ltr_writer_kv(ltr_writer *w, uint16_t chunk_type, const ltr_bytes *kv, ltr_error *err)
{
    if (kv->failed)
        return ltr_fail(err, ENOMEM, "writing %s: out of memory building a key/value list", w->path);
    if (chunk_type != LTR_CHUNK_END)
        return flush_then_write(w, chunk_type, kv->data, kv->len, err);
    int rc = w->indexed ? seal(w, err) : ltr_writer_index(w, err);
    int rc2 = write_chunk(w, chunk_type, kv->data, kv->len, rc < 0 ? NULL : err);
    return rc < 0 ? rc : rc2;
}

/* STACK records become STACK_REF where they share frames with stacks written
 * before; if the chunk is not written, later records must not refer to it.
 * FRAME_NODES become FRAME_NODES_V (their ids count within the chunk only).
 * A rewrite that cannot be done leaves the records as they came. */
static int metadata_in(ltr_writer *w, const void *records, size_t len, ltr_error *err);

/* A process's end (PROCESS_END) goes after the events pending, which may
 * hold its last buffers, and never before them, so that a reader of a
 * file-mode trace can let go of what it keeps for the process there
 * (docs/trace-format.md, "trace.ends_after_blocks"). Whether the batch held
 * one: then meta_rest has the batch without them. */
static int is_end(const uint8_t *record)
{
    uint16_t kind = ltr_get_u16(record);
    return kind == LTR_META_PROCESS_END || kind == LTR_META_EXEC_END;
}

static int split_ends(ltr_writer *w, const uint8_t *p, size_t len)
{
    int found = 0;
    for (size_t off = 0; off + LTR_RECORD_HEADER_SIZE <= len;) {
        uint32_t size = ltr_get_u32(p + off + 4);
        if (size < LTR_RECORD_HEADER_SIZE || size > len - off)
            break;
        found |= is_end(p + off);
        off += size;
    }
    if (!found)
        return 0;
    w->meta_rest.len = 0;
    size_t ends_before = w->ends_wait.len;
    for (size_t off = 0; off + LTR_RECORD_HEADER_SIZE <= len;) {
        uint32_t size = ltr_get_u32(p + off + 4);
        if (size < LTR_RECORD_HEADER_SIZE || size > len - off) {
            ltr_bytes_put_mem(&w->meta_rest, p + off, len - off); /* as it came: the reader reports it */
            break;
        }
        ltr_bytes_put_mem(is_end(p + off) ? &w->ends_wait : &w->meta_rest, p + off,
                          size);
        off += size;
    }
    if (w->meta_rest.failed) { /* without memory: the batch as it came, its ends before the events */
        w->meta_rest.failed = 0;
        w->ends_wait.len = ends_before;
        return 0;
    }
    return 1;
}

/* Buffers waiting to be merged go first: what the writer learns from
 * metadata (a layout written, a stack) must come after them, as they did. */
int ltr_writer_metadata(ltr_writer *w, const void *records, size_t len, ltr_error *err)
{
    int rc = emit_merge(w, err);
    int rc2 = metadata_in(w, records, len, rc < 0 ? NULL : err);
    return rc < 0 ? rc : rc2;
}

static int metadata_in(ltr_writer *w, const void *records, size_t len, ltr_error *err)
{
    /* the heap layouts' address fields become pnew and pref as the writer
     * learns of them, before any block that uses them comes */
    w->meta_in.len = 0;
    w->meta_in.failed = 0;
    ltr_bytes_put_mem(&w->meta_in, records, len);
    if (w->meta_in.failed)
        return ltr_fail(err, ENOMEM, "writing %s: out of memory for metadata", w->path);
    ltr_refwriter_layouts(&w->refs, w->meta_in.data, len);
    ltr_colwriter_layouts(&w->cols, w->meta_in.data, len);
    records = w->meta_in.data;
    if (w->nblocks && split_ends(w, records, len)) {
        records = w->meta_rest.data;
        len = w->meta_rest.len;
        if (!len)
            return 0;
    }
    if (w->nblocks && deferrable(records, len) && w->meta_wait.len + len <= META_WAIT_MAX) {
        ltr_bytes_put_mem(&w->meta_wait, records, len);
        return 0;
    }
    int rc = seal(w, err);
    if (rc < 0 && w->meta_wait.len)
        return rc; /* older metadata waits still: this must not pass it (the caller tries again) */
    int rc2 = write_metadata_now(w, records, len, 0, rc < 0 ? NULL : err);
    return rc < 0 ? rc : rc2;
}

/* kept: the records stay in meta_wait when they cannot be written, to be
 * tried again as they are (their layouts converted already): the plans for
 * their layouts stay too. Otherwise the caller gives them again from the
 * start, and they are planned again. */
static int write_metadata_now(ltr_writer *w, const void *records, size_t len, int kept, ltr_error *err)
{
    w->meta.len = 0;
    w->meta.failed = 0;
    const uint8_t *p = records;
    if (ltr_stackshare_rewrite(&w->stacks, records, len, &w->meta) == 0) {
        p = w->meta.data;
        len = w->meta.len;
    }
    w->nodes.len = 0;
    w->nodes.failed = 0;
    if (ltr_nodevar_rewrite(p, len, &w->nodes) == 0) {
        p = w->nodes.data;
        len = w->nodes.len;
    }
    int rc = write_chunk(w, LTR_CHUNK_METADATA, p, len, err);
    if (rc < 0)
        ltr_stackshare_reset(&w->stacks);
    if (rc == 0 || !kept) {
        ltr_refwriter_layouts_written(&w->refs, p, len, rc == 0);
        ltr_colwriter_layouts_written(&w->cols, p, len, rc == 0);
    }
    return rc;
}

int ltr_writer_counters(ltr_writer *w, const void *records, size_t len, ltr_error *err)
{
    return flush_then_write(w, LTR_CHUNK_COUNTERS, records, len, err);
}

static int remember_block(ltr_writer *w, const ltr_block_info *info, uint32_t byte_count)
{
    if (ltr_reserve((void **)&w->blocks, &w->cap_blocks, w->nblocks, sizeof *w->blocks, 64))
        return -ENOMEM;
    w->blocks[w->nblocks++] = (pending_block){*info, byte_count};
    return 0;
}

/* The timestamp base of a compact piece, and where the next piece of the same
 * buffer will start from: kept while the recorder still writes the buffer in
 * pieces (sealed early), forgotten with its last piece. */
static uint64_t anchor_piece(ltr_writer *w, const ltr_block_info *info, const void *events, size_t len)
{
    uint64_t base = ltr_anchors_base(&w->anchors, info->collector, info->seq);
    if (info->flags & LTR_BLOCK_FLAG_SEALED_EARLY) {
        uint64_t last = ltr_cevents_last_ts(events, len, base);
        if (ltr_anchors_set(&w->anchors, info->collector, info->seq, last) < 0)
            w->events.failed = 1; /* the next piece could not be decoded: fail the chunk */
    } else {
        ltr_anchors_drop(&w->anchors, info->collector, info->seq);
    }
    return base;
}

static size_t block_header_size(const ltr_block_info *info)
{
    return info->fixed_records                  ? LTR_BLOCK_HEADER_SIZE
           : info->flags & LTR_BLOCK_FLAG_REFS ? LTR_BLOCK_REFS_HEADER_SIZE
                                               : LTR_BLOCK_COMPACT_HEADER_SIZE;
}

/* columns: the events are column data (LTR_BLOCK_FLAG_COLUMNS). */
static void append_block(ltr_writer *w, const ltr_block_info *info, const void *events, size_t len,
                         uint64_t base, int columns)
{
    ltr_bytes *b = &w->events;
    uint16_t flags = (uint16_t)(info->flags & ~(LTR_BLOCK_FLAG_COMPACT | LTR_BLOCK_FLAG_COLUMNS |
                                                LTR_BLOCK_FLAG_TIME_RUNS |
                                                (info->fixed_records ? LTR_BLOCK_FLAG_REFS : 0)));
    if (columns)
        flags |= LTR_BLOCK_FLAG_COLUMNS | (w->cols.time_runs ? LTR_BLOCK_FLAG_TIME_RUNS : 0);
    ltr_bytes_put_mem(b, LTR_BLOCK_MAGIC, 4);
    ltr_bytes_put_u16(b, info->collector);
    ltr_bytes_put_u16(b, info->fixed_records ? flags : flags | LTR_BLOCK_FLAG_COMPACT);
    ltr_bytes_put_u32(b, info->pid);
    ltr_bytes_put_u32(b, info->tid);
    ltr_bytes_put_u64(b, info->seq);
    ltr_bytes_put_u32(b, info->event_count);
    ltr_bytes_put_u32(b, (uint32_t)len);
    if (!info->fixed_records)
        ltr_bytes_put_u64(b, base);
    if (!info->fixed_records && (info->flags & LTR_BLOCK_FLAG_REFS)) {
        ltr_bytes_put_u64(b, info->ref_base[0]);
        ltr_bytes_put_u64(b, info->ref_base[1]);
    }
    ltr_bytes_put_mem(b, events, len);
}

static int block_now(ltr_writer *w, const ltr_block_info *info, const void *events, size_t len,
                     ltr_error *err);

/* Frees' addresses as references where the block has heap events (refs.h). */
static int block_in(ltr_writer *w, const ltr_block_info *info, const void *events, size_t len,
                    ltr_error *err)
{
    if (info->fixed_records || (info->flags & LTR_BLOCK_FLAG_REFS))
        return block_now(w, info, events, len, err);
    /* A chunk too full to take the block is written before the block is
     * re-encoded: were it lost, the block must not refer to what it held. A
     * field of a re-encoded record grows by at most 10 bytes (refwrite.c: a
     * code, and format 7's difference of up to 10 bytes from a small
     * address of 1), and a record holding two is at least 5 bytes, one 4:
     * a block grows 5 times at most (a heap agent's, about never: its
     * records are 10 bytes and more, and neighbours' differences short). */
    int rc0 = 0;
    if (w->nblocks && w->events.len + LTR_BLOCK_REFS_HEADER_SIZE + 5 * len > LTR_CHUNK_MAX_RAW)
        rc0 = seal(w, err);
    ltr_block_info ri = *info;
    int rc = ltr_refwriter_block(&w->refs, info->collector, info->pid, events, len, info->plain, ri.ref_base);
    if (rc < 0) {
        if (w->drop)
            w->drop(w->drop_ctx, info, (uint32_t)len);
        return rc0 < 0 ? rc0 : ltr_fail(err, ENOMEM, "writing %s: out of memory re-encoding a block", w->path);
    }
    if (rc == 1)
        ri.flags |= LTR_BLOCK_FLAG_REFS | (w->refs.no_model ? 0
                                           : w->refs.no_next ? LTR_BLOCK_FLAG_MODEL
                                           : w->refs.no_delta ? LTR_BLOCK_FLAG_MODEL | LTR_BLOCK_FLAG_NEXT
                                           : LTR_BLOCK_FLAG_MODEL | LTR_BLOCK_FLAG_NEXT | LTR_BLOCK_FLAG_DELTA);
    rc = rc > 0 ? block_now(w, &ri, w->refs.out.data, w->refs.out.len, rc0 < 0 ? NULL : err)
                : block_now(w, info, events, len, rc0 < 0 ? NULL : err);
    return rc0 < 0 ? rc0 : rc;
}

/* A compact block's records as columns when they parse cleanly and come out
 * smaller (format/columns.h): 1 and *events, *len the column data, or 0
 * for rows as they are. So a column block is never larger than its rows,
 * and the chunk-size checks made on the rows hold for it. Not when the
 * recorder is behind (plain): columns cost it about 40 ns an event
 * (docs/benchmarks.md, "Column blocks"), paid then in lost events. */
static int as_columns(ltr_writer *w, const ltr_block_info *info, const void **events, size_t *len)
{
    if (info->fixed_records || info->plain || !w->columns ||
        ltr_colwriter_block(&w->cols, *events, *len, info->event_count) != 1)
        return 0;
    *events = w->cols.out.data;
    *len = w->cols.out.len;
    return 1;
}

/* A block that will not reach the file: counted as lost, and when it held
 * references, the writer forgets its tables, so that nothing later names
 * what the block held (a reader would see the gap in the bases and fail
 * those references: never wrong, but lost). Found by a review. */
static void drop_block(ltr_writer *w, const ltr_block_info *info, size_t bytes)
{
    if (w->drop)
        w->drop(w->drop_ctx, info, (uint32_t)bytes);
    if (info->flags & LTR_BLOCK_FLAG_REFS)
        ltr_refwriter_forget(&w->refs);
}

static int block_now(ltr_writer *w, const ltr_block_info *info, const void *events, size_t len,
                     ltr_error *err)
{
    uint64_t base = info->fixed_records ? 0 : anchor_piece(w, info, events, len);
    if (block_header_size(info) + len > LTR_CHUNK_MAX_RAW) {
        drop_block(w, info, len > UINT32_MAX ? UINT32_MAX : len);
        return ltr_fail(err, E2BIG, "writing %s: a block of %zu bytes does not fit in a chunk", w->path, len);
    }
    size_t rows = len;
    int sorted = 0;
    uint64_t last = UINT64_MAX;
    uint64_t first = info->fixed_records ? 0 : ltr_cevents_first_ts(events, len, base, &sorted, &last);
    int columns = as_columns(w, info, &events, &len);
    size_t need = block_header_size(info) + len;
    int rc = 0;
    if (w->events.len + need > LTR_CHUNK_MAX_RAW)
        rc = seal(w, err);
    if (remember_block(w, info, (uint32_t)rows) < 0) {
        drop_block(w, info, rows);
        return rc < 0 ? rc : ltr_fail(err, ENOMEM, "writing %s: out of memory", w->path);
    }
    append_block(w, info, events, len, base, columns);
    ltr_chunk_index_add(&w->index_wait, 0, (uint32_t)w->events.len, sorted ? LTR_INDEX_SORTED : 0, first);
    ltr_chunk_index_span(&w->index_wait, info->pid, info->event_count, last);
    if (w->events.len >= w->chunk_target) {
        int rc2 = seal(w, rc < 0 ? NULL : err);
        if (rc == 0)
            rc = rc2;
    }
    return rc;
}

/* Whether every record of a whole buffer parses and is of a layout the
 * file describes, with its last record's time in *last. A buffer with one
 * that does not is written as a block of its own: the reader stops a
 * block at a record it cannot parse, and its references at one of a layout
 * it does not know, so merged, such a record cost the thread's next
 * buffers too (a review's; before, only the rest of its buffer). */
static int buffer_reads(const ltr_writer *w, const uint8_t *p, size_t len, uint64_t *last)
{
    uint32_t ok[4] = {0}; /* layout ids + 1 found described: a heap buffer has 3 */
    uint64_t ts = 0;
    for (size_t pos = 0, n; pos < len; pos += n) {
        ltr_cevent ev;
        if (!(n = ltr_cevent_parse(p + pos, len - pos, &ev)))
            return 0;
        ts += (uint64_t)ev.ts_delta;
        unsigned k = 0;
        while (k < 4 && ok[k] && ok[k] != ev.layout + 1)
            k++;
        if (k < 4 && ok[k])
            continue;
        if (!ltr_refwriter_described(&w->refs, ev.layout))
            return 0;
        if (k < 4)
            ok[k] = ev.layout + 1;
    }
    *last = ts;
    return 1;
}

/* A whole buffer of a thread's own, as a producer wrote it: one that may
 * be merged (merging). */
static int mergeable(const ltr_writer *w, const ltr_block_info *info, size_t len)
{
    return !info->fixed_records && !info->plain && !info->alone && !(info->flags & ~LTR_BLOCK_FLAG_COMPACT) &&
           len && len <= w->merge_max && !ltr_anchors_base(&w->anchors, info->collector, info->seq);
}

/* The waiting buffers, as one block. */
static int emit_merge(ltr_writer *w, ltr_error *err)
{
    merging *m = &w->merge;
    if (!m->on)
        return 0;
    m->on = 0; /* taken out first: the block's way in may seal a chunk, which comes here */
    if (m->recs.failed) {
        m->recs.failed = 0;
        drop_block(w, &m->info, m->recs.len);
        return ltr_fail(err, ENOMEM, "writing %s: out of memory merging buffers", w->path);
    }
    int rc = block_in(w, &m->info, m->recs.data, m->recs.len, err);
    m->recs.len = 0;
    return rc;
}

/* Appends a whole buffer's records to the merge, its first record's time
 * counted from the last one there; 0, or -1 when its first record does not
 * parse (nothing appended: the buffer goes on its own). */
static int merge_append(const ltr_writer *w, merging *m, const ltr_block_info *info, const uint8_t *p,
                        size_t len)
{
    ltr_cevent ev;
    uint64_t last;
    if (!buffer_reads(w, p, len, &last) || !ltr_cevent_parse(p, len, &ev))
        return -1;
    uint64_t first = (uint64_t)ev.ts_delta; /* a buffer's first record counts from 0 */
    uint8_t *dst = ltr_bytes_grow(&m->recs, LTR_CEVENT_HEADER_MAX + len);
    if (!dst)
        return -1;
    size_t h = ltr_put_cevent_header(dst, ev.layout, first, m->last_ts, ev.payload);
    memcpy(dst + h, p + ev.header, len - ev.header); /* its payload, then the records after it */
    m->recs.len -= LTR_CEVENT_HEADER_MAX + ev.header - h;
    m->last_ts = last;
    m->info.event_count += info->event_count;
    m->info.nbuffers++;
    m->last_seq = info->seq;
    return 0;
}

int ltr_writer_block(ltr_writer *w, const ltr_block_info *info, const void *events, size_t len,
                     ltr_error *err)
{
    merging *m = &w->merge;
    const ltr_block_info *b = &m->info;
    if (m->on && mergeable(w, info, len) && info->collector == b->collector && info->pid == b->pid &&
        info->tid == b->tid && (info->seq == m->last_seq + 1 || info->thread_next) &&
        m->recs.len + len <= w->merge_max &&
        merge_append(w, m, info, events, len) == 0)
        return 0;
    int rc = emit_merge(w, err);
    uint64_t last;
    if (mergeable(w, info, len) && buffer_reads(w, events, len, &last)) {
        *m = (merging){.on = 1, .info = *info, .recs = m->recs, .last_seq = info->seq, .last_ts = last};
        m->info.nbuffers = 1;
        m->recs.len = 0;
        uint8_t *dst = ltr_bytes_grow(&m->recs, len);
        if (dst) {
            memcpy(dst, events, len);
            return rc;
        }
        m->on = 0; /* no memory: on its own */
    }
    int rc2 = block_in(w, info, events, len, rc < 0 ? NULL : err);
    return rc < 0 ? rc : rc2;
}

int ltr_writer_process_ended(ltr_writer *w, uint32_t pid, ltr_error *err)
{
    /* its buffers waiting to be merged are told with the tables first */
    int rc = w->merge.on && w->merge.info.pid == pid ? emit_merge(w, err) : 0;
    ltr_refwriter_forget_process(&w->refs, pid);
    return rc;
}

int ltr_writer_flush(ltr_writer *w, int sync, ltr_error *err)
{
    int rc = seal(w, err);
    if (rc == 0 && sync && fdatasync(w->fd) < 0 && errno != EINVAL && errno != EROFS) {
        int e = errno;
        return ltr_fail(err, e, "syncing %s: %s", w->path, strerror(e));
    }
    return rc;
}

uint64_t ltr_writer_size(const ltr_writer *w) { return w->size; }

int ltr_writer_cut(ltr_writer *w, uint64_t size, ltr_error *err)
{
    if (ftruncate(w->fd, (off_t)size) != 0)
        return ltr_fail(err, errno, "writing %s: cutting it back to %llu bytes: %s", w->path,
                        (unsigned long long)size, strerror(errno));
    w->size = size;
    return 0;
}

int ltr_writer_chunk(ltr_writer *w, uint16_t chunk_type, const void *raw, size_t len, ltr_error *err)
{
    int rc = seal(w, err);
    if (rc < 0)
        return rc;
    return write_chunk(w, chunk_type, raw, len, err);
}

void ltr_writer_close(ltr_writer *w)
{
    if (!w)
        return;
    if (w->fd >= 0)
        close(w->fd);
    ZSTD_freeCCtx(w->cctx);
    ltr_bytes_free(&w->zbuf);
    ltr_bytes_free(&w->events);
    ltr_bytes_free(&w->merge.recs);
    free(w->blocks);
    ltr_anchors_free(&w->anchors);
    ltr_stackshare_free(&w->stacks);
    ltr_bytes_free(&w->meta);
    ltr_bytes_free(&w->nodes);
    ltr_bytes_free(&w->meta_wait);
    ltr_bytes_free(&w->ends_wait);
    ltr_bytes_free(&w->meta_rest);
    ltr_bytes_free(&w->meta_in);
    ltr_refwriter_free(&w->refs);
    ltr_colwriter_free(&w->cols);
    ltr_chunk_index_free(&w->index);
    ltr_chunk_index_free(&w->index_wait);
    free(w->path);
    free(w);
}
