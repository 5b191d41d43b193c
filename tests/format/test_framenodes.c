/*
 * tests/format/test_framenodes.c — FRAME_NODES records (the heap agent's
 * frame trie, docs/heap-events.md) read back through ltr_trace_stack_find:
 * the test builds a trie of random stacks the way the agent does (a node per
 * (parent, return address), ids in creation order, records of consecutive
 * nodes of a path, outermost first) and checks that every stack comes back
 * with exactly its frames, stacks that are the outer part of others too,
 * across processes and exec; that a lost chunk of nodes leaves the stacks that
 * needed it unknown, never wrong; and that a malformed record is damage.
 */
#include "gen.h"

#include <ltr/trace.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define MAX_STACKS 600
#define MAX_DEPTH 40
#define MAX_NODES (MAX_STACKS * MAX_DEPTH)

typedef struct stack {
    uint32_t pid, id; /* id: its innermost node */
    uint16_t n;
    uint64_t frames[MAX_DEPTH]; /* innermost first */
} stack;

/* One process image's trie as the agent keeps it. */
typedef struct trie {
    uint32_t pid, n;
    uint32_t parent[MAX_NODES + 1];
    uint64_t ip[MAX_NODES + 1];
    uint8_t written[MAX_NODES + 1];
} trie;

static uint32_t node_of(trie *t, uint32_t parent, uint64_t ip)
{
    for (uint32_t id = 1; id <= t->n; id++)
        if (t->parent[id] == parent && t->ip[id] == ip)
            return id;
    assert_true(t->n < MAX_NODES);
    t->n++;
    t->parent[t->n] = parent;
    t->ip[t->n] = ip;
    return t->n;
}

/* A random path down a tree of call sites (every fourth level branches three
 * ways), its nodes added to the trie. */
static void random_stack(trie *t, stack *s, uint64_t image)
{
    s->pid = t->pid;
    s->n = (uint16_t)(2 + rand() % (MAX_DEPTH - 2));
    uint32_t id = 0;
    for (uint16_t level = 0; level < s->n; level++) { /* 0 = outermost */
        uint64_t ip = image + level * 0x100 + (uint64_t)(level % 4 == 3 ? rand() % 3 : 0) * 8;
        s->frames[s->n - 1 - level] = ip;
        id = node_of(t, id, ip);
    }
    s->id = id;
}

/* The records of the nodes of s not yet written, as the agent writes them:
 * one record, outermost first, each node the parent of the next. */
static void put_nodes(ltr_bytes *b, trie *t, const stack *s)
{
    uint32_t chain[MAX_DEPTH], n = 0;
    for (uint32_t id = s->id; id && !t->written[id]; id = t->parent[id])
        chain[n++] = id;
    if (!n)
        return;
    size_t r = ltr_bytes_record_begin(b, LTR_META_FRAME_NODES);
    ltr_bytes_put_u32(b, t->pid);
    ltr_bytes_put_u32(b, t->parent[chain[n - 1]]);
    ltr_bytes_put_u16(b, (uint16_t)n);
    while (n--) {
        ltr_bytes_put_u32(b, chain[n]);
        ltr_bytes_put_u64(b, t->ip[chain[n]]);
        t->written[chain[n]] = 1;
    }
    ltr_bytes_record_end(b, r);
}


static void write_chunk(ltr_writer *w, ltr_bytes *b)
{
    ltr_error err;
    assert_int_equal(ltr_writer_metadata(w, b->data, b->len, &err), 0);
    ltr_bytes_free(b);
    *b = (ltr_bytes){0};
}

/* Exact, or (must_exist 0) unknown. */
static void check_stack(const ltr_trace *t, const stack *w, int must_exist)
{
    const ltr_stack *s = ltr_trace_stack_find(t, w->pid, w->id);
    if (!s) {
        if (must_exist)
            fail_msg("stack %u of pid %u missing", w->id, w->pid);
        return;
    }
    assert_int_equal(s->pid, w->pid);
    assert_int_equal(s->id, w->id);
    assert_int_equal(s->frame_count, w->n);
    assert_memory_equal(s->frames, w->frames, 8u * w->n);
}

static ltr_trace *open_scanned(const char *path, ltr_trace_summary *s)
{
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    assert_int_equal(ltr_trace_scan(t, s, &err), 0);
    return t;
}

static trie tp, tc, te; /* a process, its fork child, the process after exec */
static stack sp[MAX_STACKS], sc[MAX_STACKS], se[MAX_STACKS];

static void test_stacks_rebuilt_exactly(void **state)
{
    srand(11);
    tp = (trie){.pid = 100};
    for (int i = 0; i < 300; i++)
        random_stack(&tp, &sp[i], 0x400000);
    sp[300] = sp[7]; /* the outer part of stack 7: an inner node is a stack too */
    sp[300].n = (uint16_t)(sp[7].n - 1);
    memmove(sp[300].frames, sp[7].frames + 1, 8u * sp[300].n);
    sp[300].id = tp.parent[sp[7].id];
    assert_true(sp[300].id != 0);
    tc = tp; /* a fork child: the parent's ids, written again under its pid */
    tc.pid = 200;
    memset(tc.written, 0, sizeof tc.written);
    for (int i = 0; i < 300; i++) {
        sc[i] = i < 100 ? sp[i] : (stack){0};
        if (i >= 100)
            random_stack(&tc, &sc[i], 0x400000);
        sc[i].pid = 200;
    }
    te = (trie){.pid = 100}; /* pid 100 execs: ids start over */
    for (int i = 0; i < 200; i++)
        random_stack(&te, &se[i], 0x7f0000);

    const char *path = gen_tmp("nodes.ltr");
    ltr_writer *w = gen_open(path);
    assert_non_null(w);
    ltr_bytes b = {0};
    for (int i = 0; i <= 300; i++) {
        put_nodes(&b, &tp, &sp[i]);
        if (i % 50 == 49)
            write_chunk(w, &b);
    }
    for (int i = 0; i < 300; i++)
        put_nodes(&b, &tc, &sc[i]);
    write_chunk(w, &b);
    gen_process(&b, 100);
    for (int i = 0; i < 200; i++)
        put_nodes(&b, &te, &se[i]);
    write_chunk(w, &b);
    ltr_error err;
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);

    ltr_trace_summary s;
    ltr_trace *t = open_scanned(path, &s);
    assert_int_equal(s.damage, 0);
    for (int i = 0; i < 300; i++)
        check_stack(t, &sc[i], 1);
    for (int i = 0; i < 200; i++)
        check_stack(t, &se[i], 1);
    /* ids of the old image past the new one's nodes are unknown, not stale */
    for (int i = 0; i <= 300; i++)
        if (sp[i].id > te.n)
            assert_null(ltr_trace_stack_find(t, 100, sp[i].id));
    assert_null(ltr_trace_stack_find(t, 100, 0));
    assert_null(ltr_trace_stack_find(t, 300, 1)); /* a pid without nodes */
    assert_int_equal(ltr_trace_stack_find(t, 200, sc[5].id), ltr_trace_stack_find(t, 200, sc[5].id));
    ltr_trace_close(t);
    unlink(path);
}

static void test_lost_chunk_never_wrong(void **state)
{
    srand(13);
    tp = (trie){.pid = 100};
    for (int i = 0; i < 200; i++)
        random_stack(&tp, &sp[i], 0x400000);
    const char *path = gen_tmp("lostnodes.ltr");
    ltr_writer *w = gen_open(path);
    assert_non_null(w);
    ltr_bytes b = {0};
    for (int i = 0; i < 100; i++)
        put_nodes(&b, &tp, &sp[i]);
    write_chunk(w, &b);
    uint64_t end_first = ltr_writer_size(w);
    for (int i = 100; i < 200; i++)
        put_nodes(&b, &tp, &sp[i]);
    write_chunk(w, &b);
    ltr_writer_close(w);
    size_t len;
    uint8_t *d = gen_slurp(path, &len);
    d[end_first - 3] ^= 0x55; /* the first stacks' nodes are lost */
    assert_int_equal(gen_spit(path, d, len), 0);
    free(d);

    ltr_trace_summary s;
    ltr_trace *t = open_scanned(path, &s);
    assert_true(s.damage >= 1);
    size_t found = 0;
    for (int i = 0; i < 200; i++) {
        check_stack(t, &sp[i], 0); /* unknown, or exact */
        found += ltr_trace_stack_find(t, 100, sp[i].id) != NULL;
    }
    assert_true(found < 100); /* every later stack shares outer nodes of the lost ones */
    ltr_trace_close(t);
    unlink(path);
}

/* A node whose parent is not below it, or id 0: the record is damage and
 * none of its nodes is used. */
static void test_bad_record_is_damage(void **state)
{
    const char *path = gen_tmp("badnodes.ltr");
    ltr_writer *w = gen_open(path);
    assert_non_null(w);
    ltr_bytes b = {0};
    uint32_t ids[3][2] = {{1, 2}, {4, 4}, {0, 5}}; /* good; parent == id; id 0 */
    for (int r = 0; r < 3; r++) {
        size_t at = ltr_bytes_record_begin(&b, LTR_META_FRAME_NODES);
        ltr_bytes_put_u32(&b, 100);
        ltr_bytes_put_u32(&b, r == 0 ? 0 : 3);
        ltr_bytes_put_u16(&b, 2);
        for (int k = 0; k < 2; k++) {
            ltr_bytes_put_u32(&b, ids[r][k]);
            ltr_bytes_put_u64(&b, 0x1000u * (uint64_t)(r + 1) + (uint64_t)k);
        }
        ltr_bytes_record_end(&b, at);
    }
    write_chunk(w, &b);
    ltr_writer_close(w);
    ltr_trace_summary s;
    ltr_trace *t = open_scanned(path, &s);
    assert_true(s.damage >= 1);
    const ltr_stack *st = ltr_trace_stack_find(t, 100, 2);
    assert_non_null(st);
    assert_int_equal(st->frame_count, 2);
    assert_int_equal(st->frames[0], 0x1001);
    assert_int_equal(st->frames[1], 0x1000);
    assert_null(ltr_trace_stack_find(t, 100, 3));
    assert_null(ltr_trace_stack_find(t, 100, 4));
    assert_null(ltr_trace_stack_find(t, 100, 5));
    ltr_trace_close(t);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stacks_rebuilt_exactly),
        cmocka_unit_test(test_lost_chunk_never_wrong),
        cmocka_unit_test(test_bad_record_is_damage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
