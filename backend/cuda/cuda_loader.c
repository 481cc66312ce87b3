// Finds and loads the GPU backend module once: cuda_replica.cu and
// cuda_staging.cu, built as seqfeed-gpu.so.
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "backend/backend.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const sf_backend *backend;
static sf_err why;

static void load(void) {
    void *h = sf_module_open("seqfeed-gpu.so", "SEQFEED_GPU_MODULE", SF_GPU_MODULE_INSTALLED, "the GPU module", &why);
    if (!h) return;
    const sf_backend *(*entry)(void);
    void *sym = dlsym(h, "sf_gpu_module_backend");
    memcpy(&entry, &sym, sizeof entry);  // POSIX: a function's address as data
    if (!entry) {
        sf_err_set(&why, SF_EINVAL, "the GPU module has no sf_gpu_module_backend");
        return;
    }
    backend = entry();
}

const sf_backend *sf_backend_gpu(sf_err *e) {
    pthread_once(&once, load);
    if (!backend && e) *e = why;
    return backend;
}
