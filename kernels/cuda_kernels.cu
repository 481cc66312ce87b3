// The model's small CUDA kernels, each the twin of a CPU kernel in cpu.c and
// computed the same way, operation for operation, so that tests can compare
// them bit for bit: no contracted multiply-adds (__fmul_rn, __fadd_rn),
// IEEE division and square root (nvcc's defaults), the same integer hash for
// dropout masks. The LSTM and dense layers themselves go to cuDNN and cuBLAS.
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "kernels.h"
}

#define THREADS 256u

static unsigned blocks_for(size_t n) {
    size_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b < 65535u * 32u ? (b ? b : 1) : 65535u * 32u);
}

// The launch's error, or a sticky one from earlier work, as an sf code.
static int launched(const char *what, sf_err *e) {
    cudaError_t rc = cudaGetLastError();
    if (rc == cudaSuccess) return 0;
    return sf_err_set(e, SF_EIO, "%s: %s", what, cudaGetErrorString(rc));
}

__device__ static uint64_t splitmix64(uint64_t s) {
    uint64_t z = s + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// mask and y are (n); as sf_dropout_forward.
__global__ static void dropout_forward(float *y, float *mask, const float *x, size_t n, float rate, float scale,
                                       const uint64_t *step_seed, uint64_t salt, uint64_t first) {
    uint64_t seed = *step_seed ^ salt;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x) {
        float u = (float)(splitmix64(seed + (first + k) * 0x9e3779b97f4a7c15ull) >> 40) * 0x1p-24f;
        float m = u >= rate ? scale : 0.0f;
        mask[k] = m;
        y[k] = __fmul_rn(x[k], m);
    }
}

__global__ static void dropout_backward(float *dx, const float *dy, const float *mask, size_t n) {
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x)
        dx[k] = __fmul_rn(dy[k], mask[k]);
}

// One prediction's loss for its error d; as sf_loss_error.
__device__ static double loss_error(const sf_loss &l, uint32_t j, double d) {
    double a = fabs(d);
    switch (l.kind) {
    case SF_LOSS_MAE: return a;
    case SF_LOSS_HUBER:
        return a <= l.delta ? __dmul_rn(__dmul_rn(0.5, d), d)
                            : __dsub_rn(__dmul_rn(l.delta, a), __dmul_rn(__dmul_rn(0.5, l.delta), l.delta));
    case SF_LOSS_QUANTILE: return d <= 0 ? __dmul_rn(l.q[j], -d) : __dmul_rn(__dsub_rn(l.q[j], 1.0), -d);
    default: return __dmul_rn(d, d);
    }
}

// dy (n x W predictions) as sf_loss_backward; scale its 1/global batch over
// the values (twice that for MSE).
__global__ static void loss_backward(float *dy, const sf_loss l, const float *y, const float *target, size_t n,
                                     float scale) {
    size_t W = l.kind == SF_LOSS_QUANTILE ? l.nq : 1;
    float delta = (float)l.delta;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n * W; i += (size_t)gridDim.x * blockDim.x) {
        size_t j = i % W;
        float p = y[i], t = target[i / W], d = __fsub_rn(p, t), g;
        switch (l.kind) {
        case SF_LOSS_MAE: g = p > t ? 1.0f : p < t ? -1.0f : 0.0f; break;
        case SF_LOSS_HUBER: g = fabsf(d) <= delta ? d : d > 0 ? delta : -delta; break;
        case SF_LOSS_QUANTILE: {
            float q = (float)l.q[j];
            g = p < t ? -q : p > t ? __fsub_rn(1.0f, q) : __fsub_rn(0.5f, q);
            break;
        }
        default: g = d;
        }
        dy[i] = __fmul_rn(scale, g);
    }
}

// One block: its threads compute a chunk of rows' losses at once, then
// thread 0 adds them in row order, as sf_loss_sum does, so that the sum is
// the CPU's to the bit (one thread alone ran every row's terms serially).
enum { LOSS_THREADS = 256 };
__global__ static void loss_sum(double *sum, const sf_loss l, const float *y, const float *target, size_t B,
                                size_t O) {
    __shared__ double terms[LOSS_THREADS];
    size_t W = l.kind == SF_LOSS_QUANTILE ? l.nq : 1;
    double acc = 0;
    for (size_t first = 0; first < B; first += LOSS_THREADS) {
        size_t r = first + threadIdx.x;
        if (r < B) {
            double row = 0;
            for (size_t k = 0; k < O; k++) {
                double v = 0;
                for (size_t j = 0; j < W; j++)
                    v = __dadd_rn(v, loss_error(l, (uint32_t)j, __dsub_rn((double)y[(r * O + k) * W + j],
                                                                          (double)target[r * O + k])));
                row = __dadd_rn(row, W > 1 ? __ddiv_rn(v, (double)W) : v);
            }
            terms[threadIdx.x] = __ddiv_rn(row, (double)O);
        }
        __syncthreads();
        if (threadIdx.x == 0)
            for (size_t k = 0; k < LOSS_THREADS && first + k < B; k++) acc = __dadd_rn(acc, terms[k]);
        __syncthreads();
    }
    if (threadIdx.x == 0) *sum = acc;
}

// out (B,U) = h[:, T-1, :] for h (B,T,U).
__global__ static void last_step(float *out, const float *h, size_t B, size_t T, size_t U) {
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < B * U; k += (size_t)gridDim.x * blockDim.x) {
        size_t b = k / U, u = k % U;
        out[k] = h[(b * T + T - 1) * U + u];
    }
}

// dh (B,T,U): zero but the last step, which is dout (B,U).
__global__ static void last_step_backward(float *dh, const float *dout, size_t B, size_t T, size_t U) {
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < B * T * U; k += (size_t)gridDim.x * blockDim.x) {
        size_t b = k / (T * U), t = k / U % T, u = k % U;
        dh[k] = t == T - 1 ? dout[b * U + u] : 0.0f;
    }
}

// *bad becomes 1 when the loss or any gradient is not finite (as
// !sf_update_finite), and stays so.
__global__ static void update_finite(int *bad, const float *g, size_t n, const double *loss) {
    bool finite = blockIdx.x || threadIdx.x || isfinite(*loss);
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x)
        finite &= isfinite(g[k]) != 0;
    if (!finite) *bad = 1;
}

// One Adam step over the contiguous parameters; as sf_adam_update, or
// nothing when the step's guard says skip.
__global__ static void adam(float *w, float *m, float *v, const float *g, size_t n, const float *step_alpha, float c1,
                            float c2, float eps, const int *skip) {
    if (skip && *skip) return;
    float alpha = *step_alpha;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x) {
        float mk = __fadd_rn(m[k], __fmul_rn(__fsub_rn(g[k], m[k]), c1));
        float vk = __fadd_rn(v[k], __fmul_rn(__fsub_rn(__fmul_rn(g[k], g[k]), v[k]), c2));
        m[k] = mk, v[k] = vk;
        w[k] = __fsub_rn(w[k], __fdiv_rn(__fmul_rn(mk, alpha), __fadd_rn(__fsqrt_rn(vk), eps)));
    }
}

extern "C" int sf_gpu_dropout_forward(float *y, float *mask, const float *x, size_t n, float rate,
                                      const uint64_t *seed, uint64_t salt, uint64_t first, void *stream, sf_err *e) {
    dropout_forward<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(y, mask, x, n, rate, 1.0f / (1.0f - rate),
                                                                          seed, salt, first);
    return launched("dropout forward", e);
}

extern "C" int sf_gpu_dropout_backward(float *dx, const float *dy, const float *mask, size_t n, void *stream,
                                       sf_err *e) {
    dropout_backward<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(dx, dy, mask, n);
    return launched("dropout backward", e);
}

extern "C" int sf_gpu_loss_backward(float *dy, const sf_loss *l, const float *y, const float *target, size_t B,
                                    size_t O, float inv_batch, void *stream, sf_err *e) {
    size_t W = sf_loss_width(l);
    float scale = (l->kind == SF_LOSS_MSE ? 2.0f : 1.0f) * inv_batch / (float)(O * W);
    loss_backward<<<blocks_for(B * O * W), THREADS, 0, (cudaStream_t)stream>>>(dy, *l, y, target, B * O, scale);
    return launched("the loss's gradient", e);
}

extern "C" int sf_gpu_loss_sum(double *sum, const sf_loss *l, const float *y, const float *target, size_t B, size_t O,
                               void *stream, sf_err *e) {
    loss_sum<<<1, LOSS_THREADS, 0, (cudaStream_t)stream>>>(sum, *l, y, target, B, O);
    return launched("the loss", e);
}

// A window's series: the first 1 of its one-hot (0 when none), as one_of.
__global__ static void embed_series(int *series, const float *onehot, size_t X, size_t B, size_t S) {
    size_t b = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (b >= B) return;
    size_t s = 0;
    while (s < S && onehot[b * X + s] != 1.0f) s++;
    series[b] = s < S ? (int)s : 0;
}

__global__ static void embed_forward(float *out, size_t ld, const int *series, const float *E, size_t B, size_t D) {
    size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (k >= B * D) return;
    size_t b = k / D, d = k % D;
    out[b * ld + d] = E[(size_t)series[b] * D + d];
}

// One thread per (series, d), summing its windows in order: the CPU's sums, bit for bit.
__global__ static void embed_backward(float *dE, const float *dout, size_t ld, const int *series, size_t B, size_t S,
                                      size_t D) {
    size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (k >= S * D) return;
    size_t s = k / D, d = k % D;
    float sum = 0;
    for (size_t b = 0; b < B; b++)
        if ((size_t)series[b] == s) sum += dout[b * ld + d];
    dE[k] = sum;
}

extern "C" int sf_gpu_embed_forward(float *out, size_t ld, int *series, const float *onehot, size_t X, const float *E,
                                    size_t B, size_t S, size_t D, void *stream, sf_err *e) {
    embed_series<<<blocks_for(B), THREADS, 0, (cudaStream_t)stream>>>(series, onehot, X, B, S);
    embed_forward<<<blocks_for(B * D), THREADS, 0, (cudaStream_t)stream>>>(out, ld, series, E, B, D);
    return launched("embedding", e);
}

extern "C" int sf_gpu_embed_backward(float *dE, const float *dout, size_t ld, const int *series, size_t B, size_t S,
                                     size_t D, void *stream, sf_err *e) {
    embed_backward<<<blocks_for(S * D), THREADS, 0, (cudaStream_t)stream>>>(dE, dout, ld, series, B, S, D);
    return launched("embedding backward", e);
}

extern "C" int sf_gpu_last_step(float *out, const float *h, size_t B, size_t T, size_t U, void *stream, sf_err *e) {
    last_step<<<blocks_for(B * U), THREADS, 0, (cudaStream_t)stream>>>(out, h, B, T, U);
    return launched("last step", e);
}

extern "C" int sf_gpu_last_step_backward(float *dh, const float *dout, size_t B, size_t T, size_t U, void *stream,
                                         sf_err *e) {
    last_step_backward<<<blocks_for(B * T * U), THREADS, 0, (cudaStream_t)stream>>>(dh, dout, B, T, U);
    return launched("last step backward", e);
}

extern "C" int sf_gpu_update_finite(int *bad, const float *g, size_t n, const double *loss, void *stream,
                                    sf_err *e) {
    update_finite<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(bad, g, n, loss);
    return launched("the update's guard", e);
}

extern "C" int sf_gpu_adam_update(float *w, float *m, float *v, const float *g, size_t n, const sf_adam *a,
                                  const float *alpha, const int *skip, void *stream, sf_err *e) {
    adam<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(w, m, v, g, n, alpha, 1.0f - a->beta1, 1.0f - a->beta2,
                                                              a->epsilon, skip);
    return launched("Adam", e);
}

// ---- bf16 (docs/TRAINING.md, "bf16"): the LSTM on cuBLAS' bf16 products,
// whose element-wise steps are these, each the twin of cpu_kernels.c's ----

// sf_bf16_round: to nearest, ties to even; a NaN stays a (quiet) NaN.
__device__ static uint16_t bf16_round(float x) {
    uint32_t u = __float_as_uint(x);
    uint32_t nearest = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : nearest);
}

// exp_fast, sigmoid_fast and tanh_fast, operation for operation.
__device__ static float exp_fast(float x) {
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    float t = __fadd_rn(__fmul_rn(x, 1.44269504f), 12582912.0f);
    float n = __fsub_rn(t, 12582912.0f);
    float r = __fsub_rn(__fsub_rn(x, __fmul_rn(n, 0.693145752f)), __fmul_rn(n, 1.42860677e-6f));
    float p = __fadd_rn(1.0f / 720, __fmul_rn(r, 1.0f / 5040));
    p = __fadd_rn(1.0f / 120, __fmul_rn(r, p));
    p = __fadd_rn(1.0f / 24, __fmul_rn(r, p));
    p = __fadd_rn(1.0f / 6, __fmul_rn(r, p));
    p = __fadd_rn(0.5f, __fmul_rn(r, p));
    p = __fadd_rn(1.0f, __fmul_rn(r, p));
    p = __fadd_rn(1.0f, __fmul_rn(r, p));
    return __fmul_rn(p, __uint_as_float((__float_as_uint(t) - 0x4b400000u + 127u) << 23));
}

__device__ static float sigmoid_fast(float z) { return __fdiv_rn(1.0f, __fadd_rn(1.0f, exp_fast(-z))); }

__device__ static float tanh_fast(float z) {
    float z2 = __fmul_rn(z, z);
    float series = __fmul_rn(z, __fadd_rn(1.0f, __fmul_rn(z2, __fadd_rn(-1.0f / 3, __fmul_rn(z2, 2.0f / 15)))));
    float full = __fsub_rn(1.0f, __fdiv_rn(2.0f, __fadd_rn(1.0f, exp_fast(__fmul_rn(2.0f, z)))));
    return z2 < 0.0016f ? series : full;
}

__global__ static void round_bf16(uint16_t *out, const float *x, size_t n) {
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x)
        out[k] = bf16_round(x[k]);
}

// out (T,B,C) = the rounded x (B,T,C).
__global__ static void round_time_major(uint16_t *out, const float *x, size_t B, size_t T, size_t C) {
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < T * B * C; k += (size_t)gridDim.x * blockDim.x) {
        size_t t = k / (B * C), b = k / C % B, c = k % C;
        out[k] = bf16_round(x[(b * T + t) * C + c]);
    }
}

// out (B,T,C) = in (T,B,C).
__global__ static void batch_major(float *out, const float *in, size_t B, size_t T, size_t C) {
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < B * T * C; k += (size_t)gridDim.x * blockDim.x) {
        size_t b = k / (T * C), t = k / C % T, c = k % C;
        out[k] = in[(t * B + b) * C + c];
    }
}

// y (rows,n) = b in every row.
__global__ static void rows_fill(float *y, const float *b, size_t rows, size_t n) {
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < rows * n; k += (size_t)gridDim.x * blockDim.x)
        y[k] = b[k % n];
}

// sum (n) += the rows of dy (rows,n) in row order, a column per thread: rows_add.
__global__ static void rows_add(float *sum, const float *dy, size_t rows, size_t n) {
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x) {
        float s = sum[k];
        for (size_t r = 0; r < rows; r++) s = __fadd_rn(s, dy[r * n + k]);
        sum[k] = s;
    }
}

// Step t of lstm_cell for every row b: z (B,4U) is the step's, h and c
// (B,T,U), hq (B,U) the rounded h.
__global__ static void lstm_cell(float *h, float *c, float *z, uint16_t *hq, size_t B, size_t T, size_t U, size_t t) {
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < B * U; k += (size_t)gridDim.x * blockDim.x) {
        size_t b = k / U, u = k % U, row = b * T + t;
        float *zr = z + b * 4 * U;
        float i = sigmoid_fast(zr[u]), f = sigmoid_fast(zr[U + u]), g = tanh_fast(zr[2 * U + u]);
        float o = sigmoid_fast(zr[3 * U + u]);
        float cp = t ? c[(row - 1) * U + u] : 0.0f;
        float cn = __fadd_rn(__fmul_rn(i, g), __fmul_rn(f, cp));
        zr[u] = i, zr[U + u] = f, zr[2 * U + u] = g, zr[3 * U + u] = o;
        c[row * U + u] = cn;
        float hv = __fmul_rn(o, tanh_fast(cn));
        h[row * U + u] = hv;
        hq[k] = bf16_round(hv);
    }
}

// Step t of lstm_cell_backward for every row b: dz (B,4U) and its rounding
// dzq, dc_next (B,U) in and out; z (B,4U) the step's gates; c and dh
// (B,T,U); dh_next (B,U).
__global__ static void lstm_cell_backward(float *dz, uint16_t *dzq, float *dc_next, const float *z, const float *c,
                                          const float *dh, const float *dh_next, size_t B, size_t T, size_t U,
                                          size_t t) {
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < B * U; k += (size_t)gridDim.x * blockDim.x) {
        size_t b = k / U, u = k % U, row = b * T + t, G = 4 * U;
        const float *zr = z + b * G;
        float i = zr[u], f = zr[U + u], g = zr[2 * U + u], o = zr[3 * U + u];
        float tc = tanh_fast(c[row * U + u]), cp = t ? c[(row - 1) * U + u] : 0.0f;
        float dhu = __fadd_rn(dh[row * U + u], dh_next[k]);
        float dc = __fadd_rn(dc_next[k], __fmul_rn(__fmul_rn(dhu, o), __fsub_rn(1.0f, __fmul_rn(tc, tc))));
        float d[4] = {__fmul_rn(__fmul_rn(__fmul_rn(dc, g), i), __fsub_rn(1.0f, i)),
                      __fmul_rn(__fmul_rn(__fmul_rn(dc, cp), f), __fsub_rn(1.0f, f)),
                      __fmul_rn(__fmul_rn(dc, i), __fsub_rn(1.0f, __fmul_rn(g, g))),
                      __fmul_rn(__fmul_rn(__fmul_rn(dhu, tc), o), __fsub_rn(1.0f, o))};
        for (int q = 0; q < 4; q++) dz[b * G + q * U + u] = d[q], dzq[b * G + q * U + u] = bf16_round(d[q]);
        dc_next[k] = __fmul_rn(dc, f);
    }
}

#define LAUNCH(kernel, n, what, ...)                                                         \
    do {                                                                                     \
        kernel<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(__VA_ARGS__);            \
        return launched(what, e);                                                            \
    } while (0)

extern "C" int sf_gpu_bf16_round(sf_bf16 *out, const float *x, size_t n, void *stream, sf_err *e) {
    LAUNCH(round_bf16, n, "bf16 rounding", out, x, n);
}
extern "C" int sf_gpu_bf16_round_time_major(sf_bf16 *out, const float *x, size_t B, size_t T, size_t C, void *stream,
                                            sf_err *e) {
    LAUNCH(round_time_major, B * T * C, "bf16 rounding", out, x, B, T, C);
}
extern "C" int sf_gpu_batch_major(float *out, const float *in, size_t B, size_t T, size_t C, void *stream, sf_err *e) {
    LAUNCH(batch_major, B * T * C, "batch-major copy", out, in, B, T, C);
}
extern "C" int sf_gpu_rows_fill(float *y, const float *b, size_t rows, size_t n, void *stream, sf_err *e) {
    LAUNCH(rows_fill, rows * n, "bias rows", y, b, rows, n);
}
extern "C" int sf_gpu_rows_add(float *sum, const float *dy, size_t rows, size_t n, void *stream, sf_err *e) {
    LAUNCH(rows_add, n, "bias gradient", sum, dy, rows, n);
}
extern "C" int sf_gpu_lstm_cell(float *h, float *c, float *z, sf_bf16 *hq, size_t B, size_t T, size_t U, size_t t,
                                void *stream, sf_err *e) {
    LAUNCH(lstm_cell, B * U, "LSTM cell", h, c, z, hq, B, T, U, t);
}
extern "C" int sf_gpu_lstm_cell_backward(float *dz, sf_bf16 *dzq, float *dc_next, const float *z, const float *c,
                                         const float *dh, const float *dh_next, size_t B, size_t T, size_t U, size_t t,
                                         void *stream, sf_err *e) {
    LAUNCH(lstm_cell_backward, B * U, "LSTM cell backward", dz, dzq, dc_next, z, c, dh, dh_next, B, T, U, t);
}
