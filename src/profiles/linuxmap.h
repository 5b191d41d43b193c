/*
 * profiles/linuxmap.h — what WPR's Windows terms mean on Linux: the system
 * provider's keywords and the Windows providers ltr knows about. The tables
 * are in linuxmap.c, in one place, so that the recorder's growth (a system
 * part becoming available) is a one-line change there.
 */
#ifndef LTR_PROFILES_LINUXMAP_H
#define LTR_PROFILES_LINUXMAP_H

#include <stdbool.h>

#include "ltr/common.h"

/* Linux parts of ltr's system provider (PRODUCT.md, "Windows terms"). */
#define LTR_PART_PROCESSES "processes and threads (start and end)"
#define LTR_PART_MODULES "modules (ELF objects loaded and unloaded)"
#define LTR_PART_SAMPLES "CPU samples with call stacks (perf_event_open)"
#define LTR_PART_VMEM "virtual memory: mmap, munmap, mremap, brk"
#define LTR_PART_MEMINFO "periodic per-process memory counters"
#define LTR_PART_FILEIO "file activity: opens, closes, bytes read and written per file"

typedef struct ltr_syskw_map {
    const char *keyword;    /* WPR's name, matched ignoring case */
    const char *linux_part; /* NULL: no meaning on Linux */
    bool available;         /* ltr records it today */
} ltr_syskw_map;

/* The entry for a system keyword; NULL if WPR has no such keyword that ltr
 * knows of (then it is reported like a Windows-only one). */
const ltr_syskw_map *ltr_syskw_lookup(const char *keyword);

/* What a Windows event provider becomes. */
typedef enum ltr_winprov_use {
    LTR_WINPROV_SKIP,          /* Windows-only: reported and skipped */
    LTR_WINPROV_PROCESSES,     /* the system provider's processes part */
    LTR_WINPROV_MODULES,       /* the system provider's modules part */
    LTR_WINPROV_HEAP_SNAPSHOT, /* heap snapshots */
} ltr_winprov_use;

typedef struct ltr_winprov {
    const char *guid; /* text form, lower case; NULL for name-only entries */
    const char *name;
    ltr_winprov_use use;
} ltr_winprov;

/* The known Windows provider with this GUID or name (ignoring case), or one
 * made up for names in Windows' own namespaces (Microsoft-Windows-*, ...);
 * NULL for anything else, which becomes an ltr provider. `scratch` backs the
 * made-up entry. */
const ltr_winprov *ltr_winprov_lookup(const char *name, const ltr_guid *guid,
                                      ltr_winprov *scratch);

#endif
