// Memory stays within the budget: a child process runs the whole pipeline
// (2 replicas, a pool asked far larger than the budget allows) over a file
// whose float32 data is four times the budget; its peak RSS must stay below
// the budget plus the documented constant (code, libraries, thread stacks,
// zstd contexts).
#include <sys/resource.h>
#include <sys/wait.h>

#include "tests/pipeline/sample.h"

#define BUDGET (32u << 20)
#define CONSTANT (24u << 20)  // docs/PIPELINE.md: measured about 12 MB
#define ROWS (8u << 20)       // x 4 columns x 4 bytes = 128 MiB = 4 x BUDGET

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1  // shadow memory: no RSS bound to check
#else
#define SANITIZED 0
#endif

static int write_file(void) {
    const char *names[] = {"a", "b", "c", "d"};
    sf_pack_writer_opts wo = {.ncols = 4, .col_names = names, .level = 1, .filter = SF_FILTER_DELTA_SHUFFLE,
                              .threads = 2};
    sf_pack_writer *w;
    sf_err e = {0};
    if (sf_pack_writer_open(&w, path, &wo, &e)) {
        CHECK(0, "%s", e.msg);
        return -1;
    }
    float rows[4096 * 4], walk[4] = {0};
    int rc = 0;
    for (uint32_t done = 0; done < ROWS && !rc; done += 4096) {
        for (int i = 0; i < 4096 * 4; i++) rows[i] = walk[i % 4] += (float)((double)(rng() >> 11) * 0x1p-53 - 0.5);
        rc = sf_pack_writer_rows(w, rows, 4096, &e);
    }
    if (!rc) rc = sf_pack_writer_finish(w, &e);
    else sf_pack_writer_abort(w);
    CHECK(rc == 0, "%s", e.msg);
    return rc;
}

// The child: run every batch of one epoch through two consumers in turn.
static int child(void) {
    sf_pack *p;
    sf_columns cols;
    sf_err e = {0};
    if (sf_pack_open(&p, path, &e) || sf_columns_create(&cols, sf_pack_get_info(p), NULL, "a", NULL, SF_NORM_ZSCORE, &e))
        return 2;
    sf_pipe_opts o = sf_pipe_opts_default();
    // One part per replica: each part prefetches blocks of its own.
    // Autotuned, as train runs it, looking every 10 ms: its caps within the
    // budget too, whatever it turns mid-run.
    o.replicas = 2, o.batch = 256, o.parts = 2, o.pool = 1000000, o.seed = 3, o.autotune = true, o.tune_interval = 0.01;
    if (sf_pipe_fit_budget(&o, sf_pack_get_info(p), &cols, BUDGET, &e)) return 3;
    printf("pool %llu windows, estimate %.1f MB\n", (unsigned long long)o.pool,
           sf_pipe_memory(&o, sf_pack_get_info(p), &cols) / 1e6);
    fflush(stdout);
    if (o.pool >= 1000000) return 4;
    sf_pipe *pipe;
    if (sf_pipe_open(&pipe, p, &cols, &o, &e)) return 5;
    uint64_t windows = 0;
    for (int live = 3; live;)
        for (uint32_t r = 0; r < 2; r++) {
            if (!(live & (1 << r))) continue;
            sf_batch b;
            int rc = sf_pipe_next_batch(pipe, r, &b, &e);
            if (rc < 0) return 6;
            if (rc == 0) {
                live &= ~(1 << r);
                continue;
            }
            windows += b.count;
            sf_pipe_release(pipe, r, &b);
        }
    sf_pipe_close(pipe);
    sf_columns_free(&cols);
    sf_pack_close(p);
    return windows == ROWS - 60 ? 0 : 7;
}

// --pipeline auto's caps under a budget: the tuned knobs give way before
// the pool (which decides the batches), a knob given stays, and the
// estimate fits.
static void caps(void) {
    sf_pack *p;
    sf_columns cols;
    sf_err e = {0};
    if (sf_pack_open(&p, path, &e) || sf_columns_create(&cols, sf_pack_get_info(p), NULL, "a", NULL, SF_NORM_ZSCORE, &e)) {
        CHECK(0, "%s", e.msg);
        return;
    }
    const sf_pack_info *in = sf_pack_get_info(p);
    sf_pipe_opts o = sf_pipe_opts_default();
    o.replicas = 2, o.batch = 256, o.parts = 2, o.pool = 1000, o.autotune = true, o.cores = 4;
    o.fixed = SF_KNOB_SLOTS, o.slots = 3;
    sf_pipe_opts least = o;
    least.decoders = 1, least.prefetch = least.io.depth = 2, least.edge_bytes = 0;
    uint64_t budget = sf_pipe_memory(&least, in, &cols) + (1u << 20);
    sf_pipe_fit_budget(&o, in, &cols, 0, &e);  // the caps only
    uint64_t free_caps = sf_pipe_memory(&o, in, &cols);
    CHECK(o.decoders == 4 - 2 + 1 && // cores less the two windowers, plus one
               o.prefetch == 8 && o.io.depth == 8 && o.slots == 3,
          "caps without a budget: %u %u %u %u", o.decoders, o.prefetch, o.slots, o.io.depth);
    CHECK(free_caps > budget, "the test's budget (%llu) does not bind: %llu", (unsigned long long)budget,
          (unsigned long long)free_caps);
    CHECK(sf_pipe_fit_budget(&o, in, &cols, budget, &e) == 0, "%s", e.msg);
    CHECK(sf_pipe_memory(&o, in, &cols) <= budget && o.pool == 1000 && o.slots == 3,
          "caps %u %u %u %u, pool %llu: %llu bytes for a budget of %llu", o.decoders, o.prefetch, o.slots, o.io.depth,
          (unsigned long long)o.pool, (unsigned long long)sf_pipe_memory(&o, in, &cols), (unsigned long long)budget);
    sf_columns_free(&cols);
    sf_pack_close(p);
}

int main(void) {
    if (!mkdtemp(dir)) return 2;
    snprintf(path, sizeof path, "%s/big.sfpack", dir);
    if (write_file()) return TEST_EXIT();
    caps();
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) _exit(child());
    int status;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed with status %d", status);
    long rss = ru.ru_maxrss * 1024L;
    printf("peak RSS %.1f MB for a budget of %.1f MB over %.1f MB of float32\n", rss / 1e6, BUDGET / 1e6,
           (double)ROWS * 16 / 1e6);
    CHECK(SANITIZED || rss < (long)(BUDGET + CONSTANT), "peak RSS %ld exceeds budget + constant %u", rss,
          BUDGET + CONSTANT);
    unlink(path);
    rmdir(dir);
    return TEST_EXIT();
}
