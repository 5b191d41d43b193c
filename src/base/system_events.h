/*
 * base/system_events.h — the names the system provider's writer (src/system,
 * run by the recorder) and the trace's readers (src/analyze) agree on
 * (docs/system-provider.md): the provider's name (its GUID is
 * ltr_guid_from_name of it), its keyword bits, one per part, and the ids of
 * its events. In base/ like heap_events.h, so the contract is written once.
 */
#ifndef LTR_BASE_SYSTEM_EVENTS_H
#define LTR_BASE_SYSTEM_EVENTS_H

#define LTR_SYSTEM_PROVIDER "Ltr.System"

/* Keyword bits: a session enables the parts it wants (0 = every part). */
#define LTR_SYSKW_PROCESS 0x1ull  /* ProcessThread: processes and threads */
#define LTR_SYSKW_LOADER 0x2ull   /* Loader: modules */
#define LTR_SYSKW_MEMINFO 0x4ull  /* MemoryInfo: memory counters */
#define LTR_SYSKW_SAMPLES 0x8ull  /* SampledProfile: CPU samples */
#define LTR_SYSKW_VMEM 0x10ull    /* VirtualAllocation: written by the heap agent */
#define LTR_SYSKW_FILEIO 0x20ull  /* FileIO: written by the heap agent */

/* Event ids; they never change (docs/system-provider.md). */
enum ltr_system_event_id {
    LTR_SYS_EV_PROCESS_MEMORY = 1, /* pid, private, rss, rss_file, rss_shmem, swap, minflt, majflt */
    LTR_SYS_EV_SYSTEM_MEMORY = 2,  /* mem_total, mem_available */
    LTR_SYS_EV_PROCESS_START = 3,
    LTR_SYS_EV_PROCESS_EXIT = 4,
    LTR_SYS_EV_THREAD_START = 5,
    LTR_SYS_EV_THREAD_END = 6,
    LTR_SYS_EV_MODULE_LOAD = 7,
    LTR_SYS_EV_MODULE_UNLOAD = 8,
    LTR_SYS_EV_CPU_SAMPLE = 9,
    LTR_SYS_EV_PROCESS_EXEC = 10,
    LTR_SYS_EV_THREAD_NAME = 11,
    LTR_SYS_EV_CPU_SAMPLES_LOST = 12,
};

/* Default interval of the memory counters, and its bounds (ms). */
#define LTR_SYSTEM_INTERVAL_MS_DEFAULT 1000u
#define LTR_SYSTEM_INTERVAL_MS_MIN 10u
#define LTR_SYSTEM_INTERVAL_MS_MAX 3600000u

#endif
