/*
 * format/reader.h — internals of the trace reader (include/ltr/trace.h), shared
 * by its files: reader.c (chunks, damage, event stream), meta.c (metadata,
 * counters and key/value tables), fields.c (payload checking and field
 * access), print.c (text and JSON). Not installed; tests may include it.
 */
#ifndef LTR_FORMAT_READER_H
#define LTR_FORMAT_READER_H

#include <ltr/trace.h>

#include "format/blocks.h"
#include "format/chunk.h"
#include "format/columns.h"
#include "base/hmap.h"
#include "base/records.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ZSTD_DCtx_s;

/* An open-addressing map from u32 ids (layout ids, pids, tids) to pointers. */
typedef struct ltr_idmap {
    uint32_t *keys;
    void **vals; /* NULL = empty slot */
    size_t cap, n;
} ltr_idmap;

void *ltr_idmap_get(const ltr_idmap *m, uint32_t key);
int ltr_idmap_put(ltr_idmap *m, uint32_t key, void *val); /* 0 or -ENOMEM */
void ltr_idmap_free(ltr_idmap *m);
/* key's table (of size bytes, zeroed when new) in map of per-key tables: a
 * pid's stacks, frame nodes, modules or threads. NULL without memory. */
void *ltr_idmap_table(ltr_idmap *map, uint32_t key, size_t size);
/* Frees a map of per-key ltr_idmaps (made by ltr_idmap_table), and them. */
void ltr_idmap_free_maps(ltr_idmap *map);

/* A growable array of pointers, in insertion order. */
typedef struct ltr_ptrvec {
    void **v;
    size_t n, cap;
} ltr_ptrvec;

int ltr_ptrvec_push(ltr_ptrvec *p, void *x); /* 0 or -ENOMEM */

/* Bounds-checked reading of a record body: any read past the end sets bad and
 * yields zeros, so a parser checks `bad` once at the end. */
typedef struct ltr_cursor {
    const uint8_t *p;
    size_t len, pos;
    int bad;
    size_t slack; /* bytes readable past len (the rest of the chunk), for reading 8 at a time; 0 when unsaid */
} ltr_cursor;

const uint8_t *ltr_cursor_take(ltr_cursor *c, size_t n); /* NULL (and bad) if fewer left */
uint8_t ltr_cursor_u8(ltr_cursor *c);
uint16_t ltr_cursor_u16(ltr_cursor *c);
uint32_t ltr_cursor_u32(ltr_cursor *c);
uint64_t ltr_cursor_u64(ltr_cursor *c);
/* A `str` (u16 length + bytes) as a new NUL-terminated string; NULL if bad or no memory. */
char *ltr_cursor_str(ltr_cursor *c);

typedef struct ltr_layout_rec {
    ltr_layout pub;
    ltr_trace_provider *prov;
    ltr_field *fields;
    uint32_t *fixed_offsets; /* field_count + 1 offsets if every field has a fixed size */
    int32_t pnew, pref;      /* index of its pnew and of its pref field (format 4), -1: none */
    int32_t msize;           /* index of its allocator model size field (ltr_layout_model_size), -1: none */
} ltr_layout_rec;

/* refseq.c: the address references of every (collector, pid) (blocks.h). */
typedef struct ltr_refs {
    an_hmap seqs;         /* collector << 32 | pid -> its struct ltr_refseq */
    uint32_t collectors;  /* the highest collector number seen + 1 */
} ltr_refs;
void ltr_refs_init(ltr_refs *r);
void ltr_refs_free(ltr_refs *r); /* and ready for use again */
/* The sequences of a process that ended, in every collector: a file-mode
 * trace has no block of it after its PROCESS_END (the recorder writes that
 * record after its last buffers; the writer never puts metadata before
 * events it holds). Whether one was `keep`, a pointer the caller holds. */
int ltr_refs_drop_pid(ltr_refs *r, uint32_t pid, const struct ltr_refseq *keep);
/* The sequences a block of (collector, pid) continues, their counts set to
 * the block's bases; its flags say which codes it uses (LTR_BLOCK_FLAG_MODEL:
 * the allocator model, format 5; _NEXT: and the next address, format 6;
 * _DELTA: and addresses stored as differences, format 7); NULL without
 * memory. */
struct ltr_refseq *ltr_refs_block(ltr_refs *r, uint16_t collector, uint32_t pid, uint64_t alloc_base,
                                  uint64_t free_base, uint16_t flags);
/* A record of the block could not be read: resolve and append nothing more until the next block. */
void ltr_refseq_spoil(struct ltr_refseq *s);

/* An exec's end waiting for the PROCESS record of its image (start). */
typedef struct ltr_exec_end_wait {
    ltr_process_end end;
    uint64_t start;
} ltr_exec_end_wait;

typedef struct ltr_process_rec {
    ltr_process pub;
    char *exe;
    char **argv;
    /* the ts of a PROCESS_END of the pid read since this record (0: none).
     * Not the file's order alone: a save's writer puts a batch's ends just
     * after the blocks pending (writer.c, split_ends), so an exec'd image's
     * end can come before the PROCESS record that started that image */
    uint64_t end_ts;
    /* an exec's end named this record's image: the next PROCESS record of
     * the pid is another image, whether or not this one had stacks */
    int exec_ended;
    /* images of the pid replaced so far (ltr_process_image entries): the
     * analysis's number of the current one; and the image before it, its
     * start and number, for an exec's end read after the next PROCESS */
    uint32_t images, prev_images;
    uint64_t prev_start;
} ltr_process_rec;

/* The trace's header and end key/value lists, parsed: a later entry of a key
 * replaces the earlier one, and every string stays put until rewind or close
 * (ltr_trace_kv hands them out). Not the control protocol's ltr_kvlist
 * (recorder/client.h), which is one response as it came over the socket. */
typedef struct ltr_kv_table {
    char **keys, **vals;
    size_t n, cap;
} ltr_kv_table;

#define LTR_MAX_DAMAGE_ENTRIES 1000

/* Events of a chunk whose layout id the reader did not know: damage, unless
 * the trace says metadata records were lost while recording (its counters,
 * read last), and their LAYOUT records with them (ltr_trace_settle). */
typedef struct ltr_layout_gap {
    uint64_t chunk_off;
    int64_t chunk_seq;
    size_t at; /* the first one's raw offset */
    uint64_t count;
} ltr_layout_gap;

/* readahead.c: a chunk as fetched from the file (read, CRC checked,
 * decompressed), before reader.c applies it: its damage, or its content. */
typedef enum ltr_fetch_kind {
    LTR_FETCH_END,          /* pos is at or past the end of the file */
    LTR_FETCH_ERROR,        /* err = -errno (I/O, memory): nothing moved */
    LTR_FETCH_SHORT_HEADER, /* the file ends inside a chunk header (got bytes) */
    LTR_FETCH_NO_HEADER,    /* no valid header at pos (why); next = the next one, found, or the end */
    LTR_FETCH_BAD_HEADER,   /* h decoded but unusable (text says why) */
    LTR_FETCH_TRUNCATED,    /* the file ends inside the payload (got bytes of it there) */
    LTR_FETCH_BAD_CRC,
    LTR_FETCH_BAD_ZSTD,     /* why = zstd's error, or "wrong size" */
    LTR_FETCH_OK,           /* raw holds raw_len bytes */
    LTR_FETCH_YOURS,        /* the header is usable (h, next), the rest is the reader's to fetch (readahead.c) */
} ltr_fetch_kind;

/* The values of an EVENTS chunk's column blocks, decoded by the read-ahead
 * thread after it fetched the chunk (ltr_trace_open_decoding): per block,
 * where its column data is and its columns' values (ltr_colvals). */
typedef struct ltr_ahead_block {
    size_t at, len;   /* the column data's offset in the payload, and bytes */
    uint32_t count;   /* the block's records */
    size_t ncols, col0; /* its columns, from cols[col0] */
} ltr_ahead_block;

typedef struct ltr_ahead_off {
    size_t v, big;
} ltr_ahead_off;

typedef struct ltr_ahead {
    ltr_coldecoder dec;         /* the thread's own, to frame the columns */
    uint32_t *vals;
    size_t nvals, capvals;
    uint64_t *big;
    size_t nbig, capbig;
    ltr_colvals *cols;
    ltr_ahead_off *offs;        /* each column's first values, while the arrays may still move */
    size_t ncols, capcols, capoffs;
    ltr_ahead_block *blocks;
    size_t nblocks, capblocks;
} ltr_ahead;
/* Decodes the column blocks of an EVENTS payload into a (emptied first);
 * a block that does not frame, or runs out of memory, is left to its reader. */
void ltr_ahead_decode(ltr_ahead *a, const uint8_t *raw, size_t len);
void ltr_ahead_free(ltr_ahead *a);

typedef struct ltr_fetch {
    ltr_fetch_kind kind;
    int err;
    uint64_t pos, next;     /* the chunk's offset, and where the next one is looked for */
    ltr_chunk_header h;
    int found;
    uint64_t got;
    const char *why;
    char text[96];
    uint8_t *cbuf, *raw;    /* reused from fetch to fetch */
    size_t ccap, rawcap, raw_len;
    int decode_ahead;       /* the read-ahead thread decodes column values (ahead) */
    ltr_ahead ahead;        /* of this EVENTS chunk, when decode_ahead */
} ltr_fetch;

/* pread up to len bytes; returns the count (short only at end of file) or -errno. */
ssize_t ltr_read_at(int fd, void *buf, size_t len, uint64_t off);
void ltr_fetch_chunk(int fd, uint64_t file_size, uint64_t pos, struct ZSTD_DCtx_s *dctx, ltr_fetch *f);
void ltr_fetch_free(ltr_fetch *f);

/* A thread fetching the chunks from pos on, a few ahead of the reader, with
 * its own buffers and zstd context. NULL if it could not start. */
typedef struct ltr_readahead ltr_readahead;
ltr_readahead *ltr_readahead_start(int fd, uint64_t file_size, uint64_t pos, int decode_ahead);
/* The next chunk in file order, waiting for it; valid until the next call or
 * the stop. NULL after the thread's END or ERROR fetch was handed out. */
const ltr_fetch *ltr_readahead_next(ltr_readahead *ra);
/* Stops and joins the thread, frees everything (ra may be NULL). */
void ltr_readahead_stop(ltr_readahead *ra);

struct ltr_trace {
    int fd;
    char *path;
    uint32_t version;
    uint64_t file_size;
    uint64_t pos; /* file offset of the next chunk */
    uint64_t expect_seq;
    struct ZSTD_DCtx_s *dctx;
    ltr_fetch own;               /* the chunk fetched without the read-ahead thread */
    ltr_readahead *ra;           /* the read-ahead thread of a sequential scan, or NULL */
    int readahead;               /* -1 automatic, 0 never, 1 always (ltr_trace_set_readahead) */
    const uint8_t *raw;          /* the current chunk's decompressed payload (own's or a slot's) */
    size_t raw_len;
    int decode_ahead;            /* ltr_trace_open_decoding */
    const ltr_ahead *ahead;      /* the current chunk's column values decoded ahead, or NULL */
    size_t ahead_next;           /* its first block not met yet */

    /* the EVENTS chunk being streamed */
    int in_events;
    uint64_t chunk_off, chunk_seq;
    size_t ev_pos;               /* next block in raw */
    int blk_active;
    const uint8_t *blk_base;     /* where the block's records are: raw, or coldec.rows of a column block */
    size_t blk_pos, blk_end;     /* next event record, end of the block's records (from blk_base) */
    size_t blk_at;               /* raw offset of the block's records or column data */
    int blk_columns;             /* a column block (LTR_BLOCK_FLAG_COLUMNS), read from its decoded records */
    ltr_coldecoder coldec;
    uint32_t blk_count, blk_seen;
    int blk_compact;             /* compact records (LTR_BLOCK_FLAG_COMPACT) */
    uint64_t blk_ts;             /* compact: timestamp of the previous record */
    struct ltr_refseq *blk_refs; /* its process's address references (LTR_BLOCK_FLAG_REFS), or NULL */
    ltr_refs refs;
    ltr_process *blk_proc;
    ltr_thread *blk_thread;
    ltr_event ev;
    uint32_t *offsets;           /* field offsets of variable-size layouts */
    size_t offcap;

    /* tables */
    ltr_ptrvec providers, layouts, processes, threads;
    ltr_idmap layout_map, process_map;
    /* pid -> ltr_idmap of tid -> ltr_thread: a tid is the thread's in its
     * process's own pid namespace (docs/trace-format.md), so two containers'
     * tid 1 are two threads. */
    ltr_idmap thread_pids;
    ltr_layout_rec *last_layout;
    ltr_ptrvec stacks, modules;  /* heapmeta.c */
    ltr_idmap stack_pids;        /* pid -> ltr_idmap of stack id -> ltr_stack */
    ltr_idmap node_pids;         /* pid -> its frame nodes (FRAME_NODES records) */
    ltr_idmap module_pids;       /* pid -> the segments its image has loaded (MODULE records) */
    ltr_kv_table header_kv, end_kv;
    ltr_ptrvec graveyard;        /* replaced strings, kept until rewind/close */
    ltr_collector_counters *collectors;
    size_t ncollectors;
    ltr_process_lost *plost;
    size_t nplost;
    ltr_process_end *ends;       /* PROCESS_END records, in file order */
    size_t nends;
    ltr_exec_end_wait *exec_waits; /* exec's ends read before their image's PROCESS record (meta.c) */
    size_t nexec_waits;
    ltr_process_image *images;   /* images replaced (meta.c, parse_process) */
    size_t nimages;
    ltr_ptrvec image_threads;    /* their threads as named then: ltr_thread, pid = the image's key */
    int has_counters;

    ltr_damage *damage;
    size_t ndamage;
    ltr_layout_gap *layout_gaps; /* per chunk, in file order; settled at the end of the file */
    size_t nlayout_gaps;
    uint64_t record_damage;      /* of sum.damage, records of intact chunks (BAD_RECORD, FORGED): the chunks are whole */
    uint64_t forged;             /* of record_damage, FORGED */
    ltr_trace_summary sum;
    uint64_t first_event_ts;
    int have_event;
    uint64_t symbol_entries;
    int metadata_only;           /* EVENTS chunks are skipped (symread.c) */
    void (*addr_hook)(void *ctx, uint32_t pid, uint64_t ip); /* each frame address met, as met */
    void *addr_hook_ctx;
};

/* Records damage; a BAD_RECORD or FORGED at the same chunk as the last entry only bumps its count. */
void ltr_trace_add_damage(ltr_trace *t, ltr_damage_kind kind, uint64_t off, uint64_t len,
                          int64_t seq, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* The same for a record of the chunk being read: at the chunk, its detail
 * "chunk SEQ: " and fmt's text (every record damage says its chunk so). */
void ltr_trace_chunk_damage(ltr_trace *t, ltr_damage_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* symread.c: the intact chunks of a type, found by walking the chunk
 * headers ahead of a scan (32 bytes read per chunk, on past damage as the
 * reader goes), each payload handed to fn: what fn returns is summed, and
 * a negative return ends the walk. The sum, or -errno on an I/O error. */
typedef long (*ltr_walk_fn)(void *ctx, const uint8_t *raw, size_t len);
long ltr_trace_walk_chunks(ltr_trace *t, uint16_t type, ltr_walk_fn fn, void *ctx);
/* symread.c: a SYMBOLS chunk met by the scan, checked and counted. */
void ltr_symbols_chunk(ltr_trace *t, const uint8_t *p, size_t len);

/* meta.c: chunk contents. Each records its own damage (as BAD_RECORD at the current chunk). */
void ltr_meta_parse(ltr_trace *t, const uint8_t *p, size_t len);
/* A LAYOUT record's body (len bytes from its id on) as a reader takes it:
 * 0 with its field count in *count and the first max field types in types,
 * or -1 when a reader refuses it (cut short, a type it does not know, two
 * pnew or pref fields). For ltr merge, which keeps what a reader keeps. */
int ltr_layout_body_types(const uint8_t *body, size_t len, uint8_t *types, uint32_t max, uint32_t *count);
void ltr_counters_parse(ltr_trace *t, const uint8_t *p, size_t len);
void ltr_kv_parse(ltr_trace *t, ltr_kv_table *list, const uint8_t *p, size_t len);
/* Placeholders for ids events use without a record; NULL only without memory. */
ltr_trace_provider *ltr_meta_provider(ltr_trace *t, const ltr_guid *guid);
ltr_process *ltr_meta_process(ltr_trace *t, uint32_t pid);
ltr_thread *ltr_meta_thread(ltr_trace *t, uint32_t pid, uint32_t tid);
void ltr_meta_free(ltr_trace *t); /* every table, counters and key/value list */
/* heapmeta.c: STACK, FRAME_NODES and MODULE records of the heap agent. */
int ltr_meta_parse_stack(ltr_trace *t, ltr_cursor *c);
int ltr_meta_parse_stack_ref(ltr_trace *t, ltr_cursor *c);
int ltr_meta_parse_frame_nodes(ltr_trace *t, ltr_cursor *c);
/* A PROCESS record for pid: a new image (or process) numbers its nodes anew. */
/* The pid's frame nodes and stacks so far are an old image's: kept under
 * key (ltr_process_image), the pid's own start empty. */
void ltr_heapmeta_new_image(ltr_trace *t, uint32_t pid, uint32_t key);
/* A PROCESS record of pid: its modules are the new image's from here on. */
void ltr_heapmeta_modules_new_image(ltr_trace *t, uint32_t pid);
/* Whether pid's image told stacks, to keep apart when a PROCESS record
 * describes it again: frame nodes, or since format 3 STACK records too (a
 * format 2 trace's are replaced one by one). */
int ltr_heapmeta_has_stacks(const ltr_trace *t, uint32_t pid);
int ltr_meta_parse_module(ltr_trace *t, ltr_cursor *c);
void ltr_heapmeta_free(ltr_trace *t);


/* fields.c: where each field of a payload starts; returns the offsets array
 * (the layout's fixed one or scratch), or NULL if the payload is too short. */
/* Size of the field of that type at p (left bytes), -1 if it runs past them
 * or holds a bad varint. */
int64_t ltr_field_size(ltr_type type, const uint8_t *p, size_t left);
/* Resolves the current event's pnew and pref fields into ev.addresses and
 * appends their values to the block's references; -1 when one cannot be
 * resolved (the values read are appended all the same). */
int ltr_event_refs(ltr_trace *t, const ltr_layout_rec *l);
const uint32_t *ltr_payload_offsets(ltr_trace *t, const ltr_layout_rec *l, const uint8_t *p,
                                    uint32_t size);

#endif
