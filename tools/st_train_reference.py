#!/usr/bin/python3
"""Writes the float64 MultipleNegativesRankingLoss and its gradients for one batch of the
sentence-transformers micro folders (run by hand; the project never runs it):
tests/data/<folder>/mnrl_golden.safetensors, read by tests/test_st_train.c.

The batch: three (anchor, positive, hard negative) triplets of the folders' vocabulary. Each text
is tokenized as tools/sentence_transformers_reference.py does ([CLS] words [SEP]), run through
BertModel alone (tools/hf_reference.py's bert_forward: a padded batch with its attention mask
gives the same rows), pooled (models.Pooling's modes), through the folder's Dense (its weights and
activation) and Normalize modules in modules.json's order; then, as
sentence_transformers/losses/MultipleNegativesRankingLoss.py: scores = cos_sim(anchors,
positives + negatives) * 20, cross-entropy with anchor i's target column i. Gradients of every
Transformer tensor and every Dense module's weight and bias by autograd (sentence-transformers
trains both).

mnrl_golden.safetensors: loss [1], hits [1] (anchors whose own positive scores highest),
grad.<tensor name> for every tensor of the Transformer's model.safetensors and
grad.<Dense module path>/linear.weight (and .bias) for each Dense module; metadata ids (the k·n
texts' ids, anchors then positives then negatives), k, n.

With --embed SAVED (run by tests/test_st_train.c): the float64 sentence embeddings of the three
anchors through the folder vit train saved in SAVED (read as SentenceTransformer would: its
modules.json, Pooling, Dense and Normalize, the Transformer's weights at the root), one JSON line.

usage: /usr/bin/python3 tools/st_train_reference.py [--embed SAVED]
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_reference import bert_forward, read_safetensors, write_safetensors  # noqa: E402
from sentence_transformers_reference import DATA, KEYS, MODES, pool, token_ids  # noqa: E402

FOLDERS = ["st-mean-micro", "st-multi-micro", "st-cls-dense-micro"]
TRIPLETS = [("the cat sat on the mat", "a cat sat", "it was bad"),
            ("a dog ran far away", "the dog ran", "my old sun"),
            ("it was very good", "it was good", "the dog slept in the sun")]
SCALE = 20.0
ACTS = {"torch.nn.modules.activation.Tanh": torch.tanh,
        "torch.nn.modules.linear.Identity": lambda x: x}


def pipeline(folder):
    """(transformer dir, pooling modes, steps: ("dense", weight, bias, act, module path) or
    ("normalize",))"""
    d = os.path.join(DATA, folder)
    modules = json.load(open(os.path.join(d, "modules.json")))
    transformer, modes, steps = d, [], []
    for m in modules:
        path = os.path.join(d, m["path"])
        kind = m["type"].split(".")[-1]
        if kind == "Transformer":
            transformer = path
        elif kind == "Pooling":
            cfg = json.load(open(os.path.join(path, "config.json")))
            modes = [mode for mode in MODES if cfg.get(KEYS[mode])]
        elif kind == "Dense":
            cfg = json.load(open(os.path.join(path, "config.json")))
            w, _ = read_safetensors(os.path.join(path, "model.safetensors"))
            b = w.get("linear.bias")
            steps.append(("dense", w["linear.weight"].double(),
                          b.double() if b is not None else None, ACTS[cfg["activation_function"]],
                          m["path"]))
        elif kind == "Normalize":
            steps.append(("normalize",))
    return transformer, modes, steps


def embed(folder, texts):
    transformer, modes, steps = pipeline(folder)
    cfg = json.load(open(os.path.join(transformer, "config.json")))
    w = {k: v.double() for k, v in read_safetensors(os.path.join(transformer, "model.safetensors"))[0].items()}
    out = []
    for text in texts:
        h, _ = bert_forward(w, "", cfg, torch.tensor(token_ids(text, 40)))
        x = pool(h, modes, 0)
        for s in steps:
            x = F.normalize(x, dim=0) if s[0] == "normalize" else s[3](F.linear(x, s[1], s[2]))
        out.append(x.tolist())
    return out


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--embed":
        texts = [t[0] for t in TRIPLETS]
        print(json.dumps({"texts": texts, "embeddings": embed(sys.argv[2], texts)}))
        return
    for folder in FOLDERS:
        transformer, modes, steps = pipeline(folder)
        cfg = json.load(open(os.path.join(transformer, "config.json")))
        w32, _ = read_safetensors(os.path.join(transformer, "model.safetensors"))
        w = {k: v.double().requires_grad_(True) for k, v in w32.items()}
        for s in steps:
            if s[0] == "dense":
                w[s[4] + "/linear.weight"] = s[1].requires_grad_(True)
                if s[2] is not None:
                    w[s[4] + "/linear.bias"] = s[2].requires_grad_(True)
        columns = [[t[c] for t in TRIPLETS] for c in range(3)]
        rows = [token_ids(text, 40) for col in columns for text in col]
        emb = []
        for ids in rows:
            h, _ = bert_forward(w, "", cfg, torch.tensor(ids))
            x = pool(h, modes, 0)
            for s in steps:
                x = F.normalize(x, dim=0) if s[0] == "normalize" else s[3](F.linear(x, s[1], s[2]))
            emb.append(x)
        emb = torch.stack(emb)
        n = len(TRIPLETS)
        a, b = emb[:n], emb[n:]
        scores = F.normalize(a, dim=1) @ F.normalize(b, dim=1).T * SCALE
        loss = F.cross_entropy(scores, torch.arange(n))
        loss.backward()
        hits = float((scores.argmax(1) == torch.arange(n)).sum())
        gold = {"loss": loss.detach().reshape(1), "hits": torch.tensor([hits])}
        for k, v in w.items():
            gold["grad." + k] = v.grad if v.grad is not None else torch.zeros_like(v)
        meta = {"ids": json.dumps(rows), "k": "3", "n": str(n)}
        write_safetensors(os.path.join(DATA, folder, "mnrl_golden.safetensors"),
                          {k: v.detach() for k, v in gold.items()}, meta)
        print(folder, "loss", float(loss), "hits", hits, "modes", modes, "steps",
              [s[0] for s in steps])


if __name__ == "__main__":
    main()
