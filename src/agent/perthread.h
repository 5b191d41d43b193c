/*
 * agent/perthread.h — per-thread working memory of the agent too big for
 * TLS: the unwinder's cache of the last walk, the trie's prefix hashes.
 *
 * glibc carves a thread's static TLS out of the thread's stack, so every
 * byte of the agent's TLS is taken from every thread's stack, whether the
 * thread allocates or not: with 20 KB of TLS, a program whose threads have
 * 32 KB stacks crashed under the agent, dormant or not. And an agent
 * dlopen'ed into a running process (redirect.h) gets its static TLS from the
 * few hundred bytes glibc keeps spare for all late modules together: past
 * them the dlopen fails. So the agent keeps only words in TLS, and the rest
 * (the producer's slots, the sessions a thread has named itself in and
 * their layout ids, held signals' siginfo) is mapped at a thread's first
 * need and unmapped when the thread exits.
 */
#ifndef LTR_AGENT_PERTHREAD_H
#define LTR_AGENT_PERTHREAD_H

#include <stdbool.h>
#include <stddef.h>

#include "event/registry.h"
#include "prim/prim.h"

#include <limits.h>
#include <signal.h>
#include <stdint.h>

enum agent_block { AGENT_BLOCK_UNWIND, AGENT_BLOCK_STACKS, AGENT_BLOCK_THREAD, AGENT_BLOCK_PRODUCER,
                   AGENT_BLOCKS };

/* AGENT_BLOCK_THREAD: what emit.c and signals.c keep per thread. */
#define AGENT_HELD_INFO 2
typedef struct agent_thread {
    /* the session incarnation the thread's THREAD record was written for */
    uint64_t named[LTR_MAX_SESSIONS];
    /* emit.c's shortcut while named[s] holds: the attachment of slot s, and
     * the layout ids of the heap events in it (0: not asked yet) */
    struct ltr_attach *att[LTR_MAX_SESSIONS];
    uint32_t layouts[LTR_MAX_SESSIONS][3];
    /* emit.c's count of other threads' renames when the record was written */
    uint32_t renames_seen;
    /* emit.c's event clock between 100 us edges (prim.h) */
    ltr_grain_clock clock;
    /* the siginfo of the first signals held during one stay in the agent */
    struct {
        int sig;
        siginfo_t info;
    } held[AGENT_HELD_INFO];
} agent_thread;

extern __thread void *agent_blocks[AGENT_BLOCKS] __attribute__((tls_model("initial-exec")));

/* Maps this thread's block (zeroed) and arranges its unmapping at thread
 * exit; NULL if it cannot. */
void *agent_block_new(enum agent_block which, size_t size);

/* This thread's block of that kind, size bytes, zeroed when new; NULL when
 * memory cannot be had (callers then do without). Call with the agent's
 * guard set; size must be the same at every call for a kind. */
static inline void *agent_thread_block(enum agent_block which, size_t size)
{
    void *p = agent_blocks[which];
    return __builtin_expect(p != NULL, 1) ? p : agent_block_new(which, size);
}

/* From the agent's constructor: the key whose destructor unmaps a thread's blocks. */
void agent_blocks_init(void);

/* The rounds of key destructors at the thread's exit that gave its blocks
 * back (perthread.c): from the last on, no destructor runs for blocks
 * mapped after, so an event gives them back itself. */
extern __thread int agent_exiting __attribute__((tls_model("initial-exec")));

/* Hands the thread's buffers over and unmaps its blocks. */
void agent_blocks_release(void);

/* At the end of an event's writing (the guard still up): an exiting
 * thread's blocks go at once. */
static inline void agent_blocks_settle(void)
{
    if (__builtin_expect(agent_exiting >= PTHREAD_DESTRUCTOR_ITERATIONS, 0))
        agent_blocks_release();
}

#endif
