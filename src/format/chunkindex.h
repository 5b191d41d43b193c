/*
 * format/chunkindex.h — the INDEX chunk (docs/trace-format.md, "INDEX
 * chunks"): for each buffer block of the EVENTS chunks, and each METADATA
 * chunk with process ends, where it is (chunk sequence number, the offset
 * where it ends in the chunk's raw payload) and its earliest time. The
 * writer gathers it as it writes and puts it just before END, so only a
 * complete trace has one. A reader of a whole file finds it from the chunk
 * headers alone and knows, at each block, the earliest time still to come:
 * the analysis hands on every event older than that at once instead of
 * holding it for the time order (analyze/order.h), so that the model runs
 * beside the decoding. Per block, not per chunk: two threads' 1 MB buffers,
 * each from the start to the end, are two chunks of bench/heap's trace, and
 * the second's earliest time is the trace's start. The index is input like
 * any other: one that lies can only make events come late, which the time
 * order counts.
 *
 * The SPANS chunk, written just after it, says more of each entry: its
 * process, how many events it holds and its latest time. From them the
 * analysis knows before it reads an event how many it must hold for none
 * to come late (ltr_chunk_index_behind), where without them it finds out
 * by reading the trace once (node's trace, its threads' buffers a second
 * apart: analyzed twice). A reader that predates the chunk skips it.
 */
#ifndef LTR_FORMAT_CHUNKINDEX_H
#define LTR_FORMAT_CHUNKINDEX_H

#include <ltr/trace.h>

#include <stddef.h>
#include <stdint.h>

#define LTR_INDEX_ENTRY_SIZE 24u /* u64 seq, u32 end, u32 flags, u64 earliest time */
#define LTR_INDEX_SORTED 0x1u    /* flags: the block's records are in time order */
#define LTR_SPAN_ENTRY_SIZE 16u  /* u32 pid, u32 events, u64 latest time */

typedef struct ltr_index_entry {
    uint64_t seq;  /* the chunk's sequence number */
    uint32_t end;  /* where the block ends in the chunk's raw payload (a METADATA chunk: its raw size) */
    uint32_t flags;
    uint64_t ts;   /* its earliest time */
    uint64_t rest; /* once settled: the earliest time of every entry after it */
    /* Its span (the SPANS chunk): the block's process (0: a METADATA
     * chunk's ends, of any process), its events, its latest time. */
    uint32_t pid, events;
    uint64_t last;
} ltr_index_entry;

typedef struct ltr_chunk_index {
    ltr_index_entry *e; /* ascending by (seq, end) */
    size_t n, cap;
    int failed;         /* out of memory or out of order: not written, not used */
    int spans;          /* every entry's span is known (a SPANS chunk of as many entries was read) */
} ltr_chunk_index;

/* One more entry, after those added (one not after the last fails the index). */
void ltr_chunk_index_add(ltr_chunk_index *x, uint64_t seq, uint32_t end, uint32_t flags, uint64_t ts);
/* The span of the entry added last. */
void ltr_chunk_index_span(ltr_chunk_index *x, uint32_t pid, uint32_t events, uint64_t last);
void ltr_chunk_index_free(ltr_chunk_index *x);
/* The payload of an INDEX chunk (malloc'd); -1 without memory. */
int ltr_chunk_index_encode(const ltr_chunk_index *x, uint8_t **out, size_t *len);
/* An INDEX payload read back into out (emptied first): 0, or -1 when it
 * does not parse (a size not a multiple of an entry, entries out of order,
 * unknown flags) or memory runs out. */
int ltr_chunk_index_parse(const uint8_t *p, size_t len, ltr_chunk_index *out);
/* The SPANS chunk's payload, an entry's span for each of x's entries. */
int ltr_chunk_index_encode_spans(const ltr_chunk_index *x, uint8_t **out, size_t *len);
/* A SPANS payload into x's entries: 0, or -1 (x->spans stays 0) when it
 * does not hold one span for each. */
int ltr_chunk_index_parse_spans(const uint8_t *p, size_t len, ltr_chunk_index *x);
/* With every span known: the most events, of the entries before one, whose
 * latest time is not before its earliest, over the entries whose process
 * (or any, for a METADATA chunk's ends) had an entry before them whose
 * latest time was not before their earliest: a bound on how many events a
 * reader in file order must hold for no event to come after a later one of
 * its process had to go on. Each entry's events all counted (its span, not
 * its events' times, is known), so a bound, not the least. UINT64_MAX
 * without spans, or with an entry whose times are not known (earliest 0,
 * latest UINT64_MAX: records that do not parse, fixed records). */
uint64_t ltr_chunk_index_behind(const ltr_chunk_index *x);
/* Sets each entry's rest. */
void ltr_chunk_index_settle(ltr_chunk_index *x);

/* What a settled index says at a reader's position: every entry up to
 * (seq, end) read, the block ending there being read. */
typedef struct ltr_index_bound {
    uint64_t rest;  /* the earliest time of every entry after it (UINT64_MAX: none) */
    uint64_t first; /* that block's earliest time (0: not indexed) */
    int sorted;     /* its records are in time order */
} ltr_index_bound;
ltr_index_bound ltr_chunk_index_at(const ltr_chunk_index *x, uint64_t seq, uint32_t end);

/* The earliest time of n bytes of compact records counted from base, and
 * whether they are in time order: 0 when one does not parse (nothing is
 * known of what a reader makes of the rest); their latest time in *last
 * (UINT64_MAX then). */
uint64_t ltr_cevents_first_ts(const uint8_t *p, size_t len, uint64_t base, int *sorted, uint64_t *last);
/* The earliest time of the PROCESS_END and EXEC_END records of a METADATA
 * payload (UINT64_MAX: none); their number, latest time and process (0 when
 * of several) in *n, *last, *pid. */
uint64_t ltr_meta_ends_first_ts(const uint8_t *p, size_t len, uint32_t *n, uint64_t *last, uint32_t *pid);

/* The settled index of a regular file's trace, found from its chunk headers
 * (a FIFO, no INDEX chunk, the first intact one not parsing or empty, or an
 * I/O error give none), with its spans when the first intact SPANS chunk
 * gives one for each entry. 1 found, 0 none. */
int ltr_trace_find_index(ltr_trace *t, ltr_chunk_index *out);
/* The reader's position: the chunk it is in, and where in an EVENTS
 * chunk's payload the block being read ends. */
void ltr_trace_read_pos(const ltr_trace *t, uint64_t *seq, uint32_t *end);

#endif
