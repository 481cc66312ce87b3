// The planner: arithmetic over the series table, nothing is read. Windows
// are numbered by start row, so "windows before row x" answers every
// question about blocks, and a binary search over the series answers it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"

__extension__ typedef unsigned __int128 u128;  // products of two 64-bit counts

struct sf_plan {
    sf_window_spec w;
    uint64_t span, nrows, block_rows, nblocks, nseries;
    uint64_t *first;   // first row of each series, then nrows
    uint64_t *lo;      // start row of each series' first window in its split part
    uint64_t *before;  // windows in the series before each, then the total
};

uint64_t sf_window_span(const sf_window_spec *w) {
    return (uint64_t)(w->length - 1) * w->sampling_rate + w->horizon + 1;
}

uint32_t sf_window_steps(const sf_window_spec *w) { return w->steps > 1 ? w->steps : 1; }

void sf_window_horizon_text(const sf_window_spec *w, char *buf, size_t cap) {
    uint32_t steps = sf_window_steps(w);
    if (steps > 1) snprintf(buf, cap, "%u-%u", w->horizon - (steps - 1), w->horizon);
    else snprintf(buf, cap, "%u", w->horizon);
}

// Windows in a part of rows: one every stride rows whose span fits.
static uint64_t part_windows(uint64_t rows, uint64_t span, uint32_t stride) {
    return rows >= span ? (rows - span) / stride + 1 : 0;
}

// The windows of split's part of one series: how many, and the first one's
// start row in *start. A training (or whole) window lies wholly in its
// part. A validation window is placed by its target, so that the rows
// validated do not depend on the window: every stride-th row of the
// validation part from its first is a target, and its window's inputs may
// reach back into the training part (never its target); one that would
// start before the series' first row is left out. With several steps, lead
// is steps - 1: the first step's row is a validation row too.
static uint64_t series_windows(const sf_series *s, const sf_split *split, uint64_t span, uint32_t lead,
                               uint32_t stride, uint64_t *start) {
    sf_series part;
    sf_split_rows(s, 1, split, &part);
    *start = part.first_row;
    if (!split || split->part != SF_PART_VALIDATION) return part_windows(part.rows, span, stride);
    uint64_t hi = part.first_row + part.rows, target = part.first_row + lead;
    if (span > s->rows) return 0;  // and no sum below can overflow
    uint64_t need = s->first_row + span - 1;  // the first target whose window starts in the series
    if (target < need) target += (need - target + stride - 1) / stride * stride;
    if (target >= hi) return 0;
    *start = target - (span - 1);
    return (hi - 1 - target) / stride + 1;
}

uint64_t sf_plan_count(const sf_series *series, uint64_t nseries, const sf_window_spec *w, const sf_split *split) {
    uint64_t span = sf_window_span(w), n = 0, start;
    for (uint64_t i = 0; w->stride && i < nseries; i++) n += series_windows(series + i, split, span, sf_window_steps(w) - 1, w->stride, &start);
    return n;
}

uint64_t sf_split_longest(const sf_series *series, uint64_t nseries, uint32_t stride, const sf_split *split) {
    uint64_t most = 0;
    for (uint64_t i = 0; i < nseries; i++) {
        sf_series part;
        sf_split_rows(series + i, 1, split, &part);
        uint64_t rows = part.rows;
        if (split && split->part == SF_PART_VALIDATION && part.rows > 0 && stride > 0)
            // From the series' first row to the last target row stride allows.
            rows = part.first_row + (part.rows - 1) / stride * stride - series[i].first_row + 1;
        most = rows > most ? rows : most;
    }
    return most;
}

void sf_window_shrinkers(const sf_window_spec *w, bool count, bool python, char *buf, size_t cap) {
    const struct {
        bool above;
        const char *name, *flag;
    } opt[] = {{w->length > 1, "window", "--window"},
               {w->sampling_rate > 1, "sampling_rate", "--sampling-rate"},
               {w->horizon > 1, "horizon", "--horizon"},
               {count && w->stride > 1, "stride", "--stride"}};
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof opt / sizeof opt[0] && n < cap; i++) {
        if (!opt[i].above) continue;
        int k = python ? snprintf(buf + n, cap - n, ", %s (%s)", opt[i].name, opt[i].flag)
                       : snprintf(buf + n, cap - n, ", %s", opt[i].flag);
        n += k > 0 ? (size_t)k : 0;
    }
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
    if (split && split->folds && !(split->folds >= 2 && split->folds <= SF_MAX_FOLDS && split->fold >= 1 &&
                                   split->fold <= split->folds))
        return sf_err_set(e, SF_EINVAL, "fold %u of %u: expected 1 to %u folds of 2 to %u", split->fold, split->folds,
                          split->folds, SF_MAX_FOLDS);
    if (w->length == 0 || w->stride == 0 || w->sampling_rate == 0)
        return sf_err_set(e, SF_EINVAL, "window length, stride and sampling rate must be at least 1 (got %u, %u, %u)",
                          w->length, w->stride, w->sampling_rate);
    if (sf_window_steps(w) > 1 && (w->steps > w->horizon || w->steps > SF_MAX_STEPS))
        return sf_err_set(e, SF_EINVAL, "%u steps ending at horizon %u: expected 1 to %u steps, the first at least 1 row "
                          "past the window", w->steps, w->horizon, SF_MAX_STEPS);
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
        p->first[i] = row;
        p->before[i] = windows;
        windows += series_windows(series + i, split, p->span, sf_window_steps(w) - 1, w->stride, &p->lo[i]);
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

// The series of split->whole that holds row (they are in row order), else NULL.
static const sf_series *whole_of(const sf_split *split, uint64_t row) {
    uint64_t lo = 0, hi = split->nwhole;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (split->whole[mid].first_row + split->whole[mid].rows <= row) lo = mid + 1;
        else hi = mid;
    }
    return lo < split->nwhole && split->whole[lo].first_row <= row ? &split->whole[lo] : NULL;
}

// A fold's part of [lo, hi), the rows of a series or of a segment of one.
static void fold_part(const sf_series *s, const sf_split *split, uint64_t *lo, uint64_t *hi) {
    const sf_series *w = split->whole ? whole_of(split, s->first_row) : s;
    if (!w) w = s;
    uint64_t t = w->rows / (split->folds + 1);
    if (t == 0) {  // too short to cut: in no fold's parts, rather than in every fold's training
        *hi = *lo;
        return;
    }
    uint64_t vlo = w->first_row + w->rows - (uint64_t)(split->folds - split->fold + 1) * t, vhi = vlo + t;
    uint64_t a = split->part == SF_PART_TRAIN ? *lo : vlo, b = split->part == SF_PART_TRAIN ? vlo : vhi;
    a = a > *lo ? a : *lo, b = b < *hi ? b : *hi;
    a = a < *hi ? a : *hi;
    *lo = a, *hi = b > a ? b : a;
}

void sf_split_rows(const sf_series *series, uint64_t nseries, const sf_split *split, sf_series *out) {
    for (uint64_t i = 0; i < nseries; i++) {
        uint64_t lo = series[i].first_row, hi = lo + series[i].rows;
        if (split && split->part != SF_PART_ALL && split->folds) {
            fold_part(series + i, split, &lo, &hi);
        } else if (split && split->part != SF_PART_ALL) {
            uint64_t cut = hi - (uint64_t)((double)series[i].rows * split->fraction);
            if (split->part == SF_PART_TRAIN) hi = cut;
            else lo = cut;
        }
        out[i] = (sf_series){.first_row = lo, .rows = hi - lo, .name = series[i].name};
    }
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
    sf_block_task t = {.block = b, .first_window = first, .end_window = end, .seam_window = end,
                       .row_lo = b * p->block_rows, .row_hi = b * p->block_rows};
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

void sf_plan_block_rows(const sf_plan *p, uint64_t b, uint64_t *lo, uint64_t *hi) {
    *lo = b * p->block_rows;
    *hi = *lo + p->block_rows < p->nrows ? *lo + p->block_rows : p->nrows;
}

// The last row (exclusive) windows [first, end) need; first < end.
static uint64_t rows_end(const sf_plan *p, uint64_t first, uint64_t end) {
    (void)first;
    return sf_plan_window_start(p, end - 1) + p->span;
}

// The shard's part of block b: windows [f, e), and where its seam starts
// (the first window that needs a row past the block's last).
static sf_block_task shard_part(const sf_plan *p, uint64_t b, uint64_t f, uint64_t e) {
    uint64_t lo, hi;
    sf_plan_block_rows(p, b, &lo, &hi);
    uint64_t seam = hi >= p->span - 1 ? windows_before(p, hi - p->span + 1) : 0;
    seam = seam < f ? f : seam > e ? e : seam;
    return (sf_block_task){.block = b, .first_window = f, .end_window = e, .seam_window = seam};
}

// Whether block b's seam can be shared with the next block's task: it has
// seam windows, and their rows end inside the next block.
static bool shareable(const sf_plan *p, const sf_block_task *t) {
    if (t->seam_window == t->end_window) return false;
    uint64_t lo, hi;
    sf_plan_block_rows(p, t->block + 1, &lo, &hi);
    return rows_end(p, t->seam_window, t->end_window) <= hi;
}

// Each task's seam modes, in the shard's order: a seam is cut with the
// later of its two blocks; the earlier keeps its edge rows for it while at
// most max_edges are kept at once, else the later reads them again. pos:
// where each block's task is in the order (-1: none), block b0 + j at j.
static void plan_seams(const sf_plan *p, sf_block_task *t, int64_t n, const int64_t *pos, uint64_t b0, uint64_t nb,
                       uint64_t max_edges, bool *kept) {
    uint64_t open = 0;
    for (int64_t i = 0; i < n; i++) {
        sf_block_task *k = &t[i];
        uint64_t j = k->block - b0, lo, hi;
        sf_plan_block_rows(p, k->block, &lo, &hi);
        k->prev = SF_SEAM_NONE, k->next = SF_SEAM_NONE;
        k->row_lo = sf_plan_window_start(p, k->first_window);
        k->row_hi = k->seam_window > k->first_window ? rows_end(p, k->first_window, k->seam_window) : k->row_lo + 1;
        // The previous block's seam (boundary j - 1).
        const sf_block_task *q = j > 0 && pos[j - 1] >= 0 ? &t[pos[j - 1]] : NULL;
        if (q && shareable(p, q)) {
            k->prev_first = q->seam_window, k->prev_end = q->end_window;
            uint64_t head = rows_end(p, q->seam_window, q->end_window);
            if (pos[j - 1] < i) {
                k->prev = kept[j - 1] ? SF_SEAM_TAKE : SF_SEAM_READ;
                if (kept[j - 1]) kept[j - 1] = false, open--;
            } else if (open < max_edges) {
                k->prev = SF_SEAM_KEEP, kept[j - 1] = true, open++;
            }
            if (k->prev == SF_SEAM_READ) k->row_lo = sf_plan_window_start(p, q->seam_window);
            else if (k->prev != SF_SEAM_NONE) k->row_lo = lo;
            if (k->prev != SF_SEAM_NONE && head > k->row_hi) k->row_hi = head;
        }
        // Its own seam (boundary j).
        if (k->seam_window < k->end_window) {
            uint64_t head = rows_end(p, k->seam_window, k->end_window);
            bool next = j + 1 < nb && pos[j + 1] >= 0 && shareable(p, k);
            if (!next) k->next = SF_SEAM_READ;
            else if (pos[j + 1] < i) k->next = kept[j] ? SF_SEAM_TAKE : SF_SEAM_READ;
            else if (open < max_edges) k->next = SF_SEAM_KEEP;  // else the next task reads this edge again
            if (k->next == SF_SEAM_TAKE) kept[j] = false, open--;
            if (k->next == SF_SEAM_KEEP) kept[j] = true, open++;
            if (k->next == SF_SEAM_READ && head > k->row_hi) k->row_hi = head;
            if ((k->next == SF_SEAM_KEEP || k->next == SF_SEAM_TAKE) && hi > k->row_hi) k->row_hi = hi;
        }
    }
}

int64_t sf_plan_shard(const sf_plan *p, uint64_t seed, uint64_t epoch, uint32_t shards, uint32_t r, uint64_t max_edges,
                      sf_block_task *tasks) {
    if (shards == 0 || r >= shards) return SF_EINVAL;
    u128 total = sf_plan_windows(p);
    uint64_t first = (uint64_t)(total * r / shards), end = (uint64_t)(total * (r + 1) / shards);
    if (first == end) return 0;
    uint64_t b0 = sf_plan_window_start(p, first) / p->block_rows;
    uint64_t nb = sf_plan_window_start(p, end - 1) / p->block_rows - b0 + 1;
    sf_block_task *parts = malloc(nb * sizeof *parts);
    int64_t *pos = malloc(nb * sizeof *pos);
    bool *kept = calloc(nb, sizeof *kept);
    if (!parts || !pos || !kept) {
        free(parts), free(pos), free(kept);
        return SF_ENOMEM;
    }
    int64_t n = 0;
    for (uint64_t j = 0; j < nb; j++) {
        sf_block_task full = sf_plan_block(p, b0 + j);
        uint64_t f = full.first_window > first ? full.first_window : first;
        uint64_t e = full.end_window < end ? full.end_window : end;
        pos[j] = -1;
        if (f < e) parts[n++] = shard_part(p, b0 + j, f, e);
    }
    // This epoch's order of the shard's blocks: Fisher-Yates from (seed,
    // epoch, shard); the multiply-shift index is biased by at most n / 2^64.
    uint64_t s = seed ^ sf_splitmix64(&(uint64_t){epoch * 0x100000001b3ull + r + 1});
    for (int64_t i = 0; i < n; i++) tasks[i] = parts[i];
    for (int64_t i = n; i > 1; i--) {
        uint64_t k = (uint64_t)(((u128)sf_splitmix64(&s) * (uint64_t)i) >> 64);
        sf_block_task x = tasks[i - 1];
        tasks[i - 1] = tasks[k];
        tasks[k] = x;
    }
    for (int64_t i = 0; i < n; i++) pos[tasks[i].block - b0] = i;
    plan_seams(p, tasks, n, pos, b0, nb, max_edges, kept);
    free(parts), free(pos), free(kept);
    return n;
}
