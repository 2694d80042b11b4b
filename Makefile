# vit: Vision Transformer inference and training in C.
# make          build bin/vit and build/libvit.a
# make test     build and run every test (tests needing ../shared skip loudly without it)
# make asan     the tests under AddressSanitizer + UndefinedBehaviorSanitizer
# make demo     classify sample images with the shipped default model
# make data     Fashion-MNIST as PNG folders in data/fashion-mnist (Debian's dataset-fashion-mnist)
# make model    train the default model models/fashion-vit from data/fashion-mnist/train

CC      ?= cc
OPT     ?= -O3 -march=native
# fp-contract=off: no silent FMA fusion, so results do not depend on the compiler's mood.
CFLAGS  ?= $(OPT) -g -ffp-contract=off
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror=implicit-function-declaration -Werror=incompatible-pointer-types -fopenmp -I. -I/usr/include/x86_64-linux-gnu/openblas-pthread
LDLIBS  += -lopenblas -lpng -ljpeg -lcjson -lutf8proc -lm -lpthread
BUILD   ?= build
BIN     ?= bin

DEB_PACKAGES := pkg-config libpng-dev libjpeg62-turbo-dev libopenblas-dev libcjson-dev \
                libcmocka-dev libutf8proc-dev

LIB_SRC  := $(wildcard vit/*.c vit/base/*.c vit/core/*.c vit/model/*.c vit/io/*.c vit/data/*.c \
              vit/eval/*.c vit/train/*.c image/*.c patch/*.c text/*.c)
CLI_SRC  := $(wildcard vit/cli/*.c)
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

# The public API's test sees vit.h as an installed program would: <vit.h>.
$(BUILD)/tests/test_api: CFLAGS += -Ivit

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

# Fashion-MNIST from Debian's package as ImageFolders data/fashion-mnist/{train,test}/<class>/
# plus labels.txt (the label names in index order); labels.txt is written last, so it marks a
# complete export.
FASHION_MNIST := /usr/share/datasets/fashion-mnist
data: data/fashion-mnist/labels.txt
data/fashion-mnist/labels.txt: | $(BUILD)/tools/fashion_mnist_export
	@tools/install-deps dataset-fashion-mnist
	@mkdir -p data
	$(BUILD)/tools/fashion_mnist_export $(FASHION_MNIST) data/fashion-mnist
$(BUILD)/tools/fashion_mnist_export: LDLIBS += -lz

# The default model: one fixed-seed run on the training split, validation held out of it (the
# test split is never looked at; the shape and epoch count were chosen on validation, see README). It trains in $(BUILD)/fashion-vit (an interrupted run resumes
# there) and the finished model is copied to models/fashion-vit.
FASHION_VIT_RUN := $(BUILD)/fashion-vit
FASHION_VIT_ARGS := --train data/fashion-mnist/train --val-split 0.1 \
  --labels data/fashion-mnist/labels.txt --image-size 28 --patch 4 --channels 1 --hidden 64 \
  --layers 6 --heads 4 --mlp 128 --epochs 70 --batch 128 --lr 2e-3 --min-lr 1e-5 \
  --weight-decay 0.05 --warmup 1 --label-smoothing 0.1 --dropout 0 --clip 1 \
  --augment crop,flip --crop-pad 2 --seed 1 -t 2
model: $(BIN)/vit data
	@if [ -f $(FASHION_VIT_RUN)/train_state.safetensors ]; then \
	  $(BIN)/vit train --out $(FASHION_VIT_RUN) --resume -t 2; \
	else \
	  $(BIN)/vit train $(FASHION_VIT_ARGS) --out $(FASHION_VIT_RUN); \
	fi
	@mkdir -p models/fashion-vit
	cp $(FASHION_VIT_RUN)/config.json $(FASHION_VIT_RUN)/model.safetensors \
	  $(FASHION_VIT_RUN)/preprocessor_config.json $(FASHION_VIT_RUN)/train_log.jsonl models/fashion-vit/

# A few Fashion-MNIST test images (from the Debian package) through the shipped default model.
demo: $(BIN)/vit $(BUILD)/tools/fashion_mnist_export
	@BUILD=$(BUILD) BIN=$(BIN) tools/demo

format:
	clang-format -i $(wildcard */*.c */*.h */*/*.c */*/*.h)

clean:
	rm -rf $(BUILD) $(BIN)

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TESTS:=.d)
