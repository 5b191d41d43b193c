/*
 * tests/agent/test_trie.c — agent/trie.c's two ways of hashing a stack: a
 * known stack is looked up by the hash of its whole path, summed term by
 * term from its innermost frame (trie_hash_path), while its nodes were added
 * under the hashes of its prefixes, chained from its outermost frame
 * (trie_hash). They must agree to the bit, for every prefix: a stack whose
 * two hashes differed would be added again at each of its events, a new id
 * each time, instead of being found.
 */
#include "agent/trie.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdlib.h>

static void random_path(void **f, int n, uint64_t seed)
{
    for (int i = 0; i < n; i++) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        f[i] = (void *)(uintptr_t)(0x555555554000ull + seed % (1u << 24));
    }
}

static trie_hashes h;

/* The path's hash is its full prefix's, and each prefix of k outermost
 * frames, hashed as a path of its own, is that prefix's. */
static void test_path_hash_is_the_prefix_chains(void **state)
{
    (void)state;
    static const int lengths[] = {1, 2, 3, 12, 17, 64, TRIE_MAX_PATH};
    void *f[TRIE_MAX_PATH];
    for (size_t l = 0; l < sizeof lengths / sizeof *lengths; l++) {
        int n = lengths[l];
        random_path(f, n, 0x9e3779b97f4a7c15ull + (uint64_t)n);
        trie_hash(f, n, &h);
        for (int k = 1; k <= n; k++) {
            uint64_t h1;
            uint32_t h2;
            trie_hash_path(f + (n - k), k, &h1, &h2);
            assert_int_equal(h1, h.h1[k]);
            assert_int_equal(h2, h.h2[k]);
        }
    }
}

/* A stack added by its prefixes is found by its path's hash; one that
 * differs in a single frame, or has a frame fewer, is not. */
static void test_added_stack_found_by_its_path(void **state)
{
    (void)state;
    void *f[17];
    random_path(f, 17, 42);
    trie_hash(f, 17, &h);
    stack_ref added = trie_add(1, 17, h.h1, h.h2, f, 0);
    assert_int_not_equal(added.id, 0);
    uint64_t h1;
    uint32_t h2;
    trie_hash_path(f, 17, &h1, &h2);
    assert_int_equal(trie_find(trie_current(), h1, h2).id, added.id);
    f[3] = (char *)f[3] + 1;
    trie_hash_path(f, 17, &h1, &h2);
    assert_int_equal(trie_find(trie_current(), h1, h2).id, 0);
    f[3] = (char *)f[3] - 1;
    trie_hash_path(f + 1, 16, &h1, &h2); /* its parent: a node, not this stack */
    stack_ref parent = trie_find(trie_current(), h1, h2);
    assert_int_not_equal(parent.id, 0);
    assert_int_not_equal(parent.id, added.id);
    assert_int_equal(trie_nodes[added.id].parent, parent.id);
}

int main(void)
{
    if (!trie_init())
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_hash_is_the_prefix_chains),
        cmocka_unit_test(test_added_stack_found_by_its_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
