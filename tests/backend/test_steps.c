// The recurrent layers' time steps on their kernel packed
// (sf_recurrent_pack: seqfeed's own products on panels where the CPU has
// AVX2 and FMA without AVX-512 or under SEQFEED_TEST_STEPS=panels, Ur^T on
// sgemm elsewhere or under SEQFEED_TEST_STEPS=sgemm) against the same layer with nothing packed
// (sgemm on Ur as stored, which model-ref holds to PyTorch): the LSTM and
// the GRU, forward and backward, on shapes that leave every kind of edge
// (units not a multiple of 8 or 24, rows not of 4), the kernel packed in
// slices cut anywhere.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "tests/common.h"

static uint64_t rng_state = 7;

static float *filled(size_t n, float scale) {
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t k = 0; k < n; k++) p[k] = scale * ((float)(sf_splitmix64(&rng_state) >> 40) * 0x1p-23f - 1.0f);
    return p;
}

// |a - b| over |b|, as norms.
static double off(const float *a, const float *b, size_t n) {
    double num = 0, den = 0;
    for (size_t k = 0; k < n; k++) num += ((double)a[k] - b[k]) * ((double)a[k] - b[k]), den += (double)b[k] * b[k];
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

typedef struct {
    float *h, *c, *gates, *dx, *dW, *dUr, *db, *work;
} pass;

// A layer's buffers: c is the GRU's rh; work, the larger of either
// layer's needs.
static pass pass_new(size_t B, size_t T, size_t C, size_t U) {
    size_t G = 4 * U, w = sf_lstm_backward_work(B, T, U), wg = sf_gru_backward_work(B, T, U);
    w = w > wg ? w : wg;
    return (pass){.h = malloc(B * T * U * 4), .c = malloc(B * T * U * 4), .gates = malloc(B * T * G * 4),
                  .dx = malloc(B * T * C * 4), .dW = malloc(C * G * 4), .dUr = malloc(U * G * 4),
                  .db = malloc(2 * G * 4), .work = malloc(w * 4)};
}

static void pass_free(pass *p) {
    free(p->h), free(p->c), free(p->gates), free(p->dx), free(p->dW), free(p->dUr), free(p->db), free(p->work);
}

static void run(pass *p, bool gru, const float *x, const float *W, const float *Ur, const float *b, const float *dh,
                const float *packed, size_t B, size_t T, size_t C, size_t U) {
    if (gru) {
        sf_gru_forward(p->h, p->c, p->gates, p->work, x, W, Ur, b, packed, B, T, C, U);
        sf_gru_backward(p->dx, p->dW, p->dUr, p->db, dh, x, W, Ur, packed, p->h, p->c, p->gates, p->work, B, T, C,
                        U);
    } else {
        sf_lstm_forward(p->h, p->c, p->gates, x, W, Ur, b, packed, B, T, C, U);
        sf_lstm_backward(p->dx, p->dW, p->dUr, p->db, dh, x, W, Ur, packed, p->h, p->c, p->gates, p->work, B, T, C,
                         U);
    }
}

static void check_shape(bool gru, size_t B, size_t T, size_t C, size_t U) {
    size_t G = (gru ? 3 : 4) * U, nb = gru ? 2 * G : G;
    const char *name = gru ? "gru" : "lstm";
    float *x = filled(B * T * C, 1), *W = filled(C * G, 0.3f), *Ur = filled(U * G, 0.3f), *b = filled(nb, 0.1f);
    float *dh = filled(B * T * U, 0.1f), *packed = calloc(sf_recurrent_packed_floats(U, G), sizeof(float));
    // Three slices, cut within rows where rows are long enough.
    size_t n = U * G, cut1 = n / 3 + 1 < n ? n / 3 + 1 : n, cut2 = 2 * n / 3;
    cut2 = cut2 > cut1 ? cut2 : cut1;
    sf_recurrent_pack(packed, Ur, U, G, cut2, n);
    sf_recurrent_pack(packed, Ur, U, G, 0, cut1);
    sf_recurrent_pack(packed, Ur, U, G, cut1, cut2);
    pass plain = pass_new(B, T, C, U), fast = pass_new(B, T, C, U);
    run(&plain, gru, x, W, Ur, b, dh, NULL, B, T, C, U);
    run(&fast, gru, x, W, Ur, b, dh, packed, B, T, C, U);
    struct {
        const char *name;
        const float *got, *want;
        size_t n;
    } outs[] = {{"h", fast.h, plain.h, B * T * U},     {"c (GRU: rh)", fast.c, plain.c, B * T * U},
                {"dx", fast.dx, plain.dx, B * T * C}, {"dW", fast.dW, plain.dW, C * G},
                {"dUr", fast.dUr, plain.dUr, U * G},  {"db", fast.db, plain.db, nb}};
    for (size_t k = 0; k < sizeof outs / sizeof *outs; k++) {
        double d = off(outs[k].got, outs[k].want, outs[k].n);
        // float32 sums in another order: measured below 1e-6
        CHECK(d <= 1e-5, "%s B %zu T %zu C %zu U %zu: %s off the unpacked pass by %.3g of its norm", name, B, T, C,
              U, outs[k].name, d);
    }
    pass_free(&plain), pass_free(&fast);
    free(x), free(W), free(Ur), free(b), free(dh), free(packed);
}

int main(void) {
    // Which path runs: packed in panels, the kernel takes more than Ur^T.
    bool panels = sf_recurrent_packed_floats(13, 52) > 52 * 13;
    const char *want = getenv("SEQFEED_TEST_STEPS");
    if (want && !strcmp(want, "panels") && !panels) {
        printf("skip: no AVX2 and FMA for the panels\n");
        return 77;
    }
    printf("time steps on %s\n", panels ? "packed panels" : "sgemm");
    static const size_t units[] = {1, 2, 5, 8, 13, 24, 25, 47, 64, 180};
    static const size_t rows[] = {1, 2, 3, 4, 5, 6, 8, 9};
    for (int gru = 0; gru < 2; gru++) {
        for (size_t i = 0; i < sizeof units / sizeof *units; i++)
            for (size_t j = 0; j < sizeof rows / sizeof *rows; j++) check_shape(gru, rows[j], 5, 3 + i, units[i]);
        check_shape(gru, 8, 60, 180, 180);  // the default model's layer, a part at batch 32
        check_shape(gru, 22, 20, 180, 180);  // and at batch 256
    }
    return test_failures ? 1 : 0;
}
