#!/usr/bin/env python3
"""One tool of bench/pipeline_peers.sh, in a process of its own (a tool's
imports, threads and worker processes never meet another's).

Every tool serves the same windows of the same rows: window i is
x = rows[i : i + T] (T rows, every column) and y = row i + T (horizon 1),
shuffled, in batches of B. seqfeed reads them from the .sfpack through
`seqfeed.Dataset` (scaled by the pipeline, z-score of the file's
statistics, val_split=0: every row); the peers read the .npy beside it,
which holds the same rows already scaled the same way (the Dataset's
scaler applied to `Pack.read()`, bit for bit what the Dataset serves: the
check says so), so a peer does no scaling work:

- tf: `tf.keras.utils.timeseries_dataset_from_array(rows[:-1], rows[T:], T,
  batch_size=B, shuffle=True, seed=S).prefetch(tf.data.AUTOTUNE)`, the rows
  in memory (np.load);
- torch: `DataLoader(Windows(...), batch_size=B, shuffle=True,
  num_workers=2, pin_memory=False)`, a map-style Dataset whose __getitem__
  slices one window from the rows (a copy-on-write mapping of the .npy,
  shared by the worker processes) as tensors, default_collate stacking them;
- grain: `MapDataset.source(Windows(...)).shuffle(seed=S).batch(B)
  .to_iter_dataset().mp_prefetch(MultiprocessingOptions(num_workers=2))`,
  the same source returning numpy arrays.

Modes:
  time:  for each data set, from its name to the first batch (imports left
         out), then per step (none, then each --paces ms) --warmup batches
         at that pace left out (before the unpaced run, also at least
         --settle seconds: worker processes still starting, Grain's spawned
         ones, are not the steady state) and up to --steps timed batches
         (or --cap seconds): the wait in next() of each, the emulated step
         a sleep until that long after next() returned (the cores free, as
         a GPU's step leaves them; step_took_ms, the mean time outside
         next(), says how long the sleeps took, longer on a loaded machine).
         One JSON line per data set on stdout.
  check: one epoch of each data set (no pacing), every window hashed
         (window_hashes); the hashes of each data set saved as .npy under
         --out, one JSON line per data set (windows, batch shapes).
Exit status 3 when the tool cannot be imported (a line on stderr says why).

usage: pipe_tools.py TOOL time|check --data SFPACK:NPY:T ... [--batch B] [--seed S] [--paces 2,1]
       [--steps N] [--warmup N] [--settle S] [--cap S] [--out DIR]
Run by bench/peers/pipe_peers.py; not part of the tests.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def window_hashes(x, y):
    """A 64-bit hash of each window (x[i], y[i]) of a batch, from the
    float32 bits: sum of each value's bits times a fixed random odd
    multiplier (mod 2^64), x's and y's sums mixed."""
    x = np.ascontiguousarray(np.asarray(x), np.float32)
    y = np.ascontiguousarray(np.asarray(y), np.float32)
    b = x.shape[0]
    u, w = x.reshape(b, -1).view(np.uint32), y.reshape(b, -1).view(np.uint32)
    rng = np.random.default_rng(12345)
    mult = rng.integers(1, 2**63, u.shape[1] + w.shape[1], dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    hx = (u.astype(np.uint64) * mult[:u.shape[1]]).sum(axis=1, dtype=np.uint64)
    hy = (w.astype(np.uint64) * mult[u.shape[1]:]).sum(axis=1, dtype=np.uint64)
    return hx ^ (hy * np.uint64(0x9E3779B97F4A7C15))


class Windows:
    """Window i of a .npy of rows: (rows[i : i + T], rows[i + T]). The file
    is mapped copy-on-write on first use in whichever process reads it, so
    the DataLoader's and Grain's workers share the page cache and pickling
    the source costs nothing."""

    def __init__(self, path, T):
        self.path, self.T = path, T
        self.n = np.load(path, mmap_mode="r").shape[0] - T
        self.rows = None

    def __len__(self):
        return self.n

    def __getstate__(self):
        return {"path": self.path, "T": self.T, "n": self.n, "rows": None}

    def __getitem__(self, i):
        if self.rows is None:
            self.rows = np.load(self.path, mmap_mode="c")
        return self.rows[i:i + self.T], self.rows[i + self.T]


def tool_module(tool):
    """The tool's package and its version (ImportError when missing)."""
    if tool == "seqfeed":
        import seqfeed
        return seqfeed, "seqfeed (this tree)"
    if tool == "tf":
        import tensorflow as tf
        return tf, "tensorflow %s, keras %s" % (tf.__version__, tf.keras.__version__)
    if tool == "torch":
        import torch
        return torch, "torch %s" % torch.__version__
    if tool == "grain":
        import logging
        logging.getLogger("absl").setLevel(logging.ERROR)  # "Failed to load jax profiler": no JAX wanted
        import grain
        from importlib.metadata import version
        return grain, "grain %s" % version("grain")
    raise SystemExit("pipe_tools.py: unknown tool %r (seqfeed, tf, torch, grain)" % tool)


def batches(tool, mod, sfpack, npy, T, B, seed, epochs):
    """An iterator of (x, y) batches over `epochs` epochs (None: no end)."""
    if tool == "seqfeed":
        ds = mod.Dataset(sfpack, window=T, batch_size=B, val_split=0, shuffle=True, seed=seed,
                         epochs=epochs or 2**40)
        return iter(ds)
    if tool == "tf":
        rows = np.load(npy)
        ds = mod.keras.utils.timeseries_dataset_from_array(rows[:-1], rows[T:], T, batch_size=B, shuffle=True,
                                                           seed=seed).prefetch(mod.data.AUTOTUNE)
        make = lambda: iter(ds)
    elif tool == "torch":
        torch = mod

        class TorchWindows(Windows, torch.utils.data.Dataset):
            def __getitem__(self, i):
                x, y = Windows.__getitem__(self, i)
                return torch.from_numpy(x), torch.from_numpy(y)

        g = torch.Generator()
        g.manual_seed(seed)
        loader = torch.utils.data.DataLoader(TorchWindows(npy, T), batch_size=B, shuffle=True, num_workers=2,
                                             pin_memory=False, generator=g)
        make = lambda: iter(loader)
    else:
        ds = (mod.MapDataset.source(Windows(npy, T)).shuffle(seed=seed).batch(B).to_iter_dataset()
              .mp_prefetch(mod.MultiprocessingOptions(num_workers=2)))
        make = lambda: iter(ds)

    def run():
        e = 0
        while epochs is None or e < epochs:
            yield from make()
            e += 1
    return run()


def pace(step, t):
    """Sleeps until `step` seconds after t."""
    end = t + step
    while True:
        left = end - time.perf_counter()
        if left <= 0:
            return
        time.sleep(left)


def timed(it, step, n, warmup, cap, settle=0.0):
    t = time.perf_counter()
    k = 0
    while k < warmup or time.perf_counter() - t < settle:
        next(it)
        pace(step, time.perf_counter())
        k += 1
    waits, windows = [], 0
    start = time.perf_counter()
    while len(waits) < n:
        t0 = time.perf_counter()
        x, _y = next(it)
        t1 = time.perf_counter()
        waits.append(t1 - t0)
        windows += int(x.shape[0])
        pace(step, t1)
        if t1 - start > cap:
            break
    wall = time.perf_counter() - start
    w = np.array(waits)
    return {"step_ms": step * 1e3, "steps": len(waits), "windows": windows, "wall_s": wall,
            "windows_per_s": windows / wall, "stall_pct": 100 * w.sum() / wall,
            "wait_p50_ms": 1e3 * float(np.percentile(w, 50)), "wait_p99_ms": 1e3 * float(np.percentile(w, 99)),
            "step_took_ms": 1e3 * (wall - w.sum()) / len(waits)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tool")
    ap.add_argument("mode", choices=("time", "check"))
    ap.add_argument("--data", action="append", required=True, help="SFPACK:NPY:WINDOW, once per data set")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--paces", default="2,1", help="emulated steps in ms, after the unpaced run")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--settle", type=float, default=1.5, help="seconds at least of the unpaced run's warm-up")
    ap.add_argument("--cap", type=float, default=2.5, help="seconds at most per timed run")
    ap.add_argument("--out", help="check: the folder for the hashes")
    a = ap.parse_args()
    try:
        mod, version = tool_module(a.tool)
    except ImportError as e:
        print("pipe_tools.py: %s: cannot import (%s)" % (a.tool, e), file=sys.stderr)
        sys.exit(3)
    for k, spec in enumerate(a.data):
        sfpack, npy, T = spec.rsplit(":", 2)
        T = int(T)
        res = {"tool": a.tool, "version": version, "data": k}
        if a.mode == "check":
            hashes, shapes, n = [], set(), 0
            for x, y in batches(a.tool, mod, sfpack, npy, T, a.batch, a.seed, 1):
                shapes.add((tuple(int(d) for d in x.shape), tuple(int(d) for d in y.shape),
                            str(np.asarray(x).dtype), str(np.asarray(y).dtype)))
                hashes.append(window_hashes(x, y))
                n += 1
            h = np.concatenate(hashes)
            np.save(os.path.join(a.out, "%s-%d.npy" % (a.tool, k)), h)
            res.update(batches=n, windows=int(h.size), shapes=sorted(shapes))
        else:
            t = time.perf_counter()
            it = batches(a.tool, mod, sfpack, npy, T, a.batch, a.seed, None)
            next(it)
            res["first_batch_s"] = time.perf_counter() - t
            res["runs"] = [timed(it, ms / 1e3, a.steps, a.warmup, a.cap, a.settle if i == 0 else 0.0)
                           for i, ms in enumerate([0.0] + [float(p) for p in a.paces.split(",") if p])]
            it.close()
        print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
