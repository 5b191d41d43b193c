/*
 * format/chunk.h — the 32-byte chunk header of the trace file
 * (docs/trace-format.md, "Chunks"): encoding with its CRCs for the writer,
 * decoding and checking for the reader, so both sides share one definition;
 * and the header of a buffer block inside an EVENTS chunk, as merge and the
 * read-ahead thread frame blocks.
 */
#ifndef LTR_FORMAT_CHUNK_H
#define LTR_FORMAT_CHUNK_H

#include <stddef.h>
#include <stdint.h>

typedef struct ltr_chunk_header {
    uint16_t type;
    uint16_t flags;
    uint32_t payload_size; /* bytes in the file after the header */
    uint32_t raw_size;     /* bytes once decompressed */
    uint64_t seq;
    uint32_t payload_crc;
} ltr_chunk_header;

enum ltr_chunk_check {
    LTR_CHUNK_OK = 0,
    LTR_CHUNK_BAD_MAGIC = -1,
    LTR_CHUNK_BAD_HEADER_CRC = -2,
};

/* zlib's CRC-32 (IEEE polynomial) of n bytes. */
uint32_t ltr_crc32(const void *p, size_t n);
/* Writes the 32 header bytes, magic and header CRC included. */
void ltr_chunk_header_encode(const ltr_chunk_header *h, uint8_t out[32]);
/* Reads 32 header bytes; returns LTR_CHUNK_OK or a negative ltr_chunk_check. */
int ltr_chunk_header_decode(const uint8_t in[32], ltr_chunk_header *h);

/* A buffer block of an EVENTS payload as its header frames it
 * (docs/trace-format.md, "EVENTS chunks"). */
typedef struct ltr_block_frame {
    uint16_t collector, flags; /* flags: LTR_BLOCK_FLAG_REFS only with the compact flag */
    uint32_t pid, tid, count;
    uint64_t seq, ts_base, ref_base[2]; /* ts_base: compact blocks; ref_base: with references */
    const uint8_t *rec;        /* its records, or column data */
    size_t at, len;            /* their offset in the payload, and bytes */
} ltr_block_frame;
/* The block at off of an EVENTS payload p (len bytes): its size, header
 * included, or 0 at the end or at a header that does not frame (a reader
 * skips the rest of the chunk there). */
size_t ltr_block_frame_at(const uint8_t *p, size_t len, size_t off, ltr_block_frame *b);

#endif
