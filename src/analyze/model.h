/*
 * analyze/model.h — the heap model: turns Alloc/Free/Realloc events into what
 * "Analysis semantics" (shared/PRODUCT.md) asks for over a time window: per
 * process and per stack, the four impacting types AIFI, AIFO, AOFI and AOFO,
 * outstanding bytes and their peak, allocation calls, temporary allocations
 * and a size histogram. It knows nothing of the trace file: analyze.c feeds it.
 *
 * Memory is bounded by the live allocations and the stacks: a freed block
 * leaves no trace in the model beyond the counters of its stack.
 *
 * Events arrive in time order: the sink (sink.h, order.h) merges the
 * threads' streams, which the file interleaves (within one timestamp,
 * threads' events in no known order: ties.h). Beyond what that stage can
 * hold an event may still come late (m->late); so a free met before its
 * allocation is kept aside and paired when the allocation turns up; what is
 * never paired is a free of an allocation the trace never saw, counted apart.
 */
#ifndef LTR_ANALYZE_MODEL_H
#define LTR_ANALYZE_MODEL_H

#include "analyze/files.h"
#include "analyze/live.h"
#include "analyze/vmem.h"
#include "base/hmap.h"

#include <stddef.h>
#include <stdint.h>

enum an_type { AN_AIFI, AN_AIFO, AN_AOFI, AN_AOFO, AN_NTYPES };

#define AN_DENSE_STACKS 65536 /* stack ids below this + 8 per stack seen are indexed densely */
#define AN_HIST_BUCKETS 65 /* 0, 1, 2-3, 4-7, ..., 2^63.. */

typedef struct an_amount {
    uint64_t count, bytes;
} an_amount;

/* What one call stack of one process did. */
typedef struct an_stack {
    uint32_t pid, stack_id; /* stack_id 0 = allocations without a stack */
    uint32_t key;           /* where the trace keeps its frames: the pid, or its image's key once replaced */
    uint64_t first_ts;      /* first allocation seen from it */
    an_amount type[AN_NTYPES];
    an_amount calls;        /* allocation calls inside the window */
    uint64_t temporary;     /* of those, freed right away (see model.c) */
    /* when the first and the last of its AIFO blocks (allocated inside the
     * window, outstanding at its end) were allocated; 0: none */
    uint64_t held_first, held_last;
    /* its own blocks freed inside the window by a free (a realloc's move and
     * a temporary aside): how many and their bytes, when the youngest of
     * them had been allocated and when the last of those frees came. A
     * cache that turns over frees its oldest as it allocates (rank.c,
     * an_stack_growth). */
    an_amount freed;
    uint64_t freed_born_last, freed_last;
    /* with a series: its blocks by (allocation, free) time cell (an_cell), so
     * that any range of cells has its four types exactly (ltr report) */
    an_hmap *cells;
} an_stack;

/* A stack's blocks allocated in time cell `alloc` and freed in cell `freed`
 * (AN_CELL_NEVER: outstanding at the window's end): key alloc << 32 | freed.
 * The cells split the window in at most AN_CELLS of an_model.cell_width
 * from an_model.cell_base, a width that doubles as the trace goes on. */
typedef struct an_cell {
    uint64_t key;
    uint64_t count, bytes;
} an_cell;
#define AN_CELLS 64
#define AN_CELL_NEVER 0xffffffffu

/* Outstanding bytes over time (when the model keeps a series, an_model.series):
 * per bucket of `width` ns, the highest outstanding in it. */
typedef struct an_point {
    uint64_t ts, bytes; /* the bucket's start; the highest outstanding bytes in it */
} an_point;
#define AN_SERIES_MAX 2048 /* points per process; past it buckets double in width */

/* What the model keeps of one time, at most (model.c): the frees it may
 * take back, and the events held back (past it, settled at once): a trace
 * whose events all have one time stays bounded in memory and time. */
#define AN_FREED_MAX 65536
#define AN_TIES_HOLD 65536

typedef struct an_proc {
    uint32_t pid;
    an_lives live;       /* address -> an_live (live.h) */
    an_hmap pending;     /* address -> free met before its allocation */
    an_hmap threads;     /* tid -> last allocation of the thread */
    an_hmap stack_index; /* stack id -> index in stacks, for ids too large for dense */
    uint32_t *dense;     /* stack id -> index in stacks + 1 (0 = not seen): the agent numbers stacks 1, 2, ... */
    size_t ndense;
    int unindexed;       /* dense and stack_index let go at its end (model.c, proc_end): made again if needed */
    /* events held back at tie_ts: those of the addresses whose events at
     * that time did not alternate in the order met, until an order of the
     * threads' events that does is found (model.c, ties.h) */
    struct an_tie_op *tie_ops;
    size_t tied, captied;
    an_hmap contested;   /* address -> its rank among those held back */
    uint64_t tie_ts;
    /* the frees modelled at freed_ts (a process of more than one thread),
     * to take back (model.c, tie_retract) */
    struct an_freed_at *freed_at;
    size_t nfreed_at, capfreed_at;
    uint64_t freed_ts;
    struct an_freed_ix *freed_ix; /* address -> its last in freed_at (model.c) */
    size_t capfreed_ix;
    uint32_t freed_epoch;
    uint32_t last_tid;   /* cache of the threads entry last used */
    struct an_thread *last_thread;
    an_stack *stacks;
    size_t nstacks, capstacks;

    uint64_t allocs, frees;        /* calls inside the window */
    uint64_t alloc_bytes;
    uint64_t unseen_frees;         /* frees inside the window of blocks never seen allocated */
    uint64_t implicit_frees;       /* blocks whose address was allocated again without a free */
    uint64_t cur_bytes, cur_count; /* outstanding now (while reading) */
    uint64_t peak_bytes, peak_ts;  /* highest outstanding inside the window */
    /* outstanding after the last event at peak_ts, what a window to peak_ts
     * holds: times are 100 us apart, and frees of one time may follow its
     * peak (below the peak by their bytes) */
    uint64_t peak_time_end_bytes;
    int peak_set;
    an_amount type[AN_NTYPES];
    uint64_t hist[AN_HIST_BUCKETS];
    uint64_t first_ts, last_ts;    /* of its heap events */
    uint64_t end_ts;               /* when it ended (the trace's PROCESS_END), if ended */
    int ended;                     /* it ended, and no event of it came after (a pid used again) */
    int exec_end;                  /* ended by an exec of a program that never joined the session */
    uint32_t gen;                  /* which image of the pid (AN_GEN_SHIFT) */
    /* once the trace is read: the image an exec replaced, as the trace
     * lists it (ltr_process_image: index + 1; its key); 0: the pid's last */
    uint32_t image_key, image;
    an_point *series;              /* outstanding bytes over time, when kept */
    size_t nseries;
    uint64_t series_width, series_end; /* a bucket's width, and where the last one ends */
} an_proc;

/* The answer to a probe: the process's outstanding bytes at its time
 * (seen = 0: the process had no heap event yet). */
typedef struct an_probe {
    uint64_t index, bytes;
    int seen;
} an_probe;

typedef struct an_model {
    uint64_t from, to; /* window, absolute ns, inclusive */
    an_proc **procs;
    size_t nprocs, capprocs;
    an_proc *last;     /* cache: events come in runs of one process */
    uint64_t cur_bytes, peak_bytes, peak_ts;
    int peak_set;
    int oom;           /* memory ran out: results incomplete */
    uint64_t late;     /* events that came after later ones of their process were modelled (sink.h) */
    uint64_t late_across; /* ...after later ones of other processes only: the total's peak may be off */
    size_t hold_needed; /* with events late: a hold of the order stage under which they would not be (order.h) */
    int unordered;     /* the time-order stage could not run (no memory) */
    an_probe *probes;  /* answered AN_OP_PROBE events, in time order */
    an_vmem vm;        /* the mappings (AN_OP_VM_* events) */
    an_files files;    /* the files (AN_OP_FILE_* events); set up at the first */
    size_t nprobes, capprobes;
    int series;        /* keep each process's outstanding bytes over time (an_proc.series) and its stacks' cells */
    uint64_t cell_base, cell_width; /* the cells' grid (an_cell): where it starts, a cell's width */
} an_model;

void an_model_init(an_model *m, uint64_t from, uint64_t to);
void an_model_free(an_model *m);
void an_model_alloc(an_model *m, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t addr,
                    uint64_t size, uint32_t stack);
void an_model_free_block(an_model *m, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t addr);
void an_model_realloc(an_model *m, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t old_addr,
                      uint64_t addr, uint64_t size, uint32_t stack);

/* One heap event of a batch: the fast path (blocks.c) decodes the records of
 * a buffer block into these, all of one thread, and hands them over at once. */
/* AN_OP_PROBE: no heap event but a question, "how many bytes does this
 * process have outstanding now?", asked in time order among the heap events
 * (memory.c: private bytes beside the heap's); addr is the asker's index. */
/* AN_OP_VM_*: a mapping event (vmem.h), committed under a thread id of its
 * own (AN_VM_TID) so that a batch holds no heap event: MAP addr, size, stack
 * and its kind in old_addr; UNMAP addr, size; an mremap is REMAP_FROM (addr,
 * size: the old range) then REMAP_TO (addr, size, stack); DISCARD size. */
enum an_op { AN_OP_ALLOC = 1, AN_OP_FREE = 2, AN_OP_REALLOC = 3, AN_OP_PROBE = 4,
             AN_OP_VM_MAP = 5, AN_OP_VM_UNMAP = 6, AN_OP_VM_REMAP_FROM = 7, AN_OP_VM_REMAP_TO = 8,
             AN_OP_VM_DISCARD = 9, AN_OP_FILE_OPEN = 10, AN_OP_FILE_CLOSE = 11, AN_OP_END = 12 };
/* A heap event's thread id carries, above AN_GEN_SHIFT, which image of its
 * process made it: how many times the trace had described the pid again
 * (exec) when its block was read (analyze.c). Images of one pid are
 * processes of their own in the model: the new one numbers its stacks from
 * 1 again, and the memory of the old one went with the exec. */
#define AN_GEN_SHIFT 24
#define AN_GEN_MAX 127u
/* AN_OP_END: the process ended (the trace's PROCESS_END), at ts; committed
 * under a thread id of its own, so that a batch holds nothing else. */
#define AN_END_TID 0x7fffffffu
/* An exec's end (size: the image it ends, + 1) under a thread id of its
 * own: the order stage measures it against no event of the pid (order.c,
 * late_key), where a process's plain end still makes its events that come
 * after it, stamped before, late. */
#define AN_EXEC_END_TID 0x7ffffffeu
/* AN_OP_FILE_*: a file event (files.h), under AN_VM_TID too: OPEN addr =
 * fd, size = path number, old_addr = errno; CLOSE addr = fd, size = bytes
 * read, old_addr = bytes written, stack = 1 when the descriptor closed. */
#define AN_VM_TID(tid) ((tid) | 0x80000000u)
typedef struct an_event {
    uint64_t ts, addr, old_addr, size;
    uint32_t stack;
    uint32_t op; /* enum an_op */
} an_event;
/* The events in order, as if each went through an_model_alloc, _free_block or
 * _realloc: the process is looked up once, and the live slots of the events a
 * few ahead are prefetched while one is handled (a live table larger than the
 * cache makes each probe a memory access otherwise). */
void an_model_feed(an_model *m, uint32_t pid, uint32_t tid, const an_event *ev, size_t n);
/* After the last event: blocks still live are outstanding at the window's end
 * (AIFO/AOFO), frees never paired are counted as unseen. */
void an_model_finish(an_model *m);
/* The histogram bucket of a size. */
unsigned an_hist_bucket(uint64_t size);

#endif
