// libFuzzer target: the safetensors reader on arbitrary bytes. Whatever it
// accepts must be self-consistent: every tensor's range inside the data.
#include <stdint.h>
#include <string.h>

#include "checkpoint/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sf_st *s;
    sf_err e = {0};
    if (sf_st_parse(&s, data, size, "fuzz", &e) != 0) {
        if (!e.msg[0]) __builtin_trap();  // every refusal says why
        return 0;
    }
    volatile uint8_t sum = 0;
    for (size_t i = 0; i < sf_st_count(s); i++) {
        const sf_st_entry *t = sf_st_entry_at(s, i);
        const uint8_t *p = sf_st_data(s, t);
        for (uint64_t k = t->begin; k < t->end; k++) sum ^= p[k - t->begin];
        if (sf_st_find(s, t->name) != t) __builtin_trap();
    }
    (void)sf_st_meta(s, "model");
    sf_st_close(s);
    return 0;
}
