// seqfeed unpack: an .sfpack file back into CSV.
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const cli_use unpack_uses[] = {
    {.opt = OPT_DATA, .help = "the .sfpack file (or as the argument)"},
    {.opt = OPT_OUTPUT, .help = "the CSV file to write (required), '-' for stdout; a file appears only when complete"},
    {.opt = OPT_QUIET}, {.opt = OPT_HELP}, {.opt = OPT_COUNT}};

static const cli_command unpack_command = {
    .name = "unpack",
    .usage = "FILE.sfpack -o OUT.csv",
    .about =
        "Writes the packed rows back as CSV: a header row with the column names\n"
        "(the series column first, when the file has one), then one row per packed\n"
        "row. Each value is the shortest decimal that reads back to the identical\n"
        "float32. A value pack imputed (--missing ffill) is written empty, as the\n"
        "CSV had it, so that it never comes back as an observed value.\n",
    .uses = unpack_uses,
    .positional = "FILE.sfpack",
};

static int write_csv(const sf_pack *p, FILE *f, bool quiet, sf_err *e) {
    const sf_pack_info *in = sf_pack_get_info(p);
    bool series = in->series_column[0] != 0, timed = in->time_kind != SF_TIME_NONE;
    if (series) {
        cli_csv_field(f, in->series_column);
        fputc(',', f);
    }
    if (timed) {
        cli_csv_field(f, in->time_column);
        fputc(',', f);
    }
    for (uint32_t c = 0; c < in->ncols; c++) {
        if (c) fputc(',', f);
        cli_csv_field(f, in->col_names[c]);
    }
    fputc('\n', f);
    void *stored = malloc(sf_pack_max_stored_size(p));
    size_t rows = in->chunk_rows < in->nrows ? in->chunk_rows : (size_t)in->nrows;
    float *vals = malloc(rows * in->ncols * 4);
    int64_t *time = timed ? malloc(rows * 8) : NULL;
    uint8_t *imp = in->imputed ? malloc(rows * in->ncols) : NULL;
    const sf_category **cats = calloc(in->ncols, sizeof *cats);
    sf_pack_dctx *d = sf_pack_dctx_create();
    int rc = 0;
    if (!stored || !vals || !d || (timed && !time) || !cats || (in->imputed && !imp))
        rc = sf_err_set(e, SF_ENOMEM, "out of memory");
    for (uint32_t c = 0; cats && c < in->ncols; c++) cats[c] = sf_pack_category(in, c);
    uint64_t s = 0;
    cli_progress prog;
    cli_progress_start(&prog, quiet);
    for (uint64_t i = 0; i < in->nchunks && !rc; i++) {
        if ((rc = sf_pack_chunk_read(p, i, stored, e)) ||
            (rc = sf_pack_chunk_decode_imputed(d, p, i, stored, vals, time, NULL, imp, e)))
            break;
        sf_chunk ch = sf_pack_chunk_locate(p, i);
        for (uint32_t r = 0; r < ch.rows; r++) {
            uint64_t row = ch.first_row + r;
            while (row >= in->series[s].first_row + in->series[s].rows) s++;
            if (series) {
                cli_csv_field(f, in->series[s].name);
                fputc(',', f);
            }
            if (timed) {
                char t[48];
                fwrite(t, 1, (size_t)sf_pack_time_text(in, time[r], t, sizeof t), f);
                fputc(',', f);
            }
            for (uint32_t c = 0; c < in->ncols; c++) {
                float v = vals[(size_t)c * ch.rows + r];
                if (c) fputc(',', f);
                if (imp && imp[(size_t)c * ch.rows + r]) continue;  // missing in the CSV: empty again
                if (cats[c] && !(v >= 0 && v < (float)cats[c]->nvalues && v == (float)(uint32_t)v)) {
                    rc = sf_err_set(e, SF_EFORMAT, "%s: chunk %" PRIu64 ": row %" PRIu64 " of categorical column "
                                    "\"%s\" holds %g, not a code of its %u values (see 'seqfeed verify')",
                                    sf_pack_name(p), i, row, in->col_names[c], v, cats[c]->nvalues);
                    break;
                }
                if (cats[c]) {
                    cli_csv_field(f, cats[c]->values[(uint32_t)v]);
                    continue;
                }
                char num[32];
                int len = sf_format_float(num, v);
                fwrite(num, 1, (size_t)len, f);
            }
            if (rc) break;
            fputc('\n', f);
        }
        cli_progress_line(&prog, "unpacking: %" PRIu64 " of %" PRIu64 " rows", ch.first_row + ch.rows, in->nrows);
    }
    cli_progress_end(&prog);
    free(stored);
    free(vals);
    free(time);
    free(imp);
    free(cats);
    sf_pack_dctx_free(d);
    return rc;
}

int cmd_unpack(int argc, char **argv) {
    cli_args a;
    int rc = cli_parse(&unpack_command, argc, argv, &a);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    const char *data = cli_data(&unpack_command, &a, &rc);
    if (!data) return rc;
    if (!a.v[OPT_OUTPUT].set) return cli_usage_error("unpack", "missing -o OUT.csv");
    const char *out = a.v[OPT_OUTPUT].text;
    bool quiet = a.v[OPT_QUIET].set;
    sf_err e = {0};
    sf_pack *p;
    if (sf_pack_open(&p, data, &e)) return cli_fail("unpack", &e, NULL);

    if (!strcmp(out, "-")) {
        rc = write_csv(p, stdout, quiet, &e);
        if (!rc && (fflush(stdout) != 0 || ferror(stdout))) rc = sf_err_errno(&e, SF_EIO, errno, "<stdout>: write failed");
        sf_pack_close(p);
        return rc ? cli_fail("unpack", &e, NULL) : EXIT_OK;
    }
    sf_temp_file file;
    rc = sf_temp_fopen(&file, out, &e);
    if (!rc) {
        cli_guard_temp(file.tmp);
        static char big[1 << 20];
        setvbuf(file.f, big, _IOFBF, sizeof big);
        rc = write_csv(p, file.f, quiet, &e);
        int crc = sf_temp_fclose(&file, rc == 0, rc ? NULL : &e);
        if (!rc) rc = crc;
        cli_guard_temp(NULL);
    }
    sf_pack_close(p);
    return rc ? cli_fail("unpack", &e, NULL) : EXIT_OK;
}
