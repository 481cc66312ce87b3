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
        if (!o) return sf_err_set(e, SF_ENOMEM, "out of memory");
        c->feature_offset = o;
        for (uint32_t j = c->nfeatures; j < n; j++) idx[j] = SF_COLUMN_TIME, s[j] = 1, o[j] = 0;  // sin, cos: in [-1, 1]
        c->nfeatures = n;
        c->time[c->ntime++] = (enum sf_time_feature)f;
    }
    c->time_kind = info->time_kind;
    return 0;
}

void sf_columns_time_list(const sf_columns *c, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = 0;
    for (uint32_t k = 0; k < c->ntime; k++) sf_list_append(buf, cap, &len, sf_time_feature_name(c->time[k]));
}

void sf_columns_free(sf_columns *c) {
    free(c->features);
    free(c->targets);
    free(c->feature_scale);
    free(c->feature_offset);
    free(c->target_scale);
    free(c->target_offset);
    *c = (sf_columns){0};
}

// Returns true when a spread that is not 0 is too small to scale by.
static bool scaling(const sf_col_stats *s, enum sf_norm norm, float *scale, float *offset) {
    double a = 1, b = 0, spread = norm == SF_NORM_ZSCORE ? s->std : s->max - s->min;
    bool flat = spread > 0 && spread < FLT_MIN;
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

// Column indices of a comma-separated list of names (every column for NULL).
static int resolve(const sf_pack_info *info, const char *list, const char *what, uint32_t **out, uint32_t *n,
                   sf_err *e) {
    *n = 0;
    size_t names = 1;
    for (const char *q = list; q && *q; q++) names += *q == ',';
    *out = malloc((list ? names : info->ncols) * sizeof **out);
    if (!*out) return sf_err_set(e, SF_ENOMEM, "out of memory");
    if (!list) {
        for (uint32_t c = 0; c < info->ncols; c++) (*out)[(*n)++] = c;
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
        (*out)[(*n)++] = c;
    }
    return 0;
}

int sf_columns_create(sf_columns *c, const sf_pack_info *info, const char *features, const char *targets,
                      enum sf_norm norm, sf_err *e) {
    *c = (sf_columns){0};
    if (norm < SF_NORM_ZSCORE || norm > SF_NORM_NONE) return sf_err_set(e, SF_EINVAL, "unknown normalisation %d", norm);
    int rc = resolve(info, features, "feature", &c->features, &c->nfeatures, e);
    if (!rc) rc = resolve(info, targets, "target", &c->targets, &c->ntargets, e);
    if (!rc) {
        c->feature_scale = malloc(c->nfeatures * sizeof(float));
        c->feature_offset = malloc(c->nfeatures * sizeof(float));
        c->target_scale = malloc(c->ntargets * sizeof(float));
        c->target_offset = malloc(c->ntargets * sizeof(float));
        if (!c->feature_scale || !c->feature_offset || !c->target_scale || !c->target_offset)
            rc = sf_err_set(e, SF_ENOMEM, "out of memory");
    }
    if (rc) {
        sf_columns_free(c);
        return rc;
    }
    for (uint32_t j = 0; j < c->nfeatures + c->ntargets; j++) {
        bool is_x = j < c->nfeatures;
        uint32_t k = is_x ? j : j - c->nfeatures, col = is_x ? c->features[k] : c->targets[k];
        if (scaling(&info->stats[col], norm, is_x ? &c->feature_scale[k] : &c->target_scale[k],
                    is_x ? &c->feature_offset[k] : &c->target_offset[k]) &&
            (!c->nflat || col != c->flat_column))  // a feature that is a target too counts once
            c->flat_column = c->nflat++ ? c->flat_column : col;
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
static int64_t time_us(enum sf_time_kind kind, int64_t t) {
    switch (kind) {
    case SF_TIME_EPOCH_S: return t * 1000000;
    case SF_TIME_EPOCH_MS: return t * 1000;
    case SF_TIME_EPOCH_NS: return t / 1000;
    default: return t;  // ISO-8601 and epoch microseconds
    }
}

void sf_block_gather(sf_block_data *d, const sf_columns *cols, const sf_chunk *chunk, const float *values,
                     const int64_t *times) {
    uint64_t lo = chunk->first_row > d->row_lo ? chunk->first_row : d->row_lo;
    uint64_t hi = chunk->first_row + chunk->rows < d->row_hi ? chunk->first_row + chunk->rows : d->row_hi;
    if (lo >= hi) return;
    size_t n = (size_t)(hi - lo), from = (size_t)(lo - chunk->first_row), to = (size_t)(lo - d->row_lo);
    uint32_t nf = cols->nfeatures, ncol = nf - 2 * cols->ntime;
    for (uint32_t j = 0; j < ncol; j++)
        gather_column(d->feat + to * nf + j, nf, values + (size_t)cols->features[j] * chunk->rows + from, n,
                      cols->feature_scale[j], cols->feature_offset[j]);
    for (size_t r = 0; cols->ntime && r < n; r++) {
        int64_t us = time_us(cols->time_kind, times[from + r]);
        float *x = d->feat + (to + r) * nf + ncol;
        for (uint32_t k = 0; k < cols->ntime; k++) {
            double a = 2 * M_PI * sf_time_phase(us, cols->time[k]);
            x[2 * k] = (float)sin(a), x[2 * k + 1] = (float)cos(a);
        }
    }
    for (uint32_t j = 0; j < cols->ntargets; j++)
        gather_column(d->targ + to * cols->ntargets + j, cols->ntargets,
                      values + (size_t)cols->targets[j] * chunk->rows + from, n, cols->target_scale[j],
                      cols->target_offset[j]);
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
