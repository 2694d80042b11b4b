#!/usr/bin/python3
"""Writes tests/data/keep-aspect/: line images of many shapes, and for each case folder (a
preprocessor_config.json naming NougatImageProcessor) the 8-bit image each line becomes (PNG:
after crop_margin, align_long_axis, resize, thumbnail and pad) and golden.safetensors with the
float pixels of the whole transform for a few lines. Pillow 9.4 + numpy, no transformers (run by
hand; tests/test_keep_aspect.c compares vit against these files). `--check BIN [N]`: N (60)
random lines, heights 16..96 and widths 10..3000, through `BIN preprocess` at 32 x 1024 against
the same steps here (nothing written to the repository).

Followed step by step from huggingface/transformers
src/transformers/models/nougat/image_processing_nougat.py (NougatImageProcessor.preprocess) and
image_transforms.py (resize via PIL with reducing_gap, pad with zeros, rescale in float64 cast to
float32, normalize in float32):
  crop_margin     grey = Image.convert("L"); if max == min the image is left whole; else
                  (grey - min) / (max - min) * 255 in float64, the box of the pixels < 200
  align_long_axis np.rot90(image, 3) when the image's long axis is not the size's
  resize          the short side to min(height, width), the long int(s * long / short),
                  `resample`, reducing_gap None
  thumbnail       (min(h, H), min(w, W)); unchanged when that is the image's size; else the
                  long side's ratio kept by int(); Pillow BICUBIC with reducing_gap 2.0
  pad_image       (H - h) // 2 above, the rest below; (W - w) // 2 left; value 0
"""
import json
import os
import sys

import numpy as np
from PIL import Image, ImageDraw

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_reference as hf  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data",
                   "keep-aspect")
IN_MEAN, IN_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]

# folder -> (preprocessor_config.json, channels the model takes)
CASES = {
    # what `vit train --input-height 32 --input-width 512 --keep-aspect` writes for a ViT
    "lines-32x512": ({"do_crop_margin": True, "do_resize": True,
                      "size": {"height": 32, "width": 512}, "resample": 2, "do_thumbnail": True,
                      "do_align_long_axis": False, "do_pad": True, "do_rescale": True,
                      "rescale_factor": 1 / 255, "do_normalize": True,
                      "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
                      "image_processor_type": "NougatImageProcessor"}, 3),
    # only the class and a size: the class's defaults (bilinear, ImageNet's mean and std, ...)
    "nougat-defaults": ({"image_processor_type": "NougatImageProcessor",
                         "size": {"height": 48, "width": 96}}, 3),
    # a tall size: wide lines turned; no margin crop; bicubic
    "align-bicubic": ({"image_processor_type": "NougatImageProcessor",
                       "size": {"height": 64, "width": 24}, "do_align_long_axis": True,
                       "do_crop_margin": False, "resample": 3}, 3),
    # a grey model (num_channels 1): the images read as L
    "grey-32x256": ({"image_processor_type": "NougatImageProcessor",
                     "size": {"height": 32, "width": 256}, "image_mean": [0.5],
                     "image_std": [0.5]}, 1),
}
GOLDEN_FLOAT = {"lines-32x512": ["line_303x45.png", "line_3000x16.png"],
                "grey-32x256": ["line_303x45.png"]}


def line_image(w, h, seed, mode="RGB", margin=True, white=False):
    """A light page with dark strokes (a text line), or all white."""
    rng = np.random.default_rng(seed)
    bg = 255 if white else int(rng.integers(215, 256))
    im = Image.new("RGB", (w, h), (bg, bg, bg))
    if not white:
        d = ImageDraw.Draw(im)
        mx, my = (int(rng.integers(0, max(1, w // 8))), int(rng.integers(0, max(1, h // 4)))) \
            if margin else (0, 0)
        x = mx
        while x < w - mx - 1:
            cw = int(rng.integers(1, max(2, h // 2)))
            top = my + int(rng.integers(0, max(1, h // 5)))
            bottom = h - 1 - my - int(rng.integers(0, max(1, h // 5)))
            ink = int(rng.integers(0, 90))
            d.rectangle([x, top, min(w - 1, x + cw), max(top, bottom)],
                        fill=(ink, ink + int(rng.integers(0, 40)), ink))
            x += cw + int(rng.integers(1, max(2, h // 3)))
        noise = rng.integers(-12, 13, size=(h, w, 1))  # grey noise: smaller files
        im = Image.fromarray(np.clip(np.asarray(im).astype(int) + noise, 0, 255).astype(np.uint8))
    if mode == "RGBA":
        a = np.dstack([np.asarray(im), rng.integers(0, 256, size=(h, w), dtype=np.uint8)])
        return Image.fromarray(a, "RGBA")
    return im.convert(mode)


IMAGES = {
    "one_1x1.png": lambda: Image.new("RGB", (1, 1), (40, 50, 60)),
    "line_300x16.png": lambda: line_image(300, 16, 1),
    "line_303x45.png": lambda: line_image(303, 45, 2),
    "tight_249x35.png": lambda: line_image(249, 35, 3, margin=False),
    "line_2000x96.png": lambda: line_image(2000, 96, 4),
    "line_3000x16.png": lambda: line_image(3000, 16, 5),  # thumbnail reduces by 2 .. 11
    "line_5000x20.png": lambda: line_image(5000, 20, 6),
    "short_10x16.png": lambda: line_image(10, 16, 7),
    "tall_40x400.png": lambda: line_image(40, 400, 8),
    "tall_96x2000.png": lambda: line_image(96, 2000, 9),  # a 1-pixel-wide thumbnail
    "square_64x64.png": lambda: line_image(64, 64, 10),
    "white_200x40.png": lambda: line_image(200, 40, 11, white=True),
    "rgba_180x30.png": lambda: line_image(180, 30, 12, mode="RGBA"),
    "grey_220x28.png": lambda: line_image(220, 28, 13, mode="L"),
}


def nougat_bytes(im, pp):
    """The 8-bit image NougatImageProcessor.preprocess makes of PIL image im, as HWC uint8."""
    H, W = pp["size"]["height"], pp["size"]["width"]
    if pp.get("do_crop_margin", True):
        data = np.array(im.convert("L")).astype(np.uint8)
        mx, mn = data.max(), data.min()
        if mx != mn:
            data = (data - mn) / (mx - mn) * 255
            ys, xs = np.nonzero(data < 200)
            x0, y0 = xs.min(), ys.min()
            im = im.crop((x0, y0, xs.max() + 1, ys.max() + 1))
    if pp.get("do_align_long_axis", False):
        ih, iw = im.height, im.width
        if (W < H and iw > ih) or (W > H and iw < ih):
            im = Image.fromarray(np.ascontiguousarray(np.rot90(np.array(im), 3)))
    if pp.get("do_resize", True):
        s = min(H, W)
        w, h = im.size
        short, long = (w, h) if w <= h else (h, w)
        new_short, new_long = s, int(s * long / short)
        ow, oh = (new_short, new_long) if w <= h else (new_long, new_short)
        im = im.resize((ow, oh), pp.get("resample", 2), reducing_gap=None)
    if pp.get("do_thumbnail", True):
        ih, iw = im.height, im.width
        h, w = min(ih, H), min(iw, W)
        if not (h == ih and w == iw):
            if ih > iw:
                w = int(iw * h / ih)
            elif iw > ih:
                h = int(ih * w / iw)
            im = im.resize((w, h), Image.BICUBIC, reducing_gap=2.0)
    a = np.array(im)
    if a.ndim == 2:
        a = a[:, :, None]
    dh, dw = H - a.shape[0], W - a.shape[1]
    assert dh >= 0 and dw >= 0, "np.pad would refuse a negative padding"
    return np.pad(a, ((dh // 2, dh - dh // 2), (dw // 2, dw - dw // 2), (0, 0)))


def to_float(a, pp, mean, std):
    """HF's rescale (float64 product cast to float32) and normalize (float32), CHW."""
    x = (a.astype(np.float64) * pp.get("rescale_factor", 1 / 255)).astype(np.float32)
    x = (x - np.array(mean, np.float32)) / np.array(std, np.float32)
    return np.ascontiguousarray(x.transpose(2, 0, 1))


def read_pixels(path):
    """The 'pixels' tensor of a safetensors file vit preprocess wrote."""
    b = open(path, "rb").read()
    n = int.from_bytes(b[:8], "little")
    t = json.loads(b[8:8 + n])["pixels"]
    start, end = t["data_offsets"]
    return np.frombuffer(b[8 + n + start:8 + n + end], np.float32).reshape(t["shape"])


def check(vit_bin, count):
    import subprocess
    import tempfile
    rng = np.random.default_rng(7)
    pp = dict(CASES["lines-32x512"][0], size={"height": 32, "width": 1024})
    worst, compared, refused = 0.0, 0, 0
    with tempfile.TemporaryDirectory() as d:
        hf.write_json(os.path.join(d, "preprocessor_config.json"), pp)
        hf.write_json(os.path.join(d, "config.json"),
                      {"model_type": "vit", "image_size": 32, "num_channels": 3})
        for k in range(count):
            h, w = int(rng.integers(16, 97)), int(rng.integers(10, 3001))
            path, out = os.path.join(d, f"line{k}.png"), os.path.join(d, "out.safetensors")
            line_image(w, h, 1000 + k, margin=bool(k % 2)).save(path)
            try:
                a = nougat_bytes(Image.open(path).convert("RGB"), pp)
            except (ValueError, ZeroDivisionError):
                a = None
            r = subprocess.run([vit_bin, "preprocess", "-m", d, path, "-o", out],
                               capture_output=True, text=True)
            if a is None:
                assert r.returncode != 0, f"{w}x{h}: transformers fails, vit did not"
                refused += 1
                continue
            assert r.returncode == 0, r.stderr
            want = to_float(a, pp, pp["image_mean"], pp["image_std"])
            worst = max(worst, float(np.abs(read_pixels(out) - want).max()))
            compared += 1
    print(f"{compared} random lines (heights 16..96, widths 10..3000) at 32 x 1024: worst |diff| "
          f"{worst}; {refused} refused where transformers fails")
    return 0 if worst <= 1e-6 else 1


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 60))
    img_dir = os.path.join(OUT, "images")
    os.makedirs(img_dir, exist_ok=True)
    for name, make in IMAGES.items():
        make().save(os.path.join(img_dir, name))
    for case, (pp, channels) in CASES.items():
        d = os.path.join(OUT, case)
        os.makedirs(d, exist_ok=True)
        hf.write_json(os.path.join(d, "preprocessor_config.json"), pp)
        mode = "RGB" if channels == 3 else "L"
        mean, std = pp.get("image_mean", IN_MEAN), pp.get("image_std", IN_STD)
        golden, failing = {}, []
        for name in IMAGES:
            im = Image.open(os.path.join(img_dir, name)).convert(mode)
            try:
                a = nougat_bytes(im, pp)
            except (ValueError, ZeroDivisionError):  # a 0-pixel thumbnail: transformers fails
                failing.append(name)
                continue
            Image.fromarray(a[:, :, 0] if channels == 1 else a).save(os.path.join(d, name))
            if name in GOLDEN_FLOAT.get(case, []):
                golden[name + "/pixels"] = to_float(a, pp, mean, std)
        if golden:
            hf.write_safetensors(os.path.join(d, "golden.safetensors"), golden)
        hf.write_json(os.path.join(d, "failing.json"), failing)
        print(case, len(IMAGES), "images", len(golden), "float goldens, failing:", failing)


if __name__ == "__main__":
    main()
