#!/bin/bash
# The multi-process integration tests, under one launcher, for several rank
# counts.  Run from an in-tree build (binaries are found next to this script).
#
#   test/integration/run.sh [--launcher rcollrun|mpirun|srun] [--ranks "1 2 3 4 5 8"]
#                           [--quick] [--label NAME]
#                           [--only "coll comm group nb timeout mismatch late wedge where shmleft dead flood faults oob"]
#                           [--coll LIST] [--algs LIST] [--timeout SECONDS]
#                           [--nodes "SPEC..."] [--srun-nodes "SPEC..."]
#                           [--dead-bound SECONDS] [--deadline-ranks "2 3 5 8"]
#
#   --launcher  rcollrun (default): tools/rcollrun/rcollrun -n N
#               mpirun: Open MPI's mpirun --allow-run-as-root --oversubscribe -n N
#               srun:   srun --mpi=pmix -n N --overcommit (Slurm must be up)
#   --ranks     rank counts to launch (default "1 2 3 4 5 8")
#   --quick     coll_check --quick (fewer sizes and combinations)
#   --label     name printed on every result line (default: the launcher)
#   --only      which programs: coll (coll_check), comm (comm_check),
#               group (group_check), nb (nb_check), node (node_check:
#               rcoll_comm_split_node), timeout (timeout_check, for N >= 2),
#               late (late_write_check, for N = 2 and 3: no late write lands
#               after a receive timed out; over UCX once per UCX_TLS of
#               posix, cma,tcp and tcp unless UCX_TLS is set),
#               mismatch (mismatch_check, then mismatch_check --no-shm, for
#               N >= 2), wedge (wedge_check, for N >= 2: its 512 MiB queued
#               case only at N = 2), where (where_check, for N = 2 and N >= 8;
#               under --nodes or --srun-nodes every rank's report must also
#               name the ranks of other nodes: none may be "not visible"),
#               flood (flood_check, for N = 2 and 3: a root 10000 16 KiB
#               bcasts ahead stays within RCOLL_UNEXPECTED_MAX on every rank;
#               16 MiB at N = 2, the default with 20000 at N = 3; over UCX once per
#               UCX_TLS of sm and tcp unless UCX_TLS is set),
#               shmleft (shm_leftover.sh N, rcollrun only, N = 2, 3, >= 8, not with
#               --nodes: ranks SIGKILLed during and after the shm set-up
#               leave no rcoll file in a private /dev/shm; and with a 1 MiB
#               /dev/shm, one warning and point-to-point algorithms; needs
#               root, else skipped),
#               dead (dead_check, rcollrun only, for N >= 3: world rank 2
#               SIGKILLs itself mid-allreduce under RCOLLRUN_KEEP_GOING=1; every
#               survivor gets RCOLL_ERR_PEER_FAILED within 5 s naming it; 8 B and
#               4 MiB, over shm, UCX_TLS=sm,self and UCX_TLS=tcp,self unless
#               UCX_TLS, RCOLL_TRANSPORT=verbs or --nodes is set; over tcp
#               16 KiB instead of 4 MiB, see dead_checks; with RCOLL_SHM=0
#               and RCOLL_TRANSPORT=verbs or UCX_TLS set, the soft-RDMA
#               guest's case: N = 3 only, the network only, once with every
#               source and 8 B, once with RCOLL_LIVENESS=transport, 8 B and
#               64 KiB),
#               faults (fault_matrix.sh: the fault matrix, RCOLL_FAULT kills; under
#               rcollrun, not with --nodes, at N = 4: ranks 0, 2 and 3 at every
#               point over shm, UCX posix and UCX tcp, ~30 s; under mpirun at
#               N = 4 and srun at N >= 3, rank N/2 at pipeline (shm, one node
#               only) and rndv (UCX tcp): the launcher ends the job, nothing
#               hangs; docs/reliability.md "Fault matrix"),
#               oob (oob_threads: 4 threads with rcoll_init_oob contexts in
#               one process, started once without the launcher), auth
#               (auth_check: forged and replayed UCX messages from a worker
#               outside the job are dropped, once, without the launcher), shrink
#               (shrink_check kill, kill2, kill-member, kill-coord and stop, at
#               6 ranks under rcollrun --enable-recovery, over shm, UCX_TLS=sm,self
#               and UCX_TLS=tcp,self (16 KiB) without shm unless UCX_TLS or
#               RCOLL_TRANSPORT=verbs is set, then over shm and without it;
#               rcollrun only, not with --nodes), tune (tune_check.sh,
#               once, rcollrun only, not with --nodes: rcoll_tune --quick at 2 ranks
#               writes a tune file, coll_check under it selects what its rules say,
#               ranks with different tune files fail init naming RCOLL_TUNE_FILE,
#               ~20 s), scale (scale_check.sh, once, rcollrun only, not with
#               --nodes, RCOLL_TRANSPORT or UCX_TLS: resident memory and
#               rcoll_init time per extra rank, 4 and 32 ranks, shm + UCX and
#               RCOLL_SHM=0, against docs/scaling.md "Memory and start-up",
#               ~10 s), nodealg (under --nodes or --srun-nodes, N >= 2:
#               comm_check and nb_check with the node-aware algorithms forced
#               through the environment, RCOLL_<COLL>_ALGORITHM=node_aware for
#               allreduce, bcast, reduce, allgather and barrier, so they run on
#               every communicator those programs make, some spanning some
#               nodes, some on one node; then comm_check with node_leader for
#               allreduce and reduce), model (model_check.sh, once, rcollrun
#               with --nodes only: the cost model under the tcp path's
#               measured alpha_inter/beta_inter against allreduce measured at
#               2x2 and 4x2, and node-aware vs the best flat algorithm at
#               1 MiB, ~40 s; docs/scaling.md "Model against measurement"),
#               bind (bind_check.sh, once, rcollrun only, not with --nodes
#               or RCOLL_TRANSPORT:
#               --report-bindings at 2 ranks names two different cores and
#               each rank's own affinity is the one reported; --bind-to none
#               and more ranks than cores leave the ranks unbound; rcoll_info
#               inside the job reports the binding, ~2 s);
#               default all
#   --coll, --algs  passed to coll_check
#   --timeout   seconds per launch, overriding the defaults below
#   --dead-bound  dead_check's bound in seconds (default 5; the soft-RDMA
#               guest passes 30: docs/reliability.md, "Dead ranks")
#   --deadline-ranks  the rank counts (of --ranks) at which timeout and
#               mismatch run; default every one.  Both spend most of their
#               time waiting out deadlines by design (15 s and 12-45 s per
#               launch at any load), so the suite picks a few counts for them.
#   --nodes     emulated nodes (rcollrun only, as root): one launch set per
#               SPEC, each under rcollrun --nodes.  SPEC: KxP (K nodes of P
#               ranks), N1,N2,... (ranks per node), or K (K nodes, rank
#               counts from --ranks).  Each set also checks, once, that UCX
#               joins ranks of different nodes over tcp and reports no error.
#   --srun-nodes  Slurm nodes (srun only; test/launchers/slurm-up --nodes K
#               brings up K nodes on this host): one launch set per SPEC,
#               each under srun -N K.  SPEC: KxP (srun -N K
#               --ntasks-per-node P -n K*P) or K (srun -N K -n N, N from
#               --ranks, N >= K).  Each set also checks, once, that every
#               rank's rcoll reports K node(s) (RCOLL_LOG_LEVEL=info) and
#               that node_check finds the ranks on K nodes.
#
# Every launch runs under `timeout`: a hang is a failure, reported as such.
# Exported RCOLL_* variables (RCOLL_TRANSPORT, RCOLL_NET_DEVICES,
# RCOLL_LOG_LEVEL, ...) reach the ranks; RCOLL_TIMEOUT defaults to 60.
# Each launch's output goes to $RCOLL_TEST_LOGDIR (default test-logs/ at the
# top of the tree); a failure prints its last lines.  Prints one line per
# launch, "ok   LABEL WHAT n=N (S s)" or "FAIL LABEL WHAT n=N (S s): why",
# and ends with "P passed, F failed"; the exit status is 0 only if F is 0.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

launcher=rcollrun
ranks="1 2 3 4 5 8"
quick=0
label=""
only="coll comm group nb node nodealg timeout mismatch late wedge where shmleft dead flood faults oob auth shrink tune scale model bind"
coll_args=()
limit_override=""
dead_bound=5
deadline_ranks=""

nodes=""
srun_nodes=""
usage() { sed -n '2,/^# Every launch runs/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case "$1" in
    --launcher) launcher=${2:?}; shift ;;
    --ranks) ranks=${2:?}; shift ;;
    --quick) quick=1 ;;
    --label) label=${2:?}; shift ;;
    --only) only=${2:?}; shift ;;
    --coll) coll_args+=(--coll "${2:?}"); shift ;;
    --algs) coll_args+=(--algs "${2:?}"); shift ;;
    --timeout) limit_override=${2:?}; shift ;;
    --dead-bound) dead_bound=${2:?}; shift ;;
    --deadline-ranks) deadline_ranks=${2:?}; shift ;;
    --nodes) nodes=${2:?}; shift ;;
    --srun-nodes) srun_nodes=${2:?}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
[ -n "$label" ] || label=$launcher
case "$launcher" in
rcollrun|mpirun|srun) ;;
*) echo "run.sh: unknown launcher '$launcher' (rcollrun, mpirun or srun)" >&2; exit 2 ;;
esac
if [ -n "$nodes" ] && [ "$launcher" != rcollrun ]; then
    echo "run.sh: --nodes needs --launcher rcollrun" >&2; exit 2
fi
if [ -n "$srun_nodes" ]; then
    [ "$launcher" = srun ] || { echo "run.sh: --srun-nodes needs --launcher srun" >&2; exit 2; }
    for spec in $srun_nodes; do
        [[ $spec =~ ^[1-9][0-9]*(x[1-9][0-9]*)?$ ]] ||
            { echo "run.sh: --srun-nodes: '$spec' is not K or KxP" >&2; exit 2; }
    done
    nodes=$srun_nodes
    # srun -N K on a cluster with fewer nodes queues for ever: say so now.
    need=0
    for spec in $srun_nodes; do [ "${spec%x*}" -gt "$need" ] && need=${spec%x*}; done
    have=$(timeout 20 sinfo -h -N -o %N 2>/dev/null | sort -u | wc -l)
    if [ "$have" -lt "$need" ]; then
        echo "run.sh: --srun-nodes needs $need Slurm nodes, sinfo shows $have" \
             "(test/launchers/slurm-up --nodes $need brings them up on this host)" >&2
        exit 2
    fi
fi

export RCOLL_TIMEOUT=${RCOLL_TIMEOUT:-60}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
logdir=${RCOLL_TEST_LOGDIR:-$top/test-logs}/integration-$label
mkdir -p "$logdir" || { echo "run.sh: cannot create $logdir" >&2; exit 2; }

passed=0
failed=0

# launch_cmd N PROG ARGS...: the launcher's command line, into array cmd
# (N = 0: the program alone, it starts its ranks itself)
launch_cmd() {
    local n=$1; shift
    [ "$n" = 0 ] && { cmd=("$@"); return; }
    case "$launcher" in
    rcollrun) cmd=("$top/tools/rcollrun/rcollrun" -n "$n" ${node_arg:+--nodes "$node_arg"}
                   --timeout "$limit" -- "$@") ;;
    mpirun) cmd=(mpirun --allow-run-as-root --oversubscribe -n "$n" "$@") ;;
    srun) cmd=(srun --mpi=pmix ${node_arg:+-N "$node_arg"} ${srun_ppn:+--ntasks-per-node "$srun_ppn"}
               -n "$n" --overcommit "$@") ;;
    esac
}

# run_one WHAT N LIMIT PROG ARGS...
run_one() {
    local what=$1 n=$2; limit=${limit_override:-$3}; shift 3
    local prog=$1 log t0 rc secs why
    log="$logdir/$(echo "$what" | tr ' /' '__')-n$n${node_arg:+-nodes$node_arg}.log"
    t0=$(date +%s%N)
    if [ ! -f "$prog" ] || [ ! -x "$prog" ]; then
        rc=127
        echo "run.sh: $prog is not built (run make first)" > "$log"
    elif [ "$n" != 0 ] && [ "$launcher" != rcollrun ] && ! command -v "$launcher" >/dev/null; then
        rc=127
        echo "run.sh: launcher '$launcher' not found in PATH" > "$log"
    elif [ "$n" != 0 ] && [ "$launcher" = rcollrun ] && [ ! -x "$top/tools/rcollrun/rcollrun" ]; then
        rc=127
        echo "run.sh: $top/tools/rcollrun/rcollrun is not built" > "$log"
    else
        launch_cmd "$n" "$@"
        echo "+ ${cmd[*]}" > "$log"
        # rcollrun ends the job itself at the limit and says so; `timeout` is
        # the backstop (for the other launchers, the limit)
        local outer=$limit
        [ "$launcher" = rcollrun ] && [ "$n" != 0 ] && outer=$((limit + 15))
        timeout --kill-after=10 "$outer" "${cmd[@]}" >> "$log" 2>&1 < /dev/null
        rc=$?
    fi
    secs=$(( ($(date +%s%N) - t0) / 100000000 ))
    secs=$((secs / 10)).$((secs % 10))
    if [ "$rc" -eq 0 ]; then
        printf 'ok   %s %s n=%s%s (%s s)\n' "$label" "$what" "$n" "${node_arg:+ nodes=$node_arg}" "$secs"
        passed=$((passed + 1))
        return
    fi
    case $rc in
    124|137) why="hang: killed after ${limit} s (exit status $rc)" ;;
    127) why=$(head -n 1 "$log") ;;
    *) why="exit status $rc" ;;
    esac
    printf 'FAIL %s %s n=%s%s (%s s): %s; log %s\n' "$label" "$what" "$n" \
        "${node_arg:+ nodes=$node_arg}" "$secs" "$why" "$log"
    tail -n 25 "$log" | sed 's/^/     | /'
    failed=$((failed + 1))
}

# where_summary N: rcollrun's one summary line of where_check's timeouts
# must name the late rank (5, or the last) as not entered and not in rcoll.
where_summary() {
    local n=$1 late log
    late=$(( n > 5 ? 5 : n - 1 ))
    log="$logdir/where_check-n$n${node_arg:+-nodes$node_arg}.log"
    if grep -q "^rcollrun: where is everyone: .*named as not there: world rank $late (by [0-9]*: not entered, not in rcoll" "$log"; then
        printf 'ok   %s rcollrun where summary n=%s\n' "$label" "$n"
        passed=$((passed + 1))
    else
        printf 'FAIL %s rcollrun where summary n=%s: no summary line naming world rank %s; log %s\n' \
            "$label" "$n" "$late" "$log"
        grep '^rcollrun:' "$log" | tail -n 5 | sed 's/^/     | /'
        failed=$((failed + 1))
    fi
}

wants() { case " $only " in *" $1 "*) return 0 ;; esac; return 1; }
# at_deadline_ranks N: N is one of --deadline-ranks (all when not given)
at_deadline_ranks() {
    [ -z "$deadline_ranks" ] && return 0
    case " $deadline_ranks " in *" $1 "*) return 0 ;; esac
    return 1
}

qflag=()
[ "$quick" = 1 ] && qflag=(--quick)
# run_set N: every wanted check at N ranks (under node_arg's layout, if any)
run_set() {
    local n=$1 lim
    if wants coll; then
        if [ "$quick" = 1 ]; then lim=300; else lim=1200; fi
        run_one "coll_check${qflag[*]:+ ${qflag[*]}}" "$n" "$lim" \
            "$here/coll_check" "${qflag[@]}" "${coll_args[@]}"
        # the shm single-copy paths at every size (a tune file's shm lines
        # may turn any of them on under auto): one node, 2 and 3 ranks; not
        # where RCOLL_SHM=0 says the run is about the network (the guest)
        if [ -z "$node_arg" ] && [ "${RCOLL_SHM:-1}" != 0 ] && { [ "$n" = 2 ] || [ "$n" = 3 ]; }; then
            run_one "coll_check --algs shm RCOLL_SHM_CMA=on" "$n" 300 \
                "$(command -v env)" RCOLL_SHM_CMA=on "$here/coll_check" --algs shm
        fi
        # the allgather's run-time path choice switched at random by rank 0
        # (hundreds of times): every call on every rank must take rank 0's
        # path for it, or the call fails; each result validated
        if [ -z "$node_arg" ] && [ "${RCOLL_SHM:-1}" != 0 ] && [ "$n" = 2 ]; then
            run_one "osu_allgather -c RCOLL_SHM_ADAPT=random" "$n" 120 \
                "$(command -v env)" RCOLL_SHM_ADAPT=random "$top/examples/rcoll_osu_allgather" \
                -c -s 16384,24576,65536,131072,1048576 -i 400 -x 10
            # the same for the bcast's path (from 32 KiB)
            run_one "osu_bcast -c RCOLL_SHM_ADAPT=random" "$n" 120 \
                "$(command -v env)" RCOLL_SHM_ADAPT=random "$top/examples/rcoll_osu_bcast" \
                -c -s 16384,32768,65536,100000,131072,1048576 -i 400 -x 10
        fi
        # the flat allreduce's copy-in, the small bcast root's copy and the
        # allgather's writes into the segment with plain or streaming stores, each
        # rank choosing at random per call: odd counts (unaligned tails),
        # every dtype and op, every root, in place, against the reference
        if [ -z "$node_arg" ] && [ "${RCOLL_SHM:-1}" != 0 ] && { [ "$n" = 2 ] || [ "$n" = 3 ]; }; then
            run_one "coll_check allreduce bcast allgather RCOLL_SHM_ADAPT=random" "$n" 120 \
                "$(command -v env)" RCOLL_SHM_ADAPT=random "$here/coll_check" --algs shm \
                --coll allreduce,iallreduce,bcast,ibcast,allgather,iallgather \
                --counts 2049,4099,5001,12289,30001
        fi
    fi
    wants comm && run_one comm_check "$n" 180 "$here/comm_check"
    wants group && run_one group_check "$n" 180 "$here/group_check"
    wants nb && run_one nb_check "$n" 180 "$here/nb_check"
    wants node && run_one node_check "$n" 120 "$here/node_check"
    if wants nodealg && [ -n "$node_arg" ] && [ "$n" -ge 2 ]; then
        node_alg_checks "$n"
    fi
    if wants timeout && [ "$n" -ge 2 ] && at_deadline_ranks "$n"; then
        run_one timeout_check "$n" 120 "$here/timeout_check"
    fi
    if wants mismatch && [ "$n" -ge 2 ] && at_deadline_ranks "$n"; then
        run_one mismatch_check "$n" 180 "$here/mismatch_check"
        run_one "mismatch_check --no-shm" "$n" 180 "$here/mismatch_check" --no-shm
    fi
    if wants wedge && [ "$n" -ge 2 ]; then
        if [ "$n" -eq 2 ]; then
            run_one wedge_check "$n" 120 "$here/wedge_check"
        else
            run_one "wedge_check --only late" "$n" 120 "$here/wedge_check" --only late
        fi
    fi
    if wants where && { [ "$n" -eq 2 ] || [ "$n" -ge 8 ]; }; then
        run_one where_check "$n" 120 "$here/where_check"
        [ "$launcher" = rcollrun ] && where_summary "$n"
    fi
    # rcollrun only (it reports a rank's SIGKILL as such), one node only
    if wants shmleft && [ "$launcher" = rcollrun ] && [ -z "$node_arg" ] &&
       { [ "$n" = 2 ] || [ "$n" = 3 ] || [ "$n" -ge 8 ]; }; then
        run_one "shm_leftover.sh -n $n" 0 240 "$here/shm_leftover.sh" "$n"
        run_one "shm_leftover.sh --small -n $n" 0 300 "$here/shm_leftover.sh" --small "$n"
    fi
    if wants late && { [ "$n" = 2 ] || [ "$n" = 3 ]; }; then
        late_checks "$n"
    fi
    if wants dead && [ "$n" -ge 3 ] && [ "$launcher" = rcollrun ]; then
        dead_checks "$n"
    fi
    if wants flood && { [ "$n" = 2 ] || [ "$n" = 3 ]; }; then
        flood_checks "$n"
    fi
    wants faults && fault_checks "$n"
    return 0
}

# node_alg_checks N: the node-aware algorithms forced by the environment
# (coll_check and node_check force them with rcoll_config_set) on every
# communicator comm_check and nb_check make; on a node's own
# sub-communicators the selector must fall back to flat algorithms.
node_alg_checks() {
    local n=$1
    local -x RCOLL_ALLREDUCE_ALGORITHM=node_aware RCOLL_BCAST_ALGORITHM=node_aware \
             RCOLL_REDUCE_ALGORITHM=node_aware RCOLL_ALLGATHER_ALGORITHM=node_aware \
             RCOLL_BARRIER_ALGORITHM=node_aware
    run_one "comm_check node_aware forced" "$n" 180 "$here/comm_check"
    run_one "nb_check node_aware forced" "$n" 180 "$here/nb_check"
    RCOLL_ALLREDUCE_ALGORITHM=node_leader RCOLL_REDUCE_ALGORITHM=node_leader \
        run_one "comm_check node_leader forced" "$n" 180 "$here/comm_check"
}

# flood_checks N: flood_check (bounded unexpected-message memory) over UCX's
# shared-memory and tcp transports, or once under the transport and UCX_TLS
# the caller chose.  N = 2 with a 16 MiB bound; N = 3 with the default (64
# MiB, so 20000 bcasts: 312 MiB unbounded, well above 64 MiB + the slack).
flood_checks() {
    local n=$1 tls args=(--count 20000)
    [ "$n" = 2 ] && args=(--max 16m)
    if [ -n "${UCX_TLS:-}" ] || [ "${RCOLL_TRANSPORT:-auto}" = verbs ]; then
        run_one "flood_check${args[*]:+ ${args[*]}}" "$n" 120 "$here/flood_check" "${args[@]}"
        return
    fi
    for tls in sm tcp; do
        UCX_TLS=$tls run_one "flood_check${args[*]:+ ${args[*]}} UCX_TLS=$tls" "$n" 120 \
            "$here/flood_check" "${args[@]}"
    done
}

# dead_checks N: dead_check in each mode (shm; UCX shared memory and tcp
# without shm), or under the transport and UCX_TLS the caller chose.
dead_checks() {
    local n=$1 b mode sizes
    local modes=("shm:RCOLL_SHM=1" "ucx-sm:RCOLL_SHM=0 UCX_TLS=sm,self" "ucx-tcp:RCOLL_SHM=0 UCX_TLS=tcp,self")
    if [ -n "${UCX_TLS:-}" ] || [ "${RCOLL_TRANSPORT:-auto}" = verbs ] || [ -n "$node_arg" ]; then
        modes=("shm:RCOLL_SHM=1" "no-shm:RCOLL_SHM=0")
    fi
    # The network alone (the soft-RDMA guest: the caller set RCOLL_SHM=0 and
    # the transport): every source, and only the transport's errors and
    # probes (RCOLL_LIVENESS=transport), as for a rank on another node.
    # N = 3 only: a UCX launch costs ~60 s in the guest.
    if [ "${RCOLL_SHM:-1}" = 0 ] && [ -z "$node_arg" ] &&
       { [ -n "${UCX_TLS:-}" ] || [ "${RCOLL_TRANSPORT:-auto}" = verbs ]; }; then
        [ "$n" = 3 ] || return 0
        # UCX has no probe (its small sends to a dead rc_verbs peer did not
        # fail in 50 s): its keepalive over ud_verbs reports the death after
        # UCX_KEEPALIVE_INTERVAL + UCX_UD_TIMEOUT (20 + 30 s by default), made
        # 10 + 5 s here to fit the bound (docs/reliability.md, "Dead ranks").
        local ucx_ka=""
        [ -z "${UCX_TLS:-}" ] || ucx_ka="UCX_KEEPALIVE_INTERVAL=10s UCX_UD_TIMEOUT=5s"
        dead_one "$n" net "RCOLL_SHM=0" 8
        for b in 8 65536; do
            dead_one "$n" transport "RCOLL_SHM=0 RCOLL_LIVENESS=transport $ucx_ka" "$b"
        done
        return
    fi
    for mode in "${modes[@]}"; do
        # Over tcp UCX 1.13 emulates RMA with active messages, and a survivor
        # that serves a get or put the dead rank asked for aborts inside UCX
        # (ucp_request_send: "unexpected error: Endpoint timeout"; about 1
        # run in 30 with 4 MiB): tcp is checked with eager messages only
        # (16 KiB = RCOLL_EAGER_LIMIT's default; docs/reliability.md).
        # Between (emulated) nodes UCX runs over tcp as well.
        sizes="8 4194304"
        { [ "${mode%%:*}" = ucx-tcp ] || [ -n "$node_arg" ]; } && sizes="8 16384"
        for b in $sizes; do
            dead_one "$n" "${mode%%:*}" "${mode#*:}" "$b"
        done
    done
}

# dead_one N MODE ENV BYTES: rcollrun exits with the victim's status (137),
# every other rank prints its "ok" line (with the times it measured).
dead_one() {
    local n=$1 mode=$2 envs=$3 bytes=$4 log stamp rc t0 secs why="" ok worst
    log="$logdir/dead_check-$mode-$bytes-n$n${node_arg:+-nodes$node_arg}.log"
    stamp=$(mktemp -u "${TMPDIR:-/tmp}/dead_check.XXXXXX")
    limit=${limit_override:-60}
    launch_cmd "$n" "$here/dead_check" --bytes "$bytes" --stamp "$stamp" --bound "$dead_bound"
    echo "+ $envs RCOLLRUN_KEEP_GOING=1 ${cmd[*]}" > "$log"
    t0=$(date +%s%N)
    env $envs RCOLLRUN_KEEP_GOING=1 timeout --kill-after=10 $((limit + 15)) "${cmd[@]}" >> "$log" 2>&1 < /dev/null
    rc=$?
    rm -f "$stamp" "$stamp".done.*
    secs=$(( ($(date +%s%N) - t0) / 100000000 ))
    secs=$((secs / 10)).$((secs % 10))
    ok=$(grep -c '^dead_check: rank [0-9]* ok:' "$log")
    worst=$(grep -o 'ok: .* after [0-9.]* s (from' "$log" | sed 's/.* after \([0-9.]*\) s (from/\1/' |
            sort -n | tail -n 1)
    if [ "$ok" != $((n - 1)) ]; then
        why="$ok of $((n - 1)) survivors report ok"
    elif ! grep -q '^rcollrun: rank 2 (pid [0-9]*) killed by signal 9' "$log"; then
        why="rcollrun does not report rank 2 killed"
    elif [ "$rc" != 137 ]; then
        why="exit status $rc, expected 137 (the victim's)"
    fi
    if [ -z "$why" ]; then
        printf 'ok   %s dead_check %s %s B n=%s%s (%s s; PEER_FAILED after at most %s s)\n' "$label" \
            "$mode" "$bytes" "$n" "${node_arg:+ nodes=$node_arg}" "$secs" "${worst:-?}"
        passed=$((passed + 1))
    else
        printf 'FAIL %s dead_check %s %s B n=%s%s (%s s): %s; log %s\n' "$label" "$mode" "$bytes" \
            "$n" "${node_arg:+ nodes=$node_arg}" "$secs" "$why" "$log"
        grep -E 'FAIL|rcollrun:|failed' "$log" | tail -n 15 | sed 's/^/     | /'
        failed=$((failed + 1))
    fi
}

# fault_checks N: the fault matrix (fault_matrix.sh), in full under rcollrun
# on one node at N = 4; the reduced set under mpirun (N = 4) and srun (N >= 3).
fault_checks() {
    local n=$1 cells="shm:pipeline ucx-tcp:rndv" log rc
    case "$launcher" in
    rcollrun) [ "$n" = 4 ] && [ -z "$node_arg" ] || return 0
              set -- ;;
    mpirun)   [ "$n" = 4 ] || return 0
              set -- --victims 2 --cells "$cells" ;;
    srun)     [ "$n" -ge 3 ] || return 0
              # the shm pipeline needs the world on one node
              [ -n "$node_arg" ] && [ "$node_arg" != 1 ] && cells=ucx-tcp:rndv
              set -- --victims $((n / 2)) --cells "$cells" ;;
    esac
    log="$logdir/fault_matrix-$launcher-n$n${node_arg:+-nodes$node_arg}.log"
    SRUN_NODES=$node_arg "$here/fault_matrix.sh" --launcher "$launcher" -n "$n" "$@" > "$log" 2>&1
    rc=$?
    grep -E '^(ok|FAIL|skip|note) |^     \|' "$log" | sed "s/ faults / $label faults /"
    passed=$((passed + $(grep -c '^ok ' "$log")))
    failed=$((failed + $(grep -c '^FAIL ' "$log")))
    if [ "$rc" != 0 ] && ! grep -q '^FAIL ' "$log"; then
        printf 'FAIL %s fault_matrix.sh n=%s: exit status %s; log %s\n' "$label" "$n" "$rc" "$log"
        failed=$((failed + 1))
    fi
}

# late_checks N: late_write_check over each UCX shared-memory and network
# transport (the protocol differs by what the transport can revoke), or once
# under the transport and UCX_TLS the caller chose.
late_checks() {
    local n=$1 tls
    if [ -n "${UCX_TLS:-}" ] || [ "${RCOLL_TRANSPORT:-auto}" = verbs ]; then
        run_one late_write_check "$n" 120 "$here/late_write_check"
        return
    fi
    for tls in posix cma,tcp tcp; do
        UCX_TLS=$tls run_one "late_write_check UCX_TLS=$tls" "$n" 120 "$here/late_write_check"
    done
}

# ucx_lanes N: under node_arg, UCX must join ranks of different nodes over
# tcp and say nothing at error level (e.g. a failed shared-memory attach).
ucx_lanes() {
    local n=$1 log
    log="$logdir/ucx-lanes-n$n-nodes$node_arg.log"
    if timeout 120 "$top/tools/rcollrun/rcollrun" -n "$n" --nodes "$node_arg" \
            -x UCX_LOG_LEVEL=info -x RCOLL_TRANSPORT=ucx -- "$here/node_check" > "$log" 2>&1 < /dev/null &&
       grep -q 'ep_cfg\[[0-9]*\]:.*tcp/' "$log" && ! grep -q 'UCX  ERROR' "$log"; then
        printf 'ok   %s ucx uses tcp between nodes n=%s nodes=%s\n' "$label" "$n" "$node_arg"
        passed=$((passed + 1))
    else
        printf 'FAIL %s ucx uses tcp between nodes n=%s nodes=%s: no tcp lane, an error or a failed run; log %s\n' \
            "$label" "$n" "$node_arg" "$log"
        grep -E 'ep_cfg|ERROR|FAIL' "$log" | tail -n 10 | sed 's/^/     | /'
        failed=$((failed + 1))
    fi
}

# srun_spread N: under srun -N node_arg, every rank's rcoll must report
# node_arg node(s) and node_check must find the ranks on node_arg nodes
# (their SLURMD_NODENAME), so the launch really spans the nodes.
srun_spread() {
    local n=$1 log t0 secs k=$node_arg bad=""
    log="$logdir/srun-spread-n$n-nodes$k.log"
    launch_cmd "$n" env RCOLL_LOG_LEVEL=info "$here/node_check"
    t0=$(date +%s%N)
    echo "+ ${cmd[*]}" > "$log"
    timeout --kill-after=10 120 "${cmd[@]}" >> "$log" 2>&1 < /dev/null || bad="exit status $?"
    secs=$(( ($(date +%s%N) - t0) / 100000000 ))
    secs=$((secs / 10)).$((secs % 10))
    [ -n "$bad" ] || grep -q "^node_check: $n ranks on $k node(s) ok" "$log" ||
        bad="node_check did not find $n ranks on $k nodes"
    [ -n "$bad" ] || [ "$(grep -c "initialised .*, $k node(s)," "$log")" = "$n" ] ||
        bad="not every rank's rcoll reports $k node(s)"
    if [ -z "$bad" ]; then
        printf 'ok   %s rcoll sees %s nodes n=%s nodes=%s (%s s)\n' "$label" "$k" "$n" "$k" "$secs"
        passed=$((passed + 1))
    else
        printf 'FAIL %s rcoll sees %s nodes n=%s nodes=%s (%s s): %s; log %s\n' \
            "$label" "$k" "$n" "$k" "$secs" "$bad" "$log"
        grep -E 'initialised|node_check|FAIL|rror' "$log" | tail -n 12 | sed 's/^/     | /'
        failed=$((failed + 1))
    fi
}

node_arg=""
srun_ppn=""
if [ -z "$nodes" ]; then
    for n in $ranks; do run_set "$n"; done
else
    for spec in $nodes; do
        case "$spec" in
        *x*) node_arg=${spec%x*}; set_ranks=$(( ${spec%x*} * ${spec#*x} ))
             [ "$launcher" = srun ] && srun_ppn=${spec#*x} ;;
        *,*) node_arg=$spec; set_ranks=$(( ${spec//,/+} )) ;;
        *) node_arg=$spec; set_ranks=$ranks ;;
        esac
        for n in $set_ranks; do
            if [ "${node_arg//,/}" = "$node_arg" ] && [ "$n" -lt "$node_arg" ]; then
                continue     # fewer ranks than nodes
            fi
            run_set "$n"
            if [ "$launcher" = srun ]; then
                srun_spread "$n"
            elif [ "$node_arg" != 1 ]; then
                ucx_lanes "$n"
            fi
        done
        srun_ppn=""
    done
    node_arg=""
fi
# shrink_case TMODE ENV MODE WANT_RC WANT_OK KILLED [ARGS]: shrink_check
# MODE [ARGS] at 6 ranks under rcollrun --enable-recovery with ENV must exit
# WANT_RC (128+9: the first SIGKILLed rank's status) with WANT_OK ranks
# reporting ok, no FAIL, and rcollrun naming each of the KILLED world ranks
# ("2 4": rank 2, then rank 4) on one line.
shrink_case() {
    local tmode=$1 envs=$2 mode=$3 want_rc=$4 want_ok=$5 killed=$6 log rc nok t0 secs k named=1
    shift 6
    log="$logdir/shrink_check_$mode-$tmode-n6.log"
    t0=$(date +%s)
    # shellcheck disable=SC2206
    cmd=(env $envs "$top/tools/rcollrun/rcollrun" --enable-recovery -n 6 --timeout 100 --
         "$here/shrink_check" "$mode" "$@")
    echo "+ ${cmd[*]}" > "$log"
    timeout --kill-after=10 120 "${cmd[@]}" >> "$log" 2>&1 < /dev/null
    rc=$?
    secs=$(( $(date +%s) - t0 ))
    nok=$(grep -c '^shrink_check rank [0-9]*: ok' "$log")
    for k in $killed; do
        grep -q "^rcollrun: rank $k .*killed by signal 9.*go on" "$log" || named=0
    done
    if [ "$rc" = "$want_rc" ] && [ "$nok" = "$want_ok" ] && ! grep -q '^FAIL' "$log" &&
       [ "$named" = 1 ]; then
        printf 'ok   %s shrink_check %s %s n=6 (%s s)\n' "$label" "$mode" "$tmode" "$secs"
        passed=$((passed + 1))
    else
        printf 'FAIL %s shrink_check %s %s n=6 (%s s): exit status %s (want %s), %s ranks ok (want %s), killed ranks %s named by rcollrun: %s; log %s\n' \
            "$label" "$mode" "$tmode" "$secs" "$rc" "$want_rc" "$nok" "$want_ok" "${killed:-none}" \
            "$([ "$named" = 1 ] && echo yes || echo no)" "$log"
        tail -n 25 "$log" | sed 's/^/     | /'
        failed=$((failed + 1))
    fi
}
# shrink_checks: every shrink_check mode over shm, UCX shared memory and UCX
# tcp (both without shm), or over shm and without it under the transport
# and UCX_TLS the caller chose.  Over tcp every allreduce is 16 KiB (eager):
# UCX 1.13 aborts a survivor that serves a get the dead rank asked for (see
# dead_checks; docs/reliability.md).  About 35 s in all.
shrink_checks() {
    local tm args
    local modes=("shm:RCOLL_SHM=1" "ucx-sm:RCOLL_SHM=0 UCX_TLS=sm,self" "ucx-tcp:RCOLL_SHM=0 UCX_TLS=tcp,self")
    if [ -n "${UCX_TLS:-}" ] || [ "${RCOLL_TRANSPORT:-auto}" = verbs ]; then
        modes=("shm:RCOLL_SHM=1" "no-shm:RCOLL_SHM=0")
    fi
    # RCOLL_SHRINK_CASES: the cases to run (default all five)
    local cases=" ${RCOLL_SHRINK_CASES:-kill kill2 kill-member kill-coord stop} "
    for tm in "${modes[@]}"; do
        args=()
        [ "${tm%%:*}" = ucx-tcp ] && args=(--bytes 16384)
        [[ $cases == *" kill "* ]] && shrink_case "${tm%%:*}" "${tm#*:}" kill 137 5 "2" "${args[@]}"
        [[ $cases == *" kill2 "* ]] && shrink_case "${tm%%:*}" "${tm#*:}" kill2 137 4 "2 4" "${args[@]}"
        [[ $cases == *" kill-member "* ]] && shrink_case "${tm%%:*}" "${tm#*:}" kill-member 137 4 "2 4" "${args[@]}"
        [[ $cases == *" kill-coord "* ]] && shrink_case "${tm%%:*}" "${tm#*:}" kill-coord 137 4 "2 0" "${args[@]}"
        [[ $cases == *" stop "* ]] && shrink_case "${tm%%:*}" "${tm#*:}" stop 0 6 "" "${args[@]}"
    done
    return 0
}
if wants shrink && [ "$launcher" = rcollrun ] && [ -z "$nodes" ]; then
    shrink_checks
fi

# the calibration command and its tune file (it launches its own 2 ranks)
if wants tune && [ "$launcher" = rcollrun ] && [ -z "$nodes" ]; then
    run_one "tune_check.sh" 0 150 "$here/tune_check.sh"
fi

# memory and init time per rank against the formulas (its own 4 and 32 ranks):
# the formula's UCX terms are those of the host's default UCX (shm + tcp), so
# not where a transport or UCX's transports are chosen (the soft-RDMA guest)
if wants scale && [ "$launcher" = rcollrun ] && [ -z "$nodes" ] &&
        [ -z "${RCOLL_TRANSPORT:-}" ] && [ -z "${UCX_TLS:-}" ]; then
    run_one "scale_check.sh" 0 120 "$here/scale_check.sh"
fi

# rcollrun's binding, seen from inside the ranks (its own 1, 2 and 2 x cores
# ranks), once, on the host (not again for each transport the guest runs)
if wants bind && [ "$launcher" = rcollrun ] && [ -z "$nodes" ] && [ -z "${RCOLL_TRANSPORT:-}" ]; then
    run_one "bind_check.sh" 0 60 "$here/bind_check.sh"
fi

# the cost model against measurement: its own launches under --nodes 2x2 and
# 4x2 (namespaces, root), once, in a run that emulates nodes
if wants model && [ "$launcher" = rcollrun ] && [ -n "$nodes" ] && [ "$(id -u)" = 0 ]; then
    run_one "model_check.sh" 0 120 "$here/model_check.sh"
fi

# threads with their own contexts in one process: no launcher, run once
wants oob && run_one "oob_threads${qflag[*]:+ ${qflag[*]}}" 0 300 "$here/oob_threads" "${qflag[@]}"
wants auth && run_one "auth_check" 0 120 "$here/auth_check"
# ... and a forged rdma_cm request, where the ranks use verbs (the soft-RDMA guest)
[ "${RCOLL_TRANSPORT:-}" = verbs ] && wants auth &&
    run_one "auth_check --verbs" 0 300 "$here/auth_check" --verbs --threads 2

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
