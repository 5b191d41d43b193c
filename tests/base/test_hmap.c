/*
 * tests/base/test_hmap.c — base/hmap.c's an_hmap_keep, which prunes a map
 * in place: exactly the entries kept remain, each found with its value
 * (runs that wrap around the table's end included, and the entry of key
 * 0), and what is left probes as short as a map filled afresh: the trace
 * writer prunes its table of addresses with it (format/refwrite.c), where
 * a copy into a fresh map was quadratic.
 */
#include "base/hmap.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>

typedef struct entry {
    uint64_t key;
    uint64_t value;
} entry;

/* One entry in three kept: two removed in a row, where a pruning that
 * stepped past a slot after a removal would miss the entry pulled into it. */
static int kept(uint64_t value) { return value % 3 == 2; }
static int keep_third(const void *e, void *ctx)
{
    (void)ctx;
    return kept(((const entry *)e)->value);
}

/* The longest distance of an entry from its home slot. */
static size_t longest_probe(const an_hmap *m)
{
    size_t most = 0;
    for (size_t i = 0; i < m->cap; i++) {
        uint64_t k = an_hmap_key(m->slots + i * m->esize);
        size_t d = k ? (i - an_hmap_home(m, k)) & (m->cap - 1) : 0;
        most = d > most ? d : most;
    }
    return most;
}

static void fill(an_hmap *m, uint64_t (*key_of)(uint64_t), size_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        entry *e = an_hmap_put(m, key_of(i), NULL);
        assert_non_null(e);
        e->value = i;
    }
}

static void check_kept(const an_hmap *m, uint64_t (*key_of)(uint64_t), size_t n)
{
    size_t found = 0, pos = 0, want = 0;
    for (uint64_t i = 0; i < n; i++) {
        const entry *e = an_hmap_get(m, key_of(i));
        want += kept(i);
        if (kept(i)) {
            if (!e || e->value != i)
                fail_msg("entry %llu lost", (unsigned long long)i);
        } else if (e) {
            fail_msg("entry %llu kept", (unsigned long long)i);
        }
    }
    while (an_hmap_next(m, &pos))
        found++;
    assert_int_equal(found, want);
    assert_int_equal(m->n, want);
}

/* Addresses of blocks spread as a heap's are (a hash of the index): runs of
 * several entries, as a map at half load has. */
static uint64_t address(uint64_t i)
{
    uint64_t z = (i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    return ((z ^ (z >> 27)) & 0xffffffffff0ull) | 0x10;
}

/* Keys whose home is the last slot of a map of 64 slots (hmap.h's hash):
 * 20 of them make one run that wraps around to the table's start. */
static uint64_t last_home[20];
static uint64_t at_end(uint64_t i) { return last_home[i]; }
static void find_last_homes(void)
{
    an_hmap probe = {.cap = 64, .shift = 58};
    size_t n = 0;
    for (uint64_t k = 1; n < 20; k++)
        if (an_hmap_home(&probe, k) == 63)
            last_home[n++] = k;
}

static void test_keep_exactly_those_kept(void **state)
{
    (void)state;
    an_hmap m;
    an_hmap_init(&m, sizeof(entry));
    const size_t n = 600000;
    fill(&m, address, n);
    entry *z = an_hmap_put(&m, 0, NULL); /* the entry of key 0: removed */
    z->value = 3;
    an_hmap_keep(&m, keep_third, NULL);
    assert_null(an_hmap_get(&m, 0));
    check_kept(&m, address, n);
    an_hmap_free(&m);

    /* one run from the table's last slot on, wrapped around to its start */
    find_last_homes();
    an_hmap_init(&m, sizeof(entry));
    fill(&m, at_end, 20);
    assert_int_equal(m.cap, 64);
    assert_int_equal(an_hmap_key(m.slots + 63 * m.esize), last_home[0]);
    assert_int_equal(an_hmap_key(m.slots + 18 * m.esize), last_home[19]);
    an_hmap_keep(&m, keep_third, NULL);
    check_kept(&m, at_end, 20);
    an_hmap_free(&m);
}

/* What is left probes no longer than it did before: pruning neither leaves
 * holes in a run (a key not found) nor crowds it. */
static void test_keep_leaves_short_probes(void **state)
{
    (void)state;
    an_hmap m;
    an_hmap_init(&m, sizeof(entry));
    fill(&m, address, 500000);
    size_t before = longest_probe(&m);
    an_hmap_keep(&m, keep_third, NULL);
    size_t after = longest_probe(&m);
    if (after > before)
        fail_msg("the longest probe went from %zu to %zu", before, after);
    an_hmap_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keep_exactly_those_kept),
        cmocka_unit_test(test_keep_leaves_short_probes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
