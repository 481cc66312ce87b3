// Regrouping rows by series with bounded memory (internal.h). A row is a
// fixed-size record: series u32, line i64, time i64 (with a time column),
// ncols float32. Rows are held in a buffer of half the budget; a full
// buffer is copied in series order into the other half by a counting sort
// (stable, and linear: series indices are dense, one 4-byte counter each;
// it reads the rows in order and writes each series' rows in order, where a
// gather in series order would miss the cache at every row of interleaved
// series) and written as a run to a spill file in one go. The merge reads every run through a buffer of its share of
// the budget and, series by series (a heap of the runs keyed by their next
// series, then by run), takes each run's rows of that series in run order:
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

typedef struct {
    uint64_t off, rows;  // the run's first byte in its file, and its rows
} run;

// A run on its way into the spill file, written by a thread of its own
// while the packer fills the held rows again: the copy into the page cache
// was a quarter of the packer's time on rows of 1000 series interleaved.
typedef struct {
    pthread_t thread;
    int fd;
    const uint8_t *p;
    size_t n;
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
    // C_SPILL: rows not yet read start at byte off of fd; buf holds cap rows
    int fd;
    uint64_t off, left;
    uint8_t *buf;
    size_t cap, len, pos;  // in rows
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
    uint8_t *sorted;  // the same in series order, at a spill; the job's while it writes
    spill_job job;
    bool writing;     // job's thread is running (joined by spill_wait)
    size_t n, cap;
    uint32_t *count;  // rows held per series
    size_t count_cap;
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
    if (r->wcap < r->rec) r->wcap = r->rec;
    uint64_t cap = (budget - r->wcap) / (2 * r->rec);
    r->cap = cap < UINT32_MAX ? (size_t)cap : UINT32_MAX;
    r->near = strdup(near);
    // Pages of buf and sorted count only once rows reach them: a small
    // input takes little of a large budget.
    r->buf = malloc(r->cap * r->rec);
    r->sorted = malloc(r->cap * r->rec);
    r->wbuf = malloc(r->wcap);
    if (!r->near || !r->buf || !r->sorted || !r->wbuf) {
        sf_regroup_free(r);
        return sf_err_set(e, SF_ENOMEM, "out of memory for %.1f MB of rows to regroup (--memory-budget)",
                          budget / 1e6);
    }
    *out = r;
    return 0;
}

static int spill_wait(sf_regroup *r, sf_err *e);

void sf_regroup_free(sf_regroup *r) {
    if (!r) return;
    spill_wait(r, &(sf_err){0});  // a failure's, already reported
    for (int k = 0; k < 2; k++)
        if (r->fd[k] >= 0) close(r->fd[k]);
    sf_pack_close(r->head);
    sf_pack_dctx_free(r->d);
    free(r->map), free(r->stored), free(r->vals), free(r->time), free(r->line), free(r->imp);
    free(r->head_rec), free(r->head_imp);
    free(r->near), free(r->buf), free(r->sorted), free(r->count), free(r->wbuf), free(r->runs);
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

// Records on their way into a spill file at off.
typedef struct {
    int fd;
    uint64_t off;
    size_t len;
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
    if (s->len + r->rec > r->wcap) {
        int rc = sink_flush(r, s, e);
        if (rc) return rc;
    }
    copy_record(r->wbuf + s->len, rec, r->rec);
    s->len += r->rec;
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

// sorted: the held rows in series order, each series' in the order they came.
static void order_held(sf_regroup *r) {
    uint32_t sum = 0;
    for (uint32_t s = 0; s < r->nseries; s++) {
        uint32_t k = r->count[s];
        r->count[s] = sum;
        sum += k;
    }
    // Locals: the stores through bytes would make the compiler reload r's fields at every row.
    const uint8_t *p = r->buf;
    uint8_t *sorted = r->sorted;
    uint32_t *at = r->count;
    size_t rec = r->rec;
    for (size_t i = 0, n = r->n; i < n; i++, p += rec) copy_record(sorted + (size_t)at[rec_series(p)]++ * rec, p, rec);
    if (r->nseries) memset(r->count, 0, r->nseries * sizeof *r->count);
}

static void *spill_write(void *arg) {
    spill_job *j = arg;
    while (j->written < j->n) {
        ssize_t k = pwrite(j->fd, j->p + j->written, j->n - j->written, (off_t)(j->off + j->written));
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            j->err = errno;
            break;
        }
        j->written += (size_t)k;
    }
    return NULL;
}

// Waits for the run being written, if any; returns 0 or its write's error.
static int spill_wait(sf_regroup *r, sf_err *e) {
    if (!r->writing) return 0;
    pthread_join(r->job.thread, NULL);
    r->writing = false;
    r->spilled += r->job.written;
    return r->job.err ? io_error(r, r->job.err, "write", e) : 0;
}

// The held rows in series order into the spill file as a run: sorted, then
// written by a thread while buf takes the next rows.
static int spill(sf_regroup *r, sf_err *e) {
    if (!r->n) return 0;
    int rc = spill_wait(r, e);  // sorted is free again
    if (!rc && r->fd[0] < 0) rc = spill_file(r, 0, e);
    if (rc) return rc;
    order_held(r);
    size_t bytes = r->n * r->rec;
    if ((rc = add_run(r, &r->runs, &r->nruns, &r->runs_cap, (run){r->end[0], r->n}, e))) return rc;
    r->job = (spill_job){.fd = r->fd[0], .p = r->sorted, .n = bytes, .off = r->end[0]};
    r->writing = sf_thread_start(&r->job.thread, spill_write, &r->job) == 0;
    if (!r->writing && (rc = write_at(r, r->fd[0], r->sorted, bytes, r->end[0], e))) return rc;
    r->end[0] += bytes;
    r->n = 0;
    r->nspills++;
    return 0;
}

int sf_regroup_add(sf_regroup *r, uint32_t series, const float *values, int64_t time, int64_t line, sf_err *e) {
    if (r->n == r->cap) {
        int rc = spill(r, e);
        if (rc) return rc;
    }
    if (series >= r->count_cap) {
        size_t cap = r->count_cap ? 2 * r->count_cap : 1024;
        while (cap <= series) cap *= 2;
        uint32_t *c = realloc(r->count, cap * sizeof *c);
        if (!c) return sf_err_set(e, SF_ENOMEM, "%s: out of memory for the series to regroup", r->near);
        memset(c + r->count_cap, 0, (cap - r->count_cap) * sizeof *c);
        r->count = c, r->count_cap = cap;
    }
    uint8_t *p = r->buf + r->n++ * r->rec;
    memcpy(p, &series, 4);
    memcpy(p + 4, &line, 8);
    if (r->timed) memcpy(p + 12, &time, 8);
    if (r->ncols == 1) memcpy(p + r->hdr, values, 4);  // a call for one value cost more than the copy
    else memcpy(p + r->hdr, values, 4 * (size_t)r->ncols);
    r->count[series]++;
    if (series >= r->nseries) r->nseries = series + 1;
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
        if (++c->pos < c->len) {
            c->cur += r->rec;
            return 0;
        }
        if (!c->left) {
            c->cur = NULL;
            return 0;
        }
        size_t take = c->left < c->cap ? (size_t)c->left : c->cap, n = take * r->rec;
        for (size_t done = 0; done < n;) {
            ssize_t k = pread(c->fd, c->buf + done, n - done, (off_t)(c->off + done));
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) return io_error(r, k < 0 ? errno : ENODATA, "read back", e);
            done += (size_t)k;
        }
        c->off += n, c->left -= take;
        c->len = take, c->pos = 0;
        c->cur = c->buf;
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

// Merges the k cursors (sources in order) into emit, or into the sink out
// when emit is NULL.
static int merge_into(sf_regroup *r, cursor *cs, uint32_t k, sf_regroup_emit emit, void *arg, sink *out,
                      sf_err *e) {
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
            const uint8_t *p = c->cur;
            if (emit)
                rc = emit(arg, s, (const float *)(p + r->hdr), r->timed ? rec_i64(p + 12) : 0, rec_i64(p + 4),
                          c->cur_imp);
            else
                rc = sink_put(r, out, p, e);
            if (!rc) rc = cursor_next(r, c, e);
        } while (!rc && c->cur && rec_series(c->cur) == s);
        if (!c->cur) heap[0] = heap[--n];
        sift_down(cs, heap, n, 0);
    }
    free(heap);
    return rc;
}

// Cursors over runs [from, from + k) of the current file, each reading
// through its share of the budget (the write buffer's set apart).
static cursor *run_cursors(sf_regroup *r, size_t from, uint32_t k, uint32_t extra, sf_err *e) {
    size_t rows = (size_t)((r->budget - r->wcap) / (k + extra) / r->rec);
    cursor *cs = calloc(k + extra, sizeof *cs);
    uint8_t *bufs = cs ? malloc(rows * r->rec * k) : NULL;
    if (!bufs) {
        free(cs);
        sf_err_set(e, SF_ENOMEM, "%s: out of memory to merge the runs", r->near);
        return NULL;
    }
    for (uint32_t i = 0; i < k; i++) {
        const run *x = &r->runs[from + i];
        cs[extra + i] = (cursor){.kind = C_SPILL, .fd = r->fd[r->cur], .off = x->off, .left = x->rows,
                                 .buf = bufs + i * rows * r->rec, .cap = rows};
    }
    return cs;
}

static void free_cursors(cursor *cs, uint32_t extra) {
    if (cs) free(cs[extra].buf);  // every run's buffer, in one block
    free(cs);
}

// Runs one merge may read at a time: each through CURSOR_MIN bytes or 4
// rows at the least.
static uint32_t fan_in(const sf_regroup *r) {
    uint64_t least = 4 * r->rec > CURSOR_MIN ? 4 * r->rec : CURSOR_MIN;
    uint64_t fan = (r->budget - r->wcap) / least;
    return fan > 65536 ? 65536 : fan < 2 ? 2 : (uint32_t)fan;
}

// One pass: consecutive runs merged in groups of fan into the other file.
static int merge_pass(sf_regroup *r, uint32_t fan, sf_err *e) {
    int from = r->cur, to = 1 - from;
    int rc = r->fd[to] < 0 ? spill_file(r, to, e) : 0;
    run *out = NULL;
    size_t nout = 0, cap = 0;
    sink s = {r->fd[to], 0, 0};
    for (size_t g = 0; !rc && g < r->nruns; g += fan) {
        uint32_t k = r->nruns - g < fan ? (uint32_t)(r->nruns - g) : fan;
        cursor *cs = run_cursors(r, g, k, 0, e);
        if (!cs) rc = SF_ENOMEM;
        uint64_t start = s.off + s.len, rows = 0;
        for (uint32_t i = 0; i < k; i++) rows += r->runs[g + i].rows;
        if (!rc) rc = merge_into(r, cs, k, NULL, NULL, &s, e);
        if (!rc) rc = add_run(r, &out, &nout, &cap, (run){start, rows}, e);
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

int sf_regroup_merge(sf_regroup *r, sf_regroup_emit emit, void *arg, sf_err *e) {
    uint32_t extra = r->head != NULL;
    int rc = 0;
    if (!r->nruns) {  // every row in memory: no file
        order_held(r);
        cursor cs[2] = {{.kind = C_HEAD, .si = UINT64_MAX}, {.kind = C_MEMORY, .len = r->n, .pos = SIZE_MAX}};
        return merge_into(r, cs + 1 - extra, 1 + extra, emit, arg, NULL, e);
    }
    // The last rows are spilled too, and the budget goes to the merge.
    if ((rc = spill(r, e)) || (rc = spill_wait(r, e))) return rc;
    free(r->buf), free(r->sorted);
    r->buf = NULL, r->sorted = NULL;
    uint32_t fan = fan_in(r);
    while (!rc && r->nruns + extra > fan) rc = merge_pass(r, fan, e);
    if (rc) return rc;
    cursor *cs = run_cursors(r, 0, (uint32_t)r->nruns, extra, e);
    if (!cs) return SF_ENOMEM;
    if (extra) cs[0] = (cursor){.kind = C_HEAD, .si = UINT64_MAX};
    rc = merge_into(r, cs, (uint32_t)r->nruns + extra, emit, arg, NULL, e);
    free_cursors(cs, extra);
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

const sf_series_id *sf_series_ids_find(const sf_series_ids *s, const sf_series_id *prev, const char *key, size_t n) {
    if (!s->cap) return NULL;
    if (prev && prev->after) {
        const sf_series_id *g = &s->slot[prev->after - 1];
        if (g->len == n && sf_bytes_equal(g->key, key, n)) return g;
    }
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
