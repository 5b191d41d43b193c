/*
 * format/stackshare.c — STACK records rewritten as STACK_REF (see
 * stackshare.h). Two open-addressing tables: trie nodes keyed by (trie,
 * parent node, return address), and the current trie of each pid.
 */
#include "format/stackshare.h"

#include <errno.h>
#include <stdlib.h>

struct ltr_stack_node {
    uint64_t ip;
    uint32_t tree, parent;
    uint32_t node;  /* 0: empty slot */
    uint32_t stack; /* the stack id that first went through this node */
};

#define STACK_BODY_MIN 10u /* u32 pid, u32 stack_id, u16 frame_count */

static size_t hash3(uint32_t tree, uint32_t parent, uint64_t ip)
{
    uint64_t h = (ip ^ ((uint64_t)tree << 32 | parent)) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h ^ h >> 29);
}

static ltr_stack_node *node_slot(ltr_stack_node *t, size_t cap, uint32_t tree, uint32_t parent,
                                 uint64_t ip)
{
    size_t i = hash3(tree, parent, ip) & (cap - 1);
    while (t[i].node && (t[i].ip != ip || t[i].parent != parent || t[i].tree != tree))
        i = (i + 1) & (cap - 1);
    return &t[i];
}

static int grow_nodes(ltr_stackshare *s)
{
    size_t cap = s->cap ? s->cap * 2 : 1u << 14;
    ltr_stack_node *t = calloc(cap, sizeof *t);
    if (!t)
        return -ENOMEM;
    for (size_t i = 0; i < s->cap; i++)
        if (s->nodes[i].node)
            *node_slot(t, cap, s->nodes[i].tree, s->nodes[i].parent, s->nodes[i].ip) = s->nodes[i];
    free(s->nodes);
    s->nodes = t;
    s->cap = cap;
    return 0;
}

static size_t pid_slot(const ltr_stackshare *s, uint32_t pid)
{
    size_t i = (pid * 0x9e3779b9u) & (s->tcap - 1);
    while (s->tree_id[i] && s->tree_pid[i] != pid)
        i = (i + 1) & (s->tcap - 1);
    return i;
}

static int grow_trees(ltr_stackshare *s)
{
    ltr_stackshare g = {.tcap = s->tcap ? s->tcap * 2 : 64};
    g.tree_pid = calloc(g.tcap, sizeof *g.tree_pid);
    g.tree_id = calloc(g.tcap, sizeof *g.tree_id);
    if (!g.tree_pid || !g.tree_id) {
        free(g.tree_pid);
        free(g.tree_id);
        return -ENOMEM;
    }
    for (size_t i = 0; i < s->tcap; i++)
        if (s->tree_id[i]) {
            size_t j = pid_slot(&g, s->tree_pid[i]);
            g.tree_pid[j] = s->tree_pid[i];
            g.tree_id[j] = s->tree_id[i];
        }
    free(s->tree_pid);
    free(s->tree_id);
    s->tree_pid = g.tree_pid;
    s->tree_id = g.tree_id;
    s->tcap = g.tcap;
    return 0;
}

/* The trie of pid: its current one, or a new one when fresh (a PROCESS record). */
static int tree_of(ltr_stackshare *s, uint32_t pid, int fresh, uint32_t *out)
{
    if ((s->tn + 1) * 2 > s->tcap && grow_trees(s) < 0)
        return -ENOMEM;
    size_t i = pid_slot(s, pid);
    if (!s->tree_id[i] || fresh) {
        s->tn += !s->tree_id[i];
        s->tree_pid[i] = pid;
        s->tree_id[i] = ++s->next_tree;
    }
    *out = s->tree_id[i];
    return 0;
}

/* Frame `level` of a stack of n frames stored innermost first; level 0 is the outermost. */
static uint64_t frame_at(const uint8_t *frames, uint16_t n, uint32_t level)
{
    return ltr_get_u64(frames + 8u * (n - 1 - level));
}

static void remember(ltr_stackshare *s, uint32_t level, uint64_t ip, uint32_t node, uint32_t stack)
{
    if (level < LTR_STACKSHARE_PATH) {
        s->last_ip[level] = ip;
        s->last_node[level] = node;
        s->last_stack[level] = stack;
        s->last_n = level + 1;
    }
}

/* How many outer frames of the stack the trie holds; sets the deepest node and its stack. */
static uint16_t match(ltr_stackshare *s, uint32_t tree, const uint8_t *frames, uint16_t n, uint32_t *parent,
                      uint32_t *base)
{
    uint16_t k = 0;
    uint32_t last_n = s->last_tree == tree ? s->last_n : 0;
    for (; k < n && k < last_n && s->last_ip[k] == frame_at(frames, n, k); k++) {
        *parent = s->last_node[k];
        *base = s->last_stack[k];
    }
    s->last_tree = tree;
    s->last_n = k;
    for (; k < n && s->cap; k++) {
        uint64_t ip = frame_at(frames, n, k);
        const ltr_stack_node *e = node_slot(s->nodes, s->cap, tree, *parent, ip);
        if (!e->node)
            break;
        *parent = e->node;
        *base = e->stack;
        remember(s, k, ip, e->node, e->stack);
    }
    return k;
}

/* Adds the frames from level `from` on (outer to inner) below node parent, made by stack id. */
static int add_nodes(ltr_stackshare *s, uint32_t tree, uint32_t parent, const uint8_t *frames, uint16_t n,
                     uint16_t from, uint32_t id)
{
    for (uint32_t k = from; k < n && s->n < LTR_STACKSHARE_MAX_NODES; k++) {
        if ((s->n + 1) * 2 > s->cap && grow_nodes(s) < 0)
            return -ENOMEM;
        uint64_t ip = frame_at(frames, n, k);
        ltr_stack_node *e = node_slot(s->nodes, s->cap, tree, parent, ip);
        *e = (ltr_stack_node){.ip = ip, .tree = tree, .parent = parent, .node = ++s->next_node, .stack = id};
        s->n++;
        parent = e->node;
        remember(s, k, ip, parent, id);
    }
    return 0;
}

/* Rewrites one STACK record (body b of blen bytes) into out. */
static int rewrite_stack(ltr_stackshare *s, const uint8_t *rec, const uint8_t *b, size_t blen,
                         ltr_bytes *out)
{
    uint32_t pid = ltr_get_u32(b), id = ltr_get_u32(b + 4), tree;
    uint16_t n = ltr_get_u16(b + 8);
    const uint8_t *frames = b + STACK_BODY_MIN;
    if (blen < STACK_BODY_MIN + 8u * n || id == 0) {
        ltr_bytes_put_mem(out, rec, LTR_RECORD_HEADER_SIZE + blen); /* the reader will say what is wrong */
        return 0;
    }
    if (tree_of(s, pid, 0, &tree) < 0)
        return -ENOMEM;
    uint32_t parent = 0, base = 0;
    uint16_t shared = match(s, tree, frames, n, &parent, &base);
    uint16_t fresh = (uint16_t)(n - shared);
    if (!shared) {
        ltr_bytes_put_mem(out, rec, LTR_RECORD_HEADER_SIZE + blen);
    } else {
        size_t r = ltr_bytes_record_begin(out, LTR_META_STACK_REF);
        ltr_bytes_put_u32(out, pid);
        ltr_bytes_put_u32(out, id);
        ltr_bytes_put_u32(out, base);
        ltr_bytes_put_u16(out, shared);
        ltr_bytes_put_u16(out, fresh);
        ltr_bytes_put_mem(out, frames, 8u * fresh);
        ltr_bytes_record_end(out, r);
    }
    return add_nodes(s, tree, parent, frames, n, shared, id);
}

static int rewrite_record(ltr_stackshare *s, const uint8_t *rec, size_t size, ltr_bytes *out)
{
    uint16_t kind = ltr_get_u16(rec);
    const uint8_t *body = rec + LTR_RECORD_HEADER_SIZE;
    size_t blen = size - LTR_RECORD_HEADER_SIZE;
    uint32_t tree;
    if (kind == LTR_META_STACK && blen >= STACK_BODY_MIN)
        return rewrite_stack(s, rec, body, blen, out);
    if (kind == LTR_META_PROCESS && blen >= 4 && tree_of(s, ltr_get_u32(body), 1, &tree) < 0)
        return -ENOMEM; /* a new process or image: its stack ids start over */
    ltr_bytes_put_mem(out, rec, size);
    return 0;
}

int ltr_stackshare_rewrite(ltr_stackshare *s, const uint8_t *p, size_t len, ltr_bytes *out)
{
    size_t pos = 0;
    while (pos + LTR_RECORD_HEADER_SIZE <= len) {
        uint32_t size = ltr_get_u32(p + pos + 4);
        if (size < LTR_RECORD_HEADER_SIZE || size > len - pos)
            break;
        if (rewrite_record(s, p + pos, size, out) < 0 || out->failed) {
            ltr_stackshare_reset(s);
            return -ENOMEM;
        }
        pos += size;
    }
    ltr_bytes_put_mem(out, p + pos, len - pos); /* whatever did not frame, as it was */
    if (out->failed) {
        ltr_stackshare_reset(s);
        return -ENOMEM;
    }
    return 0;
}

void ltr_stackshare_reset(ltr_stackshare *s)
{
    ltr_stackshare_free(s);
}

void ltr_stackshare_free(ltr_stackshare *s)
{
    free(s->nodes);
    free(s->tree_pid);
    free(s->tree_id);
    *s = (ltr_stackshare){0};
}
