/*
 * agent/sysev.h — the parts of the system provider (Ltr.System,
 * docs/system-provider.md) that only the agent can record, because they
 * happen inside the traced program: VirtualAllocation (vmem.c: mmap, munmap,
 * mremap, madvise, brk, sbrk) and FileIO (fileio.c). The recorder's system
 * thread writes the other parts from /proc; these are written by the agent
 * into the same provider, under their own keyword bits, with the caller's
 * stack through the heap events' stack path (stacks.c), so a session enables
 * them as it enables any part: `--provider Ltr.System:0x10`, or a profile's
 * VirtualAllocation keyword.
 */
#ifndef LTR_AGENT_SYSEV_H
#define LTR_AGENT_SYSEV_H

#include "agent/agent.h"

/* The registry word that says which sessions enable Ltr.System in this
 * process; points at a zero until the agent is set up. */
extern const uint32_t *volatile agent_sys_state;

/* The one load a hook pays when no session wants system events. */
static inline bool sysev_wanted(void)
{
    return __builtin_expect(__atomic_load_n(agent_sys_state, __ATOMIC_RELAXED) != 0, 0) && !agent_busy;
}

/* Whether some session wants keyword kw of Ltr.System: for work an event
 * needs before it is written (an open's readlink). */
bool sysev_kw_wanted(uint64_t kw);

/* Registers the agent's Ltr.System provider (from emit_init). */
void sysev_init(void);

/* Encodes an event's payload given its stack id; returns its length
 * (at most SYSEV_PAYLOAD_MAX). */
#define SYSEV_PAYLOAD_MAX 1024
typedef uint32_t (*sysev_encode_fn)(const void *ctx, uint32_t stack, uint8_t *out);

/* Writes the event d (keyword bit kw) into every session that wants it, its
 * stack (when with_stack) that of the caller of frame (as emit_alloc's),
 * unwound at most once. Called with the guard clear; keeps errno. */
void sysev_emit(ltr_event_desc *d, uint64_t kw, const void *frame, bool with_stack, sysev_encode_fn enc,
                const void *ctx);

/* The provider the events are defined on (LTR_EVENT_DEFINE). */
extern ltr_provider agent_sys_provider;

#endif
