// CSV to .sfpack in one streaming pass: a sliding buffer of whole records,
// each record parsed into the next row of a batch, batches handed to the
// writer. With two or more threads a helper thread parses the second part of
// each buffer, which the main thread commits in order, runs of rows of one
// series at once, and meanwhile parses part of the next (parse_parallel).
// Memory: the buffer (grows only for a longer record), a 64 KiB batch, with
// two threads the next buffer and the parts' rows of both, the writer's
// chunk buffers, and one entry per series id.
// Series whose rows interleave (one comes back after another started) are
// regrouped within --memory-budget (regroup_start, pack/regroup.c).
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define BUF_INITIAL (1u << 20)
#define BUF_MAX (1u << 30)  // longest record we accept
#define PARALLEL_BUF (2u << 20)  // what buffers grow to with a helper thread
#define BATCH_BYTES (64u << 10)  // rows handed to the writer at a time
#define PAD 16  // zeroed bytes behind the data: the 8-byte loads of fast_number

enum role { ROLE_SKIP, ROLE_KEEP, ROLE_SERIES, ROLE_TIME, ROLE_CATEGORY };

// A categorical column: its texts in order of first appearance (a value's
// code is its index), found through an open-addressing hash of indices.
typedef struct {
    uint32_t field;
    char **values;
    uint32_t n;
    size_t bytes, quotes;  // the name and values as a checkpoint lists them (sf_list_item_bytes)
    uint32_t slots[2 * SF_PACK_MAX_CATEGORY];  // value index + 1; 0: empty
} category;

// A kept column's integers beyond float32's exact range (|v| > 2^24), which
// float32 may change (20200101 is stored as 20200100): said after packing.
typedef struct {
    uint64_t big, changed, missing;  // values above 2^24; those float32 changed; missing values
    uint64_t first_line;             // of the first changed value
    double max_change;
    char first[24];                  // that value's text
    float first_stored;
    bool not_date;  // a value above 2^24 that is not a yyyymmdd date
    bool back;      // an integer not above the one of the row before it in its series
    bool not_int;   // a value above 2^24 that is not an integer within int64
    int64_t lo, hi; // the integers' range (epoch times?), once ranged
    bool ranged;
    int64_t prev;  // the last integer, exactly
    bool has_prev;
} lossy;

typedef struct {
    const char *name;
    const char *out;  // the .sfpack path, for the command a message suggests
    const sf_csv_pack_opts *o;
    sf_err *e;

    int fd;  // -1: the whole input is in buf already
    struct stat opened;  // the input as it was at open (st_mode 0: not a regular file)
    char *buf;
    size_t len, cap;
    bool eof;
    uint64_t consumed;  // input bytes before buf[0]
    uint64_t line;      // line number of the record at buf + pos
    size_t pos;

    char delim;
    sf_field_end_fn field_end;  // the widest scan the CPU runs (scan.c)
    // Fields all numbers kept in order, skipped, an ISO time or the series
    // id: runs of records go to the vector parser (scan.c), NULL otherwise
    // or where the CPU has none; after a run it could not start,
    // number_skip records go the general way first (number_back_off).
    sf_number_rows_fn number_rows;
    sf_number_rows_layout numbers;  // its kind[] owned here
    uint32_t number_skip, number_backoff;
    uint32_t ncsv, nkeep;
    uint8_t *role;
    uint32_t *keep_at;  // csv field -> kept column
    char **names;       // csv field names
    const char **col_names;  // kept column names
    uint32_t series_field;

    float *row;          // current record's kept values: the next batch slot
    const char **miss;   // where each missing kept value is, for messages
    char *key;  // current record's series id
    size_t key_len, key_cap;
    const char *key_at;  // where it starts in the input

    category *cats;            // in kept-column order
    uint32_t ncat;
    int32_t *cat_of;           // per field: its index in cats, or -1
    uint32_t time_field;       // UINT32_MAX: none
    enum sf_time_kind time_kind;
    bool time_found;           // found from the first row, not named
    unsigned time_parts;       // the union of the ISO parts seen
    int64_t rec_time, prev_time;  // the record's time; the series' last stored one
    sf_time_memo time_memo;    // the main thread's last date
    uint64_t prev_time_line;
    const char *time_at;       // where the record's time starts

    float *batch;
    int64_t *batch_time, *batch_line;  // each batch row's time and CSV line
    uint8_t *batch_imp;  // ffill: per batch row and kept column, 1 where the value was filled in
    size_t nbatch, batch_rows;
    float *last;  // ffill: the last row of the previous batch
    bool have_last;
    int seeded;  // ffill: the series' row before it came from o->series_last (1), none (0), not asked (-1)
    char *cur_series;
    size_t cur_series_len;
    uint64_t cur_series_line;
    sf_series_ids seen;  // first: the origin of the series' first row
    // While rows are held, copies of seen's slots for the parts parsed in
    // parallel to find their rows' series in (the keys are seen's), one
    // per helper job (the helper reads one while the main thread refreshes
    // the other), taken before a job when seen grew; cap 0: none (too
    // large to copy).
    sf_series_ids ids_copy[2];
    uint64_t blank_line;  // first blank line since the last record, or 0
    bool rec_quoted, rec_missing;

    // The helper thread's parts of the buffers (parse_parallel): one for
    // the buffer committed, one for the next, which it parses meanwhile.
    struct half_arrays {
        void *block;  // the arrays below, one allocation (half_room)
        float *rows;
        int64_t *times;
        struct half_rec *recs;
        uint32_t *row_ids;  // per record, with a series column, its series id as half_rec.id
        uint32_t *cats;
        struct half_big *pend;
        size_t cap, pend_cap;
    } part[2];
    struct half_field *half_fields;  // role and keep_at as the helper reads them
    struct helper *helper;  // the helper thread, once started (helper_run)
    // The helper's two jobs (parse_parallel): jobs[turn] for the buffer in
    // buf, with ids_copy[turn] and part[turn]; the other for the next.
    struct half_job *jobs;
    struct half_job *ahead;  // jobs[turn] when the helper read and split buf (and parses its part)
    unsigned turn;
    char *spare;       // the next buffer, read by the helper (fetch_buffer); spare_cap + PAD bytes (swapped with buf, cap)
    size_t spare_cap;
    unsigned share;  // where the main thread's part ends, in 64ths of the buffer

    char *field;  // an unquoted copy of a quoted field
    size_t field_cap, field_len;  // field_len: the last quoted field's length, spaces inside the quotes kept

    lossy *lossy;  // per kept column
    uint32_t *big_cols, nbig_cols;  // the columns with a value above 2^24, in order of discovery
    // The record's values above 2^24, missing values and cut time, counted
    // once it is whole: a record cut by the buffer's end is parsed again.
    struct big_pending { uint32_t k; const char *s, *at; size_t n; } *pend;
    uint32_t npend;
    const char *rec_truncated;
    uint64_t truncated, truncated_line;  // times with digits below a microsecond
    uint64_t repeat_line;  // the first time repeated within a series
    uint32_t repeat_field; // the column that changed there (a categorical one first); UINT32_MAX: none
    bool key_padded;       // the record's series id had spaces around it, dropped as padding
    bool header_one_line;  // no quoted name spans lines: data starts at line 2
    bool quoted_seen;      // a record had a quoted field: buffers are looked through for quotes before a split
    uint64_t padded_line;  // the current series' first row whose id had them; 0: none

    sf_pack_writer *w;
    sf_csv_pack_stats st;

    // Several inputs (sf_csv_pack_files): NULL for one CSV. Lines kept for
    // rows and messages are then origins (line_base + line).
    sf_sources *src;
    size_t src_at;      // the source being read
    int64_t line_base;  // sf_origin_make(src_at, 0)
    bool per_file;      // --series-per-file
    // Series whose rows interleave: once one comes back, every row is held
    // here and checked in series order after the last (regroup_finish).
    sf_regroup *rg;
    uint32_t cur_index, nindex;  // the current row's series and the series seen, in order of first appearance
    const sf_series_id **by_index;  // the merge's names of the series
    sf_pack_writer_opts wo;      // the writer's options, to open it again for the regrouped rows
    uint32_t cat_cols[64];
} csv;

__attribute__((format(printf, 4, 5))) static void append(char *out, size_t cap, size_t *len, const char *fmt, ...);

// "LINE", or "LINE of FILE" for an origin in another source than the one
// being read: a line kept for a message (line_base + line).
static const char *origin_text(const csv *c, uint64_t v, char *buf, size_t cap) {
    uint64_t src = c->src ? v >> SF_ORIGIN_LINE_BITS : 0, line = c->src ? v & SF_MAX_SOURCE_LINE : v;
    if (c->src && src != c->src_at) snprintf(buf, cap, "%llu of %s", (unsigned long long)line, sf_sources_path(c->src, src));
    else snprintf(buf, cap, "%llu", (unsigned long long)line);
    return buf;
}

// "LINE", or "LINE of FILE" with several inputs: a line a note names once
// every file is read.
static const char *note_line(const csv *c, uint64_t v, char *buf, size_t cap) {
    if (!c->src) snprintf(buf, cap, "%llu", (unsigned long long)v);
    else snprintf(buf, cap, "%llu of %s", (unsigned long long)(v & SF_MAX_SOURCE_LINE),
                  sf_sources_path(c->src, v >> SF_ORIGIN_LINE_BITS));
    return buf;
}

// The inputs as a command line names them, for a command a message suggests.
static const char *inputs_text(const csv *c, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; c->src && i < sf_sources_count(c->src); i++)
        sf_shell_word(buf, cap, &len, sf_sources_path(c->src, i));
    if (c->per_file) append(buf, cap, &len, " --series-per-file");
    return c->src ? buf + (len > 0) : strcmp(c->name, "<stdin>") ? c->name : "-";
}

// Line and column (1-based, in bytes) of q, which lies in the current record.
static void where(const csv *c, const char *q, uint64_t *line, uint64_t *col) {
    const char *start = c->buf + c->pos;
    uint64_t l = c->line;
    const char *ls = start;
    for (const char *p = start; p < q; p++)
        if (*p == '\n') l++, ls = p + 1;
    *line = l;
    *col = (uint64_t)(q - ls) + 1;
}

static uint64_t where_line(const csv *c, const char *q) {
    uint64_t line, col;
    where(c, q, &line, &col);
    return line;
}

__attribute__((format(printf, 3, 4))) static int fail_at(csv *c, const char *q, const char *fmt, ...) {
    uint64_t line, col;
    where(c, q, &line, &col);
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sf_err_set(c->e, SF_EFORMAT, "%s:%llu:%llu: %s", c->name, (unsigned long long)line,
                      (unsigned long long)col, msg);
}

// fail_at for a row's checks in its series: at q in the record being
// parsed, or, for a row regrouped after the whole input was read (q NULL),
// at its line.
__attribute__((format(printf, 4, 5))) static int fail_row(csv *c, const char *q, int64_t line, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (q) return fail_at(c, q, "%s", msg);
    if (c->src)  // an origin: the file and its line
        return sf_err_set(c->e, SF_EFORMAT, "%s:%llu: %s", sf_sources_path(c->src, (uint64_t)line >> SF_ORIGIN_LINE_BITS),
                          (unsigned long long)((uint64_t)line & SF_MAX_SOURCE_LINE), msg);
    return sf_err_set(c->e, SF_EFORMAT, "%s:%llu: %s", c->name, (unsigned long long)line, msg);
}

const char *sf_show(const char *s, size_t n, char *out, size_t cap) {
    size_t k = 0, i = 0;
    // Room for the widest piece (4 bytes) and then "..." and the NUL.
    for (; i < n && k + 8 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch != 0x7f) out[k++] = (char)ch;
        else k += (size_t)snprintf(out + k, cap - k, "\\x%02x", ch);
    }
    if (i < n) memcpy(out + k, "...", 4);
    else out[k] = 0;
    return out;
}

// Appends to out[*len, cap) as snprintf does, *len kept below cap.
__attribute__((format(printf, 4, 5))) static void append(char *out, size_t cap, size_t *len, const char *fmt, ...) {
    if (*len + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out + *len, cap - *len, fmt, ap);
    va_end(ap);
    *len = n < 0 ? *len : *len + (size_t)n < cap ? *len + (size_t)n : cap - 1;
}

static const char *const unit_names[] = {"s", "ms", "us", "ns"};  // SF_TIME_EPOCH_S ..

// How a command a message suggests differs from the one that ran.
typedef struct {
    const char *series_column;  // NULL: as given
    const char *time_column;    // NULL: as given
    const char *time_unit;      // NULL: as given
    const char *drop;           // a column to leave out as well; NULL: none
    const char *uncategorical;  // a column --categorical no longer names; NULL: none
} again_edit;

// The pack command that ran, with ed's changes, into out: the options that
// decide what is packed (not those of speed or size). false when it does not
// fit whole (names of kilobytes): then no command is better than a cut one.
static bool again(const csv *c, const again_edit *ed, char *out, size_t cap) {
    const sf_csv_pack_opts *o = c->o;
    size_t len = 0;
    bool whole = true;
    // pack --append-to (o->header set): the file's layout decides the
    // options, and the output here is its spool, no file to name.
    if (!cap || o->header) return false;
    out[0] = 0;
    append(out, cap, &len, "seqfeed pack");
    if (c->src) {
        char in[4096];
        append(out, cap, &len, " %s", inputs_text(c, in, sizeof in));
        whole &= strlen(in) + 1 < sizeof in;
    } else {
        sf_shell_word(out, cap, &len, strcmp(c->name, "<stdin>") ? c->name : "-");
    }
    sf_shell_word(out, cap, &len, "-o");
    sf_shell_word(out, cap, &len, c->out ? c->out : "OUT.sfpack");
    char list[4096], name[4096];
    size_t n = 0;
    list[0] = 0;
    if (o->columns) {  // the kept list without the dropped column
        for (const char *p = o->columns; p;)
            if (sf_list_next(&p, name, sizeof name)) whole = false, p = NULL;
            else if (!ed->drop || strcmp(name, ed->drop)) whole &= sf_list_append(list, sizeof list, &n, name) == 0;
        sf_shell_word(out, cap, &len, "--columns");
        sf_shell_word(out, cap, &len, list);
    } else if (o->drop_columns || ed->drop) {
        n = (size_t)snprintf(list, sizeof list, "%s", o->drop_columns ? o->drop_columns : "");
        whole &= n < sizeof list;
        if (ed->drop && n < sizeof list) whole &= sf_list_append(list, sizeof list, &n, ed->drop) == 0;
        sf_shell_word(out, cap, &len, "--drop-columns");
        sf_shell_word(out, cap, &len, list);
    }
    const char *series = ed->series_column ? ed->series_column : o->series_column;
    if (series) sf_shell_word(out, cap, &len, "--series-column"), sf_shell_word(out, cap, &len, *series ? series : "none");
    const char *time = ed->time_column ? ed->time_column : o->time_column;
    if (time) sf_shell_word(out, cap, &len, "--time-column"), sf_shell_word(out, cap, &len, *time ? time : "none");
    const char *unit = ed->time_unit ? ed->time_unit : o->time_unit > SF_TIME_ISO ? unit_names[o->time_unit - SF_TIME_EPOCH_S] : NULL;
    if (unit && time && *time) sf_shell_word(out, cap, &len, "--time-unit"), sf_shell_word(out, cap, &len, unit);
    if (o->categorical) {
        n = 0, list[0] = 0;
        for (const char *p = o->categorical; p;)
            if (sf_list_next(&p, name, sizeof name)) whole = false, p = NULL;
            else if (!ed->uncategorical || strcmp(name, ed->uncategorical))
                whole &= sf_list_append(list, sizeof list, &n, name) == 0;
        if (n) sf_shell_word(out, cap, &len, "--categorical"), sf_shell_word(out, cap, &len, list);
    }
    if (o->delimiter) {
        char d[2] = {o->delimiter, 0};
        sf_shell_word(out, cap, &len, "--delimiter"), sf_shell_word(out, cap, &len, o->delimiter == '\t' ? "tab" : d);
    }
    static const char *const missing[] = {NULL, "drop", "ffill"};
    if (missing[o->missing]) sf_shell_word(out, cap, &len, "--missing"), sf_shell_word(out, cap, &len, missing[o->missing]);
    return whole && len + 1 < cap;
}

// pack --append-to keeps the file's layout (again gives no command there):
// the options a fallback hint names say when they apply.
static const char *first_pack(const csv *c) {
    return c->o->header ? ", when a file is first packed, not when rows are appended to it" : "";
}

// Rewrites the control characters of msg (a column name or an id in it)
// as \n, \t, \r or \xNN, so that a message stays one line; cut to cap.
static void escape_controls(char *msg, size_t cap) {
    char in[2048];
    size_t n = strlen(msg);
    if (n >= sizeof in) n = sizeof in - 1;
    memcpy(in, msg, n);
    sf_escape_controls(msg, cap, in, n);
}

// Reads more input behind the unparsed tail buf[pos, len). Returns 0, or
// 1 at end of input.
// The caller's progress callback (o->progress), which may stop the pack.
static int progress(csv *c, uint64_t rows, uint64_t bytes) {
    if (!c->o->progress || !c->o->progress(c->o->progress_arg, rows, bytes)) return 0;
    return sf_err_set(c->e, SF_EINVAL, "%s: stopped by the progress callback after %llu rows", c->name,
                      (unsigned long long)rows);
}

// The bytes from c->pos on moved to the buffer's start.
static void compact(csv *c) {
    if (c->pos == 0) return;
    memmove(c->buf, c->buf + c->pos, c->len - c->pos);
    c->consumed += c->pos;
    c->len -= c->pos;
    c->pos = 0;
}

static int refill(csv *c) {
    if (c->fd < 0 || c->eof) return 1;
    compact(c);
    if (c->len >= c->cap) {  // one record fills the buffer: grow it
        if (c->cap >= BUF_MAX)
            return sf_err_set(c->e, SF_EFORMAT, "%s:%llu: record longer than %u MiB", c->name,
                              (unsigned long long)c->line, BUF_MAX >> 20);
        char *b = realloc(c->buf, 2 * c->cap + PAD);
        if (!b) return sf_err_set(c->e, SF_ENOMEM, "%s: out of memory for a long record", c->name);
        c->buf = b;
        c->cap *= 2;
    }
    while (c->len < c->cap) {
        ssize_t k = read(c->fd, c->buf + c->len, c->cap - c->len);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return sf_err_errno(c->e, SF_EIO, errno, "%s: read failed", c->name);
        if (k == 0) {
            c->eof = true;
            break;
        }
        c->len += (size_t)k;
    }
    memset(c->buf + c->len, 0, PAD);
    return progress(c, c->st.rows, c->consumed + c->pos);
}

enum { REC_OK = 1, REC_MORE = 2, REC_END = 3 };  // errors are negative

bool sf_csv_delimiter_ok(char d) {
    return d && !strchr("0123456789.+-eE \"\r\n", d);
}

static bool is_space(char ch, char delim) { return ch == ' ' || (ch == '\t' && delim != '\t'); }

// Finds the next field at *pp. Sets [*fs, *fe) to its text without
// surrounding spaces (unquoted into c->field when quoted), *at to where it
// starts in the input, and *pp to the delimiter, line end or end of input
// behind it. Returns REC_MORE when the
// field is not complete in the buffer.
static int next_field(csv *c, const char **pp, const char **fs, const char **fe, bool *quoted, const char **at) {
    const char *p = *pp, *end = c->buf + c->len;
    char d = c->delim;
    while (p < end && is_space(*p, d)) p++;
    *at = p;
    *quoted = p < end && *p == '"';
    if (!*quoted) {
        const char *s = p;
        p = c->field_end(p, end, d);
        if (p == end && !c->eof) return REC_MORE;
        const char *t = p;
        if (t > s && t[-1] == '\r' && (t == end || *t == '\n')) t--;
        while (t > s && is_space(t[-1], d)) t--;
        *fs = s;
        *fe = t;
        *pp = p;
        return 0;
    }
    const char *open = p++;
    size_t n = 0;
    for (;;) {
        if (p == end) {
            if (!c->eof) return REC_MORE;
            return fail_at(c, open, "quoted field is not closed (expected a closing '\"')");
        }
        if (*p == '"') {
            if (p + 1 == end && !c->eof) return REC_MORE;
            if (p + 1 < end && p[1] == '"') p++;  // "" is a quote inside quotes
            else break;
        }
        if (n + 1 >= c->field_cap) {
            size_t cap = c->field_cap ? 2 * c->field_cap : 256;
            char *f = realloc(c->field, cap);
            if (!f) return sf_err_set(c->e, SF_ENOMEM, "%s: out of memory", c->name);
            c->field = f;
            c->field_cap = cap;
        }
        c->field[n++] = *p++;
    }
    p++;  // the closing quote
    // A CR as the buffer's last byte may be the first half of a CRLF; at the
    // end of input it ends the line.
    while (p < end && (is_space(*p, d) || (*p == '\r' && (p + 1 == end || p[1] == '\n')))) p++;
    if (p == end && !c->eof) return REC_MORE;
    if (p < end && *p != d && *p != '\n')
        return fail_at(c, p, "expected a delimiter or the end of the line after a closing quote");
    c->field_len = n;
    size_t s = 0;
    while (s < n && is_space(c->field[s], d)) s++;
    while (n > s && is_space(c->field[n - 1], d)) n--;
    const char *text = c->field ? c->field : open;  // "" can come before c->field exists
    *fs = text + s;
    *fe = text + n;
    *pp = p;
    return 0;
}

static bool is_blank_line(const csv *c, const char *p, const char **eol) {
    const char *end = c->buf + c->len;
    while (p < end && (is_space(*p, c->delim) || *p == '\r')) p++;
    *eol = p;
    return p == end || *p == '\n';
}

static bool missing_token(const char *s, size_t n) {
    static const char *const tokens[] = {"na", "n/a", "nan", "-nan", "+nan", "null", "none", "inf", "+inf", "-inf",
                                         "infinity", "+infinity", "-infinity"};
    if (n == 0) return true;
    for (size_t i = 0; i < sizeof tokens / sizeof *tokens; i++)
        if (strlen(tokens[i]) == n && strncasecmp(tokens[i], s, n) == 0) return true;
    return false;
}

// What a text column looks like, from the rows a message can see.
typedef struct {
    uint64_t rows, text, changes, numbers;
    uint32_t ndistinct;
    bool many, times;  // more distinct values than kept; every text value a date or time
    bool other_dates;  // every text value a date that is not year first
    char distinct[32][48];
    char prev[48];
    bool category;  // suggested for --categorical
    bool dropped;   // suggested for --drop-columns
    uint64_t commas;        // text values that are numbers with a decimal comma (1,5)
    const char *comma_at;   // where the first is
    const char *bad_time;  // times: where the first is that sf_time_parse refuses, and its text
    char bad_text[64];
    // With a time column: each distinct value's last time, and whether the
    // rows of one value keep time order while the column's values
    // interleave (a time repeats or goes back where the value changes).
    int64_t last_time[32], prev_time;
    bool time_seen[32], has_prev, unsorted, interleaved;
    uint32_t prev_d;
} text_kind;

// "2012-01-01", "2010-01-01T01:00:00", "2010/01/01 01:00": a year-first
// date first, as sf_time_parse reads it.
static bool looks_like_time(const char *s, size_t n) {
    static const char pat[] = "dddd-dd-dd";
    if (n < 10 || (s[4] != '-' && s[4] != '/') || s[7] != s[4]) return false;
    for (int i = 0; i < 10; i++)
        if (pat[i] == 'd' && (unsigned)(s[i] - '0') >= 10) return false;
    return n == 10 || s[10] == 'T' || s[10] == 't' || s[10] == ' ';
}

// "2012/1/5": four digits and a separator first.
static bool year_first(const char *s) {
    for (int i = 0; i < 4; i++)
        if ((unsigned)(s[i] - '0') >= 10) return false;
    return s[4] == '-' || s[4] == '/';
}

// "01/31/2012", "31.01.2012", "Jan 31 2012": a date that is not year
// first, which seqfeed does not guess the order of.
static bool looks_like_other_date(const char *s, size_t n) {
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    size_t run = 0, most = 0, seps = 0;
    for (size_t i = 0; i < n; i++) {
        run = (unsigned)(s[i] - '0') < 10 ? run + 1 : 0;
        most = run > most ? run : most;
        seps += s[i] == '/' || s[i] == '.' || s[i] == '-';
    }
    bool month = false;
    for (int m = 0; m < 12 && n >= 3; m++) month |= !strncasecmp(s, months + 3 * m, 3);
    return most == 4 && (seps == 2 || month);
}

// An integer epoch time: digits with an optional sign, any int64 (19
// digits: nanoseconds after 2001-09-09). 0, SF_EFORMAT when not an integer,
// SF_ERANGE beyond int64.
static int parse_epoch(const char *s, size_t n, int64_t *out) {
    bool neg = n && s[0] == '-';
    size_t i = n && (s[0] == '-' || s[0] == '+');
    if (i == n) return SF_EFORMAT;
    while (i + 1 < n && s[i] == '0') i++;
    uint64_t v = 0;
    for (size_t k = i; k < n; k++) {
        if ((unsigned)(s[k] - '0') >= 10) return SF_EFORMAT;
        if (k - i < 19) v = v * 10 + (uint64_t)(s[k] - '0');  // below 10^19 < 2^64
    }
    if (n - i > 19 || v > (uint64_t)INT64_MAX + neg) return SF_ERANGE;
    *out = neg ? (v ? -(int64_t)(v - 1) - 1 : 0) : (int64_t)v;
    return 0;
}

// The epoch times each unit takes: the instants ISO-8601 writes with four
// digits of year, 0000-01-01T00:00Z to 9999-12-31T23:59:59.999999999Z (as
// far as int64 reaches), so that a count in the wrong unit (microseconds
// given as seconds) is caught, and microseconds never overflow.
static const int64_t epoch_lo[] = {-62167219200ll, -62167219200000ll, -62167219200000000ll, INT64_MIN};
static const int64_t epoch_hi[] = {253402300799ll, 253402300799999ll, 253402300799999999ll, INT64_MAX};

static bool epoch_fits(enum sf_time_kind kind, int64_t t) {
    return t >= epoch_lo[kind - SF_TIME_EPOCH_S] && t <= epoch_hi[kind - SF_TIME_EPOCH_S];
}

// Microseconds of an epoch time that fits.
static int64_t epoch_us(enum sf_time_kind kind, int64_t t) {
    switch (kind) {
    case SF_TIME_EPOCH_S: return t * 1000000;
    case SF_TIME_EPOCH_MS: return t * 1000;
    case SF_TIME_EPOCH_NS: return t / 1000 - (t % 1000 < 0);
    default: return t;
    }
}

// A kept value of 2^24 (float32's last exact integer in a row) or more in magnitude,
// whose text is s[0, n): float32 may have changed an integer. at: where it
// is, for its line.
static void big_value(const csv *c, lossy *l, float v, const char *s, size_t n, const char *at) {
    l->big++;
    size_t i = n && (s[0] == '-' || s[0] == '+'), digits = n;
    while (i + 1 < n && s[i] == '0') i++;
    // Digits, and zeros after a point (20200101.0, as exports of floats
    // write integers).
    const char *point = memchr(s + i, '.', n - i);
    if (point) digits = (size_t)(point - s);
    bool integer = i < digits;
    for (size_t k = i; k < digits; k++) integer &= (unsigned)(s[k] - '0') < 10;
    for (size_t k = digits + 1; k < n; k++) integer &= s[k] == '0';
    int64_t us;
    unsigned parts;
    // A date as 20200101: what --time-column reads as ISO-8601's basic form.
    l->not_date |= !integer || n != 8 || sf_time_parse(s, n, &us, &parts) != 0;
    l->not_int |= !integer || point || digits - i > 18;
    if (!integer) return;  // a fraction: float32 rounds those anyway
    long double exact = 0;
    for (size_t k = i; k < digits; k++) exact = exact * 10 + (s[k] - '0');  // exact below 2^64
    if (digits - i <= 18) {  // below 10^18: an int64
        int64_t whole = (int64_t)exact * (s[0] == '-' ? -1 : 1);
        l->lo = l->ranged && l->lo < whole ? l->lo : whole;
        l->hi = l->ranged && l->hi > whole ? l->hi : whole;
        l->ranged = true;
        // Exactly, not as float32 (20200103 and 20200104 are one float).
        if (l->has_prev && whole <= l->prev) l->back = true;
        l->prev = whole, l->has_prev = true;
    }
    long double change = fabsl(exact - fabsl((long double)v));
    if (change == 0) return;
    if (!l->changed++) {
        uint64_t col;
        where(c, at, &l->first_line, &col);
        l->first_line += (uint64_t)c->line_base;  // an origin
        if (n < sizeof l->first) snprintf(l->first, sizeof l->first, "%.*s", (int)n, s);
        else snprintf(l->first, sizeof l->first, "%.*s...", (int)sizeof l->first - 4, s);  // cut: said so
        l->first_stored = v;
    }
    if ((double)change > l->max_change) l->max_change = (double)change;
}

// The main thread's record of a value above 2^24 in kept column k.
static void big_main(csv *c, uint32_t k, const char *s, size_t n, const char *at) {
    c->pend[c->npend++] = (struct big_pending){k, s, at, n};
}

// Counts the whole record's values above 2^24, missing values and cut time.
static void record_counts(csv *c) {
    for (uint32_t i = 0; i < c->npend; i++) {
        const struct big_pending *b = &c->pend[i];
        if (!c->lossy[b->k].big) c->big_cols[c->nbig_cols++] = b->k;
        big_value(c, &c->lossy[b->k], c->row[b->k], b->s, b->n, b->at);
    }
    for (uint32_t k = 0; c->rec_missing && k < c->nkeep; k++) c->lossy[k].missing += isnan(c->row[k]);
    if (c->rec_truncated && !c->truncated++) {
        where(c, c->rec_truncated, &c->truncated_line, &(uint64_t){0});
        c->truncated_line += (uint64_t)c->line_base;  // an origin
    }
}

// "1,5", "-0,25": a number with a decimal comma, as ';' files of some
// locales write them.
static bool decimal_comma(const char *s, size_t n) {
    size_t i = n && (s[0] == '-' || s[0] == '+'), comma = 0, digits = 0;
    for (; i < n; i++) {
        if (s[i] == ',' && digits && !comma) comma = i;
        else if ((unsigned)(s[i] - '0') < 10) digits++;
        else return false;
    }
    return comma && comma + 1 < n;
}

// A record of other than ncsv fields that reached a text check first (a
// delimiter inside a value, 2020-01-01T00:00:00,5Z): said as what it is,
// with where a value may have been split. 0 when the count is right.
static int ragged_record(csv *c, const char *row) {
    const char *p = row, *end = c->buf + c->len, *split = NULL;
    uint32_t nf = 0;
    char prev_last = 0;
    for (;;) {
        const char *s, *e, *at;
        bool quoted;
        if (next_field(c, &p, &s, &e, &quoted, &at)) return 0;  // the parser says what is wrong
        if (nf++ && !split && !quoted && e > s && (unsigned)(prev_last - '0') < 10 && (unsigned)(s[0] - '0') < 10)
            split = at;  // "5" right behind a digit: one number cut at a decimal comma?
        prev_last = e > s && !quoted ? e[-1] : 0;
        if (p >= end || *p == '\n') break;
        p++;
    }
    if (nf == c->ncsv) return 0;
    char hint[160] = "";
    if (split && c->delim == ',') {
        uint64_t l, col;
        where(c, split, &l, &col);
        snprintf(hint, sizeof hint, " (at column %llu a number seems cut at a decimal comma)", (unsigned long long)col);
    }
    return fail_at(c, row, "this row has %u fields, the header %u (ragged row): a value holds the delimiter '%c'%s? "
                   "Quote such values (\"...\") or write them without it", nf, c->ncsv, c->delim, hint);
}

// The carriage return at cr, not a CRLF's, said as what it is: CRs before
// a line feed (\r\r\n) or lines ending in a CR alone, each with the
// command that converts the file.
static int cr_fail(csv *c, const char *cr) {
    const char *p = cr, *end = c->buf + c->len;
    while (p < end && *p == '\r') p++;
    if (p < end && *p == '\n')
        return fail_at(c, cr, "a line ends with \\r\\r\\n, a carriage return too many; expected \\n or \\r\\n line "
                       "ends (convert it: tr -d '\\r' < IN.csv > OUT.csv)");
    return fail_at(c, cr, "a line ends with a carriage return alone (an old Mac file); expected \\n or \\r\\n line "
                   "ends (convert it: tr '\\r' '\\n' < IN.csv > OUT.csv)");
}

// A carriage return in the row at first other than its CRLF's, outside
// quotes: a \r\r\n line end, or lines ending in a CR alone, which the
// checks of a value would report as text ("2\x0d", with a command that
// keeps it) or as a ragged row. 0 when there is none.
static int stray_cr(csv *c, const char *first) {
    const char *end = c->buf + c->len, *nl = memchr(first, '\n', (size_t)(end - first)), *stop = nl ? nl : end;
    if (memchr(first, '"', (size_t)(stop - first))) return 0;  // a CR in quotes is a value's own
    const char *cr = memchr(first, '\r', (size_t)(stop - first));
    return !cr || (nl && cr + 1 == nl) ? 0 : cr_fail(c, cr);
}

// A value not a number in column f: one message for every text column the
// buffered rows show, what each looks like, and the command line that
// packs the file.
static int text_columns(csv *c, const char *at, uint32_t f, const char *fs, size_t fn) {
    text_kind *k = calloc(c->ncsv, sizeof *k);
    if (!k) return sf_err_set(c->e, SF_ENOMEM, "%s: out of memory", c->name);
    uint32_t *row_d = malloc(c->ncsv * sizeof *row_d);  // each text field's distinct value in this row
    if (!row_d) {
        free(k);
        return sf_err_set(c->e, SF_ENOMEM, "%s: out of memory", c->name);
    }
    const char *p = at, *end = c->buf + c->len;
    while (p > c->buf && p[-1] != '\n') p--;  // the start of this row
    const char *first = p;
    int ragged = stray_cr(c, first);
    if (!ragged) ragged = ragged_record(c, first);
    if (ragged) {
        free(k), free(row_d);
        return ragged;
    }
    for (int row = 0; row < 2000 && p < end; row++) {
        int64_t time = 0;
        bool timed = false;
        for (uint32_t j = 0; j < c->ncsv; j++) {
            const char *s, *e2, *where;
            bool quoted;
            row_d[j] = UINT32_MAX;
            if (next_field(c, &p, &s, &e2, &quoted, &where)) goto done;
            size_t n = (size_t)(e2 - s);
            float v;
            text_kind *t = &k[j];
            t->rows++;
            bool number = sf_parse_float(s, n, &v) == 0;
            t->numbers += number;
            unsigned parts;
            if (j == c->time_field) {
                timed = c->time_kind == SF_TIME_ISO ? sf_time_parse(s, n, &time, &parts) == 0
                                                    : parse_epoch(s, n, &time) == 0 && epoch_fits(c->time_kind, time);
                if (!timed && !t->bad_time && c->time_kind == SF_TIME_ISO && !missing_token(s, n)) {
                    t->bad_time = where;  // the command would stop there
                    snprintf(t->bad_text, sizeof t->bad_text, "%.*s", (int)(n < 63 ? n : 63), s);
                }
            }
            if (c->role[j] == ROLE_KEEP && !number && !missing_token(s, n)) {
                if (!t->text++) t->times = t->other_dates = true;
                t->times &= looks_like_time(s, n);
                if (t->times && !t->bad_time && sf_time_parse(s, n, &(int64_t){0}, &parts)) {
                    t->bad_time = where;
                    snprintf(t->bad_text, sizeof t->bad_text, "%.*s", (int)(n < 63 ? n : 63), s);
                }
                t->other_dates &= looks_like_other_date(s, n);
                if (decimal_comma(s, n) && !t->commas++) t->comma_at = where;
                char val[48];
                snprintf(val, sizeof val, "%.*s", (int)(n < 47 ? n : 47), s);
                if (t->text > 1 && strcmp(val, t->prev)) t->changes++;
                memcpy(t->prev, val, sizeof val);
                uint32_t d = 0;
                while (d < t->ndistinct && strcmp(t->distinct[d], val)) d++;
                if (d == t->ndistinct && !(t->many |= d == 32)) memcpy(t->distinct[t->ndistinct++], val, sizeof val);
                if (d < 32) row_d[j] = d;
            }
            if (p >= end || *p == '\n') {
                if (j + 1 < c->ncsv) goto done;  // a short row: stop looking
                break;
            }
            p++;
        }
        for (uint32_t j = 0; timed && j < c->ncsv; j++) {
            text_kind *t = &k[j];
            uint32_t d = row_d[j];
            if (d == UINT32_MAX) continue;
            t->unsorted |= t->time_seen[d] && time < t->last_time[d];
            t->interleaved |= t->has_prev && d != t->prev_d && time <= t->prev_time;
            t->last_time[d] = t->prev_time = time;
            t->time_seen[d] = t->has_prev = true;
            t->prev_d = d;
        }
        if (p < end && *p == '\n') p++;
    }
done:;
    free(row_d);
    bool quotes = memchr(first, '"', (size_t)(p - first)) != NULL;
    // The command keeps what was given: the fix is the whole command line.
    char list[1024] = "", drop[1024] = "", series[256] = "", cats[512] = "";
    size_t ln = 0, dn = 0, cn = 0;
    uint32_t ntext = 0, bad_time = UINT32_MAX, comma_col = UINT32_MAX;
    const char *series_name = c->series_field == UINT32_MAX ? NULL : c->names[c->series_field], *time_name = NULL;
    if (series_name) snprintf(series, sizeof series, " --series-column %s", series_name);
    if (c->o->time_column) time_name = c->o->time_column[0] ? c->o->time_column : "none";
    if (c->o->categorical) cn = (size_t)snprintf(cats, sizeof cats, "%s", c->o->categorical);
    if (c->o->drop_columns) dn = (size_t)snprintf(drop, sizeof drop, "%s", c->o->drop_columns);
    k[f].text += k[f].text == 0;  // the value that failed counts, whatever the scan saw
    for (uint32_t j = 0; j < c->ncsv; j++) {
        text_kind *t = &k[j];
        if (!t->text) continue;
        ntext++;
        char what[512];
        // Series ids come in one run each (pack refuses a series that
        // comes back), and repeat.
        bool id = !t->many && !t->times && t->changes + 1 == t->ndistinct && t->ndistinct < t->text;
        // Ids of series whose rows interleave: at one time a row of each.
        bool mixed = !t->many && !t->times && !t->numbers && !t->other_dates && t->ndistinct > 1 && t->interleaved &&
                     !t->unsorted && !series_name;
        char why[256];
        uint64_t bl = 0, bc = 0;
        if (t->bad_time) {
            sf_time_why(t->bad_text, strlen(t->bad_text), why, sizeof why);
            where(c, t->bad_time, &bl, &bc);
        }
        if (t->commas == t->text && c->delim != ',') {
            snprintf(what, sizeof what, "numbers with a decimal comma, such as \"%s\" at line %llu: pack reads a "
                     "decimal point", t->distinct[0], (unsigned long long)where_line(c, t->comma_at));
            if (comma_col == UINT32_MAX) comma_col = j;
        } else if (t->numbers) snprintf(what, sizeof what, "numbers, and text such as \"%s\" in some rows", t->distinct[0]);
        else if (t->times && t->bad_time)
            snprintf(what, sizeof what, "dates or times, but \"%s\" at line %llu column %llu is not one: %s",
                     t->bad_text, (unsigned long long)bl, (unsigned long long)bc, why);
        else if (t->times) snprintf(what, sizeof what, "dates or times");
        else if (t->other_dates && year_first(t->distinct[0]))
            snprintf(what, sizeof what, "dates such as \"%s\", without two-digit months and days: pack reads times "
                     "as 2012-01-05 or 2012/01/05", t->distinct[0]);
        else if (t->other_dates)
            snprintf(what, sizeof what, "dates such as \"%s\", not year first: pack reads times as 2012-01-31 or "
                     "2012/01/31", t->distinct[0]);
        else if (id) snprintf(what, sizeof what, "text ids in long runs, %u distinct: a series column?", t->ndistinct);
        else if (mixed)
            snprintf(what, sizeof what, "ids of %u series whose rows interleave (a time repeats where the id changes): "
                     "a series column (pack regroups its rows)", t->ndistinct);
        else if (t->ndistinct == 1) snprintf(what, sizeof what, "one text value");
        else if (!t->many) snprintf(what, sizeof what, "a category of %u values, mixed", t->ndistinct);
        else snprintf(what, sizeof what, "text with many distinct values");
        ln += (size_t)snprintf(list + ln, ln < sizeof list ? sizeof list - ln : 0, "%s\"%s\" (%s)", ln ? ", " : "",
                               c->names[j], what);
        bool no_time = c->o->time_column && !c->o->time_column[0];
        if (t->commas == t->text && c->delim != ',') {
            // numbers, once written with a point: kept
        } else if ((id || mixed) && !series_name) {
            series_name = c->names[j];
            snprintf(series, sizeof series, " --series-column %s", c->names[j]);
        } else if (t->times && c->time_field == UINT32_MAX && !no_time && !c->o->time_column && !time_name) {
            time_name = c->names[j];
            if (t->bad_time) bad_time = j;
        } else if (!t->many && !t->times && !t->other_dates && !t->numbers && t->ndistinct > 1) {
            sf_list_append(cats, sizeof cats, &cn, c->names[j]);  // a category: one-hot inputs
            t->category = true;
        } else {
            sf_list_append(drop, sizeof drop, &dn, c->names[j]);  // a list too long for a message is cut
            t->dropped = true;
        }
    }
    // The columns the command would pack: none, and it would only fail.
    uint32_t left = 0;
    for (uint32_t j = 0; j < c->ncsv; j++)
        left += (c->role[j] == ROLE_KEEP || c->role[j] == ROLE_CATEGORY) && !k[j].dropped &&
                !(series_name && !strcmp(series_name, c->names[j])) && !(time_name && !strcmp(time_name, c->names[j]));
    char tmp[96], fix[1600];
    static const char *const missing[] = {"", " --missing drop", " --missing ffill"};
    // With --columns the kept list is the user's: suggest it without the text columns.
    if (c->o->columns) {
        char keep[1024] = "";
        size_t kn = 0;
        for (uint32_t j = 0; j < c->ncsv; j++)
            if ((c->role[j] == ROLE_CATEGORY || (c->role[j] == ROLE_KEEP && (!k[j].text || k[j].category))) &&
                sf_list_append(keep, sizeof keep, &kn, c->names[j]))
                break;
        snprintf(fix, sizeof fix, " --columns '%s'%s%s%s%s%s%s%s", keep, series, time_name ? " --time-column " : "",
                 time_name ? time_name : "", cn ? " --categorical '" : "", cats, cn ? "'" : "",
                 missing[c->o->missing]);
    } else {
        snprintf(fix, sizeof fix, "%s%s%s%s%s%s%s%s%s%s", series, time_name ? " --time-column " : "",
                 time_name ? time_name : "", cn ? " --categorical '" : "", cats, cn ? "'" : "",
                 dn ? " --drop-columns '" : "", drop, dn ? "'" : "", missing[c->o->missing]);
    }
    char inputs[1024];
    const char *in = inputs_text(c, inputs, sizeof inputs);
    // What must happen before the command can work: a time corrected.
    char first_step[1200] = "";
    if (bad_time == UINT32_MAX && c->time_field != UINT32_MAX && k[c->time_field].bad_time) bad_time = c->time_field;
    if (bad_time != UINT32_MAX) {
        char why[256];
        uint64_t bl, bc;
        sf_time_why(k[bad_time].bad_text, strlen(k[bad_time].bad_text), why, sizeof why);
        where(c, k[bad_time].bad_time, &bl, &bc);
        if (bad_time == c->time_field)  // not in the list of text columns: said here
            snprintf(first_step, sizeof first_step, " Correct \"%s\" in the time column \"%s\" first (line %llu "
                     "column %llu: %s); then pack it with:", k[bad_time].bad_text, c->names[bad_time],
                     (unsigned long long)bl, (unsigned long long)bc, why);
        else
            snprintf(first_step, sizeof first_step, " Correct line %llu column %llu first; then pack it with:",
                     (unsigned long long)bl, (unsigned long long)bc);
    }
    char command[3200];
    if (comma_col != UINT32_MAX) {
        // Decimal commas first: the rest of the advice may change with them.
        size_t len = 0, n = strlen(c->name);
        append(command, sizeof command, &len, " Write the numbers with a decimal point first");
        if (strcmp(c->name, "<stdin>") && !quotes && !c->src) {
            char copy[512];
            snprintf(copy, sizeof copy, "%.*s-point.csv", (int)(n > 4 && !strcmp(c->name + n - 4, ".csv") ? n - 4 : n),
                     c->name);
            append(command, sizeof command, &len, ": sed 's/\\([0-9]\\),\\([0-9]\\)/\\1.\\2/g'");
            sf_shell_word(command, sizeof command, &len, c->name);
            append(command, sizeof command, &len, " >");
            sf_shell_word(command, sizeof command, &len, copy);
        }
        append(command, sizeof command, &len, "; then pack that copy (pack says what else it needs, if anything)");
    } else if (!left) {
        snprintf(command, sizeof command, " No command is offered: without %s no column would be left to pack (is "
                 "'%c' the delimiter? --delimiter names another)", ntext > 1 ? "them" : "it", c->delim);
    } else {
        snprintf(command, sizeof command, "%s seqfeed pack %s -o %s%s", first_step[0] ? first_step : " Pack it with:",
                 in, c->out ? c->out : "OUT.sfpack", fix);
    }
    int rc = fail_at(c, at, "expected a number in column \"%s\", found \"%s\"; %u column%s text: %s.%s",
                     c->names[f], sf_show(fs, fn, tmp, sizeof tmp), ntext, ntext > 1 ? "s are" : " is", list, command);
    free(k);
    return rc;
}

// The common field: [-]digits[.digits] in at most 8 bytes after the sign (8
// digits, or 7 and the point), directly followed by the delimiter or the line
// end. Parsed 8 bytes at a time without a branch per character; anything
// else (and the rare midpoint case) returns false and takes the general path.
static inline bool fast_number(const char *q, const char *end, char delim, float *out, const char **after) {
    bool neg = *q == '-';
    q += neg;
    uint64_t v;
    memcpy(&v, q, 8);
    uint64_t t = v ^ 0x3030303030303030ull;  // digit bytes become 0..9
    uint64_t nondigit = (((t & 0x7f7f7f7f7f7f7f7full) + 0x7676767676767676ull) | t) & 0x8080808080808080ull;
    unsigned k1 = nondigit ? (unsigned)__builtin_ctzll(nondigit) >> 3 : 8, len, n;
    int e10 = 0;
    uint64_t digits;
    if (k1 < 8 && q[k1] == '.') {
        // The digits after the point end at the next non-digit, or fill the
        // word: then byte 8 must end the number (checked below).
        uint64_t rest = nondigit & (nondigit - 1);
        len = rest ? (unsigned)__builtin_ctzll(rest) >> 3 : 8;
        uint64_t below = (1ull << (8 * k1)) - 1;
        digits = (t & below) | ((t >> 8) & ~below & ((1ull << (8 * (len - 1))) - 1));
        n = len - 1;
        e10 = -(int)(len - 1 - k1);
    } else {
        len = n = k1;
        digits = k1 < 8 ? t & ((1ull << (8 * k1)) - 1) : t;
    }
    if (n == 0 || q + len >= end) return false;
    unsigned text_len = len;
    char term = q[len];
    if (term == '\r' && q[len + 1] == '\n') term = '\n', len++;
    if (term != delim && term != '\n') return false;
    // Leading zero bytes pad to 8 digits, then three multiply-adds join them.
    digits <<= 8 * (8 - n);
    digits = digits * 10 + (digits >> 8);
    digits = (((digits & 0x000000ff000000ffull) * (100 + (1000000ull << 32))) +
              (((digits >> 16) & 0x000000ff000000ffull) * (1 + (10000ull << 32)))) >> 32;
    if (sf_decimal_to_float(digits, e10, (int)n, neg, q - neg, text_len + neg, out) != 0) return false;
    *after = q + len;
    return true;
}

size_t sf_utf8_valid_prefix(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned ch = s[i];
        size_t len = ch < 0x80 ? 1 : (ch >> 5) == 6 ? 2 : (ch >> 4) == 14 ? 3 : (ch >> 3) == 30 ? 4 : 0;
        if (len == 0 || i + len > n || (len == 2 && ch < 0xc2)) return i;
        uint32_t cp = ch & (0xffu >> (len + 1));
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return i;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp < 0xe000))) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
            return i;
        i += len;
    }
    return n;
}

// Any field at p: quoted, spaced, a series id, a missing value, a number the
// fast path declined. Sets *after to the delimiter or line end behind it.

// The code of a categorical field's text into *out, a new one for a text
// not seen yet.
static int category_field(csv *c, uint32_t f, const char *at, const char *s, size_t n, float *out) {
    category *g = &c->cats[c->cat_of[f]];
    uint32_t mask = 2 * SF_PACK_MAX_CATEGORY - 1, j = (uint32_t)sf_hash_bytes(s, n) & mask;
    for (; g->slots[j]; j = (j + 1) & mask) {
        const char *v = g->values[g->slots[j] - 1];
        if (strlen(v) == n && !memcmp(v, s, n)) {
            *out = (float)(g->slots[j] - 1);
            return 0;
        }
    }
    if (g->n == SF_PACK_MAX_CATEGORY)
        return fail_at(c, at, "column \"%s\" has more than %u distinct values: ids or text rather than a category "
                       "(--series-column or --drop-columns)", c->names[f], SF_PACK_MAX_CATEGORY);
    if (n > SF_PACK_MAX_CATEGORY_VALUE)
        return fail_at(c, at, "a value of categorical column \"%s\" is %zu bytes long, more than the %u a category "
                       "value may have (checkpoints keep every value)", c->names[f], n, SF_PACK_MAX_CATEGORY_VALUE);
    if (!sf_text_ok(s, n))
        return fail_at(c, at, "a value of categorical column \"%s\" must be UTF-8 text without NUL bytes", c->names[f]);
    if (!g->n) g->bytes = sf_list_item_bytes(c->names[f], strlen(c->names[f]), &g->quotes);
    size_t quotes, bytes = sf_list_item_bytes(s, n, &quotes);
    size_t list = sf_list_group_bytes(g->n + 2, g->bytes + bytes, g->quotes + quotes);
    if (list > SF_PACK_MAX_CATEGORY_LIST)
        return fail_at(c, at, "categorical column \"%s\" takes %zu bytes with this value (its distinct value %u) "
                       "as a checkpoint lists its name and values (quoted, quotes doubled), more than the %u a "
                       "checkpoint keeps for them (hint: fewer or shorter distinct values, or leave the column out "
                       "with --drop-columns)", c->names[f], list, g->n + 1, SF_PACK_MAX_CATEGORY_LIST);
    g->bytes += bytes, g->quotes += quotes;
    char **v = g->n % 64 ? g->values : realloc(g->values, (g->n + 64) * sizeof *v);
    if (!v || !(v[g->n] = strndup(s, n))) return sf_err_set(c->e, SF_ENOMEM, "%s: out of memory", c->name);
    g->values = v;
    g->slots[j] = ++g->n;
    *out = (float)(g->n - 1);
    return 0;
}

static void format_time(const csv *c, int64_t t, char *buf, size_t cap) {
    if (c->time_kind == SF_TIME_ISO) sf_time_format(buf, cap, t, c->time_parts);
    else snprintf(buf, cap, "%lld", (long long)t);
}

// Into out (cap bytes), lead followed by the unit, other than skip, that
// puts count in years 1900-2199, the coarsest first (the likeliest mistake),
// and the command that packs with it; out unchanged when none does.
static void suggest_unit(const csv *c, int64_t count, enum sf_time_kind skip, const char *lead, char *out,
                         size_t cap) {
    static const char *const words[] = {"seconds", "milliseconds", "microseconds", "nanoseconds"};
    for (int k = SF_TIME_EPOCH_S; k <= SF_TIME_EPOCH_NS; k++) {
        if (k == (int)skip || !epoch_fits((enum sf_time_kind)k, count)) continue;
        int64_t us = epoch_us((enum sf_time_kind)k, count);
        if (us < -2208988800000000ll || us >= 7258118400000000ll) continue;  // 1900-01-01 .. 2200-01-01
        char date[48];
        sf_time_format(date, sizeof date, us, SF_TIME_CLOCK | SF_TIME_SECONDS | SF_TIME_ZONE);
        size_t len = 0;
        if (c->o->header) {  // pack --append-to: the file's time kind is the CSV's to match
            snprintf(out, cap, "%s %s since 1970 it is %s; the file appended to keeps ISO-8601 times, which the "
                     "appended rows must match", lead, words[k - SF_TIME_EPOCH_S], date);
            return;
        }
        append(out, cap, &len, "%s %s since 1970 it is %s. Pack it with: ", lead, words[k - SF_TIME_EPOCH_S], date);
        if (!again(c, &(again_edit){.time_unit = unit_names[k - SF_TIME_EPOCH_S]}, out + len, cap - len))
            snprintf(out + len, cap - len, "--time-unit %s", unit_names[k - SF_TIME_EPOCH_S]);
        return;
    }
}

// sf_time_same_day reads times with the delimiter d: none of its layout's
// bytes. Compares, not strchr: the main path asks once a row.
static inline bool time_same_day_ok(char d) {
    return (unsigned)(d - '0') > 9 && d != '-' && d != '/' && d != 'T' && d != ' ' && d != ':' && d != 'Z';
}

// The record's time from the time column's field.
static int time_field(csv *c, const char *at, const char *s, size_t n) {
    char tmp[96];
    c->time_at = at;
    if (c->time_kind == SF_TIME_ISO) {
        unsigned parts;
        int rc = sf_time_parse_memo(&c->time_memo, s, n, &c->rec_time, &parts);
        if (rc == 0) {
            if (parts & SF_TIME_TRUNCATED) c->rec_truncated = at;
            c->time_parts = sf_time_parts_join(c->time_parts, parts);
            return 0;
        }
        if (missing_token(s, n) && c->o->missing == SF_MISSING_DROP) return c->rec_missing = true, 0;
        char why[256], unit[1200] = "";
        sf_time_why(s, n, why, sizeof why);
        // An integer in the first row: an epoch count, in the coarsest unit
        // that puts it in years 1900-2199.
        int64_t count;
        if (!c->st.rows && !c->nbatch && parse_epoch(s, n, &count) == 0)
            suggest_unit(c, count, SF_TIME_ISO, ". As a count of", unit, sizeof unit);
        return fail_at(c, at, "\"%s\" in the time column \"%s\" is not an ISO-8601 date or time: %s%s%s",
                       sf_show(s, n, tmp, sizeof tmp), c->names[c->time_field], why,
                       c->time_found ? " (found as the time column from its first row; --time-column none stops "
                                       "that)" : "", unit);
    }
    int rc = parse_epoch(s, n, &c->rec_time);
    if (rc == 0 && epoch_fits(c->time_kind, c->rec_time)) return 0;
    if (rc == SF_EFORMAT && missing_token(s, n) && c->o->missing == SF_MISSING_DROP) return c->rec_missing = true, 0;
    if (rc == SF_EFORMAT)
        return fail_at(c, at, "\"%s\" in the time column \"%s\"; expected an integer count of --time-unit %s since "
                       "1970-01-01T00:00Z", sf_show(s, n, tmp, sizeof tmp), c->names[c->time_field],
                       unit_names[c->time_kind - SF_TIME_EPOCH_S]);
    // The unit it fits, the coarsest first: the likeliest mistake. Only
    // the first row decides a unit, and only for a year of 1900-2199 in
    // it: behind rows that fit the unit given (they would move, to 1970
    // say), a time out of range is an outlier, a sentinel or a typo.
    char fix[1200] = "";
    uint64_t before = c->st.rows + c->nbatch;
    if (rc == 0 && before) {
        char prev[48];
        format_time(c, c->prev_time, prev, sizeof prev);
        char pl[256];
        snprintf(fix, sizeof fix, "; the %llu row(s) before it fit --time-unit %s (line %s: %s), so this one looks "
                 "like an outlier (a sentinel or a typo): correct line %llu or leave that row out",
                 (unsigned long long)before, unit_names[c->time_kind - SF_TIME_EPOCH_S],
                 origin_text(c, c->prev_time_line, pl, sizeof pl), prev, (unsigned long long)where_line(c, at));
    }
    if (rc == 0 && !before) suggest_unit(c, c->rec_time, c->time_kind, "; as a count of", fix, sizeof fix);
    char lo[48], hi[48];
    sf_time_format(lo, sizeof lo, epoch_us(c->time_kind, epoch_lo[c->time_kind - SF_TIME_EPOCH_S]),
                   SF_TIME_CLOCK | SF_TIME_ZONE);
    sf_time_format(hi, sizeof hi, epoch_us(c->time_kind, epoch_hi[c->time_kind - SF_TIME_EPOCH_S]),
                   SF_TIME_CLOCK | SF_TIME_SECONDS | SF_TIME_ZONE);
    return fail_at(c, at, "time %s in the time column \"%s\" is out of range for --time-unit %s: expected %lld to %lld "
                   "(%s to %s)%s", sf_show(s, n, tmp, sizeof tmp), c->names[c->time_field],
                   unit_names[c->time_kind - SF_TIME_EPOCH_S], (long long)epoch_lo[c->time_kind - SF_TIME_EPOCH_S],
                   (long long)epoch_hi[c->time_kind - SF_TIME_EPOCH_S], lo, hi, fix);
}

// Keeps the series id s (n bytes, at `at` in the input) in c->key: copied,
// since the buffer or c->field under it is reused by the next field.
static int store_key(csv *c, const char *at, const char *s, size_t n) {
    if (!sf_text_ok(s, n)) return fail_at(c, at, "series id must be UTF-8 text without NUL bytes");
    if (n > SF_PACK_MAX_NAME) return fail_at(c, at, "series id longer than %u bytes", SF_PACK_MAX_NAME);
    if (n + 1 > c->key_cap) {
        char *k = realloc(c->key, n + 1);
        if (!k) return sf_err_set(c->e, SF_ENOMEM, "%s: out of memory", c->name);
        c->key = k;
        c->key_cap = n + 1;
    }
    memcpy(c->key, s, n);
    c->key_len = n;
    c->key_at = at;
    return 0;
}

static __attribute__((noinline)) int general_field(csv *c, uint32_t f, const char *p, const char **after) {
    const char *fs, *fe, *at, *start = p;
    bool quoted;
    int rc = next_field(c, &p, &fs, &fe, &quoted, &at);
    if (rc) return rc;
    *after = p;
    c->rec_quoted |= quoted;
    size_t n = (size_t)(fe - fs);
    if (c->role[f] == ROLE_SERIES) {  // copied: c->field is reused by the next quoted field
        // Spaces around an unquoted id are padding, dropped (and said when
        // the series then goes wrong); inside quotes they are the id's own.
        c->key_padded = !quoted && (at != start || (fe < p && is_space(*fe, c->delim)));
        if (quoted) fs = c->field ? c->field : fs, n = c->field_len;
        return store_key(c, at, fs, n);
    }
    char tmp[96];
    if (c->role[f] == ROLE_TIME) return time_field(c, at, fs, n);
    if (c->role[f] == ROLE_CATEGORY && !missing_token(fs, n))
        return category_field(c, f, at, fs, n, &c->row[c->keep_at[f]]);
    if (c->role[f] != ROLE_KEEP && c->role[f] != ROLE_CATEGORY) return 0;
    uint32_t k = c->keep_at[f];
    int r = sf_parse_float(fs, n, &c->row[k]);
    if (r == 0 && fabsf(c->row[k]) >= 0x1p24f && c->role[f] == ROLE_KEEP) big_main(c, k, fs, n, at);
    if (r == 0) return 0;
    if (r == SF_ERANGE)
        return fail_at(c, at, "value %s in column \"%s\" is out of float32 range (|x| < 3.4e38)",
                       sf_show(fs, n, tmp, sizeof tmp), c->names[f]);
    if (!missing_token(fs, n)) return text_columns(c, at, f, fs, n);
    if (c->o->missing == SF_MISSING_ERROR)
        return fail_at(c, at,
                       "missing or non-finite value \"%s\" in column \"%s\"; expected %s (hint: --missing "
                       "drop or --missing ffill)",
                       sf_show(fs, n, tmp, sizeof tmp), c->names[f],
                       c->role[f] == ROLE_CATEGORY ? "one of its category values" : "a number");
    c->row[k] = NAN;
    c->miss[k] = at;
    c->rec_missing = true;
    return 0;
}

// The time or series id field at p when it is plain text: unquoted, no
// spaces around it, whole in the buffer. It then gets what general_field
// gives it (*rc), without next_field's general steps; false leaves the
// field to general_field.
static inline bool plain_field(csv *c, uint32_t f, const char *p, const char *end, const char **after, int *rc) {
    char d = c->delim;
    size_t tn;
    if (c->role[f] == ROLE_TIME && c->time_kind == SF_TIME_ISO && time_same_day_ok(d) &&
        (tn = sf_time_same_day(&c->time_memo, p, end, d, &c->rec_time))) {
        // time_field's result for the text; its parts (no fraction) join by or
        c->time_at = p;
        c->time_parts |= c->time_memo.parts;
        *rc = 0;
        *after = p + tn;
        return true;
    }
    if (p == end || *p == '"' || is_space(*p, d)) return false;
    const char *e = c->field_end(p, end, d);
    if (e == end) return false;  // perhaps cut by the buffer's end; the end of input: general_field
    const char *fe = e - (e[-1] == '\r' && *e == '\n');
    if (fe == p || is_space(fe[-1], d)) return false;
    size_t n = (size_t)(fe - p);
    if (c->role[f] == ROLE_TIME) {
        *rc = time_field(c, p, p, n);
    } else {
        c->key_padded = false;
        *rc = store_key(c, p, p, n);
    }
    *after = e;
    return true;
}

// Parses the record at buf + pos into c->row (NaN for a missing value).
static int parse_record(csv *c, const char **next) {
    const char *p = c->buf + c->pos, *end = c->buf + c->len;
    const char *eol = NULL;
    if (p == end) return c->eof ? REC_END : REC_MORE;
    if (is_blank_line(c, p, &eol)) {
        if (eol == end && !c->eof) return REC_MORE;
        if (!c->blank_line) c->blank_line = c->line;
        *next = eol < end ? eol + 1 : eol;
        return 0;  // nothing to commit
    }
    if (c->blank_line) {
        uint64_t l = c->blank_line;
        return sf_err_set(c->e, SF_EFORMAT,
                          "%s:%llu:1: empty line inside the data; expected %u fields (blank lines are allowed only "
                          "at the end)",
                          c->name, (unsigned long long)l, c->ncsv);
    }
    c->rec_quoted = c->rec_missing = false;
    c->npend = 0, c->rec_truncated = NULL;
    // Locals, so that p and the tables stay in registers on the fast path.
    const uint8_t *role = c->role;
    const uint32_t *keep_at = c->keep_at;
    float *row = c->row;
    uint32_t ncsv = c->ncsv;
    char delim = c->delim;
    for (uint32_t f = 0; f < ncsv; f++) {
        const char *after;
        int rc = 0;
        if (role[f] == ROLE_KEEP && fast_number(p, end, delim, &row[keep_at[f]], &after)) {
            if (__builtin_expect(fabsf(row[keep_at[f]]) >= 0x1p24f, 0))
                big_main(c, keep_at[f], p, (size_t)(after - p) - (after[-1] == '\r'), p);
        } else if (!((role[f] == ROLE_TIME || role[f] == ROLE_SERIES) && plain_field(c, f, p, end, &after, &rc))) {
            rc = general_field(c, f, p, &after);
        }
        if (rc) return rc;
        p = after;
        bool last = f + 1 == ncsv;
        if (p == end || *p == '\n') {
            if (!last) return fail_at(c, p, "expected %u fields, found %u (ragged row)", ncsv, f + 1);
        } else if (last) {
            return fail_at(c, p, "expected %u fields, found more (ragged row)", ncsv);
        } else {
            p++;  // the delimiter
        }
    }
    if (p < end && *p == '\n') p++;
    *next = p;
    return REC_OK;
}

static int flush_batch(csv *c) {
    if (c->nbatch == 0) return 0;
    int rc = sf_pack_writer_rows_imputed(c->w, c->batch, c->time_field != UINT32_MAX ? c->batch_time : NULL,
                                         c->batch_line, c->batch_imp, c->nbatch, c->e);
    memcpy(c->last, c->batch + (c->nbatch - 1) * c->nkeep, c->nkeep * sizeof(float));
    c->st.rows += c->nbatch;
    c->nbatch = 0;
    c->row = c->batch;
    return rc;
}

// The rows written before a series came back, as the head of the merge
// (sf_regroup_head_writer): their categories, and their series' indices.
static int head_categories(void *arg, sf_pack_writer *w, sf_err *e) {
    csv *c = arg;
    int rc = 0;
    for (uint32_t k = 0; !rc && k < c->ncat; k++)
        rc = sf_pack_writer_category(w, k, (const char *const *)c->cats[k].values, c->cats[k].n, e);
    return rc;
}

static uint32_t head_index(void *arg, const char *name) {
    const sf_series_id *s = sf_series_ids_find(&((const csv *)arg)->seen, name, strlen(name));
    return s ? s->index : 0;  // every series written was seen
}

// The first series that comes back: the rows of series interleave. From
// here on every row is held by a regrouper (regroup.c) and checked in
// series order after the last one (regroup_finish). The rows written so
// far, series by series as they came, are finished as a file of their own
// (the writer's temporary file, unlinked and read back at the head of the
// merge): rows grouped by series never pay for regrouping.
static int regroup_start(csv *c, const sf_series_id *back) {
    if (!sf_pack_writer_temp_path(c->w)) {
        char a[96], b[96], la[256], lb[256];
        uint64_t line, col;
        where(c, c->key_at, &line, &col);
        return sf_err_set(c->e, SF_EUSAGE, "%s:%llu:%llu: series \"%s\" (column \"%s\") reappears after series \"%s\" "
                          "started at line %s (it was first seen at line %s): pack regroups the rows of series "
                          "that interleave through temporary files beside its output, so it needs -o FILE.sfpack, not "
                          "stdout or a device", c->name, (unsigned long long)line, (unsigned long long)col,
                          sf_show(c->key, c->key_len, a, sizeof a), c->names[c->series_field],
                          sf_show(c->cur_series, c->cur_series_len, b, sizeof b),
                          origin_text(c, c->cur_series_line, la, sizeof la), origin_text(c, back->first, lb, sizeof lb));
    }
    // The record that came back is parsed into the next batch slot, which
    // the flush moves back to the batch's start.
    const float *parsed = c->row;
    int rc = flush_batch(c);
    if (parsed != c->row) memcpy(c->row, parsed, c->nkeep * sizeof(float));
    uint64_t budget = c->o->memory_budget ? c->o->memory_budget : SF_REGROUP_DEFAULT_BUDGET;
    if (!rc) rc = sf_regroup_open(&c->rg, c->out, c->nkeep, c->time_field != UINT32_MAX, budget, c->e);
    if (rc) return rc;
    sf_pack_writer *w = c->w;
    c->w = NULL;
    return sf_regroup_head_writer(c->rg, w, c->out,
                                  &(sf_regroup_packer){.categories = head_categories, .index = head_index, .arg = c},
                                  c->e);
}

// Makes s, found or just added, the series of the rows that follow.
static void enter_series(csv *c, const sf_series_id *s) {
    c->cur_series = s->key;
    c->cur_series_len = s->len;
    c->cur_series_line = (uint64_t)c->line_base + c->line;
    c->cur_index = s->index;
    c->have_last = false;
    c->seeded = -1;
    c->padded_line = 0;
    for (uint32_t k = 0; k < c->nkeep; k++) c->lossy[k].has_prev = false;
}

static int start_series(csv *c) {
    bool found;
    sf_series_id *s = sf_series_ids_add(&c->seen, c->key, c->key_len, (uint64_t)c->line_base + c->line, &found);
    if (!s) return sf_err_set(c->e, SF_ENOMEM, "%s: out of memory for the series table", c->name);
    if (!found && c->nindex == UINT32_MAX)
        return fail_at(c, c->key_at, "more than %u series ids", UINT32_MAX - 1);
    if (!found) s->index = c->nindex++;
    int rc = found && !c->rg ? regroup_start(c, s) : 0;
    if (rc) return rc;
    if (!c->rg) {
        // The record that starts the series is already parsed into the next batch
        // slot; flushing moves c->row back to the batch start, so it moves too.
        const float *parsed = c->row;
        rc = flush_batch(c);
        if (parsed != c->row) memcpy(c->row, parsed, c->nkeep * sizeof(float));
        if (!rc) rc = sf_pack_writer_series(c->w, c->key, c->key_len, c->e);
        if (rc) return rc;
    }
    enter_series(c, s);
    return 0;
}

// The line of kept column k's first value from the current record on, in
// the input read so far; 0 when it has none, and *rows the rows looked at
// (*all: they run to the end of the input).
static uint64_t first_value_line(csv *c, uint32_t k, uint64_t *rows, bool *all) {
    uint32_t field = 0;
    while (field < c->ncsv && !((c->role[field] == ROLE_KEEP || c->role[field] == ROLE_CATEGORY) &&
                                c->keep_at[field] == k))
        field++;
    const char *p = c->buf + c->pos, *end = c->buf + c->len;
    *rows = 0, *all = false;
    while (p < end) {
        for (uint32_t j = 0; j < c->ncsv; j++) {
            const char *s, *e, *at;
            bool quoted;
            if (next_field(c, &p, &s, &e, &quoted, &at)) return 0;
            if (j == field && !missing_token(s, (size_t)(e - s))) {
                uint64_t line, col;
                where(c, at, &line, &col);
                return line;
            }
            if (p >= end || *p == '\n') break;
            p++;
        }
        ++*rows;
        if (p < end) p++;
    }
    *all = c->eof;
    return 0;
}

// Where the time goes back without a series column, a kept column of
// integers that changes there too: the id of series each in one run of
// rows, further on than series_hint looks. Said into hint (cap bytes) with
// the command that makes it the series column; hint unchanged when none.
static void late_ids_hint(csv *c, char *hint, size_t cap) {
    if (c->o->series_column) return;  // named, or one series on purpose
    // An id changes seldom: first one that did not change at the row
    // before too (when the batch holds that row), not a counter beside it.
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t f = 0; f < c->ncsv; f++) {
            if (c->role[f] != ROLE_KEEP) continue;
            uint32_t k = c->keep_at[f];
            float now = c->row[k], before = c->nbatch ? c->row[(ptrdiff_t)k - c->nkeep] : c->last[k];
            if (now == before || now != nearbyintf(now) || before != nearbyintf(before)) continue;
            if (!pass && c->nbatch >= 2 && c->row[(ptrdiff_t)k - 2 * (ptrdiff_t)c->nkeep] != before) continue;
            size_t len = 0;
            append(hint, cap, &len, "; column \"%s\" changes there too (%.0f to %.0f): if it is the id of series, "
                   "each in one run of rows, pack it with: ", c->names[f], (double)before, (double)now);
            if (!again(c, &(again_edit){.series_column = c->names[f], .drop = c->o->columns ? c->names[f] : NULL},
                       hint + len, cap - len))
                snprintf(hint, cap, "; column \"%s\" changes there too (%.0f to %.0f): if it is the id of series, "
                         "each in one run of rows, --series-column makes it so%s", c->names[f], (double)before,
                         (double)now, first_pack(c));
            return;
        }
}

// A row of the current series, in c->row, checked against the series' row
// before it and appended to the batch: a missing value filled (--missing
// ffill), a time that goes back refused, a repeated one noted. One
// implementation for both paths: a record as it is parsed (the rows of
// series contiguous), and a row regrouped after the whole input was read
// (c->rg), whose record is gone: its messages name its line. line: the
// row's line as stored; imputed: the flags a regrouped row already carries
// (one packed before a series came back), or NULL.
static int series_row(csv *c, int64_t line, const uint8_t *imputed) {
    bool held = c->rg != NULL;
    if (c->batch_imp && imputed) memcpy(c->batch_imp + c->nbatch * c->nkeep, imputed, c->nkeep);
    else if (c->batch_imp) memset(c->batch_imp + c->nbatch * c->nkeep, 0, c->nkeep);
    if (c->rec_missing) {
        // A series' first row (c->last is free: the batch was flushed):
        // the row before it may be in the file appended to.
        if (!c->have_last && c->seeded < 0 && c->o->series_last) {
            c->seeded = c->o->series_last(c->o->progress_arg, c->cur_series ? c->cur_series : "", c->cur_series_len,
                                          c->last, c->e);
            if (c->seeded < 0) return c->seeded;
        }
        for (uint32_t k = 0; k < c->nkeep; k++) {
            if (!isnan(c->row[k])) continue;
            bool seed = !c->have_last && c->seeded == 1 && !isnan(c->last[k]);
            if (!c->have_last && held && !seed) {
                char a[96];
                return fail_row(c, NULL, line, "missing value in column \"%s\" with no earlier row in series \"%s\" "
                                "to fill it from (hint: --missing drop leaves out the rows with a missing value)",
                                c->col_names[k], sf_show(c->cur_series, c->cur_series_len, a, sizeof a));
            }
            if (!c->have_last && !seed) {
                uint64_t rows;
                bool all;
                uint64_t line = first_value_line(c, k, &rows, &all);
                char fix[1200];
                if (line)  // --missing drop drops the rows before it
                    snprintf(fix, sizeof fix, " (hint: its first value is at line %llu: --missing drop)",
                             (unsigned long long)line);
                else {  // --missing drop would drop every row
                    size_t len = 0;
                    append(fix, sizeof fix, &len, "; it has no value in %s (%llu rows): leave it out", all ?
                           "the rest of the file" : "the rows read so far", (unsigned long long)rows);
                    size_t mark = len;
                    append(fix, sizeof fix, &len, ". Pack it with: ");
                    if (c->o->header)  // pack --append-to: the file's columns stay
                        snprintf(fix, sizeof fix, "; it has no value in %s (%llu rows), and rows appended to a file "
                                 "must fill its columns", all ? "the rest of the file" : "the rows read so far",
                                 (unsigned long long)rows);
                    else if (!again(c, &(again_edit){.drop = c->col_names[k]}, fix + len, sizeof fix - len))
                        snprintf(fix + mark, sizeof fix - mark, " (%s%s)",
                                 c->o->columns ? "--columns without it" : "--drop-columns", first_pack(c));
                }
                return fail_at(c, c->miss[k], "missing value in column \"%s\" with no earlier row in this series to "
                               "fill it from%s", c->col_names[k], fix);
            }
            c->row[k] = c->nbatch && !seed ? c->row[(ptrdiff_t)k - c->nkeep] : c->last[k];
            c->batch_imp[c->nbatch * c->nkeep + k] = 1;  // so that nothing scores it as observed
            c->st.values_filled++;
        }
    }
    if (c->time_field != UINT32_MAX) {
        // A categorical column that changes where the time repeats or goes
        // back: the ids of series whose rows interleave, taken for one.
        uint32_t mixed = UINT32_MAX;
        for (uint32_t i = 0; c->have_last && c->rec_time <= c->prev_time && i < c->ncat && mixed == UINT32_MAX; i++) {
            uint32_t k = c->keep_at[c->cats[i].field];
            if (c->row[k] != (c->nbatch ? c->row[(ptrdiff_t)k - c->nkeep] : c->last[k])) mixed = k;
        }
        if (c->have_last && c->rec_time < c->prev_time) {
            char now[48], before[48], hint[512] = "", a[96];
            format_time(c, c->rec_time, now, sizeof now);
            format_time(c, c->prev_time, before, sizeof before);
            if (mixed != UINT32_MAX && c->series_field == UINT32_MAX)
                snprintf(hint, sizeof hint, "; categorical column \"%s\" changes there too: if it is the id of series "
                         "whose rows interleave, pack it with --series-column instead%s", c->col_names[mixed],
                         first_pack(c));
            else if (mixed != UINT32_MAX)  // --series-column names another: one series id at a time
                snprintf(hint, sizeof hint, "; categorical column \"%s\" changes there too: if it, not \"%s\", is the "
                         "id of series whose rows interleave, make it the --series-column and leave it out of "
                         "--categorical%s; if each pair of the two is a series, join them into one column",
                         c->col_names[mixed], c->names[c->series_field], first_pack(c));
            else if (c->padded_line)
                snprintf(hint, sizeof hint, "; the series id \"%s\" had spaces around it at line %llu, which pack drops "
                         "as padding outside quotes: if the spaces make it another series, quote that id in the CSV",
                         sf_show(c->cur_series, c->cur_series_len, a, sizeof a), (unsigned long long)c->padded_line);
            else if (c->src && c->prev_time_line >> SF_ORIGIN_LINE_BITS != (uint64_t)line >> SF_ORIGIN_LINE_BITS)
                snprintf(hint, sizeof hint, "; the files are read in the order given (a directory's or a glob's "
                         "sorted by name): give them in time order");
            else late_ids_hint(c, hint, sizeof hint);
            char pl[256];
            return fail_row(c, held ? NULL : c->time_at, line, "time %s is before %s (line %s), the row before it in "
                            "this series; times must not go back within a series (sort the CSV by time%s)%s", now,
                            before, origin_text(c, c->prev_time_line, pl, sizeof pl),
                            c->series_field != UINT32_MAX ? " within each series" : "", hint);
        }
        if (c->have_last && c->rec_time == c->prev_time && !c->repeat_line) {
            // Without a categorical change, a column of integers that
            // changes there: numeric ids (station 1, 2, 1, 2) taken as a feature.
            uint32_t field = UINT32_MAX;
            for (uint32_t f = 0; f < c->ncsv && field == UINT32_MAX; f++) {
                if (c->role[f] != ROLE_KEEP && c->role[f] != ROLE_CATEGORY) continue;
                uint32_t k = c->keep_at[f];
                float now = c->row[k], before = c->nbatch ? c->row[(ptrdiff_t)k - c->nkeep] : c->last[k];
                bool ids = mixed != UINT32_MAX ? k == mixed
                                               : now != before && now == nearbyintf(now) && before == nearbyintf(before);
                if (ids) field = f;
            }
            c->repeat_line = (uint64_t)line, c->repeat_field = field;
        }
        c->batch_time[c->nbatch] = c->prev_time = c->rec_time;
        c->prev_time_line = (uint64_t)line;
    }
    c->batch_line[c->nbatch] = line;
    if (!c->have_last) c->st.nseries++;  // the series' first stored row
    c->have_last = true;
    c->row += c->nkeep;  // records are parsed straight into the batch
    if (++c->nbatch == c->batch_rows) return flush_batch(c);
    return 0;
}

static int commit_record(csv *c) {
    c->quoted_seen |= c->rec_quoted;
    if (c->series_field != UINT32_MAX &&
        (!c->cur_series || c->key_len != c->cur_series_len || !sf_bytes_equal(c->key, c->cur_series, c->key_len))) {
        int rc = start_series(c);
        if (rc) return rc;
    }
    // Counted once the record is whole, in its series (the first row of a
    // series is not compared with the series before it).
    record_counts(c);
    if (c->key_padded && !c->padded_line) c->padded_line = c->line;
    if (c->rec_missing && c->o->missing == SF_MISSING_DROP) {
        c->st.rows_dropped++;
        return 0;
    }
    if (c->rg) {  // held, and checked in series order after the last row
        c->st.rows++;
        return sf_regroup_add(c->rg, c->cur_index, c->row, c->rec_time, c->line_base + (int64_t)c->line, c->e);
    }
    return series_row(c, c->line_base + (int64_t)c->line, NULL);
}


// Refills until the header line (quotes respected) is in the buffer; returns
// its end (the '\n' or the end of input).
static int header_line(csv *c, const char **eol) {
    for (;;) {
        // As next_field reads it: a quote opens quoting only at the start of
        // a field, "" inside quotes is a quote. The delimiter is not known
        // yet, so any candidate counts as a field start.
        bool inq = false;
        char prev = ',';  // last byte that is not a space
        const char *p = c->buf + c->pos, *end = c->buf + c->len;
        for (; p < end; p++) {
            if (inq) {
                if (*p != '"') continue;
                if (p + 1 < end && p[1] == '"') p++;
                else inq = false;
            } else if (*p == '\n') {
                break;
            } else if (*p == '\r' && p + 1 < end && p[1] != '\n') {
                return cr_fail(c, p);
            } else if (*p == '"' && (prev == ',' || prev == ';' || prev == '\t')) {
                inq = true;
            }
            if (*p != ' ') prev = *p;
        }
        if (p < end || c->eof) {
            *eol = p;
            return 0;
        }
        int rc = refill(c);
        if (rc < 0) return rc;
    }
}

static char detect_delimiter(const char *p, const char *end) {
    static const char cand[] = {',', ';', '\t'};
    size_t count[3] = {0};
    bool inq = false;
    for (; p < end; p++) {
        if (*p == '"') inq = !inq;
        for (int k = 0; k < 3 && !inq; k++) count[k] += *p == cand[k];
    }
    int best = 0;
    for (int k = 1; k < 3; k++)
        if (count[k] > count[best]) best = k;
    return cand[best];
}

static int find_name(const csv *c, const char *name, size_t n) {
    for (uint32_t f = 0; f < c->ncsv; f++)
        if (strlen(c->names[f]) == n && memcmp(c->names[f], name, n) == 0) return (int)f;
    return -1;
}

static int not_a_column(csv *c, const char *option, const char *s, size_t n) {
    char all[512] = "", tmp[96];
    size_t k = 0;
    for (uint32_t i = 0; i < c->ncsv && k < sizeof all - 4; i++)
        k += (size_t)snprintf(all + k, sizeof all - k, "%s%s", i ? ", " : "", c->names[i]);
    return sf_err_set(c->e, SF_EUSAGE, "%s: %s names \"%s\", which is not a column; the columns are: %s", c->name,
                      option, sf_show(s, n, tmp, sizeof tmp), all);
}

// Calls fn for each name in list (sf_list_next: comma-separated, quoted
// as in CSV when a name holds a comma).
static int each_name(csv *c, const char *list, const char *option, int (*fn)(csv *, int field, const char *option)) {
    char name[4096];
    for (const char *p = list; p;) {
        if (sf_list_next(&p, name, sizeof name))
            return sf_err_set(c->e, SF_EUSAGE, "%s %s: expected names separated by commas; a name with a comma or a "
                              "quote in quotes, as in CSV (\"rate,1y\")", option, list);
        int f = find_name(c, name, strlen(name));
        if (f < 0) return not_a_column(c, option, name, strlen(name));
        int rc = fn(c, f, option);
        if (rc) return rc;
    }
    return 0;
}

// The time column when none was named: the first kept column whose value
// in the first data row is an ISO-8601 time and not a number (a date of a
// row that is not in the buffer yet is not looked for: the buffer holds
// megabytes). The kept columns after it move up one.
static int find_time_column(csv *c) {
    int rc = 0;
    while (!c->eof && !memchr(c->buf + c->pos, '\n', c->len - c->pos) && c->len - c->pos < (1u << 20))
        if ((rc = refill(c)) < 0) return rc;
    const char *p = c->buf + c->pos, *end = c->buf + c->len;
    for (uint32_t f = 0; f < c->ncsv && p < end; f++) {
        const char *s, *t, *at;
        bool quoted;
        if (next_field(c, &p, &s, &t, &quoted, &at)) return 0;  // the parser will say what is wrong
        float v;
        int64_t us;
        unsigned parts;
        if (c->role[f] == ROLE_KEEP && sf_parse_float(s, (size_t)(t - s), &v) != 0 &&
            sf_time_parse(s, (size_t)(t - s), &us, &parts) == 0) {
            uint32_t k = c->keep_at[f];
            for (uint32_t g = 0; g < c->ncsv; g++)
                if ((c->role[g] == ROLE_KEEP || c->role[g] == ROLE_CATEGORY) && c->keep_at[g] > k) c->keep_at[g]--;
            c->role[f] = ROLE_TIME;
            c->time_field = f;
            c->time_found = true;
            c->nkeep--;
            return 0;
        }
        if (p >= end || *p == '\n') return 0;
        p++;
    }
    return 0;
}

// A column --categorical names: kept, its texts coded. The columns are in
// kept-column order (the writer's), whatever order the list has.
static int category_column(csv *c, int f, const char *option) {
    (void)option;
    if (c->role[f] != ROLE_KEEP && c->role[f] != ROLE_CATEGORY)
        return sf_err_set(c->e, SF_EUSAGE, "%s: --categorical names \"%s\", which is %s", c->name, c->names[f],
                          c->role[f] == ROLE_SERIES ? "the series column" : c->role[f] == ROLE_TIME ? "the time column"
                                                                          : "not packed (--columns or --drop-columns "
                                                                            "leaves it out)");
    if (c->role[f] == ROLE_CATEGORY) return sf_err_set(c->e, SF_EUSAGE, "%s: --categorical names \"%s\" twice", c->name, c->names[f]);
    if (!c->cat_of) {
        if (!(c->cat_of = malloc(c->ncsv * sizeof *c->cat_of)))
            return sf_err_set(c->e, SF_ENOMEM, "%s: out of memory", c->name);
        for (uint32_t g = 0; g < c->ncsv; g++) c->cat_of[g] = -1;
    }
    category *n = realloc(c->cats, (c->ncat + 1) * sizeof *n);
    if (!n) return sf_err_set(c->e, SF_ENOMEM, "%s: out of memory", c->name);
    c->cats = n;
    uint32_t k = c->ncat++;
    while (k > 0 && c->keep_at[c->cats[k - 1].field] > c->keep_at[f]) c->cats[k] = c->cats[k - 1], k--;
    c->cats[k] = (category){.field = (uint32_t)f};
    for (uint32_t i = 0; i < c->ncat; i++) c->cat_of[c->cats[i].field] = (int32_t)i;
    c->role[f] = ROLE_CATEGORY;
    return 0;
}

static int keep_field(csv *c, int f, const char *option) {
    if (c->role[f] == ROLE_TIME)
        return sf_err_set(c->e, SF_EUSAGE, "%s: column \"%s\" is the time column; it is stored as the time of each "
                          "row, never as a feature", c->name, c->names[f]);
    if (c->role[f] == ROLE_KEEP)
        return sf_err_set(c->e, SF_EUSAGE, "%s: %s lists column \"%s\" twice", c->name, option, c->names[f]);
    if (c->role[f] == ROLE_SERIES)
        return sf_err_set(c->e, SF_EUSAGE, "%s: column \"%s\" is the series column and cannot also be a feature",
                          c->name, c->names[f]);
    c->role[f] = ROLE_KEEP;
    c->keep_at[f] = c->nkeep++;
    return 0;
}

static int drop_field(csv *c, int f, const char *option) {
    (void)option;
    if (c->role[f] == ROLE_TIME)
        return sf_err_set(c->e, SF_EUSAGE, "%s: column \"%s\" is the time column named by --time-column: it cannot "
                          "be dropped too", c->name, c->names[f]);
    if (c->role[f] == ROLE_SERIES)
        return sf_err_set(c->e, SF_EUSAGE, "%s: column \"%s\" is the series column; it is never stored as a feature",
                          c->name, c->names[f]);
    c->role[f] = ROLE_SKIP;
    return 0;
}

static int read_header(csv *c) {
    int rc = refill(c);
    if (rc < 0) return rc;
    if (c->len - c->pos >= 3 && memcmp(c->buf + c->pos, "\xef\xbb\xbf", 3) == 0) c->pos += 3;
    if (c->len - c->pos >= 4 && memcmp(c->buf + c->pos, "PAR1", 4) == 0) {  // Parquet's magic: said before its bytes
        char cmd[1200] = "";                                              // are taken for a header row
        size_t len = 0;
        append(cmd, sizeof cmd, &len, "python -m seqfeed pack");
        sf_shell_word(cmd, sizeof cmd, &len, c->name);
        sf_shell_word(cmd, sizeof cmd, &len, "-o");
        sf_shell_word(cmd, sizeof cmd, &len, c->out ? c->out : "OUT.sfpack");
        return sf_err_set(c->e, SF_EFORMAT, "%s is a Parquet file, which seqfeed pack (CSV) does not read: pack it "
                          "with the Python package (it needs pyarrow): %s", c->name, cmd);
    }
    const char *eol = NULL;
    if ((rc = header_line(c, &eol))) return rc;
    const char *start = c->buf + c->pos, *tmp_eol;
    if (is_blank_line(c, start, &tmp_eol) && tmp_eol == c->buf + c->len)
        return sf_err_set(c->e, SF_EFORMAT, "%s:1:1: empty file; expected a header row and at least one data row",
                          c->name);
    const char *nul = memchr(start, 0, (size_t)(eol - start));
    if (nul) return fail_at(c, nul, "a NUL byte in the header row: column names are text (is this a CSV file?)");
    size_t ok = sf_utf8_valid_prefix((const unsigned char *)start, (size_t)(eol - start));
    if (ok < (size_t)(eol - start))
        return fail_at(c, start + ok, "column names must be UTF-8; found byte 0x%02x",
                       (unsigned char)start[ok]);
    if (c->o->delimiter && !sf_csv_delimiter_ok(c->o->delimiter))
        return sf_err_set(c->e, SF_EUSAGE, "%s: '%c' cannot be the delimiter: it can be part of a number", c->name,
                          c->o->delimiter);
    c->delim = c->o->delimiter ? c->o->delimiter : detect_delimiter(start, eol);

    size_t cap = 16;
    c->names = calloc(cap, sizeof *c->names);
    if (!c->names) return sf_err_set(c->e, SF_ENOMEM, "out of memory");
    const char *p = start, *end = c->buf + c->len;
    for (;;) {
        const char *fs, *fe, *at;
        bool quoted;
        if ((rc = next_field(c, &p, &fs, &fe, &quoted, &at)))
            return rc < 0 ? rc : fail_at(c, p, "header row is not complete (unbalanced quotes?)");
        if (fe == fs) return fail_at(c, at, "column %u has an empty name; expected a header row of names", c->ncsv + 1);
        if (fe - fs > SF_PACK_MAX_NAME) return fail_at(c, at, "column name longer than %u bytes", SF_PACK_MAX_NAME);
        if (c->ncsv == SF_PACK_MAX_COLS)
            return sf_err_set(c->e, SF_EFORMAT, "%s:1: more than %u columns", c->name, SF_PACK_MAX_COLS);
        char *name = strndup(fs, (size_t)(fe - fs));
        if (!name) return sf_err_set(c->e, SF_ENOMEM, "out of memory");
        if (c->ncsv == cap) {
            char **n = realloc(c->names, 2 * cap * sizeof *n);
            if (!n) {
                free(name);
                return sf_err_set(c->e, SF_ENOMEM, "out of memory");
            }
            c->names = n;
            cap *= 2;
        }
        int dup = find_name(c, name, strlen(name));
        c->names[c->ncsv++] = name;
        if (dup >= 0)
            return fail_at(c, at, "column name \"%s\" appears twice (columns %d and %u); names must be unique", name,
                           dup + 1, c->ncsv);
        if (p == end || *p == '\n') break;
        p++;  // the delimiter
    }
    c->pos = (size_t)(p - c->buf) + (p < end);
    c->line = 2;
    for (const char *q = start; q < p; q++) c->line += *q == '\n';  // quoted names may span lines
    c->header_one_line = c->line == 2;
    if (c->o->header && (rc = c->o->header(c->o->progress_arg, (const char *const *)c->names, c->ncsv, c->e)))
        return rc;

    c->role = calloc(c->ncsv, 1);
    c->keep_at = calloc(c->ncsv, sizeof *c->keep_at);
    if (!c->role || !c->keep_at) return sf_err_set(c->e, SF_ENOMEM, "out of memory");
    c->series_field = UINT32_MAX;
    const sf_csv_pack_opts *o = c->o;
    if (o->series_column && o->series_column[0]) {  // "": one series on purpose
        int f = find_name(c, o->series_column, strlen(o->series_column));
        // One name, not a list: a series column name may hold a comma.
        if (f < 0) return not_a_column(c, "--series-column", o->series_column, strlen(o->series_column));
        c->role[f] = ROLE_SERIES;
        c->series_field = (uint32_t)f;
    }
    c->time_field = UINT32_MAX;
    c->time_kind = o->time_unit > SF_TIME_ISO ? o->time_unit : SF_TIME_ISO;
    if (o->time_column && o->time_column[0]) {
        int f = find_name(c, o->time_column, strlen(o->time_column));
        if (f < 0) return not_a_column(c, "--time-column", o->time_column, strlen(o->time_column));
        if (c->role[f] == ROLE_SERIES)
            return sf_err_set(c->e, SF_EUSAGE, "%s: column \"%s\" cannot be both the series and the time column",
                              c->name, c->names[f]);
        c->role[f] = ROLE_TIME;
        c->time_field = (uint32_t)f;
    }
    // Dropping from an explicit list would leave holes in the kept columns.
    if (o->columns && o->drop_columns)
        return sf_err_set(c->e, SF_EUSAGE, "%s: --columns and --drop-columns exclude each other", c->name);
    if (o->columns) {
        if ((rc = each_name(c, o->columns, "--columns", keep_field))) return rc;
    } else {
        for (uint32_t f = 0; f < c->ncsv; f++)
            if (c->role[f] != ROLE_SERIES && c->role[f] != ROLE_TIME) c->role[f] = ROLE_KEEP;
    }
    if (o->drop_columns && (rc = each_name(c, o->drop_columns, "--drop-columns", drop_field))) return rc;
    if (!o->columns) {
        c->nkeep = 0;
        for (uint32_t f = 0; f < c->ncsv; f++)
            if (c->role[f] == ROLE_KEEP) c->keep_at[f] = c->nkeep++;
    }
    if (o->categorical && (rc = each_name(c, o->categorical, "--categorical", category_column))) return rc;
    if (!o->time_column && c->time_kind == SF_TIME_ISO && (rc = find_time_column(c))) return rc;
    if (c->nkeep == 0) return sf_err_set(c->e, SF_EUSAGE, "%s: no columns left to pack", c->name);
    return 0;
}

// The series of the vector parser's records [0, k) from p (each one's id
// at key_at, key_len_at bytes) among ids, each one's slot + 1 into id_at;
// the id that followed the last one found (*last, updated) is tried before
// the hash, as interleaved series come round in the same order. Returns
// how many were found before the first id not among them.
static size_t ids_of(const sf_series_ids *ids, const sf_series_id **last, const char *p, const uint32_t *key_at,
                     const uint16_t *key_len_at, size_t k, uint32_t *id_at) {
    size_t i = 0;
    for (; i < k; i++) {
        const char *key = p + key_at[i];
        const size_t len = key_len_at[i];
        const sf_series_id *id = *last && (*last)->after ? &ids->slot[(*last)->after - 1] : NULL;
        if (!id || id->len != len || !sf_bytes_equal(id->key, key, len)) id = sf_series_ids_find(ids, key, len);
        if (!id) break;
        *last = id;
        id_at[i] = (uint32_t)(id - ids->slot) + 1;
    }
    return i;
}

// After a run of the vector parser that parsed nothing (a missing value in
// every record, say), the records to leave to the general path before the
// next: doubling up to 1024, so that its look ahead costs at most once per
// 1024 records.
static uint32_t number_back_off(uint32_t *backoff) {
    *backoff = *backoff ? 2 * *backoff : 1;
    if (*backoff > 1024) *backoff = 1024;
    return *backoff;
}

// n records of series seen before, from the one at c->line on, held at once
// as commit_record holds each: record i's series is ids' slot id_at[i] - 1
// (series: room for n indices), its values at rows + i * nkeep, its time
// times[i] (NULL without a time column). The series entered last is the
// one of the last stretch of rows, entered where that stretch begins.
static int hold_rows(csv *c, const sf_series_ids *ids, const uint32_t *id_at, uint32_t *series, const float *rows,
                     const int64_t *times, size_t n) {
    for (size_t i = 0; i < n; i++) series[i] = ids->slot[id_at[i] - 1].index;
    int rc = sf_regroup_add_rows(c->rg, series, rows, times, c->line_base + (int64_t)c->line, n, c->e);
    if (rc) return rc;
    size_t from = n - 1;
    while (from > 0 && series[from - 1] == series[from]) from--;
    if (from > 0 || !c->cur_series || series[0] != c->cur_index) {
        enter_series(c, &ids->slot[id_at[from] - 1]);
        c->cur_series_line += from;  // record from's line
    }
    c->st.rows += n;
    c->line += n;
    return 0;
}

// Records at pos, before limit, of series seen before, held for
// regrouping as commit_record holds them (as commit_half holds the parts'),
// through the vector parser into the empty batch, then to the regrouper at
// once; the run ends before an id not seen yet, which start_series adds.
// Returns 0 or an error; leaves pos where the general path goes on.
static int held_run(csv *c, size_t limit) {
    enum { MAX = 1024 };
    uint32_t next_at[MAX], key_at[MAX], time_at[MAX], id_at[MAX], series[MAX];
    uint16_t key_len_at[MAX];
    uint8_t parts_at[MAX];
    const char *p = c->buf + c->pos, *next;
    size_t end = limit < c->len ? limit : c->len;
    bool timed = c->time_field != UINT32_MAX;
    sf_number_rows_layout *l = &c->numbers;
    l->have_last = false, l->parts = c->time_parts, l->any_key = true;
    sf_number_rows_out out = {.rows = c->row, .times = c->batch_time + c->nbatch, .parts = parts_at, .ends = next_at,
                              .keys = key_at, .key_lens = key_len_at, .time_starts = time_at};
    size_t room = c->batch_rows - c->nbatch < MAX ? c->batch_rows - c->nbatch : MAX;
    size_t n = c->number_rows(l, p, c->buf + end, room, &out, &next);
    const sf_series_id *last = c->seen.last ? &c->seen.slot[c->seen.last - 1] : NULL;
    size_t k = n ? ids_of(&c->seen, &last, p, key_at, key_len_at, n, id_at) : 0;
    if (!k) {
        c->number_skip = number_back_off(&c->number_backoff);
        return 0;
    }
    c->number_backoff = 0;
    if (k < n) next = p + next_at[k - 1];
    int rc = hold_rows(c, &c->seen, id_at, series, c->row, timed ? c->batch_time + c->nbatch : NULL, k);
    if (rc) return rc;
    c->seen.last = id_at[k - 1];
    if (timed) {
        c->time_parts = k < n ? parts_at[k - 1] : l->parts;
        c->rec_time = c->batch_time[c->nbatch + k - 1], c->time_at = p + time_at[k - 1];
    }
    c->pos = (size_t)(next - c->buf);
    return 0;
}

// The records at pos, before limit, as parse_record and commit_record would
// take them, through the vector parser: one line each, straight into the
// batch. Returns 0 or an error; leaves pos where the general path goes on.
static int number_run(csv *c, size_t limit) {
    if (c->number_skip) {
        c->number_skip--;
        return 0;
    }
    if (c->rg) return held_run(c, limit);
    // A run goes on in the series of the record before it.
    if (c->series_field != UINT32_MAX && !c->cur_series) return 0;
    const char *p = c->buf + c->pos, *next;
    size_t end = limit < c->len ? limit : c->len;
    bool timed = c->time_field != UINT32_MAX;
    sf_number_rows_layout *l = &c->numbers;
    l->have_last = c->have_last, l->last_time = c->prev_time, l->parts = c->time_parts;
    l->key = c->cur_series, l->key_len = c->cur_series_len, l->any_key = false;
    sf_number_rows_out out = {.rows = c->row, .times = c->batch_time + c->nbatch};
    size_t n = c->number_rows(l, p, c->buf + end, c->batch_rows - c->nbatch, &out, &next);
    if (!n) {
        c->number_skip = number_back_off(&c->number_backoff);
        return 0;
    }
    c->number_backoff = 0;
    int64_t line = c->line_base + (int64_t)c->line, *to = c->batch_line + c->nbatch;
    for (size_t k = 0; k < n; k++) to[k] = line + (int64_t)k;
    if (c->batch_imp) memset(c->batch_imp + c->nbatch * c->nkeep, 0, n * c->nkeep);
    if (timed) {
        c->time_parts = l->parts;
        c->prev_time = l->last_time, c->prev_time_line = (uint64_t)(line + (int64_t)n - 1);
    }
    if (!c->have_last) c->st.nseries++;  // as series_row
    c->have_last = true;
    c->row += n * c->nkeep;
    c->nbatch += n;
    c->line += n;
    c->pos = (size_t)(next - c->buf);
    return c->nbatch == c->batch_rows ? flush_batch(c) : 0;
}

// How parse_until meets a record that goes on past the buffer: refills and
// goes on; refills and returns; or returns without a refill, where a helper
// thread reads the buffer or the input (a quoted field over the last line
// end of a buffer parsed in parallel: parse_parallel joins the bytes).
enum parse_more { PARSE_REFILL, PARSE_ONE_BUFFER, PARSE_NO_REFILL };

// Runs the parser record by record until c->pos reaches limit or the input
// ends (REC_END). A record is parsed whole, past limit if it goes on there.
static int parse_until(csv *c, size_t limit, enum parse_more more) {
    while (c->pos < limit) {
        if (c->number_rows && !c->blank_line) {
            int rc = number_run(c, limit);
            if (rc) return rc;
            if (c->pos >= limit) break;
        }
        const char *next = NULL;
        int rc = parse_record(c, &next);
        if (rc == REC_MORE) {
            if (more == PARSE_NO_REFILL) return 0;
            if ((rc = refill(c)) < 0) return rc;
            if (more == PARSE_ONE_BUFFER) return 0;
            continue;  // at the end of input parse_record finishes the tail
        }
        if (rc == REC_END || rc < 0) return rc;
        if (rc == REC_OK && (rc = commit_record(c))) return rc;
        const char *p = c->buf + c->pos;
        if (c->rec_quoted) {
            for (; p < next; p++) c->line += *p == '\n';
        } else {
            c->line += next > p && next[-1] == '\n';
        }
        c->pos = (size_t)(next - c->buf);
    }
    return 0;
}

// A record of the helper's part as parse_record would leave it, offsets
// into buf; raw: a line the main thread parses itself (a missing value,
// text, spaces around a value, a blank or ragged line), with the exact
// messages, or, as the last record, every line for which there was no room.
// A run of records the vector parser gave, each going on from the one
// before (cont), or, while rows are held, of any series (their ids in the
// part's row_ids), is written as its first record, which counts the run's
// records (run), and its last: those between, whose fields the commit
// never reads, are left unwritten (filling them was a fifth of the
// helper's time and most of the records' cache traffic). The commit steps
// from record to record by run, so it lands on written ones only.
typedef struct half_rec {
    uint32_t next;             // the record behind it
    uint32_t time_at;          // its time field
    uint32_t key;              // its series id
    uint32_t pend;             // its values above 2^24: npend entries of the job's pend list
    uint16_t key_len, npend;   // SF_PACK_MAX_NAME, SF_PACK_MAX_COLS
    uint32_t id;               // 1 + its series id's slot in the job's ids; 0: not there (or no ids)
    // The ISO parts of the part's times up to it (raw records left out),
    // joined to csv.time_parts as it is committed: messages write times
    // with the parts seen up to their record, as one thread does.
    uint8_t parts;
    bool raw : 1, truncated : 1;  // truncated: its time had digits below a microsecond
    // Goes on from the record before it as a row of the same series whose
    // time moves on (both not raw): nothing to check between them, so a run
    // of these is committed in bulk (commit_run).
    bool cont : 1;
    uint16_t run;  // records from it to the next written one: 1, or a vector run's (at most HALF_RUN)
} half_rec;

typedef struct half_big {
    uint32_t k, at, n;  // kept column; the value's text, offset into buf
} half_big;

// A field as the helper reads it: csv.role and csv.keep_at, copied to
// cache lines of their own (csv.half_fields), away from what the main
// thread writes while the helper reads them.
typedef struct half_field {
    uint32_t keep;
    uint8_t role;
} half_field;

// The fields each thread writes while the other runs lie on cache lines
// of their own: a line written by one core and read by the other for each
// record moves between them each time, and made two threads slower than one.
typedef struct half_job {
    // Set before the helper starts; read by both.
    const csv *c;
    const half_field *fields;
    const sf_series_ids *ids;  // the series ids to find each record's in (csv.ids_copy), or NULL
    struct half_arrays *arrays;  // the part's arrays, sized by the thread that splits the buffer
    unsigned share;      // where the main thread's part ends, in 64ths of the buffer
    bool scan_quotes;    // a buffer with a quote is not split (csv.quoted_seen)
    // The buffer to read first (NULL: it is read): the input behind the
    // previous buffer, to room bytes, into spare behind that buffer's
    // tail, tail bytes at tail_from, an incomplete record.
    char *spare;
    const char *tail_from;
    size_t tail, room;
    int fd;
    // Set by the thread that splits the buffer; read by the other once
    // fetched (the helper's) or before it starts (the main thread's).
    const char *buf;           // the buffer: records' offsets count from it
    // Whole records, unless a quoted field went over start or end (the
    // main thread finds that out: parse_parallel).
    const char *start, *end;
    bool split;                // false: the buffer is not parsed in parallel (quotes, little data)
    float *rows;
    int64_t *times;      // with a time column
    half_rec *recs;
    uint32_t *row_ids;   // with a series column, each record's id (half_rec.id), a vector run's between too
    uint32_t *cats;      // per record, its categorical fields' texts in field order: offset, length
    half_big *pend;
    size_t pend_cap, cap;  // cap: records there is room for
    size_t got;          // bytes in spare
    int read_errno;      // 0, or read's error
    bool read_eof;
    atomic_bool fetched;  // read and split (set by the helper, under mu)
    bool finished;       // the helper is done with the job (under helper.mu)
    // Set by the helper once its part is parsed (done).
    _Alignas(64) size_t npend, nrows, nraw;
    unsigned parts;      // the ISO parts its times showed, raw records left out
    bool quoted;         // a field began with a quote: its record and the rest are one raw record
    // Records complete, published every HALF_BATCH, for a main thread that
    // commits them as they come and, when it catches up, sleeps until
    // wake_at are (0: awake): runs commit fast, and a wake-up every few
    // records would cost more than they do.
    _Alignas(64) atomic_size_t ready;
    atomic_bool done;  // nrows, nraw and parts are final
    _Alignas(64) atomic_size_t wake_at;
    pthread_mutex_t mu;
    pthread_cond_t more;
} half_job;

#define HALF_BATCH 32
#define HALF_WAKE 1024  // records the main thread sleeps for
#define HALF_RUN 1024  // records the helper takes from the vector parser, and commit_half holds, in one call

// The helper's records up to n complete: published, and the main thread
// woken if it waits for them.
static void half_publish(half_job *h, size_t n) {
    atomic_store(&h->ready, n);  // sequentially consistent with wake_at: one of the two sees the other
    size_t w = atomic_load(&h->wake_at);
    if (w && n >= w) {
        pthread_mutex_lock(&h->mu);
        pthread_cond_signal(&h->more);
        pthread_mutex_unlock(&h->mu);
    }
}

// Fresh memory of n bytes in place of p, whose contents need not be kept
// (realloc would copy them), or NULL with p left as it is. Huge pages
// where n allows (sf_alloc_large): a page fault costs microseconds on a
// virtual machine, and the buffers of a pack with two threads took
// thousands of them.
static void *fresh(void *p, size_t n) {
    void *q = sf_alloc_large(n);
    if (q) free(p);
    return q;
}

// Records that bytes of lines of about line bytes (0: unknown) can hold,
// as half_room counts them.
static size_t rows_room(const csv *c, size_t bytes, size_t line) {
    size_t most = bytes / (c->ncsv + c->nkeep) + 2;
    return line && bytes / line * 5 / 4 + 2 < most ? bytes / line * 5 / 4 + 2 : most;
}

// Room in a for the records of the part [from, to).
// A record has ncsv - 1 delimiters, a line feed and a byte per number;
// a last raw one takes any lines beyond (parse_half). Values above 2^24
// beyond two a record on average are parsed by the main path. The
// arrays are sized by the lines of the part's first 64 KiB, a quarter
// more, not for records that short: 10 times the part's bytes for four
// numbers, which a budget of RSS counts once the pages are touched. A
// part of shorter records leaves its last lines to the main thread.
// They are sized for a part as large as a whole PARALLEL_BUF buffer, in
// one allocation: parts grow with the buffers and the helper's share, and
// each larger copy was a new set of pages to fault in (a third of the
// faults of a pack with two threads, which took three times one's).
// Returns 0, or 1 without the memory.
static int half_room(const csv *c, struct half_arrays *a, const char *from, const char *to) {
    size_t part = (size_t)(to - from), sample = part < (1u << 16) ? part : 1u << 16, lines = 0;
    for (const char *p = from; (p = memchr(p, '\n', (size_t)(from + sample - p))); p++) lines++;
    size_t line = lines ? sample / lines : 0;  // bytes a line, about
    size_t need = rows_room(c, part, line);
    if (need <= a->cap) return 0;
    size_t max_rows = rows_room(c, part > PARALLEL_BUF ? part : PARALLEL_BUF, line);
    if (max_rows < a->cap + a->cap / 2) max_rows = a->cap + a->cap / 2;  // rare reallocs, no trail of freed copies
    size_t npend = max_rows * (c->nkeep < 2 ? c->nkeep : 2);
    // Each array on cache lines of its own. The arrays written row by row
    // first; then the records, written at the ends of runs only, and the
    // pending values, seldom: on 4 KiB pages, not faulted in 2 MiB at a
    // time for a few bytes (a pack with two threads took 3 MB less memory;
    // on a host that has not backed the pages yet, the helper's first
    // touches were up to 3% of its samples on the 1 GB CSV).
    size_t at_times = (max_rows * c->nkeep * sizeof(float) + 63) / 64 * 64;
    size_t at_ids = at_times + (max_rows * sizeof(int64_t) + 63) / 64 * 64;
    size_t at_cats = at_ids + (c->series_field != UINT32_MAX ? max_rows * sizeof(uint32_t) + 63 : 0) / 64 * 64;
    size_t dense = at_cats + (max_rows * 2 * c->ncat * sizeof(uint32_t) + 1 + 63) / 64 * 64;
    size_t at_pend = (max_rows * sizeof(half_rec) + 63) / 64 * 64, sparse;
    // The arrays hold a part committed before: nothing to keep.
    char *b = sf_alloc_large_sparse(dense, at_pend + npend * sizeof(half_big), &sparse);
    if (!b) return 1;
    free(a->block);
    *a = (struct half_arrays){.block = b, .rows = (float *)b, .times = (int64_t *)(b + at_times),
                              .row_ids = (uint32_t *)(b + at_ids), .cats = (uint32_t *)(b + at_cats),
                              .recs = (half_rec *)(b + sparse), .pend = (half_big *)(b + sparse + at_pend),
                              .cap = max_rows, .pend_cap = npend};
    return 0;
}

// h's part [from, to), parsed into h->arrays.
static void half_part(half_job *h, const char *from, const char *to) {
    const struct half_arrays *a = h->arrays;
    h->start = from, h->end = to;
    h->rows = a->rows, h->times = a->times, h->recs = a->recs, h->row_ids = a->row_ids;
    h->cats = a->cats, h->pend = a->pend, h->pend_cap = a->pend_cap, h->cap = a->cap;
}

// The helper's part of h->buf's complete records from pos to len: the
// records after the first share 64ths, in h->arrays. Sets h->split, false
// when the buffer does not qualify (quotes, little data, no room).
// quoted: 1 when [pos, len) holds a '"'; 0 when it does not or was not
// looked through (no quote seen before: the parsers find one); -1: look.
static void half_split(half_job *h, size_t pos, size_t len, int quoted) {
    const char *start = h->buf + pos, *end = h->buf + len;
    h->split = false;
    if (end - start < (1 << 18)) return;
    const char *last = memrchr(start, '\n', (size_t)(end - start));
    if (!last || quoted == 1 || (quoted < 0 && memchr(start, '"', (size_t)(last - start)))) return;
    size_t span = (size_t)(last - start), at = span * h->share / 64;
    const char *mid = memchr(start + at, '\n', span - at + 1);
    if (!mid || mid == last || half_room(h->c, h->arrays, mid + 1, last + 1)) return;
    half_part(h, mid + 1, last + 1);
    h->split = true;
}

// The next buffer as refill would leave it, read by the helper while the
// main thread commits the one before (the reads' copies from the page
// cache took a sixth of the main thread's time, the part of it the helper
// could not share), then split. Read 256 KiB at a time; once quotes were
// seen each piece is looked through for them while it is in cache (the
// same scan over the whole buffer, from memory, was 4% of the CPU time of
// a two-thread pack, in 256 KiB pieces 1%; before, the parsers find them).
static void fetch_buffer(half_job *h) {
    enum { PIECE = 1 << 18 };
    memcpy(h->spare, h->tail_from, h->tail);
    size_t len = h->tail;
    bool quoted = h->scan_quotes && memchr(h->spare, '"', len);
    while (len < h->room) {
        size_t want = h->room - len < PIECE ? h->room - len : PIECE;
        ssize_t k = read(h->fd, h->spare + len, want);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            h->read_errno = errno;
            break;
        }
        if (k == 0) {
            h->read_eof = true;
            break;
        }
        quoted = quoted || (h->scan_quotes && memchr(h->spare + len, '"', (size_t)k));
        len += (size_t)k;
    }
    memset(h->spare + len, 0, PAD);
    h->got = len;
    h->buf = h->spare;
    if (!h->read_errno) half_split(h, 0, len, quoted);
    pthread_mutex_lock(&h->mu);
    atomic_store_explicit(&h->fetched, true, memory_order_release);
    pthread_cond_signal(&h->more);
    pthread_mutex_unlock(&h->mu);
}

// The field at q is key[0, n) and ends where a scan for d would end it: a
// key checked before (an id's), its checks are that id's, without the scan.
static inline bool field_is(const char *q, const char *end, char d, const char *key, size_t n) {
    return end - q > (ptrdiff_t)n && (q[n] == d || (q[n] == '\n' && (!n || q[n - 1] != '\r'))) &&
           sf_bytes_equal(q, key, n);
}

// The helper thread's part: each record's values, time, series id and
// categorical texts, touching nothing the main thread writes (category
// codes are given by the main thread, in record order, as it commits).
// A field that begins with a quote may go on over lines: from its record
// on, the part is one raw record, the main thread's (parse_parallel).
// What it reads of the csv and the job is read once, here, into locals;
// its counts are written back at the end.
static void *parse_half(void *arg) {
    half_job *h = arg;
    const char *buf = h->buf, *p = h->start, *end = h->end;
    const char d = h->c->delim;
    const uint32_t ncsv = h->c->ncsv, nkeep = h->c->nkeep, ncat = h->c->ncat;
    const enum sf_time_kind kind = h->c->time_kind;
    const bool timed = h->c->time_field != UINT32_MAX;
    const half_field *fields = h->fields;
    const sf_series_ids *ids = h->ids;
    const sf_field_end_fn field_end = h->c->field_end;
    float *rows = h->rows;
    int64_t *times = h->times;
    half_rec *recs = h->recs;
    uint32_t *row_ids = h->row_ids;  // each held record's id, as its half_rec's (commit_half)
    uint32_t *cats = h->cats;
    half_big *pend = h->pend;
    const size_t cap = h->cap, pend_cap = h->pend_cap;
    size_t n = 0, npend = 0, nraw = 0;
    bool quoted = false;
    unsigned all_parts = 0, joined = 0;  // joined: the parts joined last
    sf_time_memo memo = {0};
    const sf_series_id *last_id = NULL;  // interleaved ids come round in the same order: its `after` is tried first
    const bool same_day = kind == SF_TIME_ISO && time_same_day_ok(d);
    const sf_number_rows_fn number_rows = h->c->number_rows;
    // The layout's fields that no thread writes (the main thread's run
    // state is its own), and this thread's memo.
    const sf_number_rows_layout *nl = &h->c->numbers;
    const sf_number_rows_layout shape = {.kind = nl->kind, .nfields = nl->nfields, .ncols = nl->ncols,
                                         .delim = nl->delim, .memo = &memo, .time_same_day = nl->time_same_day};
    const bool keyed = h->c->series_field != UINT32_MAX;
    uint32_t number_skip = 0, number_backoff = 0;  // as csv.number_skip
    while (p < end) {
        if (number_rows && n + 1 < cap && !number_skip) {
            // Runs of plain records through the vector parser, as the loop
            // below would leave them.
            uint32_t next_at[HALF_RUN], key_at[HALF_RUN], time_at[HALF_RUN];
            uint16_t key_len_at[HALF_RUN];
            uint8_t parts_at[HALF_RUN];
            size_t room = cap - 1 - n < HALF_RUN ? cap - 1 - n : HALF_RUN;
            const char *q;
            sf_number_rows_layout l = shape;
            l.have_last = n && !recs[n - 1].raw, l.parts = all_parts;
            l.last_time = l.have_last && timed ? times[n - 1] : 0;
            if (keyed && l.have_last) l.key = buf + recs[n - 1].key, l.key_len = recs[n - 1].key_len;
            l.any_key = keyed && ids;  // rows held: of any series seen before
            sf_number_rows_out out = {.rows = rows + n * nkeep, .times = times + n, .parts = parts_at, .ends = next_at,
                                      .keys = key_at, .key_lens = key_len_at, .time_starts = time_at};
            size_t k = number_rows(&l, p, end, room, &out, &q);
            uint32_t *id_at = row_ids + n;
            if (k && l.any_key) {  // the run ends before an id not seen yet, which the main path adds
                size_t i = ids_of(ids, &last_id, p, key_at, key_len_at, k, id_at);
                if (i < k) {
                    if (i && timed) l.parts = parts_at[i - 1];
                    else if (!i) l.parts = all_parts;
                    q = p + (i ? next_at[i - 1] : 0), k = i;
                }
            }
            if (k) {
                all_parts = l.parts;
                // The run is written as its head and its last record. Rows
                // held, the head is the first, each row's id in row_ids: the
                // commit holds them all at once, as held_run does with one
                // thread. Else the head is the first record going on from
                // the one before it (a first that does not stands alone).
                const bool goes_on = n && !recs[n - 1].raw;
                const size_t head = goes_on || l.any_key ? 0 : 1;
#ifndef NDEBUG
                // Garbage where the commit must not read, so that the tests
                // (debug and sanitizer builds) fail if it does.
                if (k > head + 2) memset(&recs[n + head + 1], 0x5a, (k - head - 2) * sizeof *recs);
#endif
                for (size_t i = 0; i < k; i++) {
                    if (i > head && i + 1 < k) i = k - 1;
                    half_rec *r = &recs[n + i];
                    *r = (half_rec){.pend = (uint32_t)npend, .parts = timed ? parts_at[i] : (uint8_t)all_parts,
                                    .cont = !l.any_key && (i > 0 || goes_on),
                                    .next = (uint32_t)(p - buf) + next_at[i], .run = 1};
                    if (i == head && k > head + 1) r->run = (uint16_t)(k - head);
                    if (timed) r->time_at = (uint32_t)(p - buf) + time_at[i];
                    if (keyed) r->key = (uint32_t)(p - buf) + key_at[i];
                    if (keyed && l.any_key) {
                        r->key_len = key_len_at[i], r->id = id_at[i];
                    } else if (keyed) {  // the series of the record before
                        r->key_len = recs[n - 1].key_len, r->id = recs[n - 1].id;
                    }
                }
                size_t before = n;
                n += k, p = q, number_backoff = 0;
                if (n / HALF_BATCH != before / HALF_BATCH) half_publish(h, n);
                continue;
            }
            number_skip = number_back_off(&number_backoff) + 1;  // this record included
        }
        if (number_skip) number_skip--;
        half_rec *r = &recs[n];
        *r = (half_rec){.pend = (uint32_t)npend, .run = 1};
        if (n + 1 == cap) {  // lines shorter than records can be (blank ones): the rest is the main path's
            r->raw = true;
            r->next = (uint32_t)(end - buf);
            nraw++, n++;
            break;
        }
        float *row = rows + n * nkeep;
        uint32_t *cat = cats + n * 2 * ncat;
        unsigned parts = 0;
        const char *q = p;
        bool ok = true, same_key = false;
        for (uint32_t f = 0; ok && f < ncsv; f++) {
            const uint8_t role = fields[f].role;
            const uint32_t k = fields[f].keep;
            const char *after = q, *te;
            size_t tn;
            if (*q == '"') {  // a quoted field, which may go on over lines: the main path's
                ok = false;
                break;
            }
            if (role == ROLE_KEEP && fast_number(q, end, d, &row[k], &after)) {
                te = after[-1] == '\r' ? after - 1 : after;
            } else if (role == ROLE_TIME && same_day && (tn = sf_time_same_day(&memo, q, end, d, &times[n]))) {
                te = after = q + tn;
                parts = memo.parts;
                r->time_at = (uint32_t)(q - buf);  // truncated stays false: no fraction
            } else if (role == ROLE_SERIES && n && r[-1].cont &&
                       field_is(q, end, d, buf + r[-1].key, r[-1].key_len)) {
                // a row of a run of one series: tried only behind one, as
                // where the series changes from row to row it would fail each time
                te = after = q + r[-1].key_len;
                r->key = (uint32_t)(q - buf), r->key_len = r[-1].key_len, r->id = r[-1].id;
                same_key = true;
            } else if (role == ROLE_SERIES && last_id && last_id->after &&
                       field_is(q, end, d, ids->slot[last_id->after - 1].key, ids->slot[last_id->after - 1].len) &&
                       !is_space(q[0], d) && !is_space(q[ids->slot[last_id->after - 1].len - 1], d)) {
                // interleaved series come round in the same order: the id
                // that followed the last one, found without a scan or a hash
                // (not one with spaces around it, from quotes: unquoted, the
                // spaces are padding, which the main path drops and notes)
                last_id = &ids->slot[last_id->after - 1];
                te = after = q + last_id->len;
                r->key = (uint32_t)(q - buf), r->key_len = (uint16_t)last_id->len;
                r->id = (uint32_t)(last_id - ids->slot) + 1;
            } else {
                after = field_end(after, end, d);
                // As next_field: a CR ends the text only as part of a CRLF.
                te = after > q && after < end && *after == '\n' && after[-1] == '\r' ? after - 1 : after;
                size_t len = (size_t)(te - q);
                uint32_t at = (uint32_t)(q - buf);
                if (role == ROLE_SKIP) {
                    const char *s = q;  // any text, unless a quote opens it after spaces
                    while (is_space(*s, d)) s++;
                    ok = *s != '"';
                } else if (len && (is_space(q[0], d) || is_space(te[-1], d))) {
                    ok = false;  // trimmed, and an id's padding noted, by the main path
                } else if (role == ROLE_KEEP) {
                    ok = sf_parse_float(q, len, &row[k]) == 0;  // a missing value: main path
                } else if (role == ROLE_TIME) {
                    ok = kind == SF_TIME_ISO ? sf_time_parse_memo(&memo, q, len, &times[n], &parts) == 0
                                             : parse_epoch(q, len, &times[n]) == 0 && epoch_fits(kind, times[n]);
                    r->time_at = at, r->truncated = ok && kind == SF_TIME_ISO && parts & SF_TIME_TRUNCATED;
                } else if (role == ROLE_SERIES) {
                    ok = len <= SF_PACK_MAX_NAME && sf_text_ok(q, len);
                    r->key = at, r->key_len = (uint16_t)len;
                    const sf_series_id *id = ok && ids ? sf_series_ids_find(ids, q, len) : NULL;
                    r->id = id ? (uint32_t)(id - ids->slot) + 1 : 0;
                    if (id) last_id = id;
                } else {  // ROLE_CATEGORY
                    ok = !missing_token(q, len);
                    *cat++ = at, *cat++ = (uint32_t)len;
                }
            }
            if (ok && role == ROLE_KEEP && fabsf(row[k]) >= 0x1p24f) {
                ok = npend < pend_cap;  // else the main path takes the record
                if (ok) pend[npend++] = (half_big){k, (uint32_t)(q - buf), (uint32_t)(te - q)};
            }
            q = after;
            bool last = f + 1 == ncsv;
            if (q == end || (*q == '\n') != last) ok = false;  // ragged, or a blank line
            else q++;
        }
        if (ok) {
            r->npend = (uint16_t)(npend - r->pend);
            // Joining the parts of the record before again changes nothing:
            // a call per record saved.
            if (parts != joined) all_parts = sf_time_parts_join(all_parts, parts), joined = parts;
            r->parts = (uint8_t)all_parts;  // bits 0-6 (sf_time_parts_join)
            if (keyed) row_ids[n] = r->id;
            const half_rec *b = n ? r - 1 : NULL;
            r->cont = b && !b->raw &&
                      (same_key || (b->key_len == r->key_len && sf_bytes_equal(buf + b->key, buf + r->key, r->key_len))) &&
                      (!timed || times[n] > times[n - 1]);
        } else {
            r->raw = true;
            npend = r->pend;
            nraw++;
            const char *eol = memchr(p, '\n', (size_t)(end - p));
            q = eol ? eol + 1 : end;
            // A quote may open a field that goes on over lines: this line
            // and every one after it are the main thread's, in one record.
            if (memchr(p, '"', (size_t)(q - p))) q = end, quoted = true;
        }
        r->next = (uint32_t)(q - buf);
        p = q;
        if (++n % HALF_BATCH == 0) half_publish(h, n);
    }
    h->nrows = n, h->npend = npend, h->nraw = nraw, h->parts = all_parts, h->quoted = quoted;
    pthread_mutex_lock(&h->mu);
    atomic_store(&h->ready, n);
    atomic_store(&h->done, true);
    pthread_cond_signal(&h->more);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

// The helper thread, started for the first buffer parsed in parallel and
// kept for the rest: a thread a buffer cost a clone, signal masks set and
// reset, and a stack given back (madvise) and faulted in again, each time.
// queue: the jobs handed over, run in order: this buffer's part, then the
// next buffer's read and part.
typedef struct helper {
    pthread_t t;
    pthread_mutex_t mu;
    pthread_cond_t cv;  // a job handed over, a job finished, quit
    half_job *queue[2];
    unsigned nq;
    bool quit;
} helper;

static void *helper_main(void *arg) {
    helper *hp = arg;
    pthread_mutex_lock(&hp->mu);
    for (;;) {
        while (!hp->nq && !hp->quit) pthread_cond_wait(&hp->cv, &hp->mu);
        if (!hp->nq) break;
        half_job *h = hp->queue[0];
        pthread_mutex_unlock(&hp->mu);
        if (h->spare) fetch_buffer(h);
        if (h->split) parse_half(h);
        pthread_mutex_lock(&hp->mu);
        hp->queue[0] = hp->queue[1];
        hp->nq--;
        h->finished = true;
        pthread_cond_broadcast(&hp->cv);
    }
    pthread_mutex_unlock(&hp->mu);
    return NULL;
}

// Hands h to the helper thread, started first if need be: 0, or 1 when
// there is none (the buffer is then parsed by the main thread alone).
static int helper_run(csv *c, half_job *h) {
    helper *hp = c->helper;
    if (!hp) {
        if (!(hp = calloc(1, sizeof *hp))) return 1;
        bool mu = pthread_mutex_init(&hp->mu, NULL) == 0, cv = mu && pthread_cond_init(&hp->cv, NULL) == 0;
        if (!cv || sf_thread_start(&hp->t, helper_main, hp)) {
            if (cv) pthread_cond_destroy(&hp->cv);
            if (mu) pthread_mutex_destroy(&hp->mu);
            free(hp);
            return 1;
        }
        c->helper = hp;
    }
    pthread_mutex_lock(&hp->mu);
    hp->queue[hp->nq++] = h;
    pthread_cond_broadcast(&hp->cv);
    pthread_mutex_unlock(&hp->mu);
    return 0;
}

// Waits until the helper is done with h (read, parsed): as a join of a
// thread of its own would.
static void helper_wait(helper *hp, const half_job *h) {
    pthread_mutex_lock(&hp->mu);
    while (!h->finished) pthread_cond_wait(&hp->cv, &hp->mu);
    pthread_mutex_unlock(&hp->mu);
}

// Waits until h's buffer is read and split.
static void fetch_wait(half_job *h) {
    pthread_mutex_lock(&h->mu);
    while (!atomic_load(&h->fetched)) pthread_cond_wait(&h->more, &h->mu);
    pthread_mutex_unlock(&h->mu);
}

static void helper_stop(helper *hp) {
    if (!hp) return;
    pthread_mutex_lock(&hp->mu);
    hp->quit = true;
    pthread_cond_broadcast(&hp->cv);
    pthread_mutex_unlock(&hp->mu);
    pthread_join(hp->t, NULL);
    pthread_cond_destroy(&hp->cv);
    pthread_mutex_destroy(&hp->mu);
    free(hp);
}

// The next record of the helper's part once it is complete: 1, or 0 when
// there is none. *waited: the main thread had to wait for it.
static int half_next(half_job *h, size_t i, bool *waited) {
    if (i < atomic_load_explicit(&h->ready, memory_order_acquire)) return 1;
    pthread_mutex_lock(&h->mu);
    atomic_store(&h->wake_at, i + HALF_WAKE);
    while (i + HALF_WAKE > atomic_load(&h->ready) && !atomic_load(&h->done)) {
        *waited = true;
        pthread_cond_wait(&h->more, &h->mu);
    }
    atomic_store(&h->wake_at, 0);
    pthread_mutex_unlock(&h->mu);
    return i < atomic_load(&h->ready);
}

// n rows of the current series appended to the batch as series_row
// appends rows it has nothing to check or fill in (flushed as it fills):
// values n * nkeep, times (NULL without a time column), row k's line
// lines[k], or first_line + k where lines is NULL.
static int batch_append(csv *c, const float *values, const int64_t *times, const int64_t *lines, int64_t first_line,
                        size_t n) {
    int rc = 0;
    for (size_t done = 0; !rc && done < n;) {
        size_t m = c->batch_rows - c->nbatch < n - done ? c->batch_rows - c->nbatch : n - done;
        memcpy(c->row, values + done * c->nkeep, m * c->nkeep * sizeof(float));
        if (times) memcpy(c->batch_time + c->nbatch, times + done, m * sizeof(int64_t));
        if (c->batch_imp) memset(c->batch_imp + c->nbatch * c->nkeep, 0, m * c->nkeep);
        int64_t *to = c->batch_line + c->nbatch, first = first_line + (int64_t)done;  // locals: a loop that vectorizes
        if (lines) memcpy(to, lines + done, m * sizeof(int64_t));
        else
            for (size_t k = 0; k < m; k++) to[k] = first + (int64_t)k;
        c->row += m * c->nkeep;
        c->nbatch += m;
        done += m;
        if (c->nbatch == c->batch_rows) rc = flush_batch(c);
    }
    return rc;
}

// The helper's records [i, j), each going on from the one before it (cont),
// committed as one: the record before i was committed last, so each is a
// row of the current series whose time moves on, which series_row would
// append to the batch unchanged. Their categories are coded and their
// values above 2^24 and cut times counted in order, then the rows are
// copied to the batch as series_row appends them (flushed as it fills, so
// that the batch holds what one thread leaves there, which messages about
// the rows before a record read) or to the regrouper.
static int commit_run(csv *c, const half_job *h, const uint32_t *cat_fields, uint32_t ncf, size_t i, size_t j) {
    bool timed = c->time_field != UINT32_MAX;
    int rc = 0;
    c->time_parts = sf_time_parts_join(c->time_parts, h->recs[j - 1].parts);
    // Nothing to code or count in the run (pend offsets are cumulative; a
    // cut time shows 6 fraction digits in the parts joined up to it): the
    // loop over its records is skipped, a third of the run's cost.
    const half_rec *last = &h->recs[j - 1];
    bool plain = !ncf && last->pend + last->npend == h->recs[i].pend &&
                 (last->parts >> SF_TIME_FRACTION_SHIFT & 7) < 6;
    for (size_t k = i; !rc && !plain && k < j; k += h->recs[k].run) {  // a vector run's others: nothing to count
        const half_rec *r = &h->recs[k];
        float *row = h->rows + k * c->nkeep;
        const uint32_t *cat = h->cats + k * 2 * c->ncat;
        for (uint32_t m = 0; !rc && m < ncf; m++)
            rc = category_field(c, cat_fields[m], c->buf + cat[2 * m], c->buf + cat[2 * m], cat[2 * m + 1],
                                &row[c->keep_at[cat_fields[m]]]);
        for (uint32_t m = 0; m < r->npend; m++) {
            const half_big *b = &h->pend[r->pend + m];
            if (!c->lossy[b->k].big) c->big_cols[c->nbig_cols++] = b->k;
            big_value(c, &c->lossy[b->k], row[b->k], c->buf + b->at, b->n, c->buf + b->at);
        }
        if (r->truncated && !c->truncated++) {
            where(c, c->buf + r->time_at, &c->truncated_line, &(uint64_t){0});
            c->truncated_line += (uint64_t)c->line_base;  // an origin
        }
    }
    // One line per record (no quotes).
    int64_t line = c->line_base + (int64_t)c->line;
    for (size_t k = i; !rc && c->rg && k < j; k++) {
        c->st.rows++;
        rc = sf_regroup_add(c->rg, c->cur_index, h->rows + k * c->nkeep, timed ? h->times[k] : 0,
                            line + (int64_t)(k - i), c->e);
    }
    // A run longer than a batch goes to the writer from the part's arrays,
    // the batch emptied first: copying it through the batch cost a pass
    // over its rows, which the writer reads again. Its last rows, as many
    // as one thread leaves in the batch, are copied there as one thread
    // would: messages about the record after the run read the rows before it.
    size_t tail = (c->nbatch + (j - i)) % c->batch_rows, from = i;
    if (!rc && !c->rg && j - i >= c->batch_rows && !(rc = flush_batch(c))) {
        for (from = i; !rc && from < j - tail;) {
            size_t n = c->batch_rows < j - tail - from ? c->batch_rows : j - tail - from;
            int64_t *to = c->batch_line, first = line + (int64_t)(from - i);
            for (size_t k = 0; k < n; k++) to[k] = first + (int64_t)k;
            rc = sf_pack_writer_rows_imputed(c->w, h->rows + from * c->nkeep, timed ? h->times + from : NULL, to,
                                             NULL, n, c->e);
            from += n;
        }
        memcpy(c->last, h->rows + (from - 1) * c->nkeep, c->nkeep * sizeof(float));
        c->st.rows += from - i;
    }
    if (!rc && !c->rg && from < j)
        rc = batch_append(c, h->rows + from * c->nkeep, timed ? h->times + from : NULL, NULL,
                          line + (int64_t)(from - i), j - from);
    if (rc) return rc;
    if (!c->rg && timed)  // held rows are checked only as they are merged
        c->prev_time = h->times[j - 1], c->prev_time_line = (uint64_t)(line + (int64_t)(j - 1 - i));
    c->line += j - i;
    c->pos = h->recs[j - 1].next;
    c->st.rows_helper_runs += j - i;
    return 0;
}

// The helper's records committed in order, as they come, as if parse_until
// had parsed them: a raw one parsed here; a run of rows going on in one
// series at once (commit_run); any other's values, time, series id and
// categorical texts set as parse_record sets them, each check, series
// change and regrouping the main path's own.
static int commit_half(csv *c, half_job *h, bool *waited) {
    uint32_t cat_fields[64], ncf = 0;  // at most 64 categorical columns (convert)
    for (uint32_t f = 0; f < c->ncsv && ncf < 64; f++)
        if (c->role[f] == ROLE_CATEGORY) cat_fields[ncf++] = f;
    // The parts joined last: joining them again changes nothing (a join of
    // flags and the most fraction digits), so a call a record is saved.
    unsigned joined = ~0u;  // none: parts are 8 bits
    for (size_t i = 0; half_next(h, i, waited); i++) {
        const half_rec *r = &h->recs[i];
        size_t next = r->next;
        int rc;
        if (r->raw || c->blank_line) {  // behind a blank line every record is the main path's error
            if (r->run > 1) next = h->recs[i + r->run - 1].next, i += r->run - 1;  // the whole run
            if ((rc = parse_until(c, next, PARSE_NO_REFILL))) return rc;
            continue;
        }
        if (r->cont) {  // the record before it was committed just now
            size_t j = i + r->run, ready = atomic_load_explicit(&h->ready, memory_order_acquire);
            while (j < ready && h->recs[j].cont) j += h->recs[j].run;
            if ((rc = commit_run(c, h, cat_fields, ncf, i, j))) return rc;
            i = j - 1;
            continue;
        }
        c->rec_quoted = c->rec_missing = false;
        c->npend = 0;
        c->key_padded = false;
        if (c->time_field != UINT32_MAX) {
            c->rec_time = h->times[i];
            c->time_at = c->buf + r->time_at;
            if (r->parts != joined) c->time_parts = sf_time_parts_join(c->time_parts, r->parts), joined = r->parts;
        }
        c->rec_truncated = r->truncated ? c->time_at : NULL;
        if (r->id && !ncf && !r->npend && !r->truncated) {
            // Held rows of series seen before (the parse found their ids in
            // csv.ids_copy, and put them in row_ids) with nothing to count:
            // held at once, up to HALF_RUN of them, as commit_record would
            // hold each, without copying them, their ids and a lookup; rows
            // of interleaved series each come this way.
            uint32_t series[HALF_RUN];
            size_t ready = atomic_load_explicit(&h->ready, memory_order_acquire), j = i + r->run;
            for (const half_rec *x; j < ready; j += x->run) {
                x = &h->recs[j];
                if (j - i + x->run > HALF_RUN || x->raw || x->cont || !x->id || x->npend || x->truncated) break;
            }
            // Parts are joined up to each record: the last one's hold the others'.
            const half_rec *last = &h->recs[j - 1];
            if (last->parts != joined) c->time_parts = sf_time_parts_join(c->time_parts, last->parts), joined = last->parts;
            bool timed = c->time_field != UINT32_MAX;
            if ((rc = hold_rows(c, h->ids, h->row_ids + i, series, h->rows + i * c->nkeep, timed ? h->times + i : NULL,
                                j - i)))
                return rc;
            if (timed) c->rec_time = h->times[j - 1], c->time_at = c->buf + h->recs[j - 1].time_at;
            c->pos = h->recs[j - 1].next;
            i = j - 1;
            continue;
        }
        if (c->nkeep == 1) c->row[0] = h->rows[i];  // a call to memcpy for one value cost more than the copy
        else memcpy(c->row, h->rows + i * c->nkeep, c->nkeep * sizeof(float));
        for (uint32_t j = 0; j < r->npend; j++) {
            const half_big *b = &h->pend[r->pend + j];
            c->pend[c->npend++] = (struct big_pending){b->k, c->buf + b->at, c->buf + b->at, b->n};
        }
        const uint32_t *cat = h->cats + i * 2 * c->ncat;
        for (uint32_t j = 0; j < ncf; j++)
            if ((rc = category_field(c, cat_fields[j], c->buf + cat[2 * j], c->buf + cat[2 * j], cat[2 * j + 1],
                                     &c->row[c->keep_at[cat_fields[j]]])))
                return rc;
        if (c->series_field != UINT32_MAX) {
            size_t need = (size_t)r->key_len + 1;
            if (need > c->key_cap) {
                char *k = realloc(c->key, need);
                if (!k) return sf_err_set(c->e, SF_ENOMEM, "%s: out of memory", c->name);
                c->key = k;
                c->key_cap = need;
            }
            memcpy(c->key, c->buf + r->key, r->key_len);
            c->key_len = r->key_len;
            c->key_at = c->buf + r->key;
        }
        if ((rc = commit_record(c))) return rc;
        c->line++;  // no quotes: one line per record
        c->pos = next;
    }
    c->time_parts = sf_time_parts_join(c->time_parts, h->parts);
    return 0;  // c->pos at h->end, unless a quoted field in the last raw record went over it
}

// The helper's records committed as one run after it, when they need no
// state between records (no series column, missing values are errors, no
// categories, times that keep order).
static int write_half(csv *c, const half_job *h) {
    int rc = h->nrows ? commit_run(c, h, NULL, 0, 0, h->nrows) : 0;
    if (rc) return rc;
    c->have_last |= h->nrows > 0;
    c->time_parts = sf_time_parts_join(c->time_parts, h->parts);
    c->pos = (size_t)(h->end - c->buf);
    return 0;
}

// The buffer the helper read (fetch_buffer) in place of this one, whose
// records are all committed: as refill leaves it.
static int take_next(csv *c, const half_job *h) {
    if (h->read_errno) return sf_err_errno(c->e, SF_EIO, h->read_errno, "%s: read failed", c->name);
    char *b = c->buf;
    size_t cap = c->cap;
    c->buf = c->spare, c->spare = b;
    c->cap = c->spare_cap, c->spare_cap = cap;
    c->consumed += c->pos;
    c->len = h->got, c->pos = 0, c->eof = h->read_eof;
    return progress(c, c->st.rows, c->consumed + c->pos);
}

// The series ids the parts find their rows' in, while rows are held (and
// there are no categories: those rows take the commit's own path): copy k
// of seen's slots, since the main thread adds ids while the helper reads,
// taken again only when ids came; none when the slots are more bytes than
// the buffer (then a copy for each buffer with new ids would cost more than
// parsing it).
static const sf_series_ids *held_ids(csv *c, unsigned k) {
    if (!c->rg || c->ncat) return NULL;
    sf_series_ids *copy = &c->ids_copy[k];
    if (copy->len != c->seen.len) {  // ids came (the slots move only then)
        size_t bytes = c->seen.cap * sizeof *c->seen.slot;
        sf_series_id *t = bytes <= c->cap ? realloc(copy->slot, bytes) : NULL;
        if (!t) {
            free(copy->slot);
            *copy = (sf_series_ids){0};
            return NULL;
        }
        memcpy(t, c->seen.slot, bytes);
        *copy = (sf_series_ids){.slot = t, .cap = c->seen.cap, .len = c->seen.len};
    }
    return copy;
}

// Job k of the helper (its arrays k; its ids, copy k, are the caller's to
// set), split where the main thread's part is to end now.
static int half_init(half_job *h, csv *c, unsigned k) {
    *h = (half_job){.c = c, .fields = c->half_fields, .arrays = &c->part[k], .share = c->share};
    atomic_init(&h->ready, 0);
    atomic_init(&h->done, false);
    atomic_init(&h->wake_at, 0);
    atomic_init(&h->fetched, false);
    if (pthread_mutex_init(&h->mu, NULL)) return 1;
    if (pthread_cond_init(&h->more, NULL)) {
        pthread_mutex_destroy(&h->mu);
        return 1;
    }
    return 0;
}

static void half_destroy(half_job *h) {
    pthread_cond_destroy(&h->more);
    pthread_mutex_destroy(&h->mu);
}

// The input from c->pos on, as refill would leave it, where a quoted field
// went over the split or over the buffer's last line end: the rest of this
// buffer, then the bytes the next job read behind its tail (which is a
// copy of this buffer's from the old split's end). The next job, if any,
// is dropped with its split; from here on each buffer is looked through for
// quotes before a split. Returns 0 or an error.
static int rejoin(csv *c, half_job *next) {
    c->quoted_seen = true;
    if (!next) return 0;
    helper_wait(c->helper, next);
    half_destroy(next);
    if (next->read_errno) return sf_err_errno(c->e, SF_EIO, next->read_errno, "%s: read failed", c->name);
    compact(c);
    size_t add = next->got - next->tail;
    if (c->len + add > c->cap) {
        char *b = realloc(c->buf, c->len + add + PAD);
        if (!b) return sf_err_set(c->e, SF_ENOMEM, "%s: out of memory for a quoted record", c->name);
        c->buf = b, c->cap = c->len + add;
    }
    memcpy(c->buf + c->len, next->buf + next->tail, add);
    c->len += add, c->eof = next->read_eof;
    memset(c->buf + c->len, 0, PAD);
    return 0;
}

// With two or more threads, the complete records in the buffer are split
// in two parts parsed at the same time: the main thread parses and commits
// the first, a helper thread parses the second, which the main thread
// commits as they come, a run of rows going on in one series at once
// (commit_half) or, with no state between records, writes at once after
// it (write_half). The helper then reads the next buffer, splits it and
// parses its second part while the main thread commits this one, so that
// neither waits for the other between buffers. The split follows the work
// (c->share). Until a quote is seen the buffers are split unread: a part
// is whole records if the main thread's part ends at the split and the
// commit at the part's end, and the helper leaves a record with a field
// that begins with a quote, and all after it, to the main thread; else the
// bytes are joined again (rejoin). Returns 1 when the buffer does not
// qualify (quotes, little data, a pending blank line).
static int parse_parallel(csv *c) {
    if (!c->half_fields) {
        size_t bytes = (c->ncsv * sizeof *c->half_fields + 63) / 64 * 64;
        if (!(c->half_fields = aligned_alloc(64, bytes))) return 1;
        for (uint32_t f = 0; f < c->ncsv; f++) c->half_fields[f] = (half_field){c->keep_at[f], c->role[f]};
    }
    if (!c->jobs && !(c->jobs = calloc(2, sizeof *c->jobs))) return 1;
    half_job *h = c->ahead;  // this buffer's, read and split by the helper
    c->ahead = NULL;
    if (h && (!h->split || c->blank_line)) {
        helper_wait(c->helper, h);
        half_destroy(h);
        return 1;
    }
    if (!h) {
        if (c->blank_line) return 1;
        h = &c->jobs[c->turn];
        if (half_init(h, c, c->turn)) return 1;
        h->buf = c->buf;
        half_split(h, c->pos, c->len, c->quoted_seen ? -1 : 0);
        if (h->split) h->ids = held_ids(c, c->turn);  // copied only for a buffer that qualifies
        if (!h->split || helper_run(c, h)) {
            half_destroy(h);
            return 1;
        }
    }
    const char *mid = h->start;
    // Without state between records the helper's rows go to the writer at
    // once, after it; else the main thread commits them as they come.
    bool bulk = c->series_field == UINT32_MAX && c->o->missing == SF_MISSING_ERROR && !c->ncat;
    // The next buffer's job, queued behind this one's.
    half_job *next = NULL;
    if (c->fd >= 0 && !c->eof) {
        // Each buffer costs the threads a few hand-overs, each a wake-up of
        // tens of microseconds on a virtual machine, where a 1 MiB buffer
        // takes a millisecond: buffers double up to PARALLEL_BUF. Not
        // beyond: the buffers and the parts' arrays are memory each page
        // of which costs a fault once and, kept, a place in the caches
        // (at 8 MiB two threads took 1.14x the CPU of one on a 1 GB CSV,
        // 1.65x on 40 MB; at 2 MiB 1.10x and 1.32x).
        size_t room = c->cap >= PARALLEL_BUF ? c->cap : 2 * c->cap < PARALLEL_BUF ? 2 * c->cap : PARALLEL_BUF;
        if (c->spare_cap != room) {
            char *b = fresh(c->spare, room + PAD);  // its records are committed
            if (b) c->spare = b, c->spare_cap = room;
        }
        if (c->spare_cap == room && !half_init(&c->jobs[!c->turn], c, !c->turn)) {
            next = &c->jobs[!c->turn];
            next->ids = held_ids(c, !c->turn);
            next->spare = c->spare, next->room = room, next->fd = c->fd, next->scan_quotes = c->quoted_seen;
            next->tail_from = h->end, next->tail = c->len - (size_t)(h->end - c->buf);
            if (helper_run(c, next)) {
                half_destroy(next);
                next = NULL;  // refill reads it
            }
        }
    }
    // The main thread parses its part as one thread does: runs of one
    // series, or of held rows, go from the vector parser to the batch or
    // the regrouper, and arrays in between, as the helper's, cost more
    // than they saved (5% of the CPU on grouped series, 1-4% on
    // interleaved ones).
    bool waited = false;
    const size_t end_at = (size_t)(h->end - c->buf);
    int rc = parse_until(c, (size_t)(mid - c->buf), PARSE_NO_REFILL);
    if (!rc && c->pos != (size_t)(mid - c->buf)) {  // the helper's part began inside a quoted field
        helper_wait(c->helper, h);
        half_destroy(h);
        return rejoin(c, next);
    }
    if (bulk) waited = !atomic_load_explicit(&h->done, memory_order_acquire);
    else if (!rc) rc = commit_half(c, h, &waited);
    // The main thread's part grows while it waits for the helper (for its
    // records, or, having committed them, for the next buffer), shrinks
    // while the helper waits: down to 1/32 of the buffer where it commits
    // every record, to 1/4 where the helper's rows go to the writer at once
    // (the helper's arrays, sized to its part, stay small there). In bulk
    // the read goes on while the main thread writes the helper's rows.
    if (!bulk && next && !atomic_load_explicit(&next->fetched, memory_order_acquire)) waited = true;
    unsigned least = bulk ? 16 : 2;
    if (!rc) c->share = waited ? (c->share < 48 ? c->share + 1 : 48) : (c->share > least ? c->share - 1 : least);
    if (!rc && bulk) {
        // Its records are final once it is done; it reads the next buffer
        // while they are written.
        pthread_mutex_lock(&h->mu);
        while (!atomic_load(&h->done)) pthread_cond_wait(&h->more, &h->mu);
        pthread_mutex_unlock(&h->mu);
        c->st.rows_helper += h->nrows, c->st.rows_helper_raw += h->nraw;
        bool timed = c->time_field != UINT32_MAX;
        bool at_once = !h->nraw && !c->blank_line;
        // The first time repeated within the series is the main path's to say.
        for (size_t k = 0; at_once && timed && k < h->nrows; k++) {
            int64_t before = k ? h->times[k - 1] : c->have_last ? c->prev_time : INT64_MIN;
            at_once = before < h->times[k] || (before == h->times[k] && c->repeat_line);
        }
        rc = at_once ? write_half(c, h) : commit_half(c, h, &waited);
        helper_wait(c->helper, h);
    } else {
        helper_wait(c->helper, h);
        if (!rc) c->st.rows_helper += h->nrows, c->st.rows_helper_raw += h->nraw;
    }
    c->quoted_seen |= h->quoted;
    half_destroy(h);
    if (!rc && c->pos != end_at) return rejoin(c, next);  // a quoted field went over the part's end
    if (!next) return rc;
    if (!rc) {
        fetch_wait(next);
        rc = take_next(c, next);
    }
    if (rc) {
        helper_wait(c->helper, next);
        half_destroy(next);
        return rc;
    }
    c->ahead = next;
    c->turn = !c->turn;
    return 0;
}

// One regrouped row, with the checks a row of contiguous series gets as
// it is parsed.
static int regroup_row(csv *c, const float *values, int64_t time, int64_t line, const uint8_t *imputed) {
    if (c->nkeep == 1) c->row[0] = values[0];  // as in commit_half
    else memcpy(c->row, values, c->nkeep * sizeof(float));
    c->rec_time = time;
    c->rec_missing = false;
    for (uint32_t k = 0; k < c->nkeep; k++) c->rec_missing |= isnan(c->row[k]);
    int rc = (c->st.rows + c->nbatch) & 0xfffff ? 0 : progress(c, c->st.rows + c->nbatch, c->consumed + c->len);
    return rc ? rc : series_row(c, line, imputed);
}

// Regrouped rows of one series (sf_regroup_emit), in series order: a new
// series opens in the writer; then the rows series_row has nothing to
// check or fill in (after the series' first, no value missing, each time
// after the one before) are appended at once, and any other gets its checks.
static int regroup_emit(void *arg, uint32_t series, const float *values, const int64_t *times, const int64_t *lines,
                        const uint8_t *imputed, size_t n) {
    csv *c = arg;
    const uint32_t nkeep = c->nkeep;
    if (!c->cur_series || series != c->cur_index) {
        const sf_series_id *s = c->by_index[series];
        int rc = flush_batch(c);
        if (!rc) rc = sf_pack_writer_series(c->w, s->key, s->len, c->e);
        if (rc) return rc;
        c->cur_series = s->key, c->cur_series_len = s->len, c->cur_index = series;
        c->have_last = false;
        c->seeded = -1;
    }
    int rc = 0;
    for (size_t i = 0; !rc && i < n;) {
        size_t j = i;
        for (int64_t before = c->prev_time; c->have_last && !imputed && j < n; j++) {
            bool missing = false;
            for (uint32_t k = 0; k < nkeep; k++) missing |= isnan(values[j * nkeep + k]);
            if (missing || (times && times[j] <= before)) break;
            if (times) before = times[j];
        }
        if (j == i) {
            rc = regroup_row(c, values + i * nkeep, times ? times[i] : 0, lines[i], imputed ? imputed + i * nkeep : NULL);
            i++;
            continue;
        }
        // Progress said where regroup_row says it: before a row when the
        // rows before it are a multiple of 2^20.
        uint64_t rows = c->st.rows + c->nbatch, room = 0x100000 - (rows & 0xfffff);
        if (!(rows & 0xfffff) && (rc = progress(c, rows, c->consumed + c->len))) break;
        if (j - i > room) j = i + (size_t)room;
        rc = batch_append(c, values + i * nkeep, times ? times + i : NULL, lines + i, 0, j - i);
        if (!rc && times) c->prev_time = times[j - 1], c->prev_time_line = (uint64_t)lines[j - 1];
        i = j;
    }
    return rc;
}

// After the last row: the held rows merged series by series into the
// writer, opened again (its first file became the merge's head).
static int regroup_finish(csv *c) {
    if (!(c->by_index = sf_series_ids_by_index(&c->seen, c->nindex)))
        return sf_err_set(c->e, SF_ENOMEM, "%s: out of memory for the series table", c->name);
    int rc = sf_pack_writer_open(&c->w, c->out, &c->wo, c->e);
    if (rc) return rc;
    if (c->o->temp_path) c->o->temp_path(c->o->progress_arg, sf_pack_writer_temp_path(c->w));
    // Counted again as the rows reach the writer.
    c->st.rows = c->st.nseries = 0;
    c->cur_series = NULL, c->have_last = false, c->padded_line = 0, c->seeded = -1;
    rc = sf_regroup_merge(c->rg, regroup_emit, c, c->e);
    if (!rc) rc = flush_batch(c);
    c->st.regrouped = true;
    c->st.runs = sf_regroup_runs(c->rg), c->st.passes = sf_regroup_passes(c->rg);
    c->st.spilled_bytes = sf_regroup_spilled(c->rg);
    return rc;
}

// A file written to while it was packed (appended to, say) would give a
// torn last row and a pack of neither version: refused.
static int check_unchanged(csv *c) {
    struct stat now;
    if (!S_ISREG(c->opened.st_mode) || fstat(c->fd, &now) != 0) return 0;
    if (now.st_size != c->opened.st_size || now.st_mtim.tv_sec != c->opened.st_mtim.tv_sec ||
        now.st_mtim.tv_nsec != c->opened.st_mtim.tv_nsec)
        return sf_err_set(c->e, SF_EIO, "%s changed while it was packed (%lld bytes at the start, %lld at the end): "
                          "pack it again once nothing writes to it", c->name, (long long)c->opened.st_size,
                          (long long)now.st_size);
    return 0;
}

// What the user should know about the file just written (sf_csv_pack_opts.note).
static void notes(csv *c) {
    if (!c->o->note) return;
    char msg[2048], at[256];
    uint64_t records = c->st.rows + c->st.rows_dropped;
    uint32_t said = 0, more = 0;
    uint64_t more_values = 0;
    for (uint32_t i = 0; i < c->nbig_cols; i++) {
        uint32_t k = c->big_cols[i];
        const lossy *l = &c->lossy[k];
        if (!l->changed) continue;
        if (said == 8) {  // a warning per column up to 8, then how many more
            more++, more_values += l->changed;
            continue;
        }
        said++;
        char stored[48];
        snprintf(stored, sizeof stored, "%.0f", (double)l->first_stored);  // an integer, written out
        size_t len = 0;
        append(msg, sizeof msg, &len, "warning: column \"%s\": float32 holds integers exactly only up to 16777216 "
               "(2^24), and packing changed %llu of its values, by up to %.10g (line %s: %s is stored as %s)",
               c->col_names[k], (unsigned long long)l->changed, l->max_change,
               note_line(c, l->first_line, at, sizeof at), l->first, stored);
        // Dates as 20200101 in every row, rising: the time axis, which
        // keeps them exact.
        bool dates = !l->not_date && !l->back && l->big + l->missing == records &&
                     (!l->missing || c->o->missing == SF_MISSING_DROP) && c->time_field == UINT32_MAX && c->nkeep > 1;
        if (dates) {
            size_t mark = len;
            append(msg, sizeof msg, &len, ". Its values look like dates (yyyymmdd): to make it the time column, "
                   "exact, pack it with: ");
            if (!again(c, &(again_edit){.time_column = c->col_names[k], .drop = c->o->columns ? c->col_names[k] : NULL},
                       msg + len, sizeof msg - len))
                snprintf(msg + mark, sizeof msg - mark, ". Its values look like dates (yyyymmdd): --time-column "
                         "makes it the time column, exact%s", first_pack(c));
        }
        // Integers rising in every row, in years 1980-2099 as epoch counts
        // of a unit (the coarsest first): a time column, exact with that
        // unit. Narrower than a unit mistake's 1900-2199: a counter above
        // 2^24 is 1970 in seconds, and must not be taken for times.
        bool epochs = !dates && !l->not_int && l->ranged && !l->back && l->big + l->missing == records &&
                      (!l->missing || c->o->missing == SF_MISSING_DROP) && c->time_field == UINT32_MAX && c->nkeep > 1;
        for (int u = SF_TIME_EPOCH_S; epochs && u <= SF_TIME_EPOCH_NS; u++) {
            enum sf_time_kind kind = (enum sf_time_kind)u;
            if (!epoch_fits(kind, l->lo) || !epoch_fits(kind, l->hi) || epoch_us(kind, l->lo) < 315532800000000ll ||
                epoch_us(kind, l->hi) >= 4102444800000000ll)
                continue;
            char from[48], to[48];
            sf_time_format(from, sizeof from, epoch_us(kind, l->lo), SF_TIME_CLOCK | SF_TIME_SECONDS | SF_TIME_ZONE);
            sf_time_format(to, sizeof to, epoch_us(kind, l->hi), SF_TIME_CLOCK | SF_TIME_SECONDS | SF_TIME_ZONE);
            size_t mark = len;
            append(msg, sizeof msg, &len, ". Its values look like epoch times in %s (%s to %s): to make it the "
                   "time column, exact, pack it with: ", unit_names[u - SF_TIME_EPOCH_S], from, to);
            if (!again(c, &(again_edit){.time_column = c->col_names[k], .time_unit = unit_names[u - SF_TIME_EPOCH_S],
                                        .drop = c->o->columns ? c->col_names[k] : NULL},
                       msg + len, sizeof msg - len))
                snprintf(msg + mark, sizeof msg - mark, ". Its values look like epoch times in %s: --time-column "
                         "and --time-unit %s make it the time column, exact%s", unit_names[u - SF_TIME_EPOCH_S],
                         unit_names[u - SF_TIME_EPOCH_S], first_pack(c));
            break;
        }
        escape_controls(msg, sizeof msg);
        c->o->note(c->o->progress_arg, msg);
    }
    if (more) {
        snprintf(msg, sizeof msg, "warning: and %u more columns: packing changed %llu of their integers beyond 2^24",
                 more, (unsigned long long)more_values);
        c->o->note(c->o->progress_arg, msg);
    }
    // Times of day without a zone are taken as UTC: beside times with one,
    // they may be local times, hours off.
    if ((c->time_parts & SF_TIME_ZONE) && (c->time_parts & SF_TIME_NAIVE)) {
        snprintf(msg, sizeof msg, "warning: time column \"%s\" mixes times with a zone (Z or an offset) and times of "
                 "day without one, which pack takes as UTC: if those are local times, they are off by the zone's "
                 "offset", c->names[c->time_field]);
        escape_controls(msg, sizeof msg);
        c->o->note(c->o->progress_arg, msg);
    }
    if (c->repeat_line && c->repeat_field == UINT32_MAX) {
        snprintf(msg, sizeof msg, "warning: at line %s the time repeats within a series (the row before it has the "
                 "same time): duplicate rows, or the rows of several series without a series column "
                 "(--series-column)?", note_line(c, c->repeat_line, at, sizeof at));
        c->o->note(c->o->progress_arg, msg);
    } else if (c->repeat_line) {
        uint32_t field = c->repeat_field;
        bool category = c->role[field] == ROLE_CATEGORY;
        size_t len = 0;
        append(msg, sizeof msg, &len, "warning: at line %s the time repeats within a series while %scolumn \"%s\" "
               "changes: it looks like the id of series whose rows interleave, which training takes for one series "
               "(its windows mix them%s).", note_line(c, c->repeat_line, at, sizeof at), category ? "categorical " : "",
               c->names[field], category ? "" : ", and the id is a feature");
        size_t mark = len;
        append(msg, sizeof msg, &len, " Pack it with: ");
        // --columns lists the id: the series column must leave that list.
        again_edit ed = {.series_column = c->names[field], .uncategorical = c->names[field],
                         .drop = c->o->columns ? c->names[field] : NULL};
        if (!again(c, &ed, msg + len, sizeof msg - len))
            snprintf(msg + mark, sizeof msg - mark, " Pack them with --series-column%s%s (pack regroups the rows "
                     "of series that interleave)", category ? " instead of --categorical" : "", first_pack(c));
        escape_controls(msg, sizeof msg);
        c->o->note(c->o->progress_arg, msg);
    }
    if (c->st.regrouped) {
        sf_regroup_note(c->rg, "the file", c->out, msg, sizeof msg);
        escape_controls(msg, sizeof msg);
        c->o->note(c->o->progress_arg, msg);
    }
    if (c->truncated) {
        snprintf(msg, sizeof msg, "note: %llu time(s) in the time column \"%s\" had digits below a microsecond (the "
                 "first at line %s): seqfeed keeps times to the microsecond and dropped them",
                 (unsigned long long)c->truncated, c->names[c->time_field],
                 note_line(c, c->truncated_line, at, sizeof at));
        escape_controls(msg, sizeof msg);
        c->o->note(c->o->progress_arg, msg);
    }
}

// ---- several inputs (sources.c keeps the list) ----

// The header of the source just opened, which must be the first source's:
// names, their order and the delimiter. Leaves pos at its first data row.
static int next_header(csv *c) {
    int rc = refill(c);
    if (rc < 0) return rc;
    if (c->len - c->pos >= 3 && memcmp(c->buf + c->pos, "\xef\xbb\xbf", 3) == 0) c->pos += 3;
    const char *eol = NULL, *start = c->buf + c->pos, *tmp;
    if ((rc = header_line(c, &eol))) return rc;
    start = c->buf + c->pos;
    if (is_blank_line(c, start, &tmp) && tmp == c->buf + c->len)
        return sf_err_set(c->e, SF_EFORMAT, "%s:1:1: empty file; expected the header row of %s", c->name,
                          sf_sources_path(c->src, 0));
    const char *nul = memchr(start, 0, (size_t)(eol - start));
    if (nul) return fail_at(c, nul, "a NUL byte in the header row: column names are text (is this a CSV file?)");
    char first = c->delim;
    c->delim = c->o->delimiter ? c->o->delimiter : detect_delimiter(start, eol);  // as next_field splits it
    char **names = NULL;
    uint32_t n = 0;
    const char *p = start, *end = c->buf + c->len;
    while (!rc && n <= c->ncsv) {  // one name past the first's is enough to tell
        const char *fs, *fe, *at;
        bool quoted;
        if ((rc = next_field(c, &p, &fs, &fe, &quoted, &at))) {
            rc = rc < 0 ? rc : fail_at(c, p, "header row is not complete (unbalanced quotes?)");
            break;
        }
        char **more = n % 64 ? names : realloc(names, (n + 64) * sizeof *names);
        if (!more || !(more[n] = strndup(fs, (size_t)(fe - fs)))) {
            names = more ? more : names;
            rc = sf_err_set(c->e, SF_ENOMEM, "out of memory");
            break;
        }
        names = more, n++;
        if (p == end || *p == '\n') break;
        p++;  // the delimiter
    }
    char here = c->delim;
    c->delim = first;
    if (!rc) rc = sf_sources_same_header(c->src, c->src_at, (const char *const *)c->names, c->ncsv, first,
                                         (const char *const *)names, n, here, c->e);
    for (uint32_t i = 0; i < n; i++) free(names[i]);
    free(names);
    if (rc) return rc;
    c->pos = (size_t)(p - c->buf) + (p < end);
    c->line = 2;
    for (const char *q = start; q < p; q++) c->line += *q == '\n';
    return 0;
}

// --series-per-file: the source being read starts a series named after it.
static int file_series(csv *c) {
    const char *name = sf_sources_stem(c->src, c->src_at);
    int rc = flush_batch(c);
    if (!rc) rc = sf_pack_writer_series(c->w, name, strlen(name), c->e);
    c->have_last = false;
    c->seeded = -1;
    c->padded_line = 0;
    for (uint32_t k = 0; k < c->nkeep; k++) c->lossy[k].has_prev = false;
    return rc;
}

// A source's lines must fit an origin's 40 bits.
static int source_lines_fit(csv *c) {
    if (c->src && c->line > SF_MAX_SOURCE_LINE)
        return sf_err_set(c->e, SF_EFORMAT, "%s: more than %llu lines: packed with other files, a file's lines are "
                          "kept in 40 bits (split it)", c->name, (unsigned long long)SF_MAX_SOURCE_LINE);
    return 0;
}

// At the end of a source: the next one opened, its header checked, and its
// rows read as if they followed (the same series, unless one per file).
static int next_input(csv *c) {
    int rc = check_unchanged(c);
    if (!rc) rc = source_lines_fit(c);
    if (rc) return rc;
    close(c->fd);  // never stdin: "-" is an input alone
    c->fd = -1;
    size_t i = ++c->src_at;
    c->consumed += c->len;
    c->len = c->pos = 0;
    c->eof = false;
    c->blank_line = 0;  // blank lines may end each file
    c->name = sf_sources_path(c->src, i);
    c->line = 1;
    c->line_base = sf_origin_make((uint32_t)i, 0);
    int fd = sf_sources_open_file(c->src, i, &c->opened, c->e);
    if (fd < 0) return fd;
    c->fd = fd;
    if ((rc = next_header(c))) return rc;
    return c->per_file ? file_series(c) : 0;
}

// Field f of the row that starts at row (a whole one, scanned before):
// its text in s[0, *n) (in c->field when quoted: used before the next) and
// where it is.
static void row_field(csv *c, const char *row, uint32_t f, const char **s, size_t *n, const char **at) {
    const char *p = row, *e = row;
    bool quoted;
    *s = *at = row;
    for (uint32_t j = 0; j <= f; j++)
        if ((j && *p++ != c->delim) || next_field(c, &p, s, &e, &quoted, at)) break;
    *n = (size_t)(e - *s);
}

// What series_hint found, said: an error for the time going back (packing
// would stop there anyway), else a warning before packing.
static int series_hint_say(csv *c, const sf_hint *h, int64_t *const *cols, const char *const *row_at, uint64_t n) {
    const char *id = c->col_names[h->id];
    long long from = cols[h->id][h->row - 1], to = cols[h->id][h->row];
    // fail_at puts "name:line:column: " before it, in the error's 1024 bytes
    size_t name = strlen(c->name), cap = name < 800 ? sizeof c->e->msg - name - 48 : 176, len = 0;
    char msg[1024], now[96], before[96];
    const char *s, *at = row_at[h->row], *at_before = row_at[h->row - 1];
    size_t sn;
    if (h->kind == SF_HINT_TIME_BACK) {
        row_field(c, row_at[h->row - 1], c->time_field, &s, &sn, &at_before);
        sf_show(s, sn, before, sizeof before);
        row_field(c, row_at[h->row], c->time_field, &s, &sn, &at);
        sf_show(s, sn, now, sizeof now);
        append(msg, cap, &len, "time %s goes back from %s (line %llu) where column \"%s\" changes from %lld to %lld, "
               "and nowhere else in the first %llu rows: \"%s\" looks like the id of series (%u values, each in one "
               "run of rows), which without --series-column are packed as one series, whose times must not go back.",
               now, before, (unsigned long long)where_line(c, at_before), id, from, to, (unsigned long long)n, id,
               h->nvalues);
        append(msg, cap, &len, " If the rows are one series, --series-column none says so, and they pack only "
               "without the time column (--time-column none, and --drop-columns or --columns without \"%s\").",
               c->names[c->time_field]);
    } else {
        append(msg, cap, &len, "warning: column \"%s\" looks like the id of series: its %u values each come in one run "
               "of rows, and column \"%s\" restarts where it changes (line %llu: %lld then %lld), in the first %llu "
               "rows; without --series-column they are packed as one series, the id a feature. If they are one "
               "series, --series-column none says so.", id, h->nvalues, c->col_names[h->counter],
               (unsigned long long)where_line(c, at), (long long)cols[h->counter][h->row - 1],
               (long long)cols[h->counter][h->row], (unsigned long long)n);
    }
    size_t mark = len;
    append(msg, cap, &len, " If \"%s\" is the series id, pack it with: ", id);
    if (!again(c, &(again_edit){.series_column = id, .drop = c->o->columns ? id : NULL}, msg + len, cap - len))
        snprintf(msg + mark, cap - mark, " --series-column %s makes it the series id%s", id, first_pack(c));
    if (h->kind == SF_HINT_TIME_BACK) return fail_at(c, at, "%s", msg);
    escape_controls(msg, sizeof msg);
    if (c->o->note) c->o->note(c->o->progress_arg, msg);
    return 0;
}

#define HINT_CELLS (1u << 20)  // integers the scan below may hold: 8 MiB

// Numeric series ids taken for one series (series_hint.c), decided from
// the rows of the first buffer (megabytes) before anything is written, so
// that there is no second pass: packing would fail where the time goes
// back, so that is refused now with the command that makes the column the
// series id; a counter restarting (no time column) is warned of, as a
// month and its days look the same. Evidence further on meets the time
// check of commit_record, or the note on a repeated time.
static int series_hint(csv *c) {
    // named, "" (--series-column none: one series on purpose), or a series per file
    if (c->o->series_column || c->o->series_per_file) return 0;
    bool timed = c->time_field != UINT32_MAX;
    uint32_t alive = 0, need = timed ? 1 : 2;  // integer columns left; an id, and a time or a counter
    for (uint32_t f = 0; f < c->ncsv; f++) alive += c->role[f] == ROLE_KEEP;
    const char *p = c->buf + c->pos, *end = c->buf + c->len;
    uint64_t lines = 1;
    for (const char *q = p; q < end && (q = memchr(q, '\n', (size_t)(end - q))); q++) lines++;
    uint64_t max_rows = alive ? HINT_CELLS / alive : 0;
    if (max_rows > lines) max_rows = lines;
    if (alive < need || max_rows < 2 * SF_HINT_MIN_RUN) return 0;
    int64_t *cells = malloc(max_rows * alive * sizeof *cells), *times = malloc(max_rows * sizeof *times);
    int64_t **cols = calloc(c->nkeep, sizeof *cols);
    const char **row_at = malloc(max_rows * sizeof *row_at);
    int rc = 0;
    if (!cells || !times || !cols || !row_at) {
        rc = sf_err_set(c->e, SF_ENOMEM, "%s: out of memory", c->name);
        goto done;
    }
    for (uint32_t f = 0, i = 0; f < c->ncsv; f++)
        if (c->role[f] == ROLE_KEEP) cols[c->keep_at[f]] = cells + (size_t)i++ * max_rows;
    sf_err kept = *c->e;  // the parser says what is wrong with a row; the scan only stops there
    uint64_t n = 0;
    for (; n < max_rows && p < end && alive >= need; n++) {
        const char *row = p, *eol;
        bool ok = !is_blank_line(c, p, &eol);
        for (uint32_t f = 0; ok && f < c->ncsv; f++) {
            const char *s, *e, *at;
            bool quoted;
            if (next_field(c, &p, &s, &e, &quoted, &at)) {
                ok = false;
                break;
            }
            size_t len = (size_t)(e - s);
            unsigned parts;
            int64_t *col = c->role[f] == ROLE_KEEP ? cols[c->keep_at[f]] : NULL;
            if (f == c->time_field)
                ok = c->time_kind == SF_TIME_ISO ? sf_time_parse(s, len, &times[n], &parts) == 0
                                                 : parse_epoch(s, len, &times[n]) == 0 && epoch_fits(c->time_kind, times[n]);
            else if (col && parse_epoch(s, len, &col[n]) != 0)
                cols[c->keep_at[f]] = NULL, alive--;
            bool last = f + 1 == c->ncsv;
            if ((p == end || *p == '\n') != last) ok = false;  // ragged
            else if (!last) p++;
        }
        if (!ok) break;
        row_at[n] = row;
        if (p < end) p++;
    }
    *c->e = kept;
    sf_hint h;
    sf_hint_rows r = {.nrows = n, .ncols = c->nkeep, .ints = (const int64_t *const *)cols, .time = timed ? times : NULL};
    if (sf_series_hint(&r, &h) != SF_HINT_NONE) rc = series_hint_say(c, &h, cols, row_at, n);
done:
    free(cells);
    free(times);
    free(cols);
    free(row_at);
    return rc;
}

// The vector parser's layout of a record, where every field is a number
// kept in order, skipped, the ISO time or the series id (no categories).
static int number_layout(csv *c) {
    c->number_rows = NULL;
    if (c->ncat || (c->time_field != UINT32_MAX && c->time_kind != SF_TIME_ISO)) return 0;
    uint8_t *kind = malloc(c->ncsv);
    if (!kind) return sf_err_set(c->e, SF_ENOMEM, "out of memory");
    uint32_t k = 0;
    bool in_order = true;
    for (uint32_t f = 0; f < c->ncsv; f++) {
        kind[f] = c->role[f] == ROLE_KEEP     ? SF_FIELD_NUMBER
                  : c->role[f] == ROLE_TIME   ? SF_FIELD_TIME
                  : c->role[f] == ROLE_SERIES ? SF_FIELD_SERIES
                                              : SF_FIELD_SKIP;
        if (c->role[f] == ROLE_KEEP) in_order &= c->keep_at[f] == k++;
    }
    c->numbers = (sf_number_rows_layout){.kind = kind, .nfields = c->ncsv, .ncols = c->nkeep, .delim = c->delim,
                                         .memo = &c->time_memo, .time_same_day = time_same_day_ok(c->delim)};
    if (in_order && k == c->nkeep) c->number_rows = sf_number_rows_pick(SF_SCAN_BEST);
    return 0;
}

static int convert(csv *c, const char *out) {
    c->out = out;
    int rc = read_header(c);
    if (rc) return rc;
    const char **col_names = c->col_names = calloc(c->nkeep, sizeof *col_names);
    c->last = malloc(c->nkeep * sizeof(float));
    c->miss = calloc(c->nkeep, sizeof *c->miss);
    c->lossy = calloc(c->nkeep, sizeof *c->lossy);
    c->big_cols = malloc(c->nkeep * sizeof *c->big_cols);
    c->pend = malloc(c->nkeep * sizeof *c->pend);
    c->batch_rows = BATCH_BYTES / (c->nkeep * sizeof(float) + 2 * sizeof(int64_t)) + 1;
    c->batch = malloc(c->batch_rows * c->nkeep * sizeof(float));
    c->batch_time = malloc(c->batch_rows * sizeof(int64_t));
    c->batch_line = malloc(c->batch_rows * sizeof(int64_t));
    bool ffill = c->o->missing == SF_MISSING_FFILL;
    c->batch_imp = ffill ? malloc(c->batch_rows * c->nkeep) : NULL;
    c->row = c->batch;
    if (!col_names || !c->last || !c->miss || !c->lossy || !c->big_cols || !c->pend || !c->batch || !c->batch_time ||
        !c->batch_line || (ffill && !c->batch_imp)) {
        free(col_names);
        return sf_err_set(c->e, SF_ENOMEM, "out of memory");
    }
    for (uint32_t f = 0; f < c->ncsv; f++)
        if (c->role[f] == ROLE_KEEP || c->role[f] == ROLE_CATEGORY) col_names[c->keep_at[f]] = c->names[f];
    sf_pack_writer_opts wo = c->o->pack;
    wo.ncols = c->nkeep;
    wo.col_names = col_names;
    wo.series_column = c->series_field == UINT32_MAX ? NULL : c->names[c->series_field];
    wo.time_column = c->time_field == UINT32_MAX ? NULL : c->names[c->time_field];
    wo.time_kind = c->time_kind;
    wo.lines = true;  // what predict joins back to the CSV by
    wo.imputed = ffill;
    if (c->src) wo.sources = sf_sources_paths(c->src), wo.nsources = (uint32_t)sf_sources_count(c->src);
    if (c->ncat > sizeof c->cat_cols / sizeof *c->cat_cols) {
        free(col_names);
        return sf_err_set(c->e, SF_EUSAGE, "%s: at most %zu categorical columns", c->name,
                          sizeof c->cat_cols / sizeof *c->cat_cols);
    }
    for (uint32_t k = 0; k < c->ncat; k++) c->cat_cols[k] = c->keep_at[c->cats[k].field];
    wo.categorical = c->cat_cols, wo.ncategorical = c->ncat;
    c->wo = wo;
    uint64_t budget = c->o->memory_budget ? c->o->memory_budget : SF_REGROUP_DEFAULT_BUDGET;
    if (budget < sf_regroup_min_budget(c->nkeep, c->time_field != UINT32_MAX)) {
        free(col_names);
        return sf_err_set(c->e, SF_EUSAGE, "--memory-budget %.3g MB is too small for pack to regroup rows of %u "
                          "value(s)%s: at least %.3g MB", budget / 1e6, c->nkeep,
                          c->time_field != UINT32_MAX ? " and a time" : "",
                          sf_regroup_min_budget(c->nkeep, c->time_field != UINT32_MAX) / 1e6);
    }
    rc = series_hint(c);  // before anything is written
    if (!rc) rc = number_layout(c);
    if (!rc) rc = sf_pack_writer_open(&c->w, out, &wo, c->e);
    if (!rc && c->o->temp_path) c->o->temp_path(c->o->progress_arg, sf_pack_writer_temp_path(c->w));
    // A helper thread parses part of each buffer for every shape: with a
    // series column the rows going on in one series reach the writer in
    // runs (commit_run), so the main thread is left the rest of its own
    // part, the reads and the writer (bench/pack_threads.sh,
    // docs/BENCHMARKS.md).
    bool parallel = c->o->pack.threads > 1;
    // With two threads both cores parse: a chunk is compressed by the
    // thread that fills it, in its cache, rather than handed to a third
    // thread waking on a core already busy (2 threads then took 1.18x
    // the CPU of one; inline 1.13x). With more, the rest compress.
    bool inline_chunks = c->o->pack.threads <= 2;
    c->share = 32;
    if (!rc && c->per_file) rc = file_series(c);
    while (!rc) {
        if (parallel) {
            if (c->w) sf_pack_writer_inline(c->w, inline_chunks);
            if ((rc = parse_parallel(c)) != 1) continue;
            // The main thread parses alone: the workers compress, but for
            // the file's last bytes, where waking them costs more.
            if (c->w && !c->eof) sf_pack_writer_inline(c->w, false);
        }
        rc = parse_until(c, SIZE_MAX, parallel ? PARSE_ONE_BUFFER : PARSE_REFILL);  // then try the next buffer in parallel
        if (rc == REC_END && c->src && c->src_at + 1 < sf_sources_count(c->src)) rc = next_input(c);
    }
    if (rc == REC_END) rc = source_lines_fit(c);
    if (!rc) rc = flush_batch(c);
    if (!rc) rc = check_unchanged(c);
    if (!rc && c->rg) rc = regroup_finish(c);
    if (!rc && c->st.rows == 0 && c->st.rows_dropped == 0)
        rc = sf_err_set(c->e, SF_EFORMAT, "%s:%llu:1: the file has a header row but no data rows",
                        c->name, (unsigned long long)(c->blank_line ? c->blank_line : c->line));
    if (!rc && c->st.rows == 0)
        rc = sf_err_set(c->e, SF_EFORMAT, "%s: no rows left to pack (all %llu dropped for missing values)", c->name,
                        (unsigned long long)c->st.rows_dropped);
    c->st.csv_bytes = c->consumed + c->len;
    if (c->w) {
        if (!rc) {
            sf_pack_writer_time_parts(c->w, c->time_parts & ~(unsigned)SF_TIME_NAIVE);
            for (uint32_t k = 0; !rc && k < c->ncat; k++) {
                if (c->cats[k].n == 0)
                    rc = sf_err_set(c->e, SF_EFORMAT, "%s: categorical column \"%s\" has only missing values",
                                    c->name, c->names[c->cats[k].field]);
                else
                    rc = sf_pack_writer_category(c->w, k, (const char *const *)c->cats[k].values, c->cats[k].n, c->e);
            }
            if (rc) sf_pack_writer_abort(c->w);
            else rc = sf_pack_writer_finish(c->w, c->e);
            if (!rc) notes(c);
            struct stat sb;
            if (!rc && stat(out, &sb) == 0) c->st.out_bytes = (uint64_t)sb.st_size;
        } else {
            sf_pack_writer_abort(c->w);
        }
        c->w = NULL;
    }
    free(col_names);
    return rc;
}

static int run(csv *c, const char *out, sf_csv_pack_stats *st) {
    c->field_end = sf_field_end_pick(SF_SCAN_BEST);
    int rc = convert(c, out);
    if (rc) escape_controls(c->e->msg, sizeof c->e->msg);
    if (st) *st = c->st;
    if (rc > 0) rc = SF_EFORMAT;
    for (uint32_t f = 0; c->names && f < c->ncsv; f++) free(c->names[f]);
    free(c->names);
    sf_series_ids_free(&c->seen);
    free(c->ids_copy[0].slot);
    free(c->ids_copy[1].slot);
    sf_regroup_free(c->rg);
    free(c->by_index);
    free(c->role);
    free((void *)c->numbers.kind);
    free(c->keep_at);
    free(c->last);
    free(c->miss);
    free(c->lossy);
    for (int k = 0; k < 2; k++) free(c->part[k].block);
    helper_stop(c->helper);
    free(c->half_fields);
    free(c->jobs);
    free(c->big_cols);
    free(c->pend);
    free(c->batch);
    for (uint32_t k = 0; k < c->ncat; k++) {
        for (uint32_t i = 0; i < c->cats[k].n; i++) free(c->cats[k].values[i]);
        free(c->cats[k].values);
    }
    free(c->cats);
    free(c->cat_of);
    free(c->batch_time);
    free(c->batch_line);
    free(c->batch_imp);
    free(c->field);
    free(c->key);
    free(c->buf);
    free(c->spare);
    return rc;
}

int sf_csv_pack(const char *in, const char *out, const sf_csv_pack_opts *o, sf_csv_pack_stats *st, sf_err *e) {
    bool is_stdin = strcmp(in, "-") == 0;
    csv c = {.name = is_stdin ? "<stdin>" : in, .o = o, .e = e, .line = 1, .seeded = -1};
    c.fd = is_stdin ? 0 : open(in, O_RDONLY | O_CLOEXEC);
    if (c.fd < 0) return sf_err_errno(e, SF_EIO, errno, "%s: cannot open", in);
    if (fstat(c.fd, &c.opened) != 0 || !S_ISREG(c.opened.st_mode)) c.opened.st_mode = 0;
    posix_fadvise(c.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    c.cap = BUF_INITIAL;
    c.buf = malloc(c.cap + PAD);
    int rc = c.buf ? run(&c, out, st) : sf_err_set(e, SF_ENOMEM, "out of memory");
    if (!is_stdin) close(c.fd);
    return rc;
}

int sf_csv_pack_files(const char *const *paths, size_t n, const char *out, const sf_csv_pack_opts *o,
                      sf_csv_pack_stats *st, sf_err *e) {
    if (o->series_per_file && o->series_column)
        return sf_err_set(e, SF_EUSAGE, "--series-per-file and --series-column exclude each other: a series is a "
                          "file, or the rows of one value of the column");
    sf_sources *src;
    int rc = sf_sources_open(&src, paths, n, o->series_per_file, e);
    if (rc) return rc;
    bool is_stdin = strcmp(paths[0], "-") == 0;  // then the one input
    csv c = {.name = is_stdin ? "<stdin>" : paths[0], .o = o, .e = e, .line = 1, .src = src,
             .per_file = o->series_per_file};
    c.fd = sf_sources_open_file(src, 0, &c.opened, e);
    if (c.fd < 0) {
        sf_sources_free(src);
        return c.fd;
    }
    c.cap = BUF_INITIAL;
    c.buf = malloc(c.cap + PAD);
    rc = c.buf ? run(&c, out, st) : sf_err_set(e, SF_ENOMEM, "out of memory");
    if (!is_stdin && c.fd >= 0) close(c.fd);
    sf_sources_free(src);
    return rc;
}

int sf_csv_pack_mem(const void *data, size_t n, const char *name, const char *out, const sf_csv_pack_opts *o,
                    sf_csv_pack_stats *st, sf_err *e) {
    // The parser wants zeroed padding behind the data.
    csv c = {.name = name, .o = o, .e = e, .line = 1, .fd = -1, .eof = true, .len = n, .cap = n, .seeded = -1};
    c.buf = calloc(1, n + PAD);
    if (!c.buf) return sf_err_set(e, SF_ENOMEM, "out of memory");
    memcpy(c.buf, data, n);
    return run(&c, out, st);
}
