/*
 * cli/analysis-args.h — what `ltr analyze` and `ltr export` share: their
 * common options (--from, --to, --pid, --format, and --top or -o), running
 * the analysis, and turning damage into exit status 3 with the damage on stderr.
 */
#ifndef LTR_CLI_ANALYSIS_ARGS_H
#define LTR_CLI_ANALYSIS_ARGS_H

#include "analyze/analyze.h"

typedef struct cli_analysis_args {
    const char *trace;
    ltr_analyze_opts opts;
    ltr_report_format format;
    unsigned top;
    const char *output; /* -o, export only */
    int force;          /* --force: replace an existing output, export only */
    int width_set;      /* --width given (else the terminal's, when stdout is one) */
} cli_analysis_args;

#define CLI_REPORT 2 /* is_export for ltr report: export's options, no --format, -o optional */

/* Parses argv; formats_allowed is a bit mask of (1 << ltr_report_format).
 * Returns -1 to go on, or the exit status (0 after --help, 2 on bad usage). */
int cli_analysis_parse(const char *cmd, int argc, char **argv, const char *usage, void (*help)(void),
                       unsigned formats_allowed, int is_export, cli_analysis_args *out);
/* Runs the analysis; NULL after printing why it failed. */
/* malloc tuned for an analysis's large, short-lived tables (analysis-args.c
 * says what it saves); before the analysis starts its threads. */
void cli_malloc_for_analysis(void);
ltr_analysis *cli_analysis_run(const char *cmd, const cli_analysis_args *a);
/* The analysis's warnings on stderr, for a format that has no place for
 * them (csv, pprof, folded...): what the figures lack is said all the same. */
void cli_analysis_warnings(const char *cmd, ltr_analysis *a);
/* The same for ltr export, but the modules without symbols in one line that
 * sends to 'ltr analyze TRACE' for them: a script exporting four formats got
 * their paragraphs four times. */
void cli_export_warnings(const char *cmd, ltr_analysis *a, const char *trace);
/* Exit status once the report is written: 3 and the damage on stderr if the trace was damaged. */
int cli_analysis_status(const char *cmd, ltr_analysis *a);

#endif
