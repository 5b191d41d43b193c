/*
 * prim/grainclock.c — CLOCK_MONOTONIC rounded down to a grain, read through
 * the CPU's time-stamp counter between the grain's edges (prim.h,
 * ltr_grain_now). The heap agent stamps every event to 100 us; the clock
 * read was a seventh of what it adds to a traced program (perf of bench/heap's
 * deep workload: __vdso_clock_gettime 3.4 % against the agent's 23 %), and on
 * this machine clock_gettime costs 23.5 ns against an ordered rdtsc's 18.8:
 * the agent's cost on the deep workload 6 % lower (docs/benchmarks.md).
 *
 * Why it is exact: a thread asks clock_gettime at each grain's start, and in
 * between only compares the counter with where the next edge may come at the
 * earliest. That bound needs a rate the counter's is sure to be above: it is
 * measured between two samples, the first's counter read after its clock
 * and the second's before (a thread held up between the two reads, by a
 * preemption or a page fault, only makes the rate lower), and taken a fifth
 * lower still (the clock's slew, LOW_RATE_PERCENT). So the counter reaches
 * the bound before the clock reaches the edge. It is used only where
 * the kernel keeps time with the counter itself (below); a counter that went
 * back sends the thread to the clock again, and one that fell behind the
 * clock by more than the margin (the kernel gave up on it since) turns the
 * counter off for the process.
 *
 * Where the kernel keeps time with the counter:
 * - clocksource tsc: constant rate, the same on every CPU, checked by the
 *   kernel (else it picks another source).
 * - kvm-clock whose vDSO reads it in user space. kvm-clock is the host's
 *   (pvclock) linear function of the guest's TSC; the vDSO reads it only
 *   where the host set PVCLOCK_TSC_STABLE_BIT at boot and still has it at
 *   the read (arch/x86/kernel/kvmclock.c, kvm_setup_vsyscall_timeinfo;
 *   arch/x86/include/asm/vdso/gettimeofday.h, vread_pvclock: "we interpret
 *   that bit to mean that all vCPUs have matching pvti and that the TSC is
 *   synced", so it reads vCPU 0's on any CPU), and falls back to the system
 *   call otherwise. A program cannot read the bit (the pvclock page's place
 *   in [vvar_vclock] is no ABI, and faults when not in use), but it can see
 *   the fallback: clock_gettime costing about what the system call does.
 *   So the counter is trusted under kvm-clock when clock_gettime took under
 *   half the system call's ticks (fewest of 8 each): here 147 against 2 200.
 *   What this adds to the tsc case, measured nowhere but reasoned: the host
 *   rewrites the pvclock parameters now and then (a master clock update, a
 *   snapshot's restore: the kernel's command line here, tsc=unstable and
 *   clocksource=kvm-clock, is Firecracker's), and kvm-clock may step at such
 *   a rewrite. A step back only sends the thread to the clock sooner, and
 *   a TSC that jumps back is the went-back net's; a TSC that runs slower
 *   after a restore on another host (no TSC scaling) is inside the margin
 *   up to a fifth, else the fell-behind net's, which catches it at the
 *   thread's next clock read (within a grain), the stamps before it maybe a
 *   grain early; a step forward larger than a fifth of what was left of the
 *   grain at the thread's last read makes the stamps of that step's moment
 *   a grain early, again until the next clock read. clock_gettime costs
 *   28.8 ns here against 19.9 for the fenced counter; ltr_grain_now 19.2 ns
 *   against 26.0 (fewest of 300 runs of 20 000 calls, load 8).
 *
 * It runs inside malloc: the clock source is read with raw system calls
 * (no cancellation point, no hook of the agent's own), the costs measured
 * with clock_gettime and syscall (no cancellation point either), errno kept.
 */
#include "prim/prim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#define CALIBRATE_NS 2000000u /* the rate measured over 2 ms at least */
/* The rate taken as 80 % of what was measured: CLOCK_MONOTONIC follows
 * adjtimex's tick, which moves it by up to 10 % either way (chronyd slews by
 * up to 8.3 % so): a rate measured while the clock ran 10 % slow, used while
 * it runs 10 % fast, is still below the counter's (0.8 < 0.9 / 1.1). A
 * review's test: 6 % of slew gave early stamps with a 2 % margin. */
#define LOW_RATE_PERCENT 80u

enum { CAL_NONE, CAL_BUSY, CAL_BASE, CAL_OFF };

static _Atomic int cal_state;
static uint64_t cal_tsc, cal_ns;       /* the first sample (counter read after the clock), once CAL_BASE */
static _Atomic uint64_t cycles_per_us; /* counter ticks a microsecond, low (above); 0: not known yet */

#if defined(__x86_64__)
/* Ordered after every instruction before it (lfence), as the kernel's own
 * read is: a bare rdtsc may run ahead of the load that saw another thread
 * free a block, and stamp its reuse from before that free's stamp. 18.8 ns
 * here against rdtsc's 9.6 and clock_gettime's 23.5. */
static inline uint64_t counter(void)
{
    _mm_lfence();
    return __rdtsc();
}

/* The kernel's clock source, as sysfs names it, without the line's end
 * ("tsc"); "" when unread. */
static void clock_source(char *buf, size_t size)
{
    int saved = errno;
    long fd = syscall(SYS_openat, AT_FDCWD, "/sys/devices/system/clocksource/clocksource0/current_clocksource",
                      O_RDONLY | O_CLOEXEC);
    long n = fd < 0 ? -1 : syscall(SYS_read, fd, buf, size - 1);
    if (fd >= 0)
        syscall(SYS_close, fd);
    buf[n > 0 ? n : 0] = 0;
    buf[strcspn(buf, "\n")] = 0;
    errno = saved;
}

/* The fewest counter ticks, of 8 tries each interleaved, that clock_gettime
 * took and the same clock by system call: what the vDSO does when it cannot
 * read the clock in user space. Here (PVM guest, kvm-clock) 147 and 2 200
 * ticks at least; a preemption only makes a figure larger. */
static void clock_costs(uint64_t *vdso_ticks, uint64_t *syscall_ticks)
{
    int saved = errno;
    struct timespec ts;
    *vdso_ticks = *syscall_ticks = UINT64_MAX;
    for (int i = 0; i < 8; i++) {
        uint64_t t0 = counter();
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t t1 = counter();
        syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
        uint64_t t2 = counter();
        if (t1 - t0 < *vdso_ticks)
            *vdso_ticks = t1 - t0;
        if (t2 - t1 < *syscall_ticks)
            *syscall_ticks = t2 - t1;
    }
    errno = saved;
}
#else
static inline uint64_t counter(void) { return 0; }
static void clock_source(char *buf, size_t size) { buf[0] = 0; }
static void clock_costs(uint64_t *vdso_ticks, uint64_t *syscall_ticks) { *vdso_ticks = *syscall_ticks = 0; }
#endif

bool ltr_grain_counter_trusted(const char *source, uint64_t vdso_ticks, uint64_t syscall_ticks)
{
#if defined(__x86_64__)
    if (!strcmp(source, "tsc"))
        return true;
    /* kvm-clock, read in user space only where the TSC is stable (header):
     * the vDSO's read well under a system call's, else its fallback */
    return !strcmp(source, "kvm-clock") && vdso_ticks < syscall_ticks / 2;
#else
    return false;
#endif
}

/* Whether this process may use the counter (ltr_grain_counter_trusted of
 * this kernel); measures only where the clock source asks for it. */
static bool counter_trusted(void)
{
    char source[32];
    clock_source(source, sizeof source);
    uint64_t vdso_ticks = 0, syscall_ticks = 0;
    if (!strcmp(source, "kvm-clock"))
        clock_costs(&vdso_ticks, &syscall_ticks);
    return ltr_grain_counter_trusted(source, vdso_ticks, syscall_ticks);
}

/* One sample towards the rate: the clock ns, the counter read just before
 * it (lo) and just after (hi). The first thread to come takes the base, a
 * later sample 2 ms on gives the rate. */
static void calibrate(uint64_t lo, uint64_t ns, uint64_t hi)
{
    int st = atomic_load_explicit(&cal_state, memory_order_acquire);
    if (st == CAL_NONE) {
        int none = CAL_NONE;
        if (!atomic_compare_exchange_strong(&cal_state, &none, CAL_BUSY))
            return;
        if (!counter_trusted()) {
            atomic_store_explicit(&cal_state, CAL_OFF, memory_order_release);
            return;
        }
        cal_tsc = hi; /* the counter was at most this when the clock read ns */
        cal_ns = ns;
        atomic_store_explicit(&cal_state, CAL_BASE, memory_order_release);
        return;
    }
    if (st != CAL_BASE || ns < cal_ns + CALIBRATE_NS || lo <= cal_tsc)
        return;
    /* at least lo - cal_tsc ticks passed in ns - cal_ns (128 bits: a second
     * sample may come days later) */
    uint64_t rate = (uint64_t)((unsigned __int128)(lo - cal_tsc) * 1000u / (ns - cal_ns));
    uint64_t zero = 0;
    if (rate > 0)
        atomic_compare_exchange_strong(&cycles_per_us, &zero, rate);
}

bool ltr_grain_counter_dropped(void)
{
    return atomic_load_explicit(&cal_state, memory_order_relaxed) == CAL_OFF;
}

static void (*_Atomic due_fn)(ltr_grain_clock *c, uint64_t ns);

void ltr_grain_set_due(void (*fn)(ltr_grain_clock *c, uint64_t ns))
{
    atomic_store(&due_fn, fn);
}

/* A clock read: the due function's turn when its time has come. */
static void clock_read(ltr_grain_clock *c, uint64_t ns)
{
    c->clock_reads++;
    void (*fn)(ltr_grain_clock *, uint64_t) = atomic_load_explicit(&due_fn, memory_order_relaxed);
    if (fn && ns >= c->due_ns)
        fn(c, ns);
}

uint64_t ltr_grain_now(ltr_grain_clock *c, uint64_t grain_ns)
{
    if (atomic_load_explicit(&cal_state, memory_order_relaxed) == CAL_OFF) {
        uint64_t ns = ltr_now_ns();
        clock_read(c, ns);
        return ns - ns % grain_ns;
    }
    uint64_t tsc = counter();
    if (tsc >= c->tsc_last && tsc < c->tsc_edge) {
        c->tsc_last = tsc;
        return c->grain_ts;
    }
    uint64_t ns = ltr_now_ns(), hi = counter();
    clock_read(c, ns);
    uint64_t grain = ns - ns % grain_ns, rate = atomic_load_explicit(&cycles_per_us, memory_order_relaxed);
    if (rate && c->ns_read && ns > c->ns_read && hi > c->tsc_read &&
        (unsigned __int128)(hi - c->tsc_read) * 1000u * 100u <
            (unsigned __int128)(ns - c->ns_read) * rate * LOW_RATE_PERCENT) {
        /* Since the last read, even counted generously (from before that
         * read to after this one), fewer ticks than the rate promised: the
         * counter is not the clock's any more (the stamps since that read
         * may have been early); the clock only, from now on. */
        atomic_store_explicit(&cal_state, CAL_OFF, memory_order_relaxed);
        return grain;
    }
    c->grain_ts = grain;
    c->tsc_last = c->tsc_read = tsc;
    c->ns_read = ns;
    c->tsc_edge = 0; /* the clock again next time, unless the edge is known */
    if (!rate) {
        calibrate(tsc, ns, hi);
        return grain;
    }
    /* read before the clock: the edge is at least this far from tsc */
    uint64_t left_ns = grain + grain_ns - ns;
    uint64_t ticks = left_ns * rate / 1000u * LOW_RATE_PERCENT / 100u;
    c->tsc_edge = tsc + ticks;
    return grain;
}
