// The CUDA backend: a replica on one GPU. Each Keras LSTM layer is a
// one-layer cuDNN RNN (so that dropout sits exactly where Keras puts it),
// with one input bias (CUDNN_RNN_SINGLE_INP_BIAS: Keras' single bias), batch
// major data (B,T,V); dense layers are cuBLAS products; dropout, the MSE
// gradient, the last-step slice and Adam are the kernels of
// kernels/cuda_kernels.cu, twins of the CPU ones; gradients are summed across
// GPUs with NCCL; the pipeline's batches reach each GPU through
// cuda_staging.cu. A Keras GRU layer is a cuDNN CUDNN_GRU with both biases
// (CUDNN_RNN_DOUBLE_BIAS: Keras' (2, 3U) bias, reset_after's form, which is
// cuDNN's); in fp32 and tf32 only (bf16 refuses it: see gpu_open).
//
// Parameters live on the device in the device's layout: each LSTM layer's
// cuDNN weight space, then each dense layer's kernel and bias as Keras lays
// them out. Adam and the all-reduce are element-wise, so they need no other
// layout; load and save permute to and from Keras' layout (perm).
//
// A step, with --deferred-loss on (late): train_step queues forward and
// backward, the loss's copy to the host and an event right after the
// forward pass; reduce queues NCCL's sum; apply queues a guard and Adam,
// which skips the update when the guard finds a non-finite loss or
// gradient; step_loss then waits for the loss's event only. With
// --cuda-graph on, a full batch's step is all of that captured once in a
// CUDA graph and replayed (train_step copies the batch in, apply launches).
//
// With --precision bf16 the LSTM layers are not cuDNN's (its RNN has no
// bf16 data) but the CPU's bf16 steps (docs/TRAINING.md, "bf16"): cuBLAS
// GemmEx on bf16 operands with fp32 sums, and the cell kernels of
// kernels/cuda_kernels.cu, in Keras' layout.
//
// Status: compiled in CI; not yet run on a GPU (tests/gpu/test_backend_gpu.c
// checks it against the CPU backend where one is found).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>  // header-only: ranges for Nsight Systems
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

extern "C" {
#include "backend/backend.h"
}

#define CUDA_OK(call, what)                                                                  \
    do {                                                                                     \
        cudaError_t rc_ = (call);                                                            \
        if (rc_ != cudaSuccess)                                                              \
            return sf_err_set(e, SF_EIO, "GPU %d: %s: %s", r->dev, what, cudaGetErrorString(rc_)); \
    } while (0)
#define DNN_OK(call, what)                                                                   \
    do {                                                                                     \
        cudnnStatus_t rc_ = (call);                                                          \
        if (rc_ != CUDNN_STATUS_SUCCESS)                                                     \
            return sf_err_set(e, SF_EIO, "GPU %d: %s: %s", r->dev, what, cudnnGetErrorString(rc_)); \
    } while (0)
#define BLAS_OK(call, what)                                                                  \
    do {                                                                                     \
        cublasStatus_t rc_ = (call);                                                         \
        if (rc_ != CUBLAS_STATUS_SUCCESS)                                                    \
            return sf_err_set(e, SF_EIO, "GPU %d: %s: cuBLAS status %d", r->dev, what, (int)rc_); \
    } while (0)
#define SF_OK(call)            \
    do {                       \
        int rc_ = (call);      \
        if (rc_) return rc_;   \
    } while (0)

typedef struct {
    cudnnRNNDescriptor_t rnn;
    cudnnRNNDataDescriptor_t xd, yd;
    cudnnTensorDescriptor_t hd;  // (1, B, U): the shape of hx and cx (zero: NULL pointers)
    size_t woff, wbytes;         // its weight space in the parameter buffer
    void *reserve;
    size_t reserve_bytes;
    uint32_t shaped;  // the batch size the descriptors describe (0: none yet)
} lstm_layer;

typedef struct {
    float *out, *dout;  // (B,T,units) or (B,units)
    float *seq, *dseq;  // LSTM: every step's output, and its gradient (B,T,U)
    float *mask;        // dropout
    const float *y;     // what the next layer reads
    lstm_layer lstm;
    size_t glo, ghi;         // LSTM, dense: its part of the parameter buffers
    cudaEvent_t grads_done;  // its gradients are final (overlapped all-reduce)
    // bf16 (our LSTM, not cuDNN's): the rounded operands, x and h
    // time-major (T,B,C) and (T,B,U), and the LSTM's gates (T,B,4U) and
    // cell (B,T,U) in fp32
    sf_bf16 *xq, *hq, *Wq, *Urq;
    float *gates, *c;
} layer_state;

// What a step's kernels read from device memory rather than as arguments,
// so that a captured step runs every step: dropout's seed, Adam's step size.
typedef struct {
    uint64_t seed;
    float alpha;
} step_values;
// Steps whose values may still be read: the host waits for each step's loss
// before it queues the step after next.
enum { VALUE_RING = 4 };
// cuBLAS' workspace (its guide asks 32 MiB on Hopper).
enum { BLAS_WORK = 32u << 20 };

typedef struct {
    const sf_model *m;
    int dev;
    uint32_t batch, window;
    cudaStream_t stream;
    cudnnHandle_t dnn;
    cublasHandle_t blas;
    cudnnDropoutDescriptor_t nodrop;
    void *drop_states;
    layer_state *ls;
    size_t nbuf;                // floats in the device parameter buffers
    float *w, *g, *m1, *v;      // device, nbuf each
    int64_t *perm;              // host: Keras index -> device index
    float *host;                // host image of a parameter buffer, nbuf
    int32_t *seq_lengths;       // device, batch entries of window
    int *host_lengths;
    float *ones;                // device, batch entries of 1 (bias broadcast and sums)
    void *work;
    size_t work_bytes;
    float *xin, *scratch;       // device: a host batch's x; dx of the first layer
    // device, with covariates (m->extra): the windows' rows apart from them
    // (B,T,inputs); the head's input, the layer below's output beside them,
    // and its gradient (B, head's in)
    float *xs, *cat, *dcat;
    int *series_idx;            // device, batch entries: each window's series (an embedding's)
    double *loss_dev, *loss_host;
    cudaEvent_t loss_ready;     // recorded after the loss's copy to loss_host
    bool late;                  // late_loss: train_step only queues, step_loss reads the loss
    int *bad;                   // device: the update's guard (late: a non-finite loss or gradient), sticky
    int *bad_host;              // pinned: its copy after each update
    bool told;                  // step_loss gave a non-finite loss: the host knows why updates stop
    cudnnRNNAlgo_t algo;
    step_values *values;        // device: the values the step's kernels read
    step_values *ring;          // pinned host: each step's, VALUE_RING steps in turn
    uint32_t turn;              // the step's place in the ring
    uint32_t global;            // the step's global batch
    void *blas_work;            // cuBLAS' workspace, its own so that a capture allocates nothing
    // CUDA graph: the whole step (forward, backward, all-reduce, guard,
    // Adam) on fixed buffers, captured at the first full batch and replayed
    // for every full batch of the same global batch.
    bool overlap;               // each layer's NCCL sum starts on comm_stream when its gradients are final
    cudaStream_t comm_stream;
    cudaEvent_t reduced;        // comm_stream's sums are done: the update may read them
    bool graphs;                // --cuda-graph on (and late)
    bool graph_step;            // this step runs as the graph: train_step only copied its batch in
    bool warm;                  // a full batch ran on streams: cuDNN, cuBLAS and NCCL set up, outside a capture
    bool capturing;
    float *yin;                 // device: the graph's targets (its x is xin)
    cudaGraphExec_t graph;
    uint32_t graph_global;      // the global batch the graph was captured with
    float *pred;                // device, (batch, outputs)
    bool tf32;         // tensor-core products (else FMA fp32)
    bool bf16;         // bf16 products on cuBLAS, our LSTM (docs/TRAINING.md, "bf16")
    // bf16 backward scratch, shared by the layers: dz of a step (B,4U),
    // dh_next and dc_next (B,U), dx time-major (T,B,C), and the rounded
    // gradients of every step (T,B,4U) or of a dense layer's output
    float *dz, *dh_next, *dc_next, *dx_tm;
    sf_bf16 *dq;
    ncclComm_t comm;   // its communicator, when it has peers
    double timeout;    // on a wait for a stream with a collective in it (0: none)
} gpu_replica;

static size_t out_size(const gpu_replica *r, const sf_layer *l) { return (l->sequences ? r->window : 1) * l->units; }

static void gpu_close(sf_replica *opaque) {
    gpu_replica *r = (gpu_replica *)opaque;
    if (!r) return;
    cudaSetDevice(r->dev);
    if (r->stream) cudaStreamSynchronize(r->stream);
    for (uint32_t i = 0; r->ls && i < r->m->nlayers; i++) {
        layer_state *s = &r->ls[i];
        cudaFree(s->out), cudaFree(s->dout), cudaFree(s->seq), cudaFree(s->dseq), cudaFree(s->mask);
        cudaFree(s->lstm.reserve);
        if (s->lstm.rnn) cudnnDestroyRNNDescriptor(s->lstm.rnn);
        if (s->lstm.xd) cudnnDestroyRNNDataDescriptor(s->lstm.xd);
        if (s->lstm.yd) cudnnDestroyRNNDataDescriptor(s->lstm.yd);
        if (s->lstm.hd) cudnnDestroyTensorDescriptor(s->lstm.hd);
        if (s->grads_done) cudaEventDestroy(s->grads_done);
        cudaFree(s->xq), cudaFree(s->hq), cudaFree(s->Wq), cudaFree(s->Urq), cudaFree(s->gates), cudaFree(s->c);
    }
    cudaFree(r->dz), cudaFree(r->dh_next), cudaFree(r->dc_next), cudaFree(r->dx_tm), cudaFree(r->dq);
    if (r->comm_stream) cudaStreamSynchronize(r->comm_stream), cudaStreamDestroy(r->comm_stream);
    if (r->reduced) cudaEventDestroy(r->reduced);
    cudaFree(r->w), cudaFree(r->g), cudaFree(r->m1), cudaFree(r->v), cudaFree(r->seq_lengths), cudaFree(r->ones);
    cudaFree(r->xs), cudaFree(r->cat), cudaFree(r->dcat), cudaFree(r->series_idx);
    cudaFree(r->work), cudaFree(r->xin), cudaFree(r->scratch), cudaFree(r->loss_dev), cudaFree(r->pred);
    cudaFree(r->drop_states), cudaFree(r->bad), cudaFree(r->values), cudaFree(r->yin), cudaFree(r->blas_work);
    cudaFreeHost(r->loss_host), cudaFreeHost(r->ring), cudaFreeHost(r->bad_host);
    if (r->graph) cudaGraphExecDestroy(r->graph);
    if (r->loss_ready) cudaEventDestroy(r->loss_ready);
    if (r->nodrop) cudnnDestroyDropoutDescriptor(r->nodrop);
    if (r->blas) cublasDestroy(r->blas);
    if (r->dnn) cudnnDestroy(r->dnn);
    if (r->stream) cudaStreamDestroy(r->stream);
    free(r->ls), free(r->perm), free(r->host), free(r->host_lengths);
    free(r);
}

static int alloc_dev(gpu_replica *r, float **p, size_t floats, sf_err *e) {
    CUDA_OK(cudaMalloc((void **)p, (floats ? floats : 1) * sizeof(float)), "cudaMalloc");
    return 0;
}

// The batch's shape for the data and state descriptors of one LSTM layer.
static int lstm_shape(gpu_replica *r, const sf_layer *l, lstm_layer *k, uint32_t n, sf_err *e) {
    if (k->shaped == n) return 0;  // every full batch: set once
    DNN_OK(cudnnSetRNNDataDescriptor(k->xd, CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED,
                                     (int)r->window, (int)n, (int)l->in, r->host_lengths, NULL),
           "cudnnSetRNNDataDescriptor (x)");
    DNN_OK(cudnnSetRNNDataDescriptor(k->yd, CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED,
                                     (int)r->window, (int)n, (int)l->units, r->host_lengths, NULL),
           "cudnnSetRNNDataDescriptor (y)");
    int dims[3] = {1, (int)n, (int)l->units}, strides[3] = {(int)(n * l->units), (int)l->units, 1};
    DNN_OK(cudnnSetTensorNdDescriptor(k->hd, CUDNN_DATA_FLOAT, 3, dims, strides), "cudnnSetTensorNdDescriptor");
    k->shaped = n;
    return 0;
}

// A cuDNN call of layer l's recurrence that failed; a persistent algorithm
// has limits (hidden size, batch, compute capability) the standard one has not.
static int rnn_failed(const gpu_replica *r, const sf_layer *l, const char *what, cudnnStatus_t st, sf_err *e) {
    return sf_err_set(e, SF_EIO, "GPU %d: %s (layer %s, %u units, batch %u): %s%s", r->dev, what, l->name, l->units,
                      r->batch, cudnnGetErrorString(st),
                      r->algo == CUDNN_RNN_ALGO_STANDARD ? "" : " (hint: --rnn-algo standard)");
}

// One cuDNN RNN per LSTM or GRU layer; its weight space's size and, from
// cudnnGetRNNWeightParams, where each gate's matrices and bias sit in it.
static int open_lstm(gpu_replica *r, const sf_layer *l, lstm_layer *k, sf_err *e) {
    DNN_OK(cudnnCreateRNNDescriptor(&k->rnn), "cudnnCreateRNNDescriptor");
    DNN_OK(cudnnCreateRNNDataDescriptor(&k->xd), "cudnnCreateRNNDataDescriptor");
    DNN_OK(cudnnCreateRNNDataDescriptor(&k->yd), "cudnnCreateRNNDataDescriptor");
    DNN_OK(cudnnCreateTensorDescriptor(&k->hd), "cudnnCreateTensorDescriptor");
    bool gru = l->kind == SF_LAYER_GRU;
    cudnnStatus_t st = cudnnSetRNNDescriptor_v8(k->rnn, r->algo, gru ? CUDNN_GRU : CUDNN_LSTM,
                                                gru ? CUDNN_RNN_DOUBLE_BIAS : CUDNN_RNN_SINGLE_INP_BIAS,
                                                CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT,
                                                CUDNN_DATA_FLOAT,
                                                // TF32 comes with the default math for fp32 data (ALLOW_CONVERSION
                                                // would mean fp16 products); FMA math is plain fp32.
                                                r->tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH, (int32_t)l->in,
                                                (int32_t)l->units, (int32_t)l->units, 1, r->nodrop,
                                                CUDNN_RNN_PADDED_IO_ENABLED);
    if (st != CUDNN_STATUS_SUCCESS) return rnn_failed(r, l, "cudnnSetRNNDescriptor_v8", st, e);
    DNN_OK(cudnnGetRNNWeightSpaceSize(r->dnn, k->rnn, &k->wbytes), "cudnnGetRNNWeightSpaceSize");
    SF_OK(lstm_shape(r, l, k, r->batch, e));
    // The workspace serves training and inference (predict, validation):
    // the larger of the two.
    size_t work = 0, infer_work = 0, infer_reserve = 0;
    DNN_OK(cudnnGetRNNTempSpaceSizes(r->dnn, k->rnn, CUDNN_FWD_MODE_TRAINING, k->xd, &work, &k->reserve_bytes),
           "cudnnGetRNNTempSpaceSizes (training)");
    DNN_OK(cudnnGetRNNTempSpaceSizes(r->dnn, k->rnn, CUDNN_FWD_MODE_INFERENCE, k->xd, &infer_work, &infer_reserve),
           "cudnnGetRNNTempSpaceSizes (inference)");
    if (infer_work > work) work = infer_work;
    if (work > r->work_bytes) r->work_bytes = work;
    CUDA_OK(cudaMalloc(&k->reserve, k->reserve_bytes ? k->reserve_bytes : 1), "cudaMalloc (reserve space)");
    return 0;
}

// Keras index -> device index for one LSTM layer, from the addresses cuDNN
// gives for gate g's input matrix (linLayerID g, (U, in) row-major), its
// recurrent matrix (4 + g, (U, U)) and its bias (the input bias of g).
static int map_lstm(gpu_replica *r, const sf_layer *l, const lstm_layer *k, sf_err *e) {
    size_t U = l->units, I = l->in;
    float *base = r->w + k->woff;
    cudnnTensorDescriptor_t md, bd;
    DNN_OK(cudnnCreateTensorDescriptor(&md), "cudnnCreateTensorDescriptor");
    DNN_OK(cudnnCreateTensorDescriptor(&bd), "cudnnCreateTensorDescriptor");
    int rc = 0;
    for (int id = 0; id < 8 && !rc; id++) {
        void *ma = NULL, *ba = NULL;
        cudnnStatus_t st = cudnnGetRNNWeightParams(r->dnn, k->rnn, 0, k->wbytes, base, id, md, &ma, bd, &ba);
        if (st != CUDNN_STATUS_SUCCESS || !ma) {
            rc = sf_err_set(e, SF_EIO, "GPU %d: cudnnGetRNNWeightParams (layer %s, matrix %d): %s", r->dev, l->name,
                            id, cudnnGetErrorString(st));
            break;
        }
        size_t mo = k->woff + (size_t)((float *)ma - base), g = (size_t)(id % 4);
        if (id < 4) {
            for (size_t u = 0; u < U; u++)
                for (size_t i = 0; i < I; i++) r->perm[l->kernel + i * 4 * U + g * U + u] = (int64_t)(mo + u * I + i);
            if (!ba) {
                rc = sf_err_set(e, SF_EIO, "GPU %d: cuDNN gave layer %s no input bias", r->dev, l->name);
                break;
            }
            size_t bo = k->woff + (size_t)((float *)ba - base);
            for (size_t u = 0; u < U; u++) r->perm[l->bias + g * U + u] = (int64_t)(bo + u);
        } else {
            for (size_t u = 0; u < U; u++)
                for (size_t j = 0; j < U; j++) r->perm[l->recurrent + j * 4 * U + g * U + u] = (int64_t)(mo + u * U + j);
        }
    }
    cudnnDestroyTensorDescriptor(md);
    cudnnDestroyTensorDescriptor(bd);
    return rc;
}

// The same for a GRU layer. cuDNN's linear layers 0, 1, 2 are the input
// matrices of gates r, z, h' (Keras' gates 1, 0, 2), 3, 4, 5 the recurrent
// ones, each with its own bias: Keras' bias row 0 for the input's, row 1
// for the recurrent's.
static int map_gru(gpu_replica *r, const sf_layer *l, const lstm_layer *k, sf_err *e) {
    static const size_t keras_gate[3] = {1, 0, 2};
    size_t U = l->units, I = l->in, G = 3 * U;
    float *base = r->w + k->woff;
    cudnnTensorDescriptor_t md, bd;
    DNN_OK(cudnnCreateTensorDescriptor(&md), "cudnnCreateTensorDescriptor");
    DNN_OK(cudnnCreateTensorDescriptor(&bd), "cudnnCreateTensorDescriptor");
    int rc = 0;
    for (int id = 0; id < 6 && !rc; id++) {
        void *ma = NULL, *ba = NULL;
        cudnnStatus_t st = cudnnGetRNNWeightParams(r->dnn, k->rnn, 0, k->wbytes, base, id, md, &ma, bd, &ba);
        if (st != CUDNN_STATUS_SUCCESS || !ma || !ba) {
            rc = sf_err_set(e, SF_EIO, "GPU %d: cudnnGetRNNWeightParams (layer %s, matrix %d): %s", r->dev, l->name,
                            id, st != CUDNN_STATUS_SUCCESS ? cudnnGetErrorString(st) : "no matrix or bias");
            break;
        }
        size_t mo = k->woff + (size_t)((float *)ma - base), bo = k->woff + (size_t)((float *)ba - base);
        size_t g = keras_gate[id % 3], rows = id < 3 ? I : U, at = id < 3 ? l->kernel : l->recurrent;
        for (size_t u = 0; u < U; u++)
            for (size_t i = 0; i < rows; i++) r->perm[at + i * G + g * U + u] = (int64_t)(mo + u * rows + i);
        for (size_t u = 0; u < U; u++) r->perm[l->bias + (id < 3 ? 0 : G) + g * U + u] = (int64_t)(bo + u);
    }
    cudnnDestroyTensorDescriptor(md);
    cudnnDestroyTensorDescriptor(bd);
    return rc;
}

// The bf16 scratch the layers share, in values: the largest of each.
typedef struct {
    size_t dz, dh, dx, dq;
} bf16_scratch;

static int alloc_bf16(gpu_replica *r, sf_bf16 **p, size_t n, sf_err *e) {
    CUDA_OK(cudaMalloc((void **)p, (n ? n : 1) * sizeof(sf_bf16)), "cudaMalloc (bf16 operands)");
    return 0;
}

// Layer l's rounded operands and, for an LSTM, its gates and cell; what it
// needs of the shared scratch into bf.
static int open_bf16(gpu_replica *r, const sf_layer *l, layer_state *s, bf16_scratch *bf, sf_err *e) {
    size_t B = r->batch, T = r->window, C = l->in, U = l->units, G = 4 * U;
#define GROW(field, n) bf->field = bf->field > (n) ? bf->field : (n)
    if (l->kind == SF_LAYER_DENSE) {
        SF_OK(alloc_bf16(r, &s->xq, B * C, e));
        SF_OK(alloc_bf16(r, &s->Wq, C * U, e));
        GROW(dq, B * U);
        return 0;
    }
    SF_OK(alloc_bf16(r, &s->xq, T * B * C, e));
    SF_OK(alloc_bf16(r, &s->hq, T * B * U, e));
    SF_OK(alloc_bf16(r, &s->Wq, C * G, e));
    SF_OK(alloc_bf16(r, &s->Urq, U * G, e));
    SF_OK(alloc_dev(r, &s->gates, T * B * G, e));
    SF_OK(alloc_dev(r, &s->c, B * T * U, e));
    SF_OK(alloc_dev(r, &s->seq, B * T * U, e));
    SF_OK(alloc_dev(r, &s->dseq, B * T * U, e));
    GROW(dz, B * G);
    GROW(dh, B * U);
    GROW(dx, T * B * C);
    GROW(dq, T * B * G);
#undef GROW
    return 0;
}

static int open_replica(gpu_replica *r, sf_err *e) {
    const sf_model *m = r->m;
    size_t B = r->batch, T = r->window;
    CUDA_OK(cudaSetDevice(r->dev), "cudaSetDevice");
    CUDA_OK(cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking), "cudaStreamCreate");
    // The sums first where both streams have work: the backward pass waits for none of them.
    int lowest = 0, highest = 0;
    CUDA_OK(cudaDeviceGetStreamPriorityRange(&lowest, &highest), "cudaDeviceGetStreamPriorityRange");
    CUDA_OK(cudaStreamCreateWithPriority(&r->comm_stream, cudaStreamNonBlocking, highest), "cudaStreamCreate (sums)");
    CUDA_OK(cudaEventCreateWithFlags(&r->reduced, cudaEventDisableTiming), "cudaEventCreate");
    DNN_OK(cudnnCreate(&r->dnn), "cudnnCreate");
    DNN_OK(cudnnSetStream(r->dnn, r->stream), "cudnnSetStream");
    BLAS_OK(cublasCreate(&r->blas), "cublasCreate");
    BLAS_OK(cublasSetStream(r->blas, r->stream), "cublasSetStream");
    // fp32: full products, the CPU backend's numbers within float rounding.
    // bf16 products take the tensor cores (default math).
    BLAS_OK(cublasSetMathMode(r->blas, r->tf32  ? CUBLAS_TF32_TENSOR_OP_MATH
                                       : r->bf16 ? CUBLAS_DEFAULT_MATH
                                                 : CUBLAS_PEDANTIC_MATH),
            "cublasSetMathMode");
    CUDA_OK(cudaMalloc(&r->blas_work, BLAS_WORK), "cudaMalloc (cuBLAS workspace)");
    BLAS_OK(cublasSetWorkspace(r->blas, r->blas_work, BLAS_WORK), "cublasSetWorkspace");
    size_t states = 0;
    DNN_OK(cudnnCreateDropoutDescriptor(&r->nodrop), "cudnnCreateDropoutDescriptor");
    DNN_OK(cudnnDropoutGetStatesSize(r->dnn, &states), "cudnnDropoutGetStatesSize");
    CUDA_OK(cudaMalloc(&r->drop_states, states ? states : 1), "cudaMalloc (dropout states)");
    DNN_OK(cudnnSetDropoutDescriptor(r->nodrop, r->dnn, 0.0f, r->drop_states, states, 0), "cudnnSetDropoutDescriptor");
    r->host_lengths = (int *)malloc(B * sizeof(int));
    r->ls = (layer_state *)calloc(m->nlayers, sizeof *r->ls);
    r->perm = (int64_t *)malloc((m->nparams ? m->nparams : 1) * sizeof *r->perm);
    if (!r->host_lengths || !r->ls || !r->perm) return sf_err_set(e, SF_ENOMEM, "out of memory");
    for (size_t b = 0; b < B; b++) r->host_lengths[b] = (int)T;
    CUDA_OK(cudaMalloc((void **)&r->seq_lengths, B * sizeof(int32_t)), "cudaMalloc");
    CUDA_OK(cudaMemcpyAsync(r->seq_lengths, r->host_lengths, B * sizeof(int32_t), cudaMemcpyHostToDevice, r->stream),
            "cudaMemcpyAsync");
    // Layers: descriptors, activations, and the parameter layout.
    size_t off = 0, widest = m->inputs;
    bf16_scratch bf = {};
    for (uint32_t i = 0; i < m->nlayers; i++) {
        const sf_layer *l = &m->layer[i];
        layer_state *s = &r->ls[i];
        size_t n = B * out_size(r, l);
        SF_OK(alloc_dev(r, &s->out, n, e));
        SF_OK(alloc_dev(r, &s->dout, n, e));
        if (l->in > widest) widest = l->in;
        s->glo = off;
        if (sf_layer_recurrent(l) && !r->bf16) {
            SF_OK(open_lstm(r, l, &s->lstm, e));
            SF_OK(alloc_dev(r, &s->seq, B * T * l->units, e));
            SF_OK(alloc_dev(r, &s->dseq, B * T * l->units, e));
            s->lstm.woff = off;
            off += (s->lstm.wbytes / sizeof(float) + 63) & ~(size_t)63;  // 256-byte aligned spaces
        } else if (l->kind == SF_LAYER_DROPOUT) {
            SF_OK(alloc_dev(r, &s->mask, n, e));
        } else {  // dense, and bf16's LSTM: Keras' layout
            if (r->bf16) SF_OK(open_bf16(r, l, s, &bf, e));
            size_t lo, hi;
            sf_model_layer_params(m, i, &lo, &hi);
            for (size_t k = lo; k < hi; k++) r->perm[k] = (int64_t)(off + k - lo);
            off += (hi - lo + 63) & ~(size_t)63;
        }
        s->ghi = off;
        if (l->kind != SF_LAYER_DROPOUT)
            CUDA_OK(cudaEventCreateWithFlags(&s->grads_done, cudaEventDisableTiming), "cudaEventCreate");
    }
    r->nbuf = off;
    SF_OK(alloc_dev(r, &r->w, off, e));
    SF_OK(alloc_dev(r, &r->g, off, e));
    SF_OK(alloc_dev(r, &r->m1, off, e));
    SF_OK(alloc_dev(r, &r->v, off, e));
    // Padding between spaces never moves: zero weights, gradients and state.
    // Everything on the replica's own (non-blocking) stream: the legacy
    // stream's cudaMemset and cudaMemcpy are not ordered with it.
    CUDA_OK(cudaMemsetAsync(r->w, 0, off * sizeof(float), r->stream), "cudaMemsetAsync");
    CUDA_OK(cudaMemsetAsync(r->g, 0, off * sizeof(float), r->stream), "cudaMemsetAsync");
    CUDA_OK(cudaMemsetAsync(r->m1, 0, off * sizeof(float), r->stream), "cudaMemsetAsync");
    CUDA_OK(cudaMemsetAsync(r->v, 0, off * sizeof(float), r->stream), "cudaMemsetAsync");
    for (uint32_t i = 0; i < m->nlayers && !r->bf16; i++)
        if (m->layer[i].kind == SF_LAYER_LSTM) SF_OK(map_lstm(r, &m->layer[i], &r->ls[i].lstm, e));
        else if (m->layer[i].kind == SF_LAYER_GRU) SF_OK(map_gru(r, &m->layer[i], &r->ls[i].lstm, e));
    if (r->bf16) {
        SF_OK(alloc_dev(r, &r->dz, bf.dz, e));
        SF_OK(alloc_dev(r, &r->dh_next, bf.dh, e));
        SF_OK(alloc_dev(r, &r->dc_next, bf.dh, e));
        SF_OK(alloc_dev(r, &r->dx_tm, bf.dx, e));
        CUDA_OK(cudaMalloc((void **)&r->dq, (bf.dq ? bf.dq : 1) * sizeof(sf_bf16)), "cudaMalloc (bf16 gradients)");
    }
    size_t image = off > B ? off : B;  // also holds the ones below
    if (!(r->host = (float *)malloc((image ? image : 1) * sizeof(float)))) return sf_err_set(e, SF_ENOMEM, "out of memory");
    CUDA_OK(cudaMalloc(&r->work, r->work_bytes ? r->work_bytes : 1), "cudaMalloc (work space)");
    SF_OK(alloc_dev(r, &r->ones, B, e));
    for (size_t b = 0; b < B; b++) r->host[b] = 1.0f;  // the host image is free until load
    CUDA_OK(cudaMemcpyAsync(r->ones, r->host, B * sizeof(float), cudaMemcpyHostToDevice, r->stream), "cudaMemcpyAsync");
    SF_OK(alloc_dev(r, &r->xin, B * sf_model_x_len(m, r->window), e));
    if (m->extra) {
        SF_OK(alloc_dev(r, &r->xs, B * T * m->inputs, e));
        SF_OK(alloc_dev(r, &r->cat, B * m->layer[m->head].in, e));
        SF_OK(alloc_dev(r, &r->dcat, B * m->layer[m->head].in, e));
        CUDA_OK(cudaMalloc((void **)&r->series_idx, B * sizeof(int)), "cudaMalloc");
    }
    SF_OK(alloc_dev(r, &r->scratch, B * T * widest, e));
    SF_OK(alloc_dev(r, &r->pred, B * m->outputs, e));
    CUDA_OK(cudaMalloc((void **)&r->loss_dev, sizeof(double)), "cudaMalloc");
    CUDA_OK(cudaHostAlloc((void **)&r->loss_host, sizeof(double), cudaHostAllocDefault), "cudaHostAlloc");
    CUDA_OK(cudaEventCreateWithFlags(&r->loss_ready, cudaEventDisableTiming), "cudaEventCreate");
    CUDA_OK(cudaMalloc((void **)&r->bad, sizeof *r->bad), "cudaMalloc");
    CUDA_OK(cudaMemsetAsync(r->bad, 0, sizeof *r->bad, r->stream), "cudaMemsetAsync");
    CUDA_OK(cudaHostAlloc((void **)&r->bad_host, sizeof *r->bad_host, cudaHostAllocDefault), "cudaHostAlloc");
    *r->bad_host = 0;
    CUDA_OK(cudaMalloc((void **)&r->values, sizeof *r->values), "cudaMalloc");
    CUDA_OK(cudaHostAlloc((void **)&r->ring, VALUE_RING * sizeof *r->ring, cudaHostAllocDefault), "cudaHostAlloc");
    SF_OK(alloc_dev(r, &r->yin, B * m->values, e));
    CUDA_OK(cudaStreamSynchronize(r->stream), "cudaStreamSynchronize");  // r->host is reused by load
    return 0;
}

static int gpu_open(sf_replica **out, const sf_model *m, uint32_t batch, uint32_t window, const sf_replica_opts *o,
                    sf_err *e) {
    *out = NULL;
    gpu_replica *r = (gpu_replica *)calloc(1, sizeof *r);
    if (!r) return sf_err_set(e, SF_ENOMEM, "out of memory for a replica");
    r->m = m, r->dev = o->device, r->timeout = o->timeout, r->batch = batch, r->window = window;
    r->tf32 = o->precision == SF_PRECISION_TF32, r->bf16 = o->precision == SF_PRECISION_BF16;
    r->late = o->late_loss, r->graphs = o->late_loss && o->cuda_graph;
    r->overlap = o->overlap_reduce;
    static const cudnnRNNAlgo_t algos[] = {[SF_RNN_STANDARD] = CUDNN_RNN_ALGO_STANDARD,
                                           [SF_RNN_PERSISTENT] = CUDNN_RNN_ALGO_PERSIST_STATIC,
                                           [SF_RNN_PERSISTENT_SMALL] = CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H};
    r->algo = algos[o->rnn_algo];
    // bf16's recurrent layers are seqfeed's own LSTM kernels; a GRU has
    // cuDNN's alone, whose RNN has no bf16 data.
    for (uint32_t i = 0; r->bf16 && i < m->nlayers; i++)
        if (m->layer[i].kind == SF_LAYER_GRU) {
            free(r);
            return sf_err_set(e, SF_EUSAGE, "--precision bf16: GPUs run a GRU (layer %s) in fp32 or tf32 only; use "
                              "--precision fp32 or tf32, or --gpus none for the CPU's bf16", m->layer[i].name);
        }
    int rc = open_replica(r, e);
    if (rc) {
        gpu_close((sf_replica *)r);
        return rc;
    }
    *out = (sf_replica *)r;
    return 0;
}

// A host buffer in Keras' layout to a device buffer in the device's.
// On the replica's stream, waited for: r->host is reused at once.
static int upload(gpu_replica *r, float *dst, const float *src, sf_err *e) {
    memset(r->host, 0, r->nbuf * sizeof(float));
    for (size_t k = 0; k < r->m->nparams; k++) r->host[r->perm[k]] = src[k];
    CUDA_OK(cudaMemcpyAsync(dst, r->host, r->nbuf * sizeof(float), cudaMemcpyHostToDevice, r->stream), "cudaMemcpyAsync");
    CUDA_OK(cudaStreamSynchronize(r->stream), "cudaStreamSynchronize");
    return 0;
}

static int download(gpu_replica *r, float *dst, const float *src, sf_err *e) {
    CUDA_OK(cudaMemcpyAsync(r->host, src, r->nbuf * sizeof(float), cudaMemcpyDeviceToHost, r->stream), "cudaMemcpyAsync");
    CUDA_OK(cudaStreamSynchronize(r->stream), "cudaStreamSynchronize");
    for (size_t k = 0; k < r->m->nparams; k++) dst[k] = r->host[r->perm[k]];
    return 0;
}

// Late, a finite loss with a gradient that was not: the guard skipped the
// update, and every later one, without the host knowing (a non-finite loss
// the host sees, and stops on). The guard's copy is complete once a later
// step's loss is, or the stream is.
static int check_guard(const gpu_replica *r, sf_err *e) {
    if (!r->late || !*r->bad_host || r->told) return 0;
    return sf_err_set(e, SF_EINVAL, "GPU %d: a summed gradient was not finite (inf or NaN) with a finite loss: the "
                      "update of that step and of every step after it was skipped, and training stopped (hint: a "
                      "lower learning rate, or check the data for extreme values)", r->dev);
}

static int gpu_load(sf_replica *opaque, const float *w, const float *m, const float *v, sf_err *e) {
    gpu_replica *r = (gpu_replica *)opaque;
    CUDA_OK(cudaSetDevice(r->dev), "cudaSetDevice");
    CUDA_OK(cudaStreamSynchronize(r->stream), "cudaStreamSynchronize");
    if (w) SF_OK(upload(r, r->w, w, e));
    if (m) SF_OK(upload(r, r->m1, m, e));
    if (v) SF_OK(upload(r, r->v, v, e));
    return 0;
}

static int gpu_save(sf_replica *opaque, float *w, float *m, float *v, sf_err *e) {
    gpu_replica *r = (gpu_replica *)opaque;
    CUDA_OK(cudaSetDevice(r->dev), "cudaSetDevice");
    if (w) SF_OK(download(r, w, r->w, e));
    if (m) SF_OK(download(r, m, r->m1, e));
    if (v) SF_OK(download(r, v, r->v, e));
    return check_guard(r, e);  // the stream is done: the last step's guard is in
}

// Y (n,O) = X (n,I) W (I,O) + b, row-major, as column-major Y^T = W^T X^T.
static int dense_forward(gpu_replica *r, float *y, const float *x, const float *w, const float *b, int n, int I, int O,
                         sf_err *e) {
    const float one = 1.0f, zero = 0.0f;
    // The bias in every row: b 1^T, a product of depth one.
    BLAS_OK(cublasSgemm(r->blas, CUBLAS_OP_N, CUBLAS_OP_N, O, n, 1, &one, b, O, r->ones, 1, &zero, y, O), "dense bias");
    BLAS_OK(cublasSgemm(r->blas, CUBLAS_OP_N, CUBLAS_OP_N, O, n, I, &one, w, O, x, I, &one, y, O), "dense forward");
    return 0;
}

// ---- bf16: the layers as sf_lstm_forward_bf16 and its kin compute them,
// on cuBLAS' bf16 products with fp32 sums ----

// C (M,N) = op(A) op(B) (+ C when acc), row-major with leading dimensions,
// as the column-major C^T = op(B)^T op(A)^T.
static int gemm_bf16(gpu_replica *r, bool ta, bool tb, size_t M, size_t N, size_t K, const sf_bf16 *A, size_t lda,
                     const sf_bf16 *B, size_t ldb, bool acc, float *C, size_t ldc, const char *what, sf_err *e) {
    const float one = 1.0f, zero = 0.0f;
    BLAS_OK(cublasGemmEx(r->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)N, (int)M,
                         (int)K, &one, B, CUDA_R_16BF, (int)ldb, A, CUDA_R_16BF, (int)lda, acc ? &one : &zero, C,
                         CUDA_R_32F, (int)ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            what);
    return 0;
}

// As sf_lstm_forward_bf16: in (B,T,C) batch-major, h into s->seq.
static int lstm_forward_bf16(gpu_replica *r, const sf_layer *l, layer_state *s, const float *in, size_t B, sf_err *e) {
    size_t T = r->window, C = l->in, U = l->units, G = 4 * U;
    cudaStream_t st = r->stream;
    const float *W = r->w + r->perm[l->kernel], *Ur = r->w + r->perm[l->recurrent], *b = r->w + r->perm[l->bias];
    SF_OK(sf_gpu_bf16_round(s->Wq, W, C * G, st, e));
    SF_OK(sf_gpu_bf16_round(s->Urq, Ur, U * G, st, e));
    SF_OK(sf_gpu_bf16_round_time_major(s->xq, in, B, T, C, st, e));
    SF_OK(sf_gpu_rows_fill(s->gates, b, B * T, G, st, e));
    SF_OK(gemm_bf16(r, false, false, B * T, G, C, s->xq, C, s->Wq, G, true, s->gates, G, "LSTM input projection", e));
    for (size_t t = 0; t < T; t++) {
        float *z = s->gates + t * B * G;  // (B,4U), time t
        if (t > 0) SF_OK(gemm_bf16(r, false, false, B, G, U, s->hq + (t - 1) * B * U, U, s->Urq, G, true, z, G,
                                   "LSTM recurrent product", e));
        SF_OK(sf_gpu_lstm_cell(s->seq, s->c, z, s->hq + t * B * U, B, T, U, t, st, e));
    }
    return 0;
}

// As sf_lstm_backward_bf16: dh (B,T,U); dx (B,T,C) when there is one.
static int lstm_backward_bf16(gpu_replica *r, const sf_layer *l, layer_state *s, const float *dh, float *dx, size_t B,
                              sf_err *e) {
    size_t T = r->window, C = l->in, U = l->units, G = 4 * U;
    cudaStream_t st = r->stream;
    float *dW = r->g + r->perm[l->kernel], *dUr = r->g + r->perm[l->recurrent], *db = r->g + r->perm[l->bias];
    CUDA_OK(cudaMemsetAsync(r->dh_next, 0, B * U * sizeof(float), st), "cudaMemsetAsync");
    CUDA_OK(cudaMemsetAsync(r->dc_next, 0, B * U * sizeof(float), st), "cudaMemsetAsync");
    CUDA_OK(cudaMemsetAsync(db, 0, G * sizeof(float), st), "cudaMemsetAsync");
    for (size_t t = T; t-- > 0;) {
        sf_bf16 *dzq = r->dq + t * B * G;
        SF_OK(sf_gpu_lstm_cell_backward(r->dz, dzq, r->dc_next, s->gates + t * B * G, s->c, dh, r->dh_next, B, T, U,
                                        t, st, e));
        SF_OK(sf_gpu_rows_add(db, r->dz, B, G, st, e));
        // dh_{t-1} = dz_t Ur^T
        if (t > 0) SF_OK(gemm_bf16(r, false, true, B, U, G, dzq, G, s->Urq, G, false, r->dh_next, U, "LSTM dh", e));
    }
    SF_OK(gemm_bf16(r, true, false, C, G, B * T, s->xq, C, r->dq, G, false, dW, G, "LSTM dW", e));
    // dUr = sum over t >= 1 of h_{t-1}^T dz_t
    if (T > 1) SF_OK(gemm_bf16(r, true, false, U, G, (T - 1) * B, s->hq, U, r->dq + B * G, G, false, dUr, G, "LSTM dUr", e));
    else CUDA_OK(cudaMemsetAsync(dUr, 0, U * G * sizeof(float), st), "cudaMemsetAsync");
    if (!dx) return 0;
    SF_OK(gemm_bf16(r, false, true, B * T, C, G, r->dq, G, s->Wq, G, false, r->dx_tm, C, "LSTM dx", e));
    return sf_gpu_batch_major(dx, r->dx_tm, B, T, C, st, e);
}

// As sf_dense_forward_bf16 and sf_dense_backward_bf16.
static int dense_forward_bf16(gpu_replica *r, const sf_layer *l, layer_state *s, const float *in, size_t B, sf_err *e) {
    size_t C = l->in, O = l->units;
    SF_OK(sf_gpu_bf16_round(s->xq, in, B * C, r->stream, e));
    SF_OK(sf_gpu_bf16_round(s->Wq, r->w + r->perm[l->kernel], C * O, r->stream, e));
    SF_OK(sf_gpu_rows_fill(s->out, r->w + r->perm[l->bias], B, O, r->stream, e));
    return gemm_bf16(r, false, false, B, O, C, s->xq, C, s->Wq, O, true, s->out, O, "dense forward", e);
}

static int dense_backward_bf16(gpu_replica *r, const sf_layer *l, layer_state *s, float *dx, size_t B, sf_err *e) {
    size_t C = l->in, O = l->units;
    float *dW = r->g + r->perm[l->kernel], *db = r->g + r->perm[l->bias];
    SF_OK(sf_gpu_bf16_round(r->dq, s->dout, B * O, r->stream, e));
    SF_OK(gemm_bf16(r, true, false, C, O, B, s->xq, C, r->dq, O, false, dW, O, "dense dW", e));
    CUDA_OK(cudaMemsetAsync(db, 0, O * sizeof(float), r->stream), "cudaMemsetAsync");
    SF_OK(sf_gpu_rows_add(db, s->dout, B, O, r->stream, e));
    return dx ? gemm_bf16(r, false, true, B, C, O, r->dq, O, s->Wq, O, false, dx, C, "dense dx", e) : 0;
}

// Dropout's masks come from the step's seed in r->values.
// With covariates, x's windows are (T, inputs) then the extra: the rows go
// to the recurrent layers, the extra beside the head's input (the CPU
// pass's concatenation, as strided copies).
static int forward(gpu_replica *r, const float *x, uint32_t n, bool training, sf_err *e) {
    const sf_model *m = r->m;
    const float *in = x;
    size_t X = sf_model_x_len(m, r->window) * sizeof(float), TC = (size_t)r->window * m->inputs * sizeof(float);
    if (m->extra) {
        CUDA_OK(cudaMemcpy2DAsync(r->xs, TC, x, X, TC, n, cudaMemcpyDeviceToDevice, r->stream), "the windows' rows");
        in = r->xs;
    }
    for (uint32_t i = 0; i < m->nlayers; i++) {
        const sf_layer *l = &m->layer[i];
        layer_state *s = &r->ls[i];
        if (i == m->head && m->extra) {
            // The layer below's output, the extra as x has it but a one-hot to embed, its embedding.
            size_t A = m->extra - m->embed_series, below = l->in - A - m->embed, w = l->in * sizeof(float);
            CUDA_OK(cudaMemcpy2DAsync(r->cat, w, in, below * sizeof(float), below * sizeof(float), n,
                                      cudaMemcpyDeviceToDevice, r->stream), "head input");
            if (A)
                CUDA_OK(cudaMemcpy2DAsync(r->cat + below, w, (const char *)x + TC, X, A * sizeof(float), n,
                                          cudaMemcpyDeviceToDevice, r->stream), "covariates");
            if (m->embed)
                SF_OK(sf_gpu_embed_forward(r->cat + below + A, l->in, r->series_idx,
                                           (const float *)((const char *)x + TC) + A, X / sizeof(float),
                                           r->w + r->perm[m->embedding], n, m->embed_series, m->embed, r->stream, e));
            in = r->cat;
        }
        if (sf_layer_recurrent(l)) {
            lstm_layer *k = &s->lstm;
            if (r->bf16) {
                SF_OK(lstm_forward_bf16(r, l, s, in, n, e));
            } else {
                SF_OK(lstm_shape(r, l, k, n, e));
                cudnnStatus_t st = cudnnRNNForward(r->dnn, k->rnn,
                                                   training ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE,
                                                   r->seq_lengths, k->xd, in, k->yd, s->seq, k->hd, NULL, NULL, k->hd,
                                                   NULL, NULL, k->wbytes, r->w + k->woff, r->work_bytes, r->work,
                                                   training ? k->reserve_bytes : 0, training ? k->reserve : NULL);
                if (st != CUDNN_STATUS_SUCCESS) return rnn_failed(r, l, "cudnnRNNForward", st, e);
            }
            if (l->sequences) {
                s->y = s->seq;
            } else {
                SF_OK(sf_gpu_last_step(s->out, s->seq, n, r->window, l->units, r->stream, e));
                s->y = s->out;
            }
        } else if (l->kind == SF_LAYER_DROPOUT) {
            if (training && l->rate > 0) {
                // The CPU backend's seed per layer: the same masks.
                SF_OK(sf_gpu_dropout_forward(s->out, s->mask, in, (size_t)n * out_size(r, l), l->rate,
                                             &r->values->seed, 0x2545f4914f6cdd1dull * (i + 1), 0, r->stream, e));
                s->y = s->out;
            } else {
                s->y = in;
            }
        } else {
            if (r->bf16) SF_OK(dense_forward_bf16(r, l, s, in, n, e));
            else SF_OK(dense_forward(r, s->out, in, r->w + r->perm[l->kernel], r->w + r->perm[l->bias], (int)n,
                                     (int)l->in, (int)l->units, e));
            s->y = s->out;
        }
        in = s->y;
    }
    return 0;
}

// Waits for an event of the replica's stream (NULL: all of the stream's
// work). With peers, it watches the communicator too: a collective whose
// peer failed (this step's, or the last step's before this step's event)
// would otherwise never finish.
static int wait_for(gpu_replica *r, cudaEvent_t ev, sf_err *e) {
    if (!r->comm) {
        CUDA_OK(ev ? cudaEventSynchronize(ev) : cudaStreamSynchronize(r->stream), "waiting for the replica's stream");
        return 0;
    }
    // A peer that stopped answering raises no NCCL error: the deadline
    // ends the wait, and the trainer aborts the communicators. The pause
    // between queries is 20 us; with the default timer slack (50 us) each
    // one took about 70, on every step: 1 us of slack for this thread.
    prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
    double deadline = r->timeout > 0 ? sf_now() + r->timeout : 0;
    for (;;) {
        cudaError_t q = ev ? cudaEventQuery(ev) : cudaStreamQuery(r->stream);
        if (q == cudaSuccess) return 0;
        if (q != cudaErrorNotReady) CUDA_OK(q, "the replica's stream");
        ncclResult_t st = ncclSuccess;
        if (ncclCommGetAsyncError(r->comm, &st) != ncclSuccess || (st != ncclSuccess && st != ncclInProgress))
            return sf_err_set(e, SF_EIO, "NCCL: GPU %d: %s", r->dev, ncclGetErrorString(st));
        if (deadline > 0 && sf_now() > deadline)
            return sf_err_set(e, SF_EIO, "NCCL: GPU %d: the all-reduce did not complete within %.0f s: another rank "
                              "died or stopped answering (hint: the launcher's messages name it; "
                              "--collective-timeout sets the limit)", r->dev, r->timeout);
        struct timespec pause = {0, 20000};
        nanosleep(&pause, NULL);
    }
}

static int backward(gpu_replica *r, const float *x, const float *y, uint32_t n, uint32_t global_batch, sf_err *e);

static int nccl_sum(gpu_replica *r, float *g, size_t n, cudaStream_t stream, sf_err *e) {
    ncclResult_t nr = ncclAllReduce(g, g, n, ncclFloat, ncclSum, r->comm, stream);
    if (nr == ncclSuccess) return 0;
    return sf_err_set(e, SF_EIO, "NCCL: all-reduce on GPU %d: %s", r->dev, ncclGetErrorString(nr));
}

// Layer i's gradients are final on the stream: with overlap, their sum
// across the replicas starts on the comm stream while the layers below go
// on. Every replica starts them in the same order, top layer first.
static int layer_reduce(gpu_replica *r, uint32_t i, sf_err *e) {
    if (!r->comm || !r->overlap) return 0;
    layer_state *s = &r->ls[i];
    CUDA_OK(cudaEventRecord(s->grads_done, r->stream), "cudaEventRecord");
    CUDA_OK(cudaStreamWaitEvent(r->comm_stream, s->grads_done, 0), "cudaStreamWaitEvent");
    return nccl_sum(r, r->g + s->glo, s->ghi - s->glo, r->comm_stream, e);
}

// The step's sum: the layers' sums joined back into the stream, or one sum
// of the whole buffer.
static int all_reduce(gpu_replica *r, sf_err *e) {
    if (!r->overlap) return nccl_sum(r, r->g, r->nbuf, r->stream, e);
    CUDA_OK(cudaEventRecord(r->reduced, r->comm_stream), "cudaEventRecord");
    CUDA_OK(cudaStreamWaitEvent(r->stream, r->reduced, 0), "cudaStreamWaitEvent");
    return 0;
}

// A step as the graph runs it: a full batch in xin and yin, after one on
// streams (the libraries' first calls set things up that a capture refuses).
static bool graph_fits(const gpu_replica *r, uint32_t count, uint32_t global_batch) {
    return r->graphs && r->warm && count == r->batch && (!r->graph || global_batch == r->graph_global);
}

static int gpu_train_step(sf_replica *opaque, const float *x, const float *y, uint32_t count, uint32_t global_batch,
                          uint64_t seed, double *loss, sf_err *e) {
    gpu_replica *r = (gpu_replica *)opaque;
    uint32_t n = count;
    if (count > r->batch) return sf_err_set(e, SF_EINVAL, "a batch of %u for a replica of %u", count, r->batch);
    CUDA_OK(cudaSetDevice(r->dev), "cudaSetDevice");
    step_values *v = &r->ring[r->turn % VALUE_RING];
    v->seed = seed, r->global = global_batch;
    r->graph_step = graph_fits(r, count, global_batch);
    if (count == r->batch) r->warm = true;
    if (r->graph_step) {
        // Into the graph's own buffers (the batch's slot is free again at
        // once); apply queues the graph.
        size_t xs = (size_t)n * sf_model_x_len(r->m, r->window) * sizeof(float);
        size_t ys = (size_t)n * r->m->values * sizeof(float);
        CUDA_OK(cudaMemcpyAsync(r->xin, x, xs, cudaMemcpyDeviceToDevice, r->stream), "cudaMemcpyAsync (batch x)");
        CUDA_OK(cudaMemcpyAsync(r->yin, y, ys, cudaMemcpyDeviceToDevice, r->stream), "cudaMemcpyAsync (batch y)");
        return 0;
    }
    CUDA_OK(cudaMemcpyAsync(&r->values->seed, &v->seed, sizeof v->seed, cudaMemcpyHostToDevice, r->stream),
            "cudaMemcpyAsync (seed)");
    nvtxRangePushA("forward");
    int frc = forward(r, x, n, true, e);
    nvtxRangePop();
    if (frc) return frc;
    nvtxRangePushA("backward");
    int brc = backward(r, x, y, n, global_batch, e);
    nvtxRangePop();
    if (brc || r->late) return brc;
    // The loss is read now, so that a non-finite one stops training before
    // the update: one wait per step, after all of the step's work is queued,
    // and the device idles until the host queues the next.
    SF_OK(wait_for(r, NULL, e));
    *loss = *r->loss_host;
    return 0;
}

// Late: the loss is on the host early in the step, and the host goes on
// to queue the next one while the device still runs this one.
static int gpu_step_loss(sf_replica *opaque, double *loss, sf_err *e) {
    gpu_replica *r = (gpu_replica *)opaque;
    CUDA_OK(cudaSetDevice(r->dev), "cudaSetDevice");
    SF_OK(wait_for(r, r->loss_ready, e));
    *loss = *r->loss_host;
    if (!isfinite(*loss)) r->told = true;
    return check_guard(r, e);
}

// The loss's gradient and every layer's backward pass, queued on the stream.
static int dense_backward(gpu_replica *r, uint32_t i, const float *in, float *din, uint32_t n, sf_err *e);

static int backward(gpu_replica *r, const float *x, const float *y, uint32_t n, uint32_t global_batch, sf_err *e) {
    const sf_model *m = r->m;
    uint32_t last = m->nlayers - 1;
    SF_OK(sf_gpu_loss_sum(r->loss_dev, &m->loss, r->ls[last].y, y, n, m->values, r->stream, e));
    CUDA_OK(cudaMemcpyAsync(r->loss_host, r->loss_dev, sizeof(double), cudaMemcpyDeviceToHost, r->stream), "loss");
    // In a capture, External makes it an event the host can wait for (a flag
    // only a capture takes).
    CUDA_OK(r->capturing ? cudaEventRecordWithFlags(r->loss_ready, r->stream, cudaEventRecordExternal)
                         : cudaEventRecord(r->loss_ready, r->stream),
            "cudaEventRecord");
    SF_OK(sf_gpu_loss_backward(r->ls[last].dout, &m->loss, r->ls[last].y, y, n, m->values,
                               1.0f / (float)global_batch, r->stream, e));
    for (uint32_t i = m->nlayers; i-- > 0;) {
        const sf_layer *l = &m->layer[i];
        layer_state *s = &r->ls[i];
        const float *in = i ? r->ls[i - 1].y : m->extra ? r->xs : x;
        float *din = i ? r->ls[i - 1].dout : NULL;
        bool head = i == m->head && m->extra;  // its input is cat: the covariates need no gradient
        if (head) in = r->cat, din = r->dcat;
        if (sf_layer_recurrent(l)) {
            lstm_layer *k = &s->lstm;
            const float *dseq = s->dout;
            if (!l->sequences) {
                SF_OK(sf_gpu_last_step_backward(s->dseq, s->dout, n, r->window, l->units, r->stream, e));
                dseq = s->dseq;
            }
            if (r->bf16) {
                SF_OK(lstm_backward_bf16(r, l, s, dseq, din, n, e));
                SF_OK(layer_reduce(r, i, e));
                continue;
            }
            cudnnStatus_t st = cudnnRNNBackwardData_v8(r->dnn, k->rnn, r->seq_lengths, k->yd, s->seq, dseq, k->xd,
                                                       din ? din : r->scratch, k->hd, NULL, NULL, NULL, k->hd, NULL,
                                                       NULL, NULL, k->wbytes, r->w + k->woff, r->work_bytes, r->work,
                                                       k->reserve_bytes, k->reserve);
            if (st != CUDNN_STATUS_SUCCESS) return rnn_failed(r, l, "cudnnRNNBackwardData_v8", st, e);
            // Weight gradients accumulate (ADD is the mode cuDNN supports).
            CUDA_OK(cudaMemsetAsync(r->g + k->woff, 0, k->wbytes, r->stream), "cudaMemsetAsync");
            st = cudnnRNNBackwardWeights_v8(r->dnn, k->rnn, CUDNN_WGRAD_MODE_ADD, r->seq_lengths, k->xd, in, k->hd,
                                            NULL, k->yd, s->seq, k->wbytes, r->g + k->woff, r->work_bytes, r->work,
                                            k->reserve_bytes, k->reserve);
            if (st != CUDNN_STATUS_SUCCESS) return rnn_failed(r, l, "cudnnRNNBackwardWeights_v8", st, e);
            SF_OK(layer_reduce(r, i, e));
        } else if (l->kind == SF_LAYER_DROPOUT) {
            if (!din) continue;
            size_t cnt = (size_t)n * out_size(r, l);
            if (l->rate > 0) SF_OK(sf_gpu_dropout_backward(din, s->dout, s->mask, cnt, r->stream, e));
            else CUDA_OK(cudaMemcpyAsync(din, s->dout, cnt * sizeof(float), cudaMemcpyDeviceToDevice, r->stream), "copy");
        } else {
            if (r->bf16) SF_OK(dense_backward_bf16(r, l, s, din, n, e));
            else SF_OK(dense_backward(r, i, in, din, n, e));
            if (head && m->embed)  // in the head's range: before its sum starts
                SF_OK(sf_gpu_embed_backward(r->g + r->perm[m->embedding], r->dcat + l->in - m->embed, l->in,
                                            r->series_idx, n, m->embed_series, m->embed, r->stream, e));
            SF_OK(layer_reduce(r, i, e));
        }
        if (head) {
            size_t w = l->in * sizeof(float), below = (l->in - sf_model_head_extra(m)) * sizeof(float);
            CUDA_OK(cudaMemcpy2DAsync(r->ls[i - 1].dout, below, r->dcat, w, below, n, cudaMemcpyDeviceToDevice,
                                      r->stream), "head input gradient");
        }
    }
    return 0;
}

// Dense layer i's fp32 backward pass: its gradients and dX (din NULL: none).
static int dense_backward(gpu_replica *r, uint32_t i, const float *in, float *din, uint32_t n, sf_err *e) {
    const sf_layer *l = &r->m->layer[i];
    layer_state *s = &r->ls[i];
    const float one = 1.0f, zero = 0.0f;
    int I = (int)l->in, O = (int)l->units, rows = (int)n;
    float *dw = r->g + r->perm[l->kernel], *db = r->g + r->perm[l->bias];
    const float *w = r->w + r->perm[l->kernel];
    // dW^T (O,I) = dY^T X; db = dY^T 1; dX^T (I,n) = W dY^T.
    BLAS_OK(cublasSgemm(r->blas, CUBLAS_OP_N, CUBLAS_OP_T, O, I, rows, &one, s->dout, O, in, I, &zero, dw, O),
            "dense dW");
    BLAS_OK(cublasSgemv(r->blas, CUBLAS_OP_N, O, rows, &one, s->dout, O, r->ones, 1, &zero, db, 1), "dense db");
    if (din)
        BLAS_OK(cublasSgemm(r->blas, CUBLAS_OP_T, CUBLAS_OP_N, I, rows, O, &one, w, O, s->dout, O, &zero, din, I),
                "dense dX");
    return 0;
}

static float *gpu_gradients(sf_replica *opaque) { return ((gpu_replica *)opaque)->g; }

// Adam, with the step size in r->values. Late, the host has not seen the
// loss yet: the device guards the update.
static int update(gpu_replica *r, const sf_adam *a, sf_err *e) {
    if (r->late) {
        SF_OK(sf_gpu_update_finite(r->bad, r->g, r->nbuf, r->loss_dev, r->stream, e));
        CUDA_OK(cudaMemcpyAsync(r->bad_host, r->bad, sizeof *r->bad, cudaMemcpyDeviceToHost, r->stream), "the guard");
    }
    return sf_gpu_adam_update(r->w, r->m1, r->v, r->g, r->nbuf, a, &r->values->alpha, r->late ? r->bad : NULL,
                              r->stream, e);
}

// The whole step on xin and yin, captured once into r->graph. A call that
// cannot be captured fails here, before anything ran.
static int capture(gpu_replica *r, const sf_adam *a, sf_err *e) {
    // Relaxed: cuDNN or NCCL may make calls a stricter capture refuses.
    CUDA_OK(cudaStreamBeginCapture(r->stream, cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
    r->capturing = true;
    int rc = forward(r, r->xin, r->batch, true, e);
    if (!rc) rc = backward(r, r->xin, r->yin, r->batch, r->global, e);
    if (!rc && r->comm) rc = all_reduce(r, e);
    if (!rc) rc = update(r, a, e);
    cudaGraph_t graph = NULL;
    cudaError_t end = cudaStreamEndCapture(r->stream, &graph);
    r->capturing = false;
    if (!rc && end != cudaSuccess) rc = sf_err_set(e, SF_EIO, "%s", cudaGetErrorString(end));
    if (!rc) {
        cudaError_t inst = cudaGraphInstantiate(&r->graph, graph, 0);
        if (inst != cudaSuccess) r->graph = NULL, rc = sf_err_set(e, SF_EIO, "%s", cudaGetErrorString(inst));
    }
    if (graph) cudaGraphDestroy(graph);
    if (rc) {
        char why[sizeof e->msg];
        snprintf(why, sizeof why, "%s", e->msg);
        return sf_err_set(e, SF_EIO, "GPU %d: capturing the training step in a CUDA graph: %s (hint: --cuda-graph "
                          "off runs it on streams)", r->dev, why);
    }
    r->graph_global = r->global;
    return 0;
}

static int gpu_apply(sf_replica *opaque, const sf_adam *a, uint64_t step, sf_err *e) {
    gpu_replica *r = (gpu_replica *)opaque;
    CUDA_OK(cudaSetDevice(r->dev), "cudaSetDevice");
    step_values *v = &r->ring[r->turn++ % VALUE_RING];
    // a->lr may change every step (a schedule's warmup or decay): the update,
    // and the graph captured once, read the step size from device memory,
    // never a's lr; the betas and epsilon they take as arguments stay.
    v->alpha = sf_adam_alpha(a, step);
    // The graph reads the whole step's values; the streams' forward pass
    // has read its seed already.
    CUDA_OK(r->graph_step ? cudaMemcpyAsync(r->values, v, sizeof *v, cudaMemcpyHostToDevice, r->stream)
                          : cudaMemcpyAsync(&r->values->alpha, &v->alpha, sizeof v->alpha, cudaMemcpyHostToDevice,
                                            r->stream),
            "cudaMemcpyAsync (the step's values)");
    if (!r->graph_step) return update(r, a, e);
    if (!r->graph) SF_OK(capture(r, a, e));
    cudaError_t rc = cudaGraphLaunch(r->graph, r->stream);
    if (rc != cudaSuccess)
        return sf_err_set(e, SF_EIO, "GPU %d: cudaGraphLaunch: %s (hint: --cuda-graph off runs the step on streams)",
                          r->dev, cudaGetErrorString(rc));
    return 0;
}

static int gpu_predict(sf_replica *opaque, float *out, const float *x, uint32_t count, sf_err *e) {
    gpu_replica *r = (gpu_replica *)opaque;
    const sf_model *m = r->m;
    if (count > r->batch) return sf_err_set(e, SF_EINVAL, "a batch of %u for a replica of %u", count, r->batch);
    CUDA_OK(cudaSetDevice(r->dev), "cudaSetDevice");
    CUDA_OK(cudaMemcpyAsync(r->xin, x, (size_t)count * sf_model_x_len(m, r->window) * sizeof(float),
                            cudaMemcpyHostToDevice,
                            r->stream), "cudaMemcpyAsync");
    SF_OK(forward(r, r->xin, count, false, e));
    CUDA_OK(cudaMemcpyAsync(out, r->ls[m->nlayers - 1].y, (size_t)count * m->outputs * sizeof(float),
                            cudaMemcpyDeviceToHost, r->stream), "cudaMemcpyAsync");
    CUDA_OK(cudaStreamSynchronize(r->stream), "cudaStreamSynchronize");
    return 0;
}


// ---- the all-reduce: NCCL over the replicas' GPUs ----

typedef struct {
    uint32_t R, total;  // this process's replicas; all ranks' replicas
    gpu_replica **reps;
    ncclComm_t *comms;
} nccl_group;

// Called with no replica thread running. abort: a run failed, and a
// collective may wait for a peer that will never join it; aborting the
// communicators ends it, so that the streams can drain.
static void gpu_reduce_close(void *opaque, bool abort) {
    nccl_group *g = (nccl_group *)opaque;
    if (!g) return;
    for (uint32_t r = 0; g->comms && r < g->R; r++) {
        // A graph that captured a collective holds its communicator: NCCL's
        // destroy and abort wait for the graph to go (since NCCL 2.26).
        if (g->reps[r]->graph) {
            cudaSetDevice(g->reps[r]->dev);
            cudaGraphExecDestroy(g->reps[r]->graph);
            g->reps[r]->graph = NULL;
        }
        if (g->comms[r]) abort ? ncclCommAbort(g->comms[r]) : ncclCommDestroy(g->comms[r]);
        g->reps[r]->comm = NULL;
    }
    free(g->comms), free(g->reps), free(g);
}

static int gpu_reduce_id(sf_reduce_id *id, sf_err *e) {
    static_assert(sizeof(ncclUniqueId) <= sizeof id->bytes, "an NCCL unique id fits");
    ncclUniqueId u;
    ncclResult_t nr = ncclGetUniqueId(&u);
    if (nr != ncclSuccess) return sf_err_set(e, SF_EIO, "NCCL: ncclGetUniqueId: %s", ncclGetErrorString(nr));
    memcpy(id->bytes, &u, sizeof u);
    return 0;
}

// One communicator per GPU: from ncclCommInitAll when the replicas are this
// process's alone, or from ncclCommInitRank with the job's id when they are
// part of a job's ranks. A replica per GPU. (One replica alone needs none.)
// cuDNN chooses where each LSTM's weights lie in its weight space: perm
// says where every Keras parameter went.
static uint32_t gpu_layout_crc(sf_replica *opaque) {
    const gpu_replica *r = (const gpu_replica *)opaque;
    uint64_t n = r->nbuf;
    return sf_crc32c(sf_crc32c(0, &n, sizeof n), r->perm, r->m->nparams * sizeof *r->perm);
}

static int gpu_reduce_open(void **out, sf_replica *const *reps, uint32_t R, const sf_reduce_world *world, sf_err *e) {
    nccl_group *g = (nccl_group *)calloc(1, sizeof *g);
    int *devs = (int *)calloc(R ? R : 1, sizeof *devs);  // zeroed: R may be 0
    *out = NULL;
    if (!g || !devs || !(g->reps = (gpu_replica **)malloc(R * sizeof *g->reps)) ||
        !(g->comms = (ncclComm_t *)calloc(R, sizeof *g->comms))) {
        free(devs);
        gpu_reduce_close(g, false);
        return sf_err_set(e, SF_ENOMEM, "out of memory");
    }
    g->R = R;
    for (uint32_t r = 0; r < R; r++) g->reps[r] = (gpu_replica *)reps[r], devs[r] = g->reps[r]->dev;
    for (uint32_t r = 0; r < R; r++)
        for (uint32_t q = 0; q < r; q++)
            if (devs[q] == devs[r]) {
                free(devs);
                gpu_reduce_close(g, false);
                return sf_err_set(e, SF_EINVAL, "replicas %u and %u are both on GPU %d: NCCL needs one replica per "
                                  "GPU (hint: --replicas at most the number of GPUs)", q, r, devs[r]);
            }
    g->total = world ? world->total : R;
    ncclResult_t nr = ncclSuccess;
    if (world && g->total > 1) {
        ncclUniqueId id;
        memcpy(&id, world->id.bytes, sizeof id);
        // Several GPUs of one process join in one group, or they would wait
        // for each other.
        nr = ncclGroupStart();
        for (uint32_t r = 0; nr == ncclSuccess && r < R; r++) {
            cudaError_t ce = cudaSetDevice(devs[r]);
            if (ce != cudaSuccess) {
                ncclGroupEnd();
                free(devs);
                gpu_reduce_close(g, true);
                return sf_err_set(e, SF_EIO, "CUDA: cudaSetDevice(%d): %s", devs[r], cudaGetErrorString(ce));
            }
            nr = ncclCommInitRank(&g->comms[r], (int)g->total, id, (int)(world->first + r));
        }
        ncclResult_t end = ncclGroupEnd();
        if (nr == ncclSuccess) nr = end;
    } else if (R > 1) {
        nr = ncclCommInitAll(g->comms, (int)R, devs);
    }
    free(devs);
    if (nr != ncclSuccess) {
        uint32_t total = g->total;
        gpu_reduce_close(g, true);
        return sf_err_set(e, SF_EIO, "NCCL: communicators for %u GPU(s) of %u in all: %s", R, total,
                          ncclGetErrorString(nr));
    }
    for (uint32_t r = 0; g->total > 1 && r < R; r++) g->reps[r]->comm = g->comms[r];
    *out = g;
    return 0;
}

// Replica r's part of the sum, queued on its stream after its backward pass.
// An error stops the run; the trainer then closes the group with abort,
// once no thread uses a communicator any more.
static int gpu_reduce(void *opaque, uint32_t r, sf_err *e) {
    nccl_group *g = (nccl_group *)opaque;
    if (g->total == 1) return 0;
    gpu_replica *rep = g->reps[r];
    if (rep->graph_step) return 0;  // the all-reduce is in the step's graph
    nvtxRangePushA("all-reduce");
    int rc = all_reduce(rep, e);
    nvtxRangePop();
    return rc;
}

// Staging: the pipeline's slots copied onto each replica's GPU on a copy
// stream there, ordered with the replica's compute stream.
static int gpu_staging_open(sf_staging **out, sf_stage_ops *hooks, sf_replica *const *reps, uint32_t R,
                            uint32_t slots, sf_err *e) {
    *out = NULL;
    int *devs = (int *)calloc(R ? R : 1, sizeof *devs);  // zeroed: R may be 0
    if (!devs) return sf_err_set(e, SF_ENOMEM, "out of memory");
    for (uint32_t r = 0; r < R; r++) devs[r] = ((gpu_replica *)reps[r])->dev;
    sf_gpu_stage *st;
    int rc = sf_gpu_stage_open(&st, devs, R, slots, e);
    free(devs);
    if (rc) return rc;
    for (uint32_t r = 0; r < R; r++) sf_gpu_stage_set_stream(st, r, ((gpu_replica *)reps[r])->stream);
    *hooks = (sf_stage_ops){sf_gpu_stage_alloc, sf_gpu_stage_free, sf_gpu_stage_reclaim, sf_gpu_stage_publish,
                            sf_gpu_stage_release, st};
    *out = (sf_staging *)st;
    return 0;
}

static void gpu_staging_close(sf_staging *s) { sf_gpu_stage_close((sf_gpu_stage *)s); }

static int gpu_staging_wait(sf_staging *s, uint32_t r, const sf_batch *b, sf_err *e) {
    return sf_gpu_stage_wait((sf_gpu_stage *)s, r, b->ready, e);
}

static double gpu_staging_waited(sf_staging *s, uint32_t r) { return sf_gpu_stage_waited((sf_gpu_stage *)s, r); }

static int gpu_staging_error(sf_staging *s, sf_err *e) { return sf_gpu_stage_error((sf_gpu_stage *)s, e); }

// Host memory: a replica's parameters live on its GPU.
static uint64_t gpu_host_memory(const sf_model *m, uint32_t batch, uint32_t window, const sf_replica_opts *o) {
    (void)m, (void)batch, (void)window, (void)o;
    return 0;
}

// In declaration order: C++20 designated initializers.
static const sf_backend cuda_backend = {
    .name = "cuda",
    .open = gpu_open,
    .close = gpu_close,
    .load = gpu_load,
    .save = gpu_save,
    .train_step = gpu_train_step,
    .gradients = gpu_gradients,
    .train_parts = NULL,  // NCCL sums a replica's one pass over its parts
    .part_gradients = NULL,
    .on_layer_done = NULL,  // the buffer is final when the stream is
    .apply = gpu_apply,
    .step_loss = gpu_step_loss,
    .predict = gpu_predict,
    .host_memory = gpu_host_memory,
    .layout_crc = gpu_layout_crc,
    .reduce_id = gpu_reduce_id,
    .reduce_open = gpu_reduce_open,
    .reduce = gpu_reduce,
    .reduce_close = gpu_reduce_close,
    .staging_open = gpu_staging_open,
    .staging_close = gpu_staging_close,
    .staging_wait = gpu_staging_wait,
    .staging_waited = gpu_staging_waited,
    .staging_error = gpu_staging_error,
};

// The module's one entry point, looked up by cuda_loader.c.
extern "C" __attribute__((visibility("default"))) const sf_backend *sf_gpu_module_backend(void) {
    return &cuda_backend;
}
