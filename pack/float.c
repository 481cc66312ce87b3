// Decimal text <-> float32, exactly as strtof rounds and reads back.
//
// Parsing: the digits give an integer m and a power of ten; m * 10^e is
// computed in double with a known small error. Because double carries 29 more
// bits than float, the double lands on the same side of every float rounding
// boundary as the exact value unless it is within a few double ulps of a
// midpoint between two floats; only then (and for subnormal or near-overflow
// results) does the parser fall back to strtof itself. tests/format/test_float.c
// checks this against strtof on millions of strings, midpoints included.
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const double sf_p10[] = {
    1e-80, 1e-79, 1e-78, 1e-77, 1e-76, 1e-75, 1e-74, 1e-73, 1e-72, 1e-71, 1e-70, 1e-69, 1e-68, 1e-67, 1e-66, 
    1e-65, 1e-64, 1e-63, 1e-62, 1e-61, 1e-60, 1e-59, 1e-58, 1e-57, 1e-56, 1e-55, 1e-54, 1e-53, 1e-52, 1e-51, 
    1e-50, 1e-49, 1e-48, 1e-47, 1e-46, 1e-45, 1e-44, 1e-43, 1e-42, 1e-41, 1e-40, 1e-39, 1e-38, 1e-37, 1e-36, 
    1e-35, 1e-34, 1e-33, 1e-32, 1e-31, 1e-30, 1e-29, 1e-28, 1e-27, 1e-26, 1e-25, 1e-24, 1e-23, 1e-22, 1e-21, 
    1e-20, 1e-19, 1e-18, 1e-17, 1e-16, 1e-15, 1e-14, 1e-13, 1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 
    1e-4, 1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 
    1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31, 1e32, 1e33, 
    1e34, 1e35, 1e36, 1e37, 1e38, 1e39, 1e40, 1e41, 1e42, 1e43, 1e44, 1e45, 1e46, 1e47, 1e48, 1e49, 1e50, 1e51, 
    1e52, 1e53, 1e54, 1e55, 1e56, 1e57, 1e58, 1e59, 1e60
};

int sf_parse_float_slow(const char *s, size_t n, float *out) {
    char stack[128], *buf = n < sizeof stack ? stack : malloc(n + 1);
    if (!buf) return SF_ENOMEM;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    errno = 0;
    float v = strtof(buf, &end);
    bool whole = end == buf + n;
    if (buf != stack) free(buf);
    if (!whole) return SF_EFORMAT;
    if (isinf(v)) return SF_ERANGE;
    *out = v;
    return 0;
}

static inline bool is_digit(char c) { return (unsigned)(c - '0') < 10; }

int sf_parse_float(const char *s, size_t n, float *out) {
    const char *p = s, *end = s + n;
    bool neg = false;
    if (p < end && (*p == '+' || *p == '-')) neg = *p++ == '-';
    uint64_t m = 0;
    int digits = 0;      // significant digits in m
    long e10 = 0;        // value = m * 10^e10 (before the exponent part)
    bool any = false;
    while (p < end && *p == '0') p++, any = true;
    for (; p < end && is_digit(*p); p++, any = true) {
        if (digits < 19) m = m * 10 + (uint64_t)(*p - '0'), digits++;
        else e10++;  // beyond 19 digits only the magnitude counts
    }
    if (p < end && *p == '.') {
        p++;
        if (digits == 0)
            for (; p < end && *p == '0'; p++) e10--, any = true;
        for (; p < end && is_digit(*p); p++, any = true) {
            if (digits < 19) m = m * 10 + (uint64_t)(*p - '0'), digits++, e10--;
        }
    }
    if (!any) return SF_EFORMAT;
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        bool eneg = false;
        if (p < end && (*p == '+' || *p == '-')) eneg = *p++ == '-';
        if (p == end || !is_digit(*p)) return SF_EFORMAT;
        long x = 0;
        bool huge = false;
        for (; p < end && is_digit(*p); p++)
            if (x < 100000) x = x * 10 + (*p - '0');
            else huge = true;
        // x stops at 10^5, which decides alone unless the mantissa has about
        // as many digits (10^6 zeros against e-1000000 is 1): strtof weighs both.
        if (huge && p == end) return sf_parse_float_slow(s, n, out);
        e10 += eneg ? -x : x;
    }
    if (p != end) return SF_EFORMAT;
    return sf_decimal_to_float(m, e10, digits, neg, s, n, out);
}

// The shortest of "%.1g" .. "%.9g" that reads back as v; false if none
// does (left in buf is "%.9g", which always does but for the powers of two
// handled below).
static int shortest(char *buf, float v) {
    // Away from powers of two, the decimals that read back are those within
    // half an ulp of v, and the nearest p + 1 digits are no farther than the
    // nearest p: reading back is monotone in the precision, so bisect.
    int lo = 1, hi = 9, len = 0;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        int n = snprintf(buf, 24, "%.*g", mid, (double)v);
        float back;  // the parser pack reads with: strtof's result, faster
        if (sf_parse_float(buf, (size_t)n, &back) == 0 && memcmp(&back, &v, 4) == 0) hi = mid;
        else lo = mid + 1;
    }
    len = snprintf(buf, 24, "%.*g", lo, (double)v);
    return len;
}

int sf_format_float(char *buf, float v) {
    uint32_t bits;
    memcpy(&bits, &v, 4);
    if ((bits & 0x7fffffu) != 0 || (bits & 0x7f800000u) <= 0x00800000u || (bits & 0x7f800000u) == 0x7f800000u) {
        int len = shortest(buf, v);
        if (strchr(buf, 'e') && fabsf(v) >= 1 && fabsf(v) < 1e9f) len = snprintf(buf, 24, "%.0f", (double)v);
        return len;
    }
    int len = 0, prec = 1;
    for (; prec <= 9; prec++) {
        len = snprintf(buf, 24, "%.*g", prec, (double)v);
        float back = strtof(buf, NULL);
        if (memcmp(&back, &v, 4) == 0) break;
        // Above a power of two floats lie twice as far apart as below, so the
        // decimals that read back centre on v + ulp/8, not on v: the one
        // nearest that may do where the nearest to v does not (2^87 is
        // 1.5474251e+26, not 1.54742505e+26).
        uint32_t u;
        memcpy(&u, &v, 4);
        if ((u & 0x7fffffu) == 0 && (u & 0x7f800000u) > 0x00800000u) {
            len = snprintf(buf, 24, "%.*g", prec, (double)v * (1 + 0x1p-26));
            back = strtof(buf, NULL);
            if (memcmp(&back, &v, 4) == 0) break;
        }
    }
    // %g switches to an exponent once the integer digits exceed the
    // precision ("1.1e+02" for 110); below 10^9 plain digits read better and
    // still round-trip, being the float's exact integer value.
    if (strchr(buf, 'e') && fabsf(v) >= 1 && fabsf(v) < 1e9f) len = snprintf(buf, 24, "%.0f", (double)v);
    return len;
}
