#!/usr/bin/env bash
# Cross-validation (train --folds K): every fold's checkpoint is kept in
# DIR/fold-k; the rows each fold's checkpoint validates and trains on are
# those of scikit-learn's TimeSeriesSplit on each series, computed here
# naively from the CSV; DIR/folds.json holds per fold what seqfeed evaluate
# says of that fold's checkpoint on its validation part, and per target the
# mean, std, min and max of those; the progress lines name the fold; a run
# stopped by --max-steps and one killed in the middle of a fold resume and
# end byte for byte as the run in one go, the folds done not trained again;
# --early-stop stops each fold on its own val_loss; the options --folds
# cannot take, K < 2 and too few rows for K folds are refused, naming why.
set -u
: "${SEQFEED:?SEQFEED must name the seqfeed binary}"
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"
tmp=$(mktemp -d /tmp/sffolds.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

# Two series of unequal lengths, hourly, grouped: a row's CSV line is 2 + its row.
python3 -c '
import math
print("time,site,x,y")
for site, n in (("a", 701), ("b", 523)):
    for i in range(n):
        print("%d,%s,%.5f,%.5f" % (1577836800 + 3600 * i, site, math.sin(i / 4) + 0.01 * (i % 7),
                                   math.cos(i / 9) + 0.3 * math.sin(i / 4)))' >c.csv
run 0 pack c.csv -o c.sfpack --series-column site --time-column time --time-unit s -q
opts=(--data c.sfpack --window 8 --batch-size 16 --model lstm:8,dense --epochs 2 --seed 3)

# --- Three folds in one go.
run 0 train "${opts[@]}" --folds 3 --checkpoint-dir cv --report cv.html
for k in 1 2 3; do
    for f in latest best epoch-0001 epoch-0002; do
        [ -f "cv/fold-$k/$f.safetensors" ] || fail "cv/fold-$k/$f.safetensors is missing: $(ls -R cv)"
    done
    [ "$(meta cv/fold-$k/latest.safetensors folds)" = 3 ] && [ "$(meta cv/fold-$k/latest.safetensors fold)" = "$k" ] ||
        fail "cv/fold-$k's checkpoint does not say fold $k of 3"
    [ -f "cv/fold-$k/log.csv" ] && [ -f "cv/fold-$k/report.html" ] || fail "fold $k's log or report is missing"
    expect err "^fold $k/3 - epoch 2/2 - [0-9]+ steps - .* - val_loss [0-9.]+"
done
expect err "^cross-validation: 3 of 3 folds scored"
expect err "^  x +model +[0-9.e-]+ +[0-9.e-]+"
expect err "^cross-validation: 3 folds in [0-9.]+ s; summary cv/folds.json$"
grep -q '<th>fold</th><td style="text-align:left">2 of 3 ' cv/fold-2/report.html || fail "fold 2's report does not say which fold it is"
grep -q 'id="summary"' cv.html && grep -q 'href="cv/fold-2/report.html"' cv.html ||
    fail "the cross-validation page lacks its summary or a fold's link: $(cat cv.html)"

# Each fold's rows against TimeSeriesSplit, computed from the CSV: predict on
# the fold's checkpoint, its validation part and its training part.
for k in 1 2 3; do
    run 0 predict --checkpoint cv/fold-$k --data c.sfpack --split validation -o v$k.csv -q
    run 0 predict --checkpoint cv/fold-$k --data c.sfpack --split train -o t$k.csv -q
done
python3 - <<'PY' || fail "a fold's rows are not TimeSeriesSplit's"
import csv
K, span = 3, 9  # (window - 1) x sampling rate + horizon + 1
sizes = {"a": 701, "b": 523}
first = {"a": 0, "b": 701}
bad = []
for k in range(1, K + 1):
    want_v, want_t = set(), set()
    for s, n in sizes.items():
        t = n // (K + 1)  # as sklearn: test_size = n_samples // (n_splits + 1)
        test = n - K * t + (k - 1) * t
        want_v |= {(s, i) for i in range(test, test + t)}
        # a training window's target: every row of the part its window fits before
        want_t |= {(s, i) for i in range(span - 1, test)}
    for name, want in (("v%d.csv" % k, want_v), ("t%d.csv" % k, want_t)):
        got = {(r["site"], int(r["line"]) - 2 - first[r["site"]]) for r in csv.DictReader(open(name))}
        if got != want:
            bad.append("%s: %d rows, %d expected; extra %s, missing %s" % (
                name, len(got), len(want), sorted(got - want)[:3], sorted(want - got)[:3]))
print("\n".join(bad))
raise SystemExit(1 if bad else 0)
PY

# folds.json: each fold's scores are evaluate's on its checkpoint, and the
# summary is their mean, std (ddof 0), min and max.
for k in 1 2 3; do
    run 0 evaluate --checkpoint cv/fold-$k --data c.sfpack --json -q
    cp out e$k.json
done
python3 - <<'PY' || fail "folds.json does not match evaluate on each fold's checkpoint"
import json, math
cv = json.load(open("cv/folds.json"))
bad = []
def close(a, b):
    return (a is None and b is None) or (a is not None and b is not None and abs(a - b) <= 1e-7 * max(abs(a), abs(b), 1e-30))
assert cv["folds"] == 3 and cv["scored"] == 3 and cv["season"] == 24, cv
for k, f in enumerate(cv["per_fold"], 1):
    e = json.load(open("e%d.json" % k))
    if f["checkpoint"] != "cv/fold-%d" % k or f["windows"] != e["windows"]:
        bad.append("fold %d: %s, %s windows (evaluate: %s)" % (k, f["checkpoint"], f["windows"], e["windows"]))
    for key in ("loss", "mean_baseline", "persistence_baseline", "seasonal_baseline"):
        if not close(f[key], e[key]):
            bad.append("fold %d %s: %r, evaluate %r" % (k, key, f[key], e[key]))
    for ft, et in zip(f["per_target"], e["per_target"]):
        for key in ("model", "persistence", "mean", "seasonal"):
            if ft["name"] != et["name"] or not close(ft[key], et[key]):
                bad.append("fold %d %s %s: %r, evaluate %r" % (k, ft["name"], key, ft[key], et[key]))
        for key in ("rmse", "mae"):
            for fc in ft[key]:
                if not close(ft[key][fc], et[key][fc]):
                    bad.append("fold %d %s %s %s" % (k, ft["name"], key, fc))
for j, t in enumerate(cv["per_target"]):
    for fc in ("model", "persistence", "mean", "seasonal"):
        v = [f["per_target"][j][fc] for f in cv["per_fold"]]
        m = sum(v) / len(v)
        want = {"mean": m, "std": math.sqrt(sum((x - m) ** 2 for x in v) / len(v)), "min": min(v), "max": max(v)}
        for s, w in want.items():
            if not close(t[fc][s], w):
                bad.append("%s %s %s: %r, from the folds %r" % (t["name"], fc, s, t[fc][s], w))
    beats = sum(f["per_target"][j]["beats_persistence"] for f in cv["per_fold"])
    if t["folds_beating_persistence"] != beats:
        bad.append("%s beats persistence in %d folds, says %d" % (t["name"], beats, t["folds_beating_persistence"]))
print("\n".join(bad))
raise SystemExit(1 if bad else 0)
PY

# --- In parts: --max-steps counts the steps of every fold; it stops inside
# fold 2, the summary so far says so, and --resume goes on there and ends as
# the run in one go (fold 1 is not trained again: its files stay as they were).
steps1=$(meta cv/fold-1/latest.safetensors step)
run 0 train "${opts[@]}" --folds 3 --checkpoint-dir parts --max-steps $((steps1 + 5)) --report parts.html --tensorboard tbp
expect err "^stopped in fold 2 of 3 after $((steps1 + 5)) steps in all: seqfeed train --checkpoint-dir parts --resume"
python3 -c 'import json,sys; c=json.load(open("parts/folds.json")); sys.exit(c["scored"] != 1 or [f["scored"] for f in c["per_fold"]] != [True, False, False])' ||
    fail "the summary of a run stopped in fold 2: $(cat parts/folds.json)"
[ "$(meta parts/fold-2/latest.safetensors step)" = 5 ] || fail "fold 2 did not stop after 5 steps"
before=$(stat -c %Y.%s parts/fold-1/latest.safetensors parts/fold-1/best.safetensors)
sleep 1
mkdir elsewhere && cd elsewhere || exit 1
run 0 train --checkpoint-dir ../parts --resume --report ../parts.html
cd .. || exit 1
expect elsewhere/err "^fold 1/3 - resume: the run has done its 2 epochs: nothing to do"
expect elsewhere/err "^fold 2/3 - resume: epoch 1, step 5 of it"
[ "$before" = "$(stat -c %Y.%s parts/fold-1/latest.safetensors parts/fold-1/best.safetensors)" ] ||
    fail "the resume wrote fold 1's checkpoints again"
# TensorBoard: a run per fold, TB/fold-k; the resume (from another directory)
# adds a file to fold 2's and starts fold 3's, and leaves fold 1's alone.
[ "$(ls tbp/fold-1/train | wc -l) $(ls tbp/fold-2/train | wc -l) $(ls tbp/fold-3/train | wc -l)" = "1 2 1" ] ||
    fail "the folds' TensorBoard runs: $(find tbp)"
# (Resumed from elsewhere, its checkpoints name the data by the path that
# found it: the tensors are compared, bit for bit, and every setting.)
for k in 1 2 3; do
    for f in cv/fold-$k/*.safetensors; do
        same "$f" "parts/${f#cv/}" 0 || fail "the run in parts differs from the run in one go: ${f#cv/}"
        for key in step epoch best_epoch best_val_loss since_improved folds fold val_split window; do
            [ "$(meta "$f" $key)" = "$(meta "parts/${f#cv/}" $key)" ] || fail "${f#cv/}: $key differs"
        done
    done
done
same_summary() {
    python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for c in (a, b):
    for f in c["per_fold"]:
        f.pop("checkpoint")
sys.exit(a != b)
PY
}
same_summary cv/folds.json parts/folds.json || fail "the summaries differ: $(cat cv/folds.json) vs $(cat parts/folds.json)"

# --- Killed (SIGKILL) in the middle of fold 2: the resume goes on from its
# last checkpoint and ends as the run in one go. A slower model, so that the
# kill lands inside the fold.
big=(--data c.sfpack --window 48 --batch-size 8 --model lstm:48,lstm:48,dense --epochs 1 --seed 4 --folds 3
     --checkpoint-every 10 -q)
run 0 train "${big[@]}" --checkpoint-dir whole
"$SEQFEED" train "${big[@]}" --checkpoint-dir killed 2>killed.err &
pid=$!
while kill -0 $pid 2>/dev/null && [ ! -f killed/fold-2/latest.safetensors ]; do sleep 0.01; done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
[ -f killed/fold-2/latest.safetensors ] && [ ! -e killed/fold-3 ] ||
    fail "the kill did not land in fold 2 (too fast a machine?): $(ls -R killed)"
run 0 train --checkpoint-dir killed --resume -q
for k in 1 2 3; do
    for f in whole/fold-$k/*.safetensors; do
        same_bytes "$f" "killed/${f#whole/}" || fail "the run killed in fold 2 differs from the run in one go: ${f#whole/}"
    done
done
same_summary whole/folds.json killed/folds.json || fail "the killed run's summary differs"

# --- --early-stop: each fold stops on its own val_loss, one evaluation
# without an improvement after its lowest.
run 0 train --data c.sfpack --window 8 --batch-size 16 --model lstm:16,dense --seed 5 --lr 0.05 --epochs 12 \
    --early-stop 1 --folds 2 --checkpoint-dir es -q
python3 - <<'PY' || fail "a fold did not stop on its own val_loss"
import csv, sys
for k in (1, 2):
    v = [float(r["val_loss"]) for r in csv.DictReader(open("es/fold-%d/log.csv" % k))]
    low = min(range(len(v)), key=v.__getitem__)
    if len(v) < 12 and len(v) - 1 - low != 1:
        sys.exit("fold %d stopped after %d epochs, its lowest val_loss at %d: %s" % (k, len(v), low + 1, v))
    if len(v) == 12 and low < 10:
        sys.exit("fold %d trained every epoch past a rise: %s" % (k, v))
PY

# --- What --folds refuses.
run 2 train "${opts[@]}" --folds 1 --checkpoint-dir e1
expect err "--folds 1: cross-validation trains at least 2 folds"
for bad in "--val-split 0.2" "--log l.csv" "--trace t.json"; do
    run 2 train "${opts[@]}" --folds 3 --checkpoint-dir e2 $bad
    expect err "^seqfeed train: error: ${bad%% *} with --folds 3: .*\(hint: leave ${bad%% *} out, or train without --folds\)"
done
over opts --window 48
run 2 train "${args[@]}" --folds 20 --checkpoint-dir e3
expect err "--folds 20: fold 1 has 0 training windows, fewer than one global batch of 16.*the longest series has 701 rows. A series of at least 1344 rows \(21 x \(a window's span of 49 rows .*\(hint: fewer --folds, or a smaller --batch-size, --window\)"
[ ! -e e3/fold-1 ] || fail "a refused cross-validation left a fold behind"
run 2 train "${opts[@]}" --folds 3 --checkpoint-dir cv
expect err "--checkpoint-dir cv holds a cross-validation's folds \(cv/fold-1\).*--resume continues it"
# A new run of one validation tail there would mix with the folds too (and
# predict --checkpoint cv would take its best): refused, the folds untouched.
run 2 train "${opts[@]}" --checkpoint-dir cv
expect err "--checkpoint-dir cv holds a cross-validation's folds \(cv/fold-1\).*--resume continues it"
[ ! -e cv/latest.safetensors ] || fail "a run of one validation tail was written beside the folds"
# A fold's own directory resumed alone: pointed to the folds' directory.
run 2 train --checkpoint-dir cv/fold-2 --resume
expect err "^seqfeed train: error: cv/fold-2/latest.safetensors is fold 2 of 3 of a cross-validation .*\(hint: --checkpoint-dir cv --resume"
run 2 train --checkpoint-dir cv --resume --folds 4
expect err "--folds 4 differs from the checkpoint's 3 in cv/fold-1/latest.safetensors"
run 2 evaluate --checkpoint cv --data c.sfpack
expect err "--checkpoint cv holds a cross-validation's folds \(train --folds\), each a run of its own: expected one of them \(hint: --checkpoint cv/fold-1, or another fold; the folds' summary is cv/folds.json\)"
mkdir -p early/fold-1  # a cross-validation killed before its first checkpoint
run 2 train --data c.sfpack --checkpoint-dir early --resume
expect err "--checkpoint-dir early holds a cross-validation's first fold \(early/fold-1\) and no checkpoint yet \(hint: --folds K"
run 0 train "${opts[@]}" --checkpoint-dir one -q
run 2 train --checkpoint-dir one --resume --folds 3
expect err "--folds 3 differs from the checkpoint's \(none\) in one/latest.safetensors"

finish
