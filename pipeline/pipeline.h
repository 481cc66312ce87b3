// pipeline: from an .sfpack file to batches of windows for every replica
// (docs/PIPELINE.md). This header grows stage by stage; today it holds the
// planner, which decides which windows exist, which blocks of chunks hold
// them, and which replica produces which windows in which epoch.
#ifndef SF_PIPELINE_H
#define SF_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "pack/pack.h"

// Window geometry, as keras.utils.timeseries_dataset_from_array: a window
// starting at row s holds rows s, s + sampling_rate, ..., s + (length - 1) *
// sampling_rate; its target is row s + (length - 1) * sampling_rate +
// horizon. Starts are stride rows apart, counted from each series' first row.
typedef struct {
    uint32_t length;         // rows per window, >= 1
    uint32_t stride;         // rows between window starts, >= 1
    uint32_t sampling_rate;  // rows between a window's samples, >= 1
    uint32_t horizon;        // target row past the last sample row, >= 0
} sf_window_spec;

// Rows a window spans from its start to its target, both included.
uint64_t sf_window_span(const sf_window_spec *w);

typedef struct sf_plan sf_plan;

// A plan over a file's rows: chunk_rows rows per chunk, series as in the
// file's series table; blocks of block_chunks consecutive chunks are the
// unit of shuffling and reading.
int sf_plan_create(sf_plan **out, uint64_t nrows, uint32_t chunk_rows, const sf_series *series, uint64_t nseries,
                   const sf_window_spec *w, uint32_t block_chunks, sf_err *e);
void sf_plan_free(sf_plan *p);

// Every valid window (one that fits in its series, target included) has an
// id; ids follow start rows, so the windows of one block are consecutive.
uint64_t sf_plan_windows(const sf_plan *p);
uint64_t sf_plan_window_start(const sf_plan *p, uint64_t id);  // first row
uint64_t sf_plan_blocks(const sf_plan *p);

// The windows that start in block b, and the rows they need: [row_lo,
// row_hi) starts in the block and may run into the next chunks (never past
// a series end).
typedef struct {
    uint64_t block;
    uint64_t first_window, end_window;  // ids [first, end)
    uint64_t row_lo, row_hi;
} sf_block_task;

sf_block_task sf_plan_block(const sf_plan *p, uint64_t b);

// The order of the blocks in an epoch: a permutation of 0..nblocks-1 from
// (seed, epoch), the same on every machine; another epoch, another order.
void sf_plan_epoch_order(const sf_plan *p, uint64_t seed, uint64_t epoch, uint64_t *order);

// Replica r of `replicas` produces the windows at positions [r * W / R,
// (r + 1) * W / R) of the epoch's sequence (the blocks in epoch order, each
// block's windows in id order): every window exactly once per epoch, and
// replica shares that differ by at most one window. A block on a share's
// edge is read by both replicas, each taking its own windows. Fills tasks
// (at most nblocks entries; first/end_window narrowed to the share) and
// returns how many, or a negative code.
int64_t sf_plan_shard(const sf_plan *p, const uint64_t *order, uint32_t replicas, uint32_t r, sf_block_task *tasks);

#endif
