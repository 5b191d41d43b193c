/*
 * byname/match.c — what the names file says, read the one same way by the
 * shim (libltr-byname.so, in every process: no allocation, a fixed buffer
 * of the caller's, system calls only to read the file) and by ltr (listing,
 * enable, disable): which lines are entries, which entries are names, and
 * whether one is an executable's. Both compiled from this file, they cannot
 * disagree: a hand-edited line that ltr listed as enabled ('foo\r', '  bar')
 * and could not disable, because disable named it otherwise.
 */
#include "byname/byname.h"
#include "prim/prim.h"

#include <string.h>
#include <unistd.h>

int ltr_byname_fault(const char *s, size_t n)
{
    if (!n)
        return LTR_BYNAME_EMPTY;
    if (n > LTR_BYNAME_NAME_MAX)
        return LTR_BYNAME_TOO_LONG;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
            return LTR_BYNAME_BLANK;
    if (!ltr_text_shown_as_is(s, n))
        return LTR_BYNAME_NOT_TEXT;
    if (memchr(s, '/', n))
        return LTR_BYNAME_PATH;
    if ((n == 1 && s[0] == '.') || (n == 2 && !memcmp(s, "..", 2)) || s[0] == '#')
        return LTR_BYNAME_NOT_FILE;
    if (n == 3 && !memcmp(s, "ltr", 3)) /* the recorder would trace itself */
        return LTR_BYNAME_LTR;
    return LTR_BYNAME_OK;
}

static bool blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

bool ltr_byname_entry(const char *line, size_t len, const char **name, size_t *n)
{
    while (len && blank(*line))
        line++, len--;
    while (len && blank(line[len - 1]))
        len--;
    *name = line, *n = len;
    return len && *line != '#';
}

void ltr_byname_want_init(ltr_byname_want *w, const char *exe)
{
    size_t n = strlen(exe);
    w->exe = exe, w->n = n, w->entries = 0;
    w->found = false;
    w->over = ltr_byname_fault(exe, n) != LTR_BYNAME_OK; /* no entry can be it */
}

bool ltr_byname_want_line(const char *line, size_t len, bool cut, void *arg)
{
    ltr_byname_want *w = arg;
    const char *name;
    size_t n;
    if (w->over || !ltr_byname_entry(line, len, &name, &n))
        return w->over;
    w->found = !cut && n == w->n && !memcmp(name, w->exe, n);
    w->over = w->found || ++w->entries == LTR_BYNAME_MAX_NAMES;
    return w->over;
}

bool ltr_byname_match(const char *text, size_t len, const char *exe)
{
    ltr_byname_want w;
    ltr_byname_want_init(&w, exe);
    for (const char *p = text, *end = text + len; p < end && !w.over;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
        ltr_byname_want_line(p, l, false, &w);
        p += l + 1;
    }
    return w.found;
}

bool ltr_byname_lines(int fd, size_t size, char *buf, ltr_byname_line_fn *each, void *arg)
{
    size_t have = 0;
    bool skipping = false; /* in the rest of a line longer than a piece, passed already */
    for (;;) {
        size_t want = size < LTR_BYNAME_PIECE - have ? size : LTR_BYNAME_PIECE - have;
        ssize_t got = want ? read(fd, buf + have, want) : 0;
        if (got < 0)
            return false;
        size -= (size_t)got;
        have += (size_t)got;
        char *p = buf, *nl;
        while ((nl = memchr(p, '\n', have - (size_t)(p - buf))) != NULL) {
            if (!skipping && each(p, (size_t)(nl - p), false, arg))
                return true;
            skipping = false;
            p = nl + 1;
        }
        have -= (size_t)(p - buf);
        memmove(buf, p, have);
        if (!got) /* the end: a last line without its newline */
            return have && !skipping && each(buf, have, false, arg);
        if (have == LTR_BYNAME_PIECE) { /* a line longer than a piece (no name is): its start only */
            if (!skipping && each(buf, have, true, arg))
                return true;
            skipping = true;
            have = 0;
        }
    }
}
