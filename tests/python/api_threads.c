// libseqfeed's handles shared by threads, as the Python package shares them
// (ctypes releases the GIL in every call): several threads read one pack at
// once and get what one thread reads alone, and several threads call
// sf_dataset_next or sf_dataset_next_buffer on one dataset and get,
// together, every batch of every epoch exactly once (the calls take turns;
// a batch whose memory was handed over never changes while held), and several threads read one
// validation set's windows in orders of their own and get what one read
// in order gives. Run under TSan by tools/sanitize.sh, where the Python
// tests cannot be.
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/seqfeed.h"

enum { ROWS = 3000, READERS = 4, CONSUMERS = 4, ROUNDS = 20 };

static sf_pack *pack;
static float *want;
static sf_dataset *ds;
static sf_dataset_info info;
static sf_valset *vs;
static uint64_t val_windows;
static float *val_x, *val_y;  // every validation window, read in order
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t batches, errors;

static void *reader(void *arg) {
    (void)arg;
    uint32_t cols[2] = {1, 0};
    float *got = malloc(ROWS * 2 * sizeof *got);
    int64_t *t = malloc(ROWS * sizeof *t);
    for (int r = 0; got && t && r < ROUNDS; r++) {
        sf_err e;
        if (sf_api_pack_read(pack, cols, 2, 0, ROWS, got, &e) || memcmp(got, want, ROWS * 2 * sizeof *got) ||
            sf_api_pack_read_times(pack, 0, ROWS, t, &e) || t[ROWS - 1] <= t[0]) {
            pthread_mutex_lock(&count_lock);
            errors++;
            pthread_mutex_unlock(&count_lock);
            break;
        }
    }
    free(got);
    free(t);
    return NULL;
}

// Half the consumers copy (sf_dataset_next); the other half take the
// batches' memory (sf_dataset_next_buffer), keep each until the next has
// come, check that it did not change meanwhile, and give it back as the
// spare of the call after.
static void *consumer(void *arg) {
    bool keep = arg != NULL;
    size_t nx = (size_t)info.batch * info.window * info.nfeatures, ny = (size_t)info.batch * info.ntargets;
    float *x = malloc(nx * sizeof *x), *y = malloc(ny * sizeof *y), *held = NULL, *spare = NULL, *hx, *hy;
    for (;;) {
        sf_err e;
        int rc = -1;
        if (!x || !y) {
        } else if (!keep) {
            rc = sf_dataset_next(ds, x, nx, y, ny, &e);
        } else if ((rc = sf_dataset_next_buffer(ds, spare, &hx, &hy, &e)) == 1) {
            spare = NULL;
            if (held && (memcmp(held, x, nx * sizeof *x) || memcmp((char *)held + ((char *)hy - (char *)hx), y,
                                                                  ny * sizeof *y)))
                rc = -1, snprintf(e.msg, sizeof e.msg, "a batch held changed while the next was taken");
            spare = held, held = hx;
            memcpy(x, hx, nx * sizeof *x), memcpy(y, hy, ny * sizeof *y);
        }
        pthread_mutex_lock(&count_lock);
        if (rc == 1) batches++;
        if (rc < 0) errors++, fprintf(stderr, "sf_dataset_next%s: %s\n", keep ? "_buffer" : "", e.msg);
        pthread_mutex_unlock(&count_lock);
        if (rc != 1) break;
    }
    sf_api_free(held), sf_api_free(spare);
    free(x);
    free(y);
    return NULL;
}

// Windows of the validation set from the last to the first, a few at a time,
// each as the read in order gave it.
static void *val_reader(void *arg) {
    uint32_t step = 1 + (uint32_t)(uintptr_t)arg;
    size_t xw = (size_t)info.window * info.nfeatures;
    float *x = malloc(step * xw * sizeof *x), *y = malloc(step * info.ntargets * sizeof *y);
    bool bad = !x || !y;
    for (uint64_t end = val_windows; !bad && end > 0;) {
        uint32_t n = end < step ? (uint32_t)end : step;
        uint64_t rows[8];
        sf_err e;
        bad = sf_valset_read(vs, end - n, n, x, n * xw, y, n * info.ntargets, n <= 8 ? rows : NULL, &e) ||
              memcmp(x, val_x + (end - n) * xw, n * xw * sizeof *x) ||
              memcmp(y, val_y + (end - n) * info.ntargets, n * info.ntargets * sizeof *y);
        end -= n;
    }
    if (bad) {
        pthread_mutex_lock(&count_lock);
        errors++;
        pthread_mutex_unlock(&count_lock);
    }
    free(x);
    free(y);
    return NULL;
}

int main(void) {
    char dir[] = "/tmp/api_threads.XXXXXX", path[64], *csv = malloc(ROWS * 64);
    if (!mkdtemp(dir) || !csv) return 1;
    snprintf(path, sizeof path, "%s/d.sfpack", dir);
    size_t n = (size_t)sprintf(csv, "time,a,b\n");
    for (int i = 0; i < ROWS; i++)
        n += (size_t)sprintf(csv + n, "%d,%d.25,%d\n", 1600000000 + 60 * i, (i * 37) % 101, i % 17);
    sf_csv_pack_opts po = {.time_column = "time", .time_unit = SF_TIME_EPOCH_S, .pack = {.chunk_rows = 256, .level = 1}};
    sf_err e;
    int rc = sf_csv_pack_mem(csv, n, "threads.csv", path, &po, NULL, &e);
    free(csv);
    if (rc || sf_api_pack_open(&pack, path, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    want = malloc(ROWS * 2 * sizeof *want);
    uint32_t cols[2] = {1, 0};
    if (!want || sf_api_pack_read(pack, cols, 2, 0, ROWS, want, &e)) return 1;
    pthread_t t[READERS > CONSUMERS ? READERS : CONSUMERS];
    for (int i = 0; i < READERS; i++) pthread_create(&t[i], NULL, reader, NULL);
    for (int i = 0; i < READERS; i++) pthread_join(t[i], NULL);
    sf_api_pack_close(pack);

    sf_dataset_opts o = {.data = path, .targets = "a", .window = 16, .stride = 1, .sampling_rate = 1, .horizon = 1,
                         .batch = 8, .pool = 64, .seed = 3, .epochs = 3, .val_split = 0.1, .replicas = 1,
                         .decoders = 2};
    if (sf_dataset_open(&ds, &o, &e) || sf_dataset_shape(ds, &info)) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    for (int i = 0; i < CONSUMERS; i++) pthread_create(&t[i], NULL, consumer, i % 2 ? &info : NULL);
    for (int i = 0; i < CONSUMERS; i++) pthread_join(t[i], NULL);
    char *about = sf_dataset_describe(ds);
    if (!about || !strstr(about, "\"targets\": [{\"name\": \"a\"") || sf_dataset_describe(NULL)) errors++;
    sf_api_free(about);
    sf_dataset_close(ds);

    sf_dataset_info vinfo;
    if (sf_valset_open(&vs, &o, &e) || sf_valset_shape(vs, &val_windows, &vinfo)) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    size_t xw = (size_t)info.window * info.nfeatures;
    val_x = malloc(val_windows * xw * sizeof *val_x), val_y = malloc(val_windows * info.ntargets * sizeof *val_y);
    uint64_t row;
    // 300 validation rows, each a target (stride 1); reading past the end or into too small a buffer is refused.
    if (!val_x || !val_y || val_windows != 300 || vinfo.batches_per_epoch != 38 ||
        sf_valset_read(vs, 0, (uint32_t)val_windows, val_x, val_windows * xw, val_y, val_windows * info.ntargets,
                       NULL, &e) ||
        sf_valset_read(vs, 299, 1, val_x, xw, val_y, 1, &row, &e) || row != 2999 ||
        sf_valset_read(vs, 299, 2, val_x, 2 * xw, val_y, 2, NULL, &e) != SF_EINVAL ||
        sf_valset_read(vs, 0, 2, val_x, 2 * xw - 1, val_y, 2, NULL, &e) != SF_EINVAL ||
        sf_valset_read(NULL, 0, 1, val_x, xw, val_y, 1, NULL, NULL) != SF_EINVAL) {
        fprintf(stderr, "FAIL: the validation set's reads (%llu windows): %s\n", (unsigned long long)val_windows,
                e.msg);
        return 1;
    }
    // Again in order: the reads above moved the loaded block elsewhere.
    sf_valset_read(vs, 0, (uint32_t)val_windows, val_x, val_windows * xw, val_y, val_windows * info.ntargets, NULL, &e);
    for (int i = 0; i < READERS; i++) pthread_create(&t[i], NULL, val_reader, (void *)(uintptr_t)(i * 2));
    for (int i = 0; i < READERS; i++) pthread_join(t[i], NULL);
    sf_valset_close(vs);
    free(val_x), free(val_y);
    unlink(path);
    rmdir(dir);
    free(want);
    uint64_t expect = info.batches_per_epoch * info.epochs;
    if (errors || batches != expect) {
        fprintf(stderr, "FAIL: %llu errors, %llu batches of %llu\n", (unsigned long long)errors,
                (unsigned long long)batches, (unsigned long long)expect);
        return 1;
    }
    printf("%d readers agreed; %d consumers took %llu batches between them; %d validation readers agreed\n",
           READERS, CONSUMERS, (unsigned long long)batches, READERS);
    return 0;
}
