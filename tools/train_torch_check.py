#!/usr/bin/python3
"""Checks that a model directory written by `vit train` is a valid Hugging Face checkpoint for
PyTorch, without transformers or safetensors installed: parses model.safetensors with json +
struct, builds ViTForImageClassification's (or BertForSequenceClassification's) forward in plain
torch (HF module names, docs/SPEC.md §2/§7/§8), loads every tensor (strict: no missing or unexpected
names), and compares its logits with `vit classify --logits --json` on the given images (or
`vit text --logits --tokens --json` on the given sentences: the ids come from vit's tokenizer).

  /usr/bin/python3 tools/train_torch_check.py MODEL_DIR BIN_VIT IMAGE...
  /usr/bin/python3 tools/train_torch_check.py TEXT_MODEL_DIR BIN_VIT SENTENCE...

Preprocessing here follows preprocessor_config.json with Pillow (resize + rescale + normalise;
the models `vit train` makes use no crop). Exit status 0 when every logit agrees to 1e-4."""
import json
import math
import struct
import subprocess
import sys

import numpy as np
import torch
from PIL import Image


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    meta = header.pop("__metadata__", {})
    base = 8 + n
    tensors = {}
    for name, e in header.items():
        assert e["dtype"] == "F32", (name, e["dtype"])
        b, end = e["data_offsets"]
        count = math.prod(e["shape"]) if e["shape"] else 1
        assert end - b == 4 * count, name
        arr = np.frombuffer(data, dtype="<f4", count=count, offset=base + b)
        tensors[name] = torch.from_numpy(arr.copy()).reshape(e["shape"])
    return tensors, meta


class Layer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        D, I, eps = c["hidden_size"], c["intermediate_size"], c["layer_norm_eps"]
        self.heads = c["num_attention_heads"]
        self.layernorm_before = torch.nn.LayerNorm(D, eps=eps)
        self.layernorm_after = torch.nn.LayerNorm(D, eps=eps)
        bias = c.get("qkv_bias", True)
        self.attention = torch.nn.Module()
        self.attention.attention = torch.nn.Module()
        for part in ("query", "key", "value"):
            setattr(self.attention.attention, part, torch.nn.Linear(D, D, bias=bias))
        self.attention.output = torch.nn.Module()
        self.attention.output.dense = torch.nn.Linear(D, D)
        self.intermediate = torch.nn.Module()
        self.intermediate.dense = torch.nn.Linear(D, I)
        self.output = torch.nn.Module()
        self.output.dense = torch.nn.Linear(I, D)

    def forward(self, x):
        B, T, D = x.shape
        H = self.heads
        h = self.layernorm_before(x)
        a = self.attention.attention
        q, k, v = (getattr(a, p)(h).view(B, T, H, D // H).transpose(1, 2) for p in ("query", "key", "value"))
        w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D // H), dim=-1)
        ctx = (w @ v).transpose(1, 2).reshape(B, T, D)
        x = x + self.attention.output.dense(ctx)
        h = torch.nn.functional.gelu(self.intermediate.dense(self.layernorm_after(x)))
        return x + self.output.dense(h)


class ViTForImageClassification(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        D, P, C, S = c["hidden_size"], c["patch_size"], c["num_channels"], c["image_size"]
        n = (S // P) ** 2
        self.vit = torch.nn.Module()
        self.vit.embeddings = torch.nn.Module()
        e = self.vit.embeddings
        e.cls_token = torch.nn.Parameter(torch.zeros(1, 1, D))
        e.position_embeddings = torch.nn.Parameter(torch.zeros(1, n + 1, D))
        e.patch_embeddings = torch.nn.Module()
        e.patch_embeddings.projection = torch.nn.Conv2d(C, D, P, stride=P)
        self.vit.encoder = torch.nn.Module()
        self.vit.encoder.layer = torch.nn.ModuleList(Layer(c) for _ in range(c["num_hidden_layers"]))
        self.vit.layernorm = torch.nn.LayerNorm(D, eps=c["layer_norm_eps"])
        self.classifier = torch.nn.Linear(D, c["num_labels"] if "num_labels" in c else len(c["id2label"]))

    def forward(self, pixels):
        e = self.vit.embeddings
        x = e.patch_embeddings.projection(pixels).flatten(2).transpose(1, 2)
        x = torch.cat([e.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + e.position_embeddings
        for layer in self.vit.encoder.layer:
            x = layer(x)
        return self.classifier(self.vit.layernorm(x)[:, 0])


class BertLayer(torch.nn.Module):
    """Post-LN, HF BertLayer names."""

    def __init__(self, c):
        super().__init__()
        D, I, eps = c["hidden_size"], c["intermediate_size"], c["layer_norm_eps"]
        self.heads = c["num_attention_heads"]
        self.attention = torch.nn.Module()
        self.attention.self = torch.nn.Module()
        for part in ("query", "key", "value"):
            setattr(self.attention.self, part, torch.nn.Linear(D, D))
        self.attention.output = torch.nn.Module()
        self.attention.output.dense = torch.nn.Linear(D, D)
        self.attention.output.LayerNorm = torch.nn.LayerNorm(D, eps=eps)
        self.intermediate = torch.nn.Module()
        self.intermediate.dense = torch.nn.Linear(D, I)
        self.output = torch.nn.Module()
        self.output.dense = torch.nn.Linear(I, D)
        self.output.LayerNorm = torch.nn.LayerNorm(D, eps=eps)

    def forward(self, x):
        B, T, D = x.shape
        H = self.heads
        a = self.attention.self
        q, k, v = (getattr(a, p)(x).view(B, T, H, D // H).transpose(1, 2) for p in ("query", "key", "value"))
        w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D // H), dim=-1)
        ctx = (w @ v).transpose(1, 2).reshape(B, T, D)
        x = self.attention.output.LayerNorm(x + self.attention.output.dense(ctx))
        h = torch.nn.functional.gelu(self.intermediate.dense(x))
        return self.output.LayerNorm(x + self.output.dense(h))


class BertForSequenceClassification(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        D = c["hidden_size"]
        self.bert = torch.nn.Module()
        self.bert.embeddings = e = torch.nn.Module()
        e.word_embeddings = torch.nn.Embedding(c["vocab_size"], D)
        e.position_embeddings = torch.nn.Embedding(c["max_position_embeddings"], D)
        e.token_type_embeddings = torch.nn.Embedding(c["type_vocab_size"], D)
        e.LayerNorm = torch.nn.LayerNorm(D, eps=c["layer_norm_eps"])
        self.bert.encoder = torch.nn.Module()
        self.bert.encoder.layer = torch.nn.ModuleList(BertLayer(c) for _ in range(c["num_hidden_layers"]))
        self.bert.pooler = torch.nn.Module()
        self.bert.pooler.dense = torch.nn.Linear(D, D)
        self.classifier = torch.nn.Linear(D, c["num_labels"])

    def forward(self, ids):  # one unpadded sentence [1, T]
        e = self.bert.embeddings
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        x = e.LayerNorm(e.word_embeddings(ids) + e.position_embeddings(pos) + e.token_type_embeddings(0 * ids))
        for layer in self.bert.encoder.layer:
            x = layer(x)
        return self.classifier(torch.tanh(self.bert.pooler.dense(x[:, 0])))


def check_text(model_dir, vit_bin, cfg, model, sentences):
    out = subprocess.run([vit_bin, "text", "-m", model_dir, "--json", "--logits", "--tokens", "--", *sentences],
                         check=True, capture_output=True, text=True).stdout
    worst = 0.0
    for line in out.strip().splitlines():
        rec = json.loads(line)
        with torch.no_grad():
            lt = model(torch.tensor([rec["ids"]]))[0]
        worst = max(worst, (torch.tensor(rec["logits"]) - lt).abs().max().item())
        top_t = cfg["id2label"][str(int(lt.argmax()))]
        print(f"{rec['text']!r}: vit {rec['top'][0]['label']!r}, torch {top_t!r}")
    return worst


def preprocess(path, pp, channels):
    img = Image.open(path).convert("L" if channels == 1 else "RGB")
    size = pp["size"]
    img = img.resize((size["width"], size["height"]), resample=pp["resample"])
    x = np.asarray(img, dtype=np.float32).reshape(img.height, img.width, channels)
    x = x * np.float32(pp["rescale_factor"])
    x = (x - np.array(pp["image_mean"], np.float32)) / np.array(pp["image_std"], np.float32)
    return torch.from_numpy(x.transpose(2, 0, 1).copy())


def main():
    model_dir, vit_bin, images = sys.argv[1], sys.argv[2], sys.argv[3:]
    cfg = json.load(open(f"{model_dir}/config.json"))
    tensors, meta = read_safetensors(f"{model_dir}/model.safetensors")
    print(f"safetensors: {len(tensors)} tensors, metadata {meta}")
    cfg["num_labels"] = len(cfg["id2label"])
    text = cfg["model_type"] == "bert"
    model = (BertForSequenceClassification(cfg) if text else ViTForImageClassification(cfg)).eval()
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    if not cfg.get("qkv_bias", True):
        missing = [m for m in missing if not m.endswith(("query.bias", "key.bias", "value.bias"))]
    assert not missing and not unexpected, (missing, unexpected)
    print(f"torch: loaded {sum(t.numel() for t in tensors.values())} parameters, strict names OK")
    if text:
        worst = check_text(model_dir, vit_bin, cfg, model, images)
        print(f"max |logit difference| vit vs torch: {worst:.2e}")
        sys.exit(0 if worst < 1e-4 else 1)
    pp = json.load(open(f"{model_dir}/preprocessor_config.json"))
    with torch.no_grad():
        ours = torch.stack([preprocess(p, pp, cfg["num_channels"]) for p in images])
        logits_torch = model(ours)
    out = subprocess.run([vit_bin, "classify", "-m", model_dir, "--json", "--logits", *images],
                         check=True, capture_output=True, text=True).stdout
    worst = 0.0
    for line, lt in zip(out.strip().splitlines(), logits_torch):
        rec = json.loads(line)
        lc = torch.tensor(rec["logits"])
        worst = max(worst, (lc - lt).abs().max().item())
        top_t = cfg["id2label"][str(int(lt.argmax()))]
        print(f"{rec['file']}: vit {rec['top'][0]['label']!r}, torch {top_t!r}")
    print(f"max |logit difference| vit vs torch: {worst:.2e}")
    sys.exit(0 if worst < 1e-4 else 1)


if __name__ == "__main__":
    main()
