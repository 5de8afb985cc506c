#!/bin/bash
# The transport contract suite against every backend this machine can run.
#
#   test/contract/run.sh [-v] [RUN...]
#
# RUNs (default: loop ucx-shm ucx-tcp ucx-shm-lazy ucx-tcp-lazy verbs):
#   loop      the in-memory backend
#   ucx-shm   UCX with UCX_TLS=sm (shared memory, ranks on one node)
#   ucx-tcp   UCX with UCX_TLS=tcp, ranks told they are on two nodes (as across nodes)
#   ucx-shm-lazy, ucx-tcp-lazy  the same with RCOLL_UCX_LAZY_EPS=on (endpoints on
#             first use; the default only above 256 ranks)
#   verbs     raw verbs on the RDMA device RCOLL_NET_DEVICES picks (a skip line when
#             the machine has none)
#   ucx-rxe   UCX over a Soft-RoCE device (soft-RDMA guest only): UCX_TLS=rc_verbs,ud_verbs
# RUN:CASE,CASE... runs only those cases (tl_contract --list names them), e.g.
# ucx-rxe:put_range,dead_peer.
# Each run prints its cases (PASS, FAIL, XFAIL with the owning issue, XPASS = failed,
# SKIP = a capability the backend does not claim);
# the last line adds them up: "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=test/contract/tl_contract
verbose=()
[ "${1:-}" = -v ] && { verbose=(-v); shift; }
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=(loop ucx-shm ucx-tcp ucx-shm-lazy ucx-tcp-lazy verbs)
if [ ! -x "$BIN" ]; then
    echo "contract: building $BIN"
    make -j2 "$BIN" >/dev/null || { echo "contract: cannot build $BIN"; echo "0 passed, 1 failed"; exit 1; }
fi
pass=0 fail=0
for r in "${runs[@]}"; do
    only=()
    if [[ $r == *:* ]]; then
        IFS=, read -ra only <<<"${r#*:}"
        r=${r%%:*}
    fi
    case $r in
    loop)    cmd=("$BIN" "${verbose[@]}" loop) ;;
    ucx-shm) cmd=(env UCX_TLS=sm "$BIN" "${verbose[@]}" ucx) ;;
    ucx-tcp) cmd=(env UCX_TLS=tcp "$BIN" "${verbose[@]}" --split-nodes ucx) ;;
    ucx-shm-lazy) cmd=(env UCX_TLS=sm RCOLL_UCX_LAZY_EPS=on "$BIN" "${verbose[@]}" ucx) ;;
    ucx-tcp-lazy) cmd=(env UCX_TLS=tcp RCOLL_UCX_LAZY_EPS=on "$BIN" "${verbose[@]}" --split-nodes ucx) ;;
    # UCX_RC_RETRY_COUNT=6: UCX's default 7 means "retry forever" to rdma_rxe, so
    # rc_verbs never reports a dead peer there and only ud_verbs' 30 s timeout does.
    ucx-rxe) cmd=(env UCX_TLS=rc_verbs,ud_verbs UCX_NET_DEVICES=${UCX_NET_DEVICES:-rxe0:1}
                  UCX_UD_ETH_DGID_CHECK=n UCX_RC_RETRY_COUNT=6
                  "$BIN" "${verbose[@]}" --split-nodes ucx) ;;
    verbs)   cmd=("$BIN" "${verbose[@]}" verbs) ;;
    *) echo "contract: unknown run '$r' (loop ucx-shm ucx-tcp ucx-shm-lazy ucx-tcp-lazy ucx-rxe verbs)"; fail=$((fail + 1)); continue ;;
    esac
    cmd+=("${only[@]}")
    echo "=== contract $r: ${cmd[*]}"
    out=$(timeout -k 10 900 "${cmd[@]}" 2>&1)
    rc=$?
    echo "$out"
    line=$(tail -n 1 <<<"$out")
    if [[ $line =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        pass=$((pass + BASH_REMATCH[1])); fail=$((fail + BASH_REMATCH[2]))
        [ "$rc" = 0 ] || [ "${BASH_REMATCH[2]}" != 0 ] || { echo "contract $r: exit status $rc"; fail=$((fail + 1)); }
    else
        echo "contract $r: no summary line (exit status $rc)"; fail=$((fail + 1))
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
