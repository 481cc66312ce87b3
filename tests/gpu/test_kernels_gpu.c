// Every small CUDA kernel against its CPU twin, bit for bit: dropout masks
// and outputs and their backward, the MSE sum and gradient, the last-step
// slice and its backward, the update's guard; the bf16 path's rounding,
// layouts and bias-gradient sum. Within a few float32 ulp: 5 Adam steps and
// the bf16 LSTM cell forward and backward (with the CPU's oneDNN module),
// whose CPU kernels contract a*b+c into fused multiply-adds where the
// compiler sees fit (kernels/meson.build) while the CUDA twins round every
// operation. Exit 77 without a GPU.
#include <cuda_runtime.h>
#include <math.h>
#include <string.h>

#include "backend/backend.h"
#include "tests/common.h"
#include "tests/gpu/gpu.h"

enum { N = 100003, B = 37, T = 11, U = 29, O = 3 };

static float *upload(const float *h, size_t n) {
    float *d = NULL;
    if (cudaMalloc((void **)&d, n * sizeof(float) + 1) != cudaSuccess) return NULL;
    if (h && cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) return NULL;
    return d;
}

// Copies device d back and compares it with want, bit for bit.
static void same(const char *what, const float *d, const float *want, size_t n) {
    float *got = malloc(n * sizeof(float));
    bool ok = got && cudaMemcpy(got, d, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess &&
              memcmp(got, want, n * sizeof(float)) == 0;
    size_t first = 0;
    while (got && !ok && first < n && memcmp(got + first, want + first, sizeof(float)) == 0) first++;
    CHECK(ok, "%s: GPU and CPU differ (first at %zu: %.9g vs %.9g)", what, first, got && first < n ? got[first] : 0.0,
          first < n ? want[first] : 0.0);
    free(got);
}

// got (the GPU's, on the host) against want within rel of want's largest
// magnitude: a fused multiply-add moves a result by an ulp, and where
// 1 - x*x cancels, by more than an ulp of the difference itself.
static void near_host(const char *what, const float *got, const float *want, size_t n, double rel) {
    double scale = 0;
    for (size_t k = 0; k < n; k++) scale = fmax(scale, fabs(want[k]));
    size_t first = n;
    for (size_t k = 0; k < n && first == n; k++)
        if (isnan(got[k]) != isnan(want[k]) || fabs((double)got[k] - want[k]) > rel * scale) first = k;
    CHECK(first == n, "%s: GPU and CPU differ by more than %g of %g (first at %zu: %.9g vs %.9g)", what, rel, scale,
          first, first < n ? got[first] : 0.0, first < n ? want[first] : 0.0);
}

// Device d copied back, near_host.
static void near(const char *what, const float *d, const float *want, size_t n, double rel) {
    float *got = malloc(n * sizeof(float));
    bool ok = got && cudaMemcpy(got, d, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess;
    CHECK(ok, "%s: the GPU's values", what);
    if (ok) near_host(what, got, want, n, rel);
    free(got);
}

// The bf16 LSTM's cell, forward and backward, within a few ulp of
// sf_lstm_forward_bf16 and sf_lstm_backward_bf16: with zero kernels every
// product is exactly 0 whatever its order, so the gates are the bias and
// any difference is the cell's own arithmetic (h, c, the gates, the rounded
// dz of every step, and db, which sums the dz in order).
static void lstm_cell_bf16(void) {
    enum { LB = 5, LT = 7, LC = 3, LU = 6, LG = 4 * LU };
    sf_err e = {0};
    sf_matmul *mm = NULL;
    if (sf_matmul_open(&mm, &e) != 0) {
        printf("the bf16 cell is not compared: no CPU bf16 products (%s)\n", e.msg);
        return;
    }
    uint64_t s = 17;
    float *W = calloc(LC * LG, sizeof(float)), *Ur = calloc(LU * LG, sizeof(float)), *b = malloc(LG * sizeof(float));
    float *x = malloc(LB * LT * LC * sizeof(float)), *dh = malloc(LB * LT * LU * sizeof(float));
    float *h = malloc(LB * LT * LU * sizeof(float)), *c = malloc(LB * LT * LU * sizeof(float));
    float *gates = malloc(LT * LB * LG * sizeof(float)), *dW = malloc(LC * LG * sizeof(float));
    float *dUr = malloc(LU * LG * sizeof(float)), *db = malloc(LG * sizeof(float));
    float *work = malloc(sf_lstm_backward_bf16_work(LB, LT, LC, LU) * sizeof(float));
    sf_bf16_layer q = {.mm = mm, .x = malloc(LT * LB * LC * sizeof(sf_bf16)), .h = malloc(LT * LB * LU * sizeof(sf_bf16)),
                       .W = malloc(LC * LG * sizeof(sf_bf16)), .Ur = malloc(LU * LG * sizeof(sf_bf16)),
                       .d = malloc(LT * LB * LG * sizeof(sf_bf16)), .slot = 0};
    for (size_t k = 0; k < LG; k++) b[k] = (float)((sf_splitmix64(&s) >> 40) * 0x1p-23) - 1;
    for (size_t k = 0; k < LB * LT * LC; k++) x[k] = (float)((sf_splitmix64(&s) >> 40) * 0x1p-23) - 1;
    for (size_t k = 0; k < LB * LT * LU; k++) dh[k] = (float)((sf_splitmix64(&s) >> 40) * 0x1p-25) - 0.25f;
    sf_lstm_forward_bf16(h, c, gates, x, W, Ur, b, &q, LB, LT, LC, LU);
    float *dgates = upload(NULL, LT * LB * LG), *dhv = upload(NULL, LB * LT * LU), *dc = upload(NULL, LB * LT * LU);
    float *ddh = upload(dh, LB * LT * LU), *ddb = upload(NULL, LG), *dbias = upload(b, LG), *dz = upload(NULL, LB * LG);
    float *dcn = upload(NULL, LB * LU), *dhn = upload(NULL, LB * LU);
    sf_bf16 *dhq = NULL, *dzq = NULL, *zq = malloc(LT * LB * LG * sizeof(sf_bf16));
    CHECK(cudaMalloc((void **)&dhq, LT * LB * LU * sizeof(sf_bf16)) == cudaSuccess &&
              cudaMalloc((void **)&dzq, LT * LB * LG * sizeof(sf_bf16)) == cudaSuccess,
          "cudaMalloc");
    CHECK(sf_gpu_rows_fill(dgates, dbias, LT * LB, LG, NULL, &e) == 0, "%s", e.msg);
    for (size_t t = 0; t < LT; t++)
        CHECK(sf_gpu_lstm_cell(dhv, dc, dgates + t * LB * LG, dhq + t * LB * LU, LB, LT, LU, t, NULL, &e) == 0, "%s",
              e.msg);
    near("bf16 cell: h", dhv, h, LB * LT * LU, 1e-5);
    near("bf16 cell: c", dc, c, LB * LT * LU, 1e-5);
    near("bf16 cell: gates", dgates, gates, LT * LB * LG, 1e-5);
    // The CPU's backward leaves its gradients in gates: only now.
    sf_lstm_backward_bf16(NULL, dW, dUr, db, dh, c, gates, &q, work, LB, LT, LC, LU);
    CHECK(sf_matmul_status(mm, &e) == 0, "the CPU's bf16 pass: %s", e.msg);
    // Backward: dh_next stays 0 (its product is), as on the CPU.
    CHECK(cudaMemset(dcn, 0, LB * LU * sizeof(float)) == cudaSuccess &&
              cudaMemset(dhn, 0, LB * LU * sizeof(float)) == cudaSuccess &&
              cudaMemset(ddb, 0, LG * sizeof(float)) == cudaSuccess,
          "cudaMemset");
    for (size_t t = LT; t-- > 0;)
        CHECK(sf_gpu_lstm_cell_backward(dz, dzq + t * LB * LG, dcn, dgates + t * LB * LG, dc, ddh, dhn, LB, LT, LU, t,
                                        NULL, &e) == 0 &&
                  sf_gpu_rows_add(ddb, dz, LB, LG, NULL, &e) == 0,
              "%s", e.msg);
    near("bf16 cell backward: db", ddb, db, LG, 1e-5);
    // The rounded dz: a float32 an ulp apart may round to neighbouring bf16.
    float *zg = malloc(LT * LB * LG * sizeof(float)), *zc = malloc(LT * LB * LG * sizeof(float));
    CHECK(zg && zc && cudaMemcpy(zq, dzq, LT * LB * LG * sizeof(sf_bf16), cudaMemcpyDeviceToHost) == cudaSuccess,
          "the rounded dz");
    for (size_t k = 0; zg && zc && k < LT * LB * LG; k++) {
        uint32_t gb = (uint32_t)zq[k] << 16, cb = (uint32_t)q.d[k] << 16;
        memcpy(&zg[k], &gb, sizeof gb), memcpy(&zc[k], &cb, sizeof cb);
    }
    if (zg && zc) near_host("bf16 cell backward: the rounded dz", zg, zc, LT * LB * LG, 1.0 / 128);
    free(zg), free(zc);
    cudaFree(dgates), cudaFree(dhv), cudaFree(dc), cudaFree(ddh), cudaFree(ddb), cudaFree(dbias), cudaFree(dz);
    cudaFree(dcn), cudaFree(dhn), cudaFree(dhq), cudaFree(dzq);
    free(W), free(Ur), free(b), free(x), free(dh), free(h), free(c), free(gates), free(dW), free(dUr), free(db);
    free(work), free(q.x), free(q.h), free(q.W), free(q.Ur), free(q.d), free(zq);
    sf_matmul_close(mm);
}

int main(void) {
    sf_err e = {0};
    gpus_or_skip();
    uint64_t s = 9;
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float)), *mask = malloc(N * sizeof(float));
    float *g = malloc(N * sizeof(float)), *dx = malloc(N * sizeof(float));
    for (size_t k = 0; k < N; k++) x[k] = (float)((sf_splitmix64(&s) >> 40) * 0x1p-22) - 2;
    for (size_t k = 0; k < N; k++) g[k] = (float)((sf_splitmix64(&s) >> 40) * 0x1p-30) - 0.01f;
    float *dx_ = upload(x, N), *dy_ = upload(NULL, N), *dmask = upload(NULL, N), *dg = upload(g, N), *ddx = upload(NULL, N);
    CHECK(dx_ && dy_ && dmask && dg && ddx, "cudaMalloc");

    // The seed from device memory, with the layer's salt: 1234 in all.
    uint64_t seed = 1234 ^ 0x55, *dseed = NULL;
    CHECK(cudaMalloc((void **)&dseed, sizeof *dseed) == cudaSuccess &&
              cudaMemcpy(dseed, &seed, sizeof seed, cudaMemcpyHostToDevice) == cudaSuccess, "the seed");
    sf_dropout_forward(y, mask, x, N, 0.3f, 1234, 77);
    CHECK(sf_gpu_dropout_forward(dy_, dmask, dx_, N, 0.3f, dseed, 0x55, 77, NULL, &e) == 0, "%s", e.msg);
    cudaFree(dseed);
    same("dropout mask", dmask, mask, N);
    same("dropout output", dy_, y, N);
    sf_dropout_backward(dx, g, mask, N);
    CHECK(sf_gpu_dropout_backward(ddx, dg, dmask, N, NULL, &e) == 0, "%s", e.msg);
    same("dropout backward", ddx, dx, N);

    // Every --loss: B rows, and more rows than the kernel's block has
    // threads; x the predictions (O x the loss's width per row), g the
    // targets, some of them exactly a prediction (the kinks of MAE and
    // pinball: their gradient there is the mean of both sides').
    double *dsum = NULL;
    CHECK(cudaMalloc((void **)&dsum, sizeof *dsum) == cudaSuccess, "cudaMalloc");
    const char *losses[] = {"mse", "mae", "huber:0.5", "quantile:0.1,0.5,0.9"};
    float *pt = malloc(1000 * O * sizeof(float));
    for (size_t k = 0; k < 1000 * O; k++)  // ties: with a point forecast, and with each quantile in turn
        pt[k] = k % 7 == 0 ? x[k] : k % 7 == 1 ? x[k * 3 + k % 3] : g[k];
    float *dpt = upload(pt, 1000 * O);
    for (size_t l = 0; dsum && pt && dpt && l < sizeof losses / sizeof *losses; l++) {
        sf_loss loss;
        CHECK(sf_loss_parse(&loss, losses[l], &e) == 0, "%s", e.msg);
        for (size_t rows = B; rows <= 1000; rows += 1000 - B) {
            double sum_cpu = sf_loss_sum(&loss, x, pt, rows, O), sum_gpu = 0;
            CHECK(sf_gpu_loss_sum(dsum, &loss, dx_, dpt, rows, O, NULL, &e) == 0 &&
                      cudaMemcpy(&sum_gpu, dsum, sizeof sum_gpu, cudaMemcpyDeviceToHost) == cudaSuccess,
                  "%s sum: %s", losses[l], e.msg);
            CHECK(memcmp(&sum_cpu, &sum_gpu, sizeof sum_cpu) == 0, "%s sum of %zu rows: %.17g on CPU, %.17g on GPU",
                  losses[l], rows, sum_cpu, sum_gpu);
        }
        size_t n = (size_t)B * O * sf_loss_width(&loss);
        sf_loss_backward(&loss, dx, x, pt, B, O, 1.0f / 64);
        CHECK(sf_gpu_loss_backward(ddx, &loss, dx_, dpt, B, O, 1.0f / 64, NULL, &e) == 0, "%s", e.msg);
        char what[64];
        snprintf(what, sizeof what, "%s backward", losses[l]);
        same(what, ddx, dx, n);
    }
    cudaFree(dsum), cudaFree(dpt);
    free(pt);

    // The slice and its backward, as backend/cpu/cpu_pass.c does them with memcpy.
    for (size_t b = 0; b < B; b++) memcpy(y + b * U, x + (b * T + T - 1) * U, U * sizeof(float));
    CHECK(sf_gpu_last_step(dy_, dx_, B, T, U, NULL, &e) == 0, "%s", e.msg);
    same("last step", dy_, y, (size_t)B * U);
    memset(dx, 0, (size_t)B * T * U * sizeof(float));
    for (size_t b = 0; b < B; b++) memcpy(dx + (b * T + T - 1) * U, g + b * U, U * sizeof(float));
    CHECK(sf_gpu_last_step_backward(ddx, dg, B, T, U, NULL, &e) == 0, "%s", e.msg);
    same("last step backward", ddx, dx, (size_t)B * T * U);

    // Adam: weights x, gradients g, 5 steps from zero state.
    float *m = calloc(N, sizeof(float)), *v = calloc(N, sizeof(float));
    float *dm = upload(m, N), *dv = upload(v, N), *dw = upload(x, N);
    sf_adam a = {1e-3f, 0.9f, 0.999f, 1e-7f};
    float *dalpha = upload(NULL, 1);
    for (uint64_t step = 1; step <= 5; step++) {
        sf_adam_update(x, m, v, g, N, &a, step);
        float alpha = sf_adam_alpha(&a, step);
        CHECK(cudaMemcpy(dalpha, &alpha, sizeof alpha, cudaMemcpyHostToDevice) == cudaSuccess &&
                  sf_gpu_adam_update(dw, dm, dv, dg, N, &a, dalpha, NULL, NULL, &e) == 0,
              "%s", e.msg);
    }
    near("Adam weights", dw, x, N, 1e-6);
    near("Adam m", dm, m, N, 1e-5);
    near("Adam v", dv, v, N, 1e-5);
    // What a skipped update must leave as it is: the GPU's own state.
    float *gw = malloc(N * sizeof(float)), *gm = malloc(N * sizeof(float));
    CHECK(gw && gm && cudaMemcpy(gw, dw, N * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess &&
              cudaMemcpy(gm, dm, N * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess,
          "Adam's state");

    // The update's guard, as sf_update_finite: a NaN or an infinity in the
    // gradients (first, last, or in the middle) or in the loss; and Adam
    // under a guard that says skip leaves the state as it was.
    int *dbad;
    double *dloss;
    CHECK(cudaMalloc((void **)&dbad, sizeof *dbad) == cudaSuccess &&
              cudaMalloc((void **)&dloss, sizeof *dloss) == cudaSuccess, "cudaMalloc");
    const size_t places[] = {0, N / 2, N - 1};
    for (int c = 0; c < 8; c++) {
        double loss = c == 6 ? NAN : c == 7 ? INFINITY : 0.5;
        float keep = 0, bad_value = c % 2 ? INFINITY : NAN;
        size_t at = places[c % 3];
        if (c < 6) keep = g[at], g[at] = bad_value;
        float *dgc = upload(g, N);
        int bad = -1;
        CHECK(cudaMemset(dbad, 0, sizeof *dbad) == cudaSuccess &&
                  cudaMemcpy(dloss, &loss, sizeof loss, cudaMemcpyHostToDevice) == cudaSuccess &&
                  sf_gpu_update_finite(dbad, dgc, N, dloss, NULL, &e) == 0 &&
                  cudaMemcpy(&bad, dbad, sizeof bad, cudaMemcpyDeviceToHost) == cudaSuccess,
              "the update's guard: %s", e.msg);
        CHECK(bad == !sf_update_finite(g, N, loss) && bad == 1, "case %d: the guard says %d", c, bad);
        if (c == 0) {
            CHECK(sf_gpu_adam_update(dw, dm, dv, dgc, N, &a, dalpha, dbad, NULL, &e) == 0, "%s", e.msg);
            same("Adam skipped: weights", dw, gw, N);
            same("Adam skipped: m", dm, gm, N);
        }
        if (c < 6) g[at] = keep;
        cudaFree(dgc);
    }
    // Finite: the guard stays as it was, 0 from zero, and 1 once set.
    double fine = 0.5;
    int bad = -1, stuck = -1;
    CHECK(cudaMemset(dbad, 0, sizeof *dbad) == cudaSuccess &&
              cudaMemcpy(dloss, &fine, sizeof fine, cudaMemcpyHostToDevice) == cudaSuccess &&
              sf_gpu_update_finite(dbad, dg, N, dloss, NULL, &e) == 0 &&
              cudaMemcpy(&bad, dbad, sizeof bad, cudaMemcpyDeviceToHost) == cudaSuccess && bad == 0 &&
              sf_update_finite(g, N, fine),
          "finite gradients and loss: the guard says %d", bad);
    CHECK(cudaMemset(dbad, 1, 1) == cudaSuccess && sf_gpu_update_finite(dbad, dg, N, dloss, NULL, &e) == 0 &&
              cudaMemcpy(&stuck, dbad, sizeof stuck, cudaMemcpyDeviceToHost) == cudaSuccess && stuck == 1,
          "a guard set before: now %d", stuck);
    cudaFree(dbad), cudaFree(dloss), cudaFree(dalpha);

    // bf16 rounding, bit for bit with sf_bf16_round: ties both ways, the
    // largest finite values, infinities, NaNs, subnormals, then x itself;
    // and x (B,T,U) rounded into time-major.
    float special[] = {1.0f + 0x1p-8f, 1.0f + 0x3p-8f, -1.0f - 0x1p-8f, 0x1.fffffep127f, INFINITY, -INFINITY, NAN,
                       -NAN, 0x1p-140f, -0.0f, 0.0f};
    size_t ns = sizeof special / sizeof *special;
    memcpy(y, special, sizeof special);
    memcpy(y + ns, x, (N - ns) * sizeof(float));
    sf_bf16 *qc = malloc(N * sizeof *qc), *qg = malloc(N * sizeof *qg), *dq = NULL;
    float *dyy = upload(y, N), *dxx = upload(x, N);  // x as Adam left it
    CHECK(qc && qg && dyy && dxx && cudaMalloc((void **)&dq, N * sizeof *dq) == cudaSuccess, "cudaMalloc");
    sf_bf16_round(qc, y, N);
    CHECK(sf_gpu_bf16_round(dq, dyy, N, NULL, &e) == 0 &&
              cudaMemcpy(qg, dq, N * sizeof *qg, cudaMemcpyDeviceToHost) == cudaSuccess &&
              memcmp(qc, qg, N * sizeof *qc) == 0,
          "bf16 rounding: GPU and CPU differ %s", e.msg);
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++) sf_bf16_round(qc + (t * B + b) * U, x + (b * T + t) * U, U);
    CHECK(sf_gpu_bf16_round_time_major(dq, dxx, B, T, U, NULL, &e) == 0 &&
              cudaMemcpy(qg, dq, (size_t)B * T * U * sizeof *qg, cudaMemcpyDeviceToHost) == cudaSuccess &&
              memcmp(qc, qg, (size_t)B * T * U * sizeof *qc) == 0,
          "bf16 rounding into time-major: GPU and CPU differ %s", e.msg);
    // Back to batch-major, and a bias gradient summed over rows in row order.
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++) memcpy(y + (b * T + t) * U, x + (t * B + b) * U, U * sizeof(float));
    CHECK(sf_gpu_batch_major(ddx, dxx, B, T, U, NULL, &e) == 0, "%s", e.msg);
    same("batch-major copy", ddx, y, (size_t)B * T * U);
    float *sum = calloc(U, sizeof(float));
    for (size_t r = 0; r < (size_t)B * T; r++)
        for (size_t k = 0; k < U; k++) sum[k] += x[r * U + k];
    float *dsumf = upload(NULL, U);
    CHECK(dsumf && cudaMemset(dsumf, 0, U * sizeof(float)) == cudaSuccess &&
              sf_gpu_rows_add(dsumf, dxx, (size_t)B * T, U, NULL, &e) == 0,
          "%s", e.msg);
    same("rows summed in order", dsumf, sum, U);
    cudaFree(dq), cudaFree(dyy), cudaFree(dxx), cudaFree(dsumf);
    free(qc), free(qg), free(sum);
    lstm_cell_bf16();
    CHECK(cudaDeviceSynchronize() == cudaSuccess, "sync");
    cudaFree(dx_), cudaFree(dy_), cudaFree(dmask), cudaFree(dg), cudaFree(ddx), cudaFree(dm), cudaFree(dv), cudaFree(dw);
    free(x), free(y), free(mask), free(g), free(dx), free(m), free(v), free(gw), free(gm);
    return TEST_EXIT();
}
