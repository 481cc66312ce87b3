// seqfeed train: the fit loop (train/fit.c) from the command line, on GPUs
// when there are any, under a launcher as one rank of a job.
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static const cli_use train_uses[] = {
    {.opt = OPT_DATA, .help = "the .sfpack file (required)"}, {.opt = OPT_FEATURES}, {.opt = OPT_TARGETS}, {.opt = OPT_TARGET},
    {.opt = OPT_NORM},
    {.opt = OPT_NORM_SCOPE},
    {.opt = OPT_WINDOW}, {.opt = OPT_STRIDE}, {.opt = OPT_SAMPLING_RATE}, {.opt = OPT_HORIZON},
    {.opt = OPT_MAX_GAP}, {.opt = OPT_TIME_FEATURES}, {.opt = OPT_FUTURE_FEATURES}, {.opt = OPT_SERIES_FEATURES}, {.opt = OPT_SEASON}, {.opt = OPT_MODEL}, {.opt = OPT_LOSS}, {.opt = OPT_BATCH_SIZE}, {.opt = OPT_REPLICAS, .def = "one per GPU, or 1 on CPU"},
    {.opt = OPT_EPOCHS}, {.opt = OPT_VAL_SPLIT}, {.opt = OPT_LR}, {.opt = OPT_LR_SCALING},
    {.opt = OPT_LR_SCHEDULE}, {.opt = OPT_WARMUP_STEPS}, {.opt = OPT_LR_MIN}, {.opt = OPT_LR_FACTOR},
    {.opt = OPT_LR_PATIENCE}, {.opt = OPT_SEED}, {.opt = OPT_MAX_STEPS},
    {.opt = OPT_STEPS_PER_EPOCH}, {.opt = OPT_VALIDATION_STEPS}, {.opt = OPT_EARLY_STOP},
    {.opt = OPT_MIN_DELTA}, {.opt = OPT_FOLDS}, {.opt = OPT_GPUS}, {.opt = OPT_PRECISION}, {.opt = OPT_RNN_ALGO},
    {.opt = OPT_DEFERRED_LOSS}, {.opt = OPT_CUDA_GRAPH},
    {.opt = OPT_OVERLAP_REDUCE}, {.opt = OPT_MEMORY_BUDGET},
    {.opt = OPT_POOL}, {.opt = OPT_LANES}, {.opt = OPT_BLOCK_CHUNKS}, {.opt = OPT_DECODERS}, {.opt = OPT_PREFETCH},
    {.opt = OPT_SLOTS}, {.opt = OPT_DEPTH}, {.opt = OPT_IO}, {.opt = OPT_DIRECT}, {.opt = OPT_PIPELINE}, {.opt = OPT_CHECKPOINT_DIR},
    {.opt = OPT_CHECKPOINT_EVERY}, {.opt = OPT_RESUME}, {.opt = OPT_LOG}, {.opt = OPT_LOG_EVERY}, {.opt = OPT_TRACE}, {.opt = OPT_REPORT}, {.opt = OPT_TENSORBOARD},
    {.opt = OPT_COLLECTIVE_TIMEOUT}, {.opt = OPT_QUIET}, {.opt = OPT_HELP}, {.opt = OPT_COUNT}};

static const cli_command train_command = {
    .name = "train",
    .usage = "--data FILE.sfpack [options]   |   --checkpoint-dir DIR --resume [--epochs N]",
    .about =
        "Trains the Keras stacked-LSTM model on windows of the file with mirrored\n"
        "data parallelism (tf.distribute.MirroredStrategy): each replica takes\n"
        "batch-size / replicas windows per step, gradients are summed across\n"
        "replicas with the loss scaled by 1 / batch-size, and every replica applies\n"
        "the same Adam update. One line per epoch (a live bar on a terminal) with\n"
        "loss, val_loss, samples/s and the share of time spent waiting for input.\n"
        "Ctrl-C (and, under a launcher, SIGTERM) stops at the next step and writes a\n"
        "checkpoint.\n"
        "\n"
        "Under mpirun or srun every rank trains its --replicas (its share of the\n"
        "machine's GPUs, or CPU replicas) and --batch-size is the whole job's;\n"
        "rank 0 writes checkpoints, logs and reports (docs/MULTI-NODE.md).\n",
    .uses = train_uses,
    .epilog =
        "After training it prints where each replica's steps went (input, copy, compute,\n"
        "all-reduce, update, other: mean, p50, p99; each share with its spread over\n"
        "steps) and a diagnosis: how input bound the run was (TensorFlow's classes),\n"
        "stalls shorter than the scheduler's measured wake-up apart as noise, and the\n"
        "stage or phase that limits it, with a hint only where the run measured its\n"
        "premise; a run under 50 steps or 1 s is too short to judge (docs/TRAINING.md).\n",
};

static atomic_int interrupted;  // lock-free, so a signal handler may set it

static void on_signal(int sig) {
    interrupted = sig;
    signal(sig, SIG_DFL);  // a second Ctrl-C stops at once
}

// Under a launcher SIGTERM is the launcher ending the job: cancelled or
// preempted (scancel, Ctrl-C on mpirun), or another rank failed. One line
// that says which rank this is; then, as for Ctrl-C, every rank stops after
// the same step and rank 0 writes a checkpoint, if the launcher leaves the
// time (Slurm's KillWait; mpirun's SIGKILL follows within about a second)
// and every rank is alive (else the launcher's SIGKILL, or the collective
// timeout, ends this one). A second SIGTERM stops at once.
static char term_msg[256];
static void on_term_now(int sig) { _exit(128 + sig); }
static void on_term(int sig) {
    (void)sig;
    ssize_t w = write(2, term_msg, strlen(term_msg));
    (void)w;
    interrupted = SIGTERM;
    signal(SIGTERM, on_term_now);
}

static int train(sf_fit_opts *o, const char *gpus, const char *precision, bool replicas_given);
static int train_folds(const sf_fit_opts *top, bool default_dir);
static int run_train(sf_fit_opts *o, const char *gpus, const char *precision, bool replicas_given, double timeout);

// A list of names spelled as checkpoints spell them (quotes only where
// needed), so that "a, b" and "a,b" compare equal; the text itself when it
// is not a list.
static void normal_list(const char *list, char *out, size_t cap) {
    char name[4096];
    size_t len = 0;
    out[0] = 0;
    for (const char *p = list && *list ? list : NULL; p;)
        if (sf_list_next(&p, name, sizeof name) || sf_list_append(out, cap, &len, name)) {
            snprintf(out, cap, "%s", list);
            return;
        }
}

// The checkpoint a resumed run took its precision from ("": given, or none
// kept), for the error when this machine cannot compute in it.
static char precision_from[4200];
// A resumed run's log and --tensorboard DIR, from the checkpoint's directory.
static char log_path[8400], tensorboard_path[8400];

// A flag that contradicts the checkpoint: the exit code, else 0.
static int differs(cli_opt opt, const char *given, const char *theirs, const char *path) {
    if (!strcmp(given, theirs)) return 0;
    return cli_usage_error("train", "--%s %s differs from the checkpoint's %s in %s (hint: --resume continues the run "
                           "as it was: leave --%s out, or start afresh in another --checkpoint-dir)", cli_opt_name(opt),
                           given[0] ? given : "''", theirs[0] ? theirs : "(none)", path, cli_opt_name(opt));
}

// Whether path holds the run's data: 1 (its fingerprint is the
// checkpoint's, or the checkpoint keeps none), 0 (another file, or one that
// does not open), -1 (no such file).
static int run_data(const char *path, uint64_t fingerprint) {
    if (access(path, F_OK) != 0) return -1;
    if (!fingerprint) return 1;
    sf_pack *p;
    sf_err e = {0};
    if (sf_pack_open(&p, path, &e)) return 0;
    bool same = sf_pack_get_info(p)->fingerprint == fingerprint;
    sf_pack_close(p);
    return same;
}

// x in the fewest digits that read back as x (0.1, not 0.10000000000000001),
// so that two values print alike exactly when they are equal.
static void shortest(char *out, size_t cap, double x) {
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(out, cap, "%.*g", digits, x);
        if (strtod(out, NULL) == x) return;
    }
}

// --resume: the lr's schedule and its settings are the checkpoint's (one
// from before they were kept: constant). A setting of another schedule than
// the run's is left to check_schedule. 0, or the exit code.
static int resume_schedule(const cli_value *v, sf_fit_opts *o, const sf_checkpoint *ck, const char *path) {
    enum sf_lr_kind kind = SF_LR_CONSTANT;
    sf_lr_kind_parse(ck->lr_schedule, &kind);
    char given[64], theirs[64];
    int rc;
    if (v[OPT_LR_SCHEDULE].set &&
        (rc = differs(OPT_LR_SCHEDULE, sf_lr_kind_name(o->lr_schedule.kind), sf_lr_kind_name(kind), path)))
        return rc;
    const struct {
        cli_opt opt;
        bool applies;
        double mine, theirs;
    } nums[] = {{OPT_WARMUP_STEPS, true, (double)o->lr_schedule.warmup_steps, (double)ck->warmup_steps},
                {OPT_LR_MIN, kind != SF_LR_CONSTANT, o->lr_schedule.lr_min, ck->lr_min},
                {OPT_LR_FACTOR, kind == SF_LR_PLATEAU, o->lr_schedule.factor, ck->lr_factor},
                {OPT_LR_PATIENCE, kind == SF_LR_PLATEAU, (double)o->lr_schedule.patience, (double)ck->lr_patience},
                {OPT_MIN_DELTA, kind == SF_LR_PLATEAU, o->min_delta, ck->min_delta}};
    for (size_t k = 0; k < sizeof nums / sizeof *nums; k++) {
        if (!v[nums[k].opt].set || !nums[k].applies) continue;
        shortest(given, sizeof given, nums[k].mine);
        shortest(theirs, sizeof theirs, nums[k].theirs);
        if ((rc = differs(nums[k].opt, given, theirs, path))) return rc;
    }
    o->lr_schedule.kind = kind, o->lr_schedule.warmup_steps = ck->warmup_steps, o->lr_schedule.lr_min = ck->lr_min;
    o->lr_schedule.factor = ck->lr_factor, o->lr_schedule.patience = ck->lr_patience;
    return 0;
}

// The schedule's options belong to the schedules that use them, and
// plateau needs validation. 0, or the exit code.
static int check_schedule(const cli_value *v, const sf_fit_opts *o) {
    enum sf_lr_kind kind = o->lr_schedule.kind;
    static const struct {
        cli_opt opt;
        const char *of;
        bool cosine, plateau;
    } own[] = {{OPT_LR_MIN, "cosine or plateau", true, true}, {OPT_LR_FACTOR, "plateau", false, true},
               {OPT_LR_PATIENCE, "plateau", false, true}};
    for (size_t k = 0; k < sizeof own / sizeof *own; k++)
        if (v[own[k].opt].set && !(kind == SF_LR_COSINE ? own[k].cosine : kind == SF_LR_PLATEAU && own[k].plateau)) {
            // A resume keeps its checkpoint's schedule (resume_schedule): naming another would be refused.
            char other[64] = "";
            if (!o->resume) snprintf(other, sizeof other, "--lr-schedule %s, or ", own[k].cosine ? "cosine" : "plateau");
            return cli_usage_error("train", "--%s belongs to --lr-schedule %s, and this run's is %s%s (hint: %sleave "
                                   "--%s out)", cli_opt_name(own[k].opt), own[k].of, sf_lr_kind_name(kind),
                                   v[OPT_LR_SCHEDULE].set ? "" : o->resume ? " (the checkpoint's)" : " (the default)",
                                   other, cli_opt_name(own[k].opt));
        }
    if (v[OPT_MIN_DELTA].set && kind != SF_LR_PLATEAU && !o->early_stop)
        return cli_usage_error("train", "--min-delta says what counts as an improvement of val_loss for --early-stop "
                               "and --lr-schedule plateau, and this run has neither (hint: add --early-stop N, or "
                               "leave --min-delta out)");
    if (kind == SF_LR_PLATEAU && !sf_fit_validates(o))
        return cli_usage_error("train", "--lr-schedule plateau lowers the lr when val_loss stops improving, and "
                               "--val-split 0 leaves no validation (hint: a --val-split above 0, or another "
                               "--lr-schedule)");
    // In float32, as the lr is kept and plateau compares: --lr-min 0.001 is
    // --lr 0.001's value, though the double is below the float.
    if (kind != SF_LR_CONSTANT && (float)o->lr_schedule.lr_min >= o->adam.lr)
        return cli_usage_error("train", "--lr-min %g is not below --lr %g: the lr would never %s (hint: a smaller "
                               "--lr-min)", o->lr_schedule.lr_min, (double)o->adam.lr,
                               kind == SF_LR_COSINE ? "decay" : "be reduced");
    return 0;
}

// --resume: what decides the run comes from its checkpoint, so that
// --checkpoint-dir alone resumes it; a flag given that says otherwise is a
// usage error naming both values. 0, or the exit code.
static int resume_settings(const cli_args *a, sf_fit_opts *o, sf_checkpoint *ck, const char **precision,
                           char *data, size_t data_cap) {
    const cli_value *v = a->v;
    char path[4200], given[8192], theirs[8192];
    snprintf(path, sizeof path, "%s/latest.safetensors", o->checkpoint_dir);
    if (access(path, F_OK) != 0) {
        // With --data a run that was never checkpointed starts afresh (fit
        // says so): the same command line serves every attempt of a job.
        sf_err ce = {0};
        char pid[32], fold1[4200];
        // A run still in its first epoch has written no latest yet (a
        // cross-validation's, in its first fold's directory).
        snprintf(fold1, sizeof fold1, "%s/fold-1", o->checkpoint_dir);
        if (sf_checkpoint_dir_owner(o->checkpoint_dir, pid, sizeof pid) ||
            sf_checkpoint_dir_owner(fold1, pid, sizeof pid))
            return cli_usage_error("train", "--checkpoint-dir %s is in use by another run (PID %s), which has "
                                   "written no checkpoint yet: wait for it to end, then --resume continues it if it "
                                   "stopped early", o->checkpoint_dir, pid);
        if (sf_checkpoint_dir_check(o->checkpoint_dir, true, &ce)) return cli_usage_error("train", "%s", ce.msg);
        if (!v[OPT_DATA].set)
            return cli_usage_error("train", "there is no checkpoint in %s (no latest.safetensors): nothing to resume "
                                   "(hint: leave --resume out, and give --data, to start a run there)",
                                   o->checkpoint_dir);
        return 0;
    }
    sf_model m;
    sf_err e = {0};
    int rc;
    if (sf_checkpoint_read(path, ck, &m, &e)) return cli_fail("train", &e, NULL);
    // Older versions took a window's target from its own last row (horizon
    // 0): going on would train that run's task without a word.
    if (ck->window.horizon == 0)
        return cli_usage_error("train", "%s: the run predicts its windows' own last row (window horizon 0, from an "
                               "older seqfeed): --resume trains only for a later row, --horizon 1 and up (hint: "
                               "predict and evaluate still read it; start a new run in another --checkpoint-dir)",
                               path);
    // Given: the same data moved (its fingerprint must match). Else the
    // checkpoint's, from this directory, or else as seen from the
    // checkpoint's directory (a resume started elsewhere).
    // The first candidate whose content is the run's: another file of the
    // same relative name in this directory is passed over.
    if (!v[OPT_DATA].set) {
        const char *near = ck->data_from_dir[0] ? ck->data_from_dir : ck->data;  // older checkpoints: data itself
        bool two = ck->data[0] != '/' &&
                   snprintf(data, data_cap, "%s/%s", o->checkpoint_dir, near) < (int)data_cap &&
                   strcmp(data, ck->data);  // a resume from elsewhere keeps the path it used
        const char *tried[2] = {ck->data, two ? data : NULL};
        int found[2] = {-1, -1};
        for (int k = 0; k < 2 && !o->data; k++)
            if (tried[k] && (found[k] = run_data(tried[k], ck->data_fingerprint)) == 1) o->data = tried[k];
        if (!o->data && found[0] < 0 && found[1] < 0 && two)
            return cli_usage_error("train", "%s: the run's data %s is neither in this directory nor at %s (hint: "
                                   "--data FILE.sfpack names where it is now)", path, ck->data, data);
        if (!o->data && found[0] < 0 && found[1] < 0)
            return cli_usage_error("train", "%s: the run's data %s is missing (hint: --data FILE.sfpack names where "
                                   "it is now)", path, ck->data);
        if (!o->data) {
            char said[2][4300];
            for (int k = 0; k < 2; k++)
                snprintf(said[k], sizeof said[k], !tried[k] ? "" : found[k] < 0 ? "%s%s (missing)"
                                                                  : "%s%s (another file: its content differs)",
                         k ? ", " : "", tried[k] ? tried[k] : "");
            return cli_usage_error("train", "%s: the run's data %s was not found: tried %s%s (hint: --data "
                                   "FILE.sfpack names where it is now)", path, ck->data, said[0], said[1]);
        }
    }
    // The log goes on where it was written, and so do TensorBoard's events,
    // whatever the directory the resume starts in (checkpoints from before
    // either was kept: none).
    if (!v[OPT_LOG].set && ck->log[0]) {
        o->log = ck->log;
        if (ck->log[0] != '/' && strcmp(ck->log, "-") && ck->log_from_dir[0] &&
            snprintf(log_path, sizeof log_path, "%s/%s", o->checkpoint_dir, ck->log_from_dir) < (int)sizeof log_path)
            o->log = log_path;
    }
    if (!v[OPT_TENSORBOARD].set && ck->tensorboard[0]) {
        o->tensorboard = ck->tensorboard;
        if (ck->tensorboard[0] != '/' && ck->tensorboard_from_dir[0] &&
            snprintf(tensorboard_path, sizeof tensorboard_path, "%s/%s", o->checkpoint_dir,
                     ck->tensorboard_from_dir) < (int)sizeof tensorboard_path)
            o->tensorboard = tensorboard_path;
    }
    // Precision too (a checkpoint from before it was kept: as given, or the default).
    // tf32 is a way to compute with fp32 weights: a run goes from one to the
    // other when asked (a GPU job restarted on a CPU node); bf16 weights
    // are another run's.
    if (ck->precision[0] && *precision && strcmp(*precision, ck->precision) &&
        sf_precision_same_weights(*precision, ck->precision)) {
        if (o->progress)
            fprintf(stderr, "resume: --precision %s from here on (the run trained in %s until now; both keep fp32 "
                    "weights): its checkpoints record %s\n", *precision, ck->precision, *precision);
    } else if (ck->precision[0]) {
        if (*precision && (rc = differs(OPT_PRECISION, *precision, ck->precision, path))) return rc;
        if (!*precision) snprintf(precision_from, sizeof precision_from, "%s", path);
        *precision = ck->precision;
    }
    // The loss decides the model's outputs and what its weights learnt: another is another run.
    if (v[OPT_LOSS].set) {
        sf_loss_format(&o->loss, given, sizeof given);
        sf_loss_format(&m.loss, theirs, sizeof theirs);
        if ((rc = differs(OPT_LOSS, given, theirs, path))) return rc;
    }
    o->loss = m.loss;
    if (v[OPT_MODEL].set) {
        sf_model gm;
        if (sf_model_parse_loss(&gm, o->model, ck->inputs, ck->outputs * sf_window_steps(&ck->window), &m.loss,
                                &e) == 0)
            sf_model_format(&gm, given, sizeof given);
        else snprintf(given, sizeof given, "%s", o->model);
        snprintf(theirs, sizeof theirs, "%s", ck->model);
        if ((rc = differs(OPT_MODEL, given, theirs, path))) return rc;
    }
    o->model = ck->model;
    const struct {
        cli_opt opt;
        const char **field;
        const char *value;
    } lists[] = {{OPT_FEATURES, &o->features, ck->features}, {OPT_TARGETS, &o->targets, ck->targets},
                 {OPT_TIME_FEATURES, &o->time_features, ck->time_features},
                 {OPT_FUTURE_FEATURES, &o->future_features, ck->future_features}};
    for (size_t k = 0; k < sizeof lists / sizeof *lists; k++) {
        if (v[lists[k].opt].set) {
            normal_list(*lists[k].field, given, sizeof given);
            snprintf(theirs, sizeof theirs, "%s", lists[k].value);
            if ((rc = differs(lists[k].opt, given, theirs, path))) return rc;
        }
        *lists[k].field = lists[k].value[0] ? lists[k].value : NULL;
    }
    // The numbers, as the checkpoint keeps them (text, to compare and to say).
    const sf_window_spec *w = &ck->window;
    // (--horizon is compared below as its text: a range's last step alone
    // would name neither range.)
    const cli_opt nums[] = {OPT_WINDOW, OPT_STRIDE,      OPT_SAMPLING_RATE, OPT_BATCH_SIZE,
                            OPT_SEED,   OPT_VAL_SPLIT,   OPT_LR,            OPT_POOL,
                            OPT_BLOCK_CHUNKS, OPT_MAX_GAP, OPT_NORM,        OPT_LR_SCALING, OPT_TARGET};
    const double ck_values[] = {w->length, w->stride, w->sampling_rate, ck->batch, (double)ck->seed,
                                ck->val_split, (float)ck->lr, (double)ck->pool, ck->block_chunks, ck->max_gap};
    sf_fit_opts mine = *o;
    const double my_values[] = {mine.pipe.window.length, mine.pipe.window.stride, mine.pipe.window.sampling_rate,
                                mine.batch, (double)mine.seed, mine.val_split,
                                (float)mine.adam.lr, (double)mine.pipe.pool, mine.pipe.block_chunks, mine.max_gap};
    const char *ck_choices[] = {sf_norm_name(ck->norm), ck->lr_scaling, ck->target_change ? "change" : "value"};
    const char *my_choices[] = {sf_norm_name(mine.norm), mine.lr_linear ? "linear" : "none",
                                mine.target_change ? "change" : "value"};
    for (size_t k = 0; k < sizeof nums / sizeof *nums; k++) {
        if (!v[nums[k]].set) continue;
        if (k < 10) {  // as they were given: the learning rate in float32's digits, the gap in seconds
            const char *fmt = nums[k] == OPT_LR ? "%.7g" : nums[k] == OPT_MAX_GAP ? "%gs" : "%.9g";
            snprintf(given, sizeof given, fmt, my_values[k]);
            snprintf(theirs, sizeof theirs, fmt, ck_values[k]);
        } else {
            snprintf(given, sizeof given, "%s", my_choices[k - 10]);
            snprintf(theirs, sizeof theirs, "%s", ck_choices[k - 10]);
        }
        if ((rc = differs(nums[k], given, theirs, path))) return rc;
    }
    if (v[OPT_HORIZON].set) {
        sf_window_horizon_text(&mine.pipe.window, given, sizeof given);
        sf_window_horizon_text(w, theirs, sizeof theirs);
        if ((rc = differs(OPT_HORIZON, given, theirs, path))) return rc;
    }
    o->pipe.window = ck->window, o->batch = ck->batch, o->seed = ck->seed, o->val_split = ck->val_split;
    o->adam.lr = (float)ck->lr, o->pipe.pool = ck->pool;
    if (!v[OPT_LANES].set) o->pipe.lanes = ck->lanes;  // lanes change no batch: --lanes may differ
    o->pipe.block_chunks = ck->block_chunks, o->max_gap = ck->max_gap, o->norm = ck->norm;
    o->lr_linear = !strcmp(ck->lr_scaling, "linear"), o->target_change = ck->target_change;
    if (!v[OPT_EPOCHS].set) o->epochs = ck->epochs;  // --epochs may go on further
    // So may --early-stop and --min-delta (when to stop, not what is trained;
    // under plateau, resume_schedule holds --min-delta to the checkpoint's).
    if (!v[OPT_EARLY_STOP].set) o->early_stop = ck->early_stop;
    if (!v[OPT_MIN_DELTA].set) o->min_delta = ck->min_delta;
    // An epoch's steps and validation's batches decide the epochs and
    // val_loss (0: a pass, every window: "(none)").
    const struct {
        cli_opt opt;
        uint64_t *field, theirs;
    } bounds[] = {{OPT_STEPS_PER_EPOCH, &o->steps_per_epoch, ck->steps_per_epoch},
                  {OPT_VALIDATION_STEPS, &o->validation_steps, ck->validation_steps}};
    for (size_t k = 0; k < sizeof bounds / sizeof *bounds; k++) {
        snprintf(given, sizeof given, "%llu", (unsigned long long)*bounds[k].field);
        snprintf(theirs, sizeof theirs, bounds[k].theirs ? "%llu" : "", (unsigned long long)bounds[k].theirs);
        if (v[bounds[k].opt].set && (rc = differs(bounds[k].opt, given, theirs, path))) return rc;
        *bounds[k].field = bounds[k].theirs;
    }
    if (!v[OPT_LOG_EVERY].set) o->log_every = ck->log_every;  // the log goes on alike, unless told otherwise
    if (!v[OPT_CHECKPOINT_EVERY].set) o->checkpoint_every = ck->checkpoint_every;  // and so do the checkpoints
    if (v[OPT_NORM_SCOPE].set &&
        (rc = differs(OPT_NORM_SCOPE, o->norm_series ? "series" : "global", ck->nscoped ? "series" : "global", path)))
        return rc;
    o->norm_series = ck->nscoped > 0;  // a checkpoint from before: global
    static char series[32];  // the checkpoint's, for the run that goes on
    if (ck->embed) snprintf(series, sizeof series, "embedding:%u", ck->embed);
    else snprintf(series, sizeof series, "%s", ck->nonehot ? "onehot" : "");
    if (v[OPT_SERIES_FEATURES].set && (rc = differs(OPT_SERIES_FEATURES, o->series_features, series, path))) return rc;
    o->series_features = series[0] ? series : NULL;
    return resume_schedule(v, o, ck, path);
}

// Fold k's directory in a cross-validation's DIR (--folds).
static void fold_dir(char *out, size_t cap, const char *dir, uint32_t k) { snprintf(out, cap, "%s/fold-%u", dir, k); }

// --resume: the run's settings from DIR/latest.safetensors, or those of a
// cross-validation's (--folds) from its first fold's, DIR/fold-1: each fold
// keeps them all, and the folds (metadata folds). 0, or the exit code.
static int resume_run(const cli_args *a, sf_fit_opts *o, sf_checkpoint *ck, const char **precision, char *data,
                      size_t data_cap) {
    char first[4200], path[4300];
    snprintf(path, sizeof path, "%s/latest.safetensors", o->checkpoint_dir);
    fold_dir(first, sizeof first, o->checkpoint_dir, 1);
    char first_ck[4300];
    snprintf(first_ck, sizeof first_ck, "%s/latest.safetensors", first);
    if (access(path, F_OK) == 0 || access(first_ck, F_OK) != 0) {
        int rc = resume_settings(a, o, ck, precision, data, data_cap);
        if (!rc && a->v[OPT_FOLDS].set && access(path, F_OK) == 0)
            rc = differs(OPT_FOLDS, a->v[OPT_FOLDS].text, "", path);  // a run of one validation tail
        // A fold's own directory: its settings, data parts and summary are the cross-validation's.
        if (!rc && ck->folds && !o->folds) {
            char parent[4200];
            snprintf(parent, sizeof parent, "%s", o->checkpoint_dir);
            size_t n = strlen(parent);
            while (n > 1 && parent[n - 1] == '/') parent[--n] = 0;
            char *slash = strrchr(parent, '/'), *last = slash ? slash + 1 : parent;
            if (!strcmp(last, ".") || !strcmp(last, "..")) snprintf(parent + n, sizeof parent - n, "/..");
            else if (!slash) snprintf(parent, sizeof parent, ".");
            else if (slash == parent) parent[1] = 0;
            else *slash = 0;
            rc = cli_usage_error("train", "%s is fold %u of %u of a cross-validation (train --folds): the folds "
                                 "resume together, from their directory (hint: --checkpoint-dir %s --resume)", path,
                                 ck->fold, ck->folds, parent);
        }
        // A cross-validation killed before its first checkpoint: its folds, not one run beside them.
        if (!rc && !o->folds && access(path, F_OK) != 0 && access(first, F_OK) == 0)
            rc = cli_usage_error("train", "--checkpoint-dir %s holds a cross-validation's first fold (%s) and no "
                                 "checkpoint yet (hint: --folds K, as the run was started, resumes it)",
                                 o->checkpoint_dir, first);
        return rc;
    }
    const char *dir = o->checkpoint_dir;
    uint32_t given = o->folds;
    o->checkpoint_dir = first;  // the fold's paths (data, log, events) are as seen from its directory
    int rc = resume_settings(a, o, ck, precision, data, data_cap);
    o->checkpoint_dir = dir;
    if (rc) return rc;
    char mine[16], theirs[16];
    snprintf(mine, sizeof mine, "%u", given);
    snprintf(theirs, sizeof theirs, "%u", ck->folds);
    if (a->v[OPT_FOLDS].set && (rc = differs(OPT_FOLDS, mine, theirs, first_ck))) return rc;
    o->folds = ck->folds;
    // Each fold writes its own log and events (train_folds): fold 1's name
    // them, DIR/fold-1/log.csv and TENSORBOARD/fold-1.
    o->log = NULL;
    if (!a->v[OPT_TENSORBOARD].set && o->tensorboard) {
        char *tb = o->tensorboard == tensorboard_path ? tensorboard_path : ck->tensorboard;
        size_t n = strlen(tb);
        if (n > 7 && !strcmp(tb + n - 7, "/fold-1")) tb[n - 7] = 0;
    }
    return 0;
}

// --folds: the options that mean one run with one validation tail, which
// a cross-validation cannot take. 0, or the exit code.
static int folds_options(const cli_args *a, sf_fit_opts *o) {
    const struct {
        cli_opt opt;
        const char *why;
    } no[] = {{OPT_VAL_SPLIT, "each fold validates on the part of every series after the rows it trains on, which "
                              "--folds sets: one validation tail does not apply"},
              {OPT_LOG, "each fold logs its rows to DIR/fold-K/log.csv"},
              {OPT_TRACE, "the folds are K runs, and a trace records one"}};
    for (size_t k = 0; k < sizeof no / sizeof *no; k++)
        if (a->v[no[k].opt].set)
            return cli_usage_error("train", "--%s with --folds %u: %s (hint: leave --%s out, or train without "
                                   "--folds)", cli_opt_name(no[k].opt), o->folds, no[k].why, cli_opt_name(no[k].opt));
    o->val_split = 0;  // the folds' parts, not a fraction's (sf_fit_split)
    return 0;
}

// Without --checkpoint-dir: runs/YYYYmmdd-HHMMSS (-2, -3, ... when taken),
// created here so that two runs started in one second do not share it.
static int default_run_dir(char *dir, size_t cap) {
    time_t now = time(NULL);
    struct tm tm;
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime_r(&now, &tm));
    snprintf(dir, cap, "runs");
    for (int k = 1; k < 1000 && (mkdir("runs", 0777) == 0 || errno == EEXIST); k++) {
        snprintf(dir, cap, k == 1 ? "runs/%s" : "runs/%s-%d", stamp, k);
        if (mkdir(dir, 0777) == 0) return 0;
        if (errno != EEXIST) break;
    }
    sf_err e;
    sf_err_errno(&e, SF_EIO, errno, "%s: cannot create the directory for the run's checkpoints", dir);
    return cli_fail("train", &e, "--checkpoint-dir DIR puts them elsewhere");
}

// A default run directory a failed run wrote no checkpoint into goes again.
static void forget_run_dir(const char *dir) {
    char path[128];
    snprintf(path, sizeof path, "%s/latest.safetensors", dir);
    if (access(path, F_OK) == 0) return;
    snprintf(path, sizeof path, "%s/seqfeed.lock", dir);
    unlink(path);
    if (rmdir(dir) == 0) rmdir("runs");  // each only when empty
}

int cmd_train(int argc, char **argv) {
    cli_args a;
    int rc = cli_parse(&train_command, argc, argv, &a);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    sf_fit_opts o = sf_fit_opts_default();
    cli_apply_fit(&a, &o);
    sf_err le = {0};
    if (a.v[OPT_LOSS].set && sf_loss_parse(&o.loss, a.v[OPT_LOSS].text, &le))
        return cli_usage_error("train", "%s", le.msg);
    o.interrupted = &interrupted;
    const char *gpus = a.v[OPT_GPUS].set ? a.v[OPT_GPUS].text : "all";
    const char *precision = a.v[OPT_PRECISION].set ? a.v[OPT_PRECISION].text : NULL;
    bool replicas_given = a.v[OPT_REPLICAS].set;
    double timeout = a.v[OPT_COLLECTIVE_TIMEOUT].set ? a.v[OPT_COLLECTIVE_TIMEOUT].real : 300;
    if (o.resume && !o.checkpoint_dir) return cli_usage_error("train", "--resume needs --checkpoint-dir");
    if (a.v[OPT_FOLDS].set && o.folds < 2)
        return cli_usage_error("train", "--folds %u: cross-validation trains at least 2 folds, each validated on the "
                               "part of every series after the rows it trained on (hint: --folds 2 or more, or "
                               "leave --folds out: one validation tail, --val-split)", o.folds);
    sf_checkpoint *ck = calloc(1, sizeof *ck);  // the resumed run's settings point into it
    if (!ck) return cli_fail("train", &(sf_err){SF_ENOMEM, "out of memory"}, NULL);
    char data[8400];
    rc = o.resume ? resume_run(&a, &o, ck, &precision, data, sizeof data) : 0;
    if (!rc && o.folds) rc = folds_options(&a, &o);
    if (!rc && !o.data) rc = cli_usage_error("train", "missing --data FILE.sfpack");
    if (!rc) rc = check_schedule(a.v, &o);
    if (!rc && o.checkpoint_every && !o.checkpoint_dir)
        rc = cli_usage_error("train", "--checkpoint-every needs --checkpoint-dir");
    if (!rc) rc = run_train(&o, gpus, precision, replicas_given, timeout);
    sf_checkpoint_free(ck);
    free(ck);
    return rc;
}

// Under a launcher, as one rank of the job.
static int run_train(sf_fit_opts *op, const char *gpus, const char *precision, bool replicas_given, double timeout) {
    sf_fit_opts o = *op;
    int rc;
    if (!sf_ranks_launched()) return train(&o, gpus, precision, replicas_given);
    sf_err e = {0};
    if (sf_ranks_open(&o.ranks, timeout, &e)) return cli_fail("train", &e, NULL);
    snprintf(term_msg, sizeof term_msg, "seqfeed train: rank %d of %d: SIGTERM from the launcher (the job is "
             "cancelled, or another rank failed: its messages say which); stopping after this step\n",
             sf_ranks_rank(o.ranks), sf_ranks_size(o.ranks));
    signal(SIGTERM, on_term);
    if (sf_ranks_rank(o.ranks) != 0) o.progress = false;  // rank 0 speaks for the job
    rc = train(&o, gpus, precision, replicas_given);
    signal(SIGTERM, on_term_now);  // nothing is left to stop after a step
    // A failed rank ends the job: the others may wait for it in a collective.
    // (An interrupt is no failure: every rank stopped at the same step.)
    if (rc && rc != EXIT_INTERRUPTED && rc != EXIT_TERMINATED) sf_ranks_abort(o.ranks, rc);
    sf_ranks_close(o.ranks);
    return rc;
}

// Whether every rank on this machine sees the same GPUs: their PCI bus ids,
// in order. Returns nonzero after printing an error.
static int gpus_shared(sf_ranks *d, const int *devices, int n, bool *shared) {
    uint32_t crc = 0;
    for (int i = 0; i < n; i++) {
        char id[32] = "";
        sf_gpu_bus_id(devices[i], id, sizeof id);
        crc = sf_crc32c(crc, id, sizeof id);
    }
    sf_err e = {0};
    return sf_ranks_node_same(d, &crc, sizeof crc, shared, "comparing the ranks' GPUs", &e) ? cli_fail("train", &e, NULL)
                                                                                          : 0;
}

// A fold's sf_fit failed: its message, with the rank under a launcher.
static int fit_failed(const sf_fit_opts *o, sf_err *e) {
    if (o->ranks && strncmp(e->msg, "rank ", 5) != 0) {
        char msg[sizeof e->msg];
        snprintf(msg, sizeof msg, "rank %d of %d: %.990s", sf_ranks_rank(o->ranks), sf_ranks_size(o->ranks), e->msg);
        memcpy(e->msg, msg, sizeof msg);
    }
    return cli_fail("train", e, NULL);
}

// The summary of the folds scored so far: DIR/folds.json (rank 0).
static int write_summary(const sf_fit_opts *o, const sf_folds *cv, sf_err *e) {
    char path[4200];
    snprintf(path, sizeof path, "%s/folds.json", o->checkpoint_dir);
    return sf_ranks_rank(o->ranks) == 0 ? sf_folds_write_json(path, cv, e) : 0;
}

// --folds K: fold k = 1 .. K one after the other, each an sf_fit run in
// DIR/fold-k (its checkpoints, log.csv and, with --report, report.html;
// --tensorboard DIR's events in DIR/fold-k) on its fold's parts, its end
// scores kept; DIR/folds.json after each fold, and at the end the table and
// --report's page. A fold stopped part way (Ctrl-C, --max-steps, which
// counts the steps of every fold this process trains) ends the run there;
// --resume goes on from its checkpoint, and a fold that had ended is not
// trained again (its fit has nothing to do and scores its checkpoint).
static int train_folds(const sf_fit_opts *top, bool default_dir) {
    sf_fit_opts o = *top;
    uint32_t K = o.folds;
    bool rank0 = sf_ranks_rank(o.ranks) == 0, talk = o.progress && rank0;
    sf_err e = {0};
    if (sf_folds_check(&o, &e)) return cli_fail("train", &e, NULL);
    char first[4300];
    fold_dir(first, sizeof first, o.checkpoint_dir, 1);
    if (!o.resume && access(first, F_OK) == 0)
        return cli_usage_error("train", "--checkpoint-dir %s holds a cross-validation's folds (%s): a new one would "
                               "mix with them (hint: --resume continues it; another --checkpoint-dir starts a new "
                               "one)", o.checkpoint_dir, first);
    if (!default_dir && rank0 && mkdir(o.checkpoint_dir, 0777) != 0 && errno != EEXIST) {
        sf_err_errno(&e, SF_EIO, errno, "%s: cannot create the directory of the folds", o.checkpoint_dir);
        return cli_fail("train", &e, "--checkpoint-dir DIR puts them elsewhere");
    }
    if (!o.resume && sf_checkpoint_dir_check(o.checkpoint_dir, false, &e))  // a run of its own already there
        return cli_usage_error("train", "%s", e.msg);
    size_t cap = strlen(o.checkpoint_dir) + 64, tcap = o.tensorboard ? strlen(o.tensorboard) + 32 : 1;
    char *paths = calloc(K, 3 * cap + tcap), **dirs = calloc(K, sizeof *dirs);
    sf_score *scores = calloc(K, sizeof *scores);
    if (!paths || !dirs || !scores) {
        free(paths), free(dirs), free(scores);
        return cli_fail("train", &(sf_err){SF_ENOMEM, "out of memory"}, NULL);
    }
    const char **reports = calloc(K, sizeof *reports);
    sf_folds cv = {.folds = K, .score = scores, .dirs = (const char *const *)dirs, .loss = o.loss};
    uint64_t steps = 0;
    int rc = reports ? 0 : cli_fail("train", &(sf_err){SF_ENOMEM, "out of memory"}, NULL), stopped = 0;
    uint32_t k = 1;
    double t0 = sf_now();
    for (uint32_t j = 1; j <= K; j++) {  // each fold's directory, log, report and events
        char *at = paths + (size_t)(j - 1) * (3 * cap + tcap);
        fold_dir(at, cap, o.checkpoint_dir, j);
        snprintf(at + cap, cap, "%s/fold-%u/log.csv", o.checkpoint_dir, j);
        snprintf(at + 2 * cap, cap, "%s/fold-%u/report.html", o.checkpoint_dir, j);
        if (o.tensorboard) snprintf(at + 3 * cap, tcap, "%s/fold-%u", o.tensorboard, j);
        dirs[j - 1] = at;
    }
    for (; !rc && k <= K; k++) {
        char *at = dirs[k - 1], *log = at + cap, *report = at + 2 * cap, *tb = at + 3 * cap;
        sf_fit_opts f = o;
        f.fold = k, f.checkpoint_dir = at, f.log = log, f.report = o.report ? report : NULL;
        f.tensorboard = o.tensorboard ? tb : NULL, f.keep_score = &scores[k - 1];
        if (o.max_steps && steps >= o.max_steps) break;  // --max-steps spent: the next fold is for a resume
        if (o.max_steps) f.max_steps = o.max_steps - steps;
        reports[k - 1] = o.report ? report : NULL;
        if (talk)
            fprintf(stderr, "fold %u/%u: validation on part %u of %u of every series' rows, training on the %s "
                    "before it; checkpoints in %s\n", k, K, k + 1, K + 1, k == 1 ? "part" : "parts", at);
        signal(SIGINT, on_signal);
        if (!o.ranks) signal(SIGTERM, on_signal);
        sf_fit_result res;
        int frc = sf_fit(&f, &res, &e);
        signal(SIGINT, SIG_DFL);
        if (!o.ranks) signal(SIGTERM, SIG_DFL);
        if (frc) {
            rc = fit_failed(&o, &e);
            break;
        }
        steps += res.steps;
        if (talk && res.best_epoch)
            fprintf(stderr, "fold %u/%u: best epoch %llu, val_loss %.6g%s: %s/best.safetensors\n", k, K,
                    (unsigned long long)res.best_epoch, res.best_val_loss,
                    res.early_stopped ? " (early stopped)" : "", at);
        if (!res.complete) {  // scored where it stopped (--max-steps): not the fold's end
            sf_score_free(&scores[k - 1]);
            scores[k - 1] = (sf_score){0};
            stopped = res.interrupted ? res.interrupted : -1;
            break;
        }
        if (write_summary(&o, &cv, &e)) rc = cli_fail("train", &e, NULL);
    }
    if (!rc && k <= K) {  // stopped part way
        if (talk)
            fprintf(stderr, "stopped in fold %u of %u after %llu steps in all: seqfeed train --checkpoint-dir %s "
                    "--resume goes on from there (the folds before it are not trained again)\n", k, K,
                    (unsigned long long)steps, o.checkpoint_dir);
        if (write_summary(&o, &cv, &e)) rc = cli_fail("train", &e, NULL);
    } else if (!rc && rank0) {
        if (talk) {
            sf_folds_print(stderr, &cv);
            fprintf(stderr, "cross-validation: %u folds in %.1f s; summary %s/folds.json\n", K, sf_now() - t0,
                    o.checkpoint_dir);
        }
        if (o.report && sf_folds_write_report(o.report, &cv, reports, &e)) rc = cli_fail("train", &e, NULL);
    }
    for (uint32_t j = 0; j < K; j++) sf_score_free(&scores[j]);
    free(paths), free(dirs), free(scores), free(reports);
    if (rc) return rc;
    return stopped <= 0 ? EXIT_OK : stopped == SIGTERM ? EXIT_TERMINATED : EXIT_INTERRUPTED;
}

// Picks the backend and trains; under a launcher, on this rank's share of
// the machine's GPUs.
static int train(sf_fit_opts *op, const char *gpus, const char *precision, bool replicas_given) {
    sf_fit_opts o = *op;
    // Nothing trained is lost for want of --checkpoint-dir. Rank 0 writes
    // the checkpoints; the other ranks need only know that there are some.
    char run_dir[64] = "runs/(rank 0's)";
    bool default_dir = !o.checkpoint_dir;
    if (default_dir && sf_ranks_rank(o.ranks) == 0) {
        int rc = default_run_dir(run_dir, sizeof run_dir);
        if (rc) return rc;
        if (o.progress) fprintf(stderr, "run: checkpoints go to %s/ (--checkpoint-dir chooses)\n", run_dir);
    }
    // A rank without --checkpoint-dir names rank 0's, as the ranks compare
    // the files written (every rank takes part: a rank given one is refused there).
    char rank0_dir[sizeof run_dir];
    memcpy(rank0_dir, run_dir, sizeof run_dir);
    sf_err be = {0};
    if (sf_ranks_bcast(o.ranks, rank0_dir, sizeof rank0_dir, "the run's directory", &be))
        return cli_fail("train", &be, NULL);
    if (default_dir) memcpy(run_dir, rank0_dir, sizeof run_dir), o.checkpoint_dir = run_dir;
    int devices[64];
    const sf_backend *gpu_backend = NULL;
    int ngpus = cli_choose_gpus("train", gpus, devices, 64, !o.progress, &gpu_backend);
    if (ngpus < 0) return EXIT_USAGE;
    // Ranks on this machine that see the same GPUs (by PCI bus) share them
    // out; ranks that see others were given their own by the launcher (srun
    // --gpus-per-task, CUDA_VISIBLE_DEVICES) and keep them.
    int local = sf_ranks_local_size(o.ranks), l = sf_ranks_local_rank(o.ranks);
    bool shared = false;
    if (local > 1 && ngpus > 0 && gpus_shared(o.ranks, devices, ngpus, &shared)) return EXIT_ERR;
    if (shared && ngpus < local)
        return cli_usage_error("train", "%d ranks on this machine share %d GPU(s): NCCL needs a GPU per rank (hint: at "
                               "most %d ranks per machine, or --gpus none)", local, ngpus, ngpus);
    if (shared) {
        int lo = ngpus * l / local, hi = ngpus * (l + 1) / local;
        memmove(devices, devices + lo, (size_t)(hi - lo) * sizeof *devices);
        ngpus = hi - lo;
    }
    if (ngpus > 0) {
        // One replica per GPU unless --replicas says otherwise (then the
        // first replicas GPUs of the list).
        if (!replicas_given) o.replicas = (uint32_t)ngpus;
        if (o.replicas > (uint32_t)ngpus)
            return cli_usage_error("train", "--replicas %u with %d GPU(s): one replica per GPU", o.replicas, ngpus);
        o.backend = gpu_backend;
        o.devices = devices;
    }
    if (precision_from[0] && !strcmp(precision, "tf32") && !cli_tf32_available(devices, ngpus))
        return cli_usage_error("train", "%s: the run trains in tf32 (the checkpoint's precision), which needs GPUs "
                               "of compute capability 8.0 or later, and %s (hint: --precision fp32 continues it here: "
                               "tf32 and fp32 keep the same fp32 weights)", precision_from,
                               ngpus ? "these GPUs are older" : "this machine trains on the CPU");
    int prc = cli_choose_precision("train", precision, devices, ngpus, !o.progress, &o.precision);
    if (prc) return prc;
    if (o.folds) {
        int frc = train_folds(&o, default_dir);
        if (frc && frc != EXIT_INTERRUPTED && frc != EXIT_TERMINATED && default_dir && sf_ranks_rank(o.ranks) == 0)
            forget_run_dir(run_dir);  // a run refused before its first fold leaves no directory behind
        return frc;
    }
    // A run of one validation tail beside a cross-validation's folds would
    // mix with them (and a run's directory would then give its best, not the folds).
    char first[4300];
    fold_dir(first, sizeof first, o.checkpoint_dir, 1);
    if (!o.resume && access(first, F_OK) == 0)
        return cli_usage_error("train", "--checkpoint-dir %s holds a cross-validation's folds (%s): a new run would "
                               "mix with them (hint: --resume continues it; another --checkpoint-dir starts a new "
                               "one)", o.checkpoint_dir, first);
    signal(SIGINT, on_signal);
    if (!o.ranks) signal(SIGTERM, on_signal);
    sf_fit_result res;
    sf_err e = {0};
    int rc = sf_fit(&o, &res, &e);
    signal(SIGINT, SIG_DFL);
    if (!o.ranks) signal(SIGTERM, SIG_DFL);
    if (rc && default_dir && sf_ranks_rank(o.ranks) == 0) forget_run_dir(run_dir);
    if (rc) return fit_failed(&o, &e);
    // The run's end: how it stopped and its best, then (last) where its checkpoints are.
    if (o.progress && res.early_stopped && res.steps)
        fprintf(stderr, "early stop: after epoch %llu val_loss had not improved%s for %llu evaluations "
                "(--early-stop %llu, --min-delta %g)\n", (unsigned long long)res.early_stopped,
                o.min_delta > 0 ? " by more than --min-delta" : "", (unsigned long long)o.early_stop,
                (unsigned long long)o.early_stop, o.min_delta);
    if (o.progress && res.best_epoch)
        fprintf(stderr, "best: epoch %llu, val_loss %.6g: %s/best.safetensors (predict, evaluate and export given "
                "--checkpoint %s take it)\n", (unsigned long long)res.best_epoch, res.best_val_loss,
                o.checkpoint_dir, o.checkpoint_dir);
    if (o.progress && res.steps)
        fprintf(stderr, "%s after %llu steps: %.0f samples/s, input wait %.1f%% of replica time; checkpoint "
                "%s/latest.safetensors\n", res.interrupted ? "stopped" : "done", (unsigned long long)res.steps,
                res.samples_per_s,
                // as the diagnosis counts it: without the first step's wait for the pipeline to fill
                100 * (res.steps > 1 ? res.diagnosis.input_share : res.input_wait), o.checkpoint_dir);
    else if (default_dir && res.steps && sf_ranks_rank(o.ranks) == 0)  // -q: where the run went, still
        fprintf(stderr, "checkpoint %s/latest.safetensors\n", o.checkpoint_dir);
    // The signal that stopped some rank decides, the same on every rank.
    return !res.interrupted ? EXIT_OK : res.interrupted == SIGTERM ? EXIT_TERMINATED : EXIT_INTERRUPTED;
}
