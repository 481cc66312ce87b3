// One replica's forward and backward pass on CPU, layer by layer on the
// kernels. Buffers are sized for the largest batch once, at open.
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"

typedef struct {
    float *out, *dout;         // the layer's output and its gradient: (B,T,units) or (B,units)
    float *h, *c, *gates, *dh; // LSTM: every step's output and cell, the gates, dh for every step
    float *mask;               // dropout
    const float *y;            // what the next layer reads (out, or the input when dropout is off)
} layer_state;

struct sf_cpu_pass {
    const sf_model *m;
    size_t batch, window;
    layer_state *ls;
    float *work;  // LSTM backward scratch
    bool training;
};

// Values per window of layer l's output.
static size_t out_size(const sf_cpu_pass *r, const sf_layer *l) {
    return (l->sequences ? r->window : 1) * l->units;
}

// Floats of one part's buffers, as sf_cpu_pass_open allocates them.
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

uint64_t sf_cpu_pass_bytes(const sf_model *m, uint32_t batch, uint32_t window) {
    return part_floats(m, batch, window) * sizeof(float);
}

int sf_cpu_pass_open(sf_cpu_pass **out, const sf_model *m, uint32_t batch, uint32_t window, sf_err *e) {
    sf_cpu_pass *r = calloc(1, sizeof *r);
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
        sf_cpu_pass_close(r);
        return sf_err_set(e, SF_ENOMEM, "out of memory for a replica's activations (batch %u, window %u)", batch,
                          window);
    }
    *out = r;
    return 0;
}

void sf_cpu_pass_close(sf_cpu_pass *r) {
    if (!r) return;
    for (uint32_t i = 0; r->ls && i < r->m->nlayers; i++) {
        layer_state *s = &r->ls[i];
        free(s->out), free(s->dout), free(s->h), free(s->c), free(s->gates), free(s->dh), free(s->mask);
    }
    free(r->ls);
    free(r->work);
    free(r);
}

const float *sf_cpu_pass_forward(sf_cpu_pass *r, const float *params, const float *x, uint32_t count,
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

double sf_cpu_pass_backward(sf_cpu_pass *r, float *grads, const float *params, const float *x,
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

