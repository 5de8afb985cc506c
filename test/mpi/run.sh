#!/bin/bash
# test/mpi/run.sh - the MPI drop-in layer under Open MPI and MPICH.
#
#   test/mpi/run.sh [--quick] [--mpi ompi|mpich] [--srun]
#
# Builds the MPI test programs of test/mpi/ with each MPI's compiler wrapper
# (into test/mpi/build/), runs them with and without the layer preloaded
# under that MPI's launcher, compares the runs, and checks the
# RCOLL_MPI_REPORT lines, RCOLL_MPI=0, the error classes, a Fortran program
# and the library loaded into the other MPI's process.  Each check prints
# PASS/FAIL; the last line is "N passed, N failed".  Needs a built tree.
#
# --srun: instead, the same program with and without the layer under Slurm
# (a running cluster, test/launchers/slurm-up --nodes 2 or more; SLURM_CONF
# as it says): Open MPI with `srun --mpi=pmix`, MPICH with `srun --mpi=pmi2`
# (hydra's PMI-2 wire protocol, which Slurm's pmi2 plugin serves), each on
# one node and on two.  Open MPI 4.1.4 itself cannot run across two slurmd
# on one host (its vader BTL crashes in the first allgather; with btl
# self,tcp it finds no route to the "other" host), so its two-node cell is
# skipped with that reason; the layer starts through the MPI job itself
# (rcoll_init_oob over PMPI_Allgather), so it needs no PMIx of its own.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
B=$ROOT/test/mpi/build
LOG=${RCOLL_TEST_LOGDIR:-$ROOT/test-logs}/mpi
mkdir -p "$B" "$LOG"
quick="" only="" srun_mode=0
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) quick=--quick ;;
    --mpi) only=$2; shift ;;
    --srun) srun_mode=1 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export RCOLL_TIMEOUT=${RCOLL_TIMEOUT:-30}
# Two cores shared: keep rcoll's waiting ranks from spinning out the others.
export RCOLL_SPIN_COUNT=${RCOLL_SPIN_COUNT:-100}
pass=0 fail=0
ok()  { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1${2:+: $2}"; fail=$((fail + 1)); }
t0=$(date +%s)

# run MPI NP LOGNAME [ENV=VALUE...] -- PROGRAM ARGS: one launch, bounded.
run() {
    local mpi=$1 np=$2 name=$3; shift 3
    local -a env=() args=()
    while [ "$1" != "--" ]; do env+=("$1"); shift; done
    shift
    if [ "$mpi" = ompi ]; then
        for e in "${env[@]}"; do args+=(-x "$e"); done
        timeout 120 mpirun.openmpi --oversubscribe --bind-to none -np "$np" -x RCOLL_TIMEOUT \
            -x RCOLL_SPIN_COUNT "${args[@]}" "$@" >"$LOG/$name.txt" 2>&1
    else
        for e in "${env[@]}"; do args+=(-genv "${e%%=*}" "${e#*=}"); done
        timeout 120 mpirun.mpich -np "$np" "${args[@]}" "$@" >"$LOG/$name.txt" 2>&1
    fi
}

cases() { grep -E '^(ok|FAIL) ' "$1" | sort; }

# srun_run MPI NODES NP LOGNAME [ENV=VALUE...] -- PROGRAM ARGS
srun_run() {
    local mpi=$1 nodes=$2 np=$3 name=$4; shift 4
    local exp=ALL,RCOLL_TIMEOUT=$RCOLL_TIMEOUT,RCOLL_SPIN_COUNT=$RCOLL_SPIN_COUNT
    while [ "$1" != "--" ]; do exp+=",$1"; shift; done
    shift
    local plugin=pmix
    [ "$mpi" = mpich ] && plugin=pmi2
    timeout 150 srun -N "$nodes" -n "$np" --overcommit --mpi=$plugin --export="$exp" "$@" \
        >"$LOG/$name.txt" 2>&1
}

build_progs() {   # MPI CC: the C test programs into $B
    $2 -O1 -o "$B/coll_$1" test/mpi/coll_test.c && $2 -O1 -o "$B/err_$1" test/mpi/err_test.c
}

if [ "$srun_mode" = 1 ]; then
    if ! command -v srun >/dev/null || ! timeout 20 sinfo -h >/dev/null 2>&1; then
        bad "srun: no Slurm cluster is up (test/launchers/slurm-up --nodes 2)"
        echo "$pass passed, $fail failed"; exit 1
    fi
    maxn=$(sinfo -h -N -o %N | sort -u | wc -l)
    for mpi in ompi mpich; do
        [ -n "$only" ] && [ "$only" != "$mpi" ] && continue
        if [ "$mpi" = ompi ]; then cc=mpicc.openmpi; else cc=mpicc.mpich; fi
        lib=$ROOT/mpi/.libs/librcoll_mpi_$mpi.so
        if [ ! -f "$lib" ] || ! command -v "$cc" >/dev/null; then
            echo "SKIP $mpi: $lib or $cc missing"; continue
        fi
        echo "=== $mpi under srun"
        if ! build_progs $mpi $cc >"$LOG/$mpi-build.txt" 2>&1; then
            bad "$mpi: build test programs" "see $LOG/$mpi-build.txt"; continue
        fi
        for nodes in 1 2; do
            np=$((nodes + 2))
            if [ "$nodes" -gt "$maxn" ]; then echo "SKIP $mpi srun -N $nodes: only $maxn node(s)"; continue; fi
            if [ "$mpi" = ompi ] && [ "$nodes" -gt 1 ]; then
                echo "SKIP ompi srun -N $nodes: Open MPI 4.1.4 cannot span two slurmd on one host (see the header)"
                continue
            fi
            tag=$mpi-srun-N$nodes
            srun_run $mpi $nodes $np "$tag-native" -- "$B/coll_$mpi" --quick
            srun_run $mpi $nodes $np "$tag-preload" "LD_PRELOAD=$lib" RCOLL_MPI_REPORT=1 -- "$B/coll_$mpi" --quick
            rc=$?
            r=$LOG/$tag-preload.txt
            if [ $rc -eq 0 ] && grep -q 'coll_test: 0 failed' "$r" &&
               grep -qE '^rcoll-mpi: MPI_Allreduce [1-9][0-9]* by rcoll' "$r" &&
               grep -qE '^rcoll-mpi: MPI_Iallgather [1-9][0-9]* by rcoll, 0 passed' "$r"; then
                ok "$mpi srun -N $nodes -n $np: with the layer, $(grep -c '^ok ' "$r") cases pass, by rcoll"
            else
                bad "$mpi srun -N $nodes -n $np: with the layer" "exit $rc, see $r"
            fi
            if diff <(cases "$LOG/$tag-native.txt") <(cases "$r") >/dev/null; then
                ok "$mpi srun -N $nodes -n $np: same cases and results as $mpi alone"
            else
                bad "$mpi srun -N $nodes -n $np: differs from $mpi alone" "see $LOG/$tag-*.txt"
            fi
        done
    done
    echo "mpi-srun: $(( $(date +%s) - t0 )) s"
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]; exit
fi

for mpi in ompi mpich; do
    [ -n "$only" ] && [ "$only" != "$mpi" ] && continue
    if [ "$mpi" = ompi ]; then cc=mpicc.openmpi fc=mpif90.openmpi other=mpich; else cc=mpicc.mpich fc=mpif90.mpich other=ompi; fi
    lib=$ROOT/mpi/.libs/librcoll_mpi_$mpi.so
    otherlib=$ROOT/mpi/.libs/librcoll_mpi_$other.so
    if [ ! -f "$lib" ] || ! command -v "$cc" >/dev/null; then
        echo "SKIP $mpi: $lib or $cc missing"
        continue
    fi
    echo "=== $mpi"
    if ! build_progs $mpi $cc >"$LOG/$mpi-build.txt" 2>&1; then
        bad "$mpi: build test programs" "see $LOG/$mpi-build.txt"
        continue
    fi
    pre=LD_PRELOAD=$lib
    [ "$mpi" = ompi ] && nm -D --undefined-only "$lib" | grep -E ' U (ompi_|OMPI_)' >/dev/null &&
        bad "$mpi: strong undefined ompi_ symbols (add them to mpi/ompi_weak.h)"

    # The same program with and without the layer, 2 ranks, then 3 (odd sizes, a lone split half).
    for np in 2 3; do
        q=$quick; [ "$np" = 3 ] && q=--quick
        run $mpi $np "$mpi-native-$np" -- "$B/coll_$mpi" $q
        run $mpi $np "$mpi-preload-$np" "$pre" RCOLL_MPI_REPORT=1 -- "$B/coll_$mpi" $q
        rc=$?
        n=$(grep -c '^ok ' "$LOG/$mpi-preload-$np.txt")
        if [ $rc -ne 0 ] || ! grep -q 'coll_test: 0 failed' "$LOG/$mpi-preload-$np.txt"; then
            bad "$mpi np $np: with the layer" "exit $rc, $(grep -m3 '^FAIL' "$LOG/$mpi-preload-$np.txt" | tr '\n' ' ')"
        else
            ok "$mpi np $np: with the layer, $n cases pass"
        fi
        if diff <(cases "$LOG/$mpi-native-$np.txt") <(cases "$LOG/$mpi-preload-$np.txt") >/dev/null; then
            ok "$mpi np $np: same cases and results as $mpi alone"
        else
            bad "$mpi np $np: differs from $mpi alone" "see $LOG/$mpi-*-$np.txt"
        fi
    done
    r=$LOG/$mpi-preload-2.txt
    missing=""
    for f in Allreduce Bcast Barrier Reduce Allgather Reduce_scatter_block Reduce_scatter \
             Iallreduce Ibcast Ibarrier Ireduce Iallgather; do
        grep -qE "^rcoll-mpi: MPI_$f [1-9][0-9]* by rcoll, " "$r" || missing+=" $f"
    done
    [ -z "$missing" ] && ok "$mpi: report shows every function by rcoll" || bad "$mpi: report" "not by rcoll:$missing"
    grep -q '^rcoll-mpi: MPI_Allreduce [0-9]* by rcoll, 4 passed to MPI (inter-communicator: 1, user-defined op: 1, op not in rcoll: 2)$' "$r" &&
    grep -q '^rcoll-mpi: MPI_Bcast [0-9]* by rcoll, 1 passed to MPI (datatype)$' "$r" &&
    grep -q '^rcoll-mpi: MPI_Reduce_scatter [0-9]* by rcoll, 1 passed to MPI (unequal counts)$' "$r" &&
        ok "$mpi: report gives the pass-through reasons" || bad "$mpi: report reasons" "see $r"
    [ "$(grep -c '^rcoll-mpi: MPI_' "$r")" = 12 ] && ok "$mpi: report from rank 0 only" ||
        bad "$mpi: report lines" "$(grep -c '^rcoll-mpi: MPI_' "$r") lines"

    run $mpi 2 "$mpi-off" "$pre" RCOLL_MPI=0 RCOLL_MPI_REPORT=1 -- "$B/coll_$mpi" --quick
    if grep -q 'coll_test: 0 failed' "$LOG/$mpi-off.txt" &&
       grep -q '^rcoll-mpi: MPI_Allreduce 0 by rcoll, [0-9]* passed to MPI (RCOLL_MPI=0)$' "$LOG/$mpi-off.txt" &&
       ! grep -qE 'rcoll-mpi: MPI_[A-Za-z_]+ [1-9][0-9]* by rcoll' "$LOG/$mpi-off.txt"; then
        ok "$mpi: RCOLL_MPI=0 passes everything to MPI"
    else
        bad "$mpi: RCOLL_MPI=0" "see $LOG/$mpi-off.txt"
    fi

    # Errors: classes through the communicator's handler (on one node the
    # truncated bcast takes the shared-memory path, whose slot words carry
    # the call's signature).
    # The 5 results are counted as matches, not lines: MPICH's launcher can
    # forward the two ranks' output in pieces that join two results on one
    # line (seen in CI: "...MPI_ERR_COMMok MPI_COMM_NULL: ...").
    run $mpi 2 "$mpi-err" "$pre" RCOLL_LOG_LEVEL=error -- "$B/err_$mpi"
    if [ $? -eq 0 ] && [ "$(grep -oE 'ok [A-Za-z_ ]+: MPI_ERR_' "$LOG/$mpi-err.txt" | wc -l)" = 5 ]; then
        ok "$mpi: error classes (truncate, root, comm) through the handler"
    else
        bad "$mpi: error classes" "$(grep -m2 FAIL "$LOG/$mpi-err.txt")"
    fi

    # The other MPI's layer in this MPI's process: one line, then all to MPI.
    if [ -f "$otherlib" ]; then
        run $mpi 2 "$mpi-wrong" "LD_PRELOAD=$otherlib" -- "$B/coll_$mpi" --quick
        if [ $? -eq 0 ] && grep -q 'coll_test: 0 failed' "$LOG/$mpi-wrong.txt" &&
           grep -q 'rcoll-mpi: this process does not run' "$LOG/$mpi-wrong.txt"; then
            ok "$mpi: the $other layer preloaded passes everything through"
        else
            bad "$mpi: the $other layer preloaded" "see $LOG/$mpi-wrong.txt"
        fi
    fi

    # Fortran (mpif.h and use mpi).
    if command -v "$fc" >/dev/null && [ -f test/mpi/fortran_test.f90 ]; then
        if $fc -O1 -o "$B/fortran_$mpi" test/mpi/fortran_test.f90 >"$LOG/$mpi-fc-build.txt" 2>&1; then
            run $mpi 2 "$mpi-fortran" "$pre" RCOLL_MPI_REPORT=1 -- "$B/fortran_$mpi"
            f=$LOG/$mpi-fortran.txt
            if [ $? -eq 0 ] && grep -q 'fortran_test: 0 failed' "$f" &&
               grep -qE '^rcoll-mpi: MPI_Allreduce [1-9][0-9]* by rcoll' "$f" &&
               grep -qE '^rcoll-mpi: MPI_Iallreduce [1-9][0-9]* by rcoll' "$f"; then
                ok "$mpi: Fortran program through the layer"
            else
                bad "$mpi: Fortran program" "see $f"
            fi
        else
            bad "$mpi: Fortran build" "see $LOG/$mpi-fc-build.txt"
        fi
    fi
done
echo "mpi: $(( $(date +%s) - t0 )) s"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
