#!/usr/bin/env bash
# A run and its checkpoint directory: one run per directory (another is
# refused without --resume); an epoch's end killed between its two files
# is completed by the resume and leaves no temporary; precision is a
# setting of the run; --resume without a checkpoint says so; a relative
# --data is found from another directory; an option given twice is
# refused; a category value is as long as checkpoints keep, or pack says
# which one is not; limits in messages name their numbers.
set -u
: "${SEQFEED:?SEQFEED must name the seqfeed binary}"
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"
tmp=$(mktemp -d /tmp/sfruns.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
"$SEQFEED" synth -o s.sfpack --rows 3000 --feature-count 2 --series-count 1 -q || exit 1
settings=(--window 8 --batch-size 16 --model lstm:4,dense --seed 5 --val-split 0.1 -q)
common=(--data s.sfpack "${settings[@]}")

# --- A column named twice: refused before training (it would train, then
# fail to write every checkpoint, or write one that cannot be resumed).
printf 't,c,a\n' >cc.csv
for i in $(seq 1 200); do echo "$i,$([ $((i % 3)) = 0 ] && echo x || echo '"y,z"'),$((i % 5))" >>cc.csv; done
run 0 pack cc.csv -o cc.sfpack --time-column t --time-unit s --categorical c -q
for twice in "--features f0,f0" "--features f0,\"f0\"" "--targets f1,f0,f1"; do
    read -r opt list <<<"$twice"
    run 2 train "${common[@]}" --epochs 1 "$opt" "$list" --checkpoint-dir dup
    expect err "^seqfeed train: error: s.sfpack: [a-z]+ \"f[01]\" is named twice in $opt '$list': name each column once"
    [ ! -e dup ] || fail "a refused $opt $list created its checkpoint directory"
done
run 2 train --data cc.sfpack --model lstm:4,dense --window 5 --batch-size 8 --epochs 1 --features a,c,c --checkpoint-dir dup
expect err "feature \"c\" is named twice in --features 'a,c,c'"
run 2 bench pipeline --data s.sfpack --features f1,f1 --epochs 1
expect err "feature \"f1\" is named twice in --features 'f1,f1'"

# --- An option given twice: which value was meant is the user's to say.
"$SEQFEED" synth -o t.sfpack --rows 3000 --feature-count 2 --series-count 1 --seed 2 -q || exit 1
run 2 train "${common[@]}" --epochs 1 --data t.sfpack --checkpoint-dir twice
expect err "^seqfeed train: error: --data is given twice \(s.sfpack, then t.sfpack\): give it once"
[ ! -e twice ] || fail "a refused command line created its checkpoint directory"
run 2 train "${common[@]}" --epochs 1 --window 8 --checkpoint-dir twice
expect err "--window is given twice \(8, then 8\)"
run 2 synth -o x.sfpack -o y.sfpack --rows 10
expect err "^seqfeed synth: error: --output is given twice \(x.sfpack, then y.sfpack\)"
run 2 inspect --data s.sfpack --data t.sfpack
expect err "^seqfeed inspect: error: --data is given twice"
# A flag given twice says nothing new: accepted.
run 0 inspect --data s.sfpack -q -q

# --- One run per directory.
run 0 train "${common[@]}" --epochs 2 --checkpoint-dir a
cp a/latest.safetensors a.before
run 2 train "${common[@]}" --epochs 3 --checkpoint-dir a
expect err "^seqfeed train: error: --checkpoint-dir a holds another run's checkpoints \(latest.safetensors, best.safetensors, epoch-0002.safetensors\): a new run there would mix with it \(hint: --resume continues that run; a fresh --checkpoint-dir starts a new one\)"
cmp -s a.before a/latest.safetensors || fail "the refused run changed the other run's latest.safetensors"
[ ! -e a/epoch-0003.safetensors ] || fail "the refused run wrote an epoch file"
# Its epoch files alone are a run too.
mkdir olds && cp a/epoch-0001.safetensors olds/
run 2 train "${common[@]}" --epochs 1 --checkpoint-dir olds
expect err "--checkpoint-dir olds holds another run's checkpoints \(epoch-0001.safetensors\)"
# And --resume goes on with it.
run 0 train --checkpoint-dir a --resume --epochs 3 -q
[ -f a/epoch-0003.safetensors ] || fail "--resume did not go on: $(ls a)"

# --- --resume where there is nothing to resume.
run 2 train --checkpoint-dir empty --resume
expect err "^seqfeed train: error: there is no checkpoint in empty \(no latest.safetensors\): nothing to resume \(hint: leave --resume out, and give --data, to start a run there\)"
grep -q "missing --data" err && fail "--resume without a checkpoint still says 'missing --data': $(cat err)"
run 2 train --checkpoint-dir olds --resume
expect err "--checkpoint-dir olds holds epoch-0001.safetensors but no latest.safetensors"
run 2 train "${common[@]}" --epochs 2 --checkpoint-dir olds --resume
expect err "--checkpoint-dir olds holds epoch-0001.safetensors but no latest.safetensors"
# With --data the same command line starts the run (a job's first attempt).
run 0 train "${common[@]}" --epochs 1 --checkpoint-dir first --resume
[ -f first/epoch-0001.safetensors ] || fail "--resume --data without a checkpoint did not start the run"

# --- A kill between an epoch's two renames: latest at the end of epoch 2,
# no epoch-0002, the temporaries the writes had open. The resume completes
# the epoch file from latest, removes them, and the run ends as one never
# killed.
run 0 train "${common[@]}" --epochs 3 --checkpoint-dir full
run 0 train "${common[@]}" --epochs 2 --checkpoint-dir k
cp k/epoch-0002.safetensors e2
killed() {
    rm -f k/epoch-0002.safetensors
    head -c 1000 k/latest.safetensors >"k/epoch-0002.safetensors.tmp.$$.abcdef"
    cp k/latest.safetensors "k/latest.safetensors.tmp.999999.ghijkl"
}
killed
run 0 train --checkpoint-dir k --resume
expect err "^resume: k/epoch-0002.safetensors was missing, and latest.safetensors stands at that epoch's end: written now from it"
expect err "^resume: the run has done its 2 epochs: nothing to do \(hint: --epochs above 2 trains further\)"
cmp -s e2 k/epoch-0002.safetensors || fail "the completed epoch-0002 is not the epoch's checkpoint"
ls k | grep -q '\.tmp\.' && fail "a temporary outlived the resume: $(ls k)"
killed
run 0 train --checkpoint-dir k --resume --epochs 3 -q
cmp -s e2 k/epoch-0002.safetensors || fail "the completed epoch-0002 is not the epoch's checkpoint"
ls k | grep -q '\.tmp\.' && fail "a temporary outlived the resumed run: $(ls k)"
same full/latest.safetensors k/latest.safetensors 0 || fail "the killed and resumed run differs from the one never killed"
same full/epoch-0003.safetensors k/epoch-0003.safetensors 0 || fail "epoch 3 differs from the run never killed"

run 0 train --checkpoint-dir full --resume --epochs 2
expect err "^resume: the checkpoint has done 3 epochs, more than --epochs 2: nothing to do \(hint: --epochs above 3 trains further\)"

# --- The run's --log is a setting of the run: --resume with only
# --checkpoint-dir, from another directory too, goes on writing it.
mkdir -p logs/sub
run 0 train "${common[@]}" --epochs 2 --checkpoint-dir logs/run --log logs/log.csv
(cd logs/sub && "$SEQFEED" train --checkpoint-dir ../run --resume --epochs 4 -q) >out 2>err ||
    fail "a resume of a run with a log: $(cat err)"
[ "$(cut -d, -f1 logs/log.csv | tr '\n' ' ')" = "epoch 1 2 3 4 " ] || fail "the resumed run's log: $(cat logs/log.csv)"
[ ! -e logs/sub/logs ] || fail "the resume wrote its log elsewhere: $(ls -R logs/sub)"

# --- A damaged or edited checkpoint: every setting's range is checked
# where it is read, naming the checkpoint and the key.
for bad in batch=99999999999 batch=0 val_split=1.5 replicas=0 lr=2000 window=8,1,0,1 window=99999999999,1,1,1; do
    rm -rf ed && cp -r full ed && rm ed/seqfeed.lock
    edmeta ed/latest.safetensors "$bad"
    run 1 train --checkpoint-dir ed --resume --epochs 4
    expect err "^seqfeed train: error: ed/latest.safetensors: metadata '${bad%%=*}' is '?${bad#*=}'?, expected .*\(a damaged or edited checkpoint\)"
    grep -q -- "--batch-size\|not a range" err && fail "a damaged checkpoint blamed on a flag: $(cat err)"
done
# A run of an older seqfeed that predicted its windows' own last row
# (horizon 0): not resumed as if it were another run; still read by predict.
rm -rf ed && cp -r full ed && rm ed/seqfeed.lock
edmeta ed/latest.safetensors window=8,1,1,0
run 2 train --checkpoint-dir ed --resume --epochs 4
expect err "^seqfeed train: error: ed/latest.safetensors: the run predicts its windows' own last row \(window horizon 0, from an older seqfeed\): --resume trains only for a later row"
[ ! -e ed/epoch-0004.safetensors ] || fail "a horizon-0 run was resumed"
run 0 predict --checkpoint ed/latest.safetensors --data s.sfpack -o h0.csv -q

# --- Precision is the run's: another is refused, naming both.
run 2 train --checkpoint-dir a --resume --epochs 4 --precision bf16
expect err "^seqfeed train: error: --precision bf16 differs from the checkpoint's fp32 in a/latest.safetensors \(hint: --resume continues the run as it was: leave --precision out"
run 0 train --checkpoint-dir a --resume --epochs 4 --precision fp32 -q
# tf32 computes with fp32 weights: a tf32 run (a GPU job) goes on in fp32
# when asked (here, a CPU machine), and its checkpoints then record fp32;
# without --precision the refusal names the checkpoint's tf32 and the way on.
cp -r full tf && rm tf/seqfeed.lock
edmeta tf/latest.safetensors precision=tf32
run 2 train --checkpoint-dir tf --resume --epochs 4
expect err "^seqfeed train: error: tf/latest.safetensors: the run trains in tf32 \(the checkpoint's precision\), which needs GPUs of compute capability 8.0 or later, and this machine trains on the CPU \(hint: --precision fp32 continues it here"
run 0 train --checkpoint-dir tf --resume --epochs 4 --precision fp32
expect err "^resume: --precision fp32 from here on \(the run trained in tf32 until now; both keep fp32 weights\): its checkpoints record fp32"
grep -aq '"precision":"fp32"' tf/latest.safetensors || fail "the run resumed in fp32 still records tf32"
run 0 train --checkpoint-dir tf --resume --epochs 5 -q
[ -f tf/epoch-0005.safetensors ] || fail "the run gone on in fp32 did not resume in fp32"
# bf16 weights are another run's: refused both ways.
edmeta tf/latest.safetensors precision=bf16
run 2 train --checkpoint-dir tf --resume --epochs 6 --precision fp32
expect err "--precision fp32 differs from the checkpoint's bf16"

# A checkpoint from before precision was kept resumes in the one given.
cp -r full old && rm old/seqfeed.lock
edmeta old/latest.safetensors precision=
run 0 train --checkpoint-dir old --resume --epochs 4 --precision fp32 -q
[ -f old/epoch-0004.safetensors ] || fail "a checkpoint without precision did not resume"
grep -aq '"precision":"fp32"' old/latest.safetensors || fail "the resumed run's checkpoint does not keep its precision"

# --- A relative --data kept in the checkpoint, resumed from elsewhere:
# found from the checkpoint's directory, passing over another file of the
# same relative name in the current one (its content is not the run's).
mkdir -p d elsewhere/d nest && cp s.sfpack d/ && cp t.sfpack elsewhere/d/s.sfpack
run 0 train "${settings[@]}" --data d/s.sfpack --epochs 1 --checkpoint-dir nest/rel
run 0 train "${settings[@]}" --data d/s.sfpack --epochs 1 --checkpoint-dir nest/rel2
(cd elsewhere && "$SEQFEED" train --checkpoint-dir ../nest/rel --resume --epochs 2 -q) >out 2>err ||
    fail "a resume from another directory: $(cat err)"
[ -f nest/rel/epoch-0002.safetensors ] || fail "the resume from another directory did not train"
# Neither file is the run's: both named, and --data.
cp t.sfpack d/s.sfpack
(cd elsewhere && "$SEQFEED" train --checkpoint-dir ../nest/rel2 --resume --epochs 2 -q) >out 2>err
[ $? -eq 2 ] || fail "a resume where no file is the run's data: $(cat err)"
expect err "the run's data d/s.sfpack was not found: tried d/s.sfpack \(another file: its content differs\), ../nest/rel2/../../d/s.sfpack \(another file: its content differs\) \(hint: --data FILE.sfpack names where it is now\)"
cp s.sfpack d/s.sfpack
(cd elsewhere && "$SEQFEED" train --checkpoint-dir ../nest/rel2 --resume --epochs 2 --data ../d/s.sfpack -q) >out 2>err ||
    fail "--data as the hint says: $(cat err)"
rm -r elsewhere/d
mv d gone
(cd elsewhere && "$SEQFEED" train --checkpoint-dir ../nest/rel --resume --epochs 3 -q) >out 2>err
[ $? -eq 2 ] || fail "a resume whose data is gone: $(cat err)"
expect err "the run's data ../nest/rel/../../d/s.sfpack is missing \(hint: --data FILE.sfpack names where it is now\)"
run 2 train --checkpoint-dir nest/rel2 --resume --epochs 3 -q
expect err "the run's data ../d/s.sfpack is neither in this directory nor at nest/rel2/../../d/s.sfpack \(hint: --data FILE.sfpack names where it is now\)"
mv gone d

# --- Category values: as long as the limit, every command loads the run;
# one byte more, pack names the line, the column, the limit and the length.
category_csv() {
    python3 - "$1" "$2" <<'PY'
import random, sys
random.seed(1)
long = "x" * int(sys.argv[2])
with open(sys.argv[1], "w") as f:
    f.write("time,cat,v\n")
    for i in range(600):
        f.write(f"2020-01-01T{i // 60:02d}:{i % 60:02d}:00,{long if i % 3 == 0 else 'b'},{random.random()}\n")
PY
}
category_csv c4095.csv 4095
run 0 pack c4095.csv -o c4095.sfpack --categorical cat -q
run 0 train --data c4095.sfpack --window 5 --batch-size 16 --epochs 1 --model lstm:4,dense --checkpoint-dir cat -q
run 0 predict --checkpoint cat/latest.safetensors --data c4095.sfpack -o p.csv -q
run 0 evaluate --checkpoint cat/latest.safetensors --data c4095.sfpack -q
run 0 train --checkpoint-dir cat --resume --epochs 2 -q
category_csv c4096.csv 4096
run 1 pack c4096.csv -o c4096.sfpack --categorical cat
expect err "c4096.csv:2:21: a value of categorical column \"cat\" is 4096 bytes long, more than the 4095 a category value may have"
[ ! -e c4096.sfpack ] || fail "pack wrote a file it refused"

# --- Limits name their numbers: column names longer than a checkpoint keeps.
python3 - <<'PY' || exit 1
import random
random.seed(2)
names = ["c%d_" % k + "n" * 2000 for k in range(3)]
with open("wide.csv", "w") as f:
    f.write(",".join(names) + "\n")
    for i in range(300):
        f.write(",".join("%.3f" % random.random() for _ in names) + "\n")
PY
run 0 pack wide.csv -o wide.sfpack -q
run 1 train --data wide.sfpack --window 5 --batch-size 16 --epochs 1 --checkpoint-dir wide -q
expect err "the feature columns' names take at least 6011 bytes as a list, more than the 4095 a checkpoint keeps \(hint: fewer --features\)"
# A categorical column's name and values as a checkpoint lists them (a
# list inside a list: quoted twice, quotes doubled each time) fit, to the
# byte, or pack refuses it at the value that does not fit.
quotes_csv() {
    python3 - "$1" "$2" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("t,cat,v\n")
    for i in range(400):
        f.write('%d,"%s",%d\n' % (i, '""' * int(sys.argv[2]) if i % 2 else "short", i % 7))
PY
}
quotes_csv q4091.csv 4091  # cat, 4091 quotes, short: 4 * 4091 + 16 = 16380 bytes
run 0 pack q4091.csv -o q4091.sfpack --time-column t --time-unit s --categorical cat -q
run 0 train --data q4091.sfpack --window 5 --batch-size 16 --epochs 1 --model lstm:4,dense --checkpoint-dir q -q
run 0 train --checkpoint-dir q --resume --epochs 2 -q
quotes_csv q4092.csv 4092
run 1 pack q4092.csv -o q4092.sfpack --time-column t --time-unit s --categorical cat
expect err "^seqfeed pack: error: q4092.csv:3:3: categorical column \"cat\" takes 16384 bytes with this value \(its distinct value 2\) as a checkpoint lists its name and values \(quoted, quotes doubled\), more than the 16383 a checkpoint keeps for them"
[ ! -e q4092.sfpack ] || fail "pack wrote a file it refused"
python3 - <<'PY' || exit 1
with open("cats.csv", "w") as f:
    f.write("cat,v\n")
    for i in range(300):
        f.write("%s,%d\n" % ("abcde"[i % 5] * 4000, i % 7))
PY
run 1 pack cats.csv -o cats.sfpack --categorical cat
expect err "^seqfeed pack: error: cats.csv:6:1: categorical column \"cat\" takes 20010 bytes with this value \(its distinct value 5\)"
# Columns that fit one by one, not together: train says how many bytes,
# counted as the checkpoint lists them.
python3 - <<'PY' || exit 1
with open("cats2.csv", "w") as f:
    f.write("c1,c2,v\n")
    for i in range(300):
        f.write("%s,%s,%d\n" % ("abc"[i % 3] * 3000, "xyz"[i % 3] * 3000, i % 7))
PY
run 0 pack cats2.csv -o cats2.sfpack --categorical c1,c2 -q
run 0 train --data cats2.sfpack --features c1,v --window 5 --batch-size 16 --epochs 1 --checkpoint-dir cats1 -q
run 1 train --data cats2.sfpack --window 5 --batch-size 16 --epochs 1 --checkpoint-dir cats2 -q
expect err "the categorical features' names and values take 18015 bytes as a checkpoint lists them, more than the 16383 it keeps for them \(hint: fewer categorical --features\)"

# A --checkpoint-dir too long for the files a run writes there.
long=$(printf 'd/%.0s' {1..2100})
run 2 train "${common[@]}" --epochs 1 --checkpoint-dir "$long"
expect err "the path is 4200 bytes long, more than the 4053 the run's files there leave it"
finish
