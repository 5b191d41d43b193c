/*
 * analyze/files_out.c — `ltr analyze --files`: the files each process worked
 * on in the window (the system provider's FileIO events, written by the heap
 * agent: docs/heap-events.md "Files"). FileOpen and FileClose events are
 * decoded here; paths are kept here as text and go to the model (files.h)
 * as numbers, through the heap model's sink in time order (model.h,
 * AN_OP_FILE_*). The report lists per process each path with its opens,
 * failed opens, bytes read and written, most bytes first.
 */
#include "analyze/internal.h"
#include "analyze/sink.h"
#include "base/records.h"
#include "base/system_events.h"
#include "base/units.h"
#include "prim/prim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct path_entry {
    uint64_t key; /* hash of the text */
    uint32_t index;
} path_entry;

static uint64_t hash(const char *s, size_t n)
{
    return an_hash_bytes(AN_HASH_START, s, n);
}

/* The number of a path's text (1, 2, ...; 0 when memory ran out). Texts of
 * the same hash but different are told apart by a walk (rare). */
static uint32_t intern(ltr_analysis *a, const char *s, size_t n)
{
    if (!a->file_index.esize)
        an_hmap_init(&a->file_index, sizeof(path_entry));
    for (uint64_t h = hash(s, n);; h++) {
        int created;
        path_entry *e = an_hmap_put(&a->file_index, h, &created);
        if (!e)
            return 0;
        if (!created) {
            const char *t = a->file_paths[e->index];
            if (strlen(t) == n && !memcmp(t, s, n))
                return e->index;
            continue;
        }
        char *copy = strndup(s, n);
        if (!copy || ltr_reserve((void **)&a->file_paths, &a->capfile_paths, a->nfile_paths + 1,
                                 sizeof *a->file_paths, 64) != 0) {
            free(copy);
            an_hmap_del(&a->file_index, h);
            return 0;
        }
        if (!a->nfile_paths)
            a->file_paths[a->nfile_paths++] = NULL; /* 0: no path */
        e->index = (uint32_t)a->nfile_paths;
        a->file_paths[a->nfile_paths++] = copy;
        return e->index;
    }
}

static int64_t ivar(const ltr_event *ev, const char *name)
{
    int64_t v = -1;
    ltr_event_get_i64(ev, name, &v);
    return v;
}

static uint64_t uvar(const ltr_event *ev, const char *name)
{
    uint64_t v = 0;
    ltr_event_get_u64(ev, name, &v);
    return v;
}

int an_file_feed(ltr_analysis *a, an_sink *sk, const ltr_event *ev)
{
    const ltr_layout *l = ev->layout;
    if (!l || !l->provider || (l->event_id != LTR_FILE_EV_OPEN && l->event_id != LTR_FILE_EV_CLOSE) ||
        memcmp(l->provider->guid.b, a->system_guid.b, 16))
        return 0;
    if (a->pid_set && ev->pid != a->pid)
        return 1;
    a->file_events++;
    an_event e = {.ts = ev->ts, .addr = (uint64_t)ivar(ev, "fd")};
    if (l->event_id == LTR_FILE_EV_OPEN) {
        const char *path = "";
        size_t len = 0;
        ltr_event_get_str(ev, "path", &path, &len);
        e.op = AN_OP_FILE_OPEN;
        e.size = intern(a, path, len);
        e.old_addr = uvar(ev, "error");
    } else {
        e.op = AN_OP_FILE_CLOSE;
        e.size = uvar(ev, "bytes_read");
        e.old_addr = uvar(ev, "bytes_written");
        e.stack = uvar(ev, "reason") == LTR_FILE_CLOSED;
    }
    size_t room;
    an_event *to = an_sink_room(sk, ev->pid, AN_VM_TID(ev->tid), &room);
    *to = e;
    an_sink_commit(sk, ev->pid, AN_VM_TID(ev->tid), 1);
    return 1;
}

void an_files_text_free(ltr_analysis *a)
{
    for (size_t i = 0; i < a->nfile_paths; i++)
        free(a->file_paths[i]);
    free(a->file_paths);
    an_hmap_free(&a->file_index);
}

static const char *path_of(const ltr_analysis *a, uint64_t key)
{
    uint32_t i = (uint32_t)key;
    return i && i < a->nfile_paths ? a->file_paths[i] : "(descriptors not opened in the window: pipes, "
                                                         "sockets, standard streams, files opened before)";
}

static int write_text(ltr_analysis *a, FILE *out, unsigned top)
{
    an_write_head_text(a, out);
    size_t n;
    an_file_stat *v = an_files_ranked(&a->model.files, &n);
    fprintf(out, "\nfiles (FileIO: open, openat, creat and close, bytes of read, write, pread, pwrite, readv and "
            "writev)%s\n", n ? "" : ": the trace has no file events (enable Ltr.System keyword 0x20 with heap "
            "tracing)");
    unsigned shown = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t pid = (uint32_t)(v[i].key >> 32);
        if (!i || pid != (uint32_t)(v[i - 1].key >> 32)) {
            char exe[1024];
            fprintf(out, "\nprocess %u %s:\n  %10s %10s %7s %7s  %s\n", pid,
                    an_process_exe_shown(a, pid, exe, sizeof exe), "read", "written", "opens", "failed", "path");
            shown = 0;
        }
        if (top && shown++ >= top)
            continue;
        const char *path = path_of(a, v[i].key);
        char one_line[4096]; /* the traced program named the file: one line, no control character */
        one_line[ltr_shown_text(path, strnlen(path, sizeof one_line - 1), one_line, false)] = 0;
        /* sizes as the rest of the text prints them (the JSON gives bytes) */
        char rs[32], ws[32];
        fprintf(out, "  %10s %10s %7llu %7llu  %s\n", ltr_size_format(v[i].rbytes, rs, sizeof rs),
                ltr_size_format(v[i].wbytes, ws, sizeof ws), (unsigned long long)v[i].opens,
                (unsigned long long)v[i].failed, one_line);
    }
    free(v);
    return 0;
}

static void jstr(FILE *out, const char *s)
{
    ltr_print_json_string(out, s, strlen(s));
}

static int write_json(ltr_analysis *a, FILE *out, unsigned top)
{
    an_write_head_json(a, out);
    fputs(",\"files\":[", out);
    size_t n;
    an_file_stat *v = an_files_ranked(&a->model.files, &n);
    unsigned shown = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t pid = (uint32_t)(v[i].key >> 32);
        if (!i || pid != (uint32_t)(v[i - 1].key >> 32)) {
            fprintf(out, "%s{\"pid\":%u,\"exe\":", i ? "]}," : "", pid);
            jstr(out, an_process_exe(a, pid));
            fputs(",\"files\":[", out);
            shown = 0;
        }
        if (top && shown >= top)
            continue;
        fprintf(out, "%s{\"path\":", shown++ ? "," : "");
        if ((uint32_t)v[i].key)
            jstr(out, path_of(a, v[i].key));
        else
            fputs("null", out);
        fprintf(out, ",\"opens\":%llu,\"failed_opens\":%llu,\"bytes_read\":%llu,\"bytes_written\":%llu}",
                (unsigned long long)v[i].opens, (unsigned long long)v[i].failed, (unsigned long long)v[i].rbytes,
                (unsigned long long)v[i].wbytes);
    }
    fputs(n ? "]}]}\n" : "]}\n", out);
    free(v);
    return 0;
}

int an_files_write(ltr_analysis *a, FILE *out, ltr_report_format fmt, unsigned top)
{
    switch (fmt) {
    case LTR_REPORT_TEXT: return write_text(a, out, top);
    case LTR_REPORT_JSON: return write_json(a, out, top);
    default: return -EINVAL;
    }
}
