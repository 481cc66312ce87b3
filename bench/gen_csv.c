// Writes a CSV of random walks for benchmarks: ROWS rows of COLS columns,
// printed with %.6g (like a typical export), optionally a series column.
// usage: gen_csv [--full | --digits N] ROWS COLS [SERIES] > out.csv
//   --full      round each value to float32 and print it with %.9g, which
//               round-trips every bit of the float32: the "hard" data with
//               full-precision mantissas
//   --digits N  print with %.Ng instead of %.6g (1 to 17)
// The output is the same for the same arguments (fixed seed).
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static double uniform(void) {  // xorshift64*, in [-0.5, 0.5)
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (double)((rng * 2685821657736338717ull) >> 11) * 0x1p-53 - 0.5;
}

static int usage(void) {
    fprintf(stderr, "usage: gen_csv [--full | --digits N] ROWS COLS [SERIES] > out.csv\n");
    return 2;
}

int main(int argc, char **argv) {
    int digits = 6, full = 0, a = 1;
    for (; a < argc && argv[a][0] == '-' && argv[a][1] == '-'; a++) {
        if (!strcmp(argv[a], "--full")) {
            full = 1;
        } else if (!strcmp(argv[a], "--digits") && a + 1 < argc) {
            digits = atoi(argv[++a]);
            if (digits < 1 || digits > 17) {
                fprintf(stderr, "gen_csv: --digits wants 1 to 17\n");
                return 2;
            }
        } else {
            return usage();
        }
    }
    if (argc - a < 2 || argc - a > 3) return usage();
    long long rows = atoll(argv[a]);
    int cols = atoi(argv[a + 1]), series = argc - a > 2 ? atoi(argv[a + 2]) : 0;
    if (rows <= 0 || cols <= 0 || cols > 1000 || series < 0) {
        fprintf(stderr, "gen_csv: bad arguments\n");
        return 2;
    }
    static char buf[1 << 20];
    setvbuf(stdout, buf, _IOFBF, sizeof buf);
    double *x = calloc((size_t)cols, sizeof *x);
    if (!x) return 1;
    if (series) printf("id,");
    for (int c = 0; c < cols; c++) printf("c%d%s", c, c + 1 < cols ? "," : "\n");
    for (long long r = 0; r < rows; r++) {
        if (series) printf("s%lld,", r * series / rows);
        for (int c = 0; c < cols; c++) {
            x[c] += uniform();
            const char *sep = c + 1 < cols ? "," : "\n";
            if (full) printf("%.9g%s", (double)(float)(100 + x[c]), sep);
            else printf("%.*g%s", digits, 100 + x[c], sep);
        }
    }
    free(x);
    if (fflush(stdout) || ferror(stdout)) {
        perror("gen_csv: write");
        return 1;
    }
    return 0;
}
