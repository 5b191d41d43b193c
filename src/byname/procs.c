/*
 * byname/procs.c — processes by executable name, as the kernel knows it
 * (/proc/PID/exe): what a session enabling a name accepts and looks for.
 * A process's own word (argv[0], comm, what it says when it attaches) is
 * never taken for its name.
 */
#include "byname/byname.h"
#include "prim/prim.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ltr_exe_name(pid_t pid, char *out, size_t size)
{
    char link[64], exe[4096];
    snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(link, exe, sizeof exe - 1);
    if (n <= 0)
        return n < 0 ? -errno : -ENOENT;
    exe[n] = 0;
    /* An executable replaced on disk since it started reads "PATH (deleted)". */
    static const char deleted[] = " (deleted)";
    size_t d = sizeof deleted - 1;
    if ((size_t)n > d && !strcmp(exe + n - d, deleted))
        exe[n - d] = 0;
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    if (strlen(base) >= size)
        return -ENAMETOOLONG;
    snprintf(out, size, "%s", base);
    return 0;
}

/* The effective user of pid (/proc/PID/status), or LTR_ANY_OWNER if unknown. */
static uid_t euid_of(pid_t pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return LTR_ANY_OWNER;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *u = strstr(buf, "\nUid:");
    unsigned real, eff;
    return u && sscanf(u + 5, "%u %u", &real, &eff) == 2 ? (uid_t)eff : LTR_ANY_OWNER;
}

/* The kernel's name of pid (/proc/PID/comm), without its newline; 0 or -1. */
static int comm_of(pid_t pid, char *out, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    bool got = fgets(out, (int)size, f) != NULL;
    fclose(f);
    if (got)
        out[strcspn(out, "\n")] = 0;
    return got ? 0 : -1;
}

uint32_t ltr_pid_called(const char *name, uid_t owner, char *exe, size_t size)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    uint32_t found = 0;
    pid_t self = getpid();
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        pid_t pid = (pid_t)strtol(e->d_name, NULL, 10);
        char comm[32];
        if (pid == self || comm_of(pid, comm, sizeof comm) != 0 || strcmp(comm, name) != 0 ||
            ltr_exe_name(pid, exe, size) != 0 || !strcmp(exe, name) ||
            (owner != LTR_ANY_OWNER && euid_of(pid) != owner))
            continue;
        found = (uint32_t)pid;
    }
    closedir(d);
    return found;
}

/* TASK_COMM_LEN less its NUL: how much of a name the kernel keeps as comm. */
#define COMM_KEPT 15

bool ltr_byname_reaches_comm(const ltr_byname_list *set, const char *comm, const char *link_exe)
{
    size_t n = strlen(comm);
    for (unsigned k = 0; k < set->n && !set->inert[0]; k++) /* inert: the shim reads none */
        if (!strcmp(set->names[k], comm) || (n == COMM_KEPT && !strncmp(set->names[k], comm, COMM_KEPT)) ||
            (link_exe && !strcmp(set->names[k], link_exe)))
            return true;
    return false;
}

bool ltr_byname_reaches_comm_now(const char *comm)
{
    static ltr_byname_list set;
    char exe[LTR_BYNAME_NAME_MAX + 1];
    ltr_error err;
    if (ltr_byname_read(&set, &err) != 0 || !set.n)
        return false;
    uint32_t called = ltr_pid_called(comm, geteuid(), exe, sizeof exe);
    return ltr_byname_reaches_comm(&set, comm, called ? exe : NULL);
}

int ltr_pids_named(const char *name, uid_t owner, uint32_t *pids, unsigned max)
{
    DIR *d = opendir("/proc");
    if (!d)
        return -errno;
    int found = 0;
    pid_t self = getpid();
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        pid_t pid = (pid_t)strtol(e->d_name, NULL, 10);
        char exe[LTR_BYNAME_NAME_MAX + 1];
        if (pid == self || ltr_exe_name(pid, exe, sizeof exe) != 0 || strcmp(exe, name) != 0 ||
            (owner != LTR_ANY_OWNER && euid_of(pid) != owner))
            continue;
        if ((unsigned)found < max)
            pids[found] = (uint32_t)pid;
        found++;
    }
    closedir(d);
    return found;
}

bool ltr_name_run_by_other(const char *name, uid_t owner, char *out, size_t size)
{
    uint32_t pid;
    if (ltr_pids_named(name, owner, &pid, 1) != 0 || ltr_pids_named(name, LTR_ANY_OWNER, &pid, 1) <= 0)
        return false;
    uid_t its = euid_of((pid_t)pid);
    char who[64], us[64];
    ltr_user_name(its, who, sizeof who);
    snprintf(out, size, "pid %u, named %s, runs as user %s (uid %u): a session reaches the processes of "
             "its own user only, %s (uid %u) here; run ltr as %s (e.g. sudo -u %s ltr ...)", pid, name, who,
             (unsigned)its, ltr_user_name(owner, us, sizeof us), (unsigned)owner, who, who);
    return true;
}
