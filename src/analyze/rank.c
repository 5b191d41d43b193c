/*
 * analyze/rank.c — the ranked stack lists of a report and the symbolized
 * frames of a stack. Ranking sorts copies of the stack entries; the model is
 * not touched, so every writer can ask for the lists it needs.
 */
#include "analyze/internal.h"

#include <stdlib.h>
#include <string.h>

static int by_pid(const void *x, const void *y)
{
    const an_proc *a = *(an_proc *const *)x, *b = *(an_proc *const *)y;
    /* a pid's images in their order: qsort need not be stable (glibc's is
     * not from 2.37), and the reports tell them apart by it */
    if (a->pid != b->pid)
        return (a->pid > b->pid) - (a->pid < b->pid);
    return (a->gen > b->gen) - (a->gen < b->gen);
}

an_proc *const *an_procs(const ltr_analysis *a, size_t *n)
{
    if (a->model.nprocs > 1)
        qsort(a->model.procs, a->model.nprocs, sizeof *a->model.procs, by_pid);
    *n = a->model.nprocs;
    return a->model.procs;
}

size_t an_images_replaced(const ltr_analysis *a)
{
    size_t n = 0;
    for (size_t i = 0; i < a->model.nprocs; i++)
        n += an_proc_replaced_by_exec(a, a->model.procs[i]);
    return n;
}

void an_totals(const ltr_analysis *a, an_proc *sum)
{
    memset(sum, 0, sizeof *sum);
    for (size_t i = 0; i < a->model.nprocs; i++) {
        const an_proc *p = a->model.procs[i];
        sum->allocs += p->allocs;
        sum->frees += p->frees;
        sum->alloc_bytes += p->alloc_bytes;
        sum->unseen_frees += p->unseen_frees;
        sum->implicit_frees += p->implicit_frees;
        for (int t = 0; t < AN_NTYPES; t++) {
            sum->type[t].count += p->type[t].count;
            sum->type[t].bytes += p->type[t].bytes;
        }
        for (int b = 0; b < AN_HIST_BUCKETS; b++)
            sum->hist[b] += p->hist[b];
    }
    sum->peak_bytes = a->model.peak_bytes;
    sum->peak_ts = a->model.peak_ts;
    sum->peak_set = a->model.peak_set;
}

bool an_ended_by_end(const ltr_analysis *a, const an_proc *p)
{
    /* an open window ends with the trace: every end in it is before */
    return p->ended && (!a->to_set || p->end_ts <= a->win_end);
}

bool an_ended_before(const ltr_analysis *a, const an_proc *p)
{
    return p->ended && p->end_ts < a->win_start;
}

void an_ended_totals(const ltr_analysis *a, an_ended_sum *e)
{
    memset(e, 0, sizeof *e);
    for (size_t i = 0; i < a->model.nprocs; i++) {
        const an_proc *p = a->model.procs[i];
        if (!an_ended_by_end(a, p))
            continue;
        e->processes++;
        e->before += an_ended_before(a, p);
        e->bytes += p->type[AN_AIFO].bytes + p->type[AN_AOFO].bytes;
        e->count += p->type[AN_AIFO].count + p->type[AN_AOFO].count;
    }
}

double an_held_spread(const ltr_analysis *a, const an_stack *s)
{
    uint64_t window = a->win_end - a->win_start;
    if (s->type[AN_AIFO].count < 2 || s->held_last <= s->held_first || !window)
        return 0;
    double spread = (double)(s->held_last - s->held_first) / (double)window;
    return spread > 1 ? 1 : spread;
}

const char *const an_growth_names[3] = {"growing", "at once", "turning over"};

/* Not growing (its held blocks came in under a tenth of the window), and a
 * cache that turns over: it freed at least as many of its own blocks as it
 * holds, of their size (a buffer grown by copying frees smaller ones), all
 * allocated before the middle of the span its held ones came in, and it went
 * on freeing past that middle. A leak that frees most of what it allocates
 * frees blocks allocated among the ones it keeps; one that began late, after
 * its frees ended, freed nothing past the middle; a table built once freed
 * nothing. A python3 dict cache of 2000 entries that turned over in 0.3 s
 * read "at once (14.8 s)" and ranked above a 28 KiB leak. */
an_growth an_stack_growth(const ltr_analysis *a, const an_stack *s)
{
    if (an_held_spread(a, s) >= AN_STEADY_SPREAD)
        return AN_GROWING;
    const an_amount *held = &s->type[AN_AIFO], *freed = &s->freed;
    uint64_t middle = s->held_first + (s->held_last - s->held_first) / 2;
    if (held->count < 2 || freed->count < held->count ||
        (double)held->bytes * (double)freed->count > 2.0 * (double)freed->bytes * (double)held->count ||
        s->freed_born_last > middle || s->freed_last < middle)
        return AN_AT_ONCE;
    return AN_TURNING_OVER;
}

/* Outstanding bytes weighed by how steadily they came (docs/analysis.md,
 * "Ranking"): a one-time allocation counts half its bytes, a leak spread over
 * the whole window all of them, so a steady leak ranks above a one-time
 * allocation of the same size, and a much larger one-time allocation still
 * above a small leak. A cache turning over comes after every other AIFO
 * stack (by_value). */
static double weight(const ltr_analysis *a, const an_stack *s, enum an_type t, uint64_t bytes)
{
    return t == AN_AIFO ? (double)bytes * (0.5 + 0.5 * an_held_spread(a, s)) : (double)bytes;
}

static int by_value(const void *x, const void *y)
{
    const an_entry *a = x, *b = y;
    if (a->type != b->type) /* AIFO before AOFO */
        return a->type == AN_AIFO ? -1 : 1;
    /* a cache turning over holds what it held before: no leak candidate */
    int ta = a->growth == AN_TURNING_OVER, tb = b->growth == AN_TURNING_OVER;
    if (ta != tb)
        return ta - tb;
    if (a->weight != b->weight)
        return a->weight > b->weight ? -1 : 1;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    if (a->proc->pid != b->proc->pid)
        return a->proc->pid < b->proc->pid ? -1 : 1;
    if (a->stack->stack_id != b->stack->stack_id)
        return a->stack->stack_id < b->stack->stack_id ? -1 : 1;
    /* a total order (an exec'd pid's images number their stacks each from
     * 1): a list sorted from the entries in any order is the same list */
    return (a->proc->gen > b->proc->gen) - (a->proc->gen < b->proc->gen);
}

/* The k best entries by by_value are kept in no order: a heap whose root is
 * the worst kept. A trace of cc1plus has tens of thousands of stacks per
 * ranking and a report shows ten: sorting them all was 8 % of `ltr analyze`
 * (perf, bench/real's trace). */
static void sift(an_entry *v, size_t k, size_t i)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= k)
            return;
        if (c + 1 < k && by_value(&v[c + 1], &v[c]) > 0)
            c++;
        if (by_value(&v[c], &v[i]) <= 0)
            return;
        an_entry t = v[i];
        v[i] = v[c];
        v[c] = t;
        i = c;
    }
}

/* e offered to the k best so far in v[0..*n): the first k kept as they
 * come, then made a heap, each later entry taking the root's place if it
 * ranks above it. */
static inline void offer(an_entry *v, size_t *n, size_t k, const an_entry *e)
{
    if (*n < k) {
        v[(*n)++] = *e;
        for (size_t i = *n == k ? k / 2 : 0; i-- > 0;) /* full: made a heap */
            sift(v, k, i);
    } else if (by_value(e, &v[0]) < 0) {
        v[0] = *e;
        sift(v, k, 0);
    }
}

/* The best top of p's entries (all when top is 0) of each ranking r whose
 * v[r] is not NULL, to v[r] (n[r] of them, in no order), in one pass over
 * its stacks: each entry offered as its stack comes, never more than top
 * written. All of them were written first and the best picked after, one
 * ranking at a time: 2 entries a stack, 8.4 MB of fresh memory for each of
 * the three rankings of cc1plus's 75 K stacks, 20 of the 61 samples the
 * main thread took after the model (perf, docs/benchmarks.md, session 30),
 * and its 12 MB of stacks read three times. */
static void best_of(const ltr_analysis *a, const an_proc *p, unsigned top, an_entry *const v[3], size_t n[3])
{
    size_t k = top ? top : SIZE_MAX;
    n[0] = n[1] = n[2] = 0;
    for (size_t i = 0; i < p->nstacks; i++) {
        const an_stack *s = &p->stacks[i];
        if (v[AN_RANK_OUTSTANDING]) {
            static const enum an_type kinds[2] = {AN_AIFO, AN_AOFO};
            for (int t = 0; t < 2; t++)
                if (s->type[kinds[t]].count)
                    offer(v[AN_RANK_OUTSTANDING], &n[AN_RANK_OUTSTANDING], k,
                          &(an_entry){p, s, kinds[t], s->type[kinds[t]].count, s->type[kinds[t]].bytes,
                                      weight(a, s, kinds[t], s->type[kinds[t]].bytes),
                                      kinds[t] == AN_AIFO ? an_stack_growth(a, s) : AN_AT_ONCE});
        }
        if (v[AN_RANK_CALLS] && s->calls.count)
            offer(v[AN_RANK_CALLS], &n[AN_RANK_CALLS], k,
                  &(an_entry){p, s, AN_AIFO, s->calls.count, s->calls.bytes, (double)s->calls.count, AN_GROWING});
        if (v[AN_RANK_TEMPORARY] && s->temporary)
            offer(v[AN_RANK_TEMPORARY], &n[AN_RANK_TEMPORARY], k,
                  &(an_entry){p, s, AN_AIFO, s->temporary, s->calls.count, (double)s->temporary, AN_GROWING});
    }
}

/* Room for the best top of p's entries (all of them when top is 0). */
static size_t room_of(const an_proc *p, unsigned top)
{
    size_t all = 2 * p->nstacks;
    return top && top < all ? top : all;
}

/* One process's list goes to it, not through the list of every process
 * looking for it: the text report and the symbolizing ask for each
 * process's three, and 1 503 processes (a shell running ls) spent 129 M
 * instructions of 1 194 M there. */
an_entry *an_ranked(const ltr_analysis *a, const an_proc *p, an_rank rank, unsigned top, size_t *n)
{
    size_t cap = p ? room_of(p, top) : 0;
    for (size_t i = 0; !p && i < a->model.nprocs; i++)
        cap += room_of(a->model.procs[i], top);
    an_entry *v = malloc((cap ? cap : 1) * sizeof *v);
    *n = 0;
    if (!v)
        return NULL;
    for (size_t i = 0; i < (p ? 1 : a->model.nprocs); i++) { /* each process's best: the best of all are among them */
        an_entry *to[3] = {NULL, NULL, NULL};
        size_t got[3];
        to[rank] = v + *n;
        best_of(a, p ? p : a->model.procs[i], top, to, got);
        *n += got[rank];
    }
    qsort(v, *n, sizeof *v, by_value);
    if (top && *n > top && p)
        *n = top;
    return v;
}

int an_ranked_each(const ltr_analysis *a, const an_proc *p, unsigned top, an_entry *v[3], size_t n[3])
{
    size_t cap = room_of(p, top);
    for (int r = 0; r < 3; r++)
        v[r] = malloc((cap ? cap : 1) * sizeof *v[r]);
    if (!v[0] || !v[1] || !v[2]) {
        for (int r = 0; r < 3; r++) {
            free(v[r]);
            v[r] = NULL;
        }
        return -1;
    }
    best_of(a, p, top, v, n);
    for (int r = 0; r < 3; r++)
        qsort(v[r], n[r], sizeof *v[r], by_value);
    return 0;
}

/* Where one process's lists are in the kept ones. */
typedef struct an_kept_at {
    uint64_t key; /* image << 32 | pid */
    size_t at[3], n[3];
} an_kept_at;

static uint64_t proc_key(const an_proc *p) { return (uint64_t)p->gen << 32 | p->pid; }

void an_ranked_forget(ltr_analysis *a)
{
    for (int r = 0; r < 3; r++) {
        free(a->kept[r]);
        a->kept[r] = NULL;
        a->nkept[r] = 0;
    }
    an_hmap_free(&a->kept_at);
    a->kept_ok = 0;
}

/* The smallest power of two above n: a kept list's room (8 202 processes
 * keep 24 606 lists, each appended). */
static size_t room_above(size_t n)
{
    size_t r = 1;
    while (r <= n)
        r <<= 1;
    return r;
}

void an_ranked_keep(ltr_analysis *a, const an_proc *p, an_rank rank, unsigned top, const an_entry *e, size_t n)
{
    if (a->kept_top != top) {
        an_ranked_forget(a);
        a->kept_top = top;
    }
    size_t had = a->nkept[rank];
    if (had == SIZE_MAX)
        return; /* incomplete already: made again by its writer */
    if (!a->kept_at.esize)
        an_hmap_init(&a->kept_at, sizeof(an_kept_at));
    an_kept_at *k = an_hmap_put(&a->kept_at, proc_key(p), NULL);
    an_entry *v = a->kept[rank];
    if (!k || ((!e || !v || had + n >= room_above(had)) && !(v = e ? realloc(v, room_above(had + n) * sizeof *v) : NULL))) {
        free(a->kept[rank]);
        a->kept[rank] = NULL;
        a->nkept[rank] = SIZE_MAX;
        return;
    }
    memcpy(v + had, e, n * sizeof *v);
    a->kept[rank] = v;
    a->nkept[rank] = had + n;
    k->at[rank] = had;
    k->n[rank] = n;
}

void an_ranked_kept_all(ltr_analysis *a)
{
    a->kept_ok = 0;
    for (int r = 0; r < 3; r++)
        a->kept_ok |= (a->kept[r] && a->nkept[r] != SIZE_MAX) << r;
}

/* A copy of n kept entries from e; NULL without memory. */
static an_entry *kept_copy(const an_entry *e, size_t n)
{
    an_entry *v = malloc((n ? n : 1) * sizeof *v);
    if (v)
        memcpy(v, e, n * sizeof *v);
    return v;
}

an_entry *an_ranked_of(ltr_analysis *a, const an_proc *p, an_rank rank, unsigned top, size_t *n)
{
    const an_kept_at *k = (a->kept_ok & 1 << rank) && a->kept_top == top && a->kept_at.n
                              ? an_hmap_get(&a->kept_at, proc_key(p)) : NULL;
    an_entry *v = k ? kept_copy(a->kept[rank] + k->at[rank], k->n[rank]) : NULL;
    if (!v)
        return an_ranked(a, p, rank, top, n);
    *n = k->n[rank]; /* sorted as an_ranked sorted it */
    return v;
}

an_entry *an_ranked_all(ltr_analysis *a, an_rank rank, unsigned top, size_t *n)
{
    an_entry *v = (a->kept_ok & 1 << rank) && a->kept_top == top ? kept_copy(a->kept[rank], a->nkept[rank]) : NULL;
    if (!v)
        return an_ranked(a, NULL, rank, top, n);
    *n = a->nkept[rank];
    qsort(v, *n, sizeof *v, by_value);
    return v;
}

size_t an_frames(ltr_analysis *a, const an_stack *s, ltr_sym_frame *out, size_t cap)
{
    size_t n, k = 0;
    const uint64_t *addr = an_stack_addresses(a->trace, s->key, s->stack_id, &n);
    for (size_t i = 0; i < n && k < cap; i++) {
        if (a->sym)
            k += ltr_symbolize(a->sym, s->pid, s->first_ts, addr[i], out + k, cap - k);
        else
            out[k++] = (ltr_sym_frame){.address = addr[i]};
    }
    return k;
}
