#!/usr/bin/python3
"""Writes NomicBERT's and JinaBERT v2's micro folders and their float64 outputs (run by hand; the
project never runs it).

Random weights in the layout of the Hub's checkpoints (config.json with the remote configuration
classes' keys, model.safetensors with the tensor names text-embeddings-inference's nomic.rs and
jina.rs load), as sentence-transformers folders (modules.json: Transformer, mean Pooling, and for
nomic-micro Normalize), under tests/data/:

- nomic-micro: nomic-embed-text-v1.5's settings (swiglu, rotary_emb_fraction 1, base 1000, the
  halves of each head, qkv_proj_bias, mlp_fc1_bias, mlp_fc2_bias false, no pooler in the file) at
  width 32, 2 heads of 16 (vit's fast attention), n_inner 200 (NomciBertGatedMLP rounds it up to 256), vocab_size 29 padded to
  a multiple of 8 (pad_vocab_size_multiple: 32 rows).
- nomic-geglu-micro: geglu, rotary on half of each head, interleaved pairs, base 10000, every bias,
  no token type embeddings (type_vocab_size 0), a pooler; 4 heads of 8 (vit's general attention).
- jina-micro: model_type bert, architectures JinaBertForMaskedLM, ALiBi, GeGLU (gated_layers
  without bias, wo, mlp.layernorm), width 48 and 3 heads of 16 (ALiBi's slopes for a count that
  is not a power of two; vit's fast attention), the tensors under "bert." as JinaBertForMaskedLM
  saves them, a pooler.
- jina-rerank-micro: jina-micro's architecture as JinaBertForSequenceClassification with one label
  (jina-reranker-v1-turbo-en's class: BERT's pooler and classifier), on pairs of the texts.

The forward is float64, written from contrastors' modeling_hf_nomic_bert.py (NomicBertModel:
embeddings + token type 0 -> emb_ln -> post-LN blocks: Wqkv, apply_rotary_emb on q and k with
rotate_half, softmax(q·k/sqrt(d) + mask), out_proj, norm1; NomciBertGatedMLP fc11(x) ·
act(fc12(x)), fc2, norm2) and from jina.rs / JinaBertModel (BERT's attention with the ALiBi tensor
-slope_h·|i - j| added to the scores, the slopes of get_slopes; JinaBertGLUMLP act(gated) ·
non_gated over gated_layers' halves, wo, layernorm(x + residual)). No transformers import. Each
folder's texts run in one batch padded to the longest (pad id 0, attention_mask) and each alone:
the two must agree (asserted). Token ids: the whole-word vocabulary of bert-base-micro, by hand.

golden.safetensors: hidden [N, Tmax, D] (zero past each text), sentence [N, D] (the folder's
pooling: mean over the text's tokens, then L2 for nomic-micro), pooled [N, D] (a folder with a
pooler: tanh(dense(token 0))); metadata texts and ids (JSON). jina-rerank-micro's: logits [N, 1];
metadata pairs, ids and types.

usage: /usr/bin/python3 tools/nomic_jina_reference.py
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
from text_encoders_reference import BERT_VOCAB, WORD_TEXTS, word_ids  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
LAYERS = 2
MAX_SEQ = 64  # sentence_bert_config.json's max_seq_length: the 72-token text is cut


class Weights:
    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(seed)
        self.w = {}

    def normal(self, name, *shape, std=0.3, mean=0.0):
        t = torch.randn(*shape, generator=self.g, dtype=torch.float64) * std + mean
        self.w[name] = t.float().double()  # float32-representable

    def linear(self, name, out, inp, bias=True):
        self.normal(name + ".weight", out, inp, std=inp ** -0.5)
        if bias:
            self.normal(name + ".bias", out, std=0.1)

    def norm(self, name, d):
        self.normal(name + ".weight", d, std=0.1, mean=1.0)
        self.normal(name + ".bias", d, std=0.1)


def linear(w, x, name):
    return F.linear(x, w[name + ".weight"], w.get(name + ".bias"))


def layer_norm(w, x, name, eps):
    return F.layer_norm(x, (x.shape[-1],), w[name + ".weight"], w[name + ".bias"], eps)


def attention(q, k, v, mask, bias):
    """q, k, v [B, H, T, d]; mask [B, T] (1: token); bias [H, T, T] or 0 -> [B, T, H·d]."""
    B, H, T, d = q.shape
    add = (1.0 - mask.double())[:, None, None, :] * torch.finfo(torch.float64).min
    scores = q @ k.transpose(-1, -2) / math.sqrt(d) + bias + add
    return (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(B, T, H * d)


# ---- NomicBERT ----

def rotate_half(x, interleaved):
    if not interleaved:
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def apply_rotary(x, rot, base, interleaved):
    """x [B, T, H, d]: the first rot columns of each head turned by position (apply_rotary_emb
    with NomicBertRotaryEmbedding's cos and sin, here in float64)."""
    T = x.shape[1]
    inv_freq = 1.0 / (base ** (torch.arange(0, rot, 2, dtype=torch.float64) / rot))
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)  # [T, rot/2]
    rep = (lambda t: t.repeat_interleave(2, -1)) if interleaved else (lambda t: t.repeat(1, 2))
    cos, sin = rep(torch.cos(freqs))[None, :, None, :], rep(torch.sin(freqs))[None, :, None, :]
    head = x[..., :rot]
    return torch.cat([head * cos + rotate_half(head, interleaved) * sin, x[..., rot:]], dim=-1)


def nomic_forward(w, cfg, ids, mask):
    B, T = ids.shape
    D, H = cfg["n_embd"], cfg["n_head"]
    d = D // H
    eps = cfg["layer_norm_epsilon"]
    rot = int(d * cfg["rotary_emb_fraction"])
    act = F.silu if cfg["activation_function"] == "swiglu" else F.gelu
    h = w["embeddings.word_embeddings.weight"][ids]
    if cfg["type_vocab_size"] > 0:
        h = h + w["embeddings.token_type_embeddings.weight"][0]
    h = layer_norm(w, h, "emb_ln", eps)
    for l in range(LAYERS):
        p = f"encoder.layers.{l}."
        qkv = linear(w, h, p + "attn.Wqkv").view(B, T, 3, H, d)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        q = apply_rotary(q, rot, cfg["rotary_emb_base"], cfg["rotary_emb_interleaved"])
        k = apply_rotary(k, rot, cfg["rotary_emb_base"], cfg["rotary_emb_interleaved"])
        ctx = attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), mask, 0)
        h = layer_norm(w, linear(w, ctx, p + "attn.out_proj") + h, p + "norm1", eps)
        y = linear(w, h, p + "mlp.fc11") * act(linear(w, h, p + "mlp.fc12"))
        h = layer_norm(w, linear(w, y, p + "mlp.fc2") + h, p + "norm2", eps)
    return h


def nomic_weights(cfg, seed, pooler):
    W = Weights(seed)
    D = cfg["n_embd"]
    I = (cfg["n_inner"] + 255) // 256 * 256  # NomciBertGatedMLP's multiple_of
    m = cfg["pad_vocab_size_multiple"]
    vocab = (cfg["vocab_size"] + m - 1) // m * m
    W.normal("embeddings.word_embeddings.weight", vocab, D)
    if cfg["type_vocab_size"] > 0:
        W.normal("embeddings.token_type_embeddings.weight", cfg["type_vocab_size"], D)
    W.norm("emb_ln", D)
    for l in range(LAYERS):
        p = f"encoder.layers.{l}."
        W.linear(p + "attn.Wqkv", 3 * D, D, cfg["qkv_proj_bias"])
        W.linear(p + "attn.out_proj", D, D, cfg["qkv_proj_bias"])
        W.norm(p + "norm1", D)
        W.linear(p + "mlp.fc11", I, D, cfg["mlp_fc1_bias"])
        W.linear(p + "mlp.fc12", I, D, cfg["mlp_fc1_bias"])
        W.linear(p + "mlp.fc2", D, I, cfg["mlp_fc2_bias"])
        W.norm(p + "norm2", D)
    if pooler:
        W.linear("pooler.dense", D, D)
    return W.w


def nomic_config(**over):
    cfg = {"activation_function": "swiglu", "architectures": ["NomicBertModel"], "attn_pdrop": 0.0,
           "auto_map": {
               "AutoConfig": "nomic-ai/nomic-bert-2048--configuration_hf_nomic_bert.NomicBertConfig",
               "AutoModel": "nomic-ai/nomic-bert-2048--modeling_hf_nomic_bert.NomicBertModel"},
           "bos_token_id": None, "causal": False, "dense_seq_output": True, "embd_pdrop": 0.0,
           "eos_token_id": None, "fused_bias_fc": True, "fused_dropout_add_ln": True,
           "initializer_range": 0.02, "layer_norm_epsilon": 1e-12, "max_trained_positions": 2048,
           "mlp_fc1_bias": False, "mlp_fc2_bias": False, "model_type": "nomic_bert", "n_embd": 32,
           "n_head": 2, "n_inner": 200, "n_layer": LAYERS, "n_positions": 128,
           "pad_vocab_size_multiple": 8, "parallel_block": False,
           "parallel_block_tied_norm": False, "prenorm": False, "qkv_proj_bias": False,
           "reorder_and_upcast_attn": False, "resid_pdrop": 0.0, "rotary_emb_base": 1000,
           "rotary_emb_fraction": 1.0, "rotary_emb_interleaved": False,
           "rotary_emb_scale_base": None, "rotary_scaling_factor": None,
           "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True,
           "torch_dtype": "float32", "transformers_version": "4.34.0", "type_vocab_size": 2,
           "use_cache": True, "use_flash_attn": True, "use_rms_norm": False, "use_xentropy": True,
           "vocab_size": len(BERT_VOCAB)}
    cfg.update(over)
    return cfg


# ---- JinaBERT v2 ----

def alibi_slopes(n):
    """get_slopes of the ALiBi paper (JinaBertEncoder's _get_alibi_head_slopes)."""
    def power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][: n - closest]


def jina_forward(w, cfg, ids, mask, types=None):
    B, T = ids.shape
    D, H, I = cfg["hidden_size"], cfg["num_attention_heads"], cfg["intermediate_size"]
    d, eps = D // H, cfg["layer_norm_eps"]
    e = "bert.embeddings."
    types = torch.zeros_like(ids) if types is None else types
    h = w[e + "word_embeddings.weight"][ids] + w[e + "token_type_embeddings.weight"][types]
    h = layer_norm(w, h, e + "LayerNorm", eps)
    r = torch.arange(T)
    dist = (r[None, :] - r[:, None]).abs().double()
    bias = -torch.tensor(alibi_slopes(H), dtype=torch.float64)[:, None, None] * dist
    for l in range(LAYERS):
        p = f"bert.encoder.layer.{l}."
        q, k, v = (linear(w, h, p + "attention.self." + s).view(B, T, H, d).transpose(1, 2)
                   for s in ("query", "key", "value"))
        ctx = attention(q, k, v, mask, bias)
        h = layer_norm(w, linear(w, ctx, p + "attention.output.dense") + h,
                       p + "attention.output.LayerNorm", eps)
        g = linear(w, h, p + "mlp.gated_layers")
        y = F.gelu(g[..., :I]) * g[..., I:]
        h = layer_norm(w, linear(w, y, p + "mlp.wo") + h, p + "mlp.layernorm", eps)
    return h


def jina_weights(cfg, seed):
    W = Weights(seed)
    D, I = cfg["hidden_size"], cfg["intermediate_size"]
    e = "bert.embeddings."
    W.normal(e + "word_embeddings.weight", cfg["vocab_size"], D)
    W.normal(e + "token_type_embeddings.weight", cfg["type_vocab_size"], D)
    W.norm(e + "LayerNorm", D)
    for l in range(LAYERS):
        p = f"bert.encoder.layer.{l}."
        for s in ("query", "key", "value"):
            W.linear(p + "attention.self." + s, D, D)
        W.linear(p + "attention.output.dense", D, D)
        W.norm(p + "attention.output.LayerNorm", D)
        W.linear(p + "mlp.gated_layers", 2 * I, D, bias=False)
        W.linear(p + "mlp.wo", D, I)
        W.norm(p + "mlp.layernorm", D)
    W.linear("bert.pooler.dense", D, D)
    return W.w


def jina_config():
    return {"_name_or_path": "jinaai/jina-bert-implementation",
            "architectures": ["JinaBertForMaskedLM"], "attention_probs_dropout_prob": 0.0,
            "attn_implementation": "torch",
            "auto_map": {
                "AutoConfig": "jinaai/jina-bert-implementation--configuration_bert.JinaBertConfig",
                "AutoModel": "jinaai/jina-bert-implementation--modeling_bert.JinaBertModel",
                "AutoModelForMaskedLM":
                    "jinaai/jina-bert-implementation--modeling_bert.JinaBertForMaskedLM"},
            "classifier_dropout": None, "emb_pooler": "mean", "feed_forward_type": "geglu",
            "gradient_checkpointing": False, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
            "hidden_size": 48, "initializer_range": 0.02, "intermediate_size": 64,
            "layer_norm_eps": 1e-12, "max_position_embeddings": 128, "model_max_length": 128,
            "model_type": "bert", "num_attention_heads": 3, "num_hidden_layers": LAYERS,
            "pad_token_id": 0, "position_embedding_type": "alibi", "torch_dtype": "float32",
            "transformers_version": "4.26.0", "type_vocab_size": 2, "use_cache": True,
            "vocab_size": len(BERT_VOCAB)}


# ---- folders ----

def run(fwd, w, cfg, rows):
    """hidden [N, T, D] zero past each text from one padded batch, each text alone agreeing."""
    T = max(len(r) for r in rows)
    ids = torch.tensor([r + [0] * (T - len(r)) for r in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (T - len(r)) for r in rows])
    h = fwd(w, cfg, ids, mask) * mask[:, :, None]
    for i, r in enumerate(rows):
        alone = fwd(w, cfg, torch.tensor([r]), torch.ones(1, len(r), dtype=torch.long))[0]
        assert (alone - h[i, : len(r)]).abs().max() < 1e-12, i
    return h


def st_files(out, dim, normalize):
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling",
                "type": "sentence_transformers.models.Pooling"}]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize",
                        "type": "sentence_transformers.models.Normalize"})
    write_json(os.path.join(out, "modules.json"), modules)
    os.makedirs(os.path.join(out, "1_Pooling"))
    write_json(os.path.join(out, "1_Pooling", "config.json"),
               {"word_embedding_dimension": dim, "pooling_mode_cls_token": False,
                "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
                "pooling_mode_mean_sqrt_len_tokens": False, "pooling_mode_weightedmean_tokens": False,
                "pooling_mode_lasttoken": False, "include_prompt": True})
    write_json(os.path.join(out, "sentence_bert_config.json"),
               {"max_seq_length": MAX_SEQ, "do_lower_case": False})
    shutil.copy(os.path.join(DATA, "bert-base-micro", "vocab.txt"), out)
    write_json(os.path.join(out, "tokenizer_config.json"),
               {"do_lower_case": True, "model_max_length": 128, "tokenizer_class": "BertTokenizer",
                "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                "cls_token": "[CLS]", "mask_token": "[MASK]"})


def write(name, cfg, w, fwd, normalize, pooler_name):
    out = os.path.join(DATA, name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    rows = [word_ids(BERT_VOCAB, "[CLS]", "[SEP]", "[UNK]", t, MAX_SEQ) for t in WORD_TEXTS]
    h = run(fwd, w, cfg, rows)
    lengths = torch.tensor([len(r) for r in rows], dtype=torch.float64)
    sentence = h.sum(1) / lengths[:, None]
    if normalize:
        sentence = F.normalize(sentence, dim=-1)
    gold = {"hidden": h, "sentence": sentence}
    if pooler_name:
        gold["pooled"] = torch.tanh(linear(w, h[:, 0], pooler_name))
    write_json(os.path.join(out, "config.json"), cfg)
    write_safetensors(os.path.join(out, "model.safetensors"), w)
    meta = {"texts": json.dumps(WORD_TEXTS), "ids": json.dumps(rows)}
    write_safetensors(os.path.join(out, "golden.safetensors"), gold, meta)
    st_files(out, h.shape[-1], normalize)
    print(name, {k: list(v.shape) for k, v in gold.items()})


def write_reranker(name, cfg, w):
    """A JinaBertForSequenceClassification with one label (jina-reranker-v1's: the pooler, then
    classifier) on (query, text) for every text, (text, query) and the last text with itself, each
    pair [CLS] a [SEP] b [SEP] with b of token type 1, cut longest first to model_max_length 40;
    golden logits [N, 1] of one padded batch, each pair alone agreeing."""
    from text_encoders_reference import pair_ids
    out = os.path.join(DATA, name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    rows = [word_ids(BERT_VOCAB, "[CLS]", "[SEP]", "[UNK]", t, 128) for t in WORD_TEXTS]
    n = len(WORD_TEXTS)
    pairs = [(0, i) for i in range(n)] + [(i, 0) for i in range(1, n)] + [(n - 1, n - 1)]
    built = [pair_ids(rows[i], rows[j], 40, "bert") for i, j in pairs]
    T = max(len(r) for r, _ in built)
    ids = torch.tensor([r + [0] * (T - len(r)) for r, _ in built])
    types = torch.tensor([t + [0] * (T - len(t)) for _, t in built])
    mask = torch.tensor([[1] * len(r) + [0] * (T - len(r)) for r, _ in built])
    head = lambda h: linear(w, torch.tanh(linear(w, h[:, 0], "bert.pooler.dense")), "classifier")
    logits = head(jina_forward(w, cfg, ids, mask, types))
    for k, (r, t) in enumerate(built):
        one = head(jina_forward(w, cfg, torch.tensor([r]), torch.ones(1, len(r), dtype=torch.long),
                                torch.tensor([t])))
        assert (one[0] - logits[k]).abs().max() < 1e-12, k
    write_json(os.path.join(out, "config.json"), cfg)
    write_safetensors(os.path.join(out, "model.safetensors"), w)
    meta = {"pairs": json.dumps([[WORD_TEXTS[i], WORD_TEXTS[j]] for i, j in pairs]),
            "ids": json.dumps([r for r, _ in built]), "types": json.dumps([t for _, t in built])}
    write_safetensors(os.path.join(out, "golden.safetensors"), {"logits": logits}, meta)
    shutil.copy(os.path.join(DATA, "bert-base-micro", "vocab.txt"), out)
    shutil.copy(os.path.join(DATA, "bert-base-micro", "tokenizer_config.json"), out)
    print(name, list(logits.shape))


def main():
    cfg = nomic_config()
    write("nomic-micro", cfg, nomic_weights(cfg, 470, False), nomic_forward, True, None)
    cfg = nomic_config(activation_function="geglu", rotary_emb_fraction=0.5, rotary_emb_base=10000,
                       rotary_emb_interleaved=True, qkv_proj_bias=True, mlp_fc1_bias=True,
                       mlp_fc2_bias=True, type_vocab_size=0, n_inner=256, n_head=4,
                       pad_vocab_size_multiple=1)
    write("nomic-geglu-micro", cfg, nomic_weights(cfg, 480, True), nomic_forward, False,
          "pooler.dense")
    cfg = jina_config()
    write("jina-micro", cfg, jina_weights(cfg, 490), jina_forward, False, "bert.pooler.dense")
    cfg = dict(jina_config(), architectures=["JinaBertForSequenceClassification"],
               id2label={"0": "LABEL_0"}, label2id={"LABEL_0": 0})
    W = Weights(500)
    W.linear("classifier", 1, cfg["hidden_size"])
    w = dict(jina_weights(cfg, 495), **W.w)
    write_reranker("jina-rerank-micro", cfg, w)


if __name__ == "__main__":
    main()
