// The model's kernels on CPU: the reference the CUDA kernels are tested
// against, and the CPU backend itself. Matrix products go to BLAS (row-major
// cblas_sgemm) or oneDNN's sgemm, the LSTM's and GRU's time steps on a
// packed kernel to cpu_panels.c where it runs; everything element-wise is
// fused into one pass per row.
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "internal.h"

// e^x in float32 arithmetic alone, so that loops over it vectorize (libm's
// expf and tanhf are scalar calls, and were a quarter of a training step):
// x = n ln2 + r, |r| <= ln2 / 2, e^r by its Taylor polynomial of degree 7
// (truncation below 2e-9), 2^n built in the exponent bits. Relative error
// within 2 float32 ulp; x is clamped to [-87, 88], where e^x is a normal
// float. n comes from the adder, not a conversion: 1.5 * 2^23 + y holds y
// rounded to an integer (ties to even) in its low bits, which become 2^n's
// exponent in integer arithmetic, defined for a NaN too (whose r carries it
// through). Fused into a multiply-add, x / ln2 is not rounded before the
// sum: n may then differ by one from the CUDA twin's near a half, where
// either n keeps |r| within ln2 / 2 and the result within its error.
// With a float-to-int conversion, which a NaN makes undefined, the guard a
// NaN needed led GCC to compute the polynomial and the callers' divisions
// twice, under two masks: the cell ran at half its speed.
static inline float exp_fast(float x) {
    const float shifter = 12582912.0f;  // 1.5 * 2^23
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    float t = x * 1.44269504f + shifter;
    float n = t - shifter;
    float r = x - n * 0.693145752f - n * 1.42860677e-6f;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720 +
                                                                                               r * (1.0f / 5040)))))));
    uint32_t tbits;
    memcpy(&tbits, &t, sizeof tbits);
    uint32_t bits = (tbits - 0x4b400000u + 127u) << 23;  // 0x4b400000: the shifter's bits, n = 0
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

static inline float sigmoid_fast(float z) { return 1.0f / (1.0f + exp_fast(-z)); }

// tanh z = 1 - 2 / (1 + e^2z), but its odd series near 0, where the
// subtraction would cancel (series error below 1e-10 for |z| < 0.04).
static inline float tanh_fast(float z) {
    float z2 = z * z;
    float series = z * (1.0f + z2 * (-1.0f / 3 + z2 * (2.0f / 15)));
    float full = 1.0f - 2.0f / (1.0f + exp_fast(2.0f * z));
    return z2 < 0.0016f ? series : full;
}

// The element-wise loops in AVX-512, AVX2 and baseline versions, chosen at
// load time for the CPU at hand. The AVX2 clone is x86-64-v3's, with FMA:
// GCC's "avx2" target has none (a multiply and an add for each of the
// cells' multiply-adds: the LSTM cell forward ran 1.2-1.4x slower; a
// training step, whose cells are 8% of it, within the noise).
// Not under ThreadSanitizer: the clones' ifunc resolvers run before its
// runtime has started, and crash. Not with clang before 16 (the fuzzers'
// and sanitizers' builds): it names an external clone's dispatcher
// NAME.ifunc, so other files' calls to NAME do not link.
#if defined(__SANITIZE_THREAD__) || (defined(__clang__) && __clang_major__ < 16)
#define SF_CLONES
#else
#define SF_CLONES __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
#endif

// Which float32 products go to oneDNN's sgemm when its module is there:
// all but the tiny ones. OpenBLAS repacks B at every call, which costs most
// on a time step's few rows, and is slow on a transposed A. Measured
// one-threaded, thread CPU time, 7 interleaved rounds (2026-12-03, us per
// product; oneDNN / OpenBLAS): a part of 16 rows, (16,180)x(180,720) 40 /
// 57 per step, the (960,180)x(180,720) projection 2272 / 2449, the
// (960,720)x(720,180)^T input gradient 2546 / 2667; of 128 rows, 332 / 364
// per step, (128,720)x(720,180)^T 353 / 404, the projection 19.9 / 22.0 ms,
// the input gradient 22.9 / 24.6 ms. (On 2026-12-01 OpenBLAS had won the
// projection and the 128-row step, which had kept them there.) oneDNN's
// call costs about 1 us, OpenBLAS' 0.2: below (16,256)x(256,64) OpenBLAS
// wins.
static bool onednn_sgemm_wins(size_t M, size_t N, size_t K) { return M * N * K >= (size_t)16 * 256 * 64; }

// C (M,N) = alpha op(A) op(B) + beta C, row-major with leading dimensions.
static void gemm(bool ta, bool tb, size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda,
                 const float *B, size_t ldb, float beta, float *C, size_t ldc) {
    if (onednn_sgemm_wins(M, N, K) && sf_matmul_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K,
                alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
}

// Where Ur packed (sf_recurrent_pack) holds each time step's operand:
// forward's panels and backward's (where the panels run), else Ur^T; all
// NULL without it.
typedef struct {
    const float *forward, *backward, *UrT;
} packed_ur;

static packed_ur packed_parts(const float *packed, size_t U, size_t G) {
    if (!packed) return (packed_ur){0};
    if (!sf_panels_on()) return (packed_ur){.UrT = packed};
    return (packed_ur){.forward = packed, .backward = packed + sf_panels_floats(U, G)};
}

// One time step's product with the recurrent kernel, C (M,N) = A (M,K) B,
// or += when accumulate: on B packed in panels P, else on B as stored
// (ldb; transposed when tb) through sgemm.
static void step_product(float *C, size_t ldc, const float *A, size_t lda, size_t M, size_t N, size_t K,
                         bool accumulate, const float *P, const float *B, size_t ldb, bool tb) {
    if (P) sf_panels_product(C, ldc, A, lda, P, M, N, K, accumulate);
    else gemm(false, tb, M, N, K, 1.0f, A, lda, B, ldb, accumulate ? 1.0f : 0.0f, C, ldc);
}

// Keras' LSTM cell on units [0, n) of one row: zi, zf, zg, zo, the
// pre-activations of gates i, f, c, o, leave holding their activations,
// which backward needs. c_prev: zeros at the first step, which may be c
// itself. Inlined into each clone of lstm_cell, with its instructions.
static inline __attribute__((always_inline)) void lstm_cell_span(float *restrict h, float *c, float *restrict zi,
                                                                 float *restrict zf, float *restrict zg,
                                                                 float *restrict zo, const float *c_prev, size_t n) {
    for (size_t u = 0; u < n; u++) {
        float i = sigmoid_fast(zi[u]), f = sigmoid_fast(zf[u]), g = tanh_fast(zg[u]);
        float o = sigmoid_fast(zo[u]);
        float cn = i * g + f * c_prev[u];
        zi[u] = i, zf[u] = f, zg[u] = g, zo[u] = o;
        c[u] = cn;
        h[u] = o * tanh_fast(cn);
    }
}

// m units from src to dst for a cell's tail: 16 (a fixed size, which takes
// no call to memcpy) or fewer (U < 16).
static inline void tail_copy(float *dst, const float *src, size_t m) {
    if (m == 16) memcpy(dst, src, 16 * sizeof(float));
    else memcpy(dst, src, m * sizeof(float));
}

// The cell on one row: z (4U) holds the four gates' pre-activations, to
// which b (4U) is added first unless it is NULL. The vector loop leaves U
// mod 16 units (4 of 180) to scalar code, a seventh of the cell's time at
// 180 units: the last 16 units go through the vector body on copies
// instead (tail_copy), before the loop, whose last units they overlap:
// both compute the same values for those.
SF_CLONES static void lstm_cell(float *restrict h, float *c, float *restrict z, const float *restrict b,
                                const float *c_prev, size_t U) {
    enum { V = 16 };
    size_t n = U - U % V, k = U - n;
    if (b)
        for (size_t j = 0; j < 4 * U; j++) z[j] += b[j];
    if (!k) {
        lstm_cell_span(h, c, z, z + U, z + 2 * U, z + 3 * U, c_prev, n);
        return;
    }
    float th[V], tc[V], tz[4][V] = {{0}}, tp[V] = {0};  // zeros past m units, when U < 16
    size_t w = U >= V ? U - V : 0, m = U >= V ? V : k;  // the copies: units [w, w + m)
    for (int q = 0; q < 4; q++) tail_copy(tz[q], z + q * U + w, m);
    tail_copy(tp, c_prev + w, m);
    lstm_cell_span(th, tc, tz[0], tz[1], tz[2], tz[3], tp, V);
    lstm_cell_span(h, c, z, z + U, z + 2 * U, z + 3 * U, c_prev, n);
    for (int q = 0; q < 4; q++) tail_copy(z + q * U + w, tz[q], m);
    tail_copy(c + w, tc, m);
    tail_copy(h + w, th, m);
}

// The cell backward on units [0, n) of one row: dz holds the gates'
// activations (i, f, g, o, U apart) and leaves holding their
// pre-activations' gradients, each unit's read before it is written. As
// lstm_cell_span, inlined into each clone of lstm_cell_backward.
static inline __attribute__((always_inline)) void lstm_cell_backward_span(
    float *restrict dz, float *restrict dc_next, const float *restrict c, const float *restrict c_prev,
    const float *restrict dh, const float *restrict dh_next, size_t U, size_t n) {
    for (size_t u = 0; u < n; u++) {
        float i = dz[u], f = dz[U + u], g = dz[2 * U + u], o = dz[3 * U + u];
        float tc = tanh_fast(c[u]);
        float dhu = dh[u] + dh_next[u];
        float dc = dc_next[u] + dhu * o * (1.0f - tc * tc);
        dz[u] = dc * g * i * (1.0f - i);
        dz[U + u] = dc * c_prev[u] * f * (1.0f - f);
        dz[2 * U + u] = dc * i * (1.0f - g * g);
        dz[3 * U + u] = dhu * tc * o * (1.0f - o);
        dc_next[u] = dc * f;
    }
}

// The cell backward on one row: dz (4U), the gates' activations, leaves
// holding the pre-activation gradients from dh (the output's gradient,
// this step's and the next step's summed) and dc_next, which leaves
// holding dc for the step before; c_prev as above; the gradients are then
// added to db (4U), the bias gradient. Written over the activations, the
// gradients cost no second buffer's cold lines. The last U mod 16 units go
// through the vector body on copies first, as in lstm_cell.
SF_CLONES static void lstm_cell_backward(float *restrict dz, float *restrict dc_next, const float *restrict c,
                                         const float *restrict c_prev, const float *restrict dh,
                                         const float *restrict dh_next, float *restrict db, size_t U) {
    enum { V = 16 };
    size_t n = U - U % V, k = U - n;
    if (k) {
        float tdz[4 * V] = {0}, tdc[V] = {0}, tc[V] = {0}, tp[V] = {0}, th[V] = {0}, tn[V] = {0};
        size_t w = U >= V ? U - V : 0, m = U >= V ? V : k;  // the copies: units [w, w + m)
        float *to[] = {tdz, tdz + V, tdz + 2 * V, tdz + 3 * V, tdc, tc, tp, th, tn};
        const float *from[] = {dz + w, dz + U + w, dz + 2 * U + w, dz + 3 * U + w, dc_next + w, c + w, c_prev + w,
                               dh + w, dh_next + w};
        for (int j = 0; j < 9; j++) tail_copy(to[j], from[j], m);
        lstm_cell_backward_span(tdz, tdc, tc, tp, th, tn, V, V);
        lstm_cell_backward_span(dz, dc_next, c, c_prev, dh, dh_next, U, n);
        for (int j = 0; j < 5; j++) tail_copy((float *)from[j], to[j], m);  // dz's four gates and dc_next
    } else {
        lstm_cell_backward_span(dz, dc_next, c, c_prev, dh, dh_next, U, n);
    }
    for (size_t j = 0; j < 4 * U; j++) db[j] += dz[j];
}

// y (rows, n) = b in every row: a bias, before the product adds to it.
static void rows_fill(float *y, const float *b, size_t rows, size_t n) {
    for (size_t r = 0; r < rows; r++) memcpy(y + r * n, b, n * sizeof(float));
}

// sum (n) += the rows of dy (rows, n), in row order: a bias's gradient.
// In the clones' instructions: a sum over all of a layer's gates' gradients
// (B*T rows of 3U for the GRU) is as long as a cell pass.
SF_CLONES static void rows_add(float *sum, const float *dy, size_t rows, size_t n) {
    for (size_t r = 0; r < rows; r++)
        for (size_t k = 0; k < n; k++) sum[k] += dy[r * n + k];
}

void sf_lstm_forward(float *h, float *c, float *gates, const float *x, const float *W, const float *Ur, const float *b,
                     const float *packed, size_t B, size_t T, size_t C, size_t U) {
    size_t G = 4 * U;
    packed_ur p = packed_parts(packed, U, G);
    // The input projection of every time step in one GEMM, gates = x W; the
    // cell adds b, on rows in cache (a pass to fill gates with b first was
    // 1.5% of a step at batch 32).
    gemm(false, false, B * T, G, C, 1.0f, x, C, W, G, 0.0f, gates, G);
    for (size_t t = 0; t < T; t++) {
        // Rows (b, t) for every b are T rows apart: the strides are the
        // leading dimensions.
        if (t > 0) step_product(gates + t * G, T * G, h + (t - 1) * U, T * U, B, G, U, true, p.forward, Ur, G, false);
        for (size_t bi = 0; bi < B; bi++) {
            size_t row = bi * T + t;
            if (t == 0) memset(c + row * U, 0, U * sizeof(float));
            lstm_cell(h + row * U, c + row * U, gates + row * G, b, c + (t ? row - 1 : row) * U, U);
        }
    }
}

size_t sf_lstm_backward_work(size_t B, size_t T, size_t U) {
    (void)T;
    return 4 * B * U + 2 * B * U + U + 4 * U * U;
}

// dst (cols, rows) = src (rows, cols) transposed, a tile at a time so that
// both sides stay in cache; dst's rows are ld apart.
static void transpose(float *restrict dst, size_t ld, const float *restrict src, size_t rows, size_t cols) {
    enum { TILE = 16 };
    for (size_t r0 = 0; r0 < rows; r0 += TILE)
        for (size_t c0 = 0; c0 < cols; c0 += TILE)
            for (size_t r = r0; r < r0 + TILE && r < rows; r++)
                for (size_t c = c0; c < c0 + TILE && c < cols; c++) dst[c * ld + r] = src[r * cols + c];
}

// Ur^T's elements from Ur's (U,G) [first, end): whole rows a tile at a time.
static void transpose_ur(float *UrT, const float *Ur, size_t U, size_t G, size_t first, size_t end) {
    size_t r0 = (first + G - 1) / G, r1 = end / G;  // the whole rows [r0, r1)
    if (r0 >= r1) r0 = r1 = end;  // none: element by element
    for (size_t k = first; k < end && k < r0 * G; k++) UrT[k % G * U + k / G] = Ur[k];
    if (r0 < r1) transpose(UrT + r0, U, Ur + r0 * G, r1 - r0, G);
    for (size_t k = r1 * G; k < end; k++) UrT[k % G * U + k / G] = Ur[k];
}

size_t sf_recurrent_packed_floats(size_t U, size_t G) {
    return sf_panels_on() ? sf_panels_floats(U, G) + sf_panels_floats(G, U) : G * U;
}

// With panels: Ur (U,G) packed for forward, a row at a time, then Ur^T
// (G,U) for backward's dh_{t-1} = dz_t Ur^T, its whole rows [r0, r1) as
// columns together (a row alone took 3 times as long, each value a cache
// line of its own), the rows the slice cuts alone.
void sf_recurrent_pack(float *packed, const float *Ur, size_t U, size_t G, size_t first, size_t end) {
    if (!sf_panels_on()) {
        transpose_ur(packed, Ur, U, G, first, end);
        return;
    }
    float *back = packed + sf_panels_floats(U, G);  // packed_parts' backward
    size_t r0 = (first + G - 1) / G, r1 = end / G;
    for (size_t k = first; k < end;) {
        size_t u = k / G, g = k % G, n = (u + 1) * G < end ? (u + 1) * G - k : end - k;
        sf_panels_put_row(packed, U, G, u, g, Ur + k, n);
        if (u < r0 || u >= r1) sf_panels_put_columns(back, G, U, u, 1, g, n, Ur + k, G);
        k += n;
    }
    if (r0 < r1) sf_panels_put_columns(back, G, U, r0, r1 - r0, 0, G, Ur + r0 * G, G);
}

void sf_lstm_backward(float *dx, float *dW, float *dUr, float *db, const float *dh, const float *x, const float *W,
                      const float *Ur, const float *packed, const float *h, const float *c, float *gates, float *work,
                      size_t B, size_t T, size_t C, size_t U) {
    size_t G = 4 * U;
    packed_ur p = packed_parts(packed, U, G);
    const float *UrT = p.UrT;
    float *dgates = gates, *first = work, *dh_next = first + B * G, *dc_next = dh_next + B * U;
    float *zeros = dc_next + B * U;  // the cell before the first step
    // Ur^T (4U,U) for dh_{t-1}: read as stored, the product runs 20-40%
    // faster than on Ur with the transpose flag (oneDNN's sgemm, one thread,
    // (8..21,720) x (720,180): 75-88 GFLOP/s against 105), and T - 1
    // products pay for one transpose, when the caller has none.
    if (!UrT && !p.backward) {
        float *t = zeros + U;
        transpose(t, U, Ur, U, G);
        UrT = t;
    }
    memset(dh_next, 0, (2 * B * U + U) * sizeof(float));
    memset(db, 0, G * sizeof(float));
    for (size_t t = T; t-- > 0;) {
        for (size_t bi = 0; bi < B; bi++) {
            size_t row = bi * T + t;
            lstm_cell_backward(dgates + row * G, dc_next + bi * U, c + row * U, t ? c + (row - 1) * U : zeros,
                               dh + row * U, dh_next + bi * U, db, U);
        }
        // dh_{t-1} = dz_t Ur^T
        if (t > 0) step_product(dh_next, U, dgates + t * G, T * G, B, U, G, false, p.backward, UrT, U, false);
    }
    // dUr = the sum over t >= 1 of h_{t-1}^T dz_t: one GEMM of rows 0 ..
    // BT - 2 of h against rows 1 .. BT - 1 of dz, in which each series'
    // first step (row bi T, bi >= 1) would meet the last of the one before:
    // those B - 1 rows of dz are zero during the product (kept in first),
    // which costs a copy of B - 1 rows instead of one of h's B T (0.6% of a
    // step).
    if (B * T > 1) {
        for (size_t bi = 1; bi < B; bi++) {
            memcpy(first + bi * G, dgates + bi * T * G, G * sizeof(float));
            memset(dgates + bi * T * G, 0, G * sizeof(float));
        }
        gemm(true, false, U, G, B * T - 1, 1.0f, h, U, dgates + G, G, 0.0f, dUr, G);
        for (size_t bi = 1; bi < B; bi++) memcpy(dgates + bi * T * G, first + bi * G, G * sizeof(float));
    } else {
        memset(dUr, 0, U * G * sizeof(float));
    }
    gemm(true, false, C, G, B * T, 1.0f, x, C, dgates, G, 0.0f, dW, G);
    if (dx) gemm(false, true, B * T, C, G, 1.0f, dgates, G, W, G, 0.0f, dx, C);
}

// Keras' GRU cell on one row (reset_after, the cuDNN form): z (3U) holds the
// input projection's z, r, h parts, its bias in, and leaves holding the
// activations z, r and hh; rec (3U) is h_prev Ur plus the recurrent bias,
// whose h part rh (U) keeps for backward: hh = tanh(x W_h + b_h + r rh),
// h = z h_prev + (1 - z) hh. h_prev (U) is zeros at the first step.
SF_CLONES static void gru_cell(float *restrict h, float *restrict rh, float *restrict z, const float *restrict rec,
                               const float *restrict h_prev, size_t U) {
    for (size_t u = 0; u < U; u++) {
        float zg = sigmoid_fast(z[u] + rec[u]), rg = sigmoid_fast(z[U + u] + rec[U + u]);
        float hh = tanh_fast(z[2 * U + u] + rg * rec[2 * U + u]);
        z[u] = zg, z[U + u] = rg, z[2 * U + u] = hh;
        rh[u] = rec[2 * U + u];
        h[u] = zg * h_prev[u] + (1.0f - zg) * hh;
    }
}

// The GRU cell backward on one row: dgx (3U) the gradient of the input
// projection's pre-activations, dgr (3U) that of the recurrent product
// (they differ in the h part, which r scales); dh_next (U) comes in holding
// the gradient of h through the next step's product and leaves holding the
// direct part for h_prev, z dh, which the product's gradient is added to.
SF_CLONES static void gru_cell_backward(float *restrict dgx, float *restrict dgr, float *restrict dh_next,
                                        const float *restrict z, const float *restrict rh,
                                        const float *restrict h_prev, const float *restrict dh, size_t U) {
    for (size_t u = 0; u < U; u++) {
        float zg = z[u], rg = z[U + u], hh = z[2 * U + u];
        float d = dh[u] + dh_next[u];
        float dz = d * (h_prev[u] - hh) * zg * (1.0f - zg);
        float da = d * (1.0f - zg) * (1.0f - hh * hh);
        float dr = da * rh[u] * rg * (1.0f - rg);
        dgx[u] = dgr[u] = dz;
        dgx[U + u] = dgr[U + u] = dr;
        dgx[2 * U + u] = da;
        dgr[2 * U + u] = da * rg;
        dh_next[u] = d * zg;
    }
}

size_t sf_gru_forward_work(size_t B, size_t U) { return B * 3 * U + U; }

void sf_gru_forward(float *h, float *rh, float *gates, float *work, const float *x, const float *W, const float *Ur,
                    const float *b, const float *packed, size_t B, size_t T, size_t C, size_t U) {
    size_t G = 3 * U;
    packed_ur p = packed_parts(packed, U, G);
    float *rec = work, *zeros = rec + B * G;
    memset(zeros, 0, U * sizeof(float));
    rows_fill(gates, b, B * T, G);
    gemm(false, false, B * T, G, C, 1.0f, x, C, W, G, 1.0f, gates, G);
    for (size_t t = 0; t < T; t++) {
        rows_fill(rec, b + G, B, G);
        if (t > 0) step_product(rec, G, h + (t - 1) * U, T * U, B, G, U, true, p.forward, Ur, G, false);
        for (size_t bi = 0; bi < B; bi++) {
            size_t row = bi * T + t;
            gru_cell(h + row * U, rh + row * U, gates + row * G, rec + bi * G, t ? h + (row - 1) * U : zeros, U);
        }
    }
}

size_t sf_gru_backward_work(size_t B, size_t T, size_t U) { return 2 * B * T * 3 * U + B * T * U + B * U + U; }

void sf_gru_backward(float *dx, float *dW, float *dUr, float *db, const float *dh, const float *x, const float *W,
                     const float *Ur, const float *packed, const float *h, const float *rh, const float *gates,
                     float *work, size_t B, size_t T, size_t C, size_t U) {
    size_t G = 3 * U;
    packed_ur p = packed_parts(packed, U, G);
    float *dgx = work, *dgr = dgx + B * T * G, *hprev = dgr + B * T * G, *dh_next = hprev + B * T * U;
    float *zeros = dh_next + B * U;
    memset(dh_next, 0, (B * U + U) * sizeof(float));
    for (size_t t = T; t-- > 0;) {
        for (size_t bi = 0; bi < B; bi++) {
            size_t row = bi * T + t;
            gru_cell_backward(dgx + row * G, dgr + row * G, dh_next + bi * U, gates + row * G, rh + row * U,
                              t ? h + (row - 1) * U : zeros, dh + row * U, U);
        }
        // dh_{t-1} = z dh + dgr_t Ur^T
        if (t > 0 && p.UrT) step_product(dh_next, U, dgr + t * G, T * G, B, U, G, true, p.backward, p.UrT, U, false);
        else if (t > 0) step_product(dh_next, U, dgr + t * G, T * G, B, U, G, true, p.backward, Ur, G, true);
    }
    for (size_t bi = 0; bi < B; bi++) {
        memset(hprev + bi * T * U, 0, U * sizeof(float));
        memcpy(hprev + (bi * T + 1) * U, h + bi * T * U, (T - 1) * U * sizeof(float));
    }
    gemm(true, false, C, G, B * T, 1.0f, x, C, dgx, G, 0.0f, dW, G);
    gemm(true, false, U, G, B * T, 1.0f, hprev, U, dgr, G, 0.0f, dUr, G);
    memset(db, 0, 2 * G * sizeof(float));
    rows_add(db, dgx, B * T, G);
    rows_add(db + G, dgr, B * T, G);
    if (dx) gemm(false, true, B * T, C, G, 1.0f, dgx, G, W, G, 0.0f, dx, C);
}

// The series of a window's one-hot: its first 1 (0 when it has none).
static size_t one_of(const float *onehot, size_t S) {
    for (size_t s = 0; s < S; s++)
        if (onehot[s] == 1.0f) return s;
    return 0;
}

void sf_embed_forward(float *out, size_t ld, const float *onehot, size_t X, const float *E, size_t B, size_t S,
                      size_t D) {
    for (size_t b = 0; b < B; b++) memcpy(out + b * ld, E + one_of(onehot + b * X, S) * D, D * sizeof(float));
}

void sf_embed_backward(float *dE, const float *dout, size_t ld, const float *onehot, size_t X, size_t B, size_t S,
                       size_t D) {
    memset(dE, 0, S * D * sizeof(float));
    for (size_t b = 0; b < B; b++) {
        float *row = dE + one_of(onehot + b * X, S) * D;
        for (size_t d = 0; d < D; d++) row[d] += dout[b * ld + d];
    }
}

void sf_dense_forward(float *y, const float *x, const float *W, const float *b, size_t B, size_t C, size_t O) {
    rows_fill(y, b, B, O);
    gemm(false, false, B, O, C, 1.0f, x, C, W, O, 1.0f, y, O);
}

void sf_dense_backward(float *dx, float *dW, float *db, const float *dy, const float *x, const float *W, size_t B,
                       size_t C, size_t O) {
    gemm(true, false, C, O, B, 1.0f, x, C, dy, O, 0.0f, dW, O);
    memset(db, 0, O * sizeof(float));
    rows_add(db, dy, B, O);
    if (dx) gemm(false, true, B, C, O, 1.0f, dy, O, W, O, 0.0f, dx, C);
}

// ---- bf16 (the definition: docs/TRAINING.md) ----

SF_CLONES void sf_bf16_round(sf_bf16 *restrict out, const float *restrict x, size_t n) {
    for (size_t k = 0; k < n; k++) {
        uint32_t u;
        memcpy(&u, &x[k], sizeof u);
        uint32_t nearest = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
        // A NaN's payload could round into infinity: keep it a (quiet) NaN.
        out[k] = (sf_bf16)((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : nearest);
    }
}

// A recurrent layer's bf16 forward up to its time loop, the LSTM's and the
// GRU's alike: W and Ur rounded and packed (slots 0 and 1), x rounded into
// q->x time-major (T,B,C), and gates (T,B,G) = b + x W for every step.
static void bf16_project(float *gates, sf_bf16_layer *q, const float *x, const float *W, const float *Ur,
                         const float *b, size_t B, size_t T, size_t C, size_t U, size_t G) {
    sf_bf16_round(q->W, W, C * G);
    sf_bf16_round(q->Ur, Ur, U * G);
    sf_matmul_pack(q->mm, q->slot, q->W, C, G, false, B * T);
    sf_matmul_pack(q->mm, q->slot + 1, q->Ur, U, G, false, B);
    for (size_t bi = 0; bi < B; bi++)
        for (size_t t = 0; t < T; t++) sf_bf16_round(q->x + (t * B + bi) * C, x + (bi * T + t) * C, C);
    rows_fill(gates, b, B * T, G);
    sf_matmul_bf16_packed(q->mm, q->slot, gates, q->x, B * T, true);
}

void sf_lstm_forward_bf16(float *h, float *c, float *gates, const float *x, const float *W, const float *Ur,
                          const float *b, sf_bf16_layer *q, size_t B, size_t T, size_t C, size_t U) {
    size_t G = 4 * U;
    bf16_project(gates, q, x, W, Ur, b, B, T, C, U, G);
    for (size_t t = 0; t < T; t++) {
        float *z = gates + t * B * G;  // (B,4U), time t
        if (t > 0) sf_matmul_bf16_packed(q->mm, q->slot + 1, z, q->h + (t - 1) * B * U, B, true);
        for (size_t bi = 0; bi < B; bi++) {
            size_t row = bi * T + t;
            if (t == 0) memset(c + row * U, 0, U * sizeof(float));
            lstm_cell(h + row * U, c + row * U, z + bi * G, NULL, c + (t ? row - 1 : row) * U, U);
            sf_bf16_round(q->h + (t * B + bi) * U, h + row * U, U);
        }
    }
}

size_t sf_lstm_backward_bf16_work(size_t B, size_t T, size_t C, size_t U) {
    return 2 * B * U + U + B * T * C;
}

void sf_lstm_backward_bf16(float *dx, float *dW, float *dUr, float *db, const float *dh, const float *c,
                           float *gates, sf_bf16_layer *q, float *work, size_t B, size_t T, size_t C, size_t U) {
    size_t G = 4 * U;
    float *dh_next = work, *dc_next = dh_next + B * U, *zeros = dc_next + B * U;
    float *dx_tm = zeros + U;  // dx time-major, (T,B,C)
    memset(dh_next, 0, (2 * B * U + U) * sizeof(float));
    memset(db, 0, G * sizeof(float));
    // Ur^T and W^T, (4U,U) and (4U,C), for dh_{t-1} and dx.
    sf_matmul_pack(q->mm, q->slot + 3, q->Ur, G, U, true, B);
    if (dx) sf_matmul_pack(q->mm, q->slot + 2, q->W, G, C, true, B * T);
    for (size_t t = T; t-- > 0;) {
        float *dz = gates + t * B * G;  // (B,4U), time t
        for (size_t bi = 0; bi < B; bi++) {
            size_t row = bi * T + t;
            lstm_cell_backward(dz + bi * G, dc_next + bi * U, c + row * U, t ? c + (row - 1) * U : zeros,
                               dh + row * U, dh_next + bi * U, db, U);
        }
        sf_bf16_round(q->d + t * B * G, dz, B * G);
        // dh_{t-1} = dz_t Ur^T
        if (t > 0) sf_matmul_bf16_packed(q->mm, q->slot + 3, dh_next, q->d + t * B * G, B, false);
    }
    sf_matmul_bf16(q->mm, dW, q->x, q->d, C, G, B * T, true, false, false);
    // dUr = sum over t >= 1 of h_{t-1}^T dz_t: times 0 .. T-2 of h against 1 .. T-1 of dz.
    if (T > 1) sf_matmul_bf16(q->mm, dUr, q->h, q->d + B * G, U, G, (T - 1) * B, true, false, false);
    else memset(dUr, 0, U * G * sizeof(float));
    if (!dx) return;
    sf_matmul_bf16_packed(q->mm, q->slot + 2, dx_tm, q->d, B * T, false);
    for (size_t bi = 0; bi < B; bi++)
        for (size_t t = 0; t < T; t++) memcpy(dx + (bi * T + t) * C, dx_tm + (t * B + bi) * C, C * sizeof(float));
}

// The GRU in bf16 as the LSTM: gates (T,B,3U) time-major; q->d holds the
// rounded dgx, then the rounded dgr, each (T,B,3U).
void sf_gru_forward_bf16(float *h, float *rh, float *gates, float *work, const float *x, const float *W,
                         const float *Ur, const float *b, sf_bf16_layer *q, size_t B, size_t T, size_t C, size_t U) {
    size_t G = 3 * U;
    float *rec = work, *zeros = rec + B * G;
    memset(zeros, 0, U * sizeof(float));
    bf16_project(gates, q, x, W, Ur, b, B, T, C, U, G);
    for (size_t t = 0; t < T; t++) {
        float *z = gates + t * B * G;  // (B,3U), time t
        rows_fill(rec, b + G, B, G);
        if (t > 0) sf_matmul_bf16_packed(q->mm, q->slot + 1, rec, q->h + (t - 1) * B * U, B, true);
        for (size_t bi = 0; bi < B; bi++) {
            size_t row = bi * T + t;
            gru_cell(h + row * U, rh + row * U, z + bi * G, rec + bi * G, t ? h + (row - 1) * U : zeros, U);
            sf_bf16_round(q->h + (t * B + bi) * U, h + row * U, U);
        }
    }
}

size_t sf_gru_backward_bf16_work(size_t B, size_t T, size_t C, size_t U) {
    return 2 * B * 3 * U + B * U + U + B * T * C;
}

void sf_gru_backward_bf16(float *dx, float *dW, float *dUr, float *db, const float *dh, const float *h,
                          const float *rh, const float *gates, sf_bf16_layer *q, float *work, size_t B, size_t T,
                          size_t C, size_t U) {
    size_t G = 3 * U;
    float *dgx = work, *dgr = dgx + B * G, *dh_next = dgr + B * G, *zeros = dh_next + B * U;
    float *dx_tm = zeros + U;  // dx time-major, (T,B,C)
    sf_bf16 *dqx = q->d, *dqr = q->d + T * B * G;
    memset(dh_next, 0, (B * U + U) * sizeof(float));
    memset(db, 0, 2 * G * sizeof(float));
    sf_matmul_pack(q->mm, q->slot + 3, q->Ur, G, U, true, B);
    if (dx) sf_matmul_pack(q->mm, q->slot + 2, q->W, G, C, true, B * T);
    for (size_t t = T; t-- > 0;) {
        for (size_t bi = 0; bi < B; bi++) {
            size_t row = bi * T + t;
            gru_cell_backward(dgx + bi * G, dgr + bi * G, dh_next + bi * U, gates + (t * B + bi) * G, rh + row * U,
                              t ? h + (row - 1) * U : zeros, dh + row * U, U);
        }
        rows_add(db, dgx, B, G);
        rows_add(db + G, dgr, B, G);
        sf_bf16_round(dqx + t * B * G, dgx, B * G);
        sf_bf16_round(dqr + t * B * G, dgr, B * G);
        // dh_{t-1} = z dh + dgr_t Ur^T
        if (t > 0) sf_matmul_bf16_packed(q->mm, q->slot + 3, dh_next, dqr + t * B * G, B, true);
    }
    sf_matmul_bf16(q->mm, dW, q->x, dqx, C, G, B * T, true, false, false);
    if (T > 1) sf_matmul_bf16(q->mm, dUr, q->h, dqr + B * G, U, G, (T - 1) * B, true, false, false);
    else memset(dUr, 0, U * G * sizeof(float));
    if (!dx) return;
    sf_matmul_bf16_packed(q->mm, q->slot + 2, dx_tm, dqx, B * T, false);
    for (size_t bi = 0; bi < B; bi++)
        for (size_t t = 0; t < T; t++) memcpy(dx + (bi * T + t) * C, dx_tm + (t * B + bi) * C, C * sizeof(float));
}

void sf_dense_forward_bf16(float *y, const float *x, const float *W, const float *b, sf_bf16_layer *q, size_t B,
                           size_t C, size_t O) {
    sf_bf16_round(q->x, x, B * C);
    sf_bf16_round(q->W, W, C * O);
    rows_fill(y, b, B, O);
    sf_matmul_bf16(q->mm, y, q->x, q->W, B, O, C, false, false, true);
}

void sf_dense_backward_bf16(float *dx, float *dW, float *db, const float *dy, sf_bf16_layer *q, size_t B, size_t C,
                            size_t O) {
    sf_bf16_round(q->d, dy, B * O);
    sf_matmul_bf16(q->mm, dW, q->x, q->d, C, O, B, true, false, false);
    memset(db, 0, O * sizeof(float));
    rows_add(db, dy, B, O);
    if (dx) sf_matmul_bf16(q->mm, dx, q->d, q->W, B, C, O, false, true, false);
}

// Element k's draw depends on (seed, k) only: the same mask on every backend
// and after a resume, with no generator state to carry. The draw is
// sf_splitmix64 written out so that the loop vectorizes (8.5 ns an element
// as a call, a tenth of a bf16 step at batch 32).
SF_CLONES void sf_dropout_forward(float *restrict y, float *restrict mask, const float *restrict x, size_t n,
                                  float rate, uint64_t seed, uint64_t first) {
    float scale = 1.0f / (1.0f - rate);
    for (size_t k = 0; k < n; k++) {
        uint64_t z = seed + (first + k + 1) * 0x9e3779b97f4a7c15ull;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        float u = (float)(int32_t)(z >> 40) * 0x1p-24f;  // 24 bits: exact in float32
        mask[k] = u >= rate ? scale : 0.0f;
        y[k] = x[k] * mask[k];
    }
}

SF_CLONES void sf_dropout_backward(float *restrict dx, const float *restrict dy, const float *restrict mask, size_t n) {
    for (size_t k = 0; k < n; k++) dx[k] = dy[k] * mask[k];
}

double sf_loss_error(const sf_loss *l, uint32_t j, double d) {
    double a = fabs(d);
    switch (l->kind) {
    case SF_LOSS_MAE: return a;
    case SF_LOSS_HUBER: return a <= l->delta ? 0.5 * d * d : l->delta * a - 0.5 * l->delta * l->delta;
    case SF_LOSS_QUANTILE: return d <= 0 ? l->q[j] * -d : (l->q[j] - 1) * -d;
    default: return d * d;
    }
}

double sf_loss_value(const sf_loss *l, const float *y, float target) {
    uint32_t W = sf_loss_width(l);
    double v = 0;
    for (uint32_t j = 0; j < W; j++) v += sf_loss_error(l, j, (double)y[j] - target);
    return W > 1 ? v / (double)W : v;
}

// Row by row in double, each row's values in order and then their mean: the
// order the CUDA twin keeps.
double sf_loss_sum(const sf_loss *l, const float *y, const float *target, size_t B, size_t O) {
    size_t W = sf_loss_width(l);
    double sum = 0;
    for (size_t r = 0; r < B; r++) {
        double row = 0;
        for (size_t k = 0; k < O; k++) row += sf_loss_value(l, y + (r * O + k) * W, target[r * O + k]);
        sum += row / (double)O;
    }
    return sum;
}

void sf_loss_backward(const sf_loss *l, float *dy, const float *y, const float *target, size_t B, size_t O,
                      float inv_batch) {
    size_t W = sf_loss_width(l);
    float scale = (l->kind == SF_LOSS_MSE ? 2.0f : 1.0f) * inv_batch / (float)(O * W), delta = (float)l->delta;
    for (size_t k = 0; k < B * O; k++)
        for (size_t j = 0; j < W; j++) {
            float p = y[k * W + j], t = target[k], d = p - t, g;
            switch (l->kind) {
            case SF_LOSS_MAE: g = p > t ? 1.0f : p < t ? -1.0f : 0.0f; break;
            case SF_LOSS_HUBER: g = fabsf(d) <= delta ? d : d > 0 ? delta : -delta; break;
            case SF_LOSS_QUANTILE: {
                float q = (float)l->q[j];
                g = p < t ? -q : p > t ? 1.0f - q : 0.5f - q;
                break;
            }
            default: g = d;
            }
            dy[k * W + j] = scale * g;
        }
}

void sf_cpu_threads(int n) {
    if (n <= 0) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    openblas_set_num_threads(n > 0 ? n : 1);
}

const char *sf_cpu_blas_core(void) {
    // The cores OpenBLAS falls back to: Intel's and AMD's of the SSE era.
    static const char *const generic[] = {"Katmai", "Coppermine", "Northwood", "Prescott", "Banias", "Atom", "Core2",
                                          "Penryn", "Dunnington", "Nehalem", "Athlon", "Opteron", "Opteron_SSE3",
                                          "Barcelona"};
    const char *core = openblas_get_corename();
    bool fallback = false;
    for (size_t i = 0; core && i < sizeof generic / sizeof *generic; i++) fallback |= !strcasecmp(core, generic[i]);
    if (!fallback) return NULL;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
    return NULL;
}

void sf_cpu_describe(char *what, size_t n) {
    // The clone target_clones picks: x86-64-v3 is AVX2 and FMA with features
    // no CPU that has those two lacks.
    const char *loops = __builtin_cpu_supports("avx512f") ? "AVX-512"
                        : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? "AVX2"
                                                                                          : "baseline";
    snprintf(what, n, "%s sgemm%s, the recurrent layers' time steps %s, element-wise loops in %s",
             openblas_get_config(), sf_matmul_loaded() ? ", oneDNN sgemm for all but tiny products" : "",
             sf_panels_on() ? "on their kernels packed (AVX2, FMA)" : "on sgemm", loops);
}

typedef struct {
    size_t n;
    float *a, *b, *c;
} blas_square;

static void blas_square_run(void *arg) {
    blas_square *q = arg;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)q->n, (int)q->n, (int)q->n, 1.0f, q->a, (int)q->n,
                q->b, (int)q->n, 0.0f, q->c, (int)q->n);
}

static const char *const OPENBLAS = "OpenBLAS sgemm", *const ONEDNN = "oneDNN matmul";

// FLOP/s of OpenBLAS' float32 square product of side n (sf_steady_best).
static double blas_square_rate(size_t n, double seconds, bool *steady) {
    blas_square q = {.n = n, .a = malloc(n * n * sizeof(float)), .b = malloc(n * n * sizeof(float)),
                     .c = malloc(n * n * sizeof(float))};
    double rate = 0;
    *steady = false;
    if (q.a && q.b && q.c) {
        for (size_t i = 0; i < n * n; i++) q.a[i] = q.b[i] = 0.1f + (float)(i % 7) * 0.01f;
        rate = sf_steady_best(blas_square_run, &q, 2.0 * (double)n * n * n, seconds, steady);
    }
    free(q.a), free(q.b), free(q.c);
    return rate;
}

sf_gemm_ceiling sf_gemm_ceiling_measure(bool bf16, int threads, double seconds) {
    static const size_t sides[] = {1024, 1536, 2048};
    sf_gemm_ceiling best = {.library = "none"};
    sf_cpu_threads(threads);
    for (size_t k = 0; k < sizeof sides / sizeof *sides; k++) {
        size_t n = sides[k];
        bool steady = false;
        double rate;
        if (!bf16 && (rate = blas_square_rate(n, seconds, &steady)) > best.rate)
            best = (sf_gemm_ceiling){rate, OPENBLAS, n, steady};
        rate = sf_matmul_rate(n, bf16, threads, seconds, &steady);
        if (rate > best.rate) best = (sf_gemm_ceiling){rate, ONEDNN, n, steady};
    }
    return best;
}

sf_gemm_ceiling sf_gemm_ceiling_again(const sf_gemm_ceiling *best, bool bf16, int threads, double seconds) {
    sf_gemm_ceiling now = *best;
    sf_cpu_threads(threads);
    if (best->library == OPENBLAS) now.rate = blas_square_rate(best->n, seconds, &now.steady);
    else if (best->library == ONEDNN) now.rate = sf_matmul_rate(best->n, bf16, threads, seconds, &now.steady);
    return now;
}

// Keras' update, operation for operation (keras/src/optimizers/adam.py):
// m += (g - m)(1 - b1), v += (g^2 - v)(1 - b2),
// w -= lr sqrt(1 - b2^t) / (1 - b1^t) m / (sqrt(v) + eps).
float sf_adam_alpha(const sf_adam *a, uint64_t step) {
    return (float)(a->lr * sqrt(1.0 - pow(a->beta2, (double)step)) / (1.0 - pow(a->beta1, (double)step)));
}

bool sf_update_finite(const float *g, size_t n, double loss) {
    bool finite = isfinite(loss);
    for (size_t k = 0; k < n; k++) finite &= isfinite(g[k]) != 0;
    return finite;
}

SF_CLONES void sf_adam_update(float *restrict w, float *restrict m, float *restrict v, const float *restrict g, size_t n,
                              const sf_adam *a, uint64_t step) {
    float alpha = sf_adam_alpha(a, step);
    float c1 = 1.0f - a->beta1, c2 = 1.0f - a->beta2;
    for (size_t k = 0; k < n; k++) {
        m[k] += (g[k] - m[k]) * c1;
        v[k] += (g[k] * g[k] - v[k]) * c2;
        w[k] -= m[k] * alpha / (sqrtf(v[k]) + a->epsilon);
    }
}
