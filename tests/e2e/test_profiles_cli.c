/*
 * tests/e2e/test_profiles_cli.c — `ltr profiles` run as a user runs it ($LTR_BIN):
 * listing the built-in profiles and a real file's (and the variants of a
 * profile that lacks some), --details of built-in and file profiles,
 * --export, and the exit status and message of bad input; a file's names
 * with control characters shown without them. ltr starts
 * without libxml2 (nor libarchive): it is loaded when a profile is read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "profiles/helpers.h"

typedef struct run {
    int status;
    char out[65536];
    char err[65536];
} run;

static void slurp(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, size - 1, f) : 0;
    buf[n] = 0;
    if (f)
        fclose(f);
}

/* A file's text (static: valid until the next call). */
static const char *slurp_file(const char *path)
{
    static char buf[65536];
    slurp(path, buf, sizeof buf);
    return buf;
}

/* Runs `ltr profiles ARGS` with the source tree's built-in profiles. */
static run *ltr(const char *args)
{
    static run r;
    const char *bin = getenv("LTR_BIN");
    assert_non_null(bin);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "LTR_PROFILE_DIR='%s' '%s' profiles %s >'%s/out' 2>'%s/err'",
             builtin_dir(), bin, args, tmp_dir(), tmp_dir());
    int st = system(cmd);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    char path[512];
    snprintf(path, sizeof path, "%s/out", tmp_dir());
    slurp(path, r.out, sizeof r.out);
    snprintf(path, sizeof path, "%s/err", tmp_dir());
    slurp(path, r.err, sizeof r.err);
    return &r;
}

static void lists_builtins(void **state)
{
    run *r = ltr("");
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "heapsnapshot "));
    assert_non_null(strstr(r->out, "memory "));
    assert_non_null(strstr(r->out, "general "));
    assert_non_null(strstr(r->out, "Light,Verbose  File,Memory"));
    assert_string_equal(r->err, "");
}

static void lists_a_file(void **state)
{
    char args[600];
    snprintf(args, sizeof args, "'%s/WPRP_Heap.wprp'", wprp_dir());
    run *r = ltr(args);
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "TraceHeap_ByPID"));
    assert_non_null(strstr(r->out, "Heap Tracing by PID (rewrite) / Modules"));
    assert_non_null(strstr(r->out, "Heap_Snapshot            Light          File,Memory"));
}

/* A profile without every level in every mode says which variants it has:
 * "Light,Verbose  File,Memory" alone promised a Light.Memory that 'ltr
 * start' refused. One with all four, as the built-in ones, says nothing more. */
static void lists_missing_variants(void **state)
{
    const char *f = write_file("three.wprp",
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
        "<WindowsPerformanceRecorder Version=\"1.0\" Author=\"x\"><Profiles>\n"
        "<EventCollector Id=\"C\" Name=\"c\"><BufferSize Value=\"64\" /><Buffers Value=\"4\" /></EventCollector>\n"
        "<EventProvider Id=\"E\" Name=\"prov\" />\n"
        "<Profile Id=\"P.Verbose.File\" Name=\"P\" Description=\"three\" DetailLevel=\"Verbose\" LoggingMode=\"File\">"
        "<Collectors><EventCollectorId Value=\"C\"><EventProviders><EventProviderId Value=\"E\" /></EventProviders>"
        "</EventCollectorId></Collectors></Profile>\n"
        "<Profile Id=\"P.Verbose.Memory\" Name=\"P\" Description=\"three\" Base=\"P.Verbose.File\" "
        "DetailLevel=\"Verbose\" LoggingMode=\"Memory\" />\n"
        "<Profile Id=\"P.Light.File\" Name=\"P\" Description=\"three\" Base=\"P.Verbose.File\" "
        "DetailLevel=\"Light\" LoggingMode=\"File\" />\n"
        "</Profiles></WindowsPerformanceRecorder>\n");
    char args[600];
    snprintf(args, sizeof args, "'%s'", f);
    run *r = ltr(args);
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "  P                        Light,Verbose  File,Memory  three\n"
                                   "                           only Light.File, Verbose.File, Verbose.Memory\n"));
    r = ltr("");
    assert_int_equal(r->status, 0);
    assert_null(strstr(r->out, " only "));
}

static void details_of_a_file_profile(void **state)
{
    char args[600];
    snprintf(args, sizeof args, "'%s/WPRP_Heap.wprp!TraceHeap_ByPID.verbose' --details --filemode",
             wprp_dir());
    run *r = ltr(args);
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "TraceHeap_ByPID.Verbose.File"));
    assert_non_null(strstr(r->out, "Logging mode: file"));
    assert_non_null(strstr(r->out, "MSO Heap Collector (heap collector): buffers of 1024 KB, 768 of them"));
    assert_non_null(strstr(r->out, "ProcessThread          -> processes and threads"));
    /* recorded since VirtualAllocation came (through the heap agent) */
    assert_non_null(strstr(r->out, "VirtualAllocation      -> virtual memory: mmap, munmap, mremap, brk\n"));
    assert_null(strstr(r->out, "not yet available in ltr"));
    assert_non_null(strstr(r->out, "keywords 0x4, level 5, stacks no"));
    assert_non_null(strstr(r->out, "heap tracing in collector 'MSO Heap Collector' of pid 12345678"));
}

/* --details of a file alone says how to name one of its profiles (a review
 * got "no profile of that name in the built-in profiles"), listing its
 * names; a file of one name, as WPR's authoring rules have it, means that
 * profile, as `wpr -start FILE.wprp` does (it was refused, "is a file"). */
static void details_of_a_file_alone(void **state)
{
    char args[600];
    snprintf(args, sizeof args, "'%s/WPRP_Heap.wprp' --details", wprp_dir());
    run *r = ltr(args);
    assert_int_not_equal(r->status, 0);
    assert_non_null(strstr(r->err, "its profiles have 5 names (TraceHeap_ByPID, TraceHeap_ByName, Heap_Snapshot, "
                                   "TraceVirtualAlloc, TraceAddressSpace): name one, as '"));
    assert_non_null(strstr(r->err, "WPRP_Heap.wprp!TraceHeap_ByPID'"));
    snprintf(args, sizeof args, "'%s/PreWin10_WPRP_Heap.wprp' --details --filemode", wprp_dir());
    r = ltr(args);
    if (r->status != 0 || !strstr(r->out, "PreWin10_WPRP_Heap.wprp!TraceHeap.Verbose.File"))
        fail_msg("status %d\n%s%s", r->status, r->out, r->err);
}

static void details_of_builtins(void **state)
{
    run *r = ltr("heap heapsnapshot.light --details");
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "Profile: heap.Verbose.Memory"));
    assert_non_null(strstr(r->out, "Profile: heapsnapshot.Light.Memory"));
    assert_non_null(strstr(r->out, "Logging mode: memory"));
    assert_non_null(strstr(r->out, "ltr Heap Collector (heap collector)"));
    assert_non_null(strstr(r->out, "heap snapshots"));
}

/* A bare name is Verbose and --details shows every variant the name has;
 * a detail level that does not exist is an error naming those that do. */
static void details_of_a_bare_name(void **state)
{
    char args[600];
    snprintf(args, sizeof args, "'%s/WPRP_Heap.wprp!TraceHeap_ByName' --details", wprp_dir());
    run *r = ltr(args);
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "!TraceHeap_ByName.Verbose.Memory\n"
                                   "  variants of its name: Verbose.File, Verbose.Memory\n"));
    r = ltr("heap --details");
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "Profile: heap.Verbose.Memory\n  variants of its name: "
                                   "Light.File, Light.Memory, Verbose.File, Verbose.Memory\n"));
    snprintf(args, sizeof args, "'%s/WPRP_Heap.wprp!Heap_Snapshot' --details", wprp_dir());
    r = ltr(args);
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "it has Light.File, Light.Memory"));
    assert_string_equal(r->out, "");
    r = ltr("heap.Medium --details");
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "'Medium' is not a detail level of heap: it has Light and Verbose"));
}

/* general is Strict and records the system provider's parts: --details shows
 * each keyword, the available ones without "not yet", and no warning that
 * starting would fail. */
static void details_of_a_strict_profile_that_starts_nothing(void **state)
{
    run *r = ltr("general --details");
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "Logging mode: memory (strict)"));
    assert_non_null(strstr(r->out, "ProcessThread          -> processes and threads"));
    assert_non_null(strstr(r->out, "MemoryInfo             -> periodic per-process memory counters\n"));
    assert_null(strstr(r->err, "starts nothing on Linux"));
    assert_null(strstr(r->err, "error:"));
}

static void windows_only_reported(void **state)
{
    char args[600];
    snprintf(args, sizeof args, "'%s/WPRP_Network.wprp!NetworkMin.light' --details", wprp_dir());
    run *r = ltr(args);
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "Skipped (no meaning on Linux):"));
    assert_non_null(strstr(r->out, "provider Microsoft-Windows-TCPIP {2f07e2ee-15db-40f1-90ef-9d7ba282188a}"));
    assert_non_null(strstr(r->err, "warning: 'NetworkMin.Light.Memory': the profile starts nothing"));
}

/* A .wprp from the web names its profiles, providers and descriptions: a
 * C1 control (U+009B is CSI), a bidirectional control or a newline in
 * them reaches the listing and the diagnostics as '?', on its own line. */
static void hostile_names_shown(void **state)
{
    const char *f = write_file("hostile.wprp",
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
        "<WindowsPerformanceRecorder Version=\"1.0\" Author=\"x\"><Profiles>\n"
        "<EventCollector Id=\"C\" Name=\"c\"><BufferSize Value=\"64\" /><Buffers Value=\"4\" /></EventCollector>\n"
        "<EventProvider Id=\"E\" Name=\"prov\" />\n"
        "<Profile Id=\"P.Light.File\" Name=\"p&#x9b;[2J&#10;forged\" Description=\"d&#x9b;[31m&#x202e;rev&#10;line2\" "
        "DetailLevel=\"Light\" LoggingMode=\"File\"><Collectors><EventCollectorId Value=\"C\"><EventProviders>"
        "<EventProviderId Value=\"E\" /></EventProviders></EventCollectorId></Collectors></Profile>\n"
        "</Profiles></WindowsPerformanceRecorder>\n");
    char args[600];
    snprintf(args, sizeof args, "'%s'", f);
    run *r = ltr(args);
    assert_int_equal(r->status, 0);
    static const char *const acting[] = {"\xc2\x9b", "\xe2\x80\xae", "\nforged", "\nline2"};
    for (size_t i = 0; i < sizeof acting / sizeof *acting; i++)
        if (strstr(r->out, acting[i]) || strstr(r->err, acting[i]))
            fail_msg("a name's control character (#%zu) is printed:\n%s%s", i, r->out, r->err);
    assert_non_null(strstr(r->out, "  p?[2J?forged "));
    assert_non_null(strstr(r->out, " d?[31m?rev?line2\n"));
    assert_non_null(strstr(r->err, "expected 'p?[2J?forged.Light.File'\n")); /* the diagnostic too */
}

static void bad_input(void **state)
{
    const char *f = write_file("notxml.wprp", "hello\n");
    char args[600];
    snprintf(args, sizeof args, "'%s'", f);
    run *r = ltr(args);
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "notxml.wprp:1: error: not a well-formed XML file"));
    r = ltr("nosuch --details");
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "error: 'nosuch': no profile of that name"));
    r = ltr("--bogus");
    assert_int_equal(r->status, 2);
    r = ltr("--details");
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "--details needs a profile"));
    r = ltr("--help");
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "--filemode"));
}

/* --export: a file that ltr reads back (its --details as the built-in's);
 * an existing file or a planted symlink is kept unless --force, and --force
 * replaces the symlink without following it; bad usage is status 2. */
static void exports(void **state)
{
    (void)state;
    char out[600], victim[600], args[1400];
    snprintf(out, sizeof out, "%s/general.wprp", tmp_dir());
    snprintf(args, sizeof args, "--export general '%s'", out);
    run *r = ltr(args);
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "written to"));
    snprintf(args, sizeof args, "'%s!general' --details", out);
    r = ltr(args);
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "SampledProfile"));
    assert_non_null(strstr(r->out, "ltr System Collector"));
    snprintf(args, sizeof args, "--export heap '%s'", out); /* exists: kept */
    r = ltr(args);
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "--force"));
    assert_non_null(strstr(slurp_file(out), "general.Verbose.File"));
    snprintf(victim, sizeof victim, "%s/victim", tmp_dir());
    write_file("victim", "keep");
    snprintf(out, sizeof out, "%s/planted.wprp", tmp_dir());
    assert_int_equal(symlink(victim, out), 0);
    snprintf(args, sizeof args, "--export heap '%s'", out);
    assert_int_equal(ltr(args)->status, 1);
    snprintf(args, sizeof args, "--export heap '%s' --force", out);
    assert_int_equal(ltr(args)->status, 0);
    assert_string_equal(slurp_file(victim), "keep");
    assert_non_null(strstr(slurp_file(out), "heap.Light.Memory"));
    assert_int_equal(ltr("--export heap")->status, 2);
    assert_int_equal(ltr("--export heap x.wprp --details")->status, 2);
    assert_int_equal(ltr("heap --details --force")->status, 2);
    r = ltr("--export heap -"); /* standard output, not a file named '-' */
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "heap.Light.Memory"));
    assert_int_not_equal(access("-", F_OK), 0);
    r = ltr("--export nosuch x.wprp");
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "no profile of that name"));
}

/* The libraries the loader maps when ltr starts (glibc's ldd way): libxml2
 * and libarchive, with ICU and the rest they bring, were most of the start-up
 * of every command, `ltr analyze` too, which reads no profile. The listings
 * above read profiles through the libxml2 loaded then. */
static void starts_without_libxml2(void **state)
{
    char cmd[4096], path[512];
    snprintf(path, sizeof path, "%s/libs", tmp_dir());
    snprintf(cmd, sizeof cmd, "LD_TRACE_LOADED_OBJECTS=1 '%s' >'%s'", getenv("LTR_BIN"), path);
    assert_int_equal(system(cmd), 0);
    const char *libs = slurp_file(path);
    assert_non_null(strstr(libs, "libc.so"));
    if (strstr(libs, "libxml2") || strstr(libs, "libarchive"))
        fail_msg("ltr starts with libxml2 or libarchive loaded:\n%s", libs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lists_builtins),
        cmocka_unit_test(lists_a_file),
        cmocka_unit_test(lists_missing_variants),
        cmocka_unit_test(details_of_a_file_profile),
        cmocka_unit_test(details_of_a_file_alone),
        cmocka_unit_test(details_of_builtins),
        cmocka_unit_test(details_of_a_bare_name),
        cmocka_unit_test(details_of_a_strict_profile_that_starts_nothing),
        cmocka_unit_test(windows_only_reported),
        cmocka_unit_test(hostile_names_shown),
        cmocka_unit_test(bad_input),
        cmocka_unit_test(exports),
        cmocka_unit_test(starts_without_libxml2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
