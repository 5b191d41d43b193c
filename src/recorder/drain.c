/*
 * recorder/drain.c — moving buffers out of shared memory: in file mode into
 * the trace as they fill (and the filled part of buffers still being written,
 * at each flush); in memory mode the ring's queue is the history, which
 * producers overwrite themselves, and a save copies it out. Also the counters
 * and the header and end key/value lists of a trace.
 */
#include "recorder/internal.h"
#include "prim/prim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
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

uint64_t rec_events_lost(recorder *r, unsigned c)
{
    collector_state *cs = &r->col[c];
    return atomic_load(&cs->ring->events_lost) + cs->events_dropped +
           atomic_load(&r->reg->sessions[r->slot].unattached_lost[c]);
}

void rec_counters(recorder *r, ltr_bytes *out)
{
    for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
        collector_state *cs = &r->col[c];
        size_t rec = ltr_bytes_record_begin(out, LTR_COUNTER_COLLECTOR);
        ltr_bytes_put_u16(out, (uint16_t)c);
        ltr_bytes_put_str(out, r->cfg.collectors[c].name);
        ltr_bytes_put_u32(out, cs->ring->buffer_size);
        ltr_bytes_put_u32(out, cs->ring->nbuf);
        ltr_bytes_put_u64(out, cs->events_written - cs->events_dropped);
        ltr_bytes_put_u64(out, rec_events_lost(r, c));
        ltr_bytes_put_u64(out, cs->buffers_written);
        ltr_bytes_put_u64(out, cs->buffers_lost);
        ltr_bytes_put_u64(out, atomic_load(&cs->ring->events_overwritten));
        ltr_bytes_put_u64(out, atomic_load(&cs->ring->buffers_overwritten));
        ltr_bytes_record_end(out, rec);
    }
    ltr_shm_proc *procs = ltr_shm_procs(r->shm);
    for (uint32_t i = 0; i < r->shm->nprocs; i++) {
        uint32_t pid = atomic_load(&procs[i].pid);
        if (!pid)
            continue;
        for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
            uint64_t ev = atomic_load(&procs[i].events_lost[c]);
            pid_loss *l = NULL;
            for (unsigned k = 0; k < r->nlosses; k++)
                if (r->losses[k].pid == pid)
                    l = &r->losses[k];
            if (!ev && !(l && (l->events_lost[c] || l->buffers_lost[c])))
                continue;
            size_t rec = ltr_bytes_record_begin(out, LTR_COUNTER_PROCESS_LOST);
            ltr_bytes_put_u16(out, (uint16_t)c);
            ltr_bytes_put_u32(out, pid);
            ltr_bytes_put_u64(out, ev + (l ? l->events_lost[c] : 0));
            ltr_bytes_put_u64(out, l ? l->buffers_lost[c] : 0);
            ltr_bytes_record_end(out, rec);
        }
    }
}

/* ---- metadata -------------------------------------------------------------- */

/* End of the complete records of the metadata region, from `from` on. */
static uint64_t meta_complete(recorder *r, uint64_t from)
{
    uint64_t used = atomic_load_explicit(&r->shm->meta_used, memory_order_acquire);
    if (used > r->shm->meta_capacity)
        used = r->shm->meta_capacity;
    const uint8_t *m = ltr_shm_meta(r->shm);
    uint64_t off = from;
    while (off + LTR_RECORD_HEADER_SIZE <= used) {
        uint16_t kind = __atomic_load_n((const uint16_t *)(m + off), __ATOMIC_ACQUIRE);
        uint32_t size = ltr_get_u32(m + off + 4);
        if (!kind || size < LTR_RECORD_HEADER_SIZE || off + size > used)
            break; /* still being written */
        off += size;
    }
    return off;
}

#define META_CHUNK_MAX (8u << 20) /* well under the format's 64 MiB per chunk */

/* Writes complete records of the metadata region from `from` to `end` in
 * chunks cut at record boundaries; returns how far it got. */
static uint64_t write_metadata_range(recorder *r, ltr_writer *w, uint64_t from, uint64_t end,
                                     ltr_error *err)
{
    const uint8_t *m = ltr_shm_meta(r->shm);
    while (from < end) {
        uint64_t cut = from;
        while (cut < end) {
            uint32_t size = ltr_get_u32(m + cut + 4);
            if (cut > from && cut + size - from > META_CHUNK_MAX)
                break;
            cut += size;
        }
        if (ltr_writer_metadata(w, m + from, cut - from, err) != 0)
            break;
        from = cut;
    }
    return from;
}

/* Metadata records are appended by many processes at once, each reserving
 * its place first; they complete out of order. An event's layout was reserved
 * before the event was committed, so before writing a block we write every
 * record reserved so far, waiting briefly for those still being written. A
 * producer killed in the middle of an append would hold us up: after a second
 * we go on, and the events that needed its record will not decode. */
static uint64_t sync_metadata(recorder *r, ltr_writer *w, uint64_t done)
{
    uint64_t target = atomic_load_explicit(&r->shm->meta_used, memory_order_acquire);
    if (target > r->shm->meta_capacity)
        target = r->shm->meta_capacity;
    if (target <= done)
        return done;
    uint64_t end = meta_complete(r, done);
    for (int i = 0; i < 1000 && end < target; i++) {
        usleep(1000);
        end = meta_complete(r, done);
    }
    if (end < target)
        rec_log("a metadata record stayed incomplete for a second (its writer died?)");
    ltr_error err;
    uint64_t written = write_metadata_range(r, w, done, end, &err);
    if (written != end)
        rec_write_failed(r, &err);
    return written;
}

static void write_new_metadata(recorder *r)
{
    if (!r->file_full)
        r->meta_done = sync_metadata(r, r->writer, r->meta_done);
}

/* The block header of a buffer as it is now. */
static ltr_block_info block_of(ltr_ring *ring, unsigned c, uint32_t idx, uint64_t commit, bool partial)
{
    ltr_ring_buf *b = ltr_ring_buf_at(ring, idx);
    return (ltr_block_info){.collector = (uint16_t)c,
                            .flags = partial ? LTR_BLOCK_FLAG_SEALED_EARLY : 0,
                            .pid = b->pid, .tid = b->tid, .seq = atomic_load(&b->seq),
                            .event_count = LTR_COMMIT_EVENTS(commit)};
}

/* ---- file mode --------------------------------------------------------------- */

void rec_write_failed(recorder *r, const ltr_error *err)
{
    rec_log("%s", err->msg);
    /* --max-file-size is asked for: its drops are counted, not an error */
    bool limit = err->code == EFBIG && r->cfg.max_file_size;
    if (!r->write_err.code && !limit)
        r->write_err = *err;
}

void rec_on_drop(void *ctx, const ltr_block_info *info, uint32_t byte_count)
{
    recorder *r = ctx;
    collector_state *cs = &r->col[info->collector];
    cs->events_dropped += info->event_count;
    cs->buffers_lost++;
    pid_loss *l = loss_for(r, info->pid);
    if (l) {
        l->events_lost[info->collector] += info->event_count;
        l->buffers_lost[info->collector]++;
    }
}

/* Writes what the buffer holds beyond what was written before. */
static void write_tail(recorder *r, unsigned c, uint32_t idx, bool partial)
{
    collector_state *cs = &r->col[c];
    buf_note *n = &cs->notes[idx];
    uint64_t commit = ltr_ring_committed(cs->ring, idx);
    uint32_t bytes = LTR_COMMIT_BYTES(commit), events = LTR_COMMIT_EVENTS(commit);
    if (bytes <= n->flushed_bytes)
        return;
    ltr_block_info info = block_of(cs->ring, c, idx, commit, partial);
    info.event_count = events - n->flushed_events;
    cs->events_written += info.event_count;
    ltr_error err;
    write_new_metadata(r); /* the layouts its events use come first */
    if (r->file_full) {
        rec_on_drop(r, &info, bytes - n->flushed_bytes);
    } else if (ltr_writer_block(r->writer, &info, ltr_ring_data(cs->ring, idx) + n->flushed_bytes,
                                bytes - n->flushed_bytes, &err) != 0) {
        rec_write_failed(r, &err);
        if (err.code == EFBIG || err.code == ENOSPC)
            r->file_full = err.code == EFBIG; /* a full disk may free up; a size limit won't */
    }
    n->flushed_bytes = bytes;
    n->flushed_events = events;
}

/* A buffer is complete: into the file and free again (file mode), or into the
 * history queue (memory mode: the recorder completing a dead producer's). */
static void finish_buffer(recorder *r, unsigned c, uint32_t idx)
{
    collector_state *cs = &r->col[c];
    if (r->cfg.mode == LTR_MODE_FILE) {
        write_tail(r, c, idx, false);
        cs->buffers_written++;
        cs->notes[idx] = (buf_note){0, 0};
        ltr_ring_release(cs->ring, idx);
        return;
    }
    ltr_ring_publish(cs->ring, idx);
}

static void take_queued(recorder *r, unsigned c)
{
    collector_state *cs = &r->col[c];
    for (;;) {
        uint32_t idx = ltr_ring_take(cs->ring);
        if (idx != LTR_RING_NONE) {
            cs->queue_stall_ns = 0;
            finish_buffer(r, c, idx);
            continue;
        }
        if (!ltr_ring_queued(cs->ring))
            return;
        /* A producer claimed the slot but has not filled it. If that lasts, it
         * died in between: skip the slot rather than stall the session. */
        uint64_t now = ltr_now_ns();
        if (!cs->queue_stall_ns)
            cs->queue_stall_ns = now;
        if (now - cs->queue_stall_ns < 2000000000u)
            return;
        rec_log("skipping a queue slot whose producer never filled it");
        ltr_ring_skip_slot(cs->ring);
        cs->queue_stall_ns = 0;
    }
}

/* Every buffer a producer still owns, optionally only those of one owner. */
static void for_active(recorder *r, bool all_owners, uint32_t owner,
                       void (*fn)(recorder *, unsigned, uint32_t))
{
    for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
        ltr_ring *ring = r->col[c].ring;
        for (uint32_t i = 0; i < ring->nbuf; i++) {
            ltr_ring_buf *b = ltr_ring_buf_at(ring, i);
            if (atomic_load_explicit(&b->state, memory_order_acquire) == LTR_BUF_ACTIVE &&
                (all_owners || b->owner == owner))
                fn(r, c, i);
        }
    }
}

static void flush_partial(recorder *r, unsigned c, uint32_t idx)
{
    write_tail(r, c, idx, true);
}

void rec_drain(recorder *r, bool flush_active)
{
    for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
        atomic_store(&r->col[c].ring->wake_pending, 0);
        if (r->cfg.mode == LTR_MODE_FILE)
            write_new_metadata(r); /* before the blocks that use it */
        if (r->cfg.mode == LTR_MODE_FILE)
            take_queued(r, c);
    }
    if (r->cfg.mode == LTR_MODE_FILE && flush_active) {
        write_new_metadata(r);
        for_active(r, true, 0, flush_partial);
        ltr_error err;
        if (!r->file_full && ltr_writer_flush(r->writer, 0, &err) != 0)
            rec_write_failed(r, &err);
    }
}

/* A producer process went away: what its threads still held is complete. */
void rec_harvest_owner(recorder *r, uint32_t owner)
{
    if (r->cfg.mode == LTR_MODE_FILE)
        write_new_metadata(r);
    for_active(r, false, owner, finish_buffer);
}

/* ---- traces ------------------------------------------------------------------ */

/* A save in progress: where it writes, and how much metadata it holds. */
typedef struct save_ctx {
    recorder *r;
    ltr_writer *w;
    uint64_t meta_done;
    uint64_t events[LTR_MAX_COLLECTORS], buffers[LTR_MAX_COLLECTORS];
} save_ctx;

static int save_block(save_ctx *sc, const ltr_block_info *info, const uint8_t *data, uint64_t commit,
                      ltr_error *err)
{
    if (!LTR_COMMIT_BYTES(commit))
        return 0;
    sc->meta_done = sync_metadata(sc->r, sc->w, sc->meta_done);
    sc->events[info->collector] += info->event_count;
    sc->buffers[info->collector]++;
    return ltr_writer_block(sc->w, info, data, LTR_COMMIT_BYTES(commit), err);
}

/* The history, oldest first. Producers may take its oldest buffers for reuse
 * while we copy: a copy counts only if its queue position was not taken. */
static int save_history(save_ctx *sc, unsigned c, ltr_error *err)
{
    collector_state *cs = &sc->r->col[c];
    uint64_t tail = ltr_ring_tail(cs->ring);
    for (uint64_t pos = ltr_ring_head(cs->ring); pos < tail; pos++) {
        uint32_t idx = ltr_ring_at(cs->ring, pos);
        if (idx == LTR_RING_NONE)
            continue;
        uint64_t commit = ltr_ring_committed(cs->ring, idx);
        ltr_block_info info = block_of(cs->ring, c, idx, commit, false);
        memcpy(cs->copy, ltr_ring_data(cs->ring, idx), LTR_COMMIT_BYTES(commit));
        if (!ltr_ring_still_at(cs->ring, pos))
            continue; /* overwritten while we copied: counted as overwritten */
        int rc = save_block(sc, &info, cs->copy, commit, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* Buffers being filled: their committed part never changes under us. */
static int save_active(save_ctx *sc, unsigned c, ltr_error *err)
{
    ltr_ring *ring = sc->r->col[c].ring;
    for (uint32_t i = 0; i < ring->nbuf; i++) {
        ltr_ring_buf *b = ltr_ring_buf_at(ring, i);
        if (atomic_load_explicit(&b->state, memory_order_acquire) != LTR_BUF_ACTIVE)
            continue;
        uint64_t commit = ltr_ring_committed(ring, i);
        ltr_block_info info = block_of(ring, c, i, commit, true);
        int rc = save_block(sc, &info, ltr_ring_data(ring, i), commit, err);
        if (rc)
            return rc;
    }
    return 0;
}

static int save_blocks(save_ctx *sc, ltr_error *err)
{
    for (unsigned c = 0; c < sc->r->cfg.ncollectors; c++) {
        int rc = save_history(sc, c, err);
        if (!rc)
            rc = save_active(sc, c, err);
        if (rc)
            return rc;
    }
    return 0;
}

static int write_save(ltr_writer *w, recorder *r, const char *description, ltr_error *err)
{
    ltr_bytes kv = {0}, counters = {0};
    rec_header_kv(r, &kv, "save");
    int rc = ltr_writer_kv(w, LTR_CHUNK_HEADER, &kv, err);
    save_ctx sc = {.r = r, .w = w};
    sc.meta_done = rc ? 0 : sync_metadata(r, w, 0); /* all of it, even with no event */
    uint64_t saved_written[LTR_MAX_COLLECTORS], saved_buffers[LTR_MAX_COLLECTORS];
    if (!rc)
        rc = save_blocks(&sc, err);
    if (!rc)
        rc = ltr_writer_flush(w, 0, err);
    if (!rc) {
        /* The counters of a save describe the save: its events are those written. */
        for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
            saved_written[c] = r->col[c].events_written;
            saved_buffers[c] = r->col[c].buffers_written;
            r->col[c].events_written = sc.events[c];
            r->col[c].buffers_written = sc.buffers[c];
        }
        rec_counters(r, &counters);
        for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
            r->col[c].events_written = saved_written[c];
            r->col[c].buffers_written = saved_buffers[c];
        }
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

int rec_save(recorder *r, const char *path, const char *description, ltr_error *err)
{
    rec_drain(r, false);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.part", path);
    ltr_writer *w;
    int rc = ltr_writer_open(&w, tmp, err);
    if (rc)
        return rc;
    rc = write_save(w, r, description, err);
    ltr_writer_close(w);
    if (!rc && rename(tmp, path) != 0)
        rc = ltr_fail(err, errno, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    if (rc)
        unlink(tmp);
    return rc;
}

int rec_finish_file(recorder *r, const char *description, ltr_error *err)
{
    rec_drain(r, true);
    for_active(r, true, 0, finish_buffer);
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
    /* the dropped ones are counted as lost, not twice */
    uint64_t n = cs->events_written - cs->events_dropped + atomic_load(&cs->ring->events_overwritten);
    for (uint32_t i = 0; i < cs->ring->nbuf; i++) {
        ltr_ring_buf *b = ltr_ring_buf_at(cs->ring, i);
        if (atomic_load_explicit(&b->state, memory_order_acquire) != LTR_BUF_FREE)
            n += LTR_COMMIT_EVENTS(ltr_ring_committed(cs->ring, i)) - cs->notes[i].flushed_events;
    }
    return n;
}
