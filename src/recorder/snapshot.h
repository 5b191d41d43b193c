/*
 * recorder/snapshot.h — ltr's side of heap snapshots: the per-process and
 * by-name setting in the registry (`ltr snapshotconfig`), and asking a
 * process for snapshots now or periodically (`ltr singlesnapshot`,
 * `ltr enableperiodicsnapshot`). The agent's side is src/agent/snapshot.c;
 * the two meet only in the registry (event/registry.h), never by signal.
 */
#ifndef LTR_RECORDER_SNAPSHOT_H
#define LTR_RECORDER_SNAPSHOT_H

#include "event/registry.h"

#include <stdbool.h>
#include <stdint.h>

/* Makes process pid reachable for snapshots: it must exist and carry the
 * heap agent. This is where attaching to a running process without the agent
 * will go (issue 12); today such a process is an error naming the fix. */
int ltr_snapshot_reach(uint32_t pid, ltr_error *err);

/* `snapshotconfig heap --pid P enable|disable`. Disabling also stops its
 * periodic snapshots and drops its table. */
int ltr_snapshot_enable_pid(uint32_t pid, bool enable, ltr_error *err);
/* `snapshotconfig heap --name N enable|disable`: new processes named N
 * (their executable's file name, or the kernel's name of 15 characters at
 * most) keep their table from start. */
int ltr_snapshot_enable_name(const char *name, bool enable, ltr_error *err);

/* One process's setting, as `snapshotconfig` without a verb shows it. */
typedef struct ltr_snapshot_proc {
    uint32_t pid;
    bool enabled, tracking; /* asked for; the agent keeps its table */
    bool agent_gone;        /* enabled, but the process no longer carries the heap agent (an exec) */
    uint32_t period_s;
    uint64_t snapshots;     /* written so far */
} ltr_snapshot_proc;

/* The live processes with an entry (n at most max) and the enabled names;
 * returns how many processes. */
int ltr_snapshot_list(ltr_snapshot_proc *out, int max, char names[][LTR_SNAP_LONG_NAME_MAX], int max_names,
                      int *nnames, ltr_error *err);
/* One process's setting; -ENOENT if it has none. */
int ltr_snapshot_get(uint32_t pid, ltr_snapshot_proc *out, ltr_error *err);

/* Does a running session receive heap snapshots (enable Ltr.HeapSnapshot)? */
bool ltr_snapshot_session_running(void);

/* Asks process pid for one snapshot and waits until it has written it into
 * the running sessions, or until timeout_ms. Errors: no such process, not
 * enabled, no session, the process exited or did not answer in time. */
int ltr_snapshot_take(uint32_t pid, uint32_t timeout_ms, ltr_error *err);
/* A snapshot every secs seconds (0: no more). */
int ltr_snapshot_periodic(uint32_t pid, uint32_t secs, ltr_error *err);

#endif
