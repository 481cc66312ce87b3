// Mirrored training on GPUs against the CPU: with one GPU, and with every GPU
// (one replica each, NCCL summing the gradients), 6 steps on the same global
// batches end with the weights the CPU backend reaches with as many
// replicas, within float rounding (fp32, FMA math on the GPU; 1e-5). The
// same with a cosine schedule after a warmup, the step in a CUDA graph:
// the graph, captured once, takes each step's lr. Exit 77 without a GPU.
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/common.h"
#include "tests/gpu/gpu.h"
#include "train/train.h"

enum { PER = 8, T = 12, I = 3, O = 2, STEPS = 6, MAX_R = 8 };

typedef struct {
    uint32_t R;
    const float *x[MAX_R], *y[MAX_R];  // replica r's batches, STEPS of them, where its backend reads them
    uint64_t taken[MAX_R];
} source;

// Without staging the trainer hands x and y to the backend as they are:
// device memory here.
static int next(void *arg, uint32_t r, sf_batch *b, sf_err *e) {
    source *s = arg;
    (void)e;
    uint64_t k = s->taken[r]++;
    if (k >= STEPS) return 0;
    *b = (sf_batch){.x = (float *)s->x[r] + k * PER * T * I, .y = (float *)s->y[r] + k * PER * O, .count = PER};
    return 1;
}

static void release(void *arg, uint32_t r, const sf_batch *b) { (void)arg, (void)r, (void)b; }

static sf_lr_schedule schedule;  // the runs' (zeroed: constant)
static bool graph;               // GPU: late loss and the step in a CUDA graph

// Trains R replicas for STEPS steps; replica r gets slice r of each global batch.
static int train(const sf_backend *be, const sf_model *m, uint32_t R, const int *devices, bool on_gpu,
                 const float *w0, const float *x, const float *y, float *w, sf_err *e) {
    sf_adam adam = {1e-2f, 0.9f, 0.999f, 1e-7f};
    sf_trainer *t;
    int rc = sf_trainer_open(&t, be, m, &(sf_trainer_opts){.replicas = R, .replica_batch = PER, .window = T,
                             .devices = devices, .precision = SF_PRECISION_FP32, .adam = adam,
                             .late_loss = graph, .cuda_graph = graph, .lr_schedule = schedule}, e);
    if (rc) return rc;
    source s = {.R = R};
    float *dev[2 * MAX_R] = {0};
    for (uint32_t r = 0; r < R; r++) {
        // Slice r of every global batch, one after the other.
        size_t nx = (size_t)STEPS * PER * T * I, ny = (size_t)STEPS * PER * O;
        float *hx = malloc(nx * sizeof(float)), *hy = malloc(ny * sizeof(float));
        for (int k = 0; k < STEPS; k++) {
            memcpy(hx + (size_t)k * PER * T * I, x + ((size_t)k * R + r) * PER * T * I, PER * T * I * sizeof(float));
            memcpy(hy + (size_t)k * PER * O, y + ((size_t)k * R + r) * PER * O, PER * O * sizeof(float));
        }
        if (on_gpu) {
            cudaSetDevice(devices[r]);
            cudaMalloc((void **)&dev[2 * r], nx * sizeof(float));
            cudaMalloc((void **)&dev[2 * r + 1], ny * sizeof(float));
            cudaMemcpy(dev[2 * r], hx, nx * sizeof(float), cudaMemcpyHostToDevice);
            cudaMemcpy(dev[2 * r + 1], hy, ny * sizeof(float), cudaMemcpyHostToDevice);
            cudaDeviceSynchronize();  // the replicas' streams are not ordered with these copies
            free(hx), free(hy);
            s.x[r] = dev[2 * r], s.y[r] = dev[2 * r + 1];
        } else {
            s.x[r] = hx, s.y[r] = hy;
        }
    }
    sf_batch_source src = {next, release, &s};
    if (!(rc = sf_trainer_load(t, w0, NULL, NULL, 0, e))) rc = sf_trainer_run(t, &src, 17, 0, NULL, NULL, e);
    if (!rc) rc = sf_trainer_save(t, w, NULL, NULL, e);
    sf_trainer_close(t);
    for (uint32_t r = 0; r < R; r++) {
        if (on_gpu) cudaFree(dev[2 * r]), cudaFree(dev[2 * r + 1]);
        else free((void *)s.x[r]), free((void *)s.y[r]);
    }
    return rc;
}

// The CPU run's weights into out (NULL: not wanted).
static void compare(const sf_backend *gpu, const sf_model *m, uint32_t R, const int *devices, const float *w0,
                    const float *x, const float *y, float *out) {
    float *wc = malloc(m->nparams * sizeof(float)), *wg = malloc(m->nparams * sizeof(float));
    sf_err e = {0};
    CHECK(train(&sf_backend_cpu, m, R, NULL, false, w0, x, y, wc, &e) == 0, "CPU, R=%u: %s", R, e.msg);
    CHECK(train(gpu, m, R, devices, true, w0, x, y, wg, &e) == 0, "GPU, R=%u: %s", R, e.msg);
    double worst = 0;
    for (size_t k = 0; k < m->nparams; k++) worst = fmax(worst, fabs(wc[k] - wg[k]));
    CHECK(worst <= 1e-5, "R=%u: GPU and CPU weights differ by up to %.3g after %d steps", R, worst, STEPS);
    printf("R=%u: GPU and CPU weights within %.3g after %d steps\n", R, worst, STEPS);
    if (out) memcpy(out, wc, m->nparams * sizeof(float));
    free(wc), free(wg);
}

int main(void) {
    sf_err e = {0};
    int n = gpus_or_skip();
    const sf_backend *gpu = sf_backend_gpu(&e);
    sf_model m;
    if (!gpu || sf_model_parse(&m, "lstm:16,dropout:0.2,lstm:12,dense", I, O, &e)) {
        CHECK(0, "%s", e.msg);
        return TEST_EXIT();
    }
    uint32_t R = n < MAX_R ? (uint32_t)n : MAX_R;
    size_t nx = (size_t)STEPS * R * PER * T * I, ny = (size_t)STEPS * R * PER * O;
    float *x = malloc(nx * sizeof(float)), *y = malloc(ny * sizeof(float)), *w0 = malloc(m.nparams * sizeof(float));
    uint64_t s = 8;
    for (size_t k = 0; k < nx; k++) x[k] = (float)((sf_splitmix64(&s) >> 40) * 0x1p-23) - 1;
    for (size_t k = 0; k < ny; k++) y[k] = (float)((sf_splitmix64(&s) >> 40) * 0x1p-23) - 1;
    sf_model_init(&m, w0, 6);
    int devices[MAX_R];
    for (uint32_t r = 0; r < R; r++) devices[r] = (int)r;
    float *constant = malloc(m.nparams * sizeof(float)), *scheduled = malloc(m.nparams * sizeof(float));
    compare(gpu, &m, 1, devices, w0, x, y, constant);
    if (R > 1) compare(gpu, &m, R, devices, w0, x, y, NULL);
    schedule = (sf_lr_schedule){.kind = SF_LR_COSINE, .warmup_steps = 2, .total_steps = STEPS, .lr_min = 1e-4};
    graph = true;
    compare(gpu, &m, 1, devices, w0, x, y, scheduled);
    double moved = 0;  // the schedule changed the run
    for (size_t k = 0; k < m.nparams; k++) moved = fmax(moved, fabs(constant[k] - scheduled[k]));
    CHECK(moved > 1e-3, "the schedule's run ends within %.3g of the constant lr's", moved);
    free(constant), free(scheduled);
    free(x), free(y), free(w0);
    return TEST_EXIT();
}
