/*
 * recorder/capture.c — the recorder's part of `ltr capturestate`: the
 * threads of every process attached to the session, with their names now,
 * as THREAD metadata records. A heap agent names a thread once, at its first
 * event in the session (and again when it renames itself through
 * pthread_setname_np); a name set otherwise (prctl, another thread's
 * pthread_setname_np) and the threads that never wrote an event are named
 * here. Read from /proc: the traced program is never asked or interrupted.
 * A thread is named by the tid its process sees (its own pid namespace's,
 * what the agent writes), not ours: /proc/PID/task lists ours.
 */
#include "recorder/internal.h"
#include "prim/prim.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CAPTURE_THREADS_MAX 65536 /* per process: a bound on what one capture writes */

static void put_thread(recorder *r, uint32_t pid, uint32_t tid, const char *name)
{
    ltr_bytes b = {0};
    size_t rec = ltr_bytes_record_begin(&b, LTR_META_THREAD);
    ltr_bytes_put_u32(&b, pid);
    ltr_bytes_put_u32(&b, tid);
    ltr_bytes_put_u64(&b, ltr_now_ns());
    ltr_bytes_put_str(&b, name);
    ltr_bytes_record_end(&b, rec);
    if (!b.failed)
        ltr_shm_meta_append_to(r->meta, r->meta_capacity, r->shm, b.data, (uint32_t)b.len);
    ltr_bytes_free(&b);
}

/* The threads of pid now; how many were written. */
static unsigned capture_process(recorder *r, uint32_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%u/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return 0; /* gone meanwhile */
    unsigned n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < CAPTURE_THREADS_MAX) {
        uint32_t tid = (uint32_t)strtoul(e->d_name, NULL, 10);
        char comm[64], name[16];
        if (!tid)
            continue;
        snprintf(path, sizeof path, "/proc/%u/task/%u/comm", pid, tid);
        ssize_t len = ltr_read_small_file(path, comm, sizeof comm);
        if (len <= 0)
            continue; /* ended meanwhile */
        comm[strcspn(comm, "\n")] = 0;
        snprintf(name, sizeof name, "%.15s", comm);
        uint32_t own = ltr_task_own_tid(pid, tid); /* the tid its heap events carry */
        if (!own)
            continue; /* ended meanwhile */
        put_thread(r, pid, own, name);
        n++;
    }
    closedir(d);
    return n;
}

unsigned rec_capture_threads(recorder *r)
{
    unsigned n = 0;
    pid_t self = getpid();
    for (unsigned i = 0; i < r->nconns; i++)
        if (r->conns[i].pid > 0 && r->conns[i].pid != self)
            n += capture_process(r, (uint32_t)r->conns[i].pid);
    return n;
}
