/*
 * agent/credentials.c — setuid, seteuid, setreuid and setresuid, replaced
 * (agent.map; redirect.c when the agent comes late) so that a process that
 * stops being the user whose registry it mapped gives that registry up
 * (ltr_registry_leave): a root service traced by name whose workers become
 * www-data (nginx's) kept root's registry mapped writable, and code run in
 * such a worker could enable or disable root's sessions' providers and
 * forge what root's `ltr` commands read (docs/design.md, "A shim in every
 * process").
 *
 * Each calls the next definition and returns exactly what it returned,
 * with its errno; only after a call that succeeded does it look (a
 * getresuid, and when the registry goes one mmap and a close). A setuid
 * made by raw syscall(2) is not seen here: the producer gives the registry
 * up when it next tries to attach (producer.c, connect_session). The
 * setgid family needs nothing: the registry is its owner's alone (0600).
 */
#include "agent/agent.h"
#include "agent/redirect.h"
#include "event/registry.h"

#include <errno.h>
#include <sys/types.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* The call's result, the registry given up after a success, errno as the call left it. */
static int after(int rc)
{
    if (rc == 0 && redirect_arrival() != AGENT_DUPLICATE)
        ltr_registry_leave();
    return rc;
}

/* The next definition of name, looked up once (a race looks it up twice: the same answer). */
static void *next_of(void **cache, const char *name)
{
    void *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (!f) {
        f = agent_next_sym(name);
        __atomic_store_n(cache, f, __ATOMIC_RELEASE);
    }
    if (!f)
        errno = ENOSYS;
    return f;
}

typedef int (*set1_fn)(uid_t);
typedef int (*set2_fn)(uid_t, uid_t);
typedef int (*set3_fn)(uid_t, uid_t, uid_t);

EXPORT int setuid(uid_t uid)
{
    static void *next;
    set1_fn f = (set1_fn)next_of(&next, "setuid");
    return f ? after(f(uid)) : -1;
}

EXPORT int seteuid(uid_t euid)
{
    static void *next;
    set1_fn f = (set1_fn)next_of(&next, "seteuid");
    return f ? after(f(euid)) : -1;
}

EXPORT int setreuid(uid_t ruid, uid_t euid)
{
    static void *next;
    set2_fn f = (set2_fn)next_of(&next, "setreuid");
    return f ? after(f(ruid, euid)) : -1;
}

EXPORT int setresuid(uid_t ruid, uid_t euid, uid_t suid)
{
    static void *next;
    set3_fn f = (set3_fn)next_of(&next, "setresuid");
    return f ? after(f(ruid, euid, suid)) : -1;
}
