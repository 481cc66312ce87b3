// libFuzzer target: the --model text parser. The first two bytes choose the
// feature and target counts; the rest is the text. Whatever it accepts must
// be a consistent model: its tensors tile the parameter buffer exactly, and
// it formats to a text that parses back to the same layout.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2 || size > 4096) return 0;
    uint32_t inputs = data[0] % 17, outputs = data[1] % 9;
    char *text = malloc(size - 1);
    if (!text) return 0;
    memcpy(text, data + 2, size - 2);
    text[size - 2] = 0;
    sf_model m;
    sf_err e = {0};
    if (sf_model_parse(&m, text, inputs, outputs, &e) != 0) {
        if (!e.msg[0]) __builtin_trap();  // every refusal says why
        free(text);
        return 0;
    }
    sf_tensor t[3 * SF_MODEL_MAX_LAYERS];
    uint32_t n = sf_model_tensors(&m, t);
    size_t at = 0;
    for (uint32_t k = 0; k < n; k++) {
        if (t[k].offset != at) __builtin_trap();
        at += t[k].shape[0] * (size_t)(t[k].rank == 2 ? t[k].shape[1] : 1);
    }
    if (at != m.nparams || m.layer[m.nlayers - 1].units != outputs) __builtin_trap();
    char again[4096];
    sf_model_format(&m, again, sizeof again);
    sf_model m2;
    if (strlen(again) < sizeof again - 1 &&
        (sf_model_parse(&m2, again, inputs, outputs, &e) != 0 || m2.nparams != m.nparams || m2.nlayers != m.nlayers))
        __builtin_trap();
    free(text);
    return 0;
}
