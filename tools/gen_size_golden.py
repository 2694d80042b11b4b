#!/usr/bin/python3
"""Writes tests/data/micro-a-size48.json: float64 PyTorch logits of tests/data/micro-a run at 48x48
instead of its 32x32 (position grid 4x4 -> 6x6 through F.interpolate bicubic, as Hugging Face's
interpolate_pos_encoding), for three of tests/data/golden-images. Preprocessing: Pillow bilinear
resize to 48x48, x/255, (x-0.5)/0.5. The preprocessing and the forward are tools/hf_reference.py's;
tools/vit_reference.py writes the model and the images (run it first). Only needed to regenerate
the test data; the project never runs it.

usage: /usr/bin/python3 tools/gen_size_golden.py
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_reference as ref  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
SIZE, IMAGES = 48, ["rgb_64x48.png", "tall_40x400.jpg", "palette_120x90.png"]


def size_logits(model_dir, image_dir):
    cfg, w = ref.load_model(model_dir)
    with open(os.path.join(model_dir, "preprocessor_config.json")) as f:
        pp = json.load(f)
    out = {}
    for name in IMAGES:
        pixels = ref.preprocess(os.path.join(image_dir, name), pp, cfg["image_size"],
                                resize=(SIZE, SIZE))
        out[name] = ref.forward(w, cfg, pixels[None].double())["logits"][0].tolist()
    return out


if __name__ == "__main__":
    logits = size_logits(os.path.join(DATA, "micro-a"), os.path.join(DATA, "golden-images"))
    with open(os.path.join(DATA, "micro-a-size48.json"), "w") as f:
        json.dump({"model": "micro-a", "size": SIZE, "logits": logits}, f, indent=1)
        f.write("\n")
    print(f"tests/data/micro-a-size48.json: {len(logits)} images at {SIZE}x{SIZE}")
