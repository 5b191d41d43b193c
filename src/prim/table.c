/*
 * prim/table.c — large growable arrays that grow without a copy
 * (ltr_table_reserve). An array grown by realloc doubling is copied at
 * each doubling into fresh memory, whose pages the kernel zeroes as they
 * are first touched: the analysis of cc1plus's trace touched 85 MiB, of
 * which 29 MiB were such copies (perf record -e page-faults, 4 KiB pages:
 * the model's stack entries and the values decoded ahead). On the virtual
 * machines ltr is measured on, a fresh page costs 0.3 to 2 ms a MiB (the
 * host backs the guest's memory as it is touched), a third of the
 * analysis's wall time at worst. Past LTR_TABLE_MAPPED bytes an array is a
 * mapping of its own, grown by mremap: its pages move to the larger
 * range, none is copied or zeroed again, and only what is written is ever
 * touched. Below that, realloc as ltr_reserve.
 */
#include "prim/prim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

static size_t mapped_size(size_t bytes)
{
    return (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
}

/* A fresh mapping of bytes (a multiple of HUGE_PAGE), advised huge pages
 * (the analysis's heap is: cli/analysis-args.c), or NULL. */
static void *map_new(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

int ltr_table_reserve(void **v, size_t *cap, size_t n, size_t elem, size_t first)
{
    if (n < *cap)
        return 0;
    size_t ncap = ltr_grown_capacity(*cap, n, first);
    if (ncap > SIZE_MAX / 2 / elem)
        return -ENOMEM;
    size_t old = *cap * elem, want = ncap * elem;
    void *nv;
    if (want <= LTR_TABLE_MAPPED) {
        nv = realloc(*v, want);
    } else if (old <= LTR_TABLE_MAPPED) { /* from the heap to a mapping: the one copy, of a small array */
        nv = map_new(mapped_size(want));
        if (nv && old)
            memcpy(nv, *v, old);
        if (nv)
            free(*v);
    } else {
        nv = mremap(*v, mapped_size(old), mapped_size(want), MREMAP_MAYMOVE);
        nv = nv == MAP_FAILED ? NULL : nv;
    }
    if (!nv)
        return -ENOMEM;
    *v = nv;
    *cap = ncap;
    return 0;
}

int ltr_table_shrink(void **v, size_t *cap, size_t n, size_t elem)
{
    size_t keep = n ? n : 1, old = *cap * elem, want = keep * elem;
    if (keep >= *cap)
        return 0;
    if (old <= LTR_TABLE_MAPPED) {
        void *nv = realloc(*v, want);
        if (!nv)
            return -ENOMEM;
        *v = nv;
    } else if (want <= LTR_TABLE_MAPPED) {
        return 0; /* a mapping stays one (ltr_table_free tells the kinds by size) */
    } else if (mapped_size(want) < mapped_size(old) &&
               munmap((char *)*v + mapped_size(want), mapped_size(old) - mapped_size(want)) != 0) {
        return -ENOMEM;
    }
    *cap = keep;
    return 0;
}

void ltr_table_free(void *v, size_t cap, size_t elem)
{
    if (cap * elem <= LTR_TABLE_MAPPED)
        free(v);
    else
        munmap(v, mapped_size(cap * elem));
}
