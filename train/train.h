// train: mirrored data-parallel training (tf.distribute.MirroredStrategy's
// semantics) of the model on R replicas of a backend, fed by the pipeline:
//   trainer.c    the mirrored step: next batch, forward and backward,
//                reduce, update, on one thread per replica
//   allreduce.c  the gradients' sum across replicas and ranks
//   fit.c        the fit loop behind `seqfeed train`: the data opened once,
//                the pipeline, validation, checkpoints, the log
//   history.c    the log's rows kept in memory, bounded, for the report
//   tensorboard.c  the log's rows as TensorBoard's event files (--tensorboard)
//   data.c       the data as the fit opens it: columns, scaling, segments,
//                the pipeline's options (also for the Python package)
//   resume.c     where a run starts (a checkpoint, or Keras' initialisers),
//                and the ranks' agreement on the run's settings
//   profile.c    where each replica's steps went, and why it waited
//   report.c     the run as one HTML page
//   schedule.c   the learning rate of each step, and plateau's reductions
//   score.c      how good a model is: per target, against baselines
//   predict_data.c  the windows a checkpoint predicts on a file (predict,
//                evaluate, and the exported model's inputs in libseqfeed)
// Functions return 0 or a negative SF_E* code with e filled, unless they say
// otherwise; what they are given is borrowed.
#ifndef SF_TRAIN_H
#define SF_TRAIN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/common.h"
#include "ranks/ranks.h"
#include "backend/backend.h"
#include "checkpoint/checkpoint.h"
#include "pipeline/pipeline.h"

// ---- mirrored steps ----

// Where replica r's batches come from (the pipeline, or a test): next gives
// 1 with replica r's next batch in *b, 0 at the end, or a negative code;
// release gives it back after its step. The backend reads b->x and b->y
// (host memory on CPU), or, when the trainer stages batches onto devices,
// b->device_x and b->device_y once b->ready has fired.
typedef struct {
    int (*next)(void *arg, uint32_t r, sf_batch *b, sf_err *e);
    void (*release)(void *arg, uint32_t r, const sf_batch *b);
    void *arg;
} sf_batch_source;

// What one step did, summed over replicas.
typedef struct {
    uint64_t step;           // Adam's step count after this step (1, 2, ...)
    double loss;             // the step's loss: summed row losses / global batch
    uint32_t samples;        // windows in the step, all replicas
    double input_wait;       // seconds replicas waited for their batch, summed
    int interrupted;         // 0, or the signal that stops the run, seen by every rank at the same step:
                             // SIGTERM when some rank got one, else SIGINT
} sf_step_info;

// Where a replica's steps went. A step runs from the moment the replica asks
// for its batch to the moment it asks for the next: input (waiting for the
// batch), copy (on a GPU: the part of the batch's host-to-device copy that
// compute had to wait for, not hidden behind earlier work), compute (forward
// and backward), reduce (the all-reduce, waiting for the slowest replica
// included; across ranks also the step's agreement), update (Adam), other (the rest: barriers, the step hook;
// the caller's work between two sf_trainer_run calls is no step's). The phases add up to the step.
// Other's parts are timed too (enum sf_other_part).
enum sf_phase {
    SF_PHASE_INPUT,
    SF_PHASE_COPY,
    SF_PHASE_COMPUTE,
    SF_PHASE_REDUCE,
    SF_PHASE_UPDATE,
    SF_PHASE_OTHER,
    SF_PHASES
};
extern const char *const sf_phase_names[SF_PHASES];
// What of other is timed: waiting at the step's barriers for the other
// replicas (the slowest one's work, or replica 0's hook), and the step hook
// itself on replica 0 (the books, the progress bar; a benchmark's warmup
// mark). The rest of other is the loop's own bookkeeping.
enum sf_other_part { SF_OTHER_BARRIER, SF_OTHER_HOOK, SF_OTHER_PARTS };

typedef struct {
    double mean, p50, p99;  // seconds per step
} sf_stat;

typedef struct {
    uint64_t steps;              // steps measured: all but the run's first (the pipeline filling)
    double wall;                 // seconds from the first step's start to the last's end, less the
                                 // pauses between sf_trainer_run calls
    double total[SF_PHASES];     // seconds in each phase, over all steps
    double other_part[SF_OTHER_PARTS];  // seconds of other in each of its timed parts
    sf_stat phase[SF_PHASES], step;  // p50 and p99 over the last 65536 steps
    // Over the last 65536 steps: the standard deviation of each phase's
    // share of its step, and the standard error of the input share (input
    // and copy over the steps' time; 0: fewer than 2 steps kept)
    double share_sd[SF_PHASES], input_se;
    uint64_t wait_count[SF_LAT_BUCKETS];  // steps by their input wait (sf_lat_bucket), over all steps
    double wait_sum[SF_LAT_BUCKETS];      // and the seconds of those waits
} sf_replica_profile;

// Called on replica 0's thread after every step, with every replica stopped:
// the replicas may be read (sf_trainer_save, sf_trainer_predict). Nonzero
// stops training (a negative code is returned by sf_trainer_run).
typedef int (*sf_step_hook)(void *arg, const sf_step_info *s, sf_err *e);

// ---- the learning rate's schedule (schedule.c) ----

enum sf_lr_kind { SF_LR_CONSTANT, SF_LR_COSINE, SF_LR_PLATEAU };
// "constant", "cosine", "plateau"; parse: false when name is none of them.
const char *sf_lr_kind_name(enum sf_lr_kind k);
bool sf_lr_kind_parse(const char *name, enum sf_lr_kind *k);

// The learning rate of each step (Keras' schedules). A zeroed one is
// constant at Adam's lr. Every kind first warms up: the lr goes linearly
// from 0 to lr over warmup_steps, as Keras' CosineDecay(0, warmup_target=lr,
// warmup_steps) does; then constant and plateau stay at lr, and cosine is
// CosineDecay(lr, decay_steps = total_steps - warmup_steps, alpha = lr_min /
// lr): from lr down to lr_min at total_steps, and lr_min after. Plateau's
// reductions (Keras' ReduceLROnPlateau, sf_plateau_update) are a multiplier
// on top, which the fit loop sets between runs (sf_trainer_set_lr_scale).
typedef struct {
    enum sf_lr_kind kind;
    double lr;                // the peak (the trainer takes Adam's lr)
    uint64_t warmup_steps;
    uint64_t total_steps;     // cosine: the run's planned steps, warmup included
    double lr_min;            // cosine: its end; plateau: the floor of its reductions
    double factor;            // plateau: lr x factor at each reduction
    uint64_t patience;        // plateau: evaluations without improvement before one
} sf_lr_schedule;
// The lr of the update that follows `step` updates (Keras calls its schedule
// with the optimizer's iterations before the update: the first update is
// step 0's), without plateau's multiplier.
double sf_lr_at(const sf_lr_schedule *s, uint64_t step);

// ReduceLROnPlateau's state: the multiplier on the schedule's lr, the best
// val_loss so far (INFINITY before any), evaluations since it improved.
typedef struct {
    double scale, best;
    uint64_t wait;
} sf_plateau;
// Keras' rule at one evaluation: the first val_loss, and then one below
// best - min_delta, is the new best; else once wait reaches patience the lr
// (s->lr x scale) becomes max(lr x factor, lr_min), when above lr_min, and
// wait starts again. A NaN val_loss is no improvement. true when it reduced.
bool sf_plateau_update(sf_plateau *p, const sf_lr_schedule *s, double min_delta, double val_loss);

// R replicas, one thread each: every step each replica trains on its own
// batch, the gradients are summed across replicas (in a fixed order, so a
// run is deterministic) and every replica applies the same Adam update to
// its own copy of the weights. The loss of each replica's rows is divided by
// the global batch, so the sum is the global batch's mean loss.
//
// Under a launcher every rank runs a trainer with the same number of
// replicas; rank k's are global replicas k x R .. k x R + R - 1. Each step
// the ranks agree on the global batch and on stopping (an end of data, a
// non-finite loss, an interrupt) before anything changes, and sum the
// gradients over all of them: in a fixed order, part by part of the global
// batch, passed from rank to rank (CPU), or the backend's own sum across the
// job (NCCL). An error on one rank stops that rank; its program ends the job.
typedef struct {
    uint32_t replicas;        // this rank's
    uint32_t replica_batch, window;
    const int *devices;       // replica r's GPU (NULL: r)
    enum sf_precision precision;
    enum sf_rnn_algo rnn_algo;  // GPU replicas' LSTM recurrence
    bool late_loss;           // on a backend with step_loss (GPUs): the host reads each step's
                              // loss after queuing its update, which the device skips when the
                              // loss or the gradients are not finite; off, it waits for each
                              // step's end before the update
    bool cuda_graph;          // GPUs, with late_loss: the whole step in a CUDA graph, replayed
    bool overlap_reduce;      // the gradients' sum across replicas (NCCL) or ranks (CPU) starts a
                              // layer at a time during the backward pass
    sf_adam adam;
    uint32_t stage_slots;     // slots per replica of the pipeline's ring, when the backend
                              // stages batches onto devices (0: no staging)
    uint32_t cores;           // CPU cores the replicas share (0: every online core)
    sf_ranks *ranks;            // the job's ranks (NULL: this process alone)
    atomic_int *interrupted;  // set by a signal handler to the signal's number, read every step into
                              // sf_step_info.interrupted (NULL: never)
    sf_lr_schedule lr_schedule;  // each step's lr (its lr: adam.lr); zeroed: adam.lr throughout
    uint32_t global_batch, parts;  // the pipeline's global batch and its parts (sf_batch_parts): on a
                              // backend with train_parts, a batch that says which parts it holds is
                              // trained part by part, and the parts' gradients of every replica and
                              // rank are summed in the global batch's order, so that the weights do
                              // not depend on the replicas or ranks (0: batches as given)
    const char *data;         // the training data's path, named when the loss is not finite (borrowed:
                              // it outlives the trainer; NULL: none)
} sf_trainer_opts;

typedef struct sf_trainer sf_trainer;
// The replicas of m on be (both borrowed: they outlive the trainer); with
// ranks, a collective: every rank opens its trainer. *out NULL on failure.
int sf_trainer_open(sf_trainer **out, const sf_backend *be, const sf_model *m, const sf_trainer_opts *o, sf_err *e);
// Spans for every replica's input wait, forward+backward, all-reduce and
// update, one track per replica (trace borrowed; NULL: none).
void sf_trainer_set_trace(sf_trainer *t, sf_trace *trace);
// The pipeline's stage hooks onto the replicas' devices (the trainer's:
// valid until it closes, and the pipe must close first), or NULL when the
// replicas read host memory.
const sf_stage_ops *sf_trainer_stage_ops(const sf_trainer *t);
// The first error the staging met (a device error behind a failed pipe
// open, say): its code and e, or 0.
int sf_trainer_stage_error(const sf_trainer *t, sf_err *e);
void sf_trainer_close(sf_trainer *t);
// Every replica gets w (and Adam's m, v when not NULL) and the step count.
int sf_trainer_load(sf_trainer *t, const float *w, const float *m, const float *v, uint64_t step, sf_err *e);
// Replica 0's state (all replicas hold the same); w, m, v may each be NULL.
int sf_trainer_save(sf_trainer *t, float *w, float *m, float *v, sf_err *e);
// Replica r's weights alone (a test that every replica holds the same).
int sf_trainer_save_replica(sf_trainer *t, uint32_t r, float *w, sf_err *e);
// Every rank's weights are bit for bit the same (a collective: every rank
// calls it), or an error on every rank.
int sf_trainer_agree(sf_trainer *t, sf_err *e);
// Replica 0's predictions (count, outputs) for x (count, window, inputs),
// both in host memory, dropout off.
int sf_trainer_predict(sf_trainer *t, float *out, const float *x, uint32_t count, sf_err *e);
// Replica r's profile of its steps in every sf_trainer_run so far.
void sf_trainer_profile(sf_trainer *t, uint32_t r, sf_replica_profile *p);
// Replica r's last steps (at most max, and at most 65536), oldest first:
// seconds in each phase. Returns how many.
size_t sf_trainer_steps(sf_trainer *t, uint32_t r, float (*out)[SF_PHASES], size_t max);
// The multiplier on the schedule's lr from the next step on (1 at open):
// plateau's reductions. Between runs only.
void sf_trainer_set_lr_scale(sf_trainer *t, double scale);
// The lr the next step's update uses (as float32, Adam's).
double sf_trainer_lr(const sf_trainer *t);
// At most max_steps steps (0: no limit), fewer when the source ends or the
// hook stops, then every replica stopped: the caller may run again, and the
// steps go on where they left off (bit for bit as one run). 0 or a negative
// code (the first replica's error, or the hook's). dropout_seed: the masks
// of step s on replica r come from (seed, s, r).
int sf_trainer_run(sf_trainer *t, const sf_batch_source *src, uint64_t dropout_seed, uint64_t max_steps,
                   sf_step_hook hook, void *arg, sf_err *e);

// ---- diagnosis: why replicas wait ----

// The cores a run may use and how busy they were: sf_cpu_sample's totals at
// two moments, and sf_cpu_since between them.
typedef struct {
    double wall;     // seconds (sf_now)
    double process;  // this process's CPU seconds
    double busy;     // CPU seconds the cores this process may run on spent working, for anyone (NAN: unknown)
    uint32_t cores;  // the cores this process may run on (0: not measured)
} sf_cpu_use;
void sf_cpu_sample(sf_cpu_use *c);
sf_cpu_use sf_cpu_since(const sf_cpu_use *then, const sf_cpu_use *now);

// What the diagnosis reads: the replicas' profiles, the pipelines'
// counters over the same steps (one pipeline per rank: the busiest rank's
// stage counts), the knobs its hints name, and the cores (rank 0's).
typedef struct {
    const sf_replica_profile *replicas;           // R
    uint32_t R;
    const sf_pipe_stats *pipes;                   // npipes
    uint32_t npipes;
    const sf_pipe_replica_stats *pipe_replicas;   // R
    const sf_pipe_opts *pipe;
    sf_cpu_use cpu;
} sf_diagnose_in;

// A verdict needs SF_JUDGE_STEPS steps at least, and more when the input
// share's 95% interval over them is wider than +-SF_JUDGE_HALF_WIDTH and
// straddles 5% (input bound or not), and SF_JUDGE_SECONDS of steps (the pipeline threads' busy shares are counted
// in the scheduler's turns of milliseconds). A stage limits when its busy
// share, scaled to what the replicas would ask of it without waiting
// (busy / (1 - their wait)), reaches SF_STAGE_LIMIT. Short stalls are
// scheduler noise when they add up to less than SF_NOISE_SHARE. A pipeline
// thread that waited for a core SF_STARVED of the time or more is starved.
#define SF_JUDGE_STEPS 50
#define SF_JUDGE_SECONDS 1.0
#define SF_JUDGE_HALF_WIDTH 0.025
#define SF_STAGE_LIMIT 0.8
#define SF_NOISE_SHARE 0.05
#define SF_STARVED 0.1

// TensorFlow's input-pipeline analyzer's classes, by the share of step time
// spent waiting for input: < 5% not input bound, 5-20% moderately, >= 20%
// highly. A stall shorter than the scheduler takes to run a woken replica
// (the p99 of the replicas' wake-ups, measured in the run) is counted apart
// as scheduler noise.
typedef struct {
    bool judged;                 // the run is long enough for a verdict
    uint64_t steps, need_steps;  // steps measured (per replica), and needed for a verdict
    double seconds;              // the steps' wall time
    double input_share;          // stalls of noise_threshold or more, and copies, over the replicas' time
    double input_ci;             // the half-width of its 95% interval over the steps
    double noise_share;          // stalls under noise_threshold
    uint64_t stall_steps, noise_steps;  // steps with a stall of noise_threshold or more, under it (0 excluded)
    double noise_threshold;      // seconds (0: no replica ever waited, nothing to measure it by)
    uint64_t wakeups;            // the replicas' wake-ups it was measured on
    double share[SF_PHASES], share_sd[SF_PHASES];  // each phase's share of the time, the sd of a step's share
    double other_part[SF_OTHER_PARTS];             // shares of the time in other's timed parts
    const char *classification;  // "too short to judge", "not input bound", "moderately input bound", "highly input bound"
    // "read", "decode", "window", "copy", "cores" (starved of CPU) or "none" when input bound; "compute",
    // "all-reduce", "other" or "none" when not; "too short" when not judged
    const char *limit;
    double utilisation[3];       // busy share of each stage (enum sf_stage), per thread
    double load[3];              // utilisation / (1 - the replicas' whole wait): what the demand needs
    double on_core[3], queued[3];  // each stage's share of the time on a core, waiting for one (per thread; NAN: unknown)
    double used, others;         // cores this process used, and others on its cores, over the steps (NAN: unknown)
    char text[2048];             // the verdict with its numbers, and a hint when one is measured
} sf_diagnosis;

void sf_diagnose(sf_diagnosis *d, const sf_diagnose_in *in);
// The per-replica table of phases (mean / p50 / p99), the shares with their
// spread, the stalls, the threads, and the diagnosis.
void sf_profile_print(FILE *f, const sf_replica_profile *replicas, uint32_t R, const sf_diagnosis *d);

// ---- how good a model is: per target, against baselines (score.c) ----

// Who forecasts each target value: the model; persistence (the value at the
// window's last input row); the training rows' mean; the seasonal naive
// forecast (the value one season before the target row, same series).
enum sf_forecaster { SF_FC_MODEL, SF_FC_PERSISTENCE, SF_FC_MEAN, SF_FC_SEASONAL, SF_FORECASTERS };
extern const char *const sf_forecaster_names[SF_FORECASTERS];  // "model", "persistence", "mean", "seasonal"

// The season the seasonal forecast looks back, in rows.
typedef struct {
    uint32_t rows;   // 0: no seasonal forecast
    char text[512];  // how it was found, or why there is none (with a hint naming --season)
} sf_season;
// given rows (--season) when not 0, else from the time column's typical
// step: rows per day for a step that divides a day, 7 for daily rows, 52
// for weekly ones, 12 for monthly ones (28 to 31 days), none otherwise;
// none when the season is not longer than w's horizon (the value one
// season before the target would not be before the window's last input
// row); with several steps, none when it is shorter than the last step's
// (each step's value one season before is at most the last input row).
void sf_season_find(sf_season *s, const sf_pack_info *in, uint32_t given, const sf_window_spec *w);

typedef struct {
    char *name;                  // the column's
    uint64_t values, imputed;    // target values scored; left out as pack imputed
    uint64_t seasonal_values;    // of those scored, with a row one season before in their series
    // On the scaled values: the MSE of the point forecast (a quantile
    // model's: its quantile nearest 0.5), and the training loss (--loss; a
    // baseline's as its one value given for every quantile) (NAN: none)
    double mse[SF_FORECASTERS], loss[SF_FORECASTERS];
    double rmse[SF_FORECASTERS], mae[SF_FORECASTERS];  // of the point forecast, in the data's units (NAN: none)
    double model_seasonal_mse;   // the model's MSE on the values with a seasonal forecast
    double model_seasonal_loss;  // and its loss there
    bool beats_persistence;      // the model's loss below persistence's
    enum sf_loss_kind loss_kind; // the model's loss, the one loss[] holds
    // A quantile model's: each quantile's pinball loss (nq of them, scaled
    // values), and the share of true values inside [lowest, highest]
    double *quantile_loss, coverage;
} sf_target_score;

// One step's scores of one target, on the scaled values as the loss (NAN: none).
typedef struct {
    uint64_t values, seasonal_values;
    double mse[SF_FORECASTERS], loss[SF_FORECASTERS];
    double model_seasonal_mse, model_seasonal_loss;  // the model's on the values with a seasonal forecast
    double coverage;            // a quantile model's (NAN otherwise)
} sf_step_score;

typedef struct {
    uint64_t windows, values, imputed;  // values: target values scored over every target
    sf_loss loss_fn;             // the model's training loss
    double mse[SF_FORECASTERS];  // over every target's values scored (seasonal: those with one)
    double loss[SF_FORECASTERS]; // alike, the training loss
    double *quantile_loss, coverage;  // a quantile model's, over every target (NULL, NAN: none)
    uint32_t ntargets, beating;  // targets, and those whose model beats persistence
    sf_target_score *t;
    sf_season season;
    bool target_change;          // the model learnt changes (--target change)
    uint32_t horizon;
    // --horizon A-B: each step's scores (steps x ntargets, step-major; the
    // per-target ones above are their mean over steps); steps 1: none
    uint32_t steps, first_step;  // B - A + 1, and A
    sf_step_score *step;
} sf_score;

// Replica predictions (count, outputs) for x (count, window, inputs).
typedef int (*sf_predict_fn)(void *arg, float *out, const float *x, uint32_t count, sf_err *e);

typedef struct {
    const sf_pack *pack;
    const sf_plan *plan;          // the windows to score
    const sf_columns *cols;       // scaled as the model's training data (imputed targets are left out)
    const float *target_mean;     // per target, data units: the training rows' (NULL: cols')
    const sf_series *series;      // the series the plan's windows stay inside (segments, say)
    uint64_t nseries;
    const sf_season *season;
    uint32_t batch;               // windows per predict call
    const sf_loss *loss;          // the model's (NULL: MSE); its predictions are sf_loss_width per value
    sf_predict_fn predict;
    void *arg;
    uint64_t limit;               // scores the first limit windows in id order (0: every one)
    // Called after each batch with the windows scored so far and those to
    // score (NULL: none): a negative return fails the scoring, a positive one
    // stops it there (the scores cover the windows scored).
    int (*progress)(void *progress_arg, uint64_t scored, uint64_t total, sf_err *e);
    void *progress_arg;
} sf_score_opts;
// Scores the windows of o->plan (the first o->limit) into *s (its own:
// sf_score_free, also after a failure). Target values pack imputed are not scored; persistence
// and the seasonal value are read from the file, so a target that is no
// feature has them too.
int sf_score_run(sf_score *s, const sf_score_opts *o, sf_err *e);
void sf_score_free(sf_score *s);
// Target j's prediction in data units for window i of x (count, T,
// nfeatures) from the model's output pred (count, ntargets): a change (--target change)
// added to the window's last value, then unscaled, in float32 as predict writes it.
float sf_target_prediction(const sf_columns *c, uint32_t T, const float *x, const float *pred, uint32_t i, uint32_t j);
// The same for step k of steps, pred (count, steps, ntargets).
float sf_step_prediction(const sf_columns *c, uint32_t T, uint32_t steps, const float *x, const float *pred,
                         uint32_t i, uint32_t k, uint32_t j);
// The W predictions of a model of W per target value (a quantile model's),
// pred (count, steps, ntargets, W), into out in data units, ascending:
// quantiles sorted, so that they never cross.
void sf_step_quantiles(const sf_columns *c, uint32_t T, uint32_t steps, uint32_t W, const float *x, const float *pred,
                       uint32_t i, uint32_t k, uint32_t j, float *out);
// Target t's verdict against persistence and the seasonal forecast, one line.
void sf_target_verdict(const sf_target_score *t, char *buf, size_t cap);
// The per-target table (RMSE and MAE of each forecaster, the verdict) and
// the overall verdict, which names every target that does not beat persistence.
void sf_score_print(FILE *f, const sf_score *s);
// The overall verdict alone, one line.
void sf_score_verdict(const sf_score *s, char *buf, size_t cap);
// The scores as evaluate --json writes them (and the folds' JSON), into f:
// the keys "loss", the three baselines' and, for a quantile model,
// "quantile_loss" and "coverage", each after ", " but the first.
void sf_score_json_losses(FILE *f, const sf_score *s);
// The key "per_target" and its array: each target's values, losses,
// verdict, quantile losses and coverage, RMSE and MAE per forecaster.
void sf_score_json_targets(FILE *f, const sf_score *s);

// One row of a run's log (--log), kept in memory for the report.
typedef struct {
    uint64_t epoch, step;   // the epoch its steps belong to (from 1); Adam's step count
    double loss, val_loss;  // the epoch's mean loss so far (Keras'); val_loss NAN but at an epoch's end
    double lr, seconds;     // the steps' learning rate; wall seconds since the run's start, over resumes
    bool epoch_end;         // the epoch's last row (val_loss NAN without validation)
} sf_history_row;

// What the report says about the model: its history (this run's part,
// oldest first), the best epoch so far (0: none) and the end's scores.
typedef struct {
    const sf_history_row *rows;
    size_t nrows;
    uint64_t best_epoch;
    double best_val_loss;
    bool validation;        // the run has validation windows (not so with --val-split 0 or an empty part)
    const sf_score *score;  // the validation part at the run's end (NULL: not scored, an interrupted run)
} sf_report_model;

// One self-contained HTML page (no network): the model's loss and val_loss
// over the run against the baselines' val_loss (the validation part's MSE
// on scaled values of the training mean, persistence and the seasonal
// forecast), the lr, the best epoch, the per-target table and verdicts;
// then an SVG chart of replica 0's step time by phase over the run, the
// stages' utilisation, the diagnosis, the per-replica table and the run's
// settings (key, value pairs, NULL terminated). Written atomically.
int sf_report_write(const char *path, const sf_report_model *m, const float (*steps)[SF_PHASES], size_t nsteps,
                    const sf_replica_profile *replicas, uint32_t R, const sf_diagnosis *d,
                    const char *const *settings, sf_err *e);

// --series-features TEXT: "onehot" (*embed 0) or "embedding:D" (*embed D,
// 1 to 4096); SF_EUSAGE naming the flag for anything else.
int sf_series_features(const char *text, uint32_t *embed, sf_err *e);

// ---- the fit loop ----

// What `seqfeed train` does: the data file opened once, its columns and
// their scaling computed once and handed to the pipeline and to validation,
// the pipeline as `pipe` says, the trainer, then the steps. Strings are
// borrowed for the call.
typedef struct {
    const char *data;                // the .sfpack file
    const char *features, *targets;  // comma-separated column names (NULL: every column)
    enum sf_norm norm;
    const char *model;               // --model text
    sf_loss loss;                    // what training minimises (zeroed: MSE)
    // The pipeline: window, blocks, pool, reading, decoders, ring, lanes. The
    // fit sets its batch, replicas, shards, seed, epochs, split, remainder,
    // staging and trace from the rest.
    sf_pipe_opts pipe;
    uint32_t batch;                  // global batch, over every replica of every rank
    uint32_t replicas;               // this rank's
    uint64_t epochs, seed;
    double val_split;
    double max_gap;                  // seconds: no window spans a larger step between rows (0: any may)
    const char *time_features;       // "hour,weekday,yearday" or part of it: sin/cos features from the time (NULL: none)
    const char *future_features;     // features also read at the target rows (sf_columns_future; NULL: none)
    const char *series_features;     // --series-features: "onehot" or "embedding:D" (sf_series_features; NULL: none)
    bool target_change;              // predict each target's change from its value at the window's last row
    sf_adam adam;
    bool lr_linear;                  // lr x replicas
    const char *checkpoint_dir;      // NULL: no checkpoints
    uint64_t checkpoint_every;       // steps (0: at the end of every epoch only)
    bool resume;
    const char *log;                 // CSV, one row per epoch (NULL: none)
    uint64_t max_steps;              // stop after this many steps in this run (0: no limit)
    const char *trace;               // a Chrome trace of the run written here (NULL: none)
    const char *report;              // an HTML report of the run written here (NULL: none)
    const char *tensorboard;         // TensorBoard event files of the log's rows in DIR/train and
                                     // DIR/validation, as Keras' callback writes them (NULL: none)
    uint64_t memory_budget;          // bytes for replicas and pipeline (0: no budget); the shuffle pool
                                     // shrinks to fit, and too small a budget is an error
    bool progress;                   // epoch lines on stderr (a live bar on a TTY), then the profile
    atomic_int *interrupted;         // set by a signal handler to the signal's number (atomic: replica
                                     // threads read it)
    const sf_backend *backend;
    const int *devices;              // replica r's GPU (NULL: r), for the GPU backend
    enum sf_precision precision;
    enum sf_rnn_algo rnn_algo;       // GPU: cuDNN's LSTM algorithm
    bool late_loss;                  // GPU: sf_trainer_opts.late_loss
    bool cuda_graph;                 // GPU: sf_trainer_opts.cuda_graph
    bool overlap_reduce;             // sf_trainer_opts.overlap_reduce
    sf_ranks *ranks;                 // the job's ranks (NULL: this process alone); replicas and
                                     // devices are this rank's, batch the whole job's
    uint32_t season;                 // rows of a season for the end's seasonal baseline (0: from the time column)
    uint64_t early_stop;             // stop when val_loss has not improved for this many evaluations (0: never)
    double min_delta;                // an improvement of val_loss by less than this is none (--early-stop,
                                     // --lr-schedule plateau)
    // The lr's schedule (its lr: adam.lr; total_steps: 0, the fit plans it:
    // epochs x steps per epoch, or max_steps when fewer; a resume keeps the
    // checkpoint's); plateau needs validation.
    sf_lr_schedule lr_schedule;
    // Keras' steps_per_epoch: an epoch is this many steps (0: one pass over
    // the training windows); the passes follow one another, each the
    // pipeline's next epoch, so an epoch may end inside a pass or span several
    uint64_t steps_per_epoch;
    // Keras' validation_steps: each validation scores the first N batches of
    // batch windows of the validation part, in order, the same every time (0: all)
    uint64_t validation_steps;
    // A log row every this many steps (Adam's step count a multiple of it),
    // between epoch ends too (0: the default below, SF_LOG_EVERY_AUTO in
    // long epochs, else epoch ends only); a run that stops inside an epoch
    // logs a row there as well
    uint64_t log_every;
    // --norm-scope series: each series scaled by its own training rows'
    // statistics (sf_columns_scope), kept in the checkpoint by series name
    bool norm_series;
    // Cross-validation (--folds): this run is fold `fold` of `folds` (sf_split:
    // expanding time splits of each series, val_split unused); 0: none
    uint32_t folds, fold;
    // Where the end's scores go (moved there: the caller frees them with
    // sf_score_free), also when a resumed run has nothing left to train; NULL: not kept
    sf_score *keep_score;
} sf_fit_opts;

// log_every 0: a row every SF_LOG_EVERY_AUTO steps in runs whose epochs are
// longer than SF_LOG_LONG_EPOCH steps, else rows at epoch ends only (as
// Keras' CSVLogger): a run of ordinary epochs keeps a row per epoch.
enum { SF_LOG_EVERY_AUTO = 1000, SF_LOG_LONG_EPOCH = 10000 };

// The defaults: the default model, every column, z-score, the pipeline's
// defaults, global batch 32 on one CPU replica, 10 epochs, seed 1,
// validation split 0.1, Keras' Adam, progress on.
sf_fit_opts sf_fit_opts_default(void);

typedef struct {
    uint64_t steps, epochs;             // done in this run
    double loss, val_loss;              // of the last epoch (val_loss NAN without validation)
    double samples_per_s, input_wait;   // over the run; input_wait as a share of replica time
    int interrupted;                    // 0, or the signal that stopped the run (sf_step_info)
    sf_diagnosis diagnosis;             // of the run (after its first step)
    // The lowest val_loss of the run so far, resumed parts included, and the
    // epoch that reached it (0 and NAN: no val_loss yet); DIR/best.safetensors
    // holds that epoch's checkpoint.
    uint64_t best_epoch;
    double best_val_loss;
    uint64_t early_stopped;             // the epoch after which --early-stop ended the run (0: it did not)
    bool complete;                      // the run has trained its --epochs, or early stopping ended it
                                        // (a resume that found it so too): not stopped part way
} sf_fit_result;

// Trains as o says; *res is filled as far as the run went. An option whose
// value cannot work with this data (a batch the replicas do not divide, an
// unknown column, a bad --model) is SF_EUSAGE with the option named.
int sf_fit(const sf_fit_opts *o, sf_fit_result *res, sf_err *e);
// Whether a run may go on from precision a to b (names): the same, or
// both keep fp32 weights (fp32, tf32); bf16 runs are others.
bool sf_precision_same_weights(const char *a, const char *b);

// The data of a run as sf_fit opens it: the file, its columns as o says
// (features, targets, time features, --target change) scaled by the
// statistics of the training part's rows, and its series cut at --max-gap.
typedef struct {
    sf_pack *pack;
    sf_columns cols;
    sf_series *segments;  // the series cut at --max-gap (NULL: the file's series)
    uint64_t nsegments;
    sf_col_stats *stats;  // each column's over the training part's rows, which scale them
    uint64_t stats_rows;
    uint64_t scope_fallbacks;  // --norm-scope series: (series, column) pairs scaled globally, flat in the series
} sf_run_data;
// Opens o->data into *d (its own: close it with sf_run_data_close, also
// after a failure). SF_EUSAGE naming an option that cannot work here.
int sf_run_data_open(sf_run_data *d, const sf_fit_opts *o, sf_err *e);
void sf_run_data_close(sf_run_data *d);
// The series windows stay inside (the segments, else the file's), *n of them.
const sf_series *sf_run_data_series(const sf_run_data *d, uint64_t *n);
// The pipeline of rank `rank`'s replicas in a job of nranks ranks, as the
// fit runs it: its shards of the training part, per-replica batches of
// o->batch / (replicas x nranks), full batches only, o's seed and epochs.
sf_pipe_opts sf_run_pipe_opts(const sf_fit_opts *o, const sf_run_data *d, uint32_t replicas, int rank, int nranks);
// The parts of the run's global batch (sf_pipe_parts of its pipeline as
// sf_run_pipe_opts sets it: o->batch, not o->pipe.batch), known before the
// data is opened.
uint32_t sf_fit_parts(const sf_fit_opts *o);
// The part of the file's series (in) a run trains or validates on: its
// --val-split, or its fold.
sf_split sf_fit_split(const sf_fit_opts *o, const sf_pack_info *in, enum sf_part part);
// Whether the run has a validation part: --val-split above 0, or a fold.
bool sf_fit_validates(const sf_fit_opts *o);

// ---- cross-validation (train --folds K) ----

// Whether every fold of o (o->folds) has a global batch of training windows
// and a validation window: SF_EUSAGE naming the first that has not and how
// many rows a series needs, else 0.
int sf_folds_check(const sf_fit_opts *o, sf_err *e);
// The folds of a cross-validation: fold k's end scores at score[k - 1]
// (ntargets 0: not scored, a fold not ended) and checkpoint directory at
// dirs[k - 1].
typedef struct {
    uint32_t folds;
    const sf_score *score;
    const char *const *dirs;
    sf_loss loss;  // the folds' training loss (--loss), the one their scores hold
} sf_folds;
// The table: each fold's training loss (scaled values; MSE by default) of
// the model and the baselines, then per target the mean, std (over the
// folds, ddof 0), min and max of each forecaster's loss and its mean RMSE
// in data units (a quantile model's: of its point forecast); a quantile
// model's coverage of [lowest, highest] per fold and over them.
void sf_folds_print(FILE *f, const sf_folds *cv);
// The same as JSON (each fold's scores with evaluate --json's keys),
// written atomically.
int sf_folds_write_json(const char *path, const sf_folds *cv, sf_err *e);
// The same as an HTML page, each fold linked to its run report (reports[k -
// 1], NULL: none); written atomically.
int sf_folds_write_report(const char *path, const sf_folds *cv, const char *const *reports, sf_err *e);

// What benchmarks add to a fit (seqfeed bench train and scaling).
typedef struct {
    uint64_t warmup_steps;  // left out of the result's samples/s and input wait
    bool resident;          // every step retrains each replica's first batch: no input
                            // at all, the bound the real run is compared with
    FILE *profile_out;      // the per-replica profile and the diagnosis also go here (NULL: none)
    // Time to a target (bench scaling): every evaluation (an epoch's end:
    // --steps-per-epoch apart) goes to evaluated (NULL: none) with Adam's
    // step count, the val_loss, the seconds the steps took so far (their
    // wall time from the first step on: validation and the loop's work
    // between steps left out) and this process's CPU seconds over the same
    // steps (every thread's: replicas and pipeline), on every rank; the run
    // stops after the first whose val_loss is at or below target_loss (0 or
    // NAN: never).
    double target_loss;
    void (*evaluated)(void *arg, uint64_t step, double val_loss, double seconds, double cpu_seconds);
    void *arg;
} sf_fit_bench;
// 0 when o's run gets past the checks it makes before it creates any
// weights, threads or files (its batch among the replicas, its data, its
// model, its training windows), else the error it would stop with.
int sf_fit_check(const sf_fit_opts *o, sf_err *e);
// sf_fit, measured as b says (NULL: as sf_fit).
int sf_fit_measured(const sf_fit_opts *o, const sf_fit_bench *b, sf_fit_result *res, sf_err *e);

// The windows a checkpoint predicts on a file (predict_data.c), as predict
// and evaluate cut them and as libseqfeed gives them to the exported Keras
// model: the checkpoint's columns resolved against the file (its categories'
// inputs in its order, its time features, --target change), scaled by the
// checkpoint's training data (data_units: not scaled at all, every scale 1
// and offset 0, as the exported model takes them), the series cut at its
// --max-gap, and the plan of part's windows (the checkpoint's --val-split).
typedef struct {
    sf_pack *pack;
    sf_columns cols;
    sf_plan *plan;
    sf_series *segments;  // the series cut at --max-gap (NULL: the file's)
    uint64_t nsegments;
} sf_predict_data;
// Opens data into *d (its own: sf_predict_data_close, also after a
// failure). No window in the part is SF_EINVAL saying why; all is how the
// caller's user asks for every window ("--split all"), the hint when a
// part has none.
int sf_predict_data_open(sf_predict_data *d, const sf_checkpoint *ck, const char *data, enum sf_part part,
                         bool data_units, const char *all, sf_err *e);
void sf_predict_data_close(sf_predict_data *d);
// The row window id predicts: its last row plus the horizon (with several
// steps, the last step's; step k of steps is steps - 1 - k rows before it).
uint64_t sf_predict_target_row(const sf_plan *plan, uint64_t id);

#endif
