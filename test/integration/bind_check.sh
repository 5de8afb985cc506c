#!/bin/bash
# bind_check.sh: rcollrun's binding (issue 11 item 6), checked from inside
# the ranks, not only from what rcollrun says it did.
#   1. `rcollrun -n 2 --report-bindings` prints one line per rank, "bound to
#      core C: cpus LIST", with two different cores, and each rank's own
#      Cpus_allowed_list (/proc/self/status) is exactly the LIST reported for
#      it (one CPU, or the core's hardware threads), not every CPU.
#   2. `--bind-to none`: "not bound (--bind-to none)", and each rank may run
#      on every CPU rcollrun was given.
#   3. More ranks than cores (2 x the cores): "not bound (N ranks, C cores)"
#      for every rank, and each rank may run on every CPU.
#   4. Inside a job, rcoll_info's "binding:" line agrees with the rank's
#      affinity (bound to that rank's core at -n 2; not bound with
#      --bind-to none, when this shell may use every online CPU): what a
#      user under an external launcher sees.
# Needs 2 or more CPUs in this process's affinity mask (otherwise it says so
# and skips item 1 and the bound half of item 4).  Exit status 0 only if all
# hold.  About 2 s.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
rcollrun="$top/tools/rcollrun/rcollrun"
info="$top/tools/rcoll_info"
fails=0
fail() { echo "bind_check: FAIL: $*"; fails=$((fails + 1)); }
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# the CPUs this shell may run on (what rcollrun is given), as a list "0-1"
all=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)
ncpu=$(nproc)

# one line per rank: "affinity R <Cpus_allowed_list>"; affinity_of R reads it back
show_affinity='echo "affinity $PMIX_RANK $(awk "/^Cpus_allowed_list/ {print \$2}" /proc/self/status)"'
affinity_of() { awk -v r="$1" '$1 == "affinity" && $2 == r {print $3}' "$out"; }

# 1. two ranks, bound to two different cores
if [ "$ncpu" -ge 2 ]; then
    "$rcollrun" -n 2 --report-bindings sh -c "$show_affinity" > "$out" 2>&1 ||
        fail "rcollrun -n 2 --report-bindings exited with $?"
    cores=() cpus=()
    for r in 0 1; do
        line=$(grep "^rcollrun: rank $r: " "$out")
        # a core's CPUs: one, or its hardware threads (e.g. "0,2")
        if [[ "$line" =~ bound\ to\ core\ ([0-9]+):\ cpus\ ([0-9,-]+)$ ]]; then
            cores[r]=${BASH_REMATCH[1]} cpus[r]=${BASH_REMATCH[2]}
            got=$(affinity_of "$r")
            [ "$got" = "${cpus[r]}" ] ||
                fail "rank $r: reported cpus ${cpus[r]}, but its affinity is '$got'"
            [ "${cpus[r]}" != "$all" ] || fail "rank $r: 'bound' to every CPU ($all)"
        else
            fail "rank $r: no 'bound to core C: cpus LIST' line (got '$line')"
        fi
    done
    [ -n "${cores[0]:-}" ] && [ "${cores[0]:-}" = "${cores[1]:-}" ] &&
        fail "both ranks bound to core ${cores[0]}"
    [ -n "${cpus[0]:-}" ] && [ "${cpus[0]:-}" = "${cpus[1]:-}" ] &&
        fail "both ranks bound to cpus ${cpus[0]}"
    [ "$fails" -eq 0 ] &&
        echo "bind_check: -n 2: ranks on cores ${cores[0]} and ${cores[1]} (cpus ${cpus[0]} and ${cpus[1]}) ok"
else
    echo "bind_check: only $ncpu CPU here: the two-core check is skipped"
fi

# 2. and 3.: not bound, each rank free to run on every CPU it was given
unbound() {   # why-text, rank count, then rcollrun's other options
    local why=$1 n=$2
    shift 2
    set -- -n "$n" "$@"
    "$rcollrun" "$@" --report-bindings sh -c "$show_affinity" > "$out" 2>&1 ||
        fail "rcollrun $* exited with $?"
    for ((r = 0; r < n; r++)); do
        grep -q "^rcollrun: rank $r: not bound ($why): cpus $all\$" "$out" ||
            fail "rcollrun $*: rank $r not reported 'not bound ($why): cpus $all'"
        got=$(affinity_of "$r")
        [ "$got" = "$all" ] || fail "rcollrun $*: rank $r's affinity is '$got', not $all"
    done
}
f0=$fails
unbound "--bind-to none" 2 --bind-to none
over=$((2 * ncpu))
unbound "$over ranks, $ncpu cores" "$over"
[ "$fails" -eq "$f0" ] && echo "bind_check: --bind-to none and $over ranks on $ncpu cores: not bound ok"

# 4. rcoll_info inside the job reports the binding the rank has
f0=$fails
if [ "$ncpu" -ge 2 ]; then
    "$rcollrun" -n 2 sh -c "$show_affinity; \"$info\" | grep '^binding:'" > "$out" 2>&1 ||
        fail "rcoll_info under rcollrun -n 2 exited with $?"
    for r in 0 1; do
        cpu=$(affinity_of "$r")
        grep -q "^binding: bound to PUs $cpu (1 of " "$out" ||
            fail "rcoll_info did not report rank $r bound to PU $cpu"
    done
fi
# (unbound only means "not bound" to rcoll_info when this shell may use every
# online CPU: under taskset the rank keeps the restriction it inherited)
if [ "$ncpu" -eq "$(getconf _NPROCESSORS_ONLN)" ]; then
    "$rcollrun" -n 1 --bind-to none "$info" > "$out" 2>&1 ||
        fail "rcoll_info under --bind-to none exited with $?"
    grep -q "^binding: not bound" "$out" ||
        fail "rcoll_info under --bind-to none: $(grep '^binding' "$out")"
fi
[ "$fails" -eq "$f0" ] && echo "bind_check: rcoll_info reports the binding ok"

[ "$fails" -eq 0 ] && echo "bind_check: ok"
[ "$fails" -eq 0 ]
