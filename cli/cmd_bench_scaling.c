// seqfeed bench scaling: the trainer at several replica counts (CPU
// replicas or GPUs, per rank under a launcher). Without --target-loss,
// samples/s at one global batch; with it, the steps and seconds to a
// val_loss at a fixed per-replica batch and at a fixed global batch, the
// critical batch, and whether more replicas pay.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "ranks/ranks.h"

#define TTA "time to accuracy (--target-loss)"
// --target-loss's defaults, for the runs and, as text, for --help.
#define TTA_MAX_STEPS 1000
#define TTA_EVERY 10
#define TTA_WARMUP_STEPS 20
#define TEXT_(x) #x
#define TEXT(x) TEXT_(x)

static const cli_use scaling_uses[] = {
    BENCH_FIT_USES,
    {.opt = OPT_REPLICAS, .def = "1,2,4", .many = true,
     .help = "replica counts (per rank under a launcher), one run each (with --target-loss one in each mode)"},
    {.opt = OPT_BATCH_SIZE, .def = "32 per replica at the largest count",
     .help = "the global batch, the same at every count (each replica takes whole parts of it); with --target-loss "
             "also, over the largest count's replicas, the fixed per-replica batch"},
    {.opt = OPT_SEED}, BENCH_DEVICE_USES, BENCH_PIPE_USES,
    {.opt = OPT_STEPS, .def = "20", .help = "timed steps per run (without --target-loss)"},
    {.opt = OPT_WARMUP, .def = "3", .help = "untimed steps first (without --target-loss)"},
    {.opt = OPT_TARGET_LOSS, .group = TTA},
    {.opt = OPT_MAX_STEPS, .def = TEXT(TTA_MAX_STEPS), .group = TTA,
     .help = "a run stops after N steps: one that has not reached the target says so, with its best val_loss"},
    {.opt = OPT_STEPS_PER_EPOCH, .def = TEXT(TTA_EVERY), .group = TTA,
     .help = "an evaluation every N steps: steps to the target are counted to the next evaluation"},
    {.opt = OPT_VAL_SPLIT, .group = TTA}, {.opt = OPT_LOSS, .group = TTA,
     .help = "what training minimises and val_loss measures, as train's --loss: mse, mae, huber[:D], quantile:Q,.."},
    {.opt = OPT_LR, .group = TTA, .help = "Adam's learning rate at the per-replica batch on one replica"},
    {.opt = OPT_LR_SCALING, .def = "linear", .group = TTA,
     .help = "the per-replica batch's lr at G replicas in all: --lr x G (linear, Goyal et al.), or --lr (none); "
             "the fixed global batch trains at the largest count's lr"},
    {.opt = OPT_WARMUP_STEPS, .def = TEXT(TTA_WARMUP_STEPS), .group = TTA},
    {.opt = OPT_COLLECTIVE_TIMEOUT},
    {.opt = OPT_JSON, .help = "one JSON object per count (with --target-loss: one object for the whole report)"},
    {.opt = OPT_QUIET}, {.opt = OPT_HELP}, {.opt = OPT_COUNT}};

static const cli_command scaling_command = {
    .name = "bench scaling",
    .usage = "--data FILE.sfpack [options]",
    .about =
        "Trains at each replica count and compares. Replicas are GPUs when there are\n"
        "GPUs (--gpus), else CPU replicas sharing the cores; under mpirun or srun each\n"
        "count is replicas per rank, on CPU.\n\n"
        "Without --target-loss: a fixed number of steps at each count with the same\n"
        "global batch, and samples/s, the batch each replica gets, the speed-up and\n"
        "efficiency against the first count, and what limits each run (the diagnosis\n"
        "of seqfeed train: input, compute or all-reduce).\n\n"
        "With --target-loss: time to a good model. The target is val_loss, the loss on\n"
        "the validation part (--val-split) scored whole every --steps-per-epoch steps,\n"
        "as train's best epoch is chosen; not the training loss, which falls with\n"
        "overfitting too. Each count trains twice: at a fixed per-replica batch\n"
        "(--batch-size over the largest count's replicas, the global batch growing\n"
        "with the replicas, the lr scaled by --lr-scaling after --warmup-steps), and at\n"
        "the fixed global batch --batch-size with the largest count's lr, where every\n"
        "count trains the same run (the same weights, bit for bit on CPU: the same\n"
        "steps to the target). Per\n"
        "count: the steps and seconds to the target (the steps' wall time, validation\n"
        "left out), the speed-up and efficiency against the first count, samples/s,\n"
        "the input wait; then the critical batch (the global batch beyond which the\n"
        "steps to the target stop falling) and the answer: whether more replicas pay,\n"
        "and if not, why (the input pipeline, the critical batch, the per-replica\n"
        "batch, or replicas that add no throughput). A run that does not reach the\n"
        "target in --max-steps says so with its best val_loss.\n",
    .uses = scaling_uses,
};

// Thresholds of the answer: a count pays when it reaches the target in at
// most 1/PAYS of the first count's seconds; a run is input bound from
// TensorFlow's "highly" class; replicas add throughput from MORE_SAMPLES x
// the first count's samples/s; steps fall when they fall by an evaluation
// interval and by STEPS_FALL of themselves.
#define PAYS 1.1
#define INPUT_BOUND 0.2
#define MORE_SAMPLES 1.2
#define STEPS_FALL 0.1

typedef struct {
    const cli_command *c;
    const cli_value *v;
    sf_fit_opts o;
    uint64_t *counts;  // replicas per rank, ascending, distinct
    uint32_t ncounts;
    int ngpus, ranks;  // GPUs chosen (0: CPU), ranks of the job
    bool speak, json;  // rank 0 prints
} scaling;

// A count as the tables show it: replicas, or ranks x replicas per rank.
static const char *count_label(const scaling *s, uint32_t R) {
    static char label[32];
    if (s->ranks > 1) snprintf(label, sizeof label, "%dx%u", s->ranks, R);
    else snprintf(label, sizeof label, "%u", R);
    return label;
}

// The most windows a replica of G takes of a global batch of `batch`.
static uint32_t replica_windows(const sf_fit_opts *o, uint32_t batch, uint32_t G) {
    sf_fit_opts x = *o;
    x.batch = batch;
    return sf_replica_windows(batch, sf_fit_parts(&x), G, 0);
}

// ---- samples/s at one global batch ----

static int throughput(scaling *s, const bench_runs *b, uint64_t global) {
    sf_fit_opts o = s->o;
    o.batch = (uint32_t)global;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (s->speak && !s->json) {
        printf("global batch %llu, %s replicas%s%ld cores, %s\n", (unsigned long long)global, o.backend->name,
               s->ngpus ? "" : " sharing ", s->ngpus ? 0L : cores, sf_precision_name(o.precision));
        printf("%-9s %9s %12s %9s %11s  %s\n", "replicas", "per rep.", "samples/s", "speed-up", "efficiency",
               "limited by");
    }
    double base = 0, base_g = 0;
    sf_err e = {0};
    for (uint32_t k = 0; k < s->ncounts; k++) {
        uint64_t R = s->counts[k], G = R * (uint64_t)s->ranks;
        if (s->ngpus && R > (uint64_t)s->ngpus) {
            if (s->speak && !s->json) printf("%-9llu (only %d GPU(s))\n", (unsigned long long)R, s->ngpus);
            continue;
        }
        o.replicas = (uint32_t)R;
        sf_fit_result res;
        sf_fit_bench measure = {.warmup_steps = b->warmup};
        if (sf_fit_measured(&o, &measure, &res, &e)) return cli_fail(s->c->name, &e, NULL);
        if (!base) base = res.samples_per_s, base_g = (double)G;  // the first count's rate
        double speed = res.samples_per_s / base, eff = speed * base_g / (double)G;
        uint32_t per = replica_windows(&o, (uint32_t)global, (uint32_t)G);
        const char *limit = res.diagnosis.limit ? res.diagnosis.limit : "?";
        if (!s->speak) continue;
        if (s->json) {
            printf("{\"backend\": \"%s\", \"precision\": \"%s\", \"ranks\": %d, \"replicas\": %llu, \"batch_size\": "
                   "%llu, \"batch_per_replica\": %u, \"steps\": %llu, \"samples_per_s\": %.1f, \"speedup\": %.4f, "
                   "\"efficiency\": %.4f, \"input_share\": %.4f, \"classification\": ",
                   o.backend->name, sf_precision_name(o.precision), s->ranks, (unsigned long long)R,
                   (unsigned long long)global, per, (unsigned long long)b->steps, res.samples_per_s, speed, eff,
                   res.diagnosis.input_share);
            sf_json_string(stdout, res.diagnosis.classification ? res.diagnosis.classification : "?");
            printf(", \"limit\": ");
            sf_json_string(stdout, limit);
            printf("}\n");
        } else {
            printf("%-9s %9u %12.1f %8.2fx %10.0f%%  %s (input wait %.1f%%)\n", count_label(s, (uint32_t)R), per, res.samples_per_s, speed,
                   100 * eff, limit, 100 * res.diagnosis.input_share);
        }
    }
    return EXIT_OK;
}

// ---- time to a target val_loss ----

typedef struct {
    uint64_t step;
    double val, seconds, cpu;
} eval_point;

typedef struct {
    eval_point *v;
    size_t n, cap;
    bool oom;
} evals;

static void on_eval(void *arg, uint64_t step, double val, double seconds, double cpu) {
    evals *ev = arg;
    if (ev->n == ev->cap) {
        size_t cap = ev->cap ? 2 * ev->cap : 64;
        eval_point *v = realloc(ev->v, cap * sizeof *v);
        if (!v) {
            ev->oom = true;
            return;
        }
        ev->v = v, ev->cap = cap;
    }
    ev->v[ev->n++] = (eval_point){step, val, seconds, cpu};
}

// One run of one mode at one count.
typedef struct {
    uint32_t R, G;             // replicas per rank, and in the job
    uint32_t batch, per;       // the global batch, and the most windows a replica takes of it
    double lr;                 // the peak lr
    bool ran, reached;
    uint64_t steps;            // to the target (at the evaluation that reached it)
    double seconds;            // the steps' wall time to it
    double cpu_seconds;        // and the CPU time of every thread of every rank over them
    double best;               // the lowest val_loss (NAN: none scored)
    uint64_t steps_run;        // all the run's steps
    double samples_per_s;      // over the evaluated steps: batch x steps / their seconds
    double speedup, efficiency;  // against the mode's first count (NAN: not both reached)
    double input_share;
    const char *classification, *limit;
} ttr_row;

// The first evaluation at or below target (target 0: none) into row.
static void reach(ttr_row *row, const evals *ev, double target) {
    row->reached = false, row->best = NAN;
    for (size_t i = 0; i < ev->n; i++) {
        if (isnan(row->best) || ev->v[i].val < row->best) row->best = ev->v[i].val;
        if (!row->reached && target > 0 && ev->v[i].val <= target)
            row->reached = true, row->steps = ev->v[i].step, row->seconds = ev->v[i].seconds,
            row->cpu_seconds = ev->v[i].cpu;
    }
    const eval_point *last = ev->n ? &ev->v[ev->n - 1] : NULL;
    row->samples_per_s = last && last->seconds > 0 ? (double)row->batch * (double)last->step / last->seconds : 0;
}

// Trains o to target (0: to --max-steps), its evaluations kept in *ev (the
// caller frees ev->v).
static int run_to_target(const sf_fit_opts *o, double target, ttr_row *row, evals *ev, sf_err *e) {
    sf_fit_bench fb = {.target_loss = target, .evaluated = on_eval, .arg = ev};
    sf_fit_result res;
    int rc = sf_fit_measured(o, &fb, &res, e);
    if (!rc && ev->oom) rc = sf_err_set(e, SF_ENOMEM, "out of memory for the evaluations");
    // Every rank evaluated at the same steps: the job's CPU time is their sum.
    if (!rc && o->ranks && ev->n) {
        double *cpu = malloc(ev->n * sizeof *cpu);
        if (!cpu) return sf_err_set(e, SF_ENOMEM, "out of memory for the evaluations");
        for (size_t i = 0; i < ev->n; i++) cpu[i] = ev->v[i].cpu;
        rc = sf_ranks_sum_f64(o->ranks, cpu, ev->n, "the ranks' CPU seconds", e);
        for (size_t i = 0; !rc && i < ev->n; i++) ev->v[i].cpu = cpu[i];
        free(cpu);
    }
    if (rc) return rc;
    row->ran = true, row->steps_run = res.steps;
    row->input_share = res.diagnosis.input_share;
    row->classification = res.diagnosis.classification ? res.diagnosis.classification : "?";
    row->limit = res.diagnosis.limit ? res.diagnosis.limit : "?";
    reach(row, ev, target);
    return 0;
}

// Speed-up and efficiency of a mode's rows against its first.
static void speedups(ttr_row *rows, uint32_t n) {
    for (uint32_t k = 0; k < n; k++) {
        bool both = rows[0].reached && rows[k].reached && rows[k].seconds > 0;
        rows[k].speedup = both ? rows[0].seconds / rows[k].seconds : NAN;
        rows[k].efficiency = both ? rows[k].speedup * rows[0].G / rows[k].G : NAN;
    }
}

// The critical batch over the per-replica rows (their global batches
// ascending): the first whose next does not cut the steps to the target
// (0: none found), and what was seen, in words.
static uint32_t critical_batch(const ttr_row *p, uint32_t n, uint64_t every, char *text, size_t cap) {
    for (uint32_t k = 0; k + 1 < n; k++) {
        if (!p[k].reached) {
            snprintf(text, cap, "unknown: the run at a global batch of %u did not reach the target", p[k].batch);
            return 0;
        }
        const ttr_row *a = &p[k], *b = &p[k + 1];
        double by = (double)every > STEPS_FALL * (double)a->steps ? (double)every : STEPS_FALL * (double)a->steps;
        if (!b->reached) {
            snprintf(text, cap, "steps to the target stop falling beyond a global batch of %u (%llu steps; at %u the "
                     "target was not reached in %llu)", a->batch, (unsigned long long)a->steps, b->batch,
                     (unsigned long long)b->steps_run);
            return a->batch;
        }
        if ((double)b->steps + by > (double)a->steps) {
            snprintf(text, cap, "steps to the target stop falling beyond a global batch of %u (%u: %llu steps, %u: "
                     "%llu)", a->batch, a->batch, (unsigned long long)a->steps, b->batch,
                     (unsigned long long)b->steps);
            return a->batch;
        }
    }
    if (n < 2 || !p[n - 1].reached)
        snprintf(text, cap, "unknown: fewer than two global batches reached the target");
    else
        snprintf(text, cap, "steps to the target still fall at the largest global batch measured (%u: %llu steps): "
                 "the critical batch is above it", p[n - 1].batch, (unsigned long long)p[n - 1].steps);
    return 0;
}

// Whether more replicas pay, and if not why: *code names the case, text
// says it with its numbers.
static void answer(const scaling *s, const ttr_row *p, const ttr_row *g, uint32_t critical, char *text, size_t cap,
                   const char **code) {
    uint32_t n = s->ncounts;
    const ttr_row *p0 = &p[0], *pn = &p[n - 1], *g0 = &g[0];
    char first[48], last[48];
    snprintf(first, sizeof first, "%s replica%s", count_label(s, p0->R), p0->G > 1 ? "s" : "");
    snprintf(last, sizeof last, "%s replicas", count_label(s, pn->R));
    if (n < 2) {
        *code = "one-count";
        snprintf(text, cap, "one replica count measured: nothing to compare (hint: --replicas 1,2,4)");
        return;
    }
    if (!p0->reached) {
        *code = "no-answer";
        snprintf(text, cap, "%s at the per-replica batch did not reach the target in %llu steps (best val_loss %.6g): "
                 "no answer (hint: a higher --target-loss, or more --max-steps)", first,
                 (unsigned long long)p0->steps_run, p0->best);
        return;
    }
    // The largest count's best time; the fixed global batch meets the
    // per-replica batch there (the same run).
    double t0 = p0->seconds, tn = pn->reached ? pn->seconds : INFINITY;
    bool global_pays = g0->reached && pn->reached && pn->seconds * PAYS <= g0->seconds;
    double input = pn->input_share;
    if (tn * PAYS <= t0) {
        *code = "pays";
        int at = snprintf(text, cap, "more replicas pay: %s reach the target %.2fx faster than %s at a fixed "
                          "per-replica batch (efficiency %.0f%%)", last, t0 / tn, first, 100 * pn->efficiency);
        if (at > 0 && (size_t)at < cap && !global_pays)
            at += snprintf(text + at, cap - (size_t)at, "; at the fixed global batch of %u they do not (%.2fx): "
                           "more replicas do not pay there: raise the per-replica batch, as the per-replica mode "
                           "does", g0->batch, g0->reached && pn->reached ? g0->seconds / pn->seconds : 0.0);
        if (at > 0 && (size_t)at < cap && input >= INPUT_BOUND)
            snprintf(text + at, cap - (size_t)at, "; the input pipeline already limits them (input wait %.0f%%)",
                     100 * input);
        return;
    }
    int at = pn->reached ? snprintf(text, cap, "more replicas do not pay: %s reach the target no faster than %s: ",
                                    last, first)
                         : snprintf(text, cap, "more replicas do not pay: %s do not reach the target in %llu steps, "
                                    "as %s does: ", last, (unsigned long long)pn->steps_run, first);
    if (at < 0 || (size_t)at >= cap) return;
    char *rest = text + at;
    size_t left = cap - (size_t)at;
    double more = p0->samples_per_s > 0 ? pn->samples_per_s / p0->samples_per_s : 0;
    // One replica's step at the fixed global batch against at the
    // per-replica batch: flat in the batch means the device idles.
    double step0 = p0->samples_per_s > 0 ? p0->batch / p0->samples_per_s : 0;
    double stepg = g0->samples_per_s > 0 ? g0->per / g0->samples_per_s * g0->G : 0;
    double grew = step0 > 0 ? stepg / step0 : 0, bigger = (double)g0->per / p0->per;
    if (input >= INPUT_BOUND) {
        *code = "input";
        snprintf(rest, left, "the input pipeline limits: their replicas waited %.0f%% of their steps for input "
                 "(limit: %s; seqfeed bench pipeline measures the pipeline alone)", 100 * input, pn->limit);
    } else if (more >= MORE_SAMPLES) {
        *code = "critical-batch";
        if (critical)
            snprintf(rest, left, "they train %.2fx the samples/s, but past a global batch of %u (the critical batch) "
                     "the steps to the target do not fall: keep the global batch at or under it", more, critical);
        else
            snprintf(rest, left, "they train %.2fx the samples/s, but the steps to the target fall too little to "
                     "pay for the larger global batch", more);
    } else if (g0->G == p0->G && bigger > 1 && grew > 0 && grew < 0.5 * bigger) {
        *code = "raise-per-replica-batch";
        snprintf(rest, left, "raise the per-replica batch: one replica's step took %.2fx as long for %.0fx the "
                 "windows, so at %u windows a replica's device idles", grew, bigger, p0->per);
    } else {
        *code = "no-throughput";
        if (s->o.backend == &sf_backend_cpu)
            snprintf(rest, left, "they add no throughput (%.2fx the samples/s of %s): CPU replicas share this "
                     "machine's %ld cores, which one replica already uses; on GPUs each replica adds a device",
                     more, first, sysconf(_SC_NPROCESSORS_ONLN));
        else
            snprintf(rest, left, "they add no throughput (%.2fx the samples/s of %s; limit: %s)", more, first,
                     pn->limit);
    }
}

static void print_head(void) {
    printf("%-9s %7s %9s %7s %8s %8s %9s %11s %10s %10s  %s\n", "replicas", "global", "per rep.", "steps", "seconds",
           "cpu s", "speed-up", "efficiency", "samples/s", "input wait", "limited by");
}

static void print_row(const scaling *s, const ttr_row *r) {
    char mid[96];
    if (r->reached)
        snprintf(mid, sizeof mid, "%7llu %8.3f %8.2f %8.2fx %10.0f%%", (unsigned long long)r->steps, r->seconds,
                 r->cpu_seconds, r->speedup, 100 * r->efficiency);
    else
        snprintf(mid, sizeof mid, "not reached in %llu steps (best val_loss %.6g)", (unsigned long long)r->steps_run,
                 r->best);
    printf("%-9s %7u %9u %-47s %10.1f %9.1f%%  %s\n", count_label(s, r->R), r->batch, r->per, mid, r->samples_per_s,
           100 * r->input_share, r->limit);
}

// , "key": v (null: NaN or infinite).
static void json_real(const char *key, double v) {
    printf(", \"%s\": ", key);
    sf_json_real(stdout, v);
}

static void json_row(const scaling *s, const ttr_row *r, bool comma) {
    printf("%s{\"replicas\": %u, \"ranks\": %d, \"global_batch\": %u, \"batch_per_replica\": %u, \"lr\": ", comma ? ", " : "",
           r->R, s->ranks, r->batch, r->per);
    sf_json_real(stdout, r->lr);
    printf(", \"reached\": %s, \"steps\": ", r->reached ? "true" : "false");
    if (r->reached) printf("%llu", (unsigned long long)r->steps);
    else printf("null");
    json_real("seconds", r->reached ? r->seconds : NAN);
    json_real("cpu_seconds", r->reached ? r->cpu_seconds : NAN);
    json_real("speedup", r->speedup);
    json_real("efficiency", r->efficiency);
    json_real("best_val_loss", r->best);
    printf(", \"steps_run\": %llu", (unsigned long long)r->steps_run);
    json_real("samples_per_s", r->samples_per_s);
    json_real("input_share", r->input_share);
    printf(", \"classification\": ");
    sf_json_string(stdout, r->classification);
    printf(", \"limit\": ");
    sf_json_string(stdout, r->limit);
    printf("}");
}

// "L" or "best+P%": *target L (0 for best+), *pct P (NAN for L); false
// for anything else.
static bool parse_target(const char *t, double *target, double *pct) {
    char *end;
    if (!strncmp(t, "best+", 5)) {
        double p = strtod(t + 5, &end);
        if (end == t + 5 || strcmp(end, "%") || !(p >= 0 && p <= 1e6)) return false;
        *target = 0, *pct = p;
        return true;
    }
    double l = strtod(t, &end);
    if (end == t || *end || !(l > 0 && isfinite(l))) return false;
    *target = l, *pct = NAN;
    return true;
}

static int to_target(scaling *s, uint64_t global) {
    const cli_value *v = s->v;
    const char *name = s->c->name;
    double target, pct;
    if (!parse_target(v[OPT_TARGET_LOSS].text, &target, &pct))
        return cli_usage_error(name, "--target-loss %s: expected a val_loss above 0 (0.02), or best+P%% (best+10%%: "
                               "P%% above the best val_loss of the first count's run at the per-replica batch)",
                               v[OPT_TARGET_LOSS].text);
    sf_fit_opts o = s->o;
    uint32_t n = s->ncounts;
    uint64_t gmax = s->counts[n - 1] * (uint64_t)s->ranks;
    if (global % gmax)
        return cli_usage_error(name, "--batch-size %llu over the largest count's %llu replicas is no whole per-replica "
                               "batch (hint: a --batch-size that is a multiple of %llu)", (unsigned long long)global,
                               (unsigned long long)gmax, (unsigned long long)gmax);
    uint32_t per = (uint32_t)(global / gmax);
    if (s->ngpus && s->counts[n - 1] > (uint64_t)s->ngpus)
        return cli_usage_error(name, "--replicas %llu with %d GPU(s): one replica per GPU",
                               (unsigned long long)s->counts[n - 1], s->ngpus);
    o.val_split = v[OPT_VAL_SPLIT].set ? v[OPT_VAL_SPLIT].real : sf_fit_opts_default().val_split;
    if (o.val_split <= 0)
        return cli_usage_error(name, "--target-loss is a val_loss, and --val-split 0 leaves no validation (hint: a "
                               "--val-split above 0)");
    uint64_t every = v[OPT_STEPS_PER_EPOCH].set ? v[OPT_STEPS_PER_EPOCH].u : TTA_EVERY;
    o.steps_per_epoch = every;
    o.max_steps = v[OPT_MAX_STEPS].set ? v[OPT_MAX_STEPS].u : TTA_MAX_STEPS;
    o.epochs = o.max_steps / every + (o.max_steps % every != 0);
    o.lr_schedule.warmup_steps = v[OPT_WARMUP_STEPS].set ? v[OPT_WARMUP_STEPS].u : TTA_WARMUP_STEPS;
    bool linear = v[OPT_LR_SCALING].set ? o.lr_linear : true;
    float lr0 = o.adam.lr;
    ttr_row *p = calloc(n, sizeof *p), *g = calloc(n, sizeof *g);
    evals ev = {0};
    sf_err e = {0};
    int rc = p && g ? 0 : sf_err_set(&e, SF_ENOMEM, "out of memory");
    for (uint32_t k = 0; !rc && k < n; k++) {
        uint32_t R = (uint32_t)s->counts[k], G = R * (uint32_t)s->ranks;
        p[k] = (ttr_row){.R = R, .G = G, .batch = per * G, .lr = linear ? (double)(lr0 * (float)G) : lr0};
        g[k] = (ttr_row){.R = R, .G = G, .batch = (uint32_t)global, .lr = linear ? (double)(lr0 * (float)gmax) : lr0};
        p[k].per = replica_windows(&o, p[k].batch, G), g[k].per = replica_windows(&o, g[k].batch, G);
    }
    // An untimed evaluation interval first: the process's one-time costs
    // (thread pools, first touches of memory) are no count's.
    if (!rc) {
        sf_fit_opts x = o;
        x.replicas = p[0].R, x.batch = p[0].batch, x.lr_linear = linear, x.max_steps = every, x.epochs = 1;
        ttr_row warm = p[0];
        rc = run_to_target(&x, 0, &warm, &ev, &e);
    }
    // The per-replica batch, count by count: the first sets a relative
    // target, training to --max-steps for its best.
    for (uint32_t k = 0; !rc && k < n; k++) {
        sf_fit_opts x = o;
        x.replicas = p[k].R, x.batch = p[k].batch, x.lr_linear = linear;
        ev.n = 0;
        bool reference = k == 0 && !isnan(pct);
        rc = run_to_target(&x, reference ? 0 : target, &p[k], &ev, &e);
        if (!rc && reference) {
            if (isnan(p[0].best)) {
                rc = sf_err_set(&e, SF_EINVAL, "no val_loss was scored in %llu steps: no best to aim at (hint: a "
                                "--target-loss value)", (unsigned long long)p[0].steps_run);
                break;
            }
            target = p[0].best * (1 + pct / 100);
            reach(&p[0], &ev, target);
        }
    }
    // The fixed global batch: the last count's run is the per-replica
    // batch's last (the same batch, lr and seed).
    for (uint32_t k = 0; !rc && k + 1 < n; k++) {
        sf_fit_opts x = o;
        x.replicas = g[k].R, x.batch = g[k].batch, x.lr_linear = false, x.adam.lr = (float)g[k].lr;
        ev.n = 0;
        rc = run_to_target(&x, target, &g[k], &ev, &e);
    }
    free(ev.v);
    if (rc) {
        free(p), free(g);
        return cli_fail(name, &e, NULL);
    }
    g[n - 1] = p[n - 1];
    speedups(p, n), speedups(g, n);
    char crit[320], text[1024];
    const char *code = "";
    uint32_t critical = critical_batch(p, n, every, crit, sizeof crit);
    answer(s, p, g, critical, text, sizeof text, &code);
    if (!s->speak) {
        free(p), free(g);
        return EXIT_OK;
    }
    char how[160];
    if (isnan(pct)) snprintf(how, sizeof how, "given");
    else snprintf(how, sizeof how, "best+%g%%: the best val_loss of %s replica%s at the per-replica batch was %.6g",
                  pct, count_label(s, p[0].R), p[0].G > 1 ? "s" : "", p[0].best);
    if (s->json) {
        printf("{\"target_loss\": ");
        sf_json_real(stdout, target);
        printf(", \"target\": ");
        sf_json_string(stdout, how);
        printf(", \"eval_every\": %llu, \"max_steps\": %llu, \"backend\": \"%s\", \"precision\": \"%s\", \"ranks\": "
               "%d, \"cores\": %ld, \"batch_per_replica\": %u, \"global_batch\": %llu, \"lr\": ",
               (unsigned long long)every, (unsigned long long)o.max_steps, o.backend->name,
               sf_precision_name(o.precision), s->ranks, sysconf(_SC_NPROCESSORS_ONLN), per,
               (unsigned long long)global);
        sf_json_real(stdout, lr0);
        printf(", \"lr_scaling\": \"%s\", \"warmup_steps\": %llu, \"per_replica\": [", linear ? "linear" : "none",
               (unsigned long long)o.lr_schedule.warmup_steps);
        for (uint32_t k = 0; k < n; k++) json_row(s, &p[k], k > 0);
        printf("], \"fixed_global\": [");
        for (uint32_t k = 0; k < n; k++) json_row(s, &g[k], k > 0);
        printf("], \"critical_batch\": ");
        if (critical) printf("%u", critical);
        else printf("null");
        printf(", \"critical\": ");
        sf_json_string(stdout, crit);
        printf(", \"verdict\": \"%s\", \"answer\": ", code);
        sf_json_string(stdout, text);
        printf("}\n");
    } else {
        printf("time to val_loss <= %.6g (%s); %s replicas%s%ld cores, %s\n", target, how, o.backend->name,
               s->ngpus ? ", " : " sharing ", s->ngpus ? 0L : sysconf(_SC_NPROCESSORS_ONLN),
               sf_precision_name(o.precision));
        printf("val_loss on the whole validation part every %llu steps, at most %llu steps a run; seconds: the "
               "steps' wall time, validation left out; cpu s: their CPU time, every thread's%s\n", (unsigned long long)every, (unsigned long long)o.max_steps, s->ranks > 1 ? " of every rank" : "");
        printf("\nfixed batch per replica: %u windows, lr %g x replicas (--lr-scaling %s), %llu warmup steps\n", per,
               (double)lr0, linear ? "linear" : "none", (unsigned long long)o.lr_schedule.warmup_steps);
        print_head();
        for (uint32_t k = 0; k < n; k++) print_row(s, &p[k]);
        printf("\nfixed global batch: %llu windows, lr %g at every count (the last count's run is the one above)\n",
               (unsigned long long)global, g[0].lr);
        print_head();
        for (uint32_t k = 0; k < n; k++) print_row(s, &g[k]);
        printf("\ncritical batch: %s\nanswer: %s\n", crit, text);
    }
    free(p), free(g);
    return EXIT_OK;
}

static int by_count(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

// The options of one way of measuring given to the other: usage errors.
static int modes_apart(const scaling *s) {
    const cli_value *v = s->v;
    const char *name = s->c->name;
    static const cli_opt timed[] = {OPT_STEPS, OPT_WARMUP};
    static const cli_opt tta[] = {OPT_MAX_STEPS, OPT_STEPS_PER_EPOCH, OPT_VAL_SPLIT, OPT_LOSS, OPT_LR,
                                  OPT_LR_SCALING, OPT_WARMUP_STEPS};
    for (size_t k = 0; v[OPT_TARGET_LOSS].set && k < sizeof timed / sizeof *timed; k++)
        if (v[timed[k]].set)
            return cli_usage_error(name, "--%s times a fixed number of steps, and with --target-loss each run trains "
                                   "to the target (hint: --max-steps bounds the runs)", cli_opt_name(timed[k]));
    for (size_t k = 0; !v[OPT_TARGET_LOSS].set && k < sizeof tta / sizeof *tta; k++)
        if (v[tta[k]].set)
            return cli_usage_error(name, "--%s sets how the runs train to --target-loss, which is not given (hint: "
                                   "--target-loss L, or best+10%%)", cli_opt_name(tta[k]));
    return 0;
}

static int scaling_run(scaling *s, const bench_runs *b) {
    const cli_value *v = s->v;
    const char *name = s->c->name;
    int rc = modes_apart(s);
    if (rc) return rc;
    sf_err le = {0};
    if (v[OPT_LOSS].set && sf_loss_parse(&s->o.loss, v[OPT_LOSS].text, &le)) return cli_usage_error(name, "%s", le.msg);
    int devices[64];
    const sf_backend *gpu_backend = NULL;
    bool quiet = v[OPT_QUIET].set || s->json || !s->speak;
    int ngpus = cli_choose_gpus(name, b->gpus, devices, 64, quiet, &gpu_backend);
    if (ngpus < 0) return EXIT_USAGE;
    if (ngpus > 0 && s->ranks > 1)
        return cli_usage_error(name, "under a launcher bench scaling measures CPU ranks (hint: --gpus none; GPUs are "
                               "measured in one process, a replica each)");
    if (ngpus > 0) s->o.backend = gpu_backend, s->o.devices = devices;
    s->ngpus = ngpus;
    rc = cli_choose_precision(name, v[OPT_PRECISION].set ? v[OPT_PRECISION].text : NULL, devices, ngpus, quiet,
                                  &s->o.precision);
    if (rc) return rc;
    uint64_t most = s->counts[s->ncounts - 1];
    uint64_t global = v[OPT_BATCH_SIZE].set ? v[OPT_BATCH_SIZE].u : 32 * most * (uint64_t)s->ranks;
    sf_fit_opts x = s->o;
    x.batch = (uint32_t)global;  // --batch-size is at most 2^20
    uint32_t parts = sf_fit_parts(&x);
    for (uint32_t k = 0; k < s->ncounts; k++) {
        uint64_t G = s->counts[k] * (uint64_t)s->ranks;
        if (G > parts)
            return cli_usage_error(name, "--batch-size %llu is cut into %u part(s) of at least 8 windows, and each of "
                                   "the %llu replicas takes whole parts (hint: a --batch-size of at least %llu, or "
                                   "fewer --replicas)", (unsigned long long)global, parts, (unsigned long long)G,
                                   8 * (unsigned long long)G);
    }
    return v[OPT_TARGET_LOSS].set ? to_target(s, global) : throughput(s, b, global);
}

int bench_scaling(int argc, char **argv) {
    const cli_command *c = &scaling_command;
    cli_args a;
    bench_runs b;
    int rc = bench_setup(c, argc, argv, &a, &b);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    const cli_value *v = a.v;
    uint64_t defaults[3] = {1, 2, 4}, counts[CLI_MAX_LIST];
    uint32_t n = v[OPT_REPLICAS].set ? v[OPT_REPLICAS].n : 3, distinct = 0;
    memcpy(counts, v[OPT_REPLICAS].set ? v[OPT_REPLICAS].list : defaults, n * sizeof *counts);
    qsort(counts, n, sizeof *counts, by_count);
    for (uint32_t k = 0; k < n; k++)
        if (!distinct || counts[k] != counts[distinct - 1]) counts[distinct++] = counts[k];
    scaling s = {.c = c, .v = v, .o = b.o, .counts = counts, .ncounts = distinct, .ranks = 1, .speak = true,
                 .json = v[OPT_JSON].set};
    if (!sf_ranks_launched()) return scaling_run(&s, &b);
    sf_err e = {0};
    double timeout = v[OPT_COLLECTIVE_TIMEOUT].set ? v[OPT_COLLECTIVE_TIMEOUT].real : 300;
    if (sf_ranks_open(&s.o.ranks, timeout, &e)) return cli_fail(c->name, &e, NULL);
    s.ranks = sf_ranks_size(s.o.ranks), s.speak = sf_ranks_rank(s.o.ranks) == 0;
    rc = scaling_run(&s, &b);
    // A failed rank ends the job: the others may wait for it in a collective.
    if (rc) sf_ranks_abort(s.o.ranks, rc);
    sf_ranks_close(s.o.ranks);
    return rc;
}
