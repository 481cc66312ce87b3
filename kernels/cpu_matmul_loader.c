// Finds and loads the oneDNN module (cpu_matmul.c, built as seqfeed-onednn.so)
// the first time a command asks about bf16: next to libseqfeed.so or the
// program (sf_module_entry), or where it is installed, or at
// $SEQFEED_ONEDNN_MODULE. A build without oneDNN has
// no module, and every function here says so.
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const sf_matmul_table *table;
static sf_err why;

static void load(void) {
    if (!SF_ONEDNN_BUILT) {
        sf_err_set(&why, SF_EUSAGE, "seqfeed was built without oneDNN (hint: apt-get install libdnnl-dev, configure "
                   "the build again and rebuild)");
        return;
    }
    sf_matmul_module_fn entry = (sf_matmul_module_fn)sf_module_entry(
        "seqfeed-onednn.so", "SEQFEED_ONEDNN_MODULE", SF_ONEDNN_MODULE_INSTALLED, "the oneDNN module",
        "sf_matmul_module", &why);
    if (entry) table = entry();
}

static const sf_matmul_table *loaded(void) {
    pthread_once(&once, load);
    return table;
}

bool sf_matmul_available(char *what, size_t n) {
    if (loaded()) return table->available(what, n);
    snprintf(what, n, "none: %s", why.msg);
    return false;
}

sf_bf16_kind sf_matmul_kind(void) { return loaded() ? table->kind() : SF_BF16_NONE; }

int sf_matmul_open(sf_matmul **out, sf_err *e) {
    *out = NULL;
    if (loaded()) return table->open(out, e);
    return sf_err_set(e, SF_EUSAGE, "--precision bf16: %s; or use --precision fp32", why.msg);
}

void sf_matmul_close(sf_matmul *mm) {
    if (mm) table->close(mm);  // only a loaded module opens one
}

void sf_matmul_bf16(sf_matmul *mm, float *C, const sf_bf16 *A, const sf_bf16 *B, size_t M, size_t N, size_t K, bool ta,
                    bool tb, bool accumulate) {
    table->bf16(mm, C, A, B, M, N, K, ta, tb, accumulate);
}

void sf_matmul_pack(sf_matmul *mm, int slot, const sf_bf16 *B, size_t K, size_t N, bool tb, size_t rows) {
    table->pack(mm, slot, B, K, N, tb, rows);
}

void sf_matmul_bf16_packed(sf_matmul *mm, int slot, float *C, const sf_bf16 *A, size_t M, bool accumulate) {
    table->bf16_packed(mm, slot, C, A, M, accumulate);
}

// oneDNN's AMX layouts block K by 32 and N by 64 at most (measured: 180 x
// 720 packs into 192 x 768).
size_t sf_matmul_packed_bytes(size_t K, size_t N) { return (K + 63) / 64 * 64 * ((N + 63) / 64 * 64) * sizeof(sf_bf16); }

int sf_matmul_status(const sf_matmul *mm, sf_err *e) { return table->status(mm, e); }

bool sf_matmul_loaded(void) { return loaded() != NULL; }

bool sf_matmul_sgemm(bool ta, bool tb, size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda,
                     const float *B, size_t ldb, float beta, float *C, size_t ldc) {
    return loaded() && table->sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) == 0;
}

double sf_matmul_rate(size_t n, bool bf16, int threads, double seconds, bool *steady) {
    *steady = false;
    return loaded() ? table->rate(n, bf16, threads, seconds, steady) : 0;
}
