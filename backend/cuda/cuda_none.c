// A build without CUDA: no GPU, said in one line, and no GPU backend.
#include "backend/backend.h"

bool sf_gpu_built(void) { return false; }

int sf_gpu_count(sf_err *e) {
    sf_err_set(e, SF_OK, "this seqfeed was built without CUDA (rebuild with nvcc on PATH and -Dcuda=enabled)");
    return 0;
}

int sf_gpu_capability(int dev) {
    (void)dev;
    return 0;
}

int sf_gpu_bus_id(int dev, char *id, size_t len) {
    (void)dev, (void)id, (void)len;
    return SF_EINVAL;
}

int sf_gpu_describe(int dev, char *name, size_t name_len, size_t *memory, sf_err *e) {
    (void)name, (void)name_len, (void)memory;
    return sf_err_set(e, SF_EINVAL, "no GPU %d: built without CUDA", dev);
}

const sf_backend *sf_backend_gpu(sf_err *e) {
    sf_err_set(e, SF_EINVAL, "this seqfeed was built without CUDA");
    return NULL;
}
