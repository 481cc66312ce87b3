// The chunk filters and the statistics every chunk feeds, against naive
// references written here: sf_filter_encode byte for byte (and back through
// sf_filter_decode), sf_moments_of bit for bit (its sums in the order the
// format promises: four lanes, i mod 4, then lane 0 + 1 + 2 + 3), on
// lengths around the vector widths and on values where float code goes
// wrong (signed zeros, subnormals, the extremes, long runs of one value).
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pack/internal.h"
#include "tests/common.h"
#include "tests/format/packutil.h"

static uint64_t rng_state = 0xf11e7e5ca1ab1e5ull;

static uint64_t rng(void) { return sf_splitmix64(&rng_state); }

// A finite value of one of the kinds that matter, or a step of a walk.
static float value(float walk) {
    switch (rng() % 8) {
    case 0: return rng() % 2 ? 0.0f : -0.0f;
    case 1: return (rng() % 2 ? 1 : -1) * FLT_MAX;
    case 2: return float_of((uint32_t)(rng() % 0x7fffff + 1) | (uint32_t)(rng() % 2) << 31);  // subnormal
    case 3: {
        uint32_t u;
        do u = (uint32_t)rng();
        while (!isfinite(float_of(u)));
        return float_of(u);
    }
    default: return walk;
    }
}

static void fill(float *x, size_t n, int kind) {
    float walk = 100.0f;
    for (size_t i = 0; i < n; i++) {
        walk += (float)(rng() % 2001) / 1000.0f - 1.0f;
        x[i] = kind == 0 ? walk : kind == 1 ? value(walk) : 7.25f;
    }
}

static int check_encode(const float *x, size_t ncols, size_t rows, int filter) {
    size_t n = ncols * rows;
    uint8_t *got = malloc(4 * n + 1), *want = malloc(4 * n + 1);
    float *back = malloc(sizeof(float) * n + 1);
    sf_filter_encode(got, x, ncols, rows, filter);
    for (size_t c = 0; c < ncols; c++)
        for (size_t r = 0; r < rows; r++) {
            size_t k = c * rows + r;
            uint32_t u = bits_of(x[k]), v = u;
            if (filter == SF_FILTER_DELTA_SHUFFLE) {
                uint32_t d = u - (r ? bits_of(x[k - 1]) : 0);
                v = (d << 1) ^ (d & 0x80000000u ? 0xffffffffu : 0);
            }
            for (int b = 0; b < 4; b++) {
                // none: each value's 4 bytes little-endian; else plane b
                size_t at = filter == SF_FILTER_NONE ? 4 * k + (size_t)b : (size_t)b * n + k;
                want[at] = (uint8_t)(v >> (8 * b));
            }
        }
    int bad = 0;
    for (size_t i = 0; i < 4 * n && !bad; i++)
        if (got[i] != want[i]) {
            printf("FAIL encode %s, %zu x %zu: byte %zu is %u, want %u\n", sf_filter_name(filter), ncols, rows, i,
                   got[i], want[i]);
            bad = 1;
        }
    sf_filter_decode(back, got, ncols, rows, filter);
    for (size_t i = 0; i < n && !bad; i++)
        if (bits_of(back[i]) != bits_of(x[i])) {
            printf("FAIL decode %s, %zu x %zu: value %zu is %08x, want %08x\n", sf_filter_name(filter), ncols, rows,
                   i, bits_of(back[i]), bits_of(x[i]));
            bad = 1;
        }
    free(got), free(want), free(back);
    return bad;
}

static int check_moments(const float *x, size_t n) {
    double s[4] = {0, 0, 0, 0}, q[4] = {0, 0, 0, 0};
    float mn = n ? x[0] : 0, mx = mn;
    for (size_t i = 0; i < n; i++) {
        s[i < n - n % 4 ? i % 4 : 0] += x[i];
        if (x[i] < mn) mn = x[i];
        if (x[i] > mx) mx = x[i];
    }
    double mean = n ? (s[0] + s[1] + s[2] + s[3]) / (double)n : 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)x[i] - mean;
        q[i < n - n % 4 ? i % 4 : 0] += d * d;
    }
    double m2 = q[0] + q[1] + q[2] + q[3];
    sf_moments m;
    sf_moments_of(&m, x, n);
    // min and max as numbers: which zero a column of both keeps is not part
    // of the format (verify compares them with ==)
    if (m.n != (double)n || memcmp(&m.mean, &mean, 8) || memcmp(&m.m2, &m2, 8) || m.min != mn || m.max != mx) {
        printf("FAIL moments of %zu values: n %.17g mean %.17g m2 %.17g min %.9g max %.9g, want mean %.17g m2 %.17g "
               "min %.9g max %.9g\n",
               n, m.n, m.mean, m.m2, (double)m.min, (double)m.max, mean, m2, (double)mn, (double)mx);
        return 1;
    }
    return 0;
}

int main(void) {
    enum { MOST = 70000 };
    float *x = malloc(sizeof(float) * MOST);
    int fails = 0, cases = 0;
    size_t lengths[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 1000, 65536, MOST};
    for (size_t li = 0; li < sizeof lengths / sizeof *lengths; li++)
        for (int kind = 0; kind < 3; kind++)
            for (int rep = 0; rep < (lengths[li] < 100 ? 20 : 2); rep++) {
                size_t n = lengths[li];
                fill(x, n, kind);
                fails += check_moments(x, n), cases++;
                for (size_t ncols = 1; ncols <= 3; ncols++) {
                    size_t rows = n / ncols;
                    for (int f = 0; f < SF_FILTER_COUNT; f++) fails += check_encode(x, ncols, rows, f), cases++;
                }
            }
    free(x);
    printf("%d of %d cases failed\n", fails, cases);
    return fails ? 1 : 0;
}
