// Private to pack/: the byte layout of an .sfpack file and the filters.
#ifndef SF_PACK_INTERNAL_H
#define SF_PACK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "pack.h"

#define SF_MAGIC_HEADER "SFPACK\x1a\n"
#define SF_MAGIC_TRAILER "SFTRAIL\n"
#define SF_MAGIC_FOOTER "SFPKEND\n"
#define SF_HEADER_FIXED 40u   // magic .. reserved, before the column names
#define SF_FOOTER_SIZE 32u
#define SF_TRAILER_FIXED 32u  // magic, nrows, nchunks, nseries
#define SF_STATS_SIZE 32u     // min, max, mean, std as float64
#define SF_INDEX_ENTRY 16u    // offset u64, stored size u32, crc u32
#define SF_SERIES_ENTRY 16u   // first row u64, rows u64
#define SF_MAX_HEADER (16u << 20)
#define SF_MAX_CHUNK_RAW (256u << 20)

static inline uint64_t sf_align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

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

#endif
