/*
 * tests/symbols/test_symtab.c — symbols/symtab.c against libdwfl's own
 * lookup (dwfl_module_addrinfo), which it replaces for speed: for modules of
 * this machine (the C library, this test, the compiler's cc1 when present),
 * the same name at the first byte, the middle and the last byte of function
 * symbols, and just past the end of each: of 500 symbols spread over each
 * table (libdwfl walks the whole table per lookup: every symbol of cc1 took
 * a minute).
 */
#include "symbols/symtab.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t compare_module(const char *path, size_t *mismatches)
{
    char *debug_path = NULL;
    Dwfl_Callbacks cb = {.find_elf = dwfl_build_id_find_elf, .find_debuginfo = dwfl_standard_find_debuginfo,
                         .section_address = dwfl_offline_section_address, .debuginfo_path = &debug_path};
    Dwfl *d = dwfl_begin(&cb);
    assert_non_null(d);
    Dwfl_Module *m = dwfl_report_elf(d, path, path, -1, 0, false);
    assert_non_null(m);
    dwfl_report_end(d, NULL, NULL);
    sym_symtab *t = sym_symtab_new(m);
    assert_non_null(t);
    size_t checked = 0;
    int n = dwfl_module_getsymtab(m), stride = n / 500 > 1 ? n / 500 : 1;
    for (int i = 1; i < n; i += stride) {
        GElf_Sym s;
        GElf_Addr a;
        if (!dwfl_module_getsym_info(m, i, &s, &a, NULL, NULL, NULL) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
            s.st_value == 0)
            continue;
        GElf_Addr probes[] = {a, a + s.st_size / 2, s.st_size ? a + s.st_size - 1 : a, a + s.st_size};
        for (size_t k = 0; k < 4; k++) {
            GElf_Off off;
            GElf_Sym sym;
            const char *want = dwfl_module_addrinfo(m, probes[k], &off, &sym, NULL, NULL, NULL);
            const char *got = sym_symtab_find(t, probes[k]);
            checked++;
            if ((want == NULL) != (got == NULL) || (want && strcmp(want, got))) {
                if (++*mismatches <= 10)
                    fprintf(stderr, "%s %#llx: libdwfl %s, symtab %s\n", path, (unsigned long long)probes[k],
                            want ? want : "-", got ? got : "-");
            }
        }
    }
    sym_symtab_free(t);
    dwfl_end(d);
    return checked;
}

static void test_same_as_libdwfl(void **state)
{
    (void)state;
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(n > 0);
    self[n] = 0;
    const char *paths[] = {self, "/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/gcc/x86_64-linux-gnu/12/cc1",
                           "/usr/bin/python3"};
    size_t mismatches = 0, checked = 0;
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        if (access(paths[i], R_OK) != 0) {
            printf("(%s is not here: not compared)\n", paths[i]);
            continue;
        }
        size_t c = compare_module(paths[i], &mismatches);
        printf("%s: %zu addresses compared\n", paths[i], c);
        checked += c;
    }
    assert_true(checked > 1000); /* libc alone: 500 symbols, most of them functions */
    assert_int_equal(mismatches, 0);
}

static void test_empty(void **state)
{
    (void)state;
    assert_null(sym_symtab_find(NULL, 0x1000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_as_libdwfl),
        cmocka_unit_test(test_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
