#!/usr/bin/python3
"""Writes the float64 references of `vit explain`'s maps (run by hand; the project never runs it).

For each ViT below and each image of its golden.safetensors (the goldens' preprocessed pixels, so
only the maps are under test), tools/hf_reference.py's float64 forward (after transformers'
modeling_vit.py / modeling_deit.py, eval mode, exact GELU), keeping every layer's attention
weights A [H, T, T], and the backward of the explained class's logit for dy/dA. Then, S special
tokens (CLS, and a DeiT's distillation token), N = T - S patches:

  rollout [N]    R = I; per layer Â = (mean_h A + I), rows normalised; R = Â·R; R[0, S:]
  last    [H, N] the last layer's A[h, 0, S:]
  grad    [N]    R = I; per layer Ā = mean_h max(0, dy/dA ∘ A); R = R + Ā·R; R[0, S:]
                 y = the logit of the most probable class (float64)

Output: tests/data/explain/<model>.safetensors with `<image>/rollout`, `<image>/last`,
`<image>/grad` (F32) and the label in the metadata (`<image>/label`). The models are
tests/data/micro-a, micro-b (tools/vit_reference.py) and deit-micro (tools/deit_reference.py):
run those first.

usage: /usr/bin/python3 tools/explain_reference.py
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_reference as ref  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
MODELS = ["micro-a", "micro-b", "deit-micro"]


def maps(w, cfg, pixels):
    out = ref.forward(w, cfg, pixels[None].clone().requires_grad_(True), attentions=True)
    logits, attns, S = out["logits"][0], out["attentions"], out["special"]
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


def explain(model_dir):
    """(tensors, metadata) of the maps of every golden image of model_dir."""
    cfg, w = ref.load_model(model_dir)
    golden, _ = ref.read_safetensors(os.path.join(model_dir, "golden.safetensors"))
    tensors, meta = {}, {}
    for key in sorted(golden):
        if not key.endswith("/pixels"):
            continue
        image = key[: -len("/pixels")]
        label, rollout, last, grad = maps(w, cfg, golden[key].double())
        tensors[image + "/rollout"], tensors[image + "/last"], tensors[image + "/grad"] = \
            rollout, last, grad
        meta[image + "/label"] = str(label)
    return tensors, meta


def main():
    out_dir = os.path.join(DATA, "explain")
    os.makedirs(out_dir, exist_ok=True)
    for name in MODELS:
        tensors, meta = explain(os.path.join(DATA, name))
        ref.write_safetensors(os.path.join(out_dir, name + ".safetensors"), tensors, meta)
        print(f"{name}: {len(meta)} images -> tests/data/explain/{name}.safetensors")


if __name__ == "__main__":
    main()
