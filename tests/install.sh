#!/bin/sh
# What README's "Install and link" promises, in temporary prefixes: make install into a prefix
# that does not exist yet; examples/classify.c built with PKG_CONFIG_PATH set and
# `cc ... $(pkg-config --cflags --libs vit)` alone, and run without LD_LIBRARY_PATH; its answer
# against bin/vit classify's, and the same example built and run as C++ (vit.h from C++); the installed vit finds its default model; make uninstall leaves
# nothing, not even the folders install created. Then a prefix holding a folder of its own
# before install: uninstall leaves exactly that. Prints a cmocka-style summary for tests/run.
set -u
cd "$(dirname "$0")/.." || exit 1
tmp=$(mktemp -d /tmp/vit-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
fail() {
    echo "install: $*"
    echo "[  FAILED  ] 1 test(s), listed below:"
    exit 1
}
install() { make -s install PREFIX="$1" BUILD="${BUILD:-build}" BIN="${BIN:-bin}" >/dev/null; }
uninstall() { make -s uninstall PREFIX="$1" BUILD="${BUILD:-build}" BIN="${BIN:-bin}" >/dev/null; }
# a program linked against the build tree's shared library starts (the loader asks for its
# soname, libvit.so.0, which must be there beside it)
build="$(pwd)/${BUILD:-build}"
# shellcheck disable=SC2086 # the flags are words
cc ${EXAMPLE_CFLAGS:-} -Ivit examples/classify.c -L"$build" -Wl,-rpath,"$build" -lvit \
    -o "$tmp/classify_build" || fail "examples/classify.c does not link against $build/libvit.so"
got=$("$tmp/classify_build" models/fashion-vit tests/data/pullover.png 2>&1) ||
    fail "the example linked against the build tree does not run: $got"
install "$prefix" || fail "make install failed"
unset LD_LIBRARY_PATH
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
flags=$(pkg-config --cflags --libs vit) || fail "pkg-config does not know vit"
# shellcheck disable=SC2046,SC2086 # the flags are words
cc ${EXAMPLE_CFLAGS:-} examples/classify.c $(pkg-config --cflags --libs vit) -o "$tmp/classify" ||
    fail "examples/classify.c does not build with: $flags"
image="$tmp/pullover.png"
cp tests/data/pullover.png "$image"
model="$prefix/share/vit/models/fashion-vit"
got=$("$tmp/classify" "$model" "$image" 2>&1) ||
    fail "the example, run without LD_LIBRARY_PATH, failed: $got"
want=$("${BIN:-bin}/vit" classify -k 3 -m models/fashion-vit "$image" | tail -n 3 | sed 's/^  //')
[ "$got" = "$want" ] || fail "the example says '$got', bin/vit classify '$want'"
# vit.h promises C++ programs the same (extern "C", no C-only syntax): the example as C++
if command -v c++ >/dev/null; then
    # shellcheck disable=SC2046,SC2086 # the flags are words
    c++ -x c++ -std=c++11 -Wall -Wextra -pedantic -Werror ${EXAMPLE_CFLAGS:-} examples/classify.c \
        -x none $(pkg-config --cflags --libs vit) -o "$tmp/classify_cxx" ||
        fail "examples/classify.c does not build as C++ with: $flags"
    got=$("$tmp/classify_cxx" "$model" "$image" 2>&1) || fail "the C++ example failed: $got"
    [ "$got" = "$want" ] || fail "the C++ example says '$got', bin/vit classify '$want'"
    cxx="; the same example as C++ (c++ -std=c++11 -pedantic -Werror) agrees"
else
    cxx="; SKIPPED the C++ build: no c++ compiler"
fi
# the installed vit, moved away from the build tree, finds the installed default model
want=$("${BIN:-bin}/vit" classify -k 3 -m models/vit-tiny-in1k "$image" | tail -n 3)
installed=$(cd / && "$prefix/bin/vit" classify -k 3 "$image" | tail -n 3)
[ "$installed" = "$want" ] || fail "the installed vit says '$installed', bin/vit '$want'"
"$prefix/bin/vit" --version >/dev/null || fail "vit --version"
man -l "$prefix/share/man/man1/vit.1" >/dev/null 2>&1 || [ ! -x "$(command -v man)" ] ||
    fail "the man page does not render"
install "$prefix" || fail "make install over an installation failed"
uninstall "$prefix" || fail "make uninstall failed"
[ ! -e "$prefix" ] || fail "make uninstall left: $(find "$prefix" | tr '\n' ' ')"
# a prefix with a folder of its own (holding a file) and an empty one: both stay, nothing else
mkdir -p "$prefix/lib" "$prefix/share/man"
touch "$prefix/lib/other.so"
install "$prefix" || fail "make install into an existing prefix failed"
uninstall "$prefix" || fail "make uninstall from an existing prefix failed"
left=$(cd "$prefix" && find . | sort | tr '\n' ' ')
[ "$left" = ". ./lib ./lib/other.so ./share ./share/man " ] ||
    fail "make uninstall from an existing prefix left '$left', not what was there before"
echo "install: the example linked against $build/libvit.so runs; PREFIX=$prefix: example built with '$flags' runs and agrees with bin/vit classify;" \
    "uninstall leaves nothing, or what was there before${cxx}"
echo "[  PASSED  ] 1 test(s)."
