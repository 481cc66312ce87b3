// seqfeed info: the version, the build and the GPUs.
#include <string.h>
#include <zstd.h>

#include "cli.h"
#include "ranks/ranks.h"

static const cli_use info_uses[] = {
    {.opt = OPT_QUIET, .help = "the version line alone"}, {.opt = OPT_HELP}, {.opt = OPT_COUNT}};

static const cli_command info_command = {
    .name = "info",
    .usage = "",
    .about =
        "Prints the version, how this binary was built, how it parses CSV on\n"
        "this CPU, which kernels each precision runs on, and the GPUs it can\n"
        "use.\n"
        "Without a GPU or a driver it says so and that training runs on CPU.\n",
    .uses = info_uses,
};

int cmd_info(int argc, char **argv) {
    cli_args a;
    int rc = cli_parse(&info_command, argc, argv, &a);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    printf("seqfeed %s\n", SF_VERSION);
    if (a.v[OPT_QUIET].set) return EXIT_OK;
    printf("zstd    %s\n", ZSTD_versionString());
    printf("cuda    %s\n", sf_gpu_built() ? "built with CUDA" : "built without CUDA");
    char csv[128];
    sf_csv_describe(csv, sizeof csv);
    printf("csv     %s\n", csv);
    printf("mpi     %s\n", sf_ranks_has_mpi() ? "built with MPI: train runs as ranks under mpirun or srun"
                                              : "built without MPI: one process");
    // The kernels of each precision (docs/TRAINING.md).
    char cpu[256], bf16[256];
    sf_cpu_describe(cpu, sizeof cpu);
    sf_matmul_available(bf16, sizeof bf16);
    printf("fp32    cpu: %s%s\n", cpu, sf_gpu_built() ? "; gpu: cuDNN LSTM, cuBLAS" : "");
    if (sf_gpu_built()) printf("tf32    gpu: cuDNN and cuBLAS on tensor cores (compute capability 8.0 and up)\n");
    printf("bf16    cpu: %s%s\n", bf16,
           sf_gpu_built() ? "; gpu: cuBLAS bf16 products, seqfeed's LSTM (compute capability 8.0 and up)" : "");
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
