// Decode benchmark: how fast one thread turns the stored chunks of an
// .sfpack file back into float32, against a plain memcpy of the same size.
//
// usage: decode_bench FILE.sfpack [--seconds S] [--whole] [--json]
//
// Every chunk's stored bytes are read into memory first (no I/O is timed).
// Then passes alternate: one pass decodes every chunk with one thread and one
// sf_pack_dctx (CRC check + zstd + unfilter), the next copies the same number
// of decoded bytes with memcpy, chunk by chunk, from an in-memory copy of the
// decoded file; this repeats until the decode passes have taken S seconds
// (default 1) and at least 3 of each ran. The best pass of each is reported:
//   decode GB/s  decoded float32 bytes per second
//   stored GB/s  stored (compressed) bytes consumed per second
//   memcpy GB/s  the ceiling: same bytes, same destination, plain memcpy
//   ratio        decode / memcpy
// Each figure is given twice: by the wall clock and by this thread's CPU time
// (CLOCK_THREAD_CPUTIME_ID), which leaves out the time other processes held
// the core; on a shared, busy machine the CPU-time figures are the ones to
// compare (they still include cache and memory-bandwidth contention).
// By default every chunk is decoded into the same chunk-sized buffer (how a
// streaming loader uses it); --whole decodes into one array of the whole
// file's size instead, and memcpy then writes there too.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pack/pack.h"

// CPU time of this thread: unlike the wall clock it does not count the time
// other processes hold the core, so it stays meaningful on a busy machine.
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
    const char *path = NULL;
    double seconds = 1.0;
    int json = 0, whole = 0;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--json")) json = 1;
        else if (!strcmp(argv[a], "--whole")) whole = 1;
        else if (!strcmp(argv[a], "--seconds") && a + 1 < argc) seconds = atof(argv[++a]);
        else if (argv[a][0] == '-' || path) {
            fprintf(stderr, "usage: decode_bench FILE.sfpack [--seconds S] [--whole] [--json]\n");
            return 2;
        } else path = argv[a];
    }
    if (!path || !(seconds > 0)) {
        fprintf(stderr, "usage: decode_bench FILE.sfpack [--seconds S] [--whole] [--json]\n");
        return 2;
    }

    sf_err e = {0};
    sf_pack *p;
    if (sf_pack_open(&p, path, &e)) {
        fprintf(stderr, "decode_bench: %s\n", e.msg);
        return 1;
    }
    const sf_pack_info *in = sf_pack_get_info(p);
    uint64_t n = in->nchunks, raw = 0, stored = 0;
    size_t max_raw = 0;
    size_t *soff = calloc(n + 1, sizeof *soff), *roff = calloc(n + 1, sizeof *roff);
    if (!soff || !roff) return 1;
    for (uint64_t i = 0; i < n; i++) {
        sf_chunk c = sf_pack_chunk_locate(p, i);
        size_t r = sf_pack_chunk_raw_size(p, i);
        soff[i] = stored, roff[i] = raw;
        stored += c.stored_size, raw += r;
        if (r > max_raw) max_raw = r;
    }
    soff[n] = stored, roff[n] = raw;
    if (n == 0 || raw == 0) {
        fprintf(stderr, "decode_bench: %s has no data\n", path);
        return 1;
    }

    // Stored bytes of all chunks, back to back (+64 so that no buffer is empty).
    uint8_t *sbuf = malloc(stored + 64);
    float *src = malloc(raw);  // decoded file: the memcpy source
    float *out = malloc(whole ? raw : max_raw);
    sf_pack_dctx *d = sf_pack_dctx_create();
    if (!sbuf || !src || !out || !d) {
        fprintf(stderr, "decode_bench: out of memory\n");
        return 1;
    }
    for (uint64_t i = 0; i < n; i++)
        if (sf_pack_chunk_read(p, i, sbuf + soff[i], &e)) {
            fprintf(stderr, "decode_bench: %s\n", e.msg);
            return 1;
        }
    // The first decode fills the memcpy source (and warms everything up).
    for (uint64_t i = 0; i < n; i++)
        if (sf_pack_chunk_decode(d, p, i, sbuf + soff[i], (float *)((char *)src + roff[i]), &e)) {
            fprintf(stderr, "decode_bench: %s\n", e.msg);
            return 1;
        }
    if (whole) memset(out, 0, raw);  // fault the pages in before timing

    enum { MAXPASS = 100000 };
    static double tdec[MAXPASS], tcpy[MAXPASS], cdec[MAXPASS], ccpy[MAXPASS];
    int passes = 0;
    double spent = 0;
    volatile float sink = 0;
    while (passes < MAXPASS && (passes < 3 || spent < seconds)) {
        double c0 = cpu_now(), t0 = sf_now();
        for (uint64_t i = 0; i < n; i++) {
            float *dst = whole ? (float *)((char *)out + roff[i]) : out;
            if (sf_pack_chunk_decode(d, p, i, sbuf + soff[i], dst, &e)) {
                fprintf(stderr, "decode_bench: %s\n", e.msg);
                return 1;
            }
        }
        double t1 = sf_now(), c1 = cpu_now();
        sink += out[0];
        for (uint64_t i = 0; i < n; i++) {
            char *dst = whole ? (char *)out + roff[i] : (char *)out;
            memcpy(dst, (char *)src + roff[i], roff[i + 1] - roff[i]);
        }
        double t2 = sf_now(), c2 = cpu_now();
        sink += out[1 % (max_raw / 4)];
        tdec[passes] = t1 - t0;
        tcpy[passes] = t2 - t1;
        cdec[passes] = c1 - c0;
        ccpy[passes] = c2 - c1;
        spent += t1 - t0;
        passes++;
    }
    (void)sink;

    double bdec = tdec[0], bcpy = tcpy[0], bcdec = cdec[0], bccpy = ccpy[0];
    for (int i = 1; i < passes; i++) {
        if (tdec[i] < bdec) bdec = tdec[i];
        if (tcpy[i] < bcpy) bcpy = tcpy[i];
        if (cdec[i] < bcdec) bcdec = cdec[i];
        if (ccpy[i] < bccpy) bccpy = ccpy[i];
    }
    double dec_cpu = raw / bcdec / 1e9, cpy_cpu = raw / bccpy / 1e9;
    double mdec = median(tdec, passes), mcpy = median(tcpy, passes);
    double dec_gbs = raw / bdec / 1e9, sto_gbs = stored / bdec / 1e9, cpy_gbs = raw / bcpy / 1e9;
    double dec_med = raw / mdec / 1e9, cpy_med = raw / mcpy / 1e9;
    if (json) {
        printf("{\"file\": \"%s\", \"filter\": \"%s\", \"zstd_level\": %d, \"chunks\": %" PRIu64
               ", \"raw_bytes\": %" PRIu64 ", \"stored_bytes\": %" PRIu64 ", \"compression_ratio\": %.4f"
               ", \"into\": \"%s\", \"passes\": %d, \"decode_gbps\": %.4f, \"stored_gbps\": %.4f"
               ", \"memcpy_gbps\": %.4f, \"decode_vs_memcpy\": %.4f, \"decode_gbps_median\": %.4f"
               ", \"memcpy_gbps_median\": %.4f, \"decode_gbps_cpu\": %.4f, \"memcpy_gbps_cpu\": %.4f"
               ", \"decode_vs_memcpy_cpu\": %.4f}\n",
               path, sf_filter_name((int)in->filter), in->level, n, raw, stored, (double)raw / stored,
               whole ? "whole" : "chunk", passes, dec_gbs, sto_gbs, cpy_gbs, dec_gbs / cpy_gbs, dec_med, cpy_med, dec_cpu, cpy_cpu,
               dec_cpu / cpy_cpu);
    } else {
        printf("%s: %" PRIu64 " chunks, %.1f MB float32 stored in %.1f MB (%.2fx), filter %s, level %d\n", path, n,
               raw / 1e6, stored / 1e6, (double)raw / stored, sf_filter_name((int)in->filter), in->level);
        printf("decode (1 thread, into %s): %.2f GB/s of float32, %.2f GB/s of stored bytes (best of %d passes; "
               "median %.2f)\n",
               whole ? "one whole-file array" : "a chunk buffer", dec_gbs, sto_gbs, passes, dec_med);
        printf("memcpy of the same bytes:    %.2f GB/s (median %.2f); decode / memcpy = %.3f\n", cpy_gbs, cpy_med,
               dec_gbs / cpy_gbs);
        printf("by thread CPU time:          decode %.2f GB/s, memcpy %.2f GB/s; decode / memcpy = %.3f\n", dec_cpu,
               cpy_cpu, dec_cpu / cpy_cpu);
    }
    sf_pack_dctx_free(d);
    free(out);
    free(src);
    free(sbuf);
    free(soff);
    free(roff);
    sf_pack_close(p);
    return 0;
}
