// The CPU trainer's GEMMs on their candidate libraries, side by side in one
// run (issue 17's evaluation): OpenBLAS sgemm (today's path), oneDNN's
// matmul in f32, and oneDNN's matmul with bf16 operands and f32
// accumulation and output, on the default model's shapes: the input
// projection (B x T, in) x (in, 4U) and one recurrent step (B, U) x (U, 4U),
// U = 180, T = 60, at batch 32 and 256. Each shape runs for about --seconds,
// interleaved over 3 rounds; the best round's GFLOP/s is printed, as a table
// and as JSON. oneDNN's primitive is created once per shape (the weights'
// conversion to bf16 is outside the timing, as a trainer would do it once
// per step). usage: gemm_bench [--threads N] [--seconds S] (OpenBLAS's
// threads; oneDNN's: OMP_NUM_THREADS)
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"  // sf_now

void openblas_set_num_threads(int);

#define CHECK_DNNL(call)                                                                  \
    do {                                                                                  \
        dnnl_status_t s_ = (call);                                                        \
        if (s_ != dnnl_success) {                                                         \
            fprintf(stderr, "gemm_bench: %s failed (%d) at %s:%d\n", #call, (int)s_, __FILE__, __LINE__); \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

static uint16_t to_bf16(float f) {  // round to nearest even
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

typedef struct {
    char name[40];
    int64_t M, N, K;
} gemm_shape;

typedef struct {
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c;
} onednn_mm;

// C (M, N) f32 = A (M, K) x B (K, N), row-major, operands of type dt.
// Returns false where oneDNN has no such matmul for this CPU (bf16
// without AVX-512).
static bool onednn_open(onednn_mm *mm, dnnl_engine_t eng, int64_t M, int64_t N, int64_t K, dnnl_data_type_t dt,
                        void *a, void *b, float *c) {
    dnnl_memory_desc_t amd, bmd, cmd;
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&amd, 2, (dnnl_dims_t){M, K}, dt, dnnl_ab));
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&bmd, 2, (dnnl_dims_t){K, N}, dt, dnnl_ab));
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&cmd, 2, (dnnl_dims_t){M, N}, dnnl_f32, dnnl_ab));
    dnnl_matmul_desc_t desc;
    CHECK_DNNL(dnnl_matmul_desc_init(&desc, &amd, &bmd, NULL, &cmd));
    dnnl_primitive_desc_t pd;
    dnnl_status_t made = dnnl_primitive_desc_create(&pd, &desc, NULL, eng, NULL);
    if (made == dnnl_unimplemented) return false;
    CHECK_DNNL(made);
    CHECK_DNNL(dnnl_primitive_create(&mm->prim, pd));
    CHECK_DNNL(dnnl_primitive_desc_destroy(pd));
    CHECK_DNNL(dnnl_memory_create(&mm->a, &amd, eng, a));
    CHECK_DNNL(dnnl_memory_create(&mm->b, &bmd, eng, b));
    CHECK_DNNL(dnnl_memory_create(&mm->c, &cmd, eng, c));
    return true;
}

static void onednn_run(onednn_mm *mm, dnnl_stream_t st) {
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, mm->a}, {DNNL_ARG_WEIGHTS, mm->b}, {DNNL_ARG_DST, mm->c}};
    CHECK_DNNL(dnnl_primitive_execute(mm->prim, st, 3, args));
    CHECK_DNNL(dnnl_stream_wait(st));
}

static void onednn_close(onednn_mm *mm) {
    dnnl_primitive_destroy(mm->prim);
    dnnl_memory_destroy(mm->a), dnnl_memory_destroy(mm->b), dnnl_memory_destroy(mm->c);
}

int main(int argc, char **argv) {
    int threads = 2;
    double seconds = 0.5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
        else {
            fprintf(stderr, "usage: gemm_bench [--threads N] [--seconds S]\n");
            return 2;
        }
    }
    openblas_set_num_threads(threads);  // oneDNN's OpenMP threads: OMP_NUM_THREADS (default: every core)
    dnnl_engine_t eng;
    dnnl_stream_t st;
    CHECK_DNNL(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CHECK_DNNL(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
    const uint32_t U = 180, T = 60, batches[2] = {32, 256};
    gemm_shape shapes[4];
    int ns = 0;
    for (int b = 0; b < 2; b++) {
        gemm_shape *p = &shapes[ns++], *r = &shapes[ns++];
        *p = (gemm_shape){.M = (int64_t)batches[b] * T, .N = 4 * U, .K = U};  // x (B T, in = U) x kernel (U, 4U)
        *r = (gemm_shape){.M = batches[b], .N = 4 * U, .K = U};               // h (B, U) x recurrent kernel (U, 4U)
        snprintf(p->name, sizeof p->name, "input projection, batch %u", batches[b]);
        snprintf(r->name, sizeof r->name, "recurrent step, batch %u", batches[b]);
    }
    double best[4][3] = {{0}};
    bool has_bf16 = false;  // oneDNN's bf16 matmul on this CPU
    for (int round = 0; round < 3; round++)
        for (int s = 0; s < ns; s++) {
            int64_t M = shapes[s].M, N = shapes[s].N, K = shapes[s].K;
            float *a = malloc((size_t)(M * K) * 4), *b = malloc((size_t)(K * N) * 4), *c = malloc((size_t)(M * N) * 4);
            uint16_t *a16 = malloc((size_t)(M * K) * 2), *b16 = malloc((size_t)(K * N) * 2);
            for (int64_t i = 0; i < M * K; i++) a[i] = (float)((i * 7919) % 1000) / 1000 - 0.5f, a16[i] = to_bf16(a[i]);
            for (int64_t i = 0; i < K * N; i++) b[i] = (float)((i * 104729) % 1000) / 1000 - 0.5f, b16[i] = to_bf16(b[i]);
            double flops = 2.0 * (double)M * (double)N * (double)K;
            onednn_mm f32, bf16;
            if (!onednn_open(&f32, eng, M, N, K, dnnl_f32, a, b, c)) {
                fprintf(stderr, "gemm_bench: oneDNN has no f32 matmul on this CPU\n");
                return 1;
            }
            has_bf16 = onednn_open(&bf16, eng, M, N, K, dnnl_bf16, a16, b16, c);
            for (int lib = 0; lib < 2 + has_bf16; lib++) {
                uint64_t reps = 0;
                double t0 = sf_now(), t;
                do {
                    if (lib == 0)
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1, a, (int)K,
                                    b, (int)N, 0, c, (int)N);
                    else onednn_run(lib == 1 ? &f32 : &bf16, st);
                    reps++;
                } while ((t = sf_now() - t0) < seconds);
                double g = flops * (double)reps / t / 1e9;
                if (g > best[s][lib]) best[s][lib] = g;
            }
            onednn_close(&f32);
            if (has_bf16) onednn_close(&bf16);
            free(a), free(b), free(c), free(a16), free(b16);
        }
    printf("%-32s %12s %12s %12s %9s\n", "GEMM (GFLOP/s, best of 3)", "OpenBLAS f32", "oneDNN f32", "oneDNN bf16",
           "bf16/f32");
    for (int s = 0; s < ns; s++) {
        double f32 = best[s][0] > best[s][1] ? best[s][0] : best[s][1];
        if (has_bf16) printf("%-32s %12.1f %12.1f %12.1f %8.2fx\n", shapes[s].name, best[s][0], best[s][1], best[s][2],
                             best[s][2] / f32);
        else printf("%-32s %12.1f %12.1f %12s %9s\n", shapes[s].name, best[s][0], best[s][1], "none", "-");
    }
    if (!has_bf16) printf("oneDNN has no bf16 matmul on this CPU (it needs AVX-512)\n");
    printf("{\"threads\": %d, \"shapes\": [", threads);
    for (int s = 0; s < ns; s++) {
        char bf16[32] = "null";
        if (has_bf16) snprintf(bf16, sizeof bf16, "%.2f", best[s][2]);
        printf("%s{\"name\": \"%s\", \"M\": %lld, \"N\": %lld, \"K\": %lld, \"openblas_f32\": %.2f, \"onednn_f32\": %.2f, "
               "\"onednn_bf16\": %s}", s ? ", " : "", shapes[s].name, (long long)shapes[s].M, (long long)shapes[s].N,
               (long long)shapes[s].K, best[s][0], best[s][1], bf16);
    }
    printf("]}\n");
    dnnl_stream_destroy(st);
    dnnl_engine_destroy(eng);
    return 0;
}
