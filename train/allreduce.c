// The gradients' sum over every replica of the job, in one fixed order: the
// global batch's, part by part (each replica's parts follow one another, its
// replicas in order, the ranks in order), each element summed left to right
// as one process with one replica would. So the weights do not depend on
// the replicas or the ranks, bit for bit (test `elastic`). In one process
// the replicas sum their host buffers (replica r adds every term of slice r
// of the parameters into replica 0's buffer, then copies the sum back);
// across ranks, rank k > 0 first receives the sum of the ranks before it,
// adds its terms onto it, and passes it on, and the last rank's sum is
// broadcast to all. A backend that sums itself (NCCL on GPUs) does all of it
// in its group, in its own order.
//
// Across ranks, on a backend that reports each layer's gradients as they
// become final (CPU), a layer's sum goes as soon as every replica of the rank
// has it, while the layers below are still in their backward pass: the same
// terms in the same order, a layer at a time, and the broadcast in flight
// (MPI_Ibcast). The step's reduce then waits for the broadcasts.
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *const what_sum = "the gradient all-reduce";

// Term j of replica q: its part j's gradients (train_parts), or its buffer.
static const float *term(const sf_trainer *t, uint32_t q, uint32_t j) {
    return t->be->part_gradients ? t->be->part_gradients(t->w[q].rep, j) : t->be->gradients(t->w[q].rep);
}

// prefix (NULL: none) + every term, in order, for each element of [lo, hi),
// into replica 0's buffer, which holds the first term.
static void sum_range(sf_trainer *t, size_t lo, size_t hi, const float *prefix) {
    float *sum = t->be->gradients(t->w[0].rep);
    for (size_t k = lo; prefix && k < hi; k++) sum[k] = prefix[k] + sum[k];
    for (uint32_t q = 0; q < t->R; q++)
        for (uint32_t j = q == 0; j < t->w[q].nterms; j++) {
            const float *g = term(t, q, j);
            for (size_t k = lo; k < hi; k++) sum[k] += g[k];
        }
}

// The sums in flight that have completed, in start order; each a span on the
// trace (from its start to when it was seen complete).
static void buckets_poll(sf_trainer *t) {
    sf_buckets *b = &t->bk;
    while (!b->rc && b->done < b->started) {
        bool done = false;
        b->rc = sf_ranks_sum_test(t->ranks, b->done, &done, what_sum, &b->e);
        if (!done) break;
        sf_trace_span(t->trace, b->track, t->m->layer[b->layer[b->done]].name, b->since[b->done], sf_now());
        b->done++;
    }
}

// A replica's layer is final (any of its threads, during its backward): the
// layers every replica has, in the fixed order, have their sums started.
static void layer_ready(void *arg, uint32_t layer) {
    sf_worker *w = arg;
    sf_trainer *t = w->t;
    sf_buckets *b = &t->bk;
    pthread_mutex_lock(&b->mu);
    b->ready[layer]++;
    while (!b->rc && b->started < b->n && b->ready[b->layer[b->started]] == t->R) {
        size_t lo, hi;
        sf_model_layer_params(t->m, b->layer[b->started], &lo, &hi);
        b->since[b->started++] = sf_now();
        b->rc = sf_ranks_prefix_recv(t->ranks, t->prefix ? t->prefix + lo : NULL, hi - lo, what_sum, &b->e);
        if (!b->rc) sum_range(t, lo, hi, t->prefix);
        if (!b->rc)
            b->rc = sf_ranks_prefix_pass(t->ranks, t->be->gradients(t->w[0].rep) + lo, hi - lo, what_sum, &b->e);
    }
    buckets_poll(t);
    pthread_mutex_unlock(&b->mu);
}

static void buckets_reset(sf_buckets *b) {
    memset(b->ready, 0, sizeof b->ready);
    b->started = b->done = 0, b->rc = 0;
}

// Replica 0, after every replica's backward: the sums still in flight.
static int buckets_finish(sf_trainer *t, sf_err *e) {
    sf_buckets *b = &t->bk;
    int rc = b->rc;
    if (rc) *e = b->e;
    else if (b->started < b->n)
        rc = sf_err_set(e, SF_EIO, "%s: %u of %u layers' gradients were reported by the replicas", what_sum, b->started,
                        b->n);
    if (!rc) rc = sf_ranks_sum_finish(t->ranks, what_sum, e);
    for (double now = sf_now(); !rc && b->done < b->started; b->done++)
        sf_trace_span(t->trace, b->track, t->m->layer[b->layer[b->done]].name, b->since[b->done], now);
    buckets_reset(b);
    return rc;
}

void sf_allreduce_settle(sf_trainer *t) {
    sf_err ignored = {0};
    // A failed collective (SF_EIO) is no stop the ranks agreed on: its
    // peers may never finish these.
    if (t->bk.started == t->bk.n && t->rc != SF_EIO) buckets_finish(t, &ignored);
    buckets_reset(&t->bk);
}

// The layers' sums started during the backward: with ranks, on a backend
// that reports its layers, when there is more than one rank.
static void buckets_open(sf_trainer *t) {
    if (!t->overlap || !t->be->on_layer_done || sf_ranks_size(t->ranks) < 2) return;
    for (uint32_t i = t->m->nlayers; i-- > 0;)
        if (t->m->layer[i].kind != SF_LAYER_DROPOUT) t->bk.layer[t->bk.n++] = i;
    for (uint32_t r = 0; r < t->R; r++) t->be->on_layer_done(t->w[r].rep, layer_ready, &t->w[r]);
}

int sf_allreduce_open(sf_trainer *t, sf_err *e) {
    if (!t->be->reduce_open) {
        // What the ranks before this one pass on.
        if (sf_ranks_rank(t->ranks) > 0 && !(t->prefix = malloc((t->m->nparams ? t->m->nparams : 1) * sizeof(float))))
            return sf_err_set(e, SF_ENOMEM, "out of memory for the gradients' sum");
        buckets_open(t);
        return 0;
    }
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
    if (t->bk.n) {
        if (r == 0) rc = buckets_finish(t, e);
        pthread_barrier_wait(&t->bar);
        spread_slice(t, r);
        return rc;
    }
    size_t lo, hi;
    slice(t, r, &lo, &hi);
    if (t->ranks) {
        if (r == 0) rc = sf_ranks_prefix_recv(t->ranks, t->prefix, t->m->nparams, what_sum, e);
        pthread_barrier_wait(&t->bar);
    }
    sum_range(t, lo, hi, t->prefix);
    if (t->ranks) {
        pthread_barrier_wait(&t->bar);
        if (r == 0 && !rc) rc = sf_ranks_prefix_pass(t->ranks, t->be->gradients(t->w[0].rep), t->m->nparams, what_sum, e);
        if (r == 0 && !rc) rc = sf_ranks_sum_finish(t->ranks, what_sum, e);
        pthread_barrier_wait(&t->bar);
    }
    spread_slice(t, r);
    return rc;
}
