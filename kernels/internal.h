// What the kernels' files share and nothing else includes: the table of
// the bf16 module (cpu_matmul.c, seqfeed-bf16.so) that cpu_matmul_loader.c
// loads, one function per sf_matmul_* of kernels.h, with the same contracts.
#ifndef SF_KERNELS_INTERNAL_H
#define SF_KERNELS_INTERNAL_H

#include "kernels.h"

typedef struct {
    bool (*available)(char *what, size_t n);
    bool (*emulated)(void);
    int (*open)(sf_matmul **out, sf_err *e);
    void (*close)(sf_matmul *mm);
    void (*bf16)(sf_matmul *mm, float *C, const sf_bf16 *A, const sf_bf16 *B, size_t M, size_t N, size_t K, bool ta,
                 bool tb, bool accumulate);
    void (*pack)(sf_matmul *mm, int slot, const sf_bf16 *B, size_t K, size_t N, bool tb, size_t rows);
    void (*bf16_packed)(sf_matmul *mm, int slot, float *C, const sf_bf16 *A, size_t M, bool accumulate);
    int (*status)(const sf_matmul *mm, sf_err *e);
    double (*rate)(size_t n, int reps);
} sf_matmul_table;

// The module's entry point, which the loader looks up by this name.
typedef const sf_matmul_table *(*sf_matmul_module_fn)(void);

#endif
