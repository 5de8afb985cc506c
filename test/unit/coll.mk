# unit tests: coll
include test/unit/coll_a.mk
