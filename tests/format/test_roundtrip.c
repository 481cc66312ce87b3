// Packing and unpacking lose nothing: every float32 comes back bit for bit,
// the series table and statistics describe the data, packing is
// deterministic (threads change nothing in the file), `seqfeed unpack` output
// packs back to the same file, and the writer API keeps its promises about
// empty series, empty files and aborted writes.
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pack/pack.h"
#include "tests/common.h"
#include "tests/format/packutil.h"

static uint64_t rng_state = 0x20261130ull;

static uint64_t rng(void) { return sf_splitmix64(&rng_state); }

static double uniform(void) { return (double)(rng() >> 11) * 0x1p-53 - 0.5; }

#define MAX_SERIES 8

// What a packed file must hold.
typedef struct {
    uint32_t ncols;
    const char *col_names[8];
    const char *series_column;  // "" when none
    uint64_t nrows;
    float *v;  // row-major
    uint64_t nseries;
    const char *series[MAX_SERIES];
    uint64_t first[MAX_SERIES], rows[MAX_SERIES];
} expect;

static bool close_rel(double got, long double want) {
    return fabsl((long double)got - want) <= 1e-12L * fabsl(want);
}

// min and max exactly; mean and population std against a long double
// two-pass computation, which has no cancellation to speak of.
static void check_stats(const char *label, const sf_pack_info *in, const expect *x) {
    for (uint32_t c = 0; c < x->ncols; c++) {
        long double sum = 0, sq = 0;
        float mn = x->v[c], mx = x->v[c];
        for (uint64_t r = 0; r < x->nrows; r++) {
            float v = x->v[r * x->ncols + c];
            sum += v;
            mn = v < mn ? v : mn;
            mx = v > mx ? v : mx;
        }
        long double mean = sum / (long double)x->nrows;
        for (uint64_t r = 0; r < x->nrows; r++) {
            long double d = (long double)x->v[r * x->ncols + c] - mean;
            sq += d * d;
        }
        long double sd = sqrtl(sq / (long double)x->nrows);
        const sf_col_stats *s = &in->stats[c];
        CHECK(s->min == mn && s->max == mx, "%s: column %u: min/max %.9g/%.9g, expected %.9g/%.9g", label, c, s->min,
              s->max, (double)mn, (double)mx);
        CHECK(close_rel(s->mean, mean) && close_rel(s->std, sd),
              "%s: column %u: mean/std %.17g/%.17g, expected %.17Lg/%.17Lg", label, c, s->mean, s->std, mean, sd);
    }
}

// Opens path and checks everything in it against x: layout, series table,
// every value, the statistics, and sf_pack_verify.
static void check_pack(const char *label, const char *path, const expect *x, uint32_t chunk_rows, int filter,
                       int level) {
    sf_err e = {0};
    sf_pack *p;
    if (sf_pack_open(&p, path, &e)) {
        CHECK(0, "%s: open: %s", label, e.msg);
        return;
    }
    const sf_pack_info *in = sf_pack_get_info(p);
    struct stat st;
    stat(path, &st);
    CHECK(in->version == 1u + (in->has_lines || in->time_kind != SF_TIME_NONE) && in->filter == (uint32_t)filter && in->level == level &&
              in->chunk_rows == chunk_rows && in->file_size == (uint64_t)st.st_size,
          "%s: version %u filter %u level %d chunk_rows %u size %llu", label, in->version, in->filter, in->level,
          in->chunk_rows, (unsigned long long)in->file_size);
    CHECK(in->ncols == x->ncols && in->nrows == x->nrows && in->nchunks == (x->nrows + chunk_rows - 1) / chunk_rows,
          "%s: %u columns, %llu rows, %llu chunks", label, in->ncols, (unsigned long long)in->nrows,
          (unsigned long long)in->nchunks);
    for (uint32_t c = 0; c < in->ncols && c < x->ncols; c++)
        CHECK(!strcmp(in->col_names[c], x->col_names[c]), "%s: column %u is \"%s\", expected \"%s\"", label, c,
              in->col_names[c], x->col_names[c]);
    CHECK(!strcmp(in->series_column, x->series_column), "%s: series column \"%s\"", label, in->series_column);
    CHECK(in->nseries == x->nseries, "%s: %llu series, expected %llu", label, (unsigned long long)in->nseries,
          (unsigned long long)x->nseries);
    for (uint64_t s = 0; s < in->nseries && s < x->nseries; s++)
        CHECK(!strcmp(in->series[s].name, x->series[s]) && in->series[s].first_row == x->first[s] &&
                  in->series[s].rows == x->rows[s],
              "%s: series %llu is \"%s\" rows %llu+%llu, expected \"%s\" %llu+%llu", label, (unsigned long long)s,
              in->series[s].name, (unsigned long long)in->series[s].first_row,
              (unsigned long long)in->series[s].rows, x->series[s], (unsigned long long)x->first[s],
              (unsigned long long)x->rows[s]);
    // Chunks: aligned, in order, each starting where the last one's
    // alignment padding ends, the trailer right behind the last one.
    uint64_t next = in->data_offset;
    CHECK(in->data_offset % SF_PACK_ALIGN == 0, "%s: data offset %llu", label, (unsigned long long)in->data_offset);
    for (uint64_t i = 0; i < in->nchunks; i++) {
        sf_chunk c = sf_pack_chunk_locate(p, i);
        uint64_t rows = i + 1 < in->nchunks ? chunk_rows : in->nrows - i * chunk_rows;
        CHECK(c.offset == next && c.first_row == i * chunk_rows && c.rows == rows,
              "%s: chunk %llu at %llu (expected %llu), rows %llu+%u", label, (unsigned long long)i,
              (unsigned long long)c.offset, (unsigned long long)next, (unsigned long long)c.first_row, c.rows);
        next = (c.offset + c.stored_size + SF_PACK_ALIGN - 1) / SF_PACK_ALIGN * SF_PACK_ALIGN;
        if (i + 1 == in->nchunks)
            CHECK(c.offset + c.stored_size == in->trailer_offset, "%s: trailer at %llu, last chunk ends at %llu",
                  label, (unsigned long long)in->trailer_offset, (unsigned long long)(c.offset + c.stored_size));
    }
    float *v = decode_all(p, &e);
    CHECK(v != NULL, "%s: decode: %s", label, e.msg);
    if (v && in->nrows == x->nrows && in->ncols == x->ncols) {
        int bad = 0;
        for (uint64_t i = 0; i < x->nrows * x->ncols && bad < 5; i++)
            if (bits_of(v[i]) != bits_of(x->v[i])) {
                CHECK(0, "%s: row %llu column %llu: %a, expected %a", label, (unsigned long long)(i / x->ncols),
                      (unsigned long long)(i % x->ncols), (double)v[i], (double)x->v[i]);
                bad++;
            }
        check_stats(label, in, x);
    }
    free(v);
    CHECK(sf_pack_verify(p, NULL, NULL, &e) == 0, "%s: verify: %s", label, e.msg);
    sf_pack_close(p);
}

static bool same_bytes(const char *a, const char *b) {
    size_t na, nb;
    unsigned char *da = read_whole(a, &na), *db = read_whole(b, &nb);
    bool same = da && db && na == nb && memcmp(da, db, na) == 0;
    free(da);
    free(db);
    return same;
}

// ---- (a) the bundled data ----

// The CSV's values by strtof: what the packer must reproduce.
static void load_csv(const char *path, expect *x) {
    size_t n;
    char *text = (char *)read_whole(path, &n);
    if (!text) {
        perror(path);
        exit(1);
    }
    text = realloc(text, n + 1);
    text[n] = 0;
    char *line = strchr(text, '\n') + 1;  // the header: names checked separately
    x->ncols = 5;
    x->nrows = 0;
    for (char *p = line; *p; p++) x->nrows += *p == '\n';
    x->v = malloc(x->nrows * x->ncols * sizeof *x->v);
    for (uint64_t r = 0; r < x->nrows; r++)
        for (uint32_t c = 0; c < x->ncols; c++) {
            char *end;
            x->v[r * x->ncols + c] = strtof(line, &end);
            if (c + 1 == x->ncols && *end == '\r') end++;  // the file has CRLF line ends
            CHECK(*end == (c + 1 < x->ncols ? ',' : '\n'), "%s: row %llu: unexpected \"%.10s\"", path,
                  (unsigned long long)r, end);
            line = end + 1;
        }
    free(text);
}

static void test_bundled(const char *srcdir, const char *dir) {
    char csv[4096];
    snprintf(csv, sizeof csv, "%s/data/treasury-yields-daily.csv", srcdir);
    expect x = {.col_names = {"time", "tcm1yd", "tcm3yd", "tcm5yd", "tcm10yd"}, .series_column = "", .nseries = 1,
                .series = {""}};
    load_csv(csv, &x);
    x.rows[0] = x.nrows;
    CHECK(x.nrows > 9000, "%s: %llu rows", csv, (unsigned long long)x.nrows);
    // The default chunk size (one chunk here) and small chunks.
    const uint32_t chunk_rows[] = {0, 1000};
    for (int k = 0; k < 2; k++) {
        sf_csv_pack_opts o = {.pack = {.chunk_rows = chunk_rows[k], .level = 3, .filter = SF_FILTER_DELTA_SHUFFLE,
                                       .threads = 2}};
        sf_csv_pack_stats st = {0};
        sf_err e = {0};
        char out[PATH_LEN];
        path_in(out, dir, "treasury.sfpack");
        int rc = sf_csv_pack(csv, out, &o, &st, &e);
        CHECK(rc == 0, "packing %s: %s", csv, e.msg);
        if (rc) continue;
        CHECK(st.rows == x.nrows && st.nseries == 1 && st.rows_dropped == 0, "stats: %llu rows %llu series",
              (unsigned long long)st.rows, (unsigned long long)st.nseries);
        uint32_t cr = chunk_rows[k] ? chunk_rows[k] : SF_PACK_DEFAULT_CHUNK_BYTES / (4 * x.ncols);
        check_pack(chunk_rows[k] ? "treasury, 1000-row chunks" : "treasury", out, &x, cr, SF_FILTER_DELTA_SHUFFLE,
                   3);
    }
    free(x.v);
}

// ---- (b) generated series ----

// Five series of different lengths (one of a single row), a series column
// between the features, random walks at three scales printed with %.9g.
static const char *gen_csv(const char *dir, expect *x) {
    static const char *const names[] = {"alpha", "b", "gamma \xce\xb3", "single", "long-series-name-0123456789"};
    static const uint64_t lens[] = {2345, 999, 3001, 1, 1777};
    *x = (expect){.ncols = 3, .col_names = {"x", "y", "z"}, .series_column = "id", .nseries = 5};
    for (int s = 0; s < 5; s++) {
        x->series[s] = names[s];
        x->first[s] = x->nrows;
        x->rows[s] = lens[s];
        x->nrows += lens[s];
    }
    x->v = malloc(x->nrows * 3 * sizeof *x->v);
    static char path[PATH_LEN];
    path_in(path, dir, "gen.csv");
    FILE *f = fopen(path, "w");
    if (!f || !x->v) abort();
    fprintf(f, "x,id,y,z\n");
    uint64_t r = 0;
    for (int s = 0; s < 5; s++) {
        double a = uniform() * 100, b = 1e6 + uniform() * 1e5, c = uniform() * 1e-3;
        for (uint64_t i = 0; i < lens[s]; i++, r++) {
            a += uniform();
            b += uniform() * 10;
            c += uniform() * 1e-5;
            float *v = x->v + r * 3;
            v[0] = (float)a, v[1] = (float)b, v[2] = (float)c;
            fprintf(f, "%.9g,%s,%.9g,%.9g\n", (double)v[0], names[s], (double)v[1], (double)v[2]);
        }
    }
    if (fclose(f) != 0) abort();
    return path;
}

static int pack_gen(const char *csv, const char *out, uint32_t chunk_rows, int filter, int level, int threads,
                    sf_err *e) {
    sf_csv_pack_opts o = {.series_column = "id",
                          .pack = {.chunk_rows = chunk_rows, .level = level, .filter = filter, .threads = threads}};
    sf_csv_pack_stats st = {0};
    int rc = sf_csv_pack(csv, out, &o, &st, e);
    if (!rc) CHECK(st.nseries == 5, "%s: %llu series", out, (unsigned long long)st.nseries);
    return rc;
}

// The same rows through the writer API in uneven batches, series started
// by hand: the file must be the one the CSV packer wrote. toggle: chunks
// compressed inline (sf_pack_writer_inline) or by the workers, switched at
// random between batches.
static int write_gen(const expect *x, const char *out, uint32_t chunk_rows, int filter, int level, int threads,
                     bool toggle, sf_err *e) {
    sf_pack_writer_opts o = {.ncols = 3, .col_names = x->col_names, .series_column = "id", .chunk_rows = chunk_rows,
                             .level = level, .filter = filter, .threads = threads, .lines = true};
    sf_pack_writer *w;
    int rc = sf_pack_writer_open(&w, out, &o, e);
    int64_t lines[300];
    for (uint64_t s = 0; !rc && s < x->nseries; s++) {
        rc = sf_pack_writer_series(w, x->series[s], strlen(x->series[s]), e);
        for (uint64_t r = x->first[s]; !rc && r < x->first[s] + x->rows[s];) {
            uint64_t n = 1 + rng() % 300;
            if (n > x->first[s] + x->rows[s] - r) n = x->first[s] + x->rows[s] - r;
            for (uint64_t k = 0; k < n; k++) lines[k] = (int64_t)(r + k + 2);  // the header is line 1
            if (toggle) sf_pack_writer_inline(w, rng() & 1);
            rc = sf_pack_writer_rows_at(w, x->v + r * 3, NULL, lines, n, e);
            r += n;
        }
    }
    if (rc) {
        sf_pack_writer_abort(w);
        return rc;
    }
    CHECK(sf_pack_writer_nrows(w) == x->nrows, "writer counts %llu rows", (unsigned long long)sf_pack_writer_nrows(w));
    return sf_pack_writer_finish(w, e);
}

static void test_generated(const char *dir) {
    expect x;
    const char *csv = gen_csv(dir, &x);
    static const int levels[] = {1, 3, 19, -5};
    static const uint32_t chunk_rows[] = {1000, 777};
    char one[PATH_LEN], three[PATH_LEN], api[PATH_LEN];
    path_in(one, dir, "one.sfpack");
    path_in(three, dir, "three.sfpack");
    path_in(api, dir, "api.sfpack");
    for (int filter = 0; filter < SF_FILTER_COUNT; filter++)
        for (int l = 0; l < 4; l++)
            for (int k = 0; k < 2; k++) {
                char label[128];
                snprintf(label, sizeof label, "generated, %s, level %d, %u-row chunks", sf_filter_name(filter),
                         levels[l], chunk_rows[k]);
                sf_err e = {0};
                int rc = pack_gen(csv, one, chunk_rows[k], filter, levels[l], 1, &e);
                CHECK(rc == 0, "%s, 1 thread: %s", label, e.msg);
                // With a sync of the file after every chunk (writer.c's
                // syncer, otherwise each 64 MB), the same bytes.
                setenv("SEQFEED_TEST_SYNC_STEP", "1", 1);
                rc = pack_gen(csv, three, chunk_rows[k], filter, levels[l], 3, &e);
                unsetenv("SEQFEED_TEST_SYNC_STEP");
                CHECK(rc == 0, "%s, 3 threads: %s", label, e.msg);
                check_pack(label, one, &x, chunk_rows[k], filter, levels[l]);
                CHECK(same_bytes(one, three), "%s: 1 and 3 threads wrote different files", label);
                if (l == 0) {
                    rc = write_gen(&x, api, chunk_rows[k], filter, levels[l], 3, false, &e);
                    CHECK(rc == 0, "%s, writer API: %s", label, e.msg);
                    CHECK(same_bytes(one, api), "%s: the writer API and the CSV packer wrote different files", label);
                    rc = write_gen(&x, api, chunk_rows[k], filter, levels[l], 3, true, &e);
                    CHECK(rc == 0, "%s, writer API, inline and not: %s", label, e.msg);
                    CHECK(same_bytes(one, api), "%s: chunks compressed inline and by workers in turn made another "
                          "file", label);
                }
            }
    // Chunks smaller than the batches, down to one row per chunk.
    const uint32_t tiny[] = {1, 7};
    for (int k = 0; k < 2; k++) {
        char label[64];
        snprintf(label, sizeof label, "writer API, %u-row chunks", tiny[k]);
        char out[PATH_LEN];
        path_in(out, dir, "tiny.sfpack");
        sf_err e = {0};
        int rc = write_gen(&x, out, tiny[k], SF_FILTER_DELTA_SHUFFLE, 1, 3, k == 1, &e);
        CHECK(rc == 0, "%s: %s", label, e.msg);
        if (!rc) check_pack(label, out, &x, tiny[k], SF_FILTER_DELTA_SHUFFLE, 1);
    }
    free(x.v);
}

// ---- (c) seqfeed pack / unpack ----

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...) {
    char cmd[16384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    CHECK(rc == 0, "`%s` exited with %d", cmd, rc);
    return rc;
}

// The CSV unpack wrote, checked against the packed values: header, series
// ids in the first column, values that strtof reads to the same bits.
static void check_unpacked_csv(const char *label, const char *path, const expect *x) {
    size_t n;
    char *text = (char *)read_whole(path, &n);
    if (!text) {
        CHECK(0, "%s: cannot read %s", label, path);
        return;
    }
    text = realloc(text, n + 1);
    text[n] = 0;
    char header[256] = "";
    size_t h = 0;
    if (x->series_column[0]) h += (size_t)snprintf(header + h, sizeof header - h, "%s,", x->series_column);
    for (uint32_t c = 0; c < x->ncols; c++)
        h += (size_t)snprintf(header + h, sizeof header - h, "%s%s", c ? "," : "", x->col_names[c]);
    CHECK(strncmp(text, header, h) == 0 && text[h] == '\n', "%s: header \"%.*s\", expected \"%s\"", label, (int)h,
          text, header);
    char *p = text + h + 1;
    uint64_t s = 0;
    int bad = 0;
    for (uint64_t r = 0; r < x->nrows && *p && bad < 5; r++) {
        while (r >= x->first[s] + x->rows[s]) s++;
        if (x->series_column[0]) {
            size_t len = strlen(x->series[s]);
            if (strncmp(p, x->series[s], len) != 0 || p[len] != ',') {
                CHECK(0, "%s: row %llu: series \"%.20s\", expected \"%s\"", label, (unsigned long long)r, p,
                      x->series[s]);
                bad++;
            }
            p = strchr(p, ',') + 1;
        }
        for (uint32_t c = 0; c < x->ncols; c++) {
            char *end;
            float v = strtof(p, &end);
            if (bits_of(v) != bits_of(x->v[r * x->ncols + c]) || *end != (c + 1 < x->ncols ? ',' : '\n')) {
                CHECK(0, "%s: row %llu column %u: \"%.20s\" reads as %a, packed %a", label, (unsigned long long)r,
                      c, p, (double)v, (double)x->v[r * x->ncols + c]);
                bad++;
            }
            p = end + 1;
        }
    }
    CHECK(p == text + n, "%s: %zu bytes after the last row", label, (size_t)(text + n - p));
    free(text);
}

static void test_cli(const char *seqfeed, const char *srcdir, const char *dir) {
    expect x;
    const char *csv = gen_csv(dir, &x);
    char a[PATH_LEN], csv2[PATH_LEN], b[PATH_LEN], out[PATH_LEN];
    path_in(a, dir, "a.sfpack");
    path_in(csv2, dir, "a.csv");
    path_in(b, dir, "b.sfpack");
    path_in(out, dir, "stdout.csv");
    const char *opts = "--series-column id --chunk-rows 777 --level 3 --filter shuffle -q";
    if (!run("'%s' pack '%s' -o '%s' %s", seqfeed, csv, a, opts) &&
        !run("'%s' unpack '%s' -o '%s'", seqfeed, a, csv2) &&
        !run("'%s' pack '%s' -o '%s' %s", seqfeed, csv2, b, opts)) {
        check_pack("cli, packed", a, &x, 777, SF_FILTER_SHUFFLE, 3);
        check_unpacked_csv("cli, unpacked", csv2, &x);
        // Same values, names and options: the repacked file is the same file.
        CHECK(same_bytes(a, b), "unpack + pack of %s gave a different file", a);
        check_pack("cli, repacked", b, &x, 777, SF_FILTER_SHUFFLE, 3);
        if (!run("'%s' unpack '%s' -o - > '%s'", seqfeed, a, out))
            CHECK(same_bytes(csv2, out), "unpack -o - and -o FILE differ");
    }
    free(x.v);

    // The bundled data has no series column: the same round trip.
    expect t = {.col_names = {"time", "tcm1yd", "tcm3yd", "tcm5yd", "tcm10yd"}, .series_column = "", .nseries = 1,
                .series = {""}};
    char data[PATH_LEN];
    snprintf(data, sizeof data, "%s/data/treasury-yields-daily.csv", srcdir);
    load_csv(data, &t);
    t.rows[0] = t.nrows;
    if (!run("'%s' pack '%s' -o '%s' -q", seqfeed, data, a) && !run("'%s' unpack '%s' -o '%s'", seqfeed, a, csv2) &&
        !run("'%s' pack '%s' -o '%s' -q", seqfeed, csv2, b)) {
        check_unpacked_csv("cli, treasury unpacked", csv2, &t);
        CHECK(same_bytes(a, b), "unpack + pack of the treasury data gave a different file");
    }
    free(t.v);
}

// ---- (d) writer API edge cases ----

static sf_pack_writer *open_writer(const char *path, int threads) {
    static const char *const names[] = {"a", "b"};
    sf_pack_writer_opts o = {.ncols = 2, .col_names = names, .series_column = "s", .chunk_rows = 4, .level = 1,
                             .filter = SF_FILTER_DELTA_SHUFFLE, .threads = threads};
    sf_pack_writer *w = NULL;
    sf_err e = {0};
    CHECK(sf_pack_writer_open(&w, path, &o, &e) == 0, "open %s: %s", path, e.msg);
    return w;
}

static void test_writer_api(const char *dir) {
    char path[PATH_LEN];
    path_in(path, dir, "w.sfpack");
    float rows[200];  // 100 rows of 2 columns
    for (int i = 0; i < 200; i++) rows[i] = (float)i * 0.25f;
    sf_err e = {0};
    for (int threads = 1; threads <= 3; threads += 2) {
        // No rows: finish fails and leaves nothing, not even the temp file.
        sf_pack_writer *w = open_writer(path, threads);
        if (!w) return;
        const char *tmp = sf_pack_writer_temp_path(w);
        CHECK(tmp && !strncmp(tmp, path, strlen(path)) && access(tmp, F_OK) == 0, "temp file \"%s\" next to %s",
              tmp ? tmp : "(null)", path);
        CHECK(sf_pack_writer_series(w, "x", 1, &e) == 0, "series: %s", e.msg);
        int rc = sf_pack_writer_finish(w, &e);
        CHECK(rc == SF_EINVAL && strstr(e.msg, path), "finish without rows: %d \"%s\"", rc, e.msg);
        CHECK(count_entries(dir) == 0, "finish without rows left %d files", count_entries(dir));

        // Two series in a row without rows between them: only the second is
        // stored; one started after the last row is not stored either.
        w = open_writer(path, threads);
        sf_pack_writer_series(w, "first", 5, &e);
        sf_pack_writer_series(w, "second", 6, &e);
        sf_pack_writer_rows(w, rows, 10, &e);
        sf_pack_writer_series(w, "third", 5, &e);
        sf_pack_writer_series(w, "fourth", 6, &e);
        sf_pack_writer_rows(w, rows + 20, 3, &e);
        sf_pack_writer_series(w, "trailing", 8, &e);
        rc = sf_pack_writer_finish(w, &e);
        CHECK(rc == 0, "finish: %s", e.msg);
        sf_pack *p;
        if (!rc && (rc = sf_pack_open(&p, path, &e)) == 0) {
            const sf_pack_info *in = sf_pack_get_info(p);
            CHECK(in->nseries == 2 && !strcmp(in->series[0].name, "second") && in->series[0].rows == 10 &&
                      !strcmp(in->series[1].name, "fourth") && in->series[1].first_row == 10 &&
                      in->series[1].rows == 3,
                  "%llu series: \"%s\" %llu rows, ...", (unsigned long long)in->nseries, in->series[0].name,
                  (unsigned long long)in->series[0].rows);
            sf_pack_close(p);
        }
        CHECK(rc == 0, "open: %s", e.msg);
        CHECK(count_entries(dir) == 1, "%d files besides the output", count_entries(dir) - 1);
        unlink(path);

        // Abort, after some chunks were written: nothing left behind.
        w = open_writer(path, threads);
        sf_pack_writer_rows(w, rows, 100, &e);
        CHECK(sf_pack_writer_bytes(w) > SF_PACK_ALIGN, "%llu bytes written after 25 chunks",
              (unsigned long long)sf_pack_writer_bytes(w));
        sf_pack_writer_abort(w);
        CHECK(count_entries(dir) == 0, "abort left %d files", count_entries(dir));

        // A NaN anywhere in a chunk (not only first, where min/max show it)
        // is refused, and again nothing is left.
        for (int at = 0; at < 4; at++) {
            float bad[8];
            memcpy(bad, rows, sizeof bad);
            bad[2 * at + 1] = NAN;
            w = open_writer(path, threads);
            e = (sf_err){0};
            rc = sf_pack_writer_rows(w, bad, 4, &e);
            if (!rc) rc = sf_pack_writer_finish(w, &e);
            else sf_pack_writer_abort(w);
            CHECK(rc == SF_EINVAL, "NaN in row %d: %d \"%s\"", at, rc, e.msg);
            CHECK(count_entries(dir) == 0, "NaN in row %d: %d files left", at, count_entries(dir));
            unlink(path);
        }
    }
    // Options the writer must refuse before touching the disk.
    static const char *const names[] = {"a", ""};
    sf_pack_writer_opts bad[] = {
        {.ncols = 0, .col_names = names, .level = 1},
        {.ncols = 1, .col_names = names, .level = 1, .filter = SF_FILTER_COUNT},
        {.ncols = 1, .col_names = names, .level = 1, .filter = -1},
        {.ncols = 1, .col_names = names, .level = 1000},
        {.ncols = 2, .col_names = names, .level = 1},
        {.ncols = 1, .col_names = names, .level = 1, .chunk_rows = 1u << 30},
        // Floats within 256 MiB, but not with each row's line: a file no reader would open.
        {.ncols = 1, .col_names = names, .level = 1, .chunk_rows = 1u << 26, .lines = true},
        {.ncols = 1, .col_names = names, .level = 1, .chunk_rows = 1u << 26, .imputed = true},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        sf_pack_writer *w = NULL;
        int rc = sf_pack_writer_open(&w, path, &bad[i], &e);
        // Chunks too large are the option's fault: a usage error.
        int want = bad[i].chunk_rows ? SF_EUSAGE : SF_EINVAL;
        CHECK(rc == want && !w, "bad options %zu: %d", i, rc);
    }
    CHECK(count_entries(dir) == 0, "refused opens left %d files", count_entries(dir));
}

// Row r's series start, when r starts one of the ns series in starts.
static uint64_t starts_of(const uint64_t *starts, int ns, uint64_t r) {
    for (int s = 0; s < ns; s++)
        if (starts[s] == r) return r;
    return UINT64_MAX;
}

// Version 2: rows with times and CSV lines come back exact through every
// chunk layout and thread count, with the summary the trailer keeps (each
// series' first and last time, the typical step, the gaps, each chunk's
// largest step) equal to a brute-force count; a time that goes back in a
// series is refused.
static void test_times(const char *dir) {
    enum { N = 5003, NS = 3 };
    static float rows[N * 2];
    static int64_t time[N], line[N];
    uint64_t starts[NS + 1] = {0, 1200, 1201, N};  // a series of one row in the middle
    int64_t t = -86400000000ll * 400;  // before 1970
    for (size_t r = 0; r < N; r++) {
        rows[2 * r] = (float)r, rows[2 * r + 1] = (float)uniform();
        int64_t step = rng() % 50 ? 3600000000ll : (int64_t)(rng() % 100) * 3600000000ll;  // hours, a few gaps
        t += step;
        time[r] = t, line[r] = (int64_t)(r + 2 + r / 100);  // lines skip, as after dropped rows
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/times.sfpack", dir);
    static const char *const names[] = {"a", "b"};
    for (int layout = 0; layout < 3; layout++) {
        uint32_t chunk_rows = layout == 0 ? 64 : layout == 1 ? 1000 : 8192;
        int threads = layout == 1 ? 3 : 0;
        sf_err e = {0};
        sf_pack_writer *w;
        sf_pack_writer_opts o = {.ncols = 2, .col_names = names, .series_column = "id", .chunk_rows = chunk_rows,
                                 .level = 1, .filter = SF_FILTER_DELTA_SHUFFLE, .threads = threads,
                                 .time_column = "when", .time_kind = SF_TIME_ISO, .lines = true};
        if (sf_pack_writer_open(&w, path, &o, &e)) {
            CHECK(0, "open: %s", e.msg);
            return;
        }
        int rc = 0;
        for (int s = 0; s < NS && !rc; s++) {
            char id[8];
            snprintf(id, sizeof id, "s%d", s);
            rc = sf_pack_writer_series(w, id, strlen(id), &e);
            for (uint64_t r = starts[s]; r < starts[s + 1] && !rc; r += 700) {
                size_t n = starts[s + 1] - r < 700 ? (size_t)(starts[s + 1] - r) : 700;
                rc = sf_pack_writer_rows_at(w, rows + 2 * r, time + r, line + r, n, &e);
            }
        }
        sf_pack_writer_time_parts(w, SF_TIME_CLOCK | 3u << SF_TIME_FRACTION_SHIFT);
        sf_pack_writer_time_parts(w, SF_TIME_SECONDS | 1u << SF_TIME_FRACTION_SHIFT);
        if (!rc) rc = sf_pack_writer_finish(w, &e);
        else sf_pack_writer_abort(w);
        CHECK(rc == 0, "layout %d: %s", layout, e.msg);
        sf_pack *p;
        if (rc || sf_pack_open(&p, path, &e)) {
            CHECK(0, "layout %d: open: %s", layout, e.msg);
            continue;
        }
        const sf_pack_info *in = sf_pack_get_info(p);
        CHECK(in->version == 2 && in->has_lines && in->time_kind == SF_TIME_ISO && !strcmp(in->time_column, "when") &&
                  in->time_parts == (SF_TIME_CLOCK | SF_TIME_SECONDS | 3u << SF_TIME_FRACTION_SHIFT),
              "layout %d: version %u, lines %d, kind %d, column %s, parts %x", layout, in->version, in->has_lines,
              in->time_kind, in->time_column, in->time_parts);
        // Brute force: the typical step among the first 10000 steps, the gaps above it.
        uint64_t gaps = 0, steps = 0;
        for (int s = 0; s < NS; s++) {
            CHECK(in->series_times[2 * s] == time[starts[s]] && in->series_times[2 * s + 1] == time[starts[s + 1] - 1],
                  "layout %d: series %d times", layout, s);
            for (uint64_t r = starts[s] + 1; r < starts[s + 1]; r++, steps++) gaps += time[r] - time[r - 1] > 3600000000ll;
        }
        CHECK(in->time_step == 3600000000ll && in->time_gaps == gaps, "layout %d: step %lld, %llu gaps (want %llu)",
              layout, (long long)in->time_step, (unsigned long long)in->time_gaps, (unsigned long long)gaps);
        sf_pack_dctx *d = sf_pack_dctx_create();
        float *vals = malloc(sf_pack_chunk_raw_size(p, 0));
        int64_t *gt = malloc(chunk_rows * 8), *gl = malloc(chunk_rows * 8);
        void *stored = malloc(sf_pack_max_stored_size(p));
        for (uint64_t i = 0; i < in->nchunks; i++) {
            sf_chunk c = sf_pack_chunk_locate(p, i);
            rc = sf_pack_chunk_read(p, i, stored, &e);
            if (!rc) rc = sf_pack_chunk_decode_all(d, p, i, stored, vals, gt, gl, &e);
            CHECK(rc == 0, "layout %d: chunk %llu: %s", layout, (unsigned long long)i, e.msg);
            if (rc) break;
            int64_t most = 0;
            for (uint32_t k = 0; k < c.rows; k++) {
                uint64_t r = c.first_row + k;
                CHECK(gt[k] == time[r] && gl[k] == line[r] && vals[k] == rows[2 * r], "layout %d: row %llu", layout,
                      (unsigned long long)r);
                bool first = r == 0 || r == starts[1] || r == starts[2];
                if (!first && time[r] - time[r - 1] > most) most = time[r] - time[r - 1];
            }
            CHECK(sf_pack_chunk_max_step(p, i) == most, "layout %d: chunk %llu: largest step %lld, want %lld", layout,
                  (unsigned long long)i, (long long)sf_pack_chunk_max_step(p, i), (long long)most);
        }
        CHECK(sf_pack_verify(p, NULL, NULL, &e) == 0, "layout %d: verify: %s", layout, e.msg);
        // Segments at several gaps against a brute-force cut: a new segment
        // at every series start and at every row more than max after the
        // row before it in its series.
        const int64_t hour = 3600000000ll, maxes[] = {0, hour, 2 * hour, 50 * hour, 1000 * hour};
        for (size_t m = 0; m < sizeof maxes / sizeof *maxes; m++) {
            sf_series *seg = NULL;
            uint64_t nseg = 0, want = 0;
            rc = sf_pack_segments(p, maxes[m], &seg, &nseg, &e);
            CHECK(rc == 0, "layout %d: segments: %s", layout, e.msg);
            bool ok = rc == 0;
            for (uint64_t r = 0; ok && r < N; r++) {
                bool cut = r == 0 || r == starts_of(starts, NS, r) || time[r] - time[r - 1] > maxes[m];
                if (!cut) continue;
                ok = want < nseg && seg[want].first_row == r;
                want++;
            }
            for (uint64_t i = 0; ok && i < nseg; i++)
                ok = seg[i].rows > 0 && (i + 1 == nseg ? seg[i].first_row + seg[i].rows == N
                                                       : seg[i].first_row + seg[i].rows == seg[i + 1].first_row);
            CHECK(ok && want == nseg, "layout %d: max step %lld: %llu segments, brute force %llu", layout,
                  (long long)maxes[m], (unsigned long long)nseg, (unsigned long long)want);
            free(seg);
        }
        free(vals), free(gt), free(gl), free(stored);
        sf_pack_dctx_free(d);
        sf_pack_close(p);
        unlink(path);
    }
    // A time before the one before it, in the same series: refused.
    sf_err e = {0};
    sf_pack_writer *w;
    sf_pack_writer_opts o = {.ncols = 2, .col_names = names, .level = 1, .time_column = "when",
                             .time_kind = SF_TIME_EPOCH_S};
    if (sf_pack_writer_open(&w, path, &o, &e) == 0) {
        int64_t back[3] = {10, 20, 15};
        int rc = sf_pack_writer_rows_at(w, rows, back, NULL, 3, &e);
        CHECK(rc == SF_EINVAL && strstr(e.msg, "row 2: time 15 is before"), "a time going back: %d %s", rc, e.msg);
        sf_pack_writer_abort(w);
    }
}

// Which values were imputed (pack --missing ffill) survives the file bit
// for bit through every chunk layout (a bitmap with and without padding
// bits, a partial last chunk, times and lines beside it) and thread count;
// rows given without flags count as observed; the trailer's per-column
// counts are a brute-force count; a file without the record says none.
static void test_imputed(const char *dir) {
    enum { N = 1003, NC = 3 };
    static float rows[N * NC];
    static uint8_t flags[N * NC];
    static int64_t line[N];
    for (size_t r = 0; r < N; r++) {
        line[r] = (int64_t)r + 2;
        for (int c = 0; c < NC; c++) {
            rows[r * NC + c] = (float)uniform();
            // A few gaps, none in rows 300-399, most of column 2 in rows 700-799.
            flags[r * NC + c] = r >= 300 && r < 400 ? 0 : r >= 700 && r < 800 && c == 2 ? rng() % 8 != 0 : rng() % 20 == 0;
        }
    }
    enum { PLAIN_FROM = 500, PLAIN_TO = 520 };  // given through sf_pack_writer_rows_at: observed
    uint64_t want[NC] = {0};
    for (size_t r = 0; r < N; r++)
        for (int c = 0; c < NC; c++) {
            if (r >= PLAIN_FROM && r < PLAIN_TO) flags[r * NC + c] = 0;
            want[c] += flags[r * NC + c];
        }
    static const char *const names[] = {"a", "b", "c"};
    char path[PATH_LEN], prev[PATH_LEN];
    path_in(prev, dir, "imp-prev.sfpack");
    const struct { uint32_t chunk_rows; int threads; bool lines; } layouts[] = {
        {7, 0, false}, {7, 3, false}, {64, 0, true}, {64, 3, true}, {4096, 0, true}};
    for (size_t l = 0; l < sizeof layouts / sizeof *layouts; l++) {
        path_in(path, dir, "imp.sfpack");
        sf_err e = {0};
        sf_pack_writer *w;
        sf_pack_writer_opts o = {.ncols = NC, .col_names = names, .chunk_rows = layouts[l].chunk_rows, .level = 1,
                                 .filter = SF_FILTER_DELTA_SHUFFLE, .threads = layouts[l].threads,
                                 .lines = layouts[l].lines, .imputed = true};
        if (sf_pack_writer_open(&w, path, &o, &e)) {
            CHECK(0, "layout %zu: open: %s", l, e.msg);
            return;
        }
        const int64_t *ln = layouts[l].lines ? line : NULL;
        int rc = sf_pack_writer_rows_imputed(w, rows, NULL, ln, flags, PLAIN_FROM, &e);
        if (!rc) rc = sf_pack_writer_rows_at(w, rows + PLAIN_FROM * NC, NULL, ln ? ln + PLAIN_FROM : NULL,
                                             PLAIN_TO - PLAIN_FROM, &e);
        if (!rc) rc = sf_pack_writer_rows_imputed(w, rows + PLAIN_TO * NC, NULL, ln ? ln + PLAIN_TO : NULL,
                                                  flags + PLAIN_TO * NC, N - PLAIN_TO, &e);
        if (!rc) rc = sf_pack_writer_finish(w, &e);
        else sf_pack_writer_abort(w);
        sf_pack *p;
        if (rc || sf_pack_open(&p, path, &e)) {
            CHECK(0, "layout %zu: %s", l, e.msg);
            continue;
        }
        const sf_pack_info *in = sf_pack_get_info(p);
        CHECK(in->version == 2 && in->imputed && in->imputed[0] == want[0] && in->imputed[1] == want[1] &&
                  in->imputed[2] == want[2],
              "layout %zu: version %u, imputed %llu %llu %llu, want %llu %llu %llu", l, in->version,
              in->imputed ? (unsigned long long)in->imputed[0] : 0, in->imputed ? (unsigned long long)in->imputed[1] : 0,
              in->imputed ? (unsigned long long)in->imputed[2] : 0, (unsigned long long)want[0],
              (unsigned long long)want[1], (unsigned long long)want[2]);
        sf_pack_dctx *d = sf_pack_dctx_create();
        float *vals = malloc(sf_pack_chunk_raw_size(p, 0));
        uint8_t *got = malloc((size_t)in->chunk_rows * NC);
        void *stored = malloc(sf_pack_max_stored_size(p));
        uint64_t wrong = 0;
        for (uint64_t i = 0; d && vals && got && stored && i < in->nchunks; i++) {
            sf_chunk c = sf_pack_chunk_locate(p, i);
            rc = sf_pack_chunk_read(p, i, stored, &e);
            if (!rc) rc = sf_pack_chunk_decode_imputed(d, p, i, stored, vals, NULL, NULL, got, &e);
            CHECK(rc == 0, "layout %zu: chunk %llu: %s", l, (unsigned long long)i, e.msg);
            if (rc) break;
            for (uint32_t k = 0; k < c.rows; k++)
                for (int col = 0; col < NC; col++) {
                    uint64_t r = c.first_row + k;
                    wrong += got[(size_t)col * c.rows + k] != flags[r * NC + col] ||
                             vals[(size_t)col * c.rows + k] != rows[r * NC + col];
                }
        }
        CHECK(wrong == 0, "layout %zu: %llu values or flags differ", l, (unsigned long long)wrong);
        CHECK(sf_pack_verify(p, NULL, NULL, &e) == 0, "layout %zu: verify: %s", l, e.msg);
        free(vals), free(got), free(stored);
        sf_pack_dctx_free(d);
        sf_pack_close(p);
        // Threads change nothing in the file.
        if (l % 2 == 1) {
            size_t na, nb;
            unsigned char *a = read_whole(prev, &na), *b = read_whole(path, &nb);
            CHECK(a && b && na == nb && !memcmp(a, b, na), "layout %zu: %d threads wrote another file", l,
                  layouts[l].threads);
            free(a), free(b);
        }
        rename(path, prev);
    }
    unlink(prev);
    // Without the record: no counts, every value observed; and flags given
    // to a writer opened without them are refused.
    path_in(path, dir, "plain.sfpack");
    sf_err e = {0};
    sf_pack_writer *w;
    sf_pack_writer_opts o = {.ncols = NC, .col_names = names, .chunk_rows = 64, .level = 1};
    if (sf_pack_writer_open(&w, path, &o, &e)) {
        CHECK(0, "open: %s", e.msg);
        return;
    }
    int rc = sf_pack_writer_rows_imputed(w, rows, NULL, NULL, flags, 10, &e);
    CHECK(rc == SF_EINVAL && strstr(e.msg, "opened without"), "flags to a writer without them: %d %s", rc, e.msg);
    rc = sf_pack_writer_rows(w, rows, 100, &e);
    if (!rc) rc = sf_pack_writer_finish(w, &e);
    else sf_pack_writer_abort(w);
    sf_pack *p;
    if (rc || sf_pack_open(&p, path, &e)) {
        CHECK(0, "plain: %s", e.msg);
        return;
    }
    const sf_pack_info *in = sf_pack_get_info(p);
    uint8_t got[64 * NC];
    memset(got, 0xff, sizeof got);
    float vals[64 * NC];
    void *stored = malloc(sf_pack_max_stored_size(p));
    sf_pack_dctx *d = sf_pack_dctx_create();
    rc = stored && d ? sf_pack_chunk_read(p, 0, stored, &e) : SF_ENOMEM;
    if (!rc) rc = sf_pack_chunk_decode_imputed(d, p, 0, stored, vals, NULL, NULL, got, &e);
    size_t set = 0;
    for (size_t k = 0; k < sizeof got; k++) set += got[k] != 0;
    CHECK(in->version == 1 && !in->imputed && rc == 0 && set == 0, "plain: version %u, counts %p, rc %d, %zu flags",
          in->version, (const void *)in->imputed, rc, set);
    free(stored);
    sf_pack_dctx_free(d);
    sf_pack_close(p);
    unlink(path);
}

// Times a file may hold though pack writes none such: epoch seconds at
// both ends of int64, whose microseconds and steps overflow int64. The
// writer's and reader's steps saturate, and training with time features and
// a --max-gap beyond int64 runs (under UBSan: without overflow).
static void test_extreme_times(const char *seqfeed, const char *dir) {
    enum { N = 400 };
    static float rows[N * 2];
    static int64_t time[N];
    for (size_t r = 0; r < N; r++) {
        rows[2 * r] = (float)(r % 17), rows[2 * r + 1] = (float)uniform();
        time[r] = r < N / 2 ? INT64_MIN + (int64_t)r : INT64_MAX - (int64_t)(N - r);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/extreme.sfpack", dir);
    static const char *const names[] = {"a", "b"};
    sf_err e = {0};
    sf_pack_writer *w;
    sf_pack_writer_opts o = {.ncols = 2, .col_names = names, .chunk_rows = 64, .level = 1,
                             .filter = SF_FILTER_DELTA_SHUFFLE, .time_column = "t", .time_kind = SF_TIME_EPOCH_S};
    int rc = sf_pack_writer_open(&w, path, &o, &e);
    if (!rc) rc = sf_pack_writer_rows_at(w, rows, time, NULL, N, &e);
    if (!rc) rc = sf_pack_writer_finish(w, &e);
    CHECK(rc == 0, "extreme times: %s", e.msg);
    sf_pack *p;
    if (rc || sf_pack_open(&p, path, &e)) {
        CHECK(0, "extreme times: open: %s", e.msg);
        return;
    }
    CHECK(sf_pack_verify(p, NULL, NULL, &e) == 0, "extreme times: verify: %s", e.msg);
    CHECK(sf_pack_chunk_max_step(p, (N / 2) / 64) == INT64_MAX, "extreme times: the jump's step %lld",
          (long long)sf_pack_chunk_max_step(p, (N / 2) / 64));
    sf_series *seg = NULL;
    uint64_t nseg = 0;
    rc = sf_pack_segments(p, 1, &seg, &nseg, &e);
    CHECK(rc == 0 && nseg == 2 && seg[1].first_row == N / 2, "extreme times: %llu segments: %s",
          (unsigned long long)nseg, e.msg);
    free(seg);
    sf_pack_close(p);
    run("cd '%s' && '%s' train --data extreme.sfpack --features a,b --targets a --time-features hour,weekday,yearday "
        "--model lstm:4,dense --window 8 --batch-size 8 --epochs 1 --max-steps 4 --gpus none --val-split 0 -q "
        "--checkpoint-dir ck1 && '%s' train --data extreme.sfpack --features a,b --targets a --time-features hour "
        "--max-gap 1e300s --model lstm:4,dense --window 8 --batch-size 8 --epochs 1 --max-steps 4 --gpus none "
        "--val-split 0 -q --checkpoint-dir ck2", dir, seqfeed, seqfeed);
}

int main(void) {
    const char *srcdir = getenv("SRCDIR"), *seqfeed = getenv("SEQFEED");
    if (!srcdir || !seqfeed) {
        fprintf(stderr, "SRCDIR and SEQFEED must be set (meson test sets them)\n");
        return 1;
    }
    double t0 = sf_now();
    char *dir = scratch_dir("roundtrip");
    test_bundled(srcdir, dir);
    test_generated(dir);
    test_cli(seqfeed, srcdir, dir);
    remove_dir(dir);
    dir = scratch_dir("writer");
    test_writer_api(dir);
    test_times(dir);
    test_imputed(dir);
    test_extreme_times(seqfeed, dir);
    remove_dir(dir);
    printf("%.1f s\n", sf_now() - t0);
    return TEST_EXIT();
}
