/*
 * analyze/source.c — the analyzer's glue to the trace reader: recognises the
 * Ltr.Heap layouts of docs/heap-events.md (by provider GUID and event id,
 * checking field names and types once per layout and settling where each
 * field lies), reads fixed-size fields straight from the payload (no per-event
 * name lookup or type switch), and hands STACK frames and MODULE records to the
 * rest of the analyzer.
 */
#include "analyze/internal.h"
#include "format/blocks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define AN_VARINT 255

/* How one field of a heap layout is read, settled once per layout. */
typedef struct an_field_read {
    int16_t index;  /* field index, -1 = the layout lacks it (reads as 0) */
    uint8_t width;  /* 1, 2, 4 or 8: a fixed-size unsigned field read in place; AN_VARINT: an
                     * unsigned LEB128 read in place; 0: through ltr_event_field */
    int32_t fixed;  /* its payload offset when every earlier field has a fixed size, else -1 */
} an_field_read;

typedef struct an_layout_info {
    uint64_t key;
    int kind;       /* an_heap_kind */
    uint32_t need;  /* payload bytes the fixed offsets reach; a shorter payload takes the reader's offsets */
    an_field_read f[AN_F_COUNT];
} an_layout_info;

#define AN_LAYOUT_CACHE 8 /* a power of two; heap events alternate between a few layouts */

struct an_decoder {
    ltr_guid heap;
    an_hmap layouts; /* layout (its address: a redefined id is a new layout) -> info */
    struct {
        const ltr_layout *layout;
        an_layout_info info;
    } cache[AN_LAYOUT_CACHE]; /* by layout id, so that the per-event lookup is one compare */
};

an_decoder *an_decoder_new(void)
{
    an_decoder *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    ltr_guid_from_name(LTR_HEAP_PROVIDER, &d->heap);
    an_hmap_init(&d->layouts, sizeof(an_layout_info));
    return d;
}

void an_decoder_free(an_decoder *d)
{
    if (!d)
        return;
    an_hmap_free(&d->layouts);
    free(d);
}

/* Width of an unsigned integer type read in place (AN_VARINT for LEB128); 0
 * for types left to the reader (a newer reader's encodings); -1 for types no
 * heap field may have. */
static int unsigned_width(ltr_type t)
{
    switch ((int)t) { /* not every type is listed: a newer one is left to the reader */
    case LTR_TYPE_U8: return 1;
    case LTR_TYPE_U16: return 2;
    case LTR_TYPE_U32: return 4;
    case LTR_TYPE_U64: case LTR_TYPE_POINTER: return 8;
    case LTR_TYPE_UVAR: case LTR_TYPE_PVAR: return AN_VARINT;
    case LTR_TYPE_PNEW: case LTR_TYPE_PREF: return 0; /* resolved by the reader */
    case LTR_TYPE_I8: case LTR_TYPE_I16: case LTR_TYPE_I32: case LTR_TYPE_I64:
    case LTR_TYPE_F64: case LTR_TYPE_STRING: case LTR_TYPE_BLOB: case LTR_TYPE_BOOL: return -1;
    }
    return 0;
}

/* Settles how to read the named field; -1 if it is present with a type a heap field cannot have. */
static int plan_field(const ltr_layout *l, const char *name, an_field_read *r, uint32_t *need)
{
    int32_t off = 0;
    r->index = -1;
    for (unsigned i = 0; i < l->field_count; i++) {
        int fixed = ltr_type_fixed_size(l->fields[i].type);
        if (strcmp(l->fields[i].name, name)) {
            off = off >= 0 && fixed > 0 ? off + fixed : -1;
            continue;
        }
        int w = unsigned_width(l->fields[i].type);
        if (w < 0)
            return -1;
        r->index = (int16_t)i;
        r->width = (uint8_t)w;
        r->fixed = w && fixed == w ? off : -1;
        if (r->fixed >= 0 && (uint32_t)(r->fixed + w) > *need)
            *need = (uint32_t)(r->fixed + w);
        return 0;
    }
    return 0;
}

static void classify(an_decoder *d, const ltr_layout *l, an_layout_info *info)
{
    memset(info->f, 0, sizeof info->f);
    for (int f = 0; f < AN_F_COUNT; f++)
        info->f[f].index = -1;
    info->need = 0;
    info->kind = AN_NOT_HEAP;
    if (!l->provider || memcmp(l->provider->guid.b, d->heap.b, 16) || l->event_id < LTR_HEAP_EV_ALLOC ||
        l->event_id > LTR_HEAP_EV_REALLOC)
        return;
    info->kind = l->event_id;
    static const char *const names[AN_F_COUNT] = {"address", "old_address", "size", "stack"};
    static const int need[LTR_HEAP_EV_REALLOC + 1][AN_F_COUNT] = {
        [LTR_HEAP_EV_ALLOC] = {1, 0, 1, 1}, [LTR_HEAP_EV_FREE] = {1, 0, 0, 0}, [LTR_HEAP_EV_REALLOC] = {1, 1, 1, 1}};
    for (int f = 0; f < AN_F_COUNT; f++)
        if (plan_field(l, names[f], &info->f[f], &info->need) < 0 ||
            (need[l->event_id][f] && info->f[f].index < 0))
            info->kind = AN_BAD_HEAP;
}

/* The fast path's plan: every field's encoding (all fixed-size or varint, else
 * the layout is left to the generic path) and where the wanted ones go. */
void an_fast_plan_make(an_decoder *d, const ltr_layout *l, an_fast_plan *plan)
{
    an_layout_info info;
    classify(d, l, &info);
    memset(plan, 0, sizeof *plan);
    plan->kind = AN_NOT_HEAP;
    if (info.kind <= 0 || l->field_count > AN_FAST_FIELDS)
        return;
    plan->ref[0] = plan->ref[1] = -1;
    for (unsigned i = 0; i < l->field_count; i++) {
        ltr_type t = l->fields[i].type;
        int fixed = ltr_type_fixed_size(t);
        int varint = t == LTR_TYPE_UVAR || t == LTR_TYPE_IVAR || t == LTR_TYPE_PVAR;
        int ref = t == LTR_TYPE_PNEW ? 0 : t == LTR_TYPE_PREF ? 1 : -1;
        plan->width[i] = fixed > 0 ? (uint8_t)fixed : ref >= 0 ? AN_FAST_REF : 0;
        plan->slot[i] = AN_F_COUNT;
        if (ref >= 0)
            plan->ref[ref] = (int8_t)i; /* one of each at most (the reader refuses more) */
        if (fixed <= 0 && !varint && ref < 0)
            return; /* a string, a blob or a newer type */
    }
    for (int f = 0; f < AN_F_COUNT; f++) {
        const an_field_read *r = &info.f[f];
        if (r->index < 0)
            continue;
        if (r->width == 0 && plan->width[r->index] != AN_FAST_REF)
            return; /* read through ltr_event_field */
        plan->slot[r->index] = (uint8_t)f;
    }
    if (plan->ref[0] >= 0 && ltr_layout_model_size(l) != info.f[AN_F_SIZE].index)
        return; /* the allocator model's size is not the size read: the generic path */
    plan->nfields = (uint8_t)l->field_count;
    plan->layout = l;
    plan->kind = info.kind;
}

static const an_layout_info *info_of(an_decoder *d, const ltr_layout *l)
{
    unsigned c = l->id & (AN_LAYOUT_CACHE - 1);
    if (d->cache[c].layout == l)
        return &d->cache[c].info;
    int created;
    an_layout_info *info = an_hmap_put(&d->layouts, (uintptr_t)l, &created);
    an_layout_info tmp;
    if (!info)
        info = &tmp;
    if (info == &tmp || created)
        classify(d, l, info);
    d->cache[c].layout = l;
    d->cache[c].info = *info;
    return &d->cache[c].info;
}

/* A field read in place: the reader has checked that the payload holds it
 * (field_offsets), and the fixed offset is used only when the payload is long enough. */
static inline __attribute__((always_inline)) uint64_t read_field(const ltr_event *ev, const an_field_read *r, int use_fixed)
{
    if (r->index < 0)
        return 0;
    if (!r->width) {
        ltr_trace_value v;
        int ok = ltr_event_field(ev, (unsigned)r->index, &v) == 0 && v.type != LTR_TYPE_STRING &&
                 v.type != LTR_TYPE_BLOB;
        return ok ? v.u : 0;
    }
    if (r->width == AN_VARINT) {
        /* the reader has checked the varint: its bytes are exactly the field's (at most 10) */
        uint32_t off = ev->field_offsets[r->index], len = ev->field_offsets[r->index + 1] - off;
        uint64_t v = 0;
        for (uint32_t i = 0; i < len && i < 10; i++)
            v |= (uint64_t)(ev->payload[off + i] & 0x7f) << (7 * i);
        return v;
    }
    const uint8_t *p = ev->payload + (use_fixed && r->fixed >= 0 ? (uint32_t)r->fixed : ev->field_offsets[r->index]);
    switch (r->width) { /* little-endian host, as the format */
    case 8: { uint64_t v; memcpy(&v, p, 8); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    default: return *p;
    }
}

void an_decode(an_decoder *d, const ltr_event *ev, an_heap_event *out)
{
    const an_layout_info *info = ev->layout ? info_of(d, ev->layout) : NULL;
    out->kind = info ? info->kind : AN_NOT_HEAP;
    if (out->kind <= 0)
        return;
    int fixed = ev->payload_size >= info->need;
    out->addr = read_field(ev, &info->f[AN_F_ADDR], fixed);
    out->old_addr = read_field(ev, &info->f[AN_F_OLD], fixed);
    out->size = read_field(ev, &info->f[AN_F_SIZE], fixed);
    out->stack = (uint32_t)read_field(ev, &info->f[AN_F_STACK], fixed);
}

const uint64_t *an_stack_addresses(const ltr_trace *t, uint32_t pid, uint32_t id, size_t *n)
{
    const ltr_stack *s = id ? ltr_trace_stack_find(t, pid, id) : NULL;
    *n = s ? s->frame_count : 0;
    return s ? s->frames : NULL;
}

int an_stack_conflicted(const ltr_trace *t, uint32_t pid, uint32_t id)
{
    return id && ltr_trace_stack_conflicted(t, pid, id);
}

int an_load_modules(const ltr_trace *t, ltr_symbolizer *s, int pid_set, uint32_t pid, size_t *done)
{
    for (; *done < ltr_trace_module_count(t); ++*done) {
        const ltr_module *m = ltr_trace_module_at(t, *done);
        if (pid_set && m->pid != pid)
            continue;
        ltr_sym_segment *seg = malloc((m->segment_count ? m->segment_count : 1) * sizeof *seg);
        if (!seg)
            return -ENOMEM;
        for (size_t k = 0; k < m->segment_count; k++)
            seg[k] = (ltr_sym_segment){m->segments[k].start, m->segments[k].end,
                                       m->segments[k].file_offset, m->segments[k].flags};
        ltr_sym_module sm = {m->pid, m->ts, m->event == 1, m->load_bias, m->path,
                             m->build_id, m->build_id_len, seg, m->segment_count};
        int rc = ltr_symbolizer_add_module(s, &sm);
        free(seg);
        if (rc < 0)
            return rc;
    }
    return 0;
}

uint64_t an_trace_position(const ltr_trace *t) { return ltr_trace_position(t); }
