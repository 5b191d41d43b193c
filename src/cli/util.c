/*
 * cli/util.c — error printing and option parsing shared by the subcommands.
 */
#include "cli/cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int cli_fail(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "ltr %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

void cli_warn(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "ltr %s: warning: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
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

int cli_usage_error(const char *cmd, const char *usage)
{
    fprintf(stderr, "usage: %s\nTry 'ltr %s --help'.\n", usage, cmd);
    return 2;
}
