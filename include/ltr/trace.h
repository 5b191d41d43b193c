/*
 * ltr/trace.h — reading .ltr trace files (docs/trace-format.md). Every tool
 * that looks at a trace (info, dump, analyze, export, report) goes through
 * this: open, stream the events in file order with their layouts and typed
 * fields, look up the metadata met so far, and learn what was damaged.
 *
 * Memory stays bounded by one chunk plus the metadata tables, whatever the
 * file size. A damaged file never makes a call fail or read out of bounds:
 * intact chunks are returned, damaged stretches are listed (ltr_trace_damage_*).
 *
 * Pointers returned by this API stay valid until ltr_trace_rewind or
 * ltr_trace_close, except the event from ltr_trace_next, valid until the next call.
 */
#ifndef LTR_TRACE_H
#define LTR_TRACE_H

#include <ltr/common.h>

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ltr_trace ltr_trace;

/* A provider as the trace describes it (provider.h's ltr_provider is the
 * writer's). When a layout names a GUID no PROVIDER record described (yet),
 * the provider is listed with named = 0 and the GUID text as its name. */
typedef struct ltr_trace_provider {
    ltr_guid guid;
    const char *name;
    int named;
    uint64_t events; /* events of this provider read so far */
} ltr_trace_provider;

typedef struct ltr_field {
    const char *name;
    ltr_type type;
} ltr_field;

typedef struct ltr_layout {
    uint32_t id;
    const ltr_trace_provider *provider;
    uint16_t event_id;
    uint8_t level, opcode;
    uint64_t keywords;
    const char *name;
    uint16_t field_count;
    const ltr_field *fields;
    uint64_t events; /* events of this layout read so far */
} ltr_layout;

/* A process. Events of a pid no PROCESS record described create an entry with
 * known = 0 (exe "", no argv) so their count is kept. A later PROCESS record for
 * the same pid (after exec) updates the entry. */
typedef struct ltr_process {
    uint32_t pid, ppid;
    uint64_t start_ts;
    const char *exe;
    uint32_t argc;
    const char *const *argv;
    int known;
    uint64_t events;
} ltr_process;

/* A thread, keyed by its pid and tid; known = 0 as for processes. */
typedef struct ltr_thread {
    uint32_t pid, tid;
    uint64_t ts;
    const char *name;
    int known;
    uint64_t events;
} ltr_thread;

/* A call stack of the heap agent (METADATA kinds FRAME_NODES, STACK or
 * STACK_REF, docs/heap-events.md): return addresses, innermost first. Stack
 * ids are per process. */
typedef struct ltr_stack {
    uint32_t pid, id;
    uint16_t frame_count;
    const uint64_t *frames;
} ltr_stack;

/* A PT_LOAD segment of a module, runtime addresses [start, end). */
typedef struct ltr_segment {
    uint64_t start, end, file_offset;
    uint8_t flags; /* bit0 r, bit1 w, bit2 x */
} ltr_segment;

/* An ELF object loaded (event 1) or unloaded (event 2) in a process
 * (METADATA kind MODULE). ELF virtual address = runtime address - load_bias. */
typedef struct ltr_module {
    uint32_t pid;
    uint64_t ts;
    uint8_t event;
    uint64_t load_bias;
    const char *path;
    uint8_t build_id_len;
    const uint8_t *build_id;
    uint16_t segment_count;
    const ltr_segment *segments;
} ltr_module;

/* One event. payload/field_offsets point into the reader's chunk buffer. */
typedef struct ltr_event {
    uint64_t ts;          /* CLOCK_MONOTONIC ns */
    uint32_t pid, tid;    /* of the producer thread */
    uint16_t collector;
    uint16_t block_flags;
    uint64_t buffer_seq;  /* sequence number of its buffer within the collector */
    const ltr_layout *layout;
    const uint8_t *payload;
    uint32_t payload_size;
    /* layout->field_count + 1 entries: where each field starts in payload,
     * then where the last one ends. Checked against payload_size by the reader. */
    const uint32_t *field_offsets;
    /* The addresses of the layout's pnew and pref fields (format 4: at most
     * one of each), resolved by the reader; read them with ltr_event_field
     * like any other field. */
    uint64_t addresses[2];
} ltr_event;

/* A typed field value. Strings and blobs point into the payload (no NUL).
 * Varint fields come as the type they stand for: uvar as u64, ivar as i64,
 * pvar as pointer (the layout's field still names the stored type).
 * (Named ltr_trace_value, not ltr_value, which is provider.h's: a program may
 * include both. __extension__: the union is unnamed, C11 and C++ but not C99.) */
typedef struct ltr_trace_value {
    ltr_type type;
    __extension__ union {
        uint64_t u; /* u8..u64, pointer, bool (0/1) */
        int64_t i;  /* i8..i64 */
        double f;   /* f64 */
        struct {
            const uint8_t *data;
            size_t len;
        } bytes;    /* string, blob */
    };
} ltr_trace_value;

typedef enum ltr_damage_kind {
    LTR_DAMAGE_BAD_HEADER = 1, /* bytes where a chunk header should be but is not (bad magic or CRC) */
    LTR_DAMAGE_BAD_CRC = 2,    /* payload CRC mismatch */
    LTR_DAMAGE_TRUNCATED = 3,  /* the file ends inside a chunk */
    LTR_DAMAGE_DECOMPRESS = 4, /* payload does not decompress to its raw size */
    LTR_DAMAGE_BAD_RECORD = 5, /* chunk intact but its content does not parse */
    LTR_DAMAGE_MISSING = 6,    /* chunk sequence numbers skip: whole chunks lost */
    LTR_DAMAGE_FORGED = 7,     /* a well-formed record about a process that another traced program of the
                                * session wrote (it contradicts what that process tells): left out, the
                                * process's own taken; nothing else of the trace is missing */
} ltr_damage_kind;

typedef struct ltr_damage {
    ltr_damage_kind kind;
    uint64_t offset;    /* file offset of the damaged chunk or stretch */
    uint64_t length;    /* bytes of the file skipped (0 for BAD_RECORD and MISSING) */
    int64_t chunk_seq;  /* chunk sequence number, -1 if unknown */
    uint64_t count;     /* occurrences merged into this entry (bad records of one chunk) */
    char detail[160];   /* what exactly was wrong */
} ltr_damage;

typedef struct ltr_collector_counters {
    uint16_t collector;
    const char *name;
    uint32_t buffer_size, buffers;
    uint64_t events_written, events_lost, buffers_written, buffers_lost;
    uint64_t events_overwritten, buffers_overwritten;
    /* Places of the session's shared memory the recorder found written over
     * (by a traced program) and skipped; 0 in traces of older recorders. */
    uint64_t shm_damage;
    /* Metadata records (layouts, stacks' frame nodes, modules, thread
     * names) that producers could not append because the session's
     * metadata region held too much the recorder had not read yet: the
     * stacks and modules they told are missing from the trace. Collector
     * 0 holds the session's; 0 in traces of older recorders. */
    uint64_t metadata_lost;
    /* Of events_lost, those the recorder took out of the buffers but could
     * not write to the file: a write that failed (a full disk, an I/O
     * error), metadata they need that such a write lost, or the session's
     * --max-file-size reached. Counted apart so that their cause is said
     * (they were once said to have found no free buffer); 0 in traces of
     * older recorders, which counted them in events_lost alone. */
    uint64_t events_unwritten;
} ltr_collector_counters;

typedef struct ltr_process_lost {
    uint16_t collector;
    uint32_t pid;
    uint64_t events_lost, buffers_lost;
} ltr_process_lost;

/* What was read so far (after ltr_trace_scan: the whole file). */
typedef struct ltr_trace_summary {
    uint64_t file_size;
    uint64_t chunks;     /* intact chunks */
    uint64_t blocks;     /* buffer blocks */
    uint64_t events;
    uint64_t first_ts, last_ts; /* smallest and largest event timestamp; 0 if no events */
    uint64_t damage;     /* damage occurrences (sum of counts) */
    int complete;        /* END chunk seen */
    /* Events not read because the reader never met their layout, in a
     * trace whose counters say metadata records were lost while recording
     * (a LAYOUT among them): lost, not damage. Known at the end of the
     * file; until then, and in a trace that lost no metadata, such events
     * are damage (BAD_RECORD). */
    uint64_t events_layout_lost;
} ltr_trace_summary;

/* Opens a trace and reads up to its first intact chunk (normally HEADER).
 * Fails with a message naming the file for: a missing or unreadable file, a file
 * that is not an ltr trace, a newer format version. Returns 0 or -errno. */
LTR_API int ltr_trace_open(const char *path, ltr_trace **out, ltr_error *err);
LTR_API void ltr_trace_close(ltr_trace *t);
LTR_API const char *ltr_trace_path(const ltr_trace *t);
LTR_API uint32_t ltr_trace_version(const ltr_trace *t);

/* Next event in file order: returns 1 and sets *ev, 0 at the end of the file,
 * or -errno on an I/O error (err filled). Damage is not an error: it is recorded
 * and reading goes on with the next intact chunk. */
LTR_API int ltr_trace_next(ltr_trace *t, const ltr_event **ev, ltr_error *err);
/* Back to the first chunk; forgets metadata, counts, damage and key/values. */
LTR_API int ltr_trace_rewind(ltr_trace *t, ltr_error *err);
/* Rewinds, reads the whole file once, and summarises it; afterwards the tables
 * hold everything with their per-provider/layout/process/thread event counts. */
LTR_API int ltr_trace_scan(ltr_trace *t, ltr_trace_summary *out, ltr_error *err);
LTR_API void ltr_trace_summarize(const ltr_trace *t, ltr_trace_summary *out);

/* HEADER and END key/value lists (text values). A later chunk of the same kind
 * overrides a key. */
typedef enum ltr_kv_list { LTR_KV_HEADER = 1, LTR_KV_END = 5 } ltr_kv_list;
LTR_API const char *ltr_trace_kv(const ltr_trace *t, ltr_kv_list list, const char *key);
LTR_API size_t ltr_trace_kv_count(const ltr_trace *t, ltr_kv_list list);
/* Returns 0 and the i-th entry, or -1 if i is out of range. */
LTR_API int ltr_trace_kv_at(const ltr_trace *t, ltr_kv_list list, size_t i, const char **key,
                            const char **value);
/* clock.start_ns of the header if present, else the timestamp of the first event
 * read, else 0: the origin that "seconds since trace start" count from. */
LTR_API uint64_t ltr_trace_origin_ns(const ltr_trace *t);
/* END chunk seen so far: the trace is complete rather than cut short. */
LTR_API int ltr_trace_complete(const ltr_trace *t);

/* Metadata tables, in the order first met. */
LTR_API size_t ltr_trace_provider_count(const ltr_trace *t);
LTR_API const ltr_trace_provider *ltr_trace_provider_at(const ltr_trace *t, size_t i);
LTR_API const ltr_trace_provider *ltr_trace_provider_find(const ltr_trace *t, const ltr_guid *guid);
LTR_API size_t ltr_trace_layout_count(const ltr_trace *t);
LTR_API const ltr_layout *ltr_trace_layout_at(const ltr_trace *t, size_t i);
LTR_API const ltr_layout *ltr_trace_layout_find(const ltr_trace *t, uint32_t id);
LTR_API size_t ltr_trace_process_count(const ltr_trace *t);
LTR_API const ltr_process *ltr_trace_process_at(const ltr_trace *t, size_t i);
LTR_API const ltr_process *ltr_trace_process_find(const ltr_trace *t, uint32_t pid);
LTR_API size_t ltr_trace_thread_count(const ltr_trace *t);
LTR_API const ltr_thread *ltr_trace_thread_at(const ltr_trace *t, size_t i);
/* Threads are per process: a tid is the thread's in its process's own pid
 * namespace, so two containers' processes may both have a thread 1. */
LTR_API const ltr_thread *ltr_trace_thread_find(const ltr_trace *t, uint32_t pid, uint32_t tid);

/* Stacks and modules met so far. A later STACK record for the same (pid, id)
 * replaces the earlier one (a new image after exec). A stack told by
 * FRAME_NODES records is built by ltr_trace_stack_find the first time it is
 * asked for (NULL while a node of its path is unknown), and listed by
 * ltr_trace_stack_count/at from then on. Modules are listed in
 * the order met, loads and unloads alike; a reader that symbolizes picks, for
 * an address of a pid at time ts, the latest load before ts not unloaded. */
LTR_API size_t ltr_trace_stack_count(const ltr_trace *t);
LTR_API const ltr_stack *ltr_trace_stack_at(const ltr_trace *t, size_t i);
LTR_API const ltr_stack *ltr_trace_stack_find(const ltr_trace *t, uint32_t pid, uint32_t id);
LTR_API size_t ltr_trace_module_count(const ltr_trace *t);
LTR_API const ltr_module *ltr_trace_module_at(const ltr_trace *t, size_t i);

/* Counters of the last COUNTERS chunk read; has_counters is 0 if none was.
 * These pointers are valid until the next COUNTERS chunk is read. */
LTR_API int ltr_trace_has_counters(const ltr_trace *t);
LTR_API size_t ltr_trace_collector_count(const ltr_trace *t);
LTR_API const ltr_collector_counters *ltr_trace_collector_at(const ltr_trace *t, size_t i);
LTR_API size_t ltr_trace_process_lost_count(const ltr_trace *t);
LTR_API const ltr_process_lost *ltr_trace_process_lost_at(const ltr_trace *t, size_t i);

/* Damage found so far. At most 1000 entries are kept; summary.damage counts all. */
LTR_API size_t ltr_trace_damage_count(const ltr_trace *t);
LTR_API const ltr_damage *ltr_trace_damage_at(const ltr_trace *t, size_t i);
LTR_API const char *ltr_damage_kind_name(ltr_damage_kind kind); /* "bad CRC", "truncated", ... */
/* One line for people: "offset N, chunk S: KIND: detail (N times)". */
LTR_API void ltr_damage_format(const ltr_damage *d, char *buf, size_t cap);

/* Typed field access. All return 0 or a negative errno: -ERANGE for an index
 * past the layout, -ENOENT for an unknown name, -EINVAL for a type that does not
 * convert (get_u64 takes unsigned ints, pointer and bool; get_i64 any integer that
 * fits; get_f64 any number). */
LTR_API int ltr_event_field(const ltr_event *ev, unsigned index, ltr_trace_value *out);
LTR_API int ltr_event_field_index(const ltr_event *ev, const char *name); /* index or -ENOENT */
LTR_API int ltr_event_get_u64(const ltr_event *ev, const char *name, uint64_t *out);
LTR_API int ltr_event_get_i64(const ltr_event *ev, const char *name, int64_t *out);
LTR_API int ltr_event_get_f64(const ltr_event *ev, const char *name, double *out);
LTR_API int ltr_event_get_str(const ltr_event *ev, const char *name, const char **s, size_t *len);
LTR_API int ltr_event_get_blob(const ltr_event *ev, const char *name, const uint8_t **p, size_t *len);

LTR_API const char *ltr_type_name(ltr_type type); /* "u32", "string", ...; "?" if unknown */

/* Formatting, for dump and every other tool that prints events.
 * Text: "<seconds since origin, 9 decimals> <pid>/<tid> <provider>/<event> name=value ..."
 * with strings quoted and escaped, blobs in hex, pointers 0x..., bools true/false.
 * JSON: one object on one line, no newline at the end:
 * {"t":1.000000123,"ts":N,"pid":N,"tid":N,"collector":N,"provider":"..","event":"..",
 *  "id":N,"level":N,"fields":{"name":value,...}}
 * u64 as numbers, pointers as "0x.." strings, blobs as hex strings, f64 NaN/Inf as
 * strings. Both return 0, or -EIO if the stream is in error. */
LTR_API int ltr_event_print_text(FILE *out, const ltr_event *ev, uint64_t origin_ns);
LTR_API int ltr_event_print_json(FILE *out, const ltr_event *ev, uint64_t origin_ns);
/* A JSON string literal with quotes: control characters escaped, invalid UTF-8
 * bytes as \ufffd. */
LTR_API void ltr_print_json_string(FILE *out, const void *s, size_t len);
/* Seconds since origin with 9 decimals, signed ("-0.000000100" for earlier). */
LTR_API void ltr_print_seconds(FILE *out, uint64_t ts, uint64_t origin_ns);

#ifdef __cplusplus
}
#endif
#endif
