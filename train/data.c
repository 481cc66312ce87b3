// The data of a run as sf_fit opens it, so that a caller outside the fit
// (the Python package's Dataset) gets the same columns, scaling and
// batches: the file, its columns as the options say, scaled by the
// training part's statistics, its series cut at --max-gap, and the
// pipeline options of one rank's replicas.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "train.h"

// Two series of one name could not be told apart in a checkpoint.
static int by_name(const void *a, const void *b) {
    return strcmp((*(const sf_series *const *)a)->name, (*(const sf_series *const *)b)->name);
}

// --norm-scope series: each series of the file by the statistics of its
// own rows in the training part (part: those of each of the nseries
// series or segments), over the global scaling.
static int series_scaling(sf_run_data *d, const sf_fit_opts *o, const sf_series *part, uint64_t nseries,
                          sf_err *e) {
    const sf_pack_info *in = sf_pack_get_info(d->pack);
    const sf_series *cut = d->segments ? d->segments : in->series;
    if (!in->series_column[0])
        return sf_err_set(e, SF_EUSAGE, "%s: --norm-scope series scales each series by its own statistics, and the "
                          "file has one series, without a series column (hint: pack the CSV with --series-column "
                          "NAME, or leave --norm-scope global)", o->data);
    if (o->norm == SF_NORM_NONE)
        return sf_err_set(e, SF_EUSAGE, "--norm-scope series with --norm none: there is no scaling to take per series "
                          "(hint: --norm zscore or minmax)");
    for (uint64_t i = 0; i < in->nseries; i++)
        if (!in->series[i].name[0])
            return sf_err_set(e, SF_EUSAGE, "%s: --norm-scope series: the series at row %llu has an empty name, and a "
                              "checkpoint keeps each series' scaling by name (hint: give every row a series value, "
                              "or --norm-scope global)", o->data, (unsigned long long)in->series[i].first_row);
    uint64_t *group = malloc(nseries * sizeof *group + 1);
    const sf_series **sorted = malloc(in->nseries * sizeof *sorted + 1);
    sf_col_stats *stats = NULL;
    int rc = group && sorted ? 0 : sf_err_set(e, SF_ENOMEM, "out of memory");
    for (uint64_t i = 0; i < in->nseries && !rc; i++) sorted[i] = &in->series[i];
    if (!rc) qsort(sorted, in->nseries, sizeof *sorted, by_name);
    for (uint64_t i = 1; i < in->nseries && !rc; i++) {
        if (strcmp(sorted[i]->name, sorted[i - 1]->name)) continue;
        char name[256];
        sf_escape_controls(name, sizeof name, sorted[i]->name, strlen(sorted[i]->name));
        rc = sf_err_set(e, SF_EUSAGE, "%s: --norm-scope series: two series are named \"%s\" (rows %llu and %llu), "
                        "and a checkpoint keeps each series' scaling by name (hint: pack the file so that each "
                        "series is one, or --norm-scope global)", o->data, name,
                        (unsigned long long)sorted[i - 1]->first_row, (unsigned long long)sorted[i]->first_row);
    }
    uint64_t s = 0;
    for (uint64_t i = 0; i < nseries && !rc; i++) {  // segments ascend as the series do
        while (s + 1 < in->nseries && in->series[s + 1].first_row <= cut[i].first_row) s++;
        group[i] = s;
    }
    uint64_t have = sf_machine_memory(), need = in->nseries * in->ncols * sizeof *stats;
    if (!rc && have && need > have / 4)
        rc = sf_err_set(e, SF_ENOMEM, "%s: --norm-scope series: the statistics of %llu series x %u columns (%.1f GB) "
                        "do not fit in this machine's memory (hint: --norm-scope global)", o->data,
                        (unsigned long long)in->nseries, in->ncols, need / 1e9);
    if (!rc && !(stats = malloc(need + 1))) rc = sf_err_set(e, SF_ENOMEM, "out of memory");
    if (!rc) rc = sf_pack_stats_of_groups(d->pack, part, group, nseries, in->nseries, stats, e);
    if (!rc) rc = sf_columns_scope(&d->cols, in->series, in->nseries, stats, in->ncols, o->norm, &d->scope_fallbacks, e);
    free(group), free(sorted), free(stats);
    return rc;
}

// The columns scaled by the statistics of the training part's rows, as
// Keras' and TensorFlow's time-series guides fit them: the validation rows
// do not leak into the training inputs. Without a validation part the
// file's own statistics are those rows'.
static int training_scaling(sf_run_data *d, const sf_fit_opts *o, sf_err *e) {
    const sf_pack_info *in = sf_pack_get_info(d->pack);
    uint64_t nseries;
    const sf_series *series = sf_run_data_series(d, &nseries);
    d->stats = malloc(in->ncols * sizeof *d->stats + 1);
    sf_series *part = malloc(nseries * sizeof *part + 1);
    int rc = d->stats && part ? 0 : sf_err_set(e, SF_ENOMEM, "out of memory");
    if (!rc) {
        sf_split split = sf_fit_split(o, in, SF_PART_TRAIN);
        sf_split_rows(series, nseries, &split, part);
        d->stats_rows = 0;
        for (uint64_t i = 0; i < nseries; i++) d->stats_rows += part[i].rows;
        // What the file's time table could not judge, over the rows a model learns from.
        sf_err inner = {0};
        if ((rc = sf_columns_check_time_rows(&d->cols, d->pack, part, nseries, &inner)))
            rc = sf_err_set(e, rc, "%s: %s", o->data, inner.msg);
        if (!rc && d->stats_rows == in->nrows) memcpy(d->stats, in->stats, in->ncols * sizeof *d->stats);
        else if (!rc) rc = sf_pack_stats_of_rows(d->pack, part, nseries, d->stats, e);
    }
    if (!rc) sf_columns_rescale(&d->cols, d->stats, o->norm);
    if (!rc && o->norm_series) rc = series_scaling(d, o, part, nseries, e);
    free(part);
    return rc;
}

int sf_series_features(const char *text, uint32_t *embed, sf_err *e) {
    *embed = 0;
    if (!strcmp(text, "onehot")) return 0;
    char *end;
    unsigned long d = strncmp(text, "embedding:", 10) ? 0 : strtoul(text + 10, &end, 10);
    if (d >= 1 && d <= 4096 && text[10] >= '0' && text[10] <= '9' && !*end) {
        *embed = (uint32_t)d;
        return 0;
    }
    return sf_err_set(e, SF_EUSAGE, "--series-features %s: expected onehot (an input per series) or embedding:D (a "
                      "learned vector of D values per series, D from 1 to 4096)", text);
}

// --series-features: the series one-hot in x (an embedding's model maps it to its vector).
static int series_inputs(sf_run_data *d, const sf_fit_opts *o, sf_err *e) {
    uint32_t embed;
    if (!o->series_features) return 0;
    int rc = sf_series_features(o->series_features, &embed, e);
    return rc ? rc : sf_columns_onehot(&d->cols, sf_pack_get_info(d->pack), NULL, 0, e);
}

int sf_run_data_open(sf_run_data *d, const sf_fit_opts *o, sf_err *e) {
    *d = (sf_run_data){0};
    int rc = sf_pack_open(&d->pack, o->data, e);
    if (rc) return rc;
    const sf_pack_info *in = sf_pack_get_info(d->pack);
    if ((rc = sf_columns_create(&d->cols, in, o->features, o->targets, NULL, o->norm, e)) ||
        (rc = sf_columns_add_time(&d->cols, in, o->time_features, e)) ||
        (rc = sf_columns_check_time(&d->cols, in, e)) ||
        (rc = sf_columns_future(&d->cols, in, o->future_features, e)) ||
        (rc = series_inputs(d, o, e))) {
        sf_err inner = *e;
        return sf_err_set(e, rc == SF_EINVAL ? SF_EUSAGE : rc, "%s: %s", o->data, inner.msg);
    }
    if (o->max_gap > 0) {
        if (in->time_kind == SF_TIME_NONE)
            return sf_err_set(e, SF_EUSAGE, "%s: --max-gap needs times, and the file has no time column (pack the "
                              "CSV with its time column)", o->data);
        rc = sf_pack_segments(d->pack, sf_pack_time_count(in, o->max_gap), &d->segments,
                              &d->nsegments, e);
        if (rc) return rc;
    }
    if (o->target_change && (rc = sf_columns_predict_change(&d->cols, in, e))) return rc;
    return training_scaling(d, o, e);
}

void sf_run_data_close(sf_run_data *d) {
    sf_columns_free(&d->cols);
    sf_pack_close(d->pack);
    free(d->segments);
    free(d->stats);
    *d = (sf_run_data){0};
}

const sf_series *sf_run_data_series(const sf_run_data *d, uint64_t *n) {
    const sf_pack_info *in = sf_pack_get_info(d->pack);
    *n = d->segments ? d->nsegments : in->nseries;
    return d->segments ? d->segments : in->series;
}

sf_pipe_opts sf_run_pipe_opts(const sf_fit_opts *o, const sf_run_data *d, uint32_t replicas, int rank, int nranks) {
    sf_pipe_opts po = o->pipe;
    uint32_t all = replicas * (uint32_t)nranks;
    po.replicas = replicas, po.shard_first = replicas * (uint32_t)rank, po.shard_total = all;
    po.batch = o->batch, po.drop_remainder = true, po.seed = o->seed, po.epochs = o->epochs;
    po.split = sf_fit_split(o, sf_pack_get_info(d->pack), SF_PART_TRAIN);
    po.series = d->segments, po.nseries = d->nsegments;
    return po;
}

uint32_t sf_fit_parts(const sf_fit_opts *o) {
    sf_pipe_opts po = o->pipe;
    po.batch = o->batch;  // as sf_run_pipe_opts sets it
    return sf_pipe_parts(&po);
}

sf_split sf_fit_split(const sf_fit_opts *o, const sf_pack_info *in, enum sf_part part) {
    if (!o->folds) return (sf_split){.fraction = o->val_split, .part = part};
    return (sf_split){.part = part, .folds = o->folds, .fold = o->fold, .whole = in->series, .nwhole = in->nseries};
}

bool sf_fit_validates(const sf_fit_opts *o) { return o->val_split > 0 || o->folds > 0; }
