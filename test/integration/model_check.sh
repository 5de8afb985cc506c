#!/bin/bash
# model_check.sh: the cost model against measurement under emulated nodes
# (issue 11 item 7; docs/scaling.md "Model against measurement").  Needs root
# (rcollrun --nodes).
#
# 1. The tcp path's figures: rcoll_tune --model-only --quick under rcollrun
#    --nodes 2 -n 2 (a ping-pong between two virtual nodes) measures
#    alpha_inter and beta_inter (and gamma), 3 times; the smallest of each
#    makes a tune file of model lines only.  MODEL_CHECK_TUNE=FILE uses FILE instead (how the check is shown
#    to fail: a file with a wrong beta_inter).
# 2. Predicted: rcoll_info --model --nodes K --ppn 2 --coll allreduce --bytes
#    SIZES under that file, for each layout (default 2x2 4x2): the algorithm
#    the model selects per size and its predicted time; at 1 MiB also
#    node_aware's and the cheapest flat algorithm's.
# 3. Measured: examples/rcoll_osu_allreduce under rcollrun --nodes K -n 2K
#    with RCOLL_TUNE_FILE set to that file, so the default selection is the
#    model's; on 2x2 also every flat algorithm forced at 1 MiB.  ROUNDS
#    rounds (default 3), the launches of a round in rotated order; the
#    fastest round per size (other jobs' load only adds time, so the fastest
#    round is the one it disturbed least: on a machine shared with QEMU
#    guests and 4 other builds the median still moved by 2x between runs).
# Checks, each of which fails the run:
#   a. the selector, under the measured figures, used what rcoll_info
#      predicts it selects (RCOLL_LOG_LEVEL=debug's "(cost model)" line), and
#      on 2x2 at 1 MiB that is a node-aware algorithm (issue 11 acceptance);
#   b. per layout and size: measured / (predicted x share) for the selected
#      algorithm within [1/TOL, TOL], TOL = MODEL_CHECK_TOL (default 4: on
#      the shared 2-vCPU development VM the ratios ran 0.4-1.5 at 2x2 (4.3
#      once, in a burst of load) and 0.5-3.1 at 4x2, where 4 ranks share a
#      core and every step waits for the scheduler; the tcp profile's 25 GbE figures, wrong here, give
#      5.9-38).  A layout slower than that at some size gets ROUNDS more
#      rounds, at most twice, before it fails (load only adds time);
#      share = max(1, ranks / cores): the figures come from 2 ranks, one per
#      core, but a layout of more ranks than cores (4 and 8 on a 2-core
#      machine) gives each rank 1/share of a core, and between virtual nodes
#      the "network" is the kernel's loopback copy on those same cores, so
#      every term of the model stretches by that factor.  It is a property
#      of the emulation, not of the model (real nodes bring their own cores
#      and NICs), so it lives here and not in rcoll_model_t;
#   c. on 2x2 at 1 MiB: the measured ranking of the selected node-aware
#      algorithm and the fastest flat one agrees with the model's (a
#      measured gap under MARGIN = MODEL_CHECK_MARGIN, default 10%, is a tie
#      and agrees with either).  If they disagree, ROUNDS more rounds of the
#      two are run, at most twice, before it fails: one algorithm's single
#      rounds spanned 2-10x under load, and more rounds only bring the
#      fastest nearer the unloaded time.
# Options (environment): MODEL_CHECK_LAYOUTS ("2x2 4x2"), MODEL_CHECK_SIZES
# (262144,1048576,4194304: the sizes where the measured figures, not the
# scheduling of 4-8 ranks on 2 cores, govern; 1048576 must be one), MODEL_CHECK_ROUNDS (3), MODEL_CHECK_TOL,
# MODEL_CHECK_MARGIN, MODEL_CHECK_TUNE.  Prints one line per layout and size.
# About 40 s on 2 shared cores.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
layouts=${MODEL_CHECK_LAYOUTS:-"2x2 4x2"}
sizes=${MODEL_CHECK_SIZES:-262144,1048576,4194304}
rounds=${MODEL_CHECK_ROUNDS:-3}
tol=${MODEL_CHECK_TOL:-4}
margin=${MODEL_CHECK_MARGIN:-0.10}
flat="ring recursive_doubling rabenseifner reduce_bcast"
rcollrun=$top/tools/rcollrun/rcollrun
osu=$top/examples/rcoll_osu_allreduce
fail=0
bad() { echo "FAIL: model_check: $*"; fail=1; }

for p in "$rcollrun" "$osu" "$top/tools/rcoll_tune" "$top/tools/rcoll_info"; do
    [ -x "$p" ] || { echo "model_check: $p is not built (run make first)"; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "model_check: rcollrun --nodes needs root"; exit 1; }
case ",$sizes," in *,1048576,*) ;; *) echo "model_check: MODEL_CHECK_SIZES must hold 1048576"; exit 2 ;; esac
tmp=$(mktemp -d /tmp/model_check.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
export RCOLL_TIMEOUT=${RCOLL_TIMEOUT:-60}

# 1. the figures: the smallest of 3 measurements per figure (as for the
# collectives below, load only adds time: both sides are then floors)
tune=${MODEL_CHECK_TUNE:-}
if [ -z "$tune" ]; then
    tune=$tmp/model.tune
    for i in 1 2 3; do
        if ! timeout 60 "$rcollrun" --nodes 2 -n 2 --timeout 50 -- "$top/tools/rcoll_tune" \
                --model-only --quick -o "$tmp/fig$i.tune" > "$tmp/tune.log" 2>&1 < /dev/null; then
            echo "model_check: rcoll_tune --model-only failed:"; tail -n 20 "$tmp/tune.log"; exit 1
        fi
    done
    awk '$1 == "model" && (!($2 in v) || $3 + 0 < v[$2]) { v[$2] = $3 + 0 }
         END { for (k in v) printf "model %s %.4g\n", k, v[k] }' "$tmp"/fig?.tune > "$tune"
fi
grep -q '^model alpha_inter' "$tune" && grep -q '^model beta_inter' "$tune" ||
    { echo "model_check: $tune has no alpha_inter / beta_inter"; exit 1; }
echo "model_check: figures: $(grep -E '^model (alpha_inter|beta_inter|gamma) ' "$tune" |
    awk '{printf "%s %s  ", $2, $3}')"
export RCOLL_TUNE_FILE=$tune

# 2. predicted: "BYTES ALG US" per row (the selected), and "1048576 NAME US" per algorithm
predict() {   # K -> $tmp/pred-K (selected) and $tmp/all-K (every algorithm at 1 MiB)
    local k=$1
    "$top/tools/rcoll_info" --model --nodes "$k" --ppn 2 --coll allreduce --bytes "$sizes" \
        > "$tmp/info-$k" || return 1
    awk -v sizes="$sizes" -v all="$tmp/all-$k" '
        BEGIN { ns = split(sizes, sz, ","); row = 0 }
        /^ +bytes / { for (i = 2; i <= NF; i++) name[i] = $i; nalg = NF - 4; next }
        nalg && NF == nalg + 4 {
            row++; sel = $(nalg + 2)
            for (i = 2; i <= nalg + 1; i++) {
                if (name[i] == sel) t = $i
                if (sz[row] == 1048576) print name[i], $i > all
            }
            print sz[row], sel, t
        }' "$tmp/info-$k" > "$tmp/pred-$k"
    [ "$(wc -l < "$tmp/pred-$k")" -eq "$(tr ',' '\n' <<< "$sizes" | wc -l)" ]
}

# 3. measured: one launch -> "BYTES US" lines appended to $tmp/meas-K-ALG
launch() {   # K ALG(default|name) SIZES
    local k=$1 alg=$2 sz=$3 out
    local -a a=()
    [ "$alg" = default ] || a=(-a "$alg")
    out=$(RCOLL_LOG_LEVEL=debug timeout 90 "$rcollrun" --nodes "$k" -n $((2 * k)) --timeout 80 -- \
          "$osu" -s "$sz" -T 60 -x 3 "${a[@]}" 2>&1 < /dev/null)
    awk '$1 ~ /^[0-9]+$/ && NF == 2 { print $1, $2 }' <<< "$out" >> "$tmp/meas-$k-$alg"
    [ "$alg" = default ] &&
        sed -n "s/.*allreduce \([0-9]*\) B on $((2 * k)) ranks: \([a-z_]*\) (cost model).*/\1 \2/p" \
            <<< "$out" | sort -u >> "$tmp/used-$k"
    return 0
}

# rank_1m K: mnode (the default's fastest at 1 MiB), mflat ("US NAME" of the
# fastest flat algorithm) and mwin (node, flat or tie) from what is measured
rank_1m() {
    local a v
    mnode=$(fastest "$tmp/meas-$1-default" 1048576)
    mflat=""
    for a in $flat; do
        v=$(fastest "$tmp/meas-$1-$a" 1048576)
        [ -n "$v" ] && mflat=$(printf '%s\n%s %s' "$mflat" "$v" "$a")
    done
    mflat=$(sed '/^$/d' <<< "$mflat" | sort -g | head -n 1)
    mwin=$(awk -v a="$mnode" -v b="${mflat%% *}" -v m="$margin" 'BEGIN {
        if (a < b * (1 - m)) print "node"; else if (b < a * (1 - m)) print "flat"; else print "tie" }')
}

fastest() {   # FILE BYTES -> the fastest round's us, or nothing
    awk -v b="$2" '$1 == b && (n++ == 0 || $2 + 0 < v) { v = $2 + 0 } END { if (n) print v }' \
        "$1" 2>/dev/null
}

for spec in $layouts; do
    k=${spec%x*}
    [ "${spec#*x}" = 2 ] || { echo "model_check: layout $spec: only Kx2 layouts"; exit 2; }
    share=$(awk -v p=$((2 * k)) -v c="$(nproc)" 'BEGIN { print (p > c) ? p / c : 1 }')
    predict "$k" || { bad "rcoll_info --model gave no prediction for $spec"; cat "$tmp/info-$k"; continue; }
    algs=(default)
    [ "$k" = 2 ] && algs+=($flat)
    for ((r = 0; r < rounds; r++)); do
        for ((i = 0; i < ${#algs[@]}; i++)); do
            alg=${algs[(i + r) % ${#algs[@]}]}
            if [ "$alg" = default ]; then launch "$k" default "$sizes"; else launch "$k" "$alg" 1048576; fi
        done
    done
    # too slow somewhere: ROUNDS more rounds of the default, at most twice
    # (load only adds time; a model that is too slow is not rescued by this)
    for extra in 1 2; do
        slow=$(while read -r b sel pus; do
                   m=$(fastest "$tmp/meas-$k-default" "$b")
                   awk -v m="${m:-0}" -v p="$pus" -v s="$share" -v t="$tol" \
                       'BEGIN { if (m / (p * s) > t) print "x" }'
               done < "$tmp/pred-$k")
        [ -z "$slow" ] && break
        echo "model_check: $spec: slower than predicted x$tol at some size, $rounds more rounds"
        for ((r = 0; r < rounds; r++)); do launch "$k" default "$sizes"; done
    done
    while read -r b sel pus; do
        used=$(awk -v b="$b" '$1 == b { print $2 }' "$tmp/used-$k" 2>/dev/null | sort -u | tr '\n' ' ')
        used=${used% }
        mus=$(fastest "$tmp/meas-$k-default" "$b")
        if [ -z "$mus" ]; then
            bad "$spec $b B: no measurement (see the launch output: rerun by hand)"; continue
        fi
        ratio=$(awk -v m="$mus" -v p="$pus" -v s="$share" 'BEGIN { printf "%.2f", m / (p * s) }')
        echo "model_check: $spec $b B: $sel predicted $pus us (x$share cpu share), measured $mus us (fastest round), ratio $ratio"
        [ "$used" = "$sel" ] || bad "$spec $b B: the selector used '${used:-nothing}', rcoll_info predicts $sel"
        awk -v r="$ratio" -v t="$tol" 'BEGIN { exit !(r <= t && r >= 1 / t) }' ||
            bad "$spec $b B: measured / predicted = $ratio, outside [1/$tol, $tol]"
        if [ "$k" = 2 ] && [ "$b" = 1048576 ]; then
            case $sel in node_*) ;; *) bad "2x2 1 MiB: the model selects $sel, not a node-aware algorithm" ;; esac
            # c. the ranking: the selected node-aware algorithm against the fastest flat one
            pflat=$(awk -v f=" $flat " 'index(f, " " $1 " ") && $2 != "-" { print $2, $1 }' "$tmp/all-$k" | sort -g | head -n 1)
            pwin=$(awk -v a="$pus" -v b="${pflat%% *}" 'BEGIN { print (a < b) ? "node" : "flat" }')
            for extra in 0 1 2; do
                rank_1m "$k"
                [ -n "$mflat" ] || break
                echo "model_check: 2x2 1 MiB: predicted $sel $pus us vs best flat ${pflat#* } ${pflat%% *} us;" \
                     "measured $sel $mnode us vs best flat ${mflat#* } ${mflat%% *} us"
                { [ "$mwin" = tie ] || [ "$mwin" = "$pwin" ]; } && break
                [ "$extra" = 2 ] && break
                # disagreement: more rounds of the two (load only adds time,
                # so more rounds can only bring each nearer its floor)
                echo "model_check: 2x2 1 MiB: ranked $mwin first, $rounds more rounds of both"
                for ((r = 0; r < rounds; r++)); do
                    launch "$k" default 1048576
                    launch "$k" "${mflat#* }" 1048576
                done
            done
            [ -n "$mflat" ] || { bad "2x2 1 MiB: no flat algorithm measured"; continue; }
            [ "$mwin" = tie ] || [ "$mwin" = "$pwin" ] ||
                bad "2x2 1 MiB: the model ranks $pwin first, the measurement $mwin"
        fi
    done < "$tmp/pred-$k"
done
[ "$fail" = 0 ] && echo "model_check: ok (tolerance x$tol, ranking margin $margin)"
exit "$fail"
