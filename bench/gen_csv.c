// Writes a CSV of random walks for benchmarks: ROWS rows of COLS columns,
// printed with %.6g (like a typical export), optionally a series column.
// usage: gen_csv ROWS COLS [SERIES] > out.csv
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static double uniform(void) {  // xorshift64*, in [-0.5, 0.5)
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (double)((rng * 2685821657736338717ull) >> 11) * 0x1p-53 - 0.5;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: gen_csv ROWS COLS [SERIES] > out.csv\n");
        return 2;
    }
    long long rows = atoll(argv[1]);
    int cols = atoi(argv[2]), series = argc > 3 ? atoi(argv[3]) : 0;
    if (rows <= 0 || cols <= 0 || cols > 1000 || series < 0) {
        fprintf(stderr, "gen_csv: bad arguments\n");
        return 2;
    }
    static char buf[1 << 20];
    setvbuf(stdout, buf, _IOFBF, sizeof buf);
    double *x = calloc((size_t)cols, sizeof *x);
    if (series) printf("id,");
    for (int c = 0; c < cols; c++) printf("c%d%s", c, c + 1 < cols ? "," : "\n");
    for (long long r = 0; r < rows; r++) {
        if (series) printf("s%lld,", r * series / rows);
        for (int c = 0; c < cols; c++) {
            x[c] += uniform();
            printf("%.6g%s", 100 + x[c], c + 1 < cols ? "," : "\n");
        }
    }
    free(x);
    return 0;
}
