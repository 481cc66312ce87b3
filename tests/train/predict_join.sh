#!/usr/bin/env bash
# Forecasts join back to the CSV they came from: on the time column and on
# the CSV line, for one series with a date column, several series keyed by
# a text id, and a file packed with --missing drop (where row numbers and
# lines part ways). Each predicted row's actual value (--with-actual) must
# be the CSV's value at the joined line and time.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
python3 - <<'PY'
import datetime as dt, random
random.seed(5)
with open("one.csv", "w") as f:  # weekly, a date column, some values missing
    f.write("date,co2,temp\n")
    d = dt.date(1999, 12, 25)
    for i in range(300):
        co2 = "" if i % 37 == 5 else "%.2f" % (370 + i * 0.02 + random.random())
        f.write("%s,%s,%.2f\n" % (d.isoformat(), co2, random.random() * 10))
        d += dt.timedelta(days=7)
with open("many.csv", "w") as f:  # hourly, three sites keyed by text, a zone offset
    f.write("site,when,load\n")
    for s in ["north", "south, coast", "east"]:
        t = dt.datetime(2021, 3, 27, 20, 0)
        for i in range(120):
            f.write('"%s",%s+01:00,%.3f\n' % (s, t.isoformat(), 50 + 10 * random.random()))
            t += dt.timedelta(hours=1)
PY
small=(--model lstm:8,dense --window 6 --epochs 1 --batch-size 16 -q)
check() {  # CSV PACK-OPTIONS...: pack, train, predict, join
    local csv=$1
    shift
    run 0 pack "$csv" -o d.sfpack "$@" -q
    run 0 train --data d.sfpack "${small[@]}" --checkpoint-dir ck
    run 0 predict --checkpoint ck/latest.safetensors --data d.sfpack --with-actual -o pred.csv -q
    python3 - "$csv" <<'PY' || fail "$csv: the forecasts do not join back: $(head -3 pred.csv)"
import csv, datetime as dt, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
header, data = rows[0], rows[1:]
by_line = {i + 2: r for i, r in enumerate(data)}  # the header is line 1; no quoted line breaks here
pred = list(csv.DictReader(open("pred.csv", newline="")))
assert pred, "no predictions"
time_col = list(pred[0].keys())[1]  # series, the time column by its name, line, ...
def instant(s):
    t = dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)
n = 0
for p in pred:
    src = dict(zip(header, by_line[int(p["line"])]))
    assert instant(p[time_col]) == instant(src[time_col]), (p, src)
    if "site" in src: assert p["site"] == src["site"], (p, src)
    for col in header:
        if col in (time_col, "site") or col + "_pred" not in p: continue
        assert abs(float(p[col]) - float(src[col])) <= 1e-4 * max(1, abs(float(src[col]))), (col, p, src)
        float(p[col + "_pred"])
    n += 1
print(n, "forecasts joined on line and time")
PY
}
check one.csv --missing drop
check many.csv --series-column site

# --max-gap: no window, target included, spans a step longer than 2h; and
# without it train says how many windows span steps above twice the
# typical one.
python3 - <<'PY'
import datetime as dt, random
random.seed(9)
t = dt.datetime(2022, 1, 1)
with open("gaps.csv", "w") as f:
    f.write("time,v\n")
    for i in range(600):
        f.write("%s,%.3f\n" % (t.isoformat(), random.random()))
        t += dt.timedelta(hours=5 if i % 50 == 49 else 1)
PY
run 0 pack gaps.csv -o gaps.sfpack -q
run 0 train --data gaps.sfpack --model lstm:4,dense --window 4 --horizon 1 --epochs 1 --batch-size 8
expect err "time: [0-9]+ of [0-9]+ training windows span a step of more than 2h \(twice the typical step\); --max-gap 2h"
run 0 train --data gaps.sfpack --model lstm:4,dense --window 4 --horizon 1 --epochs 1 --batch-size 8 --max-gap 2h \
    --checkpoint-dir gap
expect err "time: --max-gap cuts the series into 12 segments"
run 0 predict --checkpoint gap/latest.safetensors --data gaps.sfpack -o gap-pred.csv -q
python3 - <<'PY' || fail "a window spans a gap: $(head -3 gap-pred.csv)"
import csv, datetime as dt
rows = list(csv.reader(open("gaps.csv")))[1:]
times = [dt.datetime.fromisoformat(r[0]) for r in rows]
pred = list(csv.DictReader(open("gap-pred.csv")))
span = 4 + 1  # window rows and the target after them
assert len(pred) == 600 - 12 * (span - 1), len(pred)
for p in pred:
    last = int(p["line"]) - 2
    for r in range(last - span + 2, last + 1):
        assert times[r] - times[r - 1] <= dt.timedelta(hours=2), (p, r)
PY

# --time-features: inputs computed from the times, kept by the checkpoint
# and computed again by predict and evaluate; a resume must keep them.
run 0 train --data gaps.sfpack --model lstm:4,dense --window 4 --epochs 1 --batch-size 8 --time-features hour,weekday \
    --targets v --checkpoint-dir tf
expect err "columns: features v,sin/cos\(hour\),sin/cos\(weekday\)"
expect err ", 165 parameters"  # lstm:4 on 5 inputs: 4 x 4 x (5 + 4) + 4 x 4 biases, dense 4 + 1
run 0 predict --checkpoint tf/latest.safetensors --data gaps.sfpack -o tf.csv -q
[ "$(wc -l <tf.csv)" -gt 500 ] || fail "predict with time features: $(head -3 tf.csv)"
run 0 evaluate --checkpoint tf/latest.safetensors --data gaps.sfpack -q
run 2 train --data gaps.sfpack --model lstm:4,dense --window 4 --epochs 2 --batch-size 8 --time-features hour \
    --targets v --checkpoint-dir tf --resume
expect err "--time-features differs from the checkpoint's"
run 2 train --data gaps.sfpack --time-features minute
expect err 'time feature "minute": expected hour, weekday or yearday'
finish
