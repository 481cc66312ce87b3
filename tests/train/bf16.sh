#!/usr/bin/env bash
# --precision bf16 on CPU from the command line: a short run on the bundled
# data lands within 5% of the fp32 run's validation loss (same seed, same
# steps); checkpoints stay fp32, so either precision predicts from either
# run's, and a run resumes in its own precision only; without the oneDNN module
# the error names --precision. Skipped (77) where this build or CPU has no
# bf16 products. meson sets SEQFEED and SRCDIR.
set -u
: "${SEQFEED:?SEQFEED must name the seqfeed binary}" "${SRCDIR:?}"
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"
if "$SEQFEED" info | grep -q '^bf16 *cpu: none'; then
    echo "skip: $("$SEQFEED" info | grep '^bf16')"
    exit 77
fi
tmp=$(mktemp -d /tmp/sfbf16.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
run 0 pack "$SRCDIR/data/hourly-temperatures-2010.csv" -o t.sfpack --series-column site -q
common=(--data t.sfpack --targets temp --window 24 --batch-size 64 --epochs 3 --seed 5
        --model lstm:64,dropout:0.2,lstm:64,dense --gpus none -q)
run 0 train "${common[@]}" --precision fp32 --checkpoint-dir f --log f.csv
# Dot products without AMX ran slower than fp32: a line says so, else none.
run 0 train --data t.sfpack --targets temp --window 24 --model lstm:8,dense --max-steps 1 --gpus none \
    --precision bf16 --checkpoint-dir note
case "$("$SEQFEED" info | grep '^bf16')" in
*AVX512_BF16*) expect err "^precision: bf16 on AVX512_BF16 dot products, without AMX: measured slower than fp32" ;;
*) grep -q "without AMX" err && fail "a note about AMX on a CPU that is not without it: $(cat err)" ;;
esac
run 0 train "${common[@]}" --precision bf16 --checkpoint-dir b --log b.csv
python3 - <<'PY' || fail "bf16 and fp32 runs differ: $(cat f.csv b.csv)"
import csv, sys
f = list(csv.DictReader(open("f.csv")))[-1]; b = list(csv.DictReader(open("b.csv")))[-1]
val = abs(float(b["val_loss"]) / float(f["val_loss"]) - 1)
train = abs(float(b["loss"]) / float(f["loss"]) - 1)
print(f"val_loss fp32 {f['val_loss']} bf16 {b['val_loss']} ({val:.2%}); loss {f['loss']} {b['loss']} ({train:.2%})")
sys.exit(val > 0.05 or train > 0.05)
PY

# Checkpoints hold float32 tensors only, whichever precision trained.
python3 - <<'PY' || fail "a bf16 run's checkpoint holds other than F32 tensors"
import json, struct, sys
data = open("b/latest.safetensors", "rb").read()
n = struct.unpack("<Q", data[:8])[0]
h = json.loads(data[8:8 + n])
sys.exit(any(v["dtype"] != "F32" for k, v in h.items() if k != "__metadata__"))
PY
# Either precision predicts from either checkpoint, within bf16's rounding.
for ck in f b; do
    for p in fp32 bf16; do
        run 0 predict --checkpoint $ck/latest.safetensors --data t.sfpack --split validation --precision $p -o $ck-$p.csv
    done
    python3 - $ck <<'PY' || fail "checkpoint $1: bf16 predictions stray from fp32 ones"
import csv, sys
ck = sys.argv[1]
a = [float(r["temp_pred"]) for r in csv.DictReader(open(f"{ck}-fp32.csv"))]
b = [float(r["temp_pred"]) for r in csv.DictReader(open(f"{ck}-bf16.csv"))]
scale = max(abs(v) for v in a)
worst = max(abs(x - y) for x, y in zip(a, b))
print(f"{ck}: {len(a)} predictions, bf16 within {worst:.3g} of fp32 (scale {scale:.3g})")
sys.exit(len(a) != len(b) or len(a) == 0 or worst > 0.02 * scale)
PY
done
run 0 evaluate --checkpoint b/latest.safetensors --data t.sfpack --precision bf16 --json
expect out '"loss": '
# A run resumes in its own precision, which its checkpoint keeps: another
# would make the resumed steps another run's.
run 0 train "${common[@]}" --precision bf16 --checkpoint-dir r --max-steps 20
run 2 train --checkpoint-dir r --resume --precision fp32 --max-steps 40 -q
expect err "--precision fp32 differs from the checkpoint's bf16 in r/latest.safetensors"
run 0 train --checkpoint-dir r --resume --max-steps 40 -q
grep -aq '"precision":"bf16"' r/latest.safetensors || fail "the resumed run's checkpoint does not say bf16"
python3 - <<'PY' || fail "the resumed checkpoint is not at step 20 + 40"
import json, struct
data = open("r/latest.safetensors", "rb").read()
h = json.loads(data[8:8 + struct.unpack("<Q", data[:8])[0]])
assert h["__metadata__"]["step"] == "60", h["__metadata__"]
PY

# Without the module: a usage error that names the option and the way out.
SEQFEED_ONEDNN_MODULE=/nonexistent/seqfeed-onednn.so run 2 train "${common[@]}" --precision bf16 --checkpoint-dir m
expect err "--precision bf16: .*oneDNN module.*--precision fp32"
[ -e m/latest.safetensors ] && fail "a refused run wrote a checkpoint"
# A library in the module's place that is no oneDNN module (the program's
# own API library): refused the same way, naming the missing entry point.
SEQFEED_ONEDNN_MODULE="$(dirname "$SEQFEED")/libseqfeed.so" run 2 train "${common[@]}" --precision bf16 \
    --checkpoint-dir m
expect err "--precision bf16: .*the oneDNN module has no sf_matmul_module.*--precision fp32"
finish
