#!/usr/bin/env python3
"""What one seqfeed.Dataset next() costs the caller, for one or more source
trees side by side (each with its meson build in TREE/build): the wall time
of the call (p50, p90, mean), the calling thread's CPU time in it (p50)
and the stall (time in next() over the wall time, as pipeline_peers.sh),
over --calls calls paced at an emulated --step ms (a sleep, as
bench/pipeline_peers.sh does), after --warmup calls, on random-walk packs
made by bench/gen_csv (or given with --data). One process per tree, shape
and round; the rounds interleave the trees (A B A B ...) and the table
gives medians over rounds [least, most]. The CPU time is the steadier
figure on a loaded machine: it leaves out the time the thread waited for a
core. Needs numpy in --python's environment.

    bench/dataset_next.py [--python PY] [--rounds 5] [--step 2] [--calls 300] TREE [TREE ...]
    e.g. bench/dataset_next.py /work/base /work/seqfeed   (a build of main beside this one)
"""
import argparse
import json
import os
import subprocess
import sys
import time

CHILD = r"""
import json, sys, time
import numpy as np
import seqfeed
path, window, batch, step, calls, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]) / 1e3, int(sys.argv[5]), int(sys.argv[6])
it = iter(seqfeed.Dataset(path, window=window, batch_size=batch, val_split=0, seed=1, epochs=2**40))
pc, tt = time.perf_counter, time.thread_time
def pace(t):
    end = t + step
    while True:
        left = end - pc()
        if left <= 0:
            return
        time.sleep(left)
for _ in range(warmup):
    x, y = next(it)
    pace(pc())
wall, cpu = [], []
start = pc()
for _ in range(calls):
    c0, t0 = tt(), pc()
    x, y = next(it)
    t1, c1 = pc(), tt()
    wall.append(t1 - t0)
    cpu.append(c1 - c0)
    pace(t1)
total = pc() - start
w, c = np.array(wall) * 1e3, np.array(cpu) * 1e3
print(json.dumps({"p50": float(np.median(w)), "p90": float(np.percentile(w, 90)), "mean": float(w.mean()),
                  "cpu_p50": float(np.median(c)), "stall_pct": float(100 * sum(wall) / total),
                  "mb": (x.nbytes + y.nbytes) / 1e6}))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trees", nargs="+", help="source trees, each built in TREE/build")
    ap.add_argument("--python", default=os.environ.get("PEER_PYTHON", sys.executable))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--step", type=float, default=2.0, help="emulated step, ms (0: unpaced)")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--data", action="append",
                    help="SFPACK:WINDOW (default: 4000000x4 window 60 and 1000000x32 window 256, made with "
                         "gen_csv in --bench-dir)")
    ap.add_argument("--bench-dir", default="/tmp/seqfeed-bench-pipepeers")
    a = ap.parse_args()
    trees = [os.path.abspath(t) for t in a.trees]
    for t in trees:
        if not os.path.exists(os.path.join(t, "build", "libseqfeed.so")):
            sys.exit("dataset_next.py: %s/build/libseqfeed.so not found: build it first (ninja -C %s/build)" % (t, t))
    data = a.data or []
    if not data:
        os.makedirs(a.bench_dir, exist_ok=True)
        for rows, cols, window in ((4000000, 4, 60), (1000000, 32, 256)):
            pack = os.path.join(a.bench_dir, "rw-%dx%d.sfpack" % (rows, cols))
            if not os.path.exists(pack):  # the same files bench/pipeline_peers.sh makes
                csv = pack[:-7] + ".csv"
                with open(csv, "wb") as f:
                    subprocess.run([os.path.join(trees[-1], "build", "bench", "gen_csv"), str(rows), str(cols)],
                                   stdout=f, check=True)
                subprocess.run([os.path.join(trees[-1], "build", "seqfeed"), "pack", csv, "-o", pack, "-q"],
                               check=True)
                os.remove(csv)
            data.append("%s:%d" % (pack, window))
    res = {}
    for r in range(a.rounds):
        order = trees[r % len(trees):] + trees[:r % len(trees)]
        for t in order:
            for d in data:
                path, window = d.rsplit(":", 1)
                env = dict(os.environ, SEQFEED_LIB=os.path.join(t, "build", "libseqfeed.so"),
                           PYTHONPATH=os.path.join(t, "python"))
                out = subprocess.run([a.python, "-c", CHILD, path, window, str(a.batch), str(a.step), str(a.calls),
                                      str(a.warmup)], env=env, check=True, capture_output=True, text=True).stdout
                res.setdefault((d, t), []).append(json.loads(out))
                print("round %d %s %s: %s" % (r + 1, t, os.path.basename(path), out.strip()), file=sys.stderr)
    print("step %g ms, %d calls, %d rounds, load average at the end %s" % (a.step, a.calls, a.rounds,
                                                                             os.getloadavg()))
    print("| data | tree | batch MB | next() p50 ms | p90 ms | mean ms | thread CPU p50 ms | stall % |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for d in data:
        for t in trees:
            runs = res[(d, t)]
            cell = []
            for k in ("p50", "p90", "mean", "cpu_p50", "stall_pct"):
                v = sorted(x[k] for x in runs)
                cell.append("%.3f [%.3f, %.3f]" % (v[len(v) // 2], v[0], v[-1]))
            print("| %s | %s | %.2f | %s |" % (os.path.basename(d), t, runs[0]["mb"], " | ".join(cell)))


if __name__ == "__main__":
    main()
