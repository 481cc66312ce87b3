// pack --append-to: a CSV's rows added to an .sfpack of the same columns.
//
// The format keeps each series as one contiguous row range and chunks at
// fixed row ranges, so rows added to a series that is not the last move
// every row after it. The new file is therefore written whole, beside the
// old one, and renamed over it (the old file stays whole and readable until
// then):
//   1. the CSV is packed into a spool (FILE.tmp.PID.append, unlinked once
//      open), with the file's columns, series and time column: the CSV's
//      own parsing, checks and messages, and its series grouped;
//   2. every check that can refuse (columns, times going back, categories)
//      runs before the new file is started;
//   3. the new file: the chunks before the first row that changes are
//      kept as stored (reflinked or copied, never recompressed); from there
//      the old rows and, after each series' last one, its new rows are
//      decoded chunk at a time and packed again. Every row, kept or not,
//      goes through the writer's statistics, so that they, the steps and
//      the series table are exactly those of a pack of all rows.
// Memory: a decoded chunk of each file, one chunk of rows, the writer's
// buffers, and per series an index (the file's series table is in memory).
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

typedef struct {
    const sf_pack *p;
    const sf_pack_info *in;
    sf_pack_dctx *d;
    void *stored;
    float *vals;
    int64_t *time, *line;
    uint8_t *imp;
    uint64_t chunk;  // decoded; UINT64_MAX: none
    sf_chunk ch;
} cursor;

typedef struct {
    const char *in_name, *path;
    const sf_csv_pack_opts *o;
    sf_err *e;
    const sf_pack_info *oi;  // the file appended to
    char *spool;             // the spool's name until it is open
    sf_pack_writer *w;
    uint32_t cr;             // rows per chunk
    uint64_t keep;           // leading chunks kept as stored
    bool time, lines, imputed;
    const sf_pack_info *si;  // the spool
    uint32_t src_base;       // the spool's source 0 in the new file's sources
    uint64_t *slot, cap;     // the file's series by name: open addressing, UINT64_MAX empty
    cursor seed;             // --missing ffill: the file's chunk of a series' last row
    float *rows;             // one chunk of rows, row-major, for the writer
    int64_t *rtime, *rline;
    uint8_t *rimp;
} app;

static int cursor_open(cursor *c, const sf_pack *p, sf_err *e) {
    const sf_pack_info *in = sf_pack_get_info(p);
    size_t rows = in->chunk_rows;
    *c = (cursor){.p = p, .in = in, .chunk = UINT64_MAX};
    c->d = sf_pack_dctx_create();
    c->stored = malloc(sf_pack_max_stored_size(p) + 1);
    c->vals = malloc(rows * in->ncols * sizeof(float));
    c->time = in->time_column[0] ? malloc(rows * 8) : NULL;
    c->line = in->has_lines ? malloc(rows * 8) : NULL;
    c->imp = in->imputed ? malloc(rows * in->ncols) : NULL;
    if (!c->d || !c->stored || !c->vals || (in->time_column[0] && !c->time) || (in->has_lines && !c->line) ||
        (in->imputed && !c->imp))
        return sf_err_set(e, SF_ENOMEM, "%s: out of memory for a chunk", sf_pack_name(p));
    return 0;
}

static void cursor_close(cursor *c) {
    sf_pack_dctx_free(c->d);
    free(c->stored), free(c->vals), free(c->time), free(c->line), free(c->imp);
}

// Decodes the chunk that holds row, unless it is the one decoded.
static int cursor_at(cursor *c, uint64_t row, sf_err *e) {
    uint64_t i = row / c->in->chunk_rows;
    if (i == c->chunk) return 0;
    c->chunk = UINT64_MAX;
    int rc = sf_pack_chunk_read(c->p, i, c->stored, e);
    if (!rc) rc = sf_pack_chunk_decode_imputed(c->d, c->p, i, c->stored, c->vals, c->time, c->line, c->imp, e);
    if (rc) return rc;
    c->chunk = i;
    c->ch = sf_pack_chunk_locate(c->p, i);
    return 0;
}

// Feeds rows [first, first + n) of c's file to the writer, categorical codes
// through remap (per column, NULL: as they are), a piece at a time so that
// no piece crosses a chunk of either file; where the writer starts a chunk
// that is kept, it is told where that chunk's bytes are.
static int emit(app *a, cursor *c, uint64_t first, uint64_t n, uint32_t *const *remap) {
    uint32_t nc = a->oi->ncols;
    while (n) {
        int rc = cursor_at(c, first, a->e);
        if (rc) return rc;
        uint64_t wn = sf_pack_writer_nrows(a->w), room = a->cr - wn % a->cr;
        uint64_t in_chunk = c->ch.first_row + c->ch.rows - first;
        size_t take = (size_t)(n < room ? n : room);
        if (take > in_chunk) take = (size_t)in_chunk;
        if (wn % a->cr == 0 && wn / a->cr < a->keep) {
            sf_chunk k = sf_pack_chunk_locate(c->p, wn / a->cr);  // c is the old file: the kept rows are its own
            if ((rc = sf_pack_writer_place(a->w, k.offset, k.stored_size, k.crc, a->e))) return rc;
        }
        size_t k0 = (size_t)(first - c->ch.first_row), r = c->ch.rows;
        for (uint32_t col = 0; col < nc; col++) {
            const float *x = c->vals + (size_t)col * r + k0;
            const uint32_t *map = remap ? remap[col] : NULL;
            for (size_t i = 0; i < take; i++) a->rows[i * nc + col] = map ? (float)map[(uint32_t)x[i]] : x[i];
            for (size_t i = 0; a->imputed && i < take; i++)
                a->rimp[i * nc + col] = c->imp ? c->imp[(size_t)col * r + k0 + i] : 0;
        }
        if (a->time) memcpy(a->rtime, c->time + k0, take * 8);
        if (a->lines) memcpy(a->rline, c->line + k0, take * 8);
        for (size_t i = 0; a->lines && c->in == a->si && i < take; i++) {  // the CSV's rows: their own sources
            uint32_t src;
            uint64_t line;
            sf_origin_split(a->si, a->rline[i], &src, &line);
            a->rline[i] = sf_origin_make(a->src_base + src, line);
        }
        rc = sf_pack_writer_rows_imputed(a->w, a->rows, a->time ? a->rtime : NULL, a->lines ? a->rline : NULL,
                                         a->imputed ? a->rimp : NULL, take, a->e);
        if (rc) return rc;
        first += take, n -= take;
    }
    return 0;
}

static bool listed(const char *list, const char *name) {
    char buf[SF_PACK_MAX_NAME + 1];
    for (const char *p = list; p;) {
        if (sf_list_next(&p, buf, sizeof buf)) break;
        if (!strcmp(buf, name)) return true;
    }
    return false;
}

// The CSV's header against the file: its series and time columns, then the
// columns it packs (less those two and --drop-columns, or --columns), the
// file's in order. Names the first difference.
static int check_header(void *arg, const char *const *names, uint32_t n, sf_err *e) {
    app *a = arg;
    const sf_pack_info *in = a->oi;
    const char *special[2] = {in->series_column, in->time_column}, *what[2] = {"series", "time"};
    for (int k = 0; k < 2; k++) {
        uint32_t f = 0;
        while (special[k][0] && f < n && strcmp(names[f], special[k])) f++;
        if (special[k][0] && f == n)
            return sf_err_set(e, SF_EFORMAT, "%s:1: no column \"%s\", the %s column of %s: an appended CSV has the "
                              "file's columns", a->in_name, special[k], what[k], a->path);
    }
    uint32_t k = 0;
    if (a->o->columns) {
        char buf[SF_PACK_MAX_NAME + 1];
        for (const char *p = a->o->columns; p && k <= in->ncols; k++) {
            if (sf_list_next(&p, buf, sizeof buf)) break;
            if (k == in->ncols || strcmp(buf, in->col_names[k]))
                return sf_err_set(e, SF_EUSAGE, "--columns names \"%s\" as column %u, where %s has %s%s%s: the file "
                                  "decides its columns (leave --columns out, or list the file's)", buf, k + 1, a->path,
                                  k < in->ncols ? "\"" : "no more columns", k < in->ncols ? in->col_names[k] : "",
                                  k < in->ncols ? "\"" : "");
        }
        if (k < in->ncols)
            return sf_err_set(e, SF_EUSAGE, "--columns leaves out \"%s\", column %u of %s: the file decides its "
                              "columns (leave --columns out, or list the file's)", in->col_names[k], k + 1, a->path);
        return 0;
    }
    for (uint32_t f = 0; f < n; f++) {
        if (!strcmp(names[f], special[0]) || !strcmp(names[f], special[1]) ||
            (a->o->drop_columns && listed(a->o->drop_columns, names[f])))
            continue;
        if (k == in->ncols)
            return sf_err_set(e, SF_EFORMAT, "%s:1: column %u \"%s\" is not a column of %s, whose %u columns it "
                              "already has (hint: --drop-columns %s leaves it out)", a->in_name, f + 1, names[f],
                              a->path, in->ncols, names[f]);
        if (strcmp(names[f], in->col_names[k]))
            return sf_err_set(e, SF_EFORMAT, "%s:1: column %u is \"%s\" where %s has \"%s\" (its column %u): an "
                              "appended CSV has the file's columns, in the file's order", a->in_name, f + 1, names[f],
                              a->path, in->col_names[k], k + 1);
        k++;
    }
    if (k < in->ncols)
        return sf_err_set(e, SF_EFORMAT, "%s:1: no column \"%s\", column %u of %s: an appended CSV has the file's "
                          "columns", a->in_name, in->col_names[k], k + 1, a->path);
    return 0;
}

static int forward_progress(void *arg, uint64_t rows, uint64_t bytes) {
    app *a = arg;
    return a->o->progress ? a->o->progress(a->o->progress_arg, rows, bytes) : 0;
}

static void forward_temp(void *arg, const char *path) {
    app *a = arg;
    if (a->o->temp_path) a->o->temp_path(a->o->progress_arg, path);
}

static void forward_note(void *arg, const char *text) {
    app *a = arg;
    if (a->o->note) a->o->note(a->o->progress_arg, text);
}

// Copies bytes [off, off + len) of in to the same place in out: a reflink
// where the filesystem shares blocks (FICLONERANGE: block-aligned ranges),
// else copy_file_range (in the kernel, no copy through user space), else
// read and write. *how says which did the bulk.
static int copy_range(int in, int out, uint64_t off, uint64_t len, const char **how, const char *name, sf_err *e) {
    uint64_t bulk = len & ~(uint64_t)(SF_PACK_ALIGN - 1);
    *how = "read and write";
    if (bulk) {
        struct file_clone_range r = {.src_fd = in, .src_offset = off, .src_length = bulk, .dest_offset = off};
        if (ioctl(out, FICLONERANGE, &r) == 0) off += bulk, len -= bulk, *how = "reflink (FICLONERANGE)";
    }
    bool kernel = true;
    uint8_t *buf = NULL;  // for read and write, allocated only then
    enum { BUF = 1 << 20 };
    int rc = 0;
    while (len && !rc) {
        ssize_t k = -1;
        if (kernel) {
            loff_t a = (loff_t)off, b = (loff_t)off;
            k = copy_file_range(in, &a, out, &b, len, 0);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) kernel = false;  // not across these files (EXDEV, EOPNOTSUPP, ENOSYS...): copy
            else if (strcmp(*how, "reflink (FICLONERANGE)")) *how = "copy_file_range";
        }
        if (!kernel) {
            if (!buf && !(buf = malloc(BUF))) {
                rc = sf_err_set(e, SF_ENOMEM, "%s: out of memory for a copy buffer", name);
                break;
            }
            k = pread(in, buf, len < BUF ? (size_t)len : BUF, (off_t)off);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) {
                rc = sf_err_errno(e, SF_EIO, k ? errno : EIO, "%s: cannot read bytes at %llu to keep them", name,
                                  (unsigned long long)off);
                break;
            }
            for (ssize_t done = 0; done < k && !rc;) {
                ssize_t m = pwrite(out, buf + done, (size_t)(k - done), (off_t)(off + (uint64_t)done));
                if (m < 0 && errno == EINTR) continue;
                if (m < 0) rc = sf_err_errno(e, SF_EIO, errno, "%s: cannot write the kept chunks", name);
                else done += m;
            }
        }
        off += (uint64_t)k, len -= (uint64_t)k;
    }
    free(buf);
    return rc;
}

// Whether the writer's header (in its temporary file) is the old file's,
// byte for byte: then the old chunks' bytes are valid at the same offsets.
static bool same_header(const sf_pack *old, sf_pack_writer *w) {
    uint64_t n = sf_pack_writer_data_offset(w);
    if (n != sf_pack_get_info(old)->data_offset) return false;
    int fd = open(sf_pack_writer_temp_path(w), O_RDONLY | O_CLOEXEC);
    uint8_t *x = malloc(n), *y = malloc(n);
    bool same = fd >= 0 && x && y && pread(fd, x, n, 0) == (ssize_t)n &&
                pread(sf_pack_fd(old), y, n, 0) == (ssize_t)n;
    if (same) {
        // A source table (flag and trailer) leaves the chunks as they are;
        // the header's CRC covers the flag, so it goes too.
        uint32_t hsize = sf_get_u32(x + 12);
        sf_put_u32(x + 32, sf_get_u32(x + 32) & ~SF_FLAG_SOURCES);
        sf_put_u32(y + 32, sf_get_u32(y + 32) & ~SF_FLAG_SOURCES);
        same = hsize >= SF_HEADER_FIXED + 4 && hsize <= n && sf_get_u32(y + 12) == hsize;
        if (same) memset(x + hsize - 4, 0, 4), memset(y + hsize - 4, 0, 4);
        same = same && memcmp(x, y, n) == 0;
    }
    if (fd >= 0) close(fd);
    free(x), free(y);
    return same;
}

// Opens path and locks it against another append (flock on the file,
// taken again when a rename replaced it meanwhile).
static int open_locked(sf_pack **out, const char *path, sf_err *e) {
    for (int tries = 0; tries < 8; tries++) {
        int rc = sf_pack_open(out, path, e);
        if (rc) return rc;
        int fd = sf_pack_fd(*out);
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int err = errno;
            sf_pack_close(*out);
            *out = NULL;
            return err == EWOULDBLOCK ? sf_err_set(e, SF_EIO, "%s: another seqfeed pack --append-to is adding to it: "
                                                   "run this one when it is done", path)
                                      : sf_err_errno(e, SF_EIO, err, "%s: cannot lock it", path);
        }
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) return 0;
        sf_pack_close(*out);  // replaced between the open and the lock: the new one
        *out = NULL;
    }
    return sf_err_set(e, SF_EIO, "%s: it keeps being replaced while it is opened", path);
}

static const char *series_label(const char *name, char *buf, size_t cap) {
    if (!name[0]) return "the series";
    snprintf(buf, cap, "series \"%.200s\"", name);
    return buf;
}

static uint64_t name_hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}

// The file's series by name, for matching the CSV's.
static int index_series(app *a, sf_err *e) {
    const sf_pack_info *oi = a->oi;
    a->cap = 16;
    while (a->cap < 2 * oi->nseries) a->cap *= 2;
    if (!(a->slot = malloc(a->cap * sizeof *a->slot)))
        return sf_err_set(e, SF_ENOMEM, "out of memory for the series table");
    for (uint64_t i = 0; i < a->cap; i++) a->slot[i] = UINT64_MAX;
    for (uint64_t i = 0; i < oi->nseries; i++) {
        uint64_t h = name_hash(oi->series[i].name, strlen(oi->series[i].name)) & (a->cap - 1);
        while (a->slot[h] != UINT64_MAX) h = (h + 1) & (a->cap - 1);
        a->slot[h] = i;
    }
    return 0;
}

// The file's series named key[0..len); UINT64_MAX: none.
static uint64_t find_series(const app *a, const char *key, size_t len) {
    for (uint64_t h = name_hash(key, len) & (a->cap - 1); a->slot[h] != UINT64_MAX; h = (h + 1) & (a->cap - 1)) {
        const char *name = a->oi->series[a->slot[h]].name;
        if (strlen(name) == len && !memcmp(name, key, len)) return a->slot[h];
    }
    return UINT64_MAX;
}

// The spool's series each matched with the file's of the same name
// (match[j]; UINT64_MAX: a new one), and the other way (of_old[i]).
static void match_series(const app *a, const sf_pack_info *si, uint64_t *match, uint64_t *of_old) {
    for (uint64_t i = 0; i < a->oi->nseries; i++) of_old[i] = UINT64_MAX;
    for (uint64_t j = 0; j < si->nseries; j++) {
        match[j] = find_series(a, si->series[j].name, strlen(si->series[j].name));
        if (match[j] != UINT64_MAX) of_old[match[j]] = j;
    }
}

// sf_csv_pack_opts.series_last: the series' last row in the file, but for
// categorical columns (their codes are the file's, not the CSV's).
static int series_last(void *arg, const char *key, size_t len, float *row, sf_err *e) {
    app *a = arg;
    uint64_t i = find_series(a, key, len);
    if (i == UINT64_MAX) return 0;
    uint64_t last = a->oi->series[i].first_row + a->oi->series[i].rows - 1;
    int rc = cursor_at(&a->seed, last, e);
    if (rc) return rc;
    for (uint32_t c = 0; c < a->oi->ncols; c++)
        row[c] = sf_pack_category(a->oi, c) ? NAN
                                            : a->seed.vals[(size_t)c * a->seed.ch.rows + (last - a->seed.ch.first_row)];
    return 1;
}

// The CSV's line of series j's first row in the spool (0 when unknown).
static int first_line(app *a, const sf_pack *spool, uint64_t j, int64_t *line) {
    const sf_pack_info *si = sf_pack_get_info(spool);
    cursor c;
    int rc = cursor_open(&c, spool, a->e);
    if (!rc) rc = cursor_at(&c, si->series[j].first_row, a->e);
    *line = rc || !c.line ? 0 : c.line[si->series[j].first_row - c.ch.first_row];
    cursor_close(&c);
    return rc;
}

// Times must continue each series: the CSV's first time of a series the
// file has is not before the file's last. The first such series by line.
// The first that repeats the file's last time is warned of, as pack warns
// of a time that repeats within a series.
static int check_times(app *a, const sf_pack *spool, const uint64_t *match) {
    const sf_pack_info *oi = a->oi, *si = sf_pack_get_info(spool);
    if (!a->time) return 0;
    uint64_t repeat = UINT64_MAX;
    for (uint64_t j = 0; j < si->nseries; j++) {
        uint64_t i = match[j];
        if (i != UINT64_MAX && repeat == UINT64_MAX && si->series_times[2 * j] == oi->series_times[2 * i + 1])
            repeat = j;
        if (i == UINT64_MAX || si->series_times[2 * j] >= oi->series_times[2 * i + 1]) continue;
        int64_t line;
        int rc = first_line(a, spool, j, &line);
        if (rc) return rc;
        char now[48], last[48], label[240];
        sf_pack_time_text(oi, si->series_times[2 * j], now, sizeof now);
        sf_pack_time_text(oi, oi->series_times[2 * i + 1], last, sizeof last);
        return sf_err_set(a->e, SF_EFORMAT, "%s:%lld: %s starts at %s, before %s, its last time in %s: appended rows "
                          "continue each series, and times never go back within a series", a->in_name,
                          (long long)line, series_label(si->series[j].name, label, sizeof label), now, last, a->path);
    }
    if (repeat != UINT64_MAX && a->o->note) {
        int64_t line;
        int rc = first_line(a, spool, repeat, &line);
        if (rc) return rc;
        char now[48], label[240], msg[600];
        sf_pack_time_text(oi, si->series_times[2 * repeat], now, sizeof now);
        snprintf(msg, sizeof msg, "warning: %s:%lld: %s starts at %s, its last time in %s: the time repeats within a "
                 "series (duplicate rows, or rows of several series without a series column?)", a->in_name,
                 (long long)line, series_label(si->series[repeat].name, label, sizeof label), now, a->path);
        a->o->note(a->o->progress_arg, msg);
    }
    return 0;
}

// The categorical columns' values: the file's, then the CSV's new ones in
// the order they came; remap[c][code in the spool] = code in the new file.
static int merge_categories(app *a, const sf_pack_info *si, uint32_t **remap) {
    const sf_pack_info *oi = a->oi;
    for (uint32_t k = 0; k < oi->ncategories; k++) {
        const sf_category *o = &oi->categories[k], *s = sf_pack_category(si, o->column);
        if (!s) return sf_err_set(a->e, SF_EINVAL, "%s: the CSV's column %u is not categorical", a->in_name, o->column);
        uint32_t n = o->nvalues;
        const char **all = malloc((o->nvalues + s->nvalues) * sizeof *all);
        uint32_t *map = remap[o->column] = malloc((s->nvalues ? s->nvalues : 1) * sizeof *map);
        if (!all || !map) {
            free(all);
            return sf_err_set(a->e, SF_ENOMEM, "out of memory for the categories");
        }
        memcpy(all, o->values, o->nvalues * sizeof *all);
        for (uint32_t i = 0; i < s->nvalues; i++) {
            uint32_t v = 0;
            while (v < n && strcmp(all[v], s->values[i])) v++;
            if (v == n) all[n++] = s->values[i];
            map[i] = v;
        }
        int rc = n > SF_PACK_MAX_CATEGORY
                     ? sf_err_set(a->e, SF_EFORMAT, "%s: categorical column \"%s\" would have %u distinct values with "
                                  "the CSV's, more than the %u a categorical column may have", a->path,
                                  oi->col_names[o->column], n, SF_PACK_MAX_CATEGORY)
                     : sf_pack_writer_category(a->w, k, all, n, a->e);
        free(all);
        if (rc) return rc;
    }
    return 0;
}

static int same_file(const char *in, const char *path, sf_err *e) {
    struct stat a, b;
    bool is_stdin = !strcmp(in, "-");
    if ((is_stdin ? fstat(0, &a) : stat(in, &a)) != 0 || stat(path, &b) != 0) return 0;  // open reports it
    if (a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        return sf_err_set(e, SF_EUSAGE, "%s is %s, the file to append to: the rows to add come from another file",
                          is_stdin ? "stdin" : in, path);
    return 0;
}

static int merge(app *a, sf_pack *old, sf_pack *spool, const uint64_t *match, const uint64_t *of_old,
                 const char *const *sources, uint32_t nsources, sf_csv_pack_stats *st) {
    const sf_pack_info *oi = a->oi, *si = sf_pack_get_info(spool);
    sf_err *e = a->e;
    uint32_t **maps = calloc(oi->ncols, sizeof *maps);
    uint32_t cat_cols[64];
    if (!maps) return sf_err_set(e, SF_ENOMEM, "out of memory");
    if (oi->ncategories > 64) {
        free(maps);
        return sf_err_set(e, SF_EINVAL, "%s: more than 64 categorical columns", a->path);
    }
    for (uint32_t k = 0; k < oi->ncategories; k++) cat_cols[k] = oi->categories[k].column;
    sf_pack_writer_opts wo = {.ncols = oi->ncols, .col_names = oi->col_names, .series_column = oi->series_column,
                              .chunk_rows = oi->chunk_rows, .level = oi->level, .filter = (enum sf_filter)oi->filter,
                              .threads = a->o->pack.threads, .time_column = a->time ? oi->time_column : NULL,
                              .time_kind = oi->time_kind, .lines = a->lines, .categorical = cat_cols,
                              .ncategorical = oi->ncategories, .imputed = a->imputed, .sources = sources,
                              .nsources = nsources};
    cursor oc = {.chunk = UINT64_MAX}, sc = {.chunk = UINT64_MAX};
    int rc = sf_pack_writer_open(&a->w, a->path, &wo, e);
    if (!rc) {
        forward_temp(a, sf_pack_writer_temp_path(a->w));
        // The file replaced keeps its permissions (the temporary file has
        // the umask's): best effort, as a file of another owner keeps them
        // only if we may set them.
        struct stat sb;
        if (fstat(sf_pack_fd(old), &sb) == 0) (void)fchmod(sf_pack_writer_fd(a->w), sb.st_mode & 07777);
        rc = cursor_open(&oc, old, e);
    }
    if (!rc) rc = cursor_open(&sc, spool, e);
    if (!rc) rc = merge_categories(a, si, maps);
    a->rows = malloc((size_t)a->cr * oi->ncols * sizeof(float));
    a->rtime = malloc((size_t)a->cr * 8), a->rline = malloc((size_t)a->cr * 8);
    a->rimp = a->imputed ? malloc((size_t)a->cr * oi->ncols) : NULL;
    if (!rc && (!a->rows || !a->rtime || !a->rline || (a->imputed && !a->rimp)))
        rc = sf_err_set(e, SF_ENOMEM, "out of memory for a chunk of rows");
    if (!rc) {
        sf_pack_writer_time_parts(a->w, oi->time_parts);  // joined: the most fraction digits of both
        sf_pack_writer_time_parts(a->w, si->time_parts);
        // A file's times of day all with a zone or all without (a mix is
        // warned of as it is packed): the appended rows the other way make
        // the mix pack warns of in one file.
        unsigned clock = SF_TIME_CLOCK, zone = SF_TIME_ZONE;
        bool mixed = (oi->time_parts & clock) && (si->time_parts & clock) &&
                     !(oi->time_parts & zone) != !(si->time_parts & zone);
        if (mixed && a->o->note) {
            char msg[512];
            snprintf(msg, sizeof msg, "warning: time column \"%s\" of %s has times of day %s a zone, and the rows "
                     "appended %s one: pack takes times without a zone as UTC, so if those are local times, they are "
                     "off by the zone's offset", oi->time_column, a->path, oi->time_parts & zone ? "with" : "without",
                     si->time_parts & zone ? "have" : "do not have");
            a->o->note(a->o->progress_arg, msg);
        }
        // The first row that changes: the end of the first series that grows.
        uint64_t changed = oi->nrows;
        for (uint64_t i = 0; i < oi->nseries && changed == oi->nrows; i++)
            if (of_old[i] != UINT64_MAX) changed = oi->series[i].first_row + oi->series[i].rows;
        a->keep = changed / a->cr;
        // Kept chunks must read the same in the new file: same header
        // (columns, flags: a CSV that brings imputed values to a file
        // without them changes every chunk's frame).
        if (a->keep && (a->imputed != (oi->imputed != NULL) || !same_header(old, a->w))) a->keep = 0;
        st->append_copy = "none";
        if (a->keep) {
            sf_chunk last = sf_pack_chunk_locate(old, a->keep - 1);
            uint64_t start = sf_pack_writer_data_offset(a->w), end = last.offset + last.stored_size;
            rc = copy_range(sf_pack_fd(old), sf_pack_writer_fd(a->w), start, end - start, &st->append_copy, a->path,
                            e);
            st->append_bytes_kept = end - start;
            st->append_chunks_kept = a->keep;
        }
    }
    for (uint64_t i = 0; !rc && i < oi->nseries; i++) {
        const char *name = oi->series[i].name;
        rc = sf_pack_writer_series(a->w, name, strlen(name), e);
        if (!rc) rc = emit(a, &oc, oi->series[i].first_row, oi->series[i].rows, NULL);
        uint64_t j = of_old[i];
        if (!rc && j != UINT64_MAX) {
            rc = emit(a, &sc, si->series[j].first_row, si->series[j].rows, maps);
            st->append_series_extended++;
        }
    }
    for (uint64_t j = 0; !rc && j < si->nseries; j++) {
        if (match[j] != UINT64_MAX) continue;
        const char *name = si->series[j].name;
        rc = sf_pack_writer_series(a->w, name, strlen(name), e);
        if (!rc) rc = emit(a, &sc, si->series[j].first_row, si->series[j].rows, maps);
        st->append_series_added++;
    }
    cursor_close(&oc), cursor_close(&sc);
    for (uint32_t c = 0; c < oi->ncols; c++) free(maps[c]);
    free(maps);
    free(a->rows), free(a->rtime), free(a->rline), free(a->rimp);
    if (a->w) {
        uint64_t rows = sf_pack_writer_nrows(a->w);
        st->append_chunks = (rows + a->cr - 1) / a->cr;
        if (rc) sf_pack_writer_abort(a->w);
        else rc = sf_pack_writer_finish(a->w, e);
        a->w = NULL;
    }
    return rc;
}

int sf_csv_append(const char *in, const char *path, const sf_csv_pack_opts *o, sf_csv_pack_stats *st, sf_err *e) {
    sf_csv_pack_stats local = {0};
    if (!st) st = &local;
    *st = (sf_csv_pack_stats){0};
    int rc = same_file(in, path, e);
    if (rc) return rc;
    sf_pack *old = NULL, *spool = NULL;
    if ((rc = open_locked(&old, path, e))) return rc;
    const sf_pack_info *oi = sf_pack_get_info(old);
    app a = {.in_name = strcmp(in, "-") ? in : "<stdin>", .path = path, .o = o, .e = e, .oi = oi,
             .cr = oi->chunk_rows, .time = oi->time_column[0] != 0, .lines = oi->has_lines};

    // The spool: beside the file (its real place, where a later run's
    // sf_temp_create looks for what a killed one left: FILE.tmp.PID.*).
    char cats[SF_PACK_MAX_CATEGORY_LIST * 4 + 64] = "";
    size_t clen = 0;
    for (uint32_t k = 0; k < oi->ncategories && !rc; k++)
        if (sf_list_append(cats, sizeof cats, &clen, oi->col_names[oi->categories[k].column]))
            rc = sf_err_set(e, SF_EINVAL, "%s: categorical column names too long", path);
    char *real = rc ? NULL : realpath(path, NULL);
    if (!rc && !real) rc = sf_err_errno(e, SF_EIO, errno, "%s: cannot resolve its path", path);
    if (!rc && !(a.spool = malloc(strlen(real) + 48))) rc = sf_err_set(e, SF_ENOMEM, "out of memory");
    if (!rc) sprintf(a.spool, "%s.tmp.%ld.append", real, (long)getpid());
    free(real);
    uint32_t wide = 65536 / (4 * oi->ncols);
    sf_csv_pack_opts so = {.columns = o->columns, .drop_columns = o->drop_columns,
                           .series_column = oi->series_column[0] ? oi->series_column : NULL,
                           .time_column = oi->time_column, .time_unit = a.time ? oi->time_kind : SF_TIME_NONE,
                           .categorical = oi->ncategories ? cats : NULL, .delimiter = o->delimiter,
                           .missing = o->missing, .memory_budget = o->memory_budget,
                           .pack = {.chunk_rows = wide ? wide : 1, .level = 1, .filter = SF_FILTER_DELTA_SHUFFLE,
                                    .threads = o->pack.threads},
                           .progress = forward_progress, .progress_arg = &a, .temp_path = forward_temp,
                           .note = forward_note, .header = check_header, .series_last = series_last};
    if (!rc) rc = index_series(&a, e);
    if (!rc && o->missing == SF_MISSING_FFILL) rc = cursor_open(&a.seed, old, e);
    if (!rc) rc = sf_csv_pack(in, a.spool, &so, st, e);
    cursor_close(&a.seed);
    st->append_rows_before = oi->nrows, st->append_series_before = oi->nseries, st->out_bytes = 0;
    if (!rc) {
        forward_temp(&a, a.spool);
        rc = sf_pack_open(&spool, a.spool, e);  // the reader keeps it open: its name can go
    }
    if (a.spool) unlink(a.spool), free(a.spool), a.spool = NULL;
    uint64_t *match = NULL, *of_old = NULL;
    if (!rc) {
        const sf_pack_info *si = a.si = sf_pack_get_info(spool);
        a.imputed = oi->imputed || si->imputed;
        match = malloc((si->nseries ? si->nseries : 1) * sizeof *match);
        of_old = malloc((oi->nseries ? oi->nseries : 1) * sizeof *of_old);
        if (match && of_old) match_series(&a, si, match, of_old);
        else rc = sf_err_set(e, SF_ENOMEM, "out of memory");
    }
    if (!rc) rc = check_times(&a, spool, match);
    // The CSV becomes a source (or its sources do) after the file's; a file
    // of one CSV (plain lines, no table) gets its rows listed as source 0,
    // named after the file itself: the CSV it came from is not recorded.
    const char **sources = NULL;
    uint32_t nsources = 0;
    if (!rc && a.lines) {
        const sf_pack_info *si = a.si;
        uint32_t n_old = oi->nsources ? oi->nsources : 1, n_new = si->nsources ? si->nsources : 1;
        if ((uint64_t)n_old + n_new > SF_MAX_SOURCES)
            rc = sf_err_set(e, SF_EFORMAT, "%s: %u sources and %u more exceed the %u a file may list", path, n_old,
                            n_new, SF_MAX_SOURCES);
        else if (!(sources = malloc((n_old + n_new) * sizeof *sources)))
            rc = sf_err_set(e, SF_ENOMEM, "out of memory for the sources");
        for (uint32_t i = 0; !rc && i < n_old; i++) sources[nsources++] = oi->nsources ? oi->sources[i] : path;
        for (uint32_t i = 0; !rc && i < n_new; i++) sources[nsources++] = si->nsources ? si->sources[i] : in;
        a.src_base = n_old;
    }
    if (!rc) rc = merge(&a, old, spool, match, of_old, (const char *const *)sources, nsources, st);
    free(sources);
    free(match), free(of_old), free(a.slot);
    struct stat sb;
    if (!rc && stat(path, &sb) == 0) st->out_bytes = (uint64_t)sb.st_size;
    sf_pack_close(spool);
    sf_pack_close(old);  // and with it the lock, after the rename
    return rc;
}
