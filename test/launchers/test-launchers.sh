#!/usr/bin/env bash
# test-launchers.sh: rcoll's launchers, tested with a plain PMIx client.
#
#   test/launchers/test-launchers.sh [--no-slurm-setup] [--builddir DIR]
#                                    [--state-dir DIR] [--keep-slurm]
#
# Runs test/launchers/pmix_probe (rank, size, local info, Put/Commit/Fence/Get)
# under rcollrun (1, 2, 5, 8 ranks), Open MPI's mpirun (2, 5) and
# srun --mpi=pmix (2, 5), then rcollrun's failure handling (a rank exiting
# 3, a rank killed by SIGKILL, PMIx_Abort, exit without PMIx_Finalize,
# --timeout, a missing program, SIGTERM to rcollrun), its output forwarding
# and options, and examples/hello under all three launchers when it is built.
#
# By default it brings a single-node Slurm up (test/launchers/slurm-up) and
# down again; --no-slurm-setup uses one the caller started (SLURM_CONF, or
# the state directory's slurm.conf), --keep-slurm leaves it running.
# A launcher that cannot be brought up fails its tests; nothing is skipped,
# except examples/hello when it has not been built.
#
# Every command runs under `timeout`.  Prints "ok"/"FAIL" lines and ends with
# "N passed, M failed"; the exit status is non-zero if anything failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
SLURM_SETUP=1
KEEP_SLURM=0
STATE=${RCOLL_SLURM_STATE:-/tmp/rcoll-slurm}
BUILDDIR=""

while [ $# -gt 0 ]; do
    case $1 in
        --no-slurm-setup) SLURM_SETUP=0; shift ;;
        --keep-slurm) KEEP_SLURM=1; shift ;;
        --builddir) BUILDDIR=${2:?--builddir needs a directory}; shift 2 ;;
        --state-dir) STATE=${2:?--state-dir needs a directory}; shift 2 ;;
        -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "test-launchers.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done
if [ -z "$BUILDDIR" ]; then
    if [ -x "$PWD/tools/rcollrun/rcollrun" ]; then BUILDDIR=$PWD; else BUILDDIR=$top; fi
fi
BUILDDIR=$(cd "$BUILDDIR" && pwd)
RCOLLRUN=${RCOLLRUN:-$BUILDDIR/tools/rcollrun/rcollrun}
PROBE=${PMIX_PROBE:-$BUILDDIR/test/launchers/pmix_probe}
HELLO=$BUILDDIR/examples/hello
LIMIT=60          # seconds for any one command
FAST=10           # a failing job must be torn down within this many seconds

pass=0
failed=0
WORK=$(mktemp -d "${TMPDIR:-/tmp}/test-launchers.XXXXXX")
# rcollrun's server directories go here, so leftovers can be checked.
RR_TMP=$WORK/rcollrun-tmp
mkdir -p "$RR_TMP"

slurm_started=0
cleanup() {
    if [ "$slurm_started" = 1 ] && [ "$KEEP_SLURM" = 0 ]; then
        timeout 60 "$here/slurm-down" --state-dir "$STATE" >"$WORK/slurm-down.log" 2>&1 ||
            { echo "test-launchers.sh: slurm-down failed:"; cat "$WORK/slurm-down.log"; }
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ok() { echo "ok   - $1"; pass=$((pass + 1)); }
bad() {
    echo "FAIL - $1: $2"
    if [ -s "$WORK/out" ]; then tail -n 15 "$WORK/out" | sed 's/^/       | /'; fi
    failed=$((failed + 1))
}

# run SECONDS CMD...: output (stdout+stderr) in $WORK/out, status in $rc,
# wall time in $secs.
run() {
    local lim=$1 t0
    shift
    t0=$(date +%s.%N)
    TMPDIR=$RR_TMP timeout -k 5 "$lim" "$@" >"$WORK/out" 2>&1
    rc=$?
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
}
faster_than() { awk -v s="$secs" -v l="$1" 'BEGIN { exit !(s < l) }'; }

# The probe printed exactly one ok line for each of ranks 0..n-1, of size n.
check_probe() {  # name n
    local name=$1 n=$2 got want
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then bad "$name" "timed out after ${LIMIT} s"; return; fi
    if [ "$rc" != 0 ]; then bad "$name" "exit status $rc"; return; fi
    got=$(sed -n "s/^pmix_probe: rank \([0-9]*\) of $n (.*): $n peer values ok$/\1/p" "$WORK/out" |
          sort -n | tr '\n' ' ')
    want=$(seq 0 $((n - 1)) | tr '\n' ' ')
    if [ "$got" != "$want" ]; then
        bad "$name" "expected ok lines from ranks { $want} of $n, got { $got}"
        return
    fi
    ok "$name ($n distinct ranks, fence data verified, ${secs} s)"
}

# Status, a message matching a pattern, and a fast teardown.
check_failure() {  # name expected-rc-or-'nonzero' pattern
    local name=$1 want=$2 pat=$3
    if [ "$want" = nonzero ]; then
        if [ "$rc" = 0 ]; then bad "$name" "exit status 0, expected non-zero"; return; fi
    elif [ "$rc" != "$want" ]; then
        bad "$name" "exit status $rc, expected $want"; return
    fi
    if ! grep -Eq "$pat" "$WORK/out"; then bad "$name" "no message matching /$pat/"; return; fi
    if ! faster_than "$FAST"; then bad "$name" "took ${secs} s (limit ${FAST} s)"; return; fi
    ok "$name (status $rc in ${secs} s: $(grep -Em1 "$pat" "$WORK/out" | cut -c1-110))"
}

echo "# test-launchers: rcollrun=$RCOLLRUN probe=$PROBE"

# ---- rcollrun ---------------------------------------------------------------
have_rr=1
if [ ! -x "$RCOLLRUN" ] || [ ! -x "$PROBE" ]; then
    have_rr=0
    bad "build" "$RCOLLRUN or $PROBE is not built (run make)"
fi
if [ "$have_rr" = 1 ]; then
    for n in 1 2 5 8; do
        run $LIMIT "$RCOLLRUN" -n $n "$PROBE"
        check_probe "rcollrun -n $n pmix_probe" $n
    done

    run $LIMIT "$RCOLLRUN" -n 4 "$PROBE" --exit 1:3 --sleep 30
    check_failure "rcollrun: a rank exits 3 -> status 3" 3 \
        '^rcollrun: rank 1 \(pid [0-9]+\) exited with status 3; terminating the other 3 ranks'
    run $LIMIT "$RCOLLRUN" -n 3 sh -c '[ "$PMIX_RANK" = 2 ] && exit 3; sleep 30'
    check_failure "rcollrun: a non-PMIx rank exits 3 -> status 3" 3 \
        '^rcollrun: rank 2 \(pid [0-9]+\) exited with status 3'
    run $LIMIT "$RCOLLRUN" -n 5 "$PROBE" --kill 3 --sleep 30
    check_failure "rcollrun: a rank is SIGKILLed while others sleep" 137 \
        '^rcollrun: rank 3 \(pid [0-9]+\) killed by signal 9 \(Killed\); terminating the other 4 ranks'
    run $LIMIT "$RCOLLRUN" -n 3 "$PROBE" --abort 1:7 --sleep 30
    check_failure "rcollrun: PMIx_Abort(7) -> status 7" 7 \
        '^rcollrun: rank 1 \(pid [0-9]+\) called PMIx_Abort with status 7'
    run $LIMIT "$RCOLLRUN" -n 3 "$PROBE" --no-finalize 0 --sleep 30
    check_failure "rcollrun: exit 0 without PMIx_Finalize while peers run" nonzero \
        '^rcollrun: rank 0 \(pid [0-9]+\) exited with status 0 without calling PMIx_Finalize'
    run $LIMIT "$RCOLLRUN" -n 3 --timeout 2 sleep 30
    check_failure "rcollrun --timeout 2 on a 30 s job" 124 \
        '^rcollrun: job exceeded --timeout 2 s; terminating 3 running ranks'
    if ! faster_than 2; then :; else bad "rcollrun --timeout 2 waited at least 2 s" "ended after ${secs} s"; fi
    run $LIMIT "$RCOLLRUN" -n 2 --timeout 1 sh -c 'trap "" TERM; while :; do sleep 0.1; done'
    check_failure "rcollrun: ranks ignoring SIGTERM get SIGKILL" 124 \
        '^rcollrun: 2 ranks still running after SIGTERM; sending SIGKILL to: 0 1'
    run $LIMIT "$RCOLLRUN" -n 2 /nonexistent/rcoll-prog
    check_failure "rcollrun: missing program (path)" 127 \
        '^rcollrun: /nonexistent/rcoll-prog: program not found'
    run $LIMIT "$RCOLLRUN" -n 2 rcoll-no-such-program
    check_failure "rcollrun: missing program (PATH search)" 127 \
        '^rcollrun: rcoll-no-such-program: program not found in PATH'
    printf 'echo no shebang\n' >"$WORK/noexec"
    chmod 644 "$WORK/noexec"
    run $LIMIT "$RCOLLRUN" -n 2 "$WORK/noexec"
    check_failure "rcollrun: program without execute permission" 126 \
        "^rcollrun: $WORK/noexec: cannot execute \(not a regular file with execute permission\)"
    chmod 755 "$WORK/noexec"
    run $LIMIT "$RCOLLRUN" -n 2 "$WORK/noexec"
    check_failure "rcollrun: program execve() rejects" 126 \
        "^rcollrun: $WORK/noexec: cannot execute \(rank 0\): Exec format error"
    run $LIMIT "$RCOLLRUN" -n 0 true
    check_failure "rcollrun -n 0 is a usage error" 2 'rank count must be an integer from 1'
    run $LIMIT "$RCOLLRUN" true
    check_failure "rcollrun without -n is a usage error" 2 'missing -n N'
    run $LIMIT "$RCOLLRUN" --help
    check_failure "rcollrun --help" 0 '^Usage: rcollrun -n N'

    # SIGTERM to rcollrun: ranks are terminated, status 128+15.
    marker=$((RANDOM % 1000 + 3000)).5
    TMPDIR=$RR_TMP timeout -k 5 $LIMIT "$RCOLLRUN" -n 3 sleep "$marker" >"$WORK/out" 2>&1 &
    rr_pid=$!
    sleep 1
    t0=$(date +%s.%N)
    pkill -TERM -P "$rr_pid" -x rcollrun
    wait "$rr_pid"
    rc=$?
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    sleep 0.2
    if pgrep -f "sleep $marker" >/dev/null; then
        bad "SIGTERM to rcollrun" "ranks (sleep $marker) still running"
        pkill -KILL -f "sleep $marker"
    else
        check_failure "SIGTERM to rcollrun terminates the ranks" 143 \
            '^rcollrun: received SIGTERM; terminating 3 running ranks'
    fi

    # Output: nothing lost when ranks exit at once, lines never mixed.
    run $LIMIT "$RCOLLRUN" -n 4 sh -c 'seq 1 20000; printf "last-$PMIX_RANK"'
    lines=$(grep -c '' "$WORK/out")
    lasts=$(grep -o 'last-[0-3]' "$WORK/out" | sort -u | wc -l)
    if [ "$rc" = 0 ] && [ "$(grep -cx '[0-9]*' "$WORK/out")" -ge 79996 ] && [ "$lines" -ge 80000 ] &&
       [ "$lasts" = 4 ]; then
        ok "rcollrun forwards 4 x 20000 lines plus unterminated tails ($lines lines, ${secs} s)"
    else
        bad "rcollrun output forwarding" "status $rc, $lines lines, $lasts distinct tails (expected 80000 lines + 4 tails)"
    fi
    run $LIMIT "$RCOLLRUN" -n 3 --tag-output sh -c 'seq 1 1000; echo err-$PMIX_RANK >&2'
    good=1
    for r in 0 1 2; do
        [ "$(grep -c "^\[$r\] [0-9]*$" "$WORK/out")" = 1000 ] || good=0
        grep -qx "\[$r\] err-$r" "$WORK/out" || good=0
    done
    if [ "$rc" = 0 ] && [ "$good" = 1 ] && ! grep -qv '^\[[0-2]\] ' "$WORK/out"; then
        ok "rcollrun --tag-output prefixes every stdout and stderr line with [rank]"
    else
        bad "rcollrun --tag-output" "status $rc, lines without the right [rank] prefix"
    fi
    run $LIMIT env RCOLL_T2=inherited "$RCOLLRUN" -n 2 -x RCOLL_T1=abc -x RCOLL_T2 \
        sh -c 'echo "x=$RCOLL_T1,$RCOLL_T2"'
    if [ "$rc" = 0 ] && [ "$(grep -cx 'x=abc,inherited' "$WORK/out")" = 2 ]; then
        ok "rcollrun -x VAR=VAL and -x VAR reach every rank"
    else
        bad "rcollrun -x" "status $rc"
    fi
    if [ -n "$(ls -A "$RR_TMP")" ]; then
        bad "rcollrun cleans up" "left in \$TMPDIR: $(ls -A "$RR_TMP" | tr '\n' ' ')"
    else
        ok "rcollrun left nothing behind in \$TMPDIR"
    fi
fi

# ---- Open MPI mpirun ----------------------------------------------------------
MPIRUN=$(command -v mpirun.openmpi || command -v mpirun || true)
for n in 2 5; do
    if [ -z "$MPIRUN" ]; then
        bad "mpirun -n $n pmix_probe" "mpirun not found (apt-get install openmpi-bin)"
        continue
    fi
    [ "$have_rr" = 1 ] || continue
    run $LIMIT "$MPIRUN" --allow-run-as-root --oversubscribe -n $n "$PROBE"
    check_probe "mpirun -n $n pmix_probe" $n
done

# ---- Slurm srun --mpi=pmix ------------------------------------------------------
slurm_ok=1
if [ "$SLURM_SETUP" = 1 ]; then
    echo "# bringing up Slurm (test/launchers/slurm-up --state-dir $STATE)"
    slurm_started=1
    if timeout -k 5 900 "$here/slurm-up" --state-dir "$STATE" >"$WORK/out" 2>&1; then
        ok "slurm-up ($(grep -o 'up in [0-9.]* s' "$WORK/out" || echo 'already up'))"
    else
        slurm_ok=0
        bad "slurm-up" "could not bring up Slurm"
    fi
    export SLURM_CONF=$STATE/slurm.conf
elif [ -z "${SLURM_CONF:-}" ] && [ -f "$STATE/slurm.conf" ]; then
    export SLURM_CONF=$STATE/slurm.conf
fi
for n in 2 5; do
    name="srun --mpi=pmix -n $n pmix_probe"
    if [ "$slurm_ok" = 0 ]; then bad "$name" "no Slurm"; continue; fi
    if ! command -v srun >/dev/null; then bad "$name" "srun not found (apt-get install slurm-wlm)"; continue; fi
    [ "$have_rr" = 1 ] || continue
    run $LIMIT srun --mpi=pmix -n $n --overcommit "$PROBE"
    check_probe "$name" $n
done

# ---- examples/hello (rcoll itself) ----------------------------------------------
# Five distinct ranks, each reporting size 5, whatever else hello prints.
check_hello() {  # name
    local ranks
    if [ "$rc" != 0 ]; then bad "$1" "exit status $rc"; return; fi
    ranks=$(grep -oiE 'rank[ =:]*[0-9]+' "$WORK/out" | grep -oE '[0-9]+$' | sort -nu | tr '\n' ' ')
    if [ "$ranks" = "0 1 2 3 4 " ] && [ "$(grep -ciE '(of|size)[ =:]*5\b' "$WORK/out")" -ge 5 ]; then
        ok "$1 (ranks $ranks, ${secs} s)"
    else
        bad "$1" "expected ranks 0..4 of size 5, saw ranks { $ranks}"
    fi
}
if [ ! -x "$HELLO" ]; then
    echo "skip - examples/hello under rcollrun, mpirun and srun: $HELLO is not built"
else
    if [ "$have_rr" = 1 ]; then
        run $LIMIT "$RCOLLRUN" -n 5 "$HELLO"
        check_hello "rcollrun -n 5 examples/hello"
    fi
    if [ -n "$MPIRUN" ]; then
        run $LIMIT "$MPIRUN" --allow-run-as-root --oversubscribe -n 5 "$HELLO"
        check_hello "mpirun -n 5 examples/hello"
    else
        bad "mpirun -n 5 examples/hello" "mpirun not found"
    fi
    if [ "$slurm_ok" = 1 ]; then
        run $LIMIT srun --mpi=pmix -n 5 --overcommit "$HELLO"
        check_hello "srun --mpi=pmix -n 5 examples/hello"
    else
        bad "srun --mpi=pmix -n 5 examples/hello" "no Slurm"
    fi
fi

echo "$pass passed, $failed failed"
[ "$failed" = 0 ]
