// Finite differences against every layer's backward pass, in float32.
// Central differences with step h have a truncation error of order h^2 and a
// rounding error of order (float epsilon x loss) / h; with h = 4e-3 and a
// loss of order 1 both are near 1e-5, far below the 2% of a gradient's norm
// that a wrong derivative (a dropped term, a wrong gate) costs. Dropout runs
// in training mode with a fixed seed, so its masks are part of the function.
// Models with covariates (--future-features, --series-features) too.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "tests/common.h"

static uint64_t rng_state = 42;
static float uniformf(float lo, float hi) {
    return lo + (hi - lo) * (float)(sf_splitmix64(&rng_state) >> 40) * 0x1p-24f;
}

static double loss_at(sf_cpu_pass *r, const sf_model *m, const float *params, const float *x, const float *y,
                      uint32_t B, uint32_t global, uint64_t seed) {
    const float *pred = sf_cpu_pass_forward(r, params, x, B, true, seed, 0);
    return sf_loss_sum(&m->loss, pred, y, B, m->values) / global;
}

// outputs: the target values y holds per row; loss: --loss text (NULL:
// MSE); extra: covariates beside the head, the last series of them a
// series' one-hot through an embedding of embed values (0: none).
static void check_full(const char *spec, const char *loss_text, uint32_t inputs, uint32_t outputs, uint32_t B,
                       uint32_t T, uint32_t extra, uint32_t series, uint32_t embed) {
    sf_model m;
    sf_err e = {0};
    sf_cpu_pass *r;
    sf_loss lf = {.kind = SF_LOSS_MSE};
    if ((loss_text && sf_loss_parse(&lf, loss_text, &e)) ||
        sf_model_parse_loss(&m, spec, inputs, outputs, &lf, &e) || sf_model_set_extra(&m, extra, &e) ||
        (embed && sf_model_set_embedding(&m, series, embed, &e)) ||
        sf_cpu_pass_open(&r, &m, B, T, SF_PRECISION_FP32, &e)) {
        CHECK(0, "%s: %s", spec, e.msg);
        return;
    }
    size_t X = sf_model_x_len(&m, T);
    float *params = malloc(m.nparams * sizeof(float)), *grads = malloc(m.nparams * sizeof(float));
    float *x = malloc((size_t)B * X * sizeof(float)), *y = malloc((size_t)B * outputs * sizeof(float));
    sf_model_init(&m, params, 7);
    // Biases away from their zero init, so that their gradients are generic.
    for (size_t k = 0; k < m.nparams; k++) params[k] += uniformf(-0.1f, 0.1f);
    for (size_t k = 0; k < (size_t)B * X; k++) x[k] = uniformf(-1.5f, 1.5f);
    for (size_t b = 0; embed && b < B; b++) {  // window b is series b % series
        memset(x + b * X + X - series, 0, series * sizeof(float));
        x[b * X + X - series + b % series] = 1;
    }
    for (size_t k = 0; k < (size_t)B * outputs; k++) y[k] = uniformf(-1, 1);
    uint32_t global = 2 * B;  // the replica's share of a larger global batch
    uint64_t seed = 99;
    sf_cpu_pass_forward(r, params, x, B, true, seed, 0);
    double loss = sf_cpu_pass_backward(r, grads, params, x, y, B, global, NULL, NULL) / global;
    CHECK(fabs(loss - loss_at(r, &m, params, x, y, B, global, seed)) < 1e-9, "%s: loss differs between calls", spec);
    sf_tensor t[3 * SF_MODEL_MAX_LAYERS];
    uint32_t nt = sf_model_tensors(&m, t);
    for (uint32_t k = 0; k < nt; k++) {
        size_t n = t[k].shape[0] * (t[k].rank == 2 ? t[k].shape[1] : 1);
        double num = 0, den = 0;
        for (int s = 0; s < 24; s++) {
            size_t i = t[k].offset + sf_splitmix64(&rng_state) % n;
            float keep = params[i], h = 4e-3f;
            params[i] = keep + h;
            double up = loss_at(r, &m, params, x, y, B, global, seed);
            params[i] = keep - h;
            double down = loss_at(r, &m, params, x, y, B, global, seed);
            params[i] = keep;
            double fd = (up - down) / (2.0 * h);
            num += (fd - grads[i]) * (fd - grads[i]);
            den += fd * fd;
        }
        CHECK(sqrt(num) <= 0.02 * sqrt(den) + 1e-7, "%s: %s: gradient off by %.2g of its norm %.3g", spec,
              t[k].name, den > 0 ? sqrt(num / den) : sqrt(num), sqrt(den));
    }
    free(params), free(grads), free(x), free(y);
    sf_cpu_pass_close(r);
}

static void check_model(const char *spec, uint32_t inputs, uint32_t outputs, uint32_t B, uint32_t T) {
    check_full(spec, NULL, inputs, outputs, B, T, 0, 0, 0);
}

static void check_loss(const char *spec, const char *loss_text, uint32_t inputs, uint32_t outputs, uint32_t B,
                       uint32_t T) {
    check_full(spec, loss_text, inputs, outputs, B, T, 0, 0, 0);
}

static void check_covariates(const char *spec, uint32_t inputs, uint32_t outputs, uint32_t B, uint32_t T,
                             uint32_t extra, uint32_t series, uint32_t embed) {
    check_full(spec, NULL, inputs, outputs, B, T, extra, series, embed);
}

int main(void) {
    check_model("lstm:6,dense", 3, 2, 4, 5);
    check_model("lstm:5,dropout:0.3,lstm:7,dropout:0.25,dense:3,dense", 4, 2, 3, 6);
    check_model("dropout:0.2,lstm:4,lstm:3,dense", 2, 1, 5, 4);
    check_model("lstm:8,dense", 1, 3, 1, 1);
    // GRU: alone, one step, and between LSTMs (its dx reaches the LSTM below).
    check_model("gru:6,dense", 3, 2, 4, 5);
    check_model("gru:5,dense", 2, 1, 2, 1);
    check_model("lstm:5,dropout:0.3,gru:7,gru:4,dense:3,dense", 4, 2, 3, 6);
    // --loss: each loss's gradient through the model, 6 target values a row
    // (3 steps of 2 targets); huber's delta small enough that both its
    // square and its line are hit. Kinks (MAE, pinball) are not crossed by
    // a step this small but for a chance prediction within h of its target.
    check_loss("lstm:6,dense", "mae", 3, 6, 4, 5);
    check_loss("lstm:6,dense", "huber:0.3", 3, 6, 4, 5);
    check_loss("lstm:6,dense:5,dense", "quantile:0.1,0.5,0.9", 3, 6, 4, 5);
    // Covariates beside the head, after the dropout below it; and the last 3
    // of them a series' one-hot through a 4-value embedding (its table's gradient).
    check_covariates("lstm:5,dropout:0.3,gru:4,dropout:0.2,dense:3,dense", 3, 2, 4, 5, 5, 0, 0);
    check_covariates("lstm:5,dropout:0.3,gru:4,dropout:0.2,dense:3,dense", 3, 2, 6, 5, 5, 3, 4);
    // A quantile head (values x quantiles wide) whose input holds covariates
    // and an embedding: the loss's gradient reaches the table and the
    // covariates' kernel rows.
    check_full("lstm:5,dropout:0.3,gru:4,dense:3,dense", "quantile:0.1,0.5,0.9", 3, 4, 6, 5, 7, 3, 4);
    check_full("lstm:5,dense", "huber:0.3", 3, 4, 4, 5, 4, 0, 0);
    return TEST_EXIT();
}
