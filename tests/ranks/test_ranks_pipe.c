// Run by mpirun (mpi_pipe.sh): every rank runs a pipe for its replicas
// (shard_first = rank x R of ranks x R) over the same file. Rank 0 gathers
// every batch's window ids and checks that each window comes exactly once
// per epoch over all ranks, and that every global replica got the windows,
// in order, that one process's pipe over all the replicas gives it.
#include "ranks/ranks.h"
#include "tests/pipeline/sample.h"

enum { R = 2, EPOCHS = 2 };

typedef struct {
    uint64_t replica, epoch, id;  // replica: the global index
} record;

int main(void) {
    if (!sf_ranks_launched()) {
        fprintf(stderr, "not started by an MPI launcher: skipped\n");
        return 77;
    }
    sf_ranks *d;
    sf_err e = {0};
    if (sf_ranks_open(&d, 120, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    int rank = sf_ranks_rank(d), ranks = sf_ranks_size(d);
    // Each rank packs the same sample (a fixed seed) in a directory of its own.
    if (!mkdtemp(dir)) sf_ranks_abort(d, 2);
    snprintf(path, sizeof path, "%s/sample.sfpack", dir);
    if (pack_sample(97)) sf_ranks_abort(d, 1);
    sf_pipe_opts o = sample_opts();
    o.replicas = R, o.shard_first = (uint32_t)rank * R, o.shard_total = (uint32_t)ranks * R, o.epochs = EPOCHS;
    o.slots = 3, o.batch = 13, o.parts = 6;  // a part for each of 3 ranks x 2 replicas
    size_t cap = 1 << 16, n = 0;
    record *mine = malloc(cap * sizeof *mine);
    sample_pipe sp;
    CHECK(sample_pipe_open(&sp, path, &o, &e) == 0, "rank %d: %s", rank, e.msg);
    sf_pipe *pipe = sp.pipe;
    for (uint32_t r = 0; r < R && !test_failures; r++) {
        sf_batch b;
        int rc;
        while ((rc = sf_pipe_next_batch(pipe, r, &b, &e)) == 1) {
            for (uint32_t i = 0; i < b.count && n < cap; i++) mine[n++] = (record){o.shard_first + r, b.epoch, b.ids[i]};
            sf_pipe_release(pipe, r, &b);
        }
        CHECK(rc == 0, "rank %d replica %u: %s", rank, r, e.msg);
    }
    if (!test_failures) sample_pipe_close(&sp);
    size_t *lens = calloc((size_t)ranks, sizeof *lens);
    record *all = NULL;
    CHECK(sf_ranks_gather(d, mine, n * sizeof *mine, (void **)&all, lens, "the windows", &e) == 0, "%s", e.msg);
    if (rank == 0 && all) {
        size_t total = 0;
        for (int k = 0; k < ranks; k++) total += lens[k] / sizeof(record);
        // One process's pipe over every replica: the reference.
        o.replicas = (uint32_t)ranks * R, o.shard_first = 0, o.shard_total = 0;
        CHECK(sample_pipe_open(&sp, path, &o, &e) == 0, "reference: %s", e.msg);
        pipe = sp.pipe;
        size_t at = 0, wrong = 0, want_n = 0;
        sf_pack *p;
        CHECK(sf_pack_open(&p, path, &e) == 0, "%s", e.msg);
        uint64_t nrows = sf_pack_get_info(p)->nrows;
        uint8_t *seen = calloc(nrows * EPOCHS, 1);  // window ids are below the row count
        for (uint32_t r = 0; r < o.replicas; r++) {
            sf_batch b;
            while (sf_pipe_next_batch(pipe, r, &b, &e) == 1) {
                for (uint32_t i = 0; i < b.count; i++, at++, want_n++)
                    wrong += at >= total || all[at].replica != r || all[at].epoch != b.epoch || all[at].id != b.ids[i];
                sf_pipe_release(pipe, r, &b);
            }
        }
        sample_pipe_close(&sp);
        CHECK(wrong == 0 && want_n == total, "%zu of %zu windows over %d ranks differ from one pipe's (which gives %zu)",
              wrong, total, ranks, want_n);
        size_t twice = 0;
        for (size_t k = 0; k < total; k++) twice += seen[all[k].epoch * nrows + all[k].id]++ != 0;
        CHECK(twice == 0, "%zu windows came more than once in an epoch", twice);
        sf_pack_close(p);
        free(seen);
        printf("%d ranks x %d replicas: %zu windows over %d epochs, each once, as one process's pipe gives them\n",
               ranks, R, total, EPOCHS);
    }
    // Every rank exits with rank 0's verdict.
    int64_t failed = test_failures;
    sf_ranks_sum_i64(d, &failed, 1, "the verdict", &e);
    free(mine), free(all), free(lens);
    sf_ranks_close(d);
    return failed ? 1 : 0;
}
