/*
 * event/shm.c — appending to the session's metadata region, from any process.
 */
#include "event/shm.h"
#include "base/records.h"

#include <errno.h>
#include <string.h>

/* The rest of the region from its place at off, told as a record nobody reads. */
static void put_pad(uint8_t *meta, uint64_t capacity, uint64_t off, uint64_t len)
{
    uint8_t *dst = meta + off % capacity;
    ltr_put_u16(dst + 2, 0);
    ltr_put_u32(dst + 4, (uint32_t)len);
    __atomic_store_n((uint16_t *)dst, (uint16_t)LTR_SHM_META_PAD, __ATOMIC_RELEASE);
}

int ltr_shm_meta_append_to(uint8_t *meta, uint64_t capacity, ltr_shm *shm, const uint8_t *record, uint32_t size)
{
    /* Records are padded to 8 bytes so that each kind word is aligned for the
     * atomic store; the size field covers the padding (readers skip by size). */
    uint32_t padded = (size + 7u) & ~7u;
    uint64_t off, start;
    for (;;) {
        /* read first: the recorder never reads past used, so used read after it is not behind it */
        uint64_t read = atomic_load_explicit(&shm->meta_read, memory_order_acquire);
        off = atomic_load_explicit(&shm->meta_used, memory_order_relaxed);
        uint64_t tail = capacity - off % capacity;
        start = padded > tail ? off + tail : off;
        /* full, or words gone wild (a scribbled header): lost, never a wait */
        if (padded > capacity || off < read || off % 8 || start + padded - read > capacity) {
            atomic_fetch_add_explicit(&shm->meta_lost, 1, memory_order_relaxed);
            return -ENOSPC;
        }
        if (atomic_compare_exchange_weak_explicit(&shm->meta_used, &off, start + padded, memory_order_relaxed,
                                                  memory_order_relaxed))
            break;
    }
    if (start != off)
        put_pad(meta, capacity, off, start - off);
    uint8_t *dst = meta + start % capacity;
    memcpy(dst + 2, record + 2, size - 2);
    memset(dst + size, 0, padded - size);
    ltr_put_u32(dst + 4, padded);
    __atomic_store_n((uint16_t *)dst, ltr_get_u16(record), __ATOMIC_RELEASE);
    return 0;
}
