#!/bin/bash
# scale_check.sh: per-process memory and init time against the formulas of
# docs/scaling.md "Memory and start-up" (issue 11 item 5), on one node under
# rcollrun, shm + UCX and RCOLL_SHM=0.
#
# scale_check runs at P1 and P2 ranks (default 4 and 32; each twice, the
# smaller figure kept, since page-granular noise only adds); the growth per
# extra rank, slope = (X(P2) - X(P1)) / (P2 - P1), cancels the library's fixed
# size.  UCX endpoints are made on first use (RCOLL_UCX_LAZY_EPS=on here: its
# default, auto, does that only above 256 ranks), so what a rank holds
# depends on whom it has talked to.  Checked:
#   1. after rcoll_init, the typical rank (the minimum over ranks) and, with
#      RCOLL_SHM=0, every rank (the maximum): resident memory slope <= 4 KiB
#      per rank (formula: rcoll's arrays, the kept UCX address and the
#      freed blobs, ~1 KiB; no endpoint).  Endpoints made in init would cost
#      >= 17.5 KiB per peer (below) and fail this.
#   2. shm + UCX, after one 8-byte allreduce, the worst rank (the maximum:
#      rank 0 of the shm set-up, which sends to every rank on the node):
#      resident slope within [formula / TOL, formula x TOL], TOL = 1.5, of
#          rcoll private arrays + blob  0.5 KiB
#          UCX endpoint, private        1.5 KiB   (measured, UCX 1.x)
#          UCX posix FIFO pages        16   KiB   (4 pages of the peer's FIFO)
#          rcoll shm segment pages     12   KiB   (3 pages of the peer's region)
#      i.e. 30 KiB, and shared (RssShmem) against its part, 28 KiB.
#   3. RCOLL_SHM=0, after the allreduce (recursive doubling: log2 p peers):
#      shared slope <= 4 KiB per rank (no FIFO of a peer not talked to);
#      then, with SCALE_CHECK_TALK=1, after talking to every peer: resident
#      slope within 1.5x of 18 KiB (0.5 + 1.5 + 16), shared within 1.5x
#      of 16 KiB: endpoints to k peers cost k times the per-endpoint terms.
#   4. rcoll_init CPU time slope <= 1 ms per rank for the typical rank (the
#      minimum over ranks) and <= 2 ms for the worst, and init wall time at
#      P2 below 10 s.  The worst rank's CPU time includes what it burns
#      waiting for the others (spin, then sched_yield): at 32 ranks on 2
#      cores that grows with p whatever the library does (0.75-1.21 ms/rank
#      measured on an AMD EPYC VM where the typical rank's was 0.3-0.4).
#   The ranks run with MALLOC_TOP_PAD_=0: glibc otherwise grows the heap
#   128 KiB beyond each request, and one such step more or less in one of
#   the four runs moved a slope by 128 KiB / 28 = 4.6 KiB per rank, the size
#   of the 4 KiB bounds themselves (CI failed so: 4.4 KiB typical; here
#   -4.6 to 4.4 over 6 runs, -1.3 to 1.0 with the pad off).
#   The worst rank's init bound is 8 KiB: with the pad off it still measured
#   1.4-4.0 KiB (it holds more of the bootstrap's address exchange), and
#   endpoints made in init cost >= 17.5 KiB per peer, which 8 KiB still tells.
# SCALE_CHECK_FORMULA=shm|noshm forces one formula for both runs (used to show
# the check fails when the shm term is wrong: see docs/scaling.md);
# SCALE_CHECK_LAZY_EPS=off makes UCX endpoints in rcoll_init (the default is
# on), to show the init bounds fail then.
# Exit status 0 only if all hold.  About 10 s.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
P1=${SCALE_CHECK_P1:-4}
P2=${SCALE_CHECK_P2:-32}
lazy_eps=${SCALE_CHECK_LAZY_EPS:-on}
fail=0
bad() { echo "FAIL: scale_check: $*"; fail=1; }

for p in "$top/tools/rcollrun/rcollrun" "$here/scale_check"; do
    [ -x "$p" ] || { echo "scale_check: $p is not built (run make first)"; exit 1; }
done

# field NAME LINE -> value
field() { sed -n "s/.* $1=\([0-9-]*\).*/\1/p" <<< "$2"; }

# measure NRANKS SHM -> "rss shmem cpu_ms wall_ms" (smaller of two runs each)
measure() {
    local n=$1 shm=$2 best="" line i
    for _ in 1 2; do
        line=$(MALLOC_TOP_PAD_=0 RCOLL_UCX_LAZY_EPS=$lazy_eps RCOLL_SHM=$shm SCALE_CHECK_TALK=$((1 - shm)) timeout --kill-after=10 60 "$top/tools/rcollrun/rcollrun" -n "$n" \
               --timeout 50 -- "$here/scale_check" 2>&1 | grep '^scale ') || true
        if [ -z "$line" ]; then
            echo "scale_check: no figures from $n ranks (RCOLL_SHM=$shm)" >&2
            return 1
        fi
        echo "  $line" >&2
        local v
        v="$(field rss_coll_kb "$line") $(field shmem_kb "$line") $(field init_cpu_ms "$line") $(field init_wall_ms "$line")"
        v="$v $(field min_rss_init_kb "$line") $(field rss_init_kb "$line") $(field rss_talk_kb "$line") $(field shmem_talk_kb "$line")"
        v="$v $(field min_init_cpu_ms "$line")"
        if [ -z "$best" ]; then
            best=$v
        else
            local -a x y
            read -ra x <<< "$best"
            read -ra y <<< "$v"
            for i in 0 1 2 3 4 5 6 7 8; do
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
    read -r rss1 shmem1 cpu1 _ tinit1 winit1 talk1 stalk1 tcpu1 <<< "$a"
    read -r rss2 shmem2 cpu2 wall2 tinit2 winit2 talk2 stalk2 tcpu2 <<< "$b"
    out=$(awk -v r1="$rss1" -v r2="$rss2" -v s1="$shmem1" -v s2="$shmem2" -v c1="$cpu1" \
              -v c2="$cpu2" -v ti1="$tinit1" -v ti2="$tinit2" -v wi1="$winit1" -v wi2="$winit2" \
              -v k1="$talk1" -v k2="$talk2" -v sk1="$stalk1" -v sk2="$stalk2" -v shm=$shm \
              -v t1="$tcpu1" -v t2="$tcpu2" -v d=$((P2 - P1)) -v rf=$rss_f -v sf=$shmem_f 'BEGIN {
        rs = (r2 - r1) / d; ss = (s2 - s1) / d; cs = (c2 - c1) / d; ts = (t2 - t1) / d; tol = 1.5
        ti = (ti2 - ti1) / d; wi = (wi2 - wi1) / d; ks = (k2 - k1) / d; sks = (sk2 - sk1) / d
        printf "init rss %.1f KiB/rank (typical), %.1f (worst); after allreduce rss %.1f KiB/rank, shmem %.1f",
               ti, wi, rs, ss
        if (shm) printf " (formula %d, %d)", rf, sf
        else printf "; after talking to all: rss %.1f KiB/rank (formula %d), shmem %.1f (formula %d)", ks, rf, sks, sf
        printf "; init cpu %.2f ms/rank typical, %.2f worst\n", ts, cs
        if (ti > 4) print "BAD rcoll_init: the typical rank grows more than 4 KiB per rank (endpoints made in init?)"
        if (!shm && wi > 8) print "BAD rcoll_init: the worst rank grows more than 8 KiB per rank (endpoints made in init?)"
        if (shm && (rs < rf / tol || rs > rf * tol)) print "BAD resident memory per rank outside the formula x/ 1.5"
        if (shm && (ss < sf / tol || ss > sf * tol)) print "BAD shared memory per rank outside the formula x/ 1.5"
        if (!shm && ss > 4) print "BAD shared memory after one allreduce grows more than 4 KiB per rank"
        if (!shm && (ks < rf / tol || ks > rf * tol)) print "BAD resident memory after talking to all outside the formula x/ 1.5"
        if (!shm && (sks < sf / tol || sks > sf * tol)) print "BAD shared memory after talking to all outside the formula x/ 1.5"
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
