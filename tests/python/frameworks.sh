#!/usr/bin/env bash
# seqfeed.Dataset in the frameworks users train with, each part skipped
# when its framework is absent (SEQFEED_PYTHON names a Python that has
# them; 77 when it has none): Keras 3's model.fit from it runs an epoch and
# consumes each batch once; tf.data.Dataset.from_generator over it yields
# the same batches; a PyTorch loop trains from torch.from_numpy views.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
LIBSEQFEED=${1:?libseqfeed.so}
py=${SEQFEED_PYTHON:-python3}
have() { "$py" -c "import $1" 2>/dev/null; }
if ! have numpy || { ! have keras && ! have tensorflow && ! have torch; }; then
    echo "no Keras, TensorFlow or PyTorch at SEQFEED_PYTHON=$py: nothing to check" >&2
    exit 77
fi
case $(ldd "$LIBSEQFEED" | grep -o 'lib[at]san' | head -1) in
lib*) echo "a sanitized build: the frameworks are checked in the plain one" >&2; exit 77 ;;
esac
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
export SEQFEED_LIB=$LIBSEQFEED PYTHONPATH=$SRCDIR/python
"$SEQFEED" synth -o s.sfpack --rows 6000 --feature-count 3 --series-count 2 -q || exit 1
checked=0
if have keras && { have tensorflow || have jax || have torch; }; then
    checked=1
    "$py" - <<'PY' || fail "Keras' model.fit from seqfeed.Dataset"
import importlib.util, os
if not importlib.util.find_spec("tensorflow"):  # Keras' default backend; else one that is there
    os.environ.setdefault("KERAS_BACKEND", "jax" if importlib.util.find_spec("jax") else "torch")
import keras, numpy as np, seqfeed
ds = seqfeed.Dataset("s.sfpack", window=16, batch_size=32, targets="f0", epochs=2, seed=3)
served = []
def counted():
    for x, y in ds:
        served.append(1)
        yield x, y
m = keras.Sequential([keras.Input((16, ds.inputs)), keras.layers.LSTM(8), keras.layers.Dense(ds.targets)])
m.compile("adam", "mse")
h = m.fit(counted(), steps_per_epoch=ds.batches_per_epoch, epochs=2, verbose=0)
loss = h.history["loss"]
assert len(loss) == 2 and all(np.isfinite(loss)), loss
assert len(served) == 2 * ds.batches_per_epoch, (len(served), ds.batches_per_epoch)
print(keras.backend.backend(), "fit:", loss)
PY
fi
if have tensorflow; then
    checked=1
    "$py" - <<'PY' || fail "tf.data.Dataset.from_generator over seqfeed.Dataset"
import numpy as np, tensorflow as tf, seqfeed
ds = seqfeed.Dataset("s.sfpack", window=16, batch_size=32, targets="f0,f2", seed=5)
spec = (tf.TensorSpec((ds.batch, 16, ds.inputs), tf.float32), tf.TensorSpec((ds.batch, ds.targets), tf.float32))
tfds = tf.data.Dataset.from_generator(lambda: iter(ds), output_signature=spec).prefetch(2)
got = [(x.numpy(), y.numpy()) for x, y in tfds]
want = list(ds)
assert len(got) == len(want) == len(ds) and all((a == c).all() and (b == d).all() for (a, b), (c, d) in zip(got, want))
print("tf.data:", len(got), "batches equal")
PY
fi
if have torch; then
    checked=1
    "$py" - <<'PY' || fail "a PyTorch loop from seqfeed.Dataset"
import torch, seqfeed
ds = seqfeed.Dataset("s.sfpack", window=16, batch_size=32, targets="f0", epochs=2)
lstm, head = torch.nn.LSTM(ds.inputs, 8, batch_first=True), torch.nn.Linear(8, ds.targets)
opt = torch.optim.Adam(list(lstm.parameters()) + list(head.parameters()), 1e-3)
losses = []
for x, y in ds:
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)  # views of the batch, no copy
    assert xt.data_ptr() == x.ctypes.data
    loss = torch.nn.functional.mse_loss(head(lstm(xt)[0][:, -1]), yt)
    opt.zero_grad(), loss.backward(), opt.step()
    losses.append(loss.item())
assert len(losses) == len(ds) and losses[-1] == losses[-1], losses[-3:]
print("torch:", len(losses), "steps, last loss", losses[-1])
PY
fi
[ "$checked" -eq 1 ] || exit 77
finish
