#!/bin/bash
# shm_leftover.sh N: no rcoll file outlives a job in /dev/shm, killed or not
# (issue 12 item 4).  Runs shm_leftover_check under rcollrun -n N once per
# --kill mode (none, setup-root, setup-leaf, after, init-root, init-leaf: a
# rank dies inside rcoll_init after the address exchange; see
# shm_leftover_check.c)
# inside a private mount namespace with its own tmpfs on /dev/shm, so the
# files of other jobs on the host are neither seen nor touched, and after
# each launch lists /dev/shm: any name starting with "rcoll" fails the test.
# The "none" launch must exit 0, the others must end with a failure (137:
# rcollrun's status for a rank killed by SIGKILL) after a rank said it
# killed itself.  Then a rank dies inside rcoll_init (RCOLL_FAULT=V:POINT for
# POINT fence and shm-setup, V the first and the last rank) under rcollrun
# --enable-recovery, so that the survivors fail their init and exit on
# their own: rcollrun must report rank V killed by signal 9, and /dev/shm
# must be as empty (the where-is-everyone table has no name: whereis_table.c).
# Needs root (unshare -m, mount); elsewhere it says "skipped" and exits 0.
#
# shm_leftover.sh --small N: /dev/shm too small for rcoll's segment (1 MiB):
# coll_check --quick --algs auto, group_check and node_check under rcollrun
# -n N must each pass on the point-to-point algorithms, each log must hold
# exactly one "has no shared-memory segment" line (the warning, no error),
# and /dev/shm no rcoll file.  UCX's own
# posix transport needs /dev/shm too, so UCX_TLS defaults to self,tcp,cma here.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
small=0
[ "${1:-}" = --small ] && { small=1; shift; }
n=${1:?usage: shm_leftover.sh [--small] N}
limit=${SHM_LEFTOVER_LIMIT:-60}

if [ -z "${SHM_LEFTOVER_INNER:-}" ]; then
    if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
        echo "shm_leftover: skipped (needs root for a private /dev/shm)"
        exit 0
    fi
    # (--small was shifted off above: pass it on, or the inner run is the kill test)
    [ "$small" = 1 ] && set -- --small "$@"
    exec env SHM_LEFTOVER_INNER=1 unshare -m --propagation private "$0" "$@"
fi

if [ "$small" = 1 ]; then
    mount -t tmpfs -o size=1m,mode=1777 tmpfs /dev/shm || { echo "FAIL: cannot mount /dev/shm"; exit 1; }
    export UCX_TLS=${UCX_TLS:-self,tcp,cma}
    fail=0
    # coll_check: world, dups and splits (agreed at creation); group_check and
    # node_check: rcoll_comm_create_group and node sub-communicators (agreed
    # at their first shm collective, which then falls back; docs/shm.md).
    for prog in "coll_check --quick --algs auto" group_check node_check; do
        out=$(timeout --kill-after=10 $((limit * 4 + 15)) "$top/tools/rcollrun/rcollrun" -n "$n" \
              --timeout $((limit * 4)) -- $here/$prog 2>&1)
        rc=$?
        warnings=$(echo "$out" | grep -c "has no shared-memory segment")
        left=$(ls -A /dev/shm | grep '^rcoll' || true)
        why=""
        [ "$rc" = 0 ] || why="exit status $rc"
        [ "$warnings" = 1 ] || why="${why:+$why; }$warnings 'no shared-memory segment' lines, expected 1 (the warning)"
        [ -z "$left" ] || why="${why:+$why; }left in /dev/shm: $(echo $left)"
        if [ -n "$why" ]; then
            echo "FAIL shm_leftover --small n=$n ${prog%% *}: $why"
            echo "$out" | tail -n 15 | sed 's/^/   | /'
            fail=1
            continue
        fi
        echo "ok   shm_leftover --small n=$n ${prog%% *}: one warning, point-to-point algorithms, nothing left"
    done
    exit $fail
fi
mount -t tmpfs -o size=512m,mode=1777 tmpfs /dev/shm || { echo "FAIL: cannot mount /dev/shm"; exit 1; }
fail=0
# One launch of --kill $1; sets out, rc, why ("" when it went as planned).
launch_kill() {
    local when=$1 left
    out=$(timeout --kill-after=10 $((limit + 15)) "$top/tools/rcollrun/rcollrun" -n "$n" \
          --timeout "$limit" -- "$here/shm_leftover_check" --kill "$when" 2>&1)
    rc=$?
    left=$(ls -A /dev/shm | grep '^rcoll' || true)
    why=""
    if [ "$when" = none ] && [ "$rc" != 0 ]; then
        why="exit status $rc, expected 0"
    elif [ "$when" != none ] && ! grep -q "kills itself" <<< "$out"; then
        why="exit status $rc, but no rank killed itself"
    elif [ "$when" != none ] && { [ "$rc" = 0 ] || [ "$rc" = 124 ]; }; then
        why="exit status $rc, expected the killed rank's failure (137)"
    fi
    if [ -n "$left" ]; then
        why="${why:+$why; }left in /dev/shm: $(echo $left)"
    fi
    rm -f /dev/shm/rcoll* 2>/dev/null
}
for when in none setup-root setup-leaf after init-root init-leaf; do
    launch_kill "$when"
    # A rank dead by SIGKILL that never said it killed itself is not the
    # scenario under test (seen once in CI at n=8: nothing in rcoll or
    # rcollrun sends a rank SIGKILL first, so it came from outside).  Its
    # whole output is kept here, and that mode runs once more; files left in
    # /dev/shm, or any other failure, are never retried.
    if [ "$why" = "exit status $rc, but no rank killed itself" ] && [ "$rc" = 137 ]; then
        echo "note shm_leftover --kill $when n=$n: a rank died by SIGKILL without saying it" \
             "killed itself; its whole output, then one more launch:"
        echo "$out" | sed 's/^/   | /'
        launch_kill "$when"
    fi
    if [ -n "$why" ]; then
        echo "FAIL shm_leftover --kill $when n=$n: $why"
        echo "$out" | tail -n 30 | sed 's/^/   | /'
        fail=1
    else
        echo "ok   shm_leftover --kill $when n=$n (exit status $rc)"
    fi
done
# A rank killed inside rcoll_init; the survivors' init fails (or they are
# killed) and they exit.
for point in fence shm-setup; do
    for v in 0 $((n - 1)); do
        out=$(RCOLL_FAULT=$v:$point timeout --kill-after=10 $((limit + 15)) \
              "$top/tools/rcollrun/rcollrun" --enable-recovery -n "$n" --timeout "$limit" -- \
              "$here/shm_leftover_check" --kill none 2>&1)
        rc=$?
        left=$(ls -A /dev/shm | grep '^rcoll' || true)
        why=""
        if [ "$rc" = 0 ] || [ "$rc" = 124 ]; then
            why="exit status $rc, expected the killed rank's failure"
        elif ! grep -q "^rcollrun: rank $v (pid [0-9]*) killed by signal 9" <<< "$out"; then
            why="exit status $rc, but rcollrun does not report rank $v killed by signal 9"
        fi
        [ -z "$left" ] || why="${why:+$why; }left in /dev/shm: $(echo $left)"
        if [ -n "$why" ]; then
            echo "FAIL shm_leftover RCOLL_FAULT=$v:$point n=$n: $why"
            echo "$out" | tail -n 15 | sed 's/^/   | /'
            fail=1
        else
            echo "ok   shm_leftover RCOLL_FAULT=$v:$point n=$n (exit status $rc)"
        fi
        rm -f /dev/shm/rcoll* 2>/dev/null
    done
done
exit $fail
