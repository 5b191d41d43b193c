/*
 * format/compact.h — compact event records (docs/trace-format.md, "Compact
 * blocks"): parsing one record's header, shared by the reader and the writer,
 * and the writer's timestamp anchors. A buffer the recorder writes in several
 * pieces (partial flushes) becomes several blocks; each compact block carries
 * the timestamp its first delta counts from, so every block decodes alone.
 */
#ifndef LTR_FORMAT_COMPACT_H
#define LTR_FORMAT_COMPACT_H

#include "base/records.h"

#include <stddef.h>
#include <stdint.h>

typedef struct ltr_cevent {
    uint32_t layout;
    int64_t ts_delta;
    uint32_t header;  /* bytes before the payload */
    uint32_t payload; /* payload bytes */
} ltr_cevent;

/* Parses the compact record at p, of which `left` bytes belong to the block.
 * Returns the record's whole length, or 0 when it is malformed: size varint
 * bad, over LTR_CEVENT_MAX_SIZE or past `left`, or layout/timestamp varints
 * not inside the record (the rest of the block cannot be trusted then). */
size_t ltr_cevent_parse(const uint8_t *p, size_t left, ltr_cevent *out);

/* The timestamp of the last well-formed record of len bytes of compact
 * records whose deltas start from base (base itself if there are none). */
uint64_t ltr_cevents_last_ts(const uint8_t *p, size_t len, uint64_t base);

/* The prefix of len bytes of compact records that frames (every size varint
 * good, at least 2, inside len): its length, and its record count in *count.
 * Counts what a buffer really holds, whatever its commit word says (shared
 * memory that anyone may have written). */
size_t ltr_cevents_prefix(const uint8_t *p, size_t len, uint32_t *count);

/* The same for a CPU's buffer (ring.h), whose records each start with the
 * uvar id of the thread that wrote it (nonzero): the prefix of whole tagged
 * records, and their count (cpublock.c). */
size_t ltr_cpu_records_prefix(const uint8_t *p, size_t len, uint32_t *count);

/* Per buffer (collector, seq) written in pieces: the timestamp of the last
 * event written so far. Lives as long as the buffer is being written. */
typedef struct ltr_anchor {
    uint64_t seq, ts;
    uint16_t collector;
} ltr_anchor;

typedef struct ltr_anchors {
    ltr_anchor *v;
    size_t n, cap;
} ltr_anchors;

/* The base of the next piece of (collector, seq): 0 for its first piece. */
uint64_t ltr_anchors_base(const ltr_anchors *a, uint16_t collector, uint64_t seq);
/* Remembers where a piece ended (more pieces to come); 0 or -ENOMEM. */
int ltr_anchors_set(ltr_anchors *a, uint16_t collector, uint64_t seq, uint64_t ts);
/* The buffer's last piece was written: forget it. */
void ltr_anchors_drop(ltr_anchors *a, uint16_t collector, uint64_t seq);
void ltr_anchors_free(ltr_anchors *a);

#endif
