// Tries candidate chunk filters on the data of an existing .sfpack, outside
// the format: decodes every chunk with the reader (any filter), re-filters the
// column-major values with each candidate, compresses each chunk as one zstd
// frame at the given level (as the writer does) and reports the compression
// ratio and the single-thread decode speed (zstd + unfilter, by thread CPU
// time, best of 3 passes) of each. The candidates that exist in the format
// (shuffle, delta-shuffle) reproduce the writer's stored sizes exactly, which
// checks the simulation.
//
// usage: filter_sim FILE.sfpack [LEVEL ...]   (default levels: 1 3)
//
// Candidates:
//   shuffle               byte planes (format filter 1)
//   delta-shuffle         uint32 delta along the column, planes (filter 2)
//   zigzag-delta-shuffle  the same delta, zigzag-coded ((d << 1) ^ -(d >> 31),
//                         so small negative deltas get zero high bytes), planes
//   xor-shuffle           xor with the previous value's bits, planes
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#include "pack/pack.h"

enum { SHUFFLE, DELTA, ZIGZAG, XOR, NCAND };
static const char *const names[NCAND] = {"shuffle", "delta-shuffle", "zigzag-delta-shuffle", "xor-shuffle"};

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void encode(uint8_t *out, const uint32_t *in, size_t ncols, size_t rows, int cand) {
    size_t n = ncols * rows;
    for (size_t c = 0; c < ncols; c++) {
        uint32_t prev = 0;
        for (size_t r = 0; r < rows; r++) {
            uint32_t u = in[c * rows + r], v = u;
            if (cand == DELTA) v = u - prev;
            else if (cand == ZIGZAG) {
                uint32_t d = u - prev;
                v = (d << 1) ^ (0u - (d >> 31));
            } else if (cand == XOR) v = u ^ prev;
            prev = u;
            size_t k = c * rows + r;
            out[k] = (uint8_t)v, out[n + k] = (uint8_t)(v >> 8), out[2 * n + k] = (uint8_t)(v >> 16),
            out[3 * n + k] = (uint8_t)(v >> 24);
        }
    }
}

static void decode(uint32_t *out, const uint8_t *in, size_t ncols, size_t rows, int cand) {
    size_t n = ncols * rows;
    for (size_t k = 0; k < n; k++)
        out[k] = (uint32_t)in[k] | (uint32_t)in[n + k] << 8 | (uint32_t)in[2 * n + k] << 16 |
                 (uint32_t)in[3 * n + k] << 24;
    if (cand == SHUFFLE) return;
    for (size_t c = 0; c < ncols; c++) {
        uint32_t *col = out + c * rows, acc = 0;
        for (size_t r = 0; r < rows; r++) {
            uint32_t v = col[r];
            if (cand == DELTA) acc += v;
            else if (cand == ZIGZAG) acc += (v >> 1) ^ (0u - (v & 1));
            else acc ^= v;
            col[r] = acc;
        }
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: filter_sim FILE.sfpack [LEVEL ...]\n");
        return 2;
    }
    int levels[16], nlev = 0;
    for (int a = 2; a < argc && nlev < 16; a++) levels[nlev++] = atoi(argv[a]);
    if (!nlev) levels[nlev++] = 1, levels[nlev++] = 3;

    sf_err e = {0};
    sf_pack *p;
    if (sf_pack_open(&p, argv[1], &e)) {
        fprintf(stderr, "filter_sim: %s\n", e.msg);
        return 1;
    }
    const sf_pack_info *in = sf_pack_get_info(p);
    uint64_t n = in->nchunks, raw = 0;
    size_t maxraw = 0;
    for (uint64_t i = 0; i < n; i++) {
        size_t r = sf_pack_chunk_raw_size(p, i);
        raw += r;
        if (r > maxraw) maxraw = r;
    }
    uint32_t *vals = malloc(raw ? raw : 4), *back = malloc(maxraw ? maxraw : 4);
    uint8_t *sbuf = malloc(sf_pack_max_stored_size(p) + 1), *fbuf = malloc(maxraw ? maxraw : 4);
    size_t bound = ZSTD_compressBound(maxraw);
    uint8_t *cbuf = malloc(bound * (size_t)(n ? n : 1));
    size_t *csize = calloc(n ? n : 1, sizeof *csize);
    sf_pack_dctx *d = sf_pack_dctx_create();
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_DCtx *dc = ZSTD_createDCtx();
    if (!vals || !back || !sbuf || !fbuf || !cbuf || !csize || !d || !cc || !dc) {
        fprintf(stderr, "filter_sim: out of memory\n");
        return 1;
    }
    size_t off = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (sf_pack_chunk_read(p, i, sbuf, &e) ||
            sf_pack_chunk_decode(d, p, i, sbuf, (float *)((char *)vals + off), &e)) {
            fprintf(stderr, "filter_sim: %s\n", e.msg);
            return 1;
        }
        off += sf_pack_chunk_raw_size(p, i);
    }
    printf("%s: %llu chunks, %.1f MB of float32 (stored now as %s, level %d)\n", argv[1], (unsigned long long)n,
           raw / 1e6, sf_filter_name((int)in->filter), in->level);
    printf("%-22s %6s %8s %12s %16s\n", "candidate", "level", "ratio", "stored MB", "decode GB/CPU-s");
    for (int li = 0; li < nlev; li++)
        for (int cand = 0; cand < NCAND; cand++) {
            size_t stored = 0;
            off = 0;
            for (uint64_t i = 0; i < n; i++) {
                size_t r = sf_pack_chunk_raw_size(p, i), rows = r / 4 / in->ncols;
                encode(fbuf, (const uint32_t *)((char *)vals + off), in->ncols, rows, cand);
                csize[i] = ZSTD_compressCCtx(cc, cbuf + i * bound, bound, fbuf, r, levels[li]);
                if (ZSTD_isError(csize[i])) {
                    fprintf(stderr, "filter_sim: zstd: %s\n", ZSTD_getErrorName(csize[i]));
                    return 1;
                }
                stored += csize[i];
                off += r;
            }
            double best = 1e30;
            for (int pass = 0; pass < 3; pass++) {
                double t0 = cpu_now();
                off = 0;
                for (uint64_t i = 0; i < n; i++) {
                    size_t r = sf_pack_chunk_raw_size(p, i), rows = r / 4 / in->ncols;
                    size_t got = ZSTD_decompressDCtx(dc, fbuf, r, cbuf + i * bound, csize[i]);
                    if (got != r) {
                        fprintf(stderr, "filter_sim: chunk %llu does not decompress\n", (unsigned long long)i);
                        return 1;
                    }
                    decode(back, fbuf, in->ncols, rows, cand);
                    if (pass == 0 && memcmp(back, (char *)vals + off, r)) {
                        fprintf(stderr, "filter_sim: %s does not round-trip\n", names[cand]);
                        return 1;
                    }
                    off += r;
                }
                double t = cpu_now() - t0;
                if (t < best) best = t;
            }
            printf("%-22s %6d %8.3f %12.2f %16.2f\n", names[cand], levels[li], (double)raw / stored, stored / 1e6,
                   raw / best / 1e9);
        }
    ZSTD_freeCCtx(cc);
    ZSTD_freeDCtx(dc);
    sf_pack_dctx_free(d);
    free(vals), free(back), free(sbuf), free(fbuf), free(cbuf), free(csize);
    sf_pack_close(p);
    return 0;
}
