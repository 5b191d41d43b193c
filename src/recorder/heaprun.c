/*
 * recorder/heaprun.c — launching a command with the heap agent preloaded and
 * waiting for it: the part of `ltr record` and `ltr run` that is not option
 * parsing. The agent goes first in LD_PRELOAD so that it sees every
 * allocation; children inherit the variable, so the agent follows fork and
 * exec. As a subreaper, `ltr record` also adopts descendants whose parent
 * exits first, and waits for them before it writes the trace.
 */
#include "recorder/heaprun.h"
#include "recorder/client.h"
#include "byname/byname.h"
#include "event/registry.h"
#include "prim/prim.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef LTR_LIBDIR_REL
#define LTR_LIBDIR_REL "lib"
#endif

static bool readable(const char *path)
{
    return access(path, R_OK) == 0;
}

unsigned ltr_heap_cpus(void)
{
    /* taskset, a container's cpuset; all online ones if that cannot be told */
    cpu_set_t set;
    long cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
    return cpus > 0 ? (unsigned)cpus : 1;
}

uint32_t ltr_heap_default_buffers(void)
{
    uint64_t n = (uint64_t)LTR_HEAP_BUFFERS_PER_CPU * ltr_heap_cpus();
    return n > LTR_HEAP_BUFFERS_MOST ? LTR_HEAP_BUFFERS_MOST : (uint32_t)n;
}

bool ltr_session_traces_heap(const ltr_session_config *cfg)
{
    ltr_guid g;
    ltr_guid_from_name(LTR_HEAP_PROVIDER, &g);
    for (unsigned i = 0; i < cfg->nproviders; i++)
        if (!memcmp(cfg->providers[i].guid.b, g.b, sizeof g.b))
            return true;
    return false;
}

int ltr_heap_agent_path(char *out, size_t size, ltr_error *err)
{
    const char *env = getenv("LTR_HEAP_AGENT");
    if (env && *env) {
        if (snprintf(out, size, "%s", env) < (int)size && readable(out))
            return 0;
        return ltr_fail(err, ENOENT, "LTR_HEAP_AGENT=%s: no such readable file", env);
    }
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return ltr_fail(err, ENOENT, "cannot tell where ltr is (/proc/self/exe)");
    exe[n] = 0;
    const char *dir = dirname(exe);
    const char *libdirs[] = {"lib", LTR_LIBDIR_REL};
    for (size_t i = 0; i < 2; i++)
        if (snprintf(out, size, "%s/../%s/libltr-heap.so", dir, libdirs[i]) < (int)size &&
            readable(out))
            return 0;
    return ltr_fail(err, ENOENT, "the heap agent libltr-heap.so is not in %s/../lib or %s/../%s "
                                 "(set LTR_HEAP_AGENT to its path)", dir, dir, LTR_LIBDIR_REL);
}

void ltr_heap_session_config(ltr_session_config *cfg, uint32_t buffer_kb, uint32_t buffers)
{
    cfg->ncollectors = 1;
    snprintf(cfg->collectors[0].name, sizeof cfg->collectors[0].name, "%s", LTR_HEAP_COLLECTOR);
    cfg->collectors[0].buffer_kb = buffer_kb;
    cfg->collectors[0].buffers = buffers;
    cfg->nproviders = 1;
    ltr_provider_spec *p = &cfg->providers[0];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", LTR_HEAP_PROVIDER);
    ltr_guid_from_name(LTR_HEAP_PROVIDER, &p->guid);
}

int ltr_record_session_config(ltr_session_config *cfg, const ltr_record_setup *s, ltr_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->name, sizeof cfg->name, "record-%d", (int)getpid());
    cfg->mode = s->mode;
    ltr_heap_session_config(cfg, s->buffer_kb, s->buffers);
    cfg->exclusive = !s->pid; /* the command and its children only, not other traced programs */
    if (s->pid) {             /* that process only */
        cfg->pids[cfg->npids++] = s->pid;
        cfg->pid_collectors = 1;
    }
    cfg->output_temp = s->mode == LTR_MODE_FILE;
    if (cfg->output_temp && ltr_temp_name(cfg->output, sizeof cfg->output, s->trace) < 0)
        return ltr_fail(err, ENAMETOOLONG, "path too long: %s", s->trace);
    if (snprintf(cfg->stop_output, sizeof cfg->stop_output, "%s", s->trace) >= (int)sizeof cfg->stop_output)
        return ltr_fail(err, ENAMETOOLONG, "path too long: %s", s->trace);
    cfg->stop_force = s->force;
    return 0;
}

bool ltr_heap_traced_anywhere(void)
{
    ltr_error err = {0};
    ltr_registry *reg = ltr_registry_get(&err);
    if (!reg)
        return false;
    ltr_guid g;
    ltr_guid_from_name(LTR_HEAP_PROVIDER, &g);
    ltr_registry_lock();
    ltr_client_reap(reg); /* a killed recorder's bits would say yes */
    ltr_reg_provider *p = ltr_registry_provider(reg, &g, LTR_HEAP_PROVIDER);
    bool on = p && atomic_load(&p->sessions) != 0;
    ltr_registry_unlock();
    return on;
}

int ltr_heap_sessions(char names[][LTR_SESSION_NAME_MAX_RUN], int max)
{
    ltr_error err = {0};
    ltr_registry *reg = ltr_registry_get(&err);
    if (!reg)
        return 0;
    ltr_guid g;
    ltr_guid_from_name(LTR_HEAP_PROVIDER, &g);
    int n = 0;
    ltr_registry_lock();
    ltr_client_reap(reg);
    ltr_reg_provider *p = ltr_registry_provider(reg, &g, LTR_HEAP_PROVIDER);
    uint32_t bits = p ? atomic_load(&p->sessions) : 0;
    for (unsigned s = 0; s < LTR_MAX_SESSIONS && n < max; s++) {
        char name[LTR_SESSION_NAME_MAX];
        if ((bits & (1u << s)) && atomic_load(&reg->sessions[s].incarnation) &&
            ltr_reg_session_name(&reg->sessions[s], name))
            snprintf(names[n++], LTR_SESSION_NAME_MAX_RUN, "%s", name);
    }
    ltr_registry_unlock();
    return n;
}

/* cmd's executable file name as the recorder compares it with a session's
 * names (the target of a symlink: python3 runs python3.11), or "". */
static void command_exe_name(const char *cmd, char *out, size_t size)
{
    out[0] = 0;
    char found[4096], real[PATH_MAX];
    if (strchr(cmd, '/')) {
        snprintf(found, sizeof found, "%s", cmd);
    } else {
        const char *path = getenv("PATH");
        bool ok = false;
        for (const char *d = path ? path : ""; *d && !ok;) {
            const char *colon = strchr(d, ':');
            size_t len = colon ? (size_t)(colon - d) : strlen(d);
            snprintf(found, sizeof found, "%.*s/%s", (int)len, len ? d : ".", cmd);
            ok = access(found, X_OK) == 0;
            d += len + (colon != NULL);
        }
        if (!ok)
            return;
    }
    if (!realpath(found, real))
        return;
    const char *slash = strrchr(real, '/');
    const char *base = slash ? slash + 1 : real;
    if (strlen(base) < size)
        memcpy(out, base, strlen(base) + 1);
}

bool ltr_session_takes_command(const ltr_session_status *st, const char *cmd)
{
    if (!st->nwanted && !st->names[0])
        return true;
    const char *slash = strrchr(cmd, '/');
    char exe[256];
    command_exe_name(cmd, exe, sizeof exe);
    const char *given = slash ? slash + 1 : cmd;
    for (const char *p = st->names, *end; *p; p = *end ? end + 1 : end) {
        end = strchr(p, '/');
        end = end ? end : p + strlen(p);
        size_t len = (size_t)(end - p);
        if ((strlen(given) == len && !strncmp(given, p, len)) || (strlen(exe) == len && !strncmp(exe, p, len)))
            return true;
    }
    return false;
}

/* ---- the child ---------------------------------------------------------------- */

static void set_preload(const char *agent)
{
    const char *old = getenv("LD_PRELOAD");
    if (!old || !*old) {
        setenv("LD_PRELOAD", agent, 1);
        return;
    }
    size_t n = strlen(agent) + strlen(old) + 2;
    char *v = malloc(n);
    if (!v)
        return;
    snprintf(v, n, "%s:%s", agent, old);
    setenv("LD_PRELOAD", v, 1);
    free(v);
}

/* In the child: environment, then exec; on failure the errno goes back
 * through the close-on-exec pipe. */
static void exec_child(const ltr_heap_launch *l, int errpipe)
{
    if (l->session)
        setenv("LTR_SESSION", l->session, 1);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    ltr_restore_sigxfsz();
    set_preload(l->agent);
    if (l->stack_depth >= 0) {
        char d[16];
        snprintf(d, sizeof d, "%d", l->stack_depth);
        setenv("LTR_HEAP_DEPTH", d, 1);
    }
    execvp(l->argv[0], l->argv);
    int e = errno;
    if (write(errpipe, &e, sizeof e) < 0) {
        /* the parent then sees exit status 127 without a reason */
    }
    _exit(127);
}

/* ---- passing signals on --------------------------------------------------- */

static volatile sig_atomic_t child_pid, signals_seen;

static void pass_on(int sig, siginfo_t *si, void *ctx)
{
    /* A terminal's Ctrl-C reaches the whole foreground group, the command
     * included: pass on only what was sent to ltr alone. */
    if (si && si->si_code == SI_KERNEL)
        return;
    if (child_pid > 0)
        kill(child_pid, ++signals_seen >= 3 ? SIGKILL : sig);
}

static void catch_signals(void)
{
    struct sigaction sa = {.sa_sigaction = pass_on, .sa_flags = SA_SIGINFO};
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
}

static int exit_status(int st)
{
    return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
}

/* Waits for the command, and with `all` for every other child too; *sig gets
 * the signal that ended the command, or 0. */
static int wait_all(pid_t child, bool all, int *sig)
{
    int result = 1, st;
    for (;;) {
        pid_t w = waitpid(all ? -1 : child, &st, 0);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return result;
        if (w == child) {
            result = exit_status(st);
            *sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
            child_pid = 0;
            if (!all)
                return result;
        }
    }
}

int ltr_heap_run(const ltr_heap_launch *l, int *status, ltr_error *err)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return ltr_fail(err, errno, "pipe: %s", strerror(errno));
    if (l->wait_descendants)
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    catch_signals();
    fflush(NULL);
    pid_t child = fork();
    if (child < 0) {
        close(p[0]);
        close(p[1]);
        return ltr_fail(err, errno, "fork: %s", strerror(errno));
    }
    if (child == 0)
        exec_child(l, p[1]);
    child_pid = child;
    close(p[1]);
    int e = 0;
    ssize_t n;
    while ((n = read(p[0], &e, sizeof e)) < 0 && errno == EINTR) {
    }
    close(p[0]);
    int sig = 0;
    *status = wait_all(child, l->wait_descendants, &sig);
    if (l->killed_by)
        *l->killed_by = sig;
    err->code = 0;
    if (n == (ssize_t)sizeof e) {
        /* as a shell says it, with a shell's status: not found, or found and not runnable */
        *status = e == ENOENT ? 127 : 126;
        ltr_fail(err, e, "%s: %s", l->argv[0], strerror(e));
    }
    return 0;
}

void ltr_heap_report_signal(const char *cmd, const char *what, int sig)
{
    if (!sig)
        return;
    const char *name = sigabbrev_np(sig);
    fprintf(stderr, "ltr %s: %s was killed by signal %d (SIG%s: %s)\n", cmd, what, sig, name ? name : "?",
            strsignal(sig));
}

int ltr_heap_agent_loaded(uint32_t pid)
{
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%u/maps", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -errno;
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, "/libltr-heap.so") != NULL;
    fclose(f);
    return found;
}

int ltr_heap_name_reach_of(const char *name, ltr_heap_name_reach *out)
{
    static ltr_byname_list set;
    static uint32_t pids[4096];
    ltr_error err;
    memset(out, 0, sizeof *out);
    out->configured = ltr_byname_read(&set, &err) == 0 && ltr_byname_listed(&set, name);
    int n = ltr_pids_named(name, geteuid(), pids, 4096);
    if (n < 0)
        return n;
    out->running = (unsigned)n;
    for (int k = 0; k < n && k < 4096; k++)
        if (ltr_heap_agent_loaded(pids[k]) != 1 && out->without++ < LTR_MAX_SESSION_PIDS)
            out->pids_without[out->without - 1] = pids[k];
    return 0;
}
