/*
 * cli/symbols.c — names added to a trace at the end of a recording (`ltr
 * record`, `ltr stop`, `ltr save`) and by `ltr symbolize`: the command
 * layer's side of ltr_analysis_embed_symbols (src/analyze/embed.c), which
 * does the work. What it adds, or why it added nothing, is said on stderr;
 * the trace is whole either way.
 */
#include "cli/cli.h"
#include "analyze/analyze.h"
#include "prim/prim.h"
#include "recorder/client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_add_symbols(const char *cmd, const char *path, const char *debug_path, int asked)
{
    ltr_embed_result res;
    ltr_error err = {0};
    /* at the end of a recording (not asked), the processes' perf maps are theirs */
    int rc = ltr_analysis_embed_symbols(path, debug_path, LTR_EMBED_PROGRESS | (asked ? 0 : LTR_EMBED_PERF_MAPS),
                                        &res, &err);
    for (const char *l = rc < 0 ? NULL : res.notes; l && *l; l = strchr(l, '\n') + 1) /* nothing was added on failure */
        fprintf(stderr, "ltr %s: %.*s\n", cmd, (int)strcspn(l, "\n"), l);
    free(res.notes);
    if (rc < 0 && asked)
        cli_fail(cmd, "%s", err.msg);
    else if (rc < 0)
        cli_warn(cmd, "%s; the trace is whole, and its frames are named where their files are "
                 "('ltr symbolize' adds the names later)", err.msg);
    else if (!res.entries && res.known)
        fprintf(stderr, "ltr %s: nothing to add: the trace names %zu addresses already, and this machine "
                "names no other\n", cmd, res.known);
    else if (!res.entries && !res.met && asked)
        fprintf(stderr, "ltr %s: the trace holds no call stack: nothing to name\n", cmd);
    else if (!res.entries && res.met)
        fprintf(stderr, "ltr %s: no frame of the trace could be named here: no symbols added\n", cmd);
    else if (!res.entries)
        ; /* no stack at all (system events only) after a stop: nothing to say ("names of 0 ... added" was) */
    else
        fprintf(stderr, "ltr %s: names of %zu recorded addresses added to the trace (%llu KiB), for "
                "analysis without these binaries\n", cmd, res.entries,
                (unsigned long long)(res.bytes + 1023) / 1024);
    return rc < 0;
}

void cli_name_written(const char *cmd, const ltr_kvlist *failed_stop)
{
    char written[4096];
    if (ltr_kvlist_get(failed_stop, "written", written, sizeof written))
        cli_add_symbols(cmd, written, NULL, 0);
}
