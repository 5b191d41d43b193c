/*
 * format/blocks.h — the part of the trace reader that other parts may use
 * beside include/ltr/trace.h: block-level reading for a consumer that decodes
 * compact records itself (src/analyze's fast path), the read-ahead switch,
 * and the sizes of field types. The rest of the reader's internals
 * (format/reader.h) is private to format/; the build only lets other parts
 * see this header (src/format/CMakeLists.txt).
 */
#ifndef LTR_FORMAT_BLOCKS_H
#define LTR_FORMAT_BLOCKS_H

#include <ltr/trace.h>

#include <stddef.h>
#include <stdint.h>

/* Block-level reading, for sequential consumers that decode the records of
 * compact blocks themselves (src/analyze): ltr_trace_block shows the rest of
 * the current buffer block; the consumer decodes well-formed records of
 * layouts it knows from its start, tells the reader with
 * ltr_trace_block_consumed and ltr_trace_count_layout (so that the summary
 * counts stay exactly those of ltr_trace_next), and leaves every other record
 * (unknown layout, malformed: damage) to ltr_trace_next, which goes on from
 * there. Both may be mixed freely. */
struct ltr_refseq;

typedef struct ltr_block_view {
    const uint8_t *rec; /* the next record */
    size_t left;        /* bytes of records left in the block (> 0) */
    uint64_t ts;        /* compact: the timestamp the next record's delta counts from */
    uint32_t pid, tid;  /* the block's producer thread */
    int compact;        /* compact records (else fixed ones: leave them to ltr_trace_next) */
    /* The process's address references (format 4, LTR_BLOCK_FLAG_REFS), or
     * NULL for a block without them: a pref then resolves to nothing. */
    struct ltr_refseq *refs;
} ltr_block_view;

/* Records decoded by the consumer from the start of a view. */
typedef struct ltr_block_run {
    size_t bytes;      /* record bytes, from view.rec */
    uint32_t records;
    uint64_t first_ts, last_ts, min_ts, max_ts; /* of those records */
} ltr_block_run;

/* Moves to a block with records left (loading chunks, recording damage as
 * ltr_trace_next does): 1 and *v, 0 at the end of the trace, or -errno (err set).
 * The view is valid until the next call into the reader. */
int ltr_trace_block(ltr_trace *t, ltr_block_view *v, ltr_error *err);
/* The first r->records records of the last view were decoded by the caller. */
void ltr_trace_block_consumed(ltr_trace *t, const ltr_block_run *r);
/* n events of layout l were decoded by the caller (its and its provider's counts). */
void ltr_trace_count_layout(ltr_trace *t, const ltr_layout *l, uint64_t n);
/* Read-ahead thread for the scans after the next rewind: -1 automatic (files
 * of LTR_READAHEAD_MIN bytes and more; the environment's LTR_READAHEAD=0 or 1
 * decides when set), 0 never, 1 always. */
void ltr_trace_set_readahead(ltr_trace *t, int mode);
#define LTR_READAHEAD_MIN (1u << 20) /* file size from which a scan gets the thread by default */
/* The file offset reading has reached (for progress reports). */
uint64_t ltr_trace_position(const ltr_trace *t);

/* Address references (docs/trace-format.md, "Address references"): per
 * (collector, pid), the pnew values (LTR_REFS_ALLOC) and the pref values
 * (LTR_REFS_FREE) in file order. A pnew field refers into the free
 * sequence, a pref field into the allocation sequence. A consumer decoding
 * records itself resolves every reference of an event first (code: the
 * stored uvar, at least 1; 0 means the address was stored as itself), then
 * appends the event's pnew and pref values. Resolving fails (-1) for a
 * reference the file does not back: to a value in a chunk lost to damage,
 * further back than the window, or after a record of the block that could
 * not be read; the generic path then reports the event as damage. */
enum { LTR_REFS_ALLOC = 0, LTR_REFS_FREE = 1 };
int ltr_refseq_resolve(const struct ltr_refseq *s, int which, uint64_t code, uint64_t *addr);
void ltr_refseq_append(struct ltr_refseq *s, int which, uint64_t addr);
/* A value whose address is unknown (its own reference failed): it takes its number, nothing resolves to it. */
void ltr_refseq_skip(struct ltr_refseq *s, int which);

/* Size of a fixed-size type, 0 for string and blob, -1 for an unknown type. */
int ltr_type_fixed_size(unsigned type);

#endif
