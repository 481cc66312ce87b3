// seqfeed bench pipeline and bench read: the input pipeline alone, and its
// reader alone; and the bench command's dispatcher.
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ranks/ranks.h"

static const cli_use pipeline_uses[] = {
    {.opt = OPT_DATA, .help = "the .sfpack file (required)"}, {.opt = OPT_FEATURES}, {.opt = OPT_TARGETS},
    {.opt = OPT_NORM}, {.opt = OPT_WINDOW}, {.opt = OPT_STRIDE}, {.opt = OPT_SAMPLING_RATE}, {.opt = OPT_HORIZON},
    {.opt = OPT_BATCH_SIZE}, {.opt = OPT_REPLICAS, .def = "1", .help = "simulated consumers"},
    {.opt = OPT_EPOCHS, .def = "1"}, {.opt = OPT_SEED},
    {.opt = OPT_MEMORY_BUDGET, .help = "shrink the pool so that the pipeline fits in MB (default: no budget)"},
    {.opt = OPT_POOL}, {.opt = OPT_LANES}, {.opt = OPT_BLOCK_CHUNKS}, {.opt = OPT_DECODERS}, {.opt = OPT_PREFETCH},
    {.opt = OPT_SLOTS}, {.opt = OPT_DEPTH}, {.opt = OPT_IO}, {.opt = OPT_DIRECT}, {.opt = OPT_PIPELINE}, {.opt = OPT_CONSUME_RATE}, {.opt = OPT_GRID},
    {.opt = OPT_STEPS, .help = "batches each consumer takes, then stops (default: every batch of --epochs)"},
    {.opt = OPT_JSON}, {.opt = OPT_QUIET}, {.opt = OPT_HELP}, {.opt = OPT_COUNT}};

static const cli_command pipeline_command = {
    .name = "bench pipeline",
    .usage = "--data FILE.sfpack [options]",
    .about =
        "Runs the input pipeline alone, as seqfeed train runs it (the same options\n"
        "and defaults), with one simulated consumer per replica, and reports\n"
        "windows/s, MB/s read and decoded, the bytes read over the file's size,\n"
        "each stage's utilisation and the stage that limits throughput. The\n"
        "consumers take batches as fast as they come: raw throughput, and no stall\n"
        "figure (a consumer with no work always waits). --consume-rate paces them\n"
        "at a model's step (1000 / train's step time in ms, per replica) and adds\n"
        "the share of time they waited. In the same run it measures the in-memory ceiling:\n"
        "copying the same kind of windows in random order out of decoded features\n"
        "held in RAM (the first 16M rows of the file).\n",
    .uses = pipeline_uses,
};

typedef struct {
    sf_pipe *pipe;
    uint32_t r;
    double rate;  // batches/s, 0: no pacing
    uint64_t windows, batches;
    int rc;
    sf_err e;
    double until;  // stop taking batches after this (sf_now; 0: at the end)
    uint64_t steps;  // or after this many (0: at the end)
    bool talk;     // print --pipeline auto's lines as they come (replica 0's)
    uint64_t said;
} consumer;

static void *consume(void *arg) {
    consumer *c = arg;
    sf_batch b;
    prctl(PR_SET_TIMERSLACK, 1UL);  // the default 50 us slack would stretch short simulated steps
    struct timespec due;
    clock_gettime(CLOCK_MONOTONIC, &due);
    long period = c->rate > 0 ? (long)(1e9 / c->rate) : 0;
    while ((c->rc = sf_pipe_next_batch(c->pipe, c->r, &b, &c->e)) == 1) {
        c->windows += b.count;
        c->batches++;
        sf_pipe_release(c->pipe, c->r, &b);
        if (c->talk && sf_pipe_tuning_changes(c->pipe) > c->said) {
            sf_pipe_tuning t;
            sf_pipe_get_tuning(c->pipe, &t);
            printf("%s\n", t.line), c->said = t.changes;
        }
        if ((c->until > 0 && sf_now() >= c->until) || c->batches == c->steps) break;
        if (!period) continue;
        // Simulated compute, off the CPU like a GPU step: one period per
        // batch, counted from when the batch arrived or the last step ended,
        // whichever is later (a consumer never catches up by bursting).
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > due.tv_sec || (now.tv_sec == due.tv_sec && now.tv_nsec > due.tv_nsec)) due = now;
        due.tv_nsec += period;
        while (due.tv_nsec >= 1000000000L) due.tv_nsec -= 1000000000L, due.tv_sec++;
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL);
    }
    return NULL;
}

// The process's peak resident set (VmHWM), in bytes; 0 when unknown.
static uint64_t peak_rss(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %llu kB", &kb) == 1) break;
    if (f) fclose(f);
    return (uint64_t)kb * 1024;
}

// Windows per second copying the pipeline's windows in random order out of
// the decoded, scaled features held in RAM: what a pipeline without I/O,
// decoding or pools could at best do on this machine.
static double memory_ceiling(const sf_pipe_opts *o, const sf_pack *p, const sf_columns *cp, double seconds,
                             sf_err *e) {
    const sf_pack_info *in = sf_pack_get_info(p);
    const sf_columns cols = *cp;
    sf_plan *plan = NULL;
    double rate = -1;
    // The first 16M rows at most: enough to leave the caches far behind
    // (random windows over hundreds of MB), little enough for RAM.
    uint64_t rows = in->nrows < (1u << 24) ? in->nrows : (1u << 24), nseries = 0;
    sf_series *series = malloc(in->nseries * sizeof *series);
    if (!series) return -1;
    for (; nseries < in->nseries && in->series[nseries].first_row < rows; nseries++) {
        series[nseries] = in->series[nseries];
        if (series[nseries].first_row + series[nseries].rows > rows) series[nseries].rows = rows - series[nseries].first_row;
    }
    int prc = sf_plan_create(&plan, rows, in->chunk_rows, series, nseries, &o->window, 1, NULL, e);
    free(series);
    if (prc) return -1;
    sf_block_task all = {.end_window = sf_plan_windows(plan), .row_hi = rows};
    sf_block_loader *l = sf_block_loader_create(p, &cols);
    sf_block_data d = {0};
    if (!l || sf_block_load(l, &all, &d, e)) goto out_loader;
    uint64_t n = sf_plan_windows(plan), *ids = malloc((n + 1) * sizeof *ids), s = 12345;
    size_t xl = sf_window_x_len(&o->window, &cols);
    size_t yl = (size_t)cols.ntargets * sf_window_steps(&o->window);  // (steps, targets) per window
    float *x = malloc(o->batch * xl * sizeof(float)), *y = malloc(o->batch * (yl + 1) * sizeof(float));
    if (ids && x && y && n) {
        for (uint64_t i = 0; i < n; i++) ids[i] = i;
        for (uint64_t i = n; i > 1; i--) {  // a shuffled order, outside the timed loop
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            uint64_t j = (s >> 33) % i, t = ids[i - 1];
            ids[i - 1] = ids[j];
            ids[j] = t;
        }
        uint64_t done = 0;
        double t0 = sf_now();
        while (sf_now() - t0 < seconds)
            for (uint32_t k = 0; k < o->batch; k++, done++) {
                uint64_t id = ids[done % n];
                sf_window_cut(plan, &cols, &d, id, x + k * xl, y + k * yl);
            }
        rate = (double)done / (sf_now() - t0);
    }
    free(ids);
    free(x);
    free(y);
out_loader:
    sf_block_data_free(&d);
    sf_block_loader_free(l);
    sf_plan_free(plan);
    return rate;
}

// One run of the pipeline for `seconds` (the grid's): windows/s, the
// consumers' wait share, and what autotuning settled on.
typedef struct {
    double wps, wait, settled;
    char knobs[SF_PIPE_TUNING_TEXT];
} grid_run;

static int run_for(const sf_pack *p, const sf_columns *cols, const sf_pipe_opts *o, double rate, double seconds,
                   grid_run *out, sf_err *e) {
    sf_pipe *pipe;
    int rc = sf_pipe_open(&pipe, p, cols, o, e);
    if (rc) return rc;
    consumer cs[SF_MAX_PARTS];
    pthread_t ts[SF_MAX_PARTS];
    uint32_t started = 0;
    double t0 = sf_now();
    for (; started < o->replicas; started++) {
        cs[started] = (consumer){.pipe = pipe, .r = started, .rate = rate, .until = t0 + seconds};
        if (pthread_create(&ts[started], NULL, consume, &cs[started])) break;
    }
    uint64_t windows = 0;
    for (uint32_t r = 0; r < started; r++) {
        pthread_join(ts[r], NULL);
        windows += cs[r].windows;
        if (cs[r].rc < 0 && !rc) rc = cs[r].rc, *e = cs[r].e;
    }
    double wall = sf_now() - t0;
    if (!rc && started < o->replicas) rc = sf_err_set(e, SF_ENOMEM, "cannot start the consumer threads");
    sf_pipe_replica_stats rs[SF_MAX_PARTS];
    sf_pipe_stats st;
    sf_pipe_get_stats(pipe, &st, rs);
    sf_pipe_tuning t;
    sf_pipe_get_tuning(pipe, &t);
    sf_pipe_close(pipe);
    double wait = 0;
    for (uint32_t r = 0; r < o->replicas; r++) wait += rs[r].consumer_wait / wall / o->replicas;
    *out = (grid_run){(double)windows / wall, wait, t.settled, ""};
    sf_pipe_tuning_text(&t, out->knobs, sizeof out->knobs);
    return rc;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum { ROUNDS = 5, CONTENDERS = 3 };  // of --grid's rematch (below)

// The median of v[0 .. n), 1 <= n <= ROUNDS (the mean of the middle two when n is even).
static double median(const double *v, int n) {
    double s[ROUNDS];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void json_reals(const char *key, const double *v, int n, const char *fmt) {
    printf(", \"%s\": [", key);
    for (int k = 0; k < n; k++) {
        printf("%s", k ? ", " : "");
        printf(fmt, v[k]);
    }
    printf("]");
}

// --grid: every setting of a grid over the knobs auto tunes, run once each
// (the sweep); then auto and the sweep's leaders (up to CONTENDERS, within
// 10% of its best) in ROUNDS rounds, each round every one of them once, the
// order rotating from round to round. The best setting is the leader with
// the best median; auto's share is the median of the rounds' ratios, auto's
// run over the best's in the same round, so that a loaded machine's drift
// and a lucky sweep run (the best of many noisy runs is biased up) do not
// decide it; their least and most say how much noise there was. o is
// fitted to budget (0: none) already; a setting that would hold more is
// left out.
static int grid(const sf_pack *p, const sf_columns *cols, sf_pipe_opts o, uint64_t budget, double rate,
                double seconds, bool json, sf_err *e) {
    uint32_t cores = sf_affinity_cores();
    const sf_pack_info *in = sf_pack_get_info(p);
    sf_pipe_opts a = o, lead[CONTENDERS];
    a.autotune = true;
    // --pipeline auto has its caps already; fixed, auto's come here.
    int rc = o.autotune ? 0 : sf_pipe_fit_budget(&a, in, cols, budget, e);
    uint32_t dmax = o.fixed & SF_KNOB_DECODERS ? 1 : cores < 4 ? cores : 4;
    const uint32_t two[2] = {2, 8};
    grid_run sweep[CONTENDERS], r;
    // Below any rate, so that the first setting leads even at 0 windows/s.
    for (int k = 0; k < CONTENDERS; k++) sweep[k] = (grid_run){.wps = -1};
    uint32_t settings = 0;
    for (uint32_t d = 1; !rc && d <= dmax; d++)
        for (int i = 0; !rc && i < 8; i++) {
            // A knob given explicitly makes its copies of the grid one setting.
            if (((i & 1) && (o.fixed & SF_KNOB_PREFETCH)) || ((i & 2) && (o.fixed & SF_KNOB_SLOTS)) ||
                ((i & 4) && (o.fixed & SF_KNOB_DEPTH)))
                continue;
            sf_pipe_opts g = o;
            g.autotune = false;
            if (!(o.fixed & SF_KNOB_DECODERS)) g.decoders = d;
            if (!(o.fixed & SF_KNOB_PREFETCH)) g.prefetch = two[i & 1];
            if (!(o.fixed & SF_KNOB_SLOTS)) g.slots = two[(i >> 1) & 1];
            if (!(o.fixed & SF_KNOB_DEPTH)) g.io.depth = two[(i >> 2) & 1];
            if (budget && sf_pipe_memory(&g, in, cols) > budget) continue;
            rc = run_for(p, cols, &g, rate, seconds, &r, e);
            settings++;
            // The leaders by windows/s, a tie (0.1%) to the lesser wait;
            // inserted in order, so an equal later setting (more threads
            // or memory) ranks below.
            int at = CONTENDERS;
            while (!rc && at > 0 &&
                   (r.wps > sweep[at - 1].wps * 1.001 ||
                    (r.wps > sweep[at - 1].wps * 0.999 && r.wait < sweep[at - 1].wait)))
                at--;
            if (rc || at == CONTENDERS) continue;
            for (int k = CONTENDERS - 1; k > at; k--) sweep[k] = sweep[k - 1], lead[k] = lead[k - 1];
            sweep[at] = r, lead[at] = g;
        }
    if (rc) return rc;
    int nlead = 1;  // the sweep ran one setting at least
    while (nlead < CONTENDERS && sweep[nlead].wps >= 0.9 * sweep[0].wps) nlead++;
    // Round k runs auto and the leaders from position k on, wrapping.
    grid_run autos[ROUNDS], leads[CONTENDERS][ROUNDS];
    for (int k = 0; !rc && k < ROUNDS; k++)
        for (int j = 0; !rc && j <= nlead; j++) {
            int c = (k + j) % (nlead + 1);
            rc = c == nlead ? run_for(p, cols, &a, rate, seconds, &autos[k], e)
                            : run_for(p, cols, &lead[c], rate, seconds, &leads[c][k], e);
        }
    if (rc) return rc;
    double wps[ROUNDS], waits[ROUNDS], settled[ROUNDS], awaits[ROUNDS], share[ROUNDS], bw[CONTENDERS][ROUNDS];
    int b = 0;
    double bmed = 0;
    for (int c = 0; c < nlead; c++) {
        for (int k = 0; k < ROUNDS; k++) bw[c][k] = leads[c][k].wps;
        double m = median(bw[c], ROUNDS);
        if (m > bmed * 1.001) b = c, bmed = m;
    }
    for (int k = 0; k < ROUNDS; k++) {
        wps[k] = autos[k].wps, awaits[k] = autos[k].wait, settled[k] = autos[k].settled;
        waits[k] = leads[b][k].wait;
        share[k] = leads[b][k].wps > 0 ? autos[k].wps / leads[b][k].wps : 0;
    }
    double sh = median(share, ROUNDS), lo = share[0], hi = share[0];
    for (int k = 1; k < ROUNDS; k++) lo = share[k] < lo ? share[k] : lo, hi = share[k] > hi ? share[k] : hi;
    if (json) {
        printf("{\"grid_settings\": %u, \"seconds_each\": %.3g, \"consume_rate\": %.6g, \"rounds\": %d, "
               "\"grid_sweep_best_windows_per_s\": %.0f, \"grid_best\": ", settings, seconds, rate, ROUNDS,
               sweep[0].wps);
        sf_json_string(stdout, sweep[b].knobs);
        printf(", \"contenders\": [");
        for (int c = 0; c < nlead; c++) {
            printf("%s{\"knobs\": ", c ? ", " : "");
            sf_json_string(stdout, sweep[c].knobs);
            printf(", \"sweep_windows_per_s\": %.0f", sweep[c].wps);
            json_reals("windows_per_s", bw[c], ROUNDS, "%.0f");
            printf("}");
        }
        printf("]");
        json_reals("best_windows_per_s", bw[b], ROUNDS, "%.0f");
        json_reals("best_wait", waits, ROUNDS, "%.5f");
        json_reals("auto_windows_per_s", wps, ROUNDS, "%.0f");
        json_reals("auto_wait", awaits, ROUNDS, "%.5f");
        json_reals("auto_settled_s", settled, ROUNDS, "%.3f");
        json_reals("auto_share_rounds", share, ROUNDS, "%.4f");
        printf(", \"auto_share_of_best\": %.4f, \"auto_share_min\": %.4f, \"auto_share_max\": %.4f, \"auto_runs\": [",
               sh, lo, hi);
        for (int k = 0; k < ROUNDS; k++) {
            printf("%s", k ? ", " : "");
            sf_json_string(stdout, autos[k].knobs);
        }
        printf("], \"auto\": ");
        sf_json_string(stdout, autos[ROUNDS - 1].knobs);
        printf("}\n");
        return 0;
    }
    printf("grid          %u settings x %.3g s: best %.3f M windows/s with %s\n", settings, seconds, sweep[0].wps / 1e6,
           sweep[0].knobs + strlen("fixed: "));
    printf("rematch       %d rounds, interleaved, auto and %d setting(s) of the grid's best:", ROUNDS, nlead);
    for (int c = 0; c < nlead; c++)
        printf("%s %s %.3f M windows/s", c ? ";" : "", sweep[c].knobs + strlen("fixed: "), median(bw[c], ROUNDS) / 1e6);
    printf(" (medians)\n");
    printf("share         auto %.3f M windows/s (median): %.1f%% of the best [%.1f%%-%.1f%%], the median of the "
           "rounds' ratios", median(wps, ROUNDS) / 1e6, 100 * sh, 100 * lo, 100 * hi);
    if (rate > 0)
        printf("; input wait %.2f%% against %.2f%% (medians)", 100 * median(awaits, ROUNDS), 100 * median(waits, ROUNDS));
    printf("\n");
    printf("auto          settled at");
    for (int k = 0; k < ROUNDS; k++) printf("%s %.2f", k == 0 ? "" : k == ROUNDS - 1 ? " and" : ",", settled[k]);
    printf(" s: %s\n", autos[ROUNDS - 1].knobs);
    return 0;
}

int bench_pipeline(int argc, char **argv) {
    const cli_command *c = &pipeline_command;
    cli_args a;
    int rc = cli_parse(c, argc, argv, &a);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    const char *data = cli_data(c, &a, &rc);
    if (!data) return rc;
    sf_pipe_opts o = sf_pipe_opts_default();
    cli_apply_pipe(&a, &o);
    const cli_value *v = a.v;
    uint32_t global = v[OPT_BATCH_SIZE].set ? (uint32_t)v[OPT_BATCH_SIZE].u : sf_fit_opts_default().batch;
    o.replicas = v[OPT_REPLICAS].set ? (uint32_t)v[OPT_REPLICAS].u : 1;
    o.batch = global;
    if (o.replicas > sf_pipe_parts(&o))
        return cli_usage_error(c->name, "--batch-size %u is cut into %u part(s) of at least 8 windows, and each of "
                               "the %u replicas takes whole parts (hint: a --batch-size of at least %u, or fewer "
                               "--replicas)", global, sf_pipe_parts(&o), o.replicas, 8 * o.replicas);
    double consume_rate = v[OPT_CONSUME_RATE].set ? v[OPT_CONSUME_RATE].real : 0;
    bool json = v[OPT_JSON].set;
    sf_err e = {0};
    sf_pack *p;
    if (sf_pack_open(&p, data, &e)) return cli_fail(c->name, &e, NULL);
    const sf_pack_info *in = sf_pack_get_info(p);
    sf_columns cols;
    if (sf_columns_create(&cols, in, v[OPT_FEATURES].set ? v[OPT_FEATURES].text : NULL,
                          v[OPT_TARGETS].set ? v[OPT_TARGETS].text : NULL, NULL,
                          v[OPT_NORM].set ? (enum sf_norm)v[OPT_NORM].choice : SF_NORM_ZSCORE, &e)) {
        sf_pack_close(p);
        e.code = SF_EUSAGE;
        return cli_fail(c->name, &e, NULL);
    }
    double raw_bytes = (double)in->nrows * in->ncols * 4 * (double)o.epochs;
    // What reading every chunk once per epoch moves (the chunk area).
    double once = (double)(in->trailer_offset - in->data_offset) * (double)o.epochs;
    // Before anything is sized by the window: a file with no window has
    // nothing to measure.
    if (sf_plan_count(in->series, in->nseries, &o.window, &o.split) == 0) {
        char opts[128];
        sf_window_shrinkers(&o.window, false, false, opts, sizeof opts);
        rc = sf_err_set(&e, SF_EUSAGE, "%s: no window of %u rows (%llu rows with --sampling-rate and --horizon) "
                        "fits in any series, the longest of which has %llu rows: nothing to measure%s%s%s", data,
                        o.window.length, (unsigned long long)sf_window_span(&o.window),
                        (unsigned long long)sf_split_longest(in->series, in->nseries, o.window.stride, &o.split),
                        opts[0] ? " (hint: a smaller " : "", opts[0] ? opts + 2 : "", opts[0] ? ")" : "");
    }
    uint64_t budget = v[OPT_MEMORY_BUDGET].set ? (uint64_t)(v[OPT_MEMORY_BUDGET].real * 1e6) : 0;
    if (!rc) rc = sf_pipe_fit_budget(&o, in, &cols, budget, &e);
    if (!rc && v[OPT_GRID].set) {
        rc = grid(p, &cols, o, budget, consume_rate, v[OPT_GRID].real, json, &e);
        sf_columns_free(&cols);
        sf_pack_close(p);
        return rc ? cli_fail(c->name, &e, NULL) : EXIT_OK;
    }
    uint64_t memory = sf_pipe_memory(&o, in, &cols);
    sf_pipe *pipe = NULL;
    double t0 = sf_now();
    if (!rc) rc = sf_pipe_open(&pipe, p, &cols, &o, &e);
    if (rc) {
        sf_columns_free(&cols);
        sf_pack_close(p);
        return cli_fail(c->name, &e, NULL);
    }
    consumer *cs = calloc(o.replicas, sizeof *cs);
    pthread_t *ts = calloc(o.replicas, sizeof *ts);
    uint32_t started = 0;
    for (; cs && ts && started < o.replicas; started++) {
        cs[started] = (consumer){.pipe = pipe, .r = started, .rate = consume_rate,
                                 .talk = started == 0 && o.autotune && !json && !v[OPT_QUIET].set,
                                 .steps = v[OPT_STEPS].set ? v[OPT_STEPS].u : 0};
        if (pthread_create(&ts[started], NULL, consume, &cs[started])) break;
    }
    if (started < o.replicas) {  // no consumer may be inside the pipe when it closes
        for (uint32_t r = 0; r < started; r++) pthread_join(ts[r], NULL);
        sf_pipe_close(pipe);
        sf_columns_free(&cols);
        sf_pack_close(p);
        free(cs);
        free(ts);
        return cli_fail(c->name, &(sf_err){SF_ENOMEM, "cannot start the consumer threads"}, NULL);
    }
    uint64_t windows = 0, batches = 0;
    for (uint32_t r = 0; r < started; r++) {
        pthread_join(ts[r], NULL);
        windows += cs[r].windows;
        batches += cs[r].batches;
        if (cs[r].rc < 0 && !rc) {
            rc = cs[r].rc;
            e = cs[r].e;
        }
    }
    double wall = sf_now() - t0;
    sf_pipe_stats st;
    sf_pipe_replica_stats *rs = calloc(o.replicas, sizeof *rs);
    sf_pipe_get_stats(pipe, &st, rs);
    char mode[192], knobs[SF_PIPE_TUNING_TEXT];
    snprintf(mode, sizeof mode, "%s", sf_pipe_io_mode(pipe));
    sf_pipe_tuning tuning;
    sf_pipe_get_tuning(pipe, &tuning);
    sf_pipe_tuning_text(&tuning, knobs, sizeof knobs);
    sf_pipe_close(pipe);
    uint64_t peak = peak_rss();  // before the ceiling's copy of the data
    double ceiling = rc ? -1 : memory_ceiling(&o, p, &cols, 1.0, &e);
    sf_columns_free(&cols);
    sf_pack_close(p);
    if (rc) {
        free(cs), free(ts), free(rs);
        return cli_fail(c->name, &e, NULL);
    }

    double window_busy = 0, window_in = 0, window_out = 0, stall = 0;
    for (uint32_t r = 0; r < o.replicas; r++) {
        window_busy += rs[r].busy;
        window_in += rs[r].input_wait;
        window_out += rs[r].output_wait;
        stall += rs[r].consumer_wait;
    }
    double util_read = st.read_busy / wall, util_decode = st.decode_busy / (wall * tuning.now.decoders),
           util_window = window_busy / (wall * o.replicas), stall_share = stall / (wall * o.replicas);
    // The limit: paced consumers that never wait are the bottleneck
    // themselves; otherwise the busiest stage (utilisation per thread).
    bool paced = consume_rate > 0;
    const char *limit = paced && stall_share < 0.01 ? "consumer" :
                        util_decode >= util_read && util_decode >= util_window ? "decode" :
                        util_window >= util_read ? "window" : "read";
    double wps = (double)windows / wall, reads = once > 0 ? st.bytes_read / once : 0;
    uint32_t parts = sf_pipe_parts(&o), per = sf_replica_windows(global, parts, o.replicas, 0);
    if (json) {
        // Unpaced: no rate and no stall figure (null).
        char rate_json[32] = "null", stall_json[32] = "null";
        if (paced) snprintf(rate_json, sizeof rate_json, "%.6g", consume_rate), snprintf(stall_json, sizeof stall_json, "%.4f", stall_share);
        printf("{\"windows\": %" PRIu64 ", \"batches\": %" PRIu64 ", \"seconds\": %.4f, \"windows_per_s\": %.0f, "
               "\"read_MB_per_s\": %.1f, \"decoded_MB_per_s\": %.1f, \"utilisation\": {\"read\": %.3f, \"decode\": "
               "%.3f, \"window\": %.3f}, \"consume_rate\": %s, \"consumer_stall\": %s, \"limit\": \"%s\", "
               "\"memory_ceiling_windows_per_s\": "
               "%.0f, \"ratio_to_ceiling\": %.3f, \"pool\": %" PRIu64 ", \"memory_bytes\": %" PRIu64
               ", \"peak_rss_bytes\": %" PRIu64 ", \"batch_size\": %u, \"batch_per_replica\": %u, \"parts\": %u, \"lanes\": %u, \"read_over_file\": %.3f, \"io\": ",
               windows, batches, wall, wps, st.bytes_read / 1e6 / wall, raw_bytes / 1e6 / wall, util_read, util_decode,
               util_window, rate_json, stall_json, limit, ceiling, ceiling > 0 ? wps / ceiling : 0, o.pool, memory, peak, global,
               per, parts, o.lanes, reads);
        sf_json_string(stdout, mode);
        printf(", \"pipeline\": ");
        sf_json_string(stdout, knobs);
        printf("}\n");
    } else {
        printf("pipeline      %s, %u replica(s) x %u lane(s), batch size %u (%u parts, %u for replica 0), pool %" PRIu64
               ", window %u/%u/%u/%u, %u decoder(s)\n",
               data, o.replicas, o.lanes, global, parts, per, o.pool, o.window.length, o.window.stride,
               o.window.sampling_rate, o.window.horizon, o.decoders);
        printf("io            %s\n", mode);
        printf("knobs         %s\n", knobs);
        printf("memory        %.1f MB held by the pipeline (pool %" PRIu64 " windows in all); the process peaked "
               "at %.1f MB resident\n", memory / 1e6, o.pool, peak / 1e6);
        printf("delivered     %" PRIu64 " windows in %" PRIu64 " batches in %.3f s: %.2f M windows/s\n", windows,
               batches, wall, wps / 1e6);
        printf("read          %.1f MB/s stored, %.1f MB/s decoded; %.2fx the file's chunks per epoch\n",
               st.bytes_read / 1e6 / wall, raw_bytes / 1e6 / wall, reads);
        printf("utilisation   read %.0f%%, decode %.0f%% (per decoder), window %.0f%% (per windower)\n",
               100 * util_read, 100 * util_decode, 100 * util_window);
        if (paced)
            printf("consumers     paced at %.6g batches/s each: waited %.2f%% of the time for a batch after the first "
                   "(%.1f ms for the first)\n", consume_rate, 100 * stall_share, 1e3 * rs[0].first_wait);
        else
            printf("consumers     not paced: raw throughput, no stall figure (--consume-rate N paces each at N "
                   "batches/s, a model's step, and measures its stalls)\n");
        printf("windowers     waited %.1f%% of the time for blocks, %.1f%% for free slots\n",
               100 * window_in / (wall * o.replicas), 100 * window_out / (wall * o.replicas));
        printf("limit         %s\n", limit);
        if (ceiling > 0)
            printf("ceiling       %.2f M windows/s copying the same windows in random order from RAM (1 thread); "
                   "pipeline / ceiling = %.2f\n",
                   ceiling / 1e6, wps / ceiling);
    }
    free(cs);
    free(ts);
    free(rs);
    return EXIT_OK;
}

static const cli_use read_uses[] = {
    {.opt = OPT_DATA, .help = "the .sfpack file (required)"},
    {.opt = OPT_BLOCK_CHUNKS, .help = "chunks per read request"}, {.opt = OPT_DEPTH, .def = "8"}, {.opt = OPT_IO},
    {.opt = OPT_DIRECT}, {.opt = OPT_JSON}, {.opt = OPT_QUIET}, {.opt = OPT_HELP}, {.opt = OPT_COUNT}};

static const cli_command read_command = {
    .name = "bench read",
    .usage = "--data FILE.sfpack [options]",
    .about =
        "The reader stage alone: reads every chunk once, in file order, --block-chunks\n"
        "consecutive chunks per request (as the pipeline reads a block), with --depth\n"
        "requests in flight, and prints GB/s, to compare with fio reading the same\n"
        "file with io_uring and O_DIRECT (bench/pipeline.sh runs both).\n",
    .uses = read_uses,
};

int bench_read(int argc, char **argv) {
    const cli_command *c = &read_command;
    cli_args a;
    int rc = cli_parse(c, argc, argv, &a);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    const char *data = cli_data(c, &a, &rc);
    if (!data) return rc;
    sf_pipe_opts po = sf_pipe_opts_default();
    cli_apply_pipe(&a, &po);
    sf_reader_opts ro = po.io;
    uint64_t per = po.block_chunks;
    bool json = a.v[OPT_JSON].set;
    sf_err e = {0};
    sf_pack *p;
    if (sf_pack_open(&p, data, &e)) return cli_fail("bench read", &e, NULL);
    const sf_pack_info *in = sf_pack_get_info(p);
    ro.buffer_size = per * (sf_pack_max_stored_size(p) + SF_PACK_ALIGN);
    sf_reader *r;
    if (sf_reader_open(&r, sf_pack_fd(p), data, &ro, &e)) {
        sf_pack_close(p);
        return cli_fail("bench read", &e, NULL);
    }
    uint32_t *free_bufs = malloc(ro.depth * sizeof *free_bufs), nfree = 0;
    for (uint32_t i = 0; i < ro.depth; i++) free_bufs[nfree++] = i;
    uint64_t next = 0, done = 0, bytes = 0;
    uint32_t inflight = 0;
    double t0 = sf_now();
    while (!rc && done < in->nchunks) {
        while (!rc && nfree && next < in->nchunks) {
            uint64_t n = in->nchunks - next < per ? in->nchunks - next : per;
            sf_chunk first = sf_pack_chunk_locate(p, next);
            size_t len = (size_t)(sf_pack_chunk_span_end(p, next + n - 1) - first.offset);
            if ((rc = sf_reader_submit(r, free_bufs[nfree - 1], first.offset, len, n, &e))) break;
            nfree--;
            inflight++;
            bytes += len;
            next += n;
        }
        uint32_t i;
        uint64_t n;
        if (!rc && !(rc = sf_reader_wait(r, &i, &n, &e))) {
            free_bufs[nfree++] = i;
            inflight--;
            done += n;
        }
    }
    double dt = sf_now() - t0;
    for (sf_err ignored; inflight > 0; inflight--) {  // after an error: no buffer freed under a read
        uint32_t i;
        uint64_t n;
        sf_reader_wait(r, &i, &n, &ignored);
    }
    if (!rc) {
        if (json)
            printf("{\"bytes\": %" PRIu64 ", \"seconds\": %.4f, \"GB_per_s\": %.3f, \"depth\": %u}\n", bytes, dt,
                   bytes / 1e9 / dt, ro.depth);
        else
            printf("read %" PRIu64 " chunks, %.1f MB in %.3f s: %.2f GB/s (%s)\n", in->nchunks, bytes / 1e6, dt,
                   bytes / 1e9 / dt, sf_reader_mode(r));
    }
    free(free_bufs);
    sf_reader_close(r);
    sf_pack_close(p);
    return rc ? cli_fail("bench read", &e, NULL) : EXIT_OK;
}

int cmd_bench(int argc, char **argv) {
    // Benchmarks measure one process; N copies under a launcher would
    // compete for the machine and each report alone. bench scaling is the
    // exception: its counts are replicas per rank, its runs the job's.
    if (argc >= 2 && !strcmp(argv[1], "scaling")) return bench_scaling(argc - 1, argv + 1);
    if (sf_ranks_launched()) {
        fprintf(stderr, "seqfeed bench: error: runs in one process, not under mpirun or srun, but for bench scaling "
                "(hint: to measure a job, run seqfeed train under the launcher with --report)\n");
        return EXIT_USAGE;
    }
    if (argc >= 2 && !strcmp(argv[1], "pipeline")) return bench_pipeline(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "read")) return bench_read(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "train")) return bench_train(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs("usage: seqfeed bench pipeline|read|train|scaling [options]\n\n"
              "  pipeline   the input pipeline alone: windows/s, stage utilisation, stalls, its ceiling\n"
              "  read       the reader alone: GB/s (bench/pipeline.sh puts fio beside it)\n"
              "  train      the trainer at several batch sizes: samples/s, input cost, GFLOP/s\n"
              "  scaling    speed-up and efficiency at several replica counts, and what limits them;\n"
              "             with --target-loss the steps and seconds to a val_loss, and whether more replicas pay\n\n"
              "'seqfeed bench SUBCOMMAND --help' describes its options.\n",
              stdout);
        return EXIT_OK;
    }
    if (argc >= 2 && argv[1][0] == '-')
        return cli_usage_error("bench", "'%s' before the subcommand: options go after it (seqfeed bench pipeline "
                               "%s ...)", argv[1], argv[1]);
    return cli_usage_error("bench", "expected 'bench pipeline', 'bench read', 'bench train' or 'bench scaling'");
}
