#!/bin/bash
# srq-pressure.sh - runs INSIDE the soft-RDMA guest (guest-suite.sh's rxe group):
# the verbs shared receive queue (RCOLL_VERBS_SRQ, transports/verbs/verbs_srq.c)
# under pressure on rxe0.  A pool far smaller than the peers' credit windows
# together makes SENDs find it empty; the senders must survive on RNR retries
# (rnr_retry 7) and every message must still arrive whole and in order.
#  1. verbs_lazy_check with RCOLL_VERBS_SRQ_SIZE=2: four instances in one
#     process, bursts of 40 against a window of 32;
#  2. coll_check --quick over verbs with RCOLL_VERBS_SRQ_SIZE=4 at
#     $RCOLL_SRQ_PRESSURE_RANKS ranks (default 5), the collectives in
#     $RCOLL_SRQ_PRESSURE_COLL (default allreduce,allgather, many eager
#     messages each; ~50 s in the guest; allreduce, allgather, reduce_scatter
#     and barrier took 94 s, every collective 177 s).
# Each must pass, and rxe0's RNR counters must show that RNR NAKs really were
# sent and received (rcvd_rnr_err grew) and none ran out of retries
# (retry_rnr_exceeded_err did not): without them the check proves nothing.
# Last line: "srq-pressure: N passed, M failed".
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 125
CTR=/sys/class/infiniband/rxe0/ports/1/hw_counters
pass=0 fail=0
ctr() { cat "$CTR/$1" 2>/dev/null || echo -1; }
result() {   # result OK NAME DETAIL
    if [ "$1" = 1 ]; then pass=$((pass + 1)); echo "PASS srq-pressure: $2 ($3)"
    else fail=$((fail + 1)); echo "FAIL srq-pressure: $2 ($3)"; fi
}
# under NAME CMD...: CMD must exit 0 with RNR NAKs received and none exhausted
under() {
    local name=$1 rcv0 exc0 rc rcv exc t0
    shift
    rcv0=$(ctr rcvd_rnr_err) exc0=$(ctr retry_rnr_exceeded_err) t0=$SECONDS
    "$@"
    rc=$?
    rcv=$(($(ctr rcvd_rnr_err) - rcv0)) exc=$(($(ctr retry_rnr_exceeded_err) - exc0))
    result "$([ "$rc" = 0 ] && echo 1)" "$name" "status $rc, $((SECONDS - t0)) s"
    result "$([ "$rcv0" -ge 0 ] && [ "$rcv" -gt 0 ] && [ "$exc" = 0 ] && echo 1)" "$name: RNR happened and was survived" \
        "rxe0 rcvd_rnr_err +$rcv, retry_rnr_exceeded_err +$exc"
}
[ -d "$CTR" ] || { echo "no $CTR: is rxe0 up?"; echo "srq-pressure: 0 passed, 1 failed"; exit 1; }
export RCOLL_NET_DEVICES=rxe0:1 RCOLL_VERBS_SRQ=on
under "verbs_lazy_check, a pool of 2" env RCOLL_VERBS_SRQ_SIZE=2 test/verbs/verbs_lazy_check
under "coll_check over verbs, a pool of 4" env RCOLL_VERBS_SRQ_SIZE=4 RCOLL_TRANSPORT=verbs RCOLL_SHM=0 \
    test/integration/run.sh --launcher rcollrun --quick --ranks "${RCOLL_SRQ_PRESSURE_RANKS:-5}" \
    --timeout 600 --only coll --label rxe-srq4 \
    --coll "${RCOLL_SRQ_PRESSURE_COLL:-allreduce,allgather}"
echo "srq-pressure: $pass passed, $fail failed"
[ "$fail" = 0 ]
