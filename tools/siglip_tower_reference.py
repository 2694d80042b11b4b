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
import shutil
import sys


import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_reference import read_safetensors, write_safetensors  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
SOURCE = os.path.join(DATA, "siglip-micro")


# The SigLIP image tower's float64 forward, as tools/clip_reference.py has it (copied: importing
# that tool needs its tokenizers' packages, regex and protobuf, which Debian's python3 lacks).

def ln(w, name, x, eps):
    return F.layer_norm(x, x.shape[-1:], w[name + ".weight"], w[name + ".bias"], eps)


def lin(w, name, x):
    return F.linear(x, w[name + ".weight"], w.get(name + ".bias"))


def attention(q, k, v, heads):
    B, Tq, D = q.shape
    hd = D // heads
    q = q.view(B, Tq, heads, hd).transpose(1, 2)
    k = k.view(B, -1, heads, hd).transpose(1, 2)
    v = v.view(B, -1, heads, hd).transpose(1, 2)
    scores = q @ k.transpose(-1, -2) * hd ** -0.5
    return (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(B, Tq, D)


def run_encoder(w, prefix, cfg, act, eps, h):
    assert act == "gelu_pytorch_tanh"
    for i in range(cfg["layers"]):
        p = f"{prefix}.encoder.layers.{i}."
        x = ln(w, p + "layer_norm1", h, eps)
        a = attention(lin(w, p + "self_attn.q_proj", x), lin(w, p + "self_attn.k_proj", x),
                      lin(w, p + "self_attn.v_proj", x), cfg["heads"])
        h = h + lin(w, p + "self_attn.out_proj", a)
        x = ln(w, p + "layer_norm2", h, eps)
        h = h + lin(w, p + "mlp.fc2", F.gelu(lin(w, p + "mlp.fc1", x), approximate="tanh"))
    return h


def attention_pool(w, v, act, eps, h):
    """SiglipMultiheadAttentionPoolingHead: the probe attends to every token."""
    p, D = "vision_model.head.", v["hidden"]
    wq, wk, wv = w[p + "attention.in_proj_weight"].split(D)
    bq, bk, bv = w[p + "attention.in_proj_bias"].split(D)
    probe = w[p + "probe"].expand(h.shape[0], 1, D)
    a = attention(F.linear(probe, wq, bq), F.linear(h, wk, bk), F.linear(h, wv, bv), v["heads"])
    a = lin(w, p + "attention.out_proj", a)
    x = ln(w, p + "layernorm", a, eps)
    return (a + lin(w, p + "mlp.fc2", F.gelu(lin(w, p + "mlp.fc1", x), approximate="tanh")))[:, 0]


def hidden(w, v, act, eps, pixels):
    x = F.conv2d(pixels, w["vision_model.embeddings.patch_embedding.weight"],
                 w["vision_model.embeddings.patch_embedding.bias"], stride=v["patch"])
    h = x.flatten(2).transpose(1, 2) + w["vision_model.embeddings.position_embedding.weight"]
    h = run_encoder(w, "vision_model", v, act, eps, h)
    return ln(w, "vision_model.post_layernorm", h, eps)


def main():
    cfg = json.load(open(os.path.join(SOURCE, "config.json")))["vision_config"]
    w = {k: v.double() for k, v in read_safetensors(os.path.join(SOURCE, "model.safetensors"))[0].items()
         if k.startswith("vision_model.")}
    gold, meta = read_safetensors(os.path.join(SOURCE, "golden.safetensors"))
    images = json.load(open(os.path.join(SOURCE, "golden.json")))["images"]
    pixels = torch.stack([gold[f"image/{i}/pixels"] for i in images]).double()
    v = {"hidden": cfg["hidden_size"], "heads": cfg["num_attention_heads"],
         "layers": cfg["num_hidden_layers"], "patch": cfg["patch_size"]}
    act, eps = cfg["hidden_act"], cfg["layer_norm_eps"]
    h = hidden(w, v, act, eps, pixels)
    for name, use_head in (("siglip-vision-micro", True), ("siglip-vision-nohead-micro", False)):
        out = os.path.join(DATA, name)
        os.makedirs(out, exist_ok=True)
        config = {"architectures": ["SiglipVisionModel"], **cfg, "torch_dtype": "float32",
                  "transformers_version": "4.46.0"}
        if not use_head:
            config["vision_use_head"] = False
        with open(os.path.join(out, "config.json"), "w") as f:
            json.dump(config, f, indent=2)
            f.write("\n")
        shutil.copy(os.path.join(SOURCE, "preprocessor_config.json"), out)
        tensors = {k: t.float() for k, t in w.items()
                   if use_head or not k.startswith("vision_model.head.")}
        write_safetensors(os.path.join(out, "model.safetensors"), tensors, {"format": "pt"})
        g = {"pixels": pixels.float(), "mean": h.mean(1).float(), "patches": h.float()}
        if use_head:
            g["pooler"] = attention_pool(w, v, act, eps, h).float()
            assert (g["pooler"] - torch.stack([gold[f"image/{i}/embeds"] for i in images])).abs().max() < 1e-6
        write_safetensors(os.path.join(out, "golden.safetensors"), g, {"images": json.dumps(images)})
        print(out, {k: list(t.shape) for k, t in g.items()}, len(tensors), "tensors")


if __name__ == "__main__":
    main()
