/*
 * tests/format/test_damage.c — the reader on damaged and hostile input: a
 * file cut at every byte offset, a bit flipped in every byte, garbage between
 * chunks, garbage and empty files, bad magic, a newer version, unknown chunk
 * types, uncompressed chunks, and chunks whose CRCs are right but whose
 * content is random. It must never crash or read out of bounds (ASan runs
 * this), must return exactly the events of intact chunks, and must say what
 * was damaged.
 */
#include "gen.h"

#include "format/chunk.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

typedef gen_file fixture;

/* A small multi-chunk trace: HEADER, METADATA, 6 EVENTS chunks, COUNTERS, END. */
static int setup(void **state)
{
    gen_opts o = {.blocks = 6, .events_per_block = 4, .chunk_target = 0, .with_end = 1};
    return (*state = gen_file_new("small.ltr", "work.ltr", &o)) ? 0 : -1;
}

static int teardown(void **state)
{
    gen_file_free(*state);
    return 0;
}

/* Reads every event; checks each is an intact generated one; stores their numbers. */
static size_t read_numbers(ltr_trace *t, uint64_t *out, size_t cap)
{
    const ltr_event *ev;
    ltr_error err;
    size_t n = 0;
    int rc;
    while ((rc = ltr_trace_next(t, &ev, &err)) > 0) {
        uint64_t num;
        assert_int_equal(ltr_event_get_u64(ev, "n", &num), 0);
        assert_int_equal(gen_check_event(ev, num), 0);
        assert_true(n < cap);
        out[n++] = num;
    }
    assert_int_equal(rc, 0);
    return n;
}

static int has_damage(const ltr_trace *t, ltr_damage_kind kind)
{
    for (size_t i = 0; i < ltr_trace_damage_count(t); i++)
        if (ltr_trace_damage_at(t, i)->kind == kind)
            return 1;
    return 0;
}

/* events the file holds once cut at `cut` bytes, and whether cut is a chunk boundary */
static uint64_t events_before(const gen_marks *m, uint64_t cut, int *boundary)
{
    uint64_t ev = 0;
    *boundary = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->size[i] <= cut) {
            ev = m->events[i];
            *boundary |= m->size[i] == cut;
        }
    return ev;
}

static void test_truncation_at_every_offset(void **state)
{
    fixture *f = *state;
    assert_int_equal(f->m.size[f->m.n - 1], f->len);
    for (size_t cut = 0; cut <= f->len; cut++) {
        assert_int_equal(gen_spit(f->work, f->data, cut), 0);
        ltr_trace *t;
        ltr_error err = {0};
        int rc = ltr_trace_open(f->work, &t, &err);
        if (cut < LTR_FILE_HEADER_SIZE) {
            assert_true(rc < 0);
            assert_non_null(strstr(err.msg, f->work));
            continue;
        }
        assert_int_equal(rc, 0);
        uint64_t nums[64];
        size_t n = read_numbers(t, nums, 64);
        int boundary;
        uint64_t want = events_before(&f->m, cut, &boundary);
        assert_int_equal(n, want);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(nums[i], i);
        ltr_trace_summary s;
        ltr_trace_summarize(t, &s);
        if (boundary) {
            assert_int_equal(s.damage, 0);
        } else {
            assert_true(has_damage(t, LTR_DAMAGE_TRUNCATED));
            const ltr_damage *d = ltr_trace_damage_at(t, ltr_trace_damage_count(t) - 1);
            assert_int_equal(d->offset + d->length, cut);
        }
        assert_int_equal(s.complete, cut == f->len);
        ltr_trace_close(t);
    }
}

/* Which chunk (index into marks) holds byte b: marks[i-1] <= b < marks[i]. */
static size_t chunk_of(const gen_marks *m, uint64_t b)
{
    size_t i = 1;
    while (i < m->n && m->size[i] <= b)
        i++;
    return i;
}

static void test_bit_flips(void **state)
{
    fixture *f = *state;
    uint8_t *copy = malloc(f->len);
    for (size_t b = LTR_FILE_HEADER_SIZE; b < f->len; b++) {
        memcpy(copy, f->data, f->len);
        copy[b] ^= (uint8_t)(1u << (b % 8));
        assert_int_equal(gen_spit(f->work, copy, f->len), 0);
        ltr_trace *t;
        ltr_error err;
        assert_int_equal(ltr_trace_open(f->work, &t, &err), 0);
        uint64_t nums[64];
        size_t n = read_numbers(t, nums, 64);
        ltr_trace_summary s;
        ltr_trace_summarize(t, &s);
        assert_true(s.damage > 0);
        size_t c = chunk_of(&f->m, b);
        uint64_t lo = f->m.events[c - 1], hi = f->m.events[c];
        if (c == 2) { /* METADATA: no layout, so no event is readable */
            assert_int_equal(n, 0);
        } else {
            /* every event but those of the flipped chunk, in order */
            size_t k = 0;
            for (uint64_t e = 0; e < f->m.events[f->m.n - 1]; e++)
                if (e < lo || e >= hi) {
                    assert_true(k < n);
                    assert_int_equal(nums[k++], e);
                }
            assert_int_equal(k, n);
        }
        ltr_trace_close(t);
    }
    free(copy);
}

static void test_garbage_between_chunks(void **state)
{
    fixture *f = *state;
    /* 100 garbage bytes (with a fake "LTRC") after the METADATA chunk */
    size_t at = f->m.size[2];
    uint8_t garbage[100];
    for (size_t i = 0; i < sizeof garbage; i++)
        garbage[i] = (uint8_t)(i * 37 + 11);
    memcpy(garbage + 10, "LTRC", 4);
    uint8_t *copy = malloc(f->len + sizeof garbage);
    memcpy(copy, f->data, at);
    memcpy(copy + at, garbage, sizeof garbage);
    memcpy(copy + at + sizeof garbage, f->data + at, f->len - at);
    assert_int_equal(gen_spit(f->work, copy, f->len + sizeof garbage), 0);
    free(copy);
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(f->work, &t, &err), 0);
    uint64_t nums[64];
    assert_int_equal(read_numbers(t, nums, 64), 24);
    assert_int_equal(ltr_trace_damage_count(t), 1);
    const ltr_damage *d = ltr_trace_damage_at(t, 0);
    assert_int_equal(d->kind, LTR_DAMAGE_BAD_HEADER);
    assert_int_equal(d->offset, at);
    assert_int_equal(d->length, sizeof garbage);
    assert_true(ltr_trace_complete(t));
    char line[400];
    ltr_damage_format(d, line, sizeof line);
    assert_non_null(strstr(line, "bad chunk header"));
    ltr_trace_close(t);
}

static void test_lost_chunk_is_reported_missing(void **state)
{
    fixture *f = *state;
    /* cut EVENTS chunk #2 (marks 3..4) out entirely */
    size_t a = f->m.size[3], b = f->m.size[4];
    uint8_t *copy = malloc(f->len);
    memcpy(copy, f->data, a);
    memcpy(copy + a, f->data + b, f->len - b);
    assert_int_equal(gen_spit(f->work, copy, f->len - (b - a)), 0);
    free(copy);
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(f->work, &t, &err), 0);
    uint64_t nums[64];
    assert_int_equal(read_numbers(t, nums, 64), 20);
    assert_int_equal(ltr_trace_damage_count(t), 1);
    assert_int_equal(ltr_trace_damage_at(t, 0)->kind, LTR_DAMAGE_MISSING);
    assert_int_equal(ltr_trace_damage_at(t, 0)->chunk_seq, 3);
    ltr_trace_close(t);
}

static void expect_open_error(const char *path, const char *needle)
{
    ltr_trace *t = (ltr_trace *)1;
    ltr_error err = {0};
    assert_true(ltr_trace_open(path, &t, &err) < 0);
    assert_null(t);
    if (!strstr(err.msg, needle) || !strstr(err.msg, path))
        fail_msg("message '%s' lacks '%s' or the path", err.msg, needle);
}

static void test_refused_files(void **state)
{
    fixture *f = *state;
    expect_open_error("/nonexistent/dir/x.ltr", "No such file or directory");
    assert_int_equal(gen_spit(f->work, "", 0), 0);
    expect_open_error(f->work, "empty");
    assert_int_equal(gen_spit(f->work, "LTRTRACX\1\0\0\0\0\0\0\0", 16), 0);
    expect_open_error(f->work, "not an ltr trace");
    assert_int_equal(gen_spit(f->work, "#!/bin/sh\n", 10), 0);
    expect_open_error(f->work, "not an ltr trace");
    assert_int_equal(gen_spit(f->work, "LTRTRACE\1\0", 10), 0);
    expect_open_error(f->work, "truncated file header");
    uint8_t *copy = malloc(f->len);
    memcpy(copy, f->data, f->len);
    copy[8] = LTR_FORMAT_VERSION + 1;
    assert_int_equal(gen_spit(f->work, copy, f->len), 0);
    expect_open_error(f->work, "newer");
    free(copy);
    expect_open_error("/tmp", "directory");
}

static void test_garbage_file(void **state)
{
    fixture *f = *state;
    uint8_t buf[8192];
    memcpy(buf, LTR_FILE_MAGIC, 8);
    ltr_put_u32(buf + 8, 1);
    ltr_put_u32(buf + 12, 0);
    srand(7);
    for (size_t i = 16; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i % 97 == 0 ? 'L' : rand());
    assert_int_equal(gen_spit(f->work, buf, sizeof buf), 0);
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(f->work, &t, &err), 0);
    ltr_trace_summary s;
    assert_int_equal(ltr_trace_scan(t, &s, &err), 0);
    assert_int_equal(s.events, 0);
    assert_int_equal(s.chunks, 0);
    assert_true(s.damage > 0);
    assert_false(s.complete);
    ltr_trace_close(t);
}

/* Appends a chunk by hand, e.g. uncompressed or of an unknown type. */
static void append_chunk(ltr_bytes *file, uint16_t type, uint16_t flags, uint64_t seq, const ltr_bytes *raw)
{
    ltr_chunk_header h = {.type = type, .flags = flags, .payload_size = (uint32_t)raw->len,
                          .raw_size = (uint32_t)raw->len, .seq = seq,
                          .payload_crc = ltr_crc32(raw->data, raw->len)};
    ltr_chunk_header_encode(&h, ltr_bytes_grow(file, LTR_CHUNK_HEADER_SIZE));
    ltr_bytes_put_mem(file, raw->data, raw->len);
}

static void test_unknown_type_and_uncompressed_chunks(void **state)
{
    fixture *f = *state;
    ltr_bytes file = {0}, raw = {0};
    ltr_bytes_put_mem(&file, f->data, f->m.size[2]); /* file header, HEADER, METADATA */
    ltr_bytes_put_kv(&raw, "future", "thing");
    append_chunk(&file, 77, 0, 2, &raw);
    raw.len = 0;
    ltr_bytes_put_mem(&raw, LTR_BLOCK_MAGIC, 4);
    ltr_bytes_put_u16(&raw, 0);
    ltr_bytes_put_u16(&raw, 0);
    ltr_bytes_put_u32(&raw, 100);
    ltr_bytes_put_u32(&raw, 100);
    ltr_bytes_put_u64(&raw, 0);
    ltr_bytes_put_u32(&raw, 2);
    ltr_bytes ev = {0};
    gen_event(&ev, 0, gen_ts(0));
    gen_event(&ev, 1, gen_ts(1));
    ltr_bytes_put_u32(&raw, (uint32_t)ev.len);
    ltr_bytes_put_mem(&raw, ev.data, ev.len);
    append_chunk(&file, LTR_CHUNK_EVENTS, 0, 3, &raw);
    assert_int_equal(gen_spit(f->work, file.data, file.len), 0);
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(f->work, &t, &err), 0);
    uint64_t nums[8];
    assert_int_equal(read_numbers(t, nums, 8), 2);
    assert_int_equal(ltr_trace_damage_count(t), 0);
    ltr_trace_close(t);
    ltr_bytes_free(&file);
    ltr_bytes_free(&raw);
    ltr_bytes_free(&ev);
}

static void random_bytes(ltr_bytes *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ltr_bytes_put_u8(b, (uint8_t)rand());
}

/* Records with right framing but random bodies, and event records with random sizes,
 * layouts and payloads: the content parsers meet garbage behind valid CRCs. */
static void random_records(ltr_bytes *b, int kinds)
{
    int n = rand() % 6;
    for (int i = 0; i < n; i++) {
        size_t r = ltr_bytes_record_begin(b, (uint16_t)(1 + rand() % kinds));
        if (rand() % 2) {
            ltr_bytes_put_u32(b, (uint32_t)(rand() % 4));
            ltr_bytes_put_u16(b, (uint16_t)(rand() % 40));
        }
        random_bytes(b, (size_t)(rand() % 60));
        ltr_bytes_record_end(b, r);
    }
    if (rand() % 4 == 0)
        random_bytes(b, (size_t)(rand() % 10));
}

static void random_events(ltr_bytes *b)
{
    int n = rand() % 8;
    for (int i = 0; i < n; i++) {
        uint32_t size = rand() % 8 ? 16 + (uint32_t)(rand() % 40) : (uint32_t)rand();
        ltr_bytes_put_u32(b, size);
        ltr_bytes_put_u32(b, (uint32_t)(rand() % 5));
        ltr_bytes_put_u64(b, (uint64_t)rand());
        if (size >= 16 && size < 100)
            random_bytes(b, size - 16);
    }
}

static void write_fuzzed(const char *path)
{
    ltr_writer *w;
    ltr_error err;
    unlink(path); /* the writer only creates new files */
    assert_int_equal(ltr_writer_open(&w, path, &err), 0);
    ltr_bytes b = {0};
    random_bytes(&b, (size_t)(rand() % 40));
    if (rand() % 2)
        gen_header(&b);
    ltr_writer_kv(w, LTR_CHUNK_HEADER, &b, &err);
    b.len = 0;
    gen_metadata(&b);
    random_records(&b, 5);
    ltr_writer_metadata(w, b.data, b.len, &err);
    for (int k = 0; k < 3; k++) {
        b.len = 0;
        random_events(&b);
        ltr_block_info info = {.pid = (uint32_t)rand() % 3, .tid = 5, .event_count = (uint32_t)rand() % 4,
                               .fixed_records = (uint8_t)(k % 2)}; /* both forms get garbage */
        ltr_writer_block(w, &info, b.data, b.len, &err);
        b.len = 0;
        random_records(&b, 3);
        ltr_writer_counters(w, b.data, b.len, &err);
    }
    b.len = 0;
    random_bytes(&b, (size_t)(rand() % 40));
    ltr_writer_kv(w, LTR_CHUNK_END, &b, &err);
    ltr_writer_close(w);
    ltr_bytes_free(&b);
}

static void test_random_content_behind_valid_crcs(void **state)
{
    fixture *f = *state;
    FILE *null = fopen("/dev/null", "w");
    assert_non_null(null);
    srand(12345);
    for (int iter = 0; iter < 400; iter++) {
        write_fuzzed(f->work);
        ltr_trace *t;
        ltr_error err;
        assert_int_equal(ltr_trace_open(f->work, &t, &err), 0);
        const ltr_event *ev;
        int rc;
        while ((rc = ltr_trace_next(t, &ev, &err)) > 0) {
            ltr_event_print_text(null, ev, 0);
            ltr_event_print_json(null, ev, 0);
            for (unsigned i = 0; i < ev->layout->field_count; i++) {
                ltr_trace_value v;
                assert_int_equal(ltr_event_field(ev, i, &v), 0);
            }
        }
        assert_int_equal(rc, 0);
        for (size_t i = 0; i < ltr_trace_damage_count(t); i++) {
            char line[400];
            ltr_damage_format(ltr_trace_damage_at(t, i), line, sizeof line);
            assert_true(strlen(line) > 10);
        }
        ltr_trace_close(t);
    }
    fclose(null);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_truncation_at_every_offset),
        cmocka_unit_test(test_bit_flips),
        cmocka_unit_test(test_garbage_between_chunks),
        cmocka_unit_test(test_lost_chunk_is_reported_missing),
        cmocka_unit_test(test_refused_files),
        cmocka_unit_test(test_garbage_file),
        cmocka_unit_test(test_unknown_type_and_uncompressed_chunks),
        cmocka_unit_test(test_random_content_behind_valid_crcs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
