#!/bin/bash
# The cmocka unit tests for the asan stage: test/unit/run-unit.sh, then the
# tests' own logs (test/unit/*.log, where their sanitizer reports land) copied
# into $RCOLL_TEST_LOGDIR for the stage to search.
cd "$(dirname "$0")/../.."
test/unit/run-unit.sh
rc=$?
cp test/unit/*.log "${RCOLL_TEST_LOGDIR:?}/" 2>/dev/null
exit $rc
