// Cross-validation (train --folds K): whether every fold has windows, and
// the folds' scores summed up per target as a table, a JSON file and an
// HTML page. The folds themselves are sf_fit runs (cli/cmd_train.c), each
// on its fold's parts (sf_split).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int sf_folds_check(const sf_fit_opts *o, sf_err *e) {
    sf_pack *pack = NULL;
    int rc = sf_pack_open(&pack, o->data, e);
    if (rc) return rc;
    const sf_pack_info *in = sf_pack_get_info(pack);
    sf_series *cut = NULL;
    uint64_t ncut = 0;
    if (o->max_gap > 0 && in->time_kind != SF_TIME_NONE)  // without times sf_fit says why
        rc = sf_pack_segments(pack, sf_pack_time_count(in, o->max_gap), &cut, &ncut, e);
    const sf_series *series = cut ? cut : in->series;
    uint64_t nseries = cut ? ncut : in->nseries, longest = 0;
    for (uint64_t i = 0; i < in->nseries; i++) longest = in->series[i].rows > longest ? in->series[i].rows : longest;
    const sf_window_spec *w = &o->pipe.window;
    for (uint32_t k = 1; !rc && k <= o->folds; k++) {
        sf_fit_opts fo = *o;
        fo.fold = k;
        sf_split train = sf_fit_split(&fo, in, SF_PART_TRAIN), val = sf_fit_split(&fo, in, SF_PART_VALIDATION);
        uint64_t nt = sf_plan_count(series, nseries, w, &train), nv = sf_plan_count(series, nseries, w, &val);
        if (nt >= o->batch && nv > 0) continue;
        // Rows enough for one series alone to give every fold a batch: each
        // of the K + 1 parts holds floor(rows / (K + 1)) rows at least.
        uint64_t span = sf_window_span(w), per = span + (uint64_t)(o->batch - 1) * w->stride;
        char what[160], shrink[128];
        if (nt < o->batch)
            snprintf(what, sizeof what, "fold %u has %llu training windows, fewer than one global batch of %u", k,
                     (unsigned long long)nt, o->batch);
        else
            snprintf(what, sizeof what, "fold %u has no validation window", k);
        sf_window_shrinkers(w, true, false, shrink, sizeof shrink);
        rc = sf_err_set(e, SF_EUSAGE, "%s: --folds %u: %s. Each series' rows are cut into %u parts (as "
                        "TimeSeriesSplit: floor(rows / %u) rows each, the first part also taking the rest); fold k "
                        "validates on part k + 1 and trains on the parts before it, so fold 1 trains on part 1 "
                        "alone; the longest series has %llu rows%s. A series of at least %llu rows (%u x (a "
                        "window's span of %llu rows + (--batch-size - 1) x --stride)) gives every fold a batch on "
                        "its own (hint: fewer --folds, or a smaller --batch-size%s)", o->data, o->folds, what,
                        o->folds + 1, o->folds + 1, (unsigned long long)longest,
                        cut ? " (and --max-gap cuts series into segments that windows stay inside)" : "",
                        (unsigned long long)((o->folds + 1) * per), o->folds + 1, (unsigned long long)span, shrink);
    }
    free(cut);
    sf_pack_close(pack);
    return rc;
}

// Mean, std (numpy's np.std: over the folds, ddof 0), min and max of the
// finite values of v[0, n); NAN each when none.
enum { MEAN, STD, MIN, MAX, SPREAD };
static void spread(const double *v, uint32_t n, double out[SPREAD]) {
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (isfinite(v[i])) sum += v[i], lo = v[i] < lo ? v[i] : lo, hi = v[i] > hi ? v[i] : hi, m++;
    if (!m) {
        out[MEAN] = out[STD] = out[MIN] = out[MAX] = NAN;
        return;
    }
    double mean = sum / m, sq = 0;
    for (uint32_t i = 0; i < n; i++)
        if (isfinite(v[i])) sq += (v[i] - mean) * (v[i] - mean);
    out[MEAN] = mean, out[STD] = sqrt(sq / m), out[MIN] = lo, out[MAX] = hi;
}

// The scored folds' values of one number: fold k's field at v[k - 1] (NAN: not scored).
typedef double (*field_fn)(const sf_score *s, uint32_t j, int f);
static double target_loss(const sf_score *s, uint32_t j, int f) { return s->t[j].values ? s->t[j].loss[f] : NAN; }
static double target_rmse(const sf_score *s, uint32_t j, int f) { return s->t[j].values ? s->t[j].rmse[f] : NAN; }
static double overall_loss(const sf_score *s, uint32_t j, int f) { return (void)j, s->loss[f]; }
// A quantile model's coverage (f unused): per target (j), or over every target (overall_coverage).
static double target_coverage(const sf_score *s, uint32_t j, int f) {
    return (void)f, s->t[j].values ? s->t[j].coverage : NAN;
}
static double overall_coverage(const sf_score *s, uint32_t j, int f) { return (void)j, (void)f, s->coverage; }

static void over_folds(const sf_folds *cv, field_fn get, uint32_t j, int f, double out[SPREAD]) {
    double *v = malloc((cv->folds ? cv->folds : 1) * sizeof *v);
    if (!v) {
        out[MEAN] = out[STD] = out[MIN] = out[MAX] = NAN;
        return;
    }
    for (uint32_t k = 0; k < cv->folds; k++) v[k] = cv->score[k].ntargets ? get(&cv->score[k], j, f) : NAN;
    spread(v, cv->folds, out);
    free(v);
}

// The loss the scores hold, in words: "MSE", "MAE", "huber:1 loss", "quantile:0.1,0.5,0.9 loss".
static void loss_words(const sf_loss *l, char *buf, size_t len) {
    if (l->kind == SF_LOSS_MSE || l->kind == SF_LOSS_MAE) {
        snprintf(buf, len, "%s", l->kind == SF_LOSS_MSE ? "MSE" : "MAE");
        return;
    }
    char text[SF_LOSS_TEXT];
    sf_loss_format(l, text, sizeof text);
    snprintf(buf, len, "%s loss", text);
}

static bool quantiles(const sf_folds *cv) { return cv->loss.kind == SF_LOSS_QUANTILE; }

// The first fold scored (its targets name every fold's), else NULL.
static const sf_score *first_scored(const sf_folds *cv, uint32_t *done) {
    const sf_score *first = NULL;
    *done = 0;
    for (uint32_t k = 0; k < cv->folds; k++)
        if (cv->score[k].ntargets) *done += 1, first = first ? first : &cv->score[k];
    return first;
}

void sf_folds_print(FILE *f, const sf_folds *cv) {
    uint32_t done;
    const sf_score *first = first_scored(cv, &done);
    char loss[SF_LOSS_TEXT + 8];
    loss_words(&cv->loss, loss, sizeof loss);
    bool q = quantiles(cv);
    fprintf(f, "cross-validation: %u of %u folds scored, each on the validation part of its own: the next 1/%u of "
            "every series' rows after those it trained on (%s of scaled values, as the loss%s)\n", done, cv->folds,
            cv->folds + 1, loss, q ? "; baselines scored as every quantile" : "");
    fprintf(f, "  fold  windows     model        persistence  mean         seasonal%s\n", q ? "     coverage" : "");
    for (uint32_t k = 0; k < cv->folds; k++) {
        const sf_score *s = &cv->score[k];
        if (!s->ntargets) {
            fprintf(f, "  %-4u  not scored (the fold has not ended)\n", k + 1);
            continue;
        }
        fprintf(f, "  %-4u  %-10llu", k + 1, (unsigned long long)s->windows);
        for (int j = 0; j < SF_FORECASTERS; j++)
            isnan(s->loss[j]) ? fprintf(f, "  %-11s", "n/a") : fprintf(f, "  %-11.6g", s->loss[j]);
        if (q) fprintf(f, "  %-11.6g", s->coverage);
        fprintf(f, "\n");
    }
    if (!first) return;
    fprintf(f, "per target, over the %u folds scored (mean, std, min, max of each fold's %s; RMSE in the data's "
            "units, its mean%s):\n", done, loss, q ? ", of the quantile nearest 0.5" : "");
    fprintf(f, "  target  forecaster   mean         std          min          max          RMSE\n");
    for (uint32_t j = 0; j < first->ntargets; j++) {
        uint32_t beats = 0, scored = 0;
        for (uint32_t k = 0; k < cv->folds; k++)
            if (cv->score[k].ntargets && cv->score[k].t[j].values)
                scored++, beats += cv->score[k].t[j].beats_persistence;
        for (int fc = 0; fc < SF_FORECASTERS; fc++) {
            double m[SPREAD], r[SPREAD];
            over_folds(cv, target_loss, j, fc, m);
            over_folds(cv, target_rmse, j, fc, r);
            if (isnan(m[MEAN])) continue;  // no seasonal forecast
            fprintf(f, "  %-7s %-12s %-12.6g %-12.6g %-12.6g %-12.6g %-12.6g\n", fc ? "" : first->t[j].name,
                    sf_forecaster_names[fc], m[MEAN], m[STD], m[MIN], m[MAX], r[MEAN]);
        }
        double mm[SPREAD], pm[SPREAD];
        over_folds(cv, target_loss, j, SF_FC_MODEL, mm);
        over_folds(cv, target_loss, j, SF_FC_PERSISTENCE, pm);
        if (q) {
            double c[SPREAD];
            over_folds(cv, target_coverage, j, 0, c);
            fprintf(f, "          coverage of [lowest, highest quantile]: mean %.6g, std %.6g, min %.6g, max %.6g "
                    "(nominal %.3g)\n", c[MEAN], c[STD], c[MIN], c[MAX],
                    cv->loss.q[cv->loss.nq - 1] - cv->loss.q[0]);
        }
        fprintf(f, "          beats persistence in %u of %u folds; mean %s %s\n", beats, scored,
                cv->loss.kind == SF_LOSS_MSE ? "MSE" : "loss",
                mm[MEAN] < pm[MEAN] ? "below persistence's" : "not below persistence's");
    }
}

static void json_spread(FILE *f, const double s[SPREAD]) {
    static const char *const names[SPREAD] = {"mean", "std", "min", "max"};
    fputc('{', f);
    for (int i = 0; i < SPREAD; i++) {
        fprintf(f, "%s\"%s\": ", i ? ", " : "", names[i]);
        sf_json_real(f, s[i]);
    }
    fputc('}', f);
}

// One fold's scores, with evaluate --json's keys.
static void json_fold(FILE *f, const sf_score *s) {
    fprintf(f, "\"windows\": %llu, ", (unsigned long long)s->windows);
    sf_score_json_losses(f, s);
    fprintf(f, ", \"target_values\": %llu, \"imputed_targets\": %llu, ", (unsigned long long)(s->values + s->imputed),
            (unsigned long long)s->imputed);
    sf_score_json_targets(f, s);
}

int sf_folds_write_json(const char *path, const sf_folds *cv, sf_err *e) {
    sf_temp_file out;
    int rc = sf_temp_fopen(&out, path, e);
    if (rc) return rc;
    FILE *f = out.f;
    uint32_t done;
    const sf_score *first = first_scored(cv, &done);
    fprintf(f, "{\"folds\": %u, \"scored\": %u, \"season\": ", cv->folds, done);
    if (first && first->season.rows) fprintf(f, "%u", first->season.rows);
    else fprintf(f, "null");
    char loss[SF_LOSS_TEXT];
    sf_loss_format(&cv->loss, loss, sizeof loss);
    fprintf(f, ", \"loss_function\": ");
    sf_json_string(f, loss);
    fprintf(f, ", \"loss\": {");
    for (int fc = 0; fc < SF_FORECASTERS; fc++) {
        double m[SPREAD];
        over_folds(cv, overall_loss, 0, fc, m);
        fprintf(f, "%s\"%s\": ", fc ? ", " : "", sf_forecaster_names[fc]);
        json_spread(f, m);
    }
    fprintf(f, "}");
    if (quantiles(cv)) {
        double c[SPREAD];
        over_folds(cv, overall_coverage, 0, 0, c);
        fprintf(f, ", \"coverage\": ");
        json_spread(f, c);
        fprintf(f, ", \"nominal_coverage\": %.9g", cv->loss.q[cv->loss.nq - 1] - cv->loss.q[0]);
    }
    fprintf(f, ", \"per_target\": [");
    for (uint32_t j = 0; first && j < first->ntargets; j++) {
        fprintf(f, "%s{\"name\": ", j ? ", " : "");
        sf_json_string(f, first->t[j].name);
        uint32_t beats = 0;
        for (uint32_t k = 0; k < cv->folds; k++)
            beats += cv->score[k].ntargets && cv->score[k].t[j].values && cv->score[k].t[j].beats_persistence;
        fprintf(f, ", \"folds_beating_persistence\": %u", beats);
        for (int fc = 0; fc < SF_FORECASTERS; fc++) {
            double m[SPREAD];
            over_folds(cv, target_loss, j, fc, m);
            fprintf(f, ", \"%s\": ", sf_forecaster_names[fc]);
            json_spread(f, m);
        }
        if (quantiles(cv)) {
            double c[SPREAD];
            over_folds(cv, target_coverage, j, 0, c);
            fprintf(f, ", \"coverage\": ");
            json_spread(f, c);
        }
        fprintf(f, ", \"rmse\": {");
        for (int fc = 0; fc < SF_FORECASTERS; fc++) {
            double r[SPREAD];
            over_folds(cv, target_rmse, j, fc, r);
            fprintf(f, "%s\"%s\": ", fc ? ", " : "", sf_forecaster_names[fc]);
            json_spread(f, r);
        }
        fprintf(f, "}}");
    }
    fprintf(f, "], \"per_fold\": [");
    for (uint32_t k = 0; k < cv->folds; k++) {
        fprintf(f, "%s\n  {\"fold\": %u, \"checkpoint\": ", k ? "," : "", k + 1);
        sf_json_string(f, cv->dirs[k]);
        fprintf(f, ", \"scored\": %s", cv->score[k].ntargets ? "true" : "false");
        if (cv->score[k].ntargets) fprintf(f, ", "), json_fold(f, &cv->score[k]);
        fputc('}', f);
    }
    fprintf(f, "]}\n");
    return sf_temp_fclose(&out, true, e);
}

static void html_number(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "<td>%.6g</td>", v);
    else fprintf(f, "<td>&ndash;</td>");
}

int sf_folds_write_report(const char *path, const sf_folds *cv, const char *const *reports, sf_err *e) {
    sf_temp_file out;
    int rc = sf_temp_fopen(&out, path, e);
    if (rc) return rc;
    FILE *f = out.f;
    uint32_t done;
    const sf_score *first = first_scored(cv, &done);
    char loss[SF_LOSS_TEXT + 8];
    loss_words(&cv->loss, loss, sizeof loss);
    fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>seqfeed cross-validation</title>\n"
               "<style>body{font-family:sans-serif;margin:2em;max-width:1000px} td,th{padding:2px 10px;"
               "text-align:right} th{background:#eee}</style></head><body>\n<h1>seqfeed cross-validation</h1>\n");
    fprintf(f, "<p id=\"folds\">%u of %u folds scored. Fold k trains on each series' rows before its validation "
               "part, the next 1/%u of the rows (scikit-learn's TimeSeriesSplit), and is scored there with the "
               "weights it leaves (its best epoch's). %s of scaled values, as the loss%s.</p>\n",
            done, cv->folds, cv->folds + 1, loss,
            quantiles(cv) ? " (baselines scored as every quantile; RMSE of the quantile nearest 0.5)" : "");
    fprintf(f, "<h2>Per target, over the folds</h2>\n<table id=\"summary\"><tr><th>target</th><th>forecaster</th>"
               "<th>mean</th><th>std</th><th>min</th><th>max</th><th>RMSE (mean)</th></tr>\n");
    for (uint32_t j = 0; first && j < first->ntargets; j++)
        for (int fc = 0; fc < SF_FORECASTERS; fc++) {
            double m[SPREAD], r[SPREAD];
            over_folds(cv, target_loss, j, fc, m);
            over_folds(cv, target_rmse, j, fc, r);
            if (isnan(m[MEAN])) continue;
            fprintf(f, "<tr><th>");
            if (!fc) sf_html_text(f, first->t[j].name);
            fprintf(f, "</th><th>%s</th>", sf_forecaster_names[fc]);
            for (int i = 0; i < SPREAD; i++) html_number(f, m[i]);
            html_number(f, r[MEAN]);
            fprintf(f, "</tr>\n");
        }
    fprintf(f, "</table>\n<h2>Per fold</h2>\n<table id=\"per-fold\"><tr><th>fold</th><th>windows</th>");
    for (int fc = 0; fc < SF_FORECASTERS; fc++) fprintf(f, "<th>%s</th>", sf_forecaster_names[fc]);
    if (quantiles(cv)) fprintf(f, "<th>coverage</th>");
    fprintf(f, "<th>checkpoint</th><th>report</th></tr>\n");
    for (uint32_t k = 0; k < cv->folds; k++) {
        const sf_score *s = &cv->score[k];
        fprintf(f, "<tr><th>%u</th>", k + 1);
        if (s->ntargets) {
            fprintf(f, "<td>%llu</td>", (unsigned long long)s->windows);
            for (int fc = 0; fc < SF_FORECASTERS; fc++) html_number(f, s->loss[fc]);
            if (quantiles(cv)) html_number(f, s->coverage);
        } else {
            fprintf(f, "<td colspan=\"%d\">not scored (the fold has not ended)</td>",
                    SF_FORECASTERS + 1 + quantiles(cv));
        }
        fprintf(f, "<td style=\"text-align:left\">");
        sf_html_text(f, cv->dirs[k]);
        fprintf(f, "</td><td style=\"text-align:left\">");
        if (reports && reports[k]) {
            // As seen from the page's directory, so that the link works wherever the page is opened from.
            char rel[4096], *dir = strdup(path), *slash = dir ? strrchr(dir, '/') : NULL;
            if (slash) *slash = 0;
            sf_run_data_from_dir(rel, sizeof rel, reports[k], !dir ? "." : slash == dir ? "/" : slash ? dir : ".");
            free(dir);
            fprintf(f, "<a href=\"");
            sf_html_text(f, rel[0] ? rel : reports[k]);
            fprintf(f, "\">its run report</a>");
        }
        fprintf(f, "</td></tr>\n");
    }
    fprintf(f, "</table>\n</body></html>\n");
    return sf_temp_fclose(&out, true, e);
}
