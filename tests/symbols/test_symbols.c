/*
 * tests/symbols/test_symbols.c — the symbolizer (src/symbols) on this test
 * process's own modules, told as MODULE records from dl_iterate_phdr: files
 * opened in the background (ltr_symbolizer_prewarm) give the same frames as
 * files opened by the lookups themselves, modules added while the prewarm
 * thread runs are still found, and a module whose file is missing gives
 * module+offset frames and is warned about only once a lookup needed it;
 * a call inside an inlined function gives the inlined frame and the frame
 * of the function it was inlined into; ltr_demangle on real C++ and Rust
 * names (both manglings), against what other demanglers print. Frames known
 * already (a trace's SYMBOLS chunk) are given for their file's addresses,
 * from any process, without opening it; an address they do not cover opens
 * it; and every address resolved comes back once from ltr_symbolizer_each.
 * Files with known frames that were bare where recorded, opened ahead
 * (ltr_symbolizer_prewarm_bare), give the same frames, problems and bare
 * files as files a lookup opens.
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

/* A call from code inlined into outer_probe: its return address is inside
 * both. The empty asm after each call keeps them from being tail calls. */
static unsigned inner_line, outer_line; /* the lines of those two calls */
__attribute__((noinline)) uintptr_t return_address(void);
__attribute__((noinline)) uintptr_t return_address(void) { return (uintptr_t)__builtin_return_address(0); }
static inline __attribute__((always_inline)) uintptr_t inlined_probe(void)
{
    uintptr_t r = return_address(); inner_line = __LINE__;
    __asm__ volatile("");
    return r;
}
__attribute__((noinline)) uintptr_t outer_probe(void);
__attribute__((noinline)) uintptr_t outer_probe(void)
{
    uintptr_t r = inlined_probe(); outer_line = __LINE__;
    __asm__ volatile("");
    return r;
}

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
 * libc (separate, compressed debug info when libc6-dbg is installed) and ltr's
 * own code (linked into this executable). */
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

typedef struct each_seen {
    size_t n, named_gone;
    uint64_t offsets[8];
} each_seen;

static void count_each(void *ctx, const char *path, const uint8_t *id, size_t idlen, int bare, uint64_t offset,
                       const ltr_sym_frame *frames, size_t n)
{
    (void)id, (void)idlen, (void)bare;
    each_seen *e = ctx;
    assert_true(n >= 1);
    assert_true(frames[n - 1].function || frames[n - 1].file);
    if (strstr(path, "libgone.so") && e->named_gone < 8)
        e->offsets[e->named_gone++] = offset;
    e->n++;
}

static void test_known_frames(void **state)
{
    (void)state;
    const uint64_t base = 0x7e5500000000ull, base2 = 0x7f0000000000ull;
    test_mod gone = {.bias = base, .nseg = 1};
    snprintf(gone.path, sizeof gone.path, "/nonexistent/ltr-test/libgone.so");
    gone.seg[0] = (ltr_sym_segment){base, base + 0x4000, 0, 5};
    test_mod again = gone; /* the same file in another process, elsewhere */
    again.bias = base2;
    again.seg[0] = (ltr_sym_segment){base2, base2 + 0x4000, 0, 5};
    ltr_symbolizer *s = ltr_symbolizer_new(NULL);
    assert_non_null(s);
    ltr_sym_frame known[2] = {{.function = "inlined_helper", .file = "gone.c", .line = 7},
                              {.function = "gone_fn", .file = "gone.c", .line = 30}};
    assert_int_equal(ltr_symbolizer_add_known(s, gone.path, NULL, 0, 0x1234, known, 2), 0);
    assert_int_equal(ltr_symbolizer_add_known(s, gone.path, NULL, 0, 0x1234, known + 1, 1), 0); /* first kept */
    assert_int_equal(ltr_symbolizer_add_known(s, gone.path, NULL, 0, 0x10, known, 0), -EINVAL);
    add(s, &gone);
    ltr_sym_module r = {.pid = PID + 1, .loaded = 1, .load_bias = again.bias, .path = again.path,
                        .segments = again.seg, .segment_count = again.nseg};
    assert_int_equal(ltr_symbolizer_add_module(s, &r), 0);
    assert_int_equal(ltr_symbolizer_prewarm(s), 0); /* nothing to open: its frames are known */
    ltr_sym_frame f[4];
    for (int pass = 0; pass < 2; pass++) {
        uint64_t addr = (pass ? base2 : base) + 0x1234; /* known by the return address's ELF address */
        size_t n = ltr_symbolize(s, pass ? PID + 1 : PID, 1, addr, f, 4);
        assert_int_equal(n, 2);
        assert_string_equal(f[0].function, "inlined_helper");
        assert_true(f[0].inlined);
        assert_string_equal(f[1].function, "gone_fn");
        assert_int_equal(f[1].line, 30);
        assert_false(f[1].inlined);
        assert_true(f[0].address == addr && f[1].address == addr);
        assert_string_equal(f[1].module, gone.path);
        assert_true(f[1].offset == 0x1234);
    }
    assert_int_equal(ltr_symbolizer_problem_count(s), 0); /* never opened */
    /* named by a symbol table where recorded (no file): this machine's file is
     * asked first; it is missing, so they stand, and it is not named as a problem */
    ltr_sym_frame weak = {.function = "weak\nname\x1b[31m"};
    assert_int_equal(ltr_symbolizer_add_known(s, gone.path, NULL, 0, 0x3000, &weak, 1), 0);
    ltr_sym_frame later_weak = {.function = "other"}, later_strong = {.function = "better", .file = "b.c", .line = 9};
    assert_int_equal(ltr_symbolizer_add_known(s, gone.path, NULL, 0, 0x3000, &later_weak, 1), 0); /* first kept */
    assert_int_equal(ltr_symbolizer_add_known(s, gone.path, NULL, 0, 0x3800, &weak, 1), 0);
    assert_int_equal(ltr_symbolizer_add_known(s, gone.path, NULL, 0, 0x3800, &later_strong, 1), 0); /* DWARF wins */
    assert_int_equal(ltr_symbolize(s, PID, 1, base + 0x3800, f, 4), 1);
    assert_string_equal(f[0].function, "better");
    assert_int_equal(f[0].line, 9);
    assert_int_equal(ltr_symbolize(s, PID, 1, base + 0x3000, f, 4), 1);
    assert_string_equal(f[0].function, "weak?name?[31m"); /* no control character gets through */
    /* nor a C1 control, a lone continuation byte, a bidi override or a byte no UTF-8 has; é stays */
    ltr_sym_frame odd = {.function = "A\xc2\x9b" "B\x9b" "C\xe2\x80\xae" "D\xff" "\xc3\xa9"};
    assert_int_equal(ltr_symbolizer_add_known(s, gone.path, NULL, 0, 0x3900, &odd, 1), 0);
    assert_int_equal(ltr_symbolize(s, PID, 1, base + 0x3900, f, 4), 1);
    assert_string_equal(f[0].function, "A?B?C?D?\xc3\xa9");
    assert_int_equal(ltr_symbolizer_problem_count(s), 0);
    /* an address they do not cover opens the file, which is missing */
    size_t n = ltr_symbolize(s, PID, 1, base + 0x2000, f, 4);
    assert_int_equal(n, 1);
    assert_null(f[0].function);
    assert_int_equal(ltr_symbolizer_problem_count(s), 1);
    /* resolved here: the executable's frame, whose file names it better than a
     * stale symbol-table name; each hands out the named ones once */
    const test_mod *exe = holder((uint64_t)(uintptr_t)probe_target);
    assert_non_null(exe);
    ltr_sym_frame stale = {.function = "stale_name"};
    uint64_t at = (uint64_t)(uintptr_t)probe_target + 1;
    assert_int_equal(ltr_symbolizer_add_known(s, exe->path, NULL, 0, at - exe->bias, &stale, 1), 0);
    add(s, exe);
    size_t got = ltr_symbolize(s, PID, 1, at, f, 4);
    assert_string_equal(f[got - 1].function, "probe_target");
    each_seen e = {0};
    ltr_symbolizer_each(s, count_each, &e);
    assert_int_equal(e.named_gone, 0); /* the known ones are the trace's already; 0x2000 named nothing */
    assert_int_equal(e.n, 1);          /* probe_target, named here in place of the stale name */
    ltr_symbolizer_free(s);
}

/* One symbolizer each way: files opened ahead by ltr_symbolizer_prewarm_bare
 * (waited for: every one opened before the first lookup) count as not
 * opened until a lookup opens them, which takes them as they are. The
 * missing file has a build-id, so that its known frames are taken without
 * opening it (no debug file here could name them better). */
static void test_prewarm_bare_same(void **state)
{
    (void)state;
    const uint64_t base = 0x7e5500000000ull;
    const uint8_t id[20] = {0x1e, 0x55, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7};
    ltr_sym_segment seg = {base, base + 0x4000, 0, 5};
    const char *gone = "/nonexistent/ltr-test/libgone.so";
    ltr_sym_module r = {.pid = PID, .loaded = 1, .load_bias = base, .path = gone, .build_id = id,
                        .build_id_len = sizeof id, .segments = &seg, .segment_count = 1};
    const test_mod *exe = holder((uint64_t)(uintptr_t)probe_target);
    assert_non_null(exe);
    uint64_t at = (uint64_t)(uintptr_t)probe_target + 1;
    ltr_sym_frame weak = {.function = "exported_nearby"};
    ltr_symbolizer *s[2] = {ltr_symbolizer_new(NULL), ltr_symbolizer_new(NULL)}; /* s[1] prewarms */
    for (int k = 0; k < 2; k++) {
        assert_non_null(s[k]);
        assert_int_equal(ltr_symbolizer_add_known(s[k], gone, id, sizeof id, 0x1234, &weak, 1), 0);
        assert_int_equal(ltr_symbolizer_add_known(s[k], exe->path, NULL, 0, 0x10, &weak, 1), 0);
        ltr_symbolizer_known_bare(s[k], gone, id, sizeof id);
        ltr_symbolizer_known_bare(s[k], exe->path, NULL, 0);
        assert_int_equal(ltr_symbolizer_add_module(s[k], &r), 0);
        add(s[k], exe);
    }
    assert_int_equal(ltr_symbolizer_prewarm(s[1]), 0); /* their frames are known */
    assert_int_equal(ltr_symbolizer_prewarm_bare(s[1]), 1);
    int rc;
    while ((rc = ltr_symbolizer_prewarm_bare(s[1])) == -EBUSY)
        usleep(1000);
    assert_int_equal(rc, 0); /* both opened ahead: nothing left to open */
    ltr_sym_frame f[2][32];
    size_t n[2];
    for (int k = 0; k < 2; k++) { /* a known frame: the file not opened, bare as the trace said */
        n[k] = ltr_symbolize(s[k], PID, 1, base + 0x1234, f[k], 32);
        assert_int_equal(ltr_symbolizer_problem_count(s[k]), 0);
        assert_int_equal(ltr_symbolizer_nosyms_count(s[k]), 1);
    }
    assert_same_frames(f[0], n[0], f[1], n[1]);
    assert_string_equal(f[1][0].function, "exported_nearby");
    for (int k = 0; k < 2; k++) { /* a frame the trace did not name: the file is opened, and missing */
        n[k] = ltr_symbolize(s[k], PID, 1, base + 0x2000, f[k], 32);
        assert_int_equal(ltr_symbolizer_problem_count(s[k]), 1);
        assert_int_equal(ltr_symbolizer_nosyms_count(s[k]), 0);
    }
    assert_same_frames(f[0], n[0], f[1], n[1]);
    for (int k = 0; k < 2; k++)
        n[k] = ltr_symbolize(s[k], PID, 1, at, f[k], 32);
    assert_same_frames(f[0], n[0], f[1], n[1]);
    assert_string_equal(f[1][n[1] - 1].function, "probe_target");
    for (int k = 0; k < 2; k++) {
        assert_int_equal(ltr_symbolizer_nosyms_count(s[k]), 0); /* its file names it here */
        ltr_symbolizer_free(s[k]);
    }
}

/* The inlined function first, marked inlined, at the line of its call; then
 * the function it is inlined into, at the line where it was inlined. */
/* A trace's weak name (a symbol table where it was recorded: the .dynsym's
 * nearest export) and this machine's symbol-table-only file naming another
 * function at that address: this machine's is taken. It kept the weak one,
 * the two being equally without a source file. The file here is this test
 * without its DWARF (objcopy --strip-debug keeps .symtab). */
static void test_symtab_names_over_a_weak_known_name(void **state)
{
    (void)state;
    char dir[] = "/tmp/ltr-symtab-XXXXXX", cmd[PATH_MAX * 2 + 64];
    assert_non_null(mkdtemp(dir));
    uint64_t addr = (uint64_t)(uintptr_t)probe_target + 1;
    const test_mod *exe = holder(addr);
    assert_non_null(exe);
    test_mod m = *exe;
    snprintf(m.path, sizeof m.path, "%s/mod", dir);
    snprintf(cmd, sizeof cmd, "objcopy --strip-debug '%s' '%s'", exe->path, m.path);
    if (system(cmd) != 0)
        skip();
    ltr_symbolizer *s = ltr_symbolizer_new(NULL);
    assert_non_null(s);
    ltr_sym_frame weak = {.function = "an_export_before_it"};
    assert_int_equal(ltr_symbolizer_add_known(s, m.path, NULL, 0, addr - m.bias, &weak, 1), 0);
    add(s, &m);
    ltr_sym_frame f[4];
    size_t n = ltr_symbolize(s, PID, 1, addr, f, 4);
    assert_true(n >= 1);
    assert_non_null(f[n - 1].function);
    assert_string_equal(f[n - 1].function, "probe_target");
    assert_null(f[n - 1].file);
    ltr_symbolizer_free(s);
    unlink(m.path);
    rmdir(dir);
}

static void test_inlined_call_and_its_caller(void **state)
{
    (void)state;
    uint64_t addr = outer_probe();
    assert_non_null(holder(addr));
    ltr_symbolizer *s = ltr_symbolizer_new(NULL);
    assert_non_null(s);
    for (size_t i = 0; i < nmods; i++)
        add(s, &mods[i]);
    ltr_sym_frame f[8];
    size_t n = ltr_symbolize(s, PID, 1, addr, f, 8);
    assert_int_equal(n, 2);
    assert_string_equal(f[0].function, "inlined_probe");
    assert_true(f[0].inlined);
    assert_non_null(strstr(f[0].file, "test_symbols.c"));
    assert_int_equal(f[0].line, inner_line);
    assert_string_equal(f[1].function, "outer_probe");
    assert_false(f[1].inlined);
    assert_non_null(strstr(f[1].file, "test_symbols.c"));
    assert_int_equal(f[1].line, outer_line);
    ltr_symbolizer_free(s);
}

/* Mangled names from real binaries (nm of the demo, of rustc 1.95 and 1.63
 * builds of a small program, legacy and v0). Expected: C++ from binutils
 * c++filt and llvm-cxxfilt-14 (which agree); Rust legacy from
 * `c++filt -i --format=rust` (llvm-cxxfilt does not undo legacy escapes);
 * Rust v0 from llvm-cxxfilt-14, LLVM's own demangler (c++filt -i agrees). */
static const char *const demangled[][2] = {
    {"_ZN4demo5Cache6insertEi", "demo::Cache::insert(int)"},
    {"_ZNSt6vectorIPcSaIS0_EE17_M_realloc_insertIJRKS0_EEEvN9__gnu_cxx17__normal_iteratorIPS0_S2_EEDpOT_",
     "void std::vector<char*, std::allocator<char*> >::_M_realloc_insert<char* const&>"
     "(__gnu_cxx::__normal_iterator<char**, std::vector<char*, std::allocator<char*> > >, char* const&)"},
    {"_ZN4leak10leak_boxes17hdbcd6a07df41e9fcE", "leak::leak_boxes"},
    {"_ZN4leak14Cache$LT$T$GT$8remember17hff2064ca6ae12eceE", "leak::Cache<T>::remember"},
    {"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h362c3aa23832f830E.llvm.13497093203214503505",
     "std::rt::lang_start::{{closure}}"},
    {"_ZN79_$LT$hashbrown..raw..RawTable$LT$T$C$A$GT$$u20$as$u20$core..ops..drop..Drop$GT$4drop17h583e432e753ffc99E",
     "<hashbrown::raw::RawTable<T,A> as core::ops::drop::Drop>::drop"},
    {"_ZN98_$LT$alloc..vec..Vec$LT$T$GT$$u20$as$u20$alloc..vec..spec_from_iter..SpecFromIter$LT$T$C$I$GT$$GT$"
     "9from_iter17h07b55e0fadb4cf45E",
     "<alloc::vec::Vec<T> as alloc::vec::spec_from_iter::SpecFromIter<T,I>>::from_iter"},
    {"_RNvCscJEj9Xep4Zo_4leak10leak_boxes", "leak::leak_boxes"},
    {"_RNvMCscJEj9Xep4Zo_4leakINtB2_5CacheNtNtCslNYArtu3iFV_5alloc6string6StringE8rememberB2_",
     "<leak::Cache<alloc::string::String>>::remember"},
    {"_RNvMs4_NtCslNYArtu3iFV_5alloc7raw_vecNtB5_11RawVecInner11finish_growCsjrHSEGnQ3l9_3std",
     "<alloc::raw_vec::RawVecInner>::finish_grow"},
    {"_RNCINvNtCsdyIG5SqMl5y_3std2rt10lang_startuE0Cs3nG5cQELmqU_4leak.llvm.3960596687756285966",
     "std::rt::lang_start::<()>::{closure#0}"},
    {"_RNvXNtNtCsihNoVIYWwLU_5alloc3vec14spec_from_iterINtB4_3VecQAhj3e8_EINtB2_12SpecFromIterBU_INtNtNtNtCs6IL9"
     "ONYDOZW_4core4iter8adapters3map3MapINtNtNtB1z_3ops5range5RangejENCNvCs3nG5cQELmqU_4leak10leak_boxes0EE9"
     "from_iterB2L_",
     "<alloc::vec::Vec<&mut [u8; 1000]> as alloc::vec::spec_from_iter::SpecFromIter<&mut [u8; 1000], "
     "core::iter::adapters::map::Map<core::ops::range::Range<usize>, leak::leak_boxes::{closure#0}>>>::from_iter"},
    {"_RINvMNtCsgEmfK2I1SDS_4core3stre18trim_start_matchesReECsgY6Mt91CT9J_14rustc_demangle",
     "<str>::trim_start_matches::<&str>"},
};

static void test_demangle_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof demangled / sizeof *demangled; i++) {
        char *d = ltr_demangle(demangled[i][0]);
        if (!d || strcmp(d, demangled[i][1]))
            fail_msg("%s\n  gives    %s\n  expected %s", demangled[i][0], d ? d : "NULL", demangled[i][1]);
        free(d);
    }
    /* not mangled, or broken: NULL, the caller keeps the name as it is */
    const char *plain[] = {"main", "malloc", "_RNvC", "_ZN4leak", "_Rfoo", "", NULL};
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        assert_null(ltr_demangle(plain[i]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inlined_call_and_its_caller),
        cmocka_unit_test(test_symtab_names_over_a_weak_known_name),
        cmocka_unit_test(test_demangle_table),
        cmocka_unit_test(test_prewarm_same_frames),
        cmocka_unit_test(test_modules_added_during_prewarm),
        cmocka_unit_test(test_missing_module_file),
        cmocka_unit_test(test_known_frames),
        cmocka_unit_test(test_prewarm_bare_same),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
