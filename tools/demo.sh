#!/usr/bin/env bash
# Installs what is missing, builds, packs the bundled hourly temperatures of
# Seattle and San Francisco (2010, NOAA), trains the default model (3 x
# LSTM(180) with dropout, Dense) on CPU to forecast each city's temperature
# an hour ahead from the previous 24 hours, with the hour of the day and of
# the year as inputs and the change from the last hour as what it learns,
# and prints, for the best epoch, each target's error next to three baselines
# on the same validation targets: the mean, the last observed value
# (persistence) and the value a day before. It fails unless the model beats
# the mean and persistence on every target. Then the first forecasts next to
# the true temperatures.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/deps.sh
sf_install_deps
sf_build "${BUILD:-build}"
sf="${BUILD:-build}/seqfeed"
out="${BUILD:-build}/demo"
mkdir -p "$out"

echo
"$sf" info
echo
"$sf" pack data/hourly-temperatures-2010.csv -o "$out/temperatures.sfpack" --series-column site
"$sf" verify "$out/temperatures.sfpack"
echo
"$sf" inspect "$out/temperatures.sfpack"
echo
rm -rf "$out/checkpoints"
"$sf" train --data "$out/temperatures.sfpack" --targets temp --window 24 --batch-size 64 --epochs "${EPOCHS:-3}" \
    --time-features hour,yearday --target change --val-split 0.1 --early-stop 3 --checkpoint-dir "$out/checkpoints" \
    --log "$out/metrics.csv"
echo
"$sf" evaluate --checkpoint "$out/checkpoints" --data "$out/temperatures.sfpack"
"$sf" evaluate --checkpoint "$out/checkpoints" --data "$out/temperatures.sfpack" --json -q |
    python3 -c '
import json, sys
r = json.load(sys.stdin)
print()
for t in r["per_target"]:
    print("%s: RMSE %.3f, %.1f%% below persistence (%.3f), %.0fx below the mean (%.3f)" % (
        t["name"], t["rmse"]["model"], 100 * (1 - t["rmse"]["model"] / t["rmse"]["persistence"]),
        t["rmse"]["persistence"], t["rmse"]["mean"] / t["rmse"]["model"], t["rmse"]["mean"]))
sys.exit(0 if r["per_target"] and all(t["beats_persistence"] and t["model"] < t["mean"] for t in r["per_target"])
         else "demo: the model did not beat both baselines on every target")'
"$sf" predict --checkpoint "$out/checkpoints" --data "$out/temperatures.sfpack" \
    --split validation --with-actual -o "$out/predictions.csv" -q
echo
echo "the first forecasts of each city's validation part ($out/predictions.csv: line is the CSV's):"
python3 - "$out/predictions.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print("%-14s %-19s %6s %9s %9s" % ("site", "time", "line", "forecast", "actual"))
for site in dict.fromkeys(r["site"] for r in rows):
    for r in [r for r in rows if r["site"] == site][:4]:
        print("%-14s %-19s %6s %9.2f %9.2f" % (site, r["time"], r["line"], float(r["temp_pred"]), float(r["temp"])))
PY
