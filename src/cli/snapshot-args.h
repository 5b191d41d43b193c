/*
 * cli/snapshot-args.h — what the four heap snapshot commands share in their
 * arguments: the kind ("heap", WPR's word, the only one) and process ids.
 */
#ifndef LTR_CLI_SNAPSHOT_ARGS_H
#define LTR_CLI_SNAPSHOT_ARGS_H

#include <stdint.h>

/* 0 if text is "heap"; else prints why and returns 2 (bad usage). */
int cli_snapshot_kind(const char *cmd, const char *text, const char *usage);
/* Parses a process id; -1 after printing why. */
int cli_snapshot_pid(const char *cmd, const char *text, uint32_t *pid);
/* The operand number n (0: the kind) is missing: says which, by the
 * usage's word for it, then the usage; returns 2. */
int cli_snapshot_missing(const char *cmd, int n, const char *usage);
/* Prints --help (usage, then text) if asked: returns 0 then, else -1. */
int cli_snapshot_help(int argc, char **argv, const char *usage, const char *text);

#endif
