#include <getopt.h>
#include <string.h>
#include <zstd.h>

#include "cli.h"
#include "ranks/ranks.h"
#include "backend/backend.h"

static const char help[] =
    "usage: seqfeed info\n\n"
    "Prints the version, how this binary was built and the GPUs it can use.\n"
    "Without a GPU or a driver it says so and that training runs on CPU.\n";

int cmd_info(int argc, char **argv) {
    static const struct option opts[] = {{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (ch == 'h') {
            fputs(help, stdout);
            return EXIT_OK;
        }
        return cli_usage_error("info", "unknown option");
    }
    if (optind < argc) return cli_usage_error("info", "unexpected argument '%s'", argv[optind]);
    printf("seqfeed %s\n", SF_VERSION);
    printf("zstd    %s\n", ZSTD_versionString());
    printf("cuda    %s\n", sf_gpu_built() ? "built with CUDA" : "built without CUDA");
    printf("mpi     %s\n", sf_ranks_has_mpi() ? "built with MPI: train runs as ranks under mpirun or srun"
                                              : "built without MPI: one process");
    sf_err e = {0};
    int n = sf_gpu_count(&e);
    if (n == 0) printf("gpus    none: %s; using CPU\n", e.msg);
    for (int d = 0; d < n; d++) {
        char name[256];
        size_t mem = 0;
        if (sf_gpu_describe(d, name, sizeof name, &mem, &e) == 0)
            printf("gpu %d   %s, %.1f GiB\n", d, name, (double)mem / (1 << 30));
        else
            printf("gpu %d   %s\n", d, e.msg);
    }
    return EXIT_OK;
}
