// A build without MPI: one rank. A run that a launcher started as one rank
// of several is refused, since each copy would train alone and write the
// same checkpoints.
#include <stdlib.h>
#include <string.h>

#include "dist.h"

bool sf_dist_has_mpi(void) { return false; }

int sf_dist_open(sf_dist **out, double timeout_s, sf_err *e) {
    (void)timeout_s;
    *out = NULL;
    return sf_err_set(e, SF_EINVAL, "started by an MPI launcher, but this seqfeed was built without MPI (hint: "
                      "install libopenmpi-dev and reconfigure with meson setup -Dmpi=enabled)");
}

void sf_dist_close(sf_dist *d) { (void)d; }
_Noreturn void sf_dist_abort(sf_dist *d, int status) {
    (void)d;
    exit(status);
}
void sf_dist_watch(sf_dist *d, const char *what) { (void)d, (void)what; }
void sf_dist_unwatch(sf_dist *d) { (void)d; }
double sf_dist_timeout(const sf_dist *d) { return (void)d, 0; }
uint32_t sf_dist_cores(const sf_dist *d) { return (void)d, sf_dist_affinity(); }
int sf_dist_rank(const sf_dist *d) { return (void)d, 0; }
int sf_dist_size(const sf_dist *d) { return (void)d, 1; }
int sf_dist_local_rank(const sf_dist *d) { return (void)d, 0; }
int sf_dist_local_size(const sf_dist *d) { return (void)d, 1; }

int sf_dist_sum_i64(sf_dist *d, int64_t *v, size_t n, const char *what, sf_err *e) {
    return (void)d, (void)v, (void)n, (void)what, (void)e, 0;
}
int sf_dist_sum_f64(sf_dist *d, double *v, size_t n, const char *what, sf_err *e) {
    return (void)d, (void)v, (void)n, (void)what, (void)e, 0;
}
int sf_dist_sum_f32(sf_dist *d, float *v, size_t n, const char *what, sf_err *e) {
    return (void)d, (void)v, (void)n, (void)what, (void)e, 0;
}
int sf_dist_min_u64(sf_dist *d, uint64_t *v, size_t n, const char *what, sf_err *e) {
    return (void)d, (void)v, (void)n, (void)what, (void)e, 0;
}
int sf_dist_node_same(sf_dist *d, const void *buf, size_t n, bool *same, const char *what, sf_err *e) {
    (void)d, (void)buf, (void)n, (void)what, (void)e;
    *same = true;
    return 0;
}
int sf_dist_bcast(sf_dist *d, void *buf, size_t n, const char *what, sf_err *e) {
    return (void)d, (void)buf, (void)n, (void)what, (void)e, 0;
}
int sf_dist_agree(sf_dist *d, const void *buf, size_t n, const char *what, sf_err *e) {
    return (void)d, (void)buf, (void)n, (void)what, (void)e, 0;
}
int sf_dist_gather(sf_dist *d, const void *mine, size_t n, void **all, size_t *lens, const char *what, sf_err *e) {
    (void)d, (void)what;
    *all = malloc(n ? n : 1);
    if (!*all) return sf_err_set(e, SF_ENOMEM, "out of memory");
    if (n) memcpy(*all, mine, n);
    lens[0] = n;
    return 0;
}
