// The fit loop: the pipeline feeds the replicas, a step hook keeps the
// books (progress, validation, checkpoints, the CSV log), and a resumed run
// takes up exactly where its checkpoint stood.
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train.h"

typedef struct {
    const sf_fit_opts *o;
    sf_fit_result *res;
    sf_model model;
    sf_pack *pack;
    sf_columns cols;
    sf_plan *val_plan;
    sf_pipe *pipe;
    sf_batch *cur;  // per replica: the batch it holds
    sf_trainer *tr;
    sf_trace *trace;
    sf_checkpoint ck;  // the run's settings; weights filled in when written
    uint32_t R, replica_batch;
    sf_ranks *ranks;
    int rank, nranks;
    uint32_t G;        // replicas over all ranks (R on each)
    bool talk;         // progress lines: rank 0's, when asked for
    uint64_t epoch, epoch_step, steps_per_epoch, run_steps;
    double loss_sum, wait, epoch_t0, run_t0, bar_t;
    uint64_t samples, run_samples;
    double run_wait;
    FILE *log;
    bool tty;
} fit;

static int pipe_next(void *arg, uint32_t r, sf_batch *b, sf_err *e) {
    fit *f = arg;
    if (f->o->resident && f->cur[r].count) {  // the batch it holds, again
        *b = f->cur[r];
        return 1;
    }
    int rc = sf_pipe_next_batch(f->pipe, r, &f->cur[r], e);
    if (rc == 1) *b = f->cur[r];
    return rc;
}

static void pipe_release(void *arg, uint32_t r, const sf_batch *b) {
    fit *f = arg;
    if (!f->o->resident) sf_pipe_release(f->pipe, r, b);  // a resident batch is never given back
}

typedef struct {
    fit *f;
    float *pred;
    double sum;
    uint64_t n, batches;
} eval_acc;

static int eval_batch(void *arg, const float *x, const float *y, const uint64_t *ids, uint32_t count, sf_err *e) {
    eval_acc *a = arg;
    (void)ids;
    if (a->batches++ % (uint64_t)a->f->nranks != (uint64_t)a->f->rank) return 0;  // each rank its share
    int rc = sf_trainer_predict(a->f->tr, a->pred, x, count, e);
    if (!rc) a->sum += sf_mse_sum(a->pred, y, count, a->f->model.outputs), a->n += count;
    return rc;
}

// The validation windows' mean loss with replica 0's weights (NAN without
// any); ranks take turns at batches and sum.
static int validate(fit *f, double *loss, sf_err *e) {
    *loss = NAN;
    if (!f->val_plan || sf_plan_windows(f->val_plan) == 0) return 0;
    eval_acc a = {f, malloc((size_t)f->replica_batch * f->model.outputs * sizeof(float)), 0, 0, 0};
    if (!a.pred) return sf_err_set(e, SF_ENOMEM, "out of memory");
    int rc = sf_windows_in_order(f->pack, f->val_plan, &f->cols, f->replica_batch, eval_batch, &a, e);
    free(a.pred);
    double v[2] = {a.sum, (double)a.n};
    if (!rc) rc = sf_ranks_sum_f64(f->ranks, v, 2, "the validation loss", e);
    if (!rc && v[1] > 0) *loss = v[0] / v[1];
    return rc;
}

// Writes DIR/latest.safetensors (and DIR/epoch-NNNN.safetensors at an
// epoch's end), each atomically; rank 0 only.
static int checkpoint(fit *f, bool epoch_end, sf_err *e) {
    if (!f->o->checkpoint_dir || f->rank != 0) return 0;
    size_t n = f->model.nparams;
    f->ck.w = malloc(n * sizeof(float)), f->ck.m = malloc(n * sizeof(float)), f->ck.v = malloc(n * sizeof(float));
    int rc = f->ck.w && f->ck.m && f->ck.v ? sf_trainer_save(f->tr, f->ck.w, f->ck.m, f->ck.v, e)
                                          : sf_err_set(e, SF_ENOMEM, "out of memory for a checkpoint");
    f->ck.epoch = f->epoch, f->ck.epoch_step = f->epoch_step;
    // At an epoch's end (epoch_step 0) the next epoch has nothing yet.
    bool partial = f->epoch_step > 0;
    f->ck.epoch_loss = partial ? f->loss_sum : 0, f->ck.epoch_samples = partial ? f->samples : 0;
    f->ck.epoch_wait = partial ? f->wait : 0, f->ck.epoch_seconds = partial ? sf_now() - f->epoch_t0 : 0;
    char path[4200];
    if (!rc) {
        snprintf(path, sizeof path, "%s/latest.safetensors", f->o->checkpoint_dir);
        rc = sf_checkpoint_write(path, &f->ck, &f->model, e);
    }
    if (!rc && epoch_end) {
        snprintf(path, sizeof path, "%s/epoch-%04llu.safetensors", f->o->checkpoint_dir,
                 (unsigned long long)f->epoch);
        rc = sf_checkpoint_write(path, &f->ck, &f->model, e);
    }
    free(f->ck.w), free(f->ck.m), free(f->ck.v);
    f->ck.w = f->ck.m = f->ck.v = NULL;
    return rc;
}

static void progress_bar(fit *f, const sf_step_info *s) {
    double now = sf_now();
    if (!f->tty || (now - f->bar_t < 0.1 && f->epoch_step != f->steps_per_epoch)) return;
    f->bar_t = now;
    double el = now - f->epoch_t0, rate = f->samples / (el > 0 ? el : 1e-9);
    double eta = f->epoch_step ? el / f->epoch_step * (f->steps_per_epoch - f->epoch_step) : 0;
    int width = 24, done = (int)(width * f->epoch_step / f->steps_per_epoch);
    fprintf(stderr, "\r%6llu/%llu [%.*s%s%.*s] ETA %4.0f s - loss %.6f - %.0f samples/s\033[K",
            (unsigned long long)f->epoch_step, (unsigned long long)f->steps_per_epoch, done,
            "========================", done < width ? ">" : "", width - done - (done < width),
            "........................", eta, f->loss_sum / (double)f->samples, rate);
    (void)s;
}

static int on_step(void *arg, const sf_step_info *s, sf_err *e) {
    fit *f = arg;
    const sf_fit_opts *o = f->o;
    f->ck.step = s->step;
    f->loss_sum += s->loss * s->samples;  // back to a sum of row losses
    f->samples += s->samples, f->run_samples += s->samples;
    f->wait += s->input_wait, f->run_wait += s->input_wait;
    f->epoch_step++, f->run_steps++;
    if (f->run_steps == o->warmup_steps) f->run_t0 = sf_now(), f->run_samples = 0, f->run_wait = 0;
    if (f->talk) progress_bar(f, s);
    int rc = 0;
    bool stop = false;
    if (f->epoch_step == f->steps_per_epoch) {
        double el = sf_now() - f->epoch_t0, val;
        if ((rc = validate(f, &val, e))) return rc;
        double loss = f->loss_sum / (double)f->samples, wait = f->wait / (f->G * (el > 0 ? el : 1e-9));
        if (f->talk)
            fprintf(stderr, "%sepoch %llu/%llu - %llu steps - %.1f s - loss %.6f - val_loss %.6f - %.0f samples/s - "
                    "input wait %.1f%%\n", f->tty ? "\r\033[K" : "", (unsigned long long)f->epoch + 1,
                    (unsigned long long)o->epochs, (unsigned long long)f->steps_per_epoch, el, loss, val,
                    f->samples / el, 100 * wait);
        if (f->log) {
            fprintf(f->log, "%llu,%.9g,%.9g,%.1f,%.4f\n", (unsigned long long)f->epoch + 1, loss, val,
                    f->samples / el, wait);
            fflush(f->log);
        }
        f->res->loss = loss, f->res->val_loss = val, f->res->epochs++;
        f->epoch++, f->epoch_step = 0;
        if ((rc = checkpoint(f, true, e))) return rc;
        f->loss_sum = 0, f->samples = 0, f->wait = 0, f->epoch_t0 = sf_now();
        stop = f->epoch >= o->epochs;
    } else if (o->checkpoint_every && s->step % o->checkpoint_every == 0) {
        if ((rc = checkpoint(f, false, e))) return rc;
    }
    if (!stop && ((o->max_steps && f->run_steps >= o->max_steps) || s->interrupted)) {
        stop = true;
        f->res->interrupted = s->interrupted;
        if (f->epoch_step && (rc = checkpoint(f, false, e))) return rc;  // at an epoch's end it is written
    }
    return stop ? 1 : 0;
}

// The run's HTML report: replica 0's steps and the settings.
static int report(fit *f, const sf_replica_profile *prof, sf_err *e) {
    const sf_fit_opts *o = f->o;
    float (*steps)[SF_PHASES] = malloc(65536 * sizeof *steps);
    if (!steps) return sf_err_set(e, SF_ENOMEM, "out of memory for the report");
    size_t n = sf_trainer_steps(f->tr, 0, steps, 65536);
    char window[64], batch[64], replicas[48], seed[32];
    snprintf(window, sizeof window, "%u rows, stride %u, sampling rate %u, horizon %u", o->window.length,
             o->window.stride, o->window.sampling_rate, o->window.horizon);
    snprintf(batch, sizeof batch, "%u (%u per replica)", o->batch, f->replica_batch);
    snprintf(replicas, sizeof replicas, f->nranks > 1 ? "%u (%d ranks x %u)" : "%u", f->G, f->nranks, f->R);
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
    const char *settings[] = {"data", o->data, "model", f->ck.model, "features", f->ck.features, "targets",
                              f->ck.targets, "window", window, "batch", batch, "replicas", replicas, "backend",
                              o->backend->name, "precision", o->precision == SF_PRECISION_TF32 ? "tf32" : "fp32",
                              "seed", seed, NULL};
    int rc = sf_report_write(o->report, (const float (*)[SF_PHASES])steps, n, prof, f->G, &f->res->diagnosis, settings,
                             e);
    free(steps);
    return rc;
}

// The run's step-time breakdown against the pipeline's counters, into the
// result (on stderr, and in the report): every rank's, on rank 0.
static int diagnose(fit *f, uint32_t decoders, sf_err *e) {
    size_t pr = f->R * sizeof(sf_replica_profile), pp = f->R * sizeof(sf_pipe_replica_stats);
    size_t part = pr + pp + sizeof(sf_pipe_stats), *lens = calloc((size_t)f->nranks, sizeof *lens);
    char *mine = malloc(part), *all = NULL;
    int rc = mine && lens ? 0 : sf_err_set(e, SF_ENOMEM, "out of memory");
    if (!rc) {
        for (uint32_t r = 0; r < f->R; r++) sf_trainer_profile(f->tr, r, (sf_replica_profile *)mine + r);
        sf_pipe_get_stats(f->pipe, (sf_pipe_stats *)(mine + pr + pp), (sf_pipe_replica_stats *)(mine + pr));
        rc = sf_ranks_gather(f->ranks, mine, part, (void **)&all, lens, "the replicas' profiles", e);
    }
    sf_replica_profile *prof = NULL;
    sf_pipe_replica_stats *prs = NULL;
    sf_pipe_stats *ps = NULL;
    if (!rc && f->rank == 0) {
        prof = malloc(f->G * sizeof *prof), prs = malloc(f->G * sizeof *prs), ps = malloc(f->nranks * sizeof *ps);
        if (!prof || !prs || !ps) rc = sf_err_set(e, SF_ENOMEM, "out of memory");
        for (int k = 0; !rc && k < f->nranks; k++) {
            const char *at = all + part * k;
            memcpy(prof + f->R * k, at, pr), memcpy(prs + f->R * k, at + pr, pp), memcpy(ps + k, at + pr + pp, sizeof *ps);
        }
        if (!rc) {
            sf_diagnose(&f->res->diagnosis, prof, f->G, ps, (uint32_t)f->nranks, prs, decoders);
            if (f->talk) sf_profile_print(stderr, prof, f->G, &f->res->diagnosis);
            if (f->o->profile_out) sf_profile_print(f->o->profile_out, prof, f->G, &f->res->diagnosis);
            if (f->o->report) rc = report(f, prof, e);
        }
    }
    free(mine), free(lens), free(all), free(prof), free(prs), free(ps);
    return rc;
}

// The run's trace, every rank a process in it, written by rank 0.
static int write_trace(fit *f, sf_err *e) {
    char name[32], *json = NULL, *all = NULL;
    size_t len = 0, *lens = calloc((size_t)f->nranks, sizeof *lens);
    snprintf(name, sizeof name, f->nranks > 1 ? "seqfeed rank %d" : "seqfeed", f->rank);
    int rc = lens ? sf_trace_dump(f->trace, f->rank + 1, name, &json, &len, e) : sf_err_set(e, SF_ENOMEM, "out of memory");
    if (!rc) rc = sf_ranks_gather(f->ranks, json, len, (void **)&all, lens, "the trace", e);
    size_t total = 0;
    for (int k = 0; !rc && f->rank == 0 && k < f->nranks; k++) total += lens[k];
    if (!rc && f->rank == 0) rc = sf_trace_write_parts(f->o->trace, all, total, e);
    free(json), free(all), free(lens);
    return rc;
}

static bool same(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : "") == 0; }

// --resume: settings that decide the run must be the checkpoint's.
static int check_resume(const fit *f, const sf_checkpoint *c, const char *path, sf_err *e) {
    const sf_checkpoint *r = &f->ck;
    const char *what = !same(c->model, r->model)           ? "--model"
                       : !same(c->features, r->features)   ? "--features"
                       : !same(c->targets, r->targets)     ? "--targets"
                       : memcmp(&c->window, &r->window, sizeof c->window) ? "the window"
                       : c->norm != r->norm                ? "--norm"
                       : c->batch != r->batch              ? "--batch-size"
                       : c->seed != r->seed                ? "--seed"
                       : c->val_split != r->val_split      ? "--val-split"
                       : (float)c->lr != (float)r->lr      ? "the learning rate"
                       : !same(c->lr_scaling, r->lr_scaling) ? "--lr-scaling"
                       : c->pool != r->pool                ? "--pool"
                       : c->rows != r->rows                ? "the data (its row count)"
                                                           : NULL;
    if (what)
        return sf_err_set(e, SF_EINVAL, "%s: %s differs from the checkpoint's (hint: resume with the same settings, "
                          "or start afresh in another --checkpoint-dir)", path, what);
    return 0;
}

// Every rank must train the same run: a rank started with other settings
// (or on another file) would go its own way without a word.
static int agree_settings(fit *f, sf_err *e) {
    if (!f->ranks) return 0;
    const sf_checkpoint *c = &f->ck;
    const sf_fit_opts *o = f->o;
    struct {
        sf_window_spec window;
        int norm, precision;
        uint32_t batch, replicas;
        uint64_t seed, epochs, pool, rows, checkpoint_every, max_steps, memory_budget;
        double val_split, lr;
        // which files each rank writes or gathers into (rank 0 writes them)
        uint32_t lr_linear, resume, checkpoints, log, trace, report;
    } k;
    memset(&k, 0, sizeof k);  // padding too
    k.window = c->window, k.norm = c->norm, k.precision = o->precision, k.batch = c->batch, k.replicas = f->R;
    k.seed = c->seed, k.epochs = c->epochs, k.pool = c->pool, k.rows = c->rows, k.checkpoint_every = o->checkpoint_every;
    k.max_steps = o->max_steps, k.memory_budget = o->memory_budget, k.val_split = c->val_split, k.lr = c->lr;
    k.lr_linear = o->lr_linear, k.resume = o->resume, k.checkpoints = o->checkpoint_dir != NULL, k.log = o->log != NULL;
    k.trace = o->trace != NULL, k.report = o->report != NULL;
    uint32_t crc = sf_crc32c(0, &k, sizeof k);
    const char *text[] = {c->model, c->features, c->targets, o->backend->name};
    for (size_t i = 0; i < sizeof text / sizeof *text; i++) crc = sf_crc32c(crc, text[i], strlen(text[i]) + 1);
    // The data: its layout decides the blocks and shards, and the scaling
    // comes from the file's statistics, so another file of the same shape
    // shows there.
    const sf_pack_info *in = sf_pack_get_info(f->pack);
    uint64_t layout[3] = {in->chunk_rows, in->nchunks, in->nseries};
    crc = sf_crc32c(crc, layout, sizeof layout);
    for (uint64_t i = 0; i < in->nseries; i++) {
        uint64_t rows[2] = {in->series[i].first_row, in->series[i].rows};
        crc = sf_crc32c(crc, rows, sizeof rows);
    }
    crc = sf_crc32c(crc, c->feature_scale, c->inputs * sizeof(float));
    crc = sf_crc32c(crc, c->feature_offset, c->inputs * sizeof(float));
    crc = sf_crc32c(crc, c->target_scale, c->outputs * sizeof(float));
    crc = sf_crc32c(crc, c->target_offset, c->outputs * sizeof(float));
    return sf_ranks_agree(f->ranks, &crc, sizeof crc, "the run's settings (model, columns, window, batch, replicas, "
                         "backend, precision, seed, epochs, learning rate, memory budget, the files written, and "
                         "the data's layout and statistics)", e);
}

// Where a resumed run stands, as rank 0 read it from the checkpoint (only
// rank 0 need see the checkpoint directory) and sends it to every rank.
typedef struct {
    int64_t rc;  // rank 0's error, whose message follows
    int64_t found, adam;
    uint64_t epoch, epoch_step, step, epoch_samples;
    double epoch_loss, epoch_wait, epoch_seconds;
    uint32_t replicas;
    char msg[1024];
} resume_head;

// The weights every replica starts from: the checkpoint's when resuming,
// else Keras' initialisers (the same on every rank, from the seed).
static int start_weights(fit *f, bool *resumed, double *seconds, sf_err *e) {
    const sf_fit_opts *o = f->o;
    size_t n = f->model.nparams ? f->model.nparams : 1;
    char latest[4200] = "";
    if (o->checkpoint_dir) snprintf(latest, sizeof latest, "%s/latest.safetensors", o->checkpoint_dir);
    resume_head h = {0};
    sf_checkpoint old = {0};
    bool read = false;
    if (f->rank == 0 && o->resume && latest[0] && access(latest, F_OK) == 0) {
        sf_model om;
        read = !(h.rc = sf_checkpoint_read(latest, &old, &om, e));
        if (read) h.rc = check_resume(f, &old, latest, e);
        if (h.rc) snprintf(h.msg, sizeof h.msg, "%s", e->msg);
        h.found = read, h.adam = read && old.m && old.v;
        h.epoch = old.epoch, h.epoch_step = old.epoch_step, h.step = old.step, h.replicas = old.replicas;
        h.epoch_loss = old.epoch_loss, h.epoch_samples = old.epoch_samples, h.epoch_wait = old.epoch_wait;
        h.epoch_seconds = old.epoch_seconds;
    }
    int rc = sf_ranks_bcast(f->ranks, &h, sizeof h, "the checkpoint's position", e);
    if (!rc && h.rc) rc = f->rank == 0 ? (int)h.rc : sf_err_set(e, (int)h.rc, "rank 0: %s", h.msg);
    float *w = read ? old.w : malloc(n * sizeof *w);
    float *m = h.adam ? (read ? old.m : malloc(n * sizeof *m)) : NULL, *v = h.adam ? (read ? old.v : malloc(n * sizeof *v)) : NULL;
    if (!rc && (!w || (h.adam && (!m || !v)))) rc = sf_err_set(e, SF_ENOMEM, "out of memory");
    if (!rc && h.found) {
        rc = sf_ranks_bcast(f->ranks, w, n * sizeof *w, "the checkpoint's weights", e);
        if (!rc && h.adam) rc = sf_ranks_bcast(f->ranks, m, n * sizeof *m, "the checkpoint's Adam state", e);
        if (!rc && h.adam) rc = sf_ranks_bcast(f->ranks, v, n * sizeof *v, "the checkpoint's Adam state", e);
        if (!rc) rc = sf_trainer_load(f->tr, w, m, v, h.step, e);
        f->epoch = h.epoch, f->epoch_step = h.epoch_step, f->ck.step = h.step;
        // The interrupted epoch's totals so far: its line and log row stay whole.
        f->loss_sum = h.epoch_loss, f->samples = h.epoch_samples, f->wait = h.epoch_wait;
        *seconds = h.epoch_seconds;
        *resumed = !rc;
        // Other replica counts share an epoch's windows out otherwise: the
        // interrupted epoch's position has no meaning, so it starts again.
        if (!rc && h.replicas != f->G && f->epoch_step > 0) {
            if (f->talk)
                fprintf(stderr, "resume: the checkpoint was written by %u replicas and this run has %u: epoch %llu "
                        "starts again from its beginning (weights, Adam state and step count carry on)\n", h.replicas,
                        f->G, (unsigned long long)f->epoch + 1);
            f->epoch_step = 0, f->loss_sum = 0, f->samples = 0, f->wait = 0, *seconds = 0;
        }
    } else if (!rc) {
        if (o->resume && f->talk)
            fprintf(stderr, "resume: no checkpoint at %s, starting from the beginning\n", latest[0] ? latest : "(no "
                    "--checkpoint-dir)");
        sf_model_init(&f->model, w, o->seed);
        rc = sf_trainer_load(f->tr, w, NULL, NULL, 0, e);
    }
    if (read) sf_checkpoint_free(&old);
    else free(w), free(m), free(v);
    return rc;
}

static void fit_close(fit *f) {
    sf_pipe_close(f->pipe);  // first: its slots may be the trainer's staging
    sf_trainer_close(f->tr);
    sf_trace_close(f->trace);
    sf_plan_free(f->val_plan);
    sf_columns_free(&f->cols);
    sf_pack_close(f->pack);
    if (f->log) fclose(f->log);
    free(f->cur);
}

static int join(char *out, size_t cap, const sf_pack_info *in, const uint32_t *cols, uint32_t n) {
    size_t len = 0;
    out[0] = 0;
    for (uint32_t k = 0; k < n; k++) {
        int w = snprintf(out + len, cap - len, "%s%s", k ? "," : "", in->col_names[cols[k]]);
        if (w < 0 || (size_t)w >= cap - len) return -1;
        len += (size_t)w;
    }
    return 0;
}

int sf_fit(const sf_fit_opts *o, sf_fit_result *res, sf_err *e) {
    fit f = {.o = o, .res = res, .R = o->replicas ? o->replicas : 1, .ranks = o->ranks, .rank = sf_ranks_rank(o->ranks),
             .nranks = sf_ranks_size(o->ranks)};
    *res = (sf_fit_result){.val_loss = NAN};
    f.G = f.R * (uint32_t)f.nranks;
    f.talk = o->progress && f.rank == 0;
    if (o->batch % f.G)
        return sf_err_set(e, SF_EINVAL, "--batch-size %u is not divisible by %u replicas (each replica takes "
                          "batch / replicas)", o->batch, f.G);
    f.replica_batch = o->batch / f.G;
    int rc = sf_pack_open(&f.pack, o->data, e);
    const sf_pack_info *in = rc ? NULL : sf_pack_get_info(f.pack);
    if (!rc) rc = sf_columns_create(&f.cols, in, o->features, o->targets, o->norm, e);
    if (!rc) {
        sf_err inner = {0};
        if ((rc = sf_model_parse(&f.model, o->model, f.cols.nfeatures, f.cols.ntargets, &inner)))
            sf_err_set(e, rc, "%s", inner.msg);
    }
    sf_plan *train_plan = NULL;
    if (!rc)
        rc = sf_plan_create(&train_plan, in->nrows, in->chunk_rows, in->series, in->nseries, &o->window, 1,
                            &(sf_split){o->val_split, SF_PART_TRAIN}, e);
    if (!rc && o->val_split > 0)
        rc = sf_plan_create(&f.val_plan, in->nrows, in->chunk_rows, in->series, in->nseries, &o->window, 1,
                            &(sf_split){o->val_split, SF_PART_VALIDATION}, e);
    if (!rc) {
        // Drop-remainder gives every replica floor(floor(W / R) / b) batches.
        f.steps_per_epoch = sf_plan_windows(train_plan) / f.G / f.replica_batch;
        if (f.steps_per_epoch == 0)
            rc = sf_err_set(e, SF_EINVAL, "%s: %llu training windows, fewer than one global batch of %u (hint: a "
                            "smaller --batch-size or --window, or less --val-split)", o->data,
                            (unsigned long long)sf_plan_windows(train_plan), o->batch);
    }
    sf_plan_free(train_plan);
    // The run's settings, as a checkpoint records them.
    sf_checkpoint *c = &f.ck;
    if (!rc) {
        sf_model_format(&f.model, c->model, sizeof c->model);
        if (join(c->features, sizeof c->features, in, f.cols.features, f.cols.nfeatures) ||
            join(c->targets, sizeof c->targets, in, f.cols.targets, f.cols.ntargets))
            rc = sf_err_set(e, SF_EINVAL, "too many column names for a checkpoint");
        snprintf(c->data, sizeof c->data, "%s", o->data);
        c->window = o->window, c->norm = o->norm, c->inputs = f.cols.nfeatures, c->outputs = f.cols.ntargets;
        c->feature_scale = f.cols.feature_scale, c->feature_offset = f.cols.feature_offset;
        c->target_scale = f.cols.target_scale, c->target_offset = f.cols.target_offset;
        c->seed = o->seed, c->epochs = o->epochs, c->batch = o->batch, c->replicas = f.G;
        c->val_split = o->val_split, c->lr = o->adam.lr, c->pool = o->pool, c->rows = in->nrows;
        snprintf(c->lr_scaling, sizeof c->lr_scaling, "%s", o->lr_linear ? "linear" : "none");
    }
    if (!rc) rc = agree_settings(&f, e);
    sf_adam adam = o->adam;
    if (o->lr_linear) adam.lr *= (float)f.G;
    sf_trainer_opts to = {.replicas = f.R, .replica_batch = f.replica_batch, .window = o->window.length,
                          .devices = o->devices, .precision = o->precision, .adam = adam, .stage_slots = 4,
                          .cores = sf_ranks_cores(o->ranks), .ranks = o->ranks, .interrupted = o->interrupted};
    if (!rc) rc = sf_trainer_open(&f.tr, o->backend, &f.model, &to, e);
    if (!rc && f.rank == 0 && o->checkpoint_dir && mkdir(o->checkpoint_dir, 0777) != 0 && errno != EEXIST)
        rc = sf_err_errno(e, SF_EIO, errno, "%s: cannot create the checkpoint directory", o->checkpoint_dir);
    // Weights: the checkpoint's when resuming, else Keras' initialisers.
    bool resumed = false;
    double resumed_seconds = 0;  // of the interrupted epoch, before the checkpoint
    if (!rc) rc = start_weights(&f, &resumed, &resumed_seconds, e);
    if (!rc && f.epoch >= o->epochs) {
        fit_close(&f);
        if (f.talk) fprintf(stderr, "resume: the checkpoint is at epoch %llu of %llu: nothing to do\n",
                                 (unsigned long long)f.epoch, (unsigned long long)o->epochs);
        return 0;
    }
    if (!rc && o->log && f.rank == 0) {
        // A resumed run appends to its log; a log a kill left empty gets its header.
        struct stat st;
        bool append = resumed && stat(o->log, &st) == 0 && st.st_size > 0;
        if (!(f.log = fopen(o->log, append ? "a" : "w"))) rc = sf_err_errno(e, SF_EIO, errno, "%s: cannot write", o->log);
        else if (!append) fprintf(f.log, "epoch,loss,val_loss,samples_per_s,input_wait\n"), fflush(f.log);
    }
    sf_pipe_opts po = {.window = o->window, .features = c->features, .targets = c->targets, .norm = o->norm,
                       .block_chunks = 1, .replicas = f.R, .shard_first = f.R * (uint32_t)f.rank, .shard_total = f.G,
                       .batch = f.replica_batch, .pool = o->pool,
                       .drop_remainder = true, .seed = o->seed, .epochs = o->epochs, .first_epoch = f.epoch,
                       .io = {SF_IO_AUTO, SF_DIRECT_AUTO, 4, 0}, .decoders = o->decoders ? o->decoders : 1,
                       .slots = to.stage_slots, .prefetch = 2, .split = {o->val_split, SF_PART_TRAIN},
                       .stage = f.tr ? sf_trainer_stage_ops(f.tr) : NULL,
                       .delay_us = {o->delay_us[0], o->delay_us[1], o->delay_us[2]}};
    // At most 4M events (128 MB, about 450 MB of JSON) whatever the run's
    // length, over all ranks, since rank 0 gathers them: later ones are
    // counted and dropped.
    // The ranks' traces start together: an all-reduce ends on every rank
    // at nearly the same moment (their clocks cannot be compared).
    int64_t start = 0;
    if (!rc && o->trace) rc = sf_ranks_sum_i64(o->ranks, &start, 1, "the trace's start", e);
    if (!rc && o->trace && !(rc = sf_trace_open(&f.trace, (1u << 22) / (uint32_t)f.nranks, e))) {
        sf_trainer_set_trace(f.tr, f.trace);
        po.trace = f.trace;
    }
    if (!rc && o->memory_budget) {
        // The replicas' share is fixed by the model and the batch (host
        // memory: GPU replicas hold theirs on the devices); the pipeline's
        // shuffle pool gets what is left.
        uint32_t threads = to.cores > f.R ? to.cores / f.R : 1;
        uint64_t replicas = f.R * o->backend->host_memory(&f.model, f.replica_batch, o->window.length, threads);
        if (replicas >= o->memory_budget)
            rc = sf_err_set(e, SF_EINVAL, "a memory budget of %.1f MB is too small: the replicas' weights and "
                            "activations alone take %.1f MB (hint: a smaller --batch-size or model)",
                            o->memory_budget / 1e6, replicas / 1e6);
        else if ((rc = sf_pipe_fit_budget(&po, sf_pack_get_info(f.pack), o->memory_budget - replicas, e))) {
            sf_err inner = *e;
            sf_err_set(e, rc, "--memory-budget %.1f MB: the replicas take %.1f MB, and for the pipeline %s",
                       o->memory_budget / 1e6, replicas / 1e6, inner.msg);
        }
        // Each rank fits its own cores and decoders: the smallest pool fits
        // them all, and every rank must shuffle alike.
        if (!rc) rc = sf_ranks_min_u64(o->ranks, &po.pool, 1, "the shuffle pool", e);
        if (!rc && f.talk && po.pool < o->pool)
            fprintf(stderr, "memory: %.1f MB for the replicas; the shuffle pool shrinks to %llu windows to fit %.1f MB\n",
                    replicas / 1e6, (unsigned long long)po.pool, o->memory_budget / 1e6);
    }
    if (!rc) rc = sf_pipe_open(&f.pipe, o->data, &po, e);
    if (rc && f.tr) sf_trainer_stage_error(f.tr, e);  // the device's cause, if it was one
    if (!rc && !(f.cur = calloc(f.R, sizeof *f.cur))) rc = sf_err_set(e, SF_ENOMEM, "out of memory");
    // Back to the checkpoint's position in its epoch: the pipeline is
    // deterministic, so skipping its first batches lands on the same ones.
    for (uint32_t r = 0; !rc && r < f.R; r++)
        for (uint64_t k = 0; !rc && k < f.epoch_step; k++) {
            int got = sf_pipe_next_batch(f.pipe, r, &f.cur[r], e);
            if (got == 1) sf_pipe_release(f.pipe, r, &f.cur[r]);
            else rc = got < 0 ? got : sf_err_set(e, SF_EINVAL, "resume: the data ended before the checkpoint's step");
        }
    if (f.cur) memset(f.cur, 0, f.R * sizeof *f.cur);  // nothing held
    if (rc) {
        fit_close(&f);
        return rc;
    }
    f.tty = f.talk && isatty(2);
    char ranks[48] = "";
    if (f.nranks > 1) snprintf(ranks, sizeof ranks, " (%d ranks x %u)", f.nranks, f.R);
    if (f.talk)
        fprintf(stderr, "train: %s, %u window(s) per batch on %u %s replica(s)%s, %llu steps per epoch, %zu "
                "parameters%s\n", c->model, o->batch, f.G, o->backend->name, ranks,
                (unsigned long long)f.steps_per_epoch, f.model.nparams, resumed ? ", resumed" : "");
    if (resumed && f.talk)
        fprintf(stderr, "resume: epoch %llu, step %llu of it (%llu steps done)\n", (unsigned long long)f.epoch + 1,
                (unsigned long long)f.epoch_step, (unsigned long long)c->step);
    sf_batch_source src = {pipe_next, pipe_release, &f};
    f.run_t0 = sf_now();
    f.epoch_t0 = f.run_t0 - resumed_seconds;
    rc = sf_trainer_run(f.tr, &src, o->seed, on_step, &f, e);
    double el = sf_now() - f.run_t0;
    // Ranks that drifted apart would be a bug in the sums: say so.
    if (!rc) rc = sf_trainer_agree(f.tr, e);
    if (!rc && f.run_steps) rc = diagnose(&f, po.decoders, e);
    // A failed rank cannot join the others in gathering the trace.
    if (f.trace && (!rc || !f.ranks)) {
        sf_err te = {0};
        int trc = write_trace(&f, &te);
        if (!rc && trc) rc = trc, *e = te;
    }
    res->steps = f.run_steps;
    res->samples_per_s = el > 0 ? f.run_samples / el : 0;
    res->input_wait = el > 0 ? f.run_wait / (f.G * el) : 0;
    if (f.tty && f.epoch_step) fputc('\n', stderr);
    fit_close(&f);
    return rc;
}
