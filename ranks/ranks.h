// ranks: the processes of one training job started by an MPI launcher
// (mpirun, srun). Each process is a rank with its own replicas; the trainer
// joins the ranks through these collectives. Without a launcher there is one
// rank and no handle: every function takes NULL as "one rank".
//
// Collectives are called by every rank in the same order, from one thread
// at a time. A collective that does not complete within the timeout (a rank
// died, or hangs) makes this rank print which collective and abort the job,
// so that no rank waits for ever.
#ifndef SF_DIST_H
#define SF_DIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

typedef struct sf_ranks sf_ranks;

// Whether a launcher started this process as a rank of a job (Open MPI's
// OMPI_COMM_WORLD_SIZE, PMIx's PMIX_RANK, or PMI's PMI_SIZE is set).
bool sf_ranks_launched(void);
// Joins the job (MPI_Init_thread). timeout_s bounds every collective. In a
// build without MPI, an error that says so.
int sf_ranks_open(sf_ranks **out, double timeout_s, sf_err *e);
// Leaves the job after every rank finished well (MPI_Finalize).
void sf_ranks_close(sf_ranks *d);
// Ends every rank of the job with a non-zero status (MPI_Abort), after this
// rank failed: the others may be waiting in a collective for it.
_Noreturn void sf_ranks_abort(sf_ranks *d, int status);

// Bounds a blocking call that waits for the other ranks outside these
// collectives (NCCL's communicator set-up) with the same watchdog.
void sf_ranks_watch(sf_ranks *d, const char *what);
void sf_ranks_unwatch(sf_ranks *d);
double sf_ranks_timeout(const sf_ranks *d);  // seconds; 0 for NULL

// The CPU cores this rank may use: those it is bound to (taskset, the
// launcher's --bind-to), shared out among the ranks on its machine when
// they are all bound to the same ones (unbound, or one container's).
uint32_t sf_ranks_cores(const sf_ranks *d);

int sf_ranks_rank(const sf_ranks *d);  // 0 for NULL
int sf_ranks_size(const sf_ranks *d);  // 1 for NULL
// This rank among the ranks on its machine, and how many there are (they
// share its cores and GPUs).
int sf_ranks_local_rank(const sf_ranks *d);  // 0 for NULL
int sf_ranks_local_size(const sf_ranks *d);  // 1 for NULL
bool sf_ranks_has_mpi(void);          // built with MPI

// In-place sums over the ranks; what names the collective in errors.
int sf_ranks_sum_i64(sf_ranks *d, int64_t *v, size_t n, const char *what, sf_err *e);
int sf_ranks_sum_f64(sf_ranks *d, double *v, size_t n, const char *what, sf_err *e);
// Float sums in rank order, left to right, so that they do not depend on
// how the terms are spread over the ranks: rank k > 0 receives the sum of
// ranks 0 .. k - 1 into v (n floats; prefix_recv, blocking, nothing on rank
// 0), adds its own terms to it one by one, and prefix_pass sends the sum on
// to rank k + 1 and starts the broadcast of the last rank's sum into v on
// every rank: a sum in flight (on a communicator of its own) that runs while
// the caller computes. Every rank passes the same sums in the same order, one
// thread at a time, then finishes them together; between, v is MPI's. Each
// pass and test also lets the sums passed before it progress (MPI moves
// data only inside its calls). pass: 0 or SF_EIO/SF_ENOMEM; a failed pass
// leaves the sums before it in flight.
int sf_ranks_prefix_recv(sf_ranks *d, float *v, size_t n, const char *what, sf_err *e);
int sf_ranks_prefix_pass(sf_ranks *d, float *v, size_t n, const char *what, sf_err *e);
// Whether sum k (0 is the first started since the last finish) is done.
int sf_ranks_sum_test(sf_ranks *d, size_t k, bool *done, const char *what, sf_err *e);
// Waits for every sum started (under the watchdog, as a collective); then
// none is in flight.
int sf_ranks_sum_finish(sf_ranks *d, const char *what, sf_err *e);
int sf_ranks_min_u64(sf_ranks *d, uint64_t *v, size_t n, const char *what, sf_err *e);
// Whether every rank on this machine has the same n bytes in buf (they see
// the same GPUs, say); true for NULL.
int sf_ranks_node_same(sf_ranks *d, const void *buf, size_t n, bool *same, const char *what, sf_err *e);
// Rank 0's n bytes into every rank's buf.
int sf_ranks_bcast(sf_ranks *d, void *buf, size_t n, const char *what, sf_err *e);
// Every rank has the same n bytes in buf (a setting, a checksum), or every
// rank gets an error naming what differs and on how many ranks.
int sf_ranks_agree(sf_ranks *d, const void *buf, size_t n, const char *what, sf_err *e);
// Rank 0 gets every rank's bytes, in rank order, in *all (malloc'd) with
// rank k's length in lens[k] (lens: size entries, rank 0 only); the others
// send theirs and get *all NULL.
int sf_ranks_gather(sf_ranks *d, const void *mine, size_t n, void **all, size_t *lens, const char *what, sf_err *e);

#endif
