/*
 * cli/cli.h — what the subcommand files share: the command table entry,
 * error printing in one style, and small option-parsing helpers. The command
 * layer parses and prints; the work is done in the parts below it.
 */
#ifndef LTR_CLI_H
#define LTR_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is "ltr NAME", getopt's prefix */
    const char *summary;
    const char *group; /* the heading `ltr --help` lists it under */
} cli_command;

/* Prints "ltr NAME: message" to stderr. Returns 1 (the usual exit status). */
int cli_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "ltr NAME: warning: message" to stderr. */
void cli_warn(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Warns of a trace's events not read because their LAYOUT records were lost
 * with the metadata while recording (ltr_trace_summary.events_layout_lost),
 * if there are any. */
struct ltr_trace_summary;
void cli_warn_layout_lost(const char *cmd, const struct ltr_trace_summary *s);
/* fflush(stdout) before what goes to stderr, the errno of a failure kept
 * for the exit's check (ltr.c), which a later call would have replaced:
 * 'ltr status >/dev/full' said "Resource temporarily unavailable". */
void cli_flush_stdout(void);
/* After getopt's '?' or ':': the argument it was about. Inside a group of
 * short options (`-trend`, 't' unknown) getopt has not moved past it, and
 * argv[optind - 1] was the one before ("unknown option: 'analyze'"). */
const char *cli_bad_option(int argc, char **argv);
/* The errno of the first failed cli_flush_stdout, 0 if none failed. */
int cli_stdout_errno(void);
/* A failed write of stdout said with its cause ("ltr CMD: writing the
 * output failed: No space left on device"; info, dump and analyze said no
 * cause): the errno of the failed write, saved or seen again by flushing
 * what is still buffered. Returns 1. */
int cli_fail_output(const char *cmd);
/* "ltr CMD: " and the message, as is (a profile's diagnostic says its own severity). */
void cli_say(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parses an unsigned decimal integer in [min, max]; on failure prints a message
 * naming the option and the allowed range, and returns -1. */
int cli_parse_u64(const char *cmd, const char *option, const char *text, uint64_t min,
                  uint64_t max, uint64_t *out);
/* Parses seconds, with a fraction (0.5), in [lo, hi] into milliseconds
 * (rounded); on failure prints a message naming the option and the range
 * ("give seconds from lo to hi, e.g. 0.5"), and returns -1. */
int cli_parse_seconds(const char *cmd, const char *option, const char *text, double lo, double hi, uint64_t *ms);
/* Parses `--buffers N|N%`: a count in LTR_BUFFERS_MIN..LTR_BUFFERS_MAX, or a
 * percentage of RAM (1..50) turned into a count of buffer_kb buffers. On
 * failure prints a message naming the option and what is allowed, returns -1. */
int cli_parse_buffers(const char *cmd, const char *text, uint32_t buffer_kb, uint32_t *out);
/* Refuses (message naming path and --force, exit status 1) to write a path that
 * anything already has, unless force; 0 to go on. Whatever writes the file
 * refuses again, atomically: this check says it before any work is done. */
int cli_refuse_existing(const char *cmd, const char *path, int force);
/* Refuses (exit status 1, the directory and why named) a trace path whose
 * directory does not exist, before anything runs: record, start -o and
 * merge create a temporary beside it and said its name, "creating a trace
 * file /no/dir/x.ltr.XXXXXX.part: No such file or directory". 0 to go on. */
int cli_refuse_no_directory(const char *cmd, const char *path);
/* What write puts into a FILE goes to path, made new (never through a
 * symlink, never over a file without force: prim's ltr_write_new_file), or
 * to standard output for '-', as every -o of the commands that write a
 * report or a profile takes it. 0, or 1 said (cmd: ...). */
int cli_write_output(const char *cmd, const char *path, int force, int (*write)(FILE *f, void *arg), void *arg);
/* Warns of each unfinished trace beside path (path.XXXXXX.part) that a save,
 * stop or record into path left when it was killed while writing: no
 * message named them, and they stayed (prim's ltr_leftover_temps). */
void cli_name_leftovers(const char *cmd, const char *path);
/* A wall-clock time in ns as local "YYYY-MM-DD HH:MM:SS", "?" if none. */
void cli_local_time(uint64_t wall_ns, char *out, size_t size);
/* Prints the usage text and returns the exit status for a usage error (2). */
int cli_usage_error(const char *cmd, const char *usage);
/* Parses `TRACE [--json]` and --help. Returns -1 to go on, with *path set, or
 * the exit status to return (0 after --help, 2 on a usage error). */
int cli_trace_args(const char *cmd, int argc, char **argv, const char *usage, void (*help)(void),
                   const char **path, int *json);
/* Parses `[--instance NAME] [--help] ARGS` with nmin..nmax ARGS. Returns -1 to
 * go on (*first: index of the first ARG), or the exit status to return. The
 * help is the usage line followed by help_text. */
int cli_session_args(const char *cmd, int argc, char **argv, const char *usage,
                     const char *help_text, const char **instance, int *first, int nmin, int nmax);
/* The same, also taking --force (*force = 1) and --no-symbols (*no_symbols
 * = 1), for the commands that write a trace. */
int cli_session_file_args(const char *cmd, int argc, char **argv, const char *usage,
                          const char *help_text, const char **instance, int *first, int nmin, int nmax,
                          int *force, int *no_symbols);
/* Adds the names of the trace's frames to it (ltr_analysis_embed_symbols)
 * and says so on stderr, or why not: an error when asked (ltr symbolize),
 * else a warning, the trace being whole either way. Returns 0 when they
 * were added (or nothing was named), 1 if not. */
int cli_add_symbols(const char *cmd, const char *path, const char *debug_path, int asked);
/* A stop that failed yet wrote its trace (complete, lacking events its disk
 * had no room for: the reply's "written"): names added to it as to any
 * (cli_add_symbols, which says why not: the disk still full). Nothing when
 * the reply names no such trace. */
struct ltr_kvlist;
void cli_name_written(const char *cmd, const struct ltr_kvlist *failed_stop);
/* The help text of --instance, for the commands that name a session. */
#define CLI_INSTANCE_HELP \
    "  --instance NAME      the session (default: ltr; WPR's -instancename)\n"
/* The help text of --no-symbols, for the commands that write a trace. */
#define CLI_NO_SYMBOLS_HELP \
    "  --no-symbols         do not add the names of the recorded frames to the trace\n" \
    "                       (by default they are: the trace then shows them where\n" \
    "                       its binaries and debug files are not; 'ltr symbolize').\n" \
    "                       Frames of JIT code are named from the map the program\n" \
    "                       writes of it, /tmp/perf-PID.map, as perf reads it: run\n" \
    "                       node --perf-basic-prof --interpreted-frames-native-stack,\n" \
    "                       python3.12 -X perf, java with perf-map-agent\n"
int cmd_symbolize(int argc, char **argv);

/* One function per subcommand, each in its own file cmd-NAME.c. */
int cmd_start(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_providers(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_save(int argc, char **argv);
int cmd_stop(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_marker(int argc, char **argv);
int cmd_flush(int argc, char **argv);
int cmd_boottrace(int argc, char **argv);
int cmd_capturestate(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_profiles(int argc, char **argv);
int cmd_heaptracingconfig(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_snapshotconfig(int argc, char **argv);
int cmd_singlesnapshot(int argc, char **argv);
int cmd_enableperiodicsnapshot(int argc, char **argv);
int cmd_disableperiodicsnapshot(int argc, char **argv);

#endif
