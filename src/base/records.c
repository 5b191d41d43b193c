/*
 * base/records.c — a growable byte buffer and the record framing of the
 * trace format (docs/trace-format.md). Used by producers to build METADATA
 * records and by the writer for HEADER, END and COUNTERS chunks.
 */
#include "base/records.h"

#include <stdlib.h>

#ifdef LTR_BYTES_OWN_PAGES
/* The heap agent's copy (src/agent/CMakeLists.txt) builds its records in
 * pages of its own, never in the traced program's heap: a block taken from
 * and given back to the program's arena stays in its thread's cache and
 * shifts every later block, and glibc then trims its arena at other points.
 * The first free and the first realloc of `heap-workload 1 200000 12` wrote
 * their layouts from the worker thread through a 256-byte block: 3 300
 * minor faults against 2 680 plain (2 800 with the agent loaded and no
 * session), 600 more at 11 to 15 us each on a PVM guest. */
#include <sys/mman.h>
#define BYTES_FIRST 4096

static void *bytes_resize(void *old, size_t old_cap, size_t cap)
{
    void *p = old ? mremap(old, old_cap, cap, MREMAP_MAYMOVE)
                  : mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void bytes_release(void *p, size_t cap)
{
    if (p)
        munmap(p, cap);
}
#else
#define BYTES_FIRST 256

static void *bytes_resize(void *old, size_t old_cap, size_t cap)
{
    (void)old_cap;
    return realloc(old, cap);
}

static void bytes_release(void *p, size_t cap)
{
    (void)cap;
    free(p);
}
#endif

void ltr_bytes_free(ltr_bytes *b)
{
    bytes_release(b->data, b->cap);
    b->data = NULL;
    b->len = b->cap = 0;
}

uint8_t *ltr_bytes_grow(ltr_bytes *b, size_t n)
{
    static uint8_t sink[64];
    if (b->failed)
        return n <= sizeof sink ? sink : NULL;
    if (b->len + n > b->cap || !b->data) { /* an empty one too: NULL + 0 is no place (clang's UBSan) */
        size_t cap = b->cap ? b->cap * 2 : BYTES_FIRST;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *p = bytes_resize(b->data, b->cap, cap);
        if (!p) {
            b->failed = 1;
            return n <= sizeof sink ? sink : NULL;
        }
        b->data = p;
        b->cap = cap;
    }
    uint8_t *out = b->data + b->len;
    b->len += n;
    return out;
}

void ltr_bytes_put_u8(ltr_bytes *b, uint8_t v) { ltr_put_u8(ltr_bytes_grow(b, 1), v); }
void ltr_bytes_put_u16(ltr_bytes *b, uint16_t v) { ltr_put_u16(ltr_bytes_grow(b, 2), v); }
void ltr_bytes_put_u32(ltr_bytes *b, uint32_t v) { ltr_put_u32(ltr_bytes_grow(b, 4), v); }
void ltr_bytes_put_u64(ltr_bytes *b, uint64_t v) { ltr_put_u64(ltr_bytes_grow(b, 8), v); }

void ltr_bytes_put_mem(ltr_bytes *b, const void *p, size_t n)
{
    uint8_t *dst = ltr_bytes_grow(b, n);
    if (dst && n && !b->failed)
        memcpy(dst, p, n);
}

void ltr_bytes_put_str(ltr_bytes *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n > 65535)
        n = 65535;
    ltr_bytes_put_u16(b, (uint16_t)n);
    ltr_bytes_put_mem(b, s, n);
}

size_t ltr_bytes_record_begin(ltr_bytes *b, uint16_t kind)
{
    size_t start = b->len;
    ltr_bytes_put_u16(b, kind);
    ltr_bytes_put_u16(b, 0);
    ltr_bytes_put_u32(b, 0);
    return start;
}

void ltr_bytes_record_end(ltr_bytes *b, size_t start)
{
    if (!b->failed)
        ltr_put_u32(b->data + start + 4, (uint32_t)(b->len - start));
}

void ltr_bytes_put_kv(ltr_bytes *b, const char *key, const char *value)
{
    ltr_bytes_put_str(b, key);
    size_t n = value ? strlen(value) : 0;
    ltr_bytes_put_u32(b, (uint32_t)n);
    ltr_bytes_put_mem(b, value, n);
}

int ltr_kv_next(const uint8_t *p, size_t len, size_t *off, const char **key, size_t *klen,
                const char **val, size_t *vlen)
{
    size_t o = *off;
    if (o + 2 > len)
        return 0;
    uint16_t kl = ltr_get_u16(p + o);
    if (o + 2 + kl + 4 > len)
        return 0;
    uint32_t vl = ltr_get_u32(p + o + 2 + kl);
    if (o + 6 + kl + (size_t)vl > len)
        return 0;
    *key = (const char *)p + o + 2;
    *klen = kl;
    *val = (const char *)p + o + 6 + kl;
    *vlen = vl;
    *off = o + 6 + kl + vl;
    return 1;
}

const char *ltr_kv_find(const uint8_t *p, size_t len, const char *key, char *buf, size_t size)
{
    size_t off = 0, klen, vlen, want = strlen(key);
    const char *k, *v;
    while (ltr_kv_next(p, len, &off, &k, &klen, &v, &vlen)) {
        if (klen == want && !memcmp(k, key, want)) {
            size_t n = vlen < size - 1 ? vlen : size - 1;
            memcpy(buf, v, n);
            buf[n] = 0;
            return buf;
        }
    }
    return NULL;
}
