// Tiny test helpers: CHECK prints file:line and the failed condition.
#ifndef SF_TESTS_COMMON_H
#define SF_TESTS_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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

// splitmix64: a fixed seed gives the same inputs on every run.
static inline uint64_t test_splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#define TEST_EXIT() (test_failures ? (fprintf(stderr, "%d checks failed\n", test_failures), 1) : 0)

#endif
