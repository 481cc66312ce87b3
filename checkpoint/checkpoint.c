// Checkpoints as safetensors: weights under Keras' names (lstm/kernel, ...),
// optimizer/m and optimizer/v, scaling/*, and the rest as metadata text.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"

#define FORMAT "seqfeed-checkpoint 1"

static int from_st(const sf_st *s, const char *path, sf_checkpoint *c, sf_model *m, sf_err *e);

typedef struct {
    const sf_checkpoint *c;
    const sf_model *m;
} read_back_arg;

// The file just written loads as predict, export and --resume load it, with
// the weights it was given: else it is not kept (a run must never end with
// checkpoints nothing can load).
static int read_back(const char *tmp, const char *path, void *arg, sf_err *e) {
    const read_back_arg *a = arg;
    sf_checkpoint *r = calloc(1, sizeof *r);
    sf_st *s = NULL;
    sf_model m;
    int rc = r ? sf_st_open_named(&s, tmp, path, e) : sf_err_set(e, SF_ENOMEM, "out of memory");
    if (!rc) rc = from_st(s, path, r, &m, e);
    if (!rc && (r->nparams != a->m->nparams || memcmp(r->w, a->c->w, r->nparams * sizeof *r->w)))
        rc = sf_err_set(e, SF_EFORMAT, "%s: its weights read back differ from those written", path);
    if (rc) {
        sf_err inner = *e;
        sf_err_set(e, SF_EFORMAT, "%s was not written: it would not load (%s)", path, inner.msg);
    }
    sf_st_close(s);
    if (r) sf_checkpoint_free(r);
    free(r);
    return rc ? SF_EFORMAT : 0;
}

// The series' names as a list (sf_list_append), malloc'd; NULL when out of memory.
static char *name_list(const sf_series *series, uint64_t n) {
    size_t cap = 1, len = 0, quotes;
    for (uint64_t i = 0; i < n; i++) cap += 1 + sf_list_item_bytes(series[i].name, strlen(series[i].name), &quotes);
    char *list = malloc(cap);
    if (!list) return NULL;
    list[0] = 0;
    for (uint64_t i = 0; i < n; i++) sf_list_append(list, cap, &len, series[i].name);
    return list;
}

int sf_checkpoint_write(const char *path, const sf_checkpoint *c, const sf_model *m, sf_err *e) {
    sf_tensor t[3 * SF_MODEL_MAX_LAYERS];
    uint32_t nt = sf_model_tensors(m, t);
    sf_st_tensor st[3 * SF_MODEL_MAX_LAYERS + 12];
    size_t n = 0;
    for (uint32_t k = 0; k < nt; k++)
        st[n++] = (sf_st_tensor){t[k].name, "F32", t[k].rank, {t[k].shape[0], t[k].shape[1]}, c->w + t[k].offset};
    if (c->m && c->v) {
        st[n++] = (sf_st_tensor){"optimizer/m", "F32", 1, {m->nparams}, c->m};
        st[n++] = (sf_st_tensor){"optimizer/v", "F32", 1, {m->nparams}, c->v};
    }
    st[n++] = (sf_st_tensor){"scaling/feature_scale", "F32", 1, {c->inputs}, c->feature_scale};
    st[n++] = (sf_st_tensor){"scaling/feature_offset", "F32", 1, {c->inputs}, c->feature_offset};
    st[n++] = (sf_st_tensor){"scaling/target_scale", "F32", 1, {c->outputs}, c->target_scale};
    st[n++] = (sf_st_tensor){"scaling/target_offset", "F32", 1, {c->outputs}, c->target_offset};
    if (c->target_mean) st[n++] = (sf_st_tensor){"scaling/target_mean", "F32", 1, {c->outputs}, c->target_mean};
    char *scoped = NULL, *onehot = NULL;  // the series' names, lists
    if (c->nonehot && !(onehot = name_list(c->onehot, c->nonehot)))
        return sf_err_set(e, SF_ENOMEM, "out of memory for the series' names");
    if (c->nscoped) {
        st[n++] = (sf_st_tensor){"scaling/series_feature_scale", "F32", 2, {c->nscoped, c->inputs}, c->scoped_feature_scale};
        st[n++] = (sf_st_tensor){"scaling/series_feature_offset", "F32", 2, {c->nscoped, c->inputs}, c->scoped_feature_offset};
        st[n++] = (sf_st_tensor){"scaling/series_target_scale", "F32", 2, {c->nscoped, c->outputs}, c->scoped_target_scale};
        st[n++] = (sf_st_tensor){"scaling/series_target_offset", "F32", 2, {c->nscoped, c->outputs}, c->scoped_target_offset};
        st[n++] = (sf_st_tensor){"scaling/series_target_mean", "F32", 2, {c->nscoped, c->outputs}, c->scoped_target_mean};
        if (!(scoped = name_list(c->scoped, c->nscoped))) {
            free(onehot);
            return sf_err_set(e, SF_ENOMEM, "out of memory for the series' names");
        }
    }
    char v[36][64];
    snprintf(v[20], 64, "%016llx", (unsigned long long)c->data_fingerprint);
    snprintf(v[21], 64, "%.17g", c->max_gap);
    snprintf(v[0], 64, "%u,%u,%u,%u", c->window.length, c->window.stride, c->window.sampling_rate, c->window.horizon);
    // Several steps add a fifth count; one step writes what older versions read.
    if (sf_window_steps(&c->window) > 1) snprintf(v[0] + strlen(v[0]), 64 - strlen(v[0]), ",%u", c->window.steps);
    snprintf(v[1], 64, "%u", c->inputs);
    snprintf(v[2], 64, "%u", c->outputs);
    snprintf(v[3], 64, "%llu", (unsigned long long)c->epoch);
    snprintf(v[4], 64, "%llu", (unsigned long long)c->epoch_step);
    snprintf(v[5], 64, "%llu", (unsigned long long)c->step);
    snprintf(v[6], 64, "%llu", (unsigned long long)c->seed);
    snprintf(v[7], 64, "%llu", (unsigned long long)c->epochs);
    snprintf(v[8], 64, "%u", c->batch);
    snprintf(v[9], 64, "%u", c->replicas);
    snprintf(v[10], 64, "%.17g", c->val_split);
    snprintf(v[11], 64, "%.9g", c->lr);
    snprintf(v[12], 64, "%llu", (unsigned long long)c->pool);
    snprintf(v[13], 64, "%llu", (unsigned long long)c->rows);
    snprintf(v[14], 64, "%.17g", c->epoch_loss);
    snprintf(v[15], 64, "%llu", (unsigned long long)c->epoch_samples);
    snprintf(v[16], 64, "%.17g", c->epoch_wait);
    snprintf(v[17], 64, "%.17g", c->epoch_seconds);
    snprintf(v[18], 64, "%u", c->lanes);
    snprintf(v[19], 64, "%u", c->block_chunks);
    snprintf(v[31], 64, "%u", c->parts);
    snprintf(v[22], 64, "%llu", (unsigned long long)c->warmup_steps);
    snprintf(v[23], 64, "%llu", (unsigned long long)c->lr_total_steps);
    snprintf(v[24], 64, "%llu", (unsigned long long)c->lr_patience);
    snprintf(v[25], 64, "%.17g", c->lr_min);
    snprintf(v[26], 64, "%.17g", c->lr_factor);
    snprintf(v[27], 64, "%.17g", c->min_delta);
    snprintf(v[28], 64, "%.17g", c->lr_scale);
    snprintf(v[29], 64, "%.17g", c->plateau_best);
    snprintf(v[30], 64, "%llu", (unsigned long long)c->plateau_wait);
    char b[5][64];  // the validation record (sf_checkpoint's comment): %.17g reads back to the same double
    snprintf(b[0], 64, "%llu", (unsigned long long)c->early_stop);
    snprintf(b[1], 64, "%llu", (unsigned long long)c->since_improved);
    snprintf(b[2], 64, "%llu", (unsigned long long)c->best_epoch);
    snprintf(b[3], 64, "%.17g", c->best_val_loss);
    snprintf(b[4], 64, "%.17g", c->improved_val_loss);
    snprintf(v[32], 64, "%llu", (unsigned long long)c->steps_per_epoch);
    snprintf(v[33], 64, "%llu", (unsigned long long)c->validation_steps);
    snprintf(v[34], 64, "%llu", (unsigned long long)c->log_every);
    snprintf(v[35], 64, "%llu", (unsigned long long)c->checkpoint_every);
    char loss[SF_LOSS_TEXT];
    sf_loss_format(&m->loss, loss, sizeof loss);
    const char *meta[] = {"format", FORMAT, "model", c->model, "loss", loss, "features", c->features, "targets", c->targets,
                          "data", c->data, "norm", sf_norm_name(c->norm), "window", v[0], "inputs", v[1],
                          "outputs", v[2], "epoch", v[3], "epoch_step", v[4], "step", v[5], "seed", v[6],
                          "epochs", v[7], "batch", v[8], "replicas", v[9], "val_split", v[10], "lr", v[11],
                          "lr_scaling", c->lr_scaling, "pool", v[12], "rows", v[13], "epoch_loss", v[14],
                          "epoch_samples", v[15], "epoch_wait", v[16], "epoch_seconds", v[17],
                          "lanes", v[18], "block_chunks", v[19], "batch_parts", v[31], "data_fingerprint", v[20], "max_gap", v[21], "time_features", c->time_features,
                          "categories", c->categories, "target", c->target_change ? "change" : "value",
                          "precision", c->precision, "data_from_checkpoint_dir", c->data_from_dir,
                          "log", c->log, "log_from_checkpoint_dir", c->log_from_dir,
                          "tensorboard", c->tensorboard, "tensorboard_from_checkpoint_dir", c->tensorboard_from_dir,
                          "steps_per_epoch", v[32], "validation_steps", v[33], "log_every", v[34],
                          "checkpoint_every", v[35],
                          "min_delta", v[27], "early_stop", b[0], "since_improved", b[1],
                          // the schedule's keys, when a run wrote it (else it reads as constant), and
                          // the best's, when there is one
                          NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                          NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                          NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,  // the covariates'
                          NULL, NULL, NULL, NULL,  // and the fold's
                          NULL, NULL};  // and the pipeline's choice
    size_t at = sizeof meta / sizeof *meta - 43;
    char series_kind[32] = "onehot";
    if (c->embed) snprintf(series_kind, sizeof series_kind, "embedding:%u", c->embed);
    if (c->nonehot) {
        const char *series[] = {"series_features", series_kind, "series_names", onehot};
        memcpy(meta + at, series, sizeof series), at += sizeof series / sizeof *series;
    }
    char future_inputs[SF_MAX_FUTURE_INPUTS * 11 + 1] = "";
    for (uint32_t k = 0, n = 0; k < c->future_inputs; k++)
        n += (uint32_t)snprintf(future_inputs + n, sizeof future_inputs - n, "%s%u", k ? "," : "", c->future[k]);
    if (c->future_inputs) {  // only then: older versions read what they wrote
        const char *future[] = {"future_features", c->future_features, "future_inputs", future_inputs};
        memcpy(meta + at, future, sizeof future), at += sizeof future / sizeof *future;
    }
    char fold[2][16];
    if (c->folds) {  // a fold of a cross-validation (only then, so that other checkpoints stay as they were)
        snprintf(fold[0], sizeof fold[0], "%u", c->folds);
        snprintf(fold[1], sizeof fold[1], "%u", c->fold);
        const char *cv[] = {"folds", fold[0], "fold", fold[1]};
        memcpy(meta + at, cv, sizeof cv), at += sizeof cv / sizeof *cv;
    }
    if (c->nscoped) {  // where the keys before end (the schedule's and the best's follow)
        const char *scope[] = {"norm_scope", "series", "norm_series", scoped};
        memcpy(meta + at, scope, sizeof scope), at += sizeof scope / sizeof *scope;
    }
    if (c->lr_schedule[0]) {
        const char *lr[] = {"lr_schedule", c->lr_schedule, "warmup_steps", v[22], "lr_total_steps", v[23],
                            "lr_patience", v[24], "lr_min", v[25], "lr_factor", v[26], "lr_scale", v[28],
                            "plateau_best", v[29], "plateau_wait", v[30]};
        memcpy(meta + at, lr, sizeof lr), at += sizeof lr / sizeof *lr;
    }
    if (c->best_epoch) {
        const char *best[] = {"best_epoch", b[2], "best_val_loss", b[3], "improved_val_loss", b[4]};
        memcpy(meta + at, best, sizeof best), at += sizeof best / sizeof *best;
    }
    if (c->pipeline[0]) {
        const char *pipe[] = {"pipeline", c->pipeline};
        memcpy(meta + at, pipe, sizeof pipe);
    }
    int rc = sf_st_write_checked(path, st, n, meta, read_back, &(read_back_arg){c, m}, e);
    free(scoped), free(onehot);
    return rc;
}

void sf_checkpoint_free(sf_checkpoint *c) {
    free(c->w), free(c->m), free(c->v);
    free(c->feature_scale), free(c->feature_offset), free(c->target_scale), free(c->target_offset);
    free(c->target_mean);
    c->w = c->m = c->v = c->feature_scale = c->feature_offset = c->target_scale = c->target_offset = NULL;
    c->target_mean = NULL;
    if (c->scoped_text) {  // a read checkpoint's own; a fit's record borrows them
        free((void *)c->scoped), free(c->scoped_text);
        free(c->scoped_feature_scale), free(c->scoped_feature_offset);
        free(c->scoped_target_scale), free(c->scoped_target_offset), free(c->scoped_target_mean);
        c->scoped = NULL, c->scoped_text = NULL, c->nscoped = 0;
        c->scoped_feature_scale = c->scoped_feature_offset = c->scoped_target_scale = c->scoped_target_offset = NULL;
        c->scoped_target_mean = NULL;
    }
    if (c->onehot_text) {  // alike
        free((void *)c->onehot), free(c->onehot_text);
        c->onehot = NULL, c->onehot_text = NULL, c->nonehot = 0;
    }
}

// Metadata key as text (copied into out) or as an unsigned or real number.
static int meta_text(const sf_st *s, const char *path, const char *key, char *out, size_t cap, sf_err *e) {
    const char *v = sf_st_meta(s, key);
    if (!v) return sf_err_set(e, SF_EFORMAT, "%s: no '%s' in the checkpoint's metadata", path, key);
    if (strlen(v) >= cap)
        return sf_err_set(e, SF_EFORMAT, "%s: metadata '%s' is %zu bytes long, more than the %zu a checkpoint keeps",
                          path, key, strlen(v), cap - 1);
    memcpy(out, v, strlen(v) + 1);
    return 0;
}

static int meta_u64(const sf_st *s, const char *path, const char *key, uint64_t *out, sf_err *e) {
    const char *v = sf_st_meta(s, key);
    char *end;
    errno = 0;
    unsigned long long x = v ? strtoull(v, &end, 10) : 0;
    if (!v || !*v || *end || errno || *v == '-')
        return sf_err_set(e, SF_EFORMAT, "%s: metadata '%s' is '%s', expected a count", path, key, v ? v : "missing");
    *out = x;
    return 0;
}

// A count written since a later version: def when the file has none.
static int meta_u64_or(const sf_st *s, const char *path, const char *key, uint64_t def, uint64_t *out, sf_err *e) {
    if (!sf_st_meta(s, key)) {
        *out = def;
        return 0;
    }
    return meta_u64(s, path, key, out, e);
}

static int meta_double(const sf_st *s, const char *path, const char *key, double *out, sf_err *e) {
    const char *v = sf_st_meta(s, key);
    char *end;
    double x = v ? strtod(v, &end) : 0;
    if (!v || !*v || *end)
        return sf_err_set(e, SF_EFORMAT, "%s: metadata '%s' is '%s', expected a number", path, key, v ? v : "missing");
    *out = x;
    return 0;
}

// The validation record (kept since a later version: none before), within
// what train writes: a best is an epoch done, with a finite val_loss.
static int validation_record(const sf_st *s, const char *path, sf_checkpoint *c, sf_err *e) {
    int rc = meta_u64_or(s, path, "early_stop", 0, &c->early_stop, e);
    if (!rc) rc = meta_u64_or(s, path, "since_improved", 0, &c->since_improved, e);
    if (!rc) rc = meta_u64_or(s, path, "best_epoch", 0, &c->best_epoch, e);
    if (rc || !c->best_epoch) return rc;
    rc = meta_double(s, path, "best_val_loss", &c->best_val_loss, e);
    if (!rc) rc = meta_double(s, path, "improved_val_loss", &c->improved_val_loss, e);
    if (!rc && !(isfinite(c->best_val_loss) && isfinite(c->improved_val_loss) &&
                 c->best_val_loss <= c->improved_val_loss))
        rc = sf_err_set(e, SF_EFORMAT, "%s: metadata 'best_val_loss' %g and 'improved_val_loss' %g: expected finite "
                        "numbers, the best no larger (a damaged or edited checkpoint)", path, c->best_val_loss,
                        c->improved_val_loss);
    return rc;
}

// A real written since a later version: def when the file has none.
static int meta_double_or(const sf_st *s, const char *path, const char *key, double def, double *out, sf_err *e) {
    if (!sf_st_meta(s, key)) {
        *out = def;
        return 0;
    }
    return meta_double(s, path, key, out, e);
}

// The lr's schedule and its state; a checkpoint from before they were kept
// trained at a constant lr. Values train would not accept name the key
// (plateau_best, never NaN since sf_plateau_update keeps none, run_record).
static int read_schedule(const sf_st *s, const char *path, sf_checkpoint *c, sf_err *e) {
    const char *kind = sf_st_meta(s, "lr_schedule");
    if (kind && strcmp(kind, "constant") && strcmp(kind, "cosine") && strcmp(kind, "plateau"))
        return sf_err_set(e, SF_EFORMAT, "%s: metadata 'lr_schedule' is '%s', expected constant, cosine or plateau",
                          path, kind);
    snprintf(c->lr_schedule, sizeof c->lr_schedule, "%s", kind ? kind : "constant");
    int rc = meta_u64_or(s, path, "warmup_steps", 0, &c->warmup_steps, e);
    if (!rc) rc = meta_u64_or(s, path, "lr_total_steps", 0, &c->lr_total_steps, e);
    if (!rc) rc = meta_u64_or(s, path, "lr_patience", 10, &c->lr_patience, e);
    if (!rc) rc = meta_u64_or(s, path, "plateau_wait", 0, &c->plateau_wait, e);
    if (!rc) rc = meta_double_or(s, path, "lr_min", 0, &c->lr_min, e);
    if (!rc) rc = meta_double_or(s, path, "lr_factor", 0.1, &c->lr_factor, e);
    if (!rc) rc = meta_double_or(s, path, "min_delta", 0, &c->min_delta, e);
    if (!rc) rc = meta_double_or(s, path, "lr_scale", 1, &c->lr_scale, e);
    if (!rc) rc = meta_double_or(s, path, "plateau_best", INFINITY, &c->plateau_best, e);
    if (rc) return rc;
    const char *bad = !(c->lr_min >= 0 && c->lr_min <= 1000)           ? "lr_min"
                      : !(c->lr_factor > 0 && c->lr_factor < 1)        ? "lr_factor"
                      : !(c->min_delta >= 0 && isfinite(c->min_delta)) ? "min_delta"
                      : !(c->lr_scale > 0 && c->lr_scale <= 1)         ? "lr_scale"
                      : c->lr_patience == 0                            ? "lr_patience"
                                                                       : NULL;
    if (bad)
        return sf_err_set(e, SF_EFORMAT, "%s: metadata '%s' is '%s', out of the range train gives it (a damaged or "
                          "edited checkpoint)", path, bad, sf_st_meta(s, bad));
    return 0;
}

// The run's record against its counters, as train leaves them: a best or
// a count of evaluations since one within the epochs done, losses (MSEs)
// not below 0, an epoch's steps short of --steps-per-epoch. An edit that
// breaks them would resume a run no uninterrupted one has.
static int run_record(const char *path, const sf_checkpoint *c, sf_err *e) {
    const char *key = c->best_epoch > c->epoch                                  ? "best_epoch"
                      : c->since_improved > c->epoch                            ? "since_improved"
                      : c->steps_per_epoch && c->epoch_step >= c->steps_per_epoch ? "epoch_step"
                                                                                  : NULL;
    if (key)
        return sf_err_set(e, SF_EFORMAT, "%s: metadata '%s' is %llu, with 'epoch' %llu and 'steps_per_epoch' %llu: "
                          "a count no run leaves (a damaged or edited checkpoint)", path, key,
                          (unsigned long long)(key[0] == 'b' ? c->best_epoch : key[1] == 'i' ? c->since_improved
                                                                                            : c->epoch_step),
                          (unsigned long long)c->epoch, (unsigned long long)c->steps_per_epoch);
    key = c->best_epoch && !(c->best_val_loss >= 0) ? "best_val_loss" : !(c->plateau_best >= 0) ? "plateau_best" : NULL;
    if (key)
        return sf_err_set(e, SF_EFORMAT, "%s: metadata '%s' is %g, expected a loss of 0 or more (a damaged or edited "
                          "checkpoint)", path, key, key[0] == 'b' ? c->best_val_loss : c->plateau_best);
    return 0;
}

// Names in a list (sf_list_next); UINT32_MAX when it is not one.
static uint32_t names(const char *list) {
    uint32_t n = 0;
    char name[SF_PACK_MAX_CATEGORY_VALUE + 1];  // and a column name: a checkpoint keeps 4096 bytes of them
    for (const char *p = *list ? list : NULL; p; n++)
        if (sf_list_next(&p, name, sizeof name)) return UINT32_MAX;
    return n;
}

// The inputs categorical features add to their one column each: a group
// '"weather,sun,rain"' is two inputs, one more than its column.
static uint32_t one_hot_inputs(const char *categories) {
    size_t cap = strlen(categories) + 1;
    char *group = malloc(cap);
    uint32_t n = 0;
    for (const char *p = *categories ? categories : NULL; p && n != UINT32_MAX / 2;) {
        uint32_t k = !group || sf_list_next(&p, group, cap) ? 0 : names(group);
        n = k < 2 || k == UINT32_MAX ? UINT32_MAX / 2 : n + k - 2;  // UINT32_MAX / 2: no count adds up to it
    }
    free(group);
    return n;
}

// A list of names with one name twice ("a,a"): a checkpoint that
// contradicts itself.
static bool has_twice(const char *list) {
    char a[SF_PACK_MAX_CATEGORY_VALUE + 1], b[SF_PACK_MAX_CATEGORY_VALUE + 1];  // as names()
    for (const char *p = *list ? list : NULL; p;) {
        if (sf_list_next(&p, a, sizeof a)) return false;  // names() refused it already
        for (const char *q = p; q;)
            if (sf_list_next(&q, b, sizeof b) || !strcmp(a, b)) return true;
    }
    return false;
}

// Tensor name into out: F32 of exactly the shape the model needs (a
// transposed kernel has the right byte count, and would load as garbage),
// every value finite.
static int read_tensor(const sf_st *s, const char *path, const char *name, float *out, uint32_t rank,
                       const uint64_t *shape, sf_err *e) {
    const sf_st_entry *t = sf_st_find(s, name);
    size_t n = 1;
    for (uint32_t d = 0; d < rank; d++) n *= shape[d];
    if (t && (t->rank != rank || memcmp(t->shape, shape, rank * sizeof *shape))) {
        char got[96] = "", want[96] = "";
        for (uint32_t d = 0, k = 0; d < t->rank && k < sizeof got; d++)
            k += (size_t)snprintf(got + k, sizeof got - k, "%s%llu", d ? "," : "", (unsigned long long)t->shape[d]);
        for (uint32_t d = 0, k = 0; d < rank && k < sizeof want; d++)
            k += (size_t)snprintf(want + k, sizeof want - k, "%s%llu", d ? "," : "", (unsigned long long)shape[d]);
        return sf_err_set(e, SF_EFORMAT, "%s: tensor '%s' has shape [%s]; the model needs [%s]", path, name, got,
                          want);
    }
    int rc = sf_st_read_f32(s, name, out, n, e);
    if (rc) {
        sf_err inner = *e;
        return sf_err_set(e, rc, "%s: %s", path, inner.msg);
    }
    for (size_t i = 0; i < n; i++)
        if (!isfinite(out[i]))
            return sf_err_set(e, SF_EFORMAT, "%s: tensor '%s' holds %s at index %zu: the weights or scaling are "
                              "damaged (a run that diverged writes no checkpoint)", path, name,
                              isnan(out[i]) ? "NaN" : "an infinity", i);
    return 0;
}

static float *read_f32(const sf_st *s, const char *path, const char *name, uint64_t n, int *rc, sf_err *e) {
    if (*rc) return NULL;
    float *p = malloc((n ? n : 1) * sizeof(float));
    if (!p) *rc = sf_err_set(e, SF_ENOMEM, "out of memory");
    else if ((*rc = read_tensor(s, path, name, p, 1, &n, e))) {
        free(p);
        p = NULL;
    }
    return p;
}

// A rank-2 tensor (n, k) of floats, malloc'd; NULL with *rc set.
static float *read_f32_2(const sf_st *s, const char *path, const char *name, uint64_t n, uint64_t k, int *rc,
                         sf_err *e) {
    if (*rc) return NULL;
    float *p = malloc(n * k * sizeof(float) + 1);
    if (!p) *rc = sf_err_set(e, SF_ENOMEM, "out of memory");
    else if ((*rc = read_tensor(s, path, name, p, 2, (const uint64_t[2]){n, k}, e))) {
        free(p);
        p = NULL;
    }
    return p;
}

// --norm-scope series (norm_scope "series"): the series' names and scales.
// Without the key: global, as every checkpoint from before it was kept.
// A list of series' names into *series (their names in *text, both
// malloc'd, kept even on failure for the caller to free), *n of them.
static int read_names(const char *names, const char *path, const char *key, const sf_series **out, char **out_text,
                      uint64_t *n, sf_err *e) {
    uint64_t most = 1;
    size_t len = strlen(names);
    for (const char *q = names; *q; q++) most += *q == ',';  // at most: a quoted name may hold commas
    sf_series *series = calloc(most, sizeof *series);
    char *text = malloc(2 * len + 2);  // each name unquoted, NUL-terminated: no longer than the list
    if (!series || !text) {
        free(series), free(text);
        return sf_err_set(e, SF_ENOMEM, "out of memory for the checkpoint's series");
    }
    *out = series, *out_text = text, *n = 0;
    size_t at = 0;
    for (const char *p = names; p;) {
        if (sf_list_next(&p, text + at, 2 * len + 2 - at))
            return sf_err_set(e, SF_EFORMAT, "%s: metadata '%s' is not a list of names (a damaged or edited "
                              "checkpoint)", path, key);
        series[(*n)++].name = text + at;
        at += strlen(text + at) + 1;
    }
    return 0;
}

// --series-features: the series the model has inputs for.
static int read_onehot(const sf_st *s, const char *path, sf_checkpoint *c, sf_err *e) {
    const char *kind = sf_st_meta(s, "series_features"), *names = sf_st_meta(s, "series_names");
    if (!kind) return 0;
    char *end = NULL;
    unsigned long d = strncmp(kind, "embedding:", 10) ? 0 : strtoul(kind + 10, &end, 10);
    bool embedding = d >= 1 && d <= 4096 && kind[10] >= '0' && kind[10] <= '9' && !*end;
    if ((strcmp(kind, "onehot") && !embedding) || !names || !*names)
        return sf_err_set(e, SF_EFORMAT, "%s: metadata 'series_features' is '%s' with %s 'series_names', expected "
                          "onehot or embedding:D with the series' names (a damaged or edited checkpoint)", path, kind,
                          names ? *names ? "a" : "an empty" : "no");
    c->embed = embedding ? (uint32_t)d : 0;
    int rc = read_names(names, path, "series_names", &c->onehot, &c->onehot_text, &c->nonehot, e);
    if (!rc && c->nonehot > SF_MAX_ONEHOT)
        rc = sf_err_set(e, SF_EFORMAT, "%s: metadata 'series_names' has %llu series, more than %u (a damaged or edited "
                        "checkpoint)", path, (unsigned long long)c->nonehot, SF_MAX_ONEHOT);
    return rc;
}

static int read_scope(const sf_st *s, const char *path, sf_checkpoint *c, sf_err *e) {
    const char *scope = sf_st_meta(s, "norm_scope"), *names = sf_st_meta(s, "norm_series");
    if (!scope || !strcmp(scope, "global")) return 0;
    if (strcmp(scope, "series") || !names || !*names)
        return sf_err_set(e, SF_EFORMAT, "%s: metadata 'norm_scope' is '%s' with %s 'norm_series', expected global, or "
                          "series with the series' names (a damaged or edited checkpoint)", path, scope,
                          names ? *names ? "a" : "an empty" : "no");
    int rc = read_names(names, path, "norm_series", &c->scoped, &c->scoped_text, &c->nscoped, e);
    if (rc) return rc;
    c->scoped_feature_scale = read_f32_2(s, path, "scaling/series_feature_scale", c->nscoped, c->inputs, &rc, e);
    c->scoped_feature_offset = read_f32_2(s, path, "scaling/series_feature_offset", c->nscoped, c->inputs, &rc, e);
    c->scoped_target_scale = read_f32_2(s, path, "scaling/series_target_scale", c->nscoped, c->outputs, &rc, e);
    c->scoped_target_offset = read_f32_2(s, path, "scaling/series_target_offset", c->nscoped, c->outputs, &rc, e);
    c->scoped_target_mean = read_f32_2(s, path, "scaling/series_target_mean", c->nscoped, c->outputs, &rc, e);
    return rc;
}

int sf_checkpoint_read(const char *path, sf_checkpoint *c, sf_model *m, sf_err *e) {
    *c = (sf_checkpoint){0};
    sf_st *s;
    int rc = sf_st_open(&s, path, e);
    if (rc) return rc;
    rc = from_st(s, path, c, m, e);
    sf_st_close(s);
    return rc;
}

static int from_st(const sf_st *s, const char *path, sf_checkpoint *c, sf_model *m, sf_err *e) {
    *c = (sf_checkpoint){0};
    int rc = 0;
    const char *format = sf_st_meta(s, "format");
    char window[64], norm[16];
    uint64_t u[18] = {0};
    if (!format || strcmp(format, FORMAT) != 0)
        rc = sf_err_set(e, SF_EFORMAT, "%s: not a seqfeed checkpoint (format '%s', expected '" FORMAT "')", path,
                        format ? format : "missing");
    if (!rc) rc = meta_text(s, path, "model", c->model, sizeof c->model, e);
    if (!rc) rc = meta_text(s, path, "features", c->features, sizeof c->features, e);
    if (!rc) rc = meta_text(s, path, "targets", c->targets, sizeof c->targets, e);
    if (!rc) rc = meta_text(s, path, "data", c->data, sizeof c->data, e);
    if (!rc) rc = meta_text(s, path, "norm", norm, sizeof norm, e);
    if (!rc) rc = meta_text(s, path, "window", window, sizeof window, e);
    if (!rc) rc = meta_text(s, path, "lr_scaling", c->lr_scaling, sizeof c->lr_scaling, e);
    const char *keys[] = {"inputs", "outputs", "epoch",    "epoch_step", "step", "seed",
                          "epochs", "batch",   "replicas", "pool",       "rows", "epoch_samples"};
    for (int k = 0; k < 12 && !rc; k++) rc = meta_u64(s, path, keys[k], &u[k], e);
    // The pipeline's lanes and blocks decide the batches too; checkpoints
    // from before they were recorded had one of each.
    if (!rc) rc = meta_u64_or(s, path, "lanes", 1, &u[12], e);
    if (!rc) rc = meta_u64_or(s, path, "block_chunks", 1, &u[13], e);
    uint64_t parts = 0;  // 0: from before parts
    if (!rc) rc = meta_u64_or(s, path, "batch_parts", 0, &parts, e);
    if (!rc && parts > SF_MAX_PARTS)
        rc = sf_err_set(e, SF_EFORMAT, "%s: metadata 'batch_parts' is %llu, expected 0 to %u (a damaged or edited "
                        "checkpoint)", path, (unsigned long long)parts, SF_MAX_PARTS);
    c->parts = (uint32_t)parts;
    const char *fp = sf_st_meta(s, "data_fingerprint");
    if (!rc && fp) {
        char *end;
        c->data_fingerprint = strtoull(fp, &end, 16);
        if (!*fp || *end)
            rc = sf_err_set(e, SF_EFORMAT, "%s: metadata 'data_fingerprint' is '%s', expected 16 hex digits", path, fp);
    }
    if (!rc) rc = meta_double(s, path, "val_split", &c->val_split, e);
    if (!rc && sf_st_meta(s, "max_gap")) rc = meta_double(s, path, "max_gap", &c->max_gap, e);  // 0 before it was kept
    uint64_t cv[2] = {0, 0};  // no cross-validation before they were kept
    if (!rc) rc = meta_u64_or(s, path, "folds", 0, &cv[0], e);
    if (!rc) rc = meta_u64_or(s, path, "fold", 0, &cv[1], e);
    if (!rc && (cv[0] || cv[1]) && !(cv[0] >= 2 && cv[0] <= SF_MAX_FOLDS && cv[1] >= 1 && cv[1] <= cv[0]))
        rc = sf_err_set(e, SF_EFORMAT, "%s: metadata 'folds' and 'fold' are %llu and %llu, expected 2 to %u folds and "
                        "a fold from 1 to them (a damaged or edited checkpoint)", path, (unsigned long long)cv[0],
                        (unsigned long long)cv[1], SF_MAX_FOLDS);
    c->folds = (uint32_t)cv[0], c->fold = (uint32_t)cv[1];
    if (!rc && sf_st_meta(s, "pipeline"))  // since --pipeline auto
        rc = meta_text(s, path, "pipeline", c->pipeline, sizeof c->pipeline, e);
    if (!rc && sf_st_meta(s, "time_features"))
        rc = meta_text(s, path, "time_features", c->time_features, sizeof c->time_features, e);
    if (!rc && sf_st_meta(s, "future_features")) {
        rc = meta_text(s, path, "future_features", c->future_features, sizeof c->future_features, e);
        const char *at = rc ? NULL : sf_st_meta(s, "future_inputs");
        bool ok = at && *at && names(c->future_features) != 0 && names(c->future_features) != UINT32_MAX;
        for (c->future_inputs = 0; ok && *at; c->future_inputs++) {  // ascending input indices, comma separated
            char *end;
            errno = 0;
            unsigned long v = strtoul(at, &end, 10);
            ok = end != at && !errno && *at != '-' && (*end == ',' || !*end) && c->future_inputs < SF_MAX_FUTURE_INPUTS &&
                 v < UINT32_MAX && (!c->future_inputs || v > c->future[c->future_inputs - 1]);
            if (ok) c->future[c->future_inputs] = (uint32_t)v, at = *end ? end + 1 : end;
        }
        if (!rc && (!ok || names(c->future_features) > c->future_inputs))
            rc = sf_err_set(e, SF_EFORMAT, "%s: metadata 'future_inputs' is '%s' for future features '%s', expected "
                            "their ascending input indices (a damaged or edited checkpoint)", path,
                            sf_st_meta(s, "future_inputs") ? sf_st_meta(s, "future_inputs") : "missing",
                            c->future_features);
    }
    const char *target = sf_st_meta(s, "target");  // "value" before it was kept
    if (!rc && target && strcmp(target, "value") && strcmp(target, "change"))
        rc = sf_err_set(e, SF_EFORMAT, "%s: metadata 'target' is '%s', expected value or change", path, target);
    c->target_change = target && !strcmp(target, "change");
    if (!rc && sf_st_meta(s, "categories"))
        rc = meta_text(s, path, "categories", c->categories, sizeof c->categories, e);
    // Both kept since a later version: "" before.
    if (!rc && sf_st_meta(s, "data_from_checkpoint_dir"))
        rc = meta_text(s, path, "data_from_checkpoint_dir", c->data_from_dir, sizeof c->data_from_dir, e);
    if (!rc && sf_st_meta(s, "log")) rc = meta_text(s, path, "log", c->log, sizeof c->log, e);
    if (!rc && sf_st_meta(s, "log_from_checkpoint_dir"))
        rc = meta_text(s, path, "log_from_checkpoint_dir", c->log_from_dir, sizeof c->log_from_dir, e);
    if (!rc && sf_st_meta(s, "tensorboard"))
        rc = meta_text(s, path, "tensorboard", c->tensorboard, sizeof c->tensorboard, e);
    if (!rc && sf_st_meta(s, "tensorboard_from_checkpoint_dir"))
        rc = meta_text(s, path, "tensorboard_from_checkpoint_dir", c->tensorboard_from_dir,
                       sizeof c->tensorboard_from_dir, e);
    const char *precision = sf_st_meta(s, "precision");
    if (!rc && precision && *precision && strcmp(precision, "fp32") && strcmp(precision, "tf32") && strcmp(precision, "bf16"))
        rc = sf_err_set(e, SF_EFORMAT, "%s: metadata 'precision' is '%s', expected fp32, tf32 or bf16", path, precision);
    if (!rc && precision) memcpy(c->precision, precision, strlen(precision) + 1);
    if (!rc && !(c->max_gap >= 0 && isfinite(c->max_gap)))
        rc = sf_err_set(e, SF_EFORMAT, "%s: metadata 'max_gap' is %g, expected seconds >= 0", path, c->max_gap);
    if (!rc) rc = validation_record(s, path, c, e);
    if (!rc) rc = meta_double(s, path, "lr", &c->lr, e);
    if (!rc) rc = meta_double(s, path, "epoch_loss", &c->epoch_loss, e);
    if (!rc) rc = meta_double(s, path, "epoch_wait", &c->epoch_wait, e);
    if (!rc) rc = meta_double(s, path, "epoch_seconds", &c->epoch_seconds, e);
    if (!rc) rc = read_schedule(s, path, c, e);
    const char *count_keys[18] = {"inputs", "outputs", "epoch", "epoch_step", "step", "seed", "epochs", "batch",
                                  "replicas", "pool", "rows", "epoch_samples", "lanes", "block_chunks",
                                  "steps_per_epoch", "validation_steps", "log_every", "checkpoint_every"};
    // Kept since a later version: 0 before (an epoch a pass, every
    // validation window, the default log rows, latest at epoch ends only).
    for (int k = 14; k < 18 && !rc; k++) rc = meta_u64_or(s, path, count_keys[k], 0, &u[k], e);
    // Every setting within what train accepts, so that a damaged or edited
    // checkpoint is named here rather than truncated or blamed on a flag.
    static const struct {
        int k;
        uint64_t lo, hi;
    } counts[] = {{14, 0, SF_MAX_EPOCH_STEPS}, {15, 0, SF_MAX_EPOCH_STEPS}, {16, 0, SF_MAX_EPOCH_STEPS},
                  {0, 1, 1u << 20}, {1, 1, 1u << 20}, {6, 0, UINT64_MAX >> 1}, {7, 1, 1u << 20}, {8, 1, 1u << 16},
                  {9, 0, UINT64_MAX >> 8}, {12, 1, 64}, {13, 1, 1u << 20}};
    for (size_t k = 0; !rc && k < sizeof counts / sizeof *counts; k++)
        if (u[counts[k].k] < counts[k].lo || u[counts[k].k] > counts[k].hi)
            rc = sf_err_set(e, SF_EFORMAT, "%s: metadata '%s' is %llu, expected %llu to %llu (a damaged or edited "
                            "checkpoint)", path, count_keys[counts[k].k], (unsigned long long)u[counts[k].k],
                            (unsigned long long)counts[k].lo, (unsigned long long)counts[k].hi);
    c->steps_per_epoch = u[14], c->validation_steps = u[15], c->log_every = u[16], c->checkpoint_every = u[17];
    if (!rc && !(c->val_split >= 0 && c->val_split < 1))
        rc = sf_err_set(e, SF_EFORMAT, "%s: metadata 'val_split' is %g, expected 0 to below 1 (a damaged or edited "
                        "checkpoint)", path, c->val_split);
    if (!rc && !(c->lr >= 1e-10 && c->lr <= 1000))
        rc = sf_err_set(e, SF_EFORMAT, "%s: metadata 'lr' is %g, expected 1e-10 to 1000 (a damaged or edited "
                        "checkpoint)", path, c->lr);
    // Four counts (one step: older checkpoints read as --horizon N-N), or
    // five: the steps ending at the horizon.
    uint64_t w[5] = {0};
    const char *at = window;
    int fields = 4;
    for (int k = 0; k < fields && !rc; k++) {
        char *end;
        errno = 0;
        w[k] = *at >= '0' && *at <= '9' ? strtoull(at, &end, 10) : (end = (char *)at, 0);
        if (k == 3 && *end == ',') fields = 5;
        if (end == at || errno || w[k] > UINT32_MAX || (k != 3 && !w[k]) || *end != (k < fields - 1 ? ',' : 0) ||
            (k == 4 && (w[4] > w[3] || w[4] > SF_MAX_STEPS)))
            rc = sf_err_set(e, SF_EFORMAT, "%s: metadata 'window' is '%s', expected length,stride,sampling_rate,"
                            "horizon[,steps]: counts below 2^32, all but the horizon at least 1, steps at most the "
                            "horizon and %u (a damaged or edited checkpoint)", path, window, SF_MAX_STEPS);
        at = end + 1;
    }
    if (!rc) {
        c->window = (sf_window_spec){(uint32_t)w[0], (uint32_t)w[1], (uint32_t)w[2], (uint32_t)w[3], (uint32_t)w[4]};
        c->inputs = (uint32_t)u[0], c->outputs = (uint32_t)u[1], c->epoch = u[2], c->epoch_step = u[3];
        c->step = u[4], c->seed = u[5], c->epochs = u[6], c->batch = (uint32_t)u[7], c->replicas = (uint32_t)u[8];
        c->pool = u[9], c->rows = u[10], c->epoch_samples = u[11];
        c->lanes = (uint32_t)u[12], c->block_chunks = (uint32_t)u[13];
        bool norm_ok = sf_norm_parse(norm, &c->norm);
        if (!norm_ok)
            rc = sf_err_set(e, SF_EFORMAT, "%s: metadata 'norm' is '%s', expected zscore, minmax or none", path, norm);
        else if (names(c->features) + one_hot_inputs(c->categories) + 2 * names(c->time_features) != c->inputs ||
                 names(c->targets) != c->outputs)
            rc = sf_err_set(e, SF_EFORMAT, "%s: %u inputs and %u outputs, but features '%s', categories '%s', time "
                            "features '%s' and targets '%s'", path, c->inputs, c->outputs, c->features,
                            c->categories, c->time_features, c->targets);
        else if (c->future_inputs && c->future[c->future_inputs - 1] >= c->inputs)
            rc = sf_err_set(e, SF_EFORMAT, "%s: future input %u of %u inputs (a damaged or edited checkpoint)", path,
                            c->future[c->future_inputs - 1], c->inputs);
        else if (has_twice(c->features) || has_twice(c->targets))
            rc = sf_err_set(e, SF_EFORMAT, "%s: a column named twice in features '%s' or targets '%s'", path,
                            c->features, c->targets);
    }
    if (!rc) rc = run_record(path, c, e);
    if (!rc) rc = read_onehot(s, path, c, e);
    if (!rc) {
        sf_err inner = {0};
        // A checkpoint from before --loss: MSE.
        const char *text = sf_st_meta(s, "loss");
        sf_loss loss = {.kind = SF_LOSS_MSE};
        if (text && (rc = sf_loss_parse(&loss, text, &inner)))
            rc = sf_err_set(e, SF_EFORMAT, "%s: metadata 'loss': %s (a damaged or edited checkpoint)", path, inner.msg);
        else if ((rc = sf_model_parse_loss(m, c->model, c->inputs, c->outputs * sf_window_steps(&c->window), &loss,
                                           &inner)) ||
                 (rc = sf_model_set_extra(m, c->future_inputs * sf_window_steps(&c->window) + (uint32_t)c->nonehot,
                                          &inner)) ||
                 (c->embed && (rc = sf_model_set_embedding(m, (uint32_t)c->nonehot, c->embed, &inner))))
            sf_err_set(e, SF_EFORMAT, "%s: %s", path, inner.msg);
    }
    if (!rc) {
        c->nparams = m->nparams;
        c->w = malloc((m->nparams ? m->nparams : 1) * sizeof(float));
        if (!c->w) rc = sf_err_set(e, SF_ENOMEM, "out of memory");
        sf_tensor t[3 * SF_MODEL_MAX_LAYERS];
        uint32_t nt = sf_model_tensors(m, t);
        for (uint32_t k = 0; k < nt && !rc; k++)
            rc = read_tensor(s, path, t[k].name, c->w + t[k].offset, t[k].rank,
                             (const uint64_t[2]){t[k].shape[0], t[k].shape[1]}, e);
        if (!rc && sf_st_find(s, "optimizer/m")) {
            c->m = read_f32(s, path, "optimizer/m", m->nparams, &rc, e);
            c->v = read_f32(s, path, "optimizer/v", m->nparams, &rc, e);
        }
        c->feature_scale = read_f32(s, path, "scaling/feature_scale", c->inputs, &rc, e);
        c->feature_offset = read_f32(s, path, "scaling/feature_offset", c->inputs, &rc, e);
        c->target_scale = read_f32(s, path, "scaling/target_scale", c->outputs, &rc, e);
        c->target_offset = read_f32(s, path, "scaling/target_offset", c->outputs, &rc, e);
        if (sf_st_find(s, "scaling/target_mean"))
            c->target_mean = read_f32(s, path, "scaling/target_mean", c->outputs, &rc, e);
    }
    if (!rc) rc = read_scope(s, path, c, e);
    if (rc) sf_checkpoint_free(c);
    return rc;
}

// ---- a run's directory ----

// Whether name is epoch-NNNN.safetensors (digits, at least 4), with N in *epoch.
static bool epoch_file(const char *name, uint64_t *epoch) {
    size_t len = strlen(name), digits = len > 18 ? len - 18 : 0;
    if (strncmp(name, "epoch-", 6) || digits < 4 || digits > 19 || strcmp(name + 6 + digits, ".safetensors"))
        return false;
    *epoch = 0;
    for (size_t k = 0; k < digits; k++) {
        if (name[6 + k] < '0' || name[6 + k] > '9') return false;
        *epoch = *epoch * 10 + (uint64_t)(name[6 + k] - '0');
    }
    return true;
}

bool sf_checkpoint_run_file(const char *name) {
    uint64_t epoch;
    return !strcmp(name, "latest.safetensors") || !strcmp(name, "best.safetensors") || epoch_file(name, &epoch);
}

// Whether name is a temporary file (sf_temp_create's NAME.tmp.PID.XXXXXX)
// of latest.safetensors, best.safetensors or an epoch's file.
static bool run_temporary(const char *name) {
    const char *tmp = strstr(name, ".safetensors.tmp.");
    if (!tmp) return false;
    char base[64];
    size_t blen = (size_t)(tmp - name) + strlen(".safetensors");
    if (blen >= sizeof base) return false;
    memcpy(base, name, blen);
    base[blen] = 0;
    return sf_checkpoint_run_file(base);
}

void sf_checkpoint_dir_look(const char *dir, sf_checkpoint_dir_info *out) {
    *out = (sf_checkpoint_dir_info){0};
    DIR *d = opendir(dir);
    uint64_t last = 0, epoch;
    for (struct dirent *ent; d && (ent = readdir(d));) {
        if (!strcmp(ent->d_name, "latest.safetensors")) out->latest = true;
        else if (!strcmp(ent->d_name, "best.safetensors")) out->best = true;
        else if (epoch_file(ent->d_name, &epoch) && ++out->epochs && epoch >= last) {
            last = epoch;
            snprintf(out->last_epoch, sizeof out->last_epoch, "%.63s", ent->d_name);  // 37 bytes at most
        }
    }
    if (d) closedir(d);
}

int sf_checkpoint_dir_check(const char *dir, bool resume, sf_err *e) {
    sf_checkpoint_dir_info info;
    sf_checkpoint_dir_look(dir, &info);
    if (!resume && (info.latest || info.epochs || info.best))
        return sf_err_set(e, SF_EUSAGE, "--checkpoint-dir %s holds another run's checkpoints (%s%s%s%s%s): a new run "
                          "there would mix with it (hint: --resume continues that run; a fresh --checkpoint-dir starts "
                          "a new one)", dir, info.latest ? "latest.safetensors" : "",
                          info.latest && (info.best || info.epochs) ? ", " : "", info.best ? "best.safetensors" : "",
                          info.best && info.epochs ? ", " : "", info.last_epoch);
    if (resume && !info.latest && info.epochs)
        return sf_err_set(e, SF_EUSAGE, "--checkpoint-dir %s holds %s but no latest.safetensors, where a run stands: "
                          "--resume has nothing to continue from (hint: copy the epoch's file to %s/latest.safetensors "
                          "to go on from it, or start afresh in another --checkpoint-dir)", dir, info.last_epoch, dir);
    // A kill between the first epoch's best and its latest leaves a best of
    // epoch 1 alone, and the run starts again to the same bytes; a best of a
    // later epoch alone is no run's state (another run's, or latest lost):
    // starting afresh would overwrite it.
    char best[4200], at[32] = "";
    snprintf(best, sizeof best, "%s/best.safetensors", dir);
    sf_st *s = NULL;
    sf_err ignored = {0};
    if (resume && !info.latest && info.best && sf_st_open(&s, best, &ignored) == 0) {
        const char *v = sf_st_meta(s, "epoch");
        snprintf(at, sizeof at, "%s", v ? v : "");
        sf_st_close(s);
    }
    if (resume && !info.latest && info.best && strcmp(at, "1"))
        return sf_err_set(e, SF_EUSAGE, "--checkpoint-dir %s holds best.safetensors (epoch %s) but no "
                          "latest.safetensors, where a run stands: --resume has nothing to continue from, and a run "
                          "started there would overwrite that best (hint: start afresh in another --checkpoint-dir; "
                          "seqfeed predict --checkpoint %s takes the best)", dir, *at ? at : "?", dir);
    return 0;
}

bool sf_checkpoint_dir_owner(const char *dir, char *pid, size_t cap) {
    char path[4200];
    snprintf(path, sizeof path, "%s/seqfeed.lock", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return false;
    bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ssize_t n = held && cap > 1 ? pread(fd, pid, cap - 1, 0) : -1;
    if (cap) pid[n > 0 ? (size_t)n : 0] = 0;
    if (cap) pid[strcspn(pid, "\n")] = 0;
    if (held && cap && !pid[0]) snprintf(pid, cap, "unknown");
    close(fd);
    return held;
}

// path's bytes into a new file to, atomically.
static int copy_file(const char *path, const char *to, sf_err *e) {
    int in = sf_open_file(path, "a checkpoint (.safetensors)", e);
    if (in < 0) return in;
    char *tmp = NULL;
    int out = sf_temp_create(to, &tmp, e), rc = out < 0 ? out : 0;
    char buf[1 << 16];
    for (ssize_t n; !rc && (n = read(in, buf, sizeof buf)) != 0;) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) rc = sf_err_errno(e, SF_EIO, errno, "%s: read failed", path);
        for (ssize_t at = 0; !rc && at < n;) {
            ssize_t w = write(out, buf + at, (size_t)(n - at));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) rc = sf_err_errno(e, SF_EIO, w ? errno : EIO, "%s: write failed", to);
            else at += w;
        }
    }
    if (!rc) rc = sf_temp_commit(out, tmp, to, e);
    if (out >= 0) close(out);
    if (rc && tmp) unlink(tmp);
    free(tmp);
    close(in);
    return rc;
}

int sf_checkpoint_save(const char *dir, const sf_checkpoint *c, const sf_model *m, bool epoch_end, sf_err *e) {
    char latest[4200], epoch[4200], best[4200];
    snprintf(latest, sizeof latest, "%s/latest.safetensors", dir);
    snprintf(epoch, sizeof epoch, "%s/epoch-%04llu.safetensors", dir, (unsigned long long)c->epoch);
    snprintf(best, sizeof best, "%s/best.safetensors", dir);
    // The best first (the directory's rules, checkpoint.h): latest is its copy.
    bool is_best = epoch_end && c->best_epoch && c->best_epoch == c->epoch;
    int rc = is_best ? sf_checkpoint_write(best, c, m, e) : sf_checkpoint_write(latest, c, m, e);
    if (!rc && is_best) rc = copy_file(best, latest, e);
    // The same bytes, read back already.
    if (!rc && epoch_end) rc = copy_file(latest, epoch, e);
    return rc;
}

int sf_checkpoint_dir_recover(const char *dir, uint64_t *completed, uint64_t *best_restored, sf_err *e) {
    *completed = *best_restored = 0;
    // Under the run's lock every temporary file is a dead run's, whatever
    // its PID names (that number may be another process's by now).
    DIR *d = opendir(dir);
    for (struct dirent *ent; d && (ent = readdir(d));) {
        if (!run_temporary(ent->d_name)) continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        if (unlink(path) != 0 && errno != ENOENT) {
            int err = errno;
            closedir(d);
            return sf_err_errno(e, SF_EIO, err, "%s: cannot remove a killed run's temporary file", path);
        }
    }
    if (d) closedir(d);
    char latest[4200], epoch[4200], best[4200];
    snprintf(latest, sizeof latest, "%s/latest.safetensors", dir);
    if (access(latest, F_OK) != 0) return 0;
    sf_st *s;
    int rc = sf_st_open(&s, latest, e);
    if (rc) return rc;
    // At an epoch's end (and only there) latest is written with epoch_step 0.
    const char *step = sf_st_meta(s, "epoch_step"), *at = sf_st_meta(s, "epoch"), *b = sf_st_meta(s, "best_epoch");
    char *end = NULL, *bend = NULL;
    uint64_t n = at ? strtoull(at, &end, 10) : 0, nb = b ? strtoull(b, &bend, 10) : 0;
    bool epoch_end = step && !strcmp(step, "0") && at && *at && !*end && n > 0;
    if (!b || !*b || *bend) nb = 0;
    sf_st_close(s);
    // The best epoch's file is a copy of best's bytes (sf_checkpoint_save),
    // and so is latest at that epoch's end: a best removed comes back from
    // either; without both, the run would train on and fail at its end,
    // where it takes the best's weights.
    snprintf(best, sizeof best, "%s/best.safetensors", dir);
    if (nb && access(best, F_OK) != 0) {
        snprintf(epoch, sizeof epoch, "%s/epoch-%04llu.safetensors", dir, (unsigned long long)nb);
        const char *copy = access(epoch, F_OK) == 0 ? epoch : epoch_end && n == nb ? latest : NULL;
        if (!copy)
            return sf_err_set(e, SF_EUSAGE, "%s records its best epoch %llu, and neither %s nor %s, a copy of it, "
                              "is there: the run would end without the best epoch's weights (hint: put back "
                              "best.safetensors, or start afresh in another --checkpoint-dir)", latest,
                              (unsigned long long)nb, best, epoch);
        if ((rc = copy_file(copy, best, e))) return rc;
        *best_restored = nb;
    }
    if (!epoch_end) return 0;
    snprintf(epoch, sizeof epoch, "%s/epoch-%04llu.safetensors", dir, (unsigned long long)n);
    if (access(epoch, F_OK) == 0) return 0;
    rc = copy_file(latest, epoch, e);
    if (!rc) *completed = n;
    return rc;
}
