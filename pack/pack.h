// pack: the .sfpack on-disk format (docs/FORMAT.md), its writer, its reader
// and the CSV converter behind `seqfeed pack`.
//
// A reader (sf_pack) is immutable after sf_pack_open and may be shared by any
// number of threads; each decoding thread owns one sf_pack_dctx. Nothing here
// keeps global state.
#ifndef SF_PACK_H
#define SF_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "pack/arrow_abi.h"  // the Arrow C data and stream ABI, copied from the Arrow spec

#define SF_PACK_VERSION 2  // written when rows carry times or CSV lines; else version 1, which every reader reads
#define SF_PACK_ALIGN 4096u              // chunk offsets are multiples of this
#define SF_PACK_DEFAULT_CHUNK_BYTES (1u << 20)  // raw float32 bytes per chunk
#define SF_PACK_DEFAULT_LEVEL 1          // zstd level; docs/FORMAT.md says why
#define SF_PACK_MAX_COLS 65535u
#define SF_PACK_MAX_NAME 65535u

// How a chunk's column-major float32 values are transformed before zstd.
enum sf_filter {
    SF_FILTER_NONE = 0,           // column-major bytes as they are
    SF_FILTER_SHUFFLE = 1,        // byte planes (all low bytes, then ...)
    SF_FILTER_DELTA_SHUFFLE = 2,  // zigzag uint32 delta along each column, then planes
    SF_FILTER_COUNT
};
const char *sf_filter_name(int filter);
int sf_filter_parse(const char *name);  // -1 when unknown

typedef struct {
    double min, max, mean, std;  // std: population (ddof = 0), like numpy
} sf_col_stats;

typedef struct {
    uint64_t first_row, rows;
    const char *name;  // value of the series column, "" when there is none
} sf_series;

// A categorical column: its values are the codes 0 .. nvalues - 1 of the
// texts values[code], in the order they first appeared.
typedef struct {
    uint32_t column;
    uint32_t nvalues;
    const char *const *values;
} sf_category;
#define SF_PACK_MAX_CATEGORY 1024u  // distinct values a categorical column may have
// Bytes of one category value: pack, train and checkpoints share this limit
// (a checkpoint keeps the values in its metadata; a longer one would leave
// a run whose checkpoints nothing can load).
#define SF_PACK_MAX_CATEGORY_VALUE 4095u
// Bytes of a categorical column's name and values as a checkpoint keeps them
// (sf_list_group_bytes: a list inside the list of every categorical
// feature): pack refuses a column they do not fit, checkpoints keep this.
#define SF_PACK_MAX_CATEGORY_LIST 16383u

typedef struct {
    uint64_t offset;       // byte offset of the stored (compressed) bytes
    uint32_t stored_size;  // compressed bytes
    uint32_t crc;          // CRC-32C of the stored bytes
    uint64_t first_row;
    uint32_t rows;
} sf_chunk;

// A time column: how its values were given, which decides how they are
// written back. Stored as int64: microseconds since 1970-01-01T00:00Z for
// ISO-8601 times, else the integer epoch in the unit given.
enum sf_time_kind { SF_TIME_NONE, SF_TIME_ISO, SF_TIME_EPOCH_S, SF_TIME_EPOCH_MS, SF_TIME_EPOCH_US, SF_TIME_EPOCH_NS };

typedef struct {
    uint32_t version;
    uint32_t ncols;
    const char *const *col_names;
    const sf_col_stats *stats;  // ncols entries
    const char *series_column;  // "" when the CSV had none
    uint64_t nrows;
    uint32_t chunk_rows;  // every chunk but the last holds this many rows
    uint64_t nchunks;
    uint64_t nseries;
    const sf_series *series;
    uint32_t filter;
    int32_t level;
    uint64_t file_size;
    uint64_t data_offset;     // first chunk
    uint64_t trailer_offset;  // end of the chunk area
    // The file's content and layout in 64 bits: the trailer's checksum
    // (over every chunk's CRC, the statistics and the series table) and the
    // header's. Another file, or the same CSV packed again with other
    // chunks, has another; a resume compares them.
    uint64_t fingerprint;
    // Version 2: the time axis and where rows came from.
    const char *time_column;      // "" when the file has none
    enum sf_time_kind time_kind;  // SF_TIME_NONE when none
    unsigned time_parts;          // ISO: the union of the SF_TIME_* parts the values showed
    int64_t time_step;            // the most common step between rows of a series among the first 10000 (0: none)
    uint64_t time_gaps;           // steps between rows of a series larger than time_step
    const int64_t *series_times;  // first and last time of series i at [2i], [2i + 1]; NULL without a time column
    bool has_lines;               // each row keeps its line in the CSV it was packed from
    uint32_t ncategories;         // categorical columns, in column order
    const sf_category *categories;
    // Per column, how many of its values pack imputed (--missing ffill);
    // NULL when the file records none (it was packed without ffill, or is
    // older): every value was observed.
    const uint64_t *imputed;
    // The files the rows came from (packed from several inputs: docs/FORMAT.md
    // "Sources"), as given, in the order read; 0 and NULL for a file packed
    // from one CSV, whose lines are plain line numbers.
    uint32_t nsources;
    const char *const *sources;
} sf_pack_info;

// A row's origin: with sources, a row's line value (an int64 of the lines
// column) holds the source's index in bits 40-62 and its line in that
// source in bits 0-39; without, the line alone.
#define SF_ORIGIN_LINE_BITS 40
#define SF_MAX_SOURCES (1u << 23)                          // sources a file may list
#define SF_MAX_SOURCE_LINE ((1ull << SF_ORIGIN_LINE_BITS) - 1)  // the last line a source may have
static inline int64_t sf_origin_make(uint32_t source, uint64_t line) {
    return (int64_t)((uint64_t)source << SF_ORIGIN_LINE_BITS | line);
}
// Splits a line value of a file with sources into the source's index and
// its line there. A file without sources: source 0 and the value as it is.
static inline void sf_origin_split(const sf_pack_info *in, int64_t origin, uint32_t *source, uint64_t *line) {
    bool split = in->nsources > 0;
    *source = split ? (uint32_t)((uint64_t)origin >> SF_ORIGIN_LINE_BITS) : 0;
    *line = split ? (uint64_t)origin & SF_MAX_SOURCE_LINE : (uint64_t)origin;
}

// Column c's category, or NULL when c holds numbers.
const sf_category *sf_pack_category(const sf_pack_info *in, uint32_t c);

// ---- reading ----

typedef struct sf_pack sf_pack;
typedef struct sf_pack_dctx sf_pack_dctx;

// Opens and validates header, trailer and footer (not the chunks: see
// sf_pack_verify).
int sf_pack_open(sf_pack **out, const char *path, sf_err *e);
// Same on an open descriptor, which the reader dups (the caller keeps fd);
// name is used in messages.
int sf_pack_open_fd(sf_pack **out, int fd, const char *name, sf_err *e);
void sf_pack_close(sf_pack *p);

// The reader's own: valid until sf_pack_close.
const sf_pack_info *sf_pack_get_info(const sf_pack *p);
const char *sf_pack_name(const sf_pack *p);
// The open file (the reader's descriptor: do not close it), for readers of
// the same file that need their own (O_DIRECT).
int sf_pack_fd(const sf_pack *p);

// Chunk i's place in the file, in O(1). i < nchunks.
sf_chunk sf_pack_chunk_locate(const sf_pack *p, uint64_t i);
// Where the padding after chunk i ends: the next chunk's offset, or for the
// last chunk the end of its 4096-byte block. Reading [offset, span end)
// keeps consecutive reads contiguous, which storage prefers to skipping the
// few padding bytes.
uint64_t sf_pack_chunk_span_end(const sf_pack *p, uint64_t i);
// Largest stored_size of any chunk: the size of a read buffer that fits all.
size_t sf_pack_max_stored_size(const sf_pack *p);
// Bytes of decoded float32 values of chunk i: rows * ncols * 4.
size_t sf_pack_chunk_raw_size(const sf_pack *p, uint64_t i);

// Reads chunk i's stored bytes into buf (at least stored_size bytes) with pread.
int sf_pack_chunk_read(const sf_pack *p, uint64_t i, void *buf, sf_err *e);

sf_pack_dctx *sf_pack_dctx_create(void);
void sf_pack_dctx_free(sf_pack_dctx *d);

// Checks the CRC of the stored bytes of chunk i, decompresses and unfilters
// them into out, column-major: out[c * rows + r] is row first_row + r of
// column c. out holds sf_pack_chunk_raw_size(p, i) bytes.
int sf_pack_chunk_decode(sf_pack_dctx *d, const sf_pack *p, uint64_t i, const void *stored, float *out,
                         sf_err *e);
// The same, and the rows' times and CSV lines (rows values each) into time
// and line; any of out, time and line may be NULL (not wanted). time and
// line must be NULL when the file has no time column or no lines.
int sf_pack_chunk_decode_all(sf_pack_dctx *d, const sf_pack *p, uint64_t i, const void *stored, float *out,
                             int64_t *time, int64_t *line, sf_err *e);
// The same, and which values pack imputed into imputed (rows * ncols bytes,
// column-major like out: 1 imputed, 0 observed; all 0 when the file records
// none). Any output may be NULL.
int sf_pack_chunk_decode_imputed(sf_pack_dctx *d, const sf_pack *p, uint64_t i, const void *stored, float *out,
                                 int64_t *time, int64_t *line, uint8_t *imputed, sf_err *e);
// The largest step between consecutive rows of one series that ends in
// chunk i (from the row before it, in chunk i - 1, too); 0 without a time
// column. A window that must not span a gap needs to look only where this
// is larger than the gap.
int64_t sf_pack_chunk_max_step(const sf_pack *p, uint64_t i);

// The file's series cut wherever consecutive rows of one are more than
// max_step apart (in the file's time unit): each gap starts a new segment,
// named as its series. Decodes only the chunks whose largest step exceeds
// max_step. Returns 0 with *out (malloc'd, the caller frees it; names
// borrowed from the file) and *n segments, *n - nseries of them cut at a
// gap; without a time column, the series as they are.
int sf_pack_segments(const sf_pack *p, int64_t max_step, sf_series **out, uint64_t *n, sf_err *e);

// The statistics of every column (out: ncols of them) over the rows of
// ranges (n of them, as series: first_row and rows; ascending, apart), as
// the file's own are computed, decoding only the chunks that hold them: a
// training part's statistics, say. Rows of no range count nowhere.
int sf_pack_stats_of_rows(const sf_pack *p, const sf_series *ranges, uint64_t n, sf_col_stats *out, sf_err *e);
// The same per group: range k's rows count in group[k]'s statistics, out
// ngroups x ncols of them (group g's column c at [g * ncols + c]); a group
// of no rows has zeros (as sf_col_stats of no values).
int sf_pack_stats_of_groups(const sf_pack *p, const sf_series *ranges, const uint64_t *group, uint64_t n,
                            uint64_t ngroups, sf_col_stats *out, sf_err *e);

// Decodes every chunk, checks every checksum, size and offset, and recomputes
// the column statistics; reports the first problem. progress (may be NULL) is
// called after each chunk.
int sf_pack_verify(const sf_pack *p, void (*progress)(void *arg, uint64_t chunk), void *arg, sf_err *e);

// ---- writing ----

typedef struct {
    uint32_t ncols;
    const char *const *col_names;
    const char *series_column;  // NULL or "" when rows form one series
    uint32_t chunk_rows;        // 0: SF_PACK_DEFAULT_CHUNK_BYTES worth of rows
    int level;                  // zstd level
    enum sf_filter filter;
    int threads;                // compression threads, 0 or 1: compress inline
    const char *time_column;    // NULL: none; else every row has a time, non-decreasing in its series
    enum sf_time_kind time_kind;
    bool lines;                 // every row has its line in the CSV it comes from
    const uint32_t *categorical; // columns whose values are category codes (ascending), ncategorical of them
    uint32_t ncategorical;
    bool imputed;               // the file records which values were imputed (sf_pack_writer_rows_imputed)
    // The files the rows came from, borrowed until finish (lines are then
    // origins: sf_origin_make); nsources 0: none. Needs lines.
    const char *const *sources;
    uint32_t nsources;
} sf_pack_writer_opts;

typedef struct sf_pack_writer sf_pack_writer;

// Creates a temporary file next to path; path itself appears only when
// sf_pack_writer_finish succeeds.
int sf_pack_writer_open(sf_pack_writer **out, const char *path, const sf_pack_writer_opts *o, sf_err *e);
// The temporary file's name, for a signal handler that must unlink it.
const char *sf_pack_writer_temp_path(const sf_pack_writer *w);
// With on, each chunk is compressed by the thread that fills it, as without
// compression threads, until called again with off: for a caller whose other
// threads keep every core busy, where handing each chunk to a worker costs
// a core's caches and wake-ups and gains nothing. Without the memory for it,
// and for a writer opened without threads, nothing changes.
void sf_pack_writer_inline(sf_pack_writer *w, bool on);
// Starts a new series at the next row. Series without rows are not stored.
int sf_pack_writer_series(sf_pack_writer *w, const char *name, size_t len, sf_err *e);
// Appends n rows, row-major (rows[r * ncols + c]). Values must be finite.
int sf_pack_writer_rows(sf_pack_writer *w, const float *rows, size_t n, sf_err *e);
// The same with each row's time and CSV line (n each): required when the
// writer was opened with a time column or lines, else NULL. A time before
// the previous row's in the same series is SF_EINVAL.
int sf_pack_writer_rows_at(sf_pack_writer *w, const float *rows, const int64_t *time, const int64_t *line, size_t n,
                           sf_err *e);
// The same with which values were imputed rather than observed (n * ncols
// bytes, row-major like rows: nonzero imputed; NULL: none): the writer must
// have been opened with o->imputed. Rows given without them count as observed.
int sf_pack_writer_rows_imputed(sf_pack_writer *w, const float *rows, const int64_t *time, const int64_t *line,
                                const uint8_t *imputed, size_t n, sf_err *e);
// ISO-8601 parts (SF_TIME_*) the times showed, joined into what the file
// records, so that they are written back alike.
void sf_pack_writer_time_parts(sf_pack_writer *w, unsigned parts);
// The texts of categorical column k's codes (k indexes o->categorical),
// copied; every categorical column needs them before finish.
int sf_pack_writer_category(sf_pack_writer *w, uint32_t k, const char *const *values, uint32_t n, sf_err *e);
uint64_t sf_pack_writer_nrows(const sf_pack_writer *w);
uint64_t sf_pack_writer_bytes(const sf_pack_writer *w);  // written so far
// Writes the trailer and footer, fsyncs, renames onto path and frees w.
// On failure the temporary file is removed and w is freed.
int sf_pack_writer_finish(sf_pack_writer *w, sf_err *e);
// Removes the temporary file and frees w.
void sf_pack_writer_abort(sf_pack_writer *w);
// The temporary file's descriptor and where its first chunk goes (the
// header's end, aligned), for a caller that copies chunks into it.
int sf_pack_writer_fd(const sf_pack_writer *w);
uint64_t sf_pack_writer_data_offset(const sf_pack_writer *w);
// The next chunk's stored bytes (stored_size of them, CRC-32C crc) are
// already in the temporary file at offset, copied there by the caller from
// a file of the same layout (pack --append-to): its rows, given next as any
// rows (exactly chunk_rows of them), count for the statistics, the series
// and the times, but the chunk is neither compressed nor written. Call it
// where a chunk starts; offset must be where the writer puts that chunk.
int sf_pack_writer_place(sf_pack_writer *w, uint64_t offset, uint32_t stored_size, uint32_t crc, sf_err *e);

// ---- CSV to .sfpack ----

enum sf_missing { SF_MISSING_ERROR, SF_MISSING_DROP, SF_MISSING_FFILL };

typedef struct {
    const char *columns;        // comma-separated names to keep, in order; NULL: all
    const char *drop_columns;   // comma-separated names to leave out; NULL: none
    // NULL: the file is one series, unless the rows of the first buffer
    // show a column of numeric series ids (refused where the time goes back
    // there, else a note); "": one series on purpose, not looked at.
    const char *series_column;
    // The time column: NULL finds it (the first kept column whose first
    // value is an ISO-8601 date or time and not a number), "" means none,
    // else its name. time_unit: SF_TIME_ISO (ISO-8601 texts) or an epoch
    // unit (integers); SF_TIME_NONE: ISO.
    const char *time_column;
    enum sf_time_kind time_unit;
    const char *categorical;    // names of text columns to store as categories (one-hot inputs in train); NULL: none
    char delimiter;             // 0: detect from the header (',', ';', '\t'); see sf_csv_delimiter_ok
    enum sf_missing missing;
    sf_pack_writer_opts pack;   // ncols/col_names/series_column are filled in; threads > 1
                                // also parses with a second thread where it can
    // Called now and then with rows and CSV bytes done (may be NULL).
    // Nonzero stops the pack: SF_EINVAL, no output.
    int (*progress)(void *arg, uint64_t rows, uint64_t bytes);
    void *progress_arg;
    // Receives (with progress_arg) the temporary output path once it exists,
    // so that a signal handler can remove it (may be NULL).
    void (*temp_path)(void *arg, const char *path);
    // Receives (with progress_arg) each thing about the packed data the
    // user should know, once the file is written: "warning: ..." (values
    // changed: integers float32 cannot hold, series that look mixed) or
    // "note: ..." (may be NULL); a column that looks like series ids is
    // said before packing.
    void (*note)(void *arg, const char *text);
    // sf_csv_pack_files: each file is its own series, named after the file
    // without its directory and extension (excludes series_column).
    bool series_per_file;
    // Bytes for the rows of series that interleave (a series whose rows
    // come back after another's started): they are held, sorted by series
    // and spilled as runs to temporary files beside out, then merged, each
    // series' rows in file order and the series in order of first
    // appearance. 0: 64 MB. Below sf_regroup_min_budget (pack/internal.h,
    // 0.25 MB for all but very wide rows): SF_EUSAGE.
    uint64_t memory_budget;
    // Receives (with progress_arg) the CSV's column names once the header
    // is read, before any row; a nonzero return (with e filled) stops the
    // pack (may be NULL). pack --append-to compares them with the file's.
    int (*header)(void *arg, const char *const *names, uint32_t n, sf_err *e);
    // --missing ffill where the rows continue a file (pack --append-to):
    // receives (with progress_arg) a series' id (key[0..len), "" without a
    // series column) when its first row misses a value, and writes the
    // series' last row in that file into row (the packed columns; NaN where
    // it cannot say): returns 1, 0 when the file has no such series, or a
    // negative code with e filled (may be NULL).
    int (*series_last)(void *arg, const char *key, size_t len, float *row, sf_err *e);
} sf_csv_pack_opts;

typedef struct {
    uint64_t rows, rows_dropped, values_filled, csv_bytes, out_bytes;
    uint64_t nseries;
    // Series whose rows interleave were regrouped (sf_csv_pack_opts.memory_budget):
    // in memory, or through runs spilled to temporary files, merged in
    // passes over them (bytes: what was written, every pass counted).
    bool regrouped;
    uint64_t runs, passes, spilled_bytes;
    // sf_csv_append: the file's rows and series before, the series the CSV
    // added to and the new ones, the leading chunks kept without
    // recompressing and how their bytes were copied, the bytes written.
    uint64_t append_rows_before, append_series_before, append_series_extended, append_series_added;
    uint64_t append_chunks_kept, append_chunks, append_bytes_kept;
    const char *append_copy;  // "reflink (FICLONERANGE)", "copy_file_range", "read and write", "none"
    // Records a second thread parsed (pack.threads > 1), of them those the
    // main thread had to parse again (a missing value, text, spaces), and
    // those it committed in runs of one series (not one by one).
    uint64_t rows_helper, rows_helper_raw, rows_helper_runs;
} sf_csv_pack_stats;

// Whether d can separate fields: not a character of a number, a space, a
// quote or a line break.
bool sf_csv_delimiter_ok(char d);

// Converts the CSV file at in (a path, "-" for stdin) into an .sfpack at out.
// Errors name in:line:column and what was expected.
int sf_csv_pack(const char *in, const char *out, const sf_csv_pack_opts *o, sf_csv_pack_stats *st, sf_err *e);

// Same from several CSV files read one after the other as one table (the
// order given): every file has the same header (names, order, delimiter);
// rows keep their origin (source index and line, sf_origin_split) and the
// file lists the paths as given ("-": stdin, only alone). Errors name the
// file and its line. pack/sources.c.
int sf_csv_pack_files(const char *const *paths, size_t n, const char *out, const sf_csv_pack_opts *o,
                      sf_csv_pack_stats *st, sf_err *e);

// The CSV files that args (n of them, as a user gives inputs) name, in
// order: a file as it is, a directory's *.csv files and a glob(3)
// pattern's matches (when no file has that name), each sorted by name in
// byte order. *paths (malloc'd, and each path) is the caller's to free
// with sf_csv_inputs_free. SF_EUSAGE names an empty directory, a pattern
// that matches nothing, "-" among others, or a path that cannot be read.
int sf_csv_inputs(const char *const *args, size_t n, char ***paths, size_t *npaths, sf_err *e);
void sf_csv_inputs_free(char **paths, size_t n);

// How this CPU parses CSV records of numbers, as a phrase into out (n
// bytes, borrowed): 8 at a time in AVX-512 or AVX2, or field by field.
void sf_csv_describe(char *out, size_t n);

// Same, from a memory buffer (for tests and fuzzing); name is used in messages.
int sf_csv_pack_mem(const void *data, size_t n, const char *name, const char *out, const sf_csv_pack_opts *o,
                    sf_csv_pack_stats *st, sf_err *e);

// Adds the rows of the CSV at in (a path, "-" for stdin) to the .sfpack at
// path: rows of a series the file has go after its last row (their times
// must not go back from its last time), other series after the file's last
// one. The file decides the layout: its columns (the CSV's, less its series
// and time columns and less o->drop_columns, or o->columns, must be the
// file's, in order), series and time column, time unit, categorical columns
// (values the file lacks get the next codes), chunk rows, filter and level;
// o's settings of those are ignored (the CLI refuses conflicting ones). The
// CSV's own settings (delimiter, missing, threads) are o's. The new file
// is written beside path and renamed over it: path stays the old file,
// whole, until the new one is complete. Chunks before the first one that
// changes are kept as they are stored (reflinked or copied, not
// recompressed); from there on the rows are decoded and packed again,
// chunk at a time. Statistics, steps and chunks are exactly those of a pack
// of the rows in their new order. Refuses in when it is path.
int sf_csv_append(const char *in, const char *path, const sf_csv_pack_opts *o, sf_csv_pack_stats *st, sf_err *e);

// Parses one decimal number field exactly as strtof rounds it. s[0..n) holds
// the field without surrounding spaces. Returns 0 and sets *out; SF_EFORMAT
// when the text is not a plain decimal (digits, optional sign, point,
// exponent); SF_ERANGE when it rounds beyond the float32 range.
int sf_parse_float(const char *s, size_t n, float *out);

// ---- Arrow C stream to .sfpack (arrow.c) ----

// What `seqfeed pack` does for a CSV, for anything that exports an
// ArrowArrayStream (pyarrow tables and datasets, Polars, DuckDB, pandas
// through pyarrow), one record batch at a time, with the same options, rules
// and messages.
typedef struct {
    const char *name;           // the source in messages ("data/", "the Arrow stream"); NULL: "the Arrow stream"
    const char *columns;        // as sf_csv_pack_opts: names to keep, in order; NULL: all
    const char *drop_columns;   // names to leave out; NULL: none
    const char *series_column;  // a string, dictionary or integer column; NULL: one series
    // NULL finds it (the first kept timestamp or date column), "" means
    // none, else its name (a timestamp or date column).
    const char *time_column;
    const char *categorical;    // string, dictionary or integer columns stored as category codes
    enum sf_missing missing;    // nulls (and NaN, infinities): an error, the row dropped, or filled forward
    sf_pack_writer_opts pack;   // ncols, col_names, series, time, lines and categories are filled in
    void (*temp_path)(void *arg, const char *path);  // as sf_csv_pack_opts (may be NULL)
    void (*note)(void *arg, const char *text);       // as sf_csv_pack_opts (may be NULL)
    void *arg;
    // Bytes for the rows of series that interleave, as sf_csv_pack_opts's:
    // each series' rows in stream order, the series in order of first
    // appearance. 0: 64 MB.
    uint64_t memory_budget;
    // The files the stream's rows come from (a Parquet directory's), in
    // the order read: the first source_rows[0] rows are sources[0]'s, the
    // next source_rows[1] sources[1]'s, and so on (a file may have none);
    // the stream must hold exactly their sum. Each row then keeps its origin,
    // sf_origin_make(its file, its row there counted from 1), and the packed
    // file lists the names (docs/FORMAT.md, "Sources"); errors name the file
    // and its row. nsources 0: rows keep their index in the stream.
    const char *const *sources;
    const uint64_t *source_rows;
    uint32_t nsources;
    // Each source its own series, named after its file without directory
    // and extension, as sf_csv_pack_opts's (needs sources; excludes
    // series_column).
    bool series_per_file;
    // Called after each record batch (with arg) with the rows read and the
    // sources' rows in all (0 without sources); may be NULL. Nonzero stops
    // the pack: SF_EINVAL, no output.
    int (*progress)(void *arg, uint64_t rows, uint64_t total);
} sf_arrow_pack_opts;

typedef struct {
    uint64_t rows, rows_dropped, values_filled, nseries, batches, out_bytes;
    bool regrouped;  // as sf_csv_pack_stats
    uint64_t runs, passes, spilled_bytes;
} sf_arrow_pack_stats;

// Packs the stream's rows into out. The stream is consumed: moved out of
// *stream (its release set to NULL, so that the caller's copy is released
// already, as the Arrow PyCapsule protocol expects), and released, with the
// schema and every batch, whatever the outcome. Each row keeps its index in
// the stream, 1-based (all rows counted, dropped ones too), as the line a
// CSV row keeps, or with sources its file and its row there: predict
// --with-actual writes it. series_column NULL: one series, unless the first
// batch shows a column of integer series ids (series_hint.c: refused where
// the time goes back there, else a note); "": one series on purpose, not
// looked at. Errors name the source,
// the row and the column; a malformed stream (a format string, a child count
// or a buffer that does not match its schema) is SF_EFORMAT saying what.
int sf_arrow_pack(struct ArrowArrayStream *stream, const char *out, const sf_arrow_pack_opts *o,
                  sf_arrow_pack_stats *st, sf_err *e);

// ---- time ----

// What an ISO-8601 time showed, so that it is written back the same way.
enum {
    SF_TIME_CLOCK = 1,       // a time of day (else a date alone)
    SF_TIME_SECONDS = 2,     // with seconds
    SF_TIME_ZONE = 4,        // with Z or an offset (written back as Z: the same instant in UTC)
    SF_TIME_FRACTION_SHIFT = 3,  // bits 3-5: digits of the seconds' fraction, 0 to 6
    SF_TIME_NAIVE = 1 << 6,      // a time of day without a zone; joined, never stored: beside SF_TIME_ZONE, a mix
    SF_TIME_TRUNCATED = 1 << 8,  // sf_time_parse only, never stored: digits below a microsecond were dropped
};
// Parses s[0..n): YYYY-MM-DD (or YYYY/MM/DD, as many exports write dates,
// or ISO-8601's basic YYYYMMDD), then optionally T (or t) or a space and HH:MM, :SS
// and a fraction (. or ,; digits below a microsecond are dropped, as
// Python's datetime.fromisoformat drops them, and SF_TIME_TRUNCATED says
// so), then optionally Z (or z), +HH:MM, +HHMM or +HH (or -). Returns 0 with *us,
// microseconds since 1970-01-01T00:00Z (negative before), and *parts (the
// flags above); SF_EFORMAT when s is not such a time, SF_ERANGE when a
// field is out of its range (2019-02-29, 24:00, a leap second 23:59:60).
int sf_time_parse(const char *s, size_t n, int64_t *us, unsigned *parts);
// What is wrong with s[0..n) as a time, for a message ("day 30: February
// 2016 has 29 days"); "a time" when nothing is.
void sf_time_why(const char *s, size_t n, char *why, size_t cap);
// A time of in's time column as the CSV had it: ISO-8601 in the file's
// style, or the integer epoch. Returns the length, as snprintf.
int sf_pack_time_text(const sf_pack_info *in, int64_t t, char *buf, size_t cap);
// Seconds per unit of in's times (1e-6 for ISO-8601: microseconds).
double sf_pack_time_unit(const sf_pack_info *in);
// A duration of `seconds` (>= 0) in whole units of in's times, rounded
// down; INT64_MAX when it is longer than int64 counts.
int64_t sf_pack_time_count(const sf_pack_info *in, double seconds);
// A duration of `seconds` for people: "1d", "6h", "15min", "30s", "250ms".
int sf_duration_text(double seconds, char *buf, size_t cap);
// Parses "90s", "15min", "2h", "3d", "1w", "250ms" (a number and a unit)
// into seconds; SF_EFORMAT when it is not such a duration or not above 0.
int sf_duration_parse(const char *s, double *seconds);
// Calendar features of a time, for models to learn daily, weekly and
// yearly cycles: the phase of the time in its day, its week (from Monday)
// or its year (a leap year has 366 days), in [0, 1), in UTC (times without
// a zone count as UTC, so their clock is kept). us is microseconds since
// 1970-01-01T00:00Z.
enum sf_time_feature { SF_TIME_HOUR, SF_TIME_WEEKDAY, SF_TIME_YEARDAY, SF_TIME_FEATURE_COUNT };
double sf_time_phase(int64_t us, enum sf_time_feature f);
const char *sf_time_feature_name(enum sf_time_feature f);  // "hour", "weekday", "yearday"
// Parts a and b showed between them: their flags, the more fraction digits.
unsigned sf_time_parts_join(unsigned a, unsigned b);
// Writes us as ISO-8601 into buf (cap bytes; 40 hold any) in the style of
// parts (a date alone when it has no clock and us is a whole day; more
// fraction digits when us needs them); returns the length, as snprintf.
int sf_time_format(char *buf, size_t cap, int64_t us, unsigned parts);

// Writes the shortest decimal that strtof reads back to the same float into
// buf (24 bytes), plain digits for integers below 10^9. Returns the length.
int sf_format_float(char *buf, float v);

#endif
