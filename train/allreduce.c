// The gradients' sum over every replica of the job. In one process the
// replicas sum their host buffers in a fixed order (replica r adds slice r
// of every replica's buffer into replica 0's, then copies the sum back), so
// a run does not depend on thread timing; across ranks MPI's in-place sum
// comes between the two halves. A backend that sums itself (NCCL on GPUs)
// does all of it in its group.
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int sf_allreduce_open(sf_trainer *t, sf_err *e) {
    if (!t->be->reduce_open) return 0;
    // Every rank's replicas in one group: rank 0's id, sent to all.
    sf_replica **reps = malloc(t->R * sizeof *reps);
    if (!reps) return sf_err_set(e, SF_ENOMEM, "out of memory");
    for (uint32_t r = 0; r < t->R; r++) reps[r] = t->w[r].rep;
    sf_reduce_world world = {t->first, t->R * (uint32_t)sf_ranks_size(t->ranks), {{0}}};
    int rc = 0;
    // The sum is element by element: every replica of the job must keep its
    // parameters in the same places. Every rank joins the agreement, so
    // that none waits for one that found its own replicas differ.
    if (t->be->layout_crc) {
        uint32_t crc = t->be->layout_crc(reps[0]);
        for (uint32_t r = 1; r < t->R && !rc; r++)
            if (t->be->layout_crc(reps[r]) != crc)
                rc = sf_err_set(e, SF_EIO, "replicas 0 and %u keep their parameters in different layouts (cuDNN's "
                                "weight space): their gradients cannot be summed element by element", r);
        sf_err other = {0};  // the first failure's message is the one kept
        int arc = sf_ranks_agree(t->ranks, &crc, sizeof crc, "the replicas' parameter layout (cuDNN's weight space)",
                                 rc ? &other : e);
        if (!rc) rc = arc;
    }
    if (t->ranks) {
        if (sf_ranks_rank(t->ranks) == 0 && !rc) rc = t->be->reduce_id(&world.id, e);
        // A rank that failed still joins the broadcast, so that none waits.
        int64_t failed = rc != 0;
        int brc = sf_ranks_sum_i64(t->ranks, &failed, 1, "the replicas' group", e);
        if (!rc && !brc && failed) rc = sf_err_set(e, SF_EIO, "rank 0 could not make the job's NCCL id");
        if (!rc) rc = brc ? brc : sf_ranks_bcast(t->ranks, &world.id, sizeof world.id, "the NCCL id", e);
    }
    // NCCL's set-up waits for every rank: a missing one must not hang it.
    sf_ranks_watch(t->ranks, "setting up NCCL's communicators");
    if (!rc) rc = t->be->reduce_open(&t->group, reps, t->R, t->ranks ? &world : NULL, e);
    sf_ranks_unwatch(t->ranks);
    free(reps);
    return rc;
}

// Replica r's slice [*lo, *hi) of the parameters.
static void slice(const sf_trainer *t, uint32_t r, size_t *lo, size_t *hi) {
    size_t n = t->m->nparams;
    *lo = n * r / t->R, *hi = n * (r + 1) / t->R;
}

// g0 + g1 + ... + g(R-1) for every element of slice r, into replica 0's buffer.
static void sum_slice(sf_trainer *t, uint32_t r) {
    size_t lo, hi;
    slice(t, r, &lo, &hi);
    float *sum = t->be->gradients(t->w[0].rep);
    for (uint32_t q = 1; q < t->R; q++) {
        const float *g = t->be->gradients(t->w[q].rep);
        for (size_t k = lo; k < hi; k++) sum[k] += g[k];
    }
}

// Replica 0's sum, slice r, to every other replica.
static void spread_slice(sf_trainer *t, uint32_t r) {
    size_t lo, hi;
    slice(t, r, &lo, &hi);
    const float *sum = t->be->gradients(t->w[0].rep);
    for (uint32_t q = 1; q < t->R; q++) memcpy(t->be->gradients(t->w[q].rep) + lo, sum + lo, (hi - lo) * sizeof(float));
}

int sf_allreduce(sf_trainer *t, uint32_t r, sf_err *e) {
    if (t->group) return t->be->reduce(t->group, r, e);
    int rc = 0;
    sum_slice(t, r);
    if (t->ranks) {
        pthread_barrier_wait(&t->bar);
        if (r == 0) rc = sf_ranks_sum_f32(t->ranks, t->be->gradients(t->w[0].rep), t->m->nparams,
                                          "the gradient all-reduce", e);
        pthread_barrier_wait(&t->bar);
    }
    spread_slice(t, r);
    return rc;
}
