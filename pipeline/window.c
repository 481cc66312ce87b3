// The window stage: windows cut out of a block's rows; one lane's epoch,
// single threaded (shard tasks in order, each block loaded once, its windows
// cut into a bounded shuffle pool, batches drawn from the pool); and a
// plan's windows in id order, for prediction and validation.
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"

// A stretch of the current task's windows and where their rows are.
typedef struct {
    uint64_t first, end;
    const sf_block_data *data;
} run;

struct sf_stream {
    const sf_plan *plan;
    const sf_columns *cols;
    sf_stream_opts o;
    sf_block_source src;
    sf_block_loader *loader;  // the source when none is given
    sf_block_data block;
    sf_block_task *tasks;
    int64_t ntasks, task;  // task: the one being cut (ntasks: none left)
    bool loaded;           // the current task's rows are in hand
    run runs[3];           // the current task's windows: its own, then the seams cut with it
    int nruns, at;         // and the run being cut
    uint64_t next_id;      // next window of that run to cut
    // Edge rows kept for seams (plan.c), by the seam's block less b0.
    sf_block_data **edges;
    uint64_t b0, nb;
    sf_block_data seam[2];  // the current task's assembled seams: the previous block's, its own
    // The pool: `pool` slots of one window each; the first `filled` are live.
    float *pool_x, *pool_y;
    uint64_t *pool_id, pool_cap, filled;
    size_t x_len, y_len;  // floats per window
    uint64_t rng, batches_left;
};

__extension__ typedef unsigned __int128 u128;

static uint64_t below(uint64_t *s, uint64_t n) { return (uint64_t)(((u128)sf_splitmix64(s) * n) >> 64); }

static int load_block(void *arg, int64_t k, const sf_block_task *t, const sf_block_data **d, sf_err *e) {
    sf_stream *s = arg;
    (void)k;
    *d = &s->block;
    return sf_block_load(s->loader, t, &s->block, e);
}

int64_t sf_stream_tasks(const sf_stream *s) { return s->ntasks; }

void sf_stream_close(sf_stream *s) {
    if (!s) return;
    if (s->loaded && s->src.put) s->src.put(s->src.arg, s->task);
    for (uint64_t j = 0; s->edges && j < s->nb; j++)
        if (s->edges[j]) sf_block_data_free(s->edges[j]), free(s->edges[j]);
    free(s->edges);
    sf_block_data_free(&s->seam[0]);
    sf_block_data_free(&s->seam[1]);
    sf_block_loader_free(s->loader);
    sf_block_data_free(&s->block);
    free(s->tasks);
    free(s->pool_x);
    free(s->pool_y);
    free(s->pool_id);
    free(s);
}

// Makes d hold rows [lo, hi) (their values still to be copied in).
static int reserve(sf_block_data *d, const sf_columns *c, uint64_t lo, uint64_t hi, sf_err *e) {
    size_t rows = (size_t)(hi - lo);
    if (rows > d->cap_rows) {
        float *f = realloc(d->feat, rows * c->nfeatures * sizeof(float) + 1);
        if (f) d->feat = f;
        float *g = realloc(d->targ, rows * c->ntargets * sizeof(float) + 1);
        if (g) d->targ = g;
        if (!f || !g) return sf_err_set(e, SF_ENOMEM, "out of memory for a seam of %zu rows", rows);
        d->cap_rows = rows;
    }
    d->row_lo = lo, d->row_hi = hi;
    return 0;
}

// Rows [lo, hi) of src into the same rows of dst, which holds them.
static void copy_rows(sf_block_data *dst, const sf_block_data *src, const sf_columns *c, uint64_t lo, uint64_t hi) {
    size_t nf = c->nfeatures, nt = c->ntargets, n = (size_t)(hi - lo);
    memcpy(dst->feat + (lo - dst->row_lo) * nf, src->feat + (lo - src->row_lo) * nf, n * nf * sizeof(float));
    memcpy(dst->targ + (lo - dst->row_lo) * nt, src->targ + (lo - src->row_lo) * nt, n * nt * sizeof(float));
}

// Keeps rows [lo, hi) of d for the seam of block (b0 + j).
static int keep_edge(sf_stream *s, uint64_t j, const sf_block_data *d, uint64_t lo, uint64_t hi, sf_err *e) {
    sf_block_data *edge = calloc(1, sizeof *edge);
    if (!edge || reserve(edge, s->cols, lo, hi, e)) {
        if (edge) sf_block_data_free(edge);
        free(edge);
        return sf_err_set(e, SF_ENOMEM, "out of memory for a block's edge");
    }
    copy_rows(edge, d, s->cols, lo, hi);
    s->edges[j] = edge;
    return 0;
}

// Seam [first, end) of block (b0 + j) into buf: the rows up to split from
// `tail`, the rest from `head`; the kept edge is freed.
static int take_edge(sf_stream *s, uint64_t j, sf_block_data *buf, const sf_block_data *tail,
                     const sf_block_data *head, uint64_t split, uint64_t first, uint64_t end, sf_err *e) {
    uint64_t lo = sf_plan_window_start(s->plan, first), hi = sf_plan_window_start(s->plan, end - 1) +
                                                          sf_window_span(sf_plan_spec(s->plan));
    int rc = reserve(buf, s->cols, lo, hi, e);
    if (!rc) copy_rows(buf, tail, s->cols, lo, split), copy_rows(buf, head, s->cols, split, hi);
    sf_block_data_free(s->edges[j]);
    free(s->edges[j]);
    s->edges[j] = NULL;
    return rc;
}

// The current task's rows d are in hand: its runs, and the edges it keeps
// or takes for seams (plan.c's enum sf_seam).
static int start_task(sf_stream *s, const sf_block_task *t, const sf_block_data *d, sf_err *e) {
    uint64_t j = t->block - s->b0, lo, hi;
    sf_plan_block_rows(s->plan, t->block, &lo, &hi);
    uint64_t span = sf_window_span(sf_plan_spec(s->plan));
    int rc = 0;
    s->nruns = 0, s->at = 0;
    if (t->first_window < t->seam_window) s->runs[s->nruns++] = (run){t->first_window, t->seam_window, d};
    // The previous block's seam, boundary j - 1: this task holds its head.
    uint64_t head_end = t->prev != SF_SEAM_NONE ? sf_plan_window_start(s->plan, t->prev_end - 1) + span : 0;
    if (t->prev == SF_SEAM_KEEP) rc = keep_edge(s, j - 1, d, lo, head_end, e);
    if (t->prev == SF_SEAM_TAKE)
        rc = take_edge(s, j - 1, &s->seam[0], s->edges[j - 1], d, lo, t->prev_first, t->prev_end, e);
    if (!rc && (t->prev == SF_SEAM_TAKE || t->prev == SF_SEAM_READ))
        s->runs[s->nruns++] = (run){t->prev_first, t->prev_end, t->prev == SF_SEAM_TAKE ? &s->seam[0] : d};
    // Its own seam, boundary j: this task holds its tail.
    if (!rc && t->next == SF_SEAM_KEEP) rc = keep_edge(s, j, d, sf_plan_window_start(s->plan, t->seam_window), hi, e);
    if (!rc && t->next == SF_SEAM_TAKE)
        rc = take_edge(s, j, &s->seam[1], d, s->edges[j], hi, t->seam_window, t->end_window, e);
    if (!rc && (t->next == SF_SEAM_TAKE || t->next == SF_SEAM_READ))
        s->runs[s->nruns++] = (run){t->seam_window, t->end_window, t->next == SF_SEAM_TAKE ? &s->seam[1] : d};
    if (s->nruns) s->next_id = s->runs[0].first;
    return rc;
}

int sf_stream_open(sf_stream **out, const sf_pack *p, const sf_plan *plan, const sf_columns *cols, uint32_t replicas,
                   uint32_t r, uint64_t epoch, const sf_stream_opts *o, const sf_block_source *src, sf_err *e) {
    *out = NULL;
    if (o->batch == 0 || replicas == 0 || r >= replicas)
        return sf_err_set(e, SF_EINVAL, "batch %u, replica %u of %u: expected a batch >= 1 and r < replicas", o->batch,
                          r, replicas);
    sf_stream *s = calloc(1, sizeof *s);
    if (!s) return sf_err_set(e, SF_ENOMEM, "out of memory");
    s->plan = plan;
    s->cols = cols;
    s->o = *o;
    s->x_len = sf_window_x_len(sf_plan_spec(plan), cols);
    s->y_len = (size_t)cols->ntargets * sf_window_steps(sf_plan_spec(plan));
    uint64_t total = sf_plan_windows(plan), share = (uint64_t)(((u128)total * (r + 1)) / replicas) -
                                                     (uint64_t)(((u128)total * r) / replicas);
    // The pool never holds more than the shard's windows: a larger one
    // would draw the same batches from memory nothing fills (and a huge
    // --window or --pool on a small file must not allocate for it).
    s->pool_cap = o->pool > 1 ? (o->pool < share ? o->pool : share > 2 ? share : 2) : 1;
    uint64_t nb = sf_plan_blocks(plan);
    s->tasks = malloc((nb ? nb : 1) * sizeof *s->tasks);
    if (src) s->src = *src;
    else s->loader = sf_block_loader_create(p, cols), s->src = (sf_block_source){load_block, NULL, s};
    s->pool_x = malloc(s->pool_cap * s->x_len * sizeof(float));
    s->pool_y = malloc(s->pool_cap * (s->y_len ? s->y_len : 1) * sizeof(float));
    s->pool_id = malloc(s->pool_cap * sizeof *s->pool_id);
    if (!s->tasks || (!src && !s->loader) || !s->pool_x || !s->pool_y || !s->pool_id) {
        sf_stream_close(s);
        return sf_err_set(e, SF_ENOMEM, "out of memory for a pool of %llu windows", (unsigned long long)s->pool_cap);
    }
    s->ntasks = sf_plan_shard(plan, o->seed, epoch, replicas, r, o->max_edges, s->tasks);
    // The shard's blocks are consecutive: an edge slot for each.
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int64_t k = 0; k < s->ntasks; k++) {
        lo = s->tasks[k].block < lo ? s->tasks[k].block : lo;
        hi = s->tasks[k].block > hi ? s->tasks[k].block : hi;
    }
    s->b0 = lo, s->nb = s->ntasks > 0 ? hi - lo + 1 : 0;
    if (s->ntasks < 0 || !(s->edges = calloc(s->nb + 1, sizeof *s->edges))) {
        sf_stream_close(s);
        return sf_err_set(e, SF_ENOMEM, "out of memory for a shard's plan");
    }
    // Each lane its own pool order, from (seed, epoch, shard).
    s->rng = o->seed ^ sf_splitmix64(&(uint64_t){epoch * 0x100000001b3ull + r + 1});
    // Drop-remainder: the smallest share, floor(total / replicas), decides
    // how many full batches every replica gives.
    s->batches_left = o->drop_remainder ? total / replicas / o->batch : (share + o->batch - 1) / o->batch;
    *out = s;
    return 0;
}

// Cuts the next window of the shard into pool slot k. Returns 1 when there
// was none left, or a negative code.
static int cut_next(sf_stream *s, uint64_t k, sf_err *e) {
    for (;;) {
        if (s->loaded && s->at < s->nruns) {
            const run *u = &s->runs[s->at];
            if (s->next_id < u->end) {
                sf_window_cut(s->plan, s->cols, u->data, s->next_id, s->pool_x + k * s->x_len,
                              s->pool_y + k * s->y_len);
                s->pool_id[k] = s->next_id++;
                return 0;
            }
            if (++s->at < s->nruns) s->next_id = s->runs[s->at].first;
            continue;
        }
        if (s->loaded) {
            if (s->src.put) s->src.put(s->src.arg, s->task);
            s->loaded = false;
            s->task++;
        }
        if (s->task >= s->ntasks) return 1;
        const sf_block_data *d;
        int rc = s->src.get(s->src.arg, s->task, &s->tasks[s->task], &d, e);
        if (rc) return rc;
        s->loaded = true;
        if ((rc = start_task(s, &s->tasks[s->task], d, e))) return rc;
    }
}

int64_t sf_stream_next(sf_stream *s, float *x, float *y, uint64_t *ids, sf_err *e) {
    if (s->batches_left == 0) return 0;
    // Fill the pool before the first draw.
    while (s->filled < s->pool_cap) {
        int rc = cut_next(s, s->filled, e);
        if (rc < 0) return rc;
        if (rc == 1) break;
        s->filled++;
    }
    uint32_t n = 0;
    while (n < s->o.batch && s->filled > 0) {
        uint64_t k = s->pool_cap > 1 ? below(&s->rng, s->filled) : 0;
        memcpy(x + n * s->x_len, s->pool_x + k * s->x_len, s->x_len * sizeof(float));
        memcpy(y + n * s->y_len, s->pool_y + k * s->y_len, s->y_len * sizeof(float));
        if (ids) ids[n] = s->pool_id[k];
        n++;
        // The freed slot takes the next window, or the pool's last one.
        int rc = cut_next(s, k, e);
        if (rc < 0) return rc;
        if (rc == 1 && k != --s->filled) {
            memcpy(s->pool_x + k * s->x_len, s->pool_x + s->filled * s->x_len, s->x_len * sizeof(float));
            memcpy(s->pool_y + k * s->y_len, s->pool_y + s->filled * s->y_len, s->y_len * sizeof(float));
            s->pool_id[k] = s->pool_id[s->filled];
        }
    }
    s->batches_left--;
    return n;
}

size_t sf_window_x_len(const sf_window_spec *w, const sf_columns *cols) {
    return (size_t)w->length * cols->nfeatures + (size_t)sf_window_steps(w) * cols->nfuture + cols->nonehot;
}

// The series of the file's table that holds row (the last that starts at or before it).
static uint64_t table_series(const sf_columns *c, uint64_t row) {
    uint64_t lo = 0, hi = c->nonehot_table;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (c->onehot_table[mid].first_row <= row) lo = mid;
        else hi = mid;
    }
    return lo;
}

void sf_window_cut(const sf_plan *p, const sf_columns *cols, const sf_block_data *d, uint64_t id, float *x,
                   float *y) {
    const sf_window_spec *w = sf_plan_spec(p);
    size_t nf = cols->nfeatures, at = (size_t)(sf_plan_window_start(p, id) - d->row_lo);
    if (w->sampling_rate == 1) {
        memcpy(x, d->feat + at * nf, (size_t)w->length * nf * sizeof(float));  // consecutive rows
    } else {
        for (uint32_t t = 0; t < w->length; t++)
            memcpy(x + t * nf, d->feat + (at + (size_t)t * w->sampling_rate) * nf, nf * sizeof(float));
    }
    // The steps' target rows are consecutive: one copy for them all.
    size_t nt = cols->ntargets, steps = sf_window_steps(w);
    size_t target = at + (size_t)(w->length - 1) * w->sampling_rate + w->horizon - (steps - 1);
    memcpy(y, d->targ + target * nt, steps * nt * sizeof(float));
    float *future = x + (size_t)w->length * nf;
    for (size_t k = 0; k < steps; k++)
        for (uint32_t j = 0; j < cols->nfuture; j++) *future++ = d->feat[(target + k) * nf + cols->future[j]];
    if (cols->nonehot) {
        memset(future, 0, cols->nonehot * sizeof *future);
        uint64_t last = d->row_lo + at + (size_t)(w->length - 1) * w->sampling_rate;
        future[cols->onehot_code[table_series(cols, last)]] = 1;
    }
    const float *last = x + (size_t)(w->length - 1) * nf;
    for (size_t k = 0; cols->change_from && k < steps * nt; k++) y[k] -= last[cols->change_from[k % nt]];
}

// In id order, block by block: memory is one block and one batch, whatever
// the file's size.
int sf_windows_in_order(const sf_pack *p, const sf_plan *plan, const sf_columns *cols, uint32_t batch,
                        sf_window_fn fn, void *arg, sf_err *e) {
    size_t xl = sf_window_x_len(sf_plan_spec(plan), cols);
    size_t yl = (size_t)cols->ntargets * sf_window_steps(sf_plan_spec(plan));
    sf_block_loader *loader = sf_block_loader_create(p, cols);
    float *x = malloc(batch * xl * sizeof(float) + 1), *y = malloc(batch * yl * sizeof(float) + 1);
    uint64_t *ids = malloc(batch * sizeof *ids);
    sf_block_data d = {0};
    int rc = loader && x && y && ids ? 0 : sf_err_set(e, SF_ENOMEM, "out of memory for batches of %u", batch);
    uint32_t n = 0;
    for (uint64_t b = 0; !rc && b < sf_plan_blocks(plan); b++) {
        sf_block_task t = sf_plan_block(plan, b);
        if (t.first_window == t.end_window) continue;
        if ((rc = sf_block_load(loader, &t, &d, e))) break;
        for (uint64_t id = t.first_window; !rc && id < t.end_window; id++) {
            sf_window_cut(plan, cols, &d, id, x + n * xl, y + (size_t)n * yl);
            ids[n++] = id;
            if (n == batch) rc = fn(arg, x, y, ids, n, e), n = 0;
        }
    }
    if (!rc && n) rc = fn(arg, x, y, ids, n, e);
    sf_block_data_free(&d);
    sf_block_loader_free(loader);
    free(x), free(y), free(ids);
    return rc;
}
