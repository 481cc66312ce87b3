"""A Dataset in Keras 3, tf.data and PyTorch, each imported only when used.

Keras: a Dataset made after `import keras` is also a keras.utils.PyDataset,
so that model.fit(ds, validation_data=val, epochs=E) takes it on every
backend. Keras asks a PyDataset for batches by index, in an order of its own
(shuffled by fit's shuffle=True), and asks some twice: the TensorFlow
backend reads the first two to learn their shape, and every backend reads
one to build the model. The training pipeline has its own order (train's),
so the index only says whether a batch is new in this round: every new
index gets the pipeline's next batch, an index asked again in the round the
batch it got (the first few of a round and the last few are kept), and a
round ends after batches_per_epoch distinct indexes, one pipeline epoch. So
each window is seen once per Keras epoch, and Keras' epoch k is train's
epoch k (its shuffle from the seed and k). The validation split is read in
order: index i is batch i.
"""
import collections
import sys
import threading
import warnings

_FIRST, _RECENT = 4, 8  # batches of a round kept for a second ask: its first ones, and the latest


class Feed:
    """The training pipeline's batches served by index, as the module says; from any thread."""

    def __init__(self, ds):
        self._ds, self._lock, self._it = ds, threading.Lock(), None
        self._asked, self._first, self._recent = set(), {}, collections.OrderedDict()
        self._warned = False

    def get(self, index):
        with self._lock:
            if len(self._asked) >= self._ds.batches_per_epoch:  # a new round: the pipeline's next epoch
                self._asked.clear(), self._first.clear(), self._recent.clear()
            if index in self._asked:
                b = self._first.get(index, self._recent.get(index))
                if b is not None:
                    return b
                if not self._warned:
                    warnings.warn("seqfeed.Dataset: batch index %d asked again after its batch was let go (an "
                                  "epoch keeps its first %d and its latest %d): served the pipeline's next batch, "
                                  "so the epochs from here on are one batch off train's" % (index, _FIRST, _RECENT),
                                  stacklevel=3)
                    self._warned = True
            else:
                self._asked.add(index)
            if self._it is None:
                self._it = self._ds._endless()
            b = next(self._it)
            if len(self._first) < _FIRST:
                self._first[index] = b
            else:
                self._recent[index] = b
                if len(self._recent) > _RECENT:
                    self._recent.popitem(last=False)
            return b


_classes = {}


def dataset_class(base):
    """base with Keras 3's PyDataset mixed in, when the keras imported is Keras 3; else base."""
    keras = sys.modules.get("keras")
    py_dataset = getattr(getattr(keras, "utils", None), "PyDataset", None)
    if py_dataset is None:
        return base
    if py_dataset not in _classes:
        class KerasDataset(base, py_dataset):
            __doc__ = base.__doc__

            def __init__(self, *args, **kwargs):
                base.__init__(self, *args, **kwargs)
                # One worker, no processes: the pipeline has its threads; batches come in its order anyway.
                py_dataset.__init__(self, workers=1, use_multiprocessing=False)

        KerasDataset.__name__ = KerasDataset.__qualname__ = base.__name__
        KerasDataset.__module__ = base.__module__
        _classes[py_dataset] = KerasDataset
    return _classes[py_dataset]


def to_tf(ds):
    """A tf.data.Dataset of the Dataset's batches (one pass: all its epochs, or the validation part once)."""
    try:
        import tensorflow as tf
    except ImportError:
        raise ImportError("Dataset.to_tf() needs TensorFlow, which is not installed: pip install tensorflow") from None
    b = None if ds.split == "validation" else ds.batch  # the validation part's last batch may be shorter
    x = tf.TensorSpec((b, ds.window, ds.inputs), tf.float32)
    if ds.nfuture or ds.nonehot:  # the exported model's named inputs
        x = {"window": x}
        if ds.nfuture:
            x["future"] = tf.TensorSpec((b, ds.steps, ds.nfuture), tf.float32)
        if ds.nonehot:
            x["series"] = tf.TensorSpec((b, ds.nonehot), tf.float32)
    y = (b, ds.steps, ds.targets) if ds.steps > 1 else (b, ds.targets)
    spec = (x, tf.TensorSpec(y, tf.float32))
    return tf.data.Dataset.from_generator(lambda: iter(ds), output_signature=spec).prefetch(2)


_torch_class = None


def to_torch(ds):
    """A torch.utils.data.IterableDataset of the Dataset's batches as tensors (views, no copy): for
    DataLoader(ds.to_torch(), batch_size=None) with no worker processes (the pipeline has its own threads;
    each worker would draw every batch again)."""
    global _torch_class
    try:
        import torch.utils.data as tud
    except ImportError:
        raise ImportError("Dataset.to_torch() needs PyTorch, which is not installed: pip install torch") from None
    if _torch_class is None:
        import torch

        class Batches(tud.IterableDataset):
            def __init__(self, ds):
                self.dataset = ds

            def __len__(self):
                return len(self.dataset)

            def __iter__(self):
                info = tud.get_worker_info()
                if info is not None and info.num_workers > 1:
                    raise ValueError("seqfeed.Dataset.to_torch(): DataLoader(num_workers=%d) would draw every batch "
                                     "%d times: use num_workers=0 (the pipeline has its own threads)" %
                                     (info.num_workers, info.num_workers))
                for x, y in self.dataset:
                    if isinstance(x, dict):  # with future features: window and future
                        yield {k: torch.from_numpy(v) for k, v in x.items()}, torch.from_numpy(y)
                    else:
                        yield torch.from_numpy(x), torch.from_numpy(y)

        _torch_class = Batches
    return _torch_class(ds)
