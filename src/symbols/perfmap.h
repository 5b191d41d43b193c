/*
 * symbols/perfmap.h — names of JIT-compiled code from the perf map its
 * program writes as it compiles (node --perf-basic-prof, Java's
 * perf-map-agent, LuaJIT, .NET, python3.12 -X perf): /tmp/perf-PID.map,
 * one "START SIZE name" line (hex) per function, as perf reads it
 * (tools/perf/Documentation/jit-interface.txt). No ELF module holds such
 * code, so its frames were addresses only.
 *
 * /tmp is everyone's: a map is read only if it is a regular file (never
 * through a symlink, never a FIFO's open), owned by the process's user or
 * root, not writable by others, and of bounded size, as perf trusts one;
 * and, unlike perf, only if it is the file written in that directory: not
 * a file mounted over the name (a process's own mount namespace, which a
 * user namespace gives anyone, can put root's /etc/shadow or /proc/kmsg
 * there) nor one with other names (a hard link to another's file);
 * its lines are the program's to choose, so what is read is bounded too
 * (lines, names) and a line that does not parse is skipped. Of entries that
 * overlap, the last written wins: code moved or compiled again.
 */
#ifndef LTR_SYMBOLS_PERFMAP_H
#define LTR_SYMBOLS_PERFMAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What a map may cost the end of a recording: 128 MiB of short lines
 * (6.5 M entries) took 1.8 s and a peak of 492 MB; 1 M of them, 0.4 s and
 * 87 MB (longer names add to it, 64 MiB at most). */
#define SYM_PERFMAP_MAX_BYTES ((uint64_t)64 << 20) /* a bigger map is not read */
#define SYM_PERFMAP_MAX_ENTRIES (1u << 20)         /* lines past it are skipped */
#define SYM_PERFMAP_MAX_NAME 4096                  /* longer names are cut */

typedef struct sym_perfmap sym_perfmap;

/* The entries of the map open at fd (read to its end, at most max_bytes);
 * NULL when memory ran out. */
sym_perfmap *sym_perfmap_read(int fd, uint64_t max_bytes);
void sym_perfmap_free(sym_perfmap *m);
/* The name of the function holding addr (the last entry written that
 * holds it), or NULL. */
const char *sym_perfmap_find(const sym_perfmap *m, uint64_t addr);
/* Lines that were entries, and lines skipped (not "hex hex name", past the
 * line bound, or past SYM_PERFMAP_MAX_ENTRIES). */
size_t sym_perfmap_entries(const sym_perfmap *m);
size_t sym_perfmap_skipped(const sym_perfmap *m);

/* Whether the map at path may be read for a process run by uid (or a
 * second uid, its effective one; root's are always), whose saying who that
 * is: 0 and the fd (read-only) in *fd, -ENOENT when there is none, or
 * -errno with why (a sentence, no path) in why. */
int sym_perfmap_open(const char *path, uid_t uid, uid_t uid2, const char *whose, int *fd, char *why,
                     size_t whysize);

/* The map of process pid (as this process sees pid): while it lives (not
 * ended, as the caller knows, and not a zombie), the /tmp of its own mount
 * namespace named by its own pid (its pid namespace's:
 * /proc/PID/root/tmp/perf-NSPID.map), its users trusted; once it ended,
 * /tmp/perf-PID.map, this process's user trusted. path (the file looked
 * for) is filled whatever the outcome. Returns as sym_perfmap_open, and the
 * map read in *out. */
int sym_perfmap_load(uint32_t pid, int ended, sym_perfmap **out, char *path, size_t pathsize, char *why,
                     size_t whysize);

#endif
