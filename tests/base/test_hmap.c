/*
 * tests/base/test_hmap.c — base/hmap.c's an_hmap_keep, which prunes a map
 * in place: exactly the entries kept remain, each found with its value
 * (runs that wrap around the table's end included, and the entry of key
 * 0), and what is left probes as short as a map filled afresh: the trace
 * writer prunes its table of addresses with it (format/refwrite.c), where
 * a copy into a fresh map was quadratic. And its growth: every entry is
 * found after it, and a mapped table's growth holds no more memory at its
 * peak than the new table (the analysis's table of live blocks on a leak).
 * And the map keyed by addresses (an_hmap_init_addresses): a page's blocks
 * get consecutive home slots, and every entry is found through growth and
 * removals, where whole pages of 32-byte blocks make the longest runs.
 */
#include "base/hmap.h"
#include "util/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

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

/* Blocks of 32 bytes, as the analysis's live table holds: a growth from 32
 * to 64 MiB keeps every entry, and the memory resident at its peak grows by
 * less than the new table's size (the old one goes behind the scan: 34.1
 * MiB more here). Freed after the new one was filled, it grew by all of
 * it: 64.1 MiB. */
static void test_growth_keeps_all_and_releases_behind(void **state)
{
    (void)state;
    typedef struct wide {
        uint64_t key, a, b, c;
    } wide;
    an_hmap m;
    an_hmap_init(&m, sizeof(wide));
    const size_t half = (size_t)1 << 19; /* at cap 2^20 (32 MiB), the next put grows it */
    for (uint64_t i = 0; i < half; i++) {
        wide *e = an_hmap_put(&m, address(i), NULL);
        assert_non_null(e);
        e->a = i;
    }
    assert_int_equal(m.cap, half * 2);
    int peak_known = tu_peak_reset();
    long before = tu_status_kb("VmRSS");
    wide *e = an_hmap_put(&m, address(half), NULL);
    assert_non_null(e);
    e->a = half;
    long peak = tu_status_kb("VmHWM");
    assert_int_equal(m.cap, half * 4);
    for (uint64_t i = 0; i <= half; i++) {
        const wide *w = an_hmap_get(&m, address(i));
        if (!w || w->a != i)
            fail_msg("entry %llu lost in the growth", (unsigned long long)i);
    }
    size_t pos = 0, found = 0;
    while (an_hmap_next(&m, &pos))
        found++;
    assert_int_equal(found, half + 1);
    long new_kb = (long)(m.cap * m.esize / 1024);
    if (peak_known && before > 0 && peak > 0 && peak - before >= new_kb * 3 / 4)
        fail_msg("the growth's peak added %ld KiB to %ld, for a new table of %ld", peak - before, before, new_kb);
    an_hmap_free(&m);
}

/* A heap's blocks: pages of 16-byte blocks side by side (jemalloc's
 * smallest class), of 32-byte ones (glibc's), then of 112-byte ones, in
 * regions far away whose pages alias each other by their low bits. */
static uint64_t heap_block(uint64_t i)
{
    if (i < 40000)
        return 0x555500000000ull + i * 16;
    if (i < 80000)
        return 0x555600000000ull + (i - 40000) * 32;
    return 0x7f0000000000ull + (i - 80000) * 112;
}

static void test_addresses_near_and_found(void **state)
{
    (void)state;
    an_hmap m;
    an_hmap_init_addresses(&m, sizeof(entry));
    const uint64_t n = 160000;
    for (uint64_t i = 0; i < n; i++) {
        entry *e = an_hmap_put(&m, heap_block(i), NULL);
        assert_non_null(e);
        e->value = i;
    }
    /* a page's granules are homes in order, two apart; the next page starts elsewhere */
    uint64_t page = 0x555500001000ull;
    size_t h = an_hmap_home(&m, page);
    for (uint64_t g = 1; g < 256; g++)
        assert_int_equal(an_hmap_home(&m, page + g * 16), (h + 2 * g) & (m.cap - 1));
    assert_int_not_equal(an_hmap_home(&m, page + 4096), (h + 512) & (m.cap - 1));
    /* pages of 16-byte blocks fill every other slot: runs stay short (one
     * granule a slot made runs of whole pages, session 3's 2.5 times slower
     * deletes) */
    size_t longest = longest_probe(&m);
    if (longest > 64)
        fail_msg("a run of %zu slots", longest);
    for (uint64_t i = 0; i < n; i += 3) /* every third block freed: backward shifts across pages */
        assert_true(an_hmap_del(&m, heap_block(i)));
    for (uint64_t i = 0; i < n; i++) {
        const entry *e = an_hmap_get(&m, heap_block(i));
        if (i % 3 == 0 ? e != NULL : !e || e->value != i)
            fail_msg("block %llu %s", (unsigned long long)i, i % 3 == 0 ? "still there" : "lost");
    }
    size_t pos = 0, found = 0;
    while (an_hmap_next(&m, &pos))
        found++;
    assert_int_equal(found, n - (n + 2) / 3);
    an_hmap_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keep_exactly_those_kept),
        cmocka_unit_test(test_keep_leaves_short_probes),
        cmocka_unit_test(test_growth_keeps_all_and_releases_behind),
        cmocka_unit_test(test_addresses_near_and_found),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
