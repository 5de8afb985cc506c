#!/bin/bash
# fault_matrix.sh: the fault matrix (issue 14 item 4; results in
# docs/reliability.md, "Fault matrix").  One launch of fault_check per cell:
# world rank V kills itself (SIGKILL, RCOLL_FAULT=V:POINT) at a point of
# rcoll, for V in {0, N/2, N-1}, POINT in {fence, shm-setup, pipeline, rndv,
# finalize}, over each mode:
#   shm        RCOLL_SHM=1 (the world's collectives in the shared segment)
#   ucx-posix  RCOLL_SHM=0 UCX_TLS=posix,self
#   ucx-tcp    RCOLL_SHM=0 UCX_TLS=tcp,self
# and, in the soft-RDMA guest only (test/softrdma/guest-suite.sh runs them,
# 3 ranks, --bound 30), rcoll's verbs transport over each software device:
#   verbs-rxe  RCOLL_SHM=0 RCOLL_TRANSPORT=verbs RCOLL_NET_DEVICES=rxe0:1
#   verbs-siw  RCOLL_SHM=0 RCOLL_TRANSPORT=verbs RCOLL_NET_DEVICES=siw0:1
#   verbs-rxe-net, verbs-siw-net: the same with RCOLL_LIVENESS=transport
#              (only the transport's errors and probes name the victim, as
#              for a rank on another node; docs/reliability.md "Dead ranks")
# (every rank shares the guest: with shm the segment, not the device, would
# carry the collectives); their large allreduce is 1 MiB unless --bytes.
# Cells that cannot occur are skipped and say why: shm-setup and pipeline
# need the shm segment (not with RCOLL_SHM=0); rndv needs rendezvous
# messages, and with RCOLL_SHM=1 every world collective of fault_check runs
# in the segment (no messages).
#
#   test/integration/fault_matrix.sh [--launcher rcollrun|srun|mpirun] [-n N]
#       [--modes "shm ucx-posix ucx-tcp"] [--points "..."] [--victims "..."]
#       [--cells "MODE:POINT ..."] [--table FILE] [--limit SECONDS]
#       [--bound SECONDS] [--bytes B]
#
# --cells runs just those (mode, point) pairs, for each victim, instead of
# every mode x point.  --bound: fault_check's bound from the death to each
# survivor's error (default 5 s; 30 in the guest).  --bytes: the large
# allreduce (default fault_check's 16 MiB; 1 MiB over verbs).
#
# rcollrun (default): under `rcollrun --enable-recovery` (RCOLLRUN_KEEP_GOING=1
# where this rcollrun predates that option) every survivor must print
# "result ok=1" (fault_check: its first error RCOLL_ERR_PEER_FAILED, at
# fence an init error, within --bound s of the victim's stamp, its log naming
# the victim, in the part of the workload the point belongs to), rcollrun must
# report the victim killed by signal 9 and exit non-zero (137), and no
# file /rcoll* may be left in /dev/shm.  As root each cell runs in a private
# mount namespace with its own tmpfs on /dev/shm (as shm_leftover.sh);
# elsewhere the leftover check is skipped (said once).
#
# srun, mpirun: the launcher ends the job when a rank dies; the survivors
# must never hang: the launch ends within the limit (default 30 s), with a
# non-zero status, and no survivor that got to report says ok=0.
#
# Prints "ok   faults MODE POINT victim=V n=N: ..." or "FAIL ..." or
# "skip ..." per cell, then "P passed, F failed, S skipped"; exit 0 iff F = 0.
# --table FILE writes the results as markdown rows (the docs' table).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

launcher=rcollrun
n=4
modes="shm ucx-posix ucx-tcp"
points="fence shm-setup pipeline rndv finalize"
victims=""
cells=""
table=""
limit=""
bound=5
bytes=""
while [ $# -gt 0 ]; do
    case "$1" in
    --launcher) launcher=${2:?}; shift ;;
    -n) n=${2:?}; shift ;;
    --modes) modes=${2:?}; shift ;;
    --points) points=${2:?}; shift ;;
    --victims) victims=${2:?}; shift ;;
    --cells) cells=${2:?}; shift ;;
    --table) table=${2:?}; shift ;;
    --limit) limit=${2:?}; shift ;;
    --bound) bound=${2:?}; shift ;;
    --bytes) bytes=${2:?}; shift ;;
    -h|--help) sed -n '2,50p' "$0"; exit 0 ;;
    *) echo "fault_matrix.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$victims" ] || victims="0 $((n / 2)) $((n - 1))"
[ -n "$limit" ] || limit=30
logdir=${RCOLL_TEST_LOGDIR:-$top/test-logs}
mkdir -p "$logdir"

# The private /dev/shm: re-run this script in a mount namespace of its own.
if [ -z "${FAULT_MATRIX_INNER:-}" ] && [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null &&
   [ "$launcher" = rcollrun ]; then
    exec env FAULT_MATRIX_INNER=1 unshare -m --propagation private "$0" --launcher "$launcher" \
        -n "$n" --modes "$modes" --points "$points" --victims "$victims" --limit "$limit" \
        --bound "$bound" ${bytes:+--bytes "$bytes"} ${cells:+--cells "$cells"} ${table:+--table "$table"}
fi
private_shm=0
if [ -n "${FAULT_MATRIX_INNER:-}" ]; then
    private_shm=1
else
    echo "fault_matrix: /dev/shm leftovers not checked (needs root and rcollrun for a private /dev/shm)"
fi

prog=$here/fault_check
[ -x "$prog" ] || { echo "FAIL faults: $prog is not built"; exit 1; }
recovery=(--enable-recovery)
keep_env=()
if [ "$launcher" = rcollrun ] &&
   ! "$top/tools/rcollrun/rcollrun" --help 2>&1 | grep -e --enable-recovery >/dev/null; then
    recovery=()
    keep_env=(RCOLLRUN_KEEP_GOING=1)
fi

mode_env() {
    case "$1" in
    shm) echo "RCOLL_SHM=1" ;;
    ucx-posix) echo "RCOLL_SHM=0 UCX_TLS=posix,self" ;;
    ucx-tcp) echo "RCOLL_SHM=0 UCX_TLS=tcp,self" ;;
    verbs-rxe) echo "RCOLL_SHM=0 RCOLL_TRANSPORT=verbs RCOLL_NET_DEVICES=rxe0:1" ;;
    verbs-siw) echo "RCOLL_SHM=0 RCOLL_TRANSPORT=verbs RCOLL_NET_DEVICES=siw0:1" ;;
    verbs-rxe-net) echo "RCOLL_SHM=0 RCOLL_TRANSPORT=verbs RCOLL_NET_DEVICES=rxe0:1 RCOLL_LIVENESS=transport" ;;
    verbs-siw-net) echo "RCOLL_SHM=0 RCOLL_TRANSPORT=verbs RCOLL_NET_DEVICES=siw0:1 RCOLL_LIVENESS=transport" ;;
    *) return 1 ;;
    esac
}

# Why a cell cannot occur ("" if it can).
skip_why() {
    local mode=$1 point=$2
    case "$mode:$point" in
    ucx-*:shm-setup) echo "RCOLL_SHM=0: no shm segment is set up" ;;
    ucx-*:pipeline) echo "RCOLL_SHM=0: no shm allreduce pipeline" ;;
    verbs-*:shm-setup) echo "RCOLL_SHM=0 (the ranks share the guest; with shm the segment, not the device, would carry the collectives): no shm segment is set up" ;;
    verbs-*:pipeline) echo "RCOLL_SHM=0 (as for shm-setup): no shm allreduce pipeline; the large allreduce goes by rendezvous puts (rndv)" ;;
    shm:rndv) echo "with shm every world collective runs in the segment: no rendezvous message" ;;
    esac
}

# The parts of fault_check's workload in which survivors may fail: the one
# holding the point, or the collective just before it (a survivor still in
# it when the victim, done with it, dies fails there: docs/reliability.md,
# "Around a failure").
want_phases() {
    case "$1" in
    fence|shm-setup) echo init ;;     # the world's segment is set up in rcoll_init
    pipeline|rndv) echo "small-3 large" ;;
    finalize) echo "small-5 finalize" ;;
    esac
}

# phases_in "GOT" "WANT": every word of GOT is one of WANT (no process
# substitution: the soft-RDMA guest has no /dev/fd).
phases_in() {
    local p
    for p in $1; do
        [[ " $2 " == *" $p "* ]] || return 1
    done
    return 0
}

launch_cmd() {
    case "$launcher" in
    rcollrun) cmd=("$top/tools/rcollrun/rcollrun" "${recovery[@]}" -n "$n" --timeout "$limit" -- "$@") ;;
    mpirun) cmd=(mpirun --allow-run-as-root --oversubscribe -n "$n" "$@") ;;
    srun) cmd=(srun --mpi=pmix ${SRUN_NODES:+-N "$SRUN_NODES"} -n "$n" --overcommit "$@") ;;
    *) echo "fault_matrix.sh: unknown launcher $launcher" >&2; exit 2 ;;
    esac
}

passed=0 failed=0 skipped=0
[ -n "$table" ] && : > "$table"
row() { [ -n "$table" ] && echo "$*" >> "$table"; return 0; }

# A cell over UCX tcp in which a survivor (not the victim) died of SIGABRT
# is run once more: UCX 1.13 emulates RMA over tcp with active messages, and
# a survivor serving a get the dead rank had asked for aborts inside UCX
# ("Endpoint timeout", about 1 run in 10-30 at large sizes; no rcoll code in
# that path, and rcoll itself never aborts: docs/reliability.md).  Only
# once, only then, and said in the output: a second abort, or any other
# failure, fails the cell.
ucx_tcp_abort() {   # ucx_tcp_abort MODE VICTIM LOG
    [ "$1" = ucx-tcp ] && [ "$launcher" = rcollrun ] &&
        grep -E "^rcollrun: rank [0-9]+ \(pid [0-9]+\) killed by signal 6 " "$3" |
            grep -vq "^rcollrun: rank $2 "
}

cell() {
    local attempt
    for attempt in 1 2; do
        cell_once "$@" "$attempt" && return
    done
}

# cell_once MODE POINT VICTIM ATTEMPT: 1 when the cell should run again.
cell_once() {
    local mode=$1 point=$2 v=$3 attempt=$4 envs log stamp rc t0 secs why="" oks bad worst phases left=""
    envs=$(mode_env "$mode") || { echo "fault_matrix.sh: unknown mode $mode" >&2; exit 2; }
    local lname=$launcher
    [ "$launcher" = srun ] && [ -n "${SRUN_NODES:-}" ] && lname="srun -N $SRUN_NODES"
    local what="$lname $mode $point victim=$v n=$n"
    why=$(skip_why "$mode" "$point")
    if [ -n "$why" ]; then
        printf 'skip faults %s: %s\n' "$what" "$why"
        row "| $lname | $mode | $point | $v | skipped: $why | | |"
        skipped=$((skipped + 1))
        return
    fi
    log="$logdir/fault_matrix-${lname// /}-$mode-$point-v$v-n$n.log"
    [ "$attempt" = 1 ] || log="${log%.log}.again.log"
    stamp=$(mktemp -u "${TMPDIR:-/tmp}/fault_check.XXXXXX")
    if [ "$private_shm" = 1 ]; then
        mount -t tmpfs -o size=1g,mode=1777 tmpfs /dev/shm || { echo "FAIL faults: cannot mount /dev/shm"; exit 1; }
    fi
    local size=$bytes
    [ -n "$size" ] || case "$mode" in verbs-*) size=1048576 ;; esac
    launch_cmd "$prog" --stamp "$stamp" --bound "$bound" ${size:+--bytes "$size"}
    echo "+ $envs ${keep_env[*]} RCOLL_FAULT=$v:$point ${cmd[*]}" > "$log"
    t0=$(date +%s%N)
    env $envs "${keep_env[@]}" RCOLL_FAULT="$v:$point" \
        timeout --kill-after=10 $((limit + 15)) "${cmd[@]}" >> "$log" 2>&1 < /dev/null
    rc=$?
    secs=$(( ($(date +%s%N) - t0) / 100000000 ))
    secs=$((secs / 10)).$((secs % 10))
    rm -f "$stamp" "$stamp".*
    if [ "$private_shm" = 1 ]; then
        left=$(ls -A /dev/shm | grep '^rcoll' || true)
        umount /dev/shm
    fi
    oks=$(grep -c '^fault_check: rank [0-9]* result ok=1' "$log")
    bad=$(grep -c '^fault_check: rank [0-9]* result ok=0' "$log")
    worst=$(grep -o '^fault_check: rank [0-9]* result ok=1 .* secs=[0-9.]*' "$log" |
            sed 's/.*secs=//' | sort -n | tail -n 1)
    phases=$(grep -o '^fault_check: rank [0-9]* result ok=1 phase=[a-z0-9-]*' "$log" |
             sed 's/.*phase=//' | sort -u | tr '\n' ' ')
    if [ "$rc" = 0 ]; then
        why="exit status 0, expected a failure"
    elif [ "$rc" = 124 ] || [ "${secs%.*}" -ge "$limit" ]; then
        why="the job did not end within $limit s (exit $rc)"
    elif [ "$bad" != 0 ]; then
        why="$bad survivor(s) report ok=0"
    elif [ "$launcher" = rcollrun ]; then
        if [ "$oks" != $((n - 1)) ]; then
            why="$oks of $((n - 1)) survivors report ok"
        elif ! phases_in "$phases" "$(want_phases "$point")"; then
            why="survivors failed in '$phases', expected $(want_phases "$point")"
        elif ! grep -q "^rcollrun: rank $v (pid [0-9]*) killed by signal 9" "$log"; then
            why="rcollrun does not report rank $v killed by signal 9"
        fi
    fi
    [ -n "$left" ] && why="${why:+$why; }left in /dev/shm: $(echo $left)"
    local shm_note="clean"
    [ "$private_shm" = 1 ] || shm_note="not checked"
    local got="$([ "$point" = fence ] && echo "init error naming it" || echo PEER_FAILED) after at most $worst s"
    [ -n "$worst" ] || got="the launcher ended the job before any survivor reported"
    if [ -n "$why" ] && [ "$attempt" = 1 ] && ucx_tcp_abort "$mode" "$v" "$log"; then
        printf 'note faults %s (%s s): %s, and a survivor died of SIGABRT: UCX 1.13 tcp (see '\
'docs/reliability.md); running the cell once more; log %s\n' "$what" "$secs" "$why" "$log"
        return 1
    fi
    if [ -z "$why" ]; then
        printf 'ok   faults %s: %s, exit %s, /dev/shm %s (%s s)\n' "$what" "$got" "$rc" "$shm_note" "$secs"
        row "| $lname | $mode | $point | $v | ${worst:-ended by the launcher} | $rc ($secs s) | $shm_note |"
        passed=$((passed + 1))
    else
        printf 'FAIL faults %s (%s s): %s; log %s\n' "$what" "$secs" "$why" "$log"
        grep -E 'FAIL|result|rcollrun:|error' "$log" | tail -n 12 | sed 's/^/     | /'
        row "| $lname | $mode | $point | $v | FAIL: $why | $rc | $shm_note |"
        failed=$((failed + 1))
    fi
    return 0
}

if [ -z "$cells" ]; then
    for mode in $modes; do
        for point in $points; do
            cells="$cells $mode:$point"
        done
    done
fi
for c in $cells; do
    for v in $victims; do
        cell "${c%%:*}" "${c#*:}" "$v"
    done
done
echo "faults ($launcher): $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
