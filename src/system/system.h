/*
 * system/system.h — ltr's system provider, the recorder's side: what the
 * machine and the session's target processes did around their events, read
 * from /proc (and, as root, the kernel's process connector and system-wide
 * perf_event_open CPU samples) and written as
 * events of the provider Ltr.System (base/system_events.h) through the public
 * provider API, so memory mode, lost counting and the trace format treat
 * them like any other events. docs/system-provider.md describes the events
 * and what can be missed.
 *
 * One thread does it all, started by the recorder when its session enables
 * Ltr.System; the recorder hands it the processes that attach to the session
 * (its targets, beside the --pid ones given at start).
 */
#ifndef LTR_SYSTEM_H
#define LTR_SYSTEM_H

#include <ltr/common.h>

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- reading /proc (meminfo.c) -------------------------------------------- */

/* A process's memory counters, bytes (faults: counts). */
typedef struct ltr_proc_memory {
    uint64_t private_bytes;          /* RssAnon + VmSwap: what Windows calls Private Bytes */
    uint64_t rss, rss_anon, rss_file, rss_shmem, swap;
    uint64_t minflt, majflt;         /* page faults since the process started */
    uint64_t start_ticks;            /* its start time (clock ticks since boot): tells a reused pid */
} ltr_proc_memory;

/* Reads /proc/PID/status and /proc/PID/stat. Returns 0, or -errno (-ENOENT:
 * the process is gone). */
int ltr_proc_memory_read(pid_t pid, ltr_proc_memory *out);
/* The start time of a process (clock ticks since boot), 0 if unknown. */
uint64_t ltr_proc_start_ticks(pid_t pid);
/* The wait status (as waitpid gives it) of a process that exited and that
 * its parent has not reaped yet (a zombie), started at start_ticks (not
 * another that got the pid). Returns 0, or -errno: -ESRCH when it runs,
 * was reaped already or is another (only its parent learns it then). */
int ltr_proc_exit_status(pid_t pid, uint64_t start_ticks, int *status);
/* The machine's MemTotal and MemAvailable (/proc/meminfo), bytes. */
int ltr_system_memory_read(uint64_t *total, uint64_t *available);
/* Microseconds during which some runnable task of the machine waited for a
 * CPU, since boot (pressure.c). 0, or -errno (-ENOENT: a kernel without PSI). */
int ltr_cpu_waited_us(uint64_t *us);

/* ---- the provider's thread (sampler.c) ------------------------------------- */

typedef struct ltr_system_config {
    const char *session;  /* the session it writes into, and only into */
    uint64_t keywords;    /* LTR_SYSKW_* parts to run; 0 = all */
    unsigned interval_ms; /* memory counters; 0 = LTR_SYSTEM_INTERVAL_MS_DEFAULT */
    const uint32_t *pids; /* targets known at start (--pid) */
    unsigned npids;
    /* Processes are the targets' and their children's only, even where the
     * process connector sees the whole machine: a session whose system
     * collector is limited to its targets (ltr watch), whose trace is sent
     * to others with no word of the machine's other processes. */
    bool targets_only;
} ltr_system_config;

typedef struct ltr_system ltr_system;

/* Starts the thread. It writes into cfg->session only: call this before the
 * process writes any event of its own (it sets $LTR_SESSION, which a producer
 * reads once). Returns 0 or -errno with err saying why. */
int ltr_system_start(const ltr_system_config *cfg, ltr_system **out, ltr_error *err);
/* A process the session now records (it attached): a target from now on.
 * pid is its number in the caller's /proc, the one its heap events carry
 * too (a container's process writes the recorder's pid for it, which the
 * attach gives it). The caller's own pid is never one. Thread-safe, never
 * blocks for long. */
void ltr_system_add_target(ltr_system *s, uint32_t pid);
/* Why the CPU samples the session asked for are not recorded (perf_event_open
 * not permitted...), or NULL: said once, the rest records. */
const char *ltr_system_cpu_problem(const ltr_system *s);

/* What a capture of state wrote (ltr_system_capture_state). */
typedef struct ltr_system_capture {
    uint64_t processes, threads, modules;
} ltr_system_capture;

/* `ltr capturestate`: the thread writes, now, the state it holds as
 * rundown events (ProcessStart, ThreadStart and ModuleLoad with
 * rundown=true, and the memory counters), so that a memory-mode ring whose
 * older events were overwritten still names the processes, threads and
 * modules. Waits until it is written, at most timeout_ms: 0, or -ETIMEDOUT. */
int ltr_system_capture_state(ltr_system *s, unsigned timeout_ms, ltr_system_capture *out);

/* Whether CPU samples can be taken here: 0, or -errno with why saying what
 * would permit them. */
int ltr_system_cpu_probe(char *why, size_t why_size);

/* What the thread did, told as it stops. */
typedef struct ltr_system_report {
    uint64_t written, lost; /* events: into the session, and dropped there (no free buffer) */
    uint64_t overruns;      /* process connector messages the kernel dropped */
    bool connector;         /* processes were seen through the connector (else /proc) */
} ltr_system_report;

/* Samples once more, stops the thread and hands its last events to the
 * session; fills report (may be NULL) and frees s. NULL s is ignored. */
void ltr_system_stop(ltr_system *s, ltr_system_report *report);

#endif
