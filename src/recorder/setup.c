/*
 * recorder/setup.c — bringing a session up and down: the shared memory, the
 * registry entry that makes producers write to it, the control socket, and
 * (file mode) the trace file with its header.
 */
#include "recorder/internal.h"
#include "recorder/client.h"
#include "prim/prim.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static size_t page_align(size_t v)
{
    return (v + 4095) & ~(size_t)4095;
}

/* The value of environment variable name when it is a number from lo to
 * hi, else dflt: the recorder's tunables for tests. */
static unsigned long env_within(const char *name, unsigned long lo, unsigned long hi, unsigned long dflt)
{
    const char *e = getenv(name);
    char *end;
    unsigned long v = e ? strtoul(e, &end, 10) : 0;
    return !e || !*e || *end || v < lo || v > hi ? dflt : v;
}

/* LTR_META_KB (64 to 262144) makes the metadata region smaller: a test
 * sees it go round in seconds, and a host short of memory bounds it. */
static size_t meta_capacity(void)
{
    return (size_t)env_within("LTR_META_KB", 64, LTR_SHM_META_CAPACITY >> 10, LTR_SHM_META_CAPACITY >> 10) << 10;
}

/* LTR_SHM_PROCS (16 to 4096) makes the table of per-process loss counters
 * smaller: producers take its size from the shared header, and the recorder
 * hands out, frees and shares its last slot the same way at any size, so a
 * test sees processes past the table after a hundred process starts instead
 * of 4 200 (about 60 s of `sh -c :` under the agent on the PVM guest). */
static uint32_t procs_capacity(void)
{
    return (uint32_t)env_within("LTR_SHM_PROCS", 16, LTR_SHM_PROCS, LTR_SHM_PROCS);
}

static int create_shm(recorder *r, ltr_error *err)
{
    const ltr_session_config *cfg = &r->cfg;
    size_t off = page_align(sizeof(ltr_shm));
    size_t ring_off[LTR_MAX_COLLECTORS];
    for (unsigned c = 0; c < cfg->ncollectors; c++) {
        ring_off[c] = off;
        off = page_align(off + ltr_ring_size(cfg->collectors[c].buffer_kb * 1024u,
                                             cfg->collectors[c].buffers));
    }
    size_t meta_off = off, meta_cap = meta_capacity();
    off = page_align(off + meta_cap);
    size_t procs_off = off;
    uint32_t nprocs = procs_capacity();
    off = page_align(off + sizeof(ltr_shm_proc) * nprocs);
    int fd = ltr_memfd_create("ltr-session", off, err);
    if (fd < 0)
        return fd;
    void *mem;
    int rc = ltr_map_shared(fd, off, &mem);
    if (rc) {
        close(fd);
        return ltr_fail(err, -rc, "cannot map %zu bytes of shared memory: %s (the buffers take most of it: "
                        "fewer or smaller ones need less, --buffers and --buffer-size)", off, strerror(-rc));
    }
    ltr_shm *shm = mem;
    shm->magic = LTR_SHM_MAGIC;
    shm->size = off;
    shm->incarnation = r->incarnation;
    shm->mode = (uint32_t)cfg->mode;
    shm->ncollectors = cfg->ncollectors;
    shm->start_ns = r->start_ns;
    for (unsigned c = 0; c < cfg->ncollectors; c++) {
        uint32_t size = cfg->collectors[c].buffer_kb * 1024u, n = cfg->collectors[c].buffers;
        snprintf(shm->collectors[c].name, sizeof shm->collectors[c].name, "%s", cfg->collectors[c].name);
        shm->collectors[c].ring_offset = ring_off[c];
        ltr_ring_init((uint8_t *)mem + ring_off[c], size, n, cfg->mode == LTR_MODE_MEMORY ? LTR_RING_OVERWRITE : 0);
        ltr_ring_view_init(&r->col[c].ring, (uint8_t *)mem + ring_off[c], size, n);
    }
    shm->meta_offset = meta_off;
    shm->meta_capacity = meta_cap;
    shm->procs_offset = procs_off;
    shm->nprocs = nprocs;
    /* Ours to know, not the shared header's: producers can write that. */
    r->meta = (uint8_t *)mem + meta_off;
    r->meta_capacity = meta_cap;
    r->procs = (ltr_shm_proc *)((uint8_t *)mem + procs_off);
    r->nprocs = nprocs;
    /* Reserved before any producer exists: no layout of theirs can take it. */
    r->marker_layout = atomic_fetch_add(&shm->next_layout_id, 1) + 1;
    atomic_store(&shm->state, LTR_SESSION_RUNNING);
    r->shm = shm;
    r->shm_size = off;
    r->memfd = fd;
    return 0;
}

static int alloc_notes(recorder *r, ltr_error *err)
{
    for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
        collector_state *cs = &r->col[c];
        cs->notes = calloc(cs->ring.nbuf, sizeof *cs->notes);
        cs->copy = malloc(cs->ring.buffer_size);
        cs->saved_seq = calloc(cs->ring.nbuf, sizeof *cs->saved_seq);
        cs->saved_events = calloc(cs->ring.nbuf, sizeof *cs->saved_events);
        cs->saved_first_ns = calloc(cs->ring.nbuf, sizeof *cs->saved_first_ns);
        cs->flushing = calloc(cs->ring.nbuf, sizeof *cs->flushing);
        cs->queued_now = calloc(cs->ring.nbuf, sizeof *cs->queued_now);
        cs->flushing_seq = calloc(cs->ring.nbuf, sizeof *cs->flushing_seq);
        if (!cs->notes || !cs->copy || !cs->saved_seq || !cs->saved_events || !cs->saved_first_ns ||
            !cs->flushing || !cs->queued_now || !cs->flushing_seq ||
            !rec_thread_set_init(&cs->queued_threads, cs->ring.nbuf))
            return ltr_fail(err, ENOMEM, "out of memory");
        if (r->cfg.mode == LTR_MODE_FILE)
            continue;
        cs->dead_seq1 = calloc(cs->ring.nbuf, sizeof *cs->dead_seq1);
        cs->dead_since = calloc(cs->ring.nbuf, sizeof *cs->dead_since);
        cs->dead_owner = calloc(cs->ring.nbuf, sizeof *cs->dead_owner);
        cs->hole_seen = calloc(cs->ring.nbuf, sizeof *cs->hole_seen);
        cs->hole_since = calloc(cs->ring.nbuf, sizeof *cs->hole_since);
        if (!cs->dead_seq1 || !cs->dead_since || !cs->dead_owner || !cs->hole_seen || !cs->hole_since)
            return ltr_fail(err, ENOMEM, "out of memory");
    }
    r->proc_lost = calloc((size_t)r->nprocs * LTR_MAX_COLLECTORS, sizeof *r->proc_lost);
    if (!r->proc_lost)
        return ltr_fail(err, ENOMEM, "out of memory");
    return 0;
}

static int open_socket(recorder *r, ltr_error *err)
{
    struct sockaddr_un sa;
    int rc = ltr_runtime_name(r->sock_name, sizeof r->sock_name, r->cfg.name, LTR_RUN_SOCK);
    if (rc)
        return ltr_fail(err, -rc, "socket name for session '%s' is too long", r->cfg.name);
    snprintf(r->sock_path, sizeof r->sock_path, "%s/%s", r->run_dir, r->sock_name);
    rc = ltr_dir_sockaddr(r->run_dirfd, r->run_dir, r->sock_name, &sa, err);
    if (rc)
        return rc;
    unlinkat(r->run_dirfd, r->sock_name, 0); /* a stale socket of a killed recorder of this name */
    int fd = ltr_unix_listen(&sa, 64); /* the owner's only */
    if (fd < 0)
        return ltr_fail(err, -fd, "cannot listen on %s: %s", r->sock_path, strerror(-fd));
    struct stat st;
    r->sock_ino = fstatat(r->run_dirfd, r->sock_name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? st.st_ino : 0;
    r->listen_fd = fd;
    return 0;
}

/* Removes our socket, unless a new recorder of the same name has bound its
 * own there since we unpublished (it binds under the registry lock). */
static void remove_socket(recorder *r)
{
    struct stat st;
    ltr_registry_lock();
    if (fstatat(r->run_dirfd, r->sock_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_ino == r->sock_ino)
        unlinkat(r->run_dirfd, r->sock_name, 0);
    ltr_registry_unlock();
}

/* The file-mode trace: always a new file (prim/files.c says why). */
static int create_output(recorder *r, ltr_error *err)
{
    if (r->cfg.output_replace && ltr_replaceable(r->cfg.output, err) != 0)
        return -err->code;
    if (r->cfg.output_replace && unlink(r->cfg.output) != 0 && errno != ENOENT)
        return ltr_fail(err, errno, "cannot replace %s: %s", r->cfg.output, strerror(errno));
    if (!r->cfg.output_temp)
        return ltr_writer_open(&r->writer, r->cfg.output, err);
    char tmpl[sizeof r->cfg.output];
    snprintf(tmpl, sizeof tmpl, "%s", r->cfg.output);
    int fd = ltr_create_temp(tmpl);
    if (fd < 0)
        return ltr_fail(err, -fd, "creating a trace file %s: %s", r->cfg.output, strerror(-fd));
    snprintf(r->cfg.output, sizeof r->cfg.output, "%s", tmpl);
    return ltr_writer_open_fd(&r->writer, fd, r->cfg.output, err);
}

static int open_output(recorder *r, ltr_error *err)
{
    int rc = create_output(r, err);
    if (rc)
        return rc;
    if (r->cfg.max_file_size)
        ltr_writer_set_limit(r->writer, r->cfg.max_file_size);
    ltr_writer_set_drop_callback(r->writer, rec_on_drop, r);
    struct stat st;
    if (fstat(ltr_writer_fd(r->writer), &st) == 0) {
        r->output_dev = st.st_dev;
        r->output_ino = st.st_ino;
    }
    /* bounded by the buffers, not the threads (backlog.h) */
    for (unsigned c = 0; c < r->cfg.ncollectors; c++)
        r->backlog.cap += (size_t)REC_BACKLOG_POOLS * r->cfg.collectors[c].buffers * r->cfg.collectors[c].buffer_kb * 1024;
    if (r->backlog.cap > REC_BACKLOG_MAX)
        r->backlog.cap = REC_BACKLOG_MAX;
    ltr_bytes kv = {0};
    rec_header_kv(r, &kv, "file");
    rc = ltr_writer_kv(r->writer, LTR_CHUNK_HEADER, &kv, err);
    ltr_bytes_free(&kv);
    if (!rc)
        rc = ltr_writer_flush(r->writer, 1, err);
    return rc;
}

/* Finds the registry slot for our name: refused if a live session has it. */
static int claim_slot(recorder *r, ltr_error *err)
{
    int free_slot = -1;
    for (unsigned s = 0; s < LTR_MAX_SESSIONS; s++) {
        ltr_reg_session *rs = &r->reg->sessions[s];
        char name[LTR_SESSION_NAME_MAX];
        if (!atomic_load(&rs->incarnation)) {
            if (free_slot < 0)
                free_slot = (int)s;
        } else if (ltr_reg_session_name(rs, name) && !strcmp(name, r->cfg.name)) {
            return ltr_fail(err, EEXIST, "a session named '%s' is already running (recorder pid %u); "
                                         "stop it first or pick another name with --instance",
                            r->cfg.name, rs->recorder_pid);
        }
    }
    if (free_slot < 0)
        return ltr_fail(err, EBUSY, "%d sessions are running already, the most ltr allows",
                        LTR_MAX_SESSIONS);
    r->slot = (unsigned)free_slot;
    return 0;
}

static void enable_providers(recorder *r)
{
    for (unsigned i = 0; i < r->cfg.nproviders; i++) {
        const ltr_provider_spec *ps = &r->cfg.providers[i];
        ltr_reg_provider *p = ltr_registry_provider(r->reg, &ps->guid, ps->name);
        if (!p) {
            rec_log("provider table full: %s not enabled", ps->name);
            continue;
        }
        ltr_reg_enable *e = &p->per[r->slot];
        atomic_store(&e->level, ps->level);
        atomic_store(&e->collector, ps->collector);
        atomic_store(&e->any, ps->any);
        atomic_store(&e->all, ps->all);
        atomic_fetch_or(&p->sessions, 1u << r->slot);
    }
}

static int open_fds(recorder *r, ltr_error *err)
{
    r->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    ltr_ignore_sigxfsz(); /* when not started by the ltr command, which does it first */
    r->signal_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (r->wakefd < 0 || r->signal_fd < 0)
        return ltr_fail(err, errno, "eventfd/signalfd: %s", strerror(errno));
    return 0;
}

/* The recorder's share of the CPU decides what is lost when a program's
 * threads keep every CPU busy. 1000 threads allocating in bursts on 2 CPUs
 * (bench/threads): at the default priority the recorder got 16 % of a CPU
 * while they ran (preempted every 0.3 ms), and 2 to 3 runs in 10 lost events;
 * at nice -10, none in 10 (at -5, 1 in 10). It sleeps when nothing waits to
 * be written, so this takes nothing from the programs beside it then. Only a
 * privileged recorder may (root, CAP_SYS_NICE); others note it in their log
 * and go on: a note, not a problem, since it is every unprivileged user's
 * lot (as a problem it kept a log per `ltr record` and had each one say "the
 * recorder reported problems"); lost events are reported by their count. The share of its session (its autogroup) is raised by
 * launch.c, which made the session for it alone. */
static void raise_priority(void)
{
    errno = 0;
    int now = getpriority(PRIO_PROCESS, 0);
    if (errno || now <= LTR_RECORDER_NICE)
        return;
    if (setpriority(PRIO_PROCESS, 0, LTR_RECORDER_NICE) != 0)
        rec_note("running at nice %d: the recorder may not raise its priority (%s); a program whose "
                "threads keep every CPU busy may lose events", now, strerror(errno));
}

/* Each traced process holds two descriptors in the recorder (its
 * connection and its pidfd, loop.c): the usual soft limit of 1 024 would
 * refuse the 500th process at once. The recorder polls, never selects:
 * descriptors past 1 024 are fine. */
static void raise_fd_limit(void)
{
    struct rlimit l;
    if (getrlimit(RLIMIT_NOFILE, &l) == 0 && l.rlim_cur < l.rlim_max) {
        l.rlim_cur = l.rlim_max < ((rlim_t)1 << 20) ? l.rlim_max : (rlim_t)1 << 20;
        setrlimit(RLIMIT_NOFILE, &l);
    }
}

/* The recorder's own tables (the backlog, the writer's chunk buffers and
 * their copies, zstd's workspace) are megabytes, made as a session's first
 * chunks are: bench/heap's workload (205 K events in 0.2 s) had its recorder
 * take 4 600 page faults while the program ran, 11 to 15 us of CPU each on
 * the project's PVM guest, taken from a program whose two threads keep both
 * CPUs busy. In one arena that keeps what is freed, on huge pages
 * (prim/bigheap.c): 380. The reserve is address space; pages are taken as
 * they are touched, 2 MiB at a time. */
#define REC_HEAP_RESERVE ((size_t)64 << 20)

int rec_setup(recorder *r, const ltr_session_config *cfg, ltr_error *err)
{
    ltr_bigheap_keep();
    ltr_bigheap_huge(REC_HEAP_RESERVE);
    memset(r, 0, sizeof *r);
    raise_fd_limit();
    r->cfg = *cfg;
    for (unsigned i = 0; i < cfg->npids && i < LTR_MAX_SESSION_PIDS; i++)
        r->pid_start[i] = ltr_proc_start_time(cfg->pids[i]);
    r->memfd = r->wakefd = r->listen_fd = r->signal_fd = r->record_fd = r->controller_fd = -1;
    r->next_owner = 1;
    r->start_ns = ltr_now_ns();
    r->start_wall_ns = ltr_wall_ns();
    r->run_dirfd = ltr_runtime_dir_open(r->run_dir, sizeof r->run_dir, err);
    if (r->run_dirfd < 0)
        return r->run_dirfd;
    int rc;
    r->reg = ltr_registry_get(err);
    if (!r->reg)
        return -err->code;
    rc = open_fds(r, err);
    if (rc)
        return rc;
    ltr_registry_lock();
    ltr_client_reap(r->reg);
    rc = claim_slot(r, err);
    if (!rc) {
        /* 0 is a free slot's: a registry written over (any process that maps
         * it can) may hand it out, and a running session looked free. */
        while (!(r->incarnation = atomic_fetch_add(&r->reg->next_incarnation, 1)))
            ;
        rc = create_shm(r, err);
    }
    if (!rc)
        rc = alloc_notes(r, err);
    if (!rc)
        rc = open_socket(r, err);
    if (!rc && cfg->mode == LTR_MODE_FILE)
        rc = open_output(r, err);
    if (!rc)
        rc = rec_record_open(r, rec_log_name(), err);
    if (!rc) {
        ltr_reg_session *rs = &r->reg->sessions[r->slot];
        snprintf(rs->name, sizeof rs->name, "%s", cfg->name);
        rs->recorder_pid = (uint32_t)getpid();
        for (unsigned c = 0; c < 4; c++)
            atomic_store(&rs->unattached_lost[c], 0);
        atomic_store(&rs->unanswered, 0);
        atomic_store_explicit(&rs->incarnation, r->incarnation, memory_order_release);
        enable_providers(r);
        uint32_t own_slot; /* the recorder writes markers: it is a process of the trace too */
        rec_add_process(r, getpid(), UINT32_MAX, true, &own_slot, NULL);
    }
    ltr_registry_unlock();
    if (!rc)
        raise_priority();
    return rc;
}

void rec_take_events(recorder *r, bool take)
{
    r->not_taking = !take;
    if (r->shm)
        atomic_store(&r->shm->state, take ? LTR_SESSION_RUNNING : LTR_SESSION_STOPPING);
}

void rec_unpublish(recorder *r)
{
    rec_system_stop(r);
    if (!r->shm || !r->reg)
        return;
    rec_take_events(r, false);
    ltr_registry_lock();
    ltr_registry_release(r->reg, r->slot, r->incarnation); /* called at stop and again at exit */
    ltr_registry_unlock();
}

/* The pages of the buffers' data and of the metadata region given back (as
 * the session ends): a producer gives them back only at its next event of
 * an enabled provider, so a service that had joined the session (even one
 * denied by its pid filter) held the whole pool, 1 GB by default, until
 * another session or its exit (found by a review). Only these regions:
 * producers only write into them, and a late write lands in a fresh page;
 * the headers, buffer states and queues they read stay (punched to zeros, a
 * producer still on its way out of a write read a ring of no buffers and
 * divided by it: SIGFPE in test_e2e_attach). The places are the recorder's
 * own, never read from the shared memory a producer may have scribbled on. */
void rec_punch(const recorder *r, const uint8_t *from, size_t len)
{
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0 || !from || !len)
        return;
    uintptr_t base = (uintptr_t)r->shm, lo = (uintptr_t)from, hi = lo + len;
    lo = (lo + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    hi &= ~((uintptr_t)page - 1);
    if (lo < hi && lo >= base && hi <= base + r->shm_size)
        fallocate(r->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)(lo - base), (off_t)(hi - lo));
}

static void give_back_pages(const recorder *r)
{
    if (r->memfd < 0)
        return;
    for (unsigned c = 0; c < r->cfg.ncollectors; c++)
        rec_punch(r, r->col[c].ring.data, (size_t)r->col[c].ring.nbuf * r->col[c].ring.buffer_size);
    rec_punch(r, r->meta, r->meta_capacity);
}

void rec_teardown(recorder *r)
{
    if (r->listen_fd >= 0) {
        close(r->listen_fd);
        remove_socket(r);
    }
    rec_record_close(r);
    for (unsigned i = 0; i < r->nconns; i++) {
        close(r->conns[i].fd);
        if (r->conns[i].pidfd >= 0)
            close(r->conns[i].pidfd);
    }
    for (unsigned i = 0; i < r->norphans; i++)
        if (r->orphans[i].pidfd >= 0)
            close(r->orphans[i].pidfd);
    free(r->conns);
    free(r->losses);
    free(r->free_slots);
    free(r->proc_lost);
    ltr_bytes_free(&r->meta_taken);
    ltr_bytes_free(&r->meta_new);
    ltr_bytes_free(&r->meta_kept);
    free(r->owners);
    free(r->aliases);
    ltr_bytes_free(&r->layouts);
    ltr_bytes_free(&r->last_counters);
    rec_markers_free(r);
    for (unsigned c = 0; c < LTR_MAX_COLLECTORS; c++) {
        free(r->col[c].notes);
        free(r->col[c].flushing);
        free(r->col[c].queued_now);
        free(r->col[c].flushing_seq);
        free(r->col[c].queued_threads.keys);
        free(r->col[c].copy);
        free(r->col[c].saved_seq);
        free(r->col[c].saved_events);
        free(r->col[c].saved_first_ns);
        free(r->col[c].dead_seq1);
        free(r->col[c].dead_since);
        free(r->col[c].dead_owner);
        free(r->col[c].hole_seen);
        free(r->col[c].hole_since);
    }
    rec_backlog_free(&r->backlog);
    if (r->writer)
        ltr_writer_close(r->writer);
    if (r->shm) { /* producers may now give the pages back */
        atomic_store(&r->shm->state, LTR_SESSION_DONE);
        give_back_pages(r);
        ltr_unmap(r->shm, r->shm_size);
    }
    if (r->memfd >= 0)
        close(r->memfd);
    if (r->wakefd >= 0)
        close(r->wakefd);
    if (r->signal_fd >= 0)
        close(r->signal_fd);
    if (r->run_dirfd >= 0)
        close(r->run_dirfd);
}

/* Claims a loss-counter slot for a process and writes its PROCESS record. */
/* The PROCESS record of a process that joined the session, and its start_ts. */
/* pid: the process's in the recorder's /proc, which its records carry too
 * (a container's process writes the trace_pid its attach gave it). */
static uint64_t describe_process(recorder *r, pid_t pid, uint32_t owner)
{
    char path[64], buf[65536];
    ltr_bytes b = {0};
    size_t rec = ltr_bytes_record_begin(&b, LTR_META_PROCESS);
    uint64_t now = ltr_now_ns();
    ltr_bytes_put_u32(&b, (uint32_t)pid);
    ltr_bytes_put_u32(&b, ltr_proc_ppid((uint32_t)pid));
    ltr_bytes_put_u64(&b, now);
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(path, buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = 0;
    ltr_bytes_put_str(&b, buf);
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    ssize_t len = ltr_read_small_file(path, buf, sizeof buf);
    uint16_t argc = 0;
    for (ssize_t i = 0; i < len; i++)
        argc += buf[i] == 0;
    ltr_bytes_put_u16(&b, argc);
    for (const char *a = buf; a < buf + len; a += strlen(a) + 1)
        ltr_bytes_put_str(&b, a);
    ltr_bytes_record_end(&b, rec);
    /* not through the metadata region, where a full region (LTR_META_KB=64,
     * 40 python3 at once: 6 processes "(no process record)", an exec'd
     * bash read as the /usr/bin/env before it, its stacks damage) or a
     * flight recorder at its bound (LTR_KEPT_MAX_KB=64, a multiprocessing
     * pool: every worker without one, python3 read as the pyenv bash that
     * exec'd it) lost it: it is a process's identity, small, one an image */
    if (b.failed || rec_put_own_record(r, b.data, (uint32_t)b.len) != 0) {
        b.failed = 1;
        r->meta_refused++; /* no memory, or twice a flight recorder's bound: counted lost */
    }
    if (!b.failed && r->cfg.mode != LTR_MODE_FILE &&
        ltr_reserve((void **)&r->owners, &r->capowners, r->nowners, sizeof *r->owners, 64) == 0)
        r->owners[r->nowners++] = (struct rec_owner){(uint32_t)pid, owner, now};
    ltr_bytes_free(&b);
    return now;
}

int rec_add_process(recorder *r, pid_t pid, uint32_t owner, bool traced, uint32_t *proc_slot,
                    uint64_t *start_ts)
{
    uint64_t start = traced ? describe_process(r, pid, owner) : 0;
    if (start_ts)
        *start_ts = start;
    uint32_t slot = r->nfree_slots ? r->free_slots[--r->nfree_slots]
                    : r->next_proc < r->nprocs ? r->next_proc++
                                               : r->nprocs - 1; /* shared once all are taken */
    atomic_store(&r->procs[slot].pid, (uint32_t)pid);
    *proc_slot = slot;
    return 0;
}
