#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "pack/pack.h"

static const char help[] =
    "usage: seqfeed pack INPUT.csv -o OUT.sfpack [options]\n"
    "\n"
    "Converts a CSV file (a header row of column names, then numbers) into an\n"
    ".sfpack file: float32 values in zstd-compressed, checksummed chunks, with\n"
    "per-column statistics and a series table. INPUT may be '-' for stdin.\n"
    "OUT appears only when packing succeeded.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE         the .sfpack file to write (required)\n"
    "      --columns a,b,c       keep only these columns, in this order\n"
    "      --drop-columns x,y    leave these columns out\n"
    "      --series-column NAME  rows with the same value of NAME form one series\n"
    "                            (rows of a series must be contiguous); NAME is\n"
    "                            not stored as a feature\n"
    "      --delimiter C         ',', ';', 'tab' or any single character\n"
    "                            (default: detected from the header)\n"
    "      --missing MODE        what to do with empty, NA, NaN or inf values:\n"
    "                            error (default), drop (the row), ffill (repeat\n"
    "                            the series' previous value)\n"
    "      --level N             zstd level (default 1; see docs/FORMAT.md)\n"
    "      --chunk-rows N        rows per chunk (default: 1 MiB of float32)\n"
    "      --filter NAME         delta-shuffle (default), shuffle or none\n"
    "      --threads N           compression threads (default: all cores)\n"
    "  -q, --quiet               no summary line\n"
    "  -h, --help                this text\n";

static void on_temp(void *arg, const char *path) {
    (void)arg;
    cli_guard_temp(path);
}

static void on_progress(void *arg, uint64_t rows, uint64_t bytes) {
    cli_progress *p = arg;
    double dt = sf_now() - p->start;
    cli_progress_line(p, "packing: %llu rows, %.1f MB read, %.0f MB/s", (unsigned long long)rows, bytes / 1e6,
                      dt > 0 ? bytes / 1e6 / dt : 0.0);
}

int cmd_pack(int argc, char **argv) {
    enum { O_COLUMNS = 256, O_DROP, O_SERIES, O_DELIM, O_MISSING, O_LEVEL, O_CHUNK, O_FILTER, O_THREADS };
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'},      {"columns", required_argument, 0, O_COLUMNS},
        {"drop-columns", required_argument, 0, O_DROP}, {"series-column", required_argument, 0, O_SERIES},
        {"delimiter", required_argument, 0, O_DELIM}, {"missing", required_argument, 0, O_MISSING},
        {"level", required_argument, 0, O_LEVEL},   {"chunk-rows", required_argument, 0, O_CHUNK},
        {"filter", required_argument, 0, O_FILTER}, {"threads", required_argument, 0, O_THREADS},
        {"quiet", no_argument, 0, 'q'},             {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *out = NULL;
    bool quiet = false;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    sf_csv_pack_opts o = {.missing = SF_MISSING_ERROR,
                          .pack = {.level = SF_PACK_DEFAULT_LEVEL,
                                   .filter = SF_FILTER_DELTA_SHUFFLE,
                                   .threads = ncpu > 0 ? (int)ncpu : 1}};
    int ch;
    while ((ch = getopt_long(argc, argv, "o:qh", opts, NULL)) != -1) {
        switch (ch) {
        case 'o': out = optarg; break;
        case 'q': quiet = true; break;
        case 'h': fputs(help, stdout); return EXIT_OK;
        case O_COLUMNS: o.columns = optarg; break;
        case O_DROP: o.drop_columns = optarg; break;
        case O_SERIES: o.series_column = optarg; break;
        case O_DELIM:
            if (!strcmp(optarg, "tab") || !strcmp(optarg, "\\t")) o.delimiter = '\t';
            else if (strlen(optarg) == 1 && sf_csv_delimiter_ok(optarg[0]))
                o.delimiter = optarg[0];
            else return cli_usage_error("pack", "--delimiter wants 'tab' or one character that is not part of a number, a space or a quote, not '%s'", optarg);
            break;
        case O_MISSING:
            if (!strcmp(optarg, "error")) o.missing = SF_MISSING_ERROR;
            else if (!strcmp(optarg, "drop")) o.missing = SF_MISSING_DROP;
            else if (!strcmp(optarg, "ffill")) o.missing = SF_MISSING_FFILL;
            else return cli_usage_error("pack", "--missing wants error, drop or ffill, not '%s'", optarg);
            break;
        case O_LEVEL:
        case O_CHUNK:
        case O_THREADS: {
            int rc = cli_writer_option("pack", ch == O_LEVEL ? 'l' : ch == O_CHUNK ? 'c' : 't', optarg, &o.pack);
            if (rc) return rc;
            break;
        }
        case O_FILTER:
            if ((o.pack.filter = sf_filter_parse(optarg)) < 0)
                return cli_usage_error("pack", "--filter wants delta-shuffle, shuffle or none, not '%s'", optarg);
            break;
        default: return cli_usage_error("pack", "unknown option");
        }
    }
    if (optind >= argc) return cli_usage_error("pack", "missing INPUT.csv");
    if (optind + 1 < argc) return cli_usage_error("pack", "unexpected argument '%s'", argv[optind + 1]);
    if (!out) return cli_usage_error("pack", "missing -o OUT.sfpack");
    if (o.columns && o.drop_columns) return cli_usage_error("pack", "--columns and --drop-columns exclude each other");
    const char *in = argv[optind];

    cli_progress prog;
    cli_progress_start(&prog);
    o.progress = on_progress;
    o.progress_arg = &prog;
    o.temp_path = on_temp;
    sf_csv_pack_stats st = {0};
    sf_err e = {0};
    int rc = sf_csv_pack(in, out, &o, &st, &e);
    cli_guard_temp(NULL);
    cli_progress_end(&prog);
    if (rc) return cli_fail("pack", &e, NULL);
    if (!quiet) {
        double dt = sf_now() - prog.start;
        printf("packed %llu rows (%llu series", (unsigned long long)st.rows, (unsigned long long)st.nseries);
        if (st.rows_dropped) printf(", %llu rows dropped", (unsigned long long)st.rows_dropped);
        if (st.values_filled) printf(", %llu values filled", (unsigned long long)st.values_filled);
        printf(") from %.1f MB of CSV into %s, %.1f MB, in %.2f s (%.0f MB/s)\n", st.csv_bytes / 1e6, out,
               st.out_bytes / 1e6, dt, dt > 0 ? st.csv_bytes / 1e6 / dt : 0.0);
    }
    return EXIT_OK;
}
