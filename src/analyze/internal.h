/*
 * analyze/internal.h — what the files of src/analyze share: the analysis
 * result, ranked stack lists, symbolized frames and the writers of each
 * output format. Not installed.
 */
#ifndef LTR_ANALYZE_INTERNAL_H
#define LTR_ANALYZE_INTERNAL_H

#include "analyze/analyze.h"
#include "analyze/model.h"
#include "base/heap_events.h"
#include "symbols/symbols.h"

#include <ltr/trace.h>
#include <stdbool.h>

#define AN_MAX_FRAMES 2048 /* resolved frames of one stack, inlined ones included */
#define AN_PAGE_STACKS 500 /* ltr report: stacks of each ranking in the page, of all processes together */

/* Reports that add symbol warnings to an analysis: one for a command (a
 * second report of the same stacks adds none); past these, they count as
 * other warnings (shown whole). */
#define AN_SYMWARN_RANGES 4

/* A module whose frames a report shows but which has no symbols here. */
typedef struct an_nosyms {
    char *path;
    char *build_id;   /* hex, NULL if the trace has none */
    char *debug_file; /* where a debug file would be looked for by build-id, NULL without one */
} an_nosyms;

/* Heap snapshots (snapshots.c). */
typedef struct an_snap_stack {
    uint32_t stack;
    uint64_t blocks, bytes, oldest_s, older_1h;
} an_snap_stack;

typedef struct an_snapshot {
    uint32_t pid;
    uint64_t seq, ts;
    int complete; /* 1: its End came with every stack; -1: stacks were lost; 0: no End (cut) */
    uint64_t blocks, bytes, pause_ns;
    uint64_t older_1h, oldest_s; /* bytes in blocks an hour old or more; the oldest block's age */
    an_snap_stack *stacks;
    size_t nstacks;
} an_snapshot;

typedef struct an_snap_delta {
    uint32_t stack;
    int64_t delta, blocks;
} an_snap_delta;

typedef enum an_verdict { AN_LEAK, AN_PLATEAU, AN_NOISE } an_verdict;
extern const char *const an_verdict_names[];

typedef struct an_trend {
    uint32_t pid, stack;
    an_verdict verdict;
    double growth; /* bytes per hour, Theil–Sen over every snapshot */
    double later;  /* the same over the later half: what a plateau grows now */
    bool rising;   /* the later half rose by AN_TREND_MIN_BYTES or more: a plateau's not levelled */
    bool after_fill; /* a leak whose later half grows steadily but slower than the whole: its rate is `later` */
    size_t since;  /* after_fill: where its steady growth starts (0-based): the later half's first snapshot,
                    * or where a fill into it ended (`later` counts from the snapshot after) */
    uint64_t first, last, ts;
    size_t snapshots;
} an_trend;

/* The thresholds of --trend (docs/analysis.md, "Trend"). */
#define AN_TREND_MIN_SNAPSHOTS 4
#define AN_TREND_MIN_TAU 0.6      /* Mann–Kendall S / pairs for a leak */
#define AN_TREND_MIN_BYTES 4096.0 /* growth smaller than this is nobody's leak */
#define AN_TREND_NOISE_K 3.0      /* growth must exceed K times the series' MAD */
#define AN_TREND_LATE_SHARE 0.5   /* a leak's later half grows at least half as fast */
/* A memory-counter sample of the system provider (memory.c), with the heap's
 * outstanding bytes of its process at its time (heap_seen: the process had
 * heap events by then). */
typedef struct an_mem_sample {
    uint64_t ts;
    uint32_t pid;
    int heap_seen;
    uint64_t private_bytes, rss, rss_file, rss_shmem, swap, minflt, majflt, heap;
} an_mem_sample;

/* One process's samples in the window: the first, the last, the range of
 * private bytes. */
typedef struct an_mem_summary_t {
    uint64_t samples, min, max;
    an_mem_sample first, last;
} an_mem_summary_t;

/* A CPU stack of a process (cpu.c): its text as the recorder wrote it. */
typedef struct an_cpu_stack {
    uint64_t key;
    uint32_t pid;
    uint64_t samples;
    char *text;
} an_cpu_stack;

struct ltr_analysis {
    ltr_trace *trace;
    char *path;
    an_model model;
    uint64_t origin;          /* ns that "seconds from the start" count from */
    uint64_t win_start, win_end; /* the window as reported (end = last event when open) */
    int from_set, to_set;
    uint64_t events, heap_events, bad_heap_events;
    size_t ends_fed;          /* the trace's PROCESS_END records handed to the model so far */
    size_t images_fed;        /* the images replaced (ltr_trace_image_at) counted in gens so far */
    an_hmap gens;             /* pid -> an_index_gen: how many of its images were replaced so far */
    uint64_t events_lost, events_overwritten;
    uint64_t events_unwritten; /* of events_lost, those the recorder could not write to the file */
    uint64_t metadata_lost; /* records the session could not keep (the counters' metadata_lost) */
    ltr_trace_summary sum;
    uint64_t bad_records, forged; /* of sum.damage: records of intact chunks, and of them other processes' (warn_state) */
    char **warnings;
    size_t nwarnings;
    ltr_symbolizer *sym;      /* symbolize.c: made at the scan's start, fed modules as they come */
    size_t modules_added;     /* module records of the trace handed to sym */
    int sym_failed, sym_warned; /* memory ran out making or feeding sym; said in a warning */
    int prewarm_pending;      /* modules came while the symbolizer's prewarm thread was busy */
    size_t problems_warned;   /* symbolizer problems already turned into warnings */
    an_nosyms *nosyms;        /* modules shown without symbols (symbolize.c) */
    size_t nnosyms;
    size_t nosyms_asked;      /* of the symbolizer's list, those looked at (one file under two paths: one entry) */
    /* which warnings are about modules without symbols: [from, to) ranges of
     * warnings, one per report that added some (symbolize.c) */
    size_t symwarn[AN_SYMWARN_RANGES][2];
    size_t nsymwarn;
    struct an_entry *kept[3]; /* rank.c: each ranking's lists of every process, made while symbolizing a report */
    size_t nkept[3];
    unsigned kept_top;        /* the top they were made for */
    int kept_ok;              /* bit r: kept[r] holds every process's list */
    an_hmap kept_at;          /* image << 32 | pid -> where its lists are in kept (rank.c) */
    size_t hold;              /* events that could wait for the time order (order.h) */
    size_t hold_given;        /* that hold, asked by the caller (a second pass); 0: by the trace's kind */
    int hold_env;             /* LTR_ANALYZE_HOLD set it */
    int first_pass;           /* a pass that is made again when events come late (ltr_analysis_run) */
    int redo_if_late;         /* it will be: the model stops at the first late event (an_sink_stop_when_late) */
    int pid_set;              /* --pid: only that process's events and modules */
    uint32_t pid;
    int progress;
    const char *debug_path;
    int local_symbols;        /* the trace's SYMBOLS chunks are not used (ltr_analyze_opts) */
    size_t known_symbols;     /* addresses the trace's SYMBOLS chunks named */
    ltr_guid snap_guid;       /* Ltr.HeapSnapshot */
    an_snapshot *snaps;       /* in the order their Begin came */
    size_t nsnaps;
    uint64_t snap_from, snap_to; /* --from/--to snapshot:N (1-based), 0 if not given */
    int trend_wanted;
    const an_snapshot *export_snap; /* ltr export --snapshot N */
    an_trend *trend;
    size_t ntrend;
    ltr_guid system_guid;     /* Ltr.System, whose memory samples memory.c keeps */
    an_mem_sample *mem;       /* in the window, in trace order */
    size_t nmem, capmem;
    int cpu_report;           /* --cpu: the report is of the CPU samples */
    int full_stacks;          /* --full-stacks: no frame hidden (frames.c) */
    int page_frames;          /* json: the frames the text report shows (ltr report) */
    int series_wanted;        /* the model keeps outstanding bytes over time (ltr_analyze_opts.series) */
    struct an_marker *markers; /* with a series: the trace's markers in the window */
    size_t nmarkers, capmarkers;
    unsigned width;           /* the text report's width in columns; 0: unlimited */
    unsigned processes;       /* the text report's processes in detail; 0: all (ltr_analyze_opts) */
    an_hmap cpu;              /* (pid, stack text) hash -> an_cpu_stack */
    an_hmap cpu_names;        /* pid -> its name from the system provider's process events */
    uint64_t cpu_samples, cpu_lost;
    int mapped_report;        /* --mapped: the report is of the mappings (mapped.c) */
    uint64_t vm_events;       /* mapping events taken (of the process, with --pid) */
    int files_report;         /* --files: the report is of the files (files_out.c) */
    uint64_t file_events;
    an_hmap file_index;       /* hash of a path's text -> its number (files_out.c) */
    char **file_paths;        /* number -> text; [0] NULL */
    size_t nfile_paths, capfile_paths;
};

/* A Ltr.HeapSnapshot event: taken in (1), or not one (0). */
int an_snapshot_event(ltr_analysis *a, const ltr_event *ev);
/* After the stream: a cut snapshot's totals are those of what arrived. */
void an_snapshots_finish(ltr_analysis *a);
void an_snapshots_free(ltr_analysis *a);
/* Stacks by their growth from one snapshot to the other, largest first. */
an_snap_delta *an_snapshot_diff(const an_snapshot *from, const an_snapshot *to, size_t *n);
/* Classifies every stack of each process across its complete snapshots. */
void an_trend_run(ltr_analysis *a);
/* The n-th snapshot of the trace (1-based), or NULL. */
const an_snapshot *an_snapshot_named(const ltr_analysis *a, uint64_t n);
/* "snapshot:N": 1 with *n set, 0 if text is not of that form, -1 if N is bad. */
int an_snapshot_bound(const char *text, uint64_t *n);
/* The frames of a stack of a snapshot, as the report writers print them. */
void an_text_frames(ltr_analysis *a, FILE *out, const an_stack *s);
void an_json_frames(ltr_analysis *a, FILE *out, const an_stack *s);
/* ltr export --snapshot: the snapshot's stacks as the writers' stacks, each
 * with its live blocks as outstanding (AOFO); malloc'd, *n of them. */
an_stack *an_snapshot_stacks(const an_snapshot *s, size_t *n);
/* An export of the heap events that found no stack in the window says so
 * (EMPTY: what then is empty), and names --snapshot when the trace holds
 * snapshots: a heapsnapshot session's trace has no heap event; as an option
 * of this format (TAKES_SNAPSHOT: pprof, folded), else of those. 1 if none. */
int an_warn_no_heap_stacks(ltr_analysis *a, const char *empty, bool takes_snapshot);
int an_write_snapshots_text(ltr_analysis *a, FILE *out, unsigned top);
const char *an_trend_rate_text(const an_trend *t, char *buf, size_t size);
void an_write_snapshots_json(ltr_analysis *a, FILE *out, unsigned top);

/* One entry of a ranked list: a stack and, for the outstanding list, the impacting type. */
/* How a stack's AIFO blocks came (docs/analysis.md, "Ranking"): growing
 * over the window; at once (a one-time allocation); or turning over, a
 * cache that frees its oldest as it allocates, its held blocks the young
 * ones of a set it replaced. */
typedef enum an_growth { AN_GROWING, AN_AT_ONCE, AN_TURNING_OVER } an_growth;
extern const char *const an_growth_names[3];

typedef struct an_entry {
    const an_proc *proc;
    const an_stack *stack;
    enum an_type type;
    uint64_t count, bytes;
    double weight; /* outstanding: what ranks it (rank.c: steady growth above a one-time allocation) */
    an_growth growth; /* outstanding AIFO: an_stack_growth */
} an_entry;

/* How much of the window a stack's AIFO blocks were allocated over, 0 (at
 * once, or one block) to 1 (from its start to its end): a steady leak
 * spreads, a one-time allocation does not. */
double an_held_spread(const ltr_analysis *a, const an_stack *s);
/* How its AIFO blocks came: the one reading of it that the text, JSON and
 * the report's page show and the ranking uses. */
an_growth an_stack_growth(const ltr_analysis *a, const an_stack *s);

typedef enum an_rank { AN_RANK_OUTSTANDING, AN_RANK_CALLS, AN_RANK_TEMPORARY } an_rank;

/* A ranked list of the stacks of p, best first, at most top entries (0 =
 * all); p NULL: the best top of every process, together, best first (as the
 * JSON report lists them); malloc'd, *n entries. Outstanding:
 * AIFO entries by bytes, then AOFO by bytes. Calls: by allocation calls. Temporary: by
 * temporary allocations. Entries with nothing to show are left out. */
an_entry *an_ranked(const ltr_analysis *a, const an_proc *p, an_rank rank, unsigned top, size_t *n);
/* The three rankings of p as an_ranked(a, p, r, top) makes each (v[r], n[r]
 * entries, malloc'd), from one pass over its stacks; -1 without memory,
 * every v[r] NULL. */
int an_ranked_each(const ltr_analysis *a, const an_proc *p, unsigned top, an_entry *v[3], size_t n[3]);
/* The report's rankings are made twice: by the symbolizing of the frames it
 * will show, one process at a time, then by the writer, the text one process
 * at a time, the JSON of every process together (2 x 3 passes over
 * bench/heap's 62 k stacks). The first's lists are kept (an_ranked_keep, a
 * copy of p's; an_ranked_kept_all once all are), and the writer's are
 * copies of them (an_ranked_of) or them sorted together (an_ranked_all)
 * instead of ranked again: the same entries, and by_value is a total
 * order, so the same lists. */
void an_ranked_keep(ltr_analysis *a, const an_proc *p, an_rank rank, unsigned top, const an_entry *e, size_t n);
void an_ranked_kept_all(ltr_analysis *a);
/* an_ranked(a, p, rank, top) and an_ranked(a, NULL, rank, top), from the
 * lists kept when they are of that top, else made; the caller frees them. */
an_entry *an_ranked_of(ltr_analysis *a, const an_proc *p, an_rank rank, unsigned top, size_t *n);
an_entry *an_ranked_all(ltr_analysis *a, an_rank rank, unsigned top, size_t *n);
/* Drops the lists kept (the report is written, or they are incomplete). */
void an_ranked_forget(ltr_analysis *a);
/* The symbolized frames of a stack, innermost first; returns how many. */
size_t an_frames(ltr_analysis *a, const an_stack *s, ltr_sym_frame *out, size_t cap);
typedef struct an_marker {
    uint64_t ts;
    uint32_t pid;
    char *text;
} an_marker;
/* out_chrome.c: a marker event is kept (1) when the analysis keeps a series. */
int an_marker_feed(ltr_analysis *a, const ltr_event *ev);
int an_write_chrome(ltr_analysis *a, FILE *out);

/* frames.c: the frames a report for people hides unless --full-stacks. */
bool an_frame_is_startup(const ltr_sym_frame *f);
bool an_frame_is_allocator(const ltr_sym_frame *f);
/* Of n frames (innermost first), the range [*first, *end) shown. */
void an_frames_trim(const ltr_sym_frame *f, size_t n, size_t *first, size_t *end);
/* an_frames less the hidden ones (all of them with --full-stacks). */
size_t an_frames_shown(ltr_analysis *a, const an_stack *s, ltr_sym_frame *out, size_t cap);
/* The processes in the report, in pid order; *n entries (not to be freed: owned by the model). */
an_proc *const *an_procs(const ltr_analysis *a, size_t *n);
typedef struct an_index_gen {
    uint64_t key; /* pid */
    uint32_t gen;
} an_index_gen;
/* Once the trace is read: each model of a replaced image learns its key and
 * entry in the trace's list of images (an_proc.image), and its stacks are
 * read from that image's frames. */
void an_images_resolve(ltr_analysis *a);

/* Sum over processes of a per-process figure. */
void an_totals(const ltr_analysis *a, an_proc *sum);
/* Whether process p had ended by the window's end (it holds no memory then:
 * its outstanding blocks are what it never freed before its exit), and
 * before the window began (no figure of the window is its). */
bool an_ended_by_end(const ltr_analysis *a, const an_proc *p);
bool an_ended_before(const ltr_analysis *a, const an_proc *p);
/* Of the outstanding blocks at the window's end, those of processes that
 * had ended by then: how many processes, bytes and blocks; and how many
 * processes ended before the window began. */
typedef struct an_ended_sum {
    size_t processes, before;
    uint64_t bytes, count;
} an_ended_sum;
void an_ended_totals(const ltr_analysis *a, an_ended_sum *e);
/* Of the model's processes, the images an exec replaced (an_proc_replaced_by_exec):
 * the processes are the model's less these. */
size_t an_images_replaced(const ltr_analysis *a);
/* Names of the impacting types: "AIFI", "AIFO", "AOFI", "AOFO". */
extern const char *const an_type_names[AN_NTYPES];
/* Adds a warning line (printf format) to the report. */
void an_warn(ltr_analysis *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* During the scan: hands the module records met since the last call to the
 * symbolizer and has it open their files in the background (symbolize.c). */
void an_symbols_update(ltr_analysis *a);
/* Every event read, the model may still be at work: the files the trace
 * says were bare where it was recorded, whose frames it could not name,
 * are opened now on the symbolizer's thread (ltr_symbolizer_prewarm_bare),
 * while the main thread waits for the model, not after it. */
void an_symbols_read_all(ltr_analysis *a);
/* Before a report: resolves the frames of the stacks it shows, and warns about
 * the modules that could not be symbolized. */
void an_symbolize_reported(ltr_analysis *a, ltr_report_format fmt, unsigned top);
/* Seconds of an absolute timestamp from the trace start. */
double an_seconds(const ltr_analysis *a, uint64_t ts);
const char *an_process_exe(const ltr_analysis *a, uint32_t pid);
/* The executable as a line of text shows it: on one line, without a control
 * character (ltr_shown_text), in buf. The traced program chose its name. */
const char *an_process_exe_shown(const ltr_analysis *a, uint32_t pid, char *buf, size_t size);
/* The same, or where the trace has no PROCESS record of pid (it was not
 * attached: its memory counters or CPU samples only), the command name
 * the system provider's ProcessStart or ProcessExec gave it (cpu.c). */
const char *an_process_name_shown(const ltr_analysis *a, uint32_t pid, char *buf, size_t size);
/* The same for a process of the model: an image an exec replaced is named
 * by its own program (an_proc.image), not the pid's last one. */
const char *an_proc_exe(const ltr_analysis *a, const an_proc *p);
/* Whether p is an image an exec replaced; not a process that ended before
 * its pid was used again (an image of the trace's all the same). */
bool an_proc_replaced_by_exec(const ltr_analysis *a, const an_proc *p);
/* A process's threads, as the trace names them (a replaced image's as they
 * were named then): the next from *pos (0 to begin), or NULL. */
const ltr_thread *an_proc_thread_next(const ltr_analysis *a, const an_proc *p, size_t *pos);
/* The program of a stack's image (an_stack.key). */
const char *an_stack_exe(const ltr_analysis *a, const an_stack *s);
const char *an_proc_exe_shown(const ltr_analysis *a, const an_proc *p, char *buf, size_t size);

/* One frame on one line: "function (file:line) [inlined]  module+0xOFFSET". */
void an_print_frame(FILE *out, const ltr_sym_frame *f);
/* "function (file:line) [inlined]  module+0xoffset" of f, with the function
 * and file given (f's own, or shortened ones). */
void an_frame_text(const ltr_sym_frame *f, const char *function, const char *file, char *out, size_t size);
/* fit.c: the text report at a width (0: unlimited). A line, cut with "..." */
void an_fit_line(FILE *out, const char *line, unsigned width);
/* A sentence, wrapped at spaces. */
void an_fit_text(FILE *out, const char *text, unsigned width);
/* The same, its later lines indented by indent columns. */
void an_fit_wrap(FILE *out, const char *text, unsigned width, unsigned indent);
/* A frame's text shortened to width: parameters, then template arguments,
 * then the path, then cut. */
void an_fit_frame(const ltr_sym_frame *f, unsigned width, char *out, size_t size);
/* A stack whose AIFO blocks spread over this much of the window grows
 * steadily (its growth per minute is shown); less is "at once". */
#define AN_STEADY_SPREAD 0.1
int an_write_text(ltr_analysis *a, FILE *out, unsigned top);
int an_write_json(ltr_analysis *a, FILE *out, unsigned top);
int an_write_csv(ltr_analysis *a, FILE *out, unsigned top);
int an_write_pprof(ltr_analysis *a, FILE *out);
int an_write_folded(ltr_analysis *a, FILE *out);
/* Folded lines, merged (folded.c): two stacks may read the same once named
 * (two call sites of one function; C++'s D0 and D1 destructors are both
 * "Foo::~Foo()"), and flamegraph.pl and speedscope want one line a stack.
 * an_folded_begin gives the stream the next line's text goes to (NULL
 * once failed), an_folded_end ends it with its value; an_folded_finish
 * writes the distinct lines, values summed, in the order of their text,
 * frees everything and returns how many (f->failed: out of memory). */
typedef struct an_folded_line {
    size_t at; /* the line's text, NUL-ended, at this offset of text */
    uint64_t value;
} an_folded_line;
typedef struct an_folded {
    FILE *m;
    char *text;
    size_t len;
    off_t at;
    an_folded_line *v;
    size_t n, cap;
    int failed;
} an_folded;
int an_folded_open(an_folded *f);
FILE *an_folded_begin(an_folded *f);
void an_folded_end(an_folded *f, uint64_t value);
size_t an_folded_finish(an_folded *f, FILE *out);

/* Memory counters (memory.c). an_mem_feed: takes ev if it is a memory sample
 * (returns 1; 0 for any other event) and asks the model for the heap's bytes
 * at its time. an_mem_finish: after the model is done, pairs the answers. */
struct an_sink;
int an_mem_feed(ltr_analysis *a, struct an_sink *sk, const ltr_event *ev);
void an_mem_finish(ltr_analysis *a);
/* The processes with samples, at most cap, in order of their first. */
size_t an_mem_pids(const ltr_analysis *a, uint32_t *pids, size_t cap);
void an_mem_summary(const ltr_analysis *a, uint32_t pid, an_mem_summary_t *out);
/* A section per process with samples; JSON: the member "memory":[...]. */
void an_mem_write_text(const ltr_analysis *a, FILE *out);
void an_mem_write_json(const ltr_analysis *a, FILE *out);

/* CPU samples (cpu.c). an_cpu_feed: takes ev if it is a CPU sample (1), else 0. */
int an_cpu_feed(ltr_analysis *a, const ltr_event *ev);
void an_cpu_free(ltr_analysis *a);
/* The stacks, most samples first (malloc'd array, entries owned by a). */
an_cpu_stack **an_cpu_ranked(const ltr_analysis *a, size_t *n);
/* A stack text's frames, outermost first, demangled; malloc'd. */
char **an_cpu_frames(const char *text, size_t *n);
void an_cpu_frames_free(char **v, size_t n);
/* The --cpu report: text, JSON, folded, pprof. */
int an_cpu_write(ltr_analysis *a, FILE *out, ltr_report_format fmt, unsigned top);
int an_cpu_write_pprof(ltr_analysis *a, FILE *out);

/* Mappings (mapped.c): an_vm_feed takes ev if it is a mapping event (1),
 * sending it to the model through sk; else 0. */
int an_vm_feed(ltr_analysis *a, struct an_sink *sk, const ltr_event *ev);
/* The opening of the --mapped and --files reports: trace, window and
 * warnings, as text lines, or as the first JSON members (an object left open). */
void an_write_head_text(const ltr_analysis *a, FILE *out);
void an_write_head_json(const ltr_analysis *a, FILE *out);
/* The --mapped report: text or JSON. */
int an_vm_write(ltr_analysis *a, FILE *out, ltr_report_format fmt, unsigned top);

/* Files (files_out.c): an_file_feed takes ev if it is a file event (1),
 * sending it to the model through sk; else 0. */
int an_file_feed(ltr_analysis *a, struct an_sink *sk, const ltr_event *ev);
/* The --files report: text or JSON. */
int an_files_write(ltr_analysis *a, FILE *out, ltr_report_format fmt, unsigned top);
void an_files_text_free(ltr_analysis *a);

/* Progress on stderr (progress.c): shown only at a terminal, after a second. */
typedef struct an_progress {
    int enabled, shown;
    uint64_t total, started_ns, next_ns;
    const char *label; /* "analyzing" unless set after an_progress_begin */
} an_progress;
void an_progress_begin(an_progress *p, int wanted, uint64_t total);
void an_progress_update(an_progress *p, uint64_t done);
void an_progress_end(an_progress *p);

/* Reader glue (source.c): heap event decoding, STACK and MODULE records. */
/* A heap event's kind is its event id (source.c takes one for the other). */
typedef enum an_heap_kind {
    AN_NOT_HEAP = 0, AN_ALLOC = LTR_HEAP_EV_ALLOC, AN_FREE = LTR_HEAP_EV_FREE,
    AN_REALLOC = LTR_HEAP_EV_REALLOC, AN_BAD_HEAP = -1
} an_heap_kind;
typedef struct an_heap_event {
    an_heap_kind kind;
    uint64_t addr, old_addr, size;
    uint32_t stack;
} an_heap_event;
typedef struct an_decoder an_decoder;
an_decoder *an_decoder_new(void);
void an_decoder_free(an_decoder *d);
/* Decodes ev; kind AN_NOT_HEAP for events of other providers, AN_BAD_HEAP for
 * a heap event whose layout does not follow docs/heap-events.md. */
void an_decode(an_decoder *d, const ltr_event *ev, an_heap_event *out);
/* The fast path (blocks.c) reads heap records of compact blocks itself, by a
 * plan settled once per layout: each field's encoding and which heap field it is. */
enum { AN_F_ADDR, AN_F_OLD, AN_F_SIZE, AN_F_STACK, AN_F_COUNT };
#define AN_FAST_FIELDS 8
typedef struct an_fast_plan {
    const ltr_layout *layout;
    int kind;                       /* AN_ALLOC, AN_FREE, AN_REALLOC; else not read fast */
    uint8_t nfields;
    uint8_t width[AN_FAST_FIELDS];  /* 0: a varint; AN_FAST_REF: a pnew or pref; else the fixed size in bytes */
    uint8_t slot[AN_FAST_FIELDS];   /* AN_F_ADDR...; AN_F_COUNT: not wanted */
    int8_t ref[2];                  /* index of the pnew and of the pref field (format 4), -1: none */
} an_fast_plan;
#define AN_FAST_REF 255
void an_fast_plan_make(an_decoder *d, const ltr_layout *l, an_fast_plan *plan);
typedef struct an_blocks an_blocks;
struct ltr_block_view;
struct an_sink;
an_blocks *an_blocks_new(ltr_trace *t, an_decoder *d);
void an_blocks_free(an_blocks *b);
/* Whether the fast path reads column blocks' values decoded ahead (the
 * default; LTR_ANALYZE_AHEAD=0: a record at a time). */
int an_decodes_ahead(void);
/* Reads the heap records at the start of the view, committing them to the
 * sink when feed is set (else only counting them: a process --pid leaves out), up to
 * the end of the block or the first record the generic path must take, and
 * reports them to the reader. *records = how many; returns 1 if that was
 * the whole block, 0 if the next record is the generic path's. */
int an_blocks_run(an_blocks *b, struct an_sink *sk, const struct ltr_block_view *v, int feed,
                 uint64_t *records);

/* Frames of (pid, stack id) from the trace's STACK records; NULL if unknown. */
const uint64_t *an_stack_addresses(const ltr_trace *t, uint32_t pid, uint32_t id, size_t *n);
/* Whether that stack is unknown because records of the session told it other frames. */
int an_stack_conflicted(const ltr_trace *t, uint32_t pid, uint32_t id);
/* Hands the MODULE records of the trace from *done on to the symbolizer
 * (only those of pid when pid_set) and advances *done; 0 or -ENOMEM. */
int an_load_modules(const ltr_trace *t, ltr_symbolizer *s, int pid_set, uint32_t pid, size_t *done);
/* The names the trace's SYMBOLS chunks hold, given to s as known: how many (symbolize.c). */
size_t an_known_symbols(ltr_trace *t, ltr_symbolizer *s);
/* File offset the reader has reached, for the progress bar. */
uint64_t an_trace_position(const ltr_trace *t);

#endif
