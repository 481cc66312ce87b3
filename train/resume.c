// Where a run starts, and what every rank must agree on first: the run's
// record (its settings as a checkpoint keeps them), a resumed run's check
// against its checkpoint, the ranks' agreement on settings and data, and the
// weights every replica starts from.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

// Column names as a list (sf_list_append) into out (cap bytes); -1 when they
// do not fit.
static int join(char *out, size_t cap, const sf_pack_info *in, const uint32_t *cols, uint32_t n) {
    size_t len = 0;
    out[0] = 0;
    for (uint32_t k = 0; k < n; k++)
        if (sf_list_append(out, cap, &len, in->col_names[cols[k]])) return -1;
    return 0;
}

// The bytes a list of names takes at least: each name and a comma between
// (quotes come on top).
static size_t list_bytes(const sf_pack_info *in, const uint32_t *cols, uint32_t n, const int32_t *codes) {
    size_t len = 0;
    for (uint32_t k = 0; k < n; k++)
        if (!(codes && codes[k] != SF_CODE_NONE && k && cols[k - 1] == cols[k]))  // a categorical column once
            len += strlen(in->col_names[cols[k]]) + (len > 0);
    return len;
}

int sf_run_record(sf_checkpoint *c, const sf_fit_opts *o, const sf_pack_info *in, const sf_columns *cols,
                  const sf_model *m, uint32_t replicas, sf_err *e) {
    *c = (sf_checkpoint){0};
    sf_model_format(m, c->model, sizeof c->model);
    uint32_t nplain = cols->nfeatures - 2 * cols->ntime;  // the time features' inputs come from no column
    if (sf_columns_feature_list(cols, in, c->features, sizeof c->features))
        return sf_err_set(e, SF_EINVAL, "the feature columns' names take at least %zu bytes as a list, more than the "
                          "%zu a checkpoint keeps (hint: fewer --features)", list_bytes(in, cols->features, nplain,
                          cols->codes), sizeof c->features - 1);
    if (join(c->targets, sizeof c->targets, in, cols->targets, cols->ntargets))
        return sf_err_set(e, SF_EINVAL, "the target columns' names take at least %zu bytes as a list, more than the "
                          "%zu a checkpoint keeps (hint: fewer --targets)", list_bytes(in, cols->targets,
                          cols->ntargets, NULL), sizeof c->targets - 1);
    // Files packed before the limit was checked may hold longer values.
    for (uint32_t j = 0; j < nplain; j++) {
        const sf_category *cat = cols->codes[j] >= 0 ? sf_pack_category(in, cols->features[j]) : NULL;
        size_t len = cat ? strlen(cat->values[cols->codes[j]]) : 0;
        if (len > SF_PACK_MAX_CATEGORY_VALUE)
            return sf_err_set(e, SF_EUSAGE, "%s: a value of categorical column \"%s\" is %zu bytes long, more than "
                              "the %u a category value may have: no checkpoint could keep it (hint: pack the CSV "
                              "again with shorter values)", o->data, in->col_names[cols->features[j]], len,
                              SF_PACK_MAX_CATEGORY_VALUE);
    }
    if (sf_columns_categories(cols, in, c->categories, sizeof c->categories)) {
        // Counted as sf_columns_categories writes them; pack keeps each
        // column within the limit, so only several columns together (or a
        // file packed before that) get here.
        size_t need = 0, bytes = 0, quotes = 0, items = 0, groups = 0;
        for (uint32_t j = 0; j < nplain; j++) {
            if (cols->codes[j] < 0) continue;
            uint32_t col = cols->features[j];
            const char *v = sf_pack_category(in, col)->values[cols->codes[j]];
            size_t q;
            if (!items) bytes = sf_list_item_bytes(in->col_names[col], strlen(in->col_names[col]), &quotes), items = 1;
            bytes += sf_list_item_bytes(v, strlen(v), &q), quotes += q, items++;
            if (j + 1 == nplain || cols->features[j + 1] != col || cols->codes[j + 1] < 0) {
                need += (groups++ ? 1 : 0) + sf_list_group_bytes(items, bytes, quotes);
                items = 0;
            }
        }
        return sf_err_set(e, SF_EINVAL, "the categorical features' names and values take %zu bytes as a checkpoint "
                          "lists them, more than the %u it keeps for them (hint: %s)", need, SF_PACK_MAX_CATEGORY_LIST,
                          groups > 1 ? "fewer categorical --features"
                                     : "pack the CSV again: pack now refuses such a column, naming its line");
    }
    snprintf(c->data, sizeof c->data, "%s", o->data);
    c->window = o->pipe.window, c->norm = o->norm, c->inputs = cols->nfeatures, c->outputs = cols->ntargets;
    c->feature_scale = cols->feature_scale, c->feature_offset = cols->feature_offset;
    c->target_scale = cols->target_scale, c->target_offset = cols->target_offset, c->target_mean = cols->target_mean;
    c->nscoped = cols->nscoped, c->scoped = cols->scoped;
    c->scoped_feature_scale = cols->scoped_feature_scale, c->scoped_feature_offset = cols->scoped_feature_offset;
    c->scoped_target_scale = cols->scoped_target_scale, c->scoped_target_offset = cols->scoped_target_offset;
    c->scoped_target_mean = cols->scoped_target_mean;
    c->seed = o->seed, c->epochs = o->epochs, c->batch = o->batch, c->replicas = replicas;
    c->val_split = o->val_split, c->lr = o->adam.lr, c->pool = o->pipe.pool, c->rows = in->nrows;
    c->lanes = o->pipe.lanes, c->block_chunks = o->pipe.block_chunks, c->parts = sf_fit_parts(o), c->data_fingerprint = in->fingerprint;
    c->max_gap = o->max_gap, c->folds = o->folds, c->fold = o->fold;
    c->target_change = o->target_change;
    c->early_stop = o->early_stop, c->min_delta = o->min_delta;
    c->steps_per_epoch = o->steps_per_epoch, c->validation_steps = o->validation_steps, c->log_every = o->log_every;
    c->checkpoint_every = o->checkpoint_every;
    sf_columns_time_list(cols, c->time_features, sizeof c->time_features);
    if (sf_columns_future_list(cols, in, c->future_features, sizeof c->future_features))
        return sf_err_set(e, SF_EUSAGE, "--future-features: the names take more than the %zu bytes a checkpoint keeps",
                          sizeof c->future_features - 1);
    c->future_inputs = cols->nfuture;
    if (cols->nfuture) memcpy(c->future, cols->future, cols->nfuture * sizeof *c->future);  // future is NULL without any
    c->nonehot = cols->nonehot, c->onehot = cols->nonehot ? cols->onehot_table : NULL;  // the file's own, in order
    c->embed = m->embed;
    snprintf(c->lr_scaling, sizeof c->lr_scaling, "%s", o->lr_linear ? "linear" : "none");
    snprintf(c->precision, sizeof c->precision, "%s", sf_precision_name(o->precision));
    const sf_lr_schedule *ls = &o->lr_schedule;
    snprintf(c->lr_schedule, sizeof c->lr_schedule, "%s", sf_lr_kind_name(ls->kind));
    c->warmup_steps = ls->warmup_steps, c->lr_total_steps = ls->total_steps, c->lr_patience = ls->patience;
    c->lr_min = ls->lr_min, c->lr_factor = ls->factor;
    c->lr_scale = 1, c->plateau_best = INFINITY, c->plateau_wait = 0;
    if (o->log && snprintf(c->log, sizeof c->log, "%s", o->log) >= (int)sizeof c->log)
        return sf_err_set(e, SF_EUSAGE, "--log: the path is %zu bytes long, more than the %zu a checkpoint keeps",
                          strlen(o->log), sizeof c->log - 1);
    if (o->tensorboard && snprintf(c->tensorboard, sizeof c->tensorboard, "%s", o->tensorboard) >= (int)sizeof c->tensorboard)
        return sf_err_set(e, SF_EUSAGE, "--tensorboard: the path is %zu bytes long, more than the %zu a checkpoint keeps",
                          strlen(o->tensorboard), sizeof c->tensorboard - 1);
    return 0;
}

void sf_run_data_from_dir(char *out, size_t cap, const char *data, const char *dir) {
    out[0] = 0;
    char *file = data ? realpath(data, NULL) : NULL, *from = realpath(dir, NULL);
    size_t fl = from ? strlen(from) : 0;
    char *slashed = from ? malloc(fl + 2) : NULL;  // from with one '/' at its end
    if (file && slashed) {
        snprintf(slashed, fl + 2, "%s%s", from, fl > 1 ? "/" : "");
        // The last directory both share, then a "../" for each of from's below it.
        size_t common = 0, len = 0;
        for (size_t k = 0; file[k] && file[k] == slashed[k]; k++)
            if (file[k] == '/') common = k;
        for (size_t k = common + 1; slashed[k] && len < cap; k++)
            if (slashed[k] == '/') len += (size_t)snprintf(out + len, cap - len, "../");
        if (len < cap) len += (size_t)snprintf(out + len, cap - len, "%s", file + common + 1);
        if (len >= cap) out[0] = 0;  // too long to keep: a resume finds the data from the current directory only
    }
    free(file), free(from), free(slashed);
}

static bool same(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : "") == 0; }

bool sf_precision_same_weights(const char *a, const char *b) {
    return same(a, b) || (!same(a, "bf16") && !same(b, "bf16"));
}

// --resume: settings that decide the run must be the checkpoint's (c and
// its model cm; the run's r, m).
static int check_resume(const sf_checkpoint *c, const sf_model *cm, const sf_checkpoint *r, const sf_model *m,
                        const char *path, sf_err *e) {
    char closs[SF_LOSS_TEXT], loss[SF_LOSS_TEXT];
    sf_loss_format(&cm->loss, closs, sizeof closs);
    sf_loss_format(&m->loss, loss, sizeof loss);
    const char *what = !same(c->model, r->model)           ? "--model"
                       : !same(closs, loss)                ? "--loss"
                       : !same(c->features, r->features)   ? "--features"
                       : !same(c->targets, r->targets)     ? "--targets"
                       : memcmp(&c->window, &r->window, sizeof c->window) ? "the window"
                       : c->norm != r->norm                ? "--norm"
                       : (c->nscoped > 0) != (r->nscoped > 0) ? "--norm-scope"
                       : c->batch != r->batch              ? "--batch-size"
                       : c->seed != r->seed                ? "--seed"
                       : c->val_split != r->val_split      ? "--val-split"
                       : c->folds != r->folds || c->fold != r->fold ? "the fold (--folds)"
                       : (float)c->lr != (float)r->lr      ? "the learning rate"
                       : !same(c->lr_scaling, r->lr_scaling) ? "--lr-scaling"
                       : c->pool != r->pool                ? "--pool (or what --memory-budget left of it)"
                       : c->block_chunks != r->block_chunks ? "--block-chunks"
                       : c->max_gap != r->max_gap          ? "--max-gap"
                       : !same(c->time_features, r->time_features) ? "--time-features"
                       : !same(c->future_features, r->future_features) ? "--future-features"
                       : c->nonehot != r->nonehot || c->embed != r->embed ? "--series-features"
                       : !same(c->categories, r->categories) ? "the data (the values of its categorical columns)"
                       : c->target_change != r->target_change ? "--target"
                       : !same(c->lr_schedule, r->lr_schedule) ? "--lr-schedule"
                       : c->warmup_steps != r->warmup_steps ? "--warmup-steps"
                       // each kind's own settings (checkpoints from before schedules: constant)
                       : strcmp(c->lr_schedule, "constant") && c->lr_min != r->lr_min ? "--lr-min"
                       : !strcmp(c->lr_schedule, "plateau") && c->lr_factor != r->lr_factor ? "--lr-factor"
                       : !strcmp(c->lr_schedule, "plateau") && c->lr_patience != r->lr_patience ? "--lr-patience"
                       : !strcmp(c->lr_schedule, "plateau") && c->min_delta != r->min_delta ? "--min-delta"
                       : c->steps_per_epoch != r->steps_per_epoch ? "--steps-per-epoch"
                       : c->validation_steps != r->validation_steps ? "--validation-steps"
                       // a checkpoint from before precision was kept: any (docs/TRAINING.md)
                       // tf32 <-> fp32: both fp32 weights, a change the user asked for (cli/cmd_train.c)
                       : c->precision[0] && !sf_precision_same_weights(c->precision, r->precision) ? "--precision"
                       : c->rows != r->rows                ? "the data (its row count)"
                       : c->data_fingerprint && c->data_fingerprint != r->data_fingerprint
                           ? "the data (its content or layout: another file, or the CSV packed again)"
                                                           : NULL;
    if (what)
        return sf_err_set(e, SF_EUSAGE, "%s: %s differs from the checkpoint's (hint: resume with the same settings, "
                          "or start afresh in another --checkpoint-dir)", path, what);
    return 0;
}

// Every rank must train the same run: a rank started with other settings
// (or on another file) would go its own way without a word.
int sf_run_agree(sf_ranks *ranks, const sf_checkpoint *c, const sf_fit_opts *o, uint32_t replicas,
                 const sf_pack_info *in, sf_err *e) {
    if (!ranks) return 0;
    struct {
        sf_window_spec window;
        uint32_t norm, precision, rnn_algo, late_loss, cuda_graph, overlap_reduce, batch, replicas, lanes, block_chunks;
        uint64_t seed, epochs, pool, rows, checkpoint_every, max_steps, memory_budget;
        double val_split, lr, max_gap;
        // which files each rank writes or gathers into (rank 0 writes them)
        uint32_t lr_linear, resume, checkpoints, log, trace, report, target_change;
        uint64_t early_stop;  // when the run stops: every rank at the same epoch
        uint64_t lr_kind, warmup_steps, lr_total_steps, lr_patience;  // the lr's schedule
        double lr_min, lr_factor, min_delta;
        uint64_t steps_per_epoch, validation_steps, log_every;
    } k;
    memset(&k, 0, sizeof k);  // padding too
    k.window = c->window, k.norm = c->norm, k.precision = o->precision, k.rnn_algo = o->rnn_algo;
    k.late_loss = o->late_loss, k.cuda_graph = o->cuda_graph;
    k.overlap_reduce = o->overlap_reduce;
    k.batch = c->batch, k.replicas = replicas;
    k.lanes = c->lanes, k.block_chunks = c->block_chunks;
    k.seed = c->seed, k.epochs = c->epochs, k.pool = c->pool, k.rows = c->rows, k.checkpoint_every = o->checkpoint_every;
    k.max_steps = o->max_steps, k.memory_budget = o->memory_budget, k.val_split = c->val_split, k.lr = c->lr;
    k.max_gap = c->max_gap, k.target_change = c->target_change;
    k.lr_linear = o->lr_linear, k.resume = o->resume, k.checkpoints = o->checkpoint_dir != NULL, k.log = o->log != NULL;
    k.trace = o->trace != NULL, k.report = o->report != NULL;
    k.early_stop = o->early_stop, k.min_delta = o->min_delta;
    k.lr_kind = o->lr_schedule.kind, k.warmup_steps = o->lr_schedule.warmup_steps;
    k.lr_total_steps = o->lr_schedule.total_steps, k.lr_patience = o->lr_schedule.patience;
    k.lr_min = o->lr_schedule.lr_min, k.lr_factor = o->lr_schedule.factor;
    k.steps_per_epoch = o->steps_per_epoch, k.validation_steps = o->validation_steps, k.log_every = o->log_every;
    uint32_t crc = sf_crc32c(0, &k, sizeof k);
    // The files written by name: a rank given another --log would have it ignored without a word.
    char loss[SF_LOSS_TEXT];
    sf_loss_format(&o->loss, loss, sizeof loss);
    const char *text[] = {c->model, loss, c->features, c->targets, c->time_features, c->future_features, c->categories,
                          o->backend->name,
                          o->checkpoint_dir ? o->checkpoint_dir : "", o->log ? o->log : "", o->trace ? o->trace : "",
                          o->report ? o->report : "", o->tensorboard ? o->tensorboard : ""};
    for (size_t i = 0; i < sizeof text / sizeof *text; i++) crc = sf_crc32c(crc, text[i], strlen(text[i]) + 1);
    // The data: its layout decides the blocks and shards, and the scaling
    // comes from the file's statistics, so another file of the same shape
    // shows there.
    uint64_t layout[4] = {in->chunk_rows, in->nchunks, in->nseries, in->fingerprint};
    crc = sf_crc32c(crc, layout, sizeof layout);
    for (uint64_t i = 0; i < in->nseries; i++) {
        uint64_t rows[2] = {in->series[i].first_row, in->series[i].rows};
        crc = sf_crc32c(crc, rows, sizeof rows);
    }
    crc = sf_crc32c(crc, c->feature_scale, c->inputs * sizeof(float));
    crc = sf_crc32c(crc, c->feature_offset, c->inputs * sizeof(float));
    crc = sf_crc32c(crc, c->target_scale, c->outputs * sizeof(float));
    crc = sf_crc32c(crc, c->target_offset, c->outputs * sizeof(float));
    if (c->nscoped) {  // --norm-scope series: each series' scaling too
        crc = sf_crc32c(crc, &c->nscoped, sizeof c->nscoped);
        crc = sf_crc32c(crc, c->scoped_feature_scale, c->nscoped * c->inputs * sizeof(float));
        crc = sf_crc32c(crc, c->scoped_feature_offset, c->nscoped * c->inputs * sizeof(float));
        crc = sf_crc32c(crc, c->scoped_target_scale, c->nscoped * c->outputs * sizeof(float));
        crc = sf_crc32c(crc, c->scoped_target_offset, c->nscoped * c->outputs * sizeof(float));
    }
    return sf_ranks_agree(ranks, &crc, sizeof crc, "the run's settings (model, loss, columns, window, batch, replicas, "
                          "pipeline lanes and blocks, backend, precision, seed, epochs, steps per epoch, "
                          "validation steps, log rows, learning rate and its schedule, memory budget, the files "
                          "written: --checkpoint-dir, --log, --trace, --report, and the data's layout and "
                          "statistics)", e);
}

// Where a resumed run stands, as rank 0 read it from the checkpoint (only
// rank 0 need see the checkpoint directory) and sends it to every rank.
typedef struct {
    int64_t rc;  // rank 0's error, whose message follows
    int64_t found, adam;
    uint64_t epoch, epoch_step, step, epoch_samples;
    double epoch_loss, epoch_wait, epoch_seconds;
    uint32_t parts;
    uint64_t best_epoch, since_improved;  // the validation record
    double best_val_loss, improved_val_loss;
    uint64_t lr_total_steps, plateau_wait;
    double lr_scale, plateau_best;
    char msg[1024];
} resume_head;

int sf_run_start_weights(sf_trainer *t, const sf_model *m, const sf_checkpoint *run, const sf_fit_opts *o,
                         bool talk, sf_run_start *st, sf_err *e) {
    *st = (sf_run_start){0};
    int rank = sf_ranks_rank(o->ranks);
    size_t n = m->nparams ? m->nparams : 1;
    char latest[4200] = "";
    if (o->checkpoint_dir) snprintf(latest, sizeof latest, "%s/latest.safetensors", o->checkpoint_dir);
    resume_head h = {0};
    sf_checkpoint old = {0};
    bool read = false;
    if (rank == 0 && o->resume && latest[0] && access(latest, F_OK) == 0) {
        sf_model om;
        read = !(h.rc = sf_checkpoint_read(latest, &old, &om, e));
        if (read) h.rc = check_resume(&old, &om, run, m, latest, e);
        if (h.rc) snprintf(h.msg, sizeof h.msg, "%s", e->msg);
        h.found = read, h.adam = read && old.m && old.v;
        h.epoch = old.epoch, h.epoch_step = old.epoch_step, h.step = old.step, h.parts = old.parts;
        h.epoch_loss = old.epoch_loss, h.epoch_samples = old.epoch_samples, h.epoch_wait = old.epoch_wait;
        h.epoch_seconds = old.epoch_seconds;
        h.best_epoch = old.best_epoch, h.since_improved = old.since_improved;
        h.best_val_loss = old.best_val_loss, h.improved_val_loss = old.improved_val_loss;
        h.lr_total_steps = old.lr_total_steps, h.plateau_wait = old.plateau_wait;
        h.lr_scale = old.lr_scale, h.plateau_best = old.plateau_best;
    }
    int rc = sf_ranks_bcast(o->ranks, &h, sizeof h, "the checkpoint's position", e);
    if (!rc && h.rc) rc = rank == 0 ? (int)h.rc : sf_err_set(e, (int)h.rc, "rank 0: %s", h.msg);
    float *w = read ? old.w : malloc(n * sizeof *w);
    float *mm = h.adam ? (read ? old.m : malloc(n * sizeof *mm)) : NULL;
    float *v = h.adam ? (read ? old.v : malloc(n * sizeof *v)) : NULL;
    if (!rc && (!w || (h.adam && (!mm || !v)))) rc = sf_err_set(e, SF_ENOMEM, "out of memory");
    if (!rc && h.found) {
        rc = sf_ranks_bcast(o->ranks, w, n * sizeof *w, "the checkpoint's weights", e);
        if (!rc && h.adam) rc = sf_ranks_bcast(o->ranks, mm, n * sizeof *mm, "the checkpoint's Adam state", e);
        if (!rc && h.adam) rc = sf_ranks_bcast(o->ranks, v, n * sizeof *v, "the checkpoint's Adam state", e);
        if (!rc) rc = sf_trainer_load(t, w, mm, v, h.step, e);
        // The interrupted epoch's totals so far: its line and log row stay whole.
        *st = (sf_run_start){.resumed = !rc, .epoch = h.epoch, .epoch_step = h.epoch_step, .step = h.step,
                             .loss_sum = h.epoch_loss, .wait = h.epoch_wait, .seconds = h.epoch_seconds,
                             .samples = h.epoch_samples, .best_epoch = h.best_epoch,
                             .since_improved = h.since_improved, .best_val_loss = h.best_val_loss,
                             .improved_val_loss = h.improved_val_loss, .lr_total_steps = h.lr_total_steps,
                             .plateau = {.scale = h.lr_scale, .best = h.plateau_best,
                                         .wait = h.plateau_wait}};
        // The position is one in the sequence of global batches, the same
        // for any replicas and ranks; a checkpoint from before the batch had
        // parts stands in a sequence this run cannot give again, so the
        // interrupted epoch starts again.
        if (!rc && h.parts != run->parts && st->epoch_step > 0) {
            if (talk)
                fprintf(stderr, "resume: the checkpoint is from before the global batch was cut into parts (an "
                        "older seqfeed, whose batches depended on the replicas): epoch %llu starts again from its "
                        "beginning (weights, Adam state and step count carry on)\n", (unsigned long long)st->epoch + 1);
            st->epoch_step = 0, st->loss_sum = 0, st->samples = 0, st->wait = 0, st->seconds = 0;
        }
    } else if (!rc) {
        if (o->resume && talk)
            fprintf(stderr, "resume: no checkpoint at %s, starting from the beginning\n",
                    latest[0] ? latest : "(no --checkpoint-dir)");
        sf_model_init(m, w, o->seed);
        rc = sf_trainer_load(t, w, NULL, NULL, 0, e);
        st->plateau = (sf_plateau){.scale = 1, .best = INFINITY};
    }
    if (read) sf_checkpoint_free(&old);
    else free(w), free(mm), free(v);
    return rc;
}
