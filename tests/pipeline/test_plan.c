// The planner against a naive reference that walks every row of every
// series: the same windows (by start row), blocks that partition them and
// read the rows they need, shards that produce each window exactly once per
// epoch whatever the replica count, and seeded epoch orders.
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
        if (l->split.part == SF_PART_TRAIN) end -= val;
        if (l->split.part == SF_PART_VALIDATION) begin = end - val;
        for (uint64_t s = begin; s < end; s += l->w.stride)
            if (s + span <= end) starts[(*n)++] = s;  // the target row stays inside the series
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
                           (uint32_t)(rng() % 4)};
    l.split = (sf_split){(double)(rng() % 600) / 1000, (int)(rng() % 3)};
    return l;
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

    // Two epochs, 1 to 3 replicas: every window exactly once per epoch,
    // shares within one window of each other.
    uint64_t *order = malloc(nb * sizeof *order), *seen = calloc(nref + 1, sizeof *seen);
    sf_block_task *tasks = malloc(nb * sizeof *tasks);
    for (uint64_t epoch = 0; epoch < 2; epoch++) {
        sf_plan_epoch_order(p, 42, epoch, order);
        for (uint32_t replicas = 1; replicas <= 3; replicas++) {
            memset(seen, 0, (nref + 1) * sizeof *seen);
            uint64_t most = 0, least = UINT64_MAX;
            for (uint32_t r = 0; r < replicas; r++) {
                int64_t n = sf_plan_shard(p, order, replicas, r, tasks);
                CHECK(n >= 0 && (uint64_t)n <= nb, "trial %d: shard gave %lld tasks", trial, (long long)n);
                uint64_t count = 0;
                for (int64_t k = 0; k < n; k++) {
                    sf_block_task full = sf_plan_block(p, tasks[k].block);
                    CHECK(tasks[k].first_window >= full.first_window && tasks[k].end_window <= full.end_window &&
                              tasks[k].first_window < tasks[k].end_window,
                          "trial %d: task outside its block", trial);
                    for (uint64_t id = tasks[k].first_window; id < tasks[k].end_window && id < nref; id++) seen[id]++;
                    count += tasks[k].end_window - tasks[k].first_window;
                }
                most = count > most ? count : most;
                least = count < least ? count : least;
            }
            for (uint64_t id = 0; id < nref; id++)
                if (seen[id] != 1) {
                    CHECK(0, "trial %d epoch %llu replicas %u: window %llu produced %llu times", trial,
                          (unsigned long long)epoch, replicas, (unsigned long long)id, (unsigned long long)seen[id]);
                    break;
                }
            CHECK(most - least <= 1, "trial %d: shares of %llu and %llu windows", trial, (unsigned long long)most,
                  (unsigned long long)least);
        }
    }
    free(order);
    free(seen);
    free(tasks);
    free(ref);
    sf_plan_free(p);
}

static void check_orders(void) {
    layout l = {.nrows = 100000, .chunk_rows = 1000, .block_chunks = 1, .nseries = 1, .w = {60, 1, 1, 1}};
    l.series[0] = (sf_series){0, l.nrows, ""};
    sf_plan *p;
    sf_err e = {0};
    CHECK(sf_plan_create(&p, l.nrows, l.chunk_rows, l.series, 1, &l.w, 1, NULL, &e) == 0, "%s", e.msg);
    uint64_t a[100], b[100], c[100];
    sf_plan_epoch_order(p, 7, 3, a);
    sf_plan_epoch_order(p, 7, 3, b);
    sf_plan_epoch_order(p, 7, 4, c);
    CHECK(memcmp(a, b, sizeof a) == 0, "the same seed and epoch give different orders");
    CHECK(memcmp(a, c, sizeof a) != 0, "epochs 3 and 4 give the same order");
    uint64_t mark[100] = {0};
    for (int i = 0; i < 100; i++) mark[a[i] < 100 ? a[i] : 0]++;
    for (int i = 0; i < 100; i++) CHECK(mark[i] == 1, "block %d appears %llu times", i, (unsigned long long)mark[i]);
    sf_plan_free(p);
}

static void check_errors(void) {
    sf_series s[2] = {{0, 10, ""}, {11, 5, ""}};  // a gap at row 10
    sf_window_spec w = {5, 1, 1, 1};
    sf_plan *p;
    sf_err e = {0};
    CHECK(sf_plan_create(&p, 16, 4, s, 2, &w, 1, NULL, &e) == SF_EINVAL, "a gap between series was accepted");
    s[1].first_row = 10;
    CHECK(sf_plan_create(&p, 16, 4, s, 2, &w, 1, NULL, &e) == SF_EINVAL, "rows beyond the series were accepted");
    w.stride = 0;
    CHECK(sf_plan_create(&p, 15, 4, s, 2, &w, 1, NULL, &e) == SF_EINVAL, "stride 0 was accepted");
    w.stride = 1;
    CHECK(sf_plan_create(&p, 15, 4, s, 2, &w, 1, &(sf_split){1.0, SF_PART_TRAIN}, &e) == SF_EINVAL &&
              strstr(e.msg, "validation split 1"), "a split of 1 was accepted");
}

int main(void) {
    for (int trial = 0; trial < 400; trial++) {
        layout l = random_layout();
        check_layout(&l, trial);
    }
    check_orders();
    check_errors();
    return TEST_EXIT();
}
