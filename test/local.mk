# test/: cmocka unit tests (make check) and the multi-process suite (test/run-suite).
include test/unit/local.mk
include test/integration/local.mk
include test/launchers/local.mk
include test/contract/local.mk
include test/verbs/local.mk
# The layering checks (docs/architecture.md), run by make check and so by
# the unit stage: includes point one way; librcoll.so exports rcoll.h only.
TESTS += test/check-includes test/check-symbols
dist_noinst_SCRIPTS += test/check-includes test/check-symbols
