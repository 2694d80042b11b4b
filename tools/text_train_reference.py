#!/usr/bin/python3
"""Writes the float64 loss and gradients of one training batch for the text encoders' micro
classifiers (run by hand; the project never runs it): tests/data/<folder>/train_golden.safetensors,
read by tests/test_text_encoders_grad.c.

For each folder (RoBERTa, XLM-R, DistilBERT, MPNet as sequence and token classifiers, BERT's token
classifier and its NLI pair classifier with two token types) the weights are read from the
folder's model.safetensors and the forward is text_encoders_reference.py's float64 one (written
from transformers' modeling_roberta.py, modeling_distilbert.py, modeling_mpnet.py and
modeling_bert.py: RoBERTa's positions from padding_idx + 1, MPNet's relative position bias from its
one table, DistilBERT's pre_classifier + ReLU, RobertaClassificationHead's dense + tanh +
out_proj), in eval mode (no dropout). The loss is as the ...For*Classification classes compute it:
CrossEntropyLoss (mean) on the sequence's logits, or on every token whose label is not -100 (the
labels of HF's token-classification example: the first sub-token of each word, -100 on the
special tokens and the padding). Gradients of every tensor by autograd.

train_golden.safetensors: loss [1], grad.<tensor name> for every tensor of the folder; metadata
ids, types (token type ids, pairs only), labels (per sequence, or per token with -100), JSON.

With --check SAVED SOURCE (run by tests/test_text_encoders_train.c): the float64 outputs of the
folder vit train saved in SAVED on SOURCE's golden texts (their ids from SOURCE's
golden.safetensors), read with transformers' tensor names and config keys as save_pretrained
writes them: a JSON line {"texts" or "pairs", "logits" (per text, or per text and token)}; and,
where transformers is installed, its AutoModelFor...Classification.from_pretrained(SAVED) on the
same ids, which must agree ("transformers": the largest difference, or why it was skipped).

usage: /usr/bin/python3 tools/text_train_reference.py [--check SAVED SOURCE]
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_reference import read_safetensors, write_safetensors  # noqa: E402
from text_encoders_reference import DATA, forward, pad_batch  # noqa: E402

# folder -> kind, prefix, layer_norm_eps, RoBERTa's padding index (None: positions 0..T-1), pad id
FAMILIES = {
    "roberta": ("roberta", "roberta.", 1e-5, 1, 1),
    "xlmr": ("roberta", "roberta.", 1e-5, 1, 1),
    "distilbert": ("distilbert", "distilbert.", 1e-12, None, 0),
    "mpnet": ("mpnet", "mpnet.", 1e-5, 1, 1),
    "bert": ("bert", "bert.", 1e-12, None, 0),
}
FOLDERS = ["roberta-seq-micro", "xlmr-seq-micro", "distilbert-seq-micro", "mpnet-seq-micro",
           "bert-nli-micro", "roberta-tok-micro", "xlmr-tok-micro", "distilbert-tok-micro",
           "mpnet-tok-micro", "bert-tok-micro"]
HEADS = {  # sequence heads: dense, out (RoBERTa's and MPNet's names are unprefixed)
    "roberta": ("classifier.dense", "classifier.out_proj"),
    "distilbert": ("pre_classifier", "classifier"),
    "mpnet": ("classifier.dense", "classifier.out_proj"),
    "bert": ("bert.pooler.dense", "classifier"),
}
ROWS = 3  # sequences in the batch, of different lengths so that two are padded


def batch_of(meta, pairs):
    ids = json.loads(meta["ids"])
    if pairs:
        pick = [0, 2, 7]
        return [ids[i] for i in pick], [json.loads(meta["types"])[i] for i in pick]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    # the three shortest non-trivial texts (more than the two special tokens), longest first
    rows = [ids[i] for i in order if len(ids[i]) > 2][:ROWS]
    return rows[::-1], None


def token_labels(rows, T, K):
    """Per token: -100 on the special tokens, the padding and every third word piece (a later
    sub-token of a word), else (b + t) % K."""
    out = []
    for b, r in enumerate(rows):
        lab = []
        for t in range(T):
            inside = 0 < t < len(r) - 1
            lab.append((b + t) % K if inside and t % 3 != 2 else -100)
        out.append(lab)
    return out


MODEL_TYPES = {"roberta": "roberta", "xlm-roberta": "xlmr", "distilbert": "distilbert",
               "mpnet": "mpnet", "bert": "bert"}


def check(saved, source):
    cfg = json.load(open(os.path.join(saved, "config.json")))
    kind, prefix, eps, pos_pad, pad = FAMILIES[MODEL_TYPES[cfg["model_type"]]]
    w = {k: v.double() for k, v in read_safetensors(os.path.join(saved, "model.safetensors"))[0].items()}
    _, meta = read_safetensors(os.path.join(source, "golden.safetensors"))
    rows = json.loads(meta["ids"])
    types = json.loads(meta["types"]) if "types" in meta else None
    keep = [i for i, r in enumerate(rows) if len(r) > 2]  # vit train reads no empty text
    rows = [rows[i] for i in keep]
    ids, mask = pad_batch(rows, pad)
    typ = pad_batch([types[i] for i in keep], 0)[0] if types else None
    h = forward(w, kind, prefix, ids, mask, eps, F.gelu, pos_pad, typ)
    tok = cfg["architectures"][0].endswith("ForTokenClassification")
    if tok:
        logits = F.linear(h, w["classifier.weight"], w["classifier.bias"])
        logits = [logits[i, :len(r)].tolist() for i, r in enumerate(rows)]
    else:
        dense, out = HEADS[kind]
        x = F.linear(h[:, 0], w[dense + ".weight"], w[dense + ".bias"])
        x = F.relu(x) if kind == "distilbert" else torch.tanh(x)
        logits = F.linear(x, w[out + ".weight"], w[out + ".bias"]).tolist()
    key = "pairs" if "pairs" in meta else "texts"
    result = {key: [json.loads(meta[key])[i] for i in keep], "logits": logits}
    try:
        import transformers
    except ImportError:
        result["transformers"] = "skipped: transformers is not installed"
    else:
        auto = (transformers.AutoModelForTokenClassification if tok
                else transformers.AutoModelForSequenceClassification)
        model = auto.from_pretrained(saved).double().eval()
        with torch.no_grad():
            got = model(input_ids=ids, attention_mask=mask, token_type_ids=typ).logits
        worst = 0.0
        for i, r in enumerate(rows):
            want = torch.tensor(logits[i], dtype=torch.float64)
            worst = max(worst, float((got[i, :len(r)] if tok else got[i]).sub(want).abs().max()))
        result["transformers"] = worst
    print(json.dumps(result))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--check":
        return check(sys.argv[2], sys.argv[3])
    for folder in FOLDERS:
        d = os.path.join(DATA, folder)
        family = folder.split("-")[0]
        kind, prefix, eps, pos_pad, pad = FAMILIES[family]
        cfg = json.load(open(os.path.join(d, "config.json")))
        K = len(cfg["id2label"])
        tok = folder.endswith("-tok-micro")
        w32, _ = read_safetensors(os.path.join(d, "model.safetensors"))
        w = {k: v.double().requires_grad_(True) for k, v in w32.items()}
        _, meta = read_safetensors(os.path.join(d, "golden.safetensors"))
        rows, types = batch_of(meta, "types" in meta)
        ids, mask = pad_batch(rows, pad)
        typ = pad_batch(types, 0)[0] if types else None
        B, T = ids.shape
        h = forward(w, kind, prefix, ids, mask, eps, F.gelu, pos_pad, typ)
        if tok:
            labels = token_labels(rows, T, K)
            logits = F.linear(h, w["classifier.weight"], w["classifier.bias"])
            loss = F.cross_entropy(logits.reshape(B * T, K), torch.tensor(labels).reshape(-1),
                                   ignore_index=-100)
        else:
            labels = [(2 * b + 1) % K for b in range(B)]
            dense, out = HEADS[kind]
            x = F.linear(h[:, 0], w[dense + ".weight"], w[dense + ".bias"])
            x = F.relu(x) if kind == "distilbert" else torch.tanh(x)
            logits = F.linear(x, w[out + ".weight"], w[out + ".bias"])
            loss = F.cross_entropy(logits, torch.tensor(labels))
        loss.backward()
        gold = {"loss": loss.detach().reshape(1)}
        for k, v in w.items():
            gold["grad." + k] = v.grad if v.grad is not None else torch.zeros_like(v)
        meta_out = {"ids": json.dumps(ids.tolist()), "labels": json.dumps(labels)}
        if typ is not None:
            meta_out["types"] = json.dumps(typ.tolist())
        write_safetensors(os.path.join(d, "train_golden.safetensors"),
                          {k: v.detach() for k, v in gold.items()}, meta_out)
        print(folder, "B", B, "T", T, "loss", float(loss))


if __name__ == "__main__":
    main()
