"""seqfeed.pack over pyarrow (tests/python/arrow.sh): every column type pack accepts, compared with packing
the same data written as CSV (the same values bit for bit, statistics, series, times, categories, imputed
counts); many small batches, pandas, a Parquet file and a partitioned directory of them through
python -m seqfeed pack; the errors. A directory of Parquet files whose series interleave: each row's file
and row there through predict --with-actual; a series per file, progress; the integer series-id hint.
argv[1] is the seqfeed program."""
import datetime as dt
import os
import subprocess
import sys
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

import seqfeed

SEQFEED = sys.argv[1]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def same_pack(a, b, what):
    """Files a and b hold the same columns, values, statistics, series, times and categories."""
    p, q = seqfeed.Pack(a), seqfeed.Pack(b)
    check(p.columns == q.columns, "%s: columns %s and %s" % (what, p.columns, q.columns))
    check(p.rows == q.rows, "%s: %d and %d rows" % (what, p.rows, q.rows))
    if p.columns != q.columns or p.rows != q.rows:
        return
    x, y = p.read(), q.read()
    diff = np.argwhere(x.view(np.uint32) != y.view(np.uint32))
    check(len(diff) == 0, "%s: %d values differ, the first at (row, column) %s: %r and %r" %
          (what, len(diff), diff[:1].tolist(), x[tuple(diff[0])] if len(diff) else 0,
           y[tuple(diff[0])] if len(diff) else 0))
    check(p.stats == q.stats, "%s: statistics %s and %s" % (what, p.stats, q.stats))
    check(p.series == q.series and p.series_column == q.series_column,
          "%s: series %s %s and %s %s" % (what, p.series_column, p.series[:4], q.series_column, q.series[:4]))
    check(p.time_column == q.time_column, "%s: time columns %s and %s" % (what, p.time_column, q.time_column))
    if p.time_column and q.time_column:
        check(np.array_equal(p.read_times(), q.read_times()), "%s: times differ" % what)
    check(p.categories == q.categories, "%s: categories %s and %s" % (what, p.categories, q.categories))
    check(p.imputed == q.imputed, "%s: imputed %s and %s" % (what, p.imputed, q.imputed))


def csv_of(table, path):
    """The table as a user exports it to CSV: float16 as float32 (exact), bools as 0 and 1, dictionaries as
    their text."""
    cols = []
    for f, c in zip(table.schema, table.columns):
        if pa.types.is_float16(f.type):
            c = c.cast(pa.float32())
        elif pa.types.is_boolean(f.type):
            c = c.cast(pa.int8())
        elif pa.types.is_dictionary(f.type):
            c = c.cast(f.type.value_type)
        cols.append(c)
    pcsv.write_csv(pa.table(cols, names=table.column_names), path)


def pack(source, out, **kw):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = seqfeed.pack(source, out, chunk_rows=100, **kw)
    return r, [str(x.message) for x in w]


SITES = ("a-north", "b-south, coast", "c-east")  # sorted as the table has them: a directory's order


def table(time_type=pa.timestamp("us"), rows=(250, 180, 170), nulls=True):
    """Three series of every numeric type, text columns and a time column of time_type."""
    rng = np.random.default_rng(7)
    n = sum(rows)
    site = [s for s, k in zip(SITES, rows) for _ in range(k)]
    step = dt.timedelta(days=1) if time_type in (pa.date32(), pa.date64()) else dt.timedelta(hours=1)
    start = dt.datetime(2020, 1, 1)
    times = [start + i * step for k in rows for i in range(k)]
    if time_type in (pa.date32(), pa.date64()):
        times = [t.date() for t in times]
    big = rng.integers(0, 2**40, n)
    f64 = rng.normal(0, 1e3, n)
    f64_mask = np.zeros(n, bool)
    if nulls:
        f64_mask[[5, 300, 301]] = True  # filled by ffill from each series' row before
    cols = {
        "site": pa.array(site, pa.string()),
        "time": pa.array(times, time_type),
        "b": pa.array(rng.integers(0, 2, n).astype(bool)),
        "i8": pa.array(rng.integers(-128, 128, n), pa.int8()),
        "u8": pa.array(rng.integers(0, 256, n), pa.uint8()),
        "i16": pa.array(rng.integers(-2**15, 2**15, n), pa.int16()),
        "u16": pa.array(rng.integers(0, 2**16, n), pa.uint16()),
        "i32": pa.array(rng.integers(-2**31, 2**31, n), pa.int32()),
        "u32": pa.array(rng.integers(0, 2**32, n), pa.uint32()),
        "i64": pa.array(big - 2**39, pa.int64()),
        "u64": pa.array(big.astype(np.uint64) * np.uint64(3), pa.uint64()),
        "f16": pa.array(rng.normal(0, 10, n).astype(np.float16), pa.float16()),
        "f32": pa.array(rng.normal(0, 1, n).astype(np.float32), pa.float32()),
        "f64": pa.array(f64, pa.float64(), mask=f64_mask),
        "sky": pa.array(rng.choice(["sun", "rain", "fog"], n)).dictionary_encode(),
        "mood": pa.array(rng.choice(["calm", "windy"], n), pa.large_string()),
        "code": pa.array(rng.integers(1, 5, n), pa.int16()),
    }
    return pa.table(cols)


OPTS = dict(series_column="site", categorical="sky,mood,code", missing="ffill")

# Every type, against the same data as CSV, for each time type.
for tt in (pa.timestamp("us"), pa.timestamp("s"), pa.timestamp("ms", tz="UTC"), pa.timestamp("ns"), pa.date32(),
           pa.date64()):
    t = table(tt)
    csv_of(t, "t.csv")
    r, warned = pack(t, "arrow.sfpack", **OPTS)
    rc, _ = pack("t.csv", "csv.sfpack", **OPTS)
    same_pack("arrow.sfpack", "csv.sfpack", "table with time %s" % tt)
    check(r["rows"] == t.num_rows and r["series"] == 3 and r["values_filled"] == 3 and r["rows_dropped"] == 0,
          "report %s" % r)
    check(r["rows"] == rc["rows"] and r["series"] == rc["series"], "reports %s and %s" % (r, rc))
    check(any('column "u64": float32 holds integers exactly only up to 16777216' in w for w in warned),
          "no warning about u64's integers: %s" % warned)
    check(seqfeed.Pack("arrow.sfpack").time_kind == "iso-8601", "time kind")

# --missing drop and the default, an error naming the row and the column.
t = table()
csv_of(t, "t.csv")
pack(t, "arrow.sfpack", series_column="site", categorical="sky,mood,code", missing="drop")
pack("t.csv", "csv.sfpack", series_column="site", categorical="sky,mood,code", missing="drop")
same_pack("arrow.sfpack", "csv.sfpack", "missing drop")
try:
    seqfeed.pack(t, "err.sfpack", series_column="site", categorical="sky,mood,code")
    check(False, "a null accepted without --missing")
except seqfeed.SeqfeedError as e:
    check(str(e) == "the Table's Arrow stream: row 6: missing value (null, NaN or an infinity) in column \"f64\"; "
          "expected a number (hint: --missing drop or --missing ffill)", "null message: %s" % e)
check(not os.path.exists("err.sfpack"), "a failed pack left its output")

# Many small batches, streamed: the same file as one batch.
t = table(nulls=False)
pack(t, "one.sfpack", **OPTS)
reader = pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=7))
pack(reader, "many.sfpack", **OPTS)
same_pack("one.sfpack", "many.sfpack", "batches of 7 rows")

# pandas, through its Arrow stream.
df = t.to_pandas()
pack(df, "pandas.sfpack", **OPTS)
same_pack("one.sfpack", "pandas.sfpack", "a pandas DataFrame")

# Polars' strings: string_view columns (the series and a categorical one; ids of 12 bytes or fewer sit in
# their views, longer ones in a data buffer): the same file as strings.
if hasattr(pa, "string_view"):
    views = t
    for name in ("site", "mood"):
        i = views.schema.get_field_index(name)
        views = views.set_column(i, name, views.column(name).cast(pa.string_view()))
    pack(views, "views.sfpack", **OPTS)
    same_pack("one.sfpack", "views.sfpack", "string_view columns")

# Parquet: one file, and a directory partitioned by series (site=...), two files a series, through
# python -m seqfeed pack; the partition column comes last, as text.
t = table(nulls=False).set_column(11, "f16", table(nulls=False).column("f16").cast(pa.float32()))
csv_of(t, "t.csv")
pack("t.csv", "csv.sfpack", **OPTS)
pq.write_table(t, "one.parquet", row_group_size=64)
pack("one.parquet", "pq.sfpack", **OPTS)
same_pack("pq.sfpack", "csv.sfpack", "one Parquet file")
os.makedirs("ds")
for s in SITES:
    part = t.filter(pa.compute.equal(t.column("site"), s)).drop_columns(["site"])
    os.makedirs(os.path.join("ds", "site=" + s))
    half = part.num_rows // 2
    pq.write_table(part.slice(0, half), os.path.join("ds", "site=" + s, "part-0.parquet"))
    pq.write_table(part.slice(half), os.path.join("ds", "site=" + s, "part-1.parquet"))
open(os.path.join("ds", "_SUCCESS"), "w").close()  # as Spark leaves it: not a Parquet file, left out
env = dict(os.environ)
cmd = [sys.executable, "-m", "seqfeed", "pack", "ds", "-o", "dir.sfpack", "--series-column", "site",
       "--categorical", "sky,mood,code", "--chunk-rows", "100"]
p = subprocess.run(cmd, capture_output=True, text=True, env=env)
check(p.returncode == 0 and "packed %d rows (3 series)" % t.num_rows in p.stdout,
      "python -m seqfeed pack ds: %d %s %s" % (p.returncode, p.stdout, p.stderr))
check('python -m seqfeed pack: warning: column "u64"' in p.stderr, "the CLI's warnings: %s" % p.stderr)
same_pack("dir.sfpack", "csv.sfpack", "a partitioned Parquet directory")
# The same directory as pyarrow writes it: partition values URL-encoded (site=b-south%2C%20coast).
import pyarrow.dataset as pads  # noqa: E402
pads.write_dataset(t, "ds-enc", format="parquet", partitioning=["site"], partitioning_flavor="hive")
check(os.path.isdir(os.path.join("ds-enc", "site=b-south%2C%20coast")), "pyarrow's folders: %s" % os.listdir("ds-enc"))
pack("ds-enc", "enc.sfpack", **OPTS)
same_pack("enc.sfpack", "csv.sfpack", "a Parquet directory written by pyarrow")
# A null partition value (its folder __HIVE_DEFAULT_PARTITION__) is a null series id: dropped with
# missing="drop", else an error; a folder that is not UTF-8 once decoded is named.
nulls = pa.table({"site": pa.array(["a", None, "a"]), "v": pa.array([1.0, 2.0, 3.0])})
pads.write_dataset(nulls, "ds-null", format="parquet", partitioning=pads.partitioning(
    pa.schema([("site", pa.string())]), flavor="hive"))
r, _ = pack("ds-null", "null.sfpack", series_column="site", time_column="", missing="drop")
check(r["rows"] == 2 and r["series"] == 1 and r["rows_dropped"] == 1 and seqfeed.Pack("null.sfpack").series ==
      [("a", 0, 2)], "a null partition dropped: %s %s" % (r, seqfeed.Pack("null.sfpack").series))
try:
    seqfeed.pack("ds-null", "err.sfpack", series_column="site", time_column="")
    check(False, "a null partition accepted without missing=drop")
except seqfeed.SeqfeedError as e:
    check("the series column \"site\" is null" in str(e), "null partition message: %s" % e)
os.makedirs(os.path.join("ds-bad", "site=%FE"))
pq.write_table(pa.table({"v": [1.0]}), os.path.join("ds-bad", "site=%FE", "p.parquet"))
try:
    seqfeed.pack("ds-bad", "err.sfpack", series_column="site", time_column="")
    check(False, "a folder of bytes that are not UTF-8 accepted")
except seqfeed.SeqfeedError as e:
    check(str(e).endswith("folder site=%FE is not UTF-8 text once URL-decoded (a partition's key=value)"),
          "bad folder message: %s" % e)
check(not os.path.exists("err.sfpack"), "a failed pack left its output")

# The CLI's errors: text columns not named (exit 2, as seqfeed pack's usage errors), an unknown option.
p = subprocess.run(cmd[:7], capture_output=True, text=True, env=env)
check(p.returncode == 2 and p.stderr == "python -m seqfeed pack: error: ds: columns \"sky\" (dictionary<string>), "
      "\"mood\" (large_string), \"site\" (dictionary<string>) are text: name one as the series column (--series-column) and "
      "the others as categorical (--categorical), or leave them out (--drop-columns)\n",
      "text columns: %d %s" % (p.returncode, p.stderr))
p = subprocess.run(cmd[:7] + ["--missing", "sometimes"], capture_output=True, text=True, env=env)
check(p.returncode == 2 and "--missing" in p.stderr, "a bad --missing: %d %s" % (p.returncode, p.stderr))
# Without pyarrow: how to get it.
hide = ("import sys, runpy; sys.modules['pyarrow'] = sys.modules['pyarrow.dataset'] = None; "
        "sys.argv = ['seqfeed', 'pack', 'one.parquet', '-o', 'x.sfpack']; runpy.run_module('seqfeed', run_name='__main__')")
p = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True, env=env)
check(p.returncode == 1 and "pip install pyarrow" in p.stderr, "no pyarrow: %d %s" % (p.returncode, p.stderr))
# seqfeed pack itself on a Parquet file names the command.
p = subprocess.run([SEQFEED, "pack", "one.parquet", "-o", "x.sfpack"], capture_output=True, text=True)
check(p.returncode == 1 and "python -m seqfeed pack one.parquet -o x.sfpack" in p.stderr,
      "seqfeed pack one.parquet: %d %s" % (p.returncode, p.stderr))

# A file whose columns differ from the first's: said before anything is packed, naming it.
pq.write_table(pa.table({"x": [1.0]}), os.path.join("ds", "site=" + SITES[2], "part-2.parquet"))
p = subprocess.run(cmd, capture_output=True, text=True, env=env)
check(p.returncode == 1 and "part-2.parquet: its columns differ from those of ds/site=a-north/part-0.parquet, the "
      "first file: x (double), site (partition), not time (timestamp[us])" in p.stderr,
      "a file of other columns: %d %s" % (p.returncode, p.stderr))

# Long format sorted by time (one row per site per hour, as exported from a database), in a Parquet file of
# small row groups: the rows regrouped by series, each in the file's order, against pandas
# groupby(sort=False) of the same rows; through python -m seqfeed pack with the least --memory-budget
# (sorted runs spilled beside the output and merged), and seqfeed.pack on the table in memory.
import pandas as pd  # noqa: E402
rng = np.random.default_rng(7)
nsites, steps = 150, 120
sites = ["site-%03d" % i for i in rng.permutation(nsites)]  # first appearance: not name order
hours = pd.date_range("2024-03-01", periods=steps, freq="h")
lf = pd.DataFrame({"time": np.repeat(hours, nsites), "site": np.tile(sites, steps),
                   "load": rng.normal(size=nsites * steps).astype(np.float32),
                   "temp": rng.integers(-20, 40, nsites * steps).astype(np.float64)})
lf = lf.drop(index=rng.choice(len(lf), 500, replace=False)).reset_index(drop=True)  # steps missing here and there
pq.write_table(pa.Table.from_pandas(lf, preserve_index=False), "long.parquet", row_group_size=1000)
want = pd.concat([g for _, g in lf.groupby("site", sort=False)])
p = subprocess.run([sys.executable, "-m", "seqfeed", "pack", "long.parquet", "-o", "long.sfpack", "--series-column",
                    "site", "--memory-budget", "0.25"], capture_output=True, text=True, env=env)
check(p.returncode == 0 and "packed %d rows (%d series)" % (len(lf), nsites) in p.stdout,
      "python -m seqfeed pack long.parquet: %d %s %s" % (p.returncode, p.stdout, p.stderr))
check("note: the rows of series interleave: pack regrouped them" in p.stderr and "sorted runs merged" in p.stderr,
      "the CLI's note on regrouping: %s" % p.stderr)
check(not [f for f in os.listdir(".") if ".tmp." in f], "temporary files left: %s" % os.listdir("."))
r, _ = pack(pa.Table.from_pandas(lf, preserve_index=False), "long-mem.sfpack", series_column="site")
check(r["regrouped"] and any("regrouped them" in n and "in memory" in n for n in r["notes"]), "report: %s" % r)
for f in ("long.sfpack", "long-mem.sfpack"):
    with seqfeed.Pack(f) as q:
        x = q.read()
        check(q.columns == ["load", "temp"] and np.array_equal(x, want[["load", "temp"]].to_numpy(np.float32)),
              "%s: values differ from pandas groupby(sort=False)" % f)
        counts = want.groupby("site", sort=False).size()
        check([(n, k) for n, _, k in q.series] == list(zip(counts.index, counts.tolist())),
              "%s: series %s" % (f, q.series[:3]))
        got = q.read_times()
        check(np.array_equal(got, want["time"].to_numpy("datetime64[us]").astype(np.int64)),
              "%s: times differ from pandas groupby(sort=False)" % f)
p = subprocess.run([sys.executable, "-m", "seqfeed", "pack", "long.parquet", "-o", "small.sfpack", "--series-column",
                    "site", "--memory-budget", "0.01"], capture_output=True, text=True, env=env)
check(p.returncode == 2 and "--memory-budget 0.01 MB is too small" in p.stderr and not os.path.exists("small.sfpack"),
      "a budget too small: %d %s" % (p.returncode, p.stderr))

# A series that comes back is regrouped; the argument checks before the library.
t = pa.table({"id": ["a", "b", "a"], "x": [1.0, 2.0, 3.0]})
r = seqfeed.pack(t, "back.sfpack", series_column="id")
with seqfeed.Pack("back.sfpack") as q:
    check(r["regrouped"] and q.series == [("a", 0, 2), ("b", 2, 1)] and q.read()[:, 0].tolist() == [1.0, 3.0, 2.0],
          "a series that comes back: %s %s" % (r, q.series))
for kw, msg in ((dict(missing="sometimes"), "missing (--missing) must be one of error, drop, ffill"),
                (dict(memory_budget=0), "memory_budget (--memory-budget) must be a number of MB from 0.001 to 1e9"),
                (dict(series_column=["id"]), "series_column (--series-column) must be a column name"),
                (dict(columns="x", drop_columns="id"), "exclude each other"),
                (dict(threads=0), "threads (--threads) must be an integer from 1 to 256")):
    try:
        seqfeed.pack(t, "err.sfpack", **kw)
        check(False, "accepted %s" % kw)
    except ValueError as e:
        check(msg in str(e), "%s: %s" % (kw, e))
try:
    seqfeed.pack([1, 2], "err.sfpack")
    check(False, "a list accepted")
except TypeError as e:
    check("__arrow_c_stream__" in str(e), str(e))

# The C API consumes the stream whatever the outcome: released (its release NULL in the capsule's struct,
# so that the capsule's destructor does not release it again) also when refused before reading it.
import ctypes  # noqa: E402
for out, opts, code, msg in ((None, None, -3, b"the output path is NULL"),
                             (b"x.sfpack", seqfeed._PackOpts(missing=b"bad"), -6, b"missing 'bad' (--missing)")):
    cap = pa.table({"x": [1.0]}).__arrow_c_stream__()
    ptr = seqfeed._capsule_pointer(cap, b"arrow_array_stream")
    err = seqfeed._Err()
    rc = seqfeed._lib.sf_api_pack_arrow(ptr, out, ctypes.byref(opts) if opts else None, None, None, ctypes.byref(err))
    check(rc == code and msg in err.msg, "sf_api_pack_arrow refusing: %d %s" % (rc, err.msg))
    check(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_void_p))[3] is None, "the refused stream was not released")
    del cap

# A Parquet directory of 3 files (a day each) whose sites' rows interleave hour by hour: regrouped by site,
# each row keeping its file and its row there (from 1), so that predict --with-actual names the user's own
# file and row; checked against the files themselves. A list of the files packs the same file.
import json  # noqa: E402
os.makedirs("days")
rng = np.random.default_rng(3)
for d in range(3):
    hours = pd.date_range("2024-05-0%d" % (d + 1), periods=24, freq="h")
    day = pd.DataFrame({"time": np.repeat(hours, 3), "site": np.tile(["north", "south", "east"], 24),
                        "load": rng.normal(size=72).astype(np.float32)})
    pq.write_table(pa.Table.from_pandas(day, preserve_index=False), "days/day%d.parquet" % d, row_group_size=25)
days = ["days/day%d.parquet" % d for d in range(3)]
p = subprocess.run([sys.executable, "-m", "seqfeed", "pack", "days", "-o", "days.sfpack", "--series-column", "site",
                    "-q"], capture_output=True, text=True, env=env)
check(p.returncode == 0, "python -m seqfeed pack days: %d %s" % (p.returncode, p.stderr))
info = json.loads(subprocess.run([SEQFEED, "inspect", "days.sfpack", "--json"], capture_output=True,
                                 text=True).stdout or "{}")
check(info.get("sources") == days, "sources: %s" % info.get("sources"))
r, _ = pack(days, "days-list.sfpack", series_column="site")
pack("days", "days-dir.sfpack", series_column="site")
p = subprocess.run([sys.executable, "-m", "seqfeed", "pack"] + days + ["-o", "days-list2.sfpack", "--series-column",
                   "site", "-q"], capture_output=True, text=True, env=env)
check(p.returncode == 0, "python -m seqfeed pack FILES: %d %s" % (p.returncode, p.stderr))
for f, g in (("days-list.sfpack", "days-dir.sfpack"), ("days-list2.sfpack", "days.sfpack")):
    q = subprocess.run([SEQFEED, "inspect", f, "--json"], capture_output=True, text=True).stdout
    check(json.loads(q or "{}").get("sources") == days, "%s: sources %s" % (f, q[:200]))
    same_pack(g, f, "a list of Parquet files")
steps = [[SEQFEED, "train", "--data", "days.sfpack", "--model", "lstm:4,dense", "--window", "4", "--epochs", "1",
          "--batch-size", "8", "--targets", "load", "-q", "--checkpoint-dir", "ck"],
         [SEQFEED, "predict", "--checkpoint", "ck/latest.safetensors", "--data", "days.sfpack", "--with-actual", "-o",
          "pred.csv", "-q"]]
for c in steps:
    p = subprocess.run(c, capture_output=True, text=True)
    check(p.returncode == 0, "%s: %d %s" % (c[1], p.returncode, p.stderr))
pred = pd.read_csv("pred.csv", dtype={"line": np.int64}) if os.path.exists("pred.csv") else pd.DataFrame()
check(list(pred.columns) == ["site", "time", "file", "line", "load_pred", "load"], "predict's columns: %s"
      % list(pred.columns))
check(len(pred) > 100 and set(pred.get("file", [])) == set(days), "%d forecasts, files %s" % (len(pred), set(pred.get("file", []))))
tables = {f: pq.read_table(f).to_pandas() for f in days}
bad = 0
for row in pred.itertuples(index=False):
    src = tables[row.file].iloc[row.line - 1]  # the file's row, counted from 1
    ok = (src["site"] == row.site and src["time"] == pd.Timestamp(row.time) and
          np.float32(src["load"]) == np.float32(row.load))
    bad += not ok
    if not ok and bad == 1:
        check(False, "forecast %s: row %d of %s is %s" % (tuple(row), row.line, row.file, dict(src)))
check(bad == 0, "%d forecasts name a file and row that do not hold their site, time and value" % bad)

# Errors name the file and its row there.
os.makedirs("days-bad")
for d, f in enumerate(days):
    t = pq.read_table(f)
    if d == 1:
        t = t.set_column(2, "load", pa.array(t.column("load").to_numpy(), mask=np.arange(t.num_rows) == 4))
    pq.write_table(t, "days-bad/day%d.parquet" % d)
try:
    seqfeed.pack("days-bad", "err.sfpack", series_column="site")
    check(False, "a null in day1.parquet accepted")
except seqfeed.SeqfeedError as e:
    check(str(e).startswith("days-bad/day1.parquet: row 5: missing value (null, NaN or an infinity) in column "
                            "\"load\""), "a null's message: %s" % e)

# An output that is one of the inputs is refused before anything is written: the input stays.
before = open(days[1], "rb").read()
for args in ((days[1], days[1]), ("days", days[1])):
    try:
        seqfeed.pack(args[0], args[1], series_column="site")
        check(False, "packing %s into %s accepted" % args)
    except seqfeed.SeqfeedError as e:
        check("the output %s is the same file as the input %s" % (days[1], days[1]) in str(e), "same file: %s" % e)
    check(open(days[1], "rb").read() == before, "%s changed by a refused pack" % days[1])

# A series per file (--series-per-file), named after it; progress after each batch, up to the files' rows.
os.makedirs("sites")
whole = pd.concat(tables[f] for f in days)
for s in ("north", "south", "east"):
    pq.write_table(pa.Table.from_pandas(whole[whole.site == s].drop(columns="site"), preserve_index=False),
                   "sites/%s.parquet" % s, row_group_size=20)
calls = []
r, _ = pack("sites", "sites.sfpack", series_per_file=True, progress=lambda rows, total: calls.append((rows, total)))
with seqfeed.Pack("sites.sfpack") as q:
    check(q.series == [("east", 0, 72), ("north", 72, 72), ("south", 144, 72)], "series per file: %s" % q.series)
check(calls and calls[-1] == (216, 216) and all(t == 216 for _, t in calls) and
      all(a[0] < b[0] for a, b in zip(calls, calls[1:])), "progress calls: %s" % calls)
# An exception in the progress callback stops the pack: it reaches the caller, and no output appears.
class Stop(Exception):
    pass


def stop(rows, total):
    raise Stop(rows)


try:
    seqfeed.pack("sites", "stopped.sfpack", series_per_file=True, progress=stop)
    check(False, "a progress callback's exception was lost")
except Stop:
    pass
check(not [f for f in os.listdir(".") if f.startswith("stopped")], "a stopped pack left %s" % os.listdir("."))
p = subprocess.run([sys.executable, "-m", "seqfeed", "pack", "sites", "-o", "sites2.sfpack", "--series-per-file"],
                   capture_output=True, text=True, env=env)
check(p.returncode == 0 and "packed 216 rows (3 series)" in p.stdout, "--series-per-file: %d %s %s" %
      (p.returncode, p.stdout, p.stderr))
for kw, msg in ((dict(series_per_file=True, series_column="site"), "exclude each other"),):
    try:
        seqfeed.pack("days", "err.sfpack", **kw)
        check(False, "accepted %s" % kw)
    except seqfeed.SeqfeedError as e:
        check(msg in str(e) and e.code == -6, "%s: %s" % (kw, e))
try:
    seqfeed.pack(pa.table({"x": [1.0]}), "err.sfpack", series_per_file=True)
    check(False, "series_per_file accepted for a table")
except ValueError as e:
    check("needs Parquet files" in str(e), str(e))

# Numeric series ids in a pyarrow table (4 motes, each a run of rows): where the time restarts with the mote,
# an error naming the column and --series-column before anything is written; with a counter instead of a
# time, a warning; series_column="" (--series-column none) says the rows are one series.
n = 50
motes = pa.table({"mote_id": np.repeat(np.arange(1, 5), n),
                  "time": pa.array(np.tile(np.arange(n), 4) * 60_000_000 + 1_077_926_400_000_000,
                                   pa.timestamp("us")),
                  "temp": rng.normal(size=4 * n)})
try:
    seqfeed.pack(motes, "err.sfpack")
    check(False, "motes packed as one series")
except seqfeed.SeqfeedError as e:
    check(str(e).startswith("the Table's Arrow stream: row 51: time 2004-02-28T00:00:00 goes back from "
                            "2004-02-28T00:49:00 (row 50) where column \"mote_id\" changes from 1 to 2, and nowhere "
                            "else in the first 200 rows: \"mote_id\" looks like the id of series (4 values") and
          str(e).endswith("If \"mote_id\" is the series id, pack it with --series-column mote_id."), "hint: %s" % e)
check(not os.path.exists("err.sfpack"), "the hint left an output")
pq.write_table(motes, "motes.parquet")
p = subprocess.run([sys.executable, "-m", "seqfeed", "pack", "motes.parquet", "-o", "err.sfpack"],
                   capture_output=True, text=True, env=env)
check(p.returncode == 1 and "motes.parquet: row 51: time" in p.stderr and "--series-column mote_id." in p.stderr,
      "python -m seqfeed pack motes.parquet: %d %s" % (p.returncode, p.stderr))
r, _ = pack(motes, "motes.sfpack", series_column="mote_id")
check(r["series"] == 4, "motes by mote_id: %s" % r)
counter = motes.drop_columns(["time"]).append_column("reading", pa.array(np.tile(np.arange(1, n + 1), 4)))
r, warned = pack(counter, "counter.sfpack")
check(r["series"] == 1 and any(w.startswith('column "mote_id" looks like the id of series: its 4 values each come '
                                            'in one run of rows, and column "reading" restarts where it changes '
                                            '(row 51: 50 then 1)') for w in warned), "counter: %s %s" % (r, warned))
r, warned = pack(counter, "counter.sfpack", series_column="")
check(r["series"] == 1 and not warned, "series_column=\"\": %s %s" % (r, warned))
pq.write_table(counter, "counter.parquet")
p = subprocess.run([sys.executable, "-m", "seqfeed", "pack", "counter.parquet", "-o", "counter2.sfpack"],
                   capture_output=True, text=True, env=env)
check(p.returncode == 0 and "python -m seqfeed pack: warning: column \"mote_id\" looks like the id" in p.stderr,
      "the CLI's warning: %d %s" % (p.returncode, p.stderr))
p = subprocess.run([sys.executable, "-m", "seqfeed", "pack", "counter.parquet", "-o", "counter3.sfpack",
                    "--series-column", "none"], capture_output=True, text=True, env=env)
check(p.returncode == 0 and "looks like" not in p.stderr, "--series-column none: %d %s" % (p.returncode, p.stderr))

# A reader whose batches are not of its schema (pyarrow's from_batches does not check): refused before the C
# packer reads an int8 buffer as float64 (it read past the buffer: a crash, or garbage); an exception of the
# batches (a KeyboardInterrupt too) reaches the caller as itself, not as a stream error; no output either way.
sch = pa.schema([("v", pa.float64())])


def bad_batches():
    yield pa.record_batch({"v": [1.0, 2.0]})
    yield pa.record_batch({"v": pa.array(np.zeros(4_000_000, np.int8))})


try:
    seqfeed.pack(pa.RecordBatchReader.from_batches(sch, bad_batches()), "mixed.sfpack", series_column="")
    check(False, "a batch of another type than the schema's packed")
except seqfeed.SeqfeedError as e:
    check(str(e).startswith("record batch 2 has the columns v (int8), not those of the stream's schema: v (double)"),
          "a batch of another type: %s" % e)


def interrupted():
    yield pa.record_batch({"v": [1.0, 2.0]})
    raise KeyboardInterrupt


try:
    seqfeed.pack(pa.RecordBatchReader.from_batches(sch, interrupted()), "mixed.sfpack", series_column="")
    check(False, "a KeyboardInterrupt of the batches was lost")
except KeyboardInterrupt:
    pass
check(not os.path.exists("mixed.sfpack"), "a failed pack of a reader left its output")
# A file of a directory that is not Parquet: named, exit 1 (not a usage error). Not under a preloaded ASan
# runtime, whose __cxa_throw interceptor aborts on pyarrow's C++ exception (it finds no real __cxa_throw).
if "libasan" not in os.environ.get("LD_PRELOAD", ""):
    os.makedirs("notes", exist_ok=True)
    pq.write_table(pa.table({"v": [1.0, 2.0]}), "notes/a.parquet")
    with open("notes/readme.txt", "w") as f:
        f.write("hi\n")
    p = subprocess.run([sys.executable, "-m", "seqfeed", "pack", "notes", "-o", "notes.sfpack"],
                       capture_output=True, text=True, env=env)
    check(p.returncode == 1 and p.stderr.startswith("python -m seqfeed pack: error: notes/readme.txt: not a Parquet "
                                                    "file pyarrow can read ("), "a text file in a directory: %d %s" %
          (p.returncode, p.stderr))
# Files that differ only in whether a column may hold nulls: one dataset.
os.makedirs("nullable", exist_ok=True)
pq.write_table(pa.table({"v": [1.0, 2.0]}), "nullable/a.parquet")
pq.write_table(pa.Table.from_arrays([pa.array([3.0, 4.0])], schema=pa.schema([pa.field("v", pa.float64(),
                                                                                        nullable=False)])),
               "nullable/b.parquet")
r, warned = pack("nullable", "nullable.sfpack")
check(r["rows"] == 4, "files differing in nullability: %s" % r)
# An output that is a Parquet file, or a link to one: a stream's input, likely, never replaced.
os.symlink("nullable/a.parquet", "link.sfpack")
for out in ("nullable/a.parquet", "link.sfpack"):
    try:
        seqfeed.pack(seqfeed.parquet_reader("nullable/a.parquet"), out)
        check(False, "%s replaced by the pack of a stream" % out)
    except ValueError as e:
        check(str(e).startswith("out %s is a Parquet file" % out), "%s: %s" % (out, e))
check(pq.read_table("nullable/a.parquet").num_rows == 2, "the Parquet file was changed")

if failures:
    sys.exit("%d check(s) failed" % len(failures))
print("seqfeed.pack over pyarrow: all checks passed")
