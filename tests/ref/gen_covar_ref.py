#!/usr/bin/env python3
"""Writes tests/ref/ref_covar.safetensors and ref_embed.safetensors, the covariates' references for tests/backend/test_ref.c.

A model with covariates: --future-features' values at every target step
and --series-features onehot's series inputs, concatenated with the last
recurrent layer's output (after its dropout) before the first Dense, as
Keras' functional model has it:

    rows (B, T, C) -> LSTM -> Dropout -> GRU ─┐
    future (B, 3, 2), series (B, 3) ───────────┴> Concatenate -> Dense -> Dense

x is (B, T x C + A) per window, the rows then the extra (A = 3 steps x 2
future inputs + 3 series one-hot), as seqfeed's batches hold them
(pipeline.h, sf_window_x_len). ref_embed: the same with --series-features
embedding:4, the series' row of a (3, 4) table (Keras' Embedding, here
torch.nn.functional.embedding of the one-hot's index) in the one-hot's
place; "embedding/embeddings" is one more weight, with its gradient and
Adam steps. Its lookup is exact in bf16 too: the head rounds its input. The first Dense's kernel
is (U + A, units): the recurrent output's rows, then the extra's. Random
float32 weights in Keras' layout, and in float64 the predictions, MSE loss,
every gradient and 5 steps of Keras' Adam (gen_lstm_ref.py's run):
  - unprefixed: torch.nn.LSTM and torch.nn.GRU and torch.cat;
  - "bf16/": seqfeed's bf16 definition (gen_bf16_ref.py's Matmul), the
    head's concatenated input rounded as any product's operand.

usage: python3 tests/ref/gen_covar_ref.py [outdir]   (needs torch and numpy)
The fixture is committed; CI does not run this script.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_bf16_ref import Matmul, lstm  # noqa: E402
from gen_gru_ref import gru_torch, gru_written, parse, weights  # noqa: E402
from gen_lstm_ref import STEPS, run, write_safetensors  # noqa: E402
import gen_lstm_ref  # noqa: E402

# 3 steps ahead of 2 targets (the last Dense's 6 units), 2 future inputs a
# step and 3 series: 9 extra values per window.
NAME, SPEC, INPUTS, OUTPUTS, BATCH, WINDOW, FUTURE, SERIES, SEED = \
    "ref_covar", "lstm:12,dropout:0.2,gru:10,dense:8,dense", 3, 6, 5, 7, 6, 3, 5
EXTRA = FUTURE + SERIES
EMBED = 4


def forward(layers, head, p, x, mm, embed):
    """mm None: torch's layers; else the recurrent layers written out and
    every product through mm. embed: the one-hot through the embedding."""
    B = x.shape[0]
    h = x[:, :WINDOW * INPUTS].reshape(B, WINDOW, INPUTS)
    extra = x[:, WINDOW * INPUTS:]
    if embed:
        index = extra[:, FUTURE:].argmax(dim=1)
        extra = torch.cat([extra[:, :FUTURE], torch.nn.functional.embedding(index, p["embedding/embeddings"])], dim=1)
    for i, l in enumerate(layers):
        n = l["name"]
        if i == head:
            h = torch.cat([h, extra], dim=1)
        if l["kind"] in ("lstm", "gru"):
            args = (p[n + "/kernel"], p[n + "/recurrent_kernel"], p[n + "/bias"])
            if mm is None and l["kind"] == "lstm":
                out = gen_lstm_ref.forward([dict(l, seq=True)], p, h)
            elif mm is None:
                out = gru_torch(h, *args)
            else:
                out = lstm(h, *args, mm) if l["kind"] == "lstm" else gru_written(h, *args, mm)
            h = out if l["seq"] else out[:, -1, :]
        elif l["kind"] == "dense":
            h = (h @ p[n + "/kernel"] if mm is None else mm(h, p[n + "/kernel"])) + p[n + "/bias"]
    return h


def make(name, embed, outdir):
    rng = np.random.default_rng(SEED)
    layers = parse(SPEC, INPUTS, OUTPUTS)
    last = max(i for i, l in enumerate(layers) if l["kind"] in ("lstm", "gru"))
    head = next(i for i, l in enumerate(layers) if i > last and l["kind"] == "dense")
    layers[head]["inp"] += FUTURE + (EMBED if embed else SERIES)
    w32 = weights(layers, rng)
    if embed:
        w32["embedding/embeddings"] = rng.uniform(-0.5, 0.5, (SERIES, EMBED)).astype(np.float32)
    x = rng.standard_normal((BATCH, WINDOW * INPUTS + EXTRA)).astype(np.float32)
    x[:, -SERIES:] = np.eye(SERIES, dtype=np.float32)[rng.integers(0, SERIES, BATCH)]  # each window's series
    y = rng.standard_normal((BATCH, OUTPUTS)).astype(np.float32)
    out = {"x": x, "y": y}
    out.update(w32)
    losses = run(lambda p, xt: forward(layers, head, p, xt, None, embed), w32, x, y, out)
    # The extra is read: moving it moves the predictions.
    with torch.no_grad():
        p = {k: torch.tensor(v, dtype=torch.float64) for k, v in w32.items()}
        xt = torch.tensor(x, dtype=torch.float64)
        moved = xt.clone()
        moved[:, WINDOW * INPUTS:WINDOW * INPUTS + FUTURE] += 1
        moved[:, -SERIES:] = moved[:, -SERIES:].roll(1, dims=1)
        assert not torch.allclose(forward(layers, head, p, xt, None, embed), forward(layers, head, p, moved, None, embed))
    bf = run(lambda p, xt: forward(layers, head, p, xt, Matmul.apply, embed), w32, x, y, out, "bf16/")
    meta = {"model": SPEC, "inputs": str(INPUTS), "outputs": str(OUTPUTS), "batch": str(BATCH), "window": str(WINDOW),
            "extra": str(EXTRA), "steps": str(STEPS), "generator": "tests/ref/gen_covar_ref.py",
            "torch": torch.__version__}
    if embed:
        meta.update({"embed_series": str(SERIES), "embed": str(EMBED)})
    path = os.path.join(outdir, name + ".safetensors")
    write_safetensors(path, out, meta)
    print(f"{path}: loss {losses[0]:.6f} -> {losses[-1]:.6f}; bf16 {bf[0]:.6f} -> {bf[-1]:.6f}")


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    make(NAME, False, outdir)
    make("ref_embed", True, outdir)


if __name__ == "__main__":
    main()
