// kernels: the model's kernels on CPU (BLAS), GPU discovery and staging.
// The CUDA kernels join the CPU ones with the GPU backend, each next to its
// CPU twin. Every GPU function works, and reports "no GPU", in a build
// without CUDA and on a machine without a driver.
#ifndef SF_KERNELS_H
#define SF_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

// True when this binary was compiled with the CUDA backend.
bool sf_gpu_built(void);

// Number of usable GPUs. 0 means "run on CPU"; then e (if not NULL) says why
// in one line (no driver, no device, built without CUDA). Never fails.
int sf_gpu_count(sf_err *e);

// Fills name (and memory in bytes) of device dev. Returns 0 or SF_EINVAL.
int sf_gpu_describe(int dev, char *name, size_t name_len, size_t *memory, sf_err *e);
// Compute capability of device dev as 10 major + minor (90 for an H100 or
// H200), 0 when it cannot be had.
int sf_gpu_capability(int dev);
// Device dev's PCI bus id ("0000:3b:00.0"), which names one GPU whatever
// CUDA_VISIBLE_DEVICES numbers it; 0, or -1 when it cannot be had.
int sf_gpu_bus_id(int dev, char *id, size_t len);

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

// ---- the CUDA twins (kernels/gpu.cu) ----
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

// ---- staging: the pipeline's batches onto each replica's GPU ----
// Replica r lives on devices[r] and has a copy stream there; each slot of its
// ring a device buffer and two events: copied (the consumer's stream waits on
// it before reading the batch) and consumed (the next copy into the slot
// waits on it, so a batch is never overwritten while the consumer's queued
// work still reads it). The hooks take the stage as arg and have the shape of
// the pipeline's sf_stage_ops; the trainer joins the two.
typedef struct sf_gpu_stage sf_gpu_stage;
int sf_gpu_stage_open(sf_gpu_stage **out, const int *devices, uint32_t replicas, uint32_t slots, sf_err *e);
// Waits for every copy, then frees everything.
void sf_gpu_stage_close(sf_gpu_stage *st);
// The stream (a cudaStream_t) that consumes replica r's batches; until it is
// set, the device's default stream.
void sf_gpu_stage_set_stream(sf_gpu_stage *st, uint32_t r, void *stream);
// Makes replica r's consumer stream wait for a batch's ready event, without
// blocking the host; timing events around the wait measure it on the GPU.
int sf_gpu_stage_wait(sf_gpu_stage *st, uint32_t r, void *ready, sf_err *e);
// Seconds replica r's stream spent in its last wait: the copy that earlier
// work did not hide. Read it once the stream has passed the wait (0 if it
// has not, or without CUDA).
double sf_gpu_stage_waited(sf_gpu_stage *st, uint32_t r);
// The first CUDA error the hooks met (release cannot return one), or 0.
int sf_gpu_stage_error(sf_gpu_stage *st, sf_err *e);
// Copies and host-blocking waits done so far by the hooks, summed over
// replicas: reclaims that had to wait for a copy are counted apart.
void sf_gpu_stage_counts(sf_gpu_stage *st, uint64_t *copies, uint64_t *reclaims_waited);

void *sf_gpu_stage_alloc(void *arg, uint32_t r, uint32_t s, size_t bytes);
void sf_gpu_stage_free(void *arg, uint32_t r, uint32_t s, void *host);
int sf_gpu_stage_reclaim(void *arg, uint32_t r, uint32_t s, sf_err *e);
int sf_gpu_stage_publish(void *arg, uint32_t r, uint32_t s, const void *host, size_t bytes, void **device,
                         void **ready, sf_err *e);
void sf_gpu_stage_release(void *arg, uint32_t r, uint32_t s);

#endif
