// The CPU backend cuts a batch into parts, one per thread: predictions,
// loss and gradients (dropout on) agree with one part's; opening and
// predicting at once, hundreds of times, never hangs (a job posted before a
// helper thread first waits must still reach it). With the argument bf16
// the same in bf16 (skipped without bf16 products), to the same bounds:
// the parts' products sum their rows as the whole batch's do.
// The model has an LSTM and a GRU.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "tests/common.h"

enum { B = 24, T = 7, I = 3, O = 2 };

int main(int argc, char **argv) {
    bool bf16 = argc > 1 && !strcmp(argv[1], "bf16");
    enum sf_precision precision = bf16 ? SF_PRECISION_BF16 : SF_PRECISION_FP32;
    char what[160];
    if (bf16 && !sf_matmul_available(what, sizeof what)) {
        printf("skip: %s\n", what);
        return 77;
    }
    const double tol_pred = 1e-6, tol_loss = 1e-6, tol_grad = 1e-5;
    sf_model m;
    sf_err e = {0};
    if (sf_model_parse(&m, "lstm:12,dropout:0.3,gru:9,dropout:0.2,dense", I, O, &e)) {  // both recurrent kinds
        CHECK(0, "%s", e.msg);
        return TEST_EXIT();
    }
    float *w = malloc(m.nparams * sizeof(float)), *x = malloc(B * T * I * sizeof(float)), *y = malloc(B * O * sizeof(float));
    uint64_t s = 5;
    for (size_t k = 0; k < (size_t)B * T * I; k++) x[k] = (float)((sf_splitmix64(&s) >> 40) * 0x1p-23) - 1;
    for (size_t k = 0; k < (size_t)B * O; k++) y[k] = (float)((sf_splitmix64(&s) >> 40) * 0x1p-23) - 1;
    sf_model_init(&m, w, 2);
    sf_replica *one, *three;
    if (sf_backend_cpu.open(&one, &m, B, T, &(sf_replica_opts){.threads = 1, .precision = precision}, &e) ||
        sf_backend_cpu.open(&three, &m, B, T, &(sf_replica_opts){.threads = 3, .precision = precision}, &e)) {
        CHECK(0, "%s", e.msg);
        return TEST_EXIT();
    }
    sf_backend_cpu.load(one, w, NULL, NULL, &e);
    sf_backend_cpu.load(three, w, NULL, NULL, &e);
    float p1[B * O], p3[B * O];
    CHECK(!sf_backend_cpu.predict(one, p1, x, B, &e) && !sf_backend_cpu.predict(three, p3, x, B, &e), "%s", e.msg);
    double worst = 0;
    for (int k = 0; k < B * O; k++) worst = fmax(worst, fabs(p1[k] - p3[k]));
    CHECK(worst <= tol_pred, "predictions of 3 parts differ from one part's by %.3g", worst);
    double l1, l3;
    CHECK(!sf_backend_cpu.train_step(one, x, y, B, B, 77, &l1, &e) &&
          !sf_backend_cpu.train_step(three, x, y, B, B, 77, &l3, &e), "%s", e.msg);
    CHECK(fabs(l1 - l3) <= tol_loss * l1, "loss %.9g with one part, %.9g with 3 (the same dropout masks?)", l1, l3);
    const float *g1 = sf_backend_cpu.gradients(one), *g3 = sf_backend_cpu.gradients(three);
    double num = 0, den = 0;
    for (size_t k = 0; k < m.nparams; k++) num += (g1[k] - g3[k]) * (g1[k] - g3[k]), den += (double)g1[k] * g1[k];
    CHECK(sqrt(num) <= tol_grad * sqrt(den), "gradients of 3 parts differ by %.3g of their norm", sqrt(num / den));
    printf("%s: 3 parts against one: predictions %.3g, loss %.3g, gradients %.3g\n", sf_precision_name(precision),
           worst, fabs(l1 - l3) / l1, sqrt(num / den));
    // A batch smaller than the parts leaves some parts empty; a part of
    // other rows than its pass was opened for (a partial batch) reuses
    // weights packed for the full one.
    CHECK(!sf_backend_cpu.predict(three, p3, x, 2, &e), "%s", e.msg);
    CHECK(memcmp(p3, p1, 2 * O * sizeof(float)) == 0 || fabs(p3[0] - p1[0]) <= tol_pred, "a 2-row batch");
    // An update remakes the packed recurrent kernels (fp32) on each thread, a
    // slice of the weights each: the next step's gradients are those of a
    // replica loaded with the updated weights, bit for bit.
    sf_replica *fresh;
    float *wu = malloc(m.nparams * sizeof(float)), *ga = malloc(m.nparams * sizeof(float));
    CHECK(!sf_backend_cpu.apply(three, &(sf_adam){.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.999f, .epsilon = 1e-7f}, 1,
                                &e) &&
              !sf_backend_cpu.save(three, wu, NULL, NULL, &e) &&
              !sf_backend_cpu.open(&fresh, &m, B, T, &(sf_replica_opts){.threads = 3, .precision = precision}, &e),
          "%s", e.msg);
    sf_backend_cpu.load(fresh, wu, NULL, NULL, &e);
    CHECK(!sf_backend_cpu.train_step(three, x, y, B, B, 78, &l3, &e) &&
              !sf_backend_cpu.train_step(fresh, x, y, B, B, 78, &l1, &e),
          "%s", e.msg);
    memcpy(ga, sf_backend_cpu.gradients(three), m.nparams * sizeof(float));
    CHECK(memcmp(ga, sf_backend_cpu.gradients(fresh), m.nparams * sizeof(float)) == 0 && l1 == l3,
          "gradients after an update differ from a replica loaded with its weights");
    sf_backend_cpu.close(fresh);
    free(wu), free(ga);
    sf_backend_cpu.close(one);
    sf_backend_cpu.close(three);
    for (int k = 0; k < 300; k++) {
        if (sf_backend_cpu.open(&three, &m, B, T, &(sf_replica_opts){.threads = 3, .precision = precision}, &e)) break;
        sf_backend_cpu.load(three, w, NULL, NULL, &e);
        sf_backend_cpu.predict(three, p3, x, B, &e);
        sf_backend_cpu.close(three);
    }
    // A replica given parts (train_parts) keeps a gradient buffer per part:
    // 12 parts of 2 windows on 2 threads hold 10 buffers more than 2 threads
    // alone, and a memory budget must count them.
    sf_replica_opts plain = {.threads = 2, .precision = precision}, parted = plain;
    sf_replica_opts_parts(&parted, 12, B, 1);
    uint64_t without = sf_backend_cpu.host_memory(&m, B, T, &plain), with = sf_backend_cpu.host_memory(&m, B, T, &parted);
    CHECK(parted.parts == 12 && parted.part_batch == 2 && with - without == 10 * m.nparams * sizeof(float),
          "host memory %llu with 12 parts, %llu without", (unsigned long long)with, (unsigned long long)without);
    free(w), free(x), free(y);
    return TEST_EXIT();
}
