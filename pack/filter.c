#include <math.h>
#include <stdbool.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "internal.h"

const char *sf_filter_name(int filter) {
    switch (filter) {
    case SF_FILTER_NONE: return "none";
    case SF_FILTER_SHUFFLE: return "shuffle";
    case SF_FILTER_DELTA_SHUFFLE: return "delta-shuffle";
    default: return "unknown";
    }
}

int sf_filter_parse(const char *name) {
    for (int f = 0; f < SF_FILTER_COUNT; f++)
        if (strcmp(name, sf_filter_name(f)) == 0) return f;
    return -1;
}

static inline uint32_t float_bits(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    return u;
}

// Zigzag: small steps down become small numbers too, instead of
// 0xffffff.. that would fill the high byte planes with noise.
static inline uint32_t zigzag32(uint32_t d) { return d << 1 ^ (0u - (d >> 31)); }

// Byte k of v into plane k (planes n bytes apart) at r.
static inline void put_planes(uint8_t *q, size_t n, size_t r, uint32_t v) {
    q[r] = (uint8_t)v, q[n + r] = (uint8_t)(v >> 8);
    q[2 * n + r] = (uint8_t)(v >> 16), q[3 * n + r] = (uint8_t)(v >> 24);
}

// Byte plane k of the chunk holds byte k of every value, so the high bytes
// (sign, exponent, leading mantissa bits), which repeat, sit next to each other.
// A delta is taken from the value before read again, not carried from the
// iteration before: that kept the loop scalar, and with sf_moments_of it
// was a sixth of a threaded pack's CPU.
void sf_filter_encode(uint8_t *out, const float *in, size_t ncols, size_t rows, int filter) {
    size_t n = ncols * rows;
    if (filter == SF_FILTER_NONE) {
        for (size_t i = 0; i < n; i++) sf_put_u32(out + 4 * i, float_bits(in[i]));
        return;
    }
    bool delta = filter == SF_FILTER_DELTA_SHUFFLE;
    for (size_t c = 0; c < ncols && rows; c++) {
        const float *col = in + c * rows;
        uint8_t *q = out + c * rows;
        if (!delta)
            for (size_t r = 0; r < rows; r++) put_planes(q, n, r, float_bits(col[r]));
        else {
            put_planes(q, n, 0, zigzag32(float_bits(col[0])));
            for (size_t r = 1; r < rows; r++)
                put_planes(q, n, r, zigzag32(float_bits(col[r]) - float_bits(col[r - 1])));
        }
    }
}

// x[j] = acc + x[0] + ... + x[j]; returns the last sum. With SSE2 four lanes
// at a time (two shifted adds, then the carry of the previous four), which
// halves the serial chain of the scalar loop.
static uint32_t running_sum(uint32_t *x, size_t m, uint32_t acc) {
    size_t j = 0;
#if defined(__SSE2__)
    __m128i carry = _mm_set1_epi32((int)acc);
    for (; j + 4 <= m; j += 4) {
        __m128i v = _mm_loadu_si128((const __m128i *)(x + j));
        v = _mm_add_epi32(v, _mm_slli_si128(v, 4));
        v = _mm_add_epi32(v, _mm_slli_si128(v, 8));
        v = _mm_add_epi32(v, carry);
        _mm_storeu_si128((__m128i *)(x + j), v);
        carry = _mm_shuffle_epi32(v, 0xff);
    }
    acc = (uint32_t)_mm_cvtsi128_si32(carry);
#endif
    for (; j < m; j++) x[j] = acc += x[j];
    return acc;
}

void sf_filter_decode(float *out, const uint8_t *in, size_t ncols, size_t rows, int filter) {
    size_t n = ncols * rows;
    if (filter == SF_FILTER_NONE) {
        for (size_t i = 0; i < n; i++) {
            uint32_t u = sf_get_u32(in + 4 * i);
            memcpy(out + i, &u, 4);
        }
        return;
    }
    // Blocks of a column through a small buffer: the gather from the planes
    // and the zigzag decoding vectorise there, the running sum stays a
    // short serial loop over data in L1.
    enum { BLOCK = 1024 };
    uint32_t tmp[BLOCK];
    const uint8_t *p0 = in, *p1 = in + n, *p2 = in + 2 * n, *p3 = in + 3 * n;
    bool delta = filter == SF_FILTER_DELTA_SHUFFLE;
    for (size_t c = 0; c < ncols; c++) {
        uint32_t acc = 0;
        for (size_t r0 = 0; r0 < rows; r0 += BLOCK) {
            size_t m = rows - r0 < BLOCK ? rows - r0 : BLOCK, k0 = c * rows + r0;
            for (size_t j = 0; j < m; j++) {
                uint32_t u = (uint32_t)p0[k0 + j] | (uint32_t)p1[k0 + j] << 8 | (uint32_t)p2[k0 + j] << 16 |
                             (uint32_t)p3[k0 + j] << 24;
                tmp[j] = delta ? u >> 1 ^ (0u - (u & 1)) : u;
            }
            if (delta) acc = running_sum(tmp, m, acc);
            memcpy(out + k0, tmp, m * 4);
        }
    }
}

// Four partial sums break the add latency chain; the order is fixed, so the
// result is the same on every run and in sf_pack_verify. With SSE2 the four
// lanes are two vectors of two doubles, each lane's sum in the same order as
// the scalar loop's, and the least and greatest value are kept per lane
// (minps is the scalar loop's v < lo ? v : lo, NaN ignored but in x[0]; the
// least of the values is the same in any order, but for which of -0 and +0,
// which compare equal): the compiler had left the loops scalar, a twelfth
// of a threaded pack's CPU.
void sf_moments_of(sf_moments *m, const float *x, size_t n) {
    double s[4] = {0, 0, 0, 0}, q[4] = {0, 0, 0, 0};
    float mn = n ? x[0] : 0, mx = mn;
    size_t i = 0;
#if defined(__SSE2__)
    __m128d s01 = _mm_setzero_pd(), s23 = _mm_setzero_pd();
    __m128 lo = _mm_set1_ps(mn), hi = lo;
    for (; i + 4 <= n; i += 4) {
        __m128 v = _mm_loadu_ps(x + i);
        s01 = _mm_add_pd(s01, _mm_cvtps_pd(v));
        s23 = _mm_add_pd(s23, _mm_cvtps_pd(_mm_movehl_ps(v, v)));
        lo = _mm_min_ps(v, lo);  // v < lo ? v : lo, lane by lane
        hi = _mm_max_ps(v, hi);
    }
    float l[4], h[4];
    _mm_storeu_pd(s, s01), _mm_storeu_pd(s + 2, s23);
    _mm_storeu_ps(l, lo), _mm_storeu_ps(h, hi);
    for (int k = 0; k < 4; k++) {
        mn = l[k] < mn ? l[k] : mn;
        mx = h[k] > mx ? h[k] : mx;
    }
#endif
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; k++) {
            s[k] += x[i + k];
            mn = x[i + k] < mn ? x[i + k] : mn;
            mx = x[i + k] > mx ? x[i + k] : mx;
        }
    for (; i < n; i++) {
        s[0] += x[i];
        mn = x[i] < mn ? x[i] : mn;
        mx = x[i] > mx ? x[i] : mx;
    }
    double mean = n ? (s[0] + s[1] + s[2] + s[3]) / (double)n : 0;
    i = 0;
#if defined(__SSE2__)
    __m128d q01 = _mm_setzero_pd(), q23 = _mm_setzero_pd(), mean2 = _mm_set1_pd(mean);
    for (; i + 4 <= n; i += 4) {
        __m128 v = _mm_loadu_ps(x + i);
        __m128d d01 = _mm_sub_pd(_mm_cvtps_pd(v), mean2), d23 = _mm_sub_pd(_mm_cvtps_pd(_mm_movehl_ps(v, v)), mean2);
        q01 = _mm_add_pd(q01, _mm_mul_pd(d01, d01));
        q23 = _mm_add_pd(q23, _mm_mul_pd(d23, d23));
    }
    _mm_storeu_pd(q, q01), _mm_storeu_pd(q + 2, q23);
#endif
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; k++) {
            double d = (double)x[i + k] - mean;
            q[k] += d * d;
        }
    for (; i < n; i++) {
        double d = (double)x[i] - mean;
        q[0] += d * d;
    }
    *m = (sf_moments){(double)n, mean, q[0] + q[1] + q[2] + q[3], mn, mx};
}

void sf_moments_merge(sf_moments *acc, const sf_moments *m) {
    if (m->n == 0) return;
    if (acc->n == 0) {
        *acc = *m;
        return;
    }
    double n = acc->n + m->n, d = m->mean - acc->mean;
    acc->mean += d * (m->n / n);
    acc->m2 += m->m2 + d * d * (acc->n * m->n / n);
    acc->n = n;
    acc->min = m->min < acc->min ? m->min : acc->min;
    acc->max = m->max > acc->max ? m->max : acc->max;
}

void sf_moments_finish(sf_col_stats *out, const sf_moments *m) {
    if (m->n == 0) {
        *out = (sf_col_stats){0, 0, 0, 0};
        return;
    }
    *out = (sf_col_stats){m->min, m->max, m->mean, sqrt(m->m2 / m->n)};
}
