#!/usr/bin/env python3
"""Writes tests/ref/ref_gru.safetensors, the GRU's reference for tests/backend/test_ref.c.

A model with GRUs (and an LSTM between them, as `gru:U` goes anywhere
`lstm:U` does), random float32 weights in Keras' layout, a batch x, y and,
in float64, the predictions, the MSE loss, every gradient and 5 steps of
Keras' Adam (gen_lstm_ref.py's run):
  - unprefixed: torch.nn.GRU itself, so that the GRU's definition is
    PyTorch's and not this script's;
  - "bf16/": seqfeed's bf16 definition (gen_bf16_ref.py's Matmul, every
    product's operands rounded), the GRU written out;
  - the written-out GRU without rounding is checked here against
    torch.nn.GRU before anything is written (and not written: it is the
    unprefixed reference).

Keras 3's GRU (reset_after=True) -> torch.nn.GRU: Keras' gates are z, r, h,
PyTorch's r, z, n; kernel (in, 3U) is weight_ih (3U, in) transposed with its
column blocks reordered, recurrent_kernel likewise weight_hh; bias (2, 3U)
is bias_ih (row 0) and bias_hh (row 1), reordered. Both compute
n = tanh(x W_n + b_in + r (h W_hn + b_hn)), h' = z h + (1 - z) n.

usage: python3 tests/ref/gen_gru_ref.py [outdir]   (needs torch and numpy)
The fixture is committed; CI does not run this script.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_bf16_ref import Matmul, lstm  # noqa: E402
from gen_lstm_ref import STEPS, run, write_safetensors  # noqa: E402
import gen_lstm_ref  # noqa: E402

NAME, SPEC, INPUTS, OUTPUTS, BATCH, WINDOW, SEED = "ref_gru", "gru:16,dropout:0.2,lstm:12,gru:10,dense:4,dense", 4, 2, 6, 9, 4


def parse(spec, inputs, outputs):
    """gen_lstm_ref.parse with gru as a recurrent layer."""
    layers, counts = [], {}
    for item in spec.split(","):
        kind, _, v = item.partition(":")
        n = counts.get(kind, 0)
        counts[kind] = n + 1
        layers.append((kind, kind if n == 0 else f"{kind}_{n}", float(v) if v else None))
    last = max(i for i, l in enumerate(layers) if l[0] in ("lstm", "gru"))
    out, width = [], inputs
    for i, (kind, name, v) in enumerate(layers):
        units = int(v) if kind in ("lstm", "gru") or (kind == "dense" and v) else (outputs if kind == "dense" else width)
        out.append(dict(kind=kind, name=name, inp=width, units=units, seq=(kind in ("lstm", "gru") and i != last)))
        width = units
    return out


def weights(layers, rng):
    w = gen_lstm_ref.weights([l for l in layers if l["kind"] != "gru"], rng)
    for l in layers:
        if l["kind"] == "gru":
            g = 3 * l["units"]
            w[l["name"] + "/kernel"] = rng.uniform(-0.4, 0.4, (l["inp"], g)).astype(np.float32)
            w[l["name"] + "/recurrent_kernel"] = rng.uniform(-0.4, 0.4, (l["units"], g)).astype(np.float32)
            w[l["name"] + "/bias"] = rng.uniform(-0.2, 0.2, (2, g)).astype(np.float32)
    return w


def zrh_to_rzn(a, U):
    """Keras' gate blocks z, r, h along the last axis -> PyTorch's r, z, n."""
    return torch.cat([a[..., U:2 * U], a[..., :U], a[..., 2 * U:]], dim=-1)


def gru_torch(x, W, Ur, b):
    U = Ur.shape[0]
    gru = torch.nn.GRU(W.shape[0], U, batch_first=True, dtype=torch.float64)
    out, _ = torch.func.functional_call(gru, {
        "weight_ih_l0": zrh_to_rzn(W, U).T, "weight_hh_l0": zrh_to_rzn(Ur, U).T,
        "bias_ih_l0": zrh_to_rzn(b[0], U), "bias_hh_l0": zrh_to_rzn(b[1], U)}, (x,))
    return out


def gru_written(x, W, Ur, b, mm):
    """Keras' GRU step by step, its products through mm."""
    B, T, _ = x.shape
    U = Ur.shape[0]
    proj = mm(x.reshape(B * T, -1), W).reshape(B, T, 3 * U) + b[0]
    h, out = None, []
    for t in range(T):
        xz = proj[:, t]
        rec = b[1].expand(B, 3 * U) if t == 0 else mm(h, Ur) + b[1]
        z = torch.sigmoid(xz[:, :U] + rec[:, :U])
        r = torch.sigmoid(xz[:, U:2 * U] + rec[:, U:2 * U])
        hh = torch.tanh(xz[:, 2 * U:] + r * rec[:, 2 * U:])
        h = (1 - z) * hh if t == 0 else z * h + (1 - z) * hh
        out.append(h)
    return torch.stack(out, dim=1)


def forward(layers, p, x, mm):
    """mm None: torch.nn.LSTM/GRU (gen_lstm_ref); else written out with mm."""
    h = x
    for l in layers:
        n = l["name"]
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


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    rng = np.random.default_rng(SEED)
    layers = parse(SPEC, INPUTS, OUTPUTS)
    w32 = weights(layers, rng)
    x = rng.standard_normal((BATCH, WINDOW, INPUTS)).astype(np.float32)
    y = rng.standard_normal((BATCH, OUTPUTS)).astype(np.float32)
    out = {"x": x, "y": y}
    out.update(w32)
    losses = run(lambda p, xt: forward(layers, p, xt, None), w32, x, y, out)
    run(lambda p, xt: forward(layers, p, xt, lambda a, b: a @ b), w32, x, y, out, "fp64/")
    for k in [k for k in out if k.startswith("fp64/")]:  # checked, then left out: the same as unprefixed
        ref = out[k[len("fp64/"):]]
        assert np.allclose(out.pop(k), ref, rtol=1e-10, atol=1e-12), f"written-out GRU differs from torch.nn.GRU: {k}"
    bf = run(lambda p, xt: forward(layers, p, xt, Matmul.apply), w32, x, y, out, "bf16/")
    meta = {"model": SPEC, "inputs": str(INPUTS), "outputs": str(OUTPUTS), "batch": str(BATCH), "window": str(WINDOW),
            "steps": str(STEPS), "generator": "tests/ref/gen_gru_ref.py", "torch": torch.__version__}
    path = os.path.join(outdir, NAME + ".safetensors")
    write_safetensors(path, out, meta)
    print(f"{path}: loss {losses[0]:.6f} -> {losses[-1]:.6f}; bf16 {bf[0]:.6f} -> {bf[-1]:.6f}")


if __name__ == "__main__":
    main()
