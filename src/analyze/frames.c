/*
 * analyze/frames.c — the frames a report for people hides unless
 * --full-stacks (docs/analysis.md, "Hidden frames"): at the outer end of a
 * stack the start-up and thread-entry frames every stack shares (_start,
 * __libc_start_*, start_thread, clone3; Rust's std::rt and thread entry
 * frames, by their files), and at the inner end the
 * allocator's own frames: operator new and the C++ standard library's
 * frames above it (std::allocator and its traits, the containers'
 * _M_allocate, constructors, push_back), which C++ inlines by the
 * half-dozen into every stack, and Rust's standard library frames the same
 * way (alloc::, RawVec, Vec::push, hashbrown: known by their files), and
 * CPython's allocator (obmalloc.c). What is left starts at the code that asked for memory and ends at
 * main or the thread's function. The text report, folded stacks and pprof
 * use it; JSON and CSV keep every frame.
 */
#include "analyze/internal.h"

#include <string.h>

/* A frame of Rust's standard library, by the file its DWARF names: the
 * toolchain's own build says /rustc/HASH/library/alloc/src/..., a std built
 * with remapped paths library/alloc/src/..., rust-src under rustup
 * .../lib/rustlib/src/rust/library/..., std's vendored crates (hashbrown)
 * /rust/deps/. By file, not by name: a C++ program's namespace core:: or
 * alloc:: is its own code. */
static bool rust_library_file(const char *file)
{
    if (!file)
        return false;
    return !strncmp(file, "/rustc/", 7) || !strncmp(file, "/rust/deps/", 11) ||
           (!strncmp(file, "library/", 8) && strstr(file + 8, "/src/")) || strstr(file, "/lib/rustlib/src/rust/library/");
}

/* CPython's allocator, between the object that asked for memory and
 * malloc: pymalloc's arena and pool frames and the PyObject_/PyMem_ entry
 * points (Objects/obmalloc.c; a review's python3 stacks said "allocated in
 * arena_map_get" or "_PyObject_Malloc" where _PyObject_GC_New, PyList_New
 * asked). By file where DWARF names it, else by the entry points' names,
 * which are CPython's own. */
static bool python_allocator(const ltr_sym_frame *f)
{
    static const char *const names[] = {
        "_PyObject_Malloc", "_PyObject_Calloc", "_PyObject_Realloc", "PyObject_Malloc", "PyObject_Calloc",
        "PyObject_Realloc", "_PyMem_RawMalloc", "_PyMem_RawCalloc", "_PyMem_RawRealloc", "PyMem_RawMalloc",
        "PyMem_RawCalloc", "PyMem_RawRealloc", "PyMem_Malloc", "PyMem_Calloc", "PyMem_Realloc",
        "_PyMem_DebugRawAlloc", "_PyMem_DebugRawRealloc", "_PyMem_DebugMalloc", "_PyMem_DebugRealloc",
    };
    size_t len = f->file ? strlen(f->file) : 0, tail = sizeof "Objects/obmalloc.c" - 1;
    if (len >= tail && !strcmp(f->file + len - tail, "Objects/obmalloc.c") &&
        (len == tail || f->file[len - tail - 1] == '/'))
        return true;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(f->function, names[i]))
            return true;
    return false;
}

bool an_frame_is_startup(const ltr_sym_frame *f)
{
    static const char *const names[] = {
        "_start", "__libc_start_main", "__libc_start_main_impl", "__libc_start_call_main", "start_thread",
        "clone", "clone3", "__clone", "__clone3", "__clone_internal", "thread_start",
    };
    if (!f->function)
        return false;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(f->function, names[i]))
            return true;
    /* Rust's std::rt::lang_start..., FnOnce::call_once, std's thread entry
     * and spawn closures: at the outer end, only the standard library's */
    return rust_library_file(f->file);
}

bool an_frame_is_allocator(const ltr_sym_frame *f)
{
    /* operator new and the C++ standard library's frames between it and the
     * program's code: std::allocator and its traits, the containers'
     * _M_allocate, _M_create_storage, constructors, push_back... inlined by
     * the half-dozen. The program's own frame keeps the line that called
     * them. */
    static const char *const prefixes[] = {"operator new", "std::", "__gnu_cxx::", "__cxxabiv1::",
                                           "__rust_alloc", "__rust_realloc", "__rdl_"};
    const char *fn = f->function;
    /* Rust's the same way: alloc::alloc::alloc, <alloc::alloc::Global as
     * core::alloc::Allocator>::allocate, RawVec, Vec::push, hashbrown...
     * inlined by the dozen, so that "allocated in" said alloc::alloc::alloc
     * of every Rust stack; the program's frame keeps its line */
    if (fn && (rust_library_file(f->file) || python_allocator(f)))
        return true;
    for (size_t i = 0; fn && i < sizeof prefixes / sizeof *prefixes; i++)
        if (!strncmp(fn, prefixes[i], strlen(prefixes[i])))
            return true;
    return false;
}

void an_frames_trim(const ltr_sym_frame *f, size_t n, size_t *first, size_t *end)
{
    size_t a = 0, b = n;
    while (a < b && an_frame_is_allocator(&f[a]))
        a++;
    while (b > a && an_frame_is_startup(&f[b - 1]))
        b--;
    /* the C main rustc writes, below std::rt::lang_start: the stack then
     * ends at the program's own main */
    if (b - a >= 2 && f[b - 1].function && !strcmp(f[b - 1].function, "main") && rust_library_file(f[b - 2].file))
        for (b--; b > a && an_frame_is_startup(&f[b - 1]);)
            b--;
    if (a == b) { /* nothing but hidden frames: show them rather than nothing */
        a = 0;
        b = n;
    }
    *first = a;
    *end = b;
}

size_t an_frames_shown(ltr_analysis *a, const an_stack *s, ltr_sym_frame *out, size_t cap)
{
    size_t n = an_frames(a, s, out, cap);
    if (a->full_stacks)
        return n;
    size_t first, end;
    an_frames_trim(out, n, &first, &end);
    memmove(out, out + first, (end - first) * sizeof *out);
    return end - first;
}
