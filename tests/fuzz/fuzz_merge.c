/*
 * tests/fuzz/fuzz_merge.c — fuzz target of `ltr merge` (format/merge.c),
 * which reads its sources' chunks and records itself rather than through
 * the reader's events: the input twice, as two traces of one boot (two
 * memfds), merged into a file of a private directory, then the merge read
 * back whole. The input's chunk CRCs are rewritten first, as fuzz_trace
 * does. session 40's attacker review ran this harness out of the tree for
 * 600 s (135 000 inputs): a source block of no whole record was written as
 * an empty block copied from NULL (UBSan), fixed in merge.c.
 */
#include "fuzz_input.h"

#include <ltr/trace.h>

#include "format/merge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The merge is a file (written beside, then renamed): a directory of its
 * own for each input, removed after it (libFuzzer ends a run without
 * atexit handlers, which left one behind each run). */
static const char *out_dir(char *dir, size_t size)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, size, "%s/ltr-fuzz-merge-XXXXXX", tmp && *tmp && strlen(tmp) < 200 ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    return dir;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = fuzz_fixed_copy(data, size);
    const char *paths[2] = {fuzz_input_path(copy, size), fuzz_second_input_path(copy, size)};
    free(copy);
    char dir[256], out[300];
    snprintf(out, sizeof out, "%s/m.ltr", out_dir(dir, sizeof dir));
    ltr_merge_report rep;
    ltr_error err;
    if (ltr_merge(paths, 2, out, true, &rep, &err) == 0) {
        ltr_trace *t;
        if (ltr_trace_open(out, &t, &err) == 0) {
            const ltr_event *ev;
            while (ltr_trace_next(t, &ev, &err) > 0)
                ;
            ltr_trace_close(t);
        }
    }
    unlink(out);
    rmdir(dir);
    return 0;
}
