// Private to pack/: whether a kept integer column of the rows pack is about
// to take for one series is the id of several (series_hint.c). pack/csv.c
// reads the rows of its first buffer into this and says what it finds
// before anything is written.
#ifndef SF_SERIES_HINT_H
#define SF_SERIES_HINT_H

#include <stdint.h>

typedef struct {
    uint64_t nrows;
    uint32_t ncols;
    const int64_t *const *ints;  // ints[k][r]: column k's value in row r; NULL when one is not an integer
    const int64_t *time;         // each row's time; NULL without a time column
} sf_hint_rows;

enum sf_hint_kind {
    SF_HINT_NONE,
    SF_HINT_TIME_BACK,  // the time goes back where the id changes, and nowhere else: strong
    SF_HINT_COUNTER,    // no time column; another column rises within each id's run and restarts where it changes
};

typedef struct {
    enum sf_hint_kind kind;
    uint32_t id;       // the column that looks like series ids
    uint32_t counter;  // SF_HINT_COUNTER: the column that restarts
    uint32_t nvalues;  // its distinct values in the rows, each in one run
    uint64_t row;      // the first row of a run where the evidence shows (the row before it ends the last run)
} sf_hint;

// Looks for a column of 2 to SF_HINT_MAX_IDS distinct integers, each in one
// run of at least SF_HINT_MIN_RUN rows (the last run may be shorter: the
// rows may end inside it), with the evidence above; the one with the most
// runs, the first such column on a tie. Returns the kind found (also in
// out->kind).
#define SF_HINT_MAX_IDS 1024u
#define SF_HINT_MIN_RUN 3u
enum sf_hint_kind sf_series_hint(const sf_hint_rows *r, sf_hint *out);

#endif
