#!/usr/bin/env bash
# Elastic runs (issue 29): the global batches and the sum of their parts'
# gradients do not depend on the replicas or the ranks, so the weights after
# N steps are the same bit for bit on 1, 2, 3 and 4 CPU replicas and on 2 MPI
# ranks (dropout included: its masks follow the global batch's rows). The
# ranks' part skips without Open MPI.
set -u
: "${SEQFEED:?SEQFEED must name the seqfeed binary}"
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"
tmp=$(mktemp -d /tmp/sfelastic.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
"$SEQFEED" synth -o s.sfpack --rows 4000 --feature-count 3 --series-count 2 -q || exit 1
# 48 windows a step in 6 parts of 8: 1, 2, 3 and 6 replicas share them
# evenly, 4 as 2, 2, 1, 1.
args=(--data s.sfpack --model lstm:12,dropout:0.2,lstm:6,dense --window 10 --batch-size 48 --val-split 0.1 --seed 3
      --epochs 2 -q)
for R in 1 2 3 4; do
    run 0 train "${args[@]}" --replicas "$R" --checkpoint-dir "r$R" --log "r$R.csv"
    [ "$R" = 1 ] || same r1/latest.safetensors "r$R/latest.safetensors" 0 ||
        fail "$R replicas trained other weights than 1"
done
grep -q "^2," r1.csv || fail "the reference run logged no second epoch: $(cat r1.csv)"
cut -d, -f1,2 r1.csv >want.csv
cut -d, -f1,2 r4.csv >got.csv
cmp -s want.csv got.csv || fail "the losses of 4 replicas differ from 1's: $(paste -d' ' want.csv got.csv)"

mpirun --version 2>/dev/null | grep -q 'Open MPI' || { echo "Open MPI's mpirun not installed: ranks skipped"; finish; exit 0; }
"$SEQFEED" info | grep -q 'built with MPI' || { echo "seqfeed built without MPI: ranks skipped"; finish; exit 0; }
mpi() {
    local np=$1
    shift
    timeout 120 mpirun --allow-run-as-root --oversubscribe -np "$np" "$SEQFEED" "$@" >out 2>err
    rc=$?
}
mpi 2 train "${args[@]}" --replicas 1 --checkpoint-dir m2
[ "$rc" = 0 ] || fail "2 ranks: exit $rc: $(cat err)"
same r1/latest.safetensors m2/latest.safetensors 0 || fail "2 ranks trained other weights than 1 replica"
mpi 2 train "${args[@]}" --replicas 2 --checkpoint-dir m22 --overlap-reduce off
[ "$rc" = 0 ] || fail "2 ranks x 2: exit $rc: $(cat err)"
same r1/latest.safetensors m22/latest.safetensors 0 || fail "2 ranks x 2 replicas trained other weights than 1"
finish
