/*
 * prim/sha1.h — SHA-1 (FIPS 180-4), for the name-derived provider GUIDs of
 * ETW (prim/guid.c) and a producer's image token (event/producer.c, which
 * must not send the exec's random bytes themselves). Its own small copy so that libltr-provider.so, which
 * derives a GUID at every provider registration, needs nothing beyond libc
 * (no crypto library loaded into every program that writes events).
 */
#ifndef LTR_PRIM_SHA1_H
#define LTR_PRIM_SHA1_H

#include <stddef.h>
#include <stdint.h>

#define LTR_SHA1_DIGEST_SIZE 20

typedef struct ltr_sha1 {
    uint32_t h[5];
    uint64_t bytes;    /* message length so far */
    uint8_t block[64]; /* bytes of the block being filled */
} ltr_sha1;

void ltr_sha1_init(ltr_sha1 *s);
void ltr_sha1_update(ltr_sha1 *s, const void *data, size_t len);
void ltr_sha1_digest(ltr_sha1 *s, uint8_t out[LTR_SHA1_DIGEST_SIZE]);

#endif
