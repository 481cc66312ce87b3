// Numeric series ids packed as one series: a column of few integers, each
// in one long run of rows (mote 1, 1, ..., 2, 2, ...), where the time goes
// back, or without a time column a counter restarts, exactly where the
// column changes. A column of calendar integers (a month, an hour) has long
// runs too, but the time rises across them; that is why the evidence is
// needed and the runs alone say nothing.
#include "internal.h"

#include <stdbool.h>
#include <stdlib.h>

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

// The runs of column v: how many (0 when v is not ids: a value comes back,
// a run other than the last is short, too many or only one value).
static uint32_t id_runs(const int64_t *v, uint64_t n, int64_t *vals) {
    uint32_t runs = 0;
    uint64_t start = 0;
    for (uint64_t r = 0; r <= n; r++) {
        if (r > 0 && r < n && v[r] == v[r - 1]) continue;
        if (r > 0 && r < n && r - start < SF_HINT_MIN_RUN) return 0;  // a complete run, too short
        if (r == n) break;
        if (runs == SF_HINT_MAX_IDS) return 0;
        vals[runs++] = v[r];
        start = r;
    }
    if (runs < 2) return 0;
    qsort(vals, runs, sizeof *vals, cmp_i64);
    for (uint32_t i = 1; i < runs; i++)
        if (vals[i] == vals[i - 1]) return 0;  // a value that comes back: not one run per series
    return runs;
}

// The first row where the time goes back, when it goes back only where id
// changes; 0 when it never does, or also inside a run.
static uint64_t time_back(const int64_t *id, const int64_t *t, uint64_t n) {
    uint64_t first = 0;
    for (uint64_t r = 1; r < n; r++) {
        if (t[r] >= t[r - 1]) continue;
        if (id[r] == id[r - 1]) return 0;
        if (!first) first = r;
    }
    return first;
}

// The first change of id, when c rises in every run of id and restarts at
// every change (drops to the value the run before began with, or below);
// 0 when it does not.
static uint64_t counter_restarts(const int64_t *id, const int64_t *c, uint64_t n) {
    uint64_t first = 0, start = 0;
    for (uint64_t r = 1; r < n; r++) {
        if (id[r] == id[r - 1]) {
            if (c[r] <= c[r - 1]) return 0;
            continue;
        }
        if (c[r] > c[start]) return 0;
        if (!first) first = r;
        start = r;
    }
    return first;
}

enum sf_hint_kind sf_series_hint(const sf_hint_rows *r, sf_hint *out) {
    *out = (sf_hint){.kind = SF_HINT_NONE};
    int64_t *vals = r->nrows >= 2 * SF_HINT_MIN_RUN ? malloc(SF_HINT_MAX_IDS * sizeof *vals) : NULL;
    if (!vals) return SF_HINT_NONE;  // too few rows to tell; or no memory for a hint, which packing does not need
    for (uint32_t k = 0; k < r->ncols; k++) {
        const int64_t *id = r->ints[k];
        uint32_t runs = id ? id_runs(id, r->nrows, vals) : 0;
        if (runs <= out->nvalues) continue;  // not ids, or no more than the ids found
        uint64_t row = 0;
        uint32_t counter = 0;
        if (r->time) {
            row = time_back(id, r->time, r->nrows);
        } else {
            for (uint32_t j = 0; j < r->ncols && !row; j++)
                if (j != k && r->ints[j] && (row = counter_restarts(id, r->ints[j], r->nrows))) counter = j;
        }
        if (row)
            *out = (sf_hint){.kind = r->time ? SF_HINT_TIME_BACK : SF_HINT_COUNTER, .id = k, .counter = counter,
                             .nvalues = runs, .row = row};
    }
    free(vals);
    return out->kind;
}
