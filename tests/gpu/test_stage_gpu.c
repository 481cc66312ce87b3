// Pipeline to GPU: every batch that arrives on a device equals the host batch
// the pipeline handed out (itself checked against the reference in the
// pipeline tests). The consumer behaves like a trainer: it queues a wait on
// the batch's event and a device-to-host copy of what arrived on its own
// stream, releases the batch at once and never blocks, so the pipeline's
// reclaim and the slot events are what keep batches intact. Exit 77 without
// a GPU.
#include <cuda_runtime.h>

#include "backend/backend.h"
#include "tests/gpu/gpu.h"
#include "tests/pipeline/sample.h"

enum { MAX_R = 4 };

static void run(int ngpus, uint32_t R, uint32_t lanes) {
    char what[64];
    snprintf(what, sizeof what, "%u replicas x %u lanes on %d GPUs", R, lanes, ngpus);
    sf_pipe_opts o = sample_opts();
    o.replicas = R, o.batch = 64, o.pool = 200, o.seed = 5, o.lanes = lanes;
    int devices[MAX_R];
    for (uint32_t r = 0; r < R; r++) devices[r] = (int)(r % (uint32_t)ngpus);
    sf_gpu_stage *st;
    sf_err e = {0};
    if (sf_gpu_stage_open(&st, devices, R, o.slots * lanes, &e)) {
        CHECK(0, "%s: %s", what, e.msg);
        return;
    }
    sf_stage_ops ops = {sf_gpu_stage_alloc, sf_gpu_stage_free, sf_gpu_stage_reclaim, sf_gpu_stage_publish,
                        sf_gpu_stage_release, st};
    o.stage = &ops;
    cudaStream_t streams[MAX_R];
    size_t floats = 4u << 20;  // room for every window of both epochs
    float *want[MAX_R], *got[MAX_R];
    size_t used[MAX_R] = {0};
    for (uint32_t r = 0; r < R; r++) {
        CHECK(cudaSetDevice(devices[r]) == cudaSuccess && cudaStreamCreate(&streams[r]) == cudaSuccess &&
                  cudaHostAlloc((void **)&got[r], floats * sizeof(float), cudaHostAllocPortable) == cudaSuccess,
              "%s: CUDA setup", what);
        want[r] = malloc(floats * sizeof(float));
        sf_gpu_stage_set_stream(st, r, streams[r]);
    }
    sample_pipe sp;
    uint64_t batches = 0;
    if (sample_pipe_open(&sp, path, &o, &e) == 0) {
        sf_pipe *pipe = sp.pipe;
        bool done[MAX_R] = {false};
        for (uint32_t left = R; left;)
            for (uint32_t r = 0; r < R; r++) {
                sf_batch b;
                if (done[r]) continue;
                int rc = sf_pipe_next_batch(pipe, r, &b, &e);
                if (rc <= 0) {
                    CHECK(rc == 0, "%s: replica %u: %s", what, r, e.msg);
                    done[r] = true;
                    left--;
                    continue;
                }
                size_t nx = (size_t)b.count * 20 * 3, ny = b.count;
                if (used[r] + nx + ny > floats) {
                    CHECK(0, "%s: more windows than the test made room for", what);
                    sf_pipe_release(pipe, r, &b);
                    continue;
                }
                memcpy(want[r] + used[r], b.x, nx * sizeof(float));
                memcpy(want[r] + used[r] + nx, b.y, ny * sizeof(float));
                CHECK(sf_gpu_stage_wait(st, r, b.ready, &e) == 0, "%s: %s", what, e.msg);
                CHECK(cudaMemcpyAsync(got[r] + used[r], b.device_x, nx * sizeof(float), cudaMemcpyDeviceToHost,
                                      streams[r]) == cudaSuccess &&
                          cudaMemcpyAsync(got[r] + used[r] + nx, b.device_y, ny * sizeof(float),
                                          cudaMemcpyDeviceToHost, streams[r]) == cudaSuccess,
                      "%s: copy back", what);
                used[r] += nx + ny;
                sf_pipe_release(pipe, r, &b);
                batches++;
            }
        sample_pipe_close(&sp);
    } else {
        CHECK(0, "%s: %s", what, e.msg);
    }
    CHECK(sf_gpu_stage_error(st, &e) == 0, "%s: %s", what, e.msg);
    uint64_t copies, waited;
    sf_gpu_stage_counts(st, &copies, &waited);
    // Every batch copied, and each slot of the ring refilled a few times.
    CHECK(copies == batches && batches >= 4 * (uint64_t)o.slots * lanes, "%s: %llu batches, %llu copies", what,
          (unsigned long long)batches, (unsigned long long)copies);
    for (uint32_t r = 0; r < R; r++) {
        CHECK(cudaSetDevice(devices[r]) == cudaSuccess && cudaStreamSynchronize(streams[r]) == cudaSuccess,
              "%s: sync", what);
        CHECK(memcmp(want[r], got[r], used[r] * sizeof(float)) == 0, "%s: replica %u: what reached GPU %d differs "
              "from the host batches", what, r, devices[r]);
        cudaStreamDestroy(streams[r]);
        cudaFreeHost(got[r]);
        free(want[r]);
    }
    printf("%s: %llu batches copied, %llu refills waited for their copy\n", what, (unsigned long long)batches,
           (unsigned long long)waited);
    sf_gpu_stage_close(st);
}

int main(void) {
    int n = gpus_or_skip();
    if (!mkdtemp(dir)) return 2;
    snprintf(path, sizeof path, "%s/sample.sfpack", dir);
    if (pack_sample(97)) return TEST_EXIT();
    run(n, 1, 1);
    run(n, 2, 2);  // on one GPU, two replicas share it
    if (n > 2) run(n, n < MAX_R ? (uint32_t)n : MAX_R, 1);
    unlink(path);
    rmdir(dir);
    return TEST_EXIT();
}
