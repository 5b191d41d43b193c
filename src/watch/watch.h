/*
 * watch/watch.h — `ltr watch`: a flight recorder on one service that saves
 * itself when the service's private memory is high and growing
 * (docs/watch.md). Two halves: the condition (cond.c), a pure function of
 * the polls' private bytes that tests drive with made-up series; and the
 * watch itself (watch.c), which starts the session, attaches to the target,
 * polls /proc, and on a trigger writes a marker, takes a heap snapshot and
 * saves the trace. The command layer (cli/cmd-watch.c) parses and prints
 * what the callbacks here tell it.
 */
#ifndef LTR_WATCH_H
#define LTR_WATCH_H

#include <ltr/common.h>

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* ---- the condition (cond.c) ------------------------------------------------ */

#define LTR_WATCH_WARMUP_POLLS 6  /* auto: polls that learn the transient swing */
#define LTR_WATCH_SUSTAIN_POLLS 3 /* auto: polls the rise must hold */
#define LTR_WATCH_NOISE_FLOOR (1u << 20) /* auto: the smallest swing assumed, bytes */

typedef struct ltr_watch_rule {
    uint64_t above;   /* private bytes above this; 0: not asked */
    uint64_t growth;  /* growth since the previous poll above this; 0: not asked */
    bool growth_auto; /* --growth-above auto (then growth is 0) */
} ltr_watch_rule;

typedef struct ltr_watch_cond {
    ltr_watch_rule rule;
    unsigned polls;      /* since the start, or the target's restart */
    uint64_t prev;       /* the previous poll's private bytes */
    bool held;           /* the condition held at the previous poll (a trigger needs a new rise) */
    /* auto */
    uint64_t lo, hi;     /* warm-up: the band private bytes moved in */
    uint64_t swing;      /* hi - lo, at least the noise floor */
    uint64_t base;       /* the level a rise counts from: hi, then each trigger's level */
    uint64_t recent[LTR_WATCH_SUSTAIN_POLLS];
} ltr_watch_cond;

enum ltr_watch_state {
    LTR_WATCH_LEARNING = 1, /* auto's warm-up */
    LTR_WATCH_WAITING,      /* armed: the condition does not hold */
    LTR_WATCH_HOLDING,      /* it holds still, after a trigger: waits for it to end */
    LTR_WATCH_FIRE,         /* it holds now: trigger */
    LTR_WATCH_SETTLING,     /* the heap agent has just joined the process: its memory is not growth */
};

typedef struct ltr_watch_verdict {
    int state;             /* enum ltr_watch_state */
    uint64_t private_bytes;
    int64_t growth;        /* since the previous poll; 0 at the first */
    uint64_t auto_level;   /* auto, after the warm-up: the lowest of the last polls must pass this */
    char waits_for[200];   /* what it waits for, in human units */
    char condition[300];   /* LTR_WATCH_FIRE: the condition and its figures */
} ltr_watch_verdict;

/* Checks the rule (at least one part); 0 or -EINVAL with err saying why. */
int ltr_watch_rule_check(const ltr_watch_rule *r, ltr_error *err);
void ltr_watch_cond_init(ltr_watch_cond *c, const ltr_watch_rule *r);
/* One poll: the process's private bytes now. */
void ltr_watch_cond_poll(ltr_watch_cond *c, uint64_t private_bytes, ltr_watch_verdict *v);

/* ---- the watch (watch.c) ----------------------------------------------------- */

typedef struct ltr_watch_config {
    uint32_t pid;              /* the target, or */
    const char *name;          /* the executable's file name (by name: followed across restarts) */
    /* FILE: the first trigger's trace; later ones FILE-2, FILE-3... Absolute:
     * the recorder writes it, and its working directory is not the caller's. */
    const char *record_to;
    ltr_watch_rule rule;
    uint32_t interval_ms;      /* polls (default 10 s) */
    unsigned max_triggers;     /* then it ends (default 1) */
    const char *const *profiles; /* more profiles, as `ltr start` takes them */
    size_t nprofiles;
    uint32_t memory_interval_ms; /* the memory counters in the trace (0: the system provider's default) */
    bool support_bundle;       /* beside each trace, a .tar.zst of facts (bundle.c) */
} ltr_watch_config;

/* What the watch tells its caller, as it happens. */
typedef struct ltr_watch_poll {
    uint64_t t_ns;         /* since the watch started */
    uint32_t pid;          /* 0: no process (by name: waiting for one) */
    ltr_watch_verdict v;
    uint64_t reach_ns;     /* how far back the flight recorder reaches now */
    bool no_answer;        /* the recorder did not answer (stopped, hung): reach_ns is not known */
} ltr_watch_poll;

typedef struct ltr_watch_hooks {
    void *ctx;
    void (*note)(void *ctx, const char *line);          /* a line to tell the user */
    void (*warn)(void *ctx, const char *line);          /* a problem that does not end the watch */
    void (*poll)(void *ctx, const ltr_watch_poll *p);    /* after every poll */
    /* bundle: the support bundle written beside the trace, or NULL */
    void (*trigger)(void *ctx, unsigned n, const char *path, const char *bundle, const ltr_watch_verdict *v);
    /* the process watched by --pid exited (how: "killed by SIGKILL", "exit
     * status 1" or why that is not known), and what the flight recorder
     * held, reach_ns back from its end, was saved to path (bundle beside) */
    void (*exited)(void *ctx, uint32_t pid, const char *how, uint64_t reach_ns, const char *path, const char *bundle);
} ltr_watch_hooks;

/* One poll as --monitor prints it and the bundle's monitor.txt keeps it:
 * "02:53:44  pid 22709  private 43.2 MiB  growth +38.1 MiB  recorder reaches
 * back 5 s  waiting for ..." (wall: the poll's time); "recorder does not
 * answer" in place of the reach when it did not. */
void ltr_watch_poll_format(const ltr_watch_poll *p, time_t wall, char *out, size_t size);

/* Checks cfg before anything starts: the rule, a target, FILE's directory
 * exists and this user may write there, the profiles resolve. 0, or -errno
 * with err saying what is wrong. */
int ltr_watch_check(const ltr_watch_config *cfg, ltr_error *err);
/* The trace path of trigger n (1: FILE itself; n: FILE-n before its
 * extension, trace.ltr -> trace-2.ltr), the first of FILE, FILE-2... from n
 * on that does not exist, nor its bundle's path when with_bundle (a file is
 * never overwritten): *n is updated. */
int ltr_watch_trace_path(const char *record_to, bool with_bundle, unsigned *n, char *out, size_t size);

/* ---- the support bundle (bundle.c) ---------------------------------------------- */

#define LTR_WATCH_HISTORY 4096 /* polls the bundle's monitor.txt keeps: 11 h at 10 s */

typedef struct ltr_watch_bundle {
    unsigned trigger;
    bool at_exit;             /* saved as the process exited, not by a trigger (condition says how) */
    uint32_t pid;
    uint64_t start_ticks;     /* pid's start (ltr_proc_start_ticks): another process of that pid is not it */
    const char *condition;    /* the condition and its figures */
    const char *trace;        /* the trace saved beside it */
    const char *profile_text; /* the session plan as `ltr profiles --details` prints it */
    const char *status_text;  /* `ltr status` of the session now, or NULL and */
    const char *status_error; /* why not */
    const char *history;      /* the monitor's lines, oldest first */
    size_t history_len;
    const char *log_path;     /* the recorder's log, or NULL */
} ltr_watch_bundle;

/* The bundle beside a trace: trace.ltr -> trace.tar.zst. */
int ltr_watch_bundle_path(const char *trace, char *out, size_t size);
/* Writes the bundle to path, which must not exist (it is never replaced).
 * 0, or -errno with err saying why (then nothing is left at path). */
int ltr_watch_bundle_write(const char *path, const ltr_watch_bundle *in, ltr_error *err);
/* Whether a bundle can be written: one is, to /dev/null. A libarchive that
 * cannot be loaded, or lacks a function a bundle calls, ends ltr with its
 * name (profiles/lazylib.h): at a watch's start, not at its trigger days
 * later, which ended the watch there, its trace saved and never said, a
 * .part file left. 0, or -errno with err (a libarchive without zstd). */
int ltr_watch_bundle_check(ltr_error *err);

/* Runs the watch until max_triggers triggers (returns 0), *stop becomes
 * non-zero (a signal: returns 0), the target by pid exits (its recording
 * saved, hooks->exited told; returns -ESRCH, err says how it ended, or why
 * nothing could be saved), or an error (-errno, err says it). Whatever way it ends, the
 * session is cancelled (the saved traces stay) and the target's snapshot
 * setting undone: nothing is left running. */
int ltr_watch_run(const ltr_watch_config *cfg, const ltr_watch_hooks *hooks, volatile sig_atomic_t *stop,
                  ltr_error *err);

#endif
