/*
 * analyze/mapped.c — `ltr analyze --mapped`: the mappings the program made
 * itself (the system provider's VirtualAllocation events, which the heap
 * agent writes: docs/heap-events.md "Mappings"). The events are decoded here
 * and go through the heap model's sink in time order (model.h, AN_OP_VM_*)
 * into the mapping model (vmem.h); the report ranks the stacks by the mapped
 * bytes they hold at the window's end, as the heap report ranks heap bytes,
 * with the process's mapping calls of the window beside them.
 */
#include "analyze/internal.h"
#include "analyze/sink.h"
#include "base/system_events.h"
#include "base/units.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static uint64_t field(const ltr_event *ev, const char *name)
{
    uint64_t v = 0;
    ltr_event_get_u64(ev, name, &v);
    return v;
}

static void put(an_sink *sk, const ltr_event *ev, const an_event *e)
{
    size_t room;
    an_event *to = an_sink_room(sk, ev->pid, AN_VM_TID(ev->tid), &room);
    *to = *e;
    an_sink_commit(sk, ev->pid, AN_VM_TID(ev->tid), 1);
}

int an_vm_feed(ltr_analysis *a, an_sink *sk, const ltr_event *ev)
{
    const ltr_layout *l = ev->layout;
    if (!l || !l->provider || l->event_id < LTR_VM_EV_MAP || l->event_id > LTR_VM_EV_DISCARD ||
        memcmp(l->provider->guid.b, a->system_guid.b, 16))
        return 0;
    if (a->pid_set && ev->pid != a->pid)
        return 1;
    a->vm_events++;
    uint64_t addr = field(ev, "address"), size = field(ev, "size"), stack = field(ev, "stack");
    if (stack > UINT32_MAX)
        stack = 0;
    an_event e = {.ts = ev->ts, .addr = addr, .size = size, .stack = (uint32_t)stack};
    switch (l->event_id) {
    case LTR_VM_EV_MAP: {
        uint64_t fn = field(ev, "function");
        e.op = AN_OP_VM_MAP;
        e.old_addr = fn == LTR_VM_FN_BRK || fn == LTR_VM_FN_SBRK ? AN_VM_BRK
                     : field(ev, "flags") & MAP_ANONYMOUS ? AN_VM_ANON : AN_VM_FILE;
        break;
    }
    case LTR_VM_EV_UNMAP: e.op = AN_OP_VM_UNMAP; break;
    case LTR_VM_EV_DISCARD: e.op = AN_OP_VM_DISCARD; break;
    default:
        put(sk, ev, &(an_event){.ts = ev->ts, .addr = field(ev, "old_address"), .size = field(ev, "old_size"),
                                .op = AN_OP_VM_REMAP_FROM});
        e.op = AN_OP_VM_REMAP_TO;
        break;
    }
    put(sk, ev, &e);
    return 1;
}

/* "anonymous", "file-backed", "brk", or several joined by '+'. */
static const char *kind_text(uint32_t kinds, char *buf, size_t size)
{
    static const struct { uint32_t bit; const char *name; } k[] = {
        {AN_VM_ANON, "anonymous"}, {AN_VM_FILE, "file-backed"}, {AN_VM_BRK, "brk"}};
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < 3; i++)
        if (kinds & k[i].bit)
            n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? "+" : "", k[i].name);
    return n ? buf : "unknown kind";
}

static an_stack as_stack(const an_vm_stack *s)
{
    return (an_stack){.pid = s->pid, .key = s->pid, .stack_id = s->stack, .first_ts = s->first_ts};
}

/* Sizes as the heap report prints them (KiB, MiB: ltr_size_format); the
 * JSON gives bytes. Raw byte counts here were the one text output that
 * printed "753664 bytes" where the rest said "736 KiB". */
static void text_proc(ltr_analysis *a, FILE *out, const an_vm_proc *p, unsigned top)
{
    size_t n;
    an_vm_stack *v = an_vmem_ranked(&a->model.vm, 0, p->pid, &n);
    char exe[1024], s1[32], s2[32], s3[32];
    fprintf(out, "\nprocess %u %s: %s mapped at the window's end, in %zu range(s)\n", p->pid,
            an_process_exe_shown(a, p->pid, exe, sizeof exe), ltr_size_format(an_vmem_outstanding(p), s1, sizeof s1),
            p->n);
    fprintf(out, "  in the window: %llu map(s) of %s, %llu unmap(s) of %s, %llu remap(s); "
            "madvise gave back %s in %llu call(s)\n",
            (unsigned long long)p->maps, ltr_size_format(p->map_bytes, s1, sizeof s1), (unsigned long long)p->unmaps,
            ltr_size_format(p->unmap_bytes, s2, sizeof s2), (unsigned long long)p->remaps,
            ltr_size_format(p->discard_bytes, s3, sizeof s3), (unsigned long long)p->discards);
    if (p->unseen_bytes)
        fprintf(out, "  %s unmapped in %llu call(s) were never seen mapped (mapped before the trace, "
                "or by libc itself): counted apart\n",
                ltr_size_format(p->unseen_bytes, s1, sizeof s1), (unsigned long long)p->unseen_calls);
    fprintf(out, "  stacks holding mapped bytes at the window's end:%s\n", n ? "" : " none");
    for (size_t i = 0; i < n && (!top || i < top); i++) {
        char kinds[48];
        fprintf(out, "    #%zu %s in %llu range(s), %s; %s of them mapped inside the window\n", i + 1,
                ltr_size_format(v[i].bytes, s1, sizeof s1), (unsigned long long)v[i].ranges,
                kind_text(v[i].kinds, kinds, sizeof kinds), ltr_size_format(v[i].inside, s2, sizeof s2));
        an_stack s = as_stack(&v[i]);
        an_text_frames(a, out, &s);
    }
    free(v);
}

void an_write_head_text(const ltr_analysis *a, FILE *out)
{
    fprintf(out, "trace: %s\nwindow: %.6f s .. %.6f s\n", ltr_trace_path(a->trace), an_seconds(a, a->win_start),
            an_seconds(a, a->win_end));
    for (size_t i = 0; i < a->nwarnings; i++)
        fprintf(out, "warning: %s\n", a->warnings[i]);
}

void an_write_head_json(const ltr_analysis *a, FILE *out)
{
    fputs("{\"version\":1,\"trace\":", out);
    const char *path = ltr_trace_path(a->trace);
    ltr_print_json_string(out, path, strlen(path));
    fprintf(out, ",\"window\":{\"from_s\":%.6f,\"to_s\":%.6f},\"warnings\":[", an_seconds(a, a->win_start),
            an_seconds(a, a->win_end));
    for (size_t i = 0; i < a->nwarnings; i++) {
        if (i)
            fputc(',', out);
        ltr_print_json_string(out, a->warnings[i], strlen(a->warnings[i]));
    }
    fputc(']', out);
}

static int write_text(ltr_analysis *a, FILE *out, unsigned top)
{
    an_write_head_text(a, out);
    const an_vmem *v = &a->model.vm;
    fprintf(out, "\nmapped memory (VirtualAllocation: mmap, munmap, mremap, brk, sbrk and madvise the program "
            "called itself)%s\n",
            v->nprocs ? "" : ": the trace has no mapping events (enable Ltr.System keyword 0x10 with heap tracing)");
    for (size_t i = 0; i < v->nprocs; i++)
        text_proc(a, out, &v->procs[i], top);
    return 0;
}

static void json_proc(ltr_analysis *a, FILE *out, const an_vm_proc *p, unsigned top)
{
    size_t n;
    an_vm_stack *v = an_vmem_ranked(&a->model.vm, 0, p->pid, &n);
    const char *exe = an_process_exe(a, p->pid);
    fprintf(out, "{\"pid\":%u,\"exe\":", p->pid);
    ltr_print_json_string(out, exe, strlen(exe));
    fprintf(out, ",\"outstanding\":%llu,\"ranges\":%zu,\"maps\":%llu,\"map_bytes\":%llu,\"unmaps\":%llu,"
            "\"unmap_bytes\":%llu,\"remaps\":%llu,\"discards\":%llu,\"discard_bytes\":%llu,"
            "\"unseen_unmap_bytes\":%llu,\"stacks\":[",
            (unsigned long long)an_vmem_outstanding(p), p->n, (unsigned long long)p->maps,
            (unsigned long long)p->map_bytes, (unsigned long long)p->unmaps, (unsigned long long)p->unmap_bytes,
            (unsigned long long)p->remaps, (unsigned long long)p->discards, (unsigned long long)p->discard_bytes,
            (unsigned long long)p->unseen_bytes);
    for (size_t i = 0; i < n && (!top || i < top); i++) {
        fprintf(out, "%s{\"stack\":%u,\"bytes\":%llu,\"ranges\":%llu,\"inside\":%llu,\"anonymous\":%s,"
                "\"file\":%s,\"brk\":%s,", i ? "," : "", v[i].stack, (unsigned long long)v[i].bytes,
                (unsigned long long)v[i].ranges, (unsigned long long)v[i].inside,
                v[i].kinds & AN_VM_ANON ? "true" : "false",
                v[i].kinds & AN_VM_FILE ? "true" : "false", v[i].kinds & AN_VM_BRK ? "true" : "false");
        an_stack s = as_stack(&v[i]);
        an_json_frames(a, out, &s);
        fputc('}', out);
    }
    fputs("]}", out);
    free(v);
}

static int write_json(ltr_analysis *a, FILE *out, unsigned top)
{
    an_write_head_json(a, out);
    fputs(",\"mapped\":[", out);
    for (size_t i = 0; i < a->model.vm.nprocs; i++) {
        if (i)
            fputc(',', out);
        json_proc(a, out, &a->model.vm.procs[i], top);
    }
    fputs("]}\n", out);
    return 0;
}

int an_vm_write(ltr_analysis *a, FILE *out, ltr_report_format fmt, unsigned top)
{
    switch (fmt) {
    case LTR_REPORT_TEXT: return write_text(a, out, top);
    case LTR_REPORT_JSON: return write_json(a, out, top);
    default: return -EINVAL;
    }
}
