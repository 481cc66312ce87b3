// Arrow C streams into .sfpack (pack/arrow.c), built by hand in C with no
// Arrow library (arrow_build.h): `test_arrow CASE` runs one case (meson
// test arrow-CASE). An accepted stream is read back through the reader and
// every value, time, line, series and category compared with what the
// columns hold; a refused one must say what (the row, the column, the flag
// that helps) and leave no output. Every case checks that the schema, each
// batch and the stream were released exactly once.
#include <dirent.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pack/internal.h"
#include "tests/arrow/arrow_build.h"
#include "tests/common.h"

#define N(a) (int64_t)(sizeof(a) / sizeof *(a))

static char dir[] = "/tmp/sfarrow.XXXXXX";
static char out[64];
static char notes[4096];

static void on_note(void *arg, const char *text) {
    (void)arg;
    size_t n = strlen(notes);
    snprintf(notes + n, sizeof notes - n, "%s\n", text);
}

static sf_arrow_pack_opts defaults(void) {
    return (sf_arrow_pack_opts){.name = "s", .missing = SF_MISSING_ERROR, .note = on_note,
                                .pack = {.level = 1, .filter = SF_FILTER_DELTA_SHUFFLE, .chunk_rows = 4}};
}

static void check_outputs(bool want_out) { check_pack_outputs(dir, out, want_out); }

static int pack(struct ArrowArrayStream s, const sf_arrow_pack_opts *o, sf_arrow_pack_stats *st, sf_err *e) {
    notes[0] = 0;
    *e = (sf_err){0};
    int rc = sf_arrow_pack(&s, out, o, st, e);
    CHECK(s.release == NULL, "the caller's stream was not moved out (release still set)");
    CHECK(ab_live == 0, "%d schemas, arrays or streams not released", ab_live);
    return rc;
}

// Packs and expects failure with code and a message holding every phrase.
static char rejected[sizeof(sf_err)];  // the last reject's message

__attribute__((sentinel)) static void reject(struct ArrowArrayStream s, const sf_arrow_pack_opts *o, int code, ...) {
    sf_err e = {0};
    sf_arrow_pack_stats st;
    int rc = pack(s, o, &st, &e);
    snprintf(rejected, sizeof rejected, "%s", e.msg);
    CHECK(rc == code, "return code %d, expected %d (message: %s)", rc, code, e.msg);
    va_list ap;
    va_start(ap, code);
    for (const char *phrase; (phrase = va_arg(ap, const char *));)
        CHECK(strstr(e.msg, phrase), "message \"%s\" does not contain \"%s\"", e.msg, phrase);
    va_end(ap);
    check_outputs(false);
    if (rc == 0) unlink(out);
}

typedef struct {
    sf_pack *p;
    const sf_pack_info *in;
    float *rows;  // row-major
    int64_t *time, *line;
    uint8_t *imputed;  // row-major
} loaded;

static bool load(loaded *l) {
    sf_err e = {0};
    *l = (loaded){0};
    if (sf_pack_open(&l->p, out, &e)) {
        CHECK(0, "sf_pack_open: %s", e.msg);
        return false;
    }
    CHECK(sf_pack_verify(l->p, NULL, NULL, &e) == 0, "verify: %s", e.msg);
    const sf_pack_info *in = l->in = sf_pack_get_info(l->p);
    size_t n = (size_t)in->nrows, nc = in->ncols;
    l->rows = malloc(n * nc * sizeof *l->rows);
    l->time = malloc(n * sizeof *l->time);
    l->line = malloc(n * sizeof *l->line);
    l->imputed = malloc(n * nc);
    void *stored = malloc(sf_pack_max_stored_size(l->p));
    float *vals = malloc((size_t)in->chunk_rows * nc * sizeof *vals);
    int64_t *t = malloc(in->chunk_rows * sizeof *t), *li = malloc(in->chunk_rows * sizeof *li);
    uint8_t *imp = malloc((size_t)in->chunk_rows * nc);
    sf_pack_dctx *d = sf_pack_dctx_create();
    bool ok = l->rows && l->time && l->line && l->imputed && stored && vals && t && li && imp && d;
    for (uint64_t i = 0; ok && i < in->nchunks; i++) {
        sf_chunk c = sf_pack_chunk_locate(l->p, i);
        if (sf_pack_chunk_read(l->p, i, stored, &e) ||
            sf_pack_chunk_decode_imputed(d, l->p, i, stored, vals, in->time_kind ? t : NULL, in->has_lines ? li : NULL,
                                         imp, &e)) {
            CHECK(0, "chunk %llu: %s", (unsigned long long)i, e.msg);
            ok = false;
            break;
        }
        for (uint32_t r = 0; r < c.rows; r++) {
            for (uint32_t k = 0; k < nc; k++) {
                l->rows[(c.first_row + r) * nc + k] = vals[(size_t)k * c.rows + r];
                l->imputed[(c.first_row + r) * nc + k] = imp[(size_t)k * c.rows + r];
            }
            l->time[c.first_row + r] = in->time_kind ? t[r] : 0;
            l->line[c.first_row + r] = in->has_lines ? li[r] : 0;
        }
    }
    free(stored), free(vals), free(t), free(li), free(imp);
    sf_pack_dctx_free(d);
    return ok;
}

static void unload(loaded *l) {
    free(l->rows), free(l->time), free(l->line), free(l->imputed);
    sf_pack_close(l->p);
    unlink(out);
}

static bool same_float(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

// Packs, expects success with the columns' names and values (row-major),
// and leaves the file loaded.
static bool accept(struct ArrowArrayStream s, const sf_arrow_pack_opts *o, int ncols, const char *const *names,
                   int64_t nrows, const float *vals, loaded *l, sf_arrow_pack_stats *st) {
    sf_err e;
    int rc = pack(s, o, st, &e);
    CHECK(rc == 0, "pack failed (%d): %s", rc, e.msg);
    check_outputs(rc == 0);
    if (rc || !load(l)) return false;
    CHECK(l->in->ncols == (uint32_t)ncols && l->in->nrows == (uint64_t)nrows && st->rows == (uint64_t)nrows,
          "%u columns and %llu rows, expected %d and %lld", l->in->ncols, (unsigned long long)l->in->nrows, ncols,
          (long long)nrows);
    if (l->in->ncols != (uint32_t)ncols || l->in->nrows != (uint64_t)nrows) return unload(l), false;
    for (int k = 0; k < ncols; k++)
        CHECK(!strcmp(l->in->col_names[k], names[k]), "column %d is \"%s\", expected \"%s\"", k, l->in->col_names[k],
              names[k]);
    for (int64_t i = 0; i < nrows * ncols; i++)
        CHECK(same_float(l->rows[i], vals[i]), "row %lld column %s: %.9g, expected %.9g", (long long)(i / ncols),
              names[i % ncols], l->rows[i], vals[i]);
    return true;
}

static void check_series(const loaded *l, const char *column, int n, const sf_series *want) {
    const sf_pack_info *in = l->in;
    CHECK(!strcmp(in->series_column, column), "series column \"%s\", expected \"%s\"", in->series_column, column);
    CHECK(in->nseries == (uint64_t)n, "%llu series, expected %d", (unsigned long long)in->nseries, n);
    for (int i = 0; i < n && (uint64_t)i < in->nseries; i++)
        CHECK(!strcmp(in->series[i].name, want[i].name) && in->series[i].first_row == want[i].first_row &&
                  in->series[i].rows == want[i].rows,
              "series %d is \"%s\" at %llu, %llu rows; expected \"%s\" at %llu, %llu rows", i, in->series[i].name,
              (unsigned long long)in->series[i].first_row, (unsigned long long)in->series[i].rows, want[i].name,
              (unsigned long long)want[i].first_row, (unsigned long long)want[i].rows);
}

static void check_lines(const loaded *l, int64_t n, const int64_t *want) {
    CHECK(l->in->has_lines, "the file keeps no lines");
    for (int64_t i = 0; i < n; i++)
        CHECK(l->line[i] == want[i], "row %lld keeps line %lld, expected %lld", (long long)i, (long long)l->line[i],
              (long long)want[i]);
}

#define HOUR 3600000000ll
#define T2020 1577836800000000ll  // 2020-01-01T00:00Z in microseconds

// ---- every type ----

// One batch, six rows in two series: a string series column, a timestamp
// time column, every numeric type, a dictionary categorical column, nulls
// (ffill) and an integer float32 cannot hold.
static void case_types(void) {
    const char *site[] = {"a", "a", "a", "b", "b", "b"};
    int64_t t[] = {0, 1, 2, 0, 1, 1};
    for (int i = 0; i < 6; i++) t[i] = T2020 + t[i] * HOUR;
    uint8_t b[] = {1, 0, 1, 1, 0, 0};
    int8_t i8[] = {-128, 127, 0, 5, -5, 1};
    uint8_t u8[] = {255, 0, 1, 2, 3, 4};
    int16_t i16[] = {-32768, 32767, 0, 1, 2, 3};
    uint16_t u16[] = {65535, 0, 1, 2, 3, 4};
    int32_t i32[] = {INT32_MIN, 16777215, 0, 16777216, -16777216, 7};  // all exact
    uint32_t u32[] = {UINT32_MAX, 0, 1, 2, 3, 16777217};
    int64_t i64[] = {INT64_MIN, INT64_MAX, -1, 0, 1, 1ll << 40};
    uint64_t u64[] = {UINT64_MAX, 0, 1, 2, 3, 4};
    uint16_t f16[] = {0x3c00, 0xc000, 0x3800, 0x7bff, 0x0001, 0x8000};  // 1, -2, 0.5, 65504, 2^-24, -0
    float f32[] = {1.5f, -0.25f, 3e38f, 1e-40f, 0.1f, 2};
    double f64[] = {0.1, NAN, 0, 3.4028235e38, -3.4028235e38, 1e-50};  // row 2 null
    int32_t sky[] = {1, 2, 1, 0, 0, 2};
    const char *skies[] = {"fog", "sun", "rain"};
    struct ArrowSchema f[] = {
        ab_field("u", "site", NULL), ab_field("tsu:", "t", NULL), ab_field("b", "b", NULL), ab_field("c", "i8", NULL),
        ab_field("C", "u8", NULL), ab_field("s", "i16", NULL), ab_field("S", "u16", NULL),
        ab_field("i", "i32", NULL), ab_field("I", "u32", NULL), ab_field("l", "i64", NULL), ab_field("L", "u64", NULL),
        ab_field("e", "f16", NULL), ab_field("f", "f32", NULL), ab_field("g", "f64", NULL),
        ab_field("i", "sky", (struct ArrowSchema[]){ab_field("u", "", NULL)}),
    };
    struct ArrowArray c[] = {
        ab_strings(6, site, NULL, 0, false), ab_fixed(8, 6, t, NULL, 0), ab_bool(6, b, NULL, 0),
        ab_fixed(1, 6, i8, NULL, 0), ab_fixed(1, 6, u8, NULL, 0), ab_fixed(2, 6, i16, NULL, 0),
        ab_fixed(2, 6, u16, NULL, 0), ab_fixed(4, 6, i32, NULL, 0), ab_fixed(4, 6, u32, NULL, 0),
        ab_fixed(8, 6, i64, NULL, 0), ab_fixed(8, 6, u64, NULL, 0), ab_fixed(2, 6, f16, NULL, 0),
        ab_fixed(4, 6, f32, NULL, 0), ab_fixed(8, 6, f64, "..x...", 0),
        ab_dict(6, sky, NULL, 0, ab_strings(3, skies, NULL, 0, false)),
    };
    sf_arrow_pack_opts o = defaults();
    o.series_column = "site", o.categorical = "sky", o.missing = SF_MISSING_FFILL;
    const char *names[] = {"b", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "f32", "f64", "sky"};
    // f64: row 1 NaN and row 2 null, both filled from row 0; rows 3 and 4 beyond FLT_MAX by less than half
    // an ulp (rounded to it, as strtof rounds); 1e-50 below the smallest float.
    float f64_want[] = {0.1f, 0.1f, 0.1f, FLT_MAX, -FLT_MAX, 0.0f};
    float h[] = {1, -2, 0.5f, 65504, 0x1p-24f, -0.0f};
    float codes[] = {0, 1, 0, 2, 2, 1};  // in order of first appearance: sun 0, rain 1, fog 2
    float want[6][13];
    for (int r = 0; r < 6; r++) {
        float v[] = {b[r], i8[r], u8[r], i16[r], u16[r], (float)i32[r], (float)u32[r], (float)i64[r], (float)u64[r],
                     h[r], f32[r], f64_want[r], codes[r]};
        memcpy(want[r], v, sizeof v);
    }
    loaded l;
    sf_arrow_pack_stats st;
    if (!accept(ab_stream(ab_struct(N(f), f), 1, (struct ArrowArray[]){ab_batch(6, 0, N(c), c)}, -1), &o, 13, names,
                6, &want[0][0], &l, &st))
        return;
    check_series(&l, "site", 2, (sf_series[]){{0, 3, "a"}, {3, 3, "b"}});
    check_lines(&l, 6, (int64_t[]){1, 2, 3, 4, 5, 6});
    const sf_pack_info *in = l.in;
    CHECK(!strcmp(in->time_column, "t") && in->time_kind == SF_TIME_ISO, "time column \"%s\" kind %d",
          in->time_column, in->time_kind);
    CHECK(in->time_parts == (SF_TIME_CLOCK | SF_TIME_SECONDS), "time parts %u", in->time_parts);
    for (int r = 0; r < 6; r++) CHECK(l.time[r] == t[r], "row %d: time %lld, expected %lld", r, (long long)l.time[r], (long long)t[r]);
    const sf_category *cat = sf_pack_category(in, 12);
    CHECK(cat && cat->nvalues == 3 && !strcmp(cat->values[0], "sun") && !strcmp(cat->values[1], "rain") &&
              !strcmp(cat->values[2], "fog"), "categories of sky");
    CHECK(in->imputed && in->imputed[11] == 2 && st.values_filled == 2, "f64 imputed %llu, filled %llu",
          in->imputed ? (unsigned long long)in->imputed[11] : 0ull, (unsigned long long)st.values_filled);
    CHECK(l.imputed[1 * 13 + 11] && l.imputed[2 * 13 + 11] && !l.imputed[0 * 13 + 11], "imputed flags of f64");
    CHECK(in->stats[0].min == 0 && in->stats[0].max == 1 && in->stats[1].min == -128 && in->stats[8].max == 0x1p64,
          "statistics");
    CHECK(st.nseries == 2 && st.batches == 1, "stats: %llu series, %llu batches", (unsigned long long)st.nseries,
          (unsigned long long)st.batches);
    // Changed by float32: u32's 4294967295 and 16777217, i64's INT64_MAX, u64's UINT64_MAX; i32's are exact.
    CHECK(strstr(notes, "warning: column \"u32\": float32 holds integers exactly only up to 16777216 (2^24), and "
                        "packing changed 2 of its values, by up to 1 (row 1: 4294967295 is stored as 4294967296)"),
          "notes: %s", notes);
    CHECK(strstr(notes, "column \"i64\"") && strstr(notes, "column \"u64\"") && !strstr(notes, "column \"i32\""),
          "notes: %s", notes);
    CHECK(strstr(notes, "warning: at row 6 the time repeats within a series"), "notes: %s", notes);
    unload(&l);
}

// Sliced arrays: the batch's offset and each column's own, over two batches
// whose rows continue the lines; a large_string series column and bools.
static void case_slices(void) {
    struct ArrowSchema f[] = {ab_field("U", "id", NULL), ab_field("f", "x", NULL), ab_field("b", "flag", NULL)};
    const char *ids[] = {"junk", "junk", "p", "p", "q"};
    float x[] = {-1, -1, -1, 10, 11, 12, 13};
    uint8_t fl[] = {1, 1, 0, 1, 0, 1};
    // Batch 1: rows from batch offset 1; id offset 1 (so ids[2..]), x offset 2, flag offset 0.
    struct ArrowArray c1[] = {ab_strings(5, ids, NULL, 1, true), ab_fixed(4, 7, x, NULL, 2), ab_bool(6, fl, NULL, 0)};
    struct ArrowArray b1 = ab_batch(3, 1, 3, c1);  // logical rows: ids[2..4], x[3..5], fl[1..3]
    const char *ids2[] = {"q", "r"};
    float x2[] = {20, 21};
    uint8_t fl2[] = {0, 0};
    struct ArrowArray c2[] = {ab_strings(2, ids2, NULL, 0, true), ab_fixed(4, 2, x2, NULL, 0), ab_bool(2, fl2, NULL, 0)};
    struct ArrowArray b2 = ab_batch(2, 0, 3, c2);
    sf_arrow_pack_opts o = defaults();
    o.series_column = "id";
    float want[] = {10, 1, 11, 0, 12, 1, 20, 0, 21, 0};
    loaded l;
    sf_arrow_pack_stats st;
    if (!accept(ab_stream(ab_struct(3, f), 2, (struct ArrowArray[]){b1, b2}, -1), &o, 2,
                (const char *[]){"x", "flag"}, 5, want, &l, &st))
        return;
    check_series(&l, "id", 3, (sf_series[]){{0, 2, "p"}, {2, 2, "q"}, {4, 1, "r"}});
    check_lines(&l, 5, (int64_t[]){1, 2, 3, 4, 5});
    CHECK(st.batches == 2, "%llu batches", (unsigned long long)st.batches);
    unload(&l);
}

// ---- missing values ----

static struct ArrowArrayStream gappy(void) {
    struct ArrowSchema f[] = {ab_field("g", "x", NULL), ab_field("i", "n", NULL)};
    double x[] = {1, 2, 0, 4, NAN};
    int32_t n[] = {5, 6, 7, 8, 9};
    struct ArrowArray c[] = {ab_fixed(8, 5, x, "..x..", 0), ab_fixed(4, 5, n, NULL, 0)};
    return ab_stream(ab_struct(2, f), 1, (struct ArrowArray[]){ab_batch(5, 0, 2, c)}, -1);
}

static void case_missing(void) {
    sf_arrow_pack_opts o = defaults();
    reject(gappy(), &o, SF_EFORMAT, "s: row 3: missing value (null, NaN or an infinity) in column \"x\"",
           "--missing drop or --missing ffill", NULL);
    o.missing = SF_MISSING_DROP;
    loaded l;
    sf_arrow_pack_stats st;
    if (accept(gappy(), &o, 2, (const char *[]){"x", "n"}, 3, (float[]){1, 5, 2, 6, 4, 8}, &l, &st)) {
        check_lines(&l, 3, (int64_t[]){1, 2, 4});  // the stream's own rows
        CHECK(st.rows_dropped == 2, "%llu dropped", (unsigned long long)st.rows_dropped);
        unload(&l);
    }
    o.missing = SF_MISSING_FFILL;
    if (accept(gappy(), &o, 2, (const char *[]){"x", "n"}, 5, (float[]){1, 5, 2, 6, 2, 7, 4, 8, 4, 9}, &l, &st)) {
        CHECK(l.in->imputed && l.in->imputed[0] == 2 && l.in->imputed[1] == 0, "imputed counts");
        unload(&l);
    }
    // Nothing before a null to fill it from.
    struct ArrowSchema f[] = {ab_field("f", "x", NULL)};
    float x[] = {0, 1};
    struct ArrowArray c[] = {ab_fixed(4, 2, x, "x.", 0)};
    reject(ab_stream(ab_struct(1, f), 1, (struct ArrowArray[]){ab_batch(2, 0, 1, c)}, -1), &o, SF_EFORMAT,
           "s: row 1: missing value in column \"x\" with no earlier row in this series", "--missing drop", NULL);
    // A null time: dropped with its row, else an error (ffill does not make times up).
    struct ArrowSchema g[] = {ab_field("tdD", "day", NULL), ab_field("f", "x", NULL)};
    int32_t days[] = {18262, 0, 18264};
    float y[] = {1, 2, 3};
    struct ArrowArray d[] = {ab_fixed(4, 3, days, ".x.", 0), ab_fixed(4, 3, y, NULL, 0)};
    reject(ab_stream(ab_struct(2, g), 1, (struct ArrowArray[]){ab_batch(3, 0, 2, d)}, -1), &o, SF_EFORMAT,
           "s: row 2: the time column \"day\" is null", NULL);
    // A float64 beyond float32's range (at or past the midpoint above FLT_MAX) is no missing value.
    double huge[] = {1, -0x1.ffffffp127};
    struct ArrowArray hg[] = {ab_fixed(8, 2, huge, NULL, 0)};
    reject(ab_stream(ab_struct(1, (struct ArrowSchema[]){ab_field("g", "x", NULL)}), 1,
                     (struct ArrowArray[]){ab_batch(2, 0, 1, hg)}, -1),
           &o, SF_EFORMAT, "s: row 2: value -3.40282357e+38 in column \"x\" is out of float32 range", NULL);
    // All rows dropped.
    o.missing = SF_MISSING_DROP;
    struct ArrowArray e[] = {ab_fixed(4, 2, x, "xx", 0)};
    reject(ab_stream(ab_struct(1, (struct ArrowSchema[]){ab_field("f", "x", NULL)}), 1,
                     (struct ArrowArray[]){ab_batch(2, 0, 1, e)}, -1),
           &o, SF_EFORMAT, "no rows left to pack (all 2 dropped for missing values or series ids)", NULL);
}

// ---- series, times, options ----

static void case_series(void) {
    const char *ids[] = {"a", "a", "b", "a"};
    float x[] = {1, 2, 3, 4};
    sf_arrow_pack_opts o = defaults();
    o.series_column = "site";
    struct ArrowArray c[] = {ab_strings(4, ids, NULL, 0, false), ab_fixed(4, 4, x, NULL, 0)};
    loaded l;
    sf_arrow_pack_stats st;
    // A series that comes back is regrouped (case interleaved tests more).
    if (accept(ab_stream(ab_struct(2, (struct ArrowSchema[]){ab_field("u", "site", NULL), ab_field("f", "x", NULL)}),
                         1, (struct ArrowArray[]){ab_batch(4, 0, 2, c)}, -1),
               &o, 1, (const char *[]){"x"}, 4, (float[]){1, 2, 4, 3}, &l, &st)) {
        check_series(&l, "site", 2, (sf_series[]){{0, 3, "a"}, {3, 1, "b"}});
        check_lines(&l, 4, (int64_t[]){1, 2, 4, 3});
        CHECK(st.regrouped && st.nseries == 2, "regrouped %d, %llu series", st.regrouped,
              (unsigned long long)st.nseries);
        unload(&l);
    }
    // Integer ids, as text; a null id refused.
    int64_t num[] = {7, 7, -3};
    struct ArrowArray d[] = {ab_fixed(8, 3, num, NULL, 0), ab_fixed(4, 3, x, NULL, 0)};
    if (accept(ab_stream(ab_struct(2, (struct ArrowSchema[]){ab_field("l", "site", NULL), ab_field("f", "x", NULL)}),
                         1, (struct ArrowArray[]){ab_batch(3, 0, 2, d)}, -1),
               &o, 1, (const char *[]){"x"}, 3, x, &l, &st)) {
        check_series(&l, "site", 2, (sf_series[]){{0, 2, "7"}, {2, 1, "-3"}});
        unload(&l);
    }
    // string_view ids (Polars'), inline (12 bytes or fewer) and in a data
    // buffer, from an offset; a view past its data buffer refused.
    const char *views[] = {"skipped", "station-0001-north", "station-0001-north", "s2", "station-0001-north"};
    struct ArrowArray v[] = {ab_views(5, views, NULL, 1), ab_fixed(4, 4, x, NULL, 0)};
    if (accept(ab_stream(ab_struct(2, (struct ArrowSchema[]){ab_field("vu", "site", NULL), ab_field("f", "x", NULL)}),
                         1, (struct ArrowArray[]){ab_batch(4, 0, 2, v)}, -1),
               &o, 1, (const char *[]){"x"}, 4, (float[]){1, 2, 4, 3}, &l, &st)) {
        check_series(&l, "site", 2, (sf_series[]){{0, 3, "station-0001-north"}, {3, 1, "s2"}});
        unload(&l);
    }
    struct ArrowArray bad[] = {ab_views(2, views + 1, NULL, 0), ab_fixed(4, 2, x, NULL, 0)};
    uint8_t *view1 = (uint8_t *)bad[0].buffers[1] + 16;
    memcpy(view1 + 12, &(int32_t){30}, 4);  // offset 30 of a data buffer of 36 bytes, for 18
    reject(ab_stream(ab_struct(2, (struct ArrowSchema[]){ab_field("vu", "site", NULL), ab_field("f", "x", NULL)}), 1,
                     (struct ArrowArray[]){ab_batch(2, 0, 2, bad)}, -1),
           &o, SF_EFORMAT, "row 2: column \"site\": a string view of 18 bytes at offset 30 of data buffer 0 is not a "
           "text (the array has 1 data buffers)", NULL);
    struct ArrowArray g[] = {ab_fixed(8, 3, num, ".x.", 0), ab_fixed(4, 3, x, NULL, 0)};
    reject(ab_stream(ab_struct(2, (struct ArrowSchema[]){ab_field("l", "site", NULL), ab_field("f", "x", NULL)}), 1,
                     (struct ArrowArray[]){ab_batch(3, 0, 2, g)}, -1),
           &o, SF_EFORMAT, "s: row 2: the series column \"site\" is null", "--missing drop", NULL);
    // --missing drop leaves such a row out, as a row missing a value.
    struct ArrowArray dropped[] = {ab_fixed(8, 3, num, ".x.", 0), ab_fixed(4, 3, x, NULL, 0)};
    o.missing = SF_MISSING_DROP;
    if (accept(ab_stream(ab_struct(2, (struct ArrowSchema[]){ab_field("l", "site", NULL), ab_field("f", "x", NULL)}),
                         1, (struct ArrowArray[]){ab_batch(3, 0, 2, dropped)}, -1),
               &o, 1, (const char *[]){"x"}, 2, (float[]){1, 3}, &l, &st)) {
        check_series(&l, "site", 2, (sf_series[]){{0, 1, "7"}, {1, 1, "-3"}});
        CHECK(st.rows_dropped == 1, "%llu rows dropped", (unsigned long long)st.rows_dropped);
        unload(&l);
    }
}

// Two batches with dictionaries of their own: one code per text across them.
static void case_dictionaries(void) {
    struct ArrowSchema f[] = {ab_field("i", "site", (struct ArrowSchema[]){ab_field("u", "", NULL)}),
                              ab_field("i", "sky", (struct ArrowSchema[]){ab_field("U", "", NULL)})};
    const char *sites1[] = {"north", "south"}, *skies1[] = {"sun", "rain"};
    const char *sites2[] = {"east", "south"}, *skies2[] = {"fog", "rain", "sun"};
    int32_t s1[] = {0, 0, 1}, k1[] = {1, 0, 1};
    int32_t s2[] = {1, 0}, k2[] = {0, 2};
    struct ArrowArray c1[] = {ab_dict(3, s1, NULL, 0, ab_strings(2, sites1, NULL, 0, false)),
                              ab_dict(3, k1, NULL, 0, ab_strings(2, skies1, NULL, 0, true))};
    struct ArrowArray c2[] = {ab_dict(2, s2, NULL, 0, ab_strings(2, sites2, NULL, 0, false)),
                              ab_dict(2, k2, NULL, 0, ab_strings(3, skies2, NULL, 0, true))};
    sf_arrow_pack_opts o = defaults();
    o.series_column = "site", o.categorical = "sky";
    loaded l;
    sf_arrow_pack_stats st;
    // rain 0, sun 1, fog 2.
    if (!accept(ab_stream(ab_struct(2, f), 2, (struct ArrowArray[]){ab_batch(3, 0, 2, c1), ab_batch(2, 0, 2, c2)}, -1),
                &o, 1, (const char *[]){"sky"}, 5, (float[]){0, 1, 0, 2, 1}, &l, &st))
        return;
    check_series(&l, "site", 3, (sf_series[]){{0, 2, "north"}, {2, 2, "south"}, {4, 1, "east"}});
    const sf_category *cat = sf_pack_category(l.in, 0);
    CHECK(cat && cat->nvalues == 3 && !strcmp(cat->values[0], "rain") && !strcmp(cat->values[2], "fog"), "categories");
    unload(&l);
    // Dictionaries of integers (pandas' categories of int ids): the ids
    // written out, as integer columns are; kept as a value, refused.
    struct ArrowSchema g[] = {ab_field("c", "site", (struct ArrowSchema[]){ab_field("l", "", NULL)}),
                              ab_field("i", "sky", (struct ArrowSchema[]){ab_field("S", "", NULL)})};
    int64_t ids[] = {-7, 120};
    uint16_t codes[] = {9, 65535};
    int8_t si[] = {1, 1, 0};
    int32_t ki[] = {1, 0, 1};
    struct ArrowArray ai[] = {ab_dict(3, (int32_t[]){0, 0, 0}, NULL, 0, ab_fixed(8, 2, ids, NULL, 0)),
                              ab_dict(3, ki, NULL, 0, ab_fixed(2, 2, codes, NULL, 0))};
    ab_array_priv *p = ai[0].private_data;  // int8 indices, not ab_dict's int32
    memcpy(p->bufs[1], si, sizeof si);
    if (accept(ab_stream(ab_struct(2, g), 1, (struct ArrowArray[]){ab_batch(3, 0, 2, ai)}, -1), &o, 1,
               (const char *[]){"sky"}, 3, (float[]){0, 1, 0}, &l, &st)) {
        check_series(&l, "site", 2, (sf_series[]){{0, 2, "120"}, {2, 1, "-7"}});
        cat = sf_pack_category(l.in, 0);
        CHECK(cat && cat->nvalues == 2 && !strcmp(cat->values[0], "65535") && !strcmp(cat->values[1], "9"),
              "integer categories");
        unload(&l);
    }
    sf_arrow_pack_opts v = defaults();
    struct ArrowArray one[] = {ab_dict(1, (int32_t[]){0}, NULL, 0, ab_fixed(8, 1, ids, NULL, 0))};
    reject(ab_stream(ab_struct(1, (struct ArrowSchema[]){ab_field("i", "code", (struct ArrowSchema[]){
                                                                          ab_field("l", "", NULL)})}),
                     1, (struct ArrowArray[]){ab_batch(1, 0, 1, one)}, -1),
           &v, SF_EUSAGE, "column \"code\" is dictionary<int64>: name it as the series column (--series-column) or a "
           "categorical one (--categorical), cast it to float64", NULL);
}

static void case_times(void) {
    // The first kept time found (date32, a date); a second time column refused.
    int32_t days[] = {18262, 18263, 18263};
    float x[] = {1, 2, 3};
    sf_arrow_pack_opts o = defaults();
    loaded l;
    sf_arrow_pack_stats st;
    struct ArrowArray c[] = {ab_fixed(4, 3, x, NULL, 0), ab_fixed(4, 3, days, NULL, 0)};
    if (accept(ab_stream(ab_struct(2, (struct ArrowSchema[]){ab_field("f", "x", NULL), ab_field("tdD", "day", NULL)}),
                         1, (struct ArrowArray[]){ab_batch(3, 0, 2, c)}, -1),
               &o, 1, (const char *[]){"x"}, 3, x, &l, &st)) {
        CHECK(!strcmp(l.in->time_column, "day") && l.in->time_parts == 0, "time column \"%s\", parts %u",
              l.in->time_column, l.in->time_parts);
        CHECK(l.time[0] == T2020 && l.time[2] == T2020 + 24 * HOUR, "times %lld %lld", (long long)l.time[0],
              (long long)l.time[2]);
        CHECK(strstr(notes, "warning: at row 3 the time repeats"), "notes: %s", notes);
        unload(&l);
    }
    int64_t ms[] = {1577836800000, 1577836800001, 1577836800002};
    struct ArrowArray d[] = {ab_fixed(4, 3, days, NULL, 0), ab_fixed(8, 3, ms, NULL, 0), ab_fixed(4, 3, x, NULL, 0)};
    reject(ab_stream(ab_struct(3, (struct ArrowSchema[]){ab_field("tdD", "day", NULL), ab_field("tdm", "at", NULL),
                                                         ab_field("f", "x", NULL)}),
                     1, (struct ArrowArray[]){ab_batch(3, 0, 3, d)}, -1),
           &o, SF_EUSAGE, "column \"at\" is a time (date64) and \"day\" is the time column", "--drop-columns", NULL);
    // Nanoseconds with a zone: cut to microseconds (said), written with Z.
    int64_t ns[] = {1577836800000000001, 1577836800000001000, -1};
    o.time_column = "t";
    struct ArrowArray e[] = {ab_fixed(8, 3, ns, NULL, 0), ab_fixed(4, 3, x, NULL, 0)};
    if (accept(ab_stream(ab_struct(2, (struct ArrowSchema[]){ab_field("tsn:UTC", "t", NULL), ab_field("f", "x", NULL)}),
                         1, (struct ArrowArray[]){ab_batch(2, 0, 2, e)}, -1),
               &o, 1, (const char *[]){"x"}, 2, x, &l, &st)) {
        CHECK(l.time[0] == T2020 && l.time[1] == T2020 + 1, "times %lld %lld", (long long)l.time[0], (long long)l.time[1]);
        CHECK(l.in->time_parts == (SF_TIME_CLOCK | SF_TIME_SECONDS | SF_TIME_ZONE), "parts %u", l.in->time_parts);
        CHECK(strstr(notes, "note: 1 time(s) in the time column \"t\" had digits below a microsecond (the first at row 1)"),
              "notes: %s", notes);
        unload(&l);
    }
    // Going back within a series; before the year 0000.
    int64_t back[] = {100, 50};
    struct ArrowArray g[] = {ab_fixed(8, 2, back, NULL, 0), ab_fixed(4, 2, x, NULL, 0)};
    reject(ab_stream(ab_struct(2, (struct ArrowSchema[]){ab_field("tss:", "t", NULL), ab_field("f", "x", NULL)}), 1,
                     (struct ArrowArray[]){ab_batch(2, 0, 2, g)}, -1),
           &o, SF_EFORMAT, "s: row 2: time 1970-01-01T00:00:50 is before 1970-01-01T00:01:40 (row 1)",
           "times must not go back within a series", NULL);
    int64_t far[] = {0, -62167219201};
    struct ArrowArray h[] = {ab_fixed(8, 2, far, NULL, 0), ab_fixed(4, 2, x, NULL, 0)};
    reject(ab_stream(ab_struct(2, (struct ArrowSchema[]){ab_field("tss:", "t", NULL), ab_field("f", "x", NULL)}), 1,
                     (struct ArrowArray[]){ab_batch(2, 0, 2, h)}, -1),
           &o, SF_EFORMAT, "s: row 2: time -62167219201 (timestamp[s]) in the time column \"t\" is outside the years "
           "0000 to 9999", NULL);
    // A named time column that is not a time.
    struct ArrowArray k[] = {ab_fixed(8, 2, back, NULL, 0), ab_fixed(4, 2, x, NULL, 0)};
    reject(ab_stream(ab_struct(2, (struct ArrowSchema[]){ab_field("l", "t", NULL), ab_field("f", "x", NULL)}), 1,
                     (struct ArrowArray[]){ab_batch(2, 0, 2, k)}, -1),
           &o, SF_EUSAGE, "--time-column names \"t\", which is int64: a time column is an Arrow timestamp or date", NULL);
}

// --columns (order), --drop-columns, a text column left over, unknown names.
static void case_options(void) {
    const char *txt[] = {"u", "v"};
    float x[] = {1, 2}, y[] = {3, 4};
    int16_t code[] = {9, 8};
#define STREAM()                                                                                                       \
    ab_stream(ab_struct(4, (struct ArrowSchema[]){ab_field("f", "x", NULL), ab_field("u", "note", NULL),               \
                                                  ab_field("f", "y", NULL), ab_field("s", "code", NULL)}),             \
              1,                                                                                                       \
              (struct ArrowArray[]){ab_batch(2, 0, 4,                                                                  \
                                             (struct ArrowArray[]){ab_fixed(4, 2, x, NULL, 0),                         \
                                                                   ab_strings(2, txt, NULL, 0, false),                 \
                                                                   ab_fixed(4, 2, y, NULL, 0),                         \
                                                                   ab_fixed(2, 2, code, NULL, 0)})},                   \
              -1)
    sf_arrow_pack_opts o = defaults();
    reject(STREAM(), &o, SF_EUSAGE, "s: column \"note\" (string) is text: name it as the series column "
           "(--series-column) or a categorical one (--categorical), or leave it out (--drop-columns)", NULL);
    loaded l;
    sf_arrow_pack_stats st;
    o.columns = "y,code,x";
    if (accept(STREAM(), &o, 3, (const char *[]){"y", "code", "x"}, 2, (float[]){3, 9, 1, 4, 8, 2}, &l, &st)) unload(&l);
    o.columns = NULL, o.drop_columns = "note", o.categorical = "code";
    if (accept(STREAM(), &o, 3, (const char *[]){"x", "y", "code"}, 2, (float[]){1, 3, 0, 2, 4, 1}, &l, &st)) {
        const sf_category *cat = sf_pack_category(l.in, 2);
        CHECK(cat && cat->nvalues == 2 && !strcmp(cat->values[0], "9") && !strcmp(cat->values[1], "8"),
              "integer categories as text");
        unload(&l);
    }
    o.drop_columns = NULL, o.categorical = "note,x";
    reject(STREAM(), &o, SF_EUSAGE, "--categorical names \"x\", which is float32", NULL);
    o.categorical = NULL, o.series_column = "y";
    reject(STREAM(), &o, SF_EUSAGE, "--series-column names \"y\", which is float32", NULL);
    o.series_column = "nope";
    reject(STREAM(), &o, SF_EUSAGE, "--series-column names \"nope\", which is not a column; the columns are: x, note, "
           "y, code", NULL);
    o.series_column = NULL, o.columns = "x", o.drop_columns = "y";
    reject(STREAM(), &o, SF_EUSAGE, "--columns and --drop-columns exclude each other", NULL);
    o.drop_columns = NULL, o.columns = "note";
    reject(STREAM(), &o, SF_EUSAGE, "column \"note\" (string) is text", NULL);
#undef STREAM
}

// ---- malformed streams ----

static struct ArrowSchema one_float(void) { return ab_struct(1, (struct ArrowSchema[]){ab_field("f", "x", NULL)}); }

static struct ArrowArray floats(int64_t n) {
    float v[8] = {0};
    return ab_fixed(4, n, v, NULL, 0);
}

static void case_malformed(void) {
    sf_arrow_pack_opts o = defaults();
    // The schema: not a struct, no columns, a column without a name, twice the same name, a type pack does not read.
    reject(ab_stream(ab_field("f", "x", NULL), 0, NULL, -1), &o, SF_EFORMAT, "has format \"f\"", "\"+s\"", NULL);
    reject(ab_stream(ab_struct(0, NULL), 0, NULL, -1), &o, SF_EFORMAT, "0 columns", NULL);
    reject(ab_stream(ab_struct(1, (struct ArrowSchema[]){ab_field("f", NULL, NULL)}), 0, NULL, -1), &o, SF_EFORMAT,
           "column 1 has no name", NULL);
    reject(ab_stream(ab_struct(2, (struct ArrowSchema[]){ab_field("f", "x", NULL), ab_field("g", "x", NULL)}), 0, NULL,
                     -1),
           &o, SF_EFORMAT, "column name \"x\" appears twice (columns 1 and 2)", NULL);
    reject(ab_stream(ab_struct(1, (struct ArrowSchema[]){ab_field("d:10,2", "price", NULL)}), 0, NULL, -1), &o,
           SF_EUSAGE, "column \"price\" has type Arrow format \"d:10,2\" (decimal), which pack does not read",
           "--drop-columns", NULL);
    reject(ab_stream(ab_struct(1, (struct ArrowSchema[]){ab_field("vz", "name", NULL)}), 0, NULL, -1), &o, SF_EUSAGE,
           "column \"name\" has type Arrow format \"vz\" (binary_view), which pack does not read",
           "cast it to string (text: a series or categorical column)", NULL);
    reject(ab_stream(ab_struct(1, (struct ArrowSchema[]){ab_field("i", "k", (struct ArrowSchema[]){ab_field("g", "", NULL)})}),
                     0, NULL, -1),
           &o, SF_EUSAGE, "a dictionary of Arrow format \"g\"", NULL);
    // The batches: a column count, lengths, buffers and children that do not match.
    reject(ab_stream(one_float(), 1, (struct ArrowArray[]){ab_batch(2, 0, 0, NULL)}, -1), &o, SF_EFORMAT,
           "batch 1 has 0 columns, the schema 1", NULL);
    reject(ab_stream(one_float(), 1, (struct ArrowArray[]){ab_batch(3, 0, 1, (struct ArrowArray[]){floats(2)})}, -1),
           &o, SF_EFORMAT, "batch 1: column \"x\" has 2 values, fewer than the batch's 3 rows", NULL);
    reject(ab_stream(one_float(), 1, (struct ArrowArray[]){ab_batch(2, 1, 1, (struct ArrowArray[]){floats(2)})}, -1),
           &o, SF_EFORMAT, "fewer than the batch's 3 rows", NULL);
    struct ArrowArray nobuf = floats(2);
    nobuf.buffers[1] = NULL;
    reject(ab_stream(one_float(), 1, (struct ArrowArray[]){ab_batch(2, 0, 1, (struct ArrowArray[]){nobuf})}, -1), &o,
           SF_EFORMAT, "column \"x\"'s array has no values buffer", NULL);
    struct ArrowArray three = floats(2);
    three.n_buffers = 3;
    reject(ab_stream(one_float(), 1, (struct ArrowArray[]){ab_batch(2, 0, 1, (struct ArrowArray[]){three})}, -1), &o,
           SF_EFORMAT, "has 3 buffers and 0 children; its type (float32) has 2 buffers", NULL);
    struct ArrowArray nulls = floats(2);
    nulls.null_count = 1;
    reject(ab_stream(one_float(), 1, (struct ArrowArray[]){ab_batch(2, 0, 1, (struct ArrowArray[]){nulls})}, -1), &o,
           SF_EFORMAT, "has 1 nulls and no validity buffer", NULL);
    struct ArrowArray negative = floats(2);
    negative.offset = -1;
    reject(ab_stream(one_float(), 1, (struct ArrowArray[]){ab_batch(1, 0, 1, (struct ArrowArray[]){negative})}, -1), &o,
           SF_EFORMAT, "offset -1", NULL);
    struct ArrowArray nochild = ab_batch(2, 0, 1, (struct ArrowArray[]){floats(2)});
    struct ArrowArray *kept = nochild.children[0];
    nochild.children[0] = NULL;
    kept->release(kept);
    free(kept);
    reject(ab_stream(one_float(), 1, (struct ArrowArray[]){nochild}, -1), &o, SF_EFORMAT,
           "batch 1: column \"x\" has no array", NULL);
    // Text: offsets going back; a dictionary index outside its dictionary; a dictionary missing.
    const char *t[] = {"ab", "c"};
    struct ArrowArray back = ab_strings(2, t, NULL, 0, false);
    ((int32_t *)back.buffers[1])[2] = 1;  // 0, 2, 1
    o.series_column = "id";
    struct ArrowSchema idf[] = {ab_field("u", "id", NULL), ab_field("f", "x", NULL)};
    reject(ab_stream(ab_struct(2, idf), 1, (struct ArrowArray[]){ab_batch(2, 0, 2, (struct ArrowArray[]){back, floats(2)})},
                     -1),
           &o, SF_EFORMAT, "s: row 2: column \"id\": string offsets 2 to 1 are not a text", NULL);
    int32_t idx[] = {0, 5};
    struct ArrowSchema dictf[] = {ab_field("i", "id", (struct ArrowSchema[]){ab_field("u", "", NULL)}),
                                  ab_field("f", "x", NULL)};
    reject(ab_stream(ab_struct(2, dictf), 1,
                     (struct ArrowArray[]){ab_batch(2, 0, 2, (struct ArrowArray[]){
                                                                 ab_dict(2, idx, NULL, 0, ab_strings(2, t, NULL, 0, false)),
                                                                 floats(2)})},
                     -1),
           &o, SF_EFORMAT, "s: row 2: column \"id\": dictionary index 5 is outside its dictionary of 2 values", NULL);
    struct ArrowSchema dictg[] = {ab_field("i", "id", (struct ArrowSchema[]){ab_field("u", "", NULL)}),
                                  ab_field("f", "x", NULL)};
    reject(ab_stream(ab_struct(2, dictg), 1,
                     (struct ArrowArray[]){ab_batch(2, 0, 2, (struct ArrowArray[]){ab_fixed(4, 2, idx, NULL, 0), floats(2)})},
                     -1),
           &o, SF_EFORMAT, "column \"id\" has no dictionary, and its schema one", NULL);
    o.series_column = NULL;
    // The producer's failures, with its own message; a stream already released.
    reject(ab_stream((struct ArrowSchema){0}, 0, NULL, -1), &o, SF_EIO, "the stream's get_schema failed",
           "the disk is on fire", NULL);
    reject(ab_stream(one_float(), 2, (struct ArrowArray[]){ab_batch(2, 0, 1, (struct ArrowArray[]){floats(2)}),
                                                           ab_batch(2, 0, 1, (struct ArrowArray[]){floats(2)})},
                     1),
           &o, SF_EIO, "the stream's get_next failed at batch 2", "the disk is on fire", NULL);
    reject(ab_stream(one_float(), 0, NULL, -1), &o, SF_EFORMAT, "s: the stream has a schema but no rows", NULL);
    struct ArrowArrayStream gone = {0};
    sf_err e;
    CHECK(sf_arrow_pack(&gone, out, &o, NULL, &e) == SF_EINVAL && strstr(e.msg, "released already"), "%s", e.msg);
    CHECK(sf_arrow_pack(NULL, out, &o, NULL, &e) == SF_EINVAL, "a NULL stream");
}


// ---- series whose rows interleave ----

// Long format sorted by time: nseries series, one row per series per step
// (ids "s0", "s1", ...), in nbatch batches of per rows; x is the row's index
// in the stream, t rises one hour a step. back: a row whose time goes back
// three hours (-1: none).
static struct ArrowArrayStream long_format(int nseries, int nbatch, int per, int back) {
    struct ArrowArray *b = malloc((size_t)nbatch * sizeof *b);
    const char **ids = malloc((size_t)per * sizeof *ids);
    char (*names)[8] = malloc((size_t)nseries * sizeof *names);
    float *x = malloc((size_t)per * sizeof *x);
    int64_t *t = malloc((size_t)per * sizeof *t);
    if (!b || !ids || !names || !x || !t) abort();
    for (int i = 0; i < nseries; i++) snprintf(names[i], sizeof names[i], "s%d", i);
    for (int k = 0; k < nbatch; k++) {
        for (int r = 0; r < per; r++) {
            int row = k * per + r;
            ids[r] = names[row % nseries];
            x[r] = (float)row;
            t[r] = T2020 + (row / nseries) * HOUR - (row == back ? 3 * HOUR : 0);
        }
        struct ArrowArray c[] = {ab_fixed(8, per, t, NULL, 0), ab_strings(per, ids, NULL, 0, false),
                                 ab_fixed(4, per, x, NULL, 0)};
        b[k] = ab_batch(per, 0, 3, c);
    }
    struct ArrowSchema f[] = {ab_field("tsu:UTC", "t", NULL), ab_field("u", "site", NULL), ab_field("f", "x", NULL)};
    struct ArrowArrayStream s = ab_stream(ab_struct(3, f), nbatch, b, -1);
    free(b), free(ids), free(names), free(x), free(t);
    return s;
}

// The stream of long_format packed: series in order of first appearance,
// each one's rows in stream order (x, line and time of each).
static void check_regrouped(const loaded *l, int nseries, int nrows) {
    int per = nrows / nseries, i = 0;
    CHECK(l->in->nseries == (uint64_t)nseries, "%llu series", (unsigned long long)l->in->nseries);
    for (int s = 0; s < nseries && (uint64_t)s < l->in->nseries; s++) {
        char name[8];
        snprintf(name, sizeof name, "s%d", s);
        CHECK(!strcmp(l->in->series[s].name, name) && l->in->series[s].first_row == (uint64_t)(s * per) &&
                  l->in->series[s].rows == (uint64_t)per,
              "series %d is \"%s\" at %llu", s, l->in->series[s].name,
              (unsigned long long)l->in->series[s].first_row);
        for (int j = 0; j < per; j++, i++) {
            int row = j * nseries + s;
            if (l->rows[i] != (float)row || l->line[i] != row + 1 || l->time[i] != T2020 + j * HOUR) {
                CHECK(0, "packed row %d: x %g line %lld time %lld, expected stream row %d", i, l->rows[i],
                      (long long)l->line[i], (long long)l->time[i], row);
                return;
            }
        }
    }
}

static void case_interleaved(void) {
    sf_arrow_pack_opts o = defaults();
    o.series_column = "site";
    loaded l;
    sf_arrow_pack_stats st;
    // 3 series alternating over 4 batches of 12 rows, in memory.
    sf_err e;
    CHECK(pack(long_format(3, 4, 12, -1), &o, &st, &e) == 0, "pack: %s", e.msg);
    check_outputs(true);
    if (load(&l)) {
        check_regrouped(&l, 3, 48);
        unload(&l);
    }
    CHECK(st.regrouped && st.runs == 0 && st.spilled_bytes == 0 && st.rows == 48 && st.nseries == 3,
          "regrouped %d, %llu runs, %llu rows", st.regrouped, (unsigned long long)st.runs,
          (unsigned long long)st.rows);
    CHECK(strstr(notes, "note: the rows of series interleave: pack regrouped them, each series' rows in the order of "
                        "the stream") && strstr(notes, "in memory"), "notes: %s", notes);
    // The least budget: sorted runs spilled beside the output and merged,
    // the same rows; the spill files gone (check_outputs).
    o.memory_budget = SF_REGROUP_MIN_BUDGET;
    o.pack.chunk_rows = 4096;
    CHECK(pack(long_format(3, 6, 9000, -1), &o, &st, &e) == 0, "pack: %s", e.msg);
    check_outputs(true);
    if (load(&l)) {
        check_regrouped(&l, 3, 54000);
        unload(&l);
    }
    CHECK(st.regrouped && st.runs >= 3 && st.spilled_bytes > 0 && st.rows == 54000, "%llu runs, %llu bytes spilled",
          (unsigned long long)st.runs, (unsigned long long)st.spilled_bytes);
    CHECK(strstr(notes, "sorted runs merged in") && strstr(notes, "a larger --memory-budget writes fewer"), "notes: %s",
          notes);
    o.memory_budget = 1000;
    reject(long_format(3, 1, 6, -1), &o, SF_EUSAGE, "--memory-budget 0.001 MB is too small for pack to regroup rows of "
           "1 value(s) and a time: at least 0.25 MB", NULL);
    // A time that goes back within an interleaved series, found in series
    // order after the last row: its row named, and the row before it.
    o.memory_budget = 0;
    o.pack.chunk_rows = 4;
    reject(long_format(3, 2, 6, 7), &o, SF_EFORMAT, "s: row 8: time 2019-12-31T23:00 is before "
           "2020-01-01T01:00 (row 5), the row before it in this series", "sort the rows by time within each series",
           NULL);
}

// --missing ffill takes a series' own row before, across the interleaving:
// a row packed before a series came back, and rows held to be regrouped.
static void case_interleaved_ffill(void) {
    const char *ids[] = {"a", "a", "b", "a", "b", "c"};
    double x[] = {1, 0, 5, 0, 0, 0};
    struct ArrowSchema f[] = {ab_field("u", "site", NULL), ab_field("g", "x", NULL)};
    sf_arrow_pack_opts o = defaults();
    o.series_column = "site", o.missing = SF_MISSING_FFILL;
    struct ArrowArray c1[] = {ab_strings(3, ids, NULL, 0, false), ab_fixed(8, 3, x, ".x.", 0)};
    struct ArrowArray c2[] = {ab_strings(2, ids + 3, NULL, 0, false), ab_fixed(8, 2, x + 3, "xx", 0)};
    loaded l;
    sf_arrow_pack_stats st;
    if (accept(ab_stream(ab_struct(2, f), 2, (struct ArrowArray[]){ab_batch(3, 0, 2, c1), ab_batch(2, 0, 2, c2)}, -1),
               &o, 1, (const char *[]){"x"}, 5, (float[]){1, 1, 1, 5, 5}, &l, &st)) {
        check_series(&l, "site", 2, (sf_series[]){{0, 3, "a"}, {3, 2, "b"}});
        check_lines(&l, 5, (int64_t[]){1, 2, 4, 3, 5});
        for (int r = 0; r < 5; r++)
            CHECK(l.imputed[r] == (r != 0 && r != 3), "row %d: imputed flag %d", r, l.imputed[r]);
        CHECK(st.values_filled == 3 && l.in->imputed && l.in->imputed[0] == 3, "%llu values filled",
              (unsigned long long)st.values_filled);
        unload(&l);
    }
    // A series whose first row misses a value, seen after the rows began to
    // be held: nothing before it in its own series.
    struct ArrowArray c3[] = {ab_strings(6, ids, NULL, 0, false), ab_fixed(8, 6, x, ".x..xx", 0)};
    struct ArrowSchema g[] = {ab_field("u", "site", NULL), ab_field("g", "x", NULL)};
    reject(ab_stream(ab_struct(2, g), 1, (struct ArrowArray[]){ab_batch(6, 0, 2, c3)}, -1), &o, SF_EFORMAT,
           "s: row 6: missing value in column \"x\" with no earlier row in this series to fill it from", NULL);
}

// ---- sources: the files a stream's rows come from ----

// The long_format stream of 48 rows (3 series, 4 batches of 12) said to be
// three files of 20, 0 and 28 rows (one ends inside a batch): each row keeps
// its file and its row there, regrouped as ever; the file lists the names.
static void case_sources(void) {
    const char *files[] = {"d/a.parquet", "d/empty.parquet", "d/c.parquet"};
    uint64_t rows[] = {20, 0, 28};
    sf_arrow_pack_opts o = defaults();
    o.series_column = "site";
    o.sources = files, o.source_rows = rows, o.nsources = 3;
    loaded l;
    sf_arrow_pack_stats st;
    sf_err e;
    CHECK(pack(long_format(3, 4, 12, -1), &o, &st, &e) == 0, "pack: %s", e.msg);
    check_outputs(true);
    if (load(&l)) {
        CHECK(l.in->nsources == 3 && !strcmp(l.in->sources[0], files[0]) && !strcmp(l.in->sources[2], files[2]),
              "%u sources", l.in->nsources);
        for (uint64_t i = 0; i < l.in->nrows; i++) {
            uint64_t row = (uint64_t)l.rows[i], line;  // x is the stream row
            uint32_t src;
            sf_origin_split(l.in, l.line[i], &src, &line);
            uint32_t want_src = row < 20 ? 0 : 2;
            uint64_t want_line = row < 20 ? row + 1 : row - 20 + 1;
            if (src != want_src || line != want_line) {
                CHECK(0, "packed row %llu (stream row %llu): file %u row %llu, expected file %u row %llu",
                      (unsigned long long)i, (unsigned long long)row, src, (unsigned long long)line, want_src,
                      (unsigned long long)want_line);
                break;
            }
        }
        unload(&l);
    }
    // The stream and the files' rows disagree: more rows, or fewer.
    rows[2] = 27;
    reject(long_format(3, 4, 12, -1), &o, SF_EFORMAT, "s: batch 4 ends at row 48 of the stream, past the 47 rows its "
           "3 file(s) hold", NULL);
    rows[2] = 29;
    reject(long_format(3, 4, 12, -1), &o, SF_EFORMAT, "s: the stream ended after 48 rows; its 3 file(s) hold 49",
           NULL);
    // Errors name the file and its row: stream row 8 is row 3 of the second file.
    uint64_t two[] = {5, 7};
    o.source_rows = two, o.nsources = 2;
    reject(long_format(3, 2, 6, 7), &o, SF_EFORMAT, "d/empty.parquet: row 3: time 2019-12-31T23:00 is before "
           "2020-01-01T01:00 (row 5 of d/a.parquet), the row before it in this series", NULL);
    // A series per file, named after it; the site column left out.
    uint64_t halves[] = {24, 24};
    const char *named[] = {"x/north.parquet", "x/south.parquet"};
    o = defaults();
    o.sources = named, o.source_rows = halves, o.nsources = 2, o.series_per_file = true;
    o.drop_columns = "site";
    CHECK(pack(long_format(3, 4, 12, -1), &o, &st, &e) == 0, "series per file: %s", e.msg);
    check_outputs(true);
    if (load(&l)) {
        CHECK(l.in->nseries == 2 && !strcmp(l.in->series[0].name, "north") && l.in->series[0].rows == 24 &&
                  !strcmp(l.in->series[1].name, "south") && l.in->series[1].first_row == 24,
              "%llu series: %s", (unsigned long long)l.in->nseries, l.in->nseries ? l.in->series[0].name : "");
        unload(&l);
    }
    o.series_column = "site", o.drop_columns = NULL;
    reject(long_format(3, 1, 6, -1), &o, SF_EUSAGE, "--series-per-file and --series-column exclude each other", NULL);
    o.drop_columns = "site";
    o.series_column = NULL;
    const char *same[] = {"x/north.parquet", "y/north.parquet"};
    o.sources = same;
    reject(long_format(3, 4, 12, -1), &o, SF_EUSAGE, "both would be \"north\"", NULL);
    o.nsources = 0;
    reject(long_format(3, 1, 6, -1), &o, SF_EINVAL, "--series-per-file needs the files", NULL);
}

// ---- numeric series ids taken for one series (series_hint.c) ----

// mote 1 then 2, ten rows each; the time restarts (or without a time, the
// counter) where the mote changes.
// 20 rows, batches of per rows (the last one shorter).
static struct ArrowArrayStream motes_in(bool timed, int per) {
    int64_t mote[20], t[20], count[20];
    float x[20];
    for (int r = 0; r < 20; r++)
        mote[r] = 1 + r / 10, t[r] = T2020 + (r % 10) * HOUR, count[r] = r % 10 + 1, x[r] = (float)r;
    struct ArrowArray b[20];
    int nb = 0;
    for (int at = 0; at < 20; at += per) {
        struct ArrowArray c[] = {ab_fixed(8, 20, mote, NULL, 0), ab_fixed(8, 20, timed ? t : count, NULL, 0),
                                 ab_fixed(4, 20, x, NULL, 0)};
        b[nb++] = ab_batch(at + per < 20 ? per : 20 - at, at, 3, c);
    }
    struct ArrowSchema f[] = {ab_field("l", "mote", NULL), ab_field(timed ? "tsu:" : "l", timed ? "t" : "count", NULL),
                              ab_field("f", "x", NULL)};
    return ab_stream(ab_struct(3, f), nb, b, -1);
}

static struct ArrowArrayStream motes(bool timed) { return motes_in(timed, 20); }

static void case_hint(void) {
    sf_arrow_pack_opts o = defaults();
    reject(motes(true), &o, SF_EFORMAT, "s: row 11: time 2020-01-01T00:00:00 goes back from 2020-01-01T09:00:00 (row "
           "10) where column \"mote\" changes from 1 to 2, and nowhere else in the first 20 rows: \"mote\" looks like "
           "the id of series (2 values, each in one run of rows)", "If \"mote\" is the series id, pack it with "
           "--series-column mote.", NULL);
    // With sources, the file and its row.
    const char *files[] = {"m.parquet"};
    uint64_t rows[] = {20};
    o.sources = files, o.source_rows = rows, o.nsources = 1;
    reject(motes(true), &o, SF_EFORMAT, "m.parquet: row 11: time 2020-01-01T00:00:00 goes back", NULL);
    // Batches too short for the first one to show it: the time check's
    // error names the column that changes with it.
    o = defaults();
    reject(motes_in(true, 4), &o, SF_EFORMAT, "s: row 11: time 2020-01-01 is before 2020-01-01T09:00 (row 10), the row "
           "before it in this series; times must not go back within a series (sort the rows by time); column \"mote\" "
           "changes there too (1 to 2): if it is the id of series, each in one run of rows, pack it with "
           "--series-column mote", NULL);
    // One series on purpose: not looked at, the time check's own error.
    o = defaults();
    o.series_column = "";
    reject(motes(true), &o, SF_EFORMAT, "s: row 11: time 2020-01-01 is before 2020-01-01T09:00 (row 10)",
           NULL);
    CHECK(!strstr(rejected, "changes there too"), "a hint with --series-column none: %s", rejected);
    // A float64 column that changes there is no series id: not named.
    {
        int64_t t[8];
        double f[8];
        for (int r = 0; r < 8; r++) t[r] = T2020 + (r % 4) * HOUR, f[r] = 1 + r / 4;
        struct ArrowArray b[4];
        for (int k = 0; k < 4; k++)
            b[k] = ab_batch(2, 2 * k, 2, (struct ArrowArray[]){ab_fixed(8, 8, t, NULL, 0), ab_fixed(8, 8, f, NULL, 0)});
        o = defaults();
        reject(ab_stream(ab_struct(2, (struct ArrowSchema[]){ab_field("tsu:", "t", NULL), ab_field("g", "f", NULL)}), 4,
                         b, -1),
               &o, SF_EFORMAT, "s: row 5: time 2020-01-01 is before", NULL);
        CHECK(!strstr(rejected, "changes there too"), "a float column named as an id: %s", rejected);
    }
    // A binary series column: told to become a string.
    o.series_column = "b";
    reject(ab_stream(ab_struct(1, (struct ArrowSchema[]){ab_field("z", "b", NULL)}), 0, NULL, -1), &o, SF_EUSAGE,
           "--series-column names \"b\", which is Arrow format \"z\" (binary)", "integers (cast it to string)", NULL);
    o.series_column = "";
    // The mote named: two series.
    o.series_column = "mote";
    loaded l;
    sf_arrow_pack_stats st;
    float want[20];
    for (int r = 0; r < 20; r++) want[r] = (float)r;
    if (accept(motes(true), &o, 1, (const char *[]){"x"}, 20, want, &l, &st)) {
        check_series(&l, "mote", 2, (sf_series[]){{0, 10, "1"}, {10, 10, "2"}});
        unload(&l);
    }
    // No time column: a counter that restarts is a warning, packed as one series.
    o = defaults();
    float both[60];
    for (int r = 0; r < 20; r++) both[3 * r] = (float)(1 + r / 10), both[3 * r + 1] = (float)(r % 10 + 1), both[3 * r + 2] = (float)r;
    if (accept(motes(false), &o, 3, (const char *[]){"mote", "count", "x"}, 20, both, &l, &st)) {
        CHECK(l.in->nseries == 1, "%llu series", (unsigned long long)l.in->nseries);
        unload(&l);
    }
    CHECK(strstr(notes, "warning: column \"mote\" looks like the id of series: its 2 values each come in one run of "
                        "rows, and column \"count\" restarts where it changes (row 11: 10 then 1), in the first 20 "
                        "rows") && strstr(notes, "pack it with --series-column mote."), "notes: %s", notes);
}

static const struct {
    const char *name;
    void (*run)(void);
} cases[] = {
#define C(n) {#n, case_##n}
    C(types), C(slices), C(missing), C(series), C(dictionaries), C(times), C(options), C(malformed), C(interleaved),
    C(interleaved_ffill), C(sources), C(hint),
#undef C
};

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s CASE\n", argv[0]);
        return 2;
    }
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(out, sizeof out, "%s/out.sfpack", dir);
    int found = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (!strcmp(argv[1], cases[i].name)) cases[i].run(), found = 1;
    unlink(out);
    rmdir(dir);
    if (!found) {
        fprintf(stderr, "unknown case %s\n", argv[1]);
        return 2;
    }
    return TEST_EXIT();
}
