#!/usr/bin/env python3
"""One timed CSV read by a peer tool, for bench/pack.sh.

usage: read_csv.py TOOL PATH
  TOOL  pandas   pandas.read_csv(path, dtype=np.float32).to_numpy(np.float32)
                 with pandas' defaults: the C parser, which since pandas 3.x
                 splits a large local file over up to min(cores, 6) threads
        pandas-1t  the same with pd.set_option("mode.max_threads", 1): the C
                 parser on one core (older pandas, without that option, is
                 single-threaded anyway)
        pyarrow  pyarrow.csv.read_csv with every column typed float32
                 (multi-threaded: use_threads=True, all cores); the result is
                 a Table of float32 columns, not converted further
        numpy    numpy.loadtxt(path, delimiter=',', skiprows=1, dtype=np.float32)
        version  print "pandas=X numpy=Y pyarrow=Z" for what imports
Prints "SECONDS CPU_SECONDS ROWS COLS": wall-clock and CPU time (all threads
of the process, user + system) of the read call alone; imports and
interpreter start are not counted.
"""
import sys
import time


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "version":
        out = []
        for mod in ("pandas", "numpy", "pyarrow"):
            try:
                out.append("%s=%s" % (mod, __import__(mod).__version__))
            except ImportError:
                out.append("%s=none" % mod)
        print(" ".join(out))
        return 0
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    tool, path = sys.argv[1], sys.argv[2]
    import numpy as np

    if tool in ("pandas", "pandas-1t"):
        import pandas as pd

        if tool == "pandas-1t":
            try:
                pd.set_option("mode.max_threads", 1)
            except (KeyError, ValueError, pd.errors.OptionError):
                pass  # no such option: this pandas parses on one thread

        t0, c0 = time.perf_counter(), time.process_time()
        a = pd.read_csv(path, dtype=np.float32).to_numpy(np.float32)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        rows, cols = a.shape
    elif tool == "pyarrow":
        import pyarrow as pa
        import pyarrow.csv as pacsv

        with open(path) as f:
            names = f.readline().rstrip("\r\n").split(",")
        opts = pacsv.ConvertOptions(column_types={n: pa.float32() for n in names})
        t0, c0 = time.perf_counter(), time.process_time()
        t = pacsv.read_csv(path, convert_options=opts)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        rows, cols = t.num_rows, t.num_columns
    elif tool == "numpy":
        t0, c0 = time.perf_counter(), time.process_time()
        a = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float32)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        rows, cols = a.shape
    else:
        sys.stderr.write("read_csv.py: unknown tool %r\n" % tool)
        return 2
    print("%.6f %.6f %d %d" % (dt, dc, rows, cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
