# unit tests: the model at scale (rcoll_info --model --nodes N --ppn P --net NAME)
#   test_scale_model  the network profiles, the lower bound below every
#                     algorithm's prediction, the 1024 x 128 table's run time
check_PROGRAMS += test/unit/test_scale_model
TESTS += test/unit/test_scale_model
test_unit_test_scale_model_SOURCES = test/unit/test_scale_model.c
test_unit_test_scale_model_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_scale_model_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_scale_model_LDADD = $(UNIT_LDADD)
