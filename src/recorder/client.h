/*
 * recorder/client.h — the command line's side of the control socket: one
 * request, one response, both key/value lists (docs/control-protocol.md).
 */
#ifndef LTR_RECORDER_CLIENT_H
#define LTR_RECORDER_CLIENT_H

#include <ltr/common.h>

#include "base/records.h"
#include "event/shm.h"

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

/* A response: a key/value list as it came over the socket (base/records.h's
 * encoding, read with ltr_kvlist_get); `ok` is "1" on success, else `error`
 * says why. */
typedef struct ltr_kvlist {
    uint8_t *data;
    size_t len;
} ltr_kvlist;

/* Sends req to the session's recorder and waits for the response (fills err
 * with the recorder's message when ok != 1). Returns 0 or -errno. The wait
 * is bounded: a few seconds for a request answered at once (status,
 * marker, cancel...), 10 minutes for one that writes a trace (save, stop,
 * flush, capturestate); a stopped recorder (SIGSTOP) is reported within
 * about a second either way: -ETIMEDOUT, err naming the session and why. */
int ltr_client_request(const char *session, const ltr_bytes *req, ltr_kvlist *resp, ltr_error *err);
/* One request of the protocol, typed: op ("status", "save", "stop",
 * "cancel", "marker"...) with its path and text (NULL when absent), and
 * force (save, stop: replace a file already at path). resp may be NULL when
 * only success matters; else the caller frees it. Returns as ltr_client_request. */
int ltr_client_op(const char *session, const char *op, const char *path, const char *text, bool force,
                  ltr_kvlist *resp, ltr_error *err);
/* `save` of path that, should path be taken while the save is written,
 * leaves the finished file for the caller to name: then -EEXIST with its
 * name in kept (else kept is ""). */
int ltr_client_save_keeping(const char *session, const char *path, char *kept, size_t size, ltr_error *err);
/* The recorder's log named in a reply once it has logged a problem (the log
 * is then kept): copied into buf; NULL when the reply names none (nothing
 * went wrong, and the log is removed at a clean end). */
const char *ltr_client_reply_log(const ltr_kvlist *resp, char *buf, size_t size);
void ltr_kvlist_free(ltr_kvlist *kv);
/* Copies the value of key into buf (NUL-terminated, cut to size); NULL if absent. */
const char *ltr_kvlist_get(const ltr_kvlist *kv, const char *key, char *buf, size_t size);

/* What `flush` answered (docs/control-protocol.md): where the trace is and
 * how big it is now; a write error and the events it cost, and whether the
 * file reached its --max-file-size (what comes after is counted as lost). */
typedef struct ltr_flush_result {
    char output[4096];
    bool output_temp;            /* output is ltr's temporary name (no -o FILE) */
    uint64_t file_size, dropped;
    uint64_t held; /* events committed but not in the file yet: behind a queue slot not filled yet */
    char write_error[256];
    bool full;
} ltr_flush_result;
/* Asks a file-mode session to write everything committed so far into its
 * trace now; 0 or -errno (no such session, memory mode, a write that failed). */
int ltr_client_flush(const char *session, ltr_flush_result *out, ltr_error *err);

/* What `capturestate` answered: whether the session records the system
 * provider and what state it wrote now; how many processes write into the
 * session (their metadata is kept whole) and the metadata's size so far. */
typedef struct ltr_capture_result {
    bool system;
    uint64_t processes, threads, modules;
    uint64_t producers, metadata_bytes;
    uint64_t named_threads; /* THREAD records of the producers' threads, with their names now */
} ltr_capture_result;
/* Asks a session to write the state its providers hold now (ltr capturestate). */
int ltr_client_capture_state(const char *session, ltr_capture_result *out, ltr_error *err);

/* Names of the sessions running now (stale entries of killed recorders are
 * cleaned first). Returns how many, or -errno. */
int ltr_client_sessions(char names[][64], int max, ltr_error *err);

/* A session whose recorder was killed: what is left of it (leftovers.c). */
typedef struct ltr_dead_session {
    char name[64];
    unsigned pid;
    bool file_mode;
    uint64_t start_wall_ns;
    char output[4096];    /* file mode: the partial trace */
    char log[128];        /* the recorder's log, in the runtime directory */
    char log_path[4300];
    bool log_kept;
    char record[256];     /* the session's record, in the runtime directory */
    bool has_partial;     /* file mode: the partial trace is there, of this */
    uint64_t partial_size; /* size in bytes and */
    uint64_t partial_mtime_ns; /* time of its last write (wall clock) */
} ltr_dead_session;

/* Cleans the runtime directory (sockets of killed recorders, records of dead
 * sessions whose partial trace is gone) and lists the dead sessions left, the
 * first max of them. Returns how many there are, or -errno. */
int ltr_client_dead_sessions(ltr_dead_session *out, int max, ltr_error *err);
/* Forgets the dead sessions of this name (their partial traces stay where they
 * are). Returns how many, or -errno. */
int ltr_client_forget(const char *name, ltr_error *err);

/* A running session's status, as its recorder answers the "status" request
 * (docs/control-protocol.md), typed: the commands read fields, not keys. */
typedef struct ltr_collector_status {
    char name[32];
    uint64_t buffer_size;        /* bytes */
    uint64_t buffers, buffers_free;
    uint64_t events_recorded;    /* counts the overwritten too */
    uint64_t events_lost, events_overwritten, buffers_lost, shm_damage;
    /* memory mode: how far back the ring reaches now, ns: the age of its
     * oldest event, or the session's uptime while nothing was overwritten */
    uint64_t reach_ns;
} ltr_collector_status;

#define LTR_STATUS_PIDS 256

typedef struct ltr_session_status {
    char name[64];
    char mode[16];               /* "file" or "memory" */
    bool file_mode;
    uint64_t pid, uptime_ns, processes;
    uint64_t untraced;           /* processes joined that its --pid or names deny: not in processes */
    char untraced_why[160];      /* why (the session's rule) */
    char profiles[1024];         /* ";"-joined, empty without profiles */
    char names[4096];            /* executable names it heap-traces, "/"-joined, or "" */
    bool has_output;             /* file mode: output, file_size, max_file_size */
    char output[4096];
    bool output_temp;            /* output is ltr's temporary name (no -o FILE) */
    uint64_t file_size, max_file_size;
    char write_error[256];       /* the first failed write to the trace, or "" */
    unsigned ncollectors;        /* at most LTR_MAX_COLLECTORS are kept */
    ltr_collector_status collectors[LTR_MAX_COLLECTORS];
    /* the processes attached (the first LTR_STATUS_PIDS), and the --pid list */
    uint32_t attached[LTR_STATUS_PIDS], wanted[LTR_STATUS_PIDS];
    unsigned nattached, nwanted;
    uint32_t joined[LTR_STATUS_PIDS]; /* of wanted, those that joined once (attached now or not) */
    bool heap;                   /* it enables the heap provider: its --pid join it by their agent */
    unsigned njoined;
    uint64_t metadata_lost;      /* records producers could not append to the metadata region */
    /* memory mode: the metadata bytes every save writes, and those let go
     * (processes that ended, whose events no buffer holds) */
    uint64_t metadata_kept, metadata_dropped;
} ltr_session_status;

/* The status as `ltr status` shows it (status_text.c). */
void ltr_session_status_write(FILE *out, const ltr_session_status *st);
/* Fills st from a status response; absent numbers are 0, absent strings "". */
void ltr_session_status_parse(const ltr_kvlist *kv, ltr_session_status *st);
/* Asks a session for its status. Returns 0, or -errno with err saying why
 * (the session is not running, it did not answer). */
int ltr_client_status(const char *session, ltr_session_status *st, ltr_error *err);
/* The counters of every collector added up (name empty). */
ltr_collector_status ltr_session_status_total(const ltr_session_status *st);
/* Of a collector's counters (or the total's): the events a trace written now
 * holds, the recorded less the overwritten (events_recorded counts those
 * too); and the events its programs emitted, the recorded and the lost. */
uint64_t ltr_collector_events_kept(const ltr_collector_status *c);
uint64_t ltr_collector_events_emitted(const ltr_collector_status *c);

/* ltr_registry_reap (registry lock held) with the recorder's side of
 * liveness: a session whose record is still locked lives, whatever its
 * pid says from here (leftovers.c). */
struct ltr_registry;
void ltr_client_reap(struct ltr_registry *reg);

#endif
