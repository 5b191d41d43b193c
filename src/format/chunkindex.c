/*
 * format/chunkindex.c — the INDEX chunk of chunkindex.h: gathered by the
 * writer, encoded and parsed, settled into the earliest time still to come
 * at each block, and found in a file from its chunk headers (reader.h's
 * walk, as the SYMBOLS chunks are found), whose payloads are skipped, so
 * that looking costs nothing next to the analysis.
 */
#include "prim/prim.h"
#include "format/chunkindex.h"

#include "format/compact.h"
#include "format/reader.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int key_after(const ltr_index_entry *e, uint64_t seq, uint32_t end)
{
    return e->seq > seq || (e->seq == seq && e->end > end);
}

void ltr_chunk_index_add(ltr_chunk_index *x, uint64_t seq, uint32_t end, uint32_t flags, uint64_t ts)
{
    if (x->failed)
        return;
    if ((x->n && !key_after(&(ltr_index_entry){.seq = seq, .end = end}, x->e[x->n - 1].seq, x->e[x->n - 1].end)) ||
        ltr_reserve((void **)&x->e, &x->cap, x->n, sizeof *x->e, 64)) {
        x->failed = 1; /* out of order: no index rather than a wrong one */
        return;
    }
    x->e[x->n++] = (ltr_index_entry){.seq = seq, .end = end, .flags = flags, .ts = ts, .last = UINT64_MAX};
}

void ltr_chunk_index_span(ltr_chunk_index *x, uint32_t pid, uint32_t events, uint64_t last)
{
    if (x->failed || !x->n)
        return;
    ltr_index_entry *e = &x->e[x->n - 1];
    e->pid = pid;
    e->events = events;
    e->last = last;
}

void ltr_chunk_index_free(ltr_chunk_index *x)
{
    free(x->e);
    *x = (ltr_chunk_index){0};
}

int ltr_chunk_index_encode(const ltr_chunk_index *x, uint8_t **out, size_t *len)
{
    *len = x->n * LTR_INDEX_ENTRY_SIZE;
    if (!(*out = malloc(*len ? *len : 1)))
        return -1;
    for (size_t i = 0; i < x->n; i++) {
        uint8_t *p = *out + i * LTR_INDEX_ENTRY_SIZE;
        ltr_put_u64(p, x->e[i].seq);
        ltr_put_u32(p + 8, x->e[i].end);
        ltr_put_u32(p + 12, x->e[i].flags);
        ltr_put_u64(p + 16, x->e[i].ts);
    }
    return 0;
}

int ltr_chunk_index_encode_spans(const ltr_chunk_index *x, uint8_t **out, size_t *len)
{
    *len = x->n * LTR_SPAN_ENTRY_SIZE;
    if (!(*out = malloc(*len ? *len : 1)))
        return -1;
    for (size_t i = 0; i < x->n; i++) {
        uint8_t *p = *out + i * LTR_SPAN_ENTRY_SIZE;
        ltr_put_u32(p, x->e[i].pid);
        ltr_put_u32(p + 4, x->e[i].events);
        ltr_put_u64(p + 8, x->e[i].last);
    }
    return 0;
}

int ltr_chunk_index_parse_spans(const uint8_t *p, size_t len, ltr_chunk_index *x)
{
    x->spans = 0;
    if (!x->n || len != x->n * LTR_SPAN_ENTRY_SIZE)
        return -1;
    for (size_t i = 0; i < x->n; i++, p += LTR_SPAN_ENTRY_SIZE) {
        x->e[i].pid = ltr_get_u32(p);
        x->e[i].events = ltr_get_u32(p + 4);
        x->e[i].last = ltr_get_u64(p + 8);
    }
    x->spans = 1;
    return 0;
}

int ltr_chunk_index_parse(const uint8_t *p, size_t len, ltr_chunk_index *out)
{
    ltr_chunk_index_free(out);
    if (len % LTR_INDEX_ENTRY_SIZE)
        return -1;
    for (size_t off = 0; off < len && !out->failed; off += LTR_INDEX_ENTRY_SIZE) {
        uint32_t flags = ltr_get_u32(p + off + 12);
        if (flags & ~LTR_INDEX_SORTED)
            out->failed = 1;
        ltr_chunk_index_add(out, ltr_get_u64(p + off), ltr_get_u32(p + off + 8), flags, ltr_get_u64(p + off + 16));
    }
    if (out->failed) {
        ltr_chunk_index_free(out);
        return -1;
    }
    return 0;
}

void ltr_chunk_index_settle(ltr_chunk_index *x)
{
    uint64_t rest = UINT64_MAX;
    for (size_t i = x->n; i-- > 0;) {
        x->e[i].rest = rest;
        rest = x->e[i].ts < rest ? x->e[i].ts : rest;
    }
}

ltr_index_bound ltr_chunk_index_at(const ltr_chunk_index *x, uint64_t seq, uint32_t end)
{
    size_t lo = 0, hi = x->n;
    while (lo < hi) { /* the first entry after (seq, end) */
        size_t mid = lo + (hi - lo) / 2;
        if (key_after(&x->e[mid], seq, end))
            hi = mid;
        else
            lo = mid + 1;
    }
    ltr_index_bound b = {.rest = lo < x->n ? x->e[lo].ts < x->e[lo].rest ? x->e[lo].ts : x->e[lo].rest : UINT64_MAX};
    const ltr_index_entry *at = lo ? &x->e[lo - 1] : NULL;
    if (at && at->seq == seq && at->end == end) {
        b.first = at->ts;
        b.sorted = !!(at->flags & LTR_INDEX_SORTED);
    }
    return b;
}

uint64_t ltr_cevents_first_ts(const uint8_t *p, size_t len, uint64_t base, int *sorted, uint64_t *last)
{
    uint64_t ts = base, first = UINT64_MAX;
    ltr_cevent ev;
    *sorted = 1;
    *last = 0;
    for (size_t pos = 0, n; pos < len; pos += n) {
        if (!(n = ltr_cevent_parse(p + pos, len - pos, &ev))) {
            *sorted = 0;
            *last = UINT64_MAX;
            return 0;
        }
        ts += (uint64_t)ev.ts_delta;
        if (ev.ts_delta < 0 && pos)
            *sorted = 0;
        first = ts < first ? ts : first;
        *last = ts > *last ? ts : *last;
    }
    return first;
}

uint64_t ltr_meta_ends_first_ts(const uint8_t *p, size_t len, uint32_t *n, uint64_t *last, uint32_t *pid)
{
    uint64_t first = UINT64_MAX;
    *n = 0;
    *last = 0;
    *pid = 0;
    for (size_t off = 0; off + LTR_RECORD_HEADER_SIZE <= len;) {
        uint16_t kind = ltr_get_u16(p + off);
        uint32_t size = ltr_get_u32(p + off + 4);
        if (size < LTR_RECORD_HEADER_SIZE || size > len - off)
            break;
        if ((kind == LTR_META_PROCESS_END || kind == LTR_META_EXEC_END) && size >= LTR_RECORD_HEADER_SIZE + 12) {
            uint64_t ts = ltr_get_u64(p + off + LTR_RECORD_HEADER_SIZE + 4); /* after u32 pid */
            first = ts < first ? ts : first;
            uint32_t of = ltr_get_u32(p + off + LTR_RECORD_HEADER_SIZE);
            *pid = !*n || of == *pid ? of : 0; /* 0: of several processes */
            *last = ts > *last ? ts : *last;
            ++*n;
        }
        off += size;
    }
    return first;
}

/* An entry's process and place, sorted by both (ltr_chunk_index_behind). */
typedef struct pid_at {
    uint32_t pid;
    size_t i;
} pid_at;

static int by_pid(const void *a, const void *b)
{
    const pid_at *x = a, *y = b;
    return x->pid != y->pid ? (x->pid > y->pid) - (x->pid < y->pid) : (x->i > y->i) - (x->i < y->i);
}

/* For each entry, the latest time of the entries of its process before it
 * (0 with none). */
static uint64_t *pid_before(const ltr_chunk_index *x)
{
    pid_at *order = malloc(x->n * sizeof *order);
    uint64_t *before = calloc(x->n, sizeof *before);
    if (!order || !before) {
        free(order);
        free(before);
        return NULL;
    }
    for (size_t i = 0; i < x->n; i++)
        order[i] = (pid_at){x->e[i].pid, i};
    qsort(order, x->n, sizeof *order, by_pid);
    uint64_t most = 0;
    for (size_t k = 0; k < x->n; k++) {
        if (k && order[k].pid != order[k - 1].pid)
            most = 0;
        before[order[k].i] = most;
        most = x->e[order[k].i].last > most ? x->e[order[k].i].last : most;
    }
    free(order);
    return before;
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The first of n sorted values at or after v. */
static size_t first_at(const uint64_t *v, size_t n, uint64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* An entry is behind when an entry before it of its process, or of a
 * METADATA chunk's ends of any (pid 0), reached its earliest time: its
 * events then belong among those read before it, and every event before
 * it that may be as late (each entry whose latest time reaches its
 * earliest, counted whole) must still wait when it comes. The entries'
 * events by their latest times in a Fenwick tree: n log n, for a trace of
 * 100 000 blocks as for one of ten. */
uint64_t ltr_chunk_index_behind(const ltr_chunk_index *x)
{
    if (!x->spans)
        return UINT64_MAX;
    for (size_t i = 0; i < x->n; i++)
        if (!x->e[i].ts || x->e[i].last == UINT64_MAX) /* a block's times not known: it cannot tell */
            return UINT64_MAX;
    uint64_t *mine = pid_before(x), *lasts = malloc((x->n + 1) * sizeof *lasts);
    uint64_t *tree = calloc(x->n + 1, sizeof *tree), most = 0, any = 0, ends = 0;
    if (!mine || !lasts || !tree) {
        free(mine);
        free(lasts);
        free(tree);
        return UINT64_MAX;
    }
    for (size_t i = 0; i < x->n; i++)
        lasts[i] = x->e[i].last;
    qsort(lasts, x->n, sizeof *lasts, u64_cmp);
    uint64_t total = 0; /* events of the entries before */
    for (size_t i = 0; i < x->n; i++) {
        const ltr_index_entry *e = &x->e[i];
        uint64_t reach = e->pid ? (mine[i] > ends ? mine[i] : ends) : any; /* the latest before it that counts */
        if (i && reach >= e->ts) {
            uint64_t earlier = 0; /* events of entries before whose latest time is before its earliest */
            for (size_t k = first_at(lasts, x->n, e->ts); k > 0; k -= k & -k)
                earlier += tree[k];
            most = total - earlier > most ? total - earlier : most;
        }
        for (size_t k = first_at(lasts, x->n, e->last) + 1; k <= x->n; k += k & -k)
            tree[k] += e->events;
        total += e->events;
        any = e->last > any ? e->last : any;
        ends = !e->pid && e->last > ends ? e->last : ends;
    }
    free(mine);
    free(lasts);
    free(tree);
    return most;
}

/* The first intact INDEX chunk's payload into the walk's index, which ends
 * there: one that does not parse gives none. */
static long index_chunk(void *ctx, const uint8_t *raw, size_t len)
{
    (void)ltr_chunk_index_parse(raw, len, ctx);
    return -1;
}

/* The first intact SPANS chunk's payload into the walk's index. */
static long spans_chunk(void *ctx, const uint8_t *raw, size_t len)
{
    (void)ltr_chunk_index_parse_spans(raw, len, ctx);
    return -1;
}

int ltr_trace_find_index(ltr_trace *t, ltr_chunk_index *out)
{
    ltr_chunk_index_free(out);
    struct stat st;
    if (fstat(t->fd, &st) || !S_ISREG(st.st_mode) || ltr_trace_walk_chunks(t, LTR_CHUNK_INDEX, index_chunk, out) < 0 ||
        !out->n) {
        ltr_chunk_index_free(out);
        return 0;
    }
    if (ltr_trace_walk_chunks(t, LTR_CHUNK_SPANS, spans_chunk, out) < 0)
        out->spans = 0;
    ltr_chunk_index_settle(out);
    return 1;
}

void ltr_trace_read_pos(const ltr_trace *t, uint64_t *seq, uint32_t *end)
{
    *seq = t->chunk_seq;
    *end = t->in_events && t->ev_pos <= UINT32_MAX ? (uint32_t)t->ev_pos : UINT32_MAX;
}
