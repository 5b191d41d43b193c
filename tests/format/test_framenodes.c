/*
 * tests/format/test_framenodes.c — FRAME_NODES records (the heap agent's
 * frame trie, docs/heap-events.md) read back through ltr_trace_stack_find:
 * the test builds a trie of random stacks the way the agent does (a node per
 * (parent, return address), ids in creation order, records of consecutive
 * nodes of a path, outermost first) and checks that every stack comes back
 * with exactly its frames, stacks that are the outer part of others too,
 * across processes and exec; that a lost chunk of nodes leaves the stacks that
 * needed it unknown, never wrong; and that a malformed record is damage.
 * The writer turns every record into a FRAME_NODES_V (kind 9): the same
 * stacks come back as from the kind 8 records of a version 2 file, with
 * paths built by threads in turn, pids interleaved and exec mid-chunk; a
 * damaged kind 9 record (cut at every byte, bad varints, bad ids) loses
 * exactly its nodes and those counted from it, never gives a wrong stack.
 * A record longer than the reader decodes at once is all or nothing too,
 * and nodes whose ids are far above the others are found. A record that
 * gives a known stack other frames is damage (format 2: it replaced it).
 * Many pids of one node each take little memory. A chunk's bases (the
 * last set met first) say each pid's own, and a spoil of the pid just set.
 */
#include "gen.h"

#include "format/blocks.h" /* ltr_trace_image_at: the old image's stacks */
#include "format/nodevar.h"

#include <ltr/trace.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
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
    uint32_t last; /* the last node id written */
    uint32_t parent[MAX_NODES + 1];
    uint64_t ip[MAX_NODES + 1];
    uint8_t written[MAX_NODES + 1];
    uint32_t rec_of[MAX_NODES + 1]; /* the record that wrote the node */
} trie;

static uint32_t next_rec; /* records written so far, every trie */
static unsigned id_gaps, id_backs; /* ids of a record not consecutive; a record starting below the last id */

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
 * ways), innermost frame first. */
static void random_frames(stack *s, uint32_t pid, uint64_t image)
{
    s->pid = pid;
    s->n = (uint16_t)(2 + rand() % (MAX_DEPTH - 2));
    for (uint16_t level = 0; level < s->n; level++) { /* 0 = outermost */
        uint64_t ip = image + level * 0x100 + (uint64_t)(level % 4 == 3 ? rand() % 3 : 0) * 8;
        s->frames[s->n - 1 - level] = ip;
    }
}

static uint64_t frame_at_level(const stack *s, uint16_t level) { return s->frames[s->n - 1 - level]; }

/* A random stack, its nodes added to the trie. */
static void random_stack(trie *t, stack *s, uint64_t image)
{
    random_frames(s, t->pid, image);
    uint32_t id = 0;
    for (uint16_t level = 0; level < s->n; level++)
        id = node_of(t, id, frame_at_level(s, level));
    s->id = id;
}

/* Two random stacks whose nodes are added level by level in turn, as two
 * threads of the agent would: the ids along a path are not consecutive. */
static void random_pair(trie *t, stack *a, stack *b, uint64_t image)
{
    random_frames(a, t->pid, image);
    random_frames(b, t->pid, image);
    uint32_t ia = 0, ib = 0;
    for (uint16_t level = 0; level < a->n || level < b->n; level++) {
        if (level < a->n)
            ia = node_of(t, ia, frame_at_level(a, level));
        if (level < b->n)
            ib = node_of(t, ib, frame_at_level(b, level));
    }
    a->id = ia;
    b->id = ib;
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
    id_backs += chain[n - 1] <= t->last;
    for (uint32_t k = n - 1; k > 0; k--)
        id_gaps += chain[k - 1] != chain[k] + 1;
    t->last = chain[0];
    while (n--) {
        ltr_bytes_put_u32(b, chain[n]);
        ltr_bytes_put_u64(b, t->ip[chain[n]]);
        t->written[chain[n]] = 1;
        t->rec_of[chain[n]] = next_rec;
    }
    ltr_bytes_record_end(b, r);
    next_rec++;
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

/* ---- FRAME_NODES_V (kind 9) ---- */

/* How many records of each kind p holds. */
static void count_kinds(const ltr_bytes *p, size_t *k8, size_t *k9)
{
    *k8 = *k9 = 0;
    for (size_t pos = 0; pos + LTR_RECORD_HEADER_SIZE <= p->len; pos += ltr_get_u32(p->data + pos + 4)) {
        uint16_t kind = ltr_get_u16(p->data + pos);
        *k8 += kind == LTR_META_FRAME_NODES;
        *k9 += kind == LTR_META_FRAME_NODES_V;
    }
}

/* Every stack of pid with an id up to max, in both traces: unknown in both,
 * or the same frames in the same order. */
static void same_stacks(const ltr_trace *a, const ltr_trace *b, uint32_t pid, uint32_t max)
{
    for (uint32_t id = 1; id <= max; id++) {
        const ltr_stack *x = ltr_trace_stack_find(a, pid, id), *y = ltr_trace_stack_find(b, pid, id);
        if (!x || !y) {
            if (x || y)
                fail_msg("stack %u of pid %u read from one trace only", id, pid);
            continue;
        }
        assert_int_equal(x->frame_count, y->frame_count);
        assert_memory_equal(x->frames, y->frames, 8u * x->frame_count);
    }
}

/* Pid 100 and its fork child 200 (the parent's ids, own records) write in
 * turn, each path made by two "threads" at once, every other pair written
 * second first; pid 100 execs in the middle of chunk 1 while 200 goes on. */
static void plan_interleaved(ltr_bytes chunk[3])
{
    srand(17);
    next_rec = id_gaps = id_backs = 0;
    tp = (trie){.pid = 100};
    for (int i = 0; i < 200; i += 2)
        random_pair(&tp, &sp[i], &sp[i + 1], 0x400000);
    tc = tp;
    tc.pid = 200;
    tc.last = 0;
    memset(tc.written, 0, sizeof tc.written);
    for (int i = 0; i < 100; i++)
        sc[i] = sp[i], sc[i].pid = 200;
    for (int i = 100; i < 200; i += 2)
        random_pair(&tc, &sc[i], &sc[i + 1], 0x400000);
    te = (trie){.pid = 100};
    for (int i = 0; i < 100; i += 2)
        random_pair(&te, &se[i], &se[i + 1], 0x7f0000);
    for (int i = 0; i < 160; i++) {
        int x = i % 4 < 2 ? i : i ^ 1;
        put_nodes(&chunk[i < 120 ? 0 : 1], &tp, &sp[x]);
        put_nodes(&chunk[i < 120 ? 0 : 1], &tc, &sc[x]);
    }
    gen_process(&chunk[1], 100);
    for (int i = 0; i < 100; i++) {
        int x = i % 4 < 2 ? i : i ^ 1;
        put_nodes(&chunk[i < 40 ? 1 : 2], &te, &se[x]);
        if (i < 40)
            put_nodes(&chunk[1], &tc, &sc[160 + x]);
    }
}

static void test_kind9_same_stacks_as_kind8(void **state)
{
    ltr_bytes chunk[3] = {{0}};
    plan_interleaved(chunk);
    assert_true(id_gaps > 10 && id_backs > 10); /* the cases kind 9 codes apart */

    /* the rewrite alone: every record becomes a kind 9, far smaller */
    for (int i = 0; i < 3; i++) {
        ltr_bytes out = {0};
        size_t k8, k9, in8, in9;
        assert_int_equal(ltr_nodevar_rewrite(chunk[i].data, chunk[i].len, &out), 0);
        count_kinds(&chunk[i], &in8, &in9);
        count_kinds(&out, &k8, &k9);
        assert_true(in8 > 10 && in9 == 0);
        assert_int_equal(k8, 0);
        assert_int_equal(k9, in8);
        assert_true(out.len * 2 < chunk[i].len);
        ltr_bytes_free(&out);
    }

    const char *path8 = gen_tmp("nodes8.ltr"), *path9 = gen_tmp("nodes9.ltr");
    assert_int_equal(gen_raw_trace(path8, 2, chunk, 3), 0); /* what the writer of version 2 wrote */
    ltr_writer *w = gen_open(path9);
    assert_non_null(w);
    for (int i = 0; i < 3; i++)
        write_chunk(w, &chunk[i]);
    ltr_writer_close(w);

    ltr_trace_summary s8, s9;
    ltr_trace *t8 = open_scanned(path8, &s8), *t9 = open_scanned(path9, &s9);
    assert_int_equal(s8.damage, 0);
    assert_int_equal(s9.damage, 0);
    assert_int_equal(ltr_trace_version(t8), 2);
    assert_int_equal(ltr_trace_version(t9), LTR_FORMAT_VERSION);
    for (int i = 0; i < 200; i++)
        check_stack(t9, &sc[i], 1);
    for (int i = 0; i < 100; i++)
        check_stack(t9, &se[i], 1);
    same_stacks(t8, t9, 100, tp.n + 10);
    same_stacks(t8, t9, 200, tc.n + 10);
    ltr_trace_close(t8);
    ltr_trace_close(t9);
    unlink(path8);
    unlink(path9);
}

/* The kind 9 record a damage test spoils, and its kind 8 original. */
typedef struct victim {
    uint32_t rec;          /* record number */
    size_t off, size;      /* in the kind 9 chunk */
    uint32_t pid, parent, n, base;
    uint32_t ids[MAX_DEPTH];
    uint64_t ips[MAX_DEPTH];
} victim;

static ltr_bytes dmg8, dmg9[2]; /* chunk 0 as kind 8; both chunks as kind 9 */
static uint32_t dmg_n0;          /* records of chunk 0 */
static victim vic;

/* Offset of record k of p. */
static size_t record_off(const ltr_bytes *p, uint32_t k)
{
    size_t pos = 0;
    while (k--)
        pos += ltr_get_u32(p->data + pos + 4);
    return pos;
}

/* A pid 100 record of several nodes in the second half of chunk 0, with
 * its kind 8 fields and the base its kind 9 form counts from. */
static void find_victim(void)
{
    vic = (victim){0};
    for (uint32_t k = dmg_n0 / 2; k < dmg_n0 && !vic.n; k++) {
        const uint8_t *b = dmg8.data + record_off(&dmg8, k) + LTR_RECORD_HEADER_SIZE;
        if (ltr_get_u32(b) != 100 || ltr_get_u16(b + 8) < 2)
            continue;
        vic = (victim){.rec = k, .pid = 100, .parent = ltr_get_u32(b + 4), .n = ltr_get_u16(b + 8)};
        for (uint32_t i = 0; i < vic.n; i++) {
            vic.ids[i] = ltr_get_u32(b + 10 + 12 * i);
            vic.ips[i] = ltr_get_u64(b + 14 + 12 * i);
        }
    }
    assert_true(vic.n >= 2);
    for (uint32_t k = 0; k < vic.rec; k++) { /* the last node of pid 100 before it */
        const uint8_t *b = dmg8.data + record_off(&dmg8, k) + LTR_RECORD_HEADER_SIZE;
        if (ltr_get_u32(b) == 100)
            vic.base = ltr_get_u32(b + 10 + 12 * (ltr_get_u16(b + 8) - 1u));
    }
    vic.off = record_off(&dmg9[0], vic.rec);
    vic.size = ltr_get_u32(dmg9[0].data + vic.off + 4);
    assert_int_equal(ltr_get_u16(dmg9[0].data + vic.off), LTR_META_FRAME_NODES_V);
}

static int setup_damage(void **state)
{
    srand(19);
    next_rec = 0;
    tp = (trie){.pid = 100};
    for (int i = 0; i < 120; i += 2)
        random_pair(&tp, &sp[i], &sp[i + 1], 0x400000);
    tc = (trie){.pid = 200};
    for (int i = 0; i < 120; i += 2)
        random_pair(&tc, &sc[i], &sc[i + 1], 0x500000);
    ltr_bytes chunk[2] = {{0}};
    for (int i = 0; i < 120; i++) {
        put_nodes(&chunk[i < 80 ? 0 : 1], &tp, &sp[i]);
        put_nodes(&chunk[i < 80 ? 0 : 1], &tc, &sc[i]);
        if (i == 79)
            dmg_n0 = next_rec;
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(ltr_nodevar_rewrite(chunk[i].data, chunk[i].len, &dmg9[i]), 0);
    dmg8 = chunk[0];
    ltr_bytes_free(&chunk[1]);
    find_victim();
    return 0;
}

static int teardown_damage(void **state)
{
    ltr_bytes_free(&dmg8);
    ltr_bytes_free(&dmg9[0]);
    ltr_bytes_free(&dmg9[1]);
    return 0;
}

static void put_uv(ltr_bytes *b, uint64_t v)
{
    do {
        ltr_bytes_put_u8(b, (uint8_t)((v & 0x7f) | (v >> 7 ? 0x80 : 0)));
        v >>= 7;
    } while (v);
}

/* The victim's kind 9 body as docs/heap-events.md lays it out, with its
 * fields changed as asked: first = the first node's id varint, gap1 the
 * second's. */
static void victim_body(ltr_bytes *b, uint64_t parent, uint64_t count, uint64_t first, uint64_t gap1)
{
    put_uv(b, vic.pid);
    put_uv(b, parent);
    put_uv(b, count);
    for (uint32_t i = 0; i < vic.n; i++) {
        put_uv(b, i == 0 ? first : i == 1 ? gap1 : vic.ids[i] - vic.ids[i - 1] - 1);
        put_uv(b, vic.ips[i]);
    }
}

static uint64_t zz(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

/* A node's record was used by the reader: not the victim, nor counted from it
 * (a later record of its chunk of the victim's pid, or of any pid when the
 * victim's pid could not be read). */
static int record_used(uint32_t pid, uint32_t rec, int all)
{
    if (rec == vic.rec)
        return 0;
    return rec < vic.rec || rec >= dmg_n0 || (!all && pid != vic.pid);
}

/* Stack s of trie t: exact if every record of its path was used, else unknown. */
static void expect_stack(const ltr_trace *tr, const trie *t, const stack *s, int all)
{
    int used = 1;
    for (uint32_t id = s->id; id; id = t->parent[id])
        used &= record_used(t->pid, t->rec_of[id], all);
    check_stack(tr, s, used);
    if (!used && ltr_trace_stack_find(tr, s->pid, s->id))
        fail_msg("stack %u of pid %u was built from nodes counted from a bad record", s->id, s->pid);
}

/* Chunk 0 with the victim's body replaced, then chunk 1; all: the victim's
 * pid cannot be read. */
static void read_damaged(const uint8_t *body, size_t len, int all)
{
    ltr_bytes c[2] = {{0}, dmg9[1]};
    ltr_bytes_put_mem(&c[0], dmg9[0].data, vic.off);
    size_t r = ltr_bytes_record_begin(&c[0], LTR_META_FRAME_NODES_V);
    ltr_bytes_put_mem(&c[0], body, len);
    ltr_bytes_record_end(&c[0], r);
    size_t after = vic.off + vic.size;
    ltr_bytes_put_mem(&c[0], dmg9[0].data + after, dmg9[0].len - after);
    const char *path = gen_tmp("badnodes9.ltr");
    assert_int_equal(gen_raw_trace(path, LTR_FORMAT_VERSION, c, 2), 0);
    ltr_bytes_free(&c[0]);

    ltr_trace_summary s;
    ltr_trace *t = open_scanned(path, &s);
    assert_true(s.damage >= 1);
    char msg[256];
    ltr_damage_format(ltr_trace_damage_at(t, 0), msg, sizeof msg);
    if (!strstr(msg, "bad METADATA record (kind 9)"))
        fail_msg("damage '%s' does not name the record", msg);
    for (int i = 0; i < 120; i++) {
        expect_stack(t, &tp, &sp[i], all);
        expect_stack(t, &tc, &sc[i], all);
    }
    ltr_trace_close(t);
    unlink(path);
}

static void test_kind9_layout(void **state)
{
    ltr_bytes b = {0};
    victim_body(&b, vic.parent, vic.n, zz((int64_t)vic.ids[0] - vic.base - 1), vic.ids[1] - vic.ids[0] - 1);
    assert_int_equal(b.len + LTR_RECORD_HEADER_SIZE, vic.size);
    assert_memory_equal(b.data, dmg9[0].data + vic.off + LTR_RECORD_HEADER_SIZE, b.len);
    read_damaged(b.data, 0, 1); /* and an empty body is damage */
    ltr_bytes_free(&b);
}

static void test_kind9_cut_at_every_byte(void **state)
{
    const uint8_t *body = dmg9[0].data + vic.off + LTR_RECORD_HEADER_SIZE;
    for (size_t len = 0; len < vic.size - LTR_RECORD_HEADER_SIZE; len++)
        read_damaged(body, len, len < 1); /* pid 100 is one varint byte */
}

static void test_kind9_bad_varints(void **state)
{
    uint8_t body[16 * MAX_DEPTH];
    size_t len = vic.size - LTR_RECORD_HEADER_SIZE;
    assert_true(len <= sizeof body);
    memcpy(body, dmg9[0].data + vic.off + LTR_RECORD_HEADER_SIZE, len);
    body[len - 1] |= 0x80; /* the last varint runs past the record */
    read_damaged(body, len, 0);
    memset(body, 0xff, 10); /* a pid of more than 64 bits */
    read_damaged(body, 10, 1);
    memset(body, 0xff, 5); /* a pid of more than 32 bits */
    body[5] = 0x0f;
    read_damaged(body, 6, 1);
}

static void test_kind9_bad_ids(void **state)
{
    uint64_t first = zz((int64_t)vic.ids[0] - vic.base - 1), gap1 = vic.ids[1] - vic.ids[0] - 1;
    struct { uint64_t parent, count, first, gap1; } bad[] = {
        {vic.ids[0], vic.n, first, gap1},                          /* parent not below its node */
        {vic.parent, vic.n, zz(-(int64_t)vic.base - 1), gap1},       /* first id 0 */
        {vic.parent, vic.n, zz(LTR_FRAME_NODE_MAX_ID - (int64_t)vic.base - 1), gap1}, /* first id 2^24 */
        {vic.parent, vic.n, first, LTR_FRAME_NODE_MAX_ID},           /* second id past 2^24 */
        {vic.parent, vic.n, first, LTR_FRAME_NODE_MAX_ID - 1ull - vic.ids[0]}, /* second id 2^24 */
        {vic.parent, vic.n + 1, first, gap1},                      /* a count past the record */
        {vic.parent, 70000, first, gap1},                          /* a count over 65535 */
        {LTR_FRAME_NODE_MAX_ID, vic.n, first, gap1},               /* a parent past 2^24 */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ltr_bytes b = {0};
        victim_body(&b, bad[i].parent, bad[i].count, bad[i].first, bad[i].gap1);
        read_damaged(b.data, b.len, 0);
        ltr_bytes_free(&b);
    }
}

/* ---- long records, ids far apart ---- */

#define LONG_NODES 150 /* more than the reader decodes at once (LTR_NODES_BATCH) */

/* A record of n nodes of pid 100, ids first, first + 1, ... each the parent
 * of the next, the first's parent `parent`, ips ip0 + 8 * i; as kind 9
 * (counted from base) or kind 8. bad_at < n: that node's id is 2^24 (kind 9:
 * its gap varint says so), the record is bad there. */
static void put_chain(ltr_bytes *b, int var, uint32_t parent, uint32_t first, uint32_t n, uint64_t ip0,
                      uint32_t base, uint32_t bad_at)
{
    size_t at = ltr_bytes_record_begin(b, var ? LTR_META_FRAME_NODES_V : LTR_META_FRAME_NODES);
    if (var) {
        put_uv(b, 100);
        put_uv(b, parent);
        put_uv(b, n);
    } else {
        ltr_bytes_put_u32(b, 100);
        ltr_bytes_put_u32(b, parent);
        ltr_bytes_put_u16(b, (uint16_t)n);
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id = i == bad_at ? LTR_FRAME_NODE_MAX_ID : first + i;
        if (var) {
            put_uv(b, i == 0 ? zz((int64_t)first - base - 1) : i == bad_at ? LTR_FRAME_NODE_MAX_ID : 0);
            put_uv(b, ip0 + 8u * i);
        } else {
            ltr_bytes_put_u32(b, id);
            ltr_bytes_put_u64(b, ip0 + 8u * i);
        }
    }
    ltr_bytes_record_end(b, at);
}

/* Stack id of pid 100 is the chain from `first` to id, ips from ip0. */
static void expect_chain(const ltr_trace *t, uint32_t first, uint32_t id, uint64_t ip0)
{
    const ltr_stack *s = ltr_trace_stack_find(t, 100, id);
    assert_non_null(s);
    assert_int_equal(s->frame_count, id - first + 1);
    for (uint32_t k = 0; k < s->frame_count; k++)
        assert_int_equal(s->frames[k], ip0 + 8u * (id - first - k));
}

/* A record longer than what the reader decodes at once is still all or
 * nothing: one bad past its first batch of nodes stores none of them. */
static void long_records(int var)
{
    ltr_bytes chunk = {0};
    put_chain(&chunk, var, 0, 1, LONG_NODES, 0x400000, 0, UINT32_MAX);
    put_chain(&chunk, var, LONG_NODES, LONG_NODES + 1, LONG_NODES, 0x500000, LONG_NODES, 100);
    const char *path = gen_tmp("longnodes.ltr");
    assert_int_equal(gen_raw_trace(path, var ? LTR_FORMAT_VERSION : 2, &chunk, 1), 0);
    ltr_bytes_free(&chunk);
    ltr_trace_summary s;
    ltr_trace *t = open_scanned(path, &s);
    assert_int_equal(s.damage, 1);
    expect_chain(t, 1, LONG_NODES, 0x400000);
    expect_chain(t, 1, 70, 0x400000);
    for (uint32_t id = LONG_NODES + 1; id <= 2 * LONG_NODES; id++)
        assert_null(ltr_trace_stack_find(t, 100, id));
    ltr_trace_close(t);
    unlink(path);
}

static void test_long_records_all_or_nothing(void **state)
{
    long_records(0);
    long_records(1);
}

/* Ids far above the nodes held when they come are kept apart (through a
 * map); they are still found once nodes near them have come too. */
static void test_far_ids_found(void **state)
{
    enum { FAR = 100000, CHAINS = 800, LEN = 64 }; /* 51200 nodes: ids up to FAR are near by then */
    ltr_bytes chunk = {0};
    put_chain(&chunk, 1, 0, FAR, 3, 0x600000, 0, UINT32_MAX);
    uint32_t base = FAR + 2;
    for (uint32_t c = 0; c < CHAINS; c++, base = c * LEN)
        put_chain(&chunk, 1, 0, c * LEN + 1, LEN, 0x400000, base, UINT32_MAX);
    put_chain(&chunk, 1, 1, FAR - 1, 1, 0x700000, base, UINT32_MAX); /* a near id beside the far ones */
    const char *path = gen_tmp("farnodes.ltr");
    assert_int_equal(gen_raw_trace(path, LTR_FORMAT_VERSION, &chunk, 1), 0);
    ltr_bytes_free(&chunk);
    ltr_trace_summary s;
    ltr_trace *t = open_scanned(path, &s);
    assert_int_equal(s.damage, 0);
    expect_chain(t, FAR, FAR + 2, 0x600000);
    expect_chain(t, 1, LEN, 0x400000);
    expect_chain(t, (CHAINS - 1) * LEN + 1, CHAINS * LEN, 0x400000);
    const ltr_stack *near = ltr_trace_stack_find(t, 100, FAR - 1);
    assert_non_null(near);
    assert_int_equal(near->frame_count, 2);
    assert_int_equal(near->frames[0], 0x700000);
    assert_int_equal(near->frames[1], 0x400000);
    ltr_trace_close(t);
    unlink(path);
}

/* One FRAME_NODES record of one node. */
static void put_node(ltr_bytes *b, uint32_t pid, uint32_t parent, uint32_t id, uint64_t ip)
{
    size_t r = ltr_bytes_record_begin(b, LTR_META_FRAME_NODES);
    ltr_bytes_put_u32(b, pid);
    ltr_bytes_put_u32(b, parent);
    ltr_bytes_put_u16(b, 1);
    ltr_bytes_put_u32(b, id);
    ltr_bytes_put_u64(b, ip);
    ltr_bytes_record_end(b, r);
}

/* One STACK record of one frame. */
static void put_stack1(ltr_bytes *b, uint32_t pid, uint32_t id, uint64_t ip)
{
    size_t r = ltr_bytes_record_begin(b, LTR_META_STACK);
    ltr_bytes_put_u32(b, pid);
    ltr_bytes_put_u32(b, id);
    ltr_bytes_put_u16(b, 1);
    ltr_bytes_put_u64(b, ip);
    ltr_bytes_record_end(b, r);
}

/* One STACK_REF record: stack id is its one frame ip, then none of base's. */
static void put_stack_ref1(ltr_bytes *b, uint32_t pid, uint32_t id, uint32_t base, uint64_t ip)
{
    size_t r = ltr_bytes_record_begin(b, LTR_META_STACK_REF);
    ltr_bytes_put_u32(b, pid);
    ltr_bytes_put_u32(b, id);
    ltr_bytes_put_u32(b, base);
    ltr_bytes_put_u16(b, 0);
    ltr_bytes_put_u16(b, 1);
    ltr_bytes_put_u64(b, ip);
    ltr_bytes_record_end(b, r);
}

/* The innermost frame of stack (pid, id), or 0 when it is unknown. */
static uint64_t innermost(const ltr_trace *t, uint32_t pid, uint32_t id)
{
    const ltr_stack *s = ltr_trace_stack_find(t, pid, id);
    return s ? s->frames[0] : 0;
}

/* Any traced process can append records for another pid to the session's
 * metadata: a record that gives a known stack of the image other frames
 * is damage, and that stack unknown from then on (a traced program made
 * every stack of another one its own, and the trace said it was whole).
 * A STACK record for a pid whose image has frame nodes, before its first
 * node or after, is another program's: left out as FORGED, the nodes'
 * stack kept (taken as a conflict, it made the stack unknown). The same
 * records in a version 2 trace replace as they did, without damage. */
static void test_redefinition_is_damage(void **state)
{
    ltr_bytes chunk = {0};
    put_stack1(&chunk, 100, 3, 0xbad3);   /* a STACK record before the pid's first node... */
    put_node(&chunk, 100, 0, 1, 0x1000);
    put_node(&chunk, 100, 1, 2, 0x2000);
    put_node(&chunk, 100, 0, 1, 0xbad1);  /* node 1 told again, other frame: stacks 1 and 2 */
    put_node(&chunk, 100, 0, 3, 0x3000);  /* ...then the node of its id */
    put_node(&chunk, 100, 0, 4, 0x4000);
    put_node(&chunk, 100, 0, 4, 0x4000);  /* the same again: a repeat, not damage */
    put_stack1(&chunk, 100, 4, 0xbad4);   /* a STACK record for a stack of nodes */
    put_stack1(&chunk, 100, 9, 0xbad9);   /* and for an id no node told (its node lost?) */
    put_stack_ref1(&chunk, 100, 10, 9, 0xbada); /* the writer's STACK_REF of the next, on the one left out */
    put_stack1(&chunk, 200, 5, 0x5000);
    put_stack1(&chunk, 200, 5, 0x5000);
    put_stack1(&chunk, 200, 5, 0xbad5);   /* STACK records alone disagree too */
    put_node(&chunk, 100, 0, 6, 0x6000);
    gen_process(&chunk, 100);             /* an exec: the new image numbers its own */
    put_node(&chunk, 100, 0, 6, 0x7000);
    const char *path = gen_tmp("redefined.ltr");
    assert_int_equal(gen_raw_trace(path, LTR_FORMAT_VERSION, &chunk, 1), 0);
    ltr_trace_summary s;
    ltr_trace *t = open_scanned(path, &s);
    assert_int_equal(s.damage, 6);
    uint32_t old = ltr_trace_image_at(t, 0)->key; /* pid 100 before its exec */
    for (uint32_t id = 1; id <= 2; id++) /* neither definition taken */
        assert_int_equal(innermost(t, old, id), 0);
    assert_int_equal(innermost(t, old, 9), 0);
    assert_int_equal(innermost(t, old, 10), 0);
    assert_int_equal(innermost(t, 200, 5), 0);
    assert_int_equal(innermost(t, old, 3), 0x3000); /* the nodes', not the STACK records' */
    assert_int_equal(innermost(t, old, 4), 0x4000);
    assert_int_equal(innermost(t, 100, 6), 0x7000);
    assert_int_equal(innermost(t, old, 6), 0x6000);
    uint64_t forged = 0;
    for (size_t i = 0; ltr_trace_damage_at(t, i); i++)
        if (ltr_trace_damage_at(t, i)->kind == LTR_DAMAGE_FORGED)
            forged += ltr_trace_damage_at(t, i)->count;
    assert_int_equal(forged, 4); /* the STACK_REF too, not a bad record (its base was left out) */
    const ltr_damage *d = ltr_trace_damage_at(t, 0);
    assert_non_null(strstr(d->detail, "STACK record for stack 3 of pid 100, whose stacks come from frame nodes"));
    ltr_trace_close(t);

    assert_int_equal(gen_raw_trace(path, 2, &chunk, 1), 0);
    t = open_scanned(path, &s);
    assert_int_equal(s.damage, 0);
    old = ltr_trace_image_at(t, 0)->key;
    assert_int_equal(innermost(t, old, 1), 0xbad1);
    assert_int_equal(innermost(t, old, 2), 0x2000);
    assert_int_equal(innermost(t, old, 4), 0xbad4);
    assert_int_equal(innermost(t, 200, 5), 0xbad5);
    ltr_trace_close(t);
    ltr_bytes_free(&chunk);
    unlink(path);
}

/* One node for each of many pids, as a traced program can write for
 * made-up pids: the reader's memory follows the nodes, a few hundred bytes
 * each. It was a 16 kB page each: 200 000 of them (a 208 kB trace) took
 * `ltr info` to 3.1 GB. */
static void test_one_node_pids_take_little(void **state)
{
    enum { PIDS = 10000 };
    ltr_bytes chunk = {0};
    for (uint32_t pid = 1; pid <= PIDS; pid++)
        put_node(&chunk, pid, 0, 1 + pid % 900, 0x1000);
    const char *path = gen_tmp("pids.ltr");
    assert_int_equal(gen_raw_trace(path, LTR_FORMAT_VERSION, &chunk, 1), 0);
    ltr_bytes_free(&chunk);
    size_t before = mallinfo2().uordblks;
    ltr_trace_summary s;
    ltr_trace *t = open_scanned(path, &s);
    size_t used = mallinfo2().uordblks - before;
    assert_int_equal(s.damage, 0);
    assert_int_equal(innermost(t, 77, 1 + 77 % 900), 0x1000);
    if (used > (size_t)PIDS * 1024)
        fail_msg("%zu bytes held for %d nodes", used, PIDS);
    ltr_trace_close(t);
    unlink(path);
}

/* The bases of one chunk: the entry last set is met first (nodevar.h), and
 * must be each pid's own and keep a spoil, through growth and a clear. */
static void test_bases_each_pid_own(void **state)
{
    (void)state;
    ltr_node_bases b = {0};
    uint32_t base;
    for (uint32_t pid = 1; pid <= 100; pid++) /* grown several times */
        ltr_node_bases_set(&b, pid, pid * 10);
    for (uint32_t pid = 100; pid >= 1; pid--) {
        assert_int_equal(ltr_node_bases_get(&b, pid, &base), 0);
        assert_int_equal(base, pid * 10);
    }
    ltr_node_bases_set(&b, 7, 70);
    ltr_node_bases_set(&b, 7, 71); /* the pid just set, set again */
    assert_int_equal(ltr_node_bases_get(&b, 7, &base), 0);
    assert_int_equal(base, 71);
    ltr_node_bases_spoil(&b, 7); /* a bad record of the pid just set */
    assert_int_equal(ltr_node_bases_get(&b, 7, &base), LTR_NODE_BASE_SPOILED);
    assert_int_equal(ltr_node_bases_get(&b, 8, &base), 0);
    assert_int_equal(base, 80);
    ltr_node_bases_clear(&b);
    assert_int_equal(ltr_node_bases_get(&b, 7, &base), 0);
    assert_int_equal(base, 0);
    ltr_node_bases_set(&b, 7, 5);
    ltr_node_bases_spoil_all(&b);
    assert_int_equal(ltr_node_bases_get(&b, 7, &base), LTR_NODE_BASE_SPOILED);
    ltr_node_bases_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stacks_rebuilt_exactly),
        cmocka_unit_test(test_lost_chunk_never_wrong),
        cmocka_unit_test(test_bad_record_is_damage),
        cmocka_unit_test(test_kind9_same_stacks_as_kind8),
        cmocka_unit_test_setup_teardown(test_kind9_layout, setup_damage, teardown_damage),
        cmocka_unit_test_setup_teardown(test_kind9_cut_at_every_byte, setup_damage, teardown_damage),
        cmocka_unit_test_setup_teardown(test_kind9_bad_varints, setup_damage, teardown_damage),
        cmocka_unit_test_setup_teardown(test_kind9_bad_ids, setup_damage, teardown_damage),
        cmocka_unit_test(test_long_records_all_or_nothing),
        cmocka_unit_test(test_far_ids_found),
        cmocka_unit_test(test_redefinition_is_damage),
        cmocka_unit_test(test_one_node_pids_take_little),
        cmocka_unit_test(test_bases_each_pid_own),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
