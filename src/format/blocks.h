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
typedef struct ltr_colview ltr_colview;

typedef struct ltr_block_view {
    const uint8_t *rec; /* the next record */
    size_t left;        /* bytes of records left in the block (> 0) */
    uint64_t ts;        /* compact: the timestamp the next record's delta counts from */
    uint32_t pid, tid;  /* the block's producer thread */
    int compact;        /* compact records (else fixed ones: leave them to ltr_trace_next) */
    /* The process's address references (format 4, LTR_BLOCK_FLAG_REFS), or
     * NULL for a block without them: a pref then resolves to nothing. */
    struct ltr_refseq *refs;
    /* A column block's records still in their columns (then rec and left
     * are not used), or NULL. */
    ltr_colview *cols;
} ltr_block_view;

/* A column block (format 5, docs/trace-format.md "Column blocks") whose
 * records are still in their columns. A consumer may take records from the
 * cursors itself, a whole record at a time (when it stops, every cursor is
 * where the next record starts), and tell the reader how many it took with
 * ltr_trace_block_consumed (bytes 0); the rest it leaves to ltr_trace_next,
 * which rebuilds them from there. Reading the columns directly spares the
 * reader rebuilding the records and the consumer parsing them again: most
 * of what column blocks would cost an analysis. */
typedef struct ltr_colcursor {
    const uint8_t *p;
    size_t len, pos;
    size_t fixed; /* bytes of a fixed-size type's value, else 0 (a varint) */
    uint8_t type, transform; /* transform: LTR_COLUMN_DELTA, LTR_COLUMN_RUNS, or 0 */
    uint64_t prev;           /* the delta transform's value before; LTR_COLUMN_RUNS: ltr_coltime_next's state */
    uint64_t grain;          /* LTR_COLUMN_RUNS: the unit of its deltas */
} ltr_colcursor;

/* LTR_COLUMN_RUNS is no field column's (the table never says it): the
 * time column's of a block with LTR_BLOCK_FLAG_TIME_RUNS (format 8). */
enum { LTR_COLUMN_AS_IS = 0, LTR_COLUMN_DELTA = 1, LTR_COLUMN_RUNS = 2 };

/* The next record's time delta (zigzag, as a compact record stores it) from
 * a time column stored as runs, from the state *pos, *state (a cursor's pos
 * and prev, moved only as far as the delta read): 1, or 0 when the column
 * has none left or it is bad. */
int ltr_coltime_next(const ltr_colcursor *c, size_t *pos, uint64_t *state, uint64_t *z);

typedef struct ltr_colentry {
    uint32_t id, k, col0; /* layout id, its field columns, the first of them */
    int whole;            /* its payloads kept whole, in one column (uvar length, bytes) */
    const uint8_t *spec;  /* k field types, then k transforms */
} ltr_colentry;

/* A column's values decoded whole (ltr_colview_values): from the cursor's
 * position on, until the column's end or a value that does not decode.
 * Decoding a column in a loop of its own is cheaper than a varint of each
 * column in turn as records are read (analyze/blocks.c says how much). A
 * value is 32 bits, LTR_COLVAL_BIG standing for the next of big[] (an
 * address stored as itself, say): nearly all are small, and 32-bit values
 * halve the memory (cc1plus's chunks hold about 0.9 values a byte). */
#define LTR_COLVAL_BIG UINT32_MAX
/* Values are decoded ahead (ltr_colview.ahead) for a block of at most
 * LTR_COLVALS_BLOCK_MAX bytes of columns (a consumer reads no larger one
 * so: 4 to 12 bytes of values a byte), and for a chunk's blocks up to
 * LTR_COLVALS_CHUNK_MAX bytes of columns in all (a real chunk holds about
 * 1 MiB): a crafted chunk of 64 MiB must not cost the read-ahead thread
 * ten times that in each of its slots. */
#define LTR_COLVALS_BLOCK_MAX (1u << 20)
#define LTR_COLVALS_CHUNK_MAX (4u << 20)
typedef struct ltr_colvals {
    const uint32_t *v; /* a delta column's values as the transform gives them */
    const uint64_t *big;
    uint32_t n;
    uint32_t nbig;     /* of big: 0, a loop over the values need not look for LTR_COLVAL_BIG */
    size_t end;        /* the cursor's position after the n values */
    uint64_t prev;     /* a delta column's value after them */
} ltr_colvals;

struct ltr_colview {
    uint64_t nt;              /* entries of the table */
    const ltr_colentry *tab;
    ltr_colcursor *cols;      /* [0]: layout indexes, [1]: time deltas (or their runs), then each entry's from col0 */
    size_t ncols;
    uint32_t left;            /* records not taken yet */
    /* Each column's values, decoded on the read-ahead thread while the block
     * waited (ltr_trace_open_decoding), for the block as it was opened;
     * NULL when they were not. */
    const ltr_colvals *ahead;
};

/* Every column of v decoded from its cursor on into out[k] (v->ncols of
 * them), the values into store and the big ones into big, each with room
 * for ltr_colview_value_room(v) of them; how many big ones. A column the
 * fast path does not read (a whole payload's, a fixed size other than 1,
 * 2, 4 or 8 bytes) gets no values. */
size_t ltr_colview_value_room(const ltr_colview *v);
size_t ltr_colview_values(const ltr_colview *v, uint32_t *store, uint64_t *big, ltr_colvals *out);

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
/* ltr_trace_open, and with decode_ahead the read-ahead thread decodes
 * column blocks' values (ltr_colview.ahead) for a consumer of
 * ltr_trace_block that reads them (src/analyze). Set at the open, not
 * after: on bench/heap's trace, of a few chunks, the thread had fetched
 * most of them before the analysis could ask. */
int ltr_trace_open_decoding(const char *path, int decode_ahead, ltr_trace **out, ltr_error *err);
/* Read-ahead thread for the scans after the next rewind: -1 automatic (files
 * of LTR_READAHEAD_MIN bytes and more; the environment's LTR_READAHEAD=0 or 1
 * decides when set), 0 never, 1 always. */
void ltr_trace_set_readahead(ltr_trace *t, int mode);
#define LTR_READAHEAD_MIN (1u << 20) /* file size from which a scan gets the thread by default */
/* The bytes a trace file's chunks hold once decompressed, summed from their
 * headers (no payload read), counted until enough or the first header that
 * does not check; 0 for a file that cannot be read. What the analysis's
 * tables grow with, which the file's size does not tell where events pack
 * well (perl's leak: 66 KB of file, 12 MB of events). */
uint64_t ltr_trace_file_raw_bytes(const char *path, uint64_t enough);
/* A process the recorder saw go (LTR_META_PROCESS_END): its last producer's
 * connection closed at ts, on the recorder's clock (the events'). */
typedef struct ltr_process_end {
    uint32_t pid;
    uint64_t ts;
    /* 0: the process's end (its last image's); n > 0: it exec'd a program
     * that did not join the session, and image n - 1 of the pid ended (the
     * analysis's image numbers: how many images of the pid were replaced
     * before it, ltr_trace_image_at) */
    uint32_t exec_image;
} ltr_process_end;
/* The PROCESS_END records read so far, in file order (the analysis ends a
 * process's model there: an exited process frees nothing more). */
size_t ltr_trace_process_end_count(const ltr_trace *t);
const ltr_process_end *ltr_trace_process_end_at(const ltr_trace *t, size_t i);

/* A process image replaced: a PROCESS record came for a pid already
 * described, an exec (the pid's next image numbers its stacks from 1
 * again) or the pid used again. The old image's stacks stay findable under
 * `key`, a number above every pid (ltr_trace_stack_find(t, key, id); the
 * stacks found so report the real pid); `exe` is the old image's program. */
#define LTR_IMAGE_KEY_BASE 0x80000000u
typedef struct ltr_process_image {
    uint32_t pid, key;
    uint64_t ts; /* the new image's PROCESS record's time: the old one's events are before it */
    char *exe;
    /* the old image's process had ended before the new one started (a
     * PROCESS_END of the pid in between, from before the new record's
     * time): the pid used again by another process, not an exec */
    int reused;
} ltr_process_image;
/* The images replaced so far, in file order. */
size_t ltr_trace_image_count(const ltr_trace *t);
const ltr_process_image *ltr_trace_image_at(const ltr_trace *t, size_t i);
/* The threads of the images replaced, named as they were then (a THREAD
 * record of the new image replaces the name of its tid): pid is the
 * image's key. */
size_t ltr_trace_image_thread_count(const ltr_trace *t);
const ltr_thread *ltr_trace_image_thread_at(const ltr_trace *t, size_t i);

/* Of the damage found so far (summary.damage), the records of intact
 * chunks (LTR_DAMAGE_BAD_RECORD and FORGED), and of those the FORGED ones:
 * all, past the damage list's bound too. A FORGED record is left out at no
 * loss, so a trace whose only damage they are is whole: `ltr info`, `ltr
 * dump` and `ltr analyze` do not exit 3 for them, and list them apart. */
uint64_t ltr_trace_record_damage(const ltr_trace *t);
uint64_t ltr_trace_forged_count(const ltr_trace *t);

/* The file offset reading has reached (for progress reports). */
uint64_t ltr_trace_position(const ltr_trace *t);

/* Whether stack id of pid (or an old image's key), which ltr_trace_stack_find
 * does not find, is unknown because records gave it, or a frame node of its
 * path, other frames (heapmeta.c); not when its record was only lost. */
int ltr_trace_stack_conflicted(const ltr_trace *t, uint32_t pid, uint32_t id);

/* Address references (docs/trace-format.md, "Address references"): per
 * (collector, pid), the pnew values (LTR_REFS_ALLOC) and the pref values
 * (LTR_REFS_FREE) in file order, and in format 5 the allocator model's lists
 * of freed addresses. A pnew field refers into the free sequence or a list,
 * a pref field into the allocation sequence. A consumer decoding records
 * itself fills an ltr_refev with an event's stored codes (0: the address was
 * stored as itself, in addr[]) and its size field, resolves them with
 * ltr_refseq_resolve_event, which changes nothing, and then commits the
 * event with ltr_refseq_commit_event. Resolving fails (-1) for a reference
 * the file does not back: to a value in a chunk lost to damage, further back
 * than the window, past what a list holds here, or after a record of the
 * block that could not be read; the generic path then reports the event as
 * damage (and still commits it: its values hold their places, unknown). */
enum { LTR_REFS_ALLOC = 0, LTR_REFS_FREE = 1 };
typedef struct ltr_refev {
    uint8_t has[2];   /* [0]: a pnew field, [1]: a pref field */
    uint64_t code[2]; /* as stored */
    uint64_t addr[2]; /* where the code is 0, the address stored; resolved ones are filled in */
    uint64_t size;    /* the layout's model size field (ltr_layout_model_size), else 0; read only with a pnew */
    /* set by ltr_refseq_resolve_event for the commit */
    uint8_t ok[2];
    int place;      /* the list place the pnew took, -1: none */
    int free_class; /* the size class of the allocation the pref names, -1: unknown */
} ltr_refev;
int ltr_refseq_resolve_event(const struct ltr_refseq *s, ltr_refev *e);
void ltr_refseq_commit_event(struct ltr_refseq *s, const ltr_refev *e);
/* Both, when the event resolves; -1 and nothing changed when it does not. */
int ltr_refseq_apply_event(struct ltr_refseq *s, ltr_refev *e);
/* ltr_refseq_apply_event over e[0..n) in order, up to the first that does
 * not resolve (nothing changed for it): how many were applied. An event
 * with neither field (has[] both 0) is applied as nothing. */
size_t ltr_refseq_apply_events(struct ltr_refseq *s, ltr_refev *e, size_t n);

/* The index of the field whose value is an event's size for the allocator
 * model (the first uvar field named "size" of a layout with a pnew field),
 * or -1. */
int ltr_layout_model_size(const ltr_layout *l);

/* Size of a fixed-size type, 0 for string and blob, -1 for an unknown type. */
int ltr_type_fixed_size(unsigned type);

#endif
