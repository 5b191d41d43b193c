/*
 * format/chunk.c — chunk header encoding and checking, and buffer block
 * framing (see chunk.h).
 */
#include "format/chunk.h"

#include "base/records.h"

#include <string.h>
#include <zlib.h>

uint32_t ltr_crc32(const void *p, size_t n)
{
    uLong crc = crc32(0L, Z_NULL, 0);
    const Bytef *b = p;
    /* zlib takes uInt lengths; feed large buffers in pieces. */
    while (n > 0) {
        uInt step = n > (1u << 30) ? (1u << 30) : (uInt)n;
        crc = crc32(crc, b, step);
        b += step;
        n -= step;
    }
    return (uint32_t)crc;
}

void ltr_chunk_header_encode(const ltr_chunk_header *h, uint8_t out[32])
{
    memcpy(out, LTR_CHUNK_MAGIC, 4);
    ltr_put_u16(out + 4, h->type);
    ltr_put_u16(out + 6, h->flags);
    ltr_put_u32(out + 8, h->payload_size);
    ltr_put_u32(out + 12, h->raw_size);
    ltr_put_u64(out + 16, h->seq);
    ltr_put_u32(out + 24, h->payload_crc);
    ltr_put_u32(out + 28, ltr_crc32(out, 28));
}

int ltr_chunk_header_decode(const uint8_t in[32], ltr_chunk_header *h)
{
    if (memcmp(in, LTR_CHUNK_MAGIC, 4) != 0)
        return LTR_CHUNK_BAD_MAGIC;
    if (ltr_get_u32(in + 28) != ltr_crc32(in, 28))
        return LTR_CHUNK_BAD_HEADER_CRC;
    h->type = ltr_get_u16(in + 4);
    h->flags = ltr_get_u16(in + 6);
    h->payload_size = ltr_get_u32(in + 8);
    h->raw_size = ltr_get_u32(in + 12);
    h->seq = ltr_get_u64(in + 16);
    h->payload_crc = ltr_get_u32(in + 24);
    return LTR_CHUNK_OK;
}

size_t ltr_block_frame_at(const uint8_t *p, size_t len, size_t off, ltr_block_frame *b)
{
    if (off > len || len - off < LTR_BLOCK_HEADER_SIZE || memcmp(p + off, LTR_BLOCK_MAGIC, 4) != 0)
        return 0;
    const uint8_t *h = p + off;
    uint16_t flags = ltr_get_u16(h + 6);
    int compact = (flags & LTR_BLOCK_FLAG_COMPACT) != 0, refs = compact && (flags & LTR_BLOCK_FLAG_REFS);
    size_t hl = refs ? LTR_BLOCK_REFS_HEADER_SIZE : compact ? LTR_BLOCK_COMPACT_HEADER_SIZE : LTR_BLOCK_HEADER_SIZE;
    uint32_t bytes = ltr_get_u32(h + 28);
    if (len - off < hl || bytes > len - off - hl)
        return 0;
    *b = (ltr_block_frame){.collector = ltr_get_u16(h + 4), .flags = compact ? flags : (uint16_t)(flags & ~LTR_BLOCK_FLAG_REFS),
                           .pid = ltr_get_u32(h + 8), .tid = ltr_get_u32(h + 12), .count = ltr_get_u32(h + 24),
                           .seq = ltr_get_u64(h + 16), .ts_base = compact ? ltr_get_u64(h + 32) : 0,
                           .ref_base = {refs ? ltr_get_u64(h + 40) : 0, refs ? ltr_get_u64(h + 48) : 0},
                           .rec = h + hl, .at = off + hl, .len = bytes};
    return hl + bytes;
}
