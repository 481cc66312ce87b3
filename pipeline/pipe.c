// The threaded pipeline: the threads and the bounded queues between them,
// under one mutex. The work of each stage is in its own file.
//
//   reader    picks the next block of the lane with room in its prefetch
//             queue (blocks in each lane's shard order), reads its chunks
//             into free reader buffers (io.c)
//   decoders  decode a buffer's chunks into the block's rows (decode.c);
//             the block is ready when its last chunk is in
//   windower  one per lane: the lane's epoch stream (shuffle pool, batches;
//             window.c) over its ready blocks, into its ring (ring.c)
//   consumer  sf_pipe_next_batch / sf_pipe_release: each replica takes its
//             lanes' batches in turn
//
// Every queue is bounded (reader buffers, prefetch blocks, ring slots), so
// memory does not depend on the file size. One lock; a condition per kind of
// waiter (reader, decoders, decoders the autotuner switched off, each lane's
// windower, each lane's consumer), so that an event wakes only the threads it
// concerns: at millions of windows a second a single broadcast condition woke
// every thread for every batch.
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

typedef struct block_job {
    sf_block_task task;
    sf_block_data data;
    uint32_t pending;  // chunks not gathered yet
    struct block_job *next;
} block_job;

// A pipeline thread's scheduler times: read from the kernel while it runs,
// kept when it ends (its /proc entry goes with it). Under the pipe's lock.
typedef struct {
    int tid;  // 0: not started
    bool ended;
    double cpu, queued;
} thread_times;

// On the thread itself, at its start (end false) or its end.
static void note_thread(thread_times *t, bool end) {
    if (!end) t->tid = sf_thread_id();
    else sf_thread_times(t->tid, &t->cpu, &t->queued), t->ended = true;
}

typedef struct {
    block_job *job;
    uint64_t chunk, offset;  // first chunk, and the file offset of the buffer's first byte
    uint32_t nchunks, part;
    double submitted;        // for the trace
} read_job;  // what reader buffer i holds: consecutive chunks of one block

// A part of the global batch (sf_batch_parts): its own shard of the plan,
// epoch order and pool, whichever replica takes it.
typedef struct {
    struct sf_pipe *pipe;
    uint32_t g;              // among the job's parts
    uint32_t batch, offset;  // its windows per batch, and its first row in its replica's slots
    uint32_t lane;           // the windower that cuts it (index among the pipe's lanes)
    block_job *head, *tail;  // prefetched blocks, in shard order
    uint32_t queued;
    uint64_t read_epoch;     // the epoch the reader is reading for this part
    int64_t next_put;        // shard tasks of this epoch the windower is done with
} part;

typedef struct {
    struct sf_pipe *pipe;
    uint32_t l, r;           // among the pipe's lanes; its replica
    bool finished;
    pthread_t thread;
    bool started;
    thread_times times;
    pthread_cond_t window_cv;  // its windower
    sf_pipe_replica_stats st;
    int track;  // in the trace
} lane;

// A replica's ring: each slot holds the replica's parts of one global batch,
// back to back, each part written by its own lane; the slot is ready when
// every lane of the replica has written its parts.
typedef struct {
    sf_ring ring;
    uint32_t part0, nparts;  // its parts, among the pipe's
    uint32_t lane0, nlanes;  // its lanes, among the pipe's
    uint32_t *filled;        // per slot: lanes done with it for this round
    uint64_t *holds;         // per slot: the step it is filled for or holds (NO_STEP: free)
    uint32_t *counts;        // per slot: each part's windows
    uint32_t finished;       // lanes that ended
    pthread_cond_t consume_cv;
    double consumer_wait, first_wait;
    double ready_at;         // when its last batch was published
    uint32_t wake[SF_LAT_BUCKETS];  // sf_pipe_replica_stats.wake
    uint64_t batches, released;
} replica;

typedef struct {
    struct sf_pipe *p;
    uint32_t index;  // decoders at or past the knob's value wait
    int track;
    thread_times times;
} decoder_arg;

// The counters the controller compares from one look to the next.
typedef struct {
    double at;
    uint64_t batches;
    double consumer_wait, window_busy[SF_MAX_PARTS], window_in[SF_MAX_PARTS], window_out[SF_MAX_PARTS];
    double decode_busy, read_busy;
} tune_mark;

struct sf_pipe {
    sf_pipe_opts o;
    const sf_pack *pack;
    const sf_columns *cols;
    sf_plan *plan;
    sf_reader *reader;
    uint32_t delay_us[SF_DELAYS];  // SEQFEED_TEST_DELAY (sf_test_delays)
    pthread_mutex_t mu;
    pthread_cond_t reader_cv, decoder_cv;
    pthread_cond_t park_cv;  // decoders at or past the decoders knob
    bool stop, reader_done;
    int error;
    sf_err err;
    read_job *reads;    // per reader buffer
    block_job *spare;   // blocks to reuse
    uint32_t per_read;  // chunks per read request at most
    uint32_t *free_bufs, nfree;
    uint32_t *decode_q, dq_head, dq_count;  // reader buffers waiting for a decoder
    part *parts;                  // this pipe's parts, in the job's order
    uint32_t nparts, G;           // ours, and the job's
    lane *lanes;                  // windowers, replica-major
    uint32_t nlanes;
    replica *reps;
    uint64_t steps;               // global batches an epoch has (sf_pipe_epoch_batches)
    uint64_t part_pool;           // each part's shuffle pool
    uint32_t prefetch;            // blocks queued per part
    uint64_t max_edges;           // block edges each part keeps at once for seams
    pthread_t reader_thread, *decoders;
    decoder_arg *dargs;
    int reader_track;
    thread_times reader_times;
    uint32_t ndecoders_started;
    bool reader_started;
    sf_pipe_stats st;
    // The knobs in use (tuner.now) under their caps (the options'), and
    // with autotune the controller's state and its last line.
    sf_tuner tuner;
    sf_pipe_tuning tuning;
    // tuning.changes, read without the lock (sf_pipe_tuning_changes): a
    // consumer polls it after every batch.
    atomic_uint_fast64_t tuning_changes;
    double opened;
    tune_mark mark;
    uint32_t local_parts, local_lanes;
};

static void wake_all(sf_pipe *p) {
    pthread_cond_broadcast(&p->reader_cv);
    pthread_cond_broadcast(&p->decoder_cv);
    pthread_cond_broadcast(&p->park_cv);
    for (uint32_t l = 0; p->lanes && l < p->nlanes; l++) pthread_cond_broadcast(&p->lanes[l].window_cv);
    for (uint32_t r = 0; p->reps && r < p->o.replicas; r++) pthread_cond_broadcast(&p->reps[r].consume_cv);
}

static void fail(sf_pipe *p, int code, const sf_err *e) {
    if (!p->error) {
        p->error = code;
        p->err = *e;
    }
    p->stop = true;
    wake_all(p);
}

// The calling thread's time on a core, in seconds.
static double thread_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// A stage's test delay: time on a core, as slow work takes (a thread that
// waits for a core takes longer, as work would).
static void stall(uint32_t us) {
    if (!us) return;
    double until = thread_cpu() + us * 1e-6;
    while (thread_cpu() < until) {
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
static block_job *new_block(sf_pipe *p, part *ln, const sf_block_task *t, sf_err *e) {
    block_job *b = p->spare;
    size_t rows = (size_t)(t->row_hi - t->row_lo);
    if (b) p->spare = b->next;
    else b = calloc(1, sizeof *b);
    if (b && b->data.cap_rows < rows) {
        sf_block_data_free(&b->data);
        b->data = (sf_block_data){0, 0, malloc(rows * p->cols->nfeatures * sizeof(float) + 1),
                                  malloc(rows * p->cols->ntargets * sizeof(float) + 1), rows};
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
    if (ln->tail) ln->tail->next = b;
    else ln->head = b;
    ln->tail = b;
    ln->queued++;
    return b;
}

// Plans part k's shard of its next epoch into its task list: the tasks its
// windower's stream will ask for, in the same order.
static void plan_epoch(sf_pipe *p, uint32_t k, sf_block_task *tasks, int64_t *ntasks) {
    *ntasks = sf_plan_shard(p->plan, p->o.seed, p->parts[k].read_epoch, p->G, p->parts[k].g, p->max_edges, tasks);
    if (*ntasks < 0) fail(p, (int)*ntasks, &(sf_err){(int)*ntasks, "out of memory for a shard's plan"});
}

static void *reader_main(void *arg) {
    sf_pipe *p = arg;
    const sf_pack_info *in = sf_pack_get_info(p->pack);
    uint32_t L = p->nparts;
    uint64_t nb = sf_plan_blocks(p->plan);
    // Each part its own epoch and position: parts run independently, one
    // may be an epoch ahead of another.
    sf_block_task *tasks = malloc((size_t)L * (nb + 1) * sizeof *tasks);
    int64_t *ntasks = calloc(L, sizeof *ntasks), *next = calloc(L, sizeof *next);
    sf_err e = {0};
    pthread_mutex_lock(&p->mu);
    note_thread(&p->reader_times, false);
    if (!tasks || !ntasks || !next) fail(p, SF_ENOMEM, &(sf_err){SF_ENOMEM, "out of memory"});
    for (uint32_t l = 0; l < L && !p->stop; l++) plan_epoch(p, l, tasks + (size_t)l * (nb + 1), &ntasks[l]);
    block_job *cur = NULL;
    uint64_t chunk = 0, last_chunk = 0;
    uint32_t inflight = 0, turn = 0, cur_lane = 0;
    while (!p->stop) {
        bool left = false;
        for (uint32_t k = 0; k < L && !cur; k++) {  // round robin over parts with work and room
            uint32_t l = (turn + k) % L;
            part *ln = &p->parts[l];
            while (ln->read_epoch < p->o.epochs && next[l] >= ntasks[l]) {
                if (++ln->read_epoch < p->o.epochs) plan_epoch(p, l, tasks + (size_t)l * (nb + 1), &ntasks[l]);
                next[l] = 0;
            }
            if (ln->read_epoch >= p->o.epochs) continue;
            left = true;
            if (ln->queued >= p->prefetch) continue;
            cur = new_block(p, ln, &tasks[(size_t)l * (nb + 1) + next[l]++], &e);
            if (!cur) {
                fail(p, SF_ENOMEM, &e);
                break;
            }
            cur_lane = l;
            chunk = cur->task.row_lo / in->chunk_rows;
            last_chunk = (cur->task.row_hi - 1) / in->chunk_rows;
            turn = l + 1;
        }
        // Reads in flight or waiting for a decoder: at most the depth knob.
        if (cur && p->nfree > 0 && p->o.io.depth - p->nfree < p->tuner.now.depth) {
            // One request for up to block_chunks consecutive chunks: they
            // lie back to back in the file, so fewer, larger reads.
            uint32_t i = p->free_bufs[--p->nfree], n = 0;
            sf_chunk first = sf_pack_chunk_locate(p->pack, chunk);
            while (n < p->per_read && chunk <= last_chunk) chunk++, n++;
            p->reads[i] = (read_job){cur, first.first_row / in->chunk_rows, first.offset, n, cur_lane, sf_now()};
            if (chunk > last_chunk) cur = NULL;
            // Through the padding to the next chunk: contiguous requests.
            size_t len = (size_t)(sf_pack_chunk_span_end(p->pack, chunk - 1) - first.offset);
            inflight++;
            pthread_mutex_unlock(&p->mu);
            double t = sf_now();
            stall(p->delay_us[SF_DELAY_READ]);
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
            if (!rc && p->delay_us[SF_DELAY_IO]) sf_sleep_until(p->reads[i].submitted + p->delay_us[SF_DELAY_IO] * 1e-6);
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
        if (!cur && !left) break;  // every part's every epoch is read
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
    note_thread(&p->reader_times, true);
    pthread_cond_broadcast(&p->decoder_cv);
    pthread_cond_broadcast(&p->park_cv);
    pthread_mutex_unlock(&p->mu);
    free(tasks);
    free(ntasks);
    free(next);
    return NULL;
}

static void *decoder_main(void *arg) {
    sf_pipe *p = ((decoder_arg *)arg)->p;
    int track = ((decoder_arg *)arg)->track;
    uint32_t index = ((decoder_arg *)arg)->index;
    sf_decoder *dec = sf_decoder_create(p->pack);
    sf_err e = {0};
    pthread_mutex_lock(&p->mu);
    note_thread(&((decoder_arg *)arg)->times, false);
    if (!dec) fail(p, SF_ENOMEM, &(sf_err){SF_ENOMEM, "out of memory for a decoder"});
    for (;;) {
        // A decoder past the knob's count sits out until it grows again, on
        // a condition of its own: the reader's signal for a read goes to a
        // decoder that takes it.
        while (!p->stop && (p->dq_count == 0 || index >= p->tuner.now.decoders) && !p->reader_done)
            wait_timed(p, index >= p->tuner.now.decoders ? &p->park_cv : &p->decoder_cv, &p->st.decode_wait);
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
            stall(p->delay_us[SF_DELAY_DECODE]);
            if (p->delay_us[SF_DELAY_DECODE_WAIT]) sf_sleep_until(sf_now() + p->delay_us[SF_DELAY_DECODE_WAIT] * 1e-6);
            // Into rows no other decoder touches.
            rc = sf_decoder_run(dec, p->pack, p->cols, job.chunk + k, stored, &job.job->data, &e);
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
        if ((job.job->pending -= job.nchunks) == 0) pthread_cond_signal(&p->lanes[p->parts[job.part].lane].window_cv);
    }
    note_thread(&((decoder_arg *)arg)->times, true);
    pthread_mutex_unlock(&p->mu);
    sf_decoder_free(dec);
    return NULL;
}

// The stream's block source: the head of the part's prefetch queue.
static int block_get(void *arg, int64_t k, const sf_block_task *t, const sf_block_data **d, sf_err *e) {
    part *pt = arg;
    sf_pipe *p = pt->pipe;
    lane *ln = &p->lanes[pt->lane];
    (void)k, (void)t;
    pthread_mutex_lock(&p->mu);
    while (!p->stop && !(pt->head && pt->head->pending == 0)) wait_timed(p, &ln->window_cv, &ln->st.input_wait);
    int rc = p->stop ? (p->error ? p->error : SF_EINVAL) : 0;
    if (rc) *e = p->error ? p->err : (sf_err){SF_EINVAL, "pipeline stopped"};
    else *d = &pt->head->data;
    pthread_mutex_unlock(&p->mu);
    return rc;
}

static void block_put(void *arg, int64_t k) {
    part *pt = arg;
    sf_pipe *p = pt->pipe;
    (void)k;
    pthread_mutex_lock(&p->mu);
    block_job *b = pt->head;
    pt->head = b->next;
    if (!pt->head) pt->tail = NULL;
    pt->queued--;
    pt->next_put++;
    b->next = p->spare;
    p->spare = b;
    pthread_cond_signal(&p->reader_cv);  // room in the prefetch queue
    pthread_mutex_unlock(&p->mu);
}

// The parts of a slot that the end of an epoch left short (no
// drop-remainder) move down, so that the batch's rows are consecutive.
static uint32_t compact(sf_pipe *p, replica *rp, uint32_t f) {
    sf_ring *g = &rp->ring;
    size_t xl = sf_window_x_len(&p->o.window, p->cols);
    size_t yl = (size_t)p->cols->ntargets * sf_window_steps(&p->o.window);
    uint32_t at = 0;
    for (uint32_t j = 0; j < rp->nparts; j++) {
        uint32_t off = p->parts[rp->part0 + j].offset, n = rp->counts[f * rp->nparts + j];
        if (off != at && n) {
            memmove(sf_ring_x(g, f) + at * xl, sf_ring_x(g, f) + off * xl, n * xl * sizeof(float));
            memmove(sf_ring_y(g, f) + at * yl, sf_ring_y(g, f) + off * yl, n * yl * sizeof(float));
            memmove(g->ids[f] + at, g->ids[f] + off, n * sizeof *g->ids[f]);
        }
        at += n;
    }
    return at;
}

#define NO_STEP UINT64_MAX
enum { NO_SLOT = UINT32_MAX };

// The slot that holds replica rp's batch `step`, or NO_SLOT.
static uint32_t slot_of(const replica *rp, uint64_t step) {
    for (uint32_t k = 0; k < rp->ring.slots; k++)
        if (rp->holds[k] == step) return k;
    return NO_SLOT;
}

// The slot for `step`: the one another lane began filling, else the free
// one with the lowest index (NO_SLOT: none is free). Not round robin over
// the ring: the ring is allocated at the slots' cap, and under a smaller
// knob the batches stay in its first slots, the ones last released, warm in
// the caches, instead of cycling through all of it (with 2 MB batches, a
// ring of 8 is 16 MB written for every 2 that are in use). With stage
// hooks, round robin (slot step % slots, once free): a slot's device copy
// waits for the work queued on its last batch, and a consumer releases as
// soon as it has queued that work, so the slot last released is the one
// whose copy would wait the longest.
static uint32_t claim_slot(replica *rp, uint64_t step) {
    uint32_t f = slot_of(rp, step);
    if (f != NO_SLOT) return f;
    // The candidates: slot step % slots alone with stage hooks, else all.
    uint32_t k = rp->ring.stage ? (uint32_t)(step % rp->ring.slots) : 0;
    for (uint32_t end = rp->ring.stage ? k + 1 : rp->ring.slots; k < end; k++)
        if (rp->holds[k] == NO_STEP) return rp->holds[k] = step, k;
    return NO_SLOT;
}

// Cuts the lane's parts (streams ss, parts mine) of the epoch's global batch
// `step` (the pipe's count) into its replica's slot for it: 1, 0 when the
// pipe stopped, or a negative code. The lane that writes a slot's last
// parts publishes it.
static int fill_slot(lane *ln, sf_stream **ss, const uint32_t *mine, uint32_t n, uint64_t step, uint64_t epoch,
                     sf_err *e) {
    sf_pipe *p = ln->pipe;
    replica *rp = &p->reps[ln->r];
    sf_ring *g = &rp->ring;
    uint32_t f = NO_SLOT;
    pthread_mutex_lock(&p->mu);
    // At most the slots knob's batches ahead of those the consumer released
    // (so a slot is free: no more than the knob, at most the ring's slots,
    // are held).
    while (!p->stop && (step >= rp->released + p->tuner.now.slots || (f = claim_slot(rp, step)) == NO_SLOT))
        wait_timed(p, &ln->window_cv, &ln->st.output_wait);
    bool stop = p->stop;
    pthread_mutex_unlock(&p->mu);
    if (stop) return 0;
    double t = sf_now(), waited = ln->st.input_wait;  // only this thread adds to it
    int rc = sf_ring_reclaim(g, f, e);
    if (rc) return rc;
    stall(p->delay_us[SF_DELAY_WINDOW]);
    size_t xl = sf_window_x_len(&p->o.window, p->cols);
    size_t yl = (size_t)p->cols->ntargets * sf_window_steps(&p->o.window);
    for (uint32_t j = 0; j < n; j++) {
        const part *pt = &p->parts[mine[j]];
        // A part whose shard ran out (no drop-remainder) is empty.
        int64_t got = sf_stream_next(ss[j], sf_ring_x(g, f) + pt->offset * xl, sf_ring_y(g, f) + pt->offset * yl,
                                     g->ids[f] + pt->offset, e);
        if (got < 0) return (int)got;
        rp->counts[f * rp->nparts + (mine[j] - rp->part0)] = (uint32_t)got;
    }
    pthread_mutex_lock(&p->mu);
    bool last = ++rp->filled[f] == rp->nlanes;
    pthread_mutex_unlock(&p->mu);
    uint32_t count = last ? compact(p, rp, f) : 0;
    if (last && (rc = sf_ring_publish(g, f, e))) return rc;
    // Busy: the batch's time less the waits for blocks inside it.
    double now = sf_now(), busy = now - t - (ln->st.input_wait - waited);
    sf_trace_span(p->o.trace, ln->track, "window", t, now);
    pthread_mutex_lock(&p->mu);
    ln->st.busy += busy;
    ln->st.batches++;
    if (last) {
        g->count[f] = count;
        g->epoch[f] = epoch;
        g->state[f] = SF_SLOT_READY;
        rp->ready_at = sf_now();
        pthread_cond_signal(&rp->consume_cv);
    }
    pthread_mutex_unlock(&p->mu);
    return 1;
}

static void *windower_main(void *arg) {
    lane *ln = arg;
    sf_pipe *p = ln->pipe;
    replica *rp = &p->reps[ln->r];
    // Its parts: every nlanes-th of its replica's.
    uint32_t mine[SF_MAX_PARTS], n = 0;
    for (uint32_t j = ln->l - rp->lane0; j < rp->nparts; j += rp->nlanes) mine[n++] = rp->part0 + j;
    sf_stream *ss[SF_MAX_PARTS] = {0};
    pthread_mutex_lock(&p->mu);
    note_thread(&ln->times, false);
    pthread_mutex_unlock(&p->mu);
    sf_err e = {0};
    int rc = 0;
    uint64_t step = 0;  // the replica's batches so far
    for (uint64_t epoch = p->o.first_epoch; !rc && epoch < p->o.epochs; epoch++) {
        for (uint32_t j = 0; !rc && j < n; j++) {
            part *pt = &p->parts[mine[j]];
            pt->next_put = 0;
            // The pipe counts the epoch's batches (the same for every part):
            // the streams themselves never drop.
            sf_stream_opts so = {.batch = pt->batch, .pool = p->part_pool, .drop_remainder = false,
                                 .seed = p->o.seed, .max_edges = p->max_edges};
            rc = sf_stream_open(&ss[j], p->pack, p->plan, p->cols, p->G, pt->g, epoch, &so,
                                &(sf_block_source){block_get, block_put, pt}, &e);
        }
        for (uint64_t k = 0; !rc && k < p->steps; k++, step++)
            if ((rc = fill_slot(ln, ss, mine, n, step, epoch, &e)) == 1) rc = 0;
            else if (rc == 0) rc = 1;  // stopped
        for (uint32_t j = 0; j < n; j++) {
            part *pt = &p->parts[mine[j]];
            int64_t ntasks = ss[j] ? sf_stream_tasks(ss[j]) : 0;
            sf_stream_close(ss[j]);
            ss[j] = NULL;
            // Drop-remainder can end the epoch before the shard's last
            // blocks: take them off the queue so the reader can go on.
            while (!rc && pt->next_put < ntasks) {
                const sf_block_data *d;
                if ((rc = block_get(pt, pt->next_put, NULL, &d, &e))) break;
                block_put(pt, pt->next_put);
            }
        }
        pthread_mutex_lock(&p->mu);
        bool stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop) break;
    }
    pthread_mutex_lock(&p->mu);
    if (rc < 0 && !p->stop) fail(p, rc, &e);
    ln->finished = true;
    note_thread(&ln->times, true);
    rp->finished++;
    pthread_cond_signal(&rp->consume_cv);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void free_blocks(block_job *b) {
    while (b) {
        block_job *next = b->next;
        sf_block_data_free(&b->data);
        free(b);
        b = next;
    }
}

void sf_pipe_close(sf_pipe *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    wake_all(p);
    pthread_mutex_unlock(&p->mu);
    if (p->reader_started) pthread_join(p->reader_thread, NULL);
    for (uint32_t i = 0; i < p->ndecoders_started; i++) pthread_join(p->decoders[i], NULL);
    for (uint32_t l = 0; p->lanes && l < p->nlanes; l++) {
        if (p->lanes[l].started) pthread_join(p->lanes[l].thread, NULL);
        pthread_cond_destroy(&p->lanes[l].window_cv);
    }
    for (uint32_t k = 0; p->parts && k < p->nparts; k++) free_blocks(p->parts[k].head);
    for (uint32_t r = 0; p->reps && r < p->o.replicas; r++) {
        replica *rp = &p->reps[r];
        sf_ring_close(&rp->ring);
        free(rp->filled), free(rp->holds), free(rp->counts);
        pthread_cond_destroy(&rp->consume_cv);
    }
    free_blocks(p->spare);
    free(p->lanes);
    free(p->parts);
    free(p->reps);
    free(p->decoders);
    free(p->dargs);
    free(p->reads);
    free(p->free_bufs);
    free(p->decode_q);
    sf_reader_close(p->reader);
    sf_plan_free(p->plan);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->reader_cv);
    pthread_cond_destroy(&p->decoder_cv);
    pthread_cond_destroy(&p->park_cv);
    free(p);
}

sf_pipe_opts sf_pipe_opts_default(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return (sf_pipe_opts){
        .window = {.length = 60, .stride = 1, .sampling_rate = 1, .horizon = 1},
        .block_chunks = 1,
        .replicas = 1,
        .batch = 32,
        .pool = 16384,
        .seed = 1,
        .epochs = 1,
        .io = {.io = SF_IO_AUTO, .direct = SF_DIRECT_AUTO, .depth = 8},
        .decoders = cores > 0 ? (uint32_t)cores : 1,
        .slots = 4,
        .prefetch = 4,
        .lanes = 1,
        .edge_bytes = 16u << 20,
    };
}

uint32_t sf_batch_parts(uint32_t batch) {
    uint32_t g = batch / 8;
    return g < 1 ? 1 : g > SF_DEFAULT_PARTS ? SF_DEFAULT_PARTS : g;
}

uint32_t sf_pipe_parts(const sf_pipe_opts *o) { return o->parts ? o->parts : sf_batch_parts(o->batch); }

static uint32_t job_replicas(const sf_pipe_opts *o) { return o->shard_total ? o->shard_total : o->replicas; }

void sf_part_rows(uint32_t batch, uint32_t parts, uint32_t g, uint32_t *lo, uint32_t *n) {
    uint32_t a = (uint32_t)((uint64_t)batch * g / parts), b = (uint32_t)((uint64_t)batch * (g + 1) / parts);
    *lo = a, *n = b - a;
}

void sf_replica_parts(uint32_t parts, uint32_t replicas, uint32_t q, uint32_t *first, uint32_t *end) {
    *first = (uint32_t)((uint64_t)parts * q / replicas), *end = (uint32_t)((uint64_t)parts * (q + 1) / replicas);
}

uint32_t sf_replica_windows(uint32_t batch, uint32_t parts, uint32_t replicas, uint32_t q) {
    uint32_t a, b, lo, n, sum = 0;
    if (!parts || !replicas) return 0;
    sf_replica_parts(parts, replicas, q, &a, &b);
    for (uint32_t g = a; g < b; g++) sf_part_rows(batch, parts, g, &lo, &n), sum += n;
    return sum;
}

static int check_opts(const sf_pipe_opts *o, sf_err *e) {
    if (o->replicas == 0 || o->batch == 0 || o->slots < 2 || o->prefetch == 0 || o->decoders == 0 ||
        o->io.depth == 0 || o->lanes == 0 || o->block_chunks == 0)
        return sf_err_set(e, SF_EINVAL, "pipeline: replicas, batch, decoders, prefetch, reader depth, lanes and "
                          "block chunks must be positive and slots at least 2");
    uint32_t total = job_replicas(o), G = sf_pipe_parts(o);
    if (o->shard_first > total || total - o->shard_first < o->replicas)
        return sf_err_set(e, SF_EINVAL, "pipeline: replicas %u .. %u of %u do not exist", o->shard_first,
                          o->shard_first + o->replicas - 1, total);
    if (G > SF_MAX_PARTS || G > o->batch)
        return sf_err_set(e, SF_EINVAL, "pipeline: %u parts of a batch of %u windows: at most %u, and at most one "
                          "per window", G, o->batch, SF_MAX_PARTS);
    if (total > G)
        return sf_err_set(e, SF_EUSAGE, "%u replicas share a global batch of %u windows cut into %u parts of at "
                          "least 8 windows, a part per replica at least (hint: a --batch-size of at least %u, or "
                          "fewer --replicas)", total, o->batch, G, total * 8);
    return 0;
}

// Bytes of one block edge a seam keeps: at most span - 1 rows.
static uint64_t edge_size(const sf_pipe_opts *o, const sf_columns *c) {
    uint64_t span = sf_window_span(&o->window);
    return (span > 1 ? span - 1 : 1) * (c->nfeatures + c->ntargets) * 4 + 64;
}

uint64_t sf_pipe_max_edges(const sf_pipe_opts *o, const sf_columns *c) { return o->edge_bytes / edge_size(o, c); }

// What this pipe serves of the job: its parts [*first, *end), its lanes,
// its windows per global batch.
typedef struct {
    uint32_t G, first, end, lanes, windows;
} local;

static local local_of(const sf_pipe_opts *o) {
    local z = {sf_pipe_parts(o), 0, 0, 0, 0};
    uint32_t Q = job_replicas(o), a, b;
    for (uint32_t r = 0; r < o->replicas && z.G && Q <= z.G; r++) {
        sf_replica_parts(z.G, Q, o->shard_first + r, &a, &b);
        if (r == 0) z.first = a;
        z.end = b;
        z.lanes += o->lanes < b - a ? o->lanes : b - a;
    }
    uint32_t lo, n;
    for (uint32_t g = z.first; g < z.end; g++) sf_part_rows(o->batch, z.G, g, &lo, &n), z.windows += n;
    return z;
}

// Each part's share of the job's pool (o->pool, 0 or 1: plan order).
static uint64_t part_pool(const sf_pipe_opts *o) {
    uint64_t G = sf_pipe_parts(o);
    return o->pool <= 1 ? o->pool : (o->pool + G - 1) / G > 2 ? (o->pool + G - 1) / G : 2;
}

// Blocks queued per part: a lane's prefetch shared among its parts, but
// two each at least, so that a part's next block is read while it cuts one.
static uint32_t part_prefetch(const sf_pipe_opts *o, const local *z) {
    uint32_t n = z->end - z->first;
    if (n <= z->lanes) return o->prefetch;
    uint64_t k = ((uint64_t)o->prefetch * z->lanes + n - 1) / n;
    return k < 2 ? 2 : (uint32_t)k;
}

// Block edges each part keeps: a lane's edge_bytes shared among its parts.
static uint64_t part_edges(const sf_pipe_opts *o, const sf_columns *c, const local *z) {
    uint32_t n = z->end - z->first;
    return n ? sf_pipe_max_edges(o, c) * z->lanes / n : 0;
}

// The line a program prints when the pipe opens: what it starts with,
// under which caps, and what it leaves alone.
static void start_line(sf_pipe *p) {
    const sf_pipe_tuning *t = &p->tuning;
    char given[96] = "";
    size_t at = 0;
    for (int i = 0; i < SF_KNOBS; i++)
        if (t->fixed & (1u << i))
            at += (size_t)snprintf(given + at, sizeof given - at, "%s --%s", at ? "," : "; given:", sf_knob_name(i));
    snprintf(p->tuning.line, sizeof p->tuning.line,
             "pipeline auto: starts at decoders %u, prefetch %u, slots %u, depth %u; caps %u, %u, %u, %u (%.1f MB "
             "at most)%s; pool %llu, block-chunks %u and lanes %u are not tuned (the first two decide the batches)",
             t->now.decoders, t->now.prefetch, t->now.slots, t->now.depth, t->cap.decoders, t->cap.prefetch,
             t->cap.slots, t->cap.depth, t->cap_bytes / 1e6, given, (unsigned long long)p->o.pool, p->o.block_chunks,
             p->o.lanes);
}

// The knobs as p->tuner.now says, under the lock: wakes whoever a larger
// value lets go on, starts decoders up to the new count, and gives back the
// spare blocks a smaller prefetch no longer needs.
static void apply_knobs(sf_pipe *p, const sf_pipe_knobs *was) {
    const sf_pipe_knobs *k = &p->tuner.now;
    sf_pipe_opts o = {.prefetch = k->prefetch};
    local z = {0, 0, p->local_parts, p->local_lanes, 0};
    p->prefetch = part_prefetch(&o, &z);
    while (p->ndecoders_started < k->decoders && !p->stop) {
        if (sf_thread_start(&p->decoders[p->ndecoders_started], decoder_main, &p->dargs[p->ndecoders_started])) {
            p->tuner.now.decoders = p->tuner.hi.decoders = p->ndecoders_started;  // no more threads to be had
            break;
        }
        p->ndecoders_started++;
    }
    if (k->prefetch < was->prefetch) {
        free_blocks(p->spare);
        p->spare = NULL;
    }
    wake_all(p);
    p->tuning.now = *k;
}

int sf_pipe_open(sf_pipe **out, const sf_pack *pack, const sf_columns *cols, const sf_pipe_opts *o, sf_err *e) {
    *out = NULL;
    int rc = check_opts(o, e);
    if (rc) return rc;
    sf_pipe *p = calloc(1, sizeof *p);
    if (!p) return sf_err_set(e, SF_ENOMEM, "out of memory");
    p->o = *o;
    p->pack = pack, p->cols = cols;
    local z = local_of(o);
    p->G = z.G, p->nparts = z.end - z.first, p->nlanes = z.lanes;
    p->max_edges = part_edges(o, cols, &z);
    p->part_pool = part_pool(o);
    p->prefetch = part_prefetch(o, &z);
    p->local_parts = z.end - z.first, p->local_lanes = z.lanes;
    o = &p->o;
    sf_pipe_knobs cap = {o->decoders, o->prefetch, o->slots, o->io.depth};
    if (o->autotune) {
        // The least of each to start: the first look sizes them from what
        // a batch costs.
        sf_pipe_knobs start;
        for (int i = 0; i < SF_KNOBS; i++) {
            uint32_t c = sf_knob_get(&cap, i);
            *sf_knob(&start, i) = o->fixed & (1u << i) ? c : sf_knob_least(i, c);
        }
        sf_tuner_init(&p->tuner, start, cap, o->fixed);
        p->prefetch = part_prefetch(&(sf_pipe_opts){.prefetch = start.prefetch}, &z);
    } else {
        sf_tuner_init(&p->tuner, cap, cap, SF_KNOB_DECODERS | SF_KNOB_PREFETCH | SF_KNOB_SLOTS | SF_KNOB_DEPTH);
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->reader_cv, NULL);
    pthread_cond_init(&p->decoder_cv, NULL);
    pthread_cond_init(&p->park_cv, NULL);
    const sf_pack_info *in = sf_pack_get_info(pack);
    const char *path = sf_pack_name(pack);
    rc = sf_test_delays(p->delay_us, e);
    if (!rc)
        rc = sf_plan_create(&p->plan, in->nrows, in->chunk_rows, o->series ? o->series : in->series,
                            o->series ? o->nseries : in->nseries, &o->window, o->block_chunks,
                            &o->split, e);
    // Nothing sized by the window, the pool or the batch is allocated
    // before it is known to fit.
    if (!rc) rc = sf_pipe_check_memory(o, in, cols, 0, e);
    if (!rc) {
        p->steps = sf_pipe_epoch_batches(o, sf_plan_windows(p->plan));
        // A block never holds more chunks than the file: a huge
        // --block-chunks must not size buffers for chunks that do not exist.
        p->per_read = o->block_chunks < in->nchunks ? o->block_chunks : (uint32_t)in->nchunks;
        p->o.io.buffer_size = p->per_read * (sf_pack_max_stored_size(pack) + SF_PACK_ALIGN);
        rc = sf_reader_open(&p->reader, sf_pack_fd(pack), path, &p->o.io, e);
    }
    if (rc) {
        sf_pipe_close(p);
        return rc;
    }
    uint32_t depth = o->io.depth;
    p->reads = calloc(depth, sizeof *p->reads);
    p->free_bufs = malloc(depth * sizeof *p->free_bufs);
    p->decode_q = malloc(depth * sizeof *p->decode_q);
    p->parts = calloc(p->nparts, sizeof *p->parts);
    p->lanes = calloc(p->nlanes, sizeof *p->lanes);
    p->reps = calloc(o->replicas, sizeof *p->reps);
    p->decoders = calloc(o->decoders, sizeof *p->decoders);
    p->dargs = calloc(o->decoders, sizeof *p->dargs);
    rc = p->reads && p->free_bufs && p->decode_q && p->parts && p->lanes && p->reps && p->decoders && p->dargs
             ? 0 : SF_ENOMEM;
    for (uint32_t i = 0; !rc && i < depth; i++) p->free_bufs[p->nfree++] = depth - 1 - i;
    size_t x_len = sf_window_x_len(&o->window, cols);
    uint32_t lane0 = 0;
    for (uint32_t r = 0; !rc && r < o->replicas; r++) {
        replica *rp = &p->reps[r];
        uint32_t a, b, lo, n, at = 0;
        sf_replica_parts(p->G, job_replicas(o), o->shard_first + r, &a, &b);
        rp->part0 = a - z.first, rp->nparts = b - a;
        rp->lane0 = lane0, rp->nlanes = o->lanes < rp->nparts ? o->lanes : rp->nparts;
        pthread_cond_init(&rp->consume_cv, NULL);
        for (uint32_t j = 0; j < rp->nparts; j++) {
            sf_part_rows(o->batch, p->G, a + j, &lo, &n);
            p->parts[rp->part0 + j] = (part){.pipe = p, .g = a + j, .batch = n, .offset = at,
                                             .lane = lane0 + j % rp->nlanes, .read_epoch = o->first_epoch};
            at += n;
        }
        for (uint32_t l = 0; l < rp->nlanes; l++) {
            lane *ln = &p->lanes[lane0 + l];
            *ln = (lane){.pipe = p, .l = lane0 + l, .r = r};
            pthread_cond_init(&ln->window_cv, NULL);
        }
        lane0 += rp->nlanes;
        rp->filled = calloc(o->slots, sizeof *rp->filled);
        rp->holds = malloc(o->slots * sizeof *rp->holds);
        rp->counts = calloc((size_t)o->slots * rp->nparts, sizeof *rp->counts);
        if (!rp->filled || !rp->holds || !rp->counts) rc = SF_ENOMEM;
        for (uint32_t k = 0; !rc && k < o->slots; k++) rp->holds[k] = NO_STEP;
        if (!rc)
            rc = sf_ring_open(&rp->ring, o->slots, at, x_len,
                              (size_t)cols->ntargets * sf_window_steps(&o->window), o->stage, r, 0);
    }
    if (rc) {
        sf_pipe_close(p);
        return sf_err_set(e, SF_ENOMEM, "%s: out of memory for the pipeline's buffers", path);
    }
    // Tracks in the trace: the reader, each decoder, each windower.
    char name[64];
    p->reader_track = sf_trace_track(o->trace, "pipeline: reader");
    for (uint32_t i = 0; i < o->decoders; i++) {
        snprintf(name, sizeof name, "pipeline: decoder %u", i);
        p->dargs[i] = (decoder_arg){.p = p, .index = i, .track = sf_trace_track(o->trace, name)};
    }
    for (uint32_t l = 0; l < p->nlanes; l++) {
        snprintf(name, sizeof name, "pipeline: windower %u.%u", p->lanes[l].r, l - p->reps[p->lanes[l].r].lane0);
        p->lanes[l].track = sf_trace_track(o->trace, name);
    }
    // The decoders in use now; the controller starts more up to the cap.
    uint32_t first = p->tuner.now.decoders;
    p->tuning = (sf_pipe_tuning){.autotune = o->autotune, .now = p->tuner.now, .cap = cap, .fixed = p->tuner.fixed,
                                 .changes = o->autotune, .cap_bytes = sf_pipe_memory(o, in, cols)};
    if (o->autotune) start_line(p);
    atomic_init(&p->tuning_changes, p->tuning.changes);
    p->opened = sf_now();
    p->mark.at = p->opened;
    // Under the lock: the reader reads the count of decoders started.
    pthread_mutex_lock(&p->mu);
    p->reader_started = sf_thread_start(&p->reader_thread, reader_main, p) == 0;
    for (uint32_t i = 0; p->reader_started && i < first; i++, p->ndecoders_started++)
        if (sf_thread_start(&p->decoders[i], decoder_main, &p->dargs[i])) break;
    bool all = p->reader_started && p->ndecoders_started == first;
    for (uint32_t l = 0; all && l < p->nlanes; l++)
        all = p->lanes[l].started = sf_thread_start(&p->lanes[l].thread, windower_main, &p->lanes[l]) == 0;
    pthread_mutex_unlock(&p->mu);
    if (!all) {
        sf_pipe_close(p);
        return sf_err_set(e, SF_ENOMEM, "%s: cannot start the pipeline's threads", path);
    }
    *out = p;
    return 0;
}

const char *sf_pipe_io_mode(const sf_pipe *p) { return sf_reader_mode(p->reader); }

// The counters the controller compares, under the lock.
static tune_mark mark_now(const sf_pipe *p, double now) {
    tune_mark m = {.at = now, .batches = p->reps[0].batches, .consumer_wait = p->reps[0].consumer_wait,
                   .decode_busy = p->st.decode_busy, .read_busy = p->st.read_busy};
    for (uint32_t l = 0; l < p->nlanes; l++)
        m.window_busy[l] = p->lanes[l].st.busy, m.window_in[l] = p->lanes[l].st.input_wait,
        m.window_out[l] = p->lanes[l].st.output_wait;
    return m;
}

// The controller's look, every tune_interval, from replica 0's consumer
// (under the lock): the interval's growth of the counters, the busiest
// windower's for the windowers.
static void look(sf_pipe *p) {
    double now = sf_now(), every = p->o.tune_interval > 0 ? p->o.tune_interval : 0.1;
    // Enough batches that one slow step does not make the interval's step
    // (a second at least when a step is that long).
    uint64_t batches = p->reps[0].batches - p->mark.batches;
    if (now - p->mark.at < every || (batches < 8 && now - p->mark.at < 10 * every)) return;
    tune_mark m = mark_now(p, now), *a = &p->mark;
    sf_tune_sample s = {.seconds = now - a->at, .batches = m.batches - a->batches,
                        .consumer_wait = m.consumer_wait - a->consumer_wait,
                        .decode_busy = m.decode_busy - a->decode_busy, .read_busy = m.read_busy - a->read_busy};
    for (uint32_t l = 0; l < p->nlanes; l++)
        if (m.window_busy[l] - a->window_busy[l] >= s.window_busy)
            s.window_busy = m.window_busy[l] - a->window_busy[l], s.window_in = m.window_in[l] - a->window_in[l],
            s.window_out = m.window_out[l] - a->window_out[l];
    p->mark = m;
    sf_pipe_knobs was = p->tuner.now;
    char why[sizeof p->tuning.line - 40];
    bool said = sf_tuner_look(&p->tuner, &s, why, sizeof why);
    double n = s.batches ? (double)s.batches : 1;
    p->tuning.step = (s.seconds - s.consumer_wait) / n, p->tuning.wait = s.consumer_wait / s.seconds;
    if (!said) return;
    apply_knobs(p, &was);
    snprintf(p->tuning.line, sizeof p->tuning.line, "pipeline auto at %.2f s: %s", now - p->opened, why);
    p->tuning.changes++;
    atomic_store_explicit(&p->tuning_changes, p->tuning.changes, memory_order_release);
    if (memcmp(&was, &p->tuner.now, sizeof was)) p->tuning.settled = now - p->opened;
}

void sf_pipe_tuning_text(const sf_pipe_tuning *t, char *buf, size_t cap) {
    int n = snprintf(buf, cap, "%s: decoders %u, prefetch %u, slots %u, depth %u", t->autotune ? "auto" : "fixed",
                     t->now.decoders, t->now.prefetch, t->now.slots, t->now.depth);
    if (t->autotune && n > 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, " (settled at %.2f s; caps %u, %u, %u, %u)", t->settled, t->cap.decoders,
                 t->cap.prefetch, t->cap.slots, t->cap.depth);
}

uint64_t sf_pipe_tuning_changes(const sf_pipe *p) {
    return atomic_load_explicit(&p->tuning_changes, memory_order_acquire);
}

void sf_pipe_get_tuning(sf_pipe *p, sf_pipe_tuning *t) {
    pthread_mutex_lock(&p->mu);
    *t = p->tuning;
    pthread_mutex_unlock(&p->mu);
}

int sf_pipe_set_knobs(sf_pipe *p, const sf_pipe_knobs *k, sf_err *e) {
    sf_pipe_knobs want = *k;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < SF_KNOBS; i++) {
        uint32_t v = sf_knob_get(&want, i), c = sf_knob_get(&p->tuner.cap, i), lo = sf_knob_least(i, c);
        if (p->tuner.fixed & (1u << i)) continue;
        if (v < lo || v > c) {
            pthread_mutex_unlock(&p->mu);
            return sf_err_set(e, SF_EINVAL, "pipeline: %s %u outside %u .. %u", sf_knob_name(i), v, lo, c);
        }
    }
    sf_pipe_knobs was = p->tuner.now;
    for (int i = 0; i < SF_KNOBS; i++)
        if (!(p->tuner.fixed & (1u << i))) *sf_knob(&p->tuner.now, i) = sf_knob_get(&want, i);
    apply_knobs(p, &was);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

// Replica r's batches come from its ring in step order: a slot is ready once
// every lane of the replica has cut its parts into it, so the batches do not
// depend on thread timing or on the lanes.
int sf_pipe_next_batch(sf_pipe *p, uint32_t r, sf_batch *b, sf_err *e) {
    if (r >= p->o.replicas) return sf_err_set(e, SF_EINVAL, "no replica %u of %u", r, p->o.replicas);
    replica *rp = &p->reps[r];
    sf_ring *g = &rp->ring;
    pthread_mutex_lock(&p->mu);
    // The replica's first batch: waiting for it is startup, not stall.
    bool first = rp->batches == 0, waited = false;
    uint32_t k;  // the slot of the replica's next batch
    bool ready;
    while (!(ready = (k = slot_of(rp, rp->batches)) != NO_SLOT && g->state[k] == SF_SLOT_READY) && !p->stop &&
           rp->finished < rp->nlanes) {
        wait_timed(p, &rp->consume_cv, first ? &rp->first_wait : &rp->consumer_wait);
        waited = true;
    }
    if (waited && !first && ready) rp->wake[sf_lat_bucket(sf_now() - rp->ready_at)]++;
    int rc = 0;
    if (p->error) {
        rc = p->error;
        *e = p->err;
    } else if (ready) {
        *b = sf_ring_batch(g, k, r);
        b->first_part = p->parts[rp->part0].g, b->nparts = rp->nparts;
        b->part_count = rp->counts + (size_t)k * rp->nparts;
        g->state[k] = SF_SLOT_TAKEN;
        rp->batches++;
        rc = 1;
        if (r == 0 && p->o.autotune) look(p);
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

void sf_pipe_release(sf_pipe *p, uint32_t r, const sf_batch *b) {
    replica *rp = &p->reps[r];
    sf_ring_release(&rp->ring, b->slot);
    pthread_mutex_lock(&p->mu);
    rp->ring.state[b->slot] = SF_SLOT_FREE;
    rp->filled[b->slot] = 0;
    rp->holds[b->slot] = NO_STEP;
    rp->released++;
    for (uint32_t l = 0; l < rp->nlanes; l++) pthread_cond_signal(&p->lanes[rp->lane0 + l].window_cv);
    pthread_mutex_unlock(&p->mu);
}

int sf_pipe_release_keep(sf_pipe *p, uint32_t r, const sf_batch *b, void *spare) {
    sf_ring *g = &p->reps[r].ring;
    if (g->stage) return SF_EINVAL;  // the hooks own pinned slots, and the device copy is tied to them
    if (!spare && !(spare = malloc(g->bytes))) return SF_ENOMEM;
    // No lock for the swap: the slot is taken, so no windower touches it
    // until sf_pipe_release frees it under the pipe's mutex.
    g->buf[b->slot] = spare;
    sf_pipe_release(p, r, b);
    return 0;
}

// The thread's time on a core and queued for one, added to *cpu and *queued.
static void add_times(const thread_times *t, double *cpu, double *queued) {
    double c = t->cpu, q = t->queued;
    if (!t->tid) return;
    if (!t->ended) sf_thread_times(t->tid, &c, &q);
    *cpu += c, *queued += q;
}

void sf_pipe_get_stats(sf_pipe *p, sf_pipe_stats *st, sf_pipe_replica_stats *per_replica) {
    pthread_mutex_lock(&p->mu);
    *st = p->st;
    add_times(&p->reader_times, &st->read_cpu, &st->read_queued);
    for (uint32_t i = 0; i < p->ndecoders_started; i++)
        add_times(&p->dargs[i].times, &st->decode_cpu, &st->decode_queued);
    for (uint32_t r = 0; per_replica && r < p->o.replicas; r++) {
        const replica *rp = &p->reps[r];
        sf_pipe_replica_stats sum = {.batches = rp->batches, .consumer_wait = rp->consumer_wait,
                                     .first_wait = rp->first_wait};
        memcpy(sum.wake, rp->wake, sizeof sum.wake);
        for (uint32_t l = 0; l < rp->nlanes; l++) {
            const lane *ln = &p->lanes[rp->lane0 + l];
            const sf_pipe_replica_stats *x = &ln->st;
            double cpu = 0, queued = 0;
            add_times(&ln->times, &cpu, &queued);
            sum.busy += x->busy / rp->nlanes;  // per windower, as utilisation is reported
            sum.cpu += cpu / rp->nlanes, sum.queued += queued / rp->nlanes;
            sum.input_wait += x->input_wait / rp->nlanes;
            sum.output_wait += x->output_wait / rp->nlanes;
        }
        per_replica[r] = sum;
    }
    pthread_mutex_unlock(&p->mu);
}

// Bytes of one window in a pool or a slot: x, y and its id.
static uint64_t window_bytes(const sf_pipe_opts *o, const sf_columns *c) {
    return (sf_window_x_len(&o->window, c) + (uint64_t)c->ntargets * sf_window_steps(&o->window)) * 4 + 8;
}

// The windows of the training part (or what o->split names).
static uint64_t plan_windows(const sf_pipe_opts *o, const sf_pack_info *in) {
    return sf_plan_count(o->series ? o->series : in->series, o->series ? o->nseries : in->nseries, &o->window,
                         &o->split);
}

// The pool each part allocates (sf_stream_open): its share of o->pool, but
// never more windows than the largest part's share of an epoch.
static uint64_t stream_pool(const sf_pipe_opts *o, const sf_pack_info *in) {
    uint64_t pool = part_pool(o), G = sf_pipe_parts(o);
    if (pool <= 1) return 1;
    uint64_t windows = plan_windows(o, in), share = (windows + G - 1) / G;
    return pool < share ? pool : share > 2 ? share : 2;
}

uint64_t sf_pipe_memory(const sf_pipe_opts *o, const sf_pack_info *in, const sf_columns *cols) {
    uint64_t nf = cols->nfeatures, nt = cols->ntargets;
    uint64_t window = window_bytes(o, cols), per = o->block_chunks ? o->block_chunks : 1;
    local z = local_of(o);
    uint64_t nchunks = in->nchunks ? in->nchunks : 1, parts = z.end - z.first, G = z.G ? z.G : 1;
    if (per > nchunks) per = nchunks;
    // What the file can fill: a chunk holds at most the file's rows, and
    // no stage holds more blocks, reads or chunks than there are.
    uint64_t chunk_rows = in->chunk_rows < in->nrows ? in->chunk_rows : in->nrows;
    uint64_t chunk_raw = chunk_rows * in->ncols * 4, blocks = (nchunks + per - 1) / per;
    uint64_t in_flight = o->io.depth < blocks ? o->io.depth : blocks;
    uint64_t decoding = o->decoders < nchunks ? o->decoders : nchunks;
    // A part's stretch of the file: its share of the blocks and the two it
    // shares with its neighbours, never more than the file has.
    uint64_t part_blocks = blocks / G + 2 < blocks ? blocks / G + 2 : blocks, prefetch = part_prefetch(o, &z);
    uint64_t queued = prefetch < part_blocks ? prefetch : part_blocks;
    // A block's task loads its rows and, re-reading both seams, up to a
    // window span on either side.
    uint64_t block_rows = per * chunk_rows + 2 * sf_window_span(&o->window);
    // A stored chunk can exceed its raw size slightly (zstd's bound).
    uint64_t reader = in_flight * per * (chunk_raw + chunk_raw / 128 + 8192);
    uint64_t decoders = decoding * 2 * chunk_raw;
    uint64_t part = queued * block_rows * (nf + nt) * 4 + stream_pool(o, in) * window +
                    3 * blocks * (sizeof(sf_block_task) + 8) + part_edges(o, cols, &z) * edge_size(o, cols);
    uint64_t slots = (uint64_t)o->slots * z.windows * window;
    return reader + decoders + parts * part + slots + blocks * sizeof(sf_block_task);
}

int sf_pipe_check_memory(const sf_pipe_opts *o, const sf_pack_info *in, const sf_columns *cols, uint64_t others,
                         sf_err *e) {
    uint64_t need = sf_pipe_memory(o, in, cols), have = sf_machine_memory();
    local z = local_of(o);
    // The pools and slots again in double: a huge window times a huge
    // batch must not wrap the estimate round to something small.
    double window = ((double)sf_window_x_len(&o->window, cols) + (double)cols->ntargets * sf_window_steps(&o->window)) * 4 + 8;
    double big = ((double)(z.end - z.first) * (double)stream_pool(o, in) + (double)o->slots * z.windows) * window;
    if (big > (double)need) need = big >= 0x1p64 ? UINT64_MAX : (uint64_t)big;
    if (!have || (need <= have && others <= have - need)) return 0;
    char with[96] = "";
    if (others) snprintf(with, sizeof with, ", and the replicas %.1f GB more", others / 1e9);
    return sf_err_set(e, SF_EUSAGE, "the pipeline would hold %.1f GB (%u part(s) of the batch, each a shuffle pool "
                      "of %llu windows; %u slots of %u windows; a window %u rows of %u inputs)%s: more than the "
                      "%.1f GB this machine has (hint: a smaller --pool, --batch-size or --window)", need / 1e9,
                      z.end - z.first, (unsigned long long)stream_pool(o, in), o->slots, z.windows,
                      o->window.length, cols->nfeatures, with, have / 1e9);
}

uint64_t sf_pipe_epoch_batches(const sf_pipe_opts *o, uint64_t windows) {
    uint32_t G = sf_pipe_parts(o);
    if (!o->batch || !G || G > o->batch) return 0;
    // Every part is a shard of its own: the epoch has as many global
    // batches as its shortest shard gives full batches (drop-remainder), or
    // as its longest gives batches (the others' parts then empty).
    uint64_t steps = o->drop_remainder ? UINT64_MAX : 0;
    for (uint32_t g = 0; g < G; g++) {
        uint32_t lo, n;
        sf_part_rows(o->batch, G, g, &lo, &n);
        __extension__ unsigned __int128 w = windows;
        uint64_t share = (uint64_t)(w * (g + 1) / G - w * g / G);
        uint64_t k = o->drop_remainder ? share / n : (share + n - 1) / n;
        steps = o->drop_remainder ? (k < steps ? k : steps) : (k > steps ? k : steps);
    }
    return steps;
}

// The caps (sf_pipe_fit_budget), fitted before the pool shrinks: the pool,
// which decides the batches, is the last to give way.
static void auto_caps(sf_pipe_opts *o, const sf_pack_info *in, const sf_columns *cols, uint64_t budget) {
    if (!o->autotune) return;
    local z = local_of(o);
    uint32_t cores = o->cores ? o->cores : sf_affinity_cores();
    uint32_t *knob[SF_KNOBS] = {&o->decoders, &o->prefetch, &o->slots, &o->io.depth};
    const uint32_t want[SF_KNOBS] = {cores > z.lanes ? cores - z.lanes + 1 : 1, 8, 8, 8};
    uint32_t least[SF_KNOBS];
    for (int i = 0; i < SF_KNOBS; i++) {
        if (!(o->fixed & (1u << i))) *knob[i] = want[i];
        least[i] = sf_knob_least(i, UINT32_MAX);
    }
    if (!budget) return;
    uint64_t edges = o->edge_bytes;
    o->edge_bytes = 0;  // they give way before any knob does (sf_pipe_fit_budget)
    for (;;) {
        uint64_t have = sf_pipe_memory(o, in, cols);
        if (have <= budget) break;
        // The knob whose halving frees the most.
        int best = -1;
        uint64_t freed = 0;
        for (int i = 0; i < SF_KNOBS; i++) {
            if ((o->fixed & (1u << i)) || *knob[i] <= least[i]) continue;
            uint32_t v = *knob[i];
            *knob[i] = v / 2 > least[i] ? v / 2 : least[i];
            uint64_t m = sf_pipe_memory(o, in, cols);
            *knob[i] = v;
            if (have - m > freed || best < 0) best = i, freed = have - m;
        }
        if (best < 0) break;  // the pool gives way next
        *knob[best] = *knob[best] / 2 > least[best] ? *knob[best] / 2 : least[best];
    }
    o->edge_bytes = edges;
}

int sf_pipe_fit_budget(sf_pipe_opts *o, const sf_pack_info *in, const sf_columns *cols, uint64_t budget, sf_err *e) {
    auto_caps(o, in, cols, budget);
    if (!budget) return 0;
    uint64_t want = o->pool, edges = o->edge_bytes;
    o->pool = 1, o->edge_bytes = 0;
    uint64_t least = sf_pipe_memory(o, in, cols);
    o->pool = want, o->edge_bytes = edges;
    if (least > budget)
        return sf_err_set(e, SF_EUSAGE,
                          "a memory budget of %.1f MB is too small: reader, decoders, prefetch and ring alone take "
                          "%.1f MB (hint: lower --depth, --decoders, --prefetch, --slots or --batch-size)",
                          budget / 1e6, least / 1e6);
    // The pool first, as asked (it decides the batches); the edges, which
    // only spare reads, take what is left. 0 or 1: no shuffle stays so.
    o->edge_bytes = 0;
    if (want > 1 && sf_pipe_memory(o, in, cols) > budget) {
        uint64_t lo = 1, hi = want;  // lo fits, hi does not
        while (hi - lo > 1) {
            o->pool = lo + (hi - lo) / 2;
            if (sf_pipe_memory(o, in, cols) <= budget) lo = o->pool;
            else hi = o->pool;
        }
        o->pool = lo;
    }
    uint64_t used = sf_pipe_memory(o, in, cols), spare = budget > used ? budget - used : 0;
    local z = local_of(o);
    // Edges are kept per part, edge_bytes per lane.
    uint64_t per_lane = z.lanes ? spare / z.lanes : 0;
    o->edge_bytes = edges < per_lane ? edges : per_lane;
    while (o->edge_bytes && sf_pipe_memory(o, in, cols) > budget) o->edge_bytes /= 2;
    return 0;
}
