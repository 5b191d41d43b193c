/*
 * tests/prim/test_bigheap.c — prim/bigheap.c's heap on huge pages: once
 * ltr_bigheap_huge has grown the heap, the blocks made next are in the range
 * advised huge pages, not below it where the heap happened to start (those
 * pages faulted in 4 KiB at a time: perl's leak analysis, 916 page faults
 * against 281), and at most the huge page of the top's header is in. Skipped where the kernel has no transparent huge pages, and
 * under ASan, whose malloc is not the heap's.
 */
#include "prim/prim.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct vma {
    uintptr_t from, to;
    long rss_kb;
} vma;

/* The mappings advised huge pages (VmFlags hg) of this process, at most max. */
static size_t advised(vma *out, size_t max)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    assert_non_null(f);
    char line[512];
    size_t n = 0;
    vma cur = {0};
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        long kb;
        if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' '))
            cur = (vma){a, b, 0};
        else if (sscanf(line, "Rss: %ld kB", &kb) == 1)
            cur.rss_kb = kb;
        else if (!strncmp(line, "VmFlags:", 8) && strstr(line, " hg") && n < max)
            out[n++] = cur;
    }
    fclose(f);
    return n;
}

static void test_blocks_in_the_advised_range(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    skip();
#endif
    if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) != 0)
        skip();
    ltr_bigheap_keep();
    ltr_bigheap_huge((size_t)64 << 20);
    vma v[8];
    size_t n = advised(v, 8);
    assert_int_equal(n, 1); /* the heap's growth, nothing else of this process */
    assert_true(v[0].rss_kb <= 2048); /* the top's header, after the block that keeps the range below */
    assert_int_equal(v[0].from % ((uintptr_t)2 << 20), 0);
    char *b = malloc(64 << 10);
    assert_non_null(b);
    memset(b, 1, 64 << 10);
    assert_true((uintptr_t)b >= v[0].from && (uintptr_t)b + (64 << 10) <= v[0].to);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks_in_the_advised_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
