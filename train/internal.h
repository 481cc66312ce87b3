// What the train files share and nobody else sees: the trainer's state
// (trainer.c, allreduce.c) and where a run starts (fit.c, resume.c).
#ifndef SF_TRAIN_INTERNAL_H
#define SF_TRAIN_INTERNAL_H

#include <pthread.h>

#include "train.h"

enum { SF_STEP_RING = 65536 };  // steps kept for percentiles: a bounded buffer however long the run

typedef struct {
    struct sf_trainer *t;
    uint32_t r;
    sf_replica *rep;
    pthread_t thread;
    double phase[SF_PHASES];  // this step's seconds in each phase (other: the rest)
    double loss;              // this step's summed row losses
    double start;             // this step's start
    uint64_t steps;           // steps profiled
    double first, last;       // the first profiled step's start, the last one's end
    double gap, paused;       // the pause before this step (between runs), and those between profiled steps
    double total[SF_PHASES];
    double part[SF_OTHER_PARTS], part_total[SF_OTHER_PARTS];  // of other: this step's, all steps'
    uint64_t wait_count[SF_LAT_BUCKETS];  // steps by their input wait (sf_lat_bucket)
    double wait_sum[SF_LAT_BUCKETS];      // and those waits' seconds
    float (*ring)[SF_PHASES + 1];  // per step: the phases, then the step
    int track;                // in the trace
    bool warm;                // past the run's first step
    uint32_t got;  // windows in this step's batch (0: none), read by replica 0 after the barrier
    uint32_t nterms;  // the gradient buffers this step left to sum: its parts (train_parts), or 1
    uint32_t row0[SF_MAX_PARTS];  // each part's first row in the global batch
    int rc;        // of this step: 1 trained, 0 source ended, < 0 error
    sf_err e;
} sf_worker;

// Across ranks on a backend that reports each layer's gradients as final
// (CPU), the sum across ranks goes a layer at a time and starts while the
// layers below are still in their backward pass (allreduce.c).
typedef struct {
    uint32_t n;                            // layers with parameters; 0: one sum after the backward
    uint32_t layer[SF_MODEL_MAX_LAYERS];   // top first: the order the sums start in, on every rank
    pthread_mutex_t mu;                    // the replicas' threads report under it
    uint32_t ready[SF_MODEL_MAX_LAYERS];   // per layer: replicas done with it this step
    uint32_t started, done;                // sums started this step; the first `done` of them complete
    double since[SF_MODEL_MAX_LAYERS];     // when each started
    int rc;                                // the first failure this step
    sf_err e;
    int track;                             // in the trace
} sf_buckets;

struct sf_trainer {
    const sf_backend *be;
    const sf_model *m;
    uint32_t R;
    bool late;     // the backend's loss is read after the update is queued
    bool overlap;  // sums start during the backward pass
    bool sum_parts;  // the job's one replica sums its parts itself (sf_replica_opts)
    sf_worker *w;
    sf_adam adam;
    sf_lr_schedule sched;  // each step's lr (sched.lr: adam.lr)
    double lr_scale;       // plateau's multiplier on it, set between runs
    uint64_t step;
    void *group;      // the backend's own reduction, when it has one
    sf_ranks *ranks;
    uint32_t first;   // global index of replica 0
    uint32_t batch, parts;  // sf_trainer_opts.global_batch, .parts
    float *prefix;    // on a rank after the first: the sum of the ranks before
    atomic_int *interrupted;
    const char *data;  // sf_trainer_opts.data
    // the step as the ranks agreed on it (or this process's alone)
    uint32_t global;
    double loss, wait;
    int interrupt;  // sf_step_info.interrupted
    sf_trace *trace;
    sf_buckets bk;
    sf_staging *staging;  // the backend's, when it stages batches onto devices
    sf_stage_ops hooks;
    double step_delay;  // SEQFEED_TEST_DELAY's step: the least seconds a forward and backward take
    pthread_barrier_t bar;
    // Threads wait at the gate until all have started (go 1), or leave
    // (go -1): the barrier needs every one of them.
    pthread_mutex_t gate;
    pthread_cond_t gate_cv;
    int go;
    // one run's
    const sf_batch_source *src;
    uint64_t seed;
    sf_step_hook hook;
    void *hook_arg;
    uint64_t limit, done;  // steps this run may take (0: until the source ends), and took
    bool stop;
    int rc;
    sf_err err;
};

// ---- profile.c ----

// A step begins at now after a pause between runs (the caller's work, no
// step's): nothing since the last step's end is counted.
void sf_profile_resume(sf_worker *w, double now);
// The replica's step that began at w->start ends at now (none before the
// first call): its phases (w->phase, then zeroed; other is what the rest
// leaves) into the profile, but the run's first step's. The next begins.
void sf_profile_step(sf_worker *w, double now);

// ---- allreduce.c ----

// The backend's own group (NCCL) over every rank's replicas, when it has
// one: t->group. A collective across ranks.
int sf_allreduce_open(sf_trainer *t, sf_err *e);
// Replica r's part of the step's sum (every replica's thread calls it after
// its backward pass): then every replica's gradient buffer holds the sum
// over every replica of the job, in a fixed order. 0 or a negative code.
int sf_allreduce(sf_trainer *t, uint32_t r, sf_err *e);
// After a run that stopped between the backward pass and the sum: waits for
// the sums in flight when every layer's was started and no collective
// failed (a stop the ranks agreed on), so that none outlives the run; else
// leaves them to the job's abort.
void sf_allreduce_settle(sf_trainer *t);

// ---- history.c ----

enum { SF_HISTORY_MAX = 4096 };  // rows kept, however long the run
// A run's log rows, at most SF_HISTORY_MAX: when full, every other row
// between epoch ends is dropped and from then on only every other one of
// them is kept (every other epoch's row, once none between is left), so
// the rows stay spread over the run.
typedef struct {
    sf_history_row *rows;
    size_t n;
    uint64_t stride[2], seen[2];  // per kind (0: between epoch ends, 1: an epoch's end): keep every stride-th
} sf_history;
// Adds r (or leaves it out, as the strides say). SF_ENOMEM the first time only.
int sf_history_add(sf_history *h, const sf_history_row *r, sf_err *e);
void sf_history_free(sf_history *h);

// ---- resume.c ----

// The run's record, as a checkpoint keeps it: settings from o and the
// data's columns and scaling (borrowed from cols: c is a view), for
// replicas replicas in all. SF_EINVAL when the column names do not fit.
int sf_run_record(sf_checkpoint *c, const sf_fit_opts *o, const sf_pack_info *in, const sf_columns *cols,
                  const sf_model *m, uint32_t replicas, sf_err *e);
// data's path from dir ("../s.sfpack") into out (cap bytes), "" when either
// cannot be resolved: a resume from another directory finds it by that.
void sf_run_data_from_dir(char *out, size_t cap, const char *data, const char *dir);
// Every rank has the same record and data layout (a collective).
int sf_run_agree(sf_ranks *ranks, const sf_checkpoint *c, const sf_fit_opts *o, uint32_t replicas,
                 const sf_pack_info *in, sf_err *e);

// Where a run starts, and its interrupted epoch so far.
typedef struct {
    bool resumed;
    uint64_t epoch, epoch_step, step;
    double loss_sum, wait, seconds;
    uint64_t samples;
    uint64_t best_epoch, since_improved;  // the validation record (sf_checkpoint's; best_epoch 0: none)
    double best_val_loss, improved_val_loss;
    uint64_t lr_total_steps;  // cosine's planned steps (resumed; 0: plan them)
    sf_plateau plateau;       // where plateau stands
} sf_run_start;
// Loads every replica: with o->resume, from checkpoint_dir/latest.safetensors
// when there is one (rank 0 reads it, checks it against run, and sends it
// to every rank), else Keras' initialisers from o->seed. talk: say what
// happens on stderr. A collective.
int sf_run_start_weights(sf_trainer *t, const sf_model *m, const sf_checkpoint *run, const sf_fit_opts *o,
                         bool talk, sf_run_start *st, sf_err *e);

// ---- tensorboard.c ----

// A run's TensorBoard event files (--tensorboard DIR), laid out as Keras'
// TensorBoard callback lays them out: DIR/train and DIR/validation, a
// TensorBoard run each, each with a new event file.
typedef struct {
    int fd[2];      // DIR/train's file, DIR/validation's (-1: not open)
    char *path[2];  // their paths, for messages
} sf_tboard;
// Creates DIR (and its parents) and its two run directories where missing,
// and a new event file in each (never a file that is there, never through a
// symbolic link), named to sort after those there; each begins with its
// file_version and a SessionLog START at step `first`, from which on
// TensorBoard drops what earlier files of the run hold (a resumed run's
// first step: the rows a killed run logged past its checkpoint). *earlier:
// there were event files there already. SF_EUSAGE when DIR, or a run
// directory in it, is not a directory.
int sf_tboard_open(sf_tboard *t, const char *dir, uint64_t first, bool *earlier, sf_err *e);
// A row of the log, as Keras' scalars: batch_loss, batch_learning_rate,
// batch_samples_per_s, batch_input_wait at Adam's step count; at an epoch's
// end also epoch_* at the epoch (from 0), and val_loss (when not NaN) as the
// validation run's epoch_loss and evaluation_loss_vs_iterations. Written at
// once (one write per file), and fsync'd at an epoch's end.
int sf_tboard_row(sf_tboard *t, const sf_history_row *r, double samples_per_s, double input_wait, sf_err *e);
// fsyncs (when e is not NULL, checked) and closes both files.
int sf_tboard_close(sf_tboard *t, sf_err *e);
// TFRecord's masked CRC-32C of n bytes.
uint32_t sf_tboard_masked_crc(const void *data, size_t n);

#endif
