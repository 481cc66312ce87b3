"""The data of bench/time_to_loss.sh as a Keras or PyTorch user builds it from
the CSV with pandas and numpy, to be the same windows, scaling and targets
that `seqfeed train` trains and validates on:

- each series (rows of one --series-column value, in file order; else the
  whole file) split in time: its last floor(rows x val_split) rows are the
  validation part, the rest the training part (pipeline/plan.c
  `sf_split_rows`);
- a window is `window` consecutive rows and its target the row `horizon`
  (1) after the window's last; a training window lies wholly in the
  training part; a validation window too (val_by_rows=False, seqfeed
  before issue 25), or (val_by_rows=True) every row of the validation part
  is a target and its window may reach back into the training part, never
  before the series' first row (pipeline/plan.c `series_windows`);
- values as float32 (what .sfpack stores), scaled by the z-score of each
  column over the training parts' rows (mean and population std, ddof 0:
  pack/filter.c), x * (1 / std) + (-mean / std) in float32.

The loss is the MSE over every validation window and every target, on the
scaled values: `seqfeed evaluate --json`'s "loss", Keras' "val_loss".
"""
import numpy as np
import pandas as pd


def load(csv, columns, series_column=None, window=60, val_split=0.1, horizon=1, val_by_rows=False):
    """(x_train, y_train, x_val, y_val) float32: x (N, window, F), y (N, F)."""
    frame = pd.read_csv(csv)
    values = frame[columns].to_numpy(np.float32)
    if series_column:
        keys = frame[series_column].to_numpy()
        edges = np.flatnonzero(keys[1:] != keys[:-1]) + 1
        bounds = list(zip(np.r_[0, edges], np.r_[edges, len(keys)]))
    else:
        bounds = [(0, len(values))]
    train_parts, val_parts = [], []
    for lo, hi in bounds:
        cut = hi - int((hi - lo) * val_split)
        train_parts.append((lo, cut))
        val_parts.append((cut, hi))
    rows = np.concatenate([values[lo:hi] for lo, hi in train_parts]).astype(np.float64)
    mean, std = rows.mean(axis=0), rows.std(axis=0)
    scale, offset = (1 / std).astype(np.float32), (-mean / std).astype(np.float32)
    scaled = values * scale + offset

    span = window + horizon

    def windows(parts, reach_back=None):
        if reach_back:  # placed by their targets, inputs from the series' first row on
            starts = np.concatenate([np.arange(max(lo - span + 1, first), hi - span + 1)
                                     for (lo, hi), (first, _) in zip(parts, reach_back)]).astype(np.int64)
        else:
            starts = np.concatenate([np.arange(lo, hi - span + 1) for lo, hi in parts
                                     if hi - lo >= span]).astype(np.int64)
        x = scaled[starts[:, None] + np.arange(window)]
        y = scaled[starts + window - 1 + horizon]
        return np.ascontiguousarray(x), np.ascontiguousarray(y)

    return windows(train_parts) + windows(val_parts, bounds if val_by_rows else None)


def model_units(spec):
    """'lstm:64,lstm:64,dense' -> [64, 64]: the LSTM widths of a seqfeed --model
    made of LSTMs and a last dense (the only shape the peers build)."""
    parts = spec.split(",")
    if parts[-1] != "dense" or not all(p.startswith("lstm:") for p in parts[:-1]):
        raise SystemExit("ttl_data: --model must be lstm:U,...,lstm:U,dense, got " + spec)
    return [int(p.split(":")[1]) for p in parts[:-1]]


def add_args(ap):
    """The options every peer takes, with the driver's spellings."""
    ap.add_argument("--csv", required=True)
    ap.add_argument("--columns", required=True, help="features = targets, comma separated")
    ap.add_argument("--series-column")
    ap.add_argument("--window", type=int, default=60)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--val-split", type=float, default=0.1)
    ap.add_argument("--model", default="lstm:64,lstm:64,dense")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--patience", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="0: the library's default")
    ap.add_argument("--val-by-rows", action="store_true", help="validation windows placed by their target rows")


def say(*fields):
    """One line to the driver, which stamps it as it arrives."""
    print(",".join(str(f) for f in fields), flush=True)
