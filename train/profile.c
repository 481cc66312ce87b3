// Where each replica's steps went, and why replicas wait: the step-time
// breakdown against the pipeline's stage counters.
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/resource.h>
#include <unistd.h>

#include "internal.h"

const char *const sf_phase_names[SF_PHASES] = {"input", "copy", "compute", "reduce", "update", "other"};

void sf_profile_resume(sf_worker *w, double now) {
    w->gap += now - w->start;
    w->start = now;
    for (int k = 0; k < SF_PHASES; k++) w->phase[k] = 0;
    for (int k = 0; k < SF_OTHER_PARTS; k++) w->part[k] = 0;
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
        for (int k = 0; k < SF_OTHER_PARTS; k++) w->part_total[k] += w->part[k];
        int b = sf_lat_bucket(w->phase[SF_PHASE_INPUT]);
        w->wait_count[b]++, w->wait_sum[b] += w->phase[SF_PHASE_INPUT];
        if (w->ring) {
            float *row = w->ring[w->steps % SF_STEP_RING];
            for (int k = 0; k < SF_PHASES; k++) row[k] = (float)w->phase[k];
            row[SF_PHASES] = (float)step;
        }
        w->steps++;
    }
    for (int k = 0; k < SF_PHASES; k++) w->phase[k] = 0;
    for (int k = 0; k < SF_OTHER_PARTS; k++) w->part[k] = 0;
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

// Over the kept steps: each phase's share of its step, its standard
// deviation; and the input share (input and copy over the steps' time) with
// its standard error, a ratio's: the residuals of each step's input from
// the share times its step.
static void spread(const sf_worker *w, sf_replica_profile *p) {
    uint64_t n = w->steps < SF_STEP_RING ? w->steps : SF_STEP_RING;
    if (!w->ring || n < 2) return;
    double sum[SF_PHASES] = {0}, sq[SF_PHASES] = {0}, in = 0, time = 0, res = 0;
    for (uint64_t i = 0; i < n; i++) {
        const float *row = w->ring[i];
        double step = row[SF_PHASES] > 0 ? row[SF_PHASES] : 1e-12;
        for (int k = 0; k < SF_PHASES; k++) sum[k] += row[k] / step, sq[k] += (row[k] / step) * (row[k] / step);
        in += row[SF_PHASE_INPUT] + row[SF_PHASE_COPY], time += row[SF_PHASES];
    }
    for (int k = 0; k < SF_PHASES; k++) {
        double m = sum[k] / (double)n;
        p->share_sd[k] = sqrt(fmax(0, (sq[k] - (double)n * m * m) / (double)(n - 1)));
    }
    double share = time > 0 ? in / time : 0;
    for (uint64_t i = 0; i < n; i++) {
        const float *row = w->ring[i];
        double r = row[SF_PHASE_INPUT] + row[SF_PHASE_COPY] - share * row[SF_PHASES];
        res += r * r;
    }
    p->input_se = time > 0 ? sqrt(res / (double)(n * (n - 1))) / (time / (double)n) : 0;
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
    for (int k = 0; k < SF_OTHER_PARTS; k++) p->other_part[k] = w->part_total[k];
    memcpy(p->wait_count, w->wait_count, sizeof p->wait_count);
    memcpy(p->wait_sum, w->wait_sum, sizeof p->wait_sum);
    spread(w, p);
}


void sf_cpu_sample(sf_cpu_use *c) {
    *c = (sf_cpu_use){.wall = sf_now(), .busy = NAN};
    struct rusage ru;
    if (!getrusage(RUSAGE_SELF, &ru))
        c->process = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
                     ru.ru_stime.tv_usec * 1e-6;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set)) return;
    c->cores = (uint32_t)CPU_COUNT(&set);
    // /proc/stat's line per core: user nice system idle iowait irq softirq steal, in clock ticks.
    FILE *f = fopen("/proc/stat", "r");
    long hz = sysconf(_SC_CLK_TCK);
    char line[512];
    double busy = 0;
    uint32_t seen = 0;
    while (f && hz > 0 && fgets(line, sizeof line, f)) {
        int cpu;
        unsigned long long v[8] = {0};
        if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1], &v[2], &v[3], &v[4],
                   &v[5], &v[6], &v[7]) < 5 || cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &set))
            continue;
        busy += (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)hz;
        seen++;
    }
    if (f) fclose(f);
    if (seen == c->cores) c->busy = busy;
}

sf_cpu_use sf_cpu_since(const sf_cpu_use *then, const sf_cpu_use *now) {
    return (sf_cpu_use){.wall = now->wall - then->wall, .process = now->process - then->process,
                        .busy = now->busy - then->busy, .cores = now->cores};
}

static const char *const stage_names[3] = {"read", "decode", "window"};

static const char *classify(double share) {
    return share < 0.05 ? "not input bound" : share < 0.20 ? "moderately input bound" : "highly input bound";
}

// The hint for cores that the pipeline's threads wait for: whose they are.
static void cores_hint(char *h, size_t cap, const sf_diagnosis *d, const sf_diagnose_in *in) {
    uint32_t cores = in->cpu.cores;
    if (isfinite(d->others) && d->others >= 0.25)
        snprintf(h, cap, " Hint: other processes used %.2f of the %u core(s) this run may use: give it cores of its "
                 "own (stop them, or move them to other cores); more pipeline threads would only queue for the same "
                 "cores.", d->others, cores);
    else if (isfinite(d->used))
        snprintf(h, cap, " Hint: this run's own threads kept its %u core(s) %.0f%% busy: fewer threads (--decoders, "
                 "--lanes, or --replicas) leave the pipeline a core.", cores, 100 * d->used / (cores ? cores : 1));
    else
        h[0] = 0;
}

// The stage's hint, from what was measured of it: whether its threads were
// blocked (I/O, sleeping: more of them in flight overlap the waits) or on a
// core (more threads need free cores), and by how much the demand exceeds it.
static void stage_hint(char *h, size_t cap, int s, const sf_diagnosis *d, const sf_diagnose_in *in) {
    const sf_pipe_opts *o = in->pipe;
    double grow = d->load[s] * 1.5;  // to the demand, with a margin for its spread and bursts
    // Busy, but neither on a core nor queued for one: blocked (I/O, sleeping).
    double blocked = d->utilisation[s] > 0 ? fmax(0, d->utilisation[s] - d->on_core[s] - d->queued[s]) / d->utilisation[s] : NAN;
    double free_cores = isfinite(d->used) && isfinite(d->others) ? in->cpu.cores - d->used - d->others : NAN;
    char why[160];
    h[0] = 0;
    if (!o) return;
    if (s == SF_STAGE_READ) {
        if (isfinite(blocked) && blocked >= 0.5) {
            uint32_t depth = (uint32_t)ceil(o->io.depth * grow);
            if (depth > 1024) depth = 1024;
            // Requests in flight are blocks read ahead too: --prefetch per
            // lane bounds them with the blocks read but not yet windowed,
            // which arrive in bursts as the requests complete: twice them.
            uint32_t lanes = o->replicas * o->lanes, ahead = 2 * ((depth + lanes - 1) / lanes);
            char prefetch[96] = "";
            if (ahead > o->prefetch)
                snprintf(prefetch, sizeof prefetch, " and --prefetch %u (blocks read ahead per lane)", ahead);
            snprintf(h, cap, " Hint: the reader waited for the storage %.0f%% of its busy time, with at most %u "
                     "requests in flight: --depth %u%s.", 100 * blocked, o->io.depth, depth, prefetch);
        } else if (isfinite(blocked)) {
            snprintf(h, cap, " Hint: reading kept the reader on a core %.0f%% of the time: fewer, larger "
                     "requests (--block-chunks %u).", 100 * d->on_core[s], o->block_chunks * 2);
        }
        return;
    }
    uint32_t now = s == SF_STAGE_DECODE ? o->decoders : o->lanes;
    const char *flag = s == SF_STAGE_DECODE ? "--decoders" : "--lanes";
    uint32_t want = (uint32_t)ceil(now * grow);
    if (want <= now) want = now + 1;
    if (isfinite(blocked) && blocked >= 0.5) {
        snprintf(h, cap, " Hint: its threads were off the CPU %.0f%% of their busy time, waiting for something "
                 "other than a core: more of them overlap the waits: %s %u.", 100 * blocked, flag, want);
        return;
    }
    snprintf(why, sizeof why, "this process used %.2f of its %u core(s), other processes %.2f", d->used,
             in->cpu.cores, d->others);
    if (isfinite(free_cores) && free_cores >= 0.5) {
        uint32_t cap_cores = now + (uint32_t)floor(free_cores + 0.5);
        if (want > cap_cores) want = cap_cores;
        snprintf(h, cap, " Hint: %s %u (%s: %.1f free).", flag, want, why, free_cores);
    } else if (isfinite(free_cores)) {
        snprintf(h, cap, " Hint: none that this machine allows: %s left no core free, and more %s would take "
                 "cores from the replicas%s.", why, flag,
                 s == SF_STAGE_DECODE ? "; a lower zstd level when packing costs less to decode" : "");
    }
}

void sf_diagnose(sf_diagnosis *d, const sf_diagnose_in *in) {
    *d = (sf_diagnosis){0};
    uint32_t R = in->R;
    double wall = 0, se2 = 0;
    uint64_t steps = UINT64_MAX;
    for (uint32_t r = 0; r < R; r++) {
        const sf_replica_profile *p = &in->replicas[r];
        if (p->wall > wall) wall = p->wall;
        if (p->steps < steps) steps = p->steps;
        for (int k = 0; k < SF_PHASES; k++) {
            d->share[k] += p->wall > 0 ? p->total[k] / p->wall / R : 0;
            d->share_sd[k] += p->share_sd[k] / R;
        }
        for (int k = 0; k < SF_OTHER_PARTS; k++) d->other_part[k] += p->wall > 0 ? p->other_part[k] / p->wall / R : 0;
        se2 += p->input_se * p->input_se;
    }
    d->steps = R ? steps : 0, d->seconds = wall;
    // The noise threshold: the p99 of the replicas' wake-ups, at a bucket's
    // edge, so that the steps' waits (the same buckets) split exactly at it.
    uint64_t wake[SF_LAT_BUCKETS] = {0};
    for (uint32_t r = 0; r < R; r++)
        for (int k = 0; k < SF_LAT_BUCKETS; k++) wake[k] += in->pipe_replicas[r].wake[k], d->wakeups += in->pipe_replicas[r].wake[k];
    int edge = -1;
    if (d->wakeups >= 20) {
        uint64_t seen = 0;
        for (edge = 0; edge < SF_LAT_BUCKETS - 1 && (seen += wake[edge]) < (d->wakeups * 99 + 99) / 100; edge++) {
        }
        d->noise_threshold = sf_lat_edge(edge);
    }
    double noise = 0, stalls = 0;
    for (uint32_t r = 0; r < R; r++) {
        const sf_replica_profile *p = &in->replicas[r];
        for (int k = 0; k < SF_LAT_BUCKETS; k++) {
            double share = p->wall > 0 ? p->wait_sum[k] / p->wall / R : 0;
            // A step under 10 us found its batch ready: the call's own cost, no stall to count.
            if (k <= edge) noise += share, d->noise_steps += sf_lat_edge(k) > 1e-5 ? p->wait_count[k] : 0;
            else stalls += share, d->stall_steps += p->wait_count[k];
        }
    }
    d->noise_share = noise;
    d->input_share = stalls + d->share[SF_PHASE_COPY];
    d->input_ci = R ? 1.96 * sqrt(se2) / R : 0;
    // Steps for a 95% interval of +-SF_JUDGE_HALF_WIDTH: the standard error shrinks as 1 / sqrt(steps).
    double mean_se = R ? sqrt(se2 / R) : 0, need = (double)d->steps * pow(1.96 * mean_se / SF_JUDGE_HALF_WIDTH, 2);
    d->need_steps = need > SF_JUDGE_STEPS ? (uint64_t)ceil(need) : SF_JUDGE_STEPS;
    // The whole wait, noise and copies included: what the replicas would no longer wait without it.
    double waited = d->input_share + noise;
    // Noise that adds up to much is no noise: its stalls are short, not rare.
    double judged_share = noise < SF_NOISE_SHARE ? d->input_share : waited;
    // Enough when the interval is that narrow, or already says on which
    // side of 5% the run is (input bound or not; a wide interval is shown).
    bool decisive = judged_share - d->input_ci >= 0.05 || judged_share + d->input_ci < 0.05;
    d->judged = d->steps >= SF_JUDGE_STEPS && wall >= SF_JUDGE_SECONDS && (d->steps >= d->need_steps || decisive);

    // The cores, and each stage's busy time split: on a core, queued for one, the rest blocked.
    d->used = d->others = NAN;
    if (in->cpu.cores && in->cpu.wall > 0) {
        d->used = in->cpu.process / in->cpu.wall;
        if (isfinite(in->cpu.busy)) d->others = fmax(0, (in->cpu.busy - in->cpu.process) / in->cpu.wall);
    }
    uint32_t decoders = in->pipe && in->pipe->decoders ? in->pipe->decoders : 1;
    double busy[3] = {0}, cpu[3] = {0}, queued[3] = {0};
    for (uint32_t k = 0; k < in->npipes; k++) {
        const sf_pipe_stats *ps = &in->pipes[k];
        if (ps->read_busy > busy[0]) busy[0] = ps->read_busy, cpu[0] = ps->read_cpu, queued[0] = ps->read_queued;
        if (ps->decode_busy / decoders > busy[1])
            busy[1] = ps->decode_busy / decoders, cpu[1] = ps->decode_cpu / decoders, queued[1] = ps->decode_queued / decoders;
    }
    for (uint32_t r = 0; r < R; r++) {
        const sf_pipe_replica_stats *x = &in->pipe_replicas[r];
        if (x->busy > busy[2]) busy[2] = x->busy, cpu[2] = x->cpu, queued[2] = x->queued;
    }
    for (int k = 0; k < 3; k++) {
        // A batch or a read in progress at either end is counted whole: a
        // thread is never busier than all the time.
        d->utilisation[k] = wall > 0 ? fmin(busy[k] / wall, 1) : 0;
        d->load[k] = d->utilisation[k] / fmax(1 - waited, 0.01);
        d->on_core[k] = wall > 0 ? fmin(cpu[k] / wall, 1) : NAN;
        d->queued[k] = wall > 0 ? fmin(queued[k] / wall, 1) : NAN;
    }

    char noise_text[200] = "";
    if (noise > 0.0005 || d->noise_steps)
        snprintf(noise_text, sizeof noise_text, ", besides %.1f%% in %llu shorter stall(s) (under %.2f ms: scheduler "
                 "noise)", 100 * noise, (unsigned long long)d->noise_steps, 1e3 * d->noise_threshold);
    if (!d->judged) {
        d->classification = "too short to judge", d->limit = "too short";
        snprintf(d->text, sizeof d->text, "too short to judge: %llu steps over %.2f s (need %llu steps and %.0f s); "
                 "so far replicas waited for input %.1f%% of the time%s.", (unsigned long long)d->steps, wall,
                 (unsigned long long)d->need_steps, SF_JUDGE_SECONDS, 100 * d->input_share, noise_text);
        return;
    }
    d->classification = classify(judged_share);
    size_t n = (size_t)snprintf(d->text, sizeof d->text, "%s: replicas waited for input %.1f%% (+-%.1f) of the "
                                "time%s%s.", d->classification, 100 * d->input_share, 100 * d->input_ci, noise_text,
                                noise >= SF_NOISE_SHARE ? ", too much to be noise: short stalls, but not rare ones"
                                                        : "");
    char *t = d->text + n, hint[512] = "";
    size_t cap = sizeof d->text - n;
    if (judged_share >= 0.05 && d->share[SF_PHASE_COPY] > stalls) {
        d->limit = "copy";
        snprintf(t, cap, " %.1f%% of the time went to host-to-device copies that compute could not hide. Hint: more "
                 "staging slots (--slots: copies start earlier), or larger batches per GPU (fewer, longer copies).",
                 100 * d->share[SF_PHASE_COPY]);
    } else if (judged_share >= 0.05) {
        int s = 0;
        for (int k = 1; k < 3; k++)
            if (d->load[k] > d->load[s]) s = k;
        int hungry = -1;  // the stage whose threads waited most for a core
        for (int k = 0; k < 3; k++)
            if (isfinite(d->queued[k]) && (hungry < 0 || d->queued[k] > d->queued[hungry])) hungry = k;
        bool starved = hungry >= 0 && d->queued[hungry] >= SF_STARVED;
        char split[160] = "";
        if (isfinite(d->on_core[s]))
            snprintf(split, sizeof split, "; on a core %.0f%% of the time, waiting for one %.0f%%%s", 100 * d->on_core[s],
                     100 * d->queued[s], d->queued[s] >= SF_STARVED ? " (starved of cores)" : "");
        if (d->load[s] >= SF_STAGE_LIMIT) {
            // A stage starved of cores gets no more threads: they would queue for the same cores.
            d->limit = stage_names[s];
            if (isfinite(d->queued[s]) && d->queued[s] >= SF_STARVED) cores_hint(hint, sizeof hint, d, in);
            else stage_hint(hint, sizeof hint, s, d, in);
            snprintf(t, cap, " The limiting stage is %s: busy %.0f%% of the time%s, %.0f%% of what the replicas "
                     "would ask of it without waiting (a stage limits from %.0f%%)%s; read %.0f%%, decode %.0f%%, "
                     "window %.0f%%.%s", d->limit, 100 * d->utilisation[s],
                     s == SF_STAGE_DECODE ? " per decoder thread" : s == SF_STAGE_WINDOW ? " per windower" : "",
                     100 * d->load[s], 100 * SF_STAGE_LIMIT, split, 100 * d->utilisation[0], 100 * d->utilisation[1],
                     100 * d->utilisation[2], hint);
        } else if (starved) {
            d->limit = "cores";
            cores_hint(hint, sizeof hint, d, in);
            snprintf(t, cap, " The pipeline is starved of cores: its %s thread%s waited for a core %.0f%% of the time "
                     "(a thread is starved from %.0f%%), on one %.0f%%, busy %.0f%%; no stage is busy enough to limit "
                     "by its work.%s", stage_names[hungry],
                     hungry == SF_STAGE_READ ? "" : "s", 100 * d->queued[hungry], 100 * SF_STARVED,
                     100 * d->on_core[hungry], 100 * d->utilisation[hungry], hint);
        } else {
            d->limit = "none";
            snprintf(t, cap, " No stage is busy enough to limit: a stage limits from %.0f%% of what the replicas would "
                     "ask of it without waiting, and the busiest, %s, reaches %.0f%% (busy %.0f%% of the time%s); "
                     "nothing measured names a cause, so no hint.", 100 * SF_STAGE_LIMIT, stage_names[s],
                     100 * d->load[s], 100 * d->utilisation[s], split);
        }
    } else {
        // Not input bound: what the steps spend their time on.
        const double *sh = d->share;
        int top = SF_PHASE_COMPUTE;
        for (int k = SF_PHASE_COMPUTE; k < SF_PHASES; k++)
            if (sh[k] > sh[top]) top = k;
        char other[256];
        double rest = sh[SF_PHASE_OTHER] - d->other_part[SF_OTHER_BARRIER] - d->other_part[SF_OTHER_HOOK];
        snprintf(other, sizeof other, "other %.0f%% (waiting at barriers for the other replicas %.0f%%, the step "
                 "hook %.0f%%, the loop's bookkeeping %.0f%%)", 100 * sh[SF_PHASE_OTHER],
                 100 * d->other_part[SF_OTHER_BARRIER], 100 * d->other_part[SF_OTHER_HOOK], 100 * fmax(rest, 0));
        char shares[512];
        snprintf(shares, sizeof shares, "forward and backward %.0f%% (+-%.0f over steps), all-reduce %.0f%%, update "
                 "%.0f%%, %s", 100 * sh[SF_PHASE_COMPUTE], 100 * d->share_sd[SF_PHASE_COMPUTE],
                 100 * sh[SF_PHASE_REDUCE], 100 * sh[SF_PHASE_UPDATE], other);
        if (sh[top] < 0.5) {
            d->limit = "none";
            snprintf(t, cap, " No phase dominates the steps: %s.", shares);
        } else if (top == SF_PHASE_COMPUTE) {
            d->limit = "compute";
            char shared[160] = "";
            if (isfinite(d->others) && d->others >= 0.5 * in->cpu.cores)
                snprintf(shared, sizeof shared, " Other processes used %.2f of the %u core(s) it may run on: the "
                         "computation had what they left (%.2f used).", d->others, in->cpu.cores, d->used);
            snprintf(t, cap, " Steps are compute bound: %s.%s", shares, shared);
        } else if (top == SF_PHASE_REDUCE) {
            d->limit = "all-reduce";
            snprintf(t, cap, " Steps are all-reduce bound: %s. Hint: larger batches per replica, so that each "
                     "step's computation outweighs its all-reduce.", shares);
        } else {
            d->limit = top == SF_PHASE_OTHER ? "other" : "update";
            snprintf(t, cap, " Steps are mostly %s: %s.", top == SF_PHASE_OTHER ? "outside forward, backward, "
                     "all-reduce and update" : "the update (Adam)", shares);
        }
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
    fprintf(f, "  shares of the time (+- the sd of a step's share):");
    for (int k = 0; k < SF_PHASES; k++)
        fprintf(f, "%s %s %.1f%% +-%.1f", k ? "," : "", sf_phase_names[k], 100 * d->share[k], 100 * d->share_sd[k]);
    fprintf(f, "\n  other: at barriers %.1f%%, the step hook %.1f%%, the rest %.1f%%\n",
            100 * d->other_part[SF_OTHER_BARRIER], 100 * d->other_part[SF_OTHER_HOOK],
            100 * fmax(0, d->share[SF_PHASE_OTHER] - d->other_part[SF_OTHER_BARRIER] - d->other_part[SF_OTHER_HOOK]));
    if (d->wakeups >= 20)
        fprintf(f, "  stalls: %llu step(s) waited %.2f ms or more (%.1f%% of the time); %llu waited less, from 10 us "
                "(%.1f%%): scheduler noise, as %.2f ms is the p99 of %llu wake-ups of a replica waiting for a batch\n",
                (unsigned long long)d->stall_steps, 1e3 * d->noise_threshold, 100 * (d->input_share - d->share[SF_PHASE_COPY]),
                (unsigned long long)d->noise_steps, 100 * d->noise_share, 1e3 * d->noise_threshold,
                (unsigned long long)d->wakeups);
    else
        fprintf(f, "  stalls: %llu wake-up(s) of a waiting replica, too few to measure the scheduler's noise by: "
                "every wait counts\n", (unsigned long long)d->wakeups);
    fprintf(f, "  threads:");
    for (int k = 0; k < 3; k++) {
        fprintf(f, "%s %s busy %.0f%%%s", k ? "," : "", stage_names[k], 100 * d->utilisation[k],
                k == 1 ? " per decoder" : k == 2 ? " per windower" : "");
        if (isfinite(d->on_core[k])) fprintf(f, " (on a core %.0f%%, waiting for one %.0f%%)", 100 * d->on_core[k],
                                             100 * d->queued[k]);
    }
    if (isfinite(d->used)) fprintf(f, "; this process used %.2f core(s)", d->used);
    if (isfinite(d->others)) fprintf(f, ", other processes %.2f on the same cores", d->others);
    fprintf(f, "\ndiagnosis: %s\n", d->text);
}
