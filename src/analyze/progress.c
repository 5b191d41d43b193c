/*
 * analyze/progress.c — a one-line progress bar on stderr for long analyses:
 * only when stderr is a terminal, first drawn after a second, redrawn at most
 * five times a second, and erased at the end so the report starts clean.
 */
#include "analyze/internal.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void an_progress_begin(an_progress *p, int wanted, uint64_t total)
{
    p->enabled = wanted && total > 0 && isatty(STDERR_FILENO);
    p->shown = 0;
    p->total = total;
    p->started_ns = now_ns();
    p->next_ns = p->started_ns + 1000000000ull;
    p->label = "analyzing";
}

void an_progress_update(an_progress *p, uint64_t done)
{
    if (!p->enabled)
        return;
    uint64_t t = now_ns();
    if (t < p->next_ns)
        return;
    p->next_ns = t + 200000000ull;
    p->shown = 1;
    unsigned pct = done >= p->total ? 100 : (unsigned)(done * 100 / p->total);
    char bar[41];
    for (unsigned i = 0; i < 40; i++)
        bar[i] = i < pct * 40 / 100 ? '#' : '.';
    bar[40] = 0;
    fprintf(stderr, "\r%s [%s] %3u%% %.1f s", p->label, bar, pct, (double)(t - p->started_ns) / 1e9);
    fflush(stderr);
}

void an_progress_end(an_progress *p)
{
    if (p->shown)
        fprintf(stderr, "\r%79s\r", "");
}
