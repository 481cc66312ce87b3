// seqfeed inspect and seqfeed verify: what an .sfpack file holds, and
// whether every byte of it is sound.
#include <inttypes.h>
#include <string.h>

#include "cli.h"

static const cli_use inspect_uses[] = {
    {.opt = OPT_DATA, .help = "the .sfpack file (or as the argument)"},
    {.opt = OPT_JSON, .help = "one JSON object, for programs (lists every series)"}, {.opt = OPT_ALL_SERIES, .help = "list every series and every source file, not the first 10"},
    {.opt = OPT_QUIET}, {.opt = OPT_HELP}, {.opt = OPT_COUNT}};

static const cli_command inspect_command = {
    .name = "inspect",
    .usage = "FILE.sfpack [--json] [--all-series]",
    .about =
        "Prints the format version, the columns with their statistics (min, max,\n"
        "mean, population std), how many values pack imputed (--missing ffill),\n"
        "the series, a summary of the chunks and the compression ratio. Reads only\n"
        "the header and the index: fast on any size.\n",
    .uses = inspect_uses,
    .positional = "FILE.sfpack",
};

static const cli_use verify_uses[] = {
    {.opt = OPT_DATA, .help = "the .sfpack file (or as the argument)"},
    {.opt = OPT_QUIET, .help = "no 'ok' line: the exit status says it"}, {.opt = OPT_HELP}, {.opt = OPT_COUNT}};

static const cli_command verify_command = {
    .name = "verify",
    .usage = "FILE.sfpack",
    .about =
        "Decodes every chunk, checks every checksum, size and offset, and recomputes\n"
        "the column statistics. Prints 'ok' and exits 0, or names the first\n"
        "problem (chunk and byte offset) and exits 1.\n",
    .uses = verify_uses,
    .positional = "FILE.sfpack",
};

typedef struct {
    uint64_t raw, stored, min, max;
} chunk_summary;

static chunk_summary summarize(const sf_pack *p) {
    const sf_pack_info *in = sf_pack_get_info(p);
    chunk_summary s = {0, 0, UINT64_MAX, 0};
    for (uint64_t i = 0; i < in->nchunks; i++) {
        sf_chunk c = sf_pack_chunk_locate(p, i);
        s.raw += (uint64_t)c.rows * in->ncols * 4;
        s.stored += c.stored_size;
        s.min = c.stored_size < s.min ? c.stored_size : s.min;
        s.max = c.stored_size > s.max ? c.stored_size : s.max;
    }
    return s;
}

static const char *time_kind_name(enum sf_time_kind k) {
    static const char *const names[] = {"none", "iso-8601", "epoch-s", "epoch-ms", "epoch-us", "epoch-ns"};
    return names[k];
}

static void print_json(const sf_pack *p) {
    const sf_pack_info *in = sf_pack_get_info(p);
    chunk_summary s = summarize(p);
    printf("{\"file\": ");
    sf_json_string(stdout, sf_pack_name(p));
    printf(", \"format_version\": %u, \"file_bytes\": %" PRIu64 ", \"rows\": %" PRIu64, in->version, in->file_size,
           in->nrows);
    printf(", \"filter\": \"%s\", \"zstd_level\": %d", sf_filter_name((int)in->filter), in->level);
    printf(", \"columns\": [");
    for (uint32_t c = 0; c < in->ncols; c++) {
        const sf_col_stats *st = &in->stats[c];
        printf("%s{\"name\": ", c ? ", " : "");
        sf_json_string(stdout, in->col_names[c]);
        const char *key[4] = {"min", "max", "mean", "std"};
        const double val[4] = {st->min, st->max, st->mean, st->std};
        for (int k = 0; k < 4; k++) {
            printf(", \"%s\": ", key[k]);
            sf_json_real(stdout, val[k]);
        }
        printf(", \"imputed\": %" PRIu64, in->imputed ? in->imputed[c] : 0);
        const sf_category *cat = sf_pack_category(in, c);
        if (cat) {
            printf(", \"categories\": [");  // the value of code i at [i]
            for (uint32_t v = 0; v < cat->nvalues; v++) {
                if (v) printf(", ");
                sf_json_string(stdout, cat->values[v]);
            }
            printf("]");
        }
        printf("}");
    }
    printf("], \"series_column\": ");
    if (in->series_column[0]) sf_json_string(stdout, in->series_column);
    else printf("null");
    bool timed = in->time_kind != SF_TIME_NONE;
    printf(", \"time\": ");
    if (timed) {
        printf("{\"column\": ");
        sf_json_string(stdout, in->time_column);
        printf(", \"kind\": \"%s\", \"step_seconds\": ", time_kind_name(in->time_kind));
        sf_json_real(stdout, (double)in->time_step * sf_pack_time_unit(in));
        printf(", \"gaps\": %" PRIu64 "}", in->time_gaps);
    } else {
        printf("null");
    }
    printf(", \"lines\": %s", in->has_lines ? "true" : "false");
    printf(", \"sources\": [");  // empty: one CSV, whose lines are plain line numbers
    for (uint32_t i = 0; i < in->nsources; i++) printf("%s", i ? ", " : ""), sf_json_string(stdout, in->sources[i]);
    printf("]");
    printf(", \"series\": [");
    for (uint64_t i = 0; i < in->nseries; i++) {
        printf("%s{\"name\": ", i ? ", " : "");
        sf_json_string(stdout, in->series[i].name);
        printf(", \"first_row\": %" PRIu64 ", \"rows\": %" PRIu64, in->series[i].first_row, in->series[i].rows);
        if (timed) {
            char a[48], b[48];
            sf_pack_time_text(in, in->series_times[2 * i], a, sizeof a);
            sf_pack_time_text(in, in->series_times[2 * i + 1], b, sizeof b);
            printf(", \"first_time\": \"%s\", \"last_time\": \"%s\"", a, b);
        }
        printf("}");
    }
    printf("], \"chunks\": {\"count\": %" PRIu64 ", \"rows_per_chunk\": %u, \"data_offset\": %" PRIu64
           ", \"raw_bytes\": %" PRIu64 ", \"stored_bytes\": %" PRIu64 ", \"min_stored\": %" PRIu64
           ", \"max_stored\": %" PRIu64 "}",
           in->nchunks, in->chunk_rows, in->data_offset, s.raw, s.stored, s.min, s.max);
    printf(", \"compression_ratio\": ");
    sf_json_real(stdout, (double)s.raw / (double)s.stored);
    printf(", \"file_ratio\": ");
    sf_json_real(stdout, (double)s.raw / (double)in->file_size);
    printf("}\n");
}

// Bytes s takes in the table: control characters written as \n, \t, \r
// or \xNN, so that a name or a series id cannot break a line of it.
static int esc_len(const char *s) { return (int)sf_escape_controls(NULL, 0, s, strlen(s)); }

// Writes s so, then spaces up to width.
static void put_esc(const char *s, int width) {
    char piece[8];
    for (const char *q = s; *q; q++) sf_escape_controls(piece, sizeof piece, q, 1), fputs(piece, stdout);
    for (int n = esc_len(s); n < width; n++) putchar(' ');
}

// A series id in the table: in quotes, as in CSV, when spaces begin or end
// it (or a quote begins it), so that "A " is not shown as the series A.
static void put_id(const char *s, int width) {
    size_t n = strlen(s);
    if (!n || (s[0] != ' ' && s[n - 1] != ' ' && s[0] != '"')) {
        put_esc(s, width);
        return;
    }
    int shown = 2;
    putchar('"');
    for (const char *q = s; *q; q++) {
        char one[2] = {*q, 0};
        if (*q == '"') putchar('"'), shown++;
        put_esc(one, 0);
        shown += esc_len(one);
    }
    putchar('"');
    for (; shown < width; shown++) putchar(' ');
}

static void print_text(const sf_pack *p, bool all_series) {
    const sf_pack_info *in = sf_pack_get_info(p);
    chunk_summary s = summarize(p);
    printf("file         %s (%" PRIu64 " bytes)\n", sf_pack_name(p), in->file_size);
    // Version 2 only when rows carry times or CSV lines or there are
    // categories (docs/FORMAT.md): synth's files, and the writer's without
    // them, stay version 1, which every reader reads.
    printf("format       sfpack version %u%s, filter %s, zstd level %d\n", in->version,
           in->version == 1 ? " (no times, CSV lines or categories; pack writes version 2 for those)" : "",
           sf_filter_name((int)in->filter), in->level);
    printf("rows         %" PRIu64 " in %" PRIu64 " series", in->nrows, in->nseries);
    if (in->series_column[0]) printf(" (series column \""), put_esc(in->series_column, 0), printf("\")");
    printf("\n");
    if (in->time_kind != SF_TIME_NONE) {
        char step[32] = "none";
        if (in->time_step) sf_duration_text((double)in->time_step * sf_pack_time_unit(in), step, sizeof step);
        printf("time         column \"");
        put_esc(in->time_column, 0);
        printf("\" (%s), typical step %s, %" PRIu64 " larger step(s) (gaps)\n", time_kind_name(in->time_kind), step,
               in->time_gaps);
    }
    if (in->has_lines) printf("lines        every row keeps its line in the CSV (or its row, from 1, in the Parquet file) it was packed from\n");
    if (in->nsources) {  // the files those lines are of
        uint32_t list = all_series || in->nsources <= 10 ? in->nsources : 10;
        printf("sources      %u files, read in this order (each row keeps its file and line)\n", in->nsources);
        for (uint32_t i = 0; i < list; i++) printf("  %8u  ", i + 1), put_esc(in->sources[i], 0), printf("\n");
        if (list < in->nsources) printf("  ... %u more (--all-series lists them all)\n", in->nsources - list);
    }
    printf("columns      %u\n", in->ncols);
    int w = 4;
    for (uint32_t c = 0; c < in->ncols; c++) {
        int len = esc_len(in->col_names[c]);
        w = len > w ? len : w;
    }
    printf("  %4s  %-*s  %14s %14s %14s %14s\n", "#", w, "name", "min", "max", "mean", "std");
    for (uint32_t c = 0; c < in->ncols; c++) {
        const sf_col_stats *st = &in->stats[c];
        const sf_category *cat = sf_pack_category(in, c);
        printf("  %4u  ", c + 1);
        put_esc(in->col_names[c], w);
        if (!cat) {
            printf("  %14.7g %14.7g %14.7g %14.7g\n", st->min, st->max, st->mean, st->std);
            continue;
        }
        char list[72] = "";  // as lists of names are spelled: a value with a comma quoted
        size_t len = 0;
        uint32_t v = 0;
        while (v < cat->nvalues && !sf_list_append(list, sizeof list, &len, cat->values[v])) v++;
        printf("  categorical, %u values: ", cat->nvalues);
        put_esc(list, 0);
        printf("%s\n", v < cat->nvalues ? " ... (--json lists them all)" : "");
    }
    uint64_t nimp = 0;
    for (uint32_t c = 0; in->imputed && c < in->ncols; c++) nimp += in->imputed[c];
    if (nimp) {
        printf("imputed      %" PRIu64 " value(s) filled in by pack --missing ffill, never scored as observed:", nimp);
        for (uint32_t c = 0, k = 0; c < in->ncols; c++)
            if (in->imputed[c]) printf("%s %s %" PRIu64, k++ ? "," : "", in->col_names[c], in->imputed[c]);
        printf("\n");
    }
    uint64_t shown = all_series || in->nseries <= 10 ? in->nseries : 10;
    printf("series       %" PRIu64 "\n", in->nseries);
    bool timed = in->time_kind != SF_TIME_NONE;
    printf("  %8s  %-20s %14s %14s%s\n", "#", "name", "first row", "rows", timed ? "  first time .. last time" : "");
    for (uint64_t i = 0; i < shown; i++) {
        printf("  %8" PRIu64 "  ", i + 1);
        if (in->series[i].name[0]) put_id(in->series[i].name, 20);
        else put_esc("(all rows)", 20);
        printf(" %14" PRIu64 " %14" PRIu64, in->series[i].first_row, in->series[i].rows);
        if (timed) {
            char a[48], b[48];
            sf_pack_time_text(in, in->series_times[2 * i], a, sizeof a);
            sf_pack_time_text(in, in->series_times[2 * i + 1], b, sizeof b);
            printf("  %s .. %s", a, b);
        }
        printf("\n");
    }
    if (shown < in->nseries) printf("  ... %" PRIu64 " more (--all-series lists them)\n", in->nseries - shown);
    printf("chunks       %" PRIu64 " of up to %u rows; stored %" PRIu64 " to %" PRIu64 " bytes, %.1f on average\n",
           in->nchunks, in->chunk_rows, s.min, s.max, (double)s.stored / (double)in->nchunks);
    printf("compression  %" PRIu64 " bytes of float32 -> %" PRIu64 " bytes in chunks (%.2fx), %.2fx for the file\n",
           s.raw, s.stored, (double)s.raw / (double)s.stored, (double)s.raw / (double)in->file_size);
}

// Parses c's options and opens its data file: 0, -1 after --help, or an exit code.
static int open_one(const cli_command *c, int argc, char **argv, cli_args *a, sf_pack **p) {
    int rc = cli_parse(c, argc, argv, a);
    if (rc) return rc;
    const char *path = cli_data(c, a, &rc);
    if (!path) return rc;
    sf_err e = {0};
    if (sf_pack_open(p, path, &e)) return cli_fail(c->name, &e, NULL);
    return 0;
}

int cmd_inspect(int argc, char **argv) {
    cli_args a;
    sf_pack *p;
    int rc = open_one(&inspect_command, argc, argv, &a, &p);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    if (a.v[OPT_JSON].set) print_json(p);
    else print_text(p, a.v[OPT_ALL_SERIES].set);
    sf_pack_close(p);
    return EXIT_OK;
}

static void on_chunk(void *arg, uint64_t chunk) {
    cli_progress *prog = arg;
    cli_progress_line(prog, "verifying: chunk %llu", (unsigned long long)chunk + 1);
}

int cmd_verify(int argc, char **argv) {
    cli_args a;
    sf_pack *p;
    int rc = open_one(&verify_command, argc, argv, &a, &p);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    cli_progress prog;
    cli_progress_start(&prog, a.v[OPT_QUIET].set);
    sf_err e = {0};
    rc = sf_pack_verify(p, on_chunk, &prog, &e);
    cli_progress_end(&prog);
    const sf_pack_info *in = sf_pack_get_info(p);
    if (!rc && !a.v[OPT_QUIET].set)
        printf("%s: ok (%" PRIu64 " rows, %u columns, %" PRIu64 " chunks, checksums and statistics match)\n",
               sf_pack_name(p), in->nrows, in->ncols, in->nchunks);
    sf_pack_close(p);
    return rc ? cli_fail("verify", &e, NULL) : EXIT_OK;
}
