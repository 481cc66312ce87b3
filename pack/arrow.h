// Arrow C stream to .sfpack (pack/arrow.c): what `seqfeed pack` does for a
// CSV, for anything that exports an ArrowArrayStream (pyarrow tables and
// datasets, Polars, DuckDB, pandas through pyarrow), one record batch at a
// time, with the same options, rules and messages.
#ifndef SF_PACK_ARROW_H
#define SF_PACK_ARROW_H

#include <stdint.h>

#include "pack/arrow_abi.h"
#include "pack/pack.h"

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
} sf_arrow_pack_opts;

typedef struct {
    uint64_t rows, rows_dropped, values_filled, nseries, batches, out_bytes;
} sf_arrow_pack_stats;

// Packs the stream's rows into out. The stream is consumed: moved out of
// *stream (its release set to NULL, so that the caller's copy is released
// already, as the Arrow PyCapsule protocol expects), and released, with the
// schema and every batch, whatever the outcome. Each row keeps its index in
// the stream, 1-based (all rows counted, dropped ones too), as the line a
// CSV row keeps: predict --with-actual writes it. Errors name the source,
// the row and the column; a malformed stream (a format string, a child count
// or a buffer that does not match its schema) is SF_EFORMAT saying what.
int sf_arrow_pack(struct ArrowArrayStream *stream, const char *out, const sf_arrow_pack_opts *o,
                  sf_arrow_pack_stats *st, sf_err *e);

#endif
