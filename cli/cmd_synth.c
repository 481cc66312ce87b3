#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "pack/pack.h"

static const char help[] =
    "usage: seqfeed synth -o OUT.sfpack --rows N [options]\n"
    "\n"
    "Writes a synthetic .sfpack for tests and benchmarks: every feature is a\n"
    "random walk plus a daily and a weekly seasonal wave, with its own scale,\n"
    "split into series of equal length. Deterministic for a seed. Streams:\n"
    "memory does not grow with --rows.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE     the .sfpack file to write (required)\n"
    "      --rows N          rows in all (required)\n"
    "      --features N      columns, named f0, f1, ... (default 4)\n"
    "      --series N        series, named s0, s1, ... (default 1)\n"
    "      --seed N          (default 1)\n"
    "      --level N         zstd level (default 1)\n"
    "      --chunk-rows N    rows per chunk (default: 1 MiB of float32)\n"
    "      --threads N       compression threads (default: all cores)\n"
    "  -q, --quiet           no summary line\n"
    "  -h, --help            this text\n";

int cmd_synth(int argc, char **argv) {
    enum { O_ROWS = 256, O_FEATURES, O_SERIES, O_SEED, O_LEVEL, O_CHUNK, O_THREADS };
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'},     {"rows", required_argument, 0, O_ROWS},
        {"features", required_argument, 0, O_FEATURES}, {"series", required_argument, 0, O_SERIES},
        {"seed", required_argument, 0, O_SEED},    {"level", required_argument, 0, O_LEVEL},
        {"chunk-rows", required_argument, 0, O_CHUNK}, {"threads", required_argument, 0, O_THREADS},
        {"quiet", no_argument, 0, 'q'},            {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *out = NULL;
    uint64_t rows = 0, features = 4, nseries = 1, seed = 1;
    bool quiet = false;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    sf_pack_writer_opts wo = {.level = SF_PACK_DEFAULT_LEVEL, .filter = SF_FILTER_DELTA_SHUFFLE,
                              .threads = ncpu > 0 ? (int)ncpu : 1};
    int ch;
    while ((ch = getopt_long(argc, argv, "o:qh", opts, NULL)) != -1) {
        switch (ch) {
        case 'o': out = optarg; break;
        case 'q': quiet = true; break;
        case 'h': fputs(help, stdout); return EXIT_OK;
        case O_ROWS:
            if (!cli_parse_u64(optarg, UINT64_MAX >> 8, &rows) || rows == 0)
                return cli_usage_error("synth", "--rows wants a positive integer, not '%s'", optarg);
            break;
        case O_FEATURES:
            if (!cli_parse_u64(optarg, SF_PACK_MAX_COLS, &features) || features == 0)
                return cli_usage_error("synth", "--features wants 1 to %u, not '%s'", SF_PACK_MAX_COLS, optarg);
            break;
        case O_SERIES:
            if (!cli_parse_u64(optarg, UINT32_MAX, &nseries) || nseries == 0)
                return cli_usage_error("synth", "--series wants a positive integer, not '%s'", optarg);
            break;
        case O_SEED:
            if (!cli_parse_u64(optarg, UINT64_MAX, &seed))
                return cli_usage_error("synth", "--seed wants a non-negative integer, not '%s'", optarg);
            break;
        case O_LEVEL:
        case O_CHUNK:
        case O_THREADS: {
            int rc = cli_writer_option("synth", ch == O_LEVEL ? 'l' : ch == O_CHUNK ? 'c' : 't', optarg, &wo);
            if (rc) return rc;
            break;
        }
        default: return cli_usage_error("synth", "unknown option");
        }
    }
    if (optind < argc) return cli_usage_error("synth", "unexpected argument '%s'", argv[optind]);
    if (!out) return cli_usage_error("synth", "missing -o OUT.sfpack");
    if (!rows) return cli_usage_error("synth", "missing --rows N");
    if (nseries > rows) return cli_usage_error("synth", "--series %" PRIu64 " exceeds --rows %" PRIu64, nseries, rows);

    size_t nf = (size_t)features, batch = 4096;
    char **names = calloc(nf, sizeof *names);
    float *buf = malloc(batch * nf * sizeof(float));
    double *walk = calloc(nf, sizeof *walk), *scale = malloc(nf * sizeof *scale), *phase = malloc(nf * sizeof *phase);
    if (!names || !buf || !walk || !scale || !phase) return cli_fail("synth", &(sf_err){SF_ENOMEM, "out of memory"}, NULL);
    uint64_t rng = seed;
    for (size_t j = 0; j < nf; j++) {
        names[j] = malloc(24);
        if (names[j]) snprintf(names[j], 24, "f%zu", j);
        scale[j] = pow(10, (double)(sf_splitmix64(&rng) % 5) - 2);  // 0.01 .. 100
        phase[j] = (double)(sf_splitmix64(&rng) >> 11) * 0x1p-53 * 6.283185307179586;
    }
    wo.ncols = (uint32_t)nf;
    wo.col_names = (const char *const *)names;
    wo.series_column = nseries > 1 ? "series" : NULL;
    sf_err e = {0};
    sf_pack_writer *w;
    cli_progress prog;
    cli_progress_start(&prog);
    int rc = sf_pack_writer_open(&w, out, &wo, &e);
    if (!rc) cli_guard_temp(sf_pack_writer_temp_path(w));
    for (uint64_t s = 0; s < nseries && !rc; s++) {
        uint64_t first = rows * s / nseries, end = rows * (s + 1) / nseries;
        char name[32];
        int len = snprintf(name, sizeof name, "s%" PRIu64, s);
        if (nseries > 1 && (rc = sf_pack_writer_series(w, name, (size_t)len, &e))) break;
        for (size_t j = 0; j < nf; j++) walk[j] = 0;
        for (uint64_t r = first; r < end && !rc;) {
            size_t n = end - r < batch ? (size_t)(end - r) : batch;
            for (size_t i = 0; i < n; i++) {
                double t = (double)(r + i - first);
                for (size_t j = 0; j < nf; j++) {
                    walk[j] += (double)(sf_splitmix64(&rng) >> 11) * 0x1p-53 - 0.5;
                    double season = sin(t * 6.283185307179586 / 24 + phase[j]) + 0.5 * sin(t * 6.283185307179586 / 168);
                    buf[i * nf + j] = (float)(scale[j] * (walk[j] + 3 * season));
                }
            }
            rc = sf_pack_writer_rows(w, buf, n, &e);
            r += n;
            cli_progress_line(&prog, "synth: %" PRIu64 " of %" PRIu64 " rows", r, rows);
        }
    }
    if (!rc) {
        rc = sf_pack_writer_finish(w, &e);
    } else if (w) {
        sf_pack_writer_abort(w);
    }
    cli_guard_temp(NULL);
    cli_progress_end(&prog);
    for (size_t j = 0; j < nf; j++) free(names[j]);
    free(names);
    free(buf);
    free(walk);
    free(scale);
    free(phase);
    if (rc) return cli_fail("synth", &e, NULL);
    struct stat st;
    if (!quiet && stat(out, &st) == 0)
        printf("wrote %s: %" PRIu64 " rows x %zu features in %" PRIu64 " series (%.1f MB of float32 in %.1f MB)\n",
               out, rows, nf, nseries, (double)rows * (double)nf * 4 / 1e6, (double)st.st_size / 1e6);
    return EXIT_OK;
}
