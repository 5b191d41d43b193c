/*
 * tests/agent/test_ownheap.c — agent/ownheap.c, the heap of the agent's own
 * work: blocks inside its range and apart from each other, aligned as
 * asked, a freed block used again for its size, realloc keeping the bytes,
 * and a pointer of the real allocator not taken for one of its own (the
 * hooks route every free by that test).
 */
#include "agent/ownheap.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

static int setup(void **state)
{
    (void)state;
    ownheap_init();
    return own_span ? 0 : -1;
}

/* Sizes across the classes, each block filled with its own byte: a block
 * that overlapped another, or its header, would show another's byte. */
static void test_blocks_apart(void **state)
{
    (void)state;
    enum { N = 200 };
    unsigned char *p[N];
    size_t n[N];
    for (int i = 0; i < N; i++) {
        n[i] = (size_t)(i * 37 % 5000) + 1;
        p[i] = ownheap_alloc(n[i], 16);
        assert_non_null(p[i]);
        assert_true(ownheap_has(p[i]) && ownheap_has(p[i] + n[i] - 1));
        assert_int_equal((uintptr_t)p[i] % 16, 0);
        memset(p[i], i, n[i]);
    }
    for (int i = 0; i < N; i++) {
        for (size_t k = 0; k < n[i]; k++)
            assert_int_equal(p[i][k], (unsigned char)i);
        ownheap_free(p[i]);
    }
}

static void test_freed_block_used_again(void **state)
{
    (void)state;
    void *a = ownheap_alloc(100, 16);
    ownheap_free(a);
    void *b = ownheap_alloc(110, 16); /* the same class (112) */
    assert_ptr_equal(a, b);
    ownheap_free(b);
}

static void test_aligned(void **state)
{
    (void)state;
    for (size_t al = 32; al <= 65536; al *= 2) {
        void *p = ownheap_alloc(24, al);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % al, 0);
        ownheap_free(p);
    }
    assert_null(ownheap_alloc(24, 48)); /* not a power of two: the real one answers */
}

static void test_realloc_keeps_bytes(void **state)
{
    (void)state;
    char *p = ownheap_alloc(10, 16);
    memcpy(p, "0123456789", 10);
    assert_ptr_equal(ownheap_realloc(p, 12, malloc), p); /* fits its class */
    char *q = ownheap_realloc(p, 300000, malloc);
    assert_non_null(q);
    assert_true(ownheap_has(q));
    assert_memory_equal(q, "0123456789", 10);
    memset(q + 10, 'x', 300000 - 10); /* a block that gives its pages back when freed */
    ownheap_free(q);
}

static void test_real_blocks_not_ours(void **state)
{
    (void)state;
    void *p = malloc(100);
    assert_false(ownheap_has(p));
    assert_false(ownheap_has(NULL));
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks_apart),
        cmocka_unit_test(test_freed_block_used_again),
        cmocka_unit_test(test_aligned),
        cmocka_unit_test(test_realloc_keeps_bytes),
        cmocka_unit_test(test_real_blocks_not_ours),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
