// What the pipeline's files share and nobody else sees.
#ifndef SF_PIPELINE_INTERNAL_H
#define SF_PIPELINE_INTERNAL_H

#include "pipeline.h"

// A lane's staging ring: slots of one buffer each, x then y (y on a 256-byte
// boundary, as device allocations are), with the batch's window ids, count
// and epoch, and where its device copy lands when the ring has stage hooks.
// A slot is free (its windower may fill it), ready (filled, its copy
// started) or taken (its consumer reads it). The indices and states belong
// to the pipe's lock; the buffers to whoever the state says.
enum sf_slot_state { SF_SLOT_FREE, SF_SLOT_READY, SF_SLOT_TAKEN };
typedef struct {
    uint32_t slots;
    void **buf, **device, **ready;
    uint64_t **ids;
    uint32_t *count;
    uint64_t *epoch;
    enum sf_slot_state *state;
    size_t y_offset, bytes;        // of y in a slot, and of the slot
    const sf_stage_ops *stage;     // NULL: host memory only
    uint32_t stage_r, stage_s0;    // the replica, and this ring's first slot among its lanes'
} sf_ring;

// Slots for batches of up to batch windows of x_len and y_len floats each;
// with stage, slots stage_s0 .. stage_s0 + slots - 1 of replica stage_r.
// Returns 0 or SF_ENOMEM; sf_ring_close frees what was allocated either way.
int sf_ring_open(sf_ring *g, uint32_t slots, uint32_t batch, size_t x_len, size_t y_len, const sf_stage_ops *stage,
                 uint32_t stage_r, uint32_t stage_s0);
void sf_ring_close(sf_ring *g);
// Before slot k is refilled: its last copy must have read the host memory.
int sf_ring_reclaim(sf_ring *g, uint32_t k, sf_err *e);
// Slot k is filled: its device copy starts.
int sf_ring_publish(sf_ring *g, uint32_t k, sf_err *e);
// Slot k as its consumer sees it, for lane `lane`.
sf_batch sf_ring_batch(const sf_ring *g, uint32_t k, uint32_t lane);
// The consumer is done with slot k (its device copy may be overwritten once
// its queued work is).
void sf_ring_release(sf_ring *g, uint32_t k);
static inline float *sf_ring_x(const sf_ring *g, uint32_t k) { return (float *)g->buf[k]; }
static inline float *sf_ring_y(const sf_ring *g, uint32_t k) { return (float *)((char *)g->buf[k] + g->y_offset); }

// ---- the controller of --pipeline auto (tune.c) ----

// One interval as the controller sees it (the pipe's counters' growth).
typedef struct {
    double seconds;                             // the interval
    uint64_t batches;                           // replica 0's
    double consumer_wait;                       // replica 0's, waiting for a batch
    double window_busy, window_in, window_out;  // the busiest windower's: cutting, waiting for blocks, for slots
    double decode_busy, read_busy;              // summed over the decoders; the reader's
} sf_tune_sample;

// Knob i of k (0 decoders, 1 prefetch, 2 slots, 3 depth: SF_KNOB_* is 1 << i).
enum { SF_KNOBS = 4 };
uint32_t *sf_knob(sf_pipe_knobs *k, int i);
uint32_t sf_knob_get(const sf_pipe_knobs *k, int i);
const char *sf_knob_name(int i);
// The least value of knob i: 1 decoder, 2 of the others (a block read
// while one is cut, a slot filled while one is consumed), or its cap when
// that is lower.
uint32_t sf_knob_least(int i, uint32_t cap);

typedef struct {
    sf_pipe_knobs now, cap;
    sf_pipe_knobs lo, hi;    // what this search learned: no less, no more
    uint32_t fixed;
    int trial, trial_dir;    // the knob changed at the last look (-1: none), +1 grown, -1 shrunk
    uint32_t before;         // its value before
    double trial_wait, trial_rate;  // the consumer's before the trial (over the looks since the change before)
    double phase_seconds, phase_wait;  // since the last change: the looks' time, the consumer's wait in it
    uint64_t phase_batches;
    double step0;            // the consumer's step when this search began (0: no look yet)
    uint32_t quiet;          // looks since the last change
    bool told_limit;         // the windowers' limit was said in this search
    double steps[5];         // the last looks' steps, for their median
    uint32_t nsteps;
    char note[96];           // for the next change's line: why a new search began
} sf_tuner;

void sf_tuner_init(sf_tuner *t, sf_pipe_knobs start, sf_pipe_knobs cap, uint32_t fixed);
// One look: true when the knobs changed or the search began anew, with the
// line that says so in why.
bool sf_tuner_look(sf_tuner *t, const sf_tune_sample *s, char *why, size_t cap);

#endif
