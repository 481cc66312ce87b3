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
// sf_api_pack_csv, calling progress (with arg) now and then, on the calling
// thread, with the rows and the CSV's bytes read so far (NULL: never).
// Nonzero stops the pack: SF_EINVAL, and no output appears.
int sf_api_pack_csv_progress(const char *in, const char *out, const sf_api_pack_opts *o,
                             int (*progress)(void *arg, uint64_t rows, uint64_t bytes), void *arg, char **report,
                             sf_err *e);

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
    uint32_t replicas;                 // --replicas, 1 to 256; batch a multiple of it, at most its parts
    uint32_t replica;                  // 0 to replicas - 1: this replica's share, its parts of each global
                                       // batch as train's (batch / replicas windows when replicas divide them)
    uint32_t decoders;                 // --decoders, 1 to 256 (0: tuned, as --pipeline auto)
    uint32_t horizon_steps;            // --horizon A-B: B - A + 1 steps ending at horizon (B), 1 to 1024 and
                                       // at most horizon (0: one step)
    const char *norm_scope;            // --norm-scope global or series (NULL: global)
    const char *future_features;       // --future-features "holiday,hour" (NULL: none; not "")
    const char *series_features;       // --series-features "onehot" (NULL: none)
} sf_dataset_opts;

// What sf_dataset_next writes: x holds batch windows of window x nfeatures
// floats, each followed by its steps x nfuture future inputs (none without
// future_features) and its series' nonehot one-hot inputs (none without
// series_features), y batch x steps x ntargets; an epoch is
// batches_per_epoch batches.
typedef struct {
    uint32_t window, nfeatures, ntargets, batch;
    uint64_t batches_per_epoch, epochs;
    uint32_t steps;  // target rows per window (--horizon A-B), 1 for one
    uint32_t nfuture;  // future inputs per step (future_features), 0 for none
    uint32_t nonehot;  // the series' one-hot inputs (series_features), 0 for none
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
// The next batch without a copy: 1 and *x, *y where it lies, in memory
// that is the caller's from then on (x at its start; free it with
// sf_api_free, or give it back as a later call's spare, which the
// pipeline then writes into), or 0 after the last epoch, or a negative
// code, *x and *y NULL and spare still the caller's. spare: NULL, or a
// buffer (*x) an earlier call on the same d handed out. x and y are laid
// out as sf_dataset_next writes them; calls from several threads take turns.
int sf_dataset_next_buffer(sf_dataset *d, void *spare, float **x, float **y, sf_err *e);
// Takes NULL; not while another thread is inside sf_dataset_next or
// sf_dataset_next_buffer. Buffers handed out stay the caller's.
void sf_dataset_close(sf_dataset *d);

// ---- packing an Arrow stream of several files ----

// The files an Arrow stream's rows come from, one after the other (a
// Parquet directory's, read in order).
typedef struct {
    // Each file's name as the packed file lists it (its source table:
    // predict --with-actual writes it in its file column), and its rows:
    // the stream's first rows[0] rows are files[0]'s, the next rows[1]
    // files[1]'s, and so on (a file may have none); the stream must hold
    // exactly their sum, else SF_EFORMAT. nfiles: up to 2^23, each file up
    // to 2^40 - 1 rows.
    const char *const *files;
    const uint64_t *rows;
    uint32_t nfiles;
    // --series-per-file: each file one series, named after the file
    // without its directory and extension (two files of one name refused;
    // excludes series_column).
    int series_per_file;
    // Called after each record batch with the rows read so far and the
    // files' rows in all (may be NULL), on the calling thread. Nonzero
    // stops the pack: SF_EINVAL, and no output appears.
    int (*progress)(void *arg, uint64_t rows, uint64_t total);
    void *progress_arg;
} sf_api_pack_sources;

// sf_api_pack_arrow, with each row keeping its file and its row in that
// file, counted from 1 (the first row of a Parquet file is row 1), as a row
// of several CSV files keeps its file and line; errors name the file and
// row. src NULL (or nfiles 0): as sf_api_pack_arrow, with src's progress.
// o->series_column NULL looks for numeric series ids in the first batch
// (an error where the time goes back where such a column changes, else a
// note); "" is one series on purpose.
int sf_api_pack_arrow_files(struct ArrowArrayStream *stream, const char *out, const sf_api_pack_opts *o,
                            const char *name, const sf_api_pack_sources *src, char **report, sf_err *e);

// ---- the exported model's inputs ----

// The windows `seqfeed predict` predicts, as the model `seqfeed export`
// writes takes them, cut by the same code (train.h, sf_predict_data): for
// each window of the file in predict's order, its rows' inputs in data units
// (the export's first layer scales them): the numeric features, one input of
// 0 or 1 per value of a categorical feature in the checkpoint's order, then
// sin and cos of each time feature (docs/TRAINING.md says how). The model's
// output plus the window's base is what predict writes: base is each
// target's value at the window's last row for a model trained with
// --target change (the model outputs changes), 0 otherwise.
typedef struct sf_api_inputs sf_api_inputs;
// checkpoint: a checkpoint file or a run's directory (best.safetensors
// there, else latest.safetensors), as predict's --checkpoint. split: NULL
// or "all" (every window, predict's default), "train" or "validation" (the
// parts of the checkpoint's --val-split, as --split). SF_EUSAGE for another
// split, SF_EINVAL when no window fits (the message says why), and
// SF_EUSAGE when the inputs would take more than the machine's memory
// (physical, or its cgroup's limit).
int sf_api_inputs_open(sf_api_inputs **out, const char *checkpoint, const char *data, const char *split, sf_err *e);
// What sf_api_inputs_read writes, as JSON (malloc'd; free with
// sf_api_free): checkpoint (the file read), windows, window, steps and
// first_step (--horizon A-B: B-A+1 and A; 1 and N for --horizon N), inputs (the
// name of each: a column, "COLUMN=VALUE" for a category's input,
// "FEATURE_sin"/"FEATURE_cos" for a time feature's), future (those of the
// inputs also taken at every target step, --future-features), series_inputs
// (the series one input each, --series-features onehot: [] for none), targets (names),
// target_change, time_kind (as sf_api_pack_describe's), has_lines,
// unseen and unseen_column (how many values of the file's categorical
// columns the training data lacked, whose rows get 0 for each of the
// column's inputs, and the first such column: null for none), sources
// (the files the pack was packed from: [] for one) and quantiles (a model
// trained with --loss quantile: its quantiles, ascending, the last axis of
// the exported model's output; else []). NULL when out of memory or in is
// NULL.
char *sf_api_inputs_describe(const sf_api_inputs *in);
// Where sf_api_inputs_read writes, each window's values at index i of its
// window's order: x (windows x window x inputs floats), base (windows x
// targets); series (its index in the file's series table); and for each of
// its target steps, at index i x steps + k (steps: the describe's; predict
// writes a line per window and step in this order): row (the step's target
// row in the file), time (its time, in the file's unit; ISO-8601 files:
// microseconds since 1970-01-01T00:00Z), line (its line in the source it
// was packed from), source (the index of that source). time, line and
// source may be NULL: not written (nor where the file has no time column,
// no lines or no sources). windows: the windows the arrays hold (row, time,
// line and source: windows x steps entries).
typedef struct {
    float *x, *base;
    uint64_t *series, *row;
    int64_t *time, *line;
    uint32_t *source;
    uint64_t windows;
    // --future-features: the exported model's second input, each window's
    // future inputs at its target rows (windows x steps x future floats),
    // where the checkpoint has them (else unread, may be NULL)
    float *future;
    // --series-features onehot: the third input, each window's series as
    // one-hot inputs (windows x the describe's series_inputs floats), where
    // the checkpoint has them (else unread, may be NULL)
    float *onehot;
} sf_api_inputs_out;
// SF_EINVAL, writing nothing, for a NULL in or o, a NULL x, base, series or
// row, or windows below the count (sf_api_inputs_describe's windows).
int sf_api_inputs_read(sf_api_inputs *in, const sf_api_inputs_out *o, sf_err *e);
void sf_api_inputs_close(sf_api_inputs *in);

// ---- modules ----

// Loads the module named ("keras": seqfeed-keras.so, "onednn":
// seqfeed-onednn.so, "gpu": seqfeed-gpu.so) as the commands that need it do,
// and writes the file it was loaded from into path (n bytes): 0, or
// SF_EUSAGE with the loader's reason (not built, not found, not loadable),
// SF_EINVAL for an unknown name. For checking where an installation's
// modules come from (the Python package's own, beside libseqfeed.so).
int sf_api_module_path(const char *name, char *path, size_t n, sf_err *e);

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
// Windows [first, first + count) in order into x (count windows of window x
// nfeatures floats, each followed by its steps x nfuture future inputs and
// nonehot series inputs), y (count x steps x ntargets) and, when rows is not NULL,
// each one's target row in the file (count; the last step's). SF_EINVAL, writing nothing, for a
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
