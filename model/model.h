// model: the Keras stacked-LSTM model: its description (`--model` text),
// the layout of its parameters in one contiguous buffer, Keras'
// initialisers, and one replica's forward and backward pass on CPU built on
// the kernels. Tensors are named as Keras names them, so checkpoints load
// into Keras or PyTorch by name.
#ifndef SF_MODEL_H
#define SF_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "kernels/kernels.h"

enum sf_layer_kind { SF_LAYER_LSTM, SF_LAYER_DROPOUT, SF_LAYER_DENSE };

typedef struct {
    int kind;                         // enum sf_layer_kind
    uint32_t in, units;               // width of its input and output at each time step
    float rate;                       // dropout rate
    bool sequences;                   // its output has every time step (else only the last)
    char name[24];                    // Keras' name: lstm, lstm_1, dropout_2, dense, ...
    size_t kernel, recurrent, bias;   // offsets in the parameter buffer (lstm, dense)
} sf_layer;

enum { SF_MODEL_MAX_LAYERS = 32 };

typedef struct {
    sf_layer layer[SF_MODEL_MAX_LAYERS];
    uint32_t nlayers, inputs, outputs;
    size_t nparams;
} sf_model;

// The default model of ARCHITECTURE.md; the last dense width is the number
// of targets.
#define SF_MODEL_DEFAULT "lstm:180,dropout:0.2,lstm:180,dropout:0.2,lstm:180,dropout:0.2,dense"

// Parses "lstm:U,dropout:P,...,dense[:N]" for inputs features and outputs
// targets. Every LSTM but the last returns sequences; dense layers come after
// the last LSTM; the model ends with a dense layer of width outputs.
int sf_model_parse(sf_model *m, const char *spec, uint32_t inputs, uint32_t outputs, sf_err *e);
// The model as text sf_model_parse reads back (all widths spelled out).
void sf_model_format(const sf_model *m, char *buf, size_t len);
// Keras' initialisers, drawn from seed: kernels glorot_uniform, recurrent
// kernels orthogonal, biases zero but the LSTM forget gate's at 1.
void sf_model_init(const sf_model *m, float *params, uint64_t seed);

// Floating-point operations of one window's forward pass (multiply-adds
// count two); training (forward and backward) is about three times this.
double sf_model_flops(const sf_model *m, uint32_t window);

typedef struct {
    char name[48];  // "lstm_1/recurrent_kernel"
    size_t offset;  // in floats, in the parameter buffer
    uint32_t rank, shape[2];
} sf_tensor;
// The model's tensors in buffer order; returns their count (out may be NULL).
uint32_t sf_model_tensors(const sf_model *m, sf_tensor *out);

// One replica's activations for batches of up to `batch` windows of
// `window` steps, and the forward and backward pass over them on CPU.
typedef struct sf_cpu_replica sf_cpu_replica;
int sf_cpu_replica_open(sf_cpu_replica **out, const sf_model *m, uint32_t batch, uint32_t window, sf_err *e);
void sf_cpu_replica_close(sf_cpu_replica *r);
// Bytes a CPU replica holds for batches of up to batch windows: its weights,
// gradients and Adam state, and every part's activations (threads parts).
uint64_t sf_cpu_replica_memory(const sf_model *m, uint32_t batch, uint32_t window, uint32_t threads);
// Predictions (count, outputs) for x (count, window, inputs). training turns
// dropout on, with masks drawn from seed; first_row is x's first row in the
// whole batch when x is a part of it (the masks are the whole batch's).
const float *sf_cpu_replica_forward(sf_cpu_replica *r, const float *params, const float *x, uint32_t count,
                                    bool training, uint64_t seed, uint64_t first_row);
// After a forward pass on the same x: the MSE summed over the rows (Keras'
// mean over targets per row), and grads (nparams) of that sum divided by
// global_batch, as MirroredStrategy scales each replica's share.
double sf_cpu_replica_backward(sf_cpu_replica *r, float *grads, const float *params, const float *x,
                               const float *y, uint32_t count, uint32_t global_batch);

// ---- replicas on a backend ----

// A replica: the model's weights, gradients and Adam state (m, v) on one
// device, each one contiguous buffer of nparams floats, and its
// activations for batches of up to `batch` windows. A backend is the table of
// what a trainer does with replicas; the CPU one is here, the GPU one joins
// it with the same table.
typedef struct sf_replica sf_replica;

enum sf_precision {
    SF_PRECISION_FP32,  // float32 products throughout
    SF_PRECISION_TF32,  // GPU: float32 storage, tensor-core products with 10-bit mantissas (TensorFlow's default)
};

typedef struct {
    int device;        // the replica's GPU
    uint32_t threads;  // the CPU threads it may use
    int precision;     // enum sf_precision
    double timeout;    // seconds a wait on a collective (the all-reduce on the
                       // stream) may take: a peer died or hangs (0: no limit)
} sf_replica_opts;

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

typedef struct {
    const char *name;
    int (*open)(sf_replica **r, const sf_model *m, uint32_t batch, uint32_t window, const sf_replica_opts *o,
                sf_err *e);
    void (*close)(sf_replica *r);
    // Host copies into and out of the replica; w, m, v may each be NULL.
    int (*load)(sf_replica *r, const float *w, const float *m, const float *v, sf_err *e);
    int (*save)(sf_replica *r, float *w, float *m, float *v, sf_err *e);
    // Forward and backward (dropout on, masks from seed) on a batch where the
    // replica reads it (host memory on CPU): gradients of the summed row
    // losses / global_batch into its gradient buffer, *loss = the sum.
    int (*train_step)(sf_replica *r, const float *x, const float *y, uint32_t count, uint32_t global_batch,
                      uint64_t seed, double *loss, sf_err *e);
    // The contiguous gradient buffer (host memory on CPU), for the all-reduce.
    float *(*gradients)(sf_replica *r);
    // One Adam step with the gradient buffer as it is after the reduction.
    int (*apply)(sf_replica *r, const sf_adam *a, uint64_t step, sf_err *e);
    // Predictions (count, outputs) into host memory, dropout off.
    int (*predict)(sf_replica *r, float *out, const float *x, uint32_t count, sf_err *e);
    // The stream (a cudaStream_t) the replica computes on, which its input
    // copies must be ordered with; NULL for host replicas.
    void *(*stream)(sf_replica *r);
    // Summing gradients across replicas, when the backend does it itself
    // (NCCL): every replica's thread calls reduce(group, r) at the same
    // point of a step, and then each gradient buffer holds the sum. NULL:
    // the trainer sums the host buffers.
    // With world (NULL: this process alone) the sum spans every rank of a
    // job: rank 0 makes an id (reduce_id), every rank gets it, and each
    // opens its replicas as global replicas world->first ...
    int (*reduce_id)(sf_reduce_id *id, sf_err *e);
    int (*reduce_open)(void **group, sf_replica *const *reps, uint32_t replicas, const sf_reduce_world *world,
                       sf_err *e);
    int (*reduce)(void *group, uint32_t r, sf_err *e);
    // With no replica thread running; abort after a failed run.
    void (*reduce_close)(void *group, bool abort);
} sf_backend;

extern const sf_backend sf_backend_cpu;
// cuDNN, cuBLAS and NCCL on one GPU per replica (device: the GPU's index).
// Loaded on first use from the module seqfeed-gpu.so: those libraries are
// hundreds of megabytes, and only a run on GPUs should map them. The module
// is found through $SEQFEED_GPU_MODULE, next to the program, or where it is
// installed. NULL, with the reason in e, without one (or without CUDA).
const sf_backend *sf_backend_gpu(sf_err *e);

#endif
