// Tiny test helpers: CHECK prints file:line and the failed condition.
#ifndef SF_TESTS_COMMON_H
#define SF_TESTS_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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

#define TEST_EXIT() (test_failures ? (fprintf(stderr, "%d checks failed\n", test_failures), 1) : 0)

#endif
