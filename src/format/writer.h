/*
 * format/writer.h — writes a trace file (docs/trace-format.md) chunk by chunk.
 * The recorder is its one user: it hands over HEADER/END key/value lists,
 * METADATA and COUNTERS records and whole buffer blocks; the writer frames
 * them into compressed, CRC-protected chunks and keeps the file valid when a
 * write fails (disk full, size limit), reporting the blocks it had to drop.
 */
#ifndef LTR_FORMAT_WRITER_H
#define LTR_FORMAT_WRITER_H

#include <ltr/common.h>

#include "base/records.h"

#include <stddef.h>
#include <stdint.h>

typedef struct ltr_writer ltr_writer;

/* The header fields of one buffer block (docs/trace-format.md, "EVENTS chunks"). */
typedef struct ltr_block_info {
    uint16_t collector;
    uint16_t flags;
    uint32_t pid, tid;
    uint64_t seq;
    uint32_t event_count;
    /* 0: the events are compact records (what producers write); the writer
     * adds LTR_BLOCK_FLAG_COMPACT and the timestamp base. 1: version-1 records. */
    uint8_t fixed_records;
    /* With LTR_BLOCK_FLAG_REFS in flags (ltr merge copying a format 4
     * block): its bases (allocations', frees'), written as given. Otherwise
     * the writer decides. */
    uint64_t ref_base[2];
    /* 1: the heap records' addresses stored as themselves, no address
     * references, and the records in rows, not columns (the recorder is
     * behind: their cost would be paid in lost events). */
    uint8_t plain;
    /* Whole buffers the block holds (0 counts as 1): the writer merges a
     * thread's consecutive whole buffers into one block (writer.c), and a
     * drop callback counts them all. */
    uint32_t nbuffers;
    /* 1: written as a block of its own, never merged (a thread's records
     * out of a CPU's buffer: their sequence number is the CPU buffer's). */
    uint8_t alone;
    /* 1: the caller vouches that this whole buffer is, in its thread's
     * order, the next after the last buffer of that thread it gave, whatever
     * their seq: merged with it if that one still waits. A save gives each
     * thread's buffers together (recorder/savewin.c), which other threads'
     * buffers came between in the ring: not seq + 1. */
    uint8_t thread_next;
} ltr_block_info;

/* Called for every block the writer had to discard because its chunk could not be written
 * (disk full, size limit). The recorder counts them as lost. */
typedef void (*ltr_writer_drop_fn)(void *ctx, const ltr_block_info *info, uint32_t byte_count);

/* Creates path new (mode 0600; -EEXIST if anything has that name, a symlink
 * included: see ltr_create_new) and writes the file header. */
int ltr_writer_open(ltr_writer **out, const char *path, ltr_error *err);
/* The same on fd, a new file opened for writing (ltr_create_temp); the writer owns
 * fd from now on, even on failure. path names it in messages. */
int ltr_writer_open_fd(ltr_writer **out, int fd, const char *path, ltr_error *err);
/* The descriptor the writer writes through (the file's identity, and a way
 * back to it once its name was taken by another file). */
int ltr_writer_fd(const ltr_writer *w);
/* Opens a complete trace to add chunks after its last one (`ltr symbolize`,
 * and SYMBOLS chunks at the end of a recording): size, the file's size when
 * it was read, next_seq the sequence number the next chunk takes, dev and
 * ino the file that was read. The path must still name that file, a regular
 * one, not a symlink, at that size (-ESTALE otherwise). A chunk that fails
 * to write is cut off again, as always. */
int ltr_writer_open_append(ltr_writer **out, const char *path, uint64_t size, uint64_t next_seq, uint64_t dev,
                           uint64_t ino, ltr_error *err);
/* Cuts the file back to size bytes (what an append added, taken back). */
int ltr_writer_cut(ltr_writer *w, uint64_t size, ltr_error *err);
/* Flushes pending EVENTS, then writes the INDEX chunk of what was written
 * (format/chunkindex.h), which END comes just after: ltr_writer_kv writes
 * it before END when it was not. Nothing else may come between them (the
 * index would not name it). Only the flush's errors are returned. */
int ltr_writer_index(ltr_writer *w, ltr_error *err);
/* Flushes pending EVENTS, then writes one chunk of chunk_type from raw. */
int ltr_writer_chunk(ltr_writer *w, uint16_t chunk_type, const void *raw, size_t len, ltr_error *err);
void ltr_writer_set_drop_callback(ltr_writer *w, ltr_writer_drop_fn fn, void *ctx);
/* 1 (the default, unless the environment says LTR_COLUMNS=0): compact blocks
 * are stored as columns where they can be (format 5); 0: always as rows. */
void ltr_writer_set_columns(ltr_writer *w, int on);
/* 0 = no limit; a chunk that would make the file larger is refused with -EFBIG. */
void ltr_writer_set_limit(ltr_writer *w, uint64_t max_file_bytes);
/* Bytes of records a block of merged whole buffers holds at most (writer.c,
 * MERGE_MAX): default 256 KiB, at most 16 MiB. */
void ltr_writer_set_merge_max(ltr_writer *w, size_t bytes);
/* Raw size of pending EVENTS that triggers a chunk write; default 1 MiB. */
void ltr_writer_set_chunk_target(ltr_writer *w, size_t raw_bytes);
/* 0: allocations' addresses told without the allocator model, as format 4
 * did (its blocks without LTR_BLOCK_FLAG_MODEL; for tests of format 4
 * reading, and for measuring the model). Default 1. */
void ltr_writer_set_model(ltr_writer *w, int on);
/* 0: without the next address (format 6's LTR_BLOCK_FLAG_NEXT), as format 5
 * told allocations; for tests of format 5 reading and for measuring it.
 * Default 1. */
void ltr_writer_set_next(ltr_writer *w, int on);
/* 0: addresses stored as themselves, not as differences (format 7's
 * LTR_BLOCK_FLAG_DELTA), as format 6 stored them; for tests of format 6
 * reading and for measuring it. Default 1. */
void ltr_writer_set_delta(ltr_writer *w, int on);
/* 0: column blocks' time columns stored delta by delta, not as runs
 * (format 8's LTR_BLOCK_FLAG_TIME_RUNS), as format 7 stored them; for tests
 * of format 7 reading and for measuring it. Default 1. */
void ltr_writer_set_time_runs(ltr_writer *w, int on);
/* 1: EVENTS and METADATA chunks compressed at a cheaper level (writer.c
 * says how much cheaper, and what it costs in bytes): for a recorder whose
 * CPU would be taken from programs waiting for one. Default 0. */
void ltr_writer_set_thrifty(ltr_writer *w, int on);
/* Flushes pending EVENTS, then writes a HEADER or END chunk from a key/value list
 * built with ltr_bytes_put_kv. */
int ltr_writer_kv(ltr_writer *w, uint16_t chunk_type, const ltr_bytes *kv, ltr_error *err);
/* The metadata comes from trace files (ltr merge), not from producers: LAYOUT
 * records naming pnew and pref fields (format 4) are kept as they are. */
void ltr_writer_trust_layouts(ltr_writer *w);
/* Flushes pending EVENTS, then writes one METADATA chunk of the given records. */
int ltr_writer_metadata(ltr_writer *w, const void *records, size_t len, ltr_error *err);
/* Appends a buffer block (its event records, len bytes) to the pending EVENTS chunk and
 * writes that chunk once it reaches the target size. A buffer may come in several
 * pieces, in order, each but the last with LTR_BLOCK_FLAG_SEALED_EARLY: the writer
 * anchors each compact piece's timestamps to where the one before ended. A negative
 * return means a chunk write failed; every block of that chunk went through the drop
 * callback. */
int ltr_writer_block(ltr_writer *w, const ltr_block_info *info, const void *events, size_t len,
                     ltr_error *err);
/* A CPU's buffer (or a piece of one), framed by ltr_cpu_records_prefix: each
 * thread's records become a block of their own (tid set, deltas from the
 * thread's previous record), in order (cpublock.c). */
int ltr_writer_cpu_block(ltr_writer *w, const ltr_block_info *info, const void *events, size_t len,
                         ltr_error *err);
/* Flushes pending EVENTS, then writes one COUNTERS chunk of the given records. */
int ltr_writer_counters(ltr_writer *w, const void *records, size_t len, ltr_error *err);
/* Writes the pending EVENTS chunk, if any; fdatasync()s the file if sync. */
int ltr_writer_flush(ltr_writer *w, int sync, ltr_error *err);
/* Process pid ended: what the writer keeps to tell its frees by reference
 * goes (a recorder beside a build kept 4 MB for each of the last 64
 * processes it saw), once its buffers waiting to be merged are in. A block
 * of it written later is still read right. 0, or -errno as ltr_writer_block. */
int ltr_writer_process_ended(ltr_writer *w, uint32_t pid, ltr_error *err);
/* Bytes of the file header and complete chunks: the file's size. */
uint64_t ltr_writer_size(const ltr_writer *w);
/* Frees the writer and closes the file; pending EVENTS are not written. */
void ltr_writer_close(ltr_writer *w);

#endif
