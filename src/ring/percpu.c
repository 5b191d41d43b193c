/*
 * ring/percpu.c — the CPUs' buffers of ring.h: appends by restartable
 * sequence, and the replacement of a CPU's full buffer.
 *
 * Why not only per-CPU buffers: a thread's own buffer costs a store per
 * event and keeps its events in order with delta timestamps; an append here
 * copies the record once more (it is built beside, then copied inside the
 * sequence) and carries the thread id and a whole timestamp (about 5 bytes
 * more per heap event). So threads keep their own buffers while the ring
 * has them to give, and only the threads beyond (1000 threads on 2 CPUs,
 * bench/threads) share their CPUs' buffers: memory is bounded by buffers
 * and CPUs, whatever the number of threads.
 *
 * Why it is safe without atomics: only a thread running on CPU c touches
 * slots[c], and only inside a sequence that checks it runs on c; a sequence
 * interrupted by another thread on c is restarted, so each one sees the
 * slot and the commit word as no one else is changing them. A buffer taken
 * out of its slot is published after the swap: a sequence that read the
 * slot before then fails its comparison.
 */
#include "ring/ring.h"
#include "prim/rseq.h"

/* Sequences tried for one record: each restart means the thread was
 * preempted, migrated or signalled during a few dozen instructions; past
 * this something is wrong, and the record is counted as lost. */
#define APPEND_TRIES 64

bool ltr_ring_cpu_usable(void) { return ltr_rseq_cpu() >= 0; }

enum ltr_cpu_append ltr_ring_cpu_append(ltr_ring_view *v, uint32_t *slots, uint32_t nslots, uint32_t pid,
                                        uint32_t owner, const void *rec, uint32_t len, bool *wake)
{
    if (len > v->buffer_size)
        return LTR_CPU_NO_BUFFER;
    enum ltr_cpu_append rc = LTR_CPU_NO_BUFFER;
    uint32_t spare = LTR_RING_NONE; /* a new buffer not yet in its slot */
    for (int tries = 0; tries < APPEND_TRIES; tries++) {
        int cpu = ltr_rseq_cpu();
        if (cpu < 0 || (uint32_t)cpu >= nslots) {
            rc = LTR_CPU_UNSUPPORTED;
            break;
        }
        uint32_t *slot = &slots[cpu];
        uint32_t cur = __atomic_load_n(slot, __ATOMIC_RELAXED);
        /* The slot is ours (process memory), the commit word is shared:
         * bytes past the buffer (written over) count as a full buffer, and
         * the record goes to a new one. The rseq copies to where the checked
         * word said, whatever the word says by then. */
        if (cur && cur <= v->nbuf) {
            ltr_ring_buf *b = &v->bufs[cur - 1];
            uint64_t c = atomic_load_explicit(&b->commit, memory_order_relaxed);
            uint32_t used = LTR_COMMIT_BYTES(c);
            if (used <= v->buffer_size && len <= v->buffer_size - used) {
                if (ltr_rseq_append(cpu, slot, cur, (uint64_t *)&b->commit, c, ltr_ring_vdata(v, cur - 1) + used,
                                    rec, len) == 0) {
                    rc = LTR_CPU_APPENDED;
                    break;
                }
                continue; /* preempted, or another thread got there first */
            }
        }
        /* No buffer on this CPU yet, or it is full: a new one in its place. */
        if (spare == LTR_RING_NONE && (spare = ltr_ring_acquire(v, pid, 0, owner)) == LTR_RING_NONE)
            break;
        if (!atomic_load_explicit(&v->shared->cpus_used, memory_order_relaxed))
            atomic_store_explicit(&v->shared->cpus_used, 1, memory_order_relaxed); /* ring.c: woken early from now on */
        if (ltr_rseq_swap(cpu, slot, cur, spare + 1) == 0) {
            if (cur && cur <= v->nbuf && ltr_ring_publish(v, cur - 1))
                *wake = true;
            spare = LTR_RING_NONE;
        }
    }
    /* Acquired but never installed (another thread of the CPU installed one
     * first): free again at once. Handed to the recorder instead, the spares
     * of hundreds of threads meeting an empty slot at once (1000 threads
     * leaving a barrier) held the whole pool until its next round, 60 ms,
     * and events were lost meanwhile. */
    if (spare != LTR_RING_NONE)
        ltr_ring_unacquire(v, spare);
    return rc;
}
