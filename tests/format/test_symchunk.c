/*
 * tests/format/test_symchunk.c — SYMBOLS chunk payloads (format/symchunk.c):
 * every entry comes back as given (inlined frames, unknown fields, build-ids,
 * several files, addresses given out of order or twice), names are stored
 * once per payload, a large set is split into payloads under the target
 * that each parse alone, and a damaged payload is refused, never read
 * past its end.
 */
#include "format/symchunk.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

typedef struct got {
    char path[64], fn[3][64], file[3][64];
    size_t fn_len[3];
    int has_fn[3], has_file[3];
    uint8_t id[64];
    size_t idlen, n;
    unsigned flags;
    uint64_t offset;
    uint32_t line[3];
} got;

typedef struct sink {
    got *v;
    size_t n, cap;
} sink;

static void take(void *ctx, const ltr_symmodule *m, uint64_t offset, const ltr_symframe *frames, size_t n)
{
    sink *s = ctx;
    const char *path = m->path;
    const uint8_t *id = m->build_id;
    size_t idlen = m->build_id_len;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        assert_non_null(s->v);
    }
    got *g = &s->v[s->n++];
    memset(g, 0, sizeof *g);
    snprintf(g->path, sizeof g->path, "%s", path);
    if (idlen)
        memcpy(g->id, id, idlen);
    g->idlen = idlen;
    g->flags = m->flags;
    g->offset = offset;
    g->n = n;
    for (size_t i = 0; i < n && i < 3; i++) {
        g->has_fn[i] = frames[i].function != NULL;
        g->has_file[i] = frames[i].file != NULL;
        snprintf(g->fn[i], sizeof g->fn[i], "%s", frames[i].function ? frames[i].function : "");
        g->fn_len[i] = frames[i].function ? strlen(frames[i].function) : 0;
        snprintf(g->file[i], sizeof g->file[i], "%s", frames[i].file ? frames[i].file : "");
        g->line[i] = frames[i].line;
    }
}

static int add(ltr_symchunk_builder *b, const char *path, const uint8_t *id, size_t idlen, uint64_t offset,
               const ltr_symframe *frames, size_t n)
{
    ltr_symmodule m = {path, id, idlen, 0};
    return ltr_symchunk_add(b, &m, offset, frames, n);
}

static void build_one(ltr_symchunk_builder *b, ltr_bytes **parts, size_t *n)
{
    assert_int_equal(ltr_symchunk_build(b, parts, n), 0);
}

static void free_parts(ltr_bytes *parts, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ltr_bytes_free(&parts[i]);
    free(parts);
}

static void entries_come_back(void **state)
{
    (void)state;
    ltr_symchunk_builder *b = ltr_symchunk_builder_new();
    const uint8_t id[20] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    ltr_symframe inl[3] = {{"std::vector<int>::push_back", "stl_vector.h", 1287},
                           {"fill", "prog.c", 40},
                           {"main", "prog.c", 12}};
    ltr_symframe one = {"malloc", NULL, 0}, none_file = {NULL, "x.c", 7};
    /* out of order, two files, one address given twice (kept once) */
    assert_int_equal(add(b, "/usr/bin/prog", id, 20, 0x1234, inl, 3), 0);
    ltr_symmodule bare = {"/lib/libc.so.6", NULL, 0, LTR_SYMMODULE_BARE};
    assert_int_equal(ltr_symchunk_add(b, &bare, 0x90000, &one, 1), 0);
    assert_int_equal(add(b, "/usr/bin/prog", id, 20, 0x1000, &none_file, 1), 0);
    assert_int_equal(add(b, "/usr/bin/prog", id, 20, 0x1000, &none_file, 1), 0);
    assert_int_equal(add(b, "/usr/bin/prog", id, 20, 0x1, inl, 0), -EINVAL);
    assert_int_equal(add(b, "/usr/bin/prog", id, 65, 0x1, inl, 1), -EINVAL);
    ltr_bytes *parts;
    size_t n;
    build_one(b, &parts, &n);
    assert_int_equal(n, 1);
    sink s = {0};
    assert_int_equal(ltr_symchunk_parse(parts[0].data, parts[0].len, take, &s), 3);
    assert_int_equal(s.n, 3);
    /* by file (in the order first given), then by address */
    assert_string_equal(s.v[0].path, "/usr/bin/prog");
    assert_int_equal(s.v[0].offset, 0x1000);
    assert_int_equal(s.v[0].has_fn[0], 0);
    assert_string_equal(s.v[0].file[0], "x.c");
    assert_int_equal(s.v[0].line[0], 7);
    assert_int_equal(s.v[1].offset, 0x1234);
    assert_int_equal(s.v[1].n, 3);
    assert_int_equal(s.v[1].idlen, 20);
    assert_memory_equal(s.v[1].id, id, 20);
    assert_string_equal(s.v[1].fn[0], "std::vector<int>::push_back");
    assert_string_equal(s.v[1].file[1], "prog.c");
    assert_int_equal(s.v[1].line[2], 12);
    assert_string_equal(s.v[2].path, "/lib/libc.so.6");
    assert_int_equal(s.v[2].idlen, 0);
    assert_int_equal(s.v[2].flags, LTR_SYMMODULE_BARE);
    assert_int_equal(s.v[1].flags, 0);
    assert_string_equal(s.v[2].fn[0], "malloc");
    assert_int_equal(s.v[2].has_file[0], 0);
    /* "prog.c" twice, "/usr/bin/prog" as a path and nowhere else: each stored once */
    const uint8_t *p = parts[0].data;
    size_t len = parts[0].len, count = 0;
    for (const uint8_t *q = p; (q = memmem(q, len - (size_t)(q - p), "prog.c", 6)); q++)
        count++;
    assert_int_equal(count, 1);
    free(s.v);
    free_parts(parts, n);
    ltr_symchunk_builder_free(b);
}

/* Nothing named: no payload (a program that allocated nothing). */
static void empty_builds_nothing(void **state)
{
    (void)state;
    ltr_symchunk_builder *b = ltr_symchunk_builder_new();
    ltr_bytes *parts;
    size_t n = 7;
    build_one(b, &parts, &n);
    assert_int_equal(n, 0);
    free_parts(parts, n);
    ltr_symchunk_builder_free(b);
}

/* A name past the longest kept is cut where a character starts. */
static void long_names_cut_on_characters(void **state)
{
    (void)state;
    ltr_symchunk_builder *b = ltr_symchunk_builder_new();
    size_t len = LTR_SYMCHUNK_MAX_STRING + 100;
    char *name = malloc(len + 1);
    memset(name, 'a', len);
    name[len] = 0;
    memcpy(name + LTR_SYMCHUNK_MAX_STRING - 1, "\xc3\xa9", 2); /* é across the limit */
    ltr_symframe f = {name, NULL, 0};
    assert_int_equal(add(b, "/m", NULL, 0, 16, &f, 1), 0);
    ltr_bytes *parts;
    size_t n;
    build_one(b, &parts, &n);
    sink s = {0};
    assert_int_equal(ltr_symchunk_parse(parts[0].data, parts[0].len, take, &s), 1);
    assert_int_equal(s.v[0].fn_len[0], LTR_SYMCHUNK_MAX_STRING - 1); /* before the é, not in it */
    free(s.v);
    free(name);
    free_parts(parts, n);
    ltr_symchunk_builder_free(b);
}

/* Long names past the target: several payloads, each whole on its own. */
static void large_sets_split(void **state)
{
    (void)state;
    ltr_symchunk_builder *b = ltr_symchunk_builder_new();
    enum { LONG = 4195 };
    char *name = malloc(LONG + 1);
    size_t total = 6000;
    for (size_t i = 0; i < total; i++) {
        char head[32];
        int k = snprintf(head, sizeof head, "f%zu_", i);
        memset(name, 'a' + (int)(i % 26), LONG);
        memcpy(name, head, (size_t)k);
        name[LONG] = 0;
        ltr_symframe f = {name, "big.c", (uint32_t)i};
        assert_int_equal(add(b, i % 2 ? "/a" : "/b", NULL, 0, 16 * i, &f, 1), 0);
    }
    free(name);
    ltr_bytes *parts;
    size_t n;
    build_one(b, &parts, &n);
    assert_true(n >= 2); /* 6000 names of 4 KiB: 24 MiB */
    sink s = {0};
    for (size_t i = 0; i < n; i++) {
        assert_true(parts[i].len <= LTR_SYMCHUNK_TARGET + LONG + 256);
        long rc = ltr_symchunk_parse(parts[i].data, parts[i].len, take, &s);
        assert_true(rc > 0);
    }
    assert_int_equal(s.n, total);
    for (size_t i = 0; i < s.n; i++) {
        assert_int_equal(s.v[i].fn_len[0], LONG);
        assert_int_equal(strtoul(s.v[i].fn[0] + 1, NULL, 10), s.v[i].line[0]);
        assert_int_equal(s.v[i].line[0] * 16u, s.v[i].offset);
    }
    free(s.v);
    free_parts(parts, n);
    ltr_symchunk_builder_free(b);
}

/* Every cut of a payload and every byte flipped: refused or fewer entries,
 * never more, never a read past its end (ASan watches). */
static void damage_is_refused(void **state)
{
    (void)state;
    ltr_symchunk_builder *b = ltr_symchunk_builder_new();
    ltr_symframe f[2] = {{"inner", "a.c", 1}, {"outer", "b.c", 2}};
    for (uint64_t i = 0; i < 20; i++)
        assert_int_equal(add(b, "/m", (const uint8_t *)"\1\2\3\4", 4, 100 + 8 * i, f, 2), 0);
    ltr_bytes *parts;
    size_t n;
    build_one(b, &parts, &n);
    sink s = {0};
    for (size_t cut = 0; cut < parts[0].len; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1);
        memcpy(copy, parts[0].data, cut);
        s.n = 0;
        long rc = ltr_symchunk_parse(copy, cut, take, &s);
        assert_true(rc == -1 || (rc >= 0 && rc < 20));
        free(copy);
    }
    for (size_t at = 0; at < parts[0].len; at++) {
        uint8_t *copy = malloc(parts[0].len);
        memcpy(copy, parts[0].data, parts[0].len);
        copy[at] ^= 0xff;
        s.n = 0;
        long rc = ltr_symchunk_parse(copy, parts[0].len, take, &s);
        assert_true(rc <= 20 && (rc < 0 || (size_t)rc == s.n));
        free(copy);
    }
    /* a string count past the payload is damage, not a huge allocation */
    const uint8_t huge[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
    assert_int_equal(ltr_symchunk_parse(huge, sizeof huge, take, &s), -1);
    free(s.v);
    free_parts(parts, n);
    ltr_symchunk_builder_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(entries_come_back),
        cmocka_unit_test(empty_builds_nothing),
        cmocka_unit_test(long_names_cut_on_characters),
        cmocka_unit_test(large_sets_split),
        cmocka_unit_test(damage_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
