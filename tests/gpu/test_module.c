// The GPU backend module loads on a machine without a GPU (cuDNN, cuBLAS and
// NCCL load without the driver), gives the backend table, and a missing
// module is reported with its reason. Runs in the unit suite of CUDA builds.
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "tests/common.h"

int main(int argc, char **argv) {
    sf_err e = {0};
    const sf_backend *b = sf_backend_gpu(&e);
    if (argc > 1 && strcmp(argv[1], "--missing") == 0)  // the child below
        return b == NULL && strstr(e.msg, "cannot load the GPU module") ? 0 : 1;
    CHECK(b && strcmp(b->name, "cuda") == 0 && b->open && b->reduce && b->staging_open && b->host_memory, "module %s: %s",
          getenv("SEQFEED_GPU_MODULE"), e.msg);
    // Another process, pointed at a module that is not there.
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "SEQFEED_GPU_MODULE=/nonexistent/seqfeed-gpu.so %s --missing", argv[0]);
    CHECK(system(cmd) == 0, "a missing module was not reported");
    return TEST_EXIT();
}
