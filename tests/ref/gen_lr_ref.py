#!/usr/bin/env python3
# Writes tests/train/lr_ref.txt: learning rates as Keras 3 computes them,
# for tests/train/test_schedule.c to compare sf_lr_at and sf_plateau_update
# with. With keras importable (any backend: KERAS_BACKEND=jax works), from
# keras.optimizers.schedules.CosineDecay and keras.callbacks.ReduceLROnPlateau
# on a compiled model's Adam; else from a transcription of their Keras 3
# source, and the fixture's first line says which.
#
#   S NAME LR WARMUP TOTAL LR_MIN    a schedule: KIND in NAME's first word
#   L STEP LR                        its lr after STEP updates
#   P NAME LR FACTOR PATIENCE MIN_DELTA LR_MIN    a plateau
#   V VAL_LOSS LR                    an evaluation, then the optimizer's lr
#
# Run from the source root: python3 tests/ref/gen_lr_ref.py
import math

try:
    import keras
except ImportError:
    keras = None

SCHEDULES = [  # name (kind first), lr, warmup, total, lr_min
    ("constant-warmup", 1e-3, 7, 0, 0.0),
    ("constant-warmup-long", 0.02, 100, 0, 0.0),
    ("cosine", 1e-3, 0, 50, 0.0),
    ("cosine-floor", 1e-3, 0, 37, 1e-5),
    ("cosine-warmup", 2e-3, 10, 60, 1e-4),
    ("cosine-warmup-one", 5e-4, 1, 3, 0.0),
]

PLATEAUS = [  # name, lr, factor, patience, min_delta, lr_min, val_losses
    ("stall", 1e-3, 0.1, 1, 0.0, 0.0, [1.0, 0.5, 0.6, 0.4, 0.4, 0.41, 0.3, 0.35, 0.36, 0.37]),
    ("patience", 1e-2, 0.5, 3, 0.0, 0.0, [0.9, 0.8, 0.85, 0.81, 0.82, 0.79, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.7]),
    ("min-delta", 1e-3, 0.2, 2, 0.05, 0.0, [1.0, 0.97, 0.96, 0.9, 0.89, 0.88, 0.8, 0.79, 0.78, 0.77]),
    ("floor", 1e-3, 0.1, 1, 0.0, 2e-5, [1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 0.5, 0.6, 0.7]),
    ("nan", 1e-3, 0.5, 2, 0.0, 0.0, [0.5, float("nan"), float("nan"), 0.4, float("nan"), 0.45, 0.3]),
]


def keras_schedule(lr, warmup, total, lr_min):
    # constant with a warmup is CosineDecay with alpha 1: the decay keeps lr
    alpha = 1.0 if total == 0 else lr_min / lr
    decay = max(total - warmup, 1) if total else 1
    if warmup:
        return keras.optimizers.schedules.CosineDecay(0.0, decay, alpha=alpha, warmup_target=lr, warmup_steps=warmup)
    return keras.optimizers.schedules.CosineDecay(lr, decay, alpha=alpha)


def transcribed(lr, warmup, total, lr_min):
    # keras/src/optimizers/schedules/learning_rate_schedule.py, CosineDecay.__call__
    alpha = 1.0 if total == 0 else lr_min / lr
    decay = max(total - warmup, 1) if total else 1

    def at(step):
        if not warmup:
            s = min(step, decay)
            return lr * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * s / decay)) + alpha)
        s = min(step, decay + warmup)
        if s < warmup:
            return (lr - 0.0) * (s / warmup) + 0.0
        return lr * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * (s - warmup) / decay)) + alpha)

    return at


def keras_plateau(lr, factor, patience, min_delta, lr_min, losses):
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(lr), loss="mse")
    cb = keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=factor, patience=patience, min_delta=min_delta,
                                           min_lr=lr_min, mode="min")
    cb.set_model(model)
    cb.on_train_begin()
    out = []
    for epoch, v in enumerate(losses):
        cb.on_epoch_end(epoch, {"val_loss": v})
        out.append(float(keras.ops.convert_to_numpy(model.optimizer.learning_rate)))
    return out


def transcribed_plateau(lr, factor, patience, min_delta, lr_min, losses):
    # keras/src/callbacks/reduce_lr_on_plateau.py, on_epoch_end, cooldown 0;
    # the optimizer keeps its lr in float32
    import struct
    f32 = lambda x: struct.unpack("f", struct.pack("f", x))[0]
    best, wait, cur, out = None, 0, f32(lr), []
    for v in losses:
        if best is None or v + min_delta < best:
            best, wait = v, 0
        else:
            wait += 1
            if wait >= patience and cur > f32(lr_min):
                cur, wait = f32(max(cur * factor, lr_min)), 0
        out.append(cur)
    return out


with open("tests/train/lr_ref.txt", "w") as f:
    f.write("# from %s\n" % ("keras %s (%s backend)" % (keras.__version__, keras.backend.backend()) if keras
                             else "a transcription of Keras 3's source (keras was not importable)"))
    for name, lr, warmup, total, lr_min in SCHEDULES:
        f.write("S %s %.17g %d %d %.17g\n" % (name, lr, warmup, total, lr_min))
        at = keras_schedule(lr, warmup, total, lr_min) if keras else transcribed(lr, warmup, total, lr_min)
        for step in range(max(total, warmup) + 5):
            f.write("L %d %.9g\n" % (step, float(at(step))))
    for name, lr, factor, patience, min_delta, lr_min, losses in PLATEAUS:
        f.write("P %s %.17g %.17g %d %.17g %.17g\n" % (name, lr, factor, patience, min_delta, lr_min))
        lrs = (keras_plateau if keras else transcribed_plateau)(lr, factor, patience, min_delta, lr_min, losses)
        for v, l in zip(losses, lrs):
            f.write("V %.17g %.9g\n" % (v, l))
