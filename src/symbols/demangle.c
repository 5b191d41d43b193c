/*
 * symbols/demangle.c — C++ and Rust symbol names for people, for dwarf.c
 * (DWARF linkage names and symbol-table names).
 *
 * Rust, both manglings, goes through GNU libiberty's rust_demangle (Debian
 * libiberty-dev; the same code binutils' c++filt and gdb use): legacy names
 * (Itanium-shaped "_ZN...17h<16 hex>E" with "$LT$"-style escapes) and v0
 * names ("_R..."), which rustc's own std uses even when the program's crate
 * is legacy. Without DMGL_VERBOSE it leaves out the legacy "::h<hash>" element
 * and v0's crate disambiguators ("[0123abcd]"), as rustfilt does by default,
 * and drops LLVM's ".llvm.<digits>" suffixes. Debian's libiberty.a is
 * linked into the ltr binary with the symbols part (src/symbols/CMakeLists.txt);
 * no public library carries it.
 *
 * C++ (Itanium ABI) stays with libstdc++'s __cxa_demangle, as before: the
 * same demangler underneath, and C++ output unchanged. A legacy Rust name is
 * also a valid Itanium name, so Rust is tried first; rust_demangle accepts
 * an "_ZN" name only when its last element is the "h<16 hex>" hash.
 */
#include "symbols/symbols.h"

#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

static char *demangle_cxx(const char *name)
{
    int status = 0;
    char *d = __cxa_demangle(name, NULL, NULL, &status);
    if (status != 0) {
        free(d);
        return NULL;
    }
    return d;
}

char *ltr_demangle(const char *name)
{
    if (!name)
        return NULL;
    int rust = !strncmp(name, "_R", 2) || !strncmp(name, "_ZN", 3);
    char *d = rust ? rust_demangle(name, DMGL_NO_OPTS) : NULL;
    if (!d && !strncmp(name, "_Z", 2))
        d = demangle_cxx(name);
    return d;
}
