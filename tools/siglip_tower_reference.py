#!/usr/bin/python3
"""Writes two one-tower SigLIP folders and their float64 features (run by hand; the project never
runs it).

From tests/data/siglip-micro (tools/clip_reference.py), its image tower alone, as transformers'
SiglipVisionModel.save_pretrained writes it: config.json of model_type siglip_vision_model with
the vision_config fields at the top, architectures ["SiglipVisionModel"], the vision_model.*
tensors only (no logit_scale or logit_bias: those are SiglipModel's):

  siglip-vision-micro         with its attention-pooling head (vision_use_head true, the default)
  siglip-vision-nohead-micro  vision_use_head false, no vision_model.head.* tensors (the tower
                              as PaliGemma- and SmolVLM-style projects save it)

modeling_siglip.py's SiglipVisionTransformer: last_hidden_state = post_layernorm(encoder(...));
pooler_output = head(last_hidden_state) if use_head else None. golden.safetensors, for the three
golden images (their pixels from siglip-micro's goldens): `pixels` [3, 3, 32, 32], `mean` the mean
of last_hidden_state over the patches [3, 32], `patches` last_hidden_state [3, 16, 32], and, with
the head, `pooler` pooler_output [3, 32].

usage: /usr/bin/python3 tools/siglip_tower_reference.py
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_reference import read_safetensors, siglip_pool, siglip_vision_hidden, write_folder  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
SOURCE = os.path.join(DATA, "siglip-micro")


def main():
    cfg = json.load(open(os.path.join(SOURCE, "config.json")))["vision_config"]
    w = {k: v.double() for k, v in read_safetensors(os.path.join(SOURCE, "model.safetensors"))[0].items()
         if k.startswith("vision_model.")}
    gold, meta = read_safetensors(os.path.join(SOURCE, "golden.safetensors"))
    images = json.load(open(os.path.join(SOURCE, "golden.json")))["images"]
    pixels = torch.stack([gold[f"image/{i}/pixels"] for i in images]).double()
    h = siglip_vision_hidden(w, cfg, pixels)
    for name, use_head in (("siglip-vision-micro", True), ("siglip-vision-nohead-micro", False)):
        out = os.path.join(DATA, name)
        config = {"architectures": ["SiglipVisionModel"], **cfg, "torch_dtype": "float32",
                  "transformers_version": "4.46.0"}
        if not use_head:
            config["vision_use_head"] = False
        tensors = {k: t.float() for k, t in w.items()
                   if use_head or not k.startswith("vision_model.head.")}
        g = {"pixels": pixels.float(), "mean": h.mean(1).float(), "patches": h.float()}
        if use_head:
            g["pooler"] = siglip_pool(w, cfg, h).float()
            assert (g["pooler"] - torch.stack([gold[f"image/{i}/embeds"] for i in images])).abs().max() < 1e-6
        write_folder(out, config, tensors, g, {"images": json.dumps(images)}, SOURCE,
                     ["preprocessor_config.json"])
        print(out, {k: list(t.shape) for k, t in g.items()}, len(tensors), "tensors")


if __name__ == "__main__":
    main()
