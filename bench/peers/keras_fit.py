#!/usr/bin/env python3
"""Keras 3 model.fit fed by seqfeed.Dataset against the tf.data input Keras
users write (keras.utils.timeseries_dataset_from_array over the same data),
side by side in one run, and the loaders alone.

For each input: the same model (LSTM(64), Dense) fits --steps steps after
--warmup steps; its step time is compared with the same fit on 32 batches
held in memory (no input at all), and the difference is the input wait per
step (medians of --rounds interleaved rounds). Then each loader alone serves
--steps batches: windows/s (and the
PyTorch DataLoader's, when torch is installed: bench/peers/torch_loader.py).
Prints a table, then one JSON object.

usage: keras_fit.py FILE.sfpack [--window 60] [--batch 256] [--steps 200] [--warmup 20] [--rounds 3]
Needs keras and tensorflow (PyPI), numpy, and seqfeed's Python package
(PYTHONPATH=python, SEQFEED_LIB=build/libseqfeed.so); not part of the tests.
"""
import argparse
import json
import os
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--window", type=int, default=60)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras
    import tensorflow as tf
    import seqfeed

    p = seqfeed.Pack(a.file)
    values = p.read()  # the Keras user's array: every row in memory
    mean = np.array([p.stats[c]["mean"] for c in p.columns], np.float32)
    std = np.array([p.stats[c]["std"] or 1 for c in p.columns], np.float32)
    values = (values - mean) / std
    F, T, B = len(p.columns), a.window, a.batch
    need = a.warmup + a.steps

    def seqfeed_input(epochs=1):
        return seqfeed.Dataset(a.file, window=T, batch_size=B, val_split=0, seed=1, epochs=epochs)

    def tf_input():
        # Windows never cross a series: one dataset per series, concatenated, as users do.
        parts = [keras.utils.timeseries_dataset_from_array(values[f:f + n - 1], values[f + T:f + n], T,
                                                           batch_size=B, shuffle=True, seed=1)
                 for _, f, n in p.series if n > T]
        ds = parts[0]
        for d in parts[1:]:
            ds = ds.concatenate(d)
        return ds.repeat().prefetch(tf.data.AUTOTUNE)

    def model():
        m = keras.Sequential([keras.Input((T, F)), keras.layers.LSTM(64), keras.layers.Dense(F)])
        m.compile("adam", "mse")
        return m

    def fit_time(make):
        m = model()
        data = make()
        # Keras takes tf.data whole, a generator as one (Keras 3.15 refuses other iterators).
        it = data if isinstance(data, tf.data.Dataset) else (batch for batch in data)
        m.fit(it, steps_per_epoch=a.warmup, epochs=1, verbose=0)
        t0 = time.perf_counter()
        m.fit(it, steps_per_epoch=a.steps, epochs=1, verbose=0)
        return (time.perf_counter() - t0) / a.steps

    def loader_rate(make):
        n, it = 0, iter(make())
        for _ in range(3):  # the pipeline's first fill and tf.data's shuffle setup are not its rate
            next(it)
        t0 = time.perf_counter()
        for _ in range(a.steps):
            x, _y = next(it)
            n += x.shape[0]
        return n / (time.perf_counter() - t0)

    # No input at all: 32 real batches already in memory, served over and over
    # (the model's compute depends on the data: one batch repeated runs faster).
    cached = [b for b, _ in zip(seqfeed_input(), range(32))]
    xs, ys = np.stack([x for x, _ in cached]), np.stack([y for _, y in cached])
    resident = lambda: tf.data.Dataset.from_tensor_slices((xs, ys)).repeat().prefetch(tf.data.AUTOTUNE)
    sf_make = lambda: iter(seqfeed_input(epochs=max(1, -(-need // max(1, seqfeed_input().batches_per_epoch)) + 1)))
    inputs = (("resident", resident), ("seqfeed.Dataset", sf_make), ("timeseries_dataset_from_array", tf_input))
    # Interleaved rounds, medians: this machine's timings drift from run to run.
    times = {name: [] for name, _ in inputs}
    for _ in range(a.rounds):
        for name, make in inputs:
            times[name].append(fit_time(make))
    t_res = float(np.median(times["resident"]))
    rows = {}
    for name, make in inputs[1:]:
        t = float(np.median(times[name]))
        rows[name] = {"step_ms": 1e3 * t, "input_wait_ms": 1e3 * max(0.0, t - t_res),
                      "input_share": max(0.0, t - t_res) / t,
                      "loader_windows_per_s": float(np.median([loader_rate(make) for _ in range(a.rounds)]))}
    try:
        import torch

        # The same windows from the same array, one gather per batch (bench/peers/torch_loader.py's way).
        starts = np.concatenate([np.arange(f, f + n - T) for _, f, n in p.series if n > T]).astype(np.int64)
        offsets = np.arange(T)

        class Windows(torch.utils.data.Dataset):
            def __len__(self):
                return len(starts)

            def __getitem__(self, batch):
                s = starts[np.asarray(batch)]
                return torch.from_numpy(values[s[:, None] + offsets]), torch.from_numpy(values[s + T])

        def torch_input():
            sampler = torch.utils.data.BatchSampler(torch.utils.data.RandomSampler(Windows()), B, drop_last=True)
            return torch.utils.data.DataLoader(Windows(), sampler=sampler, batch_size=None, num_workers=0)

        rows["torch DataLoader"] = {"loader_windows_per_s": float(np.median([loader_rate(torch_input)
                                                                              for _ in range(a.rounds)]))}
    except ImportError:
        pass
    print(f"Keras {keras.__version__} ({keras.backend.backend()}), TensorFlow {tf.__version__}; {p.rows} rows x {F}, "
          f"window {T}, batch {B}, {a.steps} steps after {a.warmup}")
    print(f"{'input':32} {'step ms':>9} {'input wait ms':>14} {'wait share':>11} {'loader windows/s':>17}")
    print(f"{'32 batches in memory (no input)':32} {1e3 * t_res:9.2f} {0:14.2f} {0:11.1%} {'':>17}")
    for name, r in rows.items():
        if "step_ms" in r:
            print(f"{name:32} {r['step_ms']:9.2f} {r['input_wait_ms']:14.2f} {r['input_share']:11.1%} "
                  f"{r['loader_windows_per_s']:17.0f}")
        else:
            print(f"{name + ' (loader only)':32} {'':>9} {'':>14} {'':>11} {r['loader_windows_per_s']:17.0f}")
    sf, tfd = rows["seqfeed.Dataset"], rows["timeseries_dataset_from_array"]
    ratio = {"loader": sf["loader_windows_per_s"] / tfd["loader_windows_per_s"],
             "step": tfd["step_ms"] / sf["step_ms"]}
    if "torch DataLoader" in rows:
        ratio["loader_vs_torch"] = sf["loader_windows_per_s"] / rows["torch DataLoader"]["loader_windows_per_s"]
    print(f"seqfeed.Dataset: {ratio['loader']:.1f}x the tf.data loader's windows/s; fit steps {ratio['step']:.2f}x faster")
    print(json.dumps({"resident_step_ms": 1e3 * t_res, "inputs": rows, "ratio": ratio}))


if __name__ == "__main__":
    main()
