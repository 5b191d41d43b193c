/*
 * agent/unwind.h — the heap agent's own unwinder (unwind.c): a walk of the
 * calling thread's stack driven by per-address rules derived once from the
 * DWARF call frame information, for the common case; stacks.c falls back to
 * libunwind whenever it says "not this stack".
 */
#ifndef LTR_AGENT_UNWIND_H
#define LTR_AGENT_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

/* What a walk tells beside its frames (unwind_fast). */
typedef struct unwind_info {
    /* how many of the outermost frames of pcs are the outermost frames of
     * the stack this thread's previous call returned (0 if that call
     * failed, was cut at max, or is not known to share any, as while the
     * thread's reuse is paused because it did not pay); they were taken
     * from that walk, not walked again (unwind.c) */
    int shared;
    /* how many frames were stepped over at the CFA the thread's last walk
     * found there (unwind.c: guessing each frame's CFA) */
    int guessed;
    /* trie.h's sums of pcs[0 .. n), made as the walk goes (the path's
     * hashes without a pass of their own) */
    uint64_t sums[2];
} unwind_info;

/* Fills pcs with up to max program counters of the calling thread, innermost
 * first: pcs[0] is inside unwind_fast itself, the others are return
 * addresses (as libunwind's unw_backtrace gives them). Or, if frame is not
 * NULL, from the caller of the function whose frame pointer it is (a
 * function of the agent built with frame pointers, on this thread's stack):
 * pcs[0] is that function's return address. Returns how many (and info), or
 * -1 when this stack holds something the rule cache cannot express (signal
 * frame, DWARF expression, unknown code, a stack it cannot bound): the
 * caller then unwinds it another way. max is at most TRIE_SUM_MAX.
 * Call with the agent's guard set: the first sight of an address may
 * allocate (libdw). Never blocks. */
int unwind_fast(void **pcs, int max, const void *frame, unwind_info *info);

/* Off: every walk goes to the end (for measuring the reuse alone). */
void unwind_set_reuse(bool on);

/* Changes whenever the unwinder found objects loaded or unloaded (it looks
 * when it meets an address in none it knows). */
unsigned unwind_modules_generation(void);

/* Code may have been unloaded (dlclose): forget every derived rule. */
void unwind_flush(void);

/* In a fork child: forget state another thread may have held mid-change. */
void unwind_after_fork(void);

/* libunwind, for the stacks unwind_fast gives up on (fallback.c).
 * fallback_init starts it and learns the pipe it validates memory through;
 * fallback_backtrace is its unw_backtrace while that pipe is still its own
 * (a daemon's close-all gives the numbers to the program's files), else -1,
 * as when a fork holds the loader's list; fallback_refused counts the
 * stacks refused for the pipe. */
void fallback_init(void);
int fallback_backtrace(void **buf, int max);
uint64_t fallback_refused(void);

#endif
