/*
 * cli/cmd-watch.c — `ltr watch`: parses the options and prints what the
 * watch (watch/watch.h) tells; the watch does the rest.
 */
#include "base/units.h"
#include "cli/cli.h"
#include "cli/session.h"
#include "prim/prim.h"
#include "watch/watch.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "ltr watch (--pid PID | --name NAME) --record-to FILE\n"
    "                 [--private-bytes-above SIZE] [--growth-above SIZE|auto] [--interval SECONDS]\n"
    "                 [--support-bundle] [--max-triggers N] [--monitor] [--memory-interval SECONDS]\n"
    "                 [--no-symbols] [PROFILE...]";

static void help(void)
{
    printf("usage: %s\n\n"
           "Keeps a flight recorder (a memory-mode session) on one process and saves it\n"
           "by itself when the process's private memory is high and growing, for a leak\n"
           "that shows once in a few days on a machine nobody watches. Private bytes are\n"
           "RssAnon + VmSwap of /proc/PID/status, read every --interval.\n\n"
           "The session records the process's heap (every allocation with its stack; a\n"
           "process running without the heap agent gets it now, as 'ltr start heap --pid'\n"
           "does), its heap snapshots and its memory counters (profiles heap, heapsnapshot\n"
           "and memory), and what any PROFILE adds. When the condition holds, it writes a\n"
           "marker naming the condition and its figures, takes a heap snapshot (the trace\n"
           "then holds every live block with its stack, not only the recorder's tail) and\n"
           "saves the trace to FILE; later triggers to FILE-2, FILE-3... (before the\n"
           "extension: trace-2.ltr). An existing file is never overwritten.\n\n"
           "  --pid PID            the process; if it exits, what the flight recorder holds\n"
           "                       of its last moments (an OOM kill, a crash) is saved to\n"
           "                       the next free FILE name as a trigger's trace is, and the\n"
           "                       watch ends (status 3)\n"
           "  --name NAME          the process whose executable's file name is NAME, followed\n"
           "                       across restarts (waits while none runs; an instance\n"
           "                       that exits is not saved by itself: docs/watch.md)\n"
           "  --record-to FILE     where the first trigger saves the trace\n"
           "  --private-bytes-above SIZE\n"
           "                       the condition holds only above this (e.g. 3G)\n"
           "  --growth-above SIZE  ...and only when private bytes grew more than SIZE since the\n"
           "                       previous poll (e.g. 40M). SIZE: bytes, or with K, M, G, T\n"
           "                       (KB, KiB...: all powers of 1024). At least one of the two.\n"
           "  --growth-above auto  a threshold that learns itself: the first %u polls measure\n"
           "                       how far transient activity moves private bytes; then it\n"
           "                       triggers when even the lowest of the last %u polls is above\n"
           "                       that band by its width (docs/watch.md)\n"
           "  --interval SECONDS   between polls (0.1 to 86400; default 10)\n"
           "  --support-bundle     beside each trace, a .tar.zst (trace.ltr -> trace.tar.zst;\n"
           "                       tar --zstd -xf opens it) with the process's /proc facts\n"
           "                       (status, smaps_rollup, maps, limits, cmdline; never\n"
           "                       environ), the profile, 'ltr status', the polls, the\n"
           "                       recorder's log and the host's facts\n"
           "  --max-triggers N     end after N triggers (default 1); before that it keeps\n"
           "                       recording, and a trigger needs the condition to stop and\n"
           "                       start holding again\n"
           "  --monitor            print one line per poll: time, pid, private bytes, growth,\n"
           "                       how far back the flight recorder reaches, what it waits for\n"
           "  --memory-interval SECONDS\n"
           "                       the memory counters in the trace (default 1)\n"
           "  --no-symbols         do not add the names of the recorded frames to each trace\n"
           "                       once saved (by default they are, as 'ltr symbolize' does,\n"
           "                       so that the trace shows them on another machine; this\n"
           "                       takes a moment of CPU after each trigger, the recording\n"
           "                       going on meanwhile)\n\n"
           "Ctrl-C or SIGTERM ends it cleanly: the session is cancelled (saved traces stay),\n"
           "nothing is left running. If watch itself is killed, the recorder cancels the\n"
           "session. As a service: systemctl enable --now ltr-watch@NAME (docs/watch.md).\n\n"
           "exit status: 0 the triggers were saved, or it was stopped by a signal; 1 an error\n"
           "(the session could not start, the process could not be attached, a save failed,\n"
           "the session was stopped or cancelled by another command);\n"
           "2 bad usage or a bad option value; 3 the process (--pid) exited: its recording\n"
           "saved (the line says where), or, when it could not be, the error says why.\n",
           usage, LTR_WATCH_WARMUP_POLLS, LTR_WATCH_SUSTAIN_POLLS);
}

static volatile sig_atomic_t stop_asked;
static void on_signal(int sig) { stop_asked = sig; }

typedef struct out_ctx {
    bool monitor;
    bool no_symbols;
    bool exit_said; /* on_exited told the process's end and where its recording went */
    ltr_watch_rule rule;
} out_ctx;

/* A note may name a process's executable (the one ps calls by the name
 * watched): its file name is the program's to choose, and stdout is often
 * root's terminal, so it is shown without control characters. */
static void note(void *ctx, const char *line)
{
    (void)ctx;
    char shown[1024];
    size_t len = strnlen(line, sizeof shown - 1);
    shown[ltr_shown_text(line, len, shown, false)] = 0;
    printf("ltr watch: %s\n", shown);
    cli_flush_stdout();
}

static void warn(void *ctx, const char *line)
{
    (void)ctx;
    cli_warn("watch", "%s", line);
}

static void on_poll(void *ctx, const ltr_watch_poll *p)
{
    const out_ctx *o = ctx;
    if (!o->monitor)
        return;
    char line[512];
    ltr_watch_poll_format(p, time(NULL), line, sizeof line);
    printf("%s\n", line);
    cli_flush_stdout();
}

static void add_symbols(const out_ctx *o, const char *path)
{
    if (!o->no_symbols) /* the trace is read elsewhere, most often: its names go with it */
        cli_add_symbols("watch", path, NULL, 0);
}

static void on_trigger(void *ctx, unsigned n, const char *path, const char *bundle, const ltr_watch_verdict *v)
{
    const out_ctx *o = ctx;
    printf("ltr watch: trigger %u: %s; trace saved to %s", n, v->condition, path);
    if (bundle)
        printf(", support bundle %s", bundle);
    printf("\n");
    cli_flush_stdout();
    add_symbols(o, path);
}

static void on_exited(void *ctx, uint32_t pid, const char *how, uint64_t reach_ns, const char *path,
                      const char *bundle)
{
    out_ctx *o = ctx;
    o->exit_said = true;
    printf("ltr watch: pid %u exited (%s); ", pid, how);
    if (reach_ns) /* 0: the recorder did not say how far back it reached */
        printf("the last %.0f s it recorded saved to %s", (double)reach_ns / 1e9, path);
    else
        printf("what it recorded saved to %s", path);
    if (bundle)
        printf(", support bundle %s", bundle);
    printf("\n");
    cli_flush_stdout();
    add_symbols(o, path);
}

static int parse_size(const char *opt, const char *text, uint64_t *out)
{
    int rc = ltr_size_parse(text, out);
    if (rc == 0 && *out == 0)
        rc = -EINVAL;
    if (rc)
        cli_fail("watch", "%s '%s': give a size above 0, e.g. 40M, 3G or 512KiB%s", opt, text,
                 rc == -ERANGE ? " (this one is too large)" : "");
    return rc;
}

int cmd_watch(int argc, char **argv)
{
    static const struct option opts[] = {
        {"pid", required_argument, 0, 'p'},           {"name", required_argument, 0, 'n'},
        {"record-to", required_argument, 0, 'o'},     {"private-bytes-above", required_argument, 0, 'a'},
        {"growth-above", required_argument, 0, 'g'},  {"interval", required_argument, 0, 'i'},
        {"max-triggers", required_argument, 0, 'm'},  {"monitor", no_argument, 0, 'M'},
        {"memory-interval", required_argument, 0, 'I'}, {"help", no_argument, 0, 'h'},
        {"support-bundle", no_argument, 0, 'b'},       {"no-symbols", no_argument, 0, 'S'},
        {0, 0, 0, 0}};
    static char record_to[4096];
    ltr_watch_config cfg = {.max_triggers = 1};
    out_ctx o = {0};
    uint64_t v;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (cli_parse_u64("watch", "--pid", optarg, 1, 4194304, &v))
                return 2;
            cfg.pid = (uint32_t)v;
            break;
        case 'n': cfg.name = optarg; break;
        case 'o': /* the recorder writes it, in its own working directory: absolute here */
            if (cli_absolute_path("watch", optarg, record_to, sizeof record_to))
                return 2;
            cfg.record_to = record_to;
            break;
        case 'a':
            if (parse_size("--private-bytes-above", optarg, &cfg.rule.above))
                return 2;
            break;
        case 'g':
            if (!strcmp(optarg, "auto"))
                cfg.rule.growth_auto = true;
            else if (parse_size("--growth-above", optarg, &cfg.rule.growth))
                return 2;
            break;
        case 'i':
            if (cli_parse_seconds("watch", "--interval", optarg, 0.1, 86400, &v))
                return 2;
            cfg.interval_ms = (uint32_t)v;
            break;
        case 'I':
            if (cli_parse_seconds("watch", "--memory-interval", optarg, 0.01, 3600, &v))
                return 2;
            cfg.memory_interval_ms = (uint32_t)v;
            break;
        case 'm':
            if (cli_parse_u64("watch", "--max-triggers", optarg, 1, 1000000, &v))
                return 2;
            cfg.max_triggers = (unsigned)v;
            break;
        case 'M': o.monitor = true; break;
        case 'b': cfg.support_bundle = true; break;
        case 'S': o.no_symbols = true; break;
        case 'h': help(); return 0;
        default: return cli_usage_error("watch", usage);
        }
    }
    cfg.profiles = (const char *const *)argv + optind;
    cfg.nprofiles = (size_t)(argc - optind);
    o.rule = cfg.rule;
    ltr_error err;
    if (ltr_watch_check(&cfg, &err))
        return cli_fail("watch", "%s", err.msg), err.code == EINVAL ? 2 : 1;
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    ltr_watch_hooks hooks = {.ctx = &o, .note = note, .warn = warn, .poll = on_poll, .trigger = on_trigger,
                             .exited = on_exited};
    int rc = ltr_watch_run(&cfg, &hooks, &stop_asked, &err);
    if (rc == -ESRCH && !o.exit_said) /* its recording could not be saved: err says why */
        cli_fail("watch", "%s", err.msg);
    if (rc == -ESRCH)
        return 3;
    if (rc)
        return cli_fail("watch", "%s", err.msg);
    if (stop_asked)
        printf("ltr watch: ended by %s; the session was cancelled\n", strsignal(stop_asked));
    return 0;
}
