// What both builds share: recognising a launcher.
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "ranks.h"

// The cores this process is bound to (all online ones when it cannot tell).
uint32_t sf_ranks_affinity(void) {
    cpu_set_t set;
    long online = sysconf(_SC_NPROCESSORS_ONLN), mine = online;
    if (sched_getaffinity(0, sizeof set, &set) == 0) mine = CPU_COUNT(&set);
    return mine > 1 ? (uint32_t)mine : 1;
}

bool sf_ranks_launched(void) {
    // Open MPI's mpirun; PMIx (Open MPI 5, srun --mpi=pmix); PMI (MPICH's
    // hydra, srun --mpi=pmi2).
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (getenv(vars[i])) return true;
    return false;
}
