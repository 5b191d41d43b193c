/*
 * tests/programs/hole.c — a producer that ends the way a thread killed inside
 * ltr_ring_publish does (an exec or a kill between its two steps), for
 * tests/e2e/test_queue_hole.c: that happens about 1 time in 200 in
 * test_exec_order, far too rarely to test the recorder's handling of it
 * (recorder/drain.c, finish_unqueued and take_past_holes). Here it happens
 * every time: the program writes its events like any producer, then does to
 * the buffer its thread still holds what ltr_ring_publish does up to its
 * store (ltr_ring_claim: the buffer marked FULL, a queue position claimed
 * with the fetch_add of the queue tail) and never stores the buffer into
 * the claimed slot (ltr_ring_store). That leaves a hole at the queue's head, which holds back
 * every buffer published behind it, and a FULL buffer in no queue slot.
 *
 *   hole SESSION EVENTS exit|stay|late:MS
 *
 * exit: the process is gone at once (the recorder harvests it). stay: it
 * stays alive, writing nothing, until killed (or 60 s), so that the session
 * ends with the hole's maker still there. late:MS: it makes the last store
 * MS ms late, as a thread stopped there (SIGSTOP, a debugger, a frozen
 * cgroup) and let go (the slot closed by then if the recorder stepped over
 * it: stored at a new position), then publishes a ring's worth of empty
 * buffers but one, prints "stored" and stays, as stay does. Prints,
 * once the hole is made:
 * "hole=POS buffer=IDX held=EVENTS pid=PID", held being the events of the
 * half-published buffer.
 */
#include <ltr/provider.h>

#include "event/producer.h"
#include "event/registry.h"
#include "event/shm.h"
#include "ring/ring.h"
#include "session_named.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static ltr_provider prov = {.name = "Test.Hole", .state = &ltr_never_enabled};
static const ltr_field_desc fields[] = {{"seq", LTR_TYPE_UVAR}};
static ltr_event_desc ev = {.provider = &prov, .id = 1, .name = "BeforeHole", .fields = fields,
                            .field_count = 1};

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    long late_ms = !strncmp(argv[argc - 1], "late:", 5) ? atol(argv[argc - 1] + 5) : 0;
    if (argc != 4 || (strcmp(argv[3], "exit") && strcmp(argv[3], "stay") && late_ms <= 0)) {
        fprintf(stderr, "usage: hole SESSION EVENTS exit|stay|late:MS\n");
        return 2;
    }
    long events = atol(argv[2]);
    ltr_provider_register(&prov);
    for (int i = 0; i < 500 && !ltr_event_enabled(&ev); i++)
        sleep_ms(10);
    if (!ltr_event_enabled(&ev)) {
        fprintf(stderr, "hole: provider Test.Hole was not enabled in time\n");
        return 1;
    }
    for (long i = 0; i < events; i++) {
        ltr_write_result res;
        const ltr_value v[] = {LTR_UVAR((uint64_t)i)};
        ltr_event_write_values(&ev, v, 1, &res);
        if (res.sessions_written != 1) { /* the test counts on every one being in a buffer */
            fprintf(stderr, "hole: event %ld not written\n", i);
            return 1;
        }
    }
    ltr_registry *reg;
    unsigned slot;
    const char *why;
    ltr_attach *a = tp_session_named(argv[1], &reg, &slot, &why);
    if (!a) {
        fprintf(stderr, "hole: session %s %s\n", argv[1], why);
        return 1;
    }
    /* The buffer this (only) thread still writes into: the last events. */
    ltr_ring_view *view = &a->lay->rings[0];
    uint32_t idx = LTR_RING_NONE, found = 0;
    for (uint32_t i = 0; i < view->nbuf; i++) {
        ltr_ring_buf *b = ltr_ring_vbuf(view, i);
        if (atomic_load(&b->state) == LTR_BUF_ACTIVE && b->owner == a->owner)
            idx = i, found++;
    }
    if (found != 1) {
        fprintf(stderr, "hole: %u active buffers of this process, not 1\n", found);
        return 1;
    }
    ltr_ring_buf *b = ltr_ring_vbuf(view, idx);
    uint32_t held = LTR_COMMIT_EVENTS(atomic_load(&b->commit));
    /* ltr_ring_publish's first steps (ring.c), and not its last: the slot
     * at pos stays open, as when the thread dies right there. */
    uint64_t pos = ltr_ring_claim(view, idx);
    printf("hole=%llu buffer=%u held=%u pid=%d\n", (unsigned long long)pos, idx, held, (int)getpid());
    fflush(stdout);
    if (late_ms) { /* ltr_ring_publish's last store, late */
        sleep_ms(late_ms);
        ltr_ring_store(view, pos, idx);
        for (uint32_t i = 0; i + 1 < view->nbuf; i++) {
            uint32_t empty = ltr_ring_acquire(view, b->pid, b->tid, a->owner);
            if (empty == LTR_RING_NONE) {
                fprintf(stderr, "hole: no free buffer for the empty ones\n");
                _exit(1);
            }
            ltr_ring_publish(view, empty);
        }
        printf("stored\n");
        fflush(stdout);
    }
    if (!strcmp(argv[3], "stay") || late_ms)
        for (int i = 0; i < 6000; i++) /* killed by the test; a bound if it is not */
            sleep_ms(10);
    /* No exit handlers: they would publish the buffer this thread still
     * thinks it holds, which a dead thread never does. */
    _exit(0);
}
