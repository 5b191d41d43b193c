/*
 * system/cpu.c — the SampledProfile part of the system provider
 * (docs/system-provider.md): CPU samples of the target processes with their
 * user call stacks, every millisecond of CPU time (WPR's default rate).
 *
 * perf_event_open samples the task clock on every CPU (exclude_kernel); each
 * sample carries the user registers and a copy of the top of the user stack
 * (PERF_SAMPLE_REGS_USER, PERF_SAMPLE_STACK_USER). The recorder's thread
 * unwinds it at once with libdw's CFI unwinder (dwfl_attach_state with the
 * copied stack as the memory it reads), so no frame pointer is needed, and
 * names each frame (dwfl_module_addrname; the symbol table, no DWARF read);
 * the event holds the stack as text, outermost frame first, ';' between
 * frames (the folded-stack form flame graphs read). Samples of processes that
 * are not targets are dropped.
 *
 * Where perf_event_paranoid or the capabilities forbid it (system-wide
 * sampling needs CAP_PERFMON, root, or perf_event_paranoid <= 0), the part
 * does not run, the recorder logs one warning saying so, and the rest records.
 */
#include "system/internal.h"
#include "elfdebug/debuginfo.h"
#include "base/system_events.h"
#include "prim/prim.h"
#include "base/hmap.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static const ltr_field_desc sample_fields[] = {
    {"pid", LTR_TYPE_U32}, {"tid", LTR_TYPE_U32}, {"stack", LTR_TYPE_STRING}};
LTR_EVENT_DEFINE(ev_cpu_sample, sys_provider, LTR_SYS_EV_CPU_SAMPLE, LTR_LEVEL_INFO, LTR_SYSKW_SAMPLES,
                 "CpuSample", sample_fields);
static const ltr_field_desc lost_fields[] = {{"samples", LTR_TYPE_UVAR}};
/* Samples the kernel dropped because the ring was full (the recorder's thread fell behind). */
LTR_EVENT_DEFINE(ev_cpu_lost, sys_provider, LTR_SYS_EV_CPU_SAMPLES_LOST, LTR_LEVEL_WARNING, LTR_SYSKW_SAMPLES,
                 "CpuSamplesLost", lost_fields);

#define SAMPLE_PERIOD_NS 1000000ull /* 1 ms of CPU time */
#define STACK_COPY 8192u           /* bytes of user stack per sample (perf record's default) */
#define RING_PAGES 256u            /* data pages per CPU ring (1 MB: 120 ms of a busy CPU) */
#define MAX_FRAMES 128
#define MAX_DWFL 64

/* x86-64: the perf register numbers of the DWARF registers 0..16 (rax, rdx,
 * rcx, rbx, rsi, rdi, rbp, rsp, r8..r15, rip). */
static const int dwarf_to_perf[17] = {0, 3, 2, 1, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23, 8};
#define REGS_MASK (((1ull << 9) - 1) /* ax..ip */ | (0xffull << 16) /* r8..r15 */)
#define NREGS 17

typedef struct proc_dwfl {
    uint32_t pid;
    Dwfl *dwfl;
    sys_mod_data *mods; /* its modules' user data (malloc'd: the array moves) */
    uint64_t made_ns;
    char exe[256]; /* /proc/PID/exe when made: an exec since makes it stale */
} proc_dwfl;

static void exe_of(uint32_t pid, char *out, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%u/exe", pid);
    ssize_t n = readlink(path, out, size - 1);
    out[n > 0 ? n : 0] = 0;
}

/* The sample being unwound: what the unwinder's callbacks read. */
typedef struct unwind_ctx {
    uint64_t regs[24]; /* by perf register number */
    const uint8_t *stack;
    uint64_t stack_size, sp;
    uint32_t tid;
} unwind_ctx;

struct sys_cpu {
    ltr_system *s;
    int ncpu;
    int *fds;
    uint8_t **rings;
    size_t ring_size;
    proc_dwfl dw[MAX_DWFL];
    size_t ndw;
    unwind_ctx ctx;
    uint8_t *copy; /* a record that wraps around the ring, made whole */
    char *text;    /* the stack as text */
    /* (pid, pc) -> the frame's name: libdw finds a name by walking the whole
     * symbol table, and samples hit the same few pcs again and again */
    an_hmap names;
    an_hmap owns; /* own_tid: (pid, our tid) -> its tid in its own pid namespace */
};

#define NAMES_MAX 65536 /* cached names; the cache starts over beyond that */

typedef struct name_entry {
    uint64_t key;
    char *name;
} name_entry;

#define OWNS_MAX 65536 /* cached pids and own tids; the cache starts over beyond that */

typedef struct own_entry {
    uint64_t key;
    uint32_t own;
} own_entry;

static own_entry *own_put(sys_cpu *c, uint64_t key, uint32_t own)
{
    if (c->owns.n >= OWNS_MAX) {
        an_hmap_free(&c->owns);
        an_hmap_init(&c->owns, sizeof(own_entry));
    }
    int created;
    own_entry *e = an_hmap_put(&c->owns, key, &created);
    if (e)
        e->own = own;
    return e;
}

/* The tid a sample's thread has in its process's own pid namespace, the one
 * its heap and thread events carry (docs/system-provider.md): perf says
 * ours. Cached: (pid, 0) says whether pid is in a namespace below ours (1),
 * read at its first sample; (pid, tid) the thread's own, read once. 0 for a
 * thread of such a process that ended before it could be read; ours for a
 * process gone before its first sample was read (as outside a container). */
static uint32_t own_tid(sys_cpu *c, uint32_t pid, uint32_t tid)
{
    uint64_t pkey = (uint64_t)pid << 32, key = pkey | tid;
    own_entry *e = an_hmap_get(&c->owns, pkey);
    if (!e) {
        uint32_t own = ltr_proc_own_pid(pid);
        if (!own || !(e = own_put(c, pkey, own != pid)))
            return tid;
    }
    if (!e->own)
        return tid;
    if ((e = an_hmap_get(&c->owns, key)))
        return e->own;
    uint32_t own = ltr_task_own_tid(pid, tid);
    if (own)
        own_put(c, key, own);
    return own;
}

static void names_clear(sys_cpu *c)
{
    size_t pos = 0;
    name_entry *e;
    while ((e = an_hmap_next(&c->names, &pos)))
        free(e->name);
    an_hmap_free(&c->names);
    an_hmap_init(&c->names, sizeof(name_entry));
}

static long perf_open(struct perf_event_attr *a, int cpu)
{
    return syscall(SYS_perf_event_open, a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static void perf_refused(int e, char *why, size_t why_size)
{
    snprintf(why, why_size, "perf_event_open: %s (system-wide sampling needs root, CAP_PERFMON or "
             "/proc/sys/kernel/perf_event_paranoid at 0 or below)", strerror(e));
}

int ltr_system_cpu_probe(char *why, size_t why_size)
{
    struct perf_event_attr a = {.type = PERF_TYPE_SOFTWARE, .size = sizeof a, .config = PERF_COUNT_SW_TASK_CLOCK,
                                .exclude_kernel = 1, .exclude_hv = 1, .disabled = 1};
    int fd = (int)perf_open(&a, 0);
    if (fd < 0) {
        int e = errno;
        perf_refused(e, why, why_size);
        return -e;
    }
    close(fd);
    return 0;
}

sys_cpu *sys_cpu_new(ltr_system *s, char *why, size_t why_size)
{
    sys_cpu *c = calloc(1, sizeof *c);
    long ncpu = sysconf(_SC_NPROCESSORS_CONF);
    if (!c || ncpu < 1)
        return free(c), snprintf(why, why_size, "out of memory"), NULL;
    c->s = s;
    c->ncpu = (int)ncpu;
    c->fds = calloc((size_t)ncpu, sizeof *c->fds);
    c->rings = calloc((size_t)ncpu, sizeof *c->rings);
    c->copy = malloc(1 << 16);
    c->text = malloc(MAX_FRAMES * 160);
    c->ring_size = (1 + RING_PAGES) * (size_t)getpagesize();
    an_hmap_init(&c->names, sizeof(name_entry));
    an_hmap_init(&c->owns, sizeof(own_entry));
    if (!c->fds || !c->rings || !c->copy || !c->text) {
        sys_cpu_free(c);
        return snprintf(why, why_size, "out of memory"), NULL;
    }
    struct perf_event_attr a = {
        .type = PERF_TYPE_SOFTWARE, .size = sizeof a, .config = PERF_COUNT_SW_TASK_CLOCK,
        .sample_period = SAMPLE_PERIOD_NS,
        .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER |
                       PERF_SAMPLE_STACK_USER,
        .sample_regs_user = REGS_MASK, .sample_stack_user = STACK_COPY,
        .exclude_kernel = 1, .exclude_hv = 1, .watermark = 1, .wakeup_watermark = (uint32_t)(c->ring_size / 4)};
    for (int i = 0; i < c->ncpu; i++)
        c->fds[i] = -1;
    for (int i = 0; i < c->ncpu; i++) {
        c->fds[i] = (int)perf_open(&a, i);
        if (c->fds[i] < 0 && errno == ENODEV) /* a CPU that is not online */
            continue;
        if (c->fds[i] < 0) {
            perf_refused(errno, why, why_size);
            sys_cpu_free(c);
            return NULL;
        }
        c->rings[i] = mmap(NULL, c->ring_size, PROT_READ | PROT_WRITE, MAP_SHARED, c->fds[i], 0);
        if (c->rings[i] == MAP_FAILED) {
            c->rings[i] = NULL;
            snprintf(why, why_size, "mmap of the perf ring: %s", strerror(errno));
            sys_cpu_free(c);
            return NULL;
        }
    }
    return c;
}

void sys_cpu_free(sys_cpu *c)
{
    if (!c)
        return;
    for (int i = 0; c->fds && i < c->ncpu; i++) {
        if (c->rings && c->rings[i])
            munmap(c->rings[i], c->ring_size);
        if (c->fds[i] >= 0)
            close(c->fds[i]);
    }
    for (size_t i = 0; i < c->ndw; i++) {
        dwfl_end(c->dw[i].dwfl);
        free(c->dw[i].mods);
    }
    names_clear(c);
    an_hmap_free(&c->names);
    an_hmap_free(&c->owns);
    free(c->fds);
    free(c->rings);
    free(c->copy);
    free(c->text);
    free(c);
}

size_t sys_cpu_fds(const sys_cpu *c, int *fds, size_t cap)
{
    size_t n = 0;
    for (int i = 0; c && i < c->ncpu && n < cap; i++)
        if (c->fds[i] >= 0)
            fds[n++] = c->fds[i];
    return n;
}

/* ---- unwinding ------------------------------------------------------------- */

static pid_t cb_next_thread(Dwfl *d, void *arg, void **thread_arg)
{
    (void)d, (void)arg, (void)thread_arg;
    return 0; /* no iteration: only the sampled thread is asked for */
}

static bool cb_get_thread(Dwfl *d, pid_t tid, void *arg, void **thread_arg)
{
    (void)d;
    *thread_arg = arg;
    return ((unwind_ctx *)arg)->tid == (uint32_t)tid;
}

/* Memory the unwinder reads: the copied stack only. */
static bool cb_memory_read(Dwfl *d, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
    (void)d;
    const unwind_ctx *x = arg;
    if (addr < x->sp || addr - x->sp + sizeof *result > x->stack_size)
        return false;
    memcpy(result, x->stack + (addr - x->sp), sizeof *result);
    return true;
}

static bool cb_set_initial_registers(Dwfl_Thread *t, void *arg)
{
    const unwind_ctx *x = arg;
    Dwarf_Word regs[NREGS];
    for (int i = 0; i < NREGS; i++)
        regs[i] = x->regs[dwarf_to_perf[i]];
    return dwfl_thread_state_registers(t, 0, NREGS, regs);
}

static const Dwfl_Thread_Callbacks thread_cbs = {
    .next_thread = cb_next_thread, .get_thread = cb_get_thread, .memory_read = cb_memory_read,
    .set_initial_registers = cb_set_initial_registers};

/* Naming a frame of a module without .symtab (libc, most of a distribution)
 * looks for its debug file: dbg_find_debuginfo is elfutils' lookup (by
 * name, beside the target's files, opening regular files only) without
 * the debuginfod client it would load into the recorder when DEBUGINFOD_URLS
 * is unset (some 30 libraries: the recorder of `ltr start general --pid` on
 * a busy shell loop held 29.9 MB resident with them after 4 s, 21.0 MB
 * without, VmRSS). The modules' user data (sys_mod_data) begins with this
 * same debug path, NULL: the default. */
static char *debuginfo_path = NULL;

/* The file of pid's mapping that starts at base, opened through
 * /proc/PID/map_files/START-END: the inode the process mapped, whatever its
 * name leads to now. Only a regular file is opened (ltr_open_regular), so
 * nothing there can block. Following those links needs CAP_SYS_ADMIN (or
 * CAP_CHECKPOINT_RESTORE): without it, -EPERM. */
static int open_mapped(uint32_t pid, Dwarf_Addr base)
{
    char path[64], *line = NULL;
    size_t cap = 0;
    snprintf(path, sizeof path, "/proc/%u/maps", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -errno;
    int fd = -ENOENT;
    unsigned long long lo, hi;
    while (fd == -ENOENT && getline(&line, &cap, f) > 0)
        if (sscanf(line, "%llx-%llx", &lo, &hi) == 2 && lo == base) {
            snprintf(path, sizeof path, "/proc/%u/map_files/%llx-%llx", pid, lo, hi);
            fd = ltr_open_regular(path);
        }
    free(line);
    fclose(f);
    return fd;
}

/* A module's file, by the path the target's mappings name. The target may
 * have put a symlink to a FIFO or a device there: dwfl_linux_proc_find_elf
 * checks with stat() and then open()s, without O_NONBLOCK, so a swap
 * between the two left the sampling thread waiting on a FIFO for good (or
 * ran a device's open). Here the file is opened only if regular
 * (ltr_open_regular). A name that ends in " (deleted)" (a file removed
 * since it was mapped, or one named so on purpose) is not opened by name
 * at all: libdw would stat() it and open() it by that name whenever a
 * regular file is there, the same race; it is opened through
 * /proc/PID/map_files (open_mapped), the very inode mapped, and where that
 * is refused (a recorder without CAP_SYS_ADMIN) the module has no file: its
 * frames stay unnamed, nothing waits. The only other name that is not a
 * path, "[vdso: PID]", is libdw's: read from the process's memory, nothing
 * opened by name. */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base, char **file_name,
                    Elf **elfp)
{
    static const char deleted[] = " (deleted)";
    size_t n = strlen(name);
    if (name[0] != '/')
        return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
    const sys_mod_data *data = *userdata; /* NULL: a module not from sys_proc_dwfl_report */
    bool gone = n > sizeof deleted - 1 && !strcmp(name + n - (sizeof deleted - 1), deleted);
    int fd = !gone ? ltr_open_regular(name) : data ? open_mapped(data->pid, base) : -1;
    if (fd < 0)
        return -1;
    if (!(*file_name = strdup(name))) {
        close(fd);
        return -1;
    }
    return fd;
}

const Dwfl_Callbacks sys_proc_dwfl_callbacks = {.find_elf = find_elf,
                                                .find_debuginfo = dbg_find_debuginfo,
                                                .debuginfo_path = &debuginfo_path};

static int set_mod_data(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start, void *arg)
{
    (void)mod, (void)name, (void)start;
    *userdata = arg;
    return DWARF_CB_OK;
}

Dwfl *sys_proc_dwfl_report(uint32_t pid, sys_mod_data *mods)
{
    *mods = (sys_mod_data){.debuginfo_path = debuginfo_path, .pid = pid};
    Dwfl *d = dwfl_begin(&sys_proc_dwfl_callbacks);
    if (d && (dwfl_linux_proc_report(d, (pid_t)pid) != 0 || dwfl_report_end(d, NULL, NULL) != 0 ||
              dwfl_getmodules(d, set_mod_data, mods, 0) != 0)) {
        dwfl_end(d);
        d = NULL;
    }
    return d;
}

/* The process's modules, as libdw sees them; remade when a frame falls
 * outside them: at once after an exec, else (a dlopen since) at most once a
 * second. */
static Dwfl *dwfl_of(sys_cpu *c, uint32_t pid, bool refresh)
{
    proc_dwfl *p = NULL;
    for (size_t i = 0; i < c->ndw && !p; i++)
        p = c->dw[i].pid == pid ? &c->dw[i] : NULL;
    uint64_t now = ltr_now_ns();
    char exe[256] = "";
    if (p && refresh)
        exe_of(pid, exe, sizeof exe);
    if (p && !(refresh && (now - p->made_ns > 1000000000ull || strcmp(exe, p->exe))))
        return p->dwfl;
    if (!p) {
        if (c->ndw == MAX_DWFL) { /* the oldest goes */
            dwfl_end(c->dw[0].dwfl);
            free(c->dw[0].mods);
            memmove(&c->dw[0], &c->dw[1], sizeof c->dw[0] * --c->ndw);
        }
        p = &c->dw[c->ndw++];
        *p = (proc_dwfl){.pid = pid};
    } else if (p->dwfl) {
        dwfl_end(p->dwfl);
        names_clear(c); /* the modules changed: names of their addresses too */
    }
    p->made_ns = now;
    exe_of(pid, p->exe, sizeof p->exe);
    if (!p->mods)
        p->mods = malloc(sizeof *p->mods);
    p->dwfl = p->mods ? sys_proc_dwfl_report(pid, p->mods) : NULL;
    if (p->dwfl && !dwfl_attach_state(p->dwfl, NULL, (pid_t)pid, &thread_cbs, &c->ctx)) {
        dwfl_end(p->dwfl);
        p->dwfl = NULL;
    }
    return p->dwfl;
}

/* A sample's frames, innermost first: the interrupted pc, then return
 * addresses, kept as they are (the heap's frames are too, and a frame
 * without a name is module+0xOFFSET of that address in both: the same call
 * site one name); a return address is looked up at address - 1, inside the
 * call instruction. Stored as address - 1, a call site read one less than
 * the heap's frames of it ("busy+0x1328" against "busy+0x1329"). */
typedef struct frames {
    uint64_t pc[MAX_FRAMES];
    bool ret[MAX_FRAMES]; /* pc[i] is a return address */
    int n;
} frames;

static int frame_cb(Dwfl_Frame *f, void *arg)
{
    frames *fr = arg;
    Dwarf_Addr pc;
    bool activation;
    if (!dwfl_frame_pc(f, &pc, &activation) || (pc == 0 && !activation))
        return DWARF_CB_ABORT; /* a return address of 0: the outermost frame's end, not a frame */
    fr->ret[fr->n] = !activation;
    fr->pc[fr->n++] = pc;
    return fr->n == MAX_FRAMES ? DWARF_CB_ABORT : DWARF_CB_OK;
}

/* Whether pc is in one of the module's loaded segments, when its ELF tells.
 * libdw makes one module of a file's mappings from the first to the next
 * file's, so a file mapped twice with only anonymous memory between (node
 * remaps its builtins' text: /usr/bin/node at 0x400000 and again at
 * 0x7f...) spans the JIT code between them, which was named "node+0x7f4b7ebc7374". */
static bool in_segment(Dwfl_Module *m, uint64_t pc)
{
    Dwarf_Addr bias = 0;
    Elf *e = dwfl_module_getelf(m, &bias);
    size_t n = 0;
    if (!e || elf_getphdrnum(e, &n) != 0)
        return true; /* nothing to tell by: the range libdw has */
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && pc - bias >= ph.p_vaddr &&
            pc - bias - ph.p_vaddr < ph.p_memsz)
            return true;
    }
    return false;
}

Dwfl_Module *sys_addr_module(Dwfl *d, uint64_t pc, uint64_t *start)
{
    Dwfl_Module *m = dwfl_addrmodule(d, pc);
    Dwarf_Addr lo = 0, hi = 0;
    if (!m || !dwfl_module_info(m, NULL, &lo, &hi, NULL, NULL, NULL, NULL) || pc < lo || pc >= hi ||
        !in_segment(m, pc))
        return NULL;
    *start = lo;
    return m;
}

uint64_t sys_elf_vaddr(Dwfl_Module *m, uint64_t pc, uint64_t start)
{
    Dwarf_Addr bias = 0;
    return dwfl_module_getelf(m, &bias) ? pc - bias : pc - start;
}

/* A frame's name: "function" or "module+0xOFFSET", the offset an ELF virtual
 * address as the heap's frames give it; NULL (and *unknown) when no module
 * holds pc (ret: a return address, its call the instruction before).
 * Cached. */
static const char *frame_name(sys_cpu *c, Dwfl *d, uint32_t pid, uint64_t pc, bool ret, bool *unknown)
{
    uint64_t key = ((pc * 2 + ret) * 0x9e3779b97f4a7c15ull) ^ pid;
    name_entry *e = an_hmap_get(&c->names, key ? key : 1);
    if (e)
        return e->name;
    uint64_t start = 0, at = ret && pc ? pc - 1 : pc;
    Dwfl_Module *m = sys_addr_module(d, at, &start);
    if (!m) {
        *unknown = true;
        return NULL;
    }
    const char *name = dwfl_module_addrname(m, at);
    const char *mod = dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    const char *base = mod && strrchr(mod, '/') ? strrchr(mod, '/') + 1 : mod;
    char buf[512];
    if (name)
        snprintf(buf, sizeof buf, "%s", name);
    else
        snprintf(buf, sizeof buf, "%s+0x%llx", base ? base : "??", (unsigned long long)sys_elf_vaddr(m, pc, start));
    if (c->names.n >= NAMES_MAX)
        names_clear(c);
    int created;
    char *copy = strdup(buf);
    e = copy ? an_hmap_put(&c->names, key ? key : 1, &created) : NULL;
    if (!e) {
        free(copy);
        snprintf(c->text + MAX_FRAMES * 160 - 512, 512, "%s", buf); /* the scratch end of text */
        return c->text + MAX_FRAMES * 160 - 512;
    }
    e->name = copy;
    return copy;
}

/* The frames' names, outermost first, ';' between them. */
static const char *stack_text(sys_cpu *c, Dwfl *d, uint32_t pid, const frames *fr, bool *unknown)
{
    static char buf[MAX_FRAMES * 160];
    size_t len = 0, cap = sizeof buf;
    buf[0] = 0;
    for (int i = fr->n - 1; i >= 0; i--) {
        const char *name = frame_name(c, d, pid, fr->pc[i], fr->ret[i], unknown);
        int n = snprintf(buf + len, cap - len, "%s%s", len ? ";" : "", name ? name : "??");
        if (n < 0 || (size_t)n >= cap - len)
            break;
        len += (size_t)n;
    }
    memcpy(c->text, buf, len + 1);
    return c->text;
}

/* No walk: the interrupted pc alone. */
static void only_pc(frames *fr, uint64_t pc)
{
    fr->pc[0] = pc;
    fr->ret[0] = false;
    fr->n = 1;
}

static void unwind_one(sys_cpu *c, uint32_t pid, uint32_t tid)
{
    frames fr = {.n = 0};
    bool unknown = false;
    Dwfl *d = dwfl_of(c, pid, false);
    if (!d) /* it could not be made (a process in the middle of an exec): once more */
        d = dwfl_of(c, pid, true);
    c->ctx.tid = tid;
    if ((d && dwfl_getthread_frames(d, (pid_t)tid, frame_cb, &fr) != 0 && fr.n == 0) || !d)
        only_pc(&fr, c->ctx.regs[8]);
    const char *text = d ? stack_text(c, d, pid, &fr, &unknown) : "";
    if (d && unknown && (d = dwfl_of(c, pid, true))) { /* a module mapped since: once more */
        unknown = false;
        fr.n = 0;
        if (dwfl_getthread_frames(d, (pid_t)tid, frame_cb, &fr) != 0 && fr.n == 0)
            only_pc(&fr, c->ctx.regs[8]);
        text = stack_text(c, d, pid, &fr, &unknown);
    }
    ltr_value v[] = {LTR_U32(pid), LTR_U32(own_tid(c, pid, tid)), LTR_STR(text)};
    sys_write(c->s, &ev_cpu_sample, v, 3);
}

/* ---- the rings ---------------------------------------------------------------- */

static bool is_target(const uint32_t *pids, size_t n, uint32_t pid)
{
    for (size_t i = 0; i < n; i++)
        if (pids[i] == pid)
            return true;
    return false;
}

/* One PERF_RECORD_SAMPLE: ip, pid/tid, time, abi + regs, stack size + data + dyn size. */
static void on_sample(sys_cpu *c, const uint8_t *p, size_t len, const uint32_t *pids, size_t npids)
{
    size_t nregs = (size_t)__builtin_popcountll(REGS_MASK), need = 8 + 8 + 8 + 8 + nregs * 8 + 8;
    if (len < need)
        return;
    uint32_t pid, tid;
    memcpy(&pid, p + 8, 4);
    memcpy(&tid, p + 12, 4);
    if (!is_target(pids, npids, pid))
        return;
    uint64_t abi, size, dyn = 0;
    memcpy(&abi, p + 24, 8);
    if (abi == PERF_SAMPLE_REGS_ABI_NONE) /* a kernel thread, or no user state */
        return;
    memset(c->ctx.regs, 0, sizeof c->ctx.regs);
    const uint8_t *r = p + 32;
    for (int bit = 0, k = 0; bit < 24; bit++)
        if (REGS_MASK & (1ull << bit))
            memcpy(&c->ctx.regs[bit], r + 8 * k++, 8);
    memcpy(&size, p + 32 + nregs * 8, 8);
    const uint8_t *data = p + 40 + nregs * 8;
    if (size > len - need || size > STACK_COPY)
        return;
    if (size && need + size + 8 <= len)
        memcpy(&dyn, data + size, 8);
    c->ctx.stack = data;
    c->ctx.stack_size = dyn && dyn < size ? dyn : size;
    c->ctx.sp = c->ctx.regs[7];
    unwind_one(c, pid, tid);
}

void sys_cpu_read(sys_cpu *c)
{
    uint32_t pids[4096];
    size_t npids = sys_targets(c->s, pids, 4096);
    size_t page = (size_t)getpagesize(), data_size = c->ring_size - page;
    for (int i = 0; i < c->ncpu; i++) {
        if (!c->rings[i])
            continue;
        struct perf_event_mmap_page *meta = (void *)c->rings[i];
        const uint8_t *data = c->rings[i] + page;
        uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE), tail = meta->data_tail;
        while (tail + sizeof(struct perf_event_header) <= head) {
            struct perf_event_header h;
            size_t off = tail % data_size;
            for (size_t k = 0; k < sizeof h; k++)
                ((uint8_t *)&h)[k] = data[(off + k) % data_size];
            if (h.size < sizeof h || tail + h.size > head)
                break;
            const uint8_t *rec = data + off;
            if (off + h.size > data_size) { /* wraps: made whole */
                size_t first = data_size - off;
                memcpy(c->copy, data + off, first);
                memcpy(c->copy + first, data, h.size - first);
                rec = c->copy;
            }
            if (h.type == PERF_RECORD_SAMPLE) {
                on_sample(c, rec + sizeof h, h.size - sizeof h, pids, npids);
            } else if (h.type == PERF_RECORD_LOST && h.size >= sizeof h + 16) {
                uint64_t lost;
                memcpy(&lost, rec + sizeof h + 8, 8); /* u64 id, u64 lost */
                ltr_value v[] = {LTR_UVAR(lost)};
                sys_write(c->s, &ev_cpu_lost, v, 1);
            }
            tail += h.size;
        }
        __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
    }
}
