#!/bin/sh
# tests/hub_cache.sh SRC CACHE REPO COMMIT [REF...]: SRC's files as huggingface_hub caches a
# snapshot of REPO (org/name) at COMMIT: CACHE/models--org--name/blobs/ETAG (an LFS file's ETag is
# its sha256, here the .safetensors and .bin files; the others' is git's blob id), the snapshot's
# files as relative links ../../blobs/ETAG, and each REF (a branch such as main) in refs/ holding
# COMMIT without a newline, as huggingface_hub writes it. A test fixture, not the library's code.
set -eu
src=$1 cache=$2 repo=$3 commit=$4
shift 4
dir=$cache/models--$(printf '%s' "$repo" | sed 's|/|--|')
mkdir -p "$dir/blobs" "$dir/snapshots/$commit" "$dir/refs"
for f in "$src"/*; do
    name=$(basename "$f")
    case $name in
    *.safetensors | *.bin) etag=$(sha256sum "$f" | cut -d' ' -f1) ;;
    *) etag=$({ printf 'blob %s\0' "$(wc -c <"$f" | tr -d ' ')"; cat "$f"; } | sha1sum | cut -d' ' -f1) ;;
    esac
    cp "$f" "$dir/blobs/$etag"
    ln -sfn "../../blobs/$etag" "$dir/snapshots/$commit/$name"
done
for ref in "$@"; do
    mkdir -p "$(dirname "$dir/refs/$ref")"
    printf '%s' "$commit" >"$dir/refs/$ref"
done
