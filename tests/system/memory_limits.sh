#!/usr/bin/env bash
# Memory is checked before it is allocated: a shuffle pool, staging slots or
# a replica sized by a window, a pool or a batch the file cannot fill, or
# that the machine cannot hold, is never allocated. Each command runs under
# an address-space limit of 2 GB (ulimit -v: untouched allocations count
# too), far below what any of them would have asked for before the checks:
# bench pipeline --window 100000 on 20,000 rows allocated a pool of 16384
# windows of 100000 rows, 19.7 GB. meson sets SEQFEED and SRCDIR.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
[ -n "${SEQFEED_SANITIZED:-}" ] && { echo "skipped: a sanitizer reserves terabytes of shadow address space"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
export MALLOC_ARENA_MAX=2 OPENBLAS_NUM_THREADS=1  # threads' malloc arenas reserve address space too
limited() {  # limited RC ARGS...: run under the limit
    local want=$1
    shift
    (ulimit -v 2000000 && exec "$SEQFEED" "$@") >out 2>err
    local rc=$?
    [ "$rc" -eq "$want" ] || fail "seqfeed $* under a 2 GB limit exited $rc, expected $want: $(tail -3 err)"
}
"$SEQFEED" synth -o s.sfpack --rows 20000 --feature-count 3 --series-count 2 --chunk-rows 512 -q || exit 1
"$SEQFEED" synth -o long.sfpack --rows 200000 --feature-count 1 -q || exit 1
pipe=(--decoders 2 --gpus none)

# No window fits: said before any buffer is sized by the window.
limited 2 bench pipeline --data s.sfpack --window 100000 --decoders 2
expect err "no window of 100000 rows \(100001 rows with --sampling-rate and --horizon\) fits in any series, the longest of which has 10000 rows"
limited 2 train --data s.sfpack --window 100000 "${pipe[@]}"
expect err "0 training windows"
# A pool larger than the file's windows holds only those.
limited 0 bench pipeline --data s.sfpack --window 16 --pool 1000000000 --decoders 2
limited 0 train --data s.sfpack --window 16 --pool 1000000000 --model lstm:4,dense --max-steps 5 "${pipe[@]}" \
    --checkpoint-dir ck -q
limited 0 bench train --data s.sfpack --window 16 --pool 1000000000 --model lstm:4,dense --steps 3 --warmup 1 \
    "${pipe[@]}"
# More than the machine has: refused, naming the pool and the slots.
limited 2 bench pipeline --data long.sfpack --window 100000 --batch-size 1048576 --decoders 2
expect err "the pipeline would hold [0-9.]+ GB \(12 part\(s\) of the batch, each a shuffle pool of 1366 windows; [0-9]+ slots of 1048576 windows; a window 100000 rows of 1 inputs\): more than the [0-9.]+ GB this machine has \(hint: a smaller --pool, --batch-size or --window\)"
limited 2 train --data long.sfpack --window 100000 --batch-size 65536 "${pipe[@]}"
expect err "the pipeline would hold [0-9.]+ GB .*, and the replicas [0-9.]+ GB more: more than the [0-9.]+ GB this machine has"
limited 2 bench scaling --data long.sfpack --window 100000 --batch-size 65536 --steps 2 --warmup 1 "${pipe[@]}"
expect err "more than the [0-9.]+ GB this machine has"
# predict and evaluate size their replica by the windows there are.
limited 0 predict --checkpoint ck/latest.safetensors --data s.sfpack --batch-size 1048576 --gpus none -o p.csv
[ "$(wc -l <p.csv)" -eq $((2 * (10000 - 16) + 1)) ] || fail "predict: $(wc -l <p.csv) lines"
limited 0 evaluate --checkpoint ck/latest.safetensors --data s.sfpack --batch-size 1048576 --gpus none
finish
