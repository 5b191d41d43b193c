/*
 * bench/analyze/trend_noise.c — how often --trend calls a churning stack a
 * leak (src/analyze/snapshots.c, docs/analysis.md "Trend"): series of
 * independent random values (0 to 8 MB, as a stack that holds whatever its
 * bursts left), at 8, 10, 12, then 6 and 7 snapshots a second apart, counted by
 * verdict, and how many of the leaks only the after-fill rule made (and of
 * them, a fill that ran into the later half: its own change point). A
 * measurement, not a test: the rules' false leaks are a rate.
 *   usage: trend_noise [TRIALS]   (default 20000; seeded, the same each run)
 */
#include "analyze/internal.h"

#include <stdio.h>
#include <stdlib.h>

/* One random series through an_trend_run: its verdict and after_fill. */
static an_trend one_series(int n)
{
    ltr_analysis *a = calloc(1, sizeof *a);
    a->snaps = calloc((size_t)n, sizeof *a->snaps);
    for (int i = 0; i < n; i++) {
        an_snapshot s = {.pid = 7, .ts = (uint64_t)i * 1000000000ull, .complete = 1, .nstacks = 1};
        s.stacks = calloc(1, sizeof *s.stacks);
        s.stacks[0] = (an_snap_stack){.stack = 1, .bytes = (uint64_t)(rand() % 8000000), .blocks = 1};
        a->snaps[a->nsnaps++] = s;
    }
    an_trend_run(a);
    an_trend t = a->trend[0];
    an_snapshots_free(a);
    free(a);
    return t;
}

int main(int argc, char **argv)
{
    int trials = argc > 1 ? atoi(argv[1]) : 20000;
    srand(7);
    /* 6 and 7 last: 8, 10 and 12 draw the series they drew before */
    static const int sizes[] = {8, 10, 12, 6, 7};
    for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
        int n = sizes[z];
        int leak = 0, fill = 0, late = 0;
        for (int k = 0; k < trials; k++) {
            an_trend t = one_series(n);
            leak += t.verdict == AN_LEAK;
            fill += t.verdict == AN_LEAK && t.after_fill;
            late += t.verdict == AN_LEAK && t.after_fill && t.since != (size_t)n / 2;
        }
        printf("%d snapshots: %d of %d random series a leak, %d of them by the after-fill rule alone (%d by a fill "
               "into the later half)\n", n, leak, trials, fill, late);
    }
    return 0;
}
