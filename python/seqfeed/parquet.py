"""Parquet files into seqfeed.pack (imported by it when a source is a path): a file, a directory of them or a
list of either, read a row group at a time with pyarrow and handed to libseqfeed as one Arrow stream with each
file's name and row count (sf_api_pack_arrow_files), so that every row keeps its file and its row in that file
(counted from 1: the file's first row is row 1) and predict --with-actual names them."""
import ctypes
import os
import urllib.parse

import numpy as np

from . import _PROGRESS, SeqfeedError, _call, _Err, _Interrupt, _PackOpts, _capsule_pointer, _lib, _pack_report, _vp

_u32, _u64 = ctypes.c_uint32, ctypes.c_uint64


class _Sources(ctypes.Structure):
    _fields_ = [("files", ctypes.POINTER(ctypes.c_char_p)), ("rows", ctypes.POINTER(_u64)), ("nfiles", _u32),
                ("series_per_file", ctypes.c_int), ("progress", _PROGRESS), ("progress_arg", _vp)]


_lib.sf_api_pack_arrow_files.argtypes = [_vp, ctypes.c_char_p, ctypes.POINTER(_PackOpts), ctypes.c_char_p, ctypes.POINTER(_Sources),
                                         ctypes.POINTER(_vp), ctypes.POINTER(_Err)]


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as papq
    except ImportError:
        raise ImportError("reading Parquet needs pyarrow, which is not installed: pip install pyarrow") from None
    return pa, papq


def _directory(p):
    """A directory's Parquet files, names sorted (byte order for ASCII names, as seqfeed pack sorts a
    directory's), leaving out pyarrow's ignored prefixes (. and _: _SUCCESS, .crc files), also for folders."""
    files = sorted(os.path.join(root, f) for root, dirs, names in os.walk(p)
                   if not any(part.startswith((".", "_")) for part in os.path.relpath(root, p).split(os.sep)
                              if part != ".")
                   for f in names if not f.startswith((".", "_")))
    if not files:
        raise SeqfeedError(-4, "%s: no Parquet files in this directory" % p)
    return files


def _metadata(papq, f):
    """f's Parquet footer, or an error that names f (pyarrow's names no file)."""
    try:
        return papq.read_metadata(f)
    except (OSError, ValueError) as ex:  # ArrowInvalid is a ValueError, ArrowIOError an OSError
        raise SeqfeedError(-5, "%s: not a Parquet file pyarrow can read (%s)" % (f, ex)) from None


_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"  # a null value's folder, as Hive, Spark and pyarrow name it


def _partitions(path, base):
    """The hive partitions of a file under base: [(key, value)] of its folders named key=value, URL-decoded
    as pyarrow and Spark write them ("site=b%2C%20c" holds "b, c"); value None for a null."""
    rel = os.path.relpath(os.path.dirname(os.path.abspath(path)), os.path.abspath(base))
    parts = []
    for part in rel.split(os.sep):
        if "=" not in part:
            continue
        try:
            key, value = (urllib.parse.unquote(x, errors="strict") for x in part.split("=", 1))
        except UnicodeDecodeError:
            raise SeqfeedError(-4, "%s: folder %s is not UTF-8 text once URL-decoded (a partition's key=value)" %
                               (path, part)) from None
        parts.append((key, None if value == _HIVE_NULL else value))
    return parts


class ParquetSource:
    """Parquet files read in a stated order: files (their paths, as the packed file lists them), rows (each
    file's rows, from its footer) and reader(), a pyarrow RecordBatchReader of batches of 65536 rows read a
    row group at a time (memory stays bounded whatever the size of the data) with the hive partitions of a
    directory's folders (site=north/) as dictionary columns of text after the file's own."""

    def __init__(self, paths):
        pa, papq = _pyarrow()
        self.files, parts = [], []
        for p in paths:
            if os.path.isdir(p):
                found = _directory(p)
                self.files += found
                parts += [_partitions(f, p) for f in found]
            else:
                self.files.append(p)
                parts.append([])  # a file alone: no partitions
        # Every file's columns, partitions and rows first (their footers only): a difference is said before
        # packing.
        metas = [_metadata(papq, f) for f in self.files]
        self.rows = [m.num_rows for m in metas]
        schema, keys = metas[0].schema.to_arrow_schema(), [k for k, _ in parts[0]]

        def describe(s, ks):
            return ", ".join("%s (%s)" % (n.name, n.type) for n in s) + "".join(", %s (partition)" % k for k in ks)

        for f, m, fparts in zip(self.files[1:], metas[1:], parts[1:]):
            other, other_keys = m.schema.to_arrow_schema(), [k for k, _ in fparts]
            # Names and types: whether a column may hold nulls (Spark's writers declare some not) is no
            # difference here, where nulls are pack's --missing to take.
            if [(c.name, c.type) for c in other] != [(c.name, c.type) for c in schema] or other_keys != keys:
                raise SeqfeedError(-4, "%s: its columns differ from those of %s, the first file: %s, not %s" %
                                   (f, self.files[0], describe(other, other_keys), describe(schema, keys)))
        text = pa.dictionary(pa.int32(), pa.string())
        self.schema = pa.schema([c.with_nullable(True) for c in schema] + [pa.field(k, text) for k in keys])
        self._parts = parts

    def reader(self):
        pa, papq = _pyarrow()

        def batches():
            for f, fparts in zip(self.files, self._parts):
                # each partition's one-value dictionary, once per file
                values = [pa.array([v], pa.string()) for _, v in fparts]
                # pre_buffer=False: pyarrow's default reads every row group's column chunks ahead (the whole
                # file in memory); without it, a row group at a time.
                try:
                    with papq.ParquetFile(f, pre_buffer=False) as pf:
                        for b in pf.iter_batches(batch_size=65536):
                            cols = [pa.DictionaryArray.from_arrays(np.zeros(b.num_rows, np.int32), v) for v in values]
                            yield pa.RecordBatch.from_arrays(b.columns + cols, schema=self.schema)
                except (OSError, ValueError) as ex:  # a corrupt page: the error names the file, not the stream
                    raise SeqfeedError(-5, "%s: %s" % (f, ex)) from None

        return pa.RecordBatchReader.from_batches(self.schema, batches())


def _checked(reader, raised, intr):
    """A pyarrow RecordBatchReader's batches, each checked against its schema (pyarrow's from_batches does
    not check them, and libseqfeed reads a batch's buffers as the schema's types say: a batch of int8 under a
    float64 column read past its buffer), as a reader; an exception of the source's batches (this check's, a
    generator's own, a KeyboardInterrupt, intr's Ctrl-C) kept in raised: the pack stops there and the caller
    raises it."""
    pa, _ = _pyarrow()
    schema = reader.schema
    want = [(f.name, f.type) for f in schema]

    def batches():
        try:
            for k, b in enumerate(reader):
                if intr.hit:
                    raise KeyboardInterrupt
                got = [(f.name, f.type) for f in b.schema]
                if got != want:
                    raise SeqfeedError(-4, "record batch %d has the columns %s, not those of the stream's schema: %s "
                                       "(hint: reader.cast(schema), or batches made with that schema)" % (
                                           k + 1, ", ".join("%s (%s)" % g for g in got),
                                           ", ".join("%s (%s)" % w for w in want)))
                yield b
        except BaseException as ex:
            raised.append(ex)
            raise

    return pa.RecordBatchReader.from_batches(schema, batches())


def pack(source, out_b, opts, name, files=None, rows=None, series_per_file=False, progress=None):
    """sf_api_pack_arrow_files: source (with __arrow_c_stream__) into out_b with the _PackOpts opts; files and
    rows (None: the stream's rows keep their index in it) the files the rows come from, in order, and each
    one's rows; progress(rows, total) after each batch."""
    raised = []
    names = [os.fsencode(f) for f in files or []]
    src = _Sources(files=(ctypes.c_char_p * max(len(names), 1))(*names),
                   rows=(_u64 * max(len(names), 1))(*(rows or [])), nfiles=len(names),
                   series_per_file=int(bool(series_per_file)))
    with _Interrupt(raised) as intr:
        # Always there, to stop the pack on Ctrl-C.
        src.progress = _PROGRESS(lambda arg, done, total: _call(progress, raised, done, total, intr))
        if type(source).__name__ == "RecordBatchReader" and type(source).__module__.startswith("pyarrow"):
            source = _checked(source, raised, intr)
        capsule = source.__arrow_c_stream__()
        ptr = _capsule_pointer(capsule, b"arrow_array_stream")
        report, err = _vp(), _Err()
        # libseqfeed moves the stream out of the capsule (its release set to NULL) and releases it; the
        # capsule, alive until then, frees only its own memory.
        rc = _lib.sf_api_pack_arrow_files(ptr, out_b, ctypes.byref(opts), name.encode("utf-8", "replace"),
                                          ctypes.byref(src), ctypes.byref(report), ctypes.byref(err))
        del capsule
    return _pack_report(rc, err, report, raised, stacklevel=4)  # the warnings point at seqfeed.pack's caller
