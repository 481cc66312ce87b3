// The run's HTML report: one file, inline SVG and CSS, nothing fetched.
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train.h"

static const char *const colours[SF_PHASES] = {"#d62728", "#ff7f0e", "#1f77b4", "#9467bd", "#2ca02c", "#aaaaaa"};

// Steps in at most W columns, each the mean of its steps, stacked by phase.
static void chart(FILE *f, const float (*steps)[SF_PHASES], size_t n) {
    enum { W = 900, H = 280, LEFT = 60, BOTTOM = 30, COLS = 450 };
    size_t cols = n < COLS ? n : COLS;
    double (*col)[SF_PHASES] = calloc(cols ? cols : 1, sizeof *col), top = 0;
    double *sums = calloc(cols ? cols : 1, sizeof *sums);
    for (size_t c = 0; col && sums && c < cols; c++) {
        size_t lo = n * c / cols, hi = n * (c + 1) / cols;
        for (int k = 0; k < SF_PHASES; k++) {
            for (size_t i = lo; i < hi; i++) col[c][k] += steps[i][k];
            col[c][k] /= (double)(hi - lo);
            sums[c] += col[c][k];
        }
    }
    // The scale is the 99th percentile of the bars, so that a few slow steps
    // do not flatten the rest; taller bars are cut and marked.
    if (sums && cols) {
        double *sorted = malloc(cols * sizeof *sorted);
        if (sorted) {
            memcpy(sorted, sums, cols * sizeof *sorted);
            for (size_t i = 1; i < cols; i++)
                for (size_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
                    double x = sorted[j];
                    sorted[j] = sorted[j - 1], sorted[j - 1] = x;
                }
            top = sorted[cols * 99 / 100 < cols ? cols * 99 / 100 : cols - 1];
            free(sorted);
        }
    }
    fprintf(f, "<svg id=\"steps\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\">\n", W + LEFT,
            H + BOTTOM);
    fprintf(f, "<line x1=\"%d\" y1=\"0\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>", LEFT, LEFT, H);
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n", LEFT, H, LEFT + W, H);
    fprintf(f, "<text x=\"4\" y=\"12\" font-size=\"11\">%.2f ms</text><text x=\"4\" y=\"%d\" font-size=\"11\">0</text>\n",
            1e3 * top, H);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">the last %zu steps (each bar the mean of %zu)</text>\n", LEFT,
            H + 20, n, cols ? (n + cols - 1) / cols : 0);
    double bw = cols ? (double)W / (double)cols : 0;
    for (size_t c = 0; col && c < cols && top > 0; c++) {
        double y = H;
        for (int k = 0; k < SF_PHASES && y > 0; k++) {
            double h = col[c][k] / top * H;
            if (h <= 0) continue;
            if (h > y) h = y;  // cut at the top
            y -= h;
            fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>\n",
                    LEFT + bw * (double)c, y, bw, h, colours[k]);
        }
        if (sums[c] > top)
            fprintf(f, "<text x=\"%.2f\" y=\"10\" font-size=\"10\">&#9650;</text>\n", LEFT + bw * (double)c);
    }
    fprintf(f, "</svg>\n<p>");
    for (int k = 0; k < SF_PHASES; k++)
        fprintf(f, "<span class=\"key\" style=\"background:%s\"></span> %s &nbsp; ", colours[k], sf_phase_names[k]);
    fprintf(f, "</p>\n");
    free(col);
    free(sums);
}

// A number for the page: NaN and infinities never reach it as "nan" or
// "inf" but as "n/a" (text) and no attribute at all.
static void number(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.6g", v);
    else fputs("n/a", f);
}

static void value_attr(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, " data-value=\"%.17g\"", v);
}

// The loss chart's vertical scale: log10, as Keras' curves are read, over
// the finite positive values shown (a loss of 0 sits at the bottom).
typedef struct {
    double lo, hi;  // log10 of the bottom and top
} log_scale;

static void scale_add(log_scale *s, double v) {
    if (!isfinite(v) || v <= 0) return;
    double l = log10(v);
    if (l < s->lo) s->lo = l;
    if (l > s->hi) s->hi = l;
}

static double scale_y(const log_scale *s, double v, double top, double height) {
    if (!(v > 0)) return top + height;
    double l = log10(v);
    return top + height * (s->hi - l) / (s->hi - s->lo);
}

enum { LW = 840, LH = 260, LLEFT = 70, LTOP = 10, LRH = 90 };
static const char *const baseline_colours[SF_FORECASTERS] = {"#000", "#8c564b", "#7f7f7f", "#e377c2"};

static double step_x(const sf_report_model *m, uint64_t step) {
    uint64_t lo = m->rows[0].step, hi = m->rows[m->nrows - 1].step;
    return hi > lo ? LLEFT + LW * (double)(step - lo) / (double)(hi - lo) : LLEFT + LW / 2.0;
}

// One series of the history (loss or val_loss) as a polyline broken where
// a value is missing, and a point per row carrying its row's numbers.
static void series(FILE *f, const sf_report_model *m, const log_scale *s, bool val, const char *colour) {
    const char *name = val ? "val_loss" : "loss";
    fprintf(f, "<g class=\"series\" data-series=\"%s\">\n<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
               "points=\"", name, colour);
    bool open = true;
    for (size_t i = 0; i < m->nrows; i++) {
        double v = val ? m->rows[i].val_loss : m->rows[i].loss;
        if (!isfinite(v)) {
            if (!open) fprintf(f, "\"/>\n<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", colour);
            open = true;
            continue;
        }
        fprintf(f, "%s%.2f,%.2f", open ? "" : " ", step_x(m, m->rows[i].step), scale_y(s, v, LTOP, LH));
        open = false;
    }
    fprintf(f, "\"/>\n");
    for (size_t i = 0; i < m->nrows; i++) {
        const sf_history_row *r = &m->rows[i];
        double v = val ? r->val_loss : r->loss;
        if (!isfinite(v)) continue;
        fprintf(f, "<circle class=\"point\" cx=\"%.2f\" cy=\"%.2f\" r=\"3\" fill=\"%s\" data-epoch=\"%llu\" "
                   "data-step=\"%llu\" data-value=\"%.9g\"><title>epoch %llu, step %llu: %s %.6g</title></circle>\n",
                step_x(m, r->step), scale_y(s, v, LTOP, LH), colour, (unsigned long long)r->epoch,
                (unsigned long long)r->step, v, (unsigned long long)r->epoch, (unsigned long long)r->step, name, v);
    }
    fprintf(f, "</g>\n");
}

// The lr of each row, its own small chart, linear from 0.
static void lr_chart(FILE *f, const sf_report_model *m) {
    double top = 0;
    for (size_t i = 0; i < m->nrows; i++)
        if (isfinite(m->rows[i].lr) && m->rows[i].lr > top) top = m->rows[i].lr;
    fprintf(f, "<svg id=\"lr\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\">\n", LW + LLEFT + 10,
            LRH + 30);
    fprintf(f, "<line x1=\"%d\" y1=\"0\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/><line x1=\"%d\" y1=\"%d\" x2=\"%d\" "
               "y2=\"%d\" stroke=\"#333\"/>\n", LLEFT, LLEFT, LRH, LLEFT, LRH, LLEFT + LW, LRH);
    fprintf(f, "<text x=\"4\" y=\"12\" font-size=\"11\">%.3g</text><text x=\"4\" y=\"%d\" font-size=\"11\">0</text>"
               "<text x=\"%d\" y=\"%d\" font-size=\"11\">learning rate after each row, by step</text>\n",
            top, LRH, LLEFT, LRH + 20);
    fprintf(f, "<polyline fill=\"none\" stroke=\"#2ca02c\" stroke-width=\"2\" points=\"");
    for (size_t i = 0; top > 0 && i < m->nrows; i++)
        if (isfinite(m->rows[i].lr))
            fprintf(f, "%s%.2f,%.2f", i ? " " : "", step_x(m, m->rows[i].step), LRH * (1 - m->rows[i].lr / top));
    fprintf(f, "\"/>\n");
    for (size_t i = 0; i < m->nrows; i++)
        if (isfinite(m->rows[i].lr))
            fprintf(f, "<circle class=\"lr\" cx=\"%.2f\" cy=\"%.2f\" r=\"2\" fill=\"#2ca02c\" data-step=\"%llu\" "
                       "data-value=\"%.9g\"/>\n", step_x(m, m->rows[i].step),
                    top > 0 ? LRH * (1 - m->rows[i].lr / top) : (double)LRH, (unsigned long long)m->rows[i].step,
                    m->rows[i].lr);
    fprintf(f, "</svg>\n");
}

// loss and val_loss over the run, the baselines' loss (the model's: --loss)
// as lines on the val_loss scale, the best epoch marked; then the lr.
static void loss_chart(FILE *f, const sf_report_model *m) {
    const sf_score *sc = m->score;
    log_scale s = {INFINITY, -INFINITY};
    for (size_t i = 0; i < m->nrows; i++) scale_add(&s, m->rows[i].loss), scale_add(&s, m->rows[i].val_loss);
    for (int k = SF_FC_PERSISTENCE; sc && k < SF_FORECASTERS; k++) scale_add(&s, sc->loss[k]);
    if (!(s.lo <= s.hi)) s.lo = -1, s.hi = 0;  // nothing finite: an empty frame
    if (s.hi - s.lo < 0.1) s.lo -= 0.05, s.hi += 0.05;
    s.lo -= 0.05 * (s.hi - s.lo), s.hi += 0.05 * (s.hi - s.lo);
    fprintf(f, "<svg id=\"loss\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\">\n",
            LW + LLEFT + 10, LTOP + LH + 30);
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/><line x1=\"%d\" y1=\"%d\" x2=\"%d\" "
               "y2=\"%d\" stroke=\"#333\"/>\n", LLEFT, LTOP, LLEFT, LTOP + LH, LLEFT, LTOP + LH, LLEFT + LW, LTOP + LH);
    // A tick at each power of ten, or the two ends when none falls inside.
    int ticks = 0;
    for (double l = ceil(s.lo); l <= s.hi; l++, ticks++)
        fprintf(f, "<text x=\"4\" y=\"%.2f\" font-size=\"11\">%g</text><line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" "
                   "y2=\"%.2f\" stroke=\"#ddd\"/>\n", scale_y(&s, pow(10, l), LTOP, LH) + 4, pow(10, l), LLEFT,
                scale_y(&s, pow(10, l), LTOP, LH), LLEFT + LW, scale_y(&s, pow(10, l), LTOP, LH));
    if (!ticks)
        fprintf(f, "<text x=\"4\" y=\"%d\" font-size=\"11\">%.3g</text><text x=\"4\" y=\"%d\" font-size=\"11\">"
                   "%.3g</text>\n", LTOP + 10, pow(10, s.hi), LTOP + LH, pow(10, s.lo));
    static const char *const names[] = {"MSE", "MAE", "Huber loss", "pinball loss"};  // sf_loss_kind's order
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">%s on scaled values (log scale), by step: steps %llu to "
               "%llu</text>\n", LLEFT, LTOP + LH + 20, sc ? names[sc->loss_fn.kind] : "the loss",
            (unsigned long long)m->rows[0].step,
            (unsigned long long)m->rows[m->nrows - 1].step);
    for (int k = SF_FC_PERSISTENCE; sc && k < SF_FORECASTERS; k++) {
        if (!isfinite(sc->loss[k])) continue;  // no seasonal forecast, say
        double y = scale_y(&s, sc->loss[k], LTOP, LH);
        fprintf(f, "<g class=\"baseline\" data-name=\"%s\"", sf_forecaster_names[k]);
        value_attr(f, sc->loss[k]);
        fprintf(f, "><line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" stroke=\"%s\" stroke-dasharray=\"6,4\"/>"
                   "<text x=\"%d\" y=\"%.2f\" font-size=\"11\" text-anchor=\"end\" fill=\"%s\">%s %.4g</text></g>\n",
                LLEFT, y, LLEFT + LW, y, baseline_colours[k], LLEFT + LW - 4, y - 3, baseline_colours[k],
                sf_forecaster_names[k], sc->loss[k]);
    }
    series(f, m, &s, false, "#1f77b4");
    series(f, m, &s, true, "#ff7f0e");
    // The best epoch: its row's val_loss circled, where this run's part holds it.
    for (size_t i = m->nrows; m->best_epoch && i-- > 0;) {
        const sf_history_row *r = &m->rows[i];
        if (r->epoch != m->best_epoch || !isfinite(r->val_loss)) continue;
        double x = step_x(m, r->step), y = scale_y(&s, r->val_loss, LTOP, LH);
        fprintf(f, "<g id=\"best-mark\"><line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" stroke=\"#d62728\" "
                   "stroke-dasharray=\"2,3\"/><circle cx=\"%.2f\" cy=\"%.2f\" r=\"7\" fill=\"none\" stroke=\"#d62728\" "
                   "stroke-width=\"2\"/><text x=\"%.2f\" y=\"%d\" font-size=\"11\" fill=\"#d62728\" text-anchor=\"%s\">"
                   "best: epoch %llu</text></g>\n", x, LTOP, x, LTOP + LH, x, y, x + (x > LLEFT + LW / 2 ? -4 : 4),
                LTOP + 12, x > LLEFT + LW / 2 ? "end" : "start",
                (unsigned long long)m->best_epoch);
        break;
    }
    fprintf(f, "</svg>\n<p><span class=\"key\" style=\"background:#1f77b4\"></span> loss &nbsp; "
               "<span class=\"key\" style=\"background:#ff7f0e\"></span> val_loss &nbsp; dashed: the baselines' MSE "
               "on the validation part &nbsp; <span style=\"color:#d62728\">&#9675;</span> the best epoch</p>\n");
    lr_chart(f, m);
}

// The per-target table: RMSE and MAE in the data's units of the model and
// each baseline, and the verdicts.
static void target_table(FILE *f, const sf_score *s) {
    fprintf(f, "<p>Season: ");
    sf_html_text(f, s->season.text);
    fprintf(f, "</p>\n<table id=\"per-target\">\n<tr><th>target</th><th>metric</th>");
    for (int k = 0; k < SF_FORECASTERS; k++) fprintf(f, "<th>%s</th>", sf_forecaster_names[k]);
    fprintf(f, "<th style=\"text-align:left\">verdict</th></tr>\n");
    for (uint32_t j = 0; j < s->ntargets; j++) {
        const sf_target_score *t = &s->t[j];
        char v[320];
        sf_target_verdict(t, v, sizeof v);
        for (int m = 0; m < 2; m++) {
            fprintf(f, "<tr data-target=\"");
            sf_html_text(f, t->name);
            fprintf(f, "\" data-metric=\"%s\"><th>", m ? "mae" : "rmse");
            if (!m) sf_html_text(f, t->name);
            fprintf(f, "</th><td>%s</td>", m ? "MAE" : "RMSE");
            for (int k = 0; k < SF_FORECASTERS; k++) {
                fprintf(f, "<td data-forecaster=\"%s\"", sf_forecaster_names[k]);
                value_attr(f, m ? t->mae[k] : t->rmse[k]);
                fprintf(f, ">");
                number(f, m ? t->mae[k] : t->rmse[k]);
                fprintf(f, "</td>");
            }
            if (!m) {
                fprintf(f, "<td rowspan=\"2\" class=\"verdict\" style=\"text-align:left\">");
                sf_html_text(f, v);
                fprintf(f, " (%llu value%s)</td>", (unsigned long long)t->values, t->values == 1 ? "" : "s");
            }
            fprintf(f, "</tr>\n");
        }
    }
    char verdict[2048];
    sf_score_verdict(s, verdict, sizeof verdict);
    fprintf(f, "</table>\n<p id=\"verdict\"><b>Verdict:</b> ");
    sf_html_text(f, verdict);
    fprintf(f, "</p>\n");
}

// How good the model is: its curves against the baselines, and per target.
static void model_part(FILE *f, const sf_report_model *m) {
    fprintf(f, "<h2>Loss</h2>\n");
    if (!m->validation)
        fprintf(f, "<p id=\"no-validation\">This run has no validation windows (--val-split 0, or a validation part "
                   "too short for one window): no val_loss, no "
                   "baselines and no per-target scores; the loss alone says how well the model fits its training "
                   "data, not how well it forecasts.</p>\n");
    if (m->best_epoch) {
        fprintf(f, "<p id=\"best\" data-epoch=\"%llu\"", (unsigned long long)m->best_epoch);
        value_attr(f, m->best_val_loss);
        fprintf(f, ">Best epoch: %llu, val_loss ", (unsigned long long)m->best_epoch);
        number(f, m->best_val_loss);
        fprintf(f, "%s.</p>\n", m->nrows && m->rows[0].epoch > m->best_epoch ? " (in a part of the run before this "
                                                                               "one, not on the chart)" : "");
    }
    if (m->nrows) loss_chart(f, m);
    else fprintf(f, "<p id=\"no-history\">No epoch ended in this run: no loss to draw.</p>\n");
    fprintf(f, "<h2>Per target: the validation part at the run's end</h2>\n");
    if (!m->validation)
        fprintf(f, "<p id=\"no-scores\">Not scored: no validation windows (train with --val-split above 0).</p>\n");
    else if (!m->score)
        fprintf(f, "<p id=\"no-scores\">Not scored: the run ended before its end's scoring (interrupted); seqfeed "
                   "evaluate on its checkpoint scores it.</p>\n");
    else
        target_table(f, m->score);
}

int sf_report_write(const char *path, const sf_report_model *m, const float (*steps)[SF_PHASES], size_t nsteps,
                    const sf_replica_profile *replicas, uint32_t R, const sf_diagnosis *d,
                    const char *const *settings, sf_err *e) {
    sf_temp_file out;
    int rc = sf_temp_fopen(&out, path, e);
    if (rc) return rc;
    FILE *f = out.f;
    fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>seqfeed run report</title>\n"
               "<style>body{font-family:sans-serif;margin:2em;max-width:1000px} td,th{padding:2px 10px;"
               "text-align:right} th{background:#eee} .key{display:inline-block;width:12px;height:12px} "
               ".bar{background:#1f77b4;height:14px}</style></head><body>\n<h1>seqfeed run report</h1>\n");
    fprintf(f, "<h2>Diagnosis</h2>\n<p id=\"diagnosis\">");
    sf_html_text(f, d->text);
    fprintf(f, "</p>\n");
    if (m) model_part(f, m);
    fprintf(f, "<h2>Step time by phase (replica 0)</h2>\n");
    chart(f, steps, nsteps);
    fprintf(f, "<h2>Pipeline stages: busy share</h2>\n<table>\n");
    static const char *const stages[3] = {"read", "decode", "window"};
    for (int s = 0; s < 3; s++)
        fprintf(f, "<tr><th>%s</th><td>%.0f%%</td><td style=\"width:400px;text-align:left\"><div class=\"bar\" "
                   "style=\"width:%.0f%%\"></div></td></tr>\n",
                stages[s], 100 * d->utilisation[s], 100 * (d->utilisation[s] < 1 ? d->utilisation[s] : 1));
    fprintf(f, "</table>\n<h2>Per replica (ms per step: mean / p50 / p99)</h2>\n<table><tr><th></th>");
    for (uint32_t r = 0; r < R; r++) fprintf(f, "<th>replica %u</th>", r);
    fprintf(f, "</tr>\n");
    for (int k = 0; k <= SF_PHASES; k++) {
        fprintf(f, "<tr><th>%s</th>", k < SF_PHASES ? sf_phase_names[k] : "step");
        for (uint32_t r = 0; r < R; r++) {
            const sf_stat *s = k < SF_PHASES ? &replicas[r].phase[k] : &replicas[r].step;
            fprintf(f, "<td>%.2f / %.2f / %.2f</td>", 1e3 * s->mean, 1e3 * s->p50, 1e3 * s->p99);
        }
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</table>\n<h2>Settings</h2>\n<table>\n");
    for (size_t k = 0; settings && settings[k] && settings[k + 1]; k += 2) {
        fprintf(f, "<tr><th>");
        sf_html_text(f, settings[k]);
        fprintf(f, "</th><td style=\"text-align:left\">");
        sf_html_text(f, settings[k + 1]);
        fprintf(f, "</td></tr>\n");
    }
    fprintf(f, "</table>\n</body></html>\n");
    return sf_temp_fclose(&out, true, e);
}
