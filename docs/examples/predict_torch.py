#!/usr/bin/env python3
"""Loads a seqfeed checkpoint into PyTorch and predicts like `seqfeed predict`.

usage: predict_torch.py CHECKPOINT.safetensors DATA.csv > predictions.csv

DATA.csv is the data as `seqfeed unpack` writes it (a series column first
when the file has series). The checkpoint is a safetensors file: weights
under Keras' names (lstm/kernel (in, 4U), lstm/recurrent_kernel (U, 4U),
lstm/bias (4U), gates i, f, c, o; gru/kernel (in, 3U), gru/recurrent_kernel
(U, 3U), gru/bias (2, 3U), gates z, r, h, Keras' reset_after GRU, which is
torch.nn.GRU's; dense/kernel (in, out), dense/bias), the
training data's scaling under scaling/*, and the model, columns and window
in its metadata. Needs torch and numpy; reads safetensors with the standard
library (the `safetensors` package would do the same).
"""
import csv
import json
import struct
import sys

import numpy as np
import torch


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    dtypes = {"F32": np.float32, "F64": np.float64, "I64": np.int64}
    tensors = {k: np.frombuffer(data[v["data_offsets"][0]:v["data_offsets"][1]], dtype=dtypes[v["dtype"]])
               .reshape(v["shape"]) for k, v in header.items()}
    return tensors, meta


class SeqfeedModel(torch.nn.Module):
    """The checkpoint's layers: LSTM or GRU (every one but the last returns
    sequences), Dropout (identity here: inference), Dense."""

    def __init__(self, spec, t):
        super().__init__()
        self.layers, counts = [], {}
        items = spec.split(",")
        last_lstm = max(i for i, s in enumerate(items) if s.split(":")[0] in ("lstm", "gru"))
        for i, item in enumerate(items):
            kind = item.split(":")[0]
            n = counts.get(kind, 0)
            counts[kind] = n + 1
            name = kind if n == 0 else f"{kind}_{n}"
            if kind == "lstm":
                k, r, b = (t[f"{name}/{w}"] for w in ("kernel", "recurrent_kernel", "bias"))
                lstm = torch.nn.LSTM(k.shape[0], r.shape[0], batch_first=True)
                with torch.no_grad():
                    lstm.weight_ih_l0.copy_(torch.from_numpy(k.T.copy()))
                    lstm.weight_hh_l0.copy_(torch.from_numpy(r.T.copy()))
                    lstm.bias_ih_l0.copy_(torch.from_numpy(b.copy()))
                    lstm.bias_hh_l0.zero_()  # Keras has one bias
                self.add_module(name, lstm)
                self.layers.append(("rnn", lstm, i != last_lstm))
            elif kind == "gru":
                k, r, b = (t[f"{name}/{w}"] for w in ("kernel", "recurrent_kernel", "bias"))
                U = r.shape[0]

                def rzn(a):  # Keras' gate blocks z, r, h -> PyTorch's r, z, n
                    return torch.from_numpy(np.concatenate([a[..., U:2 * U], a[..., :U], a[..., 2 * U:]], axis=-1))
                gru = torch.nn.GRU(k.shape[0], U, batch_first=True)
                with torch.no_grad():
                    gru.weight_ih_l0.copy_(rzn(k).T)
                    gru.weight_hh_l0.copy_(rzn(r).T)
                    gru.bias_ih_l0.copy_(rzn(b[0]))  # Keras' bias rows: the input's, the recurrent's
                    gru.bias_hh_l0.copy_(rzn(b[1]))
                self.add_module(name, gru)
                self.layers.append(("rnn", gru, i != last_lstm))
            elif kind == "dense":
                k, b = t[f"{name}/kernel"], t[f"{name}/bias"]
                dense = torch.nn.Linear(k.shape[0], k.shape[1])
                with torch.no_grad():
                    dense.weight.copy_(torch.from_numpy(k.T.copy()))
                    dense.bias.copy_(torch.from_numpy(b.copy()))
                self.add_module(name, dense)
                self.layers.append(("dense", dense, False))

    def forward(self, x):
        for kind, layer, sequences in self.layers:
            if kind == "rnn":
                x, _ = layer(x)
                if not sequences:
                    x = x[:, -1, :]
            else:
                x = layer(x)
        return x


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    t, meta = read_safetensors(sys.argv[1])
    features, targets = meta["features"].split(","), meta["targets"].split(",")
    length, stride, rate, horizon = (int(v) for v in meta["window"].split(","))
    span = (length - 1) * rate + horizon + 1
    with open(sys.argv[2], newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    has_series = header[0] not in features and header[0] not in targets
    fcol = [header.index(c) for c in features]
    values = np.array([[float(r[c]) for c in fcol] for r in body], dtype=np.float32)
    values = values * t["scaling/feature_scale"] + t["scaling/feature_offset"]
    series = [r[0] if has_series else "" for r in body]
    model = SeqfeedModel(meta["model"], t).eval()
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["series", "row"] + [name + "_pred" for name in targets])  # a file without lines: its rows
    start = 0
    while start < len(body):  # one series at a time, as seqfeed windows them
        end = start
        while end < len(body) and series[end] == series[start]:
            end += 1
        starts = list(range(start, end - span + 1, stride))
        if starts:
            x = np.stack([values[s:s + (length - 1) * rate + 1:rate] for s in starts])
            with torch.no_grad():
                pred = model(torch.from_numpy(x)).numpy()
            pred = (pred - t["scaling/target_offset"]) / t["scaling/target_scale"]
            for s, p in zip(starts, pred):
                out.writerow([series[start], s + (length - 1) * rate + horizon] + [f"{v:.9g}" for v in p])
        start = end


if __name__ == "__main__":
    main()
