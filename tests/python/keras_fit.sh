#!/usr/bin/env bash
# Keras 3's model.fit(ds, validation_data=val, epochs=2) straight from
# seqfeed.Dataset, on every backend SEQFEED_PYTHON (or python3) has among
# TensorFlow, JAX and PyTorch (77 without Keras or any of them): each epoch
# trains on exactly the batches of train's epoch of that number (once
# each, whatever indexes Keras asks, twice for some), val_loss is the
# model's MSE over every validation window, and a Dataset made before
# Keras was imported is refused by Keras with a message that says why.
# import seqfeed never imports Keras. ds.to_torch() and ds.to_tf() give
# the Dataset's batches on those backends.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
LIBSEQFEED=${1:?libseqfeed.so}
py=${SEQFEED_PYTHON:-python3}
have() { "$py" -c "import $1" 2>/dev/null; }
backends=()
for b in tensorflow jax torch; do have "$b" && backends+=("$b"); done
# Keras without KERAS_BACKEND imports TensorFlow: asked with a backend that is there.
if ! have numpy || [ ${#backends[@]} -eq 0 ] || ! KERAS_BACKEND=${backends[0]} have keras; then
    echo "no Keras 3 with a backend (TensorFlow, JAX, PyTorch) at SEQFEED_PYTHON=$py: nothing to check" >&2
    exit 77
fi
case $(ldd "$LIBSEQFEED" | grep -o 'lib[at]san' | head -1) in
lib*) echo "a sanitized build: the frameworks are checked in the plain one" >&2; exit 77 ;;
esac
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
export SEQFEED_LIB=$LIBSEQFEED PYTHONPATH=$SRCDIR/python OMP_NUM_THREADS=1 TF_NUM_INTEROP_THREADS=1 \
    TF_NUM_INTRAOP_THREADS=1 TF_CPP_MIN_LOG_LEVEL=3 XLA_FLAGS=--xla_cpu_multi_thread_eigen=false
"$SEQFEED" synth -o s.sfpack --rows 3000 --feature-count 3 --series-count 2 -q || exit 1
"$py" - <<'PY' || fail "import seqfeed imports Keras"
import sys
import seqfeed
assert "keras" not in sys.modules and "torch" not in sys.modules and "tensorflow" not in sys.modules, sys.modules.keys()
ds = seqfeed.Dataset("s.sfpack", window=16, batch_size=32, targets="f0")
assert not hasattr(ds, "workers"), "a PyDataset without Keras"
PY
for backend in "${backends[@]}"; do
    KERAS_BACKEND=$backend "$py" - <<'PY' || fail "model.fit(ds, validation_data=val) on $KERAS_BACKEND"
import os, warnings
import numpy as np
import seqfeed
early = seqfeed.Dataset("s.sfpack", window=16, batch_size=32, targets="f0")  # before Keras: no PyDataset
import keras
if keras.backend.backend() == "torch":
    import torch
    torch.set_num_threads(1)
keras.utils.set_random_seed(2)
kw = dict(window=16, batch_size=32, targets="f0,f2", target_change=True, seed=9, val_split=0.2)
ds = seqfeed.Dataset("s.sfpack", **kw)
val = seqfeed.Dataset("s.sfpack", split="validation", **kw)
assert isinstance(ds, keras.utils.PyDataset) and isinstance(val, keras.utils.PyDataset)
# What Keras is served, epoch by epoch (the model's build asks before the first epoch begins).
served, epoch = [[]], [0]
get = type(ds).__getitem__
def spy(self, i):
    b = get(self, i)
    if self is ds:
        served[epoch[0]].append(b)
    return b
type(ds).__getitem__ = spy
class Epochs(keras.callbacks.Callback):
    def on_epoch_end(self, e, logs=None):
        epoch[0] += 1
        served.append([])
m = keras.Sequential([keras.Input((16, ds.inputs)), keras.layers.LSTM(8), keras.layers.Dense(ds.targets)])
m.compile("adam", "mse")
with warnings.catch_warnings():
    warnings.simplefilter("error", UserWarning)  # "asked again ... off by one batch" would fail here
    h = m.fit(ds, validation_data=val, epochs=2, verbose=0, callbacks=[Epochs()])
loss, vloss = h.history["loss"], h.history["val_loss"]
assert len(loss) == 2 and np.isfinite(loss + vloss).all(), h.history
want = list(seqfeed.Dataset("s.sfpack", epochs=2, **kw))  # train's two epochs
n = ds.batches_per_epoch
key = lambda b: b[0].tobytes() + b[1].tobytes()
for e in range(2):
    got = {id(b[0]): b for b in served[e]}.values()  # a batch asked again is the same arrays
    assert len(got) == n, (e, len(got), n)
    assert sorted(map(key, got)) == sorted(map(key, want[e * n:(e + 1) * n])), "epoch %d is not train's" % e
# val_loss: over every validation window once.
x = np.concatenate([b[0] for b in val])
y = np.concatenate([b[1] for b in val])
assert len(x) == val.windows
mse = float(np.mean((m.predict(x, verbose=0, batch_size=256) - y) ** 2))
assert abs(mse - vloss[-1]) < 1e-4 * mse, (mse, vloss[-1])
try:
    m.fit(early, epochs=1, verbose=0)
    raise SystemExit("fit took a Dataset made before keras was imported")
except ValueError as e:
    assert "keras is imported before it is made" in str(e), e
print(keras.backend.backend(), "fit:", loss, vloss)
if keras.backend.backend() == "torch":
    ds = seqfeed.Dataset("s.sfpack", window=16, batch_size=32, targets="f0", epochs=2)
    got = list(torch.utils.data.DataLoader(ds.to_torch(), batch_size=None))
    want = list(ds)
    assert len(got) == len(want) == len(ds.to_torch()) == 2 * ds.batches_per_epoch
    assert all((a.numpy() == c).all() and (b.numpy() == d).all() for (a, b), (c, d) in zip(got, want)), "to_torch"
if keras.backend.backend() == "tensorflow":
    for split in ("train", "validation"):
        ds = seqfeed.Dataset("s.sfpack", window=16, batch_size=32, targets="f0", split=split)
        got, want = [(x.numpy(), y.numpy()) for x, y in ds.to_tf()], list(ds)
        assert len(got) == len(want) == len(ds)
        assert all((a == c).all() and (b == d).all() for (a, b), (c, d) in zip(got, want)), "to_tf " + split
PY
done
finish
