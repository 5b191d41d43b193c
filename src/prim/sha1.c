/*
 * prim/sha1.c — SHA-1 for prim/guid.c (see prim/sha1.h for why it is here).
 * Not for security: it derives the same GUID from a provider name as ETW does.
 */
#include "prim/sha1.h"

#include <string.h>

static uint32_t rol(uint32_t x, unsigned n) { return x << n | x >> (32 - n); }

static void compress(uint32_t h[5], const uint8_t *p)
{
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 80; i++)
        w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20) {
            f = (b & c) | (~b & d);
            k = 0x5A827999;
        } else if (i < 40) {
            f = b ^ c ^ d;
            k = 0x6ED9EBA1;
        } else if (i < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8F1BBCDC;
        } else {
            f = b ^ c ^ d;
            k = 0xCA62C1D6;
        }
        uint32_t t = rol(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rol(b, 30);
        b = a;
        a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

void ltr_sha1_init(ltr_sha1 *s)
{
    static const uint32_t iv[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    memcpy(s->h, iv, sizeof iv);
    s->bytes = 0;
}

void ltr_sha1_update(ltr_sha1 *s, const void *data, size_t len)
{
    const uint8_t *p = data;
    while (len > 0) {
        size_t used = (size_t)(s->bytes % 64), take = 64 - used < len ? 64 - used : len;
        memcpy(s->block + used, p, take);
        s->bytes += take;
        p += take;
        len -= take;
        if (used + take == 64)
            compress(s->h, s->block);
    }
}

void ltr_sha1_digest(ltr_sha1 *s, uint8_t out[LTR_SHA1_DIGEST_SIZE])
{
    uint64_t bits = s->bytes * 8;
    uint8_t pad[72] = {0x80};
    size_t used = (size_t)(s->bytes % 64), n = (used < 56 ? 56 : 120) - used;
    for (int i = 0; i < 8; i++)
        pad[n + i] = (uint8_t)(bits >> (56 - 8 * i));
    ltr_sha1_update(s, pad, n + 8);
    for (int i = 0; i < 20; i++)
        out[i] = (uint8_t)(s->h[i / 4] >> (24 - 8 * (i % 4)));
}
