#!/bin/bash
# The soft-RDMA stage's two-guest part; runs on n1 of `test/softrdma/run --nodes 2`
# (Slurm up on n1 and n2; rxe0 on 10.1.0.x, siw0 on 10.2.0.x), in the repository root.
#
# A reduced integration matrix across two kernels: per group (verbs over rxe, verbs over
# siw, UCX over rxe) every launch is `srun --mpi=pmix -N 2`, so ranks on n1 and n2 meet
# only over that group's RDMA device (their node-local peers over rcoll's shm):
#   rping     rdma_cm between the guests (one srun: client on n1, server on n2), the device's
#             own sanity check (rxe, siw; ucx-rxe uses rxe's device)
#   node_check at 4 ranks (2+2), rxe only: node_check finds the ranks on 2 nodes
#   nodealg   coll_check --quick at 4 ranks, allreduce/bcast/reduce/allgather/barrier
#             with the node-aware algorithms (node_aware, node_leader), and on rxe the
#             selector's choice too; rxe can cost ~25 ms per message between guests
#   uneven    the same at 3 ranks (2+1: a node with one rank), node_aware only
#   comm      comm_check at 4 ranks with node_aware forced for every collective
#             (sub-communicators spanning one node and both), verbs rxe only
# Every coll_check runs at RCOLL_LOG_LEVEL=info: each rank's rcoll must log "2 node(s)",
# and the group's device on n1 must have carried traffic (rxe0's sent packets, or the
# siw link's NIC bytes).
# The whole part, counted from the guest's boot (its uptime), has a budget
# (RCOLL_SOFTRDMA_TWOGUEST_BUDGET, default 360 s); the tests get what boot and Slurm
# left of it less 15 s for the power-off: each test's limit is cut to what remains,
# and a test that would start past it fails as "over budget" (never a silent skip).
# Prints "2g-GROUP: N passed, M failed" per group, the total and the durations;
# exits non-zero on any failure.
# usage: twoguest-suite.sh [GROUP...]   (default: rxe siw ucx-rxe)
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 125
GROUPS_=(rxe siw ucx-rxe)
if (($#)); then
    for g in "$@"; do
        [[ " ${GROUPS_[*]} " == *" $g "* ]] || { echo "twoguest-suite: unknown group '$g' (rxe, siw, ucx-rxe)"; exit 2; }
    done
    GROUPS_=("$@")
fi
WHOLE=${RCOLL_SOFTRDMA_TWOGUEST_BUDGET:-360}
read -r UP _ </proc/uptime
BUDGET=$(awk -v w="$WHOLE" -v u="$UP" 'BEGIN { printf "%d", w - u - 15 }')
T_SUITE=$(date +%s.%N)
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
LOGS=$(mktemp -d /tmp/twoguest-suite.XXXXXX)
I=test/integration
declare -A PASS=() FAIL=()
for g in "${GROUPS_[@]}"; do PASS[$g]=0; FAIL[$g]=0; done
export RCOLL_TIMEOUT=${RCOLL_TIMEOUT:-60}

# the environment that puts rcoll on the group's device
group_env() {
    case $1 in
        rxe) echo "RCOLL_TRANSPORT=verbs RCOLL_NET_DEVICES=rxe0:1" ;;
        siw) echo "RCOLL_TRANSPORT=verbs RCOLL_NET_DEVICES=siw0:1" ;;
        ucx-rxe) echo "RCOLL_TRANSPORT=ucx UCX_TLS=rc_verbs,ud_verbs,self UCX_NET_DEVICES=rxe0:1 UCX_UD_ETH_DGID_CHECK=n" ;;
    esac
}

# cell GROUP NAME TIMEOUT VERIFY CMD...: run CMD (with the group's environment) under
# TIMEOUT; passes iff it exits 0 and VERIFY LOG (a function, or "true") succeeds.
cell() {
    local g=$1 n=$2 to=$3 verify=$4 t0 rc log left
    shift 4
    log=$LOGS/$g.${n//[^A-Za-z0-9_.-]/_}.log
    left=$(awk -v a="$T_SUITE" -v b="$(date +%s.%N)" -v B="$BUDGET" 'BEGIN { printf "%d", B - (b - a) }')
    if [ "$left" -le 0 ]; then
        FAIL[$g]=$((FAIL[$g] + 1)); echo "FAIL $g: $n (over budget: the tests' $BUDGET s are spent)"
        return
    fi
    [ "$to" -le "$left" ] || to=$left
    t0=$(date +%s.%N)
    # shellcheck disable=SC2046
    timeout -k 5 "$to" env $(group_env "$g") "$@" >"$log" 2>&1 </dev/null
    rc=$?
    [ $rc != 0 ] || "$verify" "$log" >>"$log" 2>&1 || rc=1
    if [ $rc = 0 ]; then
        PASS[$g]=$((PASS[$g] + 1)); echo "PASS $g: $n ($(since "$t0") s)"
    else
        FAIL[$g]=$((FAIL[$g] + 1)); echo "FAIL $g: $n (status $rc, $(since "$t0") s); last lines of its output:"
        tail -n 20 "$log" | sed 's/^/    | /'
        slurm_settle
    fi
}

# After a killed launch its job can hold the nodes for a while, and the next srun
# would queue behind it: cancel what is left and wait (up to 30 s) for both nodes idle.
slurm_settle() {
    local i
    scancel --full --quiet --user=root 2>/dev/null
    for ((i = 0; i < 30; i++)); do
        [ "$(sinfo -h -N -o '%t' 2>/dev/null | grep -c '^idle$')" -ge 2 ] && [ -z "$(squeue -h 2>/dev/null)" ] && return
        sleep 1
    done
    echo "     (Slurm still busy after a failed test: $(squeue -h 2>&1 | head -3 | tr '\n' ' '))"
}

SRUN=(srun --mpi=pmix --kill-on-bad-exit=1)

# rping_pair ADDR: rping between the guests in ONE job step (task 0 on n1 the client,
# task 1 on n2 the server), so the server cannot be left waiting for an allocation
# while the client gives up; the client retries (every 2 s, 10 times) until the server
# listens.  Both tasks' output is in the log.
rping_pair() {
    srun --kill-on-bad-exit=1 -N 2 -n 2 --ntasks-per-node=1 bash -c '
        if [ "$SLURM_PROCID" = 1 ]; then
            exec timeout 45 rping -s -a "$1" -C 10 -v
        fi
        for i in 1 2 3 4 5 6 7 8 9 10; do
            sleep 2
            rping -c -a "$1" -C 10 -v && exit 0
            echo "rping client: attempt $i failed"
        done
        exit 1' rping_pair "$1"
}
export -f rping_pair

two_nodes() {   # node_check's verdict (SLURMD_NODENAME) and rcoll's own "2 node(s)" on every rank
    grep -q '^node_check: 4 ranks on 2 node(s) ok' "$1" || { echo "node_check did not find 4 ranks on 2 nodes"; return 1; }
    rcoll_two_nodes "$1"
}
rcoll_two_nodes() {   # every rank's rcoll logged "N node(s)" with N = 2 (RCOLL_LOG_LEVEL=info)
    local n want
    want=$(grep -c 'initialised (' "$1")
    n=$(grep -c 'initialised .*, 2 node(s),' "$1")
    [ "$want" -ge 3 ] && [ "$n" = "$want" ] || { echo "rcoll logs '2 node(s)' on $n of $want ranks"; return 1; }
    echo "rcoll logs '2 node(s)' on all $n ranks"
}

# dev_count GROUP: a counter of the group's device traffic on this node: rxe0's sent
# RDMA packets (rxe, ucx-rxe), or the bytes sent on the siw link's NIC (siw runs over
# TCP; nothing else uses 10.2.0.x)
dev_count() {
    local ifc
    case $1 in
        siw) ifc=$(ip -o -4 addr show to 10.2.0.0/24 | awk '{ print $2; exit }')
             cat "/sys/class/net/$ifc/statistics/tx_bytes" 2>/dev/null || echo 0 ;;
        *) cat /sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts 2>/dev/null || echo 0 ;;
    esac
}
# across LOG: every rank's rcoll saw 2 nodes, and the group's device carried traffic
# since DEV_BEFORE (so the ranks of the two nodes did meet over it)
across() {
    local now
    rcoll_two_nodes "$1" || return 1
    now=$(dev_count "$CUR_GROUP")
    echo "device counter ($CUR_GROUP on n1): $DEV_BEFORE before, $now after"
    [ "$now" -gt "$DEV_BEFORE" ] || { echo "no traffic on the $CUR_GROUP device"; return 1; }
}

# node-aware coll_check GROUP NAME TIMEOUT -n N ARGS...: coll_check --quick across the two
# nodes (RCOLL_LOG_LEVEL=info, checked by `across`); --quick: the algorithms share the
# (dtype, op) pairs out; counts 0, 1, 7, 1023, the eager limit +-1 and 65537 elements
# ("auto" adds the selector's 3 MiB case)
nodecoll() {
    local g=$1 n=$2 to=$3
    shift 3
    CUR_GROUP=$g DEV_BEFORE=$(dev_count "$g")
    cell "$g" "$n" "$to" across env RCOLL_LOG_LEVEL=info "${SRUN[@]}" -N 2 "$@"
}

COLLS=allreduce,bcast,reduce,allgather,barrier
run_group() {
    local g=$1
    case $g in
        rxe)
            cell "$g" rping-across 60 true bash -c 'rping_pair 10.1.0.2'
            cell "$g" "node_check 2x2" 90 two_nodes env RCOLL_LOG_LEVEL=info "${SRUN[@]}" -N 2 -n 4 $I/node_check
            nodecoll "$g" "coll_check node-aware 2x2" 150 -n 4 $I/coll_check --quick --coll "$COLLS" \
                --algs node_aware,node_leader,auto
            nodecoll "$g" "coll_check node_aware 2+1" 90 -n 3 $I/coll_check --quick --coll "$COLLS" --algs node_aware
            cell "$g" "comm_check node_aware forced 2x2" 150 true env RCOLL_ALLREDUCE_ALGORITHM=node_aware \
                RCOLL_BCAST_ALGORITHM=node_aware RCOLL_REDUCE_ALGORITHM=node_aware \
                RCOLL_ALLGATHER_ALGORITHM=node_aware RCOLL_BARRIER_ALGORITHM=node_aware \
                "${SRUN[@]}" -N 2 -n 4 $I/comm_check ;;
        siw)
            # (the selector's 3 MiB case runs on rxe only: ~15 s less)
            cell "$g" rping-across 60 true bash -c 'rping_pair 10.2.0.2'
            nodecoll "$g" "coll_check node-aware 2x2" 150 -n 4 $I/coll_check --quick --coll "$COLLS" \
                --algs node_aware,node_leader
            nodecoll "$g" "coll_check node_aware 2+1" 90 -n 3 $I/coll_check --quick --coll "$COLLS" --algs node_aware ;;
        ucx-rxe)
            # UCX over rxe is the slowest (a launch costs ~40 s here): no selector case
            nodecoll "$g" "coll_check node-aware 2x2" 150 -n 4 $I/coll_check --quick --coll "$COLLS" \
                --algs node_aware,node_leader
            nodecoll "$g" "coll_check node_aware 2+1" 90 -n 3 $I/coll_check --quick --coll allreduce,bcast \
                --algs node_aware ;;
    esac
}

echo "twoguest-suite: on $(hostname), kernel $(uname -r), devices '${RCOLL_SOFTRDMA_DEVICES:-}', up ${UP%.*} s; tests' budget $BUDGET s of the part's $WHOLE s"
sinfo -N -h -o '  slurm node %N: %t' 2>&1
for g in "${GROUPS_[@]}"; do
    tg=$(date +%s.%N)
    run_group "$g"
    echo "     $g done in $(since "$tg") s"
done

echo "==== two-guest summary: tests $(since "$T_SUITE") s of their $BUDGET s; $(awk '{ printf "%d", $1 }' /proc/uptime) s since boot (budget $WHOLE s)"
tp=0 tf=0 bad=0
for g in "${GROUPS_[@]}"; do
    echo "2g-$g: ${PASS[$g]} passed, ${FAIL[$g]} failed"
    tp=$((tp + PASS[$g])); tf=$((tf + FAIL[$g]))
    [ "${FAIL[$g]}" = 0 ] && [ "${PASS[$g]}" -gt 0 ] || bad=1
done
echo "total: $tp passed, $tf failed"
rm -rf "$LOGS"
exit $bad
