// The job's ranks through MPI, with a watchdog on every collective.
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ranks.h"

struct sf_ranks {
    MPI_Comm comm;  // our own, with errors returned rather than fatal
    MPI_Comm node;  // the ranks on this machine
    MPI_Comm sums;  // the sums in flight, apart from the blocking collectives
    MPI_Request *req;  // of the sums in flight, in start order
    size_t *first;     // sum k's requests: req[first[k] .. first[k + 1])
    size_t nsums, nreq, cap;
    int rank, size, local_rank, local_size;
    uint32_t cores;  // this rank's share of its machine
    bool multiple;  // MPI_THREAD_MULTIPLE: the watchdog may call MPI_Abort
    double timeout;
    // The watchdog: armed with the collective in progress and its deadline.
    pthread_t dog;
    bool dog_started, quit;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const char *what;
    double deadline;
};

bool sf_ranks_has_mpi(void) { return true; }

static void *watchdog(void *arg) {
    sf_ranks *d = arg;
    pthread_mutex_lock(&d->mu);
    while (!d->quit) {
        if (!d->what) {
            pthread_cond_wait(&d->cv, &d->mu);
            continue;
        }
        double left = d->deadline - sf_now();
        if (left > 0) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            double at = ts.tv_sec + ts.tv_nsec * 1e-9 + left;
            ts.tv_sec = (time_t)at, ts.tv_nsec = (long)((at - (double)ts.tv_sec) * 1e9);
            pthread_cond_timedwait(&d->cv, &d->mu, &ts);
            continue;
        }
        fprintf(stderr, "seqfeed: rank %d of %d: %s did not complete within %.0f s: another rank died or stopped "
                "answering; aborting the job (hint: the launcher's messages name the rank that failed; "
                "--collective-timeout sets the limit)\n", d->rank, d->size, d->what, d->timeout);
        fflush(stderr);
        if (d->multiple) MPI_Abort(MPI_COMM_WORLD, 1);
        _exit(1);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

static void arm(sf_ranks *d, const char *what) {
    pthread_mutex_lock(&d->mu);
    d->what = what, d->deadline = sf_now() + d->timeout;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

static void disarm(sf_ranks *d) {
    pthread_mutex_lock(&d->mu);
    d->what = NULL;
    pthread_mutex_unlock(&d->mu);
}

void sf_ranks_watch(sf_ranks *d, const char *what) {
    if (d) arm(d, what);
}
void sf_ranks_unwatch(sf_ranks *d) {
    if (d) disarm(d);
}
double sf_ranks_timeout(const sf_ranks *d) { return d ? d->timeout : 0; }
uint32_t sf_ranks_cores(const sf_ranks *d) { return d ? d->cores : sf_affinity_cores(); }

static int mpi_fail(const sf_ranks *d, int rc, const char *what, sf_err *e) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "MPI error %d", rc);
    return sf_err_set(e, SF_EIO, "rank %d of %d: %s failed: %s (hint: another rank may have died; the launcher's "
                      "messages name it)", d->rank, d->size, what, msg);
}

// The cores this rank may use: each core it is bound to, shared with the
// other ranks on the machine bound to it too (unbound ranks, one
// container's cpuset, or --bind-to socket groups all count right).
static int share_cores(sf_ranks *d) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return MPI_SUCCESS;
    int32_t *users = calloc(CPU_SETSIZE, sizeof *users);
    if (!users) return MPI_SUCCESS;  // keep the whole mask
    for (int c = 0; c < CPU_SETSIZE; c++) users[c] = CPU_ISSET(c, &set) != 0;
    int rc = MPI_Allreduce(MPI_IN_PLACE, users, CPU_SETSIZE, MPI_INT32_T, MPI_SUM, d->node);
    double share = 0;
    for (int c = 0; rc == MPI_SUCCESS && c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) share += 1.0 / users[c];
    if (rc == MPI_SUCCESS) d->cores = share >= 1 ? (uint32_t)(share + 1e-9) : 1;
    free(users);
    return rc;
}

int sf_ranks_open(sf_ranks **out, double timeout_s, sf_err *e) {
    *out = NULL;
    int provided = 0, rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS) return sf_err_set(e, SF_EIO, "MPI_Init_thread failed (error %d)", rc);
    sf_ranks *d = calloc(1, sizeof *d);
    if (!d) {
        MPI_Abort(MPI_COMM_WORLD, 1);
        return sf_err_set(e, SF_ENOMEM, "out of memory");
    }
    // Collectives come from a replica's thread, not the one that
    // initialised MPI: at least SERIALIZED.
    if (provided < MPI_THREAD_SERIALIZED) {
        free(d);
        MPI_Finalize();
        return sf_err_set(e, SF_EINVAL, "this MPI library offers no thread support (level %d): seqfeed calls MPI from "
                          "its replica threads (hint: an MPI built with threads, like Debian's Open MPI)", provided);
    }
    d->multiple = provided == MPI_THREAD_MULTIPLE;
    d->timeout = timeout_s > 0 ? timeout_s : 300;
    MPI_Comm_dup(MPI_COMM_WORLD, &d->comm);
    MPI_Comm_set_errhandler(d->comm, MPI_ERRORS_RETURN);
    MPI_Comm_dup(d->comm, &d->sums);
    MPI_Comm_rank(d->comm, &d->rank);
    MPI_Comm_size(d->comm, &d->size);
    d->node = MPI_COMM_NULL, d->local_rank = 0, d->local_size = 1, d->cores = sf_affinity_cores();
    pthread_mutex_init(&d->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (sf_thread_start(&d->dog, watchdog, d)) {
        sf_ranks_close(d);
        return sf_err_set(e, SF_ENOMEM, "cannot start the collectives' watchdog thread");
    }
    d->dog_started = true;
    // The ranks on this machine, which share its cores and GPUs.
    arm(d, "finding the ranks on this machine");
    rc = MPI_Comm_split_type(d->comm, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &d->node);
    if (rc == MPI_SUCCESS) {
        MPI_Comm_set_errhandler(d->node, MPI_ERRORS_RETURN);
        MPI_Comm_rank(d->node, &d->local_rank);
        MPI_Comm_size(d->node, &d->local_size);
        rc = share_cores(d);
    }
    disarm(d);
    if (rc != MPI_SUCCESS) {
        mpi_fail(d, rc, "finding the ranks on this machine", e);
        sf_ranks_close(d);
        return SF_EIO;
    }
    *out = d;
    return 0;
}

static void stop_watchdog(sf_ranks *d) {
    if (!d->dog_started) return;
    pthread_mutex_lock(&d->mu);
    d->quit = true;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->dog, NULL);
    d->dog_started = false;
}

void sf_ranks_close(sf_ranks *d) {
    if (!d) return;
    stop_watchdog(d);
    if (d->node != MPI_COMM_NULL) MPI_Comm_free(&d->node);
    MPI_Comm_free(&d->sums);
    MPI_Comm_free(&d->comm);
    free(d->req), free(d->first);
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    free(d);
    MPI_Finalize();
}

_Noreturn void sf_ranks_abort(sf_ranks *d, int status) {
    if (d) MPI_Abort(MPI_COMM_WORLD, status ? status : 1);
    exit(status);
}

int sf_ranks_rank(const sf_ranks *d) { return d ? d->rank : 0; }
int sf_ranks_size(const sf_ranks *d) { return d ? d->size : 1; }
int sf_ranks_local_rank(const sf_ranks *d) { return d ? d->local_rank : 0; }
int sf_ranks_local_size(const sf_ranks *d) { return d ? d->local_size : 1; }

// In place, over comm, under the watchdog. MPI counts are ints: large
// buffers go in pieces.
static int reduce(sf_ranks *d, MPI_Comm comm, void *v, size_t n, size_t elem, MPI_Datatype type, MPI_Op op,
                  const char *what, sf_err *e) {
    arm(d, what);
    int rc = MPI_SUCCESS;
    for (size_t at = 0; rc == MPI_SUCCESS && at < n;) {
        int part = n - at > (size_t)(INT_MAX / 2) ? INT_MAX / 2 : (int)(n - at);
        rc = MPI_Allreduce(MPI_IN_PLACE, (char *)v + at * elem, part, type, op, comm);
        at += (size_t)part;
    }
    disarm(d);
    return rc == MPI_SUCCESS ? 0 : mpi_fail(d, rc, what, e);
}

int sf_ranks_sum_i64(sf_ranks *d, int64_t *v, size_t n, const char *what, sf_err *e) {
    return d && d->size > 1 ? reduce(d, d->comm, v, n, sizeof *v, MPI_INT64_T, MPI_SUM, what, e) : 0;
}
int sf_ranks_sum_f64(sf_ranks *d, double *v, size_t n, const char *what, sf_err *e) {
    return d && d->size > 1 ? reduce(d, d->comm, v, n, sizeof *v, MPI_DOUBLE, MPI_SUM, what, e) : 0;
}
// Room for one more sum of up to `pieces` requests.
static bool sums_room(sf_ranks *d, size_t pieces) {
    size_t need = d->nreq + pieces > d->nsums + 2 ? d->nreq + pieces : d->nsums + 2;
    if (need <= d->cap) return true;
    size_t cap = need * 2;
    MPI_Request *req = realloc(d->req, cap * sizeof *req);
    if (req) d->req = req;
    size_t *first = realloc(d->first, cap * sizeof *first);
    if (first) d->first = first;
    if (!req || !first) return false;
    d->cap = cap;
    return true;
}

enum { PREFIX_TAG = 29 };

int sf_ranks_prefix_recv(sf_ranks *d, float *v, size_t n, const char *what, sf_err *e) {
    if (!d || d->size == 1 || d->rank == 0) return 0;
    size_t piece = INT_MAX / 2;
    arm(d, what);
    int rc = MPI_SUCCESS;
    for (size_t at = 0; rc == MPI_SUCCESS && at < n; at += piece) {
        int part = n - at > piece ? (int)piece : (int)(n - at);
        rc = MPI_Recv(v + at, part, MPI_FLOAT, d->rank - 1, PREFIX_TAG, d->sums, MPI_STATUS_IGNORE);
    }
    disarm(d);
    return rc == MPI_SUCCESS ? 0 : mpi_fail(d, rc, what, e);
}

int sf_ranks_prefix_pass(sf_ranks *d, float *v, size_t n, const char *what, sf_err *e) {
    if (!d || d->size == 1) return 0;
    size_t piece = INT_MAX / 2;
    if (!sums_room(d, n / piece + 1)) return sf_err_set(e, SF_ENOMEM, "out of memory");
    if (d->nsums == 0) d->first[0] = 0;
    int rc = MPI_SUCCESS;
    // The send completes before the broadcast may write into v; the next
    // rank takes it as soon as its own terms of v are ready.
    arm(d, what);
    for (size_t at = 0; rc == MPI_SUCCESS && d->rank + 1 < d->size && at < n; at += piece) {
        int part = n - at > piece ? (int)piece : (int)(n - at);
        rc = MPI_Send(v + at, part, MPI_FLOAT, d->rank + 1, PREFIX_TAG, d->sums);
    }
    disarm(d);
    for (size_t at = 0; rc == MPI_SUCCESS && at < n; at += piece) {
        int part = n - at > piece ? (int)piece : (int)(n - at);
        rc = MPI_Ibcast(v + at, part, MPI_FLOAT, d->size - 1, d->sums, &d->req[d->nreq]);
        if (rc == MPI_SUCCESS) d->nreq++;
    }
    d->first[++d->nsums] = d->nreq;
    return rc == MPI_SUCCESS ? 0 : mpi_fail(d, rc, what, e);
}

int sf_ranks_sum_test(sf_ranks *d, size_t k, bool *done, const char *what, sf_err *e) {
    *done = true;
    if (!d || d->size == 1 || k >= d->nsums) return 0;
    size_t lo = d->first[k];
    int flag = 0, rc = MPI_Testall((int)(d->first[k + 1] - lo), d->req + lo, &flag, MPI_STATUSES_IGNORE);
    *done = flag != 0;
    return rc == MPI_SUCCESS ? 0 : mpi_fail(d, rc, what, e);
}

int sf_ranks_sum_finish(sf_ranks *d, const char *what, sf_err *e) {
    if (!d || d->size == 1 || d->nsums == 0) return 0;
    arm(d, what);
    int rc = MPI_Waitall((int)d->nreq, d->req, MPI_STATUSES_IGNORE);
    disarm(d);
    d->nsums = d->nreq = 0;
    return rc == MPI_SUCCESS ? 0 : mpi_fail(d, rc, what, e);
}

int sf_ranks_min_u64(sf_ranks *d, uint64_t *v, size_t n, const char *what, sf_err *e) {
    return d && d->size > 1 ? reduce(d, d->comm, v, n, sizeof *v, MPI_UINT64_T, MPI_MIN, what, e) : 0;
}

int sf_ranks_node_same(sf_ranks *d, const void *buf, size_t n, bool *same, const char *what, sf_err *e) {
    *same = true;
    if (!d || d->local_size == 1 || n == 0) return 0;
    unsigned char *all = malloc(2 * n);
    if (!all) return sf_err_set(e, SF_ENOMEM, "out of memory");
    unsigned char *any = all + n;
    memcpy(all, buf, n), memcpy(any, buf, n);
    // Bits set everywhere against bits set anywhere: equal when every rank
    // has the same bytes.
    int rc = reduce(d, d->node, all, n, 1, MPI_BYTE, MPI_BAND, what, e);
    if (!rc) rc = reduce(d, d->node, any, n, 1, MPI_BYTE, MPI_BOR, what, e);
    if (!rc) *same = memcmp(all, any, n) == 0;
    free(all);
    return rc;
}

int sf_ranks_bcast(sf_ranks *d, void *buf, size_t n, const char *what, sf_err *e) {
    if (!d || d->size == 1) return 0;
    if (n > INT_MAX)
        return sf_err_set(e, SF_EINVAL, "%s: %zu bytes, more than the %d one broadcast takes", what, n, INT_MAX);
    arm(d, what);
    int rc = MPI_Bcast(buf, (int)n, MPI_BYTE, 0, d->comm);
    disarm(d);
    return rc == MPI_SUCCESS ? 0 : mpi_fail(d, rc, what, e);
}

int sf_ranks_agree(sf_ranks *d, const void *buf, size_t n, const char *what, sf_err *e) {
    if (!d || d->size == 1) return 0;
    void *root = malloc(n ? n : 1);
    if (!root) return sf_err_set(e, SF_ENOMEM, "out of memory");
    if (d->rank == 0 && n) memcpy(root, buf, n);
    int rc = sf_ranks_bcast(d, root, n, what, e);
    int64_t differ = !rc && memcmp(root, buf, n) != 0;
    free(root);
    if (!rc) rc = sf_ranks_sum_i64(d, &differ, 1, what, e);
    if (!rc && differ)
        rc = sf_err_set(e, SF_EINVAL, "rank %d of %d: %s differs on %lld rank(s) from rank 0's%s", d->rank, d->size,
                        what, (long long)differ, d->rank ? "" : " (each rank that differs says so)");
    return rc;
}

int sf_ranks_gather(sf_ranks *d, const void *mine, size_t n, void **all, size_t *lens, const char *what, sf_err *e) {
    *all = NULL;
    if (!d || d->size == 1) {
        if (!(*all = malloc(n ? n : 1))) return sf_err_set(e, SF_ENOMEM, "out of memory");
        if (n) memcpy(*all, mine, n);
        lens[0] = n;
        return 0;
    }
    bool root = d->rank == 0;
    uint64_t len = n, *got = root ? calloc((size_t)d->size, sizeof *got) : NULL;
    int *counts = root ? calloc((size_t)d->size, sizeof *counts) : NULL;
    int *displs = root ? calloc((size_t)d->size, sizeof *displs) : NULL;
    // Rank 0 says whether it can take everything (out of memory, or too
    // much for one call): every rank then goes on or gives up together.
    int64_t refused = root && (!got || !counts || !displs);
    int rc = sf_ranks_bcast(d, &refused, sizeof refused, what, e);
    if (!rc && !refused) {
        arm(d, what);
        int mrc = MPI_Gather(&len, 1, MPI_UINT64_T, got, 1, MPI_UINT64_T, 0, d->comm);
        disarm(d);
        if (mrc != MPI_SUCCESS) rc = mpi_fail(d, mrc, what, e);
    }
    int64_t verdict[2] = {0, 0};  // refused, and the bytes it was asked to take
    char *buf = NULL;
    if (!rc && !refused) {  // every rank, or none, is here
        for (int k = 0; root && k < d->size; k++) verdict[1] += (int64_t)got[k];
        if (root) verdict[0] = verdict[1] > INT_MAX || !(buf = malloc(verdict[1] ? (size_t)verdict[1] : 1));
        rc = sf_ranks_bcast(d, verdict, sizeof verdict, what, e);
        refused = verdict[0];
    }
    if (!rc && !refused) {
        for (int k = 0, at = 0; root && k < d->size; k++) counts[k] = (int)got[k], displs[k] = at, at += counts[k];
        arm(d, what);
        int mrc = MPI_Gatherv(mine, (int)n, MPI_BYTE, buf, counts, displs, MPI_BYTE, 0, d->comm);
        disarm(d);
        if (mrc != MPI_SUCCESS) rc = mpi_fail(d, mrc, what, e);
    }
    for (int k = 0; root && !refused && k < d->size; k++) lens[k] = got[k];
    free(got), free(counts), free(displs);
    if (!rc && refused)
        rc = sf_err_set(e, SF_ENOMEM, "rank %d of %d: %s: rank 0 cannot take %lld bytes from all ranks in one "
                        "gather", d->rank, d->size, what, (long long)verdict[1]);
    if (rc) free(buf);
    else *all = buf;
    return rc;
}
