/*
 * tests/analyze/test_symbols.c — the symbolizer (src/symbols) on this test
 * process's own modules, told as MODULE records from dl_iterate_phdr: files
 * opened in the background (ltr_symbolizer_prewarm) give the same frames as
 * files opened by the lookups themselves, modules added while the prewarm
 * thread runs are still found, and a module whose file is missing gives
 * module+offset frames and is warned about only once a lookup needed it.
 */
#include "symbols/symbols.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#define PID 4242
#define MAX_MODS 64

typedef struct test_mod {
    char path[PATH_MAX];
    uint64_t bias;
    ltr_sym_segment seg[16];
    size_t nseg;
} test_mod;

static test_mod mods[MAX_MODS];
static size_t nmods;

__attribute__((noinline)) int probe_target(int x);
__attribute__((noinline)) int probe_target(int x) { return x * 3 + 1; }

static int add_phdr(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    if (nmods == MAX_MODS || (info->dlpi_name[0] && info->dlpi_name[0] != '/'))
        return 0; /* the vDSO: nothing on disk */
    test_mod *m = &mods[nmods];
    if (!info->dlpi_name[0]) { /* the executable */
        ssize_t n = readlink("/proc/self/exe", m->path, sizeof m->path - 1);
        if (n <= 0)
            return 0;
        m->path[n] = 0;
    } else
        snprintf(m->path, sizeof m->path, "%s", info->dlpi_name);
    m->bias = info->dlpi_addr;
    m->nseg = 0;
    for (int i = 0; i < info->dlpi_phnum && m->nseg < 16; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        m->seg[m->nseg++] = (ltr_sym_segment){info->dlpi_addr + ph->p_vaddr,
                                              info->dlpi_addr + ph->p_vaddr + ph->p_memsz, ph->p_offset,
                                              (uint8_t)(((ph->p_flags & PF_R) ? 1 : 0) | ((ph->p_flags & PF_W) ? 2 : 0) |
                                                        ((ph->p_flags & PF_X) ? 4 : 0))};
    }
    nmods++;
    return 0;
}

static int setup(void **state)
{
    (void)state;
    nmods = 0;
    dl_iterate_phdr(add_phdr, NULL);
    return nmods >= 2 ? 0 : -1;
}

static void add(ltr_symbolizer *s, const test_mod *m)
{
    ltr_sym_module r = {.pid = PID, .ts = 0, .loaded = 1, .load_bias = m->bias, .path = m->path,
                        .segments = m->seg, .segment_count = m->nseg}; /* no build-id: not checked */
    assert_int_equal(ltr_symbolizer_add_module(s, &r), 0);
}

/* The module holding addr, or NULL. */
static const test_mod *holder(uint64_t addr)
{
    for (size_t i = 0; i < nmods; i++)
        for (size_t k = 0; k < mods[i].nseg; k++)
            if (addr >= mods[i].seg[k].start && addr < mods[i].seg[k].end)
                return &mods[i];
    return NULL;
}

static void assert_same_str(const char *a, const char *b)
{
    assert_true((!a && !b) || (a && b && !strcmp(a, b)));
}

static void assert_same_frames(const ltr_sym_frame *a, size_t na, const ltr_sym_frame *b, size_t nb)
{
    assert_int_equal(na, nb);
    for (size_t i = 0; i < na; i++) {
        assert_true(a[i].address == b[i].address && a[i].offset == b[i].offset);
        assert_true(a[i].line == b[i].line && a[i].inlined == b[i].inlined);
        assert_same_str(a[i].module, b[i].module);
        assert_same_str(a[i].function, b[i].function);
        assert_same_str(a[i].file, b[i].file);
    }
}

/* Return addresses (a call's next instruction) inside: this executable,
 * libc (separate, compressed debug info when libc6-dbg is installed) and libltr. */
static size_t probe_addresses(uint64_t *out)
{
    void *libc_fn = dlsym(RTLD_DEFAULT, "fopen");
    uint64_t a[] = {(uint64_t)(uintptr_t)probe_target + 1, (uint64_t)(uintptr_t)libc_fn + 1,
                    (uint64_t)(uintptr_t)ltr_symbolizer_new + 1};
    size_t n = 0;
    for (size_t i = 0; i < sizeof a / sizeof *a; i++)
        if (holder(a[i]))
            out[n++] = a[i];
    return n;
}

static void test_prewarm_same_frames(void **state)
{
    (void)state;
    uint64_t addr[3];
    size_t naddr = probe_addresses(addr);
    assert_true(naddr >= 2);
    ltr_symbolizer *fg = ltr_symbolizer_new(NULL), *bg = ltr_symbolizer_new(NULL);
    assert_non_null(fg);
    assert_non_null(bg);
    assert_int_equal(ltr_symbolizer_prewarm(bg), 0); /* no modules yet: nothing to open */
    for (size_t i = 0; i < nmods; i++) {
        add(fg, &mods[i]);
        add(bg, &mods[i]);
    }
    assert_int_equal(ltr_symbolizer_prewarm(bg), 1);
    for (size_t i = 0; i < naddr; i++) {
        ltr_sym_frame a[32], b[32];
        size_t na = ltr_symbolize(fg, PID, 1, addr[i], a, 32);
        size_t nb = ltr_symbolize(bg, PID, 1, addr[i], b, 32);
        assert_same_frames(a, na, b, nb);
        assert_string_equal(a[na - 1].module, holder(addr[i])->path);
    }
    ltr_sym_frame f[32];
    size_t n = ltr_symbolize(fg, PID, 1, addr[0], f, 32);
    assert_non_null(f[n - 1].function); /* the executable's symbol table at least */
    assert_string_equal(f[n - 1].function, "probe_target");
    assert_int_equal(ltr_symbolizer_problem_count(fg), 0);
    assert_int_equal(ltr_symbolizer_problem_count(bg), 0);
    ltr_symbolizer_free(fg);
    ltr_symbolizer_free(bg);
}

/* Modules added while the prewarm thread may still run: the lookups open them. */
static void test_modules_added_during_prewarm(void **state)
{
    (void)state;
    uint64_t addr[3];
    size_t naddr = probe_addresses(addr);
    ltr_symbolizer *fg = ltr_symbolizer_new(NULL), *bg = ltr_symbolizer_new(NULL);
    assert_non_null(fg);
    assert_non_null(bg);
    for (size_t i = 0; i < nmods; i++)
        add(fg, &mods[i]);
    add(bg, &mods[0]);
    int rc = ltr_symbolizer_prewarm(bg);
    assert_true(rc == 1 || rc == 0);
    for (size_t i = 1; i < nmods; i++)
        add(bg, &mods[i]);
    rc = ltr_symbolizer_prewarm(bg); /* busy, or a second thread for the new ones */
    assert_true(rc == 1 || rc == -EBUSY);
    for (size_t i = 0; i < naddr; i++) {
        ltr_sym_frame a[32], b[32];
        size_t na = ltr_symbolize(fg, PID, 1, addr[i], a, 32);
        size_t nb = ltr_symbolize(bg, PID, 1, addr[i], b, 32);
        assert_same_frames(a, na, b, nb);
    }
    ltr_symbolizer_free(fg);
    ltr_symbolizer_free(bg); /* may stop a thread still at work */
}

/* A module whose file is not here: module+offset, and a problem once a lookup needed it. */
static void test_missing_module_file(void **state)
{
    (void)state;
    const uint64_t base = 0x7e5500000000ull;
    test_mod gone = {.bias = base, .nseg = 1};
    snprintf(gone.path, sizeof gone.path, "/nonexistent/ltr-test/libgone.so");
    gone.seg[0] = (ltr_sym_segment){base, base + 0x4000, 0, 5};
    ltr_symbolizer *fg = ltr_symbolizer_new(NULL), *bg = ltr_symbolizer_new(NULL), *unused = ltr_symbolizer_new(NULL);
    assert_non_null(fg);
    assert_non_null(bg);
    assert_non_null(unused);
    add(fg, &gone);
    add(bg, &gone);
    add(unused, &gone);
    add(unused, &mods[0]);
    assert_int_equal(ltr_symbolizer_prewarm(bg), 1);
    assert_int_equal(ltr_symbolizer_prewarm(unused), 1);
    assert_int_equal(ltr_symbolizer_problem_count(bg), 0); /* tried, but no lookup needed it yet */
    ltr_sym_frame a[4], b[4];
    size_t na = ltr_symbolize(fg, PID, 1, base + 0x1234, a, 4);
    size_t nb = ltr_symbolize(bg, PID, 1, base + 0x1234, b, 4);
    assert_same_frames(a, na, b, nb);
    assert_int_equal(na, 1);
    assert_string_equal(a[0].module, gone.path);
    assert_null(a[0].function);
    assert_true(a[0].offset == 0x1234);
    for (ltr_symbolizer *s = fg;; s = bg) {
        assert_int_equal(ltr_symbolizer_problem_count(s), 1);
        const char *path, *why;
        ltr_symbolizer_problem_at(s, 0, &path, &why);
        assert_string_equal(path, gone.path);
        assert_non_null(strstr(why, "not readable"));
        if (s == bg)
            break;
    }
    /* the executable's frames only: the missing file is never named */
    ltr_sym_frame f[32];
    ltr_symbolize(unused, PID, 1, (uint64_t)(uintptr_t)probe_target + 1, f, 32);
    assert_int_equal(ltr_symbolizer_problem_count(unused), 0);
    ltr_symbolizer_free(fg);
    ltr_symbolizer_free(bg);
    ltr_symbolizer_free(unused);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prewarm_same_frames),
        cmocka_unit_test(test_modules_added_during_prewarm),
        cmocka_unit_test(test_missing_module_file),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
