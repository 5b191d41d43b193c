/*
 * cli/cmd-start.c — `ltr start`: start a recording session held by a
 * recorder process that outlives the command.
 */
#include "byname/byname.h"
#include "cli/cli.h"
#include "cli/session.h"
#include "prim/prim.h"
#include "profiles/profiles.h"
#include "recorder/heaprun.h"
#include "recorder/reach.h"
#include "recorder/recorder.h"
#include "inject/inject.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] = "ltr start [PROFILE...] [--instance NAME] [--filemode [-o FILE [--force]]]\n"
                            "                 [--buffer-size KB] [--buffers N|N%] [--max-file-size MB]\n"
                            "                 [--provider SPEC]... [--pid PID]... [--name NAME]... [--memory-interval SECONDS]";

static void help(void)
{
    printf("usage: %s\n\n"
           "Starts a recording session. A recorder process holds its buffers in shared\n"
           "memory until 'ltr stop' or 'ltr cancel'; programs that use the ltr provider\n"
           "API write their events into it.\n\n"
           "PROFILE is a recording profile, [FILE.wprp!]Name[.light|.verbose]: a built-in\n"
           "one ('ltr profiles' lists them) or one of a Windows Performance Recorder\n"
           "file, as it is (FILE.wprp alone: its profiles' one Name, as 'wpr -start\n"
           "FILE.wprp'). Several may be given; their collectors and providers combine\n"
           "as in WPR. What a profile asks for that Linux or this ltr does not have is\n"
           "listed, not fatal (unless the profile says Strict=\"true\").\n\n"
           "  --instance NAME      session name (default: ltr); several sessions may run\n"
           "  --filemode           write full buffers to the trace as they fill; without it\n"
           "                       the session is a flight recorder (memory mode) that keeps\n"
           "                       the newest buffers until 'ltr save' or 'ltr stop'\n"
           "  -o, --output FILE    file mode: the trace grows here; 'ltr stop' completes it\n"
           "                       here, 'ltr stop OTHER' moves it (default: a new file\n"
           "                       $TMPDIR/ltr-NAME-XXXXXX.ltr.part, /tmp without TMPDIR,\n"
           "                       XXXXXX chosen at random, which 'ltr stop FILE' moves);\n"
           "                       an existing FILE is refused\n"
           "  --force              replace an existing FILE\n"
           "  --buffer-size KB     size of each buffer, %u to %u (default %u; with\n"
           "                       profiles, overrides every collector's)\n"
           "  --buffers N|N%%       number of buffers, %u to %u, or a percentage of RAM,\n"
           "                       1 to 50 (default %u; with profiles, overrides every\n"
           "                       collector's); for heap tracing, fewer than 8 per CPU\n"
           "                       are warned of: they lose events\n"
           "  --max-file-size MB   file mode: stop growing the trace at this size; later\n"
           "                       buffers are counted as lost\n"
           "  --provider SPEC      enable a provider: NAME|GUID[:KEYWORDS[:LEVEL]], keywords\n"
           "                       as a hex mask (default all), level 1 critical .. 5 verbose\n"
           "                       (default 5); may be repeated\n"
           "  --pid PID            heap tracing: only this process and the children it\n"
           "                       forks (may be repeated; with the heap profile, e.g.\n"
           "                       'ltr start heap --pid 1234'). A running process\n"
           "                       without the heap agent gets it now, without a\n"
           "                       restart (x86-64: ptrace of one thread for a\n"
           "                       few ms, no gdb; docs/attach.md); after 'ltr stop' it\n"
           "                       stays, dormant, and a later session enables it again.\n"
           "                       Refused, nothing started: a pid that does not exist, a\n"
           "                       zombie, a static program, another user's process,\n"
           "                       ptrace not permitted (Yama, no CAP_SYS_PTRACE).\n"
           "                       With the system provider (profiles memory, general):\n"
           "                       a process whose memory counters are recorded (its\n"
           "                       threads and modules too; processes are recorded\n"
           "                       system-wide where the kernel tells them: root)\n"
           "  --memory-interval SECONDS\n"
           "                       the system provider's memory counters every SECONDS\n"
           "                       (0.01 to 3600, default 1)\n"
           "  --name NAME          heap tracing: the processes whose executable's file name\n"
           "                       is NAME (may be repeated; the recorder reads each\n"
           "                       process's name from /proc/PID/exe): the new ones, which\n"
           "                       carry the agent, dormant, once 'ltr heaptracingconfig\n"
           "                       NAME enable' is on, and the running ones, attached as\n"
           "                       with --pid; one that cannot be attached is a warning\n\n"
           "Buffers. Without a profile, one collector of %u buffers of %u KB for\n"
           "provider events. A profile sets its collectors' own ('ltr profiles NAME\n"
           "--details' shows them): 'ltr start heap' takes 16384 buffers of 64 KB, a\n"
           "1 GB pool, because a flight recorder reaches back in time as far as its\n"
           "pool holds (heap.light: 256 MB); with --filemode, 1024 of 1 MB.\n"
           "Memory is taken as buffers are first used: in memory mode it grows to the\n"
           "whole pool as the ring fills; in file mode written buffers are reused\n"
           "first, so it grows only while writing lags. A thread holds a buffer of its\n"
           "own from its first event: 1 MB buffers kept a few dozen events each of a\n"
           "program that starts a thread per request, 64 KB ones 16 times as many such\n"
           "threads, and a save merges each thread's buffers into blocks of up to 1 MB,\n"
           "so a busy thread's events take no more room in it.\n"
           "'ltr record' takes 1024 of 16 KB per CPU instead: see 'ltr record --help'.\n\n"
           "exit status: 0 the session started (warnings on stderr name what it will\n"
           "not record, and each --pid that could not be attached), 1 nothing was\n"
           "started (an error in a profile, a profile with Strict=\"true\" that records\n"
           "nothing here, the recorder could not start, a --pid refused, no --pid\n"
           "could be attached, or Ctrl-C while attaching cancelled the session),\n"
           "2 bad usage or a bad option value.\n",
           usage, LTR_BUFFER_KB_MIN, LTR_BUFFER_KB_MAX, LTR_BUFFER_KB_DEFAULT, LTR_BUFFERS_MIN,
           LTR_BUFFERS_MAX, LTR_BUFFERS_DEFAULT, LTR_BUFFERS_DEFAULT, LTR_BUFFER_KB_DEFAULT);
}


static void print_lines(const char *prefix, const ltr_bytes *text)
{
    const char *p = (const char *)text->data, *end = p + text->len;
    while (p && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        fprintf(stderr, "ltr start: %s%.*s\n", prefix, (int)n, p);
        p += n + 1;
    }
}

/* What the options said beyond the session configuration itself. */
typedef struct start_opts {
    const char *buffers, *output;
    bool force;
    ltr_session_options session;
    ltr_provider_spec providers[LTR_MAX_SESSION_PROVIDERS];
} start_opts;

/* The profiles, resolved, with their warnings printed; NULL after an error
 * (said). */
static ltr_plan *resolve_profiles(const char *const *specs, size_t n, bool filemode)
{
    ltr_profile_request req = {.specs = specs, .nspecs = n, .filemode = filemode};
    ltr_plan *plan = NULL;
    int rc = ltr_profiles_resolve(&req, &plan);
    if (!plan) {
        cli_fail("start", "out of memory reading the profiles");
        return NULL;
    }
    for (size_t i = 0; i < plan->diags.n; i++) {
        char line[2048];
        ltr_diag_format(&plan->diags.v[i], line, sizeof line);
        cli_say("start", "%s", line); /* names from a .wprp file: shown without control characters */
    }
    if (rc) {
        cli_fail("start", "the profiles have errors; nothing was started");
        ltr_plan_free(plan);
        return NULL;
    }
    return plan;
}

/* cfg's collectors and providers, from the profiles (if any) and options. */
static int configure(ltr_session_config *cfg, const char *const *specs, size_t n, const start_opts *o)
{
    ltr_plan *plan = NULL;
    if (n && !(plan = resolve_profiles(specs, n, cfg->mode == LTR_MODE_FILE)))
        return 1;
    ltr_bytes notes = {0};
    ltr_error err;
    int rc = 0;
    if (ltr_session_config_build(plan, &o->session, cfg, &notes, &err) != 0)
        rc = cli_fail("start", "%s", err.msg);
    print_lines("note: ", &notes);
    ltr_bytes_free(&notes);
    ltr_plan_free(plan);
    return rc;
}

/* One option into cfg and o. Returns -1 to go on, or the exit status. */
static int take_option(int c, ltr_session_config *cfg, start_opts *o)
{
    uint64_t v;
    ltr_error err;
    switch (c) {
    case 'n':
        if (ltr_session_name_check(optarg, &err))
            return cli_fail("start", "%s", err.msg), 2;
        snprintf(cfg->name, sizeof cfg->name, "%s", optarg);
        return -1;
    case 'f': cfg->mode = LTR_MODE_FILE; return -1;
    case 'o': o->output = optarg; return -1;
    case 'F': o->force = true; return -1;
    case 's':
        if (cli_parse_u64("start", "--buffer-size (KB)", optarg, LTR_BUFFER_KB_MIN, LTR_BUFFER_KB_MAX, &v))
            return 2;
        o->session.buffer_kb = (uint32_t)v;
        return -1;
    case 'b': o->buffers = optarg; return -1;
    case 'm':
        if (cli_parse_u64("start", "--max-file-size (MB)", optarg, 1, 1ull << 40, &v))
            return 2;
        cfg->max_file_size = v << 20;
        return -1;
    case 'p':
        if (o->session.nproviders == LTR_MAX_SESSION_PROVIDERS)
            return cli_fail("start", "at most %d providers per session", LTR_MAX_SESSION_PROVIDERS), 2;
        if (ltr_provider_spec_parse(optarg, &o->providers[o->session.nproviders], &err))
            return cli_fail("start", "%s", err.msg), 2;
        o->session.nproviders++;
        return -1;
    case 'P':
        if (cfg->npids == LTR_MAX_SESSION_PIDS)
            return cli_fail("start", "at most %d --pid options", LTR_MAX_SESSION_PIDS), 2;
        if (cli_parse_u64("start", "--pid", optarg, 1, 4194304, &v))
            return 2;
        cfg->pids[cfg->npids++] = (uint32_t)v;
        return -1;
    case 'i':
        if (cli_parse_seconds("start", "--memory-interval", optarg, LTR_SYSTEM_INTERVAL_MS_MIN / 1000.0,
                              LTR_SYSTEM_INTERVAL_MS_MAX / 1000.0, &v))
            return 2;
        cfg->system_interval_ms = (uint32_t)v;
        return -1;
    case 'N':
        if (cfg->nnames == LTR_MAX_SESSION_NAMES)
            return cli_fail("start", "at most %d --name options", LTR_MAX_SESSION_NAMES), 2;
        if (ltr_byname_check(optarg, &err))
            return cli_fail("start", "--name: %s", err.msg), 2;
        snprintf(cfg->names[cfg->nnames++], sizeof cfg->names[0], "%s", optarg);
        return -1;
    case 'h': help(); return 0;
    default: return cli_usage_error("start", usage);
    }
}

/* The file the recorder made of a template, as it says in its status. */
static const char *output_of(const ltr_session_config *cfg)
{
    static char made[sizeof cfg->output];
    static ltr_session_status st;
    ltr_error err;
    int asked = cfg->output_temp && ltr_client_status(cfg->name, &st, &err) == 0;
    if (cfg->output_temp && !asked)
        cli_fail("start", "%s", err.msg);
    snprintf(made, sizeof made, "%s", asked && st.has_output ? st.output : cfg->output);
    return made;
}

/* cfg.pids[0 .. option_pids) came from --pid, the rest from the profiles'
 * HeapProcessIds: a profile's placeholder (WPRP_Heap's TraceHeap_ByPID holds
 * 12345678, to be rewritten) was said as "--pid 12345678", which the user
 * never gave. */
static unsigned option_pids;

static const char *pid_named(const ltr_session_config *cfg, unsigned i)
{
    static char said[64];
    snprintf(said, sizeof said, i < option_pids ? "--pid %u" : "the profile's HeapProcessId %u", cfg->pids[i]);
    return said;
}

/* Every --pid is checked before anything starts (touching nothing): a pid
 * that cannot be traced refuses the whole start, with the cause and fix. */
/* --pid for the system provider alone: a process that does not exist is an
 * error (nothing would ever be recorded of it); no agent is needed. */
static int pids_exist(const ltr_session_config *cfg)
{
    for (unsigned i = 0; i < cfg->npids; i++)
        if (kill((pid_t)cfg->pids[i], 0) != 0 && errno == ESRCH)
            return cli_fail("start", "%s: no such process", pid_named(cfg, i)), 2;
    return 0;
}

static int check_pids(const ltr_session_config *cfg, const char *rundir)
{
    for (unsigned i = 0; i < cfg->npids; i++) {
        ltr_error err;
        if (ltr_attach_check((pid_t)cfg->pids[i], rundir, &err) < 0)
            return cli_fail("start", "%s: %s; nothing was started", pid_named(cfg, i), err.msg), 1;
    }
    return 0;
}

/* Each --pid, attached once the session runs (recorder/reach.c): said, and
 * a warning with its reason for each that could not be. Returns how many the
 * session reaches. */
static unsigned attach_pids(const ltr_session_config *cfg, const char *rundir)
{
    static ltr_reached out[LTR_MAX_SESSION_PIDS];
    ltr_error err;
    int reached = ltr_session_reach_pids(cfg, rundir, out, &err);
    if (reached < 0) {
        cli_fail("start", "%s", err.msg);
        return 0;
    }
    for (unsigned i = 0; i < cfg->npids; i++) {
        if (out[i].state < 0)
            cli_warn("start", "%s was not attached: %s", pid_named(cfg, i), out[i].why.msg);
        else if (out[i].state == LTR_ATTACH_INJECTED)
            printf("pid %u: heap agent loaded (thread %d stopped %.1f ms)\n", out[i].pid, (int)out[i].rep.tid,
                   (double)out[i].rep.call_ns / 1e6);
        else
            printf("pid %u: heap agent already there, enabled\n", out[i].pid);
    }
    fflush(stdout); /* before what --name's attach or the cancel say on stderr, as print_started */
    return (unsigned)reached;
}

/* --name matched no running executable of this user: one of another user
 * (a service's User=) is said with who can trace it; one that ps calls name
 * (its comm, a link's name: python3 -> python3.11) with the name that traces
 * it, where nothing was said and nothing of it recorded. */
static void say_called(const char *name)
{
    uint32_t one;
    char exe[LTR_BYNAME_NAME_MAX + 1], other[512];
    if (ltr_pids_named(name, geteuid(), &one, 1) > 0)
        return;
    if (ltr_name_run_by_other(name, geteuid(), other, sizeof other)) {
        cli_warn("start", "--name %s: no running process of this user is named so: %s", name, other);
        return;
    }
    uint32_t called = ltr_pid_called(name, geteuid(), exe, sizeof exe);
    if (called)
        cli_warn("start", "--name %s: no running process's executable is %s (--name is the executable's file "
                 "name); pid %u, which ps calls %s, runs %s: --name %s traces it",
                 name, name, called, name, exe, exe);
}

/* --name: new processes carry the agent only under the by-name setting
 * (said when it is off); running ones without it are attached now, as
 * --pid's are, each failure a warning: the session is for the new ones too. */
/* The running processes of name that carry the agent already (the by-name
 * setting's) need no attach, but one whose runtime directory is not ltr's
 * (its own mount namespace: systemd's PrivateTmp=) never joins: said, as an
 * attach refused for it is, where nothing was said and nothing recorded. */
static void say_unreachable_with_agent(const char *name, const char *rundir)
{
    static uint32_t pids[LTR_MAX_SESSION_PIDS];
    int n = ltr_pids_named(name, geteuid(), pids, LTR_MAX_SESSION_PIDS);
    for (int k = 0; k < n && k < LTR_MAX_SESSION_PIDS; k++) {
        ltr_error err;
        if (ltr_heap_agent_loaded(pids[k]) == 1 && ltr_attach_check((pid_t)pids[k], rundir, &err) < 0)
            cli_warn("start", "--name %s: pid %u carries the heap agent but cannot join this session: %s", name,
                     pids[k], err.msg);
    }
}

static void attach_names(const ltr_session_config *cfg, const char *rundir)
{
    for (unsigned i = 0; i < cfg->nnames; i++) {
        const char *name = cfg->names[i];
        static ltr_name_reached r;
        ltr_session_reach_name(name, rundir, &r);
        if (!r.listed)
            cli_warn("start", "--name %s: cannot list the running processes (/proc)", name);
        if (!r.configured)
            cli_warn("start", "--name %s: new processes of this name do not start with the heap agent: "
                     "'ltr heaptracingconfig %s enable' (as root) makes them", name, name);
        if (r.tried && !r.have_agent)
            cli_warn("start", "--name %s: %u running processes were not attached: %s", name, r.tried,
                     r.agent_err.msg);
        for (unsigned k = 0; k < r.tried && r.have_agent; k++) {
            const ltr_reached *p = &r.procs[k];
            if (p->state < 0)
                cli_warn("start", "--name %s: pid %u was not attached: %s", name, p->pid, p->why.msg);
            else if (p->state == LTR_ATTACH_INJECTED)
                printf("pid %u (%s): heap agent loaded (thread %d stopped %.1f ms)\n", p->pid, name,
                       (int)p->rep.tid, (double)p->rep.call_ns / 1e6);
        }
        if (r.listed)
            say_unreachable_with_agent(name, rundir);
        if (r.listed && !r.without)
            say_called(name);
        if (r.without > r.tried)
            cli_warn("start", "--name %s: only %u of its %u running processes without the agent were attached",
                     name, r.tried, r.without);
    }
}

/* Ctrl-C, SIGTERM or SIGHUP while the recorder is launched and the --pids
 * and --names are attached (up to 3 s each): the session is cancelled, as
 * if it had never started. The attach holds them while it has a thread of
 * the target, and the default action at its end killed ltr there, leaving
 * the session recording with none of its processes and nobody told. */
static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    interrupted = sig;
}

static void catch_interrupts(struct sigaction *old)
{
    static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa = {.sa_handler = on_interrupt};
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &sa, &old[i]);
}

static void release_interrupts(const struct sigaction *old)
{
    static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &old[i], NULL);
}

static void print_started(const ltr_session_config *cfg)
{
    printf("session '%s' started: %s mode", cfg->name, cfg->mode == LTR_MODE_FILE ? "file" : "memory");
    for (unsigned i = 0; i < cfg->ncollectors; i++)
        printf("; %s: %u buffers of %u KB", cfg->collectors[i].name, cfg->collectors[i].buffers,
               cfg->collectors[i].buffer_kb);
    if (cfg->profiles[0])
        printf(", profiles %s", cfg->profiles);
    if (cfg->mode == LTR_MODE_FILE)
        printf(", writing %s", output_of(cfg));
    printf("\n");
    fflush(stdout); /* before what the attaches say on stderr: in a log or a pipe, it came after them,
                     * "session 'q' started" below "no --pid could be attached; the session was cancelled" */
}

/* --pid, --memory-interval and --name each need a profile that uses them */
static int check_targets(const ltr_session_config *cfg)
{
    bool system = ltr_session_records_system(cfg);
    if (cfg->npids && !cfg->pid_collectors && !system)
        return cli_fail("start", "--pid limits heap tracing or names the system provider's processes, and "
                                 "no profile here does either: add one, e.g. 'ltr start heap --pid %u' or "
                                 "'ltr start memory --pid %u'", cfg->pids[0], cfg->pids[0]), 2;
    if (cfg->system_interval_ms && !system)
        return cli_fail("start", "--memory-interval is for the system provider's memory counters, and no "
                                 "profile here records them: add one, e.g. 'ltr start memory'"), 2;
    if (cfg->nnames && !cfg->pid_collectors)
        return cli_fail("start", "--name limits heap tracing, and no profile here traces the heap: "
                                 "add one, e.g. 'ltr start heap --name %s'", cfg->names[0]), 2;
    return 0;
}

/* The session has started: its --pid targets are attached, then --name's
 * shim told; none attached or a signal on the way cancels the session. */
static int attach_targets(const ltr_session_config *cfg, const char *rundir, struct sigaction old[3])
{
    bool none = cfg->pid_collectors && cfg->npids && !attach_pids(cfg, rundir);
    if (!none && !interrupted)
        attach_names(cfg, rundir);
    if (none || interrupted) {
        cli_session_request("start", cfg->name, "cancel", NULL, NULL, NULL);
        release_interrupts(old);
        if (interrupted)
            return cli_fail("start", "interrupted (%s) while attaching; the session was cancelled",
                            strsignal(interrupted)), 1;
        return cli_fail("start", "no --pid could be attached; the session was cancelled"), 1;
    }
    release_interrupts(old);
    return 0;
}

int cmd_start(int argc, char **argv)
{
    static const struct option opts[] = {
        {"instance", required_argument, 0, 'n'}, {"filemode", no_argument, 0, 'f'},
        {"output", required_argument, 0, 'o'},   {"buffer-size", required_argument, 0, 's'},
        {"buffers", required_argument, 0, 'b'},  {"max-file-size", required_argument, 0, 'm'},
        {"provider", required_argument, 0, 'p'}, {"pid", required_argument, 0, 'P'},
        {"force", no_argument, 0, 'F'},          {"help", no_argument, 0, 'h'},
        {"memory-interval", required_argument, 0, 'i'}, {"name", required_argument, 0, 'N'},
        {0, 0, 0, 0}};
    static ltr_session_config cfg;
    static start_opts o;
    memset(&cfg, 0, sizeof cfg);
    memset(&o, 0, sizeof o);
    snprintf(cfg.name, sizeof cfg.name, "%s", LTR_DEFAULT_SESSION);
    o.session.providers = o.providers;
    int c, rc;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1)
        if ((rc = take_option(c, &cfg, &o)) >= 0)
            return rc;
    option_pids = cfg.npids;
    /* N% counts buffers of --buffer-size, or of the default size */
    if (o.buffers && cli_parse_buffers("start", o.buffers,
                                       o.session.buffer_kb ? o.session.buffer_kb : LTR_BUFFER_KB_DEFAULT,
                                       &o.session.buffers))
        return 2;
    if ((rc = configure(&cfg, (const char *const *)argv + optind, (size_t)(argc - optind), &o)) != 0)
        return rc;
    if ((rc = check_targets(&cfg)) != 0)
        return rc;
    char rundir[4096];
    ltr_error err;
    if (ltr_runtime_dir(rundir, sizeof rundir, &err))
        return cli_fail("start", "%s", err.msg);
    if (err.msg[0]) /* a fallback past a directory another user holds: said where the session is (a review) */
        cli_warn("start", "%s", err.msg);
    if ((rc = cfg.pid_collectors ? check_pids(&cfg, rundir) : pids_exist(&cfg)) != 0)
        return rc;
    if (cfg.mode != LTR_MODE_FILE && (o.output || cfg.max_file_size))
        return cli_fail("start", "%s is for file mode: add --filemode",
                        o.output ? "--output" : "--max-file-size"), 2;
    if (o.force && !o.output)
        return cli_fail("start", "--force replaces an existing -o FILE: give one"), 2;
    if (cfg.mode == LTR_MODE_FILE) {
        if (o.output && cli_absolute_path("start", o.output, cfg.output, sizeof cfg.output))
            return 2;
        if (o.output && (cli_refuse_existing("start", cfg.output, o.force) ||
                         cli_refuse_no_directory("start", cfg.output)))
            return 1;
        cfg.output_replace = o.force; /* once the session can start: a refused start keeps FILE */
    }
    if (cfg.mode == LTR_MODE_FILE && !o.output && ltr_session_default_output(&cfg, &err))
        return cli_fail("start", "%s", err.msg);
    struct sigaction old[3];
    interrupted = 0;
    if (cfg.npids || cfg.nnames) /* from the launch on: a signal during it left the session too */
        catch_interrupts(old);
    if (ltr_recorder_launch(&cfg, &err)) {
        if (cfg.npids || cfg.nnames)
            release_interrupts(old);
        return cli_fail("start", "%s", err.msg);
    }
    print_started(&cfg);
    if (o.buffers && ltr_session_traces_heap(&cfg)) /* the count the user chose: a profile's is enough */
        cli_warn_few_buffers("start", o.session.buffers);
    char why[512];
    if (ltr_session_cpu_samples_check(&cfg, why, sizeof why) != 0)
        cli_warn("start", "CPU samples (SampledProfile) are not recorded: %s; the rest records", why);
    else if (ltr_session_samples_cpu(&cfg) && !cfg.npids && !cfg.nnames)
        /* WPR samples the whole machine; a user of its CPU profiles expects as much */
        fprintf(stderr, "ltr start: note: CPU samples (SampledProfile) are taken of the session's target "
                        "processes only, not system-wide: none is named (--pid P), so there will be none "
                        "until a process joins the session ('ltr run')\n");
    if (!cfg.npids && !cfg.nnames)
        return 0;
    return attach_targets(&cfg, rundir, old);
}
