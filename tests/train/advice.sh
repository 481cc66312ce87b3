#!/usr/bin/env bash
# Check the advice: faults injected on purpose, each behind an emulated
# GPU step (SEQFEED_TEST_DELAY step: the replica sleeps, no core used), and
# exaggerated so that a loaded 2-core machine cannot hide them. For each,
# the diagnosis must name the cause, and the run that follows its hint (the
# flags it names, or what it says to do) must wait at most half as long,
# without fewer samples/s (10% slack for the machine's noise):
#   a slow reader      io:60000 (each read takes 60 ms, requests in flight
#                      overlap) with --depth 2: read, and a --depth hint
#   too few decoders   decode-wait:40000 (40 ms a chunk off the CPU) with
#                      --decoders 1: decode, and a --decoders hint
#   a CPU hog          the run and three busy loops on core 0, the
#                      windower needing 2.5 ms of CPU per 4 ms step: the
#                      windower starved of a core, other processes named;
#                      following it: the hogs stop (skipped without taskset)
#   a tiny pool        --pool 1: no wait comes of it, and the diagnosis
#                      blames nothing (not input bound, no hint)
# Prints the table (cause, verdict, hint, wait before and after). In the
# slow suite: about a minute. meson sets SEQFEED.
set -u
: "${SEQFEED:?}"
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"
tmp=$(mktemp -d /tmp/sfadvice.XXXXXX)
hogs=()
trap 'for h in "${hogs[@]}"; do kill "$h" 2>/dev/null; done; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
"$SEQFEED" synth -o s.sfpack --rows 200000 --feature-count 3 --series-count 2 --chunk-rows 256 -q || exit 1
# --direct off: from the page cache, so a disk busy with other tests' writes
# adds no slow reader of its own to the faults injected.
common=(--data s.sfpack --features f0,f1,f2 --targets f0 --window 32 --batch-size 32 --epochs 1 --val-split 0
        --model lstm:4,dense --gpus none --max-steps 600 --direct off)

# fault NAME DELAY COMMAND...: trains; sets diag (the diagnosis line), waited
# (input's share of the time, short stalls included) and rate (samples/s).
n=0
fault() {
    local name=$1 delay=$2
    shift 2
    n=$((n + 1))
    SEQFEED_TEST_DELAY=$delay "$@" --checkpoint-dir "ck$n" 2>"$name.err" || { fail "$name: $(cat "$name.err")"; return 1; }
    diag=$(grep '^diagnosis: ' "$name.err")
    waited=$(sed -n 's/^  shares of the time[^:]*: input \([0-9.]*\)%.*/\1/p' "$name.err")
    rate=$(sed -n 's/^done after [0-9]* steps: \([0-9.]*\) samples\/s.*/\1/p' "$name.err")
    [ -n "$diag" ] && [ -n "$waited" ] && [ -n "$rate" ] || fail "$name: no diagnosis, shares or rate: $(cat "$name.err")"
}

# The hint's flags with their values ("--depth 5 --prefetch 6").
hint_flags() { sed -n 's/.*Hint: //p' <<<"$1" | grep -oE -- '--[a-z-]+ [0-9]+' | tr '\n' ' '; }

table=()
# check NAME: the run after the fix against the run before: the wait at most
# half, samples/s at least 0.9 of before; a row for the table.
check() {
    local name=$1 cause=$2 hint=$3
    python3 -c "import sys; b, a, rb, ra = map(float, sys.argv[1:]); sys.exit(0 if a <= b / 2 and ra >= 0.9 * rb else 1)" \
        "$before_wait" "$waited" "$before_rate" "$rate" ||
        fail "$name: following the hint ($hint) took the wait from $before_wait% to $waited% and samples/s from $before_rate to $rate"
    table+=("| $name | $cause | $hint | $before_wait% -> $waited% | $before_rate -> $rate |")
}

# A slow reader: the limiting stage is read; the hint raises the requests in flight.
slow=("${common[@]}" --depth 2)
fault reader step:2000,io:60000 "$SEQFEED" train "${slow[@]}"
grep -q "The limiting stage is read" <<<"$diag" || fail "a slow reader not named: $diag"
flags=$(hint_flags "$diag")
grep -q -- "--depth" <<<"$flags" || fail "a slow reader: no --depth in the hint: $diag"
before_wait=$waited before_rate=$rate reader_diag=$diag
# shellcheck disable=SC2086  # the hint's flags, split
over slow $flags
fault reader-fixed step:2000,io:60000 "$SEQFEED" train "${args[@]}"
check "slow reader (io 60 ms, --depth 2)" "read" "$flags"

# Too few decoders: the limiting stage is decode; the hint adds decoders.
slow=("${common[@]}" --decoders 1)
fault decode step:2000,decode-wait:40000 "$SEQFEED" train "${slow[@]}"
grep -q "The limiting stage is decode" <<<"$diag" || fail "too few decoders not named: $diag"
flags=$(hint_flags "$diag")
grep -q -- "--decoders" <<<"$flags" || fail "too few decoders: no --decoders in the hint: $diag"
before_wait=$waited before_rate=$rate decode_diag=$diag
# shellcheck disable=SC2086
over slow $flags
fault decode-fixed step:2000,decode-wait:40000 "$SEQFEED" train "${args[@]}"
check "too few decoders (40 ms a chunk, --decoders 1)" "decode" "$flags"

# A CPU hog on the windower's core: everything on core 0 with three busy loops.
if command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null; then
    for _ in 1 2 3; do
        taskset -c 0 bash -c 'while :; do :; done' &
        hogs+=($!)
    done
    fault hog step:4000,window:2500 taskset -c 0 "$SEQFEED" train "${common[@]}"
    grep -q "starved of cores" <<<"$diag" && grep -q "Hint: other processes used" <<<"$diag" ||
        fail "a CPU hog not named: $diag"
    before_wait=$waited before_rate=$rate hog_diag=$diag
    for h in "${hogs[@]}"; do kill "$h"; done
    wait "${hogs[@]}" 2>/dev/null
    hogs=()
    fault hog-fixed step:4000,window:2500 taskset -c 0 "$SEQFEED" train "${common[@]}"
    check "CPU hog (3 busy loops on the run's core)" "window, starved of a core" "stop the other processes"
else
    echo "no taskset: the CPU hog is not checked"
fi

# A tiny pool: no wait comes of it, and the diagnosis invents no cause.
fault pool step:2000 "$SEQFEED" train "${common[@]}" --pool 1
grep -q "^diagnosis: not input bound" <<<"$diag" || fail "a tiny pool: $diag"
grep -q "Hint" <<<"$diag" && fail "a tiny pool got a hint: $diag"
pool_wait=$waited pool_rate=$rate pool_diag=$diag
table+=("| tiny pool (--pool 1) | none: not input bound | none | $pool_wait% | $pool_rate |")

echo "| fault | cause named | hint followed | input wait before -> after | samples/s before -> after |"
echo "|---|---|---|---|---|"
printf '%s\n' "${table[@]}"
echo
printf 'diagnoses:\n%s\n%s\n%s\n%s\n' "$reader_diag" "$decode_diag" "${hog_diag:-}" "$pool_diag"
finish
