/*
 * agent/procmaps.h — what the kernel says of the process's own mappings
 * (/proc/self/maps): one mapping asked by address (PROCMAP_QUERY, Linux
 * 6.11) or the file read line by line on older kernels. The late agent's
 * sweep asks the protection of RELRO ranges (redirect.c); the module lists
 * ask the file of an object the loader names by a relative path (modules.c,
 * unwind.c).
 */
#ifndef LTR_AGENT_PROCMAPS_H
#define LTR_AGENT_PROCMAPS_H

#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>

/* PROCMAP_QUERY's argument (linux/fs.h), declared here: the build
 * machine's headers may be older than the kernel the agent runs on. */
struct procmaps_query {
    uint64_t size, query_flags, query_addr;
    uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
    uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
    uint64_t vma_name_addr, build_id_addr;
};
#define PROCMAPS_QUERY _IOWR('f', 17, struct procmaps_query)
#define PROCMAPS_QUERY_READABLE 0x01
#define PROCMAPS_QUERY_WRITABLE 0x02

/* One line of /proc/self/maps: its range, its "rwxp" letters and its name
 * (the rest of the line, "" for none). Return false to stop. */
typedef bool (*procmaps_line_fn)(uintptr_t lo, uintptr_t hi, const char *perms, const char *name, void *ctx);
/* Reads the maps file open at fd from where it stands, a line at a time. */
void procmaps_each(int fd, procmaps_line_fn fn, void *ctx);

/* The path of the object the loader names in info, malloc'd: its own
 * name when that is absolute or no path (the vDSO's); for a relative one
 * (dlopen("./x.so")), which
 * names the file only from the working directory of that moment, the file
 * the kernel has mapped at its first segment, if it still exists there;
 * NULL for the main program's empty name. */
char *procmaps_object_path(const struct dl_phdr_info *info);

#endif
