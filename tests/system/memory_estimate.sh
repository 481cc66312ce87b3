#!/usr/bin/env bash
# The pipeline's memory estimate (what --memory-budget fits) is within 2x of
# the resident memory the process reached while the pipeline ran, for
# layouts from one huge chunk to many small ones: bench pipeline reports
# both (peak_rss_bytes is read before its in-memory ceiling copies the data).
# Each run stays under 300 MB resident, as every test must, also with
# MALLOC_PERTURB_ (meson sets it), which touches every byte allocated: a
# chunk of the whole file is --chunk-rows of its rows, since the packer
# sizes its buffers by --chunk-rows.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
[ -n "${SEQFEED_SANITIZED:-}" ] && { echo "skipped: a sanitizer build's resident memory is its shadow"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
"$SEQFEED" synth -o one-chunk.sfpack --rows 20000 --feature-count 4 --chunk-rows 20000 -q || exit 1
"$SEQFEED" synth -o big-chunk.sfpack --rows 1000000 --feature-count 4 --chunk-rows 1000000 -q || exit 1
"$SEQFEED" synth -o default.sfpack --rows 1000000 --feature-count 8 -q || exit 1
"$SEQFEED" synth -o small-chunks.sfpack --rows 200000 --feature-count 2 --chunk-rows 1000 -q || exit 1
check() {
    "$SEQFEED" bench pipeline --json "$@" >out 2>err || { fail "bench pipeline $*: $(cat err)"; return; }
    python3 - "$*" <<'PY' || fail "bench pipeline $*: the estimate is not within 2x of the peak: $(cat out)"
import json, sys
d = json.load(open("out"))
est, rss = d["memory_bytes"], d["peak_rss_bytes"]
print("%-60s estimate %7.1f MB, peak resident %7.1f MB, ratio %.2f" % (sys.argv[1], est / 1e6, rss / 1e6, est / rss))
sys.exit(0 if rss > 0 and 0.5 <= est / rss <= 2 else 1)
PY
}
check --data one-chunk.sfpack
check --data big-chunk.sfpack
check --data big-chunk.sfpack --replicas 2 --lanes 2
check --data default.sfpack
check --data default.sfpack --window 200
check --data default.sfpack --pool 100000
check --data small-chunks.sfpack --block-chunks 8
finish
