#!/usr/bin/env bash
# The step-time breakdown and the diagnosis: a compute-bound run is not
# input bound; a run whose decode or window stage is slowed on purpose
# (SEQFEED_TEST_DELAY) is input bound and names that stage; a run too short
# for a verdict says so and gives none; the phases add up to
# the wall time of the steps, which leaves out the checkpoints written between
# them (the run goes in parts of 5 steps); --trace writes a valid Chrome trace with the
# expected tracks. meson sets SEQFEED.
set -u
: "${SEQFEED:?}"
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"
tmp=$(mktemp -d /tmp/sfprof.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
"$SEQFEED" synth -o s.sfpack --rows 60000 --feature-count 3 --series-count 2 --chunk-rows 256 -q || exit 1
# --direct off: the file just written is read from the page cache, so a disk
# busy with other tests' writes cannot slow the reader past the stage a run slows.
common=(--data s.sfpack --features f0,f1,f2 --targets f0 --window 32 --batch-size 32 --epochs 1 --val-split 0 --gpus none
        --direct off)

# Each step at least 25 ms (an emulated device step): the diagnosis judges
# runs of 1 s or more, which 60 steps of this model are not on a fast core.
SEQFEED_TEST_DELAY=step:25000 "$SEQFEED" train "${common[@]}" --model lstm:96,lstm:96,dense --max-steps 60 \
    --checkpoint-every 5 --checkpoint-dir c \
    2>err || fail "compute run: $(cat err)"
grep -q "diagnosis: not input bound" err || fail "a compute-bound run: $(grep diagnosis err)"
grep -q "Steps are compute bound" err || fail "a compute-bound run names compute: $(grep diagnosis err)"
grep "^diagnosis" err | grep -q "Hint" && fail "a compute-bound run got a hint nothing measured: $(grep diagnosis err)"
grep -Eq "^  shares of the time .*compute [0-9.]+% \+-[0-9.]+" err || fail "no shares with their spread: $(cat err)"
pct=$(sed -n 's/.*phases add up to .* wall (\([0-9.]*\)%)/\1/p' err | head -1)
python3 -c "import sys; sys.exit(0 if 98 <= float('${pct:-0}') <= 102 else 1)" ||
    fail "the phases add up to ${pct:-nothing}% of the steps' wall time"
grep -Eq "^  input +[0-9]" err && grep -Eq "^  step +[0-9]" err || fail "no phase table: $(cat err)"

SEQFEED_TEST_DELAY=decode:200000 "$SEQFEED" train "${common[@]}" --model lstm:8,dense --max-steps 60 --decoders 1 --pool 256 2>err ||
    fail "decode run: $(cat err)"
grep -Eq "diagnosis: (highly|moderately) input bound" err || fail "slow decode: $(grep diagnosis err)"
grep -q "The limiting stage is decode" err || fail "slow decode not named: $(grep diagnosis err)"

SEQFEED_TEST_DELAY=window:20000 "$SEQFEED" train "${common[@]}" --model lstm:8,dense --max-steps 60 2>err ||
    fail "window run: $(cat err)"
grep -Eq "diagnosis: (highly|moderately) input bound" err || fail "slow window: $(grep diagnosis err)"
grep -q "The limiting stage is window" err || fail "slow window not named: $(grep diagnosis err)"

# Too short: no verdict, no limiting stage, no hint; the steps it needs.
SEQFEED_TEST_DELAY=window:20000 "$SEQFEED" train "${common[@]}" --model lstm:8,dense --max-steps 20 2>err ||
    fail "short run: $(cat err)"
grep -Eq "^diagnosis: too short to judge: 19 steps over [0-9.]+ s \(need [0-9]+ steps and 1 s\)" err ||
    fail "a 20-step run was judged: $(grep diagnosis err)"
grep "^diagnosis" err | grep -Eq "limiting|Hint|bound" && fail "a short run got a verdict: $(grep diagnosis err)"

# The trace: valid JSON in Chrome's format, a track per pipeline thread and
# per replica, the spans of each, and spans that do not run backwards.
"$SEQFEED" train "${common[@]}" --model lstm:8,dense --max-steps 40 --replicas 2 --trace t.json -q 2>err ||
    fail "traced run: $(cat err)"
python3 - <<'PY' || fail "trace t.json"
import json, sys
ev = json.load(open("t.json"))["traceEvents"]
tracks = {e["args"]["name"] for e in ev if e.get("name") == "thread_name"}
want = {"pipeline: reader", "pipeline: decoder 0", "pipeline: windower 0.0", "pipeline: windower 1.0",
        "replica 0", "replica 1"}
spans = {e["name"] for e in ev if e["ph"] == "X"}
if not want <= tracks: sys.exit(f"tracks {sorted(tracks)}, expected {sorted(want)}")
if not {"read", "decode", "window", "input", "forward+backward", "all-reduce", "update"} <= spans:
    sys.exit(f"spans {sorted(spans)}")
if any(e["ph"] == "X" and e["dur"] < 0 for e in ev): sys.exit("a span of negative duration")
if not any(e["ph"] == "C" for e in ev): sys.exit("no counters")
PY

SEQFEED_TEST_DELAY=fetch:10 "$SEQFEED" train "${common[@]}" 2>err && fail "an unknown stage was accepted"
grep -q "SEQFEED_TEST_DELAY=fetch:10: expected read, decode, window, io, decode-wait or step" err ||
    fail "a bad test delay: $(cat err)"

# bench train: the breakdown and the classification of each batch size's
# run, and the step time against the batch; bench scaling: a row per
# replica count with its speed-up and what limits it.
bench=(--data s.sfpack --features f0,f1,f2 --targets f0 --window 16 --model lstm:8,dense --steps 10 --gpus none)
"$SEQFEED" bench train "${bench[@]}" --batch-size 4,32 >out 2>err || fail "bench train: $(cat err)"
[ "$(grep -c '^where the steps went' out)" -eq 2 ] && [ "$(grep -c '^diagnosis: ' out)" -eq 2 ] ||
    fail "bench train: no breakdown per batch size: $(cat out)"
grep -Eq "^batch size +32 \(32 per replica\): +[0-9.]+ samples/s, input wait +[0-9.]+%, [0-9.]+ of the resident" out &&
    grep -q "^step time grew" out || fail "bench train: $(cat out)"
"$SEQFEED" bench train "${bench[@]}" --batch-size 4 --json >out 2>err || fail "bench train --json: $(cat err)"
# The share is of the ceiling measured beside the pair reported, the one the object gives.
python3 -c 'import json; r = json.load(open("out")); assert r["classification"] and r["limit"] and r["samples_per_s"] > 0
assert r["sgemm_gflops"] > 0 and abs(r["share_of_sgemm"] - r["gflops"] / r["sgemm_gflops"]) < 1e-3, r' ||
    fail "bench train --json: $(cat out)"
"$SEQFEED" bench scaling "${bench[@]}" --replicas 1,2 --batch-size 16 >out 2>err || fail "bench scaling: $(cat err)"
grep -Eq "^2 +8 +[0-9.]+ +[0-9.]+x +[0-9]+%  [a-z -]+ \(input wait" out || fail "bench scaling: no row for 2 replicas: $(cat out)"
finish
