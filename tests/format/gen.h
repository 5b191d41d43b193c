/*
 * tests/format/gen.h — builds small, fully known traces with the real writer
 * for the format tests: three layouts covering every field type, two providers,
 * processes and threads, numbered events whose content follows from their
 * number, and a record of where every chunk ends.
 */
#ifndef LTR_TESTS_FORMAT_GEN_H
#define LTR_TESTS_FORMAT_GEN_H

#include <ltr/trace.h>

#include "base/records.h"
#include "format/writer.h"

#include <stddef.h>
#include <stdint.h>

#define GEN_START_NS 1000000000000ull
#define GEN_WALL_NS 1700000000123456789ull
#define GEN_MAX_MARKS 4096

typedef struct gen_opts {
    size_t blocks;            /* buffer blocks to write */
    size_t events_per_block;
    size_t chunk_target;      /* writer chunk target; 0 = flush after every block */
    int with_end;             /* write COUNTERS and END at the end */
    int fixed;                /* version-1 event records instead of compact ones */
} gen_opts;

/* File size after each chunk, and how many events the file holds up to there. */
typedef struct gen_marks {
    uint64_t size[GEN_MAX_MARKS];
    uint64_t events[GEN_MAX_MARKS];
    size_t n;
} gen_marks;

/* Writes a trace; returns 0 or the writer's negative errno. marks may be NULL. */
int gen_write(const char *path, const gen_opts *o, gen_marks *marks);
/* The pieces, for tests that write their own files. */
void gen_header(ltr_bytes *kv);
void gen_metadata(ltr_bytes *b);
/* A THREAD record: tid of pid is called name. */
void gen_thread(ltr_bytes *b, uint32_t pid, uint32_t tid, const char *name);
void gen_counters(ltr_bytes *b);
/* A COLLECTOR record of collector 0 ("events", 8 buffers of 64 KiB) with
 * its first n u64 counters from v (events_written, events_lost, ...): fewer
 * than all make a record of an older recorder. */
void gen_collector(ltr_bytes *b, const uint64_t *v, int n);
/* A LAYOUT record: fields "TYPE:name,TYPE:name" with TYPE the type's number. */
void gen_layout(ltr_bytes *b, uint32_t id, const ltr_guid *g, uint16_t event_id, const char *name,
                const char *fields);
/* A PROCESS record for pid (executable /bin/x, no arguments). */
void gen_process(ltr_bytes *b, uint32_t pid);
/* Event n as a version-1 record, or as a compact one whose timestamp counts from prev_ts. */
void gen_event(ltr_bytes *b, uint64_t n, uint64_t ts);
void gen_cevent(ltr_bytes *b, uint64_t n, uint64_t ts, uint64_t prev_ts);
uint64_t gen_ts(uint64_t n);
/* pid/tid of block i */
void gen_block_ids(size_t i, uint32_t *pid, uint32_t *tid);
/* 0 if ev is exactly event number n, else a line number of the failed check. */
int gen_check_event(const ltr_event *ev, uint64_t n);
/* A writer of path with the HEADER and METADATA chunks of gen_write written; NULL on failure. */
ltr_writer *gen_open(const char *path);
/* A temporary path in a directory of this process's own under $TMPDIR (or /tmp), unique per call. */
const char *gen_tmp(const char *name);
/* Reads a whole file into a malloc'd buffer. */
uint8_t *gen_slurp(const char *path, size_t *len);
int gen_spit(const char *path, const void *p, size_t len);

/* A generated trace kept for a group of tests: its path and bytes, where its
 * chunks end, and a second path for the damaged copies the tests make. */
typedef struct gen_file {
    const char *path, *work;
    uint8_t *data;
    size_t len;
    gen_marks m;
} gen_file;

/* Writes a trace as gen_write does under gen_tmp(name), reads it back; NULL on failure. */
gen_file *gen_file_new(const char *name, const char *work_name, const gen_opts *o);
void gen_file_free(gen_file *f);
/* A trace of the given format version holding n uncompressed METADATA chunks
 * of these records as they are, written without the writer's rewrites (what
 * an older writer wrote, or records a test damaged): 0 or -1. */
int gen_raw_trace(const char *path, uint32_t version, const ltr_bytes *meta, size_t n);
/* The same for n uncompressed chunks of these types (NULL: all METADATA). */
int gen_raw_chunks(const char *path, uint32_t version, const ltr_bytes *chunks, const uint16_t *types, size_t n);

#endif
