// Finds and loads the GPU backend module once: cuda_replica.cu and
// cuda_staging.cu, built as seqfeed-gpu.so.
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const sf_backend *backend;
static sf_err why;

static void *open_module(const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *msg = dlerror();
        sf_err_set(&why, SF_EINVAL, "cannot load the GPU module: %s", msg ? msg : path);
    }
    return h;
}

static void load(void) {
    const char *env = getenv("SEQFEED_GPU_MODULE");
    char path[PATH_MAX + 32] = "", self[PATH_MAX];
    void *h = NULL;
    if (env && *env) {
        h = open_module(env);
    } else {
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n > 0) {
            self[n] = 0;
            snprintf(path, sizeof path, "%s/seqfeed-gpu.so", dirname(self));
            if (access(path, F_OK) == 0) h = open_module(path);
        }
        if (!h && access(SF_GPU_MODULE_INSTALLED, F_OK) == 0) h = open_module(SF_GPU_MODULE_INSTALLED);
        if (!h && !why.msg[0])
            sf_err_set(&why, SF_EINVAL, "no GPU module (seqfeed-gpu.so) next to the program or at %s",
                       SF_GPU_MODULE_INSTALLED);
    }
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
