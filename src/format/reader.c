/*
 * format/reader.c — the trace reader's chunk layer and event stream
 * (include/ltr/trace.h). Chunks are read one at a time with pread into a
 * reused buffer, checked (header CRC, payload CRC, zstd raw size), and handed
 * to meta.c or streamed block by block as events. Damage is recorded and the
 * reader resyncs on the next valid chunk header, so any input is survivable.
 */
#include "prim/prim.h"
#include "format/reader.h"

#include "format/chunk.h"
#include "format/compact.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#define SCAN_WINDOW (64u * 1024u)


/* count occurrences of one damage (ltr_trace_add_damage's one, or a chunk's
 * events of an unknown layout settled as damage at the end); named_chunk:
 * the detail starts "chunk SEQ: " (ltr_trace_chunk_damage), written only
 * when it makes an entry, as the rest is */
static void add_damage_n(ltr_trace *t, ltr_damage_kind kind, uint64_t off, uint64_t len, int64_t seq,
                         uint64_t count, bool named_chunk, const char *fmt, va_list ap)
{
    t->sum.damage += count;
    t->record_damage += kind == LTR_DAMAGE_BAD_RECORD || kind == LTR_DAMAGE_FORGED ? count : 0;
    t->forged += kind == LTR_DAMAGE_FORGED ? count : 0;
    if (t->ndamage > 0) {
        ltr_damage *last = &t->damage[t->ndamage - 1];
        if ((kind == LTR_DAMAGE_BAD_RECORD || kind == LTR_DAMAGE_FORGED) && last->kind == kind &&
            last->offset == off) {
            last->count += count;
            return;
        }
    }
    if (t->ndamage >= LTR_MAX_DAMAGE_ENTRIES)
        return;
    ltr_damage *d = realloc(t->damage, (t->ndamage + 1) * sizeof *d);
    if (!d)
        return;
    t->damage = d;
    d += t->ndamage++;
    *d = (ltr_damage){.kind = kind, .offset = off, .length = len, .chunk_seq = seq, .count = count};
    int named = named_chunk ? snprintf(d->detail, sizeof d->detail, "chunk %llu: ", (unsigned long long)seq) : 0;
    vsnprintf(d->detail + named, sizeof d->detail - (size_t)named, fmt, ap);
}

void ltr_trace_add_damage(ltr_trace *t, ltr_damage_kind kind, uint64_t off, uint64_t len,
                          int64_t seq, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_damage_n(t, kind, off, len, seq, 1, false, fmt, ap);
    va_end(ap);
}

void ltr_trace_chunk_damage(ltr_trace *t, ltr_damage_kind kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_damage_n(t, kind, t->chunk_off, 0, (int64_t)t->chunk_seq, 1, true, fmt, ap);
    va_end(ap);
}

static void settle_damage(ltr_trace *t, const ltr_layout_gap *g, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void settle_damage(ltr_trace *t, const ltr_layout_gap *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_damage_n(t, LTR_DAMAGE_BAD_RECORD, g->chunk_off, 0, g->chunk_seq, g->count, true, fmt, ap);
    va_end(ap);
}

/* An event whose layout id the reader does not know: held apart until the
 * end of the file says whether the trace lost metadata (a memory-mode
 * recorder past its bound on what it keeps counted the LAYOUT records of
 * later processes lost, and their 77 269 events read as damage). */
static void unknown_layout(ltr_trace *t, size_t at)
{
    t->sum.events_layout_lost++;
    ltr_layout_gap *last = t->nlayout_gaps ? &t->layout_gaps[t->nlayout_gaps - 1] : NULL;
    if (last && last->chunk_off == t->chunk_off) {
        last->count++;
        return;
    }
    if (t->nlayout_gaps >= LTR_MAX_DAMAGE_ENTRIES) { /* said with the last one */
        last->count++;
        return;
    }
    ltr_layout_gap *g = realloc(t->layout_gaps, (t->nlayout_gaps + 1) * sizeof *g);
    if (!g) {
        if (last)
            last->count++;
        return;
    }
    t->layout_gaps = g;
    t->layout_gaps[t->nlayout_gaps++] =
        (ltr_layout_gap){.chunk_off = t->chunk_off, .chunk_seq = (int64_t)t->chunk_seq, .at = at, .count = 1};
}

/* At the end of the file, with its counters read: events of unknown layouts
 * are lost events if the trace lost metadata records, else damage. */
static void settle_layout_gaps(ltr_trace *t)
{
    uint64_t metadata_lost = 0;
    for (size_t i = 0; i < t->ncollectors; i++)
        metadata_lost += t->collectors[i].metadata_lost;
    for (size_t i = 0; !metadata_lost && i < t->nlayout_gaps; i++)
        settle_damage(t, &t->layout_gaps[i], "event with an unknown layout id at raw offset %zu", t->layout_gaps[i].at);
    if (!metadata_lost)
        t->sum.events_layout_lost = 0;
    free(t->layout_gaps);
    t->layout_gaps = NULL;
    t->nlayout_gaps = 0;
}

static int io_fail(ltr_trace *t, ltr_error *err, ssize_t rc)
{
    return ltr_fail(err, (int)-rc, "reading %s: %s", t->path, strerror((int)-rc));
}

static void check_seq(ltr_trace *t, const ltr_chunk_header *h)
{
    if (h->seq > t->expect_seq)
        ltr_trace_add_damage(t, LTR_DAMAGE_MISSING, t->pos, 0, (int64_t)t->expect_seq,
                             "%llu chunk(s) missing: sequence numbers %llu to %llu",
                             (unsigned long long)(h->seq - t->expect_seq),
                             (unsigned long long)t->expect_seq, (unsigned long long)(h->seq - 1));
    t->expect_seq = h->seq + 1;
}

static void dispatch(ltr_trace *t, const ltr_chunk_header *h)
{
    t->chunk_off = t->pos;
    t->chunk_seq = h->seq;
    t->sum.chunks++;
    switch (h->type) {
    case LTR_CHUNK_HEADER:
        ltr_kv_parse(t, &t->header_kv, t->raw, t->raw_len);
        break;
    case LTR_CHUNK_END:
        ltr_kv_parse(t, &t->end_kv, t->raw, t->raw_len);
        t->sum.complete = 1;
        break;
    case LTR_CHUNK_METADATA:
        ltr_meta_parse(t, t->raw, t->raw_len);
        break;
    case LTR_CHUNK_COUNTERS:
        ltr_counters_parse(t, t->raw, t->raw_len);
        break;
    case LTR_CHUNK_SYMBOLS:
        ltr_symbols_chunk(t, t->raw, t->raw_len);
        break;
    case LTR_CHUNK_EVENTS:
        if (t->metadata_only)
            break;
        t->in_events = 1;
        t->ev_pos = 0;
        t->blk_active = 0;
        t->blk_pos = t->blk_end = 0;
        break;
    default:
        break; /* a newer writer's chunk type: skipped by design */
    }
}

/* The damage of a chunk whose header decoded, its sequence number, and its content. */
static void apply_chunk(ltr_trace *t, const ltr_fetch *f)
{
    const ltr_chunk_header *h = &f->h;
    long long seq = (long long)h->seq;
    uint64_t len = LTR_CHUNK_HEADER_SIZE + h->payload_size;
    check_seq(t, h);
    switch (f->kind) {
    case LTR_FETCH_BAD_HEADER:
        ltr_trace_add_damage(t, LTR_DAMAGE_BAD_HEADER, t->pos, f->next - t->pos, seq, "chunk %lld: %s", seq,
                             f->text);
        break;
    case LTR_FETCH_TRUNCATED:
        ltr_trace_add_damage(t, LTR_DAMAGE_TRUNCATED, t->pos, t->file_size - t->pos, seq,
                             "the file ends inside chunk %lld (%llu of %u payload bytes)", seq,
                             (unsigned long long)f->got, h->payload_size);
        break;
    case LTR_FETCH_BAD_CRC:
        ltr_trace_add_damage(t, LTR_DAMAGE_BAD_CRC, t->pos, len, seq, "payload CRC mismatch in chunk %lld", seq);
        break;
    case LTR_FETCH_BAD_ZSTD:
        ltr_trace_add_damage(t, LTR_DAMAGE_DECOMPRESS, t->pos, len, seq,
                             "chunk %lld does not decompress to its %u bytes: %s", seq, h->raw_size, f->why);
        break;
    default:
        t->raw = f->raw;
        t->raw_len = f->raw_len;
        t->ahead = f->decode_ahead ? &f->ahead : NULL;
        t->ahead_next = 0;
        dispatch(t, h);
        break;
    }
}

/* Applies a fetched chunk (readahead.c) in file order: damage, or its content. */
static void apply(ltr_trace *t, const ltr_fetch *f)
{
    t->pos = f->pos;
    if (f->kind == LTR_FETCH_SHORT_HEADER)
        ltr_trace_add_damage(t, LTR_DAMAGE_TRUNCATED, t->pos, f->got, -1,
                             "the file ends inside a chunk header (%llu of 32 bytes)", (unsigned long long)f->got);
    else if (f->kind == LTR_FETCH_NO_HEADER)
        ltr_trace_add_damage(t, LTR_DAMAGE_BAD_HEADER, t->pos, f->next - t->pos, -1, "%s; %s %llu bytes", f->why,
                             f->found ? "skipped" : "no chunk header in the last",
                             (unsigned long long)(f->next - t->pos));
    else
        apply_chunk(t, f);
    t->pos = f->next;
}

static void stop_readahead(ltr_trace *t)
{
    ltr_readahead_stop(t->ra);
    t->ra = NULL;
}

/* Reads the chunk at t->pos (from the read-ahead thread when there is one).
 * Returns 1 if the file position moved on (chunk used, or damage recorded),
 * 0 at the end of the file, or -errno (the position stays: a retry reads it again). */
static int load_chunk(ltr_trace *t)
{
    const ltr_fetch *f = t->ra ? ltr_readahead_next(t->ra) : NULL;
    if (!f) {
        stop_readahead(t);
        ltr_fetch_chunk(t->fd, t->file_size, t->pos, t->dctx, &t->own);
        f = &t->own;
    } else if (f->kind == LTR_FETCH_YOURS) {
        ltr_fetch_chunk(t->fd, t->file_size, f->pos, t->dctx, &t->own); /* the same fetch, on this core */
        f = &t->own;
    }
    if (f->kind == LTR_FETCH_END || f->kind == LTR_FETCH_ERROR) {
        int rc = f->kind == LTR_FETCH_END ? 0 : f->err;
        stop_readahead(t);
        if (rc == 0)
            settle_layout_gaps(t);
        return rc;
    }
    apply(t, f);
    return 1;
}

static void block_damage(ltr_trace *t, const char *what, size_t at)
{
    ltr_trace_chunk_damage(t, LTR_DAMAGE_BAD_RECORD, "%s at raw offset %zu", what, at);
}

/* The raw offset damage at pos of the current block is reported at: a
 * record's own, or for a column block (whose records are decoded ones) the
 * start of its column data. */
static size_t raw_at(const ltr_trace *t, size_t pos) { return t->blk_columns ? t->blk_at : pos; }

static const ltr_layout_rec *find_layout(ltr_trace *t, uint32_t id);

/* A column block may name only layouts the reader knows with exactly those field types. */
static int column_layout_check(void *ctx, uint32_t id, const uint8_t *types, uint32_t k)
{
    const ltr_layout_rec *l = find_layout(ctx, id);
    if (!l || l->pub.field_count != k)
        return -1;
    for (uint32_t j = 0; j < k; j++)
        if ((uint8_t)l->fields[j].type != types[j])
            return -1;
    return 0;
}

/* The values the read-ahead thread decoded for the column block at `at`
 * (the same bytes framed by the same code: the same columns), or NULL. */
static const ltr_colvals *values_ahead(ltr_trace *t, size_t at, size_t len, const ltr_colview *v)
{
    const ltr_ahead *a = t->ahead;
    if (!a)
        return NULL;
    while (t->ahead_next < a->nblocks && a->blocks[t->ahead_next].at < at)
        t->ahead_next++;
    if (t->ahead_next == a->nblocks)
        return NULL;
    const ltr_ahead_block *b = &a->blocks[t->ahead_next];
    if (b->at != at || b->len != len || b->count != t->blk_count || b->ncols != v->ncols)
        return NULL;
    return &a->cols[b->col0];
}

/* Where the current block's records are read from: the chunk, or for a
 * column block its columns (ltr_trace_block hands them to a consumer that
 * reads them) or the records rebuilt from them a batch at a time (rows).
 * Column data that does not frame is damage of the whole block: none of
 * its events is read, and its address references are spoiled, as after any
 * record that cannot be read. */
static void block_records(ltr_trace *t, uint16_t flags, size_t at, size_t len)
{
    t->blk_at = at;
    t->blk_columns = (flags & LTR_BLOCK_FLAG_COLUMNS) != 0;
    t->blk_base = t->raw;
    t->blk_pos = at;
    t->blk_end = at + len;
    if (!t->blk_columns)
        return;
    ltr_coldecoder *d = &t->coldec;
    t->blk_pos = t->blk_end = 0;
    if (!t->blk_compact || ltr_columns_open(d, t->raw + at, len, t->blk_count, flags, column_layout_check, t) < 0) {
        char what[128];
        snprintf(what, sizeof what, "column block does not decode (%s)",
                 t->blk_compact ? d->why : "column flag without the compact flag");
        ltr_refseq_spoil(t->blk_refs);
        block_damage(t, what, at);
        t->blk_active = 0;
        return;
    }
    d->view.ahead = values_ahead(t, at, len, &d->view);
}

/* Rows rebuilt at a time from a column block: a few buffers' worth, so that
 * a reader's memory does not grow with a block however large. */
#define COLUMN_ROWS_BATCH (256u << 10)

/* A column block's next records: 1 when there are some, left in the
 * columns (want_rows 0: for ltr_trace_block's consumer) or rebuilt into
 * rows. A record that cannot be rebuilt ends the block, reported, once the
 * rows before it are read: the records after it cannot be found. */
static int more_columns(ltr_trace *t, int want_rows)
{
    ltr_coldecoder *d = &t->coldec;
    if (!d->why && d->view.left && !want_rows)
        return 1;
    if (!d->why && d->view.left) {
        ltr_columns_rows(d, COLUMN_ROWS_BATCH);
        t->blk_base = d->rows.data;
        t->blk_pos = 0;
        t->blk_end = d->rows.len;
        if (t->blk_end)
            return 1;
    }
    if (d->why) {
        char what[128];
        snprintf(what, sizeof what, "column block does not decode (%s)", d->why);
        ltr_refseq_spoil(t->blk_refs);
        block_damage(t, what, t->blk_at);
        t->blk_active = 0;
    }
    return 0;
}

/* Starts the block at ev_pos. Returns 0, or -1 if the rest of the chunk is unusable. */
static int start_block(ltr_trace *t)
{
    const uint8_t *b = t->raw + t->ev_pos;
    size_t left = t->raw_len - t->ev_pos;
    uint16_t flags = left >= LTR_BLOCK_HEADER_SIZE ? ltr_get_u16(b + 6) : 0;
    int refs = (flags & (LTR_BLOCK_FLAG_COMPACT | LTR_BLOCK_FLAG_REFS)) ==
               (LTR_BLOCK_FLAG_COMPACT | LTR_BLOCK_FLAG_REFS);
    size_t hsize = refs ? LTR_BLOCK_REFS_HEADER_SIZE
                 : flags & LTR_BLOCK_FLAG_COMPACT ? LTR_BLOCK_COMPACT_HEADER_SIZE : LTR_BLOCK_HEADER_SIZE;
    if (left < hsize || memcmp(b, LTR_BLOCK_MAGIC, 4) != 0 || ltr_get_u32(b + 28) > left - hsize) {
        block_damage(t, "bad buffer block header", t->ev_pos);
        t->ev_pos = t->raw_len;
        return -1;
    }
    t->ev.collector = ltr_get_u16(b + 4);
    t->ev.block_flags = flags;
    t->ev.pid = ltr_get_u32(b + 8);
    t->ev.tid = ltr_get_u32(b + 12);
    t->ev.buffer_seq = ltr_get_u64(b + 16);
    t->blk_count = ltr_get_u32(b + 24);
    t->blk_compact = (flags & LTR_BLOCK_FLAG_COMPACT) != 0;
    t->blk_ts = t->blk_compact ? ltr_get_u64(b + 32) : 0;
    t->blk_refs = refs ? ltr_refs_block(&t->refs, t->ev.collector, t->ev.pid, ltr_get_u64(b + 40),
                                        ltr_get_u64(b + 48), flags)
                       : NULL;
    t->blk_seen = 0;
    size_t at = t->ev_pos + hsize, len = ltr_get_u32(b + 28);
    t->ev_pos = at + len;
    t->blk_active = 1;
    t->blk_proc = ltr_meta_process(t, t->ev.pid);
    t->blk_thread = ltr_meta_thread(t, t->ev.pid, t->ev.tid);
    t->sum.blocks++;
    if (refs && (flags & LTR_BLOCK_FLAG_DELTA) && !t->blk_refs) {
        /* without its sequences a difference would be taken for an address */
        block_damage(t, "no memory for the block's address references", at);
        t->blk_active = 0;
        return 0;
    }
    block_records(t, flags, at, len);
    return 0;
}

static void end_block(ltr_trace *t)
{
    if (t->blk_active && t->blk_columns && ltr_columns_leftover(&t->coldec))
        block_damage(t, "column block: a column holds more values than the block has records", t->blk_at);
    if (t->blk_active && t->blk_seen != t->blk_count)
        block_damage(t, "buffer block event count differs from its records", raw_at(t, t->blk_end));
    t->blk_active = 0;
}

static const ltr_layout_rec *find_layout(ltr_trace *t, uint32_t id)
{
    if (t->last_layout && t->last_layout->pub.id == id)
        return t->last_layout;
    ltr_layout_rec *l = ltr_idmap_get(&t->layout_map, id);
    if (l)
        t->last_layout = l;
    return l;
}

/* Adds events to the summary's time span (the first event in file order is the origin's fallback). */
static void count_span(ltr_trace *t, uint64_t first, uint64_t min, uint64_t max)
{
    if (!t->have_event) {
        t->have_event = 1;
        t->first_event_ts = first;
        t->sum.first_ts = min;
        t->sum.last_ts = max;
    }
    if (min < t->sum.first_ts)
        t->sum.first_ts = min;
    if (max > t->sum.last_ts)
        t->sum.last_ts = max;
}

/* Adds n events of the current block to the summary, its process and its thread. */
static void count_block_events(ltr_trace *t, uint64_t n)
{
    t->sum.events += n;
    if (t->blk_proc)
        t->blk_proc->events += n;
    if (t->blk_thread)
        t->blk_thread->events += n;
}

void ltr_trace_count_layout(ltr_trace *t, const ltr_layout *l, uint64_t n)
{
    ltr_layout_rec *r = (ltr_layout_rec *)l; /* pub is its first member */
    (void)t;
    r->pub.events += n;
    r->prov->events += n;
}

static void count_event(ltr_trace *t, ltr_layout_rec *l)
{
    count_span(t, t->ev.ts, t->ev.ts, t->ev.ts);
    count_block_events(t, 1);
    ltr_trace_count_layout(t, &l->pub, 1);
}

/* The record framing could not be trusted: the rest of the block is skipped. */
static int bad_framing(ltr_trace *t, const char *what)
{
    block_damage(t, what, raw_at(t, t->blk_pos));
    t->blk_pos = t->blk_end;
    t->blk_active = 0;
    return 0;
}

/* Checks the payload against its layout and fills t->ev. Returns 1, or 0 if
 * the event is skipped (its record still framed, so the block goes on). */
static int finish_event(ltr_trace *t, size_t at, uint32_t id, const uint8_t *payload, uint32_t size)
{
    const ltr_layout_rec *l = find_layout(t, id);
    if (!l) {
        ltr_refseq_spoil(t->blk_refs); /* it may have held pnew values */
        unknown_layout(t, at);
        return 0;
    }
    const uint32_t *offs = ltr_payload_offsets(t, l, payload, size);
    if (!offs) {
        ltr_refseq_spoil(t->blk_refs);
        block_damage(t, "event payload shorter than its layout's fields", at);
        return 0;
    }
    t->ev.layout = &l->pub;
    t->ev.payload = payload;
    t->ev.payload_size = size;
    t->ev.field_offsets = offs;
    if ((l->pref >= 0 || l->pnew >= 0) && ltr_event_refs(t, l) < 0) {
        block_damage(t, "event whose address refers to an allocation the file does not hold", at);
        return 0;
    }
    count_event(t, (ltr_layout_rec *)l);
    return 1;
}

/* A version-1 record: u32 size, u32 layout, u64 timestamp, payload. */
static int take_fixed_event(ltr_trace *t)
{
    const uint8_t *r = t->blk_base + t->blk_pos;
    size_t left = t->blk_end - t->blk_pos;
    uint32_t size = left >= LTR_EVENT_HEADER_SIZE ? ltr_get_u32(r) : 0;
    if (size < LTR_EVENT_HEADER_SIZE || size > LTR_MAX_EVENT_PAYLOAD + LTR_EVENT_HEADER_SIZE ||
        size > left)
        return bad_framing(t, "event record size runs past its block");
    size_t at = raw_at(t, t->blk_pos);
    t->blk_pos += size;
    t->blk_seen++;
    t->ev.ts = ltr_get_u64(r + 8);
    return finish_event(t, at, ltr_get_u32(r + 4), r + LTR_EVENT_HEADER_SIZE, size - LTR_EVENT_HEADER_SIZE);
}

/* A compact record: its timestamp counts from the one before in the block, so
 * a record that does not parse ends the block; one whose layout is unknown
 * or whose payload is short is skipped, its timestamp still counted. */
static int take_compact_event(ltr_trace *t)
{
    const uint8_t *r = t->blk_base + t->blk_pos;
    ltr_cevent ce;
    size_t n = ltr_cevent_parse(r, t->blk_end - t->blk_pos, &ce);
    if (!n)
        return bad_framing(t, "compact event record does not parse (bad varint or size past its block)");
    if (ce.payload > LTR_MAX_EVENT_PAYLOAD)
        return bad_framing(t, "compact event payload over 64 KiB");
    size_t at = raw_at(t, t->blk_pos);
    t->blk_pos += n;
    t->blk_seen++;
    t->blk_ts += (uint64_t)ce.ts_delta;
    t->ev.ts = t->blk_ts;
    return finish_event(t, at, ce.layout, r + ce.header, ce.payload);
}

static int take_event(ltr_trace *t)
{
    return t->blk_compact ? take_compact_event(t) : take_fixed_event(t);
}

/* Makes the current block one with records left: 1, or 0 when the chunk is
 * used up. want_rows: a column block's records rebuilt (else they may be
 * left in the columns). */
static int block_ready(ltr_trace *t, int want_rows)
{
    for (;;) {
        if (t->blk_pos < t->blk_end)
            return 1;
        if (t->blk_active && t->blk_columns && more_columns(t, want_rows))
            return 1;
        end_block(t);
        if (t->ev_pos >= t->raw_len || start_block(t) < 0)
            return 0;
    }
}

/* Brings the stream to a block with records left, loading chunks as needed:
 * 1, 0 at the end of the trace, or -errno. */
static int stream_ready(ltr_trace *t, int want_rows, ltr_error *err)
{
    for (;;) {
        if (t->in_events) {
            if (block_ready(t, want_rows))
                return 1;
            t->in_events = 0;
        }
        int rc = load_chunk(t);
        if (rc < 0)
            return io_fail(t, err, rc);
        if (rc == 0)
            return 0;
    }
}

int ltr_trace_next(ltr_trace *t, const ltr_event **ev, ltr_error *err)
{
    for (;;) {
        int rc = stream_ready(t, 1, err);
        if (rc <= 0)
            return rc;
        if (take_event(t)) {
            *ev = &t->ev;
            return 1;
        }
    }
}

int ltr_trace_block(ltr_trace *t, ltr_block_view *v, ltr_error *err)
{
    int rc = stream_ready(t, 0, err);
    if (rc <= 0)
        return rc;
    int in_columns = t->blk_pos >= t->blk_end; /* a column block's records not rebuilt */
    v->cols = in_columns ? &t->coldec.view : NULL;
    v->rec = in_columns ? NULL : t->blk_base + t->blk_pos;
    v->left = in_columns ? 0 : t->blk_end - t->blk_pos;
    v->ts = t->blk_ts;
    v->pid = t->ev.pid;
    v->tid = t->ev.tid;
    v->compact = t->blk_compact;
    v->refs = t->blk_refs;
    return 1;
}

void ltr_trace_block_consumed(ltr_trace *t, const ltr_block_run *r)
{
    if (!r->records)
        return;
    if (t->blk_pos >= t->blk_end) /* taken from the columns */
        t->coldec.view.left -= r->records;
    else
        t->blk_pos += r->bytes;
    t->blk_seen += r->records;
    t->blk_ts = r->last_ts;
    count_span(t, r->first_ts, r->min_ts, r->max_ts);
    count_block_events(t, r->records);
}

/* Reads chunks until one is intact (it may be EVENTS, left pending) or the end. */
static int prime(ltr_trace *t, ltr_error *err)
{
    while (t->sum.chunks == 0) {
        int rc = load_chunk(t);
        if (rc < 0)
            return io_fail(t, err, rc);
        if (rc == 0)
            break;
    }
    return 0;
}

static int check_file_header(ltr_trace *t, ltr_error *err)
{
    uint8_t h[LTR_FILE_HEADER_SIZE];
    ssize_t n = ltr_read_at(t->fd, h, sizeof h, 0);
    if (n < 0)
        return io_fail(t, err, n);
    if (n == 0)
        return ltr_fail(err, EINVAL, "%s: not an ltr trace (the file is empty)", t->path);
    if ((size_t)n < 8 || memcmp(h, LTR_FILE_MAGIC, 8) != 0)
        return ltr_fail(err, EINVAL, "%s: not an ltr trace (no LTRTRACE magic)", t->path);
    if ((size_t)n < sizeof h)
        return ltr_fail(err, EINVAL, "%s: truncated file header (%zd of 16 bytes)", t->path, n);
    t->version = ltr_get_u32(h + 8);
    if (t->version > LTR_FORMAT_VERSION)
        return ltr_fail(err, ENOTSUP, "%s: trace format version %u is newer than this ltr reads (%u)",
                    t->path, t->version, LTR_FORMAT_VERSION);
    if (t->version == 0)
        return ltr_fail(err, EINVAL, "%s: bad trace format version 0", t->path);
    return 0;
}

static void reset_state(ltr_trace *t)
{
    stop_readahead(t);
    ltr_meta_free(t);
    ltr_refs_free(&t->refs);
    t->blk_refs = NULL;
    free(t->damage);
    t->damage = NULL;
    t->ndamage = 0;
    free(t->layout_gaps);
    t->layout_gaps = NULL;
    t->nlayout_gaps = 0;
    t->record_damage = t->forged = 0;
    uint64_t size = t->file_size;
    memset(&t->sum, 0, sizeof t->sum);
    t->sum.file_size = size;
    t->pos = LTR_FILE_HEADER_SIZE;
    t->expect_seq = 0;
    t->in_events = 0;
    t->blk_active = 0;
    t->have_event = 0;
    t->first_event_ts = 0;
    t->symbol_entries = 0;
}

void ltr_trace_set_readahead(ltr_trace *t, int mode) { t->readahead = mode; }

uint64_t ltr_trace_position(const ltr_trace *t) { return t->pos; }

/* A thread pays off on traces of more than a few chunks; LTR_READAHEAD=0 or 1 overrides. */
static int wants_readahead(const ltr_trace *t)
{
    if (t->readahead >= 0)
        return t->readahead;
    const char *e = getenv("LTR_READAHEAD");
    if (e && *e)
        return strcmp(e, "0") != 0;
    return t->file_size >= LTR_READAHEAD_MIN;
}

int ltr_trace_rewind(ltr_trace *t, ltr_error *err)
{
    struct stat st;
    if (fstat(t->fd, &st) == 0)
        t->file_size = (uint64_t)st.st_size;
    reset_state(t);
    if (wants_readahead(t))
        t->ra = ltr_readahead_start(t->fd, t->file_size, t->pos, t->decode_ahead); /* NULL: the reader fetches itself */
    return prime(t, err);
}

int ltr_trace_open(const char *path, ltr_trace **out, ltr_error *err)
{
    return ltr_trace_open_decoding(path, 0, out, err);
}

int ltr_trace_open_decoding(const char *path, int decode_ahead, ltr_trace **out, ltr_error *err)
{
    *out = NULL;
    ltr_trace *t = calloc(1, sizeof *t);
    if (t) {
        t->fd = -1;
        t->readahead = -1;
        t->decode_ahead = decode_ahead; /* before the read-ahead thread starts: its first chunks too */
    }
    if (!t || !(t->path = strdup(path)) || !(t->dctx = ZSTD_createDCtx())) {
        ltr_trace_close(t);
        return ltr_fail(err, ENOMEM, "opening %s: out of memory", path);
    }
    /* Only a regular file is opened (ltr_open_regular): a trace is read by
     * position, and read again. The path may lead, through a symlink that
     * another user put in a directory of theirs, to a device, whose
     * driver acted on the open itself (a watchdog arms, a pty is made), or
     * to a FIFO, whose writer the open let go on (root's `ltr info` of a
     * colleague's trace). */
    t->fd = ltr_open_regular(path);
    struct stat st;
    if (t->fd < 0 || fstat(t->fd, &st) < 0) {
        int e = t->fd < 0 ? -t->fd : errno;
        bool dir = e == EINVAL && stat(path, &st) == 0 && S_ISDIR(st.st_mode); /* for the message alone */
        ltr_trace_close(t);
        if (e == EINVAL)
            return dir ? ltr_fail(err, EISDIR, "%s: is a directory, not an ltr trace", path)
                       : ltr_fail(err, EINVAL, "%s: is not a regular file (a pipe or a device), not an ltr trace",
                                  path);
        return ltr_fail(err, e, "opening %s: %s", path, strerror(e));
    }
    t->file_size = (uint64_t)st.st_size;
    int rc = check_file_header(t, err);
    if (rc == 0)
        rc = ltr_trace_rewind(t, err);
    if (rc < 0) {
        ltr_trace_close(t);
        return rc;
    }
    *out = t;
    return 0;
}

void ltr_trace_close(ltr_trace *t)
{
    if (!t)
        return;
    if (t->fd >= 0)
        close(t->fd);
    reset_state(t);
    ZSTD_freeDCtx(t->dctx);
    ltr_fetch_free(&t->own);
    ltr_coldecoder_free(&t->coldec);
    free(t->offsets);
    free(t->path);
    free(t);
}

int ltr_trace_scan(ltr_trace *t, ltr_trace_summary *out, ltr_error *err)
{
    int rc = ltr_trace_rewind(t, err);
    const ltr_event *ev;
    if (rc == 0)
        while ((rc = ltr_trace_next(t, &ev, err)) > 0)
            ;
    ltr_trace_summarize(t, out);
    return rc;
}

void ltr_trace_summarize(const ltr_trace *t, ltr_trace_summary *out) { *out = t->sum; }
const char *ltr_trace_path(const ltr_trace *t) { return t->path; }
uint32_t ltr_trace_version(const ltr_trace *t) { return t->version; }
int ltr_trace_complete(const ltr_trace *t) { return t->sum.complete; }
size_t ltr_trace_damage_count(const ltr_trace *t) { return t->ndamage; }
uint64_t ltr_trace_record_damage(const ltr_trace *t) { return t->record_damage; }
uint64_t ltr_trace_forged_count(const ltr_trace *t) { return t->forged; }

const ltr_damage *ltr_trace_damage_at(const ltr_trace *t, size_t i)
{
    return i < t->ndamage ? &t->damage[i] : NULL;
}

const char *ltr_damage_kind_name(ltr_damage_kind kind)
{
    switch (kind) {
    case LTR_DAMAGE_BAD_HEADER: return "bad chunk header";
    case LTR_DAMAGE_BAD_CRC: return "bad CRC";
    case LTR_DAMAGE_TRUNCATED: return "truncated";
    case LTR_DAMAGE_DECOMPRESS: return "decompression failed";
    case LTR_DAMAGE_BAD_RECORD: return "bad record";
    case LTR_DAMAGE_MISSING: return "chunks missing";
    case LTR_DAMAGE_FORGED: return "another process's record";
    }
    return "damage";
}

void ltr_damage_format(const ltr_damage *d, char *buf, size_t cap)
{
    char seq[32] = "";
    if (d->chunk_seq >= 0)
        snprintf(seq, sizeof seq, ", chunk %lld", (long long)d->chunk_seq);
    char times[32] = "";
    if (d->count > 1)
        snprintf(times, sizeof times, " (%llu times)", (unsigned long long)d->count);
    snprintf(buf, cap, "offset %llu%s: %s: %s%s", (unsigned long long)d->offset, seq,
             ltr_damage_kind_name(d->kind), d->detail, times);
}

uint64_t ltr_trace_origin_ns(const ltr_trace *t)
{
    const char *s = ltr_trace_kv(t, LTR_KV_HEADER, "clock.start_ns");
    if (s && *s) {
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (!*end)
            return v;
    }
    return t->have_event ? t->first_event_ts : 0;
}
