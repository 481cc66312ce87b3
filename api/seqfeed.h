// libseqfeed: the small stable C API behind the Python package (python/):
// packed files read into caller memory, and the input pipeline's batches as
// `seqfeed train` draws them. Every function that can fail returns 0 (or a
// count) or a negative SF_E* code with *e filled; handles are the caller's
// to close; strings and options are borrowed for the call.
#ifndef SF_API_H
#define SF_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "pack/arrow_abi.h"
#include "pack/pack.h"

// ---- packed files ----

// sf_pack_open and sf_pack_close (pack.h), exported. A NULL out or path is
// SF_EINVAL; close takes NULL. A handle may be read from several threads at
// once, but it is the caller's to not close it while a call is in flight
// (the Python package waits for them: python/seqfeed).
int sf_api_pack_open(sf_pack **out, const char *path, sf_err *e);
void sf_api_pack_close(sf_pack *p);

// The file as JSON (malloc'd; free with sf_api_free): version, rows,
// columns with their statistics, how many of their values pack imputed
// (--missing ffill) and categories' values, the series
// column and each series' name, first row and rows, the time column and
// kind. NULL when out of memory or p is NULL.
char *sf_api_pack_describe(const sf_pack *p);
// Rows [row_lo, row_hi) of the columns cols[0..ncols) into out, row-major
// (rows x ncols floats); categorical columns give their codes. SF_EINVAL
// for a NULL handle, a NULL cols or out where something is to be read, a
// column past the file's, or rows not within the file's.
int sf_api_pack_read(const sf_pack *p, const uint32_t *cols, uint32_t ncols, uint64_t row_lo, uint64_t row_hi,
                     float *out, sf_err *e);
// The same rows' times (in the file's unit; ISO-8601 files: microseconds
// since 1970-01-01T00:00Z). SF_EINVAL without a time column.
int sf_api_pack_read_times(const sf_pack *p, uint64_t row_lo, uint64_t row_hi, int64_t *out, sf_err *e);
void sf_api_free(void *p);

// ---- packing ----

// What `seqfeed pack` is told about the data: the same options, with the
// same meaning (lists of names as --columns takes them). NULL for any field
// (or for the whole struct): the command's default.
typedef struct {
    const char *columns, *drop_columns;  // --columns, --drop-columns
    const char *series_column;           // --series-column
    const char *time_column;             // --time-column: NULL finds it, "" means none
    const char *categorical;             // --categorical
    const char *missing;                 // --missing: "error" (NULL), "drop" or "ffill"
    uint32_t chunk_rows;                 // --chunk-rows (0: 1 MiB of values a chunk)
    uint32_t threads;                    // --threads, 0 to 256 (0: one per core)
    uint64_t memory_budget;              // --memory-budget, in bytes (0: 64 MB)
} sf_api_pack_opts;

// Packs an Arrow C stream (the Arrow C stream interface; pack/pack.h says
// what each column type becomes) into the .sfpack at out, which appears only
// when it is complete. The stream is consumed whatever the outcome: moved
// out of *stream (its release set to NULL) and released, batch by batch, one
// batch in memory at a time (rows of series that interleave are regrouped,
// held within memory_budget and spilled beside out beyond it). Each row
// keeps its index in the stream, 1-based, as a CSV row keeps its line
// (predict --with-actual writes it).
// name (NULL: "the Arrow stream") is the source in messages. On success
// *report (when report is not NULL; free with sf_api_free) is JSON: rows,
// rows_dropped, values_filled, series, bytes (of out), regrouped (whether
// the rows of series interleaved and were regrouped), notes (what pack
// would say after packing: "warning: ..."). Errors name the row and column;
// an option that names no column, or a column of a type it cannot take, is
// SF_EUSAGE.
int sf_api_pack_arrow(struct ArrowArrayStream *stream, const char *out, const sf_api_pack_opts *o, const char *name,
                      char **report, sf_err *e);
// The same for a CSV file at in: `seqfeed pack in -o out` with o's options.
int sf_api_pack_csv(const char *in, const char *out, const sf_api_pack_opts *o, char **report, sf_err *e);

// ---- the pipeline ----

// What a Dataset draws: the options `seqfeed train` takes for its data,
// each in the range of the option named beside it. Every field is checked:
// a value out of its range is SF_EUSAGE naming the field, its option and
// the range; 0 means a default only where said here.
typedef struct {
    const char *data;                  // the .sfpack file (not NULL)
    const char *features, *targets;    // --features, --targets: lists of names (NULL: train's defaults; not "")
    const char *time_features;         // --time-features "hour,yearday" (NULL: none; not "")
    const char *norm;                  // --norm zscore, minmax or none (NULL: zscore)
    bool target_change;                // --target change
    uint32_t window;                   // --window, 1 to 2^32 - 1
    uint32_t stride, sampling_rate;    // --stride, --sampling-rate, 1 to 2^32 - 1
    uint32_t horizon;                  // --horizon, 1 to 2^32 - 1
    uint32_t batch;                    // --batch-size, 1 to 2^20: the global batch over the replicas
    uint64_t pool;                     // --pool, windows, 1 (no shuffle) to 2^56 - 1 (0: the pipeline's 16384)
    uint64_t seed;                     // --seed, any
    uint64_t epochs;                   // --epochs, 1 to 2^63 - 1
    double val_split;                  // --val-split, from 0 to below 1
    double max_gap;                    // --max-gap in seconds, above 0 and finite (0: no limit)
    uint32_t replicas;                 // --replicas, 1 to 256; batch a multiple of it
    uint32_t replica;                  // 0 to replicas - 1: this replica's share, batch / replicas windows a batch
    uint32_t decoders;                 // --decoders, 1 to 256 (0: one per core)
} sf_dataset_opts;

// What sf_dataset_next writes: x holds batch x window x nfeatures floats, y
// batch x ntargets; an epoch is batches_per_epoch batches.
typedef struct {
    uint32_t window, nfeatures, ntargets, batch;
    uint64_t batches_per_epoch, epochs;
} sf_dataset_info;

typedef struct sf_dataset sf_dataset;
// The pipeline that train's replica `replica` of `replicas` reads, for the
// same options and seed: the same batches in the same order. SF_EUSAGE also
// when no batch fits the training part, and when the pipeline would hold
// more than the machine's memory (physical, or its cgroup's limit; checked
// before allocating).
int sf_dataset_open(sf_dataset **out, const sf_dataset_opts *o, sf_err *e);
// The shape of its batches: 0, or SF_EINVAL for a NULL d or out.
int sf_dataset_shape(const sf_dataset *d, sf_dataset_info *out);
// The next batch copied into x (x_len floats) and y (y_len floats): 1, or 0
// after the last epoch, or a negative code; SF_EINVAL, writing nothing, when
// d, x or y is NULL or x_len or y_len is below a batch's (sf_dataset_shape).
// Calls from several threads take turns. The pipeline's threads run outside
// the caller's (Python's GIL released).
int sf_dataset_next(sf_dataset *d, float *x, size_t x_len, float *y, size_t y_len, sf_err *e);
// Takes NULL; not while another thread is inside sf_dataset_next.
void sf_dataset_close(sf_dataset *d);

// ---- the validation part, and the training part's scaling ----

// The validation windows `seqfeed train` scores for the same options (its
// --val-split part: every window whose target row lies in the last
// val_split of each series' rows, or of each segment's with max_gap), in
// order, scaled by the training part's statistics: the windows `seqfeed
// evaluate` and `predict --split validation` take from a checkpoint of
// such a run, the same count in the same order. Targets pack imputed
// (--missing ffill) come as filled in (train's validation leaves them out
// of val_loss). The options' fields are checked as sf_dataset_open checks
// them; batch, pool, seed, epochs, replicas, replica and decoders are not
// used. SF_EUSAGE when val_split is 0 or the part has no window.
typedef struct sf_valset sf_valset;
int sf_valset_open(sf_valset **out, const sf_dataset_opts *o, sf_err *e);
// The validation windows, and a window's shape: 0, or SF_EINVAL for a NULL v.
int sf_valset_shape(const sf_valset *v, uint64_t *windows, sf_dataset_info *shape);
// Windows [first, first + count) in order into x (count x window x
// nfeatures floats), y (count x ntargets) and, when rows is not NULL, each
// one's target row in the file (count). SF_EINVAL, writing nothing, for a
// NULL v, x or y, buffers shorter than that, or windows past the last.
// Calls from several threads take turns; reading on from the last window
// read decodes each chunk once.
int sf_valset_read(sf_valset *v, uint64_t first, uint32_t count, float *x, size_t x_len, float *y, size_t y_len,
                   uint64_t *rows, sf_err *e);
void sf_valset_close(sf_valset *v);

// How a dataset's (or a validation set's) inputs and targets are scaled,
// as JSON (malloc'd; free with sf_api_free): "stats_rows" (the training
// part's rows the statistics are of); "columns", each column of the file
// that feeds an input or a target with its "min", "max", "mean" and "std"
// over those rows; "inputs", x's last axis in order, each {"name",
// "column" (null for a time feature), "value" (a category's, one-hot),
// "time" (hour, weekday or yearday: "name" ends in _sin or _cos), "scale",
// "offset"} (an input is value x scale + offset, in float32); "targets",
// y's, each {"name", "scale", "offset", "mean", "change_from"} (the input
// whose value at the window's last row y is a change from, under
// --target change; else null). NULL when out of memory or d is NULL.
char *sf_dataset_describe(const sf_dataset *d);
char *sf_valset_describe(const sf_valset *v);

#endif
