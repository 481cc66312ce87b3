// The threaded pipeline against the single-threaded streams (each checked
// against the whole-file reference): the global batches, step by step, are
// the parts' streams' batches side by side, and replica q of Q gets its
// parts of each, whatever the replica count, the ranks, the lanes, the I/O
// path, O_DIRECT, decoder count, prefetch and ring size: the windows, their
// order and their values (a hash of every global batch). A corrupt chunk
// reaches every consumer as an error naming it; closing early never hangs.
#include <fcntl.h>

#include "tests/pipeline/sample.h"

static const sf_window_spec geometry = {20, 3, 2, 1, 1};

// The job's global batches: per step its windows, each part's count, and a
// hash of the ids and values in order.
typedef struct {
    uint64_t steps, n;
    uint64_t *ids;       // all windows, step by step
    uint64_t *start;     // per step: its first window in ids
    uint32_t *count;     // per step and part
    uint64_t *hash;      // per step
    uint64_t *epoch;     // per step
} global;

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3ull;
    return h;
}

static void global_free(global *g) { free(g->ids), free(g->start), free(g->count), free(g->hash), free(g->epoch); }

// The reference: part g is the stream of shard g of G at its share of the
// batch and of the pool; the pipe's epoch has sf_pipe_epoch_batches steps.
static global expected(const sf_pack *p, const sf_plan *plan, const sf_columns *cols, sf_pipe_opts o) {
    uint32_t G = o.parts ? o.parts : sf_batch_parts(o.batch);
    uint64_t W = sf_plan_windows(plan), per = sf_pipe_epoch_batches(&o, W), steps = per * (o.epochs - o.first_epoch);
    global out = {0, 0, malloc((W * o.epochs + 1) * sizeof *out.ids), malloc((steps + 1) * sizeof *out.start),
                  calloc(steps * G + 1, sizeof *out.count), malloc((steps + 1) * sizeof *out.hash),
                  malloc((steps + 1) * sizeof *out.epoch)};
    uint64_t pool = o.pool <= 1 ? o.pool : (o.pool + G - 1) / G > 2 ? (o.pool + G - 1) / G : 2;
    size_t xl = (size_t)geometry.length * cols->nfeatures, yl = cols->ntargets;
    float *x = malloc(o.batch * xl * sizeof(float)), *y = malloc(o.batch * yl * sizeof(float));
    sf_err e = {0};
    for (uint64_t ep = o.first_epoch; ep < o.epochs; ep++) {
        sf_stream *st[SF_MAX_PARTS];
        for (uint32_t g = 0; g < G; g++) {
            uint32_t lo, n;
            sf_part_rows(o.batch, G, g, &lo, &n);
            sf_stream_opts so = {n, pool, false, o.seed, 0};  // no edges kept: the same windows
            CHECK(sf_stream_open(&st[g], p, plan, cols, G, g, ep, &so, NULL, &e) == 0, "%s", e.msg);
        }
        for (uint64_t k = 0; k < per; k++, out.steps++) {
            out.start[out.steps] = out.n, out.epoch[out.steps] = ep;
            uint64_t h = 0xcbf29ce484222325ull;
            for (uint32_t g = 0; g < G; g++) {
                int64_t got = sf_stream_next(st[g], x, y, out.ids + out.n, &e);
                CHECK(got >= 0, "%s", e.msg);
                if (got <= 0) continue;
                out.count[out.steps * G + g] = (uint32_t)got;
                h = fnv(h, out.ids + out.n, (size_t)got * sizeof *out.ids);
                h = fnv(fnv(h, x, (size_t)got * xl * sizeof(float)), y, (size_t)got * yl * sizeof(float));
                out.n += (uint64_t)got;
            }
            out.hash[out.steps] = h;
        }
        for (uint32_t g = 0; g < G; g++) sf_stream_close(st[g]);
    }
    free(x), free(y);
    return out;
}

// Knobs changed by the consumer on the way (sf_pipe_set_knobs), as a
// controller would, but at every batch and at random: 0 none.
static uint64_t churn;

// Changes the knobs that are not fixed to random values within their caps,
// and checks that the fixed ones never move, whoever turns them.
static void turn_knobs(sf_pipe *pipe, const char *what) {
    sf_pipe_tuning t;
    sf_pipe_get_tuning(pipe, &t);
    sf_pipe_knobs k;
    uint32_t *v[4] = {&k.decoders, &k.prefetch, &k.slots, &k.depth};
    const uint32_t *c[4] = {&t.cap.decoders, &t.cap.prefetch, &t.cap.slots, &t.cap.depth};
    const uint32_t *now[4] = {&t.now.decoders, &t.now.prefetch, &t.now.slots, &t.now.depth};
    for (int i = 0; i < 4; i++) {
        uint32_t lo = i == 0 ? 1 : 2;
        CHECK(*now[i] >= (*c[i] < lo ? *c[i] : lo) && *now[i] <= *c[i], "%s: knob %d at %u, cap %u", what, i, *now[i],
              *c[i]);
        if (t.fixed & (1u << i)) CHECK(*now[i] == *c[i], "%s: fixed knob %d moved to %u", what, i, *now[i]);
        if (!churn) continue;
        churn = churn * 6364136223846793005ull + 1442695040888963407ull;
        *v[i] = *c[i] <= lo ? *c[i] : lo + (uint32_t)((churn >> 33) % (*c[i] - lo + 1));
    }
    sf_err e = {0};
    if (churn) CHECK(sf_pipe_set_knobs(pipe, &k, &e) == 0, "%s: set_knobs: %s", what, e.msg);
}

// The job of o (o.replicas in all) run as ranks, local[k] replicas each,
// one pipe per rank, every replica drained: the global batches its
// replicas' batches make, side by side in replica order. Checks each
// replica's parts and counts against want on the way.
static global run_job(const sf_pack *p, const sf_columns *cols, sf_pipe_opts o, const uint32_t *local,
                      uint32_t ranks, const global *want, const char *what) {
    uint32_t Q = 0, G = o.parts ? o.parts : sf_batch_parts(o.batch);
    for (uint32_t k = 0; k < ranks; k++) Q += local[k];
    uint64_t S = want->steps;
    // Per step and replica: its windows' ids, x and y, kept until every replica is in.
    size_t xl = (size_t)geometry.length * cols->nfeatures, yl = cols->ntargets;
    uint64_t **ids = calloc(S * Q + 1, sizeof *ids);
    float **xs = calloc(S * Q + 1, sizeof *xs), **ys = calloc(S * Q + 1, sizeof *ys);
    uint32_t *cnt = calloc(S * Q + 1, sizeof *cnt);
    sf_err e = {0};
    for (uint32_t k = 0, first = 0; k < ranks; first += local[k++]) {
        sf_pipe_opts ro = o;
        ro.replicas = local[k], ro.shard_first = first, ro.shard_total = ranks > 1 ? Q : 0;
        sf_pipe *pipe;
        if (sf_pipe_open(&pipe, p, cols, &ro, &e)) {
            CHECK(0, "%s: rank %u: %s", what, k, e.msg);
            continue;
        }
        // One consumer takes from every replica in turn, as synchronous replicas do.
        bool done[8] = {false};
        uint64_t step[8] = {0};
        for (uint32_t left = local[k]; left;)
            for (uint32_t r = 0; r < local[k]; r++) {
                if (done[r]) continue;
                sf_batch b;
                int rc = sf_pipe_next_batch(pipe, r, &b, &e);
                if (rc <= 0 || step[r] >= S) {
                    CHECK(rc == 0, "%s: replica %u: %s (step %llu of %llu)", what, first + r, rc < 0 ? e.msg : "more "
                          "batches than the reference", (unsigned long long)step[r], (unsigned long long)S);
                    if (rc == 1) sf_pipe_release(pipe, r, &b);
                    done[r] = true, left--;
                    continue;
                }
                uint32_t a, z, sum = 0;
                sf_replica_parts(G, Q, first + r, &a, &z);
                bool ok = b.first_part == a && b.nparts == z - a && b.epoch == want->epoch[step[r]];
                for (uint32_t j = 0; ok && j < b.nparts; j++) {
                    ok &= b.part_count[j] == want->count[step[r] * G + a + j];
                    sum += b.part_count[j];
                }
                CHECK(ok && sum == b.count, "%s: replica %u step %llu: parts %u+%u (epoch %llu), not the reference's",
                      what, first + r, (unsigned long long)step[r], b.first_part, b.nparts,
                      (unsigned long long)b.epoch);
                size_t at = step[r] * Q + first + r;
                cnt[at] = b.count;
                ids[at] = malloc((b.count + 1) * sizeof **ids);
                xs[at] = malloc((b.count * xl + 1) * sizeof(float)), ys[at] = malloc((b.count * yl + 1) * sizeof(float));
                memcpy(ids[at], b.ids, b.count * sizeof **ids);
                memcpy(xs[at], b.x, b.count * xl * sizeof(float)), memcpy(ys[at], b.y, b.count * yl * sizeof(float));
                step[r]++;
                sf_pipe_release(pipe, r, &b);
                if (o.autotune) turn_knobs(pipe, what);
            }
        for (uint32_t r = 0; r < local[k]; r++)
            CHECK(step[r] == S, "%s: replica %u gave %llu batches, the reference %llu", what, first + r,
                  (unsigned long long)step[r], (unsigned long long)S);
        if (o.autotune) {  // the controller's own changes, mid-run
            sf_pipe_tuning t;
            sf_pipe_get_tuning(pipe, &t);
            CHECK(t.autotune && t.changes >= 3 && strstr(t.line, "pipeline auto at"), "%s: %llu tuning lines, the last "
                  "'%s'", what, (unsigned long long)t.changes, t.line);
        }
        sf_pipe_stats st;
        sf_pipe_get_stats(pipe, &st, NULL);
        CHECK(st.chunks_decoded == st.chunks_read && st.chunks_read > 0, "%s: %llu chunks read, %llu decoded", what,
              (unsigned long long)st.chunks_read, (unsigned long long)st.chunks_decoded);
        sf_pipe_close(pipe);
    }
    global got = {S, 0, malloc((want->n + 1) * sizeof *got.ids), NULL, NULL, calloc(S + 1, sizeof *got.hash), NULL};
    for (uint64_t s = 0; s < S; s++) {
        // Part by part, as the reference hashes: a replica's parts are
        // consecutive, so its ids, then x and y, per part.
        uint64_t h = 0xcbf29ce484222325ull;
        for (uint32_t q = 0; q < Q; q++) {
            size_t at = s * Q + q;
            uint32_t off = 0, a, z;
            sf_replica_parts(G, Q, q, &a, &z);
            for (uint32_t g = a; g < z; g++) {
                uint32_t n = want->count[s * G + g];
                if (!n || !ids[at] || off + n > cnt[at]) continue;
                h = fnv(h, ids[at] + off, n * sizeof **ids);
                h = fnv(fnv(h, xs[at] + off * xl, n * xl * sizeof(float)), ys[at] + off * yl, n * yl * sizeof(float));
                off += n;
            }
            if (ids[at] && got.n + cnt[at] <= want->n) memcpy(got.ids + got.n, ids[at], cnt[at] * sizeof *got.ids);
            got.n += cnt[at];
            free(ids[at]), free(xs[at]), free(ys[at]);
        }
        got.hash[s] = h;
    }
    free(ids), free(xs), free(ys), free(cnt);
    return got;
}

// Every global batch the same as the reference's, hash by hash.
static void check_job(const sf_pack *p, const sf_plan *plan, const sf_columns *cols, sf_pipe_opts o,
                      const uint32_t *local, uint32_t ranks, const char *what) {
    global want = expected(p, plan, cols, o);
    global got = run_job(p, cols, o, local, ranks, &want, what);
    uint64_t differ = 0;
    for (uint64_t s = 0; s < want.steps; s++) differ += got.hash[s] != want.hash[s];
    CHECK(want.steps > 3 && differ == 0 && got.n == want.n,
          "%s: %llu of %llu global batches differ from the reference's (%llu windows, the reference %llu)", what,
          (unsigned long long)differ, (unsigned long long)want.steps, (unsigned long long)got.n,
          (unsigned long long)want.n);
    global_free(&want);
    global_free(&got);
}

// Without drop-remainder, every window of every epoch once.
static void check_once(const sf_pack *p, const sf_plan *plan, const sf_columns *cols, sf_pipe_opts o,
                       const uint32_t *local, uint32_t ranks, const char *what) {
    global want = expected(p, plan, cols, o);
    global got = run_job(p, cols, o, local, ranks, &want, what);
    uint64_t W = sf_plan_windows(plan), wrong = 0;
    uint32_t *seen = calloc(W * o.epochs, sizeof *seen);
    for (uint64_t s = 0, i = 0; s < want.steps; s++)
        for (; i < (s + 1 < want.steps ? want.start[s + 1] : want.n); i++)
            if (got.ids[i] < W) seen[want.epoch[s] * W + got.ids[i]]++;
    for (uint64_t i = 0; i < W * o.epochs; i++) wrong += seen[i] != 1;
    CHECK(wrong == 0, "%s: %llu of %llu (window, epoch) pairs not delivered exactly once", what,
          (unsigned long long)wrong, (unsigned long long)(W * o.epochs));
    free(seen);
    global_free(&want);
    global_free(&got);
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
    base.window = geometry, base.block_chunks = 2, base.batch = 13, base.parts = 6, base.pool = 50, base.seed = 11;
    base.epochs = 2, base.io.depth = 4, base.decoders = 2, base.slots = 2, base.prefetch = 2;
    // 1 to 4 replicas in one pipe: the same global batches.
    for (uint32_t R = 1; R <= 4; R++)
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
                check_job(p, plan, &cols, o, &R, 1, what);
            }
    sf_pipe_opts o = base;
    o.replicas = 3;
    o.drop_remainder = true;
    o.pool = 0;
    o.io.depth = 1;
    o.decoders = 1;
    check_job(p, plan, &cols, o, &o.replicas, 1, "drop-remainder, depth 1, one decoder");
    // Lanes cut the parts on several threads: the same batches.
    for (uint32_t R = 1; R <= 2; R++) {
        o = base;
        o.replicas = R;
        o.lanes = 3;
        check_job(p, plan, &cols, o, &R, 1, R == 1 ? "1 replica, 3 lanes" : "2 replicas, 3 lanes");
    }
    o = base;
    o.drop_remainder = true, o.lanes = 2, o.replicas = 2;
    check_job(p, plan, &cols, o, &o.replicas, 1, "lanes + drop-remainder");
    // Ranks, one pipe each: the same global batches as one pipe.
    o = base;
    check_job(p, plan, &cols, o, (const uint32_t[]){1, 2}, 2, "ranks 1 + 2");
    check_job(p, plan, &cols, o, (const uint32_t[]){1, 1, 1}, 3, "ranks 1 + 1 + 1");
    check_job(p, plan, &cols, o, (const uint32_t[]){2, 2}, 2, "ranks 2 + 2");
    o.lanes = 2;
    check_job(p, plan, &cols, o, (const uint32_t[]){2, 1}, 2, "ranks 2 + 1, 2 lanes");
    // Autotuned: the controller looking at every batch, and knobs turned at
    // random mid-run on top of it, with one given explicitly: the same
    // global batches, and the fixed knob never moves.
    for (uint32_t R = 1; R <= 3; R += 2) {
        o = base;
        o.replicas = R, o.autotune = true, o.tune_interval = 1e-9;
        o.decoders = 3, o.prefetch = 5, o.slots = 4, o.io.depth = 4;
        check_job(p, plan, &cols, o, &R, 1, R == 1 ? "autotuned" : "autotuned, 3 replicas");
        churn = 7 + R;
        check_job(p, plan, &cols, o, &R, 1, R == 1 ? "autotuned, knobs at random" : "autotuned, 3 replicas, knobs at random");
        o.fixed = SF_KNOB_SLOTS | SF_KNOB_DECODERS, o.slots = 3, o.lanes = 2;
        check_job(p, plan, &cols, o, &R, 1, R == 1 ? "autotuned, 2 knobs given, 2 lanes" : "autotuned, 3 replicas, 2 knobs given, 2 lanes");
        churn = 0;
    }
    o = base;
    check_once(p, plan, &cols, o, (const uint32_t[]){3}, 1, "3 replicas");
    check_once(p, plan, &cols, o, (const uint32_t[]){2, 2}, 2, "ranks 2 + 2");
    // The default parts of a batch: batch / 8, from 1 to 12.
    CHECK(sf_batch_parts(7) == 1 && sf_batch_parts(32) == 4 && sf_batch_parts(96) == 12 &&
              sf_batch_parts(1000) == 12, "sf_batch_parts: %u %u %u %u", sf_batch_parts(7), sf_batch_parts(32),
          sf_batch_parts(96), sf_batch_parts(1000));
    sf_pipe *lp;
    o = base;
    o.replicas = 7;
    CHECK(sf_pipe_open(&lp, p, &cols, &o, &e) == SF_EUSAGE && strstr(e.msg, "7 replicas"),
          "more replicas than parts were not refused: %s", e.msg);
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
    o.first_epoch = 1, o.replicas = 2;
    check_job(p, plan, &cols, o, &o.replicas, 1, "first_epoch 1");
    check_corrupt(p, &cols, base);
    // Closing with batches still coming must not hang or leak.
    sf_pipe *pipe;
    if (sf_pipe_open(&pipe, p, &cols, &base, &e) == 0) {
        sf_batch b;
        CHECK(sf_pipe_next_batch(pipe, 0, &b, &e) == 1, "%s", e.msg);
        sf_pipe_close(pipe);
    }
    // A ring allocated at its cap (8) with the slots knob at 2: the
    // batches stay in its first 2 slots, not round robin over all 8 (a
    // larger ring written through falls out of the caches).
    o = base;
    o.autotune = true, o.tune_interval = 1e9, o.slots = 8;  // the controller never looks: the knob stays 2
    if (sf_pipe_open(&pipe, p, &cols, &o, &e) == 0) {
        sf_batch b;
        uint32_t most = 0, n = 0;
        for (; n < 40 && sf_pipe_next_batch(pipe, 0, &b, &e) == 1; n++) {
            most = b.slot > most ? b.slot : most;
            sf_pipe_release(pipe, 0, &b);
        }
        CHECK(n == 40 && most < 2, "%u batches in slots up to %u of a ring of 8 with the knob at 2", n, most);
        sf_pipe_close(pipe);
    } else {
        CHECK(0, "%s", e.msg);
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
