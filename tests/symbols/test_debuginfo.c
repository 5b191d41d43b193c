/*
 * tests/symbols/test_debuginfo.c — elfdebug/debuginfo.c, the find_debuginfo
 * callback, on copies of this test's own executable (built with -g): with
 * DEBUGINFOD_URLS unset, symbolizing a module that has no debug file here
 * (stripped, with or without a .gnu_debuglink to a missing file) does not
 * load libdebuginfod into the process (/proc/self/maps), which elfutils'
 * standard callback did; a debug file found by build-id under a debug
 * directory or by .gnu_debuglink in each place elfutils looks (beside the
 * file, .debug/, an absolute directory with the file's directory or a tail
 * of it under it, FILE.debug with no debuglink, beside a symlink's target;
 * past a file of another build-id, past a CRC that differs where the debug
 * path asks for the check, '-' and '+' before the path and an entry) is the
 * one dwfl_standard_find_debuginfo finds, by the same name, is seen by
 * sym_elf_debuglink_here (symbols.c's check before opening a file) when
 * found by name, and names the probe as the unstripped executable does;
 * with DEBUGINFOD_URLS set (a loopback address nothing answers on), the
 * debuginfod client is asked, as before. A module's path that leads to a
 * FIFO (a symlink the traced program left there) is never opened, nor is a
 * FIFO at a debug file's name, even when a check by name saw a regular file
 * there (the race of a traced program swapping it, made deterministic by
 * this test's stat()). A dwz alternate file (.gnu_debugaltlink) is found
 * where and as libdwfl finds it, by its build-id, never a FIFO. The lookup
 * by build-id under the debug directories (a --debug-dir may be another
 * user's) passes over a FIFO, a symlink to one and a file of another
 * build-id there for the debug file of a later directory, and asks
 * debuginfod, when configured, without opening those names again; libc's
 * debug file (libc6-dbg, where installed) and a dwz alternate file under
 * .build-id/ are found under the names elfutils' lookup gives.
 */
#include "elfdebug/debuginfo.h"
#include "symbols/dwarf.h"
#include "util/testutil.h"

#include <dlfcn.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

static const char *box; /* the sandbox: every layout is under it */
__attribute__((noinline)) int probe(int x);
__attribute__((noinline)) int probe(int x) { return x * 7 + 1; }

static int main_bias(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    *(uintptr_t *)arg = info->dlpi_addr;
    return 1; /* the executable comes first */
}

/* The probe's ELF virtual address, the same in every copy of the file. */
static uint64_t probe_vaddr(void)
{
    uintptr_t bias = 0;
    dl_iterate_phdr(main_bias, &bias);
    return (uint64_t)((uintptr_t)probe - bias);
}

static int debuginfod_loaded(void)
{
    char *maps = tu_read_file("/proc/self/maps");
    assert_non_null(maps);
    int loaded = strstr(maps, "libdebuginfod") != NULL;
    free(maps);
    return loaded;
}

/* The debug file libdwfl takes for path with find_debuginfo (malloc'd, NULL if none). */
static char *debug_file_by(Dwfl_Callbacks *cb, const char *path, char **debug_path)
{
    cb->find_elf = dwfl_build_id_find_elf;
    cb->section_address = dwfl_offline_section_address;
    cb->debuginfo_path = debug_path;
    Dwfl *d = dwfl_begin(cb);
    assert_non_null(d);
    Dwfl_Module *m = dwfl_report_elf(d, path, path, -1, 0, false);
    assert_non_null(m);
    dwfl_report_end(d, NULL, NULL);
    void **userdata;
    const char *found = NULL;
    dwfl_module_info(m, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
    *userdata = debug_path;
    Dwarf_Addr bias;
    dwfl_module_getdwarf(m, &bias);
    dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, NULL, &found);
    char *copy = found ? strdup(found) : NULL;
    dwfl_end(d);
    return copy;
}

/* Symbolizes the probe in the copy at path as the symbolizer does (dwarf.c). */
static size_t resolve_probe(const char *path, const char *debug_path, sym_level *lv, size_t cap)
{
    char *dp = strdup(debug_path), *problem = NULL;
    sym_elf *e = sym_elf_open(path, NULL, 0, &dp, &problem);
    assert_non_null(e);
    size_t n = sym_elf_resolve(e, probe_vaddr(), lv, cap);
    sym_elf_close(e);
    free(dp);
    return n;
}

static void free_levels(sym_level *lv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(lv[i].function);
        free(lv[i].file);
    }
}

static int setup(void **state)
{
    (void)state;
    unsetenv("DEBUGINFOD_URLS");
    box = tu_sandbox();
    /* keep.dbg: the DWARF; stripped: no symbols at all, no debuglink */
    return tu_ok(tu_run("set -e; cd %s; objcopy --only-keep-debug /proc/%d/exe keep.dbg;"
                        "strip --strip-all -o stripped /proc/%d/exe", box, (int)getpid(), (int)getpid()));
}

static int teardown(void **state)
{
    (void)state;
    tu_sandbox_end();
    return 0;
}

/* A stripped copy with no debug file anywhere, and one whose debuglink
 * names a file that is not there (GCC's cc1plus on Debian): nothing named,
 * elfutils' local lookups done, and no libdebuginfod in the process. */
static void test_no_debug_file_no_debuginfod(void **state)
{
    (void)state;
    assert_false(debuginfod_loaded());
    tu_expect_ok(tu_run("set -e; cd %s; mkdir -p none; cp stripped none/bare; cp keep.dbg none/gone.dbg;"
                        "objcopy --add-gnu-debuglink=none/gone.dbg stripped none/linked; rm none/gone.dbg", box));
    const char *mods[] = {"bare", "linked"};
    for (size_t i = 0; i < 2; i++) {
        char path[4200], *dp = strdup(":.debug:/usr/lib/debug"), *problem = NULL;
        snprintf(path, sizeof path, "%s/none/%s", box, mods[i]);
        sym_elf *e = sym_elf_open(path, NULL, 0, &dp, &problem);
        assert_non_null(e);
        assert_int_equal(sym_elf_has_symbols(e), 0); /* looked for DWARF and .symtab: none */
        assert_int_equal(sym_elf_debuglink_here(path, dp), 0);
        sym_level lv[4];
        size_t n = sym_elf_resolve(e, probe_vaddr(), lv, 4);
        assert_true(n == 0 || !lv[0].file);
        free_levels(lv, n);
        sym_elf_close(e);
        free(dp);
        assert_false(debuginfod_loaded());
    }
}

/* One place a debug file may be: shell commands (run in the sandbox, $B
 * its path, $X$R the build-id of every copy) making the module mod and its
 * debug file, the debug path and the file elfutils should find. Every
 * debuglink names keep.dbg (objcopy takes the CRC from that file). */
typedef struct layout {
    const char *make, *debug_path, *mod, *expect;
} layout;

static const layout layouts[] = {
    {"mkdir -p bid/debug/.build-id/$X; cp stripped bid/mod; cp keep.dbg bid/debug/.build-id/$X/$R.debug",
     "$B/bid/debug", "bid/mod", "bid/debug/.build-id/$X/$R.debug"},
    {"mkdir -p beside; cp keep.dbg beside/; objcopy --add-gnu-debuglink=keep.dbg stripped beside/mod",
     ":.debug:/usr/lib/debug", "beside/mod", "beside/keep.dbg"},
    {"mkdir -p dot/.debug; cp keep.dbg dot/.debug/; objcopy --add-gnu-debuglink=keep.dbg stripped dot/mod",
     ":.debug:/usr/lib/debug", "dot/mod", "dot/.debug/keep.dbg"},
    {"mkdir -p abs \"absdbg/$B/abs\"; cp keep.dbg \"absdbg/$B/abs/\"; objcopy --add-gnu-debuglink=keep.dbg stripped abs/mod",
     ":.debug:$B/absdbg", "abs/mod", "absdbg/$B/abs/keep.dbg"},
    {"mkdir -p tail taildbg/tail; cp keep.dbg taildbg/tail/; objcopy --add-gnu-debuglink=keep.dbg stripped tail/mod",
     ":.debug:$B/taildbg", "tail/mod", "taildbg/tail/keep.dbg"},
    {"mkdir -p invented; cp stripped invented/mod; cp keep.dbg invented/mod.debug", ":.debug:/usr/lib/debug",
     "invented/mod", "invented/mod.debug"},
    {"mkdir -p real sym; cp keep.dbg real/; objcopy --add-gnu-debuglink=keep.dbg stripped real/mod;"
     "ln -sf ../real/mod sym/mod", ":.debug:/usr/lib/debug", "sym/mod", "real/keep.dbg"},
    /* a file of that name with another build-id is passed over */
    {"mkdir -p wrongid/.debug; cp keep.dbg wrongid/.debug/; objcopy --add-gnu-debuglink=keep.dbg stripped wrongid/mod;"
     "cp /bin/true wrongid/keep.dbg", ":.debug:/usr/lib/debug", "wrongid/mod", "wrongid/.debug/keep.dbg"},
    /* no build-id in the module: the debuglink's CRC, where the path asks
     * for it (by default; '-' before the path or an entry says no) */
    {"mkdir -p crc/.debug; objcopy --remove-section=.note.gnu.build-id stripped crc/noid; cp keep.dbg crc/.debug/;"
     "objcopy --add-gnu-debuglink=keep.dbg crc/noid crc/mod; cp keep.dbg crc/; echo >>crc/keep.dbg",
     ":.debug:/usr/lib/debug", "crc/mod", "crc/.debug/keep.dbg"},
    {"mkdir -p nocrc/.debug; objcopy --remove-section=.note.gnu.build-id stripped nocrc/noid;"
     "cp keep.dbg nocrc/.debug/;"
     "objcopy --add-gnu-debuglink=keep.dbg nocrc/noid nocrc/mod; cp keep.dbg nocrc/; echo >>nocrc/keep.dbg",
     "-:.debug", "nocrc/mod", "nocrc/keep.dbg"},
    {"mkdir -p entrycrc/.debug; objcopy --remove-section=.note.gnu.build-id stripped entrycrc/noid;"
     "cp keep.dbg entrycrc/.debug/; objcopy --add-gnu-debuglink=keep.dbg entrycrc/noid entrycrc/mod;"
     "cp keep.dbg entrycrc/; echo >>entrycrc/keep.dbg; echo >>entrycrc/.debug/keep.dbg",
     "-+:.debug", "entrycrc/mod", "entrycrc/.debug/keep.dbg"},
};

static void assert_same_levels(const sym_level *a, size_t na, const sym_level *b, size_t nb)
{
    assert_int_equal(na, nb);
    for (size_t i = 0; i < na; i++) {
        assert_string_equal(a[i].function, b[i].function);
        assert_string_equal(a[i].file, b[i].file);
        assert_int_equal(a[i].line, b[i].line);
    }
}

static void test_found_as_elfutils_finds(void **state)
{
    (void)state;
    sym_level want[4];
    size_t nwant = resolve_probe("/proc/self/exe", ":.debug:/usr/lib/debug", want, 4);
    assert_true(nwant >= 1 && want[nwant - 1].file && strstr(want[nwant - 1].file, "test_debuginfo.c"));
    for (size_t i = 0; i < sizeof layouts / sizeof *layouts; i++) {
        const layout *l = &layouts[i];
        tu_result r = tu_run("set -e; cd %s; B=$PWD; id=$(readelf -n stripped | sed -n 's/.*Build ID: //p');"
                             "X=${id%%${id#??}}; R=${id#??}; %s; realpath %s; echo \"%s\"",
                             box, l->make, l->expect, l->debug_path);
        char expect[4200], debug_path[4200], path[4200];
        assert_int_equal(r.status, 0);
        assert_int_equal(sscanf(r.out, "%4199s %4199s", expect, debug_path), 2);
        tu_free(&r);
        snprintf(path, sizeof path, "%s/%s", box, l->mod);
        char *dp = debug_path;
        Dwfl_Callbacks ours = {.find_debuginfo = dbg_find_debuginfo};
        Dwfl_Callbacks standard = {.find_debuginfo = dwfl_standard_find_debuginfo};
        char *a = debug_file_by(&ours, path, &dp), *b = debug_file_by(&standard, path, &dp);
        char *real = a ? realpath(a, NULL) : NULL;
        if (!real || !b || strcmp(a, b) || strcmp(real, expect))
            fprintf(stderr, "%s: ours %s, elfutils' %s, wanted %s\n", l->mod, a, b, expect);
        assert_non_null(real);
        assert_non_null(b);
        assert_string_equal(a, b);
        assert_string_equal(real, expect);
        /* symbols.c's check before opening a file sees the same places */
        assert_int_equal(sym_elf_debuglink_here(path, debug_path), !strstr(l->expect, ".build-id/"));
        sym_level lv[4];
        size_t n = resolve_probe(path, debug_path, lv, 4);
        assert_same_levels(lv, n, want, nwant);
        free_levels(lv, n);
        free(a);
        free(b);
        free(real);
        assert_false(debuginfod_loaded());
    }
    free_levels(want, nwant);
}

/* Last: it loads the client. DEBUGINFOD_URLS set, the lookup of a module
 * with no local debug file asks debuginfod (a loopback port nothing
 * listens on: refused at once), as elfutils' standard callback does. */
static void test_debuginfod_when_configured(void **state)
{
    (void)state;
    char cache[4200], path[4200], *dp = strdup(":.debug");
    snprintf(cache, sizeof cache, "%s/debuginfod-cache", box);
    snprintf(path, sizeof path, "%s/none/bare", box);
    setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
    setenv("DEBUGINFOD_URLS", "http://127.0.0.1:9/", 1);
    char *problem = NULL;
    sym_elf *e = sym_elf_open(path, NULL, 0, &dp, &problem);
    assert_non_null(e);
    assert_int_equal(sym_elf_has_symbols(e), 0);
    sym_elf_close(e);
    free(dp);
    unsetenv("DEBUGINFOD_URLS");
    if (!debuginfod_loaded() && !dlopen("libdebuginfod.so.1", RTLD_LAZY))
        skip(); /* elfutils without debuginfod here: nothing to ask */
    assert_true(debuginfod_loaded());
}

/* The FIFO a tu_fifo_writer waited at was never opened. */
static void expect_fifo_unopened(pid_t writer, const char *what)
{
    if (tu_fifo_opened(writer))
        fail_msg("the FIFO at %s was opened", what);
}

/* A module's path from a trace that leads, through a symlink the traced
 * program put there, to something not a regular file is never opened: a
 * device's driver acts on the open itself (a watchdog arms, a pty is made).
 * Seen on a FIFO: a writer waiting in open() is let through by any open of
 * its read side, so the writer still waits when the symbolizer is done. */
static void test_never_opens_a_fifo(void **state)
{
    (void)state;
    char fifo[4200], link[4200], *dp = strdup(":.debug");
    snprintf(fifo, sizeof fifo, "%s/fifo", box);
    snprintf(link, sizeof link, "%s/libswapped.so", box);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(symlink(fifo, link), 0);
    pid_t writer = tu_fifo_writer(fifo);
    char *problem = NULL;
    assert_null(sym_elf_open(link, NULL, 0, &dp, &problem));
    assert_non_null(problem);
    assert_string_equal(problem, "not a regular file here");
    free(problem);
    assert_int_equal(sym_elf_debuglink_here(link, dp), 0);
    expect_fifo_unopened(writer, "the end of the module's path");
    free(dp);
}

/* stat() of this name (when set) says "a regular file", whatever is there:
 * what a check made before a traced program swapped the file for a FIFO
 * saw (the review's LD_PRELOAD, made deterministic). libdwfl and ltr's
 * code linked into this test call it. */
static char stat_lie[4200];

int stat(const char *restrict path, struct stat *restrict st)
{
    static int (*real)(const char *restrict, struct stat *restrict);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "stat");
    int rc = real(path, st);
    if (rc == 0 && stat_lie[0] && !strcmp(path, stat_lie))
        st->st_mode = (st->st_mode & ~(mode_t)S_IFMT) | S_IFREG;
    return rc;
}

/* A debug file's name (the .gnu_debuglink beside the module) that a traced
 * program has made a symlink to a FIFO after any check by name: the lookup
 * never opens the FIFO (a writer waiting in open() is let through by any
 * open of its read side; libdwfl's blocking open waited for good without
 * one: root's `ltr analyze` hung) and goes on to the next place, .debug/,
 * where the debug file is. A FIFO there from the start is passed over the
 * same way, and so is a directory. */
static void test_never_opens_a_fifo_by_name(void **state)
{
    (void)state;
    tu_expect_ok(tu_run("set -e; cd %s; mkdir -p swap/.debug dir/.debug/keep.dbg dir/.debug/x;"
                        "cp keep.dbg swap/.debug/;"
                        "objcopy --add-gnu-debuglink=keep.dbg stripped swap/mod; mkfifo swap/fifo;"
                        "ln -s fifo swap/keep.dbg; cp keep.dbg dir/.debug/x/;"
                        "objcopy --add-gnu-debuglink=keep.dbg stripped dir/mod", box));
    char fifo[4200], path[4200], want[4200], *dp = strdup(":.debug:/usr/lib/debug");
    snprintf(fifo, sizeof fifo, "%s/swap/fifo", box);
    snprintf(path, sizeof path, "%s/swap/mod", box);
    snprintf(want, sizeof want, "%s/swap/.debug/keep.dbg", box);
    for (int lie = 1; lie >= 0; lie--) {
        snprintf(stat_lie, sizeof stat_lie, lie ? "%s/swap/keep.dbg" : "", box);
        pid_t writer = tu_fifo_writer(fifo);
        Dwfl_Callbacks ours = {.find_debuginfo = dbg_find_debuginfo};
        char *found = debug_file_by(&ours, path, &dp);
        stat_lie[0] = '\0';
        expect_fifo_unopened(writer, lie ? "the debuglink's name (stat saying a regular file)" : "the debuglink's name");
        if (!found || strcmp(found, want))
            fail_msg("found %s, wanted %s", found ? found : "nothing", want);
        free(found);
        sym_level lv[4], ref[4];
        size_t n = resolve_probe(path, dp, lv, 4), nref = resolve_probe("/proc/self/exe", dp, ref, 4);
        assert_same_levels(lv, n, ref, nref);
        free_levels(lv, n);
        free_levels(ref, nref);
    }
    /* a directory at the debuglink's name in .debug/: passed over as a file
     * that fails the checks, as libdwfl's open and checks of it do (so the
     * look in the tails of .debug/ below, x/, is not made either) */
    snprintf(path, sizeof path, "%s/dir/mod", box);
    Dwfl_Callbacks ours = {.find_debuginfo = dbg_find_debuginfo};
    char *found = debug_file_by(&ours, path, &dp);
    assert_null(found);
    free(dp);
}

/* Step (1), the build-id under each debug directory, where --debug-dir may
 * name one that another user writes: a FIFO at DIR/.build-id/xx/rest.debug,
 * a symlink to one, and a file of another build-id there are passed over
 * (libdwfl's blocking open of such a FIFO hung root's `ltr analyze`), and
 * the debug file under a later directory is found and names the probe. */
static void test_build_id_never_opens_a_fifo(void **state)
{
    (void)state;
    tu_result r = tu_run("set -e; cd %s; id=$(readelf -n stripped | sed -n 's/.*Build ID: //p');"
                         "X=${id%%${id#??}}; R=${id#??}; for d in b1 b2 b3 b4; do mkdir -p $d/.build-id/$X; done;"
                         "mkdir -p bmod; cp stripped bmod/mod; mkfifo bfifo b1/.build-id/$X/$R.debug;"
                         "ln -s $PWD/bfifo b2/.build-id/$X/$R.debug; cp /bin/true b3/.build-id/$X/$R.debug;"
                         "cp keep.dbg b4/.build-id/$X/$R.debug;"
                         "echo $PWD/b1/.build-id/$X/$R.debug $PWD/bfifo $(realpath b4/.build-id/$X/$R.debug)", box);
    assert_int_equal(r.status, 0);
    char fifos[2][4200], want[4200], path[4200], dirs[4200];
    assert_int_equal(sscanf(r.out, "%4199s %4199s %4199s", fifos[0], fifos[1], want), 3);
    tu_free(&r);
    snprintf(path, sizeof path, "%s/bmod/mod", box);
    snprintf(dirs, sizeof dirs, "%s/b1:%s/b2:%s/b3:%s/b4", box, box, box, box);
    for (int i = 0; i < 2; i++) { /* a writer at the FIFO in b1, then at the one b2's symlink names */
        pid_t writer = tu_fifo_writer(fifos[i]);
        char *dp = dirs;
        Dwfl_Callbacks ours = {.find_debuginfo = dbg_find_debuginfo};
        char *found = debug_file_by(&ours, path, &dp);
        expect_fifo_unopened(writer, fifos[i]);
        if (!found || strcmp(found, want))
            fail_msg("found %s, wanted %s", found ? found : "nothing", want);
        free(found);
    }
    sym_level lv[4], ref[4];
    size_t n = resolve_probe(path, dirs, lv, 4), nref = resolve_probe("/proc/self/exe", ":.debug", ref, 4);
    assert_same_levels(lv, n, ref, nref);
    free_levels(lv, n);
    free_levels(ref, nref);
    /* with debuginfod configured (a loopback port nothing listens on) and
     * no valid file under the directories, the client is asked without the
     * directories' names being opened again (the standard callback's own
     * step (1) would open the FIFO) */
    char cache[4200];
    snprintf(cache, sizeof cache, "%s/debuginfod-cache", box);
    snprintf(dirs, sizeof dirs, "%s/b1:%s/b2:%s/b3", box, box, box);
    setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
    setenv("DEBUGINFOD_URLS", "http://127.0.0.1:9/", 1);
    pid_t writer = tu_fifo_writer(fifos[0]);
    char *dp = dirs;
    Dwfl_Callbacks ours = {.find_debuginfo = dbg_find_debuginfo};
    char *found = debug_file_by(&ours, path, &dp);
    unsetenv("DEBUGINFOD_URLS");
    expect_fifo_unopened(writer, "the first debug directory's build-id path, debuginfod configured");
    assert_null(found);
}

static int find_libc(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    if (strstr(info->dlpi_name, "/libc.so"))
        snprintf(arg, 4200, "%s", info->dlpi_name);
    return 0;
}

/* A system library whose debug file is installed by build-id (Debian's
 * libc6-dbg: /usr/lib/debug/.build-id/xx/rest.debug) is found there,
 * under the name elfutils' own lookup gives. */
static void test_build_id_system_library(void **state)
{
    (void)state;
    char libc[4200] = "", *dp = "/usr/lib/debug";
    dl_iterate_phdr(find_libc, libc);
    tu_result r = tu_run("id=$(readelf -n '%s' | sed -n 's/.*Build ID: //p'); X=${id%%${id#??}}; R=${id#??};"
                         "test -n \"$id\" && test -f /usr/lib/debug/.build-id/$X/$R.debug", libc);
    bool installed = libc[0] && r.status == 0;
    tu_free(&r);
    if (!installed) {
        printf("skipped: no debug file of libc (%s) under /usr/lib/debug/.build-id (libc6-dbg)\n", libc);
        skip();
    }
    Dwfl_Callbacks ours = {.find_debuginfo = dbg_find_debuginfo};
    Dwfl_Callbacks standard = {.find_debuginfo = dwfl_standard_find_debuginfo};
    char *a = debug_file_by(&ours, libc, &dp), *b = debug_file_by(&standard, libc, &dp);
    if (!a || !b || strcmp(a, b) || !strstr(a, "/usr/lib/debug/.build-id/"))
        fail_msg("%s: ours %s, elfutils' %s", libc, a, b);
    free(a);
    free(b);
}

/* The dwz alternate file (.gnu_debugaltlink) libdwfl asks for once a debug
 * file's DWARF is open: find_debuginfo with the debug file's name, the
 * link's name and no CRC. What each callback answered, through this. */
typedef int find_debuginfo_fn(Dwfl_Module *, void **, const char *, Dwarf_Addr, const char *, const char *,
                              GElf_Word, char **);
static find_debuginfo_fn *alt_inner;
static char *alt_found;

static int alt_recorder(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                        const char *file_name, const char *debuglink, GElf_Word crc, char **name)
{
    int fd = alt_inner(mod, userdata, modname, base, file_name, debuglink, crc, name);
    if (debuglink && !strcmp(debuglink, "dwz.dbg")) {
        free(alt_found);
        alt_found = strdup(fd >= 0 && *name ? *name : "none");
    }
    return fd;
}

/* The alternate file the callback finds for the module at path (malloc'd,
 * "none"), and whether libdw took it (dwarf_getalt). */
static char *alt_file_by(find_debuginfo_fn *cb, const char *path, char **debug_path, bool *taken)
{
    alt_inner = cb;
    alt_found = NULL;
    Dwfl_Callbacks c = {.find_elf = dwfl_build_id_find_elf, .find_debuginfo = alt_recorder,
                         .section_address = dwfl_offline_section_address, .debuginfo_path = debug_path};
    Dwfl *d = dwfl_begin(&c);
    Dwfl_Module *m = dwfl_report_elf(d, path, path, -1, 0, false);
    dwfl_report_end(d, NULL, NULL);
    void **userdata;
    dwfl_module_info(m, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
    *userdata = debug_path;
    Dwarf_Addr bias;
    Dwarf *dw = dwfl_module_getdwarf(m, &bias);
    *taken = dw && dwarf_getalt(dw);
    dwfl_end(d);
    return alt_found;
}

/* The debug file (beside the module, by its debuglink) names a dwz
 * alternate file by .gnu_debugaltlink (dwz.dbg, with the module's own
 * build-id: a copy of the debug file serves). Found as libdwfl finds it:
 * beside the debug file, in its .dwz/, in its .debug/ past one with another
 * build-id; and a FIFO at its name is passed over, never opened. */
static void test_dwz_alternate_file(void **state)
{
    (void)state;
    tu_expect_ok(tu_run("set -e; cd %s; id=$(readelf -n stripped | sed -n 's/.*Build ID: //p');"
                        "perl -e 'print \"dwz.dbg\\0\", pack(\"H*\", $ARGV[0])' $id >altlink.bin;"
                        "objcopy --add-section .gnu_debugaltlink=altlink.bin keep.dbg alt.dbg;"
                        "for d in altbeside altdwz altwrong altfifo; do mkdir -p $d/.dwz $d/.debug;"
                        "  cp alt.dbg $d/keep.dbg;"
                        "  objcopy --add-gnu-debuglink=keep.dbg stripped $d/mod; done;"
                        "cp keep.dbg altbeside/dwz.dbg; cp keep.dbg altdwz/.dwz/dwz.dbg;"
                        "cp /bin/true altwrong/dwz.dbg; cp keep.dbg altwrong/.dwz/dwz.dbg;"
                        "cp keep.dbg altwrong/.debug/dwz.dbg;"
                        "mkfifo altfifo/fifo; ln -s fifo altfifo/dwz.dbg; cp keep.dbg altfifo/.debug/dwz.dbg", box));
    /* a file that fails the checks ends the look in its place (.dwz/ is
     * looked in only when the name is not there): the next place is .debug/ */
    static const char *const cases[][2] = {
        {"altbeside", "altbeside/dwz.dbg"},
        {"altdwz", "altdwz/.dwz/dwz.dbg"},
        {"altwrong", "altwrong/.debug/dwz.dbg"},
        {"altfifo", "altfifo/.debug/dwz.dbg"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char path[4200], want[4200], fifo[4200], *dp = strdup(":.debug:/usr/lib/debug");
        snprintf(path, sizeof path, "%s/%s/mod", box, cases[i][0]);
        snprintf(want, sizeof want, "%s/%s", box, cases[i][1]);
        snprintf(fifo, sizeof fifo, "%s/altfifo/fifo", box);
        bool is_fifo = !strcmp(cases[i][0], "altfifo"), taken = false;
        pid_t writer = is_fifo ? tu_fifo_writer(fifo) : 0;
        char *ours = alt_file_by(dbg_find_debuginfo, path, &dp, &taken);
        if (!ours || strcmp(ours, want) || !taken)
            fail_msg("%s: ours %s (taken %d), wanted %s", cases[i][0], ours, taken, want);
        if (is_fifo) {
            expect_fifo_unopened(writer, "the alternate file's name");
        } else { /* libdwfl's own lookup agrees (it would wait on the FIFO) */
            char *theirs = alt_file_by(dwfl_standard_find_debuginfo, path, &dp, &taken);
            if (!theirs || strcmp(ours, theirs))
                fail_msg("%s: ours %s, elfutils' %s", cases[i][0], ours, theirs);
            free(theirs);
        }
        free(ours);
        free(dp);
    }
}

/* A dwz alternate file found by step (1): the debug file (beside the
 * module) names one of another build-id, ID2, which is only under a debug
 * directory's .build-id/. Found there as libdwfl finds it, and past a
 * symlink to a FIFO at that name in an earlier directory, never opened. */
static void test_dwz_alternate_by_build_id(void **state)
{
    (void)state;
    tu_result r = tu_run(
        "set -e; cd %s; id=$(readelf -n stripped | sed -n 's/.*Build ID: //p');"
        "id2=$(printf %%s $id | tr 0-9a-f 1-9a-f0); X=${id2%%${id2#??}}; R=${id2#??};"
        "perl -e 'print \"dwz.dbg\\0\", pack(\"H*\", $ARGV[0])' $id2 >altlink2.bin;"
        "perl -e 'print pack(\"LLL\", 4, length($ARGV[0]) / 2, 3), \"GNU\\0\", pack(\"H*\", $ARGV[0])' $id2 >note2.bin;"
        "objcopy --update-section .note.gnu.build-id=note2.bin keep.dbg alt2.dbg;"
        "mkdir -p a2 a2fifo/.build-id/$X a2dir/.build-id/$X; cp alt2.dbg a2dir/.build-id/$X/$R.debug;"
        "objcopy --add-section .gnu_debugaltlink=altlink2.bin keep.dbg a2/keep.dbg;"
        "objcopy --add-gnu-debuglink=a2/keep.dbg stripped a2/mod; mkfifo a2fifo/fifo;"
        "ln -s $PWD/a2fifo/fifo a2fifo/.build-id/$X/$R.debug;"
        "readelf -n a2dir/.build-id/$X/$R.debug | grep -q \"Build ID: $id2\";"
        "echo $(realpath a2dir/.build-id/$X/$R.debug)", box);
    assert_int_equal(r.status, 0);
    char want[4200], path[4200], fifo[4200], with_fifo[4200], plain[4200];
    assert_int_equal(sscanf(r.out, "%4199s", want), 1);
    tu_free(&r);
    snprintf(path, sizeof path, "%s/a2/mod", box);
    snprintf(fifo, sizeof fifo, "%s/a2fifo/fifo", box);
    snprintf(with_fifo, sizeof with_fifo, ":.debug:%s/a2fifo:%s/a2dir", box, box);
    snprintf(plain, sizeof plain, ":.debug:%s/a2dir", box);
    bool taken = false;
    char *dp = plain;
    char *theirs = alt_file_by(dwfl_standard_find_debuginfo, path, &dp, &taken);
    char *ours = alt_file_by(dbg_find_debuginfo, path, &dp, &taken);
    if (!ours || !theirs || strcmp(ours, want) || strcmp(theirs, want) || !taken)
        fail_msg("ours %s (taken %d), elfutils' %s, wanted %s", ours, taken, theirs, want);
    free(ours);
    free(theirs);
    pid_t writer = tu_fifo_writer(fifo);
    dp = with_fifo;
    ours = alt_file_by(dbg_find_debuginfo, path, &dp, &taken);
    expect_fifo_unopened(writer, "the alternate file's build-id path");
    if (!ours || strcmp(ours, want) || !taken)
        fail_msg("past the FIFO: ours %s (taken %d), wanted %s", ours, taken, want);
    free(ours);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_debug_file_no_debuginfod),
        cmocka_unit_test(test_found_as_elfutils_finds),
        cmocka_unit_test(test_debuginfod_when_configured),
        cmocka_unit_test(test_never_opens_a_fifo),
        cmocka_unit_test(test_never_opens_a_fifo_by_name),
        cmocka_unit_test(test_dwz_alternate_file),
        cmocka_unit_test(test_build_id_never_opens_a_fifo),
        cmocka_unit_test(test_build_id_system_library),
        cmocka_unit_test(test_dwz_alternate_by_build_id),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
