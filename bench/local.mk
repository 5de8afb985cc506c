# bench/: side-by-side comparison against Open MPI and MPICH (issue 5).
