/*
 * analyze/ties.h — which free ends which block where several threads
 * touched one address within one timestamp. The heap agent stamps events
 * to 100 us, so threads share times, and the trace keeps no order among
 * their events of one time: the time-order stage (order.c) hands them on in
 * an order of its own, which may put an allocation of an address before the
 * free that handed it back. What the events allow is any interleaving of
 * the threads' events at that time, each thread's own order kept; the true
 * one makes the address's allocations and frees alternate. The model
 * (model.c) holds back an address's events at that time once the order it
 * met them in does not alternate (a free finding no block, an allocation
 * over a live one) and asks an_ties_order for an order that does.
 */
#ifndef LTR_ANALYZE_TIES_H
#define LTR_ANALYZE_TIES_H

#include <stddef.h>
#include <stdint.h>

/* One event of an address at one time, as an_ties_order reads it. */
typedef struct an_tie_step {
    uint32_t thread; /* which thread's (any number: its id) */
    uint32_t alloc;  /* 1: an allocation, 0: a free */
} an_tie_step;

/* States an_ties_order searches exactly (the product over the threads of
 * their events + 1, twice; threads of one event each count as two, their
 * frees and their allocations); past it, it takes step by step a next
 * event that alternates, of the thread with the most events left. */
#define AN_TIES_STATES (1u << 16)

/* An order of the n steps (their indexes into out), each thread's in the
 * order given, from an address that holds a block (live) or not, with the
 * least cost, which it returns: 2 for each step that does not alternate (a
 * free where no block is, an allocation over one); 1 for an address that
 * holds no block starting with one the trace never saw, whose free then
 * alternates. Of several such orders, the one that keeps the order given
 * wherever that costs nothing more, so that the order met stays where it
 * alternates and the choice is the same on every run: at each step, of the
 * threads whose next step leads to the least, the one whose next step
 * comes first in steps (which lists each thread's in its order). -1
 * without memory (out untouched). work, unless NULL, is added the
 * search's work (states times threads looked at, or steps and threads
 * greedily): what bounds its time, which a test can hold. */
long an_ties_order(const an_tie_step *steps, size_t n, int live, uint32_t *out, size_t *work);

#endif
