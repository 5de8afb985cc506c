# The fuzz build: every library source compiled with clang, libFuzzer's
# coverage and ASan + UBSan, into $(O) (default _build-fuzz), apart from the
# in-tree gcc build.  Run from the top of the tree through test/fuzz/build.
# Each layer gets the include path it has in Makefile.am, so the fuzz build
# breaks where the real one would.
O        ?= _build-fuzz
CC       := clang
SAN      := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
CFLAGS   := -g -O1 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers $(SAN)
EXT_CFLAGS := $(shell pkg-config --cflags ucx pmix hwloc libibverbs librdmacm)
LIBS     := $(shell pkg-config --libs ucx pmix hwloc libibverbs librdmacm) -lm -lpthread

# -I.: the configure-made rcoll_build.h, as -I$(top_builddir) in Makefile.am
COMMON_INC := -Iinclude -Icommon -I.
CORE_INC   := $(COMMON_INC) -Isrc -Icollectives -Itransports
COLL_INC   := $(COMMON_INC) -Icollectives
TL_INC     := $(COMMON_INC) -Itransports

CORE_SRC := $(wildcard src/*.c)
COLL_SRC := $(wildcard collectives/*.c collectives/*/*.c)
TL_SRC   := $(wildcard transports/*.c transports/*/*.c)
LIB_OBJ  := $(patsubst %.c,$(O)/obj/%.o,$(CORE_SRC) $(COLL_SRC) $(TL_SRC))

TARGETS  := $(patsubst test/fuzz/%.c,%,$(wildcard test/fuzz/fuzz_*.c))
BINS     := $(addprefix $(O)/,$(TARGETS))

all: $(BINS)

$(O)/obj/src/%.o: src/%.c
	@mkdir -p $(dir $@)
	@echo "  CC  $<"
	@$(CC) $(CFLAGS) -fsanitize=fuzzer-no-link $(CORE_INC) $(EXT_CFLAGS) -MMD -MP -c $< -o $@

$(O)/obj/collectives/%.o: collectives/%.c
	@mkdir -p $(dir $@)
	@echo "  CC  $<"
	@$(CC) $(CFLAGS) -fsanitize=fuzzer-no-link $(COLL_INC) -MMD -MP -c $< -o $@

$(O)/obj/transports/%.o: transports/%.c
	@mkdir -p $(dir $@)
	@echo "  CC  $<"
	@$(CC) $(CFLAGS) -fsanitize=fuzzer-no-link $(TL_INC) $(EXT_CFLAGS) -MMD -MP -c $< -o $@

$(O)/librcoll-fuzz.a: $(LIB_OBJ)
	@rm -f $@
	@echo "  AR  $@"
	@ar rcs $@ $^

# A target sees every layer, like the unit tests (RCOLL_INTERNAL_CPPFLAGS),
# and the loop backend's and the verbs key's private headers.
# (A library header that changes rebuilds objects, hence the archive, hence
# every target.)
$(O)/fuzz_%: test/fuzz/fuzz_%.c $(wildcard test/fuzz/*.h) $(O)/librcoll-fuzz.a
	@echo "  LD  $@"
	@$(CC) $(CFLAGS) -fsanitize=fuzzer $(CORE_INC) -Itransports/loop -Itransports/verbs \
	    $(EXT_CFLAGS) $< $(O)/librcoll-fuzz.a $(LIBS) -o $@

-include $(LIB_OBJ:.o=.d)
.PHONY: all
