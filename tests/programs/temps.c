/*
 * tests/programs/temps.c — a traced program whose temporary allocations are
 * known, counted as heaptrack counts them (docs/analysis.md): a free whose
 * heap event before it (a realloc being a free, then an allocation)
 * allocated a block of the freed one's size and stack. Each site is a
 * function of its own, the innermost frame of its stack, for the test to
 * find (test_analyze.c's test_temporaries_as_heaptrack):
 *   temp_first  1000 of 1000: each grown at once by realloc (its free half)
 *   temp_grow      0 of 1000: the grown blocks, freed at the end after others
 *   temp_churn   500 of 500:  malloc then free
 *   chain_a, chain_b, chain_c  1 of 1 each: malloc, realloc, realloc, free
 *   same_kind      1 of 2:    two blocks of one size and stack, then the
 *                             first freed (not the block allocated last)
 */
#include <stdlib.h>

#define GROWN 1000

static void *keep[GROWN];

__attribute__((noinline)) static void *temp_first(void) { return malloc(16); }
__attribute__((noinline)) static void *temp_grow(void *p) { return realloc(p, 100000); }
__attribute__((noinline)) static void *temp_churn(void) { return malloc(32); }
__attribute__((noinline)) static void *chain_a(void) { return malloc(64); }
__attribute__((noinline)) static void *chain_b(void *p) { return realloc(p, 128); }
__attribute__((noinline)) static void *chain_c(void *p) { return realloc(p, 4096); }
__attribute__((noinline)) static void *same_kind(void) { return malloc(24); }

int main(void)
{
    for (int i = 0; i < GROWN; i++)
        keep[i] = temp_grow(temp_first());
    for (int i = 0; i < 500; i++)
        free(temp_churn());
    free(chain_c(chain_b(chain_a())));
    void *two[2];
    volatile int n = 2; /* one call site, the loop not unrolled: one stack */
    for (int i = 0; i < n; i++)
        two[i] = same_kind();
    free(two[0]);
    free(two[1]);
    for (int i = 0; i < GROWN; i++)
        free(keep[i]);
    return 0;
}
