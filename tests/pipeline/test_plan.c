// The planner against a naive reference that walks every row of every
// series: the same windows (by start row), blocks that partition them and
// read the rows they need, shards that produce each window exactly once per
// epoch whatever the shard count, in the same order whatever the edges
// kept for seams, each chunk read once when every edge is kept, and seeded
// epoch orders.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline.h"
#include "tests/common.h"

static uint64_t rng_state = 0x91a7b10c5eedull;
static uint64_t rng(void) { return sf_splitmix64(&rng_state); }

typedef struct {
    uint64_t nrows;
    uint32_t chunk_rows, block_chunks;
    sf_series series[64];
    uint64_t nseries;
    sf_window_spec w;
    sf_split split;
} layout;

// Start rows of every valid window, in row order, by brute force.
static uint64_t *reference_starts(const layout *l, uint64_t *n) {
    uint64_t span = (uint64_t)(l->w.length - 1) * l->w.sampling_rate + l->w.horizon + 1;
    uint64_t *starts = malloc((l->nrows + 1) * sizeof *starts);
    *n = 0;
    for (uint64_t i = 0; i < l->nseries; i++) {
        uint64_t begin = l->series[i].first_row, end = begin + l->series[i].rows;
        // The split by its definition: the last floor(rows x fraction) rows
        // are for validation.
        uint64_t val = (uint64_t)floor((double)l->series[i].rows * l->split.fraction);
        if (l->split.part == SF_PART_VALIDATION) {
            // Placed by their targets: every stride-th row of the validation
            // part, inputs reaching back into the series.
            // With several steps the first step's row is a validation row too.
            uint64_t lead = l->w.steps > 1 ? l->w.steps - 1 : 0;
            for (uint64_t t = end - val + lead; t < end; t += l->w.stride)
                if (t + 1 >= begin + span) starts[(*n)++] = t + 1 - span;
            continue;
        }
        if (l->split.part == SF_PART_TRAIN) end -= val;
        for (uint64_t s = begin; s < end; s += l->w.stride)
            if (s + span <= end) starts[(*n)++] = s;  // the target row stays inside the part
    }
    return starts;
}

static layout random_layout(void) {
    layout l = {0};
    l.nseries = 1 + rng() % 12;
    for (uint64_t i = 0; i < l.nseries; i++) {
        uint64_t rows = rng() % 4 == 0 ? 1 + rng() % 8 : 1 + rng() % 400;  // some too short for any window
        l.series[i] = (sf_series){l.nrows, rows, ""};
        l.nrows += rows;
    }
    l.chunk_rows = 1 + (uint32_t)(rng() % 97);
    l.block_chunks = 1 + (uint32_t)(rng() % 4);
    l.w = (sf_window_spec){1 + (uint32_t)(rng() % 30), 1 + (uint32_t)(rng() % 5), 1 + (uint32_t)(rng() % 3),
                           (uint32_t)(rng() % 4), 1};
    if (rng() % 2) l.w.horizon = 1 + (uint32_t)(rng() % 24), l.w.steps = 1 + (uint32_t)(rng() % l.w.horizon);
    l.split = (sf_split){.fraction = (double)(rng() % 600) / 1000, .part = (int)(rng() % 3)};
    return l;
}

// The windows a stream cuts from these tasks, in order (window.c): each
// task's own, the previous block's seam when it is cut here, then its own
// seam when it is cut here. Checks that each run's rows are loaded or kept,
// and that every kept edge is taken. Returns how many.
static uint64_t cut_order(const sf_plan *p, const sf_block_task *t, int64_t n, uint64_t *out, uint64_t span, int trial) {
    uint64_t count = 0, kept = 0, taken = 0;
    for (int64_t k = 0; k < n; k++) {
        uint64_t lo, hi;
        sf_plan_block_rows(p, t[k].block, &lo, &hi);
        for (uint64_t id = t[k].first_window; id < t[k].seam_window; id++) {
            uint64_t s = sf_plan_window_start(p, id);
            CHECK(t[k].row_lo <= s && s + span <= t[k].row_hi, "trial %d: window %llu outside its task's rows", trial,
                  (unsigned long long)id);
            out[count++] = id;
        }
        if (t[k].prev == SF_SEAM_TAKE || t[k].prev == SF_SEAM_READ)
            for (uint64_t id = t[k].prev_first; id < t[k].prev_end; id++) {
                uint64_t s = sf_plan_window_start(p, id);
                CHECK(t[k].prev == SF_SEAM_TAKE ? s + span > lo && s + span <= t[k].row_hi
                                                : t[k].row_lo <= s && s + span <= t[k].row_hi,
                      "trial %d: seam window %llu outside the rows", trial, (unsigned long long)id);
                out[count++] = id;
            }
        if (t[k].next == SF_SEAM_TAKE || t[k].next == SF_SEAM_READ)
            for (uint64_t id = t[k].seam_window; id < t[k].end_window; id++) {
                uint64_t s = sf_plan_window_start(p, id);
                CHECK(t[k].row_lo <= s && (t[k].next == SF_SEAM_TAKE ? hi <= t[k].row_hi : s + span <= t[k].row_hi),
                      "trial %d: seam window %llu outside the rows", trial, (unsigned long long)id);
                out[count++] = id;
            }
        kept += (t[k].prev == SF_SEAM_KEEP) + (t[k].next == SF_SEAM_KEEP);
        taken += (t[k].prev == SF_SEAM_TAKE) + (t[k].next == SF_SEAM_TAKE);
    }
    CHECK(kept == taken, "trial %d: %llu edges kept, %llu taken", trial, (unsigned long long)kept,
          (unsigned long long)taken);
    return count;
}

static void check_layout(const layout *l, int trial) {
    sf_plan *p;
    sf_err e = {0};
    if (sf_plan_create(&p, l->nrows, l->chunk_rows, l->series, l->nseries, &l->w, l->block_chunks, &l->split, &e)) {
        CHECK(0, "trial %d: %s", trial, e.msg);
        return;
    }
    uint64_t nref;
    uint64_t *ref = reference_starts(l, &nref);
    CHECK(sf_plan_windows(p) == nref, "trial %d: %llu windows, reference %llu", trial,
          (unsigned long long)sf_plan_windows(p), (unsigned long long)nref);
    CHECK(sf_plan_count(l->series, l->nseries, &l->w, &l->split) == nref, "trial %d: sf_plan_count %llu, reference "
          "%llu", trial, (unsigned long long)sf_plan_count(l->series, l->nseries, &l->w, &l->split),
          (unsigned long long)nref);
    uint64_t span = sf_window_span(&l->w);
    for (uint64_t id = 0; id < nref && id < sf_plan_windows(p); id++)
        CHECK(sf_plan_window_start(p, id) == ref[id], "trial %d: window %llu starts at %llu, reference %llu", trial,
              (unsigned long long)id, (unsigned long long)sf_plan_window_start(p, id), (unsigned long long)ref[id]);

    // Blocks partition the ids in order; each block's windows start inside it
    // and its row range covers them.
    uint64_t nb = sf_plan_blocks(p), block_rows = (uint64_t)l->chunk_rows * l->block_chunks, next = 0;
    CHECK(nb == (l->nrows + block_rows - 1) / block_rows, "trial %d: %llu blocks", trial, (unsigned long long)nb);
    for (uint64_t b = 0; b < nb; b++) {
        sf_block_task t = sf_plan_block(p, b);
        CHECK(t.first_window == next && t.end_window >= t.first_window, "trial %d: block %llu windows [%llu, %llu)",
              trial, (unsigned long long)b, (unsigned long long)t.first_window, (unsigned long long)t.end_window);
        for (uint64_t id = t.first_window; id < t.end_window && id < nref; id++) {
            CHECK(ref[id] / block_rows == b, "trial %d: window %llu (row %llu) in block %llu", trial,
                  (unsigned long long)id, (unsigned long long)ref[id], (unsigned long long)b);
            CHECK(t.row_lo <= ref[id] && ref[id] + span <= t.row_hi, "trial %d: block %llu rows miss window %llu",
                  trial, (unsigned long long)b, (unsigned long long)id);
        }
        if (t.first_window < t.end_window)
            CHECK(t.row_lo == ref[t.first_window] && t.row_hi == ref[t.end_window - 1] + span,
                  "trial %d: block %llu reads more rows than its windows need", trial, (unsigned long long)b);
        next = t.end_window;
    }
    CHECK(next == nref, "trial %d: blocks cover %llu of %llu windows", trial, (unsigned long long)next,
          (unsigned long long)nref);

    // Two epochs, 1 to 3 shards: every window exactly once per epoch, each
    // shard a stretch of ids within one window of the others' sizes, every
    // window cut from rows its task loads (or from edges a neighbour kept),
    // and the same windows in the same order whatever the edges kept.
    uint64_t *seen = calloc(nref + 1, sizeof *seen), *order = malloc((nref + 1) * sizeof *order);
    uint64_t *again = malloc((nref + 1) * sizeof *again);
    sf_block_task *tasks = malloc((nb + 1) * sizeof *tasks);
    for (uint64_t epoch = 0; epoch < 2; epoch++)
        for (uint32_t shards = 1; shards <= 3; shards++) {
            memset(seen, 0, (nref + 1) * sizeof *seen);
            uint64_t most = 0, least = UINT64_MAX;
            for (uint32_t r = 0; r < shards; r++) {
                uint64_t caps[3] = {UINT64_MAX, 0, 1}, n0 = 0;
                for (int c = 0; c < 3; c++) {
                    int64_t n = sf_plan_shard(p, 42, epoch, shards, r, caps[c], tasks);
                    CHECK(n >= 0 && (uint64_t)n <= nb, "trial %d: shard gave %lld tasks", trial, (long long)n);
                    uint64_t count = cut_order(p, tasks, n, c ? again : order, span, trial);
                    if (c == 0) {
                        n0 = count;
                        for (uint64_t k = 0; k < count; k++) seen[order[k] < nref ? order[k] : nref]++;
                        uint64_t lo = nref * r / shards;  // nref is small here
                        for (uint64_t k = 0; k < count; k++)
                            if (order[k] < lo || order[k] >= lo + count) {
                                CHECK(0, "trial %d: shard %u of %u has window %llu outside its stretch", trial, r,
                                      shards, (unsigned long long)order[k]);
                                break;
                            }
                        most = count > most ? count : most;
                        least = count < least ? count : least;
                    } else {
                        CHECK(count == n0 && memcmp(order, again, count * sizeof *order) == 0,
                              "trial %d: keeping %llu edges cuts other windows, or in another order", trial,
                              (unsigned long long)caps[c]);
                    }
                }
            }
            for (uint64_t id = 0; id < nref; id++)
                if (seen[id] != 1) {
                    CHECK(0, "trial %d epoch %llu shards %u: window %llu produced %llu times", trial,
                          (unsigned long long)epoch, shards, (unsigned long long)id, (unsigned long long)seen[id]);
                    break;
                }
            CHECK(most - least <= 1, "trial %d: shares of %llu and %llu windows", trial, (unsigned long long)most,
                  (unsigned long long)least);
        }
    free(order);
    free(again);
    free(seen);
    free(tasks);
    free(ref);
    sf_plan_free(p);
}

// One shard, every edge kept: each chunk is read once, but for the seams of
// the shard's last block and of blocks whose seam reaches past the next.
static void check_reads(void) {
    layout l = {.nrows = 20000, .chunk_rows = 100, .block_chunks = 1, .nseries = 1, .w = {20, 1, 1, 1}};
    l.series[0] = (sf_series){0, l.nrows, ""};
    sf_plan *p;
    sf_err e = {0};
    CHECK(sf_plan_create(&p, l.nrows, l.chunk_rows, l.series, 1, &l.w, 1, NULL, &e) == 0, "%s", e.msg);
    uint64_t nb = sf_plan_blocks(p), *reads = calloc(nb, sizeof *reads);
    sf_block_task *tasks = malloc(nb * sizeof *tasks);
    for (uint64_t cap = 0; cap <= 1; cap++) {
        memset(reads, 0, nb * sizeof *reads);
        int64_t n = sf_plan_shard(p, 9, 1, 1, 0, cap ? UINT64_MAX : 0, tasks);
        uint64_t total = 0;
        for (int64_t k = 0; k < n; k++)
            for (uint64_t c = tasks[k].row_lo / l.chunk_rows; c <= (tasks[k].row_hi - 1) / l.chunk_rows; c++)
                reads[c]++, total++;
        if (cap) {
            for (uint64_t c = 0; c < nb; c++)
                CHECK(reads[c] == 1, "chunk %llu read %llu times with every edge kept", (unsigned long long)c,
                      (unsigned long long)reads[c]);
        } else {
            // Nothing kept: every seam reads its other block again.
            CHECK(total == 2 * nb - 1, "%llu chunk reads without edges, expected %llu", (unsigned long long)total,
                  (unsigned long long)(2 * nb - 1));
        }
    }
    free(reads);
    free(tasks);
    sf_plan_free(p);
}

static void check_orders(void) {
    layout l = {.nrows = 100000, .chunk_rows = 1000, .block_chunks = 1, .nseries = 1, .w = {60, 1, 1, 1}};
    l.series[0] = (sf_series){0, l.nrows, ""};
    sf_plan *p;
    sf_err e = {0};
    CHECK(sf_plan_create(&p, l.nrows, l.chunk_rows, l.series, 1, &l.w, 1, NULL, &e) == 0, "%s", e.msg);
    sf_block_task a[100], b[100], c[100];
    CHECK(sf_plan_shard(p, 7, 3, 1, 0, 8, a) == 100 && sf_plan_shard(p, 7, 3, 1, 0, 8, b) == 100 &&
              sf_plan_shard(p, 7, 4, 1, 0, 8, c) == 100, "100 blocks, 100 tasks");
    bool same = true, other = false;
    uint64_t mark[100] = {0};
    for (int i = 0; i < 100; i++) {
        same &= a[i].block == b[i].block, other |= a[i].block != c[i].block;
        mark[a[i].block < 100 ? a[i].block : 0]++;
    }
    CHECK(same, "the same seed and epoch give different orders");
    CHECK(other, "epochs 3 and 4 give the same order");
    for (int i = 0; i < 100; i++) CHECK(mark[i] == 1, "block %d appears %llu times", i, (unsigned long long)mark[i]);
    sf_plan_free(p);
}

// The rows a split's windows predict: a training window's target is never a
// validation row; the validation targets are every stride-th row of each
// series' validation part whose window fits in the series, whatever the
// window; sf_split_longest is the longest span that still fits.
static void check_parts(int trial) {
    layout l = random_layout();
    l.split.fraction = (double)(1 + rng() % 500) / 1000;
    uint32_t stride = l.w.stride;
    sf_split train = {.fraction = l.split.fraction, .part = SF_PART_TRAIN},
             val = {.fraction = l.split.fraction, .part = SF_PART_VALIDATION};
    // Per row: whether it is a validation row, its series' first row, its
    // series' validation part's first row.
    uint8_t *is_val = calloc(l.nrows + 1, 1);
    uint64_t *first = malloc((l.nrows + 1) * sizeof *first), *vfirst = malloc((l.nrows + 1) * sizeof *vfirst);
    for (uint64_t i = 0; i < l.nseries; i++) {
        uint64_t lo = l.series[i].first_row, hi = lo + l.series[i].rows;
        uint64_t nval = (uint64_t)floor((double)l.series[i].rows * l.split.fraction);
        for (uint64_t r = lo; r < hi; r++) is_val[r] = r >= hi - nval, first[r] = lo, vfirst[r] = hi - nval;
    }
    uint8_t *targets = calloc(l.nrows + 1, 1);
    const sf_window_spec windows[3] = {{8, stride, 1, 1, 1}, {24, stride, 1, 1, 1}, {32, stride, 1, 1, 1}};
    for (int k = 0; k < 3; k++) {
        const sf_window_spec *w = &windows[k];
        uint64_t span = sf_window_span(w);
        sf_plan *tp = NULL, *vp = NULL;
        sf_err e = {0};
        CHECK(!sf_plan_create(&tp, l.nrows, l.chunk_rows, l.series, l.nseries, w, 1, &train, &e) &&
                  !sf_plan_create(&vp, l.nrows, l.chunk_rows, l.series, l.nseries, w, 1, &val, &e),
              "trial %d: %s", trial, e.msg);
        if (!tp || !vp) {
            sf_plan_free(tp), sf_plan_free(vp);
            break;
        }
        for (uint64_t id = 0; id < sf_plan_windows(tp); id++) {
            uint64_t s = sf_plan_window_start(tp, id);
            CHECK(!is_val[s + span - 1], "trial %d: training window %llu predicts validation row %llu", trial,
                  (unsigned long long)id, (unsigned long long)(s + span - 1));
        }
        uint8_t *got = calloc(l.nrows + 1, 1);
        for (uint64_t id = 0; id < sf_plan_windows(vp); id++) {
            uint64_t s = sf_plan_window_start(vp, id), t = s + span - 1;
            CHECK(t < l.nrows && is_val[t] && first[t] <= s, "trial %d: validation window %llu (rows %llu..%llu) is "
                  "not one of a validation target's series", trial, (unsigned long long)id, (unsigned long long)s,
                  (unsigned long long)t);
            if (t < l.nrows) got[t] = 1;
        }
        // The expected targets: each validation row stride rows on from its
        // part's first whose window starts in the series.
        for (uint64_t r = 0; r < l.nrows; r++) {
            bool want = is_val[r] && (r - vfirst[r]) % stride == 0 && r + 1 >= first[r] + span;
            CHECK(got[r] == want, "trial %d: window %u: row %llu %s", trial, w->length, (unsigned long long)r,
                  want ? "is not validated" : "is validated, not a target of the rule");
            // Rows that every window here reaches are validated by each.
            if (r + 1 >= first[r] + sf_window_span(&windows[2]) && k > 0)
                CHECK(got[r] == targets[r], "trial %d: window %u validates row %llu, window 8 %s", trial, w->length,
                      (unsigned long long)r, targets[r] ? "does" : "does not");
            if (k == 0) targets[r] = got[r];
        }
        free(got);
        sf_plan_free(tp), sf_plan_free(vp);
    }
    // The longest span of each part fits, one row more does not.
    for (int part = SF_PART_ALL; part <= SF_PART_VALIDATION; part++) {
        sf_split split = {.fraction = l.split.fraction, .part = (enum sf_part)part};
        uint64_t longest = sf_split_longest(l.series, l.nseries, stride, &split);
        if (longest == 0 || longest > UINT32_MAX) continue;
        sf_window_spec fits = {1, stride, 1, (uint32_t)(longest - 1), 1}, over = {1, stride, 1, (uint32_t)longest, 1};
        CHECK(sf_plan_count(l.series, l.nseries, &fits, &split) > 0 && sf_plan_count(l.series, l.nseries, &over,
              &split) == 0, "trial %d: part %d: the longest span %llu is not the longest that fits", trial, part,
              (unsigned long long)longest);
    }
    free(targets);
    free(is_val);
    free(first);
    free(vfirst);
}

static void check_errors(void) {
    sf_series s[2] = {{0, 10, ""}, {11, 5, ""}};  // a gap at row 10
    sf_window_spec w = {5, 1, 1, 1, 1};
    sf_plan *p;
    sf_err e = {0};
    CHECK(sf_plan_create(&p, 16, 4, s, 2, &w, 1, NULL, &e) == SF_EINVAL, "a gap between series was accepted");
    s[1].first_row = 10;
    CHECK(sf_plan_create(&p, 16, 4, s, 2, &w, 1, NULL, &e) == SF_EINVAL, "rows beyond the series were accepted");
    w.stride = 0;
    CHECK(sf_plan_create(&p, 15, 4, s, 2, &w, 1, NULL, &e) == SF_EINVAL, "stride 0 was accepted");
    w.stride = 1;
    CHECK(sf_plan_create(&p, 15, 4, s, 2, &w, 1, &(sf_split){.fraction = 1.0, .part = SF_PART_TRAIN}, &e) == SF_EINVAL &&
              strstr(e.msg, "validation split 1"), "a split of 1 was accepted");
    w.horizon = 3, w.steps = 4;  // a first step at row 0 of the window's own last
    CHECK(sf_plan_create(&p, 15, 4, s, 2, &w, 1, NULL, &e) == SF_EINVAL && strstr(e.msg, "4 steps ending at horizon 3"),
          "a step at the window's last row was accepted");
}

// Cross-validation's folds against a naive reference: each whole series'
// rows labelled as scikit-learn's TimeSeriesSplit labels an array (test_size
// n // (K + 1); fold k's test rows start at n - K test_size + (k - 1)
// test_size, its training rows are every row before them), the series cut
// into segments (--max-gap) at random. A training window lies in its
// segment's training rows; a validation window's last target is a
// validation row of its segment, every stride-th from the first (its first
// step's row one too), and its inputs stay in the segment: none reads a row
// after the fold's validation part.
static void check_folds(int trial) {
    sf_series whole[8], seg[96];
    uint64_t nwhole = 1 + rng() % 6, nseg = 0, nrows = 0;
    for (uint64_t i = 0; i < nwhole; i++) {
        uint64_t rows = rng() % 4 == 0 ? 1 + rng() % 10 : 1 + rng() % 300, end = nrows + rows;
        whole[i] = (sf_series){nrows, rows, ""};
        for (uint64_t at = nrows; at < end;) {
            uint64_t len = rng() % 3 == 0 ? 1 + rng() % rows : rows;
            if (len > end - at || nseg == 95 - nwhole) len = end - at;
            seg[nseg++] = (sf_series){at, len, ""};
            at += len;
        }
        nrows = end;
    }
    uint32_t K = 2 + (uint32_t)(rng() % 6), k = 1 + (uint32_t)(rng() % K);
    sf_window_spec w = {1 + (uint32_t)(rng() % 20), 1 + (uint32_t)(rng() % 4), 1 + (uint32_t)(rng() % 3),
                        1 + (uint32_t)(rng() % 4), 1};
    if (rng() % 2) w.steps = 1 + (uint32_t)(rng() % w.horizon);
    uint64_t span = sf_window_span(&w), lead = w.steps > 1 ? w.steps - 1 : 0;
    uint8_t *label = calloc(nrows + 1, 1);  // 0: neither part, 1: training, 2: validation
    for (uint64_t i = 0; i < nwhole; i++) {
        uint64_t n = whole[i].rows, t = n / (K + 1), first = whole[i].first_row;
        if (t == 0) continue;
        uint64_t test = first + n - K * t + (k - 1) * t;
        for (uint64_t r = first; r < test; r++) label[r] = 1;
        for (uint64_t r = test; r < test + t; r++) label[r] = 2;
    }
    for (int part = SF_PART_TRAIN; part <= SF_PART_VALIDATION; part++) {
        sf_split split = {.part = (enum sf_part)part, .folds = K, .fold = k, .whole = whole, .nwhole = nwhole};
        uint64_t *want = malloc((nrows + 1) * sizeof *want), n = 0;
        for (uint64_t i = 0; i < nseg; i++) {
            uint64_t a = seg[i].first_row, end = a + seg[i].rows;
            while (a < end && label[a] != part) a++;
            uint64_t b = a;
            while (b < end && label[b] == part) b++;
            if (part == SF_PART_TRAIN)
                for (uint64_t s = a; s + span <= b; s += w.stride) want[n++] = s;
            else
                for (uint64_t t = a + lead; t < b; t += w.stride)
                    if (t + 1 >= seg[i].first_row + span) want[n++] = t + 1 - span;
        }
        sf_plan *p = NULL;
        sf_err e = {0};
        CHECK(sf_plan_create(&p, nrows, 1 + (uint32_t)(rng() % 50), seg, nseg, &w, 1, &split, &e) == 0,
              "trial %d: %s", trial, e.msg);
        CHECK(p && sf_plan_windows(p) == n, "trial %d: fold %u of %u, part %d: %llu windows, the reference %llu",
              trial, k, K, part, p ? (unsigned long long)sf_plan_windows(p) : 0ull, (unsigned long long)n);
        for (uint64_t j = 0; p && j < n && j < sf_plan_windows(p); j++)
            CHECK(sf_plan_window_start(p, j) == want[j], "trial %d: fold %u of %u, part %d: window %llu starts at "
                  "row %llu, the reference's at %llu", trial, k, K, part, (unsigned long long)j,
                  (unsigned long long)sf_plan_window_start(p, j), (unsigned long long)want[j]);
        sf_plan_free(p);
        free(want);
    }
    free(label);
}

// scikit-learn's own examples of TimeSeriesSplit: 6 rows in 5 folds (fold k
// trains on rows 0 to k - 1, tests on row k) and 10 rows in 3 folds (test_size
// 2: tests at rows 4, 6 and 8).
static void check_folds_sklearn(void) {
    const struct {
        uint64_t n;
        uint32_t K, k;
        uint64_t train, test_first, test_rows;
    } cases[] = {{6, 5, 1, 1, 1, 1}, {6, 5, 3, 3, 3, 1}, {6, 5, 5, 5, 5, 1}, {10, 3, 1, 4, 4, 2},
                 {10, 3, 2, 6, 6, 2}, {10, 3, 3, 8, 8, 2}, {6, 3, 1, 3, 3, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        sf_series s = {0, cases[c].n, ""}, tr, va;
        sf_split split = {.part = SF_PART_TRAIN, .folds = cases[c].K, .fold = cases[c].k};
        sf_split_rows(&s, 1, &split, &tr);
        split.part = SF_PART_VALIDATION;
        sf_split_rows(&s, 1, &split, &va);
        CHECK(tr.first_row == 0 && tr.rows == cases[c].train && va.first_row == cases[c].test_first &&
              va.rows == cases[c].test_rows, "%llu rows, fold %u of %u: train %llu+%llu, test %llu+%llu",
              (unsigned long long)cases[c].n, cases[c].k, cases[c].K, (unsigned long long)tr.first_row,
              (unsigned long long)tr.rows, (unsigned long long)va.first_row, (unsigned long long)va.rows);
    }
}

int main(void) {
    for (int trial = 0; trial < 400; trial++) {
        layout l = random_layout();
        check_layout(&l, trial);
    }
    for (int trial = 0; trial < 200; trial++) check_parts(trial);
    check_orders();
    check_reads();
    check_errors();
    for (int trial = 0; trial < 300; trial++) check_folds(trial);
    check_folds_sklearn();
    return TEST_EXIT();
}
