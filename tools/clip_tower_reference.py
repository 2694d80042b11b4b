#!/usr/bin/python3
"""Writes three one-tower CLIP folders and a SigLIP text tower folder, with their float64 features
(run by hand; the project never runs it).

From tests/data/clip-micro (tools/clip_reference.py), each tower alone, as transformers'
save_pretrained writes CLIPVisionModelWithProjection and CLIPTextModelWithProjection: config.json
of model_type clip_vision_model / clip_text_model with the tower's fields (vision_config,
text_config) at the top and its projection_dim, the tower's tensors under vision_model.* /
text_model.* and its projection (visual_projection.weight / text_projection.weight); no
logit_scale, which is CLIPModel's:

  clip-vision-proj-micro  CLIPVisionModelWithProjection, clip-micro's preprocessor_config.json
  clip-text-proj-micro    CLIPTextModelWithProjection, clip-micro's tokenizer files
  clip-vision-micro       CLIPVisionModel: vision_model.* alone (no visual_projection)

modeling_clip.py: CLIPVisionModelWithProjection's image_embeds =
visual_projection(post_layernorm(last_hidden_state[:, 0])) and CLIPTextModelWithProjection's
text_embeds = text_projection(final_layer_norm(...) at the end token): the unnormalised features
CLIPModel.get_image_features / get_text_features give, which clip-micro's golden.safetensors holds
(float64 forwards, tools/clip_reference.py's image_embeds and text_embeds). golden.safetensors
here: `pixels` [3, 3, 32, 32] and `image_embeds` [3, 20] (the three golden images), or
`ids/I` and `text_embeds/I` [20] for clip-micro's texts. CLIPVisionModel's output is
pooler_output = post_layernorm(last_hidden_state[:, 0]), computed here in float64 (the forward of
tools/clip_reference.py, as tools/hf_reference.py has it: importing that tool needs regex and
protobuf, which Debian's python3 lacks; checked: its projection is clip-micro's image_embeds within 1e-6): `pixels` and
`pooler` [3, 32].

The same from tests/data/siglip-micro: siglip-text-micro, SiglipTextModel (model_type
siglip_text_model, text_model.* with its head; no logit_scale or logit_bias, SiglipModel's),
siglip-micro's tokenizer files; its pooler_output = text_model.head(final_layer_norm(...)[:, -1])
is SiglipModel.get_text_features, siglip-micro's golden `text/I/embeds`.

usage: /usr/bin/python3 tools/clip_tower_reference.py
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_reference as hf  # noqa: E402
from hf_reference import read_safetensors  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
SOURCE = os.path.join(DATA, "clip-micro")
SIGLIP = os.path.join(DATA, "siglip-micro")


def write_folder(name, config, tensors, files, golden, meta, source=SOURCE):
    out = os.path.join(DATA, name)
    hf.write_folder(out, config, tensors, golden, meta, source, files)
    print(out, len(tensors), "tensors", sorted(golden))


def main():
    cfg = json.load(open(os.path.join(SOURCE, "config.json")))
    w = read_safetensors(os.path.join(SOURCE, "model.safetensors"))[0]
    gold = read_safetensors(os.path.join(SOURCE, "golden.safetensors"))[0]
    images = json.load(open(os.path.join(SOURCE, "golden.json")))["images"]
    common = {"torch_dtype": "float32", "transformers_version": "4.46.0"}

    vision = {"architectures": ["CLIPVisionModelWithProjection"], **cfg["vision_config"], **common}
    tensors = {k: t for k, t in w.items()
               if k.startswith("vision_model.") or k == "visual_projection.weight"}
    golden = {"pixels": torch.stack([gold[f"image/{i}/pixels"] for i in images]),
              "image_embeds": torch.stack([gold[f"image/{i}/embeds"] for i in images])}
    write_folder("clip-vision-proj-micro", vision, tensors, ["preprocessor_config.json"], golden,
                 {"images": json.dumps(images)})

    w64 = {k: t.double() for k, t in tensors.items()}
    pooled = hf.clip_vision_pooler(w64, cfg["vision_config"], golden["pixels"].double())
    projected = F.linear(pooled, w64["visual_projection.weight"])
    assert (projected - golden["image_embeds"].double()).abs().max() < 1e-6
    vision = {**vision, "architectures": ["CLIPVisionModel"]}
    tensors = {k: t for k, t in tensors.items() if k.startswith("vision_model.")}
    golden = {"pixels": golden["pixels"], "pooler": pooled.float()}
    write_folder("clip-vision-micro", vision, tensors, ["preprocessor_config.json"], golden,
                 {"images": json.dumps(images)})

    text = {"architectures": ["CLIPTextModelWithProjection"], **cfg["text_config"], **common}
    tensors = {k: t for k, t in w.items()
               if k.startswith("text_model.") or k == "text_projection.weight"}
    golden = {k: t for k, t in gold.items() if k.startswith("text/")}
    files = ["vocab.json", "merges.txt", "tokenizer_config.json"]
    write_folder("clip-text-proj-micro", text, tensors, files, golden, {"format": "pt"})

    cfg = json.load(open(os.path.join(SIGLIP, "config.json")))
    w = read_safetensors(os.path.join(SIGLIP, "model.safetensors"))[0]
    gold = read_safetensors(os.path.join(SIGLIP, "golden.safetensors"))[0]
    text = {"architectures": ["SiglipTextModel"], **cfg["text_config"], **common}
    tensors = {k: t for k, t in w.items() if k.startswith("text_model.")}
    golden = {k: t for k, t in gold.items() if k.startswith("text/")}
    files = ["spiece.model", "special_tokens_map.json", "tokenizer_config.json"]
    write_folder("siglip-text-micro", text, tensors, files, golden, {"format": "pt"}, SIGLIP)


if __name__ == "__main__":
    main()
