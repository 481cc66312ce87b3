// The learning rate's schedules as Keras computes them: CosineDecay with
// its linear warmup (keras/src/optimizers/schedules/learning_rate_schedule.py)
// and ReduceLROnPlateau's rule (keras/src/callbacks/reduce_lr_on_plateau.py).
// Pure functions: the trainer calls sf_lr_at every step, the fit loop
// sf_plateau_update at every evaluation.
#include <math.h>
#include <string.h>

#include "train.h"

static const char *const kinds[] = {"constant", "cosine", "plateau"};

const char *sf_lr_kind_name(enum sf_lr_kind k) { return (unsigned)k < 3 ? kinds[k] : "?"; }

bool sf_lr_kind_parse(const char *name, enum sf_lr_kind *k) {
    for (int i = 0; i < 3; i++)
        if (!strcmp(name, kinds[i])) {
            *k = (enum sf_lr_kind)i;
            return true;
        }
    return false;
}

double sf_lr_at(const sf_lr_schedule *s, uint64_t step) {
    double lr = s->lr, warmup = (double)s->warmup_steps, x = (double)step;
    if (s->kind != SF_LR_COSINE) return x < warmup ? lr * (x / warmup) : lr;
    // Keras clips the step at the schedule's end: lr_min from there on.
    double decay = s->total_steps > s->warmup_steps ? (double)(s->total_steps - s->warmup_steps) : 0;
    if (x > warmup + decay) x = warmup + decay;
    if (x < warmup) return lr * (x / warmup);
    double alpha = lr > 0 ? s->lr_min / lr : 0;
    // No steps to decay over (Keras divides 0 by 0): the end at once.
    double done = decay > 0 ? (x - warmup) / decay : 1;
    double cosine = 0.5 * (1.0 + cos(M_PI * done));
    return lr * ((1.0 - alpha) * cosine + alpha);
}

bool sf_plateau_update(sf_plateau *p, const sf_lr_schedule *s, double min_delta, double val_loss) {
    // The first evaluation is the best so far whatever it is (Keras' best
    // starts as None); after it, less is false for a NaN. A NaN is never
    // the best (a diverged run's first evaluation): the checkpoint keeps none.
    if (!isnan(val_loss) && ((isinf(p->best) && p->best > 0) || val_loss < p->best - min_delta)) {
        p->best = val_loss, p->wait = 0;
        return false;
    }
    if (++p->wait < s->patience) return false;
    double lr = s->lr * p->scale;
    // Compared as Keras' float32 variable: at the floor nothing changes, and
    // wait goes on counting.
    if (!((float)lr > (float)s->lr_min)) return false;
    double next = lr * s->factor;
    p->scale = (next > s->lr_min ? next : s->lr_min) / s->lr;
    p->wait = 0;
    return true;
}
