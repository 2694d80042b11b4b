#!/bin/sh
# make install into a temporary prefix; examples/classify.c built against it through pkg-config
# alone and run; its answer against bin/vit classify's; the installed vit finds its default model;
# make uninstall leaves nothing of vit behind. Prints a cmocka-style summary for tests/run.
set -u
cd "$(dirname "$0")/.." || exit 1
prefix=$(mktemp -d /tmp/vit-install-XXXXXX)
trap 'rm -rf "$prefix"' EXIT
fail() {
    echo "install: $*"
    echo "[  FAILED  ] 1 test(s), listed below:"
    exit 1
}
make -s install PREFIX="$prefix" BUILD="${BUILD:-build}" BIN="${BIN:-bin}" >/dev/null ||
    fail "make install failed"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
flags=$(pkg-config --cflags --libs vit) || fail "pkg-config does not know vit"
# shellcheck disable=SC2086 # the flags are words
cc ${EXAMPLE_CFLAGS:-} examples/classify.c $flags -o "$prefix/classify" ||
    fail "examples/classify.c does not build with: $flags"
image=$(mktemp /tmp/vit-install-image-XXXXXX.png)
trap 'rm -rf "$prefix" "$image"' EXIT
# a real image: a Fashion-MNIST test image if the dataset is there, else one of the tests' own
src=$(find tests/data -name '*.png' 2>/dev/null | head -n 1)
[ -n "$src" ] || fail "no image in tests/data"
cp "$src" "$image"
model="$prefix/share/vit/models/fashion-vit"
got=$(LD_LIBRARY_PATH="$prefix/lib" "$prefix/classify" "$model" "$image") ||
    fail "the example failed: $got"
want=$("${BIN:-bin}/vit" classify -k 3 -m models/fashion-vit "$image" | tail -n 3 | sed 's/^  //')
[ "$got" = "$want" ] || fail "the example says '$got', bin/vit classify '$want'"
# the installed vit, moved away from the build tree, finds the installed default model
want=$("${BIN:-bin}/vit" classify -k 3 -m models/vit-tiny-in1k "$image" | tail -n 3)
installed=$(cd / && "$prefix/bin/vit" classify -k 3 "$image" | tail -n 3)
[ "$installed" = "$want" ] || fail "the installed vit says '$installed', bin/vit '$want'"
"$prefix/bin/vit" --version >/dev/null || fail "vit --version"
man -l "$prefix/share/man/man1/vit.1" >/dev/null 2>&1 || [ ! -x "$(command -v man)" ] ||
    fail "the man page does not render"
make -s uninstall PREFIX="$prefix" BUILD="${BUILD:-build}" BIN="${BIN:-bin}" >/dev/null ||
    fail "make uninstall failed"
rm -f "$prefix/classify"
left=$(find "$prefix" -type f -o -type l)
[ -z "$left" ] || fail "make uninstall left: $left"
echo "install: PREFIX=$prefix: example built with '$flags' agrees with bin/vit classify; uninstall leaves nothing"
echo "[  PASSED  ] 1 test(s)."
