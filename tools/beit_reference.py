#!/usr/bin/python3
"""Writes the BEiT and data2vec-vision micro models and their float64 goldens (run by hand; the
project never runs it), and is the BEiT float64 forward other tools import.

Random-weight models in exact Hugging Face layout under tests/data/, with goldens from a float64
forward written here from transformers' code (no transformers import):

  beit-micro             BeitForImageClassification ("beit."): 32 x 32, patch 8 (4 x 4 window),
                         hidden 32, 2 heads of 16, 2 layers, intermediate 96, a relative position
                         bias per layer (use_relative_position_bias), no absolute positions, layer
                         scale (lambda_1, lambda_2), mean pooling (the pooler's LayerNorm on the
                         mean of the patch tokens, no final layernorm), 5 labels; BeitImageProcessor
                         as save_pretrained writes it today (resize 36 x 36 bicubic, center crop 32,
                         mean = std = 0.5)
  beit-micro-shared      BeitForImageClassification: 32 x 32, patch 8, hidden 48, 3 heads of 16,
                         2 layers, intermediate 192, one shared relative position bias
                         (use_shared_relative_position_bias, in encoder.relative_position_bias),
                         absolute position embeddings, layer_scale_init_value 0 (no lambdas), CLS
                         pooling (use_mean_pooling false: the final layernorm, then token 0),
                         4 labels; the Hub's old BeitFeatureExtractor form (size 32 as an int,
                         bilinear, no crop, reduce_labels)
  data2vec-vision-micro  Data2VecVisionForImageClassification ("data2vec_vision."): 48 x 48,
                         patch 16 (3 x 3 window), hidden 32, 2 heads, 2 layers, intermediate 128,
                         per-layer relative bias, layer scale, mean pooling, 3 labels, the
                         BeitFeatureExtractor form (size 48, bilinear, no crop); model.safetensors
                         also holds each layer's relative_position_index buffer (I64 [T, T]) as the
                         Hub's converted checkpoints do (transformers ignores it on load:
                         _keys_to_ignore_on_load_unexpected), so a loader must skip it

Read from huggingface/transformers with the code index: beit/modeling_beit.py (0004a3c2, the 4.4x
form: the relative bias under attention.attention, relative_position_indices cached per window;
and modular_beit.py 1894291b, the 2026 rewrite: same numbers, other module names),
beit/configuration_beit.py, beit/image_processing_beit.py (06053b84),
data2vec/modeling_data2vec_vision.py (004edfe2, "Copied from" BEiT) and
configuration_data2vec_vision.py.
The names are the 4.x ones, which every Hub checkpoint carries:

  embeddings  cls_token [1, 1, D]; position_embeddings [1, N + 1, D] when
              use_absolute_position_embeddings; patch_embeddings.projection [D, 3, P, P] + bias;
              mask_token only with use_mask_token (pre-training; absent here)
  layer L     layernorm_before, attention.attention.query (weight + bias), .key (weight only: no
              k bias), .value (weight + bias) [the original q_bias / v_bias, renamed by the
              conversion], attention.attention.relative_position_bias.relative_position_bias_table
              [(2 Wh - 1)(2 Ww - 1) + 3, H] when use_relative_position_bias,
              attention.output.dense, layernorm_after, intermediate.dense, output.dense, lambda_1
              and lambda_2 [D] when layer_scale_init_value > 0
  shared      encoder.relative_position_bias.relative_position_bias_table when
              use_shared_relative_position_bias (added to every layer's scores)
  head        use_mean_pooling: pooler.layernorm (and no `layernorm`); else `layernorm` (all
              tokens) and the pooler takes token 0; classifier [K, D] on the pooled vector

The forward (eval): h = [CLS, patches] (+ the absolute table); per layer
  scores = (q k^T) / sqrt(d) + bias_layer + bias_shared, h += lambda_1 * dense(softmax(scores) v),
  h += lambda_2 * output.dense(gelu(intermediate.dense(layernorm_after(h))));
then the head above. last_hidden_state is h after `layernorm` (mean pooling: h itself).

The relative bias for a window (Wh, Ww) = (H/P, W/P) of the input:
  index: for patches i = (yi, xi), j = (yj, xj) (row-major, tokens 1..N):
         (yi - yj + Wh - 1) * (2 Ww - 1) + (xi - xj + Ww - 1); row 0 (CLS query) = R - 3, column 0
         (CLS key) = R - 2, [0, 0] = R - 1, with R the table's rows for that window
  table: its first (2 n - 1)^2 rows (n the config's window), seen as a [2n - 1, 2n - 1] grid per
         head, go through F.interpolate(size=(2 Wh - 1, 2 Ww - 1), mode="bilinear",
         align_corners=False) (identity at the config's size), the 3 CLS rows kept; then
         bias[h, a, b] = table[index[a, b], h]. This is every 4.x release since BEiT took other
         input sizes (the MiDaS 3.1 arbitrary-window form, then interpolate_pos_encoding, PR
         #31053, mid-2024) and the 2026 rewrite; earlier releases built the index once for the
         config's window and could not run another size. interpolate_pos_encoding=True adds a
         bilinear resize of the [T, T] bias to [T, T] (an identity).
  absolute positions at another size: the patch rows bicubic (size form, align_corners False, no
         antialias, as ViT), CLS row kept. In the 4.4x file this happens inside the patch
         embedding (always, an identity at the config's size) and interpolate_pos_encoding=True
         there even breaks (it adds the whole table to the CLS token); the rewrite does it as ViT;
         the numbers of the default call are the same.
The float64 reference resizes in float64 (interp_reference.py, checked against F.interpolate).

BeitImageProcessor (slow, Pillow 9.4): resize to size (an int N means N x N) with `resample`
(3 bicubic by default; the Hub's BEiT configs say 2), center crop when do_center_crop, x / 255
(float64 -> float32), (x - mean) / std with mean = std = 0.5; do_reduce_labels only touches
segmentation maps. At another size N: tools/dinov2_reference.py preprocessor_at (vit's --size).

Files per folder and the goldens are as tools/dinov2_reference.py writes them (golden.safetensors
at the processor's size, golden-size<N>.safetensors at the spec's other size; per image pixels,
last_hidden_state [T, D], pooler_output [D], logits [K], cls_attention [H, T] of the last layer;
the first image's stages embeddings and layer.L), plus once per file the bias each layer adds at
that size: relative_position_bias.L [H, T, T] (per layer) and relative_position_bias.shared, and
position_embeddings [1 + m*m, D] when absolute. golden.json as dinov2_reference's.

usage: /usr/bin/python3 tools/beit_reference.py
"""
import json
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dinov2_reference as dv  # noqa: E402
import hf_reference as ref  # noqa: E402
import interp_reference as interp  # noqa: E402

ROOT, IMAGE_DIR, IMAGES = dv.ROOT, dv.IMAGE_DIR, dv.IMAGES
HALF = [0.5, 0.5, 0.5]


def beit_processor(resize, crop):
    return {"crop_size": {"height": crop, "width": crop}, "do_center_crop": True,
            "do_normalize": True, "do_reduce_labels": False, "do_rescale": True,
            "do_resize": True, "image_mean": HALF, "image_processor_type": "BeitImageProcessor",
            "image_std": HALF, "resample": 3, "rescale_factor": 1 / 255,
            "size": {"height": resize, "width": resize}}


def legacy_processor(size):
    """The BeitFeatureExtractor form the Hub's BEiT and data2vec-vision folders carry."""
    return {"crop_size": size, "do_center_crop": False, "do_normalize": True, "do_resize": True,
            "feature_extractor_type": "BeitFeatureExtractor", "image_mean": HALF,
            "image_std": HALF, "reduce_labels": False, "resample": 2, "size": size}


MODELS = {
    "beit-micro": dict(
        kind="beit", arch="BeitForImageClassification", seed=41, image=32, patch=8, hidden=32,
        heads=2, layers=2, mlp=96, rel=True, shared=False, absolute=False, layer_scale=0.1,
        mean_pool=True, eps=1e-12, labels=["cat", "dog", "bird", "fish", "frog"],
        preprocessor=beit_processor(36, 32), other=48, index_buffers=False),
    "beit-micro-shared": dict(
        kind="beit", arch="BeitForImageClassification", seed=42, image=32, patch=8, hidden=48,
        heads=3, layers=2, mlp=192, rel=False, shared=True, absolute=True, layer_scale=0.0,
        mean_pool=False, eps=1e-12, labels=["tench", "goldfish", "shark", "ray"],
        preprocessor=legacy_processor(32), other=24, index_buffers=False),
    "data2vec-vision-micro": dict(
        kind="data2vec-vision", arch="Data2VecVisionForImageClassification", seed=43, image=48,
        patch=16, hidden=32, heads=2, layers=2, mlp=128, rel=True, shared=False, absolute=False,
        layer_scale=0.1, mean_pool=True, eps=1e-12, labels=["plane", "car", "ship"],
        preprocessor=legacy_processor(48), other=64, index_buffers=True),
}


def prefix_of(spec):
    return {"beit": "beit.", "data2vec-vision": "data2vec_vision."}[spec["kind"]]


def config_json(spec):
    L = spec["layers"]
    cfg = {"architectures": [spec["arch"]], "model_type": spec["kind"],
           "attention_probs_dropout_prob": 0.0, "auxiliary_channels": 256,
           "auxiliary_concat_input": False, "auxiliary_loss_weight": 0.4,
           "auxiliary_num_convs": 1, "drop_path_rate": 0.1, "hidden_act": "gelu",
           "hidden_dropout_prob": 0.0, "hidden_size": spec["hidden"], "image_size": spec["image"],
           "initializer_range": 0.02, "intermediate_size": spec["mlp"],
           "layer_norm_eps": spec["eps"], "layer_scale_init_value": spec["layer_scale"],
           "num_attention_heads": spec["heads"], "num_channels": 3, "num_hidden_layers": L,
           "patch_size": spec["patch"], "pool_scales": [1, 2, 3, 6],
           "semantic_loss_ignore_index": 255, "torch_dtype": "float32",
           "transformers_version": dv.TRANSFORMERS_VERSION,
           "use_absolute_position_embeddings": spec["absolute"], "use_auxiliary_head": True,
           "use_mask_token": False, "use_mean_pooling": spec["mean_pool"],
           "use_relative_position_bias": spec["rel"],
           "use_shared_relative_position_bias": spec["shared"]}
    if spec["kind"] == "beit":
        cfg.update(add_fpn=False, out_features=[f"stage{L}"], out_indices=[L],
                   reshape_hidden_states=True, semantic_out_indices=[3, 5, 7, 11],
                   stage_names=["stem"] + [f"stage{i}" for i in range(1, L + 1)],
                   vocab_size=8192)
    else:
        cfg["out_indices"] = [3, 5, 7, 11]
    cfg.update(dv.labels_fields(spec["labels"]))
    return cfg


def table_rows(n):
    return (2 * n - 1) ** 2 + 3


def random_weights(spec):
    rnd, w, pre = dv.Draw(spec["seed"]), {}, prefix_of(spec)
    D, P, H, n = spec["hidden"], spec["patch"], spec["heads"], spec["image"] // spec["patch"]
    e = pre + "embeddings."
    w[e + "cls_token"] = rnd(1, 1, D, std=0.5)
    if spec["absolute"]:
        w[e + "position_embeddings"] = rnd(1, n * n + 1, D, std=0.4)
    w[e + "patch_embeddings.projection.weight"] = rnd(D, 3, P, P, std=2.0 * (3 * P * P) ** -0.5)
    w[e + "patch_embeddings.projection.bias"] = rnd(D, std=0.1)
    if spec["shared"]:
        w[pre + "encoder.relative_position_bias.relative_position_bias_table"] = rnd(
            table_rows(n), H, std=1.0)
    for l in range(spec["layers"]):
        p = f"{pre}encoder.layer.{l}."
        a = p + "attention.attention."
        rnd.layer_norm(w, p + "layernorm_before", D)
        rnd.linear(w, a + "query", D, D, gain=1.6)
        rnd.linear(w, a + "key", D, D, gain=1.6, bias=False)
        rnd.linear(w, a + "value", D, D)
        if spec["rel"]:
            w[a + "relative_position_bias.relative_position_bias_table"] = rnd(
                table_rows(n), H, std=1.0)
        rnd.linear(w, p + "attention.output.dense", D, D)
        rnd.layer_norm(w, p + "layernorm_after", D)
        rnd.linear(w, p + "intermediate.dense", spec["mlp"], D, gain=1.5)
        rnd.linear(w, p + "output.dense", D, spec["mlp"])
        if spec["layer_scale"] > 0:
            w[p + "lambda_1"] = rnd(D, std=0.25, mean=0.6)
            w[p + "lambda_2"] = rnd(D, std=0.25, mean=0.6)
    rnd.layer_norm(w, pre + ("pooler.layernorm" if spec["mean_pool"] else "layernorm"), D)
    rnd.linear(w, "classifier", len(spec["labels"]), D, gain=3.0)
    return w


def index_buffers(spec):
    """The relative_position_index buffers old conversions saved (int64, the config's window)."""
    if not spec["index_buffers"]:
        return {}
    n, pre = spec["image"] // spec["patch"], prefix_of(spec)
    idx = relative_position_index(n, n).astype(np.int64)
    names = [f"{pre}encoder.layer.{l}.attention.attention.relative_position_bias."
             "relative_position_index" for l in range(spec["layers"])] if spec["rel"] else []
    if spec["shared"]:
        names.append(pre + "encoder.relative_position_bias.relative_position_index")
    return {k: idx for k in names}


def write_safetensors(path, f32, i64):
    """hf_reference's layout (names sorted, header padded with spaces to 8 bytes) for F32 tensors
    and int64 arrays stored I64."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    items = {k: ("F32", np.ascontiguousarray(v.detach().to(torch.float32).numpy(), "<f4"))
             for k, v in f32.items()}
    items.update({k: ("I64", np.ascontiguousarray(v, "<i8")) for k, v in i64.items()})
    for name in sorted(items):
        dtype, a = items[name]
        b = a.tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


# ---- the relative position bias ----

def relative_position_index(wh, ww):
    """[wh*ww + 1, wh*ww + 1] from the definition, pair by pair."""
    R = (2 * wh - 1) * (2 * ww - 1) + 3
    N = wh * ww
    idx = np.zeros((N + 1, N + 1), np.int64)
    for i in range(N):
        for j in range(N):
            dy, dx = i // ww - j // ww, i % ww - j % ww
            idx[1 + i, 1 + j] = (dy + wh - 1) * (2 * ww - 1) + (dx + ww - 1)
    idx[0, :], idx[:, 0], idx[0, 0] = R - 3, R - 2, R - 1
    return idx


def check_index_against_transformers_form():
    """The same index built as BeitRelativePositionBias.generate_relative_position_index builds
    it (coordinate differences, shifted and folded), for square and oblong windows."""
    for wh, ww in [(1, 1), (2, 2), (3, 3), (4, 4), (2, 5), (6, 3)]:
        coords = np.stack(np.meshgrid(np.arange(wh), np.arange(ww), indexing="ij")).reshape(2, -1)
        rel = (coords[:, :, None] - coords[:, None, :]).transpose(1, 2, 0).copy()
        rel[:, :, 0] += wh - 1
        rel[:, :, 1] += ww - 1
        rel[:, :, 0] *= 2 * ww - 1
        R = (2 * wh - 1) * (2 * ww - 1) + 3
        want = np.zeros((wh * ww + 1,) * 2, np.int64)
        want[1:, 1:] = rel.sum(-1)
        want[0, 0:] = R - 3
        want[0:, 0] = R - 2
        want[0, 0] = R - 1
        assert (relative_position_index(wh, ww) == want).all(), (wh, ww)


def relative_bias(table, n, m, dtype=torch.float64):
    """The [H, T, T] bias of a table made for an n x n window, at an m x m window. float64:
    interp_reference's bilinear; float32: F.interpolate as transformers (even at m == n, an
    identity)."""
    H, old, new = table.shape[1], 2 * n - 1, 2 * m - 1
    grid = table[:-3].reshape(old, old, H).permute(2, 0, 1)
    if dtype == torch.float64:
        sub = torch.from_numpy(interp.resize(grid.double(), new, new, "bilinear"))
    else:
        sub = interp.torch_resize(grid.float(), new, new, "bilinear")
    sub = sub.to(dtype).permute(1, 2, 0).reshape(new * new, H)
    full = torch.cat([sub, table[-3:].to(dtype)])
    idx = torch.from_numpy(relative_position_index(m, m))
    T = m * m + 1
    return full[idx.reshape(-1)].reshape(T, T, H).permute(2, 0, 1)


# ---- the forward ----

def forward(w, spec, pixels):
    """pixels [B, 3, S, S] -> dict as dinov2_reference.forward's, plus biases {"L" | "shared":
    [H, T, T]}. Computes in pixels' dtype."""
    dt = pixels.dtype
    W = {k: v.to(dt) for k, v in w.items()}
    pre, D, H, P = prefix_of(spec), spec["hidden"], spec["heads"], spec["patch"]
    n, m = spec["image"] // P, pixels.shape[-1] // P
    e, eps = pre + "embeddings.", spec["eps"]
    ln = lambda x, p: F.layer_norm(x, (D,), W[p + ".weight"], W[p + ".bias"], eps)
    lin = lambda x, p: F.linear(x, W[p + ".weight"], W.get(p + ".bias"))
    x = F.conv2d(pixels, W[e + "patch_embeddings.projection.weight"],
                 W[e + "patch_embeddings.projection.bias"], stride=P).flatten(2).transpose(1, 2)
    B = x.shape[0]
    h = torch.cat([W[e + "cls_token"].expand(B, -1, -1), x], dim=1)
    out = {}
    if spec["absolute"]:
        pos = dv.position_embeddings(w[e + "position_embeddings"], n, m, "bicubic", dt)
        h = h + pos
        out["position_embeddings"] = pos[0]
    biases = {}
    if spec["shared"]:
        biases["shared"] = relative_bias(
            w[pre + "encoder.relative_position_bias.relative_position_bias_table"], n, m, dt)
    states, T, dh = {"embeddings": h}, h.shape[1], D // H
    for l in range(spec["layers"]):
        p = f"{pre}encoder.layer.{l}."
        a = p + "attention.attention."
        y = ln(h, p + "layernorm_before")
        q, k, v = (lin(y, a + s).view(B, T, H, dh).transpose(1, 2)
                   for s in ("query", "key", "value"))
        scores = q @ k.transpose(-1, -2) / dh ** 0.5
        if spec["rel"]:
            biases[str(l)] = relative_bias(
                w[a + "relative_position_bias.relative_position_bias_table"], n, m, dt)
            scores = scores + biases[str(l)]
        if spec["shared"]:
            scores = scores + biases["shared"]
        probs = torch.softmax(scores, dim=-1)
        att = lin((probs @ v).transpose(1, 2).reshape(B, T, D), p + "attention.output.dense")
        if p + "lambda_1" in W:
            att = W[p + "lambda_1"] * att
        h = h + att
        y = lin(F.gelu(lin(ln(h, p + "layernorm_after"), p + "intermediate.dense")),
                p + "output.dense")
        if p + "lambda_2" in W:
            y = W[p + "lambda_2"] * y
        h = h + y
        states[f"layer.{l}"] = h
    if spec["mean_pool"]:
        pooled = ln(h[:, 1:].mean(dim=1), pre + "pooler.layernorm")
    else:
        h = ln(h, pre + "layernorm")
        pooled = h[:, 0]
    out.update(states=states, last_hidden_state=h, pooler_output=pooled, attention=probs,
               biases=biases, logits=lin(pooled, "classifier"))
    return out


def check_against_vit():
    """With zero relative tables, no lambdas, a zero key bias... the forward is ViT's: BEiT's
    block is ViT's block. beit-micro-shared's weights (tables zeroed), renamed, through
    tools/hf_reference.py's forward give the same last hidden state and logits, at the table's size
    and interpolated up and down."""
    spec = MODELS["beit-micro-shared"]
    w = random_weights(spec)
    vit = {}
    for k, v in w.items():
        if "relative_position_bias_table" in k:
            w[k] = torch.zeros_like(v)
            continue
        vit[k.replace("beit.", "vit.", 1)] = v
        if k.endswith("attention.attention.key.weight"):
            vit[k.replace("beit.", "vit.", 1)[:-len("weight")] + "bias"] = torch.zeros(v.shape[0])
    cfg = {"hidden_size": spec["hidden"], "num_attention_heads": spec["heads"],
           "layer_norm_eps": spec["eps"], "patch_size": spec["patch"], "hidden_act": "gelu",
           "num_hidden_layers": spec["layers"], "image_size": spec["image"]}
    g, worst = torch.Generator().manual_seed(2), 0.0
    for size in (16, 24, 32, 48):
        pixels = torch.randn(2, 3, size, size, generator=g, dtype=torch.float64)
        want, got = ref.forward(vit, cfg, pixels), forward(w, spec, pixels)
        worst = max(worst, dv.max_diff(got["last_hidden_state"], want["states"]["layernorm"]),
                    dv.max_diff(got["logits"], want["logits"]))
    assert worst < 1e-12, worst
    return worst


# ---- goldens ----

def run_size(w, spec, pp, size):
    tensors, images, w32 = {}, [], {k: v.float() for k, v in w.items()}
    worst = {"last_hidden_state": 0.0, "pooler_output": 0.0, "logits": 0.0}
    for i, name in enumerate(IMAGES):
        pixels = ref.preprocess(os.path.join(IMAGE_DIR, name), pp)
        assert pixels.shape[-1] == size, (pixels.shape, size)
        out, out32 = forward(w, spec, pixels[None].double()), forward(w32, spec, pixels[None])
        tensors[f"{name}/pixels"] = pixels
        for key in worst:
            tensors[f"{name}/{key}"] = dv.f32(out[key][0])
            worst[key] = max(worst[key], dv.max_diff(out32[key][0], out[key][0]))
        tensors[f"{name}/cls_attention"] = dv.f32(out["attention"][0, :, 0, :])
        if i == 0:
            for stage, h in out["states"].items():
                tensors[f"{name}/{stage}"] = dv.f32(h[0])
        images.append(dict(image=name, **dv.top5(out["logits"][0], spec["labels"])))
    for key, b in out["biases"].items():
        tensors[f"relative_position_bias.{key}"] = dv.f32(b)
    if "position_embeddings" in out:
        tensors["position_embeddings"] = dv.f32(out["position_embeddings"])
    return tensors, {"size": size, "images": images, "float32_vs_float64_max_abs": worst}


def interpolation_note(spec, size):
    n, m = spec["image"] // spec["patch"], size // spec["patch"]
    if n == m:
        return f"none ({n} x {n} window)"
    note = (f"relative tables {2 * n - 1} x {2 * n - 1} -> {2 * m - 1} x {2 * m - 1}: "
            f"F.interpolate(size=({2 * m - 1}, {2 * m - 1}), bilinear, align_corners=False), "
            f"index for the {m} x {m} window")
    if spec["absolute"]:
        note += f"; positions {n} x {n} -> {m} x {m} bicubic (size form, no antialias)"
    return note


def write_model(name, spec):
    out_dir = os.path.join(ROOT, "tests", "data", name)
    os.makedirs(out_dir, exist_ok=True)
    w, buffers = random_weights(spec), index_buffers(spec)
    dv.write_config(os.path.join(out_dir, "config.json"), config_json(spec))
    dv.write_config(os.path.join(out_dir, "preprocessor_config.json"), spec["preprocessor"])
    write_safetensors(os.path.join(out_dir, "model.safetensors"), w, buffers)
    native = dv.processor_size(spec["preprocessor"])
    assert native == spec["image"]
    runs = []
    for size, file in ((native, "golden.safetensors"),
                       (spec["other"], f"golden-size{spec['other']}.safetensors")):
        pp = spec["preprocessor"] if size == native else dv.preprocessor_at(spec["preprocessor"],
                                                                            size)
        tensors, entry = run_size(w, spec, pp, size)
        ref.write_safetensors(os.path.join(out_dir, file), tensors)
        entry.update(file=file, preprocessor=pp if size != native else "preprocessor_config.json",
                     interpolation=interpolation_note(spec, size))
        runs.append(entry)
        gaps = [i["top5_probs"][0] - i["top5_probs"][1] for i in entry["images"]]
        print(f"{name} at {size}: float32 vs float64 {entry['float32_vs_float64_max_abs']}, "
              f"smallest top-2 probability gap {min(gaps):.3f}")
    golden = {"model": name, "class": spec["arch"], "image_size": spec["image"],
              "patch": spec["patch"], "tokens": "CLS, patches row by row",
              "relative_bias": {"per_layer": spec["rel"], "shared": spec["shared"],
                                "table_rows": table_rows(spec["image"] // spec["patch"])},
              "absolute_positions": spec["absolute"], "layer_scale": spec["layer_scale"] > 0,
              "pooling": "mean of patch tokens, then pooler.layernorm" if spec["mean_pool"]
              else "layernorm, then token 0", "runs": runs,
              "model_tensors": dv.tensor_listing(w, buffers),
              "model_tensors_i64": sorted(buffers)}
    with open(os.path.join(out_dir, "golden.json"), "w") as f:
        json.dump(golden, f, indent=1)


if __name__ == "__main__":
    torch.set_num_threads(1)
    print(f"interp_reference matches F.interpolate (worst {interp.check():.2g})")
    check_index_against_transformers_form()
    print("relative_position_index: the definition and transformers' construction agree")
    print(f"with zero tables and no lambdas the forward is hf_reference's ViT "
          f"(worst {check_against_vit():.2g})")
    for model_name, model_spec in MODELS.items():
        write_model(model_name, model_spec)
