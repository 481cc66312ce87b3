// The fit loop: the data opened once, the pipeline feeding the replicas, the
// epochs' loop (train_epochs: steps, validation, the CSV log, checkpoints)
// and a step hook that keeps the books and the progress bar. Where a run
// starts is resume.c's.
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

__extension__ typedef unsigned __int128 u128;  // steps done: epochs x their steps

typedef struct {
    const sf_fit_opts *o;
    const sf_fit_bench *bench;
    sf_fit_result *res;
    sf_model model;
    sf_run_data d;     // the data, its columns and their scaling: opened once
    sf_plan *val_plan;
    sf_pipe *pipe;
    sf_pipe_opts po;
    sf_batch *cur;     // per replica: the batch it holds
    sf_trainer *tr;
    sf_trace *trace;
    sf_checkpoint ck;  // the run's record; weights filled in when written
    uint32_t R, replica_batch;
    sf_ranks *ranks;
    int rank, nranks;
    uint32_t G;        // replicas over all ranks (R on each)
    bool talk;         // progress lines: rank 0's, when asked for
    uint64_t epoch, epoch_step, steps_per_epoch, run_steps;
    double loss_sum, wait, epoch_t0, run_t0, bar_t;
    double score_t0;     // the end's scoring began
    bool scoring_shown;  // it printed its progress
    uint64_t samples, run_samples;
    double run_wait;
    double step_seconds, step_cpu;  // the steps' wall time in this run (sf_trainer_run's calls), and the process's CPU time
    // The pipeline's counters when the profile starts (after the first
    // step) and when the last step ends, so that stage utilisation covers
    // the time the steps do.
    sf_pipe_stats pipe_warm, pipe_end;
    sf_pipe_replica_stats *replicas_warm, *replicas_end;
    sf_cpu_use cpu_warm, cpu_end;  // and the cores' use
    bool ended;
    int interrupted;   // the signal that stops the run after its step (0: none)
    FILE *log;
    int lock;          // the checkpoint directory's lock file, held while the run lasts (-1: none)
    uint64_t across, windows;   // training windows spanning a step above twice the typical, of all (no --max-gap)
    bool tty;
    bool imputed_told;  // the validation targets pack imputed have been counted aloud
    bool val_unscored;  // the last validation scored no target (pack imputed them all): no evaluation
    float *best_w;      // the best epoch's weights, for a run without a checkpoint directory to keep them
    sf_score score;     // the validation part per target at the run's end (ntargets 0: not scored)
    sf_lr_schedule lr;  // the run's, its total planned (cosine)
    sf_plateau plateau; // where ReduceLROnPlateau stands
    uint64_t pass_steps;   // steps in a pass over the training windows (the pipeline's epoch)
    uint64_t log_every;    // a log row when Adam's step count is a multiple (0: at epoch ends only)
    uint64_t logged_step;  // Adam's step count at the last row
    uint64_t val_batches;  // validation batches (of replica_batch windows) each validation scores (0: all)
    double wall_t0, seconds0;  // this process's start, and the run's wall before it (a resume's)
    sf_history history;
    bool log_five;         // the log an older seqfeed began: its five columns only
    sf_tboard tb;          // --tensorboard's event files (fd -1: none)
    char fold[32];         // "fold K/N - " before the progress lines of a fold (--folds), else ""
    uint64_t tune_said;    // --pipeline auto's lines printed (sf_pipe_tuning.changes)
} fit;

// The validation windows of the run (0: none, no val_loss, no evaluation).
static uint64_t val_windows(const fit *f) { return f->val_plan ? sf_plan_windows(f->val_plan) : 0; }
// The windows each validation, and the end's scoring, score: the first
// --validation-steps x --batch-size of them (0: every one).
static uint64_t val_limit(const fit *f) {
    u128 bound = (u128)f->o->validation_steps * f->o->batch;
    return f->o->validation_steps && bound < val_windows(f) ? (uint64_t)bound : 0;
}

static int pipe_next(void *arg, uint32_t r, sf_batch *b, sf_err *e) {
    fit *f = arg;
    if (f->bench && f->bench->resident && f->cur[r].count) {  // the batch it holds, again
        *b = f->cur[r];
        return 1;
    }
    int rc = sf_pipe_next_batch(f->pipe, r, &f->cur[r], e);
    if (rc == 1) *b = f->cur[r];
    // --pipeline auto's lines, as they come.
    if (rc == 1 && r == 0 && f->talk && f->po.autotune && sf_pipe_tuning_changes(f->pipe) > f->tune_said) {
        sf_pipe_tuning t;
        sf_pipe_get_tuning(f->pipe, &t);
        fprintf(stderr, "%s%s\n", f->tty ? "\r\033[K" : "", t.line);
        f->tune_said = t.changes;
    }
    return rc;
}

static void pipe_release(void *arg, uint32_t r, const sf_batch *b) {
    fit *f = arg;
    if (!(f->bench && f->bench->resident)) sf_pipe_release(f->pipe, r, b);  // a resident batch is never given back
}

typedef struct {
    fit *f;
    float *pred;
    double sum;
    uint64_t n, imputed, batches;  // target values scored, and left out as imputed
    uint64_t limit;                // batches to score (--validation-steps; 0: all)
} eval_acc;

static int eval_batch(void *arg, const float *x, const float *y, const uint64_t *ids, uint32_t count, sf_err *e) {
    eval_acc *a = arg;
    (void)ids;
    // Every rank counts every batch: all stop after the same one.
    bool last = a->limit && a->batches + 1 >= a->limit;
    if (a->batches++ % (uint64_t)a->f->nranks != (uint64_t)a->f->rank) return last;  // each rank its share
    int rc = sf_trainer_predict(a->f->tr, a->pred, x, count, e);
    // The training loss per target value (sf_loss_value), over the values
    // pack observed: an imputed one is NaN (sf_columns.imputed_nan). A NaN in
    // a column without imputed values is an overflow, and makes the loss NaN.
    const sf_pack_info *in = sf_pack_get_info(a->f->d.pack);
    const sf_model *m = &a->f->model;
    uint32_t V = m->values, W = sf_loss_width(&m->loss), nt = a->f->d.cols.ntargets;  // V: steps x targets
    for (size_t k = 0; !rc && k < (size_t)count * V; k++) {
        if (sf_columns_target_imputed(&a->f->d.cols, in, y[k], (uint32_t)(k % nt))) {
            a->imputed++;
            continue;
        }
        a->sum += sf_loss_value(&m->loss, a->pred + k * W, y[k]), a->n++;
    }
    return rc ? rc : last;
}

// The validation windows' mean loss with replica 0's weights (NAN without
// any), over the target values pack observed; ranks take turns at batches
// and sum.
static int validate(fit *f, double *loss, sf_err *e) {
    *loss = NAN;
    if (!val_windows(f)) return 0;
    eval_acc a = {.f = f, .pred = malloc((size_t)f->replica_batch * f->model.outputs * sizeof(float)),
                  .limit = f->val_batches};
    if (!a.pred) return sf_err_set(e, SF_ENOMEM, "out of memory");
    sf_columns scored = f->d.cols;  // the same columns, imputed targets NaN (the training pipe's stay as they are)
    scored.imputed_nan = true;
    int rc = sf_windows_in_order(f->d.pack, f->val_plan, &scored, f->replica_batch, eval_batch, &a, e);
    if (rc == 1) rc = 0;  // --validation-steps: its last batch scored
    free(a.pred);
    double v[3] = {a.sum, (double)a.n, (double)a.imputed};
    if (!rc) rc = sf_ranks_sum_f64(f->ranks, v, 3, "the validation loss", e);
    if (!rc && v[1] > 0) *loss = v[0] / v[1];
    f->val_unscored = !rc && v[1] == 0;
    if (!rc && f->talk && v[2] > 0 && !f->imputed_told)
        fprintf(stderr, "%svalidation: %.0f of %.0f target values were imputed by pack --missing ffill and are not "
                "scored%s\n", f->tty ? "\r\033[K" : "", v[2], v[1] + v[2], v[1] > 0 ? "" : ": no val_loss");
    f->imputed_told |= v[2] > 0;
    return rc;
}

// Writes DIR/latest.safetensors (and DIR/epoch-NNNN.safetensors at an
// epoch's end), each atomically and read back; rank 0 only.
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
    f->ck.lr_total_steps = f->lr.total_steps, f->ck.lr_scale = f->plateau.scale;
    f->ck.plateau_best = f->plateau.best, f->ck.plateau_wait = f->plateau.wait;
    if (f->pipe) {
        sf_pipe_tuning t;
        sf_pipe_get_tuning(f->pipe, &t);
        sf_pipe_tuning_text(&t, f->ck.pipeline, sizeof f->ck.pipeline);
    }
    if (!rc) rc = sf_checkpoint_save(f->o->checkpoint_dir, &f->ck, &f->model, epoch_end, e);
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
    fprintf(stderr, "\r%s%6llu/%llu [%.*s%s%.*s] ETA %4.0f s - loss %.6f - %.0f samples/s\033[K", f->fold,
            (unsigned long long)f->epoch_step, (unsigned long long)f->steps_per_epoch, done,
            "========================", done < width ? ">" : "", width - done - (done < width),
            "........................", eta, f->loss_sum / (double)f->samples, rate);
    (void)s;
}

// The step hook, on replica 0's thread after every step: the books and the
// progress bar. An interrupt stops the run after the step.
static int count_step(void *arg, const sf_step_info *s, sf_err *e) {
    fit *f = arg;
    (void)e;
    f->ck.step = s->step;
    f->loss_sum += s->loss * s->samples;  // back to a sum of row losses
    f->samples += s->samples, f->run_samples += s->samples;
    f->wait += s->input_wait, f->run_wait += s->input_wait;
    f->epoch_step++, f->run_steps++;
    if (f->run_steps == 1) sf_pipe_get_stats(f->pipe, &f->pipe_warm, f->replicas_warm), sf_cpu_sample(&f->cpu_warm);
    if (f->bench && f->run_steps == f->bench->warmup_steps) f->run_t0 = sf_now(), f->run_samples = 0, f->run_wait = 0;
    if (f->talk) progress_bar(f, s);
    f->interrupted = s->interrupted;
    return s->interrupted ? 1 : 0;
}

// The validation record after an epoch's val_loss (NAN: none scored): the
// lowest so far is the best (its checkpoint DIR/best.safetensors), and an
// improvement counts for --early-stop when it beats the last one counted by
// more than --min-delta, as Keras' EarlyStopping(min_delta) counts. A
// val_loss that overflowed (inf) is never a best: no model to keep.
static void track_best(fit *f, double val) {
    sf_checkpoint *c = &f->ck;
    // No evaluation: a NaN from no target scored is no val_loss that failed to improve.
    if (!val_windows(f) || f->val_unscored) return;
    bool first = c->best_epoch == 0;
    if (isfinite(val) && (first || val < c->best_val_loss)) c->best_epoch = f->epoch + 1, c->best_val_loss = val;
    if (isfinite(val) && (first || val < c->improved_val_loss - f->o->min_delta))
        c->improved_val_loss = val, c->since_improved = 0;
    else
        c->since_improved++;
}

// Whether --early-stop ends the run here (which the result reports).
static bool early_stop_here(fit *f) {
    if (!f->o->early_stop || f->ck.since_improved < f->o->early_stop) return false;
    f->res->early_stopped = f->epoch;
    return true;
}

// The best epoch's weights in memory, where no directory keeps them
// (best.safetensors): the run ends with them scored.
static int keep_best(fit *f, sf_err *e) {
    if (!f->best_w && !(f->best_w = malloc(f->model.nparams * sizeof(float))))
        return sf_err_set(e, SF_ENOMEM, "out of memory for the best epoch's weights");
    return sf_trainer_save(f->tr, f->best_w, NULL, NULL, e);
}

// Plateau's decision on the evaluation's val_loss, on the caller's thread
// between runs: the next steps take the reduced lr. Said aloud as Keras'
// ReduceLROnPlateau says it.
static void plateau_decide(fit *f, double val) {
    if (f->lr.kind != SF_LR_PLATEAU || f->val_unscored) return;
    double before = f->lr.lr * f->plateau.scale;
    if (!sf_plateau_update(&f->plateau, &f->lr, f->o->min_delta, val)) return;
    sf_trainer_set_lr_scale(f->tr, f->plateau.scale);
    if (f->talk)
        fprintf(stderr, "%sepoch %llu: val_loss has not improved for %llu evaluation(s): lr %.4g -> %.4g "
                "(--lr-factor %g, --lr-min %g)\n", f->tty ? "\r\033[K" : "", (unsigned long long)f->epoch + 1,
                (unsigned long long)f->lr.patience, before, f->lr.lr * f->plateau.scale, f->lr.factor,
                f->lr.lr_min);
}

// A row for the epoch so far, el seconds into it: the line on stderr (at
// its end; between, off a terminal only, where no bar shows), the log's
// row and the history's. loss is the mean over the epoch's steps so far
// (Keras' running loss), val_loss (at the end) NAN when there is none.
static int log_row(fit *f, double el, double val, bool end, sf_err *e) {
    const sf_fit_opts *o = f->o;
    if (!f->samples) return 0;  // no step yet in this epoch: nothing to say
    double per = el > 0 ? el : 1e-9, loss = f->loss_sum / (double)f->samples, wait = f->wait / (f->G * per);
    double seconds = f->seconds0 + (sf_now() - f->wall_t0);
    // Without validation windows val_loss is left out, not printed as nan (announce says why).
    char val_text[48] = "";
    if (!isnan(val)) snprintf(val_text, sizeof val_text, " - val_loss %.6f", val);
    // The lr the next step takes (Keras' logs' learning_rate), before plateau's decision.
    double lr = sf_trainer_lr(f->tr);
    char lr_text[32] = "";
    if (f->lr.kind != SF_LR_CONSTANT || f->lr.warmup_steps) snprintf(lr_text, sizeof lr_text, " - lr %.4g", lr);
    if (f->talk && end)
        fprintf(stderr, "%s%sepoch %llu/%llu - %llu steps - %.1f s - loss %.6f%s%s - %.0f samples/s - "
                "input wait %.1f%%\n", f->tty ? "\r\033[K" : "", f->fold, (unsigned long long)f->epoch + 1,
                (unsigned long long)o->epochs, (unsigned long long)f->steps_per_epoch, el, loss, val_text,
                lr_text, f->samples / per, 100 * wait);
    else if (f->talk && !f->tty)
        fprintf(stderr, "%sepoch %llu/%llu - step %llu/%llu - %.1f s - loss %.6f%s - %.0f samples/s - input wait "
                "%.1f%%\n", f->fold, (unsigned long long)f->epoch + 1, (unsigned long long)o->epochs,
                (unsigned long long)f->epoch_step, (unsigned long long)f->steps_per_epoch, el, loss, lr_text,
                f->samples / per, 100 * wait);
    char val_field[32] = "";
    if (!isnan(val)) snprintf(val_field, sizeof val_field, "%.9g", val);
    char more[96] = "";
    if (!f->log_five)
        snprintf(more, sizeof more, ",%llu,%.3f,%.8g", (unsigned long long)f->ck.step, seconds, lr);
    if (f->log && (fprintf(f->log, "%llu,%.9g,%s,%.1f,%.4f%s\n", (unsigned long long)f->epoch + 1, loss, val_field,
                           f->samples / per, wait, more) < 0 || fflush(f->log) != 0))
        return sf_err_errno(e, SF_EIO, errno, "%s: cannot write the log", o->log);
    f->logged_step = f->ck.step;
    sf_history_row row = {.epoch = f->epoch + 1, .step = f->ck.step, .loss = loss, .val_loss = val, .lr = lr,
                          .seconds = seconds, .epoch_end = end};
    int rc = f->tb.fd[0] >= 0 ? sf_tboard_row(&f->tb, &row, f->samples / per, wait, e) : 0;
    return !rc && f->rank == 0 ? sf_history_add(&f->history, &row, e) : rc;
}

// The epoch's end: validation, the progress line, the log's row, the lr's
// plateau and the checkpoint (and the best's), with every replica stopped.
static int end_epoch(fit *f, sf_err *e) {
    const sf_fit_opts *o = f->o;
    double el = sf_now() - f->epoch_t0, val;
    int rc = validate(f, &val, e);
    if (!rc) rc = log_row(f, el, val, true, e);
    if (rc) return rc;
    plateau_decide(f, val);
    f->res->loss = f->loss_sum / (double)f->samples, f->res->val_loss = val, f->res->epochs++;
    track_best(f, val);
    if (f->ck.best_epoch == f->epoch + 1 && !o->checkpoint_dir && f->rank == 0 && (rc = keep_best(f, e))) return rc;
    f->epoch++, f->epoch_step = 0;
    if ((rc = checkpoint(f, true, e))) return rc;
    f->loss_sum = 0, f->samples = 0, f->wait = 0, f->epoch_t0 = sf_now();
    return 0;
}

static int trainer_predict(void *arg, float *out, const float *x, uint32_t count, sf_err *e) {
    return sf_trainer_predict(arg, out, x, count, e);
}

// The weights the run leaves to its user into the trainer: the best
// epoch's (DIR/best.safetensors, which predict and evaluate take given the
// directory, else the copy kept) when the last epoch is not the best.
// *which says whose.
static int load_best(fit *f, char *which, size_t cap, sf_err *e) {
    snprintf(which, cap, "the final weights");
    if (!f->ck.best_epoch || f->ck.best_epoch == f->epoch) return 0;
    sf_checkpoint best = {0};
    sf_model m;
    char path[PATH_MAX];
    const float *w = f->best_w;
    int rc = 0;
    if (f->o->checkpoint_dir) {
        snprintf(path, sizeof path, "%s/best.safetensors", f->o->checkpoint_dir);
        rc = sf_checkpoint_read(path, &best, &m, e);
        if (!rc && best.nparams != f->model.nparams)
            rc = sf_err_set(e, SF_EFORMAT, "%s: %zu weights, the run's model has %zu", path, best.nparams,
                            f->model.nparams);
        w = best.w;
    }
    if (!rc && w) rc = sf_trainer_load(f->tr, w, NULL, NULL, f->ck.step, e);
    if (!rc && w)
        snprintf(which, cap, "the best epoch's weights (epoch %llu)", (unsigned long long)f->ck.best_epoch);
    sf_checkpoint_free(&best);
    return rc;
}

// The end's scoring, which reads the whole validation part of a large file
// unless --validation-steps bounds it: a line every 10 s (the terminal's
// redrawn), and an interrupt stops it as it stops the steps (the
// checkpoint is on disk already).
static int score_progress(void *arg, uint64_t scored, uint64_t total, sf_err *e) {
    fit *f = arg;
    (void)e;
    double now = sf_now(), el = now - f->score_t0;
    if (f->talk && now - f->bar_t >= (f->tty ? 0.5 : 10) && scored < total) {
        fprintf(stderr, "%sscoring the validation part: %llu of %llu windows, %.0f s left%s%s", f->tty ? "\r\033[K" : "",
                (unsigned long long)scored, (unsigned long long)total, el / (double)scored * (double)(total - scored),
                f->o->validation_steps ? "" : " (--validation-steps N scores the first N batches)", f->tty ? "" : "\n");
        f->bar_t = now, f->scoring_shown = true;
    }
    int sig = f->o->interrupted ? atomic_load(f->o->interrupted) : 0;
    if (sig) f->interrupted = f->res->interrupted = sig;
    return sig != 0;
}

// The run's end on rank 0: the validation part per target (the windows
// --validation-steps names), with the weights the run leaves (load_best),
// against the baselines evaluate shows, into f->score (for the report) and
// as evaluate's table. Not for benchmarks, nor a run interrupted (its user
// wants it to stop).
static int score_end(fit *f, sf_err *e) {
    if (f->rank != 0 || f->bench || f->interrupted || !val_windows(f)) return 0;
    const sf_pack_info *in = sf_pack_get_info(f->d.pack);
    uint64_t nseries;
    const sf_series *series = sf_run_data_series(&f->d, &nseries);
    sf_season season;
    sf_season_find(&season, in, f->o->season, &f->o->pipe.window);
    uint64_t all = val_windows(f), limit = val_limit(f);
    sf_score_opts so = {.pack = f->d.pack, .plan = f->val_plan, .cols = &f->d.cols, .series = series,
                        .nseries = nseries, .season = &season, .batch = f->replica_batch,
                        .loss = &f->model.loss, .predict = trainer_predict, .arg = f->tr, .limit = limit,
                        .progress = score_progress, .progress_arg = f};
    char which[64];
    int rc = load_best(f, which, sizeof which, e);
    f->score_t0 = f->bar_t = sf_now();
    if (!rc) rc = sf_score_run(&f->score, &so, e);
    if (f->scoring_shown && f->tty) fputs("\r\033[K", stderr);
    if (!rc && f->interrupted) {  // not the end's scores
        sf_score_free(&f->score), f->score = (sf_score){0};
        if (f->talk && f->o->checkpoint_dir)
            fprintf(stderr, "validation part: not scored (interrupted); seqfeed evaluate --checkpoint %s --data %s "
                    "scores it\n", f->o->checkpoint_dir, f->o->data);
        else if (f->talk)
            fprintf(stderr, "validation part: not scored (interrupted)\n");
    }
    if (!rc && f->talk && f->score.values) {
        if (limit)
            fprintf(stderr, "validation part's first %llu of %llu windows (--validation-steps), per target, with %s "
                    "(seqfeed evaluate scores them all):\n", (unsigned long long)limit, (unsigned long long)all, which);
        else
            fprintf(stderr, "validation part, per target, with %s (seqfeed evaluate shows the same):\n", which);
        sf_score_print(stderr, &f->score);
    }
    return rc;
}

// The end's scores to the caller that keeps them (o->keep_score).
static void keep_score(fit *f) {
    if (!f->o->keep_score) return;
    *f->o->keep_score = f->score;
    f->score = (sf_score){0};
}

// A resumed run with nothing left to train scores its end again, quietly,
// for a caller that keeps the scores (--folds: a fold done before).
static int score_done(fit *f, sf_err *e) {
    if (!f->o->keep_score) return 0;
    bool talk = f->talk;
    f->talk = false;
    int rc = score_end(f, e);
    f->talk = talk;
    if (!rc) keep_score(f);
    return rc;
}

// Steps until the next point where the loop has work: the epoch's end, a
// --checkpoint-every step, --max-steps, a log row.
static uint64_t steps_to_next(const fit *f) {
    const sf_fit_opts *o = f->o;
    uint64_t n = f->steps_per_epoch - f->epoch_step;
    if (o->checkpoint_every && o->checkpoint_every - f->ck.step % o->checkpoint_every < n)
        n = o->checkpoint_every - f->ck.step % o->checkpoint_every;
    if (o->max_steps && o->max_steps - f->run_steps < n) n = o->max_steps - f->run_steps;
    if (f->log_every && f->log_every - f->ck.step % f->log_every < n) n = f->log_every - f->ck.step % f->log_every;
    return n;
}

// A stop after the step just run: --max-steps, or an interrupt (which the
// result reports).
static bool stop_here(fit *f) {
    if (!(f->o->max_steps && f->run_steps >= f->o->max_steps) && !f->interrupted) return false;
    f->res->interrupted = f->interrupted;
    return true;
}

// The pipeline's counters where the steps end, for the diagnosis; rc passes through.
static int steps_end(fit *f, int rc) {
    sf_pipe_get_stats(f->pipe, &f->pipe_end, f->replicas_end), sf_cpu_sample(&f->cpu_end), f->ended = true;
    return rc;
}

// This process's CPU seconds, every thread's.
static double process_cpu(void) {
    struct timespec t;
    return clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) ? 0 : (double)t.tv_sec + t.tv_nsec * 1e-9;
}

// A benchmark's evaluation: told to it, and whether it reached its target.
static bool at_target(fit *f) {
    const sf_fit_bench *b = f->bench;
    if (!b || f->val_unscored || !val_windows(f)) return false;
    double val = f->res->val_loss;
    if (b->evaluated) b->evaluated(b->arg, f->ck.step, val, f->step_seconds, f->step_cpu);
    return b->target_loss > 0 && val <= b->target_loss;
}

// The loop. Everything but the steps runs here, on the caller's thread,
// with every replica stopped: the steps run in parts up to the next point
// with work (steps_to_next), and a stop comes after a step.
static int train_epochs(fit *f, const sf_batch_source *src, sf_err *e) {
    const sf_fit_opts *o = f->o;
    int rc;
    for (;;) {
        // steps
        while (f->epoch_step < f->steps_per_epoch) {
            uint64_t n = steps_to_next(f), before = f->run_steps;
            double t0 = sf_now(), c0 = process_cpu();
            rc = sf_trainer_run(f->tr, src, o->seed, n, count_step, f, e);
            f->step_seconds += sf_now() - t0, f->step_cpu += process_cpu() - c0;
            if (rc) return rc;
            if (f->run_steps - before < n && !f->interrupted) return 0;  // the data ended
            if (f->epoch_step == f->steps_per_epoch) break;
            if (o->checkpoint_every && f->ck.step % o->checkpoint_every == 0 && (rc = checkpoint(f, false, e)))
                return rc;
            if (f->log_every && f->ck.step % f->log_every == 0 &&
                (rc = log_row(f, sf_now() - f->epoch_t0, NAN, false, e)))
                return rc;
            if (stop_here(f)) {
                // A run that stops inside an epoch says where its loss stands.
                rc = f->logged_step == f->ck.step ? 0 : log_row(f, sf_now() - f->epoch_t0, NAN, false, e);
                return steps_end(f, rc ? rc : checkpoint(f, false, e));
            }
        }
        // validate, log, checkpoint
        if ((rc = end_epoch(f, e))) return rc;
        // stop?
        bool reached = at_target(f), done = f->epoch >= o->epochs;
        if (done || stop_here(f) || (done = early_stop_here(f)) || reached) {
            f->res->complete = done;
            return steps_end(f, 0);
        }
    }
}

// The run's HTML report: replica 0's steps and the settings.
static int report(fit *f, const sf_replica_profile *prof, sf_err *e) {
    const sf_fit_opts *o = f->o;
    float (*steps)[SF_PHASES] = malloc(65536 * sizeof *steps);
    if (!steps) return sf_err_set(e, SF_ENOMEM, "out of memory for the report");
    size_t n = sf_trainer_steps(f->tr, 0, steps, 65536);
    char window[96], batch[64], replicas[48], seed[32], horizon[32];
    const sf_window_spec *w = &o->pipe.window;
    sf_window_horizon_text(w, horizon, sizeof horizon);
    snprintf(window, sizeof window, "%u rows, stride %u, sampling rate %u, horizon %s", w->length, w->stride,
             w->sampling_rate, horizon);
    snprintf(batch, sizeof batch, "%u (%u parts, up to %u per replica)", o->batch, sf_pipe_parts(&f->po),
             f->replica_batch);
    snprintf(replicas, sizeof replicas, f->nranks > 1 ? "%u (%d ranks x %u)" : "%u", f->G, f->nranks, f->R);
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
    char loss[SF_LOSS_TEXT], pipeline[SF_PIPE_TUNING_TEXT] = "";
    sf_loss_format(&f->model.loss, loss, sizeof loss);
    sf_pipe_tuning tuning;
    if (f->pipe) sf_pipe_get_tuning(f->pipe, &tuning), sf_pipe_tuning_text(&tuning, pipeline, sizeof pipeline);
    const char *settings[] = {"data", o->data, "model", f->ck.model, "loss", loss, "features", f->ck.features, "targets",
                              f->ck.targets, "window", window, "batch", batch, "replicas", replicas, "backend",
                              o->backend->name, "precision", sf_precision_name(o->precision),
                              "seed", seed, "pipeline", pipeline, NULL, NULL, NULL};
    char fold[96];
    if (o->folds) {  // which fold of a cross-validation this page is
        snprintf(fold, sizeof fold, "%u of %u (validation on part %u of %u of each series' rows)", o->fold, o->folds,
                 o->fold + 1, o->folds + 1);
        settings[sizeof settings / sizeof *settings - 3] = "fold", settings[sizeof settings / sizeof *settings - 2] = fold;
    }
    sf_report_model m = {.rows = f->history.rows, .nrows = f->history.n, .best_epoch = f->ck.best_epoch,
                         .best_val_loss = f->ck.best_val_loss,
                         .validation = val_windows(f) > 0,
                         .score = f->score.ntargets ? &f->score : NULL};
    int rc = sf_report_write(o->report, &m, (const float (*)[SF_PHASES])steps, n, prof, f->G, &f->res->diagnosis,
                             settings, e);
    free(steps);
    return rc;
}

// The pipeline's busy and waiting time while the profiled steps ran.
static void during_steps(fit *f, sf_pipe_stats *st, sf_pipe_replica_stats *rs) {
    if (!f->ended) sf_pipe_get_stats(f->pipe, &f->pipe_end, f->replicas_end), sf_cpu_sample(&f->cpu_end);  // the data ran out
    *st = f->pipe_end;
    memcpy(rs, f->replicas_end, f->R * sizeof *rs);
    const sf_pipe_stats *w = &f->pipe_warm;
    st->read_busy -= w->read_busy, st->read_wait -= w->read_wait;
    st->decode_busy -= w->decode_busy, st->decode_wait -= w->decode_wait;
    st->read_cpu -= w->read_cpu, st->read_queued -= w->read_queued;
    st->decode_cpu -= w->decode_cpu, st->decode_queued -= w->decode_queued;
    for (uint32_t r = 0; r < f->R; r++) {
        const sf_pipe_replica_stats *x = &f->replicas_warm[r];
        rs[r].busy -= x->busy, rs[r].input_wait -= x->input_wait, rs[r].output_wait -= x->output_wait;
        rs[r].cpu -= x->cpu, rs[r].queued -= x->queued;
        for (int k = 0; k < SF_LAT_BUCKETS; k++) rs[r].wake[k] -= x->wake[k];
    }
}

// The run's step-time breakdown against the pipeline's counters, into the
// result (on stderr, and in the report): every rank's, on rank 0.
static int diagnose(fit *f, sf_err *e) {
    size_t pr = f->R * sizeof(sf_replica_profile), pp = f->R * sizeof(sf_pipe_replica_stats);
    size_t part = pr + pp + sizeof(sf_pipe_stats), *lens = calloc((size_t)f->nranks, sizeof *lens);
    char *mine = malloc(part), *all = NULL;
    int rc = mine && lens ? 0 : sf_err_set(e, SF_ENOMEM, "out of memory");
    if (!rc) {
        for (uint32_t r = 0; r < f->R; r++) sf_trainer_profile(f->tr, r, (sf_replica_profile *)mine + r);
        during_steps(f, (sf_pipe_stats *)(mine + pr + pp), (sf_pipe_replica_stats *)(mine + pr));
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
            // The knobs in use at the end (--pipeline auto's), not their
            // caps: a stage's busy share is per thread in use.
            sf_pipe_opts used = f->po;
            sf_pipe_tuning t;
            sf_pipe_get_tuning(f->pipe, &t);
            used.decoders = t.now.decoders, used.prefetch = t.now.prefetch, used.slots = t.now.slots;
            used.io.depth = t.now.depth;
            sf_diagnose_in in = {.replicas = prof, .R = f->G, .pipes = ps, .npipes = (uint32_t)f->nranks,
                                 .pipe_replicas = prs, .pipe = &used,
                                 .cpu = sf_cpu_since(&f->cpu_warm, &f->cpu_end)};
            sf_diagnose(&f->res->diagnosis, &in);
            if (f->talk) sf_profile_print(stderr, prof, f->G, &f->res->diagnosis);
            if (f->bench && f->bench->profile_out)
                sf_profile_print(f->bench->profile_out, prof, f->G, &f->res->diagnosis);
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

static void fit_close(fit *f) {
    sf_pipe_close(f->pipe);  // first: its slots may be the trainer's staging
    sf_trainer_close(f->tr);
    sf_trace_close(f->trace);
    sf_plan_free(f->val_plan);
    sf_score_free(&f->score);
    sf_run_data_close(&f->d);
    sf_history_free(&f->history);
    if (f->log) fclose(f->log);
    sf_tboard_close(&f->tb, NULL);
    if (f->lock >= 0) close(f->lock);  // and with it the lock
    free(f->cur);
    free(f->replicas_warm);
    free(f->replicas_end);
    free(f->best_w);
}

// Without --max-gap: how many training windows span a step above twice the
// typical one, as the windows the file's series have less those of its
// series cut at such steps.
static int count_across(fit *f, const sf_plan *train, sf_err *e) {
    const sf_pack_info *in = sf_pack_get_info(f->d.pack);
    sf_series *cut = NULL;
    uint64_t n = 0;
    sf_plan *plan = NULL;
    int64_t twice = in->time_step > INT64_MAX / 2 ? INT64_MAX : 2 * in->time_step;  // any file's step
    sf_split split = sf_fit_split(f->o, in, SF_PART_TRAIN);
    int rc = sf_pack_segments(f->d.pack, twice, &cut, &n, e);
    if (!rc) rc = sf_plan_create(&plan, in->nrows, in->chunk_rows, cut, n, &f->o->pipe.window, 1,
                                 &split, e);
    if (!rc) f->windows = sf_plan_windows(train), f->across = f->windows - sf_plan_windows(plan);
    sf_plan_free(plan);
    free(cut);
    return rc;
}

// --max-gap left fewer windows than a batch: when the windows it removed
// would have made one, *why says how many spanned a gap and which --max-gap
// keeps enough: the first of 2, 4, ... 256 times the typical step that
// does (below the largest), else the file's largest step (which cuts nothing). "" otherwise.
static int max_gap_why(fit *f, const sf_pipe_opts *po, uint64_t kept, char *why, size_t cap, sf_err *e) {
    const sf_fit_opts *o = f->o;
    const sf_pack_info *in = sf_pack_get_info(f->d.pack);
    sf_split split = sf_fit_split(o, in, SF_PART_TRAIN);
    uint64_t all = sf_plan_count(in->series, in->nseries, &po->window, &split);
    why[0] = 0;
    if (!f->d.segments || all == kept || sf_pipe_epoch_batches(po, all) == 0) return 0;
    double unit = sf_pack_time_unit(in);
    int64_t largest = 0, gap = 0;
    for (uint64_t i = 0; i < in->nchunks; i++) {
        int64_t step = sf_pack_chunk_max_step(f->d.pack, i);
        largest = step > largest ? step : largest;
    }
    uint64_t keeps = all;
    int64_t g = in->time_step <= largest / 2 ? 2 * in->time_step : 0;  // no overflow: each g below largest
    for (int tries = 0; !gap && tries < 8 && g > 0 && g < largest; tries++, g = g <= largest / 2 ? 2 * g : 0) {
        if ((double)g * unit <= o->max_gap) continue;
        sf_series *cut = NULL;
        uint64_t n = 0;
        int rc = sf_pack_segments(f->d.pack, g, &cut, &n, e);
        uint64_t w = rc ? 0 : sf_plan_count(cut, n, &po->window, &split);
        free(cut);
        if (rc) return rc;
        if (sf_pipe_epoch_batches(po, w) > 0) gap = g, keeps = w;
    }
    if (!gap) gap = largest;
    // Written to 4 digits: never below the step it must keep.
    char asked[32], step[32], hint[32];
    double need = (double)gap * unit, back = 0;
    sf_duration_text(need, hint, sizeof hint);
    if (sf_duration_parse(hint, &back) || back < need) sf_duration_text(need * 1.001, hint, sizeof hint);
    sf_duration_text(o->max_gap, asked, sizeof asked);
    sf_duration_text((double)in->time_step * unit, step, sizeof step);
    snprintf(why, cap, "--max-gap %s removed %llu of the %llu training windows, those that span a longer step "
             "between rows, and left %llu, fewer than one global batch of %u (hint: --max-gap %s keeps %llu; the "
             "file's typical step is %s)", asked, (unsigned long long)(all - kept), (unsigned long long)all,
             (unsigned long long)kept, o->batch, hint, (unsigned long long)keeps, step);
    return 0;
}

// An epoch's steps (--steps-per-epoch, else a pass's), the log's rows
// between epoch ends, and the batches a validation scores.
static int epochs_and_rows(fit *f, sf_err *e) {
    const sf_fit_opts *o = f->o;
    f->steps_per_epoch = o->steps_per_epoch ? o->steps_per_epoch : f->pass_steps;
    f->log_every = o->log_every ? o->log_every : f->steps_per_epoch > SF_LOG_LONG_EPOCH ? SF_LOG_EVERY_AUTO : 0;
    if (o->validation_steps && !sf_fit_validates(o))
        return sf_err_set(e, SF_EUSAGE, "--validation-steps %llu bounds validation, and --val-split 0 leaves none "
                          "(hint: a --val-split above 0, or leave --validation-steps out)",
                          (unsigned long long)o->validation_steps);
    if (o->season && !sf_fit_validates(o))
        return sf_err_set(e, SF_EUSAGE, "--season %u sets the seasonal forecast the validation part is scored "
                          "against, and --val-split 0 leaves none (hint: a --val-split above 0, or leave --season "
                          "out)", (unsigned)o->season);
    // Batches of the global batch, scored a replica's batch at a time.
    f->val_batches = o->validation_steps <= UINT64_MAX / f->G ? o->validation_steps * f->G : 0;
    return 0;
}

// The data, opened once: the file, its columns and their scaling, the model
// for them, the validation plan, and the steps an epoch has.
static int open_data(fit *f, sf_err *e) {
    const sf_fit_opts *o = f->o;
    int rc = sf_run_data_open(&f->d, o, e);
    if (rc) return rc;
    const sf_pack_info *in = sf_pack_get_info(f->d.pack);
    sf_err inner = {0};
    // With several steps, the last Dense has one unit per step and target
    // (and quantile).
    if (sf_model_parse_loss(&f->model, o->model, f->d.cols.nfeatures,
                            f->d.cols.ntargets * sf_window_steps(&o->pipe.window), &o->loss, &inner) ||
        sf_model_set_extra(&f->model, f->d.cols.nfuture * sf_window_steps(&o->pipe.window) + f->d.cols.nonehot, &inner))
        return sf_err_set(e, SF_EUSAGE, "%s", inner.msg);
    uint32_t embed = 0;
    if (o->series_features && (rc = sf_series_features(o->series_features, &embed, e))) return rc;
    if (embed && sf_model_set_embedding(&f->model, f->d.cols.nonehot, embed, &inner))
        return sf_err_set(e, SF_EUSAGE, "%s", inner.msg);
    uint64_t nseries;
    const sf_series *series = sf_run_data_series(&f->d, &nseries);
    sf_plan *train_plan = NULL;
    sf_split train_split = sf_fit_split(o, in, SF_PART_TRAIN);
    rc = sf_plan_create(&train_plan, in->nrows, in->chunk_rows, series, nseries, &o->pipe.window,
                        o->pipe.block_chunks, &train_split, e);
    sf_split val_split = sf_fit_split(o, in, SF_PART_VALIDATION);
    if (!rc && sf_fit_validates(o))
        rc = sf_plan_create(&f->val_plan, in->nrows, in->chunk_rows, series, nseries, &o->pipe.window, 1,
                            &val_split, e);
    if (!rc && !f->d.segments && in->time_step > 0 && in->time_gaps) rc = count_across(f, train_plan, e);
    if (!rc) {
        sf_pipe_opts po = sf_run_pipe_opts(o, &f->d, f->R, f->rank, f->nranks);
        f->pass_steps = sf_pipe_epoch_batches(&po, sf_plan_windows(train_plan));
        char why[512] = "";
        if (f->pass_steps == 0) rc = max_gap_why(f, &po, sf_plan_windows(train_plan), why, sizeof why, e);
        if (!rc && why[0]) rc = sf_err_set(e, SF_EUSAGE, "%s: %s", o->data, why);
        else if (!rc && f->pass_steps == 0) {
            // Only the options that can still go lower: one at its least cannot help.
            uint64_t windows = sf_plan_windows(train_plan);
            sf_split split = train_split;
            char fits[256] = "", opts[128];
            sf_window_shrinkers(&o->pipe.window, windows > 0, false, opts, sizeof opts);
            if (windows == 0)
                snprintf(fits, sizeof fits, ": a window spans %llu rows ((--window - 1) x --sampling-rate + --horizon "
                         "+ 1), more than the %llu rows of the longest series' training part",
                         (unsigned long long)sf_window_span(&o->pipe.window),
                         (unsigned long long)sf_split_longest(series, nseries, o->pipe.window.stride, &split));
            char hint[256];
            snprintf(hint, sizeof hint, "%s%s%s%s", windows > 0 && o->batch > 1 ? ", --batch-size" : "", opts,
                     po.lanes > 1 ? ", fewer --lanes" : "",
                     o->folds ? ", or fewer --folds" : o->val_split > 0 ? ", or less --val-split" : "");
            rc = sf_err_set(e, SF_EUSAGE, "%s: %llu training windows, fewer than one global batch of %u%s%s%s%s%s",
                            o->data, (unsigned long long)windows, o->batch,
                            po.lanes > 1 ? " for each of the replicas' lanes" : "", fits,
                            hint[0] ? " (hint: a smaller " : "", hint[0] ? hint + 2 : "", hint[0] ? ")" : "");
        }
    }
    sf_plan_free(train_plan);
    if (!rc) rc = epochs_and_rows(f, e);
    return rc;
}

// The checkpoint directory, created when missing and locked for this run:
// two runs writing one directory would replace each other's checkpoints.
// The lock (flock on DIR/seqfeed.lock, which holds the owner's PID) goes
// with the process, so a killed run leaves none behind.
static int lock_checkpoint_dir(fit *f, const char *dir, sf_err *e) {
    // Room for the longest name a run writes there: an epoch's file's temporary.
    size_t most = PATH_MAX - sizeof "/epoch-0000.safetensors.tmp.4194304.XXXXXX";
    if (strlen(dir) > most)
        return sf_err_set(e, SF_EUSAGE, "--checkpoint-dir %.64s...: the path is %zu bytes long, more than the %zu the "
                          "run's files there leave it", dir, strlen(dir), most);
    struct stat st;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return sf_err_errno(e, SF_EIO, errno, "%s: cannot create the checkpoint directory", dir);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return sf_err_set(e, SF_EUSAGE, "--checkpoint-dir %s is not a directory (a file of that name, or a dangling "
                          "link, is in the way)", dir);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/seqfeed.lock", dir);
    f->lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (f->lock < 0) return sf_err_errno(e, SF_EIO, errno, "--checkpoint-dir %s: cannot write checkpoints there", dir);
    // A resume's probe of the lock (sf_checkpoint_dir_owner) holds it
    // shared for a moment: a few tries before it counts as another run's.
    int locked;
    for (int k = 0; (locked = flock(f->lock, LOCK_EX | LOCK_NB)) != 0 && errno == EWOULDBLOCK && k < 4; k++)
        nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
    if (locked != 0) {
        int err = errno;
        if (err != EWOULDBLOCK) return sf_err_errno(e, SF_EIO, err, "%s: cannot lock", path);
        char pid[32];
        if (!sf_checkpoint_dir_owner(dir, pid, sizeof pid)) snprintf(pid, sizeof pid, "unknown");  // gone since
        return sf_err_set(e, SF_EUSAGE, "--checkpoint-dir %s is in use by another run (PID %s): two runs would "
                          "replace each other's checkpoints; wait for it, or use another --checkpoint-dir", dir, pid);
    }
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(f->lock, 0) != 0 || pwrite(f->lock, pid, (size_t)len, 0) != len)
        return sf_err_errno(e, SF_EIO, errno, "%s: cannot write", path);
    // One directory, one run: a new run beside another's checkpoints would
    // leave its latest next to their epoch files, and a resume of either
    // would take the other's.
    int rc = sf_checkpoint_dir_check(dir, f->o->resume, e);
    if (rc) return rc;
    uint64_t completed, best;
    rc = sf_checkpoint_dir_recover(dir, &completed, &best, e);
    if (!rc && best && f->talk)
        fprintf(stderr, "resume: %s/best.safetensors (epoch %llu) was missing: written again from a copy of it\n",
                dir, (unsigned long long)best);
    if (!rc && completed && f->talk)
        fprintf(stderr, "resume: %s/epoch-%04llu.safetensors was missing, and latest.safetensors stands at that "
                "epoch's end: written now from it\n", dir, (unsigned long long)completed);
    if (!rc) sf_run_data_from_dir(f->ck.data_from_dir, sizeof f->ck.data_from_dir, f->o->data, dir);
    return rc;
}

// The log's first columns, all a log had before step, seconds and lr.
#define LOG_FIVE "epoch,loss,val_loss,samples_per_s,input_wait"

// Field k (from 0) of a log row: epoch,loss,val_loss,samples_per_s,input_wait,step,seconds,lr.
static const char *log_field(const char *line, int k) {
    for (int comma = 0; *line && comma < k; line++) comma += *line == ',';
    return line;
}

// The rows a killed run logged after its checkpoint's step (and a row the
// kill cut short) are cut off the log before a resumed run appends to it:
// the resumed run logs those steps again, and the log stays the one run's.
// *seconds: the last row kept's, where the resumed run's time goes on from
// (the time after that row and before the kill is lost; a checkpoint keeps
// no wall time, so that one run's checkpoints are the same bytes however
// often it was resumed); 0 when there is none. *size: the bytes kept;
// *five: the header kept is an older seqfeed's, its five columns only.
static int trim_log(const char *path, uint64_t step, double *seconds, long *size, bool *five, sf_err *e) {
    *seconds = 0, *size = 0, *five = false;
    FILE *in = fopen(path, "r");
    if (!in) return sf_err_errno(e, SF_EIO, errno, "%s: cannot read the log", path);
    char line[512];
    long keep = 0;
    bool header = true, cut = false;
    while (!cut && fgets(line, sizeof line, in)) {
        const char *p = log_field(line, 5);
        char *end;
        unsigned long long s = strtoull(p, &end, 10);
        cut = !strchr(line, '\n') || (!header && end > p && *end == ',' && s > step);
        if (!cut) keep = ftell(in);
        if (!cut && header) *five = !strcmp(line, LOG_FIVE "\n");
        // Another file given as the log: neither cut nor appended to. A
        // header a kill cut short is the log's own (cut, so written anew).
        static const char full[] = LOG_FIVE ",step,seconds,lr\n";
        bool ours = *five || (cut ? line[0] && !strncmp(line, full, strlen(line)) : !strcmp(line, full));
        if (header && !ours) {
            fclose(in);
            line[strcspn(line, "\r\n")] = 0;
            for (char *c = line; *c; c++)
                if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e) *c = '?';  // a binary file's bytes
            return sf_err_set(e, SF_EUSAGE, "--log %s is not a train log (its first line is '%.80s', a log's is '%s,"
                              "step,seconds,lr'): --resume would cut and append to it (hint: --log with the run's "
                              "own log, or a new file)", path, line, LOG_FIVE);
        }
        if (!cut && !header) {
            const char *t = log_field(line, 6);
            double v = strtod(t, &end);
            *seconds = end > t && *end == ',' && v >= 0 && isfinite(v) ? v : 0;
        }
        header = false;
    }
    bool failed = ferror(in) || keep < 0;
    fclose(in);
    if (failed) return sf_err_set(e, SF_EIO, "%s: cannot read the log", path);
    if (cut && truncate(path, keep) != 0)
        return sf_err_errno(e, SF_EIO, errno, "%s: cannot cut off the rows logged after the checkpoint", path);
    *size = keep;
    return 0;
}

// A resumed run appends to its log ('-': stdout); a log a kill left empty gets its header.
static int open_log(fit *f, bool resumed, sf_err *e) {
    const char *path = f->o->log;
    if (!path || f->rank != 0) return 0;
    struct stat st;
    double seconds = 0;
    long size = 0;
    bool five = false;
    int rc = resumed && strcmp(path, "-") && stat(path, &st) == 0
                 ? trim_log(path, f->ck.step, &seconds, &size, &five, e) : 0;
    if (rc) return rc;
    bool append = size > 0;
    int out = !strcmp(path, "-") ? dup(STDOUT_FILENO) : -1;
    f->log = !strcmp(path, "-") ? (out >= 0 ? fdopen(out, "w") : NULL) : fopen(path, append ? "a" : "w");
    if (!f->log) {
        int err = errno;
        if (out >= 0) close(out);
        return sf_err_errno(e, SF_EIO, err, "%s: cannot write", path);
    }
    if (!append && (fprintf(f->log, "%s,step,seconds,lr\n", LOG_FIVE) < 0 || fflush(f->log) != 0))
        return sf_err_errno(e, SF_EIO, errno, "%s: cannot write the log", path);
    // A log an older seqfeed began has its columns only: its rows go on with them.
    f->log_five = append && five;
    if (append && !f->log_five) f->seconds0 = seconds;
    return 0;
}

// --tensorboard: rank 0's event files, from the run's next step on: a
// resumed run's START drops what a killed one logged past its checkpoint,
// as open_log cuts the log's rows.
static int open_tensorboard(fit *f, const sf_run_start *start, sf_err *e) {
    const char *dir = f->o->tensorboard;
    if (!dir || f->rank != 0) return 0;
    bool earlier;
    int rc = sf_tboard_open(&f->tb, dir, start->resumed ? start->step + 1 : 0, &earlier, e);
    if (!rc && f->o->checkpoint_dir)  // DIR exists now: its path from the checkpoint's can be known
        sf_run_data_from_dir(f->ck.tensorboard_from_dir, sizeof f->ck.tensorboard_from_dir, dir, f->o->checkpoint_dir);
    if (!rc && f->talk && earlier && !start->resumed)
        fprintf(stderr, "tensorboard: %s holds another run's event files: TensorBoard shows this run in their "
                "place (the files stay; another --tensorboard DIR shows both)\n", dir);
    return rc;
}

// At most 4M events (128 MB, about 450 MB of JSON) whatever the run's
// length, over all ranks, since rank 0 gathers them: later ones are counted
// and dropped. The ranks' traces start together: an all-reduce ends on
// every rank at nearly the same moment (their clocks cannot be compared).
static int open_trace(fit *f, sf_err *e) {
    if (!f->o->trace) return 0;
    int64_t start = 0;
    int rc = sf_ranks_sum_i64(f->ranks, &start, 1, "the trace's start", e);
    if (!rc) rc = sf_trace_open(&f->trace, (1u << 22) / (uint32_t)f->nranks, e);
    if (!rc) sf_trainer_set_trace(f->tr, f->trace);
    return rc;
}

// The replicas' share of a memory budget is fixed by the model and the
// batch (host memory: GPU replicas hold theirs on the devices); the
// pipeline's shuffle pool gets what is left.
static int fit_budget(fit *f, sf_err *e) {
    const sf_fit_opts *o = f->o;
    uint32_t cores = sf_ranks_cores(o->ranks), threads = cores > f->R ? cores / f->R : 1;
    sf_replica_opts ro = {.threads = threads};  // as sf_trainer_open opens them
    // --pipeline auto's decoders get the cores the replicas leave: CPU
    // replicas compute on all of theirs, a GPU's needs one to feed it.
    uint32_t busy = o->backend == &sf_backend_cpu ? f->R * threads : f->R;
    f->po.cores = cores > busy ? cores - busy : 1;
    if (o->backend->train_parts) sf_replica_opts_parts(&ro, sf_pipe_parts(&f->po), o->batch, f->G);
    uint64_t replicas = f->R * o->backend->host_memory(&f->model, f->replica_batch, f->po.window.length, &ro);
    // Without a budget, the machine's memory is one: nothing sized by the
    // window, the batch or the pool is allocated before it is known to fit.
    if (!o->memory_budget) {
        sf_pipe_fit_budget(&f->po, sf_pack_get_info(f->d.pack), &f->d.cols, 0, e);  // the caps only: never fails
        return sf_pipe_check_memory(&f->po, sf_pack_get_info(f->d.pack), &f->d.cols, replicas, e);
    }
    if (replicas >= o->memory_budget)
        return sf_err_set(e, SF_EUSAGE, "--memory-budget %.1f MB is too small: the replicas' weights and "
                          "activations alone take %.1f MB (hint: a smaller --batch-size or --model, or a larger "
                          "--memory-budget)",
                          o->memory_budget / 1e6, replicas / 1e6);
    int rc = sf_pipe_fit_budget(&f->po, sf_pack_get_info(f->d.pack), &f->d.cols, o->memory_budget - replicas, e);
    if (rc) {
        sf_err inner = *e;
        return sf_err_set(e, rc, "--memory-budget %.1f MB: the replicas take %.1f MB, and for the pipeline %s",
                          o->memory_budget / 1e6, replicas / 1e6, inner.msg);
    }
    // Each rank fits its own cores and decoders: the smallest pool fits
    // them all, and every rank must shuffle alike.
    rc = sf_ranks_min_u64(o->ranks, &f->po.pool, 1, "the shuffle pool", e);
    if (!rc && f->talk && f->po.pool < o->pipe.pool)
        fprintf(stderr, "memory: %.1f MB for the replicas; the shuffle pool shrinks to %llu windows to fit %.1f MB\n",
                replicas / 1e6, (unsigned long long)f->po.pool, o->memory_budget / 1e6);
    return rc;
}

// Where the run stands in the pipeline's passes over the training windows,
// which its epochs go through one after another: the pass the steps done
// have reached (its first epoch) and the batches into it (returned), and
// the passes its --epochs need.
static uint64_t pipe_position(fit *f) {
    u128 done = (u128)f->epoch * f->steps_per_epoch + f->epoch_step;
    u128 need = (u128)f->o->epochs * f->steps_per_epoch, pass = done / f->pass_steps;
    u128 passes = need / f->pass_steps + (need % f->pass_steps != 0);
    f->po.first_epoch = pass > UINT64_MAX ? UINT64_MAX : (uint64_t)pass;
    f->po.epochs = passes > UINT64_MAX ? UINT64_MAX : (uint64_t)passes;
    return (uint64_t)(done % f->pass_steps);
}

// The pipeline as the options say, this rank's shards of the training
// part, from the checkpoint's pass on and at its batch: the pipeline is
// deterministic, so skipping its first batches lands on the same ones.
static int open_pipe(fit *f, sf_err *e) {
    uint64_t skip = pipe_position(f);
    int rc = sf_pipe_open(&f->pipe, f->d.pack, &f->d.cols, &f->po, e);
    if (rc) {
        sf_trainer_stage_error(f->tr, e);  // the device's cause, if it was one
        return rc;
    }
    f->cur = calloc(f->R, sizeof *f->cur);
    f->replicas_warm = calloc(f->R, sizeof *f->replicas_warm);
    f->replicas_end = calloc(f->R, sizeof *f->replicas_end);
    if (!f->cur || !f->replicas_warm || !f->replicas_end) return sf_err_set(e, SF_ENOMEM, "out of memory");
    for (uint32_t r = 0; r < f->R; r++)
        for (uint64_t k = 0; k < skip; k++) {
            int got = sf_pipe_next_batch(f->pipe, r, &f->cur[r], e);
            if (got != 1) return got < 0 ? got : sf_err_set(e, SF_EINVAL, "resume: the data ended before the "
                                                            "checkpoint's step");
            sf_pipe_release(f->pipe, r, &f->cur[r]);
        }
    memset(f->cur, 0, f->R * sizeof *f->cur);  // nothing held
    return 0;
}

// --early-stop watches val_loss: a run without one is a usage error naming
// both options.
static int early_stop_needs_validation(fit *f, sf_err *e) {
    const sf_fit_opts *o = f->o;
    if (val_windows(f)) return 0;
    // A resume keeps its checkpoint's --val-split: another would be refused.
    const char *split = o->resume ? "" : o->val_split == 0 ? "--val-split 0.1, or " : "a larger --val-split, or ";
    if (o->val_split == 0)
        return sf_err_set(e, SF_EUSAGE, "--early-stop %llu watches val_loss, and --val-split 0 leaves no validation "
                          "(hint: %sleave --early-stop out)", (unsigned long long)o->early_stop, split);
    return sf_err_set(e, SF_EUSAGE, "--early-stop %llu watches val_loss, and --val-split %g leaves no validation "
                      "target: the validation part of every %s (its last %g of rows, rounded down) is empty (hint: "
                      "%sleave --early-stop out)", (unsigned long long)o->early_stop, o->val_split,
                      f->d.segments ? "segment" : "series", o->val_split, split);
}

static void announce(const fit *f, const sf_run_start *start) {
    if (!f->talk) return;
    char ranks[48] = "";
    if (f->nranks > 1) snprintf(ranks, sizeof ranks, " (%d ranks x %u)", f->nranks, f->R);
    char pass[96] = "";
    if (f->o->steps_per_epoch)
        snprintf(pass, sizeof pass, " (--steps-per-epoch; a pass over the training windows is %llu)",
                 (unsigned long long)f->pass_steps);
    char loss[SF_LOSS_TEXT];
    sf_loss_format(&f->model.loss, loss, sizeof loss);
    fprintf(stderr, "train: %s, loss %s, %u window(s) per batch on %u %s replica(s)%s, %llu steps per epoch%s, %zu "
            "parameters%s\n", f->ck.model, loss, f->o->batch, f->G, f->o->backend->name, ranks,
            (unsigned long long)f->steps_per_epoch, pass, f->model.nparams, start->resumed ? ", resumed" : "");
    {
        const sf_pack_info *in = sf_pack_get_info(f->d.pack);
        char feats[1024] = "", targs[1024] = "";
        size_t fl = 0, tl = 0;
        for (uint32_t j = 0; j < f->d.cols.nfeatures - 2 * f->d.cols.ntime; j++) {
            uint32_t end = j + 1;
            while (f->d.cols.codes[j] != SF_CODE_NONE && end < f->d.cols.nfeatures && f->d.cols.features[end] == f->d.cols.features[j])
                end++;
            char one_hot[300];
            if (end > j + 1) snprintf(one_hot, sizeof one_hot, "%s (%u one-hot)", in->col_names[f->d.cols.features[j]], end - j);
            sf_list_append(feats, sizeof feats, &fl, end > j + 1 ? one_hot : in->col_names[f->d.cols.features[j]]);
            j = end - 1;
        }
        for (uint32_t k = 0; k < f->d.cols.ntime; k++) {
            char both[48];
            snprintf(both, sizeof both, "sin/cos(%s)", sf_time_feature_name(f->d.cols.time[k]));
            sf_list_append(feats, sizeof feats, &fl, both);
        }
        for (uint32_t j = 0; j < f->d.cols.ntargets; j++) sf_list_append(targs, sizeof targs, &tl, in->col_names[f->d.cols.targets[j]]);
        fprintf(stderr, "columns: features %s%s; targets %s%s%s\n", feats,
                f->o->features ? "" : " (all: --features chooses)", targs,
                f->o->targets ? "" : " (all numeric: --targets chooses)",
                f->d.cols.change_from ? ", learnt as changes from the window's last row (--target change)" : "");
    }
    if (f->across) {
        const sf_pack_info *in = sf_pack_get_info(f->d.pack);
        char step[32];
        sf_duration_text(2.0 * (double)in->time_step * sf_pack_time_unit(in), step, sizeof step);
        fprintf(stderr, "time: %llu of %llu training windows span a step of more than %s (twice the typical "
                "step); --max-gap %s keeps every window off them\n", (unsigned long long)f->across,
                (unsigned long long)f->windows, step, step);
    } else if (f->d.segments) {
        fprintf(stderr, "time: --max-gap cuts the series into %llu segments that windows stay inside\n",
                (unsigned long long)f->d.nsegments);
    }
    if (f->d.stats_rows < sf_pack_get_info(f->d.pack)->nrows)
        fprintf(stderr, "scaling: %s from the %llu rows of the training part (the validation part's left out)\n",
                sf_norm_name(f->o->norm), (unsigned long long)f->d.stats_rows);
    if (f->d.cols.nscoped)
        fprintf(stderr, "scaling: each of the %llu series by its own training rows (--norm-scope series); %llu "
                "(series, column) pairs without spread there keep the global scaling\n",
                (unsigned long long)f->d.cols.nscoped, (unsigned long long)f->d.scope_fallbacks);
    uint64_t val_all = val_windows(f);
    if (val_all && f->o->validation_steps) {
        uint64_t limit = val_limit(f);
        if (limit)
            fprintf(stderr, "validation: the first %llu of the %llu validation windows, in order, the same each time "
                    "(--validation-steps %llu x --batch-size %u)\n", (unsigned long long)limit,
                    (unsigned long long)val_all, (unsigned long long)f->o->validation_steps, f->o->batch);
        else
            fprintf(stderr, "validation: all %llu validation windows (--validation-steps %llu x --batch-size %u "
                    "reaches past them)\n", (unsigned long long)val_all, (unsigned long long)f->o->validation_steps,
                    f->o->batch);
    }
    if (!val_all) {
        if (f->o->val_split == 0)
            fprintf(stderr, "validation: none (--val-split 0): no val_loss\n");
        else  // a series with a training window has a window for its validation targets: only empty parts have none
            fprintf(stderr, "validation: none: the validation part of every %s (its last %g of rows, rounded down) "
                    "is empty: no val_loss (hint: a larger --val-split)\n", f->d.segments ? "segment" : "series",
                    f->o->val_split);
    }
    for (int targets = 0; f->d.cols.nflat && targets < 2; targets++) {
        char flat[1024];
        int n = sf_columns_flat_list(&f->d.cols, sf_pack_get_info(f->d.pack), f->d.stats, f->o->norm, targets, flat,
                                     sizeof flat);
        if (n == 0) continue;
        fprintf(stderr, "scaling: constant %s %s: %s spread over the training rows is below float32's smallest "
                "normal number, so %s scaled as a constant, %s (hint: %s%s)\n",
                targets ? (n == 1 ? "target" : "targets") : (n == 1 ? "column" : "columns"),
                n < 0 ? "(too many to name)" : flat, n == 1 ? "its" : "their", n == 1 ? "it is" : "each is",
                targets ? "and the model would learn to predict a constant" : "an input that tells the model nothing",
                targets && n > 0 && (uint32_t)n == f->d.cols.ntargets ? "other --targets"
                : targets ? "--targets without " : "--features without ",
                targets && n > 0 && (uint32_t)n == f->d.cols.ntargets ? "" : n == 1 ? "it" : "them");
    }
    if (start->resumed)
        fprintf(stderr, "%sresume: epoch %llu, step %llu of it (%llu steps done)\n", f->fold,
                (unsigned long long)f->epoch + 1,
                (unsigned long long)f->epoch_step, (unsigned long long)start->step);
}

// Steps the run plans: --epochs x the steps of an epoch, or --max-steps when fewer.
static uint64_t planned_steps(const fit *f) {
    const sf_fit_opts *o = f->o;
    uint64_t n = o->epochs > UINT64_MAX / f->steps_per_epoch ? UINT64_MAX : o->epochs * f->steps_per_epoch;
    return o->max_steps && o->max_steps < n ? o->max_steps : n;
}

// The run's lr schedule at its peak lr: cosine decays over the run's planned
// steps (a run meant to stop at --max-steps ends its curve there); a
// resumed run keeps the plan its checkpoint holds (resume_lr). Plateau
// decides on val_loss, which needs validation windows.
static int plan_lr(fit *f, float lr, sf_err *e) {
    const sf_fit_opts *o = f->o;
    f->lr = o->lr_schedule, f->lr.lr = lr;
    f->plateau = (sf_plateau){.scale = 1, .best = INFINITY};
    if (f->lr.kind == SF_LR_PLATEAU && !val_windows(f))
        return sf_err_set(e, SF_EUSAGE, "--lr-schedule plateau lowers the lr when val_loss stops improving, and this "
                          "run has no validation windows: %s (hint: %s)", o->val_split == 0 ? "--val-split 0"
                          : "the validation part of every series is empty",
                          o->val_split == 0 ? "a --val-split above 0, or another --lr-schedule"
                                            : "a larger --val-split, or another --lr-schedule");
    if (f->lr.kind == SF_LR_COSINE && !f->lr.total_steps) f->lr.total_steps = planned_steps(f);
    return 0;
}

// A resumed run goes on along its checkpoint's curve and plateau; a new
// one's cosine must have steps to decay over.
static int resume_lr(fit *f, const sf_run_start *start, sf_err *e) {
    bool cosine = f->lr.kind == SF_LR_COSINE;
    if (!start->resumed) {
        // The hint names what set the plan: --max-steps when it is the fewer.
        bool by_max = f->o->max_steps && f->o->max_steps == f->lr.total_steps;
        if (cosine && f->lr.warmup_steps >= f->lr.total_steps)
            return sf_err_set(e, SF_EUSAGE, "--warmup-steps %llu leaves no steps for the cosine decay: the run plans "
                              "%llu steps (--epochs x %llu steps per epoch, or --max-steps when fewer) (hint: fewer "
                              "--warmup-steps, or more %s)", (unsigned long long)f->lr.warmup_steps,
                              (unsigned long long)f->lr.total_steps, (unsigned long long)f->steps_per_epoch,
                              by_max ? "--max-steps" : "--epochs");
        return 0;
    }
    if (cosine && start->lr_total_steps) f->lr.total_steps = start->lr_total_steps;
    f->plateau = start->plateau;
    f->tr->sched.total_steps = f->lr.total_steps;  // the trainer took the plan before the checkpoint was read
    sf_trainer_set_lr_scale(f->tr, f->plateau.scale);
    if (f->talk && cosine && planned_steps(f) > f->lr.total_steps)
        fprintf(stderr, "lr: the cosine schedule was planned for %llu steps when the run began: the steps past them "
                "train at --lr-min %g\n", (unsigned long long)f->lr.total_steps, f->lr.lr_min);
    return 0;
}

int sf_fit(const sf_fit_opts *o, sf_fit_result *res, sf_err *e) { return sf_fit_measured(o, NULL, res, e); }

// The run's batch cut among its replicas, its data and model opened and
// checked: what fails before any weights, threads or files of the run exist.
static int fit_data(fit *f, const sf_fit_opts *o, const sf_fit_bench *b, sf_fit_result *res, sf_err *e) {
    *f = (fit){.o = o, .bench = b, .res = res, .R = o->replicas ? o->replicas : 1, .ranks = o->ranks, .lock = -1,
               .rank = sf_ranks_rank(o->ranks), .nranks = sf_ranks_size(o->ranks), .wall_t0 = sf_now(),
               .tb = {.fd = {-1, -1}}};
    *res = (sf_fit_result){.val_loss = NAN, .best_val_loss = NAN};
    f->G = f->R * (uint32_t)f->nranks;
    f->talk = o->progress && f->rank == 0;
    if (o->folds) snprintf(f->fold, sizeof f->fold, "fold %u/%u - ", o->fold, o->folds);
    uint32_t parts = sf_fit_parts(o);
    if (o->batch == 0 || f->G > parts) {
        // A run resumed from a checkpoint (a cross-validation's: from its
        // first fold's) has the checkpoint's --batch-size.
        char latest[PATH_MAX], hint[96];
        snprintf(latest, sizeof latest, "%s/latest.safetensors", o->checkpoint_dir ? o->checkpoint_dir : ".");
        if (o->resume && o->checkpoint_dir && (o->folds || access(latest, F_OK) == 0))
            snprintf(hint, sizeof hint, "at most %u --replicas: a resumed run keeps its --batch-size", parts);
        else
            snprintf(hint, sizeof hint, "a --batch-size of at least %u, or fewer --replicas", 8 * f->G);
        return sf_err_set(e, SF_EUSAGE, "--batch-size %u is cut into %u part(s) of at least 8 windows, and each of "
                          "the %u replicas takes whole parts (hint: %s)", o->batch, parts, f->G, hint);
    }
    // The replicas' shares differ when G does not divide the parts: each
    // is opened for the largest.
    for (uint32_t q = 0; q < f->G; q++) {
        uint32_t share = sf_replica_windows(o->batch, parts, f->G, q);
        if (share > f->replica_batch) f->replica_batch = share;
    }
    int rc = open_data(f, e);
    if (!rc && o->early_stop) rc = early_stop_needs_validation(f, e);
    return rc;
}

int sf_fit_check(const sf_fit_opts *o, sf_err *e) {
    fit f;
    sf_fit_result res;
    int rc = fit_data(&f, o, NULL, &res, e);
    fit_close(&f);
    return rc;
}

int sf_fit_measured(const sf_fit_opts *o, const sf_fit_bench *b, sf_fit_result *res, sf_err *e) {
    fit f;
    int rc = fit_data(&f, o, b, res, e);
    uint32_t parts = sf_fit_parts(o);
    if (!rc) f.po = sf_run_pipe_opts(o, &f.d, f.R, f.rank, f.nranks);  // reads the pack's series for --folds
    if (!rc) rc = fit_budget(&f, e);
    if (!rc) rc = sf_run_record(&f.ck, o, sf_pack_get_info(f.d.pack), &f.d.cols, &f.model, f.G, e);
    // The pool decides the batches: a checkpoint holds the one used (a
    // --memory-budget may have shrunk it), and a resume must shuffle alike.
    f.ck.pool = f.po.pool;
    if (!rc) rc = sf_run_agree(o->ranks, &f.ck, o, f.R, sf_pack_get_info(f.d.pack), e);
    sf_adam adam = o->adam;
    if (o->lr_linear) adam.lr *= (float)f.G;
    if (!rc) rc = plan_lr(&f, adam.lr, e);
    sf_trainer_opts to = {.replicas = f.R, .replica_batch = f.replica_batch, .window = f.po.window.length,
                          .devices = o->devices, .precision = o->precision, .rnn_algo = o->rnn_algo,
                          .late_loss = o->late_loss, .cuda_graph = o->cuda_graph,
                          .overlap_reduce = o->overlap_reduce, .adam = adam,
                          .stage_slots = f.po.slots,
                          .cores = sf_ranks_cores(o->ranks), .ranks = o->ranks, .interrupted = o->interrupted,
                          .lr_schedule = f.lr, .global_batch = o->batch, .parts = parts, .data = o->data};
    if (!rc) rc = sf_trainer_open(&f.tr, o->backend, &f.model, &to, e);
    if (!rc && f.rank == 0 && o->checkpoint_dir) rc = lock_checkpoint_dir(&f, o->checkpoint_dir, e);
    sf_run_start start = {0};
    if (!rc) rc = sf_run_start_weights(f.tr, &f.model, &f.ck, o, f.talk, &start, e);
    f.epoch = start.epoch, f.epoch_step = start.epoch_step, f.ck.step = start.step;
    f.loss_sum = start.loss_sum, f.samples = start.samples, f.wait = start.wait;
    f.ck.best_epoch = start.best_epoch, f.ck.best_val_loss = start.best_val_loss;
    f.ck.improved_val_loss = start.improved_val_loss, f.ck.since_improved = start.since_improved;
    res->best_epoch = f.ck.best_epoch, res->best_val_loss = f.ck.best_epoch ? f.ck.best_val_loss : NAN;
    if (!rc && f.epoch < o->epochs && f.epoch_step == 0 && early_stop_here(&f)) {
        rc = score_done(&f, e);
        res->complete = true;
        fit_close(&f);
        if (f.talk)
            fprintf(stderr, "%sresume: early stopping ended the run after epoch %llu: val_loss had not improved%s for "
                    "%llu evaluations (--early-stop %llu): nothing to do (hint: a larger --early-stop trains "
                    "further)\n", f.fold, (unsigned long long)f.epoch, o->min_delta > 0 ? " by more than --min-delta" : "",
                    (unsigned long long)f.ck.since_improved, (unsigned long long)o->early_stop);
        return rc;
    }
    if (!rc && f.epoch >= o->epochs) {
        rc = score_done(&f, e);
        res->complete = true;
        fit_close(&f);
        if (f.talk && f.epoch == o->epochs)
            fprintf(stderr, "%sresume: the run has done its %llu epochs: nothing to do (hint: --epochs above %llu "
                    "trains further)\n", f.fold, (unsigned long long)f.epoch, (unsigned long long)f.epoch);
        else if (f.talk)
            fprintf(stderr, "%sresume: the checkpoint has done %llu epochs, more than --epochs %llu: nothing to do "
                    "(hint: --epochs above %llu trains further)\n", f.fold, (unsigned long long)f.epoch,
                    (unsigned long long)o->epochs, (unsigned long long)f.epoch);
        return rc;
    }
    if (!rc) rc = resume_lr(&f, &start, e);
    if (!rc) rc = open_log(&f, start.resumed, e);
    if (!rc) rc = open_tensorboard(&f, &start, e);
    if (!rc && o->log && strcmp(o->log, "-") && o->checkpoint_dir)  // the log exists now: its path can be known
        sf_run_data_from_dir(f.ck.log_from_dir, sizeof f.ck.log_from_dir, o->log, o->checkpoint_dir);
    if (!rc) rc = open_trace(&f, e);
    f.po.stage = f.tr ? sf_trainer_stage_ops(f.tr) : NULL, f.po.trace = f.trace;
    if (!rc) rc = open_pipe(&f, e);
    if (rc) {
        fit_close(&f);
        return rc;
    }
    f.tty = f.talk && isatty(2);
    announce(&f, &start);
    sf_batch_source src = {pipe_next, pipe_release, &f};
    f.run_t0 = sf_now();
    f.epoch_t0 = f.run_t0 - start.seconds;
    rc = train_epochs(&f, &src, e);
    double el = sf_now() - f.run_t0;
    // Ranks that drifted apart would be a bug in the sums: say so.
    if (!rc) rc = sf_trainer_agree(f.tr, e);
    if (!rc) rc = score_end(&f, e);
    if (!rc && f.run_steps) rc = diagnose(&f, e);
    // A failed rank cannot join the others in gathering the trace.
    if (f.trace && (!rc || !f.ranks)) {
        sf_err te = {0};
        int trc = write_trace(&f, &te);
        if (!rc && trc) rc = trc, *e = te;
    }
    res->steps = f.run_steps;
    res->best_epoch = f.ck.best_epoch, res->best_val_loss = f.ck.best_epoch ? f.ck.best_val_loss : NAN;
    res->samples_per_s = el > 0 ? f.run_samples / el : 0;
    res->input_wait = el > 0 ? f.run_wait / (f.G * el) : 0;
    if (f.tty && f.epoch_step) fputc('\n', stderr);
    // The log's last rows reach the disk, or the run says they did not.
    if (f.log && (fsync(fileno(f.log)) != 0 && errno != EINVAL) && !rc)
        rc = sf_err_errno(e, SF_EIO, errno, "%s: cannot write the log", o->log);
    if (f.log && fclose(f.log) != 0 && !rc) rc = sf_err_errno(e, SF_EIO, errno, "%s: cannot write the log", o->log);
    f.log = NULL;
    int trc = sf_tboard_close(&f.tb, rc ? NULL : e);
    if (!rc) rc = trc;
    keep_score(&f);
    fit_close(&f);
    return rc;
}

sf_fit_opts sf_fit_opts_default(void) {
    return (sf_fit_opts){
        .model = SF_MODEL_DEFAULT,
        .norm = SF_NORM_ZSCORE,
        .pipe = sf_pipe_opts_default(),
        .batch = 32,
        .replicas = 1,
        .epochs = 10,
        .seed = 1,
        .val_split = 0.1,
        .adam = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .epsilon = 1e-7f},
        .progress = true,
        .backend = &sf_backend_cpu,
        .precision = SF_PRECISION_FP32,
        .rnn_algo = SF_RNN_STANDARD,
        .late_loss = true,
        .cuda_graph = true,
        .overlap_reduce = true,
        .lr_schedule = {.kind = SF_LR_CONSTANT, .factor = 0.1, .patience = 10},  // Keras' ReduceLROnPlateau's
    };
}
