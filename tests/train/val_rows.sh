#!/usr/bin/env bash
# The validation part is rows, not windows: predict --split validation and
# evaluate score the same target rows whatever --window, namely every
# stride-th row of each series' last floor(rows x --val-split) rows (each
# --max-gap segment's, with --max-gap) whose window starts in its series;
# training windows never predict one of them. The rows are computed from
# the CSV in Python, not by seqfeed. meson sets SEQFEED and SRCDIR.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
python3 - <<'PY'
import datetime as dt, math, random
random.seed(25)
with open("d.csv", "w") as f:  # hourly; b shorter than most windows; c has a 5-hour hole
    f.write("site,time,v\n")
    for site, n in (("a", 300), ("b", 20), ("c", 200)):
        t = dt.datetime(2024, 5, 1)
        for i in range(n):
            f.write("%s,%s,%.3f\n" % (site, t.isoformat(), math.sin(i / 6) + random.random() / 5))
            t += dt.timedelta(hours=5 if site == "c" and i == 149 else 1)
PY
run 0 pack d.csv -o d.sfpack --series-column site -q
# The predicted CSV lines of a part, by the rule: per series (or segment cut
# at steps above GAP hours), the last floor(rows x VAL) rows are the
# validation part; a validation target is every STRIDE-th of them from the
# first whose window of SPAN rows starts in the series; a training window
# lies in the training part, starts every STRIDE rows from the first.
cat >ref.py <<'PY'
import csv, datetime as dt, sys
def lines(part, span, stride, val, gap):
    rows = list(csv.DictReader(open("d.csv", newline="")))
    series, prev = [], None
    for k, r in enumerate(rows):
        t = dt.datetime.fromisoformat(r["time"])
        if prev is None or r["site"] != prev[0] or (gap and t - prev[1] > dt.timedelta(hours=gap)):
            series.append([])
        series[-1].append(k + 2)  # the header is line 1
        prev = (r["site"], t)
    out = []
    for s in series:
        cut = len(s) - int(len(s) * val)
        if part == "validation":
            out += [s[t] for t in range(cut, len(s), stride) if t >= span - 1]
        else:
            out += [s[t + span - 1] for t in range(0, cut - span + 1, stride)]
    return out
PY
# check NAME SPLIT SPAN STRIDE GAP: NAME.csv's lines are the part's by the rule.
check() {
    python3 - "$@" <<'PY' || fail "$1: not the $2 part's rows: $(head -3 "$1.csv")"
import csv, sys
exec(open("ref.py").read())
name, part, span, stride, gap = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
got = [int(p["line"]) for p in csv.DictReader(open(name + ".csv", newline=""))]
want = lines(part, span, stride, 0.2, gap)
assert got == want, (len(got), len(want), sorted(set(got) ^ set(want))[:10])
if part == "validation":  # the long series' targets, whatever the window
    assert set(lines(part, 33, stride, 0.2, gap)) <= set(got), "a target of window 32 missing"
PY
}
small=(--data d.sfpack --model lstm:4,dense --epochs 1 --max-steps 2 --batch-size 8 --val-split 0.2 --gpus none -q)
for setting in "plain 1 0" "stride 3 0" "gap 1 2"; do
    read -r name stride gap <<<"$setting"
    opts=(--stride "$stride")
    [ "$gap" = 0 ] || opts+=(--max-gap "${gap}h")
    for w in 8 24 32; do
        span=$((w + 1))
        run 0 train "${small[@]}" "${opts[@]}" --window "$w" --checkpoint-dir "ck-$name-$w"
        run 0 predict --checkpoint "ck-$name-$w/latest.safetensors" --data d.sfpack --split validation --gpus none \
            -o "val-$name-$w.csv" -q
        check "val-$name-$w" validation "$span" "$stride" "$gap"
        run 0 evaluate --checkpoint "ck-$name-$w/latest.safetensors" --data d.sfpack --gpus none --json
        n=$(python3 -c 'import json, sys; print(json.load(open("out"))["windows"])')
        want=$(python3 -c "exec(open('ref.py').read()); print(len(lines('validation', $span, $stride, 0.2, $gap)))")
        [ "$n" = "$want" ] || fail "$name, window $w: evaluate scored $n windows, the validation part has $want targets"
        run 0 predict --checkpoint "ck-$name-$w/latest.safetensors" --data d.sfpack --split train --gpus none \
            -o "train-$name-$w.csv" -q
        check "train-$name-$w" train "$span" "$stride" "$gap"
    done
    # The series long enough for every window: the same rows at 8, 24 and 32.
    for w in 24 32; do
        python3 - "val-$name-8.csv" "val-$name-$w.csv" <<'PY' || fail "$name: window $w validates other rows than 8"
import csv, sys
a, b = ({p["line"] for p in csv.DictReader(open(f)) if p["site"] != "b"} for f in sys.argv[1:])
assert a == b and a, (len(a), len(b))
PY
    done
done
# The short series: its 4 validation rows with window 8 (reaching back 8
# rows), none with 24 (it has 20 rows).
[ "$(grep -c '^b,' val-plain-8.csv)" = 4 ] || fail "series b's validation rows at window 8: $(grep '^b,' val-plain-8.csv)"
grep -q '^b,' val-plain-24.csv && fail "series b holds no window of 25 rows: $(grep '^b,' val-plain-24.csv)"
# Too short for the stride: 34 rows, the last 6 for validation (rows 28..33),
# targets 28 and 31 at --stride 3; a window of 33 rows needs a target at
# row 32 or later. The message says the rule and how far the series reaches.
head -n 35 d.csv >short.csv
run 0 pack short.csv -o short.sfpack --series-column site -q
run 1 evaluate --checkpoint ck-stride-32/latest.safetensors --data short.sfpack --gpus none
expect err "short.sfpack: no window fits in the validation part: its targets are the last 20% of each series' rows \(rounded down\), every stride-th from the first, and a window's inputs may reach back into the training part, not before the series' first row; the checkpoint's windows span 33 rows, more than the 32 rows any series has from its first row to a target \(hint: --split all\)"
run 0 evaluate --checkpoint ck-stride-32/latest.safetensors --data short.sfpack --gpus none --split all
expect out "^windows +1 "
# A run without validation has no such part: said as the option it was.
run 0 train --data d.sfpack --model lstm:4,dense --epochs 1 --max-steps 2 --batch-size 8 --gpus none -q --window 8 \
    --val-split 0 --checkpoint-dir ck-none
for cmd in predict evaluate; do
    run 2 $cmd --checkpoint ck-none --data d.sfpack --split validation --gpus none -q
    expect err "d.sfpack: no validation part: the checkpoint's run trained with --val-split 0, on every row \(hint: --split all\)"
done
finish
