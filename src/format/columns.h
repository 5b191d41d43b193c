/*
 * format/columns.h — column blocks (format 5, docs/trace-format.md "Column
 * blocks"): a compact block's records stored field by field, each field of
 * every event of a layout in a column of its own. Interleaved records put a
 * size, a stack id, an address next to each other, and zstd finds little
 * to share between neighbours that unlike; the same bytes as columns put
 * like next to like, and cc1plus's events shrink by about a quarter
 * (docs/benchmarks.md). The columns are a lossless re-encoding of the
 * compact records: the writer turns a block's records into columns when
 * every record parses under its layout, and keeps the rows otherwise; the
 * reader turns columns back into exactly those records, a batch at a time,
 * unless a consumer reading blocks (src/analyze's fast path) takes them from
 * the columns itself (format/blocks.h, ltr_colview). Private to format/ (the
 * writer, the reader, merge and their tests).
 */
#ifndef LTR_FORMAT_COLUMNS_H
#define LTR_FORMAT_COLUMNS_H

#include "base/hmap.h"
#include "base/records.h"
#include "format/blocks.h"

#include <stddef.h>
#include <stdint.h>

/* Layouts with more fields are stored whole (one column of payloads). */
#define LTR_COLUMNS_MAX_FIELDS 32
/* Columns of one block at most: bounds what a reader allocates for a table. */
#define LTR_COLUMNS_MAX 65536u


/* ---- the writer's half ---- */

typedef struct ltr_colwriter {
    an_hmap layouts;    /* layout id -> how its fields are columns (columns.c) */
    uint64_t blocks;    /* blocks encoded: marks which layouts the current one uses */
    ltr_bytes in;       /* the block's records, copied out of shared memory */
    ltr_bytes out;      /* the column data of the last block encoded */
    ltr_bytes spare;    /* a column re-encoded, swapped in when shorter */
    ltr_bytes *cols;    /* scratch columns of the block being encoded */
    size_t ncols, capcols;
    struct col_use *uses; /* the block's layout table */
    size_t nuses, capuses;
    int delta;          /* try the delta transform on varint columns */
    int time;           /* try storing the time column as runs (format 8) */
    int time_runs;      /* the last block encoded stores it so: LTR_BLOCK_FLAG_TIME_RUNS */
} ltr_colwriter;

void ltr_colwriter_init(ltr_colwriter *w);
void ltr_colwriter_free(ltr_colwriter *w);
/* METADATA records on their way to the file, as they will be written (the
 * heap layouts' pnew and pref types in place): their LAYOUTs are learnt. The
 * first description of an id is kept, as a reader keeps it; a LAYOUT a
 * reader would refuse is not learnt (its events keep the block in rows). */
void ltr_colwriter_layouts(ltr_colwriter *w, const uint8_t *records, size_t len);
/* A METADATA chunk of these records was written (ok) or not: a layout is
 * used for columns once its LAYOUT is in the file, and forgotten when the
 * chunk that held its first description failed (it will come again). */
void ltr_colwriter_layouts_written(ltr_colwriter *w, const uint8_t *records, size_t len, int ok);
/* The compact records of a block (len bytes, count records), as columns into
 * w->out (w->time_runs: with its time column as runs): 1, or 0 when the
 * block stays in rows (a record that does not parse cleanly under a layout
 * written before, a count that differs, columns no smaller than the rows,
 * no memory). Reads p once, into a private copy. */
int ltr_colwriter_block(ltr_colwriter *w, const uint8_t *p, size_t len, uint32_t count);

/* ---- the reader's half ---- */

/* Whether a layout of the column table may be decoded: 0 when the reader
 * knows layout id with exactly these k field types, else -1. */
typedef int (*ltr_columns_check_fn)(void *ctx, uint32_t id, const uint8_t *types, uint32_t k);

typedef struct ltr_coldecoder {
    ltr_bytes rows;      /* records rebuilt */
    ltr_colview view;    /* the block's table and cursors */
    ltr_colentry *tab;
    size_t captab;
    ltr_colcursor *cols;
    size_t capcols;
    const char *why;     /* what did not decode */
} ltr_coldecoder;

/* The table and columns of a block of count records (d->view; flags: the
 * block's, LTR_BLOCK_FLAG_TIME_RUNS telling how its time column is stored):
 * 0, or -1 with d->why when they do not frame (a bad table, a column length
 * past the data, bytes after the last column, a time column whose runs do
 * not hold count deltas exactly, a layout check refuses, no memory).
 * check may be NULL (ltr merge, which only copies the records). */
int ltr_columns_open(ltr_coldecoder *d, const uint8_t *p, size_t len, uint32_t count, uint16_t flags,
                     ltr_columns_check_fn check, void *ctx);
/* The next records from the cursors as compact records (d->rows, emptied
 * first), until d->view.left is 0 or the rows reach about max_bytes: how
 * many were rebuilt. A record that cannot be rebuilt (a column too short,
 * a bad varint, a layout index past the table, a payload over 64 KiB) stops
 * it with d->why set: the rest of the block cannot be read. */
uint32_t ltr_columns_rows(ltr_coldecoder *d, size_t max_bytes);
/* Every record taken, some column still holds values. */
int ltr_columns_leftover(const ltr_coldecoder *d);
/* All of a block at once (ltr merge, tests): open, every record rebuilt
 * (at most LTR_CHUNK_MAX_RAW bytes of them), nothing left over: 0, or -1
 * with d->why. */
int ltr_columns_decode(ltr_coldecoder *d, const uint8_t *p, size_t len, uint32_t count, uint16_t flags,
                       ltr_columns_check_fn check, void *ctx);
void ltr_coldecoder_free(ltr_coldecoder *d);

#endif
