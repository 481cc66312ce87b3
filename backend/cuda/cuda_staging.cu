// Staging onto the GPUs: pinned host slots, one asynchronous copy per batch
// on each replica's copy stream, and two events per slot that order the copy
// against the consumer's stream without the host waiting on either.
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdlib.h>

extern "C" {
#include "backend/backend.h"
}

typedef struct {
    void *host, *device;
    cudaEvent_t copied, consumed;
    bool copying;  // a copy was queued since the last reclaim
} slot_t;

typedef struct {
    int dev;
    cudaStream_t copy, consumer;
    slot_t *slots;
    cudaEvent_t before, after;  // timing events around the consumer's last wait
    bool timed;                 // they bracket a wait
} replica_t;

struct sf_gpu_stage {
    uint32_t replicas, slots;
    replica_t *reps;
    pthread_mutex_t mu;  // error and counters: hooks run on windower and consumer threads
    int error;
    sf_err err;
    uint64_t copies, reclaims_waited;
};

// Records the first error (the one that explains the rest) and returns it.
static int fail(sf_gpu_stage *st, uint32_t r, const char *what, cudaError_t rc, sf_err *e) {
    cudaGetLastError();
    pthread_mutex_lock(&st->mu);
    if (!st->error) {
        st->error = SF_EIO;
        sf_err_set(&st->err, SF_EIO, "GPU %d (replica %u): %s: %s", st->reps[r].dev, r, what, cudaGetErrorString(rc));
    }
    if (e) *e = st->err;
    int code = st->error;
    pthread_mutex_unlock(&st->mu);
    return code;
}

#define CHECK_CUDA(call)                                              \
    do {                                                              \
        cudaError_t rc_ = (call);                                     \
        if (rc_ != cudaSuccess) return fail(st, r, #call, rc_, e);   \
    } while (0)

extern "C" int sf_gpu_stage_open(sf_gpu_stage **out, const int *devices, uint32_t replicas, uint32_t slots,
                                 sf_err *e) {
    *out = NULL;
    sf_gpu_stage *st = (sf_gpu_stage *)calloc(1, sizeof *st);
    if (!st) return sf_err_set(e, SF_ENOMEM, "out of memory");
    pthread_mutex_init(&st->mu, NULL);
    st->replicas = replicas;
    st->slots = slots;
    st->reps = (replica_t *)calloc(replicas, sizeof *st->reps);
    if (!st->reps) {
        sf_gpu_stage_close(st);
        return sf_err_set(e, SF_ENOMEM, "out of memory");
    }
    for (uint32_t r = 0; r < replicas; r++) {
        replica_t *rep = &st->reps[r];
        rep->dev = devices[r];
        rep->slots = (slot_t *)calloc(slots, sizeof *rep->slots);
        if (!rep->slots) {
            sf_gpu_stage_close(st);
            return sf_err_set(e, SF_ENOMEM, "out of memory");
        }
        int rc = 0;
        cudaError_t c = cudaSetDevice(rep->dev);
        // Non-blocking: the copy stream must not serialise with work on the
        // legacy default stream.
        if (c == cudaSuccess) c = cudaStreamCreateWithFlags(&rep->copy, cudaStreamNonBlocking);
        for (uint32_t s = 0; c == cudaSuccess && s < slots; s++) {
            c = cudaEventCreateWithFlags(&rep->slots[s].copied, cudaEventDisableTiming);
            if (c == cudaSuccess) c = cudaEventCreateWithFlags(&rep->slots[s].consumed, cudaEventDisableTiming);
        }
        if (c == cudaSuccess) c = cudaEventCreate(&rep->before);
        if (c == cudaSuccess) c = cudaEventCreate(&rep->after);
        if (c != cudaSuccess) rc = fail(st, r, "creating the copy stream and events", c, e);
        if (rc) {
            sf_gpu_stage_close(st);
            return rc;
        }
    }
    *out = st;
    return 0;
}

extern "C" void sf_gpu_stage_close(sf_gpu_stage *st) {
    if (!st) return;
    for (uint32_t r = 0; st->reps && r < st->replicas; r++) {
        replica_t *rep = &st->reps[r];
        if (!rep->slots) continue;
        cudaSetDevice(rep->dev);
        if (rep->copy) cudaStreamSynchronize(rep->copy);
        for (uint32_t s = 0; s < st->slots; s++) {
            if (rep->slots[s].copied) cudaEventDestroy(rep->slots[s].copied);
            if (rep->slots[s].consumed) cudaEventDestroy(rep->slots[s].consumed);
        }
        if (rep->copy) cudaStreamDestroy(rep->copy);
        if (rep->before) cudaEventDestroy(rep->before);
        if (rep->after) cudaEventDestroy(rep->after);
        free(rep->slots);
    }
    free(st->reps);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

extern "C" void sf_gpu_stage_set_stream(sf_gpu_stage *st, uint32_t r, void *stream) {
    st->reps[r].consumer = (cudaStream_t)stream;
}

extern "C" int sf_gpu_stage_wait(sf_gpu_stage *st, uint32_t r, void *ready, sf_err *e) {
    replica_t *rep = &st->reps[r];
    CHECK_CUDA(cudaSetDevice(rep->dev));
    CHECK_CUDA(cudaEventRecord(rep->before, rep->consumer));
    CHECK_CUDA(cudaStreamWaitEvent(rep->consumer, (cudaEvent_t)ready, 0));
    CHECK_CUDA(cudaEventRecord(rep->after, rep->consumer));
    rep->timed = true;
    return 0;
}

extern "C" double sf_gpu_stage_waited(sf_gpu_stage *st, uint32_t r) {
    replica_t *rep = &st->reps[r];
    float ms = 0;
    // Read once: a step that waited for no copy (resident batches) must not
    // report the last copy's wait again.
    bool timed = rep->timed;
    rep->timed = false;
    if (!timed || cudaEventElapsedTime(&ms, rep->before, rep->after) != cudaSuccess) {
        cudaGetLastError();  // not recorded yet, or not complete: no figure, and no sticky error
        return 0;
    }
    return ms * 1e-3;
}

extern "C" int sf_gpu_stage_error(sf_gpu_stage *st, sf_err *e) {
    pthread_mutex_lock(&st->mu);
    int rc = st->error;
    if (rc && e) *e = st->err;
    pthread_mutex_unlock(&st->mu);
    return rc;
}

extern "C" void sf_gpu_stage_counts(sf_gpu_stage *st, uint64_t *copies, uint64_t *reclaims_waited) {
    pthread_mutex_lock(&st->mu);
    *copies = st->copies;
    *reclaims_waited = st->reclaims_waited;
    pthread_mutex_unlock(&st->mu);
}

// Pinned, so that cudaMemcpyAsync is a DMA that overlaps compute instead of
// a staged copy through a driver buffer; portable, so any thread may use it.
extern "C" void *sf_gpu_stage_alloc(void *arg, uint32_t r, uint32_t s, size_t bytes) {
    sf_gpu_stage *st = (sf_gpu_stage *)arg;
    sf_err *e = NULL;
    slot_t *slot = &st->reps[r].slots[s];
    cudaError_t c = cudaSetDevice(st->reps[r].dev);
    if (c == cudaSuccess) c = cudaMalloc(&slot->device, bytes);
    if (c == cudaSuccess) c = cudaHostAlloc(&slot->host, bytes, cudaHostAllocPortable);
    if (c != cudaSuccess) {
        fail(st, r, "allocating a staging slot", c, e);
        if (slot->device) cudaFree(slot->device);
        slot->device = NULL;
        return NULL;
    }
    return slot->host;
}

extern "C" void sf_gpu_stage_free(void *arg, uint32_t r, uint32_t s, void *host) {
    sf_gpu_stage *st = (sf_gpu_stage *)arg;
    slot_t *slot = &st->reps[r].slots[s];
    cudaSetDevice(st->reps[r].dev);
    // Neither a copy nor the consumer's queued work may still use the slot.
    cudaStreamSynchronize(st->reps[r].copy);
    cudaEventSynchronize(slot->consumed);
    cudaFreeHost(host);
    cudaFree(slot->device);
    slot->host = slot->device = NULL;
}

extern "C" int sf_gpu_stage_reclaim(void *arg, uint32_t r, uint32_t s, sf_err *e) {
    sf_gpu_stage *st = (sf_gpu_stage *)arg;
    slot_t *slot = &st->reps[r].slots[s];
    if (!slot->copying) return 0;
    slot->copying = false;
    cudaError_t c = cudaEventQuery(slot->copied);
    if (c == cudaSuccess) return 0;
    if (c != cudaErrorNotReady) return fail(st, r, "cudaEventQuery(copied)", c, e);
    pthread_mutex_lock(&st->mu);
    st->reclaims_waited++;
    pthread_mutex_unlock(&st->mu);
    CHECK_CUDA(cudaEventSynchronize(slot->copied));
    return 0;
}

extern "C" int sf_gpu_stage_publish(void *arg, uint32_t r, uint32_t s, const void *host, size_t bytes, void **device,
                                    void **ready, sf_err *e) {
    sf_gpu_stage *st = (sf_gpu_stage *)arg;
    replica_t *rep = &st->reps[r];
    slot_t *slot = &rep->slots[s];
    int rc = sf_gpu_stage_error(st, e);  // from a release, which cannot return it
    if (rc) return rc;
    CHECK_CUDA(cudaSetDevice(rep->dev));
    // The consumer's work on the slot's previous batch must be done before
    // its device copy is overwritten (an event never recorded does not wait).
    CHECK_CUDA(cudaStreamWaitEvent(rep->copy, slot->consumed, 0));
    CHECK_CUDA(cudaMemcpyAsync(slot->device, host, bytes, cudaMemcpyHostToDevice, rep->copy));
    CHECK_CUDA(cudaEventRecord(slot->copied, rep->copy));
    slot->copying = true;
    pthread_mutex_lock(&st->mu);
    st->copies++;
    pthread_mutex_unlock(&st->mu);
    *device = slot->device;
    *ready = (void *)slot->copied;
    return 0;
}

extern "C" void sf_gpu_stage_release(void *arg, uint32_t r, uint32_t s) {
    sf_gpu_stage *st = (sf_gpu_stage *)arg;
    replica_t *rep = &st->reps[r];
    sf_err *e = NULL;
    cudaError_t c = cudaSetDevice(rep->dev);
    if (c == cudaSuccess) c = cudaEventRecord(rep->slots[s].consumed, rep->consumer);
    if (c != cudaSuccess) fail(st, r, "cudaEventRecord(consumed)", c, e);
}
