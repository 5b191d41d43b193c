/*
 * recorder/snapshot.c — the heap snapshot setting and requests, in the
 * registry (snapshot.h). Every change is made under the registry's lock and
 * ends by moving the word `gen` and waking the futex on it: the agents' hooks
 * see the word move at their next allocation, their snapshot threads wake.
 */
#include "recorder/snapshot.h"
#include "inject/inject.h"
#include "base/heap_events.h"
#include "prim/prim.h"
#include "recorder/heaprun.h"
#include "recorder/client.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static ltr_registry *registry(ltr_error *err)
{
    return ltr_registry_get(err);
}

static void changed(ltr_registry *r)
{
    atomic_fetch_add(&r->snap.gen, 2);
    syscall(SYS_futex, &r->snap.gen, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* The entry of the process (pid, start), or NULL. */
static ltr_reg_snap_proc *find(ltr_registry *r, uint32_t pid, uint64_t start)
{
    for (unsigned i = 0; i < LTR_SNAP_PROCS; i++) {
        ltr_reg_snap_proc *e = &r->snap.procs[i];
        if (atomic_load(&e->pid) == pid && atomic_load(&e->start) == start)
            return e;
    }
    return NULL;
}

int ltr_snapshot_reach(uint32_t pid, ltr_error *err)
{
    int loaded = ltr_heap_agent_loaded(pid);
    if (loaded == -ENOENT || (loaded >= 0 && !ltr_pid_alive((pid_t)pid)))
        return ltr_fail(err, ESRCH, "there is no process with pid %u", pid);
    if (loaded < 0)
        return ltr_fail(err, -loaded, "cannot read the maps of process %u: %s", pid, strerror(-loaded));
    if (loaded)
        return 0;
    /* a running process without the agent gets it now, as `ltr start heap
     * --pid` does (docs/attach.md); its agent reads the setting at its start */
    char agent[4096], rundir[4096];
    if (ltr_heap_agent_path(agent, sizeof agent, err) || ltr_runtime_dir(rundir, sizeof rundir, err))
        return -err->code;
    int rc = ltr_attach_agent((pid_t)pid, agent, rundir, LTR_INJECT_TIMEOUT_MS, NULL, err);
    return rc < 0 ? rc : 0;
}

int ltr_snapshot_enable_pid(uint32_t pid, bool enable, ltr_error *err)
{
    if (enable && ltr_snapshot_reach(pid, err) != 0)
        return -err->code;
    uint64_t start = ltr_proc_start_time(pid);
    if (!start)
        return ltr_fail(err, ESRCH, "there is no process with pid %u", pid);
    ltr_registry *r = registry(err);
    if (!r)
        return -err->code;
    ltr_registry_lock();
    ltr_reg_snap_proc *e = find(r, pid, start);
    for (unsigned i = 0; enable && !e && i < LTR_SNAP_PROCS; i++) {
        ltr_reg_snap_proc *c = &r->snap.procs[i];
        uint32_t p = atomic_load(&c->pid);
        if (!p || !ltr_pid_alive((pid_t)p) || p == pid) /* free, gone, or this pid's last owner */
            e = c;
    }
    if (enable && !e) {
        ltr_registry_unlock();
        return ltr_fail(err, ENOSPC, "%d processes have heap snapshots enabled already; disable "
                        "some first", LTR_SNAP_PROCS);
    }
    if (e && enable && (atomic_load(&e->pid) != pid || atomic_load(&e->start) != start)) {
        uint32_t own = ltr_proc_own_pid(pid);
        atomic_store(&e->pid, 0);
        atomic_store(&r->snap_own_pid[e - r->snap.procs], own != pid ? own : 0);
        atomic_store(&e->start, start);
        atomic_store(&e->requested, 0);
        atomic_store(&e->written, 0);
        atomic_store(&e->tracking, 0);
        atomic_store(&e->snapshots, 0);
        atomic_store(&e->period_s, 0);
        atomic_store(&e->pid, pid);
    }
    if (e) {
        atomic_store(&e->enabled, enable ? 1u : 0u);
        if (!enable)
            atomic_store(&e->period_s, 0);
        changed(r);
    }
    ltr_registry_unlock();
    return 0;
}

int ltr_snapshot_enable_name(const char *name, bool enable, ltr_error *err)
{
    size_t len = strlen(name);
    if (!len || len >= LTR_SNAP_LONG_NAME_MAX || strchr(name, '/'))
        return ltr_fail(err, EINVAL, "'%s' is not a program name: give its executable's file name or the "
                        "kernel's name of it (no '/', %d characters at most)", name, LTR_SNAP_LONG_NAME_MAX - 1);
    ltr_registry *r = registry(err);
    if (!r)
        return -err->code;
    ltr_registry_lock();
    unsigned slot = LTR_SNAP_NAMES, free_slot = LTR_SNAP_NAMES;
    for (unsigned i = 0; i < LTR_SNAP_NAMES; i++) {
        if (!atomic_load(&r->snap.names[i].used))
            free_slot = free_slot < LTR_SNAP_NAMES ? free_slot : i;
        else if (!strncmp(ltr_reg_snap_name_of(r, i), name, LTR_SNAP_LONG_NAME_MAX))
            slot = i;
    }
    int rc = 0;
    if (enable && slot == LTR_SNAP_NAMES && free_slot == LTR_SNAP_NAMES) {
        rc = ltr_fail(err, ENOSPC, "%d names have heap snapshots enabled already; disable some "
                      "first", LTR_SNAP_NAMES);
    } else if (enable && slot == LTR_SNAP_NAMES) {
        /* longer than a comm: only the executable's file name can match it */
        ltr_reg_snap_name *n = &r->snap.names[free_slot];
        memset(n->name, 0, sizeof n->name);
        memset(r->snap_long_names[free_slot], 0, LTR_SNAP_LONG_NAME_MAX);
        memcpy(len < LTR_SNAP_NAME_MAX ? n->name : r->snap_long_names[free_slot], name, len);
        atomic_store(&n->used, 1);
    } else if (!enable && slot < LTR_SNAP_NAMES) {
        atomic_store(&r->snap.names[slot].used, 0);
    }
    if (!rc)
        changed(r);
    ltr_registry_unlock();
    return rc;
}

/* Did pid lose the agent it had by an exec? Its maps are read first: a
 * process killed meanwhile has empty ones, and is not that (a kill during
 * test_exit_during_snapshot's request read "it exec'd a program without
 * it"). */
static bool agent_gone(uint32_t pid)
{
    return ltr_heap_agent_loaded(pid) == 0 && ltr_pid_alive((pid_t)pid);
}

static int fail_exited(ltr_error *err, uint32_t pid)
{
    return ltr_fail(err, ESRCH, "process %u exited before it wrote its snapshot", pid);
}

static void describe(const ltr_reg_snap_proc *e, ltr_snapshot_proc *out)
{
    out->pid = atomic_load(&e->pid);
    out->enabled = atomic_load(&e->enabled);
    out->tracking = atomic_load(&e->tracking);
    out->period_s = atomic_load(&e->period_s);
    out->snapshots = atomic_load(&e->snapshots);
    /* an attached process that exec'd a program without the agent keeps its
     * entry (the same pid), but no table any more (a review: "enabled,
     * table kept" and every snapshot waiting out its timeout) */
    out->agent_gone = out->enabled && agent_gone(out->pid);
}

int ltr_snapshot_list(ltr_snapshot_proc *out, int max, char names[][LTR_SNAP_LONG_NAME_MAX], int max_names,
                      int *nnames, ltr_error *err)
{
    ltr_registry *r = registry(err);
    if (!r)
        return -err->code;
    int n = 0;
    for (unsigned i = 0; i < LTR_SNAP_PROCS && n < max; i++) {
        ltr_reg_snap_proc *e = &r->snap.procs[i];
        uint32_t pid = atomic_load(&e->pid);
        if (pid && atomic_load(&e->start) == ltr_proc_start_time(pid))
            describe(e, &out[n++]);
    }
    *nnames = 0;
    for (unsigned i = 0; i < LTR_SNAP_NAMES && *nnames < max_names; i++)
        if (atomic_load(&r->snap.names[i].used))
            snprintf(names[(*nnames)++], LTR_SNAP_LONG_NAME_MAX, "%.255s", ltr_reg_snap_name_of(r, i));
    return n;
}

static ltr_reg_snap_proc *entry_of(uint32_t pid, ltr_registry **rp, ltr_error *err)
{
    uint64_t start = ltr_proc_start_time(pid);
    if (!start) {
        ltr_fail(err, ESRCH, "there is no process with pid %u", pid);
        return NULL;
    }
    ltr_registry *r = *rp = registry(err);
    ltr_reg_snap_proc *e = r ? find(r, pid, start) : NULL;
    if (r && !e)
        ltr_fail(err, ENOENT, "heap snapshots are not enabled for process %u: 'ltr snapshotconfig "
                 "heap --pid %u enable' first", pid, pid);
    return e;
}

int ltr_snapshot_get(uint32_t pid, ltr_snapshot_proc *out, ltr_error *err)
{
    ltr_registry *r;
    ltr_reg_snap_proc *e = entry_of(pid, &r, err);
    if (!e)
        return -err->code;
    describe(e, out);
    return 0;
}

bool ltr_snapshot_session_running(void)
{
    ltr_error err;
    ltr_registry *r = registry(&err);
    if (!r)
        return false;
    ltr_guid g;
    ltr_guid_from_name(LTR_HEAP_SNAPSHOT_PROVIDER, &g);
    ltr_registry_lock();
    ltr_client_reap(r); /* a killed recorder's bits would say yes */
    const ltr_reg_provider *p = ltr_registry_find_provider(r, &g);
    bool on = p && atomic_load(&p->sessions) != 0;
    ltr_registry_unlock();
    return on;
}

/* The enabled entry of pid for a request, with a session to receive it. */
static ltr_reg_snap_proc *requestable(uint32_t pid, ltr_registry **r, ltr_error *err)
{
    ltr_reg_snap_proc *e = entry_of(pid, r, err);
    if (!e)
        return NULL;
    if (!atomic_load(&e->enabled)) {
        ltr_fail(err, ENOENT, "heap snapshots are not enabled for process %u: 'ltr snapshotconfig "
                 "heap --pid %u enable' first", pid, pid);
        return NULL;
    }
    if (!ltr_pid_alive((pid_t)pid)) {
        fail_exited(err, pid);
        return NULL;
    }
    if (agent_gone(pid)) {
        ltr_fail(err, ENOENT, "process %u no longer carries the heap agent (it exec'd a program without "
                 "it): it keeps no table to write; 'ltr snapshotconfig heap --pid %u enable' loads it into "
                 "the program it runs now", pid, pid);
        return NULL;
    }
    if (!ltr_snapshot_session_running()) {
        ltr_fail(err, ENODEV, "no running session receives heap snapshots: start one with "
                 "'ltr start heapsnapshot'");
        return NULL;
    }
    return e;
}

int ltr_snapshot_take(uint32_t pid, uint32_t timeout_ms, ltr_error *err)
{
    ltr_registry *r;
    ltr_reg_snap_proc *e = requestable(pid, &r, err);
    if (!e)
        return -err->code;
    ltr_registry_lock();
    uint64_t before = atomic_load(&e->snapshots);
    uint64_t want = atomic_fetch_add(&e->requested, 1) + 1;
    changed(r);
    ltr_registry_unlock();
    uint64_t deadline = ltr_now_ns() + (uint64_t)timeout_ms * 1000000u;
    while (atomic_load(&e->written) < want) {
        if (!ltr_pid_alive((pid_t)pid))
            return fail_exited(err, pid);
        if (ltr_now_ns() >= deadline)
            return ltr_fail(err, ETIMEDOUT, "process %u did not write its snapshot within %u ms%s",
                            pid, timeout_ms,
                            ltr_pid_stopped(pid) ? " (it is stopped, by SIGSTOP, Ctrl-Z or a debugger: "
                                                   "it writes the snapshot once it runs again, kill -CONT)"
                            : atomic_load(&e->tracking) ? "" :
                            " (its agent learns that snapshots are enabled at its next "
                            "allocation, and it has made none since)");
        usleep(2000);
    }
    if (atomic_load(&e->snapshots) == before)
        return ltr_fail(err, EIO, "process %u answered but no session received its snapshot "
                        "(the session ended, or the table could not be read)", pid);
    return 0;
}

int ltr_snapshot_periodic(uint32_t pid, uint32_t secs, ltr_error *err)
{
    ltr_registry *r;
    ltr_reg_snap_proc *e = secs ? requestable(pid, &r, err) : entry_of(pid, &r, err);
    if (!e)
        return -err->code;
    ltr_registry_lock();
    atomic_store(&e->period_s, secs);
    changed(r);
    ltr_registry_unlock();
    return 0;
}
