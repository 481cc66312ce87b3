// The learning rate's schedules: sf_lr_at and sf_plateau_update against
// Keras 3's CosineDecay (with its warmup) and ReduceLROnPlateau, as
// tests/ref/gen_lr_ref.py recorded them in lr_ref.txt (argv[1]); a zeroed
// schedule is Adam's lr itself; and the trainer's every update takes its
// step's lr, times the multiplier set between runs, on 2 replicas.
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "tests/common.h"
#include "train/train.h"

// Keras computes in float32: its cosine near the end of the decay is off
// from the double's by a few float32 ulps of 1, relative to the peak lr.
static bool near(double got, double want, double scale) { return fabs(got - want) <= 1e-6 * scale; }

static void fixture(const char *path) {
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f) return;
    char line[512], name[64] = "";
    sf_lr_schedule s = {0};
    sf_plateau p = {0};
    double min_delta = 0;
    int schedules = 0, plateaus = 0, points = 0, reductions = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long a, b;
        double x, y, z, v;
        if (line[0] == 'S' && sscanf(line, "S %63s %lf %llu %llu %lf", name, &x, &a, &b, &y) == 5) {
            s = (sf_lr_schedule){.kind = strncmp(name, "cosine", 6) ? SF_LR_CONSTANT : SF_LR_COSINE, .lr = x,
                                 .warmup_steps = a, .total_steps = b, .lr_min = y};
            schedules++;
        } else if (line[0] == 'L' && sscanf(line, "L %llu %lf", &a, &x) == 2) {
            double got = sf_lr_at(&s, a);
            CHECK(near(got, x, s.lr), "%s: step %llu: lr %.9g, Keras %.9g", name, a, got, x);
            points++;
        } else if (line[0] == 'P' && sscanf(line, "P %63s %lf %lf %llu %lf %lf", name, &x, &y, &a, &z, &v) == 6) {
            s = (sf_lr_schedule){.kind = SF_LR_PLATEAU, .lr = x, .factor = y, .patience = a, .lr_min = v};
            p = (sf_plateau){.scale = 1, .best = INFINITY}, min_delta = z;
            plateaus++;
        } else if (line[0] == 'V' && sscanf(line, "V %lf %lf", &x, &y) == 2) {
            double before = p.scale;
            bool reduced = sf_plateau_update(&p, &s, min_delta, x);
            CHECK(reduced == (p.scale != before), "%s: says %d, and the scale went %g -> %g", name, reduced, before,
                  p.scale);
            reductions += reduced;
            CHECK(fabs(s.lr * p.scale - y) <= 1e-6 * y, "%s: after val_loss %g: lr %.9g, Keras %.9g", name, x,
                  s.lr * p.scale, y);
            points++;
        } else {
            CHECK(line[0] == '#', "%s: cannot read line '%s'", path, line);
        }
    }
    fclose(f);
    CHECK(schedules >= 5 && plateaus >= 4 && points > 300 && reductions >= 8,
          "%s: %d schedules, %d plateaus, %d values, %d reductions: too few to test", path, schedules, plateaus, points,
          reductions);
}

// The shapes the fixture's numbers stand for, in words.
static void shapes(void) {
    sf_lr_schedule c = {.lr = 1e-3};
    CHECK(sf_lr_at(&c, 0) == 1e-3 && sf_lr_at(&c, 1u << 30) == 1e-3, "a zeroed schedule is not constant");
    CHECK((float)sf_lr_at(&(sf_lr_schedule){.lr = (float)3e-4}, 9) == (float)3e-4, "constant is not the lr itself");
    sf_lr_schedule w = {.kind = SF_LR_PLATEAU, .lr = 1e-3, .warmup_steps = 4};
    CHECK(sf_lr_at(&w, 0) == 0 && sf_lr_at(&w, 2) == 5e-4 && sf_lr_at(&w, 4) == 1e-3, "plateau's warmup: %g %g %g",
          sf_lr_at(&w, 0), sf_lr_at(&w, 2), sf_lr_at(&w, 4));
    sf_lr_schedule cos = {.kind = SF_LR_COSINE, .lr = 1e-3, .warmup_steps = 10, .total_steps = 110, .lr_min = 1e-5};
    CHECK(near(sf_lr_at(&cos, 60), (1e-3 + 1e-5) / 2, 1e-3), "cosine's middle: %g", sf_lr_at(&cos, 60));
    CHECK(sf_lr_at(&cos, 110) == 1e-5 && sf_lr_at(&cos, 1000) == 1e-5, "cosine's end: %g, after: %g",
          sf_lr_at(&cos, 110), sf_lr_at(&cos, 1000));
    sf_lr_schedule none = {.kind = SF_LR_COSINE, .lr = 1e-3, .warmup_steps = 5, .total_steps = 5, .lr_min = 1e-4};
    CHECK(sf_lr_at(&none, 5) == 1e-4, "no steps to decay over: %g, expected lr-min", sf_lr_at(&none, 5));
    // A NaN first evaluation is no best (Keras' best starts at inf): the
    // best stays inf (a checkpoint refuses a NaN), and the wait counts it.
    sf_lr_schedule pl = {.kind = SF_LR_PLATEAU, .lr = 1e-3, .patience = 2, .factor = 0.5};
    sf_plateau p = {.scale = 1, .best = INFINITY};
    CHECK(!sf_plateau_update(&p, &pl, 0, NAN) && isinf(p.best) && p.wait == 1, "a NaN first val_loss: best %g, wait %u",
          p.best, (unsigned)p.wait);
    CHECK(!sf_plateau_update(&p, &pl, 0, 0.5) && p.best == 0.5 && p.wait == 0, "after a NaN, 0.5: best %g, wait %u",
          p.best, (unsigned)p.wait);
}

enum { GLOBAL = 4, T = 3, I = 2, O = 1, STEPS = 9 };

// Per Adam step, as apply got it; every replica's thread writes it (the
// same value), hence atomic.
static _Atomic float lr_seen[STEPS + 1];
static int record_apply(sf_replica *r, const sf_adam *a, uint64_t step, sf_err *e) {
    if (step <= STEPS) atomic_store_explicit(&lr_seen[step], a->lr, memory_order_relaxed);
    return sf_backend_cpu.apply(r, a, step, e);
}

static const float *xs, *ys;
static uint64_t taken[2];
static int next(void *arg, uint32_t r, sf_batch *b, sf_err *e) {
    (void)arg, (void)e;
    uint64_t k = taken[r]++;
    if (k >= STEPS) return 0;
    size_t at = (size_t)k * GLOBAL + r * (GLOBAL / 2);
    *b = (sf_batch){.x = (float *)xs + at * T * I, .y = (float *)ys + at * O, .count = GLOBAL / 2};
    return 1;
}
static void release(void *arg, uint32_t r, const sf_batch *b) { (void)arg, (void)r, (void)b; }

static void trainer(void) {
    sf_model m;
    sf_err e = {0};
    CHECK(sf_model_parse(&m, "lstm:4,dense", I, O, &e) == 0, "%s", e.msg);
    float *w = malloc(m.nparams * sizeof *w);
    float *x = malloc(sizeof(float) * STEPS * GLOBAL * T * I), *y = malloc(sizeof(float) * STEPS * GLOBAL * O);
    uint64_t s = 5;
    for (size_t k = 0; k < (size_t)STEPS * GLOBAL * T * I; k++) x[k] = (float)((sf_splitmix64(&s) >> 40) * 0x1p-23) - 1;
    for (size_t k = 0; k < (size_t)STEPS * GLOBAL * O; k++) y[k] = (float)((sf_splitmix64(&s) >> 40) * 0x1p-23) - 1;
    xs = x, ys = y;
    sf_model_init(&m, w, 7);
    sf_backend be = sf_backend_cpu;
    be.apply = record_apply;
    sf_lr_schedule cos = {.kind = SF_LR_COSINE, .warmup_steps = 3, .total_steps = 8, .lr_min = 1e-4};
    sf_trainer *t = NULL;
    int rc = sf_trainer_open(&t, &be, &m, &(sf_trainer_opts){.replicas = 2, .replica_batch = GLOBAL / 2, .window = T,
                             .adam = {1e-2f, 0.9f, 0.999f, 1e-7f}, .lr_schedule = cos}, &e);
    CHECK(rc == 0, "open: %s", e.msg);
    if (!rc) rc = sf_trainer_load(t, w, NULL, NULL, 0, &e);
    sf_batch_source src = {next, release, NULL};
    cos.lr = 1e-2f;  // the trainer's peak is Adam's lr
    // Two runs, plateau's multiplier set between them: the steps after take it.
    CHECK(!rc && sf_trainer_lr(t) == 0, "before the first step: lr %g, the warmup starts at 0", sf_trainer_lr(t));
    if (!rc) rc = sf_trainer_run(t, &src, 1, 5, NULL, NULL, &e);
    CHECK(rc == 0, "run: %s", e.msg);
    sf_trainer_set_lr_scale(t, 0.5);
    CHECK(sf_trainer_lr(t) == (float)(sf_lr_at(&cos, 5) * 0.5), "the next step's lr: %.9g", sf_trainer_lr(t));
    if (!rc) rc = sf_trainer_run(t, &src, 1, 0, NULL, NULL, &e);
    CHECK(rc == 0, "run: %s", e.msg);
    for (uint64_t k = 1; !rc && k <= STEPS; k++) {
        float want = (float)(sf_lr_at(&cos, k - 1) * (k > 5 ? 0.5 : 1));
        CHECK(lr_seen[k] == want, "update %llu took lr %.9g, its schedule's is %.9g", (unsigned long long)k,
              lr_seen[k], want);
    }
    CHECK(lr_seen[1] == 0 && lr_seen[4] == 1e-2f && lr_seen[STEPS] == (float)(1e-4 * 0.5),
          "warmup from 0, the peak after it, the floor at the end: %g %g %g", lr_seen[1], lr_seen[4], lr_seen[STEPS]);
    sf_trainer_close(t);
    free(w), free(x), free(y);
}

int main(int argc, char **argv) {
    CHECK(argc == 2, "usage: test_schedule lr_ref.txt");
    if (argc == 2) fixture(argv[1]);
    shapes();
    trainer();
    return TEST_EXIT();
}
