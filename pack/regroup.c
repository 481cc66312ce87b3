// Regrouping rows by series with bounded memory (internal.h). A row is a
// fixed-size record: series u32, line i64, time i64 (with a time column),
// ncols float32. Rows are held in a buffer of a third of the budget; a full
// buffer goes to a thread of its own, which copies it in series order into
// the third third by a counting sort (stable, and linear: series indices
// are dense, one 4-byte counter each; it reads the rows in order and writes
// each series' rows in order, where a gather in series order would miss the
// cache at every row of interleaved series) and writes that as a run to a
// spill file, each row coded against the one before (row_code), while the
// rows that come meanwhile fill the second third. The merge reads every run
// through a buffer of its share of the budget and, series by series (a heap
// of the runs keyed by their next series, then by run), takes each run's
// rows of that series in run order:
// each series' rows come out in the order they were added, and a run's
// rows of one series are copied in a tight loop, not a heap step per row.
// More runs than the budget has buffers for are first merged in groups of
// consecutive runs into a second file (and back), as many passes as needed.
// When every row fits in the budget nothing is written at all.
//
// The spill files have no name (sf_temp_unnamed): the kernel frees them
// when the process ends, by Ctrl-C or kill -9 too, so nothing is left for
// a later run to clean up.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define WBUF_MAX (1u << 20)     // bytes written to a spill file at a time
#define CURSOR_MIN (16u << 10)  // a run's read buffer in the merge, at the least
// ... and at the most: a buffer the reads' copies leave in the cache (one of
// a run's share of the budget, megabytes, missed it at every row)
#define CURSOR_MAX (256u << 10)

typedef struct {
    uint64_t off, bytes, rows;  // the run's first byte in its file, its bytes and its rows
} run;

// The row before, which a run's next row is coded against (row_code).
typedef struct {
    uint32_t series;
    uint64_t line, time, step;  // unsigned: differences wrap
} code_state;

// A run on its way into the spill file, sorted, coded and written by a
// thread of its own while the packer fills the other buffer: the copy into
// the page cache was a quarter of the packer's time on rows of 1000 series
// interleaved, and the sort, on the packer's thread, a fifth of it.
typedef struct {
    pthread_t thread;
    int fd;
    const uint8_t *held;  // n fixed records of rec bytes, as they came
    uint8_t *rows;        // the same in series order
    uint32_t *count;      // rows per series in held, nseries of them; left zero
    uint32_t nseries;
    size_t n, rec;
    bool timed;
    uint8_t *out;  // a buffer of cap bytes the coded rows go through
    size_t cap;
    uint64_t off, written;
    int err;  // the write's errno, 0 when it went through
} spill_job;

enum { C_SPILL, C_MEMORY, C_HEAD };

// One source of rows in series order: a run in a spill file, the rows held
// in memory, or the head (an .sfpack).
typedef struct {
    int kind;
    const uint8_t *cur;      // the current row's record; NULL: no more
    const uint8_t *cur_imp;  // its imputed flags (the head's), or NULL
    // C_MEMORY: the row at pos of len. C_SPILL: the run's bytes not yet
    // read start at byte off of fd (left of them); buf holds cap bytes (and
    // 8 more, zeros past len), the next row's code at pos of len; rows not
    // yet decoded into row (a record) after the one at state.
    int fd;
    uint64_t off, left, rows;
    uint8_t *buf, *row;
    size_t cap, len, pos;
    code_state state;
    // C_HEAD: chunk `chunk` (next to decode) of the pack, its rows decoded
    // into vals/time/line/imp, crow the current one; series si ends at row `end`
    uint64_t chunk, si, end;
    uint32_t crow, crows;
} cursor;

struct sf_regroup {
    char *near;  // the output path: spill files go beside it
    uint32_t ncols;
    bool timed;
    size_t rec, hdr;  // bytes of a record, and of its fields before the values
    uint64_t budget;
    uint8_t *buf;     // held rows
    uint8_t *spare;   // the rows held before, the job's to sort while it runs
    uint8_t *sorted;  // held rows in series order: the job's, or at the merge
    spill_job job;
    bool writing;     // job is under way, or done and not yet counted (spill_wait)
    bool threaded;    // ... on its thread, to be joined
    size_t n, cap;
    uint32_t *count;  // rows held per series
    size_t count_cap;
    uint32_t *spare_count;  // zeros, or the job's count while it runs
    size_t spare_count_cap;
    uint32_t nseries;  // highest series index held so far, plus one
    uint8_t *wbuf;     // bytes on their way to a spill file
    size_t wcap;
    int fd[2];         // the spill files, -1 until needed
    uint64_t end[2];   // bytes in each
    int cur;           // the file that holds the runs
    run *runs;
    size_t nruns, runs_cap;
    uint64_t spilled;  // bytes written, in every pass
    uint64_t nspills, passes;  // runs the held rows made, merge passes before the last
    // The head, read by a cursor of its own.
    sf_pack *head;
    uint32_t *map;
    sf_pack_dctx *d;
    void *stored;
    float *vals;
    int64_t *time, *line;
    uint8_t *imp, *head_rec, *head_imp;
};

static inline uint32_t rec_series(const uint8_t *p) {
    uint32_t s;
    memcpy(&s, p, 4);
    return s;
}

static inline int64_t rec_i64(const uint8_t *p) {
    int64_t v;
    memcpy(&v, p, 8);
    return v;
}

// A record's bytes (n >= 16: a series, a line and a value at least) in a
// 16-byte move and 8-byte ones, the last overlapping: a memcpy of a size
// known only at run time was a call per row.
static inline void copy_record(uint8_t *to, const uint8_t *from, size_t n) {
    memcpy(to, from, 16);
    for (size_t i = 16; i + 8 < n; i += 8) memcpy(to + i, from + i, 8);
    memcpy(to + n - 8, from + n - 8, 8);
}

static size_t record_bytes(uint32_t ncols, bool timed) { return 12 + (timed ? 8 : 0) + 4 * (size_t)ncols; }

// A row coded against the one before: a byte of widths, then the series
// unless it is the same or the next, the line's difference and the time's
// second difference (zigzag, in 1, 2, 4 or 8 bytes; the time's in none when
// it steps as the row before did), then the values as they are. A run's
// rows of one series are a few lines apart and step by the same time: a row
// of one value takes 4 bytes and 3 or so (24 as a record), so a third of
// the bytes go to the page cache, back, and to disk. At most CODE_MAX(rec)
// bytes; 8 bytes from each field on are written and read.
#define CODE_MAX(rec) ((rec) + 1)
enum { SERIES_SAME, SERIES_NEXT, SERIES_GIVEN };

static inline unsigned width_code(uint64_t v) { return v <= 0xff ? 0 : v <= 0xffff ? 1 : v <= 0xffffffffu ? 2 : 3; }
static inline uint64_t zigzag(uint64_t d) { return d << 1 ^ (uint64_t)-(int64_t)(d >> 63); }
static inline uint64_t unzigzag(uint64_t z) { return z >> 1 ^ -(z & 1); }
static inline size_t width_bytes(unsigned code) { return (size_t)1 << code; }

// 8 bytes of v at p (the low first: the bytes past a field's width are
// written over by what follows); the spill files are this process's own.
static inline void put8(uint8_t *p, uint64_t v) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &v, 8);
#else
    sf_put_u64(p, v);
#endif
}

static inline uint64_t get8(const uint8_t *p) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
#else
    return sf_get_u64(p);
#endif
}

// A record's values (n bytes): one value in a move, where a memcpy of a
// size known only at run time is a call.
static inline void copy_values(uint8_t *to, const uint8_t *from, size_t n) {
    if (n == 4) memcpy(to, from, 4);
    else memcpy(to, from, n);
}

// Codes record p at out; returns the bytes written.
static inline size_t row_code(uint8_t *out, const uint8_t *p, size_t rec, bool timed, code_state *st) {
    uint32_t series = rec_series(p);
    uint64_t line = (uint64_t)rec_i64(p + 4), dline = zigzag(line - st->line);
    unsigned sc = series == st->series ? SERIES_SAME : series == st->series + 1 ? SERIES_NEXT : SERIES_GIVEN;
    unsigned lc = width_code(dline);
    size_t n = 1;
    if (sc == SERIES_GIVEN) put8(out + n, series), n += 4;
    put8(out + n, dline), n += width_bytes(lc);
    uint8_t head = (uint8_t)(sc | lc << 2);
    size_t hdr = 12;
    if (timed) {
        uint64_t time = (uint64_t)rec_i64(p + 12), step = time - st->time, dd = zigzag(step - st->step);
        if (dd) {
            unsigned tc = width_code(dd);
            put8(out + n, dd), n += width_bytes(tc);
            head |= (uint8_t)((tc + 1) << 4);
        }
        st->time = time, st->step = step;
        hdr = 20;
    }
    out[0] = head;
    copy_values(out + n, p + hdr, rec - hdr);
    st->series = series, st->line = line;
    return n + rec - hdr;
}

static inline uint64_t get_width(const uint8_t *p, unsigned code) {
    uint64_t v = get8(p);
    return code == 3 ? v : v & ((1ull << (8 << code)) - 1);
}

// Decodes the row at in into record p; returns the bytes read.
static inline size_t row_decode(uint8_t *p, const uint8_t *in, size_t rec, bool timed, code_state *st) {
    unsigned head = in[0], sc = head & 3, lc = head >> 2 & 3, tc = head >> 4 & 7;
    size_t n = 1;
    if (sc == SERIES_NEXT) st->series++;
    else if (sc == SERIES_GIVEN) st->series = (uint32_t)get8(in + n), n += 4;
    st->line += unzigzag(get_width(in + n, lc)), n += width_bytes(lc);
    memcpy(p, &st->series, 4);
    memcpy(p + 4, &st->line, 8);
    size_t hdr = 12;
    if (timed) {
        if (tc) st->step += unzigzag(get_width(in + n, tc - 1)), n += width_bytes(tc - 1);
        st->time += st->step;
        memcpy(p + 12, &st->time, 8);
        hdr = 20;
    }
    copy_values(p + hdr, in + n, rec - hdr);
    return n + rec - hdr;
}

uint64_t sf_regroup_min_budget(uint32_t ncols, bool timed) {
    // 64 rows: a run of a few rows and a merge of a few runs, each read
    // through a buffer of 4 rows or more.
    uint64_t wide = 128 * (uint64_t)record_bytes(ncols, timed);
    return wide > SF_REGROUP_MIN_BUDGET ? wide : SF_REGROUP_MIN_BUDGET;
}

int sf_regroup_open(sf_regroup **out, const char *near, uint32_t ncols, bool timed, uint64_t budget, sf_err *e) {
    *out = NULL;
    if (budget < sf_regroup_min_budget(ncols, timed))
        return sf_err_set(e, SF_EUSAGE, "--memory-budget %.3g MB is too small to regroup rows of %u values: at least "
                          "%.3g MB", budget / 1e6, ncols, sf_regroup_min_budget(ncols, timed) / 1e6);
    sf_regroup *r = calloc(1, sizeof *r);
    if (!r) return sf_err_set(e, SF_ENOMEM, "out of memory");
    r->fd[0] = r->fd[1] = -1;
    r->ncols = ncols, r->timed = timed, r->budget = budget;
    r->rec = record_bytes(ncols, timed);
    r->hdr = r->rec - 4 * (size_t)ncols;
    r->wcap = budget / 8 < WBUF_MAX ? (size_t)(budget / 8) : WBUF_MAX;
    if (r->wcap < CODE_MAX(r->rec) + 8) r->wcap = CODE_MAX(r->rec) + 8;
    uint64_t cap = (budget - r->wcap) / (3 * r->rec);
    r->cap = cap < UINT32_MAX ? (size_t)cap : UINT32_MAX;
    r->near = strdup(near);
    // Pages of buf, spare and sorted count only once rows reach them: a
    // small input takes little of a large budget, and spare none unspilled.
    r->buf = sf_alloc_large(r->cap * r->rec);
    r->spare = sf_alloc_large(r->cap * r->rec);
    r->sorted = sf_alloc_large(r->cap * r->rec);
    r->wbuf = malloc(r->wcap);
    if (!r->near || !r->buf || !r->spare || !r->sorted || !r->wbuf) {
        sf_regroup_free(r);
        return sf_err_set(e, SF_ENOMEM, "out of memory for %.1f MB of rows to regroup (--memory-budget)",
                          budget / 1e6);
    }
    *out = r;
    return 0;
}

static int spill_wait(sf_regroup *r, sf_err *e);
static int count_room(sf_regroup *r, uint32_t series, sf_err *e);

void sf_regroup_free(sf_regroup *r) {
    if (!r) return;
    spill_wait(r, &(sf_err){0});  // a failure's, already reported
    for (int k = 0; k < 2; k++)
        if (r->fd[k] >= 0) close(r->fd[k]);
    sf_pack_close(r->head);
    sf_pack_dctx_free(r->d);
    free(r->map), free(r->stored), free(r->vals), free(r->time), free(r->line), free(r->imp);
    free(r->head_rec), free(r->head_imp);
    free(r->near), free(r->buf), free(r->spare), free(r->sorted), free(r->wbuf), free(r->runs);
    free(r->count), free(r->spare_count);
    free(r);
}

uint64_t sf_regroup_runs(const sf_regroup *r) { return r->nspills; }
uint64_t sf_regroup_passes(const sf_regroup *r) { return r->passes + (r->nspills > 0); }
uint64_t sf_regroup_spilled(const sf_regroup *r) { return r->spilled; }

// Spill file k: a file with no name beside the output.
static int spill_file(sf_regroup *r, int k, sf_err *e) {
    int fd = sf_temp_unnamed(r->near, e);
    if (fd < 0) return fd;
    r->fd[k] = fd;
    return 0;
}

static int io_error(const sf_regroup *r, int err, const char *what, sf_err *e) {
    return sf_err_errno(e, SF_EIO, err, "%s: cannot %s the rows held to regroup series in a temporary file beside it "
                        "(%.1f MB written so far)", r->near, what, r->spilled / 1e6);
}

// Rows on their way into a spill file at off, coded (row_code) in wbuf.
typedef struct {
    int fd;
    uint64_t off;
    size_t len;
    code_state state;
} sink;

// Writes p[0, n) at off of fd, counted as spilled.
static int write_at(sf_regroup *r, int fd, const uint8_t *p, size_t n, uint64_t off, sf_err *e) {
    for (size_t done = 0; done < n;) {
        ssize_t k = pwrite(fd, p + done, n - done, (off_t)(off + done));
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return io_error(r, errno, "write", e);
        done += (size_t)k, r->spilled += (uint64_t)k;
    }
    return 0;
}

static int sink_flush(sf_regroup *r, sink *s, sf_err *e) {
    int rc = write_at(r, s->fd, r->wbuf, s->len, s->off, e);
    if (rc) return rc;
    s->off += s->len;
    s->len = 0;
    return 0;
}

static inline int sink_put(sf_regroup *r, sink *s, const uint8_t *rec, sf_err *e) {
    if (s->len + CODE_MAX(r->rec) + 8 > r->wcap) {
        int rc = sink_flush(r, s, e);
        if (rc) return rc;
    }
    s->len += row_code(r->wbuf + s->len, rec, r->rec, r->timed, &s->state);
    return 0;
}

static int add_run(sf_regroup *r, run **runs, size_t *n, size_t *cap, run x, sf_err *e) {
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 16;
        run *p = realloc(*runs, c * sizeof *p);
        if (!p) return sf_err_set(e, SF_ENOMEM, "%s: out of memory for the list of runs", r->near);
        *runs = p, *cap = c;
    }
    (*runs)[(*n)++] = x;
    return 0;
}

// sorted: the n rows of held in series order, each series' in the order
// they came; count (rows per series, nseries of them) is left zero.
static void order_rows(uint8_t *restrict sorted, const uint8_t *restrict held, size_t n, size_t rec,
                       uint32_t *restrict count, uint32_t nseries) {
    uint32_t sum = 0;
    for (uint32_t s = 0; s < nseries; s++) {
        uint32_t k = count[s];
        count[s] = sum;
        sum += k;
    }
    for (size_t i = 0; i < n; i++, held += rec)
        copy_record(sorted + (size_t)count[rec_series(held)]++ * rec, held, rec);
    if (nseries) memset(count, 0, nseries * sizeof *count);
}

// The job's rows sorted, then coded through its buffer into its file at
// off; written: the bytes that went, err: the errno of a write that failed.
static void *spill_write(void *arg) {
    spill_job *j = arg;
    order_rows(j->rows, j->held, j->n, j->rec, j->count, j->nseries);
    code_state st = {0};
    // Locals: the stores through bytes would make the compiler reload j's fields at every row.
    const uint8_t *rows = j->rows;
    uint8_t *out = j->out;
    const size_t n = j->n, rec = j->rec, room = j->cap - (CODE_MAX(rec) + 8);
    const bool timed = j->timed;
    for (size_t i = 0; i < n && !j->err;) {
        size_t len = 0;
        for (; i < n && len <= room; i++) len += row_code(out + len, rows + i * rec, rec, timed, &st);
        for (size_t done = 0; done < len;) {
            ssize_t k = pwrite(j->fd, out + done, len - done, (off_t)(j->off + j->written));
            if (k < 0 && errno == EINTR) continue;
            if (k < 0) {
                j->err = errno;
                break;
            }
            done += (size_t)k, j->written += (uint64_t)k;
        }
    }
    return NULL;
}

// Waits for the run being written, if any (its bytes then counted in the
// file); returns 0 or its write's error.
static int spill_wait(sf_regroup *r, sf_err *e) {
    if (!r->writing) return 0;
    if (r->threaded) pthread_join(r->job.thread, NULL);
    r->writing = false;
    r->spilled += r->job.written;
    r->end[0] += r->job.written;
    r->runs[r->nruns - 1].bytes = r->job.written;
    return r->job.err ? io_error(r, r->job.err, "write", e) : 0;
}

// The held rows in series order into the spill file as a run: sorted,
// coded and written by a thread (through wbuf, not used again before the
// merge) while the spare buffer, and the spare counts, take the next rows.
static int spill(sf_regroup *r, sf_err *e) {
    if (!r->n) return 0;
    int rc = spill_wait(r, e);  // spare, sorted and spare_count are free again
    if (!rc && r->fd[0] < 0) rc = spill_file(r, 0, e);
    // The job's sort reads a count for every series seen so far, some only
    // in the other count's rows.
    if (!rc && r->nseries > r->count_cap) rc = count_room(r, r->nseries - 1, e);
    if (rc) return rc;
    if ((rc = add_run(r, &r->runs, &r->nruns, &r->runs_cap, (run){r->end[0], 0, r->n}, e))) return rc;
    r->job = (spill_job){.fd = r->fd[0], .held = r->buf, .rows = r->sorted, .count = r->count,
                         .nseries = r->nseries, .n = r->n, .rec = r->rec,
                         .timed = r->timed, .out = r->wbuf, .cap = r->wcap, .off = r->end[0]};
    uint8_t *b = r->buf;
    r->buf = r->spare, r->spare = b;
    uint32_t *c = r->count;
    size_t cc = r->count_cap;
    r->count = r->spare_count, r->count_cap = r->spare_count_cap;
    r->spare_count = c, r->spare_count_cap = cc;
    r->threaded = sf_thread_start(&r->job.thread, spill_write, &r->job) == 0;
    if (!r->threaded) spill_write(&r->job);
    r->writing = true;
    r->n = 0;
    r->nspills++;
    return 0;
}

// Room in count for series index `series`; 0 or SF_ENOMEM.
static int count_room(sf_regroup *r, uint32_t series, sf_err *e) {
    size_t cap = r->count_cap ? 2 * r->count_cap : 1024;
    while (cap <= series) cap *= 2;
    uint32_t *c = realloc(r->count, cap * sizeof *c);
    if (!c) return sf_err_set(e, SF_ENOMEM, "%s: out of memory for the series to regroup", r->near);
    memset(c + r->count_cap, 0, (cap - r->count_cap) * sizeof *c);
    r->count = c, r->count_cap = cap;
    return 0;
}

int sf_regroup_add(sf_regroup *r, uint32_t series, const float *values, int64_t time, int64_t line, sf_err *e) {
    return sf_regroup_add_rows(r, &series, values, &time, line, 1, e);
}

int sf_regroup_add_rows(sf_regroup *r, const uint32_t *series, const float *values, const int64_t *time,
                        int64_t line, size_t n, sf_err *e) {
    const size_t rec = r->rec, hdr = r->hdr, ncols = r->ncols;
    const bool timed = r->timed;
    for (size_t i = 0; i < n; i++, values += ncols) {
        if (r->n == r->cap) {
            int rc = spill(r, e);
            if (rc) return rc;
        }
        uint32_t s = series[i];
        int64_t at = line + (int64_t)i;
        int rc = s >= r->count_cap ? count_room(r, s, e) : 0;
        if (rc) return rc;
        uint8_t *p = r->buf + r->n++ * rec;
        memcpy(p, &s, 4);
        memcpy(p + 4, &at, 8);
        if (timed) memcpy(p + 12, &time[i], 8);
        copy_values(p + hdr, (const uint8_t *)values, 4 * ncols);
        r->count[s]++;
        if (s >= r->nseries) r->nseries = s + 1;
    }
    return 0;
}

int sf_regroup_head(sf_regroup *r, sf_pack *head, uint32_t *map, sf_err *e) {
    r->head = head, r->map = map;
    const sf_pack_info *in = sf_pack_get_info(head);
    size_t rows = in->chunk_rows < in->nrows ? in->chunk_rows : (size_t)in->nrows;
    r->d = sf_pack_dctx_create();
    r->stored = malloc(sf_pack_max_stored_size(head) ? sf_pack_max_stored_size(head) : 1);
    r->vals = malloc(rows * r->ncols * sizeof *r->vals);
    r->time = r->timed ? malloc(rows * sizeof *r->time) : NULL;
    r->line = malloc(rows * sizeof *r->line);
    r->imp = malloc(rows * r->ncols);
    r->head_rec = malloc(r->rec);
    r->head_imp = malloc(r->ncols);
    if (!r->d || !r->stored || !r->vals || (r->timed && !r->time) || !r->line || !r->imp || !r->head_rec ||
        !r->head_imp)
        return sf_err_set(e, SF_ENOMEM, "%s: out of memory to read back the rows packed before a series came back",
                          r->near);
    if (in->ncols != r->ncols || !in->has_lines || (in->time_kind != SF_TIME_NONE) != r->timed)
        return sf_err_set(e, SF_EINVAL, "%s: the rows packed before a series came back have other columns", r->near);
    return 0;
}

// Moves c to its next row (the first, on a new cursor).
static int cursor_next(sf_regroup *r, cursor *c, sf_err *e) {
    if (c->kind == C_MEMORY) {
        c->cur = ++c->pos < c->len ? r->sorted + c->pos * r->rec : NULL;
        return 0;
    }
    if (c->kind == C_SPILL) {
        if (!c->rows) {
            c->cur = NULL;
            return 0;
        }
        if (c->len - c->pos < CODE_MAX(r->rec) && c->left) {  // the rest of the buffer may end inside a row
            size_t keep = c->len - c->pos;
            memmove(c->buf, c->buf + c->pos, keep);
            size_t take = c->cap - keep < c->left ? c->cap - keep : (size_t)c->left;
            for (size_t done = 0; done < take;) {
                ssize_t k = pread(c->fd, c->buf + keep + done, take - done, (off_t)(c->off + done));
                if (k < 0 && errno == EINTR) continue;
                if (k <= 0) return io_error(r, k < 0 ? errno : ENODATA, "read back", e);
                done += (size_t)k;
            }
            c->off += take, c->left -= take;
            c->len = keep + take, c->pos = 0;
            memset(c->buf + c->len, 0, 8);  // what the last field's 8-byte read takes past the end
        }
        c->pos += row_decode(c->row, c->buf + c->pos, r->rec, r->timed, &c->state);
        c->rows--;
        c->cur = c->row;
        return 0;
    }
    const sf_pack_info *in = sf_pack_get_info(r->head);
    while (++c->crow >= c->crows) {
        if (c->chunk == in->nchunks) {
            c->cur = NULL;
            return 0;
        }
        int rc = sf_pack_chunk_read(r->head, c->chunk, r->stored, e);
        if (!rc) rc = sf_pack_chunk_decode_imputed(r->d, r->head, c->chunk, r->stored, r->vals, r->time, r->line,
                                                   r->imp, e);
        if (rc) return rc;
        c->crows = sf_pack_chunk_locate(r->head, c->chunk++).rows;
        c->crow = UINT32_MAX;  // ++ makes it 0
    }
    uint64_t row = sf_pack_chunk_locate(r->head, c->chunk - 1).first_row + c->crow;
    while (row >= c->end) c->si++, c->end = in->series[c->si].first_row + in->series[c->si].rows;
    uint8_t *p = r->head_rec;
    memcpy(p, &r->map[c->si], 4);
    memcpy(p + 4, &r->line[c->crow], 8);
    if (r->timed) memcpy(p + 12, &r->time[c->crow], 8);
    float *v = (float *)(p + r->hdr);
    for (uint32_t k = 0; k < r->ncols; k++) {
        v[k] = r->vals[(size_t)k * c->crows + c->crow];
        r->head_imp[k] = r->imp[(size_t)k * c->crows + c->crow];
    }
    c->cur = p;
    c->cur_imp = r->head_imp;
    return 0;
}

// Whether cursor a's row goes before b's: the lower series, then the
// earlier source.
static inline bool before(const cursor *cs, uint32_t a, uint32_t b) {
    uint32_t sa = rec_series(cs[a].cur), sb = rec_series(cs[b].cur);
    return sa < sb || (sa == sb && a < b);
}

static void sift_down(const cursor *cs, uint32_t *heap, size_t n, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && before(cs, heap[l], heap[m])) m = l;
        if (l + 1 < n && before(cs, heap[l + 1], heap[m])) m = l + 1;
        if (m == i) return;
        uint32_t t = heap[i];
        heap[i] = heap[m], heap[m] = t;
        i = m;
    }
}

// Rows on their way to emit: a source's rows of one series, up to cap of
// them, as the callback takes them (a call per row, and its checks, were a
// third of the merge on rows of one value).
typedef struct {
    float *values;
    int64_t *times, *lines;
    size_t n, cap;
} emit_batch;

// The rows of series s in c from its current one on, up to a batch of
// them, into emit; c left at the row after them.
static int emit_rows(sf_regroup *r, cursor *c, uint32_t s, emit_batch *b, sf_regroup_emit emit, void *arg,
                     sf_err *e) {
    const uint8_t *p = c->cur;
    int64_t time = r->timed ? rec_i64(p + 12) : 0, line = rec_i64(p + 4);
    if (c->cur_imp) {  // the head's row, with its flags
        int rc = emit(arg, s, (const float *)(p + r->hdr), r->timed ? &time : NULL, &line, c->cur_imp, 1);
        return rc ? rc : cursor_next(r, c, e);
    }
    int rc = 0;
    const size_t bytes = 4 * (size_t)r->ncols;
    for (b->n = 0; !rc && b->n < b->cap && c->cur && rec_series(c->cur) == s; b->n++) {
        p = c->cur;
        memcpy(b->values + b->n * r->ncols, p + r->hdr, bytes);
        b->times[b->n] = r->timed ? rec_i64(p + 12) : 0;
        b->lines[b->n] = rec_i64(p + 4);
        rc = cursor_next(r, c, e);
    }
    return rc ? rc : emit(arg, s, b->values, r->timed ? b->times : NULL, b->lines, NULL, b->n);
}

// Merges the k cursors (sources in order) into emit through b, or into
// the sink out when emit is NULL.
static int merge_into(sf_regroup *r, cursor *cs, uint32_t k, sf_regroup_emit emit, void *arg, emit_batch *b,
                      sink *out, sf_err *e) {
    uint32_t *heap = malloc(k * sizeof *heap);
    if (!heap) return sf_err_set(e, SF_ENOMEM, "%s: out of memory to merge the runs", r->near);
    int rc = 0;
    size_t n = 0;
    for (uint32_t i = 0; i < k && !rc; i++)
        if (!(rc = cursor_next(r, &cs[i], e)) && cs[i].cur) heap[n++] = i;
    for (size_t i = n; !rc && i-- > 0;) sift_down(cs, heap, n, i);
    while (!rc && n) {
        cursor *c = &cs[heap[0]];
        uint32_t s = rec_series(c->cur);
        do {  // this source's rows of series s, in order
            if (emit) {
                rc = emit_rows(r, c, s, b, emit, arg, e);
            } else {
                rc = sink_put(r, out, c->cur, e);
                if (!rc) rc = cursor_next(r, c, e);
            }
        } while (!rc && c->cur && rec_series(c->cur) == s);
        if (!c->cur) heap[0] = heap[--n];
        sift_down(cs, heap, n, 0);
    }
    free(heap);
    return rc;
}

// Bytes of a cursor's buffer, for k cursors (and extra sources) sharing the
// budget (the write buffer's set apart) with their slack and records; a
// multiple of 8, so that the record after it keeps its floats aligned.
static size_t cursor_bytes(const sf_regroup *r, uint64_t k) {
    uint64_t share = (r->budget - r->wcap) / k, fixed = r->rec + 8 + 8;
    uint64_t cap = share > fixed ? share - fixed : 0;
    return (cap > CURSOR_MAX ? CURSOR_MAX : (size_t)cap) & ~(size_t)7;
}

// Cursors over runs [from, from + k) of the current file.
static cursor *run_cursors(sf_regroup *r, size_t from, uint32_t k, uint32_t extra, sf_err *e) {
    size_t cap = cursor_bytes(r, k + extra), each = (cap + 8 + r->rec + 7) & ~(size_t)7;
    cursor *cs = calloc(k + extra, sizeof *cs);
    uint8_t *bufs = cs ? malloc(each * k) : NULL;
    if (!bufs) {
        free(cs);
        sf_err_set(e, SF_ENOMEM, "%s: out of memory to merge the runs", r->near);
        return NULL;
    }
    for (uint32_t i = 0; i < k; i++) {
        const run *x = &r->runs[from + i];
        uint8_t *b = bufs + i * each;
        cs[extra + i] = (cursor){.kind = C_SPILL, .fd = r->fd[r->cur], .off = x->off, .left = x->bytes,
                                 .rows = x->rows, .buf = b, .row = b + cap + 8, .cap = cap};
    }
    return cs;
}

static void free_cursors(cursor *cs, uint32_t extra) {
    if (cs) free(cs[extra].buf);  // every run's buffer, in one block
    free(cs);
}

// Runs one merge may read at a time: each through CURSOR_MIN bytes or 4
// rows at the least (a row coded, its record and the slack besides).
static uint32_t fan_in(const sf_regroup *r) {
    uint64_t least = 4 * CODE_MAX(r->rec) > CURSOR_MIN ? 4 * CODE_MAX(r->rec) : CURSOR_MIN;
    uint64_t fan = (r->budget - r->wcap) / (least + r->rec + 24);  // cursor_bytes' slack and rounding
    return fan > 65536 ? 65536 : fan < 2 ? 2 : (uint32_t)fan;
}

// One pass: consecutive runs merged in groups of fan into the other file.
static int merge_pass(sf_regroup *r, uint32_t fan, sf_err *e) {
    int from = r->cur, to = 1 - from;
    int rc = r->fd[to] < 0 ? spill_file(r, to, e) : 0;
    run *out = NULL;
    size_t nout = 0, cap = 0;
    sink s = {r->fd[to], 0, 0, {0}};
    for (size_t g = 0; !rc && g < r->nruns; g += fan) {
        uint32_t k = r->nruns - g < fan ? (uint32_t)(r->nruns - g) : fan;
        cursor *cs = run_cursors(r, g, k, 0, e);
        if (!cs) rc = SF_ENOMEM;
        uint64_t start = s.off + s.len, rows = 0;
        for (uint32_t i = 0; i < k; i++) rows += r->runs[g + i].rows;
        s.state = (code_state){0};  // each run is decoded from the start
        if (!rc) rc = merge_into(r, cs, k, NULL, NULL, NULL, &s, e);
        if (!rc) rc = add_run(r, &out, &nout, &cap, (run){start, s.off + s.len - start, rows}, e);
        free_cursors(cs, 0);
    }
    if (!rc) rc = sink_flush(r, &s, e);
    if (!rc && ftruncate(r->fd[from], 0) != 0) rc = io_error(r, errno, "free", e);
    if (rc) {
        free(out);
        return rc;
    }
    free(r->runs);
    r->runs = out, r->nruns = nout, r->runs_cap = cap;
    r->end[from] = 0, r->end[to] = s.off;
    r->cur = to;
    r->passes++;
    return 0;
}

// Merges every row into emit, once the runs are few enough.
static int merge_emit(sf_regroup *r, sf_regroup_emit emit, void *arg, emit_batch *b, sf_err *e) {
    uint32_t extra = r->head != NULL;
    int rc = 0;
    if (!r->nruns) {  // every row in memory: no file
        order_rows(r->sorted, r->buf, r->n, r->rec, r->count, r->nseries);
        cursor cs[2] = {{.kind = C_HEAD, .si = UINT64_MAX}, {.kind = C_MEMORY, .len = r->n, .pos = SIZE_MAX}};
        return merge_into(r, cs + 1 - extra, 1 + extra, emit, arg, b, NULL, e);
    }
    // The last rows are spilled too, and the budget goes to the merge.
    if ((rc = spill(r, e)) || (rc = spill_wait(r, e))) return rc;
    free(r->buf), free(r->spare), free(r->sorted);
    r->buf = NULL, r->spare = NULL, r->sorted = NULL;
    uint32_t fan = fan_in(r);
    while (!rc && r->nruns + extra > fan) rc = merge_pass(r, fan, e);
    if (rc) return rc;
    cursor *cs = run_cursors(r, 0, (uint32_t)r->nruns, extra, e);
    if (!cs) return SF_ENOMEM;
    if (extra) cs[0] = (cursor){.kind = C_HEAD, .si = UINT64_MAX};
    rc = merge_into(r, cs, (uint32_t)r->nruns + extra, emit, arg, b, NULL, e);
    free_cursors(cs, extra);
    return rc;
}

int sf_regroup_merge(sf_regroup *r, sf_regroup_emit emit, void *arg, sf_err *e) {
    // A batch of 64 KiB of values at most (a row at the least), beside the budget.
    size_t cap = r->ncols ? (64u << 10) / (4 * (size_t)r->ncols) : 1024;
    emit_batch b = {.cap = cap < 1 ? 1 : cap > 1024 ? 1024 : cap};
    b.values = malloc(b.cap * r->ncols * sizeof *b.values + 1);
    b.times = malloc(b.cap * sizeof *b.times);
    b.lines = malloc(b.cap * sizeof *b.lines);
    int rc = b.values && b.times && b.lines ? merge_emit(r, emit, arg, &b, e)
                                             : sf_err_set(e, SF_ENOMEM, "%s: out of memory to merge the runs", r->near);
    free(b.values), free(b.times), free(b.lines);
    return rc;
}

int sf_regroup_head_writer(sf_regroup *r, sf_pack_writer *w, const char *near, const sf_regroup_packer *p, sf_err *e) {
    if (!sf_pack_writer_nrows(w)) {  // every row so far dropped (missing values)
        sf_pack_writer_abort(w);
        return 0;
    }
    int rc = p->categories ? p->categories(p->arg, w, e) : 0;
    if (rc) {
        sf_pack_writer_abort(w);
        return rc;
    }
    int fd;
    sf_pack *head;
    if ((rc = sf_pack_writer_finish_fd(w, &fd, e))) return rc;
    rc = sf_pack_open_fd(&head, fd, near, e);
    close(fd);
    if (rc) return rc;
    const sf_pack_info *in = sf_pack_get_info(head);
    uint32_t *map = malloc((in->nseries ? in->nseries : 1) * sizeof *map);
    if (!map) {
        sf_pack_close(head);
        return sf_err_set(e, SF_ENOMEM, "%s: out of memory", near);
    }
    for (uint64_t i = 0; i < in->nseries; i++) map[i] = p->index(p->arg, in->series[i].name);
    return sf_regroup_head(r, head, map, e);
}

void sf_regroup_note(const sf_regroup *r, const char *order, const char *out, char *msg, size_t cap) {
    int n = snprintf(msg, cap, "note: the rows of series interleave: pack regrouped them, each series' rows in the "
                     "order of %s, the series in the order they first appear (", order);
    if (n < 0 || (size_t)n >= cap) return;
    if (r->nspills)
        snprintf(msg + n, cap - (size_t)n, "%llu sorted runs merged in %llu pass(es), %.1f MB written to temporary "
                 "files beside %s; a larger --memory-budget writes fewer)", (unsigned long long)sf_regroup_runs(r),
                 (unsigned long long)sf_regroup_passes(r), sf_regroup_spilled(r) / 1e6, out);
    else
        snprintf(msg + n, cap - (size_t)n, "in memory, within --memory-budget)");
}

// ---- the series ids seen ----

sf_series_id *sf_series_ids_add(sf_series_ids *s, const char *key, size_t n, uint64_t first, bool *found) {
    if (2 * (s->len + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        sf_series_id *t = calloc(cap, sizeof *t);
        // where each slot went: the links between them (after, last) follow,
        // else the ids whose rows a packer takes without adding them (the
        // parse found them in a copy of this table) would never be linked again
        uint32_t *moved = malloc((s->cap ? s->cap : 1) * sizeof *moved);
        if (!t || !moved) {
            free(t), free(moved);
            return NULL;
        }
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->slot[i].key) continue;
            size_t j = sf_hash_bytes(s->slot[i].key, s->slot[i].len) & (cap - 1);
            while (t[j].key) j = (j + 1) & (cap - 1);
            t[j] = s->slot[i];
            moved[i] = (uint32_t)j;
        }
        for (size_t j = 0; j < cap; j++)
            if (t[j].after) t[j].after = moved[t[j].after - 1] + 1;
        if (s->last) s->last = moved[s->last - 1] + 1;
        free(s->slot), free(moved);
        s->slot = t;
        s->cap = cap;
    }
    // Rows of series that interleave come round in the same order, so the
    // id that followed the last one last time is tried before the hash.
    sf_series_id *prev = s->last ? &s->slot[s->last - 1] : NULL, *hit = NULL;
    if (prev && prev->after) {
        sf_series_id *g = &s->slot[prev->after - 1];
        if (g->len == n && sf_bytes_equal(g->key, key, n)) hit = g;
    }
    size_t j = hit ? 0 : sf_hash_bytes(key, n) & (s->cap - 1);
    for (; !hit && s->slot[j].key; j = (j + 1) & (s->cap - 1))
        if (s->slot[j].len == n && sf_bytes_equal(s->slot[j].key, key, n)) hit = &s->slot[j];
    *found = hit != NULL;
    if (!hit) {
        char *k = malloc(n + 1);
        if (!k) return NULL;
        memcpy(k, key, n);
        k[n] = 0;
        s->slot[j] = (sf_series_id){.key = k, .len = n, .first = first};
        s->len++;
        hit = &s->slot[j];
    }
    size_t at = (size_t)(hit - s->slot);
    if (prev) prev->after = (uint32_t)(at + 1);
    s->last = at + 1;
    return hit;
}

const sf_series_id *sf_series_ids_find(const sf_series_ids *s, const char *key, size_t n) {
    if (!s->cap) return NULL;
    for (size_t j = sf_hash_bytes(key, n) & (s->cap - 1); s->slot[j].key; j = (j + 1) & (s->cap - 1))
        if (s->slot[j].len == n && sf_bytes_equal(s->slot[j].key, key, n)) return &s->slot[j];
    return NULL;
}

const sf_series_id **sf_series_ids_by_index(const sf_series_ids *s, uint32_t nindex) {
    const sf_series_id **by = malloc((nindex ? nindex : 1) * sizeof *by);
    for (size_t i = 0; by && i < s->cap; i++)
        if (s->slot[i].key) by[s->slot[i].index] = &s->slot[i];
    return by;
}

void sf_series_ids_free(sf_series_ids *s) {
    for (size_t i = 0; i < s->cap; i++) free(s->slot[i].key);
    free(s->slot);
    *s = (sf_series_ids){0};
}
