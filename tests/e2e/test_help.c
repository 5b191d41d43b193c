/*
 * tests/e2e/test_help.c — the ltr command's help is one consistent whole:
 * `ltr help CMD` is `ltr CMD --help`, an unknown CMD is an error, every
 * command's help has an exit status section and a usage line that names
 * every option it lists, the general help names --version; and the options
 * commands share behave the same (`--buffers N%` in record as in start);
 * a bad option is said "ltr CMD: ...", as every other message; stop and
 * save, which take their FILE without -o, say so to an -o.
 */
#include "util/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sched.h>
#include <unistd.h>

#define LTR tu_ltr()

static const char *const commands[] = {"record", "run",  "start",   "status",  "save",
                                       "stop",   "cancel", "watch", "marker", "info",    "dump",
                                       "analyze", "export", "profiles", "snapshotconfig", "singlesnapshot",
                                       "enableperiodicsnapshot", "disableperiodicsnapshot", "heaptracingconfig",
                                       "merge", "flush", "boottrace", "capturestate", "providers", "report",
                                       "symbolize"};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static int sandbox(void **state)
{
    return tu_setup_sandbox(state);
}

static int sandbox_end(void **state)
{
    return tu_teardown_sandbox(state);
}

/* The general help lists every command of the table above, so a command
 * added without a help test shows here. */
static void general_help(void **state)
{
    tu_result r = tu_run("%s --help", LTR);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "ltr --version"));
    assert_non_null(strstr(r.out, "ltr help COMMAND"));
    assert_non_null(strcasestr(r.out, "exit status"));
    size_t listed = 0;
    for (const char *p = strstr(r.out, "commands:\n"); p && (p = strstr(p, "\n  ")); p += 3)
        listed++;
    assert_int_equal(listed, NCOMMANDS);
    /* grouped as WPR's users think of them, each group a heading */
    static const char *const groups[] = {"\nrecording (", "\nheap settings (", "\ntraces (", "\nprofiles and providers:"};
    for (size_t i = 0; i < sizeof groups / sizeof *groups; i++)
        assert_non_null(strstr(r.out, groups[i]));
    const char *heap = strstr(r.out, "\nheap settings ("), *traces = strstr(r.out, "\ntraces (");
    const char *snap = strstr(r.out, "\n  singlesnapshot "), *merge = strstr(r.out, "\n  merge ");
    assert_true(heap < snap && snap < traces && traces < merge); /* each command under its heading */
    for (size_t i = 0; i < NCOMMANDS; i++) {
        char line[64];
        snprintf(line, sizeof line, "\n  %s ", commands[i]);
        assert_non_null(strstr(r.out, line));
    }
    tu_result h = tu_run("%s help", LTR);
    assert_int_equal(h.status, 0);
    assert_string_equal(h.out, r.out);
    tu_free(&h);
    tu_free(&r);
    r = tu_run("%s --version", LTR);
    assert_int_equal(r.status, 0);
    assert_true(strncmp(r.out, "ltr ", 4) == 0 && isdigit((unsigned char)r.out[4]));
    tu_free(&r);
}

/* `ltr CMD --help`'s output, run once a test program for all the cases that
 * read it (three did, 78 runs of ltr; it depends on no sandbox or
 * environment of theirs). test_help's CPU, all processes (cpuacct),
 * before -> after, alternating: ASan 25.0, 21.9 s -> 19.3, 17.2 s; plain
 * 4.6, 5.4 s -> 3.5, 3.7 s (load 4.5-6). */
static const char *cmd_help(size_t i)
{
    static char *help[NCOMMANDS];
    if (!help[i]) {
        tu_result r = tu_run("%s %s --help", LTR, commands[i]);
        assert_int_equal(r.status, 0);
        help[i] = r.out;
        r.out = NULL;
        tu_free(&r);
    }
    return help[i];
}

/* `ltr help CMD` prints exactly what `ltr CMD --help` prints. */
static void help_cmd_is_cmd_help(void **state)
{
    for (size_t i = 0; i < NCOMMANDS; i++) {
        tu_result a = tu_run("%s help %s", LTR, commands[i]);
        const char *b = cmd_help(i);
        assert_int_equal(a.status, 0);
        char want[64];
        snprintf(want, sizeof want, "usage: ltr %s", commands[i]);
        assert_true(strncmp(b, want, strlen(want)) == 0);
        assert_string_equal(a.out, b);
        assert_string_equal(a.err, "");
        tu_free(&a);
    }
    tu_result r = tu_run("%s help nosuch", LTR);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "'nosuch' is not an ltr command"));
    assert_string_equal(r.out, "");
    tu_free(&r);
    r = tu_run("%s help stop start", LTR);
    assert_int_equal(r.status, 2);
    tu_free(&r);
    /* WPR's spellings: a dash before the command, one before a long option */
    r = tu_run("%s -start heap", LTR);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "ltr's commands take no dash, as WPR's do: 'ltr start'"));
    tu_free(&r);
    r = tu_run("%s start heap -filemode", LTR);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "long options take two dashes: --filemode, not WPR's -filemode"));
    tu_free(&r);
    r = tu_run("%s marker -done", LTR); /* a text, not an option: no hint of a '--done' */
    assert_null(strstr(r.err, "two dashes"));
    tu_free(&r);
    /* WPR's names that ltr spells otherwise: the hint named '--instancename',
     * which ltr does not have, and said nothing of 'stop -skipPdbGen' or
     * 'wpr -help start' but "not an ltr command" */
    static const char *const wpr[][2] = {
        {"start heap -instancename x", "ltr start: WPR's -instancename is --instance NAME here"},
        {"stop a.ltr -skipPdbGen", "ltr stop: WPR's -skipPdbGen is --no-symbols here"},
        {"status -instanceName x", "ltr status: WPR's -instanceName is --instance NAME here"},
        {"-help start", "ltr: WPR's -help is 'ltr help [COMMAND]'"},
        {"-capturestateondemand", "ltr: WPR's -capturestateondemand is 'ltr capturestate'"},
        {"start heap -start general", "ltr start: -start is WPR's command, given once here and without a dash: "
                                      "every profile follows it ('ltr start heap general')"},
        {"watch -pid 1 --record-to x.ltr", "ltr watch: long options take two dashes: --pid, not WPR's -pid"},
        {"record -pid 1", "ltr record: -pid is read as -p id: give 'ltr record --pid PID' (or -p PID)"},
    };
    for (size_t i = 0; i < sizeof wpr / sizeof wpr[0]; i++) {
        r = tu_run("%s %s", LTR, wpr[i][0]);
        if (r.status != 2 || !strstr(r.err, wpr[i][1]) || strstr(r.err, "--instancename") || strstr(r.err, "--start"))
            fail_msg("ltr %s: status %d\n%s", wpr[i][0], r.status, r.err);
        tu_free(&r);
    }
    /* the option said is the one in error, not the argument before it */
    r = tu_run("%s analyze -trend x.ltr", LTR);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "unknown option or missing value: '-trend'"));
    tu_free(&r);
}

/* stop and save name their FILE without -o, unlike record, start, export
 * and report: 'ltr stop -o app.ltr' is told what to type, not only
 * "invalid option -- 'o'"; an option that is no -o gets no such hint. */
static void stop_save_file_without_o(void **state)
{
    static const char *const cases[][2] = {{"stop", "-o app.ltr"}, {"save", "--output app.ltr"},
                                           {"stop", "--output=app.ltr"}, {"save", "-oapp.ltr"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tu_result r = tu_run("%s %s %s", LTR, cases[i][0], cases[i][1]);
        char want[128];
        snprintf(want, sizeof want, "ltr %s: the trace's FILE is given without -o: 'ltr %s FILE'", cases[i][0],
                 cases[i][0]);
        assert_int_equal(r.status, 2);
        assert_non_null(strstr(r.err, want));
        tu_free(&r);
    }
    tu_result r = tu_run("%s stop --bogus app.ltr", LTR);
    assert_int_equal(r.status, 2);
    assert_null(strstr(r.err, "without -o"));
    tu_free(&r);
}

/* Every command says what its exit status means. */
static void every_help_has_exit_status(void **state)
{
    for (size_t i = 0; i < NCOMMANDS; i++) {
        const char *s = strcasestr(cmd_help(i), "\nexit status:");
        if (!s)
            fprintf(stderr, "ltr %s --help has no exit status section\n", commands[i]);
        assert_non_null(s);
        assert_non_null(strstr(s, "bad usage"));
    }
}

/* A bad option is said as every other message is, "ltr CMD: ...", exit 2:
 * getopt's own messages began with the bare command ("start: unrecognized
 * option '--bogus'"), in record, run, start, watch and eight others. */
static void bad_option_said_as_ltr(void **state)
{
    static const char *const bad[] = {"--bogus", "-Q"};
    for (size_t i = 0; i < NCOMMANDS; i++)
        for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
            char want[64];
            snprintf(want, sizeof want, "ltr %s: ", commands[i]);
            tu_result r = tu_run("%s %s %s </dev/null", LTR, commands[i], bad[k]);
            if (r.status != 2 || strncmp(r.err, want, strlen(want)))
                fail_msg("ltr %s %s: exit %d, said: %s", commands[i], bad[k], r.status, r.err);
            tu_free(&r);
        }
    tu_result r = tu_run("%s start -o", LTR); /* a missing value, in getopt's words too */
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "ltr start: option requires an argument -- 'o'"));
    tu_free(&r);
}

/* The usage block: from "usage:" to the first empty line. */
static char *usage_block(const char *help)
{
    const char *end = strstr(help, "\n\n");
    return strndup(help, end ? (size_t)(end - help) : strlen(help));
}

/* Each long option an option line of the help lists (the part before the
 * description column), or an "options: --from T, ... as for ltr analyze"
 * line, is in the usage lines too, or its short form is (export's and
 * report's usage lacked the --local-symbols such a line lists). */
static void usage_names_every_listed_option(void **state)
{
    for (size_t i = 0; i < NCOMMANDS; i++) {
        const char *help = cmd_help(i);
        char *usage = usage_block(help);
        for (const char *line = help; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
            bool shared = !strncmp(line, "options: --", 11);
            if (strncmp(line, "  -", 3) != 0 && !shared)
                continue;
            const char *end = strstr(line + 2, shared ? " as for" : "  "), *nl = strchr(line, '\n');
            if (!end || (nl && end > nl))
                end = nl ? nl : line + strlen(line);
            char short_opt[8] = ""; /* "-o " of "  -o, --output FILE" */
            if (line[3] != '-' && line[4] == ',')
                snprintf(short_opt, sizeof short_opt, "-%c ", line[3]);
            for (const char *o = line; (o = strstr(o, "--")) && o < end; o += 2) {
                size_t n = 2;
                while (isalnum((unsigned char)o[n]) || o[n] == '-')
                    n++;
                char opt[64];
                snprintf(opt, sizeof opt, "%.*s", (int)n, o);
                if (!strcmp(opt, "--help") || (short_opt[0] && strstr(usage, short_opt)))
                    continue;
                if (!strstr(usage, opt))
                    fprintf(stderr, "ltr %s: %s is listed but not in the usage:\n%s\n", commands[i],
                            opt, usage);
                assert_non_null(strstr(usage, opt));
            }
        }
        free(usage);
    }
    tu_result r = tu_run("%s analyze --help", LTR);
    char *usage = usage_block(r.out);
    assert_non_null(strstr(usage, "--debug-dir"));
    free(usage);
    tu_free(&r);
}

/* What ltr info says the trace's buffers were, and the host's RAM. */
static void trace_buffers(const char *trace, unsigned long long *count, unsigned long long *size,
                          unsigned long long *ram)
{
    tu_result r = tu_run("%s info '%s'", LTR, trace);
    assert_int_equal(r.status, 0);
    const char *b = strstr(r.out, "buffers:"), *h = strstr(r.out, " bytes of RAM");
    assert_non_null(b);
    assert_non_null(h);
    assert_int_equal(sscanf(b, "buffers: %llu x %llu bytes", count, size), 2);
    while (h > r.out && isdigit((unsigned char)h[-1]))
        h--;
    *ram = strtoull(h, NULL, 10);
    assert_true(*ram > 0);
    tu_free(&r);
}

/* `ltr record OPTS -o DIR/NAME -- true`, and what ltr info says its buffers were. */
static void recorded_buffers(const char *dir, const char *opts, const char *name, unsigned long long *count,
                             unsigned long long *size, unsigned long long *ram)
{
    tu_result r = tu_run("%s record %s -o %s/%s -- true", LTR, opts, dir, name);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    char trace[4096];
    snprintf(trace, sizeof trace, "%s/%s", dir, name);
    trace_buffers(trace, count, size, ram);
}

/* `ltr record --buffers N%` is the share of RAM it is for `ltr start`, in
 * buffers of the size given, whichever option comes first. */
static void record_takes_buffers_percent(void **state)
{
    const char *dir = *state;
    unsigned long long count, size, ram;
    recorded_buffers(dir, "--buffers 1%", "a.ltr", &count, &size, &ram);
    assert_int_equal(size, 16384);
    assert_int_equal(count, ram / 100 / size);
    recorded_buffers(dir, "--buffers 1% --buffer-size 64", "b.ltr", &count, &size, &ram);
    assert_int_equal(size, 65536);
    assert_int_equal(count, ram / 100 / size);
    /* the same message as start's for a bad share */
    tu_result r = tu_run("%s record --buffers 60%% -o %s/c.ltr -- true", LTR, dir);
    tu_result s = tu_run("%s start --buffers 60%%", LTR);
    assert_int_equal(r.status, 2);
    assert_int_equal(s.status, 2);
    assert_non_null(strstr(r.err, "--buffers (percentage of RAM): '60' is not valid"));
    assert_non_null(strstr(s.err, "--buffers (percentage of RAM): '60' is not valid"));
    tu_free(&r);
    tu_free(&s);
    r = tu_run("test -e %s/c.ltr", dir);
    assert_int_not_equal(r.status, 0);
    tu_free(&r);
}

/* The default buffers of record, start and start heap differ: each help says
 * what they are and why. */
static void default_buffers_explained(void **state)
{
    tu_result r = tu_run("%s record --help", LTR);
    assert_non_null(strstr(r.out, "1024 buffers of 16 KB per CPU"));
    char here[64];
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    long cpus = CPU_COUNT(&set); /* ltr runs with this process's CPUs */
    snprintf(here, sizeof here, "here %ld\n", 1024 * cpus > 8192 ? 8192 : 1024 * cpus);
    assert_non_null(strstr(r.out, here));
    assert_non_null(strstr(r.out, "each thread that allocates holds"));
    tu_free(&r);
    /* and what the help says is what record does */
    unsigned long long count, size, ram;
    recorded_buffers(*state, "", "d.ltr", &count, &size, &ram);
    assert_int_equal(count, (unsigned long long)(1024 * cpus > 8192 ? 8192 : 1024 * cpus));
    assert_int_equal(size, 16384);
    r = tu_run("%s start --help", LTR);
    assert_non_null(strstr(r.out, "64 buffers of 128 KB"));
    assert_non_null(strstr(r.out, "'ltr start heap' takes 16384 buffers of 64 KB"));
    assert_non_null(strstr(r.out, "with --filemode, 1024 of 1 MB"));
    assert_non_null(strstr(r.out, "Memory is taken as buffers are first used"));
    tu_free(&r);
    /* and what the help says is what start heap does */
    r = tu_run("%s start heap", LTR);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "16384 buffers of 64 KB"));
    tu_free(&r);
    r = tu_run("%s cancel", LTR);
    tu_free(&r);
    r = tu_run("%s start heap --filemode", LTR);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "1024 buffers of 1024 KB"));
    tu_free(&r);
    r = tu_run("%s cancel", LTR);
    tu_free(&r);
}

/* Output that could not be written is a failure, said on stderr: 'ltr
 * profiles >/dev/full' exited 0 with nothing written. */
static void output_to_a_full_disk_fails(void **state)
{
    (void)state;
    const char *cmds[] = {"profiles", "--help", "--version", "help analyze", "status", "analyze --help"};
    for (int running = 0; running < 2; running++) {
        /* with a session, status flushes its lines before its warnings: the
         * error said was a later call's ("Resource temporarily unavailable") */
        if (running)
            tu_expect_ok(tu_run("%s start heap --instance full --buffers 8", LTR));
        for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
            tu_result r = tu_run("%s %s >/dev/full", LTR, cmds[i]);
            print_message("ltr %s >/dev/full: %d %s", cmds[i], r.status, r.err);
            assert_int_equal(r.status, 1);
            assert_non_null(strstr(r.err, "No space left on device"));
            tu_free(&r);
        }
    }
    tu_expect_ok(tu_run("%s cancel --instance full", LTR));
    /* the commands that read a trace said no cause ("writing the report failed") */
    const char *dir = getenv("TMPDIR");
    tu_expect_ok(tu_run("%s record --no-symbols -o %s/t.ltr -- sh -c true", LTR, dir));
    const char *reads[] = {"info", "dump", "analyze", "analyze --format json"};
    for (size_t i = 0; i < sizeof reads / sizeof *reads; i++) {
        tu_result r = tu_run("%s %s %s/t.ltr >/dev/full", LTR, reads[i], dir);
        if (r.status != 1 || !strstr(r.err, "writing the output failed: No space left on device"))
            fail_msg("ltr %s >/dev/full: %d %s", reads[i], r.status, r.err);
        tu_free(&r);
    }
}

/* Options in seconds take fractions the same way in every command, and
 * refuse alike what is no number or out of range: record's --duration took
 * whole seconds only ("'0.5' is not valid: expected an integer") where
 * watch's --interval took 0.5. */
static void seconds_options_alike(void **state)
{
    (void)state;
    static const struct {
        const char *args, *said;
    } bad[] = {
        {"record --pid 1 --duration abc", "--duration 'abc': give seconds from 0.001 to 3.1536e+07 (e.g. 0.5)"},
        {"record --pid 1 --duration 0", "--duration '0': give seconds from 0.001"},
        {"watch --pid 1 --interval 0.05", "--interval '0.05': give seconds from 0.1 to 86400 (e.g. 0.5)"},
        {"watch --pid 1 --memory-interval nan", "--memory-interval 'nan': give seconds from 0.01 to 3600"},
        {"start memory --instance s --memory-interval 1s", "--memory-interval '1s': give seconds from 0.01 to 3600"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tu_result r = tu_run("%s %s", LTR, bad[i].args);
        if (r.status != 2 || !strstr(r.err, bad[i].said))
            fail_msg("ltr %s: status %d\n%s", bad[i].args, r.status, r.err);
        tu_free(&r);
    }
    /* a fraction is taken: what stops it is the next check, --duration's rule */
    tu_result r = tu_run("%s record --duration 0.5 -- true", LTR);
    if (r.status != 2 || !strstr(r.err, "--duration is for --pid"))
        fail_msg("record --duration 0.5: status %d\n%s", r.status, r.err);
    tu_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seconds_options_alike),
        cmocka_unit_test_setup_teardown(output_to_a_full_disk_fails, sandbox, sandbox_end),
        cmocka_unit_test(general_help),
        cmocka_unit_test(help_cmd_is_cmd_help),
        cmocka_unit_test(stop_save_file_without_o),
        cmocka_unit_test(every_help_has_exit_status),
        cmocka_unit_test(usage_names_every_listed_option),
        cmocka_unit_test_setup_teardown(bad_option_said_as_ltr, sandbox, sandbox_end),
        cmocka_unit_test_setup_teardown(record_takes_buffers_percent, sandbox, sandbox_end),
        cmocka_unit_test_setup_teardown(default_buffers_explained, sandbox, sandbox_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
