#!/usr/bin/env bash
# seqfeed train under mpirun (Open MPI): 2 ranks x 1 replica end with the
# weights of 1 rank x 2 replicas, and 2 ranks x 2 those of 1 x 4, bit for
# bit (the parts of the global batch are summed in its order); rank 0 alone writes checkpoints and the log; the trace has a
# process per rank, and each layer's gradient sum across ranks starts while
# the backward pass goes on below it, with the weights of one sum after it
# (--overlap-reduce off); a run resumes across rank counts; a
# rank that is killed, hangs or fails ends the job, every rank non-zero,
# with a message naming the rank, in bounded time; ranks started with other
# settings, or other files to write (--checkpoint-dir, --log, ...), are
# refused.
set -u
: "${SEQFEED:?SEQFEED must name the seqfeed binary}" "${SRCDIR:?}"
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"
mpirun --version 2>/dev/null | grep -q 'Open MPI' || { echo "Open MPI's mpirun not installed: skipped"; exit 77; }
"$SEQFEED" info | grep -q 'built with MPI' || { echo "seqfeed built without MPI: skipped"; exit 77; }
tmp=$(mktemp -d /tmp/sfmpi.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
"$SEQFEED" synth -o s.sfpack --rows 5000 --feature-count 3 --series-count 2 -q || exit 1
# Without --data, --epochs, --seed and --pool, which some runs give otherwise.
base=(--features f0,f1,f2 --targets f0,f2 --model lstm:16,dropout:0.2,lstm:8,dense --window 12 --batch-size 32
      --val-split 0.2)
common=(--data s.sfpack "${base[@]}" --epochs 2 --seed 3 --pool 256 -q)
verbose=("${common[@]:0:${#common[@]}-1}")  # without -q
long=(--data s.sfpack "${base[@]}" --epochs 1000 --seed 3 --pool 256)  # stopped by a signal

# mpi NP ARGS...: seqfeed ARGS as NP ranks; stdout in out, stderr in err, status in $rc.
mpi() {
    local np=$1
    shift
    timeout 120 mpirun --allow-run-as-root --oversubscribe -np "$np" "$SEQFEED" "$@" >out 2>err
    rc=$?
}

# wrapped WHO NAME PRELUDE ARGS...: seqfeed ARGS on 2 ranks through a
# wrapper NAME.sh that first runs PRELUDE on rank WHO (or on all): a
# signal to come, or more arguments in extra. stdout in out, stderr in
# err, status in $rc.
wrapped() {
    local who=$1 name=$2 prelude=$3 cond='[ "$OMPI_COMM_WORLD_RANK" = '"$1"' ]'
    shift 3
    [ "$who" = all ] && cond=true
    printf '#!/bin/bash\nextra=()\nif %s; then\n%s\nfi\nexec "%s" "$@" "${extra[@]}"\n' "$cond" "$prelude" \
        "$SEQFEED" >"$name.sh"
    chmod +x "$name.sh"
    timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 "./$name.sh" "$@" >out 2>err
    rc=$?
}

# 2 ranks x 1 replica against 1 process x 2 replicas: dropout masks, shards
# and the gradient sum follow the global replica index.
run 0 train "${common[@]}" --replicas 2 --checkpoint-dir one --log one.csv
mpi 2 train "${common[@]}" --replicas 1 --checkpoint-dir two --log two.csv --trace t.json
[ "$rc" -eq 0 ] || fail "2 ranks: exit $rc: $(cat err)"
same one/latest.safetensors two/latest.safetensors 0 || fail "2 ranks x 1 replica end with other weights than 1 x 2"
same one/epoch-0001.safetensors two/epoch-0001.safetensors 0 || fail "epoch 1 differs between 2 x 1 and 1 x 2"
# One log, rows written once (rank 0): a header and 2 epochs.
[ "$(wc -l <two.csv)" -eq 3 ] || fail "the log of 2 ranks has $(wc -l <two.csv) lines: $(cat two.csv)"
cut -d, -f2 one.csv >l1 && cut -d, -f2 two.csv >l2
cmp -s l1 l2 || fail "training losses differ: $(paste -d' ' l1 l2 | tr '\n' ' ')"
# Epochs of --steps-per-epoch steps and validations of --validation-steps
# batches: the ranks take their turns at the first batches and stop
# together, as one process's replicas do.
bounded=(--steps-per-epoch 50 --validation-steps 2 --epochs 3)
over common "${bounded[@]}"
run 0 train "${args[@]}" --replicas 2 --checkpoint-dir b1 --log b1.csv
mpi 2 train "${args[@]}" --replicas 1 --checkpoint-dir b2 --log b2.csv
[ "$rc" -eq 0 ] || fail "2 ranks, bounded epochs: exit $rc: $(cat err)"
same b1/latest.safetensors b2/latest.safetensors 0 || fail "bounded epochs: 2 ranks x 1 differ from 1 x 2"
[ -f b2/epoch-0003.safetensors ] || fail "bounded epochs on 2 ranks: $(ls b2)"
cut -d, -f3 b1.csv >v1 && cut -d, -f3 b2.csv >v2
cmp -s v1 v2 && [ "$(grep -c . v1)" -eq 4 ] || fail "bounded validations differ: $(paste -d' ' v1 v2 | tr '\n' ' ')"
python3 - <<'PY' || fail "the trace of 2 ranks: $(head -c 300 t.json)"
import json
ev = json.load(open("t.json"))["traceEvents"]
procs = {e["pid"]: e["args"]["name"] for e in ev if e.get("name") == "process_name"}
assert procs.get(1) == "seqfeed rank 0" and procs.get(2) == "seqfeed rank 1", procs
for pid in (1, 2):
    spans = {e["name"] for e in ev if e.get("ph") == "X" and e["pid"] == pid}
    assert {"forward+backward", "all-reduce", "ranks: batch", "update"} <= spans, (pid, spans)
    # Every step sums its layers across ranks top first, and the top layer's
    # sum starts while the backward pass is still on the layers below.
    track = {e["tid"] for e in ev if e.get("name") == "thread_name" and e["pid"] == pid
             and e["args"]["name"] == "gradient sums across ranks"}
    assert len(track) == 1, (pid, track)
    sums = sorted((e for e in ev if e.get("ph") == "X" and e["pid"] == pid and e["tid"] in track),
                  key=lambda e: e["ts"])
    passes = [e for e in ev if e.get("ph") == "X" and e["pid"] == pid and e["name"] == "forward+backward"]
    assert sums and len(sums) == 3 * len(passes), (pid, len(sums), len(passes))
    assert [e["name"] for e in sums[:3]] == ["dense", "lstm_1", "lstm"], [e["name"] for e in sums[:3]]
    for top in sums[::3]:
        assert any(p["ts"] < top["ts"] < p["ts"] + p["dur"] for p in passes), (pid, top)
PY

# The layers' sums started during the backward pass add in the same order
# as one sum after it: the same weights, bit for bit.
mpi 2 train "${common[@]}" --replicas 1 --checkpoint-dir after --overlap-reduce off
[ "$rc" -eq 0 ] || fail "2 ranks, --overlap-reduce off: exit $rc: $(cat err)"
same two/latest.safetensors after/latest.safetensors 0 || fail "--overlap-reduce off ends with other weights"

# 2 ranks x 2 replicas against 1 x 4: the same parts, summed in the same
# order.
run 0 train "${common[@]}" --replicas 4 --max-steps 20 --checkpoint-dir four
mpi 2 train "${common[@]}" --replicas 2 --max-steps 20 --checkpoint-dir twotwo
[ "$rc" -eq 0 ] || fail "2 ranks x 2: exit $rc: $(cat err)"
same four/latest.safetensors twotwo/latest.safetensors 0 || fail "2 ranks x 2 replicas differ from 1 x 4"
# rank 0 speaks for the job: the profile of every replica of every rank.
mpi 2 train "${verbose[@]}" --replicas 2 --max-steps 20 --report r.html
[ "$rc" -eq 0 ] || fail "2 ranks, verbose: exit $rc: $(cat err)"
grep -q "4 (2 ranks x 2)" r.html && grep -q "replica 3" r.html || fail "the report lacks the job's replicas"
grep -q "on 4 cpu replica(s) (2 ranks x 2)" err || fail "no job line: $(cat err)"
grep -q "replica 3: 19 steps" err || fail "the profile lacks rank 1's replicas: $(cat err)"
[ "$(grep -c '^diagnosis:' err)" -eq 1 ] || fail "more than one rank printed a diagnosis: $(cat err)"

# Stopped by --max-steps on 2 ranks mid-epoch, resumed in one process with
# the same 2 replicas: exactly the uninterrupted run.
mpi 2 train "${common[@]}" --replicas 1 --checkpoint-dir r --checkpoint-every 25 --max-steps 60
[ "$rc" -eq 0 ] || fail "2 ranks, stopped: exit $rc: $(cat err)"
run 0 train "${common[@]}" --replicas 2 --checkpoint-dir r --resume
same one/latest.safetensors r/latest.safetensors 0 || fail "2 ranks resumed as 1 x 2 differ from the uninterrupted run"

# The whole job killed (SIGKILL, every rank) after its first mid-epoch
# checkpoint, then resumed on 2 ranks: the uninterrupted run's weights.
wrapped all crash '(while [ ! -f c/latest.safetensors ]; do sleep 0.01; done; kill -9 $$) &' \
    train "${common[@]}" --replicas 1 --checkpoint-dir c --checkpoint-every 40
# mpirun may return before the last rank is gone.
for _ in $(seq 500); do pgrep -f 'checkpoint-dir c ' >/dev/null || break; sleep 0.02; done
[ -f c/latest.safetensors ] && [ ! -f c/epoch-0002.safetensors ] || fail "the job was not killed mid-run: $(ls c)"
mpi 2 train "${common[@]}" --replicas 1 --checkpoint-dir c --checkpoint-every 40 --resume
[ "$rc" -eq 0 ] || fail "resuming the killed job: exit $rc: $(cat err)"
same two/latest.safetensors c/latest.safetensors 0 || fail "the killed and resumed job differs from the uninterrupted one"

# With another replica count the run goes on where it stopped (test
# elastic: the same weights as the run never stopped).
mpi 2 train "${common[@]}" --replicas 1 --checkpoint-dir r1 --max-steps 60
run 0 train "${verbose[@]}" --replicas 1 --checkpoint-dir r1 --resume
grep -q "starts again" err && fail "the resumed run on 1 replica started its epoch again: $(cat err)"
same two/latest.safetensors r1/latest.safetensors 0 || fail "2 ranks resumed on 1 replica differ from the run never stopped"

# Ctrl-C (SIGINT) on rank 1 alone: every rank stops at the same step, and
# rank 0 writes the checkpoint.
# Each signal comes once the job trains (rank 0 has begun its log, after
# the ranks agreed), not after a fixed sleep a slow start outlasts.
started() { echo "(while [ ! -s $1 ]; do sleep 0.05; done; sleep 0.5; kill -$2 \$\$) &"; }
wrapped 1 int "$(started i.csv INT)" train "${long[@]}" --checkpoint-dir i --log i.csv
[ "$rc" -eq 130 ] || fail "an interrupt on rank 1: exit $rc, expected 130: $(tail -5 err)"
expect err "^stopped after [0-9]+ steps"
[ -f i/latest.safetensors ] || fail "no checkpoint after the interrupt: $(ls i)"

# SIGTERM on every rank (scancel, preemption): all stop after the same
# step, with a checkpoint.
wrapped all term "$(started tm.csv TERM)" train "${long[@]}" --checkpoint-dir tm --log tm.csv
[ "$rc" -eq 143 ] || fail "SIGTERM on every rank: exit $rc, expected 143: $(tail -5 err)"
expect err "rank [01] of 2: SIGTERM from the launcher"  # a rank may stop, by the other's, before its own arrives
expect err "^stopped after [0-9]+ steps"
[ -f tm/latest.safetensors ] || fail "no checkpoint after SIGTERM: $(ls tm)"

# A memory budget shrinks each rank's shuffle pool by its own decoders and
# cores; the ranks take the smallest, so rank 1 alone with more decoders
# trains as both with more decoders.
budget=(--data s.sfpack "${base[@]}" --epochs 2 --seed 3 -q --pool 16384 --memory-budget 34 --max-steps 30)
wrapped all decoders 'extra=(--decoders 2); [ "$OMPI_COMM_WORLD_RANK" = 1 ] && extra=(--decoders 8)' \
    train "${budget[@]}" --checkpoint-dir d1
[ "$rc" -eq 0 ] || fail "rank 1 with more decoders: exit $rc: $(cat err)"
mpi 2 train "${budget[@]}" --decoders 8 --checkpoint-dir d8
[ "$rc" -eq 0 ] || fail "ranks with more decoders: exit $rc: $(cat err)"
same d1/latest.safetensors d8/latest.safetensors 0 || fail "ranks shuffled with pools of different sizes"

# Ranks started with other settings, files to write, or data of the same
# shape but other values or chunks.
"$SEQFEED" synth -o other.sfpack --rows 5000 --feature-count 3 --series-count 2 --seed 9 -q || exit 1
"$SEQFEED" synth -o chunks.sfpack --rows 5000 --feature-count 3 --series-count 2 --chunk-rows 512 -q || exit 1
# differ OPT VALUE0 VALUE1: seqfeed train on 2 ranks for an epoch, rank 0
# with OPT VALUE0 and rank 1 with OPT VALUE1 (VALUE0 '': rank 0 without
# OPT), every other option as in one.
one=(--data s.sfpack --seed 3 "${base[@]}" --epochs 1 --pool 256 -q)
differ() {
    local opt=$1 zero=$2 one_value=$3 args=() k
    for ((k = 0; k < ${#one[@]}; k++)); do
        if [ "${one[k]}" = "$opt" ]; then k=$((k + 1)); else args+=("${one[k]}"); fi
    done
    wrapped all other "extra=(${zero:+$opt $zero}); [ \"\$OMPI_COMM_WORLD_RANK\" = 1 ] && extra=($opt $one_value)" \
        train "${args[@]}"
}
for extra in '--seed 3 4' '--trace "" t1.json' '--overlap-reduce "" off' '--data s.sfpack other.sfpack' \
             '--data s.sfpack chunks.sfpack' '--checkpoint-dir c0 c1' '--log l0.csv l1.csv' '--checkpoint-dir "" c1' \
             '--report r0.html r1.html'; do
    eval "differ $extra"
    [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "rank 1 with $extra: exit $rc"
    expect err "rank 1 of 2: the run's settings .* differs on 1 rank\(s\) from rank 0's"
done
expect err "the files written: --checkpoint-dir, --log, --trace, --report"
[ ! -e l0.csv ] && [ ! -e l1.csv ] || fail "ranks that disagree on --log wrote one"

# A rank that fails (its data is missing) ends the job, naming itself.
differ --data s.sfpack gone.sfpack
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "a rank without its data: exit $rc"
expect err "rank 1 of 2: gone.sfpack"

# A rank killed mid-training (SIGKILL): the launcher names it and ends the
# other, which says which rank it is; well before the timeout.
start=$(date +%s)
wrapped 1 kill "$(started k.csv 9)" train "${long[@]}" -q --log k.csv
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "a killed rank: exit $rc"
expect err "process rank 1 .* exited on signal 9"
expect err "rank 0 of 2: SIGTERM from the launcher"
[ $(($(date +%s) - start)) -lt 60 ] || fail "the job took $(($(date +%s) - start)) s to end after a rank was killed"

# A rank that hangs (SIGSTOP): the other's collective times out and ends
# the job.
wrapped 1 hang "$(started h.csv STOP)" train "${long[@]}" -q --collective-timeout 2 --log h.csv
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "a hung rank: exit $rc"
expect err "rank 0 of 2: .* did not complete within 2 s"
finish
