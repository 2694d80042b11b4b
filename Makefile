# vit: Vision Transformer inference and training in C.
# make          build bin/vit and build/libvit.a
# make test     build and run every test (tests needing ../shared skip loudly without it)
# make asan     the tests under AddressSanitizer + UndefinedBehaviorSanitizer
# make demo     classify sample images with the shipped default model

CC      ?= cc
OPT     ?= -O3 -march=native
# fp-contract=off: no silent FMA fusion, so results do not depend on the compiler's mood.
CFLAGS  ?= $(OPT) -g -ffp-contract=off
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -fopenmp -I. -I/usr/include/x86_64-linux-gnu/openblas-pthread
LDLIBS  += -lopenblas -lpng -ljpeg -lcjson -lutf8proc -lm -lpthread
BUILD   ?= build
BIN     ?= bin

DEB_PACKAGES := pkg-config libpng-dev libjpeg62-turbo-dev libopenblas-dev libcjson-dev \
                libcmocka-dev libutf8proc-dev

LIB_SRC  := $(filter-out vit/main.c vit/cli_%.c,$(wildcard vit/*.c image/*.c patch/*.c text/*.c))
CLI_SRC  := vit/main.c $(wildcard vit/cli_*.c)
TEST_SRC := $(wildcard tests/test_*.c)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
TESTS    := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
LIB      := $(BUILD)/libvit.a

.PHONY: all deps test asan demo clean format data model
all: $(BIN)/vit

deps: $(BUILD)/.deps
$(BUILD)/.deps: tools/install-deps
	@mkdir -p $(BUILD)
	@tools/install-deps $(DEB_PACKAGES)
	@touch $@

$(BUILD)/%.o: %.c $(BUILD)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(BIN)/vit: $(CLI_OBJ) $(LIB)
	@mkdir -p $(BIN)
	$(CC) $(CFLAGS) -o $@ $(CLI_OBJ) $(LIB) $(LDLIBS)

$(BUILD)/tests/%: tests/%.c $(BUILD)/tests/testutil.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -o $@ $< $(BUILD)/tests/testutil.o $(LIB) $(LDLIBS) -lcmocka

# Micro-benchmarks: bench/NAME.c -> build/bench/NAME (make build/bench/NAME).
$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# Small helper programs: tools/NAME.c -> build/tools/NAME.
$(BUILD)/tools/%: tools/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

test: $(BIN)/vit $(TESTS)
	@VIT_BIN=$(abspath $(BIN)/vit) tests/run $(TESTS)

# Sanitizers in a separate build tree so the normal objects stay optimised.
asan:
	$(MAKE) test BUILD=build/asan BIN=build/asan/bin \
	  OPT="-O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"

demo: $(BIN)/vit
	@tools/demo

format:
	clang-format -i $(wildcard */*.c */*.h)

clean:
	rm -rf $(BUILD) $(BIN)

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TESTS:=.d)
