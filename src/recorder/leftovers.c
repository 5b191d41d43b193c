/*
 * recorder/leftovers.c — what a recorder leaves in the runtime directory, and
 * what is done with it when the recorder was killed.
 *
 * Each recorder keeps a record of its session (RUNTIME/NAME.INCARNATION.session:
 * name, pid, mode, start, partial trace, log) locked with flock for as long as
 * it lives, and removes it when it ends in any way but a kill. A record nobody
 * holds locked is a dead session: `ltr status` lists it with its partial trace
 * and how to recover it, until the trace is moved away or `ltr cancel` forgets
 * it. Control sockets of sessions the registry no longer lists are removed.
 */
#include "recorder/client.h"
#include "recorder/internal.h"
#include "event/registry.h"
#include "prim/prim.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static const char record_suffix[] = ".session";

static void put_num(ltr_bytes *kv, const char *key, unsigned long long v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", v);
    ltr_bytes_put_kv(kv, key, buf);
}

/* ---- the recorder's side ------------------------------------------------ */

int rec_record_open(recorder *r, const char *log_path, ltr_error *err)
{
    char tmp[LTR_SESSION_NAME_MAX + 64];
    snprintf(tmp, sizeof tmp, "%s.%llu%s.tmp", r->cfg.name, (unsigned long long)r->incarnation, record_suffix);
    snprintf(r->record_name, sizeof r->record_name, "%s.%llu%s", r->cfg.name,
             (unsigned long long)r->incarnation, record_suffix);
    int fd = openat(r->run_dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return ltr_fail(err, errno, "cannot create %s/%s: %s", r->run_dir, tmp, strerror(errno));
    /* Locked before it has its name: a record seen unlocked is a dead one. */
    flock(fd, LOCK_EX);
    ltr_bytes kv = {0};
    ltr_bytes_put_kv(&kv, "name", r->cfg.name);
    put_num(&kv, "pid", (unsigned long long)getpid());
    ltr_bytes_put_kv(&kv, "mode", r->cfg.mode == LTR_MODE_FILE ? "file" : "memory");
    put_num(&kv, "start_wall_ns", r->start_wall_ns);
    if (r->cfg.mode == LTR_MODE_FILE)
        ltr_bytes_put_kv(&kv, "output", r->cfg.output);
    ltr_bytes_put_kv(&kv, "log", log_path ? log_path : "");
    int rc = kv.failed ? -ENOMEM : ltr_write_all(fd, kv.data, kv.len);
    ltr_bytes_free(&kv);
    if (!rc && renameat(r->run_dirfd, tmp, r->run_dirfd, r->record_name) != 0)
        rc = -errno;
    if (rc) {
        unlinkat(r->run_dirfd, tmp, 0);
        close(fd);
        r->record_name[0] = 0;
        return ltr_fail(err, -rc, "cannot write the session record in %s: %s", r->run_dir, strerror(-rc));
    }
    r->record_fd = fd;
    return 0;
}

void rec_record_close(recorder *r)
{
    if (r->record_fd < 0)
        return;
    unlinkat(r->run_dirfd, r->record_name, 0);
    close(r->record_fd);
    r->record_fd = -1;
}

/* ---- the command line's side -------------------------------------------- */

/* Whether session rs's record is locked (its recorder lives, in whatever pid
 * namespace: a flock is the file's, not the pid's). ctx: the runtime
 * directory's fd. */
static bool record_locked(const ltr_reg_session *rs, uint64_t inc, void *ctx)
{
    char session[LTR_SESSION_NAME_MAX], name[LTR_SESSION_NAME_MAX + 48];
    if (!ltr_reg_session_name(rs, session)) /* a file name in the runtime directory, nothing else */
        return false;
    snprintf(name, sizeof name, "%s.%llu%s", session, (unsigned long long)inc, record_suffix);
    int fd = openat(*(const int *)ctx, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);
    return held;
}

/* ltr_registry_reap, saying so when it cleared a slot no recorder wrote. */
static void reap(ltr_registry *reg, int dirfd, const char *dir)
{
    unsigned forged = ltr_registry_reap(reg, dirfd >= 0 ? record_locked : NULL, &dirfd);
    if (forged)
        fprintf(stderr, "ltr: warning: %u session(s) listed in %s/registry had a name no recorder gives "
                        "(another process wrote it): cleared\n", forged, dir);
}

void ltr_client_reap(ltr_registry *reg)
{
    char dir[4096] = "";
    ltr_error err;
    int dirfd = ltr_runtime_dir_open(dir, sizeof dir, &err);
    reap(reg, dirfd, dir);
    if (dirfd >= 0)
        close(dirfd);
}

static bool live_session(const ltr_registry *reg, const char *name)
{
    /* The array's own size: the shared count can have been written over. */
    for (unsigned s = 0; s < LTR_MAX_SESSIONS; s++)
        if (atomic_load(&reg->sessions[s].incarnation) &&
            !strncmp(reg->sessions[s].name, name, sizeof reg->sessions[s].name))
            return true;
    return false;
}

static bool ends_with(const char *s, const char *suffix, size_t *stem)
{
    size_t n = strlen(s), k = strlen(suffix);
    *stem = n - k;
    return n > k && !strcmp(s + n - k, suffix);
}

/* Reads a record nobody holds: false if its recorder lives, or it is not one. */
static bool read_dead_record(int dirfd, const char *file, ltr_dead_session *d)
{
    int fd = openat(dirfd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    uint8_t buf[16384];
    ssize_t n = flock(fd, LOCK_EX | LOCK_NB) == 0 ? read(fd, buf, sizeof buf) : -1;
    close(fd);
    char num[32], mode[16];
    memset(d, 0, sizeof *d);
    if (n <= 0 || !ltr_kv_find(buf, (size_t)n, "name", d->name, sizeof d->name) ||
        !ltr_kv_find(buf, (size_t)n, "pid", num, sizeof num) ||
        !ltr_kv_find(buf, (size_t)n, "mode", mode, sizeof mode))
        return false;
    d->pid = (unsigned)strtoul(num, NULL, 10);
    d->file_mode = !strcmp(mode, "file");
    if (ltr_kv_find(buf, (size_t)n, "start_wall_ns", num, sizeof num))
        d->start_wall_ns = strtoull(num, NULL, 10);
    ltr_kv_find(buf, (size_t)n, "output", d->output, sizeof d->output);
    ltr_kv_find(buf, (size_t)n, "log", d->log, sizeof d->log);
    snprintf(d->record, sizeof d->record, "%s", file);
    return true;
}

/* Removes a dead session's record, and its log when no live session of
 * that name writes into the same log. */
static void forget(int dirfd, const ltr_registry *reg, const ltr_dead_session *d)
{
    unlinkat(dirfd, d->record, 0);
    char log[LTR_SESSION_NAME_MAX + 8];
    if (ltr_runtime_name(log, sizeof log, d->name, LTR_RUN_LOG) == 0 && !live_session(reg, d->name))
        unlinkat(dirfd, log, 0);
}

/* One pass over the runtime directory under the registry lock: stale sockets
 * removed, dead sessions listed (or forgotten, when `forget_name` names them
 * or their partial trace is gone). */
static int sweep(ltr_dead_session *out, int max, const char *forget_name, ltr_error *err)
{
    ltr_registry *reg = ltr_registry_get(err);
    if (!reg)
        return -err->code;
    char dir[4096];
    int dirfd = ltr_runtime_dir_open(dir, sizeof dir, err);
    if (dirfd < 0)
        return dirfd;
    int listfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dp = listfd >= 0 ? fdopendir(listfd) : NULL;
    if (!dp) {
        int e = errno;
        if (listfd >= 0)
            close(listfd);
        close(dirfd);
        return ltr_fail(err, e, "cannot list %s: %s", dir, strerror(e));
    }
    int n = 0;
    ltr_registry_lock();
    reap(reg, dirfd, dir);
    for (struct dirent *de; (de = readdir(dp));) {
        char stem[256];
        size_t len;
        ltr_dead_session d;
        if (ends_with(de->d_name, LTR_RUN_SOCK, &len) && len < sizeof stem) {
            snprintf(stem, sizeof stem, "%.*s", (int)len, de->d_name);
            if (!live_session(reg, stem)) /* its recorder was killed */
                unlinkat(dirfd, de->d_name, 0);
        } else if (ends_with(de->d_name, ".session.tmp", &len)) {
            unlinkat(dirfd, de->d_name, 0); /* a record is renamed before the lock is let go */
        } else if (ends_with(de->d_name, record_suffix, &len) && read_dead_record(dirfd, de->d_name, &d)) {
            struct stat st;
            d.has_partial = d.file_mode && stat(d.output, &st) == 0;
            if ((forget_name && !strcmp(forget_name, d.name)) || (d.file_mode && !d.has_partial)) {
                forget(dirfd, reg, &d);
                n += forget_name != NULL;
            } else if (!forget_name) {
                if (d.has_partial) {
                    d.partial_size = (uint64_t)st.st_size;
                    d.partial_mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
                }
                snprintf(d.log_path, sizeof d.log_path, "%s/%s", dir, d.log);
                d.log_kept = d.log[0] && faccessat(dirfd, d.log, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
                if (n < max)
                    out[n] = d;
                n++;
            }
        }
    }
    ltr_registry_unlock();
    closedir(dp);
    close(dirfd);
    return n;
}

int ltr_client_dead_sessions(ltr_dead_session *out, int max, ltr_error *err)
{
    return sweep(out, max, NULL, err);
}

int ltr_client_forget(const char *name, ltr_error *err)
{
    return sweep(NULL, 0, name, err);
}
