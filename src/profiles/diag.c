/*
 * profiles/diag.c — the diagnostic list of the profile code, and the few
 * string helpers it and the rest of src/profiles share.
 */
#include "profiles/diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void out_of_memory(void)
{
    fputs("ltr: out of memory while reading profiles\n", stderr);
    abort();
}

char *prof_strdup(const char *s)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        out_of_memory();
    return d;
}

static char *vformat(const char *fmt, va_list ap)
{
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        out_of_memory();
    return s;
}

char *prof_asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = vformat(fmt, ap);
    va_end(ap);
    return s;
}

void *prof_grow(void *v, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return v;
    size_t ncap = *cap ? *cap * 2 : 8;
    void *nv = realloc(v, ncap * elem);
    if (!nv)
        out_of_memory();
    memset((char *)nv + *cap * elem, 0, (ncap - *cap) * elem);
    *cap = ncap;
    return nv;
}

static bool same_str(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* An element used by several profiles must not repeat its diagnostics. */
static bool already_there(const ltr_diag_list *l, const char *file, int line, const char *id,
                          const char *msg)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].line == line && same_str(l->v[i].file, file) && same_str(l->v[i].id, id) &&
            strcmp(l->v[i].msg, msg) == 0)
            return true;
    return false;
}

static void push(ltr_diag_list *l, ltr_diag_severity sev, const char *file, int line,
                 const char *id, char *msg)
{
    if (already_there(l, file, line, id, msg)) {
        free(msg);
        return;
    }
    l->v = prof_grow(l->v, &l->cap, l->n, sizeof *l->v);
    l->v[l->n++] = (ltr_diag){sev, prof_strdup(file), line, prof_strdup(id), msg};
    if (sev == LTR_DIAG_ERROR)
        l->errors++;
    else
        l->warnings++;
}

void ltr_diag_add(ltr_diag_list *l, ltr_diag_severity sev, const char *file, int line,
                  const char *id, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = vformat(fmt, ap);
    va_end(ap);
    push(l, sev, file, line, id, msg);
}

void ltr_diag_append(ltr_diag_list *dst, const ltr_diag_list *src)
{
    for (size_t i = 0; i < src->n; i++) {
        const ltr_diag *d = &src->v[i];
        push(dst, d->severity, d->file, d->line, d->id, prof_strdup(d->msg));
    }
}

void ltr_diag_format(const ltr_diag *d, char *out, size_t size)
{
    char where[1024] = "";
    if (d->file && d->line > 0)
        snprintf(where, sizeof where, "%s:%d: ", d->file, d->line);
    else if (d->file)
        snprintf(where, sizeof where, "%s: ", d->file);
    char id[512] = "";
    if (d->id && *d->id)
        snprintf(id, sizeof id, "'%s': ", d->id);
    snprintf(out, size, "%s%s: %s%s", where,
             d->severity == LTR_DIAG_ERROR ? "error" : "warning", id, d->msg);
}

void ltr_diag_list_free(ltr_diag_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].file);
        free(l->v[i].id);
        free(l->v[i].msg);
    }
    free(l->v);
    memset(l, 0, sizeof *l);
}
