// The threaded pipeline against the single-threaded stream (itself checked
// against the whole-file reference): for every replica and epoch the same
// windows in the same order with the same values, whatever the I/O path,
// O_DIRECT, decoder count, prefetch and ring size. A corrupt chunk reaches
// every consumer as an error naming it; closing early never hangs.
#include <fcntl.h>

#include "tests/pipeline/sample.h"

typedef struct {
    uint64_t *ids;
    uint64_t n;
    uint64_t batches;
} seq;

static const sf_window_spec geometry = {20, 3, 2, 1, 1};

// The stream's windows for (replica, epoch): the expected sequence.
static seq expected(const sf_pack *p, const sf_plan *plan, const sf_columns *cols, uint32_t replicas, uint32_t r,
                    uint64_t epoch, sf_stream_opts so) {
    seq s = {malloc((sf_plan_windows(plan) + 1) * sizeof *s.ids), 0, 0};
    sf_stream *st;
    sf_err e = {0};
    if (sf_stream_open(&st, p, plan, cols, replicas, r, epoch, &so, NULL, &e)) return s;
    size_t xl = (size_t)geometry.length * cols->nfeatures;
    float *x = malloc(so.batch * xl * sizeof(float)), *y = malloc(so.batch * cols->ntargets * sizeof(float));
    for (int64_t got; (got = sf_stream_next(st, x, y, s.ids + s.n, &e)) > 0; s.n += (uint64_t)got) s.batches++;
    free(x);
    free(y);
    sf_stream_close(st);
    return s;
}

// With lanes, replica r's batches are its lanes' streams (internal replicas
// r * L + l of R * L) taken in turn within each epoch; this replays that
// rule on the streams' batches. Returns the replica's ids over all epochs.
static seq expected_lanes(const sf_pack *p, const sf_plan *plan, const sf_columns *cols, uint32_t R, uint32_t L,
                          uint32_t r, uint64_t epochs, sf_stream_opts so) {
    seq out = {malloc((sf_plan_windows(plan) * epochs + 1) * sizeof *out.ids), 0, 0};
    uint32_t turn = 0;
    for (uint64_t ep = 0; ep < epochs; ep++) {
        seq lane[4];
        uint64_t pos[4] = {0};
        for (uint32_t l = 0; l < L; l++) lane[l] = expected(p, plan, cols, R * L, r * L + l, ep, so);
        for (;;) {
            uint32_t i = 0;
            while (i < L && pos[(turn + i) % L] >= lane[(turn + i) % L].n) i++;
            if (i == L) break;
            uint32_t l = (turn + i) % L;
            uint64_t n = lane[l].n - pos[l] < so.batch ? lane[l].n - pos[l] : so.batch;
            memcpy(out.ids + out.n, lane[l].ids + pos[l], n * sizeof *out.ids);
            out.n += n;
            pos[l] += n;
            out.batches++;
            turn = (l + 1) % L;
        }
        for (uint32_t l = 0; l < L; l++) free(lane[l].ids);
    }
    return out;
}

static void check_config(const sf_pack *p, const sf_plan *plan, const sf_columns *cols, sf_pipe_opts o,
                         const char *what) {
    sf_pipe *pipe;
    sf_err e = {0};
    if (sf_pipe_open(&pipe, p, cols, &o, &e)) {
        CHECK(0, "%s: %s", what, e.msg);
        return;
    }
    uint32_t R = o.replicas;
    seq got[3][2] = {0};
    for (uint32_t r = 0; r < R; r++)
        for (uint64_t ep = 0; ep < o.epochs; ep++) got[r][ep].ids = malloc((sf_plan_windows(plan) + 1) * sizeof(uint64_t));
    bool done[3] = {false};
    uint32_t left = R;
    // One consumer takes from every replica in turn.
    while (left) {
        for (uint32_t r = 0; r < R; r++) {
            if (done[r]) continue;
            sf_batch b;
            int rc = sf_pipe_next_batch(pipe, r, &b, &e);
            if (rc <= 0) {
                CHECK(rc == 0, "%s: replica %u: %s", what, r, e.msg);
                done[r] = true;
                left--;
                continue;
            }
            seq *s = &got[r][b.epoch < o.epochs ? b.epoch : 0];
            memcpy(s->ids + s->n, b.ids, b.count * sizeof *b.ids);
            s->n += b.count;
            s->batches++;
            sf_pipe_release(pipe, r, &b);
        }
    }
    sf_pipe_stats st;
    sf_pipe_get_stats(pipe, &st, NULL);
    CHECK(st.chunks_decoded == st.chunks_read && st.chunks_read > 0, "%s: %llu chunks read, %llu decoded", what,
          (unsigned long long)st.chunks_read, (unsigned long long)st.chunks_decoded);
    sf_pipe_close(pipe);
    sf_stream_opts so = {o.batch, o.pool, o.drop_remainder, o.seed, 0};  // no edges kept: the same windows
    if (o.lanes > 1) {
        for (uint32_t r = 0; r < R; r++) {
            seq want = expected_lanes(p, plan, cols, R, o.lanes, r, o.epochs, so);
            uint64_t n = got[r][0].n + got[r][1].n;
            uint64_t *all = malloc((n + 1) * sizeof *all);
            memcpy(all, got[r][0].ids, got[r][0].n * sizeof *all);
            memcpy(all + got[r][0].n, got[r][1].ids, got[r][1].n * sizeof *all);
            CHECK(want.n == n && memcmp(want.ids, all, n * sizeof *all) == 0,
                  "%s: replica %u: %llu windows, the lanes' streams merged give %llu", what, r, (unsigned long long)n,
                  (unsigned long long)want.n);
            free(all);
            free(want.ids);
            free(got[r][0].ids);
            free(got[r][1].ids);
        }
        return;
    }
    for (uint32_t r = 0; r < R; r++)
        for (uint64_t ep = 0; ep < o.epochs; ep++) {
            seq want = expected(p, plan, cols, R, r, ep, so);
            CHECK(want.n == got[r][ep].n && want.batches == got[r][ep].batches &&
                      memcmp(want.ids, got[r][ep].ids, want.n * sizeof *want.ids) == 0,
                  "%s: replica %u epoch %llu: %llu windows in %llu batches, the stream gives %llu in %llu", what, r,
                  (unsigned long long)ep, (unsigned long long)got[r][ep].n, (unsigned long long)got[r][ep].batches,
                  (unsigned long long)want.n, (unsigned long long)want.batches);
            free(want.ids);
            free(got[r][ep].ids);
        }
}

// The ranks of a job each run a pipe for their replicas (shard_first ..
// of shard_total): replica r of a rank gives what global replica
// shard_first + r of one pipe over them all would, and over the ranks
// every window comes exactly once per epoch.
static void check_ranks(const sf_pack *p, const sf_plan *plan, const sf_columns *cols, sf_pipe_opts o,
                        const uint32_t *local, uint32_t ranks) {
    uint32_t total = 0;
    for (uint32_t k = 0; k < ranks; k++) total += local[k];
    uint64_t W = sf_plan_windows(plan);
    uint32_t *seen = calloc(W * o.epochs, sizeof *seen);
    sf_stream_opts so = {o.batch, o.pool, o.drop_remainder, o.seed, 0};  // no edges kept: the same windows
    sf_err e = {0};
    for (uint32_t k = 0, first = 0; k < ranks; first += local[k++]) {
        sf_pipe_opts ro = o;
        ro.replicas = local[k], ro.shard_first = first, ro.shard_total = total;
        sf_pipe *pipe;
        if (sf_pipe_open(&pipe, p, cols, &ro, &e)) {
            CHECK(0, "ranks: rank %u: %s", k, e.msg);
            continue;
        }
        for (uint32_t r = 0; r < local[k]; r++) {
            seq want = expected_lanes(p, plan, cols, total, o.lanes ? o.lanes : 1, first + r, o.epochs, so);
            uint64_t n = 0;
            bool same = true;
            sf_batch b;
            while (sf_pipe_next_batch(pipe, r, &b, &e) == 1) {
                same &= n + b.count <= want.n && memcmp(want.ids + n, b.ids, b.count * sizeof *b.ids) == 0;
                for (uint32_t i = 0; i < b.count; i++) seen[b.epoch * W + b.ids[i]]++;
                n += b.count;
                sf_pipe_release(pipe, r, &b);
            }
            CHECK(same && n == want.n, "ranks: rank %u replica %u (global %u of %u): %llu windows, not the %llu of "
                  "one pipe's replica", k, r, first + r, total, (unsigned long long)n, (unsigned long long)want.n);
            free(want.ids);
        }
        sf_pipe_close(pipe);
    }
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < W * o.epochs; i++) wrong += seen[i] != 1;
    CHECK(wrong == 0, "ranks: %llu of %llu (window, epoch) pairs not delivered exactly once over %u ranks",
          (unsigned long long)wrong, (unsigned long long)(W * o.epochs), ranks);
    free(seen);
}

// Values too: the batches of one configuration, window by window, against
// the stream's.
static void check_values(const sf_pack *p, const sf_plan *plan, const sf_columns *cols, sf_pipe_opts o) {
    sf_pipe *pipe;
    sf_stream *st;
    sf_err e = {0};
    sf_stream_opts so = {o.batch, o.pool, o.drop_remainder, o.seed, 0};  // no edges kept: the same windows
    if (sf_pipe_open(&pipe, p, cols, &o, &e) || sf_stream_open(&st, p, plan, cols, 1, 0, 0, &so, NULL, &e)) {
        CHECK(0, "%s", e.msg);
        return;
    }
    size_t xl = (size_t)geometry.length * cols->nfeatures * o.batch, yl = (size_t)cols->ntargets * o.batch;
    float *x = malloc(xl * sizeof(float)), *y = malloc(yl * sizeof(float));
    sf_batch b;
    uint64_t batches = 0;
    while (sf_pipe_next_batch(pipe, 0, &b, &e) == 1 && b.epoch == 0) {
        int64_t n = sf_stream_next(st, x, y, NULL, &e);
        CHECK(n == b.count && memcmp(x, b.x, (size_t)n * xl / o.batch * sizeof(float)) == 0 &&
                  memcmp(y, b.y, (size_t)n * yl / o.batch * sizeof(float)) == 0,
              "batch %llu: values differ from the stream's", (unsigned long long)batches);
        batches++;
        sf_pipe_release(pipe, 0, &b);
    }
    CHECK(batches > 3, "only %llu batches", (unsigned long long)batches);
    free(x);
    free(y);
    sf_stream_close(st);
    sf_pipe_close(pipe);
}

static void check_corrupt(const sf_pack *p, const sf_columns *good_cols, sf_pipe_opts o) {
    char bad[96];
    snprintf(bad, sizeof bad, "%s/bad.sfpack", dir);
    sf_chunk c = sf_pack_chunk_locate(p, 5);
    int in = open(path, O_RDONLY), out = open(bad, O_RDWR | O_CREAT | O_TRUNC, 0644);
    char buf[1 << 16];
    for (ssize_t k; (k = read(in, buf, sizeof buf)) > 0;) CHECK(write(out, buf, (size_t)k) == k, "copy");
    unsigned char flip;
    CHECK(pread(out, &flip, 1, (off_t)c.offset + 3) == 1, "read");
    flip = (unsigned char)~flip;
    CHECK(pwrite(out, &flip, 1, (off_t)c.offset + 3) == 1, "flip");
    close(in);
    close(out);
    sf_pipe *pipe;
    sf_pack *bp;
    sf_columns cols;
    sf_err e = {0};
    o.replicas = 2;
    o.pool = 0;
    (void)good_cols;
    // The header and index are intact: the damage shows when chunk 5 is decoded.
    if (sf_pack_open(&bp, bad, &e) ||
        sf_columns_create(&cols, sf_pack_get_info(bp), "a,c,d", "b", NULL, SF_NORM_ZSCORE, &e) ||
        sf_pipe_open(&pipe, bp, &cols, &o, &e)) {
        CHECK(0, "%s", e.msg);
        return;
    }
    // Round robin, as synchronous replicas consume: the error reaches every
    // replica still running when the bad chunk is decoded.
    int last[2] = {1, 1};
    while (last[0] == 1 || last[1] == 1)
        for (uint32_t r = 0; r < 2; r++) {
            if (last[r] != 1) continue;
            sf_batch b;
            sf_err er = {0};
            last[r] = sf_pipe_next_batch(pipe, r, &b, &er);
            if (last[r] == 1) sf_pipe_release(pipe, r, &b);
            else if (last[r] < 0) CHECK(last[r] == SF_ECORRUPT && strstr(er.msg, "chunk 5"), "replica %u: %s", r, er.msg);
        }
    CHECK(last[0] < 0 && last[1] < 0, "the bad chunk ended replicas with %d and %d, expected errors", last[0], last[1]);
    sf_pipe_close(pipe);
    sf_columns_free(&cols);
    sf_pack_close(bp);
    unlink(bad);
}

int main(void) {
    if (!mkdtemp(dir)) return 2;
    snprintf(path, sizeof path, "%s/sample.sfpack", dir);
    sf_pack *p = NULL;
    sf_err e = {0};
    sf_columns cols;
    sf_plan *plan;
    if (pack_sample(97) || sf_pack_open(&p, path, &e) ||
        sf_columns_create(&cols, sf_pack_get_info(p), "a,c,d", "b", NULL, SF_NORM_ZSCORE, &e)) {
        CHECK(0, "setup: %s", e.msg);
        return TEST_EXIT();
    }
    const sf_pack_info *in = sf_pack_get_info(p);
    if (sf_plan_create(&plan, in->nrows, in->chunk_rows, in->series, in->nseries, &geometry, 2, NULL, &e)) {
        CHECK(0, "%s", e.msg);
        return TEST_EXIT();
    }
    sf_pipe_opts base = sf_pipe_opts_default();
    base.window = geometry, base.block_chunks = 2, base.batch = 7, base.pool = 50, base.seed = 11, base.epochs = 2;
    base.io.depth = 4, base.decoders = 2, base.slots = 2, base.prefetch = 2;
    for (uint32_t R = 1; R <= 3; R++)
        for (int io = SF_IO_URING; io <= SF_IO_PREAD; io++)
            for (int direct = SF_DIRECT_ON; direct <= SF_DIRECT_OFF; direct++) {
                sf_pipe_opts o = base;
                o.replicas = R;
                o.io.io = io;
                o.io.direct = direct;
                o.decoders = R;
                o.prefetch = 1 + R % 2;
                o.slots = 2 + R;
                char what[64];
                snprintf(what, sizeof what, "R=%u io=%s direct=%s", R, io == SF_IO_URING ? "uring" : "pread",
                         direct == SF_DIRECT_ON ? "on" : "off");
                check_config(p, plan, &cols, o, what);
            }
    sf_pipe_opts o = base;
    o.replicas = 3;
    o.drop_remainder = true;
    o.pool = 0;
    o.io.depth = 1;
    o.decoders = 1;
    check_config(p, plan, &cols, o, "drop-remainder, depth 1, one decoder");
    for (uint32_t R = 1; R <= 2; R++) {
        o = base;
        o.replicas = R;
        o.lanes = 2;
        check_config(p, plan, &cols, o, R == 1 ? "1 replica, 2 lanes" : "2 replicas, 2 lanes");
    }
    // Lanes with drop-remainder: every lane keeps floor(floor(W / (R L)) /
    // batch) full batches, documented in PIPELINE.md.
    o = base;
    o.replicas = 2;
    o.lanes = 2;
    o.drop_remainder = true;
    o.epochs = 1;
    sf_pipe *lp;
    if (sf_pipe_open(&lp, p, &cols, &o, &e) == 0) {
        uint64_t want = 2 * (sf_plan_windows(plan) / 4 / o.batch);
        for (uint32_t r = 0; r < 2; r++) {
            sf_batch b;
            uint64_t full = 0, partial = 0;
            while (sf_pipe_next_batch(lp, r, &b, &e) == 1) {
                full += b.count == o.batch;
                partial += b.count != o.batch;
                sf_pipe_release(lp, r, &b);
            }
            CHECK(full == want && partial == 0, "lanes + drop-remainder: replica %u gave %llu full and %llu partial "
                  "batches, expected %llu full", r, (unsigned long long)full, (unsigned long long)partial,
                  (unsigned long long)want);
        }
        sf_pipe_close(lp);
    }
    o = base;
    check_ranks(p, plan, &cols, o, (const uint32_t[]){1, 2}, 2);
    check_ranks(p, plan, &cols, o, (const uint32_t[]){1, 1, 1}, 3);
    o.lanes = 2;
    check_ranks(p, plan, &cols, o, (const uint32_t[]){2, 1}, 2);
    o = base;
    o.replicas = 2, o.shard_first = 1, o.shard_total = 2;
    CHECK(sf_pipe_open(&lp, p, &cols, &o, &e) == SF_EINVAL && strstr(e.msg, "1 .. 2 of 2"),
          "replicas past shard_total were not refused: %s", e.msg);
    // A budget never turns "no shuffle" into a pool.
    o = base;
    o.pool = 0;
    CHECK(sf_pipe_fit_budget(&o, in, &cols, 1u << 30, &e) == 0 && o.pool == 0, "pool 0 became %llu",
          (unsigned long long)o.pool);
    // A resumed run starts at a later epoch: the same batches as that epoch of a full run.
    o = base;
    o.first_epoch = 1;
    sf_pipe *rp;
    if (sf_pipe_open(&rp, p, &cols, &o, &e) == 0) {
        seq want = expected(p, plan, &cols, 1, 0, 1, (sf_stream_opts){o.batch, o.pool, o.drop_remainder, o.seed, 0});
        uint64_t n = 0;
        bool same = true;
        sf_batch b;
        while (sf_pipe_next_batch(rp, 0, &b, &e) == 1) {
            same &= b.epoch == 1 && n + b.count <= want.n && memcmp(want.ids + n, b.ids, b.count * sizeof *b.ids) == 0;
            n += b.count;
            sf_pipe_release(rp, 0, &b);
        }
        CHECK(same && n == want.n, "first_epoch 1: %llu windows, epoch 1 of a full run has %llu",
              (unsigned long long)n, (unsigned long long)want.n);
        free(want.ids);
        sf_pipe_close(rp);
    }
    check_values(p, plan, &cols, base);
    check_corrupt(p, &cols, base);
    // Closing with batches still coming must not hang or leak.
    sf_pipe *pipe;
    if (sf_pipe_open(&pipe, p, &cols, &base, &e) == 0) {
        sf_batch b;
        CHECK(sf_pipe_next_batch(pipe, 0, &b, &e) == 1, "%s", e.msg);
        sf_pipe_close(pipe);
    }
    o = base;
    o.slots = 1;
    CHECK(sf_pipe_open(&pipe, p, &cols, &o, &e) == SF_EINVAL, "one slot accepted");
    sf_plan_free(plan);
    sf_columns_free(&cols);
    sf_pack_close(p);
    unlink(path);
    rmdir(dir);
    return TEST_EXIT();
}
