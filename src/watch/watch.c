/*
 * watch/watch.c — `ltr watch` itself (watch.h): the session, the target, the
 * polls, the triggers.
 *
 * The session is what a user would start by hand for this (docs/watch.md):
 * `ltr start heap heapsnapshot memory [PROFILE...]` in memory mode, limited
 * to the target (--pid, or --name to follow it across restarts), the target
 * attached if it runs without the agent, its heap snapshots enabled. It
 * belongs to the watch: the recorder cancels it if the watch is killed.
 * Every poll reads the target's private bytes from /proc (the same reader as
 * the system provider's) and feeds the condition (cond.c). A trigger writes
 * a marker with the condition and its figures, asks the target for a heap
 * snapshot (so the saved trace holds every live block with its stack, not
 * only the flight recorder's tail) and saves the trace to a new file. The
 * target by --pid exiting is saved the same way: the lead-up to a crash or
 * an OOM kill is what a flight recorder is for.
 */
#include "watch/watch.h"
#include "base/units.h"
#include "byname/byname.h"
#include "inject/inject.h"
#include "prim/prim.h"
#include "profiles/profiles.h"
#include "recorder/client.h"
#include "recorder/heaprun.h"
#include "recorder/reach.h"
#include "recorder/recorder.h"
#include "recorder/snapshot.h"
#include "system/system.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WATCH_SNAPSHOT_TIMEOUT_MS 30000
#define WATCH_SLICE_MS 100 /* how soon a stop request is seen */
#define WATCH_LINE 256     /* a monitor line */

static const char *const watch_profiles[] = {"heap", "heapsnapshot", "memory"};

/* Whether nothing exists at path (not even a dangling symlink). */
static bool is_free(const char *path)
{
    struct stat st;
    return lstat(path, &st) != 0 && errno == ENOENT;
}

int ltr_watch_trace_path(const char *record_to, bool with_bundle, unsigned *n, char *out, size_t size)
{
    const char *slash = strrchr(record_to, '/'), *dot = strrchr(record_to, '.');
    size_t stem = dot && dot > (slash ? slash + 1 : record_to) ? (size_t)(dot - record_to) : strlen(record_to);
    for (;; (*n)++) {
        int len = *n <= 1 ? snprintf(out, size, "%s", record_to)
                          : snprintf(out, size, "%.*s-%u%s", (int)stem, record_to, *n, record_to + stem);
        if (len < 0 || (size_t)len >= size)
            return -ENAMETOOLONG;
        char bundle[PATH_MAX];
        if (is_free(out) && (!with_bundle || (ltr_watch_bundle_path(out, bundle, sizeof bundle) == 0 && is_free(bundle))))
            return 0;
        if (*n == UINT_MAX)
            return -EEXIST;
    }
}

void ltr_watch_poll_format(const ltr_watch_poll *p, time_t wall, char *out, size_t size)
{
    char when[32], pb[32], g[32];
    struct tm tm;
    strftime(when, sizeof when, "%H:%M:%S", localtime_r(&wall, &tm));
    /* the poll that fires says so: "waiting for growth above 2 MiB" beside
     * a growth of 3 MiB read as a watch that missed its condition */
    const char *what = p->v.state == LTR_WATCH_FIRE ? "condition met: " : "waiting for ";
    const char *text = p->v.state == LTR_WATCH_FIRE ? "trigger" : p->v.waits_for;
    if (!p->pid)
        snprintf(out, size, "%s  no process  %s%s", when, what, text);
    else if (p->no_answer) /* "reaches back 0 s" read as a recorder holding nothing */
        snprintf(out, size, "%s  pid %u  private %s  growth %s  recorder does not answer  %s%s", when, p->pid,
                 ltr_size_format(p->v.private_bytes, pb, sizeof pb), ltr_size_format_signed(p->v.growth, g, sizeof g),
                 what, text);
    else
        snprintf(out, size, "%s  pid %u  private %s  growth %s  recorder reaches back %.0f s  %s%s", when, p->pid,
                 ltr_size_format(p->v.private_bytes, pb, sizeof pb), ltr_size_format_signed(p->v.growth, g, sizeof g),
                 (double)p->reach_ns / 1e9, what, text);
}

static int check_directory(const char *record_to, ltr_error *err)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(record_to, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == record_to ? 1 : (int)(slash - record_to), record_to);
    struct stat st;
    if (stat(dir, &st) != 0)
        return ltr_fail(err, errno, "--record-to %s: its directory %s: %s", record_to, dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return ltr_fail(err, ENOTDIR, "--record-to %s: %s is not a directory", record_to, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return ltr_fail(err, errno, "--record-to %s: this user may not write in %s (%s)", record_to, dir,
                        strerror(errno));
    if (stat(record_to, &st) == 0 && S_ISDIR(st.st_mode))
        return ltr_fail(err, EISDIR, "--record-to %s is a directory: give a file name in it", record_to);
    return 0;
}

/* The profiles the session records: watch's own, then the user's. */
static ltr_plan *resolve(const ltr_watch_config *cfg, ltr_error *err)
{
    const char *specs[64];
    size_t n = 0;
    for (size_t i = 0; i < sizeof watch_profiles / sizeof *watch_profiles; i++)
        specs[n++] = watch_profiles[i];
    for (size_t i = 0; i < cfg->nprofiles && n < 64; i++)
        specs[n++] = cfg->profiles[i];
    ltr_profile_request req = {.specs = specs, .nspecs = n};
    ltr_plan *plan = NULL;
    int rc = ltr_profiles_resolve(&req, &plan);
    if (!plan) {
        ltr_fail(err, ENOMEM, "out of memory reading the profiles");
        return NULL;
    }
    if (rc) {
        char line[2048] = "the profiles have errors";
        for (size_t i = 0; i < plan->diags.n; i++)
            if (plan->diags.v[i].severity == LTR_DIAG_ERROR) {
                ltr_diag_format(&plan->diags.v[i], line, sizeof line);
                break;
            }
        ltr_fail(err, EINVAL, "%s", line);
        ltr_plan_free(plan);
        return NULL;
    }
    return plan;
}

int ltr_watch_check(const ltr_watch_config *cfg, ltr_error *err)
{
    int rc = ltr_watch_rule_check(&cfg->rule, err);
    if (rc)
        return rc;
    if (!cfg->pid == !cfg->name)
        return ltr_fail(err, EINVAL, "give the process to watch: --pid PID or --name NAME (one of them)");
    if (cfg->name && (rc = ltr_byname_check(cfg->name, err)))
        return rc;
    if (cfg->pid && kill((pid_t)cfg->pid, 0) != 0 && errno == ESRCH)
        return ltr_fail(err, ESRCH, "--pid %u: no such process", cfg->pid);
    if (!cfg->record_to || !cfg->record_to[0])
        return ltr_fail(err, EINVAL, "give --record-to FILE: where a trigger saves the trace");
    if (cfg->record_to[0] != '/') /* the recorder would write it in its own directory, not ours */
        return ltr_fail(err, EINVAL, "--record-to %s: give an absolute path", cfg->record_to);
    if ((rc = check_directory(cfg->record_to, err)))
        return rc;
    if (cfg->support_bundle && (rc = ltr_watch_bundle_check(err)))
        return rc;
    ltr_plan *plan = resolve(cfg, err);
    if (!plan)
        return -EINVAL;
    ltr_plan_free(plan);
    return 0;
}

/* ---- the session --------------------------------------------------------------- */

typedef struct watch {
    const ltr_watch_config *cfg;
    const ltr_watch_hooks *h;
    ltr_session_config sc;
    char rundir[4096];
    uint32_t pid;          /* the process watched now; 0: none (by name, waiting) */
    uint64_t start_ticks;  /* its start: a reused pid is another process */
    uint32_t snap_pid;     /* whose snapshots are enabled: a trigger takes one */
    bool snap_ours;        /* ... because the watch turned them on: undone at its end */
    /* the agent's own memory is not growth: polls count from once it joined (settling()) */
    bool joined, settled;
    unsigned unjoined; /* polls the agent has not joined in */
    bool silent;       /* the recorder did not answer the last poll's status (said once) */
    bool gone;         /* the session ended under the watch (ltr stop or cancel of it, its recorder dead) */
    ltr_watch_cond cond;
    unsigned triggers, next_n;
    uint64_t t0;
    char *plan_text;       /* for the bundle: the session plan as text */
    /* the monitor's last polls, for the bundle: a ring, so the watch's
     * memory stays flat however long it runs */
    char history[LTR_WATCH_HISTORY][WATCH_LINE];
    unsigned nhistory, history_next;
} watch;

static void say(watch *w, bool warn, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(watch *w, bool warn, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    void (*fn)(void *, const char *) = warn ? w->h->warn : w->h->note;
    if (fn)
        fn(w->h->ctx, line);
}

static int start_session(watch *w, ltr_error *err)
{
    ltr_plan *plan = resolve(w->cfg, err);
    if (!plan)
        return -EINVAL;
    ltr_session_config *sc = &w->sc;
    memset(sc, 0, sizeof *sc);
    snprintf(sc->name, sizeof sc->name, "watch-%d", (int)getpid());
    sc->mode = LTR_MODE_MEMORY;
    ltr_session_options o = {0};
    ltr_bytes notes = {0};
    int rc = ltr_session_config_build(plan, &o, sc, &notes, err);
    size_t plan_len;
    FILE *f = w->cfg->support_bundle ? open_memstream(&w->plan_text, &plan_len) : NULL;
    if (f) {
        ltr_plan_write_text(f, plan);
        fclose(f);
    }
    ltr_plan_free(plan);
    for (const char *p = (const char *)notes.data, *end = p + notes.len; p && p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        say(w, false, "note: %.*s", (int)n, p);
        p += n + 1;
    }
    ltr_bytes_free(&notes);
    if (rc)
        return rc;
    if (w->cfg->pid)
        sc->pids[sc->npids++] = w->cfg->pid;
    else
        snprintf(sc->names[sc->nnames++], sizeof sc->names[0], "%s", w->cfg->name);
    /* Every collector is the target's, not the heap's alone: the snapshot
     * collector takes any process whose snapshots are enabled, and a watch on
     * rleak saved the periodic snapshots of two python3 services that a
     * --trend session had enabled before, with their memory counters (a
     * process that may write into one collector is a target of the system
     * provider too): their 52 MiB listed first in the trigger's trace. */
    sc->pid_collectors = (uint8_t)((1u << sc->ncollectors) - 1);
    sc->system_interval_ms = w->cfg->memory_interval_ms;
    sc->cancel_when_orphaned = true;
    if ((rc = ltr_runtime_dir(w->rundir, sizeof w->rundir, err)))
        return rc;
    if (w->cfg->pid && (rc = ltr_attach_check((pid_t)w->cfg->pid, w->rundir, err)) < 0) {
        ltr_error why = *err; /* ltr_fail writes into err: its message is copied first */
        return ltr_fail(err, -rc, "--pid %u: %s", w->cfg->pid, why.msg);
    }
    if ((rc = ltr_recorder_launch(sc, err)))
        return rc;
    say(w, false, "session '%s' started: memory mode, profiles %s", sc->name, sc->profiles);
    return 0;
}

static void end_session(watch *w)
{
    ltr_error err;
    if (w->snap_pid && w->snap_ours && kill((pid_t)w->snap_pid, 0) == 0)
        ltr_snapshot_enable_pid(w->snap_pid, false, &err);
    w->snap_pid = 0;
    if (!w->gone && ltr_client_op(w->sc.name, "cancel", NULL, NULL, false, NULL, &err))
        say(w, true, "cancelling session '%s': %s", w->sc.name, err.msg);
}

/* pid carries the agent (attached now if it did not) and keeps its snapshot
 * table. Returns 0, or -errno with err (by pid: the watch cannot go on). */
static int reach(watch *w, uint32_t pid, ltr_error *err)
{
    if (w->cfg->pid) {
        ltr_reached r[1];
        int n = ltr_session_reach_pids(&w->sc, w->rundir, r, err);
        if (n < 0)
            return n;
        if (r[0].state < 0)
            return ltr_fail(err, -r[0].state, "pid %u could not be attached: %s", pid, r[0].why.msg);
        if (r[0].state == LTR_ATTACH_INJECTED)
            say(w, false, "pid %u: heap agent loaded (thread %d stopped %.1f ms)", pid, (int)r[0].rep.tid,
                (double)r[0].rep.call_ns / 1e6);
    } else {
        static ltr_name_reached r;
        ltr_session_reach_name(w->cfg->name, w->rundir, &r);
        for (unsigned k = 0; k < r.tried; k++)
            if (r.procs[k].pid == pid && r.procs[k].state < 0)
                return ltr_fail(err, -r.procs[k].state, "pid %u (%s) could not be attached: %s", pid,
                                w->cfg->name, r.procs[k].why.msg);
        /* one that carries the agent already (the by-name setting's) may
         * still not reach this session (a private /tmp): it waited "for the
         * heap agent to join" for good */
        ltr_error why;
        if (ltr_heap_agent_loaded(pid) == 1 && ltr_attach_check((pid_t)pid, w->rundir, &why) < 0)
            return ltr_fail(err, -why.code, "pid %u (%s) carries the heap agent but cannot join the session: %s",
                            pid, w->cfg->name, why.msg);
    }
    /* snapshots someone enabled before (ltr snapshotconfig, periodic ones
     * for --trend) are theirs: the watch's end turned them off, and the
     * slow leak's snapshots stopped with no word */
    ltr_snapshot_proc was;
    ltr_error ignored;
    bool theirs = ltr_snapshot_get(pid, &was, &ignored) == 0 && was.enabled;
    if (ltr_snapshot_enable_pid(pid, true, err) != 0) {
        say(w, true, "pid %u: heap snapshots cannot be enabled (%s): a trigger saves the flight recorder's "
                     "tail only", pid, err->msg);
    } else {
        w->snap_pid = pid;
        w->snap_ours = !theirs;
    }
    return 0;
}

/* Takes pid as the process watched from now on. */
static int follow(watch *w, uint32_t pid, ltr_error *err)
{
    w->pid = pid;
    w->start_ticks = ltr_proc_start_ticks((pid_t)pid);
    w->joined = w->settled = false; /* a new process: its own baseline, warm-up and thresholds */
    w->unjoined = 0;
    int rc = reach(w, pid, err);
    if (rc == 0 && w->cfg->name)
        say(w, false, "watching pid %u (%s)", pid, w->cfg->name);
    return rc;
}

/* By name: the process to watch, if one runs now (the first found). */
static uint32_t find_named(watch *w)
{
    uint32_t pids[8];
    int n = ltr_pids_named(w->cfg->name, geteuid(), pids, 8);
    if (n > 1) {
        /* the others by pid, and how to watch one of them: the first found
         * of a prefork service is its master, and the growth is a worker's */
        char others[128] = "";
        size_t len = 0;
        int listed = n < 8 ? n : 8;
        for (int i = 1; i < listed && len < sizeof others; i++)
            len += (size_t)snprintf(others + len, sizeof others - len, "%s%u", i > 1 ? ", " : "", pids[i]);
        say(w, false, "%d processes are named %s: watching pid %u, the first found; the other%s: %s%s "
                      "(--pid PID watches one of them)",
            n, w->cfg->name, pids[0], n > 2 ? "s" : "", others, n > listed ? ", ..." : "");
    }
    return n > 0 ? pids[0] : 0;
}

/* How far back the flight recorder reaches: the heap collector's, the
 * shortest of them all. */
static uint64_t reach_of(const ltr_session_status *st)
{
    uint64_t reach = 0;
    for (unsigned c = 0; c < st->ncollectors; c++)
        if (!reach || st->collectors[c].reach_ns < reach)
            reach = st->collectors[c].reach_ns;
    return reach;
}

/* The session's status: how far back the recorder reaches, or p->no_answer
 * (a stopped recorder was shown as reaching back 0 s, with no word why: the
 * reason is said once, and again when it answers); returns whether the
 * process watched has joined the session (true too when that cannot be
 * told: the agent's settling must not wait on a recorder that does not
 * answer). A session that no longer runs sets w->gone, and gone says why. */
static bool ask_session(watch *w, ltr_watch_poll *p, ltr_error *gone)
{
    static ltr_session_status st;
    ltr_error err;
    uint64_t *reach = &p->reach_ns;
    *reach = 0;
    int rc = ltr_client_status(w->sc.name, &st, &err);
    /* no recorder listens any more: a stopped or hung one does not answer,
     * but one that is gone never will, and the watch polled on for good,
     * saying "recorder does not answer", its next trigger failing */
    if (rc == -ESRCH) {
        w->gone = true;
        /* a dead recorder's leftovers are the watch's session's: forgotten
         * here, not left for the user to 'ltr cancel' (its memory is lost) */
        ltr_error ignored;
        bool died = ltr_client_forget(w->sc.name, &ignored) > 0;
        ltr_fail(gone, ECANCELED, "session '%s' %s: nothing more can be saved, the watch ends", w->sc.name,
                 died ? "is gone: its recorder died (killed or crashed), what it held in memory with it"
                      : "was stopped or cancelled by another command");
        return false;
    }
    p->no_answer = rc != 0;
    if (p->no_answer != w->silent) {
        if (p->no_answer)
            say(w, true, "%s", err.msg);
        else
            say(w, false, "session '%s' answers again", w->sc.name);
        w->silent = p->no_answer;
    }
    if (p->no_answer)
        return true;
    *reach = reach_of(&st);
    for (unsigned i = 0; i < st.nattached; i++)
        if (st.attached[i] == w->pid)
            return true;
    /* a --pid that joined and closed its connection since (a daemon closing
     * every fd) is traced still: the watch said its agent "has not joined it"
     * and watched its private bytes only */
    for (unsigned i = 0; i < st.njoined; i++)
        if (st.joined[i] == w->pid)
            return true;
    return st.nattached >= LTR_STATUS_PIDS; /* the list is cut: cannot tell */
}

/* The heap agent's own memory (its tables: some MiB of RssAnon) comes at
 * once when it joins the session, at the process's first allocation after
 * the attach, and is not the process's growth. So the condition starts
 * only at the first poll after the one that saw it joined: that poll is the
 * baseline growth counts from, and auto's warm-up learns from there. Until
 * then a poll is only shown. Returns whether this one is such. */
#define WATCH_JOIN_POLLS 5

static bool settling(watch *w, bool joined, ltr_watch_verdict *v, uint64_t private_bytes)
{
    if (w->settled)
        return false;
    /* a process that does not allocate through malloc (an allocator of its
     * own on mmap) never joins: past a few polls it is watched as it is */
    if (w->joined || w->unjoined >= WATCH_JOIN_POLLS) {
        w->settled = true;
        ltr_watch_cond_init(&w->cond, &w->cfg->rule);
        if (!w->joined) /* the polls after say only the condition: said once why no heap comes */
            say(w, false, "process %u: the heap agent has not joined it in %u polls (it joins at the process's "
                "next malloc; a program that allocates only through mmap of its own never does): watched by its "
                "private bytes from now on, its heap events recorded from when it joins", w->pid,
                (unsigned)WATCH_JOIN_POLLS);
        return false;
    }
    w->joined = joined;
    w->unjoined += !joined;
    memset(v, 0, sizeof *v);
    v->state = LTR_WATCH_SETTLING;
    v->private_bytes = private_bytes;
    snprintf(v->waits_for, sizeof v->waits_for, joined ? "the heap agent to settle (its memory is not growth)"
                                                       : "the heap agent to join at the next allocation "
                                                         "(its memory is not growth)");
    return true;
}

/* The monitor's lines, oldest first, in one malloc'd buffer (or NULL). */
static char *history_text(const watch *w, size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    if (!f)
        return NULL;
    unsigned first = w->nhistory < LTR_WATCH_HISTORY ? 0 : w->history_next;
    for (unsigned i = 0; i < w->nhistory; i++)
        fprintf(f, "%s\n", w->history[(first + i) % LTR_WATCH_HISTORY]);
    fclose(f);
    return text;
}

/* The support bundle beside the trace saved at path. Returns 0, or -errno
 * with err (the trace stands: the caller warns). */
static int write_bundle(watch *w, const char *trace, const char *bundle, const char *condition, bool at_exit,
                        ltr_error *err)
{
    static ltr_session_status st;
    ltr_error serr;
    char *status = NULL, log[8192];
    size_t status_len, history_len = 0;
    FILE *f;
    if (ltr_client_status(w->sc.name, &st, &serr) == 0 && (f = open_memstream(&status, &status_len))) {
        ltr_session_status_write(f, &st);
        fclose(f);
    }
    char logname[LTR_SESSION_NAME_MAX + 16];
    bool have_log = ltr_runtime_name(logname, sizeof logname, w->sc.name, LTR_RUN_LOG) == 0 &&
                    snprintf(log, sizeof log, "%s/%s", w->rundir, logname) < (int)sizeof log;
    char *history = history_text(w, &history_len);
    ltr_watch_bundle in = {.trigger = w->triggers + 1, .at_exit = at_exit, .pid = w->pid,
                           .start_ticks = w->start_ticks, .condition = condition,
                           .trace = trace,
                           .profile_text = w->plan_text, .status_text = status,
                           .status_error = status ? NULL : serr.msg, .history = history,
                           .history_len = history_len, .log_path = have_log ? log : NULL};
    int rc = ltr_watch_bundle_write(bundle, &in, err);
    free(status);
    free(history);
    return rc;
}

/* Saves the trace to the next free name, into path. A name taken between
 * the look and the save's publication (another user's file, made in a
 * shared directory such as /tmp once the save's temporary shows) moves the
 * finished file to the next, as a name taken before does: that refusal
 * ended the watch (exit 1, the trigger's trace lost, a hint to use
 * --force). The file itself moves, renamed without replacing anything, and
 * is not saved again: another user planting each name as each save's
 * temporary showed ended the watch after 16 saves (exit 1, its trace lost:
 * 'leak-16.ltr already exists'); a rename shows nothing to race before it
 * is done. 0 or -errno. */
static int save_free_name(watch *w, bool with_bundle, char *path, size_t size, ltr_error *err)
{
    int rc = ltr_watch_trace_path(w->cfg->record_to, with_bundle, &w->next_n, path, size);
    if (rc)
        return ltr_fail(err, -rc, "no file name is free beside %s", w->cfg->record_to);
    char kept[PATH_MAX];
    rc = ltr_client_save_keeping(w->sc.name, path, kept, sizeof kept, err);
    while (rc == -EEXIST && kept[0]) {
        say(w, true, "%s appeared while the trace was saved to it (not overwritten): saving to the next name", path);
        w->next_n++;
        if ((rc = ltr_watch_trace_path(w->cfg->record_to, with_bundle, &w->next_n, path, size)) != 0)
            return ltr_fail(err, -rc, "no file name is free beside %s: the trace is at %s", w->cfg->record_to,
                            kept);
        rc = ltr_publish(kept, path, false);
        if (rc && rc != -EEXIST)
            return ltr_fail(err, -rc, "cannot rename %s to %s: %s", kept, path, strerror(-rc));
    }
    return rc;
}

static void mark(watch *w, const char *text)
{
    ltr_error e;
    if (ltr_client_op(w->sc.name, "marker", NULL, text, false, NULL, &e))
        say(w, true, "the marker was not written: %s", e.msg);
}

/* The trace saved to the next free name (path), with its support bundle
 * when asked (bundle, emptied when it could not be written: said). 0 or
 * -errno with err. */
static int save_all(watch *w, const char *condition, bool at_exit, char *path, char *bundle, ltr_error *err)
{
    bundle[0] = 0;
    bool with_bundle = w->cfg->support_bundle;
    int rc = save_free_name(w, with_bundle, path, PATH_MAX, err);
    if (rc)
        return rc;
    ltr_error e;
    if (with_bundle && ltr_watch_bundle_path(path, bundle, PATH_MAX) == 0 &&
        write_bundle(w, path, bundle, condition, at_exit, &e) != 0) {
        say(w, true, "no support bundle: %s (the trace %s is saved)", e.msg, path);
        bundle[0] = 0;
    }
    w->next_n++;
    return 0;
}

static int on_trigger(watch *w, const ltr_watch_verdict *v, ltr_error *err)
{
    char text[512];
    snprintf(text, sizeof text, "ltr watch: trigger %u: pid %u: %s", w->triggers + 1, w->pid, v->condition);
    mark(w, text);
    ltr_error e;
    if (w->snap_pid == w->pid && ltr_snapshot_take(w->pid, WATCH_SNAPSHOT_TIMEOUT_MS, &e) != 0)
        say(w, true, "pid %u: no heap snapshot (%s): the trace holds the flight recorder's tail only", w->pid,
            e.msg);
    char path[PATH_MAX], bundle[PATH_MAX];
    int rc = save_all(w, v->condition, false, path, bundle, &e);
    if (rc)
        return ltr_fail(err, -rc, "trigger %u: the trace could not be saved: %s; the watch ends, and its session "
                        "with it", w->triggers + 1, e.msg);
    w->triggers++;
    if (w->h->trigger)
        w->h->trigger(w->h->ctx, w->triggers, path, bundle[0] ? bundle : NULL, v);
    return 0;
}

/* How the watched process ended, as waitpid would say it, if its parent has
 * not reaped it yet (the watch attached it: it may read its exit code). */
static void describe_exit(const watch *w, char *out, size_t size)
{
    int st;
    if (ltr_proc_exit_status((pid_t)w->pid, w->start_ticks, &st) != 0)
        snprintf(out, size, "its exit status is not known: its parent reaped it before the poll");
    else if (WIFSIGNALED(st))
        snprintf(out, size, "killed by SIG%s%s", sigabbrev_np(WTERMSIG(st)) ? sigabbrev_np(WTERMSIG(st)) : "?",
                 WCOREDUMP(st) ? ", core dumped" : "");
    else
        snprintf(out, size, "exit status %d", WEXITSTATUS(st));
}

/* The process watched by --pid exited: an OOM kill or a crash, most often,
 * whose lead-up the flight recorder holds; it is saved as a trigger's trace
 * is (a marker saying why, no snapshot of a process gone), and the watch
 * ends (-ESRCH: status 3). The hook says what was saved, or err why not. */
static int on_exit_of(watch *w, ltr_error *err)
{
    char how[128], text[512], path[PATH_MAX], bundle[PATH_MAX];
    describe_exit(w, how, sizeof how);
    snprintf(text, sizeof text, "ltr watch: pid %u exited (%s)", w->pid, how);
    mark(w, text);
    static ltr_session_status st;
    ltr_error e;
    uint64_t reach = ltr_client_status(w->sc.name, &st, &e) == 0 ? reach_of(&st) : 0;
    char condition[300];
    snprintf(condition, sizeof condition, "the process exited (%s)", how);
    int rc = save_all(w, condition, true, path, bundle, &e);
    if (rc)
        return ltr_fail(err, ESRCH, "pid %u exited (%s): its recording could not be saved: %s", w->pid, how, e.msg);
    if (w->h->exited)
        w->h->exited(w->h->ctx, w->pid, how, reach, path, bundle[0] ? bundle : NULL);
    return ltr_fail(err, ESRCH, "pid %u exited (%s)", w->pid, how);
}

/* Sleeps ms, in slices, unless stop is asked. */
static void nap(uint32_t ms, volatile sig_atomic_t *stop)
{
    for (uint32_t done = 0; done < ms && !*stop; done += WATCH_SLICE_MS) {
        uint32_t d = ms - done < WATCH_SLICE_MS ? ms - done : WATCH_SLICE_MS;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)d * 1000000};
        nanosleep(&ts, NULL);
    }
}

static void remember(watch *w, const ltr_watch_poll *p)
{
    /* dated: a bundle's history may span days */
    char *line = w->history[w->history_next];
    time_t now = time(NULL);
    struct tm tm;
    size_t n = strftime(line, WATCH_LINE, "%Y-%m-%d ", localtime_r(&now, &tm));
    ltr_watch_poll_format(p, now, line + n, WATCH_LINE - n);
    w->history_next = (w->history_next + 1) % LTR_WATCH_HISTORY;
    if (w->nhistory < LTR_WATCH_HISTORY)
        w->nhistory++;
}

/* One poll. Returns 1 to go on, 0 when done, or -errno. */
static int poll_once(watch *w, ltr_error *err)
{
    ltr_watch_poll p = {.t_ns = ltr_now_ns() - w->t0};
    ltr_proc_memory m;
    if (w->pid && (ltr_proc_memory_read((pid_t)w->pid, &m) != 0 || m.start_ticks != w->start_ticks)) {
        if (w->cfg->pid)
            return on_exit_of(w, err);
        say(w, false, "pid %u (%s) is gone: waiting for the next process of that name", w->pid, w->cfg->name);
        w->pid = w->snap_pid = 0;
    }
    if (!w->pid) {
        uint32_t pid = find_named(w);
        if (!pid || ltr_proc_memory_read((pid_t)pid, &m) != 0) {
            snprintf(p.v.waits_for, sizeof p.v.waits_for, "a process named %s", w->cfg->name);
            remember(w, &p);
            if (w->h->poll)
                w->h->poll(w->h->ctx, &p);
            return 1;
        }
        if (follow(w, pid, err) != 0) {
            say(w, true, "%s", err->msg);
            w->pid = 0;
            return 1;
        }
    }
    p.pid = w->pid;
    bool joined = ask_session(w, &p, err);
    if (w->gone)
        return -ECANCELED;
    if (!settling(w, joined, &p.v, m.private_bytes))
        ltr_watch_cond_poll(&w->cond, m.private_bytes, &p.v);
    remember(w, &p);
    if (w->h->poll)
        w->h->poll(w->h->ctx, &p);
    if (p.v.state != LTR_WATCH_FIRE)
        return 1;
    int rc = on_trigger(w, &p.v, err);
    if (rc)
        return rc;
    return w->triggers < (w->cfg->max_triggers ? w->cfg->max_triggers : 1);
}

/* No process's executable is name: it waits. One of another user (a
 * service's User=) is said, with who can watch it; one the kernel calls name
 * (comm: ps, top and pgrep show it) is said, with the name that watches it,
 * or watch waited for good on a running service started through a link
 * (--name python3 beside python3 -> python3.11). */
static void say_none_named(watch *w, const char *name)
{
    char exe[LTR_BYNAME_NAME_MAX + 1], other[512];
    uint32_t called = ltr_pid_called(name, geteuid(), exe, sizeof exe);
    if (ltr_name_run_by_other(name, geteuid(), other, sizeof other))
        say(w, false, "no process of this user named %s runs yet: waiting for one (%s)", name, other);
    else if (called)
        say(w, false, "no process named %s runs yet: waiting for one (--name is the executable's file name: "
            "pid %u, which ps calls %s, runs %s: --name %s watches it)", name, called, name, exe, exe);
    else
        say(w, false, "no process named %s runs yet: waiting for one", name);
}

/* The session started: follows the target and polls until the end. */
static int watch_session(watch *w, volatile sig_atomic_t *stop, ltr_error *err)
{
    const ltr_watch_config *cfg = w->cfg;
    int rc;
    if (cfg->pid && (rc = follow(w, cfg->pid, err)))
        return rc;
    uint32_t one; /* only whether one runs: the first poll's find_named says which, once */
    if (cfg->name && ltr_pids_named(cfg->name, geteuid(), &one, 1) <= 0)
        say_none_named(w, cfg->name);
    uint32_t interval = cfg->interval_ms ? cfg->interval_ms : 10000;
    while (!*stop && (rc = poll_once(w, err)) == 1)
        nap(interval, stop);
    return rc < 0 ? rc : 0;
}

int ltr_watch_run(const ltr_watch_config *cfg, const ltr_watch_hooks *hooks, volatile sig_atomic_t *stop,
                  ltr_error *err)
{
    /* 1 MiB of history: not on the stack, nor in the program's .bss, which
     * LeakSanitizer reads whole at every exit of an ASan build's ltr */
    watch *w = calloc(1, sizeof *w);
    if (!w)
        return ltr_fail(err, ENOMEM, "out of memory");
    w->cfg = cfg;
    w->h = hooks;
    w->next_n = 1;
    w->t0 = ltr_now_ns();
    int rc = ltr_watch_check(cfg, err);
    if (rc == 0 && (rc = start_session(w, err)) == 0) {
        rc = watch_session(w, stop, err);
        end_session(w);
    }
    free(w->plan_text);
    free(w);
    return rc;
}
