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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_reference import bert_forward, read_safetensors, write_safetensors  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared")
MODEL = os.path.join(SHARED, "models", "bert-sst2-tiny")


def forward(w, cfg, ids):
    h, pooled = bert_forward(w, "bert.", cfg, ids)
    return h[0], pooled, h.mean(0)


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
