#!/bin/sh
# Writes fuzz_embed_cache's seeds (tests/fuzz/corpus/fuzz_embed_cache/) with bin/vit search: the
# cache of a folder of two golden images with clip-micro, then of the same folder after one image
# changed and a third was added. Run from anywhere, after make.
set -eu
cd "$(dirname "$0")/../.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
seeds=tests/fuzz/corpus/fuzz_embed_cache
mkdir -p "$dir/images/sub" "$seeds"
cp tests/data/golden-images/rgb_17x23.png "$dir/images/a.png"
cp tests/data/golden-images/gray_100x60.png "$dir/images/sub/b.png"
search() { bin/vit search -m tests/data/clip-micro --cache "$dir/cache" -k 1 "a photo" "$dir/images" >/dev/null; }
search
cp "$dir/cache" $seeds/two
touch "$dir/images/a.png"
cp tests/data/golden-images/palette_120x90.png "$dir/images/sub/c.png"
search
cp "$dir/cache" $seeds/three
ls -l $seeds
