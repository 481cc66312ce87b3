#!/usr/bin/env bash
# Elastic runs (issue 29): the global batches and the sum of their parts'
# gradients do not depend on the replicas or the ranks, so the weights after
# N steps are the same bit for bit on 1, 2, 3 and 4 CPU replicas and on 2 MPI
# ranks (dropout included: its masks follow the global batch's rows); a
# checkpoint records its place in that sequence, so a run written by 4
# replicas resumes on 1, and one written by 1 resumes on 2 ranks, ending as
# the run never interrupted. The ranks' part skips without Open MPI.
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
# The run on 4 replicas, stopped inside its first epoch, resumed on 1.
run 0 train "${args[@]}" --replicas 4 --checkpoint-dir k4 --max-steps 11
run 0 train --checkpoint-dir k4 --resume --replicas 1 -q
same r1/latest.safetensors k4/latest.safetensors 0 || fail "4 replicas resumed on 1 differ from the run never stopped"
# More replicas than the run's parts: a resume keeps its --batch-size, so
# the hint names only fewer --replicas.
run 2 train --checkpoint-dir k4 --resume --replicas 7 --epochs 3
expect err "48 is cut into 6 part\(s\) of at least 8 windows, and each of the 7 replicas takes whole parts \(hint: at most 6 --replicas: a resumed run keeps its --batch-size\)"
# A checkpoint from before parts (no batch_parts): its weights go on, and
# the epoch it stopped inside starts again, saying so.
run 0 train "${args[@]}" --replicas 2 --checkpoint-dir k2 --max-steps 5
python3 - k2/latest.safetensors old.safetensors <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
del h["__metadata__"]["batch_parts"]
t = json.dumps(h, separators=(",", ":")).encode()
t += b" " * (-len(t) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(t)) + t + b[8 + n:])
PY
mkdir old && cp old.safetensors old/latest.safetensors
run 0 train --checkpoint-dir old --resume --replicas 2 --epochs 1
expect err "^resume: the checkpoint is from before the global batch was cut into parts \(an older seqfeed, whose batches depended on the replicas\): epoch 1 starts again from its beginning"
cut -d, -f1,2 r1.csv >want.csv
cut -d, -f1,2 r4.csv >got.csv
cmp -s want.csv got.csv || fail "the losses of 4 replicas differ from 1's: $(paste -d' ' want.csv got.csv)"

# The same with a quantile loss (three outputs a target value), with a
# future feature and the series through an embedding (the covariates
# travel with each part's windows), and with both.
qargs=(--data s.sfpack --targets f2 --model lstm:12,dropout:0.2,lstm:6,dense --window 10 --horizon 1-2
       --batch-size 48 --val-split 0.1 --seed 3 --epochs 2 -q)
for extra in "--loss quantile:0.1,0.5,0.9" "--future-features f0 --series-features embedding:2" \
             "--loss quantile:0.1,0.5,0.9 --future-features f0 --series-features embedding:2"; do
    for R in 1 2 3; do
        # shellcheck disable=SC2086
        run 0 train "${qargs[@]}" $extra --replicas "$R" --checkpoint-dir "q$R"
        [ "$R" = 1 ] || same q1/latest.safetensors "q$R/latest.safetensors" 0 ||
            fail "$extra: $R replicas trained other weights than 1"
    done
    rm -rf q1 q2 q3
done

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
# 1 replica stopped inside its first epoch, resumed on 2 ranks.
run 0 train "${args[@]}" --replicas 1 --checkpoint-dir k1 --max-steps 13
mpi 2 train --checkpoint-dir k1 --resume --replicas 1 -q
[ "$rc" = 0 ] || fail "resumed on 2 ranks: exit $rc: $(cat err)"
same r1/latest.safetensors k1/latest.safetensors 0 || fail "1 replica resumed on 2 ranks differs from the run never stopped"
finish
