// seqfeed pack: CSV files into an .sfpack file (pack/csv.c, pack/sources.c).
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static const cli_use pack_uses[] = {
    {.opt = OPT_DATA, .help = "the CSV file, a directory (its *.csv files) or a quoted glob ('logs/*.csv'), '-' for "
                              "stdin; or the inputs as arguments, several files read in the order given"},
    {.opt = OPT_OUTPUT, .help = "the .sfpack file to write (required without --append-to); it appears only when "
                                "packing succeeded"},
    {.opt = OPT_COLUMNS}, {.opt = OPT_DROP_COLUMNS}, {.opt = OPT_SERIES_COLUMN}, {.opt = OPT_SERIES_PER_FILE},
    {.opt = OPT_TIME_COLUMN},
    {.opt = OPT_TIME_UNIT}, {.opt = OPT_CATEGORICAL}, {.opt = OPT_DELIMITER},
    {.opt = OPT_MISSING},
    {.opt = OPT_MEMORY_BUDGET, .def = "64", .group = "packing",
     .help = "memory for the rows of series whose rows interleave (a series that comes back after another "
             "started): they are held, sorted by series in runs spilled to temporary files beside the output, and "
             "merged; at least 0.25"},
    {.opt = OPT_LEVEL}, {.opt = OPT_CHUNK_ROWS}, {.opt = OPT_FILTER}, {.opt = OPT_THREADS},
    {.opt = OPT_APPEND_TO}, {.opt = OPT_QUIET}, {.opt = OPT_HELP}, {.opt = OPT_COUNT}};

static const cli_command pack_command = {
    .name = "pack",
    .usage = "INPUT.csv... -o OUT.sfpack [options]\n       seqfeed pack NEW.csv --append-to FILE.sfpack [options]",
    .about =
        "Converts a CSV file (a header row of column names, then numbers) into an\n"
        ".sfpack file: float32 values in zstd-compressed, checksummed chunks, with\n"
        "per-column statistics and a series table. It streams: memory stays bounded\n"
        "whatever the size of the CSV. The rows of a series need not be contiguous:\n"
        "series whose rows interleave (a row per site per hour) are regrouped, each\n"
        "series' rows in the order of the file, within --memory-budget.\n"
        "\n"
        "Several inputs (files, a directory's *.csv files, a quoted glob; a\n"
        "directory's or a glob's names sorted) are read one after the other as one\n"
        "table: every file has the same header. Each row keeps its file and line,\n"
        "which predict writes beside its forecast.\n"
        "\n"
        "With --append-to, the CSV's rows are added to an .sfpack of the same columns:\n"
        "a series' new rows after its last one (their times must not go back), new\n"
        "series last. The file keeps its layout (series and time column, categorical\n"
        "columns, chunk rows, filter, level: options that differ are refused); it is\n"
        "rewritten beside itself and replaced only once complete.\n",
    .uses = pack_uses,
    .positional = "INPUT.csv",
    .positional_many = true,
};

static void on_temp(void *arg, const char *path) {
    (void)arg;
    cli_guard_temp(path);
}

static void on_note(void *arg, const char *text) {
    (void)arg;
    fprintf(stderr, "seqfeed pack: %s\n", text);
}

static int on_progress(void *arg, uint64_t rows, uint64_t bytes) {
    cli_progress *p = arg;
    double dt = sf_now() - p->start;
    cli_progress_line(p, "packing: %llu rows, %.1f MB read, %.0f MB/s", (unsigned long long)rows, bytes / 1e6,
                      dt > 0 ? bytes / 1e6 / dt : 0.0);
    return 0;
}

// --append-to: the options that decide the file's layout must be the file's.
static int append_conflicts(const cli_value *v, const char *path) {
    sf_pack *p;
    sf_err e = {0};
    if (sf_pack_open(&p, path, &e)) return cli_fail("pack", &e, NULL);
    const sf_pack_info *in = sf_pack_get_info(p);
    char what[160] = "", have[SF_PACK_MAX_NAME + 64] = "";
    if (v[OPT_CHUNK_ROWS].set && v[OPT_CHUNK_ROWS].u != in->chunk_rows)
        snprintf(what, sizeof what, "--chunk-rows %s", v[OPT_CHUNK_ROWS].text),
            snprintf(have, sizeof have, "chunks of %u rows", in->chunk_rows);
    else if (v[OPT_FILTER].set && sf_filter_parse(v[OPT_FILTER].text) != (int)in->filter)
        snprintf(what, sizeof what, "--filter %s", v[OPT_FILTER].text),
            snprintf(have, sizeof have, "filter %s", sf_filter_name((int)in->filter));
    else if (v[OPT_LEVEL].set && v[OPT_LEVEL].i != in->level)
        snprintf(what, sizeof what, "--level %s", v[OPT_LEVEL].text), snprintf(have, sizeof have, "level %d", in->level);
    else if (v[OPT_SERIES_COLUMN].set &&
             strcmp(strcmp(v[OPT_SERIES_COLUMN].text, "none") ? v[OPT_SERIES_COLUMN].text : "", in->series_column))
        snprintf(what, sizeof what, "--series-column %.100s", v[OPT_SERIES_COLUMN].text),
            snprintf(have, sizeof have, in->series_column[0] ? "series column \"%.200s\"" : "no series column%s",
                     in->series_column);
    else if (v[OPT_TIME_COLUMN].set && strcmp(strcmp(v[OPT_TIME_COLUMN].text, "none") ? v[OPT_TIME_COLUMN].text : "",
                                              in->time_column))
        snprintf(what, sizeof what, "--time-column %.100s", v[OPT_TIME_COLUMN].text),
            snprintf(have, sizeof have, in->time_column[0] ? "time column \"%.200s\"" : "no time column%s",
                     in->time_column);
    else if (v[OPT_TIME_UNIT].set && in->time_kind != (enum sf_time_kind)(SF_TIME_EPOCH_S + v[OPT_TIME_UNIT].choice))
        snprintf(what, sizeof what, "--time-unit %s", v[OPT_TIME_UNIT].text),
            snprintf(have, sizeof have, "%s", in->time_kind == SF_TIME_ISO ? "ISO-8601 times" : "times in another unit");
    if (!what[0] && v[OPT_CATEGORICAL].set) {
        // The same set of columns, in any order.
        char name[SF_PACK_MAX_NAME + 1];
        uint32_t n = 0;
        bool differs = false;
        for (const char *q = v[OPT_CATEGORICAL].text; q && !differs; n++) {
            if (sf_list_next(&q, name, sizeof name)) break;
            uint32_t c = 0;
            while (c < in->ncols && strcmp(in->col_names[c], name)) c++;
            differs = c == in->ncols || !sf_pack_category(in, c);
        }
        if (differs || n != in->ncategories) {
            snprintf(what, sizeof what, "--categorical %.100s", v[OPT_CATEGORICAL].text);
            char list[sizeof have - 32] = "";
            size_t len = 0;
            for (uint32_t k = 0; k < in->ncategories; k++)
                sf_list_append(list, sizeof list, &len, in->col_names[in->categories[k].column]);
            snprintf(have, sizeof have, in->ncategories ? "categorical columns %s" : "no categorical column%s", list);
        }
    }
    sf_pack_close(p);
    if (what[0])
        return cli_usage_error("pack", "%s differs from %s, which has %s: an appended file keeps its layout (leave "
                               "the option out)", what, path, have);
    return 0;
}

int cmd_pack(int argc, char **argv) {
    cli_args a;
    int rc = cli_parse(&pack_command, argc, argv, &a);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    const char *in = cli_data(&pack_command, &a, &rc);
    if (!in) return rc;
    const cli_value *v = a.v;
    const char *append = v[OPT_APPEND_TO].set ? v[OPT_APPEND_TO].text : NULL;
    if (append && v[OPT_OUTPUT].set)
        return cli_usage_error("pack", "-o and --append-to exclude each other: --append-to %s replaces that file", append);
    if (!append && !v[OPT_OUTPUT].set) return cli_usage_error("pack", "missing -o OUT.sfpack (or --append-to FILE.sfpack)");
    if (append && (rc = append_conflicts(v, append))) return rc;
    const char *out = append ? append : v[OPT_OUTPUT].text;
    if (v[OPT_SERIES_PER_FILE].set && v[OPT_SERIES_COLUMN].set)
        return cli_usage_error("pack", "--series-per-file and --series-column exclude each other: a series is a "
                               "file, or the rows of one value of the column");
    bool quiet = v[OPT_QUIET].set;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    sf_csv_pack_opts o = {.missing = SF_MISSING_ERROR,
                          .pack = {.level = SF_PACK_DEFAULT_LEVEL,
                                   .filter = SF_FILTER_DELTA_SHUFFLE,
                                   .threads = ncpu > 0 ? (int)ncpu : 1}};
    cli_apply_writer(&a, &o.pack);
    if (v[OPT_COLUMNS].set) o.columns = v[OPT_COLUMNS].text;
    if (v[OPT_DROP_COLUMNS].set) o.drop_columns = v[OPT_DROP_COLUMNS].text;
    if (v[OPT_SERIES_COLUMN].set) o.series_column = strcmp(v[OPT_SERIES_COLUMN].text, "none") ? v[OPT_SERIES_COLUMN].text : "";
    if (v[OPT_TIME_COLUMN].set) o.time_column = strcmp(v[OPT_TIME_COLUMN].text, "none") ? v[OPT_TIME_COLUMN].text : "";
    if (v[OPT_CATEGORICAL].set) o.categorical = v[OPT_CATEGORICAL].text;
    if (v[OPT_TIME_UNIT].set) {
        if (!o.time_column || !o.time_column[0])
            return cli_usage_error("pack", "--time-unit needs --time-column NAME: integers are never taken for times "
                                   "unless a column is named");
        o.time_unit = (enum sf_time_kind)(SF_TIME_EPOCH_S + v[OPT_TIME_UNIT].choice);
    }
    if (v[OPT_MISSING].set) o.missing = (enum sf_missing)v[OPT_MISSING].choice;
    if (v[OPT_MEMORY_BUDGET].set) o.memory_budget = (uint64_t)(v[OPT_MEMORY_BUDGET].real * 1e6);
    if (v[OPT_FILTER].set) o.pack.filter = (enum sf_filter)sf_filter_parse(v[OPT_FILTER].text);  // a choice: known
    if (v[OPT_DELIMITER].set) {
        const char *d = v[OPT_DELIMITER].text;
        if (!strcmp(d, "tab") || !strcmp(d, "\\t")) o.delimiter = '\t';
        else if (strlen(d) == 1 && sf_csv_delimiter_ok(d[0])) o.delimiter = d[0];
        else return cli_usage_error("pack", "--delimiter %s: expected 'tab' or one character that is not part of a "
                                    "number, a space or a quote", d);
    }
    if (o.columns && o.drop_columns) return cli_usage_error("pack", "--columns and --drop-columns exclude each other");
    // --data is one input; arguments may be several.
    const char *const *args = v[OPT_DATA].set ? &in : a.positionals;
    size_t nargs = v[OPT_DATA].set ? 1 : (size_t)a.npositional;
    char **paths = NULL;
    size_t npaths = 0;
    sf_err e = {0};
    if (sf_csv_inputs(args, nargs, &paths, &npaths, &e)) return cli_fail("pack", &e, NULL);
    if (v[OPT_SERIES_PER_FILE].set && !strcmp(paths[0], "-")) {
        sf_csv_inputs_free(paths, npaths);
        return cli_usage_error("pack", "--series-per-file names each series after its file: stdin has no name");
    }
    // The output must not be one of the inputs: renamed over it, it would destroy it
    // (--append-to: sf_csv_append says so, stdin too).
    struct stat so, si;
    for (size_t i = 0; !append && i < npaths && stat(out, &so) == 0 && S_ISREG(so.st_mode); i++)
        if (stat(paths[i], &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
            int u = cli_usage_error("pack", "-o %s is the input %s: packing would destroy it; write to another file",
                                    out, paths[i]);
            sf_csv_inputs_free(paths, npaths);
            return u;
        }
    // One file given as it is packs as ever (no source table, plain lines).
    bool several = nargs > 1 || npaths > 1 || strcmp(paths[0], args[0]) || v[OPT_SERIES_PER_FILE].set;
    if (append && several) {
        sf_csv_inputs_free(paths, npaths);
        return cli_usage_error("pack", "--append-to adds one CSV file at a time (not several, a directory, a glob or "
                               "--series-per-file): append them one after the other");
    }
    cli_progress prog;
    cli_progress_start(&prog, quiet);
    o.progress = on_progress;
    o.progress_arg = &prog;
    o.temp_path = on_temp;
    cli_guard_temp(NULL);  // the handlers in place before the output's temporary file exists
    o.note = on_note;  // also with -q: they say what happened to the data
    o.series_per_file = v[OPT_SERIES_PER_FILE].set;
    sf_csv_pack_stats st = {0};
    rc = append      ? sf_csv_append(paths[0], out, &o, &st, &e)
         : several ? sf_csv_pack_files((const char *const *)paths, npaths, out, &o, &st, &e)
                   : sf_csv_pack(paths[0], out, &o, &st, &e);
    sf_csv_inputs_free(paths, npaths);
    cli_guard_temp(NULL);
    cli_progress_end(&prog);
    if (rc) return cli_fail("pack", &e, NULL);
    if (!quiet && append) {
        double dt = sf_now() - prog.start;
        printf("appended %llu rows (%llu series added to, %llu new", (unsigned long long)st.rows,
               (unsigned long long)st.append_series_extended, (unsigned long long)st.append_series_added);
        if (st.rows_dropped) printf(", %llu rows dropped", (unsigned long long)st.rows_dropped);
        if (st.values_filled) printf(", %llu values filled", (unsigned long long)st.values_filled);
        printf(") from %.1f MB of CSV to %s: now %llu rows, %llu series, %.1f MB; kept %llu of %llu chunks as "
               "stored (%.1f MB, %s), in %.2f s\n", st.csv_bytes / 1e6, out,
               (unsigned long long)(st.append_rows_before + st.rows),
               (unsigned long long)(st.append_series_before + st.append_series_added), st.out_bytes / 1e6,
               (unsigned long long)st.append_chunks_kept, (unsigned long long)st.append_chunks,
               st.append_bytes_kept / 1e6, st.append_copy ? st.append_copy : "none", dt);
    } else if (!quiet) {
        FILE *say = strcmp(out, "-") ? stdout : stderr;  // stdout may hold the .sfpack
        double dt = sf_now() - prog.start;
        fprintf(say, "packed %llu rows (%llu series", (unsigned long long)st.rows, (unsigned long long)st.nseries);
        if (st.rows_dropped) fprintf(say, ", %llu rows dropped", (unsigned long long)st.rows_dropped);
        if (st.values_filled) fprintf(say, ", %llu values filled", (unsigned long long)st.values_filled);
        if (several) fprintf(say, ", %zu files", npaths);
        fprintf(say, ") from %.1f MB of CSV into %s, %.1f MB, in %.2f s (%.0f MB/s)\n", st.csv_bytes / 1e6, out,
               st.out_bytes / 1e6, dt, dt > 0 ? st.csv_bytes / 1e6 / dt : 0.0);
    }
    return EXIT_OK;
}
