/*
 * tests/agent/test_trie.c — agent/trie.c's hashes of a stack's prefixes. A
 * known stack is looked up by the hashes of its whole path, from sums the
 * unwinder makes term by term from the innermost frame; a new stack's
 * prefixes are hashed from those sums less its innermost frames'. Both must
 * be, to the bit, what the definition gives (a polynomial chained from the
 * outermost frame, made here apart): a stack whose hashes differed from
 * those its nodes were added under would be searched for and added again
 * at each of its events, instead of being found.
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

/* The definition: prefix k's sums are prefix k - 1's times the base plus
 * the k-th frame from the outermost, mixed. */
static void chained(void *const *f, int n, int k, uint64_t *h1, uint32_t *h2)
{
    uint64_t s[2] = {0, 0};
    for (int j = 1; j <= k; j++) {
        uint64_t m = trie_mix(f[n - j]);
        s[0] = s[0] * trie_pow[1][0] + m;
        s[1] = s[1] * trie_pow[1][1] + m;
    }
    trie_hash_sums(s, h1, h2);
}

static trie_hashes h;

static void start(void *const *f, int n)
{
    uint64_t sums[2];
    trie_path_sums(f, n, sums);
    trie_hashes_start(&h, f, n, sums);
}

/* Every prefix, asked in any order, and the whole path; and so once the
 * prefixes nearest the path are hashed ahead (trie_hash_near), with paths
 * shorter than TRIE_NEAR + 1 frames among them. */
static void test_prefix_hashes_are_the_chains(void **state)
{
    (void)state;
    static const int lengths[] = {1, 2, 3, 5, 12, 17, 64, TRIE_MAX_PATH};
    void *f[TRIE_MAX_PATH];
    for (size_t l = 0; l < 2 * sizeof lengths / sizeof *lengths; l++) {
        int n = lengths[l % (sizeof lengths / sizeof *lengths)];
        random_path(f, n, 0x9e3779b97f4a7c15ull + (uint64_t)n);
        start(f, n);
        if (l >= sizeof lengths / sizeof *lengths)
            trie_hash_near(&h, NULL);
        for (int step = 0; step < n; step++) {
            int k = n - (step * 7919) % n; /* not in order: sums made as far as asked */
            uint64_t a1, b1;
            uint32_t a2, b2;
            chained(f, n, k, &a1, &a2);
            trie_prefix_hash(&h, k, &b1, &b2);
            assert_int_equal(a1, b1);
            assert_int_equal(a2, b2);
        }
    }
}

/* A stack added by its prefixes is found by its path's sums; one that
 * differs in a single frame is not; its parent is the prefix a frame
 * shorter. */
static void test_added_stack_found_by_its_path(void **state)
{
    (void)state;
    void *f[17];
    random_path(f, 17, 42);
    start(f, 17);
    stack_ref added = trie_add(1, &h, 0);
    assert_int_not_equal(added.id, 0);
    uint64_t sums[2], h1;
    uint32_t h2;
    trie_path_sums(f, 17, sums);
    trie_hash_sums(sums, &h1, &h2);
    assert_int_equal(trie_find(trie_current(), h1, h2).id, added.id);
    f[3] = (char *)f[3] + 1;
    trie_path_sums(f, 17, sums);
    trie_hash_sums(sums, &h1, &h2);
    assert_int_equal(trie_find(trie_current(), h1, h2).id, 0);
    f[3] = (char *)f[3] - 1;
    chained(f, 17, 16, &h1, &h2);
    stack_ref parent = trie_find(trie_current(), h1, h2);
    assert_int_not_equal(parent.id, 0);
    assert_int_equal(trie_nodes[added.id].parent, parent.id);
}

int main(void)
{
    if (!trie_init())
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefix_hashes_are_the_chains),
        cmocka_unit_test(test_added_stack_found_by_its_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
