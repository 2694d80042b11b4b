#!/bin/sh
# The Python package (python/): its pytest tests from the checkout (PYTHONPATH=python, the
# library of this build), then what README's "Python" section promises for an installation:
# `pip install --no-build-isolation --no-index ./python` into a virtual environment (offline,
# Debian's setuptools), `make install` into a temporary prefix, and the installed package, run
# away from the checkout, finding the installed libvit through the vit on PATH and answering as
# the checkout does. Needs a python3 with numpy, PIL and pytest (Debian's /usr/bin/python3 with
# python3-numpy, python3-pil, python3-pytest; VIT_PYTHON=... picks another); skips loudly
# without. Prints a cmocka-style summary for tests/run.
set -u
cd "$(dirname "$0")/.." || exit 1
root=$(pwd)
skip() {
    echo "SKIP python: $*"
    echo "[  SKIPPED ] 1 test(s), listed below:"
    exit 0
}
fail() {
    echo "python: $*"
    echo "[  FAILED  ] 1 test(s), listed below:"
    exit 1
}
# Debian's python3 first: another one first on PATH (pyenv's, say) may lack numpy.
py=${VIT_PYTHON:-}
if [ -z "$py" ]; then
    for candidate in /usr/bin/python3 python3; do
        if "$candidate" -c 'import numpy' 2>/dev/null; then
            py=$candidate
            break
        fi
    done
fi
[ -n "$py" ] || skip "no python3 with numpy (python3-numpy)"
for module in numpy PIL pytest; do
    "$py" -c "import $module" 2>/dev/null ||
        skip "$py lacks $module (Debian: python3-numpy, python3-pil, python3-pytest)"
done
case "${EXAMPLE_CFLAGS:-}" in
*-fsanitize=*)
    skip "not under make asan: an ASan-instrumented libvit.so loads only with the ASan" \
        "runtime preloaded into python3"
    ;;
esac
# make test names the library it built (another BUILD= than the package finds by itself)
shlib=${VIT_SHLIB:-}
if [ -n "$shlib" ] && [ "$(dirname "$shlib")" != "$root/build" ]; then
    export VIT_LIBRARY="$shlib"
fi
export PYTHONDONTWRITEBYTECODE=1
out=$(PYTHONPATH=python "$py" -m pytest -p no:cacheprovider -q -rs python/tests 2>&1)
rc=$?
printf '%s\n' "$out"
summary=$(printf '%s\n' "$out" | tail -n 1)
count() { printf '%s\n' "$summary" | grep -o "[0-9]* $1" | cut -d ' ' -f 1; }
passed=$(count passed)
skipped=$(count skipped)
failed=$(count failed)
if [ $rc -ne 0 ]; then
    echo "[  FAILED  ] ${failed:-1} test(s), listed below:"
    exit 1
fi

# ---- pip install ./python, make install, the installed package ----
install_test() {
    "$py" -c 'import venv, ensurepip' 2>/dev/null || {
        echo "SKIP python: pip install: $py has no venv with pip (python3-venv)"
        return 2
    }
    tmp=$(mktemp -d /tmp/vit-python-XXXXXX)
    trap 'rm -rf "$tmp"' EXIT
    "$py" -m venv --system-site-packages "$tmp/venv" || return 1
    # a copy of python/: pip builds in the source folder, which stays clean
    cp -r python "$tmp/src" && rm -rf "$tmp/src/tests"
    log=$("$tmp/venv/bin/python" -m pip install --no-build-isolation --no-index "$tmp/src" 2>&1) ||
        { printf '%s\n' "$log" | tail -n 5; echo "pip install failed offline"; return 1; }
    make -s install PREFIX="$tmp/prefix" BUILD="${BUILD:-build}" BIN="${BIN:-bin}" >/dev/null ||
        { echo "make install failed"; return 1; }
    cp examples/photos/cat.jpg "$tmp/cat.jpg"
    model="$tmp/prefix/share/vit/models/vit-tiny-in1k"
    # shellcheck disable=SC2016 # the Python program's own quoting
    program='import sys, vit
print(vit.library_path())
print(vit.__file__)
for p in vit.load(sys.argv[1]).classify(sys.argv[2], k=3):
    print(p.index, p.label, repr(p.prob))'
    got=$(cd "$tmp" && env -u VIT_LIBRARY -u PYTHONPATH -u LD_LIBRARY_PATH \
        PATH="$tmp/prefix/bin:$PATH" "$tmp/venv/bin/python" -c "$program" "$model" cat.jpg 2>&1) ||
        { printf '%s\n' "$got"; echo "the installed package failed"; return 1; }
    want=$(PYTHONPATH=python "$py" -c "$program" models/vit-tiny-in1k examples/photos/cat.jpg)
    lib=$(printf '%s\n' "$got" | sed -n 1p)
    pkg=$(printf '%s\n' "$got" | sed -n 2p)
    case "$lib" in
    "$tmp/prefix/lib/libvit.so"*) ;;
    *) echo "the installed package loaded $lib, not the prefix's libvit"; return 1 ;;
    esac
    case "$pkg" in
    "$tmp/venv/"*) ;;
    *) echo "the package imported is $pkg, not the one pip installed"; return 1 ;;
    esac
    [ "$(printf '%s\n' "$got" | tail -n 3)" = "$(printf '%s\n' "$want" | tail -n 3)" ] ||
        { echo "installed: $got; checkout: $want"; return 1; }
    echo "python: pip install --no-index ./python and make install PREFIX=$tmp/prefix: the" \
        "installed package loads $lib and answers as the checkout"
}
install_test
case $? in
0) passed=$((${passed:-0} + 1)) ;;
2) skipped=$((${skipped:-0} + 1)) ;;
*) fail "pip install ./python with make install" ;;
esac
echo "[  PASSED  ] ${passed:-0} test(s)."
[ "${skipped:-0}" -gt 0 ] && echo "[  SKIPPED ] $skipped test(s), listed below:"
exit 0
