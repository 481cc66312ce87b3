// Where each replica's steps went, and why replicas wait: the step-time
// breakdown against the pipeline's stage counters.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char *const sf_phase_names[SF_PHASES] = {"input", "copy", "compute", "reduce", "update", "other"};

void sf_profile_resume(sf_worker *w, double now) {
    w->gap += now - w->start;
    w->start = now;
    for (int k = 0; k < SF_PHASES; k++) w->phase[k] = 0;
}

// The step that started at w->start ends at now: its phases into the
// profile, and the next step starts. The run's first step is left out: its
// input wait is the pipeline filling up, which every later step is spared.
void sf_profile_step(sf_worker *w, double now) {
    double step = now - w->start, other = step;
    bool counted = w->start > 0 && w->warm;
    if (w->start > 0) w->warm = true;
    w->start = now;
    if (counted) {
        for (int k = 0; k < SF_PHASE_OTHER; k++) other -= w->phase[k];
        w->phase[SF_PHASE_OTHER] = other;
        // A pause between runs after the first profiled step is no wall time.
        if (!w->steps) w->first = now - step;
        else w->paused += w->gap;
        w->gap = 0;
        w->last = now;
        for (int k = 0; k < SF_PHASES; k++) w->total[k] += w->phase[k];
        if (w->ring) {
            float *row = w->ring[w->steps % SF_STEP_RING];
            for (int k = 0; k < SF_PHASES; k++) row[k] = (float)w->phase[k];
            row[SF_PHASES] = (float)step;
        }
        w->steps++;
    }
    for (int k = 0; k < SF_PHASES; k++) w->phase[k] = 0;
}

static int by_value(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static sf_stat column_stat(const sf_worker *w, int k, float *tmp, double mean) {
    uint64_t n = w->steps < SF_STEP_RING ? w->steps : SF_STEP_RING;
    for (uint64_t i = 0; i < n; i++) tmp[i] = w->ring[i][k];
    qsort(tmp, n, sizeof *tmp, by_value);
    return (sf_stat){mean, n ? tmp[n / 2] : 0, n ? tmp[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1] : 0};
}

size_t sf_trainer_steps(sf_trainer *t, uint32_t r, float (*out)[SF_PHASES], size_t max) {
    const sf_worker *w = &t->w[r];
    if (!w->ring) return 0;
    uint64_t kept = w->steps < SF_STEP_RING ? w->steps : SF_STEP_RING, n = kept < max ? kept : max;
    for (uint64_t i = 0; i < n; i++) {
        const float *row = w->ring[(w->steps - n + i) % SF_STEP_RING];
        for (int k = 0; k < SF_PHASES; k++) out[i][k] = row[k];
    }
    return (size_t)n;
}

void sf_trainer_profile(sf_trainer *t, uint32_t r, sf_replica_profile *p) {
    const sf_worker *w = &t->w[r];
    *p = (sf_replica_profile){.steps = w->steps, .wall = w->steps ? w->last - w->first - w->paused : 0};
    float *tmp = w->ring ? malloc(SF_STEP_RING * sizeof *tmp) : NULL;
    for (int k = 0; k < SF_PHASES; k++) {
        p->total[k] = w->total[k];
        double mean = w->steps ? w->total[k] / (double)w->steps : 0;
        p->phase[k] = tmp ? column_stat(w, k, tmp, mean) : (sf_stat){mean, 0, 0};
    }
    double mean = w->steps ? p->wall / (double)w->steps : 0;
    p->step = tmp ? column_stat(w, SF_PHASES, tmp, mean) : (sf_stat){mean, 0, 0};
    free(tmp);
}

static const char *const stage_names[3] = {"read", "decode", "window"};

void sf_diagnose(sf_diagnosis *d, const sf_replica_profile *replicas, uint32_t R, const sf_pipe_stats *pipes,
                 uint32_t npipes, const sf_pipe_replica_stats *pipe_replicas, uint32_t decoders) {
    *d = (sf_diagnosis){0};
    double wall = 0, share[SF_PHASES] = {0};
    for (uint32_t r = 0; r < R; r++) {
        const sf_replica_profile *p = &replicas[r];
        if (p->wall > wall) wall = p->wall;
        for (int k = 0; k < SF_PHASES; k++) share[k] += p->wall > 0 ? p->total[k] / p->wall / R : 0;
    }
    // The copy that compute waited for is input too, as TensorFlow counts it.
    d->input_share = share[SF_PHASE_INPUT] + share[SF_PHASE_COPY];
    d->classification = d->input_share < 0.05 ? "not input bound" : d->input_share < 0.20 ? "moderately input bound"
                                                                                       : "highly input bound";
    if (wall > 0) {
        for (uint32_t k = 0; k < npipes; k++) {
            d->utilisation[SF_STAGE_READ] = fmax(d->utilisation[SF_STAGE_READ], pipes[k].read_busy / wall);
            d->utilisation[SF_STAGE_DECODE] =
                fmax(d->utilisation[SF_STAGE_DECODE], pipes[k].decode_busy / (decoders ? decoders : 1) / wall);
        }
        for (uint32_t r = 0; r < R; r++)
            d->utilisation[SF_STAGE_WINDOW] = fmax(d->utilisation[SF_STAGE_WINDOW], pipe_replicas[r].busy / wall);
        // A batch or a read in progress at either end is counted whole: a
        // thread is never busier than all the time.
        for (int k = 0; k < 3; k++) d->utilisation[k] = fmin(d->utilisation[k], 1);
    }
    if (d->input_share >= 0.05 && share[SF_PHASE_COPY] > share[SF_PHASE_INPUT]) {
        d->limit = "copy";
        snprintf(d->text, sizeof d->text,
                 "%s: replicas waited for input %.1f%% of the time, %.1f%% of it for host-to-device copies that "
                 "compute could not hide. Hint: more staging slots (copies start earlier), or larger batches per "
                 "GPU (fewer, longer copies).",
                 d->classification, 100 * d->input_share, 100 * share[SF_PHASE_COPY]);
    } else if (d->input_share >= 0.05) {
        int s = 0;
        for (int k = 1; k < 3; k++)
            if (d->utilisation[k] > d->utilisation[s]) s = k;
        d->limit = stage_names[s];
        static const char *const hint[3] = {
            "reads are the bottleneck: more in flight (--depth), data in the page cache, or a faster disk",
            "decoding is the bottleneck: more --decoders (cores permitting), or a lower zstd level when packing",
            "windowing is the bottleneck: more --lanes (windowers per replica), cores permitting, or a smaller --pool"};
        snprintf(d->text, sizeof d->text,
                 "%s: replicas waited for input %.1f%% of the time; the limiting stage is %s (busy %.0f%% of the "
                 "time%s; read %.0f%%, decode %.0f%%, window %.0f%%). Hint: %s.",
                 d->classification, 100 * d->input_share, d->limit, 100 * d->utilisation[s],
                 s == SF_STAGE_DECODE ? " per decoder thread" : s == SF_STAGE_WINDOW ? " per windower" : "",
                 100 * d->utilisation[0], 100 * d->utilisation[1], 100 * d->utilisation[2], hint[s]);
    } else {
        bool reduce = share[SF_PHASE_REDUCE] > share[SF_PHASE_COMPUTE];
        d->limit = reduce ? "all-reduce" : "compute";
        snprintf(d->text, sizeof d->text,
                 "%s: replicas waited for input %.1f%% of the time. Steps are %s bound: forward and backward %.0f%%, "
                 "all-reduce %.0f%%, update %.0f%%, other %.0f%%. %s",
                 d->classification, 100 * d->input_share, d->limit, 100 * share[SF_PHASE_COMPUTE],
                 100 * share[SF_PHASE_REDUCE], 100 * share[SF_PHASE_UPDATE], 100 * share[SF_PHASE_OTHER],
                 reduce ? "Hint: larger batches per replica, so that each step's computation outweighs its "
                          "all-reduce."
                        : "Hint: if step time hardly grows with the batch (seqfeed bench train at several "
                          "--batch-size), the per-replica batch is too small for the device: raise it.");
    }
}

void sf_profile_print(FILE *f, const sf_replica_profile *replicas, uint32_t R, const sf_diagnosis *d) {
    fprintf(f, "where the steps went (ms per step: mean / p50 / p99)\n  %-8s", "");
    for (uint32_t r = 0; r < R; r++) fprintf(f, "  replica %-14u", r);
    fputc('\n', f);
    for (int k = 0; k <= SF_PHASES; k++) {
        fprintf(f, "  %-8s", k < SF_PHASES ? sf_phase_names[k] : "step");
        for (uint32_t r = 0; r < R; r++) {
            const sf_stat *s = k < SF_PHASES ? &replicas[r].phase[k] : &replicas[r].step;
            fprintf(f, "  %6.2f / %6.2f / %6.2f", 1e3 * s->mean, 1e3 * s->p50, 1e3 * s->p99);
        }
        fputc('\n', f);
    }
    for (uint32_t r = 0; r < R; r++) {
        const sf_replica_profile *p = &replicas[r];
        double sum = 0;
        for (int k = 0; k < SF_PHASES; k++) sum += p->total[k];
        fprintf(f, "  replica %u: %llu steps (the first, the pipeline filling, left out), phases add up to %.3f s of "
                "%.3f s wall (%.1f%%)\n", r, (unsigned long long)p->steps, sum, p->wall,
                p->wall > 0 ? 100 * sum / p->wall : 0);
    }
    fprintf(f, "diagnosis: %s\n", d->text);
}
