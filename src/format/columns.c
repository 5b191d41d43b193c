/*
 * format/columns.c — column blocks (columns.h; the bytes are described in
 * docs/trace-format.md, "Column blocks"). The writer's half learns the
 * field types of every LAYOUT on its way to the file and splits a block's
 * records by them; the reader's half puts the records back together. The
 * round trip is byte-exact by construction: every byte of a record is
 * either copied as it was (varints included, so a value's encoding never
 * changes) or derived from a value the writer checked re-encodes the same
 * (the size, the layout id, the delta columns). Whatever the writer cannot
 * promise that for, it leaves in rows. For a consumer that reads columns
 * itself (src/analyze), a view's columns are also decoded whole into values
 * (ltr_colview_values), on the read-ahead thread for a whole chunk
 * (ltr_ahead_decode).
 */
#include "format/columns.h"
#include "base/varint.h"

#include "format/compact.h"
#include "format/reader.h"
#include "prim/prim.h"

#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* A layout as the writer knows it. */
typedef struct col_layout {
    uint64_t key;     /* layout id */
    uint8_t written;  /* a METADATA chunk holding its LAYOUT reached the file */
    uint8_t whole;    /* its payloads stay whole: a string or blob field, or too many fields */
    uint8_t k;        /* fields (when not whole) */
    uint8_t type[LTR_COLUMNS_MAX_FIELDS];
    uint8_t fixed[LTR_COLUMNS_MAX_FIELDS]; /* bytes of a fixed-size field, else 0 */
    uint32_t use;     /* its index in the table of block number `block` */
    uint64_t block;
} col_layout;

/* A layout of the block being encoded: its entry of the column table. */
typedef struct col_use {
    const col_layout *l;
    uint32_t k;    /* columns of fields */
    int whole;     /* one column of whole payloads instead */
    uint32_t col0; /* its first column */
    uint8_t transform[LTR_COLUMNS_MAX_FIELDS];
} col_use;

static int plain_varint(unsigned t) { return t == LTR_TYPE_UVAR || t == LTR_TYPE_IVAR || t == LTR_TYPE_PVAR; }

/* A field type a column can hold: one whose values frame themselves. */
static int columnable(unsigned t)
{
    return t != LTR_TYPE_STRING && t != LTR_TYPE_BLOB && ltr_type_fixed_size(t) >= 0 && t != 0;
}

/* The length of the varint at p if it is the shortest encoding of its value
 * (what ltr_put_uvar writes back), else 0. */
static size_t canonical_varint(const uint8_t *p, size_t left)
{
    uint64_t v;
    size_t n = ltr_get_uvar(p, left, &v);
    return n == 1 || (n > 1 && p[n - 1] != 0) ? n : 0;
}

/* ---- the writer: layouts ------------------------------------------------------ */

void ltr_colwriter_init(ltr_colwriter *w)
{
    memset(w, 0, sizeof *w);
    an_hmap_init(&w->layouts, sizeof(col_layout));
    w->delta = 1;
    w->time = 1;
}

void ltr_colwriter_free(ltr_colwriter *w)
{
    an_hmap_free(&w->layouts);
    ltr_bytes_free(&w->in);
    ltr_bytes_free(&w->out);
    ltr_bytes_free(&w->spare);
    for (size_t i = 0; i < w->capcols; i++)
        ltr_bytes_free(&w->cols[i]);
    free(w->cols);
    free(w->uses);
    memset(w, 0, sizeof *w);
}

/* A LAYOUT body parsed as a reader parses it (meta.c parse_layout): 0, or -1
 * when a reader would refuse it (then its id stays unknown to both). */
static int parse_layout(const uint8_t *b, size_t len, col_layout *out)
{
    ltr_cursor c = {.p = b, .len = len};
    uint32_t id = ltr_cursor_u32(&c);
    ltr_cursor_take(&c, 16 + 2 + 1 + 1 + 8); /* guid, event id, level, opcode, keywords */
    ltr_cursor_take(&c, ltr_cursor_u16(&c)); /* name */
    unsigned n = ltr_cursor_u16(&c);
    int refs[2] = {0, 0};
    *out = (col_layout){.key = id, .whole = n > LTR_COLUMNS_MAX_FIELDS, .k = (uint8_t)(n <= LTR_COLUMNS_MAX_FIELDS ? n : 0)};
    for (unsigned i = 0; i < n && !c.bad; i++) {
        uint8_t t = ltr_cursor_u8(&c);
        ltr_cursor_take(&c, ltr_cursor_u16(&c));
        if (ltr_type_fixed_size(t) < 0 || (t == LTR_TYPE_PNEW && refs[0]++) || (t == LTR_TYPE_PREF && refs[1]++))
            return -1;
        out->whole |= !columnable(t);
        if (i < LTR_COLUMNS_MAX_FIELDS) {
            out->type[i] = t;
            out->fixed[i] = (uint8_t)ltr_type_fixed_size(t);
        }
    }
    return c.bad ? -1 : 0;
}

/* Calls fn on the body of every LAYOUT record of a METADATA payload. */
static void each_layout(ltr_colwriter *w, const uint8_t *records, size_t len, int ok,
                        void (*fn)(ltr_colwriter *w, const uint8_t *body, size_t n, int ok))
{
    for (size_t off = 0; off + LTR_RECORD_HEADER_SIZE <= len;) {
        uint32_t size = ltr_get_u32(records + off + 4);
        if (size < LTR_RECORD_HEADER_SIZE || size > len - off)
            return;
        if (ltr_get_u16(records + off) == LTR_META_LAYOUT)
            fn(w, records + off + LTR_RECORD_HEADER_SIZE, size - LTR_RECORD_HEADER_SIZE, ok);
        off += size;
    }
}

static void learn(ltr_colwriter *w, const uint8_t *body, size_t n, int ok)
{
    (void)ok;
    col_layout l;
    int created;
    if (parse_layout(body, n, &l) < 0 || an_hmap_get(&w->layouts, l.key))
        return; /* a reader keeps the first description of an id */
    col_layout *e = an_hmap_put(&w->layouts, l.key, &created);
    if (e)
        *e = l;
}

static void written(ltr_colwriter *w, const uint8_t *body, size_t n, int ok)
{
    col_layout *e = n >= 4 ? an_hmap_get(&w->layouts, ltr_get_u32(body)) : NULL;
    if (e && ok)
        e->written = 1;
    else if (e && !e->written)
        an_hmap_del(&w->layouts, e->key);
}

void ltr_colwriter_layouts(ltr_colwriter *w, const uint8_t *records, size_t len)
{
    each_layout(w, records, len, 0, learn);
}

void ltr_colwriter_layouts_written(ltr_colwriter *w, const uint8_t *records, size_t len, int ok)
{
    each_layout(w, records, len, ok, written);
}

/* ---- the writer: one block ----------------------------------------------------- */

/* n more empty columns: 0, or -1 past LTR_COLUMNS_MAX or without memory. */
static int add_columns(ltr_colwriter *w, size_t n)
{
    if (w->ncols + n > LTR_COLUMNS_MAX)
        return -1;
    size_t old = w->capcols;
    if (w->ncols + n > old) {
        if (ltr_reserve((void **)&w->cols, &w->capcols, w->ncols + n - 1, sizeof *w->cols, 16) < 0)
            return -1;
        memset(w->cols + old, 0, (w->capcols - old) * sizeof *w->cols);
    }
    for (size_t i = w->ncols; i < w->ncols + n; i++)
        w->cols[i].len = 0;
    w->ncols += n;
    return 0;
}

/* The table index of a layout in the current block, added at its first
 * record; -1 for a layout not known, or not in the file yet. */
static long use_of(ltr_colwriter *w, uint32_t id)
{
    col_layout *l = an_hmap_get(&w->layouts, id);
    if (!l || !l->written)
        return -1;
    if (l->block == w->blocks)
        return l->use;
    uint32_t k = l->whole ? 0 : l->k, n = l->whole ? 1 : k;
    if (ltr_reserve((void **)&w->uses, &w->capuses, w->nuses, sizeof *w->uses, 8) < 0 || add_columns(w, n) < 0)
        return -1;
    col_use *u = &w->uses[w->nuses];
    *u = (col_use){.l = l, .k = k, .whole = l->whole, .col0 = (uint32_t)(w->ncols - n)};
    l->block = w->blocks;
    l->use = (uint32_t)w->nuses;
    return (long)w->nuses++;
}

static void put_uvar_bytes(ltr_bytes *b, uint64_t v)
{
    uint8_t tmp[LTR_VARINT_MAX];
    ltr_bytes_put_mem(b, tmp, ltr_put_uvar(tmp, v));
}

/* The size of a field as ltr_field_size gives it, the common kinds inline:
 * this and col_put are most of what columns cost the recorder. */
static inline int64_t field_len(uint8_t type, uint8_t fixed, const uint8_t *p, size_t left)
{
    uint64_t v;
    if (fixed)
        return fixed <= left ? fixed : -1;
    if (plain_varint(type)) {
        size_t n = ltr_get_uvar(p, left, &v);
        return n ? (int64_t)n : -1;
    }
    return ltr_field_size((ltr_type)type, p, left);
}

/* Bytes readable past every value col_put copies (w->in's slack, and the
 * scratch of a layout index): a value of up to this many is copied as one
 * fixed-size word. A copy of n bytes was a call to memmove, a quarter of
 * what columns cost the recorder (perf of `ltr merge`, cc1plus's trace). */
#define COL_WORD 16

/* Appends a field's few bytes (n <= LTR_VARINT_MAX, or a fixed size) to a column. */
static inline void col_put(ltr_bytes *c, const uint8_t *p, size_t n)
{
    if (n <= COL_WORD && !c->failed && c->cap - c->len >= COL_WORD) {
        memcpy(c->data + c->len, p, COL_WORD); /* what lies past n is overwritten or left past len */
        c->len += n;
    } else {
        ltr_bytes_put_mem(c, p, n);
    }
}

/* A record's payload into its layout's columns: 0, or -1 when its fields do
 * not cover it exactly (a bad varint, bytes missing or left over). */
static int put_payload(ltr_colwriter *w, const col_use *u, const uint8_t *q, size_t plen)
{
    if (u->whole) {
        put_uvar_bytes(&w->cols[u->col0], plen);
        ltr_bytes_put_mem(&w->cols[u->col0], q, plen);
        return 0;
    }
    size_t pos = 0;
    for (uint32_t j = 0; j < u->k; j++) {
        int64_t fs = field_len(u->l->type[j], u->l->fixed[j], q + pos, plen - pos);
        if (fs < 0)
            return -1;
        col_put(&w->cols[u->col0 + j], q + pos, (size_t)fs);
        pos += (size_t)fs;
    }
    return pos == plen ? 0 : -1;
}

/* One record (at r, parsed as ce) into the columns: 0, or -1 when it keeps the block in rows. */
static int put_record(ltr_colwriter *w, const uint8_t *r, const ltr_cevent *ce)
{
    size_t sn = canonical_varint(r, ce->header);
    size_t ln = sn ? canonical_varint(r + sn, ce->header - sn) : 0;
    long u = ln && ce->payload <= LTR_MAX_EVENT_PAYLOAD ? use_of(w, ce->layout) : -1;
    if (u < 0)
        return -1;
    uint8_t idx[COL_WORD];
    col_put(&w->cols[0], idx, ltr_put_uvar(idx, (uint64_t)u));
    col_put(&w->cols[1], r + sn + ln, ce->header - sn - ln); /* the delta as it was */
    return put_payload(w, &w->uses[u], r + ce->header, ce->payload);
}

/* A varint column's values as zigzag differences from the value before,
 * into w->spare: 1 when every value re-encodes as it was and that is
 * shorter. Frame node ids of neighbouring events differ by little. */
static int delta_shorter(ltr_colwriter *w, const ltr_bytes *c)
{
    w->spare.len = 0;
    uint64_t prev = 0, v = 0;
    for (size_t pos = 0, n; pos < c->len; pos += n, prev = v) {
        n = canonical_varint(c->data + pos, c->len - pos);
        uint8_t *o = n ? ltr_bytes_grow(&w->spare, LTR_VARINT_MAX) : NULL;
        if (!o)
            return 0;
        ltr_get_uvar(c->data + pos, n, &v);
        w->spare.len -= LTR_VARINT_MAX - ltr_put_uvar(o, ltr_zigzag((int64_t)(v - prev)));
    }
    return w->spare.len < c->len;
}

static void choose_transforms(ltr_colwriter *w)
{
    for (size_t i = 0; i < w->nuses; i++) {
        col_use *u = &w->uses[i];
        for (uint32_t j = 0; j < u->k; j++) {
            ltr_bytes *c = &w->cols[u->col0 + j];
            if (!w->delta || !plain_varint(u->l->type[j]) || !delta_shorter(w, c))
                continue;
            ltr_bytes t = *c;
            *c = w->spare;
            w->spare = t;
            u->transform[j] = LTR_COLUMN_DELTA;
        }
    }
}

/* ---- the writer: the time column as runs (format 8) ----
 *
 * A thread's events mostly come within the agent's clock grain of each
 * other: perl's leak trace held 2 017 853 deltas of which 18 465 were not
 * 0, 16 930 of those exactly 100 us, and zstd spent 2 to 3 bytes on each
 * run of zeros. Stored as (run of zeros, delta) pairs the time column took
 * 31 106 bytes at zstd -7 instead of 45 601; with the deltas divided by
 * their greatest common divisor (the grain: 100 us in every block of it)
 * 26 264. bench/heap's trace: 7 327, 5 470 as pairs, 4 497 with the grain.
 * Tags in one varint stream (a run or a delta by its low bit) were 31 656
 * and 27 113: pairs it is (docs/benchmarks.md, "The time column as runs"). */

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The grain of the time column's deltas: their greatest common divisor
 * (1 when all are 0), or 0 when one is not stored in its shortest form
 * (a reader rebuilds the shortest: the block keeps its column as it is). */
static uint64_t time_grain(const ltr_bytes *c)
{
    uint64_t g = 0, z = 0;
    for (size_t pos = 0, n; pos < c->len; pos += n) {
        if (!(n = canonical_varint(c->data + pos, c->len - pos)))
            return 0;
        ltr_get_uvar(c->data + pos, n, &z);
        int64_t d = ltr_unzigzag(z);
        if (d && g != 1)
            g = gcd64(g, d < 0 ? -(uint64_t)d : (uint64_t)d);
    }
    return g ? g : 1;
}

/* The time column as runs into w->spare: uvar grain, then for each run of
 * zero deltas its length and the delta after it (ivar, in grains), the
 * last run without one when the block ends in zeros. 1 when shorter. */
static int time_runs_shorter(ltr_colwriter *w, const ltr_bytes *c)
{
    uint64_t g = time_grain(c), zeros = 0, z = 0;
    if (!g)
        return 0;
    w->spare.len = 0;
    put_uvar_bytes(&w->spare, g);
    for (size_t pos = 0; pos < c->len;) {
        pos += ltr_get_uvar(c->data + pos, c->len - pos, &z);
        int64_t d = ltr_unzigzag(z);
        if (!d) {
            zeros++;
            continue;
        }
        put_uvar_bytes(&w->spare, zeros);
        /* g divides d, so exactly; g is 2^63 only when every nonzero d is -2^63 */
        put_uvar_bytes(&w->spare, ltr_zigzag(d / (int64_t)g));
        zeros = 0;
    }
    if (zeros)
        put_uvar_bytes(&w->spare, zeros);
    return !w->spare.failed && w->spare.len < c->len;
}

static void choose_time(ltr_colwriter *w)
{
    w->time_runs = w->time && time_runs_shorter(w, &w->cols[1]);
    if (w->time_runs) {
        ltr_bytes t = w->cols[1];
        w->cols[1] = w->spare;
        w->spare = t;
    }
}

/* The table, then every column with its length, into w->out. */
static void assemble(ltr_colwriter *w)
{
    ltr_bytes *o = &w->out;
    put_uvar_bytes(o, w->nuses);
    for (size_t i = 0; i < w->nuses; i++) {
        const col_use *u = &w->uses[i];
        put_uvar_bytes(o, u->l->key);
        put_uvar_bytes(o, u->whole ? 0 : u->k + 1);
        ltr_bytes_put_mem(o, u->l->type, u->k);
        ltr_bytes_put_mem(o, u->transform, u->k);
    }
    for (size_t i = 0; i < w->ncols; i++) {
        put_uvar_bytes(o, w->cols[i].len);
        ltr_bytes_put_mem(o, w->cols[i].data, w->cols[i].len);
    }
}

static int any_failed(const ltr_colwriter *w)
{
    int failed = w->out.failed || w->spare.failed;
    for (size_t i = 0; i < w->ncols; i++)
        failed |= w->cols[i].failed;
    return failed;
}

/* Ready for the next block: columns emptied, failures forgotten. */
static void reset_block(ltr_colwriter *w)
{
    for (size_t i = 0; i < w->capcols; i++)
        w->cols[i].failed = 0;
    w->out.failed = w->spare.failed = w->in.failed = 0;
    w->ncols = w->nuses = 0;
    w->time_runs = 0;
    w->blocks++;
}

/* The records of p (copied to w->in) into columns: the record count, or -1. */
static long split(ltr_colwriter *w, const uint8_t *p, size_t len)
{
    w->in.len = 0;
    uint8_t *in = ltr_bytes_grow(&w->in, len + COL_WORD);
    if (!in || add_columns(w, 2) < 0) /* the layout indexes, the time deltas */
        return -1;
    memcpy(in, p, len); /* read shared memory once */
    memset(in + len, 0, COL_WORD); /* col_put's word past the last value */
    w->in.len = len;
    long n = 0;
    for (size_t off = 0, rn; off < len; off += rn, n++) {
        ltr_cevent ce;
        rn = ltr_cevent_parse(in + off, len - off, &ce);
        if (!rn || put_record(w, in + off, &ce) < 0)
            return -1;
    }
    return n;
}

int ltr_colwriter_block(ltr_colwriter *w, const uint8_t *p, size_t len, uint32_t count)
{
    reset_block(w);
    w->out.len = 0;
    if (!w->layouts.n || !len || split(w, p, len) != (long)count)
        return 0;
    choose_transforms(w);
    choose_time(w);
    assemble(w);
    return !any_failed(w) && w->out.len < len;
}

/* ---- the reader ---------------------------------------------------------------- */

typedef ltr_colcursor col_in;
typedef ltr_colentry col_table;

void ltr_coldecoder_free(ltr_coldecoder *d)
{
    ltr_bytes_free(&d->rows);
    free(d->cols);
    free(d->tab);
    memset(d, 0, sizeof *d);
}

static int fail(ltr_coldecoder *d, const char *why)
{
    d->why = why;
    return -1;
}

/* A uvar at *pos of p (len bytes): 0 and the value, -1 when it is bad or runs past len. */
static int take_uvar(const uint8_t *p, size_t len, size_t *pos, uint64_t *v)
{
    size_t n = ltr_get_uvar(p + *pos, len - *pos, v);
    *pos += n;
    return n ? 0 : -1;
}

/* Whether (type, transform) of a table entry is one the writer may write. */
static int valid_spec(uint8_t type, uint8_t transform)
{
    return columnable(type) && (transform == LTR_COLUMN_AS_IS || (transform == LTR_COLUMN_DELTA && plain_varint(type)));
}

/* The layout table: its entries in d->tab, the column count in *ncols. */
static int read_table(ltr_coldecoder *d, const uint8_t *p, size_t len, size_t *pos, uint64_t *nt, size_t *ncols,
                      ltr_columns_check_fn check, void *ctx)
{
    if (take_uvar(p, len, pos, nt) < 0 || *nt > LTR_COLUMNS_MAX)
        return fail(d, "bad layout table");
    if (*nt > d->captab) {
        col_table *t = realloc(d->tab, *nt * sizeof *t);
        if (!t)
            return fail(d, "out of memory");
        d->tab = t;
        d->captab = *nt;
    }
    *ncols = 2;
    for (uint64_t e = 0; e < *nt; e++) {
        uint64_t id, shape; /* shape: 0 whole payloads, else 1 + the field columns */
        if (take_uvar(p, len, pos, &id) < 0 || id > UINT32_MAX || take_uvar(p, len, pos, &shape) < 0 ||
            (shape ? shape - 1 : 1) > LTR_COLUMNS_MAX - *ncols || 2 * (shape - !!shape) > len - *pos)
            return fail(d, "bad layout table");
        uint64_t k = shape ? shape - 1 : 0;
        const uint8_t *spec = p + *pos;
        for (uint64_t j = 0; j < k; j++)
            if (!valid_spec(spec[j], spec[k + j]))
                return fail(d, "bad field type or transform in the layout table");
        if (shape && check && check(ctx, (uint32_t)id, spec, (uint32_t)k) < 0)
            return fail(d, "a layout of the column table is unknown or has other field types");
        d->tab[e] = (col_table){(uint32_t)id, (uint32_t)k, (uint32_t)*ncols, !shape, spec};
        *ncols += shape ? k : 1;
        *pos += 2 * k;
    }
    return 0;
}

/* ---- the reader: the time column as runs (format 8) ---- */

/* A cursor's state (pos, *state as ltr_colcursor.prev): 0 at a run's
 * length; s > 0 with s - 1 zeros of the run left, then the delta at pos
 * (none at the column's end). */
static inline int time_next(const col_in *c, size_t *pos, uint64_t *state, uint64_t *z)
{
    if (!*state) {
        uint64_t zeros;
        size_t n = ltr_get_uvar(c->p + *pos, c->len - *pos, &zeros);
        if (!n || zeros == UINT64_MAX)
            return 0;
        *pos += n;
        *state = zeros + 1;
    }
    if (*state > 1) {
        --*state;
        *z = 0;
        return 1;
    }
    uint64_t q;
    size_t n = *pos < c->len ? ltr_get_uvar(c->p + *pos, c->len - *pos, &q) : 0;
    if (!n)
        return 0;
    *pos += n;
    *state = 0;
    *z = ltr_zigzag((int64_t)((uint64_t)ltr_unzigzag(q) * c->grain)); /* modulo 2^64 */
    return 1;
}

int ltr_coltime_next(const ltr_colcursor *c, size_t *pos, uint64_t *state, uint64_t *z)
{
    return time_next(c, pos, state, z);
}

/* A time column stored as runs made ready (its grain read): 0 when its runs
 * and deltas are exactly count and nothing follows the last, else -1 with
 * d->why. Checked whole at the open, so that a run's length damaged or cut
 * short refuses the block instead of shifting the times after it (a pass
 * over the runs only: perl's leak, 2 M deltas, is 18 K runs). */
static int open_time_runs(ltr_coldecoder *d, col_in *c, uint32_t count)
{
    uint64_t g, zeros, q, seen = 0;
    if (take_uvar(c->p, c->len, &c->pos, &g) < 0 || !g)
        return fail(d, "time column without its grain");
    c->transform = LTR_COLUMN_RUNS;
    c->grain = g;
    for (size_t pos = c->pos; pos < c->len;) {
        if (take_uvar(c->p, c->len, &pos, &zeros) < 0 || zeros > count - seen)
            return fail(d, "time column's runs do not frame or hold more deltas than the block has records");
        seen += zeros;
        if (pos == c->len && !zeros)
            return fail(d, "time column ends in a run of no zeros");
        if (pos < c->len && (take_uvar(c->p, c->len, &pos, &q) < 0 || ++seen > count))
            return fail(d, "time column's runs do not frame or hold more deltas than the block has records");
    }
    return seen == count ? 0 : fail(d, "time column's runs hold fewer deltas than the block has records");
}

/* Every column's place and kind; the data must end with the last one. */
static int read_columns(ltr_coldecoder *d, const uint8_t *p, size_t len, size_t pos, uint64_t nt, size_t ncols)
{
    if (ncols > d->capcols) {
        col_in *c = realloc(d->cols, ncols * sizeof *c);
        if (!c)
            return fail(d, "out of memory");
        d->cols = c;
        d->capcols = ncols;
    }
    for (size_t i = 0; i < ncols; i++) {
        uint64_t n;
        if (take_uvar(p, len, &pos, &n) < 0 || n > len - pos)
            return fail(d, "column length past the block");
        d->cols[i] = (col_in){.p = p + pos, .len = (size_t)n};
        pos += (size_t)n;
    }
    if (pos != len)
        return fail(d, "bytes after the last column");
    for (uint64_t e = 0; e < nt; e++) {
        const col_table *t = &d->tab[e];
        for (uint32_t j = 0; j < t->k; j++) {
            d->cols[t->col0 + j].type = t->spec[j];
            d->cols[t->col0 + j].fixed = (size_t)ltr_type_fixed_size(t->spec[j]);
            d->cols[t->col0 + j].transform = t->spec[t->k + j];
        }
    }
    return 0;
}

/* Copies the varint at c's position to o: its length, or 0 when it is bad or
 * runs past the column (ltr_get_uvar's rules, without its value). */
static inline size_t copy_varint(col_in *c, uint8_t *o)
{
    const uint8_t *at = c->p + c->pos;
    size_t left = c->len - c->pos;
    for (size_t i = 0; i < left && i < LTR_VARINT_MAX; i++) {
        o[i] = at[i];
        if (i == LTR_VARINT_MAX - 1 && at[i] > 1)
            return 0;
        if (!(at[i] & 0x80)) {
            c->pos += i + 1;
            return i + 1;
        }
    }
    return 0;
}

/* Whether the n-byte varint at p is 0 (in however many bytes: as ltr_field_size reads a pnew or pref code). */
static inline int varint_is_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] & 0x7f)
            return 0;
    return 1;
}

/* The next value of a field column onto the payload at o: its length, or -1
 * when the column has none left. The cases by the field's kind, not one
 * ltr_field_size: this is most of what a column block costs a reader. */
static inline long take_field(col_in *c, uint8_t *o)
{
    if (c->transform == LTR_COLUMN_DELTA) {
        uint64_t z;
        size_t n = ltr_get_uvar(c->p + c->pos, c->len - c->pos, &z);
        if (!n)
            return -1;
        c->pos += n;
        c->prev += (uint64_t)ltr_unzigzag(z);
        return (long)ltr_put_uvar(o, c->prev);
    }
    if (c->fixed) {
        if (c->len - c->pos < c->fixed)
            return -1;
        memcpy(o, c->p + c->pos, c->fixed);
        c->pos += c->fixed;
        return (long)c->fixed;
    }
    size_t n = copy_varint(c, o);
    if (n && (c->type == LTR_TYPE_PNEW || c->type == LTR_TYPE_PREF) && varint_is_zero(o, n)) {
        size_t m = copy_varint(c, o + n); /* code 0: the address itself follows */
        return m ? (long)(n + m) : -1;
    }
    return n ? (long)n : -1;
}

/* A payload kept whole: uvar length, bytes. */
static long take_whole(col_in *c, uint8_t *o)
{
    uint64_t n;
    if (take_uvar(c->p, c->len, &c->pos, &n) < 0 || n > LTR_MAX_EVENT_PAYLOAD || n > c->len - c->pos)
        return -1;
    memcpy(o, c->p + c->pos, (size_t)n);
    c->pos += (size_t)n;
    return (long)n;
}

/* The payload of a record of table entry e onto o (room for
 * LTR_MAX_EVENT_PAYLOAD + PAYLOAD_SLACK): its length, or -1. */
static long take_payload(ltr_coldecoder *d, const col_table *e, uint8_t *o)
{
    if (e->whole)
        return take_whole(&d->cols[e->col0], o);
    size_t len = 0;
    for (uint32_t j = 0; j < e->k; j++) {
        if (len > LTR_MAX_EVENT_PAYLOAD)
            return -1; /* each field adds 20 bytes at most: there is room for one more */
        long n = take_field(&d->cols[e->col0 + j], o + len);
        if (n < 0)
            return -1;
        len += (size_t)n;
    }
    return len <= LTR_MAX_EVENT_PAYLOAD ? (long)len : -1;
}

/* Room for one more record at the end of d->rows: its header at its longest and a payload at its longest. */
#define PAYLOAD_SLACK (2 * LTR_VARINT_MAX)
#define RECORD_ROOM (3 + 5 + LTR_VARINT_MAX + LTR_MAX_EVENT_PAYLOAD + PAYLOAD_SLACK)

/* The next record: uvar size, uvar layout id, the delta as stored, the
 * payload; decoded in place, the payload where a one-byte size puts it
 * (moved on in the rare record of 128 bytes or more). */
static int take_record(ltr_coldecoder *d)
{
    uint64_t idx;
    col_in *ic = &d->cols[0], *tc = &d->cols[1];
    if (take_uvar(ic->p, ic->len, &ic->pos, &idx) < 0 || idx >= d->view.nt)
        return fail(d, "layout index missing or past the table");
    if (d->rows.cap - d->rows.len < RECORD_ROOM) {
        if (!ltr_bytes_grow(&d->rows, RECORD_ROOM))
            return fail(d, "out of memory");
        d->rows.len -= RECORD_ROOM;
    }
    const col_table *e = &d->tab[idx];
    uint8_t *o = d->rows.data + d->rows.len;
    size_t h = 1 + ltr_put_uvar(o + 1, e->id), tn;
    uint64_t z;
    if (tc->transform == LTR_COLUMN_RUNS)
        tn = time_next(tc, &tc->pos, &tc->prev, &z) ? ltr_put_uvar(o + h, z) : 0;
    else
        tn = copy_varint(tc, o + h);
    if (!tn)
        return fail(d, "time delta column too short");
    h += tn;
    long plen = take_payload(d, e, o + h);
    if (plen < 0)
        return fail(d, "a field column too short, or a payload over 64 KiB");
    size_t size = h - 1 + (size_t)plen, sn = ltr_uvar_len(size);
    if (sn > 1)
        memmove(o + sn, o + 1, size);
    ltr_put_uvar(o, size);
    d->rows.len += sn + size;
    return 0;
}

int ltr_columns_open(ltr_coldecoder *d, const uint8_t *p, size_t len, uint32_t count, uint16_t flags,
                     ltr_columns_check_fn check, void *ctx)
{
    d->why = NULL;
    d->view = (ltr_colview){0};
    size_t pos = 0, ncols;
    uint64_t nt;
    if (read_table(d, p, len, &pos, &nt, &ncols, check, ctx) < 0 || read_columns(d, p, len, pos, nt, ncols) < 0 ||
        ((flags & LTR_BLOCK_FLAG_TIME_RUNS) && open_time_runs(d, &d->cols[1], count) < 0))
        return -1;
    d->view = (ltr_colview){.nt = nt, .tab = d->tab, .cols = d->cols, .ncols = ncols, .left = count, .ahead = NULL};
    return 0;
}

uint32_t ltr_columns_rows(ltr_coldecoder *d, size_t max_bytes)
{
    uint32_t n = 0;
    d->rows.len = 0;
    d->rows.failed = 0;
    while (d->view.left && d->rows.len < max_bytes && !d->why) {
        if (take_record(d) < 0)
            break;
        d->view.left--;
        n++;
    }
    return n;
}

/* ---- values decoded ahead (ltr_colvals) ---- */

size_t ltr_colview_value_room(const ltr_colview *v)
{
    size_t bytes = 0;
    /* a value takes a byte at least; a time column's runs hold a delta a record */
    for (size_t k = 0; k < v->ncols; k++)
        bytes += k == 1 && v->cols[1].transform == LTR_COLUMN_RUNS ? v->left : v->cols[k].len - v->cols[k].pos;
    return bytes;
}

static int readable(size_t fixed) { return fixed == 0 || fixed == 1 || fixed == 2 || fixed == 4 || fixed == 8; }

/* A value into the column's 32-bit store, or its big ones. */
static inline void put_value(uint32_t *out, size_t *n, uint64_t *big, size_t *nbig, uint64_t x)
{
    if (x < LTR_COLVAL_BIG) {
        out[(*n)++] = (uint32_t)x;
    } else {
        out[(*n)++] = LTR_COLVAL_BIG;
        big[(*nbig)++] = x;
    }
}

/* Eight bytes of one-byte varints (as loaded: w's bytes in memory order)
 * as eight 32-bit values at out: SSE2's unpacks where x86-64 has them
 * (all of it does), else a shift, mask and store a value, 4 instructions
 * each (GCC's own vectors of 8 x 32 bits became those too without AVX).
 * With the column's bytes in registers: column_values on cc1plus's trace
 * 179.8 M instructions to 152.8 M (callgrind, the read-ahead thread);
 * sixteen at once (a load and a movemask) was 5 M more. */
static inline __attribute__((always_inline)) void widen8(uint32_t *out, uint64_t w)
{
#ifdef __SSE2__
    __m128i zero = _mm_setzero_si128(), h = _mm_unpacklo_epi8(_mm_cvtsi64_si128((long long)w), zero);
    _mm_storeu_si128((__m128i *)(void *)out, _mm_unpacklo_epi16(h, zero));
    _mm_storeu_si128((__m128i *)(void *)(out + 4), _mm_unpackhi_epi16(h, zero));
#else
    uint8_t b[8];
    memcpy(b, &w, sizeof b);
    for (int k = 0; k < 8; k++)
        out[k] = b[k];
#endif
}

/* A column's varints from pos on, decoded (delta: a delta column's, added
 * to *prev) into out and big. The layout indexes' and the references'
 * columns are mostly runs of one-byte values: a varint at a time, each
 * checked for its length and for the column's end, was 82 instructions
 * an event of cc1plus's analysis with the fixed-width columns
 * (cachegrind). So eight bytes are looked at once while eight are left:
 * those before the first with its high bit set are varints of one byte
 * each, taken at once, then the varint that byte begins. A delta column
 * takes eight at once only when all eight are of one byte, then a varint
 * at a time up to one of one byte (so did the others: column_values on
 * cc1plus's trace 152.8 M instructions, 141.2 M so, callgrind; the delta
 * columns so too, 144.1 M). How far it read. */
static inline __attribute__((always_inline)) size_t varints(const ltr_colcursor *c, size_t pos, int delta,
                                                            uint64_t *prev, uint32_t *out, size_t *n,
                                                            uint64_t *big, size_t *nbig)
{
    const uint64_t high = 0x8080808080808080ull;
    const uint8_t *p = c->p; /* in registers: the stores to out might be them */
    size_t len = c->len;
    uint64_t w, z;
    for (size_t m; !delta && len - pos >= 8; pos += m) {
        memcpy(&w, p + pos, 8);
        /* all eight widened: those past the k of one byte are scratch,
         * written over next (the column's room is a value a byte, and
         * n + 8 is within it while eight bytes are left) */
        widen8(out + *n, w);
        uint64_t stop = w & high;
        size_t k = stop ? (size_t)__builtin_ctzll(stop) >> 3 : 8;
        *n += k;
        pos += k;
        if (k == 8)
            m = 0;
        else if (!(m = an_uvar(p + pos, len - pos, len - pos, &z)))
            return pos;
        else
            put_value(out, n, big, nbig, z);
    }
    for (;;) {
        while (delta && len - pos >= 8 && (memcpy(&w, p + pos, 8), !(w & high))) {
            for (int k = 0; k < 8; k++, w >>= 8)
                put_value(out, n, big, nbig, *prev += (uint64_t)ltr_unzigzag(w & 0x7f));
            pos += 8;
        }
        size_t m;
        do { /* up to a value of one byte, or the column's end */
            if (pos >= len || !(m = an_uvar(p + pos, len - pos, len - pos, &z)))
                return pos;
            put_value(out, n, big, nbig, delta ? (*prev += (uint64_t)ltr_unzigzag(z)) : z);
            pos += m;
        } while (m > 1);
    }
}

/* A fixed-width column's values from pos on (w: a constant where inlined); how far it read. */
static inline __attribute__((always_inline)) size_t fixed_values(const ltr_colcursor *c, size_t pos, size_t w,
                                                                 uint32_t *out, size_t *n, uint64_t *big,
                                                                 size_t *nbig)
{
    for (; c->len - pos >= w; pos += w)
        put_value(out, n, big, nbig, an_fixed_le(c->p + pos, w));
    return pos;
}

/* A time column's runs from pos and *state on, a delta a record (their
 * count checked at the open: as many as records are left): a run's zeros
 * written at once. How far it read. */
static size_t time_values(const ltr_colcursor *c, size_t pos, uint64_t *state, uint32_t *out, size_t *n,
                          uint64_t *big, size_t *nbig)
{
    uint64_t z;
    for (;;) {
        if (*state > 1) {
            memset(out + *n, 0, (size_t)(*state - 1) * sizeof *out);
            *n += (size_t)(*state - 1);
            *state = 1;
        }
        if (!time_next(c, &pos, state, &z))
            return pos;
        put_value(out, n, big, nbig, z);
    }
}

/* One column's values from its cursor on, into out and big; how many big. */
static size_t column_values(const ltr_colcursor *c, int wanted, uint32_t *out, uint64_t *big, ltr_colvals *cv)
{
    size_t pos = c->pos, n = 0, nbig = 0;
    uint64_t prev = c->prev;
    if (!wanted) {
        /* none: a record that reads this column is left to the generic path */
    } else if (c->fixed) {
        switch (c->fixed) { /* the width a constant in each loop: a switch a value was half of the loop's work */
        case 8: pos = fixed_values(c, pos, 8, out, &n, big, &nbig); break;
        case 4: pos = fixed_values(c, pos, 4, out, &n, big, &nbig); break;
        case 2: pos = fixed_values(c, pos, 2, out, &n, big, &nbig); break;
        case 1: pos = fixed_values(c, pos, 1, out, &n, big, &nbig); break;
        default: pos = fixed_values(c, pos, c->fixed, out, &n, big, &nbig); break;
        }
    } else if (c->transform == LTR_COLUMN_RUNS) {
        pos = time_values(c, pos, &prev, out, &n, big, &nbig);
    } else if (c->transform == LTR_COLUMN_DELTA) {
        pos = varints(c, pos, 1, &prev, out, &n, big, &nbig);
    } else {
        pos = varints(c, pos, 0, &prev, out, &n, big, &nbig);
    }
    *cv = (ltr_colvals){.v = out, .big = big, .n = (uint32_t)n, .nbig = (uint32_t)nbig, .end = pos, .prev = prev};
    return nbig;
}

/* Column k's values at store + *used; its big ones counted in *nbig. */
static void one_column(const ltr_colview *v, size_t k, int wanted, uint32_t *store, uint64_t *big, size_t *used,
                       size_t *nbig, ltr_colvals *out)
{
    *nbig += column_values(&v->cols[k], wanted && readable(v->cols[k].fixed), store + *used, big + *nbig, &out[k]);
    *used += out[k].n;
}

size_t ltr_colview_values(const ltr_colview *v, uint32_t *store, uint64_t *big, ltr_colvals *out)
{
    size_t used = 0, nbig = 0;
    for (size_t k = 0; k < 2 && k < v->ncols; k++) /* the layout indexes and the time deltas */
        one_column(v, k, 1, store, big, &used, &nbig, out);
    for (uint64_t e = 0; e < v->nt; e++) { /* read_table gave each entry its own columns, in order */
        const ltr_colentry *t = &v->tab[e];
        for (size_t k = t->col0; k < t->col0 + (t->whole ? 1 : t->k) && k < v->ncols; k++)
            one_column(v, k, !t->whole, store, big, &used, &nbig, out); /* a whole one holds payloads */
    }
    return nbig;
}

/* ---- values decoded on the read-ahead thread (reader.h, ltr_ahead) ---- */

void ltr_ahead_free(ltr_ahead *a)
{
    ltr_coldecoder_free(&a->dec);
    ltr_table_free(a->vals, a->capvals, sizeof *a->vals);
    ltr_table_free(a->big, a->capbig, sizeof *a->big);
    free(a->cols);
    free(a->offs);
    free(a->blocks);
    memset(a, 0, sizeof *a);
}

/* One column block's values after those already in a; 0 (also when it is
 * past the budgets of blocks.h: left to its reader), or -1 without memory.
 * The values of a chunk's blocks are gathered in two arrays, which grow as
 * they come (a value per byte of a block's columns at most): each column's
 * places in them are kept as offsets until the chunk is done. */
static int ahead_block(ltr_ahead *a, const ltr_block_frame *f)
{
    ltr_colview *v = &a->dec.view;
    size_t room = ltr_colview_value_room(v);
    if (room > LTR_COLVALS_BLOCK_MAX || a->nvals + room > LTR_COLVALS_CHUNK_MAX)
        return 0;
    /* mappings from the first (2 MiB, touched as written): a chunk's values
     * outgrow the heap's size for tables, and a move there is a copy. The
     * big ones are few, but their room is reserved as for all: from 32 KiB
     * in the heap, realloc copied it to 1 MiB before it became a mapping
     * (136 of the read-ahead thread's page faults on cc1plus's trace) */
    if (ltr_table_reserve((void **)&a->vals, &a->capvals, a->nvals + room, sizeof *a->vals, 1u << 19) != 0 ||
        ltr_table_reserve((void **)&a->big, &a->capbig, a->nbig + room, sizeof *a->big, 1u << 18) != 0 ||
        ltr_reserve((void **)&a->cols, &a->capcols, a->ncols + v->ncols, sizeof *a->cols, 256) != 0 ||
        ltr_reserve((void **)&a->offs, &a->capoffs, a->ncols + v->ncols, sizeof *a->offs, 256) != 0 ||
        ltr_reserve((void **)&a->blocks, &a->capblocks, a->nblocks, sizeof *a->blocks, 64) != 0)
        return -1;
    a->nbig += ltr_colview_values(v, a->vals + a->nvals, a->big + a->nbig, a->cols + a->ncols);
    for (size_t k = 0; k < v->ncols; k++) {
        ltr_colvals *c = &a->cols[a->ncols + k];
        a->offs[a->ncols + k] = (ltr_ahead_off){(size_t)(c->v - a->vals), (size_t)(c->big - a->big)};
        a->nvals += c->n;
    }
    a->blocks[a->nblocks++] = (ltr_ahead_block){.at = f->at, .len = f->len, .count = f->count, .ncols = v->ncols,
                                               .col0 = a->ncols};
    a->ncols += v->ncols;
    return 0;
}

void ltr_ahead_decode(ltr_ahead *a, const uint8_t *raw, size_t len)
{
    a->nvals = a->nbig = a->ncols = a->nblocks = 0;
    ltr_block_frame f;
    for (size_t off = 0, used; (used = ltr_block_frame_at(raw, len, off, &f)); off += used)
        if ((f.flags & (LTR_BLOCK_FLAG_COMPACT | LTR_BLOCK_FLAG_COLUMNS)) ==
                (LTR_BLOCK_FLAG_COMPACT | LTR_BLOCK_FLAG_COLUMNS) &&
            ltr_columns_open(&a->dec, f.rec, f.len, f.count, f.flags, NULL, NULL) == 0 && ahead_block(a, &f) < 0)
            break; /* the blocks before it keep their values */
    for (size_t k = 0; k < a->ncols; k++) {
        a->cols[k].v = a->vals + a->offs[k].v;
        a->cols[k].big = a->big + a->offs[k].big;
    }
}

int ltr_columns_leftover(const ltr_coldecoder *d)
{
    for (size_t i = 0; i < d->view.ncols; i++)
        if (d->cols[i].pos != d->cols[i].len)
            return 1;
    return 0;
}

int ltr_columns_decode(ltr_coldecoder *d, const uint8_t *p, size_t len, uint32_t count, uint16_t flags,
                       ltr_columns_check_fn check, void *ctx)
{
    if (ltr_columns_open(d, p, len, count, flags, check, ctx) < 0)
        return -1;
    ltr_columns_rows(d, LTR_CHUNK_MAX_RAW);
    if (d->why)
        return -1;
    if (d->view.left)
        return fail(d, "records larger than a chunk");
    if (ltr_columns_leftover(d))
        return fail(d, "a column holds more values than the block has records");
    return 0;
}
