/*
 * agent/ownheap.h — the heap of the agent's own work (ownheap.c): what the
 * agent, and libdw, libunwind and libc on its behalf, allocate while the
 * thread runs agent code comes from memory the agent maps itself, so the
 * traced program's arenas see only the program's own calls.
 */
#ifndef LTR_AGENT_OWNHEAP_H
#define LTR_AGENT_OWNHEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The reservation's bounds; own_span 0 until ownheap_init made it. */
extern uintptr_t own_base, own_span;

/* Whether p is a block of this heap: one subtraction and compare on the
 * program's every free. */
static inline bool ownheap_has(const void *p)
{
    return (uintptr_t)p - own_base < own_span;
}

/* Reserves the address range (from the agent's constructor, when it is
 * preloaded: hooks.c). */
void ownheap_init(void);
/* A fork child's (pthread_atfork, once the real allocator is known: the
 * registration may allocate). */
void ownheap_after_fork(void);
/* NULL when the range is used up or cannot be committed: the caller then
 * falls back to the real allocator (its blocks are told apart by address). */
void *ownheap_alloc(size_t n, size_t align);
void ownheap_free(void *p);
/* Grows or shrinks a block of this heap, in it, or in a block of other's
 * (the real malloc) when this heap has none; NULL (p kept) if neither. */
void *ownheap_realloc(void *p, size_t n, void *(*other)(size_t));

#endif
