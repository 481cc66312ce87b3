// The model's description, parameter layout and initialisers.
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static int layout(sf_model *m, sf_err *e);

static const char *kind_word(int kind) {
    return kind == SF_LAYER_LSTM ? "lstm" : kind == SF_LAYER_GRU ? "gru" : kind == SF_LAYER_DROPOUT ? "dropout" : "dense";
}

// One item of the --model text: its kind and number.
static int parse_item(const char *s, size_t n, int *kind, double *value, bool *has_value) {
    static const struct {
        const char *word;
        int kind;
    } words[] = {{"lstm", SF_LAYER_LSTM}, {"gru", SF_LAYER_GRU}, {"dropout", SF_LAYER_DROPOUT},
                 {"dense", SF_LAYER_DENSE}};
    while (n && isspace((unsigned char)*s)) s++, n--;
    while (n && isspace((unsigned char)s[n - 1])) n--;
    for (size_t w = 0; w < sizeof words / sizeof *words; w++) {
        size_t wl = strlen(words[w].word);
        if (n < wl || strncmp(s, words[w].word, wl) != 0 || (n > wl && s[wl] != ':')) continue;
        *kind = words[w].kind;
        *has_value = n > wl;
        if (!*has_value) return 0;
        char num[32];
        size_t nl = n - wl - 1;
        if (nl == 0 || nl >= sizeof num) return -1;
        memcpy(num, s + wl + 1, nl);
        num[nl] = 0;
        char *end;
        *value = strtod(num, &end);
        return *end == 0 ? 0 : -1;
    }
    return -1;
}

int sf_model_parse(sf_model *m, const char *spec, uint32_t inputs, uint32_t outputs, sf_err *e) {
    return sf_model_parse_loss(m, spec, inputs, outputs, NULL, e);
}

int sf_model_parse_loss(sf_model *m, const char *spec, uint32_t inputs, uint32_t values, const sf_loss *loss,
                        sf_err *e) {
    *m = (sf_model){.inputs = inputs, .values = values, .loss = loss ? *loss : (sf_loss){.kind = SF_LOSS_MSE}};
    uint32_t outputs = m->outputs = values * sf_loss_width(&m->loss);
    if (inputs == 0 || outputs == 0) return sf_err_set(e, SF_EINVAL, "--model: the model needs features and targets");
    const char *quantiles = sf_loss_width(&m->loss) > 1 ? ", times the quantiles of --loss" : "";
    uint32_t counts[4] = {0}, last_lstm = UINT32_MAX;  // last_lstm: the last recurrent layer
    const char *s = spec;
    for (uint32_t item = 1;; item++) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        int kind;
        double v = 0;
        bool has;
        int bad = parse_item(s, n, &kind, &v, &has);
        // A width out of range says the range: the item's form is right.
        if (!bad && kind != SF_LAYER_DROPOUT && has && !(v >= 1 && v <= 65536 && v == floor(v)))
            return sf_err_set(e, SF_EINVAL, "--model: item %u '%.*s': the units of %s must be an integer from 1 to "
                              "65536", item, (int)n, s, kind_word(kind));
        bool recurrent = kind == SF_LAYER_LSTM || kind == SF_LAYER_GRU;
        if (bad || (recurrent && !has) || (kind == SF_LAYER_DROPOUT && (!has || !(v >= 0 && v < 1))))
            return sf_err_set(e, SF_EINVAL,
                              "--model: item %u '%.*s': expected lstm:UNITS, gru:UNITS, dropout:RATE (0 <= RATE < 1) "
                              "or dense[:UNITS]",
                              item, (int)n, s);
        if (m->nlayers == SF_MODEL_MAX_LAYERS)
            return sf_err_set(e, SF_EINVAL, "--model: more than %d layers", SF_MODEL_MAX_LAYERS);
        sf_layer *l = &m->layer[m->nlayers];
        *l = (sf_layer){.kind = kind};
        if (recurrent) {
            l->units = (uint32_t)v;
            last_lstm = m->nlayers;
        } else if (kind == SF_LAYER_DROPOUT) {
            l->rate = (float)v;
        } else {
            l->units = has ? (uint32_t)v : 0;  // 0: the number of targets, checked below
            if (last_lstm == UINT32_MAX)
                return sf_err_set(e, SF_EINVAL, "--model: item %u: a dense layer before any LSTM or GRU (the model "
                                  "starts with a recurrent layer over the window)", item);
        }
        if (counts[kind]) snprintf(l->name, sizeof l->name, "%s_%u", kind_word(kind), counts[kind]);
        else snprintf(l->name, sizeof l->name, "%s", kind_word(kind));
        counts[kind]++;
        m->nlayers++;
        if (!comma) break;
        s = comma + 1;
    }
    if (last_lstm == UINT32_MAX) return sf_err_set(e, SF_EINVAL, "--model: no lstm or gru layer");
    sf_layer *end = &m->layer[m->nlayers - 1];
    if (end->kind != SF_LAYER_DENSE)
        return sf_err_set(e, SF_EINVAL, "--model: the last layer must be dense (it gives the %u output(s): one per "
                          "target, times the steps of a --horizon A-B%s)", outputs, quantiles);
    if (end->units == 0) end->units = outputs;
    if (end->units != outputs)
        return sf_err_set(e, SF_EINVAL, "--model: the last dense layer has %u units but the model gives %u output(s): "
                          "one per target, times the steps of a --horizon A-B%s (hint: a last 'dense' takes that "
                          "number)", end->units, outputs, quantiles);
    for (uint32_t i = 0; i < m->nlayers; i++)
        if (sf_layer_recurrent(&m->layer[i])) m->head = i;
    while (m->layer[m->head].kind != SF_LAYER_DENSE) m->head++;
    return layout(m, e);
}

// Widths, sequence flags and the parameter layout, in Keras' order:
// kernel, recurrent_kernel, bias per LSTM or GRU (its bias Keras' (2, 3U):
// the input's, then the recurrent's); kernel, bias per dense. The head's
// kernel has the extra inputs' rows after its input's.
static int layout(sf_model *m, sf_err *e) {
    uint32_t width = m->inputs, last_lstm = 0;
    for (uint32_t i = 0; i < m->nlayers; i++)
        if (sf_layer_recurrent(&m->layer[i])) last_lstm = i;
    bool sequences = true;
    size_t off = 0;
    for (uint32_t i = 0; i < m->nlayers; i++) {
        sf_layer *l = &m->layer[i];
        l->in = width + (i == m->head ? sf_model_head_extra(m) : 0);
        if (l->kind == SF_LAYER_DENSE && l->units == 0)
            return sf_err_set(e, SF_EINVAL, "--model: %s: only the last dense layer may leave out its width", l->name);
        if (l->kind == SF_LAYER_DENSE && i < last_lstm)
            return sf_err_set(e, SF_EINVAL, "--model: %s comes before a recurrent layer; dense layers must follow "
                              "the last LSTM or GRU", l->name);
        if (sf_layer_recurrent(l)) {
            size_t G = (size_t)sf_layer_gates(l) * l->units;
            sequences = i != last_lstm;
            l->kernel = off, off += (size_t)l->in * G;
            l->recurrent = off, off += (size_t)l->units * G;
            l->bias = off, off += l->kind == SF_LAYER_GRU ? 2 * G : G;
        } else if (l->kind == SF_LAYER_DENSE) {
            l->kernel = off, off += (size_t)l->in * l->units;
            l->bias = off, off += l->units;
            // In the head's range of the buffer: its gradient is final with the head's.
            if (i == m->head && m->embed) m->embedding = off, off += (size_t)m->embed_series * m->embed;
        } else {
            l->units = width;
        }
        l->sequences = sequences;
        width = l->units;
    }
    m->nparams = off;
    return 0;
}

int sf_model_set_extra(sf_model *m, uint32_t extra, sf_err *e) {
    m->extra = extra;
    return layout(m, e);
}

int sf_model_set_embedding(sf_model *m, uint32_t series, uint32_t dim, sf_err *e) {
    if (series > m->extra || !dim || !series)
        return sf_err_set(e, SF_EINVAL, "an embedding of %u series into %u values, of %u extra inputs", series, dim,
                          m->extra);
    m->embed_series = series, m->embed = dim;
    return layout(m, e);
}

void sf_model_layer_params(const sf_model *m, uint32_t i, size_t *lo, size_t *hi) {
    const sf_layer *l = &m->layer[i];
    *lo = *hi = 0;
    if (l->kind == SF_LAYER_DROPOUT) return;
    *lo = l->kernel, *hi = m->nparams;
    for (uint32_t k = i + 1; k < m->nlayers; k++)
        if (m->layer[k].kind != SF_LAYER_DROPOUT) {
            *hi = m->layer[k].kernel;
            break;
        }
}

void sf_model_format(const sf_model *m, char *buf, size_t len) {
    size_t n = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < m->nlayers && n < len; i++) {
        const sf_layer *l = &m->layer[i];
        const char *sep = i ? "," : "";
        if (l->kind == SF_LAYER_DROPOUT) n += (size_t)snprintf(buf + n, len - n, "%sdropout:%g", sep, (double)l->rate);
        else n += (size_t)snprintf(buf + n, len - n, "%s%s:%u", sep, kind_word(l->kind), l->units);
    }
}

uint32_t sf_model_tensors(const sf_model *m, sf_tensor *out) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->nlayers; i++) {
        const sf_layer *l = &m->layer[i];
        if (l->kind == SF_LAYER_DROPOUT) continue;
        uint32_t g = sf_layer_recurrent(l) ? sf_layer_gates(l) * l->units : l->units;
        sf_tensor t[3] = {{"", l->kernel, 2, {l->in, g}}, {"", l->recurrent, 2, {l->units, g}}, {"", l->bias, 1, {g, 0}}};
        if (l->kind == SF_LAYER_GRU) t[2] = (sf_tensor){"", l->bias, 2, {2, g}};
        snprintf(t[0].name, sizeof t[0].name, "%s/kernel", l->name);
        snprintf(t[1].name, sizeof t[1].name, "%s/recurrent_kernel", l->name);
        snprintf(t[2].name, sizeof t[2].name, "%s/bias", l->name);
        for (int k = 0; k < 3; k++) {
            if (l->kind == SF_LAYER_DENSE && k == 1) continue;
            if (out) out[n] = t[k];
            n++;
        }
        if (i == m->head && m->embed) {  // Keras' Embedding layer, "embedding"
            if (out) out[n] = (sf_tensor){"embedding/embeddings", m->embedding, 2, {m->embed_series, m->embed}};
            n++;
        }
    }
    return n;
}

static double uniform(uint64_t *s) { return (double)(sf_splitmix64(s) >> 11) * 0x1p-53; }

static double normal(uint64_t *s) {
    double u = uniform(s), v = uniform(s);
    return sqrt(-2.0 * log(u > 0 ? u : 0x1p-53)) * cos(6.283185307179586 * v);
}

static void glorot_uniform(float *w, size_t rows, size_t cols, uint64_t *s) {
    double limit = sqrt(6.0 / (double)(rows + cols));
    for (size_t k = 0; k < rows * cols; k++) w[k] = (float)((2 * uniform(s) - 1) * limit);
}

// Keras' Orthogonal for a (rows, cols) kernel with rows < cols: the QR of a
// (cols, rows) normal matrix, q's signs fixed by r's diagonal, transposed.
// Modified Gram-Schmidt gives r a positive diagonal, so no sign fix is left.
static void orthogonal(float *w, size_t rows, size_t cols, uint64_t *s) {
    double *q = malloc(rows * cols * sizeof *q);  // column j of the (cols, rows) matrix at q + j * cols
    if (!q) return;
    for (size_t k = 0; k < rows * cols; k++) q[k] = normal(s);
    for (size_t j = 0; j < rows; j++) {
        double *a = q + j * cols;
        for (size_t p = 0; p < j; p++) {
            const double *b = q + p * cols;
            double dot = 0;
            for (size_t k = 0; k < cols; k++) dot += a[k] * b[k];
            for (size_t k = 0; k < cols; k++) a[k] -= dot * b[k];
        }
        double norm = 0;
        for (size_t k = 0; k < cols; k++) norm += a[k] * a[k];
        norm = sqrt(norm);
        for (size_t k = 0; k < cols; k++) a[k] /= norm;
    }
    for (size_t j = 0; j < rows; j++)
        for (size_t k = 0; k < cols; k++) w[j * cols + k] = (float)q[j * cols + k];
    free(q);
}

void sf_model_init(const sf_model *m, float *params, uint64_t seed) {
    for (uint32_t i = 0; i < m->nlayers; i++) {
        const sf_layer *l = &m->layer[i];
        uint64_t s = seed ^ (0x51ed270b27a5c6d1ull * (i + 1));
        if (l->kind == SF_LAYER_LSTM) {
            size_t U = l->units;
            glorot_uniform(params + l->kernel, l->in, 4 * U, &s);
            orthogonal(params + l->recurrent, U, 4 * U, &s);
            memset(params + l->bias, 0, 4 * U * sizeof(float));
            for (size_t u = 0; u < U; u++) params[l->bias + U + u] = 1.0f;  // unit_forget_bias
        } else if (l->kind == SF_LAYER_GRU) {
            size_t U = l->units;
            glorot_uniform(params + l->kernel, l->in, 3 * U, &s);
            orthogonal(params + l->recurrent, U, 3 * U, &s);
            memset(params + l->bias, 0, 6 * U * sizeof(float));
        } else if (l->kind == SF_LAYER_DENSE) {
            glorot_uniform(params + l->kernel, l->in, l->units, &s);
            memset(params + l->bias, 0, l->units * sizeof(float));
            // Keras' Embedding: uniform in [-0.05, 0.05]
            for (size_t k = 0; i == m->head && k < (size_t)m->embed_series * m->embed; k++)
                params[m->embedding + k] = (float)((2 * uniform(&s) - 1) * 0.05);
        }
    }
}

double sf_model_flops(const sf_model *m, uint32_t window) {
    double flops = 0;
    for (uint32_t i = 0; i < m->nlayers; i++) {
        const sf_layer *l = &m->layer[i];
        if (sf_layer_recurrent(l)) flops += 2.0 * window * (l->in + l->units) * sf_layer_gates(l) * l->units;
        else if (l->kind == SF_LAYER_DENSE) flops += 2.0 * l->in * l->units;
    }
    return flops;
}

// A number as the shortest text that reads back to it.
static void shortest(char *buf, size_t len, double v) {
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) return;
    }
}

int sf_loss_parse(sf_loss *l, const char *text, sf_err *e) {
    *l = (sf_loss){.kind = SF_LOSS_MSE};
    const char *colon = strchr(text, ':'), *arg = colon ? colon + 1 : NULL;
    size_t n = colon ? (size_t)(colon - text) : strlen(text);
    const char *expected = "expected mse, mae, huber, huber:DELTA or quantile:Q1,Q2,... (e.g. quantile:0.1,0.5,0.9)";
    if (n == 3 && !strncmp(text, "mse", 3) && !colon) return 0;
    if (n == 3 && !strncmp(text, "mae", 3) && !colon) return l->kind = SF_LOSS_MAE, 0;
    if (n == 5 && !strncmp(text, "huber", 5)) {
        *l = (sf_loss){.kind = SF_LOSS_HUBER, .delta = 1.0};
        if (!colon) return 0;
        char *end;
        l->delta = strtod(arg, &end);
        if (end == arg || *end || !(l->delta > 0 && isfinite(l->delta)))
            return sf_err_set(e, SF_EUSAGE, "--loss %s: huber's delta must be a finite number above 0 (Keras' default: 1.0)",
                              text);
        return 0;
    }
    if (n != 8 || strncmp(text, "quantile", 8) || !colon || !*arg)
        return sf_err_set(e, SF_EUSAGE, "--loss %s: %s", text, expected);
    *l = (sf_loss){.kind = SF_LOSS_QUANTILE};
    for (const char *s = arg;;) {
        char *end;
        double q = strtod(s, &end);
        if (end == s || (*end && *end != ','))
            return sf_err_set(e, SF_EUSAGE, "--loss %s: '%.*s' is no number: quantiles are a comma-separated list "
                              "such as 0.1,0.5,0.9", text, (int)strcspn(s, ","), s);
        if (!(q > 0 && q < 1))
            return sf_err_set(e, SF_EUSAGE, "--loss %s: quantile %g is outside (0, 1)", text, q);
        if (l->nq == SF_LOSS_MAX_QUANTILES)
            return sf_err_set(e, SF_EUSAGE, "--loss %s: more than %d quantiles", text, SF_LOSS_MAX_QUANTILES);
        if (l->nq && q == l->q[l->nq - 1])
            return sf_err_set(e, SF_EUSAGE, "--loss %s: quantile %g is given twice", text, q);
        if (l->nq && q < l->q[l->nq - 1])
            return sf_err_set(e, SF_EUSAGE, "--loss %s: quantiles must be in ascending order (%g after %g)", text, q,
                              l->q[l->nq - 1]);
        l->q[l->nq++] = q;
        if (l->nq > 1) {  // two quantiles that one column name would stand for
            char a[32], b[32];
            sf_loss_quantile_name(l, l->nq - 2, a, sizeof a);
            sf_loss_quantile_name(l, l->nq - 1, b, sizeof b);
            if (!strcmp(a, b)) {
                char qa[32], qb[32];  // as the user wrote them, not float noise (0.10000000000000001)
                shortest(qa, sizeof qa, l->q[l->nq - 2]);
                shortest(qb, sizeof qb, q);
                return sf_err_set(e, SF_EUSAGE, "--loss %s: quantiles %s and %s are both %s in predict's columns",
                                  text, qa, qb, a);
            }
        }
        if (!*end) break;
        s = end + 1;
    }
    return 0;
}

void sf_loss_format(const sf_loss *l, char *buf, size_t len) {
    static const char *const words[] = {"mse", "mae", "huber", "quantile"};
    size_t at = (size_t)snprintf(buf, len, "%s", words[l->kind]);
    char num[32];
    if (l->kind == SF_LOSS_HUBER) {
        shortest(num, sizeof num, l->delta);
        snprintf(buf + at, at < len ? len - at : 0, ":%s", num);
    }
    for (uint32_t j = 0; l->kind == SF_LOSS_QUANTILE && j < l->nq && at < len; j++) {
        shortest(num, sizeof num, l->q[j]);
        at += (size_t)snprintf(buf + at, len - at, "%s%s", j ? "," : ":", num);
    }
}

void sf_loss_quantile_name(const sf_loss *l, uint32_t j, char *buf, size_t len) {
    snprintf(buf, len, "q%.6g", l->q[j] * 100);
}

uint32_t sf_loss_point(const sf_loss *l) {
    uint32_t best = 0;
    for (uint32_t j = 1; l->kind == SF_LOSS_QUANTILE && j < l->nq; j++)
        if (fabs(l->q[j] - 0.5) < fabs(l->q[best] - 0.5)) best = j;
    return best;
}
