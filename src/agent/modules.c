/*
 * agent/modules.c — the ELF objects loaded in the process (main program,
 * vDSO, shared libraries), with path, build-id and PT_LOAD segments, written
 * as MODULE records so that a trace can be symbolized later, elsewhere.
 *
 * The agent keeps the list it last wrote; a rescan (after dlclose, and when a
 * new stack appears while the loader's counters moved) compares the loader's
 * list with it and writes what was loaded or unloaded in between. dlopen is
 * not wrapped: glibc resolves $ORIGIN and namespaces from dlopen's caller,
 * which a wrapper would change.
 *
 * The loader's list is read (dl_iterate_phdr) with no lock of the agent's
 * held, and merged under mod_lock afterwards: dl_iterate_phdr waits for the
 * loader's write lock, and glibc's dlclose frees the unloaded objects' link
 * maps holding that lock. A free there that is its thread's first event in
 * a session waits for the agent's locks; had their holder been waiting for
 * the loader, neither would ever go on.
 */
#include "agent/agent.h"
#include "agent/procmaps.h"
#include "base/records.h"
#include "prim/prim.h"

#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_SEGMENTS 16
#define MAX_BUILD_ID 64

typedef struct segment {
    uint64_t start, end, offset;
    uint8_t flags;
} segment;

typedef struct module {
    uint64_t bias;
    char *path;
    uint8_t build_id[MAX_BUILD_ID];
    uint8_t build_id_len;
    bool matched; /* merge_locked: the other look holds it too */
    uint32_t owed;    /* sessions whose load record found no room (modules_pay_owed) */
    uint64_t owed_ts; /* the time that record was to have */
    uint16_t nseg;
    segment seg[MAX_SEGMENTS];
} module;

typedef struct module_list {
    module *v;
    size_t n, cap;
} module_list;

/* What the loader held at one look: the list and its load/unload counters. */
struct modules_view {
    module_list list;
    unsigned long long adds, subs;
};

static pthread_mutex_t mod_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t loader_use = PTHREAD_RWLOCK_INITIALIZER;
/* The thread that holds loader_use for a fork, 0: none. Fork handlers run
 * latest-registered first, so a late agent's holds the lock while the
 * program's own run, and one of those may allocate: that thread then walks
 * the loader's list under its own write lock. Taking the read lock there
 * failed (EDEADLK, unchecked) and the leave released the write lock, which
 * the parent's handler released again: the next fork hung for good
 * (test_e2e_attach, test_fork_handler_that_allocates). */
static _Atomic pid_t fork_holder;

static bool holds_for_fork(void)
{
    pid_t h = atomic_load_explicit(&fork_holder, memory_order_relaxed);
    return h && h == (pid_t)syscall(SYS_gettid); /* a system call only while some thread forks */
}

/* The lock prefers readers (glibc's default kind): a try fails only while
 * a fork holds it, never because a fork waits for it. */
bool agent_loader_enter(void)
{
    return holds_for_fork() || pthread_rwlock_tryrdlock(&loader_use) == 0;
}

void agent_loader_wait(void)
{
    if (!holds_for_fork())
        pthread_rwlock_rdlock(&loader_use);
}

void agent_loader_leave(void)
{
    if (!holds_for_fork())
        pthread_rwlock_unlock(&loader_use);
}

int agent_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg)
{
    if (!agent_loader_enter())
        return -1;
    int r = dl_iterate_phdr(cb, arg);
    agent_loader_leave();
    return r;
}

static void fork_prepare(void)
{
    pthread_rwlock_wrlock(&loader_use);
    atomic_store_explicit(&fork_holder, (pid_t)syscall(SYS_gettid), memory_order_relaxed);
}

static void fork_parent(void)
{
    atomic_store_explicit(&fork_holder, 0, memory_order_relaxed);
    pthread_rwlock_unlock(&loader_use);
}

static void fork_child(void)
{
    atomic_store_explicit(&fork_holder, 0, memory_order_relaxed);
    pthread_rwlock_init(&loader_use, NULL);
}
static module_list known;
static unsigned long long seen_adds, seen_subs;

/* ---- reading the loader's list --------------------------------------------- */

static void read_build_id(module *m, const struct dl_phdr_info *info, const ElfW(Phdr) *ph)
{
    const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
    size_t align = ph->p_align == 8 ? 8 : 4;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
        const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
        const uint8_t *name = p + sizeof *nh;
        const uint8_t *desc = name + ((nh->n_namesz + align - 1) & ~(align - 1));
        if (desc + nh->n_descsz > end)
            return;
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
            nh->n_descsz <= MAX_BUILD_ID) {
            memcpy(m->build_id, desc, nh->n_descsz);
            m->build_id_len = (uint8_t)nh->n_descsz;
            return;
        }
        p = desc + ((nh->n_descsz + align - 1) & ~(align - 1));
    }
}

static char *module_path(const struct dl_phdr_info *info, size_t index)
{
    if (info->dlpi_name && info->dlpi_name[0])
        return procmaps_object_path(info); /* absolute: a reader elsewhere, later, finds the file */
    if (index == 0) { /* the main program */
        char exe[4096];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = 0;
        return strdup(exe);
    }
    return strdup("");
}

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
    modules_view *view = arg;
    module_list *l = &view->list;
    view->adds = info->dlpi_adds;
    view->subs = info->dlpi_subs;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        module *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return 1;
        l->v = v;
        l->cap = cap;
    }
    module *m = &l->v[l->n];
    memset(m, 0, sizeof *m);
    m->bias = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_NOTE && !m->build_id_len)
            read_build_id(m, info, ph);
        if (ph->p_type != PT_LOAD || m->nseg == MAX_SEGMENTS)
            continue;
        segment *sg = &m->seg[m->nseg++];
        sg->start = info->dlpi_addr + ph->p_vaddr;
        sg->end = sg->start + ph->p_memsz;
        sg->offset = ph->p_offset;
        sg->flags = (uint8_t)((ph->p_flags & PF_R ? 1 : 0) | (ph->p_flags & PF_W ? 2 : 0) |
                              (ph->p_flags & PF_X ? 4 : 0));
    }
    if (!m->nseg)
        return 0;
    m->path = module_path(info, l->n);
    l->n++;
    return 0;
}

static void list_free(module_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].path);
    free(l->v);
    *l = (module_list){0};
}

static bool same_module(const module *a, const module *b)
{
    return a->bias == b->bias && a->seg[0].start == b->seg[0].start &&
           !strcmp(a->path ? a->path : "", b->path ? b->path : "");
}

/* ---- comparing two looks ---------------------------------------------------
 * Each look is matched against the known list through a hash table of the
 * known modules' indexes, by load address: one pass over each list. Looking
 * each module up in the other list instead took the square of the modules,
 * and ran after every dlopen and dlclose: with 800 libraries loaded, 30 % of
 * such a program's time in perf, about 0.3 ms on the first event after each
 * dlopen (docs/benchmarks.md, "The agent's module list"). The table lives
 * from one merge to the next (under mod_lock), grown, never shrunk, so a
 * merge allocates only when the modules outgrow it; that allocation is the
 * real allocator's (every path here runs with the agent's guard up), made
 * under mod_lock as the MODULE records' are, and touches no loader lock. */
static uint32_t *match_slots; /* index in known + 1; 0: empty */
static size_t match_cap;      /* a power of two, at least twice known.n */

/* Of the first segment's address alone: it is the bias in most libraries
 * (their first segment at 0), and equal modules have it equal. */
static size_t match_hash(const module *m, size_t mask)
{
    return (size_t)((m->seg[0].start * 0x9e3779b97f4a7c15ull) >> 32) & mask;
}

/* The table of known's modules; false if it cannot be had (out of memory). */
static bool match_build(void)
{
    size_t want = 64;
    while (want < 2 * known.n)
        want *= 2;
    if (want > match_cap) {
        uint32_t *s = malloc(want * sizeof *s);
        if (!s)
            return false;
        free(match_slots);
        match_slots = s;
        match_cap = want;
    }
    memset(match_slots, 0, match_cap * sizeof *match_slots);
    for (size_t i = 0; i < known.n; i++) {
        size_t h = match_hash(&known.v[i], match_cap - 1);
        while (match_slots[h])
            h = (h + 1) & (match_cap - 1);
        match_slots[h] = (uint32_t)i + 1;
        known.v[i].matched = false;
    }
    return true;
}

/* Marks every module of known and of l that the other one holds too. Every
 * equal one is marked, not just the first, as a module may (in theory) be
 * listed twice: what changed is then what the lists' comparison, module by
 * module, said. */
static void match_marks(module_list *l)
{
    for (size_t j = 0; j < l->n; j++) {
        module *m = &l->v[j];
        m->matched = false;
        for (size_t h = match_hash(m, match_cap - 1); match_slots[h]; h = (h + 1) & (match_cap - 1)) {
            module *k = &known.v[match_slots[h] - 1];
            if (same_module(k, m)) {
                k->matched = m->matched = true;
                m->owed = k->owed; /* still owed: the same module, looked at again */
                m->owed_ts = k->owed_ts;
            }
        }
    }
}

static int read_counters(struct dl_phdr_info *info, size_t size, void *arg)
{
    unsigned long long *c = arg;
    c[0] = info->dlpi_adds;
    c[1] = info->dlpi_subs;
    return 1;
}

/* ---- MODULE records --------------------------------------------------------- */

/* False if the record was not written (no memory, or the session's
 * metadata region had no room). */
static bool write_module(ltr_attach *a, const module *m, uint8_t event, uint64_t ts)
{
    ltr_bytes b = {0};
    size_t rec = ltr_bytes_record_begin(&b, 6 /* LTR_META_MODULE */);
    ltr_bytes_put_u32(&b, a->pid);
    ltr_bytes_put_u64(&b, ts);
    ltr_bytes_put_u8(&b, event);
    ltr_bytes_put_u64(&b, m->bias);
    ltr_bytes_put_str(&b, m->path ? m->path : "");
    ltr_bytes_put_u8(&b, m->build_id_len);
    ltr_bytes_put_mem(&b, m->build_id, m->build_id_len);
    ltr_bytes_put_u16(&b, m->nseg);
    for (uint16_t i = 0; i < m->nseg; i++) {
        ltr_bytes_put_u64(&b, m->seg[i].start);
        ltr_bytes_put_u64(&b, m->seg[i].end);
        ltr_bytes_put_u64(&b, m->seg[i].offset);
        ltr_bytes_put_u8(&b, m->seg[i].flags);
    }
    ltr_bytes_record_end(&b, rec);
    bool ok = !b.failed && ltr_producer_meta_append(a, b.data, (uint32_t)b.len) == 0;
    ltr_bytes_free(&b);
    return ok;
}

_Atomic unsigned agent_modules_owed;
static _Atomic uint64_t owed_tried_ns;

/* A load record that found no room is owed to its session, and written by a
 * later event (modules_pay_owed): left out, every frame of that module in
 * the trace had no module, for good. An unload that finds no room is not
 * written again (the module is no longer known); a reader takes a module
 * loaded later at its place for the one there. */
static void load_to(unsigned s, ltr_attach *a, module *m, uint64_t ts)
{
    if (write_module(a, m, 1, ts)) {
        m->owed &= ~(1u << s);
        return;
    }
    m->owed |= 1u << s;
    m->owed_ts = ts;
    atomic_store_explicit(&agent_modules_owed, 1, memory_order_relaxed);
}

/* Writes one change into every session this process already writes into. */
static void write_everywhere(module *m, uint8_t event, uint64_t ts)
{
    for (unsigned s = 0; s < LTR_MAX_SESSIONS; s++) {
        ltr_attach *a = emit_prepared(s);
        if (a && event == 1)
            load_to(s, a, m, ts);
        else if (a)
            write_module(a, m, event, ts);
    }
}

/* Tried at most once a millisecond: while the region stays full (its
 * recorder stopped), every event would try them all. */
void modules_pay_owed(void)
{
    uint64_t now = ltr_now_ns(), was = atomic_load_explicit(&owed_tried_ns, memory_order_relaxed);
    if (now - was < 1000000 || !atomic_compare_exchange_strong(&owed_tried_ns, &was, now))
        return;
    if (pthread_mutex_trylock(&mod_lock) != 0)
        return; /* another thread merges: the next event tries */
    atomic_store_explicit(&agent_modules_owed, 0, memory_order_relaxed);
    for (size_t i = 0; i < known.n; i++) {
        module *m = &known.v[i];
        for (uint32_t bits = m->owed; bits; bits &= bits - 1) {
            unsigned s = (unsigned)__builtin_ctz(bits);
            ltr_attach *a = emit_prepared(s);
            m->owed &= ~(1u << s);
            if (a)
                load_to(s, a, m, m->owed_ts);
        }
    }
    pthread_mutex_unlock(&mod_lock);
}

_Atomic uint64_t agent_module_change_ts;

/* Changes seen while writing an event are dated just before it, so that the
 * event's frames find their module; others now, to the nanosecond. Either
 * way the events after it are stamped after it (emit.c), though events are
 * rounded down to a coarser grain: published before the records are written. */
static uint64_t change_ts(void)
{
    uint64_t ts = agent_event_ts ? agent_event_ts - 1 : ltr_now_ns();
    uint64_t was = atomic_load(&agent_module_change_ts);
    while (was < ts && !atomic_compare_exchange_weak(&agent_module_change_ts, &was, ts))
        ;
    return ts;
}

modules_view *modules_look(void)
{
    modules_view *v = calloc(1, sizeof *v);
    if (v && agent_iterate_phdr(collect, v) < 0) { /* a fork under way: look next time */
        modules_view_free(v);
        return NULL;
    }
    return v;
}

void modules_view_free(modules_view *v)
{
    if (!v)
        return;
    list_free(&v->list);
    free(v);
}

/* Makes v the known list, writing what changed into every session this
 * process writes into; caller holds mod_lock. Consumes v. A view older than
 * the known list (another thread looked later and merged first) is dropped:
 * the loader's counters only grow. So is one that cannot be compared (no
 * memory for the table): the counters stay as they were, and the next
 * event looks again. Unloads are written before loads: a module loaded
 * where an unloaded one was is then the one a reader finds there. */
static void merge_locked(modules_view *v)
{
    if (!v)
        return;
    if (v->adds < seen_adds || v->subs < seen_subs || !match_build()) {
        modules_view_free(v);
        return;
    }
    match_marks(&v->list);
    uint64_t ts = change_ts();
    for (size_t i = 0; i < known.n; i++)
        if (!known.v[i].matched)
            write_everywhere(&known.v[i], 2, ts);
    for (size_t i = 0; i < v->list.n; i++)
        if (!v->list.v[i].matched)
            write_everywhere(&v->list.v[i], 1, ts);
    list_free(&known);
    known = v->list;
    seen_adds = v->adds;
    seen_subs = v->subs;
    free(v);
}

void modules_init(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    modules_view *v = modules_look();
    pthread_mutex_lock(&mod_lock);
    merge_locked(v);
    pthread_mutex_unlock(&mod_lock);
}

void modules_rescan(bool cheap)
{
    if (cheap) {
        unsigned long long c[2] = {0, 0};
        if (agent_iterate_phdr(read_counters, c) < 0 || (c[0] == seen_adds && c[1] == seen_subs))
            return; /* nothing moved, or a fork under way: look next time */
    }
    modules_view *v = modules_look();
    if (cheap && pthread_mutex_trylock(&mod_lock) != 0) {
        modules_view_free(v); /* another thread is merging right now */
        return;
    }
    if (!cheap)
        pthread_mutex_lock(&mod_lock);
    merge_locked(v);
    pthread_mutex_unlock(&mod_lock);
}

void modules_publish_all(unsigned s, ltr_attach *a, modules_view *v)
{
    pthread_mutex_lock(&mod_lock);
    merge_locked(v);
    uint64_t ts = change_ts();
    for (size_t i = 0; i < known.n; i++)
        load_to(s, a, &known.v[i], ts);
    pthread_mutex_unlock(&mod_lock);
}

void modules_after_fork(void)
{
    pthread_mutex_init(&mod_lock, NULL);
}
