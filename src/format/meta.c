/*
 * format/meta.c — the reader's tables: METADATA records (providers, layouts,
 * processes, threads), COUNTERS records and HEADER/END key/value lists, parsed
 * with bounds-checked cursors, plus the public lookups over them. A malformed
 * record is recorded as damage of its chunk and skipped.
 */
#include "format/reader.h"
#include "format/nodevar.h"

#include <errno.h>
#include <stdlib.h>

/* ---- small containers ---- */

static size_t slot_of(uint32_t key, size_t cap)
{
    return (size_t)((key * 2654435761u) & (cap - 1));
}

void *ltr_idmap_get(const ltr_idmap *m, uint32_t key)
{
    if (!m->cap)
        return NULL;
    for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->vals[i])
            return NULL;
        if (m->keys[i] == key)
            return m->vals[i];
    }
}

static int idmap_grow(ltr_idmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 8; /* small: a pid's far frame nodes have one (heapmeta.c) */
    ltr_idmap g = {calloc(cap, sizeof *g.keys), calloc(cap, sizeof *g.vals), cap, 0};
    if (!g.keys || !g.vals) {
        ltr_idmap_free(&g);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->vals[i])
            ltr_idmap_put(&g, m->keys[i], m->vals[i]);
    ltr_idmap_free(m);
    *m = g;
    return 0;
}

int ltr_idmap_put(ltr_idmap *m, uint32_t key, void *val)
{
    if ((m->n + 1) * 2 > m->cap && idmap_grow(m) < 0)
        return -ENOMEM;
    size_t i = slot_of(key, m->cap);
    while (m->vals[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->vals[i])
        m->n++;
    m->keys[i] = key;
    m->vals[i] = val;
    return 0;
}

void ltr_idmap_free(ltr_idmap *m)
{
    free(m->keys);
    free(m->vals);
    *m = (ltr_idmap){0};
}

void *ltr_idmap_table(ltr_idmap *map, uint32_t key, size_t size)
{
    void *table = ltr_idmap_get(map, key);
    if (table)
        return table;
    table = calloc(1, size);
    if (table && ltr_idmap_put(map, key, table) < 0) {
        free(table);
        return NULL;
    }
    return table;
}

void ltr_idmap_free_maps(ltr_idmap *map)
{
    for (size_t i = 0; i < map->cap; i++)
        if (map->vals[i]) {
            ltr_idmap_free(map->vals[i]);
            free(map->vals[i]);
        }
    ltr_idmap_free(map);
}

int ltr_ptrvec_push(ltr_ptrvec *p, void *x)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        void **v = realloc(p->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        p->v = v;
        p->cap = cap;
    }
    p->v[p->n++] = x;
    return 0;
}

/* ---- cursor ---- */

const uint8_t *ltr_cursor_take(ltr_cursor *c, size_t n)
{
    if (c->bad || n > c->len - c->pos) {
        c->bad = 1;
        return NULL;
    }
    const uint8_t *p = c->p + c->pos;
    c->pos += n;
    return p;
}

uint8_t ltr_cursor_u8(ltr_cursor *c)
{
    const uint8_t *p = ltr_cursor_take(c, 1);
    return p ? p[0] : 0;
}

uint16_t ltr_cursor_u16(ltr_cursor *c)
{
    const uint8_t *p = ltr_cursor_take(c, 2);
    return p ? ltr_get_u16(p) : 0;
}

uint32_t ltr_cursor_u32(ltr_cursor *c)
{
    const uint8_t *p = ltr_cursor_take(c, 4);
    return p ? ltr_get_u32(p) : 0;
}

uint64_t ltr_cursor_u64(ltr_cursor *c)
{
    const uint8_t *p = ltr_cursor_take(c, 8);
    return p ? ltr_get_u64(p) : 0;
}

static char *dup_bytes(const uint8_t *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = 0;
    }
    return s;
}

char *ltr_cursor_str(ltr_cursor *c)
{
    uint16_t n = ltr_cursor_u16(c);
    const uint8_t *p = ltr_cursor_take(c, n);
    return p ? dup_bytes(p, n) : NULL;
}

/* ---- damage and the graveyard ---- */

static void record_damage(ltr_trace *t, const char *what, uint16_t kind, size_t at)
{
    ltr_trace_chunk_damage(t, LTR_DAMAGE_BAD_RECORD, "bad %s record (kind %u) at raw offset %zu", what, kind, at);
}

/* Strings a caller may still hold are kept until rewind or close. */
static void retire(ltr_trace *t, void *p)
{
    if (p && ltr_ptrvec_push(&t->graveyard, p) < 0)
        free(p);
}

/* ---- METADATA ---- */

ltr_trace_provider *ltr_meta_provider(ltr_trace *t, const ltr_guid *guid)
{
    for (size_t i = 0; i < t->providers.n; i++) {
        ltr_trace_provider *p = t->providers.v[i];
        if (!memcmp(p->guid.b, guid->b, 16))
            return p;
    }
    ltr_trace_provider *p = calloc(1, sizeof *p);
    char *name = malloc(37);
    if (!p || !name || ltr_ptrvec_push(&t->providers, p) < 0) {
        free(p);
        free(name);
        return NULL;
    }
    p->guid = *guid;
    ltr_guid_format(guid, name);
    p->name = name;
    return p;
}

static int parse_provider(ltr_trace *t, ltr_cursor *c)
{
    ltr_guid g;
    const uint8_t *gb = ltr_cursor_take(c, 16);
    char *name = ltr_cursor_str(c);
    if (!gb || !name) {
        free(name);
        return -1;
    }
    memcpy(g.b, gb, 16);
    ltr_trace_provider *p = ltr_meta_provider(t, &g);
    if (!p || p->named) {
        free(name); /* the first description of a GUID wins */
        return 0;
    }
    retire(t, (char *)p->name);
    p->name = name;
    p->named = 1;
    return 0;
}

static void free_layout(ltr_layout_rec *l)
{
    if (!l)
        return;
    for (unsigned i = 0; l->fields && i < l->pub.field_count; i++)
        free((char *)l->fields[i].name);
    free(l->fields);
    free(l->fixed_offsets);
    free((char *)l->pub.name);
    free(l);
}

/* Offsets of every field when all have a fixed size; NULL otherwise. */
static uint32_t *fixed_offsets(const ltr_field *f, unsigned n)
{
    uint32_t off = 0;
    for (unsigned i = 0; i < n; i++)
        if (ltr_type_fixed_size(f[i].type) <= 0)
            return NULL;
    uint32_t *o = malloc((n + 1) * sizeof *o);
    for (unsigned i = 0; o && i <= n; i++) {
        o[i] = off;
        if (i < n)
            off += (uint32_t)ltr_type_fixed_size(f[i].type);
    }
    return o;
}

/* Field i's type against the rules a reader keeps (kept[0], kept[1]: the
 * pnew and pref fields so far, -1 none): a type it knows, and one pnew and
 * one pref at most per layout, since the event keeps their resolved
 * addresses. 0, or -1 when the layout is refused. */
static int field_type_rule(uint8_t type, unsigned i, int32_t kept[2])
{
    if (ltr_type_fixed_size((ltr_type)type) < 0)
        return -1;
    int k = type == LTR_TYPE_PNEW ? 0 : type == LTR_TYPE_PREF ? 1 : -1;
    if (k >= 0 && kept[k] >= 0)
        return -1;
    if (k >= 0)
        kept[k] = (int32_t)i;
    return 0;
}

static int parse_fields(ltr_cursor *c, ltr_layout_rec *l)
{
    unsigned n = ltr_cursor_u16(c);
    l->fields = calloc(n ? n : 1, sizeof *l->fields);
    if (!l->fields || c->bad)
        return -1;
    int32_t kept[2] = {-1, -1};
    for (unsigned i = 0; i < n; i++) {
        l->fields[i].type = (ltr_type)ltr_cursor_u8(c);
        l->fields[i].name = ltr_cursor_str(c);
        l->pub.field_count = (uint16_t)(i + 1);
        if (!l->fields[i].name || field_type_rule((uint8_t)l->fields[i].type, i, kept) < 0)
            return -1;
    }
    l->pub.fields = l->fields;
    l->fixed_offsets = fixed_offsets(l->fields, n);
    l->pnew = kept[0];
    l->pref = kept[1];
    l->msize = -1;
    for (unsigned i = 0; i < n && l->pnew >= 0 && l->msize < 0; i++)
        if (l->fields[i].type == LTR_TYPE_UVAR && !strcmp(l->fields[i].name, "size"))
            l->msize = (int32_t)i;
    return 0;
}

int ltr_layout_model_size(const ltr_layout *l)
{
    return ((const ltr_layout_rec *)l)->msize; /* pub is its first member */
}

int ltr_layout_body_types(const uint8_t *body, size_t len, uint8_t *types, uint32_t max, uint32_t *count)
{
    ltr_cursor c = {.p = body, .len = len};
    ltr_cursor_u32(&c);
    ltr_cursor_take(&c, 16);
    ltr_cursor_take(&c, 2 + 1 + 1 + 8);
    ltr_cursor_take(&c, ltr_cursor_u16(&c));
    unsigned n = ltr_cursor_u16(&c);
    int32_t kept[2] = {-1, -1};
    for (unsigned i = 0; i < n && !c.bad; i++) {
        uint8_t type = ltr_cursor_u8(&c);
        if (!ltr_cursor_take(&c, ltr_cursor_u16(&c)) || field_type_rule(type, i, kept) < 0)
            return -1;
        if (i < max)
            types[i] = type;
    }
    if (c.bad)
        return -1;
    *count = n;
    return 0;
}

static int parse_layout(ltr_trace *t, ltr_cursor *c)
{
    ltr_layout_rec *l = calloc(1, sizeof *l);
    if (!l)
        return 0;
    l->pub.id = ltr_cursor_u32(c);
    ltr_guid g;
    const uint8_t *gb = ltr_cursor_take(c, 16);
    if (gb)
        memcpy(g.b, gb, 16);
    l->pub.event_id = ltr_cursor_u16(c);
    l->pub.level = ltr_cursor_u8(c);
    l->pub.opcode = ltr_cursor_u8(c);
    l->pub.keywords = ltr_cursor_u64(c);
    l->pub.name = ltr_cursor_str(c);
    if (!gb || !l->pub.name || parse_fields(c, l) < 0) {
        free_layout(l);
        return -1;
    }
    if (ltr_idmap_get(&t->layout_map, l->pub.id) || !(l->prov = ltr_meta_provider(t, &g)) ||
        ltr_ptrvec_push(&t->layouts, l) < 0) {
        free_layout(l); /* layout ids are unique: a repeat describes the same layout */
        return 0;
    }
    if (ltr_idmap_put(&t->layout_map, l->pub.id, l) < 0)
        t->layouts.n--, free_layout(l);
    else
        l->pub.provider = l->prov;
    return 0;
}

static void free_argv(char **argv, uint32_t argc)
{
    for (uint32_t i = 0; argv && i < argc; i++)
        free(argv[i]);
    free(argv);
}

ltr_process *ltr_meta_process(ltr_trace *t, uint32_t pid)
{
    ltr_process_rec *p = ltr_idmap_get(&t->process_map, pid);
    if (p)
        return &p->pub;
    p = calloc(1, sizeof *p);
    if (!p || ltr_ptrvec_push(&t->processes, p) < 0) {
        free(p);
        return NULL;
    }
    if (ltr_idmap_put(&t->process_map, pid, p) < 0) {
        t->processes.n--;
        free(p);
        return NULL;
    }
    p->pub.pid = pid;
    p->pub.exe = "";
    return &p->pub;
}

/* The image a PROCESS record for a described pid replaces, listed and its
 * stacks kept under a key of their own (1); without memory they go (as
 * before images were kept apart), and the analysis takes both images as
 * one (0). */
static int new_image(ltr_trace *t, uint32_t pid, uint64_t ts, const char *exe, int reused)
{
    ltr_process_image *v = t->nimages < UINT32_MAX - LTR_IMAGE_KEY_BASE
                               ? realloc(t->images, (t->nimages + 1) * sizeof *v)
                               : NULL;
    char *copy = v ? strdup(exe ? exe : "") : NULL;
    if (v)
        t->images = v;
    if (!copy) {
        ltr_heapmeta_new_image(t, pid, 0);
        return 0;
    }
    uint32_t key = LTR_IMAGE_KEY_BASE + (uint32_t)t->nimages;
    for (size_t i = 0; i < t->threads.n; i++) { /* named as they were: the new image names its own */
        const ltr_thread *th = t->threads.v[i];
        ltr_thread *was = th->pid == pid ? malloc(sizeof *was) : NULL;
        char *name = was ? strdup(th->name ? th->name : "") : NULL;
        if (name && ltr_ptrvec_push(&t->image_threads, was) == 0) {
            *was = (ltr_thread){.pid = key, .tid = th->tid, .ts = th->ts, .name = name, .known = 1};
        } else {
            free(name);
            free(was);
        }
    }
    t->images[t->nimages++] = (ltr_process_image){.pid = pid, .key = key, .ts = ts, .exe = copy, .reused = reused};
    ltr_heapmeta_new_image(t, pid, key);
    return 1;
}

/* An end of a process, in file order (feed_ends in the analysis); without
 * memory the process is only not ended early. */
static void add_end(ltr_trace *t, ltr_process_end e)
{
    ltr_process_end *v = realloc(t->ends, (t->nends + 1) * sizeof *v);
    if (!v)
        return;
    t->ends = v;
    t->ends[t->nends++] = e;
}

/* An exec's end read before the PROCESS record of the image it names: a
 * batch's ends go before its other records when events are pending
 * (writer.c, split_ends), and a save writes an image's records as one
 * batch. It waits for that record (parse_process: exec_ends_due); a few
 * wait at once in a recorder's trace, so past EXEC_WAITS_MAX (a crafted
 * one's) they are let go: each PROCESS record looks at all that wait. */
#define EXEC_WAITS_MAX 256
static int exec_end_waits(ltr_trace *t, ltr_process_end e, uint64_t start)
{
    if (t->nexec_waits >= EXEC_WAITS_MAX)
        return 0;
    ltr_exec_end_wait *v = realloc(t->exec_waits, (t->nexec_waits + 1) * sizeof *v);
    if (!v)
        return 0;
    t->exec_waits = v;
    t->exec_waits[t->nexec_waits++] = (ltr_exec_end_wait){e, start};
    return 0;
}

/* The PROCESS record of pid that started at start came: an exec's end that
 * waited for it is an end now; one that named an earlier start of the pid
 * that never came, never will. */
static void exec_ends_due(ltr_trace *t, uint32_t pid, uint64_t start)
{
    for (size_t i = 0; i < t->nexec_waits;) {
        ltr_exec_end_wait *w = &t->exec_waits[i];
        if (w->end.pid != pid || w->start > start) {
            i++;
            continue;
        }
        ltr_process_rec *p = w->start == start ? ltr_idmap_get(&t->process_map, pid) : NULL;
        if (p) {
            w->end.exec_image = p->images + 1;
            add_end(t, w->end);
            p->exec_ended = 1;
        }
        *w = t->exec_waits[--t->nexec_waits];
    }
}

static int parse_process(ltr_trace *t, ltr_cursor *c)
{
    uint32_t pid = ltr_cursor_u32(c), ppid = ltr_cursor_u32(c);
    uint64_t start = ltr_cursor_u64(c);
    char *exe = ltr_cursor_str(c);
    uint32_t argc = ltr_cursor_u16(c);
    char **argv = calloc(argc + 1, sizeof *argv);
    for (uint32_t i = 0; argv && exe && i < argc; i++)
        if (!(argv[i] = ltr_cursor_str(c)))
            break;
    ltr_process_rec *p = c->bad || !exe || !argv ? NULL : (ltr_process_rec *)ltr_meta_process(t, pid);
    if (!p) {
        free(exe);
        free_argv(argv, argc);
        return c->bad ? -1 : 0;
    }
    /* After exec the same pid is described again: the newest record wins,
     * and the old image's stacks are kept apart (the new one numbers its
     * own from 1 again: read against them, the old image's events took the
     * new one's frames, and the analysis added both images' blocks up) */
    p->prev_start = p->pub.known ? p->pub.start_ts : 0;
    p->prev_images = p->images;
    if ((ltr_heapmeta_has_stacks(t, pid) || p->exec_ended) &&
        new_image(t, pid, start, p->exe, p->end_ts && p->end_ts <= start))
        p->images++;
    ltr_heapmeta_modules_new_image(t, pid); /* an exec maps its objects anew, where the old image's were */
    p->end_ts = 0;
    p->exec_ended = 0;
    retire(t, p->exe);
    for (uint32_t i = 0; p->argv && i < p->pub.argc; i++)
        retire(t, p->argv[i]);
    retire(t, p->argv);
    p->exe = exe;
    p->argv = argv;
    p->pub.ppid = ppid;
    p->pub.start_ts = start;
    if (t->nexec_waits)
        exec_ends_due(t, pid, start);
    p->pub.exe = exe;
    p->pub.argc = argc;
    p->pub.argv = (const char *const *)argv;
    p->pub.known = 1;
    return 0;
}

ltr_thread *ltr_meta_thread(ltr_trace *t, uint32_t pid, uint32_t tid)
{
    ltr_idmap *tids = ltr_idmap_table(&t->thread_pids, pid, sizeof *tids);
    ltr_thread *th = tids ? ltr_idmap_get(tids, tid) : NULL;
    if (th || !tids)
        return th;
    th = calloc(1, sizeof *th);
    if (!th || ltr_ptrvec_push(&t->threads, th) < 0) {
        free(th);
        return NULL;
    }
    if (ltr_idmap_put(tids, tid, th) < 0) {
        t->threads.n--;
        free(th);
        return NULL;
    }
    th->pid = pid;
    th->tid = tid;
    th->name = "";
    return th;
}

static int parse_thread(ltr_trace *t, ltr_cursor *c)
{
    uint32_t pid = ltr_cursor_u32(c), tid = ltr_cursor_u32(c);
    uint64_t ts = ltr_cursor_u64(c);
    char *name = ltr_cursor_str(c);
    ltr_thread *th = name ? ltr_meta_thread(t, pid, tid) : NULL;
    if (!th) {
        free(name);
        return c->bad ? -1 : 0;
    }
    if (th->known)
        retire(t, (char *)th->name);
    th->ts = ts;
    th->name = name;
    th->known = 1;
    return 0;
}

/* ctx: what the records of one chunk share (METADATA: the FRAME_NODES_V bases). */
typedef int (*record_fn)(ltr_trace *t, uint16_t kind, ltr_cursor *body, void *ctx);

/* Walks `u16 kind, u16 reserved, u32 size, body` records; a bad framing ends the chunk. */
static void walk_records(ltr_trace *t, const char *what, const uint8_t *p, size_t len, record_fn fn,
                         void *ctx)
{
    size_t pos = 0;
    while (pos < len) {
        uint16_t kind = len - pos >= LTR_RECORD_HEADER_SIZE ? ltr_get_u16(p + pos) : 0;
        uint32_t size = len - pos >= LTR_RECORD_HEADER_SIZE ? ltr_get_u32(p + pos + 4) : 0;
        if (size < LTR_RECORD_HEADER_SIZE || size > len - pos) {
            record_damage(t, what, kind, pos);
            return;
        }
        ltr_cursor c = {p + pos + LTR_RECORD_HEADER_SIZE, size - LTR_RECORD_HEADER_SIZE, 0, 0, len - pos - size};
        if (fn(t, kind, &c, ctx) < 0 || c.bad)
            record_damage(t, what, kind, pos);
        pos += size;
    }
}

/* EXEC_END: the image of pid that started at start_ts ended, the process
 * running on as a program outside the session. After it a PROCESS record
 * of the pid is the same process exec'ing again, not the pid used again
 * (it does not set end_ts). The image is the pid's current one, or the one
 * before when the new image's PROCESS record came first (a traced exec
 * whose new image attached before the old connection was seen closing
 * writes no end, so none is older); the one before whose model is the
 * current one's too (no stacks told them apart: no image entry between)
 * is not ended, that would end the newest. */
static int parse_exec_end(ltr_trace *t, ltr_cursor *c)
{
    ltr_process_end e = {.pid = ltr_cursor_u32(c)};
    e.ts = ltr_cursor_u64(c);
    uint64_t start = ltr_cursor_u64(c);
    if (c->bad)
        return -1;
    ltr_process_rec *p = ltr_idmap_get(&t->process_map, e.pid);
    if (!p || !p->pub.known || start > p->pub.start_ts)
        return exec_end_waits(t, e, start); /* its image's PROCESS record still to come */
    if (start == p->pub.start_ts) {
        e.exec_image = p->images + 1;
        p->exec_ended = 1;
    } else if (start == p->prev_start && p->prev_images != p->images) {
        e.exec_image = p->prev_images + 1;
    } else {
        return 0;
    }
    add_end(t, e);
    return 0;
}

static int parse_process_end(ltr_trace *t, ltr_cursor *c)
{
    ltr_process_end e = {.pid = ltr_cursor_u32(c)};
    e.ts = ltr_cursor_u64(c);
    if (c->bad)
        return -1;
    ltr_process_rec *p = ltr_idmap_get(&t->process_map, e.pid);
    /* a PROCESS record of the pid that starts after this end is another
     * process (the pid used again: 32 768 pids wrap in minutes beside a
     * build), not an exec of this one */
    if (p)
        p->end_ts = e.ts ? e.ts : 1;
    add_end(t, e);
    /* no block of the process after this (a pid used again starts its
     * sequences past every count the writer used): what the reader keeps
     * for its address references goes. Not in a save (its ends were
     * written before its blocks) nor a merge (another trace's blocks of
     * the pid may come after), nor in a trace of an older writer. */
    const char *kind = ltr_trace_kv(t, LTR_KV_HEADER, "trace.kind");
    const char *after = ltr_trace_kv(t, LTR_KV_HEADER, "trace.ends_after_blocks");
    if (kind && !strcmp(kind, "file") && after && !strcmp(after, "1") &&
        ltr_refs_drop_pid(&t->refs, e.pid, t->blk_refs))
        t->blk_refs = NULL; /* its block was read to the end before this chunk */
    return 0;
}

static int meta_record(ltr_trace *t, uint16_t kind, ltr_cursor *c, void *bases)
{
    switch (kind) {
    case LTR_META_PROVIDER: return parse_provider(t, c);
    case LTR_META_LAYOUT: return parse_layout(t, c);
    case LTR_META_PROCESS:
        if (c->len >= 4) /* as the writer did, whatever the rest of the record: ids start over */
            ltr_node_bases_set(bases, ltr_get_u32(c->p), 0);
        return parse_process(t, c);
    case LTR_META_THREAD: return parse_thread(t, c);
    case LTR_META_STACK: return ltr_meta_parse_stack(t, c);
    case LTR_META_STACK_REF: return ltr_meta_parse_stack_ref(t, c);
    case LTR_META_FRAME_NODES: return ltr_meta_parse_frame_nodes(t, c);
    case LTR_META_FRAME_NODES_V: return ltr_meta_parse_frame_nodes_v(t, c, bases);
    case LTR_META_MODULE: return ltr_meta_parse_module(t, c);
    case LTR_META_PROCESS_END: return parse_process_end(t, c);
    case LTR_META_EXEC_END: return parse_exec_end(t, c);
    }
    return 0; /* unknown kinds are skipped */
}

/* FRAME_NODES_V ids count from bases that never cross a chunk. */
void ltr_meta_parse(ltr_trace *t, const uint8_t *p, size_t len)
{
    ltr_node_bases bases = {0};
    walk_records(t, "METADATA", p, len, meta_record, &bases);
    ltr_node_bases_free(&bases);
}

/* ---- COUNTERS ---- */

static void free_counters(ltr_trace *t)
{
    for (size_t i = 0; i < t->ncollectors; i++)
        free((char *)t->collectors[i].name);
    free(t->collectors);
    free(t->plost);
    t->collectors = NULL;
    t->plost = NULL;
    t->ncollectors = t->nplost = 0;
}

static int parse_collector(ltr_trace *t, ltr_cursor *c)
{
    ltr_collector_counters k = {0};
    k.collector = ltr_cursor_u16(c);
    char *name = ltr_cursor_str(c);
    k.buffer_size = ltr_cursor_u32(c);
    k.buffers = ltr_cursor_u32(c);
    k.events_written = ltr_cursor_u64(c);
    k.events_lost = ltr_cursor_u64(c);
    k.buffers_written = ltr_cursor_u64(c);
    k.buffers_lost = ltr_cursor_u64(c);
    k.events_overwritten = ltr_cursor_u64(c);
    k.buffers_overwritten = ltr_cursor_u64(c);
    if (!c->bad && c->len - c->pos >= 8) /* added later: older traces end here */
        k.shm_damage = ltr_cursor_u64(c);
    if (!c->bad && c->len - c->pos >= 8) /* added later still */
        k.metadata_lost = ltr_cursor_u64(c);
    if (!c->bad && c->len - c->pos >= 8) /* and after it */
        k.events_unwritten = ltr_cursor_u64(c);
    /* a forged count cannot make the unwritten more than the lost they are part of */
    k.events_unwritten = k.events_unwritten < k.events_lost ? k.events_unwritten : k.events_lost;
    ltr_collector_counters *v = c->bad || !name ? NULL
                                : realloc(t->collectors, (t->ncollectors + 1) * sizeof *v);
    if (!v) {
        free(name);
        return c->bad ? -1 : 0;
    }
    k.name = name;
    t->collectors = v;
    t->collectors[t->ncollectors++] = k;
    return 0;
}

static int parse_process_lost(ltr_trace *t, ltr_cursor *c)
{
    ltr_process_lost k;
    k.collector = ltr_cursor_u16(c);
    k.pid = ltr_cursor_u32(c);
    k.events_lost = ltr_cursor_u64(c);
    k.buffers_lost = ltr_cursor_u64(c);
    ltr_process_lost *v = c->bad ? NULL : realloc(t->plost, (t->nplost + 1) * sizeof *v);
    if (!v)
        return c->bad ? -1 : 0;
    t->plost = v;
    t->plost[t->nplost++] = k;
    return 0;
}

static int counter_record(ltr_trace *t, uint16_t kind, ltr_cursor *c, void *ctx)
{
    (void)ctx;
    switch (kind) {
    case LTR_COUNTER_COLLECTOR: return parse_collector(t, c);
    case LTR_COUNTER_PROCESS_LOST: return parse_process_lost(t, c);
    }
    return 0;
}

void ltr_counters_parse(ltr_trace *t, const uint8_t *p, size_t len)
{
    free_counters(t); /* each COUNTERS chunk holds the totals so far */
    t->has_counters = 1;
    walk_records(t, "COUNTERS", p, len, counter_record, NULL);
}

/* ---- key/value lists ---- */

static int kv_set(ltr_trace *t, ltr_kv_table *l, char *key, char *val)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->keys[i], key)) {
            free(key);
            retire(t, l->vals[i]);
            l->vals[i] = val;
            return 0;
        }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 32;
        char **k = realloc(l->keys, cap * sizeof *k);
        if (k)
            l->keys = k;
        char **v = k ? realloc(l->vals, cap * sizeof *v) : NULL;
        if (!v)
            return -ENOMEM;
        l->vals = v;
        l->cap = cap;
    }
    l->keys[l->n] = key;
    l->vals[l->n++] = val;
    return 0;
}

void ltr_kv_parse(ltr_trace *t, ltr_kv_table *list, const uint8_t *p, size_t len)
{
    size_t off = 0, klen, vlen;
    const char *k, *v;
    while (ltr_kv_next(p, len, &off, &k, &klen, &v, &vlen)) {
        char *key = dup_bytes((const uint8_t *)k, klen), *val = dup_bytes((const uint8_t *)v, vlen);
        if (!key || !val || kv_set(t, list, key, val) < 0) {
            free(key);
            free(val);
        }
    }
    if (off < len)
        ltr_trace_chunk_damage(t, LTR_DAMAGE_BAD_RECORD, "bad key/value entry at raw offset %zu", off);
}

static ltr_kv_table *kv_list(const ltr_trace *t, ltr_kv_list which)
{
    return (ltr_kv_table *)(which == LTR_KV_END ? &t->end_kv : &t->header_kv);
}

static void kv_free(ltr_kv_table *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->keys[i]);
        free(l->vals[i]);
    }
    free(l->keys);
    free(l->vals);
    *l = (ltr_kv_table){0};
}

const char *ltr_trace_kv(const ltr_trace *t, ltr_kv_list which, const char *key)
{
    const ltr_kv_table *l = kv_list(t, which);
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->keys[i], key))
            return l->vals[i];
    return NULL;
}

size_t ltr_trace_kv_count(const ltr_trace *t, ltr_kv_list which) { return kv_list(t, which)->n; }

int ltr_trace_kv_at(const ltr_trace *t, ltr_kv_list which, size_t i, const char **key, const char **value)
{
    const ltr_kv_table *l = kv_list(t, which);
    if (i >= l->n)
        return -1;
    *key = l->keys[i];
    *value = l->vals[i];
    return 0;
}

/* ---- teardown and lookups ---- */

static void free_vec(ltr_ptrvec *v, void (*fn)(void *))
{
    for (size_t i = 0; i < v->n; i++)
        fn(v->v[i]);
    free(v->v);
    *v = (ltr_ptrvec){0};
}

static void free_provider(void *p)
{
    free((char *)((ltr_trace_provider *)p)->name);
    free(p);
}

static void free_layout_v(void *p) { free_layout(p); }

static void free_process(void *p)
{
    ltr_process_rec *r = p;
    free(r->exe);
    free_argv(r->argv, r->pub.argc);
    free(r);
}

static void free_thread(void *p)
{
    ltr_thread *th = p;
    if (th->known)
        free((char *)th->name);
    free(th);
}

void ltr_meta_free(ltr_trace *t)
{
    free_vec(&t->providers, free_provider);
    free_vec(&t->layouts, free_layout_v);
    free_vec(&t->processes, free_process);
    free_vec(&t->threads, free_thread);
    free_vec(&t->image_threads, free_thread);
    free_vec(&t->graveyard, free);
    ltr_heapmeta_free(t);
    ltr_idmap_free(&t->layout_map);
    ltr_idmap_free(&t->process_map);
    ltr_idmap_free_maps(&t->thread_pids);
    t->last_layout = NULL;
    kv_free(&t->header_kv);
    kv_free(&t->end_kv);
    free_counters(t);
    t->has_counters = 0;
    free(t->ends);
    t->ends = NULL;
    t->nends = 0;
    free(t->exec_waits);
    t->exec_waits = NULL;
    t->nexec_waits = 0;
    for (size_t i = 0; i < t->nimages; i++)
        free(t->images[i].exe);
    free(t->images);
    t->images = NULL;
    t->nimages = 0;
}

size_t ltr_trace_image_count(const ltr_trace *t) { return t->nimages; }
size_t ltr_trace_image_thread_count(const ltr_trace *t) { return t->image_threads.n; }
const ltr_thread *ltr_trace_image_thread_at(const ltr_trace *t, size_t i)
{
    return i < t->image_threads.n ? t->image_threads.v[i] : NULL;
}
const ltr_process_image *ltr_trace_image_at(const ltr_trace *t, size_t i)
{
    return i < t->nimages ? &t->images[i] : NULL;
}

size_t ltr_trace_process_end_count(const ltr_trace *t) { return t->nends; }
const ltr_process_end *ltr_trace_process_end_at(const ltr_trace *t, size_t i)
{
    return i < t->nends ? &t->ends[i] : NULL;
}

static const void *at(const ltr_ptrvec *v, size_t i) { return i < v->n ? v->v[i] : NULL; }

size_t ltr_trace_provider_count(const ltr_trace *t) { return t->providers.n; }
const ltr_trace_provider *ltr_trace_provider_at(const ltr_trace *t, size_t i) { return at(&t->providers, i); }
size_t ltr_trace_layout_count(const ltr_trace *t) { return t->layouts.n; }
const ltr_layout *ltr_trace_layout_at(const ltr_trace *t, size_t i) { return at(&t->layouts, i); }
size_t ltr_trace_process_count(const ltr_trace *t) { return t->processes.n; }
const ltr_process *ltr_trace_process_at(const ltr_trace *t, size_t i) { return at(&t->processes, i); }
size_t ltr_trace_thread_count(const ltr_trace *t) { return t->threads.n; }
const ltr_thread *ltr_trace_thread_at(const ltr_trace *t, size_t i) { return at(&t->threads, i); }

const ltr_trace_provider *ltr_trace_provider_find(const ltr_trace *t, const ltr_guid *guid)
{
    for (size_t i = 0; i < t->providers.n; i++) {
        const ltr_trace_provider *p = t->providers.v[i];
        if (!memcmp(p->guid.b, guid->b, 16))
            return p;
    }
    return NULL;
}

const ltr_layout *ltr_trace_layout_find(const ltr_trace *t, uint32_t id)
{
    return ltr_idmap_get(&t->layout_map, id);
}

const ltr_process *ltr_trace_process_find(const ltr_trace *t, uint32_t pid)
{
    return ltr_idmap_get(&t->process_map, pid);
}

const ltr_thread *ltr_trace_thread_find(const ltr_trace *t, uint32_t pid, uint32_t tid)
{
    const ltr_idmap *tids = ltr_idmap_get(&t->thread_pids, pid);
    return tids ? ltr_idmap_get(tids, tid) : NULL;
}

int ltr_trace_has_counters(const ltr_trace *t) { return t->has_counters; }
size_t ltr_trace_collector_count(const ltr_trace *t) { return t->ncollectors; }
size_t ltr_trace_process_lost_count(const ltr_trace *t) { return t->nplost; }

const ltr_collector_counters *ltr_trace_collector_at(const ltr_trace *t, size_t i)
{
    return i < t->ncollectors ? &t->collectors[i] : NULL;
}

const ltr_process_lost *ltr_trace_process_lost_at(const ltr_trace *t, size_t i)
{
    return i < t->nplost ? &t->plost[i] : NULL;
}
