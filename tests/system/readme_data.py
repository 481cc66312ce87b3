# Data of the shapes the README's examples name, for tests/system/readme.sh:
#   co2.csv      monthly means with a trend and a yearly cycle (a date column)
#   sites.csv    the bundled hourly temperatures, keyed by a text id
#   weather.csv  the same hours per location with a categorical column,
#                missing values and gaps of several hours
# Deterministic (fixed seed), a few hundred KB. Usage: readme_data.py SRCDIR OUTDIR
import csv, math, os, random, sys

src, out = sys.argv[1], sys.argv[2]
rnd = random.Random(7)

with open(os.path.join(out, "co2.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["date", "co2"])
    for k in range(800):  # 1958-03 .. 2024-10, as the Mauna Loa record
        year, month = 1958 + (k + 2) // 12, (k + 2) % 12 + 1
        t = k / 12
        value = 315 + 0.8 * t + 0.012 * t * t + 3 * math.sin(2 * math.pi * (month - 4) / 12) + rnd.gauss(0, 0.3)
        w.writerow(["%04d-%02d-01" % (year, month), "%.2f" % value])

rows = list(csv.DictReader(open(os.path.join(src, "data", "hourly-temperatures-2010.csv"))))
with open(os.path.join(out, "sites.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["site", "time", "temp"])
    for r in rows:
        w.writerow([r["site"], r["time"], r["temp"]])

with open(os.path.join(out, "weather.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["location", "date", "weather", "temp"])
    for i, r in enumerate(rows):
        if i % 997 < 4:  # a gap of 4 hours now and then
            continue
        t = float(r["temp"])
        weather = "rain" if t < 40 and rnd.random() < 0.5 else "cloudy" if rnd.random() < 0.3 else "clear"
        temp = "" if rnd.random() < 0.01 else r["temp"]  # a missing reading
        w.writerow([r["site"], r["time"], weather, temp])
