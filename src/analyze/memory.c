/*
 * analyze/memory.c — the system provider's memory counters in the analysis
 * (docs/system-provider.md): each ProcessMemory sample of the window is kept,
 * and a probe goes to the heap model in time order among the heap events
 * (model.h, AN_OP_PROBE), so each sample has the heap's outstanding bytes
 * of that moment beside its private bytes. The report shows private bytes
 * over the window and how much of them the heap explains.
 */
#include "analyze/internal.h"
#include "analyze/sink.h"
#include "base/system_events.h"
#include "base/units.h"
#include "prim/prim.h"

#include <stdbool.h>
#include <string.h>

static int is_process_memory(const ltr_analysis *a, const ltr_event *ev)
{
    const ltr_layout *l = ev->layout;
    return l && l->provider && l->event_id == LTR_SYS_EV_PROCESS_MEMORY &&
           !memcmp(l->provider->guid.b, a->system_guid.b, 16);
}

static uint64_t field(const ltr_event *ev, const char *name)
{
    uint64_t v = 0;
    ltr_event_get_u64(ev, name, &v);
    return v;
}

int an_mem_feed(ltr_analysis *a, an_sink *sk, const ltr_event *ev)
{
    if (!is_process_memory(a, ev))
        return 0;
    uint64_t pid;
    if (ltr_event_get_u64(ev, "pid", &pid) != 0 || pid > UINT32_MAX)
        return 1; /* not a sample this reader understands: skipped */
    if ((a->pid_set && pid != a->pid) || ev->ts < a->model.from || ev->ts > a->model.to)
        return 1;
    if (ltr_reserve((void **)&a->mem, &a->capmem, a->nmem, sizeof *a->mem, 64) != 0) {
        a->model.oom = 1;
        return 1;
    }
    an_mem_sample *s = &a->mem[a->nmem];
    *s = (an_mem_sample){.ts = ev->ts, .pid = (uint32_t)pid, .private_bytes = field(ev, "private_bytes"),
                         .rss = field(ev, "rss"), .rss_file = field(ev, "rss_file"),
                         .rss_shmem = field(ev, "rss_shmem"), .swap = field(ev, "swap"),
                         .minflt = field(ev, "minor_faults"), .majflt = field(ev, "major_faults")};
    size_t room;
    an_event *e = an_sink_room(sk, s->pid, 0, &room);
    *e = (an_event){.ts = ev->ts, .addr = a->nmem, .op = AN_OP_PROBE};
    an_sink_commit(sk, s->pid, 0, 1);
    a->nmem++;
    return 1;
}

void an_mem_finish(ltr_analysis *a)
{
    for (size_t i = 0; i < a->model.nprobes; i++) {
        const an_probe *p = &a->model.probes[i];
        if (p->index < a->nmem) {
            a->mem[p->index].heap = p->bytes;
            a->mem[p->index].heap_seen = p->seen;
        }
    }
}

size_t an_mem_pids(const ltr_analysis *a, uint32_t *pids, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < a->nmem; i++) {
        size_t j = 0;
        while (j < n && pids[j] != a->mem[i].pid)
            j++;
        if (j == n && n < cap)
            pids[n++] = a->mem[i].pid;
    }
    return n;
}

void an_mem_summary(const ltr_analysis *a, uint32_t pid, an_mem_summary_t *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < a->nmem; i++) {
        const an_mem_sample *s = &a->mem[i];
        if (s->pid != pid)
            continue;
        if (!out->samples++) {
            out->first = *s;
            out->min = out->max = s->private_bytes;
        }
        out->last = *s;
        out->min = s->private_bytes < out->min ? s->private_bytes : out->min;
        out->max = s->private_bytes > out->max ? s->private_bytes : out->max;
    }
}

/* One line of the series: time, private bytes, RSS, file, swap, the heap's
 * bytes, in units as the rest of the text report (JSON keeps bytes). */
static void print_sample(const ltr_analysis *a, FILE *out, const an_mem_sample *s)
{
    char heap[32] = "-", priv[32], rss[32], file[32], swap[32];
    if (s->heap_seen)
        ltr_size_format(s->heap, heap, sizeof heap);
    fprintf(out, "    %10.3f %12s %12s %12s %12s %12s\n", an_seconds(a, s->ts),
            ltr_size_format(s->private_bytes, priv, sizeof priv), ltr_size_format(s->rss, rss, sizeof rss),
            ltr_size_format(s->rss_file, file, sizeof file), ltr_size_format(s->swap, swap, sizeof swap), heap);
}

#define SERIES_ROWS 12 /* samples shown of a process's series, evenly spread */

static void print_process(const ltr_analysis *a, FILE *out, uint32_t pid)
{
    an_mem_summary_t m;
    an_mem_summary(a, pid, &m);
    char name[1024]; /* a process of --pid alone has its name from the system provider (it said none) */
    fprintf(out, "\nprocess %u %s: memory counters, %llu sample(s) in the window\n", pid,
            an_process_name_shown(a, pid, name, sizeof name), (unsigned long long)m.samples);
    char first[32], final[32], grew[32], lo[32], hi[32], heap[32];
    fprintf(out, "  private bytes (RssAnon + VmSwap): %s at %.3f s, %s at %.3f s (%s), lowest %s, highest %s\n",
            ltr_size_format(m.first.private_bytes, first, sizeof first), an_seconds(a, m.first.ts),
            ltr_size_format(m.last.private_bytes, final, sizeof final), an_seconds(a, m.last.ts),
            ltr_size_format_signed((int64_t)(m.last.private_bytes - m.first.private_bytes), grew, sizeof grew),
            ltr_size_format(m.min, lo, sizeof lo), ltr_size_format(m.max, hi, sizeof hi));
    fprintf(out, "  page faults in the window: %llu minor, %llu major\n",
            (unsigned long long)(m.last.minflt - m.first.minflt), (unsigned long long)(m.last.majflt - m.first.majflt));
    if (m.last.heap_seen && m.last.private_bytes)
        fprintf(out, "  the heap explains %.1f%% of the private bytes at %.3f s (%s outstanding in the heap of %s); "
                     "the rest: memory the program maps itself, freed memory the allocator keeps, stacks, "
                     "and blocks allocated before the heap agent saw the process (attached while it ran)\n",
                100.0 * (double)m.last.heap / (double)m.last.private_bytes, an_seconds(a, m.last.ts),
                ltr_size_format(m.last.heap, heap, sizeof heap), final);
    else
        fprintf(out, "  the trace has no heap events of this process: the heap's share is unknown\n");
    fprintf(out, "    %10s %12s %12s %12s %12s %12s\n", "seconds", "private", "rss", "rss_file", "swap", "heap");
    size_t shown = 0, k = 0;
    for (size_t i = 0; i < a->nmem; i++) {
        if (a->mem[i].pid != pid)
            continue;
        /* rows k = 0, step, 2 step, ... and always the last */
        bool last = k + 1 == m.samples;
        if (last || (m.samples <= SERIES_ROWS ? true : k * (SERIES_ROWS - 1) / (m.samples - 1) >= shown)) {
            print_sample(a, out, &a->mem[i]);
            shown++;
        }
        k++;
    }
}

void an_mem_write_text(const ltr_analysis *a, FILE *out)
{
    uint32_t pids[256];
    size_t n = an_mem_pids(a, pids, 256);
    for (size_t i = 0; i < n; i++)
        print_process(a, out, pids[i]);
}

void an_mem_write_json(const ltr_analysis *a, FILE *out)
{
    uint32_t pids[256];
    size_t n = an_mem_pids(a, pids, 256);
    fprintf(out, "\"memory\":[");
    for (size_t i = 0; i < n; i++) {
        an_mem_summary_t m;
        an_mem_summary(a, pids[i], &m);
        char heap[32] = "null";
        if (m.last.heap_seen)
            snprintf(heap, sizeof heap, "%llu", (unsigned long long)m.last.heap);
        fprintf(out, "%s{\"pid\":%u,\"samples\":%llu,\"private_first\":%llu,\"private_last\":%llu,"
                     "\"private_min\":%llu,\"private_max\":%llu,\"heap_last\":%s,\"series\":[",
                i ? "," : "", pids[i], (unsigned long long)m.samples, (unsigned long long)m.first.private_bytes,
                (unsigned long long)m.last.private_bytes, (unsigned long long)m.min, (unsigned long long)m.max, heap);
        size_t k = 0;
        for (size_t j = 0; j < a->nmem; j++) {
            const an_mem_sample *s = &a->mem[j];
            if (s->pid != pids[i])
                continue;
            fprintf(out, "%s{\"seconds\":%.6f,\"private\":%llu,\"rss\":%llu,\"rss_file\":%llu,\"rss_shmem\":%llu,"
                         "\"swap\":%llu,\"minor_faults\":%llu,\"major_faults\":%llu",
                    k++ ? "," : "", an_seconds(a, s->ts), (unsigned long long)s->private_bytes,
                    (unsigned long long)s->rss, (unsigned long long)s->rss_file, (unsigned long long)s->rss_shmem,
                    (unsigned long long)s->swap, (unsigned long long)s->minflt, (unsigned long long)s->majflt);
            if (s->heap_seen)
                fprintf(out, ",\"heap\":%llu", (unsigned long long)s->heap);
            fputc('}', out);
        }
        fprintf(out, "]}");
    }
    fputc(']', out);
}
