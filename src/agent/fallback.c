/*
 * agent/fallback.c — libunwind, for the stacks the agent's own unwinder
 * (unwind.c) gives up on, used only while the pipe libunwind validates
 * memory through is still its own.
 *
 * libunwind opens a pipe when it starts (tdep_init, at the agent's first
 * call into it) and, where it follows a frame without unwind information
 * (a JIT's code, a frame chain it guesses), tests each page it reads by
 * reading a byte from one end and writing the page's first byte into the
 * other; a read that fails closes both numbers and opens a new pipe. It
 * never checks that the numbers are still its pipe. A daemon that closes
 * every fd after the agent started, and opens its own files, has them in
 * those numbers: heap-target's closeall mode had a file read from, and two
 * files closed under it, by one allocation made from code without unwind
 * information. libunwind has no switch for it, and its remote interface
 * (own memory accessors) is not in the local library the agent links.
 *
 * So the agent learns the pipe's numbers when libunwind opens it, from
 * libunwind's own call: its relocation entry for pipe2 is pointed at the
 * agent's wrapper before libunwind starts. (It guessed them before: a pipe
 * opened and closed just before libunwind's takes the lowest free numbers,
 * which libunwind's then takes. Attached late into a running program, one
 * of whose threads opens files, the program took them in between 3 times
 * out of 4, and every stack left to libunwind went without its frames for
 * the process's life. The guess stays for a libunwind whose entry is not
 * found, checked: both ends of one pipe, non-blocking.) The agent calls
 * libunwind only while both numbers are still that pipe (two
 * fstat, only on this rare path: python3's start had no stack left to
 * libunwind). Once they are not, or were never known (libunwind started
 * before the agent), a stack the agent's unwinder gives up on goes without
 * its frames: the event is recorded, under stack 0. So too once libunwind
 * opened a second pipe (its read failed: its numbers were not its pipe).
 * LTR_HEAP_UNWIND=check says how many went so.
 */
#define UNW_LOCAL_ONLY
#include "agent/agent.h"
#include "agent/unwind.h"
#include "prim/prim.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <libunwind.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int pipe_fd[2] = {-1, -1};
static dev_t pipe_dev;
static ino_t pipe_ino;
static _Atomic bool pipe_ours; /* false for good once not */
static _Atomic uint64_t n_refused;

/* Whether fd is an end of libunwind's pipe, opened for access mode acc. */
static bool pipe_end(int fd, int acc, struct stat *st)
{
    int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
    return fl >= 0 && (fl & O_ACCMODE) == acc && (fl & O_NONBLOCK) && fstat(fd, st) == 0 &&
           S_ISFIFO(st->st_mode);
}

/* libunwind's pipe2: the pipe it opened, as it opened it. Its first is the
 * one to keep to; a second is opened after a read from the first failed,
 * which the agent's check lets happen only if the program closed the pipe
 * meanwhile: none is trusted then. */
static _Atomic int pipes_seen;
static int seen_fd[2] = {-1, -1};
static int wrapped_pipe2(int fd[2], int flags)
{
    int rc = pipe2(fd, flags);
    if (rc == 0) { /* kept for the process's life: out of the program's way (prim.h) */
        fd[0] = ltr_fd_move_high(fd[0]);
        fd[1] = ltr_fd_move_high(fd[1]);
    }
    if (rc == 0 && atomic_fetch_add(&pipes_seen, 1) == 0) {
        seen_fd[0] = fd[0];
        seen_fd[1] = fd[1];
    } else if (rc == 0) {
        atomic_store(&pipe_ours, false);
    }
    return rc;
}

typedef struct libunwind_slot {
    uintptr_t in;            /* an address inside libunwind */
    uintptr_t slot;          /* its relocation entry for pipe2; 0: not found */
    uintptr_t relro_lo, relro_hi;
} libunwind_slot;

static uintptr_t abs_ptr(uintptr_t base, uintptr_t p)
{
    return p < base ? p + base : p; /* ld.so relocates d_ptr in place on x86-64 */
}

/* Finds libunwind's module (the one holding s->in) and its entry for pipe2. */
static int find_slot(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    libunwind_slot *s = arg;
    uintptr_t base = info->dlpi_addr, page = (uintptr_t)sysconf(_SC_PAGESIZE), relro_lo = 0, relro_hi = 0;
    const ElfW(Dyn) *dyn = NULL;
    bool holds = false;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = base + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && s->in >= start && s->in < start + ph->p_memsz)
            holds = true;
        else if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)start;
        else if (ph->p_type == PT_GNU_RELRO) {
            relro_lo = start & ~(page - 1);
            relro_hi = (start + ph->p_memsz) & ~(page - 1);
        }
    }
    if (!holds || !dyn)
        return 0;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const ElfW(Rela) *tab[2] = {NULL, NULL};
    size_t len[2] = {0, 0};
    for (const ElfW(Dyn) *e = dyn; e->d_tag != DT_NULL; e++) {
        switch (e->d_tag) {
        case DT_SYMTAB: symtab = (const ElfW(Sym) *)abs_ptr(base, e->d_un.d_ptr); break;
        case DT_STRTAB: strtab = (const char *)abs_ptr(base, e->d_un.d_ptr); break;
        case DT_JMPREL: tab[0] = (const ElfW(Rela) *)abs_ptr(base, e->d_un.d_ptr); break;
        case DT_PLTRELSZ: len[0] = e->d_un.d_val; break;
        case DT_RELA: tab[1] = (const ElfW(Rela) *)abs_ptr(base, e->d_un.d_ptr); break;
        case DT_RELASZ: len[1] = e->d_un.d_val; break;
        default: break;
        }
    }
    for (int t = 0; symtab && strtab && t < 2; t++)
        for (size_t i = 0; tab[t] && i < len[t] / sizeof *tab[t]; i++) {
            unsigned type = ELF64_R_TYPE(tab[t][i].r_info);
            const ElfW(Sym) *sym = &symtab[ELF64_R_SYM(tab[t][i].r_info)];
            if ((type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT) && sym->st_shndx == SHN_UNDEF &&
                !strcmp(strtab + sym->st_name, "pipe2")) {
                s->slot = base + tab[t][i].r_offset;
                bool relro = s->slot >= relro_lo && s->slot < relro_hi;
                s->relro_lo = relro ? relro_lo : 0;
                s->relro_hi = relro ? relro_hi : 0;
                return 1;
            }
        }
    return 1;
}

/* Points libunwind's pipe2 at wrapped_pipe2, before libunwind starts (its
 * RELRO pages, read-only since ld.so relocated it, opened meanwhile). */
static bool wrap_libunwind_pipe2(void)
{
    libunwind_slot s = {.in = (uintptr_t)&unw_backtrace};
    dl_iterate_phdr(find_slot, &s);
    if (!s.slot)
        return false;
    size_t span = s.relro_hi - s.relro_lo;
    if (s.relro_lo && mprotect((void *)s.relro_lo, span, PROT_READ | PROT_WRITE))
        return false;
    __atomic_store_n((uintptr_t *)s.slot, (uintptr_t)wrapped_pipe2, __ATOMIC_RELEASE);
    if (s.relro_lo)
        mprotect((void *)s.relro_lo, span, PROT_READ);
    return true;
}

void fallback_init(void)
{
    bool wrapped = wrap_libunwind_pipe2();
    int probe[2];
    bool probed = !wrapped && pipe2(probe, O_CLOEXEC) == 0;
    if (probed) {
        close(probe[0]);
        close(probe[1]);
    }
    /* libunwind starts here (tdep_init), opening its pipe */
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    if (wrapped && atomic_load(&pipes_seen) == 1) {
        probe[0] = seen_fd[0];
        probe[1] = seen_fd[1];
    } else if (wrapped) {
        return; /* it started before the agent (the program's own use): numbers unknown */
    }
    struct stat r, w;
    if ((wrapped || probed) && pipe_end(probe[0], O_RDONLY, &r) && pipe_end(probe[1], O_WRONLY, &w) &&
        r.st_dev == w.st_dev && r.st_ino == w.st_ino) {
        pipe_fd[0] = probe[0];
        pipe_fd[1] = probe[1];
        pipe_dev = r.st_dev;
        pipe_ino = r.st_ino;
        atomic_store(&pipe_ours, atomic_load(&pipes_seen) <= 1);
    }
}

/* Both numbers still libunwind's pipe (a fork child shares it; an exec
 * closes it, and the new image's agent starts again). */
static bool pipe_intact(void)
{
    if (!atomic_load_explicit(&pipe_ours, memory_order_acquire)) /* pipe_fd set before it */
        return false;
    struct stat a, b;
    if (fstat(pipe_fd[0], &a) == 0 && fstat(pipe_fd[1], &b) == 0 && a.st_dev == pipe_dev &&
        a.st_ino == pipe_ino && b.st_dev == pipe_dev && b.st_ino == pipe_ino)
        return true;
    atomic_store_explicit(&pipe_ours, false, memory_order_relaxed);
    return false;
}

int fallback_backtrace(void **buf, int max)
{
    if (!pipe_intact()) {
        atomic_fetch_add_explicit(&n_refused, 1, memory_order_relaxed);
        return -1;
    }
    if (!agent_loader_enter()) /* libunwind looks objects up in the loader's list; a fork holds it */
        return -1;
    int n = unw_backtrace(buf, max);
    agent_loader_leave();
    return n;
}

uint64_t fallback_refused(void)
{
    return atomic_load_explicit(&n_refused, memory_order_relaxed);
}
