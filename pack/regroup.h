// Private to pack/: rows of series whose rows interleave in the input,
// regrouped by series with bounded memory (pack/regroup.c). Rows are held
// up to a budget, sorted stably by series and spilled as runs to temporary
// files beside the output, then merged: each series' rows come out in the
// order they were added, the series in the order of their indices.
#ifndef SF_PACK_REGROUP_H
#define SF_PACK_REGROUP_H

#include <stdbool.h>
#include <stdint.h>

#include "pack.h"

#define SF_REGROUP_DEFAULT_BUDGET 64000000ull  // bytes: --memory-budget 64
#define SF_REGROUP_MIN_BUDGET 250000ull        // bytes: --memory-budget 0.25

typedef struct sf_regroup sf_regroup;

// The least budget for rows of ncols values (and a time): SF_REGROUP_MIN_BUDGET,
// or more for very wide rows (a run holds some rows, a merge some runs).
uint64_t sf_regroup_min_budget(uint32_t ncols, bool timed);

// near: the output path; the spill files are created beside it (where the
// writer's temporary file goes) and unlinked at once, so that nothing of
// them outlives the process, whatever ends it. budget: bytes for the rows
// held and the merge's buffers (at least sf_regroup_min_budget).
int sf_regroup_open(sf_regroup **out, const char *near, uint32_t ncols, bool timed, uint64_t budget, sf_err *e);

// The rows that came before any added: an open .sfpack whose series i holds
// rows of series map[i] (ascending), each row's imputed flags kept. The
// regrouper owns head and map from here on, also on failure.
int sf_regroup_head(sf_regroup *r, sf_pack *head, uint32_t *map, sf_err *e);

// Holds one row of series `series` (values: ncols floats; time ignored
// without one); a full buffer is sorted and spilled first.
int sf_regroup_add(sf_regroup *r, uint32_t series, const float *values, int64_t time, int64_t line, sf_err *e);

// Called for each row, series by series in ascending index, each series'
// rows in the order they came (the head's first). imputed: ncols flags, or
// NULL when none was imputed. A nonzero return stops the merge and is
// returned (the callback fills its own error).
typedef int (*sf_regroup_emit)(void *arg, uint32_t series, const float *values, int64_t time, int64_t line,
                               const uint8_t *imputed);

// Merges every row into emit; call once, after the last add.
int sf_regroup_merge(sf_regroup *r, sf_regroup_emit emit, void *arg, sf_err *e);

// Runs the held rows were spilled as, the merge's passes over them (0: every
// row fitted in the budget), and the bytes written to spill files.
uint64_t sf_regroup_runs(const sf_regroup *r);
uint64_t sf_regroup_passes(const sf_regroup *r);
uint64_t sf_regroup_spilled(const sf_regroup *r);

// Frees r and closes (so removes) its spill files.
void sf_regroup_free(sf_regroup *r);

#endif
