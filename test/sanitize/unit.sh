#!/bin/bash
# The unit tests for the asan stage: make check in the ASan build, less
# test/check-symbols (it reads librcoll.so, and the ASan build makes only the
# static library; the unit stage checks the real one), then the tests' own
# logs (where their sanitizer reports land) copied into $RCOLL_TEST_LOGDIR for
# the stage to search.  Ends with "unit: P passed, F failed, S skipped".
cd "$(dirname "$0")/../.."
logdir=${RCOLL_TEST_LOGDIR:?}
tests=$(make -s -f Makefile -f - rcoll-print-tests <<'MK'
rcoll-print-tests:
	@echo $(TESTS)
MK
)
tests=$(tr ' ' '\n' <<<"$tests" | grep -vx 'test/check-symbols' | tr '\n' ' ')
make -j2 check TESTS="$tests" > "$logdir/unit-make.log" 2>&1
rc=$?
grep -E '^(PASS|FAIL|SKIP|XFAIL|XPASS|ERROR):' "$logdir/unit-make.log"
for t in $tests; do
    [ -f "$t.log" ] || continue
    cp "$t.log" "$logdir/$(basename "$t").log"
    grep -q -E '^:test-result: (FAIL|ERROR)' "$t.trs" 2>/dev/null && { echo "--- $t.log"; tail -n 40 "$t.log"; }
done
p=$(grep -c -E '^PASS:' "$logdir/unit-make.log")
f=$(grep -c -E '^(FAIL|ERROR|XPASS):' "$logdir/unit-make.log")
s=$(grep -c -E '^SKIP:' "$logdir/unit-make.log")
if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    tail -n 30 "$logdir/unit-make.log"
    f=1
fi
echo "unit: $p passed, $f failed, $s skipped"
[ "$f" -eq 0 ]
