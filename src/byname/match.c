/*
 * byname/match.c — whether the names file lists an executable. Compiled into
 * the byname part and into the shim (libltr-byname.so), which runs it in
 * every process: no allocation, no system call, bounded by the text.
 */
#include "byname/byname.h"

#include <string.h>

bool ltr_byname_match(const char *text, size_t len, const char *exe)
{
    size_t n = strlen(exe);
    if (!n || n > LTR_BYNAME_NAME_MAX)
        return false;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (l == n && *p != '#' && memcmp(p, exe, n) == 0)
            return true;
        p += l + 1;
    }
    return false;
}
