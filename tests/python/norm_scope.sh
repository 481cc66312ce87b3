#!/usr/bin/env bash
# --norm-scope series on two series of very different scales (temperatures
# about 10 and about 1010): the fit's batches (dump_batches) against a naive
# per-series z-scoring in plain Python, a column flat in each series (sid)
# keeping the global scaling; the checkpoint's series scales by name;
# predict's forecasts in each series' data units, alike on a file of one of
# the series; a series the checkpoint has not seen refused by name; export
# refused; --resume bit-identical; the default (global) bit-identical to
# --norm-scope global and without the new metadata; the Dataset's
# norm_scope="series" batches equal to the fit's (with numpy, else skipped
# part).
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
LIBSEQFEED=${1:?libseqfeed.so} DUMP_BATCHES=${2:?dump_batches}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
python3 - <<'PY'
import math, random
random.seed(11)
with open("two.csv", "w") as f, open("three.csv", "w") as g, open("ny.csv", "w") as h:
    for out in (f, g, h):
        out.write("site,time,temp,sid\n")
    for name, base, amp, sid in (("seattle", 10.0, 4.0, 0), ("newyork", 1010.0, 9.0, 1)):
        for i in range(120):
            v = base + amp * math.sin(2 * math.pi * i / 24) + random.gauss(0, 0.5)
            row = "%s,2010-01-%02dT%02d:00:00Z,%.4f,%d\n" % (name, 1 + i // 24, i % 24, v, sid)
            f.write(row)
            g.write(row.replace("seattle", "boston"))
            if name == "newyork":
                h.write(row)
PY
run 0 pack two.csv -o two.sfpack --series-column site -q
run 0 pack three.csv -o three.sfpack --series-column site -q
run 0 pack ny.csv -o ny.sfpack --series-column site -q

# The fit's batches, scaled per series and globally, against plain Python.
"$DUMP_BATCHES" two.sfpack series.bin 8 16 1 0.25 0 7 1 temp series || fail "dump_batches series"
"$DUMP_BATCHES" two.sfpack global.bin 8 16 1 0.25 0 7 1 temp global || fail "dump_batches global"
python3 - <<'PY' || fail "the batches are not each series' own z-scores (series.bin) or the global ones (global.bin)"
import csv, math, struct
rows = list(csv.DictReader(open("two.csv")))
series = {}
for r in rows:
    series.setdefault(r["site"], []).append((float(r["temp"]), float(r["sid"])))
f32 = lambda v: struct.unpack("<f", struct.pack("<f", v))[0]
def stats(vals):  # population mean and std in double, as the pack's statistics
    m = sum(vals) / len(vals)
    return m, math.sqrt(sum((v - m) ** 2 for v in vals) / len(vals))
train = {s: v[:len(v) - int(len(v) * 0.25)] for s, v in series.items()}  # the last 25% validate
def check(path, per_series):
    gt, gs = stats([f32(t) for v in train.values() for t, _ in v]), stats([s for v in train.values() for _, s in v])
    ref = {}
    for s, v in series.items():
        mt, st = stats([f32(t) for t, _ in train[s]]) if per_series else gt
        ref[s] = [(f32(t) - mt) / st for t, _ in v], [(sid - gs[0]) / gs[1] for _, sid in v]
    data = open(path, "rb").read()
    xl, yl = 16 * 8 * 2, 16
    n = len(data) // 4 // (xl + yl)
    assert n > 0 and len(data) == n * (xl + yl) * 4, len(data)
    seen = set()
    for b in range(n):
        x = struct.unpack_from("<%df" % xl, data, b * (xl + yl) * 4)
        y = struct.unpack_from("<%df" % yl, data, (b * (xl + yl) + xl) * 4)
        for i in range(16):
            w = x[i * 16:(i + 1) * 16]
            temps, sids = w[0::2], w[1::2]
            # sid is constant in each series: it keeps the global scaling (+-1)
            s = "seattle" if sids[0] < 0 else "newyork"
            assert all(abs(v - ref[s][1][0]) < 1e-6 for v in sids), (path, sids)
            rt = ref[s][0]
            starts = [k for k in range(len(rt) - 8) if all(abs(rt[k + j] - temps[j]) < 1e-4 for j in range(8))]
            assert starts and any(abs(rt[k + 8] - y[i]) < 1e-4 for k in starts), (path, s, temps, y[i])
            seen.add(s)
            if per_series:  # each series' own units: centred on its own mean, not 1000 apart
                assert all(abs(v) < 4 for v in temps), temps
    assert seen == {"seattle", "newyork"}, seen
check("series.bin", True)
check("global.bin", False)
PY

common=(--data two.sfpack --targets temp --window 8 --batch-size 16 --epochs 3 --val-split 0.25 --seed 3
        --model lstm:8,dense --lr 0.01 -q)
run 0 train "${common[@]}" --norm-scope series --checkpoint-dir s
# The checkpoint keeps each series' scaling by name: the training rows' own.
python3 - <<'PY' || fail "the checkpoint's series scaling"
import csv, json, math, struct
b = open("s/latest.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
meta = h["__metadata__"]
assert meta["norm_scope"] == "series" and meta["norm_series"] == "seattle,newyork", meta
def tensor(name):
    t = h[name]
    lo, hi = t["data_offsets"]
    return t["shape"], struct.unpack("<%df" % ((hi - lo) // 4), b[8 + n + lo:8 + n + hi])
f32 = lambda v: struct.unpack("<f", struct.pack("<f", v))[0]
rows = list(csv.DictReader(open("two.csv")))
for k, s in enumerate(("seattle", "newyork")):
    v = [f32(float(r["temp"])) for r in rows if r["site"] == s][:90]
    m = sum(v) / len(v)
    sd = math.sqrt(sum((x - m) ** 2 for x in v) / len(v))
    shape, ts = tensor("scaling/series_target_scale")
    _, to = tensor("scaling/series_target_offset")
    _, tm = tensor("scaling/series_target_mean")
    assert shape == [2, 1] and abs(ts[k] * sd - 1) < 1e-6 and abs(to[k] + m / sd) < 1e-5 and abs(tm[k] - m) < 1e-3, (s, ts, to, tm, m, sd)
    shape, fs = tensor("scaling/series_feature_scale")
    _, fo = tensor("scaling/series_feature_offset")
    # temp its own; sid (one value per series) the global z-score's: mean 0.5, std 0.5
    assert shape == [2, 2] and abs(fs[2 * k] * sd - 1) < 1e-6 and fs[2 * k + 1] == 2 and fo[2 * k + 1] == -1, (fs, fo)
PY
# predict's forecasts are each series' data units.
run 0 predict --checkpoint s/latest.safetensors --data two.sfpack -o p.csv -q
python3 - <<'PY' || fail "predict's forecasts are not in each series' units: $(head -3 p.csv; grep -m3 newyork p.csv)"
import csv
got = {}
for r in csv.DictReader(open("p.csv")):
    got.setdefault(r["site"], []).append(float(r["temp_pred"]))
assert len(got["seattle"]) == len(got["newyork"]) == 112, {k: len(v) for k, v in got.items()}
assert all(-5 < v < 25 for v in got["seattle"]) and all(990 < v < 1030 for v in got["newyork"]), got
PY
# By name: a file of New York alone gets New York's scaling, the same forecasts.
run 0 predict --checkpoint s/latest.safetensors --data ny.sfpack -o ny.csv -q
[ "$(grep newyork p.csv | cut -d, -f2,4)" = "$(tail -n +2 ny.csv | cut -d, -f2,4)" ] ||
    fail "New York's forecasts differ on a file of its own"
run 0 evaluate --checkpoint s/latest.safetensors --data two.sfpack -q
# A series the checkpoint has not seen: no scaling for it, an error naming it.
for cmd in predict evaluate; do
    run 2 "$cmd" --checkpoint s/latest.safetensors --data three.sfpack -q
    expect err "^seqfeed $cmd: error: three.sfpack: series \"boston\" \(row 0\) is not one of the 2 series the checkpoint was trained on with --norm-scope series.*--norm-scope global\)"
done
# One Normalization layer cannot scale per series: the Keras model is refused.
run 2 export --checkpoint s/latest.safetensors --format keras -o m.keras -q
expect err "scales each of its 2 series by its own statistics \(--norm-scope series\)|without libhdf5"
[ -e m.keras ] && fail "export wrote m.keras"

# --resume: a run stopped early and resumed ends as the uninterrupted one.
run 0 train "${common[@]}" --norm-scope series --checkpoint-dir r --max-steps 7
run 0 train --checkpoint-dir r --resume -q
same_bytes s/latest.safetensors r/latest.safetensors || fail "the resumed --norm-scope series run ends elsewhere"
run 2 train --checkpoint-dir r --resume --norm-scope global -q
expect err "^seqfeed train: error: --norm-scope global differs from the checkpoint's series in r/latest.safetensors"

# The default is global, as before: the same run as --norm-scope global, no new metadata.
run 0 train "${common[@]}" --checkpoint-dir g0
run 0 train "${common[@]}" --norm-scope global --checkpoint-dir g1
same_bytes g0/latest.safetensors g1/latest.safetensors || fail "--norm-scope global differs from the default"
grep -aq norm_scope g0/latest.safetensors && fail "a global run's checkpoint says norm_scope"
run 0 predict --checkpoint g0/latest.safetensors --data three.sfpack -o /dev/null -q  # any series: one scaling

# A damaged scope is named.
python3 - <<'PY'
b = open("s/latest.safetensors", "rb").read()
open("bad.safetensors", "wb").write(b.replace(b'"norm_scope":"series"', b'"norm_scope":"sidewy"'))
PY
run 1 predict --checkpoint bad.safetensors --data two.sfpack -q
expect err "metadata 'norm_scope' is 'sidewy'"

# Usage: a file of one series without a series column has nothing to scope.
printf 'temp\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n' > one.csv
run 0 pack one.csv -o one.sfpack -q
run 2 train --data one.sfpack --window 3 --batch-size 2 --epochs 1 --norm-scope series --checkpoint-dir o -q
expect err "^seqfeed train: error: one.sfpack: --norm-scope series .* without a series column \(hint: pack the CSV with --series-column NAME"
run 2 train --data one.sfpack --norm-scope local -q
expect err "norm-scope"
run 2 train --data two.sfpack --norm none --norm-scope series --window 3 --batch-size 2 --epochs 1 --checkpoint-dir o -q
expect err "^seqfeed train: error: --norm-scope series with --norm none: there is no scaling to take per series"

# The Python Dataset draws the fit's batches, and its validation split the
# fit's validation windows (numpy needed: else this part is skipped).
"$DUMP_BATCHES" two.sfpack val.bin 8 16 1 0.25 0 7 1 temp validation series || fail "dump_batches validation series"
(
    . "$SRCDIR/tests/python/env.sh"
    pyrun - <<'PY'
import numpy as np, seqfeed
val = seqfeed.Dataset("two.sfpack", window=8, batch_size=16, targets="temp", val_split=0.25, split="validation",
                      norm_scope="series")
ref, at = np.fromfile("val.bin", dtype=np.float32), 0
for x, y in val:
    for a in (x, y):
        assert (ref[at:at + a.size] == a.ravel()).all(), at
        at += a.size
assert at == ref.size > 0, (at, ref.size)
ds = seqfeed.Dataset("two.sfpack", window=8, batch_size=16, targets="temp", val_split=0.25, seed=7, epochs=1,
                     norm_scope="series")
ref = np.fromfile("series.bin", dtype=np.float32).reshape(-1, 16 * 8 * 2 + 16)
got = [np.concatenate([x.ravel(), y.ravel()]) for x, y in ds]
assert len(got) == len(ref) and all((g == r).all() for g, r in zip(got, ref)), "batches differ"
try:
    seqfeed.Dataset("two.sfpack", window=8, norm_scope="local")
    raise SystemExit("norm_scope='local' taken")
except ValueError as e:
    assert "norm_scope (--norm-scope) must be global or series" in str(e), e
try:
    ds.unscale(np.zeros((1, 1), np.float32))
    raise SystemExit("unscale took norm_scope='series'")
except ValueError as e:
    assert "norm_scope='series' scales each series by its own statistics" in str(e), e
# The exported model's inputs are in data units for its one Normalization: refused alike.
try:
    seqfeed.model_inputs("s/latest.safetensors", "two.sfpack")
    raise SystemExit("model_inputs took a --norm-scope series checkpoint")
except seqfeed.SeqfeedError as e:
    assert "(--norm-scope series), which the exported Keras model's one Normalization layer cannot" in str(e), e
PY
)
case $? in 0 | 77) ;; *) fail "the Dataset's norm_scope='series' batches" ;; esac
finish
