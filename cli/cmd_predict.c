// seqfeed predict and seqfeed evaluate: a checkpoint on a file's windows, in
// window order. The checkpoint carries the model, the columns, the window
// and the training data's scaling, so nothing else is needed.
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define PREDICT_PRECISION "the matrix products: fp32, tf32 (GPUs), or bf16 operands with fp32 sums (docs/TRAINING.md)"
#define CHECKPOINT_HELP "a checkpoint written by seqfeed train, or its run's directory: best.safetensors there, " \
                        "else latest.safetensors (required)"
#define PREDICT_GPUS "the GPU to run on: the first of the list (the CPU when there is none)"

static const cli_use predict_uses[] = {
    {.opt = OPT_CHECKPOINT, .help = CHECKPOINT_HELP},
    {.opt = OPT_DATA, .help = "the .sfpack file (required)"},
    {.opt = OPT_OUTPUT, .def = "stdout", .help = "the CSV; a file appears only when complete"},
    {.opt = OPT_SPLIT, .def = "all"}, {.opt = OPT_BATCH_SIZE, .def = "256", .help = "windows per forward pass"},
    {.opt = OPT_WITH_ACTUAL}, {.opt = OPT_GPUS, .def = "all", .help = PREDICT_GPUS},
    {.opt = OPT_PRECISION, .def = "fp32", .help = PREDICT_PRECISION}, {.opt = OPT_QUIET}, {.opt = OPT_HELP},
    {.opt = OPT_COUNT}};

static const cli_command predict_command = {
    .name = "predict",
    .usage = "--checkpoint FILE.safetensors --data FILE.sfpack [-o OUT.csv]",
    .about =
        "Predicts the targets of every window of the file, in order, with the\n"
        "checkpoint's model, columns, window and scaling (that of its training\n"
        "data). One CSV row per window, for the row it predicts: its series, its\n"
        "time (when the file has a time column: ISO-8601 with a T, an offset as the\n"
        "same instant in UTC with Z; integers as they were), its line in the CSV\n"
        "the file was packed from (else its row in the file), and each target as\n"
        "NAME_pred in the data's units (with --with-actual, NAME beside it: empty\n"
        "where pack filled it in (--missing ffill), as the CSV had it), so that the\n"
        "forecasts join back to the CSV on the line, or on the time parsed.\n",
    .uses = predict_uses,
};

static const cli_use evaluate_uses[] = {
    {.opt = OPT_CHECKPOINT, .help = CHECKPOINT_HELP},
    {.opt = OPT_DATA, .help = "the .sfpack file (required)"},
    {.opt = OPT_SPLIT, .def = "validation when the checkpoint was trained with a validation split, else all"},
    {.opt = OPT_BATCH_SIZE, .def = "256", .help = "windows per forward pass"}, {.opt = OPT_JSON},
    {.opt = OPT_GPUS, .def = "all", .help = PREDICT_GPUS}, {.opt = OPT_PRECISION, .def = "fp32", .help = PREDICT_PRECISION},
    {.opt = OPT_QUIET}, {.opt = OPT_HELP}, {.opt = OPT_COUNT}};

static const cli_command evaluate_command = {
    .name = "evaluate",
    .usage = "--checkpoint FILE.safetensors --data FILE.sfpack [options]",
    .about =
        "The checkpoint's loss (MSE on scaled values, as in training) on the\n"
        "file's windows, next to two baselines on the same windows: predicting the\n"
        "column means, and predicting the last observed value (persistence, for\n"
        "targets that are also features); then each target's MSE in data units.\n"
        "Target values pack imputed (--missing ffill) are not scored.\n",
    .uses = evaluate_uses,
};

typedef struct {
    sf_checkpoint ck;
    sf_model model;
    sf_pack *pack;
    sf_columns cols;
    sf_plan *plan;
    const sf_backend *be;  // the replica's: the CPU's or the GPU's
    sf_replica *rep;
    float *pred;
    int *persist;  // per target: its feature index, or -1
    // predict
    FILE *out;
    uint64_t series;  // the series of the last window written
    bool actual;
    // the time, line and (--with-actual) values of the rows of one chunk, the
    // one the last predicted row lies in: values column-major, aux_rows a column
    int64_t *time, *line;
    float *vals;
    uint64_t aux_chunk;
    uint32_t aux_rows;
    sf_pack_dctx *dctx;
    void *stored;
    // evaluate
    double loss, mean_loss, persist_loss, *unit_mse;
    uint64_t n, *unit_n;  // windows; per target, the values scored
    uint64_t values, imputed;  // target values scored, and left out as imputed (both: predict's actuals)
} run;

static void run_close(run *r) {
    if (r->rep) r->be->close(r->rep);
    sf_plan_free(r->plan);
    sf_columns_free(&r->cols);
    sf_pack_close(r->pack);
    sf_checkpoint_free(&r->ck);
    free(r->pred), free(r->persist), free(r->unit_mse), free(r->unit_n);
    free(r->time), free(r->line), free(r->vals), free(r->stored);
    sf_pack_dctx_free(r->dctx);
}

// Row's time, CSV line and values into r->time / r->line / r->vals at *k:
// the chunk holding it decoded (rows come in order, so each chunk about
// once).
static int row_aux(run *r, uint64_t row, size_t *k, sf_err *e) {
    const sf_pack_info *in = sf_pack_get_info(r->pack);
    uint64_t c = row / in->chunk_rows;
    *k = (size_t)(row - c * in->chunk_rows);
    if (c == r->aux_chunk) return 0;
    if (!r->dctx) {
        size_t rows = in->chunk_rows < in->nrows ? in->chunk_rows : (size_t)in->nrows;
        r->dctx = sf_pack_dctx_create();
        r->stored = malloc(sf_pack_max_stored_size(r->pack));
        if (in->time_kind != SF_TIME_NONE) r->time = malloc(rows * 8);
        if (in->has_lines) r->line = malloc(rows * 8);
        if (r->actual) r->vals = malloc(rows * in->ncols * sizeof(float));
        if (!r->dctx || !r->stored || (in->time_kind != SF_TIME_NONE && !r->time) || (in->has_lines && !r->line) ||
            (r->actual && !r->vals))
            return sf_err_set(e, SF_ENOMEM, "out of memory");
    }
    int rc = sf_pack_chunk_read(r->pack, c, r->stored, e);
    if (!rc) rc = sf_pack_chunk_decode_all(r->dctx, r->pack, c, r->stored, r->vals, r->time, r->line, e);
    r->aux_chunk = rc ? UINT64_MAX : c;
    r->aux_rows = sf_pack_chunk_locate(r->pack, c).rows;
    return rc;
}

// Where predictions run: the backend, its device, the precision.
typedef struct {
    const sf_backend *be;
    int device;
    enum sf_precision precision;
} placement;

// No window of the checkpoint's fits in split's part of the file (cut at
// the checkpoint's --max-gap when cut is set): an empty answer would say
// nothing, so the error names why.
static int no_window(const run *r, const sf_pack_info *in, const char *data, const sf_series *cut, uint64_t ncut,
                     const sf_split *split, sf_err *e) {
    const sf_window_spec *w = &r->ck.window;
    const sf_series *series = cut ? cut : in->series;
    uint64_t nseries = cut ? ncut : in->nseries;
    const char *part = split->part == SF_PART_VALIDATION ? "validation"
                       : split->part == SF_PART_TRAIN    ? "train"
                                                         : "whole";
    if (split->part != SF_PART_ALL && sf_plan_count(series, nseries, w, &(sf_split){0, SF_PART_ALL}) > 0)
        return sf_err_set(e, SF_EINVAL, "%s: no window fits in the %s part (the last %g%% of each series' rows, the "
                          "longest %llu rows; the checkpoint's windows span %llu) (hint: --split all)", data, part,
                          r->ck.val_split * 100, (unsigned long long)sf_split_longest(series, nseries, split),
                          (unsigned long long)sf_window_span(w));
    uint64_t uncut = cut ? sf_plan_count(in->series, in->nseries, w, split) : 0;
    if (uncut > 0) {
        char gap[32], step[32] = "none";
        sf_duration_text(r->ck.max_gap, gap, sizeof gap);
        if (in->time_step > 0) sf_duration_text((double)in->time_step * sf_pack_time_unit(in), step, sizeof step);
        return sf_err_set(e, SF_EINVAL, "%s: no window fits: the checkpoint's --max-gap %s removed all %llu windows "
                          "of the %s part, those that span a longer step between rows (the file's typical step is "
                          "%s; hint: data whose steps are at most %s, or a model trained with a larger --max-gap)",
                          data, gap, (unsigned long long)uncut, part, step, gap);
    }
    return sf_err_set(e, SF_EINVAL, "%s: no window fits in the %s part: the checkpoint's windows span %llu rows "
                      "(window %u, sampling rate %u, horizon %u), more than the %llu rows of its longest series",
                      data, part, (unsigned long long)sf_window_span(w), w->length, w->sampling_rate, w->horizon,
                      (unsigned long long)sf_split_longest(in->series, in->nseries, split));
}

// *batch comes back no larger than the windows to predict: a replica is
// sized by it.
static int run_open(run *r, const char *ckpt, const char *data, enum sf_part part, uint32_t *batch,
                    const placement *where, sf_err *e) {
    int rc = sf_checkpoint_read(ckpt, &r->ck, &r->model, e);
    if (!rc) rc = sf_pack_open(&r->pack, data, e);
    const sf_pack_info *in = rc ? NULL : sf_pack_get_info(r->pack);
    if (!rc) rc = sf_columns_create(&r->cols, in, r->ck.features, r->ck.targets, r->ck.categories, r->ck.norm, e);
    if (!rc) rc = sf_columns_add_time(&r->cols, in, r->ck.time_features, e);  // recomputed, as in training
    if (!rc && r->ck.target_change) rc = sf_columns_predict_change(&r->cols, in, e);
    r->cols.imputed_nan = true;  // a target pack imputed is never shown or scored as observed
    if (!rc) {
        // The training data's scaling, not this file's.
        memcpy(r->cols.feature_scale, r->ck.feature_scale, r->cols.nfeatures * sizeof(float));
        memcpy(r->cols.feature_offset, r->ck.feature_offset, r->cols.nfeatures * sizeof(float));
        memcpy(r->cols.target_scale, r->ck.target_scale, r->cols.ntargets * sizeof(float));
        memcpy(r->cols.target_offset, r->ck.target_offset, r->cols.ntargets * sizeof(float));
        sf_split split = {r->ck.val_split, part};
        // The series cut at the checkpoint's --max-gap, as training cut them.
        sf_series *cut = NULL;
        uint64_t ncut = 0;
        if (r->ck.max_gap > 0 && in->time_kind == SF_TIME_NONE)
            rc = sf_err_set(e, SF_EUSAGE, "%s: the checkpoint was trained on windows kept off steps longer than %g s, "
                            "and this file has no time column to find them", data, r->ck.max_gap);
        else if (r->ck.max_gap > 0)
            rc = sf_pack_segments(r->pack, sf_pack_time_count(in, r->ck.max_gap), &cut, &ncut, e);
        if (!rc)
            rc = sf_plan_create(&r->plan, in->nrows, in->chunk_rows, cut ? cut : in->series, cut ? ncut : in->nseries,
                                &r->ck.window, 1, &split, e);
        if (!rc && sf_plan_windows(r->plan) == 0) rc = no_window(r, in, data, cut, ncut, &split, e);
        free(cut);
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    sf_cpu_threads(1);  // parallel over the batch's rows instead
    sf_replica_opts ro = {.device = where->device, .threads = cores > 0 ? (uint32_t)cores : 1,
                          .precision = where->precision};
    r->be = where->be;
    if (!rc) {  // checked before the replica allocates it
        uint64_t windows = sf_plan_windows(r->plan);
        if (windows && *batch > windows) *batch = (uint32_t)windows;
        uint64_t need = r->be->host_memory(&r->model, *batch, r->ck.window.length, ro.threads);
        uint64_t have = sf_machine_memory();
        if (have && need > have)
            rc = sf_err_set(e, SF_EUSAGE, "--batch-size %u: the checkpoint's model on windows of %u rows would take "
                            "%.1f GB, more than the %.1f GB this machine has (hint: a smaller --batch-size)", *batch,
                            r->ck.window.length, need / 1e9, have / 1e9);
    }
    if (!rc) rc = r->be->open(&r->rep, &r->model, *batch, r->ck.window.length, &ro, e);
    if (!rc) rc = r->be->load(r->rep, r->ck.w, NULL, NULL, e);
    if (!rc) {
        r->pred = malloc((size_t)*batch * r->model.outputs * sizeof(float));
        r->persist = malloc(r->cols.ntargets * sizeof *r->persist);
        r->unit_mse = calloc(r->cols.ntargets, sizeof *r->unit_mse);
        r->unit_n = calloc(r->cols.ntargets, sizeof *r->unit_n);
        if (!r->pred || !r->persist || !r->unit_mse || !r->unit_n) rc = sf_err_set(e, SF_ENOMEM, "out of memory");
    }
    if (!rc && r->cols.nunseen)
        fprintf(stderr, "note: %s: %u value(s) of categorical column \"%s\"%s are not in the training data: "
                "their rows get 0 for every input of the column\n", data, r->cols.nunseen,
                in->col_names[r->cols.unseen_column], r->cols.nunseen > 1 ? " (or others)" : "");
    for (uint32_t j = 0; !rc && j < r->cols.ntargets; j++) {
        r->persist[j] = -1;
        for (uint32_t f = 0; f < r->cols.nfeatures; f++)
            if (r->cols.features[f] == r->cols.targets[j]) r->persist[j] = (int)f;
    }
    return rc;
}

// Whether target j of window i is one pack imputed (NaN under imputed_nan);
// a NaN in a column without imputed values is an overflow, and is scored.
static bool imputed_target(const run *r, const float *y, uint32_t i, uint32_t j) {
    return sf_columns_target_imputed(&r->cols, sf_pack_get_info(r->pack), y[(size_t)i * r->cols.ntargets + j], j);
}

// Window i's scaled value of target j at its last row when the model
// predicts changes from it (0 when it predicts values): what turns a
// predicted or true change back into a value.
static float last_value(const run *r, const float *x, uint32_t i, uint32_t j) {
    if (!r->cols.change_from) return 0;
    size_t T = r->ck.window.length, nf = r->cols.nfeatures;
    return x[((size_t)i * T + T - 1) * nf + (size_t)r->cols.change_from[j]];
}

static int predict_batch(void *arg, const float *x, const float *y, const uint64_t *ids, uint32_t count, sf_err *e) {
    run *r = arg;
    // --with-actual writes the file's values, not their scaled copies; y says which pack imputed (NaN)
    int rc = r->be->predict(r->rep, r->pred, x, count, e);
    const sf_pack_info *in = sf_pack_get_info(r->pack);
    const sf_window_spec *w = &r->ck.window;
    uint32_t nt = r->cols.ntargets;
    for (uint32_t i = 0; !rc && i < count; i++) {
        uint64_t row = sf_plan_window_start(r->plan, ids[i]) + (uint64_t)(w->length - 1) * w->sampling_rate + w->horizon;
        while (r->series + 1 < in->nseries && in->series[r->series + 1].first_row <= row) r->series++;
        size_t k = 0;
        if ((in->time_kind != SF_TIME_NONE || in->has_lines || r->actual) && (rc = row_aux(r, row, &k, e))) break;
        cli_csv_field(r->out, in->series[r->series].name);
        if (r->time) {
            char t[48];
            sf_pack_time_text(in, r->time[k], t, sizeof t);
            fprintf(r->out, ",%s", t);
        }
        fprintf(r->out, ",%llu", (unsigned long long)(r->line ? (uint64_t)r->line[k] : row));
        for (uint32_t j = 0; j < nt; j++) {
            char num[32];
            float v = (r->pred[(size_t)i * nt + j] + last_value(r, x, i, j) - r->cols.target_offset[j]) /
                      r->cols.target_scale[j];
            sf_format_float(num, v);
            fprintf(r->out, ",%s", num);
            if (r->actual && imputed_target(r, y, i, j)) {  // the CSV had no value
                fputc(',', r->out);
                r->imputed++;
            } else if (r->actual) {  // the file's value itself: the CSV's, to float32's rounding
                sf_format_float(num, r->vals[(size_t)r->cols.targets[j] * r->aux_rows + k]);
                fprintf(r->out, ",%s", num);
                r->values++;
            }
        }
        fputc('\n', r->out);
    }
    if (!rc && ferror(r->out)) rc = sf_err_errno(e, SF_EIO, errno, "write failed");
    return rc;
}

// One line on the model against the baselines: true when it beats
// persistence. What to try when it does not names train's own options.
// A baseline of loss 0 is exact: a ratio to it would be infinite or 0/0,
// so the verdict says so instead.
static bool verdict_text(const run *r, char *buf, size_t cap) {
    double loss = r->loss, mean = r->mean_loss, last = r->persist_loss;
    if (isnan(last)) {
        if (mean != 0)
            snprintf(buf, cap, "%s the mean baseline by %.1f%%; no persistence baseline (a target is not a feature)",
                     loss < mean ? "better than" : "worse than", 100 * fabs(1 - loss / mean));
        else
            snprintf(buf, cap, "the mean baseline is exact (loss 0: the targets are constant)%s; no persistence "
                     "baseline (a target is not a feature)", loss > 0 ? " and the model is not" : ", as is the model");
        return false;
    }
    if (loss < last) {
        snprintf(buf, cap, "better than persistence: loss %.1f%% below predicting the last value", 100 * (1 - loss / last));
        return true;
    }
    if (last == 0) {  // constant targets, or an older horizon-0 checkpoint's: the window's last row
        snprintf(buf, cap, "predicting the last value is exact on these windows (loss 0)%s%s",
                 loss > 0 ? ", and the model is not" : ", as is the model",
                 r->ck.window.horizon == 0 ? ": the checkpoint's horizon is 0, so its target is the window's last "
                                             "input row (hint: retrain with seqfeed train --horizon 1 or more)"
                                           : ": the targets are the last row's values");
        return false;
    }
    snprintf(buf, cap, "worse than persistence: loss %.2fx that of predicting the last value (hint: %s)", loss / last,
             r->ck.target_change ? "more epochs, a longer --window, --time-features, or other --features"
                                 : "train with --target change, so that the model learns the change from the "
                                   "last value: one that learns nothing is persistence");
    return false;
}

static int evaluate_batch(void *arg, const float *x, const float *y, const uint64_t *ids, uint32_t count, sf_err *e) {
    run *r = arg;
    (void)ids;
    int rc = r->be->predict(r->rep, r->pred, x, count, e);
    uint32_t nt = r->cols.ntargets, nf = r->cols.nfeatures, T = r->ck.window.length;
    const sf_pack_info *in = sf_pack_get_info(r->pack);
    // Sums over the target values pack observed (an imputed one is NaN in y),
    // divided by their count at the end: the training loss when none is imputed.
    for (uint32_t i = 0; !rc && i < count; i++) {
        double row = 0, mean_row = 0, persist_row = 0;
        for (uint32_t j = 0; j < nt; j++) {
            if (imputed_target(r, y, i, j)) {
                r->imputed++;
                continue;
            }
            double base = last_value(r, x, i, j);  // values, also from a model of changes
            double t = y[(size_t)i * nt + j] + base, p = r->pred[(size_t)i * nt + j] + base;
            // The column's mean in this file, scaled like the targets.
            // The training rows' mean, as the model could have learnt it (this file's, for older checkpoints).
            double mean = (r->ck.target_mean ? r->ck.target_mean[j] : in->stats[r->cols.targets[j]].mean) *
                              r->cols.target_scale[j] + r->cols.target_offset[j];
            double last = r->persist[j] >= 0 ? x[((size_t)i * T + T - 1) * nf + (size_t)r->persist[j]] : NAN;
            row += (p - t) * (p - t), mean_row += (mean - t) * (mean - t), persist_row += (last - t) * (last - t);
            double unit = (p - t) / r->cols.target_scale[j];
            r->unit_mse[j] += unit * unit, r->unit_n[j]++, r->values++;
        }
        r->loss += row, r->mean_loss += mean_row, r->persist_loss += persist_row;
    }
    r->n += count;
    return rc;
}

// The options predict and evaluate share: 0, -1 after --help, or EXIT_USAGE.
static int common_options(const cli_command *c, int argc, char **argv, cli_args *a, const char **ckpt,
                          const char **data, uint32_t *batch, placement *where) {
    static char in_dir[PATH_MAX];  // a run directory's checkpoint
    int rc = cli_parse(c, argc, argv, a);
    if (rc) return rc;
    if (!a->v[OPT_CHECKPOINT].set) return cli_usage_error(c->name, "missing --checkpoint FILE");
    if ((rc = cli_checkpoint_path(c->name, a->v[OPT_CHECKPOINT].text, a->v[OPT_QUIET].set, in_dir, sizeof in_dir,
                                  ckpt)))
        return rc;
    if (!(*data = cli_data(c, a, &rc))) return rc;
    *batch = a->v[OPT_BATCH_SIZE].set ? (uint32_t)a->v[OPT_BATCH_SIZE].u : 256;
    // One replica: on the first GPU chosen, else on CPU.
    int devices[64];
    const sf_backend *gpu = NULL;
    int ngpus = cli_choose_gpus(c->name, a->v[OPT_GPUS].set ? a->v[OPT_GPUS].text : "all", devices, 64,
                                a->v[OPT_QUIET].set || a->v[OPT_JSON].set, &gpu);
    if (ngpus < 0) return EXIT_USAGE;
    *where = (placement){.be = ngpus ? gpu : &sf_backend_cpu, .device = ngpus ? devices[0] : 0};
    // fp32 unless asked: predictions that do not depend on the device's default.
    return cli_choose_precision(c->name, a->v[OPT_PRECISION].set ? a->v[OPT_PRECISION].text : "fp32", devices,
                                ngpus ? 1 : 0, a->v[OPT_QUIET].set, &where->precision);
}

int cmd_predict(int argc, char **argv) {
    cli_args a;
    const char *ckpt = NULL, *data = NULL;
    uint32_t batch = 0;
    placement where;
    int rc = common_options(&predict_command, argc, argv, &a, &ckpt, &data, &batch, &where);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    const char *out = a.v[OPT_OUTPUT].set ? a.v[OPT_OUTPUT].text : NULL;
    enum sf_part part = a.v[OPT_SPLIT].set ? (enum sf_part)a.v[OPT_SPLIT].choice : SF_PART_ALL;
    run r = {0};
    sf_err e = {0};
    if ((rc = run_open(&r, ckpt, data, part, &batch, &where, &e))) {
        run_close(&r);
        return cli_fail("predict", &e, NULL);
    }
    sf_temp_file file = {0};
    r.out = stdout;
    if (out && strcmp(out, "-")) {
        if (sf_temp_fopen(&file, out, &e)) {
            run_close(&r);
            return cli_fail("predict", &e, NULL);
        }
        r.out = file.f;
        cli_guard_temp(file.tmp);
    }
    const sf_pack_info *in = sf_pack_get_info(r.pack);
    r.actual = a.v[OPT_WITH_ACTUAL].set;
    r.aux_chunk = UINT64_MAX;
    // Named as the data names them, so that a join on time or line needs no renaming.
    cli_csv_field(r.out, in->series_column[0] ? in->series_column : "series");
    if (in->time_kind != SF_TIME_NONE) {
        fputc(',', r.out);
        cli_csv_field(r.out, in->time_column);
    }
    fputs(in->has_lines ? ",line" : ",row", r.out);
    for (uint32_t j = 0; j < r.cols.ntargets; j++) {
        const char *name = in->col_names[r.cols.targets[j]];
        char *pred = malloc(strlen(name) + 6);
        if (pred) sprintf(pred, "%s_pred", name);
        fputc(',', r.out);
        cli_csv_field(r.out, pred ? pred : name);
        free(pred);
        if (r.actual) {
            fputc(',', r.out);
            cli_csv_field(r.out, name);
        }
    }
    fputc('\n', r.out);
    rc = sf_windows_in_order(r.pack, r.plan, &r.cols, batch, predict_batch, &r, &e);
    if (!rc && r.imputed && !a.v[OPT_QUIET].set)
        fprintf(stderr, "note: %llu of %llu target values were imputed by pack --missing ffill: their actual is left "
                "empty\n", (unsigned long long)r.imputed, (unsigned long long)(r.values + r.imputed));
    if (file.f) {
        int crc = sf_temp_fclose(&file, rc == 0, rc ? NULL : &e);
        if (!rc) rc = crc;
        cli_guard_temp(NULL);
    } else if (!rc && (fflush(stdout) != 0 || ferror(stdout))) {
        rc = sf_err_errno(&e, SF_EIO, errno, "<stdout>: write failed");
    }
    run_close(&r);
    return rc ? cli_fail("predict", &e, NULL) : EXIT_OK;
}

int cmd_evaluate(int argc, char **argv) {
    cli_args a;
    const char *ckpt = NULL, *data = NULL;
    uint32_t batch = 0;
    placement where;
    int rc = common_options(&evaluate_command, argc, argv, &a, &ckpt, &data, &batch, &where);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    bool json = a.v[OPT_JSON].set, split_given = a.v[OPT_SPLIT].set;
    enum sf_part part = split_given ? (enum sf_part)a.v[OPT_SPLIT].choice : SF_PART_ALL;
    run r = {0};
    sf_err e = {0};
    // Without --split: the validation part when there is one.
    sf_checkpoint peek;
    sf_model pm;
    if (!split_given) {
        if (sf_checkpoint_read(ckpt, &peek, &pm, &e)) return cli_fail("evaluate", &e, NULL);
        part = peek.val_split > 0 ? SF_PART_VALIDATION : SF_PART_ALL;
        sf_checkpoint_free(&peek);
    }
    if (!(rc = run_open(&r, ckpt, data, part, &batch, &where, &e)))
        rc = sf_windows_in_order(r.pack, r.plan, &r.cols, batch, evaluate_batch, &r, &e);
    if (!rc && r.n == 0) rc = sf_err_set(&e, SF_EINVAL, "%s: no windows in the %s part", data,
                                         part == SF_PART_VALIDATION ? "validation" : part == SF_PART_TRAIN ? "train" : "whole");
    if (!rc && r.values == 0)
        rc = sf_err_set(&e, SF_EINVAL, "%s: nothing to score: all %llu target values of the %s part's windows were "
                        "imputed by pack --missing ffill", data, (unsigned long long)r.imputed,
                        part == SF_PART_VALIDATION ? "validation" : part == SF_PART_TRAIN ? "train" : "whole");
    if (rc) {
        run_close(&r);
        return cli_fail("evaluate", &e, NULL);
    }
    const char *what = part == SF_PART_VALIDATION ? "validation" : part == SF_PART_TRAIN ? "train" : "all";
    double n = (double)r.values;  // the losses are means over the target values scored
    const sf_pack_info *in = sf_pack_get_info(r.pack);
    char verdict[512];
    bool beats = verdict_text(&r, verdict, sizeof verdict);
    if (json) {
        printf("{\"windows\": %llu, \"split\": \"%s\", \"loss\": ", (unsigned long long)r.n, what);
        cli_json_real(stdout, r.loss / n);
        printf(", \"mean_baseline\": ");
        cli_json_real(stdout, r.mean_loss / n);
        printf(", \"persistence_baseline\": ");
        cli_json_real(stdout, r.persist_loss / n);  // NaN: a target that is not a feature
        printf(", \"beats_persistence\": %s", isnan(r.persist_loss) ? "null" : beats ? "true" : "false");
        printf(", \"target_change\": %s", r.ck.target_change ? "true" : "false");
        printf(", \"target_values\": %llu, \"imputed_targets\": %llu", (unsigned long long)(r.values + r.imputed),
               (unsigned long long)r.imputed);
        printf(", \"target_mse\": {");
        for (uint32_t j = 0; j < r.cols.ntargets; j++) {
            printf("%s", j ? ", " : "");
            cli_json_string(stdout, in->col_names[r.cols.targets[j]]);
            printf(": ");
            cli_json_real(stdout, r.unit_n[j] ? r.unit_mse[j] / (double)r.unit_n[j] : NAN);  // null: all imputed
        }
        printf("}}\n");
    } else {
        printf("windows          %llu (%s part of %s)\n", (unsigned long long)r.n, what, data);
        if (r.imputed)
            printf("imputed          %llu of %llu target values were imputed by pack --missing ffill and are not "
                   "scored\n",
                   (unsigned long long)r.imputed, (unsigned long long)(r.values + r.imputed));
        printf("loss             %.6f   MSE of scaled values, as in training\n", r.loss / n);
        printf("baseline mean    %.6f   predicting each target's training mean\n", r.mean_loss / n);
        if (isnan(r.persist_loss)) printf("baseline last    n/a        (a target is not a feature)\n");
        else printf("baseline last    %.6f   predicting the last observed value\n", r.persist_loss / n);
        printf("target MSE       ");
        for (uint32_t j = 0; j < r.cols.ntargets; j++) {
            printf("%s%s ", j ? ", " : "", in->col_names[r.cols.targets[j]]);
            if (r.unit_n[j]) printf("%.6g", r.unit_mse[j] / (double)r.unit_n[j]);
            else printf("n/a (every value imputed)");
        }
        printf("   in data units\n");
        printf("verdict          %s\n", verdict);
    }
    bool finite = isfinite(r.loss);
    run_close(&r);
    if (!finite)
        return cli_fail("evaluate", &(sf_err){SF_EFORMAT, "the loss is not finite: the checkpoint's weights or the "
                                                          "data hold values that overflow float32"}, NULL);
    return EXIT_OK;
}
