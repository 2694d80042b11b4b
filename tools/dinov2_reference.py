#!/usr/bin/python3
"""Writes the DINOv2 micro models and their float64 goldens (run by hand; the project never runs
it), and is the DINOv2 float64 forward other tools import.

Random-weight models in exact Hugging Face layout under tests/data/, each with goldens from a
float64 forward written here from transformers' code (no transformers import):

  dinov2-micro         Dinov2ForImageClassification ("dinov2." prefix): image_size 56, patch 14
                       (4 x 4 position grid), hidden 32, 2 heads of 16, 2 layers, MLP (mlp_ratio
                       4: fc1 128, exact gelu), 5 labels; its BitImageProcessor crops 42 (shortest
                       edge 48), so the processor's pixels run through the interpolated 3 x 3 grid,
                       as facebook/dinov2-* (image_size 518, crop 224) always do
  dinov2-micro-swiglu  Dinov2Model saved bare (no prefix, no head): image_size 28 (2 x 2),
                       hidden 32, 2 heads, 2 layers, use_swiglu_ffn (weights_in [176, 32],
                       weights_out [32, 88]: int(int(32 * 4) * 2 / 3) = 85 rounded up to a
                       multiple of 8), crop 28 (shortest edge 32)
  dinov2-reg-micro     Dinov2WithRegistersForImageClassification ("dinov2_with_registers."): 4
                       register tokens, image_size 56 (4 x 4), crop 42, hidden 48, 3 heads of 16,
                       2 layers, MLP (192), 4 labels

Every model has layer scale (lambda1 of layer_scale1 and layer_scale2) drawn around 0.6, not the
config's layerscale_value 1.0 (trained checkpoints hold trained values; the config's is only the
initialiser), qkv biases, the unused embeddings.mask_token [1, D] that checkpoints carry, and
layer_norm_eps 1e-6.

Read from huggingface/transformers with the code index: dinov2/modeling_dinov2.py (015e6876,
the 4.5x form with eager_attention_forward), dinov2_with_registers/modeling_dinov2_with_registers.py
(015e6876, generated from modular_dinov2_with_registers.py), configuration_dinov2.py and
configuration_dinov2_with_registers.py, bit/image_processing_bit.py (0195d72e). The forward:

  embeddings  patch conv (stride P) -> [N, D]; CLS first; + position_embeddings (interpolated when
              the grid differs, below); registers inserted after CLS *after* the positions are
              added (they have none): [CLS, R registers, N patches]
  layer       h += lambda1_1 * Attn(norm1(h)); h += lambda1_2 * FFN(norm2(h)); attention is ViT's
              (query/key/value with bias, softmax(q k^T * d^-0.5), attention.output.dense)
  FFN         MLP: fc2(gelu(fc1 x)), fc1 [int(D * mlp_ratio), D]; SwiGLU: weights_in [2h, D] with
              h = (int(int(D * mlp_ratio) * 2 / 3) + 7) // 8 * 8; its output splits in two halves
              (chunk(2, -1)): silu(first) * second -> weights_out [D, h]
  final       layernorm on every token: last_hidden_state; pooler_output = token 0 (CLS)
  classifier  on concat(CLS, mean of the patch tokens) [2D] -> [K]; with registers the mean runs
              over tokens 1 + R .. end only (registers and CLS excluded)

Position interpolation (Dinov2Embeddings.interpolate_pos_encoding). Nothing is done when the patch
count equals the table's and the input is square. Otherwise the [n, n, D] patch rows (n =
image_size / P) go to [H/P, W/P] by F.interpolate on a float32 copy (cast back after), CLS row
kept. The versions differ:
  - followed for dinov2 (transformers >= 4.45, PR #33226, commit c6d2848a): size=(H // P, W // P),
    mode="bicubic", align_corners=False, no antialias: source x = (i + 0.5) * n / m - 0.5, Keys
    A = -0.75, edge taps clamped (interp_reference.py "bicubic")
  - transformers 4.31 (DINOv2's first release) to 4.44: scale_factor = ((H // P + 0.1) / n,
    (W // P + 0.1) / n) (the +0.1 of facebookresearch/dino issue 8), same mode, no antialias;
    PyTorch then maps x = (i + 0.5) * n / (m + 0.1) - 0.5, so the values differ from the size
    form (golden.json gives the logit difference); early 4.3x releases also interpolated in the
    model's dtype instead of a float32 copy
  - followed for dinov2_with_registers (the model came in PR #35348 with the scale-factor form
    and was changed to this one by PR #35411, Dec 2024 - Jan 2025, around its first release,
    4.48; it matches facebookresearch/dinov2's registers models, built with
    interpolate_antialias=True and interpolate_offset 0): size=(H // P, W // P), bicubic,
    align_corners=False, antialias=True:
    a = -0.5, support 2 max(n/m, 1), taps outside the grid dropped and the weights renormalised
    (interp_reference.py "bicubic_aa")
  - transformers' mid-2026 modular rewrite of DINOv2 (PR #46266, modular_dinov2.py 08729242)
    keeps the >= 4.45 numbers; it also rebuilds SwiGLU as LlamaMLP (gate_proj, up_proj,
    down_proj: weights_in's first and second halves, weights_out). The Hub's files and every 4.x
    save_pretrained hold weights_in / weights_out, the names used here
The float64 reference interpolates in float64 (interp_reference.py, checked against
F.interpolate); transformers' float32 copy changes the logits by about 1e-8 (golden.json).
Attention softmax is float64 here (transformers' eager path runs it in float32).

BitImageProcessor (the slow one, Pillow 9.4): shortest edge to size["shortest_edge"] with bicubic
(resample 3), the long side int(S * long / short); center crop; x * (1/255) in float64 to float32;
(x - mean) / std with ImageNet's mean and std (DINOv2's preprocessor_config.json); no
do_convert_rgb difference (the references' Image.convert("RGB")). At another size N the
processor is scaled as vit's --size does (docs/SPEC.md §7): shortest edge int(S * N / crop).

Files per folder: config.json (keys sorted as save_pretrained writes them, transformers_version
4.57.1), preprocessor_config.json, model.safetensors (F32, names as save_pretrained writes them),
and goldens from the float64 forward on the float32 pixels:
  golden.safetensors        at the preprocessor's own size (what processor + model give)
  golden-size<N>.safetensors at N = the other size of the spec, pixels preprocessed at N
with, per image (`<image>` its file name in tests/data/golden-images):
  <image>/pixels [3, S, S], <image>/last_hidden_state [T, D] (after the final layernorm),
  <image>/pooler_output [D], <image>/logits [K] (classifiers), <image>/cls_attention [H, T] (the
  last layer's softmax row of the CLS query, per head: vit explain --method last), and for the
  first image the stages <image>/embeddings and <image>/layer.L [T, D] (before the final norm);
  once per file: position_embeddings [1 + m*m, D] as added at that size (interpolated or not).
T = 1 + R + N. golden.json: per size the images (top-5 for classifiers), the float32 PyTorch
forward's largest differences from the float64 one, the interpolation followed and the logit /
state differences the other versions would give, and every name and shape of model.safetensors.

Also golden-28x112.safetensors and .json in dinov2-micro (write_rect): the model behind a
processor that resizes to 28x112 without a crop, a 2 x 8 grid against its 4 x 4 table; as many
patches, but transformers resizes the table whenever the input is not square.

usage: /usr/bin/python3 tools/dinov2_reference.py [--rect]   (--rect: the 28x112 goldens alone)
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_reference as ref  # noqa: E402
import interp_reference as interp  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMAGE_DIR = os.path.join(ROOT, "tests", "data", "golden-images")  # tools/vit_reference.py's
IMAGES = ["rgb_64x48.png", "tall_40x400.jpg", "palette_120x90.png"]
TRANSFORMERS_VERSION = "4.57.1"


def bit_processor(crop, shortest):
    """preprocessor_config.json as facebook/dinov2-* carry it, at a micro size."""
    return {"crop_size": {"height": crop, "width": crop}, "do_center_crop": True,
            "do_convert_rgb": True, "do_normalize": True, "do_rescale": True, "do_resize": True,
            "image_mean": ref.IMAGENET_MEAN, "image_processor_type": "BitImageProcessor",
            "image_std": ref.IMAGENET_STD, "resample": 3, "rescale_factor": 1 / 255,
            "size": {"shortest_edge": shortest}}


MODELS = {
    "dinov2-micro": dict(
        kind="dinov2", arch="Dinov2ForImageClassification", seed=31, image=56, hidden=32,
        layers=2, heads=2, mlp_ratio=4, swiglu=False, registers=0,
        labels=["cat", "dog", "bird", "fish", "frog"], preprocessor=bit_processor(42, 48),
        other=56),
    "dinov2-micro-swiglu": dict(
        kind="dinov2", arch="Dinov2Model", seed=32, image=28, hidden=32, layers=2, heads=2,
        mlp_ratio=4, swiglu=True, registers=0, labels=None, preprocessor=bit_processor(28, 32),
        other=42),
    "dinov2-reg-micro": dict(
        kind="dinov2_with_registers", arch="Dinov2WithRegistersForImageClassification", seed=33,
        image=56, hidden=48, layers=2, heads=3, mlp_ratio=4, swiglu=False, registers=4,
        labels=["tench", "goldfish", "shark", "ray"], preprocessor=bit_processor(42, 48),
        other=70),
}
PATCH, EPS = 14, 1e-6


# ---- shared with beit_reference.py ----

def preprocessor_at(pp, size):
    """The processor config giving size x size pixels, as vit's --size changes it (image/
    preprocess.c preprocess_config_set_size): a resize-and-crop keeps the crop's share."""
    pp = json.loads(json.dumps(pp))
    crop = pp.get("crop_size")
    crop_h = crop if isinstance(crop, int) else (crop or {}).get("height")
    if pp.get("do_center_crop") and pp.get("do_resize", True):
        s = pp["size"]
        if isinstance(s, dict) and "shortest_edge" in s:
            s["shortest_edge"] = int(s["shortest_edge"] * size / crop_h)
        elif isinstance(s, dict):
            s["height"] = int(s["height"] * size / crop_h)
            s["width"] = int(s["width"] * size / crop_h)
        else:
            pp["size"] = int(s * size / crop_h)
        pp["crop_size"] = {"height": size, "width": size}
    elif pp.get("do_center_crop"):
        pp["crop_size"] = {"height": size, "width": size}
    else:
        pp["do_resize"], pp["size"] = True, {"height": size, "width": size}
    return pp


def processor_size(pp):
    """The side of the square the processor gives (its crop, else its fixed resize)."""
    if pp.get("do_center_crop"):
        c = pp["crop_size"]
        return c if isinstance(c, int) else c["height"]
    s = pp["size"]
    return s if isinstance(s, int) else s["height"]


class Draw:
    """Normal draws from one seeded generator, rounded to float32 and held as float64 (the file
    stores exactly what the reference computes with)."""

    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(seed)

    def __call__(self, *shape, std=1.0, mean=0.0):
        t = torch.randn(*shape, generator=self.g, dtype=torch.float64) * std + mean
        return t.float().double()

    def linear(self, w, name, n_out, n_in, gain=1.0, bias=True):
        w[name + ".weight"] = self(n_out, n_in, std=gain * n_in ** -0.5)
        if bias:
            w[name + ".bias"] = self(n_out, std=0.1)

    def layer_norm(self, w, name, n):
        w[name + ".weight"] = self(n, std=0.1, mean=1.0)
        w[name + ".bias"] = self(n, std=0.1)


def write_config(path, cfg):
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def labels_fields(labels):
    return {"id2label": {str(i): l for i, l in enumerate(labels)},
            "label2id": {l: i for i, l in enumerate(labels)}}


def tensor_listing(w, extra=None):
    """name -> shape of every tensor model.safetensors holds (F32; extra: the I64 ones)."""
    out = {k: list(v.shape) for k, v in w.items()}
    out.update({k: list(v.shape) for k, v in (extra or {}).items()})
    return dict(sorted(out.items()))


def f32(t):
    return t.detach().to(torch.float32)


def top5(logits, labels):
    probs = torch.softmax(logits, -1)
    top = torch.argsort(probs, descending=True)[:5].tolist()
    return {"top5": top, "top5_labels": [labels[j] for j in top],
            "top5_probs": [probs[j].item() for j in top]}


def max_diff(a, b):
    return (a.double() - b.double()).abs().max().item()


# ---- the model ----

def ffn_hidden(D, mlp_ratio, swiglu):
    h = int(D * mlp_ratio)
    return (int(h * 2 / 3) + 7) // 8 * 8 if swiglu else h


def prefix_of(spec):
    return "" if spec["arch"] == "Dinov2Model" else spec["kind"] + "."


def config_json(spec):
    L = spec["layers"]
    cfg = {"architectures": [spec["arch"]], "model_type": spec["kind"], "apply_layernorm": True,
           "attention_probs_dropout_prob": 0.0, "drop_path_rate": 0.0, "hidden_act": "gelu",
           "hidden_dropout_prob": 0.0, "hidden_size": spec["hidden"], "image_size": spec["image"],
           "initializer_range": 0.02, "layer_norm_eps": EPS, "layerscale_value": 1.0,
           "mlp_ratio": spec["mlp_ratio"], "num_attention_heads": spec["heads"],
           "num_channels": 3, "num_hidden_layers": L, "out_features": [f"stage{L}"],
           "out_indices": [L], "patch_size": PATCH, "qkv_bias": True,
           "reshape_hidden_states": True,
           "stage_names": ["stem"] + [f"stage{i}" for i in range(1, L + 1)],
           "torch_dtype": "float32", "transformers_version": TRANSFORMERS_VERSION,
           "use_swiglu_ffn": spec["swiglu"]}
    if spec["kind"] == "dinov2":
        cfg["use_mask_token"] = True
    else:
        cfg["num_register_tokens"] = spec["registers"]
    if spec["labels"]:
        cfg.update(labels_fields(spec["labels"]))
    return cfg


def random_weights(spec):
    rnd, w, pre = Draw(spec["seed"]), {}, prefix_of(spec)
    D, n, R = spec["hidden"], spec["image"] // PATCH, spec["registers"]
    e = pre + "embeddings."
    w[e + "cls_token"] = rnd(1, 1, D, std=0.5)
    w[e + "mask_token"] = rnd(1, D, std=0.02)
    if R:
        w[e + "register_tokens"] = rnd(1, R, D, std=0.5)
    w[e + "position_embeddings"] = rnd(1, n * n + 1, D, std=0.4)
    w[e + "patch_embeddings.projection.weight"] = rnd(D, 3, PATCH, PATCH,
                                                      std=2.0 * (3 * PATCH * PATCH) ** -0.5)
    w[e + "patch_embeddings.projection.bias"] = rnd(D, std=0.1)
    hid = ffn_hidden(D, spec["mlp_ratio"], spec["swiglu"])
    for l in range(spec["layers"]):
        p = f"{pre}encoder.layer.{l}."
        rnd.layer_norm(w, p + "norm1", D)
        for s in ("query", "key", "value"):
            rnd.linear(w, p + "attention.attention." + s, D, D, gain=1.6 if s != "value" else 1.0)
        rnd.linear(w, p + "attention.output.dense", D, D)
        w[p + "layer_scale1.lambda1"] = rnd(D, std=0.25, mean=0.6)
        rnd.layer_norm(w, p + "norm2", D)
        if spec["swiglu"]:
            rnd.linear(w, p + "mlp.weights_in", 2 * hid, D, gain=1.5)
            rnd.linear(w, p + "mlp.weights_out", D, hid)
        else:
            rnd.linear(w, p + "mlp.fc1", hid, D, gain=1.5)
            rnd.linear(w, p + "mlp.fc2", D, hid)
        w[p + "layer_scale2.lambda1"] = rnd(D, std=0.25, mean=0.6)
    rnd.layer_norm(w, pre + "layernorm", D)
    if spec["labels"]:
        rnd.linear(w, "classifier", len(spec["labels"]), 2 * D, gain=3.0)
    return w


# ---- the forward ----

INTERP = {"dinov2": "bicubic", "dinov2_with_registers": "bicubic_aa"}


def position_embeddings(table, n, m, mode, dtype=torch.float64, legacy=False, interp32=None):
    """The table [1, 1 + n*n, D] as added for an m x m patch grid (m an int, or (mh, mw) for a
    rectangle), in dtype. The resize runs in float64 through interp_reference, or (interp32, the
    default for float32) through F.interpolate on a float32 copy as transformers does. legacy: the
    4.31-4.44 scale-factor form (scale_factor (m + 0.1) / n).
    transformers returns the table unresized when num_patches == num_positions and height ==
    width (pixels); a rectangle of as many patches (28x112: 2 x 8 against 4 x 4) is resized. An
    input of other pixel sides but the table's own grid (56x59) resizes n x n to n x n, which
    bicubic at scale 1 leaves as it is, so the grid alone decides here."""
    mh, mw = (m, m) if isinstance(m, int) else m
    if mh == n and mw == n:
        return table.to(dtype)
    D = table.shape[-1]
    grid = table[0, 1:].reshape(n, n, D).permute(2, 0, 1)
    sh, sw = ((mh + 0.1) / n, (mw + 0.1) / n) if legacy else (None, None)
    if interp32 or (interp32 is None and dtype == torch.float32):
        out = interp.torch_resize(grid.float(), mh, mw, mode, (sh, sw) if legacy else None)
    else:
        scale_h, scale_w = (1 / sh, 1 / sw) if legacy else (None, None)
        out = torch.from_numpy(interp.resize(grid.double(), mh, mw, mode, scale_h, scale_w))
    out = out.to(dtype).permute(1, 2, 0).reshape(mh * mw, D)
    return torch.cat([table[0, :1].to(dtype), out])[None]


def ffn(W, p, x, swiglu):
    lin = lambda t, name: F.linear(t, W[p + name + ".weight"], W[p + name + ".bias"])
    if swiglu:
        x1, x2 = lin(x, "mlp.weights_in").chunk(2, dim=-1)
        return lin(F.silu(x1) * x2, "mlp.weights_out")
    return lin(F.gelu(lin(x, "mlp.fc1")), "mlp.fc2")


def forward(w, spec, pixels, legacy=False, interp_mode=None, interp32=None, unresized=False):
    """pixels [B, 3, S, S] (or [B, 3, H, W]) -> dict: states (embeddings, layer.L), last_hidden_state [B, T, D],
    pooler_output [B, D], logits [B, K] (classifiers), attention (the last layer's softmax
    [B, H, T, T]), position_embeddings [1, 1 + m*m, D]. Computes in pixels' dtype."""
    dt = pixels.dtype
    W = {k: v.to(dt) for k, v in w.items()}
    pre, D, H, R = prefix_of(spec), spec["hidden"], spec["heads"], spec["registers"]
    e = pre + "embeddings."
    ln = lambda x, p: F.layer_norm(x, (D,), W[p + ".weight"], W[p + ".bias"], EPS)
    x = F.conv2d(pixels, W[e + "patch_embeddings.projection.weight"],
                 W[e + "patch_embeddings.projection.bias"], stride=PATCH).flatten(2).transpose(1, 2)
    B, m = x.shape[0], (pixels.shape[-2] // PATCH, pixels.shape[-1] // PATCH)
    h = torch.cat([W[e + "cls_token"].expand(B, -1, -1), x], dim=1)
    if unresized:  # what a forward that adds the n x n table as it is would give (same count)
        pos = w[e + "position_embeddings"].to(dt)
    else:
        pos = position_embeddings(w[e + "position_embeddings"], spec["image"] // PATCH, m,
                                  interp_mode or INTERP[spec["kind"]], dt, legacy, interp32)
    h = h + pos
    if R:
        h = torch.cat([h[:, :1], W[e + "register_tokens"].expand(B, -1, -1), h[:, 1:]], dim=1)
    states, T, dh = {"embeddings": h}, h.shape[1], D // H
    for l in range(spec["layers"]):
        p = f"{pre}encoder.layer.{l}."
        a = ln(h, p + "norm1")
        q, k, v = (F.linear(a, W[f"{p}attention.attention.{s}.weight"],
                            W[f"{p}attention.attention.{s}.bias"]).view(B, T, H, dh).transpose(1, 2)
                   for s in ("query", "key", "value"))
        probs = torch.softmax(q @ k.transpose(-1, -2) * dh ** -0.5, dim=-1)
        ctx = (probs @ v).transpose(1, 2).reshape(B, T, D)
        att = F.linear(ctx, W[p + "attention.output.dense.weight"],
                       W[p + "attention.output.dense.bias"])
        h = h + W[p + "layer_scale1.lambda1"] * att
        h = h + W[p + "layer_scale2.lambda1"] * ffn(W, p, ln(h, p + "norm2"), spec["swiglu"])
        states[f"layer.{l}"] = h
    h = ln(h, pre + "layernorm")
    out = {"states": states, "last_hidden_state": h, "pooler_output": h[:, 0],
           "attention": probs, "position_embeddings": pos[0]}
    if "classifier.weight" in W:
        pooled = torch.cat([h[:, 0], h[:, 1 + R:].mean(dim=1)], dim=1)
        out["logits"] = F.linear(pooled, W["classifier.weight"], W["classifier.bias"])
    return out


def check_against_vit():
    """The forward with every lambda 1, the MLP and no registers is ViT's: renamed weights through
    tools/hf_reference.py's forward give the same last hidden state, at the table's size and
    interpolated up and down (hf_reference interpolates with F.interpolate, size form)."""
    spec = dict(MODELS["dinov2-micro"], labels=None, arch="Dinov2ForImageClassification")
    w = random_weights(spec)
    rename = {"norm1": "layernorm_before", "norm2": "layernorm_after",
              "mlp.fc1": "intermediate.dense", "mlp.fc2": "output.dense"}
    vit = {}
    for k, v in w.items():
        if "lambda1" in k:
            w[k] = torch.ones_like(v)
            continue
        if "mask_token" in k:
            continue
        name = "vit." + k[len("dinov2."):]
        for a, b in rename.items():
            name = name.replace(f".{a}.", f".{b}.")
        vit[name] = v
    cfg = {"hidden_size": spec["hidden"], "num_attention_heads": spec["heads"],
           "layer_norm_eps": EPS, "patch_size": PATCH, "num_hidden_layers": spec["layers"],
           "image_size": spec["image"], "hidden_act": "gelu"}
    g = torch.Generator().manual_seed(1)
    worst = 0.0
    for size in (28, 42, 56, 70):
        pixels = torch.randn(2, 3, size, size, generator=g, dtype=torch.float64)
        want = ref.forward(vit, cfg, pixels)["states"]["layernorm"]
        worst = max(worst, max_diff(forward(w, spec, pixels)["last_hidden_state"], want))
    assert worst < 1e-12, worst
    return worst


# ---- goldens ----

def run_size(w, spec, pp, size, variants):
    """Goldens of every image at one size: (tensors, golden.json entry). variants: name ->
    forward kwargs of the other interpolation versions to measure against."""
    tensors, images, w32 = {}, [], {k: v.float() for k, v in w.items()}
    worst = {"last_hidden_state": 0.0, "pooler_output": 0.0, "logits": 0.0}
    vdiff = {name: {"last_hidden_state": 0.0, "logits": 0.0} for name in variants}
    for i, name in enumerate(IMAGES):
        pixels = ref.preprocess(os.path.join(IMAGE_DIR, name), pp)
        assert pixels.shape[-1] == size, (pixels.shape, size)
        out = forward(w, spec, pixels[None].double())
        out32 = forward(w32, spec, pixels[None])
        tensors[f"{name}/pixels"] = pixels
        for key in worst:
            if key in out:
                tensors[f"{name}/{key}"] = f32(out[key][0])
                worst[key] = max(worst[key], max_diff(out32[key][0], out[key][0]))
        tensors[f"{name}/cls_attention"] = f32(out["attention"][0, :, 0, :])
        if i == 0:
            for stage, h in out["states"].items():
                tensors[f"{name}/{stage}"] = f32(h[0])
        entry = {"image": name}
        if "logits" in out:
            entry.update(top5(out["logits"][0], spec["labels"]))
        images.append(entry)
        for vname, kw in variants.items():
            o = forward(w, spec, pixels[None].double(), **kw)
            for key in list(vdiff[vname]):
                if key in out:
                    vdiff[vname][key] = max(vdiff[vname][key], max_diff(o[key], out[key]))
                else:
                    del vdiff[vname][key]
    tensors["position_embeddings"] = f32(out["position_embeddings"])
    worst = {k: v for k, v in worst.items() if k in out}
    return tensors, {"size": size, "images": images, "float32_vs_float64_max_abs": worst,
                     "other_interpolations_max_abs": vdiff}


def variants_for(spec, size):
    """The other interpolation versions, when this size interpolates at all: transformers' float32
    copy of the table, and the other release's form."""
    if size == spec["image"]:
        return {}
    out = {"hf_float32_interpolation": dict(interp32=True)}
    if spec["kind"] == "dinov2":
        out["transformers_4.31-4.44_scale_factor_plus_0.1"] = dict(legacy=True)
    else:
        out["without_antialias_as_dinov2"] = dict(interp_mode="bicubic")
    return out


def write_model(name, spec):
    out_dir = os.path.join(ROOT, "tests", "data", name)
    os.makedirs(out_dir, exist_ok=True)
    w = random_weights(spec)
    write_config(os.path.join(out_dir, "config.json"), config_json(spec))
    write_config(os.path.join(out_dir, "preprocessor_config.json"), spec["preprocessor"])
    ref.write_safetensors(os.path.join(out_dir, "model.safetensors"), w)
    native = processor_size(spec["preprocessor"])
    runs = []
    for size, file in ((native, "golden.safetensors"),
                       (spec["other"], f"golden-size{spec['other']}.safetensors")):
        pp = spec["preprocessor"] if size == native else preprocessor_at(spec["preprocessor"], size)
        tensors, entry = run_size(w, spec, pp, size, variants_for(spec, size))
        ref.write_safetensors(os.path.join(out_dir, file), tensors)
        entry.update(file=file, preprocessor=pp if size != native else "preprocessor_config.json",
                     interpolation=interpolation_note(spec, size))
        runs.append(entry)
        print(f"{name} at {size}: float32 vs float64 {entry['float32_vs_float64_max_abs']}, "
              f"other versions {entry['other_interpolations_max_abs']}")
    D, R = spec["hidden"], spec["registers"]
    golden = {"model": name, "class": spec["arch"], "image_size": spec["image"], "patch": PATCH,
              "tokens": "CLS, %d registers, patches row by row" % R if R else "CLS, patches",
              "ffn_hidden": ffn_hidden(D, spec["mlp_ratio"], spec["swiglu"]), "runs": runs,
              "model_tensors": tensor_listing(w)}
    with open(os.path.join(out_dir, "golden.json"), "w") as f:
        json.dump(golden, f, indent=1)


def interpolation_note(spec, size):
    n, m = spec["image"] // PATCH, size // PATCH
    if n == m:
        return f"none ({n} x {n} grid)"
    how = "antialias=True" if spec["kind"] == "dinov2_with_registers" else "antialias=False"
    return (f"{n} x {n} -> {m} x {m}: F.interpolate(size=({m}, {m}), bicubic, "
            f"align_corners=False, {how})")


# ---- a rectangle of as many patches as the table: dinov2-micro behind a 28x112 processor ----

RECT = dict(model="dinov2-micro", height=28, width=112, file="golden-28x112")


def rect_processor(height, width):
    """BitImageProcessor resizing to exactly height x width, no crop (a line-shaped input)."""
    pp = bit_processor(height, height)
    pp.update(do_center_crop=False, size={"height": height, "width": width})
    del pp["crop_size"]
    return pp


def write_rect():
    """tests/data/dinov2-micro/golden-28x112.{safetensors,json}: per image pixels [3, 28, 112],
    last_hidden_state [17, D], pooler_output, logits; position_embeddings [17, D] (4 x 4 resized
    to 2 x 8, bicubic); the json: the processor and how far the table used unresized (same token
    count) and transformers' float32 interpolation land from these logits."""
    name, H, Wd = RECT["model"], RECT["height"], RECT["width"]
    spec, out_dir = MODELS[name], os.path.join(ROOT, "tests", "data", name)
    w = random_weights(spec)
    stored, _ = ref.read_safetensors(os.path.join(out_dir, "model.safetensors"))
    assert all(torch.equal(stored[k].double(), v) for k, v in w.items())  # the same weights
    pp, tensors, images = rect_processor(H, Wd), {}, []
    diffs = {"table_unresized": 0.0, "hf_float32_interpolation": 0.0, "float32_vs_float64": 0.0}
    for image in IMAGES:
        pixels = ref.preprocess(os.path.join(IMAGE_DIR, image), pp)
        assert pixels.shape == (3, H, Wd), pixels.shape
        out = forward(w, spec, pixels[None].double())
        tensors[f"{image}/pixels"] = pixels
        for key in ("last_hidden_state", "pooler_output", "logits"):
            tensors[f"{image}/{key}"] = f32(out[key][0])
        for what, kw in (("table_unresized", dict(unresized=True)),
                         ("hf_float32_interpolation", dict(interp32=True))):
            o = forward(w, spec, pixels[None].double(), **kw)
            diffs[what] = max(diffs[what], max_diff(o["logits"], out["logits"]))
        o32 = forward({k: v.float() for k, v in w.items()}, spec, pixels[None])
        diffs["float32_vs_float64"] = max(diffs["float32_vs_float64"],
                                          max_diff(o32["logits"], out["logits"]))
        images.append(dict(image=image, **top5(out["logits"][0], spec["labels"])))
    tensors["position_embeddings"] = f32(out["position_embeddings"])
    ref.write_safetensors(os.path.join(out_dir, RECT["file"] + ".safetensors"), tensors)
    with open(os.path.join(out_dir, RECT["file"] + ".json"), "w") as f:
        json.dump({"model": name, "preprocessor": pp, "input": [H, Wd],
                   "grid": [H // PATCH, Wd // PATCH], "table": [4, 4],
                   "interpolation": "4 x 4 -> 2 x 8: F.interpolate(size=(2, 8), bicubic, "
                   "align_corners=False, antialias=False) (height != width)",
                   "logits_max_abs_from_this": diffs, "images": images}, f, indent=1)
    print(f"{name} at {H}x{Wd}: logits differ by {diffs}")


if __name__ == "__main__":
    torch.set_num_threads(1)
    if sys.argv[1:] == ["--rect"]:  # the rectangle's goldens alone
        write_rect()
        sys.exit(0)
    print(f"interp_reference matches F.interpolate (worst {interp.check():.2g})")
    print(f"with lambda 1 and no registers the forward is hf_reference's ViT "
          f"(worst {check_against_vit():.2g})")
    for model_name, model_spec in MODELS.items():
        write_model(model_name, model_spec)
    write_rect()
