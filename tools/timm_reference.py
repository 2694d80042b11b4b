#!/usr/bin/python3
"""Writes the timm micro folders and their float64 goldens (run by hand; the project never runs
it). Random weights under timm's exact state_dict names, config.json in the layout timm's
push_to_hf_hub writes (architecture, num_classes, num_features, global_pool, label_names,
model_args, pretrained_cfg), and goldens from a float64 forward written here from timm's code
(huggingface/pytorch-image-models aa4b5850, read with the code index; no timm import):

  timm-vit-micro        vit_base_patch16_224 (augreg style) with model_args img_size 32, patch 8,
                        embed_dim 32, depth 2, 2 heads: class token, positions on it too,
                        global_pool 'token' (norm, then the class row), head of 5 classes;
                        bicubic, crop_pct 0.9, center
  timm-vit-micro-hf     the same weights as transformers' ViTForImageClassification (qkv split
                        into query, key, value; the names convert_vit_timm_to_pytorch.py gives)
  timm-gap-reg-micro    vit_base_patch16_reg4_gap_256: no class token, 4 registers, no_embed_class
                        (positions on the patches only), global_pool 'avg' with fc_norm (no norm
                        before the mean); model_args img_size 28, patch 7, embed_dim 24, 3 heads,
                        mlp_ratio 3, qkv_bias false; bilinear, crop_pct 0.95, squash, 3 classes
  timm-deit3-micro      deit3_small_patch16_224: class token without a position (no_embed_class),
                        layer scale (ls1, ls2), token pool, 4 classes; crop_pct 0.875
  timm-dinov2-reg-micro vit_base_patch14_reg4_dinov2: class token without a position, 4
                        registers, layer scale, no head (num_classes 0: the normed class row);
                        img_size from pretrained_cfg input_size 28 (fixed_input_size); crop_pct 1
  timm-dinov2-giant-micro vit_giant_patch14_dinov2: SwiGLUPacked (fc1 [int(D * 5.33334), D] = [170,
                        32], silu(first half) * second half, fc2 [32, 85]), layer scale, no head
  timm-so150m-reg-micro vit_so150m_patch16_reg4_gap_256: 4 registers *with* positions
                        (no_embed_class false: pos_embed [1, 4 + 16, D]), no class token, avg
                        without fc_norm, mlp_ratio 2.572 (fc1 82), a head of 3 classes
  timm-siglip-gap-micro vit_base_patch16_siglip_gap_224: no class token, global_pool 'avg' with
                        fc_norm false (the final norm on every row, then the mean), a head of 3
                        classes (the Hub's are 0: the head shows the mean is what it reads);
                        squash at crop_pct 1
  timm-siglip-micro     vit_base_patch16_siglip_224: no class token, global_pool 'map'
                        (AttentionPoolLatent: latent, q, kv, proj, norm, mlp), no head

The forward (vision_transformer.py VisionTransformer.forward_features / forward_head, Block,
Attention, Mlp; attention_pool.py AttentionPoolLatent):
  patch_embed   conv stride P (bias unless pre_norm) -> [B, N, D]
  _pos_embed    prefix = [cls_token] + [reg_token]; no_embed_class: x + pos_embed, then the
                prefix before it; else the prefix first, then + pos_embed (its rows cover it)
  block         x += ls1(attn(norm1(x))); x += ls2(mlp(norm2(x))); qkv [3D, D] fused: reshape
                (B, N, 3, H, hd), so rows 0..D-1 are q, D..2D-1 k, 2D.. v; softmax(q k^T hd^-0.5)
                v; proj; Mlp fc1 -> GELU (exact erf) -> fc2; LayerNorm eps 1e-6
  norm          on every row unless fc_norm (use_fc_norm = global_pool == 'avg' when None)
  pool          token: row 0; avg: mean of rows num_prefix_tokens..; map: attn_pool over rows
                num_prefix_tokens.. (latent query, kv split k then v, proj, x + mlp(norm(x)),
                the latent's row)
  fc_norm, head (num_classes > 0), else the pooled features are the output
The eval transform (timm/data/transforms_factory.py transforms_imagenet_eval, torchvision on PIL):
scale = floor(input_size / crop_pct); 'center': Resize(scale) on the short side (the long one
int(scale * long / short)), 'squash': Resize((scale_h, scale_w)); CenterCrop(input_size):
top = int(round((h - ch) / 2.0)) (half to even); ToTensor (float32 / 255); Normalize (float32).
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_reference import write_json, write_safetensors  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data")
REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
IMAGES = ["examples/photos/cat.jpg", "examples/photos/coffee.jpg", "examples/photos/rocket.jpg"] + [
    "tests/data/golden-images/" + n for n in ("rgb_300x200.png", "tall_40x400.jpg",
                                              "wide_500x37.png", "baseline_q90_240x180.jpg",
                                              "rgb_17x23.png")]
HALF, IMNET_MEAN, IMNET_STD = [0.5] * 3, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
FILTERS = {"bicubic": Image.BICUBIC, "bilinear": Image.BILINEAR}

SPECS = [
    dict(dir="timm-vit-micro", arch="vit_base_patch16_224", seed=41,
         model_args=dict(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2),
         P=8, D=32, L=2, H=2, ratio=4.0, qkv_bias=True, ls=False, cls=True, nec=False, reg=0,
         pool="token", fc_norm=False, K=5, size=32,
         pcfg=dict(interpolation="bicubic", crop_pct=0.9, crop_mode="center", mean=HALF,
                   std=HALF)),
    dict(dir="timm-gap-reg-micro", arch="vit_base_patch16_reg4_gap_256", seed=42,
         model_args=dict(img_size=28, patch_size=7, embed_dim=24, depth=2, num_heads=3,
                         mlp_ratio=3.0, qkv_bias=False),
         P=7, D=24, L=2, H=3, ratio=3.0, qkv_bias=False, ls=False, cls=False, nec=True, reg=4,
         pool="avg", fc_norm=True, K=3, size=28,
         pcfg=dict(interpolation="bilinear", crop_pct=0.95, crop_mode="squash", mean=IMNET_MEAN,
                   std=IMNET_STD)),
    dict(dir="timm-deit3-micro", arch="deit3_small_patch16_224", seed=43,
         model_args=dict(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=4),
         P=8, D=32, L=2, H=4, ratio=4.0, qkv_bias=True, ls=True, cls=True, nec=True, reg=0,
         pool="token", fc_norm=False, K=4, size=32,
         pcfg=dict(interpolation="bicubic", crop_pct=0.875, crop_mode="center", mean=IMNET_MEAN,
                   std=IMNET_STD)),
    dict(dir="timm-dinov2-reg-micro", arch="vit_base_patch14_reg4_dinov2", seed=44,
         model_args=dict(embed_dim=32, depth=2, num_heads=2),
         P=14, D=32, L=2, H=2, ratio=4.0, qkv_bias=True, ls=True, cls=True, nec=True, reg=4,
         pool="token", fc_norm=False, K=0, size=28,
         pcfg=dict(interpolation="bicubic", crop_pct=1.0, crop_mode="center", mean=IMNET_MEAN,
                   std=IMNET_STD)),
    dict(dir="timm-dinov2-giant-micro", arch="vit_giant_patch14_dinov2", seed=47,
         model_args=dict(embed_dim=32, depth=2, num_heads=2),
         P=14, D=32, L=2, H=2, ratio=2.66667 * 2, qkv_bias=True, ls=True, cls=True, nec=False,
         reg=0, pool="token", fc_norm=False, K=0, size=28, swiglu=True,
         pcfg=dict(interpolation="bicubic", crop_pct=1.0, crop_mode="center", mean=IMNET_MEAN,
                   std=IMNET_STD)),
    dict(dir="timm-so150m-reg-micro", arch="vit_so150m_patch16_reg4_gap_256", seed=48,
         model_args=dict(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=4),
         P=8, D=32, L=2, H=4, ratio=2.572, qkv_bias=True, ls=False, cls=False, nec=False, reg=4,
         pool="avg", fc_norm=False, K=3, size=32,
         pcfg=dict(interpolation="bicubic", crop_pct=0.95, crop_mode="center", mean=HALF,
                   std=HALF)),
    dict(dir="timm-siglip-gap-micro", arch="vit_base_patch16_siglip_gap_224", seed=46,
         model_args=dict(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=4),
         P=8, D=32, L=2, H=4, ratio=4.0, qkv_bias=True, ls=False, cls=False, nec=False, reg=0,
         pool="avg", fc_norm=False, K=3, size=32,
         pcfg=dict(interpolation="bicubic", crop_pct=1.0, crop_mode="squash", mean=HALF,
                   std=HALF)),
    dict(dir="timm-siglip-micro", arch="vit_base_patch16_siglip_224", seed=45,
         model_args=dict(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=4),
         P=8, D=32, L=2, H=4, ratio=4.0, qkv_bias=True, ls=False, cls=False, nec=False,
         reg=0, pool="map", fc_norm=False, K=0, size=32,
         pcfg=dict(interpolation="bicubic", crop_pct=1.0, crop_mode="center", mean=HALF,
                   std=HALF)),
]


def random_weights(s):
    """timm's names -> float64 tensors of float32-representable values, one seeded generator."""
    g = torch.Generator().manual_seed(s["seed"])
    D, P, I, K = s["D"], s["P"], int(s["D"] * s["ratio"]), s["K"]
    N = (s["size"] // P) ** 2

    def rnd(*shape, std=0.08, mean=0.0):
        return (torch.randn(*shape, generator=g, dtype=torch.float64) * std + mean).float().double()

    w = {}
    if s["cls"]:
        w["cls_token"] = rnd(1, 1, D, std=0.5)
    if s["reg"]:
        w["reg_token"] = rnd(1, s["reg"], D, std=0.5)
    rows = N if s["nec"] else N + s["cls"] + s["reg"]
    w["pos_embed"] = rnd(1, rows, D, std=0.5)
    w["patch_embed.proj.weight"] = rnd(D, 3, P, P)
    w["patch_embed.proj.bias"] = rnd(D)
    for l in range(s["L"]):
        b = "blocks.%d." % l
        w[b + "norm1.weight"], w[b + "norm1.bias"] = rnd(D, std=0.1, mean=1.0), rnd(D)
        w[b + "attn.qkv.weight"] = rnd(3 * D, D, std=0.3)
        if s["qkv_bias"]:
            w[b + "attn.qkv.bias"] = rnd(3 * D)
        w[b + "attn.proj.weight"], w[b + "attn.proj.bias"] = rnd(D, D), rnd(D)
        w[b + "norm2.weight"], w[b + "norm2.bias"] = rnd(D, std=0.1, mean=1.0), rnd(D)
        w[b + "mlp.fc1.weight"], w[b + "mlp.fc1.bias"] = rnd(I, D), rnd(I)
        w[b + "mlp.fc2.weight"], w[b + "mlp.fc2.bias"] = rnd(D, I // 2 if s.get("swiglu") else I), rnd(D)
        if s["ls"]:  # trained values, not init_values' 1e-5
            w[b + "ls1.gamma"], w[b + "ls2.gamma"] = rnd(D, std=0.2, mean=0.6), rnd(D, std=0.2,
                                                                                  mean=0.6)
    norm = "fc_norm" if s["fc_norm"] else "norm"
    w[norm + ".weight"], w[norm + ".bias"] = rnd(D, std=0.1, mean=1.0), rnd(D)
    if s["pool"] == "map":
        a = "attn_pool."
        w[a + "latent"] = rnd(1, 1, D, std=0.5)
        w[a + "q.weight"], w[a + "q.bias"] = rnd(D, D, std=0.3), rnd(D)
        w[a + "kv.weight"], w[a + "kv.bias"] = rnd(2 * D, D, std=0.3), rnd(2 * D)
        w[a + "proj.weight"], w[a + "proj.bias"] = rnd(D, D), rnd(D)
        w[a + "norm.weight"], w[a + "norm.bias"] = rnd(D, std=0.1, mean=1.0), rnd(D)
        w[a + "mlp.fc1.weight"], w[a + "mlp.fc1.bias"] = rnd(I, D), rnd(I)
        w[a + "mlp.fc2.weight"], w[a + "mlp.fc2.bias"] = rnd(D, I), rnd(D)
    if K:
        w["head.weight"], w["head.bias"] = rnd(K, D, std=0.3), rnd(K)
    return w


def ln(w, name, x):
    return F.layer_norm(x, x.shape[-1:], w[name + ".weight"], w[name + ".bias"], 1e-6)


def lin(w, name, x):
    return F.linear(x, w[name + ".weight"], w.get(name + ".bias"))


def attend(q, k, v):
    """q [B, H, Tq, hd], k and v [B, H, Tk, hd] -> [B, Tq, H * hd]."""
    a = torch.softmax(q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5, -1) @ v
    return a.transpose(1, 2).reshape(q.shape[0], q.shape[2], -1)


def block(w, s, l, x):
    B, N, D = x.shape
    b, H = "blocks.%d." % l, s["H"]
    qkv = lin(w, b + "attn.qkv", ln(w, b + "norm1", x)).reshape(B, N, 3, H, D // H)
    q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
    a = lin(w, b + "attn.proj", attend(q, k, v))
    x = x + (a * w[b + "ls1.gamma"] if s["ls"] else a)
    h = lin(w, b + "mlp.fc1", ln(w, b + "norm2", x))
    if s.get("swiglu"):  # SwiGLUPacked: GluMlp(gate_last=False), act(x1) * x2
        x1, x2 = h.chunk(2, -1)
        h = F.silu(x1) * x2
    else:
        h = F.gelu(h)
    m = lin(w, b + "mlp.fc2", h)
    return x + (m * w[b + "ls2.gamma"] if s["ls"] else m)


def attn_pool(w, s, x):
    B, N, D = x.shape
    H, a = s["H"], "attn_pool."
    q = lin(w, a + "q", w[a + "latent"].expand(B, -1, -1)).reshape(B, 1, H, D // H).transpose(1, 2)
    kv = lin(w, a + "kv", x).reshape(B, N, 2, H, D // H).permute(2, 0, 3, 1, 4)
    y = lin(w, a + "proj", attend(q, kv[0], kv[1]))
    y = y + lin(w, a + "mlp.fc2", F.gelu(lin(w, a + "mlp.fc1", ln(w, a + "norm", y))))
    return y[:, 0]


def forward(w, s, pixels):
    """float64 pixels [B, 3, H, W] -> logits [B, K] (features [B, D] when K is 0)."""
    x = F.conv2d(pixels, w["patch_embed.proj.weight"], w["patch_embed.proj.bias"], stride=s["P"])
    x = x.flatten(2).transpose(1, 2)
    B = x.shape[0]
    prefix = [w[n].expand(B, -1, -1) for n in ("cls_token", "reg_token") if n in w]
    if s["nec"]:
        x = torch.cat(prefix + [x + w["pos_embed"]], 1)
    else:
        x = torch.cat(prefix + [x], 1) + w["pos_embed"]
    for l in range(s["L"]):
        x = block(w, s, l, x)
    if not s["fc_norm"]:
        x = ln(w, "norm", x)
    n_prefix = int(s["cls"]) + s["reg"]  # num_prefix_tokens: the registers count too
    if s["pool"] == "map":
        x = attn_pool(w, s, x[:, n_prefix:])
    elif s["pool"] == "avg":
        x = x[:, n_prefix:].mean(1)
    else:
        x = x[:, 0]
    if s["fc_norm"]:
        x = ln(w, "fc_norm", x)
    return lin(w, "head", x) if s["K"] else x


def center_crop(a, ch, cw):
    """torchvision's F.center_crop on an HWC uint8 array: zeros around a larger crop, then
    int(round((size - crop) / 2.0))."""
    h, wd = a.shape[:2]
    if cw > wd or ch > h:
        pl, pt = ((cw - wd) // 2 if cw > wd else 0), ((ch - h) // 2 if ch > h else 0)
        pr, pb = ((cw - wd + 1) // 2 if cw > wd else 0), ((ch - h + 1) // 2 if ch > h else 0)
        a = np.pad(a, ((pt, pb), (pl, pr), (0, 0)))
        h, wd = a.shape[:2]
    top, left = int(round((h - ch) / 2.0)), int(round((wd - cw) / 2.0))
    return a[top:top + ch, left:left + cw]


def preprocess(path, s):
    """timm's eval transform on one file -> float32 [3, H, W]."""
    p, size = s["pcfg"], s["size"]
    img = Image.open(path).convert("RGB")
    scale = math.floor(size / p["crop_pct"])
    if p["crop_mode"] == "squash":
        img = img.resize((scale, scale), FILTERS[p["interpolation"]])
    else:
        w, h = img.size
        short, long = (w, h) if w <= h else (h, w)
        new_long = int(scale * long / short)
        img = img.resize((scale, new_long) if w <= h else (new_long, scale),
                         FILTERS[p["interpolation"]])
    a = center_crop(np.asarray(img), size, size)
    t = torch.from_numpy(np.array(a)).permute(2, 0, 1).float().div(255)
    mean, std = torch.tensor(p["mean"]), torch.tensor(p["std"])
    return ((t - mean[:, None, None]) / std[:, None, None]).numpy()


def config(s):
    pcfg = dict(tag="micro", custom_load=False, input_size=[3, s["size"], s["size"]],
                fixed_input_size=True, **s["pcfg"], num_classes=s["K"], pool_size=None,
                first_conv="patch_embed.proj", classifier="head")
    c = dict(architecture=s["arch"], num_classes=s["K"], num_features=s["D"],
             global_pool=s["pool"])
    if s["K"]:
        c["label_names"] = ["class_%d" % i for i in range(s["K"])]
    c["model_args"] = s["model_args"]
    c["pretrained_cfg"] = pcfg
    return c


def hf_folder(w, s, out):
    """The same weights as ViTForImageClassification (transformers' names)."""
    D = s["D"]
    t = {"vit.embeddings.cls_token": w["cls_token"],
         "vit.embeddings.position_embeddings": w["pos_embed"],
         "vit.embeddings.patch_embeddings.projection.weight": w["patch_embed.proj.weight"],
         "vit.embeddings.patch_embeddings.projection.bias": w["patch_embed.proj.bias"],
         "vit.layernorm.weight": w["norm.weight"], "vit.layernorm.bias": w["norm.bias"],
         "classifier.weight": w["head.weight"], "classifier.bias": w["head.bias"]}
    for l in range(s["L"]):
        b, h = "blocks.%d." % l, "vit.encoder.layer.%d." % l
        for i, part in enumerate(("query", "key", "value")):
            t[h + "attention.attention.%s.weight" % part] = w[b + "attn.qkv.weight"][i * D:(i + 1) * D]
            t[h + "attention.attention.%s.bias" % part] = w[b + "attn.qkv.bias"][i * D:(i + 1) * D]
        for ours, theirs in (("norm1", "layernorm_before"), ("norm2", "layernorm_after"),
                             ("attn.proj", "attention.output.dense"),
                             ("mlp.fc1", "intermediate.dense"), ("mlp.fc2", "output.dense")):
            t[h + theirs + ".weight"], t[h + theirs + ".bias"] = w[b + ours + ".weight"], w[
                b + ours + ".bias"]
    cfg = {"architectures": ["ViTForImageClassification"], "model_type": "vit",
           "image_size": s["size"], "patch_size": s["P"], "num_channels": 3, "hidden_size": D,
           "num_hidden_layers": s["L"], "num_attention_heads": s["H"],
           "intermediate_size": int(D * s["ratio"]), "hidden_act": "gelu",
           "layer_norm_eps": 1e-6, "qkv_bias": True,
           "id2label": {str(i): "class_%d" % i for i in range(s["K"])},
           "label2id": {"class_%d" % i: i for i in range(s["K"])}, "torch_dtype": "float32"}
    os.makedirs(out, exist_ok=True)
    write_json(os.path.join(out, "config.json"), cfg)
    write_safetensors(os.path.join(out, "model.safetensors"), t)


def main():
    for s in SPECS:
        out = os.path.join(ROOT, s["dir"])
        os.makedirs(out, exist_ok=True)
        w = random_weights(s)
        write_json(os.path.join(out, "config.json"), config(s))
        write_safetensors(os.path.join(out, "model.safetensors"), w)
        golden = {}
        for i, name in enumerate(IMAGES):
            px = preprocess(os.path.join(REPO, name), s)
            golden["pixels.%d" % i] = px
            golden["output.%d" % i] = forward(w, s, torch.from_numpy(px).double()[None])[0]
        write_safetensors(os.path.join(out, "golden.safetensors"), golden,
                          {"images": ",".join(IMAGES), "source": "tools/timm_reference.py"})
        if s["dir"] == "timm-vit-micro":
            hf_folder(w, s, os.path.join(ROOT, "timm-vit-micro-hf"))
        print(out, {k: tuple(v.shape) for k, v in golden.items() if k.endswith(".0")})


if __name__ == "__main__":  # tools/open_clip_reference.py imports the forward
    main()
