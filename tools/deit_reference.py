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
save_pretrained writes it), golden.safetensors and golden.json (the format of SPEC §9: per image
`<image>/pixels` [3, 32, 32] and `<image>/logits`; for the first image also `<image>/embeddings`,
`<image>/layer.L` and `<image>/layernorm`, hidden states [N + 2, D]; the teacher also has
`<image>/cls_logits` and `<image>/distillation_logits`). The teacher also gets golden-size48
.safetensors: pixels and logits at 48x48, as `model(pixels, interpolate_pos_encoding=True)` computes it
from pixels preprocessed with size 54x54 and crop_size 48 (vit's --size 48 keeps the crop's share
of the resize: 36 * 48 / 32 = 54).

Pixels are computed as transformers' slow image processor does: Pillow's resize on uint8, center
crop, x * (1/255) in float64 cast to float32, then (x - mean) / std in float32. The forward runs
in float64 on those float32 pixels and the float32 weights; logits are stored as float32. The
float32 PyTorch forward of the same model is printed beside it, for the size of the rounding.

usage: /usr/bin/python3 tools/deit_reference.py [SHARED]   (SHARED: ../shared by default)
"""
import json
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared")
IMAGES = ["rgb_64x48.png", "tall_40x400.jpg", "palette_120x90.png", "gray_alpha_50x50.png"]
SIZE_IMAGES = ["rgb_64x48.png", "palette_120x90.png"]
IMAGENET_MEAN, IMAGENET_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]

MODELS = {
    "deit-micro": dict(
        arch="DeiTForImageClassification", seed=11, hidden=32, layers=2, heads=4, mlp=64,
        eps=1e-12, qkv_bias=False, labels=["cat", "dog", "bird", "fish", "frog"],
        preprocessor={"do_resize": True, "size": {"height": 36, "width": 36}, "resample": 3,
                      "do_center_crop": True, "crop_size": {"height": 32, "width": 32},
                      "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
                      "image_mean": IMAGENET_MEAN, "image_std": IMAGENET_STD,
                      "image_processor_type": "DeiTImageProcessor"}),
    "deit-micro-teacher": dict(
        arch="DeiTForImageClassificationWithTeacher", seed=12, hidden=48, layers=2, heads=4,
        mlp=96, eps=1e-6, qkv_bias=True, labels=["tench", "goldfish", "shark", "ray"],
        preprocessor={"crop_size": 32, "do_center_crop": True, "do_normalize": True,
                      "do_resize": True, "feature_extractor_type": "DeiTFeatureExtractor",
                      "image_mean": IMAGENET_MEAN, "image_std": IMAGENET_STD, "resample": 3,
                      "size": 36}),
}
IMAGE, PATCH = 32, 8


def config_json(spec):
    labels = spec["labels"]
    return {"architectures": [spec["arch"]], "model_type": "deit", "image_size": IMAGE,
            "patch_size": PATCH, "num_channels": 3, "hidden_size": spec["hidden"],
            "num_hidden_layers": spec["layers"], "num_attention_heads": spec["heads"],
            "intermediate_size": spec["mlp"], "hidden_act": "gelu",
            "layer_norm_eps": spec["eps"], "qkv_bias": spec["qkv_bias"],
            "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
            "initializer_range": 0.02, "encoder_stride": 16,
            "id2label": {str(i): l for i, l in enumerate(labels)},
            "label2id": {l: i for i, l in enumerate(labels)}, "torch_dtype": "float32"}


def random_weights(spec):
    """HF names (save_pretrained's) -> float64 tensors holding float32-representable values."""
    g = torch.Generator().manual_seed(spec["seed"])
    D, I, K, n = spec["hidden"], spec["mlp"], len(spec["labels"]), (IMAGE // PATCH) ** 2

    def rnd(*shape, std=0.08, mean=0.0):
        t = torch.randn(*shape, generator=g, dtype=torch.float64) * std + mean
        return t.float().double()  # stored as float32: compute with exactly those values

    w = {"deit.embeddings.cls_token": rnd(1, 1, D, std=0.5),
         "deit.embeddings.distillation_token": rnd(1, 1, D, std=0.5),
         "deit.embeddings.position_embeddings": rnd(1, n + 2, D, std=0.3),
         "deit.embeddings.patch_embeddings.projection.weight": rnd(D, 3, PATCH, PATCH),
         "deit.embeddings.patch_embeddings.projection.bias": rnd(D)}
    for l in range(spec["layers"]):
        p = f"deit.encoder.layer.{l}."
        for s in ("query", "key", "value"):
            w[p + f"attention.attention.{s}.weight"] = rnd(D, D, std=0.16)
            if spec["qkv_bias"]:
                w[p + f"attention.attention.{s}.bias"] = rnd(D)
        w[p + "attention.output.dense.weight"], w[p + "attention.output.dense.bias"] = rnd(D, D), rnd(D)
        w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"] = rnd(I, D), rnd(I)
        w[p + "output.dense.weight"], w[p + "output.dense.bias"] = rnd(D, I), rnd(D)
        for ln in ("layernorm_before", "layernorm_after"):
            w[p + ln + ".weight"], w[p + ln + ".bias"] = rnd(D, mean=1.0), rnd(D)
    w["deit.layernorm.weight"], w["deit.layernorm.bias"] = rnd(D, mean=1.0), rnd(D)
    heads = ["classifier"] if spec["arch"] == "DeiTForImageClassification" else \
        ["cls_classifier", "distillation_classifier"]
    for h in heads:
        w[h + ".weight"], w[h + ".bias"] = rnd(K, D, std=0.32), rnd(K)
    return w


# ---- the forward, after modeling_deit.py (eval mode: dropout is the identity) ----

def pos_encoding(w, size):
    """DeiTEmbeddings.interpolate_pos_encoding: the two special rows kept, the patch grid resized
    with bicubic interpolation (align_corners=False) to size/P when size is not the native one."""
    pos = w["deit.embeddings.position_embeddings"]
    n, m = IMAGE // PATCH, size // PATCH
    if m == n:
        return pos
    D = pos.shape[-1]
    grid = pos[:, 2:].reshape(1, n, n, D).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=(m, m), mode="bicubic", align_corners=False)
    return torch.cat([pos[:, :2], grid.permute(0, 2, 3, 1).reshape(1, m * m, D)], dim=1)


def forward(w, spec, pixels, size=IMAGE):
    """pixels [B, 3, size, size] -> (logits, cls_logits, dist_logits, hidden states by stage)."""
    D, H, eps = spec["hidden"], spec["heads"], spec["eps"]
    dt = pixels.dtype
    W = {k: v.to(dt) for k, v in w.items()}
    ln = lambda x, p: F.layer_norm(x, (D,), W[p + ".weight"], W[p + ".bias"], eps)
    lin = lambda x, p: F.linear(x, W[p + ".weight"], W.get(p + ".bias"))
    x = F.conv2d(pixels, W["deit.embeddings.patch_embeddings.projection.weight"],
                 W["deit.embeddings.patch_embeddings.projection.bias"], stride=PATCH)
    x = x.flatten(2).transpose(1, 2)
    B = x.shape[0]
    h = torch.cat([W["deit.embeddings.cls_token"].expand(B, -1, -1),
                   W["deit.embeddings.distillation_token"].expand(B, -1, -1), x], dim=1)
    h = h + pos_encoding(W, size)
    states = {"embeddings": h}
    T, dh = h.shape[1], D // H
    for l in range(spec["layers"]):
        p = f"deit.encoder.layer.{l}."
        a = ln(h, p + "layernorm_before")
        q, k, v = (lin(a, p + f"attention.attention.{s}").view(B, T, H, dh).transpose(1, 2)
                   for s in ("query", "key", "value"))
        probs = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * dh ** -0.5, dim=-1)
        ctx = torch.matmul(probs, v).transpose(1, 2).reshape(B, T, D)
        h = lin(ctx, p + "attention.output.dense") + h
        u = F.gelu(lin(ln(h, p + "layernorm_after"), p + "intermediate.dense"))
        h = lin(u, p + "output.dense") + h
        states[f"layer.{l}"] = h
    h = ln(h, "deit.layernorm")
    states["layernorm"] = h
    if spec["arch"] == "DeiTForImageClassification":
        return lin(h[:, 0], "classifier"), None, None, states  # the distillation token unused
    cls, dist = lin(h[:, 0], "cls_classifier"), lin(h[:, 1], "distillation_classifier")
    return (cls + dist) / 2, cls, dist, states


# ---- preprocessing as transformers' slow processors, Pillow 9.4 ----

def preprocess(path, spec, resize, crop):
    pp = spec["preprocessor"]
    im = Image.open(path).convert("RGB")
    a = np.asarray(im.resize((resize, resize), pp["resample"], reducing_gap=None))
    top = left = (resize - crop) // 2
    a = a[top:top + crop, left:left + crop]
    x = (a.astype(np.float64) * (1 / 255)).astype(np.float32)
    x = (x - np.array(pp["image_mean"], np.float32)) / np.array(pp["image_std"], np.float32)
    return torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1)))


# ---- files ----

def write_safetensors(path, tensors):
    """name -> float32 numpy array; 8-byte aligned header, metadata {"format": "pt"}."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        b = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def f32(t):
    return t.detach().to(torch.float32).numpy()


def goldens(w, spec, images, resize, crop, stages=True):
    """golden tensors and golden.json entries (hidden states of the first image when stages), and
    the largest |float32 - float64| logit difference."""
    tensors, listing, worst32 = {}, [], 0.0
    for i, name in enumerate(images):
        pixels = preprocess(os.path.join(SHARED, "models", "golden-images", name), spec, resize,
                            crop)
        logits, cls, dist, states = forward(w, spec, pixels[None].double(), crop)
        logits32 = forward(w, spec, pixels[None], crop)[0]
        worst32 = max(worst32, (logits32.double() - logits).abs().max().item())
        tensors[f"{name}/pixels"] = pixels.numpy()
        tensors[f"{name}/logits"] = f32(logits[0])
        if cls is not None:
            tensors[f"{name}/cls_logits"] = f32(cls[0])
            tensors[f"{name}/distillation_logits"] = f32(dist[0])
        if i == 0 and stages:
            for stage, h in states.items():
                tensors[f"{name}/{stage}"] = f32(h[0])
        probs = torch.softmax(logits[0], -1)
        top = torch.argsort(probs, descending=True)[:5].tolist()
        listing.append({"image": name, "top5": top,
                        "top5_labels": [spec["labels"][j] for j in top],
                        "top5_probs": [probs[j].item() for j in top]})
    return tensors, listing, worst32


def write_model(name, spec):
    out = os.path.join(ROOT, "tests", "data", name)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config_json(spec), f, indent=2)
    with open(os.path.join(out, "preprocessor_config.json"), "w") as f:
        json.dump(spec["preprocessor"], f, indent=2)
    w = random_weights(spec)
    write_safetensors(os.path.join(out, "model.safetensors"), {k: f32(v) for k, v in w.items()})
    tensors, listing, worst32 = goldens(w, spec, IMAGES, 36, IMAGE)
    write_safetensors(os.path.join(out, "golden.safetensors"), tensors)
    with open(os.path.join(out, "golden.json"), "w") as f:
        json.dump({"model": name, "images": listing}, f, indent=1)
    print(f"{name}: {len(IMAGES)} images, float32 PyTorch vs float64 max |dlogit| {worst32:.3g}")
    if spec["arch"] == "DeiTForImageClassificationWithTeacher":
        tensors, listing, worst32 = goldens(w, spec, SIZE_IMAGES, 54, 48, stages=False)
        write_safetensors(os.path.join(out, "golden-size48.safetensors"), tensors)
        print(f"{name} at 48x48: {len(SIZE_IMAGES)} images, float32 PyTorch vs float64 "
              f"max |dlogit| {worst32:.3g}")


if __name__ == "__main__":
    for name, spec in MODELS.items():
        write_model(name, spec)
