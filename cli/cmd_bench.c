#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ranks/ranks.h"
#include "pipeline/pipeline.h"

static const char help[] =
    "usage: seqfeed bench pipeline --data FILE.sfpack [options]\n"
    "\n"
    "Runs the input pipeline alone, with one simulated consumer per replica,\n"
    "and reports windows/s, MB/s read and decoded, each stage's utilisation,\n"
    "the consumers' stall share and the stage that limits throughput. In the\n"
    "same run it measures the in-memory ceiling: copying the same kind of\n"
    "windows in random order out of decoded features held in RAM (the first\n"
    "16M rows of the file).\n"
    "\n"
    "options:\n"
    "      --data FILE         the .sfpack file (required)\n"
    "      --window T          rows per window (default 60)\n"
    "      --stride N          rows between window starts (default 1)\n"
    "      --sampling-rate N   rows between samples in a window (default 1)\n"
    "      --horizon N         target row past the window's last (default 1)\n"
    "      --features a,b      feature columns (default: all)\n"
    "      --targets c,d       target columns (default: all)\n"
    "      --norm zscore|minmax|none (default zscore)\n"
    "      --replicas R        simulated consumers (default 1)\n"
    "      --batch N           windows per batch per replica (default 256)\n"
    "      --pool N            shuffle pool per lane, windows (default 16384)\n"
    "      --epochs N          (default 1)\n"
    "      --decoders N        decoder threads (default: cores)\n"
    "      --io uring|pread    (default: io_uring when the kernel allows it)\n"
    "      --direct auto|on|off  O_DIRECT (default auto)\n"
    "      --depth N           reads in flight (default 8)\n"
    "      --prefetch N        decoded blocks queued per replica (default 4)\n"
    "      --block-chunks N    chunks per block (default 1)\n"
    "      --slots K           staging slots per replica (default 2)\n"
    "      --consume-rate N    each consumer spends 1/N s on every batch, off the CPU\n"
    "                          like a GPU step (default: takes them as fast as it can)\n"
    "      --lanes N           windower threads per replica, each with its own\n"
    "                          --pool (default: cores / replicas, at least 1)\n"
    "      --memory-budget MB  shrink the pool so that the pipeline fits in MB\n"
    "      --seed N            (default 1)\n"
    "      --json              one JSON object instead of the table\n";

typedef struct {
    sf_pipe *pipe;
    uint32_t r;
    double rate;  // batches/s, 0: no pacing
    uint64_t windows, batches;
    int rc;
    sf_err e;
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

// Windows per second copying the pipeline's windows in random order out of
// the decoded, scaled features held in RAM: what a pipeline without I/O,
// decoding or pools could at best do on this machine.
static double memory_ceiling(const sf_pipe_opts *o, const char *path, double seconds, sf_err *e) {
    sf_pack *p;
    if (sf_pack_open(&p, path, e)) return -1;
    const sf_pack_info *in = sf_pack_get_info(p);
    sf_columns cols;
    sf_plan *plan = NULL;
    double rate = -1;
    if (sf_columns_create(&cols, in, o->features, o->targets, o->norm, e)) goto out_pack;
    // The first 16M rows at most: enough to leave the caches far behind
    // (random windows over hundreds of MB), little enough for RAM.
    uint64_t rows = in->nrows < (1u << 24) ? in->nrows : (1u << 24), nseries = 0;
    sf_series *series = malloc(in->nseries * sizeof *series);
    if (!series) goto out_cols;
    for (; nseries < in->nseries && in->series[nseries].first_row < rows; nseries++) {
        series[nseries] = in->series[nseries];
        if (series[nseries].first_row + series[nseries].rows > rows) series[nseries].rows = rows - series[nseries].first_row;
    }
    int prc = sf_plan_create(&plan, rows, in->chunk_rows, series, nseries, &o->window, 1, NULL, e);
    free(series);
    if (prc) goto out_cols;
    sf_block_task all = {0, 0, sf_plan_windows(plan), 0, rows};
    sf_block_loader *l = sf_block_loader_create(p, &cols);
    sf_block_data d = {0};
    if (!l || sf_block_load(l, &all, &d, e)) goto out_loader;
    uint64_t n = sf_plan_windows(plan), *ids = malloc((n + 1) * sizeof *ids), s = 12345;
    size_t xl = (size_t)o->window.length * cols.nfeatures;
    float *x = malloc(o->batch * xl * sizeof(float)), *y = malloc(o->batch * (cols.ntargets + 1) * sizeof(float));
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
                sf_window_cut(plan, &cols, &d, id, x + k * xl, y + k * cols.ntargets);
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
out_cols:
    sf_columns_free(&cols);
out_pack:
    sf_pack_close(p);
    return rate;
}

static int bench_pipeline(int argc, char **argv) {
    enum { O_DATA = 256, O_WINDOW, O_STRIDE, O_RATE, O_HORIZON, O_FEATURES, O_TARGETS, O_NORM, O_REPLICAS, O_BATCH,
           O_POOL, O_EPOCHS, O_DECODERS, O_IO, O_DIRECT, O_DEPTH, O_PREFETCH, O_BLOCK, O_SLOTS, O_CONSUME, O_SEED,
           O_JSON, O_BUDGET, O_LANES };
    static const struct option opts[] = {
        {"data", required_argument, 0, O_DATA}, {"window", required_argument, 0, O_WINDOW},
        {"stride", required_argument, 0, O_STRIDE}, {"sampling-rate", required_argument, 0, O_RATE},
        {"horizon", required_argument, 0, O_HORIZON}, {"features", required_argument, 0, O_FEATURES},
        {"targets", required_argument, 0, O_TARGETS}, {"norm", required_argument, 0, O_NORM},
        {"replicas", required_argument, 0, O_REPLICAS}, {"batch", required_argument, 0, O_BATCH},
        {"pool", required_argument, 0, O_POOL}, {"epochs", required_argument, 0, O_EPOCHS},
        {"decoders", required_argument, 0, O_DECODERS}, {"io", required_argument, 0, O_IO},
        {"direct", required_argument, 0, O_DIRECT}, {"depth", required_argument, 0, O_DEPTH},
        {"prefetch", required_argument, 0, O_PREFETCH}, {"block-chunks", required_argument, 0, O_BLOCK},
        {"slots", required_argument, 0, O_SLOTS}, {"consume-rate", required_argument, 0, O_CONSUME},
        {"seed", required_argument, 0, O_SEED}, {"json", no_argument, 0, O_JSON},
        {"memory-budget", required_argument, 0, O_BUDGET}, {"lanes", required_argument, 0, O_LANES},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    sf_pipe_opts o = {.window = {60, 1, 1, 1}, .norm = SF_NORM_ZSCORE, .block_chunks = 1, .replicas = 1,
                      .batch = 256, .pool = 16384, .seed = 1, .epochs = 1,
                      .io = {SF_IO_AUTO, SF_DIRECT_AUTO, 8, 0}, .decoders = ncpu > 0 ? (uint32_t)ncpu : 1,
                      .slots = 2, .prefetch = 4};
    const char *data = NULL;
    double consume_rate = 0, budget_mb = 0;
    uint32_t lanes = 0;
    bool json = false;
    uint64_t v;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        bool ok = true;
        switch (ch) {
        case 'h': fputs(help, stdout); return EXIT_OK;
        case O_DATA: data = optarg; break;
        case O_FEATURES: o.features = optarg; break;
        case O_TARGETS: o.targets = optarg; break;
        case O_NORM: ok = (o.norm = sf_norm_parse(optarg)) >= 0; break;
        case O_IO:
            ok = !strcmp(optarg, "uring") || !strcmp(optarg, "pread");
            o.io.io = !strcmp(optarg, "uring") ? SF_IO_URING : SF_IO_PREAD;
            break;
        case O_DIRECT:
            ok = !strcmp(optarg, "auto") || !strcmp(optarg, "on") || !strcmp(optarg, "off");
            o.io.direct = !strcmp(optarg, "on") ? SF_DIRECT_ON : !strcmp(optarg, "off") ? SF_DIRECT_OFF : SF_DIRECT_AUTO;
            break;
        case O_CONSUME: {
            char *end;
            consume_rate = strtod(optarg, &end);
            ok = *end == 0 && end != optarg && consume_rate > 0;
            break;
        }
        case O_JSON: json = true; break;
        case O_LANES:
            ok = cli_parse_u64(optarg, 64, &v) && v > 0;
            lanes = (uint32_t)v;
            break;
        case O_BUDGET: {
            char *end;
            budget_mb = strtod(optarg, &end);
            ok = *end == 0 && end != optarg && budget_mb > 0;
            break;
        }
        default:
            if (ch < O_WINDOW || ch > O_SEED || !cli_parse_u64(optarg, UINT32_MAX, &v))
                return cli_usage_error("bench pipeline", "bad option or value '%s'", optarg ? optarg : "");
            switch (ch) {
            case O_WINDOW: o.window.length = (uint32_t)v; break;
            case O_STRIDE: o.window.stride = (uint32_t)v; break;
            case O_RATE: o.window.sampling_rate = (uint32_t)v; break;
            case O_HORIZON: o.window.horizon = (uint32_t)v; break;
            case O_REPLICAS: o.replicas = (uint32_t)v; break;
            case O_BATCH: o.batch = (uint32_t)v; break;
            case O_POOL: o.pool = v; break;
            case O_EPOCHS: o.epochs = v; break;
            case O_DECODERS: o.decoders = (uint32_t)v; break;
            case O_DEPTH: o.io.depth = (uint32_t)v; break;
            case O_PREFETCH: o.prefetch = (uint32_t)v; break;
            case O_BLOCK: o.block_chunks = (uint32_t)v; break;
            case O_SLOTS: o.slots = (uint32_t)v; break;
            case O_SEED: o.seed = v; break;
            }
        }
        if (!ok) return cli_usage_error("bench pipeline", "bad value '%s'", optarg);
    }
    if (!data) return cli_usage_error("bench pipeline", "missing --data FILE.sfpack");
    if (optind < argc) return cli_usage_error("bench pipeline", "unexpected argument '%s'", argv[optind]);

    // Windowing is the pipeline's heaviest stage: one thread per core.
    uint32_t cores = ncpu > 0 ? (uint32_t)ncpu : 1;
    o.lanes = lanes ? lanes : o.replicas < cores ? cores / o.replicas : 1;
    sf_err e = {0};
    sf_pack *p;
    if (sf_pack_open(&p, data, &e)) return cli_fail("bench pipeline", &e, NULL);
    const sf_pack_info *in = sf_pack_get_info(p);
    double raw_bytes = (double)in->nrows * in->ncols * 4 * (double)o.epochs;
    int frc = budget_mb > 0 ? sf_pipe_fit_budget(&o, in, (uint64_t)(budget_mb * 1e6), &e) : 0;
    uint64_t memory = sf_pipe_memory(&o, in);
    sf_pack_close(p);
    if (frc) return cli_fail("bench pipeline", &e, NULL);
    sf_pipe *pipe;
    double t0 = sf_now();
    if (sf_pipe_open(&pipe, data, &o, &e)) return cli_fail("bench pipeline", &e, NULL);
    consumer *cs = calloc(o.replicas, sizeof *cs);
    pthread_t *ts = calloc(o.replicas, sizeof *ts);
    uint32_t started = 0;
    for (; cs && ts && started < o.replicas; started++) {
        cs[started] = (consumer){pipe, started, consume_rate, 0, 0, 0, {0}};
        if (pthread_create(&ts[started], NULL, consume, &cs[started])) break;
    }
    if (started < o.replicas) {  // no consumer may be inside the pipe when it closes
        for (uint32_t r = 0; r < started; r++) pthread_join(ts[r], NULL);
        sf_pipe_close(pipe);
        free(cs);
        free(ts);
        return cli_fail("bench pipeline", &(sf_err){SF_ENOMEM, "cannot start the consumer threads"}, NULL);
    }
    uint64_t windows = 0, batches = 0;
    int rc = 0;
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
    char mode[192];
    snprintf(mode, sizeof mode, "%s", sf_pipe_io_mode(pipe));
    sf_pipe_close(pipe);
    if (rc) return cli_fail("bench pipeline", &e, NULL);

    double window_busy = 0, window_in = 0, window_out = 0, stall = 0;
    for (uint32_t r = 0; r < o.replicas; r++) {
        window_busy += rs[r].busy;
        window_in += rs[r].input_wait;
        window_out += rs[r].output_wait;
        stall += rs[r].consumer_wait;
    }
    double util_read = st.read_busy / wall, util_decode = st.decode_busy / (wall * o.decoders),
           util_window = window_busy / (wall * o.replicas), stall_share = stall / (wall * o.replicas);
    // The limit: consumers that never wait are the bottleneck themselves;
    // otherwise the busiest stage (utilisation per thread).
    const char *limit = stall_share < 0.01 ? "consumer" :
                        util_decode >= util_read && util_decode >= util_window ? "decode" :
                        util_window >= util_read ? "window" : "read";
    double ceiling = memory_ceiling(&o, data, 1.0, &e);
    double wps = (double)windows / wall;
    if (json) {
        printf("{\"windows\": %" PRIu64 ", \"batches\": %" PRIu64 ", \"seconds\": %.4f, \"windows_per_s\": %.0f, "
               "\"read_MB_per_s\": %.1f, \"decoded_MB_per_s\": %.1f, \"utilisation\": {\"read\": %.3f, \"decode\": "
               "%.3f, \"window\": %.3f}, \"consumer_stall\": %.4f, \"limit\": \"%s\", \"memory_ceiling_windows_per_s\": "
               "%.0f, \"ratio_to_ceiling\": %.3f, \"pool\": %" PRIu64 ", \"memory_bytes\": %" PRIu64 ", \"io\": ",
               windows, batches, wall, wps, st.bytes_read / 1e6 / wall, raw_bytes / 1e6 / wall, util_read, util_decode,
               util_window, stall_share, limit, ceiling, ceiling > 0 ? wps / ceiling : 0, o.pool, memory);
        cli_json_string(stdout, mode);
        printf("}\n");
    } else {
        printf("pipeline      %s, %u replica(s) x %u lane(s), batch %u, pool %" PRIu64
               ", window %u/%u/%u/%u, %u decoder(s)\n",
               data, o.replicas, o.lanes, o.batch, o.pool, o.window.length, o.window.stride, o.window.sampling_rate,
               o.window.horizon, o.decoders);
        printf("io            %s\n", mode);
        printf("memory        %.1f MB held by the pipeline (pool %" PRIu64 " windows per lane)\n", memory / 1e6,
               o.pool);
        printf("delivered     %" PRIu64 " windows in %" PRIu64 " batches in %.3f s: %.2f M windows/s\n", windows,
               batches, wall, wps / 1e6);
        printf("read          %.1f MB/s stored, %.1f MB/s decoded\n", st.bytes_read / 1e6 / wall, raw_bytes / 1e6 / wall);
        printf("utilisation   read %.0f%%, decode %.0f%% (per decoder), window %.0f%% (per windower)\n",
               100 * util_read, 100 * util_decode, 100 * util_window);
        printf("consumers     waited %.2f%% of the time for a batch after the first (%.1f ms for the first)\n",
               100 * stall_share, 1e3 * rs[0].first_wait);
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

static const char read_help[] =
    "usage: seqfeed bench read --data FILE.sfpack [--io uring|pread] [--direct auto|on|off] [--depth N]\n"
    "                          [--block-chunks N]\n"
    "\n"
    "The reader stage alone: reads every chunk once, in file order, N consecutive\n"
    "chunks per request (as the pipeline reads a block; default 2), with --depth\n"
    "requests in flight, and prints GB/s; compare with fio --ioengine=io_uring\n"
    "--direct=1 --bs=1M --iodepth=N on the same file (bench/pipeline.sh does both).\n";

static int bench_read(int argc, char **argv) {
    enum { O_DATA = 256, O_IO, O_DIRECT, O_DEPTH, O_JSON, O_BLOCK };
    static const struct option opts[] = {{"data", required_argument, 0, O_DATA}, {"io", required_argument, 0, O_IO},
                                         {"direct", required_argument, 0, O_DIRECT},
                                         {"depth", required_argument, 0, O_DEPTH}, {"json", no_argument, 0, O_JSON},
                                         {"block-chunks", required_argument, 0, O_BLOCK},
                                         {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    sf_reader_opts ro = {SF_IO_AUTO, SF_DIRECT_AUTO, 8, 0};
    uint64_t per = 2;
    const char *data = NULL;
    bool json = false;
    uint64_t v;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'h': fputs(read_help, stdout); return EXIT_OK;
        case O_DATA: data = optarg; break;
        case O_JSON: json = true; break;
        case O_IO:
            if (strcmp(optarg, "uring") && strcmp(optarg, "pread"))
                return cli_usage_error("bench read", "--io wants uring or pread");
            ro.io = !strcmp(optarg, "uring") ? SF_IO_URING : SF_IO_PREAD;
            break;
        case O_DIRECT:
            if (strcmp(optarg, "auto") && strcmp(optarg, "on") && strcmp(optarg, "off"))
                return cli_usage_error("bench read", "--direct wants auto, on or off");
            ro.direct = !strcmp(optarg, "on") ? SF_DIRECT_ON : !strcmp(optarg, "off") ? SF_DIRECT_OFF : SF_DIRECT_AUTO;
            break;
        case O_BLOCK:
            if (!cli_parse_u64(optarg, 64, &per) || !per)
                return cli_usage_error("bench read", "--block-chunks wants 1 to 64");
            break;
        case O_DEPTH:
            if (!cli_parse_u64(optarg, 1024, &v) || !v) return cli_usage_error("bench read", "--depth wants 1 to 1024");
            ro.depth = (uint32_t)v;
            break;
        default: return cli_usage_error("bench read", "unknown option");
        }
    }
    if (!data) return cli_usage_error("bench read", "missing --data FILE.sfpack");
    sf_err e = {0};
    sf_pack *p;
    if (sf_pack_open(&p, data, &e)) return cli_fail("bench read", &e, NULL);
    const sf_pack_info *in = sf_pack_get_info(p);
    ro.buffer_size = per * (sf_pack_max_stored_size(p) + SF_PACK_ALIGN);
    sf_reader *r;
    if (sf_reader_open(&r, data, &ro, &e)) {
        sf_pack_close(p);
        return cli_fail("bench read", &e, NULL);
    }
    uint32_t *free_bufs = malloc(ro.depth * sizeof *free_bufs), nfree = 0;
    for (uint32_t i = 0; i < ro.depth; i++) free_bufs[nfree++] = i;
    uint64_t next = 0, done = 0, bytes = 0;
    uint32_t inflight = 0;
    int rc = 0;
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
    if (argc >= 2 && !strcmp(argv[1], "pipeline")) return bench_pipeline(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "read")) return bench_read(argc - 1, argv + 1);
    // Benchmarks measure one process; N copies under a launcher would
    // compete for the machine and each report alone.
    if (sf_ranks_launched()) {
        fprintf(stderr, "seqfeed bench: runs in one process, not under mpirun or srun (hint: to measure a job, run "
                "seqfeed train under the launcher with --report)\n");
        return EXIT_USAGE;
    }
    if (argc >= 2 && !strcmp(argv[1], "train")) return bench_train(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "scaling")) return bench_scaling(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs("usage: seqfeed bench pipeline|read|train|scaling [options]\n\n"
              "  pipeline   the input pipeline alone: windows/s, stage utilisation, stalls, its ceiling\n"
              "  read       the reader alone: GB/s (bench/pipeline.sh puts fio beside it)\n"
              "  train      the trainer at several batch sizes: samples/s, input cost, GFLOP/s\n"
              "  scaling    speed-up and efficiency at several replica counts, and what limits them\n\n"
              "'seqfeed bench SUBCOMMAND --help' describes its options.\n",
              stdout);
        return EXIT_OK;
    }
    return cli_usage_error("bench", "expected 'bench pipeline', 'bench read', 'bench train' or 'bench scaling'");
}
