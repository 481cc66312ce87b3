#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "backend/backend.h"
#include "train/train.h"

static const char help[] =
    "usage: seqfeed train --data FILE.sfpack [options]\n"
    "\n"
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
    "rank 0 writes checkpoints, logs and reports (docs/MULTI-NODE.md).\n"
    "\n"
    "data and model:\n"
    "      --data FILE          the .sfpack file (required)\n"
    "      --features a,b       feature columns (default: all)\n"
    "      --targets c,d        target columns (default: all)\n"
    "      --window T           rows per window (default 60)\n"
    "      --stride N           rows between window starts (default 1)\n"
    "      --sampling-rate N    rows between samples in a window (default 1)\n"
    "      --horizon N          target row past the window's last (default 1)\n"
    "      --norm zscore|minmax|none  scaling from the file's statistics (default zscore)\n"
    "      --model SPEC         layers (default " SF_MODEL_DEFAULT ";\n"
    "                           the last dense width defaults to the number of targets)\n"
    "training:\n"
    "      --batch-size N       global batch (default 32)\n"
    "      --replicas R         replicas, per rank under a launcher (default: one per GPU, or 1 on CPU)\n"
    "      --epochs N           (default 10)\n"
    "      --val-split F        the time-ordered tail of every series for validation (default 0.1)\n"
    "      --lr F               Adam's learning rate (default 0.001)\n"
    "      --lr-scaling none|linear  linear: lr x replicas (default none)\n"
    "      --seed N             weights, shuffling and dropout (default 1)\n"
    "      --pool N             shuffle pool per replica, windows (default 16384)\n"
    "      --decoders N         decoder threads (default 1)\n"
    "      --memory-budget MB   host memory for the replicas and the pipeline: the shuffle\n"
    "                           pool shrinks to fit (default: no budget)\n"
    "      --gpus all|none|0,1  GPUs to use (default all; the CPU when there is none)\n"
    "      --precision fp32|tf32  products in fp32, or TF32 tensor cores (default: tf32 on GPUs\n"
    "                           of compute capability 8.0 and up, else fp32; bf16 not yet)\n"
    "files:\n"
    "      --checkpoint-dir DIR latest.safetensors (and epoch-NNNN.safetensors) written there\n"
    "      --checkpoint-every N also every N steps (default: at epoch ends only)\n"
    "      --resume             continue from DIR/latest.safetensors, exactly where it stopped\n"
    "      --log FILE           one CSV row per epoch: epoch,loss,val_loss,samples_per_s,input_wait\n"
    "      --max-steps N        stop after N steps (a checkpoint is written)\n"
    "      --trace FILE         a Chrome trace (Perfetto, chrome://tracing): a track per\n"
    "                           pipeline thread and per replica, a span per read, decode,\n"
    "                           batch, input wait, forward+backward, all-reduce, update\n"
    "      --report FILE        one self-contained HTML page: step time by phase over the\n"
    "                           run, stage utilisation, the diagnosis, the settings\n"
    "  -q, --quiet              no progress output\n"
    "      --collective-timeout S  under a launcher: a rank that waits S seconds for the\n"
    "                           others (one died or hangs) ends the job (default 300)\n"
    "      --test-delay STAGE:US  tests only: slow the pipeline's read, decode or window\n"
    "                           stage by US microseconds per item, to see the diagnosis\n"
    "\n"
    "After training it prints where each replica's steps went (input, copy, compute,\n"
    "all-reduce, update, other: mean, p50, p99) and a diagnosis: how input bound\n"
    "the run was (TensorFlow's classes), and the stage or phase that limits it.\n";

static atomic_int interrupted;  // lock-free, so a signal handler may set it

static void on_signal(int sig) {
    interrupted = 1;
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
static atomic_int terminated;  // the stop came from SIGTERM: exit 143, as schedulers expect
static void on_term_now(int sig) { _exit(128 + sig); }
static void on_term(int sig) {
    (void)sig;
    ssize_t w = write(2, term_msg, strlen(term_msg));
    (void)w;
    terminated = 1;
    interrupted = 1;
    signal(SIGTERM, on_term_now);
}

// Parses a real option value in [lo, hi).
static bool parse_real(const char *s, double lo, double hi, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= lo && v < hi)) return false;
    *out = v;
    return true;
}

static int train(sf_fit_opts *o, const char *gpus, const char *precision, bool replicas_given);

int cmd_train(int argc, char **argv) {
    enum { O_DATA = 256, O_FEATURES, O_TARGETS, O_NORM, O_MODEL, O_VAL, O_LR, O_LRS, O_GPUS, O_DIR, O_RESUME, O_LOG,
           O_WINDOW, O_STRIDE, O_RATE, O_HORIZON, O_BATCH, O_REPLICAS, O_EPOCHS, O_SEED, O_POOL, O_DECODERS,
           O_EVERY, O_MAX, O_PRECISION, O_DELAY, O_TRACE, O_REPORT, O_BUDGET, O_TIMEOUT };
    static const struct option opts[] = {
        {"data", required_argument, 0, O_DATA}, {"features", required_argument, 0, O_FEATURES},
        {"targets", required_argument, 0, O_TARGETS}, {"norm", required_argument, 0, O_NORM},
        {"model", required_argument, 0, O_MODEL}, {"val-split", required_argument, 0, O_VAL},
        {"lr", required_argument, 0, O_LR}, {"lr-scaling", required_argument, 0, O_LRS},
        {"gpus", required_argument, 0, O_GPUS}, {"checkpoint-dir", required_argument, 0, O_DIR},
        {"resume", no_argument, 0, O_RESUME}, {"log", required_argument, 0, O_LOG},
        {"window", required_argument, 0, O_WINDOW}, {"stride", required_argument, 0, O_STRIDE},
        {"sampling-rate", required_argument, 0, O_RATE}, {"horizon", required_argument, 0, O_HORIZON},
        {"batch-size", required_argument, 0, O_BATCH}, {"replicas", required_argument, 0, O_REPLICAS},
        {"epochs", required_argument, 0, O_EPOCHS}, {"seed", required_argument, 0, O_SEED},
        {"pool", required_argument, 0, O_POOL}, {"decoders", required_argument, 0, O_DECODERS},
        {"checkpoint-every", required_argument, 0, O_EVERY}, {"max-steps", required_argument, 0, O_MAX},
        {"precision", required_argument, 0, O_PRECISION}, {"test-delay", required_argument, 0, O_DELAY},
        {"trace", required_argument, 0, O_TRACE}, {"report", required_argument, 0, O_REPORT},
        {"memory-budget", required_argument, 0, O_BUDGET}, {"collective-timeout", required_argument, 0, O_TIMEOUT},
        {"quiet", no_argument, 0, 'q'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    sf_fit_opts o = {.model = SF_MODEL_DEFAULT, .window = {60, 1, 1, 1}, .norm = SF_NORM_ZSCORE, .batch = 32,
                     .replicas = 1, .epochs = 10, .seed = 1, .val_split = 0.1,
                     .adam = {1e-3f, 0.9f, 0.999f, 1e-7f}, .pool = 16384, .decoders = 1, .progress = true,
                     .interrupted = &interrupted, .backend = &sf_backend_cpu};
    const char *gpus = "all", *precision = NULL;
    bool replicas_given = false;
    double real = 0, timeout = 300;
    uint64_t v;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "hq", opts, NULL)) != -1) {
        bool ok = true;
        switch (ch) {
        case 'h': fputs(help, stdout); return EXIT_OK;
        case 'q': o.progress = false; break;
        case O_DATA: o.data = optarg; break;
        case O_FEATURES: o.features = optarg; break;
        case O_TARGETS: o.targets = optarg; break;
        case O_NORM: ok = (o.norm = sf_norm_parse(optarg)) >= 0; break;
        case O_MODEL: o.model = optarg; break;
        case O_VAL: ok = parse_real(optarg, 0, 1, &o.val_split); break;
        case O_LR:
            ok = parse_real(optarg, 1e-12, 1e3, &real);
            o.adam.lr = (float)real;
            break;
        case O_LRS:
            ok = !strcmp(optarg, "none") || !strcmp(optarg, "linear");
            o.lr_linear = !strcmp(optarg, "linear");
            break;
        case O_GPUS: gpus = optarg; break;
        case O_DIR: o.checkpoint_dir = optarg; break;
        case O_RESUME: o.resume = true; break;
        case O_LOG: o.log = optarg; break;
        case O_TRACE: o.trace = optarg; break;
        case O_REPORT: o.report = optarg; break;
        case O_BUDGET:
            ok = parse_real(optarg, 1, 1e9, &real);  // megabytes
            o.memory_budget = (uint64_t)(real * 1e6);
            break;
        case O_PRECISION: precision = optarg; break;
        case O_TIMEOUT: ok = parse_real(optarg, 1, 1e7, &timeout); break;
        case O_DELAY: {  // tests only: STAGE:MICROSECONDS
            static const char *const stages[3] = {"read", "decode", "window"};
            const char *colon = strchr(optarg, ':');
            int k = 0;
            while (k < 3 && (!colon || strncmp(optarg, stages[k], (size_t)(colon - optarg)) != 0 ||
                             strlen(stages[k]) != (size_t)(colon - optarg)))
                k++;
            ok = k < 3 && cli_parse_u64(colon + 1, 1000000, &v);
            if (ok) o.delay_us[k] = (uint32_t)v;
            break;
        }
        default:
            if (ch < O_WINDOW || ch > O_MAX || !optarg || !cli_parse_u64(optarg, UINT32_MAX, &v))
                return cli_usage_error("train", "bad option or value '%s'", optarg ? optarg : "");
            switch (ch) {
            case O_WINDOW: o.window.length = (uint32_t)v; break;
            case O_STRIDE: o.window.stride = (uint32_t)v; break;
            case O_RATE: o.window.sampling_rate = (uint32_t)v; break;
            case O_HORIZON: o.window.horizon = (uint32_t)v; break;
            case O_BATCH: ok = (o.batch = (uint32_t)v) > 0; break;
            case O_REPLICAS:
                ok = (o.replicas = (uint32_t)v) > 0 && v <= 256;
                replicas_given = true;
                break;
            case O_EPOCHS: ok = (o.epochs = v) > 0; break;
            case O_SEED: o.seed = v; break;
            case O_POOL: o.pool = v; break;
            case O_DECODERS: ok = (o.decoders = (uint32_t)v) > 0 && v <= 64; break;
            case O_EVERY: o.checkpoint_every = v; break;
            case O_MAX: o.max_steps = v; break;
            }
        }
        if (!ok) return cli_usage_error("train", "bad value '%s'", optarg);
    }
    if (!o.data) return cli_usage_error("train", "missing --data FILE.sfpack");
    if (optind < argc) return cli_usage_error("train", "unexpected argument '%s'", argv[optind]);
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
    int rc = train(&o, gpus, precision, replicas_given);
    signal(SIGTERM, on_term_now);  // nothing is left to stop after a step
    // A failed rank ends the job: the others may wait for it in a collective.
    // (An interrupt is no failure: every rank stopped at the same step.)
    if (rc && rc != EXIT_INTERRUPTED) sf_ranks_abort(o.ranks, rc);
    sf_ranks_close(o.ranks);
    if (rc == EXIT_INTERRUPTED && terminated) rc = 128 + SIGTERM;
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
    else if (!strcmp(precision, "bf16"))
        return cli_usage_error("train", "--precision bf16 is not implemented yet (fp32, or tf32 on GPUs)");
    else return cli_usage_error("train", "--precision %s: expected fp32, tf32 or bf16", precision);
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
    return res.interrupted ? EXIT_INTERRUPTED : EXIT_OK;
}
