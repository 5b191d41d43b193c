/*
 * prim/rseq.h — restartable sequences (rseq: Linux 4.18, registered for every
 * thread by glibc 2.35 and later), for ring/percpu.c: threads that share a
 * CPU's buffer append to it with no lock and no atomic instruction. A
 * sequence runs on one CPU from start to end or not at all: if the thread is
 * preempted, migrated or takes a signal inside it, the kernel moves it to
 * the abort label, and the caller tries again. So a writer never waits for
 * another, and one killed halfway leaves nothing behind (its bytes are past
 * the commit word, which only the sequence's last instruction moves).
 *
 * x86-64 with glibc's registration only. Elsewhere, or when glibc did not
 * register rseq (its glibc.pthread.rseq tunable at 0, a kernel without it),
 * ltr_rseq_cpu() is -1 and callers do without. The abort handlers follow the
 * kernel's ABI (include/uapi/linux/rseq.h): a struct rseq_cs per sequence,
 * and the signature glibc registered (RSEQ_SIG) in the 4 bytes before the
 * abort address.
 */
#ifndef LTR_PRIM_RSEQ_H
#define LTR_PRIM_RSEQ_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__has_include)
#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#define LTR_HAVE_RSEQ 1
#endif
#endif

#ifdef LTR_HAVE_RSEQ
/* Offsets in struct rseq (the kernel's ABI): cpu_id 4, rseq_cs 8 (the
 * sequences below write them as numbers). */
#define LTR_RSEQ_CPU_ID 4

static inline char *ltr_rseq_area(void)
{
    char *tp;
    __asm__("movq %%fs:0, %0" : "=r"(tp));
    return tp + __rseq_offset;
}

/* The CPU this thread runs on now, or -1 when rseq is not registered. */
static inline int ltr_rseq_cpu(void)
{
    if (__rseq_size == 0)
        return -1;
    int32_t cpu = __atomic_load_n((int32_t *)(ltr_rseq_area() + LTR_RSEQ_CPU_ID), __ATOMIC_RELAXED);
    return cpu < 0 ? -1 : cpu;
}

/* The parts every sequence shares, as librseq lays them out: its struct
 * rseq_cs (label 3: start 1, length to 2, abort 4) in section __rseq_cs;
 * the entry, which arms it and checks the thread runs on %[cpu] (else
 * aborts); and the abort handler in __rseq_failure, after the signature
 * (a ud1 instruction holding RSEQ_SIG, never run), jumping to the C label
 * abort. Operands: %[rs] the thread's struct rseq, %[cpu]; rax is used. */
#define LTR_RSEQ_CS                                                                                    \
    ".pushsection __rseq_cs, \"aw\"\n\t"                                                               \
    ".balign 32\n\t"                                                                                  \
    "3:\n\t"                                                                                          \
    ".long 0x0, 0x0\n\t"                                                                              \
    ".quad 1f, (2f - 1f), 4f\n\t"                                                                     \
    ".popsection\n\t"
#define LTR_RSEQ_ENTER                                                                                 \
    "leaq 3b(%%rip), %%rax\n\t"                                                                       \
    "movq %%rax, 8(%[rs])\n\t"                                                                        \
    "1:\n\t"                                                                                          \
    "cmpl %[cpu], 4(%[rs])\n\t"                                                                       \
    "jnz 4f\n\t"
#define LTR_RSEQ_ABORT                                                                                 \
    "2:\n\t"                                                                                          \
    ".pushsection __rseq_failure, \"ax\"\n\t"                                                         \
    ".byte 0x0f, 0xb9, 0x3d\n\t"                                                                      \
    ".long 0x53053053\n\t"                                                                            \
    "4:\n\t"                                                                                          \
    "jmp %l[abort]\n\t"                                                                               \
    ".popsection"

/* On CPU cpu, if *slot == slot_expect and *word == word_expect: copies len
 * bytes from src to dst, then adds len + (1 << 32) to *word (the ring's
 * commit word: bytes in its low half, events in its high half); all of it
 * or nothing. 0: done; 1: not done, the thread left the CPU or took a signal
 * (try again); 2: not done, *slot or *word was not as expected. */
static inline int ltr_rseq_append(int cpu, const uint32_t *slot, uint32_t slot_expect, uint64_t *word,
                                  uint64_t word_expect, void *dst, const void *src, size_t len)
{
    char *rs = ltr_rseq_area();
    __asm__ __volatile__ goto(LTR_RSEQ_CS LTR_RSEQ_ENTER
                              "cmpl %[sexp], (%[slot])\n\t"
                              "jnz %l[differ]\n\t"
                              "cmpq %[wexp], (%[word])\n\t"
                              "jnz %l[differ]\n\t"
                              "movq %[src], %%rsi\n\t"
                              "movq %[dst], %%rdi\n\t"
                              "movq %[len], %%rcx\n\t"
                              "rep movsb\n\t"
                              "movq %[wexp], %%rax\n\t"
                              "addq %[len], %%rax\n\t"
                              "movabsq $0x100000000, %%rcx\n\t"
                              "addq %%rcx, %%rax\n\t"
                              "movq %%rax, (%[word])\n\t" /* the commit: the sequence's last instruction */
                              LTR_RSEQ_ABORT
                              :
                              : [rs] "r"(rs), [cpu] "r"(cpu), [slot] "r"(slot), [sexp] "r"(slot_expect),
                                [word] "r"(word), [wexp] "r"(word_expect), [src] "r"(src), [dst] "r"(dst),
                                [len] "r"(len)
                              : "memory", "cc", "rax", "rsi", "rdi", "rcx"
                              : abort, differ);
    return 0;
abort:
    return 1;
differ:
    return 2;
}

/* On CPU cpu, if *slot == expect: stores value into it, as one sequence.
 * 0: done; 1: not done, try again; 2: *slot was not expect. */
static inline int ltr_rseq_swap(int cpu, uint32_t *slot, uint32_t expect, uint32_t value)
{
    char *rs = ltr_rseq_area();
    __asm__ __volatile__ goto(LTR_RSEQ_CS LTR_RSEQ_ENTER
                              "cmpl %[expect], (%[slot])\n\t"
                              "jnz %l[differ]\n\t"
                              "movl %[value], (%[slot])\n\t"
                              LTR_RSEQ_ABORT
                              :
                              : [rs] "r"(rs), [cpu] "r"(cpu), [slot] "r"(slot), [expect] "r"(expect),
                                [value] "r"(value)
                              : "memory", "cc", "rax"
                              : abort, differ);
    return 0;
abort:
    return 1;
differ:
    return 2;
}
#else
static inline int ltr_rseq_cpu(void) { return -1; }
static inline int ltr_rseq_append(int cpu, const uint32_t *slot, uint32_t slot_expect, uint64_t *word,
                                  uint64_t word_expect, void *dst, const void *src, size_t len)
{
    return 2;
}
static inline int ltr_rseq_swap(int cpu, uint32_t *slot, uint32_t expect, uint32_t value) { return 2; }
#endif

#endif
