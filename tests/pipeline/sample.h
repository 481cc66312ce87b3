// Shared by the pipeline tests: a packed sample with several series and the
// naive reference (the whole file decoded, the documented scaling).
#ifndef SF_TESTS_PIPELINE_SAMPLE_H
#define SF_TESTS_PIPELINE_SAMPLE_H

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pipeline/pipeline.h"
#include "tests/common.h"

static uint64_t rng_state = 0xb10c4b10c4ull;
static uint64_t rng(void) { return sf_splitmix64(&rng_state); }

static char dir[] = "/tmp/sfblock.XXXXXX";
static char path[64];

// A CSV with a series column, 4 value columns (random walks with distinct
// scales) and series of uneven lengths; packed with small chunks.
__attribute__((unused)) static int pack_sample(uint32_t chunk_rows) {
    size_t cap = 1 << 22, n = 0;
    char *csv = malloc(cap);
    n += (size_t)snprintf(csv + n, cap - n, "id,a,b,c,d\n");
    double v[4] = {0, 100, -5, 1e-3};
    const int lengths[] = {700, 3, 250, 1, 901, 64};
    for (int s = 0; s < 6; s++)
        for (int r = 0; r < lengths[s]; r++) {
            for (int k = 0; k < 4; k++) v[k] += ((double)(rng() >> 11) * 0x1p-53 - 0.5) * pow(10, k - 1);
            n += (size_t)snprintf(csv + n, cap - n, "s%d,%.7g,%.7g,%.7g,%.7g\n", s, v[0], v[1], v[2], v[3]);
        }
    sf_csv_pack_opts o = {.series_column = "id",
                          .missing = SF_MISSING_ERROR,
                          .pack = {.level = 1, .filter = SF_FILTER_DELTA_SHUFFLE, .chunk_rows = chunk_rows}};
    sf_err e = {0};
    int rc = sf_csv_pack_mem(csv, n, "sample.csv", path, &o, NULL, &e);
    CHECK(rc == 0, "pack: %s", e.msg);
    free(csv);
    return rc;
}

// Every value of the file, row-major.
__attribute__((unused)) static float *decode_all(const sf_pack *p) {
    const sf_pack_info *in = sf_pack_get_info(p);
    float *all = malloc(in->nrows * in->ncols * sizeof(float));
    float *vals = malloc((size_t)in->chunk_rows * in->ncols * sizeof(float));
    void *stored = malloc(sf_pack_max_stored_size(p));
    sf_pack_dctx *d = sf_pack_dctx_create();
    sf_err e = {0};
    for (uint64_t i = 0; i < in->nchunks; i++) {
        CHECK(sf_pack_chunk_read(p, i, stored, &e) == 0 && sf_pack_chunk_decode(d, p, i, stored, vals, &e) == 0,
              "%s", e.msg);
        sf_chunk c = sf_pack_chunk_locate(p, i);
        for (uint32_t r = 0; r < c.rows; r++)
            for (uint32_t k = 0; k < in->ncols; k++) all[(c.first_row + r) * in->ncols + k] = vals[k * c.rows + r];
    }
    free(vals);
    free(stored);
    sf_pack_dctx_free(d);
    return all;
}

// A pipe over the file at file with features a,c,d and target b, the
// columns the pipeline tests train on; the pack and the columns live with it.
typedef struct {
    sf_pack *pack;
    sf_columns cols;
    sf_pipe *pipe;
} sample_pipe;

__attribute__((unused)) static void sample_pipe_close(sample_pipe *t) {
    sf_pipe_close(t->pipe);
    sf_columns_free(&t->cols);
    sf_pack_close(t->pack);
    *t = (sample_pipe){0};
}

__attribute__((unused)) static int sample_pipe_open(sample_pipe *t, const char *file, const sf_pipe_opts *o,
                                                    sf_err *e) {
    *t = (sample_pipe){0};
    int rc = sf_pack_open(&t->pack, file, e);
    if (!rc) rc = sf_columns_create(&t->cols, sf_pack_get_info(t->pack), "a,c,d", "b", NULL, SF_NORM_ZSCORE, e);
    if (!rc) rc = sf_pipe_open(&t->pipe, t->pack, &t->cols, o, e);
    if (rc) sample_pipe_close(t);
    return rc;
}

// The options the pipeline tests start from: the defaults, on small blocks
// of the sample.
__attribute__((unused)) static sf_pipe_opts sample_opts(void) {
    sf_pipe_opts o = sf_pipe_opts_default();
    o.window = (sf_window_spec){20, 3, 2, 1, 1}, o.block_chunks = 2, o.batch = 7, o.pool = 50, o.seed = 11;
    o.epochs = 2, o.io.depth = 4, o.decoders = 2, o.slots = 2, o.prefetch = 2;
    return o;
}

// The documented scaling, written out again.
__attribute__((unused)) static float scaled(float v, const sf_col_stats *s, int norm) {
    double a = 1, b = 0;
    if (norm == SF_NORM_ZSCORE) {
        a = s->std > 0 ? 1 / s->std : 1;
        b = s->std > 0 ? -s->mean / s->std : -s->mean;
    } else if (norm == SF_NORM_MINMAX) {
        double range = s->max - s->min;
        a = range > 0 ? 1 / range : 1;
        b = range > 0 ? -s->min / range : -s->min;
    }
    return v * (float)a + (float)b;
}

#endif
