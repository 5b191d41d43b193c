/*
 * tests/format/test_stackshare.c — the writer's STACK -> STACK_REF rewriting
 * (format/stackshare.c) read back by the reader: every stack comes back with
 * exactly its frames, across processes, exec (a PROCESS record: ids start
 * over, the old image's stacks kept apart), repeats and stacks that are the outer part of others; the file holds
 * far fewer frame bytes; a lost chunk makes the stacks that needed it unknown,
 * never wrong; a chunk the writer could not write is never referred to.
 */
#include "gen.h"
#include "format/blocks.h" /* ltr_trace_image_at: the old image's stacks */

#include <ltr/trace.h>

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define MAX_STACKS 1200
#define MAX_DEPTH 40

typedef struct want {
    uint32_t pid, id;
    uint16_t n;
    uint64_t frames[MAX_DEPTH];
    int current; /* not replaced by a later record of the same (pid, id); OLD_IMAGE: by an exec */
} want;

#define OLD_IMAGE 2

typedef struct plan {
    want s[MAX_STACKS];
    size_t n;
} plan;

/* A random path down a tree of call sites, innermost frame first: every
 * fifth level branches four ways, like call chains do, so stacks share their
 * outer frames often. */
static void random_stack(want *w, uint32_t pid, uint32_t id, uint64_t image)
{
    w->pid = pid;
    w->id = id;
    w->n = (uint16_t)(3 + rand() % (MAX_DEPTH - 3));
    for (uint16_t k = 0; k < w->n; k++) {
        unsigned level = w->n - 1 - k; /* 0 = outermost */
        w->frames[k] = image + level * 0x100 + (uint64_t)(level % 5 == 4 ? rand() % 4 : 0) * 8;
    }
    w->current = 1;
}

static void put_stack(ltr_bytes *b, const want *w)
{
    size_t r = ltr_bytes_record_begin(b, LTR_META_STACK);
    ltr_bytes_put_u32(b, w->pid);
    ltr_bytes_put_u32(b, w->id);
    ltr_bytes_put_u16(b, w->n);
    for (uint16_t k = 0; k < w->n; k++)
        ltr_bytes_put_u64(b, w->frames[k]);
    ltr_bytes_record_end(b, r);
}


static want *add(plan *p)
{
    assert_true(p->n < MAX_STACKS);
    return &p->s[p->n++];
}

/* The later record of a (pid, id) replaces the earlier one. */
static void supersede(plan *p, const want *w)
{
    for (size_t i = 0; i + 1 < p->n; i++)
        if (p->s[i].pid == w->pid && p->s[i].id == w->id)
            p->s[i].current = 0;
}

/* Writes stacks [from, to) of the plan as one METADATA chunk; returns the writer's result. */
static int write_range(ltr_writer *w, plan *p, size_t from, size_t to, const uint32_t *exec_before)
{
    ltr_bytes b = {0};
    for (size_t i = from; i < to; i++) {
        if (exec_before && i == *exec_before)
            gen_process(&b, p->s[i].pid);
        put_stack(&b, &p->s[i]);
    }
    ltr_error err;
    int rc = ltr_writer_metadata(w, b.data, b.len, &err);
    ltr_bytes_free(&b);
    return rc;
}

static void check_stack(const ltr_trace *t, const want *w, int must_exist)
{
    const ltr_stack *s = ltr_trace_stack_find(t, w->pid, w->id);
    if (!s) {
        if (must_exist)
            fail_msg("stack %u of pid %u missing", w->id, w->pid);
        return;
    }
    assert_int_equal(s->frame_count, w->n);
    assert_memory_equal(s->frames, w->frames, 8u * w->n);
}

/* Sums the raw size of the METADATA chunks of a trace file. */
static uint64_t metadata_raw(const char *path)
{
    size_t len;
    uint8_t *d = gen_slurp(path, &len);
    uint64_t sum = 0;
    for (size_t pos = LTR_FILE_HEADER_SIZE; pos + LTR_CHUNK_HEADER_SIZE <= len;
         pos += LTR_CHUNK_HEADER_SIZE + ltr_get_u32(d + pos + 8))
        if (ltr_get_u16(d + pos + 4) == LTR_CHUNK_METADATA)
            sum += ltr_get_u32(d + pos + 12);
    free(d);
    return sum;
}

static void test_every_stack_exact(void **state)
{
    static plan p;
    p.n = 0;
    srand(3);
    for (uint32_t id = 1; id <= 400; id++)
        random_stack(add(&p), 100, id, 0x400000);
    want *outer = add(&p); /* the outer part of stack 7: all its frames shared */
    *outer = p.s[6];
    outer->id = 401;
    outer->n = (uint16_t)(outer->n - 2);
    memmove(outer->frames, outer->frames + 2, 8u * outer->n);
    want *again = add(&p); /* stack 5 sent again, the same frames */
    *again = p.s[4];
    supersede(&p, again);
    for (uint32_t id = 1; id <= 300; id++) /* a fork child: same ids, its own pid */
        random_stack(add(&p), 200, id, 0x400000);
    uint32_t exec_at = (uint32_t)p.n; /* pid 100 calls exec: ids start over, the old image's kept apart */
    for (size_t i = 0; i < p.n; i++)
        if (p.s[i].pid == 100 && p.s[i].current)
            p.s[i].current = OLD_IMAGE;
    for (uint32_t id = 1; id <= 300; id++) {
        want *w = add(&p);
        random_stack(w, 100, id, 0x400000); /* the same program again */
        supersede(&p, w);
    }
    uint64_t raw = 0;
    for (size_t i = 0; i < p.n; i++)
        raw += LTR_RECORD_HEADER_SIZE + 10 + 8u * p.s[i].n;

    const char *path = gen_tmp("stacks.ltr");
    ltr_writer *w = gen_open(path);
    assert_non_null(w);
    for (size_t from = 0; from < p.n; from += 250)
        assert_int_equal(write_range(w, &p, from, from + 250 < p.n ? from + 250 : p.n, &exec_at), 0);
    ltr_error err;
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);

    ltr_trace *t;
    ltr_trace_summary s;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    assert_int_equal(ltr_trace_scan(t, &s, &err), 0);
    assert_int_equal(s.damage, 0);
    assert_int_equal(ltr_trace_stack_count(t), p.n);
    assert_int_equal(ltr_trace_image_count(t), 1);
    for (size_t i = 0; i < p.n; i++) {
        want old = p.s[i];
        old.pid = ltr_trace_image_at(t, 0)->key;
        if (p.s[i].current)
            check_stack(t, p.s[i].current == OLD_IMAGE ? &old : &p.s[i], 1);
    }
    for (uint32_t id = 301; id <= 401; id++) /* the old image's ids past the new one's: unknown, not stale */
        assert_null(ltr_trace_stack_find(t, 100, id));
    ltr_trace_close(t);
    uint64_t stored = metadata_raw(path);
    if (stored * 2 > raw)
        fail_msg("METADATA holds %llu raw bytes for %llu bytes of STACK records: frames not shared",
                 (unsigned long long)stored, (unsigned long long)raw);
    unlink(path);
}

static void test_lost_chunk_never_wrong(void **state)
{
    static plan p;
    p.n = 0;
    srand(5);
    for (uint32_t id = 1; id <= 200; id++)
        random_stack(add(&p), 100, id, 0x400000);
    const char *path = gen_tmp("lost.ltr");
    ltr_writer *w = gen_open(path);
    assert_non_null(w);
    assert_int_equal(write_range(w, &p, 0, 100, NULL), 0);
    uint64_t end_first = ltr_writer_size(w);
    assert_int_equal(write_range(w, &p, 100, 200, NULL), 0);
    ltr_writer_close(w);
    size_t len;
    uint8_t *d = gen_slurp(path, &len);
    d[end_first - 3] ^= 0x55; /* the first stacks' chunk is lost */
    assert_int_equal(gen_spit(path, d, len), 0);
    free(d);

    ltr_trace *t;
    ltr_error err;
    ltr_trace_summary s;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    assert_int_equal(ltr_trace_scan(t, &s, &err), 0);
    size_t found = 0;
    for (size_t i = 100; i < 200; i++) {
        check_stack(t, &p.s[i], 0); /* unknown, or exact */
        found += ltr_trace_stack_find(t, 100, p.s[i].id) != NULL;
    }
    assert_true(found < 100);                   /* those that needed the lost stacks... */
    assert_true(s.damage >= 1 + (100 - found)); /* ...are reported */
    ltr_trace_close(t);
    unlink(path);
}

/* A chunk refused by the size limit must not be referred to by later ones. */
static void test_unwritten_chunk_not_referred_to(void **state)
{
    static plan p;
    p.n = 0;
    srand(9);
    for (uint32_t id = 1; id <= 101; id++)
        random_stack(add(&p), 100, id, 0x400000);
    p.s[100] = p.s[99]; /* the last one shares all of a refused stack's frames */
    p.s[100].id = 101;
    const char *path = gen_tmp("limit.ltr");
    ltr_writer *w = gen_open(path);
    assert_non_null(w);
    ltr_writer_set_limit(w, ltr_writer_size(w) + 600);
    assert_int_equal(write_range(w, &p, 0, 100, NULL), -EFBIG);
    assert_int_equal(write_range(w, &p, 100, 101, NULL), 0);
    ltr_writer_close(w);
    ltr_trace *t;
    ltr_error err;
    ltr_trace_summary s;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    assert_int_equal(ltr_trace_scan(t, &s, &err), 0);
    assert_int_equal(s.damage, 0);
    check_stack(t, &p.s[100], 1);
    ltr_trace_close(t);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_stack_exact),
        cmocka_unit_test(test_lost_chunk_never_wrong),
        cmocka_unit_test(test_unwritten_chunk_not_referred_to),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
