/*
 * tests/format/test_readahead.c — the reader's read-ahead thread
 * (format/readahead.c) and its block-level API (format/reader.h): a file
 * cut at every offset, with a byte flipped in every position and with
 * garbage between chunks reads the same with the thread as without it
 * (events, summary, every damage entry), also with the column values
 * decoded ahead, and the reader fetches the chunks it waits for itself;
 * rewinding and closing in the middle
 * of a scan stop the thread cleanly (ASan checks the leaks); a consumer that
 * takes records through ltr_trace_block and reports them leaves exactly the
 * counts of a plain scan. The column values the thread decodes ahead
 * (ltr_ahead_decode) take memory bounded by a budget, not by what a chunk
 * of 64 MiB claims: a crafted chunk of one huge column block, or of many
 * large ones, costs no more than a real one; and values at and around
 * their 32-bit escape (LTR_COLVAL_BIG), and in runs of one-byte varints
 * (decoded eight at once), come back exact. A file's bytes once
 * decompressed are read from its chunk headers alone.
 */
#include "gen.h"

#include "format/columns.h"
#include "format/compact.h"
#include "format/reader.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

typedef gen_file fixture;

/* Many small EVENTS chunks, so that the thread runs ahead over several. */
static int setup(void **state)
{
    gen_opts o = {.blocks = 12, .events_per_block = 5, .chunk_target = 0, .with_end = 1};
    return (*state = gen_file_new("ra.ltr", "ra-work.ltr", &o)) ? 0 : -1;
}

static int teardown(void **state)
{
    gen_file_free(*state);
    return 0;
}

/* What a scan saw: event timestamps in order, the summary, the damage. */
typedef struct scan {
    uint64_t ts[256];
    size_t n;
    int rc, open_rc;
    ltr_trace_summary sum;
    ltr_damage damage[64];
    size_t ndamage;
} scan;

/* readahead 2: the thread decodes column values too (`ltr analyze`'s reader). */
static void read_all(const char *path, int readahead, scan *s)
{
    memset(s, 0, sizeof *s);
    ltr_trace *t;
    ltr_error err;
    s->open_rc = ltr_trace_open_decoding(path, readahead == 2, &t, &err);
    if (s->open_rc < 0)
        return;
    ltr_trace_set_readahead(t, readahead);
    assert_int_equal(ltr_trace_rewind(t, &err), 0);
    assert_true(readahead ? t->ra != NULL || t->pos >= t->file_size : t->ra == NULL);
    const ltr_event *ev;
    while ((s->rc = ltr_trace_next(t, &ev, &err)) > 0) {
        assert_true(s->n < 256);
        s->ts[s->n++] = ev->ts;
    }
    ltr_trace_summarize(t, &s->sum);
    for (size_t i = 0; i < ltr_trace_damage_count(t) && i < 64; i++)
        s->damage[s->ndamage++] = *ltr_trace_damage_at(t, i);
    ltr_trace_close(t);
}

static void same_scan_as(const char *path, int readahead)
{
    static scan a, b;
    read_all(path, 0, &a);
    read_all(path, readahead, &b);
    assert_int_equal(a.open_rc, b.open_rc);
    assert_int_equal(a.rc, b.rc);
    assert_int_equal(a.n, b.n);
    assert_memory_equal(a.ts, b.ts, a.n * sizeof a.ts[0]);
    assert_memory_equal(&a.sum, &b.sum, sizeof a.sum);
    assert_int_equal(a.ndamage, b.ndamage);
    for (size_t i = 0; i < a.ndamage; i++) {
        assert_int_equal(a.damage[i].kind, b.damage[i].kind);
        assert_int_equal(a.damage[i].offset, b.damage[i].offset);
        assert_int_equal(a.damage[i].length, b.damage[i].length);
        assert_int_equal(a.damage[i].chunk_seq, b.damage[i].chunk_seq);
        assert_int_equal(a.damage[i].count, b.damage[i].count);
        assert_string_equal(a.damage[i].detail, b.damage[i].detail);
    }
}

static void same_scan(const char *path)
{
    same_scan_as(path, 1);
    same_scan_as(path, 2);
}

static void test_intact_same_with_thread(void **state)
{
    fixture *f = *state;
    scan s;
    read_all(f->path, 1, &s);
    assert_int_equal(s.n, 60);
    assert_int_equal(s.sum.damage, 0);
    assert_true(s.sum.complete);
    same_scan(f->path);
}

static void test_truncation_same_with_thread(void **state)
{
    fixture *f = *state;
    for (size_t cut = LTR_FILE_HEADER_SIZE; cut <= f->len; cut += 7) {
        assert_int_equal(gen_spit(f->work, f->data, cut), 0);
        same_scan(f->work);
    }
}

static void test_bit_flips_same_with_thread(void **state)
{
    fixture *f = *state;
    uint8_t *copy = malloc(f->len);
    for (size_t at = LTR_FILE_HEADER_SIZE; at < f->len; at += 5) {
        memcpy(copy, f->data, f->len);
        copy[at] ^= 0x10;
        assert_int_equal(gen_spit(f->work, copy, f->len), 0);
        same_scan(f->work);
    }
    free(copy);
}

static void test_garbage_same_with_thread(void **state)
{
    fixture *f = *state;
    size_t mid = f->len / 2;
    uint8_t *copy = malloc(f->len + 100);
    memcpy(copy, f->data, mid);
    memset(copy + mid, 'L', 100); /* looks like the start of a chunk magic */
    memcpy(copy + mid + 100, f->data + mid, f->len - mid);
    assert_int_equal(gen_spit(f->work, copy, f->len + 100), 0);
    free(copy);
    scan s;
    read_all(f->work, 1, &s);
    assert_true(s.sum.damage > 0);
    same_scan(f->work);
}

/* A chunk the reader waits for it fetches itself (readahead.c's
 * reader_takes), the thread going on to the next: at the start it holds
 * none, so the first (the HEADER chunk) is always its own. */
static void test_reader_fetches_what_it_waits_for(void **state)
{
    fixture *f = *state;
    ltr_trace *t;
    ltr_error err;
    setenv("LTR_READAHEAD", "1", 1); /* the thread from the open's first chunk on */
    assert_int_equal(ltr_trace_open_decoding(f->path, 1, &t, &err), 0);
    unsetenv("LTR_READAHEAD");
    assert_non_null(t->ra);
    assert_int_equal(t->own.kind, LTR_FETCH_OK);
    assert_int_equal(t->own.h.type, LTR_CHUNK_HEADER);
    assert_non_null(t->own.raw);
    ltr_trace_close(t);
}

/* Rewinds after every number of events, and closes mid-scan: the thread is
 * stopped and restarted each time, and the second pass reads everything. */
static void test_rewind_and_close_mid_scan(void **state)
{
    fixture *f = *state;
    for (size_t stop = 0; stop < 60; stop += 3) {
        ltr_trace *t;
        ltr_error err;
        assert_int_equal(ltr_trace_open(f->path, &t, &err), 0);
        ltr_trace_set_readahead(t, 1);
        assert_int_equal(ltr_trace_rewind(t, &err), 0);
        const ltr_event *ev;
        for (size_t i = 0; i < stop; i++)
            assert_int_equal(ltr_trace_next(t, &ev, &err), 1);
        assert_int_equal(ltr_trace_rewind(t, &err), 0);
        size_t n = 0;
        while (ltr_trace_next(t, &ev, &err) > 0)
            n++;
        assert_int_equal(n, 60);
        assert_int_equal(ltr_trace_rewind(t, &err), 0);
        for (size_t i = 0; i < stop / 2; i++)
            assert_int_equal(ltr_trace_next(t, &ev, &err), 1);
        ltr_trace_close(t); /* with the thread running ahead */
    }
}

/* Takes records through the block API, every other one, and the rest with
 * ltr_trace_next: the counts are those of a plain scan. */
static void test_block_api_keeps_counts(void **state)
{
    fixture *f = *state;
    ltr_trace *plain, *t;
    ltr_error err;
    ltr_trace_summary want, got;
    assert_int_equal(ltr_trace_open(f->path, &plain, &err), 0);
    assert_int_equal(ltr_trace_scan(plain, &want, &err), 0);
    assert_int_equal(ltr_trace_open(f->path, &t, &err), 0);
    ltr_block_view v;
    uint64_t taken = 0, nexted = 0;
    int rc;
    while ((rc = ltr_trace_block(t, &v, &err)) > 0) {
        assert_true(v.compact);
        ltr_cevent ce;
        size_t n = ltr_cevent_parse(v.rec, v.left, &ce);
        const ltr_layout *l = n ? ltr_trace_layout_find(t, ce.layout) : NULL;
        if (l && (taken + nexted) % 2 == 0) {
            uint64_t ts = v.ts + (uint64_t)ce.ts_delta;
            ltr_block_run run = {n, 1, ts, ts, ts, ts};
            ltr_trace_block_consumed(t, &run);
            ltr_trace_count_layout(t, l, 1);
            taken++;
            continue;
        }
        const ltr_event *ev;
        assert_int_equal(ltr_trace_next(t, &ev, &err), 1);
        nexted++;
    }
    assert_int_equal(rc, 0);
    ltr_trace_summarize(t, &got);
    assert_true(taken > 0 && nexted > 0);
    assert_memory_equal(&got, &want, sizeof got);
    assert_int_equal(ltr_trace_layout_count(t), ltr_trace_layout_count(plain));
    for (size_t i = 0; i < ltr_trace_layout_count(t); i++)
        assert_int_equal(ltr_trace_layout_at(t, i)->events, ltr_trace_layout_at(plain, i)->events);
    for (size_t i = 0; i < ltr_trace_provider_count(t); i++)
        assert_int_equal(ltr_trace_provider_at(t, i)->events, ltr_trace_provider_at(plain, i)->events);
    for (size_t i = 0; i < ltr_trace_process_count(t); i++)
        assert_int_equal(ltr_trace_process_at(t, i)->events, ltr_trace_process_at(plain, i)->events);
    for (size_t i = 0; i < ltr_trace_thread_count(t); i++)
        assert_int_equal(ltr_trace_thread_at(t, i)->events, ltr_trace_thread_at(plain, i)->events);
    assert_int_equal(ltr_trace_origin_ns(t), ltr_trace_origin_ns(plain));
    ltr_trace_close(t);
    ltr_trace_close(plain);
}

/* An EVENTS payload of n column blocks, each of one layout without fields
 * whose index column holds col bytes of zeros (one value a byte). */
static uint8_t *column_payload(size_t n, size_t col, size_t *len)
{
    uint8_t lenvar[10];
    size_t lv = ltr_put_uvar(lenvar, col), data = 3 + lv + col + 1, one = LTR_BLOCK_COMPACT_HEADER_SIZE + data;
    uint8_t *p = calloc(n, one);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++) {
        uint8_t *h = p + i * one, *d = h + LTR_BLOCK_COMPACT_HEADER_SIZE;
        memcpy(h, LTR_BLOCK_MAGIC, 4);
        ltr_put_u16(h + 6, LTR_BLOCK_FLAG_COMPACT | LTR_BLOCK_FLAG_COLUMNS);
        ltr_put_u32(h + 24, 1);
        ltr_put_u32(h + 28, (uint32_t)data);
        d[0] = 1; /* one table entry: layout 1, no field columns */
        d[1] = 1;
        d[2] = 1;
        memcpy(d + 3, lenvar, lv); /* the index column, its zeros left by calloc */
        d[3 + lv + col] = 0;       /* the time column: empty */
    }
    *len = n * one;
    return p;
}

static void test_values_ahead_bounded(void **state)
{
    (void)state;
    ltr_ahead a = {0};
    size_t len;
    /* real chunks' blocks get their values */
    uint8_t *p = column_payload(4, 1000, &len);
    ltr_ahead_decode(&a, p, len);
    assert_int_equal(a.nblocks, 4);
    assert_int_equal(a.cols[2].n, 1000);
    free(p);
    /* one block of 16 MiB of columns: more than a consumer reads decoded ahead */
    p = column_payload(1, 16u << 20, &len);
    ltr_ahead_decode(&a, p, len);
    assert_int_equal(a.nblocks, 0);
    assert_true(a.capvals * sizeof *a.vals + a.capbig * sizeof *a.big <= 3 * LTR_COLVALS_CHUNK_MAX * 4);
    free(p);
    /* 48 blocks of 1 MiB: decoded up to the chunk's budget, the rest left to the reader */
    p = column_payload(48, LTR_COLVALS_BLOCK_MAX - 8, &len);
    ltr_ahead_decode(&a, p, len);
    assert_true(a.nblocks >= 1 && a.nblocks < 48);
    assert_true(a.nvals <= LTR_COLVALS_CHUNK_MAX);
    assert_true(a.capvals * sizeof *a.vals + a.capbig * sizeof *a.big <= 3 * LTR_COLVALS_CHUNK_MAX * 4);
    free(p);
    ltr_ahead_free(&a);
}


/* A column block of one layout's two value columns, a (as is) and b
 * (delta), of na and nb bytes (under 128 each), with no layout indexes and
 * no time deltas: only the values matter. Its size. */
static size_t two_columns(uint8_t *data, const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    const uint8_t table[] = {1, 1, 3, LTR_TYPE_UVAR, LTR_TYPE_UVAR, LTR_COLUMN_AS_IS, LTR_COLUMN_DELTA};
    memcpy(data, table, sizeof table);
    size_t n = sizeof table;
    data[n++] = 0;
    data[n++] = 0;
    data[n++] = (uint8_t)na;
    memcpy(data + n, a, na);
    n += na;
    data[n++] = (uint8_t)nb;
    memcpy(data + n, b, nb);
    return n + nb;
}

/* A column's values equal to LTR_COLVAL_BIG and around it, as stored and
 * as a delta column's running value crosses it, come back exact, decoded
 * here or ahead. */
static void test_values_around_the_escape(void **state)
{
    (void)state;
    const uint64_t as_is[] = {UINT32_MAX - 1ull, UINT32_MAX, UINT32_MAX + 1ull, 5, UINT64_MAX};
    const int64_t steps[] = {UINT32_MAX - 2ll, 1, 1, 1, -1, -(int64_t)UINT32_MAX};
    uint8_t data[256], a[64], b[64];
    size_t na = 0, nb = 0, n = 0;
    for (size_t i = 0; i < 5; i++)
        na += ltr_put_uvar(a + na, as_is[i]);
    for (size_t i = 0; i < 6; i++)
        nb += ltr_put_uvar(b + nb, ltr_zigzag(steps[i]));
    n = two_columns(data, a, na, b, nb);
    ltr_coldecoder d = {0};
    assert_int_equal(ltr_columns_open(&d, data, n, 0, 0, NULL, NULL), 0);
    assert_int_equal(d.view.ncols, 4);
    uint32_t store[256];
    uint64_t big[256];
    ltr_colvals cv[4];
    assert_int_equal(ltr_colview_values(&d.view, store, big, cv), 4 + 2);
    assert_int_equal(cv[2].n, 5);
    assert_int_equal(cv[3].n, 6);
    uint64_t run = 0;
    for (int k = 2; k < 4; k++)
        for (uint32_t i = 0, bi = 0; i < cv[k].n; i++) {
            uint64_t x = cv[k].v[i] != LTR_COLVAL_BIG ? cv[k].v[i] : cv[k].big[bi++];
            uint64_t want = k == 2 ? as_is[i] : (run += (uint64_t)steps[i]);
            assert_true(x == want);
        }
    assert_true(cv[3].prev == run && cv[2].end == na && cv[3].end == nb);
    ltr_coldecoder_free(&d);
}

/* The values of a column whose varints come in runs of one byte (the
 * decoding takes eight at once there) and out of them, a delta column's
 * running value crossing LTR_COLVAL_BIG inside such a run, and a column
 * that ends in a varint cut short: each value, where the column's reading
 * ended and the delta column's last value, as a varint at a time reads them. */
static void test_values_in_runs_of_small_ones(void **state)
{
    (void)state;
    uint64_t as_is[64];
    int64_t steps[64];
    size_t nv = 0, ns = 0;
    for (int i = 0; i < 20; i++)
        as_is[nv++] = (uint64_t)i * 6;
    as_is[nv++] = 300;
    as_is[nv++] = 70000;
    for (int i = 0; i < 9; i++)
        as_is[nv++] = 127 - (uint64_t)i;
    as_is[nv++] = UINT64_MAX;
    for (int i = 0; i < 11; i++) /* eight, then three short of another eight */
        as_is[nv++] = (uint64_t)i;
    steps[ns++] = UINT32_MAX - 5ll;
    for (int i = 0; i < 12; i++) /* across the escape one at a time */
        steps[ns++] = 1;
    for (int i = 0; i < 10; i++)
        steps[ns++] = -3;
    uint8_t data[512], a[128], b[128];
    size_t na = 0, nb = 0, n = 0;
    for (size_t i = 0; i < nv; i++)
        na += ltr_put_uvar(a + na, as_is[i]);
    for (size_t i = 0; i < ns; i++)
        nb += ltr_put_uvar(b + nb, ltr_zigzag(steps[i]));
    b[nb++] = 0x80; /* a varint cut short: the column's reading ends before it */
    assert_true(na < 128 && nb < 128);
    n = two_columns(data, a, na, b, nb);
    ltr_coldecoder d = {0};
    assert_int_equal(ltr_columns_open(&d, data, n, 0, 0, NULL, NULL), 0);
    uint32_t store[512];
    uint64_t big[512];
    ltr_colvals cv[4];
    ltr_colview_values(&d.view, store, big, cv);
    assert_int_equal(cv[2].n, nv);
    assert_int_equal(cv[3].n, ns);
    uint64_t run = 0;
    for (int k = 2; k < 4; k++)
        for (uint32_t i = 0, bi = 0; i < cv[k].n; i++) {
            uint64_t x = cv[k].v[i] != LTR_COLVAL_BIG ? cv[k].v[i] : cv[k].big[bi++];
            uint64_t want = k == 2 ? as_is[i] : (run += (uint64_t)steps[i]);
            assert_true(x == want);
        }
    assert_true(cv[3].prev == run && cv[2].end == na && cv[3].end == nb - 1);
    ltr_coldecoder_free(&d);
}

/* A file's bytes once decompressed, from its chunk headers alone (the
 * analysis's heap goes on huge pages by them, cli/analysis-args.c): 3 MiB
 * of zeros packed into a few KB count 3 MiB, the walk stops once it has
 * enough, and at a header that does not check. */
static void test_file_raw_bytes(void **state)
{
    (void)state;
    const char *path = gen_tmp("raw.ltr");
    const size_t big = (size_t)3 << 20, small = 1000;
    uint8_t *zeros = calloc(1, big);
    assert_non_null(zeros);
    ltr_writer *w;
    ltr_error err = {0};
    assert_int_equal(ltr_writer_open(&w, path, &err), 0);
    assert_int_equal(ltr_writer_chunk(w, 99, zeros, big, &err), 0); /* a type readers skip */
    uint64_t second = ltr_writer_size(w);
    assert_int_equal(ltr_writer_chunk(w, 99, zeros, small, &err), 0);
    assert_true(ltr_writer_size(w) < 64 * 1024);
    ltr_writer_close(w);
    free(zeros);
    assert_int_equal(ltr_trace_file_raw_bytes(path, UINT64_MAX), big + small);
    assert_int_equal(ltr_trace_file_raw_bytes(path, 1 << 20), big); /* enough after the first */
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, (long)second + 12, SEEK_SET), 0); /* the second's raw size: its CRC fails */
    assert_int_equal(fputc(0x55, f), 0x55);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(ltr_trace_file_raw_bytes(path, UINT64_MAX), big);
    assert_int_equal(ltr_trace_file_raw_bytes(gen_tmp("absent.ltr"), UINT64_MAX), 0);
    /* a FIFO at the name (another user's, put there after a check): 0, at
     * once; its open waited for a writer that never came */
    const char *fifo = gen_tmp("fifo.ltr");
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    pid_t child = fork();
    if (child == 0) {
        alarm(5);
        _exit(ltr_trace_file_raw_bytes(fifo, UINT64_MAX) == 0 ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    unlink(fifo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_intact_same_with_thread),
        cmocka_unit_test(test_truncation_same_with_thread),
        cmocka_unit_test(test_bit_flips_same_with_thread),
        cmocka_unit_test(test_garbage_same_with_thread),
        cmocka_unit_test(test_reader_fetches_what_it_waits_for),
        cmocka_unit_test(test_rewind_and_close_mid_scan),
        cmocka_unit_test(test_block_api_keeps_counts),
        cmocka_unit_test(test_values_ahead_bounded),
        cmocka_unit_test(test_values_around_the_escape),
        cmocka_unit_test(test_values_in_runs_of_small_ones),
        cmocka_unit_test(test_file_raw_bytes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
