/*
 * recorder/markers.c — `ltr marker TEXT`: the recorder writes marker events
 * itself, from its own memory, never through the session's shared memory.
 * Markers are few and precious (`ltr analyze --from MARKER` needs them): in
 * memory mode the ring overwrites its oldest buffers, so the recorder keeps
 * every marker and writes them into each save, as the metadata is kept; in
 * file mode a marker goes into the file at once. Either way no traced program
 * can overwrite one, and the recorder never writes into memory laid out by
 * a header that traced programs can change.
 */
#include "recorder/internal.h"
#include "event/event.h"
#include "prim/prim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The PROVIDER and LAYOUT records of the marker event, under our own id. */
static int write_marker_layout(recorder *r, ltr_writer *w, ltr_error *err)
{
    ltr_bytes b = {0};
    ltr_event_layout_records(&ltr_marker_event, r->marker_layout, (uint32_t)getpid(), &b);
    int rc = b.failed ? ltr_fail(err, ENOMEM, "out of memory") : ltr_writer_metadata(w, b.data, b.len, err);
    ltr_bytes_free(&b);
    return rc;
}

/* One marker as a block of one fixed event record (its timestamp absolute:
 * nothing to anchor, wherever the block lands). */
static int write_marker(recorder *r, ltr_writer *w, const kept_marker *m, ltr_error *err)
{
    size_t len = strlen(m->text);
    uint32_t payload = 2 + (uint32_t)len, size = LTR_EVENT_HEADER_SIZE + payload;
    uint8_t *rec = malloc(size);
    if (!rec)
        return ltr_fail(err, ENOMEM, "out of memory");
    ltr_put_u32(rec, size);
    ltr_put_u32(rec + 4, r->marker_layout);
    ltr_put_u64(rec + 8, m->ts);
    ltr_put_u16(rec + 16, (uint16_t)len);
    memcpy(rec + 18, m->text, len);
    ltr_block_info info = {.collector = 0, .pid = (uint32_t)getpid(), .tid = ltr_gettid(), .seq = m->ts,
                           .event_count = 1, .fixed_records = 1};
    int rc = ltr_writer_block(w, &info, rec, size, err);
    free(rec);
    return rc;
}

int rec_marker(recorder *r, const char *text, ltr_error *err)
{
    if (strlen(text) > LTR_MAX_EVENT_PAYLOAD - 2)
        return ltr_fail(err, EINVAL, "a marker's text is at most %u bytes", LTR_MAX_EVENT_PAYLOAD - 2);
    kept_marker m = {.ts = ltr_now_ns(), .text = (char *)text};
    if (r->cfg.mode == LTR_MODE_FILE) {
        if (r->file_full)
            return ltr_fail(err, EFBIG, "the trace reached its size limit: the marker was not written");
        int rc = r->marker_meta_written ? 0 : write_marker_layout(r, r->writer, err);
        r->marker_meta_written = !rc;
        if (!rc)
            rc = write_marker(r, r->writer, &m, err);
        if (!rc)
            r->col[0].events_written++;
        return rc;
    }
    if (r->nmarkers == REC_MARKERS_MAX)
        return ltr_fail(err, ENOSPC, "session '%s' keeps %u markers already, the most it keeps: "
                                     "this one was not written", r->cfg.name, REC_MARKERS_MAX);
    kept_marker *n = realloc(r->markers, sizeof *n * (r->nmarkers + 1));
    m.text = n ? strdup(text) : NULL;
    if (!m.text) {
        r->markers = n ? n : r->markers;
        return ltr_fail(err, ENOMEM, "out of memory: the marker was not written");
    }
    r->markers = n;
    r->markers[r->nmarkers++] = m;
    return 0;
}

int rec_markers_save(recorder *r, ltr_writer *w, uint64_t *events, ltr_error *err)
{
    int rc = r->nmarkers ? write_marker_layout(r, w, err) : 0;
    for (unsigned i = 0; !rc && i < r->nmarkers; i++) {
        rc = write_marker(r, w, &r->markers[i], err);
        *events += !rc;
    }
    return rc;
}

void rec_markers_free(recorder *r)
{
    for (unsigned i = 0; i < r->nmarkers; i++)
        free(r->markers[i].text);
    free(r->markers);
    r->markers = NULL;
    r->nmarkers = 0;
}
