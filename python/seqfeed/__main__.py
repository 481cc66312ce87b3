"""python -m seqfeed pack INPUT... -o OUT.sfpack [options]: `seqfeed pack` for what the C program does not
read, Parquet (files, or directories of them, read a row group at a time with pyarrow), with its
options; a CSV goes to the same packer as `seqfeed pack`. Exit status: 0, 1 for an error in the data or
the system, 2 for a usage error (as `seqfeed pack`)."""
import argparse
import sys
import time

PROG = "python -m seqfeed pack"


def _parser():
    p = argparse.ArgumentParser(prog=PROG, description="Packs Parquet files, directories of Parquet files "
                                "(hive partitions such as site=north/ become columns; names sorted) or a CSV file "
                                "into an .sfpack file, as seqfeed pack does for a CSV. Each row keeps its file and "
                                "its row in that file, counted from 1 (a CSV's: its line), which predict "
                                "--with-actual writes.")
    p.add_argument("input", metavar="INPUT", nargs="+",
                   help="Parquet files or directories of them, read in the order given, or one CSV file")
    p.add_argument("-o", "--output", required=True, metavar="OUT.sfpack",
                   help="the .sfpack file to write; it appears only when packing succeeded")
    p.add_argument("--columns", metavar="LIST", help="the columns to keep, in order (comma-separated)")
    p.add_argument("--drop-columns", metavar="LIST", help="columns to leave out")
    p.add_argument("--series-column", metavar="NAME", help="the column of series ids (text, dictionary or "
                   "integers), or none: the rows are one series (default: one series, unless the first rows show "
                   "a column of integer ids)")
    p.add_argument("--series-per-file", action="store_true",
                   help="each Parquet file is one series, named after the file without its extension")
    p.add_argument("--time-column", metavar="NAME", help="the time column (a timestamp or date), or none; "
                   "default: the first kept timestamp or date column")
    p.add_argument("--categorical", metavar="LIST", help="text or integer columns stored as categories")
    p.add_argument("--missing", choices=("error", "drop", "ffill"), default="error",
                   help="what a null (or NaN, infinity) does: an error (default), drops the row, or takes the "
                   "series' value before it")
    p.add_argument("--memory-budget", type=float, metavar="MB",
                   help="memory for the rows of series whose rows interleave (a series that comes back after "
                   "another started): they are held, sorted by series in runs spilled to temporary files beside "
                   "the output, and merged; at least 0.25 (default: 64)")
    p.add_argument("--chunk-rows", type=int, metavar="N", help="rows per chunk (default: 1 MiB of values)")
    p.add_argument("--threads", type=int, metavar="N", help="compression threads (default: one per core)")
    p.add_argument("-q", "--quiet", action="store_true", help="say nothing but warnings and errors")
    return p


class _Progress:
    """The progress line seqfeed pack shows on a terminal: after a second, five times a second at most, on
    stderr, cleared at the end."""

    def __init__(self, start, quiet):
        self.start, self.last, self.shown = start, 0.0, False
        self.on = not quiet and sys.stderr.isatty()

    def __call__(self, rows, total):
        now = time.monotonic()
        if not self.on or now - self.start < 1.0 or now - self.last < 0.2:
            return
        self.last, self.shown = now, True
        of = " of %d (%.0f%%)" % (total, 100.0 * rows / total) if total else ""
        sys.stderr.write("\r\033[Kpacking: %d rows%s, %.0f rows/s" % (rows, of, rows / (now - self.start)))
        sys.stderr.flush()

    def end(self):
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
        self.shown = False


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] != "pack":
        print("usage: %s INPUT -o OUT.sfpack [options] (python -m seqfeed pack --help)" % PROG, file=sys.stderr)
        return 2
    a = _parser().parse_args(argv[1:])
    import seqfeed  # after the arguments: --help works without libseqfeed
    time_column = None if a.time_column is None else "" if a.time_column == "none" else a.time_column
    series_column = None if a.series_column is None else "" if a.series_column == "none" else a.series_column
    start = time.monotonic()
    progress = _Progress(start, a.quiet)
    try:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # said below, once, as seqfeed pack says them
            r = seqfeed.pack(a.input[0] if len(a.input) == 1 else a.input, a.output, series_column=series_column,
                             time_column=time_column, columns=a.columns, drop_columns=a.drop_columns,
                             categorical=a.categorical, missing=a.missing, chunk_rows=a.chunk_rows,
                             threads=a.threads, memory_budget=a.memory_budget, series_per_file=a.series_per_file,
                             progress=progress)
    except ValueError as e:
        print("%s: usage error: %s" % (PROG, e), file=sys.stderr)
        return 2
    except seqfeed.SeqfeedError as e:
        progress.end()
        print("%s: error: %s" % (PROG, e), file=sys.stderr)
        return 2 if e.code == -6 else 1  # SF_EUSAGE: an option that cannot work here
    except ImportError as e:
        print("%s: error: %s" % (PROG, e), file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # the pack stopped: its partial output removed
        progress.end()
        print("%s: interrupted; partial output removed" % PROG, file=sys.stderr)
        return 130
    progress.end()
    for note in r["notes"]:
        print("%s: %s" % (PROG, note), file=sys.stderr)
    if not a.quiet:
        dt = time.monotonic() - start
        extra = "".join(", %d %s" % (r[k], w) for k, w in (("rows_dropped", "rows dropped"),
                                                             ("values_filled", "values filled")) if r[k])
        print("packed %d rows (%d series%s) from %s into %s, %.1f MB, in %.2f s" %
              (r["rows"], r["series"], extra, " ".join(a.input), a.output, r["bytes"] / 1e6, dt))
    return 0


if __name__ == "__main__":
    sys.exit(main())
