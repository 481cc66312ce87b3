#!/usr/bin/env bash
# What train and evaluate say when the data cannot give what was asked:
# --max-gap leaving no batch (it is named, with a value that keeps one),
# a window too long for the data (its span named; the options that can
# still shrink it), predict and evaluate with no window that fits (why),
# --horizon 0 (refused by every command that takes it: its target is an
# input), a baseline of loss 0 (no "infx"), constant columns (named), and
# time features that are constant over the file or its training rows
# (refused, naming the resolution or the times). meson sets SEQFEED and SRCDIR.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
python3 - <<'PY'
import datetime as dt, random
random.seed(7)
with open("daily.csv", "w") as f:  # README's weather example, daily: two cities
    f.write("location,date,temp,weather\n")
    for city in ["paris", "berlin"]:
        d = dt.date(2012, 1, 1)
        for i in range(200):
            f.write("%s,%s,%.1f,%s\n" % (city, d.isoformat(), 10 * random.random(), random.choice(["sun", "rain"])))
            d += dt.timedelta(days=1)
with open("hourly.csv", "w") as f:  # hourly, a 3-hour hole every 50 rows
    f.write("site,time,load\n")
    for s in ["a", "b"]:
        t = dt.datetime(2021, 3, 1)
        for i in range(200):
            f.write("%s,%s,%.3f\n" % (s, t.isoformat(), random.random()))
            t += dt.timedelta(hours=3 if i % 50 == 49 else 1)
with open("weekly.csv", "w") as f:  # one series of Saturdays
    f.write("date,v\n")
    d = dt.date(2000, 1, 1)
    for i in range(120):
        f.write("%s,%.3f\n" % (d.isoformat(), random.random()))
        d += dt.timedelta(days=7)
with open("epoch.csv", "w") as f:  # daily epoch seconds at 06:00 UTC
    f.write("t,v\n")
    for i in range(120): f.write("%d,%.3f\n" % (1600000000 // 86400 * 86400 + 6 * 3600 + i * 86400, random.random()))
with open("flat.csv", "w") as f:  # two constant columns among varying ones
    f.write("a,still,b,zero\n")
    for i in range(120): f.write("%.3f,5,%.3f,0\n" % (random.random(), random.random()))
PY
run 0 pack daily.csv -o daily.sfpack --series-column location --categorical weather -q
run 0 pack hourly.csv -o hourly.sfpack --series-column site -q
run 0 pack weekly.csv -o weekly.sfpack -q
run 0 pack epoch.csv -o epoch.sfpack --time-column t --time-unit s -q
run 0 pack flat.csv -o flat.sfpack -q
small=(--model lstm:4,dense --epochs 1 --gpus none)

# --max-gap below the daily step removes every window: it says so, and the
# value it suggests trains.
run 2 train --data daily.sfpack --targets temp --time-features yearday --max-gap 2h "${small[@]}"
expect err "daily.sfpack: --max-gap 2h removed ([0-9]+) of the \1 training windows, those that span a longer step"
expect err "hint: --max-gap 1d keeps [1-9][0-9]*; the file's typical step is 1d\)"
grep -q -- "--batch-size" err && fail "the gaps' doing blamed on --batch-size: $(cat err)"
run 0 train --data daily.sfpack --targets temp --time-features yearday --max-gap 1d "${small[@]}" -q
# Hourly rows with 3-hour holes: 30 minutes cuts every step; twice the
# typical step keeps every window off the holes, and a batch.
run 2 train --data hourly.sfpack --max-gap 30min --window 8 --batch-size 16 "${small[@]}"
expect err "--max-gap 30min removed [0-9]+ of the [0-9]+ training windows"
hint=$(grep -o -- "--max-gap [0-9a-z.]* keeps [0-9]*" err)
[ "${hint%% keeps*}" = "--max-gap 2h" ] || fail "hourly: hint '$hint': $(cat err)"
run 0 train --data hourly.sfpack --max-gap 2h --window 8 --batch-size 16 "${small[@]}"
expect err "time: --max-gap cuts the series into 8 segments"
# Too long a window with or without the cut: not the gaps' doing.
run 2 train --data hourly.sfpack --max-gap 2h --window 190 "${small[@]}"
expect err "0 training windows, fewer than one global batch of 32: a window spans 191 rows .*, more than the 45 rows"
expect err "\(hint: a smaller --window, or less --val-split\)"
# --horizon or --sampling-rate making the window too long: named, with the
# span a window needs; options already at their least (1) never suggested.
run 2 train --data weekly.sfpack --horizon 200 --window 1 --batch-size 1 --val-split 0 "${small[@]}"
expect err "weekly.sfpack: 0 training windows, fewer than one global batch of 1: a window spans 201 rows \(\(--window - 1\) x --sampling-rate \+ --horizon \+ 1\), more than the 120 rows of the longest series' training part \(hint: a smaller --horizon\)$"
run 2 train --data weekly.sfpack --sampling-rate 50 --window 10 "${small[@]}"
expect err "a window spans 452 rows .* \(hint: a smaller --window, --sampling-rate, or less --val-split\)$"
run 2 train --data weekly.sfpack --stride 100 --window 10 "${small[@]}"
expect err "weekly.sfpack: 1 training windows, fewer than one global batch of 32 \(hint: a smaller --batch-size, --window, --stride, or less --val-split\)$"
run 2 bench pipeline --data weekly.sfpack --sampling-rate 50 --window 10
expect err "nothing to measure \(hint: a smaller --window, --sampling-rate\)$"

# predict and evaluate with no window that fits: an error naming why, never
# an empty answer. The checkpoint's --max-gap 2h cuts daily rows at every step.
run 0 train --data hourly.sfpack --max-gap 2h --window 8 --batch-size 16 --checkpoint-dir gap "${small[@]}" -q
python3 - <<'PY'
import datetime as dt
with open("dayload.csv", "w") as f:
    f.write("site,time,load\n")
    for i in range(60): f.write("a,%s,%d\n" % ((dt.datetime(2021, 3, 1) + dt.timedelta(days=i)).isoformat(), i % 5))
with open("few.csv", "w") as f:
    f.write("site,time,load\n")
    for i in range(5): f.write("a,%s,%d\n" % ((dt.datetime(2021, 3, 1) + dt.timedelta(hours=i)).isoformat(), i % 5))
PY
run 0 pack dayload.csv -o dayload.sfpack --series-column site -q
run 0 pack few.csv -o few.sfpack --series-column site -q
for c in predict evaluate; do
    o=()
    [ "$c" = predict ] && o=(-o pred.csv)
    run 1 $c --checkpoint gap/latest.safetensors --data dayload.sfpack --gpus none --split all "${o[@]}"
    expect err "dayload.sfpack: no window fits: the checkpoint's --max-gap 2h removed all 52 windows of the whole part, those that span a longer step between rows \(the file's typical step is 1d;"
    [ -e pred.csv ] && fail "$c wrote pred.csv with no window"
    run 1 $c --checkpoint gap/latest.safetensors --data few.sfpack --gpus none
    expect err "few.sfpack: no window fits in the (whole|validation) part: the checkpoint's windows span 9 rows \(window 8, sampling rate 1, horizon 1\), more than the [0-9] rows of its longest series"
done
# A validation part of one row shorter than a window: its window reaches
# back into the training part. Of no row (floor(9 x 0.1) = 0): --split all
# is the fix, and it works.
head -n 13 hourly.csv >twelve.csv
run 0 pack twelve.csv -o twelve.sfpack --series-column site -q
run 0 evaluate --checkpoint gap/latest.safetensors --data twelve.sfpack --gpus none
expect out "^windows +1 \(validation part"
head -n 10 hourly.csv >nine.csv
run 0 pack nine.csv -o nine.sfpack --series-column site -q
run 1 evaluate --checkpoint gap/latest.safetensors --data nine.sfpack --gpus none
expect err "nine.sfpack: no window fits in the validation part: its targets are the last 10% of each series' rows \(rounded down\), every stride-th from the first, and a window's inputs may reach back into the training part, not before the series' first row; the checkpoint's windows span 9 rows, and every series' validation part is empty \(hint: --split all\)"
run 0 evaluate --checkpoint gap/latest.safetensors --data nine.sfpack --gpus none --split all
expect out "^windows +1 "
# A file with no training window: bench train says so before it measures
# its ceilings (seconds of products), and prints nothing on stdout.
run 2 bench train --data nine.sfpack --steps 3
expect err "nine.sfpack: 0 training windows, fewer than one global batch of 32: a window spans"
[ -s out ] && fail "bench train measured before it refused the file: $(cat out)"

# --horizon 0 would make the window's last input row the target.
for c in train "bench pipeline" "bench train" "bench scaling"; do
    # shellcheck disable=SC2086
    run 2 $c --data hourly.sfpack --horizon 0
    expect err "--horizon 0: expected an integer from 1 to 4294967295"
done
# A baseline of loss 0 (a constant target: persistence and the mean are
# exact) is said in words, never "infx" or "inf%".
run 0 train --data flat.sfpack --targets still --window 4 --checkpoint-dir still "${small[@]}" -q
run 0 evaluate --checkpoint still/latest.safetensors --data flat.sfpack --gpus none
grep -qiE "inf|nan" out && fail "evaluate prints a ratio to a zero loss: $(cat out)"
expect out "^verdict +still does not beat persistence: (it is exact \(RMSE 0\), the model is not|both exact \(RMSE 0\))"
run 0 evaluate --checkpoint still/latest.safetensors --data flat.sfpack --gpus none --json
python3 -c "import json; d = json.load(open('out')); assert d['persistence_baseline'] == 0 and d['beats_persistence'] is False" ||
    fail "evaluate --json: $(cat out)"

# Constant columns: named, all of them, in one line.
run 0 train --data flat.sfpack --targets a --window 4 "${small[@]}" --checkpoint-dir flat
expect err "^scaling: constant columns still,zero: their spread over the training rows is below float32's smallest normal"
[ "$(grep -c "constant column" err)" -eq 1 ] || fail "constant columns: not one line: $(cat err)"
run 0 train --data flat.sfpack --features a,b --targets a --window 4 "${small[@]}" --checkpoint-dir flat2
grep -q "constant column" err && fail "constant columns named when none is used: $(cat err)"
# A constant target is said as one: the model would learn a constant.
run 0 train --data flat.sfpack --targets still,a --window 4 "${small[@]}" --checkpoint-dir flat3
expect err "^scaling: constant target still: .*so it is scaled as a constant, and the model would learn to predict a constant \(hint: --targets without it\)$"
expect err "^scaling: constant column zero: .*an input that tells the model nothing \(hint: --features without it\)$"
grep -q "constant column.*still" err && fail "a target named as an input: $(cat err)"
run 0 train --data flat.sfpack --targets still --window 4 "${small[@]}" --checkpoint-dir flat4
expect err "^scaling: constant target still: .* \(hint: other --targets\)$"

# --model widths out of range say the range.
run 2 train --data flat.sfpack --model lstm:100000,dense --epochs 1
expect err "--model: item 1 'lstm:100000': the units of lstm must be an integer from 1 to 65536"
run 2 train --data flat.sfpack --model lstm:4,dense:100000000 --epochs 1
expect err "--model: item 2 'dense:100000000': the units of dense must be an integer from 1 to 65536"

# Time features that cannot vary over the file are refused, naming what would.
run 2 train --data daily.sfpack --targets temp --time-features hour,yearday "${small[@]}"
expect err '--time-features hour: the time column "date" holds dates without a time of day \(a resolution of one day\), so hour is the same on every row'
expect err "\(time features that vary in this file: weekday,yearday\)"
run 2 train --data weekly.sfpack --time-features yearday,weekday "${small[@]}"
expect err '--time-features weekday: the time column "date" steps by exactly 7d on every row, from the same time of the week'
expect err "\(time features that vary in this file: yearday\)"
run 2 train --data epoch.sfpack --time-features hour "${small[@]}"
expect err '--time-features hour: the time column "t" steps by exactly 1d on every row, from the same time of day'
run 0 train --data epoch.sfpack --time-features weekday,yearday --window 4 "${small[@]}" -q
# What the time table cannot judge (a missing day; months at midnight) is
# judged over the training rows' times: refused alike.
python3 - <<'PY'
import datetime as dt
with open("noon.csv", "w") as f:  # daily at noon, one day missing
    f.write("t,a\n")
    for i in range(150): f.write("%s,%d\n" % ((dt.datetime(2020, 1, 1, 12) + dt.timedelta(days=i + (i > 60))).isoformat(), i % 7))
with open("monthly.csv", "w") as f:  # the first of every month at midnight
    f.write("t,a\n")
    for i in range(120): f.write("%04d-%02d-01T00:00,%d\n" % (2000 + i // 12, i % 12 + 1, i % 7))
PY
run 0 pack noon.csv -o noon.sfpack -q
run 0 pack monthly.csv -o monthly.sfpack -q
for f in noon monthly; do
    run 2 train --data $f.sfpack --time-features weekday,hour --window 4 "${small[@]}"
    expect err "^seqfeed train: error: $f.sfpack: --time-features hour: hour has one value on every training row of the time column \"t\" \(its times are all at the same time of day\), so it is a constant input that tells the model nothing \(hint: --time-features without hour\)$"
    run 0 train --data $f.sfpack --time-features weekday,yearday --window 4 "${small[@]}" -q
done
run 0 train --data hourly.sfpack --time-features hour,weekday,yearday --window 4 "${small[@]}" -q
finish
