// One LSTM layer's training pass on seqfeed's kernels and on oneDNN's LSTM
// primitive, float32 and bf16, one thread (a replica's part runs on one):
// forward keeping what backward needs, then backward with the input's
// gradient, each with its weights converted to the layout it wants from
// the float32 master copy, as a training step must. The evaluation of
// issue 17; prints JSON, one object per batch size, milliseconds per pass.
// usage: lstm_bench [--batch 16,128] [--window 60] [--inputs 180] [--units 180] [--reps 10]
// (seqfeed's bf16 needs the module: SEQFEED_ONEDNN_MODULE or next to this program)
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

#define CHECK_DNNL(call)                                                                  \
    do {                                                                                  \
        dnnl_status_t s_ = (call);                                                        \
        if (s_ != dnnl_success) {                                                         \
            fprintf(stderr, "lstm_bench: %s: oneDNN status %d\n", #call, (int)s_);         \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

typedef struct {
    size_t B, T, C, U;
    float *x, *W, *Ur, *b, *dh;  // inputs, float32 master weights, the output's gradient
} layer;

static float *filled(size_t n, float scale, uint64_t seed) {
    float *p = malloc(n * sizeof *p);
    for (size_t k = 0; k < n; k++) p[k] = scale * ((float)((sf_splitmix64(&seed) >> 40) * 0x1p-23) - 1);
    return p;
}

// seqfeed's kernels: ms per pass, forward then backward.
static double seqfeed_pass(const layer *L, bool bf16, int reps) {
    size_t B = L->B, T = L->T, C = L->C, U = L->U, G = 4 * U;
    float *h = malloc(B * T * U * 4), *c = malloc(B * T * U * 4), *gates = malloc(B * T * G * 4);
    float *dx = malloc(B * T * C * 4), *dW = malloc(C * G * 4), *dUr = malloc(U * G * 4), *db = malloc(G * 4);
    size_t w = bf16 ? sf_lstm_backward_bf16_work(B, T, C, U) : sf_lstm_backward_work(B, T, U);
    float *work = malloc(w * 4), *packed = calloc(sf_recurrent_packed_floats(U, G), 4);
    sf_bf16_layer q = {0};
    sf_err e;
    if (bf16) {
        if (sf_matmul_open(&q.mm, &e)) {
            fprintf(stderr, "lstm_bench: %s\n", e.msg);
            return -1;
        }
        q.x = malloc(B * T * C * 2), q.h = malloc(B * T * U * 2), q.W = malloc(C * G * 2);
        q.Ur = malloc(U * G * 2), q.d = malloc(B * T * G * 2);
    }
    double total = 0;
    for (int r = 0; r <= reps; r++) {  // the first pass makes the primitives
        double t = sf_now();
        if (bf16) {
            sf_lstm_forward_bf16(h, c, gates, L->x, L->W, L->Ur, L->b, &q, B, T, C, U);
            sf_lstm_backward_bf16(dx, dW, dUr, db, L->dh, c, gates, &q, work, B, T, C, U);
        } else {
            sf_recurrent_pack(packed, L->Ur, U, G, 0, U * G);  // once per update, as a replica does
            sf_lstm_forward(h, c, gates, L->x, L->W, L->Ur, L->b, packed, B, T, C, U);
            sf_lstm_backward(dx, dW, dUr, db, L->dh, L->x, L->W, L->Ur, packed, h, c, gates, work, B, T, C, U);
        }
        if (r) total += sf_now() - t;
    }
    if (bf16 && sf_matmul_status(q.mm, &e)) fprintf(stderr, "lstm_bench: %s\n", e.msg);
    sf_matmul_close(q.mm);
    free(q.x), free(q.h), free(q.W), free(q.Ur), free(q.d);
    free(h), free(c), free(gates), free(dx), free(dW), free(dUr), free(db), free(work), free(packed);
    return 1e3 * total / reps;
}

// A memory of desc md, over fresh zeroed memory.
static dnnl_memory_t mem(dnnl_engine_t eng, const dnnl_memory_desc_t *md) {
    dnnl_memory_t m;
    CHECK_DNNL(dnnl_memory_create(&m, md, eng, DNNL_MEMORY_ALLOCATE));
    void *p;
    CHECK_DNNL(dnnl_memory_get_data_handle(m, &p));
    memset(p, 0, dnnl_memory_desc_get_size(md));
    return m;
}

static void reorder(dnnl_engine_t eng, dnnl_stream_t st, dnnl_memory_t from, dnnl_memory_t to) {
    const dnnl_memory_desc_t *a, *b;
    CHECK_DNNL(dnnl_memory_get_memory_desc(from, &a));
    CHECK_DNNL(dnnl_memory_get_memory_desc(to, &b));
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t p;
    CHECK_DNNL(dnnl_reorder_primitive_desc_create(&pd, a, eng, b, eng, NULL));
    CHECK_DNNL(dnnl_primitive_create(&p, pd));
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    CHECK_DNNL(dnnl_primitive_execute(p, st, 2, args));
    dnnl_primitive_destroy(p);
    dnnl_primitive_desc_destroy(pd);
}

// oneDNN's LSTM primitive (forward training, backward): ms per pass, the
// reorders of the weights from and of their gradients to the plain float32
// layout included (the primitives themselves made once, outside the time).
static double onednn_pass(const layer *L, dnnl_data_type_t dt, int reps) {
    int64_t B = (int64_t)L->B, T = (int64_t)L->T, C = (int64_t)L->C, U = (int64_t)L->U;
    dnnl_engine_t eng;
    dnnl_stream_t st;
    CHECK_DNNL(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CHECK_DNNL(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
    dnnl_memory_desc_t src, dst, wl_any, wi_any, bias, dsrc, ddst, dwl_any, dwi_any, dbias, wl_f32, wi_f32, x_f32;
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&src, 3, (dnnl_dims_t){T, B, C}, dt, dnnl_tnc));
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&dst, 3, (dnnl_dims_t){T, B, U}, dt, dnnl_tnc));
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&x_f32, 3, (dnnl_dims_t){T, B, C}, dnnl_f32, dnnl_tnc));
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&wl_any, 5, (dnnl_dims_t){1, 1, C, 4, U}, dt, dnnl_format_tag_any));
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&wi_any, 5, (dnnl_dims_t){1, 1, U, 4, U}, dt, dnnl_format_tag_any));
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&wl_f32, 5, (dnnl_dims_t){1, 1, C, 4, U}, dnnl_f32, dnnl_ldigo));
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&wi_f32, 5, (dnnl_dims_t){1, 1, U, 4, U}, dnnl_f32, dnnl_ldigo));
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&bias, 4, (dnnl_dims_t){1, 1, 4, U}, dnnl_f32, dnnl_ldgo));
    // Gradients in float32: oneDNN 2.6's bf16 LSTM backward takes no other.
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&dsrc, 3, (dnnl_dims_t){T, B, C}, dnnl_f32, dnnl_tnc));
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&ddst, 3, (dnnl_dims_t){T, B, U}, dnnl_f32, dnnl_tnc));
    dbias = bias;
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&dwl_any, 5, (dnnl_dims_t){1, 1, C, 4, U}, dnnl_f32, dnnl_format_tag_any));
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&dwi_any, 5, (dnnl_dims_t){1, 1, U, 4, U}, dnnl_f32, dnnl_format_tag_any));
    dnnl_rnn_desc_t fd, bd;
    CHECK_DNNL(dnnl_lstm_forward_desc_init(&fd, dnnl_forward_training, dnnl_unidirectional_left2right, &src, NULL, NULL,
                                           &wl_any, &wi_any, &bias, &dst, NULL, NULL, 0));
    dnnl_primitive_desc_t fpd, bpd;
    CHECK_DNNL(dnnl_primitive_desc_create(&fpd, &fd, NULL, eng, NULL));
    CHECK_DNNL(dnnl_lstm_backward_desc_init(&bd, dnnl_backward, dnnl_unidirectional_left2right, &src, NULL, NULL,
                                            &wl_any, &wi_any, &bias, &dst, NULL, NULL, &dsrc, NULL, NULL, &dwl_any,
                                            &dwi_any, &dbias, &ddst, NULL, NULL, 0));
    CHECK_DNNL(dnnl_primitive_desc_create(&bpd, &bd, NULL, eng, fpd));
    dnnl_primitive_t fwd, bwd;
    CHECK_DNNL(dnnl_primitive_create(&fwd, fpd));
    CHECK_DNNL(dnnl_primitive_create(&bwd, bpd));
    const char *impl;
    CHECK_DNNL(dnnl_primitive_desc_query(fpd, dnnl_query_impl_info_str, 0, &impl));
    fprintf(stderr, "oneDNN LSTM %s: %s\n", dt == dnnl_bf16 ? "bf16" : "f32", impl);
    dnnl_memory_t m_x = mem(eng, &x_f32), m_src = mem(eng, &src), m_dst = mem(eng, &dst), m_bias = mem(eng, &bias);
    dnnl_memory_t m_wl = mem(eng, &wl_f32), m_wi = mem(eng, &wi_f32), m_dwl = mem(eng, &wl_f32), m_dwi = mem(eng, &wi_f32);
    dnnl_memory_t m_fwl = mem(eng, dnnl_primitive_desc_query_md(fpd, dnnl_query_weights_md, 0));
    dnnl_memory_t m_fwi = mem(eng, dnnl_primitive_desc_query_md(fpd, dnnl_query_weights_md, 1));
    dnnl_memory_t m_bwl = mem(eng, dnnl_primitive_desc_query_md(bpd, dnnl_query_weights_md, 0));
    dnnl_memory_t m_bwi = mem(eng, dnnl_primitive_desc_query_md(bpd, dnnl_query_weights_md, 1));
    dnnl_memory_t m_gwl = mem(eng, dnnl_primitive_desc_query_md(bpd, dnnl_query_diff_weights_md, 0));
    dnnl_memory_t m_gwi = mem(eng, dnnl_primitive_desc_query_md(bpd, dnnl_query_diff_weights_md, 1));
    dnnl_memory_t m_ws = mem(eng, dnnl_primitive_desc_query_md(fpd, dnnl_query_workspace_md, 0));
    dnnl_memory_t m_dsrc = mem(eng, &dsrc), m_ddst = mem(eng, &ddst), m_dbias = mem(eng, &dbias);
    void *p;
    CHECK_DNNL(dnnl_memory_get_data_handle(m_x, &p));
    memcpy(p, L->x, L->B * L->T * L->C * 4);  // batch-major in seqfeed, time-major here: values only
    CHECK_DNNL(dnnl_memory_get_data_handle(m_wl, &p));
    memcpy(p, L->W, L->C * 4 * L->U * 4);
    CHECK_DNNL(dnnl_memory_get_data_handle(m_wi, &p));
    memcpy(p, L->Ur, L->U * 4 * L->U * 4);
    double total = 0;
    for (int r = 0; r <= reps; r++) {
        double t = sf_now();
        reorder(eng, st, m_x, m_src);
        reorder(eng, st, m_wl, m_fwl);
        reorder(eng, st, m_wi, m_fwi);
        dnnl_exec_arg_t fa[] = {{DNNL_ARG_SRC_LAYER, m_src}, {DNNL_ARG_WEIGHTS_LAYER, m_fwl},
                                {DNNL_ARG_WEIGHTS_ITER, m_fwi}, {DNNL_ARG_BIAS, m_bias},
                                {DNNL_ARG_DST_LAYER, m_dst}, {DNNL_ARG_WORKSPACE, m_ws}};
        CHECK_DNNL(dnnl_primitive_execute(fwd, st, 6, fa));
        reorder(eng, st, m_wl, m_bwl);
        reorder(eng, st, m_wi, m_bwi);
        dnnl_exec_arg_t ba[] = {{DNNL_ARG_SRC_LAYER, m_src}, {DNNL_ARG_WEIGHTS_LAYER, m_bwl},
                                {DNNL_ARG_WEIGHTS_ITER, m_bwi}, {DNNL_ARG_BIAS, m_bias},
                                {DNNL_ARG_DST_LAYER, m_dst}, {DNNL_ARG_WORKSPACE, m_ws},
                                {DNNL_ARG_DIFF_DST_LAYER, m_ddst}, {DNNL_ARG_DIFF_SRC_LAYER, m_dsrc},
                                {DNNL_ARG_DIFF_WEIGHTS_LAYER, m_gwl}, {DNNL_ARG_DIFF_WEIGHTS_ITER, m_gwi},
                                {DNNL_ARG_DIFF_BIAS, m_dbias}};
        CHECK_DNNL(dnnl_primitive_execute(bwd, st, 11, ba));
        reorder(eng, st, m_gwl, m_dwl);
        reorder(eng, st, m_gwi, m_dwi);
        CHECK_DNNL(dnnl_stream_wait(st));
        if (r) total += sf_now() - t;
    }
    // Freed at exit: a benchmark.
    return 1e3 * total / reps;
}

int main(int argc, char **argv) {
    char batches[64] = "16,128";
    size_t T = 60, C = 180, U = 180;
    int reps = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--batch")) snprintf(batches, sizeof batches, "%s", argv[i + 1]);
        else if (!strcmp(argv[i], "--window")) T = (size_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--inputs")) C = (size_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--units")) U = (size_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: lstm_bench [--batch 16,128] [--window 60] [--inputs 180] [--units 180] [--reps 10]\n");
            return 2;
        }
    }
    omp_set_num_threads(1);
    sf_cpu_threads(1);
    char what[160];
    bool bf16 = sf_matmul_available(what, sizeof what);  // without it both bf16 passes print -1: not run
    for (char *tok = strtok(batches, ","); tok; tok = strtok(NULL, ",")) {
        size_t B = (size_t)atol(tok);
        layer L = {.B = B, .T = T, .C = C, .U = U, .x = filled(B * T * C, 1, 1), .W = filled(C * 4 * U, 0.1f, 2),
                   .Ur = filled(U * 4 * U, 0.1f, 3), .b = filled(4 * U, 0.1f, 4), .dh = filled(B * T * U, 0.01f, 5)};
        double s32 = seqfeed_pass(&L, false, reps), s16 = bf16 ? seqfeed_pass(&L, true, reps) : -1;
        double o32 = onednn_pass(&L, dnnl_f32, reps), o16 = bf16 ? onednn_pass(&L, dnnl_bf16, reps) : -1;
        printf("{\"batch\": %zu, \"window\": %zu, \"inputs\": %zu, \"units\": %zu, \"threads\": 1, \"ms_per_pass\": "
               "{\"seqfeed_fp32\": %.3f, \"seqfeed_bf16\": %.3f, \"onednn_lstm_f32\": %.3f, \"onednn_lstm_bf16\": "
               "%.3f}, \"bf16_products\": \"%s\"}\n", B, T, C, U, s32, s16, o32, o16, what);
        free(L.x), free(L.W), free(L.Ur), free(L.b), free(L.dh);
    }
    return 0;
}
