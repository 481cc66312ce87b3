// Mirrored steps: one thread per replica, each step (step)
//
//   next batch                   (next_batch: every replica its own)
//   | replica 0 agrees on the global batch, or the end (with the other ranks)
//   forward and backward         (forward_backward: every replica, in
//                                 parallel)
//   | replica 0 checks the replicas' results and decides to go on
//                                (ranks: on the job's loss and interrupts)
//   reduce                       (reduce: the gradients' sum, allreduce.c;
//                                 with --overlap-reduce, started layer by
//                                 layer during the backward)
//   update                       (update: Adam, every replica on its own
//                                 weights)
//   | replica 0 runs the hook with everyone stopped
//
// where each | is a barrier. On a backend that gives its loss late (GPUs,
// --deferred-loss), the step is queued whole first, forward and backward,
// reduce, update, and then each replica reads its loss and replica 0
// decides (step_deferred): the devices skip an update whose loss or
// gradients are not finite themselves. The time of each phase goes to the
// replica's profile (profile.c) and, with a trace, to a span on its track.
//
// sf_trainer_run starts the threads for at most the steps the caller asks
// for, and they end with it: the caller's loop (fit.c) does its epochs'
// work between runs, with every replica stopped.
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

int sf_trainer_open(sf_trainer **out, const sf_backend *be, const sf_model *m, const sf_trainer_opts *o, sf_err *e) {
    *out = NULL;
    uint32_t replicas = o->replicas;
    if (replicas == 0 || o->replica_batch == 0) return sf_err_set(e, SF_EINVAL, "a trainer needs replicas and a batch");
    // Every rank the same number of replicas: global replica indices, and
    // the pipeline's shards, follow from it.
    uint32_t delays[SF_DELAYS];
    int rc = sf_test_delays(delays, e);
    if (!rc) rc = sf_ranks_agree(o->ranks, &replicas, sizeof replicas, "the number of replicas per rank", e);
    if (rc) return rc;
    sf_trainer *t = calloc(1, sizeof *t);
    if (!t || !(t->w = calloc(replicas, sizeof *t->w))) {
        free(t);
        return sf_err_set(e, SF_ENOMEM, "out of memory");
    }
    t->be = be, t->m = m, t->R = replicas, t->adam = o->adam, t->late = o->late_loss && be->step_loss;
    t->overlap = o->overlap_reduce, t->ranks = o->ranks, t->interrupted = o->interrupted;
    t->sched = o->lr_schedule, t->sched.lr = o->adam.lr, t->lr_scale = 1;
    t->step_delay = delays[SF_DELAY_STEP] * 1e-6;
    t->first = (uint32_t)sf_ranks_rank(o->ranks) * replicas;
    t->batch = o->global_batch, t->parts = o->parts, t->data = o->data;
    // The cores shared out among the replicas (each cuts its batch in parts).
    long cores = o->cores ? (long)o->cores : sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t threads = cores > (long)replicas ? (uint32_t)cores / replicas : 1;
    pthread_barrier_init(&t->bar, NULL, replicas);
    pthread_mutex_init(&t->gate, NULL);
    pthread_cond_init(&t->gate_cv, NULL);
    pthread_mutex_init(&t->bk.mu, NULL);
    sf_replica **reps = malloc(replicas * sizeof *reps);
    if (!reps) rc = sf_err_set(e, SF_ENOMEM, "out of memory");
    for (uint32_t r = 0; !rc && r < replicas; r++) {
        t->w[r].t = t, t->w[r].r = r;
        t->w[r].ring = malloc(SF_STEP_RING * sizeof *t->w[r].ring);  // without it: means only
        sf_replica_opts ro = {.device = o->devices ? o->devices[r] : (int)r, .threads = threads,
                              .precision = o->precision, .timeout = sf_ranks_timeout(o->ranks),
                              .rnn_algo = o->rnn_algo, .late_loss = t->late, .cuda_graph = o->cuda_graph,
                              .overlap_reduce = o->overlap_reduce};
        if (be->train_parts && o->parts) {
            // The most parts a replica takes, and the largest part.
            sf_replica_opts_parts(&ro, o->parts, o->global_batch, replicas * (uint32_t)sf_ranks_size(o->ranks));
            ro.sum_parts = t->sum_parts = replicas * sf_ranks_size(o->ranks) == 1;
        }
        if (!(rc = be->open(&t->w[r].rep, m, o->replica_batch, o->window, &ro, e))) reps[r] = t->w[r].rep;
    }
    if (!rc) rc = sf_allreduce_open(t, e);
    if (!rc && be->staging_open && o->stage_slots)
        rc = be->staging_open(&t->staging, &t->hooks, reps, replicas, o->stage_slots, e);
    free(reps);
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
    pthread_mutex_destroy(&t->bk.mu);
    free(t->prefix);
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

int sf_trainer_save_replica(sf_trainer *t, uint32_t r, float *w, sf_err *e) {
    if (r >= t->R) return sf_err_set(e, SF_EINVAL, "no replica %u of %u", r, t->R);
    return t->be->save(t->w[r].rep, w, NULL, NULL, e);
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
    if (t->bk.n) t->bk.track = sf_trace_track(trace, "gradient sums across ranks");
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

// Replica 0, after every replica trained: an error stops all; a non-finite
// loss stops before it reaches the weights (late, the devices skipped the
// update that was queued before its loss was read). With ranks, the job's
// loss and interrupts are summed first, so that every rank decides the same.
static void check_step(sf_trainer *t) {
    // loss, input wait, interrupts, and of them SIGTERMs: a job that some
    // rank's scheduler terminates ends as terminated on every rank
    int sig = t->interrupted ? *t->interrupted : 0;
    double v[4] = {0, 0, sig != 0, sig == SIGTERM};
    for (uint32_t r = 0; r < t->R; r++) v[0] += t->w[r].loss, v[1] += t->w[r].phase[SF_PHASE_INPUT];
    check_errors(t);
    if (t->stop) return;
    int rc = sf_ranks_sum_f64(t->ranks, v, 4, "the step's loss", &t->err);
    if (rc) t->stop = true, t->rc = rc;
    t->loss = v[0], t->wait = v[1], t->interrupt = v[3] > 0 ? SIGTERM : v[2] > 0 ? SIGINT : 0;
    if (!t->stop && !isfinite(t->loss)) {
        t->stop = true;
        t->rc = SF_EINVAL;
        char check[1024] = "the data for extreme values";
        if (t->data)
            snprintf(check, sizeof check, "%s for extreme values: `seqfeed verify %s` names any value that is not "
                     "finite", t->data, t->data);
        sf_err_set(&t->err, SF_EINVAL, "the loss became %g at step %llu: training stopped before the update (hint: a "
                   "lower --lr, or check %s)", t->loss, (unsigned long long)t->step + 1, check);
    }
}

// Replica 0, with every replica stopped after the update: the hook.
static void after_step(sf_trainer *t) {
    check_errors(t);  // a sum or an apply that failed
    if (t->stop) return;
    // The replicas return sums of row losses.
    sf_step_info s = {++t->step, t->loss / t->global, t->global, t->wait, t->interrupt};
    int rc = t->hook ? t->hook(t->hook_arg, &s, &t->err) : 0;
    if (rc) {
        t->stop = true;
        if (rc < 0) t->rc = rc;
    }
    if (++t->done == t->limit) t->stop = true;
}

// Ends the phase that began at *since: its seconds into this step's phase
// k, a span on the replica's track, and *since moves to now.
static void phase(sf_worker *w, enum sf_phase k, const char *span, double *since) {
    double now = sf_now();
    w->phase[k] += now - *since;
    sf_trace_span(w->t->trace, w->track, span, *since, now);
    *since = now;
}

// A barrier outside every phase: its wait is other's barrier part.
static void wait_all(sf_worker *w) {
    double t0 = sf_now();
    pthread_barrier_wait(&w->t->bar);
    w->part[SF_OTHER_BARRIER] += sf_now() - t0;
}

// Every replica comes to a decision point; replica 0 decides with check.
// The wait for the slowest replica is the barrier's (other); across ranks
// the decision itself waits for the other ranks: synchronisation, counted as
// reduce. false: the run stops here.
static bool decide(sf_worker *w, void (*check)(sf_trainer *), const char *span, double *since) {
    sf_trainer *t = w->t;
    wait_all(w);
    *since = sf_now();
    if (w->r == 0) check(t);
    if (t->ranks) {
        pthread_barrier_wait(&t->bar);
        phase(w, SF_PHASE_REDUCE, span, since);
    } else {
        wait_all(w);
        *since = sf_now();
    }
    return !t->stop;
}

// forward and backward on the replica's batch, which then goes back to the
// source. Staged, its stream waits for the batch's copy (the host does
// not), and that wait is the step's copy phase.
static void forward_backward(sf_worker *w, const sf_batch *b, double *at) {
    sf_trainer *t = w->t;
    if (w->rc == 1) {
        // MirroredStrategy divides by the global batch: every replica's
        // count this step, on every rank. Steps count from 1; replicas
        // (global indices) and steps get their own masks, or, part by part,
        // the global batch's rows do.
        bool split = b->nparts && t->parts && t->be->train_parts;
        uint64_t seed = t->seed ^ sf_splitmix64(&(uint64_t){(t->step + 1) * 0x10001ull + (split ? 0 : t->first + w->r)});
        int rc = t->staging ? t->be->staging_wait(t->staging, w->r, b, &w->e) : 0;
        const float *x = t->staging ? b->device_x : b->x, *y = t->staging ? b->device_y : b->y;
        w->nterms = split && !t->sum_parts ? b->nparts : 1;
        for (uint32_t j = 0, n; split && j < b->nparts; j++) sf_part_rows(t->batch, t->parts, b->first_part + j, &w->row0[j], &n);
        if (!rc && split)
            rc = t->be->train_parts(w->rep, x, y, b->nparts, b->part_count, w->row0, t->global, seed, &w->loss, &w->e);
        else if (!rc) rc = t->be->train_step(w->rep, x, y, b->count, t->global, seed, &w->loss, &w->e);
        if (rc) w->rc = rc;
        if (t->step_delay > 0) sf_sleep_until(*at + t->step_delay);
        t->src->release(t->src->arg, w->r, b);
    }
    phase(w, SF_PHASE_COMPUTE, "forward+backward", at);
}

// After the backend waited for its stream (the step, or its loss), which
// comes after the batch's copy: the copy's figure is final. The wait for it
// moves from compute to copy.
static void copy_figure(sf_worker *w) {
    if (w->rc != 1 || !w->t->staging) return;
    double copy = w->t->be->staging_waited(w->t->staging, w->r);
    w->phase[SF_PHASE_COPY] += copy, w->phase[SF_PHASE_COMPUTE] -= copy;
}

// next batch: the replica's own; replica 0 agrees on the global batch, or
// the end (the wait for the end is no step). false: the run stops here.
static bool next_batch(sf_worker *w, sf_batch *b, double *at) {
    sf_trainer *t = w->t;
    w->rc = t->src->next(t->src->arg, w->r, b, &w->e);
    w->got = w->rc == 1 ? b->count : 0, w->loss = 0;
    phase(w, SF_PHASE_INPUT, "input", at);
    return decide(w, check_input, "ranks: batch", at);
}

// reduce: every replica's gradient buffer holds the sum over the job.
static void reduce(sf_worker *w, double *at) {
    int rc = sf_allreduce(w->t, w->r, &w->e);
    if (rc) w->rc = rc;
    pthread_barrier_wait(&w->t->bar);
    phase(w, SF_PHASE_REDUCE, "all-reduce", at);
}

// The lr the update after `step` updates uses: the schedule's, times
// plateau's multiplier, as float32 (Adam's); a constant schedule gives
// Adam's lr itself.
static float step_lr(const sf_trainer *t, uint64_t step) {
    return (float)(sf_lr_at(&t->sched, step) * t->lr_scale);
}

void sf_trainer_set_lr_scale(sf_trainer *t, double scale) { t->lr_scale = scale; }

double sf_trainer_lr(const sf_trainer *t) { return step_lr(t, t->step); }

// update: Adam on the replica's own weights, at the step's lr (a GPU
// backend turns it into the step size its update, or its graph, reads from
// device memory each step).
static void update(sf_worker *w, double *at) {
    sf_trainer *t = w->t;
    sf_adam adam = t->adam;
    adam.lr = step_lr(t, t->step);
    int rc = w->rc < 0 ? w->rc : t->be->apply(w->rep, &adam, t->step + 1, &w->e);
    if (rc) w->rc = rc;
    phase(w, SF_PHASE_UPDATE, "update", at);
}

// One step, the loss read before the update: replica 0 checks it (and the
// replicas' errors) before anything changes. false: the run stops here.
static bool step(sf_worker *w, double *at) {
    sf_batch b = {0};
    if (!next_batch(w, &b, at)) return false;
    forward_backward(w, &b, at);
    copy_figure(w);
    if (!decide(w, check_step, "ranks: loss", at)) return false;
    reduce(w, at);
    update(w, at);
    return true;
}

// One step on a backend that gives its loss late: queued whole, forward
// and backward, reduce, update, then the loss is read (on the host while
// the device runs the rest of the step: waiting for it is waiting for the
// forward pass) and replica 0 decides; the device skipped an update whose
// loss or gradients were not finite.
static bool step_deferred(sf_worker *w, double *at) {
    sf_trainer *t = w->t;
    sf_batch b = {0};
    if (!next_batch(w, &b, at)) return false;
    forward_backward(w, &b, at);
    if (!t->group) pthread_barrier_wait(&t->bar);  // the host sums read every replica's gradients
    reduce(w, at);
    update(w, at);
    int rc = w->rc < 0 ? w->rc : t->be->step_loss(w->rep, &w->loss, &w->e);
    if (rc) w->rc = rc;
    phase(w, SF_PHASE_COMPUTE, "loss", at);
    copy_figure(w);
    return decide(w, check_step, "ranks: loss", at);
}

static void *worker_main(void *arg) {
    sf_worker *w = arg;
    sf_trainer *t = w->t;
    pthread_mutex_lock(&t->gate);
    while (t->go == 0) pthread_cond_wait(&t->gate_cv, &t->gate);
    bool go = t->go > 0;
    pthread_mutex_unlock(&t->gate);
    bool again = w->start > 0;  // an earlier run's last step has ended
    while (go) {
        double at = sf_now();
        // The previous step ends where this one starts; the caller's work
        // between two runs is no step's.
        if (again) sf_profile_resume(w, at), again = false;
        else sf_profile_step(w, at);
        if (!(t->late ? step_deferred(w, &at) : step(w, &at))) break;
        wait_all(w);
        if (w->r == 0) {
            double h = sf_now();
            after_step(t);
            w->part[SF_OTHER_HOOK] += sf_now() - h;
        }
        wait_all(w);
        if (t->stop) {
            sf_profile_step(w, sf_now());
            break;
        }
    }
    return NULL;
}

int sf_trainer_run(sf_trainer *t, const sf_batch_source *src, uint64_t dropout_seed, uint64_t max_steps,
                   sf_step_hook hook, void *arg, sf_err *e) {
    t->src = src, t->seed = dropout_seed, t->hook = hook, t->hook_arg = arg;
    t->limit = max_steps, t->done = 0, t->stop = false, t->rc = 0, t->go = 0;
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
    sf_allreduce_settle(t);
    if (started < t->R) return sf_err_set(e, SF_ENOMEM, "cannot start %u replica threads", t->R);
    // A failed step may leave collectives waiting for a replica that will
    // never join them: abort them, so the devices' streams can drain.
    if (t->rc && t->group) t->be->reduce_close(t->group, true), t->group = NULL;
    if (t->rc) *e = t->err;
    return t->rc;
}
