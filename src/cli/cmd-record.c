/*
 * cli/cmd-record.c — `ltr record [-o FILE] [--filemode|--memory] -- CMD ARGS`:
 * heap-trace a command from launch to exit. A private session (its own
 * instance name) is started, CMD runs with the heap agent preloaded, and when
 * CMD and every process it started have exited the trace is written. The
 * exit status is CMD's.
 */
#include "cli/cli.h"
#include "cli/session.h"
#include "prim/prim.h"
#include "recorder/heaprun.h"
#include "inject/inject.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] = "ltr record [-o FILE] [--force] [--filemode|--memory] [--buffer-size KB]\n"
                            "                  [--buffers N|N%] [--depth N] [--no-symbols] -- CMD [ARGS...]\n"
                            "       ltr record --pid PID [--duration SECS] [-o FILE] [OPTIONS]";

static void help(void)
{
    printf("usage: %s\n\n"
           "Runs CMD with the heap agent preloaded and records every allocation,\n"
           "reallocation and free of CMD and of every process it starts, with the call\n"
           "stack of each allocation, until the last of them exits. Then writes the\n"
           "trace and exits with CMD's exit status (128 + N if signal N killed it, said by\n"
           "name). Ctrl-C stops CMD; the trace is still written. If CMD cannot start, no\n"
           "trace is written and the exit status is a shell's: 127 not found, 126 not\n"
           "executable. A write error (a full disk) is reported, exit status 1 or CMD's.\n"
           "The session is 'record-PID' (PID: this ltr record's); stopped by another\n"
           "command ('ltr stop --instance record-PID FILE'), its trace is that FILE, said.\n\n"
           "  -o, --output FILE    the trace (default: ltr-record.ltr); an existing FILE is\n"
           "                       refused before CMD runs\n"
           "  --force              replace an existing FILE\n"
           "  --filemode           write buffers to the trace as they fill (the default)\n"
           "  --memory             flight recorder: keep only the newest buffers, written\n"
           "                       at the end; the trace counts the overwritten events\n"
           "  --buffer-size KB     size of each buffer, %u to %u (default %u)\n"
           "  --buffers N|N%%       number of buffers, %u to %u, or a percentage of RAM,\n"
           "                       1 to 50 (default %u: %u per CPU, at most %u); fewer\n"
           "                       than 8 per CPU are warned of: they lose events\n"
           "  --depth N            frames per call stack, 0 to 256 (default 64)\n"
           "  -p, --pid PID        record a process that runs already instead of CMD, until\n"
           "                       Ctrl-C, --duration or its exit (as 'heaptrack -p'): the\n"
           "                       heap agent is loaded into it if it has none (x86-64,\n"
           "                       ptrace of one thread for a few ms, no gdb; it stays\n"
           "                       there, dormant, afterwards: docs/attach.md). Children it\n"
           "                       forks meanwhile are recorded too (those it starts with\n"
           "                       exec are not). Blocks it allocated before are unseen;\n"
           "                       their frees are counted apart. Refused, nothing\n"
           "                       recorded, exit status 1: no such process, a zombie, a\n"
           "                       static program, another user's process, ptrace not\n"
           "                       permitted (Yama, CAP_SYS_PTRACE)\n"
           "  --duration SECS      with --pid: stop recording after SECS seconds (0.5: half a\n"
           "                       second)\n"
           CLI_NO_SYMBOLS_HELP "\n"
           "Buffers. The default, %u buffers of %u KB per CPU (16 MB a CPU, here %u\n"
           "buffers), is many small buffers because each thread that allocates holds\n"
           "one while it fills it: a pool of 100 threads allocating in bursts lost\n"
           "37%% of its events with 64 buffers of 128 KB and none with 512 of 16 KB,\n"
           "at the same overhead (docs/heap-tracing.md). Past seven eighths of the\n"
           "buffers, further threads share the buffer of the CPU they run on (glibc\n"
           "2.35+, x86-64). Per CPU, because the pool must hold what the program\n"
           "writes while the recorder waits for a CPU, and a program writes as fast\n"
           "as it has CPUs: 1000 threads on 2 CPUs lost nothing in 79 runs of 80\n"
           "with an unprivileged recorder (docs/design.md). 'ltr start heap' takes 16384\n"
           "of 64 KB instead: a flight recorder's reach back in time is its pool (see\n"
           "'ltr start --help').\n\n"
           "exit status: CMD's exit status (127 when it could not be started); 1 when\n"
           "ltr could not start the recording or write the trace, or --pid could not be\n"
           "attached; 2 bad usage. With --pid: 0 once the trace is written.\n",
           usage, LTR_BUFFER_KB_MIN, LTR_BUFFER_KB_MAX, LTR_HEAP_BUFFER_KB_DEFAULT, LTR_BUFFERS_MIN,
           LTR_BUFFERS_MAX, ltr_heap_default_buffers(), LTR_HEAP_BUFFERS_PER_CPU, LTR_HEAP_BUFFERS_MOST,
           LTR_HEAP_BUFFERS_PER_CPU, LTR_HEAP_BUFFER_KB_DEFAULT, ltr_heap_default_buffers());
}

typedef struct record_opts {
    const char *output;
    int mode;
    uint32_t buffer_kb, buffers;
    int depth;
    int force;
    uint32_t pid;         /* --pid: a running process instead of CMD */
    uint64_t duration_ns; /* --duration */
    int no_symbols;       /* --no-symbols */
    int buffers_given;    /* --buffers: the user's count, warned of when too few */
} record_opts;

/* Parses the options; returns the index of CMD in argv, or -exit status. */
static int parse(int argc, char **argv, record_opts *o)
{
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'},      {"filemode", no_argument, 0, 'f'},
        {"memory", no_argument, 0, 'm'},            {"buffer-size", required_argument, 0, 's'},
        {"buffers", required_argument, 0, 'b'},     {"depth", required_argument, 0, 'd'},
        {"force", no_argument, 0, 'F'},             {"help", no_argument, 0, 'h'},
        {"pid", required_argument, 0, 'P'},         {"duration", required_argument, 0, 'D'},
        {"no-symbols", no_argument, 0, 'S'},        {0, 0, 0, 0}};
    uint64_t v;
    const char *buffers = NULL;
    int c;
    optind = 1;
    /* -p as heaptrack's: its users type it ("record: invalid option -- 'p'") */
    while ((c = getopt_long(argc, argv, "+o:p:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': o->output = optarg; break;
        case 'f': o->mode = LTR_MODE_FILE; break;
        case 'F': o->force = 1; break;
        case 'm': o->mode = LTR_MODE_MEMORY; break;
        case 's':
            if (cli_parse_u64("record", "--buffer-size (KB)", optarg, LTR_BUFFER_KB_MIN, LTR_BUFFER_KB_MAX, &v))
                return -2;
            o->buffer_kb = (uint32_t)v;
            break;
        case 'b': buffers = optarg; break; /* N% needs the buffer size: parsed below */
        case 'd':
            if (cli_parse_u64("record", "--depth", optarg, 0, 256, &v))
                return -2;
            o->depth = (int)v;
            break;
        case 'p':
            if (!strcmp(optarg, "id")) { /* WPR's -pid, read as -p id: "'id' is not valid" */
                cli_fail("record", "-pid is read as -p id: give 'ltr record --pid PID' (or -p PID)");
                return -2;
            }
            /* fall through */
        case 'P':
            if (cli_parse_u64("record", "--pid", optarg, 1, 4194304, &v))
                return -2;
            o->pid = (uint32_t)v;
            break;
        case 'D':
            if (cli_parse_seconds("record", "--duration", optarg, 0.001, 365.0 * 86400, &v))
                return -2;
            o->duration_ns = v * 1000000ull;
            break;
        case 'S': o->no_symbols = 1; break;
        case 'h': help(); return 0;
        default: return -cli_usage_error("record", usage);
        }
    }
    if (buffers && cli_parse_buffers("record", buffers, o->buffer_kb, &o->buffers))
        return -2;
    o->buffers_given = buffers != NULL;
    if (o->pid && optind < argc) {
        cli_fail("record", "--pid records a running process: give no command as well");
        return -2;
    }
    if (o->duration_ns && !o->pid) {
        cli_fail("record", "--duration is for --pid: a command is recorded until it exits");
        return -2;
    }
    if (!o->pid && optind >= argc) {
        cli_fail("record", "no command given: ltr record [OPTIONS] -- CMD [ARGS...], or --pid PID");
        return -2;
    }
    return optind;
}

/* Why a process could not join the session: the recorder refused its attach
 * (its getpid() failed: it claimed pid -1, refused as not its process's), or
 * its agent never reached the recorder. Both were said as the second. */
static const char *unjoined_why(cli_stop_counts c)
{
    if (c.pidless)
        return "the recorder refused its attach, as it claimed pid -1: its getpid() failed (a seccomp filter "
               "that denies getpid, as systemd's SystemCallFilter= can), so it could not say which process it is";
    if (c.refused)
        return "the recorder refused its attach, as it claimed a pid not its own (the recorder's log names it)";
    return "its heap agent never reached the recorder (a seccomp filter or sandbox that denies it Unix sockets, "
           "as systemd's RestrictAddressFamilies= without AF_UNIX or SystemCallFilter= do, or no file "
           "descriptor left)";
}

/* The trace, and what a user must know before reading it: events lost, or
 * none at all (the agent only sees the allocation functions of shared libraries). */
static void report(const char *trace, cli_stop_counts c, const record_opts *o)
{
    char filtered[400];
    fprintf(stderr, "ltr record: trace written to %s", trace);
    if (c.known)
        fprintf(stderr, " (%llu heap events)", c.kept);
    fprintf(stderr, "\n");
    cli_name_leftovers("record", trace); /* a record whose recorder was killed here left them */
    bool none = c.known && !c.recorded && !c.lost; /* no event seen at all */
    if (c.overwritten)
        cli_warn("record", "%llu older heap events were overwritten in memory mode and are not in the trace "
                 "(it keeps the newest %llu); record without --memory to keep them all",
                 c.overwritten, c.kept);
    if (c.unattached)
        cli_warn("record", "%llu of %llu heap events were lost because their process could not join the "
                 "session: %s; more buffers would not help", c.unattached, c.emitted, unjoined_why(c));
    if (c.unwritten) /* not for want of buffers: a stop with them fails, saying the write's error */
        cli_warn("record", "%llu of %llu heap events could not be written to the trace (a write to it failed)",
                 c.unwritten, c.emitted);
    if (cli_stop_counts_unbuffered(&c))
        cli_warn("record", "%llu of %llu heap events were lost: no buffer was free while the program "
                 "allocated faster than they were written; record again with more or larger buffers "
                 "(now --buffers %u --buffer-size %u)", cli_stop_counts_unbuffered(&c), c.emitted, o->buffers,
                 o->buffer_kb);
    else if (none && o->pid && ltr_seccomp_said((pid_t)o->pid, filtered, sizeof filtered))
        cli_warn("record", "no heap events were recorded from pid %u: %s; or it made no allocation while it was "
                 "recorded", o->pid, filtered);
    else if (none && o->pid) /* attached: an idle service is the likeliest cause */
        cli_warn("record", "no heap events were recorded: pid %u made no allocation through the heap agent's "
                 "hooks while it was recorded (idle, blocked, or allocating through an allocator of its own or "
                 "a pointer to malloc it took before the attach, as Python's ctypes keeps those it looked up, "
                 "docs/heap-tracing.md \"Attaching late\")",
                 o->pid);
    else if (none)
        /* not "never called": libraries' constructors that run before the
         * agent's allocate unseen (libstdc++'s pool in every C++ program) */
        cli_warn("record", "no heap events were recorded: the heap agent saw no call of the shared C library's "
                 "malloc family or C++'s operator new (a statically linked program, Go without cgo, or an "
                 "allocator linked into the program; or it allocated only in libraries' constructors before "
                 "the agent's own started, as libstdc++ does at the start of every C++ program)");
}

/* How long a record whose stop found no session waits for its recorder's
 * note (a stop by another command at the same moment): the recorder is
 * finishing that stop, and leaves the note before it answers it. */
#define NOTE_WAIT_MS 10000

/* Another command stopped or cancelled the session (the recorder's note,
 * waited for up to wait_ms): said, with where the trace went. 0 if the trace
 * was written, 1 if not, -1 when there is no note. */
static int another_stopped(int note_fd, int wait_ms)
{
    char note[4800];
    if (note_fd < 0 || !ltr_recorder_note(note_fd, wait_ms, note, sizeof note))
        return -1;
    note[strcspn(note, "\n")] = 0;
    fprintf(stderr, "ltr record: %s\n", note + (note[0] && note[1] == ' ' ? 2 : 0));
    return note[0] == '0' ? 0 : 1;
}

/* Stops the session into trace; reports as for a command. Returns 0 or 1. */
static int stop_into(const record_opts *o, const ltr_session_config *cfg, const char *trace, int note_fd)
{
    int theirs = another_stopped(note_fd, 0);
    if (theirs >= 0)
        return theirs;
    ltr_kvlist stopped = {0};
    ltr_error serr = {0};
    int stop_rc = ltr_client_op(cfg->name, "stop", trace, NULL, o->force, &stopped, &serr) ? 1 : 0;
    if (stop_rc)
        cli_fail("record", "%s", serr.msg);
    /* unanswered (a recorder stopped by SIGSTOP or hung): it writes the
     * trace to its FILE by itself once it runs again and finds record gone,
     * and no note comes meanwhile (record waited 10 s for one, then said
     * 'ltr stop --instance' writes it, which then found no session) */
    bool unanswered = stop_rc && serr.code == ETIMEDOUT;
    static ltr_session_status still;
    ltr_error quiet;
    /* a stop that could not begin keeps the recording (no note comes: record
     * waited 10 s for one after a full disk); one that failed while
     * finishing ended the session, and its error was said already */
    bool running = stop_rc && !unanswered && ltr_client_status(cfg->name, &still, &quiet) == 0;
    if (stop_rc && !unanswered && !running && (theirs = another_stopped(note_fd, NOTE_WAIT_MS)) >= 0) {
        ltr_kvlist_free(&stopped);
        return theirs;
    }
    if (unanswered)
        fprintf(stderr, "ltr record: once its recorder answers again, it writes the trace to %s by itself, "
                "ltr record having ended; 'ltr cancel --instance %s' drops it instead\n", trace, cfg->name);
    else if (running)
        fprintf(stderr, "ltr record: its session is '%s': 'ltr stop --instance %s FILE' writes it, "
                "'ltr cancel --instance %s' drops it\n", cfg->name, cfg->name, cfg->name);
    cli_stop_counts counts = {0};
    if (!stop_rc)
        counts = cli_stop_counts_read(&stopped);
    if (!stop_rc && !counts.known)
        cli_warn("record", "its events could not be counted: %s", counts.why.msg);
    if (!stop_rc)
        report(trace, counts, o);
    if (!stop_rc && !o->no_symbols)
        cli_add_symbols("record", trace, NULL, 0);
    else if (!o->no_symbols)
        cli_name_written("record", &stopped);
    char log[4200];
    if (ltr_client_reply_log(&stopped, log, sizeof log)) /* else it was removed: nothing went wrong */
        cli_warn("record", "the recorder reported problems; its log is kept at %s", log);
    ltr_kvlist_free(&stopped);
    return stop_rc ? 1 : 0;
}

/* ltr record --pid: attach, wait for Ctrl-C, the duration or the exit, stop. */
static int record_pid(const record_opts *o, const ltr_session_config *cfg, const char *agent,
                      const char *rundir, const char *trace, int note_fd)
{
    ltr_error err;
    ltr_inject_report rep;
    int rc = ltr_attach_agent((pid_t)o->pid, agent, rundir, LTR_INJECT_TIMEOUT_MS, &rep, &err);
    if (rc < 0) {
        cli_fail("record", "--pid %u: %s; nothing was recorded", o->pid, err.msg);
        cli_session_request("record", cfg->name, "cancel", NULL, NULL, NULL);
        return 1;
    }
    if (rc == LTR_ATTACH_INJECTED)
        fprintf(stderr, "ltr record: pid %u: heap agent loaded (thread %d stopped %.1f ms); recording until "
                "%s\n", o->pid, (int)rep.tid, (double)rep.call_ns / 1e6, o->duration_ns ? "the duration ends, "
                "Ctrl-C or its exit" : "Ctrl-C or its exit");
    else
        fprintf(stderr, "ltr record: pid %u: heap agent already there, enabled; recording until %s\n", o->pid,
                o->duration_ns ? "the duration ends, Ctrl-C or its exit" : "Ctrl-C or its exit");
    ltr_wait_end why = ltr_attach_wait((pid_t)o->pid, o->duration_ns);
    if (why == LTR_WAIT_EXITED)
        fprintf(stderr, "ltr record: pid %u exited\n", o->pid);
    return stop_into(o, cfg, trace, note_fd);
}

int cmd_record(int argc, char **argv)
{
    record_opts o = {.output = "ltr-record.ltr", .mode = LTR_MODE_FILE,
                     .buffer_kb = LTR_HEAP_BUFFER_KB_DEFAULT, .buffers = ltr_heap_default_buffers(), .depth = -1};
    int first = parse(argc, argv, &o);
    if (first <= 0)
        return -first;
    char rundir[4096];
    ltr_error err = {0};
    if (o.pid) { /* refused before anything starts */
        if (ltr_runtime_dir(rundir, sizeof rundir, &err))
            return cli_fail("record", "%s", err.msg);
        if (ltr_attach_check((pid_t)o.pid, rundir, &err) < 0)
            return cli_fail("record", "--pid %u: %s; nothing was recorded", o.pid, err.msg);
    }
    char trace[4096], agent[4096];
    if (cli_absolute_path("record", o.output, trace, sizeof trace))
        return 2;
    if (cli_refuse_existing("record", trace, o.force) || cli_refuse_no_directory("record", trace))
        return 1;
    static ltr_session_config cfg;
    ltr_record_setup setup = {.mode = o.mode, .buffer_kb = o.buffer_kb, .buffers = o.buffers, .pid = o.pid,
                              .trace = trace, .force = o.force};
    if (ltr_record_session_config(&cfg, &setup, &err))
        return cli_fail("record", "%s", err.msg), 2;
    if (ltr_heap_agent_path(agent, sizeof agent, &err))
        return cli_fail("record", "%s", err.msg);
    int note_fd;
    if (ltr_recorder_launch_controlled(&cfg, &note_fd, &err))
        return cli_fail("record", "%s", err.msg);
    if (o.buffers_given)
        cli_warn_few_buffers("record", o.buffers);
    if (o.pid)
        return record_pid(&o, &cfg, agent, rundir, trace, note_fd);
    ltr_heap_launch l = {.argv = argv + first, .agent = agent, .stack_depth = o.depth,
                         .wait_descendants = true, .session = cfg.name};
    int status = 0, sig = 0;
    l.killed_by = &sig;
    if (ltr_heap_run(&l, &status, &err) != 0 || err.code) {
        /* CMD never ran: there is nothing to write */
        cli_fail("record", "%s", err.msg);
        cli_session_request("record", cfg.name, "cancel", NULL, NULL, NULL);
        return status ? status : 1;
    }
    ltr_heap_report_signal("record", argv[first], sig);
    int stop_rc = stop_into(&o, &cfg, trace, note_fd);
    return stop_rc && !status ? 1 : status;
}
