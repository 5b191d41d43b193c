/*
 * tests/event/test_shm_meta.c — appending to the session's metadata region,
 * a ring (event/shm.h): records go on while the recorder reads behind them,
 * one that would reach past the region's end leaves a pad there and goes at
 * the start, a region holding as much unread as it can refuses (counted
 * lost), and used or read words scribbled out of order refuse rather than
 * write anywhere.
 */
#include "event/shm.h"
#include "base/records.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CAP 256

static uint8_t region[CAP];
static ltr_shm shm;

/* A record of kind 3 and `size` bytes in all (header included). */
static int append(uint32_t size)
{
    uint8_t rec[512] = {3, 0, 0, 0};
    memcpy(rec + 4, &size, 4);
    return ltr_shm_meta_append_to(region, CAP, &shm, rec, size);
}

static uint16_t kind_at(size_t at) { return (uint16_t)(region[at] | region[at + 1] << 8); }
static uint32_t size_at(size_t at) { uint32_t s; memcpy(&s, region + at + 4, 4); return s; }

static void test_ring(void **state)
{
    (void)state;
    memset(region, 0, sizeof region);
    memset(&shm, 0, sizeof shm);
    assert_int_equal(append(100), 0); /* 0..104 */
    assert_int_equal(append(100), 0); /* 104..208 */
    assert_int_equal(size_at(104), 104);
    assert_int_equal(append(60), -ENOSPC); /* would wrap onto the unread first */
    assert_int_equal(atomic_load(&shm.meta_lost), 1);
    atomic_store(&shm.meta_read, 104); /* the recorder read the first */
    memset(region, 0, 104);
    assert_int_equal(append(60), 0); /* a pad 208..256, the record at 0 */
    assert_int_equal(kind_at(208), LTR_SHM_META_PAD);
    assert_int_equal(size_at(208), CAP - 208);
    assert_int_equal(kind_at(0), 3);
    assert_int_equal(size_at(0), 64);
    assert_int_equal(atomic_load(&shm.meta_used), CAP + 64);
    assert_int_equal(append(48), -ENOSPC); /* 64 + 48 > 104: onto the unread second */
    assert_int_equal(append(40), 0);       /* 64..104 */
    assert_int_equal(append(8), -ENOSPC);
    assert_int_equal(atomic_load(&shm.meta_lost), 3);
}

static void test_scribbled_words(void **state)
{
    (void)state;
    memset(region, 0, sizeof region);
    memset(&shm, 0, sizeof shm);
    atomic_store(&shm.meta_used, 16);
    atomic_store(&shm.meta_read, 1000); /* read past used */
    assert_int_equal(append(8), -ENOSPC);
    atomic_store(&shm.meta_read, 0);
    atomic_store(&shm.meta_used, 1u << 20); /* far past what was read */
    assert_int_equal(append(8), -ENOSPC);
    assert_int_equal(append(CAP + 8), -ENOSPC); /* larger than the region */
    atomic_store(&shm.meta_used, 252); /* unaligned: a pad there would reach past the region */
    assert_int_equal(append(16), -ENOSPC);
    for (size_t i = 0; i < CAP; i++)
        assert_int_equal(region[i], 0); /* nothing written anywhere */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring),
        cmocka_unit_test(test_scribbled_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
