// A build without MPI: one rank. A run that a launcher started as one rank
// of several is refused, since each copy would train alone and write the
// same checkpoints.
#include <stdlib.h>
#include <string.h>

#include "ranks.h"

bool sf_ranks_has_mpi(void) { return false; }

int sf_ranks_open(sf_ranks **out, double timeout_s, sf_err *e) {
    (void)timeout_s;
    *out = NULL;
    return sf_err_set(e, SF_EINVAL, "started by an MPI launcher, but this seqfeed was built without MPI (hint: "
                      "install libopenmpi-dev and reconfigure with meson setup -Dmpi=enabled)");
}

void sf_ranks_close(sf_ranks *d) { (void)d; }
_Noreturn void sf_ranks_abort(sf_ranks *d, int status) {
    (void)d;
    exit(status);
}
void sf_ranks_watch(sf_ranks *d, const char *what) { (void)d, (void)what; }
void sf_ranks_unwatch(sf_ranks *d) { (void)d; }
double sf_ranks_timeout(const sf_ranks *d) { return (void)d, 0; }
uint32_t sf_ranks_cores(const sf_ranks *d) { return (void)d, sf_affinity_cores(); }
int sf_ranks_rank(const sf_ranks *d) { return (void)d, 0; }
int sf_ranks_size(const sf_ranks *d) { return (void)d, 1; }
int sf_ranks_local_rank(const sf_ranks *d) { return (void)d, 0; }
int sf_ranks_local_size(const sf_ranks *d) { return (void)d, 1; }

int sf_ranks_sum_i64(sf_ranks *d, int64_t *v, size_t n, const char *what, sf_err *e) {
    return (void)d, (void)v, (void)n, (void)what, (void)e, 0;
}
int sf_ranks_sum_f64(sf_ranks *d, double *v, size_t n, const char *what, sf_err *e) {
    return (void)d, (void)v, (void)n, (void)what, (void)e, 0;
}
int sf_ranks_prefix_recv(sf_ranks *d, float *v, size_t n, const char *what, sf_err *e) {
    return (void)d, (void)v, (void)n, (void)what, (void)e, 0;
}
int sf_ranks_prefix_pass(sf_ranks *d, float *v, size_t n, const char *what, sf_err *e) {
    return (void)d, (void)v, (void)n, (void)what, (void)e, 0;
}
int sf_ranks_sum_test(sf_ranks *d, size_t k, bool *done, const char *what, sf_err *e) {
    (void)d, (void)k, (void)what, (void)e;
    *done = true;
    return 0;
}
int sf_ranks_sum_finish(sf_ranks *d, const char *what, sf_err *e) { return (void)d, (void)what, (void)e, 0; }
int sf_ranks_min_u64(sf_ranks *d, uint64_t *v, size_t n, const char *what, sf_err *e) {
    return (void)d, (void)v, (void)n, (void)what, (void)e, 0;
}
int sf_ranks_node_same(sf_ranks *d, const void *buf, size_t n, bool *same, const char *what, sf_err *e) {
    (void)d, (void)buf, (void)n, (void)what, (void)e;
    *same = true;
    return 0;
}
int sf_ranks_bcast(sf_ranks *d, void *buf, size_t n, const char *what, sf_err *e) {
    return (void)d, (void)buf, (void)n, (void)what, (void)e, 0;
}
int sf_ranks_agree(sf_ranks *d, const void *buf, size_t n, const char *what, sf_err *e) {
    return (void)d, (void)buf, (void)n, (void)what, (void)e, 0;
}
int sf_ranks_gather(sf_ranks *d, const void *mine, size_t n, void **all, size_t *lens, const char *what, sf_err *e) {
    (void)d, (void)what;
    *all = malloc(n ? n : 1);
    if (!*all) return sf_err_set(e, SF_ENOMEM, "out of memory");
    if (n) memcpy(*all, mine, n);
    lens[0] = n;
    return 0;
}
