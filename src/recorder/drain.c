/*
 * recorder/drain.c — moving buffers out of shared memory: in file mode into
 * the trace as they fill (and the filled part of buffers still being written,
 * at each flush); in memory mode the ring's queue is the history, which
 * producers overwrite themselves, and a save copies it out. Also the counters
 * and the header and end key/value lists of a trace.
 *
 * Everything read from the shared memory is untrusted input: any traced
 * program can write all of it. Indexes and commit words are checked by the
 * ring's view, events are counted from the records themselves, counters keep
 * only plausible increases, metadata is copied out before it is framed, and
 * every walk is bounded. What is found impossible is skipped and counted as
 * damage (COUNTERS, "shm_damage"); the rest of the session goes on.
 */
#include "recorder/internal.h"
#include "format/compact.h"
#include "prim/prim.h"
#include "system/system.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* ---- header, end, counters ------------------------------------------------- */

static void put_kv_u64(ltr_bytes *kv, const char *key, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    ltr_bytes_put_kv(kv, key, buf);
}

static void os_name(char *out, size_t size)
{
    char buf[4096];
    snprintf(out, size, "Linux");
    if (ltr_read_small_file("/etc/os-release", buf, sizeof buf) <= 0)
        return;
    const char *p = strstr(buf, "PRETTY_NAME=");
    if (!p)
        return;
    p += 12;
    if (*p == '"')
        p++;
    size_t n = strcspn(p, "\"\n");
    snprintf(out, size, "%.*s", (int)n, p);
}

static void providers_text(const ltr_session_config *cfg, ltr_bytes *out)
{
    for (unsigned i = 0; i < cfg->nproviders; i++) {
        const ltr_provider_spec *ps = &cfg->providers[i];
        char guid[37], item[256];
        ltr_guid_format(&ps->guid, guid);
        snprintf(item, sizeof item, "%s%s{%s}:0x%llx:%u", i ? ";" : "", ps->name, guid,
                 (unsigned long long)ps->any, ps->level);
        ltr_bytes_put_mem(out, item, strlen(item));
    }
    ltr_bytes_put_u8(out, 0);
}

void rec_header_kv(recorder *r, ltr_bytes *kv, const char *kind)
{
    const ltr_session_config *cfg = &r->cfg;
    struct utsname u;
    uname(&u);
    char os[256], host[300];
    os_name(os, sizeof os);
    gethostname(host, sizeof host);
    host[sizeof host - 1] = 0;
    ltr_bytes prov = {0};
    providers_text(cfg, &prov);
    put_kv_u64(kv, "format.version", LTR_FORMAT_VERSION);
    ltr_bytes_put_kv(kv, "ltr.version", "0.1.0");
    ltr_bytes_put_kv(kv, "trace.kind", kind);
    if (!strcmp(kind, "file")) /* the writer puts a process's end after its blocks (writer.c, split_ends) */
        ltr_bytes_put_kv(kv, "trace.ends_after_blocks", "1");
    ltr_bytes_put_kv(kv, "session.name", cfg->name);
    ltr_bytes_put_kv(kv, "session.mode", cfg->mode == LTR_MODE_FILE ? "file" : "memory");
    put_kv_u64(kv, "session.buffer_size", (uint64_t)cfg->collectors[0].buffer_kb * 1024);
    put_kv_u64(kv, "session.buffers", cfg->collectors[0].buffers);
    put_kv_u64(kv, "session.max_file_size", cfg->max_file_size);
    ltr_bytes_put_kv(kv, "session.providers", prov.failed ? "" : (const char *)prov.data);
    ltr_bytes_put_kv(kv, "session.profiles", cfg->profiles);
    ltr_bytes_put_kv(kv, "host.name", host);
    ltr_bytes_put_kv(kv, "host.kernel", u.release);
    ltr_bytes_put_kv(kv, "host.machine", u.machine);
    ltr_bytes_put_kv(kv, "host.os", os);
    put_kv_u64(kv, "host.cpus", (uint64_t)sysconf(_SC_NPROCESSORS_ONLN));
    put_kv_u64(kv, "host.memory", ltr_total_ram());
    char boot[40];
    if (ltr_boot_id(boot, sizeof boot) == 0) /* ltr merge: traces of one boot share the clock */
        ltr_bytes_put_kv(kv, "host.boot_id", boot);
    ltr_bytes_put_kv(kv, "clock.id", "CLOCK_MONOTONIC");
    put_kv_u64(kv, "clock.start_ns", r->start_ns);
    put_kv_u64(kv, "clock.wall_start_ns", r->start_wall_ns);
    put_kv_u64(kv, "recorder.pid", (uint64_t)getpid());
    ltr_bytes_free(&prov);
}

void rec_end_kv(recorder *r, ltr_bytes *kv, const char *description)
{
    uint64_t mono = ltr_now_ns(), wall = ltr_wall_ns();
    put_kv_u64(kv, "clock.end_ns", mono);
    put_kv_u64(kv, "clock.wall_end_ns", wall);
    ltr_bytes_put_kv(kv, "session.description", description ? description : "");
}

static pid_loss *loss_for(recorder *r, uint32_t pid)
{
    for (unsigned i = 0; i < r->nlosses; i++)
        if (r->losses[i].pid == pid)
            return &r->losses[i];
    pid_loss *n = realloc(r->losses, sizeof *n * (r->nlosses + 1));
    if (!n)
        return NULL;
    r->losses = n;
    memset(&n[r->nlosses], 0, sizeof *n);
    n[r->nlosses].pid = pid;
    return &n[r->nlosses++];
}

/* ---- counters kept in shared memory ---------------------------------------- */

/* No machine records more than an event a nanosecond: a counter that grew
 * faster since it was last read (a scribbled word, a wild value) has its
 * increase ignored, and so has one that went back. The slack is for steps
 * counted at once: a producer reusing a buffer counts all its events. */
#define SHM_COUNT_PER_NS 1u
#define SHM_COUNT_SLACK_BUFFERS 16u

static uint64_t shm_count_read(collector_state *cs, shm_count *k, uint64_t raw, uint64_t now,
                               uint64_t start_ns)
{
    if (!k->at_ns)
        k->at_ns = start_ns;
    uint64_t slack = (uint64_t)SHM_COUNT_SLACK_BUFFERS * cs->ring.buffer_size;
    uint64_t allowed = (now - k->at_ns) * SHM_COUNT_PER_NS + slack;
    if (raw >= k->raw && raw - k->raw <= allowed)
        k->total += raw - k->raw;
    else
        cs->damage++;
    k->raw = raw;
    k->at_ns = now;
    return k->total;
}

static void put_process_lost(ltr_bytes *out, unsigned c, uint32_t pid, uint64_t events, uint64_t buffers)
{
    if (!events && !buffers)
        return;
    size_t rec = ltr_bytes_record_begin(out, LTR_COUNTER_PROCESS_LOST);
    ltr_bytes_put_u16(out, (uint16_t)c);
    ltr_bytes_put_u32(out, pid);
    ltr_bytes_put_u64(out, events);
    ltr_bytes_put_u64(out, buffers);
    ltr_bytes_record_end(out, rec);
}

void rec_sample_counters(recorder *r)
{
    uint64_t now = ltr_now_ns();
    uint32_t nprocs = r->next_proc < r->nprocs ? r->next_proc : r->nprocs;
    for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
        collector_state *cs = &r->col[c];
        ltr_ring *ring = cs->ring.shared;
        shm_count_read(cs, &cs->lost, atomic_load(&ring->events_lost), now, r->start_ns);
        shm_count_read(cs, &cs->overwritten, atomic_load(&ring->events_overwritten), now, r->start_ns);
        shm_count_read(cs, &cs->bufs_overwritten, atomic_load(&ring->buffers_overwritten), now, r->start_ns);
        shm_count_read(cs, &cs->unattached, atomic_load(&r->reg->sessions[r->slot].unattached_lost[c]), now,
                       r->start_ns);
        for (uint32_t i = 0; i < nprocs; i++)
            shm_count_read(cs, &r->proc_lost[i * LTR_MAX_COLLECTORS + c],
                           atomic_load(&r->procs[i].events_lost[c]), now, r->start_ns);
    }
    if (r->cfg.ncollectors) /* the metadata's, counted against collector 0 as its damage is */
        shm_count_read(&r->col[0], &r->meta_lost, atomic_load(&r->shm->meta_lost), now, r->start_ns);
}

uint64_t rec_shm_damage(recorder *r, unsigned c)
{
    return r->col[c].damage + r->col[c].ring.damage + (c == 0 ? r->meta_damage : 0);
}

uint64_t rec_events_lost(recorder *r, unsigned c)
{
    collector_state *cs = &r->col[c];
    return cs->lost.total + cs->events_dropped + cs->unattached.total + cs->refused_lost;
}

static uint64_t stop_refusals(recorder *r, unsigned c)
{
    collector_state *cs = &r->col[c];
    return shm_count_read(cs, &cs->stopping_refused, atomic_load(&r->shm->stopping_refused[c]), ltr_now_ns(),
                          r->start_ns);
}

/* Outside a stop, a refusal is a state word a traced program wrote:
 * another program's events refused by it were counted nowhere
 * (keep_state). */
void rec_count_refusals(recorder *r)
{
    for (unsigned c = 0; !r->not_taking && c < r->cfg.ncollectors; c++) {
        uint64_t total = stop_refusals(r, c);
        r->col[c].refused_lost += total - r->col[c].refused_from;
        r->col[c].refused_from = total;
    }
}

/* The session's state word is the recorder's, but in memory that traced
 * programs can write: a program that wrote STOPPING (or anything but
 * RUNNING) once made every producer refuse every event from then on, the
 * session deaf for good and the events counted nowhere (scribbler state:2,
 * a program's 10 000 events: 'events: 0 written, 0 lost'). Put back at each
 * round, as damage; the refusals meanwhile are counted lost. */
static void keep_state(recorder *r)
{
    uint32_t want = r->not_taking ? LTR_SESSION_STOPPING : LTR_SESSION_RUNNING;
    if (!r->shm || atomic_load(&r->shm->state) == want)
        return;
    atomic_store(&r->shm->state, want);
    if (r->cfg.ncollectors)
        r->col[0].damage++;
}

/* The timestamp of a buffer's first compact record: its delta counts from 0
 * (a new buffer is a new block, producer.c), so it is the time itself. */
static uint64_t first_record_ns(const uint8_t *p, uint32_t len)
{
    uint64_t size, layout, delta;
    size_t a = ltr_get_uvar(p, len, &size), b = a ? ltr_get_uvar(p + a, len - a, &layout) : 0;
    size_t c = b ? ltr_get_uvar(p + a + b, len - a - b, &delta) : 0;
    return c ? (uint64_t)ltr_unzigzag(delta) : 0;
}

/* The same of a buffer's records (of len bytes) copied out: a CPU's start with a thread id. */
static uint64_t records_first_ns(const uint8_t *p, uint32_t len, bool cpu)
{
    uint64_t tid;
    size_t skip = cpu ? ltr_get_uvar(p, len, &tid) : 0;
    return first_record_ns(p + skip, len - (uint32_t)skip);
}

uint64_t rec_buffer_first_ns(recorder *r, unsigned c, uint32_t idx)
{
    ltr_ring_view *ring = &r->col[c].ring;
    bool bad;
    uint32_t len = LTR_COMMIT_BYTES(ltr_ring_committed(ring, idx, &bad));
    uint8_t head[4 * LTR_VARINT_MAX];
    uint32_t n = len < sizeof head ? len : (uint32_t)sizeof head;
    memcpy(head, ltr_ring_vdata(ring, idx), n);
    return records_first_ns(head, n, ltr_ring_vbuf(ring, idx)->tid == 0);
}

uint64_t rec_oldest_event_ns(recorder *r, unsigned c)
{
    collector_state *cs = &r->col[c];
    if (r->cfg.mode != LTR_MODE_MEMORY || atomic_load(&cs->ring.shared->events_overwritten) == 0)
        return 0;
    uint64_t tail = ltr_ring_tail(&cs->ring);
    for (uint64_t pos = ltr_ring_history_start(&cs->ring, tail); pos < tail; pos++) {
        uint32_t idx = ltr_ring_at(&cs->ring, pos);
        if (idx == LTR_RING_NONE)
            continue;
        bool bad;
        uint32_t len = LTR_COMMIT_BYTES(ltr_ring_committed(&cs->ring, idx, &bad));
        uint8_t head[4 * LTR_VARINT_MAX];
        uint32_t n = len < sizeof head ? len : (uint32_t)sizeof head;
        bool cpu = ltr_ring_vbuf(&cs->ring, idx)->tid == 0; /* its records start with a thread id */
        memcpy(head, ltr_ring_vdata(&cs->ring, idx), n);
        if (!ltr_ring_still_at(&cs->ring, pos)) /* taken for reuse meanwhile: the next is the oldest */
            continue;
        uint64_t tid;
        size_t skip = cpu ? ltr_get_uvar(head, n, &tid) : 0;
        uint64_t ts = first_record_ns(head + skip, n - (uint32_t)skip);
        if (ts)
            return ts;
    }
    return 0;
}

/* The counters as last sampled. */
static void put_counters(recorder *r, ltr_bytes *out)
{
    r->counted_written = r->counted_lost = r->counted_overwritten = r->counted_unattached = 0;
    r->counted_unwritten = 0;
    for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
        collector_state *cs = &r->col[c];
        r->counted_written += cs->events_written - cs->events_dropped;
        r->counted_lost += rec_events_lost(r, c);
        r->counted_unattached += cs->unattached.total;
        r->counted_unwritten += cs->events_dropped;
        r->counted_overwritten += cs->overwritten.total;
        size_t rec = ltr_bytes_record_begin(out, LTR_COUNTER_COLLECTOR);
        ltr_bytes_put_u16(out, (uint16_t)c);
        ltr_bytes_put_str(out, r->cfg.collectors[c].name);
        ltr_bytes_put_u32(out, cs->ring.buffer_size);
        ltr_bytes_put_u32(out, cs->ring.nbuf);
        ltr_bytes_put_u64(out, cs->events_written - cs->events_dropped);
        ltr_bytes_put_u64(out, rec_events_lost(r, c));
        ltr_bytes_put_u64(out, cs->buffers_written);
        ltr_bytes_put_u64(out, cs->buffers_lost);
        ltr_bytes_put_u64(out, cs->overwritten.total);
        ltr_bytes_put_u64(out, cs->bufs_overwritten.total);
        ltr_bytes_put_u64(out, rec_shm_damage(r, c));
        ltr_bytes_put_u64(out, c == 0 ? r->meta_lost.total + r->meta_refused : 0);
        ltr_bytes_put_u64(out, cs->events_dropped); /* events_unwritten: of events_lost, the file's */
        ltr_bytes_record_end(out, rec);
    }
    /* each pid's row once: the slots of live producers with what the
     * recorder holds for their pid, then the pids that went (and the
     * recorder's own drops of pids without a slot) */
    uint32_t gen = ++r->loss_gen, nprocs = r->next_proc < r->nprocs ? r->next_proc : r->nprocs;
    for (uint32_t i = 0; i < nprocs; i++) {
        uint32_t pid = atomic_load(&r->procs[i].pid);
        if (!pid)
            continue;
        pid_loss *l = NULL;
        for (unsigned k = 0; k < r->nlosses && !l; k++)
            l = r->losses[k].pid == pid && r->losses[k].told != gen ? &r->losses[k] : NULL;
        for (unsigned c = 0; c < r->cfg.ncollectors; c++)
            put_process_lost(out, c, pid, r->proc_lost[i * LTR_MAX_COLLECTORS + c].total + (l ? l->events_lost[c] : 0),
                             l ? l->buffers_lost[c] : 0);
        if (l)
            l->told = gen;
    }
    for (unsigned k = 0; k < r->nlosses; k++)
        for (unsigned c = 0; r->losses[k].told != gen && c < r->cfg.ncollectors; c++)
            put_process_lost(out, c, r->losses[k].pid, r->losses[k].events_lost[c], r->losses[k].buffers_lost[c]);
}

void rec_counters(recorder *r, ltr_bytes *out)
{
    rec_sample_counters(r);
    put_counters(r, out);
}

void rec_release_slot(recorder *r, uint32_t slot, int32_t pid)
{
    if (slot >= r->nprocs - 1 || slot >= r->next_proc) /* the last is shared by all past the table */
        return;
    if (!r->free_slots && !(r->free_slots = malloc(sizeof *r->free_slots * r->nprocs)))
        return; /* kept: a slot used once, as before */
    uint64_t now = ltr_now_ns();
    for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
        shm_count *k = &r->proc_lost[slot * LTR_MAX_COLLECTORS + c];
        uint64_t total =
            shm_count_read(&r->col[c], k, atomic_load(&r->procs[slot].events_lost[c]), now, r->start_ns);
        pid_loss *l = total && pid > 0 ? loss_for(r, (uint32_t)pid) : NULL;
        if (l)
            l->events_lost[c] += total;
        atomic_store(&r->procs[slot].events_lost[c], 0);
        *k = (shm_count){0};
    }
    atomic_store(&r->procs[slot].pid, 0);
    r->free_slots[r->nfree_slots++] = slot;
}

/* ---- metadata -------------------------------------------------------------- */

#define META_CHUNK_MAX (8u << 20) /* well under the format's 64 MiB per chunk */
#define META_WAIT_MS 1000
/* A skipped record's place (a producer stopped in the middle of its
 * append, or scribbled memory) and all after it are handed out again only
 * this long after the last skip: at once, a producer that went on writing
 * after a stop wrote into another's record (a review: a record with wrong
 * contents in the trace, damage 0). Meanwhile the region holds less. */
#define META_HOLD_NS 10000000000ull
/* The layouts kept for `ltr providers --details` (r->layouts): what the
 * region held before it was a ring, at most. Unbounded, a traced program
 * appending layouts without end had the recorder hold them all (1 GiB of
 * them: 1.1 GB of RSS, a file-mode trace of a few MB). About 60 000
 * processes' layouts of the heap provider. */
#define REC_LAYOUTS_MAX (16u << 20)

/* The size of a complete record at the region's place off (counting on,
 * as meta_used does), or 0: still being written, or not a record. A
 * record never wraps past the region's end. */
static uint32_t meta_record_at(const recorder *r, uint64_t off, uint64_t end, uint16_t *kind)
{
    const uint8_t *m = r->meta + off % r->meta_capacity;
    *kind = __atomic_load_n((const uint16_t *)m, __ATOMIC_ACQUIRE);
    uint32_t size = ltr_get_u32(m + 4);
    if (!*kind || size < LTR_RECORD_HEADER_SIZE || size % 8 || size > end - off ||
        size > r->meta_capacity - off % r->meta_capacity || (size > META_CHUNK_MAX && *kind != LTR_SHM_META_PAD))
        return 0;
    return size;
}

/* What the metadata read goes into: the file's next metadata (file mode),
 * or what every save writes (memory mode). */
static ltr_bytes *meta_out(recorder *r)
{
    return r->cfg.mode == LTR_MODE_FILE ? &r->meta_taken : &r->meta_kept;
}

/* A PROCESS record in the region: only the recorder writes them, never
 * there (rec_put_own_record), so a traced program wrote it. It would
 * rename another process of the session, or start a new image of it (the
 * reader keeps apart the stacks before it), unseen: a review renamed a
 * traced perl "/usr/sbin/sshd" with one, and the trace said it was whole. */
static void forged_process(recorder *r, uint64_t off, uint32_t size)
{
    const uint8_t *body = r->meta + off % r->meta_capacity + LTR_RECORD_HEADER_SIZE;
    if (!r->forged_processes++) /* its pid read for the log alone */
        rec_log("a PROCESS record in the metadata region was not the recorder's: a traced program "
                "wrote it (it would have renamed process %u); left out, and counted as damage",
                size >= LTR_RECORD_HEADER_SIZE + 4 ? ltr_get_u32(body) : 0);
    r->meta_damage++;
}

/* Copies the complete records from r->meta_pulled on into out, each framed as
 * it was when its size was read (a writer cannot change the copy after). */
static void meta_copy(recorder *r, uint64_t end, ltr_bytes *out)
{
    uint64_t off = r->meta_pulled;
    uint16_t kind;
    uint32_t size;
    while (off + LTR_RECORD_HEADER_SIZE <= end && (size = meta_record_at(r, off, end, &kind))) {
        /* a PROCESS_END or EXEC_END: only the recorder writes these (rec_end_process), never here: a
         * producer's would end another process's model; a PROCESS: the same (forged_process); a pad:
         * the region's end */
        if (kind == LTR_META_PROCESS_END || kind == LTR_META_EXEC_END || kind == LTR_SHM_META_PAD ||
            kind == LTR_META_PROCESS) {
            if (kind == LTR_META_PROCESS)
                forged_process(r, off, size);
            off += size;
            continue;
        }
        uint8_t *dst = ltr_bytes_grow(out, size);
        if (!dst)
            break;
        memcpy(dst, r->meta + off % r->meta_capacity, size);
        ltr_put_u16(dst, kind);
        ltr_put_u16(dst + 2, 0);
        ltr_put_u32(dst + 4, size);
        if (kind == LTR_META_LAYOUT && size <= REC_LAYOUTS_MAX - r->layouts.len)
            ltr_bytes_put_mem(&r->layouts, dst, size);
        off += size;
    }
    r->meta_pulled = off;
}

/* The first place from off (by 8) whose page of the region holds data, or
 * end: a page never written (or given back) reads as zeros, no record, and
 * reading it would take memory. A used word scribbled far ahead had the
 * recorder read up to the whole region (256 MiB) at each skip. */
static uint64_t meta_next_data(const recorder *r, uint64_t off, uint64_t end)
{
    uint64_t at = off % r->meta_capacity, to_end = r->meta_capacity - at;
    off_t base = (off_t)(r->meta - (const uint8_t *)r->shm) + (off_t)at;
    off_t d = lseek(r->memfd, base, SEEK_DATA);
    uint64_t skip = d < 0 ? to_end : (uint64_t)(d - base) & ~7ull; /* ENXIO: nothing to the file's end */
    skip = skip < to_end ? skip : to_end;
    return end - off > skip ? off + skip : end;
}

/* Past a record that never completed: its writer died, or the region was
 * written over. Goes on at the next place that looks like a record (known
 * kind, sane size), never beyond end. */
static void meta_skip_damage(recorder *r, uint64_t end)
{
    long page = sysconf(_SC_PAGESIZE);
    uint64_t pg = page > 0 ? (uint64_t)page : 4096, off = r->meta_pulled + 8;
    for (uint16_t kind; off + LTR_RECORD_HEADER_SIZE <= end; off += 8) {
        if (off % pg == 0 || off == r->meta_pulled + 8)
            off = meta_next_data(r, off, end);
        if (off + LTR_RECORD_HEADER_SIZE <= end && meta_record_at(r, off, end, &kind) &&
            (kind <= LTR_META_FRAME_NODES_V || kind == LTR_SHM_META_PAD) &&
            ltr_get_u16(r->meta + off % r->meta_capacity + 2) == 0)
            break;
    }
    rec_log("skipped %llu bytes of the metadata region: a record there never completed "
            "(its writer died, or the shared memory was written over)",
            (unsigned long long)((off < end ? off : end) - r->meta_pulled));
    if (!r->meta_holding) { /* its place, and what follows, not handed out again for a while */
        r->meta_holding = true;
        r->meta_hold_from = r->meta_pulled;
    }
    r->meta_hold_until_ns = ltr_now_ns() + META_HOLD_NS;
    r->meta_pulled = off < end ? off : end;
    r->meta_damage++;
}

/* What was read of the region, [from, to), free for producers again: zeros
 * (a record is complete once its kind is not), its whole pages given back. */
static void meta_release(recorder *r, uint64_t from, uint64_t to)
{
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t mask = page > 0 ? (uintptr_t)page - 1 : 4095;
    while (from < to) {
        uint64_t at = from % r->meta_capacity, n = r->meta_capacity - at;
        n = n < to - from ? n : to - from;
        uint8_t *p = r->meta + at, *lo = (uint8_t *)(((uintptr_t)p + mask) & ~mask);
        uint8_t *hi = (uint8_t *)(((uintptr_t)p + n) & ~mask);
        if (lo < hi) { /* the pages between: given back, zeros when next touched */
            memset(p, 0, (size_t)(lo - p));
            memset(hi, 0, (size_t)(p + n - hi));
            rec_punch(r, lo, (size_t)(hi - lo));
        } else {
            memset(p, 0, n);
        }
        from += n;
    }
    atomic_store_explicit(&r->shm->meta_read, to, memory_order_release);
}

/* Metadata records are appended by many processes at once, each reserving
 * its place first; they complete out of order. An event's layout was reserved
 * before the event was committed, so before a block is written every record
 * reserved so far is taken, waiting briefly for those still being written. A
 * record that stays incomplete for a second (a producer killed in the middle
 * of an append, or scribbled memory) is skipped, once. */
static void meta_pull(recorder *r)
{
    ltr_bytes *out = meta_out(r);
    uint64_t end = atomic_load_explicit(&r->shm->meta_used, memory_order_acquire), from = r->meta_pulled;
    /* a producer never reserves past what was read plus the region: a used
     * word behind or that far ahead was scribbled, and is put back where
     * the recorder has read to (behind, producers would append nowhere) */
    if (end < from || end - from > r->meta_capacity || end % 8) { /* unaligned: a pad could reach past the end */
        atomic_compare_exchange_strong(&r->shm->meta_used, &end, from);
        end = from;
    }
    /* within 10 s of a skip, 10 ms of waiting: a producer scribbling the
     * used word again and again made every round wait a second (ltr status
     * timed out, test_shm_fuzz); a record on its way takes microseconds */
    bool skipped_lately = r->meta_skip_ns && ltr_now_ns() - r->meta_skip_ns < 10000000000ull;
    int waited = skipped_lately ? META_WAIT_MS - 10 : 0;
    size_t before = out->len;
    for (; r->meta_pulled + LTR_RECORD_HEADER_SIZE <= end;) {
        meta_copy(r, end, out);
        if (r->meta_pulled + LTR_RECORD_HEADER_SIZE > end || out->failed)
            break;
        if (waited++ < META_WAIT_MS)
            usleep(1000);
        else {
            meta_skip_damage(r, end); /* later ones at once: a second is all we wait */
            r->meta_skip_ns = ltr_now_ns();
        }
    }
    if (out == &r->meta_kept)
        rec_keep_bounded(r, before);
    uint64_t free_to = r->meta_pulled;
    if (r->meta_holding && ltr_now_ns() < r->meta_hold_until_ns)
        free_to = r->meta_hold_from;
    else
        r->meta_holding = false;
    if (free_to > r->meta_released) {
        meta_release(r, r->meta_released, free_to);
        r->meta_released = free_to;
    } else { /* as it is: a scribbled word put right */
        atomic_store_explicit(&r->shm->meta_read, r->meta_released, memory_order_release);
    }
}

void rec_pull_metadata(recorder *r) { meta_pull(r); }

int rec_write_meta(ltr_writer *w, const ltr_bytes *records, size_t *done, ltr_error *err)
{
    const uint8_t *m = records->data;
    while (*done < records->len) {
        size_t cut = *done;
        while (cut < records->len) {
            uint32_t size = ltr_get_u32(m + cut + 4); /* framed by meta_copy */
            if (cut > *done && cut + size - *done > META_CHUNK_MAX)
                break;
            cut += size;
        }
        int rc = ltr_writer_metadata(w, m + *done, cut - *done, err);
        if (rc)
            return rc;
        *done = cut;
    }
    return 0;
}

/* After a failed metadata write, the next try waits: a full disk had every
 * block try again (a seal, a rewrite of megabytes of frame nodes and their
 * compression, failing), and a stop with the disk full took 113 s instead
 * of 1.6 (found by a review, with pwrite failing by LD_PRELOAD). The wait
 * starts at META_RETRY_FIRST_NS and doubles up to META_RETRY_NS: with a
 * second's wait from the first failure, a disk full for half a second lost
 * every event of the second after it when the recorder was slow (an ASan
 * build beside other tests: tests/e2e/test_disk_full.c saw none written),
 * since the blocks that waited were dropped before the next try. */
#define META_RETRY_FIRST_NS 10000000ull
#define META_RETRY_NS 1000000000ull

/* File mode: the metadata the backlog has handed on goes to the file. What
 * a failed write leaves (a full disk may free up) waits, and is tried again
 * first after META_RETRY_NS. False while some is still missing. */
static bool write_meta_pending(recorder *r)
{
    if (!r->meta_new.len)
        return true;
    uint64_t now = ltr_now_ns();
    if (r->file_full || (r->meta_failed_ns && now - r->meta_failed_ns < r->meta_retry_ns))
        return false;
    size_t done = 0;
    ltr_error err;
    if (rec_write_meta(r->writer, &r->meta_new, &done, &err) != 0)
        rec_write_failed(r, &err);
    memmove(r->meta_new.data, r->meta_new.data + done, r->meta_new.len - done);
    r->meta_new.len -= done;
    r->meta_failed_ns = r->meta_new.len ? now : 0;
    r->meta_retry_ns = !r->meta_new.len ? 0
                       : !r->meta_retry_ns ? META_RETRY_FIRST_NS
                       : r->meta_retry_ns >= META_RETRY_NS / 2 ? META_RETRY_NS
                                                                : 2 * r->meta_retry_ns;
    return !r->meta_new.len;
}

/* The block header of a buffer as it is now; its events are counted by
 * records_in. */
static ltr_block_info block_of(ltr_ring_view *ring, unsigned c, uint32_t idx, bool partial)
{
    ltr_ring_buf *b = ltr_ring_vbuf(ring, idx);
    return (ltr_block_info){.collector = (uint16_t)c,
                            .flags = partial ? LTR_BLOCK_FLAG_SEALED_EARLY : 0,
                            .pid = b->pid, .tid = b->tid, .seq = atomic_load(&b->seq)};
}

/* How many of len bytes of a buffer (from its committed part) to write, and
 * their events: the well-formed records, whatever the commit word claims. A
 * difference is damage: the buffer was written over (the reader would report
 * the records after it, so they are left out). */
static uint32_t records_in(collector_state *cs, const ltr_block_info *info, const uint8_t *data, uint32_t len,
                           uint32_t claimed, uint32_t *events)
{
    uint32_t n = info->tid == 0 ? (uint32_t)ltr_cpu_records_prefix(data, len, events) /* a CPU's buffer */
                                : (uint32_t)ltr_cevents_prefix(data, len, events);
    if (n != len || *events != claimed)
        cs->damage++;
    return n;
}

/* A buffer's records into the trace: a thread's own as they are, a CPU's
 * split by thread (format/cpublock.c). */
static int rec_write_block(ltr_writer *w, const ltr_block_info *info, const uint8_t *data, uint32_t len,
                           ltr_error *err)
{
    return info->tid == 0 ? ltr_writer_cpu_block(w, info, data, len, err)
                          : ltr_writer_block(w, info, data, len, err);
}

/* ---- file mode --------------------------------------------------------------- */

void rec_write_failed(recorder *r, const ltr_error *err)
{
    /* A full disk fails every write after the first: a log line for each was
     * hundreds of identical lines (882 for one `ltr record` on a full tmpfs). */
    uint64_t n = ++r->write_failures;
    if (n == 1)
        rec_log("%s", err->msg);
    else if ((n & (n - 1)) == 0)
        rec_log("%s (%llu failed writes so far)", err->msg, (unsigned long long)n);
    /* --max-file-size is asked for: its drops are counted, not an error */
    bool limit = err->code == EFBIG && r->cfg.max_file_size;
    if (!r->write_err.code && !limit)
        r->write_err = *err;
}

void rec_on_drop(void *ctx, const ltr_block_info *info, uint32_t byte_count)
{
    recorder *r = ctx;
    collector_state *cs = &r->col[info->collector];
    uint32_t buffers = info->nbuffers ? info->nbuffers : 1; /* a block of merged buffers: each lost */
    cs->events_dropped += info->event_count;
    cs->buffers_lost += buffers;
    pid_loss *l = loss_for(r, info->pid);
    if (l) {
        l->events_lost[info->collector] += info->event_count;
        l->buffers_lost[info->collector] += buffers;
    }
}

/* A block into the trace now, or counted as dropped once the file is full. */
static void write_block(recorder *r, ltr_block_info *info, const uint8_t *data, uint32_t len)
{
    collector_state *cs = &r->col[info->collector];
    /* Metadata that came before it is missing (a failed write): its stacks
     * and layouts may be in that, so it is dropped and counted, not written
     * to be read with the wrong ones. */
    bool meta_in = write_meta_pending(r);
    /* Nearly out of free buffers (a 16th left), or more than the buffers'
     * worth waiting in the backlog (an eighth of its bound): the writer skips
     * its address references, about 45 ns an event (format/refs.h), until it
     * catches up. An unprivileged recorder beside 1000 threads lost 27 to 50
     * % of their events with them, in 3 runs of 5 (bench/threads), before the
     * backlog; with it, 2 runs of 6 lost some with this at half the bound, 1
     * of 8 at an eighth, and neither bench/heap's nor cc1plus's trace grew
     * (7.27-7.30 and 1.41 bytes per event; at a 32nd they did: 7.49 and
     * 1.43-1.45). Not the queue's length: producers wake the recorder only
     * when a quarter of the buffers is left (ring.c), so a long queue is the
     * normal case (judged by it, cc1plus's trace went plain nearly whole:
     * 2.05 bytes per event instead of 1.41). The count is the traced
     * programs' to scribble on: at worst every block goes plain, or none. */
    info->plain = atomic_load_explicit(&cs->ring.shared->free_count, memory_order_relaxed) < cs->ring.nbuf / 16 ||
                  r->backlog.bytes > r->backlog.cap / 8;
    cs->events_written += info->event_count;
    ltr_error err;
    if (r->file_full || !meta_in) {
        rec_on_drop(r, info, len);
    } else if (rec_write_block(r->writer, info, data, len, &err) != 0) {
        rec_write_failed(r, &err);
        if (err.code == EFBIG || err.code == ENOSPC)
            r->file_full = err.code == EFBIG; /* a full disk may free up; a size limit won't */
    }
}

/* An entry of the backlog into the file, as its kind says (backlog.h). */
static void entry_write(recorder *r, enum rec_backlog_kind kind, ltr_block_info *info, const uint8_t *data,
                        uint32_t len)
{
    if (kind == REC_BACKLOG_BLOCK) {
        write_block(r, info, data, len);
    } else if (kind == REC_BACKLOG_META) {
        ltr_bytes_put_mem(&r->meta_new, data, len);
        if (r->meta_new.failed) { /* out of memory: these records are lost, the log says so */
            r->meta_new.failed = 0;
            r->meta_damage++;
            rec_log("out of memory for %u bytes of metadata: they are not in the trace", len);
        }
        write_meta_pending(r);
    } else if (kind == REC_BACKLOG_GONE) {
        ltr_error err;
        if (r->writer && ltr_writer_process_ended(r->writer, info->pid, &err))
            rec_write_failed(r, &err);
    } else {
        r->col[info->collector].buffers_written++;
    }
}

static void write_oldest(recorder *r)
{
    rec_backlog_entry *e = rec_backlog_oldest(&r->backlog);
    if (e->kind == REC_BACKLOG_BLOCK)
        r->col[e->info.collector].backlog_events -= e->info.event_count;
    entry_write(r, (enum rec_backlog_kind)e->kind, &e->info, e->data, e->len);
    rec_backlog_drop(&r->backlog);
}

/* What was taken out of shared memory: copied into the backlog, the oldest
 * written first while it is full; written at once, after the whole
 * backlog, when it cannot be copied. Either way the file gets everything in
 * the order it was taken. */
static void entry_out(recorder *r, enum rec_backlog_kind kind, ltr_block_info *info, const uint8_t *data,
                      uint32_t len)
{
    rec_backlog *b = &r->backlog;
    if (rec_backlog_oldest(b) && !rec_backlog_fits(b, len) && !r->backlog_full_logged) {
        r->backlog_full_logged = true;
        rec_log("the recorder fell %zu MiB behind, as far as its backlog may (%d times the buffers, "
                "%zu MiB at most): producers may lose events until it catches up",
                b->cap >> 20, REC_BACKLOG_POOLS, REC_BACKLOG_MAX >> 20);
    }
    while (rec_backlog_oldest(b) && !rec_backlog_fits(b, len))
        write_oldest(r);
    if (rec_backlog_push(b, kind, info, data, len) == 0) {
        if (kind == REC_BACKLOG_BLOCK)
            r->col[info->collector].backlog_events += info->event_count;
        return;
    }
    while (rec_backlog_oldest(b))
        write_oldest(r);
    entry_write(r, kind, info, data, len);
}

void rec_forget_process(recorder *r, uint32_t pid)
{
    ltr_block_info gone = {.pid = pid};
    if (r->writer)
        entry_out(r, REC_BACKLOG_GONE, &gone, NULL, 0);
}

void rec_end_process(recorder *r, pid_t pid, uint64_t ts, uint64_t exec_of)
{
    meta_pull(r); /* what its producers wrote goes before */
    ltr_bytes *out = meta_out(r);
    size_t rec = ltr_bytes_record_begin(out, exec_of ? LTR_META_EXEC_END : LTR_META_PROCESS_END);
    ltr_bytes_put_u32(out, (uint32_t)pid);
    ltr_bytes_put_u64(out, ts);
    if (exec_of)
        ltr_bytes_put_u64(out, exec_of);
    ltr_bytes_record_end(out, rec);
    rec_prune_kept(r);
}

int rec_put_own_record(recorder *r, const uint8_t *rec, uint32_t size)
{
    meta_pull(r); /* what producers wrote before it goes before */
    ltr_bytes *out = meta_out(r);
    uint8_t *dst = out->failed || !rec_kept_own_fits(r, size) ? NULL : ltr_bytes_grow(out, size);
    if (!dst || out->failed)
        return -1;
    memcpy(dst, rec, size);
    return 0;
}

/* The metadata records new in shared memory, behind what was taken before. */
static void take_metadata(recorder *r)
{
    meta_pull(r);
    if (!r->meta_taken.len)
        return;
    ltr_block_info none = {0};
    entry_out(r, REC_BACKLOG_META, &none, r->meta_taken.data,
              r->meta_taken.len > UINT32_MAX ? UINT32_MAX : (uint32_t)r->meta_taken.len);
    r->meta_taken.len = 0;
    r->meta_taken.failed = 0; /* short of memory: what was not copied is pulled again next time */
}

/* Takes what the buffer holds beyond what was taken before. */
static void take_tail(recorder *r, unsigned c, uint32_t idx, bool partial)
{
    collector_state *cs = &r->col[c];
    buf_note *n = &cs->notes[idx];
    bool bad;
    uint64_t commit = ltr_ring_committed(&cs->ring, idx, &bad);
    uint32_t bytes = LTR_COMMIT_BYTES(commit), events = LTR_COMMIT_EVENTS(commit);
    if (bytes <= n->flushed_bytes) {
        if (bytes < n->flushed_bytes && !bad)
            cs->damage++; /* a commit word never goes back */
        return;
    }
    ltr_block_info info = block_of(&cs->ring, c, idx, partial);
    const uint8_t *data = ltr_ring_vdata(&cs->ring, idx) + n->flushed_bytes;
    uint32_t len = records_in(cs, &info, data, bytes - n->flushed_bytes,
                              events >= n->flushed_events ? events - n->flushed_events : UINT32_MAX,
                              &info.event_count);
    n->flushed_bytes = bytes;
    n->flushed_events = events;
    if (!len)
        return;
    take_metadata(r); /* the layouts its events use come first */
    entry_out(r, REC_BACKLOG_BLOCK, &info, data, len);
}

/* A buffer is complete: into the file and free again (file mode), or into the
 * history queue (memory mode: the recorder completing a dead producer's). */
static void finish_buffer(recorder *r, unsigned c, uint32_t idx)
{
    collector_state *cs = &r->col[c];
    if (r->cfg.mode == LTR_MODE_FILE) {
        take_tail(r, c, idx, false);
        ltr_block_info done = {.collector = (uint16_t)c};
        entry_out(r, REC_BACKLOG_DONE, &done, NULL, 0); /* written once its last block is */
        cs->notes[idx] = (buf_note){0, 0};
        ltr_ring_release(&cs->ring, idx);
        return;
    }
    ltr_ring_hand_in(&cs->ring, idx);
}

/* File mode: the queue's head slot stepped over as never filled (unless
 * it was filled just now: taken next), and closed: its producer, if it is
 * only stopped and stores later, hands the buffer in at a new position
 * (ring.h, LTR_RING_SLOT). Watched for a late store before (take_late), a
 * store a whole lap late went into the next lap's position: a buffer
 * written over there, or its own written over (tests/ring/test_ring.c,
 * test_late_store_after_a_full_lap). */
static bool skip_hole(collector_state *cs)
{
    cs->queue_stall_ns = 0;
    return ltr_ring_skip_slot(&cs->ring);
}

static void take_queued(recorder *r, unsigned c)
{
    collector_state *cs = &r->col[c];
    /* Each buffer comes through the queue once per round at most: more means
     * someone keeps filling it. The rest waits for the next round. */
    for (uint32_t n = 0; n < cs->ring.nbuf; n++) {
        uint32_t idx = ltr_ring_take(&cs->ring);
        if (idx != LTR_RING_NONE) {
            cs->queue_stall_ns = 0;
            finish_buffer(r, c, idx);
            continue;
        }
        if (!ltr_ring_queued(&cs->ring))
            return;
        /* A producer claimed the slot but has not filled it. If that lasts, it
         * died in between: skip the slot rather than stall the session. */
        uint64_t now = ltr_now_ns();
        if (!cs->queue_stall_ns)
            cs->queue_stall_ns = now;
        if (now - cs->queue_stall_ns < 2000000000u)
            return;
        if (skip_hole(cs))
            rec_log("skipped a queue slot whose producer never filled it");
    }
}

/* Every buffer a producer still owns in collector c, optionally only
 * those of one owner. */
static void for_active_of(recorder *r, unsigned c, bool all_owners, uint32_t owner,
                          void (*fn)(recorder *, unsigned, uint32_t))
{
    ltr_ring_view *ring = &r->col[c].ring;
    for (uint32_t i = 0; i < ring->nbuf; i++) {
        ltr_ring_buf *b = ltr_ring_vbuf(ring, i);
        if (atomic_load_explicit(&b->state, memory_order_acquire) == LTR_BUF_ACTIVE &&
            (all_owners || b->owner == owner))
            fn(r, c, i);
    }
}

/* The same in every collector. */
static void for_active(recorder *r, bool all_owners, uint32_t owner,
                       void (*fn)(recorder *, unsigned, uint32_t))
{
    for (unsigned c = 0; c < r->cfg.ncollectors; c++)
        for_active_of(r, c, all_owners, owner, fn);
}

static uint64_t thread_of(const ltr_ring_buf *b)
{
    return (uint64_t)b->pid << 32 | b->tid;
}

/* Where a thread's keys begin in the table (Fibonacci hashing). */
static uint32_t thread_slot(const rec_thread_set *set, uint64_t thread)
{
    return (uint32_t)((thread * 0x9e3779b97f4a7c15ull) >> 32) & (set->cap - 1);
}

bool rec_thread_set_init(rec_thread_set *set, uint32_t nbuf)
{
    uint32_t cap = 16;
    while (cap < 2 * (uint64_t)nbuf && cap < (1u << 31))
        cap *= 2;
    *set = (rec_thread_set){.keys = calloc(cap, sizeof *set->keys), .cap = cap};
    return set->keys != NULL;
}

/* Filled once a flush, looked up once a piece: each piece compared with
 * every queued buffer cost 42 M instructions a flush with 2048 of each in
 * a ring of 4096 (a recorder far behind many threads), 671 M with 8192 of
 * each in one of 16 384; now 0.12 M and 0.45 M (both copied into a
 * program run under cachegrind, its setup's count taken off). 2 pieces
 * beside 4094 queued cost 0.08 M then, 0.15 M now. At most half the
 * table is used: a lookup probes a few keys (a program writing every
 * buffer's pid and tid alike makes them probe all, as the old scan did). */
void rec_thread_set_fill(rec_thread_set *set, const ltr_ring_view *ring, const uint32_t *queued, uint32_t n)
{
    if (++set->gen == 0) { /* wrapped: keys of an old generation 1 would pass for new */
        memset(set->keys, 0, sizeof *set->keys * set->cap);
        set->gen = 1;
    }
    for (uint32_t k = 0; k < n; k++) {
        const ltr_ring_buf *b = &ring->bufs[queued[k]];
        if (b->tid == 0)
            continue;
        uint64_t thread = thread_of(b);
        uint32_t s = thread_slot(set, thread);
        while (set->keys[s].gen == set->gen)
            s = (s + 1) & (set->cap - 1);
        set->keys[s] = (rec_thread_key){thread, queued[k], set->gen};
    }
}

bool rec_piece_waits(const ltr_ring_view *ring, const rec_thread_set *set, uint32_t idx)
{
    const ltr_ring_buf *b = &ring->bufs[idx];
    if (b->tid == 0)
        return false;
    uint64_t thread = thread_of(b);
    for (uint32_t s = thread_slot(set, thread); set->keys[s].gen == set->gen; s = (s + 1) & (set->cap - 1))
        /* idx itself: handed in since the flush began, not one before it */
        if (set->keys[s].thread == thread && set->keys[s].idx != idx)
            return true;
    return false;
}

/* The events buffer idx holds that were not taken yet: its commit word's
 * claim, within what the buffer can hold (a program may write it). */
static uint64_t events_untaken(collector_state *cs, uint32_t idx)
{
    bool bad;
    uint64_t commit = ltr_ring_committed(&cs->ring, idx, &bad);
    uint32_t events = LTR_COMMIT_EVENTS(commit), most = LTR_COMMIT_BYTES(commit) / LTR_CEVENT_MIN_SIZE;
    events = events < most ? events : most;
    return events > cs->notes[idx].flushed_events ? events - cs->notes[idx].flushed_events : 0;
}

static void note_flushing(recorder *r, unsigned c, uint32_t idx)
{
    collector_state *cs = &r->col[c];
    (void)ltr_ring_committed(&cs->ring, idx, &(bool){0}); /* seen: what its thread published before is too */
    cs->flushing_seq[cs->nflushing] = atomic_load_explicit(&cs->ring.bufs[idx].seq, memory_order_acquire);
    cs->flushing[cs->nflushing++] = idx;
}

/* Still the buffer note_flushing saw being filled: not handed in (and
 * perhaps taken, freed and given to another thread) since. */
static bool still_filled(collector_state *cs, uint32_t k)
{
    ltr_ring_buf *b = &cs->ring.bufs[cs->flushing[k]];
    return atomic_load_explicit(&b->state, memory_order_acquire) == LTR_BUF_ACTIVE &&
           atomic_load_explicit(&b->seq, memory_order_acquire) == cs->flushing_seq[k];
}

/* The published buffers not taken (queued_now): behind a slot not filled
 * yet, or in none (a producer killed publishing). */
static void list_full(collector_state *cs)
{
    cs->nqueued_now = 0;
    for (uint32_t i = 0; i < cs->ring.nbuf; i++)
        if (atomic_load_explicit(&cs->ring.bufs[i].state, memory_order_acquire) == LTR_BUF_FULL)
            cs->queued_now[cs->nqueued_now++] = i;
}

/* The committed part of the buffers being filled, after every buffer
 * published before them: a thread that hands its full buffer to the queue
 * and fills the next while the flush runs had the next one's piece in the
 * file before the full one (taken from the queue only in the next round),
 * its events out of order there. A perl program of 4 threads, 16 KB
 * buffers: 15 events of a thread written before 5 that came first, the
 * analysis then saying 4 addresses allocated again and 4 frees unseen, "0
 * lost, no damage"; 4 threads allocating in a loop: 3 or 4 such places in
 * 12 M events. So the buffers being filled are listed first, the queue is
 * taken (what their threads published before is in it), and a piece whose
 * thread still has a buffer in the queue (behind a hole: a producer
 * between its two stores, or killed there) waits for the next flush.
 * What waits so is counted (flush_held): `ltr flush` said the file held
 * everything recorded so far while a hole kept back the buffers behind it
 * and these pieces (a thread killed inside ltr_ring_publish, 4 threads
 * behind it: 4 of 12 004 allocations in the file). */
static void flush_partials(recorder *r)
{
    r->flush_held = 0;
    for (unsigned c = 0; c < r->cfg.ncollectors; c++)
        r->col[c].nflushing = 0;
    for_active(r, true, 0, note_flushing);
    for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
        collector_state *cs = &r->col[c];
        take_queued(r, c);
        list_full(cs);
        if (cs->nflushing)
            rec_thread_set_fill(&cs->queued_threads, &cs->ring, cs->queued_now, cs->nqueued_now);
        take_metadata(r);
        for (uint32_t k = 0; k < cs->nflushing; k++) {
            if (!still_filled(cs, k))
                continue;
            if (rec_piece_waits(&cs->ring, &cs->queued_threads, cs->flushing[k]))
                r->flush_held += events_untaken(cs, cs->flushing[k]);
            else
                take_tail(r, c, cs->flushing[k], true);
        }
        /* and the queue's, behind the slot: what was handed in as the flush
         * ran is taken first (a buffer whose piece it saw being filled, or
         * not), else counted too (8 threads, 'ltr flush' in a loop: 88
         * events said to wait, behind no hole, 1 flush in 6) */
        take_queued(r, c);
        list_full(cs);
        for (uint32_t k = 0; k < cs->nqueued_now; k++)
            r->flush_held += events_untaken(cs, cs->queued_now[k]);
    }
}

/* File mode, at each flush: the counters so far, so that a recorder killed
 * later leaves a trace that still says what was lost up to here. Skipped when
 * they did not change, and once the file is full (its limit holds). */
static void write_counters(recorder *r)
{
    ltr_bytes now = {0};
    rec_counters(r, &now);
    ltr_error err;
    if (!now.failed && !r->file_full &&
        (now.len != r->last_counters.len || memcmp(now.data, r->last_counters.data, now.len) != 0)) {
        if (ltr_writer_counters(r->writer, now.data, now.len, &err) != 0) {
            rec_log("%s", err.msg);
        } else {
            ltr_bytes_free(&r->last_counters);
            r->last_counters = now;
            return;
        }
    }
    ltr_bytes_free(&now);
}

/* Says once per collector that its shared memory was written over. */
static void log_damage(recorder *r)
{
    for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
        if (r->col[c].damage_logged || !rec_shm_damage(r, c))
            continue;
        rec_log("collector %s: the session's shared memory was written over (by a traced program?); "
                "what cannot be is skipped and counted (shm_damage in the trace's counters)",
                r->cfg.collectors[c].name);
        r->col[c].damage_logged = true;
    }
}

/* How long one round writes from the backlog before the loop looks at its
 * requests again (it comes back at once while blocks wait). */
#define BACKLOG_SLICE_NS (20 * 1000000ull)

/* Writes the backlog's oldest blocks for up to budget_ns (0: through the
 * block pushed as the through-th, for a flush), taking the queued buffers
 * out again after each: producers get their buffers back while it writes. */
static void write_backlog(recorder *r, uint64_t budget_ns, uint64_t through)
{
    uint64_t end = budget_ns ? ltr_now_ns() + budget_ns : UINT64_MAX;
    rec_backlog *b = &r->backlog;
    while (rec_backlog_oldest(b) && (budget_ns || b->dropped < through)) {
        write_oldest(r);
        for (unsigned c = 0; c < r->cfg.ncollectors; c++)
            take_queued(r, c);
        if (ltr_now_ns() >= end)
            return;
    }
}

bool rec_backlog_waiting(const recorder *r)
{
    return rec_backlog_oldest(&r->backlog) != NULL;
}

/* Memory mode: a queue slot claimed and left empty for 2 s is a dead
 * producer's (its process exec'd or was killed inside ltr_ring_publish) and
 * is marked so (ltr_ring_mark_dead): producers that overwrite the oldest
 * buffer stop at an empty slot, so it stopped the flight recorder for the
 * rest of the session, every later event lost (file mode takes the queue
 * past such a slot: take_queued, take_past_holes). The dead producer's
 * buffer, in no slot, went into the history when its process's end was
 * seen (rec_harvest_owner). Looked at once a second (a scan of the
 * queue). */
static void mark_dead_holes(recorder *r)
{
    uint64_t now = ltr_now_ns();
    for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
        collector_state *cs = &r->col[c];
        uint64_t pos = ltr_ring_first_hole(&cs->ring);
        if (pos == UINT64_MAX || pos != cs->hole_pos || !cs->queue_stall_ns) {
            cs->hole_pos = pos;
            cs->queue_stall_ns = pos == UINT64_MAX ? 0 : now;
        } else if (now - cs->queue_stall_ns >= 2000000000u) {
            if (ltr_ring_mark_dead(&cs->ring, pos))
                rec_log("collector %s: a queue slot whose producer never filled it marked dead",
                        r->cfg.collectors[c].name);
            cs->queue_stall_ns = 0;
        }
    }
}

static void dead_second_look(recorder *r, unsigned c, uint64_t now);

/* Whether the CPU the writer spends compressing is taken from someone:
 * runnable tasks of the machine waited for a CPU (PSI) for more than a
 * tenth of the time since the last look, taken at most every
 * THRIFT_LOOK_NS. The writer then compresses at its cheaper levels
 * (writer.c says what they save and cost). A kernel without PSI: never. */
#define THRIFT_LOOK_NS 20000000ull
#define THRIFT_WAITED_PART 10
static void choose_thrift(recorder *r)
{
    uint64_t now = ltr_now_ns(), waited_us;
    if (now - r->thrift_ns < THRIFT_LOOK_NS || ltr_cpu_waited_us(&waited_us) != 0)
        return;
    if (r->thrift_ns && waited_us >= r->thrift_waited_us)
        ltr_writer_set_thrifty(r->writer,
                               (waited_us - r->thrift_waited_us) * 1000 * THRIFT_WAITED_PART > now - r->thrift_ns);
    r->thrift_ns = now;
    r->thrift_waited_us = waited_us;
}

void rec_drain(recorder *r, bool flush_active)
{
    keep_state(r);
    rec_sample_counters(r);
    rec_count_refusals(r);
    log_damage(r);
    if (r->cfg.mode != LTR_MODE_FILE) {
        meta_pull(r); /* kept before producers or anyone else can write over it */
        uint64_t now = ltr_now_ns();
        for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
            atomic_store(&r->col[c].ring.shared->wake_pending, 0);
            dead_second_look(r, c, now);
        }
        if (flush_active)
            mark_dead_holes(r);
        return;
    }
    choose_thrift(r);
    for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
        atomic_store(&r->col[c].ring.shared->wake_pending, 0);
        take_metadata(r); /* before the blocks that use it */
        take_queued(r, c);
    }
    if (flush_active) /* what is being written too, taken as far as committed */
        flush_partials(r);
    /* A round writes for BACKLOG_SLICE_NS at most, the periodic flush too:
     * the recorder answers requests between rounds. What the flush then
     * puts to the file, and its counters count, is what was written. */
    write_backlog(r, BACKLOG_SLICE_NS, 0);
    if (flush_active) {
        ltr_error err;
        if (!r->file_full && ltr_writer_flush(r->writer, 0, &err) != 0)
            rec_write_failed(r, &err);
        write_counters(r);
    }
}

/* `ltr flush`: everything committed so far goes into the file now, as the
 * periodic flush would within a second, then to the disk. The file is a
 * valid trace the moment this returns: chunks are only ever appended, and a
 * reader takes a trace without END as one still being written (or cut
 * short), up to its last intact chunk; the COUNTERS just written say what
 * was lost so far. */
int rec_flush_file(recorder *r, ltr_error *err)
{
    rec_drain(r, true);
    write_backlog(r, 0, r->backlog.pushed); /* all that was taken before this */
    ltr_error e;
    if (!r->file_full && ltr_writer_flush(r->writer, 0, &e) != 0)
        rec_write_failed(r, &e);
    write_counters(r);
    if (r->file_full)
        return 0; /* the size limit holds: what follows is counted as lost */
    return ltr_writer_flush(r->writer, 1, err);
}

/* A thread ended inside ltr_ring_publish leaves its buffer FULL in no queue
 * slot: killed between marking it FULL and claiming a queue position, or
 * between claiming one and storing its index there. The second also leaves a
 * hole the queue stops at (take_queued waits 2 s before skipping it). Threads
 * end anywhere when their process execs (all but the caller, at once) or is
 * killed: heap-exec-race's 32 threads hit that window about 1 exec in 200,
 * and everything published behind the hole, the new image's buffers too, was
 * still waiting when the session ended, neither written nor counted
 * (tests/e2e/test_exec_order.c). In file mode these buffers, of owner (all
 * owners: the session's end, when no one publishes any more), are finished
 * at once (finish_unqueued). In memory mode they were never finished: such a
 * buffer was out of the ring for good, its events in no save and counted
 * nowhere (the scribbler's killedpublishing). There a FULL buffer in no slot
 * may also be one a producer of another process is taking over
 * (steal_oldest in ring.c: the head moved past it, its owner and seq not
 * stored yet), for the few instructions between: only a buffer found so
 * twice, HOLE_GRACE_MS apart, with the same seq, is the dead one's
 * (dead_first_look, dead_second_look). */
#define HOLE_GRACE_MS 50
#define HOLE_GRACE_NS (HOLE_GRACE_MS * 1000000ull)

/* seq1[i]: buffer i's seq + 1 if it is FULL, of owner (or all_owners) and
 * in no slot of the queue, else 0. Returns how many are. */
static unsigned find_unqueued(ltr_ring_view *ring, bool all_owners, uint32_t owner, uint64_t *seq1)
{
    memset(seq1, 0, sizeof *seq1 * ring->nbuf);
    uint64_t tail = ltr_ring_tail(ring);
    for (uint64_t pos = ltr_ring_history_start(ring, tail); pos < tail; pos++) {
        uint32_t idx = ltr_ring_at(ring, pos);
        if (idx != LTR_RING_NONE)
            seq1[idx] = UINT64_MAX; /* queued */
    }
    unsigned n = 0;
    for (uint32_t i = 0; i < ring->nbuf; i++) {
        ltr_ring_buf *b = ltr_ring_vbuf(ring, i);
        bool out = seq1[i] == 0 && atomic_load_explicit(&b->state, memory_order_acquire) == LTR_BUF_FULL &&
                   (all_owners || b->owner == owner);
        seq1[i] = out ? atomic_load_explicit(&b->seq, memory_order_relaxed) + 1 : 0;
        n += out;
    }
    return n;
}

/* File mode: the unqueued buffers finished into the file's queue; how many. */
static unsigned finish_unqueued(recorder *r, unsigned c, bool all_owners, uint32_t owner)
{
    ltr_ring_view *ring = &r->col[c].ring;
    uint64_t *seq1 = calloc(ring->nbuf, sizeof *seq1);
    unsigned n = seq1 ? find_unqueued(ring, all_owners, owner, seq1) : 0;
    for (uint32_t i = 0; n && i < ring->nbuf; i++)
        if (seq1[i])
            finish_buffer(r, c, i);
    free(seq1);
    return n;
}

/* Memory mode: the claimed and empty queue positions now into pos (in
 * queue order), each noted with when it was first seen so; returns how
 * many have been so for HOLE_GRACE_NS: those, in queue order, come first. */
static unsigned holes_past_grace(collector_state *cs, uint64_t now, uint64_t *pos)
{
    unsigned n = ltr_ring_holes(&cs->ring, pos, cs->ring.nbuf), old = 0;
    for (unsigned k = 0; k < n; k++) {
        uint32_t s = (uint32_t)(pos[k] % cs->ring.nbuf);
        if (cs->hole_seen[s] != pos[k] + 1) {
            cs->hole_seen[s] = pos[k] + 1;
            cs->hole_since[s] = now;
        }
        if (now - cs->hole_since[s] >= HOLE_GRACE_NS)
            pos[old++] = pos[k];
    }
    return old;
}

/* Memory mode, a producer gone: the first look at its unqueued buffers
 * (and at the queue's holes, one of which may be the position it claimed).
 * The second comes at a later round of the loop (dead_second_look): the
 * recorder slept HOLE_GRACE_MS here, for each process that ended so, and a
 * program killed over and over kept it from answering (20 killed
 * publishers at a time: 'ltr status' took 0.5 s, 300 at once 1.46 s). */
static void dead_first_look(recorder *r, unsigned c, uint32_t owner)
{
    collector_state *cs = &r->col[c];
    uint64_t *seen = calloc(cs->ring.nbuf, sizeof *seen), now = ltr_now_ns();
    if (seen && find_unqueued(&cs->ring, false, owner, seen)) {
        for (uint32_t i = 0; i < cs->ring.nbuf; i++) {
            if (!seen[i] || cs->dead_seq1[i] == seen[i])
                continue; /* waiting already: since its first look */
            cs->ndead += !cs->dead_seq1[i];
            cs->dead_seq1[i] = seen[i];
            cs->dead_since[i] = now;
            cs->dead_owner[i] = owner;
        }
        holes_past_grace(cs, now, seen);
    }
    free(seen);
}

/* Memory mode: a dead producer's buffer goes into a queue position that
 * was claimed and left empty since before the grace (holes: the one it
 * claimed, if it died after claiming; ltr_ring_fill_hole), else at a new
 * position (it died before). */
static void hand_in_dead(recorder *r, unsigned c, uint32_t idx, const uint64_t *holes, unsigned nholes,
                         unsigned *used)
{
    while (*used < nholes)
        if (ltr_ring_fill_hole(&r->col[c].ring, holes[(*used)++], idx))
            return;
    finish_buffer(r, c, idx);
}

/* Whether a buffer waiting for its second look has waited HOLE_GRACE_NS. */
static bool dead_due(const collector_state *cs, uint64_t now)
{
    for (uint32_t i = 0; cs->ndead && i < cs->ring.nbuf; i++)
        if (cs->dead_seq1[i] && now - cs->dead_since[i] >= HOLE_GRACE_NS)
            return true;
    return false;
}

/* Memory mode: the second look at the buffers that have waited long
 * enough; those still FULL in no slot, of the same owner and seq, go into
 * the history, the others were a taker's (or are queued now) and wait no
 * more. */
static void dead_second_look(recorder *r, unsigned c, uint64_t now)
{
    collector_state *cs = &r->col[c];
    if (!dead_due(cs, now))
        return;
    uint64_t *again = calloc(cs->ring.nbuf, sizeof *again), *holes = calloc(cs->ring.nbuf, sizeof *holes);
    if (again && holes) {
        find_unqueued(&cs->ring, true, 0, again);
        unsigned nholes = holes_past_grace(cs, now, holes), used = 0;
        for (uint32_t i = 0; i < cs->ring.nbuf; i++) {
            if (!cs->dead_seq1[i] || now - cs->dead_since[i] < HOLE_GRACE_NS)
                continue;
            if (again[i] == cs->dead_seq1[i] && ltr_ring_vbuf(&cs->ring, i)->owner == cs->dead_owner[i])
                hand_in_dead(r, c, i, holes, nholes, &used);
            cs->dead_seq1[i] = 0;
            cs->ndead--;
        }
    }
    free(again);
    free(holes);
}

/* Memory mode, before a save: what ended before it goes in, each buffer
 * still waiting given the rest of its grace (once a save: at most
 * HOLE_GRACE_MS). */
static void dead_settle(recorder *r)
{
    uint64_t latest = 0;
    for (unsigned c = 0; c < r->cfg.ncollectors; c++)
        for (uint32_t i = 0; r->col[c].ndead && i < r->col[c].ring.nbuf; i++)
            if (r->col[c].dead_seq1[i] && r->col[c].dead_since[i] > latest)
                latest = r->col[c].dead_since[i];
    if (!latest)
        return;
    uint64_t waited = ltr_now_ns() - latest;
    if (waited < HOLE_GRACE_NS)
        nanosleep(&(struct timespec){0, (long)(HOLE_GRACE_NS - waited)}, NULL);
    uint64_t now = ltr_now_ns();
    for (unsigned c = 0; c < r->cfg.ncollectors; c++)
        dead_second_look(r, c, now);
}

/* Whether the queue's head slot is claimed and empty. */
static bool head_hole(collector_state *cs)
{
    return ltr_ring_queued(&cs->ring) - 1 < cs->ring.nbuf &&
           ltr_ring_at(&cs->ring, ltr_ring_head(&cs->ring)) == LTR_RING_NONE;
}

/* A hole at the head slot still there after HOLE_GRACE_MS: a live producer
 * between its two stores fills it within microseconds, unless it is
 * preempted right there. The dead process's own holes cannot be told from
 * a live producer's claim ahead of them (a review made one wait there: its
 * slot skipped at once, its buffer then written out of order and counted
 * as damage), so the harvest gives each this long first. Waited for until
 * `until` (take_past_holes), not a grace per hole: the holes after the
 * first were claimed before the harvest began as well, and a program that
 * died with hundreds of positions claimed (scribbler killedclaimingmany:400)
 * kept the recorder from answering for 20 s. */
static bool hole_stays(collector_state *cs, uint64_t until)
{
    while (head_hole(cs) && ltr_now_ns() < until) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return head_hole(cs);
}

/* File mode: the queue taken past up to `most` holes at its head, positions
 * claimed by threads that died before filling them (finish_unqueued); those
 * still empty grace_ms after the first harvest that saw them claimed (0: no
 * one publishes any more). Programs killed at once each waited a grace of
 * their own for holes all claimed before the first harvest: 40 killed
 * inside a publish kept the recorder from answering for up to 2 s, and a
 * program attaching then lost its 1000 events. A hole claimed since is a
 * live producer's, not given its grace here: take_queued's stall passes it
 * if it stays. */
static void take_past_holes(recorder *r, unsigned c, unsigned most, unsigned grace_ms)
{
    collector_state *cs = &r->col[c];
    if (!grace_ms || ltr_ring_head(&cs->ring) >= cs->claimed_pos) { /* the last harvest's holes are passed */
        cs->claimed_pos = ltr_ring_tail(&cs->ring);
        cs->claimed_ns = ltr_now_ns();
    }
    uint64_t until = cs->claimed_ns + grace_ms * 1000000ull;
    take_queued(r, c);
    for (unsigned i = 0; i < most && ltr_ring_head(&cs->ring) < cs->claimed_pos && hole_stays(cs, until); i++) {
        skip_hole(cs);
        take_queued(r, c);
    }
}

/* File mode, a producer gone: the buffers it published that still wait in
 * the queue (behind a hole: another producer between its two stores,
 * stopped there, or one of its own killed there) written now, in queue
 * order, before the buffers its threads were filling. Written when their
 * turn came, after the hole, they followed those in the file: each
 * thread's last events before its earlier ones (a process killed behind
 * hole.c's hole, 4 threads: 1 to 4 steps back of a thread's events), and
 * after the process's end, which the reader takes as no block of it
 * coming after. They stay queued, their contents taken (take_tail notes
 * it): finish_buffer writes nothing more of them and frees them when
 * their turn comes, so the queue's order and count are as before. A CPU's
 * buffer (tid 0) holds several threads' records: one it was publishing
 * when it died (unqueued, cpu_unqueued) may hold a thread's records from
 * before that thread's in a CPU buffer behind its hole, so then the CPU
 * buffers wait their turn as before. */
static void take_owner_queued(recorder *r, unsigned c, uint32_t owner, bool cpu_unqueued)
{
    ltr_ring_view *ring = &r->col[c].ring;
    uint64_t tail = ltr_ring_tail(ring);
    for (uint64_t pos = ltr_ring_history_start(ring, tail); pos < tail; pos++) {
        uint32_t idx = ltr_ring_at(ring, pos);
        if (idx == LTR_RING_NONE)
            continue;
        ltr_ring_buf *b = ltr_ring_vbuf(ring, idx);
        if (atomic_load_explicit(&b->state, memory_order_acquire) == LTR_BUF_FULL && b->owner == owner &&
            (b->tid != 0 || !cpu_unqueued))
            take_tail(r, c, idx, false);
    }
}

/* Whether owner has a CPU's buffer FULL in no queue slot (seq1 as
 * find_unqueued left it). */
static bool cpu_unqueued(ltr_ring_view *ring, const uint64_t *seq1)
{
    for (uint32_t i = 0; i < ring->nbuf; i++)
        if (seq1[i] && ltr_ring_vbuf(ring, i)->tid == 0)
            return true;
    return false;
}

/* File mode: owner's buffers in its threads' order: what it published
 * (still queued: take_owner_queued), what it was publishing (in no slot),
 * then what it was filling. */
static void harvest_file(recorder *r, uint32_t owner)
{
    take_metadata(r);
    for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
        ltr_ring_view *ring = &r->col[c].ring;
        uint64_t *seq1 = calloc(ring->nbuf, sizeof *seq1);
        bool cpu = !seq1 || (find_unqueued(ring, false, owner, seq1) && cpu_unqueued(ring, seq1));
        free(seq1);
        take_owner_queued(r, c, owner, cpu);
    }
    for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
        unsigned dead = finish_unqueued(r, c, false, owner);
        for_active_of(r, c, false, owner, finish_buffer);
        if (dead)
            take_past_holes(r, c, dead, HOLE_GRACE_MS);
    }
}

/* A producer process went away (exited, or exec'd: the new image attaches
 * anew): what its threads still held is complete, with what a thread left
 * in the middle of publishing. In file mode, the queue past the holes it
 * left (as many as its unqueued buffers: its threads are gone, none will
 * fill them) is taken now: before the new image's PROCESS record, and
 * without the 2 s wait that kept them and all behind them out of a short
 * session (memory mode marks such a hole dead: mark_dead_holes). */
void rec_harvest_owner(recorder *r, uint32_t owner)
{
    if (r->cfg.mode == LTR_MODE_FILE) {
        harvest_file(r, owner);
        return;
    }
    for_active(r, false, owner, finish_buffer);
    for (unsigned c = 0; c < r->cfg.ncollectors; c++)
        dead_first_look(r, c, owner);
}

/* ---- traces ------------------------------------------------------------------ */

/* A save in progress: where it writes, and how much metadata it holds. */
typedef struct save_ctx {
    recorder *r;
    ltr_writer *w;
    size_t meta_done; /* of r->meta_kept */
    uint64_t events[LTR_MAX_COLLECTORS], buffers[LTR_MAX_COLLECTORS];
    /* buffers written, then taken over and written again with what they
     * held next: the first's events counted as overwritten too */
    uint64_t retaken_events[LTR_MAX_COLLECTORS], retaken_buffers[LTR_MAX_COLLECTORS];
    const rec_save_rounds *rounds; /* an exec'd process's images apart (saveorder.c), or NULL */
    unsigned round;                /* the round being written: its attachments' buffers only */
    uint64_t publish_wait[LTR_MAX_COLLECTORS]; /* ns left to wait for publications (SAVE_PUBLISH_WAIT_NS) */
    /* the overwritten counts when the save began: a buffer it wrote and a
     * producer then took over was counted after (save_counters) */
    uint64_t over_from[LTR_MAX_COLLECTORS], bufs_over_from[LTR_MAX_COLLECTORS];
    rec_save_window win; /* buffers taken, written a thread at a time (savewin.c) */
} save_ctx;

/* The metadata kept so far, up to what was reserved before the block to come. */
static int save_metadata(save_ctx *sc, ltr_error *err)
{
    meta_pull(sc->r);
    return rec_write_meta(sc->w, &sc->r->meta_kept, &sc->meta_done, err);
}

/* The buffers the window holds, after the metadata kept so far (theirs). */
static int save_window(save_ctx *sc, ltr_error *err)
{
    int rc = save_metadata(sc, err);
    return rc ? rc : rec_window_write(&sc->win, sc->w, err);
}

/* A buffer's records into the window, written once it is full; a CPU's
 * buffer (or one the window has no memory for) goes now, after it. */
static int save_records(save_ctx *sc, const ltr_block_info *info, const uint8_t *data, uint32_t len,
                        ltr_error *err)
{
    if (info->tid && rec_window_add(&sc->win, info, data, len) == 0)
        return rec_window_full(&sc->win) ? save_window(sc, err) : 0;
    int rc = save_window(sc, err);
    rec_window_break(&sc->win);
    return rc ? rc : rec_write_block(sc->w, info, data, len, err);
}

/* Takes the committed part of a buffer (data: a copy, or the buffer itself
 * when its committed part cannot change) into the save. */
static int save_block(save_ctx *sc, unsigned c, uint32_t idx, ltr_block_info *info, const uint8_t *data,
                      uint64_t commit, ltr_error *err)
{
    collector_state *cs = &sc->r->col[c];
    if (sc->rounds && rec_round_of(sc->rounds, ltr_ring_vbuf(&cs->ring, idx)->owner) != sc->round)
        return 0; /* another round's */
    /* A buffer comes once: twice (a queue entry or a state written over) is damage. */
    if (cs->saved_seq[idx] == info->seq + 1) {
        cs->damage++;
        return 0;
    }
    /* Taken over since, its seq says; but a seq is the traced programs' to
     * write, and a content that starts with the event it started with then
     * is that content again (an owner's first event comes after the take-over):
     * one moving a buffer's seq on at each queue slot it put it in had the
     * buffer written at each, another program's events many times over. */
    uint64_t first = records_first_ns(data, LTR_COMMIT_BYTES(commit), info->tid == 0);
    if (cs->saved_seq[idx] && cs->saved_events[idx] && first == cs->saved_first_ns[idx]) {
        cs->damage++;
        return 0;
    }
    if (cs->saved_seq[idx]) { /* an earlier content of it written: taken over since */
        sc->retaken_events[c] += cs->saved_events[idx];
        sc->retaken_buffers[c]++;
    }
    cs->saved_seq[idx] = info->seq + 1;
    uint32_t len = records_in(cs, info, data, LTR_COMMIT_BYTES(commit), LTR_COMMIT_EVENTS(commit),
                              &info->event_count);
    cs->saved_events[idx] = len ? info->event_count : 0;
    cs->saved_first_ns[idx] = first;
    if (!len)
        return 0;
    sc->events[c] += info->event_count;
    sc->buffers[c]++;
    return save_records(sc, info, data, len, err);
}

static int save_history_range(save_ctx *sc, unsigned c, uint64_t pos, uint64_t tail, ltr_error *err);
/* How long a save waits, in all for a collector, for publications under
 * way to store their buffers (two instructions apart; producers preempted
 * between them, or stopped there for good, cost at most this a save) */
#define SAVE_PUBLISH_WAIT_NS 20000000u

/* The history, oldest first. Producers may take its oldest buffers for reuse
 * while we copy: a copy counts only if its queue position was not taken.
 * Copying a large ring takes seconds, and meanwhile producers fill the
 * buffers that were active when it began and publish them past the tail
 * read first: those are neither history then nor active when save_active
 * looks, so a whole buffer of events (up to a second of a busy program) was
 * missing from every save, just before its end, and counted nowhere. The
 * tail is read again until no buffer was published while copying (at most
 * a ring's worth of rounds: a producer faster than the copy cannot keep the
 * save going). */
static int save_history(save_ctx *sc, unsigned c, uint64_t *tail_out, ltr_error *err)
{
    collector_state *cs = &sc->r->col[c];
    uint64_t tail = ltr_ring_tail(&cs->ring);
    *tail_out = tail;
    uint64_t pos = ltr_ring_history_start(&cs->ring, tail);
    for (uint32_t round = 0; round <= cs->ring.nbuf; round++) {
        int rc = save_history_range(sc, c, pos, tail, err);
        if (rc)
            return rc;
        uint64_t now = ltr_ring_tail(&cs->ring);
        if (now == tail)
            break;
        uint64_t start = ltr_ring_history_start(&cs->ring, now);
        pos = start > tail ? start : tail;
        tail = now;
        *tail_out = tail;
    }
    return 0;
}

/* Positions [pos, tail) of the history. */
static int save_history_range(save_ctx *sc, unsigned c, uint64_t pos, uint64_t tail, ltr_error *err)
{
    collector_state *cs = &sc->r->col[c];
    for (; pos < tail; pos++) {
        /* a position below the tail whose buffer is not stored yet: its
         * producer between the two (the buffer FULL, not ACTIVE), and its
         * next buffer, taken after, could be met by save_active's scan: read
         * as nothing, a save of three threads had a gap (CI, under ASan) */
        uint32_t idx = ltr_ring_at_published(&cs->ring, pos, &sc->publish_wait[c]);
        if (idx == LTR_RING_NONE)
            continue;
        bool bad;
        uint64_t commit = ltr_ring_committed(&cs->ring, idx, &bad);
        ltr_block_info info = block_of(&cs->ring, c, idx, false);
        memcpy(cs->copy, ltr_ring_vdata(&cs->ring, idx), LTR_COMMIT_BYTES(commit));
        if (!ltr_ring_still_at(&cs->ring, pos))
            continue; /* overwritten while we copied: counted as overwritten */
        int rc = save_block(sc, c, idx, &info, cs->copy, commit, err);
        if (rc)
            return rc;
        rec_meanwhile(sc->r);
    }
    return 0;
}

/* Buffers being filled. Their committed parts are all taken first, at one
 * moment, then written: writing one takes milliseconds (compression, the
 * metadata before it), and meanwhile a producer filled the rest of its
 * buffer, published it and went on in a new one, which a scan writing as it
 * went met ACTIVE later and wrote too: the events between the first
 * buffer's commit seen and its end were in neither. Each is copied before
 * it is written and kept only if no producer took it for reuse meanwhile
 * (then it is counted as overwritten).
 *
 * "One moment" is a scan of every buffer's state, and the history's tail
 * read before it: a buffer published between that read and the scan, or
 * during the scan (a thread seen early publishing its buffer and taking
 * one the scan meets later), was in neither (a review: 2 saves of 8 with 3
 * threads lacked about 145 events of one, none said lost). So the tail is
 * read again after the scan: what was published meanwhile is history, and
 * the scan is done again, until the tail held still across one; a buffer
 * the history wrote whole is not written again as active. */
typedef struct active_seen {
    uint32_t idx;
    uint64_t commit;
    ltr_block_info info;
} active_seen;

static uint32_t active_now(ltr_ring_view *ring, unsigned c, active_seen *seen)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < ring->nbuf; i++) {
        if (atomic_load_explicit(&ltr_ring_vbuf(ring, i)->state, memory_order_acquire) != LTR_BUF_ACTIVE)
            continue;
        bool bad;
        seen[n].idx = i;
        seen[n].info = block_of(ring, c, i, true);
        seen[n].commit = ltr_ring_committed(ring, i, &bad);
        n++;
    }
    return n;
}

static int save_active(save_ctx *sc, unsigned c, uint64_t tail, ltr_error *err)
{
    collector_state *cs = &sc->r->col[c];
    ltr_ring_view *ring = &cs->ring;
    active_seen *seen = malloc(sizeof *seen * ring->nbuf);
    if (!seen)
        return ltr_fail(err, ENOMEM, "out of memory saving the buffers being filled");
    uint32_t n = 0;
    int rc = 0;
    for (uint32_t round = 0; !rc && round <= ring->nbuf; round++) {
        n = active_now(ring, c, seen);
        uint64_t now = ltr_ring_tail(ring);
        if (now == tail)
            break;
        uint64_t start = ltr_ring_history_start(ring, now);
        rc = save_history_range(sc, c, start > tail ? start : tail, now, err);
        tail = now;
    }
    for (uint32_t k = 0; k < n && !rc; k++) {
        if (cs->saved_seq[seen[k].idx] == seen[k].info.seq + 1)
            continue; /* published since, and written whole with the history */
        memcpy(cs->copy, ltr_ring_vdata(ring, seen[k].idx), LTR_COMMIT_BYTES(seen[k].commit));
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load(&ltr_ring_vbuf(ring, seen[k].idx)->seq) != seen[k].info.seq)
            continue; /* published and taken for reuse since: counted as overwritten */
        rc = save_block(sc, c, seen[k].idx, &seen[k].info, cs->copy, seen[k].commit, err);
        rec_meanwhile(sc->r);
    }
    free(seen);
    return rc;
}

static int save_blocks(save_ctx *sc, ltr_error *err)
{
    for (unsigned c = 0; c < sc->r->cfg.ncollectors; c++) {
        collector_state *cs = &sc->r->col[c];
        if (!sc->round) /* once a save: a later round meets the buffers already written again */
            memset(cs->saved_seq, 0, sizeof *cs->saved_seq * cs->ring.nbuf);
        uint64_t tail;
        rec_window_break(&sc->win); /* a collector's first buffers, in a round, follow nothing before */
        int rc = save_history(sc, c, &tail, err);
        if (!rc)
            rc = save_active(sc, c, tail, err);
        if (!rc)
            rc = save_window(sc, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* A buffer the save wrote and a producer then took over (steal_oldest) is
 * counted as overwritten too: its events were in both the save and the
 * overwritten count it wrote, which then added up to more than the
 * programs emitted (a save of a ring of 1024 while a program wrote: 5 832
 * events more). So the save takes those back out of the overwritten count
 * it writes, exactly: a taker moves the head, counts the buffer's events,
 * then stores a new seq, and between the two the buffer is FULL in no
 * queue slot with the seq the save wrote (unsettled). The counters are
 * read when no buffer of the save is unsettled, and count as taken the
 * buffers whose seq changed before; read again after, nothing more may be
 * taken or unsettled (else the taking counted meanwhile is looked at
 * again). */
typedef struct saved_taken {
    uint64_t events[LTR_MAX_COLLECTORS], buffers[LTR_MAX_COLLECTORS];
    unsigned unsettled;
} saved_taken;

static void saved_taken_now(recorder *r, uint64_t *seq1, saved_taken *t)
{
    *t = (saved_taken){0};
    for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
        collector_state *cs = &r->col[c];
        find_unqueued(&cs->ring, true, 0, seq1);
        for (uint32_t i = 0; i < cs->ring.nbuf; i++) {
            if (!cs->saved_seq[i])
                continue;
            if (seq1[i] == cs->saved_seq[i]) {
                t->unsettled++;
            } else if (atomic_load_explicit(&ltr_ring_vbuf(&cs->ring, i)->seq, memory_order_acquire) + 1 !=
                       cs->saved_seq[i]) {
                t->events[c] += cs->saved_events[i];
                t->buffers[c]++;
            }
        }
    }
}

/* Samples the counters at a moment the taken buffers of the save are known
 * (*t); waits SAVE_PUBLISH_WAIT_NS at most for unsettled ones (a taker
 * stopped between its two stores: then *t may miss its buffer). */
static void sample_saved_taken(recorder *r, saved_taken *t)
{
    uint32_t most = 0;
    for (unsigned c = 0; c < r->cfg.ncollectors; c++)
        most = r->col[c].ring.nbuf > most ? r->col[c].ring.nbuf : most;
    uint64_t *seq1 = calloc(most ? most : 1, sizeof *seq1);
    if (!seq1) {
        *t = (saved_taken){0};
        rec_sample_counters(r);
        return;
    }
    uint64_t until = ltr_now_ns() + SAVE_PUBLISH_WAIT_NS;
    saved_taken after;
    for (;;) {
        saved_taken_now(r, seq1, t);
        bool late = ltr_now_ns() >= until;
        if (t->unsettled && !late) {
            sched_yield();
            continue;
        }
        rec_sample_counters(r);
        saved_taken_now(r, seq1, &after);
        if (late || (!after.unsettled && !memcmp(after.events, t->events, sizeof t->events)))
            break;
    }
    free(seq1);
}

/* taken, of a count that is now and was from when the save began: what the
 * save takes back out of it grew meanwhile. A buffer's seq is the traced
 * programs' to write: one moving every seq on made each buffer the save
 * wrote look taken over, and its events came out of the overwritten count
 * of other programs' events overwritten before (a ring of 64: 9 274 of
 * 1 000 000 counted nowhere; scribbler seqs:PATH). */
static uint64_t taken_back(uint64_t taken, uint64_t now, uint64_t from)
{
    uint64_t grew = now >= from ? now - from : 0;
    return taken < grew ? taken : grew;
}

/* The counters of a save: its events are those it wrote, and what it
 * wrote is not overwritten too. */
static void save_counters(recorder *r, const save_ctx *sc, ltr_bytes *out)
{
    saved_taken t;
    sample_saved_taken(r, &t);
    for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
        t.events[c] += sc->retaken_events[c];
        t.buffers[c] += sc->retaken_buffers[c];
    }
    uint64_t written[LTR_MAX_COLLECTORS], buffers[LTR_MAX_COLLECTORS], over[LTR_MAX_COLLECTORS],
        bufs_over[LTR_MAX_COLLECTORS];
    for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
        collector_state *cs = &r->col[c];
        written[c] = cs->events_written, buffers[c] = cs->buffers_written;
        over[c] = cs->overwritten.total, bufs_over[c] = cs->bufs_overwritten.total;
        cs->events_written = sc->events[c], cs->buffers_written = sc->buffers[c];
        cs->overwritten.total -= taken_back(t.events[c], over[c], sc->over_from[c]);
        cs->bufs_overwritten.total -= taken_back(t.buffers[c], bufs_over[c], sc->bufs_over_from[c]);
    }
    put_counters(r, out);
    for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
        collector_state *cs = &r->col[c];
        cs->events_written = written[c], cs->buffers_written = buffers[c];
        cs->overwritten.total = over[c], cs->bufs_overwritten.total = bufs_over[c];
    }
}

static int write_save(ltr_writer *w, recorder *r, const char *description, ltr_error *err)
{
    ltr_bytes kv = {0}, counters = {0};
    rec_header_kv(r, &kv, "save");
    int rc = ltr_writer_kv(w, LTR_CHUNK_HEADER, &kv, err);
    save_ctx sc = {.r = r, .w = w};
    rec_window_begin(&sc.win, w);
    for (unsigned c = 0; c < LTR_MAX_COLLECTORS; c++)
        sc.publish_wait[c] = SAVE_PUBLISH_WAIT_NS;
    rec_sample_counters(r);
    for (unsigned c = 0; c < r->cfg.ncollectors; c++)
        sc.over_from[c] = r->col[c].overwritten.total, sc.bufs_over_from[c] = r->col[c].bufs_overwritten.total;
    rec_save_rounds rounds;
    meta_pull(r);
    int planned = rc ? -1 : rec_save_rounds_plan(r, &rounds);
    if (planned > 0) { /* an exec'd process: its images in rounds */
        sc.rounds = &rounds;
        sc.meta_done = rounds.scanned;
    } else if (!rc) {
        rec_save_rounds_free(&rounds); /* one round: as ever (without memory for rounds too) */
    }
    if (!rc && !sc.rounds)
        rc = save_metadata(&sc, err); /* all of it, even with no event */
    if (!rc)
        rc = rec_markers_save(r, w, &sc.events[0], err);
    for (sc.round = 0; !rc && sc.round < (sc.rounds ? sc.rounds->rounds : 1); sc.round++) {
        size_t done = 0;
        if (sc.rounds)
            rc = rec_write_meta(w, &rounds.meta[sc.round], &done, err);
        if (!rc)
            rc = save_blocks(&sc, err);
    }
    if (sc.rounds)
        rec_save_rounds_free(&rounds);
    rec_window_free(&sc.win);
    if (!rc)
        rc = ltr_writer_flush(w, 0, err);
    if (!rc) {
        save_counters(r, &sc, &counters);
        rc = ltr_writer_counters(w, counters.data, counters.len, err);
    }
    ltr_bytes_free(&kv);
    if (!rc) {
        rec_end_kv(r, &kv, description);
        rc = ltr_writer_kv(w, LTR_CHUNK_END, &kv, err);
    }
    if (!rc)
        rc = ltr_writer_flush(w, 1, err);
    ltr_bytes_free(&kv);
    ltr_bytes_free(&counters);
    return rc;
}

int rec_save(recorder *r, const char *path, const char *description, bool force, char *kept, size_t kept_size,
             ltr_error *err)
{
    dead_settle(r);
    rec_drain(r, false);
    char tmp[4200];
    if (ltr_temp_name(tmp, sizeof tmp, path) < 0)
        return ltr_fail(err, ENAMETOOLONG, "%s: path too long", path);
    int fd = ltr_create_temp(tmp);
    if (fd < 0)
        return ltr_fail(err, -fd, "cannot write %s: %s", path, strerror(-fd));
    ltr_writer *w;
    int rc = ltr_writer_open_fd(&w, fd, tmp, err);
    if (!rc) {
        rc = write_save(w, r, description, err);
        ltr_writer_close(w);
    }
    if (rc) {
        unlink(tmp);
        return rc;
    }
    rc = ltr_publish(tmp, path, force);
    if (rc == -EEXIST && kept) {
        snprintf(kept, kept_size, "%s", tmp);
        return ltr_fail(err, EEXIST, "%s appeared meanwhile and was not overwritten (--force replaces "
                        "it); the trace is at %s", path, tmp);
    }
    if (rc)
        unlink(tmp);
    if (rc == -EEXIST)
        return ltr_fail_exists(err, path);
    if (rc)
        return ltr_fail(err, -rc, "cannot rename %s to %s: %s", tmp, path, strerror(-rc));
    return 0;
}

int rec_finish_file(recorder *r, const char *description, ltr_error *err)
{
    rec_drain(r, true);
    /* The queue past its holes before the buffers being filled: a thread's
     * buffer published behind a hole came before the one it fills, which
     * went first into the file (tests/programs/hole.c staying, 4 threads of
     * 3 000 allocations behind it, stopped at once: 2 or 3 of the threads'
     * last events before their earlier ones, at one time). No one publishes
     * now: a hole is a producer's that died or will not store there. */
    for (unsigned c = 0; c < r->cfg.ncollectors; c++)
        take_past_holes(r, c, r->col[c].ring.nbuf, 0);
    for_active(r, true, 0, finish_buffer);
    /* handed over meanwhile (a thread ending); past any hole, and then what
     * was published into none (finish_unqueued) */
    for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
        take_past_holes(r, c, r->col[c].ring.nbuf, 0);
        finish_unqueued(r, c, true, 0);
    }
    take_metadata(r);
    while (rec_backlog_oldest(&r->backlog)) /* all of it, taking nothing more */
        write_oldest(r);
    ltr_bytes counters = {0}, kv = {0};
    if (ltr_writer_flush(r->writer, 0, err) != 0) /* blocks it cannot write are counted as lost */
        rec_write_failed(r, err);
    /* The closing chunks are small and say what was lost: they may pass the
     * size limit by their few hundred bytes. */
    ltr_writer_set_limit(r->writer, 0);
    rec_counters(r, &counters);
    int rc = ltr_writer_counters(r->writer, counters.data, counters.len, err);
    if (!rc) {
        rec_end_kv(r, &kv, description);
        rc = ltr_writer_kv(r->writer, LTR_CHUNK_END, &kv, err);
    }
    if (!rc)
        rc = ltr_writer_flush(r->writer, 1, err);
    ltr_bytes_free(&counters);
    ltr_bytes_free(&kv);
    return rc;
}

uint64_t rec_events_recorded(recorder *r, unsigned c)
{
    collector_state *cs = &r->col[c];
    rec_sample_counters(r);
    /* the dropped ones are counted as lost, not twice */
    uint64_t n = cs->events_written - cs->events_dropped + cs->overwritten.total + cs->backlog_events;
    if (c == 0 && r->cfg.mode == LTR_MODE_MEMORY)
        n += r->nmarkers; /* kept by the recorder, out of the ring */
    for (uint32_t i = 0; i < cs->ring.nbuf; i++) {
        if (atomic_load_explicit(&ltr_ring_vbuf(&cs->ring, i)->state, memory_order_acquire) == LTR_BUF_FREE)
            continue;
        n += events_untaken(cs, i); /* a rough figure for status */
    }
    return n;
}
