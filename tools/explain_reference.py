#!/usr/bin/python3
"""Writes the float64 references of `vit explain`'s maps (run by hand; the project never runs it).

For each ViT below and each image of its golden.safetensors (the goldens' preprocessed pixels, so
only the maps are under test), a float64 forward written here after transformers'
modeling_vit.py / modeling_deit.py (eval mode, exact GELU), keeping every layer's attention
weights A [H, T, T], and the backward of the explained class's logit for dy/dA. Then, S special
tokens (CLS, and a DeiT's distillation token), N = T - S patches:

  rollout [N]    R = I; per layer Â = (mean_h A + I), rows normalised; R = Â·R; R[0, S:]
  last    [H, N] the last layer's A[h, 0, S:]
  grad    [N]    R = I; per layer Ā = mean_h max(0, dy/dA ∘ A); R = R + Ā·R; R[0, S:]
                 y = the logit of the most probable class (float64)

Output: tests/data/explain/<model>.safetensors with `<image>/rollout`, `<image>/last`,
`<image>/grad` (F32) and the label in the metadata (`<image>/label`).

usage: /usr/bin/python3 tools/explain_reference.py [SHARED]   (SHARED: ../shared by default)
"""
import json
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared")
MODELS = {"micro-a": os.path.join(SHARED, "models", "micro-a"),
          "micro-b": os.path.join(SHARED, "models", "micro-b"),
          "deit-micro": os.path.join(ROOT, "tests", "data", "deit-micro")}


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", (path, name, t["dtype"])
        a, b = t["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(data[a:b], np.float32).reshape(t["shape"]).copy())
    return out


def write_safetensors(path, tensors, metadata):
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, t in tensors.items():
        b = np.ascontiguousarray(t.detach().numpy().astype(np.float32)).tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def forward(w, cfg, pixels):
    """pixels [3, S, S] float64 -> (logits, [A per layer], special token count)."""
    pre = "deit." if any(k.startswith("deit.") for k in w) else "vit."
    D, H, eps, P = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"], cfg["patch_size"]
    ln = lambda x, p: F.layer_norm(x, (D,), w[p + ".weight"], w[p + ".bias"], eps)
    lin = lambda x, p: F.linear(x, w[p + ".weight"], w.get(p + ".bias"))
    x = F.conv2d(pixels[None], w[pre + "embeddings.patch_embeddings.projection.weight"],
                 w[pre + "embeddings.patch_embeddings.projection.bias"], stride=P)
    x = x.flatten(2).transpose(1, 2)
    special = [w[pre + "embeddings.cls_token"]]
    if pre + "embeddings.distillation_token" in w:
        special.append(w[pre + "embeddings.distillation_token"])
    h = torch.cat(special + [x], dim=1) + w[pre + "embeddings.position_embeddings"]
    T, dh, attns = h.shape[1], D // H, []
    for l in range(cfg["num_hidden_layers"]):
        p = f"{pre}encoder.layer.{l}."
        a = ln(h, p + "layernorm_before")
        q, k, v = (lin(a, p + f"attention.attention.{s}").view(1, T, H, dh).transpose(1, 2)
                   for s in ("query", "key", "value"))
        probs = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * dh ** -0.5, dim=-1)
        probs.retain_grad()
        attns.append(probs)
        ctx = torch.matmul(probs, v).transpose(1, 2).reshape(1, T, D)
        h = lin(ctx, p + "attention.output.dense") + h
        h = lin(F.gelu(lin(ln(h, p + "layernorm_after"), p + "intermediate.dense")), p + "output.dense") + h
    h = ln(h, pre + "layernorm")
    return lin(h[:, 0], "classifier")[0], attns, len(special)


def maps(w, cfg, pixels):
    logits, attns, S = forward(w, cfg, pixels.clone().requires_grad_(True))
    label = int(torch.argmax(logits))
    logits[label].backward()
    T = attns[0].shape[-1]
    eye = torch.eye(T, dtype=torch.float64)
    r = eye.clone()
    for a in attns:
        m = a[0].detach().mean(0) + eye
        r = (m / m.sum(-1, keepdim=True)) @ r
    rollout = r[0, S:]
    last = attns[-1][0, :, 0, S:].detach()
    r = eye.clone()
    for a in attns:
        r = r + (a.grad[0] * a[0].detach()).clamp(min=0).mean(0) @ r
    return label, rollout, last, r[0, S:]


def main():
    out_dir = os.path.join(ROOT, "tests", "data", "explain")
    os.makedirs(out_dir, exist_ok=True)
    for name, model_dir in MODELS.items():
        cfg = json.load(open(os.path.join(model_dir, "config.json")))
        w = {k: v.double() for k, v in read_safetensors(os.path.join(model_dir, "model.safetensors")).items()}
        golden = read_safetensors(os.path.join(model_dir, "golden.safetensors"))
        tensors, meta = {}, {}
        for key in sorted(golden):
            if not key.endswith("/pixels"):
                continue
            image = key[: -len("/pixels")]
            label, rollout, last, grad = maps(w, cfg, golden[key].double())
            tensors[image + "/rollout"], tensors[image + "/last"], tensors[image + "/grad"] = rollout, last, grad
            meta[image + "/label"] = str(label)
        write_safetensors(os.path.join(out_dir, name + ".safetensors"), tensors, meta)
        print(f"{name}: {len(meta)} images -> tests/data/explain/{name}.safetensors")


if __name__ == "__main__":
    main()
