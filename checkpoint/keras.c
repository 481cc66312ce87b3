// A checkpoint as Keras 3 files: model.weights.h5 (HDF5, through libhdf5)
// and the .keras zip (through libzip) that holds it with config.json and
// metadata.json. Built as the module seqfeed-keras.so, which only export
// loads (keras_loader.c): libhdf5 brings some forty libraries with it, which
// no other command should pay for. The layout is Keras 3's saving_lib: layers/NAME/vars/0..
// for each layer's variables in order (an LSTM's under layers/NAME/cell),
// every vars group named by an attribute. The model is a Sequential that
// takes raw data: a Normalization of the inputs with the training data's
// mean and variance in front, one that inverts the targets' at the end.
#include <errno.h>
#include <hdf5.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zip.h>

#include "checkpoint.h"

// ---- model.weights.h5 ----

static int h5_fail(sf_err *e, const char *what) {
    return sf_err_set(e, SF_EIO, "HDF5: cannot %s", what);
}

// Group path (created with its parents) with attribute name=value when value.
static hid_t h5_group(hid_t file, const char *path, const char *value) {
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE), gcpl = H5Pcreate(H5P_GROUP_CREATE);
    if (lcpl < 0 || gcpl < 0) return -1;
    H5Pset_create_intermediate_group(lcpl, 1);
    H5Pset_obj_track_times(gcpl, 0);  // no clock in the file: an export is the same bytes every time
    hid_t g = H5Gcreate2(file, path, lcpl, gcpl, H5P_DEFAULT);
    H5Pclose(lcpl), H5Pclose(gcpl);
    if (g < 0 || !value) return g;
    hid_t type = H5Tcopy(H5T_C_S1), space = H5Screate(H5S_SCALAR);
    H5Tset_size(type, strlen(value));
    hid_t a = type >= 0 && space >= 0 ? H5Acreate2(g, "name", type, space, H5P_DEFAULT, H5P_DEFAULT) : -1;
    herr_t w = a >= 0 ? H5Awrite(a, type, value) : -1;
    if (a >= 0) H5Aclose(a);
    H5Sclose(space), H5Tclose(type);
    if (w < 0) {
        H5Gclose(g);
        return -1;
    }
    return g;
}

static int h5_tensor(hid_t g, int index, const float *data, uint32_t rank, const uint32_t *shape) {
    char name[16];
    snprintf(name, sizeof name, "%d", index);
    hsize_t dims[2] = {shape[0], rank > 1 ? shape[1] : 0};
    hid_t space = H5Screate_simple((int)rank, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (dcpl >= 0) H5Pset_obj_track_times(dcpl, 0);
    hid_t d = space >= 0 && dcpl >= 0 ? H5Dcreate2(g, name, H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT) : -1;
    herr_t w = d >= 0 ? H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) : -1;
    if (d >= 0) H5Dclose(d);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (space >= 0) H5Sclose(space);
    return w < 0 ? -1 : 0;
}

// The weights file's bytes, built in memory (the core driver, no backing
// file): *out malloc'd, *len bytes.
static int weights_h5(const sf_checkpoint *c, const sf_model *m, void **out, size_t *len, sf_err *e) {
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);  // errors come back as codes, not as prints
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0 || H5Pset_fapl_core(fapl, 1 << 20, 0) < 0) return h5_fail(e, "set up an in-memory file");
    hid_t f = H5Fcreate("model.weights.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    if (f < 0) return h5_fail(e, "create the weights file");
    int rc = 0;
    hid_t g = h5_group(f, "vars", m->extra ? "functional" : "sequential");
    if (g < 0) rc = h5_fail(e, "write the model's group");
    else H5Gclose(g);
    // The functional model's layers without weights (functional_json): each has its group too.
    static const char *const covariates[] = {"input_layer", "input_layer_1", "input_layer_2", "normalization_2",
                                             "flatten", "concatenate"};
    for (size_t i = 0; !rc && m->extra && i < sizeof covariates / sizeof *covariates; i++) {
        char path[96];
        snprintf(path, sizeof path, "layers/%s/vars", covariates[i]);
        hid_t v = h5_group(f, path, covariates[i]);
        if (v < 0) rc = h5_fail(e, "write a layer's group");
        else H5Gclose(v);
    }
    sf_tensor t[3 * SF_MODEL_MAX_LAYERS];
    uint32_t nt = sf_model_tensors(m, t), k = 0;
    // layers/normalization, the model's layers, layers/normalization_1. Keras
    // finds a layer's weights under its class's name and its place among
    // that class's layers: with an embedding, a bias-free Dense upstream of
    // the head (functional_json), the model's dense layers come one later.
    uint32_t denses = 0;
    for (int32_t l = -1; !rc && l <= (int32_t)m->nlayers; l++) {
        const sf_layer *ly = l >= 0 && l < (int32_t)m->nlayers ? &m->layer[l] : NULL;
        const char *name = ly ? ly->name : l < 0 ? "normalization" : "normalization_1";
        char path[96], group[32];
        snprintf(group, sizeof group, "%s", name);
        if (ly && ly->kind == SF_LAYER_DENSE && m->embed) snprintf(group, sizeof group, "dense_%u", ++denses);
        snprintf(path, sizeof path, "layers/%s/vars", group);
        hid_t v = h5_group(f, path, group), cell = -1;
        // A recurrent layer's weights are its cell's: lstm_cell, gru_cell.
        if (v >= 0 && ly && sf_layer_recurrent(ly)) {
            snprintf(path, sizeof path, "layers/%s/cell/vars", name);
            cell = h5_group(f, path, ly->kind == SF_LAYER_GRU ? "gru_cell" : "lstm_cell");
        }
        if (v < 0 || (ly && sf_layer_recurrent(ly) && cell < 0)) rc = h5_fail(e, "write a layer's group");
        // The layer's tensors follow in buffer order: kernel, recurrent kernel, bias.
        size_t prefix = strlen(name);
        for (int i = 0; !rc && ly && k < nt && !strncmp(t[k].name, name, prefix) && t[k].name[prefix] == '/'; i++, k++)
            if (h5_tensor(cell >= 0 ? cell : v, i, c->w + t[k].offset, t[k].rank, t[k].shape))
                rc = h5_fail(e, "write a tensor");
        if (cell >= 0) H5Gclose(cell);
        if (v >= 0) H5Gclose(v);
        if (!rc && ly && l == (int32_t)m->head && m->embed) {  // the head's embedding: the first Dense's kernel
            hid_t g = h5_group(f, "layers/dense/vars", "embedding");
            if (g < 0 || k >= nt || strcmp(t[k].name, "embedding/embeddings") ||
                h5_tensor(g, 0, c->w + t[k].offset, t[k].rank, t[k].shape))
                rc = h5_fail(e, "write the embedding");
            else k++;
            if (g >= 0) H5Gclose(g);
        }
    }
    // Several steps or quantiles: the Reshape to (steps, targets, quantiles) holds no weights, but has its
    // group as every layer. (The module links no pipeline: the steps read as sf_window_steps does.)
    bool reshaped = c->window.steps > 1 || sf_loss_width(&m->loss) > 1;
    hid_t reshape = rc || !reshaped ? 0 : h5_group(f, "layers/reshape/vars", "reshape");
    if (reshape < 0) rc = h5_fail(e, "write a layer's group");
    else if (reshape > 0) H5Gclose(reshape);
    if (!rc && k != nt) rc = sf_err_set(e, SF_EINVAL, "export: %u of the model's %u tensors written", k, nt);
    if (!rc && H5Fflush(f, H5F_SCOPE_GLOBAL) < 0) rc = h5_fail(e, "flush the weights file");
    ssize_t size = rc ? -1 : H5Fget_file_image(f, NULL, 0);
    if (!rc && size <= 0) rc = h5_fail(e, "take the weights file's image");
    if (!rc && !(*out = malloc((size_t)size))) rc = sf_err_set(e, SF_ENOMEM, "out of memory");
    if (!rc && H5Fget_file_image(f, *out, (size_t)size) != size) {
        free(*out);
        rc = h5_fail(e, "take the weights file's image");
    }
    if (!rc) *len = (size_t)size;
    H5Fclose(f);
    return rc;
}

// ---- config.json ----


// A Normalization layer's mean and variance from scaled = value x scale +
// offset: mean -offset / scale, variance 1 / scale^2 (Keras computes
// (x - mean) / sqrt(variance), and invert: mean + x sqrt(variance)). For
// changes (invert, no mean): the change in data units. W > 1: the input's
// last axis holds W quantiles of each of the n targets, and each target's
// numbers are repeated over them (axis [-2, -1], the statistics (n, W)).
static void normalization(sf_text *t, const char *name, const float *scale, const float *offset, uint32_t n, uint32_t W,
                          bool invert, bool no_mean, const char *shape) {
    sf_text_put(t, ",{\"module\":\"keras.layers\",\"class_name\":\"Normalization\",\"config\":{\"name\":\"%s\","
        "\"axis\":%s,\"invert\":%s,\"mean\":[", name, W > 1 ? "[-2,-1]" : "[-1]", invert ? "true" : "false");
    for (int v = 0; v < 2; v++) {
        if (v) sf_text_put(t, "],\"variance\":[");
        for (uint32_t j = 0; j < n; j++) {
            double x = v ? 1.0 / ((double)scale[j] * scale[j]) : no_mean ? 0.0 : -(double)offset[j] / scale[j];
            sf_text_put(t, "%s%s", j ? "," : "", W > 1 ? "[" : "");
            for (uint32_t q = 0; q < W; q++) sf_text_put(t, "%s%.9g", q ? "," : "", x);
            if (W > 1) sf_text_put(t, "]");
        }
    }
    sf_text_put(t, "]},\"build_config\":{\"input_shape\":%s}}", shape);
}

// The Reshape's target shape of the last Dense's units: (steps, targets),
// a quantile model's (steps, targets, quantiles), or (targets, quantiles)
// for one step.
static void reshape_dims(char *buf, size_t len, uint32_t steps, uint32_t targets, uint32_t W) {
    if (steps > 1 && W > 1) snprintf(buf, len, "%u,%u,%u", steps, targets, W);
    else snprintf(buf, len, "%u,%u", steps > 1 ? steps : targets, steps > 1 ? targets : W);
}

// A layer of a functional model: its class and config (without the braces'
// end), the shape its build takes, and its inputs, each a layer's name and
// the shape of that layer's output.
static void node(sf_text *t, const char *cls, const char *name, const char *config, const char *build, uint32_t n,
                 const char *const *from, const char *const *shapes) {
    sf_text_put(t, "%s{\"module\":\"keras.layers\",\"class_name\":\"%s\",\"config\":{\"name\":\"%s\"%s},"
                   "\"build_config\":{\"input_shape\":%s},\"name\":\"%s\",\"inbound_nodes\":[{\"args\":[%s",
                t->s && t->s[t->len - 1] != '[' ? "," : "", cls, name, config, build, name, n > 1 ? "[" : "");
    for (uint32_t k = 0; k < n; k++)
        sf_text_put(t, "%s{\"class_name\":\"__keras_tensor__\",\"config\":{\"shape\":%s,\"dtype\":\"float32\","
                       "\"keras_history\":[\"%s\",0,0]}}", k ? "," : "", shapes[k], from[k]);
    sf_text_put(t, "%s],\"kwargs\":{}}]}", n > 1 ? "]" : "");
}

// A Normalization's config (normalization's text without its wrapping);
// W > 1 as normalization's: each value repeated over W quantiles.
static void norm_config(char *buf, size_t cap, const float *scale, const float *offset, const uint32_t *pick, uint32_t n,
                        uint32_t W, bool invert, bool no_mean) {
    size_t len = (size_t)snprintf(buf, cap, ",\"axis\":%s,\"invert\":%s,\"mean\":[", W > 1 ? "[-2,-1]" : "[-1]",
                                  invert ? "true" : "false");
    for (int v = 0; v < 2; v++) {
        if (v && len < cap) len += (size_t)snprintf(buf + len, cap - len, "],\"variance\":[");
        for (uint32_t j = 0; j < n && len < cap; j++) {
            uint32_t i = pick ? pick[j] : j;
            double x = v ? 1.0 / ((double)scale[i] * scale[i]) : no_mean ? 0.0 : -(double)offset[i] / scale[i];
            len += (size_t)snprintf(buf + len, cap - len, "%s%s", j ? "," : "", W > 1 ? "[" : "");
            for (uint32_t q = 0; q < W && len < cap; q++)
                len += (size_t)snprintf(buf + len, cap - len, "%s%.9g", q ? "," : "", x);
            if (W > 1 && len < cap) len += (size_t)snprintf(buf + len, cap - len, "]");
        }
    }
    if (len < cap) snprintf(buf + len, cap - len, "]");
}

// With covariates, a functional model of named inputs in data units:
// window (T, inputs), then future (steps, future inputs; --future-features)
// and series (one-hot, --series-features), those it has. window and future
// each have a Normalization; future is flattened step by step (the order
// of the extra in seqfeed's x) and concatenated, series after it, with the
// output of the layer before the head; the head and the rest, the Reshape
// of several steps or quantiles included, as the Sequential has them.
static char *functional_json(const sf_checkpoint *c, const sf_model *m) {
    sf_text t = {0};
    uint32_t T = c->window.length, steps = c->window.steps > 1 ? c->window.steps : 1, F = c->future_inputs;
    uint32_t S = (uint32_t)c->nonehot, D = m->embed, W = sf_loss_width(&m->loss);
    size_t outs = (size_t)c->outputs * (W + 1);  // a quantile model's numbers and brackets per target
    size_t cap = 64 + 40 * (m->inputs > outs ? m->inputs : outs);
    char *cfg = malloc(cap), win[64], fut[64], flat[32], ser[32], emb[32], shape[192], prev_shape[64], prev[32];
    if (!cfg) return NULL;
    snprintf(win, sizeof win, "[null,%u,%u]", T, m->inputs);
    snprintf(fut, sizeof fut, "[null,%u,%u]", steps, F);
    snprintf(flat, sizeof flat, "[null,%u]", steps * F);
    snprintf(ser, sizeof ser, "[null,%u]", S);
    snprintf(emb, sizeof emb, "[null,%u]", D);
    sf_text_put(&t, "{\"module\":\"keras.src.models.functional\",\"class_name\":\"Functional\",\"config\":{"
                    "\"name\":\"functional\",\"trainable\":true,\"layers\":[");
    const char *inputs[3][2] = {{"window", win}, {"future", fut}, {"series", ser}};
    bool has[3] = {true, F > 0, S > 0};
    for (int k = 0, n = 0; k < 3; k++)
        if (has[k])
            sf_text_put(&t, "%s{\"module\":\"keras.layers\",\"class_name\":\"InputLayer\",\"config\":{"
                            "\"batch_shape\":%s,\"dtype\":\"float32\",\"sparse\":false,\"name\":\"%s\"},\"name\":\"%s\","
                            "\"inbound_nodes\":[]}", n++ ? "," : "", inputs[k][1], inputs[k][0], inputs[k][0]);
    norm_config(cfg, cap, c->feature_scale, c->feature_offset, NULL, m->inputs, 1, false, false);
    node(&t, "Normalization", "normalization", cfg, win, 1, (const char *[]){"window"}, (const char *[]){win});
    if (F) {
        norm_config(cfg, cap, c->feature_scale, c->feature_offset, c->future, F, 1, false, false);
        node(&t, "Normalization", "normalization_1", cfg, fut, 1, (const char *[]){"future"}, (const char *[]){fut});
        node(&t, "Flatten", "flatten", "", fut, 1, (const char *[]){"normalization_1"}, (const char *[]){fut});
    }
    if (D) {  // an embedding: the one-hot times the table, a bias-free Dense (Keras' Embedding of the index)
        snprintf(cfg, cap, ",\"units\":%u,\"use_bias\":false", D);
        node(&t, "Dense", "embedding", cfg, ser, 1, (const char *[]){"series"}, (const char *[]){ser});
    }
    snprintf(prev, sizeof prev, "normalization");
    snprintf(prev_shape, sizeof prev_shape, "%s", win);
    for (uint32_t l = 0; l < m->nlayers; l++) {
        const sf_layer *ly = &m->layer[l];
        if (l == m->head) {
            const char *from[3] = {prev}, *shapes[3] = {prev_shape};
            uint32_t n = 1;
            if (F) from[n] = "flatten", shapes[n++] = flat;
            const char *last = D ? emb : ser;
            if (S) from[n] = D ? "embedding" : "series", shapes[n++] = last;
            snprintf(shape, sizeof shape, "[%s,%s%s%s]", prev_shape, F ? flat : last, F && S ? "," : "",
                     F && S ? last : "");
            node(&t, "Concatenate", "concatenate", ",\"axis\":-1", shape, n, from, shapes);
            snprintf(prev, sizeof prev, "concatenate");
            snprintf(prev_shape, sizeof prev_shape, "[null,%u]", ly->in);
        }
        if (ly->kind == SF_LAYER_LSTM || ly->kind == SF_LAYER_GRU)
            snprintf(cfg, cap, ",\"units\":%u,\"return_sequences\":%s%s", ly->units, ly->sequences ? "true" : "false",
                     ly->kind == SF_LAYER_GRU ? ",\"reset_after\":true" : "");
        else if (ly->kind == SF_LAYER_DROPOUT) snprintf(cfg, cap, ",\"rate\":%.9g", (double)ly->rate);
        else snprintf(cfg, cap, ",\"units\":%u", ly->units);
        const char *cls = ly->kind == SF_LAYER_LSTM ? "LSTM" : ly->kind == SF_LAYER_GRU ? "GRU"
                          : ly->kind == SF_LAYER_DROPOUT ? "Dropout" : "Dense";
        node(&t, cls, ly->name, cfg, prev_shape, 1, (const char *[]){prev}, (const char *[]){prev_shape});
        snprintf(prev, sizeof prev, "%s", ly->name);
        if (ly->sequences) snprintf(prev_shape, sizeof prev_shape, "[null,%u,%u]", T, ly->units);
        else snprintf(prev_shape, sizeof prev_shape, "[null,%u]", ly->units);
    }
    if (steps > 1 || W > 1) {
        char dims[48];
        reshape_dims(dims, sizeof dims, steps, c->outputs, W);
        snprintf(cfg, cap, ",\"target_shape\":[%s]", dims);
        node(&t, "Reshape", "reshape", cfg, prev_shape, 1, (const char *[]){prev}, (const char *[]){prev_shape});
        snprintf(prev, sizeof prev, "reshape");
        snprintf(prev_shape, sizeof prev_shape, "[null,%s]", dims);
    }
    const char *last = F ? "normalization_2" : "normalization_1";
    norm_config(cfg, cap, c->target_scale, c->target_offset, NULL, c->outputs, W, true, c->target_change);
    node(&t, "Normalization", last, cfg, prev_shape, 1, (const char *[]){prev}, (const char *[]){prev_shape});
    sf_text_put(&t, "],\"input_layers\":[[\"window\",0,0]%s%s],\"output_layers\":[[\"%s\",0,0]]}}",
                F ? ",[\"future\",0,0]" : "", S ? ",[\"series\",0,0]" : "", last);
    free(cfg);
    return t.s;
}

static char *config_json(const sf_checkpoint *c, const sf_model *m) {
    if (m->extra) return functional_json(c, m);
    sf_text t = {0};
    uint32_t T = c->window.length;
    char shape[64];
    sf_text_put(&t, "{\"module\":\"keras\",\"class_name\":\"Sequential\",\"config\":{\"name\":\"sequential\",\"layers\":["
        "{\"module\":\"keras.layers\",\"class_name\":\"InputLayer\",\"config\":{\"batch_shape\":[null,%u,%u],"
        "\"dtype\":\"float32\",\"name\":\"input_layer\"}}", T, m->inputs);
    snprintf(shape, sizeof shape, "[null,%u,%u]", T, m->inputs);
    normalization(&t, "normalization", c->feature_scale, c->feature_offset, m->inputs, 1, false, false, shape);
    bool steps = true;  // the layer's input has every time step: until an LSTM or GRU returns only the last
    for (uint32_t l = 0; l < m->nlayers; l++) {
        const sf_layer *ly = &m->layer[l];
        if (steps) snprintf(shape, sizeof shape, "[null,%u,%u]", T, ly->in);
        else snprintf(shape, sizeof shape, "[null,%u]", ly->in);
        if (ly->kind == SF_LAYER_LSTM)
            sf_text_put(&t, ",{\"module\":\"keras.layers\",\"class_name\":\"LSTM\",\"config\":{\"name\":\"%s\",\"units\":%u,"
                "\"return_sequences\":%s}", ly->name, ly->units, ly->sequences ? "true" : "false");
        else if (ly->kind == SF_LAYER_GRU)  // reset_after spelled out: the bias (2, 3U) is that form's
            sf_text_put(&t, ",{\"module\":\"keras.layers\",\"class_name\":\"GRU\",\"config\":{\"name\":\"%s\",\"units\":%u,"
                "\"return_sequences\":%s,\"reset_after\":true}", ly->name, ly->units, ly->sequences ? "true" : "false");
        else if (ly->kind == SF_LAYER_DROPOUT)
            sf_text_put(&t, ",{\"module\":\"keras.layers\",\"class_name\":\"Dropout\",\"config\":{\"name\":\"%s\",\"rate\":%.9g}",
                ly->name, (double)ly->rate);
        else
            sf_text_put(&t, ",{\"module\":\"keras.layers\",\"class_name\":\"Dense\",\"config\":{\"name\":\"%s\",\"units\":%u}",
                ly->name, ly->units);
        sf_text_put(&t, ",\"build_config\":{\"input_shape\":%s}}", shape);
        if (sf_layer_recurrent(ly)) steps = ly->sequences;
    }
    snprintf(shape, sizeof shape, "[null,%u]", m->outputs);
    uint32_t nsteps = c->window.steps > 1 ? c->window.steps : 1, W = sf_loss_width(&m->loss);
    // As Keras' multi-step single-shot model: the last Dense's units as
    // (steps, targets), and a quantile model's as (steps, targets, quantiles)
    // or (targets, quantiles) for one step.
    if (nsteps > 1 || W > 1) {
        char dims[48];
        reshape_dims(dims, sizeof dims, nsteps, c->outputs, W);
        sf_text_put(&t, ",{\"module\":\"keras.layers\",\"class_name\":\"Reshape\",\"config\":{\"name\":\"reshape\","
            "\"target_shape\":[%s]},\"build_config\":{\"input_shape\":%s}}", dims, shape);
        snprintf(shape, sizeof shape, "[null,%s]", dims);
    }
    normalization(&t, "normalization_1", c->target_scale, c->target_offset, c->outputs, W, true, c->target_change,
                  shape);
    snprintf(shape, sizeof shape, "[null,%u,%u]", T, m->inputs);
    sf_text_put(&t, "]},\"build_config\":{\"input_shape\":%s}}", shape);
        return t.s;
}

// ---- the files ----

static int write_bytes(const char *path, const void *data, size_t len, sf_err *e) {
    char *tmp = NULL;
    int fd = sf_temp_create(path, &tmp, e);
    if (fd < 0) return fd;
    int rc = 0;
    for (size_t at = 0; !rc && at < len;) {
        ssize_t w = write(fd, (const char *)data + at, len - at);
        if (w < 0) rc = sf_err_errno(e, SF_EIO, errno, "%s: write failed", path);
        else at += (size_t)w;
    }
    if (!rc) rc = sf_temp_commit(fd, tmp, path, e);
    close(fd);
    if (rc && tmp) unlink(tmp);
    free(tmp);
    return rc;
}

// The .keras zip in memory: a buffer source libzip writes the archive into.
static int keras_zip(const void *h5, size_t h5_len, const char *config, void **out, size_t *len, sf_err *e) {
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(NULL, 0, 0, &ze);
    zip_t *z = src ? zip_open_from_source(src, ZIP_TRUNCATE, &ze) : NULL;
    if (!z) {
        int rc = sf_err_set(e, SF_EIO, "libzip: %s", zip_error_strerror(&ze));
        if (src) zip_source_free(src);
        zip_error_fini(&ze);
        return rc;
    }
    zip_source_keep(src);  // the archive's bytes stay in it after zip_close
    char meta[128], date[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(date, sizeof date, "%Y-%m-%d@%H:%M:%S", localtime_r(&now, &tm));
    snprintf(meta, sizeof meta, "{\"keras_version\": \"3.0.0\", \"date_saved\": \"%s\"}", date);
    const struct {
        const char *name;
        const void *data;
        size_t len;
    } files[] = {{"metadata.json", meta, strlen(meta)}, {"config.json", config, strlen(config)},
                 {"model.weights.h5", h5, h5_len}};
    int rc = 0;
    for (size_t i = 0; !rc && i < 3; i++) {
        zip_source_t *s = zip_source_buffer(z, files[i].data, files[i].len, 0);
        if (!s || zip_file_add(z, files[i].name, s, ZIP_FL_OVERWRITE) < 0) {
            if (s) zip_source_free(s);
            rc = sf_err_set(e, SF_EIO, "libzip: %s", zip_strerror(z));
        }
    }
    if (rc) zip_discard(z);
    else if (zip_close(z) < 0) rc = sf_err_set(e, SF_EIO, "libzip: %s", zip_strerror(z));
    zip_stat_t st;
    if (!rc && (zip_source_stat(src, &st) < 0 || !(st.valid & ZIP_STAT_SIZE) || zip_source_open(src) < 0))
        rc = sf_err_set(e, SF_EIO, "libzip: cannot read back the archive");
    if (!rc && !(*out = malloc(st.size + 1))) rc = sf_err_set(e, SF_ENOMEM, "out of memory");
    if (!rc) {
        zip_int64_t n = zip_source_read(src, *out, st.size);
        if (n != (zip_int64_t)st.size) {
            free(*out);
            rc = sf_err_set(e, SF_EIO, "libzip: cannot read back the archive");
        }
        *len = (size_t)st.size;
        zip_source_close(src);
    }
    zip_source_free(src);
    zip_error_fini(&ze);
    return rc;
}

// The module's one entry point (keras_loader.c finds it by name).
__attribute__((visibility("default"))) int sf_keras_module_export(const char *path, const sf_checkpoint *c,
                                                                  const sf_model *m, enum sf_keras_format format,
                                                                  sf_err *e);
int sf_keras_module_export(const char *path, const sf_checkpoint *c, const sf_model *m, enum sf_keras_format format,
                           sf_err *e) {
    void *h5 = NULL, *zip = NULL;
    size_t h5_len = 0, zip_len = 0;
    int rc = weights_h5(c, m, &h5, &h5_len, e);
    if (!rc && format == SF_KERAS_WEIGHTS) rc = write_bytes(path, h5, h5_len, e);
    else if (!rc) {
        char *config = config_json(c, m);
        rc = config ? keras_zip(h5, h5_len, config, &zip, &zip_len, e) : sf_err_set(e, SF_ENOMEM, "out of memory");
        if (!rc) rc = write_bytes(path, zip, zip_len, e);
        free(config);
    }
    free(h5), free(zip);
    return rc;
}
