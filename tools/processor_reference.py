#!/usr/bin/python3
"""Writes tests/data/processors/: one folder per image processor class vit reads, each with a
preprocessor_config.json in the form the Hub has it (or only the fields that pick the class's
defaults) and golden.safetensors, `<image>/pixels` as that class computes them (run by hand; the
project never runs it). Pillow 9.4 and numpy through tools/hf_reference.py, no transformers.

Read from huggingface/transformers (src/transformers/models/*/image_processing_*.py, 06053b84):
the defaults each class's __init__ gives the fields a file leaves out, and what an integer `size`
means, by its get_size_dict call:

  class                     size default        int size     resample  crop      mean/std
  ViTImageProcessor         224 x 224           square       bilinear  -         0.5
  DeiTImageProcessor        256 x 256           square       bicubic   224       0.5
  BeitImageProcessor        256 x 256           square       bicubic   224       0.5
  CLIPImageProcessor        shortest edge 224   short side   bicubic   224       OpenAI CLIP
  BitImageProcessor         shortest edge 224   short side   bicubic   224       OpenAI CLIP
  SiglipImageProcessor      224 x 224           (refused)    bicubic   -         0.5

crop_size is get_size_dict(default_to_square=True) everywhere: an int is a square. An older
file's feature_extractor_type (ViTFeatureExtractor, ...) loads as the same class.
SigLIP: get_size_dict(size, default_to_square=False) makes an int {"shortest_edge": N}, and its
preprocess reads size["height"]: a KeyError, so vit refuses it (tests/test_image.c).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_reference as hf  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "processors")
IMAGES_DIR = os.path.join(OUT, "..", "golden-images")
IMAGES = ["rgb_64x48.png", "tall_40x400.jpg", "rgb_17x23.png"]

HALF = [0.5, 0.5, 0.5]
CLIP_MEAN, CLIP_STD = [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]
IN_MEAN, IN_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]

# class -> (size default, int size is the short side, resample, crop default or None, mean, std)
CLASSES = {
    "ViT": ({"height": 224, "width": 224}, False, 2, None, HALF, HALF),
    "DeiT": ({"height": 256, "width": 256}, False, 3, 224, HALF, HALF),
    "Beit": ({"height": 256, "width": 256}, False, 3, 224, HALF, HALF),
    "CLIP": ({"shortest_edge": 224}, True, 3, 224, CLIP_MEAN, CLIP_STD),
    "Bit": ({"shortest_edge": 224}, True, 3, 224, CLIP_MEAN, CLIP_STD),
    "Siglip": ({"height": 224, "width": 224}, None, 3, None, HALF, HALF),
}

# folder -> the file (Hub forms at small sizes: the classes' own defaults would make 224 x 224)
CASES = {
    # openai/clip-vit-base-patch32's file
    "clip-hub": {"crop_size": 16, "do_center_crop": True, "do_normalize": True, "do_resize": True,
                 "feature_extractor_type": "CLIPFeatureExtractor", "image_mean": CLIP_MEAN,
                 "image_std": CLIP_STD, "resample": 3, "size": 20},
    "clip-defaults": {"image_processor_type": "CLIPImageProcessor", "size": 20, "crop_size": 16},
    # facebook/dinov2-small's file
    "bit-hub": {"crop_size": {"height": 16, "width": 16}, "do_center_crop": True,
                "do_convert_rgb": True, "do_normalize": True, "do_rescale": True,
                "do_resize": True, "image_mean": IN_MEAN, "image_processor_type":
                "BitImageProcessor", "image_std": IN_STD, "resample": 3,
                "rescale_factor": 0.00392156862745098, "size": {"shortest_edge": 20}},
    "bit-defaults": {"image_processor_type": "BitImageProcessor", "size": 20, "crop_size": 16},
    # google/vit-base-patch16-224's file
    "vit-hub": {"do_normalize": True, "do_resize": True, "feature_extractor_type":
                "ViTFeatureExtractor", "image_mean": HALF, "image_std": HALF, "resample": 2,
                "size": 20},
    "vit-defaults": {"image_processor_type": "ViTImageProcessor", "size": 20},
    # facebook/deit-base-distilled-patch16-224's file
    "deit-hub": {"crop_size": 16, "do_center_crop": True, "do_normalize": True, "do_resize": True,
                 "feature_extractor_type": "DeiTFeatureExtractor", "image_mean": IN_MEAN,
                 "image_std": IN_STD, "resample": 3, "size": 20},
    "deit-defaults": {"image_processor_type": "DeiTImageProcessor", "size": 20, "crop_size": 16},
    # microsoft/beit-base-patch16-224's file
    "beit-hub": {"crop_size": 16, "do_center_crop": False, "do_normalize": True, "do_resize": True,
                 "feature_extractor_type": "BeitFeatureExtractor", "image_mean": HALF,
                 "image_std": HALF, "reduce_labels": False, "resample": 2, "size": 20},
    "beit-defaults": {"image_processor_type": "BeitImageProcessor", "size": 20, "crop_size": 16},
    # google/siglip-base-patch16-224's file
    "siglip-hub": {"do_normalize": True, "do_rescale": True, "do_resize": True,
                   "image_mean": HALF, "image_processor_type": "SiglipImageProcessor",
                   "image_std": HALF, "processor_class": "SiglipProcessor", "resample": 3,
                   "rescale_factor": 0.00392156862745098, "size": {"height": 20, "width": 20}},
    "siglip-defaults": {"image_processor_type": "SiglipImageProcessor",
                        "size": {"height": 20, "width": 16}},
}


def class_of(pp):
    name = pp.get("image_processor_type") or pp.get("feature_extractor_type")
    for suffix in ("ImageProcessor", "FeatureExtractor"):
        if name.endswith(suffix):
            return CLASSES[name[:-len(suffix)]]
    raise KeyError(name)


def resolve(pp):
    """The file's fields with the class's defaults filled in, sizes as dicts (get_size_dict)."""
    size0, int_short, resample, crop0, mean, std = class_of(pp)
    size = pp.get("size", size0)
    if isinstance(size, int):
        assert int_short is not None, "this class refuses an int size"
        size = {"shortest_edge": size} if int_short else {"height": size, "width": size}
    crop = pp.get("crop_size", crop0)
    if isinstance(crop, int):
        crop = {"height": crop, "width": crop}
    return dict(size=size, crop=crop, resample=pp.get("resample", resample),
                do_center_crop=pp.get("do_center_crop", crop0 is not None),
                image_mean=pp.get("image_mean", mean), image_std=pp.get("image_std", std),
                rescale_factor=pp.get("rescale_factor", 1 / 255))


def pixels(path, pp):
    r = resolve(pp)
    from PIL import Image
    w, h = Image.open(path).size
    size = r["size"]
    if "shortest_edge" in size:  # get_resize_output_image_size(default_to_square=False)
        s, short, long = size["shortest_edge"], min(w, h), max(w, h)
        other = int(s * long / short)
        resize = (s, other) if w <= h else (other, s)
    else:
        resize = (size["width"], size["height"])
    crop = (r["crop"]["height"], r["crop"]["width"]) if r["do_center_crop"] else None
    full = {"resample": r["resample"], "rescale_factor": r["rescale_factor"],
            "image_mean": r["image_mean"], "image_std": r["image_std"]}
    out = hf.preprocess(path, full, resize=resize, crop=crop)
    if not crop:  # hf.preprocess crops only when asked
        assert out.shape[1:] == (resize[1], resize[0])
    return out


def main():
    for case, pp in CASES.items():
        d = os.path.join(OUT, case)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "preprocessor_config.json"), "w") as f:
            json.dump(pp, f, indent=2)
            f.write("\n")
        tensors = {f"{im}/pixels": pixels(os.path.join(IMAGES_DIR, im), pp) for im in IMAGES}
        hf.write_safetensors(os.path.join(d, "golden.safetensors"), tensors)
        print(case, {k: tuple(v.shape) for k, v in tensors.items()})


if __name__ == "__main__":
    main()
