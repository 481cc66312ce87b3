#!/usr/bin/env python3
# The per-target scores of score.sh's daily file recomputed with pandas, as a
# user would: evaluate --json's RMSE and MAE of the model, persistence, the
# training mean and the seasonal naive forecast must agree to 1e-4.
#   score_pandas.py DATA.csv PRED.csv EVAL.json SEASON
import json, sys

import numpy as np
import pandas as pd

data, pred, ev, season = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3])), int(sys.argv[4])
targets = ["alt", "walk", "wk"]
df = pd.read_csv(data, dtype={c: np.float32 for c in targets})
observed = df[targets].notna()
df[targets] = df.groupby("id")[targets].ffill()  # as pack --missing ffill
df["row"] = np.arange(len(df))
n = df.groupby("id")["row"].transform("size")
pos = df.groupby("id").cumcount()
train = pos < n - (n * 0.25).astype(int)
p = pd.read_csv(pred)
rows = p["line"].to_numpy() - 2
for c in targets:
    x = df[c].to_numpy(np.float64)
    keep = observed[c].to_numpy()[rows]
    truth = x[rows]
    f = {
        "model": p[c + "_pred"].astype(np.float32).to_numpy(np.float64),
        "persistence": df.groupby("id")[c].shift(1).to_numpy(np.float64)[rows],
        "mean": np.full(len(rows), np.float32(x[train.to_numpy()].mean()), np.float64),
        "seasonal": df.groupby("id")[c].shift(season).to_numpy(np.float64)[rows],
    }
    got = next(t for t in ev["per_target"] if t["name"] == c)
    for name, v in f.items():
        ok = keep & ~np.isnan(v)
        d = v[ok] - truth[ok]
        rmse, mae = np.sqrt(np.mean(d * d)), np.mean(np.abs(d))
        assert abs(got["rmse"][name] - rmse) <= 1e-4 * rmse + 1e-9, (c, name, got["rmse"][name], rmse)
        assert abs(got["mae"][name] - mae) <= 1e-4 * mae + 1e-9, (c, name, got["mae"][name], mae)
    beats = np.mean((f["model"] - truth)[keep] ** 2) < np.mean((f["persistence"] - truth)[keep] ** 2)
    assert got["beats_persistence"] == bool(beats), (c, got)
print("pandas agrees")
