// pipeline: from an .sfpack file to batches of windows for every replica
// (docs/PIPELINE.md), one file per stage of a batch's path:
//   plan.c    which windows exist, which blocks of chunks hold them, which
//             lane produces which windows in which epoch (arithmetic only)
//   io.c      reads of a block's chunks (io_uring, O_DIRECT, pread)
//   decode.c  a chunk's stored bytes to its rows, gathered and scaled
//   block.c   the columns and their scaling; a block's rows
//   window.c  windows cut out of the rows, through a shuffle pool, into
//             batches (one lane's epoch); a plan's windows in order
//   ring.c    a lane's staging ring of batch slots, and its device copies
//   pipe.c    the threads and the queues between them
// Functions return 0 or a negative SF_E* code with e filled, unless they say
// otherwise; what they are given is borrowed, what they open is freed by its
// close function, and a close function ignores NULL.
#ifndef SF_PIPELINE_H
#define SF_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "pack/pack.h"

// ---- planning ----

// Window geometry, as keras.utils.timeseries_dataset_from_array: a window
// starting at row s holds rows s, s + sampling_rate, ..., s + (length - 1) *
// sampling_rate; its target is row s + (length - 1) * sampling_rate +
// horizon. Starts are stride rows apart, counted from each series' first row.
// With steps > 1 (--horizon A-B: horizon B, steps B - A + 1) the targets are
// the rows horizon - steps + 1 .. horizon past the last sample row, as
// Keras' multi-step single-shot model: y is (steps, ntargets) per window.
typedef struct {
    uint32_t length;         // rows per window, >= 1
    uint32_t stride;         // rows between window starts, >= 1
    uint32_t sampling_rate;  // rows between a window's samples, >= 1
    uint32_t horizon;        // target row past the last sample row, >= 0 (the last step's)
    uint32_t steps;          // target rows ending at horizon; 0 or 1: the one row horizon
} sf_window_spec;

// Rows a window spans from its start to its last target, both included.
uint64_t sf_window_span(const sf_window_spec *w);
// The target rows per window: steps, at least 1.
uint32_t sf_window_steps(const sf_window_spec *w);
// The most steps --horizon A-B may have (the last Dense's units are steps x targets).
#define SF_MAX_STEPS 1024u
// The horizon as --horizon takes it: "N", or "A-B" with several steps.
void sf_window_horizon_text(const sf_window_spec *w, char *buf, size_t cap);

typedef struct sf_plan sf_plan;

// A time-ordered split of every series, as users split an array for Keras'
// validation_data: the first rows - floor(rows x fraction) rows of each
// series are for training, the rest for validation. A training window lies
// wholly in the training part, target included, so no validation row
// reaches training. The validation part is its rows, not its windows: every
// stride-th row of it from its first is a validation target whatever the
// window, and that window's inputs may reach back into the training part;
// a window that would start before the series' first row (a segment's,
// with --max-gap: the series a plan is given) is left out. So runs with
// other windows are validated on the same targets.
//
// Cross-validation (folds > 0) cuts each series as scikit-learn's
// TimeSeriesSplit cuts an array: n rows, t = floor(n / (folds + 1)); fold
// k (1 to folds) validates on rows [n - (folds - k + 1) t, n - (folds - k) t)
// and trains on every row before them; the rows after its validation part
// are in neither part (fraction is not used). The cut is made on the
// series in whole (the file's) and a segment of one (--max-gap) keeps what
// of each part lies in it, so no fold's training row comes after its
// validation part's first row in any series. A series of fewer than
// folds + 1 rows is in no part.
enum sf_part { SF_PART_ALL, SF_PART_TRAIN, SF_PART_VALIDATION };
typedef struct {
    double fraction;    // 0 <= fraction < 1
    enum sf_part part;
    uint32_t folds, fold;        // fold of folds (0: no cross-validation)
    const sf_series *whole;      // with folds: the series the cut is made on (NULL: those given)
    uint64_t nwhole;
} sf_split;
enum { SF_MAX_FOLDS = 1000 };

// The rows of split's part of series[i] as out[i] (first_row, rows): the
// last fraction of its rows (rounded down) for validation, the rest for
// training, or the fold's parts; NULL split: all of them.
void sf_split_rows(const sf_series *series, uint64_t nseries, const sf_split *split, sf_series *out);

// A plan over a file's rows: chunk_rows rows per chunk, series as in the
// file's series table, windows from the part of each series that split
// names (NULL: all of it); blocks of block_chunks consecutive chunks are the
// unit of shuffling and reading. series and w are copied.
int sf_plan_create(sf_plan **out, uint64_t nrows, uint32_t chunk_rows, const sf_series *series, uint64_t nseries,
                   const sf_window_spec *w, uint32_t block_chunks, const sf_split *split, sf_err *e);
void sf_plan_free(sf_plan *p);
// The windows such a plan would have (sf_plan_windows), without making one:
// what a buffer of windows can ever hold is known before it is allocated.
uint64_t sf_plan_count(const sf_series *series, uint64_t nseries, const sf_window_spec *w, const sf_split *split);
// The longest span a window of split's part may have in one series (the
// most rows a training part has; from a series' first row to the last
// target row of its validation part that stride reaches): no longer one fits.
uint64_t sf_split_longest(const sf_series *series, uint64_t nseries, uint32_t stride, const sf_split *split);
// For a hint when too few windows fit: the window's options that are above
// their least (stride too when count is set: it thins windows, never fits
// one), as ", --window, --horizon" or, with python, ", window (--window), ...".
// buf is "" when all are at their least.
void sf_window_shrinkers(const sf_window_spec *w, bool count, bool python, char *buf, size_t cap);

// Every valid window (one that fits in its series and its part as sf_split
// says) has an id; ids follow start rows, so the windows of one block are
// consecutive.
uint64_t sf_plan_windows(const sf_plan *p);
uint64_t sf_plan_window_start(const sf_plan *p, uint64_t id);  // first row
uint64_t sf_plan_blocks(const sf_plan *p);
const sf_window_spec *sf_plan_spec(const sf_plan *p);  // the plan's own copy

// How a block's seam is cut: its windows that reach past the block's last
// row into the next block's first rows. A seam is cut with the later of its
// two blocks in the shard's order, after that task's own windows, so that
// each chunk is read once an epoch: the earlier task keeps the edge rows
// the seam needs (its tail, or its head for the previous block's seam)
// until the later one takes them (KEEP, TAKE); when no more edges may be
// kept, or the next block has no task in the shard, the later task reads
// the other block's edge again (READ); NONE: nothing to do here. The order
// of the windows does not depend on which.
enum sf_seam { SF_SEAM_NONE, SF_SEAM_READ, SF_SEAM_KEEP, SF_SEAM_TAKE };

// A block's windows in a shard, the rows to load for them, and what the task
// does with its seam (next) and the previous block's (prev).
typedef struct {
    uint64_t block;
    uint64_t first_window, end_window;  // ids [first, end)
    uint64_t seam_window;               // [seam, end): the windows that reach into the next block
    uint64_t row_lo, row_hi;            // the rows to load: [row_lo, row_hi)
    enum sf_seam prev, next;
    uint64_t prev_first, prev_end;      // the previous block's seam (when prev is not NONE)
} sf_block_task;

// Every window that starts in block b, and the rows they need (into the
// next chunks, never past a series end); seam_window is end_window.
sf_block_task sf_plan_block(const sf_plan *p, uint64_t b);
// Block b's own rows [*lo, *hi).
void sf_plan_block_rows(const sf_plan *p, uint64_t b, uint64_t *lo, uint64_t *hi);

// Shard r of `shards` owns the windows [r * W / R, (r + 1) * W / R) in id
// order: a stretch of the file of its own, the same every epoch (as
// tf.data's file sharding), shares that differ by at most one window, and
// every window once per epoch over all shards. Each epoch the shard visits
// its blocks in an order drawn from (seed, epoch, r), the same on every
// machine; its seams are shared between neighbouring blocks (enum sf_seam)
// with at most max_edges edges kept at once. Fills tasks (at most nblocks
// entries) and returns how many, SF_EINVAL or SF_ENOMEM.
int64_t sf_plan_shard(const sf_plan *p, uint64_t seed, uint64_t epoch, uint32_t shards, uint32_t r,
                      uint64_t max_edges, sf_block_task *tasks);

// ---- columns and their scaling ----

enum sf_norm { SF_NORM_ZSCORE, SF_NORM_MINMAX, SF_NORM_NONE };
// "zscore", "minmax" or "none"; false (and *out untouched) for anything else.
bool sf_norm_parse(const char *name, enum sf_norm *out);
const char *sf_norm_name(enum sf_norm norm);

// Which columns feed x and y, and how values are scaled. Scaling is float32
// arithmetic, v * scale + offset, with the two constants computed in double
// from the file's statistics and rounded to float32: z-score scale = 1 / std
// and offset = -mean / std (scale 1 when std is 0); min-max scale =
// 1 / (max - min) and offset = -min / (max - min) (scale 1, offset -min when
// max == min); none: 1 and 0. A spread below float32's normal range
// (FLT_MIN: values that differ only in denormals) would scale by infinity:
// such a column is scaled as a constant, and counted in nflat. A
// categorical feature column (sf_pack_category) is one input per value,
// one-hot: 1 where the row's code is the input's code, else 0.
typedef struct {
    uint32_t nfeatures, ntargets;  // x's width: the feature columns, then sin and cos of each time feature
    uint32_t *features, *targets;  // column indices (a time feature's two: SF_COLUMN_TIME)
    float *feature_scale, *feature_offset, *target_scale, *target_offset;  // (a time feature's: 1 and 0)
    float *target_mean;            // each target's mean in the statistics it is scaled by, in data units
    int32_t *codes;                // per feature: the code it is one-hot for; SF_CODE_NONE: a number
    int32_t *change_from;          // per target: the feature whose value at the window's last row y is
                                   // given as a change from (sf_columns_predict_change); NULL: y the value
    uint32_t nunseen, unseen_column;  // values of the file the categories given to create leave out
    uint32_t nflat, flat_column;  // columns scaled as constants, and the first of them (a column index)
    uint32_t ntime;               // time features, computed from the file's time column
    enum sf_time_feature time[SF_TIME_FEATURE_COUNT];
    // --future-features: the inputs (indices into features) whose values at
    // every target row of a window are inputs too, after its rows
    // (sf_window_x_len); nfuture 0: none.
    uint32_t nfuture, *future;
    // --series-features onehot: after those, one input per series of the
    // model (nonehot), 1 for the window's series and 0 for the others. The
    // window's series is the one of the file's table (onehot_table,
    // borrowed, nonehot_table series) that holds its last input row, and
    // onehot_code gives its input. nonehot 0: none.
    uint32_t nonehot;
    const sf_series *onehot_table;
    uint64_t nonehot_table;
    uint32_t *onehot_code;
    enum sf_time_kind time_kind;  // the file's, to read its times
    // Targets pack imputed (--missing ffill, sf_pack_info.imputed) come out
    // as NaN in y instead of the filled-in value, so that scoring leaves
    // them out: set by evaluate, predict and validation, not by training.
    bool imputed_nan;
    // --norm-scope series: the rows of each series of the file scaled by
    // that series' own statistics (sf_columns_scope). nscoped: the file's
    // series, scoped their rows (borrowed: its series table); series s's
    // feature j at [s * nfeatures + j], target j at [s * ntargets + j].
    // nscoped 0: every row by the scales above (global).
    uint64_t nscoped;
    const sf_series *scoped;
    float *scoped_feature_scale, *scoped_feature_offset, *scoped_target_scale, *scoped_target_offset;
    float *scoped_target_mean;
} sf_columns;
#define SF_COLUMN_TIME UINT32_MAX
#define SF_CODE_NONE (-1)    // a feature that is a number
#define SF_CODE_UNSEEN (-2)  // a category value this file does not have: always 0

// True when a column of these statistics is scaled as a constant: its
// spread under norm (std, or max - min) is below FLT_MIN, 0 included.
bool sf_column_flat(const sf_col_stats *s, enum sf_norm norm);
// Whether y, target j's value under imputed_nan, is one pack imputed: NaN
// in a target column with imputed values (elsewhere a NaN is an overflow,
// to be scored).
bool sf_columns_target_imputed(const sf_columns *c, const sf_pack_info *in, float y, uint32_t j);
// The target columns (targets) or the numeric feature columns that are no
// target (!targets) that stats make constants under norm, as a list of
// names (sf_list_append) into buf; returns how many, or SF_ERANGE when they
// do not fit cap bytes.
int sf_columns_flat_list(const sf_columns *c, const sf_pack_info *info, const sf_col_stats *stats,
                         enum sf_norm norm, bool targets, char *buf, size_t cap);
// Resolves comma-separated column names (features, targets) against the
// file into *c (its own arrays: free with sf_columns_free); NULL features
// means every column, NULL targets every numeric column. An unknown name is
// SF_EINVAL with the file's columns listed; a categorical target SF_EUSAGE.
// categories (as sf_columns_categories writes them, a model's) gives each
// categorical feature's inputs by value, so that a file whose codes differ
// feeds the model alike (a value it lacks: SF_CODE_UNSEEN; a value of the
// file's not there is counted in nunseen and gets zeros); NULL: the file's
// values, one input per code.
int sf_columns_create(sf_columns *c, const sf_pack_info *info, const char *features, const char *targets,
                      const char *categories, enum sf_norm norm, sf_err *e);
void sf_columns_free(sf_columns *c);
// Writes c's categorical features into buf (cap bytes) as a list of lists
// (sf_list_append), each its column's name and then its inputs' values:
// '"weather,sun,rain",...'; "" for none. SF_ERANGE when it does not fit.
int sf_columns_categories(const sf_columns *c, const sf_pack_info *info, char *buf, size_t cap);
// The feature columns as a list, a categorical column once; SF_ERANGE when
// it does not fit cap bytes.
int sf_columns_feature_list(const sf_columns *c, const sf_pack_info *info, char *buf, size_t cap);
// Appends the time features list names ("hour,weekday,yearday", each once)
// to c's features: two each, sin and cos of the time's phase in its day,
// week or year (sf_time_phase), so that cycles are learnable. SF_EUSAGE
// when the file has no time column or a name is unknown.
int sf_columns_add_time(sf_columns *c, const sf_pack_info *info, const char *list, sf_err *e);
// SF_EUSAGE naming a time feature of c that has one value on every row of
// the file (hour of dates without a time of day; hour or weekday of rows a
// whole number of days or weeks apart from one phase), the time column's
// resolution and the features that do vary: a constant input is useless.
int sf_columns_check_time(const sf_columns *c, const sf_pack_info *in, sf_err *e);
// The same over the times of ranges' rows (a training part: n ranges,
// ascending, as series), for what the file's tables cannot judge (irregular
// steps, monthly rows): SF_EUSAGE naming a time feature whose inputs (sin
// and cos, as batches hold them) have a spread below FLT_MIN there, as the
// columns' check. Reads until every time feature of c has varied.
int sf_columns_check_time_rows(const sf_columns *c, const sf_pack *p, const sf_series *ranges, uint64_t n, sf_err *e);
// Writes c's time features as a list ("hour,yearday") into buf; "" for none.
void sf_columns_time_list(const sf_columns *c, char *buf, size_t cap);
// --future-features: the inputs of list's names ("holiday,hour"), in the
// inputs' order whatever the list's, each a
// feature column of c (a categorical one: its every input) or a time
// feature of c, are also read at every target row of a window (values known
// in advance, such as a holiday flag or a schedule). SF_EUSAGE, naming the
// name and --future-features, for a name that is no feature, a target (its
// value there is the answer), the time column or a series column, or one
// named twice, or more than SF_MAX_FUTURE_INPUTS inputs. Call it after
// sf_columns_add_time.
#define SF_MAX_FUTURE_INPUTS 1024u
int sf_columns_future(sf_columns *c, const sf_pack_info *info, const char *list, sf_err *e);
// --series-features onehot: the series of the file's table (in->series,
// borrowed: it must outlive c) one-hot, as inputs after the future
// features. names (n of them) are the model's series, by name: each of
// the file's must be one (SF_EUSAGE naming it and --series-features, so
// that no forecast is made for a series the model never saw); NULL: the
// file's own, in its table's order (training), which must have a series
// column and non-empty, distinct names (else SF_EUSAGE). At most
// SF_MAX_ONEHOT series.
#define SF_MAX_ONEHOT 65536u
int sf_columns_onehot(sf_columns *c, const sf_pack_info *in, const sf_series *names, uint64_t n, sf_err *e);
// The names of c's future features as a list ("holiday,hour") into buf,
// "" for none; SF_ERANGE when they do not fit cap bytes.
int sf_columns_future_list(const sf_columns *c, const sf_pack_info *info, char *buf, size_t cap);
// Windows' targets become each target's change from its own value at the
// window's last row (scaled alike, so the change's loss is the value's): a
// model that predicts 0 is persistence. SF_EUSAGE naming a target that is
// not a feature.
int sf_columns_predict_change(sf_columns *c, const sf_pack_info *info, sf_err *e);
// Scales c's numeric columns from stats (one per column of the file: those
// of the training rows, say) instead of the file's; nflat is counted again.
void sf_columns_rescale(sf_columns *c, const sf_col_stats *stats, enum sf_norm norm);
// --norm-scope series: each of the n series (the file's table, borrowed)
// scaled by its own statistics, stats[s * ncols + col] (its training
// rows'); a column flat in a series (sf_column_flat: no or one training
// row, or one value) keeps c's own scaling there, the global one (every
// column of every series when stats is NULL, to be filled in). Call it
// after every other change to c's features. *fallbacks (may be NULL): the
// (series, column) pairs that kept the global scaling. SF_ENOMEM.
int sf_columns_scope(sf_columns *c, const sf_series *series, uint64_t n, const sf_col_stats *stats, uint32_t ncols,
                     enum sf_norm norm, uint64_t *fallbacks, sf_err *e);
// The series of c->scoped that holds row (c->nscoped when none does).
uint64_t sf_columns_series_of(const sf_columns *c, uint64_t row);
// c as it scales row: a shallow copy whose scales are row's series' (c
// itself, copied, when it has one scaling for all).
sf_columns sf_columns_at(const sf_columns *c, uint64_t row);

// ---- blocks: a task's rows ----

// Rows [row_lo, row_hi) of a block, row-major and scaled: feature values
// feat[(row - row_lo) * nfeatures + j], targets targ[(row - row_lo) *
// ntargets + j]. The buffers are the block's own (cap_rows rows).
typedef struct {
    uint64_t row_lo, row_hi;
    float *feat, *targ;
    size_t cap_rows;
} sf_block_data;
void sf_block_data_free(sf_block_data *d);

// Copies the rows of a decoded chunk (column-major values, as
// sf_pack_chunk_decode writes them) that fall in [d->row_lo, d->row_hi)
// into d, gathered and scaled, with their time features computed from
// times (the chunk's rows' times; NULL when cols has no time features).
void sf_block_gather(sf_block_data *d, const sf_columns *cols, const sf_chunk *chunk, const float *values,
                     const int64_t *times);

// A decoder: a decoding context and a chunk's worth of values, for one
// thread. NULL when out of memory.
typedef struct sf_decoder sf_decoder;
sf_decoder *sf_decoder_create(const sf_pack *p);
void sf_decoder_free(sf_decoder *d);
// Checks and decodes chunk i from its stored bytes, and gathers its rows
// that fall in d's range into d (imputed targets NaN under cols->imputed_nan). The decoder keeps the last chunk it
// decoded: asked for it again, it gathers without decoding (stored unread).
int sf_decoder_run(sf_decoder *dec, const sf_pack *p, const sf_columns *cols, uint64_t i, const void *stored,
                   sf_block_data *d, sf_err *e);
bool sf_decoder_holds(const sf_decoder *dec, uint64_t i);

// Reads (pread) and decodes a block task's chunks, single threaded: the
// block stage of the reference stream and of windows in order (where the
// next block's first chunk, which a block's last windows reach into, is
// read once). One loader per thread; p and cols must outlive it. NULL when
// out of memory.
typedef struct sf_block_loader sf_block_loader;
sf_block_loader *sf_block_loader_create(const sf_pack *p, const sf_columns *cols);
void sf_block_loader_free(sf_block_loader *l);
// Fills d (growing its buffers) with the task's rows.
int sf_block_load(sf_block_loader *l, const sf_block_task *t, sf_block_data *d, sf_err *e);

// ---- windows ----

// The floats of one window's inputs: its rows (length, nfeatures), then
// the future features at its target rows (steps, nfuture), then its
// series one-hot (nonehot): every x below holds windows of this many
// floats.
size_t sf_window_x_len(const sf_window_spec *w, const sf_columns *cols);
// Window id's values: x is (length, nfeatures), (steps, nfuture) and
// (nonehot), y is
// (steps, ntargets). The block must hold the window's rows. No other value
// of a target row is read: only the declared future features are known
// before their time.
void sf_window_cut(const sf_plan *p, const sf_columns *cols, const sf_block_data *d, uint64_t id, float *x,
                   float *y);

typedef struct {
    uint32_t batch;        // windows per batch for this lane
    uint64_t pool;         // shuffle pool, in windows; 0 or 1: plan order
    bool drop_remainder;   // only full batches, the same count on every shard
    uint64_t seed;
    uint64_t max_edges;    // block edges kept at once for seams (sf_plan_shard)
} sf_stream_opts;

// Where a stream gets its blocks, when not from its own loader: get gives
// the rows of task k of the shard (tasks come in order, 0, 1, ...; *d stays
// valid until put), put says that task k's rows are no longer needed.
typedef struct {
    int (*get)(void *arg, int64_t k, const sf_block_task *t, const sf_block_data **d, sf_err *e);
    void (*put)(void *arg, int64_t k);
    void *arg;
} sf_block_source;

// Shard r of `shards` for one epoch: its tasks, block by block, through a
// shuffle pool (like tf.data's shuffle buffer: the next window replaces a
// random one of the pool, which goes out), into batches. Single threaded;
// the threaded pipeline runs one per lane over its own blocks. p, plan and
// cols must outlive the stream; src (NULL: a loader of its own) is copied.
typedef struct sf_stream sf_stream;
int sf_stream_open(sf_stream **out, const sf_pack *p, const sf_plan *plan, const sf_columns *cols, uint32_t shards,
                   uint32_t r, uint64_t epoch, const sf_stream_opts *o, const sf_block_source *src, sf_err *e);
// Fills x (batch, length, nfeatures), y (batch, steps x ntargets) and, if not NULL,
// ids (batch) with the next batch. Returns the windows in it: o->batch, less
// for the last one, 0 at the end of the epoch, or a negative code.
int64_t sf_stream_next(sf_stream *s, float *x, float *y, uint64_t *ids, sf_err *e);
void sf_stream_close(sf_stream *s);
// Tasks in the stream's shard this epoch (its source is asked for tasks
// 0 .. this - 1).
int64_t sf_stream_tasks(const sf_stream *s);

// Calls fn on the plan's windows in id order, in batches of up to batch
// (x (count, length, nfeatures), y (count, steps x ntargets), their ids; valid
// during the call). A nonzero return from fn stops it and is returned.
typedef int (*sf_window_fn)(void *arg, const float *x, const float *y, const uint64_t *ids, uint32_t count,
                            sf_err *e);
int sf_windows_in_order(const sf_pack *p, const sf_plan *plan, const sf_columns *cols, uint32_t batch,
                        sf_window_fn fn, void *arg, sf_err *e);

// ---- reading ----

enum sf_io { SF_IO_AUTO, SF_IO_URING, SF_IO_PREAD };
enum sf_direct { SF_DIRECT_AUTO, SF_DIRECT_ON, SF_DIRECT_OFF };

typedef struct {
    enum sf_io io;
    enum sf_direct direct;
    uint32_t depth;      // reads in flight, and buffers (>= 1)
    size_t buffer_size;  // bytes per buffer: at least the largest read
} sf_reader_opts;

// Asynchronous reads of one file into the reader's own aligned buffers:
// io_uring with a registered file and, when RLIMIT_MEMLOCK allows,
// registered buffers; O_DIRECT when the file system takes it (alignment from
// statx STATX_DIOALIGN, else 4096). When io_uring is refused (EPERM, ENOSYS,
// EINVAL or any other error) with SF_IO_AUTO, or with SF_IO_PREAD, reads are
// plain preads done at submission. Short reads are resubmitted. The file is
// fd, already open (borrowed: the reader opens the same file again, for
// O_DIRECT, or dups fd), and name is used in messages.
typedef struct sf_reader sf_reader;
int sf_reader_open(sf_reader **out, int fd, const char *name, const sf_reader_opts *o, sf_err *e);
void sf_reader_close(sf_reader *r);
// Which path is in use, for the one line a program prints (the reader's).
const char *sf_reader_mode(const sf_reader *r);
size_t sf_reader_align(const sf_reader *r);  // offsets and lengths are rounded to this
void *sf_reader_buffer(const sf_reader *r, uint32_t i);  // i < depth; the reader's
// Reads [offset, offset + len) into buffer i (free: not in flight); offset
// must be a multiple of sf_reader_align, len is rounded up to it, and the
// read may stop at the end of the file. tag comes back from sf_reader_wait.
int sf_reader_submit(sf_reader *r, uint32_t i, uint64_t offset, size_t len, uint64_t tag, sf_err *e);
// Waits for a submitted read to complete; returns its buffer index and tag.
int sf_reader_wait(sf_reader *r, uint32_t *i, uint64_t *tag, sf_err *e);

// ---- the threaded pipeline ----

// How a replica's staging ring reaches its device. The backend supplies
// these hooks (backend/backend.h), so that the pipeline itself stays free
// of CUDA; without them slots are plain host memory. A slot is one buffer,
// x then y (sf_batch.y points into it), numbered 0 .. slots - 1
// within its replica. alloc, free and release run on the caller's thread
// (open, close, sf_pipe_release); reclaim and publish on the replica's
// windowers.
typedef struct {
    // Host memory for slot s of replica r, pinned so that its copy is DMA;
    // NULL when it cannot be had.
    void *(*alloc)(void *arg, uint32_t r, uint32_t s, size_t bytes);
    void (*free)(void *arg, uint32_t r, uint32_t s, void *host);
    // Before slot s is refilled: wait until its last copy has read the host
    // memory.
    int (*reclaim)(void *arg, uint32_t r, uint32_t s, sf_err *e);
    // Slot s is filled: start its copy to the device. *device is where it
    // lands, *ready what the consumer's stream waits on before reading it.
    int (*publish)(void *arg, uint32_t r, uint32_t s, const void *host, size_t bytes, void **device, void **ready,
                   sf_err *e);
    // The consumer has released slot s: the device copy may be overwritten
    // once the work the consumer queued on its stream so far is done.
    void (*release)(void *arg, uint32_t r, uint32_t s);
    void *arg;
} sf_stage_ops;

// The global batch: every step's windows over every replica of every rank.
// It is cut into parts, each a shard of the plan with its own epoch order
// and shuffle pool (sf_stream over shard g of G): part g of a global batch
// of B windows holds rows [B g / G, B (g + 1) / G) of it. Replica q of Q
// takes the parts [G q / Q, G (q + 1) / Q), so which windows a global batch
// holds, and in which order, depends on the seed, the data, B and G, never
// on the replicas, the ranks, the lanes or the decoders. Parts are also
// the units whose gradients are summed in a fixed order (train/allreduce.c).
#define SF_MAX_PARTS 64u
#define SF_DEFAULT_PARTS 12u
// G for a global batch of `batch` windows: batch / 8 (a part of fewer
// windows costs more in overhead than its sum saves), between 1 and 12
// (1, 2, 3, 4 and 6 replicas get equal shares).
uint32_t sf_batch_parts(uint32_t batch);
// Part g of `parts`: its first row *lo in the global batch and its windows *n.
void sf_part_rows(uint32_t batch, uint32_t parts, uint32_t g, uint32_t *lo, uint32_t *n);
// Replica q of `replicas`: its parts [*first, *end).
void sf_replica_parts(uint32_t parts, uint32_t replicas, uint32_t q, uint32_t *first, uint32_t *end);
// The windows replica q of `replicas` takes of a full global batch.
uint32_t sf_replica_windows(uint32_t batch, uint32_t parts, uint32_t replicas, uint32_t q);

// The knobs of one pipeline. Every command that runs one starts from
// sf_pipe_opts_default() and sets what its options name, so that `train`
// runs the pipeline `bench pipeline` measures.
typedef struct {
    sf_window_spec window;
    const sf_series *series; // the series windows stay inside (borrowed; NULL: the file's table),
    uint64_t nseries;        // e.g. cut at gaps (sf_pack_segments)
    uint32_t block_chunks;   // chunks per block, the unit of shuffling and reading (>= 1)
    uint32_t replicas;       // consumers (>= 1)
    uint32_t shard_first, shard_total;  // these replicas are replicas shard_first ..
                             // shard_first + replicas - 1 of shard_total (0:
                             // replicas) that share each epoch: the ranks of a
                             // job, each with its own pipe
    uint32_t batch;          // windows per global batch, every replica of the job's (>= 1)
    uint32_t parts;          // parts of the global batch (sf_batch_parts; 0: its default)
    uint64_t pool;           // the job's shuffle pool, in windows, shared evenly among the parts (0 or 1: plan order)
    bool drop_remainder;     // only full batches
    uint64_t seed, epochs;   // the epochs to produce: first_epoch .. epochs - 1
    uint64_t first_epoch;    // (a resumed run starts later)
    sf_split split;          // the part of each series to use (zero: all)
    sf_reader_opts io;       // io, direct, depth (buffer_size is set by the pipe)
    uint32_t decoders;       // decoder threads (>= 1)
    uint32_t slots;          // staging ring slots per lane (>= 2)
    uint32_t prefetch;       // decoded blocks queued per lane (>= 1), shared among its parts (two each at least)
    uint32_t lanes;          // windower threads per replica (>= 1; at most its parts),
                             // each cutting some of the replica's parts; the batches
                             // do not depend on it
    uint64_t edge_bytes;     // bytes each lane may keep of block edges, so that a
                             // block's seam need not read the next block again
                             // (sf_plan_shard); the batches do not depend on it
    const sf_stage_ops *stage;  // NULL: host slots, no device copy; else hooks
                             // that outlive the pipe
    sf_trace *trace;         // NULL, or spans for every read, decode and batch on
                             // one track per thread, and queue depths
    // --pipeline auto (sf_pipe_tuning): decoders, prefetch, slots and
    // io.depth above are caps, what is allocated or may be started, and
    // the pipe runs with what a controller chooses under them; a knob in
    // `fixed` (SF_KNOB_* bits: given explicitly) runs at its value, never
    // changed. The pool, the block size and the lanes are never tuned.
    bool autotune;
    uint32_t fixed;
    uint32_t cores;          // cores the pipeline may use: those the replicas leave
                             // free (0: the process's, sched_getaffinity)
    double tune_interval;    // seconds between the controller's looks (0: 0.1)
} sf_pipe_opts;

// The knobs the controller turns: none of them changes a batch. The pool
// (the shuffle buffer's size) and block_chunks (the unit the epoch's order
// permutes) decide which window comes when, so they are not among them;
// the lanes are fixed once the pipe runs (each owns its parts' streams).
enum { SF_KNOB_DECODERS = 1, SF_KNOB_PREFETCH = 2, SF_KNOB_SLOTS = 4, SF_KNOB_DEPTH = 8 };
typedef struct {
    uint32_t decoders, prefetch, slots, depth;
} sf_pipe_knobs;

// The defaults: window 60/1/1/1, one block per chunk, one replica, a global
// batch of 32, pool 16384, seed 1, one epoch, io_uring when allowed with 8 reads in
// flight, a decoder per online core, 4 slots, 4 blocks prefetched, 1 lane,
// 16 MB of block edges per lane.
sf_pipe_opts sf_pipe_opts_default(void);
// The block edges o->edge_bytes holds for these columns (sf_stream_opts).
uint64_t sf_pipe_max_edges(const sf_pipe_opts *o, const sf_columns *cols);

// What a batch of replica r's staging ring holds: x (count, length,
// nfeatures), y (count, ntargets), the window ids, valid until
// sf_pipe_release: its parts of the global batch, first_part .. first_part +
// nparts - 1, back to back, part_count[j] windows each (fewer than the part's
// size, or none, only in an epoch's last batch without drop-remainder). With stage hooks the same batch is also on the device at
// device_x, device_y once ready has fired; without them those are NULL.
typedef struct {
    float *x, *y;
    uint64_t *ids;
    uint32_t count;
    uint64_t epoch;
    float *device_x, *device_y;
    void *ready;
    uint32_t slot, lane;  // where it lives, for sf_pipe_release
    uint32_t first_part, nparts;  // 0 and 0: one part, the whole batch (a caller's own)
    const uint32_t *part_count;
} sf_batch;

enum sf_stage { SF_STAGE_READ, SF_STAGE_DECODE, SF_STAGE_WINDOW };

// Seconds and counts since open; *_busy is working time, *_wait blocked
// time, summed over the stage's threads.
typedef struct {
    uint64_t bytes_read, chunks_read, chunks_decoded;
    double read_busy, read_wait, decode_busy, decode_wait;
    // The threads' time on a core and in the scheduler's queue waiting for
    // one (sf_thread_times; NAN when the kernel does not say): what of busy
    // was work, what was starved of a core, and the rest blocked (I/O)
    double read_cpu, read_queued, decode_cpu, decode_queued;
} sf_pipe_stats;

typedef struct {
    uint64_t batches;
    double busy, input_wait, output_wait;  // the windowers: cutting, waiting for blocks, for free slots
    double cpu, queued;                    // the windowers on a core, waiting for one (per windower, as busy)
    double consumer_wait;                  // sf_pipe_next_batch waiting for a ready batch, after the first
    double first_wait;                     // waiting for the first batch (the pipeline filling)
    // Each wait for a batch after the first: from the batch's publication
    // to the waiting replica's return, the time the scheduler took to run
    // it again (sf_lat_bucket buckets)
    uint32_t wake[SF_LAT_BUCKETS];
} sf_pipe_replica_stats;

// Bytes the pipeline holds for o on a file with these columns: reader
// buffers, decoders' chunk buffers, each lane's prefetched blocks, shuffle
// pool, staging ring and kept block edges, and the per-block plan arrays
// (about 250 bytes a block per lane, the one part that grows with the file).
// Everything else (code, thread stacks, zstd contexts) is a constant:
// docs/PIPELINE.md gives its measured size.
uint64_t sf_pipe_memory(const sf_pipe_opts *o, const sf_pack_info *in, const sf_columns *cols);
// SF_EUSAGE, naming the pool and the slots, when what the pipeline would
// hold for o (sf_pipe_memory) and `others` bytes more exceed the machine's
// memory (sf_machine_memory): checked before anything is allocated
// (sf_pipe_open does).
int sf_pipe_check_memory(const sf_pipe_opts *o, const sf_pack_info *in, const sf_columns *cols, uint64_t others,
                         sf_err *e);
// Global batches an epoch of a plan of `windows` windows has (each replica
// gives that many): every part of the batch its shard; with drop_remainder
// the fewest full batches a part's shard gives, without it the most batches.
uint64_t sf_pipe_epoch_batches(const sf_pipe_opts *o, uint64_t windows);
// The parts o's global batch is cut into: o->parts, else sf_batch_parts(o->batch).
uint32_t sf_pipe_parts(const sf_pipe_opts *o);
// What every caller does before sf_pipe_open. With o->autotune, sets the
// caps of the knobs that are not fixed: the decoders the cores leave (o->cores,
// else the process's: cores less the lanes, plus one, the reader mostly
// sleeps), 8 reads, 8 blocks, 8 slots, halved (the largest share of the
// memory first, never below 1 decoder and 2 of the others) until
// sf_pipe_memory fits budget bytes with o's pool. Then, with a budget (0:
// none, the caps only), shrinks o->pool, then o->edge_bytes, so that
// sf_pipe_memory fits it; SF_EUSAGE (the pool unchanged) when even a pool of one
// window per lane does not.
int sf_pipe_fit_budget(sf_pipe_opts *o, const sf_pack_info *in, const sf_columns *cols, uint64_t budget, sf_err *e);

// The threads: a reader, o->decoders decoders, a windower per lane. p and
// cols are borrowed and must outlive the pipe (the pipe reads p's file
// through a reader of its own). Tests may make a stage slow on purpose with
// SEQFEED_TEST_DELAY (sf_test_delays: read, decode, window, io, decode-wait; its step is the trainer's);
// a malformed value is SF_EINVAL.
typedef struct sf_pipe sf_pipe;
int sf_pipe_open(sf_pipe **out, const sf_pack *p, const sf_columns *cols, const sf_pipe_opts *o, sf_err *e);
// The next batch of replica r (each replica's batches come in order): 1 and
// *b filled, 0 when all epochs are done, or a negative code (a bad chunk
// anywhere stops the pipeline and every replica gets the error).
int sf_pipe_next_batch(sf_pipe *p, uint32_t r, sf_batch *b, sf_err *e);
void sf_pipe_release(sf_pipe *p, uint32_t r, const sf_batch *b);
// sf_pipe_release, except that the batch's memory (b->x, y at b->y inside
// it) becomes the caller's, to free() or to give back as a later call's
// spare, and the slot takes spare in its place: memory an earlier call of
// this pipe handed out, or NULL for new. A batch goes to its consumer
// without a copy. Host slots only: SF_EINVAL with stage hooks, SF_ENOMEM
// when new memory cannot be had; the batch is still taken then.
int sf_pipe_release_keep(sf_pipe *p, uint32_t r, const sf_batch *b, void *spare);
// The reader's mode (sf_reader_mode): the pipe's, valid until close.
const char *sf_pipe_io_mode(const sf_pipe *p);
// The counters so far; per_replica (NULL, or replicas entries) sums each
// replica's lanes.
void sf_pipe_get_stats(sf_pipe *p, sf_pipe_stats *st, sf_pipe_replica_stats *per_replica);
// What --pipeline auto chose and why. The controller looks every
// tune_interval seconds from replica 0's sf_pipe_next_batch: over the last
// interval it measures the consumer's wait and its own time per batch (the
// step), the windowers' busy time per batch and their waits for blocks and
// for slots, the decoders' and the reader's busy shares. When the consumer
// waited more than 0.5% it grows the stage that held it up (decoders when
// they are busy and the windowers wait for blocks, reads in flight when the
// reader is, prefetch when blocks come late with both idle, a slot when the
// windowers keep up on average), and keeps a change only if the wait or the
// rate improved (else it goes back and stops there); when the consumer did
// not wait it gives back a decoder, a slot, a block or a read that was idle,
// one at a time, and goes back on the first wait. Its first look sizes the
// decoders and reads from the measured costs at the consumer's rate with a
// margin of 1.25. A step that changes by a third starts a new search.
typedef struct {
    bool autotune;
    sf_pipe_knobs now, cap;  // in use, and the caps (fixed knobs: both their value)
    uint32_t fixed;          // SF_KNOB_* bits
    uint64_t changes;        // lines so far: 1, the start, and one per change
    double settled;          // seconds from open to the last change
    double step;             // the consumer's seconds per batch at the last look (0: none yet)
    double wait;             // the consumer's wait share at the last look
    uint64_t cap_bytes;      // what the pipe holds at its caps (sf_pipe_memory)
    char line[320];          // the latest line: the start, or the last change and why
} sf_pipe_tuning;
// The choice in one phrase, for a checkpoint and a report: "auto: decoders
// 1, prefetch 3, slots 2, depth 2 (settled at 0.40 s; caps 2, 8, 8, 8)", or
// "fixed: ..." without autotune. SF_PIPE_TUNING_TEXT bytes hold it whole.
enum { SF_PIPE_TUNING_TEXT = 200 };
void sf_pipe_tuning_text(const sf_pipe_tuning *t, char *buf, size_t cap);
// A copy of the tuning's state, under the pipe's lock.
void sf_pipe_get_tuning(sf_pipe *p, sf_pipe_tuning *t);
// Its `changes`, without the lock: a program polls it after each batch and
// copies the state (sf_pipe_get_tuning) to print its line only when it grew.
uint64_t sf_pipe_tuning_changes(const sf_pipe *p);
// Sets the knobs that are not fixed to k's (each within 1 or 2 .. its cap:
// SF_EINVAL beyond), as the controller does; safe while the pipe runs, from
// a consumer's thread. For tests, and for a caller with a controller of its
// own (the pipe's keeps running when autotune is set).
int sf_pipe_set_knobs(sf_pipe *p, const sf_pipe_knobs *k, sf_err *e);

// Stops and joins every thread, at any point, but not while another thread
// is inside sf_pipe_next_batch or sf_pipe_release.
void sf_pipe_close(sf_pipe *p);

#endif
