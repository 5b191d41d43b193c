/*
 * recorder/kept.c — memory mode: the metadata kept for saves (r->meta_kept)
 * let go of processes that ended and whose events no buffer holds any more.
 *
 * A flight recorder writes into every save all the metadata it read (the
 * stacks, modules and threads its events need), because its buffers are
 * overwritten but metadata is not. Kept whole, it grew with every process
 * that ever came: a memory-mode session beside `python3 -c pass` run 150
 * times held 234 MB of metadata (1.56 MB a start: python's modules and
 * frame nodes), with 64 MB of buffers reaching back 0.2 s, and every save
 * wrote it all. A service that starts a helper a minute would have its
 * recorder grow by gigabytes a day.
 *
 * A process's records can go once it ended (its PROCESS_END is kept: the
 * recorder saw it exit) and no buffer of the session holds its events: no
 * save can hold an event that needs them. A buffer names the process whose
 * thread (or CPU slot: a CPU's buffer serves one process) filled it; every
 * buffer with committed bytes counts, whatever its state, so nothing a save
 * could write is missed. Records of a pid after its last end (the pid used
 * again) stay. LAYOUT and PROVIDER records end with the pid of the process
 * that described them (a fork child describes its own), and go with it:
 * they stayed, about 384 bytes an `ls` (a review: 0.4 GB a million
 * processes); those of an older writer, without the pid, stay. The pruning runs
 * when the kept metadata has doubled since the last one, so its cost stays
 * linear in what was kept.
 *
 * The recorder's own buffers (the system provider's events: memory
 * counters, CPU samples) name other processes by pid, and the analysis
 * names those by their PROCESS record: a process's memory counters, kept
 * in the recorder's slow buffer long after the process's own buffers were
 * overwritten, came out as "process 30628 :" with no program (a review:
 * idle beside 600 `ls`; the parent commit named it). So a process that
 * ended after the first event the recorder's own buffers hold keeps its
 * PROCESS record (100 to 300 bytes; its stacks and modules still go).
 */
#include "recorder/internal.h"
#include "base/hmap.h"
#include "prim/prim.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Below this, nothing is pruned: a session of a few processes keeps all.
 * LTR_KEPT_PRUNE_KB (16 and up) sets it lower or higher: a test sees the
 * pruning after a few dozen short processes (`ls`: 5 KB each). */
#define KEPT_PRUNE_MIN (4u << 20)
/* A process's end as the recorder saw it comes a little after the system
 * provider's last events of it (its exit, read from /proc each 100 ms):
 * its name is kept while the recorder's own buffers reach back this far
 * before that end. */
#define OWN_EVENTS_SLACK_NS (10 * 1000000000ull)

static size_t prune_min(void)
{
    const char *e = getenv("LTR_KEPT_PRUNE_KB");
    char *end;
    unsigned long kb = e ? strtoul(e, &end, 10) : 0;
    if (!e || !*e || *end || kb < 16 || kb > (1ul << 30))
        return KEPT_PRUNE_MIN;
    return (size_t)kb << 10;
}

typedef struct pid_entry {
    uint64_t key;  /* pid + 1 */
    uint64_t last_end; /* 1 + offset in meta_kept of the pid's last PROCESS_END; 0: none */
    uint64_t held;     /* 1: some buffer holds events of the pid */
    uint64_t last_end_ns; /* the ts of that PROCESS_END */
} pid_entry;

/* Where a string field (u16 length, bytes) at off ends, or 0 past size. */
static uint32_t past_str(const uint8_t *body, uint32_t size, uint32_t off)
{
    if (off + 2 > size)
        return 0;
    uint32_t end = off + 2 + ltr_get_u16(body + off);
    return end <= size ? end : 0;
}

/* The pid a PROVIDER or LAYOUT record ends with (event/provider.c: the
 * process that described it), before the padding to 8 bytes; -1 for one
 * without (an older writer's, whose padding may read as pid 0: a process
 * that never ends). */
static int64_t describer(const uint8_t *rec, uint32_t size)
{
    const uint8_t *body = rec + LTR_RECORD_HEADER_SIZE;
    uint32_t n = size - LTR_RECORD_HEADER_SIZE, off;
    if (ltr_get_u16(rec) == LTR_META_PROVIDER) {
        off = past_str(body, n, 16);
    } else {
        off = past_str(body, n, 4 + 16 + 2 + 1 + 1 + 8); /* its event name */
        uint32_t fields = off && off + 2 <= n ? ltr_get_u16(body + off) : 0;
        off = off && off + 2 <= n ? off + 2 : 0;
        for (uint32_t i = 0; i < fields && off; i++)
            off = past_str(body, n, off + 1);
    }
    return off && n - off >= 4 && n - off < 12 ? (int64_t)ltr_get_u32(body + off) : -1;
}

int64_t rec_record_pid(const uint8_t *rec, uint32_t size)
{
    switch (ltr_get_u16(rec)) {
    case LTR_META_PROVIDER:
    case LTR_META_LAYOUT:
        return size >= LTR_RECORD_HEADER_SIZE + 16 ? describer(rec, size) : -1;
    case LTR_META_PROCESS:
    case LTR_META_THREAD:
    case LTR_META_STACK:
    case LTR_META_MODULE:
    case LTR_META_STACK_REF:
    case LTR_META_FRAME_NODES:
    case LTR_META_PROCESS_END:
    case LTR_META_EXEC_END:
        return size >= LTR_RECORD_HEADER_SIZE + 4 ? (int64_t)ltr_get_u32(rec + LTR_RECORD_HEADER_SIZE) : -1;
    default:
        return -1;
    }
}

/* Every pid with a PROCESS_END (or an EXEC_END: an image that ended, the
 * process running on outside the session) kept, and whether a buffer holds its events;
 * *own_first: the first event the recorder's own buffers hold (UINT64_MAX:
 * none). -1 without memory. */
static int ended_pids(recorder *r, an_hmap *pids, uint64_t *own_first)
{
    const uint8_t *d = r->meta_kept.data;
    for (size_t off = 0; off + LTR_RECORD_HEADER_SIZE <= r->meta_kept.len;) {
        uint32_t size = ltr_get_u32(d + off + 4);
        uint16_t kind = ltr_get_u16(d + off);
        if (kind == LTR_META_PROCESS_END || kind == LTR_META_EXEC_END) {
            int64_t pid = rec_record_pid(d + off, size);
            pid_entry *e = pid < 0 ? NULL : an_hmap_put(pids, (uint64_t)pid + 1, NULL);
            if (pid >= 0 && !e)
                return -1;
            if (e) {
                e->last_end = off + 1;
                const uint8_t *ts = d + off + LTR_RECORD_HEADER_SIZE + 4; /* after its pid */
                e->last_end_ns = size >= LTR_RECORD_HEADER_SIZE + 12 ? ltr_get_u64(ts) : 0;
            }
        }
        off += size;
    }
    uint32_t self = (uint32_t)getpid();
    *own_first = UINT64_MAX;
    for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
        ltr_ring_view *ring = &r->col[c].ring;
        for (uint32_t i = 0; i < ring->nbuf; i++) {
            ltr_ring_buf *b = ltr_ring_vbuf(ring, i);
            if (!LTR_COMMIT_BYTES(atomic_load_explicit(&b->commit, memory_order_acquire)))
                continue;
            if (b->pid == self) { /* unreadable (0): every ended process keeps its name meanwhile */
                uint64_t ts = rec_buffer_first_ns(r, c, i);
                *own_first = ts < *own_first ? ts : *own_first;
            }
            pid_entry *e = an_hmap_get(pids, (uint64_t)b->pid + 1);
            if (e)
                e->held = 1;
        }
    }
    return 0;
}

/* Drops, in place, the records of pids that ended and that no buffer
 * holds, up to each one's last end, but for the PROCESS records of those
 * that ended after own_first (less the slack); the bytes dropped. */
static size_t compact(ltr_bytes *kept, const an_hmap *pids, uint64_t own_first)
{
    uint8_t *d = kept->data;
    size_t to = 0, off = 0;
    while (off + LTR_RECORD_HEADER_SIZE <= kept->len) {
        uint32_t size = ltr_get_u32(d + off + 4);
        int64_t pid = rec_record_pid(d + off, size);
        const pid_entry *e = pid < 0 ? NULL : an_hmap_get(pids, (uint64_t)pid + 1);
        bool named = ltr_get_u16(d + off) == LTR_META_PROCESS && own_first != UINT64_MAX &&
                     e && e->last_end_ns + OWN_EVENTS_SLACK_NS >= own_first;
        if (!e || e->held || off + 1 > e->last_end || named) {
            memmove(d + to, d + off, size);
            to += size;
        }
        off += size;
    }
    size_t dropped = kept->len - to;
    kept->len = to;
    return dropped;
}

/* Whether owner entry e is the one of the PROCESS record at d. */
static bool owner_of(const struct rec_owner *e, const uint8_t *d)
{
    return e->pid == ltr_get_u32(d + LTR_RECORD_HEADER_SIZE) && e->ts == ltr_get_u64(d + LTR_RECORD_HEADER_SIZE + 8);
}

/* Whether owner has an entry in r->owners, which owners' order sorts (the
 * recorder numbers attachments as they come, and appends them so). */
static bool owner_kept(const recorder *r, uint32_t owner)
{
    size_t lo = 0, hi = r->nowners;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->owners[mid].owner < owner)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->nowners && r->owners[lo].owner == owner;
}

/* The aliases of owners let go go too (their process ended: no buffer
 * holds its events). */
static void prune_aliases(recorder *r)
{
    size_t k = 0;
    for (size_t i = 0; i < r->naliases; i++)
        if (owner_kept(r, r->aliases[i].of))
            r->aliases[k++] = r->aliases[i];
    r->naliases = k;
}

void rec_prune_owners(recorder *r)
{
    const uint8_t *d = r->meta_kept.data;
    size_t k = 0, i = 0, n = r->nowners;
    for (size_t off = 0; off + LTR_RECORD_HEADER_SIZE <= r->meta_kept.len; off += ltr_get_u32(d + off + 4)) {
        if (ltr_get_u16(d + off) != LTR_META_PROCESS || ltr_get_u32(d + off + 4) < LTR_RECORD_HEADER_SIZE + 16)
            continue;
        size_t j = i; /* the entries before this record's were of records pruned */
        while (j < n && !owner_of(&r->owners[j], d + off))
            j++;
        if (j == n)
            continue; /* a record without an entry (no memory for one) */
        r->owners[k++] = r->owners[j];
        i = j + 1;
    }
    while (i < n) /* records not read out of the region yet */
        r->owners[k++] = r->owners[i++];
    r->nowners = k;
    prune_aliases(r);
}

/* What a memory-mode recorder keeps is bounded (KEPT_MAX, LTR_KEPT_MAX_KB):
 * a traced program appending well-formed records (layouts, or stacks of a
 * process that lives on, which pruning keeps) took a recorder of a 32 KB
 * pool to 1 GB of memory in 7.6 s (a review). Past the bound the records
 * just read are not kept, and counted lost as the region's are (a save
 * says its stacks may lack them). */
#define KEPT_MAX ((size_t)256 << 20)

static size_t kept_max(void)
{
    const char *e = getenv("LTR_KEPT_MAX_KB");
    char *end;
    unsigned long kb = e ? strtoul(e, &end, 10) : 0;
    if (!e || !*e || *end || kb < 64 || kb > (1ul << 30))
        return KEPT_MAX;
    return (size_t)kb << 10;
}

static void prune(recorder *r);

void rec_prune_kept(recorder *r)
{
    if (r->cfg.mode == LTR_MODE_FILE || r->meta_kept.failed)
        return;
    if (!r->meta_kept_floor)
        r->meta_kept_floor = prune_min();
    if (!r->meta_kept_max)
        r->meta_kept_max = kept_max();
    /* near the bound (rec_keep_bounded), where doubling cannot come any
     * more once a pruning left over half of it: at most once a second, a
     * pruning costing a pass over all that is kept (a review, by reading) */
    uint64_t now = ltr_now_ns();
    bool at_bound = r->meta_kept.len >= r->meta_kept_max - (r->meta_kept_max >> 4) &&
                    r->meta_kept.len > r->meta_kept_after && now - r->meta_kept_bound_ns >= 1000000000ull;
    if (!at_bound && (r->meta_kept.len < r->meta_kept_floor || r->meta_kept.len < 2 * r->meta_kept_after))
        return;
    if (at_bound)
        r->meta_kept_bound_ns = now;
    prune(r);
}

void rec_keep_bounded(recorder *r, size_t before)
{
    if (r->cfg.mode == LTR_MODE_FILE || r->meta_kept.failed)
        return;
    if (!r->meta_kept_max)
        r->meta_kept_max = kept_max();
    /* pruning is left to the ends of processes (rec_prune_kept): here it
     * would move the records read since `before` */
    if (r->meta_kept.len <= r->meta_kept_max || before > r->meta_kept.len)
        return;
    /* the records that fit stay; from the first that does not, none */
    const uint8_t *d = r->meta_kept.data;
    size_t cut = before;
    while (cut + LTR_RECORD_HEADER_SIZE <= r->meta_kept.len && ltr_get_u32(d + cut + 4) >= LTR_RECORD_HEADER_SIZE &&
           cut + ltr_get_u32(d + cut + 4) <= r->meta_kept_max)
        cut += ltr_get_u32(d + cut + 4);
    for (size_t off = cut; off + LTR_RECORD_HEADER_SIZE <= r->meta_kept.len; off += ltr_get_u32(d + off + 4)) {
        if (ltr_get_u32(d + off + 4) < LTR_RECORD_HEADER_SIZE)
            break;
        r->meta_refused++;
    }
    before = cut;
    if (!r->meta_refused_said++)
        rec_log("the metadata a flight recorder keeps reached %zu MiB: records past it are not kept, and counted "
                "lost (a traced program appending without end, or LTR_KEPT_MAX_KB too low)",
                r->meta_kept_max >> 20);
    r->meta_kept.len = before;
}

bool rec_kept_own_fits(recorder *r, size_t size)
{
    if (r->cfg.mode == LTR_MODE_FILE)
        return true;
    if (!r->meta_kept_max)
        r->meta_kept_max = kept_max();
    return r->meta_kept.len + size <= 2 * r->meta_kept_max;
}

static void prune(recorder *r)
{
    an_hmap pids;
    an_hmap_init(&pids, sizeof(pid_entry));
    uint64_t own_first;
    if (ended_pids(r, &pids, &own_first) == 0 && pids.n) {
        r->meta_kept_dropped += compact(&r->meta_kept, &pids, own_first);
        /* the pages of what went back to the system (realloc of a large block: mremap) */
        if (r->meta_kept.cap > 2 * r->meta_kept.len + (1u << 20)) {
            size_t cap = r->meta_kept.len + (r->meta_kept.len >> 1) + 256;
            uint8_t *p = realloc(r->meta_kept.data, cap);
            if (p) {
                r->meta_kept.data = p;
                r->meta_kept.cap = cap;
            }
        }
    }
    an_hmap_free(&pids);
    rec_prune_owners(r);
    r->meta_kept_after = r->meta_kept.len;
}
