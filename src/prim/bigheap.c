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
    __asm__ volatile("" : : "r"(p) : "memory"); /* made, not optimized away with its free */
    uintptr_t end = (uintptr_t)sbrk(0);
    free(p);
    mallopt(M_TOP_PAD, 0);
    uintptr_t huge = (uintptr_t)2 << 20, from = (start + huge - 1) & ~(huge - 1);
    if (end > from + huge)
        madvise((void *)from, end - from, MADV_HUGEPAGE);
}
