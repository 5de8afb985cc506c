#!/bin/bash
# Run the cmocka unit tests (make check) and reduce them to one closing line.
cd "$(dirname "$0")/../.."
LOGDIR=${RCOLL_TEST_LOGDIR:-test-logs}
mkdir -p "$LOGDIR"
make -j2 check >"$LOGDIR/unit-make.log" 2>&1
rc=$?
grep -E '^(PASS|FAIL|SKIP|XFAIL|XPASS|ERROR):' "$LOGDIR/unit-make.log"
for f in test/unit/*.log; do
    [ -f "$f" ] || continue
    grep -q -E '^:test-result: (FAIL|ERROR)' "${f%.log}.trs" 2>/dev/null && { echo "--- $f"; tail -n 40 "$f"; }
    grep -h 'no RDMA device' "$f" 2>/dev/null
done
p=$(grep -c -E '^PASS:' "$LOGDIR/unit-make.log")
f=$(grep -c -E '^(FAIL|ERROR|XPASS):' "$LOGDIR/unit-make.log")
s=$(grep -c -E '^SKIP:' "$LOGDIR/unit-make.log")
if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    tail -n 30 "$LOGDIR/unit-make.log"
    f=1
fi
echo "unit: $p passed, $f failed, $s skipped"
[ "$f" -eq 0 ]
