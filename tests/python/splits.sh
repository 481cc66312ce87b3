#!/usr/bin/env bash
# Dataset(split="validation") is the windows train validates on and
# evaluate scores: a tiny model trained by the CLI on a file with series,
# a category, a time feature and --target change, run in numpy on the
# Dataset's validation windows, gives train's last val_loss (the MSE of
# the scaled outputs against y), and through Dataset.unscale the values
# `seqfeed predict --split validation` writes, row for row; the count is
# evaluate's. Dataset.scaler is the checkpoint's scaling (scaling/*),
# bit for bit, and the training part's statistics; the validation batches
# are what dump_batches --validation (the fit's own plan, read as fit.c's
# validate reads it) writes. Dataset[i] serves Keras' index asks (each
# epoch train's, a repeated index the same batch). Bad splits are refused
# by name. Needs numpy: 77 without it.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
LIBSEQFEED=${1:?libseqfeed.so} DUMP_BATCHES=${2:?dump_batches}
. "$SRCDIR/tests/python/env.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
pyrun - <<'PY'
import datetime as dt, math, random
random.seed(7)
with open("d.csv", "w") as f:
    f.write("site,time,temp,sky,rain\n")
    for s, n in (("north", 700), ("south", 500)):
        v = 10.0
        for i in range(n):
            t = dt.datetime(2021, 3, 1) + dt.timedelta(hours=i)
            v += random.gauss(0, 0.3) + 0.2 * math.sin(i / 24 * 2 * math.pi)
            f.write("%s,%s,%.3f,%s,%.2f\n" % (s, t.strftime("%Y-%m-%dT%H:%M"), v,
                                             random.choice(["sun", "rain", "fog"]), random.random()))
PY
run 0 pack d.csv -o d.sfpack --series-column site --categorical sky --chunk-rows 128 -q
opts=(--window 12 --batch-size 16 --targets temp,rain --target change --time-features hour --val-split 0.2)
run 0 train --data d.sfpack --model lstm:8,dense "${opts[@]}" --epochs 2 --checkpoint-dir ck --log log.csv -q
run 0 predict --checkpoint ck/latest.safetensors --data d.sfpack --split validation -o pred.csv -q
run 0 evaluate --checkpoint ck/latest.safetensors --data d.sfpack --json -q
cp out eval.json
pyrun - <<'PY' || fail "the validation split against train, evaluate and predict"
import csv, json
import numpy as np
import seqfeed
kw = dict(window=12, batch_size=16, targets="temp,rain", target_change=True, time_features="hour", val_split=0.2)
val = seqfeed.Dataset("d.sfpack", split="validation", **kw)
train = seqfeed.Dataset("d.sfpack", **kw)
ev = json.load(open("eval.json"))
assert val.windows == ev["windows"] == 240 and ev["split"] == "validation", (val.windows, ev["windows"])
assert len(val) == val.batches_per_epoch == 15 and val.batch == 16, (len(val), val.batch)
# The scaling: the checkpoint's, bit for bit, in both splits; the statistics the training part's.
t, meta = seqfeed.load_checkpoint("ck/latest.safetensors")
for ds in (val, train):
    s = ds.scaler
    for mine, theirs in ((s.input_scale, "feature_scale"), (s.input_offset, "feature_offset"),
                         (s.target_scale, "target_scale"), (s.target_offset, "target_offset"),
                         (s.target_mean, "target_mean")):
        assert mine.dtype == np.float32 and (mine == t["scaling/" + theirs]).all(), (theirs, mine, t["scaling/" + theirs])
    cats = meta["categories"].strip('"').split(",")[1:]
    assert s.inputs == ["temp"] + ["sky=" + c for c in cats] + ["rain", "hour_sin", "hour_cos"], s.inputs
    assert s.targets == ["temp", "rain"] and s.change_from == [0, len(cats) + 1], (s.targets, s.change_from)
    assert s.rows == 560 + 400, s.rows
p = seqfeed.Pack("d.sfpack")
temp = np.concatenate([p.read(["temp"], 0, 560)[:, 0], p.read(["temp"], 700, 1100)[:, 0]]).astype(np.float64)
st = val.scaler.stats["temp"]
assert abs(st["mean"] - temp.mean()) < 1e-9 * abs(temp.mean()) + 1e-9, (st, temp.mean())
assert abs(st["std"] - temp.std()) < 1e-6 * temp.std() and st["min"] == temp.min() and st["max"] == temp.max(), st
assert set(val.scaler.stats) == {"temp", "rain"}, val.scaler.stats.keys()  # sky is one-hot: not scaled

def sigmoid(z):
    return 1 / (1 + np.exp(-z))

def model(x):  # the checkpoint's lstm:8,dense in float64 (Keras' gates i, f, c, o)
    k, r, b = (t["lstm/" + n].astype(np.float64) for n in ("kernel", "recurrent_kernel", "bias"))
    u = r.shape[0]
    h, c = np.zeros((len(x), u)), np.zeros((len(x), u))
    for step in range(x.shape[1]):
        z = x[:, step].astype(np.float64) @ k + h @ r + b
        i, f, g, o = sigmoid(z[:, :u]), sigmoid(z[:, u:2 * u]), np.tanh(z[:, 2 * u:3 * u]), sigmoid(z[:, 3 * u:])
        c = f * c + i * g
        h = o * np.tanh(c)
    return h @ t["dense/kernel"].astype(np.float64) + t["dense/bias"]

batches = list(val)
assert len(batches) == 15 and [len(x) for x, _ in batches] == [16] * 15, [len(x) for x, _ in batches]
sq, n, got = 0.0, 0, []
for x, y in batches:
    out = model(x)
    sq += ((out - y) ** 2).sum()
    n += y.size
    got.append(val.unscale(out.astype(np.float32), x))
loss = float(list(csv.DictReader(open("log.csv")))[-1]["val_loss"])
assert abs(sq / n - loss) < 1e-5 * loss and abs(ev["loss"] - loss) < 1e-5 * loss, (sq / n, loss, ev["loss"])
got = np.concatenate(got)
rows = list(csv.DictReader(open("pred.csv")))
want = np.array([[float(r["temp_pred"]), float(r["rain_pred"])] for r in rows])
assert got.shape == want.shape == (240, 2), (got.shape, want.shape)
rel = np.abs(got - want) / np.maximum(np.abs(want), 1e-3)
assert rel.max() < 1e-5, (rel.max(), np.argmax(rel))
# The targets' rows: predict's lines (the CSV's: row + 2, the header and 1-based).
target_rows = np.concatenate([val._val.read(i, rows=True)[2] for i in range(len(val))])
assert [int(r["line"]) for r in rows] == list(target_rows + 2), "the windows' order differs from predict's"
# Index access is random access, and the same batch every time; the last batch is shorter when it must be.
x3, y3 = val[3]
assert (x3 == batches[3][0]).all() and (y3 == batches[3][1]).all() and (val[-1][0] == batches[-1][0]).all()
odd = seqfeed.Dataset("d.sfpack", split="validation", **dict(kw, batch_size=50))
assert len(odd) == 5 and [len(b[0]) for b in odd] == [50, 50, 50, 50, 40], len(odd)
# unscale without target_change needs no x; with it, x is required.
plain = seqfeed.Dataset("d.sfpack", split="validation", **dict(kw, target_change=False))
xp, yp = plain[0]
back = plain.unscale(yp)
assert np.allclose(back[:, 0], p.read(["temp"])[plain._val.read(0, rows=True)[2], 0], rtol=1e-6), back[:3]
# Several steps ahead: y is (windows, steps, targets), every step's target
# row back in data units through unscale, under target_change too.
for change in (False, True):
    multi = seqfeed.Dataset("d.sfpack", split="validation", **dict(kw, horizon="1-3", target_change=change))
    xm, ym, last = multi._val.read(1, rows=True)
    assert ym.shape == (len(xm), 3, 2), ym.shape
    back = multi.unscale(ym, xm)
    data = p.read(["temp", "rain"])
    want = np.stack([data[last - 2], data[last - 1], data[last]], axis=1)
    assert np.allclose(back, want, rtol=1e-5, atol=1e-4), (change, np.abs(back - want).max())
    # A quantile model's outputs: each quantile unscaled as its target.
    yq = np.stack([ym - 0.5, ym, ym + 0.5], axis=-1)
    backq = multi.unscale(yq, xm, quantiles=True)
    assert backq.shape == (len(xm), 3, 2, 3) and np.array_equal(backq[..., 1], back), backq.shape
    assert (np.diff(backq, axis=-1) > 0).all(), "a larger scaled value unscales to a larger one"
try:
    val.unscale(got[:3])
    raise SystemExit("unscale without x under target_change")
except ValueError as e:
    assert "needs the windows' inputs x" in str(e), e
print("validation:", val.windows, "windows; val_loss", sq / n, "against", loss)
PY
# The validation batches as the fit's own plan gives them.
"$DUMP_BATCHES" d.sfpack ref.bin 12 16 1 0.2 0 1 1 temp,rain validation || fail "dump_batches validation"
pyrun - <<'PY' || fail "the validation batches differ from the fit's"
import numpy as np
import seqfeed
ref = np.fromfile("ref.bin", dtype=np.float32)
val = seqfeed.Dataset("d.sfpack", window=12, batch_size=16, targets="temp,rain", val_split=0.2, split="validation")
at = 0
for x, y in val:
    for a in (x, y):
        assert (ref[at:at + a.size] == a.ravel()).all(), at
        at += a.size
assert at == ref.size, (at, ref.size)
PY
# Keras' index asks, served without Keras (python-keras-fit runs Keras itself): a new index gets
# the pipeline's next batch, one asked again in the epoch the same batch, and an epoch of
# batches_per_epoch indexes is train's epoch; a batch let go and asked for again is warned about.
pyrun - <<'PY' || fail "Dataset[i] as Keras asks it"
import random, warnings
import seqfeed
kw = dict(window=12, batch_size=16, targets="temp", seed=4)
ds, want = seqfeed.Dataset("d.sfpack", **kw), list(seqfeed.Dataset("d.sfpack", epochs=3, **kw))
n, key = ds.batches_per_epoch, lambda b: b[0].tobytes() + b[1].tobytes()
random.seed(1)
with warnings.catch_warnings():
    warnings.simplefilter("error")
    for e in range(3):
        order = random.sample(range(n), n)
        peek = [ds[order[0]], ds[-n]] if e == 0 else []  # a build's ask, and TF's peek at batch 0
        got = {}
        for k, i in enumerate(order):
            got.setdefault(i, ds[i])
            # Asked again at once; not the epoch's last: after it any ask begins the next epoch.
            assert k == n - 1 or ds[i] is got[i]
        assert all(b is got[i] for b, i in zip(peek, (order[0], 0)))
        assert sorted(map(key, got.values())) == sorted(map(key, want[e * n:(e + 1) * n])), "epoch %d" % e
for i in range(20):
    ds[i]
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    ds[5]
assert len(w) == 1 and "asked again after its batch was let go" in str(w[0].message), [str(m.message) for m in w]
for bad, err in ((n, IndexError), (-n - 1, IndexError), (1.0, TypeError), (True, TypeError)):
    try:
        ds[bad]
        raise SystemExit("ds[%r] served" % (bad,))
    except err:
        pass
PY
pyrun - <<'PY' || fail "bad splits"
import seqfeed
for kw, err, msg in ((dict(split="test"), ValueError, "split must be one of 'train', 'validation', got 'test'"),
                     (dict(split="validation", val_split=0), seqfeed.SeqfeedError, "val_split 0 (--val-split) leaves no "
                      "validation part"),
                     (dict(split="validation", val_split=0.001), seqfeed.SeqfeedError, "no validation window"),
                     (dict(split="validation", replicas=2, batch_size=16), ValueError, "leave replicas and replica out")):
    try:
        seqfeed.Dataset("d.sfpack", window=12, **kw)
        raise SystemExit("accepted %s" % kw)
    except err as e:
        assert msg in str(e), (kw, str(e))
val = seqfeed.Dataset("d.sfpack", window=12, split="validation", val_split=0.2)
val.close()
try:
    val[0]
    raise SystemExit("read after close")
except ValueError as e:
    assert "is closed" in str(e), e
PY
finish
