/*
 * format/nodevar.c — FRAME_NODES (kind 8) and FRAME_NODES_V (kind 9)
 * records (see nodevar.h): the node iterator both sides read them with, the
 * per-chunk bases kind 9 ids count from, and the writer's rewrite of kind 8
 * into kind 9. Layouts in docs/heap-events.md.
 */
#include "format/nodevar.h"
#include "base/varint.h"

#include <errno.h>
#include <stdlib.h>

#define NODES8_HEAD 10u /* u32 pid, u32 parent_id, u16 count */
#define NODE8_SIZE 12u  /* u32 node_id, u64 return address */

/* ---- reading nodes ---- */

int ltr_nodes_open(ltr_nodes_rec *r, const uint8_t *body, size_t len)
{
    if (len < NODES8_HEAD)
        return -1;
    *r = (ltr_nodes_rec){.pid = ltr_get_u32(body), .parent = ltr_get_u32(body + 4),
                         .count = ltr_get_u16(body + 8), .p = body + NODES8_HEAD, .len = len - NODES8_HEAD};
    return r->len / NODE8_SIZE < r->count ? -1 : 0;
}

/* A varint of at most `max` from the record; 0 when bad. Up to 8 bytes at
 * once (an_uvar): a node's return address takes 6 or 7, and the byte loop
 * was a third of reading bench/heap's frame nodes (callgrind: 28 M of 65 M
 * instructions). */
static inline __attribute__((always_inline)) int take_uvar(ltr_nodes_rec *r, uint64_t max, uint64_t *v)
{
    size_t n = an_uvar(r->p + r->pos, r->len - r->pos, r->readable - r->pos, v);
    r->pos += n;
    return n && *v <= max;
}

int ltr_nodes_open_var(ltr_nodes_rec *r, const uint8_t *body, size_t len, size_t readable)
{
    uint64_t pid, parent, count;
    *r = (ltr_nodes_rec){.p = body, .len = len, .readable = readable < len ? len : readable, .var = 1};
    if (!take_uvar(r, UINT32_MAX, &pid))
        return -2;
    r->pid = (uint32_t)pid;
    if (!take_uvar(r, LTR_FRAME_NODE_MAX_ID - 1, &parent) || !take_uvar(r, UINT16_MAX, &count))
        return -1;
    r->parent = (uint32_t)parent;
    r->count = (uint32_t)count;
    return 0;
}

/* The id of the next kind 9 node from its varint: the first counts from
 * base + 1 (zigzag), each later one from the one before + 1 (a gap). */
static int next_var_id(ltr_nodes_rec *r, uint64_t v, uint32_t *id)
{
    int64_t next;
    if (r->i == 0) {
        int64_t d = ltr_unzigzag(v);
        if (d <= -(int64_t)LTR_FRAME_NODE_MAX_ID || d >= (int64_t)LTR_FRAME_NODE_MAX_ID)
            return -1;
        next = (int64_t)r->base + 1 + d;
    } else {
        if (v >= LTR_FRAME_NODE_MAX_ID)
            return -1;
        next = (int64_t)r->id + 1 + (int64_t)v;
    }
    if (next <= 0 || next >= (int64_t)LTR_FRAME_NODE_MAX_ID)
        return -1;
    *id = (uint32_t)next;
    return 0;
}

/* ltr_nodes_next, inline in ltr_nodes_take's loop. */
static inline int next_node(ltr_nodes_rec *r, uint32_t *id, uint64_t *ip)
{
    if (r->i == r->count)
        return 0;
    if (!r->var) {
        const uint8_t *n = r->p + NODE8_SIZE * r->i;
        *id = ltr_get_u32(n);
        *ip = ltr_get_u64(n + 4);
        if (*id == 0 || *id >= LTR_FRAME_NODE_MAX_ID)
            return -1;
    } else {
        uint64_t v;
        if (!take_uvar(r, UINT64_MAX, &v) || next_var_id(r, v, id) < 0 || !take_uvar(r, UINT64_MAX, ip))
            return -1;
    }
    r->id = *id;
    r->i++;
    return 1;
}

int ltr_nodes_next(ltr_nodes_rec *r, uint32_t *id, uint64_t *ip) { return next_node(r, id, ip); }

int ltr_nodes_take(ltr_nodes_rec *r, ltr_node *v, uint32_t max)
{
    uint32_t n = 0, up = r->i ? r->id : r->parent;
    int k = 1;
    while (n < max && (k = next_node(r, &v[n].id, &v[n].ip)) > 0) {
        if (up >= v[n].id) /* each node is the parent of the next: parents are below their children */
            return -1;
        up = v[n++].id;
    }
    return k < 0 ? -1 : (int)n;
}

int ltr_nodes_check(ltr_nodes_rec r, uint32_t *last)
{
    ltr_node v[LTR_NODES_BATCH];
    int k;
    while ((k = ltr_nodes_take(&r, v, LTR_NODES_BATCH)) > 0)
        ;
    *last = r.i ? r.id : r.parent;
    return k;
}

/* ---- bases ---- */

struct ltr_node_base {
    uint32_t pid, base;
    int state; /* 0: empty slot, 1: base known, or an LTR_NODE_BASE_* */
};

void ltr_node_bases_clear(ltr_node_bases *b)
{
    if (b->cap)
        memset(b->v, 0, sizeof *b->v * b->cap);
    b->hot = NULL;
    b->n = 0;
    b->all = 0;
}

void ltr_node_bases_free(ltr_node_bases *b)
{
    free(b->v);
    *b = (ltr_node_bases){0};
}

static ltr_node_base *base_slot(ltr_node_base *v, size_t cap, uint32_t pid)
{
    size_t i = (pid * 2654435761u) & (cap - 1);
    while (v[i].state && v[i].pid != pid)
        i = (i + 1) & (cap - 1);
    return &v[i];
}

static int bases_grow(ltr_node_bases *b)
{
    size_t cap = b->cap ? b->cap * 2 : 16;
    ltr_node_base *v = calloc(cap, sizeof *v);
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < b->cap; i++)
        if (b->v[i].state)
            *base_slot(v, cap, b->v[i].pid) = b->v[i];
    free(b->v);
    b->v = v;
    b->hot = NULL;
    b->cap = cap;
    return 0;
}

int ltr_node_bases_get(const ltr_node_bases *b, uint32_t pid, uint32_t *base)
{
    const ltr_node_base *e = b->hot && b->hot->pid == pid ? b->hot : b->cap ? base_slot(b->v, b->cap, pid) : NULL;
    int state = e && e->state ? e->state : b->all ? b->all : 1;
    *base = state == 1 && e && e->state ? e->base : 0;
    return state == 1 ? 0 : state;
}

/* Without memory for an entry, no pid's base can be trusted any more. */
static void put_base(ltr_node_bases *b, uint32_t pid, uint32_t base, int state)
{
    if (b->all == LTR_NODE_BASE_NO_MEMORY)
        return;
    if (b->hot && b->hot->pid == pid) {
        *b->hot = (ltr_node_base){pid, base, state};
        return;
    }
    if ((b->n + 1) * 2 > b->cap && bases_grow(b) < 0) {
        ltr_node_bases_clear(b);
        b->all = LTR_NODE_BASE_NO_MEMORY;
        return;
    }
    ltr_node_base *e = base_slot(b->v, b->cap, pid);
    b->n += !e->state;
    *e = (ltr_node_base){pid, base, state};
    b->hot = e;
}

void ltr_node_bases_set(ltr_node_bases *b, uint32_t pid, uint32_t base) { put_base(b, pid, base, 1); }

void ltr_node_bases_spoil(ltr_node_bases *b, uint32_t pid)
{
    put_base(b, pid, 0, LTR_NODE_BASE_SPOILED);
}

void ltr_node_bases_spoil_all(ltr_node_bases *b)
{
    if (b->all == LTR_NODE_BASE_NO_MEMORY)
        return;
    ltr_node_bases_clear(b);
    b->all = LTR_NODE_BASE_SPOILED;
}

/* ---- the writer's rewrite ---- */

static void put_uvar(ltr_bytes *out, uint64_t v)
{
    uint8_t *q = ltr_bytes_grow(out, LTR_VARINT_MAX);
    size_t n = ltr_put_uvar(q, v);
    if (!out->failed)
        out->len -= LTR_VARINT_MAX - n;
}

/* One good kind 8 record (r) as kind 9 in out; its pid's base moves to its last node. */
static void put_var_record(ltr_node_bases *b, ltr_nodes_rec r, ltr_bytes *out)
{
    uint32_t base, id, prev = 0;
    uint64_t ip;
    if (ltr_node_bases_get(b, r.pid, &base) < 0)
        return; /* without memory: the caller fails the rewrite */
    size_t at = ltr_bytes_record_begin(out, LTR_META_FRAME_NODES_V);
    put_uvar(out, r.pid);
    put_uvar(out, r.parent);
    put_uvar(out, r.count);
    for (uint32_t i = 0; ltr_nodes_next(&r, &id, &ip) > 0; i++, prev = id) {
        put_uvar(out, i == 0 ? ltr_zigzag((int64_t)id - (int64_t)base - 1) : id - prev - 1);
        put_uvar(out, ip);
    }
    ltr_bytes_record_end(out, at);
    if (r.count)
        ltr_node_bases_set(b, r.pid, prev);
}

static void rewrite_record(ltr_node_bases *b, const uint8_t *rec, size_t size, ltr_bytes *out)
{
    uint16_t kind = ltr_get_u16(rec);
    const uint8_t *body = rec + LTR_RECORD_HEADER_SIZE;
    size_t blen = size - LTR_RECORD_HEADER_SIZE;
    ltr_nodes_rec r;
    uint32_t last;
    if (kind == LTR_META_FRAME_NODES && ltr_nodes_open(&r, body, blen) == 0 && ltr_nodes_check(r, &last) == 0) {
        put_var_record(b, r, out);
        return;
    }
    if (kind == LTR_META_PROCESS && blen >= 4)
        ltr_node_bases_set(b, ltr_get_u32(body), 0); /* a new image: its ids start over */
    ltr_bytes_put_mem(out, rec, size); /* a bad kind 8 too: the reader will say what is wrong */
}

int ltr_nodevar_rewrite(const uint8_t *p, size_t len, ltr_bytes *out)
{
    ltr_node_bases b = {0};
    size_t pos = 0;
    while (pos + LTR_RECORD_HEADER_SIZE <= len) {
        uint32_t size = ltr_get_u32(p + pos + 4);
        if (size < LTR_RECORD_HEADER_SIZE || size > len - pos)
            break;
        rewrite_record(&b, p + pos, size, out);
        pos += size;
    }
    ltr_bytes_put_mem(out, p + pos, len - pos); /* whatever did not frame, as it was */
    int failed = out->failed || b.all == LTR_NODE_BASE_NO_MEMORY;
    ltr_node_bases_free(&b);
    return failed ? -ENOMEM : 0;
}
