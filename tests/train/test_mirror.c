// Mirrored steps: R = 1, 2 and 4 replicas fed the same global batches (each
// replica its slice) end with the same weights after 6 steps, to float
// summation-order tolerance, and every replica of a run with bit-identical
// weights; a repeated run is bit-identical; a loss that turns non-finite
// stops before the update. The same on a backend that gives its loss late
// (as GPUs do: the CPU backend with step_loss, and apply guarded as the
// GPU's is): the same weights bit for bit, and the same stop. A run in
// parts (sf_trainer_run's max_steps, as the fit loop's epochs and
// checkpoints cut it) is bit for bit the run in one.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/common.h"
#include "train/train.h"

enum { GLOBAL = 8, T = 5, I = 3, O = 2, STEPS = 6 };

typedef struct {
    const float *x, *y;  // STEPS global batches
    uint32_t R;
    uint64_t taken[4];
} slices;

static int next(void *arg, uint32_t r, sf_batch *b, sf_err *e) {
    slices *s = arg;
    (void)e;
    uint64_t k = s->taken[r]++;
    if (k >= STEPS) return 0;
    uint32_t per = GLOBAL / s->R;
    *b = (sf_batch){.x = (float *)s->x + ((size_t)k * GLOBAL + (size_t)r * per) * T * I,
                    .y = (float *)s->y + ((size_t)k * GLOBAL + (size_t)r * per) * O, .count = per};
    return 1;
}

static void release(void *arg, uint32_t r, const sf_batch *b) { (void)arg, (void)r, (void)b; }

static uint64_t chunk;     // steps per sf_trainer_run (0: all in one)
static int poison_at = -1;  // the step whose loss is made NaN through its batch
static double first_loss;  // the step hook's loss of step 1
static int count_steps(void *arg, const sf_step_info *s, sf_err *e) {
    (void)e;
    *(uint64_t *)arg = s->step;
    if (s->step == 1) first_loss = s->loss;
    return 0;
}

// The late backend: each replica's loss kept from train_step for step_loss.
static struct {
    sf_replica *rep;
    double loss;
    size_t nparams;
} late[4];
static sf_backend late_backend;

static double *late_loss(const sf_replica *r) {
    for (int k = 0; k < 4; k++)
        if (late[k].rep == r) return &late[k].loss;
    abort();
}

static int late_open(sf_replica **r, const sf_model *m, uint32_t batch, uint32_t window, const sf_replica_opts *o,
                     sf_err *e) {
    int rc = sf_backend_cpu.open(r, m, batch, window, o, e);
    for (int k = 0; !rc && k < 4; k++)
        if (!late[k].rep) {
            late[k].rep = *r, late[k].nparams = m->nparams;
            break;
        }
    return rc;
}

static void late_close(sf_replica *r) {
    for (int k = 0; k < 4; k++)
        if (late[k].rep == r) late[k].rep = NULL;
    sf_backend_cpu.close(r);
}

static int late_train_step(sf_replica *r, const float *x, const float *y, uint32_t count, uint32_t global_batch,
                           uint64_t seed, double *loss, sf_err *e) {
    *loss = NAN;  // not for the trainer to read
    return sf_backend_cpu.train_step(r, x, y, count, global_batch, seed, late_loss(r), e);
}

static int late_apply(sf_replica *r, const sf_adam *a, uint64_t step, sf_err *e) {
    size_t n = 0;
    for (int k = 0; k < 4; k++)
        if (late[k].rep == r) n = late[k].nparams;
    return sf_update_finite(sf_backend_cpu.gradients(r), n, *late_loss(r)) ? sf_backend_cpu.apply(r, a, step, e) : 0;
}

static int late_step_loss(sf_replica *r, double *loss, sf_err *e) {
    (void)e;
    *loss = *late_loss(r);
    return 0;
}

static void train_on(const sf_backend *be, uint32_t R, const sf_model *m, const float *w0, const float *x,
                     const float *y, float *w, int *rc, sf_err *e) {
    sf_trainer *t;
    sf_adam adam = {1e-2f, 0.9f, 0.999f, 1e-7f};
    *rc = sf_trainer_open(&t, be, m, &(sf_trainer_opts){.replicas = R, .replica_batch = GLOBAL / R, .window = T,
                          .adam = adam, .late_loss = true, .data = "poisoned.sfpack"}, e);
    if (*rc) return;
    slices s = {x, y, R, {0}};
    sf_batch_source src = {next, release, &s};
    uint64_t steps = 0;
    *rc = sf_trainer_load(t, w0, NULL, NULL, 0, e);
    for (uint64_t before = 0; !*rc; before = steps) {
        *rc = sf_trainer_run(t, &src, 5, chunk, count_steps, &steps, e);
        if (!chunk || steps - before < chunk) break;  // the source ended
    }
    // After a stop, the weights as the stop left them.
    if (!*rc || *rc == SF_EINVAL) {
        int src_rc = sf_trainer_save(t, w, NULL, NULL, &(sf_err){0});
        if (src_rc) *rc = src_rc;
    }
    // Every replica applied the same update to the same weights: bit for bit.
    float *other = malloc(m->nparams * sizeof(float));
    for (uint32_t r = 1; !*rc && other && r < R; r++) {
        *rc = sf_trainer_save_replica(t, r, other, e);
        CHECK(*rc || memcmp(other, w, m->nparams * sizeof(float)) == 0, "R=%u: replica %u's weights differ from "
              "replica 0's", R, r);
    }
    free(other);
    if (!*rc && poison_at < 0) CHECK(steps == STEPS, "R=%u: %llu steps", R, (unsigned long long)steps);
    if (poison_at >= 0) CHECK(steps == (uint64_t)poison_at, "poisoned: %llu steps", (unsigned long long)steps);
    sf_trainer_close(t);
}

static void train(uint32_t R, const sf_model *m, const float *w0, const float *x, const float *y, float *w, int *rc,
                  sf_err *e) {
    train_on(&sf_backend_cpu, R, m, w0, x, y, w, rc, e);
}

int main(void) {
    sf_model m;
    sf_err e = {0};
    // Dropout is on in training: with the masks drawn per (step, replica),
    // replica counts would differ, so the equality runs without it.
    CHECK(sf_model_parse(&m, "lstm:7,lstm:5,dense:4,dense", I, O, &e) == 0, "%s", e.msg);
    float *w0 = malloc(m.nparams * sizeof(float)), *ref = malloc(m.nparams * sizeof(float));
    float *w = malloc(m.nparams * sizeof(float));
    float *x = malloc((size_t)STEPS * GLOBAL * T * I * sizeof(float)), *y = malloc((size_t)STEPS * GLOBAL * O * sizeof(float));
    uint64_t s = 3;
    for (size_t k = 0; k < (size_t)STEPS * GLOBAL * T * I; k++) x[k] = (float)((sf_splitmix64(&s) >> 40) * 0x1p-23) - 1;
    for (size_t k = 0; k < (size_t)STEPS * GLOBAL * O; k++) y[k] = (float)((sf_splitmix64(&s) >> 40) * 0x1p-23) - 1;
    sf_model_init(&m, w0, 11);
    int rc;
    train(1, &m, w0, x, y, ref, &rc, &e);
    CHECK(rc == 0, "R=1: %s", e.msg);
    // The reported loss is the global batch's mean loss, as Keras reports it.
    sf_cpu_pass *one;
    if (sf_cpu_pass_open(&one, &m, GLOBAL, T, SF_PRECISION_FP32, &e) == 0) {
        double want = sf_loss_sum(&m.loss, sf_cpu_pass_forward(one, w0, x, GLOBAL, false, 0, 0), y, GLOBAL, O) / GLOBAL;
        CHECK(fabs(first_loss - want) <= 1e-6 * want, "step 1 loss %.9g, the batch's mean loss is %.9g", first_loss,
              want);
        sf_cpu_pass_close(one);
    }
    double moved = 0;
    for (size_t k = 0; k < m.nparams; k++) moved = fmax(moved, fabs(ref[k] - w0[k]));
    CHECK(moved > 1e-3, "the weights hardly moved (%.3g)", moved);
    for (uint32_t R = 2; R <= 4; R *= 2) {
        train(R, &m, w0, x, y, w, &rc, &e);
        CHECK(rc == 0, "R=%u: %s", R, e.msg);
        double worst = 0;
        for (size_t k = 0; k < m.nparams; k++) worst = fmax(worst, fabs(w[k] - ref[k]));
        // Six Adam steps of lr 1e-2 move weights by up to 6e-2; summation
        // order changes gradients in their 7th digit, Adam's normalised
        // update by about as much (measured: 6e-8).
        CHECK(worst <= 1e-6, "R=%u: weights differ from R=1 by up to %.3g", R, worst);
    }
    train(2, &m, w0, x, y, ref, &rc, &e);
    train(2, &m, w0, x, y, w, &rc, &e);
    CHECK(memcmp(w, ref, m.nparams * sizeof(float)) == 0, "two runs with R=2 differ");
    chunk = 4;  // 4 steps, then 2
    train(2, &m, w0, x, y, w, &rc, &e);
    CHECK(rc == 0 && memcmp(w, ref, m.nparams * sizeof(float)) == 0, "R=2 in runs of 4 steps: other weights (%s)",
          rc ? e.msg : "");
    late_backend = sf_backend_cpu;
    late_backend.open = late_open, late_backend.close = late_close, late_backend.train_step = late_train_step;
    late_backend.apply = late_apply, late_backend.step_loss = late_step_loss;
    chunk = 1;  // and a run per step
    train_on(&late_backend, 2, &m, w0, x, y, w, &rc, &e);
    CHECK(rc == 0 && memcmp(w, ref, m.nparams * sizeof(float)) == 0, "R=2, the loss read late: other weights (%s)",
          rc ? e.msg : "");
    chunk = 0;
    // A NaN in a batch makes the loss NaN: the trainer stops before applying
    // that step, so the weights are those after the steps before it; late,
    // the backend skipped the update queued before the loss was read.
    poison_at = 3;
    x[(size_t)poison_at * GLOBAL * T * I + 1] = NAN;
    train(2, &m, w0, x, y, ref, &rc, &e);
    CHECK(rc == SF_EINVAL && strstr(e.msg, "loss became nan at step 4") &&
              strstr(e.msg, "`seqfeed verify poisoned.sfpack` names any value that is not finite"),
          "NaN: %d %s", rc, e.msg);
    train_on(&late_backend, 2, &m, w0, x, y, w, &rc, &e);
    CHECK(rc == SF_EINVAL && strstr(e.msg, "loss became nan at step 4"), "NaN, late: %d %s", rc, e.msg);
    CHECK(memcmp(w, ref, m.nparams * sizeof(float)) == 0, "NaN, late: the update of step 4 reached the weights");
    bool finite = true;
    for (size_t k = 0; k < m.nparams; k++) finite &= isfinite(w[k]) != 0;
    CHECK(finite, "NaN: the weights after the stop are not finite");
    free(w0), free(ref), free(w), free(x), free(y);
    return TEST_EXIT();
}
