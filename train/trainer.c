// Mirrored steps: one thread per replica, joined by a barrier at each phase.
//
//   take batch
//   | barrier                      (ranks: replica 0 agrees with the other
//                                   ranks on the global batch, or the end)
//   forward/backward               (every replica, in parallel)
//   | barrier: replica 0 checks the replicas' results and decides to go on
//                                  (ranks: on the job's loss and interrupts)
//   sum gradients                  (replica r sums slice r over all replicas
//                                   and writes the sum back to every one;
//                                   ranks: the sum over ranks comes between)
//   | barrier
//   Adam on its own weights        (every replica, the same update)
//   | barrier: replica 0 runs the hook with everyone stopped
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train.h"

enum { RING = 65536 };  // steps kept for percentiles: a bounded buffer however long the run

typedef struct {
    struct sf_trainer *t;
    uint32_t r;
    sf_replica *rep;
    pthread_t thread;
    double loss, wait, copy, compute, reduce, update;  // this step's
    double start;                                // this step's start
    uint64_t steps;                              // steps profiled
    double first, last;                          // the first step's start, the last one's end
    double total[SF_PHASES];
    float (*ring)[SF_PHASES + 1];                // per step: the phases, then the step
    int track;                                   // in the trace
    bool warm;                                   // past the run's first step
    uint32_t count;
    uint32_t got;  // windows in this step's batch (0: none), read by every replica after barrier A
    int rc;  // of this step: 1 trained, 0 source ended, < 0 error
    sf_err e;
} worker;

struct sf_trainer {
    const sf_backend *be;
    const sf_model *m;
    uint32_t R;
    worker *w;
    sf_adam adam;
    uint64_t step;
    void *group;  // the backend's own reduction, when it has one
    sf_ranks *ranks;
    uint32_t first;  // global index of replica 0
    atomic_int *interrupted;
    // the step as the ranks agreed on it (or this process's alone)
    uint32_t global;
    double loss, wait;
    bool interrupt;
    sf_trace *trace;
    sf_staging *staging;  // the backend's, when it stages batches onto devices
    sf_stage_ops hooks;
    pthread_barrier_t bar;
    // Threads wait at the gate until all have started (go 1), or leave
    // (go -1): the barrier needs every one of them.
    pthread_mutex_t gate;
    pthread_cond_t gate_cv;
    int go;
    // one run's
    const sf_batch_source *src;
    uint64_t seed;
    sf_step_hook hook;
    void *hook_arg;
    bool stop;
    int rc;
    sf_err err;
};

// A backend that sums across the job itself (NCCL) needs every rank's
// replicas in one group: rank 0's id, sent to all.
static int open_group(sf_trainer *t, sf_err *e) {
    sf_replica **reps = malloc(t->R * sizeof *reps);
    if (!reps) return sf_err_set(e, SF_ENOMEM, "out of memory");
    for (uint32_t r = 0; r < t->R; r++) reps[r] = t->w[r].rep;
    sf_reduce_world world = {t->first, t->R * (uint32_t)sf_ranks_size(t->ranks), {{0}}};
    int rc = 0;
    if (t->ranks) {
        if (sf_ranks_rank(t->ranks) == 0) rc = t->be->reduce_id(&world.id, e);
        // A rank that failed still joins the broadcast, so that none waits.
        int64_t failed = rc != 0;
        int brc = sf_ranks_sum_i64(t->ranks, &failed, 1, "the replicas' group", e);
        if (!rc && !brc && failed) rc = sf_err_set(e, SF_EIO, "rank 0 could not make the job's NCCL id");
        if (!rc) rc = brc ? brc : sf_ranks_bcast(t->ranks, &world.id, sizeof world.id, "the NCCL id", e);
    }
    // NCCL's set-up waits for every rank: a missing one must not hang it.
    sf_ranks_watch(t->ranks, "setting up NCCL's communicators");
    if (!rc) rc = t->be->reduce_open(&t->group, reps, t->R, t->ranks ? &world : NULL, e);
    sf_ranks_unwatch(t->ranks);
    free(reps);
    return rc;
}

int sf_trainer_open(sf_trainer **out, const sf_backend *be, const sf_model *m, const sf_trainer_opts *o, sf_err *e) {
    *out = NULL;
    uint32_t replicas = o->replicas;
    if (replicas == 0 || o->replica_batch == 0) return sf_err_set(e, SF_EINVAL, "a trainer needs replicas and a batch");
    // Every rank the same number of replicas: global replica indices, and
    // the pipeline's shards, follow from it.
    int rc = sf_ranks_agree(o->ranks, &replicas, sizeof replicas, "the number of replicas per rank", e);
    if (rc) return rc;
    sf_trainer *t = calloc(1, sizeof *t);
    if (!t || !(t->w = calloc(replicas, sizeof *t->w))) {
        free(t);
        return sf_err_set(e, SF_ENOMEM, "out of memory");
    }
    t->be = be, t->m = m, t->R = replicas, t->adam = o->adam;
    t->ranks = o->ranks, t->first = (uint32_t)sf_ranks_rank(o->ranks) * replicas, t->interrupted = o->interrupted;
    // The cores shared out among the replicas (each cuts its batch in parts).
    long cores = o->cores ? (long)o->cores : sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t threads = cores > (long)replicas ? (uint32_t)cores / replicas : 1;
    pthread_barrier_init(&t->bar, NULL, replicas);
    pthread_mutex_init(&t->gate, NULL);
    pthread_cond_init(&t->gate_cv, NULL);
    for (uint32_t r = 0; r < replicas; r++) {
        t->w[r].t = t, t->w[r].r = r;
        t->w[r].ring = malloc(RING * sizeof *t->w[r].ring);  // without it: means only
        sf_replica_opts ro = {o->devices ? o->devices[r] : (int)r, threads, o->precision, sf_ranks_timeout(o->ranks)};
        if ((rc = be->open(&t->w[r].rep, m, o->replica_batch, o->window, &ro, e))) break;
    }
    if (!rc && be->reduce_open) rc = open_group(t, e);
    if (!rc && be->staging_open && o->stage_slots) {
        sf_replica **reps = malloc(replicas * sizeof *reps);
        for (uint32_t r = 0; reps && r < replicas; r++) reps[r] = t->w[r].rep;
        rc = reps ? be->staging_open(&t->staging, &t->hooks, reps, replicas, o->stage_slots, e)
                  : sf_err_set(e, SF_ENOMEM, "out of memory");
        free(reps);
    }
    if (rc) {
        sf_trainer_close(t);
        return rc;
    }
    *out = t;
    return 0;
}

void sf_trainer_close(sf_trainer *t) {
    if (!t) return;
    if (t->staging) t->be->staging_close(t->staging);
    if (t->group) t->be->reduce_close(t->group, false);
    for (uint32_t r = 0; r < t->R; r++) {
        if (t->w[r].rep) t->be->close(t->w[r].rep);
        free(t->w[r].ring);
    }
    pthread_barrier_destroy(&t->bar);
    pthread_mutex_destroy(&t->gate);
    pthread_cond_destroy(&t->gate_cv);
    free(t->w);
    free(t);
}

int sf_trainer_load(sf_trainer *t, const float *w, const float *m, const float *v, uint64_t step, sf_err *e) {
    for (uint32_t r = 0; r < t->R; r++) {
        int rc = t->be->load(t->w[r].rep, w, m, v, e);
        if (rc) return rc;
    }
    t->step = step;
    return 0;
}

int sf_trainer_save(sf_trainer *t, float *w, float *m, float *v, sf_err *e) {
    return t->be->save(t->w[0].rep, w, m, v, e);
}

int sf_trainer_agree(sf_trainer *t, sf_err *e) {
    if (!t->ranks) return 0;
    float *w = malloc((t->m->nparams ? t->m->nparams : 1) * sizeof *w);
    int rc = w ? sf_trainer_save(t, w, NULL, NULL, e) : sf_err_set(e, SF_ENOMEM, "out of memory");
    // A rank that failed still joins, with a checksum no other has.
    uint32_t crc = rc ? ~(uint32_t)sf_ranks_rank(t->ranks) : sf_crc32c(0, w, t->m->nparams * sizeof *w);
    free(w);
    int arc = sf_ranks_agree(t->ranks, &crc, sizeof crc, "the weights (their CRC-32C)", e);
    return rc ? rc : arc;
}

void sf_trainer_set_trace(sf_trainer *t, sf_trace *trace) {
    t->trace = trace;
    for (uint32_t r = 0; r < t->R; r++) {
        char name[32];
        snprintf(name, sizeof name, "replica %u", r);
        t->w[r].track = sf_trace_track(trace, name);
    }
}

const sf_stage_ops *sf_trainer_stage_ops(const sf_trainer *t) { return t->staging ? &t->hooks : NULL; }

int sf_trainer_stage_error(const sf_trainer *t, sf_err *e) {
    return t->staging ? t->be->staging_error(t->staging, e) : 0;
}

int sf_trainer_predict(sf_trainer *t, float *out, const float *x, uint32_t count, sf_err *e) {
    return t->be->predict(t->w[0].rep, out, x, count, e);
}

// Replica 0: the first replica's error stops all.
static void check_errors(sf_trainer *t) {
    for (uint32_t r = 0; r < t->R; r++)
        if (t->w[r].rc < 0 && !t->rc) t->stop = true, t->rc = t->w[r].rc, t->err = t->w[r].e;
}

// Replica 0, after every replica trained: an error stops all; a non-finite
// loss stops before it reaches the weights. With ranks, the job's loss and
// interrupts are summed first, so that every rank decides the same.
static void check_step(sf_trainer *t) {
    double v[3] = {0, 0, t->interrupted && *t->interrupted};  // loss, input wait, interrupts
    for (uint32_t r = 0; r < t->R; r++) v[0] += t->w[r].loss, v[1] += t->w[r].wait;
    check_errors(t);
    if (t->stop) return;
    int rc = sf_ranks_sum_f64(t->ranks, v, 3, "the step's loss", &t->err);
    if (rc) t->stop = true, t->rc = rc;
    t->loss = v[0], t->wait = v[1], t->interrupt = v[2] > 0;
    if (!t->stop && !isfinite(t->loss)) {
        t->stop = true;
        t->rc = SF_EINVAL;
        sf_err_set(&t->err, SF_EINVAL, "the loss became %g at step %llu: training stopped before the update (hint: "
                   "a lower learning rate, or check the data for extreme values)", t->loss,
                   (unsigned long long)t->step + 1);
    }
}

// Replica 0, once every replica has its batch: the step's global batch. An
// end of data on any replica stops all (the pipeline gives every replica
// the same number of batches, so an end is everyone's); with ranks, they
// agree on both. An error here stops this rank, whose program ends the job.
static void check_input(sf_trainer *t) {
    int64_t v[2] = {0, 0};  // windows, replicas at their end
    for (uint32_t r = 0; r < t->R; r++) v[0] += t->w[r].got, v[1] += t->w[r].rc == 0;
    check_errors(t);  // an error anywhere wins over an end elsewhere
    if (t->stop) return;
    int rc = sf_ranks_sum_i64(t->ranks, v, 2, "the step's batch", &t->err);
    if (rc) t->stop = true, t->rc = rc;
    if (v[1]) t->stop = true;
    t->global = (uint32_t)v[0];
}

// Replica r's slice [*lo, *hi) of the parameters, for the sums.
static void slice(const sf_trainer *t, uint32_t r, size_t *lo, size_t *hi) {
    size_t n = t->m->nparams;
    *lo = n * r / t->R, *hi = n * (r + 1) / t->R;
}

// The fixed order g0 + g1 + ... + g(R-1) for every element, so that the
// sum does not depend on thread timing; into replica 0's buffer.
static void sum_slice(sf_trainer *t, uint32_t r) {
    size_t lo, hi;
    slice(t, r, &lo, &hi);
    float *sum = t->be->gradients(t->w[0].rep);
    for (uint32_t q = 1; q < t->R; q++) {
        const float *g = t->be->gradients(t->w[q].rep);
        for (size_t k = lo; k < hi; k++) sum[k] += g[k];
    }
}

// Replica 0's sum, slice r, to every other replica.
static void spread_slice(sf_trainer *t, uint32_t r) {
    size_t lo, hi;
    slice(t, r, &lo, &hi);
    const float *sum = t->be->gradients(t->w[0].rep);
    for (uint32_t q = 1; q < t->R; q++) memcpy(t->be->gradients(t->w[q].rep) + lo, sum + lo, (hi - lo) * sizeof(float));
}

static void after_step(sf_trainer *t) {
    // The replicas return sums of row losses.
    sf_step_info s = {++t->step, t->loss / t->global, t->global, t->wait, t->interrupt};
    int rc = t->hook ? t->hook(t->hook_arg, &s, &t->err) : 0;
    if (rc) {
        t->stop = true;
        if (rc < 0) t->rc = rc;
    }
}

const char *const sf_phase_names[SF_PHASES] = {"input", "copy", "compute", "reduce", "update", "other"};

// The step that started at w->start ends at now: its phases into the
// profile. The run's first step is left out: its input wait is the
// pipeline filling up, which every later step is spared.
static void profile_step(worker *w, double now) {
    double step = now - w->start, ph[SF_PHASES] = {w->wait, w->copy, w->compute - w->copy, w->reduce, w->update, 0};
    if (!w->warm) {
        w->warm = true;
        w->wait = w->copy = w->compute = w->reduce = w->update = 0;
        return;
    }
    ph[SF_PHASE_OTHER] = step - ph[0] - ph[1] - ph[2] - ph[3] - ph[4];
    if (!w->steps) w->first = w->start;
    w->last = now;
    for (int k = 0; k < SF_PHASES; k++) w->total[k] += ph[k];
    if (w->ring) {
        float *row = w->ring[w->steps % RING];
        for (int k = 0; k < SF_PHASES; k++) row[k] = (float)ph[k];
        row[SF_PHASES] = (float)step;
    }
    w->steps++;
    w->wait = w->copy = w->compute = w->reduce = w->update = 0;
}

static int by_value(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static sf_stat column_stat(const worker *w, int k, float *tmp, double mean) {
    uint64_t n = w->steps < RING ? w->steps : RING;
    for (uint64_t i = 0; i < n; i++) tmp[i] = w->ring[i][k];
    qsort(tmp, n, sizeof *tmp, by_value);
    return (sf_stat){mean, n ? tmp[n / 2] : 0, n ? tmp[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1] : 0};
}

size_t sf_trainer_steps(sf_trainer *t, uint32_t r, float (*out)[SF_PHASES], size_t max) {
    const worker *w = &t->w[r];
    if (!w->ring) return 0;
    uint64_t kept = w->steps < RING ? w->steps : RING, n = kept < max ? kept : max;
    for (uint64_t i = 0; i < n; i++) {
        const float *row = w->ring[(w->steps - n + i) % RING];
        for (int k = 0; k < SF_PHASES; k++) out[i][k] = row[k];
    }
    return (size_t)n;
}

void sf_trainer_profile(sf_trainer *t, uint32_t r, sf_replica_profile *p) {
    const worker *w = &t->w[r];
    *p = (sf_replica_profile){.steps = w->steps, .wall = w->steps ? w->last - w->first : 0};
    float *tmp = w->ring ? malloc(RING * sizeof *tmp) : NULL;
    for (int k = 0; k < SF_PHASES; k++) {
        p->total[k] = w->total[k];
        double mean = w->steps ? w->total[k] / (double)w->steps : 0;
        p->phase[k] = tmp ? column_stat(w, k, tmp, mean) : (sf_stat){mean, 0, 0};
    }
    double mean = w->steps ? p->wall / (double)w->steps : 0;
    p->step = tmp ? column_stat(w, SF_PHASES, tmp, mean) : (sf_stat){mean, 0, 0};
    free(tmp);
}

// After replica 0 checked a step's batches or results: the time since
// `since` was, across ranks, waiting for the others (synchronisation, in
// the reduce phase); in one process it is the barrier's (other).
static double agreed(worker *w, double since, const char *what) {
    double now = sf_now();
    if (w->t->ranks) {
        w->reduce += now - since;
        sf_trace_span(w->t->trace, w->track, what, since, now);
    }
    return now;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    sf_trainer *t = w->t;
    const sf_batch_source *src = t->src;
    pthread_mutex_lock(&t->gate);
    while (t->go == 0) pthread_cond_wait(&t->gate_cv, &t->gate);
    bool go = t->go > 0;
    pthread_mutex_unlock(&t->gate);
    w->steps = 0, w->warm = false;
    for (int k = 0; k < SF_PHASES; k++) w->total[k] = 0;
    w->wait = w->copy = w->compute = w->reduce = w->update = 0;
    w->start = 0;
    while (go) {
        sf_batch b = {0};
        double t0 = sf_now();
        if (w->start > 0) profile_step(w, t0);  // the previous step ends where this one starts
        w->start = t0;
        w->rc = src->next(src->arg, w->r, &b, &w->e);
        w->count = b.count;
        double got = sf_now();
        w->wait += got - t0;
        sf_trace_span(t->trace, w->track, "input", t0, got);
        w->loss = 0;
        w->got = w->rc == 1 ? w->count : 0;
        pthread_barrier_wait(&t->bar);
        double t1 = sf_now();
        if (w->r == 0) check_input(t);
        pthread_barrier_wait(&t->bar);
        t1 = agreed(w, t1, "ranks: batch");
        if (t->stop) break;  // the wait for the end is no step
        if (w->rc == 1) {
            // MirroredStrategy divides by the global batch: every replica's
            // count this step, on every rank. Steps count from 1; replicas
            // (global indices) and steps get their own masks.
            uint64_t seed = t->seed ^ sf_splitmix64(&(uint64_t){(t->step + 1) * 0x10001ull + t->first + w->r});
            // Staged: the replica's stream waits for the batch's copy; the
            // host does not.
            int rc = t->staging ? t->be->staging_wait(t->staging, w->r, &b, &w->e) : 0;
            const float *x = t->staging ? b.device_x : b.x, *y = t->staging ? b.device_y : b.y;
            if (!rc) rc = t->be->train_step(w->rep, x, y, w->count, t->global, seed, &w->loss, &w->e);
            if (rc) w->rc = rc;
            src->release(src->arg, w->r, &b);
        }
        double done = sf_now();
        w->compute += done - t1;
        // Inside compute: the device's wait for this batch's copy (the
        // backend's step has waited for its stream, so the figure is final).
        if (w->rc == 1 && t->staging) w->copy += t->be->staging_waited(t->staging, w->r);
        sf_trace_span(t->trace, w->track, "forward+backward", t1, done);
        pthread_barrier_wait(&t->bar);
        double t2 = sf_now();
        if (w->r == 0) check_step(t);
        pthread_barrier_wait(&t->bar);
        if (t->stop) break;
        t2 = agreed(w, t2, "ranks: loss");
        if (t->group) {
            int rc = t->be->reduce(t->group, w->r, &w->e);
            if (rc) w->rc = rc;
        } else {
            sum_slice(t, w->r);
            if (t->ranks) {
                pthread_barrier_wait(&t->bar);
                if (w->r == 0) {
                    int rc = sf_ranks_sum_f32(t->ranks, t->be->gradients(w->rep), t->m->nparams,
                                             "the gradient all-reduce", &w->e);
                    if (rc) w->rc = rc;
                }
                pthread_barrier_wait(&t->bar);
            }
            spread_slice(t, w->r);
        }
        pthread_barrier_wait(&t->bar);
        double t3 = sf_now();
        w->reduce += t3 - t2;
        sf_trace_span(t->trace, w->track, "all-reduce", t2, t3);
        int rc = w->rc < 0 ? w->rc : t->be->apply(w->rep, &t->adam, t->step + 1, &w->e);
        if (rc) w->rc = rc;
        double t4 = sf_now();
        w->update += t4 - t3;
        sf_trace_span(t->trace, w->track, "update", t3, t4);
        pthread_barrier_wait(&t->bar);
        if (w->r == 0) {
            check_errors(t);  // a sum or an apply that failed
            if (!t->stop) after_step(t);
        }
        pthread_barrier_wait(&t->bar);
        if (t->stop) {
            profile_step(w, sf_now());
            break;
        }
    }
    return NULL;
}

int sf_trainer_run(sf_trainer *t, const sf_batch_source *src, uint64_t dropout_seed, sf_step_hook hook, void *arg,
                   sf_err *e) {
    t->src = src, t->seed = dropout_seed, t->hook = hook, t->hook_arg = arg;
    t->stop = false, t->rc = 0, t->go = 0;
    uint32_t started = 0;
    // The replicas' own threads are the parallelism: BLAS runs in the thread
    // that calls it.
    sf_cpu_threads(1);
    for (; started < t->R; started++)
        if (sf_thread_start(&t->w[started].thread, worker_main, &t->w[started])) break;
    pthread_mutex_lock(&t->gate);
    t->go = started == t->R ? 1 : -1;
    pthread_cond_broadcast(&t->gate_cv);
    pthread_mutex_unlock(&t->gate);
    for (uint32_t r = 0; r < started; r++) pthread_join(t->w[r].thread, NULL);
    if (started < t->R) return sf_err_set(e, SF_ENOMEM, "cannot start %u replica threads", t->R);
    // A failed step may leave collectives waiting for a replica that will
    // never join them: abort them, so the devices' streams can drain.
    if (t->rc && t->group) t->be->reduce_close(t->group, true), t->group = NULL;
    if (t->rc) *e = t->err;
    return t->rc;
}
