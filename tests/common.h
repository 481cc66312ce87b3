// Tiny test helpers: CHECK prints file:line and the failed condition.
#ifndef SF_TESTS_COMMON_H
#define SF_TESTS_COMMON_H

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"  // sf_splitmix64: fixed seeds, the same inputs on every run

static int test_failures;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
            test_failures++;                                                    \
        }                                                                       \
    } while (0)

// The promise a packer makes (tests/csv, tests/arrow): out, a file of dir,
// exists only after success, and no out.tmp.* ever stays behind in dir.
static inline void check_pack_outputs(const char *dir, const char *out, bool want_out) {
    CHECK((access(out, F_OK) == 0) == want_out, "%s should %sexist", out, want_out ? "" : "not ");
    const char *base = strrchr(out, '/') ? strrchr(out, '/') + 1 : out;
    size_t n = strlen(base);
    DIR *d = opendir(dir);
    CHECK(d, "cannot list %s", dir);
    if (!d) return;
    for (struct dirent *de; (de = readdir(d));)
        CHECK(strncmp(de->d_name, base, n) != 0 || strncmp(de->d_name + n, ".tmp.", 5) != 0,
              "temporary file %s/%s left behind", dir, de->d_name);
    closedir(d);
}

#define TEST_EXIT() (test_failures ? (fprintf(stderr, "%d checks failed\n", test_failures), 1) : 0)

#endif
