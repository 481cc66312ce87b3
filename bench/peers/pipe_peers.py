#!/usr/bin/env python3
"""seqfeed's Python Dataset next to tf.data, the PyTorch DataLoader and
Grain, serving the same windows of the same rows to a consumer that takes
no time, then one that takes an emulated 2 ms and 1 ms step per batch
(bench/pipeline_peers.sh; pipe_tools.py says how each tool is set up).

The data: for each shape ROWSxCOLS:WINDOW, gen_csv's random walks (ROWS
rows of COLS columns, %.6g) packed by `seqfeed pack` (one series, no time
column), and the same rows as a .npy of float32, scaled as the Dataset
scales them (z-score of the file's statistics), cached in --bench-dir.

First the check (unless --no-check), on a file of the same shape cut to
WINDOW + --check-batches x BATCH rows (the first rows of the same walks):
each tool's epoch, every window hashed from its float32 bits, against the
hashes of every window computed here from the array; a tool passes when
its epoch holds no window twice and none that is not one of the array's,
and holds them all (seqfeed drops the remainder of an epoch as `train`
does: then every batch must be full; the dropped windows are counted),
its batches are (BATCH, WINDOW, COLS) and (BATCH, COLS) float32 (the last
one shorter where the tool keeps the remainder), and its first batch is
not the first windows in order.

Then --rounds rounds; in each, every tool in turn (the order rotating a
place each round) runs every shape in a process of its own: from the
file's name to the first batch, then unpaced, then each --paces step (a
sleep, the cores left to the tools, as a GPU's step leaves them): its
windows/s, stall % (the time in next() over the wall time of the timed
steps), the wait per step at p50 and p99, and how long the steps took
(the mean time outside next(): a sleep overshoots on a loaded machine). Median, least and most over
the rounds. Prints a markdown table, or one JSON object with --json.

usage: pipe_peers.py --build DIR [--rounds 3] [--steps 300] [--warmup 30] [--settle 1.5] [--cap 2.5] [--batch 256]
       [--shapes 4000000x4:60,1000000x32:256] [--paces 2,1] [--tools seqfeed,tf,torch,grain] [--seed 1]
       [--check-batches 40] [--no-check] [--bench-dir DIR] [--json] [--save FILE]
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from pipe_tools import window_hashes  # noqa: E402

TOOLS = {"seqfeed": "seqfeed.Dataset", "tf": "tf.data (timeseries_dataset_from_array + AUTOTUNE prefetch)",
         "torch": "PyTorch DataLoader (workers 2)", "grain": "Grain (mp_prefetch, workers 2)"}
IMPORTS = {"seqfeed": "seqfeed", "tf": "tensorflow", "torch": "torch", "grain": "grain"}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def make_data(a, rows, cols, T):
    """The .sfpack and the .npy of ROWS x COLS (made once, cached)."""
    import seqfeed
    base = os.path.join(a.bench_dir, "rw-%dx%d" % (rows, cols))
    pack, npy = base + ".sfpack", base + ".npy"
    if not (os.path.exists(pack) and os.path.exists(npy)):
        t = time.time()
        csv = base + ".csv"
        with open(csv + ".tmp", "wb") as f:
            subprocess.run([os.path.join(a.build, "bench", "gen_csv"), str(rows), str(cols)], stdout=f, check=True)
        os.replace(csv + ".tmp", csv)
        subprocess.run([os.path.join(a.build, "seqfeed"), "pack", csv, "-o", pack, "-q"], check=True)
        os.unlink(csv)
        ds = seqfeed.Dataset(pack, window=T, batch_size=a.batch, val_split=0)
        sc = ds.scaler
        p = seqfeed.Pack(pack)
        assert list(sc.inputs) == p.columns, (sc.inputs, p.columns)
        values = (p.read() * sc.input_scale + sc.input_offset).astype(np.float32)
        np.save(npy + ".tmp.npy", values)
        os.replace(npy + ".tmp.npy", npy)
        log("  made %s and %s (%.0f MB of float32) in %.0f s" % (pack, os.path.basename(npy), values.nbytes / 1e6,
                                                               time.time() - t))
    return pack, npy


def worker(a, tool, mode, data, extra=()):
    """Runs pipe_tools.py; its JSON lines, or None when the tool cannot be imported."""
    cmd = [sys.executable, os.path.join(here, "pipe_tools.py"), tool, mode, "--batch", str(a.batch),
           "--seed", str(a.seed)] + [x for d in data for x in ("--data", "%s:%s:%d" % d)] + list(extra)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode == 3:
        return None
    if p.returncode:
        sys.stderr.write(p.stderr[-3000:])
        raise SystemExit("pipe_peers.py: %s %s failed (exit %d): %s" % (tool, mode, p.returncode, " ".join(cmd)))
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def check(a, tools, shapes):
    """Each tool's epoch of the cut files against every window of their arrays."""
    out = {}
    with tempfile.TemporaryDirectory(dir=a.bench_dir) as tmp:
        data = []
        for rows, cols, T in shapes:
            pack, npy = make_data(a, T + a.check_batches * a.batch, cols, T)
            data.append((pack, npy, T))
        expect = []
        for pack, npy, T in data:
            v = np.load(npy)
            starts = np.arange(len(v) - T)
            h = np.concatenate([window_hashes(v[s[:, None] + np.arange(T)], v[s + T])
                                for s in np.array_split(starts, max(1, len(starts) // 512))])
            expect.append(h)
        for tool in tools:
            res = worker(a, tool, "check", data, ["--out", tmp])
            for k, r in enumerate(res):
                pack, npy, T = data[k]
                rows, cols = len(expect[k]) + T, shapes[k][1]
                h, e = np.load(os.path.join(tmp, "%s-%d.npy" % (tool, k))), expect[k]
                uniq = np.unique(h)
                foreign = int((~np.isin(uniq, e)).sum())
                missing = len(e) - (len(uniq) - foreign)
                full = [[[a.batch, T, cols], [a.batch, cols], "float32", "float32"]]
                shapes_ok = all(s[0][1:] == [T, cols] and s[1][1:] == [cols] and s[2:] == ["float32", "float32"]
                                and s[0][0] == s[1][0] <= a.batch for s in r["shapes"]) and full[0] in r["shapes"]
                shuffled = not np.array_equal(h[:a.batch], e[:a.batch])
                # seqfeed drops the rest of an epoch that would not fill a batch in every part
                # (docs/PIPELINE.md, "Batches and remainders"), as train does: only full batches then.
                ok = (len(uniq) == len(h) and foreign == 0 and shapes_ok and shuffled
                      and (missing == 0 or tool == "seqfeed" and len(h) == r["batches"] * a.batch))
                out.setdefault(k, {})[tool] = {
                    "ok": bool(ok), "windows": int(len(h)), "expected": int(len(e)),
                    "duplicates": int(len(h) - len(uniq)), "foreign": foreign, "missing": int(missing),
                    "shapes_ok": bool(shapes_ok), "shuffled": bool(shuffled), "batches": r["batches"], "rows": rows}
                log("  check %dx%d window %d, %s: %s (%d of %d windows, %d missing, %d not the array's, %d twice, "
                    "batch shapes %s, shuffled %s)" % (rows, cols, T, tool, "same windows" if ok else "DIFFERENT",
                                                       len(h), len(e), missing, foreign, len(h) - len(uniq),
                                                       "ok" if shapes_ok else r["shapes"], shuffled))
    return out


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def spread(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "rounds": xs}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=300, help="timed batches per run")
    ap.add_argument("--warmup", type=int, default=30, help="batches at the run's pace before the timed ones")
    ap.add_argument("--settle", type=float, default=1.5, help="seconds at least before the unpaced run")
    ap.add_argument("--cap", type=float, default=2.5, help="seconds at most per timed run")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--shapes", default="4000000x4:60,1000000x32:256", help="ROWSxCOLS:WINDOW,...")
    ap.add_argument("--paces", default="2,1", help="emulated steps, ms")
    ap.add_argument("--tools", default="seqfeed,tf,torch,grain")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--check-batches", type=int, default=40)
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--bench-dir", default=os.environ.get("BENCH_DIR", "/tmp/seqfeed-bench-pipepeers"))
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    ap.add_argument("--save", help="also write the JSON object to this file")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    os.makedirs(a.bench_dir, exist_ok=True)
    shapes = []
    for s in a.shapes.split(","):
        try:
            rc, T = s.split(":")
            rows, cols = (int(x) for x in rc.split("x"))
            shapes.append((rows, cols, int(T)))
        except ValueError:
            raise SystemExit("pipe_peers.py: --shapes wants ROWSxCOLS:WINDOW,..., got %r" % s)
    paces = [float(p) for p in a.paces.split(",") if p]
    tools = []
    for t in a.tools.split(","):
        if t not in TOOLS:
            raise SystemExit("pipe_peers.py: --tools takes %s, got %r" % (",".join(TOOLS), t))
        p = subprocess.run([sys.executable, "-c", "import " + IMPORTS[t]], capture_output=True, text=True)
        if p.returncode:
            last = (p.stderr.strip().splitlines() or ["?"])[-1]
            log("skipping %s: %s cannot import %s (%s); bench/pipeline_peers.sh --install installs it" %
                (t, sys.executable, IMPORTS[t], last))
        else:
            tools.append(t)
    if not tools:
        raise SystemExit("pipe_peers.py: no tool to run")
    start = time.time()
    log("start %s UTC, load %s" % (time.strftime("%H:%M:%S", time.gmtime()), loadavg()))
    checked = {} if a.no_check else check(a, tools, shapes)
    data = [make_data(a, rows, cols, T) + (T,) for rows, cols, T in shapes]
    extra = ["--paces", a.paces, "--steps", str(a.steps), "--warmup", str(a.warmup), "--settle", str(a.settle),
             "--cap", str(a.cap)]
    got, versions = {}, {}
    for r in range(a.rounds):
        order = tools[r % len(tools):] + tools[:r % len(tools)]
        for tool in order:
            res = worker(a, tool, "time", data, extra)
            for d in res:
                versions[tool] = d["version"]
                got.setdefault((d["data"], tool), []).append(d)
                log("  round %d %s %dx%d: first batch %.2f s; %s" % (
                    r + 1, tool, shapes[d["data"]][0], shapes[d["data"]][1], d["first_batch_s"], "; ".join(
                        "%s %.0f windows/s, stall %.1f%%" % ("unpaced" if not x["step_ms"] else "%g ms" % x["step_ms"],
                                                            x["windows_per_s"], x["stall_pct"]) for x in d["runs"])))
        log("  after round %d: load %s" % (r + 1, loadavg()))
    load = loadavg()
    results = []
    for k, (rows, cols, T) in enumerate(shapes):
        for tool in tools:
            runs = got[(k, tool)]
            for i, ms in enumerate([0.0] + paces):
                xs = [d["runs"][i] for d in runs]
                row = {"rows": rows, "cols": cols, "window": T, "tool": tool, "step_ms": ms,
                       "first_batch_s": spread([d["first_batch_s"] for d in runs]),
                       "steps": spread([x["steps"] for x in xs])}
                for key in ("windows_per_s", "stall_pct", "wait_p50_ms", "wait_p99_ms", "step_took_ms"):
                    row[key] = spread([x[key] for x in xs])
                results.append(row)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(start)), "seconds": round(time.time() - start),
            "machine": "%d cores, %s, %s" % (os.cpu_count(), platform.processor() or platform.machine(),
                                           platform.platform()),
            "python": platform.python_version(), "numpy": np.__version__, "versions": versions,
            "load_end": load, "batch": a.batch, "rounds": a.rounds, "steps": a.steps, "warmup": a.warmup,
            "settle_s": a.settle, "cap_s": a.cap, "paces_ms": paces, "seed": a.seed,
            "pacing": "sleep until STEP after next() returned",
            "command": os.environ.get("PIPELINE_PEERS_COMMAND", " ".join(sys.argv))}
    doc = json.dumps({"meta": meta, "check": {"%dx%d:%d" % shapes[k]: v for k, v in checked.items()},
                      "results": results})
    if a.save:
        with open(a.save + ".tmp", "w") as f:
            f.write(doc + "\n")
        os.replace(a.save + ".tmp", a.save)
    if a.json:
        print(doc)
        return
    print("\nseqfeed.Dataset and its peers, the same windows (batch %d, stride 1, shuffled), median [least, most] "
          "of %d rounds; %d cores; load average %s at the end; %d s in all" % (
              a.batch, a.rounds, os.cpu_count(), load, time.time() - start))
    print("versions: " + "; ".join(versions[t] for t in tools if t in versions))
    if checked:
        print("same windows (an epoch of a %d-batch cut, every window's hash): %s" % (a.check_batches, "; ".join(
            "%dx%d window %d: %s" % (shapes[k][0], shapes[k][1], shapes[k][2], ", ".join(
                "%s %s%s" % (t, "yes" if c["ok"] else "NO", " (%d dropped)" % c["missing"] if c["missing"] else "")
                for t, c in v.items())) for k, v in checked.items())))
    print()
    print("| data | tool | step | step took ms | windows/s | stall % | wait p50 ms | wait p99 ms | first batch s |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")

    def cell(s, f):
        return "%s [%s, %s]" % (f % s["median"], f % s["min"], f % s["max"])
    for row in results:
        unpaced = not row["step_ms"]
        print("| %dx%d, window %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            row["rows"], row["cols"], row["window"], TOOLS[row["tool"]] if unpaced else row["tool"],
            "none" if unpaced else "%g ms" % row["step_ms"],
            "-" if unpaced else cell(row["step_took_ms"], "%.2f"), cell(row["windows_per_s"], "%.0f"),
            "-" if unpaced else cell(row["stall_pct"], "%.1f"), cell(row["wait_p50_ms"], "%.3f"),
            cell(row["wait_p99_ms"], "%.2f"), cell(row["first_batch_s"], "%.2f") if unpaced else ""))


if __name__ == "__main__":
    main()
