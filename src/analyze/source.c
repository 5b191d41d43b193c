/*
 * analyze/source.c — the analyzer's glue to the trace reader: recognises the
 * Ltr.Heap layouts of docs/heap-events.md (by provider GUID and event id,
 * checking field names and types once per layout), reads their fields by
 * index, and hands STACK frames and MODULE records to the rest of the analyzer.
 */
#include "analyze/internal.h"
#include "format/reader.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { F_ADDR, F_OLD, F_SIZE, F_STACK, F_COUNT };

typedef struct an_layout_info {
    uint64_t id;
    int kind;              /* an_heap_kind */
    int16_t field[F_COUNT];
} an_layout_info;

struct an_decoder {
    ltr_guid heap;
    an_hmap layouts;
    const ltr_layout *last;
    an_layout_info last_info;
};

an_decoder *an_decoder_new(void)
{
    an_decoder *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    ltr_guid_from_name("Ltr.Heap", &d->heap);
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

static int field_of(const ltr_layout *l, const char *name, ltr_type t1, ltr_type t2)
{
    for (unsigned i = 0; i < l->field_count; i++)
        if (!strcmp(l->fields[i].name, name))
            return l->fields[i].type == t1 || l->fields[i].type == t2 ? (int)i : -1;
    return -1;
}

static void classify(an_decoder *d, const ltr_layout *l, an_layout_info *info)
{
    memset(info->field, -1, sizeof info->field);
    info->kind = AN_NOT_HEAP;
    if (!l->provider || memcmp(l->provider->guid.b, d->heap.b, 16) || l->event_id < 1 || l->event_id > 3)
        return;
    info->kind = l->event_id;
    static const char *const names[F_COUNT] = {"address", "old_address", "size", "stack"};
    static const ltr_type types[F_COUNT] = {LTR_TYPE_POINTER, LTR_TYPE_POINTER, LTR_TYPE_U64, LTR_TYPE_U32};
    int need[4][F_COUNT] = {{0}, {1, 0, 1, 1}, {1, 0, 0, 0}, {1, 1, 1, 1}};
    for (int f = 0; f < F_COUNT; f++) {
        info->field[f] = (int16_t)field_of(l, names[f], types[f], f < 2 ? LTR_TYPE_U64 : types[f]);
        if (need[info->kind][f] && info->field[f] < 0)
            info->kind = AN_BAD_HEAP;
    }
}

static const an_layout_info *info_of(an_decoder *d, const ltr_layout *l)
{
    if (l == d->last)
        return &d->last_info;
    int created;
    an_layout_info *info = an_hmap_put(&d->layouts, l->id, &created);
    an_layout_info tmp;
    if (!info)
        info = &tmp;
    if (info == &tmp || created)
        classify(d, l, info);
    d->last = l;
    d->last_info = *info;
    return &d->last_info;
}

static uint64_t get(const ltr_event *ev, int index)
{
    ltr_value v;
    return index >= 0 && ltr_event_field(ev, (unsigned)index, &v) == 0 ? v.u : 0;
}

void an_decode(an_decoder *d, const ltr_event *ev, an_heap_event *out)
{
    const an_layout_info *info = ev->layout ? info_of(d, ev->layout) : NULL;
    out->kind = info ? info->kind : AN_NOT_HEAP;
    if (out->kind <= 0)
        return;
    out->addr = get(ev, info->field[F_ADDR]);
    out->old_addr = get(ev, info->field[F_OLD]);
    out->size = get(ev, info->field[F_SIZE]);
    out->stack = (uint32_t)get(ev, info->field[F_STACK]);
}

const uint64_t *an_stack_addresses(const ltr_trace *t, uint32_t pid, uint32_t id, size_t *n)
{
    const ltr_stack *s = id ? ltr_trace_stack_find(t, pid, id) : NULL;
    *n = s ? s->frame_count : 0;
    return s ? s->frames : NULL;
}

int an_load_modules(const ltr_trace *t, ltr_symbolizer *s)
{
    for (size_t i = 0; i < ltr_trace_module_count(t); i++) {
        const ltr_module *m = ltr_trace_module_at(t, i);
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

uint64_t an_trace_position(const ltr_trace *t) { return t->pos; }
