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
    if (split->part == SF_PART_VALIDATION && !ck->folds && ck->val_split == 0)
        return sf_err_set(e, SF_EUSAGE, "%s: no validation part: the checkpoint's run trained with --val-split 0, on "
                          "every row (hint: %s)", data, all);
    if (split->part == SF_PART_VALIDATION && sf_plan_count(series, nseries, w, &(sf_split){.fraction = 0, .part = SF_PART_ALL}) > 0) {
        char why[128] = "and every series' validation part is empty";
        if (longest)
            snprintf(why, sizeof why, "more than the %llu rows any series has from its first row to a target",
                     (unsigned long long)longest);
        char rows[96];
        if (ck->folds)
            snprintf(rows, sizeof rows, "part %u of %u of each series' rows (fold %u of a cross-validation)",
                     ck->fold + 1, ck->folds + 1, ck->fold);
        else
            snprintf(rows, sizeof rows, "the last %g%% of each series' rows (rounded down)", ck->val_split * 100);
        return sf_err_set(e, SF_EINVAL, "%s: no window fits in the validation part: its targets are %s, every "
                          "stride-th from the first, and a window's inputs may reach back into the training part, "
                          "not before the series' first row; the checkpoint's windows span %llu rows, %s (hint: %s)",
                          data, rows, (unsigned long long)sf_window_span(w), why, all);
    }
    if (split->part != SF_PART_ALL && sf_plan_count(series, nseries, w, &(sf_split){.fraction = 0, .part = SF_PART_ALL}) > 0) {
        char rows[96];
        if (ck->folds)
            snprintf(rows, sizeof rows, "the rows of each series before part %u of %u", ck->fold + 1, ck->folds + 1);
        else
            snprintf(rows, sizeof rows, "the first %g%% of each series' rows", 100 - ck->val_split * 100);
        return sf_err_set(e, SF_EINVAL, "%s: no window fits in the %s part (%s, the longest %llu rows; the "
                          "checkpoint's windows span %llu) (hint: %s)", data, part, rows, (unsigned long long)longest,
                          (unsigned long long)sf_window_span(w), all);
    }
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

static int by_name(const void *a, const void *b) {
    return strcmp(((const sf_series *)a)->name, ((const sf_series *)b)->name);
}

// --norm-scope series: each series of the file scaled as the checkpoint's
// series of its name was in training. A series it has not seen is an error
// naming it: its own rows' statistics would scale it unlike anything the
// model learnt from, and those of rows after a forecast's time would leak.
static int scope_from(sf_predict_data *d, const sf_checkpoint *ck, const char *data, sf_err *e) {
    const sf_pack_info *in = sf_pack_get_info(d->pack);
    sf_columns *c = &d->cols;
    uint32_t nf = c->nfeatures, nt = c->ntargets;
    if (nf != ck->inputs || nt != ck->outputs)
        return sf_err_set(e, SF_EFORMAT, "%s: %u inputs and %u outputs, the checkpoint's scaling %u and %u", data, nf,
                          nt, ck->inputs, ck->outputs);
    // The checkpoint's names sorted, each with its index in first_row.
    sf_series *known = malloc(ck->nscoped * sizeof *known + 1);
    int rc = known ? 0 : sf_err_set(e, SF_ENOMEM, "out of memory");
    for (uint64_t s = 0; !rc && s < ck->nscoped; s++) known[s] = (sf_series){.first_row = s, .name = ck->scoped[s].name};
    if (!rc) qsort(known, ck->nscoped, sizeof *known, by_name);
    // Without statistics every series gets the global scaling, each then replaced by the checkpoint's.
    if (!rc) rc = sf_columns_scope(c, in->series, in->nseries, NULL, 0, ck->norm, NULL, e);
    for (uint64_t s = 0; !rc && s < in->nseries; s++) {
        sf_series key = {.name = in->series[s].name};
        const sf_series *k = bsearch(&key, known, ck->nscoped, sizeof *known, by_name);
        if (!k) {
            char name[256];
            sf_escape_controls(name, sizeof name, in->series[s].name, strlen(in->series[s].name));
            rc = sf_err_set(e, SF_EUSAGE, "%s: series \"%s\" (row %llu) is not one of the %llu series the checkpoint "
                            "was trained on with --norm-scope series, which scales each by its own training rows: "
                            "there is no scaling for it (hint: --data with the series trained on, or train on data that "
                            "holds it, or train with --norm-scope global)", data, name,
                            (unsigned long long)in->series[s].first_row, (unsigned long long)ck->nscoped);
            break;
        }
        uint64_t from = k->first_row;
        memcpy(c->scoped_feature_scale + s * nf, ck->scoped_feature_scale + from * nf, nf * sizeof(float));
        memcpy(c->scoped_feature_offset + s * nf, ck->scoped_feature_offset + from * nf, nf * sizeof(float));
        memcpy(c->scoped_target_scale + s * nt, ck->scoped_target_scale + from * nt, nt * sizeof(float));
        memcpy(c->scoped_target_offset + s * nt, ck->scoped_target_offset + from * nt, nt * sizeof(float));
        memcpy(c->scoped_target_mean + s * nt, ck->scoped_target_mean + from * nt, nt * sizeof(float));
    }
    free(known);
    return rc;
}

int sf_predict_data_open(sf_predict_data *d, const sf_checkpoint *ck, const char *data, enum sf_part part,
                         bool data_units, const char *all, sf_err *e) {
    *d = (sf_predict_data){0};
    int rc = sf_pack_open(&d->pack, data, e);
    const sf_pack_info *in = rc ? NULL : sf_pack_get_info(d->pack);
    // In data units every scale is 1 and every offset 0 (norm none), which
    // is what the exported model's own Normalization takes.
    if (!rc) {
        rc = sf_columns_create(&d->cols, in, ck->features, ck->targets, ck->categories,
                               data_units ? SF_NORM_NONE : ck->norm, e);
        if (rc && strstr(e->msg, "is not a column")) {  // a name the user did not type: whose, and from what
            sf_err inner = *e;
            if (ck->data[0]) sf_err_set(e, rc, "%s: the checkpoint's %s (it trained on %s)", data, inner.msg, ck->data);
            else sf_err_set(e, rc, "%s: the checkpoint's %s", data, inner.msg);
        }
    }
    if (!rc) rc = sf_columns_add_time(&d->cols, in, ck->time_features, e);  // recomputed, as in training
    if (!rc) rc = sf_columns_future(&d->cols, in, ck->future_features, e);
    if (!rc && ck->nonehot) {
        rc = sf_columns_onehot(&d->cols, in, ck->onehot, ck->nonehot, e);
        if (rc) {
            sf_err inner = *e;
            sf_err_set(e, rc, "%s: %s", data, inner.msg);
        }
    }
    if (!rc && (d->cols.nfuture != ck->future_inputs ||
                (ck->future_inputs && memcmp(d->cols.future, ck->future, ck->future_inputs * sizeof *ck->future))))
        rc = sf_err_set(e, SF_EFORMAT, "%s: future features '%s' are other inputs here (%u) than in the checkpoint "
                        "(%u)", data, ck->future_features, d->cols.nfuture, ck->future_inputs);
    if (!rc && ck->target_change) rc = sf_columns_predict_change(&d->cols, in, e);
    d->cols.imputed_nan = true;  // a target pack imputed is never shown or scored as observed
    if (rc) return rc;
    if (data_units && ck->nscoped)  // the exported model's Normalization has one scaling (checkpoint/keras.c)
        return sf_err_set(e, SF_EUSAGE, "%s: the checkpoint scales each series by its own statistics (--norm-scope "
                          "series), which the exported Keras model's one Normalization layer cannot: its inputs in "
                          "data units would be wrong (hint: seqfeed predict, or train with --norm-scope global to "
                          "export)", data);
    if (!data_units) {  // the training data's scaling, not this file's
        memcpy(d->cols.feature_scale, ck->feature_scale, d->cols.nfeatures * sizeof(float));
        memcpy(d->cols.feature_offset, ck->feature_offset, d->cols.nfeatures * sizeof(float));
        memcpy(d->cols.target_scale, ck->target_scale, d->cols.ntargets * sizeof(float));
        memcpy(d->cols.target_offset, ck->target_offset, d->cols.ntargets * sizeof(float));
    }
    if (!data_units && ck->nscoped && (rc = scope_from(d, ck, data, e))) return rc;
    sf_split split = {.fraction = ck->val_split, .part = part};
    if (ck->folds)  // a fold's checkpoint: its fold's parts
        split = (sf_split){.part = part, .folds = ck->folds, .fold = ck->fold, .whole = in->series,
                           .nwhole = in->nseries};
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
