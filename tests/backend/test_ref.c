// seqfeed's float32 model against PyTorch's float64 reference
// (tests/ref/gen_lstm_ref.py): predictions, the MSE loss, every gradient,
// and the losses and weights of 5 Adam steps with Keras' update. Tolerances
// are float32's: relative 1e-5 on the loss and predictions, 1e-5 of each
// gradient's norm, and 1e-6 absolute on weights after 5 steps of lr 1e-3
// (measured: 1e-7, 3e-7 and 6e-8), so a wrong term anywhere shows.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/checkpoint.h"
#include "backend/backend.h"
#include "tests/common.h"

// An aligned copy of an F64 tensor (safetensors does not align tensors),
// kept until the program ends.
static double *f64(const sf_st *s, const char *name, size_t count) {
    static double *copies[64];
    static int ncopies;
    const sf_st_entry *t = sf_st_find(s, name);
    bool ok = t && strcmp(t->dtype, "F64") == 0 && t->end - t->begin == count * 8 && ncopies < 64;
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

static void check_fixture(const char *file) {
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
    sf_model m;
    sf_cpu_pass *r;
    if (sf_model_parse(&m, spec, I, O, &e) || sf_cpu_pass_open(&r, &m, B, T, &e)) {
        CHECK(0, "%s: %s", file, e.msg);
        sf_st_close(s);
        return;
    }
    float *p = malloc(m.nparams * sizeof(float)), *g = malloc(m.nparams * sizeof(float));
    float *mo = calloc(m.nparams, sizeof(float)), *v = calloc(m.nparams, sizeof(float));
    float *x = malloc((size_t)B * T * I * sizeof(float)), *y = malloc((size_t)B * O * sizeof(float));
    sf_tensor t[3 * SF_MODEL_MAX_LAYERS];
    uint32_t nt = sf_model_tensors(&m, t);
    int rc = sf_st_read_f32(s, "x", x, (size_t)B * T * I, &e) || sf_st_read_f32(s, "y", y, (size_t)B * O, &e);
    for (uint32_t k = 0; k < nt && !rc; k++)
        rc = sf_st_read_f32(s, t[k].name, p + t[k].offset, t[k].shape[0] * (t[k].rank == 2 ? t[k].shape[1] : 1), &e);
    const double *pred_ref = f64(s, "pred", (size_t)B * O), *loss_ref = f64(s, "loss", 1),
                 *losses_ref = f64(s, "losses", (size_t)steps);
    if (rc || !pred_ref || !loss_ref || !losses_ref) {
        CHECK(!rc, "%s: %s", file, e.msg);
        goto out;
    }
    sf_adam adam = {1e-3f, 0.9f, 0.999f, 1e-7f};
    for (int step = 1; step <= steps; step++) {
        const float *pred = sf_cpu_pass_forward(r, p, x, B, false, 0, 0);
        double loss = sf_cpu_pass_backward(r, g, p, x, y, B, B) / B, rel;
        CHECK(fabs(loss - losses_ref[step - 1]) <= 1e-5 * losses_ref[step - 1], "%s: step %d: loss %.9g, reference "
              "%.9g", file, step, loss, losses_ref[step - 1]);
        if (step == 1) {
            double worst = compare(pred, pred_ref, (size_t)B * O, &rel);
            CHECK(rel <= 1e-5, "%s: predictions off by %.3g of their norm (max %.3g)", file, rel, worst);
            CHECK(fabs(loss - *loss_ref) <= 1e-5 * *loss_ref, "%s: loss %.9g, reference %.9g", file, loss, *loss_ref);
            for (uint32_t k = 0; k < nt; k++) {
                char name[64];
                size_t n = t[k].shape[0] * (t[k].rank == 2 ? t[k].shape[1] : 1);
                snprintf(name, sizeof name, "grad/%.47s", t[k].name);
                const double *ref = f64(s, name, n);
                if (!ref) continue;
                worst = compare(g + t[k].offset, ref, n, &rel);
                CHECK(rel <= 1e-5, "%s: gradient of %s off by %.3g of its norm (max %.3g)", file, t[k].name, rel, worst);
            }
        }
        sf_adam_update(p, mo, v, g, m.nparams, &adam, (uint64_t)step);
    }
    for (uint32_t k = 0; k < nt; k++) {
        char name[64];
        size_t n = t[k].shape[0] * (t[k].rank == 2 ? t[k].shape[1] : 1);
        snprintf(name, sizeof name, "final/%.47s", t[k].name);
        const double *ref = f64(s, name, n);
        double rel, worst = ref ? compare(p + t[k].offset, ref, n, &rel) : 0;
        CHECK(worst <= 1e-6, "%s: %s after %d Adam steps: off by up to %.3g", file, t[k].name, steps, worst);
    }
out:
    free(p), free(g), free(mo), free(v), free(x), free(y);
    sf_cpu_pass_close(r);
    sf_st_close(s);
}

int main(void) {
    check_fixture("ref_small.safetensors");
    check_fixture("ref_deep.safetensors");
    return TEST_EXIT();
}
