/*
 * format/symchunk.c — SYMBOLS chunk payloads (symchunk.h), built and parsed.
 *
 *   uvar string_count, then each string: uvar length (at most 1 MiB), bytes
 *   module groups until the end of the payload:
 *     uvar path (a string's index), u8 build-id length (0..64), its bytes,
 *     u8 flags (LTR_SYMMODULE_*: bit 0 bare; others 0),
 *     uvar entry_count (at least 1), then each entry, by rising address:
 *       uvar address - the previous entry's (the first: from 0),
 *       u8 frame count (1..64), then each frame, innermost first:
 *         uvar function, uvar file (0 = unknown, else a string's index + 1),
 *         uvar line
 *
 * Names repeat across addresses (a function holds many return addresses,
 * a file many functions), so each payload stores each string once.
 */
#include "format/symchunk.h"
#include "base/hmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct sc_mod {
    char *path;
    uint8_t id[64];
    size_t idlen;
    uint32_t path_str;
    unsigned flags;
} sc_mod;

typedef struct sc_entry {
    uint32_t mod;
    uint32_t first, n; /* in frames */
    uint64_t offset;
} sc_entry;

typedef struct sc_frame {
    uint32_t function, file; /* 0 = none, else string id + 1 */
    uint32_t line;
} sc_frame;

typedef struct sc_str {
    char *s;
    size_t len;
} sc_str;

typedef struct sc_hashed {
    uint64_t key;
    uint32_t id;
} sc_hashed;

struct ltr_symchunk_builder {
    sc_mod *mods;
    size_t nmods;
    sc_entry *entries;
    size_t nentries, capentries;
    sc_frame *frames;
    size_t nframes, capframes;
    sc_str *strs;
    size_t nstrs, capstrs, str_bytes;
    an_hmap by_hash; /* FNV-1a of a string -> its id (a colliding other string is kept apart) */
    an_hmap mod_index; /* FNV-1a of path and build-id -> a module's index (the first of that hash) */
};

static int grow(void **v, size_t *cap, size_t need, size_t esize)
{
    if (need <= *cap)
        return 0;
    size_t cap2 = *cap ? *cap : 64;
    while (cap2 < need)
        cap2 *= 2;
    void *p = realloc(*v, cap2 * esize);
    if (!p)
        return -ENOMEM;
    *v = p;
    *cap = cap2;
    return 0;
}

ltr_symchunk_builder *ltr_symchunk_builder_new(void)
{
    ltr_symchunk_builder *b = calloc(1, sizeof *b);
    if (b) {
        an_hmap_init(&b->by_hash, sizeof(sc_hashed));
        an_hmap_init(&b->mod_index, sizeof(sc_hashed));
    }
    return b;
}

void ltr_symchunk_builder_free(ltr_symchunk_builder *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->nmods; i++)
        free(b->mods[i].path);
    for (size_t i = 0; i < b->nstrs; i++)
        free(b->strs[i].s);
    free(b->mods);
    free(b->entries);
    free(b->frames);
    free(b->strs);
    an_hmap_free(&b->by_hash);
    an_hmap_free(&b->mod_index);
    free(b);
}

static uint64_t fnv1a(const char *s, size_t n) { return an_hash_bytes(AN_HASH_START, s, n); }

/* The id + 1 of s (cut at LTR_SYMCHUNK_MAX_STRING), 0 for NULL; -1 without
 * memory, -2 past the bound of all strings' bytes. */
static long intern(ltr_symchunk_builder *b, const char *s)
{
    if (!s)
        return 0;
    size_t n = strnlen(s, LTR_SYMCHUNK_MAX_STRING + 1);
    if (n > LTR_SYMCHUNK_MAX_STRING) { /* cut where a character starts, not inside one */
        n = LTR_SYMCHUNK_MAX_STRING;
        while (n > 0 && ((uint8_t)s[n] & 0xc0) == 0x80)
            n--;
    }
    uint64_t h = fnv1a(s, n);
    int created;
    sc_hashed *e = an_hmap_put(&b->by_hash, h, &created);
    if (e && !created) {
        const sc_str *old = &b->strs[e->id];
        if (old->len == n && !memcmp(old->s, s, n))
            return (long)e->id + 1;
        e = NULL; /* a collision: this one is stored apart, never found by hash */
    }
    if (b->str_bytes + n + 1 > LTR_SYMCHUNK_MAX_ALL_STRING_BYTES)
        return -2;
    if (grow((void **)&b->strs, &b->capstrs, b->nstrs + 1, sizeof *b->strs))
        return -1;
    char *c = malloc(n + 1);
    if (!c)
        return -1;
    memcpy(c, s, n);
    c[n] = 0;
    b->strs[b->nstrs] = (sc_str){c, n};
    b->str_bytes += n + 1;
    if (e)
        e->id = (uint32_t)b->nstrs;
    return (long)++b->nstrs;
}

static int is_mod(const sc_mod *m, const char *path, const uint8_t *id, size_t idlen)
{
    return m->idlen == idlen && (!idlen || !memcmp(m->id, id, idlen)) && !strcmp(m->path, path);
}

/* The index of the module, made if new; -1 without memory, -2 past the bounds. */
static long module_of(ltr_symchunk_builder *b, const char *path, const uint8_t *id, size_t idlen, unsigned flags)
{
    uint64_t h = an_hash_bytes(fnv1a(path, strlen(path)), id, idlen);
    int created;
    sc_hashed *e = an_hmap_put(&b->mod_index, h, &created);
    long found = -1;
    if (e && !created && is_mod(&b->mods[e->id], path, id, idlen))
        found = e->id;
    for (size_t i = 0; found < 0 && e && !created && i < b->nmods; i++) /* a hash two modules share */
        if (is_mod(&b->mods[i], path, id, idlen))
            found = (long)i;
    if (found >= 0) {
        b->mods[found].flags |= flags;
        return found;
    }
    if (b->nmods >= LTR_SYMCHUNK_MAX_MODULES)
        return -2;
    long ps = intern(b, path);
    if (ps == -2)
        return -2;
    sc_mod *v = realloc(b->mods, (b->nmods + 1) * sizeof *v);
    if (ps <= 0 || !v)
        return -1;
    b->mods = v;
    sc_mod *m = &v[b->nmods];
    memset(m, 0, sizeof *m);
    if (!(m->path = strdup(path)))
        return -1;
    if (idlen)
        memcpy(m->id, id, idlen);
    m->idlen = idlen;
    m->path_str = (uint32_t)(ps - 1);
    m->flags = flags;
    if (e && created)
        e->id = (uint32_t)b->nmods;
    return (long)b->nmods++;
}

int ltr_symchunk_add(ltr_symchunk_builder *b, const ltr_symmodule *md, uint64_t offset, const ltr_symframe *frames,
                     size_t n)
{
    if (!n || n > LTR_SYMCHUNK_MAX_FRAMES || md->build_id_len > 64 || !md->path)
        return -EINVAL;
    if (b->nframes + n > LTR_SYMCHUNK_MAX_ALL_FRAMES)
        return -E2BIG;
    long mod = module_of(b, md->path, md->build_id, md->build_id_len, md->flags & LTR_SYMMODULE_BARE);
    if (mod == -2)
        return -E2BIG;
    if (mod < 0 || grow((void **)&b->entries, &b->capentries, b->nentries + 1, sizeof *b->entries) ||
        grow((void **)&b->frames, &b->capframes, b->nframes + n, sizeof *b->frames))
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        long fn = intern(b, frames[i].function), file = intern(b, frames[i].file);
        if (fn == -2 || file == -2)
            return -E2BIG;
        if (fn < 0 || file < 0)
            return -ENOMEM;
        b->frames[b->nframes + i] = (sc_frame){(uint32_t)fn, (uint32_t)file, frames[i].line};
    }
    b->entries[b->nentries++] = (sc_entry){(uint32_t)mod, (uint32_t)b->nframes, (uint32_t)n, offset};
    b->nframes += n;
    return 0;
}

size_t ltr_symchunk_entries(const ltr_symchunk_builder *b) { return b->nentries; }

static int by_module_offset(const void *x, const void *y)
{
    const sc_entry *a = x, *b = y;
    if (a->mod != b->mod)
        return a->mod < b->mod ? -1 : 1;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

static void put_uvar(ltr_bytes *o, uint64_t v)
{
    uint8_t *p = ltr_bytes_grow(o, 10);
    if (p)
        o->len -= 10 - ltr_put_uvar(p, v);
}

/* One part: entries [from, to); local[i] is string i's index + 1 in this
 * part, stamped: only entries (stamp == part) count. */
typedef struct sc_part {
    uint32_t *local, *stamp;
    uint32_t *order; /* string ids in local order */
    size_t nlocal;
    uint32_t part;
} sc_part;

static uint32_t local_ref(sc_part *p, uint32_t ref)
{
    if (!ref)
        return 0;
    uint32_t id = ref - 1;
    if (p->stamp[id] != p->part) {
        p->stamp[id] = p->part;
        p->local[id] = (uint32_t)p->nlocal;
        p->order[p->nlocal++] = id;
    }
    return p->local[id] + 1;
}

/* Serializes entries [from, to) of the sorted list into o. */
static void write_part(ltr_symchunk_builder *b, sc_part *p, size_t from, size_t to, ltr_bytes *o)
{
    ltr_bytes body = {0};
    p->part++;
    p->nlocal = 0;
    for (size_t i = from; i < to;) {
        const sc_mod *m = &b->mods[b->entries[i].mod];
        size_t end = i;
        while (end < to && b->entries[end].mod == b->entries[i].mod)
            end++;
        put_uvar(&body, local_ref(p, m->path_str + 1) - 1);
        ltr_bytes_put_u8(&body, (uint8_t)m->idlen);
        ltr_bytes_put_mem(&body, m->id, m->idlen);
        ltr_bytes_put_u8(&body, (uint8_t)m->flags);
        put_uvar(&body, end - i);
        uint64_t prev = 0;
        for (; i < end; i++) {
            const sc_entry *e = &b->entries[i];
            put_uvar(&body, e->offset - prev);
            prev = e->offset;
            ltr_bytes_put_u8(&body, (uint8_t)e->n);
            for (uint32_t k = 0; k < e->n; k++) {
                const sc_frame *f = &b->frames[e->first + k];
                put_uvar(&body, local_ref(p, f->function));
                put_uvar(&body, local_ref(p, f->file));
                put_uvar(&body, f->line);
            }
        }
    }
    put_uvar(o, p->nlocal);
    for (size_t k = 0; k < p->nlocal; k++) {
        const sc_str *s = &b->strs[p->order[k]];
        put_uvar(o, s->len);
        ltr_bytes_put_mem(o, s->s, s->len);
    }
    ltr_bytes_put_mem(o, body.data, body.len);
    o->failed |= body.failed;
    ltr_bytes_free(&body);
}

/* Bytes an entry may take at most, its strings not counted. */
static size_t entry_bound(const sc_entry *e) { return 10 + 1 + 10 + 67 + 1 + e->n * 25u; }

/* Entries by file and address, an address given twice kept once (the
 * parser takes a repeat for damage). */
static void sort_entries(ltr_symchunk_builder *b)
{
    if (b->nentries)
        qsort(b->entries, b->nentries, sizeof *b->entries, by_module_offset);
    size_t kept = 0;
    for (size_t i = 0; i < b->nentries; i++)
        if (!kept || by_module_offset(&b->entries[kept - 1], &b->entries[i]))
            b->entries[kept++] = b->entries[i];
    b->nentries = kept;
}

/* Where the part that starts at entry i ends: before the entry that could
 * take it past the target (each string counted once in the part). */
static size_t part_end(const ltr_symchunk_builder *b, sc_part *p, size_t i)
{
    size_t size = 0, end = i;
    uint32_t seen = ++p->part;
    for (; end < b->nentries; end++) {
        const sc_entry *e = &b->entries[end];
        size_t add = entry_bound(e) + b->strs[b->mods[e->mod].path_str].len;
        for (uint32_t k = 0; k < e->n; k++) {
            const sc_frame *f = &b->frames[e->first + k];
            uint32_t refs[2] = {f->function, f->file};
            for (int r = 0; r < 2; r++)
                if (refs[r] && p->stamp[refs[r] - 1] != seen) {
                    p->stamp[refs[r] - 1] = seen;
                    add += 10 + b->strs[refs[r] - 1].len;
                }
        }
        if (end > i && size + add > LTR_SYMCHUNK_TARGET)
            break;
        size += add;
    }
    return end;
}

int ltr_symchunk_build(ltr_symchunk_builder *b, ltr_bytes **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    sort_entries(b);
    sc_part p = {calloc(b->nstrs + 1, sizeof *p.local), calloc(b->nstrs + 1, sizeof *p.stamp),
                 calloc(b->nstrs + 1, sizeof *p.order), 0, 0};
    ltr_bytes *v = NULL;
    size_t n = 0;
    int rc = p.local && p.stamp && p.order ? 0 : -ENOMEM;
    for (size_t i = 0, end; !rc && i < b->nentries; i = end) {
        end = part_end(b, &p, i);
        ltr_bytes *v2 = realloc(v, (n + 1) * sizeof *v);
        if (!v2) {
            rc = -ENOMEM;
            break;
        }
        v = v2;
        v[n] = (ltr_bytes){0};
        write_part(b, &p, i, end, &v[n]);
        if (v[n++].failed)
            rc = -ENOMEM;
    }
    free(p.local);
    free(p.stamp);
    free(p.order);
    for (size_t i = 0; rc && i < n; i++)
        ltr_bytes_free(&v[i]);
    if (rc) {
        free(v);
        return rc;
    }
    *out = v;
    *count = n;
    return 0;
}

/* Bounds-checked reading of a payload: any read past the end sets bad. */
typedef struct sc_in {
    const uint8_t *p;
    size_t len, pos;
    int bad;
} sc_in;

static uint64_t in_uvar(sc_in *in)
{
    uint64_t v = 0;
    size_t k = in->bad ? 0 : ltr_get_uvar(in->p + in->pos, in->len - in->pos, &v);
    if (!k)
        in->bad = 1;
    in->pos += k;
    return v;
}

static uint8_t in_u8(sc_in *in)
{
    if (in->bad || in->pos >= in->len) {
        in->bad = 1;
        return 0;
    }
    return in->p[in->pos++];
}

/* A string reference (0 = none, else index + 1) to its string; bad if out of range. */
static const char *in_ref(sc_in *in, char **strs, uint64_t n)
{
    uint64_t r = in_uvar(in);
    if (r > n)
        in->bad = 1;
    return in->bad || !r ? NULL : strs[r - 1];
}

static long parse_modules(sc_in *in, char **strs, uint64_t nstrs, ltr_symchunk_fn fn, void *ctx)
{
    long count = 0;
    ltr_symframe fr[LTR_SYMCHUNK_MAX_FRAMES];
    while (!in->bad && in->pos < in->len) {
        uint64_t path = in_uvar(in);
        size_t idlen = in_u8(in);
        if (path >= nstrs || idlen > 64 || in->len - in->pos < idlen)
            return -1;
        const uint8_t *id = in->p + in->pos;
        in->pos += idlen;
        unsigned flags = in_u8(in);
        if (flags & ~LTR_SYMMODULE_BARE)
            return -1; /* a flag this reader does not know the meaning of */
        ltr_symmodule md = {strs[path], idlen ? id : NULL, idlen, flags};
        uint64_t entries = in_uvar(in), offset = 0;
        if (!entries)
            in->bad = 1;
        for (uint64_t e = 0; !in->bad && e < entries; e++) {
            uint64_t delta = in_uvar(in);
            size_t n = in_u8(in);
            if ((e && !delta) || offset + delta < offset || !n || n > LTR_SYMCHUNK_MAX_FRAMES)
                return -1;
            offset += delta;
            for (size_t k = 0; k < n; k++) {
                fr[k].function = in_ref(in, strs, nstrs);
                fr[k].file = in_ref(in, strs, nstrs);
                uint64_t line = in_uvar(in);
                fr[k].line = line > UINT32_MAX ? 0 : (uint32_t)line;
                if (line > UINT32_MAX)
                    in->bad = 1;
            }
            if (in->bad)
                return -1;
            fn(ctx, &md, offset, fr, n);
            count++;
        }
    }
    return in->bad ? -1 : count;
}

long ltr_symchunk_parse(const uint8_t *p, size_t len, ltr_symchunk_fn fn, void *ctx)
{
    sc_in in = {p, len, 0, 0};
    uint64_t nstrs = in_uvar(&in);
    /* every string takes a byte at least: a count past the payload is damage, not an allocation */
    if (in.bad || nstrs > len)
        return -1;
    char **strs = calloc(nstrs ? nstrs : 1, sizeof *strs);
    if (!strs)
        return -1;
    long rc = 0;
    for (uint64_t i = 0; i < nstrs && !rc; i++) {
        uint64_t n = in_uvar(&in);
        if (in.bad || n > LTR_SYMCHUNK_MAX_STRING || in.len - in.pos < n || memchr(in.p + in.pos, 0, n))
            rc = -1;
        else if (!(strs[i] = strndup((const char *)in.p + in.pos, n)))
            rc = -1;
        in.pos += n;
    }
    if (!rc)
        rc = parse_modules(&in, strs, nstrs, fn, ctx);
    for (uint64_t i = 0; i < nstrs; i++)
        free(strs[i]);
    free(strs);
    return rc;
}
