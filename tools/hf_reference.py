"""The float64 reference the project's tools share (imported by them; not a program).

Everything here is written from the math of transformers' modeling_vit.py / modeling_deit.py and
its slow image processors (image_processing_vit.py, image_transforms.py), with PyTorch and Pillow
only: no transformers import. docs/SPEC.md says the same things in prose.

  read_safetensors, write_safetensors   F32 files in the layout save_pretrained writes
  config_json, random_weights           a random-weight ViT or DeiT in Hugging Face layout
  preprocess                            file -> float32 pixels [3, H, W] as the slow processor
  forward                               pixels -> logits (and hidden states, attention weights)
  goldens                               golden tensors and golden.json entries (docs/SPEC.md §9)
  write_json, write_folder              config.json-style files; a model folder with its goldens
  layer_norm, linear, attention         the float64 layers named by their save_pretrained prefix
  bert_forward                          modeling_bert.py's BertModel on one text
  clip_vision_pooler                    CLIPVisionTransformer's pooler_output
  siglip_vision_hidden, siglip_pool     SiglipVisionTransformer's last state and attention pool

Used by tools/vit_reference.py, deit_reference.py, explain_reference.py, gen_size_golden.py,
embed_reference.py, base_model_reference.py, clip_tower_reference.py and
siglip_tower_reference.py. Needs Debian 12's python3-torch and python3-pil (Pillow 9.4).
"""
import json
import os
import shutil
import struct
import warnings

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

IMAGENET_MEAN, IMAGENET_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


# ---- safetensors ----

def read_safetensors(path):
    """name -> float32 torch tensor (F32, or F16 widened exactly), and the metadata."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        kinds = {"F32": np.float32, "F16": np.float16}
        assert t["dtype"] in kinds, (path, name, t["dtype"])
        a, b = t["data_offsets"]
        x = np.frombuffer(data[a:b], kinds[t["dtype"]]).reshape(t["shape"]).astype(np.float32)
        out[name] = torch.from_numpy(x)
    return out, header.get("__metadata__", {})


def write_safetensors(path, tensors, metadata=None):
    """name -> array or tensor, stored F32 in name order; the header padded to 8 bytes with spaces
    as the safetensors library does; metadata {"format": "pt"} unless given."""
    header, blobs, offset = {"__metadata__": metadata or {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        t = tensors[name]
        a = t.detach().to(torch.float32).numpy() if isinstance(t, torch.Tensor) else t
        b = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def load_model(model_dir):
    """(config, float64 weights) of a model folder."""
    with open(f"{model_dir}/config.json") as f:
        cfg = json.load(f)
    w, _ = read_safetensors(f"{model_dir}/model.safetensors")
    return cfg, {k: v.double() for k, v in w.items()}


# ---- a random model in Hugging Face layout ----
#
# spec: dict(kind="vit"|"deit", arch=the class name, seed, image, patch, hidden, layers, heads,
#            mlp, eps, qkv_bias, labels=[names], act="gelu"; cls_std, pos_std optional)

def config_json(spec):
    labels = spec["labels"]
    cfg = {"architectures": [spec["arch"]], "model_type": spec["kind"],
           "image_size": spec["image"], "patch_size": spec["patch"], "num_channels": 3,
           "hidden_size": spec["hidden"], "num_hidden_layers": spec["layers"],
           "num_attention_heads": spec["heads"], "intermediate_size": spec["mlp"],
           "hidden_act": spec.get("act", "gelu"), "layer_norm_eps": spec["eps"],
           "qkv_bias": spec["qkv_bias"], "hidden_dropout_prob": 0.0,
           "attention_probs_dropout_prob": 0.0, "initializer_range": 0.02}
    if spec["kind"] == "deit":
        cfg["encoder_stride"] = 16
    cfg["id2label"] = {str(i): l for i, l in enumerate(labels)}
    cfg["label2id"] = {l: i for i, l in enumerate(labels)}
    cfg["torch_dtype"] = "float32"
    return cfg


def random_weights(spec):
    """save_pretrained's names -> float64 tensors holding float32-representable values (what is
    stored is exactly what the reference computes with). Normal draws from one seeded generator,
    in a fixed order: the same spec gives the same weights."""
    g = torch.Generator().manual_seed(spec["seed"])
    pre = spec["kind"] + "."
    D, I, K, P = spec["hidden"], spec["mlp"], len(spec["labels"]), spec["patch"]
    n = (spec["image"] // P) ** 2
    special = 2 if spec["kind"] == "deit" else 1

    def rnd(*shape, std=0.08, mean=0.0):
        t = torch.randn(*shape, generator=g, dtype=torch.float64) * std + mean
        return t.float().double()

    w = {pre + "embeddings.cls_token": rnd(1, 1, D, std=spec.get("cls_std", 0.5))}
    if special == 2:
        w[pre + "embeddings.distillation_token"] = rnd(1, 1, D, std=spec.get("cls_std", 0.5))
    w[pre + "embeddings.position_embeddings"] = rnd(1, n + special, D, std=spec.get("pos_std", 0.3))
    w[pre + "embeddings.patch_embeddings.projection.weight"] = rnd(D, 3, P, P)
    w[pre + "embeddings.patch_embeddings.projection.bias"] = rnd(D)
    for l in range(spec["layers"]):
        p = f"{pre}encoder.layer.{l}."
        for s in ("query", "key", "value"):
            w[p + f"attention.attention.{s}.weight"] = rnd(D, D, std=0.16)
            if spec["qkv_bias"]:
                w[p + f"attention.attention.{s}.bias"] = rnd(D)
        w[p + "attention.output.dense.weight"], w[p + "attention.output.dense.bias"] = rnd(D, D), rnd(D)
        w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"] = rnd(I, D), rnd(I)
        w[p + "output.dense.weight"], w[p + "output.dense.bias"] = rnd(D, I), rnd(D)
        for ln in ("layernorm_before", "layernorm_after"):
            w[p + ln + ".weight"], w[p + ln + ".bias"] = rnd(D, mean=1.0), rnd(D)
    w[pre + "layernorm.weight"], w[pre + "layernorm.bias"] = rnd(D, mean=1.0), rnd(D)
    heads = ["cls_classifier", "distillation_classifier"] \
        if spec["arch"] == "DeiTForImageClassificationWithTeacher" else ["classifier"]
    for h in heads:
        w[h + ".weight"], w[h + ".bias"] = rnd(K, D, std=0.32), rnd(K)
    return w


# ---- preprocessing: the slow image processors, Pillow 9.4 ----

def output_sizes(pp, image_size, width, height):
    """((resize w, h) or None, (crop h, w) or None) from a preprocessor_config.json dict, for an
    image of width x height (image_size: the model's, when the config has no size)."""
    resize = None
    name = pp.get("image_processor_type") or pp.get("feature_extractor_type") or ""
    if pp.get("do_resize", True):
        size = pp.get("size", image_size)
        if isinstance(size, int) and name.startswith(("CLIP", "Bit")):
            size = {"shortest_edge": size}  # get_size_dict(default_to_square=False)
        if isinstance(size, int):
            resize = (size, size)
        elif "shortest_edge" in size:
            s = size["shortest_edge"]
            short, long = min(width, height), max(width, height)
            other = int(s * long / short)
            resize = (s, other) if width <= height else (other, s)
        else:
            resize = (size["width"], size["height"])
    crop = None
    if pp.get("do_center_crop", False):
        c = pp["crop_size"]
        crop = (c, c) if isinstance(c, int) else (c["height"], c["width"])
    return resize, crop


def center_crop(a, h, w):
    """HF's center_crop on an HWC array: top = (H - h) // 2, left = (W - w) // 2, zeros outside."""
    H, W = a.shape[:2]
    out = np.zeros((h, w) + a.shape[2:], a.dtype)
    top, left = (H - h) // 2, (W - w) // 2
    y0, x0 = max(top, 0), max(left, 0)
    y1, x1 = min(top + h, H), min(left + w, W)
    out[y0 - top:y1 - top, x0 - left:x1 - left] = a[y0:y1, x0:x1]
    return out


def preprocess(path, pp, image_size=224, resize=None, crop=None, float32_rescale=False):
    """Image.open(path).convert("RGB"), then the processor's resize (uint8, Pillow,
    reducing_gap=None), center crop, x * rescale_factor in float64 cast to float32 (HF's rescale),
    (x - mean) / std in float32: float32 torch [3, H, W]. resize (w, h) and crop (h, w) override
    the config's (vit --size N). float32_rescale: float32(x) * float32(factor) instead, the
    variant ../shared's goldens were made with (for vit_reference.py --check only)."""
    with warnings.catch_warnings():  # a palette with tRNS: Pillow suggests RGBA; RGB it is
        warnings.filterwarnings("ignore", "Palette images with Transparency")
        im = Image.open(path).convert("RGB")
    r, c = output_sizes(pp, image_size, *im.size)
    r, c = resize or r, crop or c
    if r and r != im.size:
        im = im.resize(r, pp.get("resample", 2), reducing_gap=None)
    a = np.asarray(im)
    if c:
        a = center_crop(a, *c)
    x = a.astype(np.float32)
    if pp.get("do_rescale", True) and float32_rescale:
        x = a.astype(np.float32) * np.float32(pp.get("rescale_factor", 1 / 255))
    elif pp.get("do_rescale", True):
        x = (a.astype(np.float64) * pp.get("rescale_factor", 1 / 255)).astype(np.float32)
    if pp.get("do_normalize", True):
        x = (x - np.array(pp.get("image_mean", [0.5] * 3), np.float32)) / \
            np.array(pp.get("image_std", [0.5] * 3), np.float32)
    return torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1)))


# ---- the forward (eval mode: dropout is the identity) ----

ACTIVATIONS = {"gelu": F.gelu, "relu": F.relu,
               "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
               "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh")}


def prefix_of(w):
    return "deit." if any(k.startswith("deit.") for k in w) else \
        "vit." if any(k.startswith("vit.") for k in w) else ""


def position_embeddings(w, cfg, height, width=None):
    """interpolate_pos_encoding: the special rows kept, the patch grid [n, n, D] resized to
    [height/P, width/P, D] by F.interpolate(size=..., mode="bicubic", align_corners=False) when
    the input is not the model's image_size (an int, or [height, width]: a non-square model runs
    at its own size only, as in transformers, whose interpolation takes a square grid)."""
    pre = prefix_of(w)
    pos = w[pre + "embeddings.position_embeddings"]
    special = 2 if pre + "embeddings.distillation_token" in w else 1
    size, P = cfg["image_size"], cfg["patch_size"]
    nh, nw = (size[0] // P, size[1] // P) if isinstance(size, list) else (size // P, size // P)
    width = height if width is None else width
    mh, mw = height // P, width // P
    if (mh, mw) == (nh, nw):
        return pos
    assert nh == nw, "transformers interpolates a square grid only"
    D = pos.shape[-1]
    grid = pos[:, special:].reshape(1, nh, nw, D).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=(mh, mw), mode="bicubic", align_corners=False)
    return torch.cat([pos[:, :special], grid.permute(0, 2, 3, 1).reshape(1, mh * mw, D)], dim=1)


def forward(w, cfg, pixels, attentions=False):
    """pixels [B, 3, S, S] (S: image_size, or another multiple of the patch) -> dict with
    "logits" [B, labels] (a DeiT teacher's: the mean of its two heads, also "cls_logits" and
    "distillation_logits"), "states" (hidden states [B, T, D] after "embeddings", each
    "layer.L" and the final "layernorm"), "special" (1, or 2 for a DeiT) and, when asked,
    "attentions": each layer's softmax weights [B, H, T, T] (kept for backward when pixels
    require grad). Weights without a head (a VisionEncoderDecoder's encoder, names without
    "encoder.") give no logits: the last hidden state is states["layernorm"]. Computes in
    pixels' dtype; weights are converted to it."""
    dt = pixels.dtype
    W = {k: v.to(dt) for k, v in w.items()}
    pre = prefix_of(W)
    D, H, eps, P = cfg["hidden_size"], cfg["num_attention_heads"], cfg.get("layer_norm_eps", 1e-12), \
        cfg["patch_size"]
    act = ACTIVATIONS[cfg.get("hidden_act", "gelu")]
    ln = lambda x, p: F.layer_norm(x, (D,), W[p + ".weight"], W[p + ".bias"], eps)
    lin = lambda x, p: F.linear(x, W[p + ".weight"], W.get(p + ".bias"))
    x = F.conv2d(pixels, W[pre + "embeddings.patch_embeddings.projection.weight"],
                 W[pre + "embeddings.patch_embeddings.projection.bias"], stride=P)
    x = x.flatten(2).transpose(1, 2)
    B = x.shape[0]
    special = [W[pre + "embeddings.cls_token"]]
    if pre + "embeddings.distillation_token" in W:
        special.append(W[pre + "embeddings.distillation_token"])
    h = torch.cat([t.expand(B, -1, -1) for t in special] + [x], dim=1)
    h = h + position_embeddings(W, cfg, pixels.shape[-2], pixels.shape[-1])
    states, attns = {"embeddings": h}, []
    T, dh = h.shape[1], D // H
    for l in range(cfg["num_hidden_layers"]):
        p = f"{pre}encoder.layer.{l}."
        a = ln(h, p + "layernorm_before")
        q, k, v = (lin(a, p + f"attention.attention.{s}").view(B, T, H, dh).transpose(1, 2)
                   for s in ("query", "key", "value"))
        probs = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * dh ** -0.5, dim=-1)
        if attentions:
            if probs.requires_grad:
                probs.retain_grad()
            attns.append(probs)
        ctx = torch.matmul(probs, v).transpose(1, 2).reshape(B, T, D)
        h = lin(ctx, p + "attention.output.dense") + h
        h = lin(act(lin(ln(h, p + "layernorm_after"), p + "intermediate.dense")), p + "output.dense") + h
        states[f"layer.{l}"] = h
    h = ln(h, pre + "layernorm")
    states["layernorm"] = h
    out = {"states": states, "special": len(special)}
    if attentions:
        out["attentions"] = attns
    if "cls_classifier.weight" in W:
        cls, dist = lin(h[:, 0], "cls_classifier"), lin(h[:, 1], "distillation_classifier")
        out.update(logits=(cls + dist) / 2, cls_logits=cls, distillation_logits=dist)
    elif "classifier.weight" in W:
        out["logits"] = lin(h[:, 0], "classifier")  # a DeiT's distillation token unused
    return out


# ---- goldens (docs/SPEC.md §9) ----

def goldens(w, cfg, pp, image_dir, images, resize=None, crop=None, stages=True):
    """Preprocesses each image, runs the float64 forward on its float32 pixels and returns
    (tensors, golden.json entries, worst |float32 forward - float64| logit, smallest gap between
    the top two float64 logits). Tensors per image: `<image>/pixels`, `<image>/logits` (and a
    teacher's `cls_logits`, `distillation_logits`); for the first image, when stages, every
    hidden state (`embeddings`, `layer.L`, `layernorm`)."""
    labels = [cfg["id2label"][str(i)] for i in range(len(cfg["id2label"]))]
    tensors, listing, worst32, gap = {}, [], 0.0, float("inf")
    for i, name in enumerate(images):
        pixels = preprocess(f"{image_dir}/{name}", pp, cfg["image_size"], resize, crop)
        out = forward(w, cfg, pixels[None].double())
        logits = out["logits"][0]
        logits32 = forward(w, cfg, pixels[None])["logits"][0]
        worst32 = max(worst32, (logits32.double() - logits).abs().max().item())
        top2 = torch.topk(logits, 2).values
        gap = min(gap, (top2[0] - top2[1]).item())
        tensors[f"{name}/pixels"] = pixels
        tensors[f"{name}/logits"] = logits
        for k in ("cls_logits", "distillation_logits"):
            if k in out:
                tensors[f"{name}/{k}"] = out[k][0]
        if i == 0 and stages:
            for stage, h in out["states"].items():
                tensors[f"{name}/{stage}"] = h[0]
        probs = torch.softmax(logits, -1)
        top = torch.argsort(probs, descending=True)[:5].tolist()
        listing.append({"image": name, "top5": top, "top5_labels": [labels[j] for j in top],
                        "top5_probs": [probs[j].item() for j in top]})
    return tensors, listing, worst32, gap


def write_model(out_dir, spec, preprocessor, w):
    """config.json, preprocessor_config.json and model.safetensors of a random model."""
    with open(f"{out_dir}/config.json", "w") as f:
        json.dump(config_json(spec), f, indent=2)
    with open(f"{out_dir}/preprocessor_config.json", "w") as f:
        json.dump(preprocessor, f, indent=2)
    write_safetensors(f"{out_dir}/model.safetensors", w)


# ---- files of a model folder ----

def write_json(path, obj):
    """json.dump(indent=2) and a newline, as save_pretrained writes config.json."""
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def write_folder(out, config, tensors, golden, golden_meta, source=None, files=()):
    """out/config.json, model.safetensors ({"format": "pt"}), golden.safetensors (golden_meta)
    and `files` copied from the folder `source`."""
    os.makedirs(out, exist_ok=True)
    write_json(os.path.join(out, "config.json"), config)
    for file in files:
        shutil.copy(os.path.join(source, file), out)
    write_safetensors(os.path.join(out, "model.safetensors"), tensors, {"format": "pt"})
    write_safetensors(os.path.join(out, "golden.safetensors"), golden, golden_meta)


# ---- float64 layers by name (weights: save_pretrained's names -> tensors) ----

def layer_norm(w, name, x, eps):
    return F.layer_norm(x, x.shape[-1:], w[name + ".weight"], w[name + ".bias"], eps)


def linear(w, name, x):
    return F.linear(x, w[name + ".weight"], w.get(name + ".bias"))


def attention(q, k, v, heads):
    """Multi-head scaled dot-product attention, no mask: q [B, Tq, D], k and v [B, Tk, D]."""
    B, Tq, D = q.shape
    hd = D // heads
    q = q.view(B, Tq, heads, hd).transpose(1, 2)
    k = k.view(B, -1, heads, hd).transpose(1, 2)
    v = v.view(B, -1, heads, hd).transpose(1, 2)
    scores = q @ k.transpose(-1, -2) * hd ** -0.5
    return (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(B, Tq, D)


# ---- BERT (modeling_bert.py, eval mode: post-LN, exact GELU) ----

def bert_forward(w, prefix, cfg, ids):
    """BertModel on one text of token ids (token type 0): (last hidden state [T, D],
    pooler_output [D], tanh of pooler.dense on [CLS]). prefix: "bert." or "" (a base model);
    cfg: config.json's hidden_size, num_attention_heads, num_hidden_layers, layer_norm_eps."""
    D, H, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"]
    ln = lambda x, p: F.layer_norm(x, (D,), w[p + ".weight"], w[p + ".bias"], eps)
    lin = lambda x, p: F.linear(x, w[p + ".weight"], w[p + ".bias"])
    T, dh = len(ids), D // H
    e = prefix + "embeddings."
    h = w[e + "word_embeddings.weight"][ids] + w[e + "position_embeddings.weight"][:T] + \
        w[e + "token_type_embeddings.weight"][0]
    h = ln(h, e + "LayerNorm")
    for l in range(cfg["num_hidden_layers"]):
        p = f"{prefix}encoder.layer.{l}."
        q, k, v = (lin(h, p + f"attention.self.{s}").view(T, H, dh).transpose(0, 1)
                   for s in ("query", "key", "value"))
        probs = torch.softmax(q @ k.transpose(-1, -2) * dh ** -0.5, dim=-1)
        ctx = (probs @ v).transpose(0, 1).reshape(T, D)
        h = ln(lin(ctx, p + "attention.output.dense") + h, p + "attention.output.LayerNorm")
        h = ln(lin(F.gelu(lin(h, p + "intermediate.dense")), p + "output.dense") + h,
               p + "output.LayerNorm")
    return h, torch.tanh(lin(h[0], prefix + "pooler.dense"))


# ---- CLIP and SigLIP image towers (modeling_clip.py, modeling_siglip.py; tools/clip_reference.py
# has the same forwards, but importing it needs regex and protobuf, which Debian's python3 lacks)

def clip_tower_layers(w, prefix, cfg, h, act):
    """The pre-LN encoder layers of a CLIP or SigLIP tower; cfg: its config.json section."""
    eps = cfg["layer_norm_eps"]
    for i in range(cfg["num_hidden_layers"]):
        p = f"{prefix}.encoder.layers.{i}."
        x = layer_norm(w, p + "layer_norm1", h, eps)
        a = attention(linear(w, p + "self_attn.q_proj", x), linear(w, p + "self_attn.k_proj", x),
                      linear(w, p + "self_attn.v_proj", x), cfg["num_attention_heads"])
        h = h + linear(w, p + "self_attn.out_proj", a)
        x = layer_norm(w, p + "layer_norm2", h, eps)
        h = h + linear(w, p + "mlp.fc2", act(linear(w, p + "mlp.fc1", x)))
    return h


def quick_gelu(x):
    return x * torch.sigmoid(1.702 * x)


def tanh_gelu(x):
    return F.gelu(x, approximate="tanh")


def clip_vision_pooler(w, cfg, pixels):
    """CLIPVisionTransformer: embeddings, pre_layrnorm, the encoder, post_layernorm at CLS."""
    assert cfg["hidden_act"] == "quick_gelu"
    eps = cfg["layer_norm_eps"]
    x = F.conv2d(pixels, w["vision_model.embeddings.patch_embedding.weight"],
                 stride=cfg["patch_size"])
    h = x.flatten(2).transpose(1, 2)
    cls = w["vision_model.embeddings.class_embedding"].expand(h.shape[0], 1, -1)
    h = torch.cat([cls, h], 1) + w["vision_model.embeddings.position_embedding.weight"]
    h = layer_norm(w, "vision_model.pre_layrnorm", h, eps)
    h = clip_tower_layers(w, "vision_model", cfg, h, quick_gelu)
    return layer_norm(w, "vision_model.post_layernorm", h[:, 0], eps)


def siglip_vision_hidden(w, cfg, pixels):
    """SiglipVisionTransformer's last_hidden_state: post_layernorm(encoder(embeddings))."""
    assert cfg["hidden_act"] == "gelu_pytorch_tanh"
    x = F.conv2d(pixels, w["vision_model.embeddings.patch_embedding.weight"],
                 w["vision_model.embeddings.patch_embedding.bias"], stride=cfg["patch_size"])
    h = x.flatten(2).transpose(1, 2) + w["vision_model.embeddings.position_embedding.weight"]
    h = clip_tower_layers(w, "vision_model", cfg, h, tanh_gelu)
    return layer_norm(w, "vision_model.post_layernorm", h, cfg["layer_norm_eps"])


def siglip_pool(w, cfg, h):
    """SiglipMultiheadAttentionPoolingHead: the probe attends to every token."""
    p, D, eps = "vision_model.head.", cfg["hidden_size"], cfg["layer_norm_eps"]
    wq, wk, wv = w[p + "attention.in_proj_weight"].split(D)
    bq, bk, bv = w[p + "attention.in_proj_bias"].split(D)
    probe = w[p + "probe"].expand(h.shape[0], 1, D)
    a = attention(F.linear(probe, wq, bq), F.linear(h, wk, bk), F.linear(h, wv, bv),
                  cfg["num_attention_heads"])
    a = linear(w, p + "attention.out_proj", a)
    x = layer_norm(w, p + "layernorm", a, eps)
    return (a + linear(w, p + "mlp.fc2", tanh_gelu(linear(w, p + "mlp.fc1", x))))[:, 0]
