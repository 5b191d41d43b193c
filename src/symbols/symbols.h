/*
 * symbols/symbols.h — turns the return addresses of a recorded stack into
 * functions, source files and lines, from the MODULE records of the trace
 * (docs/heap-events.md) and the ELF/DWARF files on this machine, via elfutils
 * libdw. Used by the analyzer and the exporters (src/analyze).
 *
 * A frame is looked up in the module of its process whose segment holds it
 * (the latest load at or before the time asked, not unloaded by then);
 * address - load_bias is the ELF virtual address. The file's build-id must
 * equal the recorded one: a mismatch is listed (ltr_symbolizer_mismatch_*)
 * and the frames stay module+offset, never symbolized wrongly. Debug info
 * comes from the file itself or, by build-id, from the debug directories
 * (default /usr/lib/debug, whose .build-id/xx/yyyy.debug files distributions ship).
 * Inlined calls become frames of their own, innermost first. C++ and Rust
 * (legacy and v0 manglings) names are demangled.
 */
#ifndef LTR_SYMBOLS_H
#define LTR_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

typedef struct ltr_symbolizer ltr_symbolizer;

typedef struct ltr_sym_segment {
    uint64_t start, end, file_offset; /* runtime addresses [start, end) */
    uint8_t flags;                    /* bit0 r, bit1 w, bit2 x */
} ltr_sym_segment;

/* One MODULE record. */
typedef struct ltr_sym_module {
    uint32_t pid;
    uint64_t ts;
    int loaded;                   /* 1 loaded, 0 unloaded */
    uint64_t load_bias;
    const char *path;
    const uint8_t *build_id;
    size_t build_id_len;
    const ltr_sym_segment *segments;
    size_t segment_count;
} ltr_sym_module;

/* One resolved frame. Strings belong to the symbolizer; function, file are
 * NULL when unknown, module is NULL when no module holds the address. */
typedef struct ltr_sym_frame {
    uint64_t address;      /* as recorded */
    const char *module;    /* path of the module */
    uint64_t offset;       /* ELF virtual address in the module (address - load_bias) */
    const char *function;  /* demangled */
    const char *file;
    unsigned line;
    int inlined;           /* an inlined call inside the next frame */
} ltr_sym_frame;

/* debug_path: ':'-separated debug directories, as elfutils takes them
 * (NULL = ":.debug:/usr/lib/debug"). */
ltr_symbolizer *ltr_symbolizer_new(const char *debug_path);
void ltr_symbolizer_free(ltr_symbolizer *s);
/* Records are given in file order. Returns 0 or -ENOMEM. */
int ltr_symbolizer_add_module(ltr_symbolizer *s, const ltr_sym_module *m);
/* Resolves one recorded return address of process pid, as the process had its
 * modules at time ts. Writes at most cap frames (the inlined ones first, the
 * frame of the function that holds the address last) and returns how many
 * (at least 1 when cap > 0). Pointers stay valid until ltr_symbolizer_free. */
size_t ltr_symbolize(ltr_symbolizer *s, uint32_t pid, uint64_t ts, uint64_t address,
                     ltr_sym_frame *out, size_t cap);
/* Modules whose file here does not match the recorded build-id, or that could
 * not be opened, among those a lookup needed: path and why ("build-id
 * differs: recorded X, file has Y"). */
size_t ltr_symbolizer_problem_count(ltr_symbolizer *s);
void ltr_symbolizer_problem_at(ltr_symbolizer *s, size_t i, const char **path, const char **why);
/* Modules a lookup needed whose file here holds no DWARF and no symbol
 * table (a stripped binary) and for which no debug file was found (by
 * build-id under the debug directories, or .gnu_debuglink): their frames
 * show no function. Path and recorded build-id (length 0 if none). */
size_t ltr_symbolizer_nosyms_count(ltr_symbolizer *s);
void ltr_symbolizer_nosyms_at(ltr_symbolizer *s, size_t i, const char **path, const uint8_t **build_id,
                              size_t *build_id_len);
/* Starts opening, on a thread of its own, the files of the modules added so
 * far that are not open yet, with their debug info: the costly part of the
 * first lookups, done while the caller goes on. Lookups, problem queries and
 * ltr_symbolizer_free stop it (after the file it is on) and join it first, so
 * results are the same with or without it; modules may still be added
 * meanwhile. Returns 1 when the thread started, 0 when there is nothing to
 * open, -EBUSY while an earlier one is still at work (call again later),
 * -errno when it could not start (the lookups then open the files). */
int ltr_symbolizer_prewarm(ltr_symbolizer *s);
/* The same for the files with known frames that were bare where the trace
 * was recorded (ltr_symbolizer_known_bare): a lookup of a frame the trace
 * could not name there opens them (bench/real's cc1plus: its .dynsym read
 * and sorted after the model, on the main thread; perf, 5 kHz, three runs
 * each: the main thread's samples after the model's last 129 to 133, 71 to
 * 91 of them symbols, against 42 to 46 and 15 or 16 with it). They count as
 * not opened until a lookup opens one, which takes what the thread opened,
 * so results, problems and bare files are those without it. */
int ltr_symbolizer_prewarm_bare(ltr_symbolizer *s);
/* Frames of one ELF address of a file (path and build-id as its MODULE
 * records give them), known already: a trace's SYMBOLS chunk, made where it
 * was recorded. Lookups that reach that address of that file return them
 * without opening the file, and ltr_symbolizer_prewarm leaves files with
 * known frames alone (a lookup of an address not known opens it). frames:
 * n (1 to 64) frames, the innermost first, as ltr_symbolize gives them; only
 * function, file and line are read, and copied. The first given for an
 * address is kept, unless it had no source file and a later one has.
 * Returns 0, -EINVAL (n out of range), -E2BIG (past the bounds kept) or
 * -ENOMEM. */
int ltr_symbolizer_add_known(ltr_symbolizer *s, const char *path, const uint8_t *build_id, size_t build_id_len,
                             uint64_t offset, const ltr_sym_frame *frames, size_t n);
/* The file had neither a symbol table nor DWARF where its known frames were
 * named: if this machine has no debug file for it either, it is listed by
 * ltr_symbolizer_nosyms_* once a lookup needed it, as a bare file opened
 * here would be. */
void ltr_symbolizer_known_bare(ltr_symbolizer *s, const char *path, const uint8_t *build_id, size_t build_id_len);
/* Every file address resolved here so far that was named (a function or a
 * file), once, in no particular order, not those given as known: what a
 * SYMBOLS chunk adds to a trace. Frames as ltr_symbolize gives them (address: the first lookup's);
 * bare: the file has neither a symbol table nor DWARF. */
typedef void (*ltr_sym_each_fn)(void *ctx, const char *path, const uint8_t *build_id, size_t build_id_len,
                                int bare, uint64_t offset, const ltr_sym_frame *frames, size_t n);
void ltr_symbolizer_each(ltr_symbolizer *s, ltr_sym_each_fn fn, void *ctx);
/* Addresses in no module of their process (JIT-compiled code) are kept,
 * when on, for ltr_symbolizer_read_perf_maps: only where the trace was
 * made, while the process lives or just after, never for a trace from
 * elsewhere. Frames known under the path ltr_sym_jit_path gives
 * (ltr_symbolizer_add_known, offset the address) name the process's
 * addresses in no module whether or not this is on: a function and no
 * module, offset the address. */
void ltr_symbolizer_use_perf_maps(ltr_symbolizer *s, int on);
/* Names the addresses kept so far from the perf map each process wrote
 * (symbols/perfmap.h: /tmp/perf-PID.map); ended says whether the trace saw
 * a process end (its pid may be another process's by now: its map is then
 * looked for as an ended process's, never under the pid's /proc/PID/root).
 * ltr_symbolizer_each then hands them out under ltr_sym_jit_path. */
void ltr_symbolizer_read_perf_maps(ltr_symbolizer *s, int (*ended)(void *ctx, uint32_t pid), void *ctx);
/* "[perf-PID.map]": the file JIT frames of pid are embedded under (a name no MODULE gives). */
void ltr_sym_jit_path(uint32_t pid, char *out, size_t size);
/* One sentence (no newline) per process whose perf map was looked for and
 * was there: refused and why, or how many addresses it named, by pid. */
typedef void (*ltr_sym_note_fn)(void *ctx, const char *note);
void ltr_symbolizer_perf_map_notes(ltr_symbolizer *s, ltr_sym_note_fn fn, void *ctx);
/* Demangles a C++ (Itanium) or Rust (legacy or v0) symbol; returns a malloc'd
 * string or NULL if name is not mangled. Rust names lose their hashes: the
 * legacy "::h<16 hex>" element, v0's crate disambiguators, ".llvm.N". */
char *ltr_demangle(const char *name);

#endif
