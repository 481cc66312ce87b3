#!/usr/bin/env bash
# Ctrl-C reaches one thread only: every thread of a running train but one
# blocks SIGINT, SIGTERM and SIGHUP (oneDNN's f32 GEMM points rsp at heap
# memory while it runs, so a handler run on a thread inside it wrote its
# frame over the heap: Ctrl-C while train scored its validation part
# aborted one run in two). Then Ctrl-C, during the steps and during the
# end's scoring, stops the run with its checkpoint and exit 130. meson
# sets SEQFEED.
set -u
: "${SEQFEED:?}"
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"
tmp=$(mktemp -d /tmp/sfsignals.XXXXXX)
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
"$SEQFEED" synth -o s.sfpack --rows 60000 --feature-count 3 --series-count 2 -q || exit 1
common=(--data s.sfpack --features f0,f1,f2 --targets f0 --window 16 --batch-size 32 --model lstm:16,dense
        --gpus none --val-split 0.5)

# wait_for FILE PATTERN: up to 60 s for the run's stderr to show PATTERN.
wait_for() {
    for _ in $(seq 600); do
        grep -qE "$2" "$1" 2>/dev/null && return 0
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# During the steps (each made 50 ms long): the threads' masks, then Ctrl-C.
SEQFEED_TEST_DELAY=step:50000 "$SEQFEED" train "${common[@]}" --max-steps 100000 --checkpoint-dir steps \
    2>steps.err &
pid=$!
wait_for steps.err "^pipeline auto at" || fail "the run did not start its steps: $(cat steps.err)"
unblocked=0 threads=0
for st in /proc/"$pid"/task/*/status; do
    mask=$(sed -n 's/^SigBlk:[[:space:]]*//p' "$st" 2>/dev/null) || continue
    [ -n "$mask" ] || continue
    threads=$((threads + 1))
    # SIGHUP 1, SIGINT 2, SIGTERM 15: bits 0, 1 and 14.
    if (( (16#$mask & 0x4003) != 0x4003 )); then
        unblocked=$((unblocked + 1))
        # The main thread computes replica 0's steps and the end's scores.
        [ "$st" != "/proc/$pid/task/$pid/status" ] || fail "the main thread takes the signals (SigBlk $mask)"
    fi
done
[ "$threads" -ge 3 ] || fail "expected the run's threads (pipeline, replica), found $threads"
[ "$unblocked" -eq 1 ] || fail "$unblocked of $threads threads take SIGINT, SIGTERM or SIGHUP; expected one"
kill -INT "$pid"
wait "$pid"
rc=$? pid=
[ "$rc" -eq 130 ] || fail "Ctrl-C during the steps: exit $rc, expected 130: $(cat steps.err)"
[ -f steps/latest.safetensors ] || fail "Ctrl-C during the steps left no checkpoint"

# During the end's scoring, of a validation part that takes a while,
# Ctrl-C stops it.
"$SEQFEED" synth -o big.sfpack --rows 3000000 --feature-count 3 --series-count 1 -q || exit 1
"$SEQFEED" train --data big.sfpack --features f0,f1,f2 --targets f0 --window 64 --batch-size 32 \
    --model lstm:64,dense --gpus none --val-split 0.5 --max-steps 2 --checkpoint-dir end 2>end.err &
pid=$!
wait_for end.err "^epoch 1/" || fail "the run did not train: $(cat end.err)"
sleep 0.5
kill -INT "$pid"
wait "$pid"
rc=$? pid=
[ "$rc" -eq 130 ] || fail "Ctrl-C during the end's scoring: exit $rc, expected 130: $(cat end.err)"
grep -q "^validation part: not scored (interrupted)" end.err || fail "no word that the end was not scored: $(cat end.err)"
[ -f end/latest.safetensors ] || fail "Ctrl-C during the end's scoring left no checkpoint"
finish
