// The run's HTML report: one file, inline SVG and CSS, nothing fetched.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train.h"

static const char *const colours[SF_PHASES] = {"#d62728", "#ff7f0e", "#1f77b4", "#9467bd", "#2ca02c", "#aaaaaa"};

static void html(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else if (*s == '"') fputs("&quot;", f);
        else fputc(*s, f);
    }
}

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

int sf_report_write(const char *path, const float (*steps)[SF_PHASES], size_t nsteps,
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
    html(f, d->text);
    fprintf(f, "</p>\n<h2>Step time by phase (replica 0)</h2>\n");
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
        html(f, settings[k]);
        fprintf(f, "</th><td style=\"text-align:left\">");
        html(f, settings[k + 1]);
        fprintf(f, "</td></tr>\n");
    }
    fprintf(f, "</table>\n</body></html>\n");
    return sf_temp_fclose(&out, true, e);
}
