#!/usr/bin/env bash
# How good the model is, per target, against honest baselines: evaluate's
# per-target RMSE and MAE of the model, persistence, the training mean and
# the seasonal naive forecast, recomputed from the CSV by Python
# (score_check.py; score_pandas.py too where pandas is installed); the
# verdict per target and an overall line that names the target that loses;
# the season from the time column (7 for daily rows, 24 for hourly ones),
# --season, none without a time column; evaluate --json's per_target; the
# same table at train's end.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
check="$SRCDIR/tests/train/score_check.py"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
# Daily rows of two series: alt alternates its sign (persistence is as far
# off as can be, the mean is better), walk drifts smoothly (persistence
# misses by the drift, a model of values by far more), wk repeats a weekly
# cycle exactly (the seasonal naive forecast is exact). Some cells of alt
# are empty (pack --missing ffill): never scored. Series p has a gap of 10
# days, which --max-gap 1d cuts.
python3 - <<'PY'
import datetime, random
random.seed(3)
with open("d.csv", "w") as f, open("h.csv", "w") as h:
    f.write("id,date,alt,walk,wk\n")
    for s, n, start in (("p", 320, 0), ("q", 260, 40)):
        w = 50.0 if s == "p" else -20.0
        for i in range(n):
            day = start + i + (10 if s == "p" and i >= 150 else 0)
            d = datetime.date(2020, 1, 1) + datetime.timedelta(days=day)
            alt = "%.4f" % ((1 if i % 2 == 0 else -1) * (4 + random.random()))
            if i % 37 == 5:
                alt = ""
            w += 0.3 + random.gauss(0, 0.02)
            f.write("%s,%s,%s,%.4f,%d\n" % (s, d.isoformat(), alt, w, [3, 1, 4, 1, 5, 9, 2][day % 7]))
    h.write("time,load,alt\n")  # hourly: a daily cycle of 24 rows
    for i in range(400):
        t = datetime.datetime(2021, 3, 1) + datetime.timedelta(hours=i)
        h.write("%s,%.3f,%d\n" % (t.isoformat(), [i % 24 * 1.5, 7.0][i % 24 == 3], 1 if i % 2 else -1))
PY
run 0 pack d.csv -o d.sfpack --series-column id --missing ffill -q
run 0 pack d.csv -o notime.sfpack --series-column id --missing ffill --time-column none --drop-columns date -q
run 0 pack h.csv -o h.sfpack -q
common=(--model lstm:8,dense --window 4 --batch-size 16 --epochs 3 --seed 5 --val-split 0.25 --gpus none)
args=(--series id --time date --targets alt,walk,wk --val-split 0.25)

# A model of values: alt beats persistence, walk does not; train's end says so.
run 0 train --data d.sfpack "${common[@]}" --checkpoint-dir v
cp err train.err
expect err "^validation part, per target, with the final weights"
expect err "^verdict +[12] of 3 targets beats? persistence; walk does not: [0-9.]+x its RMSE \(hint: train with --target change"
expect err "^season +7 rows, a week of 1d rows \(from the time column; --season N overrides\)$"
run 0 evaluate --checkpoint v/latest.safetensors --data d.sfpack --json
cp out v.json
run 0 predict --checkpoint v/latest.safetensors --data d.sfpack --split validation -o v.csv -q
python3 "$check" d.csv v.csv v.json "${args[@]}" --season 7 >verdicts ||
    fail "evaluate's per-target scores differ from the CSV's: $(cat v.json)"
grep -q "alt:beats walk:loses" verdicts || fail "alt beats persistence and walk does not: $(cat verdicts)"
python3 -c "import json; d = json.load(open('v.json')); t = {x['name']: x for x in d['per_target']}
assert t['wk']['rmse']['seasonal'] == 0 and t['wk']['mae']['seasonal'] == 0, t['wk']
assert d['beats_persistence'] is False and d['imputed_targets'] > 0, d" ||
    fail "the weekly cycle's seasonal forecast is not exact, or the overall verdict hides walk: $(cat v.json)"
if python3 -c "import pandas" 2>/dev/null; then
    python3 "$SRCDIR/tests/train/score_pandas.py" d.csv v.csv v.json 7 ||
        fail "evaluate's per-target scores differ from pandas': $(cat v.json)"
else
    echo "pandas is not installed: its recomputation is skipped"
fi
run 0 evaluate --checkpoint v/latest.safetensors --data d.sfpack
cp out v.txt
expect out "^verdict +[12] of 3 targets beats? persistence; walk does not: [0-9.]+x its RMSE"
expect out "^  walk +RMSE "
expect out "^ +does not beat persistence: [0-9.]+x its RMSE; against the seasonal naive forecast: "
expect out "^ +beats persistence: RMSE [0-9.]+% below"
# train's end table is evaluate's on the same (final) weights.
python3 - <<'PY' || fail "train's end table differs from evaluate's: $(cat train.err) $(cat v.txt)"
import re
def table(path):
    lines = open(path).read().splitlines()
    a = next(i for i, l in enumerate(lines) if l.startswith("season "))
    b = next(i for i, l in enumerate(lines) if l.startswith("verdict "))
    return lines[a:b + 1]
t, e = table("train.err"), table("v.txt")
assert len(t) == len(e) == 1 + 2 + 3 * 3 + 1, (t, e)
for x, y in zip(t, e):
    nx, ny = re.findall(r"[0-9.]+(?:e[-+]?\d+)?", x), re.findall(r"[0-9.]+(?:e[-+]?\d+)?", y)
    assert re.sub(r"[0-9.]+(e[-+]?\d+)?", "#", x) == re.sub(r"[0-9.]+(e[-+]?\d+)?", "#", y), (x, y)
    for a, b in zip(nx, ny):
        if a.strip(".") and b.strip("."):
            assert abs(float(a) - float(b)) <= 1e-3 * max(1, abs(float(b))), (x, y)
PY

# A model of changes (--target change), all of every series (the first
# targets have no row a season before), and --max-gap: the seasonal row
# stays in the target's segment.
run 0 train --data d.sfpack "${common[@]}" --target change --max-gap 1d --checkpoint-dir c -q
run 0 evaluate --checkpoint c/latest.safetensors --data d.sfpack --split all --json
cp out c.json
run 0 predict --checkpoint c/latest.safetensors --data d.sfpack --split all -o c.csv -q
python3 "$check" d.csv c.csv c.json "${args[@]}" --season 7 --max-gap-days 1 >/dev/null ||
    fail "--target change, --split all, --max-gap: $(cat c.json)"
run 0 evaluate --checkpoint c/latest.safetensors --data d.sfpack --split all
expect out "the seasonal forecast on the [0-9]+ with a row one season before in their series"

# --season overrides; one not longer than the horizon would read rows after
# the window's end: none, and why.
run 0 evaluate --checkpoint v/latest.safetensors --data d.sfpack --season 14 --json
cp out s14.json
python3 "$check" d.csv v.csv s14.json "${args[@]}" --season 14 >/dev/null || fail "--season 14: $(cat s14.json)"
run 0 evaluate --checkpoint v/latest.safetensors --data d.sfpack --season 1
expect out "^season +none: the season, 1 row \(--season\), is not longer than the horizon \(1 row\): the value one season before the target is not before the window's last input row \(hint: a --season above 1\)$"
grep -q "^baseline season" out && fail "a seasonal baseline with --season 1: $(cat out)"
# A season longer than every series: no seasonal forecast at all, said in
# words (not a 'nan'), with the hint.
run 0 evaluate --checkpoint v/latest.safetensors --data d.sfpack --season 100000
expect out "^baseline season  n/a +no target has a row one season before it in its series \(hint: a smaller --season\)$"
expect out "no seasonal forecast: none has a row one season before in its series\)$"
grep -qi nan out && fail "--season longer than the series printed a nan: $(cat out)"
run 2 evaluate --checkpoint v/latest.safetensors --data d.sfpack --season 0
expect err "--season 0: expected an integer from 1 to"
run 2 train --data d.sfpack --season -3
expect err "--season -3: expected an integer from 1 to"

# No time column: no seasonal baseline, said once with the hint; --season gives one.
run 0 train --data notime.sfpack "${common[@]}" --checkpoint-dir n
[ "$(grep -c "no time column" err)" -eq 1 ] || fail "train without a time column: $(cat err)"
expect err "^season +none: the file has no time column to find one in \(hint: --season N, the rows one season spans\)$"
run 0 evaluate --checkpoint n/latest.safetensors --data notime.sfpack --json
cp out n.json
run 0 predict --checkpoint n/latest.safetensors --data notime.sfpack --split validation -o n.csv -q
python3 "$check" d.csv n.csv n.json "${args[@]}" --season 0 >/dev/null || fail "no time column: $(cat n.json)"
run 0 evaluate --checkpoint n/latest.safetensors --data notime.sfpack --season 7 --json
cp out n7.json
python3 "$check" d.csv n.csv n7.json "${args[@]}" --season 7 >/dev/null || fail "--season 7: $(cat n7.json)"
run 0 train --data notime.sfpack "${common[@]}" --season 7 -q --checkpoint-dir n7

# Hourly rows: a day is 24 rows.
run 0 train --data h.sfpack "${common[@]}" --checkpoint-dir h
expect err "^season +24 rows, a day of 1h rows \(from the time column; --season N overrides\)$"
run 0 evaluate --checkpoint h/latest.safetensors --data h.sfpack --json
cp out h.json
run 0 predict --checkpoint h/latest.safetensors --data h.sfpack --split validation -o h.pred.csv -q
python3 "$check" h.csv h.pred.csv h.json --time time --targets load,alt --val-split 0.25 --season 24 >/dev/null ||
    fail "hourly: $(cat h.json)"
python3 -c "import json; t = json.load(open('h.json'))['per_target'][0]; assert t['rmse']['seasonal'] == 0, t" ||
    fail "the daily cycle's seasonal forecast is not exact: $(cat h.json)"
finish
