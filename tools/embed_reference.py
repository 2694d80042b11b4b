#!/usr/bin/python3
"""Writes the float64 reference of `vit embed` for text (run by hand; the project never runs it).

bert-sst2-tiny (../shared) on the first five texts of its golden.json, by the token ids there: a
float64 forward after transformers' modeling_bert.py (post-LN, exact GELU, eval mode). Output:
tests/data/embed/bert-sst2-tiny.safetensors with `cls` (the final hidden state at [CLS]),
`pooler` (tanh of the pooler's linear layer on it) and `mean` (the mean of the final hidden
states over the tokens), each [5, hidden] (F32).

usage: /usr/bin/python3 tools/embed_reference.py [SHARED]   (SHARED: ../shared by default)
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_reference import read_safetensors, write_safetensors  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared")
MODEL = os.path.join(SHARED, "models", "bert-sst2-tiny")


def forward(w, cfg, ids):
    D, H, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"]
    ln = lambda x, p: F.layer_norm(x, (D,), w[p + ".weight"], w[p + ".bias"], eps)
    lin = lambda x, p: F.linear(x, w[p + ".weight"], w[p + ".bias"])
    T = len(ids)
    e = "bert.embeddings."
    h = w[e + "word_embeddings.weight"][ids] + w[e + "position_embeddings.weight"][:T] + \
        w[e + "token_type_embeddings.weight"][0]
    h = ln(h, e + "LayerNorm")
    dh = D // H
    for l in range(cfg["num_hidden_layers"]):
        p = f"bert.encoder.layer.{l}."
        q, k, v = (lin(h, p + f"attention.self.{s}").view(T, H, dh).transpose(0, 1)
                   for s in ("query", "key", "value"))
        probs = torch.softmax(q @ k.transpose(-1, -2) * dh ** -0.5, dim=-1)
        ctx = (probs @ v).transpose(0, 1).reshape(T, D)
        h = ln(lin(ctx, p + "attention.output.dense") + h, p + "attention.output.LayerNorm")
        u = F.gelu(lin(h, p + "intermediate.dense"))
        h = ln(lin(u, p + "output.dense") + h, p + "output.LayerNorm")
    return h[0], torch.tanh(lin(h[0], "bert.pooler.dense")), h.mean(0)


def main():
    cfg = json.load(open(os.path.join(MODEL, "config.json")))
    w = {k: v.double() for k, v in read_safetensors(os.path.join(MODEL, "model.safetensors"))[0].items()}
    cases = json.load(open(os.path.join(MODEL, "golden.json")))[:5]
    rows = [forward(w, cfg, torch.tensor(c["ids"])) for c in cases]
    out = {name: torch.stack([r[i] for r in rows]) for i, name in enumerate(("cls", "pooler", "mean"))}
    os.makedirs(os.path.join(ROOT, "tests", "data", "embed"), exist_ok=True)
    meta = {"texts": json.dumps([c["text"] for c in cases])}
    write_safetensors(os.path.join(ROOT, "tests", "data", "embed", "bert-sst2-tiny.safetensors"), out, meta)
    print("tests/data/embed/bert-sst2-tiny.safetensors:", {k: list(v.shape) for k, v in out.items()})


if __name__ == "__main__":
    main()
