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

// dy = scale (y - target), scale = 2 / (global batch x outputs); as sf_mse_backward.
__global__ static void mse_backward(float *dy, const float *y, const float *target, size_t n, float scale) {
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x)
        dy[k] = __fmul_rn(scale, __fsub_rn(y[k], target[k]));
}

// One block: its threads compute a chunk of rows' terms at once, then
// thread 0 adds them in row order, as sf_mse_sum does, so that the sum is
// the CPU's to the bit (one thread alone ran every row's O terms serially).
enum { MSE_THREADS = 256 };
__global__ static void mse_sum(double *sum, const float *y, const float *target, size_t B, size_t O) {
    __shared__ double terms[MSE_THREADS];
    double acc = 0;
    for (size_t first = 0; first < B; first += MSE_THREADS) {
        size_t r = first + threadIdx.x;
        if (r < B) {
            double row = 0;
            for (size_t k = 0; k < O; k++) {
                double d = __dsub_rn((double)y[r * O + k], (double)target[r * O + k]);
                row = __dadd_rn(row, __dmul_rn(d, d));
            }
            terms[threadIdx.x] = __ddiv_rn(row, (double)O);
        }
        __syncthreads();
        if (threadIdx.x == 0)
            for (size_t k = 0; k < MSE_THREADS && first + k < B; k++) acc = __dadd_rn(acc, terms[k]);
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

extern "C" int sf_gpu_mse_backward(float *dy, const float *y, const float *target, size_t B, size_t O, float inv_batch,
                                   void *stream, sf_err *e) {
    mse_backward<<<blocks_for(B * O), THREADS, 0, (cudaStream_t)stream>>>(dy, y, target, B * O,
                                                                          2.0f * inv_batch / (float)O);
    return launched("MSE backward", e);
}

extern "C" int sf_gpu_mse_sum(double *sum, const float *y, const float *target, size_t B, size_t O, void *stream,
                              sf_err *e) {
    mse_sum<<<1, MSE_THREADS, 0, (cudaStream_t)stream>>>(sum, y, target, B, O);
    return launched("MSE sum", e);
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
