// Arrow C stream to .sfpack: the CSV packer's meaning (pack/csv.c) for
// record batches. Each batch is checked against the schema (formats, child
// counts, lengths, buffers), then read a slice of rows at a time: every kept
// column converted into floats (category codes for categorical ones) and
// missing flags, then the rows taken in order (series, missing values,
// times) into a batch handed to the writer. Memory: one record batch (the
// producer's), the slice, a 64 KiB batch, the writer's chunks, and one entry
// per series id and category value; each batch is released once read. Rows
// of series that interleave are regrouped as pack/csv.c regroups them, within
// memory_budget (regroup_start, pack/regroup.c). With sources (a Parquet
// directory's files, one after the other in the stream) a row's line is its
// origin, its file and its row there, as a CSV row of several files keeps
// it. Before anything is written, the first batch is searched for numeric
// series ids taken for one series (series_hint.c), as pack/csv.c searches
// its first buffer.
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pack/internal.h"

#define BATCH_BYTES (64u << 10)  // rows handed to the writer at a time
#define SLICE_VALUES (1u << 18)  // kept values converted at a time (rows x columns)

// The year 0000 to 9999 that ISO-8601 times take (pack/time.c), in
// microseconds since 1970: the range of a time column.
#define US_LO (-62167219200000000ll)
#define US_HI 253402300799999999ll

enum kind { K_NONE, K_BOOL, K_I8, K_U8, K_I16, K_U16, K_I32, K_U32, K_I64, K_U64, K_F16, K_F32, K_F64, K_STR,
            K_LSTR, K_VSTR, K_DATE32, K_DATE64, K_TS };
static const char *const kind_names[] = {"unsupported", "bool", "int8", "uint8", "int16", "uint16", "int32",
                                         "uint32", "int64", "uint64", "float16", "float32", "float64", "string",
                                         "large_string", "string_view", "date32", "date64", "timestamp"};
static const char *const ts_units[] = {"s", "ms", "us", "ns"};

enum role { ROLE_SKIP, ROLE_KEEP, ROLE_SERIES, ROLE_TIME, ROLE_CATEGORY };

// A categorical column's texts in order of first appearance (a value's
// code is its index), as pack/csv.c keeps them.
typedef struct {
    char **values;
    uint32_t *lens;  // each value's bytes: a probe compares them before the bytes
    uint32_t n;
    size_t bytes, quotes;  // the name and values as a checkpoint lists them (sf_list_item_bytes)
    uint32_t slots[2 * SF_PACK_MAX_CATEGORY];  // value index + 1; 0: empty
} category;

typedef struct {
    const char *name;
    const char *format;  // the schema's (a dictionary's: its indices')
    const char *dict_format;  // a dictionary's values' (NULL: not a dictionary)
    enum kind kind;      // the values' (a dictionary's: its dictionary's)
    enum kind index;     // a dictionary's indices; K_NONE when not a dictionary
    int unit;            // timestamps: 0 s, 1 ms, 2 us, 3 ns
    bool tz;
    enum role role;
    uint32_t keep;       // kept column index (ROLE_KEEP, ROLE_CATEGORY)
    uint32_t cat;        // index in cats (ROLE_CATEGORY)
    uint32_t *dict_code; // this batch's dictionary index -> code + 1 (0: not looked up yet)
    // Integers beyond float32's exact range: said after packing.
    uint64_t big, changed, first_row;
    double max_change;
    char first[24];
    float first_stored;
} column;

typedef struct {
    const char *name;
    const sf_arrow_pack_opts *o;
    sf_err *e;
    struct ArrowArrayStream s;
    struct ArrowSchema schema;
    column *cols;
    uint32_t ncols, nkeep, ncat, series_col, time_col;  // UINT32_MAX: none
    bool time_found;
    category *cats;
    const char **col_names;  // kept columns, in order
    uint32_t *keep_col;      // kept column -> schema column

    // The slice: kept values column-major, their missing flags, times.
    size_t slice_rows;
    float *vals;
    uint8_t *miss;
    int64_t *times;
    uint8_t *tmiss;

    float *batch, *last;
    int64_t *batch_time, *batch_line;
    uint8_t *batch_imp;
    size_t nbatch, batch_rows;
    bool have_last;
    int64_t prev_time;
    uint64_t prev_time_row;

    sf_series_ids seen;  // first: the stream row of the series' first row
    const char *cur_key;  // the current series' id (its entry in seen)
    size_t cur_len;
    uint64_t cur_row;
    char key_buf[32];  // an integer id as text

    uint64_t rows;  // rows of the stream before the batch being read
    // Sources: the stream row each starts at (nsources + 1 of them, the last
    // the stream's end), the one being read, and stems for series_per_file.
    sf_sources *src;
    uint64_t *src_start;
    uint32_t src_at;
    uint64_t src_end;  // the stream row where src_at's rows end (0: none read yet)
    uint64_t truncated, truncated_row, repeat_row;
    sf_pack_writer *w;
    sf_arrow_pack_stats st;

    // Series whose rows interleave: every row from the first series that
    // comes back on is held by a regrouper (pack/regroup.c) and checked in
    // series order after the last (regroup_finish).
    const char *out;
    sf_pack_writer_opts wo;  // to open the writer again for the regrouped rows
    uint64_t budget;         // bytes for regrouping: memory_budget, or the default
    uint32_t *cat_cols;
    uint32_t nindex, cur_index;
    sf_regroup *rg;
    const sf_series_id **by_index;
} arrow;

__attribute__((format(printf, 3, 4))) static int fail(arrow *a, int code, const char *fmt, ...) {
    char msg[932];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sf_err_set(a->e, code, "%s: %s", a->name, msg);
}

// The source that stream row `row` (one of the stream's) is in: the last
// whose first row is at or before it (a file without rows starts where
// the next one does).
static uint32_t source_of(const arrow *a, uint64_t row) {
    uint32_t lo = 0, hi = a->o->nsources;  // src_start[lo] <= row < src_start[hi]
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (a->src_start[mid] <= row) lo = mid;
        else hi = mid;
    }
    return lo;
}

// Where stream row `row` is, as a message says it: "row N" (of the
// stream), or with sources "row N of FILE".
static const char *row_text(const arrow *a, uint64_t row, char *buf, size_t cap) {
    if (!a->src_start) {
        snprintf(buf, cap, "row %" PRIu64, row + 1);
    } else {
        uint32_t s = source_of(a, row);
        snprintf(buf, cap, "row %" PRIu64 " of %s", row - a->src_start[s] + 1, a->o->sources[s]);
    }
    return buf;
}

// fail's SF_EFORMAT, the message after the row it is about: "NAME: row N:"
// for the stream's row N, "FILE: row N:" for a source's.
__attribute__((format(printf, 3, 4))) static int fail_row(arrow *a, uint64_t row, const char *fmt, ...) {
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!a->src_start) return fail(a, SF_EFORMAT, "row %" PRIu64 ": %s", row + 1, msg);
    uint32_t s = source_of(a, row);
    return sf_err_set(a->e, SF_EFORMAT, "%.120s: row %" PRIu64 ": %s", a->o->sources[s], row - a->src_start[s] + 1,
                      msg);
}

// A row's line as the writer keeps it: its index in the stream, 1-based, or
// with sources its origin, the file being read (src_at) and its row there.
static int64_t line_of(const arrow *a, uint64_t row) {
    if (!a->src_start) return (int64_t)row + 1;
    return sf_origin_make(a->src_at, row - a->src_start[a->src_at] + 1);
}

// The stream row of a line line_of gave.
static uint64_t row_of_line(const arrow *a, int64_t line) {
    if (!a->src_start) return (uint64_t)line - 1;
    uint32_t s = (uint32_t)((uint64_t)line >> SF_ORIGIN_LINE_BITS);
    return a->src_start[s] + ((uint64_t)line & SF_MAX_SOURCE_LINE) - 1;
}

// ---- the schema ----

static enum kind int_kind(const char *f) {
    static const char codes[] = "cCsSiIlL";
    const char *p = f[0] && !f[1] ? strchr(codes, f[0]) : NULL;
    return p ? (enum kind)(K_I8 + (p - codes)) : K_NONE;
}

// The kind of a format string (the Arrow C data interface's), with a
// timestamp's unit and zone.
static enum kind format_kind(const char *f, int *unit, bool *tz) {
    enum kind k = int_kind(f);
    if (k != K_NONE) return k;
    if (!strcmp(f, "b")) return K_BOOL;
    if (!strcmp(f, "e")) return K_F16;
    if (!strcmp(f, "f")) return K_F32;
    if (!strcmp(f, "g")) return K_F64;
    if (!strcmp(f, "u")) return K_STR;
    if (!strcmp(f, "U")) return K_LSTR;
    if (!strcmp(f, "vu")) return K_VSTR;  // Polars' strings
    if (!strcmp(f, "tdD")) return K_DATE32;
    if (!strcmp(f, "tdm")) return K_DATE64;
    if (!strncmp(f, "ts", 2) && f[2] && strchr("smun", f[2]) && f[3] == ':') {
        *unit = (int)(strchr("smun", f[2]) - "smun");
        *tz = f[4] != 0;
        return K_TS;
    }
    return K_NONE;
}

static bool text_kind(enum kind k) { return k == K_STR || k == K_LSTR || k == K_VSTR; }
static bool is_text(const column *c) { return text_kind(c->kind); }
static bool int_kind_of(enum kind k) { return k >= K_I8 && k <= K_U64; }
static bool is_int(const column *c) { return c->index == K_NONE && int_kind_of(c->kind); }
// Ids or categories: text, integers, or a dictionary of either.
static bool is_key(const column *c) { return is_text(c) || int_kind_of(c->kind); }
// Bytes that are likely text (Polars' binary, a BLOB): cast to string, pack reads them.
static bool is_binary(const column *c) {
    const char *f = c->dict_format ? c->dict_format : c->format;
    return c->kind == K_NONE && (!strcmp(f, "z") || !strcmp(f, "Z") || !strcmp(f, "vz"));
}
static bool is_time(const column *c) { return c->index == K_NONE && c->kind >= K_DATE32; }
static bool is_number(const column *c) { return c->index == K_NONE && c->kind >= K_BOOL && c->kind <= K_F64; }

// An Arrow format pack does not read, in words (the C data interface's
// table): "" when it is none of these.
static const char *format_words(const char *f) {
    static const struct { const char *format, *words; bool prefix; } known[] = {
        {"vz", "binary_view", false}, {"z", "binary", false},
        {"Z", "large_binary", false}, {"n", "null", false}, {"w:", "fixed_size_binary", true},
        {"d:", "decimal", true}, {"tD", "duration", true}, {"tt", "time of day", true}, {"ti", "interval", true},
        {"+l", "list", false}, {"+L", "large_list", false}, {"+w:", "fixed_size_list", true},
        {"+vl", "list_view", false}, {"+vL", "large_list_view", false}, {"+s", "struct", false},
        {"+m", "map", false}, {"+u", "union", true}, {"+r", "run-end encoded", false},
    };
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (known[i].prefix ? !strncmp(f, known[i].format, strlen(known[i].format)) : !strcmp(f, known[i].format))
            return known[i].words;
    return "";
}

// The column's type as a message says it: "float64", "dictionary<string>",
// "timestamp[ns, tz=UTC]", or the format string of one pack does not read
// (with its name: "Arrow format \"vz\" (binary_view)").
static const char *type_name(const column *c, char *buf, size_t cap) {
    const char *f = c->dict_format ? c->dict_format : c->format, *words = format_words(f);
    char named[64] = "";
    if (*words) snprintf(named, sizeof named, " (%s)", words);
    if (c->kind == K_NONE && c->dict_format) snprintf(buf, cap, "a dictionary of Arrow format \"%s\"%s", f, named);
    else if (c->kind == K_NONE) snprintf(buf, cap, "Arrow format \"%s\"%s", f, named);
    else if (c->index != K_NONE) snprintf(buf, cap, "dictionary<%s>", kind_names[c->kind]);
    else if (c->kind == K_TS) snprintf(buf, cap, "timestamp[%s%s%s]", ts_units[c->unit], c->tz ? ", tz=" : "",
                                       c->tz ? c->format + 4 : "");
    else snprintf(buf, cap, "%s", kind_names[c->kind]);
    return buf;
}

// option names column c, which holds no ids or categories (is_key): said
// with what the column it asks for holds.
static int not_key(arrow *a, const column *c, const char *option, const char *holds) {
    char type[96];
    return fail(a, SF_EUSAGE, "%s names \"%s\", which is %s: %s text (string, large_string, string_view, "
                "dictionary) or integers%s", option, c->name, type_name(c, type, sizeof type), holds,
                is_binary(c) ? " (cast it to string)" : "");
}

static int find_name(const arrow *a, const char *name) {
    for (uint32_t f = 0; f < a->ncols; f++)
        if (!strcmp(a->cols[f].name, name)) return (int)f;
    return -1;
}

static int not_a_column(arrow *a, const char *option, const char *name) {
    char all[512] = "", tmp[96];
    size_t k = 0;
    for (uint32_t i = 0; i < a->ncols && k < sizeof all - 4; i++)
        k += (size_t)snprintf(all + k, sizeof all - k, "%s%s", i ? ", " : "", a->cols[i].name);
    return fail(a, SF_EUSAGE, "%s names \"%s\", which is not a column; the columns are: %s", option,
                sf_show(name, strlen(name), tmp, sizeof tmp), all);
}

static int each_name(arrow *a, const char *list, const char *option, int (*fn)(arrow *, int col, const char *option)) {
    char name[4096];
    for (const char *p = list; p;) {
        if (sf_list_next(&p, name, sizeof name))
            return fail(a, SF_EUSAGE, "%s %s: expected names separated by commas; a name with a comma or a quote in "
                        "quotes, as in CSV (\"rate,1y\")", option, list);
        int f = find_name(a, name);
        if (f < 0) return not_a_column(a, option, name);
        int rc = fn(a, f, option);
        if (rc) return rc;
    }
    return 0;
}

static int keep_col(arrow *a, int f, const char *option) {
    column *c = &a->cols[f];
    if (c->role == ROLE_TIME)
        return fail(a, SF_EUSAGE, "column \"%s\" is the time column; it is stored as the time of each row, never as "
                    "a feature", c->name);
    if (c->role == ROLE_KEEP) return fail(a, SF_EUSAGE, "%s lists column \"%s\" twice", option, c->name);
    if (c->role == ROLE_SERIES)
        return fail(a, SF_EUSAGE, "column \"%s\" is the series column and cannot also be a feature", c->name);
    c->role = ROLE_KEEP;  // its place: read_schema, once the time column is known
    return 0;
}

static int drop_col(arrow *a, int f, const char *option) {
    (void)option;
    column *c = &a->cols[f];
    if (c->role == ROLE_TIME)
        return fail(a, SF_EUSAGE, "column \"%s\" is the time column named by --time-column: it cannot be dropped too",
                    c->name);
    if (c->role == ROLE_SERIES)
        return fail(a, SF_EUSAGE, "column \"%s\" is the series column; it is never stored as a feature", c->name);
    c->role = ROLE_SKIP;
    return 0;
}

static int category_col(arrow *a, int f, const char *option) {
    (void)option;
    column *c = &a->cols[f];
    if (c->role == ROLE_CATEGORY) return fail(a, SF_EUSAGE, "--categorical names \"%s\" twice", c->name);
    if (c->role != ROLE_KEEP)
        return fail(a, SF_EUSAGE, "--categorical names \"%s\", which is %s", c->name,
                    c->role == ROLE_SERIES ? "the series column" : c->role == ROLE_TIME ? "the time column"
                    : "not packed (--columns or --drop-columns leaves it out)");
    if (!is_key(c)) return not_key(a, c, "--categorical", "a categorical column holds");
    c->role = ROLE_CATEGORY;
    a->ncat++;
    return 0;
}

// The schema's columns, their roles from the options (as pack/csv.c's
// read_header gives them) and the kept columns' names.
static int read_schema(arrow *a) {
    const struct ArrowSchema *sc = &a->schema;
    char type[96];
    if (!sc->format || strcmp(sc->format, "+s"))
        return fail(a, SF_EFORMAT, "the stream's schema has format \"%s\"; expected a struct of columns (\"+s\"), as a "
                    "record batch stream exports", sc->format ? sc->format : "(NULL)");
    if (sc->n_children < 1 || sc->n_children > SF_PACK_MAX_COLS || !sc->children)
        return fail(a, SF_EFORMAT, "the stream's schema has %" PRId64 " columns%s; expected 1 to %u", sc->n_children,
                    sc->children ? "" : " and no list of them", SF_PACK_MAX_COLS);
    a->ncols = (uint32_t)sc->n_children;
    if (!(a->cols = calloc(a->ncols, sizeof *a->cols))) return fail(a, SF_ENOMEM, "out of memory");
    for (uint32_t f = 0; f < a->ncols; f++) {
        const struct ArrowSchema *ch = sc->children[f];
        column *c = &a->cols[f];
        if (!ch || !ch->format) return fail(a, SF_EFORMAT, "column %u of the schema has no %s", f + 1, ch ? "format" : "schema");
        if (!ch->name || !ch->name[0]) return fail(a, SF_EFORMAT, "column %u has no name; expected named columns", f + 1);
        size_t len = strlen(ch->name);
        if (len > SF_PACK_MAX_NAME) return fail(a, SF_EFORMAT, "column %u: name longer than %u bytes", f + 1, SF_PACK_MAX_NAME);
        if (sf_utf8_valid_prefix((const unsigned char *)ch->name, len) < len)
            return fail(a, SF_EFORMAT, "column %u: column names must be UTF-8", f + 1);
        c->name = ch->name;
        c->format = ch->format;
        c->index = K_NONE;
        if (find_name(a, ch->name) != (int)f)
            return fail(a, SF_EFORMAT, "column name \"%s\" appears twice (columns %d and %u); names must be unique",
                        ch->name, find_name(a, ch->name) + 1, f + 1);
        if (ch->n_children != 0) {
            c->kind = K_NONE;  // a nested type
        } else if (ch->dictionary) {
            const struct ArrowSchema *d = ch->dictionary;
            c->dict_format = d->format ? d->format : "(NULL)";
            int unit;
            bool tz;
            enum kind values = d->format && !d->dictionary && !d->n_children ? format_kind(d->format, &unit, &tz) : K_NONE;
            c->index = int_kind(ch->format);
            c->kind = c->index != K_NONE && (text_kind(values) || int_kind_of(values)) ? values : K_NONE;
            if (c->kind == K_NONE) c->index = K_NONE;
        } else {
            c->kind = format_kind(ch->format, &c->unit, &c->tz);
        }
    }
    const sf_arrow_pack_opts *o = a->o;
    a->series_col = a->time_col = UINT32_MAX;
    if (o->series_column && o->series_column[0]) {  // "": one series on purpose
        int f = find_name(a, o->series_column);
        if (f < 0) return not_a_column(a, "--series-column", o->series_column);
        column *c = &a->cols[f];
        if (!is_key(c)) return not_key(a, c, "--series-column", "a series column holds ids,");
        c->role = ROLE_SERIES;
        a->series_col = (uint32_t)f;
    }
    if (o->time_column && o->time_column[0]) {
        int f = find_name(a, o->time_column);
        if (f < 0) return not_a_column(a, "--time-column", o->time_column);
        column *c = &a->cols[f];
        if (c->role == ROLE_SERIES)
            return fail(a, SF_EUSAGE, "column \"%s\" cannot be both the series and the time column", c->name);
        if (!is_time(c))
            return fail(a, SF_EUSAGE, "--time-column names \"%s\", which is %s: a time column is an Arrow timestamp "
                        "or date (cast it to one)", c->name, type_name(c, type, sizeof type));
        c->role = ROLE_TIME;
        a->time_col = (uint32_t)f;
    }
    int rc;
    if (o->columns && o->drop_columns) return fail(a, SF_EUSAGE, "--columns and --drop-columns exclude each other");
    if (o->columns) {
        if ((rc = each_name(a, o->columns, "--columns", keep_col))) return rc;
    } else {
        for (uint32_t f = 0; f < a->ncols; f++)
            if (a->cols[f].role == ROLE_SKIP) a->cols[f].role = ROLE_KEEP;
    }
    if (o->drop_columns && (rc = each_name(a, o->drop_columns, "--drop-columns", drop_col))) return rc;
    if (o->categorical && (rc = each_name(a, o->categorical, "--categorical", category_col))) return rc;
    // The first kept timestamp or date column, when none was named.
    for (uint32_t f = 0; !o->time_column && a->time_col == UINT32_MAX && f < a->ncols; f++)
        if (a->cols[f].role == ROLE_KEEP && is_time(&a->cols[f])) {
            a->cols[f].role = ROLE_TIME;
            a->time_col = f;
            a->time_found = true;
        }
    // What each kept column holds: numbers, or said what to do with it;
    // the text columns in one message, as the CSV packer lists them.
    char texts[600] = "";
    size_t tn = 0;
    uint32_t ntext = 0;
    for (uint32_t f = 0; f < a->ncols; f++) {
        column *c = &a->cols[f];
        if (c->role == ROLE_KEEP && is_text(c) && tn < sizeof texts)
            tn += (size_t)snprintf(texts + tn, sizeof texts - tn, "%s\"%s\" (%s)", ntext++ ? ", " : "", c->name,
                                   type_name(c, type, sizeof type));
    }
    if (ntext == 1)
        return fail(a, SF_EUSAGE, "column %s is text: name it as the series column (--series-column) or a "
                    "categorical one (--categorical), or leave it out (--drop-columns)", texts);
    if (ntext)
        return fail(a, SF_EUSAGE, "columns %s are text: name one as the series column (--series-column) and the "
                    "others as categorical (--categorical), or leave them out (--drop-columns)", texts);
    const char *time_name = a->time_col == UINT32_MAX ? NULL : a->cols[a->time_col].name;
    for (uint32_t f = 0; f < a->ncols; f++) {
        column *c = &a->cols[f];
        if (c->role != ROLE_KEEP || is_number(c)) continue;
        type_name(c, type, sizeof type);
        if (is_time(c) && time_name)
            return fail(a, SF_EUSAGE, "column \"%s\" is a time (%s) and \"%s\" is the time column: a row has one time "
                        "(--time-column names the other; --drop-columns leaves this one out)", c->name, type, time_name);
        if (is_time(c))
            return fail(a, SF_EUSAGE, "column \"%s\" is a time (%s), and --time-column none leaves rows without one: "
                        "leave it out (--drop-columns) or make it the time column (--time-column)", c->name, type);
        if (is_key(c))  // a dictionary of integers
            return fail(a, SF_EUSAGE, "column \"%s\" is %s: name it as the series column (--series-column) or a "
                        "categorical one (--categorical), cast it to float64, or leave it out (--drop-columns)",
                        c->name, type);
        return fail(a, SF_EUSAGE, "column \"%s\" has type %s, which pack does not read (it reads bool, integers, "
                    "floats, timestamps, dates, and text as ids or categories): cast it to %s, or leave it out "
                    "(--drop-columns)", c->name, type,
                    is_binary(c) ? "string (text: a series or categorical column)" : "float64");
    }
    // Kept columns in schema order, or in --columns' order.
    for (uint32_t f = 0; f < a->ncols; f++)
        if (a->cols[f].role == ROLE_KEEP || a->cols[f].role == ROLE_CATEGORY) a->cols[f].keep = a->nkeep++;
    if (a->nkeep == 0) return fail(a, SF_EUSAGE, "no columns left to pack");
    if (o->columns) {  // --columns' order, with the time column it may have named taken out
        uint32_t k = 0;
        char name[4096];
        for (const char *p = o->columns; p;) {
            sf_list_next(&p, name, sizeof name);  // parsed above
            column *c = &a->cols[find_name(a, name)];
            if (c->role == ROLE_KEEP || c->role == ROLE_CATEGORY) c->keep = k++;
        }
    }
    a->col_names = calloc(a->nkeep, sizeof *a->col_names);
    a->keep_col = calloc(a->nkeep, sizeof *a->keep_col);
    a->cats = a->ncat ? calloc(a->ncat, sizeof *a->cats) : NULL;
    if (!a->col_names || !a->keep_col || (a->ncat && !a->cats)) return fail(a, SF_ENOMEM, "out of memory");
    for (uint32_t f = 0; f < a->ncols; f++) {
        column *c = &a->cols[f];
        if (c->role != ROLE_KEEP && c->role != ROLE_CATEGORY) continue;
        a->col_names[c->keep] = c->name;
        a->keep_col[c->keep] = f;
    }
    // Categories in kept-column order: the writer's.
    for (uint32_t k = 0, n = 0; k < a->nkeep; k++)
        if (a->cols[a->keep_col[k]].role == ROLE_CATEGORY) a->cols[a->keep_col[k]].cat = n++;
    return 0;
}

// ---- a batch ----

static bool bit(const void *bits, int64_t i) { return ((const uint8_t *)bits)[i >> 3] >> (i & 7) & 1; }

// Values buffers a column's array has: validity and values (bool, numbers,
// times, dictionary indices), and offsets for text; a string_view's are
// at least 3: validity, views, its data buffers, their sizes.
static int64_t nbuffers(enum kind k) { return text_kind(k) ? 3 : 2; }

// One array of column c (or its dictionary: dict) against its type: counts,
// offset and length, and the buffers a reader needs. need: the rows read
// (the batch's offset and length).
static int check_array(arrow *a, const column *c, const struct ArrowArray *x, int64_t need, bool dict) {
    const char *what = dict ? "dictionary" : "array";
    if (!x) return fail(a, SF_EFORMAT, "batch %" PRIu64 ": column \"%s\" has no %s", a->st.batches + 1, c->name, what);
    enum kind k = dict || c->index == K_NONE ? c->kind : c->index;
    if (x->length < 0 || x->offset < 0 || x->null_count < -1 || x->length > INT64_MAX - x->offset)
        return fail(a, SF_EFORMAT, "batch %" PRIu64 ": column \"%s\"'s %s has length %" PRId64 ", offset %" PRId64
                    " and null count %" PRId64 "; expected lengths and offsets of 0 or more", a->st.batches + 1,
                    c->name, what, x->length, x->offset, x->null_count);
    if (x->length < need)
        return fail(a, SF_EFORMAT, "batch %" PRIu64 ": column \"%s\" has %" PRId64 " values, fewer than the batch's %"
                    PRId64 " rows", a->st.batches + 1, c->name, x->length, need);
    if ((k == K_VSTR ? x->n_buffers < 3 : x->n_buffers != nbuffers(k)) || !x->buffers || x->n_children != 0)
        return fail(a, SF_EFORMAT, "batch %" PRIu64 ": column \"%s\"'s %s has %" PRId64 " buffers and %" PRId64
                    " children; its type (%s) has %s%" PRId64 " buffers and none", a->st.batches + 1, c->name, what,
                    x->n_buffers, x->n_children, kind_names[k], k == K_VSTR ? "at least " : "", nbuffers(k));
    if (x->length > 0 && !x->buffers[1])
        return fail(a, SF_EFORMAT, "batch %" PRIu64 ": column \"%s\"'s %s has no values buffer", a->st.batches + 1,
                    c->name, what);
    if (x->null_count > 0 && !x->buffers[0])
        return fail(a, SF_EFORMAT, "batch %" PRIu64 ": column \"%s\"'s %s has %" PRId64 " nulls and no validity "
                    "buffer", a->st.batches + 1, c->name, what, x->null_count);
    if (!dict && (c->index != K_NONE) != (x->dictionary != NULL))
        return fail(a, SF_EFORMAT, "batch %" PRIu64 ": column \"%s\" %s, and its schema %s", a->st.batches + 1,
                    c->name, x->dictionary ? "has a dictionary" : "has no dictionary", x->dictionary ? "none" : "one");
    if (!dict && c->index != K_NONE) return check_array(a, c, x->dictionary, 0, true);
    if (dict && x->dictionary)
        return fail(a, SF_EFORMAT, "batch %" PRIu64 ": column \"%s\"'s dictionary has a dictionary", a->st.batches + 1,
                    c->name);
    return 0;
}

static bool valid_at(const struct ArrowArray *x, int64_t i) {
    return x->null_count == 0 || !x->buffers[0] || bit(x->buffers[0], i);
}

// The text of a string_view at physical index i: a view of 16 bytes, its
// length, then the text itself when 12 bytes or fewer, else a prefix, the
// data buffer's index and the offset there (the Arrow columnar format).
static int view_at(arrow *a, const column *c, const struct ArrowArray *x, int64_t i, uint64_t row, const char **s,
                   size_t *n) {
    const uint8_t *v = (const uint8_t *)x->buffers[1] + 16 * i;
    int32_t len, buf, off;
    memcpy(&len, v, 4);
    if (len >= 0 && len <= 12) {
        *s = (const char *)v + 4, *n = (size_t)len;
        return 0;
    }
    memcpy(&buf, v + 8, 4), memcpy(&off, v + 12, 4);
    int64_t data = x->n_buffers - 3;  // the variadic buffers, before the sizes
    const int64_t *sizes = x->buffers[x->n_buffers - 1];
    if (len < 0 || buf < 0 || buf >= data || off < 0 || !x->buffers[2 + buf] || !sizes ||
        (int64_t)off + len > sizes[buf])
        return fail_row(a, row, "column \"%s\": a string view of %" PRId32 " bytes at offset %" PRId32 " of data "
                        "buffer %" PRId32 " is not a text (the array has %" PRId64 " data buffers)", c->name, len,
                        off, buf, data);
    *s = (const char *)x->buffers[2 + buf] + off, *n = (size_t)len;
    return 0;
}

// The text of a string array at physical index i; false (with the error
// set) when its offsets are out of order or point at no data.
static int text_at(arrow *a, const column *c, const struct ArrowArray *x, int64_t i, uint64_t row, const char **s,
                   size_t *n) {
    if (c->kind == K_VSTR) return view_at(a, c, x, i, row, s, n);
    int64_t lo, hi;
    if (c->kind == K_STR) lo = ((const int32_t *)x->buffers[1])[i], hi = ((const int32_t *)x->buffers[1])[i + 1];
    else lo = ((const int64_t *)x->buffers[1])[i], hi = ((const int64_t *)x->buffers[1])[i + 1];
    if (lo < 0 || hi < lo || (hi > lo && !x->buffers[2]))
        return fail_row(a, row, "column \"%s\": string offsets %" PRId64 " to %" PRId64 " are not a text (offsets "
                        "out of order, or no data buffer)", c->name, lo, hi);
    *s = (const char *)x->buffers[2] + lo;
    *n = (size_t)(hi - lo);
    return 0;
}

static int64_t index_at(enum kind k, const void *v, int64_t i) {
    switch (k) {
    case K_I8: return ((const int8_t *)v)[i];
    case K_U8: return ((const uint8_t *)v)[i];
    case K_I16: return ((const int16_t *)v)[i];
    case K_U16: return ((const uint16_t *)v)[i];
    case K_I32: return ((const int32_t *)v)[i];
    case K_U32: return ((const uint32_t *)v)[i];
    case K_I64: return ((const int64_t *)v)[i];
    default: {
        uint64_t u = ((const uint64_t *)v)[i];
        return u > INT64_MAX ? -1 : (int64_t)u;
    }
    }
}

// The integer at index i of values v of kind k, written out into a->key_buf.
static void int_text(arrow *a, enum kind k, const void *v, int64_t i, const char **s, size_t *n) {
    if (k == K_U64) snprintf(a->key_buf, sizeof a->key_buf, "%" PRIu64, ((const uint64_t *)v)[i]);
    else snprintf(a->key_buf, sizeof a->key_buf, "%" PRId64, index_at(k, v, i));
    *s = a->key_buf;
    *n = strlen(a->key_buf);
}

// Row `row`'s text (an id or a category) at physical index i of column c's
// array x: a string, a dictionary's string or integer, or an integer
// written out.
// 1 when it is null, 0 with *s and *n, or an error.
static int value_text(arrow *a, const column *c, const struct ArrowArray *x, int64_t i, uint64_t row, const char **s,
                      size_t *n, int64_t *dict_index) {
    if (!valid_at(x, i)) return 1;
    if (c->index != K_NONE) {
        const struct ArrowArray *d = x->dictionary;
        int64_t j = index_at(c->index, x->buffers[1], i);
        if (j < 0 || j >= d->length)
            return fail_row(a, row, "column \"%s\": dictionary index %" PRId64 " is outside its dictionary of %" PRId64
                            " values", c->name, j, d->length);
        *dict_index = j;
        if (!valid_at(d, d->offset + j)) return 1;
        if (is_text(c)) return text_at(a, c, d, d->offset + j, row, s, n);
        int_text(a, c->kind, d->buffers[1], d->offset + j, s, n);
        return 0;
    }
    if (is_text(c)) return text_at(a, c, x, i, row, s, n);
    int_text(a, c->kind, x->buffers[1], i, s, n);
    return 0;
}

// The code of a categorical value (pack/csv.c's category_field): a new one
// for a text not seen yet.
static int category_code(arrow *a, column *c, uint64_t row, const char *s, size_t n, uint32_t *code) {
    category *g = &a->cats[c->cat];
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    uint32_t mask = 2 * SF_PACK_MAX_CATEGORY - 1, j = (uint32_t)h & mask;
    for (; g->slots[j]; j = (j + 1) & mask) {
        uint32_t i = g->slots[j] - 1;
        if (g->lens[i] == n && !memcmp(g->values[i], s, n)) {
            *code = g->slots[j] - 1;
            return 0;
        }
    }
    if (g->n == SF_PACK_MAX_CATEGORY)
        return fail_row(a, row, "column \"%s\" has more than %u distinct values: ids or text rather than a category "
                        "(--series-column or --drop-columns)", c->name, SF_PACK_MAX_CATEGORY);
    if (n > SF_PACK_MAX_CATEGORY_VALUE)
        return fail_row(a, row, "a value of categorical column \"%s\" is %zu bytes long, more than the %u a category "
                        "value may have (checkpoints keep every value)", c->name, n, SF_PACK_MAX_CATEGORY_VALUE);
    if (memchr(s, 0, n) || sf_utf8_valid_prefix((const unsigned char *)s, n) < n)
        return fail_row(a, row, "a value of categorical column \"%s\" must be UTF-8 text without NUL bytes", c->name);
    if (!g->n) g->bytes = sf_list_item_bytes(c->name, strlen(c->name), &g->quotes);
    size_t quotes, bytes = sf_list_item_bytes(s, n, &quotes);
    size_t list = sf_list_group_bytes(g->n + 2, g->bytes + bytes, g->quotes + quotes);
    if (list > SF_PACK_MAX_CATEGORY_LIST)
        return fail_row(a, row, "categorical column \"%s\" takes %zu bytes with this value (its distinct value %u) as "
                        "a checkpoint lists its name and values (quoted, quotes doubled), more than the %u a checkpoint "
                        "keeps for them (hint: fewer or shorter distinct values, or leave the column out with "
                        "--drop-columns)", c->name, list, g->n + 1, SF_PACK_MAX_CATEGORY_LIST);
    g->bytes += bytes, g->quotes += quotes;
    if (g->n % 64 == 0) {
        char **v = realloc(g->values, (g->n + 64) * sizeof *v);
        if (v) g->values = v;
        uint32_t *lens = v ? realloc(g->lens, (g->n + 64) * sizeof *lens) : NULL;
        if (!lens) return fail(a, SF_ENOMEM, "out of memory");
        g->lens = lens;
    }
    if (!(g->values[g->n] = strndup(s, n))) return fail(a, SF_ENOMEM, "out of memory");
    g->lens[g->n] = (uint32_t)n;
    g->slots[j] = ++g->n;
    *code = g->n - 1;
    return 0;
}

static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = h >> 10 & 31, man = h & 1023;
    float f;
    if (exp == 31) {
        uint32_t bits = sign | 0x7f800000u | man << 13;
        memcpy(&f, &bits, 4);
        return f;
    }
    f = exp ? ldexpf((float)(man | 1024), (int)exp - 25) : ldexpf((float)man, -24);
    return sign ? -f : f;
}

// An integer beyond 2^24 in kept column c: float32 may have changed it.
static void big_int(column *c, long double exact, float v, const char *text, uint64_t row) {
    c->big++;
    long double change = fabsl(exact - (long double)v);
    if (change == 0) return;
    if (!c->changed++) {
        c->first_row = row;
        snprintf(c->first, sizeof c->first, "%s", text);
        c->first_stored = v;
    }
    if ((double)change > c->max_change) c->max_change = (double)change;
}

// Kept column c's rows [0, m) of the slice from physical index i0 of x into
// out and miss (1: null, NaN or an infinity).
static int convert_column(arrow *a, column *c, const struct ArrowArray *x, int64_t i0, size_t m, uint64_t row0,
                          float *out, uint8_t *miss) {
    const void *v = x->buffers[1];
    for (size_t r = 0; r < m; r++) miss[r] = !valid_at(x, i0 + (int64_t)r);
    if (c->role == ROLE_CATEGORY) {
        for (size_t r = 0; r < m; r++) {
            const char *s;
            size_t n;
            int64_t j = -1;
            out[r] = NAN;
            int rc = value_text(a, c, x, i0 + (int64_t)r, row0 + r, &s, &n, &j);
            if (rc < 0) return rc;
            if (rc == 1) {
                miss[r] = 1;
                continue;
            }
            uint32_t code = 0;
            if (j >= 0 && c->dict_code[j]) {
                code = c->dict_code[j] - 1;
            } else {
                if ((rc = category_code(a, c, row0 + r, s, n, &code))) return rc;
                if (j >= 0) c->dict_code[j] = code + 1;
            }
            out[r] = (float)code;
        }
        return 0;
    }
    char text[24];
    for (size_t r = 0; r < m; r++) {
        int64_t i = i0 + (int64_t)r;
        float f;
        switch (c->kind) {
        case K_BOOL: f = bit(v, i); break;
        case K_I8: case K_U8: case K_I16: case K_U16: f = (float)index_at(c->kind, v, i); break;
        case K_I32: case K_I64: {
            int64_t w = index_at(c->kind, v, i);
            f = (float)w;
            if (!miss[r] && fabsf(f) >= 0x1p24f)
                snprintf(text, sizeof text, "%" PRId64, w), big_int(c, (long double)w, f, text, row0 + r);
            break;
        }
        case K_U32: case K_U64: {
            uint64_t u = c->kind == K_U32 ? ((const uint32_t *)v)[i] : ((const uint64_t *)v)[i];
            f = (float)u;
            if (!miss[r] && f >= 0x1p24f)
                snprintf(text, sizeof text, "%" PRIu64, u), big_int(c, (long double)u, f, text, row0 + r);
            break;
        }
        case K_F16: f = half_to_float(((const uint16_t *)v)[i]); break;
        case K_F32: f = ((const float *)v)[i]; break;
        default: {  // K_F64: its exact value rounded to nearest, ties to even. A CSV of the same
                    // doubles names each by its shortest decimal, which strtof may round the other
                    // way at an exact tie (1 + 2^-24: 1 here, 1.0000001 from "1.0000000596046448")
            double d = ((const double *)v)[i];
            if (!miss[r] && isfinite(d) && fabs(d) > FLT_MAX) {
                if (fabs(d) >= 0x1.ffffffp127)
                    return fail_row(a, row0 + r, "value %.9g in column \"%s\" is out of float32 range (|x| < 3.4e38)",
                                    d, c->name);
                d = d < 0 ? -FLT_MAX : FLT_MAX;
            }
            f = isfinite(d) ? (float)d : (float)NAN;
        }
        }
        if (!isfinite(f)) miss[r] = 1;  // as the CSV's nan and inf
        out[r] = f;
    }
    return 0;
}

// The time column's rows [0, m) into t (microseconds) and miss.
static int convert_times(arrow *a, const column *c, const struct ArrowArray *x, int64_t i0, size_t m, uint64_t row0,
                         int64_t *t, uint8_t *miss) {
    const void *v = x->buffers[1];
    char type[96];
    // Microseconds per unit (0: nanoseconds); each unit's range of the
    // years 0000-9999 is checked before scaling.
    static const int64_t per_us[] = {1000000, 1000, 1, 0};
    int64_t scale = c->kind == K_DATE32 ? 86400000000ll : c->kind == K_DATE64 ? 1000 : per_us[c->unit];
    for (size_t r = 0; r < m; r++) {
        int64_t i = i0 + (int64_t)r, w = c->kind == K_DATE32 ? ((const int32_t *)v)[i] : ((const int64_t *)v)[i];
        miss[r] = !valid_at(x, i);
        if (miss[r]) continue;
        int64_t us;
        if (scale) {
            bool in = w >= US_LO / scale && w <= US_HI / scale;
            us = in ? w * scale : 0;
            if (!in) goto range;
        } else {  // nanoseconds: floor to the microsecond, as the CSV's times are cut
            us = w / 1000 - (w % 1000 < 0);
            if (w % 1000 && !a->truncated++) a->truncated_row = row0 + r;
        }
        if (us < US_LO || us > US_HI) goto range;
        t[r] = us;
        continue;
    range:
        return fail_row(a, row0 + r, "time %" PRId64 " (%s) in the time column \"%s\" is outside the years 0000 to "
                        "9999, which seqfeed's times cover", w, type_name(c, type, sizeof type), c->name);
    }
    return 0;
}

// ---- rows ----

static int flush_batch(arrow *a) {
    if (a->nbatch == 0) return 0;
    int rc = sf_pack_writer_rows_imputed(a->w, a->batch, a->time_col != UINT32_MAX ? a->batch_time : NULL,
                                         a->batch_line, a->batch_imp, a->nbatch, a->e);
    a->st.rows += a->nbatch;
    a->nbatch = 0;
    return rc;
}

// (Again, for regrouped rows) the writer of a->out, from a->wo.
static int open_writer(arrow *a) {
    int rc = sf_pack_writer_open(&a->w, a->out, &a->wo, a->e);
    if (!rc && a->o->temp_path) a->o->temp_path(a->o->arg, sf_pack_writer_temp_path(a->w));
    if (!rc && a->time_col != UINT32_MAX) {
        // Timestamps have a clock (written with seconds, and Z for an
        // instant with a zone); dates are dates.
        const column *c = &a->cols[a->time_col];
        sf_pack_writer_time_parts(a->w, c->kind == K_TS ? SF_TIME_CLOCK | SF_TIME_SECONDS | (c->tz ? SF_TIME_ZONE : 0) : 0);
    }
    return rc;
}

static uint32_t head_index(void *arg, const char *name) {
    const sf_series_id *s = sf_series_ids_find(&((const arrow *)arg)->seen, name, strlen(name));
    return s ? s->index : 0;  // every series written was seen
}

// Category values in the writer's order: the kept categorical columns'.
static int write_categories(void *arg, sf_pack_writer *w, sf_err *e) {
    arrow *a = arg;
    (void)e;
    for (uint32_t k = 0, n = 0; k < a->nkeep; k++) {
        const column *c = &a->cols[a->keep_col[k]];
        if (c->role != ROLE_CATEGORY) continue;
        const category *g = &a->cats[c->cat];
        if (g->n == 0) return fail(a, SF_EFORMAT, "categorical column \"%s\" has only missing values", c->name);
        int rc = sf_pack_writer_category(w, n++, (const char *const *)g->values, g->n, a->e);
        if (rc) return rc;
    }
    return 0;
}

// The first series that comes back (at stream row `row`): the rows of
// series interleave. The rows written so far, series by series as they
// came, become the head of the regrouper's merge (sf_regroup_head_writer):
// rows grouped by series never pay for regrouping.
static int regroup_start(arrow *a, const char *key, size_t n, const sf_series_id *back, uint64_t row) {
    if (!sf_pack_writer_temp_path(a->w)) {
        char x[96], y[96], at[160], first[160];
        return fail_row(a, row, "series \"%s\" (column \"%s\") reappears after series \"%s\" started at %s (it was "
                        "first seen at %s): pack regroups the rows of series that interleave "
                        "through temporary files beside its output, so it needs a file path for the .sfpack, not "
                        "stdout or a device", sf_show(key, n, x, sizeof x), a->cols[a->series_col].name,
                        sf_show(a->cur_key, a->cur_len, y, sizeof y), row_text(a, a->cur_row, at, sizeof at),
                        row_text(a, back->first, first, sizeof first));
    }
    int rc = flush_batch(a);
    if (!rc) rc = sf_regroup_open(&a->rg, a->out, a->nkeep, a->time_col != UINT32_MAX, a->budget, a->e);
    if (rc) return rc;
    sf_pack_writer *w = a->w;
    a->w = NULL;
    return sf_regroup_head_writer(a->rg, w, a->out,
                                  &(sf_regroup_packer){.categories = write_categories, .index = head_index, .arg = a},
                                  a->e);
}

// A row whose series id differs from the row before it's.
static int start_series(arrow *a, const char *key, size_t n, uint64_t row) {
    if (memchr(key, 0, n) || sf_utf8_valid_prefix((const unsigned char *)key, n) < n)
        return fail_row(a, row, "series id must be UTF-8 text without NUL bytes");
    if (n > SF_PACK_MAX_NAME) return fail_row(a, row, "series id longer than %u bytes", SF_PACK_MAX_NAME);
    bool found;
    sf_series_id *s = sf_series_ids_add(&a->seen, key, n, row, &found);
    if (!s) return fail(a, SF_ENOMEM, "out of memory for the series table");
    if (!found && a->nindex == UINT32_MAX) return fail_row(a, row, "more than %u series ids", UINT32_MAX - 1);
    if (!found) s->index = a->nindex++;
    int rc = found && !a->rg ? regroup_start(a, key, n, s, row) : 0;
    if (rc) return rc;
    if (!a->rg) {
        rc = flush_batch(a);
        if (!rc) rc = sf_pack_writer_series(a->w, key, n, a->e);
        if (rc) return rc;
    }
    a->cur_key = s->key, a->cur_len = s->len, a->cur_row = row, a->cur_index = s->index;
    a->have_last = false;
    return 0;
}

// Where the time goes back without a series column, a kept column of
// integers that changes there too: the id of series each in one run of
// rows, further on than series_hint looks (its first batch). Said into
// hint (cap bytes) with the option that makes it the series column; hint
// unchanged when there is none. As pack/csv.c's late_ids_hint, but on
// integer columns only (a series column cannot be another type), from
// their float32 values: ids beyond 2^24 that float32 cannot tell apart are
// missed, and values are printed only when exact.
static void late_ids_hint(const arrow *a, const float *out, char *hint, size_t cap) {
    if (a->o->series_column || a->o->series_per_file) return;  // named, or one series on purpose
    // An id changes seldom: first one that did not change at the row
    // before too (when the batch holds that row), not a counter beside it.
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t k = 0; k < a->nkeep; k++) {
            const column *c = &a->cols[a->keep_col[k]];
            if (c->role != ROLE_KEEP || !is_int(c)) continue;
            float now = out[k], before = a->last[k];
            if (now == before) continue;
            if (!pass && a->nbatch >= 2 && a->batch[(a->nbatch - 2) * a->nkeep + k] != before) continue;
            char word[160], values[64] = "";
            size_t n = 0;
            sf_shell_word(word, sizeof word, &n, a->col_names[k]);
            if (fabsf(now) <= 0x1p24f && fabsf(before) <= 0x1p24f)
                snprintf(values, sizeof values, " (%.0f to %.0f)", (double)before, (double)now);
            snprintf(hint, cap, "; column \"%s\" changes there too%s: if it is the id of series, each in one run of "
                     "rows, pack it with --series-column%s%s", a->col_names[k], values,
                     word, a->o->columns ? " (and --columns without it)" : "");
            return;
        }
}

// A row of the current series, its values in the batch's next slot (NaN:
// missing), checked against the series' row before it and taken: a missing
// value filled (--missing ffill), a time that goes back refused, a repeated
// one noted. One implementation for both paths: a row as it is read (the
// rows of series contiguous) and a row regrouped after the whole stream was
// read. row: its index in the stream; line: what the writer keeps
// (line_of); imputed: the flags a regrouped row already carries (one packed
// before a series came back), or NULL.
static int series_row(arrow *a, int64_t t, uint64_t row, int64_t line, const uint8_t *imputed) {
    float *out = a->batch + a->nbatch * a->nkeep;
    uint8_t *imp = a->batch_imp ? a->batch_imp + a->nbatch * a->nkeep : NULL;
    if (imp && imputed) memcpy(imp, imputed, a->nkeep);
    else if (imp) memset(imp, 0, a->nkeep);
    for (uint32_t k = 0; k < a->nkeep; k++) {
        if (!isnan(out[k])) continue;
        // Only --missing ffill lets a missing value this far.
        if (!a->have_last)
            return fail_row(a, row, "missing value in column \"%s\" with no earlier row in this series to fill it "
                            "from (hint: --missing drop)", a->cols[a->keep_col[k]].name);
        out[k] = a->last[k];
        imp[k] = 1;  // so that nothing scores it as observed
        a->st.values_filled++;
    }
    if (a->time_col != UINT32_MAX) {
        if (a->have_last && t < a->prev_time) {
            char now[48], before[48], at[160], hint[400] = "";
            sf_time_format(now, sizeof now, t, 0);
            sf_time_format(before, sizeof before, a->prev_time, 0);
            late_ids_hint(a, out, hint, sizeof hint);
            return fail_row(a, row, "time %s is before %s (%s), the row before it in this series; times must not go "
                            "back within a series (sort the rows by time%s)%s", now, before,
                            row_text(a, a->prev_time_row, at, sizeof at),
                            a->series_col != UINT32_MAX ? " within each series" : "", hint);
        }
        if (a->have_last && t == a->prev_time && !a->repeat_row) a->repeat_row = row + 1;
        a->batch_time[a->nbatch] = a->prev_time = t;
        a->prev_time_row = row;
    }
    a->batch_line[a->nbatch] = line;
    if (!a->have_last) a->st.nseries++;
    a->have_last = true;
    memcpy(a->last, out, a->nkeep * sizeof *out);
    if (++a->nbatch == a->batch_rows) return flush_batch(a);
    return 0;
}

// Row r of the slice (stream row `row`): its series and missing values,
// then checked in its series (series_row) or held to be regrouped.
static int take_row(arrow *a, size_t r, uint64_t row, const struct ArrowArray *sx, int64_t si) {
    int rc;
    if (sx) {
        const char *key;
        size_t n;
        int64_t j = -1;
        rc = value_text(a, &a->cols[a->series_col], sx, si, row, &key, &n, &j);
        if (rc < 0) return rc;
        if (rc == 1 && a->o->missing == SF_MISSING_DROP) {  // a row without its series: dropped as one without a value
            a->st.rows_dropped++;
            return 0;
        }
        if (rc == 1) return fail_row(a, row, "the series column \"%s\" is null; every row needs a series id (hint: "
                                     "--missing drop leaves such rows out)", a->cols[a->series_col].name);
        if (!a->cur_key || n != a->cur_len || memcmp(key, a->cur_key, n)) {
            if ((rc = start_series(a, key, n, row))) return rc;
        }
    }
    bool timed = a->time_col != UINT32_MAX;
    float *out = a->batch + a->nbatch * a->nkeep;
    bool missing = timed && a->tmiss[r];
    for (uint32_t k = 0; k < a->nkeep; k++) {
        bool m = a->miss[k * a->slice_rows + r];
        out[k] = m ? NAN : a->vals[k * a->slice_rows + r];
        missing |= m;
    }
    if (missing) {
        if (a->o->missing == SF_MISSING_DROP) {
            a->st.rows_dropped++;
            return 0;
        }
        if (timed && a->tmiss[r])
            return fail_row(a, row, "the time column \"%s\" is null; expected a time (hint: --missing drop)",
                            a->cols[a->time_col].name);
        for (uint32_t k = 0; k < a->nkeep && a->o->missing == SF_MISSING_ERROR; k++) {
            if (!a->miss[k * a->slice_rows + r]) continue;
            const column *c = &a->cols[a->keep_col[k]];
            return fail_row(a, row, "missing value (null, NaN or an infinity) in column \"%s\"; expected %s (hint: "
                            "--missing drop or --missing ffill)", c->name,
                            c->role == ROLE_CATEGORY ? "one of its category values" : "a number");
        }
    }
    int64_t t = timed ? a->times[r] : 0;
    if (a->rg) return sf_regroup_add(a->rg, a->cur_index, out, t, line_of(a, row), a->e);
    return series_row(a, t, row, line_of(a, row), NULL);
}

// Regrouped rows of one series (sf_regroup_emit), in series order: a new
// series opens in the writer, then each row gets the checks of a row read
// in order.
static int regroup_emit(void *arg, uint32_t series, const float *values, const int64_t *times, const int64_t *lines,
                        const uint8_t *imputed, size_t n) {
    arrow *a = arg;
    if (!a->cur_key || series != a->cur_index) {
        const sf_series_id *s = a->by_index[series];
        int rc = flush_batch(a);
        if (!rc) rc = sf_pack_writer_series(a->w, s->key, s->len, a->e);
        if (rc) return rc;
        a->cur_key = s->key, a->cur_len = s->len, a->cur_index = series;
        a->have_last = false;
    }
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        memcpy(a->batch + a->nbatch * a->nkeep, values + i * a->nkeep, a->nkeep * sizeof(float));
        rc = series_row(a, times ? times[i] : 0, row_of_line(a, lines[i]), lines[i],
                        imputed ? imputed + i * a->nkeep : NULL);
    }
    return rc;
}

// After the last row: the held rows merged series by series into the
// writer, opened again (its first file became the merge's head).
static int regroup_finish(arrow *a) {
    if (!(a->by_index = sf_series_ids_by_index(&a->seen, a->nindex)))
        return fail(a, SF_ENOMEM, "out of memory for the series table");
    int rc = open_writer(a);
    if (rc) return rc;
    // Counted again as the rows reach the writer (the head's were written once).
    a->st.rows = a->st.nseries = 0;
    a->cur_key = NULL, a->have_last = false;
    rc = sf_regroup_merge(a->rg, regroup_emit, a, a->e);
    if (!rc) rc = flush_batch(a);
    a->st.regrouped = true;
    a->st.runs = sf_regroup_runs(a->rg), a->st.passes = sf_regroup_passes(a->rg);
    a->st.spilled_bytes = sf_regroup_spilled(a->rg);
    return rc;
}

// A batch against the schema (every read column's array: check_array),
// and its dictionaries' lookup tables made.
static int check_batch(arrow *a, const struct ArrowArray *b) {
    if (b->length < 0 || b->offset < 0 || b->length > INT64_MAX - b->offset)
        return fail(a, SF_EFORMAT, "batch %" PRIu64 " has length %" PRId64 " and offset %" PRId64 "; expected 0 or "
                    "more", a->st.batches + 1, b->length, b->offset);
    if (b->n_children != a->ncols || !b->children)
        return fail(a, SF_EFORMAT, "batch %" PRIu64 " has %" PRId64 " columns, the schema %u", a->st.batches + 1,
                    b->n_children, a->ncols);
    if (b->null_count > 0 && b->n_buffers >= 1 && b->buffers && b->buffers[0])
        return fail(a, SF_EFORMAT, "batch %" PRIu64 " has %" PRId64 " rows that are null as a whole; expected a "
                    "record batch", a->st.batches + 1, b->null_count);
    int64_t need = b->offset + b->length;
    for (uint32_t f = 0; f < a->ncols; f++) {
        column *c = &a->cols[f];
        if (c->role == ROLE_SKIP) continue;
        int rc = check_array(a, c, b->children[f], need, false);
        if (rc) return rc;
        free(c->dict_code);
        c->dict_code = NULL;
        if (c->role == ROLE_CATEGORY && c->index != K_NONE) {
            // A dictionary's codes are looked up once per batch (each batch may have its own).
            int64_t n = b->children[f]->dictionary->length;
            if ((uint64_t)n > SIZE_MAX / sizeof *c->dict_code ||
                !(c->dict_code = calloc((size_t)n + 1, sizeof *c->dict_code)))
                return fail(a, SF_ENOMEM, "out of memory for a dictionary of %" PRId64 " values", n);
        }
    }
    if (a->src_start && (uint64_t)b->length > a->src_start[a->o->nsources] - a->rows)
        return fail(a, SF_EFORMAT, "batch %" PRIu64 " ends at row %" PRIu64 " of the stream, past the %" PRIu64 " rows "
                    "its %u file(s) hold (a file changed while it was read?)", a->st.batches + 1,
                    a->rows + (uint64_t)b->length, a->src_start[a->o->nsources], a->o->nsources);
    return 0;
}

// Stream row `row` is past the source being read: the source it starts,
// the next one that has rows; with series_per_file, its series.
static int next_source(arrow *a, uint64_t row) {
    while (a->src_start[a->src_at + 1] <= row) a->src_at++;  // check_batch: row is before the last source's end
    a->src_end = a->src_start[a->src_at + 1];
    if (!a->o->series_per_file) return 0;
    const char *stem = sf_sources_stem(a->src, a->src_at);
    return start_series(a, stem, strlen(stem), row);
}

static int take_batch(arrow *a, const struct ArrowArray *b) {
    int rc = check_batch(a, b);
    if (rc) return rc;
    const struct ArrowArray *sx = a->series_col == UINT32_MAX ? NULL : b->children[a->series_col];
    for (int64_t done = 0; done < b->length;) {
        size_t m = (size_t)(b->length - done) < a->slice_rows ? (size_t)(b->length - done) : a->slice_rows;
        uint64_t row0 = a->rows + (uint64_t)done;
        for (uint32_t k = 0; k < a->nkeep; k++) {
            column *c = &a->cols[a->keep_col[k]];
            const struct ArrowArray *x = b->children[a->keep_col[k]];
            rc = convert_column(a, c, x, x->offset + b->offset + done, m, row0, a->vals + k * a->slice_rows,
                                a->miss + k * a->slice_rows);
            if (rc) return rc;
        }
        if (a->time_col != UINT32_MAX) {
            const struct ArrowArray *x = b->children[a->time_col];
            rc = convert_times(a, &a->cols[a->time_col], x, x->offset + b->offset + done, m, row0, a->times, a->tmiss);
            if (rc) return rc;
        }
        for (size_t r = 0; r < m; r++) {
            if (row0 + r >= a->src_end && a->src_start && (rc = next_source(a, row0 + r))) return rc;
            if ((rc = take_row(a, r, row0 + r, sx, sx ? sx->offset + b->offset + done + (int64_t)r : 0))) return rc;
        }
        done += (int64_t)m;
    }
    a->rows += (uint64_t)b->length;
    return 0;
}

// The producer's own message for a failed call, copied before the stream
// is released.
static int stream_error(arrow *a, const char *call, int code) {
    const char *why = a->s.get_last_error ? a->s.get_last_error(&a->s) : NULL;
    return fail(a, SF_EIO, "the stream's %s failed at batch %" PRIu64 " (%s%s%s)", call, a->st.batches + 1,
                strerror(code), why ? ": " : "", why ? why : "");
}

// What the user should know about the file just written (sf_arrow_pack_opts.note).
static void notes(arrow *a) {
    if (!a->o->note) return;
    char msg[1024], at[160];
    for (uint32_t k = 0; k < a->nkeep; k++) {
        const column *c = &a->cols[a->keep_col[k]];
        if (!c->changed) continue;
        snprintf(msg, sizeof msg, "warning: column \"%s\": float32 holds integers exactly only up to 16777216 (2^24), "
                 "and packing changed %" PRIu64 " of its values, by up to %.10g (%s: %s is stored as %.0f)", c->name,
                 c->changed, c->max_change, row_text(a, c->first_row, at, sizeof at), c->first,
                 (double)c->first_stored);
        a->o->note(a->o->arg, msg);
    }
    if (a->st.regrouped) {
        sf_regroup_note(a->rg, "the stream", a->out, msg, sizeof msg);
        a->o->note(a->o->arg, msg);
    }
    if (a->repeat_row) {
        snprintf(msg, sizeof msg, "warning: at %s the time repeats within a series (the row before it has the same "
                 "time): duplicate rows, or the rows of several series without a series column (--series-column)?",
                 row_text(a, a->repeat_row - 1, at, sizeof at));
        a->o->note(a->o->arg, msg);
    }
    if (a->truncated) {
        snprintf(msg, sizeof msg, "note: %" PRIu64 " time(s) in the time column \"%s\" had digits below a microsecond "
                 "(the first at %s): seqfeed keeps times to the microsecond and dropped them",
                 a->truncated, a->cols[a->time_col].name, row_text(a, a->truncated_row, at, sizeof at));
        a->o->note(a->o->arg, msg);
    }
}

static int start_writer(arrow *a) {
    a->batch_rows = BATCH_BYTES / (a->nkeep * sizeof(float) + 2 * sizeof(int64_t)) + 1;
    a->slice_rows = SLICE_VALUES / a->nkeep + 1;
    bool ffill = a->o->missing == SF_MISSING_FFILL;
    a->batch = malloc(a->batch_rows * a->nkeep * sizeof *a->batch);
    a->batch_time = malloc(a->batch_rows * sizeof *a->batch_time);
    a->batch_line = malloc(a->batch_rows * sizeof *a->batch_line);
    a->batch_imp = ffill ? malloc(a->batch_rows * a->nkeep) : NULL;
    a->last = malloc(a->nkeep * sizeof *a->last);
    a->vals = malloc(a->slice_rows * a->nkeep * sizeof *a->vals);
    a->miss = malloc(a->slice_rows * a->nkeep);
    a->times = malloc(a->slice_rows * sizeof *a->times);
    a->tmiss = malloc(a->slice_rows);
    if (!a->batch || !a->batch_time || !a->batch_line || (ffill && !a->batch_imp) || !a->last || !a->vals ||
        !a->miss || !a->times || !a->tmiss)
        return fail(a, SF_ENOMEM, "out of memory");
    uint32_t *cat_cols = a->cat_cols = a->ncat ? malloc(a->ncat * sizeof *cat_cols) : NULL;
    if (a->ncat && !cat_cols) return fail(a, SF_ENOMEM, "out of memory");
    for (uint32_t k = 0, n = 0; k < a->nkeep; k++)
        if (a->cols[a->keep_col[k]].role == ROLE_CATEGORY) cat_cols[n++] = k;
    sf_pack_writer_opts wo = a->o->pack;
    wo.ncols = a->nkeep;
    wo.col_names = a->col_names;
    wo.series_column = a->series_col == UINT32_MAX ? NULL : a->cols[a->series_col].name;
    wo.time_column = a->time_col == UINT32_MAX ? NULL : a->cols[a->time_col].name;
    wo.time_kind = a->time_col == UINT32_MAX ? SF_TIME_NONE : SF_TIME_ISO;  // microseconds, written back as ISO-8601
    wo.lines = true;  // each row's index in the stream, or its origin: what predict joins back by
    if (a->src_start) wo.sources = a->o->sources, wo.nsources = a->o->nsources;
    wo.imputed = ffill;
    wo.categorical = cat_cols, wo.ncategorical = a->ncat;
    a->wo = wo;
    a->budget = a->o->memory_budget ? a->o->memory_budget : SF_REGROUP_DEFAULT_BUDGET;
    uint64_t least = sf_regroup_min_budget(a->nkeep, a->time_col != UINT32_MAX);
    if (a->series_col != UINT32_MAX && a->budget < least)
        return fail(a, SF_EUSAGE, "--memory-budget %.3g MB is too small for pack to regroup rows of %u value(s)%s: at "
                    "least %.3g MB", a->budget / 1e6, a->nkeep, a->time_col != UINT32_MAX ? " and a time" : "",
                    least / 1e6);
    return open_writer(a);
}

// o's sources: their stems and names checked (pack/sources.c), and the
// stream row each starts at.
static int open_sources(arrow *a) {
    const sf_arrow_pack_opts *o = a->o;
    if (o->series_per_file && o->series_column)
        return fail(a, SF_EUSAGE, "--series-per-file and --series-column exclude each other: a series is a file, or "
                    "the rows of one value of the column");
    if (o->series_per_file && !o->nsources)
        return fail(a, SF_EINVAL, "--series-per-file needs the files the stream's rows come from");
    if (!o->nsources) return 0;
    if (!o->sources || !o->source_rows) return fail(a, SF_EINVAL, "%u sources without their names or rows", o->nsources);
    int rc = sf_sources_open(&a->src, o->sources, o->nsources, o->series_per_file, a->e);
    if (rc) return rc;
    if (!(a->src_start = malloc(((size_t)o->nsources + 1) * sizeof *a->src_start)))
        return fail(a, SF_ENOMEM, "out of memory");
    a->src_start[0] = 0;
    for (uint32_t i = 0; i < o->nsources; i++) {
        if (o->source_rows[i] > SF_MAX_SOURCE_LINE)
            return sf_err_set(a->e, SF_EUSAGE, "%.120s: %" PRIu64 " rows: packed with other files, a file's rows are "
                              "numbered in 40 bits (split it)", o->sources[i], o->source_rows[i]);
        a->src_start[i + 1] = a->src_start[i] + o->source_rows[i];  // below 2^63: 2^23 sources of 2^40 rows
    }
    return 0;
}

// What sf_series_hint found in the first batch, said: an error for the
// time going back (packing would stop there anyway), else a note the caller
// gets with the others.
static int series_hint_say(arrow *a, const sf_hint *h, int64_t *const *cols, const int64_t *times, uint64_t n) {
    const char *id = a->col_names[h->id];
    long long from = cols[h->id][h->row - 1], to = cols[h->id][h->row];
    char msg[880], word[160], at[160];
    size_t len = 0, wlen = 0;
    sf_shell_word(word, sizeof word, &wlen, id);
    if (h->kind == SF_HINT_TIME_BACK) {
        char now[48], before[48];
        const column *c = &a->cols[a->time_col];
        unsigned parts = c->kind == K_TS ? SF_TIME_CLOCK | SF_TIME_SECONDS | (c->tz ? SF_TIME_ZONE : 0) : 0;
        sf_time_format(now, sizeof now, times[h->row], parts);
        sf_time_format(before, sizeof before, times[h->row - 1], parts);
        len = (size_t)snprintf(msg, sizeof msg, "time %s goes back from %s (%s) where column \"%s\" changes from %lld "
                               "to %lld, and nowhere else in the first %" PRIu64 " rows: \"%s\" looks like the id of "
                               "series (%u values, each in one run of rows), which without --series-column are packed "
                               "as one series, whose times must not go back. If the rows are one series, "
                               "--series-column none says so, and they pack only without the time column "
                               "(--time-column none).", now, before, row_text(a, h->row - 1, at, sizeof at), id,
                               from, to, n, id, h->nvalues);
    } else {
        len = (size_t)snprintf(msg, sizeof msg, "warning: column \"%s\" looks like the id of series: its %u values "
                               "each come in one run of rows, and column \"%s\" restarts where it changes (%s: %lld "
                               "then %lld), in the first %" PRIu64 " rows; without --series-column they are packed as "
                               "one series, the id a feature. If they are one series, --series-column none says so.",
                               id, h->nvalues, a->col_names[h->counter], row_text(a, h->row, at, sizeof at),
                               (long long)cols[h->counter][h->row - 1], (long long)cols[h->counter][h->row], n);
    }
    if (len < sizeof msg)
        snprintf(msg + len, sizeof msg - len, " If \"%s\" is the series id, pack it with --series-column%s%s.", id, word,
                 a->o->columns ? " (and --columns without it)" : "");
    if (h->kind == SF_HINT_TIME_BACK) return fail_row(a, h->row, "%s", msg);
    if (a->o->note) a->o->note(a->o->arg, msg);
    return 0;
}

#define HINT_CELLS (1u << 20)  // integers the hint may hold: 8 MiB, as pack/csv.c's

// Numeric series ids taken for one series (series_hint.c), decided from
// the first batch (b, NULL: the stream has none) before anything is
// written, as pack/csv.c decides from its first buffer: the time going back
// is refused now with the option that makes the column the series id, a
// counter restarting (no time column) is a note. Integer columns with a
// null in those rows are not ids.
static int series_hint(arrow *a, const struct ArrowArray *b) {
    if (!b || a->o->series_column || a->o->series_per_file) return 0;
    bool timed = a->time_col != UINT32_MAX;
    uint32_t alive = 0;
    for (uint32_t k = 0; k < a->nkeep; k++) alive += a->cols[a->keep_col[k]].role == ROLE_KEEP && is_int(&a->cols[a->keep_col[k]]);
    if (alive < (timed ? 1u : 2u)) return 0;
    int rc = check_batch(a, b);
    if (rc) return rc;
    uint64_t n = (uint64_t)b->length < HINT_CELLS / alive ? (uint64_t)b->length : HINT_CELLS / alive;
    if (n < 2 * SF_HINT_MIN_RUN) return 0;
    int64_t *cells = malloc(n * alive * sizeof *cells), *times = timed ? malloc(n * sizeof *times) : NULL;
    uint8_t *tmiss = timed ? malloc(n) : NULL;
    int64_t **cols = calloc(a->nkeep, sizeof *cols);
    if (!cells || !cols || (timed && (!times || !tmiss))) {
        rc = fail(a, SF_ENOMEM, "out of memory");
        goto done;
    }
    for (uint32_t k = 0, i = 0; k < a->nkeep; k++) {
        const column *c = &a->cols[a->keep_col[k]];
        if (c->role != ROLE_KEEP || !is_int(c)) continue;
        const struct ArrowArray *x = b->children[a->keep_col[k]];
        int64_t *v = cols[k] = cells + (size_t)i++ * n;
        for (uint64_t r = 0; r < n && cols[k]; r++) {
            int64_t at = x->offset + b->offset + (int64_t)r;
            if (!valid_at(x, at)) cols[k] = NULL;
            else v[r] = index_at(c->kind, x->buffers[1], at);
        }
    }
    if (timed) {
        // Read again by take_batch, which counts the nanoseconds cut and says what is wrong with a time.
        uint64_t truncated = a->truncated, truncated_row = a->truncated_row;
        const struct ArrowArray *x = b->children[a->time_col];
        rc = convert_times(a, &a->cols[a->time_col], x, x->offset + b->offset, (size_t)n, a->rows, times, tmiss);
        a->truncated = truncated, a->truncated_row = truncated_row;
        if (rc) goto done;
        for (uint64_t r = 0; r < n; r++)
            if (tmiss[r]) n = r;  // the rows before the first without a time
    }
    sf_hint h;
    sf_hint_rows hr = {.nrows = n, .ncols = a->nkeep, .ints = (const int64_t *const *)cols, .time = times};
    if (sf_series_hint(&hr, &h) != SF_HINT_NONE) rc = series_hint_say(a, &h, cols, times, n);
done:
    free(cells), free(times), free(tmiss), free(cols);
    return rc;
}

static int convert(arrow *a) {
    if (!a->s.get_schema || !a->s.get_next)
        return fail(a, SF_EINVAL, "the stream has no get_schema or get_next callback");
    int rc = a->s.get_schema(&a->s, &a->schema);
    if (rc) return stream_error(a, "get_schema", rc);
    if (!a->schema.release) return fail(a, SF_EFORMAT, "the stream's get_schema gave a released schema");
    if ((rc = read_schema(a)) || (rc = open_sources(a))) return rc;
    uint64_t total = a->src_start ? a->src_start[a->o->nsources] : 0;
    for (bool first = true;; first = false) {
        struct ArrowArray b = {0};
        if ((rc = a->s.get_next(&a->s, &b))) return stream_error(a, "get_next", rc);
        if (first && !(rc = series_hint(a, b.release ? &b : NULL))) rc = start_writer(a);
        if (!b.release) {  // the end of the stream
            if (rc) return rc;
            break;
        }
        if (!rc) rc = take_batch(a, &b);
        b.release(&b);
        if (rc) return rc;
        a->st.batches++;
        if (a->o->progress && a->o->progress(a->o->arg, a->rows, total))
            return fail(a, SF_EINVAL, "stopped by the progress callback after %" PRIu64 " rows", a->rows);
    }
    if (a->src_start && a->rows != total)
        return fail(a, SF_EFORMAT, "the stream ended after %" PRIu64 " rows; its %u file(s) hold %" PRIu64 " (a file "
                    "changed while it was read?)", a->rows, a->o->nsources, total);
    if ((rc = flush_batch(a))) return rc;
    if (a->rg && (rc = regroup_finish(a))) return rc;
    if (a->rows == 0) return fail(a, SF_EFORMAT, "the stream has a schema but no rows");
    if (a->st.rows == 0)
        return fail(a, SF_EFORMAT, "no rows left to pack (all %" PRIu64 " dropped for missing values or series ids)",
                    a->st.rows_dropped);
    if ((rc = write_categories(a, a->w, a->e))) return rc;
    sf_pack_writer *w = a->w;
    a->w = NULL;
    if ((rc = sf_pack_writer_finish(w, a->e))) return rc;
    struct stat sb;
    if (stat(a->out, &sb) == 0) a->st.out_bytes = (uint64_t)sb.st_size;
    notes(a);
    return 0;
}

int sf_arrow_pack(struct ArrowArrayStream *stream, const char *out, const sf_arrow_pack_opts *o,
                  sf_arrow_pack_stats *st, sf_err *e) {
    if (st) *st = (sf_arrow_pack_stats){0};
    if (!stream || !stream->release)
        return sf_err_set(e, SF_EINVAL, "sf_arrow_pack: the stream is %s", stream ? "released already" : "NULL");
    arrow a = {.name = o->name ? o->name : "the Arrow stream", .o = o, .e = e, .s = *stream, .out = out};
    stream->release = NULL;  // moved: ours to release
    int rc = convert(&a);
    if (a.w) sf_pack_writer_abort(a.w);
    if (st) *st = a.st;
    for (uint32_t f = 0; a.cols && f < a.ncols; f++) free(a.cols[f].dict_code);
    for (uint32_t k = 0; k < a.ncat && a.cats; k++) {
        for (uint32_t i = 0; i < a.cats[k].n; i++) free(a.cats[k].values[i]);
        free(a.cats[k].values), free(a.cats[k].lens);
    }
    sf_series_ids_free(&a.seen);
    sf_sources_free(a.src);
    free(a.src_start);
    sf_regroup_free(a.rg);
    free(a.by_index), free(a.cat_cols);
    free(a.cats), free(a.cols), free(a.col_names), free(a.keep_col);
    free(a.vals), free(a.miss), free(a.times), free(a.tmiss);
    free(a.batch), free(a.batch_time), free(a.batch_line), free(a.batch_imp), free(a.last);
    if (a.schema.release) a.schema.release(&a.schema);
    if (a.s.release) a.s.release(&a.s);
    return rc;
}
