/*
 * profiles/lazylib.h — a shared library loaded at its first use instead of at
 * start-up. libxml2 (profiles) and libarchive (support bundles) bring ICU
 * (and its 30 MB of data), nettle, acl, lz4 and more: the dynamic loader spent
 * 1.9 M of the 4.1 M instructions of `ltr --version` on them (callgrind: 2.2 M
 * without them; 256 page faults then 167), in every `ltr analyze`, which
 * never reads a profile. A source file includes the library's own headers,
 * then defines each function it calls as LTR_LAZY_FN(lib, name): the call
 * goes through a pointer found once per call site.
 */
#ifndef LTR_PROFILES_LAZYLIB_H
#define LTR_PROFILES_LAZYLIB_H

typedef struct ltr_lazylib {
    const char *soname; /* as the loader finds it: "libxml2.so.2" */
    const char *needed_for; /* said when it cannot be loaded: "to read recording profiles" */
    void *handle;
} ltr_lazylib;

/* name's address in lib, loaded on first use. A library or symbol that
 * cannot be found ends the program with a message naming it (the program
 * could not have started without it before). */
void *ltr_lazy_sym(ltr_lazylib *lib, const char *name);

/* name (a function or variable the library's headers declare) through a
 * pointer of its own type, found at the first call from this site. */
#define LTR_LAZY_FN(lib, name)                                                                  \
    (*({                                                                                        \
        static __typeof__(&name) ltr_lazy_p_;                                                   \
        __typeof__(&name) ltr_lazy_f_ = __atomic_load_n(&ltr_lazy_p_, __ATOMIC_ACQUIRE);       \
        if (!ltr_lazy_f_) {                                                                     \
            ltr_lazy_f_ = (__typeof__(&name))ltr_lazy_sym(&(lib), #name);                      \
            __atomic_store_n(&ltr_lazy_p_, ltr_lazy_f_, __ATOMIC_RELEASE);                      \
        }                                                                                       \
        ltr_lazy_f_;                                                                            \
    }))

#endif
