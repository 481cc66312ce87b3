// Packing streams: the peak resident memory of `seqfeed pack` reading a
// generated CSV from a pipe stays under a fixed bound, far below the CSV size.
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/common.h"

#define CSV_MB 150
// Measured (2026-12-06): 19 MB as a user runs it; 52 MB under meson's
// MALLOC_PERTURB_, which touches every allocated byte, also those that
// pack reserves and seldom writes: the writer's compression slots, filter
// buffers and zstd contexts, two read buffers of 2 MiB (pack/csv.c
// PARALLEL_BUF) and the arrays of the helper's parts of them, besides the
// binary and its libraries. 72 leaves room; 150 MB of CSV does not fit.
#define RSS_LIMIT_MB 72

// Sanitizer runtimes keep shadow memory and quarantines: the bound is only
// meaningful in a plain build.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CHECK_RSS 0
#else
#define CHECK_RSS 1
#endif

int main(int argc, char **argv) {
    const char *seqfeed = getenv("SEQFEED");
    if (!seqfeed || argc < 2) {
        fprintf(stderr, "usage: SEQFEED=... test_memory OUTDIR\n");
        return 2;
    }
    char out[4096];
    snprintf(out, sizeof out, "%s/memory.sfpack", argv[1]);
    int fds[2];
    if (pipe(fds) != 0) return 2;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[0], 0);
        close(fds[0]);
        close(fds[1]);
        execl(seqfeed, "seqfeed", "pack", "-", "-o", out, "--threads", "2", "-q", (char *)NULL);
        _exit(127);
    }
    close(fds[0]);
    signal(SIGPIPE, SIG_IGN);
    FILE *f = fdopen(fds[1], "w");
    fputs("a,b,c,d\n", f);
    uint64_t bytes = 8, x = 88172645463325252ull;
    double walk[4] = {0};
    while (bytes < (uint64_t)CSV_MB << 20) {
        for (int c = 0; c < 4; c++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            walk[c] += (double)(x >> 11) * 0x1p-53 - 0.5;
        }
        int n = fprintf(f, "%.7g,%.7g,%.7g,%.7g\n", walk[0], walk[1], walk[2], walk[3]);
        if (n < 0) break;
        bytes += (uint64_t)n;
    }
    fclose(f);
    int status;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "pack failed with status %d", status);
    long rss_mb = ru.ru_maxrss / 1024;
    printf("packed %llu MB of CSV with a peak RSS of %ld MB\n", (unsigned long long)(bytes >> 20), rss_mb);
    CHECK(!CHECK_RSS || rss_mb < RSS_LIMIT_MB, "peak RSS %ld MB exceeds %d MB", rss_mb, RSS_LIMIT_MB);
    unlink(out);
    return TEST_EXIT();
}
