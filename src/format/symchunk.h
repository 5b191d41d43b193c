/*
 * format/symchunk.h — the payload of SYMBOLS chunks (docs/trace-format.md,
 * "SYMBOLS chunks"): the functions, source files and lines of the recorded
 * return addresses, resolved where the trace was recorded, so that a trace
 * is analyzed with names on a machine without its binaries or debug files,
 * and without inflating their DWARF again (tens of milliseconds for libc,
 * most of the analysis of a small trace: docs/benchmarks.md).
 *
 * The builder takes entries (a module's file, an ELF address in it, the
 * frames found there, innermost first) and makes payloads of at most
 * LTR_SYMCHUNK_TARGET raw bytes each, one per chunk; the parser hands every
 * entry of a payload to a callback. Both sides know nothing of symbolizing.
 */
#ifndef LTR_FORMAT_SYMCHUNK_H
#define LTR_FORMAT_SYMCHUNK_H

#include "base/records.h"

#include <stddef.h>
#include <stdint.h>

#define LTR_SYMCHUNK_MAX_FRAMES 64    /* frames per address: inlined calls and their function */
#define LTR_SYMCHUNK_MAX_STRING (1u << 20) /* longer names are cut, on a UTF-8 character's start */
#define LTR_SYMCHUNK_TARGET (16u << 20) /* raw bytes a payload stops growing at */
/* What one builder takes at most (ltr merge gathers what its sources
 * hold, and a source's chunks are whatever its file says): past these,
 * ltr_symchunk_add refuses with -E2BIG. */
#define LTR_SYMCHUNK_MAX_ALL_FRAMES (1u << 21)
#define LTR_SYMCHUNK_MAX_ALL_STRING_BYTES ((size_t)64 << 20)
#define LTR_SYMCHUNK_MAX_MODULES 65536u

typedef struct ltr_symframe {
    const char *function; /* NULL when unknown */
    const char *file;     /* NULL when unknown */
    uint32_t line;        /* 0 when unknown */
} ltr_symframe;

/* The file an entry is of, as its MODULE records name it. */
typedef struct ltr_symmodule {
    const char *path;
    const uint8_t *build_id; /* NULL when build_id_len is 0 */
    size_t build_id_len;
    unsigned flags;          /* LTR_SYMMODULE_* */
} ltr_symmodule;
/* The file had neither a symbol table nor DWARF where the trace was made
 * (its names are its dynamic symbols'): said where it is read, so that its
 * reader learns how to get its debug file. */
#define LTR_SYMMODULE_BARE 0x1u

typedef struct ltr_symchunk_builder ltr_symchunk_builder;

ltr_symchunk_builder *ltr_symchunk_builder_new(void);
void ltr_symchunk_builder_free(ltr_symchunk_builder *b);
/* One address of a file; the strings are copied, the file's flags joined
 * to what earlier entries gave. Returns 0, -EINVAL (n not
 * 1..LTR_SYMCHUNK_MAX_FRAMES, build_id_len over 64), -E2BIG (past the
 * bounds above) or -ENOMEM. */
int ltr_symchunk_add(ltr_symchunk_builder *b, const ltr_symmodule *m, uint64_t offset, const ltr_symframe *frames,
                     size_t n);
size_t ltr_symchunk_entries(const ltr_symchunk_builder *b);
/* The payloads, each at most LTR_CHUNK_MAX_RAW bytes: entries sorted by file
 * and address. *out is an array of *count ltr_bytes the caller frees
 * (ltr_bytes_free each, then free). Returns 0 or -ENOMEM. */
int ltr_symchunk_build(ltr_symchunk_builder *b, ltr_bytes **out, size_t *count);

/* Hands every entry of a payload to fn, in order; the strings live until fn
 * returns. Returns the number of entries, or -1 when the payload does not
 * parse (the entries before the bad one were handed out) or memory ran out. */
typedef void (*ltr_symchunk_fn)(void *ctx, const ltr_symmodule *m, uint64_t offset, const ltr_symframe *frames,
                                size_t n);
long ltr_symchunk_parse(const uint8_t *p, size_t len, ltr_symchunk_fn fn, void *ctx);

/* Reading and adding them to a trace file (symread.c). */
struct ltr_trace;
/* Every entry of the trace's SYMBOLS chunks, found by walking the chunk
 * headers from the start (a few hundred bytes read per megabyte of trace)
 * before the trace is scanned: the analyzer must know which files it need
 * not open before it starts opening them. The walk stops at the first bad
 * chunk header; a SYMBOLS chunk that does not parse gives what came before
 * its bad entry. Returns the entries handed out, -errno on an I/O error. */
long ltr_trace_read_symbols(struct ltr_trace *t, ltr_symchunk_fn fn, void *ctx);
/* After a whole scan: where chunks can be added, and the file read (which
 * the writer checks it is still writing to). */
typedef struct ltr_append_point {
    uint64_t size, next_seq; /* the file's size, the next chunk's sequence number */
    uint64_t dev, ino;
} ltr_append_point;
/* -1 with *why when the trace is not fit for it: cut short (no END), or
 * damaged. */
int ltr_trace_append_point(const struct ltr_trace *t, ltr_append_point *at, const char **why);
/* For ltr_symbolize's walk of a trace: EVENTS chunks skipped (on),
 * and fn called with every frame address of a stack record or frame node,
 * as the scan meets it (the MODULE records before it are listed already). */
void ltr_trace_metadata_only(struct ltr_trace *t, int on);
void ltr_trace_watch_addresses(struct ltr_trace *t, void (*fn)(void *ctx, uint32_t pid, uint64_t ip), void *ctx);
/* SYMBOLS entries a scan met (a chunk that did not parse counts as damage). */
uint64_t ltr_trace_symbol_entries(const struct ltr_trace *t);

#endif
