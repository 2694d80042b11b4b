#!/usr/bin/python3
"""Writes tests/data/micro-a-size48.json: float64 PyTorch logits of ../shared/models/micro-a run at
48x48 instead of its 32x32 (position grid 4x4 -> 6x6 through F.interpolate bicubic, as Hugging
Face's interpolate_pos_encoding), for a few golden images. Preprocessing: Pillow bilinear resize
to 48x48, x/255, (x-0.5)/0.5. Only needed to regenerate the test data; the project never runs it.
Usage: tools/gen_size_golden.py ../shared > tests/data/micro-a-size48.json"""
import json, struct, sys
import numpy as np, torch
from PIL import Image

shared = sys.argv[1]
model_dir = f"{shared}/models/micro-a"
SIZE, IMAGES = 48, ["rgb_64x48.png", "tall_40x400.jpg", "palette_120x90.png"]

def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, v in header.items():
        if k == "__metadata__": continue
        b, e = v["data_offsets"]
        out[k.removeprefix("vit.")] = torch.from_numpy(
            np.frombuffer(data[b:e], dtype=np.float32).reshape(v["shape"]).astype(np.float64))
    return out

cfg = json.load(open(f"{model_dir}/config.json"))
W = load_safetensors(f"{model_dir}/model.safetensors")
P, D, H = cfg["patch_size"], cfg["hidden_size"], cfg["num_attention_heads"]
eps = cfg["layer_norm_eps"]

def ln(x, p): return torch.nn.functional.layer_norm(x, (D,), W[p + ".weight"], W[p + ".bias"], eps)
def lin(x, p): return x @ W[p + ".weight"].T + W[p + ".bias"]

def forward(pixels):
    x = torch.nn.functional.conv2d(pixels[None], W["embeddings.patch_embeddings.projection.weight"],
                                   W["embeddings.patch_embeddings.projection.bias"], stride=P)
    x = x.flatten(2).transpose(1, 2)[0]
    pos = W["embeddings.position_embeddings"][0]
    n = int(round((pos.shape[0] - 1) ** 0.5)); m = SIZE // P
    grid = pos[1:].reshape(1, n, n, D).permute(0, 3, 1, 2)
    grid = torch.nn.functional.interpolate(grid, size=(m, m), mode="bicubic", align_corners=False)
    pos = torch.cat([pos[:1], grid.permute(0, 2, 3, 1).reshape(m * m, D)])
    h = torch.cat([W["embeddings.cls_token"][0], x]) + pos
    T, dh = h.shape[0], D // H
    for l in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{l}."
        a = ln(h, p + "layernorm_before")
        q, k, v = (lin(a, p + f"attention.attention.{s}").reshape(T, H, dh).transpose(0, 1)
                   for s in ("query", "key", "value"))
        att = torch.softmax(q @ k.transpose(1, 2) / dh ** 0.5, -1) @ v
        h = h + lin(att.transpose(0, 1).reshape(T, D), p + "attention.output.dense")
        u = torch.nn.functional.gelu(lin(ln(h, p + "layernorm_after"), p + "intermediate.dense"))
        h = h + lin(u, p + "output.dense")
    return lin(ln(h, "layernorm")[0], "classifier")

out = {}
for name in IMAGES:
    im = Image.open(f"{shared}/models/golden-images/{name}").convert("RGB")
    a = np.asarray(im.resize((SIZE, SIZE), Image.BILINEAR, reducing_gap=None))
    x = ((a * (1 / 255)).astype(np.float32) - np.float32(0.5)) / np.float32(0.5)
    out[name] = forward(torch.from_numpy(x.transpose(2, 0, 1).astype(np.float64))).tolist()
json.dump({"model": "micro-a", "size": SIZE, "logits": out}, sys.stdout, indent=1)
print()
