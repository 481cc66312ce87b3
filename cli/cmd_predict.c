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
        "the file was packed from (packed from several files or from Parquet: the\n"
        "file, then its line or its row counted from 1; else its row in the\n"
        "file), and each target as NAME_pred in the data's units (a model\n"
        "trained with the quantile loss of 0.1, 0.5, 0.9: NAME_q10, NAME_q50,\n"
        "NAME_q90, sorted so that they never cross) (with\n"
        "--with-actual, NAME beside it: empty where pack filled it in (--missing\n"
        "ffill), as the CSV had it), so that the forecasts join back to the CSV on\n"
        "the line, or on the time parsed. A checkpoint of several steps ahead\n"
        "(trained with horizon A-B) writes one row per window and step, each\n"
        "with its own row's time and line, and a step column (the rows ahead of\n"
        "the window's last).\n",
    .uses = predict_uses,
};

static const cli_use evaluate_uses[] = {
    {.opt = OPT_CHECKPOINT, .help = CHECKPOINT_HELP},
    {.opt = OPT_DATA, .help = "the .sfpack file (required)"},
    {.opt = OPT_SPLIT, .def = "validation when the checkpoint was trained with a validation split, else all"},
    {.opt = OPT_BATCH_SIZE, .def = "256", .help = "windows per forward pass"}, {.opt = OPT_SEASON}, {.opt = OPT_JSON},
    {.opt = OPT_GPUS, .def = "all", .help = PREDICT_GPUS}, {.opt = OPT_PRECISION, .def = "fp32", .help = PREDICT_PRECISION},
    {.opt = OPT_QUIET}, {.opt = OPT_HELP}, {.opt = OPT_COUNT}};

static const cli_command evaluate_command = {
    .name = "evaluate",
    .usage = "--checkpoint FILE.safetensors --data FILE.sfpack [options]",
    .about =
        "The checkpoint's loss (the one it was trained with, MSE by default, on\n"
        "scaled values) on the file's windows, next to baselines in the same\n"
        "metric on the same target values: the last observed value\n"
        "(persistence), the training rows' mean, and the value one season\n"
        "before (seasonal naive, the season from the time column or\n"
        "--season). Then per target, in data units, the RMSE and MAE of the model\n"
        "and of each baseline, and whether the model beats persistence; the\n"
        "verdict names every target that does not. Target values pack imputed\n"
        "(--missing ffill) are not scored. With several steps (trained with\n"
        "horizon A-B), the scores are over every step's values, and a table\n"
        "gives each step's loss next to persistence and the seasonal forecast,\n"
        "and their mean over the steps. A model trained with a quantile loss\n"
        "adds each quantile's pinball loss and the coverage: the share of true\n"
        "values inside [lowest, highest] quantile; its RMSE and MAE are those of\n"
        "the quantile nearest 0.5.\n",
    .uses = evaluate_uses,
};

typedef struct {
    sf_checkpoint ck;
    sf_model model;
    sf_predict_data d;  // the file, its columns, the windows' plan, the series cut at --max-gap
    const sf_backend *be;  // the replica's: the CPU's or the GPU's
    sf_replica *rep;
    float *pred;
    // predict
    FILE *out;
    const char *out_name;  // for messages: the -o path, or <stdout>
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
    uint64_t values, imputed;  // predict's actuals written, and left empty as imputed
} run;

static void run_close(run *r) {
    if (r->rep) r->be->close(r->rep);
    sf_predict_data_close(&r->d);
    sf_checkpoint_free(&r->ck);
    free(r->pred);
    free(r->time), free(r->line), free(r->vals), free(r->stored);
    sf_pack_dctx_free(r->dctx);
}

// Row's time, CSV line and values into r->time / r->line / r->vals at *k:
// the chunk holding it decoded (rows come in order, so each chunk about
// once).
static int row_aux(run *r, uint64_t row, size_t *k, sf_err *e) {
    const sf_pack_info *in = sf_pack_get_info(r->d.pack);
    uint64_t c = row / in->chunk_rows;
    *k = (size_t)(row - c * in->chunk_rows);
    if (c == r->aux_chunk) return 0;
    if (!r->dctx) {
        size_t rows = in->chunk_rows < in->nrows ? in->chunk_rows : (size_t)in->nrows;
        r->dctx = sf_pack_dctx_create();
        r->stored = malloc(sf_pack_max_stored_size(r->d.pack));
        if (in->time_kind != SF_TIME_NONE) r->time = malloc(rows * 8);
        if (in->has_lines) r->line = malloc(rows * 8);
        if (r->actual) r->vals = malloc(rows * in->ncols * sizeof(float));
        if (!r->dctx || !r->stored || (in->time_kind != SF_TIME_NONE && !r->time) || (in->has_lines && !r->line) ||
            (r->actual && !r->vals))
            return sf_err_set(e, SF_ENOMEM, "out of memory");
    }
    int rc = sf_pack_chunk_read(r->d.pack, c, r->stored, e);
    if (!rc) rc = sf_pack_chunk_decode_all(r->dctx, r->d.pack, c, r->stored, r->vals, r->time, r->line, e);
    r->aux_chunk = rc ? UINT64_MAX : c;
    r->aux_rows = sf_pack_chunk_locate(r->d.pack, c).rows;
    return rc;
}

// Where predictions run: the backend, its device, the precision.
typedef struct {
    const sf_backend *be;
    int device;
    enum sf_precision precision;
} placement;

// *batch comes back no larger than the windows to predict: a replica is
// sized by it.
static int run_open(run *r, const char *ckpt, const char *data, enum sf_part part, uint32_t *batch,
                    const placement *where, sf_err *e) {
    int rc = sf_checkpoint_read(ckpt, &r->ck, &r->model, e);
    if (!rc) rc = sf_predict_data_open(&r->d, &r->ck, data, part, false, "--split all", e);
    const sf_pack_info *in = rc ? NULL : sf_pack_get_info(r->d.pack);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    sf_cpu_threads(1);  // parallel over the batch's rows instead
    sf_replica_opts ro = {.device = where->device, .threads = cores > 0 ? (uint32_t)cores : 1,
                          .precision = where->precision};
    r->be = where->be;
    if (!rc) {  // checked before the replica allocates it
        uint64_t windows = sf_plan_windows(r->d.plan);
        if (windows && *batch > windows) *batch = (uint32_t)windows;
        uint64_t need = r->be->host_memory(&r->model, *batch, r->ck.window.length, &ro);
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
        if (!r->pred) rc = sf_err_set(e, SF_ENOMEM, "out of memory");
    }
    if (!rc && r->d.cols.nunseen)
        fprintf(stderr, "note: %s: %u value(s) of categorical column \"%s\"%s are not in the training data: "
                "their rows get 0 for every input of the column\n", data, r->d.cols.nunseen,
                in->col_names[r->d.cols.unseen_column], r->d.cols.nunseen > 1 ? " (or others)" : "");
    return rc;
}

// Whether target j of step k of window i is one pack imputed (NaN under
// imputed_nan); a NaN in a column without imputed values is an overflow, and is scored.
static bool imputed_target(const run *r, const float *y, uint32_t i, uint32_t k, uint32_t j) {
    size_t nt = r->d.cols.ntargets, steps = sf_window_steps(&r->ck.window);
    return sf_columns_target_imputed(&r->d.cols, sf_pack_get_info(r->d.pack), y[((size_t)i * steps + k) * nt + j], j);
}

static int predict_batch(void *arg, const float *x, const float *y, const uint64_t *ids, uint32_t count, sf_err *e) {
    run *r = arg;
    // --with-actual writes the file's values, not their scaled copies; y says which pack imputed (NaN)
    int rc = r->be->predict(r->rep, r->pred, x, count, e);
    const sf_pack_info *in = sf_pack_get_info(r->d.pack);
    const sf_window_spec *w = &r->ck.window;
    uint32_t nt = r->d.cols.ntargets, steps = sf_window_steps(w);
    // One CSV row per window and step (--horizon A-B), each with its own row's time and line.
    for (uint32_t n = 0; !rc && n < count * steps; n++) {
        uint32_t i = n / steps, step = n % steps;
        uint64_t row = sf_predict_target_row(r->d.plan, ids[i]) - (steps - 1) + step;
        if (step == 0)  // the series by the window's first step: later windows' first steps only grow
            while (r->series + 1 < in->nseries && in->series[r->series + 1].first_row <= row) r->series++;
        size_t k = 0;
        if ((in->time_kind != SF_TIME_NONE || in->has_lines || r->actual) && (rc = row_aux(r, row, &k, e))) break;
        cli_csv_field(r->out, in->series[r->series].name);
        if (r->time) {
            char t[48];
            sf_pack_time_text(in, r->time[k], t, sizeof t);
            fprintf(r->out, ",%s", t);
        }
        if (r->line && in->nsources) {  // the file and its line: the row's origin
            uint32_t src;
            uint64_t line;
            sf_origin_split(in, r->line[k], &src, &line);
            if (src >= in->nsources) {  // chunks are checked by verify, not by every decode
                rc = sf_err_set(e, SF_ECORRUPT, "%s: row %llu's origin names source %u of %u (seqfeed verify "
                                "checks the whole file)", sf_pack_name(r->d.pack), (unsigned long long)row, src,
                                in->nsources);
                break;
            }
            fputc(',', r->out);
            cli_csv_field(r->out, in->sources[src]);
            fprintf(r->out, ",%llu", (unsigned long long)line);
        } else {
            fprintf(r->out, ",%llu", (unsigned long long)(r->line ? (uint64_t)r->line[k] : row));
        }
        if (steps > 1) fprintf(r->out, ",%u", w->horizon - (steps - 1) + step);  // rows ahead of the window's last
        sf_columns cw = sf_columns_at(&r->d.cols, row);  // the row's series' scaling (--norm-scope series)
        uint32_t W = sf_loss_width(&r->model.loss);
        for (uint32_t j = 0; j < nt; j++) {
            char num[32];
            float v[SF_LOSS_MAX_QUANTILES];  // a quantile model's, ascending
            sf_step_quantiles(&cw, w->length, steps, W, x, r->pred, i, step, j, v);
            for (uint32_t q = 0; q < W; q++) {
                sf_format_float(num, v[q]);
                fprintf(r->out, ",%s", num);
            }
            if (r->actual && imputed_target(r, y, i, step, j)) {  // the CSV had no value
                fputc(',', r->out);
                r->imputed++;
            } else if (r->actual) {  // the file's value itself: the CSV's, to float32's rounding
                sf_format_float(num, r->vals[(size_t)r->d.cols.targets[j] * r->aux_rows + k]);
                fprintf(r->out, ",%s", num);
                r->values++;
            }
        }
        fputc('\n', r->out);
    }
    if (!rc && ferror(r->out)) rc = sf_err_errno(e, SF_EIO, errno, "%s: write failed", r->out_name);
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
    r.out = stdout, r.out_name = "<stdout>";
    if (out && strcmp(out, "-")) {
        if (sf_temp_fopen(&file, out, &e)) {
            run_close(&r);
            return cli_fail("predict", &e, NULL);
        }
        r.out = file.f, r.out_name = out;
        cli_guard_temp(file.tmp);
    }
    const sf_pack_info *in = sf_pack_get_info(r.d.pack);
    r.actual = a.v[OPT_WITH_ACTUAL].set;
    r.aux_chunk = UINT64_MAX;
    // Named as the data names them, so that a join on time or line needs no renaming.
    cli_csv_field(r.out, in->series_column[0] ? in->series_column : "series");
    if (in->time_kind != SF_TIME_NONE) {
        fputc(',', r.out);
        cli_csv_field(r.out, in->time_column);
    }
    fputs(in->nsources ? ",file,line" : in->has_lines ? ",line" : ",row", r.out);
    if (sf_window_steps(&r.ck.window) > 1) fputs(",step", r.out);
    const sf_loss *loss = &r.model.loss;
    for (uint32_t j = 0; j < r.d.cols.ntargets; j++) {
        const char *name = in->col_names[r.d.cols.targets[j]];
        char *pred = malloc(strlen(name) + 40);
        // A quantile model's NAME_q10, NAME_q50, ...; else NAME_pred.
        for (uint32_t q = 0; q < sf_loss_width(loss); q++) {
            char suffix[32] = "pred";
            if (loss->kind == SF_LOSS_QUANTILE) sf_loss_quantile_name(loss, q, suffix, sizeof suffix);
            if (pred) sprintf(pred, "%s_%s", name, suffix);
            fputc(',', r.out);
            cli_csv_field(r.out, pred ? pred : name);
        }
        free(pred);
        if (r.actual) {
            fputc(',', r.out);
            cli_csv_field(r.out, name);
        }
    }
    fputc('\n', r.out);
    rc = sf_windows_in_order(r.d.pack, r.d.plan, &r.d.cols, batch, predict_batch, &r, &e);
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

static int replica_predict(void *arg, float *out, const float *x, uint32_t count, sf_err *e) {
    run *r = arg;
    return r->be->predict(r->rep, out, x, count, e);
}

static void evaluate_json(const run *r, const sf_score *s, const char *what) {
    const sf_target_score *t = s->t;
    char loss[SF_LOSS_TEXT];
    sf_loss_format(&s->loss_fn, loss, sizeof loss);
    bool quantiles = s->loss_fn.kind == SF_LOSS_QUANTILE;
    // loss and the baselines: the training loss (--loss) on scaled values
    printf("{\"windows\": %llu, \"split\": \"%s\", \"loss_function\": \"%s\", ", (unsigned long long)s->windows, what,
           loss);
    sf_score_json_losses(stdout, s);
    if (quantiles) printf(", \"nominal_coverage\": %.9g", s->loss_fn.q[s->loss_fn.nq - 1] - s->loss_fn.q[0]);
    printf(", \"season\": ");
    if (s->season.rows) printf("%u", s->season.rows);
    else printf("null");
    // Every scored target beats persistence: one that loses is never averaged away.
    uint32_t scored = 0;
    for (uint32_t j = 0; j < s->ntargets; j++) scored += t[j].values > 0;
    printf(", \"beats_persistence\": %s", s->beating == scored ? "true" : "false");
    printf(", \"target_change\": %s", r->ck.target_change ? "true" : "false");
    printf(", \"target_values\": %llu, \"imputed_targets\": %llu", (unsigned long long)(s->values + s->imputed),
           (unsigned long long)s->imputed);
    printf(", \"target_mse\": {");
    for (uint32_t j = 0; j < s->ntargets; j++) {
        printf("%s", j ? ", " : "");
        sf_json_string(stdout, t[j].name);
        printf(": ");
        sf_json_real(stdout, t[j].values ? t[j].rmse[SF_FC_MODEL] * t[j].rmse[SF_FC_MODEL] : NAN);  // null: all imputed
    }
    printf("}, ");
    sf_score_json_targets(stdout, s);
    if (s->step) {  // --horizon A-B: each step's loss (scaled) per target
        printf(", \"steps\": [%u, %u], \"per_step\": [", s->first_step, s->horizon);
        for (uint32_t k = 0; k < s->steps * s->ntargets; k++) {
            const sf_step_score *ss = &s->step[k];
            printf("%s{\"step\": %u, \"target\": ", k ? ", " : "", s->first_step + k / s->ntargets);
            sf_json_string(stdout, t[k % s->ntargets].name);
            printf(", \"values\": %llu, \"seasonal_values\": %llu", (unsigned long long)ss->values,
                   (unsigned long long)ss->seasonal_values);
            for (int f = 0; f < SF_FORECASTERS; f++) {
                printf(", \"%s\": ", sf_forecaster_names[f]);
                sf_json_real(stdout, ss->loss[f]);
            }
            printf(", \"model_on_seasonal\": ");
            sf_json_real(stdout, ss->model_seasonal_loss);
            if (quantiles) {
                printf(", \"coverage\": ");
                sf_json_real(stdout, ss->coverage);
            }
            printf("}");
        }
        printf("]");
    }
    printf("}\n");
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
        part = peek.val_split > 0 || peek.folds ? SF_PART_VALIDATION : SF_PART_ALL;
        sf_checkpoint_free(&peek);
    }
    const char *what = part == SF_PART_VALIDATION ? "validation" : part == SF_PART_TRAIN ? "train" : "all";
    const char *named = part == SF_PART_VALIDATION ? "validation" : part == SF_PART_TRAIN ? "train" : "whole";
    sf_score s = {0};
    sf_season season;
    if (!(rc = run_open(&r, ckpt, data, part, &batch, &where, &e))) {
        const sf_pack_info *in = sf_pack_get_info(r.d.pack);
        sf_season_find(&season, in, a.v[OPT_SEASON].set ? (uint32_t)a.v[OPT_SEASON].u : 0, &r.ck.window);
        sf_score_opts so = {.pack = r.d.pack, .plan = r.d.plan, .cols = &r.d.cols, .target_mean = r.ck.target_mean,
                            .series = r.d.segments ? r.d.segments : in->series,
                            .nseries = r.d.segments ? r.d.nsegments : in->nseries, .season = &season, .batch = batch,
                            .loss = &r.model.loss, .predict = replica_predict, .arg = &r};
        rc = sf_score_run(&s, &so, &e);
    }
    if (!rc && s.windows == 0) rc = sf_err_set(&e, SF_EINVAL, "%s: no windows in the %s part", data, named);
    if (!rc && s.values == 0)
        rc = sf_err_set(&e, SF_EINVAL, "%s: nothing to score: all %llu target values of the %s part's windows were "
                        "imputed by pack --missing ffill", data, (unsigned long long)s.imputed, named);
    if (rc) {
        sf_score_free(&s);
        run_close(&r);
        return cli_fail("evaluate", &e, NULL);
    }
    if (json) {
        evaluate_json(&r, &s, what);
    } else {
        printf("windows          %llu (%s part of %s)\n", (unsigned long long)s.windows, what, data);
        if (s.imputed)
            printf("imputed          %llu of %llu target values were imputed by pack --missing ffill and are not "
                   "scored\n",
                   (unsigned long long)s.imputed, (unsigned long long)(s.values + s.imputed));
        const sf_loss *l = &s.loss_fn;
        char lo[32], hi[32], what_loss[160];
        sf_loss_quantile_name(l, 0, lo, sizeof lo);
        sf_loss_quantile_name(l, l->nq ? l->nq - 1 : 0, hi, sizeof hi);
        if (l->kind == SF_LOSS_HUBER) snprintf(what_loss, sizeof what_loss, "Huber loss (delta %g)", l->delta);
        else if (l->kind == SF_LOSS_QUANTILE)
            snprintf(what_loss, sizeof what_loss, "pinball loss, the mean over the %u quantiles %s to %s,", l->nq, lo,
                     hi);
        else snprintf(what_loss, sizeof what_loss, "%s", l->kind == SF_LOSS_MAE ? "MAE" : "MSE");
        // A quantile loss scores a baseline's one value as every quantile.
        const char *point = l->kind == SF_LOSS_QUANTILE ? ", as every quantile" : "";
        printf("loss             %.6f   %s of scaled values, as in training\n", s.loss[SF_FC_MODEL], what_loss);
        printf("baseline mean    %.6f   predicting each target's training mean%s\n", s.loss[SF_FC_MEAN], point);
        printf("baseline last    %.6f   predicting the last observed value (persistence)%s\n",
               s.loss[SF_FC_PERSISTENCE], point);
        if (s.season.rows && isnan(s.loss[SF_FC_SEASONAL]))  // a season longer than every series' rows before
            printf("baseline season  n/a        no target has a row one season before it in its series (hint: a "
                   "smaller --season)\n");
        else if (s.season.rows)
            printf("baseline season  %.6f   predicting the value one season before%s\n", s.loss[SF_FC_SEASONAL],
                   point);
        if (l->kind == SF_LOSS_QUANTILE)
            printf("coverage         %.6f   the share of true values inside [%s, %s] (nominal %.3g)\n", s.coverage, lo,
                   hi, l->q[l->nq - 1] - l->q[0]);
        sf_score_print(stdout, &s);
    }
    bool finite = isfinite(s.loss[SF_FC_MODEL]);
    sf_score_free(&s);
    run_close(&r);
    if (!finite)
        return cli_fail("evaluate", &(sf_err){SF_EFORMAT, "the loss is not finite: the checkpoint's weights or the "
                                                          "data hold values that overflow float32"}, NULL);
    return EXIT_OK;
}
