/*
 * format/chunk.h — the 32-byte chunk header of the trace file
 * (docs/trace-format.md, "Chunks"): encoding with its CRCs for the writer,
 * decoding and checking for the reader, so both sides share one definition.
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

#endif
