/*
 * event/registry.c — mapping, locking and slot management of the per-user registry.
 */
#include "event/registry.h"
#include "prim/prim.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;
static ltr_registry *mapped;
static int reg_fd = -1;
static dev_t reg_dev; /* what reg_fd was: a traced program may close it and */
static ino_t reg_ino; /* open a file of its own in its number (reg_fd_ours) */
static uid_t reg_uid;           /* who opened it, */
static dev_t dir_dev;           /* and in which runtime directory */
static ino_t dir_ino;           /* (ltr_registry_reaches) */
static _Atomic bool left;       /* ltr_registry_leave: the mapping is private zeros, the fd closed */
static _Atomic pid_t own_pid;   /* the process whose mapping this is (fork's child: its own) */

static void at_fork_child(void)
{
    atomic_store(&own_pid, getpid());
}

/* The registry open at fd made usable: sized and its header filled by its
 * first user (under its lock), mapped, and checked to be this version's.
 * On failure fd is closed. */
static int map_registry(int fd, const char *path, ltr_registry **out, ltr_error *err)
{
    /* The lock is for the first user, who sizes and fills the header. A holder
     * that is stopped (SIGSTOP, a debugger) must not hang a traced program:
     * past the wait, a registry made already is used without it. */
    bool locked = ltr_flock_by(fd, ltr_now_ns() + LTR_REGISTRY_WAIT_NS) == 0;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(ltr_registry)) {
        int e = !locked ? ETIMEDOUT : -ltr_size_shared_file(fd, sizeof(ltr_registry));
        if (e) {
            close(fd);
            return ltr_fail(err, e, "cannot size %s: %s%s", path,
                            locked ? strerror(e) : "another process holds its lock",
                            e == EFBIG ? " (below the file size limit, 'ulimit -f')" : "");
        }
    }
    void *mem;
    int rc = ltr_map_shared(fd, sizeof(ltr_registry), &mem);
    if (rc) {
        close(fd);
        return ltr_fail(err, -rc, "cannot map %s: %s", path, strerror(-rc));
    }
    ltr_registry *r = mem;
    if (r->magic == 0 && locked) {
        r->nsessions = LTR_MAX_SESSIONS;
        r->nproviders = LTR_MAX_PROVIDERS;
        atomic_store(&r->next_incarnation, 1);
        r->magic = LTR_REGISTRY_MAGIC;
    }
    if (locked)
        flock(fd, LOCK_UN);
    if (!locked && r->magic == 0) {
        ltr_unmap(r, sizeof *r);
        close(fd);
        return ltr_fail(err, ETIMEDOUT, "%s is being made by another process, which holds its "
                                        "lock", path);
    }
    if (r->magic != LTR_REGISTRY_MAGIC || r->nsessions != LTR_MAX_SESSIONS ||
        r->nproviders != LTR_MAX_PROVIDERS) {
        ltr_unmap(r, sizeof *r);
        close(fd);
        return ltr_fail(err, EPROTO, "%s was written by another version of ltr; stop its "
                                     "sessions and remove it", path);
    }
    *out = r;
    return 0;
}

static int open_registry(ltr_error *err)
{
    char dir[4096], path[4200];
    int dirfd = ltr_runtime_dir_open(dir, sizeof dir, err);
    if (dirfd < 0)
        return dirfd;
    snprintf(path, sizeof path, "%s/registry", dir);
    int fd = openat(dirfd, "registry", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    int open_errno = errno;
    struct stat dst;
    if (fstat(dirfd, &dst) == 0)
        dir_dev = dst.st_dev, dir_ino = dst.st_ino;
    reg_uid = geteuid();
    close(dirfd);
    if (fd < 0)
        return ltr_fail(err, open_errno, "cannot open %s: %s", path, strerror(open_errno));
    ltr_registry *r = NULL;
    int rc = map_registry(fd, path, &r, err);
    if (rc)
        return rc;
    struct stat st;
    if (fstat(fd, &st) == 0) {
        reg_dev = st.st_dev;
        reg_ino = st.st_ino;
    }
    atomic_store(&own_pid, getpid());
    static bool registered;
    if (!registered) /* under map_lock */
        registered = pthread_atfork(NULL, NULL, at_fork_child) == 0;
    mapped = r;
    reg_fd = ltr_fd_move_high(fd); /* out of a traced program's way (prim.h) */
    return 0;
}

/* The fd to lock the registry with. A daemon that closes every fd above 2
 * after the agent mapped the registry, then opens its own files, owns that
 * number: locking it took the program's file, and the unlock released the
 * program's own flock on it (its pidfile's, say). Then the registry is
 * opened again (the mapping stays as it is). -1: it cannot be. */
static int lock_fd(void)
{
    struct stat st;
    if (atomic_load(&left)) /* not opened again: it is the user's that this process no longer is */
        return -1;
    if (reg_fd >= 0 && fstat(reg_fd, &st) == 0 && st.st_dev == reg_dev && st.st_ino == reg_ino)
        return reg_fd;
    char dir[4096];
    ltr_error err;
    int dirfd = ltr_runtime_dir_open(dir, sizeof dir, &err);
    int fd = dirfd < 0 ? -1 : openat(dirfd, "registry", O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (dirfd >= 0)
        close(dirfd);
    if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_dev != reg_dev || st.st_ino != reg_ino)) {
        close(fd);
        fd = -1;
    }
    return reg_fd = ltr_fd_move_high(fd); /* the old number is the program's: never closed here */
}

ltr_registry *ltr_registry_get(ltr_error *err)
{
    ltr_registry *r = __atomic_load_n(&mapped, __ATOMIC_ACQUIRE);
    if (r)
        return r;
    pthread_mutex_lock(&map_lock);
    int rc = mapped ? 0 : open_registry(err);
    pthread_mutex_unlock(&map_lock);
    return rc ? NULL : mapped;
}

bool ltr_session_name_ok(const char *name)
{
    size_t n = strnlen(name, LTR_SESSION_NAME_MAX);
    if (n == 0 || n == LTR_SESSION_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i]; /* ASCII alone, whatever the locale */
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
              c == '.' || c == '-'))
            return false;
    }
    return true;
}

bool ltr_reg_session_name(const ltr_reg_session *rs, char out[LTR_SESSION_NAME_MAX])
{
    memcpy(out, rs->name, LTR_SESSION_NAME_MAX);
    if (ltr_session_name_ok(out))
        return true;
    out[0] = 0;
    return false;
}

bool ltr_registry_reaches(int dirfd)
{
    struct stat st;
    return !atomic_load(&left) && geteuid() == reg_uid &&
           (dirfd < 0 || (fstat(dirfd, &st) == 0 && st.st_dev == dir_dev && st.st_ino == dir_ino));
}

bool ltr_registry_leave(void)
{
    ltr_registry *r = __atomic_load_n(&mapped, __ATOMIC_ACQUIRE);
    uid_t ruid, euid, suid;
    int saved = errno;
    /* A vfork child (or a clone without fork's handlers) shares its
     * parent's memory: it gives up nothing, or the parent's would go. */
    if (!r || atomic_load(&left) || getpid() != atomic_load(&own_pid) || getresuid(&ruid, &euid, &suid) != 0 ||
        ruid == reg_uid || euid == reg_uid || suid == reg_uid || atomic_exchange(&left, true)) {
        errno = saved;
        return false;
    }
    /* What fails here (the process's map count at its limit) leaves the
     * mapping as it was; the fd goes anyway. */
    ltr_map_zeros(r, sizeof *r);
    struct stat st;
    if (reg_fd >= 0 && fstat(reg_fd, &st) == 0 && st.st_dev == reg_dev && st.st_ino == reg_ino)
        close(reg_fd); /* a number the program took since is the program's: left alone */
    reg_fd = -1;
    errno = saved;
    return true;
}

void ltr_registry_lock(void)
{
    ltr_flock_by(lock_fd(), 0);
}

int ltr_registry_lock_by(uint64_t deadline_ns)
{
    int fd = lock_fd();
    return fd < 0 ? -EBADF : ltr_flock_by(fd, deadline_ns);
}

void ltr_registry_unlock(void)
{
    struct stat st;
    if (reg_fd >= 0 && fstat(reg_fd, &st) == 0 && st.st_dev == reg_dev && st.st_ino == reg_ino)
        flock(reg_fd, LOCK_UN); /* a closed one's lock went with it */
}

ltr_reg_provider *ltr_registry_find_provider(ltr_registry *r, const ltr_guid *g)
{
    /* The array's own size, not the shared count: any process of the user
     * can write that, and a count past the array read past the mapping. */
    for (unsigned i = 0; i < LTR_MAX_PROVIDERS; i++) {
        ltr_reg_provider *p = &r->providers[i];
        if (atomic_load(&p->used) && !memcmp(&p->guid, g, sizeof *g))
            return p;
    }
    return NULL;
}

ltr_reg_provider *ltr_registry_provider(ltr_registry *r, const ltr_guid *g, const char *name)
{
    ltr_reg_provider *free_slot = NULL;
    /* The array's own size, not the shared count: any producer can write that. */
    for (unsigned i = 0; i < LTR_MAX_PROVIDERS; i++) {
        ltr_reg_provider *p = &r->providers[i];
        if (!atomic_load(&p->used)) {
            if (!free_slot)
                free_slot = p;
            continue;
        }
        if (!memcmp(&p->guid, g, sizeof *g)) {
            if (!p->name[0] && name && *name)
                snprintf(p->name, sizeof p->name, "%s", name);
            return p;
        }
    }
    if (!free_slot)
        return NULL;
    memset(free_slot, 0, sizeof *free_slot);
    free_slot->guid = *g;
    snprintf(free_slot->name, sizeof free_slot->name, "%s", name ? name : "");
    atomic_store(&free_slot->used, 1);
    return free_slot;
}

bool ltr_registry_release(ltr_registry *r, unsigned s, uint64_t incarnation)
{
    ltr_reg_session *rs = &r->sessions[s];
    if (!incarnation || atomic_load(&rs->incarnation) != incarnation)
        return false; /* ended already, and the slot may be another session's now */
    for (unsigned i = 0; i < LTR_MAX_PROVIDERS; i++)
        atomic_fetch_and(&r->providers[i].sessions, ~(1u << s));
    atomic_store(&rs->incarnation, 0);
    return true;
}

unsigned ltr_registry_reap(ltr_registry *r, bool (*lives)(const ltr_reg_session *rs, uint64_t inc, void *ctx),
                           void *ctx)
{
    unsigned forged = 0;
    for (unsigned s = 0; s < LTR_MAX_SESSIONS; s++) {
        ltr_reg_session *rs = &r->sessions[s];
        uint64_t inc = atomic_load(&rs->incarnation);
        char name[LTR_SESSION_NAME_MAX];
        /* A slot whose name no recorder could have written (a recorder
         * writes it, under the lock held here, before the incarnation) is
         * a scribbler's: no session. */
        bool named = inc && ltr_reg_session_name(rs, name);
        if (inc && (!named || (!ltr_pid_alive((pid_t)rs->recorder_pid) && !(lives && lives(rs, inc, ctx)))))
            forged += ltr_registry_release(r, s, inc) && !named;
    }
    return forged;
}
