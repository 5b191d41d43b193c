/*
 * prim/text.c — text from a trace made safe to show. Names in a trace
 * (executables, command lines, thread and function names, file paths) come
 * from the traced programs, or from whoever wrote the trace file, and ltr
 * shows them on root's terminal: an escape sequence in one would act on the
 * terminal (move the cursor over earlier lines, retitle it, write the
 * clipboard), and a newline would forge a line of the report.
 */
#include "prim/prim.h"

#include <stdint.h>

/* The character at str[i] (len bytes in all): its length in *n (1 for an
 * invalid byte) and whether it is shown as it is. */
static bool shown_as_is(const char *str, size_t len, size_t i, bool keep_lines, size_t *n_out)
{
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000}; /* below: an overlong form */
    uint8_t c = (uint8_t)str[i];
    size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1fu : n == 3 ? c & 0x0fu : c & 0x07u;
    int ok = n && i + n <= len;
    for (size_t k = 1; ok && k < n; k++) {
        uint8_t d = (uint8_t)str[i + k];
        ok = (d & 0xc0) == 0x80;
        cp = cp << 6 | (d & 0x3fu);
    }
    ok = ok && cp >= least[n] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    int control = cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
                  (cp >= 0x2066 && cp <= 0x2069);
    if (ok && keep_lines && (cp == '\n' || cp == '\t'))
        control = 0;
    *n_out = ok ? n : 1;
    return ok && !control;
}

size_t ltr_shown_text(const char *str, size_t len, char *out, bool keep_lines)
{
    size_t o = 0;
    for (size_t i = 0, n; i < len; i += n) {
        uint8_t c = (uint8_t)str[i];
        if (c >= 0x20 && c < 0x7f) { /* printable ASCII, as shown_as_is says in fewer steps: the
                                      * names of cc1plus's trace, 4 306 of them, took 7.5 M instructions */
            out[o++] = (char)c;
            n = 1;
            continue;
        }
        if (!shown_as_is(str, len, i, keep_lines, &n))
            out[o++] = '?';
        else
            for (size_t k = 0; k < n; k++) /* out may be str itself: never ahead of it */
                out[o++] = str[i + k];
    }
    return o;
}

bool ltr_text_shown_as_is(const char *str, size_t len)
{
    for (size_t i = 0, n; i < len; i += n)
        if (!shown_as_is(str, len, i, false, &n))
            return false;
    return true;
}
