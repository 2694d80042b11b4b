#!/bin/sh
# Writes fuzz_checkpoint's fixed model (tests/fuzz/checkpoint/) and its seed (a real
# train_state.safetensors, tests/fuzz/corpus/fuzz_checkpoint/) with bin/vit train: a tiny ViT on
# the harness's image folder, interrupted by SIGINT, which checkpoints. Run from anywhere.
set -eu
cd "$(dirname "$0")/../.."
data=/dev/shm/vit-fuzz-train-data
for c in a b; do
    mkdir -p "$data/$c"
    for i in 0 1; do cp tests/data/pullover.png "$data/$c/$i.png"; done
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bin/vit train --train "$data" --val-split 0 --out "$out/m" --epochs 100000 --batch 2 --patch 7 \
    --hidden 8 --layers 1 --heads 2 --mlp 16 -t 1 >/dev/null 2>&1 &
pid=$!
while [ ! -f "$out/m/train_state.safetensors" ]; do sleep 0.1; done
sleep 0.5
kill -INT $pid
wait $pid || true # stopped by the signal: exit 1 after the checkpoint
mkdir -p tests/fuzz/checkpoint tests/fuzz/corpus/fuzz_checkpoint
cp "$out/m/config.json" "$out/m/model.safetensors" "$out/m/preprocessor_config.json" \
    tests/fuzz/checkpoint/
cp "$out/m/train_state.safetensors" tests/fuzz/corpus/fuzz_checkpoint/state
ls -l tests/fuzz/checkpoint tests/fuzz/corpus/fuzz_checkpoint
