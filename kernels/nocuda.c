#include "kernels.h"

bool sf_gpu_built(void) { return false; }

int sf_gpu_count(sf_err *e) {
    sf_err_set(e, SF_OK, "this seqfeed was built without CUDA (rebuild with nvcc on PATH and -Dcuda=enabled)");
    return 0;
}

int sf_gpu_capability(int dev) {
    (void)dev;
    return 0;
}

int sf_gpu_bus_id(int dev, char *id, size_t len) {
    (void)dev, (void)id, (void)len;
    return -1;
}

int sf_gpu_describe(int dev, char *name, size_t name_len, size_t *memory, sf_err *e) {
    (void)name, (void)name_len, (void)memory;
    return sf_err_set(e, SF_EINVAL, "no GPU %d: built without CUDA", dev);
}

static int no_cuda(sf_err *e) { return sf_err_set(e, SF_EINVAL, "built without CUDA: no GPU kernels"); }

int sf_gpu_stage_open(sf_gpu_stage **out, const int *devices, uint32_t replicas, uint32_t slots, sf_err *e) {
    (void)devices, (void)replicas, (void)slots;
    *out = NULL;
    return no_cuda(e);
}

void sf_gpu_stage_close(sf_gpu_stage *st) { (void)st; }

void sf_gpu_stage_set_stream(sf_gpu_stage *st, uint32_t r, void *stream) { (void)st, (void)r, (void)stream; }

int sf_gpu_stage_wait(sf_gpu_stage *st, uint32_t r, void *ready, sf_err *e) {
    (void)st, (void)r, (void)ready;
    return no_cuda(e);
}

int sf_gpu_stage_error(sf_gpu_stage *st, sf_err *e) {
    (void)st;
    return no_cuda(e);
}

double sf_gpu_stage_waited(sf_gpu_stage *st, uint32_t r) {
    (void)st, (void)r;
    return 0;
}

void sf_gpu_stage_counts(sf_gpu_stage *st, uint64_t *copies, uint64_t *reclaims_waited) {
    (void)st;
    *copies = *reclaims_waited = 0;
}

void *sf_gpu_stage_alloc(void *arg, uint32_t r, uint32_t s, size_t bytes) {
    (void)arg, (void)r, (void)s, (void)bytes;
    return NULL;
}

void sf_gpu_stage_free(void *arg, uint32_t r, uint32_t s, void *host) { (void)arg, (void)r, (void)s, (void)host; }

int sf_gpu_stage_reclaim(void *arg, uint32_t r, uint32_t s, sf_err *e) {
    (void)arg, (void)r, (void)s;
    return no_cuda(e);
}

int sf_gpu_stage_publish(void *arg, uint32_t r, uint32_t s, const void *host, size_t bytes, void **device,
                         void **ready, sf_err *e) {
    (void)arg, (void)r, (void)s, (void)host, (void)bytes, (void)device, (void)ready;
    return no_cuda(e);
}

void sf_gpu_stage_release(void *arg, uint32_t r, uint32_t s) { (void)arg, (void)r, (void)s; }

int sf_gpu_dropout_forward(float *y, float *mask, const float *x, size_t n, float rate, uint64_t seed,
                           uint64_t first, void *stream, sf_err *e) {
    (void)y, (void)mask, (void)x, (void)n, (void)rate, (void)seed, (void)first, (void)stream;
    return no_cuda(e);
}

int sf_gpu_dropout_backward(float *dx, const float *dy, const float *mask, size_t n, void *stream, sf_err *e) {
    (void)dx, (void)dy, (void)mask, (void)n, (void)stream;
    return no_cuda(e);
}

int sf_gpu_mse_backward(float *dy, const float *y, const float *target, size_t B, size_t O, float inv_batch,
                        void *stream, sf_err *e) {
    (void)dy, (void)y, (void)target, (void)B, (void)O, (void)inv_batch, (void)stream;
    return no_cuda(e);
}

int sf_gpu_last_step(float *out, const float *h, size_t B, size_t T, size_t U, void *stream, sf_err *e) {
    (void)out, (void)h, (void)B, (void)T, (void)U, (void)stream;
    return no_cuda(e);
}

int sf_gpu_last_step_backward(float *dh, const float *dout, size_t B, size_t T, size_t U, void *stream, sf_err *e) {
    (void)dh, (void)dout, (void)B, (void)T, (void)U, (void)stream;
    return no_cuda(e);
}

int sf_gpu_adam_update(float *w, float *m, float *v, const float *g, size_t n, const sf_adam *a, uint64_t step,
                       void *stream, sf_err *e) {
    (void)w, (void)m, (void)v, (void)g, (void)n, (void)a, (void)step, (void)stream;
    return no_cuda(e);
}

int sf_gpu_mse_sum(double *sum, const float *y, const float *target, size_t B, size_t O, void *stream, sf_err *e) {
    (void)sum, (void)y, (void)target, (void)B, (void)O, (void)stream;
    return no_cuda(e);
}
