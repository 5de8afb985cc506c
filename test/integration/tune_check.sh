#!/bin/bash
# tune_check.sh: the calibration command and its tune file, end to end
# (issue 15 item 1; docs/tuning.md).  Under rcollrun -n 2:
#   1. rcoll_tune --quick -o F exits 0 and F holds a rule per collective and
#      model lines; rcoll_info --model with F shows the figures as measured;
#      the crossovers were timed on a segment with F's single-copy sizes.
#   2. coll_check --quick --algs auto with RCOLL_TUNE_FILE=F passes, and every
#      algorithm the selector chose on the 2 ranks (RCOLL_LOG_LEVEL=debug)
#      came from a rule of F and is the one F's first matching rule names.
#   3. ranks given tune files with different contents fail init, each rank
#      naming RCOLL_TUNE_FILE; a malformed file fails init naming file:line.
#   4. F holds the measured single-copy sizes (`shm cma_* RANGE|none`) and
#      rcoll_info --model shows them as used; a file whose shm lines say
#      otherwise sets the sizes a communicator's segment takes (the debug
#      line of its rank 0 names each with its line in the file); the
#      allgather's and the bcast's run-time choices start from the file's
#      sizes (RCOLL_SHM_ADAPT=auto; both paths timed) or keep them fixed (off).
#   5. F holds the measured `shm stream_min`; a file's line is what a segment
#      takes under RCOLL_SHM_STREAM_MIN=auto, not over an explicit setting,
#      and rcoll_info shows it with its line.
#   6. F holds the measured `shm pair_flat_max`; a file's line is what a
#      2-rank segment takes under RCOLL_SHM_PAIR_FLAT_MAX=auto, not over an
#      explicit setting; ranks set differently take rank 0's value (both
#      ranks' debug line) and allreduces on either side of both values are
#      right; rcoll_info shows the line.
# Exit status 0 only if all hold.  About 45 s.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
run=("$top/tools/rcollrun/rcollrun" -n 2 --timeout 120 --)
dir=$(mktemp -d /tmp/rcoll_tune_check.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

for p in "$top/tools/rcoll_tune" "$top/tools/rcoll_info" "$here/coll_check" "$top/examples/hello"; do
    [ -x "$p" ] || { echo "tune_check: $p is not built (run make first)"; exit 1; }
done

# 1. calibrate
F=$dir/tune
if ! RCOLL_LOG_LEVEL=debug timeout --kill-after=10 150 "${run[@]}" "$top/tools/rcoll_tune" \
        --quick -o "$F" > "$dir/tune.log" 2>&1; then
    bad "rcoll_tune --quick exited non-zero"
    tail -n 20 "$dir/tune.log"
    exit 1
fi
for c in allreduce bcast barrier reduce allgather reduce_scatter; do
    grep -qE "^$c +[0-9*]" "$F" || bad "no $c rule in the tune file"
done
grep -qE '^# cpu: .+' "$F" || bad "no cpu line in the header"
grep -qE '^model alpha +[0-9.e+-]+' "$F" || bad "no measured alpha"
grep -qE '^model gamma +[0-9.e+-]+' "$F" || bad "no measured gamma"
# (grep -q reads here-strings, never a pipe: under pipefail a writer that outlives
# grep -q dies of SIGPIPE and fails the check although the line was there)
info=$(RCOLL_TUNE_FILE=$F "$top/tools/rcoll_info" --model 2>&1)
saved=$fail fail=0
grep -qE '^#   alpha .* measured$' <<<"$info" || bad "rcoll_info --model does not show alpha as measured"
grep -qF "$F, from RCOLL_TUNE_FILE" <<<"$info" || bad "rcoll_info --model does not name the file"
for w in cma_bcast cma_allgather cma_reduce; do
    grep -qE "^shm +$w +(none|[0-9]+-([0-9]+|\*)|\*)\$" "$F" || bad "no measured shm $w line in the tune file"
    grep -qE "^#   $w .* tune file\$" <<<"$info" || bad "rcoll_info --model does not show $w from the file"
done
if [ "$fail" != 0 ]; then
    echo "--- the tune file"; cat "$F"
    echo "--- rcoll_info --model (its figures)"; sed -n '1,/^$/p' <<<"$info"
fi
[ "$saved" = 0 ] || fail=1

# the crossovers were timed with the single-copy sizes just measured: the
# segment of the communicator they ran on took F's sizes, "set by rcoll_tune"
if ! grep -q '^# not measured' "$F"; then
    r() { awk -v w="$1" '$1 == "shm" && $2 == w { print $3 }' "$F"; }
    want="bcast $(r cma_bcast) (set by rcoll_tune), allgather blocks $(r cma_allgather) (set by rcoll_tune), reduce $(r cma_reduce) (set by rcoll_tune)"
    grep 'r0\].*single-copy sizes' "$dir/tune.log" | grep -F ": $want" >/dev/null ||
        bad "rcoll_tune did not time the crossovers with the sizes it measured ($want)"
fi

# 2. the selection in F is the one used
if ! RCOLL_TUNE_FILE=$F RCOLL_LOG_LEVEL=debug timeout --kill-after=10 150 "${run[@]}" \
        "$here/coll_check" --quick --algs auto > "$dir/coll.log" 2>&1; then
    bad "coll_check --quick --algs auto with the tune file failed"
    tail -n 20 "$dir/coll.log"
fi
# "rcoll debug COLL BYTES B on 2 ranks: ALG (SOURCE)" against F's first matching rule
awk -v F="$F" '
    BEGIN {
        while ((getline line < F) > 0) {
            sub(/#.*/, "", line)
            n = split(line, f, /[ \t]+/)
            if (n < 3 || f[1] == "model" || f[1] == "shm" || f[1] == "") continue
            r++; coll[r] = f[1]; alg[r] = f[3]; rk[r] = "*"
            if (f[4] ~ /^ranks=/) rk[r] = substr(f[4], 7)
            if (f[2] == "*") { lo[r] = 0; hi[r] = -1 }
            else { split(f[2], b, "-"); lo[r] = b[1] + 0; hi[r] = (b[2] == "*") ? -1 : b[2] + 0 }
        }
    }
    / rcoll debug [a-z_]+ [0-9]+ B on 2 ranks: / {
        for (i = 1; i <= NF; i++) if ($i == "debug") break
        c = $(i + 1); bytes = $(i + 2) + 0; got = $(i + 7); src = $(i + 8)
        seen[c] = 1; checked++
        want = ""
        for (k = 1; k <= r; k++)
            if (coll[k] == c && bytes >= lo[k] && (hi[k] < 0 || bytes <= hi[k]) &&
                (rk[k] == "*" || rk[k] == "2")) { want = alg[k]; break }
        if (src != "(RCOLL_TUNE_FILE") { if (errs++ < 10) print "not from the tune file: " $0 }
        else if (got != want) { if (errs++ < 10) print "chose " got ", the file says " want ": " $0 }
    }
    END {
        if (checked == 0) { print "no selection logged on 2 ranks"; errs++ }
        split("allreduce bcast barrier reduce allgather reduce_scatter", all, " ")
        for (k in all) if (!(all[k] in seen)) { print "no " all[k] " selection logged"; errs++ }
        printf "tune_check: %d selections checked against the file\n", checked
        exit errs > 0
    }' "$dir/coll.log" || bad "the selection did not follow the tune file"

# 3a. different tune data on the two ranks
sed 's/^model alpha .*/model alpha 7.5e-06/' "$F" > "$dir/other"
grep -q '^model alpha 7.5e-06' "$dir/other" || bad "could not make a second tune file"
cat > "$dir/per_rank.sh" <<EOF
#!/bin/sh
if [ "\${PMIX_RANK:-0}" = 1 ]; then export RCOLL_TUNE_FILE=$dir/other; else export RCOLL_TUNE_FILE=$F; fi
exec "$top/examples/hello"
EOF
chmod +x "$dir/per_rank.sh"
if timeout --kill-after=10 60 "${run[@]}" "$dir/per_rank.sh" > "$dir/mismatch.log" 2>&1; then
    bad "ranks with different tune files initialised"
fi
for r in 0 1; do
    grep -E "r$r\].*different RCOLL_TUNE_FILE" "$dir/mismatch.log" > /dev/null ||
        bad "rank $r did not name RCOLL_TUNE_FILE when the files differ"
done

# 3b. a malformed file fails init with file:line.  Not necessarily on every
# rank: the launcher ends the job as soon as the first rank exits with an
# error, and a rank still in its bootstrap or wire-up then is killed (or
# finds its peer gone) before it reads the file (2 runs in 6 here).
printf 'bcast * binomial\nmodel alpha 1e9\n' > "$dir/broken"
if RCOLL_TUNE_FILE=$dir/broken timeout --kill-after=10 60 "${run[@]}" "$top/examples/hello" \
        > "$dir/broken.log" 2>&1; then
    bad "a malformed tune file did not fail init"
fi
grep -E "r[01]\].*$dir/broken:2: model alpha 1e9 out of range" "$dir/broken.log" > /dev/null ||
    bad "no rank named $dir/broken:2"

# 4. the shm lines set the segment's single-copy sizes
# The runs below are about the shm algorithms' segment, not the selection:
# they force RCOLL_<COLL>_ALGORITHM=shm.  F's rules are those this machine
# measured (a CI machine's rcoll_tune chose binomial for the 64 KiB bcast,
# and the bcast never reached the shm path); p2p rules first in the derived
# files make every run without the forcing miss it here too.
p2p_first() {
    printf 'bcast * binomial\nallgather * ring\nallreduce * ring\nbarrier * dissemination\n'
}
shm_only=(RCOLL_BCAST_ALGORITHM=shm RCOLL_ALLGATHER_ALGORITHM=shm RCOLL_ALLREDUCE_ALGORITHM=shm
          RCOLL_BARRIER_ALGORITHM=shm)
{ p2p_first; grep -vE '^shm ' "$F"; } > "$dir/cma"
printf 'shm cma_bcast none\nshm cma_allgather 4096-8191\nshm cma_reduce 1m-*\n' >> "$dir/cma"
n=$(grep -c '' "$dir/cma")
if ! env "${shm_only[@]}" RCOLL_TUNE_FILE=$dir/cma RCOLL_LOG_LEVEL=debug timeout --kill-after=10 60 \
        "${run[@]}" "$top/examples/rcoll_osu_bcast" -s 65536 > "$dir/cma.log" 2>&1; then
    bad "a bcast with the shm lines changed failed"
    tail -n 8 "$dir/cma.log"
fi
ag="allgather blocks 4096-8191 (tune file line $((n - 1)))"
adapt=", from 8 KiB chosen at run time starting from these (RCOLL_SHM_ADAPT)"
bc_adapt=", from 8 KiB chosen at run time starting from these (RCOLL_SHM_ADAPT)"
red_adapt=", from 16 KiB chosen at run time starting from these (RCOLL_SHM_ADAPT)"
want="bcast none (tune file line $((n - 2)))$bc_adapt, $ag$adapt, reduce 1048576-* (tune file line $n)$red_adapt"
grep 'r0\].*single-copy sizes' "$dir/cma.log" | grep -F ": $want" >/dev/null ||
    bad "the segment did not take the file's single-copy sizes ($want)"
# the bcast's path is chosen at run time too, from the file's sizes (none:
# two copies first): rank 0 timed both paths of the 64 KiB bcasts
bc_report=$(grep 'r0\].*bcast path chosen at run time' "$dir/cma.log")
grep -qE ' 64 KiB: [^;]*two copies [0-9.]+ us x[1-9][0-9]*, single [0-9.]+ us x[1-9]' <<<"$bc_report" ||
    bad "RCOLL_SHM_ADAPT=auto: rank 0 did not time both paths of the 64 KiB bcasts: $bc_report"
# a cma_allgather line is where the run-time choice starts, not the end of
# it: a 64 KiB allgather is timed and chosen at run time (rank 0's report
# at communicator free); with RCOLL_SHM_ADAPT=off the file's sizes stay fixed
for mode in auto off; do
    if ! env "${shm_only[@]}" RCOLL_TUNE_FILE=$dir/cma RCOLL_SHM_ADAPT=$mode RCOLL_LOG_LEVEL=debug \
            timeout --kill-after=10 60 "${run[@]}" "$top/examples/rcoll_osu_allgather" \
            -s 65536 -i 200 -c > "$dir/ag-$mode.log" 2>&1; then
        bad "an allgather with RCOLL_SHM_ADAPT=$mode and the shm lines changed failed"
        tail -n 8 "$dir/ag-$mode.log"
    fi
    sizes=$(grep 'r0\].*single-copy sizes' "$dir/ag-$mode.log")
    report=$(grep 'r0\].*allgather path chosen at run time' "$dir/ag-$mode.log")
    if [ "$mode" = auto ]; then
        grep -qF "$ag$adapt" <<<"$sizes" || bad "RCOLL_SHM_ADAPT=auto: no run-time choice from the file's sizes: $sizes"
        grep -qE ' 64 KiB: (single|two)' <<<"$report" || bad "RCOLL_SHM_ADAPT=auto: rank 0 timed no 64 KiB allgather: $report"
        # both paths timed: the first try comes after 3 timed calls
        grep -qE ' 64 KiB: [^;]*two copies [0-9.]+ us x[1-9][0-9]*, single [0-9.]+ us x[1-9]' <<<"$report" ||
            bad "RCOLL_SHM_ADAPT=auto: rank 0 did not time both paths of 200 64 KiB allgathers: $report"
    else
        grep -qF "$ag, reduce" <<<"$sizes" || bad "RCOLL_SHM_ADAPT=off: the file's allgather sizes are not fixed: $sizes"
        [ -z "$report" ] || bad "RCOLL_SHM_ADAPT=off: the path was still chosen at run time: $report"
    fi
done

# 5. where streaming copies into receive buffers begin: F holds the measured
# `shm stream_min SIZE|off` (2 ranks, no more than the CPUs); a file's line
# is what a segment takes under RCOLL_SHM_STREAM_MIN=auto (its set-up debug
# line), an explicit setting wins over it, and rcoll_info names the line.
if [ "$(nproc)" -ge 2 ]; then
    grep -qE '^shm stream_min +([0-9]+|off)$' "$F" || bad "F has no measured shm stream_min line"
fi
{ p2p_first; grep -vE '^shm stream_min ' "$F"; } > "$dir/stream"
echo 'shm stream_min 3m' >> "$dir/stream"
n=$(grep -c '' "$dir/stream")
for setting in auto off; do
    if ! env "${shm_only[@]}" RCOLL_TUNE_FILE=$dir/stream RCOLL_SHM_STREAM_MIN=$setting \
            RCOLL_LOG_LEVEL=debug \
            timeout --kill-after=10 60 "${run[@]}" "$top/examples/rcoll_osu_allreduce" \
            -s 4194304 -i 20 -c > "$dir/stream-$setting.log" 2>&1; then
        bad "an allreduce with a shm stream_min line and RCOLL_SHM_STREAM_MIN=$setting failed"
        tail -n 8 "$dir/stream-$setting.log"
    fi
    want="streaming copies into receive buffers: from 3145728 bytes"
    [ "$setting" = off ] && want="streaming copies into receive buffers: never"
    [ "$(grep -c "segment ready.*$want" "$dir/stream-$setting.log")" -ge 2 ] ||
        bad "RCOLL_SHM_STREAM_MIN=$setting with the file's 3m: no segment on both ranks with '$want'"
done
RCOLL_TUNE_FILE=$dir/stream "$top/tools/rcoll_info" > "$dir/stream-info.log" 2>&1
grep -qF "RCOLL_SHM_STREAM_MIN             = auto (3145728: tune file line $n)" "$dir/stream-info.log" ||
    bad "rcoll_info does not show the file's shm stream_min: $(grep STREAM_MIN "$dir/stream-info.log")"

# 6. the largest flat allreduce on a 2-rank segment (shm pair_flat_max)
if [ "$(nproc)" -ge 2 ]; then
    grep -qE '^shm pair_flat_max +[0-9]+$' "$F" || bad "F has no measured shm pair_flat_max line"
fi
{ p2p_first; grep -vE '^shm pair_flat_max ' "$F"; } > "$dir/flat"
echo 'shm pair_flat_max 12k' >> "$dir/flat"
n=$(grep -c '' "$dir/flat")
for setting in auto 0; do
    if ! env "${shm_only[@]}" RCOLL_TUNE_FILE=$dir/flat RCOLL_SHM_PAIR_FLAT_MAX=$setting \
            RCOLL_LOG_LEVEL=debug \
            timeout --kill-after=10 60 "${run[@]}" "$top/examples/rcoll_osu_allreduce" \
            -s 8192,12288,12292,65536 -i 20 -c > "$dir/flat-$setting.log" 2>&1; then
        bad "an allreduce with a shm pair_flat_max line and RCOLL_SHM_PAIR_FLAT_MAX=$setting failed"
        tail -n 8 "$dir/flat-$setting.log"
    fi
    want="allreduce flat up to 12288 bytes"
    [ "$setting" = 0 ] && want="allreduce flat up to 0 bytes"
    [ "$(grep -c "segment ready.*$want" "$dir/flat-$setting.log")" -ge 2 ] ||
        bad "RCOLL_SHM_PAIR_FLAT_MAX=$setting with the file's 12k: no segment on both ranks with '$want'"
done
for pair in "0 256k 0" "256k 0 262144"; do
    set -- $pair
    if ! env "${shm_only[@]}" RCOLL_LOG_LEVEL=debug FLAT0=$1 FLAT1=$2 \
            timeout --kill-after=10 60 "${run[@]}" bash -c \
            'if [ "$PMIX_RANK" = 0 ]; then export RCOLL_SHM_PAIR_FLAT_MAX=$FLAT0;
             else export RCOLL_SHM_PAIR_FLAT_MAX=$FLAT1; fi; exec "$@"' flat \
            "$top/examples/rcoll_osu_allreduce" -s 4,1000,4096,8192,65536,262144 -i 20 -c \
            > "$dir/flat-ranks.log" 2>&1; then
        bad "an allreduce with RCOLL_SHM_PAIR_FLAT_MAX=$1 on rank 0 and $2 on rank 1 failed"
        tail -n 8 "$dir/flat-ranks.log"
    fi
    [ "$(grep -c "segment ready.*allreduce flat up to $3 bytes" "$dir/flat-ranks.log")" -ge 2 ] ||
        bad "RCOLL_SHM_PAIR_FLAT_MAX=$1 on rank 0, $2 on rank 1: not rank 0's value on both ranks: $(grep 'segment ready' "$dir/flat-ranks.log")"
done
RCOLL_TUNE_FILE=$dir/flat "$top/tools/rcoll_info" > "$dir/flat-info.log" 2>&1
grep -qF "RCOLL_SHM_PAIR_FLAT_MAX          = auto (12288: tune file line $n)" "$dir/flat-info.log" ||
    bad "rcoll_info does not show the file's shm pair_flat_max: $(grep PAIR_FLAT "$dir/flat-info.log")"

if [ "$fail" != 0 ]; then
    for l in mismatch broken; do echo "--- $l.log"; tail -n 8 "$dir/$l.log"; done
    exit 1
fi
echo "tune_check: ok"
