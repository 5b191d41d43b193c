/*
 * format/chunk.c — chunk header encoding and checking (see chunk.h).
 */
#include "format/chunk.h"

#include "base/records.h"

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
