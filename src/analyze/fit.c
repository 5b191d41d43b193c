/*
 * analyze/fit.c — the text report's lines fitted to a terminal's width
 * (ltr analyze at a terminal, or --width N; piped, lines are whole so that
 * grep and scripts see everything). A frame is shortened the way a reader
 * skims a C++ name: parameter lists first ("(...)"), then template arguments
 * ("<...>"), then the source path to its file name, and only then cut, with
 * "..." where it was cut. Column counts are bytes: names and paths are ASCII
 * in the overwhelming case, and a cut never splits a UTF-8 sequence.
 */
#include "analyze/internal.h"

#include <stdlib.h>
#include <string.h>

/* Cuts s to at most width columns, ending in "..." when cut. */
static void cut(char *s, unsigned width)
{
    size_t n = strlen(s);
    if (!width || n <= width)
        return;
    size_t keep = width > 3 ? width - 3 : 0;
    while (keep > 0 && ((unsigned char)s[keep] & 0xc0) == 0x80)
        keep--; /* not inside a UTF-8 sequence */
    memcpy(s + keep, "...", width > 3 ? 4 : 1);
    if (width <= 3)
        s[keep] = 0;
}

void an_fit_line(FILE *out, const char *line, unsigned width)
{
    const char *nl = line;
    while (*nl == '\n') /* leading blank lines stay */
        fputc(*nl++, out);
    size_t n = strlen(nl);
    if (!width || n <= width) { /* whole: a copy into 4 KiB cut long lines piped (a review's threads line) */
        fprintf(out, "%s\n", nl);
        return;
    }
    char small[512], *buf = width < sizeof small - 1 ? small : malloc((size_t)width + 2);
    if (!buf) {
        fprintf(out, "%s\n", nl);
        return;
    }
    memcpy(buf, nl, (size_t)width + 1); /* its first width + 1 bytes: enough for cut to see it is longer */
    buf[width + 1] = 0;
    cut(buf, width);
    fprintf(out, "%s\n", buf);
    if (buf != small)
        free(buf);
}

void an_fit_wrap(FILE *out, const char *text, unsigned width, unsigned indent)
{
    while (*text == '\n')
        fputc(*text++, out);
    if (!width || strlen(text) <= width || (indent && indent + 10 >= width)) {
        an_fit_line(out, text, width);
        return;
    }
    unsigned room = width;
    for (int first = 1; *text; first = 0) { /* words onto lines; the later ones indented */
        if (!first) {
            fprintf(out, "%*s", (int)indent, "");
            room = width - indent;
        }
        size_t n = strlen(text), take = n <= room ? n : room;
        if (take < n) {
            size_t sp = take;
            while (sp > 0 && text[sp] != ' ')
                sp--;
            take = sp ? sp : take;
        }
        fprintf(out, "%.*s\n", (int)take, text);
        text += take;
        while (*text == ' ')
            text++;
    }
}

void an_fit_text(FILE *out, const char *text, unsigned width)
{
    an_fit_wrap(out, text, width, 0);
}

/* name with the contents of every (open ... close) at depth >= depth
 * replaced by "...": "f(int, char)" -> "f(...)" for '(' at depth 0. An
 * operator's own symbols ("operator<<", "operator()") are kept. */
static void collapse(const char *name, char open, char close, int min_depth, char *out, size_t size)
{
    size_t o = 0;
    int depth = 0;
    for (const char *p = name; *p && o + 4 < size; p++) {
        if (!strncmp(p, "operator", 8)) {
            size_t k = 8;
            if (!strncmp(p + 8, "()", 2) || !strncmp(p + 8, "[]", 2))
                k += 2;
            else
                while (p[k] && strchr("<>=!+-*/%&|^~,", p[k]) && k < 11)
                    k++;
            if (o + k + 4 >= size)
                break;
            memcpy(out + o, p, k);
            o += k;
            p += k - 1;
            continue;
        }
        if (*p == open) {
            if (depth++ == min_depth) {
                out[o++] = open;
                memcpy(out + o, "...", 3);
                o += 3;
            }
            if (depth - 1 >= min_depth)
                continue;
        } else if (*p == close && depth > 0) {
            if (--depth == min_depth)
                out[o++] = close;
            if (depth >= min_depth)
                continue;
        }
        if (depth <= min_depth)
            out[o++] = *p;
    }
    out[o] = 0;
}

void an_fit_frame(const ltr_sym_frame *f, unsigned width, char *out, size_t size)
{
    an_frame_text(f, f->function, f->file, out, size);
    if (!width || strlen(out) <= width || !f->function)
        return cut(out, width);
    char params[2048], both[2048];
    collapse(f->function, '(', ')', 0, params, sizeof params);
    an_frame_text(f, params, f->file, out, size);
    if (strlen(out) <= width)
        return;
    collapse(params, '<', '>', 0, both, sizeof both);
    an_frame_text(f, both, f->file, out, size);
    if (strlen(out) <= width)
        return;
    const char *slash = f->file ? strrchr(f->file, '/') : NULL;
    an_frame_text(f, both, slash ? slash + 1 : f->file, out, size);
    cut(out, width);
}
