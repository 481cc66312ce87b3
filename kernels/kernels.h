// kernels: the model's math, one function per layer pass, on plain buffers.
// The CPU kernels (cpu_kernels.c, BLAS) are the reference; their CUDA twins
// (cuda_kernels.cu) compute the same, in the same order, on device memory.
// Backends (backend/backend.h) build replicas out of them. Nothing here
// allocates, keeps state or fails, but the bf16 products (sf_matmul, which
// keeps oneDNN's primitives) and the CUDA twins, which return the CUDA
// error.
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
// activations, kept for backward. W is (C,4U), Ur (U,4U), b (4U). packed:
// Ur as sf_recurrent_pack leaves it, or NULL (then Ur as stored).
void sf_lstm_forward(float *h, float *c, float *gates, const float *x, const float *W, const float *Ur, const float *b,
                     const float *packed, size_t B, size_t T, size_t C, size_t U);
// A recurrent layer's kernel Ur (U,G) (G: 4U for the LSTM, 3U for the GRU)
// as the time steps' products read it, made once per update and shared by
// a replica's parts, in sf_recurrent_packed_floats(U, G) floats: where
// seqfeed's own step products run (AVX2 and FMA without AVX-512:
// kernels/cpu_panels.c), Ur and its transpose packed in panels; elsewhere
// Ur^T (G,U), which sgemm reads faster than Ur with its transpose flag.
// Only for Ur's elements [first, end) in its row-major order: the slice of
// the weights a thread has just updated. packed starts zeroed.
size_t sf_recurrent_packed_floats(size_t U, size_t G);
void sf_recurrent_pack(float *packed, const float *Ur, size_t U, size_t G, size_t first, size_t end);
// Floats of scratch sf_lstm_backward needs.
size_t sf_lstm_backward_work(size_t B, size_t T, size_t U);
// dh (B,T,U) is the loss's gradient for every output (zero where an output
// is not used); dx (B,T,C) may be NULL for the first layer. gates leaves
// holding the gradients of the pre-activations, written over the
// activations each was computed from. packed: Ur packed
// (sf_recurrent_pack), or NULL: Ur^T made in work.
void sf_lstm_backward(float *dx, float *dW, float *dUr, float *db, const float *dh, const float *x, const float *W,
                      const float *Ur, const float *packed, const float *h, const float *c, float *gates, float *work,
                      size_t B, size_t T, size_t C, size_t U);

// Keras 3's GRU (reset_after=True, the cuDNN form; gates z, r, h; zero
// initial state): hh = tanh(x W_h + b_h + r (h_prev Ur_h + br_h)),
// h = z h_prev + (1 - z) hh. h, rh are (B,T,U): every step's output and
// the recurrent product's h part (with its bias), kept for backward; gates
// (B,T,3U) the activations z, r, hh. W is (C,3U), Ur (U,3U), b (6U): Keras'
// (2, 3U), the input's bias then the recurrent's. work: forward scratch of
// sf_gru_forward_work floats. packed: Ur packed (sf_recurrent_pack), or
// NULL: Ur as stored, in both passes.
size_t sf_gru_forward_work(size_t B, size_t U);
void sf_gru_forward(float *h, float *rh, float *gates, float *work, const float *x, const float *W, const float *Ur,
                    const float *b, const float *packed, size_t B, size_t T, size_t C, size_t U);
// Floats of scratch sf_gru_backward needs; dh, dx as sf_lstm_backward's.
size_t sf_gru_backward_work(size_t B, size_t T, size_t U);
void sf_gru_backward(float *dx, float *dW, float *dUr, float *db, const float *dh, const float *x, const float *W,
                     const float *Ur, const float *packed, const float *h, const float *rh, const float *gates,
                     float *work, size_t B, size_t T, size_t C, size_t U);

// y (B,O) = x (B,C) W (C,O) + b (O)
void sf_dense_forward(float *y, const float *x, const float *W, const float *b, size_t B, size_t C, size_t O);
// --series-features embedding:D: each window's series is its one-hot's 1,
// the first of S values at onehot + b * X (its input x); its embedding
// (the series' row of E, (S, D)) goes to out + b * ld, D floats, as a
// lookup (no product: exact in every precision). The gradient dE (S, D,
// overwritten) sums the rows dout + b * ld of each series in window order.
void sf_embed_forward(float *out, size_t ld, const float *onehot, size_t X, const float *E, size_t B, size_t S,
                      size_t D);
void sf_embed_backward(float *dE, const float *dout, size_t ld, const float *onehot, size_t X, size_t B, size_t S,
                       size_t D);
void sf_dense_backward(float *dx, float *dW, float *db, const float *dy, const float *x, const float *W, size_t B,
                       size_t C, size_t O);

// Inverted dropout over n values: mask holds 0 or 1 / (1 - rate), drawn
// from (seed, first + index) alone, so that a batch cut into parts (first:
// the part's offset) draws the masks of the whole.
void sf_dropout_forward(float *y, float *mask, const float *x, size_t n, float rate, uint64_t seed, uint64_t first);
void sf_dropout_backward(float *dx, const float *dy, const float *mask, size_t n);

// The training loss (--loss, docs/TRAINING.md): Keras' MSE, MAE or Huber
// (delta), or the pinball loss of nq quantiles. A row's loss is the mean
// over its O target values (targets x steps) of each value's loss, itself
// the mean over the quantiles; a prediction of a quantile model holds nq
// values per target value (quantile fastest), O x nq in all.
enum sf_loss_kind { SF_LOSS_MSE, SF_LOSS_MAE, SF_LOSS_HUBER, SF_LOSS_QUANTILE };
enum { SF_LOSS_MAX_QUANTILES = 16 };
typedef struct {
    enum sf_loss_kind kind;  // a zeroed one is MSE
    double delta;            // huber: where the square becomes linear (Keras' 1.0)
    uint32_t nq;             // quantile: how many, each in (0, 1), ascending; else 0
    double q[SF_LOSS_MAX_QUANTILES];
} sf_loss;
// Predictions per target value: nq for quantiles, else 1.
static inline uint32_t sf_loss_width(const sf_loss *l) { return l->kind == SF_LOSS_QUANTILE ? l->nq : 1; }
// One prediction's loss for its error d = prediction - target (quantile j's
// for a quantile loss): d^2, |d|, Huber's 0.5 d^2 or delta (|d| - 0.5 delta),
// or the pinball max(q (-d), (q - 1)(-d)).
double sf_loss_error(const sf_loss *l, uint32_t j, double d);
// One target value's loss from its sf_loss_width predictions y: the mean of
// their sf_loss_error, in double.
double sf_loss_value(const sf_loss *l, const float *y, float target);
// The row losses summed over the B rows (the caller divides by the global
// batch): y (B, O x width), target (B, O).
double sf_loss_sum(const sf_loss *l, const float *y, const float *target, size_t B, size_t O);
// Its gradient for y, with the 1/global batch scale folded in. Where the
// loss has a kink at the target (MAE, pinball), the gradient there is the
// mean of both sides' (0 for MAE; 0.5 - q for pinball), as PyTorch's.
void sf_loss_backward(const sf_loss *l, float *dy, const float *y, const float *target, size_t B, size_t O,
                      float inv_batch);

// ---- bf16 products on CPU (docs/TRAINING.md, "bf16") ----
// Every matrix product's two operands rounded from float32 to bfloat16 (to
// nearest, ties to even), the products and their sums in float32; storage,
// element-wise math, biases and the loss stay float32.

// A bfloat16 as its bits: the top half of a float32.
typedef uint16_t sf_bf16;
// out[k] = x[k] rounded to bfloat16; NaN stays NaN, overflow goes to infinity.
void sf_bf16_round(sf_bf16 *out, const float *x, size_t n);

// One thread's bf16 products (cpu_matmul.c: oneDNN's matmul), which keeps
// the primitives it makes, by shape. Use it from one thread at a time.
typedef struct sf_matmul sf_matmul;
// True when this build and CPU have bf16 products; what (the library and the
// instructions, or why none) into what[n] either way.
bool sf_matmul_available(char *what, size_t n);
// The bf16 products this CPU gives: none (no module, no AVX-512), emulated
// on AVX-512 (correct, slower than fp32), dot products (AVX512_BF16:
// measured slower than fp32 too, 0.6x the samples/s on Emerald Rapids), or
// AMX tiles.
typedef enum { SF_BF16_NONE, SF_BF16_EMULATED, SF_BF16_DOT, SF_BF16_AMX } sf_bf16_kind;
sf_bf16_kind sf_matmul_kind(void);
// 0, or SF_EUSAGE (no bf16 products here: the message says why and names
// --precision) or SF_ENOMEM; *out NULL on failure. Close with
// sf_matmul_close (NULL is ignored).
int sf_matmul_open(sf_matmul **out, sf_err *e);
void sf_matmul_close(sf_matmul *mm);
// C (M,N) = A B, or C += A B when accumulate, on dense row-major matrices:
// A is (M,K), or (K,M) when ta and then transposed; B is (K,N), or (N,K)
// when tb. A failure is kept (see sf_matmul_status) and later calls do
// nothing.
void sf_matmul_bf16(sf_matmul *mm, float *C, const sf_bf16 *A, const sf_bf16 *B, size_t M, size_t N, size_t K, bool ta,
                    bool tb, bool accumulate);
// Weights many products read (a recurrent kernel, at every time step),
// packed once into the layout oneDNN's products want: B (K,N), or (N,K)
// when tb, into weights slot (0 .. SF_MATMUL_SLOTS - 1) of mm, replacing
// what the slot held (the same shape every time). rows: the M of the
// products to come, which the layout is chosen for.
enum { SF_MATMUL_SLOTS = 128 };
void sf_matmul_pack(sf_matmul *mm, int slot, const sf_bf16 *B, size_t K, size_t N, bool tb, size_t rows);
// C (M,N) = A B, or C += A B, with B the weights packed in slot.
void sf_matmul_bf16_packed(sf_matmul *mm, int slot, float *C, const sf_bf16 *A, size_t M, bool accumulate);
// Bytes packed weights of (K,N) take at most (oneDNN pads K and N to its
// blocks).
size_t sf_matmul_packed_bytes(size_t K, size_t N);
// 0, or the first failure since open (with its message).
int sf_matmul_status(const sf_matmul *mm, sf_err *e);
// FLOP/s of a square product of side n on oneDNN's matmul, bf16 operands
// or float32 ones, on `threads` threads, its best run once the clock is
// steady (sf_steady_best, within `seconds`; *steady says whether it was):
// one of the ceilings sf_gemm_ceiling takes the best of; 0 without the
// module (or, for bf16, without bf16 products).
double sf_matmul_rate(size_t n, bool bf16, int threads, double seconds, bool *steady);

// A layer's rounded operands, kept from its forward to its backward pass,
// owned by the caller: time-major (T,B,...) for the LSTM, so that every
// product reads and writes dense matrices (oneDNN's AMX kernels take no
// leading dimensions). LSTM: x (T,B,C), h (T,B,U), W (C,4U), Ur (U,4U);
// dense: x (B,C), W (C,O). d is backward scratch for the rounded gradient,
// (T,B,4U) or (B,O), and may be shared between layers. An LSTM packs its
// weights into slots slot .. slot + 3 of mm: W, Ur, and their transposes.
typedef struct {
    sf_matmul *mm;
    sf_bf16 *x, *h, *W, *Ur, *d;
    int slot;
} sf_bf16_layer;

// The LSTM and dense passes above in bf16. gates is (T,B,4U) here,
// time-major (and backward leaves the gradients in it, as above); h, c, x,
// dx and every gradient are as above. q holds the rounded operands between
// forward and backward.
void sf_lstm_forward_bf16(float *h, float *c, float *gates, const float *x, const float *W, const float *Ur,
                          const float *b, sf_bf16_layer *q, size_t B, size_t T, size_t C, size_t U);
// Floats of scratch sf_lstm_backward_bf16 needs.
size_t sf_lstm_backward_bf16_work(size_t B, size_t T, size_t C, size_t U);
void sf_lstm_backward_bf16(float *dx, float *dW, float *dUr, float *db, const float *dh, const float *c,
                           float *gates, sf_bf16_layer *q, float *work, size_t B, size_t T, size_t C, size_t U);
// The GRU in bf16: as the LSTM's (gates (T,B,3U) time-major, the same
// slots of mm), but q->d holds two rounded gradients, (T,B,3U) each: the
// input projection's and the recurrent product's, which differ in the h part.
void sf_gru_forward_bf16(float *h, float *rh, float *gates, float *work, const float *x, const float *W,
                         const float *Ur, const float *b, sf_bf16_layer *q, size_t B, size_t T, size_t C, size_t U);
size_t sf_gru_backward_bf16_work(size_t B, size_t T, size_t C, size_t U);
void sf_gru_backward_bf16(float *dx, float *dW, float *dUr, float *db, const float *dh, const float *h,
                          const float *rh, const float *gates, sf_bf16_layer *q, float *work, size_t B, size_t T,
                          size_t C, size_t U);
void sf_dense_forward_bf16(float *y, const float *x, const float *W, const float *b, sf_bf16_layer *q, size_t B,
                           size_t C, size_t O);
void sf_dense_backward_bf16(float *dx, float *dW, float *db, const float *dy, sf_bf16_layer *q, size_t B, size_t C,
                            size_t O);

// Threads each BLAS call may use (OpenBLAS' pool): 1 when several replica
// threads call BLAS at once, 0 for every core.
void sf_cpu_threads(int n);

// The OPENBLAS_CORETYPE this CPU should run (a static string), or NULL:
// non-NULL when OpenBLAS did not recognize the CPU and chose kernels of
// the SSE era although it has AVX2 and FMA (Debian 12's 0.3.21 on Emerald
// Rapids chose Prescott's, 4-7x slower on the trainer's small products).
// OpenBLAS reads the variable as it loads, so only a new process gains.
const char *sf_cpu_blas_core(void);

// What the float32 kernels run on (the BLAS and its build, the products
// oneDNN's sgemm takes when its module is there, the element-wise loops'
// instructions), into what[n].
void sf_cpu_describe(char *what, size_t n);

// The machine's GEMM ceiling in one precision, which benchmarks report the
// model's rate against: the best rate of square products of side 1024,
// 1536 and 2048 through every library this build links (float32: OpenBLAS'
// sgemm and oneDNN's matmul; bf16: oneDNN's matmul), on `threads` threads
// (the training's cores), each product run until the clock is steady
// (sf_steady_best) within `seconds`. rate 0: no products in that precision.
// It leaves OpenBLAS on `threads` threads.
typedef struct {
    double rate;          // FLOP/s
    const char *library;  // what gave it: "OpenBLAS sgemm", "oneDNN matmul"
    size_t n;             // its side
    bool steady;          // whether that product's rates agreed before its time ran out
} sf_gemm_ceiling;
sf_gemm_ceiling sf_gemm_ceiling_measure(bool bf16, int threads, double seconds);
// best's product (its library and side, from sf_gemm_ceiling_measure)
// measured again: on a machine whose speed drifts, the limit a run is a
// share of, taken beside it. best unchanged (rate 0 when it had none).
sf_gemm_ceiling sf_gemm_ceiling_again(const sf_gemm_ceiling *best, bool bf16, int threads, double seconds);

typedef struct {
    float lr, beta1, beta2, epsilon;  // Keras: 1e-3, 0.9, 0.999, 1e-7
} sf_adam;
// One Adam step (step counts from 1) over n parameters, as Keras computes it
// (w, m, v and g apart).
void sf_adam_update(float *w, float *m, float *v, const float *g, size_t n, const sf_adam *a, uint64_t step);
// Its step size lr sqrt(1 - b2^t) / (1 - b1^t), the same for both backends.
float sf_adam_alpha(const sf_adam *a, uint64_t step);
// Whether a step may update: its loss and its n summed gradients all
// finite. The guard a GPU applies to an update queued before the host has
// read the loss.
bool sf_update_finite(const float *g, size_t n, double loss);

// ---- the CUDA twins (cuda_kernels.cu; only in a build with CUDA) ----
// Device pointers, work queued on stream (a cudaStream_t); each computes
// what its CPU twin above does, bit for bit. 0 or SF_EIO (the CUDA error).
// What changes every step (dropout's seed, Adam's step size) is read from
// device memory when the kernel runs, so that a step captured once in a
// CUDA graph runs every later step.
// The masks of sf_dropout_forward with the seed *seed ^ salt (seed: device).
int sf_gpu_dropout_forward(float *y, float *mask, const float *x, size_t n, float rate, const uint64_t *seed,
                           uint64_t salt, uint64_t first, void *stream, sf_err *e);
int sf_gpu_dropout_backward(float *dx, const float *dy, const float *mask, size_t n, void *stream, sf_err *e);
// *sum (device) = sf_loss_sum of y, target, the same to the bit; dy as
// sf_loss_backward, the same to the bit.
int sf_gpu_loss_sum(double *sum, const sf_loss *l, const float *y, const float *target, size_t B, size_t O,
                    void *stream, sf_err *e);
int sf_gpu_loss_backward(float *dy, const sf_loss *l, const float *y, const float *target, size_t B, size_t O,
                         float inv_batch, void *stream, sf_err *e);
// out (B,U) = h[:, T-1, :] for h (B,T,U), and its backward: dh zero but the
// last step, dout.
int sf_gpu_last_step(float *out, const float *h, size_t B, size_t T, size_t U, void *stream, sf_err *e);
// sf_embed_forward and sf_embed_backward; series (B ints, device) holds
// each window's series between the two (forward finds it).
int sf_gpu_embed_forward(float *out, size_t ld, int *series, const float *onehot, size_t X, const float *E, size_t B,
                         size_t S, size_t D, void *stream, sf_err *e);
int sf_gpu_embed_backward(float *dE, const float *dout, size_t ld, const int *series, size_t B, size_t S, size_t D,
                          void *stream, sf_err *e);
int sf_gpu_last_step_backward(float *dh, const float *dout, size_t B, size_t T, size_t U, void *stream, sf_err *e);
// *bad (device) becomes 1 when !sf_update_finite(g, n, *loss) (loss:
// device), and then stays 1 (its owner zeroes it once): every later update
// is skipped too, so the weights stay those before the first bad step.
int sf_gpu_update_finite(int *bad, const float *g, size_t n, const double *loss, void *stream, sf_err *e);
// Adam with the step size *alpha (device: sf_adam_alpha of the step); skip
// (device; NULL: never): when *skip is nonzero, w, m and v stay as they are.
int sf_gpu_adam_update(float *w, float *m, float *v, const float *g, size_t n, const sf_adam *a, const float *alpha,
                       const int *skip, void *stream, sf_err *e);

// The bf16 LSTM's element-wise steps (docs/TRAINING.md, "bf16"), as
// sf_lstm_forward_bf16 and sf_lstm_backward_bf16 do them: rounding
// (sf_bf16_round), x (B,T,C) rounded into time-major (T,B,C), its way back
// for dx, a bias in every row and a bias gradient summed in row order, and
// time step t of the cell for every row: z (B,4U) the step's
// pre-activations, left holding its gates; h, c, dh (B,T,U); hq (B,U) the
// rounded h; dz (B,4U) with its rounding dzq; dh_next, dc_next (B,U).
int sf_gpu_bf16_round(sf_bf16 *out, const float *x, size_t n, void *stream, sf_err *e);
int sf_gpu_bf16_round_time_major(sf_bf16 *out, const float *x, size_t B, size_t T, size_t C, void *stream, sf_err *e);
int sf_gpu_batch_major(float *out, const float *in, size_t B, size_t T, size_t C, void *stream, sf_err *e);
int sf_gpu_rows_fill(float *y, const float *b, size_t rows, size_t n, void *stream, sf_err *e);
int sf_gpu_rows_add(float *sum, const float *dy, size_t rows, size_t n, void *stream, sf_err *e);
int sf_gpu_lstm_cell(float *h, float *c, float *z, sf_bf16 *hq, size_t B, size_t T, size_t U, size_t t, void *stream,
                     sf_err *e);
int sf_gpu_lstm_cell_backward(float *dz, sf_bf16 *dzq, float *dc_next, const float *z, const float *c, const float *dh,
                              const float *dh_next, size_t B, size_t T, size_t U, size_t t, void *stream, sf_err *e);

#endif
