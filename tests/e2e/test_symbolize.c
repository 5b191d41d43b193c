/*
 * tests/e2e/test_symbolize.c — the names of a trace's frames carried in the
 * trace (SYMBOLS chunks: src/analyze/embed.c, `ltr symbolize`): added at the
 * end of `ltr record` unless --no-symbols; the analysis of a trace whose
 * binaries are gone still names its leaks, and one whose binaries are here
 * says the same with them as without them; a merge keeps them; `ltr symbolize` refuses what it
 * cannot do (a trace cut short, one that has them, a full disk) and leaves
 * the file as it was.
 */
#include "util/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

static char demo_dir[4096];

/* A copy of the demo in dir, recorded with opts; returns the trace. */
static const char *record_demo(const char *dir, const char *opts, tu_result *out)
{
    static char trace[4200];
    tu_result r = tu_run("mkdir -p %s && cp '%s/leaky' '%s/libleaky-plugin.so' %s/", dir, demo_dir, demo_dir, dir);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    snprintf(trace, sizeof trace, "%s/leaky.ltr", dir);
    *out = tu_run("'%s' record %s -o '%s' -- \"$PWD/%s/leaky\"", tu_ltr(), opts, trace, dir);
    if (out->status != 0)
        fprintf(stderr, "record failed (%d): %s\n", out->status, out->err);
    assert_int_equal(out->status, 0);
    return trace;
}

static char *run_out(int want_status, const char *fmt, const char *a, const char *b)
{
    tu_result r = tu_run(fmt, tu_ltr(), a, b);
    if (r.status != want_status)
        fprintf(stderr, "status %d: %s\n", r.status, r.err);
    assert_int_equal(r.status, want_status);
    char *s = r.out;
    r.out = NULL;
    tu_free(&r);
    return s;
}

static long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* Recorded with its names, the binaries removed: the leaks are still named,
 * with their files and lines, and no module is said to lack symbols.
 * Without the trace's names (--local-symbols) they are not. */
static void names_travel_with_the_trace(void **state)
{
    (void)state;
    tu_result rec;
    const char *trace = record_demo("moved", "", &rec);
    assert_non_null(strstr(rec.err, "recorded addresses added to the trace"));
    tu_free(&rec);
    tu_result r = tu_run("rm moved/leaky moved/libleaky-plugin.so");
    assert_int_equal(r.status, 0);
    tu_free(&r);
    char *json = run_out(0, "'%s' analyze '%s' --format json --top 0 %s", trace, "");
    const char *leak = strstr(json, "\"function\":\"remember_session\"");
    assert_non_null(leak);
    assert_non_null(strstr(json, "leaky.c\""));
    assert_non_null(strstr(json, "\"function\":\"plugin_cache_add\""));
    assert_null(strstr(json, "was not symbolized"));
    assert_null(strstr(json, "has no symbols"));
    free(json);
    json = run_out(0, "'%s' analyze '%s' --format json --top 0 %s", trace, "--local-symbols");
    assert_null(strstr(json, "\"function\":\"remember_session\""));
    assert_non_null(strstr(json, "moved/leaky was not symbolized"));
    free(json);
    char *info = run_out(0, "'%s' info '%s' %s", trace, "");
    assert_non_null(strstr(info, " addresses named where it was recorded"));
    assert_non_null(strstr(info, "damage:      none"));
    assert_non_null(strstr(info, "state:       complete"));
    free(info);
}

/* Where the binaries are, the names a trace carries are the ones its files
 * give: every report the same with them as without. */
static void same_names_as_the_files(void **state)
{
    (void)state;
    tu_result rec;
    const char *trace = record_demo("here", "--no-symbols", &rec);
    assert_null(strstr(rec.err, "added to the trace"));
    tu_free(&rec);
    char *info = run_out(0, "'%s' info '%s' %s", trace, "--json");
    assert_non_null(strstr(info, "\"symbols\":0,"));
    free(info);
    char *local = run_out(0, "'%s' analyze '%s' --format json --top 0 %s", trace, "");
    char *folded_local = run_out(0, "'%s' export '%s' --format folded -o - %s", trace, "");
    long long before = file_size(trace);
    tu_result r = tu_run("'%s' symbolize '%s'", tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "ltr symbolize: names of "));
    tu_free(&r);
    assert_true(file_size(trace) > before);
    char *embedded = run_out(0, "'%s' analyze '%s' --format json --top 0 %s", trace, "");
    char *folded = run_out(0, "'%s' export '%s' --format folded -o - %s", trace, "");
    assert_string_equal(local, embedded);
    assert_string_equal(folded_local, folded);
    assert_non_null(strstr(embedded, "\"function\":\"remember_session\""));
    free(local);
    free(embedded);
    free(folded_local);
    free(folded);
    info = run_out(0, "'%s' info '%s' %s", trace, "--json");
    assert_null(strstr(info, "\"symbols\":0,"));
    assert_non_null(strstr(info, "\"complete\":true"));
    assert_non_null(strstr(info, "\"damage_count\":0"));
    free(info);
}

/* Names a symbol table gave where the trace was made (no DWARF there) give
 * way to better ones here: the debug file found later under --debug-dir
 * names the plugin's frames with their source file again. */
static void debug_info_here_wins(void **state)
{
    (void)state;
    tu_result r = tu_run("set -e; mkdir -p late; cp '%s/leaky' '%s/libleaky-plugin.so' late/; cd late;"
                         "id=$(readelf -n libleaky-plugin.so | sed -n 's/.*Build ID: //p');"
                         "mkdir -p debug/.build-id/${id%%${id#??}}; objcopy --only-keep-debug libleaky-plugin.so "
                         "debug/.build-id/${id%%${id#??}}/${id#??}.debug; strip --strip-debug libleaky-plugin.so",
                         demo_dir, demo_dir);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    r = tu_run("'%s' record -o late/leaky.ltr -- \"$PWD/late/leaky\"", tu_ltr());
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "added to the trace"));
    tu_free(&r);
    char *plain = run_out(0, "'%s' analyze '%s' --format json --top 0 %s", "late/leaky.ltr", "");
    const char *e = strstr(plain, "\"function\":\"plugin_cache_add\"");
    assert_non_null(e); /* its symbol table's name */
    assert_null(strstr(plain, "plugin.c\""));
    free(plain);
    char *dbg = run_out(0, "'%s' analyze '%s' --format json --top 0 %s", "late/leaky.ltr",
                        "--debug-dir $PWD/late/debug:/usr/lib/debug");
    assert_non_null(strstr(dbg, "\"function\":\"plugin_cache_add\""));
    assert_non_null(strstr(dbg, "plugin.c\""));
    free(dbg);
    /* a debug file named by .gnu_debuglink, beside the library only after the recording */
    r = tu_run("set -e; mkdir -p link; cp '%s/leaky' '%s/libleaky-plugin.so' link/; cd link;"
               "objcopy --only-keep-debug libleaky-plugin.so plugin.dbg; strip --strip-debug libleaky-plugin.so;"
               "objcopy --add-gnu-debuglink=plugin.dbg libleaky-plugin.so; mv plugin.dbg ../plugin.dbg.away",
               demo_dir, demo_dir);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    r = tu_run("'%s' record -o link/leaky.ltr -- \"$PWD/link/leaky\" && mv plugin.dbg.away link/plugin.dbg", tu_ltr());
    assert_int_equal(r.status, 0);
    tu_free(&r);
    char *linked = run_out(0, "'%s' analyze '%s' --format json --top 0 %s", "link/leaky.ltr", "");
    char *linked_local = run_out(0, "'%s' analyze '%s' --format json --top 0 %s", "link/leaky.ltr", "--local-symbols");
    assert_non_null(strstr(linked, "plugin.c\""));
    assert_string_equal(linked, linked_local);
    free(linked);
    free(linked_local);
    /* and with the plugin gone, the names the trace holds */
    r = tu_run("rm late/libleaky-plugin.so");
    tu_free(&r);
    char *gone = run_out(0, "'%s' analyze '%s' --format json --top 0 %s", "late/leaky.ltr", "");
    assert_non_null(strstr(gone, "\"function\":\"plugin_cache_add\""));
    assert_null(strstr(gone, "libleaky-plugin.so was not symbolized"));
    free(gone);
}

/* A module with neither a symbol table nor DWARF where recorded (its
 * names from its dynamic symbols) is still named as one without symbols,
 * with the advice on getting them, though its file is not opened again. */
/* A FIFO where a debug file would be (FILE.debug beside a stripped
 * program): libdwfl's open would wait on it for good (an attacker review
 * hung root's `ltr analyze` of a trace handed over so). The analysis goes on
 * without a debug file for that module, within the time limit. */
static void fifo_for_debug_file(void **state)
{
    (void)state;
    tu_result r = tu_run("set -e; mkdir -p fifo; cp '%s/leaky' '%s/libleaky-plugin.so' fifo/; cd fifo;"
                         "strip leaky libleaky-plugin.so; mkfifo leaky.debug libleaky-plugin.so.debug",
                         demo_dir, demo_dir);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    r = tu_run("'%s' record --no-symbols -o fifo/leaky.ltr -- \"$PWD/fifo/leaky\"", tu_ltr());
    assert_int_equal(r.status, 0);
    tu_free(&r);
    r = tu_run("timeout -s KILL 60 '%s' analyze fifo/leaky.ltr", tu_ltr());
    if (r.status != 0)
        fail_msg("ltr analyze beside FIFOs: %d (137: it hung)\n%s", r.status, r.err);
    assert_non_null(strstr(r.out, "plugin_cache_add")); /* named by the symbol table left */
    tu_free(&r);
}

static void bare_modules_still_warned(void **state)
{
    (void)state;
    tu_result r = tu_run("set -e; mkdir -p bare; cp '%s/leaky' '%s/libleaky-plugin.so' bare/;"
                         "strip --strip-all bare/libleaky-plugin.so", demo_dir, demo_dir);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    r = tu_run("'%s' record -o bare/leaky.ltr -- \"$PWD/bare/leaky\"", tu_ltr());
    assert_int_equal(r.status, 0);
    tu_free(&r);
    char *local = run_out(0, "'%s' analyze '%s' --format json --top 0 %s", "bare/leaky.ltr", "--local-symbols");
    char *known = run_out(0, "'%s' analyze '%s' --format json --top 0 %s", "bare/leaky.ltr", "");
    assert_non_null(strstr(local, "bare/libleaky-plugin.so has no symbols here"));
    assert_non_null(strstr(known, "bare/libleaky-plugin.so has no symbols here"));
    assert_non_null(strstr(known, "\"modules_without_symbols\":[{\"path\":"));
    assert_string_equal(local, known);
    free(local);
    free(known);
}

/* A library without a symbol table: its exported functions are named by its
 * dynamic symbols where the trace is recorded, its static ones not at all.
 * 'ltr symbolize' then opens the file for the unnamed frames, and took the
 * same dynamic-symbol names found there again as new: every run appended
 * them once more (perl, sqlite3, gcc: hundreds of addresses a run). Nothing
 * is added, however often. */
static void symbolize_again_adds_nothing(void **state)
{
    (void)state;
    tu_result r = tu_run(
        "set -e; mkdir -p mix; cd mix;"
        "printf '#include <stdlib.h>\\n"
        "static void *__attribute__((noinline)) inner(size_t n) { void *p = malloc(n); __asm__ volatile(\"\" ::: \"memory\"); return p; }\\n"
        "void *mix_alloc(size_t n) { void *p = inner(n); __asm__ volatile(\"\" ::: \"memory\"); return p; }\\n"
        "void *mix_alloc2(size_t n) { void *p = malloc(n); __asm__ volatile(\"\" ::: \"memory\"); return p; }\\n'"
        " | cc -shared -fPIC -O1 -o libmix.so -x c -;"
        "printf 'void *mix_alloc(unsigned long); void *mix_alloc2(unsigned long);\\n"
        "int main(void) { for (int i = 0; i < 3; i++) mix_alloc(100 + i); mix_alloc2(50); return 0; }\\n'"
        " | cc -o mix -x c - -L. -lmix -Wl,-rpath,'$ORIGIN'; strip --strip-all libmix.so");
    if (r.status != 0)
        fail_msg("building mix: %s", r.err);
    tu_free(&r);
    r = tu_run("'%s' record -o mix/mix.ltr -- \"$PWD/mix/mix\"", tu_ltr());
    assert_int_equal(r.status, 0);
    tu_free(&r);
    long long size = file_size("mix/mix.ltr");
    for (int i = 0; i < 2; i++) {
        r = tu_run("'%s' symbolize mix/mix.ltr", tu_ltr());
        assert_int_equal(r.status, 0);
        if (!strstr(r.err, "nothing to add"))
            fprintf(stderr, "ltr symbolize said: %s", r.err);
        assert_non_null(strstr(r.err, "nothing to add"));
        tu_free(&r);
    }
    assert_int_equal(file_size("mix/mix.ltr"), size);
    char *json = run_out(0, "'%s' analyze '%s' --format json --top 0 %s", "mix/mix.ltr", "");
    assert_non_null(strstr(json, "\"function\":\"mix_alloc2\""));
    free(json);
}

/* Two traces merged keep the names of both; one merged with a trace that
 * had none gets the rest from ltr symbolize, the others kept. */
static void merge_keeps_names(void **state)
{
    (void)state;
    tu_result rec;
    record_demo("m1", "", &rec);
    tu_free(&rec);
    record_demo("m2", "", &rec);
    tu_free(&rec);
    tu_result r = tu_run("'%s' merge m1/leaky.ltr m2/leaky.ltr -o m12.ltr && rm m1/leaky m2/leaky "
                         "m1/libleaky-plugin.so m2/libleaky-plugin.so", tu_ltr());
    assert_int_equal(r.status, 0);
    tu_free(&r);
    char *info = run_out(0, "'%s' info '%s' %s", "m12.ltr", "--json");
    assert_null(strstr(info, "\"symbols\":0,"));
    assert_non_null(strstr(info, "\"damage_count\":0"));
    free(info);
    char *json = run_out(0, "'%s' analyze '%s' --format json --top 0 %s", "m12.ltr", "");
    /* both processes' leak, named: m1's and m2's copies are two files */
    const char *first = strstr(json, "\"function\":\"remember_session\"");
    assert_non_null(first);
    assert_non_null(strstr(first + 1, "\"function\":\"remember_session\""));
    assert_null(strstr(json, "was not symbolized"));
    free(json);
    tu_result half;
    record_demo("m3", "--no-symbols", &half);
    tu_free(&half);
    r = tu_run("'%s' merge m1/leaky.ltr m3/leaky.ltr -o m123.ltr && '%s' symbolize m123.ltr && rm m3/leaky "
               "m3/libleaky-plugin.so", tu_ltr(), tu_ltr());
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "ltr symbolize: names of "));
    tu_free(&r);
    json = run_out(0, "'%s' analyze '%s' --format json --top 0 %s", "m123.ltr", "");
    size_t named = 0;
    for (const char *p = json; (p = strstr(p, "\"function\":\"remember_session\"")); p++)
        named++;
    assert_true(named >= 2); /* both processes' leak */
    assert_null(strstr(json, "was not symbolized"));
    free(json);
}

/* What symbolize cannot do, it says, with exit status 1, the file untouched. */
static void symbolize_refuses(void **state)
{
    (void)state;
    tu_result rec;
    const char *t = record_demo("refuse", "", &rec);
    tu_free(&rec);
    char trace[4200];
    snprintf(trace, sizeof trace, "%s", t);
    long long size = file_size(trace);
    tu_result r = tu_run("'%s' symbolize '%s'", tu_ltr(), trace);
    assert_int_equal(r.status, 0); /* named already: nothing more to add */
    assert_non_null(strstr(r.err, "nothing to add: the trace names "));
    assert_int_equal(file_size(trace), size);
    tu_free(&r);
    /* cut short: the recording did not finish */
    r = tu_run("'%s' record --no-symbols -o refuse/cut.ltr -- refuse/leaky && cp refuse/cut.ltr refuse/short.ltr && "
               "truncate -s -100 refuse/short.ltr && cp refuse/short.ltr refuse/short.orig", tu_ltr());
    assert_int_equal(r.status, 0);
    tu_free(&r);
    r = tu_run("'%s' symbolize refuse/short.ltr", tu_ltr());
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "cut short"));
    tu_free(&r);
    r = tu_run("cmp refuse/short.ltr refuse/short.orig");
    assert_int_equal(r.status, 0);
    tu_free(&r);
    /* a full disk: what was written is taken back */
    char lib[4300];
    snprintf(lib, sizeof lib, "%s/libltr-test-enospc.so", tu_test_bin(""));
    r = tu_run("cp refuse/cut.ltr refuse/full.orig && touch refuse/full.flag && LTR_TEST_DISK_FULL=$PWD/refuse/full.flag "
               "ASAN_OPTIONS=verify_asan_link_order=0 LD_PRELOAD='%s' '%s' symbolize refuse/cut.ltr", lib, tu_ltr());
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "No space left on device"));
    tu_free(&r);
    r = tu_run("cmp refuse/cut.ltr refuse/full.orig && '%s' symbolize refuse/cut.ltr", tu_ltr());
    assert_int_equal(r.status, 0); /* and once there is room, it is done */
    tu_free(&r);
    /* another user's trace: the names of files this user reads stay out of it */
    r = tu_run("cp refuse/cut.ltr refuse/theirs.ltr && cp refuse/cut.ltr refuse/theirs.orig && "
               "chown 65534 refuse/theirs.ltr && '%s' symbolize refuse/theirs.ltr", tu_ltr());
    if (geteuid() == 0) {
        assert_int_equal(r.status, 1);
        assert_non_null(strstr(r.err, "it is another user's (uid 65534)"));
        tu_free(&r);
        r = tu_run("cmp refuse/theirs.ltr refuse/theirs.orig");
        assert_int_equal(r.status, 0);
    }
    tu_free(&r);
    /* a symlink is not followed, a FIFO not opened as a trace (it would block) */
    r = tu_run("ln -s cut.ltr refuse/link.ltr && '%s' symbolize refuse/link.ltr", tu_ltr());
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "it is a symlink"));
    tu_free(&r);
    r = tu_run("mkfifo refuse/fifo.ltr && timeout 20 '%s' symbolize refuse/fifo.ltr", tu_ltr());
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "not a regular file"));
    tu_free(&r);
    /* bad usage and a missing file */
    r = tu_run("'%s' symbolize", tu_ltr());
    assert_int_equal(r.status, 2);
    tu_free(&r);
    r = tu_run("'%s' symbolize refuse/nosuch.ltr", tu_ltr());
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "nosuch.ltr"));
    tu_free(&r);
}

static int setup(void **state)
{
    (void)state;
    const char *dir = tu_sandbox();
    if (chdir(dir) != 0)
        return -1;
    snprintf(demo_dir, sizeof demo_dir, "%s", tu_demo_dir());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_sandbox_end();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_travel_with_the_trace),
        cmocka_unit_test(same_names_as_the_files),
        cmocka_unit_test(debug_info_here_wins),
        cmocka_unit_test(fifo_for_debug_file),
        cmocka_unit_test(bare_modules_still_warned),
        cmocka_unit_test(symbolize_again_adds_nothing),
        cmocka_unit_test(merge_keeps_names),
        cmocka_unit_test(symbolize_refuses),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
