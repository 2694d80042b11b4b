#!/usr/bin/python3
"""Writes the open_clip micro folders and their float64 goldens (run by hand; the project never
runs it). Random weights under open_clip's exact state_dict names in open_clip_model.safetensors,
open_clip_config.json as open_clip's push_to_hf_hub writes it ({"model_cfg": ..., "preprocess_cfg":
...}), and goldens from a float64 forward written here from open_clip's code
(mlfoundations/open_clip 89fb801f: src/open_clip/model.py CLIP, _build_vision_tower,
_build_text_tower; transformer.py VisionTransformer, TextTransformer, ResidualAttentionBlock,
Attention, text_global_pool; transform.py image_transform; tokenizer.py SimpleTokenizer; read with
the code index, no open_clip import):

  open-clip-micro          ViT-B-32's shape made small: image 32, patch 8, width 32, 2 layers,
                           head_width 8 (4 heads), mlp_ratio 2; text: context 16, the CLIP micro
                           vocabulary (532), width 24, 2 heads, 2 layers, mlp_ratio 2; embed_dim
                           20; quick_gelu; argmax pooling; preprocess_cfg: OpenAI's mean and std,
                           bicubic, shortest
  open-clip-micro-hf       the same weights as a transformers CLIPModel folder (in_proj split into
                           q, k, v; proj and text_projection transposed into Linear weights)
  torch-bin/open-clip-micro  the same float32 weights as open_clip_pytorch_model.bin (torch.save,
                           zip), the file alone (the test links the folder's other files)
  open-clip-micro-options  the options: nn.GELU (quick_gelu false), layer scale (ls_init_value),
                           no_ln_pre, mlp_ratio 2.5 (int(32 * 2.5) = 80), norm eps 1e-6,
                           CustomTextCLIP (the text tower under "text."), the text projection an
                           nn.Linear with bias (proj_bias), pool_type 'eos' (eos_id 531),
                           init_logit_bias (logit_bias: scores through a sigmoid),
                           nonscalar_logit_scale ([1]); 1 layer a tower; preprocess_cfg: mean and
                           std 0.5, bilinear, squash
  open-clip-last-micro     the SigLIP exports' text run: no_causal_mask and pool_type 'last' (the
                           ids padded with 0 to context_length and attended to, ln_final's last
                           row projected); open-clip-micro's shape, 1 image layer
  open-clip-siglip-micro   a SigLIP export's shape: open-clip-timm-micro's image tower, a text tower
                           with no_causal_mask, pool_type 'last', proj_bias, eps 1e-6, and
                           hf_tokenizer_name with tokenizer_kwargs clean 'canonicalize': the
                           tokenizer.json of tests/data/tokenizer-json/xlmr-unigram (302 pieces)
                           with pad <pad> (1); the texts canonicalised, then the tokenizers
                           library's ids (node, tools/node_modules), cut and padded to 16;
                           canonicalize.json: canonicalize_text's output on CANONICAL's texts
  open-clip-siglip2-micro  open-clip-siglip-micro with a SigLIP 2 export's text activation: act_kwargs
                           approximate 'tanh' (nn.GELU(approximate='tanh'))
  open-clip-timm-micro     a timm image tower (TimmModel, timm_model_name): tools/timm_reference.py's
                           timm-siglip-micro (vit_base_patch16_siglip_224 with timm_model_kwargs
                           patch 8, embed_dim 32, depth 2, 4 heads; timm_pool 'map', timm_proj
                           'none': the attention pool's output is the embedding), its weights under
                           visual.trunk.; open-clip-micro's text tower (width 24, 2 layers) with a
                           projection to 32; init_logit_bias (the sigmoid scores), custom_text
  open-clip-timm-proj-micro  timm-vit-micro's trunk (vit_base_patch16_224, class token, timm_pool
                           'token') without its head (reset_classifier(0)), then timm_proj
                           'linear' with timm_proj_bias: visual.head.proj [16, 32] and its bias
  open-clip-timm-head-micro  timm-vit-micro whole: timm_proj unset (null), so the trunk is built
                           with num_classes = embed_dim 5 and its own head is the projection

The forward:
  image   conv1 (stride P, no bias) -> [B, N, D]; class_embedding before; + positional_embedding;
          ln_pre (unless no_ln_pre); blocks; ln_post on every row; row 0 ('tok'); @ proj [D, E]
  text    token_embedding + positional_embedding (the ids padded with 0 to context_length, as
          the tokenizer returns them); blocks with the causal mask (-inf above the diagonal;
          none with no_causal_mask); ln_final; the row at argmax(ids) (argmax), at the first
          eos_id ('eos') or the last one ('last'); @
          text_projection [D, E] or its nn.Linear
  block   x + ls_1(attn(ln_1(x))); x + ls_2(mlp(ln_2(x))); attn: in_proj [3D, D] -> q, k, v
          (chunks in that order), heads, softmax(q k^T hd^-0.5 + mask) v, out_proj; mlp: c_fc,
          QuickGELU (x sigmoid(1.702 x)) or nn.GELU (erf), c_proj
  logits  logit_scale.exp() * normalize(image) @ normalize(text)^T (+ logit_bias)
The eval transform (image_transform, torchvision on PIL): 'shortest': Resize(size) on the short
side (the long one int(size * long / short)), CenterCrop(size) (top = int(round((h - ch) /
2.0))); 'squash': Resize((size, size)); ToTensor (float32 / 255), Normalize (float32).
The tokenizer (SimpleTokenizer, without ftfy, which the test texts do not need): whitespace runs
to one space, stripped, lower-cased; CLIP's pattern; byte-level BPE over the folder's merges;
[sot] + ids + [eot], cut to context_length with eot last, padded with 0.
"""
import html
import json
import os
import shutil
import string
import subprocess
import sys

import numpy as np
import re
import torch
import torch.nn.functional as F
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_reference import write_json, write_safetensors  # noqa: E402
import timm_reference  # noqa: E402

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DATA = os.path.join(REPO, "tests", "data")
CLIP_MICRO = os.path.join(DATA, "clip-micro")  # its tokenizer files (tools/clip_reference.py's)
IMAGES = ["examples/photos/cat.jpg", "tests/data/golden-images/rgb_64x48.png",
          "tests/data/golden-images/tall_40x400.jpg", "tests/data/golden-images/palette_120x90.png",
          "tests/data/golden-images/wide_500x37.png", "tests/data/golden-images/rgb_17x23.png"]
TEXTS = ["a photo of a cat", "A Photo of the DOG's photo!", "",
         "cat dog cat dog cat dog cat dog cat dog cat dog cat dog cat dog",
         "the photo 12 of a bird \u00e9t\u00e9", "  a   cat\n\tphoto  "]
OPENAI_MEAN, OPENAI_STD = [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]
FILTERS = {"bicubic": Image.BICUBIC, "bilinear": Image.BILINEAR}

SPECS = [
    dict(dir="open-clip-micro", seed=7, hf="open-clip-micro-hf",
         model_cfg=dict(embed_dim=20, quick_gelu=True,
                        vision_cfg=dict(image_size=32, layers=2, width=32, patch_size=8,
                                        head_width=8, mlp_ratio=2.0),
                        text_cfg=dict(context_length=16, vocab_size=532, width=24, heads=2,
                                      layers=2, mlp_ratio=2.0)),
         preprocess_cfg=dict(mean=OPENAI_MEAN, std=OPENAI_STD, interpolation="bicubic",
                             resize_mode="shortest")),
    dict(dir="open-clip-micro-options", seed=8,
         model_cfg=dict(embed_dim=12, quick_gelu=False, custom_text=True, init_logit_bias=-10,
                        nonscalar_logit_scale=True,
                        vision_cfg=dict(image_size=[32, 32], layers=1, width=32, patch_size=8,
                                        head_width=16, mlp_ratio=2.5, ls_init_value=0.1,
                                        no_ln_pre=True, norm_kwargs=dict(eps=1e-6)),
                        text_cfg=dict(context_length=16, vocab_size=532, width=16, heads=2,
                                      layers=1, mlp_ratio=2.0, ls_init_value=0.1, proj_bias=True,
                                      pool_type="eos", eos_id=531, norm_kwargs=dict(eps=1e-6))),
         preprocess_cfg=dict(mean=[0.5] * 3, std=[0.5] * 3, interpolation="bilinear",
                             resize_mode="squash")),
    dict(dir="open-clip-last-micro", seed=12,
         model_cfg=dict(embed_dim=20, quick_gelu=True,
                        vision_cfg=dict(image_size=32, layers=1, width=32, patch_size=8,
                                        head_width=8, mlp_ratio=2.0),
                        text_cfg=dict(context_length=16, vocab_size=532, width=24, heads=2,
                                      layers=2, mlp_ratio=2.0, no_causal_mask=True,
                                      pool_type="last")),
         preprocess_cfg=dict(mean=OPENAI_MEAN, std=OPENAI_STD, interpolation="bicubic",
                             resize_mode="shortest")),
    dict(dir="open-clip-timm-micro", seed=9, timm="timm-siglip-micro",
         model_cfg=dict(embed_dim=32, custom_text=True, init_logit_bias=-10,
                        vision_cfg=dict(image_size=32, timm_model_name="vit_base_patch16_siglip_224",
                                        timm_model_pretrained=False, timm_pool="map",
                                        timm_proj="none",
                                        timm_model_kwargs=dict(patch_size=8, embed_dim=32, depth=2,
                                                               num_heads=4)),
                        text_cfg=dict(context_length=16, vocab_size=532, width=24, heads=2,
                                      layers=2, mlp_ratio=2.0)),
         preprocess_cfg=dict(mean=[0.5] * 3, std=[0.5] * 3, interpolation="bicubic",
                             resize_mode="shortest")),
    dict(dir="open-clip-siglip-micro", seed=13, timm="timm-siglip-micro",
         hf_tokenizer="tokenizer-json/xlmr-unigram",
         model_cfg=dict(embed_dim=32, custom_text=True, init_logit_bias=-10,
                        vision_cfg=dict(image_size=32, timm_model_name="vit_base_patch16_siglip_224",
                                        timm_model_pretrained=False, timm_pool="map",
                                        timm_proj="none",
                                        timm_model_kwargs=dict(patch_size=8, embed_dim=32, depth=2,
                                                               num_heads=4)),
                        text_cfg=dict(context_length=16, vocab_size=302, width=24, heads=2,
                                      layers=2, mlp_ratio=2.0, no_causal_mask=True,
                                      pool_type="last", proj_bias=True,
                                      norm_kwargs=dict(eps=1e-6),
                                      hf_tokenizer_name="timm/ViT-B-16-SigLIP",
                                      tokenizer_kwargs=dict(clean="canonicalize"))),
         preprocess_cfg=dict(mean=[0.5] * 3, std=[0.5] * 3, interpolation="bicubic",
                             resize_mode="shortest")),
    dict(dir="open-clip-siglip2-micro", seed=14, timm="timm-siglip-micro",
         hf_tokenizer="tokenizer-json/xlmr-unigram",
         model_cfg=dict(embed_dim=32, custom_text=True, init_logit_bias=-10,
                        vision_cfg=dict(image_size=32, timm_model_name="vit_base_patch16_siglip_224",
                                        timm_model_pretrained=False, timm_pool="map",
                                        timm_proj="none",
                                        timm_model_kwargs=dict(patch_size=8, embed_dim=32, depth=2,
                                                               num_heads=4)),
                        text_cfg=dict(context_length=16, vocab_size=302, width=24, heads=2,
                                      layers=2, mlp_ratio=2.0, no_causal_mask=True,
                                      pool_type="last", proj_bias=True,
                                      norm_kwargs=dict(eps=1e-6),
                                      act_kwargs=dict(approximate="tanh"),
                                      hf_tokenizer_name="timm/ViT-B-16-SigLIP2",
                                      tokenizer_kwargs=dict(clean="canonicalize"))),
         preprocess_cfg=dict(mean=[0.5] * 3, std=[0.5] * 3, interpolation="bicubic",
                             resize_mode="shortest")),
    dict(dir="open-clip-timm-proj-micro", seed=10, timm="timm-vit-micro",
         model_cfg=dict(embed_dim=16,
                        vision_cfg=dict(image_size=32, timm_model_name="vit_base_patch16_224",
                                        timm_pool="token", timm_proj="linear", timm_proj_bias=True,
                                        timm_model_kwargs=dict(img_size=32, patch_size=8,
                                                               embed_dim=32, depth=2, num_heads=2)),
                        text_cfg=dict(context_length=16, vocab_size=532, width=24, heads=2,
                                      layers=1, mlp_ratio=2.0)),
         preprocess_cfg=dict(mean=[0.5] * 3, std=[0.5] * 3, interpolation="bicubic",
                             resize_mode="shortest")),
    dict(dir="open-clip-timm-head-micro", seed=11, timm="timm-vit-micro",
         model_cfg=dict(embed_dim=5,
                        vision_cfg=dict(image_size=32, timm_model_name="vit_base_patch16_224",
                                        timm_pool="token", timm_proj=None,
                                        timm_model_kwargs=dict(img_size=32, patch_size=8,
                                                               embed_dim=32, depth=2, num_heads=2)),
                        text_cfg=dict(context_length=16, vocab_size=532, width=24, heads=2,
                                      layers=1, mlp_ratio=2.0)),
         preprocess_cfg=dict(mean=[0.5] * 3, std=[0.5] * 3, interpolation="bicubic",
                             resize_mode="shortest")),
]


def timm_spec(s):
    """tools/timm_reference.py's spec of the timm tower (None: open_clip's own)."""
    return next((t for t in timm_reference.SPECS if t["dir"] == s.get("timm")), None)


# ---- the shape, as model.py's dataclasses default it ----

def shape(s):
    v, t = s["model_cfg"]["vision_cfg"], s["model_cfg"]["text_cfg"]
    size = v.get("image_size", 224)
    size = size[0] if isinstance(size, list) else size
    vw, tw = v.get("width", 768), t.get("width", 512)
    return dict(E=s["model_cfg"]["embed_dim"], size=size, P=v.get("patch_size", 16), VD=vw,
                VL=v.get("layers", 12), VH=vw // v.get("head_width", 64),
                VI=int(vw * v.get("mlp_ratio", 4.0)), ctx=t.get("context_length", 77),
                V=t.get("vocab_size", 49408), TD=tw, TL=t.get("layers", 12), TH=t.get("heads", 8),
                TI=int(tw * t.get("mlp_ratio", 4.0)),
                veps=v.get("norm_kwargs", {}).get("eps", 1e-5),
                teps=t.get("norm_kwargs", {}).get("eps", 1e-5),
                ls_v=v.get("ls_init_value") is not None, ls_t=t.get("ls_init_value") is not None,
                ln_pre=not v.get("no_ln_pre", False), proj_bias=t.get("proj_bias", False),
                pool=t.get("pool_type", "argmax"), eos=t.get("eos_id"),
                no_causal=t.get("no_causal_mask", False),
                quick=s["model_cfg"].get("quick_gelu", False),
                tact=("tanh" if t.get("act_kwargs", {}).get("approximate") == "tanh"
                      else s["model_cfg"].get("quick_gelu", False)),
                tprefix="text." if s["model_cfg"].get("custom_text") else "",
                bias=s["model_cfg"].get("init_logit_bias") is not None,
                lshape=[1] if s["model_cfg"].get("nonscalar_logit_scale") else [],
                timm=timm_spec(s))


# ---- weights ----

def blocks(g, w, prefix, D, L, I, ls):
    def rnd(*shape, scale=1.0):
        return torch.randn(*shape, generator=g, dtype=torch.float64) * scale
    for l in range(L):
        b = "%stransformer.resblocks.%d." % (prefix, l)
        for n in ("ln_1", "ln_2"):
            w[b + n + ".weight"], w[b + n + ".bias"] = 1 + 0.1 * rnd(D), 0.1 * rnd(D)
        w[b + "attn.in_proj_weight"], w[b + "attn.in_proj_bias"] = rnd(3 * D, D, scale=D ** -0.5), 0.1 * rnd(3 * D)
        w[b + "attn.out_proj.weight"], w[b + "attn.out_proj.bias"] = rnd(D, D, scale=D ** -0.5), 0.1 * rnd(D)
        w[b + "mlp.c_fc.weight"], w[b + "mlp.c_fc.bias"] = rnd(I, D, scale=D ** -0.5), 0.1 * rnd(I)
        w[b + "mlp.c_proj.weight"], w[b + "mlp.c_proj.bias"] = rnd(D, I, scale=I ** -0.5), 0.1 * rnd(D)
        if ls:
            w[b + "ls_1.gamma"], w[b + "ls_2.gamma"] = 0.5 + 0.2 * rnd(D), 0.5 + 0.2 * rnd(D)


def random_weights(s, k):
    g = torch.Generator().manual_seed(s["seed"])
    rnd = lambda *shape: torch.randn(*shape, generator=g, dtype=torch.float64)  # noqa: E731
    w, D, T = {}, k["VD"], k["TD"]
    n = (k["size"] // k["P"]) ** 2
    ts, norms = timm_spec(s), []
    if ts:  # the trunk: the timm fixture's tensors, exactly (its own seeded generator)
        proj = s["model_cfg"]["vision_cfg"]["timm_proj"]
        for n, t in timm_reference.random_weights(ts).items():
            if proj is None or not n.startswith("head."):  # reset_classifier(0) drops the head
                w["visual.trunk." + n] = t
        if proj == "linear":
            w["visual.head.proj.weight"] = rnd(k["E"], ts["D"]) * ts["D"] ** -0.5
            w["visual.head.proj.bias"] = 0.1 * rnd(k["E"])
    else:
        w["visual.class_embedding"] = rnd(D)
        w["visual.conv1.weight"] = rnd(D, 3, k["P"], k["P"]) * (3 * k["P"] ** 2) ** -0.5
        w["visual.positional_embedding"] = 0.5 * rnd(n + 1, D)
        norms = ["visual.ln_post"] + (["visual.ln_pre"] if k["ln_pre"] else [])
        blocks(g, w, "visual.", D, k["VL"], k["VI"], k["ls_v"])
        w["visual.proj"] = rnd(D, k["E"]) * D ** -0.5
    p = k["tprefix"]
    w[p + "token_embedding.weight"] = rnd(k["V"], T)
    w[p + "positional_embedding"] = 0.5 * rnd(k["ctx"], T)
    blocks(g, w, p, T, k["TL"], k["TI"], k["ls_t"])
    norms.append(p + "ln_final")
    for name in norms:
        dim = D if name.startswith("visual.") else T
        w[name + ".weight"], w[name + ".bias"] = 1 + 0.1 * rnd(dim), 0.1 * rnd(dim)
    if k["proj_bias"]:
        w[p + "text_projection.weight"] = rnd(k["E"], T) * T ** -0.5
        w[p + "text_projection.bias"] = 0.1 * rnd(k["E"])
    else:
        w[p + "text_projection"] = rnd(T, k["E"]) * T ** -0.5
    w["logit_scale"] = torch.full(k["lshape"], 2.6592, dtype=torch.float64)
    if k["bias"]:
        w["logit_bias"] = torch.full(k["lshape"], -1.5, dtype=torch.float64)
    return w


# ---- the forward, float64 ----

def ln(w, name, x, eps):
    return F.layer_norm(x, x.shape[-1:], w[name + ".weight"], w[name + ".bias"], eps)


def attention(w, b, x, heads, mask):
    B, N, D = x.shape
    q, k, v = F.linear(x, w[b + "in_proj_weight"], w[b + "in_proj_bias"]).chunk(3, dim=-1)
    q, k, v = (t.reshape(B, N, heads, D // heads).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-1, -2) * (D // heads) ** -0.5
    if mask is not None:
        scores = scores + mask
    out = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, N, D)
    return F.linear(out, w[b + "out_proj.weight"], w[b + "out_proj.bias"])


def run_blocks(w, prefix, x, L, heads, eps, ls, quick, mask=None):
    act = (lambda t: t * torch.sigmoid(1.702 * t)) if quick is True else F.gelu  # QuickGELU / nn.GELU
    if quick == "tanh":  # nn.GELU(approximate='tanh'): act_kwargs
        act = lambda t: F.gelu(t, approximate="tanh")  # noqa: E731
    for l in range(L):
        b = "%stransformer.resblocks.%d." % (prefix, l)
        g1 = w[b + "ls_1.gamma"] if ls else 1.0
        g2 = w[b + "ls_2.gamma"] if ls else 1.0
        x = x + g1 * attention(w, b + "attn.", ln(w, b + "ln_1", x, eps), heads, mask)
        h = F.linear(ln(w, b + "ln_2", x, eps), w[b + "mlp.c_fc.weight"], w[b + "mlp.c_fc.bias"])
        x = x + g2 * F.linear(act(h), w[b + "mlp.c_proj.weight"], w[b + "mlp.c_proj.bias"])
    return x


def encode_image(w, k, pixels):
    if k["timm"]:  # TimmModel: the trunk (its head only with timm_proj unset), then head.proj
        trunk = {n[len("visual.trunk."):]: t for n, t in w.items() if n.startswith("visual.trunk.")}
        x = timm_reference.forward(trunk, dict(k["timm"], K=int("head.weight" in trunk)),
                                   pixels)
        if "visual.head.proj.weight" in w:
            x = F.linear(x, w["visual.head.proj.weight"], w.get("visual.head.proj.bias"))
        return x
    x = F.conv2d(pixels, w["visual.conv1.weight"], stride=k["P"])
    x = x.reshape(x.shape[0], x.shape[1], -1).permute(0, 2, 1)
    cls = w["visual.class_embedding"].expand(x.shape[0], 1, -1)
    x = torch.cat([cls, x], dim=1) + w["visual.positional_embedding"]
    if k["ln_pre"]:
        x = ln(w, "visual.ln_pre", x, k["veps"])
    x = run_blocks(w, "visual.", x, k["VL"], k["VH"], k["veps"], k["ls_v"], k["quick"])
    return ln(w, "visual.ln_post", x, k["veps"])[:, 0] @ w["visual.proj"]


def encode_text(w, k, ids):
    p, T = k["tprefix"], ids.shape[1]
    x = w[p + "token_embedding.weight"][ids] + w[p + "positional_embedding"][:T]
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    if k["no_causal"]:  # no_causal_mask: attn_mask None, the padding attended to
        mask = None
    x = run_blocks(w, p, x, k["TL"], k["TH"], k["teps"], k["ls_t"], k["tact"], mask)
    x = ln(w, p + "ln_final", x, k["teps"])
    if k["pool"] == "last":
        at = torch.full((x.shape[0],), T - 1)
    elif k["pool"] == "argmax":
        at = ids.argmax(dim=-1)
    else:
        at = (ids == k["eos"]).int().argmax(dim=-1)
    x = x[torch.arange(x.shape[0]), at]
    if k["proj_bias"]:
        return F.linear(x, w[p + "text_projection.weight"], w[p + "text_projection.bias"])
    return x @ w[p + "text_projection"]


def logits(w, img, txt):
    i, t = F.normalize(img, dim=-1), F.normalize(txt, dim=-1)
    s = w["logit_scale"].exp() * i @ t.T
    return s + w["logit_bias"] if "logit_bias" in w else s


# ---- preprocessing and tokens ----

def center_crop(a, ch, cw):
    """torchvision's F.center_crop on an HWC uint8 array (the crop never exceeds the image
    here): top = int(round((h - ch) / 2.0))."""
    h, wd = a.shape[:2]
    top, left = int(round((h - ch) / 2.0)), int(round((wd - cw) / 2.0))
    return a[top:top + ch, left:left + cw]


def preprocess(path, s, size):
    p = s["preprocess_cfg"]
    img = Image.open(path).convert("RGB")
    if p["resize_mode"] == "squash":
        img = img.resize((size, size), FILTERS[p["interpolation"]])
    else:
        w, h = img.size
        short, long = (w, h) if w <= h else (h, w)
        new_long = int(size * long / short)
        img = img.resize((size, new_long) if w <= h else (new_long, size),
                         FILTERS[p["interpolation"]])
    a = center_crop(np.asarray(img), size, size)
    t = torch.from_numpy(np.array(a)).permute(2, 0, 1).float().div(255)
    mean, std = torch.tensor(p["mean"]), torch.tensor(p["std"])
    return ((t - mean[:, None, None]) / std[:, None, None]).numpy()


def bytes_to_unicode():
    """SimpleTokenizer's byte -> symbol table."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(161, 173)) + list(range(174, 256))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_SYMBOL = bytes_to_unicode()
# CLIP's pattern with Python's re (the regex module is not installed here): [\p{L}]+ as
# [^\W\d_]+, [\p{N}] as \d, [^\s\p{L}\p{N}]+ as (?:[^\s\w]|_)+; the same split for the test texts
PATTERN = re.compile(r"""<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|"""
                     r"""[^\W\d_]+|\d|(?:[^\s\w]|_)+""", re.IGNORECASE)


class SimpleTokenizer:
    def __init__(self, folder):
        with open(os.path.join(folder, "vocab.json")) as f:
            self.vocab = json.load(f)
        with open(os.path.join(folder, "merges.txt")) as f:
            merges = [m for m in f.read().split("\n")[1:] if m]
        self.ranks = {tuple(m.split(" ")): i for i, m in enumerate(merges)}
        self.sot, self.eot = self.vocab["<|startoftext|>"], self.vocab["<|endoftext|>"]

    def bpe(self, token):
        word = tuple(BYTE_SYMBOL[b] for b in token.encode("utf-8"))
        word = word[:-1] + (word[-1] + "</w>",)
        while len(word) > 1:
            pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
            best = min(pairs, key=lambda q: self.ranks.get(q, float("inf")))
            if best not in self.ranks:
                break
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            word = tuple(out)
        return word

    def __call__(self, text, context_length):
        text = html.unescape(html.unescape(text)).strip()  # basic_clean (ftfy left out)
        text = re.sub(r"\s+", " ", text).strip().lower()  # whitespace_clean, lower
        ids = [self.vocab[b] for tok in PATTERN.findall(text) for b in self.bpe(tok)]
        tokens = [self.sot] + ids + [self.eot]
        if len(tokens) > context_length:
            tokens = tokens[:context_length]
            tokens[-1] = self.eot
        return tokens + [0] * (context_length - len(tokens))


def canonicalize_text(text):
    """open_clip's canonicalize_text (tokenizer.py) without keep_punctuation_exact_string."""
    text = text.replace("_", " ")
    text = text.translate(str.maketrans("", "", string.punctuation))
    text = text.lower()
    text = " ".join(text.split())
    return text.strip()


# Texts whose canonical form tells the steps apart (underscores, punctuation inside words, Python's
# white space, U+0130, case); their basic_clean (ftfy, html.unescape) is theirs unchanged except
# where noted in tests/test_open_clip.c, which does not run it.
CANONICAL = ["snake_case_label", "Don't stop-believing!!", "a\u00a0b\u2003c\x1cd\u3000e  f",
             "\u0130stanbul \u00c9T\u00c9", "_leading and trailing_", "(){}[]<>", "",
             "\u00bfQu\u00e9?  \u00a1S\u00ed!", "tab\tnew\nline\r\x0b\x0c end", "MiXeD CaSe 123",
             "\u2018curly\u2019 \u201cquotes\u201d"]


class HFTokenizer:
    """open_clip's HFTokenizer with clean 'canonicalize' (basic_clean's ftfy left out: not
    installed here, and html.unescape changes none of the texts): the folder's tokenizer.json
    through the tokenizers library (tools/node_modules, as tools/tokenizer_json_reference.mjs
    uses it), truncation=True, padding='max_length' with the tokenizer's pad token."""
    def __init__(self, folder, pad_id):
        self.path, self.pad_id = os.path.join(folder, "tokenizer.json"), pad_id

    def batch(self, texts, context_length):
        clean = []
        for t in texts:
            assert html.unescape(html.unescape(t)) == t
            clean.append(canonicalize_text(t.strip()))
        js = ("const {Tokenizer}=require('tokenizers');const fs=require('fs');"
              "const a=JSON.parse(fs.readFileSync(0));const t=Tokenizer.fromFile(a.path);"
              "t.setTruncation(a.n);t.setPadding({maxLength:a.n,padId:a.pad,padToken:'<pad>'});"
              "Promise.all(a.texts.map(x=>t.encode(x))).then(r=>console.log(JSON.stringify("
              "r.map(e=>e.getIds()))));")
        out = subprocess.run(["node", "-e", js], cwd=os.path.dirname(os.path.abspath(__file__)),
                             input=json.dumps(dict(path=self.path, n=context_length,
                                                   pad=self.pad_id, texts=clean)),
                             capture_output=True, text=True, check=True).stdout
        return json.loads(out)


# ---- files ----

def copy_tokenizer(out):
    for name in ("vocab.json", "merges.txt", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(CLIP_MICRO, name), os.path.join(out, name))


def hf_folder(w, s, k, out):
    """The same weights as transformers' CLIPModel (its names; eos_token_id 2: the old configs'
    end token at the largest id, as open_clip's argmax)."""
    t = {"vision_model.embeddings.class_embedding": w["visual.class_embedding"],
         "vision_model.embeddings.patch_embedding.weight": w["visual.conv1.weight"],
         "vision_model.embeddings.position_embedding.weight": w["visual.positional_embedding"],
         "visual_projection.weight": w["visual.proj"].T.contiguous(),
         "text_model.embeddings.token_embedding.weight": w["token_embedding.weight"],
         "text_model.embeddings.position_embedding.weight": w["positional_embedding"],
         "text_projection.weight": w["text_projection"].T.contiguous(),
         "logit_scale": w["logit_scale"]}
    for ours, theirs in (("visual.ln_pre", "vision_model.pre_layrnorm"),
                         ("visual.ln_post", "vision_model.post_layernorm"),
                         ("ln_final", "text_model.final_layer_norm")):
        for p in ("weight", "bias"):
            t["%s.%s" % (theirs, p)] = w["%s.%s" % (ours, p)]
    for src, dst, L, D in (("visual.", "vision_model.", k["VL"], k["VD"]),
                           ("", "text_model.", k["TL"], k["TD"])):
        for l in range(L):
            b, h = "%stransformer.resblocks.%d." % (src, l), "%sencoder.layers.%d." % (dst, l)
            for i, part in enumerate(("q_proj", "k_proj", "v_proj")):
                t[h + "self_attn.%s.weight" % part] = w[b + "attn.in_proj_weight"][i * D:(i + 1) * D]
                t[h + "self_attn.%s.bias" % part] = w[b + "attn.in_proj_bias"][i * D:(i + 1) * D]
            for ours, theirs in (("ln_1", "layer_norm1"), ("ln_2", "layer_norm2"),
                                 ("attn.out_proj", "self_attn.out_proj"),
                                 ("mlp.c_fc", "mlp.fc1"), ("mlp.c_proj", "mlp.fc2")):
                for p in ("weight", "bias"):
                    t[h + theirs + "." + p] = w[b + ours + "." + p]
    act = "quick_gelu" if k["quick"] else "gelu"
    cfg = {"architectures": ["CLIPModel"], "model_type": "clip", "projection_dim": k["E"],
           "logit_scale_init_value": 2.6592, "torch_dtype": "float32",
           "text_config": {"model_type": "clip_text_model", "hidden_size": k["TD"],
                           "intermediate_size": k["TI"], "num_attention_heads": k["TH"],
                           "num_hidden_layers": k["TL"], "hidden_act": act,
                           "layer_norm_eps": k["teps"], "projection_dim": k["E"],
                           "vocab_size": k["V"], "max_position_embeddings": k["ctx"],
                           "eos_token_id": 2, "bos_token_id": 0, "pad_token_id": 1},
           "vision_config": {"model_type": "clip_vision_model", "hidden_size": k["VD"],
                             "intermediate_size": k["VI"], "num_attention_heads": k["VH"],
                             "num_hidden_layers": k["VL"], "hidden_act": act,
                             "layer_norm_eps": k["veps"], "projection_dim": k["E"],
                             "image_size": k["size"], "patch_size": k["P"], "num_channels": 3}}
    os.makedirs(out, exist_ok=True)
    write_json(os.path.join(out, "config.json"), cfg)
    write_safetensors(os.path.join(out, "model.safetensors"), t)
    copy_tokenizer(out)


def main():
    torch.set_num_threads(1)
    only = sys.argv[1:]  # folder names: write only those
    for s in SPECS:
        if only and s["dir"] not in only:
            continue
        out = os.path.join(DATA, s["dir"])
        os.makedirs(out, exist_ok=True)
        k = shape(s)
        w = random_weights(s, k)
        write_json(os.path.join(out, "open_clip_config.json"),
                   {"model_cfg": s["model_cfg"], "preprocess_cfg": s["preprocess_cfg"]})
        write_safetensors(os.path.join(out, "open_clip_model.safetensors"), w)
        golden = {}
        if s.get("hf_tokenizer"):
            shutil.copyfile(os.path.join(DATA, s["hf_tokenizer"], "tokenizer.json"),
                            os.path.join(out, "tokenizer.json"))
            write_json(os.path.join(out, "tokenizer_config.json"),
                       {"pad_token": "<pad>", "eos_token": "</s>", "model_max_length": 16})
            ids = torch.tensor(HFTokenizer(out, 1).batch(TEXTS, k["ctx"]))
            write_json(os.path.join(out, "canonicalize.json"),
                       [[t, canonicalize_text(t)] for t in CANONICAL])
        else:
            copy_tokenizer(out)
            tok = SimpleTokenizer(out)
            ids = torch.tensor([tok(t, k["ctx"]) for t in TEXTS])
        px = np.stack([preprocess(os.path.join(REPO, n), s, k["size"]) for n in IMAGES])
        img = encode_image(w, k, torch.from_numpy(px).double())
        txt = encode_text(w, k, ids)
        golden["pixels"], golden["image_embeds"] = px, img
        golden["ids"] = ids.double()  # exact: ids below 2^24
        golden["text_embeds"], golden["logits_per_image"] = txt, logits(w, img, txt)
        write_safetensors(os.path.join(out, "golden.safetensors"), golden,
                          {"images": ",".join(IMAGES), "texts": json.dumps(TEXTS),
                           "source": "tools/open_clip_reference.py"})
        if s.get("hf"):
            hf_folder(w, s, k, os.path.join(DATA, s["hf"]))
            # the same float32 weights as torch.save writes open_clip_pytorch_model.bin (zip)
            bin_dir = os.path.join(DATA, "torch-bin", s["dir"])
            os.makedirs(bin_dir, exist_ok=True)
            torch.save({n: t.float().contiguous() for n, t in sorted(w.items())},
                       os.path.join(bin_dir, "open_clip_pytorch_model.bin"))
        print(out, {n: tuple(v.shape) for n, v in golden.items()})


main()
