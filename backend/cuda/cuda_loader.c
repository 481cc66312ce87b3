// Finds and loads the GPU backend module once: cuda_replica.cu and
// cuda_staging.cu, built as seqfeed-gpu.so.
#include <pthread.h>

#include "backend/backend.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const sf_backend *backend;
static sf_err why;

static void load(void) {
    typedef const sf_backend *(*entry_fn)(void);
    entry_fn entry = (entry_fn)sf_module_entry("seqfeed-gpu.so", "SEQFEED_GPU_MODULE", SF_GPU_MODULE_INSTALLED,
                                               "the GPU module", "sf_gpu_module_backend", &why);
    if (entry) backend = entry();
}

const sf_backend *sf_backend_gpu(sf_err *e) {
    pthread_once(&once, load);
    if (!backend && e) *e = why;
    return backend;
}
