// The --model text: what is accepted, what is refused and how, Keras' names
// and the parameter layout.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "tests/common.h"

static void bad(const char *spec, uint32_t outputs, const char *says) {
    sf_model m;
    sf_err e = {0};
    int rc = sf_model_parse(&m, spec, 3, outputs, &e);
    CHECK(rc == SF_EINVAL && strstr(e.msg, says), "'%s': rc %d, message '%s', expected one with '%s'", spec, rc,
          e.msg, says);
}

// gru:U anywhere lstm:U goes: Keras' names, (in, 3U), (U, 3U) and a (2, 3U)
// bias (reset_after), Keras' parameter count, zero biases.
static void gru(void) {
    sf_model m;
    sf_err e = {0};
    CHECK(sf_model_parse(&m, "gru:16,dropout:0.1,lstm:8,gru:4,dense", 5, 2, &e) == 0, "mixed: %s", e.msg);
    char text[128];
    sf_model_format(&m, text, sizeof text);
    CHECK(strcmp(text, "gru:16,dropout:0.1,lstm:8,gru:4,dense:2") == 0, "format: %s", text);
    CHECK(m.layer[0].sequences && m.layer[2].sequences && !m.layer[3].sequences, "return_sequences: all but the last");
    // Keras' GRU(reset_after=True): 3U (in + U) + 2 x 3U.
    size_t want = (48 * (5 + 16) + 96) + (32 * (16 + 8) + 32) + (12 * (8 + 4) + 24) + (4 * 2 + 2);
    CHECK(m.nparams == want, "%zu parameters, Keras has %zu", m.nparams, want);
    sf_tensor t[16];
    uint32_t n = sf_model_tensors(&m, t);
    CHECK(n == 11 && !strcmp(t[0].name, "gru/kernel") && t[0].shape[1] == 48 && !strcmp(t[1].name, "gru/recurrent_kernel") &&
              t[1].shape[0] == 16 && t[1].shape[1] == 48 && !strcmp(t[2].name, "gru/bias") && t[2].rank == 2 &&
              t[2].shape[0] == 2 && t[2].shape[1] == 48 && !strcmp(t[3].name, "lstm/kernel") &&
              !strcmp(t[6].name, "gru_1/kernel") && t[8].offset + 24 == t[9].offset,
          "tensors: %u, %s %ux%u", n, t[2].name, t[2].shape[0], t[2].shape[1]);
    float *p = malloc(m.nparams * sizeof(float));
    for (size_t k = 0; k < m.nparams; k++) p[k] = NAN;
    sf_model_init(&m, p, 5);
    double maxabs = 0;
    for (size_t k = 0; k < 96; k++) maxabs = fmax(maxabs, fabs(p[m.layer[0].bias + k]));
    size_t finite = 0;
    for (size_t k = 0; k < m.nparams; k++) finite += isfinite(p[k]) != 0;
    CHECK(maxabs == 0 && finite == m.nparams, "GRU bias max %g, %zu of %zu initialised", maxabs, finite, m.nparams);
    free(p);
}

// --loss: its text read back to the same numbers, its column names, its
// point forecast, and the model's outputs (values x quantiles).
static void losses(void) {
    sf_err e = {0};
    const char *texts[][2] = {{"mse", "mse"}, {"mae", "mae"}, {"huber", "huber:1"}, {"huber:0.25", "huber:0.25"},
                              {"quantile:0.1,0.5,0.9", "quantile:0.1,0.5,0.9"},
                              {"quantile:.025,0.3,0.975", "quantile:0.025,0.3,0.975"}};
    for (size_t k = 0; k < sizeof texts / sizeof *texts; k++) {
        sf_loss l, back;
        char text[256];
        CHECK(sf_loss_parse(&l, texts[k][0], &e) == 0, "%s: %s", texts[k][0], e.msg);
        sf_loss_format(&l, text, sizeof text);
        CHECK(!strcmp(text, texts[k][1]), "%s formats as %s, expected %s", texts[k][0], text, texts[k][1]);
        CHECK(sf_loss_parse(&back, text, &e) == 0 && !memcmp(&l, &back, sizeof l), "%s does not read back", text);
    }
    sf_loss l, back;
    // The most quantiles, each with all 17 digits: the text (over 300 bytes) whole and read back the same.
    char longest[SF_LOSS_TEXT] = "quantile:", text[SF_LOSS_TEXT];
    for (int j = 0; j < SF_LOSS_MAX_QUANTILES; j++)
        snprintf(longest + strlen(longest), sizeof longest - strlen(longest), "%s%.17g", j ? "," : "",
                 0.012345678901234567 + 0.05 * j);
    CHECK(sf_loss_parse(&l, longest, &e) == 0 && l.nq == SF_LOSS_MAX_QUANTILES, "%s", e.msg);
    sf_loss_format(&l, text, sizeof text);
    CHECK(strlen(text) > 256 && sf_loss_parse(&back, text, &e) == 0 && !memcmp(&l, &back, sizeof l),
          "%s does not read back (%zu bytes)", text, strlen(text));
    char name[32];
    CHECK(sf_loss_parse(&l, "quantile:.025,0.3,0.975", &e) == 0, "%s", e.msg);
    sf_loss_quantile_name(&l, 0, name, sizeof name);
    CHECK(!strcmp(name, "q2.5") && sf_loss_point(&l) == 1 && sf_loss_width(&l) == 3, "name %s, point %u", name,
          sf_loss_point(&l));
    CHECK(sf_loss_parse(&l, "quantile:0.4,0.6", &e) == 0 && sf_loss_point(&l) == 0, "a tie: the lower");
    // Two quantiles predict's columns could not tell apart.
    CHECK(sf_loss_parse(&l, "quantile:0.1234561,0.1234562", &e) == SF_EUSAGE && strstr(e.msg, "both q12.3456"),
          "%s", e.msg);
    CHECK(sf_loss_parse(&l, "quantile:0.1,0.1000000001", &e) == SF_EUSAGE &&
              strstr(e.msg, "quantiles 0.1 and 0.1000000001 are both q10"), "%s", e.msg);
    CHECK(sf_loss_parse(&l, "huber:inf", &e) == SF_EUSAGE && strstr(e.msg, "a finite number above 0"), "%s", e.msg);
    sf_model m;
    CHECK(sf_loss_parse(&l, "quantile:0.1,0.5,0.9", &e) == 0 &&
              sf_model_parse_loss(&m, "lstm:4,dense", 2, 6, &l, &e) == 0 && m.outputs == 18 && m.values == 6 &&
              m.layer[1].units == 18,
          "a quantile model of 6 values: %s", e.msg);
    CHECK(sf_model_parse_loss(&m, "lstm:4,dense:6", 2, 6, &l, &e) == SF_EINVAL &&
              strstr(e.msg, "gives 18 output(s): one per target, times the steps of a --horizon A-B, times the "
                            "quantiles of --loss"),
          "%s", e.msg);
    CHECK(sf_model_parse(&m, "lstm:4,dense", 2, 6, &e) == 0 && m.outputs == 6 && m.values == 6 &&
              m.loss.kind == SF_LOSS_MSE, "MSE by default");
}

int main(void) {
    sf_model m;
    sf_err e = {0};
    CHECK(sf_model_parse(&m, SF_MODEL_DEFAULT, 3, 4, &e) == 0, "default: %s", e.msg);
    char text[256];
    sf_model_format(&m, text, sizeof text);
    CHECK(strcmp(text, "lstm:180,dropout:0.2,lstm:180,dropout:0.2,lstm:180,dropout:0.2,dense:4") == 0, "format: %s",
          text);
    // Keras' count: 3 x (4U (in + U) + 4U) + 180 x 4 + 4.
    size_t want = 4 * 180 * (3 + 180) + 4 * 180 + 2 * (4 * 180 * (180 + 180) + 4 * 180) + 180 * 4 + 4;
    CHECK(m.nparams == want, "default model: %zu parameters, Keras has %zu", m.nparams, want);
    CHECK(m.layer[0].sequences && m.layer[2].sequences && !m.layer[4].sequences && !m.layer[5].sequences,
          "return_sequences: every LSTM but the last, and the dropout after it");
    sf_tensor t[16];
    uint32_t n = sf_model_tensors(&m, t);
    CHECK(n == 11 && strcmp(t[0].name, "lstm/kernel") == 0 && strcmp(t[4].name, "lstm_1/recurrent_kernel") == 0 &&
              strcmp(t[9].name, "dense/kernel") == 0 && t[9].shape[0] == 180 && t[9].shape[1] == 4 &&
              t[10].offset + 4 == m.nparams,
          "tensors: %u, %s, %s, %s", n, t[0].name, t[4].name, t[9].name);
    // Layers' parameter ranges tile the buffer in order; dropout has none.
    size_t lo, hi, at = 0;
    for (uint32_t i = 0; i < m.nlayers; i++) {
        sf_model_layer_params(&m, i, &lo, &hi);
        if (m.layer[i].kind == SF_LAYER_DROPOUT) {
            CHECK(lo == hi, "layer %u (dropout) has parameters [%zu, %zu)", i, lo, hi);
            continue;
        }
        CHECK(lo == at && hi > lo && lo == m.layer[i].kernel, "layer %u: [%zu, %zu), expected to start at %zu", i, lo,
              hi, at);
        at = hi;
    }
    CHECK(at == m.nparams, "the layers' ranges end at %zu of %zu", at, m.nparams);
    CHECK(sf_model_parse(&m, " lstm:8 , dense:5 , dense ", 3, 2, &e) == 0 && m.nlayers == 3 &&
              strcmp(m.layer[2].name, "dense_1") == 0,
          "spaces and two dense layers: %s", e.msg);
    bad("lstm:0,dense", 2, "item 1 'lstm:0'");
    bad("lstm:8,dropout:1,dense", 2, "item 2");
    bad("lstm:8,rnn:4,dense", 2, "item 2 'rnn:4'");
    bad("gru,dense", 2, "item 1 'gru'");
    bad("gru:0,dense", 2, "the units of gru");
    bad("dense:4,gru:8,dense", 2, "before any LSTM or GRU");
    bad("dropout:0.5,dense", 2, "before any LSTM or GRU");
    bad("lstm,dense", 2, "item 1");
    bad("lstm:8", 2, "the last layer must be dense");
    bad("lstm:8,dense:3", 2, "has 3 units but the model gives 2 output(s)");
    bad("dense:4,lstm:8,dense", 2, "before any LSTM");
    bad("lstm:8,dense:4,lstm:8,dense", 2, "must follow the last LSTM");
    bad("lstm:8,dense,dense", 2, "only the last dense");
    bad("dropout:0.5", 2, "no lstm");
    bad("", 2, "item 1");
    // Initialisers: forget-gate bias 1, the rest 0; orthogonal rows.
    CHECK(sf_model_parse(&m, "lstm:16,dense", 5, 1, &e) == 0, "%s", e.msg);
    float *p = calloc(m.nparams, sizeof(float));
    sf_model_init(&m, p, 3);
    const sf_layer *l = &m.layer[0];
    CHECK(p[l->bias] == 0 && p[l->bias + 16] == 1 && p[l->bias + 47] == 0 && p[l->bias + 63] == 0, "LSTM bias");
    double worst = 0;
    for (int a = 0; a < 16; a++)
        for (int b = 0; b < 16; b++) {
            double dot = 0;
            for (int k = 0; k < 64; k++) dot += (double)p[l->recurrent + a * 64 + k] * p[l->recurrent + b * 64 + k];
            double err = fabs(dot - (a == b));
            if (err > worst) worst = err;
        }
    CHECK(worst < 1e-5, "recurrent kernel rows not orthonormal: %.3g", worst);
    double limit = sqrt(6.0 / (5 + 64)), maxabs = 0;
    for (size_t k = 0; k < 5 * 64; k++) maxabs = fmax(maxabs, fabs(p[l->kernel + k]));
    CHECK(maxabs <= limit && maxabs > 0.8 * limit, "glorot limit %.4f, largest %.4f", limit, maxabs);
    free(p);
    gru();
    losses();
    return TEST_EXIT();
}
