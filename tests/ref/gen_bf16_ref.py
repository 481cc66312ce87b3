#!/usr/bin/env python3
"""Writes tests/ref/ref_bf16.safetensors, the reference of tests/backend/test_bf16.c.

seqfeed's bf16 definition (docs/TRAINING.md, "bf16"): the two operands of
every matrix product, forward and backward, are float32 values rounded to
bfloat16 (nearest, ties to even); the products and sums are exact here
(float64), float32 in seqfeed; everything else (biases, gates, cell state,
the loss, Adam) is unrounded. This script emulates that in float64 with
PyTorch's autograd: Matmul below rounds its operands in forward, and in
backward rounds the incoming gradient before both products, as seqfeed's
kernels do. The LSTM is written out (gates i, f, c, o as Keras), because
torch.nn.LSTM's products cannot be rounded.

Alongside, the same steps without rounding ("fp64/..."), so that the test
can also bound how far bf16 lands from exact arithmetic.

usage: python3 tests/ref/gen_bf16_ref.py [outdir]   (needs torch and numpy)
The fixture is committed; CI does not run this script.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_lstm_ref import STEPS, problem, run, write_safetensors  # noqa: E402

NAME, SPEC, INPUTS, OUTPUTS, BATCH, WINDOW, SEED = "ref_bf16", "lstm:32,dropout:0.2,lstm:24,lstm:16,dense", 5, 3, 8, 20, 3


def bf16(a):
    """float64 -> float32 -> bfloat16 (round to nearest even) -> float64."""
    return a.to(torch.float32).to(torch.bfloat16).to(torch.float64)


class Matmul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ra, rb = bf16(a), bf16(b)
        ctx.save_for_backward(ra, rb)
        return ra @ rb

    @staticmethod
    def backward(ctx, dc):
        ra, rb = ctx.saved_tensors
        rdc = bf16(dc)
        return rdc @ rb.T, ra.T @ rdc


def lstm(x, W, Ur, b, mm):
    B, T, _ = x.shape
    U = Ur.shape[0]
    proj = mm(x.reshape(B * T, -1), W).reshape(B, T, 4 * U) + b
    h, c, out = None, None, []
    for t in range(T):
        z = proj[:, t] if t == 0 else proj[:, t] + mm(h, Ur)
        i, f, g, o = torch.sigmoid(z[:, :U]), torch.sigmoid(z[:, U:2 * U]), torch.tanh(z[:, 2 * U:3 * U]), \
            torch.sigmoid(z[:, 3 * U:])
        c = i * g if t == 0 else i * g + f * c
        h = o * torch.tanh(c)
        out.append(h)
    return torch.stack(out, dim=1)


def forward(layers, p, x, mm):
    h = x
    for l in layers:
        if l["kind"] == "lstm":
            out = lstm(h, p[l["name"] + "/kernel"], p[l["name"] + "/recurrent_kernel"], p[l["name"] + "/bias"], mm)
            h = out if l["seq"] else out[:, -1, :]
        elif l["kind"] == "dense":
            h = mm(h, p[l["name"] + "/kernel"]) + p[l["name"] + "/bias"]
    return h


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    layers, w32, x, y, out = problem(SPEC, INPUTS, OUTPUTS, BATCH, WINDOW, SEED)
    losses = run(lambda p, xt: forward(layers, p, xt, Matmul.apply), w32, x, y, out)
    exact = run(lambda p, xt: forward(layers, p, xt, lambda a, b: a @ b), w32, x, y, out, "fp64/")
    meta = {"model": SPEC, "inputs": str(INPUTS), "outputs": str(OUTPUTS), "batch": str(BATCH), "window": str(WINDOW),
            "steps": str(STEPS), "generator": "tests/ref/gen_bf16_ref.py", "torch": torch.__version__}
    path = os.path.join(outdir, NAME + ".safetensors")
    write_safetensors(path, out, meta)
    print(f"{path}: bf16 loss {losses[0]:.6f} -> {losses[-1]:.6f}; exact {exact[0]:.6f} -> {exact[-1]:.6f}")


if __name__ == "__main__":
    main()
