/*
 * base/records.h — the binary records of the trace format (docs/trace-format.md)
 * that more than one part writes: producers put METADATA records and event
 * records into shared memory, the recorder copies them into the file as they
 * are, and the reader parses them. Little-endian, unaligned: always byte copies.
 * In base/, the layer below event, format and recorder, because all three
 * encode these records and event must not depend on the file format's code.
 */
#ifndef LTR_BASE_RECORDS_H
#define LTR_BASE_RECORDS_H

#include <stdint.h>
#include <string.h>

#include <ltr/common.h>

#define LTR_FILE_MAGIC "LTRTRACE"
#define LTR_FORMAT_VERSION 8u /* 2: compact blocks; 3: FRAME_NODES_V; 4: address references; 5: the allocator model, column blocks; 6: the next address; 7: addresses stored as differences; 8: the time column as runs (a reader of 8 reads 1 to 7 too) */
#define LTR_FILE_HEADER_SIZE 16u

#define LTR_CHUNK_MAGIC "LTRC"
#define LTR_CHUNK_HEADER_SIZE 32u
#define LTR_CHUNK_FLAG_ZSTD 0x1u
#define LTR_CHUNK_MAX_RAW (64u << 20)

enum ltr_chunk_type {
    LTR_CHUNK_HEADER = 1,
    LTR_CHUNK_METADATA = 2,
    LTR_CHUNK_EVENTS = 3,
    LTR_CHUNK_COUNTERS = 4,
    LTR_CHUNK_END = 5,
    LTR_CHUNK_SYMBOLS = 6, /* format/symchunk.h: names of the recorded addresses */
    LTR_CHUNK_INDEX = 7,   /* format/chunkindex.h: each timed chunk's earliest time, for the analysis */
    LTR_CHUNK_SPANS = 8,   /* format/chunkindex.h: each INDEX entry's process, events and latest time */
};

/* METADATA record kinds */
enum ltr_meta_kind {
    LTR_META_PROVIDER = 1,
    LTR_META_LAYOUT = 2,
    LTR_META_PROCESS = 3,
    LTR_META_THREAD = 4,
    LTR_META_STACK = 5,  /* heap agent: docs/heap-events.md */
    LTR_META_MODULE = 6,
    LTR_META_STACK_REF = 7, /* written by the trace writer in place of STACK (format/stackshare.c) */
    LTR_META_FRAME_NODES = 8, /* heap agent: nodes of its per-process frame trie */
    LTR_META_FRAME_NODES_V = 9, /* written by the trace writer in place of FRAME_NODES (format/nodevar.c) */
    LTR_META_PROCESS_END = 10, /* the recorder: a process's last producer went (docs/trace-format.md) */
    LTR_META_EXEC_END = 11,    /* the recorder: an image ended, its process running on outside the session */
};

/* Node ids of FRAME_NODES(_V) records are below this (the agent's are below 2^20). */
#define LTR_FRAME_NODE_MAX_ID (1u << 24)

/* COUNTERS record kinds */
enum ltr_counter_kind {
    LTR_COUNTER_COLLECTOR = 1,
    LTR_COUNTER_PROCESS_LOST = 2,
};

#define LTR_RECORD_HEADER_SIZE 8u /* u16 kind, u16 reserved, u32 size */

#define LTR_BLOCK_MAGIC "LTRB"
#define LTR_BLOCK_HEADER_SIZE 32u
#define LTR_BLOCK_FLAG_SEALED_EARLY 0x1u
#define LTR_BLOCK_FLAG_COMPACT 0x2u /* u64 ts_base after the header, compact event records */
#define LTR_BLOCK_COMPACT_HEADER_SIZE 40u
/* Format 4: a compact block whose events may tell addresses by reference
 * (field types pnew and pref): u64 alloc_base, u64 free_base after ts_base. */
#define LTR_BLOCK_FLAG_REFS 0x4u
#define LTR_BLOCK_REFS_HEADER_SIZE 56u
/* Format 5: with LTR_BLOCK_FLAG_COMPACT, the block's compact records stored
 * as columns (format/columns.h); byte_count counts the column data. */
#define LTR_BLOCK_FLAG_COLUMNS 0x8u
/* How far back (in values of its process's sequence) a reference may go. */
#define LTR_REFS_WINDOW (1u << 18)
/* Format 5, with LTR_BLOCK_FLAG_REFS: a pnew code of 1 to LTR_MODEL_LIST is
 * a place in the allocator model's list of freed blocks of the event's size
 * class, a larger code c a reference c - LTR_MODEL_LIST back (format/model.h). */
#define LTR_BLOCK_FLAG_MODEL 0x10u
/* Format 6, with LTR_BLOCK_FLAG_MODEL: a pnew code of LTR_MODEL_NEXT is the
 * address just past the block's previous allocation (ltr_model_next), one
 * of LTR_MODEL_SAME the event's own old address, a larger code c a
 * reference c - LTR_MODEL_CODES back (format/allocmodel.h). */
#define LTR_BLOCK_FLAG_NEXT 0x20u
/* Format 7, with LTR_BLOCK_FLAG_NEXT: a pnew or pref stored as itself (code
 * 0) is the zigzag difference from the previous one of its kind stored so in
 * the block (the first from 0). */
#define LTR_BLOCK_FLAG_DELTA 0x40u
/* Format 8, with LTR_BLOCK_FLAG_COLUMNS: the time column stored as runs of
 * zero deltas and the deltas between them, in units of a grain (columns.c). */
#define LTR_BLOCK_FLAG_TIME_RUNS 0x80u

#define LTR_EVENT_HEADER_SIZE 16u /* u32 size, u32 layout, u64 timestamp */

/* A compact event record: uvar size (bytes after it), uvar layout id, zigzag
 * varint timestamp delta from the previous event of the block, payload. */
#define LTR_VARINT_MAX 10u
#define LTR_CEVENT_HEADER_MAX (3u + 5u + LTR_VARINT_MAX)
/* The smallest compact record: three one-byte varints (size, layout, delta). */
#define LTR_CEVENT_MIN_SIZE 3u
/* Largest `size` of a compact record: layout and timestamp varints at their longest, plus payload. */
#define LTR_CEVENT_MAX_SIZE (LTR_MAX_EVENT_PAYLOAD + 5u + LTR_VARINT_MAX)

/* Little-endian stores and loads. x86-64 and arm64 are little-endian hosts,
 * so these are plain byte copies; they exist to say so once. */
static inline void ltr_put_u8(uint8_t *p, uint8_t v) { p[0] = v; }
static inline void ltr_put_u16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static inline void ltr_put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void ltr_put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static inline uint8_t ltr_get_u8(const uint8_t *p) { return p[0]; }
static inline uint16_t ltr_get_u16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t ltr_get_u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t ltr_get_u64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* Unsigned LEB128: 7 bits per byte, low first, high bit set on all but the
 * last; at most 10 bytes. Returns the bytes written. */
static inline size_t ltr_put_uvar(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

static inline size_t ltr_uvar_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Decodes a varint from at most `left` bytes. Returns its length, or 0 when it
 * runs past `left`, is longer than 10 bytes or overflows 64 bits. */
static inline size_t ltr_get_uvar(const uint8_t *p, size_t left, uint64_t *out)
{
    uint64_t v = 0;
    for (size_t i = 0; i < left && i < LTR_VARINT_MAX; i++) {
        uint64_t b = p[i];
        if (i == LTR_VARINT_MAX - 1 && b > 1)
            return 0;
        v |= (b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = v;
            return i + 1;
        }
    }
    return 0;
}

/* Zigzag: signed values near zero become small unsigned ones (0, -1, 1, -2 -> 0, 1, 2, 3). */
static inline uint64_t ltr_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t ltr_unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* Writes a compact event header for a payload of `payload` bytes; returns its length. */
static inline size_t ltr_put_cevent_header(uint8_t *p, uint32_t layout, uint64_t ts, uint64_t prev_ts,
                                           uint32_t payload)
{
    uint64_t delta = ltr_zigzag((int64_t)(ts - prev_ts));
    size_t inner = ltr_uvar_len(layout) + ltr_uvar_len(delta);
    size_t n = ltr_put_uvar(p, inner + payload);
    n += ltr_put_uvar(p + n, layout);
    return n + ltr_put_uvar(p + n, delta);
}

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ltr's trace format helpers assume a little-endian host"
#endif

/* A growable byte buffer for building records. Out-of-memory is sticky: once
 * set, appends do nothing and the caller checks `failed` at the end. */
typedef struct ltr_bytes {
    uint8_t *data;
    size_t len, cap;
    int failed;
} ltr_bytes;

void ltr_bytes_free(ltr_bytes *b);
uint8_t *ltr_bytes_grow(ltr_bytes *b, size_t n); /* reserves n bytes at the end, returns them */
void ltr_bytes_put_u8(ltr_bytes *b, uint8_t v);
void ltr_bytes_put_u16(ltr_bytes *b, uint16_t v);
void ltr_bytes_put_u32(ltr_bytes *b, uint32_t v);
void ltr_bytes_put_u64(ltr_bytes *b, uint64_t v);
void ltr_bytes_put_mem(ltr_bytes *b, const void *p, size_t n);
void ltr_bytes_put_str(ltr_bytes *b, const char *s); /* u16 length + bytes, cut at 65535 */
/* Records: begin writes the 8-byte header with a placeholder size, end patches it. */
size_t ltr_bytes_record_begin(ltr_bytes *b, uint16_t kind);
void ltr_bytes_record_end(ltr_bytes *b, size_t start);
/* Key/value entries of HEADER and END chunks (and of control messages). */
void ltr_bytes_put_kv(ltr_bytes *b, const char *key, const char *value);
/* Iterates a key/value list: *off starts at 0; returns 0 at the end or at a
 * malformed entry. key and val point into p and are not NUL-terminated. */
int ltr_kv_next(const uint8_t *p, size_t len, size_t *off, const char **key, size_t *klen,
                const char **val, size_t *vlen);
/* Copies the value of key into buf (NUL-terminated, cut to size); NULL if absent. */
const char *ltr_kv_find(const uint8_t *p, size_t len, const char *key, char *buf, size_t size);

#endif
