#!/usr/bin/env python3
"""The default model in Keras 3 on CPU: the peer of `seqfeed bench train`
that the users it is written for would otherwise train with.

3 x LSTM(180) each followed by Dropout(0.2), Dense(targets); MSE; Adam
(lr 1e-3, epsilon 1e-7, Keras' defaults); windows of --window steps x
--features features from random data held in RAM (the peer gets its batches
for free), trained with `train_on_batch` (a compiled step, as `fit` runs).
Times --steps training steps after --warmup (the first traces the step),
best of --reps, and prints one line per batch size: "batch B: S samples/s".
--precision bf16 sets Keras' "mixed_bfloat16" policy: bf16 computation,
float32 weights and Adam. The backend is Keras' own choice (KERAS_BACKEND:
tensorflow unless set); --threads sets its intra- and inter-op threads.

usage: keras_lstm.py [--batch 32,256] [--threads 2] [--window 60] [--features 3]
                     [--targets 3] [--steps 20] [--warmup 3] [--reps 3]
                     [--precision fp32|bf16]
"""
import os
import time

import train_peer


def main():
    ap = train_peer.parser()
    a = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras
    import numpy as np

    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(a.threads)
        tf.config.threading.set_inter_op_parallelism_threads(a.threads)
        lib = f"tensorflow {tf.__version__}"
    elif backend == "torch":
        import torch

        torch.set_num_threads(a.threads)
        lib = f"torch {torch.__version__}"
    else:
        lib = backend
    keras.mixed_precision.set_global_policy("mixed_bfloat16" if a.precision == "bf16" else "float32")
    keras.utils.set_random_seed(0)
    print(f"keras {keras.__version__} on {lib}, cpu, {a.threads} threads, {a.precision}")
    rng = np.random.default_rng(0)
    for b in (int(v) for v in a.batch.split(",")):
        best = 0.0
        for _ in range(a.reps):
            layers = [keras.Input((a.window, a.features))]
            for i in range(3):
                layers += [keras.layers.LSTM(180, return_sequences=i < 2), keras.layers.Dropout(0.2)]
            layers.append(keras.layers.Dense(a.targets, dtype="float32"))
            model = keras.Sequential(layers)
            model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-3, epsilon=1e-7), loss="mse")
            x = rng.standard_normal((b, a.window, a.features), dtype=np.float32)
            y = rng.standard_normal((b, a.targets), dtype=np.float32)
            for step in range(a.warmup + a.steps):
                if step == a.warmup:
                    t0 = time.perf_counter()
                model.train_on_batch(x, y)  # returns the loss: the step has ended
            best = max(best, b * a.steps / (time.perf_counter() - t0))
        train_peer.report(b, best)


if __name__ == "__main__":
    main()
