/*
 * base/varint.h — the LEB128 (and fixed-size) decoding of the hot loops (the analyzer's fast
 * path, analyze/blocks.c; column values decoded ahead, format/columns.c): the same
 * values and lengths as ltr_get_uvar (base/records.h), the common cases
 * cheaper. Inline, in a header of its own so a test can hold it to
 * ltr_get_uvar on every length and cut.
 */
#ifndef LTR_BASE_VARINT_H
#define LTR_BASE_VARINT_H

#include "base/records.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A varint of up to 8 bytes read at once: the bytes up to the first without
 * the continuation bit kept, their 7-bit groups packed in three steps (the
 * bytes after the varint are read but dropped). 0 if it is longer. */
static inline __attribute__((always_inline)) size_t an_uvar8(const uint8_t *p, uint64_t *v)
{
    uint64_t x;
    memcpy(&x, p, sizeof x); /* little-endian host, as the format */
    uint64_t stop = ~x & 0x8080808080808080ull;
    if (!stop)
        return 0;
    x &= (stop ^ (stop - 1)) & 0x7f7f7f7f7f7f7f7full;
    x = ((x & 0x7f007f007f007f00ull) >> 1) | (x & 0x007f007f007f007full);
    x = ((x & 0x3fff00003fff0000ull) >> 2) | (x & 0x00003fff00003fffull);
    x = ((x & 0x0fffffff00000000ull) >> 4) | (x & 0x000000000fffffffull);
    *v = x;
    return (size_t)(__builtin_ctzll(stop) >> 3) + 1;
}

/* A varint of at most `left` bytes, with `readable` bytes (>= left) there to
 * read: the one-byte case first (most fields), then up to 8 bytes at once
 * (addresses take 7), else byte by byte. */
static inline __attribute__((always_inline)) size_t an_uvar(const uint8_t *p, size_t left, size_t readable,
                                                            uint64_t *v)
{
    if (__builtin_expect(left > 0 && p[0] < 0x80, 1)) {
        *v = p[0];
        return 1;
    }
    size_t n;
    if (readable >= 8 && (n = an_uvar8(p, v)) != 0)
        return n <= left ? n : 0;
    return ltr_get_uvar(p, left, v);
}

/* A fixed-size field of w bytes (1, 2, 4 or 8), little-endian as the host
 * and the format; any other w reads one byte. */
static inline __attribute__((always_inline)) uint64_t an_fixed_le(const uint8_t *p, size_t w)
{
    switch (w) {
    case 8: { uint64_t v; memcpy(&v, p, 8); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    default: return *p;
    }
}

#endif
