// The threaded pipeline: one reader thread, a pool of decoders, and one
// windower per replica, joined by bounded queues under one mutex.
//
//   reader    picks the next block of the replica with room in its prefetch
//             queue (blocks in each replica's shard order), reads its chunks
//             into free reader buffers (io_uring or pread)
//   decoders  decode a chunk and gather its rows into the block's data;
//             the block is ready when its last chunk is in
//   windower  replica r's epoch stream (shuffle pool, batches) over its
//             ready blocks, into r's staging ring of K slots
//   consumer  sf_pipe_next_batch / sf_pipe_release on the ring
//
// Every queue is bounded (reader buffers, prefetch blocks, ring slots), so
// memory does not depend on the file size. One lock; a condition per kind of
// waiter (reader, decoders, each replica's windower, each consumer), so that
// an event wakes only the threads it concerns: at millions of windows a
// second a single broadcast condition woke every thread for every batch.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"

typedef struct block_job {
    sf_block_task task;
    sf_block_data data;
    uint32_t pending;  // chunks not gathered yet
    struct block_job *next;
} block_job;

typedef struct {
    block_job *job;
    uint64_t chunk, offset;  // first chunk, and the file offset of the buffer's first byte
    uint32_t nchunks, replica;
    double submitted;        // for the trace
} read_job;  // what reader buffer i holds: consecutive chunks of one block

enum { SLOT_FREE, SLOT_READY, SLOT_TAKEN };

typedef struct {
    struct sf_pipe *pipe;
    uint32_t r;
    block_job *head, *tail;  // prefetched blocks, in shard order
    uint32_t queued;
    uint64_t read_epoch;  // the epoch the reader is reading for this replica
    int64_t next_put;  // shard tasks of this epoch the windower is done with
    void **buf;  // per slot: x, then y at p->y_offset
    void **device, **ready;  // per slot, from the stage hooks
    uint64_t **ids;
    uint32_t *count, *state;
    uint64_t *epoch;
    uint32_t stage_r, stage_s0;  // the caller's replica, and this lane's first slot in its ring
    uint32_t fill, take;
    bool finished;
    pthread_t thread;
    bool started;
    pthread_cond_t window_cv, consume_cv;  // its windower; its consumer
    sf_pipe_replica_stats st;
    int track;  // in the trace
} replica;

struct sf_pipe {
    sf_pipe_opts o;
    sf_pack *pack;
    sf_plan *plan;
    sf_columns cols;
    sf_reader *reader;
    pthread_mutex_t mu;
    pthread_cond_t reader_cv, decoder_cv;
    bool stop, reader_done;
    int error;
    sf_err err;
    read_job *reads;    // per reader buffer
    block_job *spare;   // blocks to reuse
    uint32_t per_read;  // chunks per read request at most
    uint32_t *free_bufs, nfree;
    uint32_t *decode_q, dq_head, dq_count;  // reader buffers waiting for a decoder
    replica *reps;                // replicas x lanes internal replicas
    uint32_t replicas, lanes;     // as the caller sees them; p->o.replicas counts lanes
    uint32_t shard_base, shards;  // lane shards of the whole job: ours are shard_base + 0 .. o.replicas - 1
    size_t y_offset, slot_bytes;  // in a staging slot
    uint32_t *turn;               // per replica: the lane to take from next
    uint64_t *epoch;              // per replica: the epoch being handed out
    pthread_t reader_thread, *decoders;
    struct decoder_arg *dargs;
    int reader_track;
    uint32_t ndecoders_started;
    bool reader_started;
    sf_pipe_stats st;
};

static void wake_all(sf_pipe *p) {
    pthread_cond_broadcast(&p->reader_cv);
    pthread_cond_broadcast(&p->decoder_cv);
    for (uint32_t r = 0; p->reps && r < p->o.replicas; r++) {
        pthread_cond_broadcast(&p->reps[r].window_cv);
        pthread_cond_broadcast(&p->reps[r].consume_cv);
    }
}

static void fail(sf_pipe *p, int code, const sf_err *e) {
    if (!p->error) {
        p->error = code;
        p->err = *e;
    }
    p->stop = true;
    wake_all(p);
}

// A stage's test delay (sf_pipe_opts.delay_us): busy time, as slow work is.
static void stall(uint32_t us) {
    if (!us) return;
    double until = sf_now() + us * 1e-6;
    while (sf_now() < until) {
    }
}

// Waits on cv under the pipe's lock and adds the time to *waited.
static void wait_timed(sf_pipe *p, pthread_cond_t *cv, double *waited) {
    double t = sf_now();
    pthread_cond_wait(cv, &p->mu);
    *waited += sf_now() - t;
}

// Blocks are recycled through p->spare: fresh multi-megabyte allocations
// would be page faults in the decoders and munmaps in the windower, jitter
// that reaches the consumers.
static block_job *new_block(sf_pipe *p, replica *rep, const sf_block_task *t, sf_err *e) {
    block_job *b = p->spare;
    size_t rows = (size_t)(t->row_hi - t->row_lo);
    if (b) p->spare = b->next;
    else b = calloc(1, sizeof *b);
    if (b && b->data.cap_rows < rows) {
        sf_block_data_free(&b->data);
        b->data = (sf_block_data){0, 0, malloc(rows * p->cols.nfeatures * sizeof(float) + 1),
                                  malloc(rows * p->cols.ntargets * sizeof(float) + 1), rows};
    }
    if (b) {
        b->task = *t;
        b->next = NULL;
        b->data.row_lo = t->row_lo;
        b->data.row_hi = t->row_hi;
        uint32_t cr = sf_pack_get_info(p->pack)->chunk_rows;
        b->pending = (uint32_t)((t->row_hi - 1) / cr - t->row_lo / cr + 1);
    }
    if (!b || !b->data.feat || !b->data.targ) {
        if (b) sf_block_data_free(&b->data);
        free(b);
        sf_err_set(e, SF_ENOMEM, "out of memory for a block of %zu rows", rows);
        return NULL;
    }
    if (rep->tail) rep->tail->next = b;
    else rep->head = b;
    rep->tail = b;
    rep->queued++;
    return b;
}

// Plans replica r's shard of its next epoch into its task list.
static void plan_epoch(sf_pipe *p, uint32_t r, uint64_t *order, sf_block_task *tasks, int64_t *ntasks) {
    sf_plan_epoch_order(p->plan, p->o.seed, p->reps[r].read_epoch, order);
    *ntasks = sf_plan_shard(p->plan, order, p->shards, p->shard_base + r, tasks);
}

static void *reader_main(void *arg) {
    sf_pipe *p = arg;
    const sf_pack_info *in = sf_pack_get_info(p->pack);
    uint32_t R = p->o.replicas;
    uint64_t nb = sf_plan_blocks(p->plan);
    uint64_t *order = malloc((nb + 1) * sizeof *order);
    // Each replica its own epoch and position: replicas run independently,
    // one may be an epoch ahead of another.
    sf_block_task *tasks = malloc((size_t)R * (nb + 1) * sizeof *tasks);
    int64_t *ntasks = calloc(R, sizeof *ntasks), *next = calloc(R, sizeof *next);
    sf_err e = {0};
    pthread_mutex_lock(&p->mu);
    if (!order || !tasks || !ntasks || !next) fail(p, SF_ENOMEM, &(sf_err){SF_ENOMEM, "out of memory"});
    for (uint32_t r = 0; r < R && !p->stop; r++) plan_epoch(p, r, order, tasks + (size_t)r * (nb + 1), &ntasks[r]);
    block_job *cur = NULL;
    uint64_t chunk = 0, last_chunk = 0;
    uint32_t inflight = 0, turn = 0, cur_replica = 0;
    while (!p->stop) {
        bool left = false;
        for (uint32_t k = 0; k < R && !cur; k++) {  // round robin over replicas with work and room
            uint32_t r = (turn + k) % R;
            replica *rep = &p->reps[r];
            while (rep->read_epoch < p->o.epochs && next[r] >= ntasks[r]) {
                if (++rep->read_epoch < p->o.epochs) plan_epoch(p, r, order, tasks + (size_t)r * (nb + 1), &ntasks[r]);
                next[r] = 0;
            }
            if (rep->read_epoch >= p->o.epochs) continue;
            left = true;
            if (rep->queued >= p->o.prefetch) continue;
            cur = new_block(p, rep, &tasks[(size_t)r * (nb + 1) + next[r]++], &e);
            if (!cur) {
                fail(p, SF_ENOMEM, &e);
                break;
            }
            cur_replica = r;
            chunk = cur->task.row_lo / in->chunk_rows;
            last_chunk = (cur->task.row_hi - 1) / in->chunk_rows;
            turn = r + 1;
        }
        if (cur && p->nfree > 0) {
            // One request for up to block_chunks consecutive chunks: they
            // lie back to back in the file, so fewer, larger reads.
            uint32_t i = p->free_bufs[--p->nfree], n = 0;
            sf_chunk first = sf_pack_chunk_locate(p->pack, chunk);
            while (n < p->per_read && chunk <= last_chunk) chunk++, n++;
            p->reads[i] = (read_job){cur, first.first_row / in->chunk_rows, first.offset, n, cur_replica, sf_now()};
            if (chunk > last_chunk) cur = NULL;
            // Through the padding to the next chunk: contiguous requests.
            size_t len = (size_t)(sf_pack_chunk_span_end(p->pack, chunk - 1) - first.offset);
            inflight++;
            pthread_mutex_unlock(&p->mu);
            double t = sf_now();
            stall(p->o.delay_us[SF_STAGE_READ]);
            int rc = sf_reader_submit(p->reader, i, first.offset, len, i, &e);
            pthread_mutex_lock(&p->mu);
            p->st.read_busy += sf_now() - t;
            p->st.bytes_read += len;
            if (rc) {  // nothing is in flight for this buffer
                inflight--;
                p->free_bufs[p->nfree++] = i;
                fail(p, rc, &e);
            }
            continue;
        }
        if (inflight > 0) {
            pthread_mutex_unlock(&p->mu);
            uint32_t i;
            uint64_t tag;
            double t = sf_now();
            int rc = sf_reader_wait(p->reader, &i, &tag, &e);
            pthread_mutex_lock(&p->mu);
            p->st.read_busy += sf_now() - t;
            inflight--;
            if (rc) {
                fail(p, rc, &e);
                break;
            }
            p->decode_q[(p->dq_head + p->dq_count++) % p->o.io.depth] = i;
            p->st.chunks_read += p->reads[i].nchunks;
            sf_trace_span(p->o.trace, p->reader_track, "read", p->reads[i].submitted, sf_now());
            sf_trace_counter(p->o.trace, "decode queue", sf_now(), p->dq_count);
            pthread_cond_signal(&p->decoder_cv);
            continue;
        }
        if (!cur && !left) break;  // every replica's every epoch is read
        wait_timed(p, &p->reader_cv, &p->st.read_wait);
    }
    // Stopped with reads in flight: let the kernel finish writing into the
    // buffers before anyone frees them.
    pthread_mutex_unlock(&p->mu);
    for (; inflight > 0; inflight--) {  // failed reads complete too
        uint32_t i;
        uint64_t tag;
        sf_reader_wait(p->reader, &i, &tag, &e);
    }
    pthread_mutex_lock(&p->mu);
    p->reader_done = true;
    pthread_cond_broadcast(&p->decoder_cv);
    pthread_mutex_unlock(&p->mu);
    free(order);
    free(tasks);
    free(ntasks);
    free(next);
    return NULL;
}

typedef struct decoder_arg {
    sf_pipe *p;
    int track;
} decoder_arg;

static void *decoder_main(void *arg) {
    sf_pipe *p = ((decoder_arg *)arg)->p;
    int track = ((decoder_arg *)arg)->track;
    const sf_pack_info *in = sf_pack_get_info(p->pack);
    sf_pack_dctx *d = sf_pack_dctx_create();
    float *values = malloc((size_t)in->chunk_rows * in->ncols * sizeof(float));
    sf_err e = {0};
    pthread_mutex_lock(&p->mu);
    if (!d || !values) fail(p, SF_ENOMEM, &(sf_err){SF_ENOMEM, "out of memory for a decoder"});
    for (;;) {
        while (!p->stop && p->dq_count == 0 && !p->reader_done) wait_timed(p, &p->decoder_cv, &p->st.decode_wait);
        if (p->stop || p->dq_count == 0) break;
        uint32_t i = p->decode_q[p->dq_head];
        p->dq_head = (p->dq_head + 1) % p->o.io.depth;
        p->dq_count--;
        read_job job = p->reads[i];
        pthread_mutex_unlock(&p->mu);
        double t = sf_now();
        int rc = 0;
        for (uint32_t k = 0; k < job.nchunks && !rc; k++) {
            sf_chunk c = sf_pack_chunk_locate(p->pack, job.chunk + k);
            const char *stored = (const char *)sf_reader_buffer(p->reader, i) + (c.offset - job.offset);
            stall(p->o.delay_us[SF_STAGE_DECODE]);
            rc = sf_pack_chunk_decode(d, p->pack, job.chunk + k, stored, values, &e);
            if (!rc) sf_block_gather(&job.job->data, &p->cols, &c, values);  // rows no other decoder touches
        }
        double busy = sf_now() - t;
        sf_trace_span(p->o.trace, track, "decode", t, t + busy);
        pthread_mutex_lock(&p->mu);
        p->st.decode_busy += busy;
        p->free_bufs[p->nfree++] = i;
        if (rc) {
            fail(p, rc, &e);
            break;
        }
        p->st.chunks_decoded += job.nchunks;
        pthread_cond_signal(&p->reader_cv);  // a free buffer
        if ((job.job->pending -= job.nchunks) == 0) pthread_cond_signal(&p->reps[job.replica].window_cv);
    }
    pthread_mutex_unlock(&p->mu);
    sf_pack_dctx_free(d);
    free(values);
    return NULL;
}

// The stream's block source: the head of the replica's prefetch queue.
static int block_get(void *arg, int64_t k, const sf_block_task *t, const sf_block_data **d, sf_err *e) {
    replica *rep = arg;
    sf_pipe *p = rep->pipe;
    (void)k, (void)t;
    pthread_mutex_lock(&p->mu);
    while (!p->stop && !(rep->head && rep->head->pending == 0)) wait_timed(p, &rep->window_cv, &rep->st.input_wait);
    int rc = p->stop ? (p->error ? p->error : SF_EINVAL) : 0;
    if (rc) *e = p->error ? p->err : (sf_err){SF_EINVAL, "pipeline stopped"};
    else *d = &rep->head->data;
    pthread_mutex_unlock(&p->mu);
    return rc;
}

static void block_put(void *arg, int64_t k) {
    replica *rep = arg;
    sf_pipe *p = rep->pipe;
    (void)k;
    pthread_mutex_lock(&p->mu);
    block_job *b = rep->head;
    rep->head = b->next;
    if (!rep->head) rep->tail = NULL;
    rep->queued--;
    rep->next_put++;
    b->next = p->spare;
    p->spare = b;
    pthread_cond_signal(&p->reader_cv);  // room in the prefetch queue
    pthread_mutex_unlock(&p->mu);
}

static float *slot_y(const sf_pipe *p, const replica *rep, uint32_t k) {
    return (float *)((char *)rep->buf[k] + p->y_offset);
}

static void *windower_main(void *arg) {
    replica *rep = arg;
    sf_pipe *p = rep->pipe;
    sf_block_source src = {block_get, block_put, rep};
    sf_stream_opts so = {p->o.batch, p->o.pool, p->o.drop_remainder, p->o.seed};
    sf_err e = {0};
    int rc = 0;
    for (uint64_t epoch = p->o.first_epoch; !rc && epoch < p->o.epochs; epoch++) {
        sf_stream *s;
        rep->next_put = 0;
        uint32_t shard = p->shard_base + rep->r;
        if ((rc = sf_stream_open_source(&s, p->pack, p->plan, &p->cols, p->shards, shard, epoch, &so, &src, &e)))
            break;
        for (;;) {
            pthread_mutex_lock(&p->mu);
            while (!p->stop && rep->state[rep->fill] != SLOT_FREE) wait_timed(p, &rep->window_cv, &rep->st.output_wait);
            bool stop = p->stop;
            pthread_mutex_unlock(&p->mu);
            if (stop) break;
            uint32_t f = rep->fill;
            const sf_stage_ops *so = p->o.stage;
            double t = sf_now(), waited = rep->st.input_wait;  // only this thread adds to it
            if (so && (rc = so->reclaim(so->arg, rep->stage_r, rep->stage_s0 + f, &e))) break;
            stall(p->o.delay_us[SF_STAGE_WINDOW]);
            int64_t n = sf_stream_next(s, rep->buf[f], slot_y(p, rep, f), rep->ids[f], &e);
            if (n <= 0) {
                rc = (int)n;
                break;
            }
            if (so && (rc = so->publish(so->arg, rep->stage_r, rep->stage_s0 + f, rep->buf[f], p->slot_bytes,
                                        &rep->device[f], &rep->ready[f], &e)))
                break;
            // Busy: the batch's time less the waits for blocks inside it.
            double now = sf_now(), busy = now - t - (rep->st.input_wait - waited);
            sf_trace_span(p->o.trace, rep->track, "window", t, now);
            pthread_mutex_lock(&p->mu);
            rep->st.busy += busy;
            rep->count[f] = (uint32_t)n;
            rep->epoch[f] = epoch;
            rep->state[f] = SLOT_READY;
            rep->fill = (f + 1) % p->o.slots;
            pthread_cond_signal(&rep->consume_cv);
            pthread_mutex_unlock(&p->mu);
        }
        int64_t ntasks = sf_stream_tasks(s);
        sf_stream_close(s);
        // Drop-remainder can end the epoch before the shard's last blocks:
        // take them off the queue so the reader can go on.
        while (!rc && rep->next_put < ntasks) {
            const sf_block_data *d;
            if ((rc = block_get(rep, rep->next_put, NULL, &d, &e))) break;
            block_put(rep, rep->next_put);
        }
        pthread_mutex_lock(&p->mu);
        bool stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop) break;
    }
    pthread_mutex_lock(&p->mu);
    if (rc && !p->stop) fail(p, rc, &e);
    rep->finished = true;
    pthread_cond_signal(&rep->consume_cv);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

void sf_pipe_close(sf_pipe *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    wake_all(p);
    pthread_mutex_unlock(&p->mu);
    if (p->reader_started) pthread_join(p->reader_thread, NULL);
    for (uint32_t i = 0; i < p->ndecoders_started; i++) pthread_join(p->decoders[i], NULL);
    for (uint32_t r = 0; p->reps && r < p->o.replicas; r++) {
        replica *rep = &p->reps[r];
        if (rep->started) pthread_join(rep->thread, NULL);
        while (rep->head) {
            block_job *b = rep->head;
            rep->head = b->next;
            sf_block_data_free(&b->data);
            free(b);
        }
        for (uint32_t k = 0; k < p->o.slots; k++) {
            const sf_stage_ops *so = p->o.stage;
            if (rep->buf && rep->buf[k]) {
                if (so) so->free(so->arg, rep->stage_r, rep->stage_s0 + k, rep->buf[k]);
                else free(rep->buf[k]);
            }
            if (rep->ids) free(rep->ids[k]);
        }
        free(rep->buf);
        free(rep->device);
        free(rep->ready);
        free(rep->ids);
        free(rep->count);
        free(rep->state);
        free(rep->epoch);
    }
    for (uint32_t r = 0; p->reps && r < p->o.replicas; r++) {
        pthread_cond_destroy(&p->reps[r].window_cv);
        pthread_cond_destroy(&p->reps[r].consume_cv);
    }
    while (p->spare) {
        block_job *b = p->spare;
        p->spare = b->next;
        sf_block_data_free(&b->data);
        free(b);
    }
    free(p->reps);
    free(p->turn);
    free(p->epoch);
    free(p->decoders);
    free(p->dargs);
    free(p->reads);
    free(p->free_bufs);
    free(p->decode_q);
    sf_reader_close(p->reader);
    sf_plan_free(p->plan);
    sf_columns_free(&p->cols);
    sf_pack_close(p->pack);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->reader_cv);
    pthread_cond_destroy(&p->decoder_cv);
    free(p);
}

static int alloc_replica(sf_pipe *p, replica *rep, uint32_t r) {
    uint32_t k = p->o.slots;
    const sf_stage_ops *so = p->o.stage;
    rep->pipe = p;
    rep->r = r;
    rep->stage_r = r / p->lanes;
    rep->stage_s0 = r % p->lanes * k;
    pthread_cond_init(&rep->window_cv, NULL);
    pthread_cond_init(&rep->consume_cv, NULL);
    rep->buf = calloc(k, sizeof *rep->buf);
    rep->device = calloc(k, sizeof *rep->device);
    rep->ready = calloc(k, sizeof *rep->ready);
    rep->ids = calloc(k, sizeof *rep->ids);
    rep->count = calloc(k, sizeof *rep->count);
    rep->state = calloc(k, sizeof *rep->state);
    rep->epoch = calloc(k, sizeof *rep->epoch);
    if (!rep->buf || !rep->device || !rep->ready || !rep->ids || !rep->count || !rep->state || !rep->epoch)
        return SF_ENOMEM;
    for (uint32_t i = 0; i < k; i++) {
        rep->buf[i] = so ? so->alloc(so->arg, rep->stage_r, rep->stage_s0 + i, p->slot_bytes) : malloc(p->slot_bytes);
        rep->ids[i] = malloc(p->o.batch * sizeof(uint64_t));
        if (!rep->buf[i] || !rep->ids[i]) return SF_ENOMEM;
    }
    return 0;
}

int sf_pipe_open(sf_pipe **out, const char *path, const sf_pipe_opts *o, sf_err *e) {
    *out = NULL;
    if (o->replicas == 0 || o->batch == 0 || o->slots < 2 || o->prefetch == 0 || o->decoders == 0 || o->io.depth == 0)
        return sf_err_set(e, SF_EINVAL, "pipeline: replicas, batch, decoders, prefetch and reader depth must be "
                          "positive and slots at least 2");
    uint32_t total = o->shard_total ? o->shard_total : o->replicas;
    if (o->shard_first > total || total - o->shard_first < o->replicas)
        return sf_err_set(e, SF_EINVAL, "pipeline: replicas %u .. %u of %u do not exist", o->shard_first,
                          o->shard_first + o->replicas - 1, total);
    sf_pipe *p = calloc(1, sizeof *p);
    if (!p) return sf_err_set(e, SF_ENOMEM, "out of memory");
    p->o = *o;
    p->replicas = o->replicas;
    p->lanes = o->lanes ? o->lanes : 1;
    p->o.replicas = o->replicas * p->lanes;  // the planner shards over every lane
    p->shard_base = o->shard_first * p->lanes, p->shards = total * p->lanes;
    o = &p->o;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->reader_cv, NULL);
    pthread_cond_init(&p->decoder_cv, NULL);
    int rc = sf_pack_open(&p->pack, path, e);
    const sf_pack_info *in = rc ? NULL : sf_pack_get_info(p->pack);
    if (!rc) rc = sf_columns_create(&p->cols, in, o->features, o->targets, o->norm, e);
    if (!rc)
        rc = sf_plan_create(&p->plan, in->nrows, in->chunk_rows, in->series, in->nseries, &o->window,
                            o->block_chunks ? o->block_chunks : 1, &o->split, e);
    if (!rc) {
        p->per_read = o->block_chunks ? o->block_chunks : 1;
        p->o.io.buffer_size = p->per_read * (sf_pack_max_stored_size(p->pack) + SF_PACK_ALIGN);
        rc = sf_reader_open(&p->reader, path, &p->o.io, e);
    }
    if (rc) {
        sf_pipe_close(p);
        return rc;
    }
    uint32_t depth = o->io.depth;
    p->reads = calloc(depth, sizeof *p->reads);
    p->free_bufs = malloc(depth * sizeof *p->free_bufs);
    p->decode_q = malloc(depth * sizeof *p->decode_q);
    p->reps = calloc(o->replicas, sizeof *p->reps);
    p->decoders = calloc(o->decoders, sizeof *p->decoders);
    p->dargs = calloc(o->decoders, sizeof *p->dargs);
    p->turn = calloc(p->replicas, sizeof *p->turn);
    p->epoch = calloc(p->replicas, sizeof *p->epoch);
    rc = p->reads && p->free_bufs && p->decode_q && p->reps && p->decoders && p->dargs && p->turn && p->epoch ? 0
                                                                                                   : SF_ENOMEM;
    for (uint32_t i = 0; !rc && i < depth; i++) p->free_bufs[p->nfree++] = depth - 1 - i;
    // y starts on a 256-byte boundary, as device allocations do.
    p->y_offset = ((size_t)o->window.length * p->cols.nfeatures * o->batch * sizeof(float) + 255) & ~(size_t)255;
    p->slot_bytes = p->y_offset + (size_t)p->cols.ntargets * o->batch * sizeof(float);
    for (uint32_t r = 0; !rc && r < o->replicas; r++) rc = alloc_replica(p, &p->reps[r], r);
    for (uint32_t r = 0; !rc && r < o->replicas; r++) p->reps[r].read_epoch = o->first_epoch;
    for (uint32_t r = 0; !rc && r < p->replicas; r++) p->epoch[r] = o->first_epoch;
    if (rc) {
        sf_pipe_close(p);
        return sf_err_set(e, SF_ENOMEM, "%s: out of memory for the pipeline's buffers", path);
    }
    // Tracks in the trace: the reader, each decoder, each windower.
    char name[64];
    p->reader_track = sf_trace_track(o->trace, "pipeline: reader");
    for (uint32_t i = 0; i < o->decoders; i++) {
        snprintf(name, sizeof name, "pipeline: decoder %u", i);
        p->dargs[i] = (decoder_arg){p, sf_trace_track(o->trace, name)};
    }
    for (uint32_t r = 0; r < o->replicas; r++) {
        snprintf(name, sizeof name, "pipeline: windower %u.%u", r / p->lanes, r % p->lanes);
        p->reps[r].track = sf_trace_track(o->trace, name);
    }
    p->reader_started = sf_thread_start(&p->reader_thread, reader_main, p) == 0;
    for (uint32_t i = 0; p->reader_started && i < o->decoders; i++, p->ndecoders_started++)
        if (sf_thread_start(&p->decoders[i], decoder_main, &p->dargs[i])) break;
    bool all = p->reader_started && p->ndecoders_started == o->decoders;
    for (uint32_t r = 0; all && r < o->replicas; r++)
        all = p->reps[r].started = sf_thread_start(&p->reps[r].thread, windower_main, &p->reps[r]) == 0;
    if (!all) {
        sf_pipe_close(p);
        return sf_err_set(e, SF_ENOMEM, "%s: cannot start the pipeline's threads", path);
    }
    *out = p;
    return 0;
}

const char *sf_pipe_io_mode(const sf_pipe *p) { return sf_reader_mode(p->reader); }

// Replica r's batches come from its lanes (internal replicas r * lanes ..
// r * lanes + lanes - 1, each with its own windower), taken round robin
// within an epoch: a lane whose next batch is of a later epoch waits until
// every lane has finished the current one. The order is a function of the
// lanes' batches, never of thread timing.
int sf_pipe_next_batch(sf_pipe *p, uint32_t r, sf_batch *b, sf_err *e) {
    if (r >= p->replicas) return sf_err_set(e, SF_EINVAL, "no replica %u of %u", r, p->replicas);
    pthread_mutex_lock(&p->mu);
    int rc = 0;
    bool first = true;  // the replica's first batch: waiting for it is startup, not stall
    for (uint32_t l = 0; l < p->lanes; l++) first &= p->reps[r * p->lanes + l].st.batches == 0;
    for (;;) {
        bool later = false;  // some lane holds a batch of a later epoch
        for (uint32_t i = 0; i < p->lanes && !rc; i++) {
            uint32_t lane = r * p->lanes + (p->turn[r] + i) % p->lanes;
            replica *rep = &p->reps[lane];
            while (!p->stop && rep->state[rep->take] != SLOT_READY && !rep->finished)
                wait_timed(p, &rep->consume_cv, first ? &rep->st.first_wait : &rep->st.consumer_wait);
            if (p->error) {
                rc = p->error;
                *e = p->err;
                break;
            }
            if (rep->state[rep->take] != SLOT_READY) continue;  // the lane is done
            uint32_t k = rep->take;
            if (rep->epoch[k] != p->epoch[r]) {
                later = true;
                continue;
            }
            *b = (sf_batch){rep->buf[k], slot_y(p, rep, k), rep->ids[k], rep->count[k], rep->epoch[k],
                            rep->device[k], rep->device[k] ? (float *)((char *)rep->device[k] + p->y_offset) : NULL,
                            rep->ready[k], k, lane};
            rep->state[k] = SLOT_TAKEN;
            rep->take = (k + 1) % p->o.slots;
            rep->st.batches++;
            p->turn[r] = (p->turn[r] + i + 1) % p->lanes;
            rc = 1;
        }
        if (rc || !later) break;
        p->epoch[r]++;  // every lane is past this epoch
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

void sf_pipe_release(sf_pipe *p, uint32_t r, const sf_batch *b) {
    const sf_stage_ops *so = p->o.stage;
    if (so) so->release(so->arg, r, p->reps[b->lane].stage_s0 + b->slot);
    pthread_mutex_lock(&p->mu);
    p->reps[b->lane].state[b->slot] = SLOT_FREE;
    pthread_cond_signal(&p->reps[b->lane].window_cv);
    pthread_mutex_unlock(&p->mu);
}

void sf_pipe_get_stats(sf_pipe *p, sf_pipe_stats *st, sf_pipe_replica_stats *per_replica) {
    pthread_mutex_lock(&p->mu);
    *st = p->st;
    for (uint32_t r = 0; per_replica && r < p->replicas; r++) {
        sf_pipe_replica_stats sum = {0};
        for (uint32_t l = 0; l < p->lanes; l++) {
            const sf_pipe_replica_stats *x = &p->reps[r * p->lanes + l].st;
            sum.batches += x->batches;
            sum.busy += x->busy / p->lanes;  // per windower, as utilisation is reported
            sum.input_wait += x->input_wait / p->lanes;
            sum.output_wait += x->output_wait / p->lanes;
            sum.consumer_wait += x->consumer_wait;
            sum.first_wait += x->first_wait;
        }
        per_replica[r] = sum;
    }
    pthread_mutex_unlock(&p->mu);
}

// Feature and target columns o asks for (a NULL list is every column).
static void column_counts(const sf_pipe_opts *o, const sf_pack_info *in, uint64_t *nf, uint64_t *nt) {
    *nf = o->features ? 1 : in->ncols;
    *nt = o->targets ? 1 : in->ncols;
    for (const char *c = o->features; c && *c; c++) *nf += *c == ',';
    for (const char *c = o->targets; c && *c; c++) *nt += *c == ',';
}

// Bytes of one window in a pool or a slot: x, y and its id.
static uint64_t window_bytes(const sf_pipe_opts *o, uint64_t nf, uint64_t nt) {
    return ((uint64_t)o->window.length * nf + nt) * 4 + 8;
}

uint64_t sf_pipe_memory(const sf_pipe_opts *o, const sf_pack_info *in) {
    uint64_t nf, nt;
    column_counts(o, in, &nf, &nt);
    uint64_t window = window_bytes(o, nf, nt), per = o->block_chunks ? o->block_chunks : 1;
    uint64_t chunk_raw = (uint64_t)in->chunk_rows * in->ncols * 4, blocks = in->nchunks / per + 1;
    uint64_t block_rows = per * in->chunk_rows + sf_window_span(&o->window);
    // A stored chunk can exceed its raw size slightly (zstd's bound).
    uint64_t reader = (uint64_t)o->io.depth * per * (chunk_raw + chunk_raw / 128 + 8192);
    uint64_t decoders = (uint64_t)o->decoders * 2 * chunk_raw;
    uint64_t lane = (uint64_t)o->prefetch * block_rows * (nf + nt) * 4 + (o->pool > 1 ? o->pool : 1) * window +
                    (uint64_t)o->slots * o->batch * window + 3 * blocks * (sizeof(sf_block_task) + 8);
    return reader + decoders + o->replicas * (o->lanes ? o->lanes : 1) * lane + blocks * sizeof(sf_block_task);
}

int sf_pipe_fit_budget(sf_pipe_opts *o, const sf_pack_info *in, uint64_t budget, sf_err *e) {
    uint64_t want = o->pool;
    o->pool = 1;
    uint64_t least = sf_pipe_memory(o, in);
    if (least > budget)
        return sf_err_set(e, SF_EINVAL,
                          "a memory budget of %.1f MB is too small: reader, decoders, prefetch and ring alone take "
                          "%.1f MB (hint: lower --depth, --decoders, --prefetch, --slots or --batch)",
                          budget / 1e6, least / 1e6);
    uint64_t nf, nt;
    column_counts(o, in, &nf, &nt);
    uint64_t window = window_bytes(o, nf, nt);
    uint64_t fits = 1 + (budget - least) / (o->replicas * (o->lanes ? o->lanes : 1) * window);
    o->pool = want <= 1 ? want : want < fits ? want : fits;  // 0 or 1: no shuffle stays so
    return 0;
}
