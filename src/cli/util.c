/*
 * cli/util.c — error printing and option parsing shared by the subcommands.
 */
#include "cli/cli.h"
#include <ltr/trace.h>
#include "prim/prim.h"
#include "recorder/recorder.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* One message on stderr, one line without a control character
 * (ltr_shown_text): it may name a file, a process, a profile or a trace's
 * contents that another user chose, and stderr is often root's terminal. */
static void say(const char *cmd, const char *what, const char *fmt, va_list ap)
{
    char *text = NULL;
    int n = vasprintf(&text, fmt, ap);
    if (n < 0) {
        fprintf(stderr, "ltr %s: %s(out of memory)\n", cmd, what);
        return;
    }
    text[ltr_shown_text(text, (size_t)n, text, false)] = 0;
    fprintf(stderr, "ltr %s: %s%s\n", cmd, what, text);
    free(text);
}

int cli_fail(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say(cmd, "", fmt, ap);
    va_end(ap);
    return 1;
}

void cli_say(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say(cmd, "", fmt, ap);
    va_end(ap);
}

static int stdout_errno;

void cli_flush_stdout(void)
{
    if (fflush(stdout) != 0 && !stdout_errno)
        stdout_errno = errno ? errno : EIO;
}

int cli_stdout_errno(void) { return stdout_errno; }

int cli_fail_output(const char *cmd)
{
    int e = errno;
    errno = 0;
    if (fflush(stdout) != 0 && errno) /* what is buffered still fails, with its cause */
        e = errno;
    if (stdout_errno)
        e = stdout_errno;
    return cli_fail(cmd, "writing the output failed: %s", strerror(e ? e : EIO));
}

const char *cli_bad_option(int argc, char **argv)
{
    if (optopt && optind < argc && argv[optind][0] == '-' && argv[optind][1] != '-' &&
        strchr(argv[optind] + 1, optopt))
        return argv[optind];
    return argv[optind > 0 ? optind - 1 : 0];
}

void cli_warn(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say(cmd, "warning: ", fmt, ap);
    va_end(ap);
}

void cli_warn_layout_lost(const char *cmd, const struct ltr_trace_summary *s)
{
    if (s->events_layout_lost)
        cli_warn(cmd, "%llu event(s) could not be read: the layout records that describe them were among the "
                 "metadata records lost while recording (the trace counts them), so they are lost events, not "
                 "damage", (unsigned long long)s->events_layout_lost);
}

int cli_parse_u64(const char *cmd, const char *option, const char *text, uint64_t min,
                  uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text || *end || text[0] == '-' || v < min || v > max) {
        cli_fail(cmd, "%s: '%s' is not valid: expected an integer from %" PRIu64 " to %" PRIu64,
                 option, text, min, max);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_seconds(const char *cmd, const char *option, const char *text, double lo, double hi, uint64_t *ms)
{
    char *end;
    double s = strtod(text, &end);
    if (end == text || *end || !(s >= lo && s <= hi)) /* NaN fails both */
        return cli_fail(cmd, "%s '%s': give seconds from %g to %g (e.g. 0.5)", option, text, lo, hi), -1;
    *ms = (uint64_t)(s * 1000 + 0.5);
    return 0;
}

int cli_parse_buffers(const char *cmd, const char *text, uint32_t buffer_kb, uint32_t *out)
{
    size_t n = strlen(text);
    uint64_t v;
    if (n && text[n - 1] == '%') {
        char num[32];
        snprintf(num, sizeof num, "%.*s", (int)(n - 1), text);
        if (cli_parse_u64(cmd, "--buffers (percentage of RAM)", num, 1, 50, &v))
            return -1;
        uint64_t count = ltr_buffers_from_ram_share(v, buffer_kb);
        if (count < LTR_BUFFERS_MIN || count > LTR_BUFFERS_MAX) {
            cli_fail(cmd, "--buffers %s gives %llu buffers of %u KB: allowed %u to %u", text,
                     (unsigned long long)count, buffer_kb, LTR_BUFFERS_MIN, LTR_BUFFERS_MAX);
            return -1;
        }
        *out = (uint32_t)count;
        return 0;
    }
    if (cli_parse_u64(cmd, "--buffers", text, LTR_BUFFERS_MIN, LTR_BUFFERS_MAX, &v))
        return -1;
    *out = (uint32_t)v;
    return 0;
}

int cli_usage_error(const char *cmd, const char *usage)
{
    fprintf(stderr, "usage: %s\nTry 'ltr %s --help'.\n", usage, cmd);
    return 2;
}

int cli_trace_args(const char *cmd, int argc, char **argv, const char *usage, void (*help)(void),
                   const char **path, int *json)
{
    *path = NULL;
    *json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            help();
            return 0;
        } else if (!strcmp(argv[i], "--json")) { /* --format json's older spelling, kept */
            *json = 1;
        } else if (!strcmp(argv[i], "--format") || !strncmp(argv[i], "--format=", 9)) {
            const char *f = argv[i][8] == '=' ? argv[i] + 9 : i + 1 < argc ? argv[++i] : "";
            if (strcmp(f, "json") && strcmp(f, "text")) {
                cli_fail(cmd, "--format: '%s' is not a format of this command: text or json", f);
                return cli_usage_error(cmd, usage);
            }
            *json = !strcmp(f, "json");
        } else if (argv[i][0] == '-' && argv[i][1]) {
            cli_fail(cmd, "unknown option '%s'", argv[i]);
            return cli_usage_error(cmd, usage);
        } else if (*path) {
            cli_fail(cmd, "one TRACE only ('%s' is extra)", argv[i]);
            return cli_usage_error(cmd, usage);
        } else {
            *path = argv[i];
        }
    }
    if (!*path) {
        cli_fail(cmd, "no TRACE given");
        return cli_usage_error(cmd, usage);
    }
    return -1;
}

int cli_refuse_existing(const char *cmd, const char *path, int force)
{
    ltr_error err;
    if (ltr_replaceable(path, &err) != 0) /* not "--force replaces it": it would not */
        return cli_fail(cmd, "%s", err.msg);
    if (force || !ltr_path_taken(path))
        return 0;
    ltr_fail_exists(&err, path);
    return cli_fail(cmd, "%s", err.msg);
}

int cli_refuse_no_directory(const char *cmd, const char *path)
{
    char dir[4096] = ".";
    const char *slash = strrchr(path, '/');
    if (slash) /* "/x.ltr": "/" */
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    struct stat st;
    if (stat(dir, &st) != 0)
        return cli_fail(cmd, "cannot create %s: its directory %s: %s", path, dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return cli_fail(cmd, "cannot create %s: %s is not a directory", path, dir);
    return 0;
}

int cli_write_output(const char *cmd, const char *path, int force, int (*write)(FILE *f, void *arg), void *arg)
{
    ltr_error err;
    if (!strcmp(path, "-")) /* flushed here: a full pipe or disk is said, not met at exit */
        return write(stdout, arg) != 0 || fflush(stdout) != 0
                   ? cli_fail(cmd, "writing to standard output failed")
                   : 0;
    if (ltr_write_new_file(path, force, write, arg, &err))
        return cli_fail(cmd, "%s", err.msg);
    return 0;
}

void cli_local_time(uint64_t wall_ns, char *out, size_t size)
{
    time_t t = (time_t)(wall_ns / 1000000000u);
    struct tm tm;
    if (!wall_ns || !localtime_r(&t, &tm) || !strftime(out, size, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(out, size, "?");
}

static void say_leftover(const char *path, const struct stat *st, void *cmd)
{
    char when[32];
    cli_local_time((uint64_t)st->st_mtim.tv_sec * 1000000000u + (uint64_t)st->st_mtim.tv_nsec, when,
                   sizeof when);
    cli_warn(cmd, "%s (%.1f MB, last written %s) is an unfinished trace that a save, stop or record "
             "into this name left when it was killed while writing: 'ltr info' reads what it holds; rename or "
             "remove it", path, (double)st->st_size / 1048576.0, when);
}

void cli_name_leftovers(const char *cmd, const char *path)
{
    ltr_leftover_temps(path, say_leftover, (void *)cmd); /* a directory not read: nothing to say */
}

/* stop and save take their FILE as an argument, where record, start -o,
 * export and report take -o FILE: getopt said "invalid option -- 'o'" to
 * 'ltr stop -o app.ltr', and not what to type instead. */
static void output_option_hint(const char *cmd, int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strncmp(argv[i], "-o", 2) || !strncmp(argv[i], "--output", 8)) {
            fprintf(stderr, "ltr %s: the trace's FILE is given without -o: 'ltr %s FILE'\n", cmd, cmd);
            return;
        }
}

/* force, no_symbols == NULL: --force, --no-symbols are not options of this command. */
static int session_args(const char *cmd, int argc, char **argv, const char *usage,
                        const char *help_text, const char **instance, int *first, int nmin, int nmax,
                        int *force, int *no_symbols)
{
    static const struct option opts[] = {{"instance", required_argument, 0, 'n'},
                                         {"help", no_argument, 0, 'h'},
                                         {"force", no_argument, 0, 'f'},
                                         {"no-symbols", no_argument, 0, 'S'}, {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'n') {
            *instance = optarg;
        } else if (c == 'f' && force) {
            *force = 1;
        } else if (c == 'S' && no_symbols) {
            *no_symbols = 1;
        } else if (c == 'h') {
            printf("usage: %s\n\n%s", usage, help_text);
            return 0;
        } else {
            int rc = cli_usage_error(cmd, usage);
            if (force)
                output_option_hint(cmd, argc, argv);
            return rc;
        }
    }
    if (argc - optind < nmin || argc - optind > nmax) {
        /* say what is wrong before the usage, as analyze's "no TRACE given":
         * the operand missing is the usage's word after "ltr CMD " */
        if (argc - optind > nmax) {
            bool text = strstr(usage, "TEXT") || strstr(usage, "DESCRIPTION");
            cli_fail(cmd, "'%s' is an argument too many%s", argv[optind + nmax],
                     !nmax  ? ": this command takes none"
                     : text ? " (quote a text of several words as one)"
                            : "");
        } else {
            const char *w = strchr(usage, ' ');
            w = w ? strchr(w + 1, ' ') : NULL;
            int n = w ? (int)strcspn(w + 1, " ") : 0;
            cli_fail(cmd, "no %.*s given", n, w ? w + 1 : "");
        }
        return cli_usage_error(cmd, usage);
    }
    *first = optind;
    return -1;
}

int cli_session_args(const char *cmd, int argc, char **argv, const char *usage,
                     const char *help_text, const char **instance, int *first, int nmin, int nmax)
{
    return session_args(cmd, argc, argv, usage, help_text, instance, first, nmin, nmax, NULL, NULL);
}

int cli_session_file_args(const char *cmd, int argc, char **argv, const char *usage,
                          const char *help_text, const char **instance, int *first, int nmin, int nmax,
                          int *force, int *no_symbols)
{
    return session_args(cmd, argc, argv, usage, help_text, instance, first, nmin, nmax, force, no_symbols);
}
