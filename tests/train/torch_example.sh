#!/usr/bin/env bash
# docs/examples/predict_torch.py loads a checkpoint into PyTorch and
# reproduces seqfeed predict's numbers (float32 on both sides; within 1e-4
# relative). Skipped (77) when torch and numpy are not importable.
set -u
: "${SEQFEED:?}" "${SRCDIR:?}"
python3 -c "import torch, numpy" 2>/dev/null || { echo "skipped: torch and numpy are not installed"; exit 77; }
tmp=$(mktemp -d /tmp/sftorch.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
"$SEQFEED" synth -o s.sfpack --rows 3000 --feature-count 3 --series-count 2 -q &&
"$SEQFEED" unpack s.sfpack -o data.csv || exit 1
# An LSTM stack, then GRUs (torch.nn.GRU) with an LSTM between them.
for model in lstm:20,dropout:0.2,lstm:12,dense:6,dense gru:20,dropout:0.2,lstm:12,gru:8,dense:6,dense; do
rm -rf ck
"$SEQFEED" train --data s.sfpack --features f0,f1,f2 --targets f1,f2 --window 16 --stride 3 --horizon 2 \
    --model $model --batch-size 32 --epochs 1 --checkpoint-dir ck -q &&
"$SEQFEED" predict --checkpoint ck/latest.safetensors --data s.sfpack -o seqfeed.csv &&
python3 "$SRCDIR/docs/examples/predict_torch.py" ck/latest.safetensors data.csv >torch.csv || exit 1
python3 - "$model" <<'PY' || exit 1
import csv, sys
a = list(csv.reader(open("seqfeed.csv"))); b = list(csv.reader(open("torch.csv")))
if a[0] != b[0] or len(a) != len(b) or len(a) < 100:
    sys.exit(f"header or row count differ: {a[0]} {len(a)} vs {b[0]} {len(b)}")
worst = 0.0
for ra, rb in zip(a[1:], b[1:]):
    if ra[:2] != rb[:2]:
        sys.exit(f"window {ra[:2]} vs {rb[:2]}")
    for x, y in zip(ra[2:], rb[2:]):
        worst = max(worst, abs(float(x) - float(y)) / max(1.0, abs(float(y))))
print(f"{sys.argv[1]}: {len(a) - 1} predictions, largest difference {worst:.2g}")
sys.exit(0 if worst < 1e-4 else "predictions differ")
PY
done
