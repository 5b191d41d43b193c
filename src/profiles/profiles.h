/*
 * profiles/profiles.h — recording profiles: Windows Performance Recorder
 * .wprp files read as they are, and ltr's built-in ones in the same format.
 *
 * The one entry point a session needs is ltr_profiles_resolve(): it takes the
 * profile specs a user typed (`[FILE.wprp!]Name[.light|.verbose]`, several at
 * once) and the --filemode flag, loads the built-in profiles and every file
 * named, follows Base= inheritance, merges collectors of the same name the way
 * WPR does, and turns the result into a *session plan*: what the recorder must
 * start on Linux. Nothing here starts anything; the plan is plain data.
 *
 * Every problem found on the way is a diagnostic carrying file, line and the
 * id concerned; errors make the resolve fail, warnings do not. Which case is
 * which, and why, is in docs/profiles.md.
 */
#ifndef LTR_PROFILES_H
#define LTR_PROFILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ltr/common.h"

/* ---- diagnostics ---------------------------------------------------------- */

typedef enum ltr_diag_severity {
    LTR_DIAG_WARNING = 1,
    LTR_DIAG_ERROR = 2,
} ltr_diag_severity;

typedef struct ltr_diag {
    ltr_diag_severity severity;
    char *file; /* the .wprp file, or NULL when the problem is in a spec */
    int line;   /* 1-based, 0 when not known */
    char *id;   /* the element or spec concerned, may be NULL */
    char *msg;  /* one sentence, no trailing newline */
} ltr_diag;

typedef struct ltr_diag_list {
    ltr_diag *v;
    size_t n, cap;
    size_t errors, warnings;
} ltr_diag_list;

/* Prints "FILE:LINE: error: [ID] message" (parts that are unknown left out). */
LTR_API void ltr_diag_format(const ltr_diag *d, char *out, size_t size);
LTR_API void ltr_diag_list_free(ltr_diag_list *l);

/* ---- the session plan ----------------------------------------------------- */

typedef enum ltr_plan_mode {
    LTR_PLAN_MEMORY = 0, /* flight recorder: a ring of buffers, saved on request */
    LTR_PLAN_FILE = 1,   /* sequential: full buffers go to the trace file */
} ltr_plan_mode;

typedef enum ltr_collector_kind {
    LTR_COLLECTOR_SYSTEM = 0,
    LTR_COLLECTOR_EVENT = 1,
    LTR_COLLECTOR_HEAP = 2,
} ltr_collector_kind;

/* Limits on a collector's buffers, the same as the recorder's. */
#define LTR_PLAN_MIN_BUFFER_KB 4u
#define LTR_PLAN_MAX_BUFFER_KB 16384u
#define LTR_PLAN_MAX_BUFFERS 65536u
#define LTR_PLAN_DEFAULT_BUFFER_KB 1024u
#define LTR_PLAN_DEFAULT_BUFFERS 32u

/* A buffer pool. Collectors of the same kind and name are one collector:
 * their buffer size and count are the largest any profile asked for. */
typedef struct ltr_plan_collector {
    char *name;
    ltr_collector_kind kind;
    uint32_t buffer_size_kb;  /* LTR_PLAN_MIN_BUFFER_KB..LTR_PLAN_MAX_BUFFER_KB */
    uint32_t buffers;         /* a count, or a percentage of RAM when below is set */
    bool buffers_percent;     /* buffers is 1..100 percent of total memory */
} ltr_plan_collector;

/* An event provider that becomes an ltr provider. */
typedef struct ltr_plan_provider {
    char *name;            /* as written in the profile: a name or a GUID's text */
    ltr_guid guid;         /* given, or derived from the name with ltr_guid_from_name */
    bool guid_given;       /* the profile named it by GUID */
    uint64_t keywords;     /* all bits when the profile gave none */
    uint8_t level;         /* ETW level, LTR_LEVEL_VERBOSE when not given */
    bool stacks;           /* Stack="true": capture a call stack with each event */
    uint64_t capture_state_on_save; /* keywords to rundown when the trace is saved */
    size_t collector;      /* index in ltr_plan.collectors */
} ltr_plan_provider;

/* A keyword of WPR's system provider and what it is on Linux. */
typedef struct ltr_plan_syskw {
    char *name;             /* the WPR keyword, as written (ProcessThread, Loader, ...) */
    const char *linux_part; /* the part of ltr's system provider it becomes, NULL if none */
    bool available;         /* that part exists in this ltr */
    size_t collector;       /* index in ltr_plan.collectors */
} ltr_plan_syskw;

/* Heap tracing: the heap collector and HeapEventProviders. With no pids and no
 * names, the processes are those set up with `ltr heaptracingconfig` or
 * launched with `ltr run`. */
typedef struct ltr_plan_heap {
    bool enabled;
    bool snapshot;       /* the heap snapshot provider was asked for */
    size_t snapshot_collector; /* index in ltr_plan.collectors of its collector */
    uint32_t *pids;      /* HeapProcessIds */
    size_t npids;
    char **process_names; /* ltr's HeapProcessNames extension */
    size_t nprocess_names;
    size_t collector;    /* index in ltr_plan.collectors; valid when enabled */
} ltr_plan_heap;

/* Something in the profiles that has no meaning on Linux, reported once. */
typedef struct ltr_plan_skipped {
    char *what;   /* "provider Microsoft-Windows-TCPIP {2f07e2ee-...}", "HardwareCounter HC_CPI" */
    char *reason;
    char *file;
    int line;
} ltr_plan_skipped;

enum { LTR_PROFILE_LIGHT = 1, LTR_PROFILE_VERBOSE = 2 };     /* detail levels */
enum { LTR_PROFILE_FILEMODE = 1, LTR_PROFILE_MEMORYMODE = 2 }; /* logging modes */
/* A profile name's variants as a bit set: one bit per detail level and mode. */
#define LTR_PROFILE_VARIANT(level, mode) (1u << (((level) - 1) * 2 + ((mode) - 1)))

/* "Light.File, Verbose.Memory": the variants of a LTR_PROFILE_VARIANT set. */
LTR_API void ltr_profile_variants_text(unsigned variants, char *out, size_t size);

typedef struct ltr_plan {
    ltr_plan_mode mode;
    char **profiles;          /* what was started, "FILE!Id" or "Id" for built-ins */
    unsigned *variants;       /* per profile: the LTR_PROFILE_VARIANT set its name has */
    size_t nprofiles;
    ltr_plan_collector *collectors;
    size_t ncollectors;
    ltr_plan_provider *providers;
    size_t nproviders;
    ltr_plan_syskw *syskw;    /* system keywords requested, each once */
    size_t nsyskw;
    char **sysstacks;         /* system stack names requested (informational) */
    size_t nsysstacks;
    ltr_plan_heap heap;
    /* ltr extension: <MemoryInfoInterval Value="MS"/> in a SystemProvider,
     * the memory counters' interval; 0 when no profile says (the smallest wins). */
    uint32_t system_interval_ms;
    ltr_plan_skipped *skipped;
    size_t nskipped;
    bool strict;              /* some profile had Strict="true" */
    ltr_diag_list diags;
} ltr_plan;

typedef struct ltr_profile_request {
    const char *const *specs; /* `[FILE.wprp!]Name[.light|.verbose]` */
    size_t nspecs;
    bool filemode;            /* pick the File variants (default: Memory) */
    const char *builtin_dir;  /* NULL: ltr_profiles_builtin_dir() */
} ltr_profile_request;

/* Resolves the specs into a plan. Returns 0 when there is no error (warnings
 * may be in (*out)->diags), -1 when there is one; *out is set in both cases
 * (NULL only when memory ran out) so that the diagnostics can be printed. */
LTR_API int ltr_profiles_resolve(const ltr_profile_request *req, ltr_plan **out);
/* The same plan, for showing what the profiles would start (--details), not
 * for starting: a Strict profile that starts nothing is a warning saying that
 * starting it would be an error, so its plan can still be shown. */
LTR_API int ltr_profiles_describe(const ltr_profile_request *req, ltr_plan **out);
LTR_API void ltr_plan_free(ltr_plan *plan);
/* The collector a session of the plan puts its system keywords in (the
 * system provider is one provider, in one collector): that of the first
 * available keyword in a system collector, else of the first available one;
 * -1 when none is available (describe.c). */
LTR_API long ltr_plan_system_collector(const ltr_plan *p);
/* Whether a session of the plan creates collector i: a provider, the heap
 * or its snapshots, or the system keywords go there. A collector whose
 * providers all lack a Linux meaning is not created. */
LTR_API bool ltr_plan_collector_used(const ltr_plan *p, size_t i);
/* The plan as `ltr profiles --details` shows it (describe.c): profiles,
 * logging mode, collectors, system keywords, providers, heap, skipped. */
LTR_API void ltr_plan_write_text(FILE *out, const ltr_plan *p);

/* ---- exporting (export.c) ------------------------------------------------- */

/* `ltr profiles --export`: every variant of the profile spec names
 * (`[FILE.wprp!]Name`) as a stand-alone .wprp document, with everything it
 * inherits resolved and the collectors and providers it uses beside it.
 * Returns the text (malloc'd), or NULL with the reasons in diags. */
LTR_API char *ltr_profiles_export(const char *spec, const char *builtin_dir, ltr_diag_list *diags);

/* ---- listing -------------------------------------------------------------- */

typedef struct ltr_profile_info {
    char *name;
    char *description;   /* of the first variant that has one */
    unsigned levels;     /* LTR_PROFILE_LIGHT | LTR_PROFILE_VERBOSE */
    unsigned modes;      /* LTR_PROFILE_FILEMODE | LTR_PROFILE_MEMORYMODE */
    unsigned variants;   /* the LTR_PROFILE_VARIANT set: not every level in every mode */
    char *file;
} ltr_profile_info;

typedef struct ltr_profile_list {
    ltr_profile_info *v;
    size_t n;
    ltr_diag_list diags;
} ltr_profile_list;

/* Lists the profiles of one file (file != NULL) or the built-in ones (file ==
 * NULL; builtin_dir as in ltr_profile_request). Every variant of every listed
 * profile is resolved too, so problems anywhere in the file are reported.
 * Returns 0, or -1 when a diagnostic is an error; *out is set either way. */
LTR_API int ltr_profiles_list(const char *file, const char *builtin_dir, ltr_profile_list **out);
LTR_API void ltr_profile_list_free(ltr_profile_list *l);

/* Where the built-in profiles are: $LTR_PROFILE_DIR, else share/ltr/profiles
 * beside the installed binary, else the source tree. Never NULL. */
LTR_API const char *ltr_profiles_builtin_dir(void);

#endif
