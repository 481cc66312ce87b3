// The block stage: which columns feed x and y and how they are scaled, and
// a block's rows gathered out of its decoded chunks, row-major and scaled.
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"

static const char *const norm_names[] = {"zscore", "minmax", "none"};

bool sf_norm_parse(const char *name, enum sf_norm *out) {
    for (int i = 0; i < 3; i++)
        if (!strcmp(name, norm_names[i])) {
            *out = (enum sf_norm)i;
            return true;
        }
    return false;
}

const char *sf_norm_name(enum sf_norm norm) { return norm_names[norm]; }

int sf_columns_add_time(sf_columns *c, const sf_pack_info *info, const char *list, sf_err *e) {
    if (!list || !*list) return 0;
    if (info->time_kind == SF_TIME_NONE)
        return sf_err_set(e, SF_EUSAGE, "time features %s need times, and the file has no time column (pack the CSV "
                          "with its time column)", list);
    char name[32];
    for (const char *p = list; p;) {
        if (sf_list_next(&p, name, sizeof name)) return sf_err_set(e, SF_EUSAGE, "time features '%s': not a list", list);
        int f = 0;
        while (f < SF_TIME_FEATURE_COUNT && strcmp(name, sf_time_feature_name((enum sf_time_feature)f))) f++;
        if (f == SF_TIME_FEATURE_COUNT)
            return sf_err_set(e, SF_EUSAGE, "time feature \"%s\": expected hour, weekday or yearday", name);
        for (uint32_t k = 0; k < c->ntime; k++)
            if (c->time[k] == (enum sf_time_feature)f)
                return sf_err_set(e, SF_EUSAGE, "time feature \"%s\" is named twice", name);
        uint32_t n = c->nfeatures + 2;
        uint32_t *idx = realloc(c->features, n * sizeof *idx);
        if (idx) c->features = idx;
        float *s = idx ? realloc(c->feature_scale, n * sizeof *s) : NULL;
        if (s) c->feature_scale = s;
        float *o = s ? realloc(c->feature_offset, n * sizeof *o) : NULL;
        if (o) c->feature_offset = o;
        int32_t *code = o ? realloc(c->codes, n * sizeof *code) : NULL;
        if (!code) return sf_err_set(e, SF_ENOMEM, "out of memory");
        c->codes = code;
        for (uint32_t j = c->nfeatures; j < n; j++)  // sin, cos: in [-1, 1]
            idx[j] = SF_COLUMN_TIME, s[j] = 1, o[j] = 0, code[j] = SF_CODE_NONE;
        c->nfeatures = n;
        c->time[c->ntime++] = (enum sf_time_feature)f;
    }
    c->time_kind = info->time_kind;
    return 0;
}

// Whether every row of the file has one phase of feature f, as the file's
// time table tells without reading a row: dates without a time of day are
// all at midnight (hour); series whose rows are all exactly the typical
// step apart (no step above it, and each series' last time is its first
// plus its rows' steps) stay at one phase when the step is a whole number
// of the feature's days or weeks and every series starts at the same one.
// Irregular times are not judged (false).
static bool time_constant(const sf_pack_info *in, enum sf_time_feature f, bool *dates) {
    *dates = in->time_kind == SF_TIME_ISO && !(in->time_parts & SF_TIME_CLOCK);
    if (f == SF_TIME_HOUR && *dates) return true;
    if (f == SF_TIME_YEARDAY || in->time_gaps || in->time_step <= 0 || !in->series_times) return false;
    int64_t period = (int64_t)llround((f == SF_TIME_HOUR ? 86400.0 : 7 * 86400.0) / sf_pack_time_unit(in));
    if (period <= 0 || in->time_step % period) return false;
    int64_t phase = 0;
    for (uint64_t i = 0; i < in->nseries; i++) {
        int64_t first = in->series_times[2 * i];
        uint64_t span = (uint64_t)in->series_times[2 * i + 1] - (uint64_t)first;  // times never go back: no wrap
        if (span / (uint64_t)in->time_step != in->series[i].rows - 1 || span % (uint64_t)in->time_step)
            return false;  // a step below the typical one somewhere
        int64_t p = (first % period + period) % period;
        if (i && p != phase) return false;
        phase = p;
    }
    return true;
}

int sf_columns_check_time(const sf_columns *c, const sf_pack_info *in, sf_err *e) {
    char varies[48] = "", step[32];
    size_t len = 0;
    bool dates;
    for (int f = 0; f < SF_TIME_FEATURE_COUNT; f++)
        if (!time_constant(in, (enum sf_time_feature)f, &dates))
            sf_list_append(varies, sizeof varies, &len, sf_time_feature_name((enum sf_time_feature)f));
    for (uint32_t k = 0; k < c->ntime; k++) {
        if (!time_constant(in, c->time[k], &dates)) continue;
        const char *name = sf_time_feature_name(c->time[k]);
        sf_duration_text((double)in->time_step * sf_pack_time_unit(in), step, sizeof step);
        char why[160];
        if (dates && c->time[k] == SF_TIME_HOUR)
            snprintf(why, sizeof why, "holds dates without a time of day (a resolution of one day)");
        else
            snprintf(why, sizeof why, "steps by exactly %s on every row, from the same %s in every series", step,
                     c->time[k] == SF_TIME_HOUR ? "time of day" : "time of the week");
        return sf_err_set(e, SF_EUSAGE, "--time-features %s: the time column \"%s\" %s, so %s is the same on every "
                          "row: a constant input that tells the model nothing (%s%s)", name, in->time_column, why, name,
                          varies[0] ? "time features that vary in this file: " : "no time feature varies in this file",
                          varies);
    }
    return 0;
}

static int64_t time_us(enum sf_time_kind kind, int64_t t);

// Feature f's inputs at time us, as sf_block_gather makes them.
static void time_inputs(int64_t us, enum sf_time_feature f, float out[2]) {
    double a = 2 * M_PI * sf_time_phase(us, f);
    out[0] = (float)sin(a), out[1] = (float)cos(a);
}

int sf_columns_check_time_rows(const sf_columns *c, const sf_pack *p, const sf_series *ranges, uint64_t n, sf_err *e) {
    const sf_pack_info *in = sf_pack_get_info(p);
    if (!c->ntime || in->time_kind == SF_TIME_NONE || in->nrows == 0) return 0;
    size_t rows = in->chunk_rows < in->nrows ? in->chunk_rows : (size_t)in->nrows;
    int64_t *time = malloc(rows * sizeof *time);
    void *stored = malloc(sf_pack_max_stored_size(p) + 1);
    sf_pack_dctx *d = sf_pack_dctx_create();
    int rc = time && stored && d ? 0 : sf_err_set(e, SF_ENOMEM, "out of memory for a chunk's times");
    float lo[SF_TIME_FEATURE_COUNT][2], hi[SF_TIME_FEATURE_COUNT][2];
    uint32_t varied = 0;
    bool first = true;
    uint64_t decoded = UINT64_MAX;
    for (uint64_t k = 0; !rc && varied < c->ntime && k < n; k++) {
        uint64_t row = ranges[k].first_row, end = row + ranges[k].rows;
        while (!rc && varied < c->ntime && row < end) {
            uint64_t i = row / in->chunk_rows;
            sf_chunk ch = sf_pack_chunk_locate(p, i);
            if (i != decoded && !(rc = sf_pack_chunk_read(p, i, stored, e)))
                rc = sf_pack_chunk_decode_all(d, p, i, stored, NULL, time, NULL, e);
            if (rc) break;
            decoded = i;
            uint64_t stop = end < ch.first_row + ch.rows ? end : ch.first_row + ch.rows;
            for (; row < stop; row++) {
                int64_t us = time_us(in->time_kind, time[row - ch.first_row]);
                varied = 0;
                for (uint32_t t = 0; t < c->ntime; t++) {
                    float x[2];
                    time_inputs(us, c->time[t], x);
                    for (int j = 0; j < 2; j++) {
                        lo[t][j] = first || x[j] < lo[t][j] ? x[j] : lo[t][j];
                        hi[t][j] = first || x[j] > hi[t][j] ? x[j] : hi[t][j];
                    }
                    // as sf_column_flat under minmax: a spread below FLT_MIN is none
                    varied += hi[t][0] - lo[t][0] >= FLT_MIN || hi[t][1] - lo[t][1] >= FLT_MIN;
                }
                first = false;
            }
        }
    }
    for (uint32_t t = 0; !rc && !first && t < c->ntime; t++) {
        if (hi[t][0] - lo[t][0] >= FLT_MIN || hi[t][1] - lo[t][1] >= FLT_MIN) continue;
        const char *name = sf_time_feature_name(c->time[t]);
        rc = sf_err_set(e, SF_EUSAGE, "--time-features %s: %s has one value on every training row of the time column "
                        "\"%s\" (its times are all at the same %s), so it is a constant input that tells the model "
                        "nothing (hint: --time-features without %s)", name, name, in->time_column,
                        c->time[t] == SF_TIME_HOUR ? "time of day" : c->time[t] == SF_TIME_WEEKDAY ? "time of the week"
                                                                                                 : "time of the year",
                        name);
    }
    free(time), free(stored);
    sf_pack_dctx_free(d);
    return rc;
}

void sf_columns_time_list(const sf_columns *c, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = 0;
    for (uint32_t k = 0; k < c->ntime; k++) sf_list_append(buf, cap, &len, sf_time_feature_name(c->time[k]));
}

// The name input j of c stands for: its column's, or its time feature's.
static const char *input_name(const sf_columns *c, const sf_pack_info *in, uint32_t j) {
    if (c->features[j] != SF_COLUMN_TIME) return in->col_names[c->features[j]];
    uint32_t first = c->nfeatures - 2 * c->ntime;
    return sf_time_feature_name(c->time[(j - first) / 2]);
}

int sf_columns_future(sf_columns *c, const sf_pack_info *info, const char *list, sf_err *e) {
    free(c->future);
    c->future = NULL, c->nfuture = 0;
    if (!list || !*list) return 0;
    if (!(c->future = malloc(c->nfeatures * sizeof *c->future + 1))) return sf_err_set(e, SF_ENOMEM, "out of memory");
    char name[4096];
    for (const char *p = list; p;) {
        if (sf_list_next(&p, name, sizeof name))
            return sf_err_set(e, SF_EUSAGE, "--future-features '%s': expected names separated by commas", list);
        uint32_t col = 0;
        while (col < info->ncols && strcmp(info->col_names[col], name)) col++;
        for (uint32_t k = 0; k < c->ntargets; k++)
            if (c->targets[k] == col)
                return sf_err_set(e, SF_EUSAGE, "--future-features %s: \"%s\" is a target, and its value at the "
                                  "target rows is what the model predicts (hint: a column known in advance that is "
                                  "no --targets)", name, name);
        if (info->time_column[0] && !strcmp(info->time_column, name))
            return sf_err_set(e, SF_EUSAGE, "--future-features %s: \"%s\" is the time column, no input; its "
                              "calendar at the target rows comes as a time feature (hint: --time-features hour and "
                              "--future-features hour)", name, name);
        if (info->series_column[0] && !strcmp(info->series_column, name))
            return sf_err_set(e, SF_EUSAGE, "--future-features %s: \"%s\" is the series column, no input (it "
                              "names the series a row belongs to)", name, name);
        uint32_t found = 0;
        for (uint32_t j = 0; j < c->nfeatures; j++) {
            if (strcmp(input_name(c, info, j), name)) continue;
            for (uint32_t k = 0; k < c->nfuture; k++)
                if (c->future[k] == j)
                    return sf_err_set(e, SF_EUSAGE, "--future-features: \"%s\" is named twice", name);
            c->future[c->nfuture++] = j, found++;
        }
        if (c->nfuture > SF_MAX_FUTURE_INPUTS)
            return sf_err_set(e, SF_EUSAGE, "--future-features %s: %u inputs, more than the %u a model takes (a "
                              "categorical column is one a value)", list, c->nfuture, SF_MAX_FUTURE_INPUTS);
        if (found) continue;
        char inputs[512] = "";
        size_t n = 0;
        for (uint32_t j = 0; j < c->nfeatures && n < sizeof inputs - 4; j++)
            if (!j || strcmp(input_name(c, info, j), input_name(c, info, j - 1)))
                n += (size_t)snprintf(inputs + n, sizeof inputs - n, "%s%s", j ? ", " : "", input_name(c, info, j));
        return sf_err_set(e, SF_EUSAGE, "--future-features %s: \"%s\" is %s of the window's inputs, which a future "
                          "feature also is (its past values): %s (hint: add it to --features or --time-features)",
                          name, name, col < info->ncols ? "a column but none" : "none", inputs);
    }
    // In the inputs' order, whatever the list's: a model's future values are
    // the same whichever way its features were named.
    for (uint32_t k = 1; k < c->nfuture; k++)
        for (uint32_t i = k; i > 0 && c->future[i - 1] > c->future[i]; i--) {
            uint32_t t = c->future[i];
            c->future[i] = c->future[i - 1], c->future[i - 1] = t;
        }
    return 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const sf_series *)a)->name, ((const sf_series *)b)->name);
}

int sf_columns_onehot(sf_columns *c, const sf_pack_info *in, const sf_series *names, uint64_t n, sf_err *e) {
    free(c->onehot_code);
    c->onehot_code = NULL, c->nonehot = 0;
    if (!in->series_column[0])
        return sf_err_set(e, SF_EUSAGE, "--series-features: the file has one series, without a series column: there "
                          "is no series to tell apart (hint: pack the CSV with --series-column NAME)");
    uint64_t count = names ? n : in->nseries;
    if (count > SF_MAX_ONEHOT)
        return sf_err_set(e, SF_EUSAGE, "--series-features onehot: %llu series, more than the %u inputs it makes at "
                          "most", (unsigned long long)count, SF_MAX_ONEHOT);
    // The model's names sorted, each with its input in first_row.
    sf_series *known = malloc(count * sizeof *known + 1);
    c->onehot_code = malloc(in->nseries * sizeof *c->onehot_code + 1);
    if (!known || !c->onehot_code) {
        free(known);
        return sf_err_set(e, SF_ENOMEM, "out of memory");
    }
    const sf_series *model = names ? names : in->series;
    for (uint64_t s = 0; s < count; s++) known[s] = (sf_series){.first_row = s, .name = model[s].name};
    qsort(known, count, sizeof *known, by_name);
    int rc = 0;
    for (uint64_t s = 0; !rc && !names && s < count; s++) {
        bool empty = !known[s].name[0], twice = s && !strcmp(known[s].name, known[s - 1].name);
        if (!empty && !twice) continue;
        char name[256];
        sf_escape_controls(name, sizeof name, known[s].name, strlen(known[s].name));
        rc = sf_err_set(e, SF_EUSAGE, "--series-features: %s \"%s\", and a checkpoint knows each series by its name "
                        "(hint: pack the file so that every row has a series and each series is one)",
                        empty ? "a series with an empty name" : "two series are named", name);
    }
    for (uint64_t s = 0; !rc && s < in->nseries; s++) {
        sf_series key = {.name = in->series[s].name};
        const sf_series *k = bsearch(&key, known, count, sizeof *known, by_name);
        if (k) {
            c->onehot_code[s] = (uint32_t)k->first_row;
            continue;
        }
        char name[256];
        sf_escape_controls(name, sizeof name, in->series[s].name, strlen(in->series[s].name));
        rc = sf_err_set(e, SF_EUSAGE, "series \"%s\" (row %llu) is not one of the %llu series the model was trained "
                        "on with --series-features, which gives each of those series an input of its own: there is "
                        "none for it (hint: --data with the series trained on, or train on data that holds it)", name,
                        (unsigned long long)in->series[s].first_row, (unsigned long long)count);
    }
    free(known);
    if (rc) {
        free(c->onehot_code);
        c->onehot_code = NULL;
        return rc;
    }
    c->nonehot = (uint32_t)count, c->onehot_table = in->series, c->nonehot_table = in->nseries;
    return 0;
}

int sf_columns_future_list(const sf_columns *c, const sf_pack_info *info, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = 0;
    for (uint32_t k = 0; k < c->nfuture; k++) {
        const char *name = input_name(c, info, c->future[k]);
        if (k && !strcmp(name, input_name(c, info, c->future[k - 1]))) continue;  // a categorical or time feature once
        if (sf_list_append(buf, cap, &len, name)) return SF_ERANGE;
    }
    return 0;
}

void sf_columns_free(sf_columns *c) {
    free(c->features);
    free(c->targets);
    free(c->feature_scale);
    free(c->feature_offset);
    free(c->target_scale);
    free(c->target_offset);
    free(c->target_mean);
    free(c->codes);
    free(c->change_from);
    free(c->future);
    free(c->onehot_code);
    free(c->scoped_feature_scale), free(c->scoped_feature_offset);
    free(c->scoped_target_scale), free(c->scoped_target_offset), free(c->scoped_target_mean);
    *c = (sf_columns){0};
}

bool sf_columns_target_imputed(const sf_columns *c, const sf_pack_info *in, float y, uint32_t j) {
    return isnan(y) && in->imputed && in->imputed[c->targets[j]];
}

bool sf_column_flat(const sf_col_stats *s, enum sf_norm norm) {
    return (norm == SF_NORM_ZSCORE ? s->std : s->max - s->min) < FLT_MIN;  // 0 too: one value
}

// Returns true when the spread is too small to scale by (sf_column_flat).
static bool scaling(const sf_col_stats *s, enum sf_norm norm, float *scale, float *offset) {
    double a = 1, b = 0, spread = norm == SF_NORM_ZSCORE ? s->std : s->max - s->min;
    bool flat = sf_column_flat(s, norm);
    if (norm == SF_NORM_ZSCORE && spread >= FLT_MIN) {
        a = 1 / s->std;
        b = -s->mean / s->std;
    } else if (norm == SF_NORM_ZSCORE) {
        b = -s->mean;
    } else if (norm == SF_NORM_MINMAX) {
        a = spread >= FLT_MIN ? 1 / spread : 1;
        b = spread >= FLT_MIN ? -s->min / spread : -s->min;
    }
    *scale = (float)a;
    *offset = (float)b;
    return flat;
}

// Column indices of a comma-separated list of names (NULL: every column, or
// every numeric one for targets).
static int resolve(const sf_pack_info *info, const char *list, bool targets, uint32_t **out, uint32_t *n,
                   sf_err *e) {
    const char *what = targets ? "target" : "feature";
    *n = 0;
    size_t names = 1;
    for (const char *q = list; q && *q; q++) names += *q == ',';
    *out = malloc((list ? names : info->ncols) * sizeof **out + 1);
    if (!*out) return sf_err_set(e, SF_ENOMEM, "out of memory");
    if (!list) {
        for (uint32_t c = 0; c < info->ncols; c++)
            if (!targets || !sf_pack_category(info, c)) (*out)[(*n)++] = c;
        if (*n == 0) return sf_err_set(e, SF_EUSAGE, "every column is categorical: there is no number to predict");
        return 0;
    }
    char name[4096];
    for (const char *p = list; p;) {
        if (sf_list_next(&p, name, sizeof name))
            return sf_err_set(e, SF_EINVAL, "%s list '%s': expected names separated by commas; a name with a comma or "
                              "a quote in quotes, as in CSV (\"rate,1y\")", what, list);
        uint32_t c = 0;
        while (c < info->ncols && strcmp(info->col_names[c], name)) c++;
        if (c == info->ncols) {
            char names[512] = "";
            size_t k = 0;
            for (uint32_t i = 0; i < info->ncols && k < sizeof names - 4; i++)
                k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", i ? ", " : "", info->col_names[i]);
            return sf_err_set(e, SF_EINVAL, "%s \"%s\" is not a column; the columns are: %s", what, name, names);
        }
        for (uint32_t k = 0; k < *n; k++)  // twice would train, then fail every checkpoint's read-back
            if ((*out)[k] == c)
                return sf_err_set(e, SF_EUSAGE, "%s \"%s\" is named twice in --%ss '%s': name each column once",
                                  what, name, what, list);
        if (targets && sf_pack_category(info, c))
            return sf_err_set(e, SF_EUSAGE, "target \"%s\" is categorical: the model predicts numbers (MSE); "
                              "choose numeric --targets, and \"%s\" can be a feature", name, name);
        (*out)[(*n)++] = c;
    }
    return 0;
}

// The inputs of categorical column col in *codes (malloc'd): the file's
// codes, or, given a model's categories, the file's code of each of its
// values in the model's order.
static int category_inputs(sf_columns *c, const sf_pack_info *info, uint32_t col, const char *categories,
                           int32_t **codes, uint32_t *n, sf_err *e) {
    const sf_category *cat = sf_pack_category(info, col);
    const char *name = info->col_names[col];
    *codes = NULL, *n = 0;
    if (!categories) {
        if (!(*codes = malloc(cat->nvalues * sizeof **codes))) return sf_err_set(e, SF_ENOMEM, "out of memory");
        for (uint32_t v = 0; v < cat->nvalues; v++) (*codes)[v] = (int32_t)v;
        *n = cat->nvalues;
        return 0;
    }
    size_t cap = strlen(categories) + 1;
    char *group = malloc(cap), *value = malloc(cap);
    bool *seen = calloc(cat ? cat->nvalues : 1, sizeof *seen);
    int rc = !group || !value || !seen ? sf_err_set(e, SF_ENOMEM, "out of memory") : 0;
    bool found = false;
    for (const char *p = *categories ? categories : NULL; !rc && p && !found;) {
        if (sf_list_next(&p, group, cap)) {
            rc = sf_err_set(e, SF_EFORMAT, "the model's categories '%s' are not a list of lists", categories);
            break;
        }
        const char *q = group;
        if (sf_list_next(&q, value, cap) || strcmp(value, name)) continue;
        found = true;
        if (!cat) {
            rc = sf_err_set(e, SF_EUSAGE, "column \"%s\" was categorical in training and holds numbers in this file "
                            "(hint: pack it with --categorical %s)", name, name);
            break;
        }
        uint32_t max = 1;
        for (const char *t = q; t && *t; t++) max += *t == ',';
        if (!(*codes = malloc(max * sizeof **codes))) rc = sf_err_set(e, SF_ENOMEM, "out of memory");
        while (!rc && q) {
            if (sf_list_next(&q, value, cap)) {
                rc = sf_err_set(e, SF_EFORMAT, "the model's values of \"%s\" are not a list", name);
                break;
            }
            int32_t code = SF_CODE_UNSEEN;
            for (uint32_t v = 0; v < cat->nvalues && code == SF_CODE_UNSEEN; v++)
                if (!strcmp(cat->values[v], value)) code = (int32_t)v, seen[v] = true;
            (*codes)[(*n)++] = code;
        }
    }
    if (!rc && !found && cat)
        rc = sf_err_set(e, SF_EUSAGE, "column \"%s\" is categorical in this file and held numbers in training "
                        "(hint: pack the CSV as it was packed for training, without --categorical %s)", name, name);
    for (uint32_t v = 0; !rc && cat && v < cat->nvalues; v++)
        if (!seen[v]) c->unseen_column = c->nunseen++ ? c->unseen_column : col;
    free(group), free(value), free(seen);
    if (rc) free(*codes), *codes = NULL;
    return rc;
}

// The feature columns into c's arrays: a number one input, a categorical
// column one per value.
static int expand_features(sf_columns *c, const sf_pack_info *info, const uint32_t *cols, uint32_t ncols,
                           const char *categories, sf_err *e) {
    int rc = 0;
    for (uint32_t k = 0; !rc && k < ncols; k++) {
        int32_t one = SF_CODE_NONE, *codes = &one;
        uint32_t n = 1;
        bool category = sf_pack_category(info, cols[k]) || (categories && *categories);
        if (category && (rc = category_inputs(c, info, cols[k], categories, &codes, &n, e))) break;
        if (!codes) codes = &one, n = 1;  // a number, as the model's categories say too
        uint32_t total = c->nfeatures + n;
        uint32_t *f = realloc(c->features, total * sizeof *f + 1);
        if (f) c->features = f;
        int32_t *cd = f ? realloc(c->codes, total * sizeof *cd + 1) : NULL;
        if (cd) c->codes = cd;
        if (!cd) rc = sf_err_set(e, SF_ENOMEM, "out of memory");
        for (uint32_t j = 0; !rc && j < n; j++) f[c->nfeatures + j] = cols[k], cd[c->nfeatures + j] = codes[j];
        if (!rc) c->nfeatures = total;
        if (codes != &one) free(codes);
    }
    return rc;
}

int sf_columns_create(sf_columns *c, const sf_pack_info *info, const char *features, const char *targets,
                      const char *categories, enum sf_norm norm, sf_err *e) {
    *c = (sf_columns){0};
    if (norm < SF_NORM_ZSCORE || norm > SF_NORM_NONE) return sf_err_set(e, SF_EINVAL, "unknown normalisation %d", norm);
    uint32_t *cols = NULL, ncols = 0;
    int rc = resolve(info, features, false, &cols, &ncols, e);
    if (!rc) rc = expand_features(c, info, cols, ncols, categories, e);
    free(cols);
    if (!rc) rc = resolve(info, targets, true, &c->targets, &c->ntargets, e);
    if (!rc) {
        c->feature_scale = malloc(c->nfeatures * sizeof(float) + 1);
        c->feature_offset = malloc(c->nfeatures * sizeof(float) + 1);
        c->target_scale = malloc(c->ntargets * sizeof(float) + 1);
        c->target_offset = malloc(c->ntargets * sizeof(float) + 1);
        c->target_mean = malloc(c->ntargets * sizeof(float) + 1);
        if (!c->feature_scale || !c->feature_offset || !c->target_scale || !c->target_offset || !c->target_mean)
            rc = sf_err_set(e, SF_ENOMEM, "out of memory");
    }
    if (rc) {
        sf_columns_free(c);
        return rc;
    }
    sf_columns_rescale(c, info->stats, norm);
    return 0;
}

void sf_columns_rescale(sf_columns *c, const sf_col_stats *stats, enum sf_norm norm) {
    c->nflat = 0, c->flat_column = 0;
    for (uint32_t j = 0; j < c->nfeatures + c->ntargets; j++) {
        bool is_x = j < c->nfeatures;
        uint32_t k = is_x ? j : j - c->nfeatures, col = is_x ? c->features[k] : c->targets[k];
        if (is_x && (c->codes[k] != SF_CODE_NONE || col == SF_COLUMN_TIME)) {  // one-hot, sin/cos: as they are
            c->feature_scale[k] = 1, c->feature_offset[k] = 0;
            continue;
        }
        if (!is_x) c->target_mean[k] = (float)stats[col].mean;
        if (scaling(&stats[col], norm, is_x ? &c->feature_scale[k] : &c->target_scale[k],
                    is_x ? &c->feature_offset[k] : &c->target_offset[k]) &&
            (!c->nflat || col != c->flat_column))  // a feature that is a target too counts once
            c->flat_column = c->nflat++ ? c->flat_column : col;
    }
}

int sf_columns_scope(sf_columns *c, const sf_series *series, uint64_t n, const sf_col_stats *stats, uint32_t ncols,
                     enum sf_norm norm, uint64_t *fallbacks, sf_err *e) {
    uint32_t nf = c->nfeatures, nt = c->ntargets;
    uint64_t dropped = 0;
    free(c->scoped_feature_scale), free(c->scoped_feature_offset);
    free(c->scoped_target_scale), free(c->scoped_target_offset), free(c->scoped_target_mean);
    c->scoped_feature_scale = c->scoped_feature_offset = c->scoped_target_scale = c->scoped_target_offset = NULL;
    c->scoped_target_mean = NULL, c->nscoped = 0, c->scoped = NULL;
    uint64_t have = sf_machine_memory(), need = n * ((uint64_t)nf * 2 + (uint64_t)nt * 3) * sizeof(float);
    if (n > SIZE_MAX / sizeof(float) / ((size_t)nf * 2 + (size_t)nt * 3 + 1) || (have && need > have / 4))
        return sf_err_set(e, SF_ENOMEM, "--norm-scope series: the scales of %llu series x %u columns (%.1f GB) do not "
                          "fit in this machine's memory (hint: --norm-scope global)", (unsigned long long)n, nf + nt,
                          need / 1e9);
    c->scoped_feature_scale = malloc(n * nf * sizeof(float) + 1);
    c->scoped_feature_offset = malloc(n * nf * sizeof(float) + 1);
    c->scoped_target_scale = malloc(n * nt * sizeof(float) + 1);
    c->scoped_target_offset = malloc(n * nt * sizeof(float) + 1);
    c->scoped_target_mean = malloc(n * nt * sizeof(float) + 1);
    if (!c->scoped_feature_scale || !c->scoped_feature_offset || !c->scoped_target_scale || !c->scoped_target_offset ||
        !c->scoped_target_mean)
        return sf_err_set(e, SF_ENOMEM, "out of memory for the scales of %llu series", (unsigned long long)n);
    for (uint64_t s = 0; s < n; s++) {
        const sf_col_stats *st = stats ? stats + s * ncols : NULL;
        for (uint32_t j = 0; j < nf + nt; j++) {
            bool is_x = j < nf;
            uint32_t k = is_x ? j : j - nf, col = is_x ? c->features[k] : c->targets[k];
            float *scale = is_x ? &c->scoped_feature_scale[s * nf + k] : &c->scoped_target_scale[s * nt + k];
            float *offset = is_x ? &c->scoped_feature_offset[s * nf + k] : &c->scoped_target_offset[s * nt + k];
            if (is_x && (c->codes[k] != SF_CODE_NONE || col == SF_COLUMN_TIME)) {  // one-hot, sin/cos: as they are
                *scale = 1, *offset = 0;
                continue;
            }
            // Too few rows or one value: the global scaling, not a constant
            // input or a target scaled by 1 in its own units.
            if (!st || sf_column_flat(&st[col], norm)) {
                *scale = is_x ? c->feature_scale[k] : c->target_scale[k];
                *offset = is_x ? c->feature_offset[k] : c->target_offset[k];
                if (!is_x) c->scoped_target_mean[s * nt + k] = c->target_mean[k];
                dropped++;
                continue;
            }
            if (!is_x) c->scoped_target_mean[s * nt + k] = (float)st[col].mean;
            scaling(&st[col], norm, scale, offset);
        }
    }
    c->nscoped = n, c->scoped = series;
    if (fallbacks) *fallbacks = dropped;
    return 0;
}

uint64_t sf_columns_series_of(const sf_columns *c, uint64_t row) {
    uint64_t lo = 0, hi = c->nscoped;  // the last series that starts at or before row
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (c->scoped[mid].first_row <= row) lo = mid;
        else hi = mid;
    }
    if (lo < c->nscoped && row >= c->scoped[lo].first_row && row - c->scoped[lo].first_row < c->scoped[lo].rows)
        return lo;
    return c->nscoped;
}

sf_columns sf_columns_at(const sf_columns *c, uint64_t row) {
    sf_columns v = *c;
    uint64_t s = c->nscoped ? sf_columns_series_of(c, row) : 0;
    if (s < c->nscoped) {
        v.feature_scale = c->scoped_feature_scale + s * c->nfeatures;
        v.feature_offset = c->scoped_feature_offset + s * c->nfeatures;
        v.target_scale = c->scoped_target_scale + s * c->ntargets;
        v.target_offset = c->scoped_target_offset + s * c->ntargets;
        v.target_mean = c->scoped_target_mean + s * c->ntargets;
    }
    return v;
}

int sf_columns_flat_list(const sf_columns *c, const sf_pack_info *info, const sf_col_stats *stats,
                         enum sf_norm norm, bool targets, char *buf, size_t cap) {
    size_t len = 0;
    uint32_t n = 0;
    buf[0] = 0;
    for (uint32_t j = 0; j < (targets ? c->ntargets : c->nfeatures); j++) {
        uint32_t col = targets ? c->targets[j] : c->features[j];
        if ((!targets && (c->codes[j] != SF_CODE_NONE || col == SF_COLUMN_TIME)) || !sf_column_flat(&stats[col], norm))
            continue;
        bool target = false;  // a feature that is a target too is named as a target
        for (uint32_t t = 0; !targets && t < c->ntargets; t++) target |= c->targets[t] == col;
        if (target) continue;
        if (sf_list_append(buf, cap, &len, info->col_names[col])) return SF_ERANGE;
        n++;
    }
    return (int)n;
}

int sf_columns_predict_change(sf_columns *c, const sf_pack_info *info, sf_err *e) {
    free(c->change_from);
    if (!(c->change_from = malloc(c->ntargets * sizeof *c->change_from + 1))) return sf_err_set(e, SF_ENOMEM, "out of memory");
    for (uint32_t j = 0; j < c->ntargets; j++) {
        c->change_from[j] = -1;
        for (uint32_t k = 0; k < c->nfeatures && c->change_from[j] < 0; k++)
            if (c->features[k] == c->targets[j] && c->codes[k] == SF_CODE_NONE) c->change_from[j] = (int32_t)k;
        if (c->change_from[j] < 0) {
            int rc = sf_err_set(e, SF_EUSAGE, "--target change: target \"%s\" is not a feature, so there is no last "
                                "value to predict a change from (hint: add it to --features)",
                                info->col_names[c->targets[j]]);
            free(c->change_from);
            c->change_from = NULL;
            return rc;
        }
    }
    return 0;
}

int sf_columns_feature_list(const sf_columns *c, const sf_pack_info *info, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = 0;
    for (uint32_t j = 0; j < c->nfeatures; j++) {
        if (c->features[j] == SF_COLUMN_TIME) continue;
        if (c->codes[j] != SF_CODE_NONE && j && c->features[j - 1] == c->features[j]) continue;
        if (sf_list_append(buf, cap, &len, info->col_names[c->features[j]])) return SF_ERANGE;
    }
    return 0;
}

int sf_columns_categories(const sf_columns *c, const sf_pack_info *info, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = 0;
    for (uint32_t j = 0; j < c->nfeatures;) {
        uint32_t col = c->features[j], end = j + 1;
        if (c->codes[j] == SF_CODE_NONE) {
            j++;
            continue;
        }
        while (end < c->nfeatures && c->features[end] == col && c->codes[end] != SF_CODE_NONE) end++;
        size_t glen = 0, gcap = cap;
        char *group = malloc(gcap);
        if (!group) return SF_ENOMEM;
        int rc = sf_list_append(group, gcap, &glen, info->col_names[col]);
        const sf_category *cat = sf_pack_category(info, col);
        for (uint32_t k = j; !rc && k < end; k++)
            rc = c->codes[k] >= 0 && cat ? sf_list_append(group, gcap, &glen, cat->values[c->codes[k]]) : SF_EINVAL;
        if (!rc) rc = sf_list_append(buf, cap, &len, group);
        free(group);
        if (rc) return rc;
        j = end;
    }
    return 0;
}

struct sf_block_loader {
    const sf_pack *pack;
    const sf_columns *cols;
    sf_decoder *dec;
    void *stored;
};

sf_block_loader *sf_block_loader_create(const sf_pack *p, const sf_columns *cols) {
    sf_block_loader *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->pack = p;
    l->cols = cols;
    l->dec = sf_decoder_create(p);
    l->stored = malloc(sf_pack_max_stored_size(p) + 1);
    if (!l->dec || !l->stored) {
        sf_block_loader_free(l);
        return NULL;
    }
    return l;
}

void sf_block_loader_free(sf_block_loader *l) {
    if (!l) return;
    sf_decoder_free(l->dec);
    free(l->stored);
    free(l);
}

void sf_block_data_free(sf_block_data *d) {
    free(d->feat);
    free(d->targ);
    *d = (sf_block_data){0};
}

// Scales one column's run of values into a row-major destination.
static void gather_column(float *dst, size_t dst_stride, const float *src, size_t n, float scale, float offset) {
    for (size_t r = 0; r < n; r++) dst[r * dst_stride] = src[r] * scale + offset;
}

// A time of the file in microseconds since 1970, as sf_time_phase takes it.
// pack keeps times within years 0000 to 9999, but a file may hold any
// int64 (written by other means): beyond int64 microseconds it saturates.
static int64_t time_us(enum sf_time_kind kind, int64_t t) {
    int64_t us, per = kind == SF_TIME_EPOCH_S ? 1000000 : kind == SF_TIME_EPOCH_MS ? 1000 : 1;
    if (kind == SF_TIME_EPOCH_NS) return t / 1000;
    if (__builtin_mul_overflow(t, per, &us)) return t < 0 ? INT64_MIN : INT64_MAX;
    return us;  // ISO-8601 and epoch microseconds: per is 1
}

// The rows [lo, hi) of chunk, all scaled by cols.
static void gather_rows(sf_block_data *d, const sf_columns *cols, const sf_chunk *chunk, const float *values,
                        const int64_t *times, uint64_t lo, uint64_t hi) {
    size_t n = (size_t)(hi - lo), from = (size_t)(lo - chunk->first_row), to = (size_t)(lo - d->row_lo);
    uint32_t nf = cols->nfeatures, ncol = nf - 2 * cols->ntime;
    for (uint32_t j = 0; j < ncol; j++) {
        const float *src = values + (size_t)cols->features[j] * chunk->rows + from;
        if (cols->codes[j] == SF_CODE_NONE) {
            gather_column(d->feat + to * nf + j, nf, src, n, cols->feature_scale[j], cols->feature_offset[j]);
            continue;
        }
        float code = (float)cols->codes[j];  // SF_CODE_UNSEEN matches no code
        for (size_t r = 0; r < n; r++) d->feat[(to + r) * nf + j] = src[r] == code ? 1.0f : 0.0f;
    }
    for (size_t r = 0; cols->ntime && r < n; r++) {
        int64_t us = time_us(cols->time_kind, times[from + r]);
        float *x = d->feat + (to + r) * nf + ncol;
        for (uint32_t k = 0; k < cols->ntime; k++) time_inputs(us, cols->time[k], x + 2 * k);
    }
    for (uint32_t j = 0; j < cols->ntargets; j++)
        gather_column(d->targ + to * cols->ntargets + j, cols->ntargets,
                      values + (size_t)cols->targets[j] * chunk->rows + from, n, cols->target_scale[j],
                      cols->target_offset[j]);
}

void sf_block_gather(sf_block_data *d, const sf_columns *cols, const sf_chunk *chunk, const float *values,
                     const int64_t *times) {
    uint64_t lo = chunk->first_row > d->row_lo ? chunk->first_row : d->row_lo;
    uint64_t hi = chunk->first_row + chunk->rows < d->row_hi ? chunk->first_row + chunk->rows : d->row_hi;
    if (lo >= hi) return;
    if (!cols->nscoped) {
        gather_rows(d, cols, chunk, values, times, lo, hi);
        return;
    }
    while (lo < hi) {  // a run of one series' rows at a time, by its own scales
        uint64_t s = sf_columns_series_of(cols, lo), end = hi;
        if (s < cols->nscoped && cols->scoped[s].first_row + cols->scoped[s].rows < end)
            end = cols->scoped[s].first_row + cols->scoped[s].rows;
        sf_columns v = sf_columns_at(cols, lo);
        gather_rows(d, &v, chunk, values, times, lo, end);
        lo = end;
    }
}

int sf_block_load(sf_block_loader *l, const sf_block_task *t, sf_block_data *d, sf_err *e) {
    const sf_pack_info *in = sf_pack_get_info(l->pack);
    const sf_columns *cols = l->cols;
    size_t rows = (size_t)(t->row_hi - t->row_lo);
    if (rows > d->cap_rows) {
        float *f = realloc(d->feat, rows * cols->nfeatures * sizeof(float));
        if (f) d->feat = f;
        float *g = realloc(d->targ, rows * cols->ntargets * sizeof(float));
        if (g) d->targ = g;
        if (!f || !g) return sf_err_set(e, SF_ENOMEM, "out of memory for a block of %zu rows", rows);
        d->cap_rows = rows;
    }
    d->row_lo = t->row_lo;
    d->row_hi = t->row_hi;
    if (rows == 0) return 0;
    for (uint64_t c = t->row_lo / in->chunk_rows; c <= (t->row_hi - 1) / in->chunk_rows; c++) {
        int rc = sf_decoder_holds(l->dec, c) ? 0 : sf_pack_chunk_read(l->pack, c, l->stored, e);
        if (!rc) rc = sf_decoder_run(l->dec, l->pack, cols, c, l->stored, d, e);
        if (rc) return rc;
    }
    return 0;
}
