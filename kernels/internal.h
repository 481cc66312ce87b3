// What the kernels' files share and nothing else includes: the table of
// the oneDNN module (cpu_matmul.c, seqfeed-onednn.so) that cpu_matmul_loader.c
// loads, one function per sf_matmul_* of kernels.h, with the same contracts,
// the float32 products cpu_kernels.c hands to oneDNN, and the time steps'
// products on packed weights (cpu_panels.c).
#ifndef SF_KERNELS_INTERNAL_H
#define SF_KERNELS_INTERNAL_H

#include "kernels.h"

typedef struct {
    bool (*available)(char *what, size_t n);
    sf_bf16_kind (*kind)(void);
    int (*open)(sf_matmul **out, sf_err *e);
    void (*close)(sf_matmul *mm);
    void (*bf16)(sf_matmul *mm, float *C, const sf_bf16 *A, const sf_bf16 *B, size_t M, size_t N, size_t K, bool ta,
                 bool tb, bool accumulate);
    void (*pack)(sf_matmul *mm, int slot, const sf_bf16 *B, size_t K, size_t N, bool tb, size_t rows);
    void (*bf16_packed)(sf_matmul *mm, int slot, float *C, const sf_bf16 *A, size_t M, bool accumulate);
    int (*status)(const sf_matmul *mm, sf_err *e);
    double (*rate)(size_t n, bool bf16, int threads, double seconds, bool *steady);
    // cblas_sgemm's row-major product on oneDNN's sgemm, one thread: 0, or
    // oneDNN's status.
    int (*sgemm)(bool ta, bool tb, size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda,
                 const float *B, size_t ldb, float beta, float *C, size_t ldc);
} sf_matmul_table;

// The module's entry point, which the loader looks up by this name.
typedef const sf_matmul_table *(*sf_matmul_module_fn)(void);

// True when the module is loaded (it is, after this call, if it can be).
bool sf_matmul_loaded(void);
// C = alpha op(A) op(B) + beta C as cblas_sgemm (row-major), on oneDNN's
// sgemm: true when done, false when the module is not there (then the
// caller uses BLAS).
bool sf_matmul_sgemm(bool ta, bool tb, size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda,
                     const float *B, size_t ldb, float beta, float *C, size_t ldc);

// The time steps' products on weights packed in panels (cpu_panels.c).
// True where they run: a CPU with AVX2 and FMA but no AVX-512; for the
// tests, SEQFEED_TEST_STEPS=sgemm turns them off and =panels on wherever
// AVX2 and FMA are (an AVX-512 CPU too). Elsewhere the steps go to sgemm.
bool sf_panels_on(void);
// Floats of B (K,N) packed.
size_t sf_panels_floats(size_t K, size_t N);
// Into P (B packed; what lies past N is never read into C): B's row k
// from column n, count values of from; or its columns n .. n + cols - 1
// from row k, count values each, column n + c's at from + c ld.
void sf_panels_put_row(float *P, size_t K, size_t N, size_t k, size_t n, const float *from, size_t count);
void sf_panels_put_columns(float *P, size_t K, size_t N, size_t n, size_t cols, size_t k, size_t count,
                           const float *from, size_t ld);
// C (M,N) = A (M,K) P, or += when accumulate; P: B packed. Rows are lda
// and ldc apart. Only where sf_panels_on.
void sf_panels_product(float *C, size_t ldc, const float *A, size_t lda, const float *P, size_t M, size_t N,
                       size_t K, bool accumulate);

#endif
