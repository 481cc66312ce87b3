// seqfeed bench train: the trainer on real data at several batch sizes,
// against the GEMM ceiling measured in the same run.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const cli_use train_uses[] = {
    BENCH_FIT_USES, {.opt = OPT_BATCH_SIZE, .def = "32,256", .help = "global batch sizes, one run each", .many = true},
    {.opt = OPT_REPLICAS, .def = "one per GPU, or 1"}, {.opt = OPT_SEED}, BENCH_DEVICE_USES, BENCH_PIPE_USES, {.opt = OPT_STEPS, .def = "20"}, {.opt = OPT_WARMUP, .def = "3"},
    {.opt = OPT_JSON, .help = "one JSON object per batch size, with the classification and the limit"},
    {.opt = OPT_QUIET}, {.opt = OPT_HELP}, {.opt = OPT_COUNT}};

static const cli_command train_command = {
    .name = "bench train",
    .usage = "--data FILE.sfpack [options]",
    .about =
        "Trains for a fixed number of steps at each global batch size, from the\n"
        "file through the pipeline, and again with each replica retraining its\n"
        "first batch (no input at all: the bound for the pipeline's cost), and\n"
        "reports samples/s, the share of time the replicas waited for input, the\n"
        "ratio of the two runs' samples/s, and on CPU the model's GFLOP/s (3 x\n"
        "the forward pass's operations per sample) as a share of the GEMM ceiling\n"
        "of its precision measured in the same run: the best square product of\n"
        "side 1024, 1536 or 2048 on the training's cores through every library\n"
        "seqfeed links (fp32: OpenBLAS and oneDNN; bf16: oneDNN), each repeated\n"
        "until its rate is steady, the best of them measured again before and\n"
        "after each pair of runs: the share is of the higher of the two beside\n"
        "the pair reported (a share above 100% is a ceiling measured low, and\n"
        "warned about).\n"
        "Before each batch size's line: where each replica's steps went (input,\n"
        "copy, compute, all-reduce, update, other: mean, p50, p99) and the\n"
        "diagnosis, as seqfeed train prints them; the last line compares the step\n"
        "time across batch sizes (flat: the batch is too small for the device).\n"
        "Each batch size's pair of runs is repeated until the ratios of the pairs\n"
        "lie within 5% of their median (at most 5 pairs), and the median pair is\n"
        "reported; a ratio still more spread is reported as noisy, with its spread.\n",
    .uses = train_uses,
};

// Also bench scaling's (cli.h).
int bench_setup(const cli_command *c, int argc, char **argv, cli_args *a, bench_runs *b) {
    int rc = cli_parse(c, argc, argv, a);
    if (rc) return rc;
    const cli_value *v = a->v;
    b->o = sf_fit_opts_default();
    cli_apply_fit(a, &b->o);
    b->o.epochs = 1000000, b->o.val_split = 0, b->o.progress = false;
    if (!b->o.data) return cli_usage_error(c->name, "missing --data FILE.sfpack");
    b->gpus = v[OPT_GPUS].set ? v[OPT_GPUS].text : "all";
    b->steps = v[OPT_STEPS].set ? v[OPT_STEPS].u : 20, b->warmup = v[OPT_WARMUP].set ? v[OPT_WARMUP].u : 3;
    b->o.max_steps = b->warmup + b->steps;
    return 0;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(const double *v, uint32_t n) {
    double s[8];
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, by_value);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

// The pair whose ratio is the median (the lower middle one of an even count).
static uint32_t median_index(const double *v, uint32_t n) {
    uint32_t best = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t below = 0, above = 0;
        for (uint32_t j = 0; j < n; j++) below += v[j] < v[i], above += v[j] > v[i];
        if (below <= (n - 1) / 2 && above <= n / 2) best = i;
    }
    return best;
}

// How far the pairs agree, in words.
static const char *noisy_text(const double *ratios, uint32_t n, double spread, bool noisy) {
    static char text[160];
    double lo = ratios[0], hi = ratios[0];
    for (uint32_t i = 1; i < n; i++) lo = ratios[i] < lo ? ratios[i] : lo, hi = ratios[i] > hi ? ratios[i] : hi;
    if (noisy)
        snprintf(text, sizeof text, "NOISY: the ratio ranged %.3f-%.3f over %u pairs, a spread of %.0f%% of its median "
                 "(a quieter machine, or more --steps)", lo, hi, n, 100 * spread);
    else
        snprintf(text, sizeof text, "ratio within %.1f%% over %u pairs", 100 * spread, n);
    return text;
}

// Seconds each ceiling product may take to reach the steady clock; the
// best one's again beside each pair of runs.
static const double CEILING_SECONDS = 2.0, CEILING_AGAIN_SECONDS = 1.0;

// The best product measured again, on CPU (a GPU's ceiling is not taken).
static sf_gemm_ceiling ceiling_again(const sf_gemm_ceiling *best, bool on_cpu, bool bf16, int cores) {
    return on_cpu ? sf_gemm_ceiling_again(best, bf16, cores, CEILING_AGAIN_SECONDS) : *best;
}

int bench_train(int argc, char **argv) {
    const cli_command *c = &train_command;
    cli_args a;
    bench_runs b;
    int prc = bench_setup(c, argc, argv, &a, &b);
    if (prc) return prc < 0 ? EXIT_OK : prc;
    sf_fit_opts o = b.o;
    const cli_value *v = a.v;
    uint64_t defaults[2] = {32, 256}, *batches = v[OPT_BATCH_SIZE].set ? (uint64_t *)v[OPT_BATCH_SIZE].list : defaults;
    uint32_t nbatches = v[OPT_BATCH_SIZE].set ? v[OPT_BATCH_SIZE].n : 2;
    bool replicas_given = v[OPT_REPLICAS].set, json = v[OPT_JSON].set;
    uint64_t steps = b.steps, warmup = b.warmup;
    int devices[64];
    const sf_backend *gpu_backend = NULL;
    int ngpus = cli_choose_gpus(c->name, b.gpus, devices, 64, json || v[OPT_QUIET].set, &gpu_backend);
    if (ngpus < 0) return EXIT_USAGE;
    if (ngpus > 0) {
        if (!replicas_given) o.replicas = (uint32_t)ngpus;
        if (o.replicas > (uint32_t)ngpus)
            return cli_usage_error(c->name, "--replicas %u with %d GPU(s): one replica per GPU", o.replicas, ngpus);
        o.backend = gpu_backend;
        o.devices = devices;
    }
    if ((prc = cli_choose_precision(c->name, v[OPT_PRECISION].set ? v[OPT_PRECISION].text : NULL, devices, ngpus,
                                    json || v[OPT_QUIET].set, &o.precision)))
        return prc;
    // The CPU's bf16 GEMM is the ceiling of a CPU bf16 run only.
    bool bf16 = o.precision == SF_PRECISION_BF16 && o.backend == &sf_backend_cpu;
    sf_err e = {0};
    // The model's size, for its FLOPs.
    sf_pack *p;
    sf_columns cols;
    if (sf_pack_open(&p, o.data, &e)) return cli_fail(c->name, &e, NULL);
    int rc = sf_columns_create(&cols, sf_pack_get_info(p), o.features, o.targets, NULL, o.norm, &e);
    sf_pack_close(p);
    if (rc) return e.code = SF_EUSAGE, cli_fail(c->name, &e, NULL);
    sf_model m;
    rc = sf_model_parse(&m, o.model, cols.nfeatures, cols.ntargets * sf_window_steps(&o.pipe.window), &e);
    sf_columns_free(&cols);
    if (rc) return e.code = SF_EUSAGE, cli_fail(c->name, &e, NULL);
    for (uint32_t k = 0; k < nbatches; k++)
        if (o.replicas > sf_batch_parts((uint32_t)batches[k]))
            return cli_usage_error(c->name, "--batch-size %llu is cut into %u part(s) of at least 8 windows, and each "
                                   "of the %u replicas takes whole parts (hint: a --batch-size of at least %u, or "
                                   "fewer --replicas)", (unsigned long long)batches[k],
                                   sf_batch_parts((uint32_t)batches[k]), o.replicas, 8 * o.replicas);
    // Each batch size's run could still stop before its first step (too
    // few windows): before the ceilings take their seconds.
    for (uint32_t k = 0; k < nbatches; k++) {
        sf_fit_opts check = o;
        check.batch = (uint32_t)batches[k];
        if (sf_fit_check(&check, &e)) return cli_fail(c->name, &e, NULL);
    }
    double train_flops = 3 * sf_model_flops(&m, o.pipe.window.length);
    // The ceilings, on the cores the training uses.
    bool late = o.late_loss && o.backend->step_loss;  // what runs: GPUs only
    int cores = (int)sf_ranks_cores(o.ranks);
    // The CPU's GEMMs are no ceiling of a GPU's run (an H200 ran at 2131%
    // of them): GPU runs report GFLOP/s without a share.
    bool on_cpu = o.backend == &sf_backend_cpu;
    sf_gemm_ceiling none = {.library = "none"}, fp32 = none, bf16c = none;
    if (on_cpu) fp32 = sf_gemm_ceiling_measure(false, cores, CEILING_SECONDS);
    if (bf16) bf16c = sf_gemm_ceiling_measure(true, cores, CEILING_SECONDS);
    double peak = fp32.rate, bf16_peak = bf16c.rate;
    const sf_gemm_ceiling *ceiling = bf16 ? &bf16c : &fp32;
    if (!json) {
        printf("model %s, window %u, %.1f MFLOP per training sample", o.model, o.pipe.window.length, train_flops / 1e6);
        if (on_cpu)
            printf("; ceiling on %d core(s): fp32 GEMM %.1f GFLOP/s (%s, %zu^3%s)", cores, peak / 1e9, fp32.library,
                   fp32.n, fp32.steady ? "" : ", clock not steady");
        if (bf16)
            printf(", bf16 GEMM %.1f (%s, %zu^3%s)", bf16_peak / 1e9, bf16c.library, bf16c.n,
                   bf16c.steady ? "" : ", clock not steady");
        printf("; %u %s replica(s), %s", o.replicas, o.backend->name, sf_precision_name(o.precision));
        if (o.backend != &sf_backend_cpu)
            printf(", --rnn-algo %s, --deferred-loss %s, --cuda-graph %s, --overlap-reduce %s",
                   sf_rnn_algo_name(o.rnn_algo), late ? "on" : "off", late && o.cuda_graph ? "on" : "off",
                   o.overlap_reduce ? "on" : "off");
        printf("\n");
    }
    double first_batch = 0, first_step = 0, last_batch = 0, last_step = 0;
    for (uint32_t k = 0; k < nbatches; k++) {
        o.batch = (uint32_t)batches[k];
        uint32_t per = o.batch / o.replicas;
        // Pairs of runs, interleaved so that the machine's load falls on
        // both alike, until their ratios agree (BENCH_SPREAD) or BENCH_PAIRS.
        enum { BENCH_PAIRS = 5 };
        const double BENCH_SPREAD = 0.05;
        sf_fit_result runs[BENCH_PAIRS], bounds[BENCH_PAIRS];
        // The ceiling again beside each pair, before and after it (pair p
        // between beside[p] and beside[p + 1]), the higher of the two: this
        // VM's speed drifted by 15% between runs minutes apart (163 to 189
        // GFLOP/s), and a share of a ceiling measured before them drifted
        // with it; one measurement alone once caught a busy second (87) and
        // made a share of 132%.
        sf_gemm_ceiling beside[BENCH_PAIRS + 1];
        beside[0] = ceiling_again(ceiling, on_cpu, bf16, cores);
        double ratios[BENCH_PAIRS], spread = 0;
        uint32_t pairs = 0;
        while (pairs < BENCH_PAIRS) {
            // Where the real run's steps went (the first pair's), then the same with no input.
            sf_fit_bench real = {.warmup_steps = warmup, .profile_out = json || pairs ? NULL : stdout};
            sf_fit_bench resident = {.warmup_steps = warmup, .resident = true};
            if ((rc = sf_fit_measured(&o, &real, &runs[pairs], &e)) ||
                (rc = sf_fit_measured(&o, &resident, &bounds[pairs], &e)))
                return cli_fail(c->name, &e, NULL);
            beside[pairs + 1] = ceiling_again(ceiling, on_cpu, bf16, cores);
            ratios[pairs] = runs[pairs].samples_per_s / bounds[pairs].samples_per_s;
            pairs++;
            double lo = ratios[0], hi = ratios[0];
            for (uint32_t i = 1; i < pairs; i++) lo = ratios[i] < lo ? ratios[i] : lo, hi = ratios[i] > hi ? ratios[i] : hi;
            spread = (hi - lo) / median_of(ratios, pairs);
            if (pairs >= 2 && spread <= BENCH_SPREAD) break;
        }
        uint32_t m = median_index(ratios, pairs);
        const sf_fit_result res = runs[m], bound = bounds[m];
        bool noisy = spread > BENCH_SPREAD;
        double rate = res.samples_per_s * train_flops, ratio = ratios[m];
        const sf_gemm_ceiling *limit = beside[m + 1].rate > beside[m].rate ? &beside[m + 1] : &beside[m];
        double share = limit->rate > 0 ? rate / limit->rate : 0;
        double sgemm = bf16 ? peak : limit->rate, bf16_gemm = bf16 ? limit->rate : bf16_peak;
        // The ceiling is the best this machine does: a step above it means
        // the ceiling was measured low (the machine busier then), not a result.
        bool above = on_cpu && share > 1;
        if (above)
            fprintf(stderr, "seqfeed bench train: warning: batch size %u ran at %.0f%% of the %s GEMM ceiling: the "
                    "ceiling was measured low (a busier machine while it ran); the share is not a result\n",
                    o.batch, 100 * share, bf16 ? "bf16" : "fp32");
        if (json)
            printf("{\"backend\": \"%s\", \"precision\": \"%s\", \"rnn_algo\": \"%s\", \"deferred_loss\": %s, "
                   "\"cuda_graph\": %s, \"overlap_reduce\": %s, \"batch_size\": %u, \"batch_per_replica\": %u, "
                   "\"replicas\": %u, \"steps\": %llu, \"samples_per_s\": %.1f, \"input_wait\": %.4f, "
                   "\"resident_samples_per_s\": %.1f, \"real_over_resident\": %.4f, \"gflops\": %.2f, "
                   "\"sgemm_gflops\": %.2f, \"share_of_sgemm\": %.4f, \"sgemm_from\": \"%s %zu^3\", "
                   "\"bf16_gemm_gflops\": %.2f, \"share_of_bf16_gemm\": %.4f, \"bf16_gemm_from\": \"%s %zu^3\", "
                   "\"ceiling_threads\": %d, \"ceiling_steady\": %s, \"above_ceiling\": %s, \"input_share\": %.4f, "
                   "\"classification\": \"%s\", "
                   "\"limit\": \"%s\", \"pairs\": %u, \"ratio_spread\": %.4f, \"noisy\": %s}\n",
                   o.backend->name, sf_precision_name(o.precision), sf_rnn_algo_name(o.rnn_algo),
                   late ? "true" : "false", late && o.cuda_graph ? "true" : "false",
                   o.overlap_reduce ? "true" : "false", o.batch, per, o.replicas, (unsigned long long)steps,
                   res.samples_per_s, res.input_wait, bound.samples_per_s, ratio,
                   rate / 1e9, sgemm / 1e9, sgemm > 0 ? rate / sgemm : 0, fp32.library, fp32.n, bf16_gemm / 1e9,
                   bf16 ? share : 0, bf16 ? bf16c.library : "none", bf16c.n, cores,
                   limit->steady ? "true" : "false", above ? "true" : "false",
                   res.diagnosis.input_share, res.diagnosis.classification, res.diagnosis.limit, pairs, spread,
                   noisy ? "true" : "false");
        else {
            char of[96] = "";
            if (on_cpu)
                snprintf(of, sizeof of, " = %4.1f%% of the %s ceiling (%.1f beside it)%s", 100 * share,
                         bf16 ? "bf16" : "fp32", limit->rate / 1e9, above ? " (ABOVE IT: the ceiling measured low)" : "");
            printf("batch size %5u (%u per replica): %8.1f samples/s, input wait %4.1f%%, %5.3f of the resident "
                   "batch's %.1f; %6.1f GFLOP/s%s; %s\n", o.batch, per, res.samples_per_s, 100 * res.input_wait, ratio,
                   bound.samples_per_s, rate / 1e9, of, noisy_text(ratios, pairs, spread, noisy));
        }
        // Step time against batch size: flat means the device is not full.
        double step = (double)o.batch / bound.samples_per_s;
        if (!first_batch) first_batch = (double)per, first_step = step;
        last_batch = (double)per, last_step = step;
    }
    if (!json && last_batch > first_batch) {
        double grew = last_step / first_step, more = last_batch / first_batch;
        printf("step time grew %.2fx for %.0fx the batch per replica: %s\n", grew, more,
               grew < 0.5 * more ? "the smaller batches leave the device idle (raise the batch per replica)"
                                 : "the device is busy at these batch sizes");
    }
    return EXIT_OK;
}
