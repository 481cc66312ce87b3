"""The options every training peer of `seqfeed bench train` takes
(torch_lstm.py, keras_lstm.py): bench/all.sh calls them alike, and they
print the same "batch B: S samples/s" lines."""
import argparse


def parser():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", default="32,256")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--window", type=int, default=60)
    ap.add_argument("--features", type=int, default=3)
    ap.add_argument("--targets", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    return ap


def report(batch, samples_per_s):
    print(f"batch {batch}: {samples_per_s:.1f} samples/s")
