/*
 * recorder/internal.h — the recorder's state, shared by its files:
 * setup.c (shared memory, registry, socket), drain.c (buffers to traces),
 * loop.c (poll loop and control requests), launch.c (daemon start).
 */
#ifndef LTR_RECORDER_INTERNAL_H
#define LTR_RECORDER_INTERNAL_H

#include "format/writer.h"
#include "recorder/backlog.h"
#include "base/hmap.h"
#include "recorder/recorder.h"
#include "system/system.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* What the recorder remembers of each buffer, beside the shared header. */
/* The threads of the published buffers not yet taken, at a flush: an open
 * addressing table of cap (a power of two, at least twice the buffers)
 * keys, those of generation gen the current ones (no clearing a flush). */
typedef struct rec_thread_key {
    uint64_t thread; /* pid << 32 | tid */
    uint32_t idx, gen;
} rec_thread_key;
typedef struct rec_thread_set {
    rec_thread_key *keys;
    uint32_t cap, gen;
} rec_thread_set;

typedef struct buf_note {
    uint32_t flushed_bytes, flushed_events; /* already written (file mode) */
} buf_note;

/* A counter producers keep in shared memory, as the recorder trusts it: the
 * last value read, and the total of the increases that were plausible. */
typedef struct shm_count {
    uint64_t raw, total, at_ns;
} shm_count;

typedef struct collector_state {
    ltr_ring_view ring;
    buf_note *notes;
    /* file mode, during a flush: the buffers being filled when it began
     * (flush_active), and the published ones it found still queued */
    uint32_t *flushing, *queued_now;
    uint64_t *flushing_seq; /* their seq then (ltr_ring_buf.seq) */
    rec_thread_set queued_threads; /* queued_now's threads (rec_thread_set_fill) */
    uint32_t nflushing, nqueued_now;
    uint8_t *copy;           /* memory mode: a buffer copied out for a save */
    uint64_t *saved_seq;     /* memory mode, per buffer: 1 + the seq a save wrote, 0 if none */
    uint32_t *saved_events;  /* and how many of its events it wrote */
    uint64_t *saved_first_ns; /* and the time of their first (a content written again is not new) */
    uint64_t queue_stall_ns; /* since when the queue head slot is empty but claimed */
    uint64_t hole_pos;       /* memory mode: that slot's position (mark_dead_holes) */
    /* file mode: the queue's tail at a harvest's start, and when: a hole
     * below it was claimed by then (take_past_holes) */
    uint64_t claimed_pos, claimed_ns;
    /* memory mode: buffers of ended producers left FULL in no queue slot,
     * waiting for a second look at a later round (drain.c, dead_first_look) */
    uint64_t *dead_seq1;  /* per buffer: 1 + its seq at the first look, 0 if it waits for none */
    uint64_t *dead_since; /* per buffer: when that look was */
    uint32_t *dead_owner; /* per buffer: whose it was then */
    unsigned ndead;       /* how many wait */
    /* per queue slot: 1 + the position seen claimed and empty there, and since when */
    uint64_t *hole_seen, *hole_since;
    /* counters of the recorder's side (producers count events_lost in the ring) */
    uint64_t events_written, buffers_written; /* in the current output */
    uint64_t events_dropped, buffers_lost;    /* could not be written (disk, size limit) */
    uint64_t backlog_events;                  /* taken out, waiting in the backlog */
    /* what producers count in shared memory: events lost, overwritten, buffers
     * overwritten, and lost by processes that could not attach (registry) */
    shm_count lost, overwritten, bufs_overwritten, unattached;
    shm_count stopping_refused; /* events producers refused, the state not RUNNING (shm.h) */
    uint64_t refused_from;      /* its total when last counted (a stop: when it began) */
    uint64_t refused_lost;      /* refused while a stop that failed was tried, or none was */
    uint64_t damage; /* buffers and counters found impossible (the ring's own: ring.damage) */
    bool damage_logged;
} collector_state;

typedef struct producer_conn {
    int fd;
    pid_t pid;
    uint32_t owner;
    uint32_t proc_slot;
    uint64_t start_ts; /* its PROCESS record's */
    uint64_t image;    /* the producer's image token (AT_RANDOM): another connection of it shares its record */
    uint32_t describer; /* the owner of the connection that wrote that record (its own, if it did) */
    int pidfd;           /* its process (pidfd_open), -1 if none: gone even when its pid is used again */
    bool traced; /* some collector is not denied to it (a session's --pid and names) */
} producer_conn;

typedef struct pid_loss {
    uint32_t pid;
    uint32_t told; /* the counters write (loss_gen) that said it last */
    uint64_t buffers_lost[LTR_MAX_COLLECTORS], events_lost[LTR_MAX_COLLECTORS];
} pid_loss;

/* A marker the recorder keeps itself (memory mode: written into every save). */
typedef struct kept_marker {
    uint64_t ts;
    char *text;
} kept_marker;

typedef struct recorder {
    ltr_session_config cfg;
    /* when each of cfg.pids started (ltr_proc_start_time; 0: unknown): a pid
     * reused during the session is another process, not the one named */
    uint64_t pid_start[LTR_MAX_SESSION_PIDS];
    /* which of cfg.pids joined the session once (status's "joined"): one
     * that closed its connection since (a daemon closing every fd) is not
     * attached, yet its events are in the trace */
    bool pid_joined[LTR_MAX_SESSION_PIDS];
    ltr_registry *reg;
    unsigned slot;
    uint64_t incarnation;
    ltr_shm *shm;
    size_t shm_size;
    /* Where the parts of the shared memory are, as the recorder laid them out:
     * never read back from the shared header, which producers can write. */
    uint8_t *meta;
    uint64_t meta_capacity;
    ltr_shm_proc *procs;
    uint32_t nprocs;
    shm_count *proc_lost; /* nprocs x LTR_MAX_COLLECTORS */
    /* The metadata region read so far, copied out before use: meta_pulled
     * bytes of it; meta_new holds what the file has yet to get, out of the
     * backlog (file mode),
     * meta_kept all of it (memory mode: what a save writes). */
    uint64_t meta_pulled, meta_damage;
    uint64_t meta_skip_ns; /* when a record that never completed was last skipped */
    uint64_t meta_released; /* what of the region producers may write again (meta_read): up to meta_pulled */
    bool meta_holding;      /* a skipped record's place held (drain.c, META_HOLD_NS) */
    uint64_t meta_hold_from, meta_hold_until_ns;
    shm_count meta_lost;   /* records producers could not append: the region held too much unread */
    /* The events the last counters written told, over the collectors: in
     * the trace, lost, overwritten (a stop's answer: what its trace says);
     * of the lost, those of processes that could not join the session. */
    uint64_t counted_written, counted_lost, counted_overwritten, counted_unattached;
    uint64_t counted_unwritten; /* of the lost, those the file refused (events_unwritten) */
    /* Attaches refused for a pid not their process's; of them, those that
     * claimed none (their getpid() failed: a seccomp filter denying it): a
     * stop's answer says them, as their events are counted unattached. */
    uint64_t attaches_refused, attaches_pidless;
    uint64_t forged_processes; /* PROCESS records read that were not the recorder's (logged once) */
    ltr_bytes layouts;    /* the LAYOUT records pulled, 16 MiB at most (ltr providers --details: the region forgets) */
    ltr_bytes meta_taken; /* file mode: pulled, on its way into the backlog */
    ltr_bytes meta_new, meta_kept;
    size_t meta_kept_after;     /* memory mode: meta_kept's size after the last pruning (kept.c) */
    size_t meta_kept_floor;     /* memory mode: no pruning below this size (kept.c), 0 until looked up */
    size_t meta_kept_max;       /* memory mode: meta_kept's bound (kept.c), 0 until looked up */
    uint64_t meta_kept_bound_ns; /* the last pruning near that bound */
    uint64_t meta_refused;      /* records read past that bound (or PROCESS records without memory): counted lost */
    uint64_t meta_refused_said; /* logged once */
    /* memory mode: the attachment each kept PROCESS record is of, in their
     * order (saveorder.c: a save writes an exec'd process's images apart) */
    struct rec_owner {
        uint32_t pid, owner;
        uint64_t ts; /* the record's start_ts */
    } *owners;
    size_t nowners, capowners;
    /* memory mode: a connection that shares another's PROCESS record (one
     * image's second producer) and the owner whose record it is: a save
     * writes its buffers in that image's round (saveorder.c) */
    struct rec_owner_alias {
        uint32_t owner, of;
    } *aliases;
    size_t naliases, capaliases;
    uint64_t meta_kept_dropped; /* memory mode: bytes of it let go since the start (kept.c) */
    uint64_t meta_failed_ns; /* file mode: when writing meta_new last failed, 0 if it did not */
    uint64_t meta_retry_ns;  /* how long after that it is tried again (drain.c), 0 after a success */
    ltr_bytes last_counters; /* file mode: the COUNTERS last written */
    uint32_t marker_layout;
    bool marker_meta_written; /* file mode */
    kept_marker *markers;
    unsigned nmarkers;
    int memfd, wakefd, listen_fd, signal_fd;
    int run_dirfd;         /* the runtime directory, as opened and checked */
    char run_dir[4096];
    char sock_name[LTR_SESSION_NAME_MAX + 8], sock_path[4200];
    ino_t sock_ino;        /* of our socket's file: removed only if still ours */
    int record_fd;         /* the session's record, locked while we live */
    char record_name[LTR_SESSION_NAME_MAX + 40];
    int controller_fd; /* `ltr record`'s socket: hung up when it is gone, takes a note; else -1 */
    bool controller_stop_failed; /* its own stop could not begin: it told its user the session goes on */
    uint64_t start_ns, start_wall_ns;
    collector_state col[LTR_MAX_COLLECTORS];
    ltr_writer *writer; /* file mode */
    dev_t output_dev;   /* file mode: the trace file made, which cfg.output named then */
    ino_t output_ino;
    bool output_was_taken; /* its stop wrote the trace from its own file: output named another */
    uint64_t thrift_ns, thrift_waited_us; /* file mode: the last look at the CPUs' pressure (drain.c) */
    rec_backlog backlog; /* file mode: blocks taken out, not yet written (backlog.h) */
    bool backlog_full_logged;
    bool file_full;     /* file mode: size limit or disk full was reached */
    /* file mode, the last flush: events committed that it left in the
     * buffers (behind a queue slot not filled yet, flush_partials) */
    uint64_t flush_held;
    ltr_error write_err; /* file mode: the first write to the trace that failed (code 0: none) */
    uint64_t write_failures; /* how many writes failed: the log says the 1st, 2nd, 4th, 8th... */
    producer_conn *conns;
    unsigned nconns, conns_cap;
    /* Producers whose connection closed while their process still mapped
     * the session (a daemon's close-all, or a process on its way out): their
     * buffers stay theirs until it no longer does (loop.c, still_writes). */
    struct rec_orphan {
        uint32_t owner;
        int32_t pid;    /* as it sent */
        pid_t kernel_pid;
        uint32_t proc_slot;
        uint64_t start_ts; /* its PROCESS record's */
        int pidfd;           /* producer_conn's, closed when done */
    } orphans[16];
    unsigned norphans;
    uint32_t next_owner, next_proc;
    /* Loss-counter slots of processes that went, for the next to come: 4096
     * were handed out once each, and every process past them shared the
     * last one (7 038 processes of 200 pyenv python3 starts: one pid's row
     * showed another's losses). */
    uint32_t *free_slots, nfree_slots;
    uint32_t loss_gen;
    pid_loss *losses; /* recorder-side losses per pid (writer drops) */
    unsigned nlosses;
    ltr_system *system; /* the system provider's thread, when the session enables Ltr.System */
    /* loop.c: connections whose request is on its way, or was met while a
     * save was written (rec_meanwhile) and is answered once it ends */
    struct pending_req *pending;
    unsigned npending, pending_cap;
    uint64_t meanwhile_ns; /* when rec_meanwhile last looked */
    bool done;
    bool not_taking; /* the shared state says STOPPING: rec_take_events(false) */
    int exit_status;
} recorder;

/* setup.c */
int rec_setup(recorder *r, const ltr_session_config *cfg, ltr_error *err);
/* Gives back the whole pages of [from, from + len) of the session's shared
 * memory (they read as zeros after). */
void rec_punch(const recorder *r, const uint8_t *from, size_t len);
void rec_teardown(recorder *r);
void rec_unpublish(recorder *r); /* producers stop writing: state and registry */
/* Producers take events again, or take none from now on (the shared state
 * they look at before each event; the registry unchanged). */
void rec_take_events(recorder *r, bool take);
/* owner: the attachment's token (memory mode remembers whose PROCESS
 * record it is: saveorder.c). A process the session does not trace (every
 * collector denied to it: not started for an `ltr record`, not one of its
 * --pid or names) gets its slot but no PROCESS record: its program and
 * command line are none of the trace's business; *start_ts is 0 then. */
int rec_add_process(recorder *r, pid_t pid, uint32_t owner, bool traced, uint32_t *proc_slot,
                    uint64_t *start_ts);
/* A slot of a producer that went (its process no longer maps the session):
 * its losses kept under its pid, the slot free for another. */
void rec_release_slot(recorder *r, uint32_t slot, int32_t pid);
/* Writes the PROCESS_END record of a process whose last producer went,
 * behind the metadata its producers wrote: straight into what the recorder
 * writes, not through the shared region, where it drops any such record (a
 * traced program could end another's model with one). ts: when the
 * recorder saw it go. exec_of: not 0, the process lives on, an exec'd
 * program that never joined the session, and this is the start_ts of the
 * PROCESS record of the image that ended, written as an EXEC_END. */
void rec_end_process(recorder *r, pid_t pid, uint64_t ts, uint64_t exec_of);
/* Appends a record only the recorder writes (a PROCESS record) straight to
 * what it writes, behind what producers appended to the region so far: in
 * the region it could be lost (full, or a flight recorder past its bound)
 * and a producer could forge one. -1 without memory, or past twice a
 * flight recorder's bound (rec_kept_own_fits). */
int rec_put_own_record(recorder *r, const uint8_t *rec, uint32_t size);
/* Memory mode: the kept metadata of processes that ended and whose events
 * no buffer holds goes, once it doubled since the last time (kept.c). */
void rec_prune_kept(recorder *r);
/* The owners of the PROCESS records kept (r->owners) that pruning let go. */
void rec_prune_owners(recorder *r);
/* Memory mode: meta_kept, grown from `before` by the records just read,
 * back under its bound (kept.c): pruned, else those records not kept. */
void rec_keep_bounded(recorder *r, size_t before);
/* Memory mode: whether a record the recorder writes itself (a PROCESS
 * record) may still be kept. Those stay past the bound (one small record an
 * image), but not without end: a traced sh exec'ing itself 300 times with a
 * 30 KB argument took what a recorder of LTR_KEPT_MAX_KB=64 kept to 8.7 MB.
 * Twice the bound at most (kept.c). */
bool rec_kept_own_fits(recorder *r, size_t size);
/* The pid a metadata record names first (PROCESS, THREAD, STACK, ...), or -1. */
int64_t rec_record_pid(const uint8_t *rec, uint32_t size);

/* Memory mode: a save's rounds, one per image of an exec'd process
 * (saveorder.c). meta[g]: the kept records of round g; NULL with one round. */
typedef struct rec_save_rounds {
    an_hmap pids, owners;
    ltr_bytes *meta;
    unsigned rounds;
    size_t scanned; /* of meta_kept: what the rounds hold */
} rec_save_rounds;
/* 1: rounds to go in, 0: one (write as ever), -1: no memory. */
int rec_save_rounds_plan(recorder *r, rec_save_rounds *sr);
/* The round of an attachment's buffers. */
unsigned rec_round_of(const rec_save_rounds *sr, uint32_t owner);
/* Memory mode: owner's buffers are of the image whose record owner `of` wrote. */
void rec_add_alias(recorder *r, uint32_t owner, uint32_t of);
void rec_save_rounds_free(rec_save_rounds *sr);

/* Memory mode: the buffers a save took, held to be written a thread at a
 * time, so that the writer merges each thread's (savewin.c). */
typedef struct rec_save_window {
    ltr_bytes recs; /* their records, one buffer after another */
    struct rec_window_buf *bufs;
    size_t n, cap;
    uint64_t events;
    /* the thread whose buffer was given to the writer last, while nothing
     * else was given since */
    bool last_on;
    uint16_t last_collector;
    uint64_t last_thread;
} rec_save_window;
/* An empty window, and w's merged blocks as large as a save's should be. */
void rec_window_begin(rec_save_window *sw, ltr_writer *w);
/* A copy of a thread's buffer (not a CPU's) into the window; -ENOMEM. */
int rec_window_add(rec_save_window *sw, const ltr_block_info *info, const uint8_t *data, uint32_t len);
/* Whether the window holds as much as it may: time to write it. */
bool rec_window_full(const rec_save_window *sw);
/* Writes the window, a thread at a time, and empties it. 0, or the writer's error. */
int rec_window_write(rec_save_window *sw, ltr_writer *w, ltr_error *err);
/* Something other than the window's buffers went to the writer: what comes
 * next does not follow the last buffer written. */
void rec_window_break(rec_save_window *sw);
void rec_window_free(rec_save_window *sw);
/* The time of the first event buffer idx of collector c holds, 0 if none
 * can be read (a buffer being filled or taken over: a hint, not a promise). */
uint64_t rec_buffer_first_ns(recorder *r, unsigned c, uint32_t idx);
/* A set for a ring of nbuf buffers (its keys allocated); false when out of memory. */
bool rec_thread_set_init(rec_thread_set *set, uint32_t nbuf);
/* The set now holds the threads of queued (n of them, at most the ring's
 * buffers): their own buffers' (a CPU's, tid 0, has none). */
void rec_thread_set_fill(rec_thread_set *set, const ltr_ring_view *ring, const uint32_t *queued, uint32_t n);
/* File mode, in a flush: whether the piece of buffer idx, being filled,
 * must wait for the next flush: its thread (pid and tid) has another
 * buffer in set (published, not yet taken), which came before it. A CPU's
 * buffer never waits (its records carry their times). */
bool rec_piece_waits(const ltr_ring_view *ring, const rec_thread_set *set, uint32_t idx);
/* Copies the metadata region's new records out (into what the next round
 * writes or keeps), and frees their place for producers. */
void rec_pull_metadata(recorder *r);
/* The writer's tables for a process that went go once the blocks taken so
 * far are written (file mode): its last buffers, harvested as it went, keep
 * their references (bench/heap's, all written at its exit, took 1 % more
 * bytes when the tables went before them). */
void rec_forget_process(recorder *r, uint32_t pid);

/* loop.c: while a save is written, attaches and status requests are
 * answered (cheap: it looks at most every few milliseconds); others wait
 * for the save's end. */
void rec_meanwhile(recorder *r);

/* drain.c */
void rec_drain(recorder *r, bool flush_active);
/* Blocks wait in the backlog: the loop comes back at once, not in 50 ms. */
bool rec_backlog_waiting(const recorder *r);
void rec_harvest_owner(recorder *r, uint32_t owner);
/* Writes what the ring holds to path, through a new temporary beside it. path
 * is replaced only with force; a path taken meanwhile fails with EEXIST, and
 * with kept (a stop: the ring is about to go; a watch: it names the file
 * itself) the temporary stays, named in err and in kept. */
int rec_save(recorder *r, const char *path, const char *description, bool force, char *kept, size_t kept_size,
             ltr_error *err);
int rec_finish_file(recorder *r, const char *description, ltr_error *err);
/* File mode: every committed event, the metadata it uses and the counters
 * into the trace and to the disk now; the session goes on (`ltr flush`). */
int rec_flush_file(recorder *r, ltr_error *err);
void rec_header_kv(recorder *r, ltr_bytes *kv, const char *kind);
void rec_end_kv(recorder *r, ltr_bytes *kv, const char *description);
void rec_counters(recorder *r, ltr_bytes *out);
/* Events lost in collector c: by producers, by the writer, unattached. */
uint64_t rec_events_lost(recorder *r, unsigned c);
/* The events producers refused since this was last called are counted as
 * lost, unless producers take none now (rec_take_events false: a stop
 * under way, whose refusals come after its trace's end): called as a
 * memory-mode stop begins, and after its save failed and events are taken
 * again, it counts that attempt's refusals as lost then. */
void rec_count_refusals(recorder *r);
/* Memory mode: the time (ltr_now_ns's clock) of the oldest event collector
 * c's ring holds now, read from the first record of its oldest kept buffer;
 * 0 when it holds none or nothing was overwritten yet (the ring then reaches
 * back to the session's start). For `ltr status` and `ltr watch`. */
uint64_t rec_oldest_event_ns(recorder *r, unsigned c);
/* Events producers have committed to collector c so far (for status). */
uint64_t rec_events_recorded(recorder *r, unsigned c);
void rec_on_drop(void *ctx, const ltr_block_info *info, uint32_t byte_count);
/* Reads the counters producers keep in shared memory, keeping plausible increases. */
void rec_sample_counters(recorder *r);
/* Shared-memory damage found in collector c (collector 0 also has the metadata's). */
uint64_t rec_shm_damage(recorder *r, unsigned c);
/* Writes the metadata records gathered so far (in chunks); returns 0 or -errno. */
int rec_write_meta(ltr_writer *w, const ltr_bytes *records, size_t *done, ltr_error *err);

/* markers.c: markers are kept by the recorder, out of the reach of producers. */
#define REC_MARKERS_MAX 4096
int rec_marker(recorder *r, const char *text, ltr_error *err);
/* Memory-mode save: every kept marker; adds them to *events. */
int rec_markers_save(recorder *r, ltr_writer *w, uint64_t *events, ltr_error *err);
void rec_markers_free(recorder *r);

/* loop.c */
/* Logs a problem: the log is then kept (else removed at a clean end). */
void rec_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Logs a line that needs no one's attention: the log is not kept for it. */
void rec_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The log's name in the runtime directory, or NULL if there is none. */
const char *rec_log_name(void);

/* system.c: the system provider's thread (src/system), when the session
 * enables Ltr.System; a failure to start it is logged, the rest records. */
void rec_system_start(recorder *r);
/* Its last samples go in; called before producers are told to stop. */
void rec_system_stop(recorder *r);

/* capture.c: `ltr capturestate`: a THREAD record, with its name now, of
 * every thread of every attached process (but the recorder); how many. */
unsigned rec_capture_threads(recorder *r);

/* leftovers.c */
/* Writes the session's record, locked for as long as this recorder lives. */
int rec_record_open(recorder *r, const char *log_name, ltr_error *err);
/* Removes it: the session ended, and not by a kill. */
void rec_record_close(recorder *r);

/* A write to the file-mode trace failed: logged, and the first such error kept
 * for status and stop to report (the events it cost are counted as dropped). */
void rec_write_failed(recorder *r, const ltr_error *err);
/* layouts.c: the layouts of provider g in the shared metadata, one line
 * each ("Name id=N event=E level=L opcode=O keywords=0xK fields=a:u64,..."),
 * NUL-terminated. */
void rec_layouts_text(recorder *r, const ltr_guid *g, ltr_bytes *out);

#endif
