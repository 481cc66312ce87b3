// seqfeed synth: synthetic .sfpack files for tests and benchmarks.
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static const cli_use synth_uses[] = {
    {.opt = OPT_OUTPUT, .help = "the .sfpack file to write (required)"},
    {.opt = OPT_ROWS, .help = "rows in all (required)"}, {.opt = OPT_FEATURE_COUNT, .def = "4"},
    {.opt = OPT_SERIES_COUNT, .def = "1"}, {.opt = OPT_SEED, .def = "1", .help = "the random numbers"},
    {.opt = OPT_LEVEL}, {.opt = OPT_CHUNK_ROWS},
    {.opt = OPT_THREADS, .help = "threads that compress the chunks (default: all cores)"}, {.opt = OPT_QUIET}, {.opt = OPT_HELP},
    {.opt = OPT_COUNT}};

static const cli_command synth_command = {
    .name = "synth",
    .usage = "-o OUT.sfpack --rows N [options]",
    .about =
        "Writes a synthetic .sfpack for tests and benchmarks: every feature is a\n"
        "random walk plus a daily and a weekly seasonal wave, with its own scale,\n"
        "split into series of equal length. Deterministic for a seed. Streams:\n"
        "memory does not grow with --rows.\n",
    .uses = synth_uses,
};

int cmd_synth(int argc, char **argv) {
    cli_args a;
    int rc = cli_parse(&synth_command, argc, argv, &a);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    const cli_value *v = a.v;
    if (!v[OPT_OUTPUT].set) return cli_usage_error("synth", "missing -o OUT.sfpack");
    if (!v[OPT_ROWS].set) return cli_usage_error("synth", "missing --rows N");
    const char *out = v[OPT_OUTPUT].text;
    uint64_t rows = v[OPT_ROWS].u, features = v[OPT_FEATURE_COUNT].set ? v[OPT_FEATURE_COUNT].u : 4;
    uint64_t nseries = v[OPT_SERIES_COUNT].set ? v[OPT_SERIES_COUNT].u : 1, seed = v[OPT_SEED].set ? v[OPT_SEED].u : 1;
    bool quiet = v[OPT_QUIET].set;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    sf_pack_writer_opts wo = {.level = SF_PACK_DEFAULT_LEVEL, .filter = SF_FILTER_DELTA_SHUFFLE,
                              .threads = ncpu > 0 ? (int)ncpu : 1};
    cli_apply_writer(&a, &wo);
    if (nseries > rows)
        return cli_usage_error("synth", "--series-count %" PRIu64 " exceeds --rows %" PRIu64, nseries, rows);

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
    cli_progress_start(&prog, quiet);
    cli_guard_temp(NULL);  // the handlers in place before the temporary file exists
    rc = sf_pack_writer_open(&w, out, &wo, &e);
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
    bool to_stdout = !strcmp(out, "-");  // then stdout holds the .sfpack
    if (!quiet && (to_stdout ? fstat(STDOUT_FILENO, &st) : stat(out, &st)) == 0)
        fprintf(to_stdout ? stderr : stdout, "wrote %s: %" PRIu64 " rows x %zu features in %" PRIu64 " series (%.1f MB of float32 in %.1f MB)\n",
               to_stdout ? "stdout" : out, rows, nf, nseries, (double)rows * (double)nf * 4 / 1e6, (double)st.st_size / 1e6);
    return EXIT_OK;
}
