#!/usr/bin/env bash
# Exactly-once over ranks: test_ranks_pipe under mpirun with 3 ranks.
mpirun --version 2>/dev/null | grep -q 'Open MPI' || { echo "Open MPI's mpirun not installed: skipped"; exit 77; }
exec mpirun --allow-run-as-root --oversubscribe -np 3 "$1"
