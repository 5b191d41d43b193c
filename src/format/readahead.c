/*
 * format/readahead.c — fetching chunks for the reader (reader.c): reading a
 * chunk at a file offset, checking its header and payload CRC and
 * decompressing it, with the outcome described in an ltr_fetch for reader.c
 * to apply (damage records, sequence check, dispatch). Fetching depends only
 * on the file, so a sequential scan can fetch ahead: a read-ahead thread
 * fetches the next chunks on another core into a few slots while the reader
 * parses the current one, and the reader applies them in file order, with the
 * same damage as if it had fetched them itself. For a consumer that reads
 * column blocks' values (ltr_trace_open_decoding), the thread decodes
 * them too, another part of the work the reader's core need not do. A
 * chunk the reader waits for, idle, it fetches itself (reader_takes).
 */
#include "prim/prim.h"
#include "format/reader.h"

#include "format/chunk.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#define SCAN_WINDOW (64u * 1024u)
#define RA_SLOTS 3 /* the reader holds one, the thread fills the others */

ssize_t ltr_read_at(int fd, void *buf, size_t len, uint64_t off)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, (uint8_t *)buf + got, len - got, (off_t)(off + got));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

uint64_t ltr_trace_file_raw_bytes(const char *path, uint64_t enough)
{
    /* a regular file or none: a FIFO put at the name after the caller's
     * stat (cli/analysis-args.c) held a blocking open for good */
    int fd = ltr_open_regular(path);
    if (fd < 0)
        return 0;
    struct stat st;
    uint64_t raw = 0, size = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
    for (uint64_t pos = LTR_FILE_HEADER_SIZE; raw < enough && pos + LTR_CHUNK_HEADER_SIZE <= size;) {
        uint8_t hdr[LTR_CHUNK_HEADER_SIZE];
        ltr_chunk_header h;
        if (ltr_read_at(fd, hdr, sizeof hdr, pos) != (ssize_t)sizeof hdr ||
            ltr_chunk_header_decode(hdr, &h) != LTR_CHUNK_OK)
            break;
        raw += h.raw_size;
        pos += LTR_CHUNK_HEADER_SIZE + h.payload_size;
    }
    close(fd);
    return raw;
}

/* Room for n bytes (n > 0) in a buffer whose content need not be kept:
 * grown without a copy (prim/table.c), since a chunk's buffers are as
 * large as 4 MiB (cc1plus's trace: 5.5 MiB of page faults were copies).
 * One still in the heap is freed first, not reallocated: realloc copied
 * its old bytes into the new block's fresh pages (cc1plus's trace: 65 of
 * the main thread's page faults, 11 to 15 us each on the PVM guest). */
static int reserve(uint8_t **buf, size_t *cap, size_t n)
{
    if (n <= *cap)
        return 0;
    size_t want = ltr_grown_capacity(*cap, n - 1, n);
    if (*cap <= LTR_TABLE_MAPPED) {
        ltr_table_free(*buf, *cap, 1);
        *buf = NULL;
        *cap = 0;
    }
    return ltr_table_reserve((void **)buf, cap, want - 1, 1, want);
}

/* The first offset >= off that is not in a hole of a sparse file (a hole
 * reads as zeros, and a chunk header starts with 'L'): a trace of 64 bytes
 * and then 100 GB of hole (`truncate -s 100G`, no disk spent) had the scan
 * read zeros for minutes (a review: a 4 GB one 4.9 s). file_size when
 * only holes are left; off itself where the file system cannot say. */
static uint64_t past_hole(int fd, uint64_t off, uint64_t file_size)
{
    off_t data = lseek(fd, (off_t)off, SEEK_DATA);
    if (data < 0)
        return errno == ENXIO ? file_size : off;
    return (uint64_t)data > off ? (uint64_t)data : off;
}

/* Finds the next offset >= from holding a chunk header whose CRC matches.
 * Returns 1 and sets *found, 0 if there is none, or -errno. */
static int find_header(int fd, uint64_t file_size, uint64_t from, uint64_t *found)
{
    uint8_t win[SCAN_WINDOW + LTR_CHUNK_HEADER_SIZE];
    for (uint64_t off = from; (off = past_hole(fd, off, file_size)) + LTR_CHUNK_HEADER_SIZE <= file_size;
         off += SCAN_WINDOW) {
        ssize_t n = ltr_read_at(fd, win, sizeof win, off);
        if (n < 0)
            return (int)n;
        for (ssize_t i = 0; i + (ssize_t)LTR_CHUNK_HEADER_SIZE <= n && i < (ssize_t)SCAN_WINDOW; i++) {
            ltr_chunk_header h;
            if (win[i] == 'L' && ltr_chunk_header_decode(win + i, &h) == LTR_CHUNK_OK) {
                *found = off + (uint64_t)i;
                return 1;
            }
        }
        if ((size_t)n < sizeof win)
            break;
    }
    return 0;
}

/* Checks a valid header's sizes and flags; returns 0 if usable, else -1 with why in buf. */
static int header_problem(const ltr_chunk_header *h, char *buf, size_t cap)
{
    if (h->raw_size > LTR_CHUNK_MAX_RAW)
        snprintf(buf, cap, "raw size %u is over the 64 MiB limit", h->raw_size);
    else if (h->flags & ~LTR_CHUNK_FLAG_ZSTD)
        snprintf(buf, cap, "unknown chunk flags 0x%x", h->flags);
    else if (!(h->flags & LTR_CHUNK_FLAG_ZSTD) && h->payload_size != h->raw_size)
        snprintf(buf, cap, "uncompressed payload of %u bytes but raw size %u", h->payload_size,
                 h->raw_size);
    else if (h->payload_size > ZSTD_compressBound(LTR_CHUNK_MAX_RAW))
        snprintf(buf, cap, "payload size %u is over the limit", h->payload_size);
    else
        return 0;
    return -1;
}

static ltr_fetch_kind fail(ltr_fetch *f, int err)
{
    f->err = err;
    return LTR_FETCH_ERROR;
}

/* The bytes at f->pos are no chunk header: the next one (or the end) is where to go on. */
static ltr_fetch_kind no_header(ltr_fetch *f, int fd, uint64_t file_size, int check)
{
    f->why = check == LTR_CHUNK_BAD_MAGIC ? "no chunk magic" : "chunk header CRC mismatch";
    f->next = file_size;
    int rc = find_header(fd, file_size, f->pos + 1, &f->next);
    if (rc < 0)
        return fail(f, rc);
    f->found = rc;
    return LTR_FETCH_NO_HEADER;
}

/* Reads, checks and decompresses the payload of a usable header into f->raw. */
static ltr_fetch_kind fetch_payload(ltr_fetch *f, int fd, uint64_t file_size, struct ZSTD_DCtx_s *dctx)
{
    const ltr_chunk_header *h = &f->h;
    f->got = file_size - f->pos - LTR_CHUNK_HEADER_SIZE;
    if (h->payload_size > f->got)
        return LTR_FETCH_TRUNCATED;
    if (reserve(&f->cbuf, &f->ccap, h->payload_size ? h->payload_size : 1) < 0 ||
        reserve(&f->raw, &f->rawcap, h->raw_size ? h->raw_size : 1) < 0)
        return fail(f, -ENOMEM);
    ssize_t n = ltr_read_at(fd, f->cbuf, h->payload_size, f->pos + LTR_CHUNK_HEADER_SIZE);
    if (n < 0)
        return fail(f, (int)n);
    f->got = (uint64_t)n;
    if ((size_t)n < h->payload_size)
        return LTR_FETCH_TRUNCATED;
    if (ltr_crc32(f->cbuf, h->payload_size) != h->payload_crc)
        return LTR_FETCH_BAD_CRC;
    if (!(h->flags & LTR_CHUNK_FLAG_ZSTD)) {
        memcpy(f->raw, f->cbuf, h->payload_size);
    } else {
        size_t r = ZSTD_decompressDCtx(dctx, f->raw, h->raw_size, f->cbuf, h->payload_size);
        if (ZSTD_isError(r) || r != h->raw_size) {
            f->why = ZSTD_isError(r) ? ZSTD_getErrorName(r) : "wrong size";
            return LTR_FETCH_BAD_ZSTD;
        }
    }
    f->raw_len = h->raw_size;
    return LTR_FETCH_OK;
}

/* The chunk header at f->pos: LTR_FETCH_OK when it is usable (f->h and
 * f->next set, the payload not read yet), else the fetch's outcome. */
static ltr_fetch_kind fetch_header(ltr_fetch *f, int fd, uint64_t file_size)
{
    if (f->pos >= file_size)
        return LTR_FETCH_END;
    uint8_t hb[LTR_CHUNK_HEADER_SIZE];
    ssize_t n = ltr_read_at(fd, hb, sizeof hb, f->pos);
    if (n < 0)
        return fail(f, (int)n);
    if ((size_t)n < sizeof hb) {
        f->got = (uint64_t)n;
        f->next = file_size;
        return LTR_FETCH_SHORT_HEADER;
    }
    int check = ltr_chunk_header_decode(hb, &f->h);
    if (check != LTR_CHUNK_OK)
        return no_header(f, fd, file_size, check);
    f->next = f->pos + LTR_CHUNK_HEADER_SIZE + f->h.payload_size;
    if (header_problem(&f->h, f->text, sizeof f->text) < 0)
        return LTR_FETCH_BAD_HEADER; /* next stays past it even beyond the end: nothing more there */
    return LTR_FETCH_OK;
}

/* The rest of a fetch whose header is usable. */
static ltr_fetch_kind fetch_rest(ltr_fetch *f, int fd, uint64_t file_size, struct ZSTD_DCtx_s *dctx)
{
    ltr_fetch_kind k = fetch_payload(f, fd, file_size, dctx);
    if (f->next > file_size)
        f->next = file_size;
    return k;
}

static void fetch_begin(ltr_fetch *f, uint64_t pos)
{
    f->pos = pos;
    f->next = pos;
    f->found = 0;
    f->got = 0;
    f->why = NULL;
    f->raw_len = 0;
}

void ltr_fetch_chunk(int fd, uint64_t file_size, uint64_t pos, struct ZSTD_DCtx_s *dctx, ltr_fetch *f)
{
    fetch_begin(f, pos);
    f->kind = fetch_header(f, fd, file_size);
    if (f->kind == LTR_FETCH_OK)
        f->kind = fetch_rest(f, fd, file_size, dctx);
}

void ltr_fetch_free(ltr_fetch *f)
{
    ltr_table_free(f->cbuf, f->ccap, 1);
    ltr_table_free(f->raw, f->rawcap, 1);
    f->cbuf = f->raw = NULL;
    f->ccap = f->rawcap = 0;
    ltr_ahead_free(&f->ahead);
}

/* The thread and the reader share the slots: the thread fills slot
 * (produced % RA_SLOTS) while fewer than RA_SLOTS are neither applied nor
 * free; the reader holds slot ((consumed - 1) % RA_SLOTS) until it asks for
 * the next one. The thread stops after an END or ERROR fetch, or when told. */
struct ltr_readahead {
    int fd;
    uint64_t file_size, pos;
    struct ZSTD_DCtx_s *dctx;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t produced, consumed, released;
    int stop, done;
    ltr_fetch slots[RA_SLOTS];
};

/* Waits for a free slot; NULL when told to stop. */
static ltr_fetch *free_slot(ltr_readahead *ra)
{
    pthread_mutex_lock(&ra->mu);
    while (!ra->stop && ra->produced - ra->released >= RA_SLOTS)
        pthread_cond_wait(&ra->cv, &ra->mu);
    ltr_fetch *f = ra->stop ? NULL : &ra->slots[ra->produced % RA_SLOTS];
    pthread_mutex_unlock(&ra->mu);
    return f;
}


/* Whether the reader had better fetch the chunk whose header f holds
 * itself (LTR_FETCH_YOURS): it waits for it, idle, or soon will (it holds
 * no chunk, and those fetched before this one hold little), and then the
 * thread goes on to the next chunk at once instead of after this one's
 * read, CRC and decompression. Not an EVENTS chunk whose values the
 * thread decodes: the reader's own decoding of them is the slower. On
 * bench/heap's trace the reader waited for its first METADATA chunk (1.8
 * MB, about 1 ms), parsed it (about 2 ms) while the thread fetched and
 * decoded the events chunk after it (about 3 ms), and waited for that. */
#define READER_SOON (64u << 10) /* raw bytes fetched before the chunk, read in well under its fetch */

static int reader_takes(ltr_readahead *ra, const ltr_fetch *f)
{
    if (f->decode_ahead && f->h.type == LTR_CHUNK_EVENTS)
        return 0;
    pthread_mutex_lock(&ra->mu);
    uint64_t queued = 0;
    for (uint64_t i = ra->consumed; i < ra->produced; i++) {
        const ltr_fetch *q = &ra->slots[i % RA_SLOTS];
        queued += q->kind == LTR_FETCH_OK || q->kind == LTR_FETCH_YOURS ? q->h.raw_size : 0;
    }
    int yes = ra->consumed == ra->released && queued < READER_SOON;
    pthread_mutex_unlock(&ra->mu);
    return yes;
}

static void *run(void *arg)
{
    ltr_readahead *ra = arg;
    ltr_fetch *f;
    while ((f = free_slot(ra))) {
        fetch_begin(f, ra->pos);
        f->kind = fetch_header(f, ra->fd, ra->file_size);
        if (f->kind == LTR_FETCH_OK && reader_takes(ra, f)) {
            f->kind = LTR_FETCH_YOURS;
            if (f->next > ra->file_size)
                f->next = ra->file_size; /* as fetch_rest leaves it */
        } else if (f->kind == LTR_FETCH_OK) {
            f->kind = fetch_rest(f, ra->fd, ra->file_size, ra->dctx);
        }
        f->ahead.nblocks = 0;
        if (f->decode_ahead && f->kind == LTR_FETCH_OK && f->h.type == LTR_CHUNK_EVENTS)
            ltr_ahead_decode(&f->ahead, f->raw, f->raw_len); /* work the reader would do, on this core */
        ra->pos = f->next;
        int last = f->kind == LTR_FETCH_END || f->kind == LTR_FETCH_ERROR;
        pthread_mutex_lock(&ra->mu);
        ra->produced++;
        ra->done = last;
        pthread_cond_broadcast(&ra->cv);
        pthread_mutex_unlock(&ra->mu);
        if (last)
            break;
    }
    return NULL;
}

ltr_readahead *ltr_readahead_start(int fd, uint64_t file_size, uint64_t pos, int decode_ahead)
{
    ltr_readahead *ra = calloc(1, sizeof *ra);
    if (!ra)
        return NULL;
    for (int i = 0; i < RA_SLOTS; i++)
        ra->slots[i].decode_ahead = decode_ahead;
    ra->fd = fd;
    ra->file_size = file_size;
    ra->pos = pos;
    pthread_mutex_init(&ra->mu, NULL);
    pthread_cond_init(&ra->cv, NULL);
    if (!(ra->dctx = ZSTD_createDCtx()) || pthread_create(&ra->thread, NULL, run, ra) != 0) {
        ZSTD_freeDCtx(ra->dctx);
        pthread_mutex_destroy(&ra->mu);
        pthread_cond_destroy(&ra->cv);
        free(ra);
        return NULL;
    }
    return ra;
}

const ltr_fetch *ltr_readahead_next(ltr_readahead *ra)
{
    pthread_mutex_lock(&ra->mu);
    if (ra->released < ra->consumed) {
        ra->released++; /* the reader is done with the chunk it held */
        pthread_cond_broadcast(&ra->cv);
    }
    while (ra->consumed == ra->produced && !ra->done)
        pthread_cond_wait(&ra->cv, &ra->mu);
    const ltr_fetch *f = ra->consumed < ra->produced ? &ra->slots[ra->consumed++ % RA_SLOTS] : NULL;
    pthread_mutex_unlock(&ra->mu);
    return f;
}

void ltr_readahead_stop(ltr_readahead *ra)
{
    if (!ra)
        return;
    pthread_mutex_lock(&ra->mu);
    ra->stop = 1;
    pthread_cond_broadcast(&ra->cv);
    pthread_mutex_unlock(&ra->mu);
    pthread_join(ra->thread, NULL);
    for (int i = 0; i < RA_SLOTS; i++)
        ltr_fetch_free(&ra->slots[i]);
    ZSTD_freeDCtx(ra->dctx);
    pthread_mutex_destroy(&ra->mu);
    pthread_cond_destroy(&ra->cv);
    free(ra);
}
