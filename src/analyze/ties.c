/*
 * analyze/ties.c — the order search of ties.h. The steps of k threads at an
 * address are a lattice of positions (how many of each thread's were
 * taken) times whether a block is there; a step that does not alternate
 * costs two, a block never seen there at first one. The fewest from each state to the end is filled in from the
 * last positions back (a step only moves forward), then the order is read
 * from the start, taking at each step the earliest-come step that keeps to
 * the fewest. Two or three threads with a few steps each make a few dozen
 * states; a lattice past AN_TIES_STATES (40 threads, or long runs at one
 * address) is walked greedily instead, which sees no further than a step.
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
    uint32_t k;      /* threads */
    size_t *first;   /* thread t's steps are ord[first[t] .. first[t + 1]) */
    uint32_t *ord;   /* step indexes by thread, each thread's in its order */
    size_t *stride;  /* of a thread's position in a state's number */
    size_t *pos;     /* the walk's positions */
    size_t states;   /* positions' combinations; 0: too many to search */
} lattice;

static void lattice_free(lattice *l)
{
    free(l->first);
    free(l->ord);
    free(l->stride);
    free(l->pos);
}

/* The threads' steps sorted by thread (stable) and the lattice's size; -1 without memory. */
static int lattice_make(lattice *l, const an_tie_step *steps, size_t n)
{
    l->k = 0;
    for (size_t i = 0; i < n; i++)
        l->k = steps[i].thread + 1 > l->k ? steps[i].thread + 1 : l->k;
    l->first = calloc(l->k + 1, sizeof *l->first);
    l->ord = malloc(n * sizeof *l->ord);
    l->stride = calloc(l->k, sizeof *l->stride);
    l->pos = calloc(l->k, sizeof *l->pos);
    if (!l->first || !l->ord || !l->stride || !l->pos)
        return -1;
    for (size_t i = 0; i < n; i++)
        l->first[steps[i].thread + 1]++;
    for (uint32_t t = 0; t < l->k; t++)
        l->first[t + 1] += l->first[t];
    size_t *fill = l->pos; /* zeroed again below */
    for (size_t i = 0; i < n; i++) {
        uint32_t t = steps[i].thread;
        l->ord[l->first[t] + fill[t]++] = (uint32_t)i;
    }
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
    for (uint32_t t = 0; t < l->k; t++)
        fill[t] = 0;
    return 0;
}

/* The next step of thread t at the walk's positions, or NULL when it has none. */
static const an_tie_step *next_of(const lattice *l, const an_tie_step *steps, uint32_t t)
{
    size_t at = l->first[t] + l->pos[t];
    return at < l->first[t + 1] ? &steps[l->ord[at]] : NULL;
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
                int after = live;
                if (!st)
                    continue;
                uint32_t c = step_cost(st, &after) + cost[(s + l->stride[t]) * 2 + (size_t)after];
                best = c < best ? c : best;
            }
            cost[s * 2 + (size_t)live] = best == UINT32_MAX ? 0 : best; /* the end: nothing more */
        }
    }
    for (uint32_t t = 0; t < l->k; t++)
        l->pos[t] = 0;
}

long an_ties_order(const an_tie_step *steps, size_t n, int live, uint32_t *out)
{
    lattice l = {0};
    uint32_t *cost = NULL;
    if (lattice_make(&l, steps, n) != 0 || (l.states && !(cost = malloc(l.states * 2 * sizeof *cost)))) {
        lattice_free(&l);
        return -1;
    }
    long total = 0;
    if (cost) {
        fill_costs(&l, steps, cost);
        /* An address that holds no block may hold one the trace never saw
         * (allocated before it began), whose free comes first: 1, less than
         * a step that does not alternate, which a block from before cannot
         * explain anywhere else. */
        if (!live && 1 + cost[1] < cost[0]) {
            live = 1;
            total = 1;
        }
    }
    size_t s = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t pick = UINT32_MAX, pick_cost = UINT32_MAX;
        for (uint32_t t = 0; t < l.k; t++) {
            const an_tie_step *st = next_of(&l, steps, t);
            int after = live;
            if (!st)
                continue;
            uint32_t c = step_cost(st, &after);
            if (cost) /* exact: to the end; greedy: this step only */
                c += cost[(s + l.stride[t]) * 2 + (size_t)after];
            if (c < pick_cost || (c == pick_cost && l.ord[l.first[t] + l.pos[t]] < l.ord[l.first[pick] + l.pos[pick]]))
                pick = t, pick_cost = c;
        }
        uint32_t at = l.ord[l.first[pick] + l.pos[pick]];
        total += step_cost(&steps[at], &live);
        out[i] = at;
        l.pos[pick]++;
        s += l.stride[pick];
    }
    free(cost);
    lattice_free(&l);
    return total;
}
