/*
 * analyze/embed.c — symbols written into a trace (`ltr symbolize`, and the
 * end of `ltr record`, `ltr stop`, `ltr save`, `ltr watch`): every frame
 * address of the trace's stack records and frame nodes is resolved with
 * this machine's files, and the names found go after END as SYMBOLS chunks
 * (format/symchunk.h). Only the metadata is read, not an event: an
 * analysis of the whole trace (its first version) took 75 ms a megabyte of
 * trace, a minute a gigabyte at the end of a recording. An analysis then names those frames without the
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
#include "format/blocks.h"
#include "prim/prim.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
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
    int rc = ltr_symchunk_add(e->b, &md, offset, f, n - skip);
    if (rc < 0 && rc != -E2BIG) /* past the bounds a trace keeps, the rest is left to the files */
        e->failed = 1;
}

/* The walk of the trace's metadata: every frame address of every stack
 * record and frame node, resolved as it is met, with the MODULE records read
 * before it (a module is recorded before the first stack that uses it). */
typedef struct walk {
    ltr_trace *t;
    ltr_symbolizer *sym;
    size_t modules; /* MODULE records handed to sym */
    uint64_t met;
    an_progress progress;
    int failed;
} walk;

static void met(void *ctx, uint32_t pid, uint64_t ip)
{
    walk *w = ctx;
    ltr_sym_frame f[AN_MAX_FRAMES];
    if (w->failed || an_load_modules(w->t, w->sym, 0, 0, &w->modules) < 0) {
        w->failed = 1;
        return;
    }
    /* the modules loaded now: those of this stack's time (a later unload is not read yet) */
    ltr_symbolize(w->sym, pid, UINT64_MAX - 1, ip, f, AN_MAX_FRAMES);
    if (!(++w->met & 0xffff))
        an_progress_update(&w->progress, an_trace_position(w->t));
}

static int append_now(const char *path, const ltr_append_point *at, ltr_bytes *parts, size_t nparts,
                      uint64_t *added, ltr_error *err);

/* Writes the payloads after the trace's last chunk, or nothing: what was
 * written before a failure is cut off again, through the same descriptor. */
static int append(const char *path, const ltr_append_point *at, ltr_bytes *parts, size_t nparts,
                  uint64_t *added, ltr_error *err)
{
    /* Ctrl-C now would leave a chunk cut short after END, a trace read as
     * damaged: the signals wait the milliseconds the writing takes. */
    sigset_t stop, old;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, &old);
    int rc = append_now(path, at, parts, nparts, added, err);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

static int append_now(const char *path, const ltr_append_point *at, ltr_bytes *parts, size_t nparts,
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

/* Whether the trace saw process pid end: its pid may be another's by now. */
static int process_ended(void *ctx, uint32_t pid)
{
    const ltr_trace *t = ctx;
    for (size_t i = 0, n = ltr_trace_process_end_count(t); i < n; i++) {
        const ltr_process_end *e = ltr_trace_process_end_at(t, i);
        if (e->pid == pid && !e->exec_image)
            return 1;
    }
    return 0;
}

/* Adds a perf map's note to the notes, a line each. */
static void add_note(void *ctx, const char *note)
{
    char **notes = ctx, *v = NULL;
    if (asprintf(&v, "%s%s\n", *notes ? *notes : "", note) < 0)
        return;
    free(*notes);
    *notes = v;
}

int ltr_analysis_embed_symbols(const char *path, const char *debug_path, unsigned flags, ltr_embed_result *res,
                               ltr_error *err)
{
    memset(res, 0, sizeof *res);
    struct stat st = {0}; /* what would stop the append, said before the walk */
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        return ltr_fail(err, ELOOP, "%s: no symbols were added: it is a symlink (give the file it names)", path);
    /* The names come from the files this user can read (root: any): written
     * into a trace another user owns, they would tell that user what their
     * own reading could not (a trace that names a module at a path of
     * theirs, a symlink by then, to a binary only root may read). */
    if (stat(path, &st) == 0 && st.st_uid != geteuid())
        return ltr_fail(err, EPERM, "%s: no symbols were added: it is another user's (uid %u), and the names "
                        "of files that only this user may read would go into it; run 'ltr symbolize' as its owner",
                        path, (unsigned)st.st_uid);
    struct stat checked = st; /* the file whose owner was checked: the one read and appended to (below) */
    if (access(path, W_OK) != 0 && errno != ENOENT)
        return ltr_fail(err, errno, "%s: no symbols were added: it cannot be written here (%s)", path,
                        strerror(errno));
    if (stat(path, &st) == 0 && !(st.st_mode & 0222)) /* root may write it: read-only means leave it */
        return ltr_fail(err, EACCES, "%s: no symbols were added: it is read-only (mode %03o)", path,
                        (unsigned)(st.st_mode & 0777));
    walk w = {0};
    int rc = ltr_trace_open(path, &w.t, err);
    if (rc < 0)
        return rc;
    if (!(w.sym = ltr_symbolizer_new(debug_path))) {
        ltr_trace_close(w.t);
        return ltr_fail(err, ENOMEM, "%s: no symbols were added: out of memory", path);
    }
    ltr_symbolizer_use_perf_maps(w.sym, (flags & LTR_EMBED_PERF_MAPS) != 0);
    res->known = an_known_symbols(w.t, w.sym); /* a trace named before: only what it lacks is added */
    ltr_trace_metadata_only(w.t, 1); /* the stacks are in the metadata: no event is decoded */
    ltr_trace_watch_addresses(w.t, met, &w);
    ltr_trace_summary sum;
    ltr_trace_summarize(w.t, &sum);
    an_progress_begin(&w.progress, (flags & LTR_EMBED_PROGRESS) != 0, sum.file_size);
    const ltr_event *ev;
    while ((rc = ltr_trace_next(w.t, &ev, err)) > 0)
        ;
    an_progress_end(&w.progress);
    res->met = w.met;
    ltr_append_point at;
    const char *why = NULL;
    if (rc == 0 && ltr_trace_append_point(w.t, &at, &why) < 0)
        rc = ltr_fail(err, EINVAL, "%s: no symbols were added: %s", path, why);
    /* another file put at the path between the owner's check and the open
     * (a user who may write its directory: root would have written names
     * only root may read into that user's file; a review, by reading) */
    else if (rc == 0 && (at.dev != (uint64_t)checked.st_dev || at.ino != (uint64_t)checked.st_ino))
        rc = ltr_fail(err, EAGAIN, "%s: no symbols were added: another file was put at its path while it was "
                      "read", path);
    embed_ctx e = {rc == 0 && !w.failed ? ltr_symchunk_builder_new() : NULL, 0};
    if (rc == 0 && !w.failed)
        ltr_symbolizer_read_perf_maps(w.sym, process_ended, w.t);
    if (e.b)
        ltr_symbolizer_each(w.sym, add_entry, &e);
    ltr_symbolizer_perf_map_notes(w.sym, add_note, &res->notes);
    ltr_bytes *parts = NULL;
    size_t nparts = 0;
    if (rc == 0 && (!e.b || e.failed || ltr_symchunk_build(e.b, &parts, &nparts) < 0))
        rc = ltr_fail(err, ENOMEM, "%s: no symbols were added: out of memory", path);
    else if (rc == 0 && (res->entries = ltr_symchunk_entries(e.b)) > 0)
        rc = append(path, &at, parts, nparts, &res->bytes, err);
    res->chunks = rc == 0 ? nparts : 0;
    for (size_t i = 0; i < nparts; i++)
        ltr_bytes_free(&parts[i]);
    free(parts);
    ltr_symchunk_builder_free(e.b);
    ltr_symbolizer_free(w.sym);
    ltr_trace_close(w.t);
    return rc;
}
