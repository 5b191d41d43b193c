/*
 * tests/e2e/test_rust.c — Rust programs symbolized like C++ ones, end to
 * end: tests/programs/rust/leak.rs (three known leaks) built by CMake with
 * rustc in both symbol manglings (legacy, v0), recorded with `ltr record`, read back with
 * `ltr analyze --format json`. For each build: each leak's stack holds the
 * exact bytes and count, its first frame in leak.rs is the leaking function,
 * demangled, at the line of the leak, right below an inlined frame of the
 * library code it inlined (Box::new, Vec::with_capacity); and no frame of the
 * program's own module keeps a mangled name or a legacy escape; the text
 * report, folded stacks and pprof hide the standard library's frames at both
 * ends (alloc::alloc..., std::rt::lang_start...). Without rustc
 * the test fails and says what to install.
 */
#include "util/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define MAX_FRAMES 256

/* ---- just enough JSON: the frames of ltr's analysis output -------------- */

typedef struct frame {
    char *function, *file, *module; /* NULL for JSON null */
    long long line;
    int inlined;
} frame;

typedef struct stack {
    char type[8];
    long long bytes, count;
    frame f[MAX_FRAMES];
    size_t n;
} stack;

/* The end of the string, object or array that starts at p (strings inside skipped). */
static const char *json_end(const char *p)
{
    int depth = 0, in_string = 0;
    for (; *p; p++) {
        if (in_string) {
            if (*p == '\\' && p[1])
                p++;
            else if (*p == '"')
                in_string = 0;
        } else if (*p == '"')
            in_string = 1;
        else if (*p == '{' || *p == '[')
            depth++;
        else if ((*p == '}' || *p == ']') && --depth == 0)
            return p + 1;
        if (!in_string && depth == 0)
            return p + 1; /* a string at the top */
    }
    return p;
}

/* Where the value of "key" starts in [p, end), or NULL. */
static const char *value_of(const char *p, const char *end, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *v = strstr(p, pat);
    return v && v < end ? v + strlen(pat) : NULL;
}

/* The string value of key, unescaped (\" \\ \/ only: ltr writes others as \u00XX,
 * which names here never hold), malloc'd; NULL for null or absent. */
static char *string_of(const char *p, const char *end, const char *key)
{
    const char *v = value_of(p, end, key);
    if (!v || *v != '"')
        return NULL;
    const char *close = json_end(v) - 1;
    char *s = malloc((size_t)(close - v)), *o = s;
    assert_non_null(s);
    for (v++; v < close; v++)
        *o++ = *v == '\\' ? *++v : *v;
    *o = 0;
    return s;
}

static long long number_of(const char *p, const char *end, const char *key)
{
    const char *v = value_of(p, end, key);
    return v && *v != 'n' ? strtoll(v, NULL, 10) : -1;
}

/* The frame object at p ('{'); returns its end. */
static const char *read_frame(const char *p, frame *f)
{
    const char *end = json_end(p);
    f->function = string_of(p, end, "function");
    f->file = string_of(p, end, "file");
    f->module = string_of(p, end, "module");
    f->line = number_of(p, end, "line");
    const char *in = value_of(p, end, "inlined");
    f->inlined = in && !strncmp(in, "true", 4);
    return end;
}

static void free_frame(frame *f)
{
    free(f->function);
    free(f->file);
    free(f->module);
}

/* The stack object at p ('{'); returns its end. */
static const char *read_stack(const char *p, stack *s)
{
    const char *end = json_end(p);
    char *type = string_of(p, end, "type");
    snprintf(s->type, sizeof s->type, "%s", type ? type : "");
    free(type);
    s->bytes = number_of(p, end, "bytes");
    s->count = number_of(p, end, "count");
    s->n = 0;
    const char *f = value_of(p, end, "frames");
    assert_true(f && *f == '[');
    for (f++; *f == '{' && s->n < MAX_FRAMES; f += *f == ',')
        f = read_frame(f, &s->f[s->n++]);
    return end;
}

static void free_stack(stack *s)
{
    for (size_t i = 0; i < s->n; i++)
        free_frame(&s->f[i]);
}

/* ---- the checks ------------------------------------------------------------ */

static int ends_with(const char *s, const char *tail)
{
    size_t a = s ? strlen(s) : 0, b = strlen(tail);
    return s && a >= b && !strcmp(s + a - b, tail);
}

/* The index of the first frame in leak.rs, or -1. */
static long first_rust_frame(const stack *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (ends_with(s->f[i].file, "/leak.rs"))
            return (long)i;
    return -1;
}

typedef struct leak {
    const char *function; /* as demangled in this build */
    const char *marker;   /* the comment on the leaking line of leak.rs */
    long long bytes, count;
    const char *inlined_above; /* in the name of the inlined frame right above */
    int outlined;         /* the function is #[inline(never)]: a frame of its own */
} leak;

/* The AIFO stack whose first frame in leak.rs is l->function, checked. */
static void check_leak(const char *json, const char *prog, const leak *l)
{
    char src[4096];
    snprintf(src, sizeof src, "%s/tests/programs/rust/leak.rs", getenv("LTR_SOURCE_DIR"));
    long long want_line = tu_source_line(src, l->marker);
    assert_true(want_line > 0);
    const char *p = value_of(json, json + strlen(json), "stacks");
    const char *end = value_of(json, json + strlen(json), "most_calls");
    assert_true(p && end && *p == '[');
    int found = 0;
    static stack s;
    for (p++; *p == '{' && p < end && !found; p += *p == ',') {
        p = read_stack(p, &s);
        long i = first_rust_frame(&s);
        if (strcmp(s.type, "AIFO") || i < 0 || !s.f[i].function || strcmp(s.f[i].function, l->function)) {
            free_stack(&s);
            continue;
        }
        found = 1;
        if (s.bytes != l->bytes || s.count != l->count || s.f[i].line != want_line)
            fail_msg("%s: %lld bytes in %lld, line %lld; expected %lld in %lld, line %lld", l->function, s.bytes,
                     s.count, s.f[i].line, l->bytes, l->count, want_line);
        if (l->outlined)
            assert_false(s.f[i].inlined);
        assert_true(i > 0); /* the library code inlined into it, right above */
        assert_true(s.f[i - 1].inlined);
        assert_string_equal(s.f[i - 1].module, prog);
        if (!s.f[i - 1].function || !strstr(s.f[i - 1].function, l->inlined_above))
            fail_msg("%s: the inlined frame above is %s, expected one of %s", l->function,
                     s.f[i - 1].function ? s.f[i - 1].function : "(none)", l->inlined_above);
        free_stack(&s);
    }
    if (!found)
        fail_msg("%s: no AIFO stack whose first frame in leak.rs is this function", l->function);
}

/* A hash left in: legacy "::h" and 16 hex digits, v0 "[" hex digits "]". */
static int has_hash(const char *name)
{
    for (const char *p = name; *p; p++) {
        size_t n = 0;
        if (!strncmp(p, "::h", 3)) {
            while (n < 16 && strchr("0123456789abcdef", p[3 + n]) && p[3 + n])
                n++;
            if (n == 16)
                return 1;
        } else if (*p == '[') {
            while (p[1 + n] && strchr("0123456789abcdef", p[1 + n]))
                n++;
            if (n > 0 && p[1 + n] == ']')
                return 1;
        }
    }
    return 0;
}

/* Every frame of the program's own module, in every list: no mangled names
 * (v0 "_R...", legacy "_ZN..."), no legacy escapes, no hashes. */
static void check_demangled(const char *json, const char *prog)
{
    const char *bad[] = {"$LT$", "$GT$", "$u7b$", "$u20$", "$C$", "_ZN"};
    size_t named = 0;
    for (const char *p = strstr(json, "{\"function\":"); p; p = strstr(p, "{\"function\":")) {
        frame f;
        p = read_frame(p, &f);
        if (f.module && !strcmp(f.module, prog) && f.function) {
            if (!strncmp(f.function, "_R", 2) || has_hash(f.function))
                fail_msg("frame not demangled: %s", f.function);
            for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
                if (strstr(f.function, bad[k]))
                    fail_msg("frame name with \"%s\" left in: %s", bad[k], f.function);
            named++;
        }
        free_frame(&f);
    }
    assert_true(named >= 6);
}

#ifdef LTR_RUSTC /* CMake found rustc and builds the programs */
static const int have_rustc = 1;
#else
static const int have_rustc = 0;
#endif

static void check_build(const char *mangling, const char *remember)
{
    if (!have_rustc)
        fail_msg("rustc was not found when the build was configured, so the Rust test program was not built: "
                 "install Debian's rustc (scripts/install-deps.sh does) and configure the build again");
    char prog[4096], trace[4200];
    snprintf(prog, sizeof prog, "%s/analyze-rust-%s", getenv("LTR_TEST_BIN"), mangling);
    snprintf(trace, sizeof trace, "%s/rust-%s.ltr", getenv("TMPDIR"), mangling);
    tu_result r = tu_run("'%s' record -o '%s' -- '%s'", tu_ltr(), trace, prog);
    if (r.status != 0)
        fail_msg("ltr record of %s: status %d: %s", prog, r.status, r.err);
    tu_free(&r);
    r = tu_run("'%s' analyze '%s' --format json --top 0", tu_ltr(), trace);
    if (r.status != 0)
        fail_msg("ltr analyze: status %d: %s", r.status, r.err);
    const leak leaks[] = {
        {"leak::leak_boxes", "// leak: boxes", 10000, 10, "alloc::boxed::Box<", 1},
        {remember, "// leak: remember", 1280, 20, "alloc::boxed::Box<", 1},
        {"leak::main", "// leak: main", 256, 1, "alloc::vec::Vec<", 0},
    };
    for (size_t i = 0; i < sizeof leaks / sizeof *leaks; i++)
        check_leak(r.out, prog, &leaks[i]);
    check_demangled(r.out, prog);
    tu_free(&r);
    /* the reports for people hide the standard library's frames at both ends,
     * as C++'s: a stack from the leaking function to main, no alloc::alloc
     * inlined by the dozen, no std::rt::lang_start below main */
    r = tu_run("'%s' analyze '%s' && '%s' export '%s' --format folded -o -", tu_ltr(), trace, tu_ltr(), trace);
    if (r.status != 0 || strstr(r.out, "alloc::alloc::") || strstr(r.out, "lang_start") ||
        !strstr(r.out, "leak::main;leak::leak_boxes "))
        fail_msg("library frames shown: %s%s", r.out, r.err);
    tu_free(&r);
    r = tu_run("command -v go >/dev/null || exit 77; '%s' export '%s' --format pprof -o '%s.pb.gz' && "
               "HOME=$TMPDIR GOCACHE=$TMPDIR/gocache go tool pprof -symbolize=none -traces '%s.pb.gz'",
               tu_ltr(), trace, trace, trace);
    if (r.status != 77 && (r.status != 0 || strstr(r.out, "alloc::alloc::") || strstr(r.out, "lang_start") ||
                           !strstr(r.out, "leak::leak_boxes")))
        fail_msg("pprof: library frames shown: %s%s", r.out, r.err);
    tu_free(&r);
}

/* Legacy names keep the generic parameters as written; v0 names have the
 * types they were instantiated with. */
static void test_rust_legacy_mangling(void **state)
{
    (void)state;
    check_build("legacy", "leak::Cache<T>::remember");
}

static void test_rust_v0_mangling(void **state)
{
    (void)state;
    check_build("v0", "<leak::Cache<[u8; 64]>>::remember");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rust_legacy_mangling, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_rust_v0_mangling, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
