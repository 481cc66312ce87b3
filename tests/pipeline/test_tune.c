// The controller of --pipeline auto on made-up intervals (tune.c): the
// first look sizes decoders and reads from the measured costs with the
// margin; a late block with busy decoders grows the decoders; a grow that
// costs rate goes back and is not tried again; a grown buffer that neither
// lowers the wait nor lifts the rate goes back, one that lifts it stays; an idle pipeline gives back
// what it does not use, but never into a value the consumer waited with; caps and fixed knobs are never passed; a step
// that changes for good starts a new search, a single slow look does not.
#include <string.h>

#include "pipeline/internal.h"
#include "tests/common.h"

static sf_tune_sample interval(double wait, uint64_t batches, double window, double blocks, double slots,
                               double decode, double read) {
    return (sf_tune_sample){.seconds = 0.1, .batches = batches, .consumer_wait = wait * 0.1, .window_busy = window,
                            .window_in = blocks * 0.1, .window_out = slots * 0.1, .decode_busy = decode,
                            .read_busy = read};
}

int main(void) {
    char why[320];
    sf_pipe_knobs cap = {4, 8, 8, 8}, start = {1, 2, 2, 2};
    sf_tuner t;
    sf_tuner_init(&t, start, cap, 0);
    // 2 ms steps (50 batches in 0.1 s), decoding 3 ms a batch: 2 decoders
    // at 1.25 x; reads 0.5 ms a batch: 1 + 1 in flight, the least 2.
    sf_tune_sample s = interval(0, 50, 0.01, 0, 0.9, 0.150, 0.025);
    CHECK(sf_tuner_look(&t, &s, why, sizeof why) && t.now.decoders == 2 && t.now.depth == 2,
          "first look: decoders %u depth %u (%s)", t.now.decoders, t.now.depth, why);
    CHECK(strstr(why, "decode 3.00 ms") && strstr(why, "x1.25"), "first line: %s", why);
    // Blocks late (windowers waiting for them), decoders 90% busy: grow them.
    s = interval(0.05, 48, 0.01, 0.3, 0, 0.18, 0.02);
    CHECK(sf_tuner_look(&t, &s, why, sizeof why) && t.now.decoders == 4 && strstr(why, "decoders 2 -> 4"),
          "late blocks, busy decoders: %s", why);
    // The rate fell by a fifth and the wait stayed, two looks (one is not
    // enough to judge): back to 2, and never 4 again.
    s = interval(0.05, 38, 0.01, 0.3, 0, 0.18, 0.02);
    CHECK(!sf_tuner_look(&t, &s, why, sizeof why) && t.now.decoders == 4, "a grow judged on one look: %s", why);
    CHECK(sf_tuner_look(&t, &s, why, sizeof why) && t.now.decoders == 2 && strstr(why, "no gain") && t.hi.decoders == 2,
          "a grow that cost rate stayed: decoders %u, hi %u (%s)", t.now.decoders, t.hi.decoders, why);
    // Still late, decoders capped by what was learned: prefetch grows.
    s = interval(0.05, 48, 0.01, 0.3, 0, 0.18, 0.02);
    CHECK(sf_tuner_look(&t, &s, why, sizeof why) && t.now.prefetch == 4 && t.now.decoders == 2,
          "then prefetch: %u (%s)", t.now.prefetch, why);
    // Fine now: kept; then idle looks give back one thing each, after three quiet looks.
    int changes = 0;
    for (int k = 0; k < 40; k++) {
        s = interval(0, 50, 0.01, 0, 0.9, 0.01, 0.005);
        changes += sf_tuner_look(&t, &s, why, sizeof why);
        CHECK(t.now.decoders >= 1 && t.now.decoders <= cap.decoders && t.now.slots >= 2 && t.now.slots <= cap.slots &&
              t.now.prefetch >= 2 && t.now.prefetch <= cap.prefetch && t.now.depth >= 2 && t.now.depth <= cap.depth,
              "knobs outside their range: %u %u %u %u", t.now.decoders, t.now.prefetch, t.now.slots, t.now.depth);
    }
    // The consumer waited with 2 decoders and with 2 blocks: neither goes
    // back there (prefetch 4 -> 3 only).
    CHECK(t.now.decoders == 2 && t.now.prefetch == 3 && t.now.slots == 2 && t.now.depth == 2 && changes == 1,
          "idle: %u %u %u %u after %d changes", t.now.decoders,
          t.now.prefetch, t.now.slots, t.now.depth, changes);
    // The consumer waits for a batch while the windowers wait for a slot: a slot more.
    s = interval(0.03, 48, 0.01, 0, 0.4, 0.01, 0.005);
    CHECK(sf_tuner_look(&t, &s, why, sizeof why) && t.now.slots == 4, "hand-over: slots %u (%s)", t.now.slots, why);
    // Started large and never waiting: down to the least, one a look.
    sf_tuner_init(&t, cap, cap, 0);
    for (int k = 0; k < 60; k++) {
        s = interval(0, 50, 0.01, 0, 0.9, 0.01, 0.005);
        sf_tuner_look(&t, &s, why, sizeof why);
    }
    CHECK(t.now.decoders == 1 && t.now.prefetch == 2 && t.now.slots == 2 && t.now.depth == 2,
          "idle from the caps: %u %u %u %u", t.now.decoders, t.now.prefetch, t.now.slots, t.now.depth);
    // One slow look (a stall of the machine's) starts no new search; five at half the step do.
    sf_tuner_init(&t, start, cap, 0);
    s = interval(0, 50, 0.01, 0, 0.9, 0.01, 0.005);
    sf_tuner_look(&t, &s, why, sizeof why);
    double step0 = t.step0;
    for (int k = 0; k < 4; k++) sf_tuner_look(&t, &s, why, sizeof why);
    sf_tune_sample slow = interval(0, 10, 0.01, 0, 0.9, 0.01, 0.005);
    sf_tuner_look(&t, &slow, why, sizeof why);
    CHECK(t.step0 == step0, "one slow look moved the step from %g to %g", step0, t.step0);
    sf_tune_sample fast = interval(0, 100, 0.01, 0, 0.9, 0.01, 0.005);
    for (int k = 0; k < 5; k++) sf_tuner_look(&t, &fast, why, sizeof why);
    CHECK(t.step0 < 0.6 * step0, "a step halved for good: %g, was %g", t.step0, step0);
    // An unpaced consumer (it always waits) on a saturated core, the
    // windowers waiting a little for slots: a slot more is tried, and
    // judged over two looks by the rate, the wait telling nothing. The
    // same rate: no gain, back to 2 and never 4 again in this search.
    sf_tuner_init(&t, start, (sf_pipe_knobs){1, 8, 8, 8}, 0);
    sf_tune_sample busy = interval(0.99, 400, 0.09, 0, 0.04, 0.01, 0.005);
    sf_tuner_look(&t, &busy, why, sizeof why);
    sf_tuner_look(&t, &busy, why, sizeof why);
    CHECK(t.now.slots == 4 && strstr(why, "slots 2 -> 4"), "unpaced, windowers waiting for slots: %s", why);
    busy.window_out = 0;
    CHECK(!sf_tuner_look(&t, &busy, why, sizeof why) && t.now.slots == 4, "a grown slot judged on one look: %s", why);
    CHECK(sf_tuner_look(&t, &busy, why, sizeof why) && t.now.slots == 2 && t.hi.slots == 2 && strstr(why, "no gain"),
          "a slot that gained nothing stayed: slots %u, hi %u (%s)", t.now.slots, t.hi.slots, why);
    busy.window_out = 0.004;
    for (int k = 0; k < 5; k++) sf_tuner_look(&t, &busy, why, sizeof why);
    CHECK(t.now.slots == 2, "slots tried again after no gain: %u", t.now.slots);
    // A slot that lifts the rate by a fifth stays.
    sf_tuner_init(&t, start, (sf_pipe_knobs){1, 8, 8, 8}, 0);
    busy = interval(0.99, 400, 0.09, 0, 0.04, 0.01, 0.005);
    sf_tuner_look(&t, &busy, why, sizeof why);
    sf_tuner_look(&t, &busy, why, sizeof why);
    sf_tune_sample faster = interval(0.99, 480, 0.09, 0, 0, 0.01, 0.005);
    sf_tuner_look(&t, &faster, why, sizeof why);
    sf_tuner_look(&t, &faster, why, sizeof why);
    CHECK(t.now.slots == 4 && t.trial < 0, "a slot that paid went back: slots %u (%s)", t.now.slots, why);
    // Fixed knobs never move, whatever the intervals say.
    sf_pipe_knobs fixed_start = {3, 2, 5, 2};
    sf_tuner_init(&t, fixed_start, (sf_pipe_knobs){3, 8, 5, 8}, SF_KNOB_DECODERS | SF_KNOB_SLOTS);
    for (int k = 0; k < 30; k++) {
        s = k % 2 ? interval(0.2, 30, 0.01, 0.3, 0.3, 0.3, 0.09) : interval(0, 50, 0.01, 0, 0.9, 0, 0);
        sf_tuner_look(&t, &s, why, sizeof why);
        CHECK(t.now.decoders == 3 && t.now.slots == 5, "fixed knobs moved: decoders %u slots %u", t.now.decoders,
              t.now.slots);
    }
    return TEST_EXIT();
}
