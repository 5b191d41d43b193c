/*
 * prim/bigheap.c — malloc set up for a tool process whose tables are
 * megabytes: the analysis (its time-order queues, the model's ring, the
 * address references) and the recorder (its backlog, the writer's chunk
 * buffers, zstd's workspace). Not for the heap agent: a traced program's
 * malloc is the program's own.
 *
 * With glibc's defaults each such table is a fresh mmap, its pages faulting
 * in zeroed every time it is made again, and on the project's PVM guest a
 * page fault costs 11 to 15 us of CPU (docs/benchmarks.md, "The heap event
 * on a PVM guest"). One arena that keeps what is freed, its growth advised
 * transparent huge pages (the machine's THP mode is usually madvise), takes
 * a fault per 2 MiB instead of per 4 KiB. The figures are in the callers'
 * comments (cli/analysis-args.c, recorder/setup.c).
 */
#include "prim/prim.h"

#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

void ltr_bigheap_keep(void)
{
    mallopt(M_ARENA_MAX, 1);
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

/* The heap's free top starts where p's block did (p: a block taken from
 * the top and freed back into it). Blocks were cut from there on, the first
 * of them below `from`, the first huge page boundary of the advised range:
 * those pages faulted in 4 KiB at a time, up to 2 MiB of them by where the
 * heap happened to start (perl's leak: 467 of its 916 page faults in one
 * run, 11 to 15 us each here). A block from there to past `from`, never
 * written and kept to the end, makes the next blocks start in the advised
 * range; only its header's page is touched. Not kept when it was not cut
 * from the top (a free block elsewhere fitted it). */
static void *pad; /* kept: reachable, for leak checkers too */

static void pad_to(uintptr_t from, uintptr_t p)
{
    size_t below = 2 * sizeof(size_t); /* the block's header, in front of p */
    void *q = malloc(from - p + below);
    if ((uintptr_t)q == p)
        pad = q;
    else
        free(q);
}

/* glibc's tunable glibc.malloc.hugetlb=1 does this for each growth, but a
 * tunable is read when a program starts, and running the command again with
 * it cost a second start of the program and its libraries (2.5 ms). So the
 * heap grows once by `reserve` bytes of address space (taken only as pages
 * are touched: M_TOP_PAD), and that range is advised huge pages. Where the
 * growth cannot be had (a strict overcommit policy), malloc goes on as usual. */
void ltr_bigheap_huge(size_t reserve)
{
    mallopt(M_TOP_PAD, (int)reserve);
    uintptr_t start = (uintptr_t)sbrk(0);
    void *p = malloc(1 << 20);
    uintptr_t at; /* where it was: made, not optimized away with its free (and no pointer used after it) */
    __asm__ volatile("" : "=r"(at) : "0"(p) : "memory");
    uintptr_t end = (uintptr_t)sbrk(0);
    free(p);
    mallopt(M_TOP_PAD, 0);
    /* past the block's end too: growing, malloc wrote the top's header there,
     * a 4 KiB page that made its whole huge page fault in 4 KiB at a time */
    uintptr_t huge = (uintptr_t)2 << 20, past = at + (1 << 20) + 2 * sizeof(size_t);
    uintptr_t from = ((past > start ? past : start) + huge - 1) & ~(huge - 1);
    if (at && end > from + huge) {
        madvise((void *)from, end - from, MADV_HUGEPAGE);
        pad_to(from, at);
    }
}
