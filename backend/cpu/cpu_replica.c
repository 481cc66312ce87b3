// The CPU backend: a replica's weights, gradients and Adam state in host
// memory, its batch cut into parts that run on helper threads.
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"

// A replica cuts each batch into one part per thread (rows [n p / P, n (p +
// 1) / P)), each with its own activations and gradient buffer, and sums the
// parts' gradients in part order. Each thread runs BLAS on its own part, so
// small per-step products are not split across cores (measured: R = 1 on 2
// cores went from the speed of one BLAS with 2 threads to that of 2
// replicas). A layer's sum is the work of the last part to finish that
// layer, while the others go on below it, so that the layer's gradients are
// final (and their sum across ranks may start) before the backward ends.
//
// train_parts is given its parts instead (the global batch's, whose sums
// must not depend on the replica that computes them): thread p runs parts
// p, p + P, ..., each into its own gradient buffer, left unsummed.
struct sf_replica {
    const sf_model *m;
    uint32_t window;
    float *w, *m1, *v;  // weights, Adam's m and v
    float *packed;      // fp32: the recurrent layers' Ur packed, made from w as it changes, which the parts share
    uint32_t parts;        // threads, and the parts a batch is cut into without given parts
    uint32_t ngrads;       // gradient buffers and losses: the most parts either way
    uint32_t capacity;     // windows a part's pass holds
    sf_cpu_pass **act;  // per thread
    float **g;             // per part; g[0] is the replica's gradient buffer
    double *loss;          // per part
    // the given parts of the step being run (train_parts; nsplit 0: none)
    uint32_t nsplit;
    bool sum_parts;  // given parts summed as the replica's own are (sf_replica_opts)
    const uint32_t *split_count, *split_row0;
    uint32_t split_off[SF_MAX_PARTS];
    atomic_uint *finished;  // per layer: the parts done with its gradients this step
    sf_layer_done ready;    // told when a layer's sum is final
    void *ready_arg;
    // the step being run
    const float *x, *y;
    float *out;
    uint32_t count, global;
    uint64_t seed;
    const sf_adam *adam;  // the update being applied, and its step
    uint64_t adam_step;
    void (*job)(struct sf_replica *r, uint32_t part);
    // helper threads for parts 1 .. parts - 1
    pthread_t *threads;
    uint32_t started;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    uint64_t generation;
    uint32_t pending;
    bool quit;
};

// A part of fewer than 8 rows costs more in overhead than it saves.
static uint32_t parts_for(uint32_t batch, uint32_t threads) {
    uint32_t parts = threads < 1 ? 1 : threads;
    while (parts > 1 && batch / parts < 8) parts--;
    return parts;
}

// A replica's threads (each a pass of `capacity` windows) and gradient
// buffers for batches of up to batch windows: what cpu_open allocates and
// cpu_host_memory counts.
static void sizes(uint32_t batch, const sf_replica_opts *o, uint32_t *parts, uint32_t *ngrads, uint32_t *capacity) {
    *parts = parts_for(batch, o->threads);
    if (o->parts && *parts > o->parts) *parts = o->parts;  // a thread per given part at most
    *ngrads = *parts > o->parts ? *parts : o->parts;
    *capacity = (batch + *parts - 1) / *parts;
    if (o->part_batch > *capacity) *capacity = o->part_batch;
}

static void part_rows(const sf_replica *r, uint32_t p, uint32_t *lo, uint32_t *n) {
    uint32_t a = (uint32_t)((uint64_t)r->count * p / r->parts), b = (uint32_t)((uint64_t)r->count * (p + 1) / r->parts);
    *lo = a, *n = b - a;
}

static void *helper_main(void *arg) {
    sf_replica *r = ((void **)arg)[0];
    uint32_t p = (uint32_t)(uintptr_t)((void **)arg)[1];
    free(arg);
    pthread_mutex_lock(&r->mu);
    uint64_t seen = 0;  // the generation at open: a job may be posted before this thread runs
    for (;;) {
        while (!r->quit && r->generation == seen) pthread_cond_wait(&r->go, &r->mu);
        if (r->quit) break;
        seen = r->generation;
        pthread_mutex_unlock(&r->mu);
        r->job(r, p);
        pthread_mutex_lock(&r->mu);
        if (--r->pending == 0) pthread_cond_signal(&r->done);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

// Runs job on every part, part 0 on the calling thread.
static void run_parts(sf_replica *r, void (*job)(sf_replica *r, uint32_t part)) {
    r->job = job;
    if (r->parts > 1) {
        pthread_mutex_lock(&r->mu);
        r->pending = r->parts - 1;
        r->generation++;
        pthread_cond_broadcast(&r->go);
        pthread_mutex_unlock(&r->mu);
    }
    job(r, 0);
    if (r->parts > 1) {
        pthread_mutex_lock(&r->mu);
        while (r->pending) pthread_cond_wait(&r->done, &r->mu);
        pthread_mutex_unlock(&r->mu);
    }
}

// A part is done with layer's gradients; the last one sums the parts' in
// part order into g[0] (given parts stay apart, unless sum_parts: the
// trainer's sum of them, element by element left to right, is this one).
// Summed here the layers' sums overlap the backward of the layers below;
// left to the trainer, the sum of 4 parts at batch 32 was 2.7% of a step
// on one thread, the other idle.
static void part_done(void *arg, uint32_t layer) {
    sf_replica *r = arg;
    uint32_t parts = r->nsplit ? r->nsplit : r->parts;
    // acq_rel: the last part sees every other part's gradients.
    if (parts > 1 && atomic_fetch_add_explicit(&r->finished[layer], 1, memory_order_acq_rel) + 1 < parts) return;
    size_t lo, hi;
    sf_model_layer_params(r->m, layer, &lo, &hi);
    for (uint32_t q = 1; (!r->nsplit || r->sum_parts) && q < parts; q++)
        for (size_t k = lo; k < hi; k++) r->g[0][k] += r->g[q][k];
    if (r->ready) r->ready(r->ready_arg, layer);
}

// Rows [lo, lo + n) of the batch, with pass a, into gradient buffer and
// loss j; dropout's masks are those of the rows from row0 on.
static void train_rows(sf_replica *r, uint32_t j, uint32_t a, uint32_t lo, uint32_t n, uint32_t row0) {
    const sf_model *m = r->m;
    size_t xrow = sf_model_x_len(m, r->window);
    r->loss[j] = 0;
    if (n == 0) {
        memset(r->g[j], 0, m->nparams * sizeof(float));
        for (uint32_t i = m->nlayers; i-- > 0;)
            if (m->layer[i].kind != SF_LAYER_DROPOUT) part_done(r, i);
        return;
    }
    sf_cpu_pass_forward(r->act[a], r->w, r->x + lo * xrow, n, true, r->seed, row0);
    r->loss[j] = sf_cpu_pass_backward(r->act[a], r->g[j], r->w, r->x + lo * xrow, r->y + (size_t)lo * m->values, n,
                                      r->global, part_done, r);
}

static void train_part(sf_replica *r, uint32_t p) {
    uint32_t lo, n;
    part_rows(r, p, &lo, &n);
    train_rows(r, p, p, lo, n, lo);
}

static void train_split(sf_replica *r, uint32_t p) {
    for (uint32_t j = p; j < r->nsplit; j += r->parts)
        train_rows(r, j, p, r->split_off[j], r->split_count[j], r->split_row0[j]);
}

static void predict_part(sf_replica *r, uint32_t p) {
    uint32_t lo, n;
    part_rows(r, p, &lo, &n);
    if (n == 0) return;
    const sf_model *m = r->m;
    size_t xrow = sf_model_x_len(m, r->window);
    const float *pred = sf_cpu_pass_forward(r->act[p], r->w, r->x + lo * xrow, n, false, 0, lo);
    memcpy(r->out + (size_t)lo * m->outputs, pred, (size_t)n * m->outputs * sizeof(float));
}

static void cpu_close(sf_replica *r) {
    if (!r) return;
    pthread_mutex_lock(&r->mu);
    r->quit = true;
    pthread_cond_broadcast(&r->go);
    pthread_mutex_unlock(&r->mu);
    for (uint32_t t = 0; t < r->started; t++) pthread_join(r->threads[t], NULL);
    for (uint32_t p = 0; r->act && p < r->parts; p++) sf_cpu_pass_close(r->act[p]);
    for (uint32_t p = 0; r->g && p < r->ngrads; p++) free(r->g[p]);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->go);
    pthread_cond_destroy(&r->done);
    free(r->act), free(r->g), free(r->loss), free(r->finished), free(r->threads);
    free(r->w), free(r->m1), free(r->v), free(r->packed);
    free(r);
}

static int cpu_open(sf_replica **out, const sf_model *m, uint32_t batch, uint32_t window, const sf_replica_opts *o,
                    sf_err *e) {
    *out = NULL;
    sf_replica *r = calloc(1, sizeof *r);
    if (!r) return sf_err_set(e, SF_ENOMEM, "out of memory for a replica");
    r->m = m;
    r->sum_parts = o->sum_parts;
    r->window = window;
    sizes(batch, o, &r->parts, &r->ngrads, &r->capacity);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->go, NULL);
    pthread_cond_init(&r->done, NULL);
    size_t n = m->nparams ? m->nparams : 1;
    r->w = calloc(n, sizeof(float)), r->m1 = calloc(n, sizeof(float)), r->v = calloc(n, sizeof(float));
    r->act = calloc(r->parts, sizeof *r->act), r->g = calloc(r->ngrads, sizeof *r->g);
    r->loss = calloc(r->ngrads, sizeof *r->loss), r->threads = calloc(r->parts, sizeof *r->threads);
    r->finished = calloc(m->nlayers, sizeof *r->finished);
    int rc = r->w && r->m1 && r->v && r->act && r->g && r->loss && r->threads && r->finished
                 ? 0 : sf_err_set(e, SF_ENOMEM, "out of memory for %zu parameters", n);
    for (uint32_t p = 0; !rc && p < r->ngrads; p++)
        if (!(r->g[p] = calloc(n, sizeof(float)))) rc = sf_err_set(e, SF_ENOMEM, "out of memory for gradients");
    // The zero weights packed are zeros, as the panels' padding stays. A
    // bf16 pass packs its own.
    size_t nt = o->precision == SF_PRECISION_FP32 ? sf_cpu_pass_packed_floats(m) : 0;
    if (!rc && nt && !(r->packed = calloc(nt, sizeof(float))))
        rc = sf_err_set(e, SF_ENOMEM, "out of memory for the packed weights");
    for (uint32_t p = 0; !rc && p < r->parts; p++) {
        rc = sf_cpu_pass_open(&r->act[p], m, r->capacity, window, o->precision, e);
        if (!rc) sf_cpu_pass_use_packed(r->act[p], r->packed);
    }
    for (uint32_t p = 1; !rc && p < r->parts; p++) {
        void **arg = malloc(2 * sizeof *arg);
        if (arg) arg[0] = r, arg[1] = (void *)(uintptr_t)p;
        if (!arg || sf_thread_start(&r->threads[r->started], helper_main, arg)) {
            free(arg);
            rc = sf_err_set(e, SF_ENOMEM, "cannot start a replica's threads");
        } else {
            r->started++;  // only threads that exist are joined
        }
    }
    if (rc) {
        cpu_close(r);
        return rc;
    }
    *out = r;
    return 0;
}

static int cpu_load(sf_replica *r, const float *w, const float *m, const float *v, sf_err *e) {
    (void)e;
    size_t bytes = r->m->nparams * sizeof(float);
    if (w) memcpy(r->w, w, bytes);
    if (w && r->packed) sf_cpu_pass_pack(r->m, r->packed, r->w, 0, r->m->nparams);
    if (m) memcpy(r->m1, m, bytes);
    if (v) memcpy(r->v, v, bytes);
    return 0;
}

static int cpu_save(sf_replica *r, float *w, float *m, float *v, sf_err *e) {
    (void)e;
    size_t bytes = r->m->nparams * sizeof(float);
    if (w) memcpy(w, r->w, bytes);
    if (m) memcpy(m, r->m1, bytes);
    if (v) memcpy(v, r->v, bytes);
    return 0;
}

// The first failure of a part's bf16 products, or 0.
static int parts_status(const sf_replica *r, sf_err *e) {
    int rc = 0;
    for (uint32_t p = 0; p < r->parts && !rc; p++) rc = sf_cpu_pass_status(r->act[p], e);
    return rc;
}

static int cpu_train_step(sf_replica *r, const float *x, const float *y, uint32_t count, uint32_t global_batch,
                          uint64_t seed, double *loss, sf_err *e) {
    r->x = x, r->y = y, r->count = count, r->global = global_batch, r->seed = seed, r->nsplit = 0;
    for (uint32_t i = 0; i < r->m->nlayers; i++) atomic_store_explicit(&r->finished[i], 0, memory_order_relaxed);
    run_parts(r, train_part);
    *loss = 0;
    for (uint32_t p = 0; p < r->parts; p++) *loss += r->loss[p];
    return parts_status(r, e);
}

static int cpu_train_parts(sf_replica *r, const float *x, const float *y, uint32_t nparts, const uint32_t *count,
                           const uint32_t *row0, uint32_t global_batch, uint64_t seed, double *loss, sf_err *e) {
    if (nparts == 0 || nparts > r->ngrads || nparts > SF_MAX_PARTS)
        return sf_err_set(e, SF_EINVAL, "a batch of %u parts on a replica opened for %u", nparts, r->ngrads);
    uint32_t at = 0;
    for (uint32_t j = 0; j < nparts; j++) {
        if (count[j] > r->capacity)
            return sf_err_set(e, SF_EINVAL, "a part of %u windows on a replica opened for %u", count[j], r->capacity);
        r->split_off[j] = at, at += count[j];
    }
    r->x = x, r->y = y, r->count = at, r->global = global_batch, r->seed = seed;
    r->nsplit = nparts, r->split_count = count, r->split_row0 = row0;
    for (uint32_t i = 0; i < r->m->nlayers; i++) atomic_store_explicit(&r->finished[i], 0, memory_order_relaxed);
    run_parts(r, train_split);
    *loss = 0;
    for (uint32_t j = 0; j < nparts; j++) *loss += r->loss[j];
    r->nsplit = 0;
    return parts_status(r, e);
}

static float *cpu_gradients(sf_replica *r) { return r->g[0]; }

static float *cpu_part_gradients(sf_replica *r, uint32_t j) { return j < r->ngrads ? r->g[j] : NULL; }

static void cpu_on_layer_done(sf_replica *r, sf_layer_done fn, void *arg) { r->ready = fn, r->ready_arg = arg; }

// Thread p's slice of the parameters, cut on 16 floats (a cache line).
static void apply_part(sf_replica *r, uint32_t p) {
    size_t n = r->m->nparams, lines = (n + 15) / 16;
    size_t lo = 16 * (lines * p / r->parts), hi = 16 * (lines * (p + 1) / r->parts);
    hi = hi < n ? hi : n;
    if (lo >= hi) return;
    sf_adam_update(r->w + lo, r->m1 + lo, r->v + lo, r->g[0] + lo, hi - lo, r->adam, r->adam_step);
    if (r->packed) sf_cpu_pass_pack(r->m, r->packed, r->w, lo, hi);
}

// The update on every thread of the replica, each a slice (each parameter's
// update reads its own values alone: the same weights), and the slice's
// part of the packed recurrent kernels the next passes read: made once per
// replica and update instead of once per part and step. On one thread the
// update was 3-4% of a step at batch 32 on 2 cores, the other thread idle.
// Since it vectorizes (sqrtf without errno) it takes 0.25 ms on one core
// for the default model's 650k parameters, against 1.6 scalar.
static int cpu_apply(sf_replica *r, const sf_adam *a, uint64_t step, sf_err *e) {
    (void)e;
    r->adam = a, r->adam_step = step;
    run_parts(r, apply_part);
    return 0;
}

static int cpu_predict(sf_replica *r, float *out, const float *x, uint32_t count, sf_err *e) {
    r->x = x, r->out = out, r->count = count;
    run_parts(r, predict_part);
    return parts_status(r, e);
}

// Its weights, Adam state, each gradient buffer, and each thread's
// activations, in whichever precision holds more (fp32's with the packed
// recurrent kernels).
static uint64_t cpu_host_memory(const sf_model *m, uint32_t batch, uint32_t window, const sf_replica_opts *o) {
    uint32_t parts, ngrads, per;
    sizes(batch, o, &parts, &ngrads, &per);
    uint64_t fp32 = parts * sf_cpu_pass_bytes(m, per, window, SF_PRECISION_FP32) +
                    sf_cpu_pass_packed_floats(m) * sizeof(float);
    uint64_t bf16 = parts * sf_cpu_pass_bytes(m, per, window, SF_PRECISION_BF16);
    return (3 + (uint64_t)ngrads) * m->nparams * sizeof(float) + (fp32 > bf16 ? fp32 : bf16);
}

const sf_backend sf_backend_cpu = {
    .name = "cpu",
    .open = cpu_open,
    .close = cpu_close,
    .load = cpu_load,
    .save = cpu_save,
    .train_step = cpu_train_step,
    .gradients = cpu_gradients,
    .train_parts = cpu_train_parts,
    .part_gradients = cpu_part_gradients,
    .on_layer_done = cpu_on_layer_done,
    .apply = cpu_apply,
    .predict = cpu_predict,
    .host_memory = cpu_host_memory,
};
