// seqfeed's model against float64 references: predictions, the loss (MSE,
// or the fixture's --loss), every gradient, and the losses and weights of 5
// Adam steps with Keras' update.
//   fp32 (PyTorch's numbers, tests/ref/gen_lstm_ref.py, and for the GRU
//   tests/ref/gen_gru_ref.py, for covariates tests/ref/gen_covar_ref.py): float32's
//   tolerances, relative 1e-5 on the loss and predictions, 1e-5 of each
//   gradient's norm, and 1e-6 absolute on weights after 5 steps of lr 1e-3
//   (measured: 1e-7, 3e-7 and 6e-8), so that a wrong term anywhere shows.
//   bf16 (argument "bf16"; tests/ref/gen_bf16_ref.py, which rounds the same
//   operands to bf16 in float64): see main.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/checkpoint.h"
#include "backend/backend.h"
#include "tests/common.h"

// An aligned copy of an F64 tensor (safetensors does not align tensors),
// kept until the program ends.
static double *f64(const sf_st *s, const char *name, size_t count) {
    static double *copies[256];
    static int ncopies;
    const sf_st_entry *t = sf_st_find(s, name);
    bool ok = t && strcmp(t->dtype, "F64") == 0 && t->end - t->begin == count * 8 && ncopies < 256;
    CHECK(ok, "fixture: no F64 tensor '%s' of %zu values", name, count);
    if (!ok) return NULL;
    double *d = copies[ncopies++] = malloc(count * sizeof *d);
    if (d) memcpy(d, sf_st_data(s, t), count * sizeof *d);
    return d;
}

// max |a - b| over n values, and the norms of a - b and b.
static double compare(const float *a, const double *b, size_t n, double *rel) {
    double worst = 0, num = 0, den = 0;
    for (size_t k = 0; k < n; k++) {
        double d = (double)a[k] - b[k];
        worst = fmax(worst, fabs(d));
        num += d * d;
        den += b[k] * b[k];
    }
    *rel = den > 0 ? sqrt(num / den) : sqrt(num);
    return worst;
}

// How far seqfeed may be from a reference: relative on the first step's
// loss, on the later steps' losses and on the predictions' norm, of each
// gradient's norm, and absolute on the weights after the Adam steps.
typedef struct {
    double loss1, loss, pred, grad, weights;
} tolerance;

// The worst of each, over the run, printed so that a tolerance's margin shows.
typedef struct {
    double loss, pred, grad, weights;
} measured;

// Runs the fixture's steps in precision and checks them against its
// tensors named prefix + "pred", prefix + "grad/...", and so on.
static void check_fixture(const char *file, enum sf_precision precision, const char *prefix, const tolerance *tol) {
    char path[512];
    snprintf(path, sizeof path, "%s/tests/ref/%s", getenv("SRCDIR") ? getenv("SRCDIR") : ".", file);
    sf_st *s;
    sf_err e = {0};
    if (sf_st_open(&s, path, &e)) {
        CHECK(0, "%s", e.msg);
        return;
    }
    const char *spec = sf_st_meta(s, "model");
    uint32_t I = (uint32_t)atoi(sf_st_meta(s, "inputs")), O = (uint32_t)atoi(sf_st_meta(s, "outputs"));
    uint32_t B = (uint32_t)atoi(sf_st_meta(s, "batch")), T = (uint32_t)atoi(sf_st_meta(s, "window"));
    int steps = atoi(sf_st_meta(s, "steps"));
    // O: the values y holds per row; a fixture of another loss than MSE names it (gen_loss_ref.py)
    const char *loss_text = sf_st_meta(s, "loss");
    sf_loss loss = {.kind = SF_LOSS_MSE};
    // Covariates (gen_covar_ref.py): each window's extra values after its rows.
    uint32_t A = sf_st_meta(s, "extra") ? (uint32_t)atoi(sf_st_meta(s, "extra")) : 0;
    // and its one-hot's embedding (embedding:D)
    uint32_t S = sf_st_meta(s, "embed") ? (uint32_t)atoi(sf_st_meta(s, "embed_series")) : 0;
    uint32_t D = sf_st_meta(s, "embed") ? (uint32_t)atoi(sf_st_meta(s, "embed")) : 0;
    sf_model m;
    sf_cpu_pass *r;
    if ((loss_text && sf_loss_parse(&loss, loss_text, &e)) || sf_model_parse_loss(&m, spec, I, O, &loss, &e) ||
        sf_model_set_extra(&m, A, &e) || (D && sf_model_set_embedding(&m, S, D, &e)) ||
        sf_cpu_pass_open(&r, &m, B, T, precision, &e)) {
        CHECK(0, "%s: %s", file, e.msg);
        sf_st_close(s);
        return;
    }
    float *p = malloc(m.nparams * sizeof(float)), *g = malloc(m.nparams * sizeof(float));
    float *mo = calloc(m.nparams, sizeof(float)), *v = calloc(m.nparams, sizeof(float));
    float *x = malloc((size_t)B * sf_model_x_len(&m, T) * sizeof(float)), *y = malloc((size_t)B * O * sizeof(float));
    sf_tensor t[3 * SF_MODEL_MAX_LAYERS];
    uint32_t nt = sf_model_tensors(&m, t);
    int rc = sf_st_read_f32(s, "x", x, (size_t)B * sf_model_x_len(&m, T), &e) || sf_st_read_f32(s, "y", y, (size_t)B * O, &e);
    for (uint32_t k = 0; k < nt && !rc; k++)
        rc = sf_st_read_f32(s, t[k].name, p + t[k].offset, t[k].shape[0] * (t[k].rank == 2 ? t[k].shape[1] : 1), &e);
    char name[96];
    snprintf(name, sizeof name, "%spred", prefix);
    const double *pred_ref = f64(s, name, (size_t)B * m.outputs);
    snprintf(name, sizeof name, "%slosses", prefix);
    const double *losses_ref = f64(s, name, (size_t)steps);
    if (rc || !pred_ref || !losses_ref) {
        CHECK(!rc, "%s: %s", file, e.msg);
        goto out;
    }
    const char *what = *prefix ? prefix : "reference ";
    measured worst = {0};
    sf_adam adam = {1e-3f, 0.9f, 0.999f, 1e-7f};
    // As a replica does: the recurrent kernels packed once per update, here
    // in two slices cut within a row, as a replica's threads cut them.
    float *packed = calloc(sf_cpu_pass_packed_floats(&m) + 1, sizeof(float));
    CHECK(packed, "%s: out of memory", file);
    if (!packed) goto out;
    if (precision == SF_PRECISION_FP32) sf_cpu_pass_use_packed(r, packed);
    for (int step = 1; step <= steps; step++) {
        sf_cpu_pass_pack(&m, packed, p, 0, m.nparams / 3);
        sf_cpu_pass_pack(&m, packed, p, m.nparams / 3, m.nparams);
        const float *pred = sf_cpu_pass_forward(r, p, x, B, false, 0, 0);
        double loss = sf_cpu_pass_backward(r, g, p, x, y, B, B, NULL, NULL) / B, rel, ref = losses_ref[step - 1];
        CHECK(sf_cpu_pass_status(r, &e) == 0, "%s: %s", file, e.msg);
        worst.loss = fmax(worst.loss, fabs(loss - ref) / ref);
        CHECK(fabs(loss - ref) <= (step == 1 ? tol->loss1 : tol->loss) * ref, "%s: step %d: loss %.9g, %s%.9g", file,
              step, loss, what, ref);
        if (step == 1) {
            double max = compare(pred, pred_ref, (size_t)B * m.outputs, &rel);
            worst.pred = rel;
            CHECK(rel <= tol->pred, "%s: predictions off %s by %.3g of their norm (max %.3g)", file, what, rel, max);
            for (uint32_t k = 0; k < nt; k++) {
                size_t n = t[k].shape[0] * (t[k].rank == 2 ? t[k].shape[1] : 1);
                snprintf(name, sizeof name, "%sgrad/%.47s", prefix, t[k].name);
                const double *gref = f64(s, name, n);
                if (!gref) continue;
                max = compare(g + t[k].offset, gref, n, &rel);
                worst.grad = fmax(worst.grad, rel);
                CHECK(rel <= tol->grad, "%s: gradient of %s off %s by %.3g of its norm (max %.3g)", file, t[k].name,
                      what, rel, max);
            }
        }
        sf_adam_update(p, mo, v, g, m.nparams, &adam, (uint64_t)step);
    }
    for (uint32_t k = 0; k < nt; k++) {
        size_t n = t[k].shape[0] * (t[k].rank == 2 ? t[k].shape[1] : 1);
        snprintf(name, sizeof name, "%sfinal/%.47s", prefix, t[k].name);
        const double *wref = f64(s, name, n);
        double rel, max = wref ? compare(p + t[k].offset, wref, n, &rel) : 0;
        worst.weights = fmax(worst.weights, max);
        CHECK(max <= tol->weights, "%s: %s after %d Adam steps: off %s by up to %.3g", file, t[k].name, steps, what,
              max);
    }
    printf("%s %s vs %s: loss %.2g, predictions %.2g, gradients %.2g (relative), weights %.2g (absolute)\n", file,
           sf_precision_name(precision), what, worst.loss, worst.pred, worst.grad, worst.weights);
    free(packed);
out:
    free(p), free(g), free(mo), free(v), free(x), free(y);
    sf_cpu_pass_close(r);
    sf_st_close(s);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "bf16")) {
        char what[160];
        if (!sf_matmul_available(what, sizeof what)) {
            printf("skip: %s\n", what);
            return 77;
        }
        // Against the emulation: the first forward pass rounds the same
        // operands, so only float32 sums differ (measured 4e-8). After it a
        // value that float32 and float64 put on either side of a bf16
        // rounding boundary rounds 2^-8 apart, and such flips reach the
        // gradients and, through Adam's sign-like first steps, the weights.
        // Their size is the reference's own: perturbing its weights by 1e-6
        // (a few float32 ulps) moved its gradients by up to 4.7e-4 of their
        // norm, its losses by 8e-5 and its final weights by 4.9e-4; seqfeed
        // measured 3e-4, 9e-5 and 2.5e-4. The bounds are 3x the reference's
        // spread; products left unrounded in backward would be 4e-3 off.
        check_fixture("ref_bf16.safetensors", SF_PRECISION_BF16, "",
                      &(tolerance){.loss1 = 1e-5, .loss = 3e-4, .pred = 1e-5, .grad = 1.5e-3, .weights = 1.5e-3});
        // Against exact arithmetic: bf16's 8-bit mantissas, relative 2^-9
        // per operand (measured: predictions 2.2e-3, gradients 4.4e-3, the
        // loss 2.6e-4, weights 1.8e-3).
        check_fixture("ref_bf16.safetensors", SF_PRECISION_BF16, "fp64/",
                      &(tolerance){.loss1 = 1e-3, .loss = 1e-3, .pred = 1e-2, .grad = 2e-2, .weights = 5e-3});
        // The GRU (tests/ref/gen_gru_ref.py) by the same definition and bounds.
        check_fixture("ref_gru.safetensors", SF_PRECISION_BF16, "bf16/",
                      &(tolerance){.loss1 = 1e-5, .loss = 3e-4, .pred = 1e-5, .grad = 1.5e-3, .weights = 1.5e-3});
        check_fixture("ref_gru.safetensors", SF_PRECISION_BF16, "",
                      &(tolerance){.loss1 = 1e-3, .loss = 1e-3, .pred = 1e-2, .grad = 2e-2, .weights = 5e-3});
        // The losses stay float32 in bf16: the pinball loss of a multi-step
        // quantile head through the bf16 pass, against exact arithmetic.
        check_fixture("ref_loss_quantile.safetensors", SF_PRECISION_BF16, "",
                      &(tolerance){.loss1 = 1e-3, .loss = 1e-3, .pred = 1e-2, .grad = 2e-2, .weights = 5e-3});
        // Covariates beside the head (tests/ref/gen_covar_ref.py), alike.
        check_fixture("ref_covar.safetensors", SF_PRECISION_BF16, "bf16/",
                      &(tolerance){.loss1 = 1e-5, .loss = 3e-4, .pred = 1e-5, .grad = 1.5e-3, .weights = 1.5e-3});
        // Against exact arithmetic its losses measured 1.9e-3, within bf16's own
        // 2^-9 per operand (a wider head input, more rounded operands): bounded
        // at 3e-3.
        check_fixture("ref_covar.safetensors", SF_PRECISION_BF16, "",
                      &(tolerance){.loss1 = 3e-3, .loss = 3e-3, .pred = 1e-2, .grad = 2e-2, .weights = 5e-3});
        check_fixture("ref_embed.safetensors", SF_PRECISION_BF16, "bf16/",
                      &(tolerance){.loss1 = 1e-5, .loss = 3e-4, .pred = 1e-5, .grad = 1.5e-3, .weights = 1.5e-3});
        check_fixture("ref_embed.safetensors", SF_PRECISION_BF16, "",
                      &(tolerance){.loss1 = 3e-3, .loss = 3e-3, .pred = 1e-2, .grad = 2e-2, .weights = 5e-3});
        return TEST_EXIT();
    }
    const tolerance fp32 = {.loss1 = 1e-5, .loss = 1e-5, .pred = 1e-5, .grad = 1e-5, .weights = 1e-6};
    check_fixture("ref_small.safetensors", SF_PRECISION_FP32, "", &fp32);
    check_fixture("ref_deep.safetensors", SF_PRECISION_FP32, "", &fp32);
    // GRUs and an LSTM between them against torch.nn.GRU (tests/ref/gen_gru_ref.py).
    check_fixture("ref_gru.safetensors", SF_PRECISION_FP32, "", &fp32);
    // --loss against PyTorch's losses on a multi-step head (3 steps of 2
    // targets; tests/ref/gen_loss_ref.py): MSE, MAE, Huber, and the pinball
    // loss of 3 quantiles, whose Dense gives 18 outputs.
    const char *losses[] = {"ref_loss_mse.safetensors", "ref_loss_mae.safetensors", "ref_loss_huber.safetensors",
                            "ref_loss_quantile.safetensors"};
    for (size_t k = 0; k < sizeof losses / sizeof *losses; k++) check_fixture(losses[k], SF_PRECISION_FP32, "", &fp32);
    // Future features' values concatenated before the first Dense (tests/ref/gen_covar_ref.py).
    check_fixture("ref_covar.safetensors", SF_PRECISION_FP32, "", &fp32);
    // The same with the series' one-hot through a learned embedding (Keras' Embedding).
    check_fixture("ref_embed.safetensors", SF_PRECISION_FP32, "", &fp32);
    return TEST_EXIT();
}
