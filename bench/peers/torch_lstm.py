#!/usr/bin/env python3
"""The default model in PyTorch on CPU: the peer of `seqfeed bench train`.

3 x LSTM(180) each followed by Dropout(0.2), Dense(targets); MSE; Adam
(lr 1e-3, eps 1e-7); windows of --window steps x --features features from
random data held in RAM (the peer gets its batches for free). Times --steps
training steps after --warmup, best of --reps, and prints one line per batch
size: "batch B: S samples/s". --precision bf16 runs the forward pass and the
loss under torch.autocast(dtype=torch.bfloat16), PyTorch's mixed precision:
bf16 matmuls (oneDNN), fp32 weights and Adam.

usage: torch_lstm.py [--batch 32,256] [--threads 2] [--window 60] [--device cpu|cuda]
                     [--features 3] [--targets 3] [--steps 20] [--warmup 3] [--reps 3]
                     [--precision fp32|bf16]
On cuda the batch stays on the GPU (PyTorch's cuDNN LSTM, TF32 off as in
seqfeed's fp32 runs) and the clock waits for the GPU.
"""
import time

import torch

import train_peer


class Model(torch.nn.Module):
    def __init__(self, features, targets, units=180, layers=3, dropout=0.2):
        super().__init__()
        self.lstms = torch.nn.ModuleList(
            [torch.nn.LSTM(features if i == 0 else units, units, batch_first=True) for i in range(layers)])
        self.drop = torch.nn.Dropout(dropout)
        self.dense = torch.nn.Linear(units, targets)

    def forward(self, x):
        for lstm in self.lstms:
            x, _ = lstm(x)
            x = self.drop(x)
        return self.dense(x[:, -1, :])


def main():
    ap = train_peer.parser()
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    torch.manual_seed(0)
    bf16 = a.precision == "bf16"
    print(f"torch {torch.__version__}, {a.device}, {a.threads} threads, mkldnn {torch.backends.mkldnn.is_available()}, "
          f"{a.precision}")
    for b in (int(v) for v in a.batch.split(",")):
        best = 0.0
        for _ in range(a.reps):
            model = Model(a.features, a.targets).to(dev)
            opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
            x = torch.randn(b, a.window, a.features, device=dev)
            y = torch.randn(b, a.targets, device=dev)
            for step in range(a.warmup + a.steps):
                if step == a.warmup:
                    sync()
                    t0 = time.perf_counter()
                opt.zero_grad(set_to_none=True)
                with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
                    loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
                opt.step()
            sync()
            best = max(best, b * a.steps / (time.perf_counter() - t0))
        train_peer.report(b, best)


if __name__ == "__main__":
    main()
