// GPU discovery: exits 77 (skip) without a usable GPU, after checking that
// the no-GPU answer comes with a reason; with GPUs, every device describes
// itself and an out-of-range index is refused.
#include <string.h>

#include "backend/backend.h"
#include "tests/common.h"

int main(void) {
    sf_err e = {0};
    int n = sf_gpu_count(&e);
    CHECK(n >= 0, "count %d", n);
    if (n == 0) {
        CHECK(strlen(e.msg) > 0, "no reason given for running without a GPU");
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
