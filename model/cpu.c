// One replica's forward and backward pass on CPU, layer by layer on the
// kernels. Buffers are sized for the largest batch once, at open.
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

typedef struct {
    float *out, *dout;         // the layer's output and its gradient: (B,T,units) or (B,units)
    float *h, *c, *gates, *dh; // LSTM: every step's output and cell, the gates, dh for every step
    float *mask;               // dropout
    const float *y;            // what the next layer reads (out, or the input when dropout is off)
} layer_state;

struct sf_cpu_replica {
    const sf_model *m;
    size_t batch, window;
    layer_state *ls;
    float *work;  // LSTM backward scratch
    bool training;
};

// Values per window of layer l's output.
static size_t out_size(const sf_cpu_replica *r, const sf_layer *l) {
    return (l->sequences ? r->window : 1) * l->units;
}

// Floats of one part's buffers, as sf_cpu_replica_open allocates them.
static uint64_t part_floats(const sf_model *m, uint64_t B, uint64_t T) {
    uint64_t n = 0, work = 0;
    for (uint32_t i = 0; i < m->nlayers; i++) {
        const sf_layer *l = &m->layer[i];
        uint64_t out = B * (l->sequences ? T : 1) * l->units;
        n += 2 * out;
        if (l->kind == SF_LAYER_LSTM) {
            n += B * T * l->units * 7;  // h, c, dh, and the four gates
            uint64_t w = sf_lstm_backward_work(B, T, l->units);
            if (w > work) work = w;
        } else if (l->kind == SF_LAYER_DROPOUT) {
            n += out;
        }
    }
    return n + work;
}

uint64_t sf_cpu_replica_memory(const sf_model *m, uint32_t batch, uint32_t window, uint32_t threads) {
    uint32_t parts = threads < 1 ? 1 : threads;
    while (parts > 1 && batch / parts < 8) parts--;
    uint64_t per = (batch + parts - 1) / parts;
    // w, m, v, and a gradient buffer per part.
    return ((3 + (uint64_t)parts) * m->nparams + parts * part_floats(m, per, window)) * sizeof(float);
}

int sf_cpu_replica_open(sf_cpu_replica **out, const sf_model *m, uint32_t batch, uint32_t window, sf_err *e) {
    sf_cpu_replica *r = calloc(1, sizeof *r);
    *out = NULL;
    if (!r) return sf_err_set(e, SF_ENOMEM, "out of memory for a replica");
    r->m = m;
    r->batch = batch;
    r->window = window;
    r->ls = calloc(m->nlayers, sizeof *r->ls);
    bool ok = r->ls != NULL;
    size_t B = batch, T = window, work = 0;
    for (uint32_t i = 0; ok && i < m->nlayers; i++) {
        const sf_layer *l = &m->layer[i];
        layer_state *s = &r->ls[i];
        size_t n = B * out_size(r, l);
        s->out = malloc(n * sizeof(float));
        s->dout = malloc(n * sizeof(float));
        ok = s->out && s->dout;
        if (l->kind == SF_LAYER_LSTM) {
            size_t U = l->units;
            s->h = malloc(B * T * U * sizeof(float));
            s->c = malloc(B * T * U * sizeof(float));
            s->gates = malloc(B * T * 4 * U * sizeof(float));
            s->dh = malloc(B * T * U * sizeof(float));
            ok = ok && s->h && s->c && s->gates && s->dh;
            size_t w = sf_lstm_backward_work(B, T, U);
            if (w > work) work = w;
        } else if (l->kind == SF_LAYER_DROPOUT) {
            ok = ok && (s->mask = malloc(n * sizeof(float)));
        }
    }
    if (ok) ok = (r->work = malloc(work * sizeof(float))) != NULL;
    if (!ok) {
        sf_cpu_replica_close(r);
        return sf_err_set(e, SF_ENOMEM, "out of memory for a replica's activations (batch %u, window %u)", batch,
                          window);
    }
    *out = r;
    return 0;
}

void sf_cpu_replica_close(sf_cpu_replica *r) {
    if (!r) return;
    for (uint32_t i = 0; r->ls && i < r->m->nlayers; i++) {
        layer_state *s = &r->ls[i];
        free(s->out), free(s->dout), free(s->h), free(s->c), free(s->gates), free(s->dh), free(s->mask);
    }
    free(r->ls);
    free(r->work);
    free(r);
}

const float *sf_cpu_replica_forward(sf_cpu_replica *r, const float *params, const float *x, uint32_t count,
                                    bool training, uint64_t seed, uint64_t first_row) {
    const sf_model *m = r->m;
    size_t B = count, T = r->window;
    const float *in = x;
    r->training = training;
    for (uint32_t i = 0; i < m->nlayers; i++) {
        const sf_layer *l = &m->layer[i];
        layer_state *s = &r->ls[i];
        if (l->kind == SF_LAYER_LSTM) {
            size_t U = l->units;
            sf_lstm_forward(s->h, s->c, s->gates, in, params + l->kernel, params + l->recurrent, params + l->bias, B,
                            T, l->in, U);
            if (l->sequences) {
                s->y = s->h;
            } else {
                for (size_t b = 0; b < B; b++) memcpy(s->out + b * U, s->h + (b * T + T - 1) * U, U * sizeof(float));
                s->y = s->out;
            }
        } else if (l->kind == SF_LAYER_DROPOUT) {
            if (training && l->rate > 0) {
                // Each layer its own masks: the layer's index is in the seed.
                sf_dropout_forward(s->out, s->mask, in, B * out_size(r, l), l->rate,
                                   seed ^ (0x2545f4914f6cdd1dull * (i + 1)), first_row * out_size(r, l));
                s->y = s->out;
            } else {
                s->y = in;
            }
        } else {
            sf_dense_forward(s->out, in, params + l->kernel, params + l->bias, B, l->in, l->units);
            s->y = s->out;
        }
        in = s->y;
    }
    return in;
}

double sf_cpu_replica_backward(sf_cpu_replica *r, float *grads, const float *params, const float *x,
                               const float *y, uint32_t count, uint32_t global_batch) {
    const sf_model *m = r->m;
    size_t B = count, T = r->window;
    uint32_t last = m->nlayers - 1;
    const float *pred = r->ls[last].y;
    double loss = sf_mse_sum(pred, y, B, m->outputs);
    sf_mse_backward(r->ls[last].dout, pred, y, B, m->outputs, 1.0f / (float)global_batch);
    for (uint32_t i = m->nlayers; i-- > 0;) {
        const sf_layer *l = &m->layer[i];
        layer_state *s = &r->ls[i];
        const float *in = i ? r->ls[i - 1].y : x;
        float *din = i ? r->ls[i - 1].dout : NULL;  // the first layer's input needs no gradient
        if (l->kind == SF_LAYER_LSTM) {
            size_t U = l->units;
            const float *dh = s->dout;
            if (!l->sequences) {  // only the last step's output was used
                memset(s->dh, 0, B * T * U * sizeof(float));
                for (size_t b = 0; b < B; b++) memcpy(s->dh + (b * T + T - 1) * U, s->dout + b * U, U * sizeof(float));
                dh = s->dh;
            }
            sf_lstm_backward(din, grads + l->kernel, grads + l->recurrent, grads + l->bias, dh, in, params + l->kernel,
                             params + l->recurrent, s->h, s->c, s->gates, r->work, B, T, l->in, U);
        } else if (l->kind == SF_LAYER_DROPOUT) {
            if (!din) continue;
            size_t n = B * out_size(r, l);
            if (r->training && l->rate > 0) sf_dropout_backward(din, s->dout, s->mask, n);
            else memcpy(din, s->dout, n * sizeof(float));
        } else {
            sf_dense_backward(din, grads + l->kernel, grads + l->bias, s->dout, in, params + l->kernel, B, l->in,
                              l->units);
        }
    }
    return loss;
}

// ---- the CPU backend ----

// A replica cuts each batch into one part per thread (rows [n p / P, n (p +
// 1) / P)), each with its own activations and gradient buffer, and sums the
// parts' gradients in part order. Each thread runs BLAS on its own part, so
// small per-step products are not split across cores (measured: R = 1 on 2
// cores went from the speed of one BLAS with 2 threads to that of 2
// replicas).
struct sf_replica {
    const sf_model *m;
    float *w, *m1, *v;  // weights, Adam's m and v
    uint32_t parts;
    sf_cpu_replica **act;  // per part
    float **g;             // per part; g[0] is the replica's gradient buffer
    double *loss;          // per part
    // the step being run
    const float *x, *y;
    float *out;
    uint32_t count, global;
    uint64_t seed;
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

static void train_part(sf_replica *r, uint32_t p) {
    uint32_t lo, n;
    part_rows(r, p, &lo, &n);
    const sf_model *m = r->m;
    size_t xrow = (size_t)r->act[p]->window * m->inputs;
    r->loss[p] = 0;
    if (n == 0) {
        memset(r->g[p], 0, m->nparams * sizeof(float));
        return;
    }
    sf_cpu_replica_forward(r->act[p], r->w, r->x + lo * xrow, n, true, r->seed, lo);
    r->loss[p] = sf_cpu_replica_backward(r->act[p], r->g[p], r->w, r->x + lo * xrow, r->y + (size_t)lo * m->outputs,
                                         n, r->global);
}

// Slice p of the gradient: the parts' sum, in part order, into g[0].
static void sum_part(sf_replica *r, uint32_t p) {
    size_t n = r->m->nparams, lo = n * p / r->parts, hi = n * (p + 1) / r->parts;
    for (uint32_t q = 1; q < r->parts; q++)
        for (size_t k = lo; k < hi; k++) r->g[0][k] += r->g[q][k];
}

static void predict_part(sf_replica *r, uint32_t p) {
    uint32_t lo, n;
    part_rows(r, p, &lo, &n);
    if (n == 0) return;
    const sf_model *m = r->m;
    size_t xrow = (size_t)r->act[p]->window * m->inputs;
    const float *pred = sf_cpu_replica_forward(r->act[p], r->w, r->x + lo * xrow, n, false, 0, lo);
    memcpy(r->out + (size_t)lo * m->outputs, pred, (size_t)n * m->outputs * sizeof(float));
}

static void cpu_close(sf_replica *r) {
    if (!r) return;
    pthread_mutex_lock(&r->mu);
    r->quit = true;
    pthread_cond_broadcast(&r->go);
    pthread_mutex_unlock(&r->mu);
    for (uint32_t t = 0; t < r->started; t++) pthread_join(r->threads[t], NULL);
    for (uint32_t p = 0; r->act && p < r->parts; p++) sf_cpu_replica_close(r->act[p]);
    for (uint32_t p = 0; r->g && p < r->parts; p++) free(r->g[p]);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->go);
    pthread_cond_destroy(&r->done);
    free(r->act), free(r->g), free(r->loss), free(r->threads);
    free(r->w), free(r->m1), free(r->v);
    free(r);
}

static int cpu_open(sf_replica **out, const sf_model *m, uint32_t batch, uint32_t window, const sf_replica_opts *o,
                    sf_err *e) {
    uint32_t threads = o->threads;
    *out = NULL;
    if (o->precision != SF_PRECISION_FP32) return sf_err_set(e, SF_EINVAL, "the CPU backend computes in fp32 only");
    sf_replica *r = calloc(1, sizeof *r);
    if (!r) return sf_err_set(e, SF_ENOMEM, "out of memory for a replica");
    r->m = m;
    // A part of fewer than 8 rows costs more in overhead than it saves.
    r->parts = threads < 1 ? 1 : threads;
    while (r->parts > 1 && batch / r->parts < 8) r->parts--;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->go, NULL);
    pthread_cond_init(&r->done, NULL);
    size_t n = m->nparams ? m->nparams : 1;
    r->w = calloc(n, sizeof(float)), r->m1 = calloc(n, sizeof(float)), r->v = calloc(n, sizeof(float));
    r->act = calloc(r->parts, sizeof *r->act), r->g = calloc(r->parts, sizeof *r->g);
    r->loss = calloc(r->parts, sizeof *r->loss), r->threads = calloc(r->parts, sizeof *r->threads);
    int rc = r->w && r->m1 && r->v && r->act && r->g && r->loss && r->threads
                 ? 0 : sf_err_set(e, SF_ENOMEM, "out of memory for %zu parameters", n);
    uint32_t per = (batch + r->parts - 1) / r->parts;
    for (uint32_t p = 0; !rc && p < r->parts; p++) {
        if (!(r->g[p] = calloc(n, sizeof(float)))) rc = sf_err_set(e, SF_ENOMEM, "out of memory for gradients");
        else rc = sf_cpu_replica_open(&r->act[p], m, per, window, e);
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

static int cpu_train_step(sf_replica *r, const float *x, const float *y, uint32_t count, uint32_t global_batch,
                          uint64_t seed, double *loss, sf_err *e) {
    (void)e;
    r->x = x, r->y = y, r->count = count, r->global = global_batch, r->seed = seed;
    run_parts(r, train_part);
    if (r->parts > 1) run_parts(r, sum_part);
    *loss = 0;
    for (uint32_t p = 0; p < r->parts; p++) *loss += r->loss[p];
    return 0;
}

static float *cpu_gradients(sf_replica *r) { return r->g[0]; }

static int cpu_apply(sf_replica *r, const sf_adam *a, uint64_t step, sf_err *e) {
    (void)e;
    sf_adam_update(r->w, r->m1, r->v, r->g[0], r->m->nparams, a, step);
    return 0;
}

static int cpu_predict(sf_replica *r, float *out, const float *x, uint32_t count, sf_err *e) {
    (void)e;
    r->x = x, r->out = out, r->count = count;
    run_parts(r, predict_part);
    return 0;
}

const sf_backend sf_backend_cpu = {"cpu",          cpu_open,      cpu_close, cpu_load, cpu_save, cpu_train_step,
                                   cpu_gradients, cpu_apply, cpu_predict, NULL, NULL, NULL, NULL, NULL};
