"""Packing a Parquet file with python -m seqfeed pack, next to pyarrow reading the same file: MB/s of the
Parquet file and of its data as Arrow holds it (wall clock), CPU seconds, and each command's peak RSS (each
in a process of its own; the first row is Python with pyarrow imported, the floor under every other).

    SEQFEED_LIB=build/libseqfeed.so PYTHONPATH=python VENV/bin/python bench/arrow_pack.py [--rows N] [--files N]
        [--json]

Needs numpy and pyarrow (a venv of its own: never in the build). The data: N rows of 100 series, a
timestamp column, 8 float64 and 2 int32 columns, a dictionary column (categorical), written with
pyarrow's defaults (snappy) and row groups of --row-group rows into a temporary directory next to this
script; with --files N, cut into N files of consecutive rows in a directory (each row keeping its file and
row: sf_api_pack_arrow_files), which every command reads instead."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

READ_TABLE = "import sys, pyarrow.parquet as pq; t = pq.read_table(sys.argv[1]); print(t.num_rows)"
STREAM = ("import sys, seqfeed; n = 0\n"  # the reader python -m seqfeed pack packs from
          "for b in seqfeed.parquet_reader(sys.argv[1]): n += b.num_rows\nprint(n)")


def make(path, rows, row_group, files=1):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    rng = np.random.default_rng(1)
    per = rows // 100
    cols = {"site": pa.array(np.repeat(["s%03d" % i for i in range(100)], per)).dictionary_encode(),
            "time": pa.array(np.tile(np.arange(per, dtype=np.int64) * 3600 * 10**6, 100) + 1577836800 * 10**6,
                             pa.timestamp("us"))}
    for k in range(8):
        cols["x%d" % k] = pa.array(np.round(rng.normal(0, 100, per * 100), 3))
    for k in range(2):
        cols["n%d" % k] = pa.array(rng.integers(0, 1000, per * 100, dtype=np.int32))
    cols["sky"] = pa.array(rng.choice(["sun", "rain", "fog"], per * 100)).dictionary_encode()
    t = pa.table(cols)
    if files == 1:
        pq.write_table(t, path, row_group_size=row_group)
        return t.nbytes
    os.makedirs(path)
    per_file = -(-t.num_rows // files)
    for i in range(files):
        pq.write_table(t.slice(i * per_file, per_file), os.path.join(path, "part-%03d.parquet" % i),
                       row_group_size=row_group)
    return t.nbytes


# Runs argv[1:] and prints its peak RSS in KiB: a process of its own, so that the peak is that command's.
PEAK = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
        "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
        "print(u.ru_utime + u.ru_stime, u.ru_maxrss, file=sys.stderr); sys.exit(r.returncode)")


def timed(cmd):
    """Wall seconds, CPU seconds (user and system: what a busy machine does not inflate) and peak RSS (MB)."""
    start = time.monotonic()
    p = subprocess.run([sys.executable, "-c", PEAK] + cmd, capture_output=True, text=True)
    wall = time.monotonic() - start
    if p.returncode:
        sys.exit("%s failed: %s" % (" ".join(cmd), p.stderr))
    cpu, rss = p.stderr.split()[-2:]
    return wall, float(cpu), int(rss) / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--row-group", type=int, default=131072, help="rows per Parquet row group (pyarrow reads one "
                    "at a time: what bounds a streamed read's memory)")
    ap.add_argument("--files", type=int, default=1, help="a directory of this many files (consecutive rows)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each, the fastest kept")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(__file__))) as d:
        pqf, out = os.path.join(d, "data.parquet" if a.files == 1 else "data"), os.path.join(d, "out.sfpack")
        arrow_bytes = make(pqf, a.rows, a.row_group, a.files)
        file_bytes = os.path.getsize(pqf) if a.files == 1 else \
            sum(os.path.getsize(os.path.join(pqf, f)) for f in os.listdir(pqf))
        py = sys.executable
        runs = [("python, import pyarrow.dataset (baseline)", [py, "-c", "import pyarrow.dataset"]),
                ("python -m seqfeed pack", [py, "-m", "seqfeed", "pack", pqf, "-o", out, "--series-column", "site",
                                           "--categorical", "sky", "-q"]),
                ("pyarrow.parquet.read_table", [py, "-c", READ_TABLE, pqf]),
                ("seqfeed.parquet_reader, batches read", [py, "-c", STREAM, pqf])]
        results = []
        for name, cmd in runs:
            best = min((timed(cmd) for _ in range(a.repeat)), key=lambda r: r[0])
            results.append({"command": name, "seconds": round(best[0], 3), "cpu_seconds": round(best[1], 3),
                            "parquet_MBps": round(file_bytes / 1e6 / best[0], 1),
                            "arrow_MBps": round(arrow_bytes / 1e6 / best[0], 1),
                            "peak_rss_MB": round(best[2], 1)})
        info = {"rows": a.rows, "files": a.files, "row_group": a.row_group, "parquet_MB": round(file_bytes / 1e6, 1), "arrow_MB": round(arrow_bytes / 1e6, 1),
                "sfpack_MB": round(os.path.getsize(out) / 1e6, 1), "cpus": os.cpu_count(), "results": results}
    if a.json:
        print(json.dumps(info, indent=1))
        return
    print("%d rows in %d file(s) (row groups of %d): Parquet %.1f MB, %.1f MB as Arrow, %.1f MB packed; %d CPUs" %
          (a.rows, a.files, a.row_group, info["parquet_MB"], info["arrow_MB"], info["sfpack_MB"], info["cpus"]))
    print("%-42s %8s %8s %12s %10s %12s" % ("command", "seconds", "CPU s", "Parquet MB/s", "Arrow MB/s",
                                            "peak RSS MB"))
    for r in results:
        print("%-42s %8.2f %8.2f %12.1f %10.1f %12.1f" % (r["command"], r["seconds"], r["cpu_seconds"],
                                                          r["parquet_MBps"], r["arrow_MBps"], r["peak_rss_MB"]))


if __name__ == "__main__":
    main()
