/*
 * inject/target.c — what the injector learns of a process before it touches
 * it: /proc/PID/status facts (state, users, tracer, ignored signals), the
 * executable's architecture, and from /proc/PID/maps where libc and ld.so
 * are. Symbol addresses (dlopen, dlerror, the functions that hold a
 * loader or fork lock while they call back, and ld.so's _rtld_global where
 * the loader's locks are) come from the dynamic symbol
 * table of the very file the process mapped, read with libelf through
 * /proc/PID/map_files (or /proc/PID/root/PATH): right for a process in a
 * container, and for one whose libc was upgraded on disk since it started.
 */
#include "inject/internal.h"
#include "prim/prim.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <signal.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int read_status(inj_target *t, ltr_error *err)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/status", (int)t->pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return errno == ENOENT ? ltr_fail(err, ESRCH, "pid %d: no such process: check the pid (ps, pgrep)",
                                          (int)t->pid)
                               : ltr_fail(err, errno, "pid %d: %s: %s", (int)t->pid, path, strerror(errno));
    while (fgets(line, sizeof line, f)) {
        unsigned u1, u2;
        if (sscanf(line, "State: %c", &t->state) == 1)
            continue;
        if (sscanf(line, "Uid: %u %u", &u1, &u2) == 2)
            t->uid = u1, t->euid = u2;
        else if (sscanf(line, "TracerPid: %d", &t->tracer) == 1 || sscanf(line, "Kthread: %d", &t->kthread) == 1 ||
                 sscanf(line, "Name: %15s", t->name) == 1)
            continue;
        else
            sscanf(line, "SigIgn: %" SCNx64, &t->sig_ignored);
    }
    fclose(f);
    return 0;
}

static int check_state(const inj_target *t, ltr_error *err)
{
    int pid = (int)t->pid;
    if (t->state == 'Z' || t->state == 'X')
        return ltr_fail(err, ESRCH, "pid %d is a zombie: it has exited and waits for its parent to reap it; "
                        "there is nothing left to trace", pid);
    if (t->tracer)
        return ltr_fail(err, EBUSY, "pid %d is being traced by pid %d (a debugger or strace): only one "
                        "tracer at a time; detach it first", pid, (int)t->tracer);
    if (t->state == 'T' || t->state == 't')
        return ltr_fail(err, EBUSY, "pid %d is stopped (state %c): it cannot load anything until it runs; "
                        "continue it (kill -CONT %d) and try again", pid, t->state, pid);
    /* before SigIgn: a kernel thread ignores every signal, and that refusal
     * told to start it with 'ltr run' */
    if (t->kthread)
        return ltr_fail(err, ENOTSUP, "pid %d (%s) is a kernel thread: it runs no program, so it has no heap "
                        "to trace; check the pid (ps -o pid,args)", pid, t->name);
    if (t->sig_ignored & (1ull << (SIGSEGV - 1)))
        return ltr_fail(err, ENOTSUP, "pid %d ignores SIGSEGV, which ltr needs to see the end of the call it "
                        "makes in the process; start it with the agent instead ('ltr run -- CMD')", pid);
    return 0;
}

/* The executable is a 64-bit x86 ELF (a 32-bit program has another ABI). */
static int check_arch(const inj_target *t, ltr_error *err)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)t->pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == EACCES || errno == EPERM ? 0 /* PTRACE_SEIZE says why, with a fix */
                                                 : ltr_fail(err, ESRCH, "pid %d: its executable cannot be read "
                                                            "(%s): it may be exiting", (int)t->pid, strerror(errno));
    Elf64_Ehdr h;
    ssize_t n = pread(fd, &h, sizeof h, 0);
    close(fd);
    if (n != (ssize_t)sizeof h || memcmp(h.e_ident, ELFMAG, SELFMAG) != 0)
        return ltr_fail(err, ENOEXEC, "pid %d (%s) is not an ELF program", (int)t->pid, t->exe);
    if (h.e_ident[EI_CLASS] != ELFCLASS64 || h.e_machine != EM_X86_64)
        return ltr_fail(err, ENOTSUP, "pid %d (%s) is not an x86-64 program (ELF class %d, machine %d): ltr "
                        "attaches to x86-64 programs only; start it with 'ltr run -- CMD' instead",
                        (int)t->pid, t->exe, h.e_ident[EI_CLASS], h.e_machine);
    return 0;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static bool is_libc(const char *b)
{
    return !strncmp(b, "libc.so", 7) || !strncmp(b, "libc-2.", 7) || !strncmp(b, "ld-musl-", 8);
}

static bool is_ldso(const char *b)
{
    return !strncmp(b, "ld-linux", 8) || !strncmp(b, "ld-2.", 5) || !strncmp(b, "ld-musl-", 8);
}

static bool is_libc_family(const char *b)
{
    return is_libc(b) || is_ldso(b) || !strncmp(b, "libpthread", 10) || !strncmp(b, "libdl.", 6) ||
           !strncmp(b, "libdl-", 6);
}

/* One line of /proc/PID/maps. */
typedef struct map_line {
    uint64_t lo, hi, off;
    char perms[8];
    char path[4096];
} map_line;

static bool parse_map(const char *line, map_line *m)
{
    int pos = 0;
    m->path[0] = 0;
    if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &m->lo, &m->hi, m->perms, &m->off,
               &pos) < 4)
        return false;
    if (pos > 0) {
        snprintf(m->path, sizeof m->path, "%s", line + pos);
        m->path[strcspn(m->path, "\n")] = 0;
    }
    return true;
}

int inj_mapping_of(pid_t pid, uint64_t addr, inj_range *out, char *name, size_t size)
{
    char path[64], line[4200];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -errno;
    map_line m;
    int rc = -ENOENT;
    while (fgets(line, sizeof line, f))
        if (parse_map(line, &m) && addr >= m.lo && addr < m.hi) {
            *out = (inj_range){m.lo, m.hi};
            if (name)
                snprintf(name, size, "%s", m.path);
            rc = 0;
            break;
        }
    fclose(f);
    return rc;
}

/* libc's base mapping (file offset 0), to open its file and find its bias. */
typedef struct libc_map {
    uint64_t base;
    uint64_t base_hi;
    char path[4096];
    bool found;
} libc_map;

static int read_maps(inj_target *t, libc_map *libc, libc_map *libdl, libc_map *ld, ltr_error *err)
{
    char path[64], line[4200];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)t->pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return errno == ENOENT ? ltr_fail(err, ESRCH, "pid %d: no such process (it exited)", (int)t->pid)
               : errno == EACCES || errno == EPERM ? inj_explain_eperm(t, err)
                                                   : ltr_fail(err, errno, "pid %d: %s: %s", (int)t->pid, path,
                                                              strerror(errno));
    map_line m;
    bool ldso = false;
    while (fgets(line, sizeof line, f)) {
        if (!parse_map(line, &m) || m.path[0] != '/')
            continue;
        const char *b = base_name(m.path);
        libc_map *which = is_libc(b) ? libc : !strncmp(b, "libdl", 5) ? libdl : is_ldso(b) ? ld : NULL;
        if (which && m.off == 0 && !which->found) {
            which->found = true;
            which->base = m.lo;
            which->base_hi = m.hi;
            snprintf(which->path, sizeof which->path, "%s", m.path);
        }
        if (is_ldso(b))
            ldso = true;
        if (m.perms[2] != 'x' || !is_libc_family(b))
            continue;
        if (t->nlibcode < INJ_MAX_RANGES)
            t->libcode[t->nlibcode++] = (inj_range){m.lo, m.hi};
        if (is_ldso(b) && !t->ldso.hi)
            t->ldso = (inj_range){m.lo, m.hi};
    }
    fclose(f);
    if (ldso && !libc->found)
        return -EAGAIN; /* in its start-up, the loader maps libc next */
    if (!libc->found || !ldso)
        return ltr_fail(err, ENOEXEC, "pid %d (%s) is statically linked or runs without the dynamic loader and "
                        "libc: nothing can load the agent into it, and its allocations do not go through "
                        "libc's malloc that the agent replaces; such a program cannot be heap-traced",
                        (int)t->pid, t->exe);
    snprintf(t->libc_path, sizeof t->libc_path, "%s", libc->path);
    return 0;
}

#define STARTUP_WAIT_MS 1000u

/* read_maps, waiting out a program's start-up: right after its execve only
 * the loader is mapped, and libc comes within milliseconds. Taken for a
 * static program, a pid attached as its execve ran was refused ('ltr
 * snapshotconfig heap --pid $!' of a perl its shell had just exec'd:
 * "/usr/bin/perl is statically linked or runs without ... libc"). */
static int read_maps_started(inj_target *t, libc_map *libc, libc_map *libdl, libc_map *ld, ltr_error *err)
{
    for (unsigned waited = 0;; waited++) {
        int rc = read_maps(t, libc, libdl, ld, err);
        if (rc != -EAGAIN)
            return rc;
        if (waited == STARTUP_WAIT_MS)
            return ltr_fail(err, ENOEXEC, "pid %d (%s) runs the dynamic loader without libc (still %u ms after "
                            "it was first read: a program's start-up maps it within milliseconds): nothing "
                            "can load the agent into it, and its allocations do not go through libc's malloc "
                            "that the agent replaces", (int)t->pid, t->exe, STARTUP_WAIT_MS);
        t->nlibcode = 0;
        t->ldso = (inj_range){0, 0};
        memset(libc, 0, sizeof *libc);
        memset(libdl, 0, sizeof *libdl);
        memset(ld, 0, sizeof *ld);
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

/* The ELF file of a mapping, as the process sees it: the mapped inode
 * itself (map_files, where the kernel lets us follow it), else its name
 * under the process's root. Both opened as regular files only
 * (ltr_open_regular): the name is the target's to change, and a FIFO or a
 * device put there between the mapping and this open would hang or act on
 * the attach (a review's finding beside cpu.c's). -1 and errno set. */
static int open_mapped(pid_t pid, const libc_map *m)
{
    char path[4200];
    snprintf(path, sizeof path, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, m->base, m->base_hi);
    int fd = ltr_open_regular(path);
    if (fd < 0) {
        snprintf(path, sizeof path, "/proc/%d/root%s", (int)pid, m->path);
        fd = ltr_open_regular(path);
    }
    if (fd < 0) {
        errno = -fd == EINVAL ? ENOEXEC : -fd; /* not a regular file: not an ELF file to read */
        return -1;
    }
    return fd;
}

/* The load bias: where the mapping at file offset 0 is, less the first
 * PT_LOAD's page-aligned address. */
static uint64_t bias_of(Elf *e, uint64_t base)
{
    size_t n = 0;
    if (elf_getphdrnum(e, &n) != 0)
        return base;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr p;
        if (gelf_getphdr(e, (int)i, &p) && p.p_type == PT_LOAD)
            return base - (p.p_vaddr & ~(uint64_t)0xfff);
    }
    return base;
}

/* Calls fn for every defined dynamic symbol: name, value, size, and whether
 * its version is the default one. */
typedef void sym_fn(void *arg, const char *name, uint64_t value, uint64_t size, bool is_default);

static void each_dynsym(Elf *e, sym_fn *fn, void *arg)
{
    Elf_Scn *scn = NULL, *dyn = NULL, *ver = NULL;
    GElf_Shdr sh, dsh = {0};
    while ((scn = elf_nextscn(e, scn)))
        if (gelf_getshdr(scn, &sh)) {
            if (sh.sh_type == SHT_DYNSYM)
                dyn = scn, dsh = sh;
            else if (sh.sh_type == SHT_GNU_versym)
                ver = scn;
        }
    Elf_Data *d = dyn ? elf_getdata(dyn, NULL) : NULL;
    Elf_Data *vd = ver ? elf_getdata(ver, NULL) : NULL;
    if (!d || !dsh.sh_entsize)
        return;
    size_t n = dsh.sh_size / dsh.sh_entsize;
    for (size_t i = 0; i < n; i++) {
        GElf_Sym s;
        if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF || !s.st_value)
            continue;
        const char *name = elf_strptr(e, dsh.sh_link, s.st_name);
        GElf_Versym v = 0;
        if (vd)
            gelf_getversym(vd, (int)i, &v);
        if (name)
            fn(arg, name, s.st_value, s.st_size, !(v & 0x8000));
    }
}

/* Functions that hold a non-recursive lock dlopen or the agent's
 * constructor takes while they call code of the program: fork runs the
 * atfork handlers under its lock (the agent registers handlers). A thread
 * with one of them on its stack must not be made to call dlopen. The
 * loader's own locks (dlopen running a constructor, dl_iterate_phdr running
 * a callback) are recursive: glibc lets that thread call dlopen, and stale
 * return addresses into ld.so, left in every main thread's stack by the
 * start-up, would otherwise refuse every moment of it. */
static const char *const held_lock_calls[] = {"fork", "_Fork", "vfork", "system", "__libc_fork"};

typedef struct sym_walk {
    inj_target *t;
    uint64_t bias;
    bool libdl;
    uint64_t dlopen_def, dlopen_any, dlerror_def, private_dlopen;
} sym_walk;

static void take_sym(void *arg, const char *name, uint64_t value, uint64_t size, bool is_default)
{
    sym_walk *w = arg;
    uint64_t a = w->bias + value;
    if (!strcmp(name, "dlopen")) {
        w->dlopen_any = a;
        if (is_default)
            w->dlopen_def = a;
    } else if (!strcmp(name, "dlerror") && (is_default || !w->dlerror_def)) {
        w->dlerror_def = a;
    } else if (!strcmp(name, "__libc_dlopen_mode")) {
        w->private_dlopen = a;
    }
    if (w->libdl)
        return;
    for (size_t i = 0; i < sizeof held_lock_calls / sizeof *held_lock_calls; i++)
        if (!strcmp(name, held_lock_calls[i]) && w->t->ndanger < INJ_MAX_DANGER)
            w->t->danger[w->t->ndanger++] = (inj_range){a, a + (size ? size : 1)};
}

/* glibc's signal trampoline __restore_rt, "mov $15,%rax; syscall": a
 * handler's return address. It has no dynamic symbol, so it is found by its
 * bytes in libc's executable segment. */
static void find_restorer(Elf *e, uint64_t bias, inj_target *t)
{
    static const unsigned char pat[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    size_t size = 0, n = 0;
    const char *raw = elf_rawfile(e, &size);
    if (!raw || elf_getphdrnum(e, &n) != 0)
        return;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr p;
        /* the file is the target's to craft: an offset near 2^64 wrapped the
         * sum past the check (an attacker review's libc crashed root's ltr) */
        if (!gelf_getphdr(e, (int)i, &p) || p.p_type != PT_LOAD || !(p.p_flags & PF_X) || p.p_offset > size ||
            p.p_filesz > size - p.p_offset)
            continue;
        const char *seg = raw + p.p_offset, *hit = seg;
        while ((hit = memmem(hit, p.p_filesz - (size_t)(hit - seg), pat, sizeof pat))) {
            inj_range r = {bias + p.p_vaddr + (uint64_t)(hit - seg),
                           bias + p.p_vaddr + (uint64_t)(hit - seg) + sizeof pat};
            if (t->ndanger < INJ_MAX_DANGER)
                t->danger[t->ndanger++] = r;
            if (t->nrestorer < 8)
                t->restorer[t->nrestorer++] = r;
            hit += sizeof pat;
        }
    }
}

/* The ELF file of mapping m, opened (fd in *fd), or NULL with err. */
static Elf *open_elf(const inj_target *t, const libc_map *m, int *fd, ltr_error *err)
{
    *fd = open_mapped(t->pid, m);
    if (*fd < 0) {
        ltr_fail(err, errno == ENOENT ? ESRCH : errno, "pid %d: cannot read its C library %s: %s", (int)t->pid,
                 m->path, strerror(errno));
        return NULL;
    }
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
    if (!e) {
        close(*fd);
        ltr_fail(err, ENOEXEC, "pid %d: %s is not a readable ELF file: %s", (int)t->pid, m->path, elf_errmsg(-1));
    }
    return e;
}

static int read_symbols(inj_target *t, const libc_map *m, bool libdl, sym_walk *w, ltr_error *err)
{
    int fd;
    Elf *e = open_elf(t, m, &fd, err);
    if (!e)
        return -err->code;
    w->bias = bias_of(e, m->base);
    w->libdl = libdl;
    each_dynsym(e, take_sym, w);
    if (!libdl)
        find_restorer(e, w->bias, t);
    elf_end(e);
    close(fd);
    return 0;
}

typedef struct rtld_walk {
    uint64_t bias;
    inj_range *out;
} rtld_walk;

static void take_rtld(void *arg, const char *name, uint64_t value, uint64_t size, bool is_default)
{
    rtld_walk *w = arg;
    if (!strcmp(name, "_rtld_global"))
        *w->out = (inj_range){w->bias + value, w->bias + value + size};
}

/* Where ld.so's _rtld_global is (glibc's; musl has none): left empty when
 * it cannot be read, the attach going on without that check. */
static void read_rtld_global(inj_target *t, const libc_map *ld)
{
    ltr_error ignored;
    int fd;
    Elf *e = ld->found ? open_elf(t, ld, &fd, &ignored) : NULL;
    if (!e)
        return;
    rtld_walk w = {.bias = bias_of(e, ld->base), .out = &t->rtld_global};
    each_dynsym(e, take_rtld, &w);
    elf_end(e);
    close(fd);
}

int inj_target_read(pid_t pid, inj_target *t, bool full, ltr_error *err)
{
    memset(t, 0, sizeof *t);
    t->pid = pid;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    if (readlink(path, t->exe, sizeof t->exe - 1) < 0)
        snprintf(t->exe, sizeof t->exe, "?");
    int rc = read_status(t, err);
    if (rc || !full)
        return rc;
    if ((rc = check_state(t, err)) || (rc = check_arch(t, err)))
        return rc;
    libc_map libc = {0}, libdl = {0}, ld = {0};
    if ((rc = read_maps_started(t, &libc, &libdl, &ld, err)))
        return rc;
    read_rtld_global(t, &ld);
    sym_walk w = {.t = t};
    if ((rc = read_symbols(t, &libc, false, &w, err)))
        return rc;
    t->dlopen_addr = w.dlopen_def ? w.dlopen_def : w.dlopen_any;
    t->dlerror_addr = w.dlerror_def;
    if (!t->dlopen_addr && libdl.found) { /* glibc before 2.34: dlopen is libdl's */
        sym_walk dw = {.t = t};
        if ((rc = read_symbols(t, &libdl, true, &dw, err)))
            return rc;
        t->dlopen_addr = dw.dlopen_def ? dw.dlopen_def : dw.dlopen_any;
        t->dlerror_addr = dw.dlerror_def;
    }
    if (!t->dlopen_addr && w.private_dlopen) { /* glibc before 2.34 without libdl */
        t->dlopen_addr = w.private_dlopen;
        t->dlopen_private = true;
        t->dlerror_addr = 0;
    }
    if (!t->dlopen_addr)
        return ltr_fail(err, ENOEXEC, "pid %d (%s): its C library %s has no dlopen ltr can call: start the "
                        "program with the agent instead ('ltr run -- CMD')", (int)pid, t->exe, t->libc_path);
    return 0;
}

/* ---- why ptrace was refused ------------------------------------------------ */

static int yama_scope(void)
{
    char buf[16] = {0};
    int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n > 0 ? atoi(buf) : -1;
}

/* CAP_SYS_PTRACE (bit 19) in our effective set, from /proc/self/status. */
static bool have_cap_sys_ptrace(void)
{
    char line[256];
    uint64_t eff = 0;
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return geteuid() == 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "CapEff: %" SCNx64, &eff) == 1)
            break;
    fclose(f);
    return eff & (1ull << 19);
}

int inj_explain_eperm(const inj_target *t, ltr_error *err)
{
    int pid = (int)t->pid;
    bool cap = have_cap_sys_ptrace();
    int scope = yama_scope();
    if (t->tracer)
        return ltr_fail(err, EBUSY, "pid %d is being traced by pid %d already (a debugger or strace): only "
                        "one tracer at a time; detach it first", pid, (int)t->tracer);
    if (scope == 3)
        return ltr_fail(err, EPERM, "pid %d: ptrace is disabled on this system (Yama: kernel.yama.ptrace_scope "
                        "is 3, which only a reboot undoes): start the program with the agent instead "
                        "('ltr run -- CMD')", pid);
    if (t->euid != geteuid() && !cap)
        return ltr_fail(err, EPERM, "pid %d runs as uid %u and ltr as uid %u: only root (CAP_SYS_PTRACE) may "
                        "attach to another user's process; run ltr as that user", pid, (unsigned)t->euid,
                        (unsigned)geteuid());
    if (scope == 2 && !cap)
        return ltr_fail(err, EPERM, "pid %d: Yama's kernel.yama.ptrace_scope is 2 (admin only): attaching needs "
                        "CAP_SYS_PTRACE; run ltr as root", pid);
    if (scope == 1 && !cap)
        return ltr_fail(err, EPERM, "pid %d: Yama's kernel.yama.ptrace_scope is 1, so a process may only trace "
                        "its own descendants: run ltr as root (CAP_SYS_PTRACE), or allow it with "
                        "'sysctl kernel.yama.ptrace_scope=0' (system-wide: weigh it)", pid);
    if (!cap)
        return ltr_fail(err, EPERM, "pid %d cannot be traced: it is not dumpable (a set-user-ID program, or "
                        "one that called prctl(PR_SET_DUMPABLE, 0)) or runs with other credentials; "
                        "run ltr as root", pid);
    return ltr_fail(err, EPERM, "pid %d: ptrace refused although ltr has CAP_SYS_PTRACE (a security module "
                    "such as SELinux or AppArmor, or another user namespace): check the audit log", pid);
}
