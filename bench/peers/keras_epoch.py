#!/usr/bin/env python3
"""Keras 3 model.fit(ds, validation_data=val) fed by seqfeed.Dataset
directly (a keras.utils.PyDataset) against the input Keras users write,
keras.utils.timeseries_dataset_from_array over the same rows: the same
model, the same scaled inputs (the Dataset's scaler applied to the array),
the same training and validation windows (each series' first 1 - val_split
of rows for training, windows whose target is in its last val_split for
validation), time per epoch with validation, in interleaved rounds.

Each round fits a fresh model (same seed) for --epochs epochs per input,
the inputs taking turns; an epoch's time runs from on_epoch_begin to
on_epoch_end (training and validation), in wall seconds and in this
process's CPU seconds (every thread's: on a shared machine the wall time
is mostly other people's load); the first epoch of each fit (the model's
build, the first fill) is left out. Prints a table: each input's median
and least epoch time, and the ratios. PyTorch runs on one thread
(torch.set_num_threads(1)); timeseries_dataset_from_array needs TensorFlow
(tf.data) on every backend.

usage: KERAS_BACKEND=torch keras_epoch.py FILE.sfpack [--window 32] [--batch 128] [--units 32] [--epochs 3]
       [--rounds 3] [--val-split 0.1]
Needs keras, tensorflow, numpy (and torch for that backend) and seqfeed's
Python package (PYTHONPATH=python, SEQFEED_LIB=build/libseqfeed.so); not
part of the tests.
"""
import argparse
import json
import os
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--window", type=int, default=32)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--units", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--val-split", type=float, default=0.1)
    a = ap.parse_args()
    os.environ.setdefault("KERAS_BACKEND", "torch")
    import keras  # before the Datasets: they are PyDatasets then
    import tensorflow as tf
    import seqfeed

    if keras.backend.backend() == "torch":
        import torch
        torch.set_num_threads(1)
    T, B = a.window, a.batch
    kw = dict(window=T, batch_size=B, val_split=a.val_split, seed=1)
    probe = seqfeed.Dataset(a.file, **kw)
    sc, F, O = probe.scaler, probe.inputs, probe.targets
    p = seqfeed.Pack(a.file)
    if p.categories or any(n.endswith(("_sin", "_cos")) for n in sc.inputs):
        raise SystemExit("%s: a file of numeric columns only (the array side scales columns as they are)" % a.file)
    cols = [p.columns.index(n) for n in sc.inputs]
    tcols = [sc.inputs.index(n) for n in sc.targets]
    values = p.read()[:, cols] * sc.input_scale + sc.input_offset  # the Dataset's inputs, as float32
    targets = values[:, tcols]  # the same scaling for the targets (z-score of the same statistics)
    assert np.allclose(sc.input_scale[tcols], sc.target_scale) and np.allclose(sc.input_offset[tcols], sc.target_offset)

    def tf_inputs():
        # Per series, as users do: training windows inside its first rows, validation windows whose target
        # is in its last val_split (their inputs may reach back), concatenated; shuffled like fit's arrays.
        train, val = [], []
        for _, f, n in p.series:
            cut = f + n - int(n * a.val_split)
            if cut - f > T:
                train.append(keras.utils.timeseries_dataset_from_array(values[f:cut - 1], targets[f + T:cut], T,
                                                                       batch_size=B, shuffle=True, seed=1))
            lo = max(f, cut - T)
            if f + n - lo > T:
                val.append(keras.utils.timeseries_dataset_from_array(values[lo:f + n - 1], targets[lo + T:f + n], T,
                                                                     batch_size=B))
        join = lambda parts: parts[0] if len(parts) == 1 else parts[0].concatenate(join(parts[1:]))
        return join(train).prefetch(tf.data.AUTOTUNE), join(val).prefetch(tf.data.AUTOTUNE)

    def seqfeed_inputs():
        return seqfeed.Dataset(a.file, **kw), seqfeed.Dataset(a.file, split="validation", **kw)

    class Clock(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.times, self.cpu = [], []

        def on_epoch_begin(self, epoch, logs=None):
            self.t0, self.c0 = time.perf_counter(), time.process_time()

        def on_epoch_end(self, epoch, logs=None):
            self.times.append(time.perf_counter() - self.t0)
            self.cpu.append(time.process_time() - self.c0)

    def fit(make):
        keras.utils.set_random_seed(1)
        m = keras.Sequential([keras.Input((T, F)), keras.layers.LSTM(a.units), keras.layers.Dense(O)])
        m.compile("adam", "mse")
        train, val = make()
        clock = Clock()
        h = m.fit(train, validation_data=val, epochs=a.epochs, verbose=0, callbacks=[clock])
        return clock.times[1:], clock.cpu[1:], h.history["val_loss"][-1]

    inputs = (("seqfeed.Dataset (PyDataset)", seqfeed_inputs), ("timeseries_dataset_from_array", tf_inputs))
    times, cpu, losses = ({n: [] for n, _ in inputs} for _ in range(3))
    for r in range(a.rounds):  # interleaved: this machine's speed drifts
        for name, make in (inputs if r % 2 == 0 else inputs[::-1]):
            t, c, vl = fit(make)
            times[name] += t
            cpu[name] += c
            losses[name].append(vl)
    tw = sum(1 for _ in tf_inputs()[0].unbatch())
    windows = {inputs[0][0]: probe.batches_per_epoch * B, inputs[1][0]: tw}
    print(f"Keras {keras.__version__} ({keras.backend.backend()}); {p.rows} rows x {F} columns, {len(p.series)} "
          f"series; window {T}, batch {B}, LSTM({a.units}); {a.rounds} rounds x {a.epochs - 1} timed epochs each")
    print(f"{'input':32} {'windows/epoch':>13} {'epoch s median':>15} {'least':>7} {'CPU s median':>13} "
          f"{'least':>7} {'val_loss':>9}")
    med, least, cmed, cleast = {}, {}, {}, {}
    for name, _ in inputs:
        med[name], least[name] = float(np.median(times[name])), min(times[name])
        cmed[name], cleast[name] = float(np.median(cpu[name])), min(cpu[name])
        print(f"{name:32} {windows[name]:13d} {med[name]:15.3f} {least[name]:7.3f} {cmed[name]:13.3f} "
              f"{cleast[name]:7.3f} {np.median(losses[name]):9.4f}")
    sf, ts = (n for n, _ in inputs)
    ratio = {k: d[ts] / d[sf] for k, d in (("wall_median", med), ("wall_least", least), ("cpu_median", cmed),
                                           ("cpu_least", cleast))}
    print("timeseries_dataset_from_array's epoch time over seqfeed.Dataset's: " +
          ", ".join(f"{k.replace('_', ' ')} {v:.2f}x" for k, v in ratio.items()))
    print(json.dumps({"backend": keras.backend.backend(), "wall": times, "cpu": cpu, "windows": windows,
                      "ratio": ratio}))


if __name__ == "__main__":
    main()
