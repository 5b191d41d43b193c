/*
 * analyze/snapshots.c — heap snapshots in a trace (docs/heap-events.md,
 * "Heap snapshots"): collected while the trace streams, then reported as each
 * snapshot's totals, the difference by stack between two of them
 * (--from/--to snapshot:N), and the trend of each stack across a process's
 * snapshots (--trend: leak, plateau or noise; docs/analysis.md says how and
 * why).
 */
#include "analyze/internal.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int field_index(const ltr_layout *l, const char *name)
{
    for (unsigned i = 0; i < l->field_count; i++)
        if (!strcmp(l->fields[i].name, name))
            return (int)i;
    return -1;
}

static uint64_t field_u(const ltr_event *ev, const char *name)
{
    int i = field_index(ev->layout, name);
    ltr_trace_value v;
    if (i < 0 || ltr_event_field(ev, (unsigned)i, &v) != 0 || v.type == LTR_TYPE_STRING ||
        v.type == LTR_TYPE_BLOB)
        return 0;
    return v.u;
}

/* The snapshot of pid being read (its Begin seen, not its End), or NULL. */
static an_snapshot *open_snapshot(ltr_analysis *a, uint32_t pid, uint64_t seq)
{
    for (size_t i = a->nsnaps; i-- > 0;)
        if (a->snaps[i].pid == pid && a->snaps[i].seq == seq)
            return a->snaps[i].complete ? NULL : &a->snaps[i];
    return NULL;
}

static void begin(ltr_analysis *a, const ltr_event *ev)
{
    an_snapshot *v = realloc(a->snaps, (a->nsnaps + 1) * sizeof *v);
    if (!v)
        return;
    a->snaps = v;
    a->snaps[a->nsnaps++] = (an_snapshot){.pid = ev->pid, .seq = field_u(ev, "snapshot"), .ts = ev->ts};
}

static void stack(ltr_analysis *a, const ltr_event *ev)
{
    an_snapshot *s = open_snapshot(a, ev->pid, field_u(ev, "snapshot"));
    if (!s)
        return;
    an_snap_stack *v = realloc(s->stacks, (s->nstacks + 1) * sizeof *v);
    if (!v)
        return;
    s->stacks = v;
    an_snap_stack *st = &s->stacks[s->nstacks++];
    st->stack = (uint32_t)field_u(ev, "stack");
    st->blocks = field_u(ev, "blocks");
    st->bytes = field_u(ev, "bytes");
    st->oldest_s = field_u(ev, "oldest_s");
    st->older_1h = field_u(ev, "bytes_older_1h");
}

static void end(ltr_analysis *a, const ltr_event *ev)
{
    an_snapshot *s = open_snapshot(a, ev->pid, field_u(ev, "snapshot"));
    if (!s)
        return;
    s->blocks = field_u(ev, "blocks");
    s->bytes = field_u(ev, "bytes");
    s->pause_ns = field_u(ev, "pause_ns");
    /* every stack record arrived (none lost to full buffers) */
    s->complete = field_u(ev, "stacks") == s->nstacks ? 1 : -1;
}

int an_snapshot_event(ltr_analysis *a, const ltr_event *ev)
{
    const ltr_layout *l = ev->layout;
    if (!l || !l->provider || memcmp(l->provider->guid.b, a->snap_guid.b, 16))
        return 0;
    if (a->pid_set && ev->pid != a->pid)
        return 1;
    if (l->event_id == LTR_SNAP_EV_BEGIN)
        begin(a, ev);
    else if (l->event_id == LTR_SNAP_EV_STACK)
        stack(a, ev);
    else if (l->event_id == LTR_SNAP_EV_END)
        end(a, ev);
    return 1;
}

void an_snapshots_finish(ltr_analysis *a)
{
    for (size_t i = 0; i < a->nsnaps; i++) {
        an_snapshot *s = &a->snaps[i];
        for (size_t k = 0; k < s->nstacks; k++) {
            const an_snap_stack *st = &s->stacks[k];
            s->older_1h += st->older_1h;
            s->oldest_s = st->oldest_s > s->oldest_s ? st->oldest_s : s->oldest_s;
            if (!s->complete) { /* no End gave the totals */
                s->blocks += st->blocks;
                s->bytes += st->bytes;
            }
        }
    }
}

void an_snapshots_free(ltr_analysis *a)
{
    for (size_t i = 0; i < a->nsnaps; i++)
        free(a->snaps[i].stacks);
    free(a->snaps);
    free(a->trend);
}

/* ---- difference between two snapshots ------------------------------------------ */

static const an_snap_stack *find_stack(const an_snapshot *s, uint32_t id)
{
    for (size_t i = 0; i < s->nstacks; i++)
        if (s->stacks[i].stack == id)
            return &s->stacks[i];
    return NULL;
}

static int by_delta(const void *x, const void *y)
{
    const an_snap_delta *a = x, *b = y;
    return a->delta < b->delta ? 1 : a->delta > b->delta ? -1 : (a->stack > b->stack) - (a->stack < b->stack);
}

an_snap_delta *an_snapshot_diff(const an_snapshot *from, const an_snapshot *to, size_t *n)
{
    an_snap_delta *d = calloc(from->nstacks + to->nstacks + 1, sizeof *d);
    *n = 0;
    if (!d)
        return NULL;
    for (size_t i = 0; i < to->nstacks; i++) {
        const an_snap_stack *t = &to->stacks[i], *f = find_stack(from, t->stack);
        d[(*n)++] = (an_snap_delta){t->stack, (int64_t)t->bytes - (int64_t)(f ? f->bytes : 0),
                                    (int64_t)t->blocks - (int64_t)(f ? f->blocks : 0)};
    }
    for (size_t i = 0; i < from->nstacks; i++)
        if (!find_stack(to, from->stacks[i].stack))
            d[(*n)++] = (an_snap_delta){from->stacks[i].stack, -(int64_t)from->stacks[i].bytes,
                                        -(int64_t)from->stacks[i].blocks};
    qsort(d, *n, sizeof *d, by_delta);
    return d;
}

/* ---- trend ------------------------------------------------------------------------ */

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Theil–Sen: the median of the slopes between every pair of points; half the
 * points can be bursts without moving it. */
static double theil_sen(const double *t, const double *y, size_t lo, size_t hi, double *scratch)
{
    size_t k = 0;
    for (size_t i = lo; i < hi; i++)
        for (size_t j = i + 1; j < hi; j++)
            if (t[j] > t[i])
                scratch[k++] = (y[j] - y[i]) / (t[j] - t[i]);
    if (!k)
        return 0;
    qsort(scratch, k, sizeof *scratch, cmp_double);
    return k % 2 ? scratch[k / 2] : (scratch[k / 2 - 1] + scratch[k / 2]) / 2;
}

/* Mann–Kendall's S over the pairs, divided by their number: +1 when every
 * later point is higher than every earlier one, about 0 for noise. */
static double concordance(const double *y, size_t n)
{
    double s = 0, pairs = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            s += (y[j] > y[i]) - (y[j] < y[i]);
            pairs++;
        }
    return pairs ? s / pairs : 0;
}

/* Median absolute deviation of the points from the line through them of
 * slope b (its intercept the median): the noise of the series. */
static double residual_mad(const double *t, const double *y, size_t n, double b, double *scratch)
{
    for (size_t i = 0; i < n; i++)
        scratch[i] = y[i] - b * t[i];
    qsort(scratch, n, sizeof *scratch, cmp_double);
    double med = scratch[n / 2];
    for (size_t i = 0; i < n; i++)
        scratch[i] = fabs(y[i] - b * t[i] - med);
    qsort(scratch, n, sizeof *scratch, cmp_double);
    return scratch[n / 2];
}

/* A stack that filled, then kept growing steadily (a leak beside a cache on
 * the same stack: CPython's objects all come through a few allocator
 * frames): its later half on its own rises pair after pair and by more than
 * its own noise. Judged against the whole series' line alone, the fill made
 * it a "plateau" still growing at 745 MiB/hour, ranked below a leak of 66.8
 * MiB/hour (a review's python3: a list, a dict cache and a bytearray
 * extended in place). 4 points at least: of 3, one in 6 random orders rise.
 * Its own last half must not slow down either: a cache whose fill ended
 * inside the later half (CPython's ints of a dict's keys on a loaded
 * machine: 0 0 0 3 27 54 56 56 56 KB) rose pair after pair there too. */
static bool grows_after_fill(const double *t, const double *y, size_t mid, size_t n, double late,
                             double rise_late, double *scratch)
{
    return n - mid >= 4 && concordance(y + mid, n - mid) >= AN_TREND_MIN_TAU &&
           theil_sen(t, y, mid + (n - mid) / 2, n, scratch) >= AN_TREND_LATE_SHARE * late &&
           rise_late > AN_TREND_NOISE_K * residual_mad(t + mid, y + mid, n - mid, late, scratch);
}

/* Where a fill that ran into the later half ended: of the snapshots past the
 * middle that leave 4 after them, the one where the slope falls the most,
 * from the series' up to it to the series' from it, to less than half; 0
 * when the largest fall of all is not past the middle (the later half's
 * rule judges that series) or there is none. One point tried, the fit's,
 * not each in turn: each try is another chance for noise to pass. */
static size_t fill_end(const double *t, const double *y, size_t mid, size_t n, double *scratch)
{
    size_t best = 0;
    double fall = 0;
    for (size_t c = 1; c + 4 <= n; c++) {
        double before = theil_sen(t, y, 0, c + 1, scratch), after = theil_sen(t, y, c, n, scratch);
        if (after < AN_TREND_LATE_SHARE * before && before - after > fall) {
            fall = before - after;
            best = c;
        }
    }
    return best > mid ? best : 0;
}

/* A leak after a fill that ran into the later half (a review's python3 on a
 * loaded machine: the dict cache's fill in the 4th to 6th of 9 snapshots,
 * on the stack of a bytearray extended in place): the later half holds the
 * fill's end and slows at its own end, so it was a plateau "slowed, still
 * growing" ranked below smaller leaks; from the fill's end on it grows
 * steadily. Judged as the later half is, from there. */
static bool grows_after_late_fill(const double *t, const double *y, size_t mid, size_t n, double *scratch,
                                  an_trend *tr)
{
    size_t c = fill_end(t, y, mid, n, scratch);
    if (!c)
        return false;
    /* the rate from the snapshot after: the fill's own may hold its last
     * step (the ints' 54 -> 56 KB), and it is in half the pairs of 4 */
    double rate = theil_sen(t, y, c + 1, n, scratch), rise = rate * (t[n - 1] - t[c]);
    if (rise < AN_TREND_MIN_BYTES || !grows_after_fill(t, y, c, n, rate, rise, scratch))
        return false;
    tr->later = rate;
    tr->since = c;
    return true;
}

static an_verdict classify(const double *t, const double *y, size_t n, double *scratch, an_trend *tr)
{
    size_t mid = n / 2;
    double all = theil_sen(t, y, 0, n, scratch);
    double late = theil_sen(t, y, mid, n, scratch);
    double rise_late = late * (t[n - 1] - t[mid]);
    tr->growth = all;
    tr->later = late;
    tr->rising = rise_late >= AN_TREND_MIN_BYTES;
    /* leak: most pairs of snapshots rise, and the later half still rises,
     * as fast as the whole, by more than the noise around the line; or
     * steadily on its own, whatever came before (a fill) */
    if (concordance(y, n) >= AN_TREND_MIN_TAU && tr->rising) {
        if (late >= AN_TREND_LATE_SHARE * all && rise_late > AN_TREND_NOISE_K * residual_mad(t, y, n, all, scratch))
            return AN_LEAK;
        if (grows_after_fill(t, y, mid, n, late, rise_late, scratch)) {
            tr->after_fill = true;
            tr->since = mid;
            return AN_LEAK;
        }
        if (grows_after_late_fill(t, y, mid, n, scratch, tr)) {
            tr->after_fill = true;
            return AN_LEAK;
        }
    }
    /* plateau: the later half sits well above the first snapshot, steady
     * (its spread small beside the rise), and no longer rising as fast */
    double late_mad = residual_mad(t + mid, y + mid, n - mid, 0, scratch);
    double net = scratch[0] = 0, med;
    for (size_t i = mid; i < n; i++)
        scratch[i - mid] = y[i];
    qsort(scratch, n - mid, sizeof *scratch, cmp_double);
    med = scratch[(n - mid) / 2];
    net = med - y[0];
    if (net >= AN_TREND_MIN_BYTES && net >= AN_TREND_NOISE_K * late_mad &&
        rise_late < AN_TREND_LATE_SHARE * net)
        return AN_PLATEAU;
    return AN_NOISE;
}

/* What a stack's rank goes by: a leak's and noise's growth, the whole
 * series'; a leak after a fill's and a plateau's, the later half's (a
 * plateau's only while that still rises, else 0): a cache that filled fast
 * has the steepest whole series, and ranked by it above a table still
 * growing at the end, whose rank its later half's slope now gives. */
static double rank_growth(const an_trend *t)
{
    if (t->after_fill)
        return t->later;
    if (t->verdict != AN_PLATEAU)
        return t->growth;
    return t->rising ? t->later : 0;
}

/* Leaks, plateaus, noise; each by rank_growth, then by what it holds:
 * levelled plateaus all rank 0 B/hour, and a 5.7 MiB cache came after a
 * 100 KiB one as the stacks happened to come (a Rust cache beside its map's
 * table); pid and stack last, so that the order is the same each time. */
static int by_verdict(const void *x, const void *y)
{
    const an_trend *a = x, *b = y;
    double ga = rank_growth(a), gb = rank_growth(b);
    if (a->verdict != b->verdict)
        return a->verdict - b->verdict;
    if (ga != gb)
        return ga < gb ? 1 : -1;
    if (a->last != b->last)
        return a->last < b->last ? 1 : -1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

const char *const an_verdict_names[] = {"leak", "plateau", "noise"};

/* The stacks of pid's complete snapshots, each with its series. */
static void trend_of(ltr_analysis *a, uint32_t pid)
{
    size_t n = 0;
    for (size_t i = 0; i < a->nsnaps; i++)
        n += a->snaps[i].pid == pid && a->snaps[i].complete > 0;
    if (n < AN_TREND_MIN_SNAPSHOTS)
        return;
    const an_snapshot **s = malloc(n * sizeof *s);
    double *t = malloc(n * sizeof *t), *y = malloc(n * sizeof *y), *scratch = malloc(n * n * sizeof *scratch);
    if (!s || !t || !y || !scratch)
        goto out;
    n = 0;
    for (size_t i = 0; i < a->nsnaps; i++)
        if (a->snaps[i].pid == pid && a->snaps[i].complete > 0) {
            s[n] = &a->snaps[i];
            t[n] = (double)(s[n]->ts - s[0]->ts) / 3.6e12; /* hours */
            n++;
        }
    for (size_t k = 0; k < n; k++)
        for (size_t j = 0; j < s[k]->nstacks; j++) {
            uint32_t id = s[k]->stacks[j].stack;
            bool seen = false;
            for (size_t q = 0; q < k && !seen; q++)
                seen = find_stack(s[q], id) != NULL;
            for (size_t q = 0; q < a->ntrend && !seen; q++)
                seen = a->trend[q].pid == pid && a->trend[q].stack == id;
            if (seen)
                continue;
            for (size_t q = 0; q < n; q++) {
                const an_snap_stack *e = find_stack(s[q], id);
                y[q] = e ? (double)e->bytes : 0;
            }
            an_trend *v = realloc(a->trend, (a->ntrend + 1) * sizeof *v);
            if (!v)
                goto out;
            a->trend = v;
            an_trend *tr = &a->trend[a->ntrend++];
            *tr = (an_trend){.pid = pid, .stack = id, .snapshots = n, .first = (uint64_t)y[0],
                             .last = (uint64_t)y[n - 1], .ts = s[n - 1]->ts};
            tr->verdict = classify(t, y, n, scratch, tr);
        }
out:
    free(s);
    free(t);
    free(y);
    free(scratch);
}

void an_trend_run(ltr_analysis *a)
{
    for (size_t i = 0; i < a->nsnaps; i++) {
        bool done = false;
        for (size_t j = 0; j < i && !done; j++)
            done = a->snaps[j].pid == a->snaps[i].pid;
        if (!done)
            trend_of(a, a->snaps[i].pid);
    }
    if (a->ntrend)
        qsort(a->trend, a->ntrend, sizeof *a->trend, by_verdict);
}

an_stack *an_snapshot_stacks(const an_snapshot *s, size_t *n)
{
    an_stack *v = calloc(s->nstacks + 1, sizeof *v);
    *n = v ? s->nstacks : 0;
    for (size_t i = 0; i < *n; i++) {
        v[i] = (an_stack){.pid = s->pid, .key = s->pid, .stack_id = s->stacks[i].stack, .first_ts = s->ts};
        v[i].type[AN_AOFO] = (an_amount){.count = s->stacks[i].blocks, .bytes = s->stacks[i].bytes};
    }
    return v;
}

int an_warn_no_heap_stacks(ltr_analysis *a, const char *empty, bool takes_snapshot)
{
    size_t np, stacks = 0;
    an_proc *const *procs = an_procs(a, &np);
    for (size_t i = 0; i < np; i++)
        stacks += procs[i]->nstacks;
    if (stacks)
        return 0;
    if (a->nsnaps)
        an_warn(a, "no allocation in the window, only %zu heap snapshot(s): %s; %s ('ltr analyze' lists them)",
                a->nsnaps, empty, takes_snapshot ? "--snapshot N exports snapshot N"
                : "'ltr export --format pprof|folded --snapshot N' exports snapshot N");
    else
        an_warn(a, "no allocation in the window: %s", empty);
    return 1;
}

const an_snapshot *an_snapshot_named(const ltr_analysis *a, uint64_t n)
{
    return n >= 1 && n <= a->nsnaps ? &a->snaps[n - 1] : NULL;
}

int an_snapshot_bound(const char *text, uint64_t *n)
{
    if (!text || strncmp(text, "snapshot:", 9))
        return 0;
    char *endp;
    *n = strtoull(text + 9, &endp, 10);
    return *endp || endp == text + 9 || !*n ? -1 : 1;
}
