#!/usr/bin/python3
"""Writes tests/data/siglip-remainder-micro (run by hand; the project never runs it): a SiglipModel
whose image side is not a multiple of its patch, as google/siglip-so400m-patch14-384 (384 = 27 x 14
+ 6): image_size 30, patch 8, so the patch convolution (stride 8, no padding) reads the top-left
24 x 24 pixels as a 3 x 3 grid and leaves out the last 6 rows and columns; its position table has
the 9 rows transformers' SiglipVisionEmbeddings makes ((image_size // patch_size) ** 2).

Layout, random weights and the float64 image forward are tools/clip_reference.py's (F.conv2d with
stride P drops the remainder as nn.Conv2d does). Only the image tower is checked: the folder has
the text tower's weights (a SiglipModel checkpoint holds both) but no tokenizer, which Debian's
python3 cannot build here (python3-sentencepiece without python3-protobuf); clip_reference's
CLIP tokenizer needs the `regex` module, absent too; neither is used for the images, so stand-ins
are imported for them when they are missing.

golden.safetensors: image/<name>/pixels [3, 30, 30] and image/<name>/embeds [32] (the attention
pool's output before normalisation), float64 rounded to float32; golden.json: the images and the
float32 PyTorch forward's largest difference from the float64 one.

usage: /usr/bin/python3 tools/remainder_reference.py
"""
import json
import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import regex  # noqa: F401
except ImportError:  # only clip_reference's CLIP tokenizer uses it
    sys.modules["regex"] = types.SimpleNamespace(compile=lambda *a, **k: None, IGNORECASE=0)
try:
    import spm_reference  # noqa: F401
except ImportError:  # its SigLIP tokenizer needs protobuf; no text is tokenized here
    sys.modules["spm_reference"] = types.SimpleNamespace(Siglip=None)
import torch  # noqa: E402

import clip_reference as clip  # noqa: E402

NAME = "siglip-remainder-micro"
SPEC = dict(kind="siglip", seed=24, act="gelu_pytorch_tanh",
            vision=dict(hidden=32, layers=2, heads=4, mlp=64, image=30, patch=8),
            text=dict(hidden=32, layers=2, heads=4, mlp=64, positions=16),
            eps=1e-6, resize=30)
VOCAB, EOS = 64, 1


def main():
    out = os.path.join(clip.ROOT, "tests", "data", NAME)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(clip.config_json(SPEC, VOCAB, EOS), f, indent=2)
    pp = clip.preprocessor_config(SPEC)
    with open(os.path.join(out, "preprocessor_config.json"), "w") as f:
        json.dump(pp, f, indent=2)
    w = clip.random_weights(SPEC, VOCAB)
    assert w["vision_model.embeddings.position_embedding.weight"].shape[0] == 9
    clip.write_safetensors(os.path.join(out, "model.safetensors"),
                           {k: clip.f32(x) for k, x in w.items()})
    w32 = {k: x.to(torch.float32) for k, x in w.items()}
    tensors, worst32 = {}, 0.0
    for image in clip.IMAGES:
        pixels = clip.preprocess(os.path.join(clip.IMAGE_DIR, image), pp, 30)
        assert pixels.shape == (3, 30, 30)
        tensors[f"image/{image}/pixels"] = pixels.numpy()
        e64 = clip.image_embeds(w, SPEC, pixels[None].double())[0]
        e32 = clip.image_embeds(w32, SPEC, pixels[None])[0]
        tensors[f"image/{image}/embeds"] = clip.f32(e64)
        worst32 = max(worst32, (e32.double() - e64).abs().max().item())
    clip.write_safetensors(os.path.join(out, "golden.safetensors"), tensors)
    with open(os.path.join(out, "golden.json"), "w") as f:
        json.dump({"model": NAME, "images": clip.IMAGES, "float32_vs_float64_max_abs": worst32},
                  f, indent=1)
    print(f"{NAME}: {len(clip.IMAGES)} images, float32 PyTorch vs float64 max |d| {worst32:.3g}")


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
