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
        sf_split_rows(series, nseries, &(sf_split){o->val_split, SF_PART_TRAIN}, part);
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
    free(part);
    return rc;
}

int sf_run_data_open(sf_run_data *d, const sf_fit_opts *o, sf_err *e) {
    *d = (sf_run_data){0};
    int rc = sf_pack_open(&d->pack, o->data, e);
    if (rc) return rc;
    const sf_pack_info *in = sf_pack_get_info(d->pack);
    if ((rc = sf_columns_create(&d->cols, in, o->features, o->targets, NULL, o->norm, e)) ||
        (rc = sf_columns_add_time(&d->cols, in, o->time_features, e)) ||
        (rc = sf_columns_check_time(&d->cols, in, e))) {
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
    po.batch = o->batch / all, po.drop_remainder = true, po.seed = o->seed, po.epochs = o->epochs;
    po.split = (sf_split){o->val_split, SF_PART_TRAIN};
    po.series = d->segments, po.nseries = d->nsegments;
    return po;
}
