#!/usr/bin/python3
"""Writes the sentence-transformers micro folders and their float64 embeddings (run by hand; the
project never runs it).

Each folder is in the layout SentenceTransformer.save writes (modules.json, 1_Pooling/config.json,
Dense folders with config.json and model.safetensors, sentence_bert_config.json,
config_sentence_transformers.json) around tests/data/bert-base-micro's BertModel (its weights,
vocab.txt and tokenizer_config.json, copied). The pipeline is re-implemented in float64 from
sentence-transformers' models/Pooling.py, Dense.py, Normalize.py and SentenceTransformer.encode
(no sentence_transformers import; the BERT forward is tools/hf_reference.py's):

  st-mean-micro       Transformer at the root, mean pooling, Normalize (all-MiniLM-L6-v2's
                      shape); max_seq_length 12 cuts the long text (15 tokens)
  st-cls-dense-micro  Transformer in 0_Transformer/, CLS pooling, Dense 32 -> 16 with Tanh and a
                      bias, Normalize (LaBSE's shape)
  st-multi-micro      every pooling mode at once (cls, max, mean, mean_sqrt_len, weightedmean,
                      lasttoken: 6 x 32 concatenated in Pooling's order), Dense 192 -> 24 with
                      Identity and no bias, no Normalize; golden also holds each mode alone
  st-prompt-micro     mean pooling with include_prompt false, Normalize, prompts {"query": "my old
                      ", "passage": "the "}, default_prompt_name "query" (e5's use); golden holds the
                      default prompt's, the passage prompt's, the empty prompt's ("": as encode's
                      prompt="", its length 1, so [CLS] is left out of the mean), and the default's
                      cut to 8 dimensions and normalised again (Matryoshka)

  st-dense-bin/pytorch_model.bin  st-cls-dense-micro's Dense weights as torch.save writes a
                      state_dict (older sentence-transformers saved Dense so): the test puts it in
                      a copy of that folder in place of 2_Dense/model.safetensors

golden.safetensors beside modules.json: `sentence` [3, out] for the texts in its metadata (three
lengths: one batch must not leak padding into any), and the extra names above.

usage: /usr/bin/python3 tools/sentence_transformers_reference.py
"""
import json
import math
import os
import shutil
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_reference import bert_forward, read_safetensors, write_json, write_safetensors  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
BERT = os.path.join(DATA, "bert-base-micro")
TEXTS = ["the cat sat on the mat", "a dog ran",
         "it was very good and then my old dog slept in the sun"]
MODES = ["cls", "max", "mean", "mean_sqrt_len", "weightedmean", "lasttoken"]
KEYS = {"cls": "pooling_mode_cls_token", "max": "pooling_mode_max_tokens",
        "mean": "pooling_mode_mean_tokens", "mean_sqrt_len": "pooling_mode_mean_sqrt_len_tokens",
        "weightedmean": "pooling_mode_weightedmean_tokens", "lasttoken": "pooling_mode_lasttoken"}
ACT = {"tanh": "torch.nn.modules.activation.Tanh", "identity": "torch.nn.modules.linear.Identity"}


def vocab():
    with open(os.path.join(BERT, "vocab.txt")) as f:
        return [line.rstrip("\n") for line in f]


def token_ids(text, limit):
    """BertTokenizer on these texts (lower-case words of the vocabulary): [CLS] words [SEP], cut
    to limit keeping [SEP] (truncation=True, max_length=limit)."""
    v = vocab()
    words = [v.index(t) for t in text.split()][:limit - 2]
    return [v.index("[CLS]")] + words + [v.index("[SEP]")]


def pool(h, modes, skip):
    """models.Pooling on one text's rows h [T, D] (no padding: one text at a time, which is what a
    padded batch's mask leaves); the first skip tokens out as padding (include_prompt false)."""
    T = h.shape[0]
    mask = torch.ones(T, dtype=torch.float64)
    mask[:skip] = 0
    out = []
    for m in MODES:
        if m not in modes:
            continue
        if m == "cls":
            out.append(h[0])
        elif m == "max":
            out.append(torch.where(mask[:, None] > 0, h, torch.full_like(h, -1e9)).max(0).values)
        elif m in ("mean", "mean_sqrt_len"):
            s, n = (h * mask[:, None]).sum(0), max(mask.sum().item(), 1e-9)
            out.append(s / n if m == "mean" else s / math.sqrt(n))
        elif m == "weightedmean":
            wt = mask * torch.arange(1, T + 1, dtype=torch.float64)
            out.append((h * wt[:, None]).sum(0) / max(wt.sum().item(), 1e-9))
        else:
            idx = [t for t in range(T) if mask[t] > 0]
            out.append(h[idx[-1]] if idx else torch.zeros_like(h[0]))
    return torch.cat(out)


def random_dense(seed, n_in, n_out, bias):
    g = torch.Generator().manual_seed(seed)
    w = {"linear.weight": (torch.randn(n_out, n_in, generator=g, dtype=torch.float64) * 0.3)}
    if bias:
        w["linear.bias"] = torch.randn(n_out, generator=g, dtype=torch.float64) * 0.1
    return {k: v.float().double() for k, v in w.items()}


def write_transformer(out, max_seq_length):
    os.makedirs(out, exist_ok=True)
    for f in ("config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json"):
        shutil.copy(os.path.join(BERT, f), os.path.join(out, f))
    write_json(os.path.join(out, "sentence_bert_config.json"),
               {"max_seq_length": max_seq_length, "do_lower_case": False})


def embed(spec, w, text, prompt=None):
    """SentenceTransformer.encode on one text: prompt + text tokenized, the prompt's length the
    prompt tokenized alone less one (for any prompt that is not None, "" included: then [CLS]),
    the Transformer, the Pooling, the Dense / Normalize steps."""
    cfg = {"hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2,
           "layer_norm_eps": 1e-12}
    ids = token_ids((prompt or "") + text, spec["max_seq_length"])
    skip = len(token_ids(prompt, spec["max_seq_length"])) - 1 if prompt is not None else 0
    h, _ = bert_forward(w, "", cfg, torch.tensor(ids))
    x = pool(h, spec["modes"], 0 if spec.get("include_prompt", True) else skip)
    for step in spec["steps"]:
        if step == "normalize":
            x = F.normalize(x, dim=0)
        else:
            d = spec["dense"][step]
            x = F.linear(x, d["w"]["linear.weight"], d["w"].get("linear.bias"))
            x = torch.tanh(x) if d["act"] == "tanh" else x
    return x


def write_st_folder(name, spec):
    out = os.path.join(DATA, name)
    shutil.rmtree(out, ignore_errors=True)
    tpath = spec.get("transformer_path", "")
    write_transformer(os.path.join(out, tpath), spec["max_seq_length"])
    modules = [{"idx": 0, "name": "0", "path": tpath,
                "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling",
                "type": "sentence_transformers.models.Pooling"}]
    pooling = {"word_embedding_dimension": 32}
    pooling.update({KEYS[m]: m in spec["modes"] for m in MODES})
    pooling["include_prompt"] = spec.get("include_prompt", True)
    os.makedirs(os.path.join(out, "1_Pooling"))
    write_json(os.path.join(out, "1_Pooling", "config.json"), pooling)
    for i, step in enumerate(spec["steps"]):
        idx = i + 2
        if step == "normalize":
            modules.append({"idx": idx, "name": str(idx), "path": f"{idx}_Normalize",
                            "type": "sentence_transformers.models.Normalize"})
            continue
        d = spec["dense"][step]
        sub = os.path.join(out, f"{idx}_Dense")
        os.makedirs(sub)
        write_json(os.path.join(sub, "config.json"),
                   {"in_features": d["in"], "out_features": d["out"], "bias": d["bias"],
                    "activation_function": ACT[d["act"]]})
        write_safetensors(os.path.join(sub, "model.safetensors"),
                          {k: v.float() for k, v in d["w"].items()})
        modules.append({"idx": idx, "name": str(idx), "path": f"{idx}_Dense",
                        "type": "sentence_transformers.models.Dense"})
    write_json(os.path.join(out, "modules.json"), modules)
    st_cfg = {"__version__": {"sentence_transformers": "3.0.1"}, "prompts": spec.get("prompts", {}),
              "default_prompt_name": spec.get("default_prompt"), "similarity_fn_name": "cosine"}
    write_json(os.path.join(out, "config_sentence_transformers.json"), st_cfg)
    w, _ = read_safetensors(os.path.join(BERT, "model.safetensors"))
    w = {k: v.double() for k, v in w.items()}
    default = spec.get("prompts", {}).get(spec.get("default_prompt"))
    gold = {"sentence": torch.stack([embed(spec, w, t, default) for t in TEXTS])}
    for key, (modes, prompt, dims) in spec.get("extra", {}).items():
        sub = dict(spec, modes=modes if modes else spec["modes"], steps=spec["steps"] if not modes else [])
        rows = torch.stack([embed(sub, w, t, prompt) for t in TEXTS])
        if dims:
            rows = F.normalize(rows[:, :dims], dim=1)
        gold[key] = rows
    write_safetensors(os.path.join(out, "golden.safetensors"), {k: v.float() for k, v in gold.items()},
                      {"texts": json.dumps(TEXTS)})
    print(out, {k: list(v.shape) for k, v in gold.items()})


def write_dense_bin():
    """st-cls-dense-micro's 2_Dense weights as pytorch_model.bin (torch.save's zip format)."""
    w, _ = read_safetensors(os.path.join(DATA, "st-cls-dense-micro", "2_Dense", "model.safetensors"))
    out = os.path.join(DATA, "st-dense-bin")
    os.makedirs(out, exist_ok=True)
    torch.save({k: w[k].clone() for k in ("linear.weight", "linear.bias")},
               os.path.join(out, "pytorch_model.bin"))
    print(out, "pytorch_model.bin")


def main():
    write_st_folder("st-mean-micro", {"modes": ["mean"], "steps": ["normalize"],
                                      "max_seq_length": 12})
    write_st_folder("st-cls-dense-micro", {
        "modes": ["cls"], "steps": [0, "normalize"], "max_seq_length": 40,
        "transformer_path": "0_Transformer",
        "dense": [{"in": 32, "out": 16, "bias": True, "act": "tanh",
                   "w": random_dense(51, 32, 16, True)}]})
    write_st_folder("st-multi-micro", {
        "modes": MODES, "steps": [0], "max_seq_length": 40,
        "dense": [{"in": 192, "out": 24, "bias": False, "act": "identity",
                   "w": random_dense(52, 192, 24, False)}],
        "extra": {m: ([m], None, 0) for m in MODES}})
    write_st_folder("st-prompt-micro", {
        "modes": ["mean"], "steps": ["normalize"], "max_seq_length": 40, "include_prompt": False,
        "prompts": {"query": "my old ", "passage": "the "}, "default_prompt": "query",
        "extra": {"passage": (None, "the ", 0), "none": (None, "", 0),
                  "dims8": (None, "my old ", 8)}})
    write_dense_bin()


if __name__ == "__main__":
    main()
