#!/usr/bin/env python3
"""Writes the reference fixtures of tests/model/test_ref.c with PyTorch.

For each model below: random float32 weights in Keras' layout, a batch x, y,
and, computed by PyTorch in float64 (so that the reference's own rounding is
negligible next to seqfeed's float32): the predictions, Keras' MSE loss, its
gradient for every weight, and the losses and weights of 5 Adam steps with
Keras' update rule (written out below; torch.optim.Adam puts epsilon
elsewhere). Dropout layers are in the models but off (inference), as Keras
runs them outside training.

Keras -> PyTorch: LSTM kernel (in, 4U) is weight_ih (4U, in) transposed,
recurrent_kernel is weight_hh transposed, the one bias is bias_ih with
bias_hh held at zero; gate order i, f, c(g), o in both. Dense kernel (in, out)
is Linear.weight transposed.

usage: python3 tests/ref/gen_lstm_ref.py [outdir]   (needs torch and numpy)
The fixtures are committed; CI does not run this script.
"""
import json
import os
import struct
import sys

import numpy as np
import torch

MODELS = [
    # name, spec, inputs, outputs, batch, window, seed
    ("ref_small", "lstm:8,dropout:0.2,lstm:5,dense:3,dense", 3, 2, 4, 6, 1),
    ("ref_deep", "lstm:32,dropout:0.2,lstm:24,dropout:0.2,lstm:16,dense", 5, 3, 8, 20, 2),
]
LR, B1, B2, EPS, STEPS = 1e-3, 0.9, 0.999, 1e-7, 5


def parse(spec, inputs, outputs):
    layers, counts = [], {}
    for item in spec.split(","):
        kind, _, v = item.partition(":")
        n = counts.get(kind, 0)
        counts[kind] = n + 1
        name = kind if n == 0 else f"{kind}_{n}"
        layers.append((kind, name, float(v) if v else None))
    last_lstm = max(i for i, l in enumerate(layers) if l[0] == "lstm")
    out, width = [], inputs
    for i, (kind, name, v) in enumerate(layers):
        units = int(v) if kind == "lstm" or (kind == "dense" and v) else (outputs if kind == "dense" else width)
        out.append(dict(kind=kind, name=name, inp=width, units=units, seq=(kind == "lstm" and i != last_lstm)))
        width = units
    return out


def weights(layers, rng):
    w = {}
    for l in layers:
        if l["kind"] == "lstm":
            g = 4 * l["units"]
            w[l["name"] + "/kernel"] = rng.uniform(-0.4, 0.4, (l["inp"], g))
            w[l["name"] + "/recurrent_kernel"] = rng.uniform(-0.4, 0.4, (l["units"], g))
            w[l["name"] + "/bias"] = rng.uniform(-0.2, 0.2, g)
        elif l["kind"] == "dense":
            w[l["name"] + "/kernel"] = rng.uniform(-0.5, 0.5, (l["inp"], l["units"]))
            w[l["name"] + "/bias"] = rng.uniform(-0.1, 0.1, l["units"])
    return {k: v.astype(np.float32) for k, v in w.items()}


def forward(layers, p, x):
    h = x
    for l in layers:
        if l["kind"] == "lstm":
            lstm = torch.nn.LSTM(l["inp"], l["units"], batch_first=True, dtype=torch.float64)
            # Functional call with our tensors, so that gradients reach p.
            out, _ = torch.func.functional_call(lstm, {
                "weight_ih_l0": p[l["name"] + "/kernel"].T, "weight_hh_l0": p[l["name"] + "/recurrent_kernel"].T,
                "bias_ih_l0": p[l["name"] + "/bias"], "bias_hh_l0": torch.zeros(4 * l["units"], dtype=torch.float64)},
                (h,))
            h = out if l["seq"] else out[:, -1, :]
        elif l["kind"] == "dense":
            h = h @ p[l["name"] + "/kernel"] + p[l["name"] + "/bias"]
        # dropout: off
    return h


def write_safetensors(path, tensors, meta):
    header, blobs, at = {"__metadata__": meta}, [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        dtype = {np.float32: "F32", np.float64: "F64"}[a.dtype.type]
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [at, at + a.nbytes]}
        blobs.append(a.astype(a.dtype.newbyteorder("<")).tobytes())
        at += a.nbytes
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def mse(pred, y):
    """Keras' MSE: the mean over a row's outputs, then over the batch."""
    return ((pred - y) ** 2).mean(dim=1).mean()


def run(forward, w32, x, y, out, prefix="", loss_fn=mse):
    """STEPS steps of Keras' Adam on loss_fn(forward(p, x), y) from the
    weights w32: the first step's predictions, loss and gradients, every
    step's loss and the final weights, into out under prefix. Returns the
    losses."""
    p = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in w32.items()}
    xt, yt = torch.tensor(x, dtype=torch.float64), torch.tensor(y, dtype=torch.float64)
    m = {k: torch.zeros_like(v) for k, v in p.items()}
    v2 = {k: torch.zeros_like(v) for k, v in p.items()}
    losses = []
    for step in range(1, STEPS + 1):
        for t in p.values():
            t.grad = None
        pred = forward(p, xt)
        loss = loss_fn(pred, yt)
        loss.backward()
        losses.append(loss.item())
        if step == 1:
            out[prefix + "pred"] = pred.detach().numpy()
            out[prefix + "loss"] = np.array([loss.item()])
            out.update({prefix + "grad/" + k: t.grad.numpy().copy() for k, t in p.items()})
        alpha = LR * np.sqrt(1 - B2 ** step) / (1 - B1 ** step)
        with torch.no_grad():
            for k, t in p.items():
                g = t.grad
                m[k] += (g - m[k]) * (1 - B1)
                v2[k] += (g * g - v2[k]) * (1 - B2)
                t -= m[k] * alpha / (torch.sqrt(v2[k]) + EPS)
    out[prefix + "losses"] = np.array(losses)
    out.update({prefix + "final/" + k: t.detach().numpy() for k, t in p.items()})
    return losses


def problem(spec, inputs, outputs, batch, window, seed):
    """The model's layers, float32 weights and a batch x, y drawn from seed,
    and the fixture's tensors so far (x, y, the weights)."""
    rng = np.random.default_rng(seed)
    layers = parse(spec, inputs, outputs)
    w32 = weights(layers, rng)
    x = rng.standard_normal((batch, window, inputs)).astype(np.float32)
    y = rng.standard_normal((batch, outputs)).astype(np.float32)
    out = {"x": x, "y": y}
    out.update(w32)
    return layers, w32, x, y, out


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for name, spec, inputs, outputs, batch, window, seed in MODELS:
        layers, w32, x, y, out = problem(spec, inputs, outputs, batch, window, seed)
        losses = run(lambda p, xt: forward(layers, p, xt), w32, x, y, out)
        meta = {"model": spec, "inputs": str(inputs), "outputs": str(outputs), "batch": str(batch),
                "window": str(window), "steps": str(STEPS), "generator": "tests/ref/gen_lstm_ref.py",
                "torch": torch.__version__}
        path = os.path.join(outdir, name + ".safetensors")
        write_safetensors(path, out, meta)
        print(f"{path}: loss {losses[0]:.6f} -> {losses[-1]:.6f}")


if __name__ == "__main__":
    main()
