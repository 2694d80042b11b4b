# vit: Vision Transformer inference and training in C.
#   make              bin/vit, build/libvit.a and build/libvit.so (portable: no -march=native)
#   make test         build and run every test (tests needing ../shared skip loudly without it)
#   make asan         the tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   make demo         classify sample images with the shipped default model
#   make install      bin/vit, libvit, vit.h and vit_error.h, vit.pc, the man page, bash completion
#                     and the shipped models under $(DESTDIR)$(PREFIX); make uninstall removes
#                     exactly those
#   make data         Fashion-MNIST as PNG folders in data/fashion-mnist (dataset-fashion-mnist)
#   make model        train the default model models/fashion-vit from data/fashion-mnist/train
#   make format       clang-format every source; make format-check only reports
#   make check-layers includes only go down the layers (tools/check-layers)
#   make cross-check  every source compiles for aarch64 (Debian's cross compiler)
#   make fuzz         every parser's libFuzzer harness (tests/fuzz) for FUZZ_SECONDS (default 60)
#   make fuzz-smoke   each harness for a few seconds over its corpus (in CI)
#   make NATIVE=1     a build for this CPU only (-march=native), for comparison
#   make ONEDNN=0     a build without oneDNN (OpenBLAS only: no bf16 kernels, no int8)
#   make MICROHTTPD=0 a build without libmicrohttpd (no `vit serve`)

CC      ?= cc
OPT     ?= -O3
ifeq ($(NATIVE),1)
OPT     += -march=native
endif
# fp-contract=off: no silent FMA fusion, so results do not depend on the compiler's mood.
# no-trapping-math: comparisons may be computed unconditionally, which lets the clamps of the
# activation and exp kernels vectorise (floating-point exceptions are never looked at).
CFLAGS  ?= $(OPT) -g -ffp-contract=off -fno-trapping-math
# Every dependency's flags come from pkg-config (deferred: the packages may be installed first).
PKGS     = openblas libpng libjpeg libwebp libwebpdemux libtiff-4 libgif libcjson libutf8proc
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror=implicit-function-declaration \
           -Werror=incompatible-pointer-types -fopenmp -fPIC -fvisibility=hidden -I. \
           $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS  += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm -lpthread
# oneDNN (libdnnl-dev, no pkg-config file) when installed, unless ONEDNN=0: the faster backend,
# bf16 and int8. Looked for when used, after the packages are installed.
ONEDNN  ?= 1
DNNL     = $(if $(filter 1,$(ONEDNN)),$(shell test -f /usr/include/oneapi/dnnl/dnnl.h && echo 1))
CFLAGS  += $(if $(DNNL),-DVIT_ONEDNN)
LDLIBS  += $(if $(DNNL),-ldnnl)
# libmicrohttpd (libmicrohttpd-dev) for `vit serve`, when installed, unless MICROHTTPD=0; only
# bin/vit links it (the library has the batcher, not the HTTP layer).
MICROHTTPD ?= 1
MHD      = $(if $(filter 1,$(MICROHTTPD)),$(shell pkg-config --exists libmicrohttpd && echo 1))
# OpenMPI (libopenmpi-dev) for `mpirun -np N bin/vit eval|train`, when installed, unless MPI=0;
# the same binary runs alone. Only vit/base/dist.c sees MPI's headers.
MPI     ?= 1
OMPI     = $(if $(filter 1,$(MPI)),$(shell pkg-config --exists ompi-c && echo 1))
LDLIBS  += $(if $(OMPI),$(shell pkg-config --libs ompi-c))
# The tests compile without a warning: a new one fails their build (TEST_WERROR= lets it pass).
TEST_WERROR ?= -Werror
BUILD   ?= build
BIN     ?= bin

PREFIX  ?= /usr/local
DESTDIR ?=
VERSION := $(shell awk '/define VIT_VERSION_(MAJOR|MINOR|PATCH)/ {v = v (v ? "." : "") $$3} \
                        END {print v}' vit/vit.h)
MAJOR   := $(firstword $(subst ., ,$(VERSION)))

DEB_PACKAGES := gcc make pkg-config clang-format libpng-dev libjpeg62-turbo-dev libwebp-dev \
                libtiff-dev libgif-dev libopenblas-dev libcjson-dev libutf8proc-dev libcmocka-dev \
                libdnnl-dev libmicrohttpd-dev libopenmpi-dev openmpi-bin dataset-fashion-mnist

LIB_SRC  := $(wildcard vit/*.c vit/base/*.c vit/core/*.c vit/model/*.c vit/io/*.c vit/data/*.c \
              vit/eval/*.c vit/train/*.c vit/serve/*.c image/*.c patch/*.c text/*.c)
CLI_SRC  := $(wildcard vit/cli/*.c)
TEST_SRC := $(wildcard tests/test_*.c)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
TESTS    := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
LIB      := $(BUILD)/libvit.a
SHLIB    := $(BUILD)/libvit.so.$(VERSION)
SOURCES  := $(wildcard */*.c */*.h */*/*.c */*/*.h)

.PHONY: all deps test asan demo clean format format-check check-layers cross-check data model \
        install uninstall fuzz fuzz-smoke fuzz-build
all: $(BIN)/vit $(SHLIB) $(BUILD)/vit.1
	@$(call give_back,$(BUILD) $(BIN))

# Run as root (to install packages) in someone else's checkout, make hands what it built back to
# the checkout's owner, so a later make as that user can rebuild.
give_back = if [ "$$(id -u)" = 0 ] && [ "$$(stat -c %u .)" != 0 ]; then \
              chown -R --reference=. $(1) 2>/dev/null; else true; fi

deps: $(BUILD)/.deps
$(BUILD)/.deps: tools/install-deps Makefile
	@mkdir -p $(BUILD)
	@tools/install-deps $(DEB_PACKAGES)
	@touch $@

$(BUILD)/%.o: %.c Makefile | $(BUILD)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

# The shared library exports vit.h's functions only (VIT_API; everything else is hidden).
$(SHLIB): $(LIB_OBJ)
	$(CC) $(CFLAGS) -shared -Wl,-soname,libvit.so.$(MAJOR) -o $@ $^ $(LDLIBS)

# bin/vit links the static library: it runs from the build tree or anywhere it is installed.
$(BUILD)/vit/base/dist.o: CFLAGS += $(if $(OMPI),-DVIT_MPI $(shell pkg-config --cflags ompi-c))
$(BUILD)/vit/cli/serve.o $(BUILD)/vit/cli/serve_http.o: CFLAGS += \
  $(if $(MHD),-DVIT_MICROHTTPD $(shell pkg-config --cflags libmicrohttpd))
$(BIN)/vit: LDLIBS += $(if $(MHD),$(shell pkg-config --libs libmicrohttpd))
$(BIN)/vit: $(CLI_OBJ) $(LIB)
	@mkdir -p $(BIN)
	$(CC) $(CFLAGS) -o $@ $(CLI_OBJ) $(LIB) $(LDLIBS)

$(BUILD)/vit.1: $(BIN)/vit
	$(BIN)/vit --man > $@

$(BUILD)/tests/%: tests/%.c $(BUILD)/tests/testutil.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(TEST_WERROR) -MMD -MP -o $@ $< $(BUILD)/tests/testutil.o $(LIB) $(LDLIBS) \
	  -lcmocka
$(BUILD)/tests/testutil.o: tests/testutil.c Makefile | $(BUILD)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(TEST_WERROR) -MMD -MP -c $< -o $@

# The inference attention's register tiles are written for fused multiply-adds.
$(BUILD)/vit/core/attention_infer.o: CFLAGS += -ffp-contract=fast

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

test: all $(TESTS)
	@$(call give_back,$(BUILD) $(BIN))
	@VIT_BIN=$(abspath $(BIN)/vit) EXAMPLE_CFLAGS="$(EXAMPLE_CFLAGS)" tests/run $(TESTS) \
	  tests/install.sh tests/mpi.sh

# Sanitizers in a separate build tree so the normal objects stay optimised.
# (bin/vit finds the shipped models beside its bin/: build/asan/models links to them.)
asan:
	@mkdir -p build/asan && ln -sfn ../../models build/asan/models
	$(MAKE) test BUILD=build/asan BIN=build/asan/bin EXAMPLE_CFLAGS="$(SANITIZE)" \
	  OPT="-O1 -fno-omit-frame-pointer $(SANITIZE) -fno-sanitize-recover=undefined"
SANITIZE := -fsanitize=address,undefined

# ---- fuzzing: clang's libFuzzer with ASan + UBSan, in their own build tree ----

FUZZ_BUILD   := build/fuzz
FUZZERS       = $(patsubst tests/fuzz/%.c,$(FUZZ_BUILD)/%,$(filter-out $(if $(MHD),,tests/fuzz/fuzz_http.c),\
                  $(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_SECONDS ?= 60
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined

fuzz-build: $(BUILD)/.deps
	@tools/install-deps clang libclang-rt-14-dev libomp-14-dev
	$(MAKE) CC=clang ONEDNN=0 BUILD=$(FUZZ_BUILD) \
	  OPT="-O1 -g -fno-omit-frame-pointer $(FUZZ_SAN) -fsanitize=fuzzer-no-link" $(FUZZERS)

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_input.h $(LIB)
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< $(LIB) $(LDLIBS)

# The HTTP harness runs the real server of the CLI (without its main): the CLI's objects as an
# archive, libmicrohttpd. Without libmicrohttpd it is not built.
FUZZ_HTTP_OBJ := $(filter-out $(BUILD)/vit/cli/main.o,$(CLI_OBJ))
$(BUILD)/libvitcli.a: $(FUZZ_HTTP_OBJ)
	$(AR) rcs $@ $^
$(FUZZ_BUILD)/fuzz_http: tests/fuzz/fuzz_http.c $(BUILD)/libvitcli.a $(LIB)
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< $(BUILD)/libvitcli.a $(LIB) $(LDLIBS) \
	  $(shell pkg-config --libs libmicrohttpd)

fuzz: fuzz-build
	@tools/fuzz $(FUZZ_SECONDS) $(FUZZERS)

fuzz-smoke: fuzz-build
	@tools/fuzz 5 $(FUZZERS)

# ---- installation ----

MODELS    := $(wildcard models/*/*)
INSTALLED := bin/vit lib/libvit.a lib/libvit.so.$(VERSION) lib/libvit.so.$(MAJOR) lib/libvit.so \
             include/vit.h include/vit_error.h lib/pkgconfig/vit.pc share/man/man1/vit.1 \
             share/bash-completion/completions/vit $(MODELS:models/%=share/vit/models/%)
ROOT      := $(DESTDIR)$(PREFIX)

install: all
	install -d $(ROOT)/bin $(ROOT)/lib/pkgconfig $(ROOT)/include $(ROOT)/share/man/man1 \
	  $(ROOT)/share/bash-completion/completions $(sort $(dir $(MODELS:models/%=$(ROOT)/share/vit/models/%)))
	install -m 755 $(BIN)/vit $(ROOT)/bin/vit
	install -m 644 $(LIB) $(ROOT)/lib/libvit.a
	install -m 755 $(SHLIB) $(ROOT)/lib/libvit.so.$(VERSION)
	ln -sf libvit.so.$(VERSION) $(ROOT)/lib/libvit.so.$(MAJOR)
	ln -sf libvit.so.$(MAJOR) $(ROOT)/lib/libvit.so
	install -m 644 vit/vit.h $(ROOT)/include/vit.h
	install -m 644 vit/vit_error.h $(ROOT)/include/vit_error.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' -e 's|@PKGS@|$(PKGS)|' \
	  -e 's|@LIBS@|$(if $(DNNL),-ldnnl) $(if $(OMPI),$(shell pkg-config --libs ompi-c))|' tools/vit.pc.in > $(ROOT)/lib/pkgconfig/vit.pc
	install -m 644 $(BUILD)/vit.1 $(ROOT)/share/man/man1/vit.1
	install -m 644 tools/vit.bash-completion $(ROOT)/share/bash-completion/completions/vit
	for f in $(MODELS); do install -m 644 $$f $(ROOT)/share/vit/$$f; done
	@# the dynamic linker's cache, so programs find libvit.so.0 in a standard prefix
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig; fi

# Exactly the files install wrote, then the folders of vit's own that are left empty.
uninstall:
	rm -f $(addprefix $(ROOT)/,$(INSTALLED))
	-rmdir $(sort $(dir $(MODELS:models/%=$(ROOT)/share/vit/models/%))) \
	  $(ROOT)/share/vit/models $(ROOT)/share/vit 2>/dev/null

# ---- data, the default model, the demo ----

# Fashion-MNIST from Debian's package as ImageFolders data/fashion-mnist/{train,test}/<class>/
# plus labels.txt (the label names in index order); labels.txt is written last, so it marks a
# complete export.
FASHION_MNIST := /usr/share/datasets/fashion-mnist
data: data/fashion-mnist/labels.txt
data/fashion-mnist/labels.txt: | $(BUILD)/tools/fashion_mnist_export
	@mkdir -p data
	$(BUILD)/tools/fashion_mnist_export $(FASHION_MNIST) data/fashion-mnist
	@$(call give_back,data $(BUILD))
$(BUILD)/tools/fashion_mnist_export: LDLIBS += -lz

# The default model: one fixed-seed run on the training split, validation held out of it (the
# test split is never looked at; the shape and epoch count were chosen on validation, see
# README). It trains in $(BUILD)/fashion-vit (an interrupted run resumes there) and the finished
# model is copied to models/fashion-vit.
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
	@$(call give_back,$(BUILD) $(BIN))

# ---- source hygiene ----

format:
	clang-format -i $(SOURCES)

format-check:
	@clang-format --dry-run -Werror $(SOURCES) && echo "clang-format: $(words $(SOURCES)) files clean"

check-layers:
	@tools/check-layers && echo "layers: every include goes down"

# Every source compiles for aarch64 too (Debian's cross compiler).
cross-check:
	@tools/cross-check

clean:
	rm -rf $(BUILD) $(BIN)

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TESTS:=.d)
