/*
 * watch/cond.c — when `ltr watch` triggers, from the private bytes of each
 * poll (docs/watch.md, "The condition").
 *
 * Fixed thresholds: private bytes above A and/or growth since the previous
 * poll above G, whichever were given. A trigger needs the condition to start
 * holding: while it goes on holding poll after poll, that is the same
 * episode, not a new one (with --max-triggers above 1, a service stuck above
 * A would otherwise fill the disk with one trace per poll).
 *
 * --growth-above auto: a threshold that learns itself. Transient activity
 * (requests, caches filled and emptied, the allocator's arenas) moves private
 * bytes up and down within a band; a leak moves the band. So the first
 * LTR_WATCH_WARMUP_POLLS polls measure the band (lowest, highest), and after
 * them it triggers when even the lowest of the last LTR_WATCH_SUSTAIN_POLLS
 * polls is above the warm-up's highest by more than the band's width: a
 * spike, however high, lifts one poll and not the lowest of three; growth
 * that lasts does. The width is at least LTR_WATCH_NOISE_FLOOR, so a program
 * idle during the warm-up does not trigger on its first megabyte. Each
 * trigger moves the base to the level that triggered, so the next one needs
 * as much growth again. What it cannot tell: a leak already under way during
 * the warm-up widens the band (it then triggers later, not never), and a
 * program whose transient swings grow larger after the warm-up than during it
 * may trigger on them; bench/watch measures both on made-up programs.
 */
#include "watch/watch.h"
#include "base/units.h"
#include "prim/prim.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int ltr_watch_rule_check(const ltr_watch_rule *r, ltr_error *err)
{
    if (!r->above && !r->growth && !r->growth_auto)
        return ltr_fail(err, EINVAL, "give a condition: --private-bytes-above SIZE, --growth-above SIZE|auto, "
                                     "or both");
    if (r->growth && r->growth_auto)
        return ltr_fail(err, EINVAL, "--growth-above is a size or auto, not both");
    return 0;
}

void ltr_watch_cond_init(ltr_watch_cond *c, const ltr_watch_rule *r)
{
    memset(c, 0, sizeof *c);
    c->rule = *r;
}

static uint64_t lowest_recent(const ltr_watch_cond *c)
{
    uint64_t lo = UINT64_MAX;
    for (unsigned i = 0; i < LTR_WATCH_SUSTAIN_POLLS; i++)
        lo = c->recent[i] < lo ? c->recent[i] : lo;
    return lo;
}

/* auto: learns during the warm-up; then whether the rise holds. */
static bool auto_holds(ltr_watch_cond *c, uint64_t pb, ltr_watch_verdict *v, bool *learning)
{
    if (c->polls < LTR_WATCH_WARMUP_POLLS) {
        c->lo = c->polls == 0 || pb < c->lo ? pb : c->lo;
        c->hi = c->polls == 0 || pb > c->hi ? pb : c->hi;
        if (c->polls + 1 == LTR_WATCH_WARMUP_POLLS) {
            c->swing = c->hi - c->lo > LTR_WATCH_NOISE_FLOOR ? c->hi - c->lo : LTR_WATCH_NOISE_FLOOR;
            c->base = c->hi;
        }
        *learning = true;
        return false;
    }
    c->recent[(c->polls - LTR_WATCH_WARMUP_POLLS) % LTR_WATCH_SUSTAIN_POLLS] = pb;
    v->auto_level = c->base + c->swing;
    return c->polls >= LTR_WATCH_WARMUP_POLLS + LTR_WATCH_SUSTAIN_POLLS - 1 && lowest_recent(c) > v->auto_level;
}

static void describe_wait(const ltr_watch_cond *c, const ltr_watch_verdict *v, bool learning)
{
    char a[32], g[32], l[32];
    const ltr_watch_rule *r = &c->rule;
    size_t at = 0, cap = sizeof v->waits_for;
    char *out = (char *)v->waits_for;
    if (learning) {
        at += (size_t)snprintf(out + at, cap - at, "learning the transient swing (poll %u of %u)", c->polls + 1,
                               LTR_WATCH_WARMUP_POLLS);
        return;
    }
    if (r->above)
        at += (size_t)snprintf(out + at, cap - at, "private bytes above %s", ltr_size_format(r->above, a, sizeof a));
    if (r->growth)
        snprintf(out + at, cap - at, "%sgrowth above %s per poll", at ? " and " : "",
                 ltr_size_format(r->growth, g, sizeof g));
    else if (r->growth_auto)
        snprintf(out + at, cap - at, "%sprivate bytes staying above %s for %u polls", at ? " and " : "",
                 ltr_size_format(v->auto_level, l, sizeof l), LTR_WATCH_SUSTAIN_POLLS);
}

static void describe_fire(const ltr_watch_cond *c, ltr_watch_verdict *v)
{
    char a[32], b[32], g[32], h[32], s[32], w[32];
    const ltr_watch_rule *r = &c->rule;
    size_t at = 0, cap = sizeof v->condition;
    if (r->above)
        at += (size_t)snprintf(v->condition + at, cap - at, "private bytes %s above %s",
                               ltr_size_format(v->private_bytes, a, sizeof a), ltr_size_format(r->above, b, sizeof b));
    if (r->growth)
        snprintf(v->condition + at, cap - at, "%sgrowth %s above %s since the previous poll", at ? " and " : "",
                 ltr_size_format_signed(v->growth, g, sizeof g), ltr_size_format(r->growth, h, sizeof h));
    else if (r->growth_auto)
        snprintf(v->condition + at, cap - at,
                 "%sprivate bytes stayed above %s for %u polls (lowest %s): the warm-up's highest %s plus its "
                 "swing %s",
                 at ? " and " : "", ltr_size_format(v->auto_level, g, sizeof g), LTR_WATCH_SUSTAIN_POLLS,
                 ltr_size_format(lowest_recent(c), h, sizeof h), ltr_size_format(c->base, s, sizeof s),
                 ltr_size_format(c->swing, w, sizeof w));
}

void ltr_watch_cond_poll(ltr_watch_cond *c, uint64_t pb, ltr_watch_verdict *v)
{
    memset(v, 0, sizeof *v);
    const ltr_watch_rule *r = &c->rule;
    v->private_bytes = pb;
    v->growth = c->polls ? (int64_t)(pb - c->prev) : 0;
    bool learning = false, holds = true;
    if (r->above)
        holds = pb > r->above;
    if (r->growth)
        holds = holds && c->polls > 0 && v->growth > 0 && (uint64_t)v->growth > r->growth;
    if (r->growth_auto)
        holds = auto_holds(c, pb, v, &learning) && holds;
    describe_wait(c, v, learning);
    v->state = learning ? LTR_WATCH_LEARNING : !holds ? LTR_WATCH_WAITING : c->held ? LTR_WATCH_HOLDING
                                                                                      : LTR_WATCH_FIRE;
    if (v->state == LTR_WATCH_HOLDING) { /* it holds, and waits for that to end: not for what holds already */
        char armed[sizeof v->waits_for];
        snprintf(armed, sizeof armed, "%s", v->waits_for);
        snprintf((char *)v->waits_for, sizeof v->waits_for, "the condition to end (it held at the last trigger), "
                 "then %.140s", armed);
    }
    if (v->state == LTR_WATCH_FIRE) {
        describe_fire(c, v);
        if (r->growth_auto) { /* the next trigger needs as much growth again */
            c->base = lowest_recent(c);
            holds = false;
        }
    }
    c->held = holds;
    c->prev = pb;
    c->polls++;
}
