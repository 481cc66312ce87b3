// One replica's forward and backward pass on CPU, layer by layer on the
// kernels. Buffers are sized for the largest batch once, at open.
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"

typedef struct {
    float *out, *dout;         // the layer's output and its gradient: (B,T,units) or (B,units)
    float *h, *c, *gates, *dh; // LSTM: every step's output and cell, the gates, dh for every step;
                               // GRU: c holds the recurrent product's h part (B,T,U)
    float *mask;               // dropout
    const float *y;            // what the next layer reads (out, or the input when dropout is off)
    sf_bf16_layer q;           // bf16: the layer's rounded operands
} layer_state;

struct sf_cpu_pass {
    const sf_model *m;
    size_t batch, window;
    layer_state *ls;
    float *work;     // LSTM backward scratch, the GRU's forward and backward scratch
    sf_matmul *mm;   // bf16 products, NULL in fp32
    sf_bf16 *dbf16;  // bf16 backward scratch, shared by the layers
    // Covariates (m->extra): the windows' rows apart from them (B,T,inputs),
    // and the head's input, the layer below's output beside them, and its
    // gradient (B, head's in)
    float *xs, *cat, *dcat;
    const float *packed;  // every recurrent layer's Ur packed, the caller's (sf_cpu_pass_use_packed), or NULL
    bool training;
};

const char *sf_precision_name(enum sf_precision p) {
    static const char *const names[] = {[SF_PRECISION_FP32] = "fp32", [SF_PRECISION_TF32] = "tf32",
                                        [SF_PRECISION_BF16] = "bf16"};
    return names[p];
}

const char *sf_rnn_algo_name(enum sf_rnn_algo a) {
    static const char *const names[] = {[SF_RNN_STANDARD] = "standard", [SF_RNN_PERSISTENT] = "persistent",
                                        [SF_RNN_PERSISTENT_SMALL] = "persistent-small"};
    return names[a];
}

// Values per window of layer l's output.
static size_t out_size(const sf_cpu_pass *r, const sf_layer *l) {
    return (l->sequences ? r->window : 1) * l->units;
}

// What a part holds beyond its float32 activations in bf16: each layer's
// rounded operands (sizes in bf16 values).
typedef struct {
    uint64_t x, h, W, Ur;
} bf16_sizes;

static bf16_sizes bf16_of(const sf_layer *l, uint64_t B, uint64_t T) {
    uint64_t G = sf_layer_gates(l) * (uint64_t)l->units;
    if (sf_layer_recurrent(l))
        return (bf16_sizes){.x = T * B * l->in, .h = T * B * l->units, .W = l->in * G, .Ur = l->units * G};
    if (l->kind == SF_LAYER_DENSE) return (bf16_sizes){.x = B * l->in, .W = (uint64_t)l->in * l->units};
    return (bf16_sizes){0};
}

// The backward scratch every layer shares: floats of work, bf16 values of
// rounded gradients.
static void scratch_of(const sf_model *m, uint64_t B, uint64_t T, bool bf16, uint64_t *work, uint64_t *grads) {
    *work = *grads = 0;
    for (uint32_t i = 0; i < m->nlayers; i++) {
        const sf_layer *l = &m->layer[i];
        uint64_t w = 0, g = 0;
        if (l->kind == SF_LAYER_LSTM) {
            w = bf16 ? sf_lstm_backward_bf16_work(B, T, l->in, l->units) : sf_lstm_backward_work(B, T, l->units);
            g = T * B * 4 * l->units;
        } else if (l->kind == SF_LAYER_GRU) {
            w = bf16 ? sf_gru_backward_bf16_work(B, T, l->in, l->units) : sf_gru_backward_work(B, T, l->units);
            uint64_t f = sf_gru_forward_work(B, l->units);
            w = f > w ? f : w;
            g = T * B * 6 * l->units;  // the rounded dgx and dgr
        } else if (l->kind == SF_LAYER_DENSE) {
            g = B * l->units;
        }
        if (w > *work) *work = w;
        if (bf16 && g > *grads) *grads = g;
    }
}

uint64_t sf_cpu_pass_bytes(const sf_model *m, uint32_t batch, uint32_t window, enum sf_precision precision) {
    uint64_t B = batch, T = window, floats = 0, halves = 0, work, grads;
    bool bf16 = precision == SF_PRECISION_BF16;
    for (uint32_t i = 0; i < m->nlayers; i++) {
        const sf_layer *l = &m->layer[i];
        uint64_t out = B * (l->sequences ? T : 1) * l->units;
        floats += 2 * out;
        if (sf_layer_recurrent(l)) floats += B * T * l->units * (3 + sf_layer_gates(l));  // h, c, dh, the gates
        else if (l->kind == SF_LAYER_DROPOUT) floats += out;
        bf16_sizes q = bf16_of(l, B, T);
        if (bf16) halves += q.x + q.h + q.W + q.Ur;
        if (bf16 && sf_layer_recurrent(l)) {  // W, Ur and their transposes, packed
            uint64_t C = l->in, U = l->units, G = sf_layer_gates(l) * U;
            halves += (sf_matmul_packed_bytes(C, G) + sf_matmul_packed_bytes(U, G) + sf_matmul_packed_bytes(G, C) +
                       sf_matmul_packed_bytes(G, U)) / sizeof(sf_bf16);
        }
    }
    if (m->extra) floats += B * T * m->inputs + 2 * B * m->layer[m->head].in;
    scratch_of(m, B, T, bf16, &work, &grads);
    return (floats + work) * sizeof(float) + (halves + grads) * sizeof(sf_bf16);
}

// Floats of layer l's packed Ur: none unless it is recurrent.
static size_t packed_floats(const sf_layer *l) {
    return sf_layer_recurrent(l) ? sf_recurrent_packed_floats(l->units, sf_layer_gates(l) * (size_t)l->units) : 0;
}

size_t sf_cpu_pass_packed_floats(const sf_model *m) {
    size_t n = 0;
    for (uint32_t i = 0; i < m->nlayers; i++) n += packed_floats(&m->layer[i]);
    return n;
}

void sf_cpu_pass_pack(const sf_model *m, float *t, const float *params, size_t first, size_t end) {
    for (uint32_t i = 0; i < m->nlayers; i++) {
        const sf_layer *l = &m->layer[i];
        if (!sf_layer_recurrent(l)) continue;
        size_t U = l->units, G = sf_layer_gates(l) * U, lo = l->recurrent, hi = lo + U * G;
        size_t a = first > lo ? first : lo, b = end < hi ? end : hi;
        if (a < b) sf_recurrent_pack(t, params + lo, U, G, a - lo, b - lo);
        t += packed_floats(l);
    }
}

void sf_cpu_pass_use_packed(sf_cpu_pass *r, const float *t) { r->packed = t; }

// The rounded operands of layer s, when the pass computes in bf16.
static bool bf16_open(sf_cpu_pass *r, layer_state *s, const sf_layer *l) {
    bf16_sizes n = bf16_of(l, r->batch, r->window);
    s->q = (sf_bf16_layer){.mm = r->mm, .d = r->dbf16, .slot = 4 * (int)(s - r->ls)};
    bool ok = true;
    sf_bf16 **bufs[] = {&s->q.x, &s->q.h, &s->q.W, &s->q.Ur};
    uint64_t sizes[] = {n.x, n.h, n.W, n.Ur};
    for (int k = 0; k < 4; k++)
        if (sizes[k]) ok = ok && (*bufs[k] = malloc(sizes[k] * sizeof(sf_bf16)));
    return ok;
}

int sf_cpu_pass_open(sf_cpu_pass **out, const sf_model *m, uint32_t batch, uint32_t window,
                     enum sf_precision precision, sf_err *e) {
    *out = NULL;
    if (precision != SF_PRECISION_FP32 && precision != SF_PRECISION_BF16)
        return sf_err_set(e, SF_EUSAGE, "--precision: the CPU backend computes in fp32 or bf16");
    sf_cpu_pass *r = calloc(1, sizeof *r);
    if (!r) return sf_err_set(e, SF_ENOMEM, "out of memory for a replica");
    r->m = m;
    r->batch = batch;
    r->window = window;
    bool bf16 = precision == SF_PRECISION_BF16;
    if (bf16) {
        int rc = sf_matmul_open(&r->mm, e);
        if (rc) {
            free(r);
            return rc;
        }
    }
    r->ls = calloc(m->nlayers, sizeof *r->ls);
    uint64_t work, grads;
    scratch_of(m, batch, window, bf16, &work, &grads);
    bool ok = r->ls && (r->work = malloc(work * sizeof(float)));
    if (ok && bf16) ok = (r->dbf16 = malloc(grads * sizeof(sf_bf16))) != NULL;
    size_t B = batch, T = window;
    if (ok && m->extra) {
        r->xs = malloc(B * T * m->inputs * sizeof(float));
        r->cat = malloc(B * m->layer[m->head].in * sizeof(float));
        r->dcat = malloc(B * m->layer[m->head].in * sizeof(float));
        ok = r->xs && r->cat && r->dcat;
    }
    for (uint32_t i = 0; ok && i < m->nlayers; i++) {
        const sf_layer *l = &m->layer[i];
        layer_state *s = &r->ls[i];
        size_t n = B * out_size(r, l);
        s->out = malloc(n * sizeof(float));
        s->dout = malloc(n * sizeof(float));
        ok = s->out && s->dout;
        if (sf_layer_recurrent(l)) {
            size_t U = l->units;
            s->h = malloc(B * T * U * sizeof(float));
            s->c = malloc(B * T * U * sizeof(float));
            s->gates = malloc(B * T * sf_layer_gates(l) * U * sizeof(float));
            s->dh = malloc(B * T * U * sizeof(float));
            ok = ok && s->h && s->c && s->gates && s->dh;
        } else if (l->kind == SF_LAYER_DROPOUT) {
            ok = ok && (s->mask = malloc(n * sizeof(float)));
        }
        if (ok && bf16) ok = bf16_open(r, s, l);
    }
    if (!ok) {
        sf_cpu_pass_close(r);
        return sf_err_set(e, SF_ENOMEM, "out of memory for a replica's activations (batch %u, window %u)", batch,
                          window);
    }
    *out = r;
    return 0;
}

int sf_cpu_pass_status(const sf_cpu_pass *r, sf_err *e) { return r->mm ? sf_matmul_status(r->mm, e) : 0; }

void sf_cpu_pass_close(sf_cpu_pass *r) {
    if (!r) return;
    for (uint32_t i = 0; r->ls && i < r->m->nlayers; i++) {
        layer_state *s = &r->ls[i];
        free(s->out), free(s->dout), free(s->h), free(s->c), free(s->gates), free(s->dh), free(s->mask);
        free(s->q.x), free(s->q.h), free(s->q.W), free(s->q.Ur);
    }
    free(r->ls);
    free(r->xs), free(r->cat), free(r->dcat);
    free(r->work);
    free(r->dbf16);
    sf_matmul_close(r->mm);
    free(r);
}

const float *sf_cpu_pass_forward(sf_cpu_pass *r, const float *params, const float *x, uint32_t count,
                                    bool training, uint64_t seed, uint64_t first_row) {
    const sf_model *m = r->m;
    size_t B = count, T = r->window, X = sf_model_x_len(m, r->window), TC = T * m->inputs;
    const float *in = x, *packed = r->packed;  // the next recurrent layer's
    r->training = training;
    if (m->extra) {  // the rows for the recurrent layers, the covariates for the head
        for (size_t b = 0; b < B; b++) memcpy(r->xs + b * TC, x + b * X, TC * sizeof(float));
        in = r->xs;
    }
    for (uint32_t i = 0; i < m->nlayers; i++) {
        const sf_layer *l = &m->layer[i];
        layer_state *s = &r->ls[i];
        if (i == m->head && m->extra) {
            // The layer below's output, the extra as x has it but a one-hot to embed, its embedding.
            size_t A = m->extra - m->embed_series, below = l->in - A - m->embed;
            for (size_t b = 0; b < B; b++) {
                memcpy(r->cat + b * l->in, in + b * below, below * sizeof(float));
                memcpy(r->cat + b * l->in + below, x + b * X + TC, A * sizeof(float));
            }
            if (m->embed)
                sf_embed_forward(r->cat + below + A, l->in, x + TC + A, X, params + m->embedding, B, m->embed_series,
                                 m->embed);
            in = r->cat;
        }
        if (sf_layer_recurrent(l)) {
            size_t U = l->units;
            const float *W = params + l->kernel, *Ur = params + l->recurrent, *b = params + l->bias;
            if (l->kind == SF_LAYER_GRU && r->mm)
                sf_gru_forward_bf16(s->h, s->c, s->gates, r->work, in, W, Ur, b, &s->q, B, T, l->in, U);
            else if (l->kind == SF_LAYER_GRU)
                sf_gru_forward(s->h, s->c, s->gates, r->work, in, W, Ur, b, packed, B, T, l->in, U);
            else if (r->mm)
                sf_lstm_forward_bf16(s->h, s->c, s->gates, in, params + l->kernel, params + l->recurrent,
                                     params + l->bias, &s->q, B, T, l->in, U);
            else
                sf_lstm_forward(s->h, s->c, s->gates, in, params + l->kernel, params + l->recurrent, params + l->bias,
                                packed, B, T, l->in, U);
            if (packed) packed += packed_floats(l);
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
            if (r->mm) sf_dense_forward_bf16(s->out, in, params + l->kernel, params + l->bias, &s->q, B, l->in, l->units);
            else sf_dense_forward(s->out, in, params + l->kernel, params + l->bias, B, l->in, l->units);
            s->y = s->out;
        }
        in = s->y;
    }
    return in;
}

double sf_cpu_pass_backward(sf_cpu_pass *r, float *grads, const float *params, const float *x,
                               const float *y, uint32_t count, uint32_t global_batch, sf_layer_done done,
                               void *arg) {
    const sf_model *m = r->m;
    size_t B = count, T = r->window;
    uint32_t last = m->nlayers - 1;
    const float *pred = r->ls[last].y;
    // Past the last recurrent layer's packed Ur: each takes its own on the way down.
    const float *packed = r->packed ? r->packed + sf_cpu_pass_packed_floats(m) : NULL;
    double loss = sf_loss_sum(&m->loss, pred, y, B, m->values);
    sf_loss_backward(&m->loss, r->ls[last].dout, pred, y, B, m->values, 1.0f / (float)global_batch);
    for (uint32_t i = m->nlayers; i-- > 0;) {
        const sf_layer *l = &m->layer[i];
        layer_state *s = &r->ls[i];
        const float *in = i ? r->ls[i - 1].y : m->extra ? r->xs : x;
        float *din = i ? r->ls[i - 1].dout : NULL;  // the first layer's input needs no gradient
        bool head = i == m->head && m->extra;  // its input is cat: the covariates need no gradient
        if (head) in = r->cat, din = r->dcat;
        if (sf_layer_recurrent(l)) {
            size_t U = l->units;
            const float *dh = s->dout;
            if (!l->sequences) {  // only the last step's output was used
                memset(s->dh, 0, B * T * U * sizeof(float));
                for (size_t b = 0; b < B; b++) memcpy(s->dh + (b * T + T - 1) * U, s->dout + b * U, U * sizeof(float));
                dh = s->dh;
            }
            float *dW = grads + l->kernel, *dUr = grads + l->recurrent, *db = grads + l->bias;
            const float *Urp = packed ? (packed -= packed_floats(l)) : NULL;
            if (l->kind == SF_LAYER_GRU && r->mm)
                sf_gru_backward_bf16(din, dW, dUr, db, dh, s->h, s->c, s->gates, &s->q, r->work, B, T, l->in, U);
            else if (l->kind == SF_LAYER_GRU)
                sf_gru_backward(din, dW, dUr, db, dh, in, params + l->kernel, params + l->recurrent, Urp, s->h,
                                s->c, s->gates, r->work, B, T, l->in, U);
            else if (r->mm)
                sf_lstm_backward_bf16(din, grads + l->kernel, grads + l->recurrent, grads + l->bias, dh, s->c,
                                      s->gates, &s->q, r->work, B, T, l->in, U);
            else
                sf_lstm_backward(din, grads + l->kernel, grads + l->recurrent, grads + l->bias, dh, in,
                                 params + l->kernel, params + l->recurrent, Urp, s->h, s->c, s->gates, r->work, B, T,
                                 l->in, U);
        } else if (l->kind == SF_LAYER_DROPOUT) {
            if (!din) continue;
            size_t n = B * out_size(r, l);
            if (r->training && l->rate > 0) sf_dropout_backward(din, s->dout, s->mask, n);
            else memcpy(din, s->dout, n * sizeof(float));
        } else {
            if (r->mm)
                sf_dense_backward_bf16(din, grads + l->kernel, grads + l->bias, s->dout, &s->q, B, l->in, l->units);
            else
                sf_dense_backward(din, grads + l->kernel, grads + l->bias, s->dout, in, params + l->kernel, B, l->in,
                                  l->units);
            if (head) {  // the layer below's part of dcat; an embedding's, summed into its table
                size_t below = l->in - sf_model_head_extra(m);
                for (size_t b = 0; b < B; b++)
                    memcpy(r->ls[i - 1].dout + b * below, r->dcat + b * l->in, below * sizeof(float));
                if (m->embed)
                    sf_embed_backward(grads + m->embedding, r->dcat + l->in - m->embed, l->in,
                                      x + T * m->inputs + m->extra - m->embed_series, sf_model_x_len(m, r->window),
                                      B, m->embed_series, m->embed);
            }
        }
        if (done && l->kind != SF_LAYER_DROPOUT) done(arg, i);
    }
    return loss;
}

