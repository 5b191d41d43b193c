/*
 * format/merge.c — `ltr merge` (merge.h): one trace from several of one
 * boot.
 *
 * The sources are read chunk by chunk with the reader's own fetch (CRCs,
 * zstd), and their content is rewritten record by record, never decoded
 * into events, so nothing a reader would keep is lost and a merge costs
 * little more than a copy:
 * - layout ids: each session numbers its layouts from 1, so every LAYOUT
 *   gets a merged id (identical layouts of several traces share one) and
 *   every event record's layout id is rewritten to it;
 * - collectors: source s's collector c becomes s * LTR_MERGE_COLLECTORS + c,
 *   in blocks and in the counters, so each trace's accounting stays its own;
 * - PROVIDER, PROCESS, THREAD and MODULE records another trace holds
 *   byte for byte are written once (two sessions describing one process);
 * - stack records (STACK, STACK_REF, FRAME_NODES, FRAME_NODES_V) are
 *   numbered per process by the session that wrote them: a process with
 *   stacks in two traces cannot be merged without mixing them, and is
 *   refused with the reason rather than merged wrong;
 * - EVENTS chunks go in time order (the source whose next chunk starts
 *   earliest), each source's chunks in their own order, and its METADATA
 *   before them as in the source. Every block is written standalone (its
 *   first timestamp absolute), so a block whose earlier piece was damaged
 *   in its source still gets its right times.
 * - SYMBOLS chunks (the names of the sources' frames) become one set, each
 *   address of each file once, written after the merge's END.
 * Damaged stretches of a source are skipped and counted, as a reader would.
 */
#include "format/merge.h"
#include "format/chunk.h"
#include "format/columns.h"
#include "format/symchunk.h"
#include "format/reader.h"
#include "format/writer.h"
#include "base/hmap.h"
#include "base/records.h"
#include "prim/prim.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#define LTR_MERGE_COLLECTORS 4 /* collectors per source: event/shm.h's LTR_MAX_COLLECTORS */
#define NO_LAYOUT UINT32_MAX   /* an event whose layout its source never described stays unknown */

typedef struct source {
    const char *path;
    int fd;
    uint64_t size, pos;
    ZSTD_DCtx *dctx;
    ltr_fetch f;
    int have;            /* f holds an intact chunk not written yet */
    int done;
    uint64_t first_ts;   /* of f's EVENTS chunk */
    ltr_idmap layouts;   /* source layout id -> merged id + 1 (its first description, as a reader keeps) */
    ltr_idmap types_at;  /* source layout id -> offset + 1 in types: its field types */
    ltr_bytes types;     /* per layout: u32 count, then a type byte per field */
    ltr_bytes counters;  /* the last COUNTERS payload */
    ltr_coldecoder cols; /* the records of its last column block */
    ltr_bytes header;    /* the HEADER key/value list */
    uint64_t end_ns, wall_end_ns;
    int complete;
} source;

typedef struct seen_rec { /* an hmap entry: a record written, by the hash of its bytes */
    uint64_t hash;
    size_t off, len;     /* in merger.arena */
    uint32_t source;
} seen_rec;

typedef struct merger {
    source *src;
    size_t n;
    ltr_writer *w;
    an_hmap layouts;     /* hash of a LAYOUT's body after its id -> seen_rec (off: merged id) */
    an_hmap records;     /* PROVIDER, PROCESS, THREAD, MODULE records written */
    an_hmap stack_pids;  /* pid -> seen_rec (source: the trace whose stacks it has) */
    ltr_bytes arena;
    uint32_t next_layout;
    ltr_merge_report *rep;
    ltr_error *err;
    ltr_symchunk_builder *syms; /* the sources' SYMBOLS entries, written after END */
    int syms_failed;
} merger;

static uint64_t hash_bytes(const uint8_t *p, size_t n, uint64_t kind)
{
    uint64_t h = an_hash_bytes(AN_HASH_START ^ kind, p, n); /* the bytes are compared too */
    return h ? h : 1; /* 0 marks an empty slot */
}

/* ---- the sources ------------------------------------------------------------------- */

/* Fetches the next intact chunk of s (skipping and counting damage). 0,
 * or -errno with err. s->done at the end. */
static int advance(merger *m, source *s)
{
    for (;;) {
        ltr_fetch_chunk(s->fd, s->size, s->pos, s->dctx, &s->f);
        if (s->f.kind == LTR_FETCH_END) {
            s->done = 1;
            return 0;
        }
        if (s->f.kind == LTR_FETCH_ERROR)
            return ltr_fail(m->err, -s->f.err, "%s: %s", s->path, strerror(-s->f.err));
        s->pos = s->f.next;
        if (s->f.kind == LTR_FETCH_OK) {
            s->have = 1;
            return 0;
        }
        m->rep->damaged++;
    }
}

static uint64_t kv_u64(const ltr_bytes *kv, const char *key)
{
    char buf[32];
    const char *v = ltr_kv_find(kv->data, kv->len, key, buf, sizeof buf);
    return v ? strtoull(v, NULL, 10) : 0;
}

static int open_source(source *s, const char *path, ltr_error *err)
{
    memset(s, 0, sizeof *s);
    s->path = path;
    /* a regular file only, as the reader opens it: between the check of
     * ltr_trace_open and this open, a FIFO put at the name waited here for
     * good (a device's open ran) */
    s->fd = ltr_open_regular(path);
    struct stat st;
    if (s->fd < 0)
        return ltr_fail(err, -s->fd, "%s: %s", path, -s->fd == EINVAL ? "not a regular file" : strerror(-s->fd));
    if (fstat(s->fd, &st) != 0)
        return ltr_fail(err, errno, "%s: %s", path, strerror(errno));
    s->size = (uint64_t)st.st_size;
    s->pos = 16; /* after the file header, which ltr_merge_check read */
    s->dctx = ZSTD_createDCtx();
    return s->dctx ? 0 : ltr_fail(err, ENOMEM, "out of memory");
}

static void close_source(source *s)
{
    if (s->fd >= 0)
        close(s->fd);
    ZSTD_freeDCtx(s->dctx);
    ltr_fetch_free(&s->f);
    ltr_coldecoder_free(&s->cols);
    ltr_idmap_free(&s->layouts);
    ltr_idmap_free(&s->types_at);
    ltr_bytes_free(&s->types);
    ltr_bytes_free(&s->counters);
    ltr_bytes_free(&s->header);
}

/* The HEADER key/value list of a trace (its first chunk), into kv. */
static int read_header(const char *path, ltr_bytes *kv, ltr_error *err)
{
    ltr_trace *t;
    int rc = ltr_trace_open(path, &t, err); /* "not an ltr trace", a version too new... */
    if (rc)
        return rc;
    ltr_trace_close(t);
    source s;
    if ((rc = open_source(&s, path, err)) == 0) {
        ltr_fetch_chunk(s.fd, s.size, s.pos, s.dctx, &s.f);
        if (s.f.kind != LTR_FETCH_OK || s.f.h.type != LTR_CHUNK_HEADER)
            rc = ltr_fail(err, EINVAL, "%s: its first chunk is not an intact HEADER: it cannot be merged", path);
        else
            ltr_bytes_put_mem(kv, s.f.raw, s.f.raw_len);
    }
    close_source(&s);
    return rc;
}

int ltr_merge_check(const char *const *paths, size_t n, ltr_error *err)
{
    if (n < 2)
        return ltr_fail(err, EINVAL, "give two traces or more to merge");
    char boot0[64] = "", host0[256] = "";
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        for (size_t j = 0; j < i && rc == 0; j++) {
            struct stat a, b;
            if (stat(paths[i], &a) == 0 && stat(paths[j], &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
                rc = ltr_fail(err, EINVAL, "%s is given twice (as %s too): its events would count twice", paths[i],
                              paths[j]);
        }
    for (size_t i = 0; i < n && rc == 0; i++) {
        ltr_bytes kv = {0};
        if ((rc = read_header(paths[i], &kv, err)) == 0) {
            char boot[64] = "", host[256] = "";
            ltr_kv_find(kv.data, kv.len, "host.boot_id", boot, sizeof boot);
            ltr_kv_find(kv.data, kv.len, "host.name", host, sizeof host);
            if (i == 0) {
                snprintf(boot0, sizeof boot0, "%s", boot);
                snprintf(host0, sizeof host0, "%s", host);
            } else if (strcmp(host, host0)) {
                rc = ltr_fail(err, EXDEV, "%s was recorded on %s, %s on %s: traces of two machines do not share "
                              "a clock", paths[i], host[0] ? host : "an unnamed host", paths[0], host0);
            } else if (boot[0] && boot0[0] && strcmp(boot, boot0)) {
                rc = ltr_fail(err, EXDEV, "%s was recorded in another boot of %s than %s (boot %s, not %s): "
                              "their clocks do not compare", paths[i], host, paths[0], boot, boot0);
            }
        }
        ltr_bytes_free(&kv);
    }
    return rc;
}

/* ---- METADATA ---------------------------------------------------------------------- */

/* Whether rec (kind's record) was written already for another source; if not,
 * remembers it. */
static int seen_elsewhere(merger *m, an_hmap *h, uint64_t kind, const uint8_t *rec, size_t len, uint32_t si)
{
    uint64_t key = hash_bytes(rec, len, kind);
    int created;
    seen_rec *e = an_hmap_put(h, key, &created);
    if (!e)
        return ltr_fail(m->err, ENOMEM, "out of memory"), -1;
    if (!created)
        return e->source != si && e->len == len && !memcmp(m->arena.data + e->off, rec, len);
    e->off = m->arena.len;
    e->len = len;
    e->source = si;
    ltr_bytes_put_mem(&m->arena, rec, len);
    return m->arena.failed ? (ltr_fail(m->err, ENOMEM, "out of memory"), -1) : 0;
}

/* The field types of a LAYOUT body b (len bytes from its id on), for the
 * column tables that name it (column_types_match): 0, or -1 when it does
 * not parse as a reader parses it (which then knows no layout by it), or
 * -ENOMEM. */
static int keep_types(source *s, uint32_t id, const uint8_t *b, size_t len)
{
    uint32_t k;
    if (ltr_layout_body_types(b, len, NULL, 0, &k) < 0)
        return -1;
    size_t at = s->types.len;
    uint8_t *t = ltr_bytes_grow(&s->types, 4 + (size_t)k);
    if (!t || s->types.failed)
        return -ENOMEM;
    ltr_put_u32(t, k);
    ltr_layout_body_types(b, len, t + 4, k, &k);
    return ltr_idmap_put(&s->types_at, id, (void *)(uintptr_t)(at + 1)) < 0 ? -ENOMEM : 0;
}

/* A column table's entry for layout id against the layout its source
 * described first: the check a reader makes before it reads the block
 * (reader.c), so that merge rebuilds no records a reader would not read. */
static int column_types_match(void *ctx, uint32_t id, const uint8_t *types, uint32_t k)
{
    const source *s = ctx;
    uintptr_t at = (uintptr_t)ltr_idmap_get(&s->types_at, id);
    if (!at || ltr_get_u32(s->types.data + at - 1) != k)
        return -1;
    return memcmp(s->types.data + at - 1 + 4, types, k) ? -1 : 0;
}

/* A LAYOUT record of source s, with its merged id in place of its own: an
 * identical layout (all but the id) of any trace has one merged id and is
 * written once. An id described again keeps, for the events, its first
 * description that parses, as a reader does. Returns 1 to write it, 0 when written already,
 * -1 on error. */
static int layout_rec(merger *m, source *s, uint8_t *rec, size_t len)
{
    if (len < 12)
        return 1; /* a bad record: left as it is, for the reader to report */
    uint32_t id = ltr_get_u32(rec + 8), merged;
    int first = 0; /* the id's first description that parses: the one a reader keeps */
    if (!ltr_idmap_get(&s->layouts, id)) {
        int rc = keep_types(s, id, rec + 8, len - 8);
        if (rc == -ENOMEM)
            return ltr_fail(m->err, ENOMEM, "out of memory"), -1;
        first = rc == 0;
    }
    int created, keep = 1;
    seen_rec *e = an_hmap_put(&m->layouts, hash_bytes(rec + 12, len - 12, LTR_META_LAYOUT), &created);
    if (!e)
        return ltr_fail(m->err, ENOMEM, "out of memory"), -1;
    if (!created && e->len == len - 12 && !memcmp(m->arena.data + e->off, rec + 12, len - 12)) {
        merged = e->source;
        keep = 0;
    } else {
        merged = ++m->next_layout; /* new, or (a hash collision) another layout: an id of its own */
        if (created) {
            *e = (seen_rec){.hash = e->hash, .off = m->arena.len, .len = len - 12, .source = merged};
            ltr_bytes_put_mem(&m->arena, rec + 12, len - 12);
        }
    }
    if (m->arena.failed || (first && ltr_idmap_put(&s->layouts, id, (void *)(uintptr_t)((uint64_t)merged + 1)) < 0))
        return ltr_fail(m->err, ENOMEM, "out of memory"), -1;
    ltr_put_u32(rec + 8, merged);
    return keep;
}

/* The pid of a stack record (its first field; a uvar in FRAME_NODES_V). */
static int stack_pid(uint16_t kind, const uint8_t *body, size_t len, uint32_t *pid)
{
    uint64_t v;
    if (kind == LTR_META_FRAME_NODES_V)
        return ltr_get_uvar(body, len, &v) && v <= UINT32_MAX ? (*pid = (uint32_t)v, 0) : -1;
    return len >= 4 ? (*pid = ltr_get_u32(body), 0) : -1;
}

/* Stack records of one pid must all come from one source. */
static int check_stacks(merger *m, uint16_t kind, const uint8_t *body, size_t len, uint32_t si)
{
    uint32_t pid;
    if (stack_pid(kind, body, len, &pid) != 0)
        return 0; /* bad: the reader reports it */
    int created;
    seen_rec *e = an_hmap_put(&m->stack_pids, (uint64_t)pid + 1, &created);
    if (!e)
        return ltr_fail(m->err, ENOMEM, "out of memory");
    if (created)
        e->source = si;
    else if (e->source != si)
        return ltr_fail(m->err, EINVAL, "pid %u has heap stacks in both %s and %s: each session numbers a "
                        "process's stacks its own way, and merging them would give wrong stacks", pid,
                        m->src[e->source].path, m->src[si].path);
    return 0;
}

static int rewrite_metadata(merger *m, source *s, uint32_t si, ltr_bytes *out)
{
    uint8_t *p = s->f.raw;
    size_t len = s->f.raw_len, off = 0;
    while (off + 8 <= len) {
        uint16_t kind = ltr_get_u16(p + off);
        uint32_t size = ltr_get_u32(p + off + 4);
        if (size < 8 || size > len - off)
            break; /* the rest is bad: copied as it is, for the reader to report */
        uint8_t *rec = p + off;
        int keep = 1;
        if (kind == LTR_META_LAYOUT)
            keep = layout_rec(m, s, rec, size);
        else if (kind == LTR_META_PROVIDER || kind == LTR_META_PROCESS || kind == LTR_META_THREAD ||
                 kind == LTR_META_MODULE)
        {
            int r = seen_elsewhere(m, &m->records, kind, rec, size, si);
            keep = r < 0 ? -1 : !r;
        }
        else if ((kind == LTR_META_STACK || kind == LTR_META_STACK_REF || kind == LTR_META_FRAME_NODES ||
                  kind == LTR_META_FRAME_NODES_V) &&
                 check_stacks(m, kind, rec + 8, size - 8, si) != 0)
            return -1;
        if (keep < 0)
            return -1;
        if (keep)
            ltr_bytes_put_mem(out, rec, size);
        else
            m->rep->duplicates++;
        off += size;
    }
    ltr_bytes_put_mem(out, p + off, len - off);
    return out->failed ? ltr_fail(m->err, ENOMEM, "out of memory") : 0;
}

/* ---- EVENTS ------------------------------------------------------------------------ */

static uint32_t merged_layout(const source *s, uint64_t id)
{
    void *v = id <= UINT32_MAX ? ltr_idmap_get(&s->layouts, (uint32_t)id) : NULL;
    return v ? (uint32_t)((uintptr_t)v - 1) : NO_LAYOUT;
}

/* The records of a compact block, layout ids rewritten, the first delta made
 * absolute. Returns the records rewritten; stops at a malformed one (the
 * rest of the block is damage a reader would skip too). */
static uint32_t rewrite_compact(const source *s, const uint8_t *p, size_t len, uint64_t ts, ltr_bytes *out)
{
    uint32_t n = 0;
    uint64_t prev_out = 0;
    for (size_t off = 0; off < len; n++) {
        uint64_t size, layout, zz;
        size_t a = ltr_get_uvar(p + off, len - off, &size);
        if (!a || size > len - off - a)
            break;
        const uint8_t *r = p + off + a;
        size_t b = ltr_get_uvar(r, size, &layout), c = b ? ltr_get_uvar(r + b, size - b, &zz) : 0;
        if (!b || !c)
            break;
        ts += (uint64_t)ltr_unzigzag(zz);
        size_t payload = size - b - c;
        uint8_t *h = ltr_bytes_grow(out, LTR_CEVENT_HEADER_MAX + payload);
        if (!h)
            break;
        size_t hl = ltr_put_cevent_header(h, merged_layout(s, layout), ts, prev_out, (uint32_t)payload);
        memcpy(h + hl, r + b + c, payload);
        out->len -= LTR_CEVENT_HEADER_MAX - hl; /* grow reserved the longest header */
        prev_out = ts;
        off += a + size;
    }
    return n;
}

/* Fixed records: the layout id in place. */
static uint32_t rewrite_fixed(const source *s, const uint8_t *p, size_t len, ltr_bytes *out)
{
    uint32_t n = 0;
    for (size_t off = 0; off + 16 <= len; n++) {
        uint32_t size = ltr_get_u32(p + off);
        if (size < 16 || size > len - off)
            break;
        uint8_t *r = ltr_bytes_grow(out, size);
        if (!r)
            break;
        memcpy(r, p + off, size);
        ltr_put_u32(r + 4, merged_layout(s, ltr_get_u32(p + off + 4)));
        off += size;
    }
    return n;
}

/* A buffer block of an EVENTS payload, as next_block reads it. */
typedef struct block {
    ltr_block_info info;
    int compact;
    uint64_t ts_base;
    const uint8_t *rec;
    size_t len;
} block;

/* The block at off (ltr_block_frame_at): its size, or 0 at the end or at a
 * bad block (a reader skips the rest of the chunk there too). */
static size_t next_block(const uint8_t *p, size_t len, size_t off, block *b)
{
    ltr_block_frame f;
    size_t used = ltr_block_frame_at(p, len, off, &f);
    if (!used)
        return 0;
    b->info = (ltr_block_info){.collector = f.collector, .flags = f.flags, .pid = f.pid, .tid = f.tid, .seq = f.seq,
                               .event_count = f.count,
                               .ref_base = {f.ref_base[0], f.ref_base[1]}}; /* kept: the payloads' references count from them */
    b->compact = (f.flags & LTR_BLOCK_FLAG_COMPACT) != 0;
    b->ts_base = f.ts_base;
    b->rec = f.rec;
    b->len = f.len;
    return used;
}

/* A column block's records rebuilt (into s->cols), so that it is copied as
 * rows are (the writer stores them as columns again): 0, or -1 when its
 * columns do not frame or its table names a layout the source did not
 * describe with those field types (a reader skips the whole block too). A
 * record that cannot be rebuilt ends the block, as a reader reads it. */
static int block_rows(source *s, block *b)
{
    if (!(b->info.flags & LTR_BLOCK_FLAG_COLUMNS))
        return 0;
    uint16_t flags = b->info.flags;
    b->info.flags &= (uint16_t)~(LTR_BLOCK_FLAG_COLUMNS | LTR_BLOCK_FLAG_TIME_RUNS);
    if (!b->compact || ltr_columns_open(&s->cols, b->rec, b->len, b->info.event_count, flags, column_types_match, s) < 0)
        return -1;
    b->info.event_count = ltr_columns_rows(&s->cols, LTR_CHUNK_MAX_RAW);
    b->rec = s->cols.rows.data;
    b->len = s->cols.rows.len;
    return 0;
}

/* The timestamp of an EVENTS chunk's first event (its place in the merge). */
static uint64_t chunk_first_ts(source *s)
{
    block b;
    size_t used = next_block(s->f.raw, s->f.raw_len, 0, &b);
    uint64_t v = 0;
    if (!used || block_rows(s, &b) < 0 || b.len == 0)
        return 0;
    if (!b.compact)
        return b.len >= 16 ? ltr_get_u64(b.rec + 8) : 0;
    size_t a = ltr_get_uvar(b.rec, b.len, &v), c = a ? ltr_get_uvar(b.rec + a, b.len - a, &v) : 0;
    return a && c && ltr_get_uvar(b.rec + a + c, b.len - a - c, &v) ? b.ts_base + (uint64_t)ltr_unzigzag(v) : 0;
}

static int write_events(merger *m, source *s, uint32_t si)
{
    ltr_bytes recs = {0};
    block b;
    for (size_t off = 0, used; (used = next_block(s->f.raw, s->f.raw_len, off, &b)); off += used) {
        if (b.info.collector >= LTR_MERGE_COLLECTORS) /* its blocks and counters would mix with the next source's */
            return ltr_bytes_free(&recs),
                   ltr_fail(m->err, EINVAL, "%s has collector %u: a merged trace cannot be merged again",
                            s->path, b.info.collector);
        if (block_rows(s, &b) < 0) {
            m->rep->damaged++;
            continue;
        }
        recs.len = 0;
        uint32_t n = b.compact ? rewrite_compact(s, b.rec, b.len, b.ts_base, &recs) : rewrite_fixed(s, b.rec, b.len, &recs);
        if (recs.failed)
            return ltr_bytes_free(&recs), ltr_fail(m->err, ENOMEM, "out of memory");
        if (!recs.len) /* no record of it was whole: no block (the writer copied from no bytes at all, NULL) */
            continue;
        b.info.collector = (uint16_t)(si * LTR_MERGE_COLLECTORS + b.info.collector);
        b.info.flags &= (uint16_t)~(LTR_BLOCK_FLAG_SEALED_EARLY | LTR_BLOCK_FLAG_COMPACT); /* standalone */
        b.info.event_count = n;
        b.info.fixed_records = !b.compact;
        if (ltr_writer_block(m->w, &b.info, recs.data, recs.len, m->err) < 0)
            return ltr_bytes_free(&recs), -1;
        m->rep->blocks++;
        m->rep->events += n;
    }
    ltr_bytes_free(&recs);
    return 0;
}

/* ---- one chunk, and the order of chunks --------------------------------------------- */

static void keep_symbol(void *ctx, const ltr_symmodule *md, uint64_t offset, const ltr_symframe *frames, size_t n)
{
    merger *m = ctx;
    int rc = ltr_symchunk_add(m->syms, md, offset, frames, n);
    if (rc == -ENOMEM)
        m->syms_failed = 1; /* -E2BIG: past what one merge keeps, the rest is left out */
}

static int take_chunk(merger *m, source *s, uint32_t si)
{
    int rc = 0;
    ltr_bytes out = {0};
    switch (s->f.h.type) {
    case LTR_CHUNK_HEADER:
        s->header.len = 0;
        ltr_bytes_put_mem(&s->header, s->f.raw, s->f.raw_len);
        break;
    case LTR_CHUNK_METADATA:
        if ((rc = rewrite_metadata(m, s, si, &out)) == 0 && out.len)
            rc = ltr_writer_metadata(m->w, out.data, out.len, m->err);
        break;
    case LTR_CHUNK_EVENTS: rc = write_events(m, s, si); break;
    case LTR_CHUNK_COUNTERS: /* each replaces the one before: the last one counts */
        s->counters.len = 0;
        ltr_bytes_put_mem(&s->counters, s->f.raw, s->f.raw_len);
        break;
    case LTR_CHUNK_END: {
        ltr_bytes kv = {.data = s->f.raw, .len = s->f.raw_len};
        s->end_ns = kv_u64(&kv, "clock.end_ns");
        s->wall_end_ns = kv_u64(&kv, "clock.wall_end_ns");
        s->complete = 1;
        break;
    }
    case LTR_CHUNK_SYMBOLS: /* the names travel with the merge: one set, after its END */
        if (m->syms && ltr_symchunk_parse(s->f.raw, s->f.raw_len, keep_symbol, m) < 0)
            m->rep->damaged++;
        break;
    default: break; /* a kind this reader does not know: readers skip it, so does the merge */
    }
    ltr_bytes_free(&out);
    s->have = 0;
    m->rep->chunks++;
    return rc ? rc : advance(m, s);
}

/* The source whose chunk goes next: any chunk but EVENTS at once (metadata
 * before the events of its own source), else the earliest EVENTS chunk. */
static source *pick(merger *m)
{
    source *best = NULL;
    for (size_t i = 0; i < m->n; i++) {
        source *s = &m->src[i];
        if (!s->have)
            continue;
        if (s->f.h.type != LTR_CHUNK_EVENTS)
            return s;
        s->first_ts = chunk_first_ts(s);
        if (!best || s->first_ts < best->first_ts)
            best = s;
    }
    return best;
}

/* ---- the merged trace's HEADER, COUNTERS and END ----------------------------------- */

/* Header key k of the merge: the sources' value where they agree; else
 * the providers and profiles of all (each once, ','-joined, as one
 * session's list), and any other key each source's value '+'-joined in the
 * sources' order, as session.name ("2048+64" buffers): the first source's
 * alone said the merge had its providers only (a review). */
static void put_merged_value(merger *m, ltr_bytes *kv, const char *k)
{
    ltr_bytes v = {0};
    bool list = !strcmp(k, "session.providers") || !strcmp(k, "session.profiles"), same = true;
    char first[4096] = "", one[4096];
    for (size_t i = 0; i < m->n; i++) {
        if (!ltr_kv_find(m->src[i].header.data, m->src[i].header.len, k, one, sizeof one))
            snprintf(one, sizeof one, "-");
        if (!i)
            snprintf(first, sizeof first, "%s", one);
        same &= !strcmp(one, first);
        for (char *item = one, *next; item; item = next) { /* a list: each of its items once */
            next = list ? strchr(item, ',') : NULL;
            if (next)
                *next++ = 0;
            if (list && (!*item || !strcmp(item, "-")))
                continue;
            bool seen = false;
            for (size_t at = 0; list && at < v.len && !seen;) { /* v is not 0-terminated yet */
                const uint8_t *comma = memchr(v.data + at, ',', v.len - at);
                size_t n = comma ? (size_t)(comma - v.data) - at : v.len - at;
                seen = n == strlen(item) && !memcmp(v.data + at, item, n);
                at += n + 1;
            }
            if (!seen) {
                if (v.len)
                    ltr_bytes_put_mem(&v, list ? "," : "+", 1);
                ltr_bytes_put_mem(&v, item, strlen(item));
            }
        }
    }
    ltr_bytes_put_u8(&v, 0);
    ltr_bytes_put_kv(kv, k, same || v.failed ? first : (const char *)v.data);
    ltr_bytes_free(&v);
}

static int write_header(merger *m, const char *const *paths)
{
    uint64_t start = UINT64_MAX, wall = 0;
    for (size_t i = 0; i < m->n; i++) {
        uint64_t st = kv_u64(&m->src[i].header, "clock.start_ns");
        if (st && st < start) {
            start = st;
            wall = kv_u64(&m->src[i].header, "clock.wall_start_ns");
        }
    }
    ltr_bytes kv = {0}, names = {0};
    const ltr_bytes *h0 = &m->src[0].header;
    const char *key, *val;
    size_t off = 0, klen, vlen;
    while (ltr_kv_next(h0->data, h0->len, &off, &key, &klen, &val, &vlen) == 1) {
        char k[128];
        snprintf(k, sizeof k, "%.*s", (int)klen, key);
        if (strncmp(k, "clock.", 6) && strcmp(k, "trace.kind") && strcmp(k, "session.name") &&
            strcmp(k, "recorder.pid"))
            put_merged_value(m, &kv, k);
    }
    for (size_t i = 0; i < m->n; i++) {
        char name[256] = "";
        ltr_kv_find(m->src[i].header.data, m->src[i].header.len, "session.name", name, sizeof name);
        ltr_bytes_put_mem(&names, i ? "+" : "", i ? 1 : 0);
        ltr_bytes_put_mem(&names, name, strlen(name));
    }
    ltr_bytes_put_u8(&names, 0);
    char num[32];
    ltr_bytes_put_kv(&kv, "trace.kind", "merge");
    ltr_bytes_put_kv(&kv, "session.name", names.failed ? "merge" : (const char *)names.data);
    ltr_bytes_put_kv(&kv, "clock.id", "CLOCK_MONOTONIC");
    snprintf(num, sizeof num, "%" PRIu64, start == UINT64_MAX ? 0 : start);
    ltr_bytes_put_kv(&kv, "clock.start_ns", num);
    snprintf(num, sizeof num, "%" PRIu64, wall);
    ltr_bytes_put_kv(&kv, "clock.wall_start_ns", num);
    for (size_t i = 0; i < m->n; i++) {
        char k[48];
        snprintf(k, sizeof k, "merge.source.%zu", i);
        ltr_bytes_put_kv(&kv, k, paths[i]);
    }
    int rc = kv.failed ? ltr_fail(m->err, ENOMEM, "out of memory") : ltr_writer_kv(m->w, LTR_CHUNK_HEADER, &kv, m->err);
    ltr_bytes_free(&kv);
    ltr_bytes_free(&names);
    return rc;
}

/* Every source's last COUNTERS, its collectors renumbered as its blocks. */
static int write_counters(merger *m)
{
    ltr_bytes out = {0};
    for (size_t si = 0; si < m->n; si++) {
        ltr_bytes *c = &m->src[si].counters;
        for (size_t off = 0; off + 10 <= c->len;) {
            uint16_t kind = ltr_get_u16(c->data + off);
            uint32_t size = ltr_get_u32(c->data + off + 4);
            if (size < 10 || size > c->len - off)
                break;
            uint8_t *r = ltr_bytes_grow(&out, size);
            if (!r)
                break;
            memcpy(r, c->data + off, size);
            if (kind == LTR_COUNTER_COLLECTOR || kind == LTR_COUNTER_PROCESS_LOST) /* u16 collector first */
                ltr_put_u16(r + 8, (uint16_t)(si * LTR_MERGE_COLLECTORS + ltr_get_u16(r + 8)));
            off += size;
        }
    }
    int rc = out.failed ? ltr_fail(m->err, ENOMEM, "out of memory")
             : out.len  ? ltr_writer_counters(m->w, out.data, out.len, m->err)
                        : 0;
    ltr_bytes_free(&out);
    return rc;
}

static int write_end(merger *m)
{
    uint64_t end = 0, wall = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (!m->src[i].complete)
            return 0; /* one was cut short: so is the merge (no END) */
        if (m->src[i].end_ns > end) {
            end = m->src[i].end_ns;
            wall = m->src[i].wall_end_ns;
        }
    }
    ltr_bytes kv = {0};
    char num[32];
    snprintf(num, sizeof num, "%" PRIu64, end);
    ltr_bytes_put_kv(&kv, "clock.end_ns", num);
    snprintf(num, sizeof num, "%" PRIu64, wall);
    ltr_bytes_put_kv(&kv, "clock.wall_end_ns", num);
    ltr_bytes_put_kv(&kv, "session.description", "ltr merge");
    int rc = kv.failed ? ltr_fail(m->err, ENOMEM, "out of memory") : ltr_writer_kv(m->w, LTR_CHUNK_END, &kv, m->err);
    ltr_bytes_free(&kv);
    m->rep->complete = rc == 0;
    return rc;
}

/* The sources' names of their frames (SYMBOLS), after END as in any trace. */
static int write_symbols(merger *m)
{
    if (!m->syms || !ltr_symchunk_entries(m->syms))
        return 0;
    ltr_bytes *parts = NULL;
    size_t n = 0;
    int rc = m->syms_failed || ltr_symchunk_build(m->syms, &parts, &n) < 0
                 ? ltr_fail(m->err, ENOMEM, "out of memory keeping the sources' symbols")
                 : 0;
    for (size_t i = 0; i < n; i++) {
        if (rc == 0)
            rc = ltr_writer_chunk(m->w, LTR_CHUNK_SYMBOLS, parts[i].data, parts[i].len, m->err);
        ltr_bytes_free(&parts[i]);
    }
    free(parts);
    return rc;
}

static int run(merger *m, const char *const *paths)
{
    int rc = 0;
    for (size_t i = 0; i < m->n && rc == 0; i++)
        if ((rc = advance(m, &m->src[i])) == 0 && m->src[i].have && m->src[i].f.h.type == LTR_CHUNK_HEADER)
            rc = take_chunk(m, &m->src[i], (uint32_t)i);
    if (rc == 0)
        rc = write_header(m, paths);
    for (source *s; rc == 0 && (s = pick(m));)
        rc = take_chunk(m, s, (uint32_t)(s - m->src));
    if (rc == 0)
        rc = write_counters(m);
    if (rc == 0)
        rc = write_end(m);
    if (rc == 0 && m->rep->complete)
        rc = write_symbols(m);
    if (rc == 0)
        rc = ltr_writer_flush(m->w, 1, m->err);
    return rc;
}

/* How many of the events written a reader reads back from tmp: a damaged
 * source's records that refer to what its skipped stretches held are
 * copied as they are (a merge never decodes events), and a merge of a
 * copy with an EVENTS chunk flipped said "7 986 228 events" of which a
 * reader read 585 704. Read back only after damage: it costs a read of
 * the whole merge, which a merge of intact traces, all readable, skips. */
static int count_readable(const char *tmp, ltr_merge_report *rep, ltr_error *err)
{
    rep->readable = rep->events;
    if (!rep->damaged)
        return 0;
    ltr_trace *t;
    ltr_trace_summary sum;
    int rc = ltr_trace_open(tmp, &t, err);
    if (rc)
        return rc;
    if ((rc = ltr_trace_scan(t, &sum, err)) == 0)
        rep->readable = sum.events < rep->events ? sum.events : rep->events;
    ltr_trace_close(t);
    return rc;
}

int ltr_merge(const char *const *paths, size_t n, const char *out, bool replace, ltr_merge_report *rep,
              ltr_error *err)
{
    memset(rep, 0, sizeof *rep);
    int rc = ltr_merge_check(paths, n, err);
    if (rc)
        return rc;
    char tmp[4096];
    if ((rc = ltr_temp_name(tmp, sizeof tmp, out)) < 0)
        return ltr_fail(err, -rc, "%s: %s", out, strerror(-rc));
    int fd = ltr_create_temp(tmp);
    if (fd < 0)
        return ltr_fail(err, -fd, "%s: a temporary file beside it: %s", out, strerror(-fd));
    merger m = {.n = n, .rep = rep, .err = err, .src = calloc(n, sizeof(source)),
                .syms = ltr_symchunk_builder_new()};
    an_hmap_init(&m.layouts, sizeof(seen_rec));
    an_hmap_init(&m.records, sizeof(seen_rec));
    an_hmap_init(&m.stack_pids, sizeof(seen_rec));
    if (!m.src || !m.syms)
        rc = ltr_fail(err, ENOMEM, "out of memory");
    for (size_t i = 0; m.src && i < n; i++)
        m.src[i].fd = -1; /* not opened yet */
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = open_source(&m.src[i], paths[i], err);
    if (rc == 0) {
        rc = ltr_writer_open_fd(&m.w, fd, tmp, err);
        fd = -1; /* the writer's now, even on failure */
        if (rc == 0)
            ltr_writer_trust_layouts(m.w); /* format 4 sources' pnew and pref fields */
    }
    if (rc == 0)
        rc = run(&m, paths);
    if (m.w)
        ltr_writer_close(m.w);
    if (fd >= 0)
        close(fd);
    if (rc == 0)
        rc = count_readable(tmp, rep, err);
    if (rc == 0 && (rc = ltr_publish(tmp, out, replace)) < 0)
        rc = rc == -EEXIST ? ltr_fail_exists(err, out) : ltr_fail(err, -rc, "%s: %s", out, strerror(-rc));
    if (rc)
        unlink(tmp);
    for (size_t i = 0; m.src && i < n; i++)
        close_source(&m.src[i]);
    free(m.src);
    ltr_symchunk_builder_free(m.syms);
    an_hmap_free(&m.layouts);
    an_hmap_free(&m.records);
    an_hmap_free(&m.stack_pids);
    ltr_bytes_free(&m.arena);
    return rc < 0 ? rc : rc ? -rc : 0;
}
