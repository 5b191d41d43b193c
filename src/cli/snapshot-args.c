/*
 * cli/snapshot-args.c — argument helpers of the heap snapshot commands.
 */
#include "cli/snapshot-args.h"
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

int cli_snapshot_kind(const char *cmd, const char *text, const char *usage)
{
    if (text && !strcmp(text, "heap"))
        return 0;
    fprintf(stderr, "ltr %s: the kind of snapshot is 'heap' (the only one), not '%s'\n", cmd,
            text ? text : "");
    return cli_usage_error(cmd, usage);
}

int cli_snapshot_missing(const char *cmd, int n, const char *usage)
{
    const char *w = usage;
    for (int i = 0; i < n + 2 && w; i++) /* past "ltr CMD" and the operands before */
        if ((w = strchr(w, ' ')))
            w++;
    int len = w ? (int)strcspn(w, " .[") : 0;
    if (!n)
        fprintf(stderr, "ltr %s: no kind of snapshot given ('heap', the only one)\n", cmd);
    else
        fprintf(stderr, "ltr %s: no %.*s given\n", cmd, len, w ? w : "");
    return cli_usage_error(cmd, usage);
}

int cli_snapshot_pid(const char *cmd, const char *text, uint32_t *pid)
{
    uint64_t v;
    if (cli_parse_u64(cmd, "PID", text, 1, 0x7fffffff, &v))
        return -1;
    *pid = (uint32_t)v;
    return 0;
}

int cli_snapshot_help(int argc, char **argv, const char *usage, const char *text)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: %s\n\n%s", usage, text);
            return 0;
        }
    return -1;
}
