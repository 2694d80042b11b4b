# vit: Vision Transformer inference and training in C.
#   make              bin/vit, build/libvit.a and build/libvit.so (portable: no -march=native), then
#                     one line naming the optional features built in and those left out, and why
#   make test         build and run every test (tests needing ../shared skip loudly without it)
#   make asan         the tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   make demo         classify sample images with the shipped default model
#   make install      bin/vit, libvit, vit.h and vit_error.h, vit.pc, the man page, bash completion
#                     and the shipped models under $(DESTDIR)$(PREFIX); make uninstall removes
#                     exactly those, and the folders install created once they are empty
#   make data         Fashion-MNIST as PNG folders in data/fashion-mnist (dataset-fashion-mnist)
#   make ocr-data     printed text lines for OCR in data/ocr: train and val (training fonts, SST-2's
#                     train sentences), test-clean and test-degraded (held-out fonts, dev sentences);
#                     make ocr-tesseract scores Tesseract on the test sets (docs/OCR_DATA.md)
#   make ocr-data-v2  OCR lines as people crop them in data/ocr-v2: train (150,000) and val, and
#                     held-out crops and pages at line heights 20, 32, 64, clean and degraded;
#                     make ocr-examples renders the issue-43 example lines as tight crops
#   make ocr-model    train the shipped OCR model models/ocr-printed-lines (about 1.5 hours);
#                     make ocr-eval scores it and Tesseract on both test sets
#   make model        train the default model models/fashion-vit from data/fashion-mnist/train
#   make cifar10-model fine-tune vit-tiny-in1k three ways on CIFAR-10's training images and
#                     average them into models/vit-tiny-cifar10 (about 3 hours, resumable);
#                     make cifar10-eval scores it on
#                     the 10,000 test images and draws the confusion matrix
#   make format       clang-format every source; make format-check only reports
#   make check-layers includes only go down the layers (tools/check-layers)
#   make cross-check  every source compiles for aarch64 (Debian's cross compiler)
#   make fuzz         every parser's libFuzzer harness (tests/fuzz) for FUZZ_SECONDS (default 60)
#   make fuzz-smoke   each harness for a few seconds over its corpus (in CI)
#   make NATIVE=1     a build for this CPU only (-march=native), for comparison
#
# What it needs (Debian 12 packages):
#   required          a C compiler with OpenMP, make, pkg-config; OpenBLAS, libpng, libjpeg, cJSON,
#                     utf8proc (group build)
#   optional          each feature built in when its package is installed, left out by FLAG=0
#                     (group optional):
#                       ONEDNN=0      oneDNN (libdnnl-dev): the faster backend, bf16 kernels, int8
#                       MPI=0         OpenMPI (libopenmpi-dev, openmpi-bin): mpirun vit eval|train
#                       MICROHTTPD=0  libmicrohttpd (libmicrohttpd-dev): vit serve (and curl, the
#                                     README's client)
#                       WEBP=0 TIFF=0 GIF=0  those image formats (libwebp-dev, libtiff-dev,
#                                     libgif-dev); PNG, JPEG and BMP are always there
#                       SENTENCEPIECE=0  libsentencepiece (libsentencepiece-dev, and g++ for
#                                     its C++ shim): SentencePiece tokenizers (SigLIP's)
#                       FREETYPE=0    FreeType (libfreetype-dev): vit render-lines, synthetic
#                                     printed text lines for OCR
#                       CURL=0        libcurl and libcrypto (libcurl4-openssl-dev, libssl-dev):
#                                     -m org/name downloads from the Hugging Face Hub (the
#                                     cache is read without them)
#   make deps         installs the groups build, optional and test (as root; as another user it
#                     prints the one apt-get command); one group: make deps-build, deps-optional,
#                     deps-test (cmocka, fonts-dejavu-core, Python's numpy, Pillow, pytest,
#                     venv, setuptools and wheel for python/), deps-data (Fashion-MNIST), deps-ocr
#                     (the fonts of the OCR lines, docs/OCR_DATA.md, and Tesseract, the peer),
#                     deps-fuzz (clang), deps-format (clang-format), deps-cross (the aarch64 cross
#                     compiler), deps-browser (chromium: tests/browser.sh, vit serve's page in
#                     a real browser, with node and cd tests/browser && npm ci)
# Run as root, each target installs what it needs and is missing (make: the build's packages and
# those of the optional features not switched off; make test: the tests' too; make demo: the
# data). Run as another user, make needs only the required packages: it stops with the command
# that installs those when one is missing, and leaves out the features whose packages are not
# installed.

CC      ?= cc
OPT     ?= -O3
ifeq ($(NATIVE),1)
OPT     += -march=native
endif
# fp-contract=off: no silent FMA fusion, so results do not depend on the compiler's mood.
# no-trapping-math: comparisons may be computed unconditionally, which lets the clamps of the
# activation and exp kernels vectorise (floating-point exceptions are never looked at).
CFLAGS  ?= $(OPT) -g -ffp-contract=off -fno-trapping-math

# ---- required and optional packages ----

REQUIRED    := openblas libpng libjpeg libcjson libutf8proc
FEATURES    := ONEDNN MPI MICROHTTPD WEBP TIFF GIF SENTENCEPIECE FREETYPE CURL
ONEDNN      ?= 1
MPI         ?= 1
MICROHTTPD  ?= 1
WEBP        ?= 1
TIFF        ?= 1
GIF         ?= 1
SENTENCEPIECE ?= 1
FREETYPE    ?= 1
CURL        ?= 1
# Per feature: its name in make's summary, its Debian packages (the -dev one first), the shell
# test that finds it installed, its pkg-config modules (flags for every object; MPI's and
# libmicrohttpd's go only to the objects that use them, below).
NAME_ONEDNN     := oneDNN
DEB_ONEDNN      := libdnnl-dev
FIND_ONEDNN     := test -f /usr/include/oneapi/dnnl/dnnl.h
NAME_MPI        := OpenMPI
DEB_MPI         := libopenmpi-dev openmpi-bin
FIND_MPI        := pkg-config --exists ompi-c
NAME_MICROHTTPD := vit~serve
DEB_MICROHTTPD  := libmicrohttpd-dev curl
FIND_MICROHTTPD := pkg-config --exists libmicrohttpd
NAME_WEBP       := WebP
DEB_WEBP        := libwebp-dev
PC_WEBP         := libwebp libwebpdemux
NAME_TIFF       := TIFF
DEB_TIFF        := libtiff-dev
PC_TIFF         := libtiff-4
NAME_GIF        := GIF
DEB_GIF         := libgif-dev
PC_GIF          := libgif
NAME_FREETYPE   := FreeType
DEB_FREETYPE    := libfreetype-dev
PC_FREETYPE     := freetype2
# libcrypto for the sha256 of each downloaded LFS file
NAME_CURL       := Hub~downloads
DEB_CURL        := libcurl4-openssl-dev libssl-dev
PC_CURL         := libcurl libcrypto
$(foreach f,WEBP TIFF GIF FREETYPE CURL,$(eval FIND_$(f) := pkg-config --exists $(PC_$(f))))
# libsentencepiece is C++: its shim (text/sentencepiece_shim.cc) needs a C++ compiler too.
NAME_SENTENCEPIECE := SentencePiece
DEB_SENTENCEPIECE  := libsentencepiece-dev g++
FIND_SENTENCEPIECE := pkg-config --exists sentencepiece && command -v $(CXX) >/dev/null

# Debian packages by group (make deps-GROUP).
DEPS_GROUPS    := build optional test data ocr fuzz format cross browser
DEPS.build     := gcc libc6-dev make pkg-config libopenblas-dev libpng-dev libjpeg62-turbo-dev \
                  libcjson-dev libutf8proc-dev
DEPS.optional   = $(foreach f,$(FEATURES),$(if $(filter 1,$($(f))),$(DEB_$(f))))
# fonts-dejavu-core: the text renderer's tests draw with it (they skip loudly without it). The
# Python packages: tests/python.sh tests python/ with them (it skips loudly without them).
DEPS.test      := libcmocka-dev fonts-dejavu-core python3-numpy python3-pil python3-pytest \
                  python3-venv python3-setuptools python3-wheel
DEPS.data      := dataset-fashion-mnist
# The OCR lines' fonts: the training and held-out families of tools/ocr-fonts/ (docs/OCR_DATA.md),
# and Tesseract with its English model, the peer of tools/tesseract_eval.
OCR_FONTS      := fonts-dejavu-core fonts-dejavu-extra fonts-liberation fonts-freefont-ttf \
                  fonts-noto-core fonts-noto-mono fonts-urw-base35 fonts-go fonts-crosextra-caladea \
                  fonts-crosextra-carlito fonts-sil-charis
DEPS.ocr       := $(OCR_FONTS) tesseract-ocr tesseract-ocr-eng
DEPS.fuzz      := clang libclang-rt-14-dev libomp-14-dev
DEPS.format    := clang-format
DEPS.cross     := gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross
# vit serve's page in a real browser (tests/browser.sh; it skips loudly without it): not in make
# deps, a browser being large; .ci/run installs it, and Debian's nodejs and npm when no npm is
# there (another node, NodeSource's, carries its own npm and conflicts with Debian's).
DEPS.browser   := chromium

# The features built in: those switched on whose packages are installed. Looked for once, when a
# recipe first needs them: after make has installed the packages (as root). `once` turns a
# deferred variable into the value of its first expansion.
once     = $(eval $(1) := $(2))$($(1))
BUILT    = $(call once,BUILT,$(foreach f,$(FEATURES),$(if $(filter 1,$($(f))),$(if \
             $(shell $(FIND_$(f)) 2>/dev/null && echo 1),$(f)))))
built    = $(filter $(1),$(BUILT))
DNNL     = $(call built,ONEDNN)
OMPI     = $(call built,MPI)
MHD      = $(call built,MICROHTTPD)
SPM      = $(call built,SENTENCEPIECE)
PKGS     = $(REQUIRED) $(foreach f,$(call built,WEBP TIFF GIF FREETYPE CURL),$(PC_$(f)))
PKG_CFLAGS = $(call once,PKG_CFLAGS,$(shell pkg-config --cflags $(PKGS) 2>/dev/null))
PKG_LIBS   = $(call once,PKG_LIBS,$(shell pkg-config --libs $(PKGS) 2>/dev/null))
OMPI_LIBS  = $(call once,OMPI_LIBS,$(if $(OMPI),$(shell pkg-config --libs ompi-c)))
# make's one line: what is built in, what is left out and why. (Spaces inside an entry are '~'
# until the entries are joined.)
comma   := ,
space   := $(eval) $(eval)
list     = $(subst ~, ,$(subst $(space),$(comma)$(space),$(strip $(1))))
missing  = $(filter-out $(BUILT),$(foreach f,$(FEATURES),$(if $(filter 1,$($(f))),$(f))))
why_out  = $(if $(filter $(1),$(missing)),$(firstword $(DEB_$(1)))~not~installed,$(1)=$($(1)))
SUMMARY  = vit: built with $(or $(call list,$(foreach f,$(BUILT),$(NAME_$(f)))),no optional \
           feature); left out: $(or $(call list,$(foreach f,$(filter-out $(BUILT),$(FEATURES)),\
           $(NAME_$(f))~($(call why_out,$(f))))),nothing)$(if $(missing),; make deps-optional \
           installs what is not installed)

CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror=implicit-function-declaration \
           -Werror=incompatible-pointer-types -fopenmp -fPIC -fvisibility=hidden -I. \
           $(PKG_CFLAGS) $(foreach f,$(BUILT),-DVIT_$(f))
# libsentencepiece alone, not pkg-config's --libs, which adds its trainer's library as well.
SPM_LIBS = $(if $(SPM),-lsentencepiece -lstdc++)
LDLIBS  += $(PKG_LIBS) $(if $(DNNL),-ldnnl) $(OMPI_LIBS) $(SPM_LIBS) -lm -lpthread
# The one C++ file, the shim over libsentencepiece: the C flags that apply to C++ as well.
CXXFLAGS ?= $(OPT) -g -ffp-contract=off -fno-trapping-math
CXXFLAGS += -std=c++17 -D_GNU_SOURCE -Wall -Wextra -fPIC -fvisibility=hidden -I. \
            $(foreach f,$(BUILT),-DVIT_$(f)) $(if $(SPM),$(call once,SPM_CFLAGS,$(shell \
            pkg-config --cflags sentencepiece) -DVIT_SENTENCEPIECE_VERSION='"$(shell \
            pkg-config --modversion sentencepiece)"'))
# The tests compile without a warning: a new one fails their build (TEST_WERROR= lets it pass).
TEST_WERROR ?= -Werror
BUILD   ?= build
BIN     ?= bin

PREFIX  ?= /usr/local
DESTDIR ?=
VERSION := $(shell awk '/define VIT_VERSION_(MAJOR|MINOR|PATCH)/ {v = v (v ? "." : "") $$3} \
                        END {print v}' vit/vit.h)
MAJOR   := $(firstword $(subst ., ,$(VERSION)))

LIB_SRC  := $(wildcard vit/*.c vit/base/*.c vit/core/*.c vit/model/*.c vit/gen/*.c vit/io/*.c \
              vit/data/*.c vit/eval/*.c vit/train/*.c vit/serve/*.c image/*.c patch/*.c text/*.c) \
            $(wildcard text/*.cc)
# vit serve's handlers (vit/cli/serve_route.h) only with libmicrohttpd: its transport calls them
SERVE_HANDLERS := $(filter-out vit/cli/serve.c vit/cli/serve_http.c vit/cli/serve_model.c \
                    vit/cli/serve_results.c,$(wildcard vit/cli/serve_*.c))
CLI_SRC  := $(filter-out $(if $(MHD),,$(SERVE_HANDLERS)),$(wildcard vit/cli/*.c))
TEST_SRC := $(wildcard tests/test_*.c)
LIB_OBJ  := $(patsubst %.cc,$(BUILD)/%.o,$(LIB_SRC:%.c=$(BUILD)/%.o))
# vit serve's page (vit/cli/page/index.html) is compiled in as a C array written into $(BUILD).
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o) $(BUILD)/vit/cli/serve_page.o
TESTS    := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
LIB      := $(BUILD)/libvit.a
SHLIB    := $(BUILD)/libvit.so.$(VERSION)
SOURCES  := $(wildcard */*.c */*.cc */*.h */*/*.c */*/*.cc */*/*.h)

.PHONY: all deps $(DEPS_GROUPS:%=deps-%) needs-build needs-test needs-data needs-format test asan \
        ocr-data ocr-data-v2 ocr-examples ocr-tesseract ocr-model ocr-eval needs-ocr cifar10-data cifar10-model cifar10-eval \
        demo clean format format-check check-layers cross-check data model install uninstall fuzz \
        fuzz-smoke fuzz-build FORCE
all: $(BIN)/vit $(SHLIB) $(BUILD)/libvit.so $(BUILD)/vit.1
	@$(call give_back,$(BUILD) $(BIN))
	@echo "$(SUMMARY)"

# Run as root (to install packages) in someone else's checkout, make hands what it built back to
# the checkout's owner, so a later make as that user can rebuild.
give_back = if [ "$$(id -u)" = 0 ] && [ "$$(stat -c %u .)" != 0 ]; then \
              chown -R --reference=. $(1) 2>/dev/null; else true; fi

# One apt-get for all (apt-gets run side by side under make -j would fight over dpkg's lock).
deps:
	@tools/install-deps $(DEPS.build) $(DEPS.optional) $(DEPS.test)
$(DEPS_GROUPS:%=deps-%):
	@tools/install-deps $(DEPS.$(@:deps-%=%))

# Before anything is compiled. As root: the build's packages and the optional features' that are
# not switched off, installed if missing. As another user: the compiler and the required
# libraries must be there (pkg-config finds them), else make stops with the apt-get command.
# Likewise the tests' cmocka and the demo's data.
needs-build:
	@tools/install-deps --found "$(REQUIRED)" --program $(firstword $(CC)) $(DEPS.build) \
	  $(if $(filter 0,$(shell id -u)),$(DEPS.optional))

# The optional features built in, rewritten only when they change (a FLAG=0, a package installed
# or removed since), so that everything is rebuilt with the new set.
$(BUILD)/features: FORCE | needs-build
	@mkdir -p $(BUILD)
	@echo "$(BUILT)" | cmp -s - $@ || echo "$(BUILT)" > $@

$(BUILD)/%.o: %.c Makefile $(BUILD)/features | needs-build
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

# The C++ shim over libsentencepiece, by the C++ compiler when the build has the library. Without
# it the file is empty (#ifdef VIT_SENTENCEPIECE) and is compiled as C, so that no C++ compiler is
# needed and the library's objects are the same list either way: which features are built in is
# only known at recipe time, after make (as root) has installed their packages.
$(BUILD)/%.o: %.cc Makefile $(BUILD)/features | needs-build
	@mkdir -p $(dir $@)
	$(if $(SPM),$(CXX) $(CXXFLAGS),$(CC) $(CFLAGS) -x c) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

# The shared library exports vit.h's functions only (VIT_API; everything else is hidden). Its
# soname link, which programs linked against it ask the loader for, and the -lvit link beside it,
# so a program built against the build tree starts as one built against an installation does.
$(SHLIB): $(LIB_OBJ)
	$(CC) $(CFLAGS) -shared -Wl,-soname,libvit.so.$(MAJOR) -o $@ $^ $(LDLIBS)
$(BUILD)/libvit.so.$(MAJOR): $(SHLIB)
	ln -sf $(notdir $<) $@
$(BUILD)/libvit.so: $(BUILD)/libvit.so.$(MAJOR)
	ln -sf $(notdir $<) $@

# bin/vit links the static library: it runs from the build tree or anywhere it is installed.
$(BUILD)/vit/base/dist.o: CFLAGS += $(if $(OMPI),$(shell pkg-config --cflags ompi-c))
$(patsubst vit/cli/%.c,$(BUILD)/vit/cli/%.o,$(wildcard vit/cli/serve*.c)): CFLAGS += \
  $(if $(MHD),$(shell pkg-config --cflags libmicrohttpd))
$(BIN)/vit: LDLIBS += $(if $(MHD),$(shell pkg-config --libs libmicrohttpd))
$(BIN)/vit: $(CLI_OBJ) $(LIB)
	@mkdir -p $(BIN)
	$(CC) $(CFLAGS) -o $@ $(CLI_OBJ) $(LIB) $(LDLIBS)

$(BUILD)/vit/cli/serve_page.c: vit/cli/page/index.html tools/embed-file
	@mkdir -p $(dir $@)
	tools/embed-file $< serve_page_html vit/cli/serve_page.h > $@.tmp && mv $@.tmp $@
$(BUILD)/vit/cli/serve_page.o: $(BUILD)/vit/cli/serve_page.c vit/cli/serve_page.h
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/vit.1: $(BIN)/vit
	$(BIN)/vit --man > $@

$(BUILD)/tests/%: tests/%.c $(BUILD)/tests/testutil.o $(LIB) | needs-test
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(TEST_WERROR) -MMD -MP -o $@ $< $(BUILD)/tests/testutil.o $(LIB) $(LDLIBS) \
	  -lcmocka
$(BUILD)/tests/testutil.o: tests/testutil.c Makefile $(BUILD)/features | needs-build needs-test
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(TEST_WERROR) -MMD -MP -c $< -o $@
# After the build's packages, not beside them (make -j): one apt-get at a time.
needs-test: needs-build
	@tools/install-deps --found cmocka $(DEPS.test)
needs-data: needs-build
	@tools/install-deps $(DEPS.data)

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
	@VIT_BIN=$(abspath $(BIN)/vit) VIT_SHLIB=$(abspath $(SHLIB)) \
	  EXAMPLE_CFLAGS="$(EXAMPLE_CFLAGS)" tests/run $(TESTS) tests/install.sh tests/mpi.sh \
	  tests/minimal-build.sh tests/python.sh tests/browser.sh

# Sanitizers in a separate build tree so the normal objects stay optimised.
# (bin/vit finds the shipped models beside its bin/: build/asan/models links to them.)
asan:
	@mkdir -p build/asan && ln -sfn ../../models build/asan/models
	$(MAKE) test BUILD=build/asan BIN=build/asan/bin EXAMPLE_CFLAGS="$(SANITIZE)" \
	  OPT="-O1 -fno-omit-frame-pointer $(SANITIZE) -fno-sanitize-recover=undefined"
SANITIZE := -fsanitize=address,undefined

# ---- fuzzing: clang's libFuzzer with ASan + UBSan, in their own build tree ----

FUZZ_BUILD   := build/fuzz
FUZZERS       = $(patsubst tests/fuzz/%.c,$(FUZZ_BUILD)/%,$(filter-out $(if $(MHD),,tests/fuzz/fuzz_http.c) \
                  $(if $(SPM),,tests/fuzz/fuzz_sentencepiece.c),\
                  $(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_SECONDS ?= 60
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined

fuzz-build: needs-build
	@tools/install-deps --program clang $(DEPS.fuzz)
	$(MAKE) CC=clang CXX=clang++ ONEDNN=0 BUILD=$(FUZZ_BUILD) \
	  OPT="-O1 -g -fno-omit-frame-pointer $(FUZZ_SAN) -fsanitize=fuzzer-no-link" $(FUZZERS)

# With the C++ shim in the library, UBSan's C++ checks (vptr) need its C++ runtime, which clang
# links only when asked to when the linking driver is the C one.
FUZZ_LINK = -fsanitize=fuzzer $(if $(SPM),-fsanitize-link-c++-runtime)
$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_input.h $(LIB)
	$(CC) $(CFLAGS) $(FUZZ_LINK) -o $@ $< $(LIB) $(LDLIBS)

# The HTTP harness runs the real server of the CLI (without its main): the CLI's objects as an
# archive, libmicrohttpd. Without libmicrohttpd it is not built.
FUZZ_HTTP_OBJ := $(filter-out $(BUILD)/vit/cli/main.o,$(CLI_OBJ))
$(BUILD)/libvitcli.a: $(FUZZ_HTTP_OBJ)
	$(AR) rcs $@ $^
$(FUZZ_BUILD)/fuzz_http: tests/fuzz/fuzz_http.c $(BUILD)/libvitcli.a $(LIB)
	$(CC) $(CFLAGS) $(FUZZ_LINK) -o $@ $< $(BUILD)/libvitcli.a $(LIB) $(LDLIBS) \
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
# The folders install creates (with their parents, PREFIX itself included) are listed in this
# file for uninstall, which removes them once empty; not in a DESTDIR install (for packaging).
CREATED   := $(if $(DESTDIR),,$(ROOT)/share/vit/created-folders)
# Outside the dynamic linker's own folders, programs linked through vit.pc find libvit.so.0
# where it was installed (an rpath); /usr and /usr/local need none (and ldconfig runs there).
RPATH     := $(if $(filter /usr /usr/local,$(PREFIX:%/=%)),, -Wl$(comma)-rpath$(comma)$${libdir})

install: all
	@tools/install-dirs $(ROOT) "$(CREATED)" $(ROOT)/bin $(ROOT)/lib/pkgconfig $(ROOT)/include \
	  $(ROOT)/share/man/man1 $(ROOT)/share/bash-completion/completions \
	  $(sort $(dir $(MODELS:models/%=$(ROOT)/share/vit/models/%)))
	install -m 755 $(BIN)/vit $(ROOT)/bin/vit
	install -m 644 $(LIB) $(ROOT)/lib/libvit.a
	install -m 755 $(SHLIB) $(ROOT)/lib/libvit.so.$(VERSION)
	ln -sf libvit.so.$(VERSION) $(ROOT)/lib/libvit.so.$(MAJOR)
	ln -sf libvit.so.$(MAJOR) $(ROOT)/lib/libvit.so
	install -m 644 vit/vit.h $(ROOT)/include/vit.h
	install -m 644 vit/vit_error.h $(ROOT)/include/vit_error.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' -e 's|@PKGS@|$(PKGS)|' \
	  -e 's|@RPATH@|$(RPATH)|' -e 's|@LIBS@|$(if $(DNNL),-ldnnl) $(OMPI_LIBS) $(SPM_LIBS)|' \
	  tools/vit.pc.in > $(ROOT)/lib/pkgconfig/vit.pc
	install -m 644 $(BUILD)/vit.1 $(ROOT)/share/man/man1/vit.1
	install -m 644 tools/vit.bash-completion $(ROOT)/share/bash-completion/completions/vit
	for f in $(MODELS); do install -m 644 $$f $(ROOT)/share/vit/$$f; done
	@# the dynamic linker's cache, so programs find libvit.so.0 in a standard prefix
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig; fi

# Exactly the files install wrote, then the folders it created that are left empty (in a DESTDIR
# install: vit's own folders).
uninstall:
	rm -f $(addprefix $(ROOT)/,$(INSTALLED))
	@tools/install-dirs --remove $(ROOT) $(ROOT)/share/vit/created-folders
	@rmdir $(sort $(dir $(MODELS:models/%=$(ROOT)/share/vit/models/%))) \
	  $(ROOT)/share/vit/models $(ROOT)/share/vit 2>/dev/null || true
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig; fi

# ---- data, the default model, the demo ----

# Fashion-MNIST from Debian's package as ImageFolders data/fashion-mnist/{train,test}/<class>/
# plus labels.txt (the label names in index order); labels.txt is written last, so it marks a
# complete export.
FASHION_MNIST := /usr/share/datasets/fashion-mnist
data: data/fashion-mnist/labels.txt
data/fashion-mnist/labels.txt: | needs-data $(BUILD)/tools/fashion_mnist_export
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
	elif [ -f $(FASHION_VIT_RUN)/model.safetensors ]; then \
	  echo "$(FASHION_VIT_RUN): trained already (delete it to train again)"; \
	else \
	  $(BIN)/vit train $(FASHION_VIT_ARGS) --out $(FASHION_VIT_RUN); \
	fi
	@mkdir -p models/fashion-vit
	cp $(FASHION_VIT_RUN)/config.json $(FASHION_VIT_RUN)/model.safetensors \
	  $(FASHION_VIT_RUN)/preprocessor_config.json $(FASHION_VIT_RUN)/train_log.jsonl models/fashion-vit/

# CIFAR-10 (../shared/data/cifar10: JPEG ImageFolders) unpacked into data/cifar10/train and
# data/cifar10/test. The shipped model (models/vit-tiny-cifar10/README.md) is the average of three
# fine-tunes of vit-tiny-in1k (a uniform model soup): A, 4 epochs at 224; B, 20 epochs at 112
# with Mixup/CutMix and layer-wise decay, then 1 epoch at 224; C, 1 epoch of Mixup/CutMix from A
# (from A stored in F16, as C was first run). Every run holds out the same 5 % of each training
# class for validation (the test images are only read by make cifar10-eval). The runs live in
# $(BUILD)/cifar10-runs: an interrupted one resumes, a finished one is skipped (about 3 hours in
# all on 2 cores: more than one session, so run make cifar10-model again until it is done).
CIFAR10         = $(SHARED)/data/cifar10
CIFAR10_DATA   := data/cifar10
CIFAR10_RUNS   := $(BUILD)/cifar10-runs
CIFAR10_COMMON := --train $(CIFAR10_DATA)/train --val-split 0.05 --batch 32 --min-lr 1e-6 --seed 1 -t 2
CIFAR10_A      := --init models/vit-tiny-in1k --epochs 4 --lr 1e-4 --warmup 0.3
CIFAR10_B112   := --init models/vit-tiny-in1k --resize 112 --epochs 20 --lr 2e-4 --warmup 1 \
  --layer-decay 0.8 --mixup 0.8 --cutmix 1.0 --precision bf16
CIFAR10_B      := --init $(CIFAR10_RUNS)/b112 --resize 224 --epochs 1 --lr 3e-5 --warmup 0.1 \
  --precision bf16
CIFAR10_C      := --init $(CIFAR10_RUNS)/a-f16 --epochs 1 --lr 3e-5 --warmup 0.1 --mixup 0.8 \
  --cutmix 1.0 --precision bf16
# $(call cifar10_run,NAME,ARGS): one run into $(CIFAR10_RUNS)/NAME, resumed if interrupted,
# skipped once done
cifar10_run = if [ -f $(CIFAR10_RUNS)/$(1)/.done ]; then echo "$(CIFAR10_RUNS)/$(1): done"; \
  elif [ -f $(CIFAR10_RUNS)/$(1)/train_state.safetensors ]; then \
    $(BIN)/vit train --out $(CIFAR10_RUNS)/$(1) --resume -t 2 && touch $(CIFAR10_RUNS)/$(1)/.done; \
  else $(BIN)/vit train $(2) $(CIFAR10_COMMON) --out $(CIFAR10_RUNS)/$(1) && \
    touch $(CIFAR10_RUNS)/$(1)/.done; fi
cifar10-data: $(CIFAR10_DATA)/train/.done $(CIFAR10_DATA)/test/.done
$(CIFAR10_DATA)/%/.done:
	@test -r $(CIFAR10)/cifar10-$*.tar.gz || { echo "make: $(CIFAR10)/cifar10-$*.tar.gz is not there (SHARED=DIR names the reference data folder)"; exit 1; }
	@mkdir -p $(CIFAR10_DATA)
	tar -xzf $(CIFAR10)/cifar10-$*.tar.gz -C $(CIFAR10_DATA)
	@touch $@
cifar10-model: $(BIN)/vit $(CIFAR10_DATA)/train/.done
	@$(call cifar10_run,a,$(CIFAR10_A))
	$(BIN)/vit convert --overwrite --dtype f16 $(CIFAR10_RUNS)/a $(CIFAR10_RUNS)/a-f16
	@$(call cifar10_run,b112,$(CIFAR10_B112))
	@$(call cifar10_run,b,$(CIFAR10_B))
	@$(call cifar10_run,c,$(CIFAR10_C))
	$(BIN)/vit average --overwrite --dtype f16 -o models/vit-tiny-cifar10 $(CIFAR10_RUNS)/b $(CIFAR10_RUNS)/a \
	  $(CIFAR10_RUNS)/c
	for r in a b112 b c; do \
	  cp $(CIFAR10_RUNS)/$$r/train_log.jsonl models/vit-tiny-cifar10/train_log_$$r.jsonl && \
	  cp $(CIFAR10_RUNS)/$$r/train_curves.png models/vit-tiny-cifar10/train_curves_$$r.png || exit 1; \
	done
cifar10-eval: $(BIN)/vit $(CIFAR10_DATA)/test/.done
	$(BIN)/vit eval -m models/vit-tiny-cifar10 --json-file $(BUILD)/cifar10-test.json \
	  --confusion-png models/vit-tiny-cifar10/confusion_test.png $(CIFAR10_DATA)/test

# Printed text lines for OCR (docs/OCR_DATA.md): the training set in the training fonts from
# SST-2's train sentences (none of its lines occurs in a dev sentence), and the held-out test set
# in fonts never used in training from the dev sentences, clean and degraded: the same lines (one
# seed), with and without the scan and photo effects. Line i of a set depends only on its seed and
# i, so a smaller count gives the first lines of a larger one. Each folder is complete once its
# labels.tsv is there; bin/vit is order-only, so a rebuilt vit does not render them again.
SHARED          ?= ../shared
SST2            := $(SHARED)/data/sst2
OCR_DATA        := data/ocr
OCR_TRAIN_LINES ?= 100000
OCR_TEST_LINES  ?= 1000
OCR_TRAIN_ARGS   = --fonts tools/ocr-fonts/train.txt --sentences $(SST2)/train.tsv \
                   --held-out $(SST2)/dev.tsv --seed 1 --count $(OCR_TRAIN_LINES) --degrade 0.8
OCR_TEST_ARGS    = --fonts tools/ocr-fonts/test.txt --sentences $(SST2)/dev.tsv --seed 2 \
                   --count $(OCR_TEST_LINES)
OCR_VAL_ARGS     = --fonts tools/ocr-fonts/train.txt --sentences $(SST2)/train.tsv \
                   --held-out $(SST2)/dev.tsv --seed 3 --count 500 --degrade 0.8
ocr-data: $(OCR_DATA)/train/labels.tsv $(OCR_DATA)/val/labels.tsv \
          $(OCR_DATA)/test-clean/labels.tsv $(OCR_DATA)/test-degraded/labels.tsv
$(OCR_DATA)/train/labels.tsv: | $(BIN)/vit needs-ocr
	$(BIN)/vit render-lines $(OCR_TRAIN_ARGS) --out $(@D)
$(OCR_DATA)/val/labels.tsv: | $(BIN)/vit needs-ocr
	$(BIN)/vit render-lines $(OCR_VAL_ARGS) --out $(@D)
$(OCR_DATA)/test-clean/labels.tsv: | $(BIN)/vit needs-ocr
	$(BIN)/vit render-lines $(OCR_TEST_ARGS) --degrade 0 --out $(@D)
$(OCR_DATA)/test-degraded/labels.tsv: | $(BIN)/vit needs-ocr
	$(BIN)/vit render-lines $(OCR_TEST_ARGS) --degrade 1 --out $(@D)
needs-ocr: needs-build
	@tools/install-deps $(OCR_FONTS)
	@mkdir -p $(OCR_DATA)
	@test -r $(SST2)/train.tsv && test -r $(SST2)/dev.tsv || { echo "$(NO_SST2)"; exit 1; }
NO_SST2 := make: SST-2's train.tsv and dev.tsv, the OCR lines' sentences, are not in $(SST2) \
           (SHARED=DIR names the reference data folder)

# OCR lines as people crop them (docs/OCR_DATA.md, "Lines as people crop them"): the training set
# (--crop: each line at its own size, 16-96 px, cut tight or loose, page-like texts) in the
# training fonts from SST-2's train sentences, none in a dev sentence, and validation lines drawn
# alike (seed 13); the held-out sets in fonts never used in training from the dev sentences:
# crops (test-crops-clean/-degraded: the same lines, seed 12) and pages of paragraphs at three
# line heights, clean and degraded (test-pages-H-clean/-degraded, seed 14: the same pages), each
# page's lines cut by their true boxes into a line set vit eval reads. OCR_V2_LINES train lines
# (150,000: ~2.5 GB, ~16 min on 2 busy cores), OCR_V2_TEST_LINES crops, OCR_V2_PAGES pages a set.
OCR_V2            := data/ocr-v2
OCR_V2_LINES      ?= 150000
OCR_V2_TEST_LINES ?= 1000
OCR_V2_PAGES      ?= 60
OCR_V2_HEIGHTS    := 20 32 64
OCR_V2_TRAIN_ARGS  = --crop --fonts tools/ocr-fonts/train.txt --sentences $(SST2)/train.tsv \
                     --held-out $(SST2)/dev.tsv --degrade 0.8
OCR_V2_TEST_ARGS   = --fonts tools/ocr-fonts/test.txt --sentences $(SST2)/dev.tsv
OCR_V2_PAGE_SETS  := $(foreach h,$(OCR_V2_HEIGHTS),$(foreach k,clean degraded,test-pages-$(h)-$(k)))
ocr-data-v2: $(OCR_V2)/train/labels.tsv $(OCR_V2)/val/labels.tsv \
             $(OCR_V2)/test-crops-clean/labels.tsv $(OCR_V2)/test-crops-degraded/labels.tsv \
             $(OCR_V2_PAGE_SETS:%=$(OCR_V2)/%/labels.tsv)
$(OCR_V2)/train/labels.tsv: | $(BIN)/vit needs-ocr
	nice $(BIN)/vit render-lines $(OCR_V2_TRAIN_ARGS) --seed 11 --count $(OCR_V2_LINES) --out $(@D)
$(OCR_V2)/val/labels.tsv: | $(BIN)/vit needs-ocr
	$(BIN)/vit render-lines $(OCR_V2_TRAIN_ARGS) --seed 13 --count 1000 --out $(@D)
$(OCR_V2)/test-crops-%/labels.tsv: | $(BIN)/vit needs-ocr
	$(BIN)/vit render-lines --crop $(OCR_V2_TEST_ARGS) --seed 12 --count $(OCR_V2_TEST_LINES) \
	  --degrade $(if $(filter clean,$*),0,1) --out $(@D)
# test-pages-H-clean and -degraded: pages whose body lines are H px high (headings up to 1.5 x)
$(OCR_V2)/test-pages-%/labels.tsv: | $(BIN)/vit needs-ocr
	$(BIN)/vit render-lines --pages $(OCR_V2_TEST_ARGS) --seed 14 --count $(OCR_V2_PAGES) \
	  --line-height $(firstword $(subst -, ,$*)) \
	  --degrade $(if $(filter clean,$(lastword $(subst -, ,$*))),0,1) --out $(@D)

# The issue-43 examples (tools/ocr-examples.txt) as tight crops in a URW font of the training set,
# at the two line heights of the issue's crops (~40 px: 303 x 45; ~30 px: 249 x 35), clean.
ocr-examples: $(OCR_V2)/examples-40/labels.tsv $(OCR_V2)/examples-30/labels.tsv
$(OCR_V2)/examples-%/labels.tsv: tools/ocr-examples.txt | $(BIN)/vit needs-ocr
	$(BIN)/vit render-lines --crop --tight 1 --degrade 0 --texts $< --count $$(grep -c . $<) \
	  --fonts tools/ocr-fonts/examples.txt --line-height $* --out $(@D)

# The shipped OCR model (models/ocr-printed-lines/README.md): ViT-Tiny's encoder at 32x768 and a
# new 3-layer TrOCR decoder over byte tokens, trained on the training lines, validated (CER after
# every epoch) on the validation lines (training fonts, other lines); the test sets are only read
# by make ocr-eval. Trains in $(BUILD)/ocr-printed-lines (an interrupted run resumes there); the
# finished model is stored in F16.
OCR_MODEL_RUN  := $(BUILD)/ocr-printed-lines
OCR_MODEL_ARGS := --init models/vit-tiny-in1k --tokenizer tools/ocr-tokenizer \
  --input-height 32 --input-width 768 --train $(OCR_DATA)/train --val $(OCR_DATA)/val \
  --decoder-layers 3 --decoder-hidden 256 --decoder-heads 4 --decoder-mlp 1024 --max-len 80 \
  --epochs 3 --batch 64 --lr 4e-4 --min-lr 1e-5 --warmup 0.2 --seed 1 -t 2
ocr-model: $(BIN)/vit ocr-data
	@if [ -f $(OCR_MODEL_RUN)/train_state.safetensors ]; then \
	  $(BIN)/vit train --out $(OCR_MODEL_RUN) --resume -t 2; \
	elif [ -f $(OCR_MODEL_RUN)/model.safetensors ]; then \
	  echo "$(OCR_MODEL_RUN): trained already (delete it to train again)"; \
	else \
	  $(BIN)/vit train $(OCR_MODEL_ARGS) --out $(OCR_MODEL_RUN); \
	fi
	$(BIN)/vit convert --overwrite --dtype f16 $(OCR_MODEL_RUN) models/ocr-printed-lines
	cp $(OCR_MODEL_RUN)/train_log.jsonl $(OCR_MODEL_RUN)/train_curves.png models/ocr-printed-lines/

# The shipped OCR model and Tesseract on both test sets, side by side.
ocr-eval: ocr-data
	@tools/install-deps tesseract-ocr tesseract-ocr-eng
	$(BIN)/vit eval -m models/ocr-printed-lines $(OCR_DATA)/test-clean
	$(BIN)/vit eval -m models/ocr-printed-lines $(OCR_DATA)/test-degraded
	tools/tesseract_eval $(OCR_DATA)/test-clean
	tools/tesseract_eval $(OCR_DATA)/test-degraded

# Tesseract (--psm 7, one process of one thread per core) on both test sets: CER, WER, lines/s.
ocr-tesseract: ocr-data
	@tools/install-deps tesseract-ocr tesseract-ocr-eng
	tools/tesseract_eval $(OCR_DATA)/test-clean
	tools/tesseract_eval $(OCR_DATA)/test-degraded

# A few Fashion-MNIST test images (from the Debian package) through the shipped default model.
demo: $(BIN)/vit $(BUILD)/tools/fashion_mnist_export | needs-data
	@BUILD=$(BUILD) BIN=$(BIN) tools/demo
	@$(call give_back,$(BUILD) $(BIN))

# ---- source hygiene ----

format: needs-format
	clang-format -i $(SOURCES)

format-check: needs-format
	@clang-format --dry-run -Werror $(SOURCES) && echo "clang-format: $(words $(SOURCES)) files clean"

check-layers:
	@tools/check-layers && echo "layers: every include goes down"

needs-format:
	@tools/install-deps --program clang-format $(DEPS.format)

# Every source compiles for aarch64 too (Debian's cross compilers), the image formats, the text
# renderer and the SentencePiece shim this build has included.
cross-check: needs-build
	@tools/install-deps --program aarch64-linux-gnu-gcc $(DEPS.cross)
	@tools/cross-check $(foreach f,$(call built,WEBP TIFF GIF SENTENCEPIECE FREETYPE),-DVIT_$(f))

clean:
	rm -rf $(BUILD) $(BIN)

FORCE:

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TESTS:=.d)
