/*
 * format/cpublock.c — a CPU's buffer (ring.h, "per-CPU buffers") into the
 * trace: its records are tagged with their thread and carry whole
 * timestamps, because threads take turns in it. The writer gives each
 * thread's records their own compact block, with deltas again, so a trace
 * looks the same to every reader whichever buffers its events went through
 * (docs/trace-format.md, "Per-CPU buffers").
 */
#include "format/compact.h"
#include "format/writer.h"
#include "prim/prim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* One tagged record: [uvar tid][compact record]; its length, 0 if malformed. */
static size_t tagged_at(const uint8_t *p, size_t left, uint64_t *tid, size_t *tag)
{
    size_t k = ltr_get_uvar(p, left, tid);
    if (!k || *tid == 0 || *tid > UINT32_MAX)
        return 0;
    ltr_cevent ev;
    size_t n = ltr_cevent_parse(p + k, left - k, &ev);
    *tag = k;
    return n ? k + n : 0;
}

size_t ltr_cpu_records_prefix(const uint8_t *p, size_t len, uint32_t *count)
{
    size_t pos = 0, tag;
    uint32_t n = 0;
    uint64_t tid;
    for (size_t k; pos < len && (k = tagged_at(p + pos, len - pos, &tid, &tag)); pos += k)
        n++;
    *count = n;
    return pos;
}

typedef struct tagged {
    uint32_t tid, index;
    uint32_t off, len; /* of the compact record, after its tag */
} tagged;

static int by_thread(const void *a, const void *b)
{
    const tagged *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The records of one thread, [from, to) of v, as one compact block. */
static int write_thread(ltr_writer *w, const ltr_block_info *info, const uint8_t *data, const tagged *v,
                        size_t from, size_t to, ltr_bytes *out, ltr_error *err)
{
    out->len = 0;
    uint64_t prev = 0;
    for (size_t i = from; i < to; i++) {
        ltr_cevent ev;
        ltr_cevent_parse(data + v[i].off, v[i].len, &ev); /* framed by ltr_cpu_records_prefix */
        uint64_t ts = (uint64_t)ev.ts_delta; /* from 0: the time itself */
        uint8_t *dst = ltr_bytes_grow(out, LTR_CEVENT_HEADER_MAX + ev.payload);
        if (!dst)
            return ltr_fail(err, ENOMEM, "out of memory splitting a CPU buffer");
        size_t h = ltr_put_cevent_header(dst, ev.layout, ts, prev, ev.payload);
        memcpy(dst + h, data + v[i].off + ev.header, ev.payload);
        out->len -= LTR_CEVENT_HEADER_MAX - h;
        prev = ts;
    }
    ltr_block_info b = *info;
    b.tid = v[from].tid;
    b.event_count = (uint32_t)(to - from);
    b.flags &= (uint16_t)~LTR_BLOCK_FLAG_SEALED_EARLY; /* each block stands alone: no anchor */
    b.alone = 1;
    return ltr_writer_block(w, &b, out->data, out->len, err);
}

int ltr_writer_cpu_block(ltr_writer *w, const ltr_block_info *info, const void *events, size_t len,
                         ltr_error *err)
{
    const uint8_t *data = events;
    size_t n = 0, cap = len / 4 + 1, tag;
    tagged *v = malloc(cap * sizeof *v);
    if (!v)
        return ltr_fail(err, ENOMEM, "out of memory splitting a CPU buffer");
    uint64_t tid;
    for (size_t pos = 0, k; pos < len && n < cap && (k = tagged_at(data + pos, len - pos, &tid, &tag));
         pos += k, n++)
        v[n] = (tagged){(uint32_t)tid, (uint32_t)n, (uint32_t)(pos + tag), (uint32_t)(k - tag)};
    qsort(v, n, sizeof *v, by_thread);
    ltr_bytes out = {0};
    int rc = 0;
    for (size_t from = 0, to; !rc && from < n; from = to) {
        for (to = from + 1; to < n && v[to].tid == v[from].tid; to++)
            ;
        rc = write_thread(w, info, data, v, from, to, &out, err);
    }
    ltr_bytes_free(&out);
    free(v);
    return rc;
}
