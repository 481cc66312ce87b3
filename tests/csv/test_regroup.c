// pack/regroup.c on its own: rows of interleaved series come out series by
// series, each series' rows in the order they were added (the head's, an
// .sfpack of the rows before, first), whatever the budget: all in memory,
// a few spilled runs, or so many that the merge takes several passes; rows
// wide enough to raise the least budget; lines and times that step as a
// file's do and ones that jump (the spilled rows' codes at every width);
// every field carried bit for bit.
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pack/internal.h"
#include "tests/common.h"
#include "tests/format/packutil.h"

typedef struct {
    uint32_t series;
    int64_t time, line;
    uint32_t id;  // the row's place in the input: its values are id + column
    bool imputed;
} row;

typedef struct {
    const row *want;  // in the expected order
    size_t n, next;
    uint32_t ncols;
    bool timed;
    int bad;  // mismatches reported (the first few)
} expect;

static int on_row(expect *x, uint32_t series, const float *values, int64_t time, int64_t line,
                  const uint8_t *imputed) {
    if (x->next == x->n) {
        if (x->bad++ < 3) CHECK(0, "a row beyond the %zu added", x->n);
        return 0;
    }
    const row *w = &x->want[x->next++];
    bool ok = series == w->series && line == w->line && (!x->timed || time == w->time);
    for (uint32_t c = 0; c < x->ncols; c++) {
        ok &= values[c] == (float)(w->id % 1000000 + c);
        ok &= (imputed ? imputed[c] != 0 : false) == (w->imputed && c == 0);
    }
    if (!ok && x->bad++ < 3)
        CHECK(0, "row %zu: series %u line %lld time %lld value %g, expected series %u line %lld time %lld value %g",
              x->next - 1, series, (long long)line, (long long)time, values[0], w->series, (long long)w->line,
              (long long)w->time, (float)(w->id % 1000000));
    return 0;
}

// The merge's rows, a run of one series at a time, each checked.
static int on_rows(void *arg, uint32_t series, const float *values, const int64_t *times, const int64_t *lines,
                   const uint8_t *imputed, size_t n) {
    expect *x = arg;
    if (!n && x->bad++ < 3) CHECK(0, "an empty run of rows");
    if (x->timed != (times != NULL) && x->bad++ < 3) CHECK(0, "times %s with%s a time column", times ? "given" : "NULL",
                                                          x->timed ? "" : "out");
    for (size_t i = 0; i < n; i++)
        on_row(x, series, values + i * x->ncols, x->timed ? times[i] : 0, lines[i], imputed ? imputed + i * x->ncols : NULL);
    return 0;
}

static int by_series(const void *a, const void *b) {
    const row *x = a, *y = b;
    if (x->series != y->series) return x->series < y->series ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;  // the order they came: stable
}

// A head of `nhead` rows over series 0 .. nhs - 1, each series' rows
// together, written as pack writes the rows before a series comes back.
static sf_pack *make_head(const char *path, const row *rows, size_t nhead, uint32_t ncols, bool timed) {
    char **names = malloc(ncols * sizeof *names);
    float *v = malloc(ncols * sizeof *v);
    uint8_t *imp = malloc(ncols);
    if (!names || !v || !imp) abort();
    for (uint32_t c = 0; c < ncols; c++) {
        names[c] = malloc(16);
        snprintf(names[c], 16, "c%u", c);
    }
    sf_pack_writer_opts o = {.ncols = ncols, .col_names = (const char *const *)names, .series_column = "id",
                             .chunk_rows = 37, .level = 1, .time_column = timed ? "t" : NULL,
                             .time_kind = SF_TIME_EPOCH_S, .lines = true, .imputed = true};
    sf_pack_writer *w;
    sf_err e = {0};
    int rc = sf_pack_writer_open(&w, path, &o, &e);
    for (size_t i = 0; i < nhead && !rc; i++) {
        if (!i || rows[i].series != rows[i - 1].series) {
            char name[16];
            snprintf(name, sizeof name, "s%u", rows[i].series);
            rc = sf_pack_writer_series(w, name, strlen(name), &e);
        }
        for (uint32_t c = 0; c < ncols; c++) v[c] = (float)(rows[i].id % 1000000 + c), imp[c] = c == 0 && rows[i].imputed;
        if (!rc) rc = sf_pack_writer_rows_imputed(w, v, timed ? &rows[i].time : NULL, &rows[i].line, imp, 1, &e);
    }
    sf_pack *p = NULL;
    if (!rc) rc = sf_pack_writer_finish(w, &e);
    if (!rc) rc = sf_pack_open(&p, path, &e);
    CHECK(rc == 0, "head: %s", e.msg);
    for (uint32_t c = 0; c < ncols; c++) free(names[c]);
    free(names), free(v), free(imp);
    return p;
}

// nrows rows of nseries series, the first nhead of them (series grouped)
// in a head; budget 0: the least for these rows. stepped: lines and times
// rise by the row, as a file's do (spilled rows are coded in few bytes),
// else lines jump by 2^40 and times are anything (in the most bytes).
// narrowing: after the first tenth of the rows, three series alone (the
// held rows of a later run see few of the series an earlier one saw).
static void one(const char *dir, const char *what, size_t nrows, uint32_t nseries, size_t nhead, uint32_t ncols,
                bool timed, uint64_t budget, bool want_spill, bool want_passes, bool stepped, bool narrowing) {
    uint64_t seed = nrows * 31 + nseries;
    row *rows = malloc(nrows * sizeof *rows);
    if (!rows) abort();
    // The head: series 0, 1, ... each a few rows in a block, as pack wrote
    // them before the first series came back.
    uint32_t hs = 0;
    for (size_t i = 0; i < nhead; i++) {
        if (i && sf_splitmix64(&seed) % 4 == 0 && hs + 1 < nseries) hs++;
        rows[i].series = hs;
    }
    // Then interleaved: mostly round robin (a row per series per time
    // step), sometimes a random series, sometimes a run of one.
    uint32_t rr = 0;
    for (size_t i = nhead; i < nrows; i++) {
        uint64_t k = sf_splitmix64(&seed) % 10;
        rows[i].series = k < 7 ? rr++ % nseries : k < 9 ? (uint32_t)(sf_splitmix64(&seed) % nseries)
                                                       : i ? rows[i - 1].series : 0;
        if (narrowing && i >= nrows / 10) rows[i].series %= 3;
    }
    for (size_t i = 0; i < nrows; i++) {
        rows[i].id = (uint32_t)i;
        rows[i].line = (int64_t)i + 2 + (stepped ? 0 : (int64_t)(i % 3) << 40);  // opaque: high bits kept too
        // The head's times rise within its series, as the writer wants; the
        // rest, unless stepped, are anything (checking them is the caller's).
        rows[i].time = i < nhead || stepped ? (int64_t)i * 3600 - 7200 + (int64_t)((i * 2654435761u) >> 7 & 3)
                                            : (int64_t)(sf_splitmix64(&seed) >> 1) * (i % 2 ? -1 : 1);
        rows[i].imputed = i < nhead && i % 5 == 1;
    }
    // Series first seen after the head take the next indices, in order.
    uint32_t *index = malloc(nseries * sizeof *index), next = nhead ? hs + 1 : 0;
    if (!index) abort();
    for (uint32_t s = 0; s < nseries; s++) index[s] = s < next ? s : UINT32_MAX;
    for (size_t i = nhead; i < nrows; i++) {
        if (index[rows[i].series] == UINT32_MAX) index[rows[i].series] = next++;
        rows[i].series = index[rows[i].series];
    }
    char hpath[PATH_LEN];
    sf_pack *head = nhead ? make_head(path_in(hpath, dir, "head.sfpack"), rows, nhead, ncols, timed) : NULL;
    if (nhead && !head) {
        free(rows), free(index);
        return;
    }
    uint32_t *map = NULL;
    if (head) {  // the head's series i is series i: pack maps them by name
        map = malloc((hs + 1) * sizeof *map);
        for (uint32_t s = 0; map && s <= hs; s++) map[s] = s;
        unlink(hpath);  // read through its descriptor from here on
    }
    if (!budget) budget = sf_regroup_min_budget(ncols, timed);
    char near[PATH_LEN];
    path_in(near, dir, "out.sfpack");
    sf_regroup *r;
    sf_err e = {0};
    int rc = sf_regroup_open(&r, near, ncols, timed, budget, &e);
    CHECK(rc == 0, "%s: open: %s", what, e.msg);
    if (rc) {
        sf_pack_close(head), free(map), free(rows), free(index);
        return;
    }
    if (head) rc = sf_regroup_head(r, head, map, &e);
    float *v = malloc(ncols * sizeof *v);
    if (!v) abort();
    for (size_t i = nhead; i < nrows && !rc; i++) {
        for (uint32_t c = 0; c < ncols; c++) v[c] = (float)(rows[i].id % 1000000 + c);
        rc = sf_regroup_add(r, rows[i].series, v, rows[i].time, rows[i].line, &e);
    }
    // Nothing named is left in the folder while the spill files are in use.
    CHECK(count_entries(dir) == 0, "%s: %d entries in %s while regrouping", what, count_entries(dir), dir);
    qsort(rows, nrows, sizeof *rows, by_series);
    expect x = {rows, nrows, 0, ncols, timed, 0};
    if (!rc) rc = sf_regroup_merge(r, on_rows, &x, &e);
    CHECK(rc == 0, "%s: %s", what, e.msg);
    CHECK(x.next == nrows, "%s: %zu rows out of %zu", what, x.next, nrows);
    CHECK((sf_regroup_runs(r) > 1) == want_spill, "%s: %llu runs", what, (unsigned long long)sf_regroup_runs(r));
    CHECK((sf_regroup_passes(r) > 1) == want_passes, "%s: %llu passes", what,
          (unsigned long long)sf_regroup_passes(r));
    printf("%s: %zu rows, %u series, budget %.2f MB: %llu runs, %llu passes, %.1f MB spilled\n", what, nrows, nseries,
           budget / 1e6, (unsigned long long)sf_regroup_runs(r), (unsigned long long)sf_regroup_passes(r),
           sf_regroup_spilled(r) / 1e6);
    sf_regroup_free(r);
    CHECK(count_entries(dir) == 0, "%s: %d entries left in %s", what, count_entries(dir), dir);
    free(v), free(rows), free(index);
}

// sf_series_ids against a plain list: ids coming round in a fixed order
// (the guess of what follows hits), then in a shuffled order and with new
// ids among them (it misses), across the table's growth; each lookup finds
// the entry of its own key, and says found exactly when it was added before.
static void series_ids(void) {
    enum { N = 3000 };
    static char keys[N][16];
    static bool seen[N];
    sf_series_ids s = {0};
    uint64_t x = 12345;
    for (uint32_t i = 0; i < N; i++) snprintf(keys[i], sizeof keys[i], "site%u", i);
    for (uint32_t round = 0; round < 40; round++) {
        for (uint32_t k = 0; k < N; k++) {
            uint32_t i = round < 20 ? k % (100 + 100 * round) : (uint32_t)((x = x * 6364136223846793005ull + 1) >> 33) % N;
            bool found;
            sf_series_id *id = sf_series_ids_add(&s, keys[i], strlen(keys[i]), i, &found);
            CHECK(id && id->len == strlen(keys[i]) && !memcmp(id->key, keys[i], id->len) && id->first == i &&
                      found == seen[i], "round %u: %s: got %s, found %d", round, keys[i], id ? id->key : "NULL", found);
            if (!id || found != seen[i]) return;
            seen[i] = true;
        }
    }
    const sf_series_id *f = sf_series_ids_find(&s, "site17", 6);
    CHECK(f && f->first == 17 && !sf_series_ids_find(&s, "site", 4), "find");
    sf_series_ids_free(&s);
    // Ids added once, in order: each links to the next across the table's
    // growth (a packer that takes rows by a copy's links never adds again)
    for (uint32_t i = 0; i < N; i++) {
        bool found;
        CHECK(sf_series_ids_add(&s, keys[i], strlen(keys[i]), i, &found) && !found, "add %s", keys[i]);
    }
    uint32_t linked = 0;
    for (uint32_t i = 0; i + 1 < N; i++) {
        const sf_series_id *a = sf_series_ids_find(&s, keys[i], strlen(keys[i]));
        linked += a && a->after && s.slot[a->after - 1].first == i + 1;
    }
    CHECK(linked == N - 1, "%u of %u ids linked to the next after the table grew", linked, N - 1);
    sf_series_ids_free(&s);
}

int main(void) {
    series_ids();
    char *dir = scratch_dir("regroup");
    one(dir, "in memory", 5000, 7, 0, 2, true, 64000000, false, false, false, false);
    one(dir, "in memory, a head", 5000, 7, 300, 2, true, 64000000, false, false, false, false);
    one(dir, "a few runs", 30000, 50, 0, 1, true, 0, true, false, false, false);
    one(dir, "a few runs, a head", 30000, 50, 2000, 1, false, 0, true, false, false, false);
    one(dir, "several passes, a head", 300000, 1000, 5000, 1, true, 0, true, true, false, false);
    one(dir, "one series", 30000, 1, 0, 3, false, 0, true, false, false, false);
    one(dir, "stepped, a few runs", 30000, 300, 0, 1, true, 0, true, false, true, false);
    one(dir, "stepped, several passes, a head", 300000, 70000, 5000, 1, true, 0, true, true, true, false);
    one(dir, "narrowing, a few runs", 30000, 5000, 0, 1, true, 0, true, false, true, true);
    one(dir, "wide rows", 600, 13, 100, 5000, true, 0, true, false, false, false);
    CHECK(sf_regroup_min_budget(5000, true) > SF_REGROUP_MIN_BUDGET && sf_regroup_min_budget(1, true) ==
                                                                           SF_REGROUP_MIN_BUDGET,
          "least budgets %llu, %llu", (unsigned long long)sf_regroup_min_budget(5000, true),
          (unsigned long long)sf_regroup_min_budget(1, true));
    sf_regroup *r;
    sf_err e = {0};
    int rc = sf_regroup_open(&r, "x.sfpack", 1, true, SF_REGROUP_MIN_BUDGET - 1, &e);
    CHECK(rc == SF_EUSAGE && strstr(e.msg, "--memory-budget") && strstr(e.msg, "at least 0.25 MB"), "%d %s", rc,
          e.msg);
    remove_dir(dir);
    return TEST_EXIT();
}
