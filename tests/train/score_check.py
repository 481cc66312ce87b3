#!/usr/bin/env python3
# Recomputes evaluate's per-target scores from the CSV alone (Python's
# standard library), for the target rows predict wrote: each forecaster's
# RMSE and MAE in data units, the scaled MSEs, the counts and the verdicts,
# and checks evaluate --json against them to 1e-4 relative.
#   score_check.py DATA.csv PRED.csv EVAL.json --series ID --time T --targets a,b
#       --val-split F --horizon H --season S (0: none) [--max-gap-days D]
# Empty cells are values pack filled in (--missing ffill): never scored, and
# the persistence and seasonal forecasts read the filled value.
import argparse, csv, datetime, json, math, struct, sys

ap = argparse.ArgumentParser()
ap.add_argument("data"), ap.add_argument("pred"), ap.add_argument("eval")
ap.add_argument("--series", default=""), ap.add_argument("--time", default="")
ap.add_argument("--targets", required=True), ap.add_argument("--val-split", type=float, required=True)
ap.add_argument("--horizon", type=int, default=1), ap.add_argument("--season", type=int, default=0)
ap.add_argument("--max-gap-days", type=float, default=0)
o = ap.parse_args()
f32 = lambda v: struct.unpack("<f", struct.pack("<f", float(v)))[0]
targets = o.targets.split(",")
rows = list(csv.DictReader(open(o.data)))
# Series (file order) and, with --max-gap, the segments their gaps cut.
starts, seg_of, last = [], [], {}
for i, r in enumerate(rows):
    s = r[o.series] if o.series else ""
    new = i == 0 or s != (rows[i - 1][o.series] if o.series else "")
    if not new and o.max_gap_days:
        step = datetime.date.fromisoformat(r[o.time]) - datetime.date.fromisoformat(rows[i - 1][o.time])
        new = step.days > o.max_gap_days
    if new:
        starts.append(i)
    seg_of.append(len(starts) - 1)
    for c in targets:  # ffill within a series, as pack does
        if r[c] != "":
            last[(s, c)] = f32(r[c])
        r["_" + c] = last[(s, c)]
# The training part: the first rows - floor(rows x split) rows of each
# series (of each segment with --max-gap, as training splits them).
series_rows = {}
for i, r in enumerate(rows):
    series_rows.setdefault(seg_of[i], []).append(i)
train = [i for idx in series_rows.values() for i in idx[:len(idx) - int(len(idx) * o.val_split)]]
stat = {}
for c in targets:
    x = [rows[i]["_" + c] for i in train]
    m = math.fsum(x) / len(x)
    stat[c] = (f32(m), 1 / math.sqrt(math.fsum((v - m) ** 2 for v in x) / len(x)))
fc = ("model", "persistence", "mean", "seasonal")
err = {c: {f: [] for f in fc} for c in targets}
pred = list(csv.DictReader(open(o.pred)))
for p in pred:
    t = int(p["line"]) - 2  # the target's row: the CSV's line less the header's
    for c in targets:
        if rows[t][c] == "":
            continue
        truth = f32(rows[t][c])
        err[c]["model"].append(f32(p[c + "_pred"]) - truth)
        err[c]["persistence"].append(rows[t - o.horizon]["_" + c] - truth)
        err[c]["mean"].append(stat[c][0] - truth)
        if o.season and t - o.season >= starts[seg_of[t]]:
            err[c]["seasonal"].append(rows[t - o.season]["_" + c] - truth)
ev = json.load(open(o.eval))
assert ev["windows"] == len(pred), (ev["windows"], len(pred))
assert ev["season"] == (o.season or None), ev["season"]


def close(got, want, what):
    assert got is not None and abs(got - want) <= 1e-4 * abs(want) + 1e-9, (what, got, want)


by_name = {t["name"]: t for t in ev["per_target"]}
assert list(by_name) == targets, list(by_name)
verdicts = {}
for c in targets:
    t, e = by_name[c], err[c]
    assert t["values"] == len(e["model"]) and t["seasonal_values"] == len(e["seasonal"]), (c, t, len(e["seasonal"]))
    for f in fc:
        if not e[f]:
            assert t["rmse"][f] is None and t["mae"][f] is None and t[f] is None, (c, f, t)
            continue
        mse = math.fsum(d * d for d in e[f]) / len(e[f])
        close(t["rmse"][f], math.sqrt(mse), (c, f, "rmse"))
        close(t["mae"][f], math.fsum(abs(d) for d in e[f]) / len(e[f]), (c, f, "mae"))
        close(t[f], mse * stat[c][1] ** 2, (c, f, "scaled mse"))  # MSE on the scaled values
    beats = math.fsum(d * d for d in e["model"]) < math.fsum(d * d for d in e["persistence"])
    assert t["beats_persistence"] == beats, (c, t)
    verdicts[c] = beats
assert ev["beats_persistence"] == all(verdicts.values()), ev
print(" ".join("%s:%s" % (c, "beats" if b else "loses") for c, b in verdicts.items()))
