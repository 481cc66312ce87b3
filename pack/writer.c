// Streams rows into an .sfpack in one pass: chunks are filtered and
// compressed by a small pool of threads and written in order; the index,
// statistics and series table go into the trailer once all rows are known.
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "internal.h"

typedef struct {
    float *raw;        // column-major, chunk_rows * ncols
    int64_t *aux;      // the rows' times, then their lines: column-major, chunk_rows each
    uint8_t *imp;      // 1 where a value was imputed: column-major like raw (NULL: the file records none)
    uint64_t *imp_count;  // ncols: the chunk's imputed values per column
    int64_t max_step;  // sf_pack_chunk_max_step
    void *stored;      // compressed bytes
    size_t stored_cap, stored_size, rows;
    sf_moments *moments;  // ncols
    uint64_t seq;
    bool done;               // compressed; guarded by mu when there are workers
    const char *error_name;  // zstd's, when compression failed
    // Placed (sf_pack_writer_place): the stored bytes are already in the
    // file at placed_offset; only the statistics are computed.
    bool placed;
    uint64_t placed_offset;
    uint32_t placed_crc;
} job;

typedef struct {
    uint64_t first_row, rows;
    char *name;
    size_t len;  // names may hold NUL bytes
    int64_t first_time, last_time;
} series_entry;

// The typical step of a time column: the most common among the first
// STEP_SAMPLE steps (a table of up to STEP_KINDS distinct ones); after that,
// steps above it count as gaps as they come.
enum { STEP_SAMPLE = 10000, STEP_KINDS = 256 };

// fdatasync of the file as it grows, on a thread of its own, each SYNC_STEP
// bytes (sync_ahead). A virtual disk's cache flush costs in proportion to
// the bytes it has not flushed (88 ms for 64 MB on the development VM,
// 0.3 ms for 4 KB): left to the final fsync, a quarter of a second of a
// 1 GB CSV's pack came after its last chunk, with no thread busy.
#define SYNC_STEP (64u << 20)
typedef struct {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int fd;
    uint64_t asked, synced;  // bytes: up to which a sync was asked for, done
    bool stop;
    int err;  // the first failed sync's errno: the final fsync may not see it again
} syncer;

struct sf_pack_writer {
    char *path, *tmp_path;
    int fd;
    uint32_t ncols, chunk_rows;
    int level, filter;
    const char *const *col_names;  // borrowed until finish

    job *jobs;
    size_t njobs;
    uint64_t next_seq, next_write, next_take;  // job sequence numbers
    uint64_t anchor;  // the sequence number of jobs[0]'s turn (job_at)
    size_t fill;  // rows in the job being filled (job_at(next_seq))
    ZSTD_CCtx *cctx;  // inline compression: no workers, or sf_pack_writer_inline
    // A chunk's filtered bytes, zstd's input, are needed only while it is
    // compressed: a buffer per compressor (each worker's own, or this one
    // inline), not per job, whose 2 * threads buffers of up to 5 MB were
    // each faulted in page by page (page faults took about a tenth of
    // CSV packing's CPU).
    uint8_t *filtered;
    size_t filtered_bytes;

    pthread_t *threads;
    int nthreads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    bool inline_on;  // sf_pack_writer_inline: chunks compressed by the thread that fills them

    uint32_t version, naux;  // naux: int64 columns after the floats (time, line)
    bool has_time, has_lines, has_imputed;
    uint64_t *imputed;        // ncols: imputed values per column, of the chunks written
    const char *time_column;  // borrowed until finish
    enum sf_time_kind time_kind;
    unsigned time_parts;
    int64_t step_value[STEP_KINDS];
    uint64_t step_count[STEP_KINDS], steps_seen, gaps;
    uint32_t step_kinds;
    int64_t step;  // decided after STEP_SAMPLE steps, or at the end
    uint32_t *cat_cols, ncat;  // categorical columns
    char ***cat_values;        // each one's texts (NULL until given)
    uint32_t *cat_n;

    uint64_t nrows, offset;  // offset: where the next chunk goes
    uint64_t written_back;   // where write-back was last started (write_back)
    syncer *sync;            // started at the first sync_step bytes (sync_ahead); NULL before
    uint64_t sync_step;      // SYNC_STEP; tests set less (SEQFEED_TEST_SYNC_STEP)
    bool sync_off;           // it could not start: the final fsync does it all
    bool empty_on_abort;     // stdout, a file that was empty: emptied again on failure
    uint64_t data_offset;    // where the first chunk goes
    uint8_t *index;          // SF_INDEX_ENTRY per chunk
    int64_t *chunk_steps;    // sf_pack_chunk_max_step, per chunk written
    size_t index_len, index_cap;
    sf_moments *moments;     // ncols, merged in chunk order
    series_entry *series;
    size_t nseries, series_cap;
    const char *const *sources;  // borrowed until finish
    uint32_t nsources;
};

static int write_all(sf_pack_writer *w, const void *buf, size_t n, uint64_t off, sf_err *e) {
    const uint8_t *p = buf;
    while (n) {
        ssize_t k = pwrite(w->fd, p, n, (off_t)off);
        if (k < 0) {
            if (errno == EINTR) continue;
            return sf_err_errno(e, SF_EIO, errno, "%s: write failed at byte %llu", w->path,
                                (unsigned long long)off);
        }
        p += k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return 0;
}

// The int64 columns after the floats: each value minus the one before
// (the first minus 0), zigzag-coded, little-endian. Times and lines step
// by the same amount row after row, which zstd takes to almost nothing.
static void aux_encode(uint8_t *out, const int64_t *in, size_t rows) {
    uint64_t prev = 0;
    for (size_t r = 0; r < rows; r++) {
        uint64_t d = (uint64_t)in[r] - prev;
        prev = (uint64_t)in[r];
        sf_put_u64(out + 8 * r, d << 1 ^ (uint64_t)-(int64_t)(d >> 63));
    }
}

// The imputed flags as bits after the int64 columns: bit i (LSB first) for
// value i in column-major order, the bits past the last value 0.
static void imputed_encode(uint8_t *out, const uint8_t *imp, uint64_t *count, uint32_t ncols, size_t rows) {
    size_t n = rows * ncols;
    memset(out, 0, (n + 7) / 8);
    for (uint32_t c = 0; c < ncols; c++) count[c] = 0;
    for (size_t i = 0; i < n; i++)
        if (imp[i]) out[i / 8] |= (uint8_t)(1u << (i % 8)), count[i / rows]++;
}

static void job_compress(job *j, ZSTD_CCtx *cctx, uint8_t *filtered, uint32_t ncols, uint32_t naux, int level,
                         int filter) {
    for (uint32_t c = 0; c < ncols; c++) sf_moments_of(&j->moments[c], j->raw + c * j->rows, j->rows);
    if (j->placed) {  // the bytes are in the file: only the imputed counts are wanted
        if (j->imp) imputed_encode(filtered, j->imp, j->imp_count, ncols, j->rows);
        j->error_name = NULL;
        return;
    }
    size_t raw_size = (size_t)sf_chunk_raw_bytes(j->rows, ncols, naux, j->imp != NULL);
    sf_filter_encode(filtered, j->raw, ncols, j->rows, filter);
    for (uint32_t a = 0; a < naux; a++)
        aux_encode(filtered + j->rows * (ncols * 4 + a * 8), j->aux + (size_t)a * j->rows, j->rows);
    if (j->imp) imputed_encode(filtered + j->rows * (ncols * 4 + naux * 8), j->imp, j->imp_count, ncols, j->rows);
    size_t r = ZSTD_compressCCtx(cctx, j->stored, j->stored_cap, filtered, raw_size, level);
    j->error_name = ZSTD_isError(r) ? ZSTD_getErrorName(r) : NULL;
    j->stored_size = ZSTD_isError(r) ? 0 : r;
}

// Chunks of a job are laid out column-major with the job's row count, which
// for a partial last chunk is smaller than chunk_rows: compact it first.
static void job_compact(job *j, uint32_t ncols, uint32_t naux, uint32_t chunk_rows) {
    if (j->rows == chunk_rows) return;
    for (uint32_t c = 1; c < ncols; c++) memmove(j->raw + c * j->rows, j->raw + (size_t)c * chunk_rows, j->rows * 4);
    for (uint32_t a = 1; a < naux; a++) memmove(j->aux + a * j->rows, j->aux + (size_t)a * chunk_rows, j->rows * 8);
    for (uint32_t c = 1; j->imp && c < ncols; c++)
        memmove(j->imp + c * j->rows, j->imp + (size_t)c * chunk_rows, j->rows);
}

// Job seq's place in the ring; the anchor moves only while the ring is
// empty (flush_chunk), under mu.
static job *job_at(const sf_pack_writer *w, uint64_t seq) { return &w->jobs[(seq - w->anchor) % w->njobs]; }

static void *worker_main(void *arg) {
    sf_pack_writer *w = arg;
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    uint8_t *filtered = sf_alloc_large(w->filtered_bytes);
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->stop && w->next_take == w->next_seq) pthread_cond_wait(&w->cv, &w->mu);
        if (w->next_take == w->next_seq) break;  // stop requested and nothing queued
        job *j = job_at(w, w->next_take++);
        pthread_mutex_unlock(&w->mu);
        if (cctx && filtered) job_compress(j, cctx, filtered, w->ncols, w->naux, w->level, w->filter);
        else j->error_name = cctx ? "out of memory for a chunk's filtered bytes" : "cannot create a zstd context";
        pthread_mutex_lock(&w->mu);
        j->done = true;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    ZSTD_freeCCtx(cctx);
    free(filtered);
    return NULL;
}

// Starts the disk write of the chunks written since the last call, once
// they are WRITE_BACK_STEP bytes: left to the final fsync, a whole file's
// write-back (a quarter of a GB for a GB of CSV) came after the parsing,
// adding a fifth to pack's time; started as the chunks come, it runs while
// the next ones are parsed. Advice only: where the file system cannot
// (a pipe, a device) nothing is lost, fsync still checks every byte.
#define WRITE_BACK_STEP (8u << 20)
static void write_back(sf_pack_writer *w) {
#ifdef SYNC_FILE_RANGE_WRITE
    if (w->offset - w->written_back < WRITE_BACK_STEP) return;
    (void)sync_file_range(w->fd, (off_t)w->written_back, (off_t)(w->offset - w->written_back), SYNC_FILE_RANGE_WRITE);
    w->written_back = w->offset;
#else
    (void)w;
#endif
}

static void *syncer_main(void *arg) {
    syncer *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->stop && s->asked == s->synced) pthread_cond_wait(&s->cv, &s->mu);
        if (s->asked == s->synced) break;  // stopped, nothing asked
        uint64_t upto = s->asked;
        pthread_mutex_unlock(&s->mu);
        int rc = fdatasync(s->fd);
        pthread_mutex_lock(&s->mu);
        if (rc && !s->err) s->err = errno;
        s->synced = upto;
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

// Asks the syncer for the bytes written so far, once they are sync_step
// more than it was last asked for; started the first time. Only for a
// temporary file (a device or a FIFO is written as it is). A syncer that
// cannot start leaves it all to the final fsync.
static void sync_ahead(sf_pack_writer *w) {
    if (!w->tmp_path || w->sync_off) return;
    syncer *s = w->sync;
    if (!s) {
        if (w->offset < w->sync_step || !(s = calloc(1, sizeof *s))) return;
        s->fd = w->fd;
        pthread_mutex_init(&s->mu, NULL);
        pthread_cond_init(&s->cv, NULL);
        if (sf_thread_start(&s->thread, syncer_main, s)) {
            pthread_mutex_destroy(&s->mu), pthread_cond_destroy(&s->cv);
            free(s);
            w->sync_off = true;
            return;
        }
        w->sync = s;
    } else if (w->offset - s->asked < w->sync_step) {
        return;
    }
    pthread_mutex_lock(&s->mu);
    s->asked = w->offset;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

// Waits for the syncer and stops it: 0, or a sync's errno.
static int syncer_stop(sf_pack_writer *w) {
    syncer *s = w->sync;
    if (!s) return 0;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    int err = s->err;
    pthread_mutex_destroy(&s->mu), pthread_cond_destroy(&s->cv);
    free(s);
    w->sync = NULL;
    return err;
}

void sf_pack_writer_inline(sf_pack_writer *w, bool on) {
    if (!w->nthreads || w->inline_on == on) return;
    if (on && !w->filtered) w->filtered = sf_alloc_large(w->filtered_bytes);  // as the workers' (huge pages)
    if (on && !w->cctx) w->cctx = ZSTD_createCCtx();
    w->inline_on = on && w->filtered && w->cctx;  // else the workers go on
}

// Writes job seq = next_write once it is compressed, and frees its slot.
static int write_next(sf_pack_writer *w, sf_err *e) {
    job *j = job_at(w, w->next_write);
    if (w->nthreads) {
        pthread_mutex_lock(&w->mu);
        while (!j->done) pthread_cond_wait(&w->cv, &w->mu);
        pthread_mutex_unlock(&w->mu);
    }
    if (j->error_name)
        return sf_err_set(e, SF_EIO, "%s: zstd compression of chunk %llu failed: %s", w->path,
                          (unsigned long long)j->seq, j->error_name);
    for (uint32_t c = 0; c < w->ncols; c++) {
        // A NaN past the first row leaves min and max alone but not the mean.
        if (!isfinite(j->moments[c].min) || !isfinite(j->moments[c].max) || !isfinite(j->moments[c].mean))
            return sf_err_set(e, SF_EINVAL, "%s: chunk %llu: column \"%s\" holds a NaN or infinity", w->path,
                              (unsigned long long)j->seq, w->col_names[c]);
        sf_moments_merge(&w->moments[c], &j->moments[c]);
        if (w->has_imputed) w->imputed[c] += j->imp_count[c];
    }
    if (j->placed && j->placed_offset != w->offset)
        return sf_err_set(e, SF_EINVAL, "%s: chunk %llu was placed at byte %llu, the writer is at byte %llu", w->path,
                          (unsigned long long)j->seq, (unsigned long long)j->placed_offset,
                          (unsigned long long)w->offset);
    int rc = j->placed ? 0 : write_all(w, j->stored, j->stored_size, w->offset, e);
    if (rc) return rc;
    if (w->index_len == w->index_cap) {
        size_t cap = w->index_cap ? 2 * w->index_cap : 64;
        uint8_t *p = realloc(w->index, cap * SF_INDEX_ENTRY);
        if (p) w->index = p;
        int64_t *s = p ? realloc(w->chunk_steps, cap * sizeof *s) : NULL;
        if (!s) return sf_err_set(e, SF_ENOMEM, "%s: out of memory for the chunk index", w->path);
        w->chunk_steps = s;
        w->index_cap = cap;
    }
    w->chunk_steps[w->index_len] = j->max_step;
    uint8_t *ent = w->index + w->index_len++ * SF_INDEX_ENTRY;
    sf_put_u64(ent, w->offset);
    sf_put_u32(ent + 8, (uint32_t)j->stored_size);
    sf_put_u32(ent + 12, j->placed ? j->placed_crc : sf_crc32c(0, j->stored, j->stored_size));
    w->offset = sf_align_up(w->offset + j->stored_size, SF_PACK_ALIGN);
    write_back(w);
    sync_ahead(w);
    j->done = false;
    j->placed = false;
    w->next_write++;
    return 0;
}

// Hands the chunk being filled to the compressors and makes the next slot
// ready for filling, writing finished chunks to free it.
static int flush_chunk(sf_pack_writer *w, sf_err *e) {
    if (w->fill == 0) return 0;
    job *j = job_at(w, w->next_seq);
    if (j->placed && w->fill != w->chunk_rows)
        return sf_err_set(e, SF_EINVAL, "%s: a placed chunk got %zu rows, not %u", w->path, w->fill, w->chunk_rows);
    j->rows = w->fill;
    j->seq = w->next_seq;
    job_compact(j, w->ncols, w->naux, w->chunk_rows);
    w->fill = 0;
    if (w->nthreads) {
        pthread_mutex_lock(&w->mu);
        // Inline, the job is this thread's unless workers have some to take
        // first (they take in order).
        bool mine = w->inline_on && w->next_take == w->next_seq;
        w->next_take += mine;
        w->next_seq++;
        if (!mine) pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        if (mine) {
            job_compress(j, w->cctx, w->filtered, w->ncols, w->naux, w->level, w->filter);
            pthread_mutex_lock(&w->mu);
            j->done = true;
            pthread_mutex_unlock(&w->mu);
        }
    } else {
        job_compress(j, w->cctx, w->filtered, w->ncols, w->naux, w->level, w->filter);
        j->done = true;
        w->next_seq++;
    }
    // Inline, each chunk is written once compressed, and the ring, empty
    // again, starts over at its first job: one job's buffers in use, as
    // without workers, not every job's in turn (each page of which cost a
    // fault when first touched: a third of the faults of a 100 MB CSV's
    // pack with two threads).
    uint64_t ahead = w->inline_on ? 1 : w->njobs;
    while (w->next_seq - w->next_write >= ahead) {
        int rc = write_next(w, e);
        if (rc) return rc;
    }
    if (w->inline_on) {
        pthread_mutex_lock(&w->mu);
        w->anchor = w->next_seq;  // next_write == next_take == next_seq: no job in the ring
        pthread_mutex_unlock(&w->mu);
    }
    return 0;
}

static void free_writer(sf_pack_writer *w) {
    (void)syncer_stop(w);  // a failure's, already reported
    if (w->threads) {
        pthread_mutex_lock(&w->mu);
        w->stop = true;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        for (int i = 0; i < w->nthreads; i++) pthread_join(w->threads[i], NULL);
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        free(w->threads);
    }
    for (size_t i = 0; w->jobs && i < w->njobs; i++) {
        free(w->jobs[i].raw);
        free(w->jobs[i].aux);
        free(w->jobs[i].imp);
        free(w->jobs[i].imp_count);
        free(w->jobs[i].stored);
        free(w->jobs[i].moments);
    }
    free(w->jobs);
    ZSTD_freeCCtx(w->cctx);
    for (size_t i = 0; i < w->nseries; i++) free(w->series[i].name);
    free(w->series);
    for (uint32_t k = 0; k < w->ncat; k++) {
        for (uint32_t i = 0; w->cat_values && w->cat_values[k] && i < w->cat_n[k]; i++) free(w->cat_values[k][i]);
        if (w->cat_values) free(w->cat_values[k]);
    }
    free(w->cat_values), free(w->cat_n), free(w->cat_cols);
    free(w->filtered);
    free(w->index);
    free(w->chunk_steps);
    free(w->moments);
    free(w->imputed);
    if (w->fd >= 0) close(w->fd);
    free(w->path);
    free(w->tmp_path);
    free(w);
}

void sf_pack_writer_abort(sf_pack_writer *w) {
    if (!w) return;
    if (w->fd >= 0 && w->tmp_path) unlink(w->tmp_path);
    if (w->fd >= 0 && w->empty_on_abort) (void)ftruncate(w->fd, 0);
    free_writer(w);
}

static int write_header(sf_pack_writer *w, const char *series_column, sf_err *e) {
    size_t n = SF_HEADER_FIXED + 2 + strlen(series_column) + 4 + (w->has_time ? 2 + strlen(w->time_column) + 4 : 0) +
               (w->ncat ? 4 + 4 * (size_t)w->ncat : 0);
    for (uint32_t c = 0; c < w->ncols; c++) n += 2 + strlen(w->col_names[c]);
    if (n > SF_MAX_HEADER) return sf_err_set(e, SF_EINVAL, "%s: column names too long for the header", w->path);
    uint64_t data_offset = sf_align_up(n, SF_PACK_ALIGN);
    uint8_t *h = calloc(1, data_offset);
    if (!h) return sf_err_set(e, SF_ENOMEM, "%s: out of memory", w->path);
    memcpy(h, SF_MAGIC_HEADER, 8);
    sf_put_u32(h + 8, w->version);
    sf_put_u32(h + 12, (uint32_t)n);
    sf_put_u32(h + 16, w->ncols);
    sf_put_u32(h + 20, w->chunk_rows);
    sf_put_u32(h + 24, (uint32_t)w->filter);
    sf_put_u32(h + 28, (uint32_t)w->level);
    sf_put_u32(h + 32, (w->has_time ? SF_FLAG_TIME : 0) | (w->has_lines ? SF_FLAG_LINES : 0) |
                           (w->ncat ? SF_FLAG_CATEGORIES : 0) |
                           (w->has_imputed ? SF_FLAG_IMPUTED : 0) |
                           (w->nsources ? SF_FLAG_SOURCES : 0));  // reserved stays 0
    uint8_t *p = h + SF_HEADER_FIXED;
    for (uint32_t c = 0; c <= w->ncols + w->has_time; c++) {
        const char *s = c < w->ncols ? w->col_names[c] : c == w->ncols ? series_column : w->time_column;
        size_t len = strlen(s);
        sf_put_u16(p, (uint16_t)len);
        memcpy(p + 2, s, len);
        p += 2 + len;
    }
    if (w->has_time) sf_put_u32(p, (uint32_t)w->time_kind), p += 4;
    if (w->ncat) {
        sf_put_u32(p, w->ncat), p += 4;
        for (uint32_t k = 0; k < w->ncat; k++) sf_put_u32(p, w->cat_cols[k]), p += 4;
    }
    sf_put_u32(p, sf_crc32c(0, h, n - 4));
    int rc = write_all(w, h, data_offset, 0, e);
    free(h);
    w->offset = w->data_offset = data_offset;
    return rc;
}

int sf_pack_writer_open(sf_pack_writer **out, const char *path, const sf_pack_writer_opts *o, sf_err *e) {
    *out = NULL;
    if (o->ncols == 0 || o->ncols > SF_PACK_MAX_COLS)
        return sf_err_set(e, SF_EINVAL, "%s: %u columns; expected 1 to %u", path, o->ncols, SF_PACK_MAX_COLS);
    if ((unsigned)o->filter >= SF_FILTER_COUNT)
        return sf_err_set(e, SF_EINVAL, "%s: unknown filter %d", path, o->filter);
    if (o->level < ZSTD_minCLevel() || o->level > ZSTD_maxCLevel())
        return sf_err_set(e, SF_EINVAL, "%s: zstd level %d; expected %d to %d", path, o->level, ZSTD_minCLevel(),
                          ZSTD_maxCLevel());
    const char *series_column = o->series_column ? o->series_column : "";
    if (strlen(series_column) > SF_PACK_MAX_NAME)
        return sf_err_set(e, SF_EINVAL, "%s: series column name too long", path);
    bool has_time = o->time_column != NULL;
    if (has_time && (!o->time_column[0] || strlen(o->time_column) > SF_PACK_MAX_NAME ||
                     o->time_kind <= SF_TIME_NONE || o->time_kind > SF_TIME_EPOCH_NS))
        return sf_err_set(e, SF_EINVAL, "%s: a time column needs a name of 1 to %u bytes and a kind", path,
                          SF_PACK_MAX_NAME);
    if (o->nsources && (!o->lines || o->nsources > SF_MAX_SOURCES))
        return sf_err_set(e, SF_EINVAL, "%s: %u sources; expected lines and at most %u", path, o->nsources,
                          SF_MAX_SOURCES);
    for (uint32_t i = 0; i < o->nsources; i++)
        if (strlen(o->sources[i]) > SF_PACK_MAX_NAME)
            return sf_err_set(e, SF_EINVAL, "%s: source %u: a name longer than %u bytes", path, i + 1, SF_PACK_MAX_NAME);
    for (uint32_t c = 0; c < o->ncols; c++) {
        size_t len = strlen(o->col_names[c]);
        if (len == 0 || len > SF_PACK_MAX_NAME)
            return sf_err_set(e, SF_EINVAL, "%s: column %u: name must have 1 to %u bytes", path, c + 1,
                              SF_PACK_MAX_NAME);
    }
    uint64_t chunk_rows = o->chunk_rows ? o->chunk_rows : SF_PACK_DEFAULT_CHUNK_BYTES / (4u * o->ncols);
    if (chunk_rows == 0) chunk_rows = 1;
    // What a reader accepts: the floats with the times, lines and imputed bits beside them.
    if (sf_chunk_raw_bytes(chunk_rows, o->ncols, (o->time_column != NULL) + o->lines, o->imputed) > SF_MAX_CHUNK_RAW)
        return sf_err_set(e, SF_EUSAGE, "%s: chunks of %llu rows x %u columns (and each row's time and line) exceed "
                          "%u MiB (hint: a smaller --chunk-rows)", path,
                          (unsigned long long)chunk_rows, o->ncols, SF_MAX_CHUNK_RAW >> 20);

    sf_pack_writer *w = calloc(1, sizeof *w);
    if (!w) return sf_err_set(e, SF_ENOMEM, "out of memory");
    w->fd = -1;
    w->ncols = o->ncols;
    w->chunk_rows = (uint32_t)chunk_rows;
    w->level = o->level;
    w->filter = o->filter;
    w->col_names = o->col_names;
    w->has_time = has_time, w->has_lines = o->lines, w->naux = has_time + o->lines;
    w->time_column = o->time_column, w->time_kind = has_time ? o->time_kind : SF_TIME_NONE;
    w->ncat = o->ncategorical;
    w->has_imputed = o->imputed;
    w->sources = o->sources, w->nsources = o->nsources;
    // A file without times, lines, categories or imputed values stays readable by version-1 readers.
    w->version = w->naux || w->ncat || w->has_imputed ? 2 : 1;
    if (w->ncat) {
        w->cat_cols = malloc(w->ncat * sizeof *w->cat_cols);
        w->cat_values = calloc(w->ncat, sizeof *w->cat_values);
        w->cat_n = calloc(w->ncat, sizeof *w->cat_n);
        if (!w->cat_cols || !w->cat_values || !w->cat_n) goto nomem;
        for (uint32_t k = 0; k < w->ncat; k++) {
            w->cat_cols[k] = o->categorical[k];
            if (o->categorical[k] >= o->ncols || (k && o->categorical[k] <= o->categorical[k - 1])) {
                free_writer(w);
                return sf_err_set(e, SF_EINVAL, "%s: categorical columns must be distinct columns, ascending", path);
            }
        }
    }
    w->path = strdup(path);
    const char *step = getenv("SEQFEED_TEST_SYNC_STEP");  // the syncer's paths in small files
    w->sync_step = step && *step ? strtoull(step, NULL, 10) : SYNC_STEP;
    w->nthreads = o->threads > 1 ? o->threads : 0;
    w->njobs = w->nthreads ? 2 * (size_t)w->nthreads : 1;
    w->jobs = calloc(w->njobs, sizeof *w->jobs);
    w->moments = calloc(o->ncols, sizeof *w->moments);
    w->imputed = w->has_imputed ? calloc(o->ncols, sizeof *w->imputed) : NULL;
    if (!w->path || !w->jobs || !w->moments || (w->has_imputed && !w->imputed)) goto nomem;
    size_t raw = chunk_rows * o->ncols * 4;
    size_t all = (size_t)sf_chunk_raw_bytes(chunk_rows, o->ncols, w->naux, w->has_imputed);
    w->filtered_bytes = all;
    if (!w->nthreads && !(w->filtered = sf_alloc_large(all))) goto nomem;
    for (size_t i = 0; i < w->njobs; i++) {
        job *j = &w->jobs[i];
        j->raw = sf_alloc_large(raw);
        j->aux = w->naux ? sf_alloc_large(chunk_rows * w->naux * 8) : NULL;
        j->imp = w->has_imputed ? malloc(chunk_rows * o->ncols) : NULL;
        j->imp_count = w->has_imputed ? malloc(o->ncols * sizeof *j->imp_count) : NULL;
        j->stored_cap = ZSTD_compressBound(all);
        j->stored = malloc(j->stored_cap);
        j->moments = calloc(o->ncols, sizeof *j->moments);
        if (!j->raw || (w->naux && !j->aux) || (w->has_imputed && (!j->imp || !j->imp_count)) ||
            !j->stored || !j->moments)
            goto nomem;
    }
    if (!w->nthreads && !(w->cctx = ZSTD_createCCtx())) goto nomem;

    // The compression threads start before the temporary file exists: from
    // its creation to the caller's knowing its name (to remove it on a
    // signal) as little as can be.
    if (w->nthreads) {
        w->threads = calloc((size_t)w->nthreads, sizeof *w->threads);
        if (!w->threads) goto nomem;
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->cv, NULL);
        for (int i = 0; i < w->nthreads; i++) {
            if (sf_thread_start(&w->threads[i], worker_main, w)) {
                w->nthreads = i;
                free_writer(w);
                return sf_err_set(e, SF_ENOMEM, "%s: cannot start compression threads", path);
            }
        }
    }
    // The header is rewritten at the end, so the output must take writes at
    // offsets: not a FIFO (whose open would wait for a reader), nor a pipe.
    struct stat st;
    if (stat(path, &st) == 0 && S_ISFIFO(st.st_mode)) {
        free_writer(w);
        return sf_err_set(e, SF_EUSAGE, "%s is a FIFO: an .sfpack is written at offsets, so it cannot go to a pipe "
                          "or a FIFO (write it to a file)", path);
    }
    int fd = sf_temp_create(path, &w->tmp_path, e);
    if (fd < 0) {
        free_writer(w);
        return fd;
    }
    w->fd = fd;
    off_t at = w->tmp_path ? 0 : lseek(fd, 0, SEEK_CUR);
    if (at < 0) {
        int err = errno;
        free_writer(w);
        return sf_err_errno(e, SF_EUSAGE, err, "%s: an .sfpack is written at offsets, so it cannot go to a pipe or a "
                            "FIFO (write it to a file)", path);
    }
    // Stdout a file (-o - > FILE): written at offsets from byte 0, so only
    // an empty one, opened neither at another byte (another program's
    // output before it) nor for appending (>>, where every write goes to
    // the end); on failure it is emptied again (sf_pack_writer_abort).
    if (!w->tmp_path && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        if (st.st_size || at || fcntl(fd, F_GETFL) & O_APPEND) {
            free_writer(w);
            return sf_err_set(e, SF_EUSAGE, "%s: stdout is a file %s: an .sfpack is written at offsets from its "
                              "start (write it with -o FILE, or to stdout redirected with > into a new file)", path,
                              st.st_size ? "that holds data already"
                              : at       ? "opened past its start"
                                         : "opened for appending (>>)");
        }
        w->empty_on_abort = true;
    }
    int rc = write_header(w, series_column, e);
    if (rc) {
        sf_pack_writer_abort(w);
        return rc;
    }
    *out = w;
    return 0;
nomem:
    sf_pack_writer_abort(w);
    return sf_err_set(e, SF_ENOMEM, "%s: out of memory for chunk buffers", path);
}

const char *sf_pack_writer_temp_path(const sf_pack_writer *w) { return w->tmp_path; }
int sf_pack_writer_fd(const sf_pack_writer *w) { return w->fd; }
uint64_t sf_pack_writer_data_offset(const sf_pack_writer *w) { return w->data_offset; }

int sf_pack_writer_place(sf_pack_writer *w, uint64_t offset, uint32_t stored_size, uint32_t crc, sf_err *e) {
    if (w->fill)
        return sf_err_set(e, SF_EINVAL, "%s: a chunk is placed where one starts, not after %zu rows", w->path, w->fill);
    job *j = job_at(w, w->next_seq);
    j->placed = true;
    j->placed_offset = offset;
    j->placed_crc = crc;
    j->stored_size = stored_size;
    return 0;
}
uint64_t sf_pack_writer_nrows(const sf_pack_writer *w) { return w->nrows; }
uint64_t sf_pack_writer_bytes(const sf_pack_writer *w) { return w->offset; }

int sf_pack_writer_series(sf_pack_writer *w, const char *name, size_t len, sf_err *e) {
    if (len > SF_PACK_MAX_NAME) return sf_err_set(e, SF_EINVAL, "%s: series name longer than %u bytes", w->path,
                                                  SF_PACK_MAX_NAME);
    char *copy = malloc(len + 1);
    if (!copy) return sf_err_set(e, SF_ENOMEM, "out of memory");
    memcpy(copy, name, len);
    copy[len] = 0;
    if (w->nseries && w->series[w->nseries - 1].rows == 0) {
        free(w->series[w->nseries - 1].name);
        w->nseries--;
    }
    if (w->nseries == w->series_cap) {
        size_t cap = w->series_cap ? 2 * w->series_cap : 16;
        series_entry *p = realloc(w->series, cap * sizeof *p);
        if (!p) {
            free(copy);
            return sf_err_set(e, SF_ENOMEM, "out of memory for the series table");
        }
        w->series = p;
        w->series_cap = cap;
    }
    w->series[w->nseries++] = (series_entry){w->nrows, 0, copy, len, 0, 0};
    return 0;
}

int sf_pack_writer_category(sf_pack_writer *w, uint32_t k, const char *const *values, uint32_t n, sf_err *e) {
    if (k >= w->ncat || n > SF_PACK_MAX_CATEGORY || w->cat_values[k])
        return sf_err_set(e, SF_EINVAL, "%s: category %u of %u given twice, or with %u values (at most %u)", w->path,
                          k, w->ncat, n, SF_PACK_MAX_CATEGORY);
    char **v = calloc(n ? n : 1, sizeof *v);
    if (!v) return sf_err_set(e, SF_ENOMEM, "out of memory");
    w->cat_values[k] = v;
    const char *name = w->col_names[w->cat_cols[k]];
    size_t quotes, bytes = sf_list_item_bytes(name, strlen(name), &quotes);
    for (uint32_t i = 0; i < n; i++) {
        size_t q;
        bytes += sf_list_item_bytes(values[i], strlen(values[i]), &q), quotes += q;
    }
    size_t list = sf_list_group_bytes(n + 1, bytes, quotes);
    if (list > SF_PACK_MAX_CATEGORY_LIST)
        return sf_err_set(e, SF_EINVAL, "%s: categorical column \"%s\" takes %zu bytes as a checkpoint lists its name "
                          "and values, more than the %u a checkpoint keeps for them", w->path, name, list,
                          SF_PACK_MAX_CATEGORY_LIST);
    for (uint32_t i = 0; i < n; i++) {
        if (strlen(values[i]) > SF_PACK_MAX_CATEGORY_VALUE)
            return sf_err_set(e, SF_EINVAL, "%s: category %u's value %u is %zu bytes long, more than the %u a category "
                              "value may have", w->path, k, i, strlen(values[i]), SF_PACK_MAX_CATEGORY_VALUE);
        if (!(v[i] = strdup(values[i]))) return sf_err_set(e, SF_ENOMEM, "out of memory");
        w->cat_n[k] = i + 1;
    }
    return 0;
}

void sf_pack_writer_time_parts(sf_pack_writer *w, unsigned parts) {
    w->time_parts = sf_time_parts_join(w->time_parts, parts);
}

// The typical step: the most common of the sample (the smallest of equals).
static void decide_step(sf_pack_writer *w) {
    uint32_t best = 0;
    for (uint32_t k = 1; k < w->step_kinds; k++)
        if (w->step_count[k] > w->step_count[best] ||
            (w->step_count[k] == w->step_count[best] && w->step_value[k] < w->step_value[best]))
            best = k;
    w->step = w->step_kinds ? w->step_value[best] : 0;
    for (uint32_t k = 0; k < w->step_kinds; k++)
        if (w->step_value[k] > w->step) w->gaps += w->step_count[k];
}

static void count_step(sf_pack_writer *w, int64_t step) {
    if (w->steps_seen++ >= STEP_SAMPLE) {
        w->gaps += step > w->step;
        return;
    }
    uint32_t k = 0;
    while (k < w->step_kinds && w->step_value[k] != step) k++;
    if (k == w->step_kinds && k < STEP_KINDS) w->step_value[w->step_kinds++] = step, w->step_count[k] = 0;
    if (k < w->step_kinds) w->step_count[k]++;
    else w->gaps++;  // a rare step the table has no room for: far from typical
    if (w->steps_seen == STEP_SAMPLE) decide_step(w);
}

// The times of `take` rows going into job j at w->fill, of series s: their
// order checked and their steps counted. Once the typical step is decided
// (STEP_SAMPLE steps), a loop with nothing but locals: it ran once a row.
static int add_times(sf_pack_writer *w, job *j, series_entry *s, const int64_t *time, size_t take, sf_err *e) {
    int64_t *aux = j->aux + w->fill;
    size_t r = 0;
    for (; r < take && (!(s->rows + r) || w->steps_seen < STEP_SAMPLE); r++) {
        if (s->rows + r) {
            if (time[r] < s->last_time) break;  // said below
            int64_t step = sf_time_diff(s->last_time, time[r]);
            if (step > j->max_step) j->max_step = step;
            count_step(w, step);
        } else {
            s->first_time = time[r];
        }
        s->last_time = time[r];
        aux[r] = time[r];
    }
    int64_t last = s->last_time, most = j->max_step;
    const int64_t typical = w->step;
    uint64_t gaps = 0;
    size_t from = r;
    for (; r < take && time[r] >= last; r++) {
        int64_t step = sf_time_diff(last, time[r]);
        most = step > most ? step : most;
        gaps += step > typical;
        aux[r] = last = time[r];
    }
    w->steps_seen += r - from, w->gaps += gaps;
    j->max_step = most, s->last_time = last;
    if (r < take)
        return sf_err_set(e, SF_EINVAL, "%s: row %llu: time %lld is before the row before it (%lld) in the same "
                          "series", w->path, (unsigned long long)(w->nrows + r), (long long)time[r], (long long)last);
    return 0;
}

int sf_pack_writer_rows(sf_pack_writer *w, const float *rows, size_t n, sf_err *e) {
    return sf_pack_writer_rows_imputed(w, rows, NULL, NULL, NULL, n, e);
}

int sf_pack_writer_rows_at(sf_pack_writer *w, const float *rows, const int64_t *time, const int64_t *line, size_t n,
                           sf_err *e) {
    return sf_pack_writer_rows_imputed(w, rows, time, line, NULL, n, e);
}

int sf_pack_writer_rows_imputed(sf_pack_writer *w, const float *rows, const int64_t *time, const int64_t *line,
                                const uint8_t *imputed, size_t n, sf_err *e) {
    if (imputed && !w->has_imputed)
        return sf_err_set(e, SF_EINVAL, "%s: rows with imputed values, the writer was opened without them", w->path);
    if (!time != !w->has_time || !line != !w->has_lines)
        return sf_err_set(e, SF_EINVAL, "%s: rows %s times and %s lines, the writer was opened %s a time column and "
                          "%s lines", w->path, time ? "with" : "without", line ? "with" : "without",
                          w->has_time ? "with" : "without", w->has_lines ? "with" : "without");
    if (w->nseries == 0) {
        int rc = sf_pack_writer_series(w, "", 0, e);
        if (rc) return rc;
    }
    uint32_t nc = w->ncols;
    series_entry *s = &w->series[w->nseries - 1];
    while (n) {
        job *j = job_at(w, w->next_seq);
        size_t take = w->chunk_rows - w->fill;
        if (take > n) take = n;
        if (w->fill == 0) j->max_step = 0;
        // Column by column: each column's stores run on, and one column is one copy.
        if (nc == 1) memcpy(j->raw + w->fill, rows, take * sizeof(float));
        for (uint32_t c = 0; nc > 1 && c < nc; c++) {
            float *col = j->raw + (size_t)c * w->chunk_rows + w->fill;
            for (size_t r = 0; r < take; r++) col[r] = rows[r * nc + c];
        }
        for (size_t r = 0; j->imp && r < take; r++)
            for (uint32_t c = 0; c < nc; c++)
                j->imp[(size_t)c * w->chunk_rows + w->fill + r] = imputed && imputed[r * nc + c] ? 1 : 0;
        if (time) {
            int rc = add_times(w, j, s, time, take, e);
            if (rc) return rc;
        }
        if (line) memcpy(j->aux + (size_t)w->has_time * w->chunk_rows + w->fill, line, take * sizeof(int64_t));
        w->fill += take;
        w->nrows += take;
        s->rows += take;
        rows += take * nc;
        if (imputed) imputed += take * nc;
        if (time) time += take;
        if (line) line += take;
        n -= take;
        if (w->fill == w->chunk_rows) {
            int rc = flush_chunk(w, e);
            if (rc) return rc;
        }
    }
    return 0;
}

static int write_trailer(sf_pack_writer *w, sf_err *e) {
    size_t names = 0;
    for (size_t i = 0; i < w->nseries; i++) names += 2 + w->series[i].len;
    for (uint32_t k = 0; k < w->ncat; k++) {
        if (!w->cat_values[k]) return sf_err_set(e, SF_EINVAL, "%s: categorical column %u has no values", w->path, k);
        names += 4;
        for (uint32_t i = 0; i < w->cat_n[k]; i++) names += 2 + strlen(w->cat_values[k][i]);
    }
    size_t n = SF_TRAILER_FIXED + w->ncols * SF_STATS_SIZE + w->index_len * SF_INDEX_ENTRY +
               w->nseries * SF_SERIES_ENTRY + names + 4 +
               (w->has_time ? SF_TIME_FIXED + w->nseries * 16 + w->index_len * 8 : 0) +
               (w->has_imputed ? (size_t)w->ncols * 8 : 0);
    for (uint32_t i = 0; i < w->nsources; i++) n += 2 + strlen(w->sources[i]);
    n += w->nsources ? 4 : 0;
    uint8_t *t = malloc(n + SF_FOOTER_SIZE);
    if (!t) return sf_err_set(e, SF_ENOMEM, "%s: out of memory for the trailer", w->path);
    memcpy(t, SF_MAGIC_TRAILER, 8);
    sf_put_u64(t + 8, w->nrows);
    sf_put_u64(t + 16, w->index_len);
    sf_put_u64(t + 24, w->nseries);
    uint8_t *p = t + SF_TRAILER_FIXED;
    for (uint32_t c = 0; c < w->ncols; c++) {
        sf_col_stats s;
        sf_moments_finish(&s, &w->moments[c]);
        double v[4] = {s.min, s.max, s.mean, s.std};
        for (int k = 0; k < 4; k++, p += 8) {
            uint64_t u;
            memcpy(&u, &v[k], 8);
            sf_put_u64(p, u);
        }
    }
    memcpy(p, w->index, w->index_len * SF_INDEX_ENTRY);
    p += w->index_len * SF_INDEX_ENTRY;
    for (size_t i = 0; i < w->nseries; i++, p += SF_SERIES_ENTRY) {
        sf_put_u64(p, w->series[i].first_row);
        sf_put_u64(p + 8, w->series[i].rows);
    }
    for (size_t i = 0; i < w->nseries; i++) {
        sf_put_u16(p, (uint16_t)w->series[i].len);
        memcpy(p + 2, w->series[i].name, w->series[i].len);
        p += 2 + w->series[i].len;
    }
    if (w->has_time) {
        if (w->steps_seen < STEP_SAMPLE) decide_step(w);
        sf_put_u64(p, (uint64_t)w->step);
        sf_put_u64(p + 8, w->gaps);
        sf_put_u32(p + 16, w->time_parts);
        sf_put_u32(p + 20, 0);
        p += SF_TIME_FIXED;
        for (size_t i = 0; i < w->nseries; i++, p += 16) {
            sf_put_u64(p, (uint64_t)w->series[i].first_time);
            sf_put_u64(p + 8, (uint64_t)w->series[i].last_time);
        }
        for (size_t i = 0; i < w->index_len; i++, p += 8) sf_put_u64(p, (uint64_t)w->chunk_steps[i]);
    }
    for (uint32_t k = 0; k < w->ncat; k++) {
        sf_put_u32(p, w->cat_n[k]), p += 4;
        for (uint32_t i = 0; i < w->cat_n[k]; i++) {
            size_t len = strlen(w->cat_values[k][i]);
            sf_put_u16(p, (uint16_t)len);
            memcpy(p + 2, w->cat_values[k][i], len);
            p += 2 + len;
        }
    }
    for (uint32_t c = 0; w->has_imputed && c < w->ncols; c++, p += 8) sf_put_u64(p, w->imputed[c]);
    if (w->nsources) sf_put_u32(p, w->nsources), p += 4;
    for (uint32_t i = 0; i < w->nsources; i++) {
        size_t len = strlen(w->sources[i]);
        sf_put_u16(p, (uint16_t)len);
        memcpy(p + 2, w->sources[i], len);
        p += 2 + len;
    }
    sf_put_u32(p, sf_crc32c(0, t, n - 4));
    p += 4;
    // The trailer follows the last chunk directly; only chunks need alignment.
    uint64_t trailer_offset = w->index_len ? sf_get_u64(w->index + (w->index_len - 1) * SF_INDEX_ENTRY) +
                                                 sf_get_u32(w->index + (w->index_len - 1) * SF_INDEX_ENTRY + 8)
                                           : w->offset;
    sf_put_u64(p, trailer_offset);
    sf_put_u64(p + 8, n);
    sf_put_u32(p + 16, w->version);
    sf_put_u32(p + 20, sf_crc32c(0, p, 20));
    memcpy(p + 24, SF_MAGIC_FOOTER, 8);
    int rc = write_all(w, t, n + SF_FOOTER_SIZE, trailer_offset, e);
    free(t);
    return rc;
}

// The last chunks written, an empty last series dropped: what both
// finishes do before the trailer.
static int write_rest(sf_pack_writer *w, sf_err *e) {
    if (w->nseries && w->series[w->nseries - 1].rows == 0) free(w->series[--w->nseries].name);
    int rc = flush_chunk(w, e);
    while (!rc && w->next_write < w->next_seq) rc = write_next(w, e);
    return rc;
}

int sf_pack_writer_finish(sf_pack_writer *w, sf_err *e) {
    int rc = write_rest(w, e);
    if (!rc && w->nrows == 0) rc = sf_err_set(e, SF_EINVAL, "%s: no rows to pack", w->path);
    if (!rc) rc = write_trailer(w, e);
    int err = syncer_stop(w);
    if (!rc && err) rc = sf_err_errno(e, SF_EIO, err, "%s: cannot sync its temporary file to the disk", w->path);
    if (!rc) rc = sf_temp_commit(w->fd, w->tmp_path, w->path, e);
    if (rc) {
        sf_pack_writer_abort(w);
        return rc;
    }
    free_writer(w);
    return 0;
}

int sf_pack_writer_finish_fd(sf_pack_writer *w, int *fd, sf_err *e) {
    *fd = -1;
    if (!w->tmp_path) {
        sf_pack_writer_abort(w);
        return sf_err_set(e, SF_EINVAL, "%s: written straight to its target, no temporary file to read back", w->path);
    }
    int rc = write_rest(w, e);
    if (!rc) rc = write_trailer(w, e);
    // Opened for reading before the name goes: from here on only the
    // descriptor keeps the file, which the kernel frees with it.
    if (!rc && (*fd = open(w->tmp_path, O_RDONLY | O_CLOEXEC)) < 0)
        rc = sf_err_errno(e, SF_EIO, errno, "%s: cannot read back its temporary file", w->path);
    sf_pack_writer_abort(w);
    return rc;
}
