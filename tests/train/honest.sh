#!/usr/bin/env bash
# Honest training: the scaling comes from the training part's rows alone
# (checked against Python's own statistics of those rows); --target change
# learns changes from the last value, so that a model that outputs 0 is
# persistence exactly, and predictions are values; evaluate's verdict; no
# val_loss without validation windows, and why; a run without
# --checkpoint-dir keeps its checkpoints under runs/.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
python3 - <<'PY'
import math, random
random.seed(11)
with open("d.csv", "w") as f:  # two series whose level drifts: the tail's statistics differ
    f.write("id,a,b\n")
    for s, n in (("x", 300), ("y", 217)):
        a = 0.0
        for i in range(n):
            a += random.gauss(0.05, 1)
            f.write("%s,%.4f,%.4f\n" % (s, a, math.sin(i / 5) + random.random()))
PY
# zero_dense IN OUT: IN with its dense layers' weights and biases zeroed,
# a model whose output is 0 whatever its input.
zero_dense() {
    python3 - "$1" "$2" <<'PY'
import json, struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", data[:8])[0]
for name, t in json.loads(data[8:8 + n]).items():
    if name.startswith("dense"):
        lo, hi = t["data_offsets"]
        data[8 + n + lo:8 + n + hi] = bytes(hi - lo)
open(sys.argv[2], "wb").write(data)
PY
}
run 0 pack d.csv -o d.sfpack --series-column id -q
small=(--data d.sfpack --model lstm:6,dense --window 8 --batch-size 16 --epochs 2 --seed 5)
run 0 train "${small[@]}" --val-split 0.25 --checkpoint-dir v
expect err "scaling: zscore from the 388 rows of the training part"  # 300 - 75 + 217 - 54
# The checkpoint's scaling against the training rows' float32 values, by Python.
python3 - <<'PY' || fail "the scaling is not the training part's: $(cat err)"
import csv, json, math, struct
rows = list(csv.DictReader(open("d.csv")))
f32 = lambda v: struct.unpack("<f", struct.pack("<f", float(v)))[0]
train = []
for s in ("x", "y"):
    part = [r for r in rows if r["id"] == s]
    train += part[:len(part) - int(len(part) * 0.25)]
data = open("v/latest.safetensors", "rb").read()
n = struct.unpack("<Q", data[:8])[0]
head = json.loads(data[8:8 + n])
def tensor(name):
    lo, hi = head[name]["data_offsets"]
    raw = data[8 + n + lo:8 + n + hi]
    return struct.unpack("<%df" % (len(raw) // 4), raw)
scale, offset = tensor("scaling/feature_scale"), tensor("scaling/feature_offset")
for k, col in enumerate(["a", "b"]):
    x = [f32(r[col]) for r in train]
    mean = math.fsum(x) / len(x)
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in x) / len(x))
    assert abs(scale[k] - 1 / std) <= 1e-6 * abs(1 / std), (col, scale[k], 1 / std)
    assert abs(offset[k] + mean / std) <= 1e-5 * max(1, abs(mean / std)), (col, offset[k], -mean / std)
PY
run 0 evaluate --checkpoint v/latest.safetensors --data d.sfpack
expect out "^verdict +(all 2 scored targets beat persistence|[01] of 2 targets beats? persistence; [ab] does not: )"
# The mean baseline predicts the training rows' mean (the checkpoint's), not the file's.
run 0 evaluate --checkpoint v/latest.safetensors --data d.sfpack --json
python3 - <<'PY' || fail "the mean baseline is not the training part's mean: $(cat out)"
import csv, json, math, struct
rows = list(csv.DictReader(open("d.csv")))
f32 = lambda v: struct.unpack("<f", struct.pack("<f", float(v)))[0]
train, targets = {"a": [], "b": []}, []
for s in ("x", "y"):
    part = [r for r in rows if r["id"] == s]
    cut = len(part) - int(len(part) * 0.25)
    for c in ("a", "b"): train[c] += [f32(r[c]) for r in part[:cut]]
    targets += part[max(cut, 8):]  # every validation row a window of 8 rows (and the row after) reaches
stat = {}
for c in ("a", "b"):
    m = math.fsum(train[c]) / len(train[c])
    stat[c] = (m, math.sqrt(math.fsum((v - m) ** 2 for v in train[c]) / len(train[c])))
want = sum(((f32(r[c]) - stat[c][0]) / stat[c][1]) ** 2 for r in targets for c in ("a", "b")) / (2 * len(targets))
got = json.load(open("out"))["mean_baseline"]
assert abs(got - want) <= 1e-5 * want, (got, want)
PY

# --target change: the model's zero is persistence. Its dense layer zeroed,
# evaluate's loss is the persistence baseline exactly and predict gives the
# last value of each window.
run 0 train "${small[@]}" --val-split 0.25 --target change --checkpoint-dir c
expect err "targets a,b \(all numeric: --targets chooses\), learnt as changes from the window's last row"
zero_dense c/latest.safetensors zero.safetensors
run 0 evaluate --checkpoint zero.safetensors --data d.sfpack --json
python3 - <<'PY' || fail "a zero change is not persistence: $(cat out)"
import json
d = json.load(open("out"))
assert d["target_change"] is True and d["loss"] == d["persistence_baseline"] and d["beats_persistence"] is False, d
PY
run 0 predict --checkpoint zero.safetensors --data d.sfpack --split all -o zero.csv -q
python3 - <<'PY' || fail "predictions of a zero change are not the last values: $(head -3 zero.csv)"
import csv
rows = list(csv.DictReader(open("d.csv")))
for p in csv.DictReader(open("zero.csv")):
    line = int(p["line"])  # the predicted row: the window's last row is the line before
    last = rows[line - 3]
    for col in ("a", "b"):
        assert abs(float(p[col + "_pred"]) - float(last[col])) <= 1e-4 * max(1, abs(float(last[col]))), (p, last)
PY
# A hand-computed case: a series rising 1, 2, 4, 8, ...; window 2, horizon
# 0, no scaling: the change from the last value at row t is 2^t, so a model
# that predicts 0 misses by 2^t and MSE is the mean of 4^t.
{ echo v; for t in $(seq 0 9); do echo $((1 << t)); done; } >pow.csv
run 0 pack pow.csv -o pow.sfpack -q
run 0 train --data pow.sfpack --model lstm:2,dense --window 2 --batch-size 4 --epochs 1 --val-split 0 --norm none \
    --target change --checkpoint-dir pow -q
zero_dense pow/latest.safetensors pow0.safetensors
run 0 evaluate --checkpoint pow0.safetensors --data pow.sfpack --json
python3 - <<'PY' || fail "--target change on 1, 2, 4, ...: $(cat out)"
import json
d = json.load(open("out"))
want = sum(4 ** t for t in range(1, 9)) / 8  # windows end at rows 1..8; the change into row t + 1 is 2^t
assert d["windows"] == 8 and d["loss"] == want == d["persistence_baseline"], (d, want)
PY
run 2 train "${small[@]}" --target change --features a --targets a,b
expect err '--target change: target "b" is not a feature'

# No validation windows: said once, and no val_loss.
run 0 train "${small[@]}" --val-split 0 --checkpoint-dir n --log n.csv
expect err "^validation: none \(--val-split 0\): no val_loss$"
grep -q val_loss err && ! grep -q "^validation:" err && fail "val_loss printed without validation: $(cat err)"
grep -q "val_loss [0-9n]" err && fail "a val_loss on an epoch line: $(cat err)"
[ "$(sed -n 2p n.csv | cut -d, -f3)" = "" ] || fail "the log's val_loss without validation: $(cat n.csv)"
# A validation window's inputs reach back into the training part: a window
# longer than the validation part still validates it (300 and 217 rows, the
# last 30 and 21); only parts of no row (floor(300 x 0.003) = 0) have none.
over small --window 60 --val-split 0.1 --checkpoint-dir long --log long.csv
run 0 train "${args[@]}"
grep -q "^validation: none" err && fail "a window longer than the validation part validates nothing: $(cat err)"
[ "$(sed -n 2p long.csv | cut -d, -f3)" != "" ] || fail "no val_loss with windows longer than the part: $(cat long.csv)"
over small --val-split 0.003 --checkpoint-dir short
run 0 train "${args[@]}"
expect err "^validation: none: the validation part of every series \(its last 0.003 of rows, rounded down\) is empty: no val_loss \(hint: a larger --val-split\)$"

# Without --checkpoint-dir: runs/<stamp>/, said first and last; -q: last only.
over small --epochs 1
run 0 train "${args[@]}"
expect err "^run: checkpoints go to runs/[0-9]{8}-[0-9]{6}/ \(--checkpoint-dir chooses\)$"
head -1 err | grep -q "^run: " || fail "the run's directory is not the first line: $(head -2 err)"
tail -1 err | grep -Eq "checkpoint runs/[0-9]{8}-[0-9]{6}/latest.safetensors$" || fail "last line: $(tail -1 err)"
over small --epochs 1 -q
run 0 train "${args[@]}"
[ "$(wc -l <err)" -eq 1 ] && expect err "^checkpoint runs/[0-9]{8}-[0-9]{6}(-2)?/latest.safetensors$" ||
    fail "-q without --checkpoint-dir: $(cat err)"
[ "$(ls runs/*/latest.safetensors | wc -l)" -eq 2 ] || fail "runs/: $(ls -R runs)"
# A run that fails leaves no empty directory behind.
run 2 train "${small[@]}" --replicas 3
[ "$(ls runs | wc -l)" -eq 2 ] || fail "a failed run left a directory: $(ls runs)"

# --resume takes the run from its checkpoint: --checkpoint-dir alone, and
# a contradicting flag names both values.
run 0 train --checkpoint-dir v --resume --epochs 3 -q
run 2 train --checkpoint-dir v --resume --window 9
expect err "^seqfeed train: error: --window 9 differs from the checkpoint's 8 in v/latest.safetensors"
run 2 train --checkpoint-dir v --resume --target change
expect err "^seqfeed train: error: --target change differs from the checkpoint's value"
finish
