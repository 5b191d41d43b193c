/*
 * agent/redirect.c — the agent when it arrives late: dlopen'ed into a
 * process that is already running (ltr's injector) or early by the
 * ld.so.preload shim, instead of being preloaded.
 *
 * Preloaded, the agent's exports come first in the lookup order and every
 * module binds malloc & co to them. Loaded later, every module is bound to
 * libc's (or the process's allocator) already. So the agent rewrites the
 * relocation entries (GOT slots: R_X86_64_JUMP_SLOT and GLOB_DAT) of the
 * functions it replaces in every module of the main namespace — the program,
 * libc itself (glibc calls malloc through its PLT), libstdc++ (operator new
 * calls malloc) — to its hooks, which call the definition the process was
 * bound to. Each slot is one aligned 8-byte compare-and-swap (if it still
 * holds what the sweep read): a thread calling through
 * it at that moment gets the old function or the new one, both correct.
 *
 * Modules loaded later: dlopen and dlmopen are redirected too, to a wrapper
 * that sweeps again when the real call returns. glibc searches the RPATH or
 * RUNPATH (with $ORIGIN) of dlopen's caller, which a wrapper would change to
 * the agent (which has none): so for a bare name from a caller with one, the
 * wrapper searches the caller's directories as ld.so would and hands the
 * real dlopen the path it found (redirected modules are all of the main
 * namespace, like the agent: the namespace is the same).
 *
 * dlsym is redirected too (lookup.c): a lookup made after the late arrival
 * gets the hook where a preloaded agent's would have been found.
 *
 * Not redirected: the agent, ld.so (its allocations in dlopen/dlclose stay
 * paired with its frees, both untraced), the vDSO, and modules of other
 * namespaces (dlmopen: their own libc). A slot is rewritten only when it
 * holds the definition the process binds to or a lazy-binding stub of its
 * own module: a module that defines the function itself (RTLD_DEEPBIND, a
 * private allocator) keeps it, and a module the loader is still relocating
 * on another thread is left for the next sweep.
 */
#include "agent/agent.h"
#include "agent/procmaps.h"
#include "agent/redirect.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define AGENT_SONAME "libltr-heap.so"

static enum agent_arrival arrival = AGENT_PRELOADED;
static bool injected; /* AGENT_LATE by ltr's injector (redirect_injected) */
static void *bound_definition(const char *name);

enum agent_arrival redirect_arrival(void)
{
    return arrival;
}

void *agent_next_sym(const char *name)
{
    agent_busy++;
    void *f = arrival == AGENT_PRELOADED ? dlsym(RTLD_NEXT, name) : bound_definition(name);
    agent_leave();
    return f;
}

/* ---- what is redirected ------------------------------------------------------ */

static void *redirect_dlopen(const char *file, int mode);
static void *redirect_dlmopen(Lmid_t ns, const char *file, int mode);

/* Sorted by name (bsearch). ours: the agent's definition; real: what the
 * process binds to. */
typedef struct target {
    const char *name;
    void *ours, *real;
} target;

static target targets[] = {
    {.name = "_ZdaPv"}, {.name = "_ZdaPvRKSt9nothrow_t"}, {.name = "_ZdaPvSt11align_val_t"},
    {.name = "_ZdaPvSt11align_val_tRKSt9nothrow_t"}, {.name = "_ZdaPvm"}, {.name = "_ZdaPvmSt11align_val_t"},
    {.name = "_ZdlPv"}, {.name = "_ZdlPvRKSt9nothrow_t"}, {.name = "_ZdlPvSt11align_val_t"},
    {.name = "_ZdlPvSt11align_val_tRKSt9nothrow_t"}, {.name = "_ZdlPvm"}, {.name = "_ZdlPvmSt11align_val_t"},
    {.name = "_Znam"}, {.name = "_ZnamRKSt9nothrow_t"}, {.name = "_ZnamSt11align_val_t"},
    {.name = "_ZnamSt11align_val_tRKSt9nothrow_t"}, {.name = "_Znwm"}, {.name = "_ZnwmRKSt9nothrow_t"},
    {.name = "_ZnwmSt11align_val_t"}, {.name = "_ZnwmSt11align_val_tRKSt9nothrow_t"},
    {.name = "aligned_alloc"}, {.name = "brk"}, {.name = "calloc"}, {.name = "close"}, {.name = "creat"},
    {.name = "creat64"}, {.name = "dlclose"}, {.name = "dlmopen"}, {.name = "dlopen"}, {.name = "dlsym"},
    {.name = "free"},
    {.name = "madvise"}, {.name = "malloc"}, {.name = "memalign"}, {.name = "mmap"}, {.name = "mmap64"},
    {.name = "mremap"}, {.name = "munmap"}, {.name = "open"}, {.name = "open64"}, {.name = "openat"},
    {.name = "openat64"}, {.name = "posix_memalign"}, {.name = "pread"}, {.name = "pread64"},
    {.name = "pthread_getattr_np"}, {.name = "pthread_setname_np"}, {.name = "pvalloc"}, {.name = "pwrite"},
    {.name = "pwrite64"}, {.name = "read"}, {.name = "readv"}, {.name = "realloc"}, {.name = "reallocarray"},
    {.name = "sbrk"}, {.name = "seteuid"}, {.name = "setresuid"}, {.name = "setreuid"}, {.name = "setuid"},
    {.name = "sigaction"}, {.name = "signal"}, {.name = "syscall"}, {.name = "valloc"}, {.name = "write"}, {.name = "writev"},
};
#define NTARGETS (sizeof targets / sizeof targets[0])

static int by_name(const void *key, const void *t)
{
    return strcmp(key, ((const target *)t)->name);
}

static target *find_target(const char *name)
{
    return bsearch(name, targets, NTARGETS, sizeof targets[0], by_name);
}

static void *(*real_dlopen)(const char *, int);
static void *(*real_dlmopen)(Lmid_t, const char *, int);

/* Fills real (again where still unknown: libstdc++ may come later). */
static void resolve_real(void)
{
    for (size_t i = 0; i < NTARGETS; i++)
        if (!targets[i].real)
            targets[i].real = bound_definition(targets[i].name);
    dlerror(); /* a name not found must not show as the program's error */
}

/* ---- the modules ------------------------------------------------------------- */

static uintptr_t self_base;
static const char *self_path;

/* The module's dynamic section, its pointers made absolute. */
typedef struct dyninfo {
    const ElfW(Sym) *symtab;
    const char *strtab;
    const ElfW(Rela) *rela, *jmprel;
    size_t relasz, jmprelsz;
    const char *soname;
    const char *rpath, *runpath; /* NULL: none */
    uintptr_t lo, hi;       /* span of its PT_LOAD segments */
    uintptr_t relro_lo, relro_hi; /* the pages ld.so made read-only */
    const ElfW(Dyn) *dyn;
} dyninfo;

/* ld.so relocates the d_ptr of a dynamic section in place on x86-64; the
 * vDSO's (and a few others') stay relative. */
static uintptr_t abs_ptr(uintptr_t base, uintptr_t p)
{
    return p < base ? p + base : p;
}

static bool read_dynamic(const struct dl_phdr_info *info, dyninfo *d)
{
    memset(d, 0, sizeof *d);
    uintptr_t base = info->dlpi_addr, page = (uintptr_t)sysconf(_SC_PAGESIZE);
    d->lo = UINTPTR_MAX;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = base + ph->p_vaddr;
        if (ph->p_type == PT_LOAD) {
            d->lo = start < d->lo ? start : d->lo;
            d->hi = start + ph->p_memsz > d->hi ? start + ph->p_memsz : d->hi;
        } else if (ph->p_type == PT_DYNAMIC) {
            d->dyn = (const ElfW(Dyn) *)start;
        } else if (ph->p_type == PT_GNU_RELRO) { /* as ld.so's _dl_protect_relro */
            d->relro_lo = start & ~(page - 1);
            d->relro_hi = (start + ph->p_memsz) & ~(page - 1);
        }
    }
    if (!d->dyn)
        return false;
    uintptr_t strtab = 0, soname = 0, rpath = 0, runpath = 0;
    bool have_soname = false, have_rpath = false, have_runpath = false;
    for (const ElfW(Dyn) *e = d->dyn; e->d_tag != DT_NULL; e++) {
        switch (e->d_tag) {
        case DT_SYMTAB: d->symtab = (const ElfW(Sym) *)abs_ptr(base, e->d_un.d_ptr); break;
        case DT_STRTAB: strtab = abs_ptr(base, e->d_un.d_ptr); break;
        case DT_RELA: d->rela = (const ElfW(Rela) *)abs_ptr(base, e->d_un.d_ptr); break;
        case DT_RELASZ: d->relasz = e->d_un.d_val; break;
        case DT_JMPREL: d->jmprel = (const ElfW(Rela) *)abs_ptr(base, e->d_un.d_ptr); break;
        case DT_PLTRELSZ: d->jmprelsz = e->d_un.d_val; break;
        case DT_PLTREL: if (e->d_un.d_val != DT_RELA) return false; break;
        case DT_SONAME: soname = e->d_un.d_val; have_soname = true; break;
        case DT_RPATH: rpath = e->d_un.d_val; have_rpath = true; break;
        case DT_RUNPATH: runpath = e->d_un.d_val; have_runpath = true; break;
        default: break;
        }
    }
    if (!d->symtab || !strtab)
        return false;
    d->strtab = (const char *)strtab;
    d->soname = have_soname ? d->strtab + soname : NULL;
    d->rpath = have_rpath ? d->strtab + rpath : NULL;
    d->runpath = have_runpath ? d->strtab + runpath : NULL;
    return true;
}

/* In the main namespace: on the list _r_debug heads (dl_iterate_phdr walks
 * every namespace). Called holding the loader's list lock. */
static bool in_main_namespace(const struct dl_phdr_info *info, const ElfW(Dyn) *dyn)
{
    for (const struct link_map *l = _r_debug.r_map; l; l = l->l_next)
        if (l->l_addr == info->dlpi_addr && l->l_ld == dyn)
            return true;
    return false;
}

/* The same for each module of one dl_iterate_phdr walk in turn. glibc's
 * walks the main namespace first, in the order of _r_debug's list: a cursor
 * on that list finds each module where the last one ended, one step, so a
 * walk costs the list once instead of once per module (a late agent's
 * dlsym(RTLD_DEFAULT, "malloc") took 1.1 ms with 800 libraries loaded, the
 * list walked 800 times; 80 us so). A walk in another order, or one that left a
 * module out, is still answered right, by the whole list where the cursor
 * cannot tell. Start with {_r_debug.r_map}. */
typedef struct ns_cursor {
    const struct link_map *next; /* where the next module should be on the list */
    bool out_of_step;            /* the walk left some out: the list's end proves nothing */
} ns_cursor;

static bool in_main_namespace_next(ns_cursor *c, const struct dl_phdr_info *info, const ElfW(Dyn) *dyn)
{
    for (const struct link_map *l = c->next; l; l = l->l_next)
        if (l->l_addr == info->dlpi_addr && l->l_ld == dyn) {
            c->out_of_step |= l != c->next;
            c->next = l->l_next;
            return true;
        }
    /* not after the cursor: before it only if the walk went out of step */
    return c->out_of_step && in_main_namespace(info, dyn);
}

static bool skipped(const struct dl_phdr_info *info)
{
    uintptr_t a = info->dlpi_addr;
    return a == self_base || a == getauxval(AT_BASE) || a == getauxval(AT_SYSINFO_EHDR) ||
           (info->dlpi_name && strstr(info->dlpi_name, "linux-vdso"));
}

/* ---- what the process binds to ------------------------------------------------- */

/* No GNU hash table: the module's symbols are not looked at (find_symbol). */
#define SYM_UNKNOWN UINTPTR_MAX

/* The address of a dynamic symbol called name in the module at base whose
 * dynamic section is dyn (through its GNU hash table), 0 if none, or
 * SYM_UNKNOWN. strict: a function defined there under its default version
 * (an undefined symbol is none: a non-PIE program that takes a function's
 * address exports its PLT entry under the function's name, which
 * dlsym(RTLD_DEFAULT) returns; calling that from a hook would come back to
 * the hook once the program's slot points there). Not strict: any symbol
 * with a value other than except, which some lookup by dlsym could find
 * (dlsym accepts such a PLT entry, a hidden version through dlvsym). */
static uintptr_t find_symbol(uintptr_t base, const ElfW(Dyn) *dyn, const char *name, bool strict, uintptr_t except)
{
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const uint32_t *gnu = NULL;
    const ElfW(Half) *versym = NULL;
    for (const ElfW(Dyn) *e = dyn; e && e->d_tag != DT_NULL; e++) {
        uintptr_t p = abs_ptr(base, e->d_un.d_ptr);
        if (e->d_tag == DT_SYMTAB)
            symtab = (const ElfW(Sym) *)p;
        else if (e->d_tag == DT_STRTAB)
            strtab = (const char *)p;
        else if (e->d_tag == DT_GNU_HASH)
            gnu = (const uint32_t *)p;
        else if (e->d_tag == DT_VERSYM)
            versym = (const ElfW(Half) *)p;
    }
    if (!symtab || !strtab || !gnu)
        return SYM_UNKNOWN;
    if (!gnu[0])
        return 0;
    uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_words = gnu[2];
    const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(gnu + 4) + bloom_words);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t h = 5381;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        h = h * 33 + *c;
    uint32_t i = buckets[h % nbuckets];
    if (i < symoffset)
        return 0;
    for (;; i++) {
        uint32_t ch = chain[i - symoffset];
        const ElfW(Sym) *sym = &symtab[i];
        if ((ch | 1) == (h | 1) && !strcmp(strtab + sym->st_name, name)) {
            uintptr_t at = sym->st_shndx == SHN_ABS ? sym->st_value : base + sym->st_value;
            if (strict ? sym->st_shndx != SHN_UNDEF && sym->st_value && ELF64_ST_TYPE(sym->st_info) == STT_FUNC &&
                             !(versym && (versym[i] & 0x8000))
                       : (sym->st_value || sym->st_shndx == SHN_ABS) && at != except)
                return at;
        }
        if (ch & 1)
            return 0;
    }
}

/* A module's own definition of a function name (find_symbol, strict), or NULL. */
static void *module_defines(const struct link_map *l, const char *name)
{
    uintptr_t at = find_symbol(l->l_addr, l->l_ld, name, true, 0);
    return at == SYM_UNKNOWN ? NULL : (void *)at;
}

/* The definition of name the process binds to: dlsym(RTLD_DEFAULT), unless
 * that is the program's canonical PLT entry (see module_defines); then the
 * first module after the program that defines it. */
static void *bound_definition(const char *name)
{
    void *f = dlsym(RTLD_DEFAULT, name);
    const struct link_map *exe = _r_debug.r_map;
    Dl_info di;
    struct link_map *l = NULL;
    if (!f || !exe || !dladdr1(f, &di, (void **)&l, RTLD_DL_LINKMAP) || l != exe || module_defines(exe, name))
        return f;
    for (l = exe->l_next; l; l = l->l_next)
        if (l->l_addr != self_base && (f = module_defines(l, name)))
            return f;
    return NULL;
}

/* ---- the program's own lookups (lookup.c) --------------------------------------- */

bool redirect_hook_of(const char *name, void **ours, void **real)
{
    target *t = arrival == AGENT_LATE ? find_target(name) : NULL;
    if (!t)
        return false;
    *ours = __atomic_load_n(&t->ours, __ATOMIC_ACQUIRE);
    *real = __atomic_load_n(&t->real, __ATOMIC_ACQUIRE);
    return *ours && *real;
}

typedef struct scope_look {
    const char *name;
    uintptr_t real, caller;
    redirect_scope *s;
    ns_cursor ns;
} scope_look;

static bool holds(const struct dl_phdr_info *info, uintptr_t a)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && a >= start && a - start < ph->p_memsz)
            return true;
    }
    return false;
}

/* Called holding the loader's list lock (dl_iterate_phdr). The agent's own
 * definitions are its hooks, which no module's lookup reaches (it is in no
 * scope but its own); ld.so's count (they are in every scope). */
static int look_at_scope(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    scope_look *w = arg;
    dyninfo d;
    bool readable = read_dynamic(info, &d);
    bool main_ns = readable && in_main_namespace_next(&w->ns, info, d.dyn);
    if (holds(info, w->caller)) {
        w->s->caller_elsewhere = !main_ns;
        w->s->caller_is_program = main_ns && d.dyn == _r_debug.r_map->l_ld;
    }
    if (!main_ns || info->dlpi_addr == self_base || info->dlpi_addr == getauxval(AT_SYSINFO_EHDR))
        return 0;
    if (d.dyn == _r_debug.r_map->l_ld)
        w->s->program_has = find_symbol(info->dlpi_addr, d.dyn, w->name, false, 0) != 0;
    if (find_symbol(info->dlpi_addr, d.dyn, w->name, false, w->real) != 0)
        w->s->other = true;
    return 0;
}

bool redirect_scope_of(const char *name, void *real, const void *caller, redirect_scope *s)
{
    *s = (redirect_scope){0};
    if (!_r_debug.r_map || !agent_loader_enter())
        return false;
    scope_look w = {name, (uintptr_t)real, (uintptr_t)caller, s, {_r_debug.r_map, false}};
    dl_iterate_phdr(look_at_scope, &w);
    agent_loader_leave();
    return true;
}

/* ---- deciding how the agent arrived -------------------------------------------- */

static int find_other_copy(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    dyninfo d;
    if (info->dlpi_addr == self_base || skipped(info) || !read_dynamic(info, &d))
        return 0;
    if (d.soname && !strcmp(d.soname, AGENT_SONAME)) {
        *(bool *)arg = true;
        return 1;
    }
    return 0;
}

/* Whether a tracer holds this thread now: ltr's injector does, for the
 * dlopen that brings the agent in (inject.c); the ld.so.preload shim's
 * dlopen has none (unless the program runs under a debugger: it is then
 * taken for attached, and joins only sessions that name it). The thread's
 * own status: the injector takes any thread, and /proc/self/status is the
 * main thread's (node, its main thread in epoll_wait, was attached through
 * another, taken for preloaded, and joined every open heap session). Raw
 * system calls: the agent's own hooks of open and read are not ready yet. */
static bool held_by_tracer(void)
{
    char buf[2048];
    /* thread-self, not task/TID: right even where /proc is another pid
     * namespace's than the thread's gettid() */
    long fd = syscall(SYS_openat, AT_FDCWD, "/proc/thread-self/status", O_RDONLY | O_CLOEXEC);
    long n = fd < 0 ? -1 : syscall(SYS_read, fd, buf, sizeof buf - 1);
    if (fd >= 0)
        syscall(SYS_close, fd);
    if (n <= 0)
        return false;
    buf[n] = 0;
    const char *t = strstr(buf, "\nTracerPid:");
    return t && atol(t + strlen("\nTracerPid:")) != 0;
}

enum agent_arrival redirect_decide(void)
{
    agent_busy++;
    Dl_info self;
    if (dladdr((void *)redirect_decide, &self)) {
        self_base = (uintptr_t)self.dli_fbase;
        self_path = self.dli_fname;
    }
    /* Preloaded (LD_PRELOAD, /etc/ld.so.preload), the agent was loaded before
     * libc and comes before it in the loader's list; dlopen'ed, after it. */
    bool interposes = false;
    for (const struct link_map *l = _r_debug.r_map; l; l = l->l_next) {
        size_t n = l->l_name ? strlen(l->l_name) : 0;
        if (l->l_addr == self_base) {
            interposes = true;
            break;
        }
        if (n >= 10 && !strcmp(l->l_name + n - 10, "/libc.so.6"))
            break;
    }
    bool other = false;
    if (!interposes)
        dl_iterate_phdr(find_other_copy, &other);
    arrival = interposes ? AGENT_PRELOADED : other ? AGENT_DUPLICATE : AGENT_LATE;
    injected = arrival == AGENT_LATE && held_by_tracer();
    agent_leave();
    return arrival;
}

bool redirect_injected(void) { return injected; }

/* The agent's own definitions: from its own handle, since a reference from
 * its code binds like any other module's (to libc's, when it came late). */
static bool resolve_ours(void)
{
    void *h = self_path ? dlopen(self_path, RTLD_NOLOAD | RTLD_LAZY) : NULL;
    if (!h)
        return false;
    lookup_real_dlsym = bound_definition("dlsym");
    for (size_t i = 0; i < NTARGETS; i++) {
        const char *n = targets[i].name;
        /* dlsym only with the real one to pass lookups on to */
        targets[i].ours = !strcmp(n, "dlopen")    ? (void *)redirect_dlopen
                          : !strcmp(n, "dlmopen") ? (void *)redirect_dlmopen
                          : !strcmp(n, "dlsym")   ? (lookup_real_dlsym ? (void *)lookup_dlsym : NULL)
                                                  : dlsym(h, n);
    }
    dlclose(h); /* -z nodelete: only the count */
    real_dlopen = bound_definition("dlopen");
    real_dlmopen = bound_definition("dlmopen");
    dlerror();
    return real_dlopen && real_dlmopen;
}

/* ---- the sweep --------------------------------------------------------------- */

typedef struct patch {
    uintptr_t base;         /* module, to find it again */
    const ElfW(Dyn) *dyn;
    uintptr_t slot, was, value; /* the slot is set to value if it still holds was */
    uintptr_t relro_lo, relro_hi; /* nonzero: the slot is in RELRO */
    int prot;               /* of the RELRO pages now (-1: unknown) */
} patch;

typedef struct patch_list {
    patch *v;
    size_t n, cap;
} patch_list;

static void add_patch(patch_list *l, const patch *p)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        patch *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = *p;
}

static void scan_relocs(const struct dl_phdr_info *info, const dyninfo *d, const ElfW(Rela) *r,
                        size_t size, patch_list *out)
{
    for (size_t i = 0; r && i < size / sizeof *r; i++) {
        unsigned type = ELF64_R_TYPE(r[i].r_info);
        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
            continue;
        const ElfW(Sym) *sym = &d->symtab[ELF64_R_SYM(r[i].r_info)];
        if (sym->st_shndx != SHN_UNDEF) /* it defines its own: keep it */
            continue;
        target *t = find_target(d->strtab + sym->st_name);
        if (!t || !t->ours)
            continue;
        uintptr_t slot = info->dlpi_addr + r[i].r_offset;
        uintptr_t now = __atomic_load_n((uintptr_t *)slot, __ATOMIC_RELAXED);
        bool bound = now == (uintptr_t)t->real && t->real;
        bool lazy = type == R_X86_64_JUMP_SLOT && now >= d->lo && now < d->hi;
        if (now == (uintptr_t)t->ours || !(bound || lazy))
            continue;
        bool relro = slot >= d->relro_lo && slot < d->relro_hi;
        add_patch(out, &(patch){info->dlpi_addr, d->dyn, slot, now, (uintptr_t)t->ours,
                                relro ? d->relro_lo : 0, relro ? d->relro_hi : 0, -1});
    }
}

/* One sweep's look at the modules: what to patch, and where the walk is on
 * the loader's list (a sweep follows each dlopen: finding each module's
 * namespace by walking the whole list made it cost the square of the
 * modules, 2.2 ms a dlopen beside 800 libraries). */
typedef struct sweep {
    patch_list patches; /* each module's together, in the order the walk met them */
    ns_cursor ns;
    unsigned long long adds, subs; /* the loader's counts of loads and unloads then */
    size_t next;                   /* apply: the first patch of the modules it has not met */
} sweep;

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    sweep *w = arg;
    dyninfo d;
    /* the skipped ones too go by the cursor, which keeps it in step */
    if (!read_dynamic(info, &d) || !in_main_namespace_next(&w->ns, info, d.dyn) || skipped(info))
        return 0;
    w->adds = info->dlpi_adds;
    w->subs = info->dlpi_subs;
    scan_relocs(info, &d, d.jmprel, d.jmprelsz, &w->patches);
    scan_relocs(info, &d, d.rela, d.relasz, &w->patches);
    return 0;
}

/* The protection of each RELRO range asked of the kernel, one question a
 * range: the whole file costs the kernel some microseconds a module, and
 * was read after each dlopen (6.6 ms a dlopen beside 800 libraries built
 * with -z now). False if the kernel has no such question. */
static bool query_prots(int fd, patch_list *l)
{
    uintptr_t asked = 0;
    int prot = -1;
    for (size_t i = 0; i < l->n; i++) {
        patch *p = &l->v[i];
        if (!p->relro_lo)
            continue;
        if (p->relro_lo != asked) { /* a module's patches are together: one question each range */
            struct procmaps_query q = {.size = sizeof q, .query_addr = p->relro_lo};
            if (ioctl(fd, PROCMAPS_QUERY, &q) != 0 && errno != ENOENT)
                return false;
            prot = q.vma_end ? (q.vma_flags & PROCMAPS_QUERY_READABLE ? PROT_READ : 0) |
                                   (q.vma_flags & PROCMAPS_QUERY_WRITABLE ? PROT_WRITE : 0)
                             : -1; /* none mapped there */
            asked = p->relro_lo;
        }
        p->prot = prot;
    }
    return true;
}

/* The same from the whole file, for a kernel before 6.11. */
static bool note_prot(uintptr_t lo, uintptr_t hi, const char *perms, const char *name, void *ctx)
{
    (void)name;
    patch_list *l = ctx;
    int prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0);
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].relro_lo && l->v[i].relro_lo >= lo && l->v[i].relro_lo < hi)
            l->v[i].prot = prot;
    return true;
}

/* The protection of the RELRO ranges now: read only once ld.so is done
 * with the module; still writable while ld.so relocates it (another thread
 * in dlopen), and then left as it was. */
static void read_prots(patch_list *l)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    if (!query_prots(fd, l)) {
        for (size_t i = 0; i < l->n; i++)
            l->v[i].prot = -1;
        procmaps_each(fd, note_prot, l);
    }
    close(fd);
}

static bool same(const patch *a, const patch *b)
{
    return a->base == b->base && a->dyn == b->dyn;
}

/* Sets the slots from p to end that share p's RELRO range (or are outside
 * RELRO, as p), its pages opened meanwhile if ld.so made them read-only. */
static void patch_range(patch *p, patch *end)
{
    if (!p->slot)
        return;
    bool opened = p->relro_lo && p->prot == PROT_READ;
    if (p->relro_lo && p->prot != PROT_READ && p->prot != (PROT_READ | PROT_WRITE))
        return; /* unknown: leave it */
    if (opened && mprotect((void *)p->relro_lo, p->relro_hi - p->relro_lo, PROT_READ | PROT_WRITE))
        return;
    for (patch *q = p; q < end; q++) {
        if (!q->slot || q->relro_lo != p->relro_lo)
            continue;
        /* only if it still holds what it held when read (the loader may
         * have bound it lazily since): else the next sweep sees it */
        uintptr_t was = q->was;
        __atomic_compare_exchange_n((uintptr_t *)q->slot, &was, q->value, false, __ATOMIC_RELEASE,
                                    __ATOMIC_RELAXED);
        q->slot = 0;
    }
    if (opened)
        mprotect((void *)p->relro_lo, p->relro_hi - p->relro_lo, PROT_READ);
}

/* The index of the module's first patch, or the count if it has none.
 * While the loader's list is as collect saw it (its counts unchanged), this
 * walk meets the modules in the same order: the module's patches, if any,
 * are the next ones, found in one step instead of a look at every patch for
 * each module. Else one may have gone meanwhile, and all are looked at. */
static size_t module_patches(const sweep *w, const struct dl_phdr_info *info)
{
    const patch_list *l = &w->patches;
    if (info->dlpi_adds == w->adds && info->dlpi_subs == w->subs)
        return w->next < l->n && l->v[w->next].base == info->dlpi_addr ? w->next : l->n;
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].base == info->dlpi_addr)
            return i;
    return l->n;
}

/* Applies the patches of modules still loaded (the loader's list lock held:
 * none can be unmapped meanwhile), one RELRO range opened at a time. */
static int apply(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    sweep *w = arg;
    patch_list *l = &w->patches;
    size_t i = module_patches(w, info), end = i;
    while (end < l->n && same(&l->v[end], &l->v[i]))
        end++;
    if (i == end)
        return 0;
    w->next = end;
    dyninfo d;
    if (!read_dynamic(info, &d) || d.dyn != l->v[i].dyn)
        return 0;
    for (; i < end; i++)
        patch_range(&l->v[i], &l->v[end]);
    return 0;
}

static pthread_mutex_t sweep_lock = PTHREAD_MUTEX_INITIALIZER;

void redirect_all(void)
{
    if (arrival != AGENT_LATE)
        return;
    int e = errno;
    agent_busy++;
    agent_loader_wait(); /* before sweep_lock: no fork while one holds it (a new module must be swept) */
    pthread_mutex_lock(&sweep_lock);
    resolve_real();
    sweep w = {.ns = {_r_debug.r_map, false}};
    dl_iterate_phdr(collect, &w);
    bool relro = false;
    for (size_t i = 0; i < w.patches.n; i++)
        relro |= w.patches.v[i].relro_lo != 0;
    if (relro)
        read_prots(&w.patches);
    if (w.patches.n)
        dl_iterate_phdr(apply, &w);
    free(w.patches.v);
    pthread_mutex_unlock(&sweep_lock);
    agent_loader_leave();
    agent_leave();
    errno = e;
}

/* The constructor's part, once the hooks can run. */
__attribute__((constructor(200))) static void redirect_start(void)
{
    if (arrival == AGENT_LATE && resolve_ours())
        redirect_all();
}

/* ---- the loader ---------------------------------------------------------------- */

/* The directory ld.so takes for $ORIGIN in a module's paths: that of its
 * name, or of /proc/self/exe for the program. */
static bool origin_of(const Dl_info *caller, bool program, char *out, size_t size)
{
    if (program || !caller->dli_fname || !*caller->dli_fname) {
        ssize_t n = readlink("/proc/self/exe", out, size - 1);
        if (n <= 0)
            return false;
        out[n] = 0;
    } else if (snprintf(out, size, "%s", caller->dli_fname) >= (int)size) {
        return false;
    }
    char *slash = strrchr(out, '/');
    if (!slash)
        return false;
    *slash = 0;
    return true;
}

/* dir/file with $ORIGIN expanded, if that file exists; false otherwise (or
 * for another token: $LIB, $PLATFORM are left to the real dlopen). */
static bool try_dir(const char *dir, size_t len, const char *origin, const char *file, char *out,
                    size_t size)
{
    size_t n = 0;
    for (size_t i = 0; i < len && n < size; i++) {
        const char *tok = NULL;
        size_t skip = 0;
        if (!strncmp(dir + i, "$ORIGIN", 7) && (i + 7 >= len || dir[i + 7] == '/'))
            tok = origin, skip = 7;
        else if (!strncmp(dir + i, "${ORIGIN}", 9))
            tok = origin, skip = 9;
        else if (dir[i] == '$')
            return false;
        if (tok) {
            if (!origin)
                return false;
            n += (size_t)snprintf(out + n, size - n, "%s", tok);
            i += skip - 1;
        } else {
            out[n++] = dir[i];
        }
    }
    if (n == 0 || n >= size || (size_t)snprintf(out + n, size - n, "/%s", file) >= size - n)
        return false;
    return access(out, F_OK) == 0;
}

/* The first existing dir/file of a colon-separated list. */
static bool search(const char *list, const char *origin, const char *file, char *out, size_t size)
{
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ":");
        if (len && try_dir(p, len, origin, file, out, size))
            return true;
        p += len + (p[len] == ':');
    }
    return false;
}

/* What ld.so would open for a bare name dlopen'ed by the module at caller,
 * as far as that module's RPATH/RUNPATH decides it: its path in out, or
 * false when the real dlopen finds the same from the agent (no such path,
 * a name with a slash, the library loaded already, LD_LIBRARY_PATH first). */
static bool caller_search(const void *caller, const char *file, char *out, size_t size)
{
    Dl_info ci;
    struct link_map *l = NULL;
    if (!file || strchr(file, '/') || !dladdr1(caller, &ci, (void **)&l, RTLD_DL_LINKMAP) || !l ||
        (uintptr_t)ci.dli_fbase == self_base)
        return false;
    const char *strtab = NULL, *rpath = NULL, *runpath = NULL;
    uintptr_t rp = 0, rn = 0;
    bool has_rp = false, has_rn = false;
    for (const ElfW(Dyn) *e = l->l_ld; e && e->d_tag != DT_NULL; e++) {
        if (e->d_tag == DT_STRTAB)
            strtab = (const char *)abs_ptr(l->l_addr, e->d_un.d_ptr);
        else if (e->d_tag == DT_RPATH)
            rp = e->d_un.d_val, has_rp = true;
        else if (e->d_tag == DT_RUNPATH)
            rn = e->d_un.d_val, has_rn = true;
    }
    if (strtab) {
        rpath = has_rp && !has_rn ? strtab + rp : NULL; /* a RUNPATH hides the RPATH */
        runpath = has_rn ? strtab + rn : NULL;
    }
    if (!rpath && !runpath)
        return false;
    void *loaded = real_dlopen(file, RTLD_LAZY | RTLD_NOLOAD);
    if (loaded) { /* by that name already: ld.so takes it without a search */
        dlclose(loaded);
        return false;
    }
    dlerror();
    char origin[4096];
    const char *o = origin_of(&ci, l == _r_debug.r_map, origin, sizeof origin) ? origin : NULL;
    if (rpath) /* before LD_LIBRARY_PATH */
        return search(rpath, o, file, out, size);
    if (search(getenv("LD_LIBRARY_PATH"), NULL, file, out, size))
        return false; /* LD_LIBRARY_PATH comes first, the real dlopen finds it too */
    return search(runpath, o, file, out, size);
}

static void *redirect_dlopen(const char *file, int mode)
{
    int e = errno;
    char path[4096];
    agent_busy++;
    bool found = caller_search(__builtin_return_address(0), file, path, sizeof path);
    agent_leave();
    errno = e;
    void *h = real_dlopen(found ? path : file, mode);
    if (h)
        redirect_all();
    return h;
}

static void *redirect_dlmopen(Lmid_t ns, const char *file, int mode)
{
    int e = errno;
    char path[4096];
    agent_busy++;
    bool found = caller_search(__builtin_return_address(0), file, path, sizeof path);
    agent_leave();
    errno = e;
    void *h = real_dlmopen(ns, found ? path : file, mode);
    if (h)
        redirect_all();
    return h;
}
