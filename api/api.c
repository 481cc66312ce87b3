// libseqfeed's C API (seqfeed.h) over the pack, pipeline and train layers.
#include <inttypes.h>
#include <link.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/seqfeed.h"
#include "pack/pack.h"
#include "train/train.h"

// ---- JSON text ----


static void put_string(sf_text *t, const char *s) {
    sf_text_put(t, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') sf_text_put(t, "\\%c", c);
        else if (c < 0x20) sf_text_put(t, "\\u%04x", c);
        else sf_text_put(t, "%c", c);
    }
    sf_text_put(t, "\"");
}

static void put_real(sf_text *t, double v) {
    if (v != v || v - v != 0) sf_text_put(t, "null");  // JSON has no NaN or infinity
    else sf_text_put(t, "%.17g", v);
}

// The library below takes e as given: a caller's NULL gets a scratch one.
#define LOCAL_ERR(e) \
    sf_err e##_local; \
    if (!(e)) (e) = &e##_local

int sf_api_pack_open(sf_pack **out, const char *path, sf_err *e) {
    LOCAL_ERR(e);
    if (!out || !path) {
        if (out) *out = NULL;
        return sf_err_set(e, SF_EINVAL, "sf_api_pack_open: %s is NULL", out ? "the path" : "the handle's place");
    }
    return sf_pack_open(out, path, e);
}

void sf_api_pack_close(sf_pack *p) { sf_pack_close(p); }

char *sf_api_pack_describe(const sf_pack *p) {
    if (!p) return NULL;
    const sf_pack_info *in = sf_pack_get_info(p);
    sf_text t = {0};
    sf_text_put(&t, "{\"version\": %u, \"rows\": %" PRIu64 ", \"chunk_rows\": %u, \"columns\": [", in->version, in->nrows,
        in->chunk_rows);
    for (uint32_t c = 0; c < in->ncols; c++) {
        const sf_col_stats *st = &in->stats[c];
        sf_text_put(&t, "%s{\"name\": ", c ? ", " : "");
        put_string(&t, in->col_names[c]);
        const char *key[4] = {"min", "max", "mean", "std"};
        const double val[4] = {st->min, st->max, st->mean, st->std};
        for (int k = 0; k < 4; k++) {
            sf_text_put(&t, ", \"%s\": ", key[k]);
            put_real(&t, val[k]);
        }
        sf_text_put(&t, ", \"imputed\": %" PRIu64, in->imputed ? in->imputed[c] : 0);  // by pack --missing ffill
        const sf_category *cat = sf_pack_category(in, c);
        if (cat) {
            sf_text_put(&t, ", \"categories\": [");
            for (uint32_t v = 0; v < cat->nvalues; v++) {
                if (v) sf_text_put(&t, ", ");
                put_string(&t, cat->values[v]);
            }
            sf_text_put(&t, "]");
        }
        sf_text_put(&t, "}");
    }
    sf_text_put(&t, "], \"series_column\": ");
    put_string(&t, in->series_column);
    sf_text_put(&t, ", \"time_column\": ");
    if (in->time_kind == SF_TIME_NONE) sf_text_put(&t, "null");
    else put_string(&t, in->time_column);
    static const char *const kinds[] = {"none", "iso-8601", "epoch-s", "epoch-ms", "epoch-us", "epoch-ns"};
    sf_text_put(&t, ", \"time_kind\": \"%s\", \"series\": [", kinds[in->time_kind]);
    for (uint64_t i = 0; i < in->nseries; i++) {
        sf_text_put(&t, "%s{\"name\": ", i ? ", " : "");
        put_string(&t, in->series[i].name);
        sf_text_put(&t, ", \"first_row\": %" PRIu64 ", \"rows\": %" PRIu64 "}", in->series[i].first_row, in->series[i].rows);
    }
    sf_text_put(&t, "]}");
        return t.s;
}

// Each chunk of [row_lo, row_hi) decoded once, handed to take.
static int each_chunk(const sf_pack *p, uint64_t row_lo, uint64_t row_hi, bool times,
                      void (*take)(void *arg, const sf_chunk *c, const float *vals, const int64_t *time, uint64_t lo,
                                   uint64_t hi),
                      void *arg, sf_err *e) {
    const sf_pack_info *in = sf_pack_get_info(p);
    if (row_lo > row_hi || row_hi > in->nrows)
        return sf_err_set(e, SF_EINVAL, "%s: rows %" PRIu64 " to %" PRIu64 " are not within its %" PRIu64 " rows",
                          sf_pack_name(p), row_lo, row_hi, in->nrows);
    size_t rows = in->chunk_rows < in->nrows ? in->chunk_rows : (size_t)in->nrows;
    float *vals = malloc(rows * in->ncols * sizeof *vals + 1);
    int64_t *time = times ? malloc(rows * sizeof *time + 1) : NULL;
    void *stored = malloc(sf_pack_max_stored_size(p) + 1);
    sf_pack_dctx *d = sf_pack_dctx_create();
    int rc = vals && stored && d && (!times || time) ? 0 : sf_err_set(e, SF_ENOMEM, "out of memory");
    for (uint64_t row = row_lo; !rc && row < row_hi;) {
        uint64_t c = row / in->chunk_rows;
        sf_chunk ch = sf_pack_chunk_locate(p, c);
        if ((rc = sf_pack_chunk_read(p, c, stored, e)) ||
            (rc = sf_pack_chunk_decode_all(d, p, c, stored, vals, time, NULL, e)))
            break;
        uint64_t hi = row_hi < ch.first_row + ch.rows ? row_hi : ch.first_row + ch.rows;
        take(arg, &ch, vals, time, row, hi);
        row = hi;
    }
    free(vals), free(time), free(stored);
    sf_pack_dctx_free(d);
    return rc;
}

typedef struct {
    const uint32_t *cols;
    uint32_t ncols;
    uint64_t row_lo;
    float *out;
    int64_t *times;
} read_job;

static void take_values(void *arg, const sf_chunk *c, const float *vals, const int64_t *time, uint64_t lo, uint64_t hi) {
    read_job *j = arg;
    (void)time;
    for (uint64_t r = lo; r < hi; r++)
        for (uint32_t k = 0; k < j->ncols; k++)
            j->out[(r - j->row_lo) * j->ncols + k] = vals[(size_t)j->cols[k] * c->rows + (r - c->first_row)];
}

static void take_times(void *arg, const sf_chunk *c, const float *vals, const int64_t *time, uint64_t lo, uint64_t hi) {
    read_job *j = arg;
    (void)vals;
    memcpy(j->times + (lo - j->row_lo), time + (lo - c->first_row), (size_t)(hi - lo) * sizeof *time);
}

int sf_api_pack_read(const sf_pack *p, const uint32_t *cols, uint32_t ncols, uint64_t row_lo, uint64_t row_hi,
                     float *out, sf_err *e) {
    LOCAL_ERR(e);
    if (!p) return sf_err_set(e, SF_EINVAL, "sf_api_pack_read: the pack is NULL (closed?)");
    if (ncols && !cols) return sf_err_set(e, SF_EINVAL, "sf_api_pack_read: %u columns asked for, and cols is NULL", ncols);
    if (ncols && row_hi > row_lo && !out)
        return sf_err_set(e, SF_EINVAL, "sf_api_pack_read: rows to read, and out is NULL");
    const sf_pack_info *in = sf_pack_get_info(p);
    for (uint32_t k = 0; k < ncols; k++)
        if (cols[k] >= in->ncols)
            return sf_err_set(e, SF_EINVAL, "%s: column %u: the file has %u columns", sf_pack_name(p), cols[k], in->ncols);
    read_job j = {.cols = cols, .ncols = ncols, .row_lo = row_lo, .out = out};
    return each_chunk(p, row_lo, row_hi, false, take_values, &j, e);
}

int sf_api_pack_read_times(const sf_pack *p, uint64_t row_lo, uint64_t row_hi, int64_t *out, sf_err *e) {
    LOCAL_ERR(e);
    if (!p) return sf_err_set(e, SF_EINVAL, "sf_api_pack_read_times: the pack is NULL (closed?)");
    if (row_hi > row_lo && !out) return sf_err_set(e, SF_EINVAL, "sf_api_pack_read_times: rows to read, and out is NULL");
    if (sf_pack_get_info(p)->time_kind == SF_TIME_NONE)
        return sf_err_set(e, SF_EINVAL, "%s has no time column", sf_pack_name(p));
    read_job j = {.row_lo = row_lo, .times = out};
    return each_chunk(p, row_lo, row_hi, true, take_times, &j, e);
}

void sf_api_free(void *p) { free(p); }

// ---- packing ----

static void add_note(void *arg, const char *text) {
    sf_text *notes = arg;
    if (notes->s && notes->s[0]) sf_text_put(notes, ", ");
    put_string(notes, text);
}

// o's fields into the packers' options, checked as the command checks them.
static int pack_opts(const sf_api_pack_opts *o, enum sf_missing *missing, sf_pack_writer_opts *w, sf_err *e) {
    static const char *const names[] = {"error", "drop", "ffill"};
    *missing = SF_MISSING_ERROR;
    for (int k = 0; o->missing && k <= 3; k++) {
        if (k == 3)
            return sf_err_set(e, SF_EUSAGE, "missing '%s' (--missing): expected one of error, drop, ffill", o->missing);
        if (!strcmp(o->missing, names[k])) {
            *missing = (enum sf_missing)k;
            break;
        }
    }
    if (o->threads > 256)
        return sf_err_set(e, SF_EUSAGE, "threads %u (--threads): expected an integer from 0 (one per core) to 256",
                          o->threads);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    *w = (sf_pack_writer_opts){.level = SF_PACK_DEFAULT_LEVEL, .filter = SF_FILTER_DELTA_SHUFFLE,
                               .chunk_rows = o->chunk_rows,
                               .threads = o->threads ? (int)o->threads : ncpu > 0 ? (int)ncpu : 1};
    return 0;
}

// What both packers report.
typedef struct {
    uint64_t rows, dropped, filled, series, bytes;
    bool regrouped;
} pack_counts;

// The packers' common end: on success the report (when asked for), then
// the notes freed.
static int pack_done(int rc, pack_counts c, sf_text *notes, char **report, sf_err *e) {
    if (!rc && report) {
        sf_text t = {0};
        sf_text_put(&t, "{\"rows\": %" PRIu64 ", \"rows_dropped\": %" PRIu64 ", \"values_filled\": %" PRIu64
                    ", \"series\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"regrouped\": %s, \"notes\": [%s]}", c.rows,
                    c.dropped, c.filled, c.series, c.bytes, c.regrouped ? "true" : "false", notes->s ? notes->s : "");
        if (!(*report = t.s)) rc = sf_err_set(e, SF_ENOMEM, "out of memory for the report");
    }
    free(notes->s);
    return rc;
}

// The notes and the caller's progress callback behind the packers' one arg.
typedef struct {
    sf_text notes;
    int (*progress)(void *arg, uint64_t rows, uint64_t total);
    void *arg;
} pack_call;

static void pack_note(void *arg, const char *text) { add_note(&((pack_call *)arg)->notes, text); }

static int pack_progress(void *arg, uint64_t rows, uint64_t total) {
    const pack_call *call = arg;
    return call->progress(call->arg, rows, total);
}

// The file of src that out names (a link or another path to it too), or NULL.
static const char *input_at(const sf_api_pack_sources *src, const char *out) {
    struct stat so, si;
    if (stat(out, &so) != 0) return NULL;
    for (uint32_t i = 0; src->files && i < src->nfiles; i++)
        if (src->files[i] && stat(src->files[i], &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino)
            return src->files[i];
    return NULL;
}

int sf_api_pack_arrow(struct ArrowArrayStream *stream, const char *out, const sf_api_pack_opts *o, const char *name,
                      char **report, sf_err *e) {
    return sf_api_pack_arrow_files(stream, out, o, name, NULL, report, e);
}

int sf_api_pack_csv(const char *in, const char *out, const sf_api_pack_opts *o, char **report, sf_err *e) {
    return sf_api_pack_csv_progress(in, out, o, NULL, NULL, report, e);
}

int sf_api_pack_csv_progress(const char *in, const char *out, const sf_api_pack_opts *o,
                             int (*progress)(void *arg, uint64_t rows, uint64_t bytes), void *arg, char **report,
                             sf_err *e) {
    LOCAL_ERR(e);
    static const sf_api_pack_opts none = {0};
    if (report) *report = NULL;
    if (!in || !out) return sf_err_set(e, SF_EINVAL, "sf_api_pack_csv: %s is NULL", in ? "the output path" : "the input");
    if (!o) o = &none;
    if (input_at(&(sf_api_pack_sources){.files = (const char *const[]){in}, .nfiles = 1}, out))
        return sf_err_set(e, SF_EUSAGE, "the output %s is the same file as the input %s: one would destroy the other "
                          "(hint: another output name, ending in .sfpack)", out, in);
    pack_call call = {.progress = progress, .arg = arg};
    sf_csv_pack_opts co = {.columns = o->columns, .drop_columns = o->drop_columns, .series_column = o->series_column,
                           .time_column = o->time_column, .categorical = o->categorical, .note = pack_note,
                           .progress = progress ? pack_progress : NULL, .progress_arg = &call,
                           .memory_budget = o->memory_budget};
    int rc = pack_opts(o, &co.missing, &co.pack, e);
    sf_csv_pack_stats st = {0};
    if (!rc) rc = sf_csv_pack(in, out, &co, &st, e);
    return pack_done(rc, (pack_counts){st.rows, st.rows_dropped, st.values_filled, st.nseries, st.out_bytes,
                                       st.regrouped}, &call.notes, report, e);
}

// ---- the pipeline ----

struct sf_dataset {
    sf_run_data data;
    sf_pipe *pipe;
    sf_dataset_info info;
    pthread_mutex_t lock;  // one sf_dataset_next at a time: the pipe has one consumer per replica
};

// A count field out of [lo, hi]: the field, its option and the range, as
// the CLI says it.
static int out_of_range(const char *field, const char *option, uint64_t v, uint64_t lo, uint64_t hi, sf_err *e) {
    return sf_err_set(e, SF_EUSAGE, "%s %" PRIu64 " (--%s): expected an integer from %" PRIu64 " to %" PRIu64, field, v,
                      option, lo, hi);
}

#define CHECK_COUNT(field, option, lo, hi) \
    do { \
        if ((uint64_t)o->field < (lo) || (uint64_t)o->field > (hi)) \
            return out_of_range(#field, option, o->field, lo, hi, e); \
    } while (0)

// Every field in the range of its option (seqfeed.h); 0 only where it is
// said to mean a default.
static int check_opts(const sf_dataset_opts *o, sf_err *e) {
    if (!o->data || !*o->data) return sf_err_set(e, SF_EUSAGE, "data: expected an .sfpack file, got %s",
                                                 o->data ? "\"\"" : "NULL");
    const char *texts[4] = {o->features, o->targets, o->time_features, o->future_features};
    const char *names[4] = {"features (--features)", "targets (--targets)", "time_features (--time-features)",
                            "future_features (--future-features)"};
    for (int k = 0; k < 4; k++)
        if (texts[k] && !*texts[k])
            return sf_err_set(e, SF_EUSAGE, "%s: expected a list of names (NULL: the default), got \"\"", names[k]);
    CHECK_COUNT(window, "window", 1, UINT32_MAX);
    CHECK_COUNT(stride, "stride", 1, UINT32_MAX);
    CHECK_COUNT(sampling_rate, "sampling-rate", 1, UINT32_MAX);
    CHECK_COUNT(horizon, "horizon", 1, UINT32_MAX);
    if (o->horizon_steps && (o->horizon_steps > o->horizon || o->horizon_steps > SF_MAX_STEPS))
        return sf_err_set(e, SF_EUSAGE, "horizon_steps %u (--horizon A-B): expected 1 to %u and at most horizon %u, "
                          "so that the first step is at least 1 row ahead", o->horizon_steps, SF_MAX_STEPS, o->horizon);
    CHECK_COUNT(batch, "batch-size", 1, 1u << 20);
    if (o->pool) CHECK_COUNT(pool, "pool", 1, UINT64_MAX >> 8);
    CHECK_COUNT(epochs, "epochs", 1, UINT64_MAX >> 1);
    CHECK_COUNT(replicas, "replicas", 1, 256);
    if (o->decoders) CHECK_COUNT(decoders, "decoders", 1, 256);
    if (o->replica >= o->replicas)
        return sf_err_set(e, SF_EUSAGE, "replica %u: expected 0 to %u, one of the %u replicas", o->replica,
                          o->replicas - 1, o->replicas);
    if (o->batch % o->replicas)
        return sf_err_set(e, SF_EUSAGE, "batch %u (--batch-size) is not a multiple of replicas %u (--replicas): each "
                          "replica takes batch / replicas windows", o->batch, o->replicas);
    if (!(o->val_split >= 0 && o->val_split < 1))
        return sf_err_set(e, SF_EUSAGE, "val_split %g (--val-split): expected a number from 0 to below 1", o->val_split);
    if (!(o->max_gap == 0 || (o->max_gap > 0 && isfinite(o->max_gap))))
        return sf_err_set(e, SF_EUSAGE, "max_gap %g (--max-gap): expected seconds above 0 and finite (0: no limit)",
                          o->max_gap);
    return 0;
}

// The windows o asks for, as --window, --stride, --sampling-rate and --horizon.
static sf_window_spec window_spec(const sf_dataset_opts *o) {
    return (sf_window_spec){.length = o->window, .stride = o->stride, .sampling_rate = o->sampling_rate,
                            .horizon = o->horizon, .steps = o->horizon_steps ? o->horizon_steps : 1};
}

int sf_dataset_open(sf_dataset **out, const sf_dataset_opts *o, sf_err *e) {
    LOCAL_ERR(e);
    if (!out || !o) {
        if (out) *out = NULL;
        return sf_err_set(e, SF_EINVAL, "sf_dataset_open: %s is NULL", out ? "the options" : "the handle's place");
    }
    *out = NULL;
    int rc = check_opts(o, e);
    if (rc) return rc;
    // Only what sf_run_data_open and sf_run_pipe_opts read, each from o: the
    // pipeline's own defaults are train's (sf_fit_opts_default), and the
    // library needs nothing of the fit itself.
    sf_fit_opts f = {.norm = SF_NORM_ZSCORE, .pipe = sf_pipe_opts_default()};
    f.data = o->data, f.features = o->features, f.targets = o->targets, f.time_features = o->time_features;
    f.future_features = o->future_features, f.series_features = o->series_features;
    if (o->norm && !sf_norm_parse(o->norm, &f.norm))
        return sf_err_set(e, SF_EUSAGE, "norm '%s' (--norm): expected one of zscore, minmax, none", o->norm);
    if (o->norm_scope && strcmp(o->norm_scope, "global") && strcmp(o->norm_scope, "series"))
        return sf_err_set(e, SF_EUSAGE, "norm_scope '%s' (--norm-scope): expected global or series", o->norm_scope);
    f.norm_series = o->norm_scope && !strcmp(o->norm_scope, "series");
    f.target_change = o->target_change;
    f.pipe.window = window_spec(o);
    f.batch = o->batch;
    if (o->pool) f.pipe.pool = o->pool;
    if (o->decoders) f.pipe.decoders = o->decoders;
    f.seed = o->seed, f.epochs = o->epochs, f.val_split = o->val_split, f.max_gap = o->max_gap;
    sf_dataset *d = calloc(1, sizeof *d);
    if (!d) return sf_err_set(e, SF_ENOMEM, "out of memory");
    if (pthread_mutex_init(&d->lock, NULL)) {
        free(d);
        return sf_err_set(e, SF_ENOMEM, "out of memory for a mutex");
    }
    rc = sf_run_data_open(&d->data, &f, e);
    // Replica r of R reads as rank r of R ranks of one replica: the same
    // shard of the same plan, so the same batches (test python-dataset).
    sf_pipe_opts po = rc ? (sf_pipe_opts){0} : sf_run_pipe_opts(&f, &d->data, 1, (int)o->replica, (int)o->replicas);
    uint64_t windows = 0, longest = 0;
    if (!rc) {
        uint64_t nseries;
        const sf_series *series = sf_run_data_series(&d->data, &nseries);
        windows = sf_plan_count(series, nseries, &po.window, &po.split);
        d->info.batches_per_epoch = sf_pipe_epoch_batches(&po, windows);
        if (!d->info.batches_per_epoch) longest = sf_split_longest(series, nseries, po.window.stride, &po.split);
    }
    // No batch would make an iterable that ends at once, saying nothing.
    if (!rc && d->info.batches_per_epoch == 0) {
        // Only the arguments that can still go lower: one at its least cannot help.
        char opts[160], hint[320];
        sf_window_shrinkers(&po.window, windows > 0, true, opts, sizeof opts);
        snprintf(hint, sizeof hint, "%s%s%s%s", windows > 0 && o->batch > 1 ? ", batch (--batch-size)" : "", opts,
                 o->val_split > 0 ? ", or a smaller val_split (--val-split)" : "",
                 o->max_gap > 0 ? ", or a larger max_gap (--max-gap)" : "");
        rc = sf_err_set(e, SF_EUSAGE, "%s: %" PRIu64 " training windows, fewer than one global batch of %u; a window "
                        "spans %" PRIu64 " rows, the longest series' training part has %" PRIu64 " rows%s%s%s",
                        o->data, windows, o->batch,
                        sf_window_span(&po.window), longest,
                        hint[0] ? " (hint: a smaller " : "", hint[0] ? hint + 2 : "", hint[0] ? ")" : "");
    }
    if (!rc) {
        // --pipeline auto, as train runs it: decoders (unless given),
        // prefetch, slots and reads in flight follow the consumer's rate.
        po.autotune = true, po.fixed = o->decoders ? SF_KNOB_DECODERS : 0;
        rc = sf_pipe_fit_budget(&po, sf_pack_get_info(d->data.pack), &d->data.cols, 0, e);
        if (!rc) rc = sf_pipe_open(&d->pipe, d->data.pack, &d->data.cols, &po, e);
    }
    d->info.window = po.window.length, d->info.batch = rc ? 0 : sf_replica_windows(po.batch, sf_pipe_parts(&po), po.shard_total, po.shard_first), d->info.epochs = po.epochs;
    d->info.nfeatures = d->data.cols.nfeatures, d->info.ntargets = d->data.cols.ntargets;
    d->info.steps = sf_window_steps(&po.window), d->info.nfuture = d->data.cols.nfuture;
    d->info.nonehot = d->data.cols.nonehot;
    if (rc) {
        sf_dataset_close(d);
        return rc;
    }
    *out = d;
    return 0;
}

int sf_dataset_shape(const sf_dataset *d, sf_dataset_info *out) {
    if (!d || !out) return SF_EINVAL;
    *out = d->info;
    return 0;
}

int sf_dataset_next(sf_dataset *d, float *x, size_t x_len, float *y, size_t y_len, sf_err *e) {
    LOCAL_ERR(e);
    if (!d) return sf_err_set(e, SF_EINVAL, "sf_dataset_next: the dataset is NULL (closed?)");
    const sf_dataset_info *in = &d->info;
    // No overflow: sf_pipe_open's memory check bounded a batch by the machine's.
    size_t X = (size_t)in->window * in->nfeatures + (size_t)in->steps * in->nfuture + in->nonehot;  // sf_window_x_len
    size_t nx = in->batch * X, ny = (size_t)in->batch * in->steps * in->ntargets;
    if (!x || !y || x_len < nx || y_len < ny)
        return sf_err_set(e, SF_EINVAL, "sf_dataset_next: a batch is %zu floats of x and %zu of y; given %s%zu and %s%zu",
                          nx, ny, x ? "" : "NULL, ", x_len, y ? "" : "NULL, ", y_len);
    pthread_mutex_lock(&d->lock);
    sf_batch b;
    int rc = sf_pipe_next_batch(d->pipe, 0, &b, e);
    if (rc == 1) {
        // Full batches only (drop_remainder), and never more than x holds.
        size_t count = b.count < in->batch ? b.count : in->batch;
        memcpy(x, b.x, count * X * sizeof *x);
        memcpy(y, b.y, count * in->steps * in->ntargets * sizeof *y);
        sf_pipe_release(d->pipe, 0, &b);
    }
    pthread_mutex_unlock(&d->lock);
    return rc;
}

int sf_dataset_next_buffer(sf_dataset *d, void *spare, float **x, float **y, sf_err *e) {
    LOCAL_ERR(e);
    if (x) *x = NULL;
    if (y) *y = NULL;
    if (!d || !x || !y)
        return sf_err_set(e, SF_EINVAL, "sf_dataset_next_buffer: %s is NULL", d ? "x or y" : "the dataset (closed?)");
    pthread_mutex_lock(&d->lock);
    sf_batch b;
    int rc = sf_pipe_next_batch(d->pipe, 0, &b, e);
    if (rc == 1) {
        int kept = sf_pipe_release_keep(d->pipe, 0, &b, spare);
        if (kept) {
            sf_pipe_release(d->pipe, 0, &b);
            rc = sf_err_set(e, kept, "sf_dataset_next_buffer: %s", kept == SF_ENOMEM ? "out of memory for a batch"
                                                                                   : "the pipeline's slots are not its own");
        } else {
            *x = b.x, *y = b.y;
        }
    }
    pthread_mutex_unlock(&d->lock);
    return rc;
}

void sf_dataset_close(sf_dataset *d) {
    if (!d) return;
    sf_pipe_close(d->pipe);
    sf_run_data_close(&d->data);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

// ---- packing an Arrow stream of several files ----

int sf_api_pack_arrow_files(struct ArrowArrayStream *stream, const char *out, const sf_api_pack_opts *o,
                            const char *name, const sf_api_pack_sources *src, char **report, sf_err *e) {
    LOCAL_ERR(e);
    static const sf_api_pack_opts none = {0};
    if (report) *report = NULL;
    if (!stream || !out) {
        // Consumed whatever the outcome, as promised: also when out is NULL.
        if (stream && stream->release) stream->release(stream);
        return sf_err_set(e, SF_EINVAL, "sf_api_pack_arrow: %s is NULL", stream ? "the output path" : "the stream");
    }
    if (!o) o = &none;
    const char *input = src ? input_at(src, out) : NULL;
    if (input) {
        if (stream->release) stream->release(stream);
        return sf_err_set(e, SF_EUSAGE, "the output %s is the same file as the input %s: one would destroy the other "
                          "(hint: another output name, ending in .sfpack)", out, input);
    }
    pack_call call = {.progress = src ? src->progress : NULL, .arg = src ? src->progress_arg : NULL};
    sf_arrow_pack_opts ao = {.name = name, .columns = o->columns, .drop_columns = o->drop_columns,
                             .series_column = o->series_column, .time_column = o->time_column,
                             .categorical = o->categorical, .note = pack_note, .arg = &call,
                             .memory_budget = o->memory_budget};
    if (src) {
        ao.sources = src->files, ao.source_rows = src->rows, ao.nsources = src->nfiles;
        ao.series_per_file = src->series_per_file;
        if (src->progress) ao.progress = pack_progress;
    }
    int rc = pack_opts(o, &ao.missing, &ao.pack, e);
    if (rc) {
        if (stream->release) stream->release(stream);
        return rc;
    }
    sf_arrow_pack_stats st;
    rc = sf_arrow_pack(stream, out, &ao, &st, e);
    return pack_done(rc, (pack_counts){st.rows, st.rows_dropped, st.values_filled, st.nseries, st.out_bytes,
                                       st.regrouped}, &call.notes, report, e);
}

// ---- the exported model's inputs ----

struct sf_api_inputs {
    sf_checkpoint ck;
    sf_model model;
    sf_predict_data d;
    char path[4096];  // the checkpoint file read (a run directory's best or latest)
};

void sf_api_inputs_close(sf_api_inputs *in) {
    if (!in) return;
    sf_predict_data_close(&in->d);
    sf_checkpoint_free(&in->ck);
    free(in);
}

// A run's directory names its best checkpoint, else its latest, as predict's --checkpoint.
static int inputs_checkpoint_path(const char *given, char *out, size_t cap, sf_err *e) {
    struct stat st;
    if (stat(given, &st) != 0 || !S_ISDIR(st.st_mode)) {  // a file: its read says what is wrong with it
        if (snprintf(out, cap, "%s", given) >= (int)cap)
            return sf_err_set(e, SF_EUSAGE, "checkpoint %.64s...: the path is too long", given);
        return 0;
    }
    sf_checkpoint_dir_info info;
    sf_checkpoint_dir_look(given, &info);
    size_t len = strlen(given);
    const char *sep = len && given[len - 1] == '/' ? "" : "/";
    if (!info.best && !info.latest)
        return sf_err_set(e, SF_EUSAGE, "checkpoint %s is a directory without best.safetensors or latest.safetensors: "
                          "expected a checkpoint file, or a run's directory that holds one", given);
    if (snprintf(out, cap, "%s%s%s", given, sep, info.best ? "best.safetensors" : "latest.safetensors") >= (int)cap)
        return sf_err_set(e, SF_EUSAGE, "checkpoint %.64s...: the path is too long", given);
    return 0;
}

int sf_api_inputs_open(sf_api_inputs **out, const char *checkpoint, const char *data, const char *split, sf_err *e) {
    LOCAL_ERR(e);
    if (!out || !checkpoint || !data) {
        if (out) *out = NULL;
        return sf_err_set(e, SF_EINVAL, "sf_api_inputs_open: %s is NULL",
                          !out ? "the handle's place" : !checkpoint ? "the checkpoint" : "the data");
    }
    *out = NULL;
    enum sf_part part = SF_PART_ALL;
    if (split && !strcmp(split, "train")) part = SF_PART_TRAIN;
    else if (split && !strcmp(split, "validation")) part = SF_PART_VALIDATION;
    else if (split && strcmp(split, "all"))
        return sf_err_set(e, SF_EUSAGE, "split '%s' (--split): expected train, validation, or all (NULL)", split);
    sf_api_inputs *in = calloc(1, sizeof *in);
    if (!in) return sf_err_set(e, SF_ENOMEM, "out of memory");
    int rc = inputs_checkpoint_path(checkpoint, in->path, sizeof in->path, e);
    if (!rc) rc = sf_checkpoint_read(in->path, &in->ck, &in->model, e);
    if (!rc)
        rc = sf_predict_data_open(&in->d, &in->ck, data, part, true, "split NULL or \"all\"; in Python split=None", e);
    if (!rc) {
        // What the caller allocates for sf_api_inputs_read, checked before it does.
        const sf_columns *c = &in->d.cols;
        double windows = (double)sf_plan_windows(in->d.plan);
        double steps = sf_window_steps(&in->ck.window);  // each step's row, time, line and source: 28 bytes
        double bytes = windows * ((double)sf_window_x_len(&in->ck.window, c) * 4 + c->ntargets * 4.0 + 8 + 28 * steps);
        uint64_t have = sf_machine_memory();
        if (have && bytes > (double)have)
            rc = sf_err_set(e, SF_EUSAGE, "%s: the inputs of its %.0f windows would take %.1f GB, more than the %.1f GB "
                            "this machine has (hint: split=\"validation\", or a file of fewer rows)", data, windows,
                            bytes / 1e9, (double)have / 1e9);
    }
    if (rc) {
        sf_api_inputs_close(in);
        return rc;
    }
    *out = in;
    return 0;
}

// The value of input `nth` of categorical column `name` in the checkpoint's
// categories (a list of lists, each its column's name, then its values).
static void category_value(const char *categories, const char *name, uint32_t nth, char *out, size_t cap) {
    size_t len = strlen(categories) + 1;
    char *group = malloc(len), *value = malloc(len);
    snprintf(out, cap, "%u", nth);  // a checkpoint without the column's values: the input's place
    for (const char *p = group && value && *categories ? categories : NULL; p;) {
        if (sf_list_next(&p, group, len)) break;
        const char *q = group;
        if (sf_list_next(&q, value, len) || strcmp(value, name)) continue;
        for (uint32_t k = 0; q && !sf_list_next(&q, value, len); k++)
            if (k == nth) {
                snprintf(out, cap, "%s", value);
                break;
            }
        break;
    }
    free(group), free(value);
}

// Input k's name: its column, COLUMN=VALUE for a category's input (they are
// consecutive), FEATURE_sin or FEATURE_cos for a time feature's (after the
// columns, sin then cos of each in turn).
static void input_label(const sf_api_inputs *in, uint32_t k, char *name, size_t size) {
    const sf_columns *c = &in->d.cols;
    const sf_pack_info *info = sf_pack_get_info(in->d.pack);
    if (c->features[k] == SF_COLUMN_TIME) {
        uint32_t time = k - (c->nfeatures - 2 * c->ntime);
        snprintf(name, size, "%s_%s", sf_time_feature_name(c->time[time / 2]), time % 2 ? "cos" : "sin");
    } else if (c->codes[k] == SF_CODE_NONE) {
        snprintf(name, size, "%s", info->col_names[c->features[k]]);
    } else {
        uint32_t nth = 0;
        while (nth < k && c->features[k - nth - 1] == c->features[k]) nth++;
        const char *col = info->col_names[c->features[k]];
        char value[SF_PACK_MAX_CATEGORY_LIST + 1];
        category_value(in->ck.categories, col, nth, value, sizeof value);
        snprintf(name, size, "%s=%s", col, value);
    }
}

char *sf_api_inputs_describe(const sf_api_inputs *in) {
    if (!in) return NULL;
    const sf_columns *c = &in->d.cols;
    const sf_pack_info *info = sf_pack_get_info(in->d.pack);
    sf_text t = {0};
    sf_text_put(&t, "{\"checkpoint\": ");
    put_string(&t, in->path);
    const sf_window_spec *w = &in->ck.window;
    sf_text_put(&t, ", \"windows\": %" PRIu64 ", \"window\": %u, \"steps\": %u, \"first_step\": %u, \"inputs\": [",
                sf_plan_windows(in->d.plan), w->length, sf_window_steps(w), w->horizon - (sf_window_steps(w) - 1));
    char name[SF_PACK_MAX_CATEGORY_LIST + 64];
    for (uint32_t k = 0; k < c->nfeatures; k++) {
        input_label(in, k, name, sizeof name);
        if (k) sf_text_put(&t, ", ");
        put_string(&t, name);
    }
    sf_text_put(&t, "], \"future\": [");  // the inputs also taken at every target step
    for (uint32_t k = 0; k < c->nfuture; k++) {
        input_label(in, c->future[k], name, sizeof name);
        if (k) sf_text_put(&t, ", ");
        put_string(&t, name);
    }
    sf_text_put(&t, "], \"series_inputs\": [");  // --series-features onehot: the model's series, by name
    for (uint32_t s = 0; s < c->nonehot; s++) {
        if (s) sf_text_put(&t, ", ");
        put_string(&t, in->ck.onehot[s].name);
    }
    sf_text_put(&t, "], \"targets\": [");
    for (uint32_t j = 0; j < c->ntargets; j++) {
        if (j) sf_text_put(&t, ", ");
        put_string(&t, info->col_names[c->targets[j]]);
    }
    static const char *const kinds[] = {"none", "iso-8601", "epoch-s", "epoch-ms", "epoch-us", "epoch-ns"};
    sf_text_put(&t, "], \"target_change\": %s, \"time_kind\": \"%s\", \"has_lines\": %s, \"unseen\": %u, "
                "\"unseen_column\": ", c->change_from ? "true" : "false", kinds[info->time_kind],
                info->has_lines ? "true" : "false", c->nunseen);
    if (c->nunseen) put_string(&t, info->col_names[c->unseen_column]);
    else sf_text_put(&t, "null");
    sf_text_put(&t, ", \"sources\": [");
    for (uint32_t s = 0; s < info->nsources; s++) {
        if (s) sf_text_put(&t, ", ");
        put_string(&t, info->sources[s]);
    }
    sf_text_put(&t, "], \"quantiles\": [");
    const sf_loss *l = &in->model.loss;
    for (uint32_t q = 0; l->kind == SF_LOSS_QUANTILE && q < l->nq; q++) sf_text_put(&t, "%s%.17g", q ? ", " : "", l->q[q]);
    sf_text_put(&t, "]}");
    return t.s;
}

typedef struct {
    const sf_api_inputs *in;
    const sf_api_inputs_out *o;
    uint64_t n, series;  // windows written; the series of the last
    sf_pack_dctx *dctx;
    void *stored;
    int64_t *time, *line;  // the decoded chunk's, aux_chunk
    uint64_t aux_chunk;
} inputs_job;

// The times and lines of the chunk that holds row into j (rows come in
// order, so each chunk about once), *k its place there.
static int inputs_aux(inputs_job *j, uint64_t row, size_t *k, sf_err *e) {
    const sf_pack *p = j->in->d.pack;
    const sf_pack_info *in = sf_pack_get_info(p);
    uint64_t c = row / in->chunk_rows;
    *k = (size_t)(row - c * in->chunk_rows);
    if (c == j->aux_chunk) return 0;
    int rc = sf_pack_chunk_read(p, c, j->stored, e);
    if (!rc) rc = sf_pack_chunk_decode_all(j->dctx, p, c, j->stored, NULL, j->time, j->line, e);
    j->aux_chunk = rc ? UINT64_MAX : c;
    return rc;
}

static int take_inputs(void *arg, const float *x, const float *y, const uint64_t *ids, uint32_t count, sf_err *e) {
    inputs_job *j = arg;
    (void)y;
    const sf_api_inputs_out *o = j->o;
    const sf_predict_data *d = &j->in->d;
    const sf_columns *c = &d->cols;
    const sf_pack_info *in = sf_pack_get_info(d->pack);
    uint32_t T = j->in->ck.window.length;
    size_t xl = (size_t)T * c->nfeatures, X = sf_window_x_len(&j->in->ck.window, c), sl = c->nonehot;
    size_t fl = X - xl - sl, steps = sf_window_steps(&j->in->ck.window);
    for (uint32_t i = 0; i < count; i++, j->n++) {
        // The window's rows into x, the future features at its target rows into future, its series into onehot.
        memcpy(o->x + j->n * xl, x + i * X, xl * sizeof *x);
        if (fl) memcpy(o->future + j->n * fl, x + i * X + xl, fl * sizeof *x);
        if (sl) memcpy(o->onehot + j->n * sl, x + i * X + xl + fl, sl * sizeof *x);
        const float *last = x + i * X + (size_t)(T - 1) * c->nfeatures;  // what a change is from
        for (uint32_t t = 0; t < c->ntargets; t++)
            o->base[j->n * c->ntargets + t] = c->change_from ? last[c->change_from[t]] : 0;
        // Each step's own row (--horizon A-B), as predict writes one line per window and step.
        uint64_t first = sf_predict_target_row(d->plan, ids[i]) - (steps - 1);
        while (j->series + 1 < in->nseries && in->series[j->series + 1].first_row <= first) j->series++;
        o->series[j->n] = j->series;
        for (uint32_t s = 0; s < steps; s++) {
            uint64_t row = first + s, at = j->n * steps + s;
            o->row[at] = row;
            if (!j->time && !j->line) continue;
            size_t k = 0;
            int rc = inputs_aux(j, row, &k, e);
            if (rc) return rc;
            if (o->time && j->time) o->time[at] = j->time[k];
            uint32_t src = 0;
            uint64_t line = 0;
            if (j->line) sf_origin_split(in, j->line[k], &src, &line);
            if (j->line && in->nsources && src >= in->nsources)  // chunks are checked by verify, not by every decode
                return sf_err_set(e, SF_ECORRUPT, "%s: row %" PRIu64 "'s origin names source %u of %u (seqfeed verify "
                                  "checks the whole file)", sf_pack_name(d->pack), row, src, in->nsources);
            if (o->line && j->line) o->line[at] = (int64_t)line;
            if (o->source && j->line && in->nsources) o->source[at] = src;
        }
    }
    return 0;
}

int sf_api_inputs_read(sf_api_inputs *in, const sf_api_inputs_out *o, sf_err *e) {
    LOCAL_ERR(e);
    if (!in || !o) return sf_err_set(e, SF_EINVAL, "sf_api_inputs_read: %s is NULL", in ? "the output" : "the inputs");
    uint64_t windows = sf_plan_windows(in->d.plan);
    bool future = in->d.cols.nfuture > 0, onehot = in->d.cols.nonehot > 0;
    bool null = !o->x || !o->base || !o->series || !o->row || (future && !o->future) || (onehot && !o->onehot);
    if (null || o->windows < windows)
        return sf_err_set(e, SF_EINVAL, "sf_api_inputs_read: x, base, series and row%s%s must hold %" PRIu64 " windows "
                          "(given %" PRIu64 "%s)", future ? ", and future," : "", onehot ? ", and onehot," : "", windows,
                          o->windows, null ? ", and a NULL" : "");
    const sf_pack_info *info = sf_pack_get_info(in->d.pack);
    bool times = o->time && info->time_kind != SF_TIME_NONE, lines = (o->line || o->source) && info->has_lines;
    size_t rows = info->chunk_rows < info->nrows ? info->chunk_rows : (size_t)info->nrows;
    inputs_job j = {.in = in, .o = o, .aux_chunk = UINT64_MAX};
    int rc = 0;
    if (times || lines) {
        j.dctx = sf_pack_dctx_create();
        j.stored = malloc(sf_pack_max_stored_size(in->d.pack) + 1);
        j.time = times ? malloc(rows * sizeof *j.time + 1) : NULL;
        j.line = lines ? malloc(rows * sizeof *j.line + 1) : NULL;
        if (!j.dctx || !j.stored || (times && !j.time) || (lines && !j.line))
            rc = sf_err_set(e, SF_ENOMEM, "out of memory");
    }
    if (!rc) rc = sf_windows_in_order(in->d.pack, in->d.plan, &in->d.cols, 256, take_inputs, &j, e);
    sf_pack_dctx_free(j.dctx);
    free(j.stored), free(j.time), free(j.line);
    return rc;
}

// ---- modules: which file a module was loaded from ----

struct module_find {
    const char *file;
    char *path;
    size_t n;
    bool found;
};

static int module_found(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    struct module_find *f = arg;
    const char *slash = strrchr(info->dlpi_name, '/');
    if (!slash || strcmp(slash + 1, f->file) != 0) return 0;
    f->found = snprintf(f->path, f->n, "%s", info->dlpi_name) < (int)f->n;
    return 1;
}

int sf_api_module_path(const char *name, char *path, size_t n, sf_err *e) {
    if (!name || !path || !n) return sf_err_set(e, SF_EINVAL, "sf_api_module_path: NULL name or path, or n = 0");
    sf_err why = {0};
    char what[512] = "";
    struct module_find f = {.path = path, .n = n};
    if (strcmp(name, "keras") == 0) {
        f.file = "seqfeed-keras.so";
        sf_keras_available(&why);
    } else if (strcmp(name, "onednn") == 0) {
        f.file = "seqfeed-onednn.so";
        sf_matmul_available(what, sizeof what);  // loads it: false also where the CPU lacks bf16
    } else if (strcmp(name, "gpu") == 0) {
        f.file = "seqfeed-gpu.so";
        sf_backend_gpu(&why);
    } else {
        return sf_err_set(e, SF_EINVAL, "unknown module '%s' (expected keras, onednn or gpu)", name);
    }
    dl_iterate_phdr(module_found, &f);
    if (f.found) return 0;
    if (why.msg[0]) return sf_err_set(e, why.code, "%s", why.msg);
    if (strncmp(what, "none: ", 6) == 0) return sf_err_set(e, SF_EUSAGE, "%s", what + 6);  // the loader's reason
    return sf_err_set(e, SF_EUSAGE, "%s is not loaded", f.file);
}

// ---- the validation part, and the training part's scaling ----

struct sf_valset {
    sf_run_data data;
    sf_plan *plan;
    sf_block_loader *loader;
    sf_block_data rows;  // the block last loaded
    uint64_t block;      // which (UINT64_MAX: none)
    sf_dataset_info info;
    uint64_t windows;
    pthread_mutex_t lock;  // one read at a time: the loader and rows are shared
};

// o's fields as sf_fit_opts, as sf_dataset_open reads them.
static int valset_fit_opts(const sf_dataset_opts *o, sf_fit_opts *f, sf_err *e) {
    *f = (sf_fit_opts){.norm = SF_NORM_ZSCORE, .pipe = sf_pipe_opts_default()};
    f->data = o->data, f->features = o->features, f->targets = o->targets, f->time_features = o->time_features;
    f->future_features = o->future_features, f->series_features = o->series_features;
    if (o->norm && !sf_norm_parse(o->norm, &f->norm))
        return sf_err_set(e, SF_EUSAGE, "norm '%s' (--norm): expected one of zscore, minmax, none", o->norm);
    if (o->norm_scope && strcmp(o->norm_scope, "global") && strcmp(o->norm_scope, "series"))
        return sf_err_set(e, SF_EUSAGE, "norm_scope '%s' (--norm-scope): expected global or series", o->norm_scope);
    f->norm_series = o->norm_scope && !strcmp(o->norm_scope, "series");
    f->target_change = o->target_change;
    f->pipe.window = window_spec(o);
    f->batch = o->batch, f->seed = o->seed, f->epochs = o->epochs, f->val_split = o->val_split;
    f->max_gap = o->max_gap;
    return 0;
}

int sf_valset_open(sf_valset **out, const sf_dataset_opts *o, sf_err *e) {
    LOCAL_ERR(e);
    if (!out || !o) {
        if (out) *out = NULL;
        return sf_err_set(e, SF_EINVAL, "sf_valset_open: %s is NULL", out ? "the options" : "the handle's place");
    }
    *out = NULL;
    sf_fit_opts f;
    int rc = check_opts(o, e);
    if (!rc) rc = valset_fit_opts(o, &f, e);
    if (!rc && o->val_split == 0)
        rc = sf_err_set(e, SF_EUSAGE, "val_split 0 (--val-split) leaves no validation part (hint: a val_split above "
                        "0, such as train's default 0.1)");
    if (rc) return rc;
    sf_valset *v = calloc(1, sizeof *v);
    if (!v) return sf_err_set(e, SF_ENOMEM, "out of memory");
    if (pthread_mutex_init(&v->lock, NULL)) {
        free(v);
        return sf_err_set(e, SF_ENOMEM, "out of memory for a mutex");
    }
    v->block = UINT64_MAX;
    rc = sf_run_data_open(&v->data, &f, e);
    if (!rc) {
        // The fit's validation plan (train/fit.c, open_data): blocks of one chunk, windows in id order.
        const sf_pack_info *in = sf_pack_get_info(v->data.pack);
        uint64_t nseries;
        const sf_series *series = sf_run_data_series(&v->data, &nseries);
        rc = sf_plan_create(&v->plan, in->nrows, in->chunk_rows, series, nseries, &f.pipe.window, 1,
                            &(sf_split){.fraction = o->val_split, .part = SF_PART_VALIDATION}, e);
    }
    if (!rc && !(v->windows = sf_plan_windows(v->plan)))
        rc = sf_err_set(e, SF_EUSAGE, "%s: no validation window: the validation part of every %s (its last %g of "
                        "rows, rounded down) holds no window's target (hint: a larger val_split (--val-split)%s)",
                        o->data, v->data.segments ? "segment" : "series", o->val_split,
                        o->max_gap > 0 ? ", or a larger max_gap (--max-gap)" : "");
    if (!rc && !(v->loader = sf_block_loader_create(v->data.pack, &v->data.cols)))
        rc = sf_err_set(e, SF_ENOMEM, "out of memory");
    if (rc) {
        sf_valset_close(v);
        return rc;
    }
    v->info = (sf_dataset_info){.window = o->window, .nfeatures = v->data.cols.nfeatures,
                                .ntargets = v->data.cols.ntargets, .batch = o->batch, .epochs = 1,
                                .steps = sf_window_steps(&f.pipe.window), .nfuture = v->data.cols.nfuture,
                                .nonehot = v->data.cols.nonehot};
    v->info.batches_per_epoch = v->windows / o->batch + (v->windows % o->batch != 0);
    *out = v;
    return 0;
}

int sf_valset_shape(const sf_valset *v, uint64_t *windows, sf_dataset_info *shape) {
    if (!v) return SF_EINVAL;
    if (windows) *windows = v->windows;
    if (shape) *shape = v->info;
    return 0;
}

int sf_valset_read(sf_valset *v, uint64_t first, uint32_t count, float *x, size_t x_len, float *y, size_t y_len,
                   uint64_t *rows, sf_err *e) {
    LOCAL_ERR(e);
    if (!v) return sf_err_set(e, SF_EINVAL, "sf_valset_read: the validation set is NULL (closed?)");
    if (first > v->windows || count > v->windows - first)
        return sf_err_set(e, SF_EINVAL, "sf_valset_read: windows %" PRIu64 " to %" PRIu64 " asked for, of %" PRIu64,
                          first, first + count, v->windows);
    const sf_columns *cols = &v->data.cols;
    size_t xl = sf_window_x_len(sf_plan_spec(v->plan), cols), yl = (size_t)v->info.steps * cols->ntargets;
    // count is below the windows, which the plan's rows bound: no overflow.
    if (!x || !y || x_len < count * xl || y_len < count * yl)
        return sf_err_set(e, SF_EINVAL, "sf_valset_read: %u windows are %zu floats of x and %zu of y; given %s%zu and "
                          "%s%zu", count, count * xl, count * yl, x ? "" : "NULL, ", x_len, y ? "" : "NULL, ", y_len);
    const sf_pack_info *in = sf_pack_get_info(v->data.pack);
    const sf_window_spec *w = sf_plan_spec(v->plan);
    int rc = 0;
    pthread_mutex_lock(&v->lock);
    for (uint32_t k = 0; !rc && k < count; k++) {
        uint64_t id = first + k, start = sf_plan_window_start(v->plan, id);
        uint64_t b = start / in->chunk_rows;  // blocks of one chunk: the block the window starts in holds its rows
        if (b != v->block) {
            sf_block_task t = sf_plan_block(v->plan, b);
            v->block = UINT64_MAX;
            if ((rc = sf_block_load(v->loader, &t, &v->rows, e))) break;
            v->block = b;
        }
        sf_window_cut(v->plan, cols, &v->rows, id, x + k * xl, y + k * yl);
        if (rows) rows[k] = start + (uint64_t)(w->length - 1) * w->sampling_rate + w->horizon;
    }
    pthread_mutex_unlock(&v->lock);
    return rc;
}

void sf_valset_close(sf_valset *v) {
    if (!v) return;
    sf_block_data_free(&v->rows);
    sf_block_loader_free(v->loader);
    sf_plan_free(v->plan);
    sf_run_data_close(&v->data);
    pthread_mutex_destroy(&v->lock);
    free(v);
}

static void put_scale(sf_text *t, float scale, float offset) {
    sf_text_put(t, ", \"scale\": ");
    put_real(t, scale);
    sf_text_put(t, ", \"offset\": ");
    put_real(t, offset);
}

// A run's columns and scaling as JSON (seqfeed.h: sf_dataset_describe).
static char *describe_run(const sf_run_data *d) {
    const sf_pack_info *in = sf_pack_get_info(d->pack);
    const sf_columns *c = &d->cols;
    sf_text t = {0};
    sf_text_put(&t, "{\"stats_rows\": %" PRIu64 ", \"columns\": {", d->stats_rows);
    bool any = false;
    for (uint32_t col = 0; col < in->ncols; col++) {
        bool used = false;
        for (uint32_t k = 0; k < c->nfeatures && !used; k++) used = c->features[k] == col && c->codes[k] == SF_CODE_NONE;
        for (uint32_t j = 0; j < c->ntargets && !used; j++) used = c->targets[j] == col;
        if (!used) continue;
        sf_text_put(&t, "%s", any ? ", " : "");
        put_string(&t, in->col_names[col]);
        const sf_col_stats *st = &d->stats[col];
        const char *key[4] = {"min", "max", "mean", "std"};
        const double val[4] = {st->min, st->max, st->mean, st->std};
        for (int k = 0; k < 4; k++) {
            sf_text_put(&t, "%s\"%s\": ", k ? ", " : ": {", key[k]);
            put_real(&t, val[k]);
        }
        sf_text_put(&t, "}");
        any = true;
    }
    sf_text_put(&t, "}, \"inputs\": [");
    uint32_t time = 0;  // time features come after the columns, sin then cos of each
    for (uint32_t k = 0; k < c->nfeatures; k++) {
        sf_text_put(&t, "%s{\"name\": ", k ? ", " : "");
        if (c->features[k] == SF_COLUMN_TIME) {
            const char *f = sf_time_feature_name(c->time[time / 2]);
            sf_text_put(&t, "\"%s_%s\", \"column\": null, \"time\": \"%s\"", f, time % 2 ? "cos" : "sin", f);
            time++;
        } else {
            const char *name = in->col_names[c->features[k]];
            const sf_category *cat = c->codes[k] >= 0 ? sf_pack_category(in, c->features[k]) : NULL;
            const char *value = cat && (uint32_t)c->codes[k] < cat->nvalues ? cat->values[c->codes[k]] : NULL;
            sf_text ext = {0};
            sf_text_put(&ext, "%s%s%s", name, value ? "=" : "", value ? value : "");
            put_string(&t, ext.s ? ext.s : name);
            free(ext.s);
            sf_text_put(&t, ", \"column\": ");
            put_string(&t, name);
            if (value) {
                sf_text_put(&t, ", \"value\": ");
                put_string(&t, value);
            }
        }
        put_scale(&t, c->feature_scale[k], c->feature_offset[k]);
        sf_text_put(&t, "}");
    }
    sf_text_put(&t, "], \"targets\": [");
    for (uint32_t j = 0; j < c->ntargets; j++) {
        sf_text_put(&t, "%s{\"name\": ", j ? ", " : "");
        put_string(&t, in->col_names[c->targets[j]]);
        put_scale(&t, c->target_scale[j], c->target_offset[j]);
        sf_text_put(&t, ", \"mean\": ");
        put_real(&t, c->target_mean ? c->target_mean[j] : NAN);
        if (c->change_from) sf_text_put(&t, ", \"change_from\": %d}", c->change_from[j]);
        else sf_text_put(&t, ", \"change_from\": null}");
    }
    sf_text_put(&t, "]}");
    return t.s;
}

char *sf_dataset_describe(const sf_dataset *d) { return d ? describe_run(&d->data) : NULL; }
char *sf_valset_describe(const sf_valset *v) { return v ? describe_run(&v->data) : NULL; }
