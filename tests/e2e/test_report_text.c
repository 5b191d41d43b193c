/*
 * tests/e2e/test_report_text.c — the text report's rules as a user sees them,
 * on tests/programs/report_target.cpp (a one-time table of 3.22 MiB, then a
 * steady C++ leak of 3.12 MiB in a thread named "grower"):
 * - the steady leak ranks first though it is smaller, with its growth; the
 *   table second, "at once"; sizes in human units;
 * - start-up frames and operator new with the C++ library's frames are
 *   hidden, --full-stacks shows them; the same in folded stacks, whose root
 *   is the program without its pid, and in pprof (go tool pprof -traces);
 * - --width N: no line longer; piped without it, lines are whole;
 * - the thread's name; --json and --format json say the same;
 * - ltr export --format chrome has the Trace Event Format's shape and says
 *   what ltr analyze says.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LTR tu_ltr()

static char trace[4200];

static int record(void **state)
{
    const char *dir = tu_sandbox();
    *state = (void *)dir;
    snprintf(trace, sizeof trace, "%s/r.ltr", dir);
    tu_result r = tu_run("%s record -o %s -- %s", LTR, trace, tu_test_bin("report-target"));
    int ok = r.status == 0;
    tu_free(&r);
    return ok ? 0 : -1;
}

static size_t longest_line(const char *s)
{
    size_t best = 0;
    for (const char *l = s; *l;) {
        size_t n = strcspn(l, "\n");
        best = n > best ? n : best;
        l += n + (l[n] == '\n');
    }
    return best;
}

static void test_ranking_units_threads(void **state)
{
    (void)state;
    tu_result r = tu_run("%s analyze %s --top 2", LTR, trace);
    assert_int_equal(r.status, 0);
    const char *first = strstr(r.out, "    #1 AIFO "), *second = strstr(r.out, "    #2 AIFO ");
    assert_non_null(first);
    assert_non_null(second);
    /* the steady leak first: fewer bytes, but grown over the run */
    assert_non_null(strstr(first, "MiB in 200 allocations, growing "));
    /* the program runs for well under 10 s: no rate per minute made of it */
    const char *eol = strchr(first, '\n');
    const char *short_note = strstr(first, "too short a window for a rate"), *per_min = strstr(first, "/min");
    assert_true(short_note && short_note < eol);
    assert_true(!per_min || per_min > eol);
    assert_true(strstr(first, "Deep<") < second);
    assert_non_null(strstr(second, "MiB in 1 allocation, at once")); /* one: no plural */
    assert_true(strstr(second, "load_table") != NULL);
    assert_null(strstr(r.out, " bytes in ")); /* human units, not byte counts */
    const char *threads = strstr(r.out, "  threads: ");
    assert_non_null(threads);
    assert_true(strstr(threads, "grower (") < strchr(threads, '\n'));
    tu_free(&r);
}

static void test_hidden_frames(void **state)
{
    (void)state;
    tu_result r = tu_run("%s analyze %s --top 3", LTR, trace);
    tu_result full = tu_run("%s analyze %s --top 3 --full-stacks", LTR, trace);
    assert_int_equal(r.status, 0);
    assert_int_equal(full.status, 0);
    static const char *const hidden[] = {"__libc_start_call_main", "  _start  ", "start_thread", "operator new",
                                         "std::__new_allocator", "std::_Vector_base"};
    for (size_t i = 0; i < sizeof hidden / sizeof *hidden; i++) {
        if (strstr(r.out, hidden[i]))
            fail_msg("'%s' is shown by default", hidden[i]);
        if (i != 3 && !strstr(full.out, hidden[i])) /* the agent replaces operator new: never a frame here */
            fail_msg("'%s' is not shown with --full-stacks", hidden[i]);
    }
    assert_non_null(strstr(full.out, "start_thread"));
    tu_free(&r);
    tu_free(&full);
    r = tu_run("cd %s && %s export %s --format folded -o f.txt && %s export %s --format folded --full-stacks "
               "-o ff.txt && cat f.txt && echo ==== && cat ff.txt", (const char *)*state, LTR, trace, LTR, trace);
    assert_int_equal(r.status, 0);
    const char *sep = strstr(r.out, "====");
    assert_non_null(sep);
    assert_non_null(strstr(r.out, "report-target;grower;Deep<")); /* no pid, no start-up frames */
    assert_null(strstr(r.out, "report-target["));
    const char *in_full = strstr(sep, ";std::__new_allocator"), *in_default = strstr(r.out, ";std::__new_allocator");
    assert_non_null(in_full);
    assert_true(in_default == in_full); /* only in the --full-stacks one */
    assert_non_null(strstr(sep, "__libc_start_call_main;"));
    tu_free(&r);
}

static void test_pprof_hides_too(void **state)
{
    tu_result go = tu_run("go version");
    int have_go = go.status == 0;
    tu_free(&go);
    if (!have_go) {
        printf("skipped: go is not installed (scripts/install-deps.sh installs golang-go)\n");
        skip();
    }
    tu_result r = tu_run("cd %s && %s export %s --format pprof -o p.pb.gz && %s export %s --format pprof "
                         "--full-stacks -o pf.pb.gz && go tool pprof -traces p.pb.gz 2>/dev/null && echo ==== && "
                         "go tool pprof -traces pf.pb.gz 2>/dev/null", (const char *)*state, LTR, trace, LTR, trace);
    assert_int_equal(r.status, 0);
    const char *sep = strstr(r.out, "====");
    assert_non_null(sep);
    const char *def = strstr(r.out, "std::__new_allocator");
    assert_true(def == NULL || def > sep);
    assert_non_null(strstr(sep, "std::__new_allocator"));
    assert_non_null(strstr(r.out, "Deep::make")); /* pprof drops template arguments */
    tu_free(&r);
}

static void test_width(void **state)
{
    (void)state;
    tu_result r = tu_run("%s analyze %s --top 3 --full-stacks --width 60", LTR, trace);
    assert_int_equal(r.status, 0);
    if (longest_line(r.out) > 60)
        fail_msg("a line of %zu columns at --width 60:\n%s", longest_line(r.out), r.out);
    assert_non_null(strstr(r.out, "<...>")); /* C++ names shortened, not only cut */
    tu_free(&r);
    r = tu_run("%s analyze %s --top 3 --full-stacks | cat", LTR, trace); /* piped: whole lines */
    assert_true(longest_line(r.out) > 100);
    assert_null(strstr(r.out, "..."));
    tu_free(&r);
}

static void test_json_spellings(void **state)
{
    (void)state;
    tu_result a = tu_run("%s analyze %s --json --top 2", LTR, trace), b = tu_run("%s analyze %s --format json --top 2",
                                                                             LTR, trace);
    assert_int_equal(a.status, 0);
    assert_string_equal(a.out, b.out);
    assert_non_null(strstr(a.out, "\"format\":\"ltr-analysis\""));
    assert_non_null(strstr(a.out, ",\"name\":\"grower\"}")); /* the threads, as the text names them */
    assert_non_null(strstr(a.out, "\"threads\":[{\"tid\":"));
    tu_free(&a), tu_free(&b);
    a = tu_run("%s info %s --json", LTR, trace), b = tu_run("%s info %s --format json", LTR, trace);
    assert_int_equal(b.status, 0);
    assert_string_equal(a.out, b.out);
    assert_true(b.out[0] == '{');
    tu_free(&a), tu_free(&b);
    a = tu_run("%s dump %s --format json | head -1", LTR, trace);
    assert_true(a.out[0] == '{');
    tu_free(&a);
    a = tu_run("%s dump %s --format xml", LTR, trace);
    assert_int_equal(a.status, 2);
    assert_non_null(strstr(a.err, "'xml'"));
    tu_free(&a);
}

/* --format chrome: valid JSON in the Trace Event Format's shape (every
 * event with ph, name, pid, ts; counters with args; names as metadata), the
 * heap counter ending at what ltr analyze says is outstanding, the thread's
 * name, and a marker as an instant event. */
static void test_chrome_export(void **state)
{
    const char *dir = *state;
    tu_result r = tu_run("cd %s && %s start heap --filemode --instance chrome && %s run -- %s >/dev/null && "
                         "%s marker 'after the leak' && %s stop --instance chrome m.ltr && "
                         "%s export m.ltr --format chrome -o m.json && %s analyze m.ltr --format json >m.analysis",
                         dir, LTR, LTR, tu_test_bin("report-target"), LTR, LTR, LTR, LTR);
    if (r.status != 0)
        fail_msg("%s%s", r.out, r.err);
    tu_free(&r);
    static const char check[] =
        "import json\n"
        "d = json.load(open('m.json'))\n"
        "ev = d['traceEvents']\n"
        "assert all({'ph', 'name', 'pid', 'ts'} <= set(e) for e in ev), 'an event lacks a key'\n"
        "assert all(isinstance(e['ts'], (int, float)) and e['ts'] >= 0 for e in ev)\n"
        "heap = [e for e in ev if e['ph'] == 'C' and e['name'] == 'heap outstanding bytes']\n"
        "assert heap and all('bytes' in e['args'] for e in heap)\n"
        "assert [e['ts'] for e in heap] == sorted(e['ts'] for e in heap), 'counter not in time order'\n"
        "a = json.load(open('m.analysis'))['summary']\n"
        "print('end', heap[-1]['args']['bytes'], 'want', a['outstanding_bytes'])\n"
        "print('max', max(e['args']['bytes'] for e in heap), 'peak', a['peak_bytes'])\n"
        "print('names', sorted({e['args']['name'] for e in ev if e['ph'] == 'M'}))\n"
        "print('instants', [e['name'] for e in ev if e['ph'] == 'i'])\n";
    tu_write_file(dir, "check.py", check);
    r = tu_run("cd %s && python3 check.py", dir);
    if (r.status != 0)
        fail_msg("the chrome export: %s%s", r.out, r.err);
    char line[128];
    const char *e = strstr(r.out, "end ");
    assert_non_null(e);
    long long got, exp;
    assert_int_equal(sscanf(e, "end %lld want %lld", &got, &exp), 2);
    assert_int_equal(got, exp);
    const char *m = strstr(r.out, "max ");
    assert_int_equal(sscanf(m, "max %lld peak %lld", &got, &exp), 2);
    assert_int_equal(got, exp); /* the counter's highest is the report's peak */
    snprintf(line, sizeof line, "'grower'");
    assert_non_null(strstr(r.out, line));
    assert_non_null(strstr(r.out, "'report-target'"));
    assert_non_null(strstr(r.out, "'after the leak'"));
    tu_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranking_units_threads), cmocka_unit_test(test_hidden_frames),
        cmocka_unit_test(test_pprof_hides_too),       cmocka_unit_test(test_width),
        cmocka_unit_test(test_json_spellings),        cmocka_unit_test(test_chrome_export),
    };
    return cmocka_run_group_tests(tests, record, tu_teardown_sandbox);
}
