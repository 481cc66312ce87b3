// Blocks and windows against a naive reference: the whole file decoded into
// one row-major array, scaled by the documented formula, every window
// indexed by its start row. Every window of every block must match bit for
// bit, for several geometries, chunk sizes and normalisations, and no window
// may reach past its series.
#include "tests/pipeline/sample.h"

static void check_geometry(const sf_pack *p, const float *all, sf_window_spec w, uint32_t block_chunks, int norm,
                           const char *features, const char *targets, const uint32_t *fidx, uint32_t nf,
                           const uint32_t *tidx, uint32_t nt) {
    const sf_pack_info *in = sf_pack_get_info(p);
    sf_columns cols;
    sf_plan *plan;
    sf_err e = {0};
    if (sf_columns_create(&cols, in, features, targets, NULL, norm, &e) ||
        sf_plan_create(&plan, in->nrows, in->chunk_rows, in->series, in->nseries, &w, block_chunks, NULL, &e)) {
        CHECK(0, "%s", e.msg);
        return;
    }
    CHECK(cols.nfeatures == nf && cols.ntargets == nt, "columns %u/%u, expected %u/%u", cols.nfeatures,
          cols.ntargets, nf, nt);
    sf_block_loader *l = sf_block_loader_create(p, &cols);
    sf_block_data d = {0};
    uint32_t steps = sf_window_steps(&w);
    float *x = malloc((size_t)w.length * nf * sizeof(float)), *y = malloc((size_t)steps * nt * sizeof(float));
    uint64_t checked = 0, span = sf_window_span(&w);
    for (uint64_t b = 0; b < sf_plan_blocks(plan); b++) {
        sf_block_task t = sf_plan_block(plan, b);
        if (sf_block_load(l, &t, &d, &e)) {
            CHECK(0, "block %llu: %s", (unsigned long long)b, e.msg);
            break;
        }
        for (uint64_t id = t.first_window; id < t.end_window; id++) {
            uint64_t s = sf_plan_window_start(plan, id);
            // The window's rows and target lie in one series.
            uint64_t k = 0;
            while (k + 1 < in->nseries && in->series[k + 1].first_row <= s) k++;
            CHECK(s + span <= in->series[k].first_row + in->series[k].rows, "window %llu crosses series %llu",
                  (unsigned long long)id, (unsigned long long)k);
            sf_window_cut(plan, &cols, &d, id, x, y);
            int bad = 0;
            for (uint32_t step = 0; step < w.length; step++)
                for (uint32_t j = 0; j < nf; j++) {
                    uint64_t row = s + (uint64_t)step * w.sampling_rate;
                    float want = scaled(all[row * in->ncols + fidx[j]], &in->stats[fidx[j]], norm);
                    bad += memcmp(&x[step * nf + j], &want, 4) != 0;
                }
            // y (steps, targets): step k is row horizon - steps + 1 + k past the last input row.
            for (uint32_t k = 0; k < steps; k++)
                for (uint32_t j = 0; j < nt; j++) {
                    uint64_t target = s + (uint64_t)(w.length - 1) * w.sampling_rate + w.horizon - (steps - 1) + k;
                    float want = scaled(all[target * in->ncols + tidx[j]], &in->stats[tidx[j]], norm);
                    bad += memcmp(&y[k * nt + j], &want, 4) != 0;
                }
            CHECK(bad == 0, "window %llu (row %llu, T=%u r=%u h=%u, norm %d): %d values differ",
                  (unsigned long long)id, (unsigned long long)s, w.length, w.sampling_rate, w.horizon, norm, bad);
            checked++;
        }
    }
    CHECK(checked == sf_plan_windows(plan), "checked %llu of %llu windows", (unsigned long long)checked,
          (unsigned long long)sf_plan_windows(plan));
    free(x), free(y);
    sf_block_data_free(&d);
    sf_block_loader_free(l);
    sf_plan_free(plan);
    sf_columns_free(&cols);
}

// Time features: after the feature columns, the sine and cosine of each
// row's phase (sf_time_phase, itself checked against Python), row by row
// through chunks of 97 rows.
static void test_time_features(void) {
    char tpath[256];
    snprintf(tpath, sizeof tpath, "%s/timed.sfpack", dir);
    static const char *const names[] = {"v"};
    sf_pack_writer_opts o = {.ncols = 1, .col_names = names, .chunk_rows = 97, .level = 1, .time_column = "t",
                             .time_kind = SF_TIME_EPOCH_S};
    enum { N = 1000 };
    float v[N];
    int64_t t[N];
    for (int r = 0; r < N; r++) v[r] = (float)r, t[r] = 1600000000 + (int64_t)r * 4999;  // about 83 minutes apart
    sf_pack_writer *w;
    sf_err e = {0};
    if (sf_pack_writer_open(&w, tpath, &o, &e) || sf_pack_writer_rows_at(w, v, t, NULL, N, &e) ||
        sf_pack_writer_finish(w, &e)) {
        CHECK(0, "write: %s", e.msg);
        return;
    }
    sf_pack *p;
    sf_columns cols;
    if (sf_pack_open(&p, tpath, &e) || sf_columns_create(&cols, sf_pack_get_info(p), NULL, NULL, NULL, SF_NORM_NONE, &e)) {
        CHECK(0, "open: %s", e.msg);
        return;
    }
    int rc = sf_columns_add_time(&cols, sf_pack_get_info(p), "yearday, hour,weekday", &e);
    CHECK(rc == 0 && cols.nfeatures == 7 && cols.ntime == 3, "add: %d %s, %u features", rc, e.msg, cols.nfeatures);
    CHECK(sf_columns_add_time(&cols, sf_pack_get_info(p), "hour", &e) == SF_EUSAGE && strstr(e.msg, "twice"),
          "a feature twice: %s", e.msg);
    CHECK(sf_columns_add_time(&cols, sf_pack_get_info(p), "minute", &e) == SF_EUSAGE && strstr(e.msg, "hour, weekday"),
          "an unknown feature: %s", e.msg);
    sf_block_loader *l = sf_block_loader_create(p, &cols);
    sf_block_data d = {0};
    sf_block_task all = {.row_lo = 0, .row_hi = N};
    if (!rc && (rc = sf_block_load(l, &all, &d, &e))) CHECK(0, "load: %s", e.msg);
    const enum sf_time_feature order[3] = {SF_TIME_YEARDAY, SF_TIME_HOUR, SF_TIME_WEEKDAY};
    for (int r = 0; !rc && r < N; r++) {
        const float *x = d.feat + (size_t)r * 7;
        bool ok = x[0] == v[r];
        for (int k = 0; k < 3; k++) {
            double a = 2 * M_PI * sf_time_phase(t[r] * 1000000, order[k]);
            ok &= x[1 + 2 * k] == (float)sin(a) && x[2 + 2 * k] == (float)cos(a);
        }
        CHECK(ok, "row %d: %g %g %g %g %g %g %g", r, x[0], x[1], x[2], x[3], x[4], x[5], x[6]);
        if (!ok) break;
    }
    sf_block_data_free(&d);
    sf_block_loader_free(l);
    sf_columns_free(&cols);
    sf_pack_close(p);
    unlink(tpath);
}

// A file with categorical column "sky" of the given values, whose row r has
// code codes[r % 5].
static int pack_sky(const char *path, const char *const *values, uint32_t nvalues, const float *codes) {
    static const char *const names[] = {"v", "sky"};
    const uint32_t cat = 1;
    sf_pack_writer_opts o = {.ncols = 2, .col_names = names, .chunk_rows = 7, .level = 1, .categorical = &cat,
                             .ncategorical = 1};
    float rows[2 * 20];
    for (int r = 0; r < 20; r++) rows[2 * r] = (float)r, rows[2 * r + 1] = codes[r % 5];
    sf_pack_writer *w;
    sf_err e = {0};
    int rc = sf_pack_writer_open(&w, path, &o, &e);
    if (!rc && (rc = sf_pack_writer_rows(w, rows, 20, &e) || sf_pack_writer_category(w, 0, values, nvalues, &e)))
        sf_pack_writer_abort(w);
    if (!rc) rc = sf_pack_writer_finish(w, &e);
    CHECK(rc == 0, "write %s: %s", path, e.msg);
    return rc;
}

// A column's name and values fit a checkpoint's list of them to the byte,
// counted as sf_columns_categories writes them (4 * quotes + 10 bytes for
// "sky" and one value of quotes), or the writer refuses the column.
static void test_category_limit(void) {
    char path[256], value[SF_PACK_MAX_CATEGORY_VALUE + 1];
    snprintf(path, sizeof path, "%s/sky-q.sfpack", dir);
    const char *values[] = {value};
    for (int quotes = 4093; quotes <= 4094; quotes++) {
        memset(value, '"', (size_t)quotes);
        value[quotes] = 0;
        static const char *const names[] = {"v", "sky"};
        const uint32_t cat = 1;
        sf_pack_writer_opts o = {.ncols = 2, .col_names = names, .chunk_rows = 7, .level = 1, .categorical = &cat,
                                 .ncategorical = 1};
        float rows[2 * 20] = {0};
        sf_pack_writer *w;
        sf_err e = {0};
        int rc = sf_pack_writer_open(&w, path, &o, &e);
        if (!rc && (rc = sf_pack_writer_rows(w, rows, 20, &e) || sf_pack_writer_category(w, 0, values, 1, &e)))
            sf_pack_writer_abort(w);
        else if (!rc)
            rc = sf_pack_writer_finish(w, &e);
        if (quotes == 4094) {
            CHECK(rc && strstr(e.msg, "\"sky\" takes 16386 bytes") && strstr(e.msg, "the 16383"),
                  "a column one byte over the list limit: rc %d '%s'", rc, e.msg);
            continue;
        }
        CHECK(rc == 0, "a column at the list limit: %s", e.msg);
        sf_pack *p;
        sf_columns cols;
        if (rc || sf_pack_open(&p, path, &e)) continue;
        static char list[SF_PACK_MAX_CATEGORY_LIST + 1];
        CHECK(sf_columns_create(&cols, sf_pack_get_info(p), "sky", "v", NULL, SF_NORM_NONE, &e) == 0 &&
                  sf_columns_categories(&cols, sf_pack_get_info(p), list, sizeof list) == 0 &&
                  strlen(list) == 4 * (size_t)quotes + 10,
              "the list of a column at the limit: %zu bytes, %s", strlen(list), e.msg);
        sf_columns_free(&cols);
        sf_pack_close(p);
    }
    unlink(path);
}

// Categorical features: one input per value, 1 for the row's value; the
// column never a target; and a model's categories map another file's codes
// by text, a value it lacks to zeros.
static void test_categories(void) {
    char a[256], b[256];
    snprintf(a, sizeof a, "%s/sky-a.sfpack", dir);
    snprintf(b, sizeof b, "%s/sky-b.sfpack", dir);
    static const char *const va[] = {"sun", "rain", "fog, thick"}, *const vb[] = {"hail", "fog, thick", "sun"};
    if (pack_sky(a, va, 3, (const float[]){0, 1, 2, 1, 0}) || pack_sky(b, vb, 3, (const float[]){2, 0, 1, 0, 2}))
        return;
    sf_pack *pa, *pb;
    sf_err e = {0};
    if (sf_pack_open(&pa, a, &e) || sf_pack_open(&pb, b, &e)) {
        CHECK(0, "open: %s", e.msg);
        return;
    }
    const sf_pack_info *ia = sf_pack_get_info(pa), *ib = sf_pack_get_info(pb);
    sf_columns ca, cb;
    int rc = sf_columns_create(&ca, ia, NULL, NULL, NULL, SF_NORM_ZSCORE, &e);
    CHECK(rc == 0 && ca.nfeatures == 4 && ca.ntargets == 1 && ca.targets[0] == 0, "columns: %d %s, %u features",
          rc, e.msg, ca.nfeatures);
    char list[256], feats[64];
    CHECK(!rc && !sf_columns_categories(&ca, ia, list, sizeof list) && !strcmp(list, "\"sky,sun,rain,\"\"fog, thick\"\"\"") &&
              !sf_columns_feature_list(&ca, ia, feats, sizeof feats) && !strcmp(feats, "v,sky"),
          "categories '%s', features '%s'", list, feats);
    CHECK(sf_columns_create(&cb, ia, NULL, "v,sky", NULL, SF_NORM_ZSCORE, &e) == SF_EUSAGE &&
              strstr(e.msg, "target \"sky\" is categorical"), "a categorical target: %s", e.msg);
    rc = rc ? rc : sf_columns_create(&cb, ib, "v,sky", "v", list, SF_NORM_ZSCORE, &e);
    CHECK(rc == 0 && cb.nfeatures == 4 && cb.nunseen == 1 && cb.unseen_column == 1, "mapped: %d %s, %u unseen", rc,
          e.msg, cb.nunseen);
    sf_block_data da = {0}, db = {0};
    sf_block_task all = {.row_lo = 0, .row_hi = 20};
    sf_block_loader *la = rc ? NULL : sf_block_loader_create(pa, &ca), *lb = rc ? NULL : sf_block_loader_create(pb, &cb);
    if (!rc && (sf_block_load(la, &all, &da, &e) || sf_block_load(lb, &all, &db, &e))) CHECK(rc = 1, "load: %s", e.msg);
    // Row r of a: sun rain fog rain sun; of b (hail=0 fog=1 sun=2): sun hail fog hail sun.
    static const float want_a[5][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0, 1, 0}, {1, 0, 0}};
    static const float want_b[5][3] = {{1, 0, 0}, {0, 0, 0}, {0, 0, 1}, {0, 0, 0}, {1, 0, 0}};
    for (int r = 0; !rc && r < 20; r++) {
        const float *xa = da.feat + 4 * r, *xb = db.feat + 4 * r;
        bool ok = xa[0] == xb[0];
        for (int k = 0; k < 3; k++) ok &= xa[1 + k] == want_a[r % 5][k] && xb[1 + k] == want_b[r % 5][k];
        CHECK(ok, "row %d: a %g %g %g %g, b %g %g %g %g", r, xa[0], xa[1], xa[2], xa[3], xb[0], xb[1], xb[2], xb[3]);
        if (!ok) break;
    }
    sf_columns_free(&cb);
    CHECK(sf_columns_create(&cb, ib, "v", "v", "", SF_NORM_ZSCORE, &e) == 0, "a numeric feature: %s", e.msg);
    sf_columns_free(&cb);
    CHECK(sf_columns_create(&cb, ib, "sky", "v", "", SF_NORM_ZSCORE, &e) == SF_EUSAGE &&
              strstr(e.msg, "held numbers in training"), "categorical here, numbers in training: %s", e.msg);
    sf_block_data_free(&da), sf_block_data_free(&db);
    sf_block_loader_free(la), sf_block_loader_free(lb);
    sf_columns_free(&ca);
    sf_pack_close(pa), sf_pack_close(pb);
    unlink(a), unlink(b);
}

int main(void) {
    if (!mkdtemp(dir)) return 2;
    test_time_features();
    test_categories();
    test_category_limit();
    snprintf(path, sizeof path, "%s/sample.sfpack", dir);
    const uint32_t chunk_rows[] = {97, 256, 5000};
    for (int c = 0; c < 3; c++) {
        if (pack_sample(chunk_rows[c])) break;
        sf_pack *p;
        sf_err e = {0};
        if (sf_pack_open(&p, path, &e)) {
            CHECK(0, "%s", e.msg);
            break;
        }
        float *all = decode_all(p);
        const uint32_t all4[] = {0, 1, 2, 3}, bd[] = {1, 3}, c_only[] = {2};
        check_geometry(p, all, (sf_window_spec){60, 1, 1, 1, 1}, 1, SF_NORM_ZSCORE, NULL, NULL, all4, 4, all4, 4);
        check_geometry(p, all, (sf_window_spec){10, 3, 2, 0, 1}, 2, SF_NORM_MINMAX, "b,d", "c", bd, 2, c_only, 1);
        check_geometry(p, all, (sf_window_spec){1, 1, 1, 5, 1}, 3, SF_NORM_NONE, "d,b", "c", (const uint32_t[]){3, 1},
                       2, c_only, 1);
        check_geometry(p, all, (sf_window_spec){200, 7, 3, 2, 1}, 1, SF_NORM_ZSCORE, "a", "a,b", all4, 1, all4, 2);
        // --horizon 1-24 and 3-5: several steps per window.
        check_geometry(p, all, (sf_window_spec){12, 5, 1, 24, 24}, 1, SF_NORM_ZSCORE, NULL, "a,c", all4, 4,
                       (const uint32_t[]){0, 2}, 2);
        check_geometry(p, all, (sf_window_spec){7, 2, 3, 5, 3}, 2, SF_NORM_MINMAX, "b,d", "c", bd, 2, c_only, 1);
        free(all);
        sf_pack_close(p);
    }
    sf_pack *p;
    sf_err e = {0};
    sf_columns cols;
    if (sf_pack_open(&p, path, &e) == 0) {
        CHECK(sf_columns_create(&cols, sf_pack_get_info(p), "a,nope", NULL, NULL, SF_NORM_ZSCORE, &e) == SF_EINVAL &&
                  strstr(e.msg, "\"nope\" is not a column"),
              "unknown column: %s", e.msg);
        // Named twice, also once quoted: refused before any training.
        CHECK(sf_columns_create(&cols, sf_pack_get_info(p), "a,\"a\"", NULL, NULL, SF_NORM_ZSCORE, &e) == SF_EUSAGE &&
                  strstr(e.msg, "feature \"a\" is named twice in --features"),
              "a feature twice: %s", e.msg);
        CHECK(sf_columns_create(&cols, sf_pack_get_info(p), "a", "b,c,b", NULL, SF_NORM_ZSCORE, &e) == SF_EUSAGE &&
                  strstr(e.msg, "target \"b\" is named twice in --targets 'b,c,b'"),
              "a target twice: %s", e.msg);
        sf_pack_close(p);
    }
    enum sf_norm norm = SF_NORM_NONE;
    CHECK(sf_norm_parse("minmax", &norm) && norm == SF_NORM_MINMAX && !sf_norm_parse("z", &norm) &&
              norm == SF_NORM_MINMAX && !strcmp(sf_norm_name(SF_NORM_ZSCORE), "zscore"),
          "sf_norm_parse");
    unlink(path);
    rmdir(dir);
    return TEST_EXIT();
}
