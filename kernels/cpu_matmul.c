// bf16 matrix products on oneDNN's matmul primitive (Debian libdnnl-dev):
// AMX or AVX512_BF16 dot products where the CPU has them, float32 sums.
// Built as the module seqfeed-onednn.so, which cpu_matmul_loader.c loads
// when bf16 is asked for: oneDNN adds 4.5 MB to the resident size of every
// process that maps it, and only bf16 runs need it.
// Creating a primitive costs 0.5-10 ms and a product at batch 32 about
// 20 us, so each sf_matmul keeps the primitives it made, by shape. Operands
// are dense: with a leading dimension past the row, oneDNN falls back from
// its AMX kernels to a generic GEMM at half the rate. Weights in plain
// layout are repacked at every product; packed once (sf_matmul_pack) the
// recurrent step at batch 16 took 20 us instead of 34 (measured).
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

enum { CACHE = 256 };  // shapes a pass meets: 6 per layer, twice with a partial batch

typedef struct {
    int64_t M, N, K;
    bool ta, tb, accumulate;
    int slot;  // the packed weights it reads, or -1 for plain ones
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c;
} product;

// Weights packed into the layout oneDNN's products want, and the reorder
// that packs them.
typedef struct {
    int64_t K, N;
    bool tb;
    dnnl_memory_desc_t md;
    void *data;
    dnnl_primitive_t reorder;
    dnnl_memory_t from, to;
} packed;

struct sf_matmul {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    product cache[CACHE];
    int used;
    packed slots[SF_MATMUL_SLOTS];
    int threads;    // OpenMP threads per product: 1 (the replica's parts are the parallelism)
    sf_err failed;  // the first failure, kept for sf_matmul_status
};

static void mm_close(sf_matmul *mm);

static sf_bf16_kind mm_kind(void) {
    switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_avx512_core_amx: return SF_BF16_AMX;
    case dnnl_cpu_isa_avx512_core_bf16: return SF_BF16_DOT;
    case dnnl_cpu_isa_avx512_core:
    case dnnl_cpu_isa_avx512_core_vnni: return SF_BF16_EMULATED;
    default: return SF_BF16_NONE;
    }
}

static bool mm_available(char *what, size_t n) {
    static const char *const names[] = {
        [SF_BF16_EMULATED] = "AVX-512, bf16 emulated", [SF_BF16_DOT] = "AVX512_BF16", [SF_BF16_AMX] = "AMX-BF16"};
    const dnnl_version_t *v = dnnl_version();
    sf_bf16_kind kind = mm_kind();
    if (kind != SF_BF16_NONE)
        snprintf(what, n, "oneDNN %d.%d.%d matmul, %s", v->major, v->minor, v->patch, names[kind]);
    else
        snprintf(what, n, "none: oneDNN %d.%d.%d has no bf16 matmul for a CPU without AVX-512", v->major, v->minor,
                  v->patch);
    return kind != SF_BF16_NONE;
}

// An sf_matmul with its CPU engine and stream, for products of any type.
static int mm_engine(sf_matmul **out, sf_err *e) {
    *out = NULL;
    sf_matmul *mm = calloc(1, sizeof *mm);
    if (!mm) return sf_err_set(e, SF_ENOMEM, "out of memory for oneDNN products");
    mm->threads = 1;
    if (dnnl_engine_create(&mm->engine, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&mm->stream, mm->engine, dnnl_stream_default_flags) != dnnl_success) {
        mm_close(mm);
        return sf_err_set(e, SF_ENOMEM, "oneDNN: cannot create a CPU engine and stream");
    }
    *out = mm;
    return 0;
}

static int mm_open(sf_matmul **out, sf_err *e) {
    char what[128];
    *out = NULL;
    if (!mm_available(what, sizeof what))
        return sf_err_set(e, SF_EUSAGE, "--precision bf16: no bf16 products on this CPU (%s); use --precision fp32",
                          what + 6);
    return mm_engine(out, e);
}

static void mm_close(sf_matmul *mm) {
    if (!mm) return;
    for (int k = 0; k < mm->used; k++) {
        product *p = &mm->cache[k];
        dnnl_primitive_destroy(p->prim);
        dnnl_memory_destroy(p->a), dnnl_memory_destroy(p->b), dnnl_memory_destroy(p->c);
    }
    for (int k = 0; k < SF_MATMUL_SLOTS; k++) {
        packed *w = &mm->slots[k];
        if (w->reorder) dnnl_primitive_destroy(w->reorder);
        if (w->from) dnnl_memory_destroy(w->from);
        if (w->to) dnnl_memory_destroy(w->to);
        free(w->data);
    }
    if (mm->stream) dnnl_stream_destroy(mm->stream);
    if (mm->engine) dnnl_engine_destroy(mm->engine);
    free(mm);
}

// A dense row-major (rows, cols) matrix, or its transpose when t.
static dnnl_status_t desc(dnnl_memory_desc_t *d, int64_t rows, int64_t cols, bool t, dnnl_data_type_t type) {
    return dnnl_memory_desc_init_by_strides(d, 2, (dnnl_dims_t){rows, cols}, type,
                                            t ? (dnnl_dims_t){1, rows} : (dnnl_dims_t){cols, 1});
}

// The product's primitive; b: its weights' layout (plain, packed, or any
// for the one packing asks oneDNN to choose). 0 or the oneDNN status.
static dnnl_status_t product_desc(dnnl_primitive_desc_t *pd, sf_matmul *mm, int64_t M, int64_t N, int64_t K, bool ta,
                                  const dnnl_memory_desc_t *b, bool accumulate, dnnl_memory_desc_t *a,
                                  dnnl_memory_desc_t *c) {
    dnnl_matmul_desc_t md;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t ops = NULL;
    *pd = NULL;
    dnnl_status_t st = desc(a, M, K, ta, dnnl_bf16);
    if (!st) st = desc(c, M, N, false, dnnl_f32);
    if (!st) st = dnnl_matmul_desc_init(&md, a, b, NULL, c);
    if (!st) st = dnnl_primitive_attr_create(&attr);
    // C += A B is the sum post-op: the product added to what C holds.
    if (!st && accumulate) st = dnnl_post_ops_create(&ops);
    if (!st && accumulate) st = dnnl_post_ops_append_sum(ops, 1.0f);
    if (!st && accumulate) st = dnnl_primitive_attr_set_post_ops(attr, ops);
    if (!st) st = dnnl_primitive_desc_create(pd, &md, attr, mm->engine, NULL);
    if (ops) dnnl_post_ops_destroy(ops);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return st;
}

static product *product_make(sf_matmul *mm, int64_t M, int64_t N, int64_t K, bool ta, bool tb, bool accumulate,
                             int slot) {
    if (mm->used == CACHE) {
        sf_err_set(&mm->failed, SF_ENOMEM, "bf16 products: more than %d shapes", CACHE);
        return NULL;
    }
    product *p = &mm->cache[mm->used];
    *p = (product){.M = M, .N = N, .K = K, .ta = ta, .tb = tb, .accumulate = accumulate, .slot = slot};
    dnnl_memory_desc_t a, b, c;
    dnnl_primitive_desc_t pd = NULL;
    bool ok = slot >= 0 ? (b = mm->slots[slot].md, true) : desc(&b, K, N, tb, dnnl_bf16) == dnnl_success;
    ok = ok && product_desc(&pd, mm, M, N, K, ta, &b, accumulate, &a, &c) == dnnl_success &&
         dnnl_primitive_create(&p->prim, pd) == dnnl_success &&
         dnnl_memory_create(&p->a, &a, mm->engine, DNNL_MEMORY_NONE) == dnnl_success &&
         dnnl_memory_create(&p->b, &b, mm->engine, DNNL_MEMORY_NONE) == dnnl_success &&
         dnnl_memory_create(&p->c, &c, mm->engine, DNNL_MEMORY_NONE) == dnnl_success;
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (!ok) {
        if (p->prim) dnnl_primitive_destroy(p->prim);
        if (p->a) dnnl_memory_destroy(p->a);
        if (p->b) dnnl_memory_destroy(p->b);
        sf_err_set(&mm->failed, SF_ENOMEM, "oneDNN: cannot make a bf16 product of (%lld,%lld) by (%lld,%lld)",
                   (long long)M, (long long)K, (long long)K, (long long)N);
        return NULL;
    }
    mm->used++;
    return p;
}

// C = A B (or +=) with B plain, or packed in slot (>= 0).
static void product_run(sf_matmul *mm, float *C, const sf_bf16 *A, const void *B, size_t M, size_t N, size_t K, bool ta,
                        bool tb, bool accumulate, int slot) {
    if (mm->failed.code || M == 0 || N == 0) return;
    // The replica's parts are the parallelism: one thread per product, as
    // for BLAS (sf_cpu_threads). The setting is the calling thread's.
    omp_set_num_threads(mm->threads);
    product *p = NULL;
    for (int k = 0; k < mm->used && !p; k++) {
        product *q = &mm->cache[k];
        if (q->M == (int64_t)M && q->N == (int64_t)N && q->K == (int64_t)K && q->ta == ta && q->tb == tb &&
            q->accumulate == accumulate && q->slot == slot)
            p = q;
    }
    if (!p && !(p = product_make(mm, (int64_t)M, (int64_t)N, (int64_t)K, ta, tb, accumulate, slot))) return;
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, p->a}, {DNNL_ARG_WEIGHTS, p->b}, {DNNL_ARG_DST, p->c}};
    if (dnnl_memory_set_data_handle(p->a, (void *)A) != dnnl_success ||
        dnnl_memory_set_data_handle(p->b, (void *)B) != dnnl_success ||
        dnnl_memory_set_data_handle(p->c, C) != dnnl_success ||
        dnnl_primitive_execute(p->prim, mm->stream, 3, args) != dnnl_success ||
        dnnl_stream_wait(mm->stream) != dnnl_success)
        sf_err_set(&mm->failed, SF_ENOMEM, "oneDNN: a bf16 product of (%zu,%zu) by (%zu,%zu) failed", M, K, K, N);
}

static void mm_bf16(sf_matmul *mm, float *C, const sf_bf16 *A, const sf_bf16 *B, size_t M, size_t N, size_t K, bool ta,
                    bool tb, bool accumulate) {
    product_run(mm, C, A, B, M, N, K, ta, tb, accumulate, -1);
}

// The layout is the one oneDNN picks for a product of `rows` rows; other
// row counts (a partial batch) take it as given.
static void mm_pack(sf_matmul *mm, int slot, const sf_bf16 *B, size_t K, size_t N, bool tb, size_t rows) {
    if (mm->failed.code) return;
    if (slot < 0 || slot >= SF_MATMUL_SLOTS) {
        sf_err_set(&mm->failed, SF_EINVAL, "bf16 products: weights slot %d is not in 0 .. %d", slot,
                   SF_MATMUL_SLOTS - 1);
        return;
    }
    omp_set_num_threads(mm->threads);
    packed *w = &mm->slots[slot];
    if (w->reorder && (w->K != (int64_t)K || w->N != (int64_t)N || w->tb != tb)) {
        sf_err_set(&mm->failed, SF_EINVAL, "bf16 products: weights slot %d packed with another shape", slot);
        return;
    }
    if (!w->reorder) {
        dnnl_memory_desc_t any, plain, a, c;
        dnnl_primitive_desc_t pd = NULL, rpd = NULL;
        *w = (packed){.K = (int64_t)K, .N = (int64_t)N, .tb = tb};
        bool ok = dnnl_memory_desc_init_by_tag(&any, 2, (dnnl_dims_t){w->K, w->N}, dnnl_bf16, dnnl_format_tag_any) ==
                      dnnl_success &&
                  desc(&plain, w->K, w->N, tb, dnnl_bf16) == dnnl_success &&
                  product_desc(&pd, mm, rows ? (int64_t)rows : 1, w->N, w->K, false, &any, true, &a, &c) ==
                      dnnl_success;
        if (ok) w->md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
        ok = ok && (w->data = malloc(dnnl_memory_desc_get_size(&w->md))) &&
             dnnl_reorder_primitive_desc_create(&rpd, &plain, mm->engine, &w->md, mm->engine, NULL) == dnnl_success &&
             dnnl_primitive_create(&w->reorder, rpd) == dnnl_success &&
             dnnl_memory_create(&w->from, &plain, mm->engine, DNNL_MEMORY_NONE) == dnnl_success &&
             dnnl_memory_create(&w->to, &w->md, mm->engine, w->data) == dnnl_success;
        if (pd) dnnl_primitive_desc_destroy(pd);
        if (rpd) dnnl_primitive_desc_destroy(rpd);
        if (!ok) {
            sf_err_set(&mm->failed, SF_ENOMEM, "oneDNN: cannot pack bf16 weights of (%zu,%zu)", K, N);
            return;
        }
    }
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, w->from}, {DNNL_ARG_TO, w->to}};
    if (dnnl_memory_set_data_handle(w->from, (void *)B) != dnnl_success ||
        dnnl_primitive_execute(w->reorder, mm->stream, 2, args) != dnnl_success ||
        dnnl_stream_wait(mm->stream) != dnnl_success)
        sf_err_set(&mm->failed, SF_ENOMEM, "oneDNN: packing bf16 weights of (%zu,%zu) failed", K, N);
}

static void mm_bf16_packed(sf_matmul *mm, int slot, float *C, const sf_bf16 *A, size_t M, bool accumulate) {
    if (mm->failed.code) return;
    if (slot < 0 || slot >= SF_MATMUL_SLOTS || !mm->slots[slot].reorder) {
        sf_err_set(&mm->failed, SF_EINVAL, "bf16 products: weights slot %d was never packed", slot);
        return;
    }
    const packed *w = &mm->slots[slot];
    product_run(mm, C, A, w->data, M, (size_t)w->N, (size_t)w->K, false, w->tb, accumulate, slot);
}

static int mm_status(const sf_matmul *mm, sf_err *e) {
    if (!mm->failed.code) return 0;
    return sf_err_set(e, mm->failed.code, "%s", mm->failed.msg);
}

// A square product of side n in float32 or bf16 on a plain primitive, for
// the ceiling.
typedef struct {
    sf_matmul *mm;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c;
    int threads;
} square;

static void square_run(void *arg) {
    square *q = arg;
    omp_set_num_threads(q->threads);
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, q->a}, {DNNL_ARG_WEIGHTS, q->b}, {DNNL_ARG_DST, q->c}};
    if (dnnl_primitive_execute(q->prim, q->mm->stream, 3, args) != dnnl_success ||
        dnnl_stream_wait(q->mm->stream) != dnnl_success)
        sf_err_set(&q->mm->failed, SF_EINVAL, "oneDNN: a square product failed");
}

static double mm_rate(size_t n, bool bf16, int threads, double seconds, bool *steady) {
    sf_matmul *mm;
    sf_err e;
    *steady = false;
    // float32 products need no bf16 instructions: only the engine.
    if ((bf16 ? mm_open(&mm, &e) : mm_engine(&mm, &e)) != 0) return 0;
    square q = {.mm = mm, .threads = threads > 0 ? threads : 1};
    omp_set_num_threads(q.threads);  // oneDNN sizes its kernels' blocking by it when it makes them
    dnnl_data_type_t type = bf16 ? dnnl_bf16 : dnnl_f32;
    dnnl_memory_desc_t a, b, c;
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd = NULL;
    double best = 0;
    bool ok = desc(&a, (int64_t)n, (int64_t)n, false, type) == dnnl_success &&
              desc(&b, (int64_t)n, (int64_t)n, false, type) == dnnl_success &&
              desc(&c, (int64_t)n, (int64_t)n, false, dnnl_f32) == dnnl_success &&
              dnnl_matmul_desc_init(&md, &a, &b, NULL, &c) == dnnl_success &&
              dnnl_primitive_desc_create(&pd, &md, NULL, mm->engine, NULL) == dnnl_success &&
              dnnl_primitive_create(&q.prim, pd) == dnnl_success &&
              dnnl_memory_create(&q.a, &a, mm->engine, DNNL_MEMORY_ALLOCATE) == dnnl_success &&
              dnnl_memory_create(&q.b, &b, mm->engine, DNNL_MEMORY_ALLOCATE) == dnnl_success &&
              dnnl_memory_create(&q.c, &c, mm->engine, DNNL_MEMORY_ALLOCATE) == dnnl_success;
    if (pd) dnnl_primitive_desc_destroy(pd);
    void *pa, *pb;
    if (ok && dnnl_memory_get_data_handle(q.a, &pa) == dnnl_success &&
        dnnl_memory_get_data_handle(q.b, &pb) == dnnl_success) {
        // Values about 0.1: no denormals, no infinities to slow a kernel.
        for (size_t k = 0; k < n * n; k++) {
            if (bf16) ((sf_bf16 *)pa)[k] = ((sf_bf16 *)pb)[k] = (sf_bf16)(0x3dcc + k % 7);
            else ((float *)pa)[k] = ((float *)pb)[k] = 0.1f + (float)(k % 7) * 0.01f;
        }
        best = sf_steady_best(square_run, &q, 2.0 * (double)n * n * n, seconds, steady);
        if (mm->failed.code) best = 0, *steady = false;
    }
    if (q.prim) dnnl_primitive_destroy(q.prim);
    if (q.a) dnnl_memory_destroy(q.a);
    if (q.b) dnnl_memory_destroy(q.b);
    if (q.c) dnnl_memory_destroy(q.c);
    mm_close(mm);
    omp_set_num_threads(1);
    return best;
}

static int mm_sgemm(bool ta, bool tb, size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda,
                    const float *B, size_t ldb, float beta, float *C, size_t ldc) {
    omp_set_num_threads(1);  // as the bf16 products: the replica's parts are the parallelism
    return (int)dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', (dnnl_dim_t)M, (dnnl_dim_t)N, (dnnl_dim_t)K, alpha, A,
                           (dnnl_dim_t)lda, B, (dnnl_dim_t)ldb, beta, C, (dnnl_dim_t)ldc);
}

// The module's one exported symbol.
__attribute__((visibility("default"))) const sf_matmul_table *sf_matmul_module(void) {
    static const sf_matmul_table table = {
        .available = mm_available,
        .kind = mm_kind,
        .open = mm_open,
        .close = mm_close,
        .bf16 = mm_bf16,
        .pack = mm_pack,
        .bf16_packed = mm_bf16_packed,
        .status = mm_status,
        .rate = mm_rate,
        .sgemm = mm_sgemm,
    };
    return &table;
}
