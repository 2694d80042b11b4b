#!/usr/bin/python3
"""Writes the text encoders' micro folders and their float64 outputs (run by hand; the project
never runs it).

RoBERTa, XLM-RoBERTa, DistilBERT and MPNet, each as its base model, its ForSequenceClassification
and its ForTokenClassification class, and BertForTokenClassification: random weights in the exact
layout save_pretrained writes (config.json with the configuration class's keys, model.safetensors
with transformers' tensor names, the tokenizer's files), under tests/data/<name>-{model,seq,tok}-micro. The forward
is float64, written from transformers' modeling_roberta.py (create_position_ids_from_input_ids,
RobertaClassificationHead), modeling_distilbert.py (Embeddings without token types, q_lin..out_lin,
sa_layer_norm, pre_classifier + ReLU), modeling_mpnet.py (padding_idx 1, the relative position
bucket bias computed once from arange(T) and added to every layer's scores) and modeling_bert.py;
no transformers import. Each text runs in one batch padded to the longest with the tokenizer's pad
id and attention_mask, and alone: the two must agree (asserted).

Token ids: RoBERTa's and XLM-R's are the `tokenizers` library's, read from
tests/data/roberta-micro/golden.json and xlmr-micro/golden.json; DistilBERT's and MPNet's
vocabularies are whole words (bert-base-micro's, MPNet's reordered with <s> <pad> </s> <unk> first
as MPNet's is), so the ids are the words' lines, by hand.

roberta-nopooler-model-micro is RobertaModel saved with add_pooling_layer=False (no pooler.*).

golden.safetensors holds hidden [N, Tmax, D] (zero past each text), pooled [N, D] (a base model
with a pooler), logits [N, K] or token_logits [N, Tmax, K]; metadata texts and ids (JSON).
mpnet-model-micro's also holds buckets [1201]: relative_position_bucket of -600..600 (float32 as
upstream computes it).

usage: /usr/bin/python3 tools/text_encoders_reference.py
"""
import json
import math
import os
import shutil
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_reference import write_json, write_safetensors  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
D, H, LAYERS, MLP = 32, 4, 2, 64
SEQ_LABELS = ["negative", "neutral", "positive"]
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]

# ---- texts and their ids ----


def golden_cases(folder, config, texts):
    """(texts, ids) of the golden cases whose text starts with each of texts."""
    enc = json.load(open(os.path.join(DATA, folder, "golden.json")))["encode"]
    cases = [e for e in enc if e["config"] == config and e["max_length"] is None]
    found = [next(e for e in cases if e["text"].startswith(t)) for t in texts]
    return [e["text"] for e in found], [e["ids"] for e in found]


# a literal <pad> in a text: RoBERTa gives it the padding's position, and it is not masked
BPE_TEXTS = ["Hello world", "The quick brown fox.", "<unk> <pad> x", "It's the dog's day", "\t\n"]

BERT_VOCAB = open(os.path.join(DATA, "bert-base-micro", "vocab.txt")).read().split("\n")[:29]
WORDS = BERT_VOCAB[5:]
LONG = " ".join(WORDS[i % len(WORDS)] for i in range(70))
WORD_TEXTS = ["the cat sat on the mat", "a dog ran far away from home", "it was very good",
              "the zebra slept", "", LONG]
MPNET_VOCAB = ["<s>", "<pad>", "</s>", "<unk>"] + [w for w in BERT_VOCAB
                                                   if w not in ("[PAD]", "[CLS]", "[SEP]", "[MASK]")] + ["<mask>"]


def word_ids(vocab, cls, sep, unk, text, max_len):
    ids = [vocab.index(w) if w in vocab else vocab.index(unk) for w in text.lower().split()]
    return [vocab.index(cls)] + ids[:max_len - 2] + [vocab.index(sep)]


# ---- random weights ----

class Weights:
    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(seed)
        self.w = {}

    def normal(self, name, *shape, std=0.3, mean=0.0):
        t = (torch.randn(*shape, generator=self.g, dtype=torch.float64) * std + mean)
        self.w[name] = t.float().double()  # float32-representable

    def linear(self, name, out, inp):
        self.normal(name + ".weight", out, inp, std=inp ** -0.5)
        self.normal(name + ".bias", out, std=0.1)

    def norm(self, name):
        self.normal(name + ".weight", D, std=0.1, mean=1.0)
        self.normal(name + ".bias", D, std=0.1)


ARCH = {
    # model_type, prefix, names of the embeddings and the layer's parts
    "roberta": dict(qkv="attention.self.%s", parts=("query", "key", "value"),
                    out="attention.output.dense", n1="attention.output.LayerNorm",
                    fc1="intermediate.dense", fc2="output.dense", n2="output.LayerNorm",
                    layer="encoder.layer.", types=True, head=("classifier.dense", "classifier.out_proj")),
    "distilbert": dict(qkv="attention.%s", parts=("q_lin", "k_lin", "v_lin"), out="attention.out_lin",
                       n1="sa_layer_norm", fc1="ffn.lin1", fc2="ffn.lin2", n2="output_layer_norm",
                       layer="transformer.layer.", types=False, head=("pre_classifier", "classifier")),
    "mpnet": dict(qkv="attention.attn.%s", parts=("q", "k", "v"), out="attention.attn.o",
                  n1="attention.LayerNorm", fc1="intermediate.dense", fc2="output.dense",
                  n2="output.LayerNorm", layer="encoder.layer.", types=False,
                  head=("classifier.dense", "classifier.out_proj")),
}
ARCH["bert"] = dict(ARCH["roberta"], head=("pooler.dense", "classifier"))


def encoder_weights(kind, prefix, vocab, positions, seed, buckets=0):
    a = ARCH[kind]
    W = Weights(seed)
    e = prefix + "embeddings."
    W.normal(e + "word_embeddings.weight", vocab, D)
    W.normal(e + "position_embeddings.weight", positions, D)
    if a["types"]:
        W.normal(e + "token_type_embeddings.weight", 1 if kind != "bert" else 2, D)
    W.norm(e + "LayerNorm")
    for l in range(LAYERS):
        p = f"{prefix}{a['layer']}{l}."
        for part in a["parts"]:
            W.linear(p + a["qkv"] % part, D, D)
        W.linear(p + a["out"], D, D)
        W.norm(p + a["n1"])
        W.linear(p + a["fc1"], MLP, D)
        W.linear(p + a["fc2"], D, MLP)
        W.norm(p + a["n2"])
    if buckets:
        W.normal(prefix + "encoder.relative_attention_bias.weight", buckets, H, std=1.0)
    return W


# ---- the float64 forward ----

def mpnet_bucket(relative_position, num_buckets=32, max_distance=128):
    """MPNetEncoder.relative_position_bucket, float32 as upstream computes it."""
    ret = 0
    n = -relative_position
    num_buckets //= 2
    ret += (n < 0).to(torch.long) * num_buckets
    n = torch.abs(n)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    val_if_large = max_exact + (torch.log(n.float() / max_exact) / math.log(max_distance / max_exact)
                                * (num_buckets - max_exact)).to(torch.long)
    val_if_large = torch.min(val_if_large, torch.full_like(val_if_large, num_buckets - 1))
    return ret + torch.where(is_small, n, val_if_large)


def forward(w, kind, prefix, ids, mask, eps, act, pos_pad, types=None):
    """ids, mask [B, T] (types [B, T]: token type ids, None for all 0) -> last hidden state
    [B, T, D]."""
    a = ARCH[kind]
    B, T = ids.shape
    e = prefix + "embeddings."
    if pos_pad is not None:  # create_position_ids_from_input_ids
        keep = ids.ne(pos_pad).long()
        pos = torch.cumsum(keep, 1) * keep + pos_pad
    else:
        pos = torch.arange(T).expand(B, T)
    h = w[e + "word_embeddings.weight"][ids] + w[e + "position_embeddings.weight"][pos]
    if a["types"]:
        h = h + w[e + "token_type_embeddings.weight"][types if types is not None else 0]
    ln = lambda x, n: F.layer_norm(x, (D,), w[n + ".weight"], w[n + ".bias"], eps)
    lin = lambda x, n: F.linear(x, w[n + ".weight"], w[n + ".bias"])
    h = ln(h, e + "LayerNorm")
    big = torch.finfo(torch.float64).min
    add_mask = (1.0 - mask.double())[:, None, None, :] * big
    bias = 0
    if kind == "mpnet":
        r = torch.arange(T)
        table = w[prefix + "encoder.relative_attention_bias.weight"]
        bias = table[mpnet_bucket(r[None, :] - r[:, None])].permute(2, 0, 1)[None]
    dh = D // H
    for l in range(LAYERS):
        p = f"{prefix}{a['layer']}{l}."
        q, k, v = (lin(h, p + a["qkv"] % s).view(B, T, H, dh).transpose(1, 2) for s in a["parts"])
        scores = q @ k.transpose(-1, -2) / math.sqrt(dh) + bias + add_mask
        ctx = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(B, T, D)
        h = ln(lin(ctx, p + a["out"]) + h, p + a["n1"])
        h = ln(lin(act(lin(h, p + a["fc1"])), p + a["fc2"]) + h, p + a["n2"])
    return h


def pad_batch(rows, pad):
    T = max(len(r) for r in rows)
    ids = torch.tensor([r + [pad] * (T - len(r)) for r in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (T - len(r)) for r in rows])
    return ids, mask


def run(spec, w, rows):
    """(hidden [N, T, D] zero past each text, from one padded batch), checked against each text
    run alone."""
    fwd = lambda ids, mask: forward(w, spec["kind"], spec["prefix"], ids, mask, spec["eps"],
                                    spec["act"], spec["pos_pad"])
    ids, mask = pad_batch(rows, spec["pad"])
    h = fwd(ids, mask) * mask[:, :, None]
    for i, r in enumerate(rows):
        alone = fwd(torch.tensor([r]), torch.ones(1, len(r), dtype=torch.long))[0]
        assert (alone - h[i, :len(r)]).abs().max() < 1e-12, (spec["name"], i)
    return h


# ---- folders ----

def config_of(spec, head, labels):
    cls = {"base": spec["classes"][0], "seq": spec["classes"][1], "tok": spec["classes"][2]}[head]
    cfg = {"architectures": [cls], "model_type": spec["model_type"]}
    cfg.update(spec["config"])
    if labels:
        cfg["id2label"] = {str(i): l for i, l in enumerate(labels)}
        cfg["label2id"] = {l: i for i, l in enumerate(labels)}
    cfg["torch_dtype"] = "float32"
    cfg["transformers_version"] = "4.46.3"
    return cfg


def has_pooler(spec, head):
    """A base model's pooler: not DistilBertModel's (it has none), not one saved without it."""
    return head == "base" and spec["kind"] != "distilbert" and not spec.get("no_pooler")


def head_weights(spec, head, seed):
    W = Weights(seed)
    pre = spec["prefix"]
    dense, out = ARCH[spec["kind"]]["head"]
    if has_pooler(spec, head):
        W.linear(pre + "pooler.dense", D, D)
    if head == "seq":
        W.linear((pre if spec["kind"] == "bert" else "") + dense, D, D)
        W.linear(out, len(SEQ_LABELS), D)
    if head == "tok":
        W.linear("classifier", len(TAGS), D)
    return W.w


def outputs(spec, head, enc, hw, rows):
    w = dict(enc)
    w.update(hw)
    h = run(spec, w, rows)
    out = {"hidden": h}
    pre = spec["prefix"]
    if has_pooler(spec, head):
        out["pooled"] = torch.tanh(F.linear(h[:, 0], hw[pre + "pooler.dense.weight"],
                                            hw[pre + "pooler.dense.bias"]))
    if head == "seq":
        dense, o = ARCH[spec["kind"]]["head"]
        dense = (pre if spec["kind"] == "bert" else "") + dense
        x = F.linear(h[:, 0], hw[dense + ".weight"], hw[dense + ".bias"])
        x = F.relu(x) if spec["kind"] == "distilbert" else torch.tanh(x)
        out["logits"] = F.linear(x, hw[o + ".weight"], hw[o + ".bias"])
    if head == "tok":
        lengths = torch.tensor([len(r) for r in rows])
        keep = (torch.arange(h.shape[1])[None, :] < lengths[:, None]).double()[:, :, None]
        out["token_logits"] = F.linear(h, hw["classifier.weight"], hw["classifier.bias"]) * keep
    return out


def write(spec, head, enc, rows, texts, extra=None):
    name = f"{spec['name']}-{ {'base': 'model', 'seq': 'seq', 'tok': 'tok'}[head] }-micro"
    out = os.path.join(DATA, name)
    os.makedirs(out, exist_ok=True)
    labels = {"base": None, "seq": SEQ_LABELS, "tok": TAGS}[head]
    write_json(os.path.join(out, "config.json"), config_of(spec, head, labels))
    hw = head_weights(spec, head, spec["seed"] + {"base": 1, "seq": 2, "tok": 3}[head])
    tensors = dict(enc)
    if head != "base":  # the classifiers' encoder under the prefix; the base model's without it
        pass
    else:
        tensors = {k[len(spec["prefix"]):]: v for k, v in enc.items()}
        hw = {k[len(spec["prefix"]):] if k.startswith(spec["prefix"]) else k: v for k, v in hw.items()}
    tensors.update(hw)
    write_safetensors(os.path.join(out, "model.safetensors"), tensors)
    # the forward reads the prefixed names
    hw_pref = {(spec["prefix"] + k if head == "base" else k): v for k, v in hw.items()}
    gold = outputs(spec, head, enc, hw_pref, rows)
    if extra:
        gold.update(extra)
    meta = {"texts": json.dumps(texts), "ids": json.dumps(rows)}
    write_safetensors(os.path.join(out, "golden.safetensors"), gold, meta)
    spec["files"](out)
    print(name, {k: list(v.shape) for k, v in gold.items()})


def copy_from(folder, names, links=()):
    """names copied from tests/data/folder; links made symbolic links to it (the 241 KB
    SentencePiece model, kept once)."""
    def files(out):
        for n in names:
            shutil.copy(os.path.join(DATA, folder, n), out)
        for n in links:
            if os.path.lexists(os.path.join(out, n)):
                os.remove(os.path.join(out, n))
            os.symlink(os.path.join("..", folder, n), os.path.join(out, n))
    return files


def wordpiece_files(vocab, config):
    def files(out):
        with open(os.path.join(out, "vocab.txt"), "w") as f:
            f.write("\n".join(vocab) + "\n")
        write_json(os.path.join(out, "tokenizer_config.json"), config)
    return files


# ---- pairs: cross-encoders ----

def longest_first(a, b, budget):
    """transformers' truncate_sequences 'longest_first': a token at a time off the longer, off b
    when they are as long."""
    while len(a) + len(b) > budget:
        if len(a) > len(b):
            a = a[:-1]
        else:
            b = b[:-1]
    return a, b


def pair_ids(a, b, max_len, style):
    """a, b: each text's ids with its start and end tokens -> (ids, token types) of the pair as
    build_inputs_with_special_tokens and create_token_type_ids_from_sequences give them."""
    cls, end = a[0], a[-1]
    specials = 3 if style == "bert" else 4
    a, b = longest_first(a[1:-1], b[1:-1], max_len - specials)
    if style == "bert":
        return [cls] + a + [end] + b + [end], [0] * (len(a) + 2) + [1] * (len(b) + 1)
    ids = [cls] + a + [end, end] + b + [end]
    return ids, [0] * len(ids)


PAIR_QUERY = 0  # the first text of each fixture is the query of its pairs


NLI_LABELS = ["contradiction", "entailment", "neutral"]  # cross-encoder/nli-*'s id2label


def write_pairs(spec, enc, texts, rows, max_len, style, labels=("LABEL_0",), suffix="pair"):
    """A one-label cross-encoder (as cross-encoder/ms-marco-MiniLM-L-6-v2: num_labels 1), or with
    labels a pair classifier (NLI), on (query, text) for every text, (text, query) and the longest
    text with itself; float64 logits [N, labels] of one padded batch, each pair alone agreeing."""
    q = PAIR_QUERY
    pairs = [(q, i) for i in range(len(texts))] + [(i, q) for i in range(1, len(texts))]
    pairs.append((len(texts) - 1, len(texts) - 1))
    built = [pair_ids(rows[i], rows[j], max_len, style) for i, j in pairs]
    name = spec["name"] + "-" + suffix + "-micro"
    out = os.path.join(DATA, name)
    os.makedirs(out, exist_ok=True)
    cfg = config_of(spec, "seq", list(labels))
    write_json(os.path.join(out, "config.json"), cfg)
    W = Weights(spec["seed"] + 7 + (len(labels) > 1))
    dense, o = ARCH[spec["kind"]]["head"]
    dense = (spec["prefix"] if spec["kind"] == "bert" else "") + dense
    W.linear(dense, D, D)
    W.linear(o, len(labels), D)
    w = dict(enc)
    w.update(W.w)
    write_safetensors(os.path.join(out, "model.safetensors"), w)
    fwd = lambda ids, mask, types: forward(w, spec["kind"], spec["prefix"], ids, mask, spec["eps"],
                                           spec["act"], spec["pos_pad"], types)
    ids, mask = pad_batch([r for r, _ in built], spec["pad"])
    types, _ = pad_batch([t for _, t in built], 0)
    h = fwd(ids, mask, types)
    for n, (r, t) in enumerate(built):
        alone = fwd(torch.tensor([r]), torch.ones(1, len(r), dtype=torch.long), torch.tensor([t]))
        assert (alone[0, 0] - h[n, 0]).abs().max() < 1e-12, (name, n)
    x = torch.tanh(F.linear(h[:, 0], w[dense + ".weight"], w[dense + ".bias"]))
    logits = F.linear(x, w[o + ".weight"], w[o + ".bias"])
    meta = {"pairs": json.dumps([[texts[i], texts[j]] for i, j in pairs]),
            "ids": json.dumps([r for r, _ in built]), "types": json.dumps([t for _, t in built])}
    write_safetensors(os.path.join(out, "golden.safetensors"), {"logits": logits}, meta)
    spec["files"](out)
    print(name, list(logits.shape))


def main():
    bpe_files = ["vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json"]
    common = {"hidden_size": D, "num_hidden_layers": LAYERS, "num_attention_heads": H,
              "intermediate_size": MLP, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
              "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02}
    specs = [
        dict(name="roberta", kind="roberta", model_type="roberta", prefix="roberta.", seed=420,
             classes=("RobertaModel", "RobertaForSequenceClassification", "RobertaForTokenClassification"),
             config=dict(common, vocab_size=321, max_position_embeddings=64, type_vocab_size=1,
                         layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                         position_embedding_type="absolute"),
             eps=1e-5, act=F.gelu, pos_pad=1, pad=1, vocab=321, positions=64,
             cases=golden_cases("roberta-micro", "roberta", BPE_TEXTS),
             files=copy_from("roberta-micro", bpe_files)),
        dict(name="xlmr", kind="roberta", model_type="xlm-roberta", prefix="roberta.", seed=430,
             classes=("XLMRobertaModel", "XLMRobertaForSequenceClassification",
                      "XLMRobertaForTokenClassification"),
             config=dict(common, vocab_size=302, max_position_embeddings=64, type_vocab_size=1,
                         layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                         position_embedding_type="absolute"),
             eps=1e-5, act=F.gelu, pos_pad=1, pad=1, vocab=302, positions=64,
             cases=golden_cases("xlmr-micro", "xlmr", BPE_TEXTS),
             files=copy_from("xlmr-micro", ["tokenizer_config.json", "special_tokens_map.json"],
                             ["sentencepiece.bpe.model"])),
        dict(name="distilbert", kind="distilbert", model_type="distilbert", prefix="distilbert.",
             seed=440, classes=("DistilBertModel", "DistilBertForSequenceClassification",
                                "DistilBertForTokenClassification"),
             config={"vocab_size": 29, "max_position_embeddings": 80, "sinusoidal_pos_embds": False,
                     "n_layers": LAYERS, "n_heads": H, "dim": D, "hidden_dim": MLP, "dropout": 0.1,
                     "attention_dropout": 0.1, "activation": "gelu", "initializer_range": 0.02,
                     "qa_dropout": 0.1, "seq_classif_dropout": 0.2, "pad_token_id": 0},
             eps=1e-12, act=F.gelu, pos_pad=None, pad=0, vocab=29, positions=80,
             cases=(WORD_TEXTS, [word_ids(BERT_VOCAB, "[CLS]", "[SEP]", "[UNK]", t, 80)
                                 for t in WORD_TEXTS]),
             files=wordpiece_files(BERT_VOCAB, {"do_lower_case": True, "model_max_length": 512,
                                                "tokenizer_class": "DistilBertTokenizer"})),
        dict(name="mpnet", kind="mpnet", model_type="mpnet", prefix="mpnet.", seed=450,
             classes=("MPNetModel", "MPNetForSequenceClassification", "MPNetForTokenClassification"),
             config=dict(common, vocab_size=len(MPNET_VOCAB), max_position_embeddings=80,
                         layer_norm_eps=1e-5, relative_attention_num_buckets=32, pad_token_id=1,
                         bos_token_id=0, eos_token_id=2),
             eps=1e-5, act=F.gelu, pos_pad=1, pad=1, vocab=len(MPNET_VOCAB), positions=80,
             buckets=32,
             cases=(WORD_TEXTS, [word_ids(MPNET_VOCAB, "<s>", "</s>", "[UNK]", t, 78)
                                 for t in WORD_TEXTS]),
             files=wordpiece_files(MPNET_VOCAB, {
                 "do_lower_case": True, "bos_token": "<s>", "eos_token": "</s>",
                 "unk_token": "[UNK]", "sep_token": "</s>", "pad_token": "<pad>",
                 "cls_token": "<s>", "mask_token": "<mask>", "tokenize_chinese_chars": True,
                 "strip_accents": None, "model_max_length": 512,
                 "tokenizer_class": "MPNetTokenizer"})),
        dict(name="bert-tok", kind="bert", model_type="bert", prefix="bert.", seed=460,
             classes=("BertModel", "BertForSequenceClassification", "BertForTokenClassification"),
             config=dict(common, vocab_size=29, max_position_embeddings=80, type_vocab_size=2,
                         layer_norm_eps=1e-12, pad_token_id=0),
             eps=1e-12, act=F.gelu, pos_pad=None, pad=0, vocab=29, positions=80,
             cases=(WORD_TEXTS, [word_ids(BERT_VOCAB, "[CLS]", "[SEP]", "[UNK]", t, 40)
                                 for t in WORD_TEXTS]),  # model_max_length 40
             files=copy_from("bert-base-micro", ["vocab.txt", "tokenizer_config.json"])),
    ]
    for spec in specs:
        enc = encoder_weights(spec["kind"], spec["prefix"], spec["vocab"], spec["positions"],
                              spec["seed"], spec.get("buckets", 0)).w
        heads = ["tok"] if spec["kind"] == "bert" else ["base", "seq", "tok"]
        for head in heads:
            extra = None
            if spec["kind"] == "mpnet" and head == "base":
                extra = {"buckets": mpnet_bucket(torch.arange(-600, 601)).double()}
            name_spec = dict(spec, name="bert" if spec["kind"] == "bert" else spec["name"])
            texts, rows = spec["cases"]
            write(name_spec, head, enc, rows, texts, extra)
        if spec["kind"] in ("bert", "roberta") and spec["name"] != "xlmr":
            texts, rows = spec["cases"]
            max_len = 40 if spec["kind"] == "bert" else 62
            write_pairs(dict(spec, name="bert" if spec["kind"] == "bert" else spec["name"]), enc,
                        texts, rows, max_len, spec["kind"])
            if spec["kind"] == "bert":  # an NLI classifier of pairs, three labels
                write_pairs(dict(spec, name="bert"), enc, texts, rows, max_len, "bert",
                            NLI_LABELS, "nli")
        if spec["name"] == "roberta":  # RobertaModel(add_pooling_layer=False)'s folder
            write(dict(spec, name="roberta-nopooler", no_pooler=True), "base", enc, *reversed(spec["cases"]))


if __name__ == "__main__":
    main()
