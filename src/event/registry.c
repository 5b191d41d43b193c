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

static int open_registry(ltr_error *err)
{
    char dir[4096], path[4200];
    int rc = ltr_runtime_dir(dir, sizeof dir, err);
    if (rc)
        return rc;
    snprintf(path, sizeof path, "%s/registry", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return ltr_fail(err, errno, "cannot open %s: %s", path, strerror(errno));
    flock(fd, LOCK_EX);
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_size < (off_t)sizeof(ltr_registry) &&
        ftruncate(fd, sizeof(ltr_registry)) != 0) {
        int e = errno;
        close(fd);
        return ltr_fail(err, e, "cannot size %s: %s", path, strerror(e));
    }
    ltr_registry *r = mmap(NULL, sizeof *r, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (r == MAP_FAILED) {
        int e = errno;
        close(fd);
        return ltr_fail(err, e, "cannot map %s: %s", path, strerror(e));
    }
    if (r->magic == 0) {
        r->nsessions = LTR_MAX_SESSIONS;
        r->nproviders = LTR_MAX_PROVIDERS;
        atomic_store(&r->next_incarnation, 1);
        r->magic = LTR_REGISTRY_MAGIC;
    }
    flock(fd, LOCK_UN);
    if (r->magic != LTR_REGISTRY_MAGIC || r->nsessions != LTR_MAX_SESSIONS ||
        r->nproviders != LTR_MAX_PROVIDERS) {
        munmap(r, sizeof *r);
        close(fd);
        return ltr_fail(err, EPROTO, "%s was written by another version of ltr; stop its "
                                     "sessions and remove it", path);
    }
    mapped = r;
    reg_fd = fd;
    return 0;
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

void ltr_registry_lock(void)
{
    while (flock(reg_fd, LOCK_EX) != 0 && errno == EINTR)
        ;
}

void ltr_registry_unlock(void)
{
    flock(reg_fd, LOCK_UN);
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

void ltr_registry_reap(ltr_registry *r)
{
    for (unsigned s = 0; s < LTR_MAX_SESSIONS; s++) {
        ltr_reg_session *rs = &r->sessions[s];
        if (!atomic_load(&rs->incarnation) || ltr_pid_alive((pid_t)rs->recorder_pid))
            continue;
        for (unsigned i = 0; i < LTR_MAX_PROVIDERS; i++)
            atomic_fetch_and(&r->providers[i].sessions, ~(1u << s));
        atomic_store(&rs->incarnation, 0);
    }
}
