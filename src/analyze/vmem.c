/*
 * analyze/vmem.c — the mapping model (vmem.h): per process a sorted array of
 * disjoint ranges. Each operation finds the first range that ends after its
 * start by binary search and cuts, splits or inserts there; programs keep
 * hundreds to thousands of mappings of their own, so the array's moves cost
 * little beside reading the events.
 */
#include "analyze/vmem.h"
#include "prim/prim.h"

#include <stdlib.h>
#include <string.h>

void an_vmem_init(an_vmem *v, uint64_t from, uint64_t to)
{
    memset(v, 0, sizeof *v);
    v->from = from;
    v->to = to;
}

void an_vmem_free(an_vmem *v)
{
    for (size_t i = 0; i < v->nprocs; i++)
        free(v->procs[i].r);
    free(v->procs);
    memset(v, 0, sizeof *v);
}

const an_vm_proc *an_vmem_proc(const an_vmem *v, uint32_t pid)
{
    for (size_t i = 0; i < v->nprocs; i++)
        if (v->procs[i].pid == pid)
            return &v->procs[i];
    return NULL;
}

static an_vm_proc *proc_of(an_vmem *v, uint32_t pid)
{
    an_vm_proc *p = (an_vm_proc *)an_vmem_proc(v, pid);
    if (p)
        return p;
    if (ltr_reserve((void **)&v->procs, &v->cap, v->nprocs, sizeof *v->procs, 4) != 0) {
        v->oom = 1;
        return NULL;
    }
    p = &v->procs[v->nprocs++];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    return p;
}

/* Index of the first range that ends after addr. */
static size_t first_after(const an_vm_proc *p, uint64_t addr)
{
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->r[mid].end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int insert_at(an_vmem *v, an_vm_proc *p, size_t i, const an_vm_range *r)
{
    if (ltr_reserve((void **)&p->r, &p->cap, p->n, sizeof *p->r, 16) != 0) {
        v->oom = 1;
        return -1;
    }
    memmove(&p->r[i + 1], &p->r[i], (p->n - i) * sizeof *p->r);
    p->r[i] = *r;
    p->n++;
    return 0;
}

/* Takes [lo, hi) out of p's ranges; returns the bytes that were mapped, and
 * the kind of the first range cut in *kind. */
static uint64_t cut(an_vmem *v, an_vm_proc *p, uint64_t lo, uint64_t hi, uint32_t *kind)
{
    uint64_t removed = 0;
    size_t i = first_after(p, lo);
    while (i < p->n && p->r[i].start < hi) {
        an_vm_range *r = &p->r[i];
        uint64_t a = r->start > lo ? r->start : lo, b = r->end < hi ? r->end : hi;
        if (kind && !removed)
            *kind = r->kind;
        removed += b - a;
        if (r->start < lo && r->end > hi) { /* a hole in the middle: two ranges */
            an_vm_range right = *r;
            right.start = hi;
            r->end = lo;
            insert_at(v, p, i + 1, &right);
            break;
        }
        if (r->start < lo) {
            r->end = lo;
            i++;
        } else if (r->end > hi) {
            r->start = hi;
            break;
        } else {
            memmove(r, r + 1, (p->n - i - 1) * sizeof *r);
            p->n--;
        }
    }
    return removed;
}

static int inside(const an_vmem *v, uint64_t ts)
{
    return ts >= v->from;
}

static void add(an_vmem *v, an_vm_proc *p, uint64_t ts, uint64_t addr, uint64_t size, uint32_t stack,
                uint32_t kind)
{
    if (!size || addr + size < addr)
        return;
    cut(v, p, addr, addr + size, NULL); /* MAP_FIXED over older ranges replaces them */
    an_vm_range r = {.start = addr, .end = addr + size, .ts = ts, .stack = stack, .kind = kind};
    insert_at(v, p, first_after(p, addr), &r);
}

void an_vmem_map(an_vmem *v, uint32_t pid, uint64_t ts, uint64_t addr, uint64_t size, uint32_t stack,
                 uint32_t kind)
{
    an_vm_proc *p = ts <= v->to ? proc_of(v, pid) : NULL;
    if (!p)
        return;
    if (inside(v, ts)) {
        p->maps++;
        p->map_bytes += size;
    }
    add(v, p, ts, addr, size, stack, kind);
}

void an_vmem_unmap(an_vmem *v, uint32_t pid, uint64_t ts, uint64_t addr, uint64_t size)
{
    an_vm_proc *p = ts <= v->to ? proc_of(v, pid) : NULL;
    if (!p || !size || addr + size < addr)
        return;
    uint64_t had = cut(v, p, addr, addr + size, NULL);
    if (!inside(v, ts))
        return;
    p->unmaps++;
    p->unmap_bytes += had;
    if (had < size) {
        p->unseen_calls++;
        p->unseen_bytes += size - had;
    }
}

void an_vmem_remap_from(an_vmem *v, uint32_t pid, uint64_t ts, uint64_t old, uint64_t old_size)
{
    an_vm_proc *p = ts <= v->to ? proc_of(v, pid) : NULL;
    if (!p || old + old_size < old)
        return;
    p->remap_kind = 0;
    uint64_t had = cut(v, p, old, old + old_size, &p->remap_kind);
    if (inside(v, ts)) {
        p->remaps++;
        if (had < old_size) {
            p->unseen_calls++;
            p->unseen_bytes += old_size - had;
        }
    }
}

void an_vmem_remap_to(an_vmem *v, uint32_t pid, uint64_t ts, uint64_t addr, uint64_t size, uint32_t stack)
{
    an_vm_proc *p = ts <= v->to ? proc_of(v, pid) : NULL;
    if (p)
        add(v, p, ts, addr, size, stack, p->remap_kind);
}

void an_vmem_remap(an_vmem *v, uint32_t pid, uint64_t ts, uint64_t old, uint64_t old_size, uint64_t addr,
                   uint64_t size, uint32_t stack)
{
    an_vmem_remap_from(v, pid, ts, old, old_size);
    an_vmem_remap_to(v, pid, ts, addr, size, stack);
}

void an_vmem_discard(an_vmem *v, uint32_t pid, uint64_t ts, uint64_t size)
{
    an_vm_proc *p = ts <= v->to && inside(v, ts) ? proc_of(v, pid) : NULL;
    if (!p)
        return;
    p->discards++;
    p->discard_bytes += size;
}

uint64_t an_vmem_outstanding(const an_vm_proc *p)
{
    uint64_t n = 0;
    for (size_t i = 0; i < p->n; i++)
        n += p->r[i].end - p->r[i].start;
    return n;
}

static int by_key(const void *x, const void *y)
{
    const an_vm_stack *a = x, *b = y;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

static int by_bytes(const void *x, const void *y)
{
    const an_vm_stack *a = x, *b = y;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return by_key(x, y);
}

/* One entry per range, then merged by (pid, stack). */
an_vm_stack *an_vmem_ranked(const an_vmem *v, int all, uint32_t pid, size_t *n)
{
    size_t total = 0;
    for (size_t i = 0; i < v->nprocs; i++)
        if (all || v->procs[i].pid == pid)
            total += v->procs[i].n;
    *n = 0;
    an_vm_stack *s = total ? malloc(total * sizeof *s) : NULL;
    if (!s)
        return NULL;
    for (size_t i = 0; i < v->nprocs; i++) {
        const an_vm_proc *p = &v->procs[i];
        for (size_t k = 0; (all || p->pid == pid) && k < p->n; k++) {
            const an_vm_range *r = &p->r[k];
            uint64_t b = r->end - r->start;
            s[(*n)++] = (an_vm_stack){.pid = p->pid, .stack = r->stack, .bytes = b, .ranges = 1,
                                      .inside = inside(v, r->ts) ? b : 0, .first_ts = r->ts, .kinds = r->kind};
        }
    }
    qsort(s, *n, sizeof *s, by_key);
    size_t m = 0;
    for (size_t i = 0; i < *n; i++) {
        if (m && s[m - 1].pid == s[i].pid && s[m - 1].stack == s[i].stack) {
            an_vm_stack *d = &s[m - 1];
            d->bytes += s[i].bytes;
            d->ranges += s[i].ranges;
            d->inside += s[i].inside;
            d->kinds |= s[i].kinds;
            d->first_ts = s[i].first_ts < d->first_ts ? s[i].first_ts : d->first_ts;
        } else {
            s[m++] = s[i];
        }
    }
    *n = m;
    qsort(s, m, sizeof *s, by_bytes);
    return s;
}
