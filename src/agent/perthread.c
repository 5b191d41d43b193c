/*
 * agent/perthread.c — per-thread blocks of perthread.h: mmap'd at a thread's
 * first need (not malloc: the agent's own allocations must not meet its
 * hooks at thread exit), unmapped by a thread-specific key's destructor.
 */
#include "agent/perthread.h"
#include "agent/agent.h"

#include <pthread.h>
#include <stdbool.h>
#include <sys/mman.h>

__thread void *agent_blocks[AGENT_BLOCKS] __attribute__((tls_model("initial-exec")));
static __thread size_t block_size[AGENT_BLOCKS] __attribute__((tls_model("initial-exec")));
static pthread_key_t exit_key;
static bool have_key;

__thread int agent_exiting __attribute__((tls_model("initial-exec")));

void agent_blocks_release(void)
{
    agent_busy++;
    ltr_producer_flush_thread(); /* its state is in a block: before the block goes */
    agent_busy--;
    for (int i = 0; i < AGENT_BLOCKS; i++)
        if (agent_blocks[i]) {
            munmap(agent_blocks[i], block_size[i]);
            agent_blocks[i] = NULL;
        }
}

/* At thread exit, in each of glibc's rounds of key destructors: the key is
 * set again each time, so that this runs in every round, and an event a
 * later key's destructor makes (a program's per-thread cache freed node by
 * node) lands in a block given back at the next round. After the last
 * round glibc still frees blocks of the thread's (__libc_thread_freeres:
 * strerror's and strsignal's buffers, the resolver's state, dlerror's
 * message), and a block mapped for those events was never unmapped: 8 KB
 * more mapped and 9 KB more resident for each thread that had called
 * strerror (5000 such threads: 443 MB mapped, 54 MB resident; 404 and 10
 * without strerror). So from the last round on each event gives its blocks
 * back when written (agent_exiting, emit.c), not from the first: each such
 * event then publishes a buffer of its own, and a thread freeing 200 nodes
 * in its key's destructor took 200 buffers of a flight recorder's ring
 * (--buffers 16: 16 of its 401 events kept, 385 overwritten). */
static void release(void *unused)
{
    (void)unused;
    if (++agent_exiting < PTHREAD_DESTRUCTOR_ITERATIONS)
        pthread_setspecific(exit_key, (void *)1);
    agent_blocks_release();
}

void agent_blocks_init(void)
{
    have_key = pthread_key_create(&exit_key, release) == 0;
}

void *agent_block_new(enum agent_block which, size_t size)
{
    if (!have_key)
        return NULL;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    if (pthread_setspecific(exit_key, (void *)1) != 0) { /* non-NULL: the destructor runs */
        munmap(p, size);
        return NULL;
    }
    block_size[which] = size;
    return agent_blocks[which] = p;
}

/* The producer's per-thread state (event/producer.c, built for the agent). */
void *ltr_producer_thread_state(size_t size, bool create);
void *ltr_producer_thread_state(size_t size, bool create)
{
    void *p = agent_blocks[AGENT_BLOCK_PRODUCER];
    return p || !create ? p : agent_block_new(AGENT_BLOCK_PRODUCER, size);
}
