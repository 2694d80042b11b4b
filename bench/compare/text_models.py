#!/usr/bin/python3
"""Random-weight BERT text encoders for the vit / ONNX Runtime text comparison (Debian's
/usr/bin/python3), and the texts both engines embed.

For each shape it writes, under OUT:
  OUT/models/NAME/         a Hugging Face layout BertModel directory that bin/vit loads
                           (config.json, model.safetensors F32, vocab.txt, tokenizer.json,
                           tokenizer_config.json)
  OUT/onnx/NAME.onnx       the same network exported from PyTorch (opset 17; inputs input_ids,
                           attention_mask, token_type_ids int64 [batch, sequence], dynamic axes;
                           output last_hidden_state [batch, sequence, hidden])
  OUT/onnx/NAME-int8.onnx  that file with its weight MatMuls in int8 as onnxruntime's
                           quantize_dynamic writes them (quantize.py)
and the texts, one per line:
  OUT/texts/sst2.txt       GLUE SST-2's dev sentences (../shared/data/sst2/dev.tsv)
  OUT/texts/msmarco.txt    MS MARCO-like passages: SST-2 train sentences joined until a length
                           drawn uniformly from 16-128 WordPiece tokens (seeded), cut there

The module below mirrors transformers' BertModel (modeling_bert.py): word + position + token
type embeddings, LayerNorm, post-LN blocks with exact (erf) GELU, the additive attention mask
(1 - mask) * finfo(float32).min, and the pooler (saved, not exported: the comparison mean-pools
last_hidden_state). Its parameter names are HF's, so its state dict is model.safetensors as it
is. The vocabulary is bert-base-uncased's (30522 lines, from ../shared/models/bert-sst2-tiny),
and tokenizer.json the one the tokenizers library writes for BertTokenizerFast.

usage: text_models.py [--out DIR] [--only NAME[,NAME...]] [--force]
"""
import argparse
import json
import math
import os
import random
import sys

import torch
from torch import nn

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import random_weights, write_safetensors  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(ROOT, "..", "shared")
VOCAB = os.path.join(SHARED, "models", "bert-sst2-tiny", "vocab.txt")
SST2 = os.path.join(SHARED, "data", "sst2")
MAX_POSITIONS, TYPES = 512, 2

# name: (hidden, layers, heads, mlp): all-MiniLM-L6-v2's and bge-base-en-v1.5's shapes
SHAPES = {
    "minilm-l6": (384, 6, 12, 1536),
    "bge-base": (768, 12, 12, 3072),
}


class Embeddings(nn.Module):
    def __init__(self, vocab, d, eps):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, d)
        self.position_embeddings = nn.Embedding(MAX_POSITIONS, d)
        self.token_type_embeddings = nn.Embedding(TYPES, d)
        self.LayerNorm = nn.LayerNorm(d, eps=eps)

    def forward(self, ids, types):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = self.word_embeddings(ids) + self.token_type_embeddings(types) + self.position_embeddings(pos)
        return self.LayerNorm(x)


class SelfAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.head_dim = heads, d // heads
        self.query = nn.Linear(d, d)
        self.key = nn.Linear(d, d)
        self.value = nn.Linear(d, d)

    def split(self, t):  # [B,T,D] -> [B,H,T,Dh]
        return t.view(t.shape[0], t.shape[1], self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x, bias):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim) + bias
        ctx = torch.matmul(scores.softmax(dim=-1), v).permute(0, 2, 1, 3)
        return ctx.reshape(x.shape[0], x.shape[1], self.heads * self.head_dim)


class DenseNorm(nn.Module):  # BertSelfOutput and BertOutput: dense, residual, LayerNorm
    def __init__(self, i, d, eps):
        super().__init__()
        self.dense = nn.Linear(i, d)
        self.LayerNorm = nn.LayerNorm(d, eps=eps)

    def forward(self, h, x):
        return self.LayerNorm(self.dense(h) + x)


class Attention(nn.Module):
    def __init__(self, d, heads, eps):
        super().__init__()
        self.self = SelfAttention(d, heads)
        self.output = DenseNorm(d, d, eps)

    def forward(self, x, bias):
        return self.output(self.self(x, bias), x)


class Intermediate(nn.Module):
    def __init__(self, d, i):
        super().__init__()
        self.dense = nn.Linear(d, i)

    def forward(self, x):
        return nn.functional.gelu(self.dense(x))  # exact erf GELU


class Layer(nn.Module):
    def __init__(self, d, heads, mlp, eps):
        super().__init__()
        self.attention = Attention(d, heads, eps)
        self.intermediate = Intermediate(d, mlp)
        self.output = DenseNorm(mlp, d, eps)

    def forward(self, x, bias):
        a = self.attention(x, bias)
        return self.output(self.intermediate(a), a)


class Encoder(nn.Module):
    def __init__(self, d, layers, heads, mlp, eps):
        super().__init__()
        self.layer = nn.ModuleList([Layer(d, heads, mlp, eps) for _ in range(layers)])

    def forward(self, x, bias):
        for layer in self.layer:
            x = layer(x, bias)
        return x


class Pooler(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.dense = nn.Linear(d, d)


class BertModel(nn.Module):
    def __init__(self, vocab, d, layers, heads, mlp, eps=1e-12):
        super().__init__()
        self.embeddings = Embeddings(vocab, d, eps)
        self.encoder = Encoder(d, layers, heads, mlp, eps)
        self.pooler = Pooler(d)

    def forward(self, input_ids, attention_mask, token_type_ids):
        # BertModel's get_extended_attention_mask: 0 where attended, float32's min where padded
        bias = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * torch.finfo(torch.float32).min
        return self.encoder(self.embeddings(input_ids, token_type_ids), bias)


def vocab_size():
    with open(VOCAB, encoding="utf-8") as f:
        return sum(1 for _ in f)


def build(name, seed=0):
    """The module for a shape: weights normal with std 0.02 (BERT's initializer_range), LayerNorm
    weights 1, biases normal with std 0.01 (not zero, so that a dropped bias shows)."""
    d, layers, heads, mlp = SHAPES[name]
    return random_weights(BertModel(vocab_size(), d, layers, heads, mlp).eval(), seed)


def hf_config(name):
    d, layers, heads, mlp = SHAPES[name]
    return {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "vocab_size": vocab_size(),
        "hidden_size": d,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": mlp,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": MAX_POSITIONS,
        "type_vocab_size": TYPES,
        "initializer_range": 0.02,
        "layer_norm_eps": 1e-12,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "torch_dtype": "float32",
    }


TOKENIZER_CONFIG = {
    "do_lower_case": True,
    "tokenize_chinese_chars": True,
    "strip_accents": None,
    "model_max_length": MAX_POSITIONS,
    "tokenizer_class": "BertTokenizer",
    "unk_token": "[UNK]",
    "sep_token": "[SEP]",
    "pad_token": "[PAD]",
    "cls_token": "[CLS]",
    "mask_token": "[MASK]",
}


def tokenizer_json(vocab):
    """BertTokenizerFast's tokenizer.json for bert-base-uncased, as the tokenizers library writes
    it (the layout of tests/data/tokenizer-json/bert-wordpiece, with the full vocabulary)."""
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    added = [{"id": vocab[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for t in special]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", vocab["[SEP]"]],
                           "cls": ["[CLS]", vocab["[CLS]"]]},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab},
    }


def write_model_dir(model, name, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    with open(VOCAB, encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f]
    vocab = {t: i for i, t in enumerate(lines)}
    with open(os.path.join(out_dir, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(vocab), f, ensure_ascii=False)
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
        json.dump(TOKENIZER_CONFIG, f, indent=2)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(hf_config(name), f, indent=2)
    # model.safetensors last: its presence marks a complete directory
    write_safetensors(os.path.join(out_dir, "model.safetensors"), model.state_dict())


def export_onnx(model, path):
    ids = torch.ones(2, 16, dtype=torch.int64)
    mask = torch.ones(2, 16, dtype=torch.int64)
    types = torch.zeros(2, 16, dtype=torch.int64)
    axes = {0: "batch", 1: "sequence"}
    tmp = path + ".tmp"
    torch.onnx.export(model, (ids, mask, types), tmp, opset_version=17,
                      input_names=["input_ids", "attention_mask", "token_type_ids"],
                      output_names=["last_hidden_state"], do_constant_folding=True,
                      dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes,
                                    "last_hidden_state": axes})
    import onnx
    onnx.checker.check_model(tmp)
    os.replace(tmp, path)


def read_tsv(path):
    with open(path, encoding="utf-8") as f:
        rows = [l.rstrip("\n").split("\t") for l in f][1:]  # header line: sentence, label
    return [r[0].strip() for r in rows if r and r[0].strip()]


def word_pieces(word, vocab):
    """How many WordPiece tokens one lower-cased, punctuation-split word is (greedy longest
    match, as BERT's WordPiece): close enough to size passages; the engines count exactly."""
    n, start = 0, 0
    while start < len(word):
        end = len(word)
        while end > start and (("##" if start else "") + word[start:end]) not in vocab:
            end -= 1
        if end == start:
            return n + 1  # [UNK] for the rest
        n, start = n + 1, end
    return n


def write_texts(out):
    d = os.path.join(out, "texts")
    os.makedirs(d, exist_ok=True)
    sst2 = os.path.join(d, "sst2.txt")
    msmarco = os.path.join(d, "msmarco.txt")
    if os.path.exists(sst2) and os.path.exists(msmarco):
        return
    with open(sst2 + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(read_tsv(os.path.join(SST2, "dev.tsv"))) + "\n")
    os.replace(sst2 + ".tmp", sst2)
    with open(VOCAB, encoding="utf-8") as f:
        vocab = {l.rstrip("\n") for l in f}
    import re
    train = read_tsv(os.path.join(SST2, "train.tsv"))
    rng = random.Random(42)
    rng.shuffle(train)
    passages, i = [], 0
    for _ in range(2000):
        target = rng.randint(16, 128) - 2  # [CLS] and [SEP]
        words, n = [], 0
        while n < target:
            for w in train[i % len(train)].split():
                k = sum(word_pieces(p, vocab) for p in re.findall(r"\w+|[^\w\s]", w.lower()))
                if n + k > target:
                    break
                words.append(w)
                n += k
            else:
                i += 1
                continue
            i += 1
            break
        passages.append(" ".join(words))
    with open(msmarco + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(passages) + "\n")
    os.replace(msmarco + ".tmp", msmarco)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.expanduser("~/.cache/vit-bench"))
    ap.add_argument("--only", default=",".join(SHAPES), help="comma-separated names: " + ", ".join(SHAPES))
    ap.add_argument("--force", action="store_true", help="rewrite files that exist")
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("THREADS", "2")))
    for p in (VOCAB, os.path.join(SST2, "dev.tsv"), os.path.join(SST2, "train.tsv")):
        if not os.path.exists(p):
            sys.exit(f"text_models.py: {p} is missing (../shared must be the project's shared data)")
    write_texts(args.out)
    for name in args.only.split(","):
        if name not in SHAPES:
            sys.exit(f"text_models.py: unknown model {name!r} (known: {', '.join(SHAPES)})")
        model_dir = os.path.join(args.out, "models", name)
        onnx_path = os.path.join(args.out, "onnx", name + ".onnx")
        int8_path = os.path.join(args.out, "onnx", name + "-int8.onnx")
        have_dir = os.path.exists(os.path.join(model_dir, "model.safetensors"))
        have_onnx, have_int8 = os.path.exists(onnx_path), os.path.exists(int8_path)
        if have_dir and have_onnx and have_int8 and not args.force:
            print(f"{name}: up to date ({model_dir}, {onnx_path})")
            continue
        model = build(name)
        if not have_dir or args.force:
            write_model_dir(model, name, model_dir)
            print(f"{name}: wrote {model_dir}")
        if not have_onnx or args.force:
            os.makedirs(os.path.dirname(onnx_path), exist_ok=True)
            export_onnx(model, onnx_path)
            print(f"{name}: wrote {onnx_path}")
        if not have_int8 or not have_onnx or args.force:
            import onnx
            import quantize
            q = onnx.load(onnx_path)
            n = quantize.quantize_model(q)
            onnx.checker.check_model(q)
            onnx.save(q, int8_path + ".tmp")
            os.replace(int8_path + ".tmp", int8_path)
            print(f"{name}: wrote {int8_path} ({n} MatMuls in int8)")


if __name__ == "__main__":
    main()
