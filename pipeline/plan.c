// The planner: arithmetic over the series table, nothing is read. Windows
// are numbered by start row, so "windows before row x" answers every
// question about blocks, and a binary search over the series answers it.
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"

__extension__ typedef unsigned __int128 u128;  // products of two 64-bit counts

struct sf_plan {
    sf_window_spec w;
    uint64_t span, nrows, block_rows, nblocks, nseries;
    uint64_t *first;   // first row of each series, then nrows
    uint64_t *lo;      // first row a window of each series may start at (its split part)
    uint64_t *before;  // windows in the series before each, then the total
};

uint64_t sf_window_span(const sf_window_spec *w) {
    return (uint64_t)(w->length - 1) * w->sampling_rate + w->horizon + 1;
}

void sf_plan_free(sf_plan *p) {
    if (!p) return;
    free(p->first);
    free(p->lo);
    free(p->before);
    free(p);
}

int sf_plan_create(sf_plan **out, uint64_t nrows, uint32_t chunk_rows, const sf_series *series, uint64_t nseries,
                   const sf_window_spec *w, uint32_t block_chunks, const sf_split *split, sf_err *e) {
    *out = NULL;
    if (split && split->part != SF_PART_ALL && !(split->fraction >= 0 && split->fraction < 1))
        return sf_err_set(e, SF_EINVAL, "validation split %g: expected 0 <= split < 1", split->fraction);
    if (w->length == 0 || w->stride == 0 || w->sampling_rate == 0)
        return sf_err_set(e, SF_EINVAL, "window length, stride and sampling rate must be at least 1 (got %u, %u, %u)",
                          w->length, w->stride, w->sampling_rate);
    if (chunk_rows == 0 || block_chunks == 0 || nseries == 0)
        return sf_err_set(e, SF_EINVAL, "a plan needs chunks, blocks and series (got %u, %u, %llu)", chunk_rows,
                          block_chunks, (unsigned long long)nseries);
    sf_plan *p = calloc(1, sizeof *p);
    if (!p) return sf_err_set(e, SF_ENOMEM, "out of memory");
    p->w = *w;
    p->span = sf_window_span(w);
    p->nrows = nrows;
    p->block_rows = (uint64_t)block_chunks * chunk_rows;
    p->nblocks = (nrows + p->block_rows - 1) / p->block_rows;
    p->nseries = nseries;
    p->first = malloc((nseries + 1) * sizeof *p->first);
    p->lo = malloc((nseries + 1) * sizeof *p->lo);
    p->before = malloc((nseries + 1) * sizeof *p->before);
    if (!p->first || !p->lo || !p->before) {
        sf_plan_free(p);
        return sf_err_set(e, SF_ENOMEM, "out of memory for %llu series", (unsigned long long)nseries);
    }
    uint64_t row = 0, windows = 0;
    for (uint64_t i = 0; i < nseries; i++) {
        if (series[i].first_row != row || series[i].rows == 0 || series[i].rows > nrows - row) {
            sf_plan_free(p);
            return sf_err_set(e, SF_EINVAL, "series %llu (rows %llu+%llu) does not follow row %llu",
                              (unsigned long long)i, (unsigned long long)series[i].first_row,
                              (unsigned long long)series[i].rows, (unsigned long long)row);
        }
        // The part's rows [lo, hi) of the series.
        uint64_t lo = row, hi = row + series[i].rows;
        if (split && split->part != SF_PART_ALL) {
            uint64_t cut = hi - (uint64_t)((double)series[i].rows * split->fraction);
            if (split->part == SF_PART_TRAIN) hi = cut;
            else lo = cut;
        }
        p->first[i] = row;
        p->lo[i] = lo;
        p->before[i] = windows;
        if (hi - lo >= p->span) windows += (hi - lo - p->span) / w->stride + 1;
        row += series[i].rows;
    }
    if (row != nrows) {
        sf_plan_free(p);
        return sf_err_set(e, SF_EINVAL, "series cover %llu of %llu rows", (unsigned long long)row,
                          (unsigned long long)nrows);
    }
    p->first[nseries] = nrows;
    p->before[nseries] = windows;
    *out = p;
    return 0;
}

uint64_t sf_plan_windows(const sf_plan *p) { return p->before[p->nseries]; }
uint64_t sf_plan_blocks(const sf_plan *p) { return p->nblocks; }
const sf_window_spec *sf_plan_spec(const sf_plan *p) { return &p->w; }

// Index of the last entry of a[0, n] that is <= x (a[0] <= x).
static uint64_t last_at_most(const uint64_t *a, uint64_t n, uint64_t x) {
    uint64_t lo = 0, hi = n;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2;
        if (a[mid] <= x) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

// Windows that start before row (row <= nrows).
static uint64_t windows_before(const sf_plan *p, uint64_t row) {
    uint64_t i = last_at_most(p->first, p->nseries, row);
    if (i == p->nseries) return p->before[i];
    uint64_t in_series = p->before[i + 1] - p->before[i];
    uint64_t started = row > p->lo[i] ? (row - p->lo[i] + p->w.stride - 1) / p->w.stride : 0;
    return p->before[i] + (started < in_series ? started : in_series);
}

uint64_t sf_plan_window_start(const sf_plan *p, uint64_t id) {
    // The last series with before <= id holds it: a series without windows
    // has the same `before` as the next one, so it is never the last.
    uint64_t i = last_at_most(p->before, p->nseries - 1, id);
    return p->lo[i] + (id - p->before[i]) * p->w.stride;
}

static sf_block_task task_for(const sf_plan *p, uint64_t b, uint64_t first, uint64_t end) {
    sf_block_task t = {b, first, end, b * p->block_rows, b * p->block_rows};
    if (first < end) {
        t.row_lo = sf_plan_window_start(p, first);
        t.row_hi = sf_plan_window_start(p, end - 1) + p->span;
    }
    return t;
}

sf_block_task sf_plan_block(const sf_plan *p, uint64_t b) {
    uint64_t lo = b * p->block_rows, hi = lo + p->block_rows < p->nrows ? lo + p->block_rows : p->nrows;
    return task_for(p, b, windows_before(p, lo), windows_before(p, hi));
}

void sf_plan_epoch_order(const sf_plan *p, uint64_t seed, uint64_t epoch, uint64_t *order) {
    uint64_t s = seed ^ sf_splitmix64(&(uint64_t){epoch});
    for (uint64_t i = 0; i < p->nblocks; i++) order[i] = i;
    // Fisher-Yates; the multiply-shift index is biased by at most n / 2^64.
    for (uint64_t i = p->nblocks; i > 1; i--) {
        uint64_t j = (uint64_t)(((u128)sf_splitmix64(&s) * i) >> 64);
        uint64_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
}

int64_t sf_plan_shard(const sf_plan *p, const uint64_t *order, uint32_t replicas, uint32_t r, sf_block_task *tasks) {
    if (replicas == 0 || r >= replicas) return SF_EINVAL;
    u128 total = sf_plan_windows(p);
    uint64_t lo = (uint64_t)(total * r / replicas), hi = (uint64_t)(total * (r + 1) / replicas), pos = 0;
    int64_t n = 0;
    for (uint64_t k = 0; k < p->nblocks && pos < hi; k++) {
        sf_block_task b = sf_plan_block(p, order[k]);
        uint64_t count = b.end_window - b.first_window;
        uint64_t from = lo > pos ? lo : pos, to = hi < pos + count ? hi : pos + count;
        if (from < to) tasks[n++] = task_for(p, b.block, b.first_window + (from - pos), b.first_window + (to - pos));
        pos += count;
    }
    return n;
}
