// Private to pack/: the byte layout of an .sfpack file and the filters.
#ifndef SF_PACK_INTERNAL_H
#define SF_PACK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pack.h"

#define SF_MAGIC_HEADER "SFPACK\x1a\n"
#define SF_MAGIC_TRAILER "SFTRAIL\n"
#define SF_MAGIC_FOOTER "SFPKEND\n"
#define SF_HEADER_FIXED 40u   // magic .. reserved, before the column names
#define SF_FLAG_TIME 1u       // version 2: a time column (its name and kind after the series column name)
#define SF_FLAG_LINES 2u      // version 2: every row keeps its CSV line
#define SF_FLAG_CATEGORIES 4u // version 2: categorical columns (their list after the time column; values in the trailer)
#define SF_FLAG_IMPUTED 8u    // version 2: a bitmap of the values pack imputed ends each chunk; counts in the trailer
#define SF_FOOTER_SIZE 32u
#define SF_TRAILER_FIXED 32u  // magic, nrows, nchunks, nseries
#define SF_STATS_SIZE 32u     // min, max, mean, std as float64
#define SF_INDEX_ENTRY 16u    // offset u64, stored size u32, crc u32
#define SF_SERIES_ENTRY 16u   // first row u64, rows u64
#define SF_TIME_FIXED 24u     // version 2 trailer with a time column: step i64, gaps u64, parts u32, 0 u32
#define SF_MAX_HEADER (16u << 20)
#define SF_MAX_CHUNK_RAW (256u << 20)

// b - a, clamped to int64: two times of a file may be any int64s, whose
// difference need not be one.
static inline int64_t sf_time_diff(int64_t a, int64_t b) {
    int64_t d;
    return __builtin_sub_overflow(b, a, &d) ? (b > a ? INT64_MAX : INT64_MIN) : d;
}

static inline uint64_t sf_align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Bytes a chunk of `rows` rows decodes to: the floats, naux int64 columns
// and, when the file records imputed values, one bit per value.
static inline uint64_t sf_chunk_raw_bytes(uint64_t rows, uint32_t ncols, uint32_t naux, bool imputed) {
    return rows * ((uint64_t)ncols * 4 + (uint64_t)naux * 8) + (imputed ? (rows * ncols + 7) / 8 : 0);
}

// strtof on s[0, n): 0, -1 (not a number) or -2 (out of range).
int sf_parse_float_slow(const char *s, size_t n, float *out);

#define SF_P10_MIN (-80)
#define SF_P10_MAX 60
extern const double sf_p10[];  // 10^SF_P10_MIN .. 10^SF_P10_MAX, correctly rounded

// m * 10^e10 (m has `digits` significant digits; the text s[0, n) serves the
// rare fallback to strtof) rounded to float exactly as strtof does. 0, or
// SF_ERANGE when out of float32 range. Inline: it runs once per CSV value.
static inline int sf_decimal_to_float(uint64_t m, long e10, int digits, bool neg, const char *s, size_t n,
                                      float *out) {
    if (m == 0) {
        *out = neg ? -0.0f : 0.0f;
        return 0;
    }
    if (e10 + digits > 40) return SF_ERANGE;  // at least 10^39 > FLT_MAX
    if (e10 + digits < -46) {          // below half the smallest subnormal
        *out = neg ? -0.0f : 0.0f;
        return 0;
    }
    // With at most 19 digits the two checks above keep e10 in [-65, 39],
    // inside the table.
    // m (rounded to double unless below 2^53) times 10^e10 (rounded): three
    // roundings and the digits beyond the 19th keep the relative error below
    // 2^-51, a few double ulps; a 29-bit tail that far from the float midpoint
    // pattern cannot change sides.
    double d = (double)m * sf_p10[e10 - SF_P10_MIN];
    uint64_t bits;
    memcpy(&bits, &d, 8);
    uint64_t low = bits & ((1ull << 29) - 1), half = 1ull << 28;
    uint64_t dist = low > half ? low - half : half - low;
    // Subnormal and near-overflow floats round differently: strtof decides.
    if (dist <= 8 || d < 0x1p-126 || d > 3.4e38) return sf_parse_float_slow(s, n, out);
    float f = (float)d;
    *out = neg ? -f : f;
    return 0;
}

// enc/dec hold n = ncols * rows float32 values, column-major.
void sf_filter_encode(uint8_t *out, const float *in, size_t ncols, size_t rows, int filter);
void sf_filter_decode(float *out, const uint8_t *in, size_t ncols, size_t rows, int filter);

// Column statistics: two passes over each chunk's values (in cache), chunks
// merged pairwise (Chan et al.). Stable, and still one pass over the input;
// writer and verifier merge in chunk order so that they agree bit for bit.
typedef struct {
    double n, mean, m2, min, max;
} sf_moments;

void sf_moments_of(sf_moments *m, const float *x, size_t n);
void sf_moments_merge(sf_moments *acc, const sf_moments *m);
void sf_moments_finish(sf_col_stats *out, const sf_moments *m);

// Writes the trailer and footer (no fsync), unlinks the temporary file and
// frees w; *fd is the file, open for reading, for the caller to read back
// and close. For pack's rows packed before a series came back
// (pack/regroup.h). A writer without a temporary file (stdout, a device) is
// SF_EINVAL.
int sf_pack_writer_finish_fd(sf_pack_writer *w, int *fd, sf_err *e);

#endif
