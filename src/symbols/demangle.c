/*
 * symbols/demangle.c — C++ and Rust symbol names for people. C++ (Itanium ABI)
 * goes through libstdc++'s __cxa_demangle; Rust's legacy mangling is Itanium
 * mangling plus a "::h<16 hex>" hash element, which is dropped.
 */
#include "symbols/symbols.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* Drops a trailing "::h" followed by 16 hex digits (legacy Rust symbol hash). */
static void drop_rust_hash(char *s)
{
    size_t n = strlen(s);
    if (n < 19 || memcmp(s + n - 19, "::h", 3) != 0)
        return;
    for (size_t i = n - 16; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return;
    s[n - 19] = 0;
}

char *ltr_demangle(const char *name)
{
    if (!name || strncmp(name, "_Z", 2) != 0)
        return NULL;
    int status = 0;
    char *d = __cxa_demangle(name, NULL, NULL, &status);
    if (status != 0 || !d)
        return NULL;
    if (!strncmp(name, "_ZN", 3))
        drop_rust_hash(d);
    return d;
}
