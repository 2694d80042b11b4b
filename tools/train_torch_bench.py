#!/usr/bin/python3
"""Training-step throughput of the same ViT in PyTorch, for comparison with build/bench/train_bench
(same shape and batch, forward + backward of label-smoothed cross-entropy, random data, median
step time after two warm-up steps):

  /usr/bin/python3 tools/train_torch_bench.py [--hidden 96] [--layers 6] [--batch 128]
                                              [--steps 20] [--threads 2]
With --image-size 224 --patch 16 --channels 3 --hidden 192 --layers 12 --heads 3 --mlp 768
--labels 10 --adamw it is ViT-Ti/16 fine-tuned as `vit train --init models/vit-tiny-in1k` does
(the step includes AdamW's update), the side-by-side for vit train's images/s; --bf16 runs the
forward under torch.autocast("cpu", torch.bfloat16) (mixed precision, fp32 master weights), the
side-by-side for vit train --precision bf16.
Uses the model of tools/train_torch_check.py (HF ViTForImageClassification module layout)."""
import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_torch_check import ViTForImageClassification  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hidden", type=int, default=96)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--image-size", type=int, default=28)
    ap.add_argument("--patch", type=int, default=4)
    ap.add_argument("--channels", type=int, default=1)
    ap.add_argument("--mlp", type=int, default=0, help="default: 2 x hidden")
    ap.add_argument("--labels", type=int, default=10)
    ap.add_argument("--adamw", action="store_true", help="time AdamW's update too")
    ap.add_argument("--bf16", action="store_true", help="autocast the forward to bfloat16")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    cfg = {"hidden_size": a.hidden, "intermediate_size": a.mlp or 2 * a.hidden,
           "num_attention_heads": a.heads, "num_hidden_layers": a.layers, "layer_norm_eps": 1e-6,
           "patch_size": a.patch, "num_channels": a.channels, "image_size": a.image_size,
           "num_labels": a.labels, "id2label": {str(i): str(i) for i in range(a.labels)}}
    model = ViTForImageClassification(cfg).train()
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.05)
    loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    x = torch.rand(a.batch, a.channels, a.image_size, a.image_size) * 2 - 1
    y = torch.arange(a.batch) % a.labels
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.05) if a.adamw else None
    times = []
    for s in range(a.steps + 2):
        t0 = time.perf_counter()
        model.zero_grad(set_to_none=False)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
            loss = loss_fn(model(x).float(), y)
        loss.backward()
        if opt:
            opt.step()
        if s >= 2:
            times.append(time.perf_counter() - t0)
    dt = statistics.median(times)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, hidden {a.hidden}, layers "
          f"{a.layers}, {a.image_size}px/{a.patch}, batch {a.batch}{', AdamW' if opt else ''}"
          f"{', bf16 autocast' if a.bf16 else ''}: median {dt * 1e3:.1f} ms/step = {a.batch / dt:.0f} images/s; "
          f"best {min(times) * 1e3:.1f} ms = {a.batch / min(times):.0f} images/s")


if __name__ == "__main__":
    main()
