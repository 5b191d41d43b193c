/*
 * system/meminfo.c — a process's memory counters and the machine's available
 * memory, from /proc. Private bytes are RssAnon + VmSwap (PRODUCT.md,
 * "Windows terms"): the anonymous memory only this process holds, resident
 * or swapped out.
 */
#include "system/system.h"
#include "prim/prim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value of "Key:   123 kB" in a /proc status-like text, in bytes; -1 if absent. */
static int64_t kb_field(const char *text, const char *key)
{
    size_t klen = strlen(key);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, key, klen) && p[klen] == ':')
            return (int64_t)strtoull(p + klen + 1, NULL, 10) * 1024;
    return -1;
}

static uint64_t or_zero(int64_t v) { return v < 0 ? 0 : (uint64_t)v; }

/* The fields of /proc/PID/stat after the command name, which may hold any
 * byte but ends at the last ')'. *n fields at most are split out. */
static int stat_fields(pid_t pid, char *buf, size_t size, char **f, int *n)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    ssize_t len = ltr_read_small_file(path, buf, size);
    if (len < 0)
        return (int)len;
    char *p = strrchr(buf, ')');
    if (!p)
        return -EPROTO;
    int k = 0;
    for (char *save = NULL, *t = strtok_r(p + 1, " \n", &save); t && k < *n; t = strtok_r(NULL, " \n", &save))
        f[k++] = t;
    *n = k;
    return 0;
}

/* Fields after the name, counted from 0 = state (proc(5) numbers them from 3). */
enum { ST_MINFLT = 7, ST_MAJFLT = 9, ST_STARTTIME = 19, ST_COUNT = 20, ST_EXIT_CODE = 49 };

uint64_t ltr_proc_start_ticks(pid_t pid)
{
    char buf[1024], *f[ST_COUNT];
    int n = ST_COUNT;
    return stat_fields(pid, buf, sizeof buf, f, &n) == 0 && n == ST_COUNT ? strtoull(f[ST_STARTTIME], NULL, 10) : 0;
}

int ltr_proc_exit_status(pid_t pid, uint64_t start_ticks, int *status)
{
    char buf[1024], *f[ST_EXIT_CODE + 1];
    int n = ST_EXIT_CODE + 1, rc = stat_fields(pid, buf, sizeof buf, f, &n);
    if (rc < 0)
        return rc == -ENOENT ? -ESRCH : rc;
    /* the exit code field (since Linux 3.5) is shown to those who may ptrace it: 0 else */
    if (n <= ST_EXIT_CODE || f[0][0] != 'Z' || strtoull(f[ST_STARTTIME], NULL, 10) != start_ticks)
        return -ESRCH;
    *status = atoi(f[ST_EXIT_CODE]);
    return 0;
}

int ltr_proc_memory_read(pid_t pid, ltr_proc_memory *out)
{
    char path[64], status[8192], stat[1024], *f[ST_COUNT];
    memset(out, 0, sizeof *out);
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    ssize_t len = ltr_read_small_file(path, status, sizeof status);
    if (len < 0)
        return (int)len;
    int n = ST_COUNT, rc = stat_fields(pid, stat, sizeof stat, f, &n);
    if (rc < 0)
        return rc;
    if (n < ST_COUNT)
        return -EPROTO;
    int64_t rss = kb_field(status, "VmRSS");
    if (rss < 0) /* a zombie: its memory is gone, and so is VmRSS */
        return -ENOENT;
    out->rss = (uint64_t)rss;
    out->rss_anon = or_zero(kb_field(status, "RssAnon"));
    out->rss_file = or_zero(kb_field(status, "RssFile"));
    out->rss_shmem = or_zero(kb_field(status, "RssShmem"));
    out->swap = or_zero(kb_field(status, "VmSwap"));
    out->private_bytes = out->rss_anon + out->swap;
    out->minflt = strtoull(f[ST_MINFLT], NULL, 10);
    out->majflt = strtoull(f[ST_MAJFLT], NULL, 10);
    out->start_ticks = strtoull(f[ST_STARTTIME], NULL, 10);
    return 0;
}

int ltr_system_memory_read(uint64_t *total, uint64_t *available)
{
    char buf[8192];
    ssize_t len = ltr_read_small_file("/proc/meminfo", buf, sizeof buf);
    if (len < 0)
        return (int)len;
    int64_t t = kb_field(buf, "MemTotal"), a = kb_field(buf, "MemAvailable");
    *total = or_zero(t);
    *available = a >= 0 ? (uint64_t)a : or_zero(kb_field(buf, "MemFree"));
    return t < 0 ? -EPROTO : 0;
}
