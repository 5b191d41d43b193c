/*
 * tests/e2e/test_analyze.c — ltr analyze and ltr export end to end: real
 * programs with known leaks recorded with `ltr record` (the demo: a leak in a
 * thread, through realloc, in a dlopen'd library and in C++), a window in the
 * middle of a run, temporary allocations as heaptrack counts them, a
 * memory-mode trace with frees of unseen allocations, pprof read by `go
 * tool pprof`, folded stacks read by flamegraph.pl, separate debug info by
 * build-id, a build-id mismatch, and damaged or wrong input.
 */
#include "util/testutil.h"
#include "base/records.h"
#include "format/chunk.h"

#include <ltr/trace.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

static char demo_dir[4096], leaky_trace[4200];

static const char *demo_bin(const char *name)
{
    static char buf[4][4300];
    static int k;
    char *out = buf[k++ % 4];
    snprintf(out, sizeof buf[0], "%s/%s", demo_dir, name);
    return out;
}

static void record(const char *out, const char *opts, const char *cmd)
{
    tu_result r = tu_run("'%s' record %s -o '%s' -- %s", tu_ltr(), opts, out, cmd);
    if (r.status != 0)
        fprintf(stderr, "record failed (%d): %s\n", r.status, r.err);
    assert_int_equal(r.status, 0);
    tu_free(&r);
}

/* The number after "key": at or after from. */
static long long num_after(const char *from, const char *key)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = from ? strstr(from, pat) : NULL;
    return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

/* The entry of list `list` whose innermost frame is `function` (and type, if given). */
static const char *entry_of(const char *json, const char *list, const char *function, const char *type)
{
    char pat[256];
    snprintf(pat, sizeof pat, "\"%s\":[", list);
    const char *p = strstr(json, pat), *end;
    if (!p)
        return NULL;
    end = strstr(p, "\"most_calls\":[");
    if (!end || end < p)
        end = p + strlen(p);
    snprintf(pat, sizeof pat, "\"function\":\"%s\"", function);
    for (p = strstr(p, "{\"pid\":"); p && p < end; p = strstr(p + 1, "{\"pid\":")) {
        const char *f = strstr(p, "\"function\":");
        char tpat[64];
        snprintf(tpat, sizeof tpat, "\"type\":\"%s\"", type ? type : "");
        if (f && !strncmp(f, pat, strlen(pat)) && (!type || !strncmp(strstr(p, "\"type\":"), tpat, strlen(tpat))))
            return p;
    }
    return NULL;
}

static char *analyze(const char *trace, const char *opts, int expect_status)
{
    tu_result r = tu_run("'%s' analyze '%s' %s", tu_ltr(), trace, opts);
    if (r.status != expect_status)
        fprintf(stderr, "analyze: status %d: %s\n", r.status, r.err);
    assert_int_equal(r.status, expect_status);
    char *out = r.out;
    r.out = NULL;
    tu_free(&r);
    return out;
}

/* `ltr record` of the test program with args into trace, then its analysis. */
static char *record_analyzed(const char *trace, const char *program, const char *args, const char *opts)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "'%s' %s", tu_test_bin(program), args);
    record(trace, "", cmd);
    return analyze(trace, opts, 0);
}

static void check_leak(const char *json, const char *function, long long bytes, long long count)
{
    const char *e = entry_of(json, "stacks", function, "AIFO");
    if (!e)
        fprintf(stderr, "no AIFO stack with innermost frame %s\n", function);
    assert_non_null(e);
    assert_int_equal(num_after(e, "bytes"), bytes);
    assert_int_equal(num_after(e, "count"), count);
}

static void test_demo_leaks(void **state)
{
    (void)state;
    char *json = analyze(leaky_trace, "--format json --top 0", 0);
    check_leak(json, "remember_session", 64000, 64); /* in a thread */
    check_leak(json, "grow_history", 24000, 1);      /* through realloc */
    check_leak(json, "plugin_cache_add", 10240, 40); /* in a dlopen'd library */
    check_leak(json, "demo::Cache::insert(int)", 6144, 16); /* C++ operator new[] */
    /* the biggest leak is the first stack, with its function, file and line */
    const char *first = strstr(strstr(json, "\"stacks\":["), "{\"pid\":");
    assert_ptr_equal(first, entry_of(json, "stacks", "remember_session", "AIFO"));
    char src[4096];
    snprintf(src, sizeof src, "%s/demo/leaky.c", getenv("LTR_SOURCE_DIR"));
    assert_int_equal(num_after(first, "line"), tu_source_line(src, "leak: nobody ever forgets"));
    assert_non_null(strstr(first, "leaky.c\""));
    const char *plugin = entry_of(json, "stacks", "plugin_cache_add", "AIFO");
    assert_non_null(strstr(plugin, "libleaky-plugin.so\""));
    assert_true(num_after(strstr(json, "\"summary\""), "outstanding_bytes") >= 64000 + 24000 + 10240 + 6144);
    assert_true(num_after(strstr(json, "\"summary\""), "events") > 8000);
    free(json);
    char *text = analyze(leaky_trace, "--top 1", 0);
    const char *top = strstr(text, "#1 AIFO 62.5 KiB in 64 allocations"); /* 64000 bytes, in human units */
    assert_non_null(top);
    assert_non_null(strstr(top, "remember_session (")); /* frame right below */
    assert_non_null(strstr(text, "stacks with the most temporary allocations"));
    assert_non_null(strstr(text, "parse_request ("));
    free(text);
}

static uint64_t header_start(const char *trace)
{
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(trace, &t, &err), 0);
    const char *v = ltr_trace_kv(t, LTR_KV_HEADER, "clock.start_ns");
    uint64_t start = v ? strtoull(v, NULL, 10) : 0;
    ltr_trace_close(t);
    return start;
}

static void test_window_in_the_middle(void **state)
{
    (void)state;
    const char *trace = "phases.ltr";
    tu_result r = tu_run("'%s' record -o %s -- '%s'", tu_ltr(), trace, tu_test_bin("analyze-phases"));
    assert_int_equal(r.status, 0);
    unsigned long long t1 = 0, t2 = 0;
    assert_int_equal(sscanf(r.out, "%llu %llu", &t1, &t2), 2);
    tu_free(&r);
    uint64_t start = header_start(trace);
    assert_true(start > 0 && t1 > start && t2 > t1);
    char opts[256];
    snprintf(opts, sizeof opts, "--format json --top 0 --from %.9f --to %.9f", (double)(t1 - start) / 1e9,
             (double)(t2 - start) / 1e9);
    char *json = analyze(trace, opts, 0);
    const char *types = strstr(strstr(json, "\"summary\""), "\"types\"");
    assert_int_equal(num_after(strstr(types, "\"AIFI\""), "count"), 1);
    assert_int_equal(num_after(strstr(types, "\"AIFI\""), "bytes"), 3000);
    assert_int_equal(num_after(strstr(types, "\"AIFO\""), "count"), 2);
    assert_int_equal(num_after(strstr(types, "\"AIFO\""), "bytes"), 9000);
    assert_int_equal(num_after(strstr(types, "\"AOFI\""), "count"), 1);
    assert_int_equal(num_after(strstr(types, "\"AOFI\""), "bytes"), 2000);
    const char *a1 = entry_of(json, "stacks", "main", "AOFO"); /* AOFO also holds the loader's blocks */
    assert_non_null(a1);
    assert_int_equal(num_after(a1, "bytes"), 1000);
    assert_int_equal(num_after(strstr(json, "\"summary\""), "allocations"), 3);
    assert_int_equal(num_after(strstr(json, "\"summary\""), "frees"), 2);
    free(json);
    /* the text as a reader takes it: main's one temporary of one call (it
     * read "1 temporary of 1 calls"), and when a block held since came,
     * not "(0.1 s)", which read as how long it took */
    char *text = analyze(trace, "--width 0", 0);
    const char *at = strstr(text, "in 1 allocation, at once, at 0.");
    size_t ms = at ? strspn(at + strlen("in 1 allocation, at once, at 0."), "0123456789") : 0;
    if (!strstr(text, "#1 1 temporary of 1 call\n") || ms != 3) /* a window under a second: "0.075 s", not "0.1 s" */
        fail_msg("%s", text);
    free(text);
}

/* Temporary allocations as heaptrack_print counts them (analyze-temps's
 * header): a realloc's free half counts, and a free of a block of the size
 * and stack just allocated. Before, a realloc never did and the block had
 * to be the one allocated last: temp_first 0, chain_a and chain_b 0,
 * same_kind 0 (heaptrack_print of the same program: 1 000, 1, 1, 1). */
static void test_temporaries_as_heaptrack(void **state)
{
    (void)state;
    char *json = record_analyzed("temps.ltr", "analyze-temps", "", "--format json --top 0");
    static const struct {
        const char *function;
        long long temporary, calls;
    } want[] = {{"temp_first", 1000, 1000}, {"temp_churn", 500, 500}, {"chain_a", 1, 1},
                {"chain_b", 1, 1},          {"chain_c", 1, 1},        {"same_kind", 1, 2}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const char *e = entry_of(json, "most_temporary", want[i].function, NULL);
        if (!e || num_after(e, "temporary") != want[i].temporary || num_after(e, "calls") != want[i].calls)
            fail_msg("%s: wanted %lld temporary of %lld calls:\n%s", want[i].function, want[i].temporary,
                     want[i].calls, json);
    }
    if (entry_of(json, "most_temporary", "temp_grow", NULL))
        fail_msg("temp_grow's blocks are freed after others, none temporary:\n%s", json);
    free(json);
}

/* Folded stacks are one line per distinct stack: analyze-phases's three
 * blocks left to its end come from three call sites of main, three stacks
 * of the trace but one string ("analyze-phases;main" three times, 1000,
 * 4000 and 6000), now one line of their sum; flamegraph.pl's total is the
 * outstanding bytes the report gives, as it was. */
static void test_folded_one_line_per_stack(void **state)
{
    (void)state;
    tu_result r = tu_run("'%s' record -o phases-folded.ltr -- '%s'", tu_ltr(), tu_test_bin("analyze-phases"));
    assert_int_equal(r.status, 0);
    tu_free(&r);
    r = tu_run("'%s' export phases-folded.ltr --format folded -o phases.folded && cat phases.folded", tu_ltr());
    assert_int_equal(r.status, 0);
    if (strcmp(r.out, "analyze-phases;main 11000\n") != 0)
        fail_msg("the folded stacks: %s", r.out);
    tu_free(&r);
    const char *fg = getenv("LTR_FLAMEGRAPH");
    if (!fg || !*fg)
        fg = "/usr/share/perl5/Devel/NYTProf/flamegraph.pl";
    r = tu_run("perl %s --countname bytes phases.folded | grep -o '<title>all ([0-9,]* bytes'", fg);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "<title>all (11,000 bytes\n");
    tu_free(&r);
}

static double num_s(const char *from, const char *key);

/* A process SIGKILLed after a quiet time: the recorder stamps its end when
 * it sees it gone, after the trace's last heap event, and the whole trace's
 * window ended at that event: "never freed: it ended at 1.186 s" in a
 * window that ended at 1.113 s (ltr record --pid of a target killed). */
static void test_window_holds_the_last_end(void **state)
{
    (void)state;
    tu_result r = tu_run("'%s' record --force -o killed.ltr -- perl -e 'my @a = map { \"x\" x 1000 } 1..200; "
                         "select(undef, undef, undef, 0.3); kill 9, $$'", tu_ltr());
    assert_int_equal(r.status, 128 + 9);
    tu_free(&r);
    char *json = analyze("killed.ltr", "--format json --top 0", 0);
    double to = num_s(strstr(json, "\"window\""), "to_s"), ended = num_s(strstr(json, "\"processes\""), "ended_s");
    if (!(ended > 0.3 && ended <= to))
        fail_msg("the window ends at %.9f s, the process ended at %.9f s:\n%s", to, ended, json);
    free(json);
}

/* Three programs one after the other, each leaving 8 MB to its exit (as a
 * build's compilers do): each one's 8 MB outstanding at the end, but their
 * memory left with them, so all of them together never held more than one
 * of them and the shell (the recorder writes when each ended: the trace's
 * PROCESS_END; the peak was the sum of all, 24 MB). */
static void test_ended_processes_leave_the_peak(void **state)
{
    (void)state;
    char cmd[4300];
    const char *hold = tu_test_bin("ltr-test-memhold");
    snprintf(cmd, sizeof cmd, "sh -c \"'%s' 8 0 >/dev/null; '%s' 8 0 >/dev/null; '%s' 8 0 >/dev/null\"", hold, hold,
             hold);
    record("ended.ltr", "", cmd);
    char *json = analyze("ended.ltr", "--format json --top 0", 0);
    const char *sum = strstr(json, "\"summary\"");
    long long mb = 1 << 20, peak = num_after(sum, "peak_bytes"), out = num_after(sum, "outstanding_bytes");
    /* below two programs' 16 MB, not one's 9: a process's end is when the
     * recorder saw its connection close, and a recorder busy writing can
     * see it after the next program's first 1 MB blocks (once in CI: 8 MB
     * and 1 MB at once) */
    if (peak < 8 * mb || peak >= 16 * mb || out < 24 * mb)
        fail_msg("peak %lld, outstanding at the end %lld: wanted one program's 8 MB at once (and less than "
                 "two programs'), 24 MB left", peak, out);
    /* the outstanding is more than the peak: what the ended processes never freed, said so */
    assert_int_equal(num_after(sum, "ended_processes"), 4);
    assert_int_equal(num_after(sum, "ended_before_window"), 0);
    assert_true(num_after(sum, "never_freed_by_ended_bytes") >= 24 * mb);
    /* when the first holder ended: a window from just after it */
    double first_end = 1e9;
    for (const char *p = strstr(json, "\"processes\":["); (p = strstr(p, "ltr-test-memhold")); p++) {
        const char *e = strstr(p, "\"ended_s\":");
        double t = e ? strtod(e + strlen("\"ended_s\":"), NULL) : 1e9;
        first_end = t > 0 && t < first_end ? t : first_end;
    }
    free(json);
    assert_true(first_end < 1e9);
    char from[64];
    snprintf(from, sizeof from, "--from %.6f --processes 0", first_end + 0.0001);
    char *text = analyze("ended.ltr", from, 0);
    if (!strstr(text, "1 process(es) ended before the window began, 0 began after it ended: not listed") ||
        !strstr(text, "is what 4 process(es) never freed before they ended")) /* the first too: AOFO */
        fail_msg("a window after the first holder's end:\n%s", text);
    int listed = 0;
    for (const char *p = text; (p = strstr(p, "\nprocess ")); p++)
        listed++;
    assert_int_equal(listed, 3); /* two holders and the shell */
    assert_non_null(strstr(text, "(never freed: it ended at "));
    free(text);
    /* a window that ends when the first holder did: the last one (at least) began after it, with nothing
     * in the window, and is not listed either */
    snprintf(from, sizeof from, "--to %.6f --processes 0", first_end);
    text = analyze("ended.ltr", from, 0);
    const char *said = strstr(text, " began after it ended: not listed");
    long later = 0;
    if (said) {
        while (said > text && said[-1] >= '0' && said[-1] <= '9')
            said--;
        later = strtol(said, NULL, 10);
    }
    listed = 0;
    for (const char *p = text; (p = strstr(p, "\nprocess ")); p++)
        listed++;
    if (later < 1 || listed + later != 4)
        fail_msg("a window ending with the first holder: %ld began after, %d listed:\n%s", later, listed, text);
    free(text);
    /* the text report past --processes: those with the highest peak (the
     * three holders of 8 MB, not the shell), and the way to the rest */
    text = analyze("ended.ltr", "--processes 2", 0);
    assert_non_null(strstr(text, "the 2 processes with the highest peak, of 4 (--processes 0: all of them"));
    int shown = 0;
    for (const char *p = text; (p = strstr(p, "\nprocess ")); p++) {
        shown++;
        assert_non_null(strstr(p, "ltr-test-memhold"));
        assert_true(strstr(p, "ltr-test-memhold") < strchr(p + 1, '\n'));
    }
    assert_int_equal(shown, 2);
    free(text);
    text = analyze("ended.ltr", "--processes 0", 0);
    shown = 0;
    for (const char *p = text; (p = strstr(p, "\nprocess ")); p++)
        shown++;
    assert_int_equal(shown, 4);
    assert_null(strstr(text, "with the highest peak"));
    free(text);
}

/* A program that frees what it grew before it exits has none of it
 * outstanding at the end, so its growth was in none of the report's lists
 * (a review: node's 112 MiB of buffers, freed at exit). The report says
 * where its peak was, and that window lists what held it. */
static void test_peak_freed_before_the_end(void **state)
{
    (void)state;
    record("freed.ltr", "--force", "perl -e 'my @a; push @a, q(x) x 100000 for 1..100; @a = ();'");
    char *text = analyze("freed.ltr", "", 0);
    const char *hint = strstr(text, "most of its peak was freed by the window's end: --to ");
    if (!hint)
        fail_msg("no hint of the peak's window:\n%s", text);
    /* the window as said, to the ns: said in us, it ended before the peak's
     * time, 200 KB short (10 118 521 B of 10 318 525) */
    char opts[128];
    const char *to = hint + strlen("most of its peak was freed by the window's end: --to ");
    const char *pid = strstr(hint, "--pid ");
    assert_non_null(pid);
    snprintf(opts, sizeof opts, "--to %.*s --pid %ld --format json", (int)strcspn(to, " "), to,
             strtol(pid + 6, NULL, 10));
    int whole = strstr(hint, "lists the stacks that held it then") != NULL; /* else it says how much less */
    /* the peak's line gives its time as the hint does, to the ns: a --to
     * copied from it, in us, ended the window before the peak */
    const char *at = strstr(text, "  peak: ");
    at = at ? strstr(at, " at ") : NULL;
    if (!at || strncmp(at + 4, to, strcspn(to, " ")) || at[4 + strcspn(to, " ")] != ' ')
        fail_msg("the peak's time is not the hint's %.*s:\n%s", (int)strcspn(to, " "), to, text);
    free(text);
    char *json = analyze("freed.ltr", "--format json", 0);
    long long peak = num_after(strstr(json, "\"summary\""), "peak_bytes");
    free(json);
    json = analyze("freed.ltr", opts, 0);
    long long held = num_after(strstr(json, "\"summary\""), "outstanding_bytes");
    if (held < 9 * 1000 * 1000 || held > peak || (whole && held != peak))
        fail_msg("%s: %lld bytes held, wanted the peak's %lld%s:\n%s", opts, held, peak, whole ? "" : " or less",
                 json);
    free(json);
}

/* An exec replaces a process's image: the new one numbers its stacks from
 * 1 again, and the old one's memory goes with it. heap-target's exec mode
 * allocates 3 400 bytes (in mode_exec), execs itself and allocates 3 500
 * (in main): two processes of one pid in the report, each block under its
 * own image's frames, and the peak one block, not both. Before, both
 * blocks were one stack, named by the new image's main, 6.74 KiB held. In
 * a file-mode trace and in a save (--memory), which writes the images'
 * records and buffers in rounds (recorder/saveorder.c): it wrote all its
 * metadata before every buffer, and the old image took the new one's
 * frames there still. */
/* A traced image that execs a program that never joins the session (env
 * without the preload, running sleep): the recorder ends that image there,
 * so the report does not keep it live, holding its blocks, to the trace's
 * end (perl's system("sh", ...) under --pid or ltr watch). In file and
 * memory mode; the parent's traced image is unaffected. */
static void test_exec_of_untraced_program_ends_its_image(void **state)
{
    (void)state;
    const char *modes[] = {"--force", "--force --memory"};
    for (int i = 0; i < 2; i++) {
        record("untraced.ltr", modes[i],
               "perl -e 'system(\"env\", \"-u\", \"LD_PRELOAD\", \"sleep\", \"0.6\"); select(undef, undef, undef, 0.3)'");
        char *json = analyze("untraced.ltr", "--format json --top 0", 0);
        const char *env = strstr(json, "\"exe\":\"/usr/bin/env\"");
        const char *next = env ? strstr(env, "{\"pid\":") : NULL, *ended = env ? strstr(env, "\"ended_s\":") : NULL;
        const char *exec = env ? strstr(env, "\"replaced_by_exec\":true") : NULL;
        if (!ended || (next && ended > next) || !strncmp(ended + strlen("\"ended_s\":"), "null", 4) || !exec ||
            (next && exec > next))
            fail_msg("%s: env's image, which exec'd an untraced sleep, is not ended by an exec:\n%s", modes[i], json);
        free(json);
        char *text = analyze("untraced.ltr", "", 0);
        const char *shown = strstr(text, "/usr/bin/env\n");
        if (!shown || !strstr(shown, "(never freed: an exec replaced it at "))
            fail_msg("%s: the text does not say env's image was replaced:\n%s", modes[i], text);
        free(text);
    }
}

static void test_exec_is_another_image(void **state)
{
    (void)state;
    const char *modes[] = {"--force", "--force --memory"};
    for (int i = 0; i < 2; i++) {
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "'%s' exec", tu_test_bin("heap-target"));
        record("exec.ltr", modes[i], cmd);
        char *json = analyze("exec.ltr", "--format json --top 0", 0);
        const char *sum = strstr(json, "\"summary\"");
        long long peak = num_after(sum, "peak_bytes");
        if (num_after(sum, "processes") != 2 || peak < 3500 || peak >= 3400 + 3500)
            fail_msg("%s: wanted two images, the peak one block:\n%s", modes[i], json);
        const char *old = entry_of(json, "stacks", "mode_exec", "AIFO");
        if (!old || num_after(old, "bytes") != 3400 || num_after(old, "image") != 0)
            fail_msg("%s: the old image's block is not under mode_exec:\n%s", modes[i], json);
        const char *now = entry_of(json, "stacks", "main", "AIFO");
        if (!now || num_after(now, "bytes") != 3500 || num_after(now, "image") != 1)
            fail_msg("%s: the new image's block is not its main's:\n%s", modes[i], json);
        const char *replaced = strstr(json, "\"replaced_by_exec\":true");
        assert_non_null(replaced);
        assert_int_equal(num_after(sum, "images_replaced_by_exec"), 1);
        assert_non_null(strstr(json, "\"replaced_by_exec\":false"));
        assert_null(strstr(replaced + 1, "\"replaced_by_exec\":true"));
        free(json);
        char *text = analyze("exec.ltr", "", 0);
        assert_non_null(strstr(text, "(never freed: an exec replaced it at "));
        /* one process, not two: the summary counts the images apart (a review: python3 through pyenv,
         * "80 process(es)" of 41) */
        if (!strstr(text, "\n1 process(es) (2 program images, 1 of them replaced by an exec), "))
            fail_msg("%s: the summary's count of processes:\n%s", modes[i], text);
        free(text);
        /* --top per process is per image: one stack of each (a review: one between both) */
        json = analyze("exec.ltr", "--format json --top 1", 0);
        const char *list = strstr(json, "\"stacks\":["), *end = list ? strstr(list, "\"most_calls\"") : NULL;
        int entries = 0;
        for (const char *p = list; p && end && (p = strstr(p + 1, "{\"pid\":")) && p < end;)
            entries++;
        assert_int_equal(entries, 2);
        free(json);
        /* CSV too: a row of each image, told apart by its image column */
        tu_expect_ok(tu_run("'%s' export exec.ltr --format csv -o exec.csv --force", tu_ltr()));
        char *csv = tu_read_file("exec.csv");
        assert_non_null(csv);
        assert_memory_equal(csv, "pid,image,exe,stack_id,", strlen("pid,image,exe,stack_id,"));
        int images = 0; /* bit g: a row of image g */
        for (const char *l = strchr(csv, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
            const char *comma = strchr(l + 1, ',');
            if (comma && (comma[1] == '0' || comma[1] == '1') && comma[2] == ',')
                images |= 1 << (comma[1] - '0');
        }
        free(csv);
        assert_int_equal(images, 3);
        /* each image's threads as named then: a shell that execs the program is "sh", not
         * the program (a review: the new image's name for both) */
        char wrapped[4300];
        snprintf(wrapped, sizeof wrapped, "sh -c \"exec '%s' chain\"", tu_test_bin("heap-target"));
        record("wrapped.ltr", modes[i], wrapped);
        json = analyze("wrapped.ltr", "--format json --top 0", 0);
        const char *sh = strstr(json, "\"exe\":\"/usr/bin/dash\""), *sh_threads = sh ? strstr(sh, "\"threads\":[") : NULL;
        const char *named = sh_threads ? strstr(sh_threads, "\"name\":\"sh\"") : NULL;
        if (!named || named > strchr(sh_threads, ']'))
            fail_msg("%s: the shell's image is not named sh:\n%s", modes[i], json);
        free(json);
    }
}

/* An exec'd process in Chrome's format: its images share the pid's one
 * counter track, in time order, named once. Each image's points went out
 * with a last one at the window's end, and the next image's went back in
 * time after it (heap-target exec: 0.9, 1.1, [end], 0.9, ... ms); the
 * report's timeline drew the line back and forth. */
static void test_exec_one_chrome_track(void **state)
{
    (void)state;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "'%s' exec", tu_test_bin("heap-target"));
    record("execc.ltr", "--force", cmd);
    tu_result r = tu_run("'%s' export execc.ltr --format chrome -o execc.json --force 2>/dev/null && python3 -c \""
                         "import json\n"
                         "ev = json.load(open('execc.json'))['traceEvents']\n"
                         "for pid in {e['pid'] for e in ev if e['ph'] == 'C'}:\n"
                         "    ts = [e['ts'] for e in ev if e['pid'] == pid and e['ph'] == 'C']\n"
                         "    names = [e for e in ev if e['pid'] == pid and e['name'] == 'process_name']\n"
                         "    print(pid, len(ts), 'ordered' if ts == sorted(ts) else 'back in time', len(names), 'names')\n"
                         "\"", tu_ltr());
    if (r.status != 0)
        fail_msg("status %d: %s%s", r.status, r.out, r.err);
    if (!strstr(r.out, " ordered 1 names") || strstr(r.out, "back in time") || strstr(r.out, " 2 names"))
        fail_msg("the exec'd process's track:\n%s", r.out);
    tu_free(&r);
}

/* A window in the middle, in Chrome's format: the track is the window's.
 * The model's series goes on through the frees after --to, so
 * analyze-phases's track had b3's free and c1 after the window's end, then
 * the end's point back in time (perl's phases, --from phase2 --to phase3:
 * 11.9 MiB at 2.5 s after 3.0 MiB at 4.1 s), and began before --from. Now
 * every point is inside the window, in time order, from what was
 * outstanding at its start (a1 and a2 at least) to the report's end. */
static void test_chrome_track_in_the_window(void **state)
{
    (void)state;
    tu_result r = tu_run("'%s' record -o phases-chrome.ltr -- '%s'", tu_ltr(), tu_test_bin("analyze-phases"));
    assert_int_equal(r.status, 0);
    unsigned long long t1 = 0, t2 = 0;
    assert_int_equal(sscanf(r.out, "%llu %llu", &t1, &t2), 2);
    tu_free(&r);
    uint64_t start = header_start("phases-chrome.ltr");
    double from = (double)(t1 - start) / 1e9, to = (double)(t2 - start) / 1e9;
    r = tu_run("'%s' export phases-chrome.ltr --format chrome --from %.9f --to %.9f -o phases.json --force "
               "2>/dev/null && python3 -c \""
               "import json\n"
               "ev = json.load(open('phases.json'))['traceEvents']\n"
               "c = [e for e in ev if e['name'] == 'heap outstanding bytes']\n"
               "ts = [e['ts'] for e in c]\n"
               "print('ordered' if ts == sorted(ts) else 'back in time',\n"
               "      'inside' if min(ts) >= %.3f and max(ts) <= %.3f else 'outside',\n"
               "      c[0]['args']['bytes'], c[-1]['args']['bytes'])\n"
               "\"",
               tu_ltr(), from, to, from * 1e6 - 0.001, to * 1e6 + 0.001);
    if (r.status != 0)
        fail_msg("status %d: %s%s", r.status, r.out, r.err);
    long long first = -1, last = -1;
    const char *sp = strchr(r.out, ' ') ? strchr(strchr(r.out, ' ') + 1, ' ') : NULL;
    if (!sp || sscanf(sp, "%lld %lld", &first, &last) != 2 || strncmp(r.out, "ordered inside ", 15) != 0 ||
        first < 1000 + 2000 || last < 1000 + 4000 + 5000)
        fail_msg("the window's track (%.6f .. %.6f s): %s", from, to, r.out);
    tu_free(&r);
}

/* The "replaced_by_exec" of the entry of pid's n-th process running program
 * (a path's end), as text ("true", "false"), or NULL if there is none. */
static const char *replaced_of(const char *json, long long pid, const char *program, int n)
{
    char pat[64];
    snprintf(pat, sizeof pat, "{\"pid\":%lld,\"image\":", pid);
    for (const char *p = strstr(json, "\"processes\":["); p && (p = strstr(p + 1, pat));) {
        const char *exe = strstr(p, "\"exe\":\"");
        exe = exe ? exe + strlen("\"exe\":\"") : NULL;
        const char *q = exe ? strchr(exe, '"') : NULL;
        size_t len = strlen(program);
        if (!q || (size_t)(q - exe) < len || strncmp(q - len, program, len) || n--)
            continue;
        const char *r = strstr(q, "\"replaced_by_exec\":");
        return r ? r + strlen("\"replaced_by_exec\":") : NULL;
    }
    return NULL;
}

/* A pid used again by another process after the first one ended is not an
 * exec: both are processes of their own, and neither was replaced. The
 * reader took every PROCESS record of a pid with stacks for an image, and
 * the analysis said of the first one "(never freed: an exec replaced it)"
 * (2 500 `ls` beside a fork loop, pid_max 32 768: 54 `ls` so). In a pid
 * namespace of its own, where the next pid can be chosen
 * (/proc/sys/kernel/ns_last_pid; as test_attach's test_listed_pid_reused). */
static void test_pid_used_again_is_no_exec(void **state)
{
    (void)state;
    char trace[512];
    snprintf(trace, sizeof trace, "%s/pidagain.ltr", getenv("TMPDIR"));
    const char *target = tu_test_bin("heap-target");
    long long a = tu_pid_again("command -v unshare >/dev/null || exit 77; unshare %s --pid --fork --mount-proc sh -c \""
                               "'%s' record --force -o '%s' -- sh -c '"
                               "%s exec2 & A=\\$!; wait \\$A; echo \\$((A - 1)) > /proc/sys/kernel/ns_last_pid; "
                               "%s exec2 & B=\\$!; wait \\$B; echo A=\\$A B=\\$B'\" || exit 77",
                               geteuid() ? "--user --map-root-user" : "", tu_ltr(), trace, target, target);
    assert_true(a >= 0);
    if (!a)
        skip();
    char *json = analyze(trace, "--format json --top 0", 0);
    const char *first = replaced_of(json, a, "/heap-target", 0), *second = replaced_of(json, a, "/heap-target", 1);
    if (!first || !second || strncmp(first, "false", 5) || strncmp(second, "false", 5))
        fail_msg("pid %lld's two heap-targets: wanted both not replaced by an exec:\n%s", a, json);
    free(json);
    char *text = analyze(trace, "", 0);
    const char *p = strstr(text, "/heap-target\n"); /* its outstanding, on the next line */
    const char *end = p ? strchr(p + strlen("/heap-target\n"), '\n') : NULL;
    const char *said = p ? strstr(p, "(never freed: it ended at ") : NULL;
    if (!end || !said || said > end)
        fail_msg("the first heap-target's end:\n%s", text);
    free(text);
    unlink(trace);
}

/* A process of 2^14 distinct stacks that ends inside the trace: its table
 * of stacks is past a megabyte, a mapping of its own (prim/table.c), which
 * the end of its model once resized with realloc: SIGSEGV on cc1plus's
 * trace. Its stacks are all there once. */
static void test_ended_process_of_many_stacks(void **state)
{
    (void)state;
    char cmd[4300];
    /* the small run after: blocks after the first one's end (one read
     * after the trace's last block was not fed to the model either) */
    snprintf(cmd, sizeof cmd, "sh -c \"'%s' 14; sleep 0.3; '%s' 1\"", tu_test_bin("analyze-manystacks"),
             tu_test_bin("analyze-manystacks"));
    record("many.ltr", "", cmd);
    char *json = analyze("many.ltr", "--format json --top 0", 0);
    const char *sum = strstr(json, "\"summary\"");
    assert_true(num_after(sum, "allocations") >= 16384);
    size_t stacks = 0; /* a byte at a time: strstr from each hit was quadratic under ASan (its
                        * strstr reads the whole rest first): 511 s of the ASan suite */
    const char *from = strstr(json, "\"most_calls\"");
    for (const char *p = from; p && *p; p++)
        stacks += *p == '"' && !strncmp(p, "\"stack_id\"", 10);
    if (stacks < 16384)
        fail_msg("%zu stacks in most_calls, wanted the 16384 paths", stacks);
    free(json);
}

static void test_memory_mode(void **state)
{
    (void)state;
    record("churn.ltr", "--memory --buffer-size 4 --buffers 4", tu_test_bin("analyze-churn"));
    char *json = analyze("churn.ltr", "--format json --top 0", 0);
    const char *sum = strstr(json, "\"summary\"");
    assert_true(num_after(sum, "events_overwritten") > 0);
    assert_true(num_after(sum, "unseen_frees") > 0);        /* counted apart */
    assert_true(num_after(sum, "outstanding_bytes") < 20000 * 48); /* never negative, no ghosts */
    const char *leak = entry_of(json, "stacks", "main", "AIFO");
    assert_non_null(leak);
    assert_int_equal(num_after(leak, "bytes"), 1000);
    assert_int_equal(num_after(leak, "count"), 10);
    assert_non_null(strstr(json, "memory-mode trace"));
    /* the window (and the rates and spreads that divide by it) starts at
     * the first event kept, not at the session's start: it covers no more
     * than the tail does */
    const char *win = strstr(json, "\"window\"");
    double first = num_s(win, "from_s"), last = num_s(win, "to_s");
    /* the kept tail is a few hundred events: on a fast or busy run all in
     * one 100 us grain of the heap clock (docs/heap-events.md), so from and
     * to may be the same time (the test failed about one run in four so) */
    assert_true(first > 0 && last >= first);
    free(json);
    /* a window that ends before the first event kept is outside the trace:
     * exit 1, as a --from past its end */
    tu_result r = tu_run("'%s' analyze churn.ltr --to 0", tu_ltr());
    assert_int_equal(r.status, 1);
    if (!strstr(r.err, "the window is outside the trace: --to '0' (0.000000 s) comes before its first event (") ||
        !strstr(r.err, " s; older events were overwritten); the trace covers "))
        fail_msg("--to 0 of a memory-mode tail:\n%s", r.err);
    tu_free(&r);
}

/* A flight recorder's tail of one thread whose sessions live 2 s, beside a
 * request handler that leaks 1 buffer in 20 (snap-target's sessions mode):
 * the request's buffer takes each expired session's address, a block the
 * tail never saw allocated. The leak must read growing: a "replaced"
 * credit given by address (taken back, 541fca7) read it "replacing older
 * blocks (net -912 KiB)", last, and the sessions "growing" first. */
static void test_memory_mode_leak_beside_expiring_sessions(void **state)
{
    (void)state;
    assert_int_equal(system("mkdir -p sess && touch sess/go"), 0);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "'%s' sessions sess 6", tu_test_bin("snap-target"));
    record("sess.ltr", "--memory --buffer-size 64 --buffers 4", cmd);
    char *json = analyze("sess.ltr", "--format json --top 0", 0);
    assert_true(num_after(strstr(json, "\"summary\""), "unseen_frees") > 1000);
    const char *leak = entry_of(json, "stacks", "request_site", "AIFO");
    const char *spread = leak ? strstr(leak, "\"spread\":") : NULL;
    if (!spread || strtod(spread + strlen("\"spread\":"), NULL) < 0.5 || num_after(leak, "growth_bytes_per_min") <= 0)
        fail_msg("the leak does not read as growing over the window:\n%s", json);
    free(json);
    char *text = analyze("sess.ltr", "--width 0", 0);
    const char *line = strstr(text, "\n        request_site");
    const char *head = line;
    while (head && head > text && strncmp(head, "    #", 5))
        head--;
    if (!line || !head || !strstr(head, "growing") || strstr(head, "growing") > line)
        fail_msg("the leak's line does not say growing:\n%s", text);
    free(text);
}

/* The growth (an_stack_growth) of the AIFO entry of function, and its place
 * in the ranking (-1: not there). */
static int ranked_growth(const char *json, const char *function, char *growth, size_t size)
{
    const char *e = entry_of(json, "stacks", function, "AIFO"), *g = e ? strstr(e, "\"growth\":\"") : NULL;
    growth[0] = 0;
    if (!g)
        return -1;
    g += strlen("\"growth\":\"");
    snprintf(growth, size, "%.*s", (int)(strchr(g, '"') - g), g);
    int place = 0;
    for (const char *p = strstr(json, "\"stacks\":["); p && p < e; p = strstr(p + 1, "{\"pid\":"))
        place++;
    return place;
}

/* A cache that turns over (snap-target's turnover mode: 2000 entries,
 * replaced every 0.33 s) beside a leak, a leak that frees 199 in 200 and a
 * table built at start, in a file and in a memory-mode save whose tail is
 * some 6 s: the cache read "at once (5.7 s)" and ranked first with half its
 * 2.57 MiB; it says it turns over and comes after the leaks, which stay
 * growing, the table at once. */
static void check_turnover(const char *trace, int table)
{
    char *json = analyze(trace, "--format json --top 0", 0), g[32];
    int cache = ranked_growth(json, "cache_entry", g, sizeof g);
    if (strcmp(g, "turning over"))
        fail_msg("%s: the cache reads '%s':\n%s", trace, g, json);
    int req = ranked_growth(json, "request_site", g, sizeof g);
    assert_string_equal(g, "growing");
    int leak = ranked_growth(json, "leak_site", g, sizeof g);
    assert_string_equal(g, "growing");
    if (req > cache || leak > cache)
        fail_msg("%s: the cache (#%d) ranks above a leak (#%d, #%d)", trace, cache, req, leak);
    if (table) {
        assert_true(ranked_growth(json, "table_site", g, sizeof g) > 0);
        assert_string_equal(g, "at once");
    }
    free(json);
    char *text = analyze(trace, "--width 0", 0);
    const char *line = strstr(text, "\n        cache_entry"), *head = line;
    while (head && head > text && strncmp(head, "    #", 5))
        head--;
    if (!line || !head || !strstr(head, ", turning over: ") || strstr(head, ", turning over: ") > line)
        fail_msg("%s: the cache's line does not say it turns over:\n%s", trace, text);
    free(text);
}

static void test_cache_turning_over(void **state)
{
    (void)state;
    assert_int_equal(system("mkdir -p turn && touch turn/go"), 0);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "'%s' turnover turn 6", tu_test_bin("snap-target"));
    record("turn.ltr", "", cmd);
    check_turnover("turn.ltr", 1);
    snprintf(cmd, sizeof cmd, "'%s' turnover turn 9", tu_test_bin("snap-target"));
    record("turn-mem.ltr", "--memory --buffer-size 64 --buffers 30", cmd);
    check_turnover("turn-mem.ltr", 0);
}

/* "t" of the heap Alloc of this size in `ltr dump --json` (the first), or -1. */
static double alloc_time(const char *dump, long long size)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"size\":%lld", size);
    for (const char *p = strstr(dump, pat); p; p = strstr(p + 1, pat)) {
        char next = p[strlen(pat)];
        const char *line = p;
        while (line > dump && line[-1] != '\n')
            line--;
        if ((next == ',' || next == '}') && strstr(line, "\"event\":\"Alloc\"") < p &&
            strstr(line, "\"event\":\"Alloc\"") && !strncmp(line, "{\"t\":", 5))
            return strtod(line + 5, NULL);
    }
    return -1;
}

static double num_s(const char *from, const char *key)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = from ? strstr(from, pat) : NULL;
    return p ? strtod(p + strlen(pat), NULL) : -1;
}

/* The peak of a program recorded in file and in memory mode: the bytes two
 * threads hold at one moment, at the time of the allocation that made it,
 * whatever the order of their buffers in the file (tests/programs/overlap.c). */
static void check_peak(const char *mode, const char *opts, long long peak, long long size_a, long long size_b)
{
    char trace[64], cmd[4200];
    snprintf(trace, sizeof trace, "overlap-%s-%s.ltr", mode, opts[0] ? "memory" : "file");
    snprintf(cmd, sizeof cmd, "'%s' %s", tu_test_bin("analyze-overlap"), mode);
    record(trace, opts, cmd);
    char *json = analyze(trace, "--format json", 0);
    tu_result d = tu_run("'%s' dump --json '%s'", tu_ltr(), trace);
    assert_int_equal(d.status, 0);
    double t_a = alloc_time(d.out, size_a), t_b = alloc_time(d.out, size_b);
    assert_true(t_a >= 0 && t_b >= 0);
    double t_at = t_a > t_b ? t_a : t_b; /* the peak is reached by the later of the two */
    const char *sum = strstr(json, "\"summary\"");
    long long got = num_after(sum, "peak_bytes");
    double got_s = num_s(sum, "peak_s");
    if (got < peak || got >= peak + (512 << 10) || got_s < t_at - 2e-9 || got_s > t_at + 2e-9)
        fprintf(stderr, "%s %s: peak %lld bytes at %.9f s; expected %lld (+ the loader's blocks) at %.9f s\n",
                mode, opts, got, got_s, peak, t_at);
    assert_true(got >= peak && got < peak + (512 << 10));
    assert_true(got_s >= t_at - 2e-9 && got_s <= t_at + 2e-9);
    const char *proc = strstr(json, "\"processes\":[");
    assert_int_equal(num_after(proc, "peak_bytes"), got);
    assert_null(strstr(json, "later than what the analysis could hold"));
    tu_free(&d);
    free(json);
}

static void test_peak_in_time_order(void **state)
{
    (void)state;
    const char *modes[2] = {"", "--memory"};
    for (int m = 0; m < 2; m++) {
        check_peak("together", modes[m], 12 << 20, 8 << 20, 4 << 20);
        check_peak("later", modes[m], 3 << 20, 2 << 20, 1 << 20);
    }
    /* room for too few events to order them: said, not hidden */
    tu_result r = tu_run("LTR_ANALYZE_HOLD=1 '%s' analyze overlap-together-file.ltr", tu_ltr());
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "heap event(s) came in the trace later than what the analysis could hold to "
                                  "put the threads' events in time order"));
    assert_non_null(strstr(r.out, "(it held 1 events; LTR_ANALYZE_HOLD=N holds N;"));
    tu_free(&r);
    /* A parent whose buffer is written when it ends, after its child's
     * 200 001 events (a compiler driver): late only against the child's,
     * which changes none of either's figures (a review's g++ trace warned
     * as if every figure might be off). Said as what it is; each process's
     * figures the same as with room for all. */
    r = tu_run("'%s' record --force -o driver.ltr -- bash -c '%s many; true'", tu_ltr(),
               tu_test_bin("heap-target"));
    assert_int_equal(r.status, 0);
    tu_free(&r);
    tu_result small = tu_run("LTR_ANALYZE_HOLD=1000 '%s' analyze driver.ltr --format json", tu_ltr());
    tu_result all = tu_run("LTR_ANALYZE_HOLD=10000000 '%s' analyze driver.ltr --format json", tu_ltr());
    assert_int_equal(small.status, 0);
    assert_int_equal(all.status, 0);
    if (!strstr(small.out, "after later events of other processes had been analyzed") ||
        !strstr(small.out, "each process's figures are exact") ||
        strstr(small.out, "later than what the analysis could hold"))
        fail_msg("a driver's events behind its child's: %s", small.out);
    const char *ps = strstr(small.out, "\"processes\""), *pa = strstr(all.out, "\"processes\"");
    assert_non_null(ps);
    assert_non_null(pa);
    const char *es = strstr(ps, "\"warnings\""), *ea = strstr(pa, "\"warnings\"");
    size_t ns = es ? (size_t)(es - ps) : strlen(ps), na = ea ? (size_t)(ea - pa) : strlen(pa);
    if (ns != na || memcmp(ps, pa, ns) != 0)
        fail_msg("per process, held 1000: %.*s\nheld all: %.*s", (int)ns, ps, (int)na, pa);
    tu_free(&small);
    tu_free(&all);
}

/* Copies trace from into to with its SPANS chunk (format/chunkindex.h)
 * lying (every entry's events 0, its latest time 0: nothing said to wait)
 * or, damaged, its payload's first byte changed (its CRC then fails). */
static void spans_rewritten(const char *from, const char *to, int damaged)
{
    FILE *f = fopen(from, "rb");
    assert_non_null(f);
    static uint8_t buf[64 << 20];
    size_t len = fread(buf, 1, sizeof buf, f), found = 0;
    fclose(f);
    f = fopen(to, "wb");
    assert_non_null(f);
    fwrite(buf, 1, LTR_FILE_HEADER_SIZE, f);
    for (size_t off = LTR_FILE_HEADER_SIZE; off + LTR_CHUNK_HEADER_SIZE <= len;) {
        ltr_chunk_header h;
        assert_int_equal(ltr_chunk_header_decode(buf + off, &h), LTR_CHUNK_OK);
        size_t next = off + LTR_CHUNK_HEADER_SIZE + h.payload_size;
        if (h.type == LTR_CHUNK_SPANS && damaged) {
            buf[off + LTR_CHUNK_HEADER_SIZE] ^= 0x55;
        } else if (h.type == LTR_CHUNK_SPANS) { /* stored, not compressed: one entry's span at a time */
            uint8_t *spans = calloc(1, h.raw_size + 1), hdr[LTR_CHUNK_HEADER_SIZE];
            assert_non_null(spans);
            for (uint32_t k = 0; k + 16 <= h.raw_size; k += 16)
                spans[k] = 1; /* process 1, no events, latest time 0 */
            h.flags = 0;
            h.payload_size = h.raw_size;
            h.payload_crc = ltr_crc32(spans, h.raw_size);
            ltr_chunk_header_encode(&h, hdr);
            fwrite(hdr, 1, sizeof hdr, f);
            fwrite(spans, 1, h.raw_size, f);
            free(spans);
            found++;
            off = next;
            continue;
        }
        found += h.type == LTR_CHUNK_SPANS;
        fwrite(buf + off, 1, next - off, f);
        off = next;
    }
    fclose(f);
    assert_int_equal(found, 1);
}

/* The peak of behind.ltr analyzed with env (12 MiB, both threads' blocks)
 * and whether it said it analyzed the trace again; a damaged trace's
 * analysis exits 3. */
static void check_behind(const char *trace, const char *env, int again, int status)
{
    tu_result r = tu_run("%s '%s' analyze '%s' --format json", env, tu_ltr(), trace);
    if (r.status != status)
        fail_msg("%s %s: %d %s", env, trace, r.status, r.err);
    const char *sum = strstr(r.out, "\"summary\"");
    assert_non_null(sum);
    long long peak = num_after(sum, "peak_bytes");
    if (peak < (12ll << 20) || peak >= (12ll << 20) + (512 << 10))
        fail_msg("%s %s: peak %lld bytes, not 12 MiB: %s", env, trace, peak, r.out);
    if (!strstr(r.out, "it analyzed the trace again, holding") != !again ||
        strstr(r.out, "later than what the analysis could hold"))
        fail_msg("%s %s: %s", env, trace, r.out);
    tu_free(&r);
}

/* A thread's buffer written when it exits, 1.4 M events after its
 * allocation (overlap.c "behind"): behind the 256 K events the analysis
 * holds at first. The trace's index tells how many must wait (its SPANS
 * chunk): it is analyzed once, holding them, and the peak is the 12 MiB
 * both threads held (a single pass holding 256 K found 8, the thread's
 * block counted after the main thread's was freed). Without the spans (the
 * index ignored, as for a trace written before them; the SPANS chunk
 * damaged) or with spans that say too little, events come late: it
 * analyzes the trace again holding as many as it saw come behind, and says
 * so. LTR_ANALYZE_HOLD sets the hold and analyzes once. */
static void test_far_behind_held_by_the_index(void **state)
{
    (void)state;
    char *json = record_analyzed("behind.ltr", "analyze-overlap", "behind", "--format json");
    free(json);
    check_behind("behind.ltr", "", 0, 0);
    check_behind("behind.ltr", "LTR_ANALYZE_INDEX=0", 1, 0);
    spans_rewritten("behind.ltr", "behind-lie.ltr", 0);
    check_behind("behind-lie.ltr", "", 1, 0);
    spans_rewritten("behind.ltr", "behind-damaged.ltr", 1);
    check_behind("behind-damaged.ltr", "", 1, 3);
    /* the one pass's report is the second pass's but for its note (warnings, then the summary) */
    tu_result once = tu_run("'%s' analyze behind.ltr --format json", tu_ltr());
    tu_result twice = tu_run("'%s' analyze behind-lie.ltr --format json", tu_ltr());
    assert_int_equal(once.status, 0);
    assert_int_equal(twice.status, 0);
    const char *s1 = strstr(once.out, "\"summary\""), *s2 = strstr(twice.out, "\"summary\"");
    assert_non_null(s1);
    assert_non_null(s2);
    if (strcmp(s1, s2))
        fail_msg("one pass: %s\ntwo: %s", once.out, twice.out);
    tu_free(&twice);
    tu_free(&once);
    json = analyze("behind-lie.ltr", "--format json", 0);
    once = tu_run("LTR_ANALYZE_HOLD=262144 '%s' analyze behind.ltr --format json", tu_ltr());
    assert_int_equal(once.status, 0);
    assert_non_null(strstr(once.out, "later than what the analysis could hold"));
    assert_null(strstr(once.out, "analyzed the trace again"));
    /* the first pass feeds its model nothing past the first late event (its
     * figures are thrown away) but counts every late one, as one pass does */
    const char *late = strstr(json, "time order (");
    const char *late_once = strstr(once.out, "\"warnings\":[\"");
    assert_non_null(late);
    assert_non_null(late_once);
    long long n = strtoll(late + strlen("time order ("), NULL, 10), n_once = strtoll(late_once + 13, NULL, 10);
    if (n != n_once || n <= 0)
        fail_msg("the first pass counted %lld late, one pass holding as many %lld", n, n_once);
    free(json);
    tu_free(&once);
}

static void test_pprof_with_go(void **state)
{
    (void)state;
    tu_result r = tu_run("'%s' export '%s' --format pprof -o leaky.pb.gz", tu_ltr(), leaky_trace);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    r = tu_run("command -v go");
    int have_go = r.status == 0;
    tu_free(&r);
    if (!have_go) {
        fprintf(stderr, "go is not installed (Debian package golang-go): pprof not checked\n");
        skip();
    }
    r = tu_run("HOME=$PWD GOCACHE=$PWD/gocache go tool pprof -symbolize=none -sample_index=inuse_space "
               "-unit=B -top leaky.pb.gz");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "Type: inuse_space"));
    const char *line = strstr(r.out, "64000B");
    assert_non_null(line);
    assert_non_null(strstr(line, "remember_session"));
    tu_free(&r);
    r = tu_run("HOME=$PWD GOCACHE=$PWD/gocache go tool pprof -symbolize=none -sample_index=alloc_objects "
               "-nodecount=1000 -nodefraction=0 -top leaky.pb.gz");
    assert_int_equal(r.status, 0);
    line = strstr(r.out, "2000 ");
    assert_non_null(line);
    assert_non_null(strstr(r.out, "parse_request"));
    assert_non_null(strstr(r.out, "demo::Cache::insert")); /* pprof drops the parameters */
    tu_free(&r);
    /* Mappings: the traced program first (pprof's main binary), each module with its build-id,
     * and every location in one */
    r = tu_run("HOME=$PWD GOCACHE=$PWD/gocache go tool pprof -symbolize=none -raw leaky.pb.gz");
    assert_int_equal(r.status, 0);
    const char *maps = strstr(r.out, "\nMappings\n");
    assert_non_null(maps);
    const char *first = strstr(maps, "\n1: ");
    assert_non_null(first);
    const char *end = strchr(first + 1, '\n');
    char *main_line = strndup(first + 1, (size_t)(end - first - 1));
    assert_non_null(strstr(main_line, "/demo/leaky "));
    const char *id = strrchr(main_line, '/');
    assert_true(strlen(id) > 42 && strspn(strchr(id, ' ') + 1, "0123456789abcdef") == 40);
    free(main_line);
    assert_non_null(strstr(maps, "libleaky-plugin.so "));
    const char *locs = strstr(r.out, "\nLocations\n");
    assert_non_null(locs);
    assert_true(locs < maps);
    int nlocs = 0;
    for (const char *l = strchr(locs + 1, '\n'); l && l < maps; l = strchr(l + 1, '\n')) {
        char text[512] = "";
        sscanf(l + 1, "%511[^\n]", text);
        if (!strstr(text, ": 0x"))
            continue; /* a further inlined frame of the location above */
        const char *m = strstr(text, " M=");
        if (!m || m[3] == '0')
            fail_msg("location without a mapping: %s", text);
        nlocs++;
    }
    assert_true(nlocs > 10);
    tu_free(&r);
}

static void test_folded_with_flamegraph(void **state)
{
    (void)state;
    tu_result r = tu_run("'%s' export '%s' --format folded -o leaky.folded", tu_ltr(), leaky_trace);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    r = tu_run("grep -c '' leaky.folded; grep ';worker;remember_session 64000$' leaky.folded; "
               "grep -vc '^[^ ]*\\(;[^;]*\\)* [0-9][0-9]*$' leaky.folded");
    assert_non_null(strstr(r.out, ";worker;remember_session 64000\n"));
    tu_free(&r);
    /* Brendan Gregg's flamegraph.pl: Debian ships it inside libdevel-nytprof-perl
     * (scripts/install-deps.sh installs it); LTR_FLAMEGRAPH names another copy. */
    const char *fg = getenv("LTR_FLAMEGRAPH");
    if (!fg || !*fg)
        fg = "/usr/share/perl5/Devel/NYTProf/flamegraph.pl";
    r = tu_run("perl %s --countname bytes leaky.folded > leaky.svg && grep -o 'remember_session (64,000 bytes' leaky.svg",
               fg);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "remember_session (64,000 bytes"));
    tu_free(&r);
    /* nothing allocated in the window: an empty file, which flamegraph.pl
     * refuses, said so (and no earlier --to advised: there is none) */
    r = tu_run("'%s' export '%s' --format folded --to 0 -o empty.folded && test ! -s empty.folded", tu_ltr(),
               leaky_trace);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "no allocation in the window: the folded stacks are empty"));
    assert_null(strstr(r.err, "--to T"));
    tu_free(&r);
}

/* Copies the demo into dir, records it there, and returns the trace path. */
/* A copy of the demo recorded without the names of its frames (these tests
 * are of the analysis finding them here); opts: more record options. */
static const char *record_copy_opts(const char *dir, const char *opts)
{
    static char trace[4200];
    tu_result r = tu_run("mkdir -p %s && cp '%s' '%s' %s/", dir, demo_bin("leaky"),
                         demo_bin("libleaky-plugin.so"), dir);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    snprintf(trace, sizeof trace, "%s/leaky.ltr", dir);
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "$PWD/%s/leaky", dir);
    record(trace, opts, cmd);
    return trace;
}

static const char *record_copy(const char *dir) { return record_copy_opts(dir, "--no-symbols"); }

/* One file under two paths (git's /usr/bin/git and /usr/lib/git-core/git
 * are hard links), stripped: one warning, for the build-id both share (a
 * review saw two). */
static void test_one_file_two_paths_one_warning(void **state)
{
    (void)state;
    tu_result r = tu_run("mkdir -p twice && cp '%s' '%s' twice/ && ln -f twice/leaky twice/leaky-again",
                         demo_bin("leaky"), demo_bin("libleaky-plugin.so"));
    assert_int_equal(r.status, 0);
    tu_free(&r);
    record("twice/leaky.ltr", "--no-symbols", "sh -c \"$PWD/twice/leaky; $PWD/twice/leaky-again\"");
    r = tu_run("strip twice/leaky && '%s' analyze twice/leaky.ltr --top 1", tu_ltr());
    assert_int_equal(r.status, 0);
    int once = strstr(r.out, "twice/leaky has no symbols here") != NULL,
        again = strstr(r.out, "twice/leaky-again has no symbols here") != NULL;
    if (once + again != 1)
        fail_msg("wanted one warning about the stripped program:\n%s", r.out);
    tu_free(&r);
}

static void test_separate_debug_info(void **state)
{
    (void)state;
    const char *trace = record_copy("dbg");
    /* move the plugin's DWARF into debug/.build-id/xx/rest.debug, strip the copy */
    tu_result r = tu_run(
        "set -e; cd dbg; id=$(readelf -n libleaky-plugin.so | sed -n 's/.*Build ID: //p');"
        "mkdir -p debug/.build-id/${id%%${id#??}}; objcopy --only-keep-debug libleaky-plugin.so "
        "debug/.build-id/${id%%${id#??}}/${id#??}.debug; strip --strip-debug libleaky-plugin.so;"
        "readelf -S libleaky-plugin.so | grep -c debug_info || true");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "0"));
    tu_free(&r);
    char *json = analyze(trace, "--format json --top 0 --debug-dir $PWD/dbg/debug", 0);
    const char *e = entry_of(json, "stacks", "plugin_cache_add", "AIFO");
    assert_non_null(e);
    assert_non_null(strstr(e, "\"file\":\"") );
    assert_true(strstr(e, "plugin.c\"") < strstr(e, "}"));
    assert_int_equal(num_after(e, "bytes"), 10240);
    free(json);
}

/* A stripped program: the report names it as a module without symbols, with
 * its build-id, where its debug file would be and how to get one; with
 * that debug file under --debug-dir its frames are named again. */
static void test_modules_without_symbols(void **state)
{
    (void)state;
    const char *trace = record_copy("stripped");
    tu_result r = tu_run("set -e; cd stripped; objcopy --only-keep-debug leaky kept-debug; strip leaky;"
                         "readelf -n leaky | sed -n 's/.*Build ID: //p'");
    assert_int_equal(r.status, 0);
    char id[130] = "";
    assert_int_equal(sscanf(r.out, "%129s", id), 1);
    tu_free(&r);
    char *cwd = getcwd(NULL, 0), want[8192];
    assert_non_null(cwd);
    r = tu_run("'%s' analyze '%s' --top 3", tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    snprintf(want, sizeof want, "warning: module %s/stripped/leaky has no symbols here (no .symtab or DWARF in "
             "it, and no debug file found for its build-id %s): only the functions it exports are named "
             "(.dynsym), its other frames show ?? with module+offset; its "
             "debug file would be /usr/lib/debug/.build-id/%.2s/%s.debug\n", cwd, id, id, id + 2);
    if (!strstr(r.out, want))
        fprintf(stderr, "wanted: %s\ngot: %s\n", want, r.out);
    assert_non_null(strstr(r.out, want));
    assert_non_null(strstr(r.out, "apt install PKG-dbgsym"));
    assert_non_null(strstr(r.out, "DEBUGINFOD_URLS="));
    assert_non_null(strstr(r.out, "pass --debug-dir DIR"));
    assert_null(strstr(r.out, "libleaky-plugin.so has no symbols")); /* not stripped */
    assert_non_null(strstr(r.out, "??  leaky+0x"));
    tu_free(&r);
    char *json = analyze(trace, "--format json --top 3", 0);
    snprintf(want, sizeof want, "\"modules_without_symbols\":[{\"path\":\"%s/stripped/leaky\",\"build_id\":\"%s\","
             "\"debug_file\":\"/usr/lib/debug/.build-id/%.2s/%s.debug\"}]", cwd, id, id, id + 2);
    assert_non_null(strstr(json, want));
    assert_non_null(strstr(json, "has no symbols here"));
    free(json);
    /* the debug file where the warning says, under --debug-dir: named again, no warning */
    r = tu_run("set -e; cd stripped; mkdir -p debug/.build-id/%.2s; mv kept-debug debug/.build-id/%.2s/%s.debug",
               id, id, id + 2);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    json = analyze(trace, "--format json --top 3 --debug-dir $PWD/stripped/debug:/usr/lib/debug", 0);
    assert_null(strstr(json, "stripped/leaky has no symbols"));
    assert_null(strstr(json, "/stripped/leaky\",\"build_id\""));
    assert_non_null(entry_of(json, "stacks", "remember_session", "AIFO"));
    free(json);
    json = analyze(leaky_trace, "--format json --top 3", 0); /* nothing stripped */
    assert_null(strstr(json, "/leaky has no symbols"));
    assert_null(strstr(json, "libleaky-plugin.so has no symbols"));
    free(json);
    free(cwd);
}

/* ltr export of a trace whose program is stripped: one short line on stderr
 * per export, sending to ltr analyze for the module and how to get its
 * symbols (a script exporting four formats got the paragraphs four times),
 * and the data on standard output whole (jq, gzip, the folded lines, the
 * csv's rows); chrome shows no frame, so it has no module to warn of. */
static void test_export_says_symbols_in_one_line(void **state)
{
    (void)state;
    const char *trace = record_copy("stripx");
    tu_expect_ok(tu_run("strip stripx/leaky"));
    static const char *const formats[] = {"pprof", "folded", "json", "csv"};
    static const char *const checks[] = {"gzip -t $F", "grep -q 'leaky;' $F && ! grep -qv ' [0-9][0-9]*$' $F",
                                         "jq -e .processes $F >/dev/null", "head -1 $F | grep -q '^pid,'"};
    for (size_t i = 0; i < 4; i++) {
        tu_result r = tu_run("F=stripx/out; '%s' export '%s' --format %s -o - > $F && %s", tu_ltr(), trace,
                             formats[i], checks[i]);
        if (r.status != 0)
            fail_msg("export %s: status %d, stderr:\n%s", formats[i], r.status, r.err);
        static const char line[] = "ltr export: warning: 1 module(s) have no symbols here";
        const char *w = strstr(r.err, line);
        if (!w || strstr(w + sizeof line, "no symbols") || strstr(r.err, "apt install") || strstr(r.err, "debug file"))
            fail_msg("export %s: wanted one line about the stripped program, got:\n%s", formats[i], r.err);
        assert_non_null(strstr(w, "'ltr analyze stripx/leaky.ltr' names them"));
        tu_free(&r);
    }
    tu_result r = tu_run("'%s' export '%s' --format chrome -o - | jq -e .traceEvents >/dev/null", tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "symbols"));
    tu_free(&r);
}

/* A trace of a megabyte and more is analyzed by the command run again with
 * glibc's malloc on huge pages (analysis-args.c): the report is the one
 * the command gives when it is not. */
static void test_large_trace_same_report(void **state)
{
    (void)state;
    tu_result r = tu_run("'%s' record --no-symbols -o large.ltr -- /usr/bin/python3 -c 'import random\n"
                         "l = [None] * 5000\nfor i in range(300000): l[random.randrange(5000)] = "
                         "bytes(random.randrange(520, 4000))' && stat -c %%s large.ltr", tu_ltr());
    assert_int_equal(r.status, 0);
    assert_true(atoll(r.out) >= 1 << 20); /* large enough to be run again */
    tu_free(&r);
    char *tuned = analyze("large.ltr", "--format json --top 5", 0);
    r = tu_run("GLIBC_TUNABLES=glibc.malloc.hugetlb=0 '%s' analyze large.ltr --format json --top 5", tu_ltr());
    assert_int_equal(r.status, 0);
    assert_string_equal(tuned, r.out);
    assert_non_null(strstr(tuned, "\"heap_events\":"));
    tu_free(&r);
    free(tuned);
}

/* The page faults of `ltr analyze TRACE --format json`, of a run allowed
 * huge pages and of one refused them (PR_SET_THP_DISABLE, inherited), and
 * whether their reports are the same. */
static const char faults_py[] =
    "import ctypes, resource, subprocess, sys\n"
    "def run(refused):\n"
    "    libc = ctypes.CDLL(None, use_errno=True)\n"
    "    pre = (lambda: libc.prctl(41, 1, 0, 0, 0)) if refused else None\n"
    "    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt\n"
    "    out = subprocess.run([sys.argv[1], 'analyze', sys.argv[2], '--format', 'json'],\n"
    "                         stdout=subprocess.PIPE, check=True, preexec_fn=pre).stdout\n"
    "    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - before, out\n"
    "(a, ja), (r, jr) = run(False), run(True)\n"
    "print('allowed=%d refused=%d same=%d' % (a, r, ja == jr))\n";

/* A trace of events that pack well is large for the analysis's heap however
 * small its file (analysis-args.c reads its chunks' raw sizes): python's
 * churn of 300 000 blocks, 600 K events in a file of about 16 KB, waits
 * 10 MiB of them in the time-order stage. Its heap is on huge pages: under
 * half the page faults of the analysis refused them (at 1 MiB of file
 * alone, 8 750 against 9 340); the report the same. Skipped where the
 * machine's THP mode is not madvise (always: huge pages come unasked). */
static void test_small_file_of_many_events_on_huge_pages(void **state)
{
    (void)state;
#ifdef __SANITIZE_ADDRESS__
    skip(); /* ltr's heap is the sanitizer's there, which takes no huge pages: 22 715 faults against 23 851 */
#endif
    char *thp = tu_read_file("/sys/kernel/mm/transparent_hugepage/enabled");
    int madvise = thp && strstr(thp, "[madvise]");
    free(thp);
    if (!madvise)
        skip();
    tu_result r = tu_run("'%s' record --no-symbols -o packed.ltr -- /usr/bin/python3 -c "
                         "'for i in range(300000): bytes(1000)' && stat -c %%s packed.ltr", tu_ltr());
    if (r.status != 0)
        fail_msg("recording the churn: status %d: %s", r.status, r.err);
    assert_true(atoll(r.out) < 1 << 20); /* small enough for the file's size to say no */
    tu_free(&r);
    tu_write_file(".", "faults.py", faults_py);
    r = tu_run("/usr/bin/python3 faults.py '%s' packed.ltr", tu_ltr());
    assert_int_equal(r.status, 0);
    long long allowed = tu_field(r.out, "allowed"), refused = tu_field(r.out, "refused");
    if (allowed < 0 || refused < 0 || allowed * 2 >= refused || tu_field(r.out, "same") != 1)
        fail_msg("wanted under half the page faults of the run refused huge pages, the same report: %s", r.out);
    tu_free(&r);
}

/* A python3 on pymalloc is told that its objects are not in the figures,
 * and how to have them; the same program on malloc is not (a new user's
 * review: a python3 service's growing dict was 8 heap events, nothing said
 * why). node is told of V8's heap. */
static void test_interpreters_said(void **state)
{
    (void)state;
    static const char dict[] = "d = {i: str(i) * 3 for i in range(20000)}";
    tu_expect_ok(tu_run("env -u PYTHONMALLOC '%s' record --no-symbols -o pymalloc.ltr -- /usr/bin/python3 -c '%s'",
                        tu_ltr(), dict));
    tu_expect_ok(tu_run("PYTHONMALLOC=malloc '%s' record --no-symbols -o malloc.ltr -- /usr/bin/python3 -c '%s'",
                        tu_ltr(), dict));
    tu_result r = tu_run("'%s' analyze pymalloc.ltr --top 1", tu_ltr());
    assert_int_equal(r.status, 0);
    if (!strstr(r.out, "1 CPython process(es) (pid ") || !strstr(r.out, "run them with PYTHONMALLOC=malloc"))
        fail_msg("pymalloc not said: %s", r.out);
    tu_free(&r);
    r = tu_run("'%s' analyze malloc.ltr --top 1", tu_ltr());
    assert_int_equal(r.status, 0);
    if (strstr(r.out, "CPython"))
        fail_msg("said of a python3 on malloc: %s", r.out);
    tu_free(&r);
    r = tu_run("command -v node >/dev/null || exit 77; '%s' record --no-symbols -o node.ltr -- node -e "
               "'const b = []; for (let i = 0; i < 1000; i++) b.push(Buffer.alloc(1000))' && "
               "'%s' analyze node.ltr --top 1", tu_ltr(), tu_ltr());
    if (r.status != 77 && !strstr(r.out, "1 node process(es) (pid "))
        fail_msg("node's V8 heap not said (status %d): %s%s", r.status, r.out, r.err);
    tu_free(&r);
}

static void test_build_id_mismatch(void **state)
{
    (void)state;
    const char *trace = record_copy("mismatch");
    /* another build of the plugin replaces the recorded one */
    tu_result r = tu_run("cd mismatch && printf 'void plugin_cache_add(int k) { (void)k; }\\n"
                         "int other(void) { return 1; }\\n' | cc -shared -fPIC -g -o libleaky-plugin.so -x c -");
    assert_int_equal(r.status, 0);
    tu_free(&r);
    r = tu_run("'%s' analyze '%s' --format json --top 0", tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "libleaky-plugin.so was not symbolized (build-id differs"));
    /* the leak is still found, its frame left as module+offset */
    assert_null(entry_of(r.out, "stacks", "plugin_cache_add", "AIFO"));
    const char *p = strstr(r.out, "\"function\":null,\"file\":null,\"line\":null,\"module\":\"");
    assert_non_null(p);
    tu_free(&r);
    r = tu_run("'%s' analyze '%s' --top 3", tu_ltr(), trace);
    const char *third = strstr(r.out, "#3 AIFO 10.0 KiB in 40 allocations");
    assert_non_null(third);
    assert_true(strstr(third, "\n        ??  libleaky-plugin.so+0x") == strchr(third, '\n'));
    tu_free(&r);
}

static void test_bad_input(void **state)
{
    (void)state;
    tu_result r = tu_run("cp '%s' damaged.ltr && size=$(stat -c %%s damaged.ltr) && "
                         "printf 'XXXXXXXXXXXXXXXX' | dd of=damaged.ltr bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null",
                         leaky_trace);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    r = tu_run("'%s' analyze damaged.ltr", tu_ltr());
    assert_int_equal(r.status, 3);
    assert_non_null(strstr(r.err, "the trace is damaged"));
    assert_non_null(strstr(r.out, "warning: the trace is damaged"));
    tu_free(&r);
    r = tu_run("echo hello > notatrace.ltr; '%s' analyze notatrace.ltr", tu_ltr());
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "not an ltr trace"));
    tu_free(&r);
    r = tu_run("'%s' analyze '%s' --from 'no such marker'", tu_ltr(), leaky_trace);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "--from: 'no such marker' is neither a number of seconds nor the text of a marker"));
    tu_free(&r);
    r = tu_run("'%s' analyze '%s' --format xml", tu_ltr(), leaky_trace);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--format: 'xml'"));
    tu_free(&r);
    r = tu_run("'%s' export '%s' --format pprof", tu_ltr(), leaky_trace);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "-o OUT is required"));
    tu_free(&r);
    r = tu_run("'%s' analyze missing.ltr", tu_ltr());
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "missing.ltr"));
    tu_free(&r);
    /* a FIFO no one writes: said so, not opened to read its chunk headers
     * first (analysis-args.c), which would wait for a writer (124: timeout's) */
    r = tu_run("mkfifo pipe.ltr && timeout 60 '%s' analyze pipe.ltr", tu_ltr());
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "pipe.ltr: is not a regular file"));
    tu_free(&r);
}

/* A trace's name that leads (a symlink another user put in a directory of
 * theirs) to a FIFO, whose writer waits in its open: not opened, so the
 * writer is not let go (the open of a device, a watchdog's, runs its
 * driver's code the same way). The writer, waiting in openat (257) before
 * ltr runs, says whether ltr or the test's own open after it (read-write:
 * it never waits) let it go. ltr info, analyze and merge, each. */
static void test_trace_name_leading_to_a_fifo_not_opened(void **state)
{
    (void)state;
    static const char *const cmds[] = {"info lead.ltr", "analyze lead.ltr", "merge lead.ltr other.ltr -o m.ltr"};
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        tu_result r = tu_run("rm -f w.fifo lead.ltr other.ltr released who && mkfifo w.fifo && ln -s w.fifo lead.ltr && "
                             "cp '%s' other.ltr && "
                             "{ (exec 3>w.fifo; if [ -e released ]; then echo test; else echo ltr; fi > who) & } && "
                             "w=$! && until [ \"$(cut -d' ' -f1 /proc/$w/syscall 2>/dev/null)\" = 257 ]; do sleep 0.01; done && "
                             "timeout 60 '%s' %s; echo status=$?; touch released; exec 4<>w.fifo; wait $w; cat who",
                             leaky_trace, tu_ltr(), cmds[i]);
        if (!strstr(r.out, "status=1\n") || !strstr(r.out, "\ntest\n") || !strstr(r.err, "lead.ltr"))
            fail_msg("ltr %s: the FIFO was opened, or the command did not refuse it:\n%s%s", cmds[i], r.out, r.err);
        tu_free(&r);
    }
}

/* Windows and processes the trace cannot answer for. */
static void test_window_and_pid_mistakes(void **state)
{
    (void)state;
    tu_result r = tu_run("'%s' analyze '%s' --from 0.005 --to 0.004", tu_ltr(), leaky_trace);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "the window is empty: --to '0.004' (0.004000 s) comes before --from '0.005'"));
    assert_string_equal(r.out, "");
    tu_free(&r);
    r = tu_run("'%s' export '%s' --pid 1 --format folded -o none.folded; rc=$?; test ! -e none.folded && exit $rc",
               tu_ltr(), leaky_trace);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "--pid 1: "));
    assert_non_null(strstr(r.err, "has no process 1 (its processes: "));
    tu_free(&r);
    /* --trend of a trace without heap snapshots says there is none, and why */
    r = tu_run("'%s' analyze '%s' --trend", tu_ltr(), leaky_trace);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "trend across periodic snapshots: none (the trace holds no heap snapshot"));
    /* and at the top, among the warnings, before the whole report it had come after */
    const char *top = strstr(r.out, "warning: --trend: the trace holds no heap snapshot, so no trend");
    const char *first = strstr(r.out, "\nprocess ");
    if (!top || !first || top > first)
        fail_msg("--trend without snapshots not said at the top:\n%s", r.out);
    tu_free(&r);
    /* a window outside the trace is the --from after the --to's mistake:
     * exit 1 naming the trace's span, for analyze, export and report alike
     * (it was a warning, an empty report or profile, and exit 0) */
    static const char *const cmds[] = {"analyze '%s' --from 1000", "export '%s' --from 1000 --format pprof -o w.pprof",
                                       "report '%s' --from 1000 -o w.html"};
    for (size_t i = 0; i < 3; i++) {
        char cmd[200];
        snprintf(cmd, sizeof cmd, cmds[i], leaky_trace);
        r = tu_run("'%s' %s; rc=$?; test ! -e w.pprof -a ! -e w.html && exit $rc", tu_ltr(), cmd);
        if (r.status != 1 || *r.out || !strstr(r.err, "the window is outside the trace: --from '1000' (1000.000000 s) "
                                                      "comes after its last event (") ||
            !strstr(r.err, "; the trace covers 0.000000 s .. "))
            fail_msg("%s: status %d\n%s%s", cmd, r.status, r.out, r.err);
        tu_free(&r);
    }
    /* a window within the trace but before its first event is empty, said */
    r = tu_run("'%s' analyze '%s' --to 0", tu_ltr(), leaky_trace);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "warning: the window ends before the trace's first event ("));
    assert_non_null(strstr(r.out, " 0 allocations, 0 frees"));
    /* no heap event in the window, so no peak: not "peak 0 B" beside the
     * bytes outstanding all through it */
    assert_null(strstr(r.out, "peak 0 B"));
    assert_non_null(strstr(r.out, "; no peak (no heap event in the window)"));
    tu_free(&r);
    /* a --to past the end: the window (and every rate) ends at the last event */
    r = tu_run("'%s' analyze '%s' --to 999 --format json", tu_ltr(), leaky_trace);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "the window ends after the trace's last event ("));
    double to = num_s(strstr(r.out, "\"window\""), "to_s");
    assert_true(to > 0 && to < 999);
    tu_free(&r);
}

static int setup(void **state)
{
    (void)state;
    const char *dir = tu_sandbox();
    if (chdir(dir) != 0)
        return -1;
    snprintf(demo_dir, sizeof demo_dir, "%s", tu_demo_dir());
    snprintf(leaky_trace, sizeof leaky_trace, "%s/leaky.ltr", dir);
    tu_result r = tu_run("'%s' record -o '%s' -- '%s'", tu_ltr(), leaky_trace, demo_bin("leaky"));
    int ok = r.status == 0;
    if (!ok)
        fprintf(stderr, "recording the demo failed: %s\n", r.err);
    tu_free(&r);
    return ok ? 0 : -1;
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
        cmocka_unit_test(test_demo_leaks),
        cmocka_unit_test(test_window_in_the_middle),
        cmocka_unit_test(test_temporaries_as_heaptrack),
        cmocka_unit_test(test_memory_mode),
        cmocka_unit_test(test_memory_mode_leak_beside_expiring_sessions),
        cmocka_unit_test(test_cache_turning_over),
        cmocka_unit_test(test_ended_process_of_many_stacks),
        cmocka_unit_test(test_ended_processes_leave_the_peak),
        cmocka_unit_test(test_window_holds_the_last_end),
        cmocka_unit_test(test_exec_is_another_image),
        cmocka_unit_test(test_exec_of_untraced_program_ends_its_image),
        cmocka_unit_test(test_peak_freed_before_the_end),
        cmocka_unit_test(test_pid_used_again_is_no_exec),
        cmocka_unit_test(test_exec_one_chrome_track),
        cmocka_unit_test(test_chrome_track_in_the_window),
        cmocka_unit_test(test_peak_in_time_order),
        cmocka_unit_test(test_far_behind_held_by_the_index),
        cmocka_unit_test(test_pprof_with_go),
        cmocka_unit_test(test_window_and_pid_mistakes),
        cmocka_unit_test(test_folded_with_flamegraph),
        cmocka_unit_test(test_folded_one_line_per_stack),
        cmocka_unit_test(test_separate_debug_info),
        cmocka_unit_test(test_modules_without_symbols),
        cmocka_unit_test(test_export_says_symbols_in_one_line),
        cmocka_unit_test(test_one_file_two_paths_one_warning),
        cmocka_unit_test(test_build_id_mismatch),
        cmocka_unit_test(test_large_trace_same_report),
        cmocka_unit_test(test_interpreters_said),
        cmocka_unit_test(test_small_file_of_many_events_on_huge_pages),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_trace_name_leading_to_a_fifo_not_opened),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
