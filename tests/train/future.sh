#!/usr/bin/env bash
# --future-features: the declared columns' values at the target rows are
# inputs, and nothing else of a target row is (leakage): changing a
# non-declared column (or the target) at and after a row leaves every
# forecast made before that row as it was, changing a declared one changes
# them; a flag that drives the target lowers the validation loss; the
# checkpoint keeps the names and inputs (predict, evaluate and resume read
# them); the names --future-features refuses, with exit 2 naming the name
# and the flag; bf16 where this build has it. --series-features onehot:
# the checkpoint's series by name, predict refusing a series it has not
# seen and predicting one series alone as among the others, the forms it
# refuses; embedding:D's table in the checkpoint. meson sets SEQFEED and
# SRCDIR.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
# Two series of hourly rows (promo_data.py): sales = a daily cycle + 2 x promo, where promo
# is a random flag known in advance; noise is random and unrelated.
python3 "$SRCDIR/tests/train/promo_data.py" 400 360 300 || exit 1
for f in f f2 f3; do run 0 pack $f.csv -o $f.sfpack --series-column id -q; done
common=(--data f.sfpack --targets sales --model lstm:16,dense --window 8 --batch-size 32 --seed 3 --lr 0.01
        --val-split 0.25 --horizon 1-3 --gpus none -q)

# Refused names: exit 2, the flag and the name in the message.
run 2 train "${common[@]}" --epochs 1 --future-features nope --checkpoint-dir bad
expect err '--future-features nope: "nope" is none of the window.s inputs'
run 2 train "${common[@]}" --epochs 1 --future-features time --checkpoint-dir bad
expect err '--future-features time: "time" is the time column'
run 2 train "${common[@]}" --epochs 1 --future-features sales --checkpoint-dir bad
expect err '--future-features sales: "sales" is a target'
run 2 train "${common[@]}" --epochs 1 --future-features id --checkpoint-dir bad
expect err '--future-features id: "id" is the series column'
run 2 train "${common[@]}" --epochs 1 --features sales,noise --future-features promo --checkpoint-dir bad
expect err '--future-features promo: "promo" is a column but none of the window.s inputs.*--features'
run 2 train "${common[@]}" --epochs 1 --future-features promo,promo --checkpoint-dir bad
expect err '--future-features: "promo" is named twice'
run 2 train "${common[@]}" --epochs 1 --future-features hour --checkpoint-dir bad
expect err '--future-features hour: "hour" is none of the window.s inputs.*--time-features'
[ ! -e bad ] || fail "a refused run left a checkpoint directory"

# With the flag's future values the model sees what drives the target.
run 0 train "${common[@]}" --epochs 6 --time-features hour --checkpoint-dir without --log without.csv
run 0 train "${common[@]}" --epochs 6 --time-features hour --future-features promo,hour --checkpoint-dir with \
    --log with.csv
python3 - <<'PY' || fail "future features did not lower val_loss: $(cat without.csv with.csv)"
import csv
a = float(list(csv.DictReader(open("without.csv")))[-1]["val_loss"])
b = float(list(csv.DictReader(open("with.csv")))[-1]["val_loss"])
print("val_loss without %.4f, with promo,hour at the targets %.4f" % (a, b))
assert b < 0.5 * a, (a, b)
PY
[ "$(meta with/latest.safetensors future_features)" = "promo,hour" ] ||
    fail "future_features: $(meta with/latest.safetensors future_features)"
# promo one input (the first), hour its sine and cosine (after the columns).
[ "$(meta with/latest.safetensors future_inputs)" = "0,3,4" ] || fail "future_inputs: $(meta with/latest.safetensors future_inputs)"
meta without/latest.safetensors future_features >/dev/null && fail "a run without future features kept the key"
run 0 evaluate --checkpoint with --data f.sfpack -q

# Leakage: forecasts are compared by window (its last input row's time: the
# forecast's time less its step).
for f in f f2 f3; do run 0 predict --checkpoint with --data $f.sfpack -o $f.pred.csv -q; done
python3 - <<'PY' || fail "a target row's values leaked, or the future features were not read"
import csv, datetime
def load(name):
    out = {}
    for r in csv.DictReader(open(name)):
        t = datetime.datetime.fromisoformat(r["time"]) - datetime.timedelta(hours=int(r["step"]))
        out[(r["id"], t, int(r["step"]))] = float(r["sales_pred"])
    return out
base, other, flag = load("f.pred.csv"), load("f2.pred.csv"), load("f3.pred.csv")
cut = datetime.datetime(2021, 3, 1) + datetime.timedelta(hours=300)
before = [k for k in base if k[0] == "south" and k[1] < cut]
assert len(before) > 100 and base.keys() == other.keys() == flag.keys()
# noise and sales from row 300 on: no window whose rows end before it moves
same = [k for k in before if base[k] != other[k]]
assert not same, same[:5]
# promo from row 300 on: the windows whose targets reach it move
reach = [k for k in before if k[1] >= cut - datetime.timedelta(hours=3)]
assert len(reach) == 9 and all(base[k] != flag[k] for k in reach), [(k, base[k], flag[k]) for k in reach]
far = [k for k in before if k[1] < cut - datetime.timedelta(hours=3)]
assert all(base[k] == flag[k] for k in far)
# north is untouched by either
assert all(base[k] == other[k] == flag[k] for k in base if k[0] == "north")
print("windows before row 300: %d unchanged by noise and sales; the %d whose targets reach it moved with promo"
      % (len(before), len(reach)))
PY

# Resume keeps them: another list is refused by name.
run 2 train --checkpoint-dir with --resume --future-features promo --epochs 7 -q
expect err "--future-features"
run 0 train --checkpoint-dir with --resume --epochs 7 -q

# bf16, where this build has bf16 products: trains and predicts alike.
if ! "$SEQFEED" info | grep -q '^bf16 *cpu: none'; then
    run 0 train "${common[@]}" --epochs 2 --time-features hour --future-features promo,hour --precision bf16 \
        --checkpoint-dir b16
    run 0 predict --checkpoint b16 --data f3.sfpack -o b16.csv --precision bf16 -q
    [ "$(wc -l <b16.csv)" = "$(wc -l <f3.pred.csv)" ] || fail "bf16 predict wrote $(wc -l <b16.csv) lines"
fi
# --series-features onehot: an input per series of the training file, kept by name.
for bad in embedding:0 embedding:x embedding:4097 embedding onehot:2 id; do
    run 2 train "${common[@]}" --epochs 1 --series-features "$bad" --checkpoint-dir bad
    expect err "--series-features $bad: expected onehot \\(an input per series\\) or embedding:D"
done
python3 -c 'print("v"); [print(i % 7) for i in range(60)]' >one.csv
run 0 pack one.csv -o one.sfpack -q
run 2 train --data one.sfpack --window 4 --epochs 1 --series-features onehot --gpus none -q --checkpoint-dir bad
expect err '--series-features: the file has one series, without a series column'
run 0 train "${common[@]}" --epochs 2 --future-features promo --series-features onehot --checkpoint-dir s
[ "$(meta s/latest.safetensors series_features)" = "onehot" ] || fail "series_features: $(meta s/latest.safetensors series_features)"
[ "$(meta s/latest.safetensors series_names)" = "north,south" ] || fail "series_names: $(meta s/latest.safetensors series_names)"
run 0 predict --checkpoint s --data f.sfpack -o s.csv -q
# A file whose series the model has not seen: refused, naming it.
sed 's/^north,/east,/' f.csv >east.csv
run 0 pack east.csv -o east.sfpack --series-column id -q
run 2 predict --checkpoint s --data east.sfpack -o east.pred.csv -q
expect err 'series "east" \(row 0\) is not one of the 2 series the model was trained on with --series-features'
[ ! -e east.pred.csv ] || fail "a refused predict wrote its output"
# One series of them alone predicts as it did among both.
run 0 pack south.csv -o south.sfpack --series-column id -q
run 0 predict --checkpoint s --data south.sfpack -o south.pred.csv -q
python3 - <<'PY' || fail "south alone predicts otherwise than among both"
import csv
both = [float(r["sales_pred"]) for r in csv.DictReader(open("s.csv")) if r["id"] == "south"]
alone = [float(r["sales_pred"]) for r in csv.DictReader(open("south.pred.csv"))]
# To float32's last digits: the batch around a window can block its products otherwise.
assert len(both) == len(alone) > 100, (len(both), len(alone))
assert all(abs(a - b) <= 1e-5 * max(1, abs(a)) for a, b in zip(both, alone)), max(abs(a - b) for a, b in zip(both, alone))
PY
# embedding:D: a learned (series, D) table in the checkpoint, Keras' Embedding's name.
run 0 train "${common[@]}" --epochs 2 --series-features embedding:3 --checkpoint-dir emb
[ "$(meta emb/latest.safetensors series_features)" = "embedding:3" ] ||
    fail "series_features: $(meta emb/latest.safetensors series_features)"
python3 - <<'PY' || fail "no embedding/embeddings (2, 3) in the checkpoint"
import json, struct
b = open("emb/latest.safetensors", "rb").read()
h = json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])
assert h["embedding/embeddings"]["shape"] == [2, 3], h.get("embedding/embeddings")
assert h["dense/kernel"]["shape"] == [16 + 3, 3], h["dense/kernel"]  # the LSTM's 16, the embedding's 3
PY
run 0 predict --checkpoint emb --data south.sfpack -o emb.pred.csv -q
run 2 predict --checkpoint emb --data east.sfpack -o emb.east.csv -q
expect err 'series "east" \(row 0\) is not one of the 2 series'
run 2 train --checkpoint-dir emb --resume --series-features embedding:4 --epochs 3 -q
expect err "--series-features embedding:4 differs from the checkpoint's embedding:3"
run 0 train --checkpoint-dir emb --resume --epochs 3 -q
# Resume keeps them: added to a run without, refused.
run 2 train --checkpoint-dir with --resume --series-features onehot --epochs 8 -q
expect err "--series-features onehot differs from the checkpoint's \(none\)"
run 0 train --checkpoint-dir s --resume --series-features onehot --epochs 3 -q
finish
