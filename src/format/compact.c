/*
 * format/compact.c — compact event records (see compact.h): the header parser
 * every reader of compact blocks goes through, and the writer's anchors.
 */
#include "prim/prim.h"
#include "format/compact.h"

#include <errno.h>
#include <stdlib.h>

size_t ltr_cevent_parse(const uint8_t *p, size_t left, ltr_cevent *out)
{
    uint64_t size, layout, delta;
    size_t n = ltr_get_uvar(p, left, &size);
    if (!n || size > LTR_CEVENT_MAX_SIZE || size > left - n)
        return 0;
    const uint8_t *r = p + n;
    size_t ln = ltr_get_uvar(r, (size_t)size, &layout);
    size_t tn = ln ? ltr_get_uvar(r + ln, (size_t)size - ln, &delta) : 0;
    if (!tn || layout > UINT32_MAX)
        return 0;
    out->layout = (uint32_t)layout;
    out->ts_delta = ltr_unzigzag(delta);
    out->header = (uint32_t)(n + ln + tn);
    out->payload = (uint32_t)(size - ln - tn);
    return n + (size_t)size;
}

uint64_t ltr_cevents_last_ts(const uint8_t *p, size_t len, uint64_t base)
{
    size_t pos = 0;
    ltr_cevent ev;
    while (pos < len) {
        size_t n = ltr_cevent_parse(p + pos, len - pos, &ev);
        if (!n)
            break;
        base += (uint64_t)ev.ts_delta;
        pos += n;
    }
    return base;
}

size_t ltr_cevents_prefix(const uint8_t *p, size_t len, uint32_t *count)
{
    /* Framing only (the size varints): what the records hold is the reader's
     * to check. Most sizes take one byte; that case goes first. */
    size_t pos = 0;
    uint32_t n = 0;
    while (pos < len) {
        uint64_t size = p[pos];
        size_t k = 1;
        if (size & 0x80)
            k = ltr_get_uvar(p + pos, len - pos, &size);
        if (!k || size < 2 || size > LTR_CEVENT_MAX_SIZE || size > len - pos - k)
            break;
        pos += k + (size_t)size;
        n++;
    }
    *count = n;
    return pos;
}

static ltr_anchor *find(const ltr_anchors *a, uint16_t collector, uint64_t seq)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->v[i].seq == seq && a->v[i].collector == collector)
            return &a->v[i];
    return NULL;
}

uint64_t ltr_anchors_base(const ltr_anchors *a, uint16_t collector, uint64_t seq)
{
    const ltr_anchor *x = find(a, collector, seq);
    return x ? x->ts : 0;
}

int ltr_anchors_set(ltr_anchors *a, uint16_t collector, uint64_t seq, uint64_t ts)
{
    ltr_anchor *x = find(a, collector, seq);
    if (!x) {
        if (ltr_reserve((void **)&a->v, &a->cap, a->n, sizeof *a->v, 16))
            return -ENOMEM;
        x = &a->v[a->n++];
        x->collector = collector;
        x->seq = seq;
    }
    x->ts = ts;
    return 0;
}

void ltr_anchors_drop(ltr_anchors *a, uint16_t collector, uint64_t seq)
{
    ltr_anchor *x = find(a, collector, seq);
    if (x)
        *x = a->v[--a->n];
}

void ltr_anchors_free(ltr_anchors *a)
{
    free(a->v);
    a->v = NULL;
    a->n = a->cap = 0;
}
