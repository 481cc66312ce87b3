// seqfeed train: the fit loop (train/fit.c) from the command line, on GPUs
// when there are any, under a launcher as one rank of a job.
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const cli_use train_uses[] = {
    {.opt = OPT_DATA, .help = "the .sfpack file (required)"}, {.opt = OPT_FEATURES}, {.opt = OPT_TARGETS},
    {.opt = OPT_NORM}, {.opt = OPT_WINDOW}, {.opt = OPT_STRIDE}, {.opt = OPT_SAMPLING_RATE}, {.opt = OPT_HORIZON},
    {.opt = OPT_MAX_GAP}, {.opt = OPT_TIME_FEATURES}, {.opt = OPT_MODEL}, {.opt = OPT_BATCH_SIZE}, {.opt = OPT_REPLICAS, .def = "one per GPU, or 1 on CPU"},
    {.opt = OPT_EPOCHS}, {.opt = OPT_VAL_SPLIT}, {.opt = OPT_LR}, {.opt = OPT_LR_SCALING}, {.opt = OPT_SEED},
    {.opt = OPT_MAX_STEPS}, {.opt = OPT_GPUS}, {.opt = OPT_PRECISION}, {.opt = OPT_MEMORY_BUDGET},
    {.opt = OPT_POOL}, {.opt = OPT_LANES}, {.opt = OPT_BLOCK_CHUNKS}, {.opt = OPT_DECODERS}, {.opt = OPT_PREFETCH},
    {.opt = OPT_SLOTS}, {.opt = OPT_DEPTH}, {.opt = OPT_IO}, {.opt = OPT_DIRECT}, {.opt = OPT_CHECKPOINT_DIR},
    {.opt = OPT_CHECKPOINT_EVERY}, {.opt = OPT_RESUME}, {.opt = OPT_LOG}, {.opt = OPT_TRACE}, {.opt = OPT_REPORT},
    {.opt = OPT_COLLECTIVE_TIMEOUT}, {.opt = OPT_QUIET}, {.opt = OPT_HELP}, {.opt = OPT_COUNT}};

static const cli_command train_command = {
    .name = "train",
    .usage = "--data FILE.sfpack [options]",
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
        "all-reduce, update, other: mean, p50, p99) and a diagnosis: how input bound\n"
        "the run was (TensorFlow's classes), and the stage or phase that limits it.\n",
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

int cmd_train(int argc, char **argv) {
    cli_args a;
    int rc = cli_parse(&train_command, argc, argv, &a);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    sf_fit_opts o = sf_fit_opts_default();
    cli_apply_fit(&a, &o);
    o.interrupted = &interrupted;
    const char *gpus = a.v[OPT_GPUS].set ? a.v[OPT_GPUS].text : "all";
    const char *precision = a.v[OPT_PRECISION].set ? a.v[OPT_PRECISION].text : NULL;
    bool replicas_given = a.v[OPT_REPLICAS].set;
    double timeout = a.v[OPT_COLLECTIVE_TIMEOUT].set ? a.v[OPT_COLLECTIVE_TIMEOUT].real : 300;
    if (!o.data) return cli_usage_error("train", "missing --data FILE.sfpack");
    if (o.resume && !o.checkpoint_dir) return cli_usage_error("train", "--resume needs --checkpoint-dir");
    if (o.checkpoint_every && !o.checkpoint_dir) return cli_usage_error("train", "--checkpoint-every needs --checkpoint-dir");
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

// Picks the backend and trains; under a launcher, on this rank's share of
// the machine's GPUs.
static int train(sf_fit_opts *op, const char *gpus, const char *precision, bool replicas_given) {
    sf_fit_opts o = *op;
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
    // Like TensorFlow: TF32 on GPUs that have it (compute capability 8.0
    // and up), fp32 everywhere else.
    bool tf32_capable = ngpus > 0;
    for (int i = 0; i < ngpus; i++) tf32_capable &= sf_gpu_capability(devices[i]) >= 80;
    if (!precision) o.precision = tf32_capable ? SF_PRECISION_TF32 : SF_PRECISION_FP32;
    else if (!strcmp(precision, "fp32")) o.precision = SF_PRECISION_FP32;
    else if (!strcmp(precision, "tf32") && tf32_capable) o.precision = SF_PRECISION_TF32;
    else if (!strcmp(precision, "tf32"))
        return cli_usage_error("train", "--precision tf32 needs GPUs of compute capability 8.0 or later");
    else return cli_usage_error("train", "--precision bf16 is not implemented yet (fp32, or tf32 on GPUs)");
    signal(SIGINT, on_signal);
    if (!o.ranks) signal(SIGTERM, on_signal);
    sf_fit_result res;
    sf_err e = {0};
    int rc = sf_fit(&o, &res, &e);
    signal(SIGINT, SIG_DFL);
    if (!o.ranks) signal(SIGTERM, SIG_DFL);
    if (rc && o.ranks && strncmp(e.msg, "rank ", 5) != 0) {
        char msg[sizeof e.msg];
        snprintf(msg, sizeof msg, "rank %d of %d: %.990s", sf_ranks_rank(o.ranks), sf_ranks_size(o.ranks), e.msg);
        memcpy(e.msg, msg, sizeof msg);
    }
    if (rc) return cli_fail("train", &e, NULL);
    if (o.progress && res.steps)
        fprintf(stderr, "%s after %llu steps: %.0f samples/s, input wait %.1f%% of replica time%s%s%s\n",
                res.interrupted ? "stopped" : "done", (unsigned long long)res.steps, res.samples_per_s,
                // as the diagnosis counts it: without the first step's wait for the pipeline to fill
                100 * (res.steps > 1 ? res.diagnosis.input_share : res.input_wait), o.checkpoint_dir ? "; checkpoint " : "", o.checkpoint_dir ? o.checkpoint_dir : "",
                o.checkpoint_dir ? "/latest.safetensors" : "");
    // The signal that stopped some rank decides, the same on every rank.
    return !res.interrupted ? EXIT_OK : res.interrupted == SIGTERM ? EXIT_TERMINATED : EXIT_INTERRUPTED;
}
