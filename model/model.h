// model: the Keras stacked-LSTM model as data: its description (`--model`
// text), the layout of its parameters in one contiguous buffer, Keras'
// initialisers and its tensors under Keras' names, so that checkpoints load
// into Keras or PyTorch by name. How a device computes it is the backends'
// business (backend/backend.h); this folder allocates nothing.
#ifndef SF_MODEL_H
#define SF_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "kernels/kernels.h"

// GRU comes last so that the others keep their values.
enum sf_layer_kind { SF_LAYER_LSTM, SF_LAYER_DROPOUT, SF_LAYER_DENSE, SF_LAYER_GRU };

typedef struct {
    enum sf_layer_kind kind;
    uint32_t in, units;              // width of its input and output at each time step
    float rate;                      // dropout rate
    bool sequences;                  // its output has every time step (else only the last)
    char name[24];                   // Keras' name: lstm, lstm_1, dropout_2, dense, ...
    size_t kernel, recurrent, bias;  // offsets in the parameter buffer (lstm, gru, dense)
} sf_layer;

// An LSTM or a GRU: a layer over time steps with a recurrent kernel.
static inline bool sf_layer_recurrent(const sf_layer *l) {
    return l->kind == SF_LAYER_LSTM || l->kind == SF_LAYER_GRU;
}
// The gates of a recurrent layer: the LSTM's i, f, c, o; Keras' GRU's z, r, h
// (reset_after: its bias is (2, 3U), the input's row and the recurrent's).
static inline uint32_t sf_layer_gates(const sf_layer *l) { return l->kind == SF_LAYER_GRU ? 3 : 4; }

enum { SF_MODEL_MAX_LAYERS = 32 };

typedef struct {
    sf_layer layer[SF_MODEL_MAX_LAYERS];
    uint32_t nlayers, inputs, outputs;  // outputs: the last dense's units, values x the loss's width
    uint32_t values;                    // target values per window, as y holds them: targets x steps
    sf_loss loss;                       // what training minimises (zeroed: MSE)
    // Covariates (--future-features): `extra` values per window beside its
    // rows, concatenated after the window's (window, inputs) values in x and
    // with the output of the layer before the head, layer `head` (the first
    // dense layer: the last recurrent layer's output, after its dropout),
    // whose kernel has those rows too. The recurrent layers never see them.
    uint32_t extra, head;
    // --series-features embedding:D: the extra's last embed_series values
    // are a one-hot of the window's series, which reaches the head as its
    // row of the table at `embedding` (embed_series, embed), Keras'
    // Embedding: the head's kernel has embed rows for it instead. 0: none.
    uint32_t embed_series, embed;
    size_t embedding;
    size_t nparams;
} sf_model;

// The default model (docs/TRAINING.md): the seed project's Keras model. The
// last dense width is the number of targets.
#define SF_MODEL_DEFAULT "lstm:180,dropout:0.2,lstm:180,dropout:0.2,lstm:180,dropout:0.2,dense"

// Parses "lstm:U,dropout:P,...,dense[:N]" into *m for `inputs` features and
// `outputs` targets; gru:U goes anywhere lstm:U does. Every recurrent layer
// but the last returns sequences; dense layers come after the last one; the model ends with a dense layer of width
// outputs. Returns 0, or SF_EINVAL with a message that starts "--model:"
// and names the item. spec is borrowed; *m holds no pointers.
int sf_model_parse(sf_model *m, const char *spec, uint32_t inputs, uint32_t outputs, sf_err *e);
// The same for a model trained with loss (NULL: MSE): `values` target
// values per window, and its last dense layer sf_loss_width of them each
// (the quantiles of a quantile loss).
int sf_model_parse_loss(sf_model *m, const char *spec, uint32_t inputs, uint32_t values, const sf_loss *loss,
                        sf_err *e);

// --loss text: mse, mae, huber[:DELTA] (Keras' delta 1.0), or
// quantile:Q1,Q2,... (each in (0, 1), ascending, at most
// SF_LOSS_MAX_QUANTILES). 0, or SF_EUSAGE with a message that starts
// "--loss" and says what is wrong.
int sf_loss_parse(sf_loss *l, const char *text, sf_err *e);
// The loss as text that sf_loss_parse reads back to the same numbers,
// whole in SF_LOSS_TEXT bytes: "quantile:" and up to 17 digits, an
// exponent and a comma per quantile (16 of them: over 300 bytes).
enum { SF_LOSS_TEXT = 16 + SF_LOSS_MAX_QUANTILES * 26 };
void sf_loss_format(const sf_loss *l, char *buf, size_t len);
// Quantile j's name in columns: "q" and its percent, "q10", "q2.5".
void sf_loss_quantile_name(const sf_loss *l, uint32_t j, char *buf, size_t len);
// The prediction (of sf_loss_width per value) that serves as the point
// forecast: the quantile nearest 0.5 (the lower one on a tie), else 0.
uint32_t sf_loss_point(const sf_loss *l);

// Gives the head `extra` more inputs (sf_model's comment) and lays the
// parameters out again; 0 or SF_EINVAL.
int sf_model_set_extra(sf_model *m, uint32_t extra, sf_err *e);
// The extra's last `series` values (a one-hot) reach the head through an
// embedding of dim values each (sf_model's comment), laid out after the
// head's bias; 0 or SF_EINVAL (more series than the extra has, or dim 0).
int sf_model_set_embedding(sf_model *m, uint32_t series, uint32_t dim, sf_err *e);
// The width the extra reaches the head with: the embedding's, not the one-hot's.
static inline uint32_t sf_model_head_extra(const sf_model *m) { return m->extra - m->embed_series + m->embed; }
// The floats of one window's input: (window, inputs) and the extra.
static inline size_t sf_model_x_len(const sf_model *m, uint32_t window) {
    return (size_t)window * m->inputs + m->extra;
}
// The model as text that sf_model_parse reads back (all widths spelled out),
// into buf (len bytes, NUL-terminated, cut short when too small).
void sf_model_format(const sf_model *m, char *buf, size_t len);
// Keras' initialisers into params (nparams floats), drawn from seed: kernels
// glorot_uniform, recurrent kernels orthogonal, biases zero but the LSTM
// forget gate's at 1 (the GRU's all zero).
void sf_model_init(const sf_model *m, float *params, uint64_t seed);

// Layer i's parameters: [*lo, *hi) of the buffer (kernel, recurrent
// kernel, bias: contiguous), empty for a dropout layer.
void sf_model_layer_params(const sf_model *m, uint32_t i, size_t *lo, size_t *hi);

// Floating-point operations of one window's forward pass (multiply-adds
// count two); training (forward and backward) is about three times this.
double sf_model_flops(const sf_model *m, uint32_t window);

typedef struct {
    char name[48];  // "lstm_1/recurrent_kernel"
    size_t offset;  // in floats, in the parameter buffer
    uint32_t rank, shape[2];
} sf_tensor;
// The model's tensors in buffer order into out (NULL: only count them; else
// room for 3 * SF_MODEL_MAX_LAYERS: the head, a dense layer's two and the
// embedding's one, takes no more than a recurrent layer). Returns their count.
uint32_t sf_model_tensors(const sf_model *m, sf_tensor *out);

#endif
