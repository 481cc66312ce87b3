// The staging hooks with a simulated device: a copy engine thread that runs
// copies and the consumer's work in order, late, like a CUDA stream. The
// consumer does not wait for a batch's copy before releasing it (a GPU
// trainer only queues its work), so a pipeline that refilled a slot before
// the slot's copy had read it would put the next batch on the "device" and
// the consumer's check, run later on the engine, would see it.
#include <pthread.h>
#include <time.h>

#include "tests/pipeline/sample.h"

enum { MAX_R = 2, MAX_S = 8 };

typedef struct job {
    int kind;  // 0: copy slot (r, s) to the device; 1: compare the device slot with want
    uint32_t r, s;
    const void *host;
    size_t bytes;
    void *want;  // kind 1: the batch as the consumer saw it
    struct job *next;
} job;

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job *head, *tail;
    bool quit, busy;
    void *device[MAX_R][MAX_S];
    uint64_t published[MAX_R][MAX_S], copied[MAX_R][MAX_S];
    uint64_t allocs, frees, releases, checks, mismatches, publish_calls;
    uint64_t fail_at;  // publish call that fails (0: none)
    uint32_t slots;    // per replica, as the pipeline should number them
    bool bad_index;
} fake_device;

static void push(fake_device *d, job *j) {
    pthread_mutex_lock(&d->mu);
    if (d->tail) d->tail->next = j;
    else d->head = j;
    d->tail = j;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

static void *engine(void *arg) {
    fake_device *d = arg;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (!d->head && !d->quit) pthread_cond_wait(&d->cv, &d->mu);
        if (!d->head) break;
        job *j = d->head;
        d->head = j->next;
        if (!d->head) d->tail = NULL;
        d->busy = true;
        pthread_mutex_unlock(&d->mu);
        // Late, so that the windower has every chance to run ahead.
        nanosleep(&(struct timespec){0, 200000}, NULL);
        if (j->kind == 0) memcpy(d->device[j->r][j->s], j->host, j->bytes);
        pthread_mutex_lock(&d->mu);
        d->busy = false;
        if (j->kind == 0) d->copied[j->r][j->s]++;
        else {
            d->checks++;
            d->mismatches += memcmp(d->device[j->r][j->s], j->want, j->bytes) != 0;
            free(j->want);
        }
        pthread_cond_broadcast(&d->cv);
        free(j);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

static bool index_ok(fake_device *d, uint32_t r, uint32_t s) {
    bool ok = r < MAX_R && s < d->slots;
    if (!ok) {
        pthread_mutex_lock(&d->mu);
        d->bad_index = true;
        pthread_mutex_unlock(&d->mu);
    }
    return ok;
}

static void *fake_alloc(void *arg, uint32_t r, uint32_t s, size_t bytes) {
    fake_device *d = arg;
    if (!index_ok(d, r, s)) return NULL;
    d->device[r][s] = malloc(bytes);
    d->allocs++;
    return malloc(bytes);
}

// Like cudaFreeHost, waits for the device's queued work first.
static void fake_free(void *arg, uint32_t r, uint32_t s, void *host) {
    fake_device *d = arg;
    pthread_mutex_lock(&d->mu);
    while (d->head || d->busy) pthread_cond_wait(&d->cv, &d->mu);
    pthread_mutex_unlock(&d->mu);
    free(host);
    free(d->device[r][s]);
    d->device[r][s] = NULL;
    d->frees++;
}

static int fake_reclaim(void *arg, uint32_t r, uint32_t s, sf_err *e) {
    fake_device *d = arg;
    (void)e;
    if (!index_ok(d, r, s)) return SF_EINVAL;
    pthread_mutex_lock(&d->mu);
    while (d->copied[r][s] != d->published[r][s]) pthread_cond_wait(&d->cv, &d->mu);
    pthread_mutex_unlock(&d->mu);
    return 0;
}

static int fake_publish(void *arg, uint32_t r, uint32_t s, const void *host, size_t bytes, void **device,
                        void **ready, sf_err *e) {
    fake_device *d = arg;
    if (!index_ok(d, r, s)) return SF_EINVAL;
    pthread_mutex_lock(&d->mu);
    bool fail = ++d->publish_calls == d->fail_at;
    if (!fail) d->published[r][s]++;
    pthread_mutex_unlock(&d->mu);
    if (fail) return sf_err_set(e, SF_EIO, "simulated copy failure on replica %u slot %u", r, s);
    job *j = calloc(1, sizeof *j);
    *j = (job){0, r, s, host, bytes, NULL, NULL};
    push(d, j);
    *device = d->device[r][s];
    *ready = &d->copied[r][s];
    return 0;
}

static void fake_release(void *arg, uint32_t r, uint32_t s) {
    fake_device *d = arg;
    pthread_mutex_lock(&d->mu);
    d->releases++;
    d->bad_index |= !(r < MAX_R && s < d->slots);
    pthread_mutex_unlock(&d->mu);
}

// Runs o with the fake device; every batch is checked on the engine against
// the host batch the consumer was handed (itself checked against the stream
// in test_pipe). Returns the first error from the pipeline, or 0.
static int run(sf_pipe_opts o, fake_device *d, const char *what, sf_err *err) {
    sf_stage_ops ops = {fake_alloc, fake_free, fake_reclaim, fake_publish, fake_release, d};
    *d = (fake_device){.fail_at = d->fail_at, .slots = o.slots};
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    pthread_t t;
    if (pthread_create(&t, NULL, engine, d)) return SF_ENOMEM;
    o.stage = &ops;
    sample_pipe sp;
    int rc = sample_pipe_open(&sp, path, &o, err);
    sf_pipe *pipe = sp.pipe;
    uint64_t batches = 0;
    if (!rc) {
        bool done[MAX_R] = {false};
        for (uint32_t left = o.replicas; left && !rc;)
            for (uint32_t r = 0; r < o.replicas && !rc; r++) {
                if (done[r]) continue;
                sf_batch b;
                int got = sf_pipe_next_batch(pipe, r, &b, err);
                if (got <= 0) {
                    rc = got;
                    done[r] = true;
                    left--;
                    continue;
                }
                CHECK(b.device_x && b.device_y && b.ready && (char *)b.device_y - (char *)b.device_x ==
                      (char *)b.y - (char *)b.x, "%s: batch without its device copy", what);
                size_t bytes = (size_t)((char *)b.y - (char *)b.x) + b.count * sizeof(float);  // y's first targets too
                job *j = calloc(1, sizeof *j);
                *j = (job){1, r, 0, NULL, bytes, malloc(bytes), NULL};
                // The slot number the hooks saw for this batch: find it by its device address.
                for (uint32_t s = 0; s < d->slots; s++)
                    if (d->device[r][s] == b.device_x) j->s = s;
                memcpy(j->want, b.x, bytes);
                push(d, j);
                sf_pipe_release(pipe, r, &b);
                batches++;
            }
        sample_pipe_close(&sp);
    }
    pthread_mutex_lock(&d->mu);
    d->quit = true;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(t, NULL);
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    CHECK(!d->bad_index, "%s: a hook got a slot outside 0..%u", what, d->slots - 1);
    CHECK(d->allocs == (uint64_t)o.replicas * d->slots && d->frees == d->allocs, "%s: %llu slots allocated, %llu "
          "freed, expected %u", what, (unsigned long long)d->allocs, (unsigned long long)d->frees,
          o.replicas * d->slots);
    CHECK(d->releases == batches && d->checks == batches, "%s: %llu batches, %llu releases, %llu checks", what,
          (unsigned long long)batches, (unsigned long long)d->releases, (unsigned long long)d->checks);
    CHECK(d->mismatches == 0, "%s: %llu of %llu batches on the device differ from the host batch (a slot refilled "
          "before its copy was done)", what, (unsigned long long)d->mismatches, (unsigned long long)batches);
    if (!d->fail_at) CHECK(batches > 20, "%s: only %llu batches", what, (unsigned long long)batches);
    return rc;
}

int main(void) {
    if (!mkdtemp(dir)) return 2;
    snprintf(path, sizeof path, "%s/sample.sfpack", dir);
    if (pack_sample(97)) return TEST_EXIT();
    sf_pipe_opts base = sample_opts();
    fake_device d = {0};
    sf_err e = {0};
    CHECK(run(base, &d, "1 replica", &e) == 0, "1 replica: %s", e.msg);
    sf_pipe_opts o = base;
    o.replicas = 2;
    o.lanes = 2;
    o.slots = 3;
    o.batch = 14, o.parts = 4;  // two parts per replica, one per lane
    CHECK(run(o, &d, "2 replicas x 2 lanes", &e) == 0, "2 replicas x 2 lanes: %s", e.msg);
    // A copy that cannot be started stops the pipeline with its error.
    d.fail_at = 5;
    int rc = run(base, &d, "failing copy", &e);
    CHECK(rc == SF_EIO && strstr(e.msg, "simulated copy failure"), "failing copy gave %d: %s", rc, e.msg);
    unlink(path);
    rmdir(dir);
    return TEST_EXIT();
}
