/*
 * analyze/ties.c — the order search of ties.h. The steps of k threads at an
 * address are a lattice of positions (how many of each thread's were
 * taken) times whether a block is there; a step that does not alternate
 * costs two, a block never seen there at first one. The fewest from each state to the end is filled in from the
 * last positions back (a step only moves forward), then the order is read
 * from the start, taking at each step the earliest-come step that keeps to
 * the fewest. Two or three threads with a few steps each make a few dozen
 * states; threads of one step each count as two lines, their frees and
 * their allocations (group_single). A lattice past AN_TIES_STATES (40
 * threads, or long runs at one address) is walked greedily instead, the
 * thread with the most steps left first (walk_greedy), which sees no
 * further than a step, in time n log k.
 */
#include "analyze/ties.h"

#include <stdlib.h>

/* What a step does from a state: the state it leaves (*live) and its cost:
 * an allocation over a block or a free of none, 2 (see an_ties_order). */
static unsigned step_cost(const an_tie_step *s, int *live)
{
    unsigned cost = s->alloc ? (unsigned)*live : (unsigned)!*live;
    *live = (int)s->alloc;
    return 2 * cost;
}

typedef struct lattice {
    uint32_t k;      /* lines: threads, those of one step grouped (group_single) */
    size_t *first;   /* thread t's steps are ord[first[t] .. first[t + 1]) */
    uint32_t *ord;   /* step indexes by thread, each thread's in its order */
    uint32_t *tof;   /* a step's thread (its t) */
    uint64_t *heads; /* the greedy walk's (walk_greedy): room for 2 k */
    size_t *stride;  /* of a thread's position in a state's number */
    size_t *pos;     /* the walk's positions */
    size_t states;   /* positions' combinations; 0: too many to search */
} lattice;

static void lattice_free(lattice *l)
{
    free(l->first);
    free(l->ord);
    free(l->tof);
    free(l->heads);
    free(l->stride);
    free(l->pos);
}

static int key_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The steps' indexes by thread, each thread's in its order (keys: thread
 * << 32 | index, sorted): threads are any numbers, their count unknown,
 * so a sort, not a count per thread (a hostile trace's 32 000 threads at
 * one address). Insertion for the few steps of most ties. */
static void sort_keys(uint64_t *key, size_t n)
{
    if (n > 16) {
        qsort(key, n, sizeof *key, key_cmp);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        uint64_t x = key[i];
        size_t j = i;
        for (; j && key[j - 1] > x; j--)
            key[j] = key[j - 1];
        key[j] = x;
    }
}

/* Keys sorted by thread made keys of the lattice's lines: a thread of
 * more than one step is a line of its own (numbered from 2, in the order
 * of the threads), and the threads of one step are two lines, their frees
 * (0) and their allocations (1), each in the order met. Those of one step
 * and one kind may come in any order, so only how many were taken
 * matters, and the earliest-come goes first (what the walk would pick of
 * them): 15 threads with a free each make 16 states, not 32 768. */
static void group_single(uint64_t *key, const an_tie_step *steps, size_t n)
{
    uint64_t line = 2;
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && key[j] >> 32 == key[i] >> 32;)
            j++;
        uint64_t to = j - i == 1 ? steps[(uint32_t)key[i]].alloc : line++;
        for (size_t x = i; x < j; x++)
            key[x] = to << 32 | (uint32_t)key[x];
    }
    sort_keys(key, n);
}

/* The steps by line (group_single), each line's in its order, and the
 * lattice's size; -1 without memory. */
static int lattice_make(lattice *l, const an_tie_step *steps, size_t n)
{
    uint64_t *key = malloc(n * sizeof *key);
    l->ord = malloc(n * sizeof *l->ord);
    l->tof = malloc(n * sizeof *l->tof);
    if (!key || !l->ord || !l->tof) {
        free(key);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        key[i] = (uint64_t)steps[i].thread << 32 | i;
    sort_keys(key, n);
    group_single(key, steps, n);
    l->k = 0;
    for (size_t i = 0; i < n; i++)
        l->k += !i || key[i] >> 32 != key[i - 1] >> 32;
    l->first = calloc(l->k + 1, sizeof *l->first);
    l->heads = malloc(2 * (size_t)l->k * sizeof *l->heads);
    l->stride = calloc(l->k, sizeof *l->stride);
    l->pos = calloc(l->k, sizeof *l->pos);
    if (!l->first || !l->heads || !l->stride || !l->pos) {
        free(key);
        return -1;
    }
    for (size_t i = 0, t = 0; i < n; i++) {
        if (i && key[i] >> 32 != key[i - 1] >> 32)
            l->first[++t] = i;
        l->ord[i] = (uint32_t)key[i];
        l->tof[l->ord[i]] = (uint32_t)t;
    }
    l->first[l->k] = n;
    free(key);
    l->states = 1;
    for (uint32_t t = 0; t < l->k; t++) {
        size_t dim = l->first[t + 1] - l->first[t] + 1;
        l->stride[t] = l->states;
        if (l->states > AN_TIES_STATES / 2 / dim) {
            l->states = 0;
            break;
        }
        l->states *= dim;
    }
    return 0;
}

/* The next step of thread t at the walk's positions, or NULL when it has none. */
static const an_tie_step *next_of(const lattice *l, const an_tie_step *steps, uint32_t t)
{
    size_t at = l->first[t] + l->pos[t];
    return at < l->first[t + 1] ? &steps[l->ord[at]] : NULL;
}

/* The cost of thread t's next step st from state s (live: a block there)
 * and of the fewest from where it leads. */
static uint32_t cost_via(const lattice *l, const an_tie_step *st, const uint32_t *cost, size_t s, uint32_t t, int live)
{
    int after = live;
    uint32_t c = step_cost(st, &after);
    return c + cost[(s + l->stride[t]) * 2 + (size_t)after];
}

/* cost[s * 2 + live]: the fewest steps that do not alternate from state s to the end. */
static void fill_costs(lattice *l, const an_tie_step *steps, uint32_t *cost)
{
    for (size_t s = l->states; s-- > 0;) {
        for (uint32_t t = 0; t < l->k; t++) /* state s's positions */
            l->pos[t] = s / l->stride[t] % (l->first[t + 1] - l->first[t] + 1);
        for (int live = 0; live < 2; live++) {
            uint32_t best = UINT32_MAX;
            for (uint32_t t = 0; t < l->k; t++) {
                const an_tie_step *st = next_of(l, steps, t);
                if (!st)
                    continue;
                uint32_t c = cost_via(l, st, cost, s, t, live);
                best = c < best ? c : best;
            }
            cost[s * 2 + (size_t)live] = best == UINT32_MAX ? 0 : best; /* the end: nothing more */
        }
    }
    for (uint32_t t = 0; t < l->k; t++)
        l->pos[t] = 0;
}

/* The greedy walk's heads (a thread's next step), by kind: a min-heap of
 * keys, the most steps left first (their thread's), then the earliest-come
 * (its index), so that the step is taken in log k, not by looking at
 * every thread at each step. */
typedef struct heads {
    uint64_t *v;
    size_t n;
} heads;

static void heads_push(heads *h, uint64_t x)
{
    size_t i = h->n++;
    for (; i && h->v[(i - 1) / 2] > x; i = (i - 1) / 2)
        h->v[i] = h->v[(i - 1) / 2];
    h->v[i] = x;
}

static uint64_t heads_pop(heads *h)
{
    uint64_t top = h->v[0], x = h->v[--h->n];
    size_t i = 0;
    for (size_t c; (c = 2 * i + 1) < h->n; i = c) {
        c += c + 1 < h->n && h->v[c + 1] < h->v[c];
        if (h->v[c] >= x)
            break;
        h->v[i] = h->v[c];
    }
    if (h->n)
        h->v[i] = x;
    return top;
}

/* Thread t's next step into its kind's heads, if it has one. */
static void heads_next(const lattice *l, const an_tie_step *steps, heads *h, uint32_t t)
{
    size_t at = l->first[t] + l->pos[t];
    if (at < l->first[t + 1])
        heads_push(&h[steps[l->ord[at]].alloc], (UINT32_MAX - (uint64_t)(l->first[t + 1] - at)) << 32 | l->ord[at]);
}

/* Past the search: at each step a next step that alternates if any, of
 * the thread with the most steps left, the earliest-come of those (the
 * longest chain first, as in scheduling chains of tasks: one with many
 * steps left needs the other threads' steps between its own, and taken
 * late it runs out of them; the earliest-come alone, threads passing
 * blocks through 64 slots in a LIFO free list, 8 threads, 420 events at
 * each time, left 1 262 frees finding no block in 5 runs, this 1); its
 * cost (ties.h). */
static long walk_greedy(lattice *l, const an_tie_step *steps, size_t n, int live, uint32_t *out, size_t *work)
{
    heads h[2] = {{l->heads, 0}, {l->heads + l->k, 0}}; /* frees, allocations */
    for (uint32_t t = 0; t < l->k; t++)
        heads_next(l, steps, h, t);
    long total = 0;
    for (size_t i = 0; i < n; i++) {
        heads *from = h[!live].n ? &h[!live] : &h[live]; /* on a block a free alternates, else an allocation */
        uint32_t at = (uint32_t)heads_pop(from), t = l->tof[at];
        total += step_cost(&steps[at], &live);
        out[i] = at;
        l->pos[t]++;
        heads_next(l, steps, h, t);
    }
    if (work)
        *work += n + l->k;
    return total;
}

/* The search's walk (cost from fill_costs): its cost (ties.h). */
static long walk_exact(lattice *l, const an_tie_step *steps, size_t n, int live, uint32_t *out,
                       const uint32_t *cost, size_t *work)
{
    long total = 0;
    /* An address that holds no block may hold one the trace never saw
     * (allocated before it began), whose free comes first: 1, less than
     * a step that does not alternate, which a block from before cannot
     * explain anywhere else. */
    if (!live && 1 + cost[1] < cost[0]) {
        live = 1;
        total = 1;
    }
    size_t s = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t pick = UINT32_MAX, pick_cost = UINT32_MAX;
        for (uint32_t t = 0; t < l->k; t++) {
            const an_tie_step *st = next_of(l, steps, t);
            if (!st)
                continue;
            uint32_t c = cost_via(l, st, cost, s, t, live);
            if (c < pick_cost || (c == pick_cost && l->ord[l->first[t] + l->pos[t]] < l->ord[l->first[pick] + l->pos[pick]]))
                pick = t, pick_cost = c;
        }
        uint32_t at = l->ord[l->first[pick] + l->pos[pick]];
        total += step_cost(&steps[at], &live);
        out[i] = at;
        l->pos[pick]++;
        s += l->stride[pick];
    }
    if (work)
        *work += l->states * l->k + n * l->k;
    return total;
}

long an_ties_order(const an_tie_step *steps, size_t n, int live, uint32_t *out, size_t *work)
{
    lattice l = {0};
    uint32_t *cost = NULL;
    if (lattice_make(&l, steps, n) != 0 || (l.states && !(cost = malloc(l.states * 2 * sizeof *cost)))) {
        lattice_free(&l);
        return -1;
    }
    long total;
    if (cost) {
        fill_costs(&l, steps, cost);
        total = walk_exact(&l, steps, n, live, out, cost, work);
    } else
        total = walk_greedy(&l, steps, n, live, out, work);
    free(cost);
    lattice_free(&l);
    return total;
}
