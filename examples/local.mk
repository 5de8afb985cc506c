# examples/: hello, a minimal allreduce, and the OSU-style benchmarks.
bin_PROGRAMS += examples/hello examples/allreduce
examples_hello_SOURCES = examples/hello.c
examples_hello_LDADD = librcoll.la
examples_allreduce_SOURCES = examples/allreduce.c
examples_allreduce_LDADD = librcoll.la
