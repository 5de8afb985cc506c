#!/bin/bash
# scale_check.sh: per-process memory and init time against the formulas of
# docs/scaling.md "Memory and start-up" (issue 11 item 5), on one node under
# rcollrun, shm + UCX and RCOLL_SHM=0.
#
# scale_check runs at P1 and P2 ranks (default 4 and 32; each twice, the
# smaller figure kept, since page-granular noise only adds); the growth per
# extra rank, slope = (X(P2) - X(P1)) / (P2 - P1), cancels the library's fixed
# size.  Checked, for the worst rank (the maximum over ranks):
#   1. resident memory after init + one 8-byte allreduce: slope within
#      [formula / TOL, formula x TOL], TOL = 1.5, formula per extra rank
#          rcoll private arrays + blob  0.5 KiB   (docs/scaling.md "Memory and start-up")
#          UCX endpoint, private        1.5 KiB   (measured, UCX 1.x)
#          UCX posix FIFO pages        16   KiB   (4 pages of the peer's FIFO)
#          rcoll shm segment pages     12   KiB   (3 pages of the peer's region;
#                                                  0 with RCOLL_SHM=0)
#      i.e. 30 KiB with shm, 18 KiB without.
#   2. shared (RssShmem) slope likewise against its part: 28 / 16 KiB.
#   3. rcoll_init CPU time slope <= 1 ms per rank for the typical rank (the
#      minimum over ranks; formula ~0.3 ms: one blob parsed and one
#      ucp_ep_create per peer) and <= 2 ms for the worst, and init wall time
#      at P2 below 10 s.  The worst rank's CPU time includes what it burns
#      waiting for the others (spin, then sched_yield): at 32 ranks on 2
#      cores that grows with p whatever the library does, and it measured
#      0.75-1.21 ms/rank on an AMD EPYC VM where the typical rank's was
#      0.3-0.4 (a 1 ms bound on the worst rank failed there, 2026-12-02).
# SCALE_CHECK_FORMULA=shm|noshm forces one formula for both runs (used to show
# the check fails when the shm term is wrong: see docs/scaling.md).
# Exit status 0 only if all hold.  About 7 s.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
P1=${SCALE_CHECK_P1:-4}
P2=${SCALE_CHECK_P2:-32}
fail=0
bad() { echo "FAIL: scale_check: $*"; fail=1; }

for p in "$top/tools/rcollrun/rcollrun" "$here/scale_check"; do
    [ -x "$p" ] || { echo "scale_check: $p is not built (run make first)"; exit 1; }
done

# field NAME LINE -> value
field() { sed -n "s/.* $1=\([0-9-]*\).*/\1/p" <<< "$2"; }

# measure NRANKS SHM -> "rss shmem cpu_ms wall_ms min_cpu_ms" (smaller of two runs each)
measure() {
    local n=$1 shm=$2 best="" line i
    for _ in 1 2; do
        line=$(RCOLL_SHM=$shm timeout --kill-after=10 60 "$top/tools/rcollrun/rcollrun" -n "$n" \
               --timeout 50 -- "$here/scale_check" 2>&1 | grep '^scale ') || true
        if [ -z "$line" ]; then
            echo "scale_check: no figures from $n ranks (RCOLL_SHM=$shm)" >&2
            return 1
        fi
        echo "  $line" >&2
        local v
        v="$(field rss_coll_kb "$line") $(field shmem_kb "$line") $(field init_cpu_ms "$line") $(field init_wall_ms "$line") $(field min_init_cpu_ms "$line")"
        if [ -z "$best" ]; then
            best=$v
        else
            local -a x y
            read -ra x <<< "$best"
            read -ra y <<< "$v"
            for i in 0 1 2 3 4; do
                [ "${y[i]}" -lt "${x[i]}" ] && x[i]=${y[i]}
            done
            best="${x[*]}"
        fi
    done
    echo "$best"
}

for shm in 1 0; do
    form=${SCALE_CHECK_FORMULA:-$([ $shm = 1 ] && echo shm || echo noshm)}
    if [ "$form" = shm ]; then rss_f=30; shmem_f=28; else rss_f=18; shmem_f=16; fi
    a=$(measure "$P1" $shm) || { bad "run at $P1 ranks failed"; continue; }
    b=$(measure "$P2" $shm) || { bad "run at $P2 ranks failed"; continue; }
    read -r rss1 shmem1 cpu1 _ tcpu1 <<< "$a"
    read -r rss2 shmem2 cpu2 wall2 tcpu2 <<< "$b"
    out=$(awk -v r1="$rss1" -v r2="$rss2" -v s1="$shmem1" -v s2="$shmem2" -v c1="$cpu1" \
              -v c2="$cpu2" -v t1="$tcpu1" -v t2="$tcpu2" -v d=$((P2 - P1)) -v rf=$rss_f \
              -v sf=$shmem_f 'BEGIN {
        rs = (r2 - r1) / d; ss = (s2 - s1) / d; cs = (c2 - c1) / d; ts = (t2 - t1) / d; tol = 1.5
        printf "rss %.1f KiB/rank (formula %d), shmem %.1f KiB/rank (formula %d), init cpu %.2f ms/rank typical, %.2f worst\n",
               rs, rf, ss, sf, ts, cs
        if (rs < rf / tol || rs > rf * tol) print "BAD resident memory per rank outside the formula x/ 1.5"
        if (ss < sf / tol || ss > sf * tol) print "BAD shared memory per rank outside the formula x/ 1.5"
        if (ts > 1.0) print "BAD rcoll_init CPU time of the typical rank grows more than 1 ms per rank"
        if (cs > 2.0) print "BAD rcoll_init CPU time of the worst rank grows more than 2 ms per rank"
    }')
    echo "scale_check RCOLL_SHM=$shm (formula $form), $P1 -> $P2 ranks: $(head -n 1 <<< "$out")"
    while read -r l; do
        [ -n "$l" ] && bad "RCOLL_SHM=$shm: ${l#BAD }"
    done < <(grep '^BAD' <<< "$out")
    [ "${wall2:-0}" -lt 10000 ] || bad "RCOLL_SHM=$shm: rcoll_init took ${wall2} ms at $P2 ranks"
done
exit $fail
