/*
 * analyze/embed.c — symbols written into a trace (`ltr symbolize`, and the
 * end of `ltr record`, `ltr stop` and `ltr save`): every stack the trace
 * holds is resolved with this machine's files, as an analysis of the whole
 * trace would resolve it, and the names found go after END as SYMBOLS chunks
 * (format/symchunk.h). An analysis then names those frames without the
 * binaries or their debug files (a trace recorded on a server, read on a
 * laptop), and without reading their DWARF again: inflating libc's alone
 * was most of the analysis of a small trace (docs/benchmarks.md).
 *
 * All or nothing: a chunk that cannot be written (a full disk) takes the
 * ones before it off again, and the trace is as it was.
 */
#include "analyze/internal.h"
#include "format/symchunk.h"
#include "format/writer.h"
#include "prim/prim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct embed_ctx {
    ltr_symchunk_builder *b;
    int failed;
} embed_ctx;

static void add_entry(void *ctx, const char *path, const uint8_t *id, size_t idlen, int bare, uint64_t offset,
                      const ltr_sym_frame *frames, size_t n)
{
    embed_ctx *e = ctx;
    ltr_symframe f[LTR_SYMCHUNK_MAX_FRAMES];
    size_t skip = n > LTR_SYMCHUNK_MAX_FRAMES ? n - LTR_SYMCHUNK_MAX_FRAMES : 0; /* innermost cut, as the symbolizer cuts */
    for (size_t i = skip; i < n; i++)
        f[i - skip] = (ltr_symframe){frames[i].function, frames[i].file, frames[i].line};
    ltr_symmodule md = {path, idlen ? id : NULL, idlen, bare ? LTR_SYMMODULE_BARE : 0};
    if (ltr_symchunk_add(e->b, &md, offset, f, n - skip) < 0)
        e->failed = 1;
}

/* Every stack the trace holds goes through the symbolizer: the heap model's,
 * the snapshots' and the mappings'. */
static void resolve_all(ltr_analysis *a)
{
    static ltr_sym_frame frames[AN_MAX_FRAMES];
    an_symbolize_reported(a, LTR_REPORT_FOLDED, 0);
    if (!a->sym)
        return;
    for (size_t i = 0; i < a->nsnaps; i++)
        for (size_t k = 0; k < a->snaps[i].nstacks; k++) {
            an_stack s = {.pid = a->snaps[i].pid, .stack_id = a->snaps[i].stacks[k].stack,
                          .first_ts = a->snaps[i].ts};
            an_frames(a, &s, frames, AN_MAX_FRAMES);
        }
    size_t n;
    an_vm_stack *v = an_vmem_ranked(&a->model.vm, 1, 0, &n);
    for (size_t i = 0; v && i < n; i++) {
        an_stack s = {.pid = v[i].pid, .stack_id = v[i].stack, .first_ts = v[i].first_ts};
        an_frames(a, &s, frames, AN_MAX_FRAMES);
    }
    free(v);
}

/* Writes the payloads after the trace's last chunk, or nothing: what was
 * written before a failure is cut off again, through the same descriptor. */
static int append(const char *path, const ltr_append_point *at, ltr_bytes *parts, size_t nparts,
                  uint64_t *added, ltr_error *err)
{
    ltr_writer *w;
    int rc = ltr_writer_open_append(&w, path, at->size, at->next_seq, at->dev, at->ino, err);
    if (rc < 0)
        return rc;
    for (size_t i = 0; rc == 0 && i < nparts; i++)
        rc = ltr_writer_chunk(w, LTR_CHUNK_SYMBOLS, parts[i].data, parts[i].len, err);
    if (rc == 0)
        rc = ltr_writer_flush(w, 1, err);
    if (rc == 0)
        *added = ltr_writer_size(w) - at->size;
    else
        (void)ltr_writer_cut(w, at->size, NULL);
    ltr_writer_close(w);
    return rc;
}

int ltr_analysis_embed_symbols(const char *path, const char *debug_path, int progress, ltr_embed_result *res,
                               ltr_error *err)
{
    memset(res, 0, sizeof *res);
    struct stat st; /* what would stop the append, said before the analysis */
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        return ltr_fail(err, ELOOP, "%s: no symbols were added: it is a symlink (give the file it names)", path);
    if (access(path, W_OK) != 0 && errno != ENOENT)
        return ltr_fail(err, errno, "%s: no symbols were added: it cannot be written here (%s)", path,
                        strerror(errno));
    ltr_analyze_opts o = {.debug_path = debug_path, .local_symbols = 1, .progress = progress};
    ltr_analysis *a;
    int rc = ltr_analysis_run(path, &o, &a, err);
    if (rc < 0)
        return rc;
    res->analysis = a;
    ltr_append_point at;
    const char *why;
    if (ltr_trace_append_point(a->trace, &at, &why) < 0)
        return ltr_fail(err, EINVAL, "%s: no symbols were added: %s", path, why);
    resolve_all(a);
    embed_ctx e = {ltr_symchunk_builder_new(), 0};
    if (e.b && a->sym)
        ltr_symbolizer_each(a->sym, add_entry, &e);
    ltr_bytes *parts = NULL;
    size_t nparts = 0;
    if (!e.b || !a->sym || e.failed || ltr_symchunk_build(e.b, &parts, &nparts) < 0)
        rc = ltr_fail(err, ENOMEM, "%s: no symbols were added: out of memory", path);
    else if ((res->entries = ltr_symchunk_entries(e.b)) > 0)
        rc = append(path, &at, parts, nparts, &res->bytes, err);
    res->chunks = rc == 0 ? nparts : 0;
    for (size_t i = 0; i < nparts; i++)
        ltr_bytes_free(&parts[i]);
    free(parts);
    ltr_symchunk_builder_free(e.b);
    return rc; /* the analysis's warnings (modules without symbols here) are the caller's to show */
}
