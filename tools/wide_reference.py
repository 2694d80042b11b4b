#!/usr/bin/python3
"""Writes tests/data/vit-wide-micro, a ViT of non-square input, and its float64 goldens (run by
hand; the project never runs it).

A text line is wide (32 x 384), and transformers' ViT takes that natively: ViTConfig's image_size
may be [height, width] (ViTPatchEmbeddings reads an iterable as (height, width)), the position
table then has (height/P)·(width/P) patch rows, and the model runs at exactly that size. The
way to such a model from a square one is what `vit train --input-height H --input-width W` does
to its encoder, and what transformers' interpolate_pos_encoding computes at that size: the
square grid of positions resized by F.interpolate(size=(H/P, W/P), mode="bicubic",
align_corners=False), the special rows kept (modeling_vit.py, ViTEmbeddings.interpolate_pos_
encoding, read at transformers 4.46 through the code index).

vit-wide-micro is micro-a (ViTForImageClassification, 32x32, patch 8, hidden 48, 2 layers, 5
classes) with image_size [16, 48] and its 4x4 position grid so resized to 2x6; every other tensor
micro-a's. Its preprocessor resizes to 16x48 (ViTImageProcessor, bilinear). Goldens:
golden.safetensors holds `positions` (the resized table, as stored) and, per golden image,
`image/NAME/pixels` [3, 16, 48] and `image/NAME/logits` [5] of the float64 forward
(tools/hf_reference.py); golden.json lists them.

usage: /usr/bin/python3 tools/wide_reference.py
"""

import json
import os
import shutil
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_reference as ref  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
IMAGES = ["wide_500x37.png", "rgb_64x48.png", "tall_40x400.jpg"]
HEIGHT, WIDTH = 16, 48


def resized_positions(pos, special, n, mh, mw):
    D = pos.shape[-1]
    grid = pos[:, special:].reshape(1, n, n, D).permute(0, 3, 1, 2).double()
    grid = F.interpolate(grid, size=(mh, mw), mode="bicubic", align_corners=False)
    out = torch.cat([pos[:, :special].double(), grid.permute(0, 2, 3, 1).reshape(1, mh * mw, D)],
                    dim=1)
    return out.float()


def main():
    src, out = os.path.join(DATA, "micro-a"), os.path.join(DATA, "vit-wide-micro")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    w, meta = ref.read_safetensors(os.path.join(src, "model.safetensors"))
    P, n = cfg["patch_size"], cfg["image_size"] // cfg["patch_size"]
    name = "vit.embeddings.position_embeddings"
    w[name] = resized_positions(w[name], 1, n, HEIGHT // P, WIDTH // P)
    cfg["image_size"] = [HEIGHT, WIDTH]
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    with open(os.path.join(src, "preprocessor_config.json")) as f:
        pp = json.load(f)
    pp["size"] = {"height": HEIGHT, "width": WIDTH}
    with open(os.path.join(out, "preprocessor_config.json"), "w") as f:
        json.dump(pp, f, indent=2)
        f.write("\n")
    ref.write_safetensors(os.path.join(out, "model.safetensors"), w, meta)
    w64 = {k: v.double() for k, v in w.items()}
    golden = {"positions": w[name][0]}
    for image in IMAGES:
        pixels = ref.preprocess(os.path.join(DATA, "golden-images", image), pp)
        assert pixels.shape == (3, HEIGHT, WIDTH), pixels.shape
        logits = ref.forward(w64, cfg, pixels[None].double())["logits"][0]
        golden[f"image/{image}/pixels"] = pixels
        golden[f"image/{image}/logits"] = logits
    ref.write_safetensors(os.path.join(out, "golden.safetensors"), golden)
    with open(os.path.join(out, "golden.json"), "w") as f:
        json.dump({"model": "vit-wide-micro", "from": "micro-a", "image_size": [HEIGHT, WIDTH],
                   "reference": "float64 PyTorch forward (tools/hf_reference.py), positions by "
                                "F.interpolate bicubic (tools/wide_reference.py)",
                   "images": IMAGES}, f, indent=2)
        f.write("\n")
    shutil.copy(os.path.join(DATA, "golden-images", IMAGES[0]), os.path.join(out, "line.png"))
    print("vit-wide-micro:", {k: tuple(v.shape) for k, v in golden.items()})


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
