// kernels: GPU discovery now; the CUDA kernels of the model (and their CPU
// twins) join it with the GPU backend. Every function works, and reports "no
// GPU", in a build without CUDA and on a machine without a driver.
#ifndef SF_KERNELS_H
#define SF_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

// True when this binary was compiled with the CUDA backend.
bool sf_gpu_built(void);

// Number of usable GPUs. 0 means "run on CPU"; then e (if not NULL) says why
// in one line (no driver, no device, built without CUDA). Never fails.
int sf_gpu_count(sf_err *e);

// Fills name (and memory in bytes) of device dev. Returns 0 or SF_EINVAL.
int sf_gpu_describe(int dev, char *name, size_t name_len, size_t *memory, sf_err *e);

// ---- staging: the pipeline's batches onto each replica's GPU ----
// Replica r lives on devices[r] and has a copy stream there; each slot of its
// ring a device buffer and two events: copied (the consumer's stream waits on
// it before reading the batch) and consumed (the next copy into the slot
// waits on it, so a batch is never overwritten while the consumer's queued
// work still reads it). The hooks take the stage as arg and have the shape of
// the pipeline's sf_stage_ops; the trainer joins the two.
typedef struct sf_gpu_stage sf_gpu_stage;
int sf_gpu_stage_open(sf_gpu_stage **out, const int *devices, uint32_t replicas, uint32_t slots, sf_err *e);
// Waits for every copy, then frees everything.
void sf_gpu_stage_close(sf_gpu_stage *st);
// The stream (a cudaStream_t) that consumes replica r's batches; until it is
// set, the device's default stream.
void sf_gpu_stage_set_stream(sf_gpu_stage *st, uint32_t r, void *stream);
// Makes replica r's consumer stream wait for a batch's ready event, without
// blocking the host.
int sf_gpu_stage_wait(sf_gpu_stage *st, uint32_t r, void *ready, sf_err *e);
// The first CUDA error the hooks met (release cannot return one), or 0.
int sf_gpu_stage_error(sf_gpu_stage *st, sf_err *e);
// Copies and host-blocking waits done so far by the hooks, summed over
// replicas: reclaims that had to wait for a copy are counted apart.
void sf_gpu_stage_counts(sf_gpu_stage *st, uint64_t *copies, uint64_t *reclaims_waited);

void *sf_gpu_stage_alloc(void *arg, uint32_t r, uint32_t s, size_t bytes);
void sf_gpu_stage_free(void *arg, uint32_t r, uint32_t s, void *host);
int sf_gpu_stage_reclaim(void *arg, uint32_t r, uint32_t s, sf_err *e);
int sf_gpu_stage_publish(void *arg, uint32_t r, uint32_t s, const void *host, size_t bytes, void **device,
                         void **ready, sf_err *e);
void sf_gpu_stage_release(void *arg, uint32_t r, uint32_t s);

#endif
