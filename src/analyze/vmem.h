/*
 * analyze/vmem.h — the mappings a program made itself (the system provider's
 * VirtualAllocation events, written by the heap agent: docs/heap-events.md
 * "Mappings"), as the analysis keeps them: per process, the address ranges
 * mapped and not yet unmapped, each with the stack that mapped it. A munmap
 * of part of a mapping cuts it (the rest stays, split in two when the hole is
 * in the middle); an mremap ends the old range and maps the new one under
 * its own stack, as a Realloc does a block; a mapping over a range already
 * mapped (MAP_FIXED) replaces the overlap. An unmap of bytes the trace never
 * saw mapped is counted apart and changes no total.
 *
 * Fed in time order through the heap model's sink (model.h: the AN_OP_VM_*
 * ops), so that a range one thread maps and another unmaps pairs up whatever
 * the order of the threads' buffers in the file. Knows nothing of the trace.
 */
#ifndef LTR_ANALYZE_VMEM_H
#define LTR_ANALYZE_VMEM_H

#include <stddef.h>
#include <stdint.h>

/* A mapped range [start, end). */
typedef struct an_vm_range {
    uint64_t start, end, ts;
    uint32_t stack;
    uint32_t kind; /* AN_VM_* bits */
} an_vm_range;

enum { AN_VM_FILE = 1, AN_VM_BRK = 2, AN_VM_ANON = 4 };

/* One process's mappings and counters (calls and bytes inside the window). */
typedef struct an_vm_proc {
    uint32_t pid;
    an_vm_range *r; /* sorted by start, disjoint */
    size_t n, cap;
    uint64_t maps, map_bytes, unmaps, unmap_bytes, remaps, discards, discard_bytes;
    uint64_t unseen_bytes, unseen_calls; /* unmapped bytes the trace never saw mapped */
    uint32_t remap_kind;                 /* kind of the range an mremap is moving */
} an_vm_proc;

typedef struct an_vmem {
    uint64_t from, to; /* the window, ns, inclusive */
    an_vm_proc *procs;
    size_t nprocs, cap;
    int oom;
} an_vmem;

void an_vmem_init(an_vmem *v, uint64_t from, uint64_t to);
void an_vmem_free(an_vmem *v);
/* A mapping of [addr, addr + size) by stack at ts. */
void an_vmem_map(an_vmem *v, uint32_t pid, uint64_t ts, uint64_t addr, uint64_t size, uint32_t stack,
                 uint32_t kind);
/* [addr, addr + size) unmapped at ts (any part of it mapped or not). */
void an_vmem_unmap(an_vmem *v, uint32_t pid, uint64_t ts, uint64_t addr, uint64_t size);
/* mremap: [old, old + old_size) moved or resized to [addr, addr + size). */
void an_vmem_remap(an_vmem *v, uint32_t pid, uint64_t ts, uint64_t old, uint64_t old_size, uint64_t addr,
                   uint64_t size, uint32_t stack);
/* The two halves of an_vmem_remap, as the model's ops bring them (the new
 * range takes the kind of the old). */
void an_vmem_remap_from(an_vmem *v, uint32_t pid, uint64_t ts, uint64_t old, uint64_t old_size);
void an_vmem_remap_to(an_vmem *v, uint32_t pid, uint64_t ts, uint64_t addr, uint64_t size, uint32_t stack);
/* madvise gave [addr, addr + size) back: counted, the mapping stays. */
void an_vmem_discard(an_vmem *v, uint32_t pid, uint64_t ts, uint64_t size);
/* The process's entry, NULL if it mapped nothing. */
const an_vm_proc *an_vmem_proc(const an_vmem *v, uint32_t pid);

/* Outstanding mapped bytes of one stack of one process at the window's end. */
typedef struct an_vm_stack {
    uint32_t pid, stack;
    uint64_t bytes, ranges, inside; /* inside: bytes of ranges mapped inside the window */
    uint64_t first_ts;
    uint32_t kinds; /* AN_VM_* bits of its ranges */
} an_vm_stack;

/* The stacks holding mapped bytes (of pid, or every process when all), most
 * bytes first; malloc'd, *n of them (NULL with *n = 0 when none or no memory). */
an_vm_stack *an_vmem_ranked(const an_vmem *v, int all, uint32_t pid, size_t *n);
/* Outstanding mapped bytes of a process. */
uint64_t an_vmem_outstanding(const an_vm_proc *p);

#endif
