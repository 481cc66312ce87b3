#!/usr/bin/env python3
"""Writes tests/ref/ref_loss_{mse,mae,huber,quantile}.safetensors, the
losses' references for tests/backend/test_ref.c.

One model with a multi-step head (--horizon 1-3 style: 3 steps of 2
targets, y a row of 6 values, step-major as seqfeed's pipeline gives it),
random float32 weights in Keras' layout, a batch x, y and, computed by
PyTorch in float64, the predictions, the loss, every gradient and 5 steps of
Keras' Adam (gen_lstm_ref.py's run), for each --loss:
  mse       torch.nn.functional.mse_loss (the mean over every step and
            target; also the multi-step MSE fixture)
  mae       torch.nn.functional.l1_loss
  huber     torch.nn.functional.huber_loss, delta 0.5 (so that both its
            square and its line are met; Keras' default 1.0 is the same
            formula)
  quantile  0.1, 0.5, 0.9: the last Dense has 3 x 3 x 2 units, reshaped to
            (steps, targets, quantiles) (quantile fastest, as seqfeed lays
            them out), and the pinball loss max(q e, (q - 1) e) of e = y -
            prediction, through torch.maximum, averaged over steps, targets
            and quantiles.
PyTorch's gradient at a kink (|e| = 0) is the mean of both sides', which
seqfeed takes too; random data puts no prediction there.

bf16 (docs/TRAINING.md): the loss and its gradient stay float32 in a bf16
run, so no bf16 fixture is written; test_ref.c runs the bf16 pass on the
quantile fixture against these float64 numbers with bf16's bounds.

usage: python3 tests/ref/gen_loss_ref.py [outdir]   (needs torch and numpy)
The fixtures are committed; CI does not run this script.
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_lstm_ref import STEPS, forward, problem, run, write_safetensors  # noqa: E402

SPEC, INPUTS, TARGETS, HORIZON_STEPS, BATCH, WINDOW, SEED = "lstm:8,dropout:0.2,lstm:6,dense", 3, 2, 3, 5, 7, 11
QUANTILES = (0.1, 0.5, 0.9)
DELTA = 0.5


def pinball(pred, y):
    """pred (B, steps x targets x quantiles), y (B, steps x targets)."""
    q = torch.tensor(QUANTILES, dtype=torch.float64)
    e = y.reshape(y.shape[0], HORIZON_STEPS, TARGETS, 1) - pred.reshape(y.shape[0], HORIZON_STEPS, TARGETS, len(q))
    return torch.maximum(q * e, (q - 1) * e).mean()


LOSSES = [
    # name, --loss text, outputs per value, loss
    ("mse", "mse", 1, lambda p, y: F.mse_loss(p, y)),
    ("mae", "mae", 1, lambda p, y: F.l1_loss(p, y)),
    ("huber", "huber:%g" % DELTA, 1, lambda p, y: F.huber_loss(p, y, delta=DELTA)),
    ("quantile", "quantile:" + ",".join("%g" % q for q in QUANTILES), len(QUANTILES), pinball),
]


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    values = HORIZON_STEPS * TARGETS
    for name, text, width, loss_fn in LOSSES:
        layers, w32, x, y, out = problem(SPEC, INPUTS, values * width, BATCH, WINDOW, SEED)
        # y: the values a row holds (its steps' targets), not the model's outputs
        y = np.random.default_rng(SEED + 1).standard_normal((BATCH, values)).astype(np.float32)
        out["y"] = y
        losses = run(lambda p, xt: forward(layers, p, xt), w32, x, y, out, loss_fn=loss_fn)
        meta = {"model": SPEC, "loss": text, "inputs": str(INPUTS), "outputs": str(values), "batch": str(BATCH),
                "window": str(WINDOW), "steps": str(STEPS), "horizon_steps": str(HORIZON_STEPS),
                "generator": "tests/ref/gen_loss_ref.py", "torch": torch.__version__}
        path = os.path.join(outdir, "ref_loss_%s.safetensors" % name)
        write_safetensors(path, out, meta)
        print(f"{path}: {text} {losses[0]:.6f} -> {losses[-1]:.6f}")


if __name__ == "__main__":
    main()
