/*
 * tests/programs/session_named.h — a hostile test program's attachment to a
 * running session found by its name, shared by scribbler.c and hole.c, which
 * write into the session's shared memory behind the producer's back.
 *
 * The attachment is waited for: a producer waits 250 ms at most for the
 * recorder's answer and goes on without it (a traced program never waits on
 * ltr), and a recorder busy with 40 threads' events on a loaded machine
 * answered later: the scribbler said "session ff not found" and exited 1
 * (test_shm_fuzz's fields seed 9, 2 of 24 runs by hand under load).
 */
#ifndef LTR_TEST_SESSION_NAMED_H
#define LTR_TEST_SESSION_NAMED_H

#include "event/producer.h"
#include "event/registry.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

/* The attachment to session name, its registry and slot in *reg and *slot;
 * NULL with *why saying which failed: not found, gone, or not answered in
 * 30 s (the tests' own kill comes first). */
static inline ltr_attach *tp_session_named(const char *name, ltr_registry **reg, unsigned *slot,
                                           const char **why)
{
    ltr_error err;
    *why = "not found";
    *reg = ltr_registry_get(&err);
    for (*slot = 0; *reg && *slot < LTR_MAX_SESSIONS; ++*slot) {
        ltr_reg_session *s = &(*reg)->sessions[*slot];
        if (!atomic_load(&s->incarnation) || strcmp(s->name, name))
            continue;
        bool unreachable = true;
        ltr_attach *a = NULL;
        for (int i = 0; i < 3000 && !a && unreachable; i++)
            if (!(a = ltr_producer_session(*reg, *slot, &unreachable)) && unreachable)
                nanosleep(&(struct timespec){0, 10 * 1000000}, NULL);
        *why = unreachable ? "not answered in 30 s" : "gone";
        return a;
    }
    return NULL;
}

#endif
