/*
 * system/sampler.c — the system provider's thread in the recorder: every
 * interval it reads the memory counters of each target process and of the
 * machine and writes them as Ltr.System events (docs/system-provider.md).
 *
 * It writes through the public provider API like any program, with
 * $LTR_SESSION naming its own session, so its events go to that session only
 * (another session enabling Ltr.System has targets of its own): in memory
 * mode they are overwritten with the oldest buffers, with no free buffer
 * they are lost and counted, and the trace format needs nothing new. The
 * recorder's main thread answers its attach like any producer's: this thread
 * must never be the recorder's only one.
 */
#include "system/system.h"
#include "system/internal.h"
#include "base/system_events.h"
#include "prim/prim.h"

#include <ltr/provider.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

LTR_PROVIDER_DEFINE(sys_provider, LTR_SYSTEM_PROVIDER);

#define SYS_TICK_MS 100 /* processes, threads, modules in /proc: a tenth of a second */

static const ltr_field_desc proc_mem_fields[] = {
    {"pid", LTR_TYPE_U32},        {"private_bytes", LTR_TYPE_UVAR}, {"rss", LTR_TYPE_UVAR},
    {"rss_file", LTR_TYPE_UVAR},  {"rss_shmem", LTR_TYPE_UVAR},     {"swap", LTR_TYPE_UVAR},
    {"minor_faults", LTR_TYPE_UVAR}, {"major_faults", LTR_TYPE_UVAR}};
static const ltr_field_desc sys_mem_fields[] = {{"mem_total", LTR_TYPE_UVAR}, {"mem_available", LTR_TYPE_UVAR}};
LTR_EVENT_DEFINE(ev_proc_mem, sys_provider, LTR_SYS_EV_PROCESS_MEMORY, LTR_LEVEL_INFO, LTR_SYSKW_MEMINFO,
                 "ProcessMemory", proc_mem_fields);
LTR_EVENT_DEFINE(ev_sys_mem, sys_provider, LTR_SYS_EV_SYSTEM_MEMORY, LTR_LEVEL_INFO, LTR_SYSKW_MEMINFO,
                 "SystemMemory", sys_mem_fields);

#define MAX_TARGETS 4096

typedef struct target {
    uint32_t pid;
    uint64_t start_ticks; /* a pid reused by a new process is not the target */
} target;

struct ltr_system {
    ltr_system_config cfg;
    pthread_t thread;
    int wakefd;
    _Atomic bool stop;
    pthread_mutex_t lock; /* targets: added by the recorder's thread */
    target *targets;
    size_t ntargets, cap;
    uint32_t self;
    _Atomic uint64_t written, lost;
    uint64_t overruns; /* set by the thread as it ends */
    bool connector;
    sys_cpu *cpu; /* made by ltr_system_start: why it could not be, in cpu_why */
    /* captures of state: asked by the recorder's thread, done by this one */
    _Atomic uint64_t capture_asked, capture_done;
    ltr_system_capture captured; /* of the last one done: read once capture_done says so */
    char cpu_why[256];
};

void sys_write(ltr_system *s, ltr_event_desc *d, const ltr_value *v, size_t n)
{
    ltr_write_result res = {0};
    if (!ltr_provider_enabled(d->provider))
        return;
    ltr_event_write_values(d, v, n, &res);
    atomic_fetch_add(&s->written, res.sessions_written);
    atomic_fetch_add(&s->lost, res.sessions_lost);
}

bool sys_wants(const ltr_system *s, uint64_t keyword)
{
    return !s->cfg.keywords || (s->cfg.keywords & keyword);
}

void ltr_system_add_target(ltr_system *s, uint32_t pid)
{
    if (!s || !pid || pid == s->self)
        return;
    uint64_t ticks = ltr_proc_start_ticks((pid_t)pid);
    pthread_mutex_lock(&s->lock);
    bool known = false;
    for (size_t i = 0; i < s->ntargets && !known; i++)
        if (s->targets[i].pid == pid) {
            known = true;
            s->targets[i].start_ticks = ticks; /* the pid's current process */
        }
    if (!known && s->ntargets < MAX_TARGETS &&
        ltr_reserve((void **)&s->targets, &s->cap, s->ntargets, sizeof *s->targets, 16) == 0)
        s->targets[s->ntargets++] = (target){pid, ticks};
    pthread_mutex_unlock(&s->lock);
}

size_t sys_targets(ltr_system *s, uint32_t *pids, size_t cap)
{
    pthread_mutex_lock(&s->lock);
    size_t n = s->ntargets < cap ? s->ntargets : cap;
    for (size_t i = 0; i < n; i++)
        pids[i] = s->targets[i].pid;
    pthread_mutex_unlock(&s->lock);
    return n;
}

/* A target that is gone (or whose pid now names another process) is dropped. */
void sys_drop_target(ltr_system *s, uint32_t pid)
{
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < s->ntargets; i++)
        if (s->targets[i].pid == pid) {
            s->targets[i] = s->targets[--s->ntargets];
            break;
        }
    pthread_mutex_unlock(&s->lock);
}

static bool same_process(ltr_system *s, uint32_t pid, uint64_t ticks)
{
    pthread_mutex_lock(&s->lock);
    bool same = true;
    for (size_t i = 0; i < s->ntargets; i++)
        if (s->targets[i].pid == pid)
            same = !s->targets[i].start_ticks || s->targets[i].start_ticks == ticks;
    pthread_mutex_unlock(&s->lock);
    return same;
}

static void sample_memory(ltr_system *s)
{
    uint64_t total, avail;
    if (ltr_system_memory_read(&total, &avail) == 0) {
        ltr_value v[] = {LTR_UVAR(total), LTR_UVAR(avail)};
        sys_write(s, &ev_sys_mem, v, 2);
    }
    uint32_t pids[MAX_TARGETS];
    size_t n = sys_targets(s, pids, MAX_TARGETS);
    for (size_t i = 0; i < n; i++) {
        ltr_proc_memory m;
        if (ltr_proc_memory_read((pid_t)pids[i], &m) != 0 || !same_process(s, pids[i], m.start_ticks)) {
            sys_drop_target(s, pids[i]);
            continue;
        }
        ltr_value v[] = {LTR_U32(pids[i]), LTR_UVAR(m.private_bytes), LTR_UVAR(m.rss), LTR_UVAR(m.rss_file),
                         LTR_UVAR(m.rss_shmem), LTR_UVAR(m.swap), LTR_UVAR(m.minflt), LTR_UVAR(m.majflt)};
        sys_write(s, &ev_proc_mem, v, sizeof v / sizeof v[0]);
    }
}

/* Milliseconds until `at`, rounded up, for poll. */
static int ms_until(uint64_t at, uint64_t now)
{
    return at > now ? (int)((at - now + 999999) / 1000000) : 0;
}

/* A capture of state: first what changed since the last tick, then all of it. */
static void capture(ltr_system *s, sys_procs *ps, bool mem, uint64_t asked)
{
    ltr_system_capture c = {0};
    if (ps) {
        sys_procs_tick(ps);
        sys_procs_capture(ps, &c);
    }
    if (mem)
        sample_memory(s);
    s->captured = c;
    atomic_store(&s->capture_done, asked);
}

int ltr_system_capture_state(ltr_system *s, unsigned timeout_ms, ltr_system_capture *out)
{
    uint64_t asked = atomic_fetch_add(&s->capture_asked, 1) + 1, one = 1;
    if (write(s->wakefd, &one, sizeof one) < 0) {
        /* the counter is full: a wake-up is pending anyway */
    }
    for (uint64_t end = ltr_now_ns() + (uint64_t)timeout_ms * 1000000u; atomic_load(&s->capture_done) < asked;) {
        if (ltr_now_ns() > end)
            return -ETIMEDOUT;
        usleep(1000);
    }
    *out = s->captured;
    return 0;
}

static void *run(void *arg)
{
    ltr_system *s = arg;
    ltr_provider_register(&sys_provider); /* on failure it stays disabled: nothing is written */
    uint64_t interval = (uint64_t)s->cfg.interval_ms * 1000000ull, now = ltr_now_ns(), next = now, next_tick = now;
    bool mem = sys_wants(s, LTR_SYSKW_MEMINFO), procs = sys_wants(s, LTR_SYSKW_PROCESS),
         loader = sys_wants(s, LTR_SYSKW_LOADER);
    sys_procs *ps = procs || loader ? sys_procs_new(s, procs, loader, s->cfg.targets_only) : NULL;
    int cpufds[256];
    size_t ncpufds = sys_cpu_fds(s->cpu, cpufds, 256);
    while (!atomic_load(&s->stop)) {
        now = ltr_now_ns();
        if (mem && now >= next) {
            sample_memory(s);
            next += interval;
            if (next <= now) /* late (a stopped recorder): no burst of catching up */
                next = now + interval;
        }
        if (ps && now >= next_tick) {
            sys_procs_tick(ps);
            next_tick = now + SYS_TICK_MS * 1000000ull;
        }
        now = ltr_now_ns();
        int timeout = -1;
        if (mem)
            timeout = ms_until(next, now);
        if (ps && (timeout < 0 || ms_until(next_tick, now) < timeout))
            timeout = ms_until(next_tick, now);
        if (s->cpu && (timeout < 0 || timeout > SYS_TICK_MS)) /* samples are read at least every tick */
            timeout = SYS_TICK_MS;
        struct pollfd pfd[2 + 256] = {{.fd = s->wakefd, .events = POLLIN}, {.fd = sys_procs_fd(ps), .events = POLLIN}};
        for (size_t i = 0; i < ncpufds; i++)
            pfd[2 + i] = (struct pollfd){.fd = cpufds[i], .events = POLLIN};
        if (poll(pfd, 2 + ncpufds, timeout) > 0) {
            uint64_t junk;
            if ((pfd[0].revents & POLLIN) && read(s->wakefd, &junk, sizeof junk) < 0) {
                /* nothing: only a wake-up */
            }
            if (pfd[1].revents & POLLIN)
                sys_procs_read(ps);
        }
        if (s->cpu)
            sys_cpu_read(s->cpu);
        uint64_t asked = atomic_load(&s->capture_asked);
        if (asked != atomic_load(&s->capture_done))
            capture(s, ps, mem, asked);
    }
    if (s->cpu)
        sys_cpu_read(s->cpu);
    if (mem) /* the session ends: its last figures */
        sample_memory(s);
    if (ps)
        sys_procs_tick(ps); /* and what ended before it */
    sys_procs_free(ps, &s->overruns, &s->connector);
    ltr_flush_thread();
    ltr_provider_unregister(&sys_provider);
    return NULL;
}

int ltr_system_start(const ltr_system_config *cfg, ltr_system **out, ltr_error *err)
{
    ltr_system *s = calloc(1, sizeof *s);
    if (!s)
        return ltr_fail(err, ENOMEM, "out of memory");
    s->cfg = *cfg;
    s->cfg.pids = NULL;
    s->cfg.npids = 0;
    if (!s->cfg.interval_ms)
        s->cfg.interval_ms = LTR_SYSTEM_INTERVAL_MS_DEFAULT;
    s->self = (uint32_t)getpid();
    pthread_mutex_init(&s->lock, NULL);
    for (unsigned i = 0; i < cfg->npids; i++)
        ltr_system_add_target(s, cfg->pids[i]);
    if (sys_wants(s, LTR_SYSKW_SAMPLES))
        s->cpu = sys_cpu_new(s, s->cpu_why, sizeof s->cpu_why);
    s->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->wakefd < 0) {
        int e = errno;
        ltr_system_stop(s, NULL);
        return ltr_fail(err, e, "system provider: eventfd: %s", strerror(e));
    }
    /* Our events go to our session only (event/producer.c reads it once). */
    if (cfg->session)
        setenv("LTR_SESSION", cfg->session, 1);
    int rc = pthread_create(&s->thread, NULL, run, s);
    if (rc) {
        close(s->wakefd);
        s->wakefd = -1;
        free(s->targets);
        free(s);
        return ltr_fail(err, rc, "system provider: cannot start its thread: %s", strerror(rc));
    }
    *out = s;
    return 0;
}

void ltr_system_stop(ltr_system *s, ltr_system_report *report)
{
    if (!s)
        return;
    if (s->wakefd >= 0) {
        atomic_store(&s->stop, true);
        uint64_t one = 1;
        if (write(s->wakefd, &one, sizeof one) < 0) {
            /* the counter is full: a wake-up is pending anyway */
        }
        pthread_join(s->thread, NULL);
        close(s->wakefd);
    }
    if (report)
        *report = (ltr_system_report){atomic_load(&s->written), atomic_load(&s->lost), s->overruns, s->connector};
    sys_cpu_free(s->cpu);
    pthread_mutex_destroy(&s->lock);
    free(s->targets);
    free(s);
}

const char *ltr_system_cpu_problem(const ltr_system *s)
{
    return s && s->cpu_why[0] ? s->cpu_why : NULL;
}

