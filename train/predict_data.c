// The windows a checkpoint predicts on a file, as `seqfeed predict` and
// `seqfeed evaluate` cut them, and as libseqfeed hands them to the exported
// Keras model (sf_api_inputs_*): one place, so that the two cannot drift.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train.h"

// No window of the checkpoint's fits in split's part of the file (cut at
// the checkpoint's --max-gap when cut is set): an empty answer would say
// nothing, so the error names why.
static int no_window(const sf_checkpoint *ck, const sf_pack_info *in, const char *data, const sf_series *cut,
                     uint64_t ncut, const sf_split *split, const char *all, sf_err *e) {
    const sf_window_spec *w = &ck->window;
    const sf_series *series = cut ? cut : in->series;
    uint64_t nseries = cut ? ncut : in->nseries;
    const char *part = split->part == SF_PART_VALIDATION ? "validation"
                       : split->part == SF_PART_TRAIN    ? "train"
                                                         : "whole";
    uint64_t longest = sf_split_longest(series, nseries, w->stride, split);
    if (split->part == SF_PART_VALIDATION && sf_plan_count(series, nseries, w, &(sf_split){0, SF_PART_ALL}) > 0) {
        char why[128] = "and every series' validation part is empty";
        if (longest)
            snprintf(why, sizeof why, "more than the %llu rows any series has from its first row to a target",
                     (unsigned long long)longest);
        return sf_err_set(e, SF_EINVAL, "%s: no window fits in the validation part: its targets are the last %g%% of "
                          "each series' rows (rounded down), every stride-th from the first, and a window's inputs "
                          "may reach back into the training part, not before the series' first row; the checkpoint's "
                          "windows span %llu rows, %s (hint: %s)", data, ck->val_split * 100,
                          (unsigned long long)sf_window_span(w), why, all);
    }
    if (split->part != SF_PART_ALL && sf_plan_count(series, nseries, w, &(sf_split){0, SF_PART_ALL}) > 0)
        return sf_err_set(e, SF_EINVAL, "%s: no window fits in the %s part (the first %g%% of each series' rows, the "
                          "longest %llu rows; the checkpoint's windows span %llu) (hint: %s)", data, part,
                          100 - ck->val_split * 100, (unsigned long long)longest, (unsigned long long)sf_window_span(w),
                          all);
    uint64_t uncut = cut ? sf_plan_count(in->series, in->nseries, w, split) : 0;
    if (uncut > 0) {
        char gap[32], step[32] = "none";
        sf_duration_text(ck->max_gap, gap, sizeof gap);
        if (in->time_step > 0) sf_duration_text((double)in->time_step * sf_pack_time_unit(in), step, sizeof step);
        return sf_err_set(e, SF_EINVAL, "%s: no window fits: the checkpoint's --max-gap %s removed all %llu windows "
                          "of the %s part, those that span a longer step between rows (the file's typical step is "
                          "%s; hint: data whose steps are at most %s, or a model trained with a larger --max-gap)",
                          data, gap, (unsigned long long)uncut, part, step, gap);
    }
    char horizon[32];
    sf_window_horizon_text(w, horizon, sizeof horizon);
    return sf_err_set(e, SF_EINVAL, "%s: no window fits in the %s part: the checkpoint's windows span %llu rows "
                      "(window %u, sampling rate %u, horizon %s), more than the %llu rows of its longest series",
                      data, part, (unsigned long long)sf_window_span(w), w->length, w->sampling_rate, horizon,
                      (unsigned long long)sf_split_longest(in->series, in->nseries, w->stride, split));
}

int sf_predict_data_open(sf_predict_data *d, const sf_checkpoint *ck, const char *data, enum sf_part part,
                         bool data_units, const char *all, sf_err *e) {
    *d = (sf_predict_data){0};
    int rc = sf_pack_open(&d->pack, data, e);
    const sf_pack_info *in = rc ? NULL : sf_pack_get_info(d->pack);
    // In data units every scale is 1 and every offset 0 (norm none), which
    // is what the exported model's own Normalization takes.
    if (!rc)
        rc = sf_columns_create(&d->cols, in, ck->features, ck->targets, ck->categories,
                               data_units ? SF_NORM_NONE : ck->norm, e);
    if (!rc) rc = sf_columns_add_time(&d->cols, in, ck->time_features, e);  // recomputed, as in training
    if (!rc && ck->target_change) rc = sf_columns_predict_change(&d->cols, in, e);
    d->cols.imputed_nan = true;  // a target pack imputed is never shown or scored as observed
    if (rc) return rc;
    if (!data_units) {  // the training data's scaling, not this file's
        memcpy(d->cols.feature_scale, ck->feature_scale, d->cols.nfeatures * sizeof(float));
        memcpy(d->cols.feature_offset, ck->feature_offset, d->cols.nfeatures * sizeof(float));
        memcpy(d->cols.target_scale, ck->target_scale, d->cols.ntargets * sizeof(float));
        memcpy(d->cols.target_offset, ck->target_offset, d->cols.ntargets * sizeof(float));
    }
    sf_split split = {ck->val_split, part};
    // The series cut at the checkpoint's --max-gap, as training cut them.
    if (ck->max_gap > 0 && in->time_kind == SF_TIME_NONE)
        return sf_err_set(e, SF_EUSAGE, "%s: the checkpoint was trained on windows kept off steps longer than %g s, "
                          "and this file has no time column to find them", data, ck->max_gap);
    if (ck->max_gap > 0 &&
        (rc = sf_pack_segments(d->pack, sf_pack_time_count(in, ck->max_gap), &d->segments, &d->nsegments, e)))
        return rc;
    rc = sf_plan_create(&d->plan, in->nrows, in->chunk_rows, d->segments ? d->segments : in->series,
                        d->segments ? d->nsegments : in->nseries, &ck->window, 1, &split, e);
    if (!rc && sf_plan_windows(d->plan) == 0) rc = no_window(ck, in, data, d->segments, d->nsegments, &split, all, e);
    return rc;
}

void sf_predict_data_close(sf_predict_data *d) {
    sf_plan_free(d->plan);
    sf_columns_free(&d->cols);
    sf_pack_close(d->pack);
    free(d->segments);
    *d = (sf_predict_data){0};
}

uint64_t sf_predict_target_row(const sf_plan *plan, uint64_t id) {
    const sf_window_spec *w = sf_plan_spec(plan);
    return sf_plan_window_start(plan, id) + (uint64_t)(w->length - 1) * w->sampling_rate + w->horizon;
}
