#!/usr/bin/python3
"""Writes the base-model micro checkpoints and their float64 features (run by hand; the project
never runs it).

Random-weight models in the exact layout transformers' save_pretrained gives a base model (no
"vit." / "bert." prefix, no classifier), with a float64 forward after modeling_vit.py and
modeling_bert.py (eval mode, no transformers import):

  vit-base-micro   ViTModel, as google/vit-base-patch16-224-in21k is saved: embeddings.*,
                   encoder.layer.*, layernorm.*, pooler.dense.* (ViTPooler, add_pooling_layer
                   True); image_size 32, patch 8 (16 patches), hidden 24, 2 heads, 2 layers, MLP
                   48, exact GELU. golden.safetensors: `pixels` [2, 3, 32, 32] (random normal),
                   `cls` last_hidden_state[:, 0] and `mean` the mean of its patch rows, [2, 24]
  bert-base-micro  BertModel (embeddings.*, encoder.layer.*, pooler.dense.*): vocabulary of 24
                   words (vocab.txt, lower case), hidden 32, 4 heads, 2 layers, MLP 64, 40
                   positions. golden.safetensors: `cls` the last hidden state at [CLS], `mean`
                   its mean over the tokens, `pooler` pooler_output (tanh of pooler.dense on
                   [CLS]), each [3, 32], for the texts in its metadata (three lengths: one batch
                   must not leak padding into any)

usage: /usr/bin/python3 tools/base_model_reference.py
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_reference import bert_forward as hf_bert_forward  # noqa: E402
from hf_reference import config_json, forward, random_weights, write_json, write_safetensors  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")

VIT = dict(kind="vit", arch="ViTModel", seed=40, image=32, patch=8, hidden=24, layers=2, heads=2,
           mlp=48, eps=1e-12, qkv_bias=True, labels=[])
WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "far", "away", "from", "home",
         "it", "was", "good", "bad", "very", "and", "then", "slept", "in", "sun", "my", "old"]
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TEXTS = ["the cat sat on the mat", "a dog ran", "it was very good and then my old dog slept in "
         "the sun"]
BERT = dict(vocab=len(SPECIAL) + len(WORDS), hidden=32, layers=2, heads=4, mlp=64, positions=40,
            eps=1e-12, seed=41)


def vit_model():
    out = os.path.join(DATA, "vit-base-micro")
    os.makedirs(out, exist_ok=True)
    w = {k[len("vit."):]: v for k, v in random_weights(VIT).items() if k.startswith("vit.")}
    g = torch.Generator().manual_seed(VIT["seed"] + 100)
    D = VIT["hidden"]
    w["pooler.dense.weight"] = (torch.randn(D, D, generator=g, dtype=torch.float64) * 0.2).float().double()
    w["pooler.dense.bias"] = (torch.randn(D, generator=g, dtype=torch.float64) * 0.1).float().double()
    cfg = config_json(VIT)
    for k in ("id2label", "label2id"):
        del cfg[k]
    write_json(os.path.join(out, "config.json"), cfg)
    write_json(os.path.join(out, "preprocessor_config.json"),
               {"do_normalize": True, "do_rescale": True, "do_resize": True,
                "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
                "image_processor_type": "ViTImageProcessor", "resample": 2,
                "rescale_factor": 0.00392156862745098, "size": {"height": 32, "width": 32}})
    write_safetensors(os.path.join(out, "model.safetensors"), {k: v.float() for k, v in w.items()},
                      {"format": "pt"})
    pixels = torch.randn(2, 3, 32, 32, generator=g, dtype=torch.float64).float()
    h = forward(w, cfg, pixels.double())["states"]["layernorm"]
    gold = {"pixels": pixels, "cls": h[:, 0].float(), "mean": h[:, 1:].mean(1).float()}
    write_safetensors(os.path.join(out, "golden.safetensors"), gold)
    print(out, {k: list(v.shape) for k, v in gold.items()})


def bert_weights():
    g = torch.Generator().manual_seed(BERT["seed"])
    D, I = BERT["hidden"], BERT["mlp"]

    def rnd(*shape, std=0.2, mean=0.0):
        return (torch.randn(*shape, generator=g, dtype=torch.float64) * std + mean).float().double()

    e = "embeddings."
    w = {e + "word_embeddings.weight": rnd(BERT["vocab"], D, std=0.5),
         e + "position_embeddings.weight": rnd(BERT["positions"], D, std=0.3),
         e + "token_type_embeddings.weight": rnd(2, D, std=0.3),
         e + "LayerNorm.weight": rnd(D, std=0.1, mean=1.0), e + "LayerNorm.bias": rnd(D, std=0.1)}
    for l in range(BERT["layers"]):
        p = f"encoder.layer.{l}."
        for name, o, i in (("attention.self.query", D, D), ("attention.self.key", D, D),
                           ("attention.self.value", D, D), ("attention.output.dense", D, D),
                           ("intermediate.dense", I, D), ("output.dense", D, I)):
            w[p + name + ".weight"], w[p + name + ".bias"] = rnd(o, i), rnd(o, std=0.1)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[p + ln + ".weight"], w[p + ln + ".bias"] = rnd(D, std=0.1, mean=1.0), rnd(D, std=0.1)
    w["pooler.dense.weight"], w["pooler.dense.bias"] = rnd(D, D), rnd(D, std=0.1)
    return w


def bert_forward(w, ids):
    """modeling_bert.py's BertModel in eval mode on one text: (last hidden state [T, D],
    pooler_output [D])."""
    cfg = {"hidden_size": BERT["hidden"], "num_attention_heads": BERT["heads"],
           "num_hidden_layers": BERT["layers"], "layer_norm_eps": BERT["eps"]}
    return hf_bert_forward(w, "", cfg, ids)


def bert_model():
    out = os.path.join(DATA, "bert-base-micro")
    os.makedirs(out, exist_ok=True)
    vocab = SPECIAL + WORDS
    with open(os.path.join(out, "vocab.txt"), "w") as f:
        f.write("".join(t + "\n" for t in vocab))
    write_json(os.path.join(out, "tokenizer_config.json"),
               {"do_lower_case": True, "model_max_length": BERT["positions"],
                "tokenizer_class": "BertTokenizer", "unk_token": "[UNK]", "sep_token": "[SEP]",
                "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]"})
    cfg = {"architectures": ["BertModel"], "model_type": "bert", "vocab_size": BERT["vocab"],
           "hidden_size": BERT["hidden"], "num_hidden_layers": BERT["layers"],
           "num_attention_heads": BERT["heads"], "intermediate_size": BERT["mlp"],
           "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
           "max_position_embeddings": BERT["positions"], "type_vocab_size": 2,
           "initializer_range": 0.02, "layer_norm_eps": BERT["eps"], "pad_token_id": 0,
           "position_embedding_type": "absolute", "torch_dtype": "float32"}
    write_json(os.path.join(out, "config.json"), cfg)
    w = bert_weights()
    write_safetensors(os.path.join(out, "model.safetensors"), {k: v.float() for k, v in w.items()},
                      {"format": "pt"})
    rows = []
    for text in TEXTS:
        ids = [vocab.index("[CLS]")] + [vocab.index(t) for t in text.split()] + [vocab.index("[SEP]")]
        h, pooled = bert_forward(w, torch.tensor(ids))
        rows.append((h[0], h.mean(0), pooled))
    gold = {name: torch.stack([r[i] for r in rows]).float()
            for i, name in enumerate(("cls", "mean", "pooler"))}
    write_safetensors(os.path.join(out, "golden.safetensors"), gold, {"texts": json.dumps(TEXTS)})
    print(out, {k: list(v.shape) for k, v in gold.items()})


if __name__ == "__main__":
    vit_model()
    bert_model()
