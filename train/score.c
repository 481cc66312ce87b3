// How good a model is: each target's errors in the data's units next to
// honest baselines on the same target values (persistence, the training
// mean, the seasonal naive forecast), and a verdict per target. evaluate
// drives it with its one replica, the fit with its trainer's replica 0, each
// through a predict callback.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train.h"

const char *const sf_forecaster_names[SF_FORECASTERS] = {"model", "persistence", "mean", "seasonal"};

void sf_season_find(sf_season *s, const sf_pack_info *in, uint32_t given, const sf_window_spec *w) {
    *s = (sf_season){0};
    const char *hint = "hint: --season N, the rows one season spans";
    uint32_t rows = given;
    if (given) {
        snprintf(s->text, sizeof s->text, "%u row%s (--season)", given, given == 1 ? "" : "s");
    } else if (in->time_kind == SF_TIME_NONE) {
        snprintf(s->text, sizeof s->text, "none: the file has no time column to find one in (%s)", hint);
        return;
    } else {
        int64_t day = sf_pack_time_count(in, 86400), step = in->time_step;
        char text[32];
        sf_duration_text((double)step * sf_pack_time_unit(in), text, sizeof text);
        const char *what = NULL;
        if (step > 0 && step < day && day % step == 0 && day / step <= UINT32_MAX) rows = (uint32_t)(day / step), what = "a day";
        else if (step > 0 && step == day) rows = 7, what = "a week";
        else if (step > 0 && day <= INT64_MAX / 7 && step == 7 * day) rows = 52, what = "a year";
        else if (day <= INT64_MAX / 31 && step >= 28 * day && step <= 31 * day) rows = 12, what = "a year";  // months
        if (!rows) {
            snprintf(s->text, sizeof s->text, "none: the time column's typical step, %s, is no divisor of a day, "
                     "nor a day, a week or a month (%s)", step > 0 ? text : "none", hint);
            return;
        }
        snprintf(s->text, sizeof s->text, "%u rows, %s of %s rows (from the time column; --season N overrides)",
                 rows, what, text);
    }
    if (sf_window_steps(w) > 1 && rows < w->horizon) {
        char found[sizeof s->text];
        memcpy(found, s->text, sizeof found);
        snprintf(s->text, sizeof s->text, "none: the season, %.160s, is shorter than the last step (%u rows ahead): "
                 "its value one season before would be after the window's last input row (hint: a --season of %u "
                 "or more)", found, w->horizon, w->horizon);
        return;
    }
    if (sf_window_steps(w) == 1 && rows <= w->horizon) {
        char found[sizeof s->text];
        memcpy(found, s->text, sizeof found);
        snprintf(s->text, sizeof s->text, "none: the season, %.160s, is not longer than the horizon (%u row%s): the "
                 "value one season before the target is not before the window's last input row (hint: a --season "
                 "above %u)", found, w->horizon, w->horizon == 1 ? "" : "s", w->horizon);
        return;
    }
    s->rows = rows;
}

// The window's scaled value of target j's feature at its last input row
// when the model predicts changes (0 when it predicts values).
// Window i's last input row in x (windows of sf_window_x_len floats).
static const float *last_row(const sf_columns *c, uint32_t T, uint32_t steps, const float *x, uint32_t i) {
    size_t X = (size_t)T * c->nfeatures + (size_t)steps * c->nfuture + c->nonehot;  // sf_window_x_len
    return x + i * X + (size_t)(T - 1) * c->nfeatures;
}

static float change_base(const sf_columns *c, uint32_t T, uint32_t steps, const float *x, uint32_t i, uint32_t j) {
    if (!c->change_from) return 0;
    return last_row(c, T, steps, x, i)[c->change_from[j]];
}

float sf_step_prediction(const sf_columns *c, uint32_t T, uint32_t steps, const float *x, const float *pred,
                         uint32_t i, uint32_t k, uint32_t j) {
    size_t at = ((size_t)i * steps + k) * c->ntargets + j;
    return (pred[at] + change_base(c, T, steps, x, i, j) - c->target_offset[j]) / c->target_scale[j];
}

float sf_target_prediction(const sf_columns *c, uint32_t T, const float *x, const float *pred, uint32_t i,
                           uint32_t j) {
    return sf_step_prediction(c, T, 1, x, pred, i, 0, j);
}

// Ascending, in place (n is a handful: the quantiles).
static void sort_floats(float *v, uint32_t n) {
    for (uint32_t a = 1; a < n; a++)
        for (uint32_t b = a; b > 0 && v[b] < v[b - 1]; b--) {
            float t = v[b];
            v[b] = v[b - 1], v[b - 1] = t;
        }
}

void sf_step_quantiles(const sf_columns *c, uint32_t T, uint32_t steps, uint32_t W, const float *x, const float *pred,
                       uint32_t i, uint32_t k, uint32_t j, float *out) {
    size_t at = (((size_t)i * steps + k) * c->ntargets + j) * W;
    float base = change_base(c, T, steps, x, i, j);
    for (uint32_t q = 0; q < W; q++) out[q] = (pred[at + q] + base - c->target_offset[j]) / c->target_scale[j];
    sort_floats(out, W);
}

// A few chunks of the file decoded, the least recently used replaced: the
// rows a window's scores read (its target row, its last input row, one
// season earlier) advance in step, each about once per chunk.
enum { CACHE_SLOTS = 3 };
typedef struct {
    const sf_pack *pack;
    sf_pack_dctx *dctx;
    void *stored;
    struct {
        uint64_t chunk, used;  // chunk UINT64_MAX: empty
        uint32_t rows;
        float *vals;           // column-major, as decoded
    } slot[CACHE_SLOTS];
    uint64_t clock;
} row_cache;

static void cache_free(row_cache *c) {
    sf_pack_dctx_free(c->dctx);
    free(c->stored);
    for (int k = 0; k < CACHE_SLOTS; k++) free(c->slot[k].vals);
}

static int cache_open(row_cache *c, const sf_pack *p, sf_err *e) {
    const sf_pack_info *in = sf_pack_get_info(p);
    size_t rows = in->chunk_rows < in->nrows ? in->chunk_rows : (size_t)in->nrows;
    *c = (row_cache){.pack = p};
    for (int k = 0; k < CACHE_SLOTS; k++) c->slot[k].chunk = UINT64_MAX;
    // Checked before allocating: a file of wide, long chunks could ask for more than the machine has.
    uint64_t need = (uint64_t)CACHE_SLOTS * (rows ? rows : 1) * in->ncols * sizeof(float), have = sf_machine_memory();
    if (have && need > have)
        return sf_err_set(e, SF_ENOMEM, "%s: scoring reads %d decoded chunks of %u rows x %u columns at once, "
                          "%.1f GB, more than the %.1f GB this machine has (hint: pack the file with a smaller "
                          "--chunk-rows)", sf_pack_name(p), CACHE_SLOTS, in->chunk_rows, in->ncols, need / 1e9,
                          have / 1e9);
    c->dctx = sf_pack_dctx_create(), c->stored = malloc(sf_pack_max_stored_size(p));
    bool ok = c->dctx && c->stored;
    for (int k = 0; k < CACHE_SLOTS; k++) {
        c->slot[k].vals = malloc((rows ? rows : 1) * in->ncols * sizeof(float));
        ok = ok && c->slot[k].vals;
    }
    return ok ? 0 : sf_err_set(e, SF_ENOMEM, "out of memory for the rows the scores read");
}

// Column col of the file's row, as the file holds it.
static int cache_value(row_cache *c, uint64_t row, uint32_t col, float *v, sf_err *e) {
    const sf_pack_info *in = sf_pack_get_info(c->pack);
    uint64_t chunk = row / in->chunk_rows, k = row - chunk * in->chunk_rows;
    int at = -1, oldest = 0;
    for (int s = 0; s < CACHE_SLOTS; s++) {
        if (c->slot[s].chunk == chunk) at = s;
        if (c->slot[s].used < c->slot[oldest].used) oldest = s;
    }
    if (at < 0) {
        at = oldest;
        c->slot[at].chunk = UINT64_MAX;
        int rc = sf_pack_chunk_read(c->pack, chunk, c->stored, e);
        if (!rc) rc = sf_pack_chunk_decode(c->dctx, c->pack, chunk, c->stored, c->slot[at].vals, e);
        if (rc) return rc;
        c->slot[at].chunk = chunk, c->slot[at].rows = sf_pack_chunk_locate(c->pack, chunk).rows;
    }
    c->slot[at].used = ++c->clock;
    *v = c->slot[at].vals[(size_t)col * c->slot[at].rows + k];
    return 0;
}

typedef struct {
    const sf_score_opts *o;
    sf_columns cols;  // o's, imputed targets NaN
    sf_score *s;
    uint64_t total;   // the windows to score (o->limit of the plan's)
    float *pred;
    int32_t *persist;  // per target: its feature, or -1
    row_cache rows;
    uint64_t series;   // the series of the last window's target
    // per target: sums of squared and absolute errors (data units), of
    // squared errors and of the loss on scaled values; the model's on the
    // values with a seasonal forecast
    double (*sq)[SF_FORECASTERS], (*ab)[SF_FORECASTERS], (*ssq)[SF_FORECASTERS], (*sl)[SF_FORECASTERS];
    double (*model_seasonal)[2];  // squared error, loss
    // per step and target (steps > 1): the scaled sums, and the model's on the seasonal values
    double (*step_ssq)[SF_FORECASTERS], (*step_sl)[SF_FORECASTERS], (*step_model_seasonal)[2];
    // a quantile model: per target, each quantile's pinball sum and the
    // values inside the interval; per step and target, those inside
    uint32_t W, point;  // predictions per value, and the point forecast's
    double *qsum;       // ntargets x W
    uint64_t *covered, *step_covered;
} scorer;

// A point forecast's loss for the error u on scaled values: the same value
// for every quantile of a quantile loss.
static double point_loss(const sf_loss *l, double u) {
    uint32_t W = sf_loss_width(l);
    double v = 0;
    for (uint32_t q = 0; q < W; q++) v += sf_loss_error(l, q, u);
    return W > 1 ? v / W : v;
}

// One error of forecaster f for target j of step k: data units d, scaled
// values u, and its loss there.
static void add(scorer *sc, uint32_t k, uint32_t j, int f, double d, double u, double loss) {
    sc->sq[j][f] += d * d, sc->ab[j][f] += fabs(d), sc->ssq[j][f] += u * u, sc->sl[j][f] += loss;
    if (sc->step_ssq) {
        size_t at = (size_t)k * sc->s->ntargets + j;
        sc->step_ssq[at][f] += u * u, sc->step_sl[at][f] += loss;
    }
}

static int score_batch(void *arg, const float *x, const float *y, const uint64_t *ids, uint32_t count, sf_err *e) {
    scorer *sc = arg;
    const sf_score_opts *o = sc->o;
    const sf_columns *c = &sc->cols;
    const sf_pack_info *in = sf_pack_get_info(o->pack);
    const sf_window_spec *w = sf_plan_spec(o->plan);
    uint32_t nt = c->ntargets, T = w->length, season = o->season->rows;
    sf_score *s = sc->s;
    uint32_t steps = sf_window_steps(w);
    uint64_t total = sc->total;
    if (count > total - s->windows) count = (uint32_t)(total - s->windows);
    int rc = o->predict(o->arg, sc->pred, x, count, e);
    for (uint32_t i = 0; !rc && i < count; i++) {
        uint64_t last = sf_plan_window_start(o->plan, ids[i]) + (uint64_t)(T - 1) * w->sampling_rate;
        // A window and its steps lie in one series: found by the last input row, which only grows.
        while (sc->series + 1 < o->nseries && o->series[sc->series + 1].first_row <= last) sc->series++;
        sf_columns cw = sf_columns_at(c, last);  // the window's series' scaling (--norm-scope series)
        for (uint32_t k = 0; !rc && k < steps * nt; k++) {
            uint32_t j = k % nt, step = k / nt;
            uint64_t row = last + w->horizon - (steps - 1) + step;
            bool seasonal = season && row >= o->series[sc->series].first_row + season;
            sf_step_score *ss = s->step ? &s->step[k] : NULL;
            float yj = y[(size_t)i * steps * nt + k];
            if (sf_columns_target_imputed(c, in, yj, j)) {
                s->t[j].imputed++, s->imputed++;
                continue;
            }
            float truth, before, ago = 0;
            uint32_t col = c->targets[j];
            if ((rc = cache_value(&sc->rows, row, col, &truth, e)) || (rc = cache_value(&sc->rows, last, col, &before, e)) ||
                (seasonal && (rc = cache_value(&sc->rows, row - season, col, &ago, e))))
                break;
            float scale = cw.target_scale[j], offset = cw.target_offset[j];
            // Scaled values as the training loss has them: the target, the
            // model's (both from the change when it learns changes); a
            // quantile model's sorted, as predict writes them.
            const sf_loss *l = &s->loss_fn;
            uint32_t W = sc->W;
            float ps[SF_LOSS_MAX_QUANTILES], pd[SF_LOSS_MAX_QUANTILES];
            memcpy(ps, sc->pred + ((size_t)i * steps * nt + k) * W, W * sizeof *ps);
            sort_floats(ps, W);
            sf_step_quantiles(&cw, T, steps, W, x, sc->pred, i, step, j, pd);
            double base = change_base(c, T, steps, x, i, j), t = yj + base, p = ps[sc->point] + base, model_loss = 0;
            for (uint32_t q = 0; q < W; q++) {
                double lq = sf_loss_error(l, q, ps[q] + base - t);
                model_loss += lq;
                if (sc->qsum) sc->qsum[(size_t)j * W + q] += lq;
            }
            if (W > 1) model_loss /= W;
            if (sc->covered && pd[0] <= truth && truth <= pd[W - 1]) {
                sc->covered[j]++;
                if (ss) sc->step_covered[k]++;
            }
            double mean = o->target_mean && !c->nscoped ? o->target_mean[j] : cw.target_mean[j];
            // Persistence scaled as the window's own input when the target is a feature.
            double before_s = sc->persist[j] >= 0 ? last_row(c, T, steps, x, i)[sc->persist[j]]
                                                  : (double)(before * scale + offset);
            double mean_s = mean * scale + offset, ago_s = (double)(ago * scale + offset);
            add(sc, step, j, SF_FC_MODEL, (double)pd[sc->point] - truth, p - t, model_loss);
            add(sc, step, j, SF_FC_PERSISTENCE, (double)before - truth, before_s - t, point_loss(l, before_s - t));
            add(sc, step, j, SF_FC_MEAN, mean - truth, mean_s - t, point_loss(l, mean_s - t));
            if (seasonal) {
                add(sc, step, j, SF_FC_SEASONAL, (double)ago - truth, ago_s - t, point_loss(l, ago_s - t));
                sc->model_seasonal[j][0] += (p - t) * (p - t), sc->model_seasonal[j][1] += model_loss;
                s->t[j].seasonal_values++;
                if (ss) {
                    sc->step_model_seasonal[k][0] += (p - t) * (p - t), sc->step_model_seasonal[k][1] += model_loss;
                    ss->seasonal_values++;
                }
            }
            if (ss) ss->values++;
            s->t[j].values++, s->values++;
        }
    }
    s->windows += count;
    if (!rc && o->progress) rc = o->progress(o->progress_arg, s->windows, total, e);
    return rc ? rc : s->windows == total;  // positive: stop here
}

// Sums to means, per target and over all of them, and the verdicts: on
// the scaled MSEs, so that a model that outputs persistence's own values
// ties it exactly.
static void finish(scorer *sc) {
    sf_score *s = sc->s;
    double all[SF_FORECASTERS] = {0}, all_loss[SF_FORECASTERS] = {0};
    uint64_t seasonal = 0, covered = 0;
    uint32_t W = sc->W;
    for (uint32_t j = 0; j < s->ntargets; j++) {
        sf_target_score *t = &s->t[j];
        for (int f = 0; f < SF_FORECASTERS; f++) {
            double n = (double)(f == SF_FC_SEASONAL ? t->seasonal_values : t->values);
            t->mse[f] = n > 0 ? sc->ssq[j][f] / n : NAN;
            t->loss[f] = n > 0 ? sc->sl[j][f] / n : NAN;
            t->rmse[f] = n > 0 ? sqrt(sc->sq[j][f] / n) : NAN;
            t->mae[f] = n > 0 ? sc->ab[j][f] / n : NAN;
            all[f] += sc->ssq[j][f], all_loss[f] += sc->sl[j][f];
        }
        double ns = (double)t->seasonal_values;
        t->model_seasonal_mse = ns > 0 ? sc->model_seasonal[j][0] / ns : NAN;
        t->model_seasonal_loss = ns > 0 ? sc->model_seasonal[j][1] / ns : NAN;
        t->beats_persistence = t->values > 0 && t->loss[SF_FC_MODEL] < t->loss[SF_FC_PERSISTENCE];
        t->loss_kind = s->loss_fn.kind;
        s->beating += t->beats_persistence;
        seasonal += t->seasonal_values;
        t->coverage = sc->covered && t->values ? (double)sc->covered[j] / (double)t->values : NAN;
        for (uint32_t q = 0; t->quantile_loss && q < W; q++)
            t->quantile_loss[q] = t->values ? sc->qsum[(size_t)j * W + q] / (double)t->values : NAN;
        if (sc->covered) covered += sc->covered[j];
    }
    for (int f = 0; f < SF_FORECASTERS; f++) {
        uint64_t n = f == SF_FC_SEASONAL ? seasonal : s->values;
        s->mse[f] = n ? all[f] / (double)n : NAN;
        s->loss[f] = n ? all_loss[f] / (double)n : NAN;
    }
    s->coverage = sc->covered && s->values ? (double)covered / (double)s->values : NAN;
    for (uint32_t q = 0; s->quantile_loss && q < W; q++) {
        double sum = 0;
        for (uint32_t j = 0; j < s->ntargets; j++) sum += sc->qsum[(size_t)j * W + q];
        s->quantile_loss[q] = s->values ? sum / (double)s->values : NAN;
    }
    for (size_t k = 0; s->step && k < (size_t)s->steps * s->ntargets; k++) {
        sf_step_score *ss = &s->step[k];
        for (int f = 0; f < SF_FORECASTERS; f++) {
            double n = (double)(f == SF_FC_SEASONAL ? ss->seasonal_values : ss->values);
            ss->mse[f] = n > 0 ? sc->step_ssq[k][f] / n : NAN;
            ss->loss[f] = n > 0 ? sc->step_sl[k][f] / n : NAN;
        }
        double ns = (double)ss->seasonal_values;
        ss->model_seasonal_mse = ns > 0 ? sc->step_model_seasonal[k][0] / ns : NAN;
        ss->model_seasonal_loss = ns > 0 ? sc->step_model_seasonal[k][1] / ns : NAN;
        ss->coverage = sc->step_covered && ss->values ? (double)sc->step_covered[k] / (double)ss->values : NAN;
    }
}

int sf_score_run(sf_score *s, const sf_score_opts *o, sf_err *e) {
    const sf_columns *c = o->cols;
    uint32_t nt = c->ntargets, steps = sf_window_steps(sf_plan_spec(o->plan));
    *s = (sf_score){.ntargets = nt, .season = *o->season, .target_change = c->change_from != NULL,
                    .horizon = sf_plan_spec(o->plan)->horizon, .steps = steps,
                    .first_step = sf_plan_spec(o->plan)->horizon - (steps - 1), .coverage = NAN,
                    .loss_fn = o->loss ? *o->loss : (sf_loss){.kind = SF_LOSS_MSE}};
    for (int f = 0; f < SF_FORECASTERS; f++) s->mse[f] = s->loss[f] = NAN;
    uint32_t W = sf_loss_width(&s->loss_fn);
    uint64_t all = sf_plan_windows(o->plan);
    scorer sc = {.o = o, .cols = *c, .s = s, .W = W, .point = sf_loss_point(&s->loss_fn),
                 .total = o->limit && o->limit < all ? o->limit : all};
    sc.cols.imputed_nan = true;  // the same columns, imputed targets NaN: not scored
    const sf_pack_info *in = sf_pack_get_info(o->pack);
    s->t = calloc(nt, sizeof *s->t);
    sc.pred = malloc((size_t)o->batch * steps * nt * W * sizeof(float));
    if (steps > 1) {
        s->step = calloc((size_t)steps * nt, sizeof *s->step);
        sc.step_ssq = calloc((size_t)steps * nt, sizeof *sc.step_ssq);
        sc.step_sl = calloc((size_t)steps * nt, sizeof *sc.step_sl);
        sc.step_model_seasonal = calloc((size_t)steps * nt, sizeof *sc.step_model_seasonal);
    }
    bool quantiles = s->loss_fn.kind == SF_LOSS_QUANTILE, quantiles_ok = true;
    if (quantiles) {
        sc.qsum = calloc((size_t)nt * W, sizeof *sc.qsum), sc.covered = calloc(nt, sizeof *sc.covered);
        s->quantile_loss = calloc(W, sizeof *s->quantile_loss);
        if (steps > 1) sc.step_covered = calloc((size_t)steps * nt, sizeof *sc.step_covered);
        quantiles_ok = sc.qsum && sc.covered && s->quantile_loss && (steps == 1 || sc.step_covered);
    }
    sc.persist = malloc(nt * sizeof *sc.persist);
    sc.sq = calloc(nt, sizeof *sc.sq), sc.ab = calloc(nt, sizeof *sc.ab), sc.ssq = calloc(nt, sizeof *sc.ssq);
    sc.sl = calloc(nt, sizeof *sc.sl), sc.model_seasonal = calloc(nt, sizeof *sc.model_seasonal);
    bool step_ok = steps == 1 || (s->step && sc.step_ssq && sc.step_sl && sc.step_model_seasonal);
    int rc = s->t && sc.pred && sc.persist && sc.sq && sc.ab && sc.ssq && sc.sl && sc.model_seasonal && step_ok &&
                     quantiles_ok
                 ? 0 : sf_err_set(e, SF_ENOMEM, "out of memory for the scores");
    for (uint32_t j = 0; !rc && quantiles && j < nt; j++)
        if (!(s->t[j].quantile_loss = calloc(W, sizeof *s->t[j].quantile_loss)))
            rc = sf_err_set(e, SF_ENOMEM, "out of memory for the scores");
    for (uint32_t j = 0; !rc && j < nt; j++) {
        s->t[j].name = strdup(in->col_names[c->targets[j]]);
        if (!s->t[j].name) rc = sf_err_set(e, SF_ENOMEM, "out of memory for the scores");
        sc.persist[j] = -1;
        for (uint32_t f = 0; f < c->nfeatures; f++)
            if (c->features[f] == c->targets[j] && c->codes[f] == SF_CODE_NONE) sc.persist[j] = (int32_t)f;
    }
    if (!rc) rc = cache_open(&sc.rows, o->pack, e);
    if (!rc) rc = sf_windows_in_order(o->pack, o->plan, &sc.cols, o->batch, score_batch, &sc, e);
    if (rc > 0) rc = 0;
    if (!rc) finish(&sc);
    cache_free(&sc.rows);
    free(sc.pred), free(sc.persist), free(sc.sq), free(sc.ab), free(sc.ssq), free(sc.sl), free(sc.model_seasonal);
    free(sc.step_ssq), free(sc.step_sl), free(sc.step_model_seasonal);
    free(sc.qsum), free(sc.covered), free(sc.step_covered);
    return rc;
}

void sf_score_free(sf_score *s) {
    for (uint32_t j = 0; s->t && j < s->ntargets; j++) free(s->t[j].name), free(s->t[j].quantile_loss);
    free(s->t), free(s->step), free(s->quantile_loss);
    s->t = NULL, s->step = NULL, s->quantile_loss = NULL;
}

// Target t against a baseline's loss on the same values: for MSE "RMSE
// 47.3% below" or "1.90x its RMSE" (the RMSE's ratio: the square root of
// the MSEs'), else the loss's own ratio.
static void against(char *buf, size_t cap, enum sf_loss_kind kind, double model, double base) {
    const char *what = kind == SF_LOSS_MSE ? "RMSE" : "loss";
    double ratio = kind == SF_LOSS_MSE ? sqrt(model / base) : model / base;
    if (base == 0) snprintf(buf, cap, model > 0 ? "it is exact (%s 0), the model is not" : "both exact (%s 0)", what);
    else if (model < base) snprintf(buf, cap, "%s %.1f%% below", what, 100 * (1 - ratio));
    else snprintf(buf, cap, "%.2fx its %s", ratio, what);
}

void sf_target_verdict(const sf_target_score *t, char *buf, size_t cap) {
    char p[96], sn[160] = "";
    if (t->values == 0) {
        snprintf(buf, cap, "not scored: every value was imputed by pack --missing ffill");
        return;
    }
    against(p, sizeof p, t->loss_kind, t->loss[SF_FC_MODEL], t->loss[SF_FC_PERSISTENCE]);
    if (t->seasonal_values) {
        char a[96];
        against(a, sizeof a, t->loss_kind, t->model_seasonal_loss, t->loss[SF_FC_SEASONAL]);
        snprintf(sn, sizeof sn, "; against the seasonal naive forecast: %s", a);
    }
    snprintf(buf, cap, "%s persistence: %s%s", t->beats_persistence ? "beats" : "does not beat", p, sn);
}

void sf_score_verdict(const sf_score *s, char *buf, size_t cap) {
    uint32_t scored = 0;
    for (uint32_t j = 0; j < s->ntargets; j++) scored += s->t[j].values > 0;
    size_t len = 0;
    if (scored == 0) {  // not "all 0 scored targets beat persistence"
        snprintf(buf, cap, "no target scored: every value of the part was imputed by pack --missing ffill");
        return;
    }
    if (scored == 1 && s->ntargets == 1) {
        char v[256];
        sf_target_verdict(&s->t[0], v, sizeof v);
        len = (size_t)snprintf(buf, cap, "%s %s", s->t[0].name, v);
    } else if (s->beating == scored) {
        len = (size_t)snprintf(buf, cap, "all %u scored targets beat persistence", scored);
    } else {
        len = (size_t)snprintf(buf, cap, "%u of %u targets beat%s persistence", s->beating, scored,
                               s->beating == 1 ? "s" : "");
        for (uint32_t j = 0; j < s->ntargets && len < cap; j++) {
            const sf_target_score *t = &s->t[j];
            if (t->beats_persistence || t->values == 0) continue;
            char p[96];
            against(p, sizeof p, t->loss_kind, t->loss[SF_FC_MODEL], t->loss[SF_FC_PERSISTENCE]);
            len += (size_t)snprintf(buf + len, cap - len, "; %s does not: %s", t->name, p);
        }
    }
    for (uint32_t j = 0; j < s->ntargets && len < cap; j++)
        if (s->t[j].values == 0 && scored != s->ntargets)
            len += (size_t)snprintf(buf + len, cap - len, "; %s not scored (every value imputed)", s->t[j].name);
    if (s->beating == scored || len >= cap) return;
    // What to try names train's own options.
    snprintf(buf + len, cap - len, " (hint: %s)",
             s->horizon == 0 ? "the checkpoint's horizon is 0, so its target is the window's last input row: retrain "
                               "with seqfeed train --horizon 1 or more"
             : s->target_change ? "more epochs, a longer --window, --time-features, or other --features"
                                : "train with --target change, so that the model learns the change from the last "
                                  "value: one that learns nothing is persistence");
}

static void number(FILE *f, double v, int width) {
    if (isnan(v)) fprintf(f, "  %-*s", width, "n/a");
    else fprintf(f, "  %-*.6g", width, v);
}

// The loss's name in tables: "MSE", "MAE", "Huber", "pinball".
static const char *loss_name(const sf_loss *l) {
    static const char *const names[] = {"MSE", "MAE", "Huber", "pinball"};
    return names[l->kind];
}

// --horizon A-B: each step's loss (scaled, as in training) next to
// persistence and the seasonal forecast, and their mean over the steps
// (the per-target table above is over every step's values); a quantile
// model's coverage of each step beside.
static void step_table(FILE *f, const sf_score *s, int name) {
    bool q = s->loss_fn.kind == SF_LOSS_QUANTILE;
    fprintf(f, "per step, %s on scaled values as the loss (seasonal: model/baseline on the values with one):\n"
               "  %-*s  %-5s  %-12s  %-12s  %-12s  %-12s%s\n", loss_name(&s->loss_fn), name, "target", "ahead",
            "model", "persistence", "seasonal", "model/season", q ? "  coverage" : "");
    for (uint32_t j = 0; j < s->ntargets; j++) {
        double sum[4] = {0};
        uint32_t n[4] = {0};
        for (uint32_t k = 0; k < s->steps; k++) {
            const sf_step_score *ss = &s->step[(size_t)k * s->ntargets + j];
            double v[4] = {ss->loss[SF_FC_MODEL], ss->loss[SF_FC_PERSISTENCE], ss->loss[SF_FC_SEASONAL],
                           ss->coverage};
            fprintf(f, "  %-*.*s  %-5u", name, name, k ? "" : s->t[j].name, s->first_step + k);
            for (int m = 0; m < 3; m++) number(f, v[m], 12);
            number(f, ss->seasonal_values ? ss->model_seasonal_loss / ss->loss[SF_FC_SEASONAL] : NAN, 12);
            if (q) number(f, v[3], 8);
            fputc('\n', f);
            for (int m = 0; m < 4; m++)
                if (!isnan(v[m])) sum[m] += v[m], n[m]++;
        }
        fprintf(f, "  %-*s  %-5s", name, "", "mean");
        for (int m = 0; m < 3; m++) number(f, n[m] ? sum[m] / n[m] : NAN, 12);
        if (q) number(f, NAN, 12), number(f, n[3] ? sum[3] / n[3] : NAN, 8);
        fputc('\n', f);
    }
}

// A quantile model's lines per target: each quantile's pinball loss and
// the interval's coverage next to its nominal share.
static void quantile_lines(FILE *f, const sf_score *s, int name) {
    const sf_loss *l = &s->loss_fn;
    char lo[32], hi[32], qn[32];
    sf_loss_quantile_name(l, 0, lo, sizeof lo);
    sf_loss_quantile_name(l, l->nq - 1, hi, sizeof hi);
    fprintf(f, "quantiles, pinball loss on scaled values; coverage: the share of true values inside [%s, %s] "
               "(nominal %.3g):\n", lo, hi, l->q[l->nq - 1] - l->q[0]);
    for (uint32_t j = 0; j < s->ntargets; j++) {
        const sf_target_score *t = &s->t[j];
        fprintf(f, "  %-*.*s ", name, name, t->name);
        for (uint32_t q = 0; q < l->nq; q++) {
            sf_loss_quantile_name(l, q, qn, sizeof qn);
            fprintf(f, " %s %.6g", qn, t->quantile_loss[q]);
        }
        fprintf(f, "  coverage %.4f\n", t->coverage);
    }
}

void sf_score_print(FILE *f, const sf_score *s) {
    int name = 6;
    for (uint32_t j = 0; j < s->ntargets; j++) {
        int n = (int)strlen(s->t[j].name);
        name = n > name ? (n < 32 ? n : 32) : name;
    }
    fprintf(f, "season           %s\n", s->season.text);
    char point[48] = "";
    if (s->loss_fn.kind == SF_LOSS_QUANTILE) {
        char qn[32];
        sf_loss_quantile_name(&s->loss_fn, sf_loss_point(&s->loss_fn), qn, sizeof qn);
        snprintf(point, sizeof point, " (the model's %s)", qn);
    }
    fprintf(f, "per target, in the data's units%s:\n  %-*s  %-6s", point, name, "target", "metric");
    for (int k = 0; k < SF_FORECASTERS; k++) fprintf(f, "  %-12s", sf_forecaster_names[k]);
    fputc('\n', f);
    for (uint32_t j = 0; j < s->ntargets; j++) {
        const sf_target_score *t = &s->t[j];
        for (int m = 0; m < 2; m++) {
            fprintf(f, "  %-*.*s  %-6s", name, name, m ? "" : t->name, m ? "MAE" : "RMSE");
            for (int k = 0; k < SF_FORECASTERS; k++) number(f, m ? t->mae[k] : t->rmse[k], 12);
            fputc('\n', f);
        }
        char v[320];
        sf_target_verdict(t, v, sizeof v);
        fprintf(f, "  %-*s  %s (%llu value%s", name, "", v, (unsigned long long)t->values, t->values == 1 ? "" : "s");
        if (s->season.rows && !t->seasonal_values)
            fprintf(f, "; no seasonal forecast: none has a row one season before in its series");
        else if (s->season.rows && t->seasonal_values < t->values)
            fprintf(f, "; the seasonal forecast on the %llu with a row one season before in their series",
                    (unsigned long long)t->seasonal_values);
        fprintf(f, ")\n");
    }
    if (s->loss_fn.kind == SF_LOSS_QUANTILE) quantile_lines(f, s, name);
    if (s->step) step_table(f, s, name);
    char verdict[2048];
    sf_score_verdict(s, verdict, sizeof verdict);
    fprintf(f, "verdict          %s\n", verdict);
}

// {"model": ..., "mean": ...}: one number per forecaster (null: none).
static void json_forecasters(FILE *f, const double *v) {
    fputc('{', f);
    for (int i = 0; i < SF_FORECASTERS; i++) {
        fprintf(f, "%s\"%s\": ", i ? ", " : "", sf_forecaster_names[i]);
        sf_json_real(f, v[i]);
    }
    fputc('}', f);
}

// A quantile model's pinball loss of each quantile: {"q10": ..., ...}.
static void json_quantiles(FILE *f, const sf_loss *l, const double *v) {
    fputc('{', f);
    for (uint32_t q = 0; q < l->nq; q++) {
        char name[32];
        sf_loss_quantile_name(l, q, name, sizeof name);
        fprintf(f, "%s\"%s\": ", q ? ", " : "", name);
        sf_json_real(f, v ? v[q] : NAN);
    }
    fputc('}', f);
}

void sf_score_json_losses(FILE *f, const sf_score *s) {
    fprintf(f, "\"loss\": ");
    sf_json_real(f, s->loss[SF_FC_MODEL]);
    fprintf(f, ", \"mean_baseline\": ");
    sf_json_real(f, s->loss[SF_FC_MEAN]);
    fprintf(f, ", \"persistence_baseline\": ");
    sf_json_real(f, s->loss[SF_FC_PERSISTENCE]);
    fprintf(f, ", \"seasonal_baseline\": ");
    sf_json_real(f, s->loss[SF_FC_SEASONAL]);
    if (s->loss_fn.kind == SF_LOSS_QUANTILE) {  // the share of true values inside [lowest, highest]
        fprintf(f, ", \"quantile_loss\": ");
        json_quantiles(f, &s->loss_fn, s->quantile_loss);
        fprintf(f, ", \"coverage\": ");
        sf_json_real(f, s->coverage);
    }
}

void sf_score_json_targets(FILE *f, const sf_score *s) {
    fprintf(f, "\"per_target\": [");
    for (uint32_t j = 0; j < s->ntargets; j++) {
        const sf_target_score *t = &s->t[j];
        fprintf(f, "%s{\"name\": ", j ? ", " : "");
        sf_json_string(f, t->name);
        fprintf(f, ", \"values\": %llu, \"seasonal_values\": %llu", (unsigned long long)t->values,
                (unsigned long long)t->seasonal_values);
        for (int i = 0; i < SF_FORECASTERS; i++) {
            fprintf(f, ", \"%s\": ", sf_forecaster_names[i]);
            sf_json_real(f, t->loss[i]);
        }
        fprintf(f, ", \"beats_persistence\": %s", t->values ? t->beats_persistence ? "true" : "false" : "null");
        if (s->loss_fn.kind == SF_LOSS_QUANTILE) {
            fprintf(f, ", \"quantile_loss\": ");
            json_quantiles(f, &s->loss_fn, t->quantile_loss);
            fprintf(f, ", \"coverage\": ");
            sf_json_real(f, t->coverage);
        }
        fprintf(f, ", \"rmse\": ");
        json_forecasters(f, t->rmse);
        fprintf(f, ", \"mae\": ");
        json_forecasters(f, t->mae);
        fputc('}', f);
    }
    fputc(']', f);
}
