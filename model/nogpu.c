// A build without CUDA has no GPU backend.
#include "model.h"

const sf_backend *const sf_backend_gpu = NULL;
