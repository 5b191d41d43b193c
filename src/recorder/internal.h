/*
 * recorder/internal.h — the recorder's state, shared by its files:
 * setup.c (shared memory, registry, socket), drain.c (buffers to traces),
 * loop.c (poll loop and control requests), launch.c (daemon start).
 */
#ifndef LTR_RECORDER_INTERNAL_H
#define LTR_RECORDER_INTERNAL_H

#include "format/writer.h"
#include "recorder/recorder.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* What the recorder remembers of each buffer, beside the shared header. */
typedef struct buf_note {
    uint32_t flushed_bytes, flushed_events; /* already written (file mode) */
} buf_note;

typedef struct collector_state {
    ltr_ring *ring;
    buf_note *notes;
    uint8_t *copy;           /* memory mode: a buffer copied out for a save */
    uint64_t queue_stall_ns; /* since when the queue head slot is empty but claimed */
    /* counters of the recorder's side (producers count events_lost in the ring) */
    uint64_t events_written, buffers_written; /* in the current output */
    uint64_t events_dropped, buffers_lost;    /* could not be written (disk, size limit) */
} collector_state;

typedef struct producer_conn {
    int fd;
    pid_t pid;
    uint32_t owner;
    uint32_t proc_slot;
} producer_conn;

typedef struct pid_loss {
    uint32_t pid;
    uint64_t buffers_lost[LTR_MAX_COLLECTORS], events_lost[LTR_MAX_COLLECTORS];
} pid_loss;

typedef struct recorder {
    ltr_session_config cfg;
    ltr_registry *reg;
    unsigned slot;
    uint64_t incarnation;
    ltr_shm *shm;
    size_t shm_size;
    int memfd, wakefd, listen_fd, signal_fd;
    char sock_path[4200];
    uint64_t start_ns, start_wall_ns;
    collector_state col[LTR_MAX_COLLECTORS];
    uint64_t meta_done; /* bytes of the metadata region already written (file mode) */
    ltr_writer *writer; /* file mode */
    bool file_full;     /* file mode: size limit or disk full was reached */
    ltr_error write_err; /* file mode: the first write to the trace that failed (code 0: none) */
    producer_conn *conns;
    unsigned nconns, conns_cap;
    uint32_t next_owner, next_proc;
    pid_loss *losses; /* recorder-side losses per pid (writer drops) */
    unsigned nlosses;
    bool done;
    int exit_status;
} recorder;

/* setup.c */
int rec_setup(recorder *r, const ltr_session_config *cfg, ltr_error *err);
void rec_teardown(recorder *r);
void rec_unpublish(recorder *r); /* producers stop writing: state and registry */
int rec_add_process(recorder *r, pid_t pid, uint32_t *proc_slot);

/* drain.c */
void rec_drain(recorder *r, bool flush_active);
void rec_harvest_owner(recorder *r, uint32_t owner);
int rec_save(recorder *r, const char *path, const char *description, ltr_error *err);
int rec_finish_file(recorder *r, const char *description, ltr_error *err);
void rec_header_kv(recorder *r, ltr_bytes *kv, const char *kind);
void rec_end_kv(recorder *r, ltr_bytes *kv, const char *description);
void rec_counters(recorder *r, ltr_bytes *out);
/* Events lost in collector c: by producers, by the writer, unattached. */
uint64_t rec_events_lost(recorder *r, unsigned c);
/* Events producers have committed to collector c so far (for status). */
uint64_t rec_events_recorded(recorder *r, unsigned c);
void rec_on_drop(void *ctx, const ltr_block_info *info, uint32_t byte_count);

/* loop.c */
void rec_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A write to the file-mode trace failed: logged, and the first such error kept
 * for status and stop to report (the events it cost are counted as dropped). */
void rec_write_failed(recorder *r, const ltr_error *err);

#endif
