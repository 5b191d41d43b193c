/*
 * tests/programs/scribbler.c — a hostile (or very buggy) traced program, for the
 * shared-memory fuzz test: it writes some events into a session like any
 * producer, then writes random 4-byte words over the session's shared memory
 * (its header, a ring, the metadata region or the loss counters), in a few
 * bursts while the recorder works, and exits without a word: the recorder
 * must survive it and keep the other processes' events.
 *
 *   scribbler SESSION SEED WRITES REGION
 *
 * Its own 500 events come first, then events_sent=N is printed (those
 * written or counted lost: a trace's loss count holds them beside other
 * programs' events), before it looks for the session's memory.
 *
 * REGION: first64k (the first 64 KiB, as in the report of issue 10), ring
 * (collector 0's header, buffer headers and queue), meta (the part of the
 * metadata region in use), procs (the per-process loss counters), registry
 * (the words of the per-user registry a recorder reads: its table sizes and
 * the session's counters of events lost unattached), fields (the words
 * producers read: see scribble_fields; WRITES rounds, this program writing
 * its own events between them, while other producers write), end:PID (no
 * scribble: a well-formed PROCESS_END record for process PID appended to
 * the metadata region, as only the recorder may write one), flood:N (no
 * scribble: N well-formed THREAD records of 1 KiB appended at once, more
 * than a small region holds; prints lost=K, the appends refused),
 * floodwhile:PATH (the same, again and again while file PATH exists: the
 * region kept full while other processes join the session),
 * holes:PATH (collector 0's queue tail a ring ahead of its head, and every
 * queue slot emptied, again and again while file PATH exists: at each
 * position a publication under way, that a save may wait for),
 * seqs:PATH (every buffer's seq of collector 0 moved on, again and again
 * while file PATH exists, as if each were taken over: a save must not take
 * what it wrote back out of the overwritten count for that alone),
 * dupes:PATH (every queue slot of collector 0 from its head to its tail
 * set to the buffer at its head, and that buffer's seq moved on again and
 * again while file PATH exists, as if it were taken over and published
 * again at each position: a save must write it once; prints dupes=N, the
 * positions set),
 * state:N (the session's state word set to N once, as only the recorder
 * may: 2 is STOPPING, which producers take for a stop under way),
 * layouts:MB (no scribble: well-formed LAYOUT records of 60 000-byte
 * names, MB megabytes of them, each waited for while the region is full;
 * prints appended=MB), process:PID:EXE (no scribble: a well-formed
 * PROCESS record naming process PID as EXE, as only the recorder may
 * write one), stack:PID:N:HEXADDR (no scribble: well-formed STACK records
 * of process PID, ids 1 to N, each of the one frame HEXADDR; prints
 * lost=K), nodes:PID:N:HEXADDR (the same as FRAME_NODES records: nodes 1
 * to N of process PID, each an outermost frame HEXADDR), module:PID:HEXSTART:HEXEND:PATH (no scribble: a
 * well-formed MODULE record loading PATH for process PID over [START, END), bias START, no build-id),
 * unload:PID:HEXBIAS:HEXSTART:HEXEND:PATH (the same, unloading PATH of bias BIAS), attach:PID (no scribble: an attach request on the
 * session's socket that claims to come from process PID, as the agent's
 * does from its own; prints answered=1 if the recorder took it, 0 if it
 * closed the connection), killedpublishing (no scribble: this process's
 * buffer marked FULL, as ltr_ring_publish does first, and the process gone
 * at once, as one killed there: the buffer in no queue slot),
 * killedclaiming (the same, killed one step later: its queue position
 * claimed too, the slot left empty), killedclaimingmany:N (the same with
 * N buffers more, as N threads killed there at once).
 */
#include <ltr/provider.h>

#include "event/event.h"
#include "event/producer.h"
#include "event/registry.h"
#include "event/shm.h"
#include "base/records.h"
#include "prim/prim.h"
#include "session_named.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/un.h>
#include <unistd.h>

static ltr_provider prov = {.name = "Test.Scribbler", .state = &ltr_never_enabled};
static const ltr_field_desc fields[] = {{"seq", LTR_TYPE_UVAR}};
static ltr_event_desc ev = {.provider = &prov, .id = 1, .name = "Scribble", .fields = fields,
                            .field_count = 1};

static uint64_t rng;

static uint32_t next_random(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* Mostly random words; some of the values a careless check lets through. */
static uint32_t scribble_value(uint32_t nbuf)
{
    switch (next_random() % 8) {
    case 0: return 0;
    case 1: return UINT32_MAX;
    case 2: return next_random() % (nbuf + 2);
    case 3: return next_random() % 4096;
    default: return next_random();
    }
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static ltr_registry *reg;
static unsigned slot;


/* The registry words a recorder reads (its name and incarnation are left:
 * without them the session cannot be found, which is not the recorder's fault). */
static void scribble_registry(int writes)
{
    uint32_t *words[2 + 8] = {&reg->nsessions, &reg->nproviders};
    for (int i = 0; i < 8; i++)
        words[2 + i] = (uint32_t *)&reg->sessions[slot].unattached_lost[0] + i;
    for (int i = 0; i < writes; i++)
        *words[next_random() % 10] = scribble_value(16);
}

static uint64_t random64(void)
{
    return (uint64_t)next_random() << 32 | next_random();
}

/* Garbage for a 64-bit word: an index or offset just out of bounds, a
 * huge one, zero, or random. */
static uint64_t scribble_value64(uint64_t bound)
{
    switch (next_random() % 6) {
    case 0: return 0;
    case 1: return UINT64_MAX;
    case 2: return bound + next_random() % 64;
    case 3: return (uint64_t)1 << (32 + next_random() % 31);
    default: return random64();
    }
}

/* The words a producer process reads from the session's shared memory,
 * each written over with garbage a careless check lets through: the
 * header's offsets and counts, collector 0's ring header, its free stack
 * head, its queue positions and slots, its buffers' headers and commit
 * words. Any other producer of the session must go on unharmed (its events
 * lost, counted), and so must this one (it writes its own events after
 * each round of the second half). Deterministic for a seed. */
static void scribble_fields(ltr_shm *shm, uint64_t size, int rounds)
{
    ltr_ring *r = ltr_shm_ring(shm, 0);
    uint32_t nbuf = r->nbuf;
    ltr_ring_buf *bufs = (ltr_ring_buf *)((uint8_t *)r + r->bufs_offset);
    _Atomic uint64_t *slots = (_Atomic uint64_t *)((uint8_t *)r + r->queue_offset);
    for (int i = 0; i < rounds; i++) {
        uint32_t b = next_random() % nbuf;
        switch (next_random() % 17) {
        case 0: r->nbuf = next_random() % 2 ? 0 : scribble_value(nbuf) ; break;
        case 1: r->buffer_size = scribble_value(nbuf) | (next_random() % 2 ? 0 : 1u << 31); break;
        case 2: r->bufs_offset = scribble_value64(size); break;
        case 3: r->data_offset = scribble_value64(size); break;
        case 4: r->queue_offset = scribble_value64(size); break;
        case 5: /* a head naming a buffer past the ring, or none that exists */
            atomic_store(&r->free_head, random64() << 32 | (nbuf + 1 + next_random() % 1000));
            break;
        case 6: atomic_store(&bufs[b].next, scribble_value(nbuf) + nbuf); break;
        case 7: /* queue slots naming buffers past the ring, or dead positions, at
                 * their positions' turns (ring.h), or at any */
            for (uint32_t k = 0; k < nbuf; k++) {
                uint64_t head = atomic_load(&r->queue_head), pos = head + (k + nbuf - head % nbuf) % nbuf;
                uint32_t turn = next_random() % 4 ? LTR_RING_TURN(pos, nbuf) : (uint32_t)random64();
                atomic_store(&slots[k], LTR_RING_SLOT(turn, next_random() % 2 ? UINT32_MAX
                                                                                 : nbuf + 1 + next_random() % 1000));
            }
            break;
        case 8: atomic_store(&r->queue_head, scribble_value64(nbuf)); break;
        case 9: atomic_store(&r->queue_tail, scribble_value64(nbuf)); break;
        case 10: /* bytes committed past the buffer */
            atomic_store(&bufs[b].commit, scribble_value64(r->buffer_size) | (uint64_t)random64() << 32);
            break;
        case 11: atomic_store(&bufs[b].state, scribble_value(nbuf)); break;
        case 12: shm->collectors[next_random() % LTR_MAX_COLLECTORS].ring_offset = scribble_value64(size); break;
        case 13: shm->ncollectors = scribble_value(LTR_MAX_COLLECTORS); break;
        case 14:
            shm->meta_offset = scribble_value64(size);
            shm->meta_capacity = scribble_value64(size);
            break;
        case 15:
            shm->procs_offset = scribble_value64(size);
            shm->nprocs = scribble_value(LTR_SHM_PROCS) | (next_random() % 2 ? 0 : 1u << 30);
            break;
        case 16: /* the metadata ring's places: behind, ahead, wrapped */
            atomic_store(next_random() % 2 ? &shm->meta_read : &shm->meta_used, scribble_value64(size));
            break;
        }
        atomic_store(&r->free_count, scribble_value(nbuf));
        for (uint64_t k = 0; i >= rounds / 2 && k < 50; k++) { /* in the second half, this producer too */
            const ltr_value v[] = {LTR_UVAR(k)};
            ltr_event_write_values(&ev, v, 1, NULL);
        }
        if (i % 8 == 7)
            sleep_ms(1); /* the other producers and the recorder run meanwhile */
    }
}

/* A well-formed MODULE record of process pid, loading (or unloading) path
 * of bias over [start, end), no build-id; 0 if appended. */
static int forge_module(ltr_attach *a, unsigned pid, int load, unsigned long long bias, unsigned long long start,
                        unsigned long long end, const char *path)
{
    ltr_bytes b = {0};
    size_t rec = ltr_bytes_record_begin(&b, LTR_META_MODULE);
    ltr_bytes_put_u32(&b, pid);
    ltr_bytes_put_u64(&b, ltr_now_ns());
    ltr_bytes_put_u8(&b, load ? 1 : 2);
    ltr_bytes_put_u64(&b, bias);
    ltr_bytes_put_str(&b, path);
    ltr_bytes_put_u8(&b, 0);
    ltr_bytes_put_u16(&b, 1);
    ltr_bytes_put_u64(&b, start);
    ltr_bytes_put_u64(&b, end);
    ltr_bytes_put_u64(&b, 0);
    ltr_bytes_put_u8(&b, 5);
    ltr_bytes_record_end(&b, rec);
    int rc = b.failed || ltr_producer_meta_append(a, b.data, (uint32_t)b.len) != 0 ? -1 : 0;
    ltr_bytes_free(&b);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: scribbler SESSION SEED WRITES REGION\n");
        return 2;
    }
    rng = strtoull(argv[2], NULL, 10) * 0x9e3779b97f4a7c15ull + 1;
    int writes = atoi(argv[3]);
    const char *region = argv[4];
    ltr_provider_register(&prov);
    for (int i = 0; i < 500 && !ltr_event_enabled(&ev); i++)
        sleep_ms(10);
    unsigned long long sent = 0; /* written or counted lost: in the trace's figures */
    for (uint64_t i = 0; i < 500; i++) {
        const ltr_value v[] = {LTR_UVAR(i)};
        ltr_write_result res;
        ltr_event_write_values(&ev, v, 1, &res);
        sent += res.sessions_written + res.sessions_lost;
    }
    printf("events_sent=%llu\n", sent);
    fflush(stdout);
    const char *why;
    ltr_attach *a = tp_session_named(argv[1], &reg, &slot, &why);
    if (!a) {
        fprintf(stderr, "scribbler: session %s %s\n", argv[1], why);
        return 1;
    }
    /* Where things are, read while the header is still whole. */
    uint8_t *base = (uint8_t *)a->shm;
    ltr_ring *ring = ltr_shm_ring(a->shm, 0);
    uint64_t from = 0, len = a->size < 65536 ? a->size : 65536;
    if (!strcmp(region, "ring")) {
        from = a->shm->collectors[0].ring_offset;
        len = ring->data_offset;
    } else if (!strcmp(region, "meta")) {
        from = a->shm->meta_offset;
        len = atomic_load(&a->shm->meta_used);
        len = len < a->shm->meta_capacity ? len : a->shm->meta_capacity; /* a ring: it counts on */
    } else if (!strcmp(region, "procs")) {
        from = a->shm->procs_offset;
        len = sizeof(ltr_shm_proc) * a->shm->nprocs;
    }
    uint32_t nbuf = ring->nbuf;
    if (!strcmp(region, "fields")) {
        scribble_fields(a->shm, a->size, writes);
        len = 0;
    }
    if (!strcmp(region, "registry")) {
        scribble_registry(writes);
        len = 0;
    }
    if (!strncmp(region, "end:", 4) || !strncmp(region, "execend:", 8)) { /* a forged end of another process */
        bool exec = region[0] == 'e' && region[1] == 'x';
        uint8_t rec[32] = {0};
        rec[0] = exec ? LTR_META_EXEC_END : LTR_META_PROCESS_END;
        rec[4] = exec ? 32 : 24;
        uint32_t pid = (uint32_t)strtoul(region + (exec ? 8 : 4), NULL, 10);
        uint64_t now = ltr_now_ns(), first_image = 1; /* an EXEC_END's: the image started first */
        memcpy(rec + 8, &pid, 4);
        memcpy(rec + 12, &now, 8);
        memcpy(rec + 20, &first_image, 8);
        if (ltr_producer_meta_append(a, rec, rec[4]) != 0)
            return 1;
        len = 0;
    }
    if (!strncmp(region, "attach:", 7)) { /* another process's pid claimed */
        char dir[4096], name[LTR_SESSION_NAME_MAX + 8];
        struct sockaddr_un sa;
        int dirfd = ltr_runtime_dir_open(dir, sizeof dir, NULL);
        if (dirfd < 0 || ltr_runtime_name(name, sizeof name, argv[1], LTR_RUN_SOCK) != 0 ||
            ltr_dir_sockaddr(dirfd, dir, name, &sa, NULL) != 0)
            return 1;
        int sock = ltr_unix_connect(sa.sun_path, false);
        close(dirfd);
        if (sock < 0)
            return 1;
        ltr_bytes req = {0};
        ltr_bytes_put_kv(&req, "op", "attach");
        ltr_bytes_put_kv(&req, "pid", region + 7);
        ltr_bytes_put_kv(&req, "image", "12345");
        ltr_bytes_put_kv(&req, "session", "");
        if (req.failed || ltr_send_msg(sock, req.data, req.len, NULL, 0) != 0)
            return 1;
        ltr_bytes_free(&req);
        uint8_t *body = NULL;
        int fds[4], nfds = 4;
        ssize_t n = ltr_recv_msg_by(sock, &body, fds, &nfds, 1 << 16, ltr_now_ns() + 5000000000ull);
        printf("answered=%d\n", n > 0 ? 1 : 0);
        free(body);
        sleep_ms(300);
        close(sock);
        return 0;
    }
    if (!strncmp(region, "stack:", 6) || !strncmp(region, "nodes:", 6)) {
        /* records of another process: STACK records of ids 1..N, one frame
         * each, or FRAME_NODES records of nodes 1..N, each an outermost one
         * (u32 pid, u32 parent 0, u16 count 1, then u32 id, u64 address) */
        bool nodes = region[0] == 'n';
        unsigned pid = 0, n = 0;
        unsigned long long addr = 0;
        if (sscanf(region + 6, "%u:%u:%llx", &pid, &n, &addr) != 3)
            return 2;
        uint8_t rec[32] = {0};
        rec[0] = nodes ? LTR_META_FRAME_NODES : LTR_META_STACK;
        rec[4] = 32;
        memcpy(rec + 8, &pid, 4);
        memcpy(rec + 16, &(uint16_t){1}, 2);
        memcpy(rec + (nodes ? 22 : 18), &addr, 8);
        unsigned lost = 0;
        for (unsigned id = 1; id <= n; id++) {
            memcpy(rec + (nodes ? 18 : 12), &id, 4);
            lost += ltr_producer_meta_append(a, rec, sizeof rec) != 0;
        }
        printf("lost=%u\n", lost);
        len = 0;
    }
    if (!strncmp(region, "module:", 7) || !strncmp(region, "unload:", 7)) { /* a MODULE record of another process */
        unsigned pid = 0;
        unsigned long long bias = 0, start = 0, end = 0;
        int at = 0, load = region[0] == 'm';
        if ((load ? sscanf(region + 7, "%u:%llx:%llx:%n", &pid, &start, &end, &at) != 3
                  : sscanf(region + 7, "%u:%llx:%llx:%llx:%n", &pid, &bias, &start, &end, &at) != 4) || !at)
            return 2;
        if (forge_module(a, pid, load, load ? start : bias, start, end, region + 7 + at) != 0)
            return 1;
        len = 0;
    }
    if (!strncmp(region, "process:", 8)) { /* a PROCESS record of another process, under another name */
        char *colon = strchr(region + 8, ':');
        if (!colon)
            return 2;
        ltr_bytes b = {0};
        size_t rec = ltr_bytes_record_begin(&b, LTR_META_PROCESS);
        ltr_bytes_put_u32(&b, (uint32_t)strtoul(region + 8, NULL, 10));
        ltr_bytes_put_u32(&b, 1);
        ltr_bytes_put_u64(&b, ltr_now_ns());
        ltr_bytes_put_str(&b, colon + 1);
        ltr_bytes_put_u16(&b, 1);
        ltr_bytes_put_str(&b, colon + 1);
        ltr_bytes_record_end(&b, rec);
        if (b.failed || ltr_producer_meta_append(a, b.data, (uint32_t)b.len) != 0)
            return 1;
        ltr_bytes_free(&b);
        len = 0;
    }
    bool at_go = !strncmp(region, "killedclaimingat:", 17);
    bool claiming = !strcmp(region, "killedclaiming") || !strncmp(region, "killedclaimingmany:", 19) || at_go;
    if (!strcmp(region, "killedpublishing") || claiming) { /* its 500 events in a buffer FULL in no slot */
        ltr_ring_view *rv = &a->lay->rings[0];
        if (at_go) { /* attached: killed when PATH appears, with the others */
            printf("ready\n"), fflush(stdout);
            while (access(region + 17, F_OK) != 0)
                sleep_ms(1);
        }
        unsigned more = claiming && !at_go && region[14] ? (unsigned)strtoul(region + 19, NULL, 10) : 0;
        for (unsigned k = 0; k < more; k++) /* as many buffers as it had threads */
            ltr_ring_acquire(rv, (uint32_t)getpid(), (uint32_t)getpid() + 1 + k, a->owner);
        for (uint32_t i = 0; i < rv->nbuf; i++)
            if (ltr_ring_vbuf(rv, i)->owner == a->owner && atomic_load(&ltr_ring_vbuf(rv, i)->state) == LTR_BUF_ACTIVE) {
                atomic_store(&ltr_ring_vbuf(rv, i)->state, LTR_BUF_FULL);
                if (claiming)
                    atomic_fetch_add(&ring->queue_tail, 1);
            }
        len = 0;
    }
    bool while_file = !strncmp(region, "floodwhile:", 11);
    if (!strncmp(region, "flood:", 6) || while_file) { /* faster than any recorder reads: most do not fit */
        static uint8_t rec[1024];
        unsigned n = while_file ? UINT32_MAX : (unsigned)strtoul(region + 6, NULL, 10), lost = 0;
        rec[0] = LTR_META_THREAD;
        memcpy(rec + 4, &(uint32_t){sizeof rec}, 4);
        memcpy(rec + 8, &(uint32_t){(uint32_t)getpid()}, 4);
        memcpy(rec + 24, &(uint16_t){sizeof rec - 26}, 2);
        memset(rec + 26, 'x', sizeof rec - 26);
        for (unsigned i = 0; i < n && (!while_file || access(region + 11, F_OK) == 0); i++) {
            memcpy(rec + 12, &(uint32_t){0x40000000u + i % 0x10000000u}, 4);
            lost += ltr_producer_meta_append(a, rec, sizeof rec) != 0;
        }
        printf("lost=%u\n", lost);
        len = 0;
    }
    if (!strncmp(region, "holes:", 6)) { /* every position a publication under way, for a save */
        _Atomic uint64_t *slots = (_Atomic uint64_t *)((uint8_t *)ring + ring->queue_offset);
        atomic_store(&ring->queue_tail, atomic_load(&ring->queue_head) + ring->nbuf);
        for (int said = 0; !said || access(region + 6, F_OK) == 0; said = 1) {
            for (uint32_t k = 0; k < ring->nbuf; k++)
                atomic_store(&slots[k], 0);
            if (!said) /* the test goes on once every slot was emptied */
                printf("holes=%u\n", ring->nbuf), fflush(stdout);
        }
        len = 0;
    }
    if (!strncmp(region, "dupes:", 6)) { /* one published buffer in every queue slot, seemingly taken over */
        _Atomic uint64_t *slots = (_Atomic uint64_t *)((uint8_t *)ring + ring->queue_offset);
        ltr_ring_buf *bufs = (ltr_ring_buf *)((uint8_t *)ring + ring->bufs_offset);
        uint64_t head = atomic_load(&ring->queue_head), tail = atomic_load(&ring->queue_tail);
        uint32_t first = LTR_RING_SLOT_TAG(atomic_load(&slots[head % ring->nbuf]));
        for (uint64_t pos = head; first && first <= ring->nbuf && pos < tail; pos++)
            atomic_store(&slots[pos % ring->nbuf], LTR_RING_SLOT(LTR_RING_TURN(pos, ring->nbuf), first));
        for (int said = 0; first && first <= ring->nbuf && (!said || access(region + 6, F_OK) == 0); said = 1) {
            for (unsigned k = 0; k < 4096; k++) /* many moves a look at the file */
                atomic_fetch_add(&bufs[first - 1].seq, 1);
            if (!said)
                printf("dupes=%llu\n", (unsigned long long)(tail - head)), fflush(stdout);
        }
        len = 0;
    }
    if (!strncmp(region, "state:", 6)) { /* every producer told the session ends */
        atomic_store(&a->shm->state, (uint32_t)strtoul(region + 6, NULL, 10));
        len = 0;
    }
    if (!strncmp(region, "seqs:", 5)) { /* every buffer seemingly taken over, without a count */
        ltr_ring_buf *bufs = (ltr_ring_buf *)((uint8_t *)ring + ring->bufs_offset);
        for (int said = 0; !said || access(region + 5, F_OK) == 0; said = 1) {
            for (uint32_t k = 0; k < ring->nbuf; k++)
                atomic_fetch_add(&bufs[k].seq, 1);
            if (!said)
                printf("seqs=%u\n", ring->nbuf), fflush(stdout);
        }
        len = 0;
    }
    if (!strncmp(region, "layouts:", 8)) { /* the recorder keeps a copy of layouts (ltr providers --details) */
        static char name[60001];
        memset(name, 'x', sizeof name - 1);
        ltr_event_desc big = {.provider = &prov, .id = 2, .name = name};
        ltr_bytes b = {0};
        size_t lay = ltr_event_layout_records(&big, 1000, (uint32_t)getpid(), &b);
        uint64_t want = strtoull(region + 8, NULL, 10) << 20, done = 0;
        for (int waits = 0; !b.failed && done < want && waits < 5000;) {
            if (ltr_producer_meta_append(a, b.data + lay, (uint32_t)(b.len - lay)) == 0)
                done += b.len - lay;
            else
                sleep_ms(2), waits++;
        }
        ltr_bytes_free(&b);
        printf("appended=%llu\n", (unsigned long long)(done >> 20));
        len = 0;
    }
    len &= ~(uint64_t)3;
    for (int burst = 0; burst < 4 && len; burst++) {
        for (int i = burst; i < writes; i += 4) {
            uint32_t v = scribble_value(nbuf);
            memcpy(base + from + (next_random() % (len / 4)) * 4, &v, 4);
        }
        sleep_ms(20); /* the recorder reads meanwhile */
    }
    printf("scribbled %d words over %s (%llu bytes)\n", writes, region, (unsigned long long)len);
    fflush(stdout);
    _exit(0); /* no exit handlers: they would hand buffers over through the damage */
}
