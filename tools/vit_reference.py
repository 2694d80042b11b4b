#!/usr/bin/python3
"""Writes the golden images and the two micro ViTs the tests run on, with their float64 goldens
(run by hand; the project never runs it). Needs Debian 12's python3-torch and python3-pil.

  tests/data/golden-images/  15 synthetic images, one of each kind the decoders and the resize
                             must match Pillow on: PNG RGB (1x1, 17x23, 64x48, 300x200, and very
                             wide 500x37), RGBA opaque and with varying alpha, grey, grey+alpha,
                             palette (with tRNS transparency), JPEG baseline 4:2:0, progressive,
                             4:4:4, grey, and very tall 40x400
  tests/data/micro-a/        ViTForImageClassification, random weights: 32x32, patch 8, hidden 48,
                             2 layers, 4 heads, 5 labels; squash resize 32x32 bilinear,
                             mean = std = 0.5
  tests/data/micro-b/        the same class: 40x40, patch 10, hidden 60, 3 layers, 3 heads, no qkv
                             bias, 7 labels; shortest edge 46 bicubic, center crop 40, ImageNet
                             mean/std (and no image_processor_type)

Each model folder is what save_pretrained writes (config.json, preprocessor_config.json,
model.safetensors with the "vit." prefix, F32) plus golden.safetensors and golden.json in the
format of docs/SPEC.md §9: per image `<image>/pixels` [3, S, S] (Pillow's decode and the slow
ViTImageProcessor: tools/hf_reference.py preprocess) and `<image>/logits` (float64 forward, stored
F32); for the first image, rgb_64x48.png, every hidden state (`embeddings`, `layer.L`,
`layernorm`, [17, D]). golden.json lists top-5 ids, labels and probabilities. The float32
PyTorch forward's distance from the float64 one and the smallest top-1 margin are printed (the
tests compare top-1 classes, so no golden may be a near tie).

  /usr/bin/python3 tools/vit_reference.py            write everything above
  /usr/bin/python3 tools/vit_reference.py --check [SHARED]
        the cross-check against ../shared (or SHARED): the same code's preprocessing of
        SHARED/models/golden-images and float64 forward of SHARED/models/micro-a and micro-b on
        their golden pixels, against their golden.safetensors; prints the largest differences.

After writing, run tools/deit_reference.py, tools/gen_size_golden.py and
tools/explain_reference.py, in that order: their outputs are computed on these images and models.
"""
import io
import json
import os
import sys

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_reference as ref  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
IMAGE_DIR = os.path.join(DATA, "golden-images")
REFERENCE = "float64 PyTorch forward (tools/hf_reference.py); pixels via Pillow " + \
    Image.__version__

MODELS = {
    "micro-a": (dict(kind="vit", arch="ViTForImageClassification", seed=31, image=32, patch=8,
                     hidden=48, layers=2, heads=4, mlp=96, eps=1e-12, qkv_bias=True,
                     labels=[f"class_{i}" for i in range(5)]),
                {"do_resize": True, "size": {"height": 32, "width": 32}, "resample": 2,
                 "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
                 "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
                 "image_processor_type": "ViTImageProcessor"}),
    "micro-b": (dict(kind="vit", arch="ViTForImageClassification", seed=32, image=40, patch=10,
                     hidden=60, layers=3, heads=3, mlp=120, eps=1e-12, qkv_bias=False,
                     labels=[f"class_{i}" for i in range(7)]),
                {"do_resize": True, "size": {"shortest_edge": 46}, "resample": 3,
                 "do_center_crop": True, "crop_size": {"height": 40, "width": 40},
                 "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
                 "image_mean": ref.IMAGENET_MEAN, "image_std": ref.IMAGENET_STD}),
}


# ---- the golden images ----

def scene(w, h, seed, noise=0):
    """An RGB uint8 picture: a gradient in a random direction per channel, a slow ripple, a few
    flat disks and a band of fine stripes (detail the resize filters must average), plus uniform
    noise of +-noise. Smooth enough to stay small as PNG, sharp enough to tell filters apart."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    s = max(w, h)
    img = np.empty((h, w, 3))
    for c in range(3):
        a = rng.uniform(0, 2 * np.pi)
        img[..., c] = 128 + 100 * ((np.cos(a) * x + np.sin(a) * y) / s - 0.5) + \
            25 * np.sin((x * rng.uniform(2, 6) + y * rng.uniform(2, 6)) / s * np.pi)
    for _ in range(4):
        cx, cy, r = rng.uniform(0, w), rng.uniform(0, h), rng.uniform(0.08, 0.3) * s
        img[(x - cx) ** 2 + (y - cy) ** 2 < r * r] = rng.integers(0, 256, 3)
    y0, y1 = sorted(rng.integers(0, h + 1, 2))
    period = int(rng.integers(2, 5))
    img[y0:y1][((x[y0:y1] + y[y0:y1]) // period % 2 == 0)] = rng.integers(0, 256, 3)
    if noise:
        img += rng.integers(-noise, noise + 1, img.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def alpha_ramp(w, h, lo, hi):
    y, x = np.mgrid[0:h, 0:w]
    return (lo + (hi - lo) * (x + 2 * y) / max(w - 1 + 2 * (h - 1), 1)).astype(np.uint8)


def grey(rgb):
    return (rgb.astype(np.uint32) @ np.array([299, 587, 114]) // 1000).astype(np.uint8)


def palette_image(w, h, seed):
    """A 256-colour palette picture, index 0 and 1 transparent (tRNS), which convert("RGB")
    ignores."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    idx = ((x * 7 + y * 3) // 4 + (((x - w / 3) ** 2 + (y - h / 2) ** 2) < (h / 3) ** 2) * 97) % 256
    t = np.linspace(0, 1, 256)
    pal = np.stack([127 + 127 * np.sin(2 * np.pi * (t + o)) for o in rng.uniform(0, 1, 3)], -1)
    im = Image.fromarray(idx.astype(np.uint8), "P")
    im.putpalette(np.rint(pal).astype(np.uint8).tobytes())
    im.info["transparency"] = bytes([0, 128]) + bytes([255] * 254)
    return im


def golden_images():
    """name -> (Image, save options)."""
    return {
        "rgb_64x48.png": (Image.fromarray(scene(64, 48, 1, noise=6)), {}),
        "rgb_300x200.png": (Image.fromarray(scene(300, 200, 2)), {}),
        "rgb_17x23.png": (Image.fromarray(scene(17, 23, 3, noise=20)), {}),
        "rgba_80x80.png": (Image.fromarray(np.dstack([scene(80, 80, 4, noise=3),
                                                      np.full((80, 80), 255, np.uint8)])), {}),
        "rgba_alpha_90x70.png": (Image.fromarray(np.dstack([scene(90, 70, 5, noise=3),
                                                            alpha_ramp(90, 70, 1, 254)])), {}),
        "gray_100x60.png": (Image.fromarray(grey(scene(100, 60, 6, noise=3))), {}),
        "gray_alpha_50x50.png": (Image.fromarray(np.dstack([grey(scene(50, 50, 7, noise=3)),
                                                            alpha_ramp(50, 50, 0, 246)]), "LA"),
                                 {}),
        "palette_120x90.png": (palette_image(120, 90, 8), {}),
        "rgb_1x1.png": (Image.fromarray(np.array([[[200, 30, 90]]], np.uint8)), {}),
        "baseline_q90_240x180.jpg": (Image.fromarray(scene(240, 180, 9, noise=4)),
                                     dict(quality=90, subsampling=2)),
        "progressive_200x150.jpg": (Image.fromarray(scene(200, 150, 10, noise=4)),
                                    dict(quality=85, subsampling=2, progressive=True)),
        "gray_160x120.jpg": (Image.fromarray(grey(scene(160, 120, 11, noise=4))), dict(quality=90)),
        "444_q95_128x96.jpg": (Image.fromarray(scene(128, 96, 12, noise=4)),
                               dict(quality=95, subsampling=0)),
        "tall_40x400.jpg": (Image.fromarray(scene(40, 400, 13, noise=4)),
                            dict(quality=90, subsampling=2)),
        "wide_500x37.png": (Image.fromarray(scene(500, 37, 14)), {}),
    }


def write_images():
    os.makedirs(IMAGE_DIR, exist_ok=True)
    for name, (im, options) in golden_images().items():
        buf = io.BytesIO()
        if name.endswith(".png"):
            im.save(buf, "PNG", optimize=True, **options)
        else:
            im.save(buf, "JPEG", **options)
        with open(os.path.join(IMAGE_DIR, name), "wb") as f:
            f.write(buf.getvalue())
    # what was written is what was meant: Pillow reads back each kind
    kinds = {n: (Image.open(os.path.join(IMAGE_DIR, n)).mode,
                 Image.open(os.path.join(IMAGE_DIR, n)).info.get("progressive", 0))
             for n in golden_images()}
    assert kinds["gray_alpha_50x50.png"][0] == "LA" and kinds["palette_120x90.png"][0] == "P"
    assert kinds["progressive_200x150.jpg"][1] and kinds["gray_160x120.jpg"][0] == "L"
    print(f"{IMAGE_DIR}: {len(kinds)} images, "
          f"{sum(os.path.getsize(os.path.join(IMAGE_DIR, n)) for n in kinds)} bytes")


# ---- the micro models ----

def write_micro(name, spec, preprocessor):
    out = os.path.join(DATA, name)
    os.makedirs(out, exist_ok=True)
    w = ref.random_weights(spec)
    ref.write_model(out, spec, preprocessor, w)
    cfg = ref.config_json(spec)
    tensors, listing, worst32, gap = ref.goldens(w, cfg, preprocessor, IMAGE_DIR,
                                                 list(golden_images()))
    ref.write_safetensors(os.path.join(out, "golden.safetensors"), tensors)
    with open(os.path.join(out, "golden.json"), "w") as f:
        json.dump({"model": name, "reference": REFERENCE, "images": listing}, f, indent=1)
    print(f"{name}: {len(listing)} images, float32 PyTorch vs float64 max |dlogit| {worst32:.3g}, "
          f"smallest top-1 margin {gap:.3g}")
    assert gap > 1e-2, "a near tie: float32 could pick another class; change the seed"


# ---- the cross-check against ../shared ----

def check(shared):
    image_dir = os.path.join(shared, "models", "golden-images")
    for name in MODELS:
        model_dir = os.path.join(shared, "models", name)
        cfg, w = ref.load_model(model_dir)
        with open(os.path.join(model_dir, "preprocessor_config.json")) as f:
            pp = json.load(f)
        golden, _ = ref.read_safetensors(os.path.join(model_dir, "golden.safetensors"))
        d_pix = d_pix32 = d_logit = d_state = rel_logit = 0.0
        images = [k[: -len("/pixels")] for k in sorted(golden) if k.endswith("/pixels")]
        for image in images:
            pixels = golden[image + "/pixels"]
            mine = ref.preprocess(os.path.join(image_dir, image), pp, cfg["image_size"])
            d_pix = max(d_pix, (mine - pixels).abs().max().item())
            mine = ref.preprocess(os.path.join(image_dir, image), pp, cfg["image_size"],
                                  float32_rescale=True)
            d_pix32 = max(d_pix32, (mine - pixels).abs().max().item())
            out = ref.forward(w, cfg, pixels[None].double())
            want = golden[image + "/logits"].double()
            d = (out["logits"][0] - want).abs()
            d_logit = max(d_logit, d.max().item())
            rel_logit = max(rel_logit, (d / want.abs().clamp(min=1)).max().item())
            for stage, h in out["states"].items():
                if image + "/" + stage in golden:
                    d_state = max(d_state, (h[0] - golden[image + "/" + stage].double()).abs()
                                  .max().item())
        print(f"{name}: {len(images)} images; preprocessing vs its golden pixels max |d| "
              f"{d_pix:.3g} (with a float32 rescale: {d_pix32:.3g}); float64 forward on its golden pixels vs its golden logits max |d| "
              f"{d_logit:.3g} (relative {rel_logit:.3g}), hidden states max |d| {d_state:.3g}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--check":
        check(sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "..", "shared"))
    else:
        write_images()
        for model_name, (model_spec, model_pp) in MODELS.items():
            write_micro(model_name, model_spec, model_pp)
