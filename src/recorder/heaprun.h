/*
 * recorder/heaprun.h — launching programs with the heap agent preloaded, for
 * `ltr record` (a private heap session around one command and everything it
 * starts) and `ltr run` (a command launched into a running session).
 */
#ifndef LTR_RECORDER_HEAPRUN_H
#define LTR_RECORDER_HEAPRUN_H

#include "base/heap_events.h" /* LTR_HEAP_PROVIDER */
#include "recorder/recorder.h"

#include <stdbool.h>

/* Name of the collector `ltr record` uses: that of the built-in heap
 * profile's (profiles/common.wprp), so that a heap session's status reads
 * the same however it was started. */
#define LTR_HEAP_COLLECTOR "ltr Heap Collector"

/* Finds libltr-heap.so: $LTR_HEAP_AGENT, else beside the running ltr
 * (<bindir>/../lib or <bindir>/../<libdir>). Returns 0 or -ENOENT. */
int ltr_heap_agent_path(char *out, size_t size, ltr_error *err);

/* ltr record's buffers: each thread that allocates holds a buffer of its own
 * while it fills it, so their number bounds the threads that can record at
 * once, and heap events are small (about 15 bytes). Buffers of 16 KB: a
 * pool of 100 threads allocating in bursts lost 37 % of its events with 64
 * of 128 KB, none with 512 of 16 KB, the same 8 MB; bench/heap's trace grows
 * 0.7 % (block headers), its overhead does not move (docs/heap-tracing.md).
 *
 * 1024 of them per CPU it may run on, at most LTR_HEAP_BUFFERS_MOST: what the
 * pool must hold is what the program writes while the recorder is away, and
 * a program writes as fast as it has CPUs. An unprivileged recorder (nice 0,
 * no -10) beside 1000 threads in bursts on 2 CPUs (bench/threads) is kept
 * off its CPU by the scheduler for 50 to 97 ms at times (perf sched:
 * runnable all along, preempted), and the program fills 8 MB in less. Runs
 * that lost events, as nobody: 512 buffers, 4 to 5 of 16; 768, none of 12;
 * 1024, 1 of 40; 2048, 1 of 112 (docs/benchmarks.md, "Buffers per CPU").
 * Memory is taken as buffers are first used, and in file mode written
 * buffers are reused first. */
#define LTR_HEAP_BUFFER_KB_DEFAULT 16u
#define LTR_HEAP_BUFFERS_PER_CPU 1024u
#define LTR_HEAP_BUFFERS_MOST 8192u /* 128 MB: 8 CPUs and more */
/* ltr record's default count of buffers on this machine (above). */
uint32_t ltr_heap_default_buffers(void);
/* The CPUs this process, and the command it starts, may run on. */
unsigned ltr_heap_cpus(void);
/* Fewer buffers per CPU than this for heap tracing lose events: each thread
 * that allocates holds one while it fills it, and a full one waits for the
 * recorder. bench/threads/bursts (1, 2 and 8 threads, 50 bursts of 200
 * pairs; buffers of 4 and 64 KB) on 2 CPUs lost events in 27 of 36 runs
 * with fewer than 8 buffers a CPU, 6 of 24 with 8 to 31, 1 of 24 with 32
 * and more (docs/heap-tracing.md, "Too few buffers"). */
#define LTR_HEAP_BUFFERS_FEWEST_PER_CPU 8u
/* Does the session heap-trace (a provider of it is Ltr.Heap)? */
bool ltr_session_traces_heap(const ltr_session_config *cfg);

/* Makes cfg a heap session: one collector LTR_HEAP_COLLECTOR of the given buffers, the
 * Ltr.Heap provider enabled in it. */
void ltr_heap_session_config(ltr_session_config *cfg, uint32_t buffer_kb, uint32_t buffers);

/* `ltr record`'s session: its own name (record-PID of the caller), heap
 * tracing of the launched command and its children only (exclusive), or of
 * one running process (pid); in file mode the trace grows beside trace (an
 * absolute path) under a temporary name no one can plant beforehand, and the
 * recorder writes trace itself if the command that started it is killed.
 * 0, or -errno with err (a path too long). */
typedef struct ltr_record_setup {
    int mode; /* enum ltr_session_mode */
    uint32_t buffer_kb, buffers;
    uint32_t pid; /* 0: the launched command */
    const char *trace;
    bool force;   /* the trace may replace a file of that name */
} ltr_record_setup;
int ltr_record_session_config(ltr_session_config *cfg, const ltr_record_setup *s, ltr_error *err);

/* Does a running session enable heap tracing (`ltr run` has somewhere to go)? */
bool ltr_heap_traced_anywhere(void);
/* The names of the running sessions that enable heap tracing, at most max;
 * how many. */
#define LTR_SESSION_NAME_MAX_RUN 64
int ltr_heap_sessions(char names[][LTR_SESSION_NAME_MAX_RUN], int max);

struct ltr_session_status;
/* Would the session of this status heap-trace a new process that runs the
 * program cmd (as given, or found in $PATH)? Not if it is limited to --pid
 * processes or to executable names (ltr start --pid, --name, a profile's
 * HeapProcessNames) and cmd is none of those names. */
bool ltr_session_takes_command(const struct ltr_session_status *st, const char *cmd);

typedef struct ltr_heap_launch {
    char *const *argv;      /* the command */
    const char *agent;      /* path of libltr-heap.so */
    int stack_depth;        /* frames per stack, 0..256; -1: the agent's default */
    bool wait_descendants;  /* become a subreaper and wait for every descendant */
    const char *session;    /* LTR_SESSION for the command: it writes to this session only */
    int *killed_by;         /* if set: gets the signal that ended the command, or 0 */
} ltr_heap_launch;

/* Runs the command with the agent preloaded and waits for it (and, if asked,
 * every process it started). SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to this
 * process are passed on to the command (a Ctrl-C from the terminal reaches it
 * directly); the third one kills it. *status gets the command's exit status,
 * 128 + signal if a signal ended it; if it could not be started, err says why
 * ("CMD: No such file or directory") and *status is a shell's: 127 if CMD was
 * not found, 126 if it could not be executed. Returns 0, or -errno if nothing
 * could be launched. */
int ltr_heap_run(const ltr_heap_launch *l, int *status, ltr_error *err);

/* "ltr CMD: WHAT was killed by signal 11 (SIGSEGV: Segmentation fault)" on
 * stderr, if sig is not 0. */
void ltr_heap_report_signal(const char *cmd, const char *what, int sig);

/* Does process pid have the heap agent loaded (`ltr start --pid` records
 * only such a process)? 1 yes, 0 no, -errno if its maps cannot be read
 * (-ENOENT: there is no such process). */
int ltr_heap_agent_loaded(uint32_t pid);

/* What `ltr start heap --name NAME` reaches: whether new processes of the
 * name carry the agent (ltr heaptracingconfig), and the running ones that
 * do not have it loaded (the first LTR_MAX_SESSION_PIDS of their pids:
 * those are what an attach has to reach). */
typedef struct ltr_heap_name_reach {
    bool configured;      /* NAME is in the by-name setting */
    unsigned running;     /* running processes of the name */
    unsigned without;     /* ...of which without the agent */
    uint32_t pids_without[LTR_MAX_SESSION_PIDS]; /* min(without, LTR_MAX_SESSION_PIDS) of them */
} ltr_heap_name_reach;
/* Returns 0 or -errno (/proc cannot be read). */
int ltr_heap_name_reach_of(const char *name, ltr_heap_name_reach *out);

#endif
