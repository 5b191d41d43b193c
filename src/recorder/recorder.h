/*
 * recorder/recorder.h — the session process ("recorder"): it owns a session's
 * shared memory, answers on the session's control socket, drains full
 * buffers to the trace file (file mode) or keeps them as a ring (memory mode),
 * and writes traces on save and stop. `ltr start` launches it; every other
 * session command talks to it through client.h. docs/control-protocol.md
 * describes the socket protocol, docs/design.md the whole.
 */
#ifndef LTR_RECORDER_H
#define LTR_RECORDER_H

#include <ltr/common.h>

#include "event/registry.h"
#include "event/shm.h"
#include "base/system_events.h"

#include <stdbool.h>
#include <stdint.h>

#define LTR_MAX_SESSION_PROVIDERS 256
#define LTR_MAX_SESSION_PIDS 256
#define LTR_MAX_SESSION_NAMES 16
#define LTR_BUFFER_KB_MIN 4u
#define LTR_BUFFER_KB_MAX 16384u
#define LTR_BUFFER_KB_DEFAULT 128u
#define LTR_BUFFERS_DEFAULT 64u
#define LTR_BUFFERS_MIN 2u
#define LTR_BUFFERS_MAX 1048576u

typedef struct ltr_provider_spec {
    char name[104];
    ltr_guid guid;
    uint64_t any, all; /* keywords; any = 0 means every keyword */
    uint8_t level;     /* 0 = every level */
    uint8_t collector;
} ltr_provider_spec;

typedef struct ltr_collector_spec {
    char name[32];
    uint32_t buffer_kb;
    uint32_t buffers;
} ltr_collector_spec;

typedef struct ltr_session_config {
    char name[LTR_SESSION_NAME_MAX];
    int mode;                  /* enum ltr_session_mode */
    uint64_t max_file_size;    /* bytes, 0 = unbounded (file mode) */
    char output[4096];         /* file mode: where the trace grows until stop */
    /* output is a template: the recorder creates it with its last XXXXXX made
     * unpredictable (and output then names the file made). */
    bool output_temp;
    /* output may exist and is replaced (--force): removed (a symlink itself,
     * never what it points to) just before the trace is created anew. */
    bool output_replace;
    char profiles[1024];       /* names of the profiles used, for the header */
    ltr_collector_spec collectors[LTR_MAX_COLLECTORS];
    unsigned ncollectors;
    ltr_provider_spec providers[LTR_MAX_SESSION_PROVIDERS];
    unsigned nproviders;
    /* Processes whose events the collectors in pid_collectors take (heap
     * tracing's --pid, HeapProcessIds); none listed: every process. */
    uint32_t pids[LTR_MAX_SESSION_PIDS];
    unsigned npids;
    uint8_t pid_collectors; /* bit c: collector c is limited to pids and names */
    /* ...and processes whose executable has one of these names (--name; the
     * recorder reads it from /proc/PID/exe of the connected peer, never from
     * what the process says). */
    char names[LTR_MAX_SESSION_NAMES][256];
    unsigned nnames;
    /* Only processes launched for it (environment LTR_SESSION=its name, as
     * `ltr record` does) may write into it. */
    bool exclusive;
    /* Set: the session belongs to the command that launches it (`ltr
     * record`), and if that command is gone (killed) before it stops the
     * session, the recorder stops it itself, writing the trace here. */
    char stop_output[4096];
    bool stop_force; /* ...and may replace a file there (ltr record --force) */
    /* Set (without stop_output): the session belongs to the command that
     * launches it (`ltr watch`), and if that command is gone (killed)
     * before it ends the session, the recorder cancels it. */
    bool cancel_when_orphaned;
    /* The system provider's memory counters: every this many ms (0: the
     * default, LTR_SYSTEM_INTERVAL_MS_DEFAULT). */
    uint32_t system_interval_ms;
} ltr_session_config;

/* Parses NAME|GUID[:KEYWORDS[:LEVEL]] (keywords in hex or decimal, level 0..5). */
int ltr_provider_spec_parse(const char *text, ltr_provider_spec *out, ltr_error *err);
/* Checks a session name: 1..63 of [A-Za-z0-9_.-]. */
int ltr_session_name_check(const char *name, ltr_error *err);
/* Checks the whole configuration before launching. */
int ltr_session_config_check(const ltr_session_config *cfg, ltr_error *err);

struct ltr_plan;
struct ltr_bytes;
/* Fills cfg from a resolved recording profile (profiles/profiles.h): mode,
 * collectors, providers, profile names. What the plan asks for that this ltr
 * cannot record is described, a line each, in notes. cfg's name is kept. */
int ltr_session_config_from_plan(const struct ltr_plan *plan, ltr_session_config *cfg,
                                 struct ltr_bytes *notes, ltr_error *err);

/* How many buffers of buffer_kb KB make percent of the total RAM, not
 * clamped: the caller says what range it allows (--buffers N%, a profile's
 * PercentageOfTotalMemory). */
uint64_t ltr_buffers_from_ram_share(uint64_t percent, uint32_t buffer_kb);

/* File mode without -o: cfg->output becomes the template
 * $TMPDIR/ltr-NAME-XXXXXX.ltr.part (/tmp without TMPDIR), a name no other
 * user can guess and plant a file or symlink at beforehand (the recorder
 * creates it with O_EXCL; `ltr status` shows it), and output_temp is set.
 * Returns 0, or -ENAMETOOLONG with err saying so (cfg unchanged). */
int ltr_session_default_output(ltr_session_config *cfg, ltr_error *err);

/* What `ltr start`'s options say about buffers and providers, beside the
 * profiles. */
typedef struct ltr_session_options {
    uint32_t buffer_kb;                   /* every collector's buffer size; 0: not given */
    uint32_t buffers;                     /* every collector's buffer count; 0: not given */
    const ltr_provider_spec *providers;   /* --provider: enabled in the first collector, */
    unsigned nproviders;                  /* after those of the profiles */
} ltr_session_options;

/* A session's collectors and providers, from a resolved plan (or, with plan
 * NULL, one collector "events" of LTR_BUFFERS_DEFAULT buffers of
 * LTR_BUFFER_KB_DEFAULT KB), with the options over them. A plan that records
 * nothing here still gets that collector, for markers. cfg's name, mode
 * (without a plan), output and pids are kept; notes as for
 * ltr_session_config_from_plan. Returns 0 or -errno with err saying why. */
int ltr_session_config_build(const struct ltr_plan *plan, const ltr_session_options *o,
                             ltr_session_config *cfg, struct ltr_bytes *notes, ltr_error *err);

/* Whether the session takes CPU samples (Ltr.System keyword SampledProfile). */
bool ltr_session_samples_cpu(const ltr_session_config *cfg);
/* Whether the session enables the system provider (Ltr.System): then its
 * pids are the processes whose memory counters are recorded. */
bool ltr_session_records_system(const ltr_session_config *cfg);
/* When the session asks for CPU samples: 0 if this user may take them, else
 * -errno with why saying what would permit them (the rest records anyway). */
int ltr_session_cpu_samples_check(const ltr_session_config *cfg, char *why, size_t why_size);

/* The launcher's argv (main's, before getopt), whose strings the recorder,
 * forked from it, overwrites with its own title: `ltr-recorder --instance
 * NAME`. Without it, ps showed the recorder as the command that started it,
 * and `pkill -f 'ltr record'` stopped the recorder with the command. */
void ltr_recorder_title_area(int argc, char **argv);
/* Starts the recorder as a daemon and waits until it runs or has failed.
 * With cfg->stop_output, the recorder watches this process: when it ends
 * without stopping the session, the recorder stops it. */
int ltr_recorder_launch(const ltr_session_config *cfg, ltr_error *err);
/* The same for a session with cfg->stop_output (`ltr record`'s): *note_fd
 * gets the launcher's end of the pair the recorder watches, on which it
 * leaves a note when another command stopped or cancelled the session. */
int ltr_recorder_launch_controlled(const ltr_session_config *cfg, int *note_fd, ltr_error *err);
/* The recorder's note on note_fd ("0 text": the trace was written; "1 text":
 * it was not), waiting up to timeout_ms for it or the recorder's end. 1 if
 * there is one (in note), else 0. */
int ltr_recorder_note(int note_fd, int timeout_ms, char *note, size_t size);
/* Runs the recorder in this process; writes "OK" or the error to ready_fd once
 * set up. controller_fd (or -1): a socket whose hang-up means the controlling
 * command is gone, and where a note for it goes. Returns the process exit status. */
int ltr_recorder_run(const ltr_session_config *cfg, int ready_fd, int controller_fd);
/* The nice a recorder gives itself when it may (recorder/setup.c says why). */
#define LTR_RECORDER_NICE (-10)

#endif
