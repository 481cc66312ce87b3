// Private to pack/: the byte layout of an .sfpack file and the filters.
#ifndef SF_PACK_INTERNAL_H
#define SF_PACK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pack.h"

#define SF_MAGIC_HEADER "SFPACK\x1a\n"
#define SF_MAGIC_TRAILER "SFTRAIL\n"
#define SF_MAGIC_FOOTER "SFPKEND\n"
#define SF_HEADER_FIXED 40u   // magic .. reserved, before the column names
#define SF_FLAG_TIME 1u       // version 2: a time column (its name and kind after the series column name)
#define SF_FLAG_LINES 2u      // version 2: every row keeps its CSV line
#define SF_FLAG_CATEGORIES 4u // version 2: categorical columns (their list after the time column; values in the trailer)
#define SF_FLAG_IMPUTED 8u    // version 2: a bitmap of the values pack imputed ends each chunk; counts in the trailer
#define SF_FLAG_SOURCES 16u   // version 2: lines are origins (source, line); the sources' names end the trailer
#define SF_FOOTER_SIZE 32u
#define SF_TRAILER_FIXED 32u  // magic, nrows, nchunks, nseries
#define SF_STATS_SIZE 32u     // min, max, mean, std as float64
#define SF_INDEX_ENTRY 16u    // offset u64, stored size u32, crc u32
#define SF_SERIES_ENTRY 16u   // first row u64, rows u64
#define SF_TIME_FIXED 24u     // version 2 trailer with a time column: step i64, gaps u64, parts u32, 0 u32
#define SF_MAX_HEADER (16u << 20)
#define SF_MAX_CHUNK_RAW (256u << 20)

// b - a, clamped to int64: two times of a file may be any int64s, whose
// difference need not be one.
static inline int64_t sf_time_diff(int64_t a, int64_t b) {
    int64_t d;
    return __builtin_sub_overflow(b, a, &d) ? (b > a ? INT64_MAX : INT64_MIN) : d;
}

static inline uint64_t sf_align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Bytes a chunk of `rows` rows decodes to: the floats, naux int64 columns
// and, when the file records imputed values, one bit per value.
static inline uint64_t sf_chunk_raw_bytes(uint64_t rows, uint32_t ncols, uint32_t naux, bool imputed) {
    return rows * ((uint64_t)ncols * 4 + (uint64_t)naux * 8) + (imputed ? (rows * ncols + 7) / 8 : 0);
}

// Where an unquoted field starting at p ends: the first delimiter d or
// '\n' in [p, end), else end (scan.c). Reads no byte at or past end.
typedef const char *(*sf_field_end_fn)(const char *p, const char *end, char d);
enum sf_scan_kind { SF_SCAN_BEST, SF_SCAN_AVX512, SF_SCAN_AVX2, SF_SCAN_SWAR };
// The variant for kind (BEST: the widest this CPU runs); NULL when the CPU
// or the build lacks it (tests compare the variants).
sf_field_end_fn sf_field_end_pick(enum sf_scan_kind kind);

// sf_time_parse with the last date it read (its first 10 bytes and day)
// kept in memo, zeroed at first: one per thread that parses a column.
typedef struct {
    uint64_t head;  // bytes 0-7 of the date, as loaded
    uint16_t tail;  // bytes 8-9
    int64_t day;    // days since 1970-01-01
    bool valid;     // head, tail and day hold a date
    // The last time read when it was YYYY-MM-DD, T or a space, HH:MM:SS and
    // perhaps Z (sf_time_same_day): its length (19 or 20; 0: another
    // layout, or none), bytes 8-10 (the day and the separator), parts and
    // the date's first microsecond, all from that one text.
    uint8_t len, parts;
    uint32_t sep;
    int64_t day_us;
} sf_time_memo;
int sf_time_parse_memo(sf_time_memo *memo, const char *s, size_t n, int64_t *us, unsigned *parts);

// The time at s, when it is laid out as the memo's last one, on the same
// date, and ends there: the byte behind it, before end, is d or a line
// feed. Returns its length, with *us and the memo's parts, as
// sf_time_parse_memo gives them; 0 for anything else (sf_time_parse_memo
// decides then). Packing parses a time a row, and rows of a series mostly
// go on within a day: only the clock's 8 bytes are read, without a call or
// a scan for the field's end. d must be none of the layout's bytes (a
// digit, '-', '/', 'T', ' ', ':', 'Z'), so that the field ends where a
// scan for d would end it.
static inline size_t sf_time_same_day(const sf_time_memo *m, const char *s, const char *end, char d, int64_t *us) {
    size_t n = m->len;
    if (!n || end - s <= (ptrdiff_t)n) return 0;
    uint64_t head, clock;
    uint32_t sep;
    memcpy(&head, s, 8), memcpy(&sep, s + 8, 4), memcpy(&clock, s + 11, 8);
    if (head != m->head || (sep & 0xffffff) != m->sep || (n == 20 && s[19] != 'Z') || (s[n] != d && s[n] != '\n'))
        return 0;
    // HH:MM:SS: digits (0-9 once xor-ed with '0') where the mask has 0xff,
    // exactly ':' elsewhere; then byte i of p holds 10 * digit i + digit i + 1.
    const uint64_t digits = 0xffff00ffff00ffffull;
    uint64_t t = clock ^ 0x30303a30303a3030ull;
    uint64_t above9 = (((t & 0x7f7f7f7f7f7f7f7full) + 0x7676767676767676ull) | t) & 0x8080808080808080ull;
    if ((above9 & digits) | (t & ~digits)) return 0;
    uint64_t p = t * 10 + (t >> 8);
    unsigned h = (unsigned)(p & 0xff), mi = (unsigned)(p >> 24 & 0xff), sec = (unsigned)(p >> 48 & 0xff);
    if (h > 23 || mi > 59 || sec > 59) return 0;
    *us = m->day_us + (int64_t)(h * 3600 + mi * 60 + sec) * 1000000;
    return n;
}

// Whole records whose fields are numbers kept in order, fields skipped, at
// most one time (ISO 8601) and at most one series id, from [p, end) into
// rows (row-major, ncols a row) and times, up to max_rows (scan.c). Returns
// how many it parsed; *next: where the first record it left begins, for the
// general path: one with a quote, a number that is not a plain one (a
// missing value, text, spaces), a value of 2^24 or more (which the general
// path counts), a time it would not take as it is or that does not move
// on, a series id other than key (unless any_key), a ragged or blank line,
// or one that ends within 64 bytes of end. Values are strtof's and times
// sf_time_parse_memo's, bit for bit. Reads up to 8 bytes past end: the
// caller's padding.
enum sf_field_kind { SF_FIELD_NUMBER, SF_FIELD_SKIP, SF_FIELD_TIME, SF_FIELD_SERIES };
typedef struct {
    const uint8_t *kind;      // enum sf_field_kind of each field (borrowed)
    uint32_t nfields, ncols;  // fields a record; numbers a record
    char delim;
    // With a time field: its parser's memo (borrowed), whether
    // sf_time_same_day applies (the delimiter is none of its bytes), the
    // time of the record before (have_last: there is one), the parts of
    // the times joined so far; all carried from run to run.
    sf_time_memo *memo;
    bool time_same_day;
    bool have_last;
    int64_t last_time;
    unsigned parts;
    // With a series field: the id of the series the rows go on (borrowed);
    // or, with any_key, records of any series, their times not compared
    // with the record's before (rows held to be regrouped, whose order is
    // checked series by series as they are merged): the caller looks each
    // record's id up and checks the times.
    const char *key;
    size_t key_len;
    bool any_key;
} sf_number_rows_layout;
typedef struct {
    float *rows;      // max_rows * ncols
    int64_t *times;   // max_rows, with a time field
    uint8_t *parts;   // max_rows, or NULL: layout.parts after each record
    uint32_t *ends;   // max_rows, or NULL: each record's end + 1, from p
    uint32_t *keys;   // max_rows, or NULL: where each record's series id begins, from p
    uint16_t *key_lens;     // max_rows, or NULL: each record's series id's bytes (below 2^16)
    uint32_t *time_starts;  // max_rows, or NULL: where each record's time begins, from p
} sf_number_rows_out;
typedef size_t (*sf_number_rows_fn)(sf_number_rows_layout *l, const char *p, const char *end, size_t max_rows,
                                    const sf_number_rows_out *out, const char **next);
// The variant of that kind this CPU runs (SF_SCAN_BEST: AVX-512, else
// AVX2); NULL without one (SF_SCAN_SWAR: always), or with
// SEQFEED_TEST_SCALAR_PARSE set.
sf_number_rows_fn sf_number_rows_pick(enum sf_scan_kind kind);

// strtof on s[0, n): 0, -1 (not a number) or -2 (out of range).
int sf_parse_float_slow(const char *s, size_t n, float *out);

#define SF_P10_MIN (-80)
#define SF_P10_MAX 60
extern const double sf_p10[];  // 10^SF_P10_MIN .. 10^SF_P10_MAX, correctly rounded

// m * 10^e10 (m has `digits` significant digits; the text s[0, n) serves the
// rare fallback to strtof) rounded to float exactly as strtof does. 0, or
// SF_ERANGE when out of float32 range. Inline: it runs once per CSV value.
static inline int sf_decimal_to_float(uint64_t m, long e10, int digits, bool neg, const char *s, size_t n,
                                      float *out) {
    if (m == 0) {
        *out = neg ? -0.0f : 0.0f;
        return 0;
    }
    if (e10 + digits > 40) return SF_ERANGE;  // at least 10^39 > FLT_MAX
    if (e10 + digits < -46) {          // below half the smallest subnormal
        *out = neg ? -0.0f : 0.0f;
        return 0;
    }
    // With at most 19 digits the two checks above keep e10 in [-65, 39],
    // inside the table.
    // m (rounded to double unless below 2^53) times 10^e10 (rounded): three
    // roundings and the digits beyond the 19th keep the relative error below
    // 2^-51, a few double ulps; a 29-bit tail that far from the float midpoint
    // pattern cannot change sides.
    double d = (double)m * sf_p10[e10 - SF_P10_MIN];
    uint64_t bits;
    memcpy(&bits, &d, 8);
    // Within 8 of the midpoint: |low - half| <= 8 as one unsigned compare
    // (the compiler's branch for the absolute value guessed wrong on half
    // of all values, a third of the parse).
    uint64_t low = bits & ((1ull << 29) - 1), half = 1ull << 28;
    bool near_midpoint = low - half + 8 <= 16;
    // Subnormal and near-overflow floats round differently: strtof decides.
    if (near_midpoint || d < 0x1p-126 || d > 3.4e38) return sf_parse_float_slow(s, n, out);
    // The sign by its bit: a branch on it guesses wrong on half of a
    // column that changes sign at random.
    float f = (float)d;
    uint32_t fb;
    memcpy(&fb, &f, 4);
    fb |= (uint32_t)neg << 31;
    memcpy(out, &fb, 4);
    return 0;
}

// enc/dec hold n = ncols * rows float32 values, column-major.
void sf_filter_encode(uint8_t *out, const float *in, size_t ncols, size_t rows, int filter);
void sf_filter_decode(float *out, const uint8_t *in, size_t ncols, size_t rows, int filter);

// Column statistics: two passes over each chunk's values (in cache), chunks
// merged pairwise (Chan et al.). Stable, and still one pass over the input;
// writer and verifier merge in chunk order so that they agree bit for bit.
typedef struct {
    double n, mean, m2, min, max;
} sf_moments;

void sf_moments_of(sf_moments *m, const float *x, size_t n);
void sf_moments_merge(sf_moments *acc, const sf_moments *m);
void sf_moments_finish(sf_col_stats *out, const sf_moments *m);

// Several inputs read as one table (sources.c): the paths (borrowed from
// the caller), each one's series name for --series-per-file, the files
// opened one at a time, and the check of each file's header.
struct stat;
typedef struct sf_sources sf_sources;
int sf_sources_open(sf_sources **out, const char *const *paths, size_t n, bool per_file, sf_err *e);
void sf_sources_free(sf_sources *s);
size_t sf_sources_count(const sf_sources *s);
const char *sf_sources_path(const sf_sources *s, size_t i);
const char *sf_sources_stem(const sf_sources *s, size_t i);
const char *const *sf_sources_paths(const sf_sources *s);
// Opens source i ("-": stdin) and fills *opened (st_mode 0: not a regular
// file); returns the descriptor or a negative SF_E* code.
int sf_sources_open_file(const sf_sources *s, size_t i, struct stat *opened, sf_err *e);
// 0 when source i's header (names, n, delimiter d) is the first source's;
// else SF_EFORMAT naming source i and how it differs (a column missing,
// extra or renamed, with its position, or another delimiter).
int sf_sources_same_header(const sf_sources *s, size_t i, const char *const *first, uint32_t nfirst, char dfirst,
                           const char *const *names, uint32_t n, char d, sf_err *e);
// Writes the trailer and footer (no fsync), unlinks the temporary file and
// frees w; *fd is the file, open for reading, for the caller to read back
// and close. For pack's rows packed before a series came back
// (regroup.c). A writer without a temporary file (stdout, a device) is
// SF_EINVAL.
int sf_pack_writer_finish_fd(sf_pack_writer *w, int *fd, sf_err *e);

// Rows of series whose rows interleave in the input,
// regrouped by series with bounded memory (pack/regroup.c). Rows are held
// up to a budget, sorted stably by series and spilled as runs to temporary
// files beside the output, then merged: each series' rows come out in the
// order they were added, the series in the order of their indices.
#define SF_REGROUP_DEFAULT_BUDGET 64000000ull  // bytes: --memory-budget 64
#define SF_REGROUP_MIN_BUDGET 250000ull        // bytes: --memory-budget 0.25

typedef struct sf_regroup sf_regroup;

// The least budget for rows of ncols values (and a time): SF_REGROUP_MIN_BUDGET,
// or more for very wide rows (a run holds some rows, a merge some runs).
uint64_t sf_regroup_min_budget(uint32_t ncols, bool timed);

// near: the output path; the spill files are created beside it (where the
// writer's temporary file goes) with no name (sf_temp_unnamed), so that
// nothing of them outlives the process, whatever ends it. budget: bytes for the rows
// held and the merge's buffers (at least sf_regroup_min_budget).
int sf_regroup_open(sf_regroup **out, const char *near, uint32_t ncols, bool timed, uint64_t budget, sf_err *e);

// The rows that came before any added: an open .sfpack whose series i holds
// rows of series map[i] (ascending), each row's imputed flags kept. The
// regrouper owns head and map from here on, also on failure.
int sf_regroup_head(sf_regroup *r, sf_pack *head, uint32_t *map, sf_err *e);

// Holds one row of series `series` (values: ncols floats; time ignored
// without one); a full buffer is sorted and spilled first.
int sf_regroup_add(sf_regroup *r, uint32_t series, const float *values, int64_t time, int64_t line, sf_err *e);
// Holds n rows as n calls of sf_regroup_add would: row i of series[i], its
// values at values + i * ncols, its time time[i] (time unread without a
// time column, may then be NULL), its line line + i.
int sf_regroup_add_rows(sf_regroup *r, const uint32_t *series, const float *values, const int64_t *time,
                        int64_t line, size_t n, sf_err *e);

// Called with the rows series by series in ascending index, each series'
// rows in the order they came (the head's first), n > 0 rows of one
// series a call: row i's values at values + i * ncols, its time times[i]
// (times NULL without a time column), its line lines[i]; imputed: n * ncols
// flags, or NULL when none was imputed. A nonzero return stops the merge
// and is returned (the callback fills its own error).
typedef int (*sf_regroup_emit)(void *arg, uint32_t series, const float *values, const int64_t *times,
                               const int64_t *lines, const uint8_t *imputed, size_t n);

// Merges every row into emit; call once, after the last add.
int sf_regroup_merge(sf_regroup *r, sf_regroup_emit emit, void *arg, sf_err *e);

// Runs the held rows were spilled as, the merge's passes over them (0: every
// row fitted in the budget), and the bytes written to spill files.
uint64_t sf_regroup_runs(const sf_regroup *r);
uint64_t sf_regroup_passes(const sf_regroup *r);
uint64_t sf_regroup_spilled(const sf_regroup *r);

// Frees r and closes (so removes) its spill files.
void sf_regroup_free(sf_regroup *r);

// The rows a packer wrote before the first series came back, made the head
// of r's merge: w (owned from here on, also on failure) is finished as a
// file of its own (its temporary file, unlinked and read back; near names
// it in messages), after categories() gives it its category values (every
// categorical column has one in a stored row), and each of its series
// mapped to the packer's index by index(). A writer without rows is
// dropped: there is no head.
typedef struct {
    int (*categories)(void *arg, sf_pack_writer *w, sf_err *e);
    uint32_t (*index)(void *arg, const char *name);  // a series written, as the packer numbered it
    void *arg;
} sf_regroup_packer;
int sf_regroup_head_writer(sf_regroup *r, sf_pack_writer *w, const char *near, const sf_regroup_packer *p, sf_err *e);

// The note a packer gives after regrouping: where the rows went, in memory
// or through runs spilled beside out. order: whose order each series'
// rows keep ("the file", "the stream").
void sf_regroup_note(const sf_regroup *r, const char *order, const char *out, char *msg, size_t cap);

// Whether a kept integer column of the rows pack is about
// to take for one series is the id of several (series_hint.c). pack/csv.c
// reads the rows of its first buffer into this and says what it finds
// before anything is written.
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

// a[0, n) == b[0, n), series ids and category values compared once a row:
// up to 16 bytes by two overlapping loads of 8 (or 4) without a call.
static inline bool sf_bytes_equal(const char *a, const char *b, size_t n) {
    if (n >= 8 && n <= 16) {
        uint64_t a0, a1, b0, b1;
        memcpy(&a0, a, 8), memcpy(&a1, a + n - 8, 8), memcpy(&b0, b, 8), memcpy(&b1, b + n - 8, 8);
        return ((a0 ^ b0) | (a1 ^ b1)) == 0;
    }
    if (n >= 4 && n < 8) {
        uint32_t a0, a1, b0, b1;
        memcpy(&a0, a, 4), memcpy(&a1, a + n - 4, 4), memcpy(&b0, b, 4), memcpy(&b1, b + n - 4, 4);
        return ((a0 ^ b0) | (a1 ^ b1)) == 0;
    }
    return memcmp(a, b, n) == 0;
}

// The hash of the series ids and category values (their tables' slots
// only: codes and indices follow first appearance, never the hash). Eight
// bytes at a time, the last word overlapping the one before: FNV-1a's
// byte a step took a fifth of packing's time where the series id changes
// every row. Multiplies mix each word, the high half folded into the low
// bits the tables mask.
static inline uint64_t sf_hash_bytes(const char *s, size_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n, v;
    for (size_t i = 0; i + 8 < n; i += 8) {
        memcpy(&v, s + i, 8);
        h = (h ^ v) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    if (n >= 8) {
        memcpy(&v, s + n - 8, 8);
    } else if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4), memcpy(&b, s + n - 4, 4);
        v = (uint64_t)a << 32 | b;
    } else {
        v = n ? (uint64_t)(uint8_t)s[0] << 16 | (uint64_t)(uint8_t)s[n / 2] << 8 | (uint8_t)s[n - 1] : 0;
    }
    h = (h ^ v) * 0xc4ceb9fe1a85ec53ull;
    return h ^ h >> 29 ^ h >> 47;
}

// The series ids a packer has seen (csv.c, arrow.c): an open-addressing
// hash set of copies of the ids, each with where its first row was (a CSV
// origin or a stream row) and its index in order of first appearance, its
// place once regrouped (set by the caller). Memory: one entry per id.
typedef struct {
    char *key;
    size_t len;
    uint64_t first;
    uint32_t index;
    uint32_t after;  // 1 + the slot looked up after this one last time; 0: none
} sf_series_id;
typedef struct {
    sf_series_id *slot;
    size_t cap, len;
    size_t last;  // 1 + the slot looked up last; 0: none
} sf_series_ids;
// The entry of key[0, n): *found true when it was there, else a new one
// (the key copied, first kept, index 0). NULL when out of memory.
sf_series_id *sf_series_ids_add(sf_series_ids *s, const char *key, size_t n, uint64_t first, bool *found);
// The entry of key[0, n), or NULL when it was never added.
const sf_series_id *sf_series_ids_find(const sf_series_ids *s, const char *key, size_t n);
// Every entry at its index (malloc'd, nindex of them: the indices given
// are 0 to nindex - 1), or NULL when out of memory.
const sf_series_id **sf_series_ids_by_index(const sf_series_ids *s, uint32_t nindex);
void sf_series_ids_free(sf_series_ids *s);

// Text for messages, shared by the CSV and Arrow packers (csv.c): s[0, n)
// into out (cap bytes), control bytes as \xNN, cut with "..." to fit;
// returns out.
const char *sf_show(const char *s, size_t n, char *out, size_t cap);
// Length of the valid UTF-8 prefix of s[0, n) (names and ids must be UTF-8).
size_t sf_utf8_valid_prefix(const unsigned char *s, size_t n);
// s[0, n) is UTF-8 text without NUL bytes (series ids, categories): ASCII
// words of 8 bytes first, the decoder only for text that has other bytes.
static inline bool sf_text_ok(const char *s, size_t n) {
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    size_t i = 0;
    uint64_t bad = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, s + i, 8);
        bad |= ((v - ones) & ~v) | v;  // a zero byte or a high bit
    }
    for (; i < n; i++) bad |= ((uint8_t)s[i] - 1u) | (uint8_t)s[i];  // bit 7: 0 borrows, 0x80 and above have it
    if (!(bad & high)) return true;
    return !memchr(s, 0, n) && sf_utf8_valid_prefix((const unsigned char *)s, n) == n;
}

#endif
