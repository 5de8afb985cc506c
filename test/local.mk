# test/: cmocka unit tests (make check) and the multi-process suite (test/run-suite).
include test/unit/local.mk
include test/integration/local.mk
include test/launchers/local.mk
include test/contract/local.mk
