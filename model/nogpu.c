// A build without CUDA has no GPU backend.
#include "model.h"

const sf_backend *sf_backend_gpu(sf_err *e) {
    sf_err_set(e, SF_EINVAL, "this seqfeed was built without CUDA");
    return NULL;
}
