/*
 * tests/e2e/test_report.c — `ltr report`'s page opened in headless Chromium
 * (Debian's chromium), on tests/programs/report_target.cpp recorded in a
 * session with a marker: the page's self-check (report.js writes it into
 * #selfcheck) says no script error and the console has no message, a timeline drawn, the stack list and
 * the flame graph present, its frames whole once drawn, and naming the leak's function first, the page's
 * totals those of `ltr analyze --format json`; a time range given in the URL
 * re-ranks (the one-time table of the program's start tops the first 50 ms)
 * and a range over the whole trace gives exactly the report's AIFI, AIFO,
 * AOFI and AOFO bytes and its first stack;
 * the page holds no reference to the network; each stack's small chart
 * spans the window (not past it, where the steady leak looked levelled
 * off); the growth column says "growing over N s" of a window under 10 s, as
 * ltr analyze does, not a rate per minute, and so does a range's. The timeline draws outstanding
 * bytes as steps: on report-target's "gap" (1 MiB, 600 ms idle, 8 MiB) the
 * line read back from the chart's canvas stays at 1 MiB across the gap, the
 * rise is drawn upright where the 8 MiB came, and the legend three quarters
 * across the gap says 1 MiB (a line between the points drew a ramp, and
 * the legend gave the next point's 9 MiB). Skips, saying why, when
 * chromium is not installed; the sanitized build writes the pages and
 * leaves their drawing to the plain build.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/testutil.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LTR tu_ltr()

static const char check_py[] =
    "import html, json, re, sys\n"
    "dom = open(sys.argv[1]).read()\n"
    "m = re.search(r'<pre id=\"selfcheck\"[^>]*>(.*?)</pre>', dom, re.S)\n"
    "c = json.loads(html.unescape(m.group(1)))\n"
    "a = json.load(open(sys.argv[2]))['summary']\n"
    "print('errors=%d' % len(c['errors']), c['errors'])\n"
    "print('timeline=%d stacks=%d flame=%d' % (c['timeline'], c['stacks'], c['flame']))\n"
    "print('flame_short=%d' % c.get('flame_short', -1))\n"
    "print('first:', c['names'][0] if c['names'] else '')\n"
    "same = all(c['totals'][k] == a[k] for k in ('outstanding_bytes', 'allocations', 'frees', 'peak_bytes'))\n"
    "print('totals_equal=%d' % same)\n"
    "print('range_top:', c['range'][2] if c['range'] else '')\n"
    "t = a['types']\n"
    "print('range_exact=%d' % (c['range'] is not None and all(c['range'][3][k] == t[k]['bytes'] for k in t)))\n"
    "print('rates=%d growing=%d' % (len(re.findall(r'/min</td>', dom)), len(re.findall(r'>growing over [0-9.]+ s</td>', dom))))\n"
    "s = c.get('spark') or {}\n"
    "fits = s.get('to_s') is not None and abs(s['end_s'] - s['to_s']) <= s['width_s'] + 1e-9\n"
    "print('spark_fits=%d' % fits, s)\n"
    "y = c.get('yticks') or []\n"
    "step = y[1] - y[0] if len(y) > 1 else 0\n"
    "print('yticks_binary=%d' % (step > 0 and step & (step - 1) == 0 and all(v % step == 0 for v in y)), y)\n";

/* The timeline's steps, read back from the drawn page: probe.py PAGE OUT
 * writes a copy of the page that keeps the uPlot chart (a wrapper of the
 * constructor, before report.js) and, once drawn, writes into #probe for the
 * widest gap between two points of the first series that rises by more than
 * 4 MiB: the line's distance in pixels from the level before the gap, a
 * quarter, half and three quarters across it (off, 0 for a step); the rise
 * in pixels and how much of it is drawn at the gap's end (drawn); the
 * legend's value with the cursor three quarters across, and the level before
 * the gap as the legend writes it. */
static const char steps_probe_py[] =
    "import sys\n"
    "page = open(sys.argv[1]).read()\n"
    "hook = ('<script>(function () { var U = window.uPlot; window.uPlot = function (o, d, t) {'\n"
    "        ' return (window.ltrChart = new U(o, d, t)); }; Object.assign(window.uPlot, U); })();</script>\\n')\n"
    "probe = r'''<pre id=\"probe\"></pre><script>setTimeout(function () {\n"
    "var u = window.ltrChart, r = {}, xs = u.data[0], ys = u.data[1], g = -1;\n"
    "for (var i = 0; i + 1 < xs.length; i++)\n"
    "    if (ys[i] != null && ys[i + 1] - ys[i] > 4194304 && (g < 0 || xs[i + 1] - xs[i] > xs[g + 1] - xs[g])) g = i;\n"
    "r.found = g >= 0 ? 1 : 0;\n"
    "var x0 = xs[g], x1 = xs[g + 1], W = u.ctx.canvas.width, H = u.ctx.canvas.height;\n"
    "var img = u.ctx.getImageData(0, 0, W, H).data;\n"
    "function rows(c) { /* the rows of the first series' color (#c0392b) in the canvas's column c */\n"
    "    var out = [];\n"
    "    for (var y = 0; y < H; y++) {\n"
    "        var o = (y * W + c) * 4;\n"
    "        if (img[o + 3] > 100 && img[o] > 140 && img[o] - img[o + 1] > 70 && img[o] - img[o + 2] > 70) out.push(y);\n"
    "    }\n"
    "    return out;\n"
    "}\n"
    "var lo = u.valToPos(ys[g], \"y\", true), hi = u.valToPos(ys[g + 1], \"y\", true);\n"
    "r.off = [0.25, 0.5, 0.75].map(function (f) { /* how far the line is from the level before the gap, in pixels */\n"
    "    var c = rows(Math.round(u.valToPos(x0 + (x1 - x0) * f, \"x\", true)));\n"
    "    return c.length ? Math.round(Math.max(Math.abs(c[0] - lo), Math.abs(c[c.length - 1] - lo))) : 9999;\n"
    "});\n"
    "var jump = [], cx = Math.round(u.valToPos(x1, \"x\", true));\n"
    "for (var c = cx - 2; c <= cx + 2; c++) jump = jump.concat(rows(c));\n"
    "r.rise = Math.round(lo - hi); /* the jump's height, and how much of it is drawn at its x */\n"
    "r.drawn = jump.length ? Math.round(Math.max.apply(null, jump) - Math.min.apply(null, jump)) : 0;\n"
    "u.setCursor({ left: u.valToPos(x0 + (x1 - x0) * 0.75, \"x\"), top: u.valToPos(ys[g], \"y\") });\n"
    "r.legend = document.querySelectorAll(\".u-legend .u-series\")[1].querySelector(\".u-value\").textContent;\n"
    "r.held = u.series[1].value(u, ys[g], 1, g);\n"
    "document.getElementById(\"probe\").textContent = JSON.stringify(r);\n"
    "}, 300);</script>\n"
    "'''\n"
    "mark = '<script>\\n/*\\n * src/report/report.js'\n"
    "assert mark in page and '</body>' in page\n"
    "page = page.replace(mark, hook + mark).replace('</body>', probe + '</body>')\n"
    "open(sys.argv[2], 'w').write(page)\n";

static const char steps_read_py[] =
    "import html, json, re, sys\n"
    "dom = open(sys.argv[1]).read()\n"
    "m = re.search(r'<pre id=\"probe\">(.*?)</pre>', dom, re.S)\n"
    "r = json.loads(html.unescape(m.group(1)))\n"
    "s = json.loads(html.unescape(re.search(r'<pre id=\"selfcheck\"[^>]*>(.*?)</pre>', dom, re.S).group(1))).get('spark') or {}\n"
    "fits = s.get('to_s') is not None and abs(s['end_s'] - s['to_s']) <= s['width_s'] + 1e-9\n"
    "print('spark_fits=%d' % fits, s)\n"
    "print('found=%d off=%d rise=%d drawn=%d legend_held=%d' % (r['found'], max(r['off']), r['rise'], r['drawn'],\n"
    "                                                         r['legend'] == r['held']), r['off'], r['legend'], r['held'])\n";

/* The test is skipped, and says why, without chromium. */
static void need_chromium(void)
{
    tu_result r = tu_run("command -v chromium");
    int missing = r.status != 0;
    tu_free(&r);
    if (missing) {
        printf("skipped: chromium is not installed (scripts/install-deps.sh installs it)\n");
        skip();
    }
}

/* PAGE of dir drawn by headless chromium, its DOM written to DOM, then
 * `python3 SCRIPT DOM` (what the page showed, as fields). */
static tu_result drawn(const char *dir, const char *page, const char *dom, const char *script)
{
    return tu_run("cd %s && HOME=%s timeout 120 chromium --headless --no-sandbox --disable-gpu "
                  "--virtual-time-budget=5000 --dump-dom 'file://%s/%s' >%s 2>chromium.err && python3 %s %s",
                  dir, dir, dir, page, dom, script, dom);
}

static void test_page_in_chromium(void **state)
{
    const char *dir = *state;
    need_chromium();
    tu_result r = tu_run("cd %s && %s start heap --filemode --instance page && %s run -- %s >/dev/null && "
                         "%s marker 'leak done' && %s stop --instance page p.ltr && %s report p.ltr && "
                         "%s analyze p.ltr --format json >p.json",
                         dir, LTR, LTR, tu_test_bin("report-target"), LTR, LTR, LTR, LTR);
    if (r.status != 0)
        fail_msg("%s%s", r.out, r.err);
    assert_non_null(strstr(r.out, "p.html written"));
    tu_free(&r);
    tu_write_file(dir, "check.py", check_py);
    /* no network: nothing is fetched from anywhere */
    r = tu_run("cd %s && grep -c -E '(src|href)=\"(https?:)?//' p.html", dir);
    assert_string_equal(r.out, "0\n");
    tu_free(&r);
    /* the start's range ends just past load_table's block: under load (the
     * sanitizers, tests beside it) the program starts later than the 50 ms
     * this once assumed, and the range held nothing */
    r = tu_run("cd %s && python3 -c \"import json; s = json.load(open('p.json'))['stacks']; "
               "print(min(x['held_s'][0] for x in s if x['frames'] and x['frames'][0].get('function') == "
               "'load_table'))\"", dir);
    assert_int_equal(r.status, 0);
    double table_s = atof(r.out);
    tu_free(&r);
    char start_range[64];
    snprintf(start_range, sizeof start_range, "p.html#range=0,%.6f", table_s + 0.001);
    if (tu_drawn_by_the_plain_build())
        return;
    const char *const urls[] = {"p.html", start_range, "p.html#range=0,9999"};
    for (int i = 0; i < 3; i++) {
        r = tu_run("cd %s && HOME=%s timeout 120 chromium --headless --no-sandbox --disable-gpu --enable-logging=stderr "
                   "--v=0 --virtual-time-budget=5000 --dump-dom 'file://%s/%s' >dom%d.html 2>chromium.err && "
                   "python3 check.py dom%d.html p.json && echo console=$(grep -c ':CONSOLE' chromium.err)",
                   dir, dir, dir, urls[i], i, i);
        if (r.status != 0)
            fail_msg("chromium or the check: %s%s", r.out, r.err);
        if (tu_field(r.out, "console") != 0) /* the page writes nothing to the console: any line is a complaint */
            fail_msg("the browser's console: %s", r.out);
        if (tu_field(r.out, "errors") != 0 || tu_field(r.out, "timeline") != 1 || tu_field(r.out, "stacks") < 2 ||
            tu_field(r.out, "flame") < 3 || tu_field(r.out, "totals_equal") != 1)
            fail_msg("the page's self-check: %s", r.out);
        /* each flame graph frame whole once drawn: d3-flame-graph grew them
         * over 250 ms, and a screenshot under load caught them a third wide */
        if (tu_field(r.out, "flame_short") != 0)
            fail_msg("flame graph frames not drawn whole: %s", r.out);
        if (i == 0 && !strstr(r.out, "first: Deep<")) /* the steady leak tops the list */
            fail_msg("the leak's function is not first: %s", r.out);
        /* each stack's small chart spans the window, not the grid's 64 cells:
         * past the window's end it drew the steady leak flat, as if it had
         * levelled off (a python3 leak of 41 s: flat over its last 37 %) */
        if (i == 0 && tu_field(r.out, "spark_fits") != 1)
            fail_msg("the stacks' charts do not end at the window's end: %s", r.out);
        /* the bytes axis ticks at binary steps, as its labels are in KiB and
         * MiB: decimal steps labelled it 1.91 MiB, 3.81 MiB, 5.72 MiB ... */
        if (i == 0 && tu_field(r.out, "yticks_binary") != 1)
            fail_msg("the bytes axis's ticks are not binary steps: %s", r.out);
        /* a run of a second or so: the steady leak is "growing over N s", as
         * ltr analyze says, never a rate per minute (the page said "893
         * MiB/min" of a half-second python3 run), and in a range too (where
         * it said "at once") */
        if (i != 1 && (tu_field(r.out, "rates") != 0 || tu_field(r.out, "growing") < 1))
            fail_msg("a rate per minute from a short window, or the steady leak not growing: %s", r.out);
        if (i == 1 && !strstr(r.out, "range_top: load_table")) /* the start's table tops the range */
            fail_msg("the range did not re-rank: %s", r.out);
        if (i == 2 && (tu_field(r.out, "range_exact") != 1 || !strstr(r.out, "range_top: Deep<")))
            fail_msg("the whole range is not the report's four types and ranking: %s", r.out);
        tu_free(&r);
    }
}

static void test_timeline_steps(void **state)
{
    const char *dir = *state;
    need_chromium();
    tu_write_file(dir, "probe.py", steps_probe_py);
    tu_write_file(dir, "read.py", steps_read_py);
    tu_result r = tu_run("cd %s && %s record -o g.ltr -- %s gap >/dev/null && %s report g.ltr && "
                         "python3 probe.py g.html probe.html",
                         dir, LTR, tu_test_bin("report-target"), LTR);
    if (r.status != 0)
        fail_msg("recording, the page or the probe: %s%s", r.out, r.err);
    tu_free(&r);
    if (tu_drawn_by_the_plain_build())
        return;
    r = drawn(dir, "probe.html", "gdom.html", "read.py");
    if (r.status != 0)
        fail_msg("chromium or the probe: %s%s", r.out, r.err);
    if (tu_field(r.out, "found") != 1)
        fail_msg("no gap then rise of 8 MiB in the chart's data: %s", r.out);
    if (tu_field(r.out, "off") > 2) /* flat at the level before the gap, not a ramp to the next point */
        fail_msg("the line is not flat across the idle gap: %s", r.out);
    if (tu_field(r.out, "rise") < 50 || tu_field(r.out, "drawn") < tu_field(r.out, "rise") - 3)
        fail_msg("the rise is not drawn upright at the next event: %s", r.out);
    if (tu_field(r.out, "legend_held") != 1) /* the legend says what the line shows */
        fail_msg("the legend is not the held value: %s", r.out);
    /* heap events over 0.6 s in cells of 16 ms: the grid's 64 cells reach
     * 1.02 s, the window (to the program's exit) 1.3 s: the stacks' charts
     * ended at the grid's end (a run under load, whose window was 1.07 s
     * with the tail of 0.1 s this program had then); and the test of a
     * window inside the grid (the charts drew past its end) is the page's
     * self-check above */
    if (tu_field(r.out, "spark_fits") != 1)
        fail_msg("the stacks' charts do not end at the window's end: %s", r.out);
    tu_free(&r);
}

/* The page holds at most 500 stacks of each ranking, the best of all
 * processes, however many processes the trace has: it held the top 50 of
 * each process, and a shell loop of git, perl, python3 and sqlite3 (1762
 * processes) made a page of 523 MB that headless Chromium had not drawn
 * after 150 s. Thirty python3 runs have about 1500 such stacks. */
static const char page_lists_py[] =
    "import json, re, sys\n"
    "page = open(sys.argv[1]).read()\n"
    "m = re.search(r'<script type=\"application/json\" id=\"analysis\">(.*?)</script>', page, re.S)\n"
    "a = json.loads(m.group(1))\n"
    "j = json.load(open(sys.argv[2]))\n"
    "pids = len(set(s['pid'] for s in a['stacks']))\n"
    "first = (a['stacks'][0]['pid'], a['stacks'][0]['stack_id']) == (j['stacks'][0]['pid'], j['stacks'][0]['stack_id'])\n"
    "print('processes=%d stacks=%d calls=%d temporary=%d pids=%d first_same=%d' % (j['summary']['processes'],\n"
    "      len(a['stacks']), len(a['most_calls']), len(a['most_temporary']), pids, first))\n";

static void test_page_bounded_by_processes(void **state)
{
    const char *dir = *state;
    tu_write_file(dir, "lists.py", page_lists_py);
    tu_result r = tu_run("cd %s && %s record --no-symbols -o m.ltr -- /bin/sh -c 'i=0; while [ $i -lt 30 ]; do "
                         "/usr/bin/python3 -c pass; i=$((i+1)); done' && %s report m.ltr && "
                         "%s analyze m.ltr --format json --top 1 >m.json && python3 lists.py m.html m.json",
                         dir, LTR, LTR, LTR);
    if (r.status != 0)
        fail_msg("%s%s", r.out, r.err);
    if (tu_field(r.out, "processes") < 30)
        fail_msg("not the 30 python3 runs: %s", r.out);
    if (tu_field(r.out, "stacks") != 500 || tu_field(r.out, "calls") != 500 || tu_field(r.out, "temporary") > 500)
        fail_msg("the page's lists are not 500 stacks each: %s", r.out);
    if (tu_field(r.out, "pids") < 2 || tu_field(r.out, "first_same") != 1) /* the best of all processes */
        fail_msg("the page's stacks are not the best of all processes: %s", r.out);
    tu_free(&r);
}

/* Sizes on the page are written as ltr analyze writes them: a block of
 * 1020 KiB (and the chart's ticks, a stack's growth) read "1.02e+3 KiB"
 * where the page used toPrecision(3) on a value from 1000 to 1023 of its
 * unit (a review). */
static const char sizes_py[] =
    "import re, sys\n"
    "dom = re.sub(r'<script.*?</script>', '', open(sys.argv[1]).read(), flags=re.S)\n"
    "print('exp=%d kib1020=%d' % (len(re.findall(r'[0-9]e\\+[0-9]+ [KMGT]iB', dom)),\n"
    "      len(re.findall(r'>1020 KiB<', dom))))\n";

static void test_sizes_as_analyze_writes_them(void **state)
{
    const char *dir = *state;
    need_chromium();
    tu_write_file(dir, "sizes.py", sizes_py);
    tu_result r = tu_run("cd %s && %s record --no-symbols -o k.ltr -- /usr/bin/python3 -c "
                         "'import ctypes; ctypes.CDLL(None).malloc(1020 * 1024)' >/dev/null 2>&1 && %s report k.ltr",
                         dir, LTR, LTR);
    if (r.status != 0)
        fail_msg("recording or the page: %s%s", r.out, r.err);
    tu_free(&r);
    if (tu_drawn_by_the_plain_build())
        return;
    r = drawn(dir, "k.html", "kdom.html", "sizes.py");
    if (r.status != 0)
        fail_msg("chromium: %s%s", r.out, r.err);
    if (tu_field(r.out, "kib1020") < 1) /* the leaked block's row */
        fail_msg("no stack of 1020 KiB on the page: %s", r.out);
    if (tu_field(r.out, "exp") != 0)
        fail_msg("a size in exponent notation on the page: %s", r.out);
    tu_free(&r);
}

static void test_refusals(void **state)
{
    const char *dir = *state;
    tu_result r = tu_run("cd %s && %s report nosuch.ltr", dir, LTR);
    assert_int_equal(r.status, 1);
    tu_free(&r);
    r = tu_run("cd %s && %s record -o t.ltr -- %s counts >/dev/null && echo keep >t.html && %s report t.ltr; "
               "echo status=$?; cat t.html", dir, LTR, tu_test_bin("heap-target"), LTR);
    assert_int_equal(tu_field(r.out, "status"), 1);
    assert_non_null(strstr(r.out, "keep"));
    assert_non_null(strstr(r.err, "--force"));
    tu_free(&r);
    r = tu_run("cd %s && %s report t.ltr --format json", dir, LTR);
    assert_int_equal(r.status, 2);
    tu_free(&r);
    /* '-o -' is standard output, as for ltr export (it wrote a file named
     * '-' and said "- written") */
    r = tu_run("cd %s && %s report t.ltr -o - | head -c 15; echo; ls", dir, LTR);
    assert_non_null(strstr(r.out, "<!DOCTYPE html>"));
    assert_null(strstr(r.out, "\n-\n"));
    tu_free(&r);
}

/* The page ranks stacks by their trend when the trace has heap snapshots;
 * of a trace without them it says nothing of a trend no one asked for (it
 * warned "--trend: the trace holds no heap snapshot" on every page, an
 * option ltr report does not have) */
static void test_no_trend_unasked(void **state)
{
    const char *dir = *state;
    tu_result r = tu_run("cd %s && %s record --no-symbols -o n.ltr -- %s counts >/dev/null && %s report n.ltr && "
                         "echo warned=$(grep -c 'no heap snapshot' n.html) events=$(grep -c heap_events n.html)",
                         dir, LTR, tu_test_bin("heap-target"), LTR);
    assert_non_null(strstr(r.out, "n.html written"));
    assert_int_equal(tu_field(r.out, "warned"), 0);
    assert_true(tu_field(r.out, "events") > 0); /* the page holds the analysis */
    tu_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_page_in_chromium, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_timeline_steps, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_page_bounded_by_processes, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_sizes_as_analyze_writes_them, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_refusals, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_no_trend_unasked, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
