// The diagnosis on made-up runs whose answer is known: no verdict on a
// short run; stalls under the replicas' wake-up p99 apart as noise, unless
// they add up; a stage limits only near the replicas' demand; compute bound
// only when compute dominates, other's parts named; a hint only on what was
// measured (no batch hint, no more threads without a free core, cores
// asked for when the pipeline is starved of them).
#include <math.h>
#include <string.h>

#include "tests/common.h"
#include "train/train.h"

typedef struct {
    sf_replica_profile rep;
    sf_pipe_stats pipe;
    sf_pipe_replica_stats pr;
    sf_pipe_opts po;
    sf_cpu_use cpu;
} run;

// A run of `steps` steps over `wall` s, all compute, on 2 cores this
// process used 1.0 of and others 0.1; a quiet pipeline; replicas woke up
// 1000 times within 100 us.
static run quiet(uint64_t steps, double wall) {
    run r = {0};
    r.rep.steps = steps, r.rep.wall = wall, r.rep.total[SF_PHASE_COMPUTE] = wall;
    r.rep.share_sd[SF_PHASE_COMPUTE] = 0.02, r.rep.input_se = 0.001;
    r.rep.wait_count[0] = steps;
    r.pr.wake[sf_lat_bucket(100e-6)] = 1000;
    r.po = sf_pipe_opts_default();
    r.po.decoders = 1, r.po.lanes = 1, r.po.io.depth = 4, r.po.prefetch = 4;
    r.cpu = (sf_cpu_use){.wall = wall, .process = 1.0 * wall, .busy = 1.1 * wall, .cores = 2};
    r.pipe.read_busy = 0.01 * wall, r.pipe.read_cpu = 0.01 * wall;
    return r;
}

// Input stalls of `each` seconds on `n` steps, taken from compute.
static void stalls(run *r, double each, uint64_t n) {
    int b = sf_lat_bucket(each);
    r->rep.wait_count[b] += n, r->rep.wait_count[0] -= n;
    r->rep.wait_sum[b] += each * (double)n;
    r->rep.total[SF_PHASE_INPUT] += each * (double)n, r->rep.total[SF_PHASE_COMPUTE] -= each * (double)n;
}

static sf_diagnosis diagnose(run *r) {
    sf_diagnosis d;
    sf_diagnose_in in = {.replicas = &r->rep, .R = 1, .pipes = &r->pipe, .npipes = 1, .pipe_replicas = &r->pr,
                         .pipe = &r->po, .cpu = r->cpu};
    sf_diagnose(&d, &in);
    return d;
}

#define HAS(d, s) CHECK(strstr((d).text, s), "expected \"%s\" in: %s", s, (d).text)
#define HASNT(d, s) CHECK(!strstr((d).text, s), "did not expect \"%s\" in: %s", s, (d).text)

int main(void) {
    // Too short: steps, then time.
    run r = quiet(20, 5);
    sf_diagnosis d = diagnose(&r);
    CHECK(!d.judged && !strcmp(d.classification, "too short to judge"), "20 steps judged: %s", d.text);
    HAS(d, "too short to judge: 20 steps over 5.00 s (need 50 steps and 1 s)");
    HASNT(d, "Hint");
    HASNT(d, "bound");
    r = quiet(500, 0.5), d = diagnose(&r);
    CHECK(!d.judged, "half a second judged: %s", d.text);

    // Compute bound: no hint (the batch hint's premise is not measured here).
    r = quiet(1000, 10), d = diagnose(&r);
    CHECK(d.judged && !strcmp(d.limit, "compute"), "compute: %s", d.text);
    HAS(d, "not input bound");
    HAS(d, "Steps are compute bound: forward and backward 100% (+-2 over steps)");
    HASNT(d, "Hint");

    // Other dominates: named, with its parts.
    r = quiet(1000, 10);
    r.rep.total[SF_PHASE_COMPUTE] = 3, r.rep.total[SF_PHASE_OTHER] = 7;
    r.rep.other_part[SF_OTHER_BARRIER] = 6.5, r.rep.other_part[SF_OTHER_HOOK] = 0.2;
    d = diagnose(&r);
    CHECK(!strcmp(d.limit, "other"), "other: %s", d.text);
    HAS(d, "waiting at barriers for the other replicas 65%");
    HASNT(d, "compute bound");

    // Short stalls under the wake-ups' p99 (100 us's bucket): noise, apart.
    r = quiet(1000, 10);
    stalls(&r, 80e-6, 1000);
    d = diagnose(&r);
    CHECK(d.noise_share > 0.007 && d.input_share < 1e-9 && !strcmp(d.classification, "not input bound"),
          "noise: %s", d.text);
    HAS(d, "scheduler noise");
    // Adding up to a quarter of the time they are no noise; a windower
    // waiting for a core half the time is the cause, and others' cores.
    r = quiet(1000, 10);
    r.pr.wake[sf_lat_bucket(100e-6)] = 10, r.pr.wake[sf_lat_bucket(5e-3)] = 1000;
    stalls(&r, 4e-3, 625);
    r.pr.busy = 3, r.pr.cpu = 1, r.pr.queued = 5;
    r.cpu.busy = 2 * r.cpu.wall;  // the cores full: others took 1.0 of them
    d = diagnose(&r);
    CHECK(!strcmp(d.classification, "highly input bound") && !strcmp(d.limit, "cores"), "starved: %s", d.text);
    HAS(d, "too much to be noise");
    HAS(d, "starved of cores");
    HAS(d, "Hint: other processes used 1.00 of the 2");

    // A stage busy 31% with the replicas waiting 25%: it could feed them
    // (41% of their demand), so it limits nothing; no hint.
    r = quiet(1000, 10);
    stalls(&r, 50e-3, 50);
    r.pr.busy = 3.1, r.pr.cpu = 3.0, r.pr.queued = 0.05;
    d = diagnose(&r);
    CHECK(!strcmp(d.classification, "highly input bound") && !strcmp(d.limit, "none"), "31%%: %s", d.text);
    HAS(d, "No stage is busy enough to limit");
    HASNT(d, "Hint");

    // The windower at the demand, on a core: more lanes only with a free core.
    r = quiet(1000, 10);
    stalls(&r, 50e-3, 50);
    r.pr.busy = 7.4, r.pr.cpu = 7.3, r.pr.queued = 0.05;
    r.cpu.process = 1.9 * r.cpu.wall, r.cpu.busy = 2.0 * r.cpu.wall;
    d = diagnose(&r);
    CHECK(!strcmp(d.limit, "window"), "window: %s", d.text);
    HAS(d, "none that this machine allows");
    CHECK(!strstr(d.text, "--lanes 2") && !strstr(d.text, "--lanes 3"), "more lanes without a core: %s", d.text);
    r.cpu.process = 0.9 * r.cpu.wall, r.cpu.busy = 1.0 * r.cpu.wall, d = diagnose(&r);
    HAS(d, "Hint: --lanes 2 ");

    // The reader blocked on storage: more requests in flight, and read-ahead for them.
    r = quiet(1000, 10);
    stalls(&r, 50e-3, 80);
    r.pipe.read_busy = 9.9, r.pipe.read_cpu = 0.2, r.pipe.read_queued = 0.1;
    d = diagnose(&r);
    CHECK(!strcmp(d.limit, "read"), "read: %s", d.text);
    HAS(d, "The limiting stage is read");
    HAS(d, "--depth 10 and --prefetch 20");
    return TEST_EXIT();
}
