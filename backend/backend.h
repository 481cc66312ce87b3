// backend: replicas of the model on a device, as a table of what the trainer
// does with them (sf_backend), one table per device kind:
//   cpu/   the model's forward and backward pass over the kernels, a
//          replica cut into parts on helper threads (sf_backend_cpu)
//   cuda/  cuDNN LSTM layers, cuBLAS dense layers, NCCL sums, the staging
//          of the pipeline's batches onto each GPU, and GPU discovery; built
//          as a module (seqfeed-gpu.so) that sf_backend_gpu loads on first
//          use, so that a run on CPU never maps cuDNN, cuBLAS or NCCL.
// Every function here works, and reports "no GPU", in a build without CUDA
// and on a machine without a driver.
#ifndef SF_BACKEND_H
#define SF_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "pipeline/pipeline.h"

// ---- the model on CPU: one batch's forward and backward pass ----

enum sf_precision {
    SF_PRECISION_FP32,  // float32 products throughout
    SF_PRECISION_TF32,  // GPU: float32 storage, tensor-core products with 10-bit mantissas (TensorFlow's default)
    SF_PRECISION_BF16,  // CPU: bfloat16 operands, float32 sums and storage (docs/TRAINING.md, "bf16")
};

// "fp32", "tf32", "bf16"
const char *sf_precision_name(enum sf_precision p);

// The activations of batches of up to `batch` windows of `window` steps, and
// the pass over them, in fp32 or bf16. The model is borrowed and must
// outlive the pass. A pass is used by one thread at a time.
typedef struct sf_cpu_pass sf_cpu_pass;
// 0, SF_ENOMEM, or SF_EUSAGE (tf32, or bf16 where there are no bf16
// products: the message says why); *out is NULL on failure. Free with
// sf_cpu_pass_close (NULL is ignored).
int sf_cpu_pass_open(sf_cpu_pass **out, const sf_model *m, uint32_t batch, uint32_t window,
                     enum sf_precision precision, sf_err *e);
void sf_cpu_pass_close(sf_cpu_pass *r);
// 0, or the first failure of a bf16 product since open (oneDNN out of
// memory): check it after a pass.
int sf_cpu_pass_status(const sf_cpu_pass *r, sf_err *e);
// Bytes a pass holds for batches of up to batch windows.
uint64_t sf_cpu_pass_bytes(const sf_model *m, uint32_t batch, uint32_t window, enum sf_precision precision);
// Predictions (count, outputs) for x (count windows of sf_model_x_len floats:
// (window, inputs), then the extra), in the pass's
// memory: valid until its next forward. training turns dropout on, with
// masks drawn from seed; first_row is x's first row in the whole batch when
// x is a part of it (the masks are the whole batch's).
const float *sf_cpu_pass_forward(sf_cpu_pass *r, const float *params, const float *x, uint32_t count, bool training,
                                 uint64_t seed, uint64_t first_row);
// Floats of every recurrent layer's Ur packed for the time steps' products
// (sf_recurrent_pack), in layer order.
size_t sf_cpu_pass_packed_floats(const sf_model *m);
// Their part made from params[first, end) into t (the slice of the weights
// a thread has just updated), which the rest of params leaves as it is; t
// starts zeroed.
void sf_cpu_pass_pack(const sf_model *m, float *t, const float *params, size_t first, size_t end);
// The packed kernels of the params the pass's forward and backward passes
// will get (t, borrowed; the caller remakes them whenever the params
// change), which several passes may share; NULL (at open): forward reads
// Ur as stored, and backward too (the GRU's, with sgemm's transpose flag)
// or the Ur^T it makes (the LSTM's). A bf16 pass packs its own either way.
void sf_cpu_pass_use_packed(sf_cpu_pass *r, const float *t);
// A backward pass's news that layer `layer`'s range of the gradient buffer
// (sf_model_layer_params) is final, top layer first, while the layers below
// are still to come: what lets their sum across ranks start early.
typedef void (*sf_layer_done)(void *arg, uint32_t layer);

// After a forward pass on the same x (y: m->values per row): the model's
// loss (m->loss) summed over the rows, and grads (nparams, overwritten) of
// that sum divided by global_batch, as MirroredStrategy scales each
// replica's share.
// done (NULL: none) is called with arg for each layer with parameters.
double sf_cpu_pass_backward(sf_cpu_pass *r, float *grads, const float *params, const float *x, const float *y,
                            uint32_t count, uint32_t global_batch, sf_layer_done done, void *arg);

// ---- replicas on a backend ----

// A replica: the model's weights, gradients and Adam state (m, v) on one
// device, each one contiguous buffer of nparams floats, and its activations
// for batches of up to `batch` windows.
typedef struct sf_replica sf_replica;

// How cuDNN runs an LSTM layer's recurrence on a GPU.
enum sf_rnn_algo {
    SF_RNN_STANDARD,          // CUDNN_RNN_ALGO_STANDARD: kernels per step
    SF_RNN_PERSISTENT,        // CUDNN_RNN_ALGO_PERSIST_STATIC: one kernel keeps the weights on chip
    SF_RNN_PERSISTENT_SMALL,  // CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H: the same for small hidden sizes
};

// "standard", "persistent", "persistent-small": --rnn-algo's words
const char *sf_rnn_algo_name(enum sf_rnn_algo a);

typedef struct {
    int device;                 // the replica's GPU
    uint32_t threads;           // the CPU threads it may use
    enum sf_precision precision;
    double timeout;             // seconds a wait on a collective (the all-reduce on the
                                // stream) may take: a peer died or hangs (0: no limit)
    enum sf_rnn_algo rnn_algo;  // GPU
    bool late_loss;             // GPU, on a backend with step_loss: train_step only queues
    bool cuda_graph;            // GPU, late: full batches replay the step captured in a CUDA graph
    bool overlap_reduce;        // GPU: each layer's NCCL sum starts when its gradients are final
    uint32_t parts, part_batch; // on a backend with train_parts: the most parts a batch is cut
                                // into, and the most windows a part holds (0: none)
    bool sum_parts;             // train_parts sums the parts itself (the job's one replica)
} sf_replica_opts;

// o's parts and part_batch for one of `replicas` replicas of the job that
// share a global batch of `batch` windows cut into `parts` parts
// (sf_replica_parts, sf_part_rows): the most a replica takes, the largest.
static inline void sf_replica_opts_parts(sf_replica_opts *o, uint32_t parts, uint32_t batch, uint32_t replicas) {
    o->parts = (parts + replicas - 1) / replicas, o->part_batch = (batch + parts - 1) / parts;
}

// The replicas of a job's ranks, for a backend that sums across them
// itself: this rank's are global replicas first .. first + replicas - 1 of
// total, and id is what the backend's reduce_id made on rank 0 (NCCL's
// unique id), broadcast to every rank.
typedef struct {
    unsigned char bytes[128];
} sf_reduce_id;
typedef struct {
    uint32_t first, total;
    sf_reduce_id id;
} sf_reduce_world;

// A backend's staging of the pipeline's ring onto its replicas' devices.
typedef struct sf_staging sf_staging;

// Every function returns 0 or a negative code with e filled, unless it says
// otherwise. A replica is used by one thread at a time.
typedef struct {
    const char *name;  // "cpu", "cuda"
    // A replica of m (borrowed: it outlives the replica) for batches of up
    // to batch windows of window steps; *r NULL on failure.
    int (*open)(sf_replica **r, const sf_model *m, uint32_t batch, uint32_t window, const sf_replica_opts *o,
                sf_err *e);
    void (*close)(sf_replica *r);  // NULL is ignored
    // Host copies into and out of the replica; w, m, v may each be NULL.
    int (*load)(sf_replica *r, const float *w, const float *m, const float *v, sf_err *e);
    int (*save)(sf_replica *r, float *w, float *m, float *v, sf_err *e);
    // Forward and backward (dropout on, masks from seed) on a batch where the
    // replica reads it (host memory on CPU, device memory on a GPU):
    // gradients of the summed row losses / global_batch into its gradient
    // buffer, *loss = the sum.
    int (*train_step)(sf_replica *r, const float *x, const float *y, uint32_t count, uint32_t global_batch,
                      uint64_t seed, double *loss, sf_err *e);
    // The contiguous gradient buffer (host memory on CPU), for the all-reduce.
    float *(*gradients)(sf_replica *r);
    // train_step on a batch cut into nparts parts (the pipeline's sf_batch:
    // count[j] rows each, back to back; part j's first row is row0[j] of the
    // global batch, which dropout's masks follow, so that a part's gradients
    // do not depend on which replica computes it): each part's gradients in
    // a buffer of its own (part_gradients; part 0's is the gradient buffer),
    // not summed, *loss the sum of the row losses. The trainer sums the
    // parts of every replica in the global batch's order; opened with
    // sum_parts (the job's only replica), the backend sums them in that
    // order into the gradient buffer itself, each layer as soon as every
    // part is done with it, and the other buffers are left as they are. NULL on a backend
    // that sums its batch itself (GPUs: one pass over the replica's rows).
    int (*train_parts)(sf_replica *r, const float *x, const float *y, uint32_t nparts, const uint32_t *count,
                       const uint32_t *row0, uint32_t global_batch, uint64_t seed, double *loss, sf_err *e);
    float *(*part_gradients)(sf_replica *r, uint32_t j);
    // During every later train_step (train_parts: when every part is done
    // with it), fn(arg, layer) once for each layer
    // with parameters, top first, from any of the replica's threads, when
    // that layer's part of the gradient buffer is final (fn NULL: none).
    // NULL on a backend whose buffer is final only when train_step returns.
    void (*on_layer_done)(sf_replica *r, sf_layer_done fn, void *arg);
    // One Adam step with the gradient buffer as it is after the reduction.
    int (*apply)(sf_replica *r, const sf_adam *a, uint64_t step, sf_err *e);
    // A replica opened with late_loss: its train_step queues the step on
    // the device and returns without *loss, apply skips the update on the
    // device when the loss or the summed gradients are not finite, and this
    // waits for the step's loss (computed early in the step: the device
    // still has the rest of it queued) and gives it. NULL: train_step's
    // *loss is final when it returns.
    int (*step_loss)(sf_replica *r, double *loss, sf_err *e);
    // Predictions (count, outputs) into host memory for x in host memory,
    // dropout off.
    int (*predict)(sf_replica *r, float *out, const float *x, uint32_t count, sf_err *e);
    // Host memory a replica opened with these arguments holds (what a
    // memory budget counts); device memory is not counted.
    uint64_t (*host_memory)(const sf_model *m, uint32_t batch, uint32_t window, const sf_replica_opts *o);
    // A CRC-32C of where the replica keeps its parameters (the buffer's size
    // and each Keras parameter's place in it), which every replica that a
    // reduce sums element by element must share; NULL when that is the
    // model's own layout (CPU).
    uint32_t (*layout_crc)(sf_replica *r);

    // Summing gradients across replicas, when the backend does it itself
    // (NCCL); NULL: the trainer sums the host buffers. Every replica's
    // thread calls reduce(group, r) at the same point of a step, and then
    // each gradient buffer holds the sum. With world (NULL: this process
    // alone) the sum spans every rank of a job: rank 0 makes an id
    // (reduce_id), every rank gets it, and each opens its replicas as global
    // replicas world->first ... reduce_close runs with no replica thread
    // running; abort after a failed run.
    int (*reduce_id)(sf_reduce_id *id, sf_err *e);
    int (*reduce_open)(void **group, sf_replica *const *reps, uint32_t replicas, const sf_reduce_world *world,
                       sf_err *e);
    int (*reduce)(void *group, uint32_t r, sf_err *e);
    void (*reduce_close)(void *group, bool abort);

    // Staging, when the replicas read device memory; NULL on CPU. Opens the
    // staging of a ring of `slots` slots per replica onto the replicas'
    // devices (borrowed: they outlive it), and fills *hooks, the pipeline's
    // stage hooks, with it as their arg: pinned host slots, one asynchronous
    // copy per batch on a copy stream, ordered with the replica's compute
    // stream by events, so that the host never waits for a copy.
    int (*staging_open)(sf_staging **out, sf_stage_ops *hooks, sf_replica *const *reps, uint32_t replicas,
                        uint32_t slots, sf_err *e);
    // Waits for every copy, then frees everything (NULL is ignored).
    void (*staging_close)(sf_staging *s);
    // Replica r's compute stream waits for batch b's copy (b->ready); the
    // host does not wait.
    int (*staging_wait)(sf_staging *s, uint32_t r, const sf_batch *b, sf_err *e);
    // Seconds replica r's stream spent in its last wait: the copy that
    // earlier work did not hide. Read it after the step (0 before).
    double (*staging_waited)(sf_staging *s, uint32_t r);
    // The first error the hooks met (a release cannot return one), or 0.
    int (*staging_error)(sf_staging *s, sf_err *e);
} sf_backend;

extern const sf_backend sf_backend_cpu;
// cuDNN, cuBLAS and NCCL on one GPU per replica (device: the GPU's index).
// Loaded on first use from the module seqfeed-gpu.so, found through
// $SEQFEED_GPU_MODULE, next to the program, or where it is installed.
// Returns the table (static: never freed), or NULL with the reason in e (if
// not NULL): no module, or a build without CUDA.
const sf_backend *sf_backend_gpu(sf_err *e);

// ---- GPUs: discovery ----

// True when this binary was compiled with the CUDA backend.
bool sf_gpu_built(void);
// Number of usable GPUs. 0 means "run on CPU"; then e (if not NULL) says why
// in one line (no driver, no device, built without CUDA). Never fails.
int sf_gpu_count(sf_err *e);
// Fills name (name_len bytes) and *memory (bytes) of device dev. Returns 0
// or SF_EINVAL.
int sf_gpu_describe(int dev, char *name, size_t name_len, size_t *memory, sf_err *e);
// Compute capability of device dev as 10 major + minor (90 for an H100 or
// H200), 0 when it cannot be had.
int sf_gpu_capability(int dev);
// Device dev's PCI bus id ("0000:3b:00.0", len bytes), which names one GPU
// whatever CUDA_VISIBLE_DEVICES numbers it; 0, or SF_EINVAL when it cannot
// be had.
int sf_gpu_bus_id(int dev, char *id, size_t len);

// ---- GPUs: staging (cuda/cuda_staging.cu, in the module and the GPU tests) ----
// Replica r lives on devices[r] and has a copy stream there; each slot of its
// ring a device buffer and two events: copied (the consumer's stream waits on
// it before reading the batch) and consumed (the next copy into the slot
// waits on it, so a batch is never overwritten while the consumer's queued
// work still reads it). The hooks take the stage as arg and have the shape of
// the pipeline's sf_stage_ops.
typedef struct sf_gpu_stage sf_gpu_stage;
int sf_gpu_stage_open(sf_gpu_stage **out, const int *devices, uint32_t replicas, uint32_t slots, sf_err *e);
// Waits for every copy, then frees everything (NULL is ignored).
void sf_gpu_stage_close(sf_gpu_stage *st);
// The stream (a cudaStream_t, borrowed) that consumes replica r's batches;
// until it is set, the device's default stream.
void sf_gpu_stage_set_stream(sf_gpu_stage *st, uint32_t r, void *stream);
// Makes replica r's consumer stream wait for a batch's ready event, without
// blocking the host; timing events around the wait measure it on the GPU.
int sf_gpu_stage_wait(sf_gpu_stage *st, uint32_t r, void *ready, sf_err *e);
// Seconds replica r's stream spent in its last wait (0 if it has not passed
// it yet).
double sf_gpu_stage_waited(sf_gpu_stage *st, uint32_t r);
// The first CUDA error the hooks met (release cannot return one), or 0.
int sf_gpu_stage_error(sf_gpu_stage *st, sf_err *e);
// Copies and host-blocking waits done so far by the hooks, summed over
// replicas: reclaims that had to wait for a copy are counted apart.
void sf_gpu_stage_counts(sf_gpu_stage *st, uint64_t *copies, uint64_t *reclaims_waited);
// The pipeline's stage hooks (sf_stage_ops), arg the stage.
void *sf_gpu_stage_alloc(void *arg, uint32_t r, uint32_t s, size_t bytes);
void sf_gpu_stage_free(void *arg, uint32_t r, uint32_t s, void *host);
int sf_gpu_stage_reclaim(void *arg, uint32_t r, uint32_t s, sf_err *e);
int sf_gpu_stage_publish(void *arg, uint32_t r, uint32_t s, const void *host, size_t bytes, void **device,
                         void **ready, sf_err *e);
void sf_gpu_stage_release(void *arg, uint32_t r, uint32_t s);

#endif
