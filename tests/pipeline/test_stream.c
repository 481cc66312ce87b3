// Replica streams: over two epochs and 1 to 3 replicas every window comes
// out exactly once, with the reference's values bit for bit (seams from kept
// edges or read again), in batches of the asked size, in the same order
// whatever the edges kept; seeded and different per epoch; drop-remainder
// gives every replica the same number of full batches; a pool larger than
// the file's windows costs only what they fill.
#include "tests/pipeline/sample.h"

typedef struct {
    const sf_pack_info *in;
    const float *all;
    sf_plan *plan;
    sf_columns cols;
} fixture;

static bool window_matches(const fixture *f, uint64_t id, const float *x, const float *y) {
    const sf_window_spec *w = sf_plan_spec(f->plan);
    uint64_t s = sf_plan_window_start(f->plan, id);
    for (uint32_t t = 0; t < w->length; t++)
        for (uint32_t j = 0; j < f->cols.nfeatures; j++) {
            uint32_t c = f->cols.features[j];
            float want = scaled(f->all[(s + (uint64_t)t * w->sampling_rate) * f->in->ncols + c], &f->in->stats[c],
                                SF_NORM_ZSCORE);
            if (memcmp(&want, &x[t * f->cols.nfeatures + j], 4)) return false;
        }
    uint64_t target = s + (uint64_t)(w->length - 1) * w->sampling_rate + w->horizon;
    for (uint32_t j = 0; j < f->cols.ntargets; j++) {
        uint32_t c = f->cols.targets[j];
        float want = scaled(f->all[target * f->in->ncols + c], &f->in->stats[c], SF_NORM_ZSCORE);
        if (memcmp(&want, &y[j], 4)) return false;
    }
    return true;
}

// Runs one replica's epoch; appends its ids to ids[*n] and checks batches
// and values. Returns the number of batches.
static uint64_t run_replica(const fixture *f, const sf_pack *p, uint32_t replicas, uint32_t r, uint64_t epoch,
                            sf_stream_opts o, uint64_t *ids, uint64_t *n) {
    sf_stream *s;
    sf_err e = {0};
    if (sf_stream_open(&s, p, f->plan, &f->cols, replicas, r, epoch, &o, NULL, &e)) {
        CHECK(0, "%s", e.msg);
        return 0;
    }
    size_t xl = (size_t)sf_plan_spec(f->plan)->length * f->cols.nfeatures, yl = f->cols.ntargets;
    float *x = malloc(o.batch * xl * sizeof(float)), *y = malloc(o.batch * yl * sizeof(float));
    uint64_t *bid = malloc(o.batch * sizeof *bid), batches = 0;
    bool short_seen = false;
    for (int64_t got; (got = sf_stream_next(s, x, y, bid, &e)) != 0;) {
        if (got < 0) {
            CHECK(0, "stream: %s", e.msg);
            break;
        }
        CHECK(!short_seen, "a batch after a short batch");
        short_seen = (uint64_t)got < o.batch;
        CHECK(!(short_seen && o.drop_remainder), "short batch with drop-remainder");
        for (int64_t k = 0; k < got; k++) {
            CHECK(window_matches(f, bid[k], x + k * xl, y + k * yl), "window %llu: values differ",
                  (unsigned long long)bid[k]);
            ids[(*n)++] = bid[k];
        }
        batches++;
    }
    free(x);
    free(y);
    free(bid);
    sf_stream_close(s);
    return batches;
}

static void check_streams(const fixture *f, const sf_pack *p, uint32_t batch, uint64_t pool) {
    uint64_t total = sf_plan_windows(f->plan);
    uint64_t *ids = malloc((total + 1) * sizeof *ids), *seen = malloc((total + 1) * sizeof *seen);
    uint64_t *first = malloc((total + 1) * sizeof *first), nfirst = 0;
    for (uint64_t epoch = 0; epoch < 2; epoch++)
        for (uint32_t replicas = 1; replicas <= 3; replicas++) {
            // Seams from kept edges (every one, or two at a time) or read
            // again: each window's values are the reference's either way.
            sf_stream_opts o = {.batch = batch, .pool = pool, .seed = 5, .max_edges = UINT64_MAX};
            uint64_t n = 0;
            for (uint32_t r = 0; r < replicas; r++) run_replica(f, p, replicas, r, epoch, o, ids, &n);
            for (uint64_t cap = 0; cap <= 2; cap += 2) {
                sf_stream_opts c = o;
                c.max_edges = cap;
                uint64_t m = 0;
                for (uint32_t r = 0; r < replicas; r++) run_replica(f, p, replicas, r, epoch, c, seen, &m);
                CHECK(m == n && memcmp(seen, ids, n * sizeof *ids) == 0, "%llu edges kept: other windows or order",
                      (unsigned long long)cap);
            }
            memset(seen, 0, (total + 1) * sizeof *seen);
            for (uint64_t k = 0; k < n; k++) seen[ids[k] < total ? ids[k] : total]++;
            uint64_t wrong = 0;
            for (uint64_t id = 0; id <= total; id++) wrong += seen[id] != (id < total);
            CHECK(n == total && wrong == 0, "epoch %llu, %u replicas, pool %llu: %llu windows, %llu wrong counts",
                  (unsigned long long)epoch, replicas, (unsigned long long)pool, (unsigned long long)n,
                  (unsigned long long)wrong);
            if (replicas != 1) continue;
            // Seeded: the same epoch again gives the same order; the next
            // epoch another one (with a pool or not: blocks are permuted).
            uint64_t again = 0;
            run_replica(f, p, 1, 0, epoch, o, seen, &again);
            CHECK(again == n && memcmp(seen, ids, n * sizeof *ids) == 0, "epoch %llu is not reproducible",
                  (unsigned long long)epoch);
            if (epoch == 0) {
                memcpy(first, ids, n * sizeof *ids);
                nfirst = n;
            } else {
                CHECK(nfirst != n || memcmp(first, ids, n * sizeof *ids) != 0, "epochs 0 and 1 in the same order");
            }
        }
    // Drop-remainder: equal counts of full batches.
    for (uint32_t replicas = 1; replicas <= 3; replicas++) {
        sf_stream_opts o = {.batch = batch, .pool = pool, .seed = 5, .drop_remainder = true};
        uint64_t n = 0, want = total / replicas / batch;
        for (uint32_t r = 0; r < replicas; r++) {
            uint64_t b = run_replica(f, p, replicas, r, 0, o, ids, &n);
            CHECK(b == want, "drop-remainder: replica %u of %u gave %llu batches, expected %llu", r, replicas,
                  (unsigned long long)b, (unsigned long long)want);
        }
        memset(seen, 0, (total + 1) * sizeof *seen);
        for (uint64_t k = 0; k < n; k++) CHECK(seen[ids[k]]++ == 0, "window %llu twice", (unsigned long long)ids[k]);
    }
    free(ids);
    free(seen);
    free(first);
}

// A pool no file could fill (2^56 windows: petabytes) holds only the
// shard's windows, so it opens, and gives the batches of any pool larger
// than the shard. Before, it was allocated whole.
static void check_huge_pool(const fixture *f, const sf_pack *p) {
    uint64_t total = sf_plan_windows(f->plan);
    uint64_t *a = malloc(total * sizeof *a), *b = malloc(total * sizeof *b);
    for (uint32_t replicas = 1; replicas <= 3; replicas++)
        for (uint32_t r = 0; r < replicas; r++) {
            uint64_t na = 0, nb = 0;
            run_replica(f, p, replicas, r, 1, (sf_stream_opts){.batch = 8, .pool = UINT64_MAX >> 8, .seed = 9}, a, &na);
            run_replica(f, p, replicas, r, 1, (sf_stream_opts){.batch = 8, .pool = total + 1, .seed = 9}, b, &nb);
            CHECK(na == nb && na > 0 && !memcmp(a, b, na * sizeof *a), "a huge pool, replica %u of %u: %llu windows, "
                  "not the %llu of a pool of the file's windows", r, replicas, (unsigned long long)na,
                  (unsigned long long)nb);
        }
    CHECK(sf_plan_count(f->in->series, f->in->nseries, sf_plan_spec(f->plan), NULL) == total,
          "sf_plan_count is not the plan's windows");
    for (int part = SF_PART_TRAIN; part <= SF_PART_VALIDATION; part++) {
        sf_split split = {.fraction = 0.3, .part = (enum sf_part)part};
        sf_plan *q = NULL;
        sf_err e = {0};
        CHECK(!sf_plan_create(&q, f->in->nrows, f->in->chunk_rows, f->in->series, f->in->nseries,
                              sf_plan_spec(f->plan), 2, &split, &e), "%s", e.msg);
        CHECK(q && sf_plan_count(f->in->series, f->in->nseries, sf_plan_spec(f->plan), &split) == sf_plan_windows(q),
              "sf_plan_count of part %d is not the plan's windows", part);
        sf_plan_free(q);
    }
    free(a);
    free(b);
}

int main(void) {
    if (!mkdtemp(dir)) return 2;
    snprintf(path, sizeof path, "%s/sample.sfpack", dir);
    sf_pack *p = NULL;
    sf_err e = {0};
    if (pack_sample(256) || sf_pack_open(&p, path, &e)) {
        CHECK(0, "setup: %s", e.msg);
        return TEST_EXIT();
    }
    fixture f = {.in = sf_pack_get_info(p)};
    f.all = decode_all(p);
    sf_window_spec w = {20, 3, 2, 1, 1};
    if (sf_columns_create(&f.cols, f.in, "a,c,d", "b", NULL, SF_NORM_ZSCORE, &e) ||
        sf_plan_create(&f.plan, f.in->nrows, f.in->chunk_rows, f.in->series, f.in->nseries, &w, 2, NULL, &e)) {
        CHECK(0, "%s", e.msg);
        return TEST_EXIT();
    }
    check_streams(&f, p, 1, 0);
    check_streams(&f, p, 7, 1);
    check_streams(&f, p, 32, 50);
    check_streams(&f, p, 16, 100000);  // a pool larger than the epoch
    check_huge_pool(&f, p);
    sf_stream *s;
    sf_stream_opts bad = {.batch = 0};
    CHECK(sf_stream_open(&s, p, f.plan, &f.cols, 2, 0, 0, &bad, NULL, &e) == SF_EINVAL, "batch 0 accepted");
    bad.batch = 4;
    CHECK(sf_stream_open(&s, p, f.plan, &f.cols, 2, 2, 0, &bad, NULL, &e) == SF_EINVAL, "replica 2 of 2 accepted");
    sf_plan_free(f.plan);
    sf_columns_free(&f.cols);
    free((float *)f.all);
    sf_pack_close(p);
    unlink(path);
    rmdir(dir);
    return TEST_EXIT();
}
