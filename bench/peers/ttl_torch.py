#!/usr/bin/env python3
"""bench/time_to_loss.sh's PyTorch peer: the CSV read with pandas into the
windows seqfeed trains on (ttl_data.py), the same stacked LSTM + Dense
initialised as Keras does (glorot-uniform input kernels, orthogonal
recurrent kernels, zero biases but 1 for the forget gate, glorot-uniform
dense), Adam (lr, eps 1e-7 as Keras), MSE, a plain loop over shuffled
batches, and Keras' early stopping: stop after `patience` epochs without a
lower val_loss, then restore the best epoch's weights.

Prints to stdout, one line each as it happens (the driver stamps them):
"ready,TORCH_VERSION,THREADS" once the model is built and the data in memory,
"epoch,N,loss,val_loss" after each epoch, and "final,LOSS": the restored best
model's loss on the validation windows.
usage: ttl_torch.py --csv FILE --columns a,b [--series-column S] [--window T] [--batch-size B]
                    [--lr F] [--val-split F] [--model lstm:U,...,dense] [--epochs N] [--patience N] [--seed N]
                    [--one-bias]
"""
import argparse
import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ttl_data  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ttl_data.add_args(ap)
    ap.add_argument("--one-bias", action="store_true",
                    help="train only bias_ih: the one bias per gate of Keras' LSTM (nn.LSTM's two double its step)")
    a = ap.parse_args()
    import torch

    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    cols = a.columns.split(",")
    x, y, xv, yv = (torch.from_numpy(v) for v in ttl_data.load(a.csv, cols, a.series_column, a.window,
                                                                a.val_split, val_by_rows=a.val_by_rows))
    units = ttl_data.model_units(a.model)

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstms = torch.nn.ModuleList(
                [torch.nn.LSTM(len(cols) if i == 0 else units[i - 1], u, batch_first=True)
                 for i, u in enumerate(units)])
            self.dense = torch.nn.Linear(units[-1], y.shape[1])
            with torch.no_grad():  # Keras' initialisers; gates i, f, g, o in both
                for lstm, u in zip(self.lstms, units):
                    torch.nn.init.xavier_uniform_(lstm.weight_ih_l0)
                    torch.nn.init.orthogonal_(lstm.weight_hh_l0)
                    lstm.bias_ih_l0.zero_()
                    lstm.bias_ih_l0[u:2 * u] = 1
                    lstm.bias_hh_l0.zero_()
                torch.nn.init.xavier_uniform_(self.dense.weight)
                self.dense.bias.zero_()

        def forward(self, v):
            for lstm in self.lstms:
                v, _ = lstm(v)
            return self.dense(v[:, -1, :])

    model = Model()
    if a.one_bias:  # b_hh stays 0: the same parameters as Keras' and seqfeed's LSTM
        for lstm in model.lstms:
            lstm.bias_hh_l0.requires_grad_(False)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=a.lr, eps=1e-7)

    def val_loss():
        model.eval()
        with torch.no_grad():
            s = sum(torch.nn.functional.mse_loss(model(xv[i:i + 256]), yv[i:i + 256], reduction="sum").item()
                    for i in range(0, len(xv), 256))
        model.train()
        return s / yv.numel()

    ttl_data.say("ready", torch.__version__, torch.get_num_threads())
    best, best_state, wait = float("inf"), None, 0
    for epoch in range(1, a.epochs + 1):
        order, total = torch.randperm(len(x)), 0.0
        for i in range(0, len(x), a.batch_size):
            idx = order[i:i + a.batch_size]
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.mse_loss(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        v = val_loss()
        ttl_data.say("epoch", epoch, total / len(x), v)
        if v < best:
            best, best_state, wait = v, copy.deepcopy(model.state_dict()), 0
        else:
            wait += 1
            if wait >= a.patience:
                break
    model.load_state_dict(best_state)
    ttl_data.say("final", val_loss())


if __name__ == "__main__":
    main()
