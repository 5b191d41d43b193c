/*
 * tests/format/test_refs.c — address references (format 4, docs/trace-format.md
 * "Address references"): the writer tells frees' addresses as references to
 * earlier allocations, and allocations' as references to earlier frees, and
 * every reader gets back exactly the addresses
 * written, whatever order threads' blocks reach the file in (frees of another
 * thread's blocks written before their allocations, reuse of addresses,
 * reallocs in place and moved); across the window's edge; with a chunk lost
 * to damage (references into it are reported, never resolved to something
 * else) and a chunk the writer could not write (nothing refers to it); a
 * block whose record cannot be read; a producer's layout that names pnew
 * itself, or repeats a heap layout's id with its size field elsewhere; and
 * a version 3 trace, read as it is and re-encoded by ltr merge.
 * A sequence's window of 4 MiB touches only the slots it fills, from a
 * heap grown ahead of its use as the analysis's is (refseq.c, slots_new).
 * ltr analyze's own decoding (its fast path) finds the same as on the events
 * stored plain, and after a lost chunk the same events as the reader.
 * A complete trace's index (format/chunkindex.h) names every block with its
 * earliest time, so that no event comes before what it says is still to
 * come; a trace cut short has none, a damaged one is not used, and one that
 * lies makes the analysis count events late, never lose them; the analysis
 * with the index is the analysis without it. Its spans (the SPANS chunk:
 * each entry's process, events and latest time) come with it, are not used
 * when they do not name every entry, and tell how many events wait behind
 * a block as a bound.
 */
#include "analyze/analyze.h"
#include "base/heap_events.h"
#include "format/chunk.h"
#include "format/chunkindex.h"
#include "format/compact.h"
#include "format/allocmodel.h"
#include "format/chunk.h"
#include "format/columns.h"
#include "format/merge.h"
#include "format/reader.h"
#include "format/refs.h"
#include "gen.h"

#include <ltr/trace.h>

#include <setjmp.h>
#include <malloc.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

enum { L_ALLOC = 1, L_FREE = 2, L_REALLOC = 3, L_UNKNOWN = 99, L_BAD = 5, L_NOTE = 7 };
#define TS0 1000000000000ull
#define NPIDS 2
#define NTHREADS 3
#define NADDR 48
/* The flags of a format 6 block (ltr_refs_block) */
#define F6 (LTR_BLOCK_FLAG_MODEL | LTR_BLOCK_FLAG_NEXT)

/* One heap event as the agent wrote it; its timestamp is unique and names it. */
typedef struct op {
    uint32_t pid, tid;
    int kind; /* L_ALLOC, L_FREE, L_REALLOC */
    uint64_t addr, old, size, ts;
} op;

typedef struct script {
    op *v;
    size_t n;
} script;

/* The heap agent's three layouts (docs/heap-events.md) under provider `prov`,
 * and the processes and threads of the script. */
static int size_kind; /* 0: size a uvar, 1: a u64, 2: no size field (the model then takes 0) */
static void heap_metadata(ltr_bytes *b, const char *prov)
{
    ltr_guid g;
    ltr_guid_from_name(prov, &g);
    size_t r = ltr_bytes_record_begin(b, LTR_META_PROVIDER);
    ltr_bytes_put_mem(b, g.b, 16);
    ltr_bytes_put_str(b, prov);
    ltr_bytes_record_end(b, r);
    /* pvar 16, uvar 14, u8 1 */
    static const char *const al[3] = {"16:address,14:size,14:stack,1:function", "16:address,4:size,14:stack,1:function",
                                      "16:address,14:stack,1:function"};
    static const char *const re[3] = {"16:old_address,16:address,14:size,14:stack,1:function",
                                      "16:old_address,16:address,4:size,14:stack,1:function",
                                      "16:old_address,16:address,14:stack,1:function"};
    gen_layout(b, L_ALLOC, &g, LTR_HEAP_EV_ALLOC, "Alloc", al[size_kind]);
    gen_layout(b, L_FREE, &g, LTR_HEAP_EV_FREE, "Free", "16:address,1:function");
    gen_layout(b, L_REALLOC, &g, LTR_HEAP_EV_REALLOC, "Realloc", re[size_kind]);
    for (uint32_t p = 0; p < NPIDS; p++) {
        r = ltr_bytes_record_begin(b, LTR_META_PROCESS);
        ltr_bytes_put_u32(b, 100 + p);
        ltr_bytes_put_u32(b, 1);
        ltr_bytes_put_u64(b, TS0 - 5);
        ltr_bytes_put_str(b, "/bin/x");
        ltr_bytes_put_u16(b, 0);
        ltr_bytes_record_end(b, r);
    }
}

/* 1: an address is always asked for with one of three sizes, by its number,
 * so that freed blocks come back to requests of their size class as an
 * allocator's would (the allocator model's case); 0: sizes at random. */
static int sizes_by_address;

/* A random heap of NPIDS processes with NTHREADS threads each: any thread
 * frees any live block of its process, addresses come back soon (NADDR per
 * process, the same numbers in every process), reallocs stay or move. */
static script make_script(size_t n, unsigned seed)
{
    script s = {calloc(n, sizeof(op)), n};
    uint8_t live[NPIDS][NADDR] = {{0}};
    srand(seed);
    for (size_t i = 0; i < n; i++) {
        uint32_t p = (uint32_t)rand() % NPIDS;
        op *o = &s.v[i];
        o->pid = 100 + p;
        o->tid = 1000 + p * 10 + (uint32_t)rand() % NTHREADS;
        o->ts = TS0 + i * 1000;
        o->size = 1 + (uint64_t)rand() % 5000;
        int a = rand() % NADDR, b = rand() % NADDR;
        if (!live[p][a]) {
            o->kind = L_ALLOC;
            live[p][a] = 1;
        } else if (rand() % 3) {
            o->kind = L_FREE;
            live[p][a] = 0;
        } else {
            o->kind = L_REALLOC;
            o->old = 0x7f0000001000ull + (uint64_t)a * 32;
            b = live[p][b] ? a : b; /* in place, or to a free address */
            live[p][a] = 0;
            live[p][b] = 1;
            a = b;
        }
        o->addr = 0x7f0000001000ull + (uint64_t)a * 32;
        if (sizes_by_address)
            o->size = 8 + (uint64_t)(a % 3) * 40 + (uint64_t)rand() % 9;
    }
    return s;
}

/* A script whose addresses come back to requests of their size class (the allocator model's case). */
static script model_script(size_t n, unsigned seed)
{
    sizes_by_address = 1;
    script s = make_script(n, seed);
    sizes_by_address = 0;
    return s;
}

/* A growing heap as glibc's makes one: each thread cuts its new blocks one
 * after another from its own free space (ltr_model_next), and now and then
 * a freed block of the process comes back to a request of its size, or a
 * realloc moves a block to the thread's free space. Frees take any live
 * block of the process, from any of its threads; half the reallocs stay in
 * place. */
static script top_script(size_t n, unsigned seed)
{
    enum { LIVE = 64 };
    script s = {calloc(n, sizeof(op)), n};
    uint64_t top[NPIDS][NTHREADS], live[NPIDS][LIVE][2] = {{{0}}}, freed[NPIDS][2] = {{0}};
    for (uint32_t p = 0; p < NPIDS; p++)
        for (uint32_t t = 0; t < NTHREADS; t++)
            top[p][t] = 0x7f0000000000ull + ((uint64_t)(p * NTHREADS + t) << 32);
    srand(seed);
    for (size_t i = 0; i < n; i++) {
        uint32_t p = (uint32_t)rand() % NPIDS, t = (uint32_t)rand() % NTHREADS, k = (uint32_t)rand() % LIVE;
        op *o = &s.v[i];
        o->pid = 100 + p;
        o->tid = 1000 + p * 10 + t;
        o->ts = TS0 + i * 1000;
        o->size = 1 + (uint64_t)rand() % 600;
        if (live[p][k][0] && rand() % 4) {
            o->kind = L_FREE;
            o->addr = live[p][k][0];
            freed[p][0] = o->addr;
            freed[p][1] = live[p][k][1];
            live[p][k][0] = 0;
            continue;
        }
        o->kind = live[p][k][0] ? L_REALLOC : L_ALLOC;
        o->old = live[p][k][0];
        if (o->kind == L_REALLOC && rand() % 2) { /* grown in place */
            o->addr = o->old;
        } else if (o->kind == L_ALLOC && freed[p][0] && rand() % 4 == 0) { /* the last free comes back */
            o->addr = freed[p][0];
            o->size = freed[p][1];
            freed[p][0] = 0;
        } else {
            o->addr = top[p][t];
            top[p][t] = ltr_model_next(o->addr, o->size);
        }
        live[p][k][0] = o->addr;
        live[p][k][1] = o->size;
    }
    return s;
}

/* A structure built, then torn down in the order it was built: each
 * thread allocates n / 2 / NPIDS / NTHREADS blocks, then frees them oldest
 * first, keeping every seventh to free at the very end. */
static script teardown_script(size_t n)
{
    script s = {calloc(n, sizeof(op)), 0};
    size_t per = n / 2 / (NPIDS * NTHREADS);
    for (uint32_t p = 0; p < NPIDS; p++)
        for (uint32_t t = 0; t < NTHREADS; t++) {
            uint64_t a = 0x7f0000000000ull + ((uint64_t)(p * NTHREADS + t) << 32);
            op *first = &s.v[s.n];
            for (size_t i = 0; i < per; i++, a += 48)
                s.v[s.n++] = (op){.pid = 100 + p, .tid = 1000 + p * 10 + t, .kind = L_ALLOC, .addr = a, .size = 40};
            for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < per; i++)
                    if ((i % 7 == 0) == pass)
                        s.v[s.n++] = (op){.pid = 100 + p, .tid = 1000 + p * 10 + t, .kind = L_FREE,
                                          .addr = first[i].addr};
        }
    for (size_t i = 0; i < s.n; i++)
        s.v[i].ts = TS0 + i * 1000;
    return s;
}

/* A program attached to: each thread frees, in the order of their
 * addresses, blocks allocated before the trace began (no allocation in the
 * trace to refer to, so each is stored as itself), and between them
 * allocates and frees blocks of its own. Returns the script; *unseen: the
 * frees of blocks the trace never saw allocated. */
static script attached_script(size_t n, size_t *unseen)
{
    script s = {calloc(n, sizeof(op)), 0};
    size_t per = n / (NPIDS * NTHREADS);
    *unseen = 0;
    for (uint32_t p = 0; p < NPIDS; p++)
        for (uint32_t t = 0; t < NTHREADS; t++) {
            uint32_t tid = 1000 + p * 10 + t;
            uint64_t old = 0x560000000000ull + ((uint64_t)(p * NTHREADS + t) << 28);
            uint64_t fresh = 0x7f0000000000ull + ((uint64_t)(p * NTHREADS + t) << 32);
            for (size_t i = 0; i + 3 <= per; i += 3, old += 48 + (i % 5) * 16, fresh += 64) {
                s.v[s.n++] = (op){.pid = 100 + p, .tid = tid, .kind = L_FREE, .addr = old};
                s.v[s.n++] = (op){.pid = 100 + p, .tid = tid, .kind = L_ALLOC, .addr = fresh, .size = 40};
                s.v[s.n++] = (op){.pid = 100 + p, .tid = tid, .kind = L_FREE, .addr = fresh};
                ++*unseen;
            }
        }
    for (size_t i = 0; i < s.n; i++)
        s.v[i].ts = TS0 + i * 1000;
    return s;
}

static void put_cevent(ltr_bytes *b, const op *o, uint64_t prev)
{
    uint8_t payload[64];
    size_t n = 0;
    if (o->kind == L_REALLOC)
        n += ltr_put_uvar(payload + n, o->old);
    n += ltr_put_uvar(payload + n, o->addr);
    if (o->kind != L_FREE) {
        if (size_kind == 0)
            n += ltr_put_uvar(payload + n, o->size);
        else if (size_kind == 1)
            ltr_put_u64(payload + n, o->size), n += 8;
        n += ltr_put_uvar(payload + n, 7);
    }
    payload[n++] = o->kind == L_FREE ? 20 : 1;
    uint8_t *h = ltr_bytes_grow(b, LTR_CEVENT_HEADER_MAX + n);
    size_t hl = ltr_put_cevent_header(h, (uint32_t)o->kind, o->ts, prev, (uint32_t)n);
    memcpy(h + hl, payload, n);
    b->len -= LTR_CEVENT_HEADER_MAX - hl;
}

static uint64_t dropped, dropped_buffers;

static void on_drop(void *ctx, const ltr_block_info *info, uint32_t bytes)
{
    (void)ctx;
    (void)bytes;
    dropped += info->event_count;
    dropped_buffers += info->nbuffers ? info->nbuffers : 1;
}

/* A writer with the header written, and no metadata yet. */
static ltr_writer *open_bare_writer(const char *path, size_t chunk_target)
{
    ltr_writer *w;
    ltr_error err;
    assert_int_equal(ltr_writer_open(&w, path, &err), 0);
    ltr_writer_set_chunk_target(w, chunk_target);
    ltr_writer_set_drop_callback(w, on_drop, NULL);
    ltr_bytes b = {0};
    gen_header(&b);
    assert_int_equal(ltr_writer_kv(w, LTR_CHUNK_HEADER, &b, &err), 0);
    ltr_bytes_free(&b);
    return w;
}

static ltr_writer *open_heap_writer(const char *path, const char *prov, size_t chunk_target)
{
    ltr_writer *w = open_bare_writer(path, chunk_target);
    ltr_error err;
    ltr_bytes b = {0};
    heap_metadata(&b, prov);
    assert_int_equal(ltr_writer_metadata(w, b.data, b.len, &err), 0);
    ltr_bytes_free(&b);
    return w;
}

static size_t plain_every; /* every n-th block asked to go plain (a recorder behind), 0: none */

/* Writes the script's events thread by thread, a few at a time, the threads
 * taken in random order (each thread's blocks in its own order), as the
 * recorder hands them over; from op `from` to `to`. hook(i) runs before the
 * i-th block. */
static void write_blocks(ltr_writer *w, const script *s, size_t from, size_t to, unsigned seed,
                         void (*hook)(ltr_writer *, size_t))
{
    size_t next[NPIDS * NTHREADS];
    for (size_t t = 0; t < NPIDS * NTHREADS; t++)
        next[t] = from;
    srand(seed);
    ltr_bytes recs = {0};
    uint64_t seq = 0;
    for (size_t blocks = 0;; blocks++) {
        size_t left = 0;
        for (size_t t = 0; t < NPIDS * NTHREADS; t++)
            left += next[t] < to;
        if (!left)
            break;
        size_t t;
        do
            t = (size_t)rand() % (NPIDS * NTHREADS);
        while (next[t] >= to);
        uint32_t tid = 1000 + (uint32_t)(t / NTHREADS) * 10 + (uint32_t)(t % NTHREADS);
        recs.len = 0;
        uint32_t count = 0, want = 1 + (uint32_t)rand() % 12;
        uint64_t prev = 0;
        size_t i = next[t];
        for (; i < to && count < want; i++)
            if (s->v[i].tid == tid) {
                put_cevent(&recs, &s->v[i], prev);
                prev = s->v[i].ts;
                count++;
            }
        next[t] = i;
        if (!count)
            continue;
        if (hook)
            hook(w, blocks);
        ltr_block_info info = {.pid = 100 + (uint32_t)(t / NTHREADS), .tid = tid, .seq = seq++, .event_count = count,
                               .plain = plain_every && blocks % plain_every == 0};
        ltr_error err;
        (void)ltr_writer_block(w, &info, recs.data, recs.len, &err); /* a refused chunk is counted by on_drop */
    }
    ltr_bytes_free(&recs);
}

/* Reading back: every event delivered must be the script's event of its
 * timestamp, field for field. */
typedef struct readback {
    size_t delivered, refs_blocks;
    size_t frees, by_ref;        /* frees, and those stored as a reference (pref code not 0) */
    size_t allocs, allocs_by_ref; /* allocations, and those whose address refers to a free (pnew code not 0) */
    size_t allocs_by_place;       /* those told by their place in the allocator model's list (code 1..16) */
    size_t allocs_by_next;        /* those told as the address after the block's previous allocation */
    size_t reallocs_same;         /* reallocs whose new address is told as their old one */
    size_t by_freed_next;         /* frees told as naming the allocation after the previous free's */
    size_t frees_plain, frees_plain_short; /* frees stored as themselves, and those of them in 2 bytes or fewer */
    uint64_t damage, unresolved;
} readback;

static void check_event(const script *s, const ltr_event *ev)
{
    assert_true(ev->ts >= TS0 && (ev->ts - TS0) % 1000 == 0 && (ev->ts - TS0) / 1000 < s->n);
    const op *o = &s->v[(ev->ts - TS0) / 1000];
    assert_int_equal(ev->pid, o->pid);
    assert_int_equal(ev->tid, o->tid);
    assert_int_equal(ev->layout->event_id, o->kind);
    uint64_t v = 0;
    assert_int_equal(ltr_event_get_u64(ev, "address", &v), 0);
    assert_int_equal(v, o->addr);
    if (o->kind == L_REALLOC) {
        assert_int_equal(ltr_event_get_u64(ev, "old_address", &v), 0);
        assert_int_equal(v, o->old);
    }
    if (o->kind != L_FREE && size_kind != 2) {
        assert_int_equal(ltr_event_get_u64(ev, "size", &v), 0);
        assert_int_equal(v, o->size);
    }
}

static uint32_t expect_version = LTR_FORMAT_VERSION;

static readback read_back(const char *path, const script *s)
{
    readback r = {0};
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    assert_int_equal(ltr_trace_version(t), expect_version);
    const ltr_event *ev;
    int rc;
    while ((rc = ltr_trace_next(t, &ev, &err)) > 0) {
        check_event(s, ev);
        r.delivered++;
        r.refs_blocks += (ev->block_flags & LTR_BLOCK_FLAG_REFS) != 0;
        if (ev->layout->event_id == L_FREE) {
            r.frees++;
            r.by_ref += ev->layout->fields[0].type == LTR_TYPE_PREF && ev->payload[ev->field_offsets[0]] != 0;
            r.by_freed_next += (ev->block_flags & LTR_BLOCK_FLAG_NEXT) &&
                               ev->payload[ev->field_offsets[0]] == LTR_MODEL_FREED_NEXT;
            if (ev->layout->fields[0].type == LTR_TYPE_PREF && ev->payload[ev->field_offsets[0]] == 0) {
                uint64_t v; /* the code, then what was stored */
                size_t len = ltr_get_uvar(ev->payload + ev->field_offsets[0] + 1,
                                          ev->payload_size - ev->field_offsets[0] - 1, &v);
                r.frees_plain++;
                r.frees_plain_short += len > 0 && len <= 2;
            }
        }
        if (ev->layout->event_id == L_ALLOC) {
            r.allocs++;
            uint8_t code = ev->payload[ev->field_offsets[0]];
            r.allocs_by_ref += ev->layout->fields[0].type == LTR_TYPE_PNEW && code != 0;
            r.allocs_by_place += (ev->block_flags & LTR_BLOCK_FLAG_MODEL) && code >= 1 && code <= LTR_MODEL_LIST;
            r.allocs_by_next += (ev->block_flags & LTR_BLOCK_FLAG_NEXT) && code == LTR_MODEL_NEXT;
        }
        if (ev->layout->event_id == L_REALLOC) /* old_address, then address */
            r.reallocs_same += (ev->block_flags & LTR_BLOCK_FLAG_NEXT) &&
                               ev->payload[ev->field_offsets[1]] == LTR_MODEL_SAME;
    }
    assert_int_equal(rc, 0);
    ltr_trace_summary sum;
    ltr_trace_summarize(t, &sum);
    r.damage = sum.damage;
    for (size_t i = 0; i < ltr_trace_damage_count(t); i++)
        if (strstr(ltr_trace_damage_at(t, i)->detail, "refers to an allocation the file does not hold"))
            r.unresolved += ltr_trace_damage_at(t, i)->count;
    ltr_trace_close(t);
    return r;
}

/* The script written through a writer (chunks of 4 KiB, blocks as
 * write_blocks makes them), with off (one of the writer's codes' setters:
 * an older format's) turned off, unless NULL. */
static void write_script_without(const char *path, const script *s, unsigned seed,
                                 void (*off)(ltr_writer *, int))
{
    ltr_writer *w = open_heap_writer(path, LTR_HEAP_PROVIDER, 4096);
    if (off)
        off(w, 0);
    write_blocks(w, s, 0, s->n, seed, NULL);
    ltr_error err;
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
}

static void write_script(const char *path, const script *s, unsigned seed, int model)
{
    write_script_without(path, s, seed, model ? NULL : ltr_writer_set_model);
}

/* The script's thread-1000 events in whole buffers of 10 events, sequence
 * numbers from seq0 + 0, 1, 2... (gap: one is skipped at buffer gap;
 * apart: every other one, each buffer told as the thread's next, as a save
 * gives a thread's buffers that another thread's alternated with). */
static size_t write_thread_buffers(ltr_writer *w, const script *s, uint64_t seq0, size_t gap, bool apart)
{
    ltr_bytes recs = {0};
    size_t buffers = 0;
    for (size_t i = 0; i < s->n;) {
        recs.len = 0;
        uint32_t count = 0;
        uint64_t prev = 0; /* a buffer's first record counts from 0 */
        for (; i < s->n && count < 10; i++)
            if (s->v[i].tid == 1000 && s->v[i].pid == 100) {
                put_cevent(&recs, &s->v[i], prev);
                prev = s->v[i].ts;
                count++;
            }
        if (!count)
            break;
        ltr_block_info info = {.pid = 100, .tid = 1000, .seq = seq0 + buffers + (gap && buffers >= gap),
                               .event_count = count, .thread_next = apart};
        info.seq += apart ? buffers : 0;
        ltr_error err;
        assert_int_equal(ltr_writer_block(w, &info, recs.data, recs.len, &err), 0);
        buffers++;
    }
    ltr_bytes_free(&recs);
    return buffers;
}

/* The script's thread-1000 events alone, their times 1000 ns apart, as
 * check_event wants. */
static script thread_1000(const script *s)
{
    script one = {calloc(s->n, sizeof(op)), 0};
    assert_non_null(one.v);
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].tid == 1000 && s->v[i].pid == 100) {
            one.v[one.n] = s->v[i];
            one.v[one.n].ts = TS0 + one.n * 1000;
            one.n++;
        }
    return one;
}

/* Buffer blocks in the trace at path, read whole. */
static uint64_t blocks_in(const char *path)
{
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    const ltr_event *ev;
    while (ltr_trace_next(t, &ev, &err) > 0)
        ;
    ltr_trace_summary sum;
    ltr_trace_summarize(t, &sum);
    ltr_trace_close(t);
    return sum.blocks;
}

/* A thread's consecutive whole buffers are one block in the file (a
 * block's columns start afresh: 16 KB buffers made sqlite3's trace 2.7
 * times the size of 256 KB ones), every event as it was, timestamps
 * included; a gap in the sequence numbers starts a block anew; a dropped
 * merged block counts each of its buffers. */
static void test_consecutive_buffers_one_block(void **state)
{
    (void)state;
    script s = make_script(6000, 7);
    script one = thread_1000(&s);
    const char *path = gen_tmp("merged.ltr");
    ltr_writer *w = open_heap_writer(path, LTR_HEAP_PROVIDER, 1 << 20);
    size_t buffers = write_thread_buffers(w, &one, 1, 0, false);
    ltr_error err;
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
    assert_true(buffers > 20);
    readback r = read_back(path, &one);
    assert_int_equal(r.delivered, one.n);
    assert_int_equal(r.damage, 0);
    assert_int_equal(blocks_in(path), 1); /* every buffer in one block */
    /* a sequence number skipped: two blocks */
    unlink(path);
    w = open_heap_writer(path, LTR_HEAP_PROVIDER, 1 << 20);
    write_thread_buffers(w, &one, 1, 5, false);
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
    assert_int_equal(blocks_in(path), 2);
    r = read_back(path, &one);
    assert_int_equal(r.delivered, one.n);
    /* a merged block that cannot be written counts every buffer it held */
    unlink(path);
    w = open_heap_writer(path, LTR_HEAP_PROVIDER, 1 << 20);
    ltr_writer_set_limit(w, ltr_writer_size(w) + 64);
    dropped = dropped_buffers = 0;
    buffers = write_thread_buffers(w, &one, 1, 0, false);
    assert_int_not_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
    assert_int_equal(dropped, one.n);
    assert_int_equal(dropped_buffers, buffers);
    unlink(path);
    free(one.v);
    free(s.v);
}

/* A save gives a thread's buffers together, though another thread's came
 * between them in the ring (recorder/savewin.c): told as the thread's next,
 * they are merged whatever their sequence numbers, not told, each is a
 * block; merged up to the bound set (ltr_writer_set_merge_max), every event
 * as it was. */
static void test_thread_next_buffers_one_block(void **state)
{
    (void)state;
    script s = make_script(6000, 7);
    script one = thread_1000(&s);
    const char *path = gen_tmp("apart.ltr");
    ltr_error err;
    for (int bounded = 0; bounded < 2; bounded++) {
        ltr_writer *w = open_heap_writer(path, LTR_HEAP_PROVIDER, 1 << 20);
        if (bounded)
            ltr_writer_set_merge_max(w, 400); /* a few buffers of 10 events a block */
        size_t buffers = write_thread_buffers(w, &one, 1, 0, true);
        assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
        ltr_writer_close(w);
        assert_true(buffers > 20);
        readback r = read_back(path, &one);
        assert_int_equal(r.delivered, one.n);
        assert_int_equal(r.damage, 0);
        uint64_t blocks = blocks_in(path);
        if (bounded ? blocks <= buffers / 3 || blocks >= buffers : blocks != 1)
            fail_msg("%llu blocks of %zu buffers", (unsigned long long)blocks, buffers);
        unlink(path);
    }
    free(one.v);
    free(s.v);
}

static void test_every_address_comes_back(void **state)
{
    (void)state;
    script s = make_script(20000, 1);
    const char *path = gen_tmp("refs.ltr"), *plain = gen_tmp("plain.ltr");
    write_script(path, &s, 2, 1);
    readback r = read_back(path, &s);
    assert_int_equal(r.delivered, s.n);
    assert_int_equal(r.damage, 0);
    assert_int_equal(r.refs_blocks, s.n); /* every heap block is told with references */
    print_message("%zu frees, %zu of them by reference; %zu allocations, %zu by reference to a free\n", r.frees,
                  r.by_ref, r.allocs, r.allocs_by_ref);
    assert_true(r.by_ref * 2 > r.frees);
    assert_true(r.allocs_by_ref * 2 > r.allocs); /* NADDR addresses: nearly every one was freed before */
    /* the same events under another provider's name go as they are */
    ltr_error err;
    ltr_writer *w = open_heap_writer(plain, "Some.Other.Heap", 4096);
    write_blocks(w, &s, 0, s.n, 2, NULL);
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
    ltr_trace *t;
    ltr_trace_summary sum;
    assert_int_equal(ltr_trace_open(plain, &t, &err), 0);
    assert_int_equal(ltr_trace_scan(t, &sum, &err), 0);
    assert_int_equal(sum.events, s.n);
    assert_int_equal(ltr_trace_layout_find(t, L_FREE)->fields[0].type, LTR_TYPE_PVAR);
    ltr_trace_close(t);
    unlink(path);
    unlink(plain);
    free(s.v);
}

/* Blocks written plain (the recorder behind) among the others: their
 * addresses stored as themselves, nothing counted; references around them
 * still right. */
static void test_plain_blocks_among_the_others(void **state)
{
    (void)state;
    script s = make_script(20000, 9);
    const char *path = gen_tmp("plain.ltr");
    ltr_writer *w = open_heap_writer(path, LTR_HEAP_PROVIDER, 4096);
    plain_every = 3;
    write_blocks(w, &s, 0, s.n, 10, NULL);
    plain_every = 0;
    ltr_error err;
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
    readback r = read_back(path, &s);
    print_message("%zu of %zu events in blocks with references; %zu frees by reference\n", r.refs_blocks, s.n,
                  r.by_ref);
    assert_int_equal(r.delivered, s.n);
    assert_int_equal(r.damage, 0);
    assert_true(r.refs_blocks < s.n && r.refs_blocks * 2 > s.n);
    assert_true(r.by_ref > 0);
    unlink(path);
    free(s.v);
}

/* np processes each allocate a block, then each frees it, every event a block. */
static readback processes_run(uint32_t np)
{
    script s = {calloc(2 * np, sizeof(op)), 2 * np};
    for (uint32_t p = 0; p < np; p++) {
        s.v[p] = (op){1000 + p, 1000 + p, L_ALLOC, 0x4000 + 16 * p, 0, 8, TS0 + p * 1000};
        s.v[np + p] = (op){1000 + p, 1000 + p, L_FREE, 0x4000 + 16 * p, 0, 0, TS0 + (np + p) * 1000};
    }
    const char *path = gen_tmp("procs.ltr");
    ltr_writer *w = open_heap_writer(path, LTR_HEAP_PROVIDER, 1 << 20);
    ltr_bytes recs = {0};
    ltr_error err;
    for (size_t i = 0; i < s.n; i++) {
        recs.len = 0;
        put_cevent(&recs, &s.v[i], 0);
        ltr_block_info info = {.pid = s.v[i].pid, .tid = s.v[i].tid, .seq = i, .event_count = 1};
        assert_int_equal(ltr_writer_block(w, &info, recs.data, recs.len, &err), 0);
    }
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
    readback r = read_back(path, &s);
    assert_int_equal(r.delivered, s.n);
    assert_int_equal(r.damage, 0);
    ltr_bytes_free(&recs);
    unlink(path);
    free(s.v);
    return r;
}

/* More processes than the writer keeps tables for (64): those it drops
 * start again from 0, which a reader takes as a new sequence. */
static void test_many_processes(void **state)
{
    (void)state;
    readback few = processes_run(40), many = processes_run(100);
    print_message("40 processes: %zu frees by reference; 100: %zu\n", few.by_ref, many.by_ref);
    assert_int_equal(few.by_ref, 40);
    assert_true(many.by_ref < 100); /* the least recently used tables went */
}

/* ---- the analyzer's fast path (analyze/blocks.c) resolves them too ---- */

static void damage_events_chunk(const char *path, int k);

/* The analysis of path with o, written as f. */
static char *analysis_report(const char *path, const ltr_analyze_opts *o, ltr_report_format fmt)
{
    ltr_analysis *a;
    ltr_error err;
    if (ltr_analysis_run(path, o, &a, &err))
        fail_msg("%s", err.msg);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(ltr_analysis_write(a, f, fmt, 10), 0);
    fclose(f);
    ltr_analysis_free(a);
    return text;
}

static char *analysis_json_once(const char *path)
{
    return analysis_report(path, &(ltr_analyze_opts){0}, LTR_REPORT_JSON);
}

/* The report, which must not depend on how the fast path reads column
 * blocks: decoded ahead (the default) or a record at a time. */
static char *analysis_json(const char *path)
{
    char *text = analysis_json_once(path);
    setenv("LTR_ANALYZE_AHEAD", "0", 1);
    char *slow = analysis_json_once(path);
    unsetenv("LTR_ANALYZE_AHEAD");
    assert_string_equal(text, slow);
    free(slow);
    return text;
}

/* The first number after "key": in the JSON (the summary comes first). */
static uint64_t json_u64(const char *js, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(js, k);
    assert_non_null(p);
    return strtoull(p + strlen(k), NULL, 10);
}

/* ltr analyze decodes heap records itself (its fast path): on a trace with
 * references it must find what it finds on the same events stored plain,
 * and on a trace with a chunk lost, take exactly the heap events the
 * reader's own path gives. */
/* The analyzer's fast path against the same events stored plain, then after a lost chunk. */
static void analyzer_reads_references(void)
{
    script s = make_script(20000, 11);
    const char *refs = gen_tmp("an-refs.ltr"), *plain = gen_tmp("an-plain.ltr");
    ltr_error err;
    ltr_writer *w = open_heap_writer(refs, LTR_HEAP_PROVIDER, 4096);
    write_blocks(w, &s, 0, s.n, 12, NULL);
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
    w = open_heap_writer(plain, LTR_HEAP_PROVIDER, 4096);
    plain_every = 1;
    write_blocks(w, &s, 0, s.n, 12, NULL);
    plain_every = 0;
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
    char *a = analysis_json(refs), *b = analysis_json(plain);
    static const char *const keys[] = {"heap_events", "allocations", "allocated_bytes", "frees", "unseen_frees",
                                       "outstanding_bytes", "outstanding_allocations", "peak_bytes"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        assert_int_equal(json_u64(a, keys[i]), json_u64(b, keys[i]));
    assert_int_equal(json_u64(a, "heap_events"), s.n);
    assert_int_equal(json_u64(a, "unseen_frees"), 0);
    free(a);
    free(b);
    damage_events_chunk(refs, 2);
    readback r = read_back(refs, &s);
    a = analysis_json(refs);
    print_message("lost chunk: reader %zu events, analyzer %llu\n", r.delivered,
                  (unsigned long long)json_u64(a, "heap_events"));
    assert_true(r.delivered < s.n);
    assert_int_equal(json_u64(a, "heap_events"), r.delivered);
    free(a);
    unlink(refs);
    unlink(plain);
    free(s.v);
}

static void test_analyzer_reads_references(void **state)
{
    (void)state;
    analyzer_reads_references();
    sizes_by_address = 1; /* the allocator model's places, resolved by the fast path */
    analyzer_reads_references();
    sizes_by_address = 0;
}

/* A thread's times that go back inside a block (its clock stepped back):
 * the fast path takes a window's least and most times from its ends only
 * while none did (blocks.c, stamps); here the latest and the earliest are
 * in the middle of a block of 10 buffers. The reports agree with a record
 * at a time, and the trace lasts to the latest. */
static void test_times_back_in_a_block(void **state)
{
    (void)state;
    script all = make_script(20000, 31);
    script s = thread_1000(&all);
    s.v[s.n / 2 + 5].ts += 7000000000ull;
    s.v[s.n / 3 + 5].ts -= 500000000ull;
    const char *path = gen_tmp("back.ltr");
    ltr_writer *w = open_heap_writer(path, LTR_HEAP_PROVIDER, 1 << 20);
    write_thread_buffers(w, &s, 1, 5, false); /* the block after the gap is read whole (the first's first record is not) */
    ltr_error err;
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
    char *js = analysis_json(path), *d = strstr(js, "\"duration_s\":");
    assert_non_null(d);
    double secs = strtod(d + strlen("\"duration_s\":"), NULL);
    print_message("duration %.9f s\n", secs);
    assert_true(secs > 7.0 && secs < 7.1);
    free(js);
    unlink(path);
    free(s.v);
    free(all.v);
}

/* Freed blocks coming back to requests of their size class: most
 * allocations are told by their place in the class's list, and every
 * address comes back. */
static void test_allocator_model_tells_reuse_by_place(void **state)
{
    (void)state;
    script s = model_script(20000, 21);
    const char *path = gen_tmp("model.ltr");
    write_script(path, &s, 22, 1);
    readback r = read_back(path, &s);
    print_message("%zu allocations, %zu by reference, %zu of them by place\n", r.allocs, r.allocs_by_ref,
                  r.allocs_by_place);
    assert_int_equal(r.delivered, s.n);
    assert_int_equal(r.damage, 0);
    assert_true(r.allocs_by_place * 2 > r.allocs);
    unlink(path);
    free(s.v);
}

/* A lost chunk: the reader cannot know what its frees did to the lists, so
 * it trusts none until they fill again; what it delivers is right. */
static void test_lost_chunk_distrusts_the_model(void **state)
{
    (void)state;
    script s = model_script(20000, 23);
    const char *path = gen_tmp("model-lost.ltr");
    write_script(path, &s, 24, 1);
    damage_events_chunk(path, 3);
    readback r = read_back(path, &s); /* every event delivered is right (check_event) */
    print_message("%zu of %zu events read, %llu references unresolved\n", r.delivered, s.n,
                  (unsigned long long)r.unresolved);
    assert_true(r.delivered < s.n);
    assert_true(r.delivered + 3000 > s.n); /* the lists fill again soon */
    assert_true(r.allocs_by_place > 0);
    unlink(path);
    free(s.v);
}

/* ---- a column block read by the analyzer straight from its columns ---- */

/* Events of the heap provider the reader delivers from a trace. */
static uint64_t reader_heap_events(const char *path, uint64_t *damage)
{
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    const ltr_event *ev;
    uint64_t n = 0;
    while (ltr_trace_next(t, &ev, &err) > 0)
        n++;
    ltr_trace_summary sum;
    ltr_trace_summarize(t, &sum);
    *damage = sum.damage;
    ltr_trace_close(t);
    return n;
}

/* A trace of the heap metadata as the agent writes it and one EVENTS
 * chunk, uncompressed, holding a column block of pid 100 (count records)
 * between two copies of a row block of pid 101. */
static void column_trace(const char *path, const ltr_bytes *meta, const uint8_t *cols, size_t len, uint32_t count,
                         uint16_t flags, const ltr_bytes *rows, uint32_t nrows)
{
    ltr_bytes ev = {0};
    for (int b = 0; b < 3; b++) {
        int col = b == 1;
        ltr_bytes_put_mem(&ev, LTR_BLOCK_MAGIC, 4);
        ltr_bytes_put_u16(&ev, 0);
        ltr_bytes_put_u16(&ev, (uint16_t)(LTR_BLOCK_FLAG_COMPACT | (col ? LTR_BLOCK_FLAG_COLUMNS | flags : 0)));
        ltr_bytes_put_u32(&ev, col ? 100 : 101);
        ltr_bytes_put_u32(&ev, col ? 1000 : 1010);
        ltr_bytes_put_u64(&ev, (uint64_t)b);
        ltr_bytes_put_u32(&ev, col ? count : nrows);
        ltr_bytes_put_u32(&ev, (uint32_t)(col ? len : rows->len));
        ltr_bytes_put_u64(&ev, 0);
        ltr_bytes_put_mem(&ev, col ? cols : rows->data, col ? len : rows->len);
    }
    const ltr_bytes parts[2] = {*meta, ev};
    const uint16_t types[2] = {LTR_CHUNK_METADATA, LTR_CHUNK_EVENTS};
    assert_int_equal(gen_raw_chunks(path, LTR_FORMAT_VERSION, parts, types, 2), 0);
    ltr_bytes_free(&ev);
}

/* The block of column data w holds (count records, notes of them not the
 * heap's), whole and with each of its bytes changed and its count one off:
 * the analyzer takes exactly the events the reader delivers. */
static void damaged_columns_read_alike(const ltr_colwriter *w, const ltr_bytes *meta, uint32_t count, uint32_t notes,
                                       const ltr_bytes *other, uint32_t nother)
{
    uint16_t flags = w->time_runs ? LTR_BLOCK_FLAG_TIME_RUNS : 0;
    const char *path = gen_tmp("an-cols.ltr");
    uint64_t damage;
    column_trace(path, meta, w->out.data, w->out.len, count, flags, other, nother);
    uint64_t all = count + 2 * (uint64_t)nother; /* pid 101's block comes twice */
    assert_int_equal(reader_heap_events(path, &damage), all);
    assert_int_equal(damage, 0);
    char *js = analysis_json(path);
    assert_int_equal(json_u64(js, "events"), all);
    assert_int_equal(json_u64(js, "heap_events"), all - notes);
    free(js);
    uint8_t *copy = malloc(w->out.len);
    size_t differs = 0, cases = 0;
    for (size_t at = 0; at <= w->out.len; at++)
        for (int f = 0; f < 3; f++) {
            memcpy(copy, w->out.data, w->out.len);
            uint32_t n = count;
            if (at == w->out.len)
                n = f == 0 ? count - 1 : f == 1 ? count + 1 : 0;
            else
                copy[at] ^= (uint8_t[]){0x01, 0x80, 0x41}[f];
            column_trace(path, meta, copy, w->out.len, n, flags, other, nother);
            uint64_t want = reader_heap_events(path, &damage);
            js = analysis_json(path);
            assert_int_equal(json_u64(js, "events"), want);
            free(js);
            differs += want != all;
            cases++;
        }
    print_message("%zu damaged column blocks, %zu of them read short\n", cases, differs);
    assert_true(differs > 0);
    free(copy);
    unlink(path);
}

/* Whatever is done to a column block's data (a byte changed anywhere, a
 * count one off), the analyzer, which reads the columns itself, takes
 * exactly the events the reader delivers (and analysis_json checks that it
 * reports the same whether it decodes the columns ahead or not); with its
 * time column as runs (format 8) and without. */
static void test_analyzer_reads_columns_as_the_reader(void **state)
{
    (void)state;
    script s = make_script(400, 31);
    ltr_bytes meta = {0}, rows = {0}, other = {0};
    heap_metadata(&meta, LTR_HEAP_PROVIDER);
    ltr_guid g;
    ltr_guid_from_name(LTR_HEAP_PROVIDER, &g);
    gen_layout(&meta, L_NOTE, &g, 200, "Note", "10:text"); /* a string: its payloads stored whole */
    uint32_t count = 0, nother = 0, notes = 0;
    uint64_t prev = 0, prev_other = 0;
    for (size_t i = 0; i < s.n; i++) {
        s.v[i].tid = s.v[i].pid == 100 ? 1000 : 1010;
        s.v[i].ts = TS0 + (uint64_t)(i / 8) * 100000; /* runs of equal times, as the agent's clock grain makes */
        if (s.v[i].pid == 100 && count % 50 == 25) { /* the fast path stops there; the reader takes it */
            static const uint8_t note[] = {5, 0, 'h', 'e', 'l', 'l', 'o'};
            uint8_t *h = ltr_bytes_grow(&rows, LTR_CEVENT_HEADER_MAX + sizeof note);
            size_t hl = ltr_put_cevent_header(h, L_NOTE, prev, prev, sizeof note);
            memcpy(h + hl, note, sizeof note);
            rows.len -= LTR_CEVENT_HEADER_MAX - hl;
            count++;
            notes++;
        }
        if (s.v[i].pid == 100)
            put_cevent(&rows, &s.v[i], prev), prev = s.v[i].ts, count++;
        else
            put_cevent(&other, &s.v[i], prev_other), prev_other = s.v[i].ts, nother++;
    }
    assert_true(notes > 1);
    ltr_colwriter w;
    ltr_colwriter_init(&w);
    ltr_colwriter_layouts(&w, meta.data, meta.len);
    ltr_colwriter_layouts_written(&w, meta.data, meta.len, 1);
    for (w.time = 1; w.time >= 0; w.time--) {
        assert_int_equal(ltr_colwriter_block(&w, rows.data, rows.len, count), 1);
        assert_int_equal(w.time_runs, w.time);
        damaged_columns_read_alike(&w, &meta, count, notes, &other, nother);
    }
    ltr_colwriter_free(&w);
    ltr_bytes_free(&meta);
    ltr_bytes_free(&rows);
    ltr_bytes_free(&other);
    free(s.v);
}

/* The trace at path, its header saying `version`, read back whole: every
 * event, no damage. */
static readback read_back_as_version(const char *path, const script *s, uint32_t version)
{
    size_t len;
    uint8_t *p = gen_slurp(path, &len);
    assert_non_null(p);
    ltr_put_u32(p + 8, version);
    assert_int_equal(gen_spit(path, p, len), 0);
    free(p);
    expect_version = version;
    readback r = read_back(path, s);
    expect_version = LTR_FORMAT_VERSION;
    assert_int_equal(r.delivered, s->n);
    assert_int_equal(r.damage, 0);
    return r;
}

/* Blocks without the model's flag, in a file of version 4: a pnew code is a
 * reference into the frees, as format 4 has it. */
static void test_format4_codes_still_read(void **state)
{
    (void)state;
    script s = model_script(20000, 25);
    const char *path = gen_tmp("v4.ltr");
    write_script(path, &s, 26, 0);
    readback r = read_back_as_version(path, &s, 4);
    assert_int_equal(r.allocs_by_place, 0);
    assert_true(r.allocs_by_ref * 2 > r.allocs);
    unlink(path);
    free(s.v);
}

/* The script through the writer (with the model, seed for the blocks'
 * order) and back: every event, no damage, the analyzer taking them all
 * and every free paired. Then events chunk k lost: every event the reader
 * delivers is still the script's (check_event), some are not delivered,
 * and the analyzer takes exactly those the reader delivers. Returns the
 * whole trace's readback. */
static readback round_trip_then_lose(const script *s, const char *name, unsigned seed, int k)
{
    const char *path = gen_tmp(name);
    write_script(path, s, seed, 1);
    readback whole = read_back(path, s);
    assert_int_equal(whole.delivered, s->n);
    assert_int_equal(whole.damage, 0);
    char *js = analysis_json(path);
    assert_int_equal(json_u64(js, "heap_events"), s->n);
    assert_int_equal(json_u64(js, "unseen_frees"), 0);
    free(js);
    damage_events_chunk(path, k);
    readback r = read_back(path, s);
    js = analysis_json(path);
    print_message("lost chunk: %zu of %zu events read, %llu unresolved\n", r.delivered, s->n,
                  (unsigned long long)r.unresolved);
    assert_true(r.delivered < s->n);
    assert_int_equal(json_u64(js, "heap_events"), r.delivered);
    free(js);
    unlink(path);
    return whole;
}

/* A growing heap: most fresh blocks are told as the address after the
 * block's previous allocation, and every address comes back, also to the
 * analyzer's fast path; after a lost chunk, every event delivered is right. */
static void test_fresh_blocks_told_by_the_next_address(void **state)
{
    (void)state;
    script s = top_script(20000, 27);
    readback r = round_trip_then_lose(&s, "next.ltr", 28, 3);
    size_t in_place = 0;
    for (size_t i = 0; i < s.n; i++)
        in_place += s.v[i].kind == L_REALLOC && s.v[i].addr == s.v[i].old;
    print_message("%zu allocations, %zu by the next address, %zu by place; %zu of %zu reallocs in place as such\n",
                  r.allocs, r.allocs_by_next, r.allocs_by_place, r.reallocs_same, in_place);
    assert_true(r.allocs_by_next * 4 > r.allocs); /* blocks of 1 to 12 events: a run restarts with each */
    assert_true(in_place > 100);
    assert_true(r.reallocs_same * 10 > in_place * 9); /* unless the next address said it first */
    free(s.v);
}

/* A teardown in the order of building: most frees are told as naming the
 * allocation after the previous free's; every address comes back, also to
 * the analyzer; after a lost chunk, every event delivered is right. */
static void test_teardown_told_by_the_allocation_after(void **state)
{
    (void)state;
    script s = teardown_script(24000);
    readback r = round_trip_then_lose(&s, "teardown.ltr", 34, 4);
    print_message("%zu frees, %zu told as the one after the previous free's\n", r.frees, r.by_freed_next);
    assert_true(r.by_freed_next * 2 > r.frees); /* not a block's first, nor after a seventh kept */
    free(s.v);
}

/* The reader's side of the next address, event by event: it follows a
 * known allocation in the same block; after one whose address is unknown
 * (a place past what its list holds), or at a block's start, it is not
 * known, and the event fails rather than take another address. */
static void test_next_address_only_after_a_known_one(void **state)
{
    (void)state;
    ltr_refs refs;
    ltr_refs_init(&refs);
    struct ltr_refseq *q = ltr_refs_block(&refs, 0, 100, 0, 0, F6);
    assert_non_null(q);
    ltr_refev e = {.has = {1, 0}, .code = {0, 0}, .addr = {0x10000, 0}, .size = 100};
    assert_int_equal(ltr_refseq_apply_event(q, &e), 0);
    e = (ltr_refev){.has = {1, 0}, .code = {LTR_MODEL_NEXT, 0}, .size = 8};
    assert_int_equal(ltr_refseq_apply_event(q, &e), 0);
    assert_int_equal(e.addr[0], 0x10000 + 112); /* 100 bytes and the 8-byte header, in 16-byte steps */
    e = (ltr_refev){.has = {1, 0}, .code = {LTR_MODEL_NEXT, 0}, .size = 8};
    assert_int_equal(ltr_refseq_apply_event(q, &e), 0);
    assert_int_equal(e.addr[0], 0x10000 + 112 + 32); /* the smallest chunk */
    e = (ltr_refev){.has = {1, 0}, .code = {3, 0}, .size = 8}; /* place 2 of an empty list: unknown */
    assert_int_equal(ltr_refseq_resolve_event(q, &e), -1);
    ltr_refseq_commit_event(q, &e);
    e = (ltr_refev){.has = {1, 0}, .code = {LTR_MODEL_NEXT, 0}, .size = 8};
    assert_int_equal(ltr_refseq_resolve_event(q, &e), -1);
    ltr_refseq_commit_event(q, &e);
    e = (ltr_refev){.has = {1, 0}, .code = {0, 0}, .addr = {0x20000, 0}, .size = 24};
    assert_int_equal(ltr_refseq_apply_event(q, &e), 0);
    q = ltr_refs_block(&refs, 0, 100, 6, 0, F6); /* the next block: its first one has nothing to follow */
    e = (ltr_refev){.has = {1, 0}, .code = {LTR_MODEL_NEXT, 0}, .size = 8};
    assert_int_equal(ltr_refseq_resolve_event(q, &e), -1);
    ltr_refseq_commit_event(q, &e);
    /* a realloc in place: its new address is its old one, when that is known */
    e = (ltr_refev){.has = {1, 1}, .code = {LTR_MODEL_SAME, 0}, .addr = {0, 0x30000}, .size = 40};
    assert_int_equal(ltr_refseq_apply_event(q, &e), 0);
    assert_int_equal(e.addr[0], 0x30000);
    e = (ltr_refev){.has = {1, 1}, .code = {LTR_MODEL_SAME, 100}, .size = 40}; /* old one 100 back: unknown */
    assert_int_equal(ltr_refseq_resolve_event(q, &e), -1);
    e = (ltr_refev){.has = {1, 0}, .code = {LTR_MODEL_SAME, 0}, .size = 40}; /* an Alloc has no old address */
    assert_int_equal(ltr_refseq_resolve_event(q, &e), -1);
    q = ltr_refs_block(&refs, 0, 100, 8, 1, LTR_BLOCK_FLAG_MODEL); /* without the flag: format 5's reference, 17 - 16 back */
    e = (ltr_refev){.has = {1, 0}, .code = {LTR_MODEL_NEXT, 0}, .size = 8};
    assert_int_equal(ltr_refseq_resolve_event(q, &e), 0);
    assert_int_equal(e.addr[0], 0x30000); /* the one free so far: the realloc's old address */
    ltr_refs_free(&refs);
}

/* A reference one further back than the sequence holds fails, and so does
 * one of 0, one by one and in a run (refseq.c's resolve takes both with
 * one compare of code - 1: the slot one past the count is an empty one,
 * whose 0 would match its "ordinal + 1" of 0); one as far back as the
 * count names the first value. */
static void test_reference_past_the_count_fails(void **state)
{
    (void)state;
    ltr_refs refs;
    ltr_refs_init(&refs);
    struct ltr_refseq *q = ltr_refs_block(&refs, 0, 100, 0, 0, F6);
    ltr_refev e = {.has = {1, 0}, .code = {0, 0}, .addr = {0x10000, 0}, .size = 100};
    assert_int_equal(ltr_refseq_apply_event(q, &e), 0);
    for (uint64_t back = 2; back <= 3; back++) { /* the pref code of a distance d is d + 1 (format 6) */
        e = (ltr_refev){.has = {0, 1}, .code = {0, LTR_MODEL_FREED_NEXT + back}};
        assert_int_equal(ltr_refseq_resolve_event(q, &e), -1);
        assert_int_equal(ltr_refseq_apply_events(q, &e, 1), 0);
    }
    e = (ltr_refev){.has = {1, 0}, .code = {LTR_MODEL_CODES + 1, 0}, .size = 8}; /* a free 1 back: none yet */
    assert_int_equal(ltr_refseq_apply_events(q, &e, 1), 0);
    e = (ltr_refev){.has = {0, 1}, .code = {0, LTR_MODEL_FREED_NEXT + 1}};
    assert_int_equal(ltr_refseq_apply_events(q, &e, 1), 1);
    assert_int_equal(e.addr[1], 0x10000);
    ltr_refs_free(&refs);
}

/* The reader's side of the allocation after the previous free's: it is
 * named by number, known when the previous free's distance was, even
 * where that allocation's address was not; not after a free stored as
 * itself, nor at a block's start. */
static void test_freed_next_by_number(void **state)
{
    (void)state;
    ltr_refs refs;
    ltr_refs_init(&refs);
    struct ltr_refseq *q = ltr_refs_block(&refs, 0, 100, 0, 0, F6);
    for (uint64_t i = 0; i < 4; i++) { /* allocations 0..3; the second one's address unknown */
        ltr_refev a = {.has = {1, 0}, .code = {i == 1 ? 5 : 0, 0}, .addr = {0x1000 * (i + 1), 0}, .size = 40};
        assert_int_equal(ltr_refseq_resolve_event(q, &a), i == 1 ? -1 : 0);
        ltr_refseq_commit_event(q, &a);
    }
    ltr_refev e = {.has = {0, 1}, .code = {0, 4 + LTR_MODEL_FREED_NEXT}}; /* allocation 0 */
    assert_int_equal(ltr_refseq_apply_event(q, &e), 0);
    assert_int_equal(e.addr[1], 0x1000);
    e = (ltr_refev){.has = {0, 1}, .code = {0, LTR_MODEL_FREED_NEXT}}; /* allocation 1: unknown */
    assert_int_equal(ltr_refseq_resolve_event(q, &e), -1);
    ltr_refseq_commit_event(q, &e);
    e = (ltr_refev){.has = {0, 1}, .code = {0, LTR_MODEL_FREED_NEXT}}; /* allocation 2, by number */
    assert_int_equal(ltr_refseq_apply_event(q, &e), 0);
    assert_int_equal(e.addr[1], 0x3000);
    e = (ltr_refev){.has = {0, 1}, .code = {0, 0}, .addr = {0, 0x9000}}; /* stored as itself */
    assert_int_equal(ltr_refseq_apply_event(q, &e), 0);
    e = (ltr_refev){.has = {0, 1}, .code = {0, LTR_MODEL_FREED_NEXT}};
    assert_int_equal(ltr_refseq_resolve_event(q, &e), -1);
    q = ltr_refs_block(&refs, 0, 100, 4, 4, F6);
    e = (ltr_refev){.has = {0, 1}, .code = {0, 1 + LTR_MODEL_FREED_NEXT}}; /* allocation 3 */
    assert_int_equal(ltr_refseq_apply_event(q, &e), 0);
    assert_int_equal(e.addr[1], 0x4000);
    q = ltr_refs_block(&refs, 0, 100, 4, 5, F6); /* a new block: nothing before it counts */
    e = (ltr_refev){.has = {0, 1}, .code = {0, LTR_MODEL_FREED_NEXT}};
    assert_int_equal(ltr_refseq_resolve_event(q, &e), -1);
    ltr_refs_free(&refs);
}

/* Format 7: frees of blocks allocated before the trace began (no
 * reference can name them) are stored as their differences from the
 * block's previous such free, a byte or two where the address took six;
 * every address comes back, to the reader and to the analyzer, which pairs
 * every free of a block allocated in the trace (its addresses right) and
 * counts the others unseen. After a lost chunk, every event delivered is
 * right. */
static void test_addresses_told_as_differences(void **state)
{
    (void)state;
    size_t unseen;
    script s = attached_script(24000, &unseen);
    const char *path = gen_tmp("delta.ltr");
    write_script(path, &s, 35, 1);
    readback r = read_back(path, &s);
    assert_int_equal(r.delivered, s.n);
    assert_int_equal(r.damage, 0);
    print_message("%zu frees, %zu stored as themselves, %zu of those in 2 bytes or fewer\n", r.frees, r.frees_plain,
                  r.frees_plain_short);
    assert_true(r.frees_plain >= unseen);
    assert_true(r.frees_plain_short * 2 > r.frees_plain); /* not a block's first (blocks of 1 to 12 events) */
    char *js = analysis_json(path);
    assert_int_equal(json_u64(js, "heap_events"), s.n);
    assert_int_equal(json_u64(js, "unseen_frees"), unseen);
    free(js);
    damage_events_chunk(path, 2);
    readback lost = read_back(path, &s); /* check_event: each one right */
    assert_true(lost.delivered < s.n);
    unlink(path);
    free(s.v);
}

/* The reader's side of format 7's differences: an address stored as itself
 * counts from the block's previous one of its kind (allocations' and
 * frees' apart), the first from 0; each block starts again; once a record
 * of the block could not be read, none is known; a block without the flag
 * stores addresses as they are. */
static void test_differences_by_kind_within_a_block(void **state)
{
    (void)state;
    ltr_refs refs;
    ltr_refs_init(&refs);
    struct ltr_refseq *q = ltr_refs_block(&refs, 0, 100, 0, 0, F6 | LTR_BLOCK_FLAG_DELTA);
    ltr_refev e = {.has = {1, 0}, .addr = {ltr_zigzag(0x10000), 0}, .size = 5000}; /* not the next address */
    assert_int_equal(ltr_refseq_apply_event(q, &e), 0);
    assert_int_equal(e.addr[0], 0x10000);
    e = (ltr_refev){.has = {0, 1}, .addr = {0, ltr_zigzag(0x90000)}};
    assert_int_equal(ltr_refseq_apply_event(q, &e), 0);
    assert_int_equal(e.addr[1], 0x90000);
    e = (ltr_refev){.has = {1, 0}, .addr = {ltr_zigzag(-0x100), 0}, .size = 5000};
    assert_int_equal(ltr_refseq_apply_event(q, &e), 0);
    assert_int_equal(e.addr[0], 0x10000 - 0x100);
    e = (ltr_refev){.has = {1, 1}, .addr = {ltr_zigzag(0x20), ltr_zigzag(0x40)}, .size = 5000}; /* a realloc moved */
    assert_int_equal(ltr_refseq_apply_event(q, &e), 0);
    assert_int_equal(e.addr[0], 0x10000 - 0x100 + 0x20);
    assert_int_equal(e.addr[1], 0x90040);
    q = ltr_refs_block(&refs, 0, 100, 3, 2, F6 | LTR_BLOCK_FLAG_DELTA); /* the next block: from 0 again */
    e = (ltr_refev){.has = {0, 1}, .addr = {0, ltr_zigzag(0x50000)}};
    assert_int_equal(ltr_refseq_apply_event(q, &e), 0);
    assert_int_equal(e.addr[1], 0x50000);
    ltr_refseq_spoil(q); /* a record that could not be read: the differences it held are lost */
    e = (ltr_refev){.has = {0, 1}, .addr = {0, ltr_zigzag(0x10)}};
    assert_int_equal(ltr_refseq_resolve_event(q, &e), -1);
    q = ltr_refs_block(&refs, 0, 100, 3, 4, F6); /* format 6: as it is */
    e = (ltr_refev){.has = {0, 1}, .addr = {0, 0x70000}};
    assert_int_equal(ltr_refseq_apply_event(q, &e), 0);
    assert_int_equal(e.addr[1], 0x70000);
    ltr_refs_free(&refs);
}

/* A random event of any shape and code (most of them naming what is not
 * there), for test_run_as_events_one_by_one. */
static ltr_refev random_refev(unsigned *seed)
{
    ltr_refev e = {.has = {rand_r(seed) % 4 != 0, 0}};
    e.has[1] = !e.has[0] || rand_r(seed) % 3 == 0; /* some of neither below */
    if (rand_r(seed) % 50 == 0)
        e.has[0] = e.has[1] = 0;
    unsigned r = (unsigned)rand_r(seed);
    e.code[0] = r % 4 == 0 ? 0 : r % 4 == 1 ? 1 + r / 4 % 4 : r % 4 == 2 ? LTR_MODEL_NEXT + r / 4 % 2 : LTR_MODEL_CODES + 1 + r / 4 % 40;
    r = (unsigned)rand_r(seed);
    e.code[1] = r % 5 == 0 ? 0 : r % 5 == 1 ? LTR_MODEL_FREED_NEXT : 2 + r / 5 % 12;
    for (int k = 0; k < 2; k++)
        if (!e.code[k]) /* an address, or in a format 7 block a difference */
            e.addr[k] = rand_r(seed) % 2 ? 0x100000 + (uint64_t)rand_r(seed) % 4096 * 16 : ltr_zigzag(rand_r(seed) % 512 - 256);
    r = (unsigned)rand_r(seed);
    e.size = r % 8 == 0 ? 5000 + r / 8 % 3000 : r / 8 % 5 * 24;
    return e;
}

/* A run of a readable format 6 block's events (ltr_refseq_apply_events:
 * a loop for each shape of event, refseq.c apply_run) finds what the
 * events one by one do (ltr_refseq_apply_event: every kind's checks): the
 * same addresses, the same events failing (each then committed unknown, as
 * the analysis's generic path does), on random codes of every kind in
 * blocks of formats 5, 6 and 7, some spoiled midway. */
static void test_run_as_events_one_by_one(void **state)
{
    (void)state;
    ltr_refs ra, rb;
    ltr_refs_init(&ra);
    ltr_refs_init(&rb);
    static const uint16_t flags[] = {F6 | LTR_BLOCK_FLAG_DELTA, F6, LTR_BLOCK_FLAG_MODEL};
    unsigned seed = 38;
    uint64_t base[2] = {0, 0};
    size_t resolved[4] = {0}, failed = 0;
    ltr_refev ea[300], eb[300];
    for (int blk = 0; blk < 400; blk++) {
        uint16_t fl = flags[blk % 7 == 6 ? 2 : blk % 3 == 2];
        struct ltr_refseq *qa = ltr_refs_block(&ra, 0, 7, base[0], base[1], fl);
        struct ltr_refseq *qb = ltr_refs_block(&rb, 0, 7, base[0], base[1], fl);
        size_t n = 1 + (size_t)rand_r(&seed) % 300, spoil = blk % 5 == 4 ? (size_t)rand_r(&seed) % n : n;
        for (size_t i = 0; i < n; i++) {
            ea[i] = eb[i] = random_refev(&seed);
            base[0] += ea[i].has[0];
            base[1] += ea[i].has[1];
        }
        int fa[300] = {0}, fb[300] = {0};
        for (size_t i = 0; i < n;) {
            if (i == spoil)
                ltr_refseq_spoil(qa);
            size_t to = i < spoil ? spoil : n; /* a run stops where the block is spoiled */
            i += ltr_refseq_apply_events(qa, &ea[i], to - i);
            if (i < to) {
                fa[i] = ltr_refseq_resolve_event(qa, &ea[i]) < 0;
                ltr_refseq_commit_event(qa, &ea[i]);
                i++;
            }
        }
        for (size_t i = 0; i < n; i++) {
            if (i == spoil)
                ltr_refseq_spoil(qb);
            if ((fb[i] = ltr_refseq_apply_event(qb, &eb[i]) < 0)) {
                ltr_refseq_resolve_event(qb, &eb[i]);
                ltr_refseq_commit_event(qb, &eb[i]);
            }
        }
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(fa[i], fb[i]);
            assert_int_equal(ea[i].addr[0], eb[i].addr[0]);
            assert_int_equal(ea[i].addr[1], eb[i].addr[1]);
            failed += fb[i];
            if (!fb[i] && fl != LTR_BLOCK_FLAG_MODEL && i < spoil)
                resolved[ea[i].has[0] | ea[i].has[1] << 1]++;
        }
    }
    print_message("run and one by one alike: resolved in runs %zu allocations, %zu frees, %zu both, %zu neither; "
                  "%zu failed\n", resolved[1], resolved[2], resolved[3], resolved[0], failed);
    for (int k = 0; k < 4; k++)
        assert_true(resolved[k] > 100); /* every shape's loop taken, not only failures */
    ltr_refs_free(&ra);
    ltr_refs_free(&rb);
}

static long minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

/* Past 4096 values a sequence takes its whole window (4 MiB of slots): in
 * a heap grown ahead of its use (cli/analysis-args.c does so for the
 * analysis; a calloc from it clears every byte, its pages all faulted in),
 * 5000 values must touch about the 80 KB of slots they fill, not 4 MiB.
 * In a child: the pages this process's other tests touched are no fresh
 * ones. The page faults it took, or -1. */
static long window_faults(void)
{
    if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0) /* a fault a 4 KiB page */
        return -1;
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    mallopt(M_TOP_PAD, 64 << 20);
    free(malloc(1 << 20)); /* the heap grows by 64 MiB, not yet touched */
    mallopt(M_TOP_PAD, 0);
    ltr_refs refs;
    ltr_refs_init(&refs);
    struct ltr_refseq *q = ltr_refs_block(&refs, 0, 100, 0, 0, 0);
    long before = minor_faults();
    for (uint64_t i = 0; q && i < 5000; i++) {
        ltr_refev e = {.has = {1, 0}, .addr = {0x100000 + 32 * i, 0}, .size = 16};
        if (ltr_refseq_apply_event(q, &e) != 0)
            return -1;
    }
    long faults = minor_faults() - before;
    ltr_refev e = {.has = {0, 1}, .code = {0, 5000}}; /* the first value, 5000 back */
    if (!q || ltr_refseq_apply_event(q, &e) != 0 || e.addr[1] != 0x100000)
        return -1;
    ltr_refs_free(&refs);
    return faults;
}

static void test_window_touches_what_it_fills(void **state)
{
    (void)state;
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        long faults = window_faults();
        _exit(write(fd[1], &faults, sizeof faults) == (ssize_t)sizeof faults ? 0 : 1);
    }
    long faults = -2;
    assert_int_equal(read(fd[0], &faults, sizeof faults), (ssize_t)sizeof faults);
    close(fd[0]);
    close(fd[1]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(faults >= 0); /* the values went in, the first one resolves */
    if (faults > 256)
        fail_msg("5000 values took %ld page faults: the 4 MiB window was cleared, not only filled", faults);
}

/* A process that ended (PROCESS_END in a file-mode trace) has its
 * sequences let go in every collector, and only its own; a block of its pid
 * after that (a new process) starts afresh: nothing before resolves. */
static void test_ended_process_let_go(void **state)
{
    (void)state;
    ltr_refs refs;
    ltr_refs_init(&refs);
    struct ltr_refseq *a = ltr_refs_block(&refs, 0, 100, 0, 0, 0);
    struct ltr_refseq *b = ltr_refs_block(&refs, 2, 100, 0, 0, 0);
    struct ltr_refseq *c = ltr_refs_block(&refs, 0, 200, 0, 0, 0);
    assert_true(a && b && c);
    ltr_refev e = {.has = {1, 0}, .code = {0, 0}, .addr = {0x1000, 0}, .size = 16};
    assert_int_equal(ltr_refseq_apply_event(a, &e), 0);
    assert_int_equal(ltr_refseq_apply_event(c, &e), 0);
    assert_int_equal(refs.seqs.n, 3);
    assert_int_equal(ltr_refs_drop_pid(&refs, 100, c), 0); /* c is not 100's */
    assert_int_equal(refs.seqs.n, 1);
    assert_int_equal(ltr_refs_drop_pid(&refs, 200, c), 1);
    assert_int_equal(refs.seqs.n, 0);
    a = ltr_refs_block(&refs, 0, 100, 1u << 20, 0, 0); /* past every count: a new process */
    e = (ltr_refev){.has = {0, 1}, .code = {0, 1}};
    assert_int_equal(ltr_refseq_resolve_event(a, &e), -1);
    ltr_refs_free(&refs);
}

/* Blocks with the model but without the next address, in a file of
 * version 5: a pnew code past the list's places is a reference
 * LTR_MODEL_LIST back, as format 5 has it. */
static void test_format5_codes_still_read(void **state)
{
    (void)state;
    script s = top_script(20000, 31);
    const char *path = gen_tmp("v5.ltr");
    write_script_without(path, &s, 32, ltr_writer_set_next);
    readback r = read_back_as_version(path, &s, 5);
    assert_int_equal(r.allocs_by_next, 0);
    assert_true(r.allocs_by_ref > 0);
    char *js = analysis_json(path);
    assert_int_equal(json_u64(js, "heap_events"), s.n);
    free(js);
    unlink(path);
    free(s.v);
}

/* Blocks without format 7's flag, in a file of version 6: an address
 * stored as itself is the address; every event back, none as differences. */
static void test_format6_codes_still_read(void **state)
{
    (void)state;
    size_t unseen;
    script s = attached_script(6000, &unseen);
    const char *path = gen_tmp("v6.ltr");
    write_script_without(path, &s, 36, ltr_writer_set_delta);
    readback r = read_back_as_version(path, &s, 6);
    assert_true(r.frees_plain >= unseen);
    assert_int_equal(r.frees_plain_short, 0); /* addresses of six bytes */
    char *js = analysis_json(path);
    assert_int_equal(json_u64(js, "heap_events"), s.n);
    assert_int_equal(json_u64(js, "unseen_frees"), unseen);
    free(js);
    unlink(path);
    free(s.v);
}

/* Every event of two traces, in order, the same (times, threads, layouts,
 * payloads); how many came from blocks with their time column as runs in
 * each (runs[2]). */
static size_t same_events(const char *a, const char *b, size_t runs[2])
{
    ltr_trace *t[2];
    ltr_error err;
    const ltr_event *ev[2];
    assert_int_equal(ltr_trace_open(a, &t[0], &err), 0);
    assert_int_equal(ltr_trace_open(b, &t[1], &err), 0);
    size_t n = 0;
    runs[0] = runs[1] = 0;
    for (;; n++) {
        int rc[2] = {ltr_trace_next(t[0], &ev[0], &err), ltr_trace_next(t[1], &ev[1], &err)};
        assert_int_equal(rc[0], rc[1]);
        if (rc[0] <= 0)
            break;
        for (int k = 0; k < 2; k++)
            runs[k] += (ev[k]->block_flags & LTR_BLOCK_FLAG_TIME_RUNS) != 0;
        assert_int_equal(ev[0]->ts, ev[1]->ts);
        assert_int_equal(ev[0]->tid, ev[1]->tid);
        assert_int_equal(ev[0]->layout->id, ev[1]->layout->id);
        assert_int_equal(ev[0]->payload_size, ev[1]->payload_size);
        assert_memory_equal(ev[0]->payload, ev[1]->payload, ev[0]->payload_size);
    }
    for (int k = 0; k < 2; k++) {
        ltr_trace_summary sum;
        ltr_trace_summarize(t[k], &sum);
        assert_int_equal(sum.damage, 0);
        ltr_trace_close(t[k]);
    }
    return n;
}

/* The reports of the analysis that depend on the events' times: the whole
 * trace, a window of it (which events are in it), and the outstanding bytes
 * over time (chrome's series); each decoded ahead and not. */
static void time_reports(const char *path, char *out[6])
{
    const ltr_analyze_opts all = {0}, window = {.from = "3", .to = "7.05"}, series = {.series = 1};
    for (int ahead = 0; ahead < 2; ahead++) {
        if (!ahead)
            setenv("LTR_ANALYZE_AHEAD", "0", 1);
        out[3 * ahead] = analysis_report(path, &all, LTR_REPORT_JSON);
        out[3 * ahead + 1] = analysis_report(path, &window, LTR_REPORT_JSON);
        out[3 * ahead + 2] = analysis_report(path, &series, LTR_REPORT_CHROME);
        unsetenv("LTR_ANALYZE_AHEAD");
    }
}

/* The script written a thread at a time, in blocks of up to `per` events
 * (a buffer's first counting from 0), with off turned off unless NULL. */
static void write_thread_blocks(const char *path, const script *s, uint32_t per, void (*off)(ltr_writer *, int))
{
    ltr_writer *w = open_heap_writer(path, LTR_HEAP_PROVIDER, 1u << 16);
    if (off)
        off(w, 0);
    ltr_bytes recs = {0};
    uint64_t seq = 0;
    for (uint32_t t = 0; t < NPIDS * NTHREADS; t++) {
        uint32_t pid = 100 + t / NTHREADS, tid = 1000 + (t / NTHREADS) * 10 + t % NTHREADS;
        for (size_t i = 0; i < s->n;) {
            recs.len = 0;
            uint32_t count = 0;
            for (uint64_t prev = 0; i < s->n && count < per; i++)
                if (s->v[i].tid == tid)
                    put_cevent(&recs, &s->v[i], prev), prev = s->v[i].ts, count++;
            ltr_block_info info = {.pid = pid, .tid = tid, .seq = seq++, .event_count = count};
            ltr_error err;
            if (count)
                assert_int_equal(ltr_writer_block(w, &info, recs.data, recs.len, &err), 0);
        }
    }
    ltr_error err;
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
    ltr_bytes_free(&recs);
}

/* A thread's events mostly share their time with the one before (the
 * agent's clock grain), some go back, and the trace's second half comes
 * seconds after its first: written with its time columns as runs (format
 * 8) and without (as format 7 wrote them, the file saying version 7), the
 * reader delivers the same events, and the analysis (which reads the time
 * column itself) reports the same, byte for byte. */
static void test_time_runs_read_as_format7(void **state)
{
    (void)state;
    script s = top_script(20000, 41);
    for (size_t i = 0; i < s.n; i++)
        s.v[i].ts = TS0 + (uint64_t)(i / 24) * 100000 + (i >= s.n / 2 ? 7000000000ull : 0);
    for (size_t i = s.n / 3; i < s.n / 3 + 40; i += 8)
        s.v[i].ts -= 500000000ull + i; /* back, and off the grain */
    const char *paths[2] = {gen_tmp("v8-runs.ltr"), gen_tmp("v7-runs.ltr")};
    write_thread_blocks(paths[0], &s, 300, NULL);
    write_thread_blocks(paths[1], &s, 300, ltr_writer_set_time_runs);
    size_t len, runs[2];
    uint8_t *p = gen_slurp(paths[1], &len);
    assert_non_null(p);
    ltr_put_u32(p + 8, 7);
    assert_int_equal(gen_spit(paths[1], p, len), 0);
    free(p);
    assert_int_equal(same_events(paths[0], paths[1], runs), s.n);
    print_message("%zu events of %zu from blocks of time runs\n", runs[0], s.n);
    assert_true(runs[0] > s.n / 2);
    assert_int_equal(runs[1], 0);
    char *r8[6], *r7[6];
    time_reports(paths[0], r8);
    rename(paths[1], paths[0]); /* the reports name their trace */
    time_reports(paths[0], r7);
    for (int k = 0; k < 6; k++) {
        assert_string_equal(r8[k], r7[k]);
        free(r8[k]);
        free(r7[k]);
    }
    unlink(paths[0]);
    free(s.v);
}

/* A writer told to be thrifty (a recorder whose CPUs have none to spare)
 * compresses at a cheaper level: another file, the same events. */
static void test_thrifty_writer_same_events(void **state)
{
    (void)state;
    script s = top_script(20000, 37);
    const char *paths[2] = {gen_tmp("full.ltr"), gen_tmp("thrifty.ltr")};
    long long size[2];
    char *js[2];
    for (int i = 0; i < 2; i++) {
        ltr_writer *w = open_heap_writer(paths[i], LTR_HEAP_PROVIDER, 4096);
        ltr_writer_set_thrifty(w, i);
        write_blocks(w, &s, 0, s.n, 32, NULL);
        ltr_error err;
        assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
        ltr_writer_close(w);
        struct stat st;
        assert_int_equal(stat(paths[i], &st), 0);
        size[i] = (long long)st.st_size;
        js[i] = analysis_json(paths[i]);
        assert_int_equal(json_u64(js[i], "heap_events"), s.n);
    }
    /* the analysis the same, but for the trace's name */
    const char *body[2] = {strstr(js[0], "\"window\""), strstr(js[1], "\"window\"")};
    assert_non_null(body[0]);
    assert_non_null(body[1]);
    assert_string_equal(body[0], body[1]);
    if (size[0] == size[1])
        fail_msg("a thrifty writer wrote the same %lld bytes: its level did not change", size[0]);
    for (int i = 0; i < 2; i++) {
        free(js[i]);
        unlink(paths[i]);
    }
    free(s.v);
}

/* ---- a record that grows: tiny addresses told by long references ---- */

static void raw_record(ltr_bytes *b, uint32_t layout, const uint8_t *payload, size_t n)
{
    uint8_t *h = ltr_bytes_grow(b, LTR_CEVENT_HEADER_MAX + n);
    size_t hl = ltr_put_cevent_header(h, layout, 0, 0, (uint32_t)n);
    memcpy(h + hl, payload, n);
    b->len -= LTR_CEVENT_HEADER_MAX - hl;
}

static void raw_event(ltr_bytes *b, uint32_t layout, int nf, const uint64_t *v, int fn)
{
    uint8_t p[64];
    size_t n = 0;
    for (int i = 0; i < nf; i++)
        n += ltr_put_uvar(p + n, v[i]);
    p[n++] = (uint8_t)fn;
    raw_record(b, layout, p, n);
}

/* Records of an unplanned layout (copied as they are) of `filler` payload
 * bytes, then Alloc 5, 16384 other allocations, Free 9, 200 other frees and,
 * if asked, Realloc 5 -> 9: a 1-byte old address told as 16385 allocations
 * back (3 bytes), a 1-byte new one as 201 frees back (2 bytes). The other
 * allocations are 16 bytes apart, never where the next address would put
 * them (32 bytes on): each a plain address. */
static void tiny_block(ltr_bytes *b, size_t filler, int with_realloc)
{
    static uint8_t pad[60000];
    b->len = 0;
    while (filler) {
        size_t k = filler > 60000 ? 50000 : filler;
        raw_record(b, 50, pad, k);
        filler -= k;
    }
    uint64_t a[3] = {5, 1, 1}, f = 9;
    raw_event(b, L_ALLOC, 3, a, 1);
    for (uint64_t i = 0; i < 16384; i++) {
        a[0] = 0x100000 + 16 * i;
        raw_event(b, L_ALLOC, 3, a, 1);
    }
    raw_event(b, L_FREE, 1, &f, 20);
    for (uint64_t i = 0; i < 200; i++) {
        f = 0x900000 + 16 * i;
        raw_event(b, L_FREE, 1, &f, 20);
    }
    if (with_realloc) {
        uint64_t r[4] = {5, 9, 1, 1};
        raw_event(b, L_REALLOC, 4, r, 1);
    }
}

static void heap_refwriter(ltr_refwriter *w)
{
    ltr_bytes meta = {0};
    heap_metadata(&meta, LTR_HEAP_PROVIDER);
    ltr_refwriter_init(w);
    ltr_refwriter_layouts(w, meta.data, meta.len);
    ltr_bytes_free(&meta);
}

/* A traced program may write any address, and a reference can be longer
 * than the address it stands for: the Realloc above grows by 3 bytes. Its
 * re-encoding placed to end exactly at the output buffer's capacity (found
 * by a review under ASan: writing past it with a reserve of 2 bytes). */
static void test_tiny_addresses_grow_a_record(void **state)
{
    (void)state;
    ltr_bytes blk = {0};
    ltr_refwriter w;
    uint64_t base[2];
    heap_refwriter(&w);
    tiny_block(&blk, 0, 0);
    assert_int_equal(ltr_refwriter_block(&w, 0, 100, blk.data, blk.len, 0, base), 1);
    size_t before = w.out.len;
    ltr_refwriter_free(&w);
    /* the Realloc's reserve: size varint room 10, layout and delta 2, payload 5, growth */
    size_t want = 262144 - (10 + 2 + 5 + REFS_GROWTH) - before, filler = 0;
    while (want > 60005) { /* a filler record of 50000 payload bytes takes 50005 */
        filler += 50000;
        want -= 50005;
    }
    filler += want - 5;
    heap_refwriter(&w);
    tiny_block(&blk, filler, 1);
    assert_int_equal(ltr_refwriter_block(&w, 0, 100, blk.data, blk.len, 0, base), 1);
    /* the last record: its payload is the two references, then size, stack, function */
    /* 201 back, after the model's 16 places and format 6's two codes */
    const uint8_t expect[] = {0x82, 0x80, 0x01, /* 16385, after format 6's code 1 */ 0xdb, 0x01,
                              1, 1, 1};
    assert_true(w.out.len > sizeof expect);
    assert_memory_equal(w.out.data + w.out.len - sizeof expect, expect, sizeof expect);
    ltr_refwriter_free(&w);
    ltr_bytes_free(&blk);
}

/* The script written by one writer in blocks of 3 threads' buffers into a
 * scratch file of that name, and what reading it back found. */
static readback written_and_read(const script *s, const char *name)
{
    const char *path = gen_tmp(name);
    ltr_writer *w = open_heap_writer(path, LTR_HEAP_PROVIDER, 1 << 20);
    write_blocks(w, s, 0, s->n, 3, NULL);
    ltr_error err;
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
    readback r = read_back(path, s);
    unlink(path);
    return r;
}

/* Allocations further back than the window: their frees carry the address. */
static void test_window_edge(void **state)
{
    (void)state;
    size_t n = LTR_REFS_WINDOW + 40;
    script s = {calloc(n, sizeof(op)), n};
    for (size_t i = 0; i < n; i++) {
        op *o = &s.v[i];
        o->pid = 100;
        o->tid = 1000;
        o->ts = TS0 + i * 1000;
        o->size = 8;
        o->kind = L_ALLOC;
        o->addr = 0x100000 + i * 16;
    }
    /* the last ops free the first allocation (too far back), the one exactly
     * at the window and the one just inside it */
    size_t far = 0, edge = n - 3 - LTR_REFS_WINDOW, inside = edge + 1;
    size_t ops[3] = {far, edge, inside};
    for (int k = 0; k < 3; k++) {
        op *o = &s.v[n - 3 + (size_t)k];
        o->kind = L_FREE;
        o->addr = s.v[ops[k]].addr;
    }
    readback r = written_and_read(&s, "window.ltr");
    assert_int_equal(r.delivered, n);
    assert_int_equal(r.damage, 0);
    free(s.v);
}

/* A leaking process: more allocations never freed than twice the window,
 * so that the writer prunes its table of addresses (refwrite.c, prune),
 * then frees of allocations from before the pruning (too far back: by
 * address), at the window's edge and inside it, and of the latest: each
 * read back as written. */
static void test_leak_past_twice_the_window(void **state)
{
    (void)state;
    size_t n = 2 * (size_t)LTR_REFS_WINDOW + 5000;
    script s = {calloc(n, sizeof(op)), n};
    for (size_t i = 0; i < n; i++)
        s.v[i] = (op){.pid = 100, .tid = 1000, .ts = TS0 + i * 1000, .size = 24, .kind = L_ALLOC,
                      .addr = 0x100000 + i * 32};
    size_t allocs = n - 4, edge = allocs - LTR_REFS_WINDOW;
    size_t freed[4] = {10, edge, edge + 1, allocs - 1};
    for (int k = 0; k < 4; k++) {
        op *o = &s.v[allocs + (size_t)k];
        o->kind = L_FREE;
        o->addr = s.v[freed[k]].addr;
    }
    readback r = written_and_read(&s, "leak.ltr");
    assert_int_equal(r.delivered, n);
    assert_int_equal(r.damage, 0);
    assert_int_equal(r.frees, 4);
    assert_int_equal(r.by_ref, 3); /* all but the first: kept through the pruning */
    free(s.v);
}

/* A process's tables dropped while blocks of its pid still come (the
 * recorder drops them when its connection closes: the writer kept them
 * for 64 processes after they ended): every event reads back as written,
 * without damage, and the frees of blocks allocated before the drop name
 * them by address, not by a reference into tables that are gone. */
static void ended_hook(ltr_writer *w, size_t block)
{
    ltr_error err;
    if (block == 60)
        assert_int_equal(ltr_writer_process_ended(w, 100, &err), 0);
}

static void test_process_ended_midway(void **state)
{
    (void)state;
    size_t n = 2000, half = n / 2;
    script s = {calloc(n, sizeof(op)), n};
    for (size_t i = 0; i < n; i++) {
        size_t b = i < half ? i : i - half; /* the allocations, then their frees in order */
        s.v[i] = (op){.pid = 100, .tid = 1000, .ts = TS0 + i * 1000, .size = 48,
                      .kind = i < half ? L_ALLOC : L_FREE, .addr = 0x100000 + b * 64};
    }
    readback kept = written_and_read(&s, "kept.ltr");
    const char *path = gen_tmp("ended.ltr");
    ltr_writer *w = open_heap_writer(path, LTR_HEAP_PROVIDER, 1 << 20);
    write_blocks(w, &s, 0, s.n, 3, ended_hook);
    ltr_error err;
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
    readback ended = read_back(path, &s);
    unlink(path);
    assert_int_equal(ended.delivered, n);
    assert_int_equal(ended.damage, 0);
    assert_int_equal(kept.by_ref, half);
    if (ended.by_ref >= half || ended.by_ref == 0)
        fail_msg("%zu of %zu frees by reference after the drop: wanted those of the blocks allocated after it",
                 ended.by_ref, half);
    free(s.v);
}

/* Flips a byte in the payload of the k-th EVENTS chunk: its CRC fails, a reader skips it. */
static void damage_events_chunk(const char *path, int k)
{
    size_t len;
    uint8_t *p = gen_slurp(path, &len);
    assert_non_null(p);
    int seen = 0, done = 0;
    for (size_t off = LTR_FILE_HEADER_SIZE; off + LTR_CHUNK_HEADER_SIZE <= len && !done;) {
        uint16_t type = ltr_get_u16(p + off + 4);
        uint32_t size = ltr_get_u32(p + off + 8);
        if (type == LTR_CHUNK_EVENTS && seen++ == k) {
            p[off + LTR_CHUNK_HEADER_SIZE + size / 2] ^= 0x55;
            done = 1;
        }
        off += LTR_CHUNK_HEADER_SIZE + size;
    }
    assert_true(done);
    assert_int_equal(gen_spit(path, p, len), 0);
    free(p);
}

static void test_lost_chunk_makes_references_unknown_not_wrong(void **state)
{
    (void)state;
    script s = make_script(20000, 4);
    const char *path = gen_tmp("lost.ltr");
    write_script(path, &s, 5, 1);
    damage_events_chunk(path, 3);
    readback r = read_back(path, &s); /* every event delivered is right (check_event) */
    print_message("%zu of %zu events read, %llu references unresolved\n", r.delivered, s.n,
                  (unsigned long long)r.unresolved);
    assert_true(r.delivered < s.n);
    assert_true(r.unresolved > 0);          /* frees of allocations in the lost chunk */
    assert_true(r.delivered + 2000 > s.n); /* and only those, with the chunk's own */
    unlink(path);
    free(s.v);
}

/* A chunk refused by the size limit: later frees of what it held carry their addresses. */
static size_t limit_at;
static void limit_hook(ltr_writer *w, size_t block)
{
    if (block == limit_at)
        ltr_writer_set_limit(w, ltr_writer_size(w) + 40); /* the next chunk cannot fit */
    if (block == limit_at + 40)
        ltr_writer_set_limit(w, 0);
}

static void test_refused_chunk_is_not_referred_to(void **state)
{
    (void)state;
    script s = make_script(20000, 6);
    const char *path = gen_tmp("refused.ltr");
    ltr_writer *w = open_heap_writer(path, LTR_HEAP_PROVIDER, 2048);
    dropped = 0;
    limit_at = 300;
    write_blocks(w, &s, 0, s.n, 7, limit_hook);
    ltr_error err;
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
    readback r = read_back(path, &s);
    print_message("%llu events dropped by the writer\n", (unsigned long long)dropped);
    assert_true(dropped > 0);
    assert_int_equal(r.delivered + dropped, s.n);
    assert_int_equal(r.damage, 0);
    unlink(path);
    free(s.v);
}

/* The METADATA chunk holding the heap LAYOUTs refused (size limit): the
 * writer must forget what it planned for them. The blocks that follow, of
 * layouts the file does not describe, go as they came and join no sequence;
 * once the layouts are written again, every event after them reads back
 * right, none referring to the unreadable ones. (Planned still, those blocks
 * were re-encoded and counted, and frees after the second LAYOUT referred
 * to allocations no reader could decode.) */
static void test_unwritten_layout_is_not_planned(void **state)
{
    (void)state;
    script s = make_script(8000, 8);
    const char *path = gen_tmp("unwritten-layout.ltr");
    ltr_writer *w = open_bare_writer(path, 2048);
    ltr_error err;
    ltr_bytes b = {0};
    heap_metadata(&b, LTR_HEAP_PROVIDER);
    ltr_writer_set_limit(w, ltr_writer_size(w) + 40); /* the LAYOUTs cannot fit */
    assert_int_not_equal(ltr_writer_metadata(w, b.data, b.len, &err), 0);
    ltr_writer_set_limit(w, 0);
    size_t half = s.n / 2;
    write_blocks(w, &s, 0, half, 9, NULL); /* of layouts the file does not have */
    assert_int_equal(ltr_writer_metadata(w, b.data, b.len, &err), 0);
    write_blocks(w, &s, half, s.n, 10, NULL);
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
    ltr_bytes_free(&b);
    readback r = read_back(path, &s);
    print_message("%zu events read, %llu references unresolved\n", r.delivered, (unsigned long long)r.unresolved);
    assert_int_equal(r.unresolved, 0);
    assert_int_equal(r.delivered, s.n - half); /* the second half, each one right (check_event) */
    assert_true(r.by_ref > 0);                 /* references among those */
    unlink(path);
    free(s.v);
}

/* A record of unknown layout amid a block: the references after it in that
 * block are reported, the next block resolves again. */
static void test_unreadable_record_spoils_only_its_block(void **state)
{
    (void)state;
    script s = {calloc(5, sizeof(op)), 5}; /* [2]: the record of unknown layout */
    s.v[0] = (op){100, 1000, L_ALLOC, 0x5000, 0, 16, TS0};
    s.v[1] = (op){100, 1000, L_ALLOC, 0x6000, 0, 16, TS0 + 1000};
    s.v[3] = (op){100, 1000, L_FREE, 0x5000, 0, 0, TS0 + 3000};
    s.v[4] = (op){100, 1000, L_FREE, 0x6000, 0, 0, TS0 + 4000};
    const char *path = gen_tmp("spoil.ltr");
    ltr_writer *w = open_heap_writer(path, LTR_HEAP_PROVIDER, 1 << 20);
    ltr_bytes recs = {0};
    put_cevent(&recs, &s.v[0], 0);
    put_cevent(&recs, &s.v[1], s.v[0].ts);
    uint8_t *h = ltr_bytes_grow(&recs, LTR_CEVENT_HEADER_MAX + 1); /* layout 99: never described */
    size_t hl = ltr_put_cevent_header(h, L_UNKNOWN, TS0 + 2000, s.v[1].ts, 1);
    h[hl] = 0;
    recs.len -= LTR_CEVENT_HEADER_MAX - hl;
    put_cevent(&recs, &s.v[3], TS0 + 2000);
    ltr_block_info info = {.pid = 100, .tid = 1000, .seq = 1, .event_count = 4};
    ltr_error err;
    assert_int_equal(ltr_writer_block(w, &info, recs.data, recs.len, &err), 0);
    recs.len = 0;
    put_cevent(&recs, &s.v[4], 0);
    info.seq = 2; /* the next buffer: not merged after one with such a record (writer.c) */
    info.event_count = 1;
    assert_int_equal(ltr_writer_block(w, &info, recs.data, recs.len, &err), 0);
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
    readback r = read_back(path, &s);
    assert_int_equal(r.delivered, 3); /* both allocations, and the free in the next block */
    assert_int_equal(r.damage, 2);    /* the unknown layout and the free after it (one entry, counted twice) */
    unlink(path);
    /* a record that is framed but does not parse: the next buffer is read too */
    w = open_heap_writer(path, LTR_HEAP_PROVIDER, 1 << 20);
    recs.len = 0;
    put_cevent(&recs, &s.v[0], 0);
    put_cevent(&recs, &s.v[1], s.v[0].ts);
    static const uint8_t bad[] = {0x02, 0x80, 0x80}; /* size 2, then a layout varint that never ends */
    memcpy(ltr_bytes_grow(&recs, sizeof bad), bad, sizeof bad);
    info = (ltr_block_info){.pid = 100, .tid = 1000, .seq = 1, .event_count = 3};
    assert_int_equal(ltr_writer_block(w, &info, recs.data, recs.len, &err), 0);
    recs.len = 0;
    put_cevent(&recs, &s.v[4], 0);
    info = (ltr_block_info){.pid = 100, .tid = 1000, .seq = 2, .event_count = 1};
    assert_int_equal(ltr_writer_block(w, &info, recs.data, recs.len, &err), 0);
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
    r = read_back(path, &s);
    assert_int_equal(r.delivered, 3); /* the free in the next buffer among them */
    ltr_bytes_free(&recs);
    unlink(path);
    free(s.v);
}

/* A producer may not name pnew: its layout is refused, nothing counts its values. */
static void test_producer_pnew_is_refused(void **state)
{
    (void)state;
    const char *path = gen_tmp("pnew.ltr");
    ltr_writer *w = open_heap_writer(path, LTR_HEAP_PROVIDER, 1 << 20);
    ltr_bytes b = {0};
    ltr_guid g;
    ltr_guid_from_name("Some.App", &g);
    gen_layout(&b, L_BAD, &g, 1, "Sneaky", "17:p"); /* 17: pnew */
    ltr_error err;
    assert_int_equal(ltr_writer_metadata(w, b.data, b.len, &err), 0);
    ltr_writer_close(w); /* the metadata chunk was written at once */
    ltr_trace *t;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    ltr_trace_summary sum;
    assert_int_equal(ltr_trace_scan(t, &sum, &err), 0);
    assert_null(ltr_trace_layout_find(t, L_BAD));
    assert_non_null(ltr_trace_layout_find(t, L_FREE));
    assert_int_equal(ltr_trace_layout_find(t, L_FREE)->fields[0].type, LTR_TYPE_PREF);
    assert_int_equal(sum.damage, 1);
    ltr_trace_close(t);
    ltr_bytes_free(&b);
    unlink(path);
}

/* What a version 3 trace holds, as (event, address) lines, and the file's version. */
static char *heap_lines(const char *path, uint32_t *version, int *refs, uint16_t collectors)
{
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    *version = ltr_trace_version(t);
    *refs = 0;
    size_t cap = 1 << 20, len = 0;
    char *out = calloc(1, cap);
    const ltr_event *ev;
    while (ltr_trace_next(t, &ev, &err) > 0) {
        ltr_guid heap;
        ltr_guid_from_name(LTR_HEAP_PROVIDER, &heap);
        if (!ev->layout->provider || memcmp(ev->layout->provider->guid.b, heap.b, 16) || ev->collector >= collectors)
            continue;
        uint64_t a = 0, o = 0;
        ltr_event_get_u64(ev, "address", &a);
        ltr_event_get_u64(ev, "old_address", &o);
        *refs |= (ev->block_flags & LTR_BLOCK_FLAG_REFS) != 0;
        len += (size_t)snprintf(out + len, cap - len, "%u %s %llx %llx\n", ev->tid, ev->layout->name,
                                (unsigned long long)a, (unsigned long long)o);
        assert_true(len < cap);
    }
    ltr_trace_close(t);
    return out;
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void put_chunk(ltr_bytes *f, uint16_t type, const ltr_bytes *payload, uint64_t seq)
{
    ltr_chunk_header c = {.type = type, .payload_size = (uint32_t)payload->len, .raw_size = (uint32_t)payload->len,
                          .seq = seq, .payload_crc = ltr_crc32(payload->data, payload->len)};
    ltr_chunk_header_encode(&c, ltr_bytes_grow(f, LTR_CHUNK_HEADER_SIZE));
    ltr_bytes_put_mem(f, payload->data, payload->len);
}

/* The script as a version 3 writer wrote it: the agent's layouts and
 * addresses as they are, one compact block per thread. */
static void write_raw_v3(const char *path, const script *s)
{
    ltr_bytes f = {0}, c = {0};
    uint8_t *h = ltr_bytes_grow(&f, LTR_FILE_HEADER_SIZE);
    memset(h, 0, LTR_FILE_HEADER_SIZE);
    memcpy(h, LTR_FILE_MAGIC, 8);
    ltr_put_u32(h + 8, 3);
    gen_header(&c);
    put_chunk(&f, LTR_CHUNK_HEADER, &c, 0);
    c.len = 0;
    heap_metadata(&c, LTR_HEAP_PROVIDER);
    put_chunk(&f, LTR_CHUNK_METADATA, &c, 1);
    c.len = 0;
    for (uint32_t t = 0; t < NPIDS * NTHREADS; t++) {
        uint32_t pid = 100 + t / NTHREADS, tid = 1000 + (t / NTHREADS) * 10 + t % NTHREADS, count = 0;
        ltr_bytes recs = {0};
        uint64_t prev = 0;
        for (size_t i = 0; i < s->n; i++)
            if (s->v[i].tid == tid) {
                put_cevent(&recs, &s->v[i], prev);
                prev = s->v[i].ts;
                count++;
            }
        ltr_bytes_put_mem(&c, LTR_BLOCK_MAGIC, 4);
        ltr_bytes_put_u16(&c, 0);
        ltr_bytes_put_u16(&c, LTR_BLOCK_FLAG_COMPACT);
        ltr_bytes_put_u32(&c, pid);
        ltr_bytes_put_u32(&c, tid);
        ltr_bytes_put_u64(&c, t);
        ltr_bytes_put_u32(&c, count);
        ltr_bytes_put_u32(&c, (uint32_t)recs.len);
        ltr_bytes_put_u64(&c, 0);
        ltr_bytes_put_mem(&c, recs.data, recs.len);
        ltr_bytes_free(&recs);
    }
    put_chunk(&f, LTR_CHUNK_EVENTS, &c, 2);
    assert_false(f.failed || c.failed);
    assert_int_equal(gen_spit(path, f.data, f.len), 0);
    ltr_bytes_free(&f);
    ltr_bytes_free(&c);
}

static void test_version3_reads_and_merges_into_references(void **state)
{
    (void)state;
    char v3[1024];
    const char *src = getenv("LTR_SOURCE_DIR");
    snprintf(v3, sizeof v3, "%s/tests/fuzz/corpus/trace/record-file.ltr", src ? src : ".");
    uint32_t version;
    int refs;
    char *before = heap_lines(v3, &version, &refs, UINT16_MAX);
    assert_int_equal(version, 3);
    assert_false(refs);
    assert_non_null(strstr(before, "Free")); /* the fixture frees what it allocated */
    free(before);
    /* a version 3 trace of the script, merged with a trace of the same host:
     * its heap layouts are re-encoded, the addresses are the same */
    script sc = make_script(3000, 8);
    const char *old = gen_tmp("v3.ltr"), *other = gen_tmp("other.ltr"), *merged = gen_tmp("merged.ltr");
    write_raw_v3(old, &sc);
    before = heap_lines(old, &version, &refs, UINT16_MAX);
    assert_int_equal(version, 3);
    assert_int_equal(count_lines(before), sc.n);
    gen_opts o = {.blocks = 2, .events_per_block = 3, .chunk_target = 0, .with_end = 1};
    assert_int_equal(gen_write(other, &o, NULL), 0);
    const char *in[2] = {old, other};
    ltr_error err;
    ltr_merge_report rep;
    assert_int_equal(ltr_merge(in, 2, merged, 0, &rep, &err), 0);
    char *after = heap_lines(merged, &version, &refs, UINT16_MAX);
    assert_int_equal(version, LTR_FORMAT_VERSION);
    assert_true(refs);
    assert_string_equal(after, before);
    free(before);
    free(after);
    free(sc.v);
    unlink(old);
    unlink(other);
    unlink(merged);
}


/* ---- eviction of a process's tables, then a lost chunk (found by a review) ---- */

/* One block of ops [from, to) of one thread. */
static void one_block(ltr_writer *w, const script *s, size_t from, size_t to, uint64_t seq)
{
    ltr_bytes recs = {0};
    uint64_t prev = 0;
    for (size_t i = from; i < to; i++) {
        put_cevent(&recs, &s->v[i], prev);
        prev = s->v[i].ts;
    }
    ltr_block_info info = {.pid = s->v[from].pid, .tid = s->v[from].tid, .seq = seq,
                           .event_count = (uint32_t)(to - from)};
    ltr_error err;
    assert_int_equal(ltr_writer_block(w, &info, recs.data, recs.len, &err), 0);
    ltr_bytes_free(&recs);
}

/* The writer drops the tables of the least recently used process past 64
 * (REFS_MAX_PROCESSES). It once started it again from bases (0, 0): when
 * the chunk holding the restarted process's first block was lost, the next
 * block's bases could be at or past the counts the reader still held from
 * before the eviction, and a reference made against the new ordinals
 * resolved to the old era's address of the same ordinal. A new sequence
 * now starts past every count the writer used. equal: B1 ends where the
 * old counts (1, 1) did; else B1 holds 3 allocations and the next block's
 * frees come after them. */
static void evicted_then_lost(int model, int equal)
{
    size_t n = 70;
    script s = {calloc(n, sizeof(op)), n};
    size_t k = 0;
    uint64_t ts = TS0;
    s.v[k++] = (op){100, 1000, L_ALLOC, 0x5000, 0, 16, ts}, ts += 1000; /* A: the old era of pid 100 */
    s.v[k++] = (op){100, 1000, L_FREE, 0x5000, 0, 0, ts}, ts += 1000;
    for (uint32_t p = 0; p < 64; p++) /* 64 other processes: pid 100's tables go */
        s.v[k++] = (op){2000 + p, 2000 + p, L_ALLOC, 0x9000, 0, 16, ts}, ts += 1000;
    if (equal) {
        s.v[k++] = (op){100, 1000, L_ALLOC, 0x6000, 0, 16, ts}, ts += 1000; /* B1: new era, its chunk lost */
        s.v[k++] = (op){100, 1000, L_FREE, 0x6000, 0, 0, ts}, ts += 1000;
        s.v[k++] = (op){100, 1000, L_ALLOC, 0x6000, 0, 16, ts}, ts += 1000; /* B2: bases (1, 1) again */
        s.v[k++] = (op){100, 1000, L_FREE, 0x6000, 0, 0, ts}, ts += 1000;
    } else {
        s.v[k++] = (op){100, 1000, L_ALLOC, 0x6000, 0, 16, ts}, ts += 1000; /* B1: ordinals 0..2, lost */
        s.v[k++] = (op){100, 1000, L_ALLOC, 0x7000, 0, 16, ts}, ts += 1000;
        s.v[k++] = (op){100, 1000, L_ALLOC, 0x8000, 0, 16, ts}, ts += 1000;
        s.v[k++] = (op){100, 1000, L_FREE, 0x6000, 0, 0, ts}, ts += 1000; /* B2: base (3, 0), frees ordinal 0 */
        n = k;
    }
    const char *path = gen_tmp("evict-lost.ltr");
    ltr_writer *w = open_heap_writer(path, LTR_HEAP_PROVIDER, 1); /* a chunk per block */
    ltr_writer_set_model(w, model);
    uint64_t seq = 0;
    one_block(w, &s, 0, 2, seq++);
    for (size_t i = 2; i < 66; i++)
        one_block(w, &s, i, i + 1, seq++);
    one_block(w, &s, 66, equal ? 68 : 69, seq++);
    one_block(w, &s, equal ? 68 : 69, n, seq++);
    ltr_error err;
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
    damage_events_chunk(path, 65); /* B1 */
    s.n = n;
    readback r = read_back(path, &s); /* check_event: every address delivered is the one written */
    print_message("model %d: %zu of %zu events read, damage %llu\n", model, r.delivered, n,
                  (unsigned long long)r.damage);
    unlink(path);
    free(s.v);
}

static void test_evicted_then_lost_model(void **state)
{
    (void)state;
    evicted_then_lost(1, 1);
}

static void test_evicted_then_lost_format4(void **state)
{
    (void)state;
    evicted_then_lost(0, 1);
}

static void test_evicted_then_lost_higher_base(void **state)
{
    (void)state;
    evicted_then_lost(1, 0);
}

/* ---- a layout id described first as another provider's layout (found by a review) ---- */

/* The reader keeps the first description of a layout id. The writer once
 * remembered only the heap layouts it planned, so a heap LAYOUT repeating an
 * id some other layout took first was planned: its events re-encoded and
 * counted by the writer, read as the other layout and not counted by the
 * reader, and a free in the same block named another allocation. Shared
 * metadata is the traced programs' to write (a program that registers ids
 * ahead of the counter). */
static void test_layout_id_taken_first(void **state)
{
    (void)state;
    const char *path = gen_tmp("dupid.ltr");
    ltr_writer *w = open_bare_writer(path, 1 << 20);
    ltr_bytes b = {0};
    ltr_guid g;
    ltr_guid_from_name("Some.App", &g);
    size_t r = ltr_bytes_record_begin(&b, LTR_META_PROVIDER);
    ltr_bytes_put_mem(&b, g.b, 16);
    ltr_bytes_put_str(&b, "Some.App");
    ltr_bytes_record_end(&b, r);
    gen_layout(&b, L_ALLOC, &g, 1, "Other", "14:a,14:b,14:c,1:d"); /* id 1 first: not a heap layout */
    ltr_error err;
    assert_int_equal(ltr_writer_metadata(w, b.data, b.len, &err), 0);
    b.len = 0;
    heap_metadata(&b, LTR_HEAP_PROVIDER); /* ids 1 (Alloc, a repeat for the reader), 2, 3 */
    assert_int_equal(ltr_writer_metadata(w, b.data, b.len, &err), 0);
    ltr_bytes_free(&b);
    op v[4] = {{100, 1000, L_REALLOC, 0x7000, 0x100, 16, TS0},        /* block 0: allocation ordinal 0 for both */
               {100, 1000, L_ALLOC, 0x6000, 0, 16, TS0 + 1000},       /* block 1: the writer's ordinal 1 */
               {100, 1000, L_FREE, 0x6000, 0, 0, TS0 + 2000}};        /* code 1: ordinal 1 for the writer */
    ltr_bytes recs = {0};
    put_cevent(&recs, &v[0], 0);
    ltr_block_info info = {.pid = 100, .tid = 1000, .seq = 0, .event_count = 1};
    assert_int_equal(ltr_writer_block(w, &info, recs.data, recs.len, &err), 0);
    recs.len = 0;
    put_cevent(&recs, &v[1], 0);
    put_cevent(&recs, &v[2], v[1].ts);
    info = (ltr_block_info){.pid = 100, .tid = 1000, .seq = 1, .event_count = 2};
    assert_int_equal(ltr_writer_block(w, &info, recs.data, recs.len, &err), 0);
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
    ltr_bytes_free(&recs);
    ltr_trace *t;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    const ltr_event *ev;
    int frees = 0;
    while (ltr_trace_next(t, &ev, &err) > 0) {
        print_message("event %s\n", ev->layout->name);
        if (ev->layout->event_id == LTR_HEAP_EV_FREE && !strcmp(ev->layout->name, "Free")) {
            uint64_t a = 0;
            assert_int_equal(ltr_event_get_u64(ev, "address", &a), 0);
            print_message("free address %#llx (written 0x6000)\n", (unsigned long long)a);
            assert_int_equal(a, 0x6000);
            frees++;
        }
    }
    ltr_trace_close(t);
    unlink(path);
}

/* A heap LAYOUT repeating an id with the same field types but "size"
 * elsewhere (here swapped with "stack"): the reader keeps the first
 * description, so its allocator model sizes the events by the first one's
 * size field. The writer took the repeat's plan (only the types were
 * compared), sized them by the stack field, and told an allocation 32
 * bytes after one of 100 bytes as the next address, which the reader put
 * 112 bytes on: a wrong address, not damage (found by a review). Shared
 * metadata is the traced programs' to write: one program could do this to
 * another's layout id. */
static void test_layout_repeat_with_size_elsewhere(void **state)
{
    (void)state;
    const char *path = gen_tmp("dupsize.ltr");
    ltr_writer *w = open_heap_writer(path, LTR_HEAP_PROVIDER, 1 << 20);
    ltr_bytes b = {0};
    ltr_guid g;
    ltr_guid_from_name(LTR_HEAP_PROVIDER, &g);
    gen_layout(&b, L_ALLOC, &g, LTR_HEAP_EV_ALLOC, "Alloc", "16:address,14:stack,14:size,1:function");
    ltr_error err;
    assert_int_equal(ltr_writer_metadata(w, b.data, b.len, &err), 0);
    ltr_bytes_free(&b);
    op v[2] = {{100, 1000, L_ALLOC, 0x10000, 0, 100, TS0},          /* stack 7 (put_cevent) */
               {100, 1000, L_ALLOC, 0x10020, 0, 100, TS0 + 1000}}; /* 32 on: 7 bytes' chunk, not 100's */
    ltr_bytes recs = {0};
    put_cevent(&recs, &v[0], 0);
    put_cevent(&recs, &v[1], v[0].ts);
    ltr_block_info info = {.pid = 100, .tid = 1000, .seq = 0, .event_count = 2};
    assert_int_equal(ltr_writer_block(w, &info, recs.data, recs.len, &err), 0);
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
    ltr_bytes_free(&recs);
    script s = {v, 2};
    readback r = read_back(path, &s); /* check_event: each address as written */
    assert_int_equal(r.delivered, 2);
    assert_int_equal(r.damage, 0);
    unlink(path);
}

/* A field named "size", a NUL and more (only a program writing the shared
 * metadata itself can name one so): the reader keeps names up to their
 * first NUL, so that is its model's size field; the writer must think so
 * too, or it tells next addresses from another size than the reader's. */
static void test_size_name_with_a_nul(void **state)
{
    (void)state;
    const char *path = gen_tmp("nulsize.ltr");
    ltr_writer *w = open_bare_writer(path, 1 << 20);
    ltr_bytes b = {0};
    heap_metadata(&b, LTR_HEAP_PROVIDER);
    uint8_t *at = memmem(b.data, b.len, "\x04\x00size", 6);
    assert_non_null(at); /* the Alloc layout's size field: u16 length 4, then the name */
    size_t off = (size_t)(at - b.data);
    ltr_bytes named = {0};
    ltr_bytes_put_mem(&named, b.data, off);
    ltr_bytes_put_mem(&named, "\x06\x00size\0x", 8); /* "size", NUL, "x" */
    ltr_bytes_put_mem(&named, b.data + off + 6, b.len - off - 6);
    /* the record holding it is 2 bytes longer: its header's u32 size */
    size_t rec = 0;
    for (size_t r = 0; r < named.len; r += ltr_get_u32(named.data + r + 4))
        if (r <= off && off < r + ltr_get_u32(b.data + r + 4)) {
            rec = r;
            break;
        }
    ltr_put_u32(named.data + rec + 4, ltr_get_u32(named.data + rec + 4) + 2);
    ltr_error err;
    assert_int_equal(ltr_writer_metadata(w, named.data, named.len, &err), 0);
    op v[3] = {{100, 1000, L_ALLOC, 0x10000, 0, 100, TS0},
               {100, 1000, L_ALLOC, 0x10020, 0, 100, TS0 + 1000},  /* 32 on: a writer blind to the size */
               {100, 1000, L_ALLOC, 0x10090, 0, 100, TS0 + 2000}}; /* 112 on: 100 bytes' chunk */
    ltr_bytes recs = {0};
    for (int i = 0; i < 3; i++)
        put_cevent(&recs, &v[i], i ? v[i - 1].ts : 0);
    ltr_block_info info = {.pid = 100, .tid = 1000, .seq = 0, .event_count = 3};
    assert_int_equal(ltr_writer_block(w, &info, recs.data, recs.len, &err), 0);
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
    script s = {v, 3};
    readback r = read_back(path, &s); /* check_event: each address as written */
    assert_int_equal(r.delivered, 3);
    assert_int_equal(r.damage, 0);
    assert_int_equal(r.allocs_by_next, 1); /* the third */
    ltr_bytes_free(&recs);
    ltr_bytes_free(&named);
    ltr_bytes_free(&b);
    unlink(path);
}

/* ---- random heaps, junk records, plain blocks, refused chunks ---- */

static unsigned rr(unsigned *st) { *st = *st * 1103515245u + 12345u; return (*st >> 8) & 0xffffff; }

static size_t refuse_at = (size_t)-1;
static void refuse_hook(ltr_writer *w, size_t block)
{
    if (block == refuse_at)
        ltr_writer_set_limit(w, ltr_writer_size(w) + 40);
    if (block == refuse_at + 7)
        ltr_writer_set_limit(w, 0);
}

static void random_round(unsigned seed, uint32_t npids, int damage)
{
    unsigned st = seed;
    size_t n = 3000 + rr(&st) % 3000;
    script s = {calloc(n, sizeof(op)), n};
    enum { POOL = 24 };
    uint8_t (*live)[POOL] = calloc(npids, POOL);
    for (size_t i = 0; i < n; i++) {
        uint32_t p = rr(&st) % npids;
        op *o = &s.v[i];
        o->pid = 100 + p;
        o->tid = 100000 + p * 4 + rr(&st) % 3;
        o->ts = TS0 + i * 1000;
        unsigned a = rr(&st) % POOL, b = rr(&st) % POOL, r = rr(&st) % 100;
        uint64_t base = (r < 3) ? 0 : 0x7f0000001000ull; /* tiny addresses now and then */
        if (r < 5) { /* a free of something never allocated, or a double free */
            o->kind = L_FREE;
        } else if (!live[p][a]) {
            o->kind = L_ALLOC;
            live[p][a] = 1;
        } else if (rr(&st) % 3) {
            o->kind = L_FREE;
            live[p][a] = 0;
        } else {
            o->kind = L_REALLOC;
            o->old = base + (uint64_t)a * 32;
            b = live[p][b] ? a : b;
            live[p][a] = 0;
            live[p][b] = 1;
            a = b;
        }
        o->addr = base + (uint64_t)a * 32;
        unsigned sr = rr(&st) % 10;
        o->size = sr == 0 ? 0 : sr == 1 ? ((uint64_t)1 << (rr(&st) % 64)) + rr(&st) : sr < 5 ? 1 + rr(&st) % 5000
                                                                                        : 8 + (uint64_t)(a % 3) * 40;
    }
    const char *path = gen_tmp("rand.ltr");
    ltr_writer *w = open_heap_writer(path, LTR_HEAP_PROVIDER, 256 + rr(&st) % 8192);
    unsigned codes = rr(&st) % 6; /* format 4's, 5's or 6's pnew codes */
    if (codes < 2)
        ltr_writer_set_model(w, 0);
    else if (codes == 2)
        ltr_writer_set_next(w, 0);
    refuse_at = rr(&st) % 2 ? rr(&st) % 300 : (size_t)-1;
    /* blocks: each thread's events in its order, threads interleaved at random */
    size_t nthreads = npids * 4;
    size_t *next = calloc(nthreads, sizeof *next);
    ltr_bytes recs = {0};
    uint64_t seq = 0;
    dropped = 0;
    for (size_t blocks = 0;; blocks++) {
        size_t left = 0, t;
        for (t = 0; t < nthreads; t++) {
            while (next[t] < n && s.v[next[t]].tid != 100000 + (t / 4) * 4 + t % 4)
                next[t]++;
            left += next[t] < n;
        }
        if (!left)
            break;
        do
            t = rr(&st) % nthreads;
        while (next[t] >= n);
        uint32_t tid = 100000 + (uint32_t)(t / 4) * 4 + (uint32_t)(t % 4);
        recs.len = 0;
        uint32_t count = 0, want = 1 + rr(&st) % 12;
        uint64_t prev = 0;
        size_t i = next[t];
        for (; i < n && count < want; i++)
            if (s.v[i].tid == tid) {
                unsigned j = rr(&st) % 200;
                if (j == 0 || j == 1) { /* junk: a record of an unknown layout, or a heap one that does not parse */
                    uint8_t pay[2] = {0x80, 0x80};
                    uint8_t *h = ltr_bytes_grow(&recs, LTR_CEVENT_HEADER_MAX + 2);
                    size_t hl = ltr_put_cevent_header(h, j == 0 ? L_UNKNOWN : L_ALLOC, prev + 1, prev, 2);
                    memcpy(h + hl, pay, 2);
                    recs.len -= LTR_CEVENT_HEADER_MAX - hl;
                    prev = prev + 1;
                    count++;
                }
                put_cevent(&recs, &s.v[i], prev);
                prev = s.v[i].ts;
                count++;
            }
        next[t] = i;
        refuse_hook(w, blocks);
        ltr_block_info info = {.pid = 100 + (uint32_t)(t / 4), .tid = tid, .seq = seq++, .event_count = count,
                               .plain = rr(&st) % 17 == 0};
        ltr_error err;
        (void)ltr_writer_block(w, &info, recs.data, recs.len, &err);
    }
    ltr_error err;
    (void)ltr_writer_flush(w, 0, &err);
    ltr_writer_close(w);
    if (damage) {
        size_t len;
        uint8_t *p = gen_slurp(path, &len);
        int chunks = 0;
        for (size_t off = LTR_FILE_HEADER_SIZE; off + LTR_CHUNK_HEADER_SIZE <= len;) {
            chunks += ltr_get_u16(p + off + 4) == LTR_CHUNK_EVENTS;
            off += LTR_CHUNK_HEADER_SIZE + ltr_get_u32(p + off + 8);
        }
        free(p);
        for (int d = 0; d < damage && chunks > 2; d++)
            damage_events_chunk(path, 1 + (int)(rr(&st) % (unsigned)(chunks - 1)));
    }
    readback r = read_back(path, &s); /* every delivered event is the one written */
    char *js = analysis_json(path); /* its fast path takes the events the reader delivers */
    assert_int_equal(json_u64(js, "heap_events"), r.delivered);
    free(js);
    if (seed % 20 == 0)
        print_message("seed %u pids %u: %zu of %zu delivered, %llu dropped, damage %llu\n", seed, npids, r.delivered,
                      n, (unsigned long long)dropped, (unsigned long long)r.damage);
    ltr_bytes_free(&recs);
    free(next);
    free(live);
    unlink(path);
    free(s.v);
}

/* Random heaps of 1 to 90 processes (past 64, the writer drops tables):
 * double frees, frees of what was never allocated, tiny addresses, sizes
 * from 0 to 2^63, reallocs in place and moved, records of unknown layouts
 * and heap records that do not parse, blocks written plain, chunks refused
 * by a size limit, the model on and off, lost chunks: every address a
 * reader delivers is the one written, and the analyzer takes the same
 * events. (A review's test; it found the eviction bug above.) */
static void test_random_heaps_every_address_back(void **state)
{
    (void)state;
    unsigned rounds = getenv("LTR_TEST_ROUNDS") ? (unsigned)atoi(getenv("LTR_TEST_ROUNDS")) : 40;
    for (unsigned seed = 1; seed <= rounds; seed++)
        random_round(seed, seed % 2 ? 3 : 90, 0);
    for (unsigned seed = 1; seed <= rounds; seed++)
        random_round(1000 + seed, seed % 2 ? 1 + seed % 30 : 90, 1 + seed % 3);
    for (size_kind = 1; size_kind <= 2; size_kind++)
        for (unsigned seed = 1; seed <= rounds / 2; seed++)
            random_round(2000 + seed, 1 + seed % 30, seed % 3);
    size_kind = 0;
}

/* The script's events in blocks of its threads, then, with end, END (and
 * the index before it); index, when not NULL, written as a chunk first. */
static void write_indexed(const char *path, const script *s, int end, const ltr_bytes *index)
{
    ltr_writer *w = open_heap_writer(path, LTR_HEAP_PROVIDER, 4096);
    write_blocks(w, s, 0, s->n, 31, NULL);
    ltr_error err;
    if (index)
        assert_int_equal(ltr_writer_chunk(w, LTR_CHUNK_INDEX, index->data, index->len, &err), 0);
    ltr_bytes kv = {0};
    if (end)
        assert_int_equal(ltr_writer_kv(w, LTR_CHUNK_END, &kv, &err), 0);
    else
        assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
}

/* Reads the trace's events, checking each against what the index said was
 * still to come at every position before its own: never earlier. The
 * entries met, and 1 when an index was found. */
static int index_holds(const char *path, size_t *entries, size_t *events)
{
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    ltr_chunk_index x = {0};
    int found = ltr_trace_find_index(t, &x);
    uint64_t known = 0, rest = 0, seq = UINT64_MAX; /* what the blocks read before said; the current one */
    uint32_t end = 0;
    const ltr_event *ev;
    *events = 0;
    while (ltr_trace_next(t, &ev, &err) > 0) {
        ++*events;
        uint64_t s2;
        uint32_t e2;
        ltr_trace_read_pos(t, &s2, &e2);
        if (!found)
            continue;
        ltr_index_bound b = ltr_chunk_index_at(&x, s2, e2);
        assert_true(b.first && b.first <= ev->ts); /* its block is indexed, from no later than it */
        if (s2 != seq || e2 != end) { /* a new block: the last one's rest holds from here on */
            known = rest > known ? rest : known;
            seq = s2;
            end = e2;
            rest = b.rest;
        }
        assert_true(known <= ev->ts);
    }
    *entries = x.n;
    ltr_chunk_index_free(&x);
    ltr_trace_close(t);
    return found;
}

/* A complete trace holds an index of its blocks, each no later than its
 * events, and what it says is still to come never comes earlier; a trace
 * without END has none. */
static void test_index_written_and_read(void **state)
{
    (void)state;
    script s = make_script(20000, 41);
    const char *path = gen_tmp("indexed.ltr");
    size_t entries, events;
    write_indexed(path, &s, 1, NULL);
    assert_int_equal(index_holds(path, &entries, &events), 1);
    print_message("%zu events, %zu index entries\n", events, entries);
    assert_true(entries > 100);
    unlink(path);
    write_indexed(path, &s, 0, NULL);
    assert_int_equal(index_holds(path, &entries, &events), 0);
    unlink(path);
    free(s.v);
}

/* A writer handed an EVENTS chunk whole writes no index; an INDEX payload
 * that does not parse (cut short, out of order, an unknown flag) is not
 * used: the trace is read as one without. */
static void test_damaged_index_not_used(void **state)
{
    (void)state;
    script s = make_script(2000, 43);
    const char *path = gen_tmp("badindex.ltr");
    ltr_bytes bad[3] = {{0}, {0}, {0}};
    ltr_bytes_put_u64(&bad[0], 5); /* 8 bytes of 24 */
    for (int k = 0; k < 2; k++) { /* (9, 0) then (3, 0) */
        ltr_bytes_put_u64(&bad[1], k ? 3 : 9);
        ltr_bytes_put_u32(&bad[1], 0);
        ltr_bytes_put_u32(&bad[1], 0);
        ltr_bytes_put_u64(&bad[1], 1);
    }
    ltr_bytes_put_u64(&bad[2], 1);
    ltr_bytes_put_u32(&bad[2], 10);
    ltr_bytes_put_u32(&bad[2], 0x80);
    ltr_bytes_put_u64(&bad[2], 1);
    size_t entries, events;
    ltr_writer *w = open_heap_writer(path, LTR_HEAP_PROVIDER, 4096); /* an EVENTS chunk handed whole: */
    write_blocks(w, &s, 0, s.n, 31, NULL);
    ltr_error err;
    assert_int_equal(ltr_writer_chunk(w, LTR_CHUNK_EVENTS, "", 0, &err), 0);
    ltr_bytes kv = {0};
    assert_int_equal(ltr_writer_kv(w, LTR_CHUNK_END, &kv, &err), 0);
    ltr_writer_close(w);
    assert_int_equal(index_holds(path, &entries, &events), 0); /* the index could not name its blocks */
    unlink(path);
    for (int k = 0; k < 3; k++) {
        write_indexed(path, &s, 1, &bad[k]);
        assert_int_equal(index_holds(path, &entries, &events), 0);
        assert_int_equal(events, s.n);
        unlink(path);
        ltr_bytes_free(&bad[k]);
    }
    free(s.v);
}

/* The analysis of a complete trace hands events on as its index allows:
 * the same report as holding them (LTR_ANALYZE_INDEX=0). An index that
 * lies (nothing before the end still to come) makes events late, said so,
 * and every one still analyzed. */
static void test_analysis_by_index(void **state)
{
    (void)state;
    script s = make_script(20000, 45);
    const char *path = gen_tmp("an-index.ltr");
    write_indexed(path, &s, 1, NULL);
    char *by_index = analysis_json(path);
    setenv("LTR_ANALYZE_INDEX", "0", 1);
    char *held = analysis_json(path);
    unsetenv("LTR_ANALYZE_INDEX");
    assert_string_equal(by_index, held);
    assert_null(strstr(by_index, "later than"));
    unlink(path);
    ltr_bytes lie = {0};
    for (uint64_t seq = 0; seq < 64; seq++) { /* every block of chunks 0..63 (4 KiB ones) "from the end on" */
        for (uint32_t end = 1; end <= 4096; end *= 2) {
            ltr_bytes_put_u64(&lie, seq);
            ltr_bytes_put_u32(&lie, end);
            ltr_bytes_put_u32(&lie, LTR_INDEX_SORTED);
            ltr_bytes_put_u64(&lie, UINT64_MAX - 1);
        }
    }
    write_indexed(path, &s, 1, &lie);
    char *lied = analysis_json(path);
    assert_non_null(strstr(lied, "later than"));
    assert_int_equal(json_u64(lied, "heap_events"), s.n);
    assert_int_equal(json_u64(lied, "allocations"), json_u64(held, "allocations"));
    free(lied);
    free(by_index);
    free(held);
    ltr_bytes_free(&lie);
    unlink(path);
    free(s.v);
}

/* Spans written with the index, read back with it; a SPANS payload that
 * does not give one for each entry is not used (the index still is). */
static void test_spans_written_and_read(void **state)
{
    (void)state;
    script s = make_script(20000, 41);
    const char *path = gen_tmp("spans.ltr");
    write_indexed(path, &s, 1, NULL);
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    ltr_chunk_index x = {0};
    assert_int_equal(ltr_trace_find_index(t, &x), 1);
    assert_int_equal(x.spans, 1);
    uint64_t events = 0;
    for (size_t i = 0; i < x.n; i++) {
        assert_true(x.e[i].pid >= 100 && x.e[i].ts <= x.e[i].last);
        events += x.e[i].events;
    }
    assert_int_equal(events, s.n);
    assert_true(ltr_chunk_index_behind(&x) <= s.n);
    uint8_t *p;
    size_t len;
    assert_int_equal(ltr_chunk_index_encode_spans(&x, &p, &len), 0);
    assert_int_equal(ltr_chunk_index_parse_spans(p, len - 1, &x), -1);
    assert_int_equal(x.spans, 0);
    assert_int_equal(ltr_chunk_index_behind(&x), UINT64_MAX);
    assert_int_equal(ltr_chunk_index_parse_spans(p, len, &x), 0);
    assert_int_equal(x.spans, 1);
    free(p);
    ltr_chunk_index_free(&x);
    ltr_trace_close(t);
    unlink(path);
    write_indexed(path, &s, 0, NULL); /* cut short: neither */
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    assert_int_equal(ltr_trace_find_index(t, &x), 0);
    assert_int_equal(x.spans, 0);
    ltr_trace_close(t);
    unlink(path);
    free(s.v);
}

/* What waits behind a block, from the spans: the events of the entries
 * before it whose latest time reaches its earliest, where an entry of its
 * process (or a METADATA chunk's ends) before it reached its earliest. */
static void test_spans_tell_what_waits(void **state)
{
    (void)state;
    static const struct { uint32_t pid, events; uint64_t ts, last; } e[] = {
        {1, 10, 100, 200}, /* A */
        {2, 5, 150, 300},  /* B: its process's first, behind nothing */
        {1, 7, 120, 130},  /* C: A reached 200 >= 120: A and B (15) wait for it */
        {3, 1, 50, 50},    /* D: its process's first: behind nothing, however early */
        {0, 1, 400, 400},  /* E: ends, of any process */
        {3, 2, 350, 360},  /* F: the ends reached 400: only E's 1 event reaches 350 */
    };
    ltr_chunk_index x = {0};
    size_t n = sizeof e / sizeof *e;
    for (size_t i = 0; i < n; i++) {
        ltr_chunk_index_add(&x, i, 10, 0, e[i].ts);
        ltr_chunk_index_span(&x, e[i].pid, e[i].events, e[i].last);
    }
    assert_int_equal(ltr_chunk_index_behind(&x), UINT64_MAX); /* spans not said known */
    x.spans = 1;
    assert_int_equal(ltr_chunk_index_behind(&x), 15);
    x.e[2].pid = 4; /* C of a process of its own: nothing waits */
    assert_int_equal(ltr_chunk_index_behind(&x), 1);
    x.e[2].ts = 0; /* a time not known: the spans cannot tell */
    assert_int_equal(ltr_chunk_index_behind(&x), UINT64_MAX);
    x.e[2].ts = 120;
    x.e[0].last = UINT64_MAX;
    assert_int_equal(ltr_chunk_index_behind(&x), UINT64_MAX);
    ltr_chunk_index_free(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_address_comes_back),
        cmocka_unit_test(test_thrifty_writer_same_events),
        cmocka_unit_test(test_consecutive_buffers_one_block),
        cmocka_unit_test(test_thread_next_buffers_one_block),
        cmocka_unit_test(test_plain_blocks_among_the_others),
        cmocka_unit_test(test_window_edge),
        cmocka_unit_test(test_leak_past_twice_the_window),
        cmocka_unit_test(test_process_ended_midway),
        cmocka_unit_test(test_tiny_addresses_grow_a_record),
        cmocka_unit_test(test_many_processes),
        cmocka_unit_test(test_analyzer_reads_references),
        cmocka_unit_test(test_times_back_in_a_block),
        cmocka_unit_test(test_allocator_model_tells_reuse_by_place),
        cmocka_unit_test(test_lost_chunk_distrusts_the_model),
        cmocka_unit_test(test_format4_codes_still_read),
        cmocka_unit_test(test_fresh_blocks_told_by_the_next_address),
        cmocka_unit_test(test_next_address_only_after_a_known_one),
        cmocka_unit_test(test_run_as_events_one_by_one),
        cmocka_unit_test(test_teardown_told_by_the_allocation_after),
        cmocka_unit_test(test_freed_next_by_number),
        cmocka_unit_test(test_ended_process_let_go),
        cmocka_unit_test(test_window_touches_what_it_fills),
        cmocka_unit_test(test_format5_codes_still_read),
        cmocka_unit_test(test_format6_codes_still_read),
        cmocka_unit_test(test_time_runs_read_as_format7),
        cmocka_unit_test(test_addresses_told_as_differences),
        cmocka_unit_test(test_differences_by_kind_within_a_block),
        cmocka_unit_test(test_analyzer_reads_columns_as_the_reader),
        cmocka_unit_test(test_lost_chunk_makes_references_unknown_not_wrong),
        cmocka_unit_test(test_refused_chunk_is_not_referred_to),
        cmocka_unit_test(test_unwritten_layout_is_not_planned),
        cmocka_unit_test(test_unreadable_record_spoils_only_its_block),
        cmocka_unit_test(test_producer_pnew_is_refused),
        cmocka_unit_test(test_version3_reads_and_merges_into_references),
        cmocka_unit_test(test_evicted_then_lost_model),
        cmocka_unit_test(test_evicted_then_lost_format4),
        cmocka_unit_test(test_evicted_then_lost_higher_base),
        cmocka_unit_test(test_layout_id_taken_first),
        cmocka_unit_test(test_layout_repeat_with_size_elsewhere),
        cmocka_unit_test(test_size_name_with_a_nul),
        cmocka_unit_test(test_random_heaps_every_address_back),
        cmocka_unit_test(test_index_written_and_read),
        cmocka_unit_test(test_damaged_index_not_used),
        cmocka_unit_test(test_reference_past_the_count_fails),
        cmocka_unit_test(test_analysis_by_index),
        cmocka_unit_test(test_spans_written_and_read),
        cmocka_unit_test(test_spans_tell_what_waits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
