#!/bin/sh
# A build with every optional feature switched off (make ONEDNN=0 MPI=0 MICROHTTPD=0 WEBP=0 TIFF=0
# GIF=0 SENTENCEPIECE=0 FREETYPE=0 CURL=0, at -O0 for speed, in its own build tree): make's line names
# each as left out and why; bin/vit classifies a JPEG as the full build does; vit info says what
# the build is without; a WebP, TIFF or GIF file, vit serve and vit render-lines are refused in
# one line each; the formats test passes with its left-out formats counted as skipped; the
# SentencePiece test checks the refusal of a SentencePiece model and skips the rest, saying why,
# and the text-line test checks the fonts' refusal and skips the rendering; nothing of
# libsentencepiece, libstdc++ or libfreetype is linked; an org/name not in the cache is refused
# saying nothing is downloaded, and neither libcurl nor libcrypto is linked. Prints a
# cmocka-style summary for tests/run.
set -u
cd "$(dirname "$0")/.." || exit 1
full=${VIT_BIN:-bin/vit}
min=${BUILD:-build}/min
vit=$min/bin/vit
model=models/vit-tiny-in1k
fail() {
    echo "minimal-build: $*"
    echo "[  FAILED  ] 1 test(s), listed below:"
    exit 1
}
off="ONEDNN=0 MPI=0 MICROHTTPD=0 WEBP=0 TIFF=0 GIF=0 SENTENCEPIECE=0 FREETYPE=0 CURL=0"
# its own make: not the calling make's jobs or variables (but for the C compiler)
# shellcheck disable=SC2086 # one word per variable
out=$(MAKEFLAGS='' make -s -j2 BUILD="$min" BIN="$min/bin" OPT=-O0 CC="${CC:-cc}" $off all \
    "$min/tests/test_formats" "$min/tests/test_sentencepiece" "$min/tests/test_ocr_lines" 2>&1) ||
    fail "make $off failed: $(printf '%s' "$out" | tail -n 5)"
line=$(printf '%s\n' "$out" | grep '^vit: built with')
want="vit: built with no optional feature; left out: oneDNN (ONEDNN=0), OpenMPI (MPI=0),"
want="$want vit serve (MICROHTTPD=0), WebP (WEBP=0), TIFF (TIFF=0), GIF (GIF=0),"
want="$want SentencePiece (SENTENCEPIECE=0), FreeType (FREETYPE=0), Hub downloads (CURL=0)"
[ "$line" = "$want" ] || fail "make said '$line', not '$want'"
version=$("$vit" --version) || fail "vit --version failed"
want="; built with no optional feature; left out: oneDNN, MPI, microhttpd, WebP, TIFF, GIF,"
want="$want SentencePiece, FreeType, libcurl"
case "$version" in *"$want") ;; *) fail "vit --version said '$version', not '...$want'" ;; esac
info=$("$vit" info -m "$model") || fail "vit info failed"
for expected in "backends: .*oneDNN (not in this build)" "mpi: *not built in" \
    "formats: *PNG, JPEG, BMP; built without WebP, TIFF, GIF" \
    "tokenizers: *tokenizer.json, WordPiece, byte-level BPE; built without SentencePiece" \
    "text lines: *built without FreeType"; do
    printf '%s\n' "$info" | grep -q "^$expected" || fail "vit info does not say '$expected'"
done
got=$("$vit" classify -m "$model" -k 3 examples/photos/cat.jpg) || fail "vit classify failed"
want=$("$full" classify -m "$model" -k 3 examples/photos/cat.jpg)
[ "$got" = "$want" ] || fail "the minimal build says '$got', the full build '$want'"
for f in webp_lossy.webp tiff_rgb8.tif gif_palette.gif; do
    f=tests/data/formats/$f
    err=$("$vit" classify -m "$model" "$f" 2>&1 >/dev/null) && fail "$f was classified"
    case "$err" in
    *"$f: a "*" file, and this vit was built without "*" support"*) ;;
    *) fail "$f: '$err'" ;;
    esac
    [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] || fail "$f: more than one line: $err"
done
err=$("$vit" serve -m "$model" 2>&1) && fail "vit serve ran"
case "$err" in *"not built in"*) ;; *) fail "vit serve: '$err'" ;; esac
err=$("$vit" render-lines --fonts tools/ocr-fonts/test.txt --out "$min/lines" 2>&1) &&
    fail "vit render-lines ran"
case "$err" in *"not built in"*"libfreetype-dev"*) ;; *) fail "vit render-lines: '$err'" ;; esac
[ "$(printf '%s\n' "$err" | wc -l)" = 1 ] || fail "vit render-lines: more than one line: $err"
ocr=$("$min/tests/test_ocr_lines" 2>&1) || fail "test_ocr_lines failed: $ocr"
printf '%s\n' "$ocr" | grep -q '^\[       OK \] test_font_errors' ||
    fail "test_ocr_lines did not check the fonts' refusal: $ocr"
printf '%s\n' "$ocr" | grep -q '^\[  SKIPPED \] 8 test' ||
    fail "test_ocr_lines did not skip its 8 rendering tests: $ocr"
formats=$(VIT_BIN="$vit" "$min/tests/test_formats" 2>&1) || fail "test_formats failed: $formats"
printf '%s\n' "$formats" | grep -q '^\[  SKIPPED \] 1 test' || fail "test_formats skipped nothing"
spm=$("$min/tests/test_sentencepiece" 2>&1) || fail "test_sentencepiece failed: $spm"
printf '%s\n' "$spm" | grep -q '^\[       OK \] test_refused_without_sentencepiece' ||
    fail "test_sentencepiece did not check the refusal: $spm"
skips=$(printf '%s\n' "$spm" | grep -c '^SKIP .*built without SentencePiece')
printf '%s\n' "$spm" | grep -q "^\[  SKIPPED \] $skips test" && [ "$skips" -gt 0 ] ||
    fail "test_sentencepiece did not skip its other tests saying why: $spm"
err=$(HF_HUB_CACHE="$min/no-cache" "$vit" info -m org/not-cached 2>&1) && fail "vit info -m org/not-cached ran"
case "$err" in
*"org/not-cached is not in the cache"*"this vit is built without libcurl: nothing is downloaded") ;;
*) fail "vit info -m org/not-cached: '$err'" ;;
esac
for f in "$vit" "$min"/libvit.so.*; do
    linked=$(ldd "$f" | grep -o 'lib\(sentencepiece\|stdc++\|freetype\|curl\|crypto\)[^ ]*' | tr '\n' ' ')
    [ -z "$linked" ] || fail "$f links $linked"
done
echo "minimal-build: $line"
printf '%s\n' "$formats" | grep "^SKIP"
printf '%s\n' "$spm" | grep "^without libsentencepiece"
echo "minimal-build: test_sentencepiece: the refusal checked, $skips tests skipped"
echo "minimal-build: test_ocr_lines: the fonts' refusal checked, 8 rendering tests skipped"
echo "[  PASSED  ] 1 test(s)."
