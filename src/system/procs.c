/*
 * system/procs.c — the ProcessThread and Loader parts of the system
 * provider (docs/system-provider.md): processes start, exec and exit (with
 * their exit status or signal), threads start, end and are renamed, ELF
 * objects are mapped and unmapped.
 *
 * Two sources. Where the user may (CAP_NET_ADMIN: root), the kernel's
 * process connector (NETLINK_CONNECTOR, CN_IDX_PROC) reports every fork,
 * exec, exit and rename on the machine as it happens, with the exit status:
 * processes are then seen system-wide (unless the session is limited to its
 * targets: then only theirs are written), the children of a target become
 * targets, and a target's threads are followed exactly. Otherwise, and for
 * what the connector does not say (modules), the targets are polled in /proc
 * every tick: a thread or module that comes and goes between two ticks is
 * not seen, and an exit's status is unknown (only a parent can wait).
 *
 * Threads and modules are followed for targets only: system-wide they would
 * flood the trace with what no one asked about.
 */
#include "system/internal.h"
#include "base/system_events.h"
#include "prim/prim.h"
#include "base/hmap.h"

#include <dirent.h>
#include <errno.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const ltr_field_desc start_fields[] = {
    {"pid", LTR_TYPE_U32}, {"ppid", LTR_TYPE_U32}, {"name", LTR_TYPE_STRING}, {"rundown", LTR_TYPE_BOOL}};
static const ltr_field_desc exec_fields[] = {
    {"pid", LTR_TYPE_U32}, {"name", LTR_TYPE_STRING}, {"exe", LTR_TYPE_STRING}};
static const ltr_field_desc exit_fields[] = {{"pid", LTR_TYPE_U32},       {"exit_code", LTR_TYPE_I32},
                                             {"signal", LTR_TYPE_U32},    {"status_known", LTR_TYPE_BOOL},
                                             {"name", LTR_TYPE_STRING}};
static const ltr_field_desc thread_fields[] = {
    {"pid", LTR_TYPE_U32}, {"tid", LTR_TYPE_U32}, {"name", LTR_TYPE_STRING}, {"rundown", LTR_TYPE_BOOL}};
static const ltr_field_desc rename_fields[] = {{"pid", LTR_TYPE_U32}, {"tid", LTR_TYPE_U32}, {"name", LTR_TYPE_STRING}};
static const ltr_field_desc module_fields[] = {{"pid", LTR_TYPE_U32}, {"base", LTR_TYPE_PVAR}, {"size", LTR_TYPE_UVAR},
                                               {"path", LTR_TYPE_STRING}, {"rundown", LTR_TYPE_BOOL}};

LTR_EVENT_DEFINE(ev_proc_start, sys_provider, LTR_SYS_EV_PROCESS_START, LTR_LEVEL_INFO, LTR_SYSKW_PROCESS,
                 "ProcessStart", start_fields);
LTR_EVENT_DEFINE(ev_proc_exec, sys_provider, LTR_SYS_EV_PROCESS_EXEC, LTR_LEVEL_INFO, LTR_SYSKW_PROCESS,
                 "ProcessExec", exec_fields);
LTR_EVENT_DEFINE(ev_proc_exit, sys_provider, LTR_SYS_EV_PROCESS_EXIT, LTR_LEVEL_INFO, LTR_SYSKW_PROCESS,
                 "ProcessExit", exit_fields);
LTR_EVENT_DEFINE(ev_thread_start, sys_provider, LTR_SYS_EV_THREAD_START, LTR_LEVEL_INFO, LTR_SYSKW_PROCESS,
                 "ThreadStart", thread_fields);
LTR_EVENT_DEFINE(ev_thread_end, sys_provider, LTR_SYS_EV_THREAD_END, LTR_LEVEL_INFO, LTR_SYSKW_PROCESS,
                 "ThreadEnd", thread_fields);
LTR_EVENT_DEFINE(ev_thread_name, sys_provider, LTR_SYS_EV_THREAD_NAME, LTR_LEVEL_INFO, LTR_SYSKW_PROCESS,
                 "ThreadName", rename_fields);
LTR_EVENT_DEFINE(ev_mod_load, sys_provider, LTR_SYS_EV_MODULE_LOAD, LTR_LEVEL_INFO, LTR_SYSKW_LOADER,
                 "ModuleLoad", module_fields);
LTR_EVENT_DEFINE(ev_mod_unload, sys_provider, LTR_SYS_EV_MODULE_UNLOAD, LTR_LEVEL_INFO, LTR_SYSKW_LOADER,
                 "ModuleUnload", module_fields);

#define MAX_THREADS 65536 /* followed per process; more are not reported */
#define MAX_MODULES 8192

typedef struct sys_thread {
    uint32_t tid; /* ours, what /proc and the connector say */
    uint32_t own; /* its process's, what its events carry: the one written */
    char name[16];
    bool seen; /* in the current /proc scan */
} sys_thread;

typedef struct sys_module {
    uint64_t base, end, inode;
    char *path;
    bool seen;
} sys_module;

/* A target as this thread follows it. */
typedef struct sys_proc {
    uint32_t pid;
    uint64_t start_ticks;
    char name[16];
    sys_thread *threads;
    size_t nthreads, capthreads;
    sys_module *modules;
    size_t nmodules, capmodules;
    bool modules_scanned, threads_scanned, announced;
    bool own_ns; /* in a pid namespace below ours: its threads' own tids are not ours */
} sys_proc;

struct sys_procs {
    ltr_system *s;
    int nl; /* the process connector, -1 when not permitted */
    bool procs, loader;
    /* every process on the machine is written (the connector, and a session
     * not limited to its targets): a watch's trace, sent with a support
     * bundle, held the names and executables of 1 818 other processes */
    bool all;
    sys_proc *v;
    size_t n, cap;
    uint64_t overruns; /* connector messages the kernel dropped (its socket buffer was full) */
    an_hmap names;     /* connector: pid -> its name, so an exit reaped at once still has one */
};

/* ---- small readers --------------------------------------------------------- */

static void read_comm(const char *path, char name[16])
{
    char buf[64];
    ssize_t n = ltr_read_small_file(path, buf, sizeof buf);
    name[0] = 0;
    if (n <= 0)
        return;
    buf[strcspn(buf, "\n")] = 0;
    snprintf(name, 16, "%.15s", buf);
}

static void proc_comm(uint32_t pid, char name[16])
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%u/comm", pid);
    read_comm(path, name);
}

static void thread_comm(uint32_t pid, uint32_t tid, char name[16])
{
    char path[80];
    snprintf(path, sizeof path, "/proc/%u/task/%u/comm", pid, tid);
    read_comm(path, name);
}

typedef struct name_entry {
    uint64_t pid;
    char name[16];
} name_entry;

/* What the connector told of a process's name (start, exec, rename). */
static void name_set(sys_procs *ps, uint32_t pid, const char *name)
{
    int created;
    name_entry *e = ps->nl >= 0 ? an_hmap_put(&ps->names, pid, &created) : NULL;
    if (e)
        snprintf(e->name, sizeof e->name, "%s", name);
}

/* The name a process had, from the connector's news or else /proc; forgotten. */
static void name_take(sys_procs *ps, uint32_t pid, char name[16])
{
    name_entry *e = an_hmap_get(&ps->names, pid);
    if (e) {
        memcpy(name, e->name, 16);
        an_hmap_del(&ps->names, pid);
    } else {
        proc_comm(pid, name);
    }
}

/* ---- events ---------------------------------------------------------------- */

static void w_start(sys_procs *ps, uint32_t pid, uint32_t ppid, const char *name, bool rundown)
{
    ltr_value v[] = {LTR_U32(pid), LTR_U32(ppid), LTR_STR(name), LTR_BOOL(rundown)};
    sys_write(ps->s, &ev_proc_start, v, 4);
}

/* A thread is written as its process sees it (t->own), as the heap agent
 * writes it, so that both join: docs/system-provider.md. */
static void w_thread(sys_procs *ps, ltr_event_desc *d, uint32_t pid, const sys_thread *t, bool rundown)
{
    ltr_value v[] = {LTR_U32(pid), LTR_U32(t->own), LTR_STR(t->name), LTR_BOOL(rundown)};
    sys_write(ps->s, d, v, 4);
}

static void w_thread_name(sys_procs *ps, uint32_t pid, const sys_thread *t)
{
    ltr_value v[] = {LTR_U32(pid), LTR_U32(t->own), LTR_STR(t->name)};
    sys_write(ps->s, &ev_thread_name, v, 3);
}

static void w_exit(sys_procs *ps, uint32_t pid, bool known, uint32_t code, const char *name)
{
    /* code is the kernel's wait status: exit status << 8, or the signal (| 0x80 with a core) */
    int32_t exit_code = known && (code & 0x7f) == 0 ? (int32_t)((code >> 8) & 0xff) : -1;
    uint32_t sig = known ? code & 0x7f : 0;
    ltr_value v[] = {LTR_U32(pid), LTR_I32(exit_code), LTR_U32(sig), LTR_BOOL(known), LTR_STR(name)};
    sys_write(ps->s, &ev_proc_exit, v, 5);
}

static void w_module(sys_procs *ps, ltr_event_desc *d, uint32_t pid, const sys_module *m, bool rundown)
{
    ltr_value v[] = {LTR_U32(pid), LTR_PVAR(m->base), LTR_UVAR(m->end - m->base), LTR_STR(m->path),
                     LTR_BOOL(rundown)};
    sys_write(ps->s, d, v, 5);
}

/* ---- the followed targets ---------------------------------------------------- */

static sys_proc *find(sys_procs *ps, uint32_t pid)
{
    for (size_t i = 0; i < ps->n; i++)
        if (ps->v[i].pid == pid)
            return &ps->v[i];
    return NULL;
}

static sys_proc *follow(sys_procs *ps, uint32_t pid)
{
    sys_proc *p = find(ps, pid);
    if (p || ltr_reserve((void **)&ps->v, &ps->cap, ps->n, sizeof *ps->v, 8) != 0)
        return p;
    p = &ps->v[ps->n++];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    p->start_ticks = ltr_proc_start_ticks((pid_t)pid);
    uint32_t own = ltr_proc_own_pid(pid);
    p->own_ns = own && own != pid;
    proc_comm(pid, p->name);
    return p;
}

static void forget(sys_procs *ps, sys_proc *p)
{
    sys_drop_target(ps->s, p->pid);
    for (size_t i = 0; i < p->nmodules; i++)
        free(p->modules[i].path);
    free(p->modules);
    free(p->threads);
    *p = ps->v[--ps->n];
}

static sys_thread *thread_of(sys_proc *p, uint32_t tid)
{
    for (size_t i = 0; i < p->nthreads; i++)
        if (p->threads[i].tid == tid)
            return &p->threads[i];
    return NULL;
}

static sys_thread *thread_add(sys_proc *p, uint32_t tid)
{
    if (p->nthreads >= MAX_THREADS ||
        ltr_reserve((void **)&p->threads, &p->capthreads, p->nthreads, sizeof *p->threads, 8) != 0)
        return NULL;
    uint32_t own = p->own_ns ? ltr_task_own_tid(p->pid, tid) : tid;
    if (!own)
        return NULL; /* ended before its own tid could be read: not seen */
    sys_thread *t = &p->threads[p->nthreads++];
    *t = (sys_thread){.tid = tid, .own = own};
    thread_comm(p->pid, tid, t->name);
    return t;
}

/* A process is gone: its threads end, then it does. */
static void process_gone(sys_procs *ps, sys_proc *p, bool known, uint32_t code)
{
    if (ps->procs) {
        for (size_t i = 0; i < p->nthreads; i++)
            if (p->threads[i].tid != p->pid)
                w_thread(ps, &ev_thread_end, p->pid, &p->threads[i], false);
        sys_thread *main = thread_of(p, p->pid);
        if (main)
            w_thread(ps, &ev_thread_end, p->pid, main, false);
        w_exit(ps, p->pid, known, code, p->name);
    }
    forget(ps, p);
}

/* /proc/PID/task: threads that came, went or were renamed since the last scan. */
static void scan_threads(sys_procs *ps, sys_proc *p)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%u/task", p->pid);
    DIR *d = opendir(path);
    if (!d)
        return;
    bool rundown = !p->threads_scanned;
    for (size_t i = 0; i < p->nthreads; i++)
        p->threads[i].seen = false;
    struct dirent *e;
    while ((e = readdir(d))) {
        uint32_t tid = (uint32_t)strtoul(e->d_name, NULL, 10);
        if (!tid)
            continue;
        sys_thread *t = thread_of(p, tid);
        if (!t) {
            if ((t = thread_add(p, tid)))
                w_thread(ps, &ev_thread_start, p->pid, t, rundown);
        } else {
            char name[16];
            thread_comm(p->pid, tid, name);
            if (name[0] && strcmp(name, t->name)) {
                memcpy(t->name, name, sizeof name);
                w_thread_name(ps, p->pid, t);
            }
        }
        if (t)
            t->seen = true;
    }
    closedir(d);
    for (size_t i = 0; i < p->nthreads;) {
        if (p->threads[i].seen) {
            i++;
            continue;
        }
        w_thread(ps, &ev_thread_end, p->pid, &p->threads[i], false);
        p->threads[i] = p->threads[--p->nthreads];
    }
    p->threads_scanned = true;
}

/* ---- modules: executable file mappings in /proc/PID/maps ----------------------- */

static sys_module *module_of(sys_proc *p, const char *path, uint64_t inode)
{
    for (size_t i = 0; i < p->nmodules; i++)
        if (p->modules[i].inode == inode && !strcmp(p->modules[i].path, path))
            return &p->modules[i];
    return NULL;
}

/* One line of maps: an ELF object is a file with an executable mapping; its
 * base and end span all its mappings. */
static void module_line(sys_proc *p, char *line, sys_module *tmp, size_t *ntmp, size_t cap)
{
    unsigned long long start, end, inode;
    char perms[8];
    int path_at = 0;
    if (sscanf(line, "%llx-%llx %7s %*s %*s %llu %n", &start, &end, perms, &inode, &path_at) < 4 || !path_at ||
        line[path_at] != '/')
        return;
    const char *path = line + path_at;
    for (size_t i = 0; i < *ntmp; i++)
        if (tmp[i].inode == inode && !strcmp(tmp[i].path, path)) {
            tmp[i].base = start < tmp[i].base ? start : tmp[i].base;
            tmp[i].end = end > tmp[i].end ? end : tmp[i].end;
            tmp[i].seen |= perms[2] == 'x';
            return;
        }
    (void)p;
    if (*ntmp < cap) {
        char *copy = strdup(path);
        if (copy)
            tmp[(*ntmp)++] = (sys_module){start, end, inode, copy, perms[2] == 'x'};
    }
}

static void scan_modules(sys_procs *ps, sys_proc *p)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%u/maps", p->pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    size_t cap = MAX_MODULES, ntmp = 0;
    sys_module *tmp = malloc(cap * sizeof *tmp);
    char *line = NULL;
    size_t len = 0;
    ssize_t n;
    while (tmp && (n = getline(&line, &len, f)) > 0) {
        line[strcspn(line, "\n")] = 0;
        module_line(p, line, tmp, &ntmp, cap);
    }
    free(line);
    fclose(f);
    if (!tmp)
        return;
    bool rundown = !p->modules_scanned;
    for (size_t i = 0; i < p->nmodules; i++)
        p->modules[i].seen = false;
    for (size_t i = 0; i < ntmp; i++) {
        sys_module *m = tmp[i].seen ? module_of(p, tmp[i].path, tmp[i].inode) : NULL;
        if (!tmp[i].seen) { /* a data file, not an ELF object */
            free(tmp[i].path);
            continue;
        }
        if (m && m->base == tmp[i].base) {
            m->seen = true;
            free(tmp[i].path);
            continue;
        }
        if (p->nmodules >= MAX_MODULES ||
            ltr_reserve((void **)&p->modules, &p->capmodules, p->nmodules, sizeof *p->modules, 16) != 0) {
            free(tmp[i].path);
            continue;
        }
        p->modules[p->nmodules] = tmp[i];
        p->modules[p->nmodules].seen = true;
        w_module(ps, &ev_mod_load, p->pid, &p->modules[p->nmodules++], rundown);
    }
    free(tmp);
    for (size_t i = 0; i < p->nmodules;) {
        if (p->modules[i].seen) {
            i++;
            continue;
        }
        w_module(ps, &ev_mod_unload, p->pid, &p->modules[i], false);
        free(p->modules[i].path);
        p->modules[i] = p->modules[--p->nmodules];
    }
    p->modules_scanned = true;
}

/* ---- the process connector ------------------------------------------------- */

static int connector_open(void)
{
    if (getenv("LTR_SYSTEM_NO_CONNECTOR")) /* tests of the /proc path, as root */
        return -EPERM;
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
    if (fd < 0)
        return -errno;
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC, .nl_pid = 0};
    int size = 4 << 20;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) != 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    /* header, connector message, operation: one byte buffer, as struct cn_msg
     * ends in a flexible array (a struct around it is a GNU extension) */
    uint8_t req[sizeof(struct nlmsghdr) + sizeof(struct cn_msg) + sizeof(enum proc_cn_mcast_op)];
    struct nlmsghdr nl = {.nlmsg_len = sizeof req, .nlmsg_type = NLMSG_DONE, .nlmsg_pid = 0};
    struct cn_msg cn = {.id = {.idx = CN_IDX_PROC, .val = CN_VAL_PROC}, .len = sizeof(enum proc_cn_mcast_op)};
    enum proc_cn_mcast_op op = PROC_CN_MCAST_LISTEN;
    memcpy(req, &nl, sizeof nl);
    memcpy(req + sizeof nl, &cn, sizeof cn);
    memcpy(req + sizeof nl + sizeof cn, &op, sizeof op);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || send(fd, &req, sizeof req, 0) != (ssize_t)sizeof req) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

/* A new process (followed when its parent is) or a new thread of one followed */
static void on_proc_fork(sys_procs *ps, const struct proc_event *ev)
{
    char name[16];
    uint32_t parent = (uint32_t)ev->event_data.fork.parent_tgid;
    uint32_t pid = (uint32_t)ev->event_data.fork.child_tgid, tid = (uint32_t)ev->event_data.fork.child_pid;
    if (pid == tid) { /* a new process */
        proc_comm(pid, name);
        name_set(ps, pid, name);
        bool ours = find(ps, parent) != NULL;
        if (ps->procs && (ps->all || ours))
            w_start(ps, pid, parent, name, false);
        if (ours) { /* the session's processes include their children */
            ltr_system_add_target(ps->s, pid);
            sys_proc *p = follow(ps, pid);
            if (p) /* followed from its first moment: what comes later is new, not rundown */
                p->announced = p->threads_scanned = p->modules_scanned = true;
            sys_thread *t = p && ps->procs ? thread_add(p, pid) : NULL;
            if (t)
                w_thread(ps, &ev_thread_start, pid, t, false);
        }
    } else {
        sys_proc *p = find(ps, pid);
        sys_thread *t = p && ps->procs && !thread_of(p, tid) ? thread_add(p, tid) : NULL;
        if (t)
            w_thread(ps, &ev_thread_start, pid, t, false);
    }
}

/* A new image: its name and executable, its modules when followed */
static void on_proc_exec(sys_procs *ps, const struct proc_event *ev)
{
    char name[16];
    uint32_t pid = (uint32_t)ev->event_data.exec.process_tgid;
    sys_proc *p = find(ps, pid);
    if (!ps->procs && !p)
        return;
    char path[64], exe[4096];
    proc_comm(pid, name);
    name_set(ps, pid, name);
    snprintf(path, sizeof path, "/proc/%u/exe", pid);
    ssize_t n = readlink(path, exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    if (ps->procs && (ps->all || p)) {
        ltr_value v[] = {LTR_U32(pid), LTR_STR(name), LTR_STR(exe)};
        sys_write(ps->s, &ev_proc_exec, v, 3);
    }
    if (p) {
        sys_thread *main = thread_of(p, pid);
        if (main) /* the exec renames it: no ThreadName for that */
            memcpy(main->name, name, sizeof name);
        memcpy(p->name, name, sizeof name);
        p->start_ticks = ltr_proc_start_ticks((pid_t)pid);
        if (ps->loader) /* a new image: its modules now */
            scan_modules(ps, p);
    }
}

/* A process or thread renamed (prctl PR_SET_NAME, a write to comm) */
static void on_proc_comm(sys_procs *ps, const struct proc_event *ev)
{
    char name[16];
    uint32_t pid = (uint32_t)ev->event_data.comm.process_tgid, tid = (uint32_t)ev->event_data.comm.process_pid;
    sys_proc *p = find(ps, pid);
    sys_thread *t = p ? thread_of(p, tid) : NULL;
    snprintf(name, sizeof name, "%.*s", 15, ev->event_data.comm.comm);
    if (tid == pid)
        name_set(ps, pid, name);
    if (p && tid == pid)
        memcpy(p->name, name, sizeof name);
    if (t && ps->procs && strcmp(t->name, name)) {
        memcpy(t->name, name, sizeof name);
        w_thread_name(ps, pid, t);
    }
}

/* A thread or a whole process ended */
static void on_proc_exit(sys_procs *ps, const struct proc_event *ev)
{
    char name[16];
    uint32_t pid = (uint32_t)ev->event_data.exit.process_tgid, tid = (uint32_t)ev->event_data.exit.process_pid;
    uint32_t code = ev->event_data.exit.exit_code;
    sys_proc *p = find(ps, pid);
    if (tid != pid) {
        sys_thread *t = p ? thread_of(p, tid) : NULL;
        if (t) {
            if (ps->procs)
                w_thread(ps, &ev_thread_end, pid, t, false);
            *t = p->threads[--p->nthreads];
        }
        return;
    }
    name_take(ps, pid, name);
    if (p) {
        process_gone(ps, p, true, code);
    } else if (ps->procs && ps->all) {
        w_exit(ps, pid, true, code, name);
    }
}

static void on_event(sys_procs *ps, const struct proc_event *ev)
{
    switch (ev->what) {
    case PROC_EVENT_FORK:
        on_proc_fork(ps, ev);
        break;
    case PROC_EVENT_EXEC:
        on_proc_exec(ps, ev);
        break;
    case PROC_EVENT_COMM:
        on_proc_comm(ps, ev);
        break;
    case PROC_EVENT_EXIT:
        on_proc_exit(ps, ev);
        break;
    default:
        break;
    }
}

void sys_procs_read(sys_procs *ps)
{
    char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
    for (;;) {
        struct sockaddr_nl from;
        socklen_t flen = sizeof from;
        ssize_t n = recvfrom(ps->nl, buf, sizeof buf, 0, (struct sockaddr *)&from, &flen);
        if (n < 0) {
            if (errno == ENOBUFS) {
                ps->overruns++;
                continue;
            }
            return; /* EAGAIN: all read */
        }
        if (from.nl_pid != 0) /* only the kernel speaks here */
            continue;
        for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_NOOP)
                continue;
            struct cn_msg *cn = NLMSG_DATA(h);
            if (h->nlmsg_len < NLMSG_LENGTH(sizeof *cn + sizeof(struct proc_event)) ||
                cn->id.idx != CN_IDX_PROC || cn->id.val != CN_VAL_PROC)
                continue;
            /* the event sits at offset 36 of the message: copied out, aligned */
            struct proc_event pe;
            size_t avail = h->nlmsg_len - NLMSG_LENGTH(sizeof *cn);
            memset(&pe, 0, sizeof pe);
            memcpy(&pe, cn->data, avail < sizeof pe ? avail : sizeof pe);
            on_event(ps, &pe);
        }
    }
}

/* ---- the tick ----------------------------------------------------------------- */

/* Every process on the machine, once, as the session starts (ps->all: the
 * connector reports them as they come and go from then on). */
static size_t rundown_all(sys_procs *ps)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    size_t n = 0;
    while (d && (e = readdir(d))) {
        uint32_t pid = (uint32_t)strtoul(e->d_name, NULL, 10);
        char name[16];
        if (!pid)
            continue;
        proc_comm(pid, name);
        name_set(ps, pid, name);
        w_start(ps, pid, ltr_proc_ppid(pid), name, true);
        n++;
    }
    if (d)
        closedir(d);
    return n;
}

void sys_procs_capture(sys_procs *ps, ltr_system_capture *out)
{
    if (ps->all) /* followed system-wide: every process there is */
        out->processes += rundown_all(ps);
    for (size_t i = 0; i < ps->n; i++) {
        sys_proc *p = &ps->v[i];
        if (ps->procs) {
            if (!ps->all) {
                w_start(ps, p->pid, ltr_proc_ppid(p->pid), p->name, true);
                out->processes++;
            }
            for (size_t t = 0; t < p->nthreads; t++)
                w_thread(ps, &ev_thread_start, p->pid, &p->threads[t], true);
            out->threads += p->nthreads;
        }
        if (ps->loader) {
            for (size_t m = 0; m < p->nmodules; m++)
                w_module(ps, &ev_mod_load, p->pid, &p->modules[m], true);
            out->modules += p->nmodules;
        }
    }
}

void sys_procs_tick(sys_procs *ps)
{
    if (ps->nl >= 0) /* an exit the connector reported is handled before /proc says the process is gone */
        sys_procs_read(ps);
    uint32_t pids[4096];
    size_t n = sys_targets(ps->s, pids, 4096);
    for (size_t i = 0; i < n; i++) {
        bool known = find(ps, pids[i]) != NULL;
        sys_proc *p = follow(ps, pids[i]);
        if (p && !known && !p->start_ticks) { /* gone before it was seen */
            forget(ps, p);
            continue;
        }
        if (p && !p->announced) {
            p->announced = true;
            if (ps->procs && !ps->all) /* system-wide: the rundown or its fork said it */
                w_start(ps, p->pid, ltr_proc_ppid(p->pid), p->name, true);
        }
    }
    for (size_t i = 0; i < ps->n;) {
        sys_proc *p = &ps->v[i];
        uint64_t ticks = ltr_proc_start_ticks((pid_t)p->pid);
        if (!ticks || (p->start_ticks && ticks != p->start_ticks)) {
            process_gone(ps, p, false, 0); /* moves the last one here */
            continue;
        }
        if (ps->procs && (ps->nl < 0 || !p->threads_scanned))
            scan_threads(ps, p);
        if (ps->loader)
            scan_modules(ps, p);
        i++;
    }
}

sys_procs *sys_procs_new(ltr_system *s, bool procs, bool loader, bool targets_only)
{
    sys_procs *ps = calloc(1, sizeof *ps);
    if (!ps)
        return NULL;
    ps->s = s;
    ps->procs = procs;
    ps->loader = loader;
    an_hmap_init(&ps->names, sizeof(name_entry));
    ps->nl = procs ? connector_open() : -1;
    ps->all = ps->nl >= 0 && !targets_only;
    if (ps->all)
        rundown_all(ps);
    return ps;
}

int sys_procs_fd(const sys_procs *ps) { return ps ? ps->nl : -1; }

void sys_procs_free(sys_procs *ps, uint64_t *overruns, bool *connector)
{
    if (!ps)
        return;
    *overruns = ps->overruns;
    *connector = ps->nl >= 0;
    while (ps->n)
        forget(ps, &ps->v[ps->n - 1]);
    free(ps->v);
    an_hmap_free(&ps->names);
    if (ps->nl >= 0)
        close(ps->nl);
    free(ps);
}
