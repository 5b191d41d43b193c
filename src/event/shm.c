/*
 * event/shm.c — appending to the session's metadata region, from any process.
 */
#include "event/shm.h"
#include "base/records.h"

#include <errno.h>
#include <string.h>

int ltr_shm_meta_append_to(uint8_t *meta, uint64_t capacity, _Atomic uint64_t *used,
                           _Atomic uint64_t *lost, const uint8_t *record, uint32_t size)
{
    /* Records are padded to 8 bytes so that each kind word is aligned for the
     * atomic store; the size field covers the padding (readers skip by size). */
    uint32_t padded = (size + 7u) & ~7u;
    uint64_t off = atomic_fetch_add_explicit(used, padded, memory_order_relaxed);
    if (off > capacity || padded > capacity - off) { /* full, or a used word gone wild */
        atomic_fetch_add_explicit(lost, 1, memory_order_relaxed);
        return -ENOSPC;
    }
    uint8_t *dst = meta + off;
    memcpy(dst + 2, record + 2, size - 2);
    memset(dst + size, 0, padded - size);
    ltr_put_u32(dst + 4, padded);
    __atomic_store_n((uint16_t *)dst, ltr_get_u16(record), __ATOMIC_RELEASE);
    return 0;
}
