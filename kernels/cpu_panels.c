// The recurrent layers' time-step products on weights packed once per
// update: C (M,N) = A (M,K) B, with B packed in panels of 24 columns, each
// K rows of its width (24, or the last panel's columns rounded up to 8,
// zeros past N), and computed 4 rows by a panel at a time in AVX2 and FMA
// registers (12 sums of 8 floats).
// Why not oneDNN's sgemm, as the other products: a time step's product has
// a part's few rows (8 at batch 32) against a kernel of 0.5 MB, which
// sgemm takes as given at every step. Measured in a training step at batch
// 32 (parts of 8 rows, 2 cores, 2026-12-05): oneDNN's sgemm ran the
// forward step's (8,180)x(180,720) at 78 GFLOP/s a core and backward's
// (8,720)x(720,180) at 67, against 90 for its square ceiling; packed once,
// the forward one ran at 92-94 alone (oneDNN's sgemm 82-84; both in
// BENCHMARKS-HISTORY.md, 2026-12-05).
// Each element of C is its row of A times its column of B summed in k
// order, one FMA at a time, whatever M, N and the row's place: a row's
// result does not depend on the rows beside it.
// On CPUs with AVX-512 oneDNN's sgemm runs twice as wide as these
// registers: the steps stay on it there (sf_panels_on), but for the tests.
#include <immintrin.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum { NR = 24, MR = 4 };

static bool panels_enabled;
static pthread_once_t panels_once = PTHREAD_ONCE_INIT;

static void panels_decide(void) {
    const char *test = getenv("SEQFEED_TEST_STEPS");
    __builtin_cpu_init();
    bool can = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (test && !strcmp(test, "sgemm")) panels_enabled = false;
    else if (test && !strcmp(test, "panels")) panels_enabled = can;
    else panels_enabled = can && !__builtin_cpu_supports("avx512f");
}

bool sf_panels_on(void) {
    pthread_once(&panels_once, panels_decide);
    return panels_enabled;
}

static size_t round8(size_t n) { return (n + 7) / 8 * 8; }

size_t sf_panels_floats(size_t K, size_t N) { return K * round8(N); }

// Where B's element (k, n) lies packed, and the width of its panel.
static size_t at(size_t K, size_t N, size_t k, size_t n, size_t *width) {
    size_t p = n / NR * NR;
    *width = N - p < NR ? round8(N - p) : NR;
    return p * K + k * *width + (n - p);
}

void sf_panels_put_row(float *P, size_t K, size_t N, size_t k, size_t n, const float *from, size_t count) {
    size_t width;
    while (count) {  // to each panel's end at most: a row's run within a panel lies side by side
        size_t m = NR - n % NR < count ? NR - n % NR : count;
        memcpy(P + at(K, N, k, n, &width), from, m * sizeof(float));
        n += m, from += m, count -= m;
    }
}

// A panel's columns at a time, 16 rows of them a step: 16 floats of each
// of up to 24 rows of from, into 16 rows of the panel side by side.
void sf_panels_put_columns(float *P, size_t K, size_t N, size_t n, size_t cols, size_t k, size_t count,
                           const float *from, size_t ld) {
    for (size_t c0 = 0; c0 < cols;) {
        size_t width, m = NR - (n + c0) % NR < cols - c0 ? NR - (n + c0) % NR : cols - c0;
        float *to = P + at(K, N, k, n + c0, &width);
        for (size_t j0 = 0; j0 < count; j0 += 16)
            for (size_t c = 0; c < m; c++)
                for (size_t j = j0; j < j0 + 16 && j < count; j++) to[j * width + c] = from[(c0 + c) * ld + j];
        c0 += m;
    }
}

// The lanes of a vector at columns [0, cols) of it, for its masked loads
// and stores.
__attribute__((target("avx2,fma"))) static inline __m256i lanes(size_t cols) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)cols), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Adds row i's sums of the panel to C's row, or stores them: its first
// cols columns.
__attribute__((target("avx2,fma"), always_inline)) static inline void row_out(float *c, const __m256 *sum, int nv,
                                                                             size_t cols, bool accumulate) {
    for (int j = 0; j < nv; j++, c += 8) {
        size_t n = cols - 8 * (size_t)j;
        if (n >= 8) {
            _mm256_storeu_ps(c, accumulate ? _mm256_add_ps(sum[j], _mm256_loadu_ps(c)) : sum[j]);
        } else {
            __m256i m = lanes(n);
            _mm256_maskstore_ps(c, m, accumulate ? _mm256_add_ps(sum[j], _mm256_maskload_ps(c, m)) : sum[j]);
        }
    }
}

// rows (at most MR) of C by one panel of nv vectors (its width 8 nv), of
// which cols are C's. Inlined with constant rows and nv into each of the
// tile_* functions below. The sums are named, not an array, which GCC kept
// in memory, storing each at every k.
__attribute__((target("avx2,fma"), always_inline)) static inline void tile(int rows, int nv, float *C, size_t ldc,
                                                                          const float *A, size_t lda,
                                                                          const float *P, size_t K, size_t cols,
                                                                          bool accumulate) {
    __m256 z = _mm256_setzero_ps(), s00 = z, s01 = z, s02 = z, s10 = z, s11 = z, s12 = z, s20 = z, s21 = z, s22 = z,
           s30 = z, s31 = z, s32 = z;
    const float *a0 = A, *a1 = A + lda, *a2 = A + 2 * lda, *a3 = A + 3 * lda;
    size_t width = 8 * (size_t)nv;
    for (size_t k = 0; k < K; k++, P += width) {
        __m256 b0 = _mm256_loadu_ps(P), b1 = nv > 1 ? _mm256_loadu_ps(P + 8) : z,
               b2 = nv > 2 ? _mm256_loadu_ps(P + 16) : z, a;
#define ROW(i)                                                \
    if (rows > i) {                                           \
        a = _mm256_broadcast_ss(a##i + k);                    \
        s##i##0 = _mm256_fmadd_ps(a, b0, s##i##0);            \
        if (nv > 1) s##i##1 = _mm256_fmadd_ps(a, b1, s##i##1); \
        if (nv > 2) s##i##2 = _mm256_fmadd_ps(a, b2, s##i##2); \
    }
        ROW(0) ROW(1) ROW(2) ROW(3)
#undef ROW
    }
    const __m256 sums[MR][3] = {{s00, s01, s02}, {s10, s11, s12}, {s20, s21, s22}, {s30, s31, s32}};
    for (int i = 0; i < rows; i++) row_out(C + i * ldc, sums[i], nv, cols, accumulate);
}

typedef void tile_fn(float *C, size_t ldc, const float *A, size_t lda, const float *P, size_t K, size_t cols,
                     bool accumulate);

#define TILE(rows, nv)                                                                                      \
    __attribute__((target("avx2,fma"))) static void tile_##rows##x##nv(                                     \
        float *C, size_t ldc, const float *A, size_t lda, const float *P, size_t K, size_t cols, bool acc) { \
        tile(rows, nv, C, ldc, A, lda, P, K, cols, acc);                                                   \
    }
TILE(1, 1) TILE(1, 2) TILE(1, 3) TILE(2, 1) TILE(2, 2) TILE(2, 3)
TILE(3, 1) TILE(3, 2) TILE(3, 3) TILE(4, 1) TILE(4, 2) TILE(4, 3)

static tile_fn *const tiles[MR][3] = {{tile_1x1, tile_1x2, tile_1x3},
                                      {tile_2x1, tile_2x2, tile_2x3},
                                      {tile_3x1, tile_3x2, tile_3x3},
                                      {tile_4x1, tile_4x2, tile_4x3}};

// A panel at a time, all of A's rows against it: the panel stays in L1
// (K x 24 floats: 17 KB forward at K = 180) or L2 (69 KB backward, K = 720)
// while the rows go by.
void sf_panels_product(float *C, size_t ldc, const float *A, size_t lda, const float *P, size_t M, size_t N,
                       size_t K, bool accumulate) {
    for (size_t p = 0; p < N; p += NR) {
        size_t cols = N - p < NR ? N - p : NR, nv = round8(cols) / 8;
        for (size_t i = 0; i < M; i += MR) {
            size_t rows = M - i < MR ? M - i : MR;
            tiles[rows - 1][nv - 1](C + i * ldc + p, ldc, A + i * lda, lda, P + p * K, K, cols, accumulate);
        }
    }
}
