/*
 * analyze/files.h — the files a process worked on (the system provider's
 * FileIO events, written by the heap agent: docs/heap-events.md "Files"), as
 * the analysis keeps them: per process and path, the opens (and failed
 * ones) and the bytes read and written. The agent counts bytes per
 * descriptor and writes them at its close (or at exit), so bytes count in
 * the window of their close; a descriptor's path is that of its last open.
 * Paths are numbers here (the analysis keeps their text: files_out.c), so
 * the model can run on the model thread.
 *
 * Fed in time order through the heap model's sink (model.h, AN_OP_FILE_*),
 * so that an open on one thread and a close on another pair up whatever the
 * order of their buffers in the file.
 */
#ifndef LTR_ANALYZE_FILES_H
#define LTR_ANALYZE_FILES_H

#include "base/hmap.h"

#include <stdint.h>

/* Per (process, path): path 0 is "descriptors not opened in the trace". */
typedef struct an_file_stat {
    uint64_t key; /* pid << 32 | path (hmap key) */
    uint64_t opens, failed, rbytes, wbytes;
} an_file_stat;

typedef struct an_files {
    uint64_t from, to;
    an_hmap fds;   /* pid << 32 | (uint32_t)fd -> an_fd_path */
    an_hmap stats; /* -> an_file_stat */
    int oom;
} an_files;

void an_files_init(an_files *f);
void an_files_free(an_files *f);
/* An open of path (its number) at ts: fd, or errno (fd < 0). */
void an_files_open(an_files *f, uint32_t pid, uint64_t ts, int64_t fd, uint32_t path, uint64_t error);
/* The bytes of fd, at its close (closed: the descriptor is gone) or not
 * (at exit, or one call on a descriptor past the agent's table). */
void an_files_close(an_files *f, uint32_t pid, uint64_t ts, int64_t fd, uint64_t rbytes, uint64_t wbytes,
                    int closed);
/* Every (process, path) with something in the window, by process, then
 * bytes (read + written), then opens; malloc'd, *n of them. */
an_file_stat *an_files_ranked(const an_files *f, size_t *n);

#endif
