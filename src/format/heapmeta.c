/*
 * format/heapmeta.c — the reader's tables of the heap agent's METADATA
 * records: STACK (kind 5), STACK_REF (kind 7: a stack told as the outer
 * frames of an earlier one plus its own), FRAME_NODES (kind 8: nodes of the
 * agent's frame trie, a stack's id being its innermost node's; kind 9 the
 * same in varints, format/nodevar.h) and MODULE
 * (kind 6), docs/heap-events.md. Stacks are found by (pid, id) through a map
 * of per-pid maps; a stack told by nodes is built there the first time it is
 * asked for, from its node up to the root, and is unknown while any node of
 * that path is. Modules are kept in the order met. Records are
 * bounds-checked like every other (ltr_cursor).
 *
 * Every traced process of a session appends to one shared metadata region,
 * so a traced program can write records for another pid; only a new image
 * (a PROCESS record) may number a pid's stacks anew. Since format 3 a record
 * that gives a known (pid, id) of the image other frames is damage and that
 * stack is unknown from then on (neither definition can be trusted): taken,
 * one traced program rewrote the stacks another's allocations were blamed
 * on, and the trace said "damage: none". Format 2 traces keep "a repeat
 * replaces" (their exec restarted ids without a new image).
 *
 * Since format 3 the agent tells stacks by frame nodes only: an image of a
 * pid with nodes never wrote a STACK or STACK_REF record, so those records
 * (before its first node or after) are another program's, left out as
 * FORGED damage and the nodes' stacks kept. Taken as a conflict, one
 * forged STACK record per id made every stack of a traced perl unknown, or
 * stood in for nodes the perl lost when the region was full.
 *
 * A MODULE record can be another program's too: a load of /usr/bin/ls over
 * a traced perl's text made perl's frames read ls+0x..., "damage: none". A
 * process maps one object at an address at a time, and its main program
 * until an exec, so within one image a load over the main program's
 * segments is damage, left out. A load over a library still loaded takes
 * its place: the agent writes an unload before it, but an unload that found
 * the region full is lost (counted, not written again), and calling that
 * damage named a dlopen'd library after the one dlclosed before it. A load
 * that repeats a loaded module (same bias, path and segments) is a repeat.
 * An unload of the image's main program (the PROCESS record's exe) is never
 * real: left out as FORGED. The loaded segments sit in a tree (tsearch)
 * whose compare calls overlapping segments equal: a forger's million loads
 * cost log n each, not a scan of the others.
 */
#include "format/reader.h"
#include "format/nodevar.h"

#include <errno.h>
#include <search.h>
#include <stdbool.h>
#include <stdlib.h>

typedef struct stack_rec {
    ltr_stack pub;
    uint64_t frames[];
} stack_rec;

/* A process's frame nodes, found by id: memory follows the nodes the file
 * holds, not the largest id it names (ids go up to 2^24; an array indexed
 * by id let a 1 kB trace claim 8 GB). The agent numbers nodes 1, 2, 3...:
 * a node whose id is below twice the nodes held (and 4096) is kept in a page
 * of NODE_PAGE ids, indexed by id, the rest in a list found through a map.
 * The map alone was 10 % of `ltr analyze` on cc1plus's trace (perf), a probe
 * per frame of every stack built. Pages by id, not one array of nodes and
 * one of positions grown by realloc: the copies and the page faults of the
 * copies were 28 % of reading the nodes in `ltr analyze` of cc1plus's trace
 * (perf); reading them in a new process (nodevar.h's harness, least of 40)
 * took 11.3 ms instead of 12.7, and 3.8 instead of 4.1 on bench/heap's.
 * Pages of 1024 ids (12 kB): 256 and 512 were within 2 % of it, 4096 4 %
 * slower, 16384 (each its own mmap) 17 %. Peak memory of `ltr analyze`
 * (/usr/bin/time, median of 7): cc1plus's 87 MB instead of 97, bench/heap's
 * 48 instead of 43 (the pages share the heap with the rest). Page 0 starts
 * at SMALL_PAGE ids and doubles as nodes come, and a page past it needs
 * NODE_PAGE / 4 nodes held: a page for each pid of one node let a traced
 * program writing one node for each of 200 000 made-up pids (6 MB of
 * records, a 208 kB trace) take `ltr info` to 3.1 GB.
 *
 * A node is 12 bytes, packed: its slot in a page says its id, and the
 * parent's word whether the slot holds one. With the id beside them (16
 * bytes) the pages of cc1plus's trace were 8.97 MiB of the analysis's
 * malloc peak, now 6.20 (docs/benchmarks.md, "The analysis's fixed cost
 * and memory (session 40)": a first analysis pays about 6 ms of system
 * time for each 2 MiB it touches). */
typedef struct __attribute__((packed)) frame_node {
    uint64_t ip;
    uint32_t up; /* the parent's id (below the node's own; 0: outermost frame) | NODE_HELD; 0: an empty slot */
} frame_node;

#define NODE_PAGE 1024u
#define NODE_CONFLICT UINT32_MAX /* a node's up when two records of its image disagreed: unknown */
#define NODE_HELD 0x80000000u    /* in up: ids are below 2^24 (LTR_FRAME_NODE_MAX_ID) */
_Static_assert(LTR_FRAME_NODE_MAX_ID <= NODE_HELD, "a parent's id leaves NODE_HELD free");
#define DENSE_SLACK 4096u
#define SMALL_PAGE 4u    /* page 0's first size */
#define SMALL_SLACK 64u  /* page 0 holds ids below twice the nodes held and this */

typedef struct node_table {
    frame_node **page;  /* ids [k * NODE_PAGE, (k + 1) * NODE_PAGE) in page[k], NULL until met */
    uint32_t npage, n;  /* n: the nodes held */
    uint32_t cap0;      /* the ids page[0] holds (NODE_PAGE once grown) */
    frame_node *far;    /* the other nodes, in the order met */
    uint32_t nfar, capfar;
    ltr_idmap index;    /* their id -> 1 + position in far */
} node_table;

typedef struct module_rec module_rec;

/* A segment of a loaded module, as its image's tree holds it. */
typedef struct seg_key {
    uint64_t start, end;
    module_rec *m;
    bool in_tree;
} seg_key;

struct module_rec {
    ltr_module pub;
    char *path;
    uint8_t build_id[255];
    seg_key *keys; /* pub.segment_count of them, after segs */
    ltr_segment segs[];
};

/* The modules a pid's image has loaded, by their segments. */
typedef struct mod_image {
    void *root; /* tsearch tree of seg_key */
} mod_image;

static ltr_idmap *pid_stacks(ltr_trace *t, uint32_t pid)
{
    return ltr_idmap_table(&t->stack_pids, pid, sizeof(ltr_idmap));
}

/* What stack_pids holds for a (pid, id) whose definitions disagreed: found, it is unknown. */
static stack_rec conflicted;

/* Whether a record that defines a known (pid, id) anew is damage (see the top). */
static bool strict_ids(const ltr_trace *t) { return t->version >= 3; }

static void conflict_damage(ltr_trace *t, const char *what, uint32_t pid, uint32_t id)
{
    ltr_trace_chunk_damage(t, LTR_DAMAGE_BAD_RECORD,
                           "a %s record gives stack %u of pid %u other frames than an earlier record (another traced "
                           "program wrote it, or two processes of the session have that pid, each in a pid namespace "
                           "of its own?): that stack is left unknown",
                           what, id, pid);
}

/* A STACK or STACK_REF record for (pid, id) of an image told by frame nodes: another program's (see the top). */
static void forged_damage(ltr_trace *t, const char *what, uint32_t pid, uint32_t id)
{
    ltr_trace_chunk_damage(t, LTR_DAMAGE_FORGED,
                           "a %s record for stack %u of pid %u, whose stacks come from frame nodes (another traced "
                           "program wrote it): left out, the process's own kept",
                           what, id, pid);
}

static bool told_by_nodes(const ltr_trace *t, uint32_t pid);

/* A stack of n frames of (pid, id), to fill; not listed yet. NULL without memory. */
static stack_rec *new_stack(const ltr_trace *t, uint32_t pid, uint32_t id, uint32_t n)
{
    stack_rec *s = malloc(sizeof *s + 8u * n);
    /* an old image's (its key above every pid): the stack says its process */
    uint32_t shown = pid >= LTR_IMAGE_KEY_BASE && pid - LTR_IMAGE_KEY_BASE < t->nimages
                         ? t->images[pid - LTR_IMAGE_KEY_BASE].pid
                         : pid;
    if (s)
        s->pub = (ltr_stack){.pid = shown, .id = id, .frame_count = (uint16_t)n, .frames = s->frames};
    return s;
}

/* s listed and findable by (pid, id) in m, replacing what m held there;
 * freed without memory. */
static const ltr_stack *list_stack(ltr_trace *t, ltr_idmap *m, stack_rec *s)
{
    if (!m || ltr_ptrvec_push(&t->stacks, s) < 0) {
        free(s);
        return NULL;
    }
    ltr_idmap_put(m, s->pub.id, s); /* without memory it stays listed, not findable */
    return &s->pub;
}

/* The stack a STACK or STACK_REF record defines (filled), taken unless
 * (strict_ids) the pid's image has frame nodes (then it is another
 * program's: left out) or it gives a known stack of the image other frames
 * (then neither is taken: the stack is unknown, the record damage). */
static void define_stack(ltr_trace *t, const char *what, uint32_t pid, stack_rec *s)
{
    bool forged = told_by_nodes(t, pid);
    ltr_idmap *m = forged ? NULL : pid_stacks(t, pid);
    if (!m) {
        if (forged)
            forged_damage(t, what, pid, s->pub.id);
        free(s);
        return;
    }
    const ltr_stack *was = strict_ids(t) ? ltr_idmap_get(m, s->pub.id) : NULL;
    if (!was || (was != &conflicted.pub && was->frame_count == s->pub.frame_count &&
                 !memcmp(was->frames, s->frames, 8u * s->pub.frame_count))) {
        list_stack(t, m, s); /* new, or the same frames again */
        return;
    }
    if (was != &conflicted.pub) {
        conflict_damage(t, what, pid, s->pub.id);
        ltr_idmap_put(m, s->pub.id, &conflicted);
    }
    free(s);
}

int ltr_meta_parse_stack(ltr_trace *t, ltr_cursor *c)
{
    uint32_t pid = ltr_cursor_u32(c), id = ltr_cursor_u32(c);
    uint16_t n = ltr_cursor_u16(c);
    const uint8_t *f = ltr_cursor_take(c, 8u * n);
    if (!f || id == 0)
        return -1;
    stack_rec *s = new_stack(t, pid, id, n);
    for (uint16_t i = 0; s && i < n; i++)
        s->frames[i] = ltr_get_u64(f + 8u * i);
    for (uint16_t i = 0; t->addr_hook && i < n; i++)
        t->addr_hook(t->addr_hook_ctx, pid, ltr_get_u64(f + 8u * i));
    if (s)
        define_stack(t, "STACK", pid, s);
    return 0; /* out of memory is not damage */
}

int ltr_meta_parse_stack_ref(ltr_trace *t, ltr_cursor *c)
{
    uint32_t pid = ltr_cursor_u32(c), id = ltr_cursor_u32(c), base_id = ltr_cursor_u32(c);
    uint16_t shared = ltr_cursor_u16(c), n = ltr_cursor_u16(c);
    const uint8_t *f = ltr_cursor_take(c, 8u * n);
    if (f && id && told_by_nodes(t, pid)) { /* before its base is looked at: the writer's base may be forged too */
        forged_damage(t, "STACK_REF", pid, id);
        return 0;
    }
    ltr_idmap *m = ltr_idmap_get(&t->stack_pids, pid);
    const stack_rec *base = m ? ltr_idmap_get(m, base_id) : NULL;
    if (!f || id == 0 || !base || base == &conflicted || shared > base->pub.frame_count ||
        (uint32_t)n + shared > UINT16_MAX)
        return -1; /* the base stack unknown (its record lost?), or not that long */
    const uint64_t *outer = base->frames + (base->pub.frame_count - shared);
    for (uint16_t i = 0; t->addr_hook && i < n; i++) /* the shared ones were met with the base */
        t->addr_hook(t->addr_hook_ctx, pid, ltr_get_u64(f + 8u * i));
    stack_rec *s = new_stack(t, pid, id, (uint32_t)n + shared);
    if (!s)
        return 0;
    for (uint16_t i = 0; i < n; i++)
        s->frames[i] = ltr_get_u64(f + 8u * i);
    memcpy(s->frames + n, outer, 8u * shared); /* base may be the stack s replaces: still allocated */
    define_stack(t, "STACK_REF", pid, s);
    return 0;
}

static node_table *pid_nodes(ltr_trace *t, uint32_t pid)
{
    return ltr_idmap_table(&t->node_pids, pid, sizeof(node_table));
}

/* id's slot in its page when the page is there (holding id or empty), else NULL. */
static frame_node *page_at(const node_table *nt, uint32_t id)
{
    uint32_t k = id / NODE_PAGE;
    return k < nt->npage && nt->page[k] && (k || id < nt->cap0) ? &nt->page[k][id % NODE_PAGE] : NULL;
}

/* The parent's id of a node that is not NODE_CONFLICT. */
static uint32_t node_parent(const frame_node *fn) { return fn->up & ~NODE_HELD; }

/* Node id, whose page slot (page_at) is at. */
static frame_node *node_get_at(const node_table *nt, uint32_t id, frame_node *at)
{
    if (at && at->up)
        return at;
    uintptr_t i = nt->index.n ? (uintptr_t)ltr_idmap_get(&nt->index, id) : 0;
    return i ? &nt->far[i - 1] : NULL;
}

static frame_node *node_get(const node_table *nt, uint32_t id) { return node_get_at(nt, id, page_at(nt, id)); }

/* Page 0 grown to hold id, if the nodes held justify it. */
static bool grow_first_page(node_table *nt, uint32_t id)
{
    if (id >= 2u * nt->n + SMALL_SLACK)
        return false;
    uint32_t cap = nt->cap0 ? nt->cap0 : SMALL_PAGE;
    while (cap <= id)
        cap *= 2;
    frame_node *p = realloc(nt->page[0], sizeof *p * cap);
    if (!p)
        return false;
    memset(p + nt->cap0, 0, sizeof *p * (cap - nt->cap0));
    nt->page[0] = p;
    nt->cap0 = cap;
    return true;
}

/* id's slot in its page, when its page is there or the nodes held justify
 * it; NULL otherwise or without memory. */
static frame_node *page_slot(node_table *nt, uint32_t id)
{
    uint32_t k = id / NODE_PAGE;
    if (k == 0 && nt->npage && id >= nt->cap0)
        return grow_first_page(nt, id) ? &nt->page[0][id] : NULL;
    if (k >= nt->npage || !nt->page[k]) {
        if (id >= 2u * nt->n + (k ? DENSE_SLACK : SMALL_SLACK) || (k && nt->n < NODE_PAGE / 4))
            return NULL;
        if (k >= nt->npage) {
            uint32_t npage = nt->npage ? nt->npage : 1;
            while (npage <= k)
                npage *= 2;
            frame_node **v = realloc(nt->page, sizeof *v * npage);
            if (!v)
                return NULL;
            memset(v + nt->npage, 0, sizeof *v * (npage - nt->npage));
            nt->page = v;
            nt->npage = npage;
        }
        if (k == 0)
            return grow_first_page(nt, id) ? &nt->page[0][id] : NULL;
        if (!(nt->page[k] = calloc(NODE_PAGE, sizeof **nt->page)))
            return NULL;
    }
    return &nt->page[k][id % NODE_PAGE];
}

/* A far node: appended to the list, found through the map. */
static frame_node *far_slot(node_table *nt, uint32_t id)
{
    if (nt->nfar == nt->capfar) {
        uint32_t cap = nt->capfar ? nt->capfar * 2 : 4; /* a made-up pid's one node: little */
        frame_node *v = realloc(nt->far, sizeof *v * cap);
        if (!v)
            return NULL;
        nt->far = v;
        nt->capfar = cap;
    }
    if (ltr_idmap_put(&nt->index, id, (void *)(uintptr_t)(nt->nfar + 1)) < 0)
        return NULL;
    return &nt->far[nt->nfar++];
}

/* A new node id in nt, to fill, in its page slot `at` (page_at) when
 * there is one: a new id's page was looked for once, not again by
 * page_slot (25 instructions of about 100 a node stored, bench/heap's
 * trace). NULL without memory. */
static frame_node *node_add(node_table *nt, uint32_t id, frame_node *at)
{
    frame_node *fn = at ? at : page_slot(nt, id);
    if (!fn)
        fn = far_slot(nt, id);
    nt->n += fn != NULL;
    return fn;
}

/* Forgets the stacks of pid found so far (they stay allocated: callers may
 * hold them): its nodes changed under them. */
static void drop_found_stacks(ltr_trace *t, uint32_t pid)
{
    ltr_idmap *m = ltr_idmap_get(&t->stack_pids, pid);
    if (m) {
        ltr_idmap_free(m);
        *m = (ltr_idmap){0};
    }
}

/* Frees what nt holds but the page array (NULL pages). */
static void nodes_clear(node_table *nt)
{
    for (uint32_t k = 0; k < nt->npage; k++) {
        free(nt->page[k]);
        nt->page[k] = NULL;
    }
    ltr_idmap_free(&nt->index);
    free(nt->far);
    nt->far = NULL;
    nt->n = nt->nfar = nt->capfar = nt->cap0 = 0;
}

/* map's value for pid handed over to key, and a zeroed one of size bytes
 * for the pid; false if that cannot be (no memory): the pid's stays. drop
 * frees an old value that found no place under key (the old image's go). */
static bool hand_over(ltr_idmap *map, uint32_t pid, uint32_t key, size_t size, void (*drop)(void *))
{
    void *old = ltr_idmap_get(map, pid), *fresh = old ? calloc(1, size) : NULL;
    if (!old)
        return true;
    if (!fresh || ltr_idmap_put(map, pid, fresh) < 0) {
        free(fresh);
        return false;
    }
    if (ltr_idmap_put(map, key, old) < 0)
        drop(old);
    return true;
}

static void drop_nodes(void *v)
{
    node_table *nt = v;
    nodes_clear(nt);
    free(nt->page);
    free(nt);
}

/* The stacks found so far stay allocated, in t->stacks: callers may hold them. */
static void drop_found(void *v)
{
    ltr_idmap_free(v);
    free(v);
}

/* Whether pid's image has frame nodes, so that (strict_ids) a STACK or STACK_REF record of it is another program's. */
static bool told_by_nodes(const ltr_trace *t, uint32_t pid)
{
    const node_table *nt = strict_ids(t) ? ltr_idmap_get(&t->node_pids, pid) : NULL;
    return nt && nt->n;
}

int ltr_heapmeta_has_stacks(const ltr_trace *t, uint32_t pid)
{
    const node_table *nt = ltr_idmap_get(&t->node_pids, pid);
    const ltr_idmap *m = strict_ids(t) ? ltr_idmap_get(&t->stack_pids, pid) : NULL;
    return (nt && nt->n) || (m && m->n);
}

void ltr_heapmeta_new_image(ltr_trace *t, uint32_t pid, uint32_t key)
{
    if (!ltr_heapmeta_has_stacks(t, pid))
        return; /* format 2's STACK records (agents before FRAME_NODES): a later one of an id replaces it */
    if (!key || !hand_over(&t->node_pids, pid, key, sizeof(node_table), drop_nodes)) {
        node_table *nt = ltr_idmap_get(&t->node_pids, pid);
        if (nt && nt->n)
            nodes_clear(nt);
    }
    if (!key || !hand_over(&t->stack_pids, pid, key, sizeof(ltr_idmap), drop_found))
        drop_found_stacks(t, pid);
}

/* At the first node of pid's image: the stacks STACK records told it
 * before are another program's (see the top), left out. */
static void drop_forged_stacks(ltr_trace *t, uint32_t pid)
{
    ltr_idmap *m = ltr_idmap_get(&t->stack_pids, pid);
    for (size_t i = 0; m && i < m->cap; i++)
        if (m->vals[i])
            forged_damage(t, "STACK", pid, m->keys[i]);
    drop_found_stacks(t, pid);
}

/* Node v of pid, whose record names parent, stored unless it disagrees with
 * what the image told of its id before (strict_ids): then the node is
 * unknown from here on, and the record damage. -1 without memory. */
static int store_strict(ltr_trace *t, node_table *nt, uint32_t pid, uint32_t parent, const ltr_node *v)
{
    if (!nt->n)
        drop_forged_stacks(t, pid);
    frame_node *at = page_at(nt, v->id), *fn = node_get_at(nt, v->id, at);
    if (fn && fn->up == NODE_CONFLICT)
        return 0;
    if (!fn || (fn->ip == v->ip && fn->up == (parent | NODE_HELD))) {
        if (!fn && !(fn = node_add(nt, v->id, at)))
            return -1;
        *fn = (frame_node){v->ip, parent | NODE_HELD};
        return 0;
    }
    *fn = (frame_node){0, NODE_CONFLICT};
    conflict_damage(t, "FRAME_NODES", pid, v->id);
    drop_found_stacks(t, pid); /* those built through it are unknown now; the others are built again */
    return 0;
}

/* Stores n nodes of pid from a good record, v[0]'s parent `parent`; -1
 * without memory. */
static int store_nodes(ltr_trace *t, node_table *nt, uint32_t pid, uint32_t parent, const ltr_node *v, uint32_t n)
{
    void (*hook)(void *, uint32_t, uint64_t) = t->addr_hook;
    bool strict = strict_ids(t);
    for (uint32_t i = 0; i < n; parent = v[i++].id) {
        if (hook)
            hook(t->addr_hook_ctx, pid, v[i].ip);
        if (strict) {
            if (store_strict(t, nt, pid, parent, &v[i]) < 0)
                return -1;
            continue;
        }
        frame_node *at = page_at(nt, v[i].id), *fn = node_get_at(nt, v[i].id, at);
        if (fn && (fn->ip != v[i].ip || fn->up != (parent | NODE_HELD)))
            drop_found_stacks(t, pid); /* format 2: a repeat replaces */
        if (!fn && !(fn = node_add(nt, v[i].id, at)))
            return -1;
        *fn = (frame_node){v[i].ip, parent | NODE_HELD};
    }
    return 0;
}

/* Reads the nodes of r (consumed) and stores them, all or nothing: a
 * record of at most LTR_NODES_BATCH nodes is read once (nodevar.h has the
 * figures), a longer one checked whole first. -1 when it is bad (nothing
 * stored); else *last is its last id. r by pointer: copied by value, its
 * fields just written a field at a time were read back 16 bytes at a time,
 * a store-forwarding stall that was 13 % of reading bench/heap's nodes
 * (perf annotate); by pointer 2.74 ms instead of 3.00 there, 6.9 instead
 * of 7.2 on cc1plus's (least of 100 and 60 rounds, nodevar.h's harness). */
static int read_nodes(ltr_trace *t, ltr_nodes_rec *r, uint32_t *last)
{
    ltr_node v[LTR_NODES_BATCH];
    int whole = r->count <= LTR_NODES_BATCH;
    if (!whole && ltr_nodes_check(*r, last) < 0)
        return -1;
    int k = ltr_nodes_take(r, v, LTR_NODES_BATCH);
    if (k < 0)
        return -1; /* only a whole record fails here: nothing stored */
    if (whole)
        *last = k ? v[k - 1].id : r->parent;
    node_table *nt = pid_nodes(t, r->pid);
    for (uint32_t parent = r->parent; nt && k > 0;
         parent = v[k - 1].id, k = r->i < r->count ? ltr_nodes_take(r, v, LTR_NODES_BATCH) : 0)
        if (store_nodes(t, nt, r->pid, parent, v, (uint32_t)k) < 0)
            break; /* out of memory is not damage */
    return 0;
}

/* The rest of a record's body, for the node iterator: ltr_cursor_take of
 * all that is left, which cannot run short, without its call (one a
 * record: 0.9 M instructions of bench/heap's 62 k). */
static const uint8_t *body_rest(ltr_cursor *c, size_t *len)
{
    if (c->bad)
        return NULL;
    *len = c->len - c->pos;
    const uint8_t *p = c->p + c->pos;
    c->pos = c->len;
    return p;
}

int ltr_meta_parse_frame_nodes(ltr_trace *t, ltr_cursor *c)
{
    size_t len;
    const uint8_t *body = body_rest(c, &len);
    ltr_nodes_rec r;
    uint32_t last;
    if (!body || ltr_nodes_open(&r, body, len) < 0 || read_nodes(t, &r, &last) < 0)
        return -1;
    return 0;
}

/* A bad record spoils the base of its pid for the rest of the chunk (the
 * writer counted the next record's ids from it), or of every pid when its
 * own pid cannot be read. */
int ltr_meta_parse_frame_nodes_v(ltr_trace *t, ltr_cursor *c, ltr_node_bases *b)
{
    size_t len;
    const uint8_t *body = body_rest(c, &len);
    ltr_nodes_rec r;
    uint32_t last;
    int rc = body ? ltr_nodes_open_var(&r, body, len, len + c->slack) : -2;
    if (rc == -2)
        ltr_node_bases_spoil_all(b);
    if (rc < 0) {
        if (rc == -1)
            ltr_node_bases_spoil(b, r.pid);
        return -1;
    }
    rc = ltr_node_bases_get(b, r.pid, &r.base);
    if (rc < 0)
        return rc == LTR_NODE_BASE_NO_MEMORY ? 0 : -1; /* out of memory is not damage */
    if (read_nodes(t, &r, &last) < 0) {
        ltr_node_bases_spoil(b, r.pid);
        return -1;
    }
    if (r.count)
        ltr_node_bases_set(b, r.pid, last);
    return 0;
}

/* The stack whose innermost node is id, built from the nodes; NULL while a
 * node of its path is unknown (a lost record), or without memory. */
static const ltr_stack *stack_from_nodes(ltr_trace *t, uint32_t pid, uint32_t id)
{
    const node_table *nt = ltr_idmap_get(&t->node_pids, pid);
    const frame_node *fn;
    uint32_t n = 0;
    for (uint32_t i = id; i; i = node_parent(fn), n++) /* parents are below ids: it ends */
        if (!nt || !(fn = node_get(nt, i)) || fn->up == NODE_CONFLICT || n == UINT16_MAX)
            return NULL;
    stack_rec *s = n ? new_stack(t, pid, id, n) : NULL;
    uint32_t k = 0;
    for (uint32_t i = id; s && i; i = node_parent(fn)) {
        fn = node_get(nt, i);
        s->frames[k++] = fn->ip;
    }
    return s ? list_stack(t, pid_stacks(t, pid), s) : NULL;
}

/* Overlapping segments compare equal: the tree holds none that overlap. */
static int seg_cmp(const void *a, const void *b)
{
    const seg_key *x = a, *y = b;
    return x->end <= y->start ? -1 : y->end <= x->start ? 1 : 0;
}

static void seg_keep(void *k) { (void)k; /* the module_rec holds it */ }

static mod_image *pid_modules(ltr_trace *t, uint32_t pid)
{
    return ltr_idmap_table(&t->module_pids, pid, sizeof(mod_image));
}

void ltr_heapmeta_modules_new_image(ltr_trace *t, uint32_t pid)
{
    mod_image *im = ltr_idmap_get(&t->module_pids, pid);
    if (im) {
        tdestroy(im->root, seg_keep);
        im->root = NULL;
    }
}

/* The loaded module of im one of whose segments overlaps one of m's; NULL if none. */
static module_rec *loaded_over(const mod_image *im, const module_rec *m)
{
    for (uint16_t i = 0; i < m->pub.segment_count; i++) {
        const seg_key *const *k = m->keys[i].start < m->keys[i].end ? tfind(&m->keys[i], &im->root, seg_cmp) : NULL;
        if (k)
            return (*k)->m;
    }
    return NULL;
}

static bool same_mapping(const module_rec *a, const module_rec *b)
{
    if (a->pub.load_bias != b->pub.load_bias || a->pub.segment_count != b->pub.segment_count ||
        strcmp(a->path, b->path))
        return false;
    for (uint16_t i = 0; i < a->pub.segment_count; i++)
        if (a->segs[i].start != b->segs[i].start || a->segs[i].end != b->segs[i].end)
            return false;
    return true;
}

/* m's segments into im's tree; false without memory. One that overlaps
 * another of m's (not from the agent) stays out: the other holds it. */
static bool load_segments(mod_image *im, module_rec *m)
{
    for (uint16_t i = 0; i < m->pub.segment_count; i++) {
        seg_key *k = &m->keys[i];
        if (k->start >= k->end)
            continue; /* holds no address */
        const seg_key *const *at = tsearch(k, &im->root, seg_cmp);
        if (!at)
            return false;
        k->in_tree = *at == k;
    }
    return true;
}

static void unload_segments(mod_image *im, module_rec *m)
{
    for (uint16_t i = 0; i < m->pub.segment_count; i++)
        if (m->keys[i].in_tree) {
            tdelete(&m->keys[i], &im->root, seg_cmp);
            m->keys[i].in_tree = false;
        }
}

/* Whether MODULE record m (not listed yet) is to be listed, as the top
 * says: a load over the image's main program is damage, one over a library
 * still loaded takes its place, an unload of the main program is FORGED;
 * an unload takes the module it names out of the image's tree. */
static bool module_taken(ltr_trace *t, module_rec *m)
{
    mod_image *im = strict_ids(t) ? pid_modules(t, m->pub.pid) : NULL;
    if (!im)
        return true; /* format 2 (its agents are not known to unload first), or without memory */
    module_rec *was = loaded_over(im, m);
    const ltr_process_rec *p = ltr_idmap_get(&t->process_map, m->pub.pid);
    if (m->pub.event == 1) {
        if (was && same_mapping(was, m))
            return false; /* a repeat */
        for (; was; was = loaded_over(im, m)) {
            if (p && p->exe && p->exe[0] && !strcmp(p->exe, was->path)) {
                ltr_trace_chunk_damage(t, LTR_DAMAGE_BAD_RECORD,
                                       "a MODULE load of %.48s for pid %u over its main program %.48s, which only an "
                                       "exec ends: left out (another traced program's?)",
                                       m->path, m->pub.pid, was->path);
                return false;
            }
            /* over a library: its unload was lost (the region full: counted,
             * and the agent does not write it again), as likely as forged,
             * and the later load is the one there (a review: a dlopen where
             * a dlclose's unload did not fit was named after the old one) */
            unload_segments(im, was);
        }
        (void)load_segments(im, m); /* without memory some of it goes unchecked: taken all the same */
        return true;
    }
    if (p && p->exe && p->exe[0] && !strcmp(p->exe, m->path)) {
        ltr_trace_chunk_damage(t, LTR_DAMAGE_FORGED,
                               "a MODULE record unloads the main program %.60s of pid %u, which only an exec ends "
                               "(another traced program's): left out",
                               m->path, m->pub.pid);
        return false;
    }
    if (was && was->pub.load_bias == m->pub.load_bias && !strcmp(was->path, m->path))
        unload_segments(im, was);
    return true;
}

int ltr_meta_parse_module(ltr_trace *t, ltr_cursor *c)
{
    uint32_t pid = ltr_cursor_u32(c);
    uint64_t ts = ltr_cursor_u64(c);
    uint8_t event = ltr_cursor_u8(c);
    uint64_t bias = ltr_cursor_u64(c);
    char *path = ltr_cursor_str(c);
    uint8_t idlen = ltr_cursor_u8(c);
    const uint8_t *id = ltr_cursor_take(c, idlen);
    uint16_t nseg = ltr_cursor_u16(c);
    const uint8_t *segs = ltr_cursor_take(c, 25u * nseg);
    module_rec *m = path && id && segs ? malloc(sizeof *m + (sizeof(ltr_segment) + sizeof(seg_key)) * nseg) : NULL;
    if (!m) {
        free(path);
        return c->bad ? -1 : 0;
    }
    memcpy(m->build_id, id, idlen);
    m->keys = (seg_key *)(m->segs + nseg);
    for (uint16_t i = 0; i < nseg; i++) {
        const uint8_t *p = segs + 25u * i;
        m->segs[i] = (ltr_segment){ltr_get_u64(p), ltr_get_u64(p + 8), ltr_get_u64(p + 16), p[24]};
        m->keys[i] = (seg_key){m->segs[i].start, m->segs[i].end, m, false};
    }
    m->path = path;
    m->pub = (ltr_module){.pid = pid, .ts = ts, .event = event, .load_bias = bias, .path = path,
                          .build_id_len = idlen, .build_id = m->build_id,
                          .segment_count = nseg, .segments = m->segs};
    if (module_taken(t, m) && ltr_ptrvec_push(&t->modules, m) == 0)
        return 0;
    mod_image *im = ltr_idmap_get(&t->module_pids, pid);
    if (im)
        unload_segments(im, m); /* a load taken that found no place in the list */
    free(path);
    free(m);
    return 0;
    return 0;
}

void ltr_heapmeta_free(ltr_trace *t)
{
    for (size_t i = 0; i < t->module_pids.cap; i++) /* before the modules their trees hold */
        if (t->module_pids.vals[i]) {
            mod_image *im = t->module_pids.vals[i];
            tdestroy(im->root, seg_keep);
            free(im);
        }
    ltr_idmap_free(&t->module_pids);
    for (size_t i = 0; i < t->modules.n; i++)
        free(((module_rec *)t->modules.v[i])->path);
    for (size_t i = 0; i < t->modules.n; i++)
        free(t->modules.v[i]);
    for (size_t i = 0; i < t->stacks.n; i++)
        free(t->stacks.v[i]);
    free(t->modules.v);
    free(t->stacks.v);
    t->modules = t->stacks = (ltr_ptrvec){0};
    ltr_idmap_free_maps(&t->stack_pids);
    for (size_t i = 0; i < t->node_pids.cap; i++)
        if (t->node_pids.vals[i]) {
            node_table *nt = t->node_pids.vals[i];
            nodes_clear(nt);
            free(nt->page);
            free(nt);
        }
    ltr_idmap_free(&t->node_pids);
}

size_t ltr_trace_stack_count(const ltr_trace *t) { return t->stacks.n; }
const ltr_stack *ltr_trace_stack_at(const ltr_trace *t, size_t i)
{
    return i < t->stacks.n ? t->stacks.v[i] : NULL;
}
size_t ltr_trace_module_count(const ltr_trace *t) { return t->modules.n; }
const ltr_module *ltr_trace_module_at(const ltr_trace *t, size_t i)
{
    return i < t->modules.n ? t->modules.v[i] : NULL;
}

int ltr_trace_stack_conflicted(const ltr_trace *t, uint32_t pid, uint32_t id)
{
    const ltr_idmap *m = ltr_idmap_get(&t->stack_pids, pid);
    if (m && ltr_idmap_get(m, id) == &conflicted)
        return 1;
    const node_table *nt = ltr_idmap_get(&t->node_pids, pid);
    const frame_node *fn;
    for (uint32_t i = id; nt && i && (fn = node_get(nt, i)); i = node_parent(fn)) /* parents are below ids: it ends */
        if (fn->up == NODE_CONFLICT)
            return 1;
    return 0;
}

const ltr_stack *ltr_trace_stack_find(const ltr_trace *t, uint32_t pid, uint32_t id)
{
    const ltr_idmap *m = ltr_idmap_get(&t->stack_pids, pid);
    const ltr_stack *s = m ? ltr_idmap_get(m, id) : NULL;
    if (s == &conflicted.pub)
        return NULL;
    /* Built on first use (the trace is the reader's cache, const to callers). */
    return s || !id ? s : stack_from_nodes((ltr_trace *)t, pid, id);
}
