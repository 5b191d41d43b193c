/*
 * prim/sanitized_exit.c — in the ASan + UBSan build only (-DLTR_SANITIZE=ON,
 * the test suite's second run): the writable segments of every loaded
 * module mapped in one system call at exit, before LeakSanitizer reads them.
 * Not in any other build, and nothing here changes what a process does.
 *
 * Why: LeakSanitizer's check at exit reads every writable segment whole,
 * libasan's 5.6 MB and libubsan's 6 MB of .bss included, most of it never
 * touched, so a page fault each (5 100 a process against 1 700 without the
 * check), and on the project's PVM guest a fault costs 11 to 15 us of CPU
 * (docs/benchmarks.md, "The ASan suite's process exits"). MADV_POPULATE_READ
 * maps the same zero pages without a fault's trap each: `ltr --version` of
 * the ASan build 113 -> 91 ms of CPU (60 alternating runs each, load 9), and
 * the suite starts some 3 000 of them (docs/benchmarks.md, "The test
 * suite's time (session 37)"). An exit handler, not a constructor: a process
 * that execs or leaves by _exit never pays it. atexit runs handlers in
 * reverse order, and the sanitizer's leak check was registered at its own
 * start, before any constructor: this one runs first.
 */
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14; older kernels say EINVAL, and the faults are taken as before */
#endif

static int populate_writable(struct dl_phdr_info *info, size_t size, void *unused)
{
    (void)size;
    (void)unused;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
            continue;
        uintptr_t start = (info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)4095;
        uintptr_t end = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + 4095) & ~(uintptr_t)4095;
        (void)madvise((void *)start, end - start, MADV_POPULATE_READ); /* a hint: failing costs only the faults */
    }
    return 0;
}

static void populate_at_exit(void)
{
    dl_iterate_phdr(populate_writable, NULL);
}

__attribute__((constructor)) static void register_populate(void)
{
    atexit(populate_at_exit);
}
