// GPU discovery: exits 77 (skip) without a usable GPU, after checking that
// the no-GPU answer comes with a reason in words (no driver, no GPU; never
// CUDA's "driver version is insufficient" for a machine without one); with
// GPUs, every device describes itself and an out-of-range index is refused.
// With the argument "hidden" (run with CUDA_VISIBLE_DEVICES empty) there
// must be no GPU, and the reason says so.
#include <string.h>

#include "backend/backend.h"
#include "tests/common.h"

int main(int argc, char **argv) {
    sf_err e = {0};
    int n = sf_gpu_count(&e);
    bool hidden = argc > 1 && !strcmp(argv[1], "hidden");
    CHECK(n >= 0, "count %d", n);
    CHECK(!hidden || n == 0, "%d GPU(s) seen with CUDA_VISIBLE_DEVICES empty", n);
    if (n == 0) {
        CHECK(strlen(e.msg) > 0, "no reason given for running without a GPU");
        CHECK(!strstr(e.msg, "insufficient") && !strstr(e.msg, "CUDA error 35") && !strstr(e.msg, "CUDA error 100"),
              "the reason is CUDA's code, not words: %s", e.msg);
        if (sf_gpu_built())
            CHECK(!strncmp(e.msg, "no NVIDIA driver", 16) || !strncmp(e.msg, "no GPU", 6) ||
                  (!hidden && !strncmp(e.msg, "the NVIDIA driver supports", 26)),
                  "reason: %s", e.msg);
        if (test_failures) return TEST_EXIT();
        fprintf(stderr, "skipped: %s\n", e.msg);
        return 77;
    }
    for (int d = 0; d < n; d++) {
        char name[256] = "";
        size_t mem = 0;
        CHECK(sf_gpu_describe(d, name, sizeof name, &mem, &e) == 0, "GPU %d: %s", d, e.msg);
        CHECK(name[0] && mem > 0, "GPU %d: empty description", d);
        printf("GPU %d: %s, %zu bytes\n", d, name, mem);
    }
    CHECK(sf_gpu_describe(n, (char[64]){0}, 64, &(size_t){0}, &e) != 0, "device %d should not exist", n);
    return TEST_EXIT();
}
