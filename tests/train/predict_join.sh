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
    rm -rf ck  # a new run each time: a directory holds one
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
        assert float(p[col]) == float(src[col]), (col, p, src)  # the CSV's value, as float32 writes it shortest
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
expect err "--time-features hour differs from the checkpoint's hour,weekday"
run 2 train --data gaps.sfpack --time-features minute
expect err 'time feature "minute": expected hour, weekday or yearday'

# --categorical: a text column of a few values, with missing ones, packed as
# categories and fed to the model one-hot. predict maps a file's values by
# their text: the same rows packed with their series in another order (so
# other codes) forecast the same numbers, and a value the model never saw
# is said and fed as zeros.
python3 - <<'PY'
import datetime as dt, random
random.seed(3)
sky = ["sun", "rain", "fog", "snow, wet"]
rows = {}
for city in ["paris", "berlin"]:
    t = dt.date(2012, 1, 1)
    rows[city] = []
    for i in range(90):
        w = "" if i % 29 == 7 else random.choice(sky[:3] if city == "paris" else sky[1:])
        rows[city].append('%s,%s,%.1f,"%s",%.1f\n' % (city, t.isoformat(), 10 * random.random(), w, random.random()))
        t += dt.timedelta(days=1)
for name, order in [("w.csv", ["paris", "berlin"]), ("w-swapped.csv", ["berlin", "paris"])]:
    with open(name, "w") as f:
        f.write("location,date,temp,weather,rain\n")
        for city in order: f.writelines(rows[city])
with open("w-new.csv", "w") as f:
    f.write("location,date,temp,weather,rain\n")
    f.writelines(r.replace('"fog"', '"hail"') for r in rows["paris"])
PY
run 1 pack w.csv -o w.sfpack --series-column location --missing ffill
expect err "Pack it with: seqfeed pack w.csv -o w.sfpack --series-column location --categorical 'weather' --missing ffill"
for f in w w-swapped w-new; do run 0 pack $f.csv -o $f.sfpack --series-column location --categorical weather --missing ffill -q; done
run 0 inspect w.sfpack
expect out 'weather +categorical, 4 values: [a-z,]*"snow, wet"'
run 0 unpack w.sfpack -o w-back.csv -q
grep -q '^berlin,2012-01-01,[0-9.]*,\(sun\|rain\|fog\|"snow, wet"\),' w-back.csv || fail "unpack: $(sed -n 92p w-back.csv)"
run 0 train --data w.sfpack --model lstm:4,dense:2 --window 5 --epochs 1 --batch-size 16 --targets temp,rain \
    --time-features yearday --max-gap 2d --checkpoint-dir cat
expect err "columns: features temp,weather \(4 one-hot\),rain,sin/cos\(yearday\) \(all: --features chooses\); targets temp,rain$"
expect err ", 218 parameters"  # lstm:4 on 8 inputs: 4 x 4 x (8 + 4) + 16 biases, dense 2 x 4 + 2
run 2 train --data w.sfpack --targets weather
expect err 'target "weather" is categorical'
run 0 predict --checkpoint cat/latest.safetensors --data w.sfpack -o a.csv -q
run 0 predict --checkpoint cat/latest.safetensors --data w-swapped.sfpack -o b.csv -q
python3 - <<'PY' || fail "the forecasts differ when only the codes differ: $(head -3 a.csv) / $(head -3 b.csv)"
import csv
a = {(r["location"], r["date"]): r for r in csv.DictReader(open("a.csv"))}
b = {(r["location"], r["date"]): r for r in csv.DictReader(open("b.csv"))}
assert len(a) == 2 * (90 - 5) and a.keys() == b.keys(), (len(a), len(b))
for k in a: assert a[k]["temp_pred"] == b[k]["temp_pred"] and a[k]["rain_pred"] == b[k]["rain_pred"], (a[k], b[k])
PY
run 0 predict --checkpoint cat/latest.safetensors --data w-new.sfpack -o c.csv
expect err 'note: w-new.sfpack: 1 value\(s\) of categorical column "weather" are not in the training data'
# Many values (a checkpoint keeps up to 16 KB of them) load back.
python3 -c "
import random; random.seed(1); print('v,c')
for i in range(3000): print('%.4f,category_%04d' % (random.random(), i % 700))" >many.csv
run 0 pack many.csv -o many.sfpack --categorical c -q
run 0 train --data many.sfpack --model lstm:2,dense --window 4 --epochs 1 --batch-size 64 --checkpoint-dir many -q
run 0 predict --checkpoint many/latest.safetensors --data many.sfpack -o many-pred.csv -q
run 0 pack w.csv -o plain.sfpack --series-column location --drop-columns weather --missing ffill -q
run 1 predict --checkpoint cat/latest.safetensors --data plain.sfpack
expect err 'plain.sfpack: the checkpoint.s feature "weather" is not a column; .* \(it trained on .*\.sfpack\)'
finish
