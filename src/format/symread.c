/*
 * format/symread.c — a trace's SYMBOLS chunks (symchunk.h) as the reader
 * meets them, found ahead of a scan by walking the chunk headers, and the
 * point where `ltr symbolize` and the end of a recording add them. They come
 * after END, so readers that predate them (which skip chunk types they do
 * not know) read the trace as before.
 */
#include "format/reader.h"
#include "format/symchunk.h"

#include <errno.h>
#include <sys/stat.h>
#include <zstd.h>

static void count_one(void *ctx, const ltr_symmodule *m, uint64_t offset, const ltr_symframe *frames, size_t n)
{
    (void)m, (void)offset, (void)frames, (void)n;
    ++*(uint64_t *)ctx;
}

/* reader.c's dispatch: a SYMBOLS chunk met by the scan is checked and
 * counted, the entries before a bad one too (the analysis uses them). */
void ltr_symbols_chunk(ltr_trace *t, const uint8_t *p, size_t len)
{
    if (ltr_symchunk_parse(p, len, count_one, &t->symbol_entries) < 0)
        ltr_trace_chunk_damage(t, LTR_DAMAGE_BAD_RECORD, "a SYMBOLS entry does not parse");
}

uint64_t ltr_trace_symbol_entries(const ltr_trace *t) { return t->symbol_entries; }

void ltr_trace_metadata_only(ltr_trace *t, int on) { t->metadata_only = on; }

void ltr_trace_watch_addresses(ltr_trace *t, void (*fn)(void *ctx, uint32_t pid, uint64_t ip), void *ctx)
{
    t->addr_hook = fn;
    t->addr_hook_ctx = ctx;
}

long ltr_trace_walk_chunks(ltr_trace *t, uint16_t type, ltr_walk_fn fn, void *ctx)
{
    ZSTD_DCtx *d = NULL;
    ltr_fetch f = {0};
    long total = 0;
    uint64_t pos = LTR_FILE_HEADER_SIZE;
    while (pos + LTR_CHUNK_HEADER_SIZE <= t->file_size) {
        uint8_t hdr[LTR_CHUNK_HEADER_SIZE];
        ssize_t got = ltr_read_at(t->fd, hdr, sizeof hdr, pos);
        if (got < 0) {
            total = got;
            break;
        }
        ltr_chunk_header h;
        int good = got == (ssize_t)sizeof hdr && ltr_chunk_header_decode(hdr, &h) == LTR_CHUNK_OK;
        if ((!good || h.type == type) && !d && !(d = ZSTD_createDCtx())) {
            total = -ENOMEM; /* made only when a chunk is to be read: most traces walked have none */
            break;
        }
        if (!good) {
            /* damage (the scan reports it): on from the next good header, as the reader goes */
            ltr_fetch_chunk(t->fd, t->file_size, pos, d, &f);
            if (f.kind == LTR_FETCH_ERROR) {
                total = f.err;
                break;
            }
            if (f.next <= pos)
                break;
            pos = f.next;
            continue;
        }
        if (h.type == type) {
            ltr_fetch_chunk(t->fd, t->file_size, pos, d, &f);
            long n = f.kind == LTR_FETCH_OK ? fn(ctx, f.raw, f.raw_len) : 0;
            if (f.kind == LTR_FETCH_ERROR) {
                total = f.err;
                break;
            }
            if (n < 0) /* the walker's fn has what it looked for */
                break;
            total += n;
        }
        pos += LTR_CHUNK_HEADER_SIZE + h.payload_size;
    }
    ltr_fetch_free(&f);
    ZSTD_freeDCtx(d);
    return total;
}

typedef struct symbols_walk {
    ltr_symchunk_fn fn;
    void *ctx;
} symbols_walk;

static long symbols_chunk(void *ctx, const uint8_t *raw, size_t len)
{
    symbols_walk *w = ctx;
    long n = ltr_symchunk_parse(raw, len, w->fn, w->ctx);
    return n > 0 ? n : 0;
}

long ltr_trace_read_symbols(ltr_trace *t, ltr_symchunk_fn fn, void *ctx)
{
    symbols_walk w = {fn, ctx};
    return ltr_trace_walk_chunks(t, LTR_CHUNK_SYMBOLS, symbols_chunk, &w);
}

int ltr_trace_append_point(const ltr_trace *t, ltr_append_point *at, const char **why)
{
    *why = NULL;
    struct stat st;
    if (!t->sum.complete)
        *why = "it was cut short (no END chunk): its recording did not finish";
    else if (t->sum.damage > t->record_damage) /* bad records leave the chunks whole: the end is the end */
        *why = "it is damaged (ltr info lists where)";
    else if (t->pos != t->file_size)
        *why = "it was not read to its end";
    else if (fstat(t->fd, &st) != 0)
        *why = "it cannot be looked at";
    if (*why)
        return -1;
    *at = (ltr_append_point){t->file_size, t->expect_seq, (uint64_t)st.st_dev, (uint64_t)st.st_ino};
    return 0;
}
