#!/usr/bin/env python3
"""PyTorch DataLoader peer for `seqfeed bench pipeline`.

Reads the same .sfpack into RAM (a small reader of the format, numpy +
zstandard), scales it with the packed statistics as seqfeed does (z-score),
and serves the same windows (length T, stride 1, horizon 1, never across a
series end, every column as feature and as target) through a
torch.utils.data.DataLoader in shuffled batches: one numpy gather per batch,
the fastest way to use a DataLoader on this data. Prints windows/s, best of
num_workers 0 and 2.

usage: torch_loader.py FILE.sfpack [--window 60] [--batch 256] [--windows N]
Needs numpy, torch and zstandard (PyPI); not part of the tests.
"""
import argparse
import struct
import time

import numpy as np
import torch
import zstandard


def read_sfpack(path):
    """Every value of the file as float32 (rows, ncols), stats, series."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"SFPACK\x1a\n", "not an .sfpack"
    ncols, chunk_rows, filt = struct.unpack_from("<III", data, 16)
    toff, tsize = struct.unpack_from("<QQ", data, len(data) - 32)
    nrows, nchunks, nseries = struct.unpack_from("<QQQ", data, toff + 8)
    pos = toff + 32
    stats = np.frombuffer(data, "<f8", 4 * ncols, pos).reshape(ncols, 4)  # min max mean std
    pos += 32 * ncols
    index = np.frombuffer(data, "<u8,<u4,<u4", nchunks, pos)
    pos += 16 * nchunks
    series = np.frombuffer(data, "<u8", 2 * nseries, pos).reshape(nseries, 2)
    out = np.empty((nrows, ncols), np.float32)
    dctx = zstandard.ZstdDecompressor()
    for i, (off, size, _crc) in enumerate(index):
        rows = min(chunk_rows, nrows - i * chunk_rows)
        raw = np.frombuffer(dctx.decompress(data[off:off + size], max_output_size=rows * ncols * 4), np.uint8)
        if filt == 0:
            u = raw.view("<u4")
        else:  # byte planes, then (filter 2) the zigzag delta per column
            u = (raw.reshape(4, -1).astype(np.uint32) << np.array([[0], [8], [16], [24]], np.uint32)).sum(
                axis=0, dtype=np.uint32)
            if filt == 2:
                u = (u >> 1) ^ (np.uint32(0) - (u & 1))
                u = np.cumsum(u.reshape(ncols, rows), axis=1, dtype=np.uint32).reshape(-1)
        out[i * chunk_rows:i * chunk_rows + rows] = u.view(np.float32).reshape(ncols, rows).T
    return out, stats, series


class Windows(torch.utils.data.Dataset):
    """A batch of window starts in, (x, y) out: one gather per batch."""

    def __init__(self, values, starts, length, horizon):
        self.values, self.starts = values, starts
        self.offsets = np.arange(length)
        self.target = length - 1 + horizon

    def __len__(self):
        return len(self.starts)

    def __getitem__(self, batch):
        s = self.starts[np.asarray(batch)]
        return torch.from_numpy(self.values[s[:, None] + self.offsets]), torch.from_numpy(self.values[s + self.target])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--window", type=int, default=60)
    ap.add_argument("--horizon", type=int, default=1)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--windows", type=int, default=2_000_000, help="windows to time")
    a = ap.parse_args()
    values, stats, series = read_sfpack(a.file)
    scale = np.where(stats[:, 3] > 0, 1 / np.where(stats[:, 3] > 0, stats[:, 3], 1), 1).astype(np.float32)
    offset = (-stats[:, 2] * np.where(stats[:, 3] > 0, 1 / np.where(stats[:, 3] > 0, stats[:, 3], 1), 1)).astype(
        np.float32)
    values = values * scale + offset
    span = a.window + a.horizon
    starts = np.concatenate([np.arange(f, f + n - span + 1) for f, n in series if n >= span]).astype(np.int64)
    ds = Windows(values, starts, a.window, a.horizon)
    best = 0.0
    for workers in (0, 2):
        sampler = torch.utils.data.BatchSampler(torch.utils.data.RandomSampler(ds), a.batch, drop_last=False)
        loader = torch.utils.data.DataLoader(ds, sampler=sampler, batch_size=None, num_workers=workers)
        n, t0 = 0, time.perf_counter()
        for x, _y in loader:
            n += x.shape[0]
            if n >= a.windows:
                break
        rate = n / (time.perf_counter() - t0)
        print(f"torch {torch.__version__} DataLoader, num_workers={workers}: {rate / 1e6:.3f} M windows/s")
        best = max(best, rate)
    print(f"best {best / 1e6:.3f} M windows/s")


if __name__ == "__main__":
    main()
