/*
 * symbols/symbols.c — the module table of every process and the cache of
 * resolved addresses, on top of dwarf.c. Each distinct file (path and
 * build-id) is opened once; each (pid, address) is resolved once, unless the
 * process unloaded modules, since an address may then mean different code at
 * different times.
 *
 * Each file also keeps what its offsets resolved to, whichever process asked:
 * that is what ltr_symbolizer_each hands out to be embedded in a trace
 * (docs/trace-format.md, "SYMBOLS chunks"), and where the frames a trace
 * embedded (ltr_symbolizer_add_known) are found without opening the file.
 *
 * Opening a file is the costly part (libdw reads and inflates its debug
 * info: tens of milliseconds for libc), so ltr_symbolizer_prewarm does it on
 * a thread of its own while the caller goes on (the analyzer streaming the
 * trace). The thread works on its own list of files and writes only their
 * open state; everything that reads that state (lookups, problems, free)
 * first stops and joins it, so the lookups never run beside it.
 */
#include "prim/prim.h"
#include "symbols/symbols.h"
#include "elfdebug/debuginfo.h"
#include "symbols/dwarf.h"
#include "symbols/perfmap.h"
#include "base/hmap.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LEVELS 64 /* inlining depth kept per address (Rust goes 20 deep and more) */

typedef struct sym_file {
    char *path;
    uint8_t build_id[64];
    size_t build_id_len;
    sym_elf *elf;     /* NULL when unusable: see problem */
    char *problem;
    int opened;       /* sym_elf_open was tried (by a lookup or the prewarm thread) */
    int used;         /* a lookup needed it: only then is its problem reported */
    int syms_known, no_syms; /* no DWARF and no .symtab found for it (sym_elf_has_symbols) */
    an_hmap *offsets; /* ELF address -> sym_cached: resolved here or given as known */
    int has_known;    /* frames came from the trace: opened only when a lookup misses them */
    size_t rank;      /* modules added before the first that named it; SIZE_MAX: none yet */
    int known_bare;   /* bare where its known frames were named (ltr_symbolizer_known_bare) */
    int known_used;   /* a lookup took its known frames without opening it */
    int better;       /* -1 unknown, 0/1: a debug file here may name it better (may_do_better) */
    /* opened ahead by the prewarm thread for ltr_symbolizer_prewarm_bare,
     * not opened yet as far as lookups and problems go: the first lookup
     * that opens the file takes these instead of opening it again */
    int early_done;
    sym_elf *early;
    char *early_problem;
} sym_file;

typedef struct sym_mod {
    uint32_t pid;
    uint64_t load_ts, unload_ts; /* unload_ts UINT64_MAX while loaded */
    uint64_t bias;
    ltr_sym_segment *seg;
    size_t nseg;
    sym_file *file;
    size_t prev; /* index + 1 of the process's module recorded before, 0: none */
} sym_mod;

typedef struct sym_cached {
    uint64_t key;        /* address */
    uint32_t first, n;   /* in frames; n may carry KNOWN_WEAK */
} sym_cached;

/* Known frames without a source file (named by a symbol table where the
 * trace was made, not by DWARF): this machine's files may name them better
 * (a debug package installed since), so they are looked up here first and
 * used only when that names nothing (the file is gone, or as bare). */
#define KNOWN_WEAK 0x80000000u
#define KNOWN 0x40000000u /* given by ltr_symbolizer_add_known, not resolved here */
#define COUNT(n) ((n) & ~(KNOWN_WEAK | KNOWN))

/* Known frames are the trace's word: bounded, whatever it says (each string
 * is kept once, and past these the rest is looked up in the files). */
#define KNOWN_MAX_FRAMES (1u << 21)
#define KNOWN_MAX_STRING_BYTES ((size_t)64 << 20)
#define KNOWN_MAX_FILES 65536

typedef struct file_ref {
    uint64_t key; /* FNV-1a of path and build-id */
    uint32_t index; /* in files */
} file_ref;

typedef struct known_str {
    uint64_t key; /* FNV-1a of the text */
    const char *text;
} known_str;

typedef struct sym_proc {
    uint64_t pid;
    int has_unloads;
    an_hmap *cache;      /* address -> sym_cached */
    /* index + 1 of its last module: its modules are a chain (sym_mod.prev).
     * A scan of every process's modules for each address took 20 s of
     * `ltr analyze` on 200 python3 starts through pyenv's shims (7 038
     * processes, 100 000 modules), 0.4 s this way. */
    size_t last_mod;
    /* its perf map (JIT code), read by ltr_symbolizer_read_perf_maps when
     * it has an address in no module: jit_state 0 not yet, 1 read, else -errno */
    int jit_state;
    sym_perfmap *jit;
    char *jit_path, *jit_why;
    size_t jit_named; /* addresses it named */
} sym_proc;

struct ltr_symbolizer {
    char *debug_path;
    char *debug_path_ptr; /* elfutils wants a char ** that outlives every Dwfl */
    sym_file **files;
    size_t nfiles;
    an_hmap file_index;   /* file_ref: files found by path and build-id (a trace may name many) */
    sym_mod *mods;
    size_t nmods, capmods;
    an_hmap procs;        /* pid -> sym_proc */
    ltr_sym_frame *frames;
    size_t nframes, capframes;
    char **strings;       /* every string frames point to */
    size_t nstrings, capstrings;
    an_hmap known_strs;   /* the known frames' strings, each once (known_str) */
    size_t known_frames, known_bytes;
    int perf_maps;        /* ltr_symbolizer_use_perf_maps */
    /* addresses in no module met meanwhile, for ltr_symbolizer_read_perf_maps */
    struct jit_pending { uint32_t pid; uint64_t addr; } *jit_pending;
    size_t njit_pending, capjit_pending;
    /* prewarm thread, while warming: it opens warm[0..nwarm) */
    int warming;
    pthread_t warm_thread;
    sym_file **warm;
    size_t nwarm;
    atomic_int warm_stop, warm_done;
};

static void open_file(ltr_symbolizer *s, sym_file *f, int warm)
{
    f->opened = 1;
    if (f->early_done) { /* opened ahead (ltr_symbolizer_prewarm_bare): the same open, done */
        f->elf = f->early;
        f->problem = f->early_problem;
        f->early = NULL;
        f->early_problem = NULL;
        f->early_done = 0;
        return;
    }
    f->elf = sym_elf_open(f->path, f->build_id, f->build_id_len, &s->debug_path_ptr, &f->problem);
    if (warm && f->elf)
        sym_elf_warm(f->elf);
}

/* A file with known frames opened ahead, for a lookup to take (open_file). */
static void open_early(ltr_symbolizer *s, sym_file *f)
{
    f->early = sym_elf_open(f->path, f->build_id, f->build_id_len, &s->debug_path_ptr, &f->early_problem);
    if (f->early)
        sym_elf_warm(f->early);
    f->early_done = 1;
}

static void *prewarm_thread(void *arg)
{
    ltr_symbolizer *s = arg;
    for (size_t i = 0; i < s->nwarm && !atomic_load(&s->warm_stop); i++) {
        if (s->warm[i]->has_known)
            open_early(s, s->warm[i]);
        else
            open_file(s, s->warm[i], 1);
    }
    atomic_store(&s->warm_done, 1);
    return NULL;
}

/* No prewarm thread runs when this returns: one under way stops after the
 * file it is opening (the lookups open the rest themselves). */
static void settle(ltr_symbolizer *s)
{
    if (!s->warming)
        return;
    atomic_store(&s->warm_stop, 1);
    pthread_join(s->warm_thread, NULL);
    free(s->warm);
    s->warm = NULL;
    s->nwarm = 0;
    s->warming = 0;
}

/* A file whose frames the trace embedded is opened only if a lookup misses. */
static int wants_warm(const sym_file *f) { return !f->opened && !f->has_known; }

/* One the trace says was bare where it was recorded: its frames it could
 * not name there are looked up here, which opens it (ltr_symbolizer_prewarm_bare). */
static int wants_warm_bare(const sym_file *f)
{
    return !f->opened && f->has_known && f->known_bare && !f->early_done;
}

static int start_prewarm(ltr_symbolizer *s, int (*wants)(const sym_file *))
{
    if (s->warming && !atomic_load(&s->warm_done))
        return -EBUSY;
    settle(s);
    size_t n = 0;
    for (size_t i = 0; i < s->nfiles; i++)
        n += wants(s->files[i]);
    if (!n)
        return 0;
    if (!(s->warm = malloc(n * sizeof *s->warm)))
        return -ENOMEM;
    for (size_t i = 0; i < s->nfiles; i++)
        if (wants(s->files[i]))
            s->warm[s->nwarm++] = s->files[i];
    atomic_store(&s->warm_stop, 0);
    atomic_store(&s->warm_done, 0);
    int rc = pthread_create(&s->warm_thread, NULL, prewarm_thread, s);
    if (rc != 0) {
        free(s->warm);
        s->warm = NULL;
        s->nwarm = 0;
        return -rc;
    }
    s->warming = 1;
    return 1;
}

int ltr_symbolizer_prewarm(ltr_symbolizer *s) { return start_prewarm(s, wants_warm); }

int ltr_symbolizer_prewarm_bare(ltr_symbolizer *s) { return start_prewarm(s, wants_warm_bare); }

ltr_symbolizer *ltr_symbolizer_new(const char *debug_path)
{
    ltr_symbolizer *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->debug_path = strdup(debug_path ? debug_path : ":.debug:/usr/lib/debug");
    if (!s->debug_path) {
        free(s);
        return NULL;
    }
    s->debug_path_ptr = s->debug_path;
    an_hmap_init(&s->procs, sizeof(sym_proc));
    an_hmap_init(&s->known_strs, sizeof(known_str));
    an_hmap_init(&s->file_index, sizeof(file_ref));
    return s;
}

void ltr_symbolizer_free(ltr_symbolizer *s)
{
    if (!s)
        return;
    settle(s);
    for (size_t i = 0; i < s->nfiles; i++) {
        sym_elf_close(s->files[i]->elf);
        sym_elf_close(s->files[i]->early);
        free(s->files[i]->early_problem);
        free(s->files[i]->path);
        free(s->files[i]->problem);
        if (s->files[i]->offsets)
            an_hmap_free(s->files[i]->offsets);
        free(s->files[i]->offsets);
        free(s->files[i]);
    }
    free(s->files);
    for (size_t i = 0; i < s->nmods; i++)
        free(s->mods[i].seg);
    free(s->mods);
    size_t pos = 0;
    sym_proc *p;
    while ((p = an_hmap_next(&s->procs, &pos))) {
        an_hmap_free(p->cache);
        free(p->cache);
        sym_perfmap_free(p->jit);
        free(p->jit_path);
        free(p->jit_why);
    }
    an_hmap_free(&s->procs);
    an_hmap_free(&s->known_strs);
    an_hmap_free(&s->file_index);
    free(s->frames);
    free(s->jit_pending);
    for (size_t i = 0; i < s->nstrings; i++)
        free(s->strings[i]);
    free(s->strings);
    free(s->debug_path);
    free(s);
}

static int is_file(const sym_file *f, const char *path, const uint8_t *id, size_t idlen)
{
    return !strcmp(f->path, path) && f->build_id_len == idlen && (!idlen || !memcmp(f->build_id, id, idlen));
}

static uint64_t file_key(const char *path, const uint8_t *id, size_t idlen)
{
    return an_hash_bytes(an_hash_bytes(AN_HASH_START, path, strlen(path)), id, idlen);
}

/* The file of that path and build-id, or NULL. */
static sym_file *find_file(ltr_symbolizer *s, const char *path, const uint8_t *build_id, size_t build_id_len)
{
    size_t idlen = build_id_len < 64 ? build_id_len : 64;
    const file_ref *r = an_hmap_get(&s->file_index, file_key(path, build_id, idlen));
    if (r && is_file(s->files[r->index], path, build_id, idlen))
        return s->files[r->index];
    for (size_t i = 0; r && i < s->nfiles; i++) /* two files of one hash: the second was not indexed */
        if (is_file(s->files[i], path, build_id, idlen))
            return s->files[i];
    return NULL;
}

/* The file of that path and build-id, made if new. */
static sym_file *file_of(ltr_symbolizer *s, const char *path, const uint8_t *build_id, size_t build_id_len)
{
    size_t idlen = build_id_len < 64 ? build_id_len : 64;
    sym_file *found = find_file(s, path, build_id, idlen);
    if (found)
        return found;
    sym_file **v = realloc(s->files, (s->nfiles + 1) * sizeof *v);
    if (!v)
        return NULL;
    s->files = v;
    sym_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path)) || !(f->offsets = malloc(sizeof *f->offsets))) {
        if (f)
            free(f->path);
        free(f);
        return NULL;
    }
    an_hmap_init(f->offsets, sizeof(sym_cached));
    f->rank = SIZE_MAX;
    f->better = -1;
    if (idlen) /* a record without a build-id may give NULL */
        memcpy(f->build_id, build_id, idlen);
    f->build_id_len = idlen;
    int created;
    file_ref *r = an_hmap_put(&s->file_index, file_key(path, build_id, idlen), &created);
    if (r && created)
        r->index = (uint32_t)s->nfiles;
    s->files[s->nfiles++] = f;
    return f;
}

static sym_proc *proc_of(ltr_symbolizer *s, uint32_t pid)
{
    int created;
    sym_proc *p = an_hmap_put(&s->procs, pid, &created);
    if (p && created) {
        p->cache = malloc(sizeof *p->cache);
        if (!p->cache) {
            an_hmap_del(&s->procs, pid);
            return NULL;
        }
        an_hmap_init(p->cache, sizeof(sym_cached));
    }
    return p;
}

/* An unloaded record ends the latest matching load of the same object. */
static void unload(ltr_symbolizer *s, const ltr_sym_module *m)
{
    sym_proc *p = proc_of(s, m->pid);
    if (!p)
        return;
    for (size_t i = p->last_mod; i; i = s->mods[i - 1].prev) {
        sym_mod *x = &s->mods[i - 1];
        if (x->bias == m->load_bias && x->unload_ts == UINT64_MAX && !strcmp(x->file->path, m->path)) {
            x->unload_ts = m->ts;
            break;
        }
    }
    p->has_unloads = 1;
}

int ltr_symbolizer_add_module(ltr_symbolizer *s, const ltr_sym_module *m)
{
    if (!m->loaded) {
        unload(s, m);
        return 0;
    }
    if (ltr_reserve((void **)&s->mods, &s->capmods, s->nmods, sizeof *s->mods, 64))
        return -ENOMEM;
    sym_mod *x = &s->mods[s->nmods];
    memset(x, 0, sizeof *x);
    x->pid = m->pid;
    x->load_ts = m->ts;
    x->unload_ts = UINT64_MAX;
    x->bias = m->load_bias;
    x->file = file_of(s, m->path, m->build_id, m->build_id_len);
    if (x->file && x->file->rank == SIZE_MAX)
        x->file->rank = s->nmods;
    x->seg = malloc((m->segment_count ? m->segment_count : 1) * sizeof *x->seg);
    sym_proc *p = proc_of(s, m->pid);
    if (!x->file || !x->seg || !p) {
        free(x->seg);
        return -ENOMEM;
    }
    memcpy(x->seg, m->segments, m->segment_count * sizeof *x->seg);
    x->nseg = m->segment_count;
    x->prev = p->last_mod;
    p->last_mod = ++s->nmods;
    return 0;
}

static int holds(const sym_mod *x, uint64_t addr)
{
    for (size_t i = 0; i < x->nseg; i++)
        if (addr >= x->seg[i].start && addr < x->seg[i].end)
            return 1;
    return 0;
}

/* The module of pid holding addr at ts: the latest load at or before ts not
 * unloaded by then; failing that (a module recorded just after its first
 * use), the earliest load that holds it. */
static sym_mod *module_at(ltr_symbolizer *s, uint32_t pid, uint64_t ts, uint64_t addr)
{
    sym_mod *best = NULL, *later = NULL;
    const sym_proc *p = an_hmap_get(&s->procs, pid);
    /* newest first: of loads at one time the last recorded wins, of later
     * loads the first recorded */
    for (size_t i = p ? p->last_mod : 0; i; i = s->mods[i - 1].prev) {
        sym_mod *x = &s->mods[i - 1];
        if (!holds(x, addr))
            continue;
        if (x->load_ts <= ts && x->unload_ts > ts) {
            if (!best || x->load_ts > best->load_ts)
                best = x;
        } else if (x->load_ts > ts && (!later || x->load_ts <= later->load_ts))
            later = x;
    }
    return best ? best : later;
}

static const char *keep(ltr_symbolizer *s, char *str)
{
    if (!str)
        return NULL;
    if (s->nstrings == s->capstrings) {
        size_t cap = s->capstrings ? s->capstrings * 2 : 256;
        char **v = realloc(s->strings, cap * sizeof *v);
        if (!v) {
            free(str);
            return NULL;
        }
        s->strings = v;
        s->capstrings = cap;
    }
    return s->strings[s->nstrings++] = str;
}

static ltr_sym_frame *new_frames(ltr_symbolizer *s, size_t n)
{
    if (s->nframes + n > s->capframes) {
        size_t cap = s->capframes ? s->capframes * 2 : 1024;
        while (cap < s->nframes + n)
            cap *= 2;
        ltr_sym_frame *v = realloc(s->frames, cap * sizeof *v);
        if (!v)
            return NULL;
        s->frames = v;
        s->capframes = cap;
    }
    ltr_sym_frame *f = &s->frames[s->nframes];
    memset(f, 0, n * sizeof *f);
    s->nframes += n;
    return f;
}

/* Resolves addr into new frames; returns the index of the first and sets *n. */
/* The file's debug info for a lookup; quiet: a file that fails to open is
 * not named in the problems (a known frame stands in for what it lacks). */
static sym_elf *elf_for(ltr_symbolizer *s, sym_file *f, int quiet)
{
    if (!f->opened)
        open_file(s, f, 0);
    if (!quiet || f->elf)
        f->used = 1;
    return f->elf;
}

/* Whether this machine may name the file's frames better than the symbol
 * table that named them where the trace was made. The same build-id is the
 * same file, so only a separate debug file can add to it: one found by
 * build-id under an absolute debug directory, by name (the file's
 * .gnu_debuglink), or by debuginfod (DEBUGINFOD_URLS). Opening the file
 * costs libdwfl's start, most of a small trace's analysis: heap-workload's
 * trace (3 modules, no debug files) took 64 ms of CPU with its files opened
 * (--local-symbols) and 16 ms with the trace's names (paired timing -n 20,
 * analyze --format json); with DEBUGINFOD_URLS set, libdwfl also loads the
 * debuginfod client (5 ms and more). */
static int may_do_better(ltr_symbolizer *s, sym_file *f)
{
    if (f->better >= 0)
        return f->better;
    f->better = dbg_debuginfod_configured() || !f->build_id_len;
    char id[129];
    for (size_t i = 0; i < f->build_id_len && i < 64; i++)
        snprintf(id + 2 * i, 3, "%02x", f->build_id[i]);
    for (const char *p = s->debug_path; !f->better && p && *p;) {
        size_t n = strcspn(p, ":");
        char path[4352];
        if (p[0] == '/' && n < 4096 &&
            snprintf(path, sizeof path, "%.*s/.build-id/%.2s/%s.debug", (int)n, p, id, id + 2) < (int)sizeof path)
            f->better = access(path, R_OK) == 0;
        p += n + (p[n] == ':');
    }
    if (!f->better)
        f->better = sym_elf_debuglink_here(f->path, s->debug_path);
    return f->better;
}

/* Whether the trace's frames (n) name function. */
static bool known_names(const ltr_sym_frame *known, uint32_t n, const char *function)
{
    for (uint32_t i = 0; i < n; i++)
        if (known[i].function && !strcmp(known[i].function, function))
            return true;
    return false;
}

/* Whether this machine's names lv (k levels) say more than the trace's weak
 * ones (n frames, from a symbol table where it was recorded): a source file
 * (DWARF), or a function the trace did not name: where it had none, or a
 * fuller symbol table's (a debug file's .symtab, where the trace had the
 * .dynsym's nearest export: the weak name was kept). The same names again
 * (the same binary, still without DWARF) are not more: taken as this
 * machine's, they made every 'ltr symbolize' of a trace with such a module
 * append them again (perl, sqlite3, gcc: 210, 82, 1618 addresses a run). */
static int better_than_known(const sym_level *lv, size_t k, const ltr_sym_frame *known, uint32_t n)
{
    for (size_t i = 0; i < k; i++)
        if (lv[i].file || (lv[i].function && !known_names(known, n, lv[i].function)))
            return 1;
    return 0;
}

static void free_levels(sym_level *lv, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        free(lv[i].function);
        free(lv[i].file);
    }
}

/* The name process pid's perf map gives addr (a return address: the call
 * is the byte before it), the map read at the first need. */
static const char *perf_map_name(ltr_symbolizer *s, uint32_t pid, int ended, uint64_t addr)
{
    sym_proc *p = proc_of(s, pid);
    if (p && !p->jit_state) {
        char path[128], why[512] = "";
        p->jit_state = sym_perfmap_load(pid, ended, &p->jit, path, sizeof path, why, sizeof why);
        p->jit_state = p->jit_state ? p->jit_state : 1;
        p->jit_path = strdup(path);
        p->jit_why = strdup(why);
    }
    return p && p->jit_state == 1 ? sym_perfmap_find(p->jit, addr ? addr - 1 : 0) : NULL;
}

void ltr_sym_jit_path(uint32_t pid, char *out, size_t size) { snprintf(out, size, "[perf-%u.map]", pid); }

static bool is_jit_path(const char *path)
{
    unsigned pid;
    char end[8];
    return sscanf(path, "[perf-%u.ma%7s", &pid, end) == 2 && !strcmp(end, "p]");
}

/* The frame of addr of pid in no module, JIT code, named by the trace
 * (known, under ltr_sym_jit_path): 0 when it names none. With perf maps on,
 * the address waits for ltr_symbolizer_read_perf_maps. */
static int jit_resolve(ltr_symbolizer *s, uint32_t pid, uint64_t addr, uint32_t *n, size_t *first)
{
    char path[48];
    ltr_sym_jit_path(pid, path, sizeof path);
    sym_file *f = find_file(s, path, NULL, 0);
    sym_cached *c = f ? an_hmap_get(f->offsets, addr) : NULL;
    if (!c && s->perf_maps &&
        !ltr_reserve((void **)&s->jit_pending, &s->capjit_pending, s->njit_pending, sizeof *s->jit_pending, 256))
        s->jit_pending[s->njit_pending++] = (struct jit_pending){pid, addr};
    if (!c)
        return 0;
    *first = c->first;
    *n = c->n;
    return 1;
}

/* Names addr of pid from its perf map, as ltr_symbolize will give it:
 * the file under ltr_sym_jit_path (never opened), a frame of no module. */
static void jit_name(ltr_symbolizer *s, uint32_t pid, int ended, uint64_t addr)
{
    char path[48];
    ltr_sym_jit_path(pid, path, sizeof path);
    sym_file *f = find_file(s, path, NULL, 0);
    sym_cached *c = f ? an_hmap_get(f->offsets, addr) : NULL;
    const char *name = c ? NULL : perf_map_name(s, pid, ended, addr);
    if (!c && name && !f && (f = file_of(s, path, NULL, 0)))
        f->opened = 1; /* no ELF file to open, nor to list among the problems */
    ltr_sym_frame *fr = !c && name && f ? new_frames(s, 1) : NULL;
    if (fr) {
        fr->address = fr->offset = addr;
        fr->function = keep(s, strdup(name));
        if ((c = an_hmap_put(f->offsets, addr, NULL))) {
            c->first = (uint32_t)(fr - s->frames);
            c->n = 1;
            sym_proc *p = proc_of(s, pid);
            if (p)
                p->jit_named++;
        }
    }
}

void ltr_symbolizer_read_perf_maps(ltr_symbolizer *s, int (*ended)(void *ctx, uint32_t pid), void *ctx)
{
    settle(s);
    for (size_t i = 0; i < s->njit_pending; i++) {
        uint32_t pid = s->jit_pending[i].pid;
        const sym_proc *p = an_hmap_get(&s->procs, pid);
        jit_name(s, pid, p && !p->jit_state ? ended(ctx, pid) : 0, s->jit_pending[i].addr);
    }
    s->njit_pending = 0;
}

static size_t resolve(ltr_symbolizer *s, uint32_t pid, uint64_t ts, uint64_t addr, uint32_t *n)
{
    sym_mod *x = module_at(s, pid, ts, addr);
    size_t jit_first;
    if (!x && jit_resolve(s, pid, addr, n, &jit_first))
        return jit_first;
    sym_level lv[MAX_LEVELS];
    size_t k = 0;
    uint64_t vaddr = x ? addr - x->bias : addr;
    sym_cached *done = x ? an_hmap_get(x->file->offsets, vaddr) : NULL;
    if (done && !(done->n & KNOWN_WEAK)) { /* resolved for another process, or named by DWARF where recorded */
        *n = done->n;
        return done->first;
    }
    uint32_t weak_first = done ? done->first : 0, weak_n = done ? COUNT(done->n) : 0;
    if (weak_n && !x->file->opened && !may_do_better(s, x->file)) { /* this machine can add nothing */
        x->file->known_used = 1;
        *n = weak_n;
        return weak_first;
    }
    sym_elf *e = x ? elf_for(s, x->file, weak_n != 0) : NULL;
    if (e) /* a return address: the call is the instruction before it */
        k = sym_elf_resolve(e, vaddr ? vaddr - 1 : 0, lv, MAX_LEVELS);
    if (weak_n && !better_than_known(lv, k, s->frames + weak_first, weak_n)) { /* nothing better here: the trace's names */
        free_levels(lv, k);
        *n = weak_n;
        return weak_first;
    }
    if (weak_n)
        x->file->used = 1; /* this file named it: its problems and bareness are reported */
    size_t total = k ? k : 1;
    ltr_sym_frame *f = new_frames(s, total);
    if (!f) {
        free_levels(lv, k);
        *n = 0;
        return 0;
    }
    for (size_t i = 0; i < total; i++) {
        f[i].address = addr;
        f[i].module = x ? x->file->path : NULL;
        f[i].offset = vaddr;
        f[i].inlined = i + 1 < total;
        if (i < k) {
            f[i].function = keep(s, lv[i].function);
            f[i].file = keep(s, lv[i].file);
            f[i].line = lv[i].line;
        }
    }
    *n = (uint32_t)total;
    size_t first = (size_t)(f - s->frames);
    if (x && (done = an_hmap_put(x->file->offsets, vaddr, NULL))) {
        done->first = (uint32_t)first;
        done->n = (uint32_t)total;
    }
    return first;
}

size_t ltr_symbolize(ltr_symbolizer *s, uint32_t pid, uint64_t ts, uint64_t address,
                     ltr_sym_frame *out, size_t cap)
{
    settle(s);
    sym_proc *p = proc_of(s, pid);
    sym_cached *c = p && !p->has_unloads ? an_hmap_get(p->cache, address) : NULL;
    uint32_t first, n;
    if (c) {
        first = c->first;
        n = c->n;
    } else {
        first = (uint32_t)resolve(s, pid, ts, address, &n);
        n = COUNT(n);
        if (p && !p->has_unloads && (c = an_hmap_put(p->cache, address, NULL))) {
            c->first = first;
            c->n = n;
        }
    }
    if (cap == 0)
        return 0;
    if (n == 0) { /* out of memory: the bare address */
        memset(out, 0, sizeof *out);
        out->address = address;
        return 1;
    }
    size_t k = n < cap ? n : cap;
    memcpy(out, s->frames + first, k * sizeof *out);
    for (size_t i = 0; i < k; i++) /* frames of an offset are shared by every address that maps there */
        out[i].address = address;
    return k;
}

/* A name from a trace as it is shown (ltr_shown_text, no newline kept): no
 * name holds a control character, and a trace comes from elsewhere. out has
 * room for len + 1 bytes; returns the length. */
static size_t shown_text(const char *str, size_t len, char *out)
{
    size_t o = ltr_shown_text(str, len, out, false);
    out[o] = 0;
    return o;
}

/* str as the symbolizer keeps a known frame's (shown_text), once per text.
 * NULL for NULL; *ok = 0 when memory or the bound ran out. */
static const char *known_text(ltr_symbolizer *s, const char *str, int *ok)
{
    if (!str)
        return NULL;
    size_t raw = strlen(str);
    char *c = s->known_bytes + raw + 1 <= KNOWN_MAX_STRING_BYTES ? malloc(raw + 1) : NULL;
    if (!c) {
        *ok = 0;
        return NULL;
    }
    size_t len = shown_text(str, raw, c);
    uint64_t h = an_hash_bytes(AN_HASH_START, c, len);
    int created;
    known_str *e = an_hmap_put(&s->known_strs, h, &created);
    if (e && !created && !strcmp(e->text, c)) {
        free(c);
        return e->text;
    }
    if (e && !created)
        e = NULL; /* another text with that hash: kept apart, not found by it */
    s->known_bytes += len + 1;
    const char *k = keep(s, c);
    if (e)
        e->text = k;
    if (!k) {
        if (e)
            an_hmap_del(&s->known_strs, h);
        *ok = 0;
    }
    return k;
}

int ltr_symbolizer_add_known(ltr_symbolizer *s, const char *path, const uint8_t *build_id, size_t build_id_len,
                             uint64_t offset, const ltr_sym_frame *frames, size_t n)
{
    if (!n || n > MAX_LEVELS)
        return -EINVAL;
    if (s->known_frames + n > KNOWN_MAX_FRAMES)
        return -E2BIG;
    settle(s);
    sym_file *f = find_file(s, path, build_id, build_id_len);
    if (!f && s->nfiles >= KNOWN_MAX_FILES)
        return -E2BIG;
    if (!f)
        f = file_of(s, path, build_id, build_id_len);
    if (!f)
        return -ENOMEM;
    f->has_known = 1;
    int strong = 0;
    for (size_t i = 0; i < n; i++)
        strong |= frames[i].file != NULL;
    int created;
    sym_cached *c = an_hmap_put(f->offsets, offset, &created);
    if (!c)
        return -ENOMEM;
    /* the first wins, but for names from DWARF after a symbol table's (a
     * trace symbolized again once a debug file was there) */
    if (!created && !(strong && (c->n & KNOWN_WEAK)))
        return 0;
    sym_cached before = *c;
    ltr_sym_frame *out = new_frames(s, n);
    int ok = 1;
    for (size_t i = 0; out && i < n; i++)
        out[i] = (ltr_sym_frame){0, is_jit_path(path) ? NULL : f->path, offset,
                                 known_text(s, frames[i].function, &ok), known_text(s, frames[i].file, &ok),
                                 frames[i].line, i + 1 < n};
    c = an_hmap_get(f->offsets, offset);
    if (!out || !ok) {
        if (out)
            s->nframes -= n;
        if (created)
            an_hmap_del(f->offsets, offset);
        else
            *c = before;
        return ok ? -ENOMEM : -E2BIG;
    }
    s->known_frames += n;
    c->first = (uint32_t)(out - s->frames);
    c->n = (uint32_t)n | KNOWN | (strong ? 0 : KNOWN_WEAK);
    return 0;
}

void ltr_symbolizer_known_bare(ltr_symbolizer *s, const char *path, const uint8_t *build_id, size_t build_id_len)
{
    settle(s);
    sym_file *f = find_file(s, path, build_id, build_id_len);
    if (f)
        f->known_bare = 1; /* its entries made it, if they were taken */
}

static int has_no_symbols(sym_file *f)
{
    if (!f->syms_known) {
        f->no_syms = !sym_elf_has_symbols(f->elf);
        f->syms_known = 1;
    }
    return f->no_syms;
}

void ltr_symbolizer_each(ltr_symbolizer *s, ltr_sym_each_fn fn, void *ctx)
{
    settle(s);
    for (size_t i = 0; i < s->nfiles; i++) {
        sym_file *f = s->files[i];
        int bare_file = f->elf ? has_no_symbols(f) : f->known_bare;
        size_t pos = 0;
        const sym_cached *c;
        while ((c = an_hmap_next(f->offsets, &pos))) {
            if (c->n & KNOWN) /* the trace has it already */
                continue;
            const ltr_sym_frame *fr = s->frames + c->first;
            uint32_t n = COUNT(c->n);
            int named = 0;
            for (uint32_t k = 0; k < n; k++)
                named |= fr[k].function || fr[k].file;
            if (named)
                fn(ctx, f->path, f->build_id, f->build_id_len, bare_file, c->key, fr, n);
        }
    }
}

/* A problem is reported once a lookup needed the file, whoever opened it. */
static int reported(sym_file *f) { return f->used && f->problem; }

/* A file a lookup needed, opened fine, with nothing to name its functions
 * by; or not opened, its known frames taken, bare where they were named and
 * with no debug file here. */
static int bare(sym_file *f)
{
    if (!f->opened)
        return f->known_used && f->known_bare;
    if (!f->used || !f->elf || f->problem)
        return 0;
    return has_no_symbols(f);
}

/* The i-th file (from 0) that pred holds for, in the order modules first
 * named the files: the same order whether or not a trace's known frames
 * made some files first. NULL past the last. */
static sym_file *ranked(ltr_symbolizer *s, int (*pred)(sym_file *), size_t i)
{
    sym_file *best = NULL;
    size_t best_at = 0;
    for (size_t done = 0; done <= i; done++) { /* the next file after best in (rank, index) order */
        sym_file *next = NULL;
        size_t next_at = 0;
        for (size_t k = 0; k < s->nfiles; k++) {
            sym_file *f = s->files[k];
            int after = !best || f->rank > best->rank || (f->rank == best->rank && k > best_at);
            if (after && pred(f) && (!next || f->rank < next->rank || (f->rank == next->rank && k < next_at))) {
                next = f;
                next_at = k;
            }
        }
        if (!next)
            return NULL;
        best = next;
        best_at = next_at;
    }
    return best;
}

static size_t count(ltr_symbolizer *s, int (*pred)(sym_file *))
{
    settle(s);
    size_t n = 0;
    for (size_t i = 0; i < s->nfiles; i++)
        n += pred(s->files[i]) != 0;
    return n;
}

size_t ltr_symbolizer_problem_count(ltr_symbolizer *s) { return count(s, reported); }

void ltr_symbolizer_problem_at(ltr_symbolizer *s, size_t i, const char **path, const char **why)
{
    settle(s);
    sym_file *f = ranked(s, reported, i);
    *path = f ? f->path : NULL;
    *why = f ? f->problem : NULL;
}

size_t ltr_symbolizer_nosyms_count(ltr_symbolizer *s) { return count(s, bare); }

void ltr_symbolizer_nosyms_at(ltr_symbolizer *s, size_t i, const char **path, const uint8_t **build_id,
                              size_t *build_id_len)
{
    settle(s);
    sym_file *f = ranked(s, bare, i);
    *path = f ? f->path : NULL;
    *build_id = f ? f->build_id : NULL;
    *build_id_len = f ? f->build_id_len : 0;
}

void ltr_symbolizer_use_perf_maps(ltr_symbolizer *s, int on) { s->perf_maps = on; }

static int by_pid(const void *x, const void *y)
{
    const sym_proc *a = *(const sym_proc *const *)x, *b = *(const sym_proc *const *)y;
    return a->pid < b->pid ? -1 : a->pid > b->pid;
}

/* One process's note: its map refused, or what it named. */
static void perf_map_note(const sym_proc *p, ltr_sym_note_fn fn, void *ctx)
{
    char note[1024];
    const char *path = p->jit_path ? p->jit_path : "its perf map";
    size_t skipped = p->jit_state == 1 ? sym_perfmap_skipped(p->jit) : 0;
    char skip[160] = "";
    if (skipped)
        snprintf(skip, sizeof skip, " (%zu lines skipped: not 'START SIZE name' in hex, longer than 4160 bytes, "
                 "or past the %u entries read)", skipped, SYM_PERFMAP_MAX_ENTRIES);
    if (p->jit_state == 1 && p->jit_named)
        snprintf(note, sizeof note, "JIT frames of process %llu named from %s: %zu address%s%s",
                 (unsigned long long)p->pid, path, p->jit_named, p->jit_named == 1 ? "" : "es", skip);
    else if (p->jit_state == 1)
        snprintf(note, sizeof note, "%s names none of process %llu's frames outside its modules (%zu entries)%s",
                 path, (unsigned long long)p->pid, sym_perfmap_entries(p->jit), skip);
    else
        snprintf(note, sizeof note, "%s not read: %s; the JIT frames of process %llu stay addresses", path,
                 p->jit_why ? p->jit_why : "out of memory", (unsigned long long)p->pid);
    fn(ctx, note);
}

void ltr_symbolizer_perf_map_notes(ltr_symbolizer *s, ltr_sym_note_fn fn, void *ctx)
{
    settle(s);
    size_t pos = 0, n = 0;
    const sym_proc *p;
    while ((p = an_hmap_next(&s->procs, &pos)))
        n += p->jit_state != 0 && p->jit_state != -ENOENT;
    const sym_proc **v = n ? malloc(n * sizeof *v) : NULL;
    if (!v)
        return;
    n = 0;
    for (pos = 0; (p = an_hmap_next(&s->procs, &pos));)
        if (p->jit_state != 0 && p->jit_state != -ENOENT)
            v[n++] = p;
    qsort(v, n, sizeof *v, by_pid);
    for (size_t i = 0; i < n; i++)
        perf_map_note(v[i], fn, ctx);
    free(v);
}
