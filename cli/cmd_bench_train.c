// seqfeed bench train: the trainer on real data at several batch sizes,
// against the SGEMM ceiling measured in the same run.
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "train/train.h"

static const char help[] =
    "usage: seqfeed bench train --data FILE.sfpack [options]\n"
    "\n"
    "Trains for a fixed number of steps at each global batch size, from the\n"
    "file through the pipeline, and again with each replica retraining its\n"
    "first batch (no input at all: the bound for the pipeline's cost), and\n"
    "reports samples/s, the share of time the replicas waited for input, the\n"
    "ratio of the two runs' samples/s, and on CPU the model's GFLOP/s (3 x\n"
    "the forward pass's operations per sample) against the float32 GEMM rate\n"
    "of this machine's BLAS measured in the same run (2048 x 2048).\n"
    "Before each batch size's line: where each replica's steps went (input,\n"
    "copy, compute, all-reduce, update, other: mean, p50, p99) and the\n"
    "diagnosis, as seqfeed train prints them; the last line compares the step\n"
    "time across batch sizes (flat: the batch is too small for the device).\n"
    "\n"
    "options:\n"
    "      --data FILE          the .sfpack file (required)\n"
    "      --features a,b       feature columns (default: all)\n"
    "      --targets c,d        target columns (default: all)\n"
    "      --window T           rows per window (default 60)\n"
    "      --model SPEC         (default " SF_MODEL_DEFAULT ")\n"
    "      --batch-size N,M     batch sizes per replica (default 32,256)\n"
    "      --replicas R         (default: one per GPU, or 1)\n"
    "      --gpus all|none|0,1  (default all; the CPU when there is none)\n"
    "      --steps N            timed steps per batch size (default 20)\n"
    "      --warmup N           untimed steps first (default 3)\n"
    "      --json               one JSON object per batch size, with the classification\n"
    "                           and the limit\n";

int bench_train(int argc, char **argv) {
    enum { O_DATA = 256, O_FEATURES, O_TARGETS, O_WINDOW, O_MODEL, O_BATCH, O_REPLICAS, O_STEPS, O_WARMUP, O_JSON,
           O_GPUS };
    static const struct option opts[] = {
        {"data", required_argument, 0, O_DATA}, {"features", required_argument, 0, O_FEATURES},
        {"targets", required_argument, 0, O_TARGETS}, {"window", required_argument, 0, O_WINDOW},
        {"model", required_argument, 0, O_MODEL}, {"batch-size", required_argument, 0, O_BATCH},
        {"replicas", required_argument, 0, O_REPLICAS}, {"steps", required_argument, 0, O_STEPS},
        {"warmup", required_argument, 0, O_WARMUP}, {"json", no_argument, 0, O_JSON},
        {"gpus", required_argument, 0, O_GPUS},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    sf_fit_opts o = {.model = SF_MODEL_DEFAULT, .window = {60, 1, 1, 1}, .norm = SF_NORM_ZSCORE, .replicas = 1,
                     .epochs = 1000000, .seed = 1, .adam = {1e-3f, 0.9f, 0.999f, 1e-7f}, .pool = 16384,
                     .decoders = 1, .backend = &sf_backend_cpu};
    const char *batches = "32,256", *gpus = "all";
    bool replicas_given = false;
    uint64_t steps = 20, warmup = 3, v;
    bool json = false;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'h': fputs(help, stdout); return EXIT_OK;
        case O_DATA: o.data = optarg; break;
        case O_FEATURES: o.features = optarg; break;
        case O_TARGETS: o.targets = optarg; break;
        case O_MODEL: o.model = optarg; break;
        case O_BATCH: batches = optarg; break;
        case O_JSON: json = true; break;
        case O_GPUS: gpus = optarg; break;
        default:
            if (!optarg || !cli_parse_u64(optarg, 1u << 30, &v) || (v == 0 && ch != O_WARMUP))
                return cli_usage_error("bench train", "bad option or value '%s'", optarg ? optarg : "");
            if (ch == O_WINDOW) o.window.length = (uint32_t)v;
            else if (ch == O_REPLICAS) o.replicas = (uint32_t)v, replicas_given = true;
            else if (ch == O_STEPS) steps = v;
            else if (ch == O_WARMUP) warmup = v;
            else return cli_usage_error("bench train", "bad option");
        }
    }
    if (!o.data) return cli_usage_error("bench train", "missing --data FILE.sfpack");
    if (optind < argc) return cli_usage_error("bench train", "unexpected argument '%s'", argv[optind]);
    int devices[64];
    const sf_backend *gpu_backend = NULL;
    int ngpus = cli_choose_gpus("bench train", gpus, devices, 64, json, &gpu_backend);
    if (ngpus < 0) return EXIT_USAGE;
    if (ngpus > 0) {
        if (!replicas_given || o.replicas > (uint32_t)ngpus) o.replicas = (uint32_t)ngpus;
        o.backend = gpu_backend;
        o.devices = devices;
    }
    o.max_steps = warmup + steps;
    o.warmup_steps = warmup;
    o.val_split = 0;
    sf_err e = {0};
    // The model's size, for its FLOPs.
    sf_pack *p;
    sf_columns cols;
    if (sf_pack_open(&p, o.data, &e)) return cli_fail("bench train", &e, NULL);
    int rc = sf_columns_create(&cols, sf_pack_get_info(p), o.features, o.targets, o.norm, &e);
    sf_pack_close(p);
    if (rc) return cli_fail("bench train", &e, NULL);
    sf_model m;
    rc = sf_model_parse(&m, o.model, cols.nfeatures, cols.ntargets, &e);
    sf_columns_free(&cols);
    if (rc) return cli_fail("bench train", &e, NULL);
    double train_flops = 3 * sf_model_flops(&m, o.window.length);
    // The ceiling: every core in one GEMM.
    sf_cpu_threads(0);
    double peak = sf_cpu_gemm_rate(2048, 3);
    if (!json)
        printf("model %s, window %u, %.1f MFLOP per training sample; SGEMM %.1f GFLOP/s on every core; %u %s "
               "replica(s)\n", o.model, o.window.length, train_flops / 1e6, peak / 1e9, o.replicas, o.backend->name);
    double first_batch = 0, first_step = 0, last_batch = 0, last_step = 0;
    for (const char *s = batches; *s;) {
        char *end;
        unsigned long b = strtoul(s, &end, 10);
        if (end == s || b == 0 || b > (1u << 20) || (*end && *end != ','))
            return cli_usage_error("bench train", "bad --batch-size '%s' (1 .. 1048576 per replica)", batches);
        s = *end ? end + 1 : end;
        o.batch = (uint32_t)b * o.replicas;
        sf_fit_result res, bound;
        o.resident = false;
        o.profile_out = json ? NULL : stdout;  // where the real run's steps went
        if (sf_fit(&o, &res, &e)) return cli_fail("bench train", &e, NULL);
        o.resident = true;
        o.profile_out = NULL;
        if (sf_fit(&o, &bound, &e)) return cli_fail("bench train", &e, NULL);
        double rate = res.samples_per_s * train_flops, ratio = res.samples_per_s / bound.samples_per_s;
        if (json)
            printf("{\"backend\": \"%s\", \"batch_per_replica\": %lu, \"replicas\": %u, \"steps\": %llu, "
                   "\"samples_per_s\": %.1f, \"input_wait\": %.4f, \"resident_samples_per_s\": %.1f, "
                   "\"real_over_resident\": %.4f, \"gflops\": %.2f, \"sgemm_gflops\": %.2f, \"share_of_sgemm\": %.4f, "
                   "\"input_share\": %.4f, \"classification\": \"%s\", \"limit\": \"%s\"}\n",
                   o.backend->name, b, o.replicas, (unsigned long long)steps, res.samples_per_s, res.input_wait,
                   bound.samples_per_s, ratio, rate / 1e9, peak / 1e9, rate / peak, res.diagnosis.input_share,
                   res.diagnosis.classification, res.diagnosis.limit);
        else
            printf("batch %5lu per replica: %8.1f samples/s, input wait %4.1f%%, %5.3f of the resident batch's %.1f; "
                   "%6.1f GFLOP/s = %4.1f%% of SGEMM\n", b, res.samples_per_s, 100 * res.input_wait, ratio,
                   bound.samples_per_s, rate / 1e9, 100 * rate / peak);
        // Step time against batch size: flat means the device is not full.
        double step = (double)o.batch / bound.samples_per_s;
        if (!first_batch) first_batch = (double)b, first_step = step;
        last_batch = (double)b, last_step = step;
    }
    if (!json && last_batch > first_batch) {
        double grew = last_step / first_step, more = last_batch / first_batch;
        printf("step time grew %.2fx for %.0fx the batch per replica: %s\n", grew, more,
               grew < 0.5 * more ? "the smaller batches leave the device idle (raise the batch per replica)"
                                 : "the device is busy at these batch sizes");
    }
    return EXIT_OK;
}

static const char scaling_help[] =
    "usage: seqfeed bench scaling --data FILE.sfpack [options]\n"
    "\n"
    "Trains a fixed number of steps at each replica count with the batch per\n"
    "replica held constant, and prints samples/s, the speed-up and efficiency\n"
    "against one replica, and what limits each run (the diagnosis of seqfeed\n"
    "train: input, compute or all-reduce). Replicas are GPUs when there are\n"
    "GPUs (--gpus), else CPU replicas sharing the cores.\n"
    "\n"
    "options:\n"
    "      --data FILE          the .sfpack file (required)\n"
    "      --replicas 1,2,4     replica counts (default 1,2,4)\n"
    "      --batch-size N       batch per replica (default 32)\n"
    "      --model SPEC         (default " SF_MODEL_DEFAULT ")\n"
    "      --window T           (default 60)\n"
    "      --features a,b / --targets c,d  (default: all)\n"
    "      --steps N            timed steps per count (default 20), after --warmup N (default 3)\n"
    "      --gpus all|none|0,1  (default all)\n";

int bench_scaling(int argc, char **argv) {
    enum { O_DATA = 256, O_FEATURES, O_TARGETS, O_WINDOW, O_MODEL, O_BATCH, O_REPLICAS, O_STEPS, O_WARMUP, O_GPUS };
    static const struct option opts[] = {
        {"data", required_argument, 0, O_DATA}, {"features", required_argument, 0, O_FEATURES},
        {"targets", required_argument, 0, O_TARGETS}, {"window", required_argument, 0, O_WINDOW},
        {"model", required_argument, 0, O_MODEL}, {"batch-size", required_argument, 0, O_BATCH},
        {"replicas", required_argument, 0, O_REPLICAS}, {"steps", required_argument, 0, O_STEPS},
        {"warmup", required_argument, 0, O_WARMUP}, {"gpus", required_argument, 0, O_GPUS},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    sf_fit_opts o = {.model = SF_MODEL_DEFAULT, .window = {60, 1, 1, 1}, .norm = SF_NORM_ZSCORE, .epochs = 1000000,
                     .seed = 1, .adam = {1e-3f, 0.9f, 0.999f, 1e-7f}, .pool = 16384, .decoders = 1,
                     .backend = &sf_backend_cpu};
    const char *counts = "1,2,4", *gpus = "all";
    uint64_t steps = 20, warmup = 3, per = 32, v;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'h': fputs(scaling_help, stdout); return EXIT_OK;
        case O_DATA: o.data = optarg; break;
        case O_FEATURES: o.features = optarg; break;
        case O_TARGETS: o.targets = optarg; break;
        case O_MODEL: o.model = optarg; break;
        case O_REPLICAS: counts = optarg; break;
        case O_GPUS: gpus = optarg; break;
        default:
            if (!optarg || !cli_parse_u64(optarg, 1u << 30, &v) || v == 0)
                return cli_usage_error("bench scaling", "bad option or value '%s'", optarg ? optarg : "");
            if (ch == O_WINDOW) o.window.length = (uint32_t)v;
            else if (ch == O_BATCH) per = v;
            else if (ch == O_STEPS) steps = v;
            else if (ch == O_WARMUP) warmup = v;
            else return cli_usage_error("bench scaling", "bad option");
        }
    }
    if (!o.data) return cli_usage_error("bench scaling", "missing --data FILE.sfpack");
    if (optind < argc) return cli_usage_error("bench scaling", "unexpected argument '%s'", argv[optind]);
    int devices[64];
    const sf_backend *gpu_backend = NULL;
    int ngpus = cli_choose_gpus("bench scaling", gpus, devices, 64, false, &gpu_backend);
    if (ngpus < 0) return EXIT_USAGE;
    if (ngpus > 0) o.backend = gpu_backend, o.devices = devices;
    o.max_steps = warmup + steps, o.warmup_steps = warmup;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("%u windows per replica, %s replicas%s%ld cores\n", (unsigned)per, o.backend->name,
           ngpus ? "" : " sharing ", ngpus ? 0L : cores);
    printf("%-9s %12s %9s %11s  %s\n", "replicas", "samples/s", "speed-up", "efficiency", "limited by");
    double base = 0;
    sf_err e = {0};
    for (const char *s = counts; *s;) {
        char *end;
        unsigned long R = strtoul(s, &end, 10);
        if (end == s || R == 0 || R > 256 || (*end && *end != ','))
            return cli_usage_error("bench scaling", "bad --replicas '%s'", counts);
        s = *end ? end + 1 : end;
        if (ngpus && R > (unsigned long)ngpus) {
            printf("%-9lu (only %d GPU(s))\n", R, ngpus);
            continue;
        }
        o.replicas = (uint32_t)R;
        o.batch = (uint32_t)(per * R);
        sf_fit_result res;
        if (sf_fit(&o, &res, &e)) return cli_fail("bench scaling", &e, NULL);
        if (!base) base = res.samples_per_s / (double)R;  // the first count's rate per replica
        double speed = res.samples_per_s / base;
        printf("%-9lu %12.1f %8.2fx %10.0f%%  %s (input wait %.1f%%)\n", R, res.samples_per_s, speed,
               100 * speed / (double)R, res.diagnosis.limit ? res.diagnosis.limit : "?",
               100 * res.diagnosis.input_share);
    }
    return EXIT_OK;
}
