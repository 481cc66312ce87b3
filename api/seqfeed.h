// libseqfeed: the small stable C API behind the Python package (python/):
// packed files read into caller memory, and the input pipeline's batches as
// `seqfeed train` draws them. Every function that can fail returns 0 (or a
// count) or a negative SF_E* code with *e filled; handles are the caller's
// to close; strings and options are borrowed for the call.
#ifndef SF_API_H
#define SF_API_H

#include <stdbool.h>
#include <stdint.h>

#include "common/common.h"
#include "pack/pack.h"

// ---- packed files ----

// sf_pack_open and sf_pack_close (pack.h), exported.
int sf_api_pack_open(sf_pack **out, const char *path, sf_err *e);
void sf_api_pack_close(sf_pack *p);

// The file as JSON (malloc'd; free with sf_api_free): version, rows,
// columns with their statistics, how many of their values pack imputed
// (--missing ffill) and categories' values, the series
// column and each series' name, first row and rows, the time column and
// kind. NULL when out of memory.
char *sf_api_pack_describe(const sf_pack *p);
// Rows [row_lo, row_hi) of the columns cols[0..ncols) into out, row-major
// (rows x ncols floats); categorical columns give their codes.
int sf_api_pack_read(const sf_pack *p, const uint32_t *cols, uint32_t ncols, uint64_t row_lo, uint64_t row_hi,
                     float *out, sf_err *e);
// The same rows' times (in the file's unit; ISO-8601 files: microseconds
// since 1970-01-01T00:00Z). SF_EINVAL without a time column.
int sf_api_pack_read_times(const sf_pack *p, uint64_t row_lo, uint64_t row_hi, int64_t *out, sf_err *e);
void sf_api_free(void *p);

// ---- the pipeline ----

// What a Dataset draws: the options `seqfeed train` takes for its data.
typedef struct {
    const char *data;                            // the .sfpack file
    const char *features, *targets;              // lists of names (NULL: train's defaults)
    const char *time_features;                   // "hour,yearday" (NULL: none)
    const char *norm;                            // "zscore" (NULL), "minmax", "none"
    bool target_change;                          // --target change
    uint32_t window, stride, sampling_rate, horizon;  // 0 window, stride, sampling rate: the defaults
    uint32_t batch;                              // global batch over the replicas
    uint64_t pool;                               // the shuffle pool, windows (1: no shuffle)
    uint64_t seed, epochs;
    double val_split, max_gap;                   // max_gap in seconds (0: none)
    uint32_t replicas, replica;                  // this replica's share: batch / replicas windows a batch
    uint32_t decoders;                           // 0: the pipeline's default
} sf_dataset_opts;

typedef struct sf_dataset sf_dataset;
// The pipeline that train's replica `replica` of `replicas` reads, for the
// same options and seed: the same batches in the same order.
int sf_dataset_open(sf_dataset **out, const sf_dataset_opts *o, sf_err *e);
// Inputs per window step, targets, batches per epoch, windows per batch.
void sf_dataset_shape(const sf_dataset *d, uint32_t *nfeatures, uint32_t *ntargets, uint64_t *batches_per_epoch,
                      uint32_t *batch);
// The next batch copied into x (batch x window x nfeatures floats) and y
// (batch x ntargets): 1, or 0 after the last epoch, or a negative code. The
// pipeline's threads run outside the caller's (Python's GIL released).
int sf_dataset_next(sf_dataset *d, float *x, float *y, sf_err *e);
void sf_dataset_close(sf_dataset *d);

#endif
