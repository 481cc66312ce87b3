// The controller of --pipeline auto: rules a user can follow from the line
// each change prints (pipeline.h, sf_pipe_tuning, says them in words).
// Nothing here touches the pipe: it turns measurements of one interval into
// knobs, so that it is tested on its own.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

// The consumer may wait this share of its time for input.
#define TARGET 0.005
// What a first estimate adds to the measured need.
#define MARGIN 1.25
// What a grown buffer must add to the consumer's rate to stay, when the
// wait did not fall: above the noise of two looks on a loaded machine.
#define GAIN 1.05

static const char *const names[SF_KNOBS] = {"decoders", "prefetch", "slots", "depth"};

uint32_t *sf_knob(sf_pipe_knobs *k, int i) {
    return i == 0 ? &k->decoders : i == 1 ? &k->prefetch : i == 2 ? &k->slots : &k->depth;
}

uint32_t sf_knob_get(const sf_pipe_knobs *k, int i) {
    sf_pipe_knobs v = *k;
    return *sf_knob(&v, i);
}

uint32_t sf_knob_least(int i, uint32_t cap) {
    uint32_t least = i == 0 ? 1 : 2;
    return least < cap ? least : cap;
}

const char *sf_knob_name(int i) { return names[i]; }

static uint32_t clampu(double v, uint32_t lo, uint32_t hi) {
    if (!(v > lo)) return lo;
    return v >= hi ? hi : (uint32_t)v;
}

static bool free_knob(const sf_tuner *t, int i) { return !(t->fixed & (1u << i)); }

// A new search: every value up to the cap may be tried again, and with
// `floors` down to the least (a slower consumer may need less; a faster one
// at least what the last one did).
static void restart(sf_tuner *t, bool floors) {
    for (int i = 0; i < SF_KNOBS; i++) {
        uint32_t c = sf_knob_get(&t->cap, i);
        if (floors) *sf_knob(&t->lo, i) = free_knob(t, i) ? sf_knob_least(i, c) : c;
        *sf_knob(&t->hi, i) = c;
    }
    t->trial = -1;
    t->told_limit = false;
}

void sf_tuner_init(sf_tuner *t, sf_pipe_knobs start, sf_pipe_knobs cap, uint32_t fixed) {
    *t = (sf_tuner){.now = start, .cap = cap, .fixed = fixed};
    restart(t, true);
}

static void knobs_text(const sf_pipe_knobs *k, char *buf, size_t cap) {
    snprintf(buf, cap, "decoders %u, prefetch %u, slots %u, depth %u", k->decoders, k->prefetch, k->slots, k->depth);
}

// Changes knob i as a trial, judged at the next look: a grown one doubles
// (up to what this search allows: a few looks reach any cap), a shrunk one
// gives back one.
static bool try_knob(sf_tuner *t, int i, int dir, double wait, double rate, const char *because, char *why,
                     size_t cap) {
    uint32_t *v = sf_knob(&t->now, i);
    t->trial = i, t->trial_dir = dir, t->before = *v, t->trial_wait = wait, t->trial_rate = rate;
    t->phase_seconds = t->phase_wait = 0, t->phase_batches = 0;
    uint32_t hi = sf_knob_get(&t->hi, i);
    *v = dir > 0 ? (2 * *v < hi ? 2 * *v : hi) : *v - 1;
    // What the consumer waited with was too little: never again in this
    // search (no shrinking back into the same wait, a line each time).
    if (dir > 0 && *sf_knob(&t->lo, i) <= t->before) *sf_knob(&t->lo, i) = t->before + 1;
    t->quiet = 0;
    snprintf(why, cap, "%s %u -> %u (%s%s)", names[i], t->before, *v, because, t->note);
    t->note[0] = 0;
    return true;
}

static bool can_grow(const sf_tuner *t, int i) {
    return free_knob(t, i) && sf_knob_get(&t->now, i) < sf_knob_get(&t->hi, i);
}

static bool can_shrink(const sf_tuner *t, int i) {
    return free_knob(t, i) && sf_knob_get(&t->now, i) > sf_knob_get(&t->lo, i);
}

bool sf_tuner_look(sf_tuner *t, const sf_tune_sample *s, char *why, size_t cap) {
    if (s->seconds <= 0) return false;
    double n = s->batches ? (double)s->batches : 1;
    double wait = s->consumer_wait / s->seconds;
    double step = (s->seconds - s->consumer_wait) / n, window = s->window_busy / n;
    double decode = s->decode_busy / n, read = s->read_busy / n;
    double dbusy = s->decode_busy / (s->seconds * t->now.decoders), rbusy = s->read_busy / s->seconds;
    // Waits are added when they end, so an interval may count one that
    // began before it: a share is at most all of it.
    double blocks = fmin(s->window_in / s->seconds, 1), slots = fmin(s->window_out / s->seconds, 1);
    if (wait > 1) wait = 1;
    char m[160];
    snprintf(m, sizeof m, "consumer waited %.1f%%, step %.2f ms; windowers %.2f ms a batch, %.0f%% waiting for "
             "blocks, %.0f%% for slots; decoders %.0f%% busy", 100 * wait, 1e3 * step, 1e3 * window, 100 * blocks,
             100 * slots, 100 * dbusy);
    t->quiet++;
    // Since the last change: what a trial is judged on and the next one
    // compared with, over more than one look (a look on a loaded machine
    // is noisy).
    t->phase_seconds += s->seconds, t->phase_wait += s->consumer_wait, t->phase_batches += s->batches;
    double pwait = fmin(t->phase_wait / t->phase_seconds, 1), prate = (double)t->phase_batches / t->phase_seconds;
    if (t->step0 == 0) {
        // The first look: decoders and reads in flight for the rate the
        // consumer asks (or the windowers give, when they are slower),
        // from what a batch cost each stage so far.
        t->step0 = step > 1e-6 ? step : 1e-6;
        double period = step > window ? step : window;
        if (period < 1e-6) period = 1e-6;
        if (free_knob(t, 0)) t->now.decoders = clampu(ceil(MARGIN * decode / period), t->lo.decoders, t->hi.decoders);
        if (free_knob(t, 3)) t->now.depth = clampu(ceil(MARGIN * read / period) + 1, t->lo.depth, t->hi.depth);
        char k[96];
        knobs_text(&t->now, k, sizeof k);
        snprintf(why, cap, "%s (decode %.2f ms and read %.2f ms a batch at %.2f ms a batch, x%.2f; %s)", k,
                 1e3 * decode, 1e3 * read, 1e3 * period, MARGIN, m);
        t->quiet = 0;
        t->phase_seconds = t->phase_wait = 0, t->phase_batches = 0;
        return true;
    }
    if (t->trial >= 0) {
        int i = t->trial;
        uint32_t *v = sf_knob(&t->now, i), tried = *v;
        // A grown knob is judged over two looks against the looks before
        // it. More decoders compete for the cores: they stay unless the
        // consumer got clearly less (10%, above a loaded machine's noise)
        // without waiting less. A buffer more (prefetch, slots, reads)
        // holds memory, and on a saturated core it costs: a larger ring
        // of large batches falls out of the caches, more reads in flight
        // are more wakeups. It stays only if it paid: the consumer waits
        // a fifth less or under the target, or gets GAIN more. A shrunk
        // knob stays if the consumer still does not wait (one look with a
        // wait is enough to go back).
        if (t->trial_dir > 0 && t->quiet < 2) return false;
        bool keep = t->trial_dir < 0   ? wait <= TARGET
                    : pwait < 0.8 * t->trial_wait ? true
                    : i == 0           ? prate >= 0.9 * t->trial_rate
                                       : pwait <= TARGET || prate >= GAIN * t->trial_rate;
        t->trial = -1;
        if (!keep) {
            *v = t->before;
            if (t->trial_dir > 0) {
                *sf_knob(&t->hi, i) = t->before;
                if (*sf_knob(&t->lo, i) > t->before) *sf_knob(&t->lo, i) = t->before;
            }
            else *sf_knob(&t->lo, i) = t->before;
            snprintf(why, cap, "%s %u -> %u (%s: %s)", names[i], tried, t->before,
                     t->trial_dir > 0 ? "no gain" : "the wait came back", m);
            t->quiet = 0;
            t->phase_seconds = t->phase_wait = 0, t->phase_batches = 0;
            return true;
        }
    }
    // A consumer whose step changed by a third wants another setting: what
    // this search learned no longer holds. The step is the median of the
    // last five looks', so that a stall of the machine's (a consumer off
    // its core for a look or two) is no change. The next change's line
    // says so.
    if (wait < 0.5) t->steps[t->nsteps++ % 5] = step;
    if (t->nsteps >= 5) {
        double m5[5];
        memcpy(m5, t->steps, sizeof m5);
        for (int a = 1; a < 5; a++)
            for (int b = a; b > 0 && m5[b - 1] > m5[b]; b--) {
                double x = m5[b];
                m5[b] = m5[b - 1], m5[b - 1] = x;
            }
        double median = m5[2];
        if (median > 1e-5 && fabs(median - t->step0) > t->step0 / 3) {
            snprintf(t->note, sizeof t->note, "; a new search since the step went from %.2f to %.2f ms",
                     1e3 * t->step0, 1e3 * median);
            restart(t, median > t->step0);
            t->step0 = median;
            t->nsteps = 0;
        }
    }
    if (wait > TARGET) {
        if (blocks > 0.02 && blocks >= slots) {  // the windowers wait for blocks: upstream
            if (dbusy > 0.5 && can_grow(t, 0)) return try_knob(t, 0, 1, pwait, prate, m, why, cap);
            if (rbusy > 0.5 && can_grow(t, 3)) return try_knob(t, 3, 1, pwait, prate, m, why, cap);
            if (can_grow(t, 1)) return try_knob(t, 1, 1, pwait, prate, m, why, cap);
            if (can_grow(t, 3)) return try_knob(t, 3, 1, pwait, prate, m, why, cap);
            if (can_grow(t, 0)) return try_knob(t, 0, 1, pwait, prate, m, why, cap);
        }
        // The windowers wait for a slot while the consumer waits for a
        // batch (the hand-over's latency), or keep up on average (their
        // jitter): a slot more lets them run ahead.
        if ((slots > 0.02 || window < 0.9 * step) && can_grow(t, 2)) return try_knob(t, 2, 1, pwait, prate, m, why, cap);
        if (!t->told_limit && s->window_busy / s->seconds > 0.8) {
            t->told_limit = true;
            snprintf(why, cap, "no change: the windowers limit (%s; more --lanes, or a core more)%s", m, t->note);
            t->note[0] = 0;
            return true;
        }
        return false;
    }
    // Idle: give back what sits unused, one thing a look, once the last
    // change has had three looks to show its effect.
    if (wait < TARGET / 5 && t->quiet >= 3) {
        int d = t->now.decoders;
        if (d > 1 && can_shrink(t, 0) && dbusy * d / (d - 1) < 0.6) return try_knob(t, 0, -1, pwait, prate, m, why, cap);
        if (slots > 0.3 && can_shrink(t, 2)) return try_knob(t, 2, -1, pwait, prate, m, why, cap);
        if (blocks < 0.001 && can_shrink(t, 1)) return try_knob(t, 1, -1, pwait, prate, m, why, cap);
        if (rbusy < 0.2 && can_shrink(t, 3)) return try_knob(t, 3, -1, pwait, prate, m, why, cap);
    }
    return false;
}
