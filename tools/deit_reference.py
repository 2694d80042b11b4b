#!/usr/bin/python3
"""Writes the DeiT test models and their float64 goldens (run by hand; the project never runs it).

Two small random-weight DeiTs in Hugging Face layout, one of each class transformers has for
image classification, with goldens computed by a float64 forward written here from
transformers' modeling_deit.py (no transformers import):

  tests/data/deit-micro/          DeiTForImageClassification: 32x32, patch 8, hidden 32, 2 layers,
                                  4 heads, no qkv bias; DeiTImageProcessor fields as dicts
                                  (resize 36x36 bicubic, center crop 32, ImageNet mean/std)
  tests/data/deit-micro-teacher/  DeiTForImageClassificationWithTeacher: 32x32, patch 8, hidden
                                  48, 2 layers, 4 heads, layer_norm_eps 1e-6; the hub's
                                  DeiTFeatureExtractor form (int size 36 and crop_size 32)

Each gets config.json, preprocessor_config.json, model.safetensors (F32, "deit." prefix as
save_pretrained writes it), golden.safetensors and golden.json (the format of docs/SPEC.md §9: per image
`<image>/pixels` [3, 32, 32] and `<image>/logits`; for the first image also `<image>/embeddings`,
`<image>/layer.L` and `<image>/layernorm`, hidden states [N + 2, D]; the teacher also has
`<image>/cls_logits` and `<image>/distillation_logits`). The teacher also gets golden-size48
.safetensors: pixels and logits at 48x48, as `model(pixels, interpolate_pos_encoding=True)` computes it
from pixels preprocessed with size 54x54 and crop_size 48 (vit's --size 48 keeps the crop's share
of the resize: 36 * 48 / 32 = 54).

The images are four of tests/data/golden-images (tools/vit_reference.py writes them; run that
first). Pixels are computed as transformers' slow image processor does: Pillow's resize on uint8,
center crop, x * (1/255) in float64 cast to float32, then (x - mean) / std in float32. The forward
runs in float64 on those float32 pixels and the float32 weights; logits are stored as float32. The
float32 PyTorch forward of the same model is printed beside it, for the size of the rounding. The
preprocessing, the forward and the files are tools/hf_reference.py's.

usage: /usr/bin/python3 tools/deit_reference.py
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_reference as ref  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMAGE_DIR = os.path.join(ROOT, "tests", "data", "golden-images")
IMAGES = ["rgb_64x48.png", "tall_40x400.jpg", "palette_120x90.png", "gray_alpha_50x50.png"]
SIZE_IMAGES = ["rgb_64x48.png", "palette_120x90.png"]

MODELS = {
    "deit-micro": dict(
        kind="deit", arch="DeiTForImageClassification", seed=11, image=32, patch=8, hidden=32,
        layers=2, heads=4, mlp=64, eps=1e-12, qkv_bias=False,
        labels=["cat", "dog", "bird", "fish", "frog"],
        preprocessor={"do_resize": True, "size": {"height": 36, "width": 36}, "resample": 3,
                      "do_center_crop": True, "crop_size": {"height": 32, "width": 32},
                      "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
                      "image_mean": ref.IMAGENET_MEAN, "image_std": ref.IMAGENET_STD,
                      "image_processor_type": "DeiTImageProcessor"}),
    "deit-micro-teacher": dict(
        kind="deit", arch="DeiTForImageClassificationWithTeacher", seed=12, image=32, patch=8,
        hidden=48, layers=2, heads=4, mlp=96, eps=1e-6, qkv_bias=True,
        labels=["tench", "goldfish", "shark", "ray"],
        preprocessor={"crop_size": 32, "do_center_crop": True, "do_normalize": True,
                      "do_resize": True, "feature_extractor_type": "DeiTFeatureExtractor",
                      "image_mean": ref.IMAGENET_MEAN, "image_std": ref.IMAGENET_STD,
                      "resample": 3, "size": 36}),
}


def write_model(name, spec):
    out = os.path.join(ROOT, "tests", "data", name)
    os.makedirs(out, exist_ok=True)
    w = ref.random_weights(spec)
    ref.write_model(out, spec, spec["preprocessor"], w)
    cfg = ref.config_json(spec)
    tensors, listing, worst32, gap = ref.goldens(w, cfg, spec["preprocessor"], IMAGE_DIR, IMAGES)
    ref.write_safetensors(os.path.join(out, "golden.safetensors"), tensors)
    with open(os.path.join(out, "golden.json"), "w") as f:
        json.dump({"model": name, "images": listing}, f, indent=1)
    print(f"{name}: {len(IMAGES)} images, float32 PyTorch vs float64 max |dlogit| {worst32:.3g}, "
          f"smallest top-1 margin {gap:.3g}")
    if spec["arch"] == "DeiTForImageClassificationWithTeacher":
        tensors, listing, worst32, gap = ref.goldens(w, cfg, spec["preprocessor"], IMAGE_DIR,
                                                     SIZE_IMAGES, resize=(54, 54), crop=(48, 48),
                                                     stages=False)
        ref.write_safetensors(os.path.join(out, "golden-size48.safetensors"), tensors)
        print(f"{name} at 48x48: {len(SIZE_IMAGES)} images, float32 PyTorch vs float64 "
              f"max |dlogit| {worst32:.3g}, smallest top-1 margin {gap:.3g}")


if __name__ == "__main__":
    for name, spec in MODELS.items():
        write_model(name, spec)
