// What both builds share: recognising a launcher.
#include <stdlib.h>

#include "ranks.h"

bool sf_ranks_launched(void) {
    // Open MPI's mpirun; PMIx (Open MPI 5, srun --mpi=pmix); PMI (MPICH's
    // hydra, srun --mpi=pmi2).
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (getenv(vars[i])) return true;
    return false;
}
