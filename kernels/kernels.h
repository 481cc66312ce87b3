// kernels: the model's math, one function per layer pass, on plain buffers.
// The CPU kernels (cpu_kernels.c, BLAS) are the reference; their CUDA twins
// (cuda_kernels.cu) compute the same, in the same order, on device memory.
// Backends (backend/backend.h) build replicas out of them. Nothing here
// allocates, keeps state or fails, but the CUDA twins, which return the
// CUDA error.
#ifndef SF_KERNELS_H
#define SF_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

// ---- the model's kernels on CPU ----
// Layouts are row-major; x is (B,T,C) batch-major. Gradients (d*) are
// overwritten, not accumulated.

// Keras' LSTM (gates i, f, c, o; sigmoid and tanh; zero initial state).
// h, c are (B,T,U): every step's output and cell; gates (B,T,4U) the gate
// activations, kept for backward. W is (C,4U), Ur (U,4U), b (4U).
void sf_lstm_forward(float *h, float *c, float *gates, const float *x, const float *W, const float *Ur, const float *b,
                     size_t B, size_t T, size_t C, size_t U);
// Floats of scratch sf_lstm_backward needs.
size_t sf_lstm_backward_work(size_t B, size_t T, size_t U);
// dh (B,T,U) is the loss's gradient for every output (zero where an output
// is not used); dx (B,T,C) may be NULL for the first layer.
void sf_lstm_backward(float *dx, float *dW, float *dUr, float *db, const float *dh, const float *x, const float *W,
                      const float *Ur, const float *h, const float *c, const float *gates, float *work, size_t B,
                      size_t T, size_t C, size_t U);

// y (B,O) = x (B,C) W (C,O) + b (O)
void sf_dense_forward(float *y, const float *x, const float *W, const float *b, size_t B, size_t C, size_t O);
void sf_dense_backward(float *dx, float *dW, float *db, const float *dy, const float *x, const float *W, size_t B,
                       size_t C, size_t O);

// Inverted dropout over n values: mask holds 0 or 1 / (1 - rate), drawn
// from (seed, first + index) alone, so that a batch cut into parts (first:
// the part's offset) draws the masks of the whole.
void sf_dropout_forward(float *y, float *mask, const float *x, size_t n, float rate, uint64_t seed, uint64_t first);
void sf_dropout_backward(float *dx, const float *dy, const float *mask, size_t n);

// Keras' MSE: the mean over the O targets, summed here over the B rows (the
// caller divides by the global batch). Its gradient with the 1/global batch
// scale folded in.
double sf_mse_sum(const float *y, const float *target, size_t B, size_t O);
void sf_mse_backward(float *dy, const float *y, const float *target, size_t B, size_t O, float inv_batch);

// Threads each BLAS call may use (OpenBLAS' pool): 1 when several replica
// threads call BLAS at once, 0 for every core.
void sf_cpu_threads(int n);

// FLOP/s of a square float32 GEMM of side n on the BLAS's current threads,
// best of reps: the ceiling benchmarks report the model's rate against.
double sf_cpu_gemm_rate(size_t n, int reps);

typedef struct {
    float lr, beta1, beta2, epsilon;  // Keras: 1e-3, 0.9, 0.999, 1e-7
} sf_adam;
// One Adam step (step counts from 1) over n parameters, as Keras computes it.
void sf_adam_update(float *w, float *m, float *v, const float *g, size_t n, const sf_adam *a, uint64_t step);
// Its step size lr sqrt(1 - b2^t) / (1 - b1^t), the same for both backends.
float sf_adam_alpha(const sf_adam *a, uint64_t step);

// ---- the CUDA twins (cuda_kernels.cu; only in a build with CUDA) ----
// Device pointers, work queued on stream (a cudaStream_t); each computes
// what its CPU twin above does, bit for bit. 0 or SF_EIO (the CUDA error).
int sf_gpu_dropout_forward(float *y, float *mask, const float *x, size_t n, float rate, uint64_t seed,
                           uint64_t first, void *stream, sf_err *e);
int sf_gpu_dropout_backward(float *dx, const float *dy, const float *mask, size_t n, void *stream, sf_err *e);
int sf_gpu_mse_backward(float *dy, const float *y, const float *target, size_t B, size_t O, float inv_batch,
                        void *stream, sf_err *e);
// *sum (device) = sf_mse_sum of y, target, the same to the bit.
int sf_gpu_mse_sum(double *sum, const float *y, const float *target, size_t B, size_t O, void *stream, sf_err *e);
// out (B,U) = h[:, T-1, :] for h (B,T,U), and its backward: dh zero but the
// last step, dout.
int sf_gpu_last_step(float *out, const float *h, size_t B, size_t T, size_t U, void *stream, sf_err *e);
int sf_gpu_last_step_backward(float *dh, const float *dout, size_t B, size_t T, size_t U, void *stream, sf_err *e);
int sf_gpu_adam_update(float *w, float *m, float *v, const float *g, size_t n, const sf_adam *a, uint64_t step,
                       void *stream, sf_err *e);

#endif
