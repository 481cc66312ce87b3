// kernels: GPU discovery now; the CUDA kernels of the model (and their CPU
// twins) join it with the GPU backend. Every function works, and reports "no
// GPU", in a build without CUDA and on a machine without a driver.
#ifndef SF_KERNELS_H
#define SF_KERNELS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/common.h"

// True when this binary was compiled with the CUDA backend.
bool sf_gpu_built(void);

// Number of usable GPUs. 0 means "run on CPU"; then e (if not NULL) says why
// in one line (no driver, no device, built without CUDA). Never fails.
int sf_gpu_count(sf_err *e);

// Fills name (and memory in bytes) of device dev. Returns 0 or SF_EINVAL.
int sf_gpu_describe(int dev, char *name, size_t name_len, size_t *memory, sf_err *e);

#endif
