# The windows of --horizon A-B by brute force over the CSV (horizon.sh's
# h.csv: id, time, v; hourly), against predict's rows (series, time, line,
# step, v_pred[, v]) and, given evaluate --json, its per-step MSEs (--norm
# none: data units) of the model, persistence and the seasonal forecast.
import argparse, csv, datetime, json, math, sys

ap = argparse.ArgumentParser()
ap.add_argument("csv"), ap.add_argument("pred"), ap.add_argument("json")
ap.add_argument("--window", type=int), ap.add_argument("--first", type=int), ap.add_argument("--last", type=int)
ap.add_argument("--max-gap-hours", type=float), ap.add_argument("--season", type=int, default=0)
ap.add_argument("--val-split", type=float, default=None)
a = ap.parse_args()

rows = list(csv.DictReader(open(a.csv)))
for i, r in enumerate(rows):
    r["line"] = i + 2  # the header is line 1
    r["t"] = datetime.datetime.fromisoformat(r["time"])
    r["v"] = float(r["v"])
# Segments: a series cut where a step between rows exceeds the gap.
segs, cur = [], []
for r in rows:
    if cur and (r["id"] != cur[-1]["id"] or (r["t"] - cur[-1]["t"]).total_seconds() > a.max_gap_hours * 3600):
        segs.append(cur)
        cur = []
    cur.append(r)
segs.append(cur)
T, A, B = a.window, a.first, a.last
want = []  # (segment, last input index, step)
for g, seg in enumerate(segs):
    n = len(seg)
    vfirst = n - math.floor(n * a.val_split) if a.val_split is not None else None
    for s in range(n):
        last = s + T - 1
        if last + B >= n:
            break  # a step would leave the segment
        if vfirst is not None and last + A < vfirst:
            continue  # the validation part: every step a validation row
        want += [(g, last, k) for k in range(A, B + 1)]
got = list(csv.DictReader(open(a.pred)))
ok = len(got) == len(want)
if not ok:
    print("predict wrote %d rows, the CSV's windows give %d" % (len(got), len(want)), file=sys.stderr)
for (g, last, k), p in zip(want, got):
    r = segs[g][last + k]
    exp = (r["id"], r["t"].isoformat(), str(r["line"]), str(k))
    have = (p["id"], p["time"], p["line"], p["step"])
    if exp != have:
        print("row %s, expected %s" % (have, exp), file=sys.stderr)
        ok = False
        break
    if "v" in p and abs(float(p["v"]) - r["v"]) > 1e-4:
        print("actual %s at line %s, the CSV has %s" % (p["v"], p["line"], r["v"]), file=sys.stderr)
        ok = False
        break
if ok and a.json:
    e = json.load(open(a.json))
    steps = {x["step"]: x for x in e["per_step"]}
    ok = sorted(steps) == list(range(A, B + 1)) and e["steps"] == [A, B]
    for k in range(A, B + 1):
        sq = {"model": [], "persistence": [], "seasonal": []}
        for (g, last, kk), p in zip(want, got):
            if kk != k:
                continue
            seg, row = segs[g], last + k
            truth = seg[row]["v"]
            sq["model"].append((float(p["v_pred"]) - truth) ** 2)
            sq["persistence"].append((seg[last]["v"] - truth) ** 2)
            if a.season and row >= a.season:
                sq["seasonal"].append((seg[row - a.season]["v"] - truth) ** 2)
        for f, v in sq.items():
            mse = sum(v) / len(v)
            have = steps[k][f]
            if not (abs(have - mse) <= 1e-4 * max(mse, 1e-3)):
                print("step %d: evaluate's %s MSE %r, the CSV's %r" % (k, f, have, mse), file=sys.stderr)
                ok = False
        if steps[k]["values"] != len(sq["model"]) or steps[k]["seasonal_values"] != len(sq["seasonal"]):
            print("step %d: %d values, %d seasonal; expected %d, %d" % (k, steps[k]["values"],
                  steps[k]["seasonal_values"], len(sq["model"]), len(sq["seasonal"])), file=sys.stderr)
            ok = False
sys.exit(0 if ok else 1)
