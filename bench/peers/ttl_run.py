#!/usr/bin/env python3
"""The driver of bench/time_to_loss.sh (see its --help): runs seqfeed (pack,
then train), the Keras peer (ttl_keras.py) and the PyTorch peer
(ttl_torch.py) on each data set, rounds interleaved with the order rotating,
stamps every epoch's row as it arrives (wall clock from the tool's start,
the process' CPU time from /proc), and prints a table and the ratios, or
one JSON object with --json.
"""
import argparse
import csv
import io
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TICK = os.sysconf("SC_CLK_TCK")

DATASETS = {
    "temps": {"csv": "data/hourly-temperatures-2010.csv", "pack": ["--series-column", "site"],
              "columns": ["temp"], "series_column": "site", "window": 24},
    "yields": {"csv": "data/treasury-yields-daily.csv", "pack": ["--drop-columns", "time"],
               "columns": ["tcm1yd", "tcm3yd", "tcm5yd", "tcm10yd"], "series_column": None, "window": 30},
}
TOOLS = ("seqfeed", "keras", "torch")
NAMES = {"seqfeed": "seqfeed", "keras": "Keras", "torch": "PyTorch"}


def proc_cpu(pid):
    """User + system seconds of a live process, all its threads."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, IndexError, ValueError):
        return float("nan")


def load1():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def wait_cpu(proc):
    """Waits for proc; its exit status and user + system seconds (rusage)."""
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, ru.ru_utime + ru.ru_stime


class Run:
    """One tool's run on one data set: epochs as (epoch, loss, val_loss, wall s, CPU s)."""

    def __init__(self, tool):
        self.tool, self.epochs, self.ready, self.loads = tool, [], None, [load1()]
        self.wall = self.cpu = self.final = self.note = None

    def best(self):
        return min(self.epochs, key=lambda e: e[2]) if self.epochs else None

    def reach(self, loss):
        """The first epoch whose val_loss is at most loss, or None."""
        return next((e for e in self.epochs if e[2] <= loss), None)

    def as_dict(self):
        b = self.best()
        per_epoch = [(b2[3] - b1[3], b2[4] - b1[4]) for b1, b2 in zip(self.epochs, self.epochs[1:])]
        return {"tool": self.tool, "best_val_loss": b and b[2], "best_epoch": b and b[0],
                "seconds_to_best": b and b[3], "cpu_seconds_to_best": b and b[4],
                "ready_seconds": self.ready and self.ready[0], "ready_cpu_seconds": self.ready and self.ready[1],
                "seconds_per_epoch": statistics.median(p[0] for p in per_epoch) if per_epoch else None,
                "cpu_seconds_per_epoch": statistics.median(p[1] for p in per_epoch) if per_epoch else None,
                "epochs_run": len(self.epochs), "seconds_total": self.wall, "cpu_seconds_total": self.cpu,
                "best_model_loss": self.final, "load_min": min(self.loads), "load_max": max(self.loads),
                "epochs": [dict(zip(("epoch", "loss", "val_loss", "seconds", "cpu_seconds"), e))
                           for e in self.epochs], "note": self.note}


def stamp_lines(proc, t0, cpu0, run, on_line):
    """Reads proc's stdout as lines arrive: on_line(line, wall, cpu) for each."""
    for line in proc.stdout:
        wall, cpu = time.perf_counter() - t0, cpu0 + proc_cpu(proc.pid)
        run.loads.append(load1())
        on_line(line.rstrip("\n"), wall, cpu)


def run_seqfeed(a, ds, seed, work, early_flag):
    run, sf = Run("seqfeed"), os.path.join(a.build, "seqfeed")
    pack, ck = os.path.join(work, "data.sfpack"), os.path.join(work, "ck")
    t0 = time.perf_counter()
    p = subprocess.Popen([sf, "pack", os.path.join(ROOT, ds["csv"]), "-o", pack, "-q"] + ds["pack"])
    rc, pack_cpu = wait_cpu(p)
    if rc:
        raise SystemExit(f"time_to_loss: seqfeed pack failed ({rc})")
    cmd = [sf, "train", "--data", pack, "--model", a.model, "--window", str(ds["window"]),
           "--batch-size", str(a.batch_size), "--lr", str(a.lr), "--val-split", str(a.val_split),
           "--epochs", str(a.epochs), "--seed", str(seed), "--checkpoint-dir", ck, "--log", "-", "-q"]
    if early_flag:
        cmd += ["--early-stop", str(a.patience)]
    with open(os.path.join(work, "seqfeed-train.err"), "w") as err:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1)
    state = {"header": None, "best": float("inf"), "wait": 0, "stopped": False}

    def on_line(line, wall, cpu):
        if state["header"] is None:  # the log's header: train has opened the data and built the model
            state["header"] = next(csv.reader([line]))
            run.ready = (wall, cpu)
            return
        row = dict(zip(state["header"], next(csv.reader([line]))))
        # Parsed by name: other columns may come and go; rows without a
        # val_loss (a step's row) are not epochs.
        if not row.get("val_loss") or not row.get("epoch"):
            return
        e = (int(row["epoch"]), float(row["loss"]), float(row["val_loss"]), wall, cpu)
        run.epochs.append(e)
        if e[2] < state["best"]:
            state["best"], state["wait"] = e[2], 0
        else:
            state["wait"] += 1
            if state["wait"] >= a.patience and not early_flag:
                p.send_signal(signal.SIGINT)  # Keras' EarlyStopping, from outside: train has no --early-stop
                state["stopped"] = True

    stamp_lines(p, t0, pack_cpu, run, on_line)
    rc, train_cpu = wait_cpu(p)
    run.wall, run.cpu = time.perf_counter() - t0, pack_cpu + train_cpu
    if rc and not (state["stopped"] and rc == 128 + signal.SIGINT):
        raise SystemExit(f"time_to_loss: seqfeed train failed ({rc}): see {work}/seqfeed-train.err")
    b = run.best()
    if b:
        best_file = os.path.join(ck, "best.safetensors")
        if not os.path.exists(best_file):
            best_file = os.path.join(ck, "epoch-%04d.safetensors" % b[0])
            run.note = "best model: " + os.path.basename(best_file)
        out = subprocess.run([sf, "evaluate", "--checkpoint", best_file, "--data", pack, "--json"],
                             capture_output=True, text=True, check=True).stdout
        run.final, run.best_file = json.loads(out)["loss"], best_file
    return run


def probe_val_by_rows(a, name, ds, work):
    """Whether this seqfeed places validation windows by their target rows
    (issue 25) or keeps them wholly in the validation part: the count of
    validation windows `seqfeed evaluate` scores after one step of a tiny
    model, against ttl_data.py's count either way."""
    sys.path.insert(0, HERE)
    import ttl_data

    sf, pack = os.path.join(a.build, "seqfeed"), os.path.join(work, f"probe-{name}.sfpack")
    ck = os.path.join(work, f"probe-{name}")
    subprocess.run([sf, "pack", os.path.join(ROOT, ds["csv"]), "-o", pack, "-q"] + ds["pack"], check=True)
    subprocess.run([sf, "train", "--data", pack, "--model", "lstm:1,dense", "--window", str(ds["window"]),
                    "--val-split", str(a.val_split), "--epochs", "1", "--max-steps", "1", "--checkpoint-dir", ck,
                    "-q"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = subprocess.run([sf, "evaluate", "--checkpoint", os.path.join(ck, "latest.safetensors"), "--data", pack,
                          "--json"], capture_output=True, text=True, check=True).stdout
    n = json.loads(out)["windows"]
    for by_rows in (False, True):
        yv = ttl_data.load(os.path.join(ROOT, ds["csv"]), ds["columns"], ds["series_column"], ds["window"],
                           a.val_split, val_by_rows=by_rows)[3]
        if len(yv) == n:
            return by_rows
    raise SystemExit(f"time_to_loss: seqfeed validates {n} windows of {ds['csv']}, which the peers' windows "
                     f"(bench/peers/ttl_data.py) do not reproduce either way: the losses would not compare")


def run_peer(a, ds, seed, work, tool):
    run = Run(tool)
    cmd = [a.python, os.path.join(HERE, f"ttl_{tool}.py"), "--csv", os.path.join(ROOT, ds["csv"]),
           "--columns", ",".join(ds["columns"]), "--window", str(ds["window"]), "--batch-size", str(a.batch_size),
           "--lr", str(a.lr), "--val-split", str(a.val_split), "--model", a.model, "--epochs", str(a.epochs),
           "--patience", str(a.patience), "--seed", str(seed)]
    if ds["series_column"]:
        cmd += ["--series-column", ds["series_column"]]
    if tool == "torch":
        cmd += ["--threads", str(a.torch_threads)] + (["--one-bias"] if a.torch_one_bias else [])
    if ds.get("val_by_rows"):
        cmd += ["--val-by-rows"]
    t0 = time.perf_counter()
    with open(os.path.join(work, f"{tool}.err"), "w") as err:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1)

    def on_line(line, wall, cpu):
        f = line.split(",")
        if f[0] == "ready":
            run.ready, run.version = (wall, cpu), " ".join(f[1:])
        elif f[0] == "epoch":
            run.epochs.append((int(f[1]), float(f[2]), float(f[3]), wall, cpu))
        elif f[0] == "final":
            run.final = float(f[1])

    stamp_lines(p, t0, 0.0, run, on_line)
    rc, run.cpu = wait_cpu(p)
    run.wall = time.perf_counter() - t0
    if rc:
        raise SystemExit(f"time_to_loss: {tool} peer failed ({rc}): see {work}/{tool}.err")
    return run


def forward_check(a, ds, best_file):
    """seqfeed's best checkpoint run in numpy on the peers' validation windows
    (ttl_data.py): its MSE equals evaluate's loss only if the peers validate
    on the same windows, scaled the same way, with the same loss."""
    import numpy as np

    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(ROOT, "python"))
    os.environ.setdefault("SEQFEED_LIB", os.path.join(a.build, "libseqfeed.so"))
    import seqfeed
    import ttl_data

    t, _ = seqfeed.load_checkpoint(best_file)
    _, _, xv, yv = ttl_data.load(os.path.join(ROOT, ds["csv"]), ds["columns"], ds["series_column"], ds["window"],
                                 a.val_split, val_by_rows=ds.get("val_by_rows", False))
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    v = xv.astype(np.float64)
    names = ["lstm"] + [f"lstm_{i}" for i in range(1, len(ttl_data.model_units(a.model)))]
    for n in names:
        W, U, b = (t[f"{n}/{k}"].astype(np.float64) for k in ("kernel", "recurrent_kernel", "bias"))
        u = U.shape[0]
        h, c, out = np.zeros((len(v), u)), np.zeros((len(v), u)), []
        for s in range(v.shape[1]):
            z = v[:, s] @ W + h @ U + b
            c = sig(z[:, u:2 * u]) * c + sig(z[:, :u]) * np.tanh(z[:, 2 * u:3 * u])
            h = sig(z[:, 3 * u:]) * np.tanh(c)
            out.append(h)
        v = np.stack(out, axis=1)
    pred = v[:, -1] @ t["dense/kernel"] + t["dense/bias"]
    return float(np.mean((pred - yv) ** 2)), len(yv)


def median(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def summarize(rounds, tools):
    """Per data set: each tool's medians over rounds, and per-round ratios."""
    out = {}
    for name in rounds[0]:
        per = [r[name] for r in rounds]
        rows = {}
        for tool in tools:
            runs = [p[tool] for p in per]
            d = {k: median([r.as_dict()[k] for r in runs]) for k in
                 ("best_val_loss", "best_epoch", "seconds_to_best", "cpu_seconds_to_best", "ready_seconds",
                  "seconds_per_epoch", "cpu_seconds_per_epoch", "epochs_run", "seconds_total",
                  "cpu_seconds_total")}
            for ref in ("keras", "torch"):
                if ref in tools:
                    hits = [r.reach(p[ref].best()[2]) for r, p in zip(runs, per)]
                    d[f"seconds_to_{ref}_best"] = median([h and h[3] for h in hits])
                    d[f"cpu_seconds_to_{ref}_best"] = median([h and h[4] for h in hits])
                    d[f"rounds_reaching_{ref}_best"] = sum(h is not None for h in hits)
            rows[tool] = d
        ratios = {}
        if "seqfeed" in tools:
            for ref, target in (("keras", 3.0), ("torch", 2.0)):
                if ref not in tools:
                    continue
                for clock, i in (("wall", 3), ("cpu", 4)):
                    rs = []
                    for p in per:
                        hit = p["seqfeed"].reach(p[ref].best()[2])
                        rs.append(p[ref].best()[i] / hit[i] if hit else 0.0)
                    ratios[f"{ref}_time_to_its_best_over_seqfeed_{clock}"] = {
                        "rounds": rs, "median": median(rs), "target": target, "met": median(rs) >= target}
            refs = [t for t in ("keras", "torch") if t in tools]
            if refs:
                rs = [p["seqfeed"].best()[2] / min(p[t].best()[2] for t in refs) for p in per]
                ratios["seqfeed_best_over_peers_best"] = {"rounds": rs, "median": median(rs), "target": 1.0,
                                                          "met": median(rs) <= 1.0}
        out[name] = {"tools": rows, "ratios": ratios, "runs": [{t: p[t].as_dict() for t in tools} for p in per]}
    return out


def fmt(v, f="%.2f"):
    return "-" if v is None else f % v


def print_table(summary, tools, meta):
    print(f"time to loss: model {meta['model']}, batch {meta['batch_size']}, lr {meta['lr']}, val-split "
          f"{meta['val_split']}, at most {meta['epochs']} epochs, patience {meta['patience']}; {meta['rounds']} "
          f"interleaved round(s), medians; {meta['nproc']} cores, load average {meta['load_min']:.1f} to "
          f"{meta['load_max']:.1f}")
    print("; ".join(v if t == "seqfeed" else f"{NAMES[t]} {v}" for t, v in meta["versions"].items()))
    for name, s in summary.items():
        print(f"\n{name} (window {DATASETS[name]['window']}): seconds from the CSV (wall / CPU)")
        head = ["tool", "best val_loss", "epoch", "to best", "to Keras' best", "to PyTorch's best", "start",
                "per epoch", "total"]
        print(f"{head[0]:8} {head[1]:>13} {head[2]:>5} {head[3]:>13} {head[4]:>15} {head[5]:>17} {head[6]:>6} "
              f"{head[7]:>11} {head[8]:>13}")
        for tool in tools:
            d = s["tools"][tool]
            two = lambda k: f"{fmt(d.get('seconds_' + k), '%.1f')}/{fmt(d.get('cpu_seconds_' + k), '%.1f')}"  # noqa
            print(f"{NAMES[tool]:8} {fmt(d['best_val_loss'], '%.6f'):>13} {fmt(d['best_epoch'], '%g'):>5} "
                  f"{two('to_best'):>13} {two('to_keras_best'):>15} {two('to_torch_best'):>17} "
                  f"{fmt(d['ready_seconds'], '%.1f'):>6} {two('per_epoch'):>11} {two('total'):>13}")
        for k, r in s["ratios"].items():
            print(f"  {k}: {fmt(r['median'])} (rounds: {', '.join(fmt(x) for x in r['rounds'])}; target "
                  f"{'<=' if k.startswith('seqfeed_best') else '>='} {r['target']:g}: "
                  f"{'met' if r['met'] else 'NOT met'})")
        for chk in s.get("checks", []):
            print(f"  check: {chk}")


def from_log(a):
    """The summary of the complete rounds of a --runs-log file."""
    rounds, versions, loads = {}, {}, []
    with open(a.from_log) as f:
        for line in f:
            d = json.loads(line)
            run = Run(d["run"]["tool"])
            run.epochs = [tuple(e[k] for k in ("epoch", "loss", "val_loss", "seconds", "cpu_seconds"))
                          for e in d["run"]["epochs"]]
            run.ready = (d["run"]["ready_seconds"], d["run"]["ready_cpu_seconds"])
            run.wall, run.cpu, run.final = d["run"]["seconds_total"], d["run"]["cpu_seconds_total"], \
                d["run"]["best_model_loss"]
            run.loads = [d["run"]["load_min"], d["run"]["load_max"]]
            loads += run.loads
            if d.get("version"):
                versions[run.tool] = d["version"]
            rounds.setdefault(d["round"], {}).setdefault(d["data"], {})[run.tool] = run
    tools = [t for t in TOOLS if any(t in rd[n] for rd in rounds.values() for n in rd)]
    names = list(next(iter(rounds.values())))
    whole = [rd for _, rd in sorted(rounds.items()) if all(set(rd.get(n, {})) == set(tools) for n in names)]
    summary = summarize(whole, tools)
    for n in names:
        summary[n]["checks"] = [f"{NAMES[t]} best model {r.final:.8g} vs its best val_loss {r.best()[2]:.8g} "
                                f"(rel. {abs(r.final - r.best()[2]) / r.best()[2]:.1e})"
                                for rd in whole for t, r in rd[n].items() if r.final is not None]
    sf = os.path.join(a.build, "seqfeed")
    versions["seqfeed"] = subprocess.run([sf, "--version"], capture_output=True, text=True).stdout.strip()
    meta = {"model": a.model, "batch_size": a.batch_size, "lr": a.lr, "val_split": a.val_split,
            "epochs": a.epochs, "patience": a.patience, "rounds": len(whole), "nproc": os.cpu_count(),
            "load_min": min(loads), "load_max": max(loads), "versions": versions,
            "windows": {n: DATASETS[n]["window"] for n in names}, "from_log": a.from_log}
    if a.json:
        print(json.dumps({"meta": meta, "data": summary}))
    else:
        print_table(summary, tools, meta)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--patience", type=int, default=3)
    ap.add_argument("--model", default="lstm:64,lstm:64,dense")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--val-split", type=float, default=0.1)
    ap.add_argument("--data", default="temps,yields")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--torch-threads", type=int, default=1,
                    help="torch.set_num_threads (0: its default, one per core; on a loaded machine its OpenMP "
                         "threads wait on each other: 1 is faster)")
    ap.add_argument("--torch-one-bias", action="store_true",
                    help="PyTorch trains one bias per gate (bias_hh stays 0), as Keras and seqfeed do: nn.LSTM's "
                         "two bias vectors each take an Adam step, twice the bias' step of the others")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    ap.add_argument("--save", help="also write the JSON object to this file")
    ap.add_argument("--runs-log", help="append each run to this file as it ends (one JSON line): a run cut "
                                       "short keeps its finished rounds")
    ap.add_argument("--from-log", help="no runs: the table (or JSON) of the whole rounds of a --runs-log file")
    a = ap.parse_args()
    if a.from_log:
        return from_log(a)
    sf = os.path.join(a.build, "seqfeed")
    if not os.access(sf, os.X_OK):
        raise SystemExit(f"time_to_loss: {sf} not found: build first (ninja -C build)")
    tools = []
    for t in a.tools.split(","):
        if t not in TOOLS:
            raise SystemExit(f"time_to_loss: --tools: unknown tool {t!r} (seqfeed, keras, torch)")
        mod = {"keras": "keras, tensorflow", "torch": "torch"}.get(t)
        if mod and subprocess.run([a.python, "-c", f"import {mod}, pandas, numpy"], capture_output=True).returncode:
            print(f"time_to_loss: skipping {NAMES[t]}: {a.python} cannot import {mod}, pandas and numpy "
                  f"(bench/time_to_loss.sh --install, or pip install them)", file=sys.stderr)
            continue
        tools.append(t)
    names = a.data.split(",")
    for n in names:
        if n not in DATASETS:
            raise SystemExit(f"time_to_loss: --data: unknown data set {n!r} ({', '.join(DATASETS)})")
    help_text = subprocess.run([sf, "train", "--help"], capture_output=True, text=True).stdout
    early_flag = "--early-stop" in help_text
    work = tempfile.mkdtemp(prefix="seqfeed-ttl-")
    if "seqfeed" in tools:
        for n in names:
            DATASETS[n]["val_by_rows"] = probe_val_by_rows(a, n, DATASETS[n], work)
    rounds, versions, loads = [], {}, []
    for r in range(a.rounds):
        order = tools[r % len(tools):] + tools[:r % len(tools)]
        rounds.append({})
        for n in names:
            rounds[-1][n] = {}
            for tool in order:
                print(f"round {r + 1}/{a.rounds}: {n}: {NAMES[tool]} ...", file=sys.stderr, flush=True)
                wd = os.path.join(work, f"{r + 1}-{n}-{tool}")
                os.mkdir(wd)
                if tool == "seqfeed":
                    run = run_seqfeed(a, DATASETS[n], r + 1, wd, early_flag)
                else:
                    run = run_peer(a, DATASETS[n], r + 1, wd, tool)
                    versions[tool] = run.version
                loads += run.loads
                b = run.best()
                print(f"  ready after {run.ready[0]:.1f} s; {len(run.epochs)} epochs, best val_loss {b[2]:.6g} at "
                      f"epoch {b[0]} after {b[3]:.1f} s ({b[4]:.1f} CPU s); {run.wall:.1f} s in all, load "
                      f"{min(run.loads):.1f}-{max(run.loads):.1f}", file=sys.stderr, flush=True)
                rounds[-1][n][tool] = run
                if a.runs_log:
                    with open(a.runs_log, "a") as f:
                        f.write(json.dumps({"round": r + 1, "data": n, "run": run.as_dict(),
                                            "version": getattr(run, "version", None), "load_start": loads[0],
                                            "best_file": getattr(run, "best_file", None)}) + "\n")
    versions["seqfeed"] = subprocess.run([sf, "--version"], capture_output=True, text=True).stdout.strip()
    summary = summarize(rounds, tools)
    # Are the losses comparable? Each best model's loss against its logged
    # best val_loss, and seqfeed's model on the peers' validation windows.
    for n in names:
        checks = summary[n]["checks"] = []
        for tool in tools:
            for run in (rd[n][tool] for rd in rounds):
                b = run.best()
                if b and run.final is not None:
                    checks.append(f"{NAMES[tool]} best model {run.final:.8g} vs its best val_loss {b[2]:.8g} "
                                  f"(rel. {abs(run.final - b[2]) / b[2]:.1e})")
        if "seqfeed" in tools and getattr(rounds[0][n]["seqfeed"], "best_file", None):
            run = rounds[0][n]["seqfeed"]
            try:
                loss, count = forward_check(a, DATASETS[n], run.best_file)
                checks.append(f"seqfeed's best model on the peers' {count} validation windows (numpy): "
                              f"{loss:.8g} vs evaluate {run.final:.8g} (rel. {abs(loss - run.final) / run.final:.1e})")
            except ImportError as e:
                checks.append(f"not run: the numpy forward check needs {e.name}")
    meta = {"model": a.model, "batch_size": a.batch_size, "lr": a.lr, "val_split": a.val_split, "epochs": a.epochs,
            "patience": a.patience, "rounds": a.rounds, "nproc": os.cpu_count(), "load_min": min(loads),
            "load_max": max(loads), "versions": versions, "seqfeed_early_stop": "--early-stop" if early_flag
            else "from outside (SIGINT after patience epochs without a lower val_loss)",
            "windows": {n: DATASETS[n]["window"] for n in names},
            "validation_windows_by_rows": {n: DATASETS[n].get("val_by_rows", False) for n in names}}
    doc = json.dumps({"meta": meta, "data": summary})
    if a.save:
        with open(a.save, "w") as f:
            f.write(doc + "\n")
    if a.json:
        print(doc)
    else:
        print_table(summary, tools, meta)


if __name__ == "__main__":
    main()
