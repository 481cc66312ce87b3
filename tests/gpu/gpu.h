// Shared by the GPU tests: meson's skip (exit 77) when no GPU is usable.
#ifndef SF_TESTS_GPU_H
#define SF_TESTS_GPU_H

#include <stdio.h>
#include <stdlib.h>

#include "backend/backend.h"

// The number of usable GPUs; exits 77, saying why, when there is none.
static int gpus_or_skip(void) {
    sf_err e = {0};
    int n = sf_gpu_count(&e);
    if (n == 0) {
        fprintf(stderr, "skipped: %s\n", e.msg);
        exit(77);
    }
    return n;
}

#endif
