// The decode stage: a chunk's stored bytes checked, decompressed and
// unfiltered into column-major values, and its rows that a block needs
// gathered into the block, scaled. The pipeline's decoder threads and the
// single-threaded block loader both decode through here.
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "pipeline.h"

struct sf_decoder {
    sf_pack_dctx *dctx;
    float *values;  // one chunk, column-major
    int64_t *times; // its rows' times, when the file has a time column
    bool timed;     // times holds the chunk's times too
    uint8_t *imp;   // which of its values pack imputed: allocated when first asked for
    bool flagged;   // imp holds the chunk's flags too
    int64_t chunk;  // the chunk values holds (-1: none)
};

sf_decoder *sf_decoder_create(const sf_pack *p) {
    const sf_pack_info *in = sf_pack_get_info(p);
    sf_decoder *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->chunk = -1;
    d->dctx = sf_pack_dctx_create();
    // The largest chunk: a file of fewer rows than its chunk size has one.
    size_t rows = in->chunk_rows < in->nrows ? in->chunk_rows : (size_t)in->nrows;
    d->values = malloc(rows * in->ncols * sizeof(float) + 1);
    d->times = in->time_kind != SF_TIME_NONE ? malloc(rows * sizeof(int64_t)) : NULL;
    if (!d->dctx || !d->values || (in->time_kind != SF_TIME_NONE && !d->times)) {
        sf_decoder_free(d);
        return NULL;
    }
    return d;
}

void sf_decoder_free(sf_decoder *d) {
    if (!d) return;
    sf_pack_dctx_free(d->dctx);
    free(d->values);
    free(d->times);
    free(d->imp);
    free(d);
}

bool sf_decoder_holds(const sf_decoder *dec, uint64_t i) { return dec->chunk == (int64_t)i; }

int sf_decoder_run(sf_decoder *dec, const sf_pack *p, const sf_columns *cols, uint64_t i, const void *stored,
                   sf_block_data *d, sf_err *e) {
    bool timed = cols->ntime > 0;  // times only when time features need them
    const sf_pack_info *in = sf_pack_get_info(p);
    bool flagged = cols->imputed_nan && in->imputed;  // flags only when scoring, of a file that has them
    // Only scoring needs them: the training pipe's decoders never hold them.
    size_t rows = in->chunk_rows < in->nrows ? in->chunk_rows : (size_t)in->nrows;
    if (flagged && !dec->imp && !(dec->imp = malloc(rows * in->ncols)))
        return sf_err_set(e, SF_ENOMEM, "%s: out of memory for a chunk's imputed flags", sf_pack_name(p));
    if (dec->chunk != (int64_t)i || (timed && !dec->timed) || (flagged && !dec->flagged)) {
        dec->chunk = -1;
        int rc = sf_pack_chunk_decode_imputed(dec->dctx, p, i, stored, dec->values, timed ? dec->times : NULL, NULL,
                                              flagged ? dec->imp : NULL, e);
        if (rc) return rc;
        dec->chunk = (int64_t)i, dec->timed = timed, dec->flagged = flagged;
    }
    sf_chunk c = sf_pack_chunk_locate(p, i);
    sf_block_gather(d, cols, &c, dec->values, timed ? dec->times : NULL);
    uint64_t lo = c.first_row > d->row_lo ? c.first_row : d->row_lo;
    uint64_t hi = c.first_row + c.rows < d->row_hi ? c.first_row + c.rows : d->row_hi;
    for (uint32_t j = 0; flagged && j < cols->ntargets; j++) {
        if (!in->imputed[cols->targets[j]]) continue;
        const uint8_t *f = dec->imp + (size_t)cols->targets[j] * c.rows;
        for (uint64_t r = lo; r < hi; r++)
            if (f[r - c.first_row]) d->targ[(r - d->row_lo) * cols->ntargets + j] = NAN;
    }
    return 0;
}
