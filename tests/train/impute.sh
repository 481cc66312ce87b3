#!/usr/bin/env bash
# Values pack imputed (--missing ffill) are never presented or scored as
# observed: predict --with-actual leaves exactly the CSV's empty cells
# empty, evaluate and train's val_loss leave those target values out and
# say how many, and the counts, the loss and the per-target MSE all match
# what is computed here from the CSV and the predictions alone. Two
# targets, so that one can be imputed where the other is observed; two
# series; plain targets and --target change.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
python3 - <<'PY'
import math, random
random.seed(24)
with open("g.csv", "w") as f:
    f.write("site,a,b\n")
    for s, n in (("north", 230), ("south", 170)):
        for i in range(n):
            a = 5 + 3 * math.sin(i / 6) + random.random()
            b = 2 * math.cos(i / 9) + 0.5 * random.random()
            # Gaps in each column apart and together, a run of four, never a series' first row.
            miss_a = i > 0 and (i % 13 == 5 or 140 <= i < 144)
            miss_b = i > 0 and (i % 11 == 7 or i % 13 == 5)
            f.write("%s,%s,%s\n" % (s, "" if miss_a else "%.3f" % a, "" if miss_b else "%.3f" % b))
PY
W=5 H=1 VAL=0.3
# Small chunks: windows and their targets cross chunk boundaries.
run 0 pack g.csv -o g.sfpack --series-column site --missing ffill --chunk-rows 37 -q
run 0 inspect --json g.sfpack
# Counts from the CSV: what the reference computations below share.
cat > ref.py <<'PY'
import csv, json, sys
W, H, VAL = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
rows = list(csv.DictReader(open("g.csv", newline="")))
for k, r in enumerate(rows): r["line"] = k + 2
series = {}
for r in rows: series.setdefault(r["site"], []).append(r)
def targets(part):
    """The rows windows predict: in the whole series from the first a window reaches, or its validation part (the
    last floor(n x VAL) rows) but those before the first a window reaches (its inputs may be training rows)."""
    out = []
    for rs in series.values():
        lo = len(rs) - int(len(rs) * VAL) if part == "validation" else 0
        out += rs[max(lo, W - 1 + H):]
    return out
PY
python3 - $W $H $VAL <<'PY' || fail "inspect's imputed counts: $(cat out)"
exec(open("ref.py").read())
d = json.load(open("out"))
want = {c: sum(r[c] == "" for r in rows) for c in ("a", "b")}
got = {c["name"]: c["imputed"] for c in d["columns"]}
assert got == want, (got, want)
PY
run 0 verify g.sfpack
# unpack gives the empty cells back empty, the others as they were.
run 0 unpack g.sfpack -o back.csv -q
python3 - <<'PY' || fail "unpack after --missing ffill: $(head -3 back.csv)"
import csv
a, b = list(csv.DictReader(open("g.csv"))), list(csv.DictReader(open("back.csv")))
assert len(a) == len(b)
for x, y in zip(a, b):
    for c in ("a", "b"):
        assert (x[c] == "") == (y[c] == ""), (x, y)
        assert x[c] == "" or float(x[c]) == float(y[c]), (x, y)
PY

for mode in value change; do
    ck=ck-$mode
    run 0 train --data g.sfpack --targets a,b --model lstm:8,dense --window $W --horizon $H --val-split $VAL \
        --epochs 2 --batch-size 16 --target $mode --checkpoint-dir $ck --log $mode.csv
    cp err train.err
    # val_loss's count, and evaluate's, against the CSV's empty cells among the validation targets.
    python3 - $W $H $VAL > want <<'PY'
exec(open("ref.py").read())
t = targets("validation")
print(sum(r[c] == "" for r in t for c in ("a", "b")), 2 * len(t))
PY
    read -r nimp nall < want
    [ "$nimp" -gt 5 ] || fail "the test data should put imputed targets in the validation part ($nimp)"
    expect train.err "^validation: $nimp of $nall target values were imputed by pack --missing ffill and are not scored$"
    run 0 evaluate --checkpoint $ck/latest.safetensors --data g.sfpack --split validation --json
    cp out eval.json
    run 0 evaluate --checkpoint $ck/latest.safetensors --data g.sfpack --split validation
    expect out "^imputed +$nimp of $nall target values were imputed by pack --missing ffill and are not scored$"
    run 0 predict --checkpoint $ck/latest.safetensors --data g.sfpack --split validation --with-actual -o val.csv
    expect err "^note: $nimp of $nall target values were imputed by pack --missing ffill: their actual is left empty$"
    run 0 predict --checkpoint $ck/latest.safetensors --data g.sfpack --with-actual -o all.csv -q
    python3 - $W $H $VAL $mode <<'PY' || fail "$mode: imputed targets presented or scored as observed"
import csv, json, sys
exec(open("ref.py").read())
by_line = {r["line"]: r for r in rows}
# predict --with-actual: empty exactly where the CSV was, else the CSV's value.
for name, part in (("all.csv", "all"), ("val.csv", "validation")):
    pred = list(csv.DictReader(open(name)))
    assert [int(p["line"]) for p in pred] == [r["line"] for r in targets(part)], name
    for p in pred:
        src = by_line[int(p["line"])]
        for c in ("a", "b"):
            assert (p[c] == "") == (src[c] == ""), (name, p, src)
            assert p[c] == "" or float(p[c]) == float(src[c]), (name, p, src)
# evaluate: the counts, and each target's MSE in data units over the observed
# values only, recomputed from the predictions.
ev = json.load(open("eval.json"))
pred = list(csv.DictReader(open("val.csv")))
nimp = sum(p[c] == "" for p in pred for c in ("a", "b"))
assert ev["imputed_targets"] == nimp and ev["target_values"] == 2 * len(pred) and ev["windows"] == len(pred), ev
for c in ("a", "b"):
    obs = [(float(p[c + "_pred"]) - float(p[c])) ** 2 for p in pred if p[c] != ""]
    want = sum(obs) / len(obs)
    assert abs(ev["target_mse"][c] - want) <= 1e-5 * want, (c, ev["target_mse"][c], want)
    # The test can tell: scoring the filled values too gives another number.
    for rs in series.values():  # ffill within each series, as pack does
        last = None
        for r in rs:
            last = float(r[c]) if r[c] != "" else last
            r["filled_" + c] = last
    every = [(float(p[c + "_pred"]) - by_line[int(p["line"])]["filled_" + c]) ** 2 for p in pred]
    assert abs(sum(every) / len(every) - want) > 1e-4 * want, (c, "imputed values change nothing here")
# val_loss of the last epoch is evaluate's loss on the same windows (both over observed values).
log = list(csv.DictReader(open(sys.argv[4] + ".csv")))
val = float(log[-1]["val_loss"])
assert abs(val - ev["loss"]) <= 1e-5 * ev["loss"], (val, ev["loss"])
print(sys.argv[4], "ok:", nimp, "imputed of", 2 * len(pred), "validation targets; val_loss", val, "= evaluate", ev["loss"])
PY
done

# Two ranks take turns at the validation batches and sum: the same count and val_loss.
if mpirun --version 2>/dev/null | grep -q 'Open MPI' && "$SEQFEED" info | grep -q 'built with MPI'; then
    timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 "$SEQFEED" train --data g.sfpack --targets a,b \
        --model lstm:8,dense --window $W --horizon $H --val-split $VAL --epochs 1 --batch-size 16 \
        --checkpoint-dir ck-mpi --log mpi.csv >out 2>err || fail "train on 2 ranks: $(cat err)"
    expect err "^validation: $nimp of $nall target values were imputed by pack --missing ffill and are not scored$"
    [ "$(grep -c '^validation: .* imputed' err)" = 1 ] || fail "the count said by more than rank 0: $(cat err)"
    run 0 evaluate --checkpoint ck-mpi/latest.safetensors --data g.sfpack --split validation --json
    python3 -c '
import csv, json
val, ev = float(list(csv.DictReader(open("mpi.csv")))[-1]["val_loss"]), json.load(open("out"))["loss"]
assert abs(val - ev) <= 1e-5 * ev, (val, ev)' || fail "val_loss on 2 ranks differs from evaluate's loss"
fi
finish
