#!/usr/bin/python3
"""Writes two micro NER token classifiers and the entities transformers' token-classification
pipeline gives of their texts, for tests/test_tag.c (run by hand; the project never runs it).

  bert-ner-micro     BertForTokenClassification over a cased vocab.txt of 6,000 real WordPiece
                     tokens (tests/data/tokenizer-json/vocab-cased's), so words split into
                     "##" pieces: the pipeline's word-aware is_subword;
  roberta-ner-micro  RobertaForTokenClassification with tests/data/tokenizer-json/roberta-bpe's
                     tokenizer.json (byte-level BPE, no continuing_subword_prefix): the
                     pipeline's fallback heuristic (no space before the token nor at its start).

Both have the labels O, B-PER, I-PER, B-ORG, I-ORG, B-LOC, I-LOC and MISC (a label without B-/I-,
which continues as I- does) and random weights (tools/text_encoders_reference.py's generator and
float64 forward; its classifier scaled up so that labels vary from token to token).

Each text's ids, tokens (convert_ids_to_tokens), offsets (code points) and special tokens mask
come from the npm tokenizers library (tools/token_classification_tokens.mjs, which also decodes
token strings as convert_tokens_to_string does), cut to the model's length keeping the end token
as truncation=True cuts; the logits from the float64 forward; then postprocess as
transformers/pipelines/token_classification.py has it, rewritten here in float64: softmax,
gather_pre_entities (special tokens out; is_subword; an unk token's word its text), aggregate
(none, simple), aggregate_words/aggregate_word (first, average, max), group_entities /
group_sub_entities (B-/I- tags, the label after its last '-', mean scores, words joined), the
ignore_labels filter (["O"], and [] for keep_all). expected.json holds, per text, per strategy and
per keep_all, the entities: entity or entity_group, score, index (none), word, start, end.

usage: cd tools && npm install --no-save tokenizers && cd .. &&
       /usr/bin/python3 tools/token_classification_reference.py
"""
import json
import math
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import text_encoders_reference as ter  # noqa: E402
from hf_reference import write_json, write_safetensors  # noqa: E402

DATA = ter.DATA
TAGS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "MISC"]
TEXTS = [
    "John Smith works at Microsoft in Seattle.",
    "Angela Merkel met Emmanuel Macron in Zürich and São Paulo",
    "unaffable naïve café, 東京 and 😀 emoji!",
    "  spaces   between\twords  ",
    "",
    "Dr. O'Neil-Smith (CEO) of Hewlett-Packard Co. said: 'no comment'.",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    " ".join(["Barack Obama visited Berlin Germany"] * 20),
]
STRATEGIES = ["none", "simple", "first", "average", "max"]


class Tokens:
    """The npm library behind tools/token_classification_tokens.mjs."""

    def __init__(self, folder):
        self.p = subprocess.Popen(["node", os.path.join(ter.ROOT, "tools", "token_classification_tokens.mjs")],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.ask({"load": folder})
        self.prefix = self.ask({"prefix": True})["prefix"]

    def ask(self, req):
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def encode(self, text, max_len):
        e = self.ask({"encode": text})
        if len(e["ids"]) > max_len:  # truncation=True: the text's tokens cut, the end token kept
            for k in e:
                e[k] = e[k][:max_len - 1] + e[k][-1:]
        return e

    def join(self, tokens):
        return self.ask({"join": tokens})["text"]

    def close(self):
        self.p.stdin.close()
        self.p.wait()


# ---- postprocess, float64 ----

def softmax(logits):
    m = max(logits)
    e = [math.exp(x - m) for x in logits]
    s = sum(e)
    return [x / s for x in e]


def argmax(p):
    return max(range(len(p)), key=lambda k: (p[k], -k))  # the first of equal maxima


def pre_entities(tok, text, enc, probs, unk_id):
    out = []
    for idx, p in enumerate(probs):
        if enc["special"][idx]:
            continue
        word = enc["tokens"][idx]
        start, end = enc["offsets"][idx]
        word_ref = text[start:end]
        if tok.prefix:  # a word-aware model: a piece not as long as its text is a subword
            is_subword = len(word) != len(word_ref)
        else:
            is_subword = start > 0 and " " not in text[start - 1:start + 1]
        if enc["ids"][idx] == unk_id:
            word, is_subword = word_ref, False
        out.append(dict(word=word, scores=p, start=start, end=end, index=idx, is_subword=is_subword))
    return out


def aggregate_word(tok, group, strategy):
    word = tok.join([e["word"] for e in group])
    if strategy == "first":
        scores = group[0]["scores"]
    elif strategy == "max":
        best = group[0]
        for e in group[1:]:
            if max(e["scores"]) > max(best["scores"]):
                best = e
        scores = best["scores"]
    else:  # average
        scores = [sum(e["scores"][k] for e in group) / len(group) for k in range(len(TAGS))]
    k = argmax(scores)
    return dict(entity=TAGS[k], score=scores[k], word=word, start=group[0]["start"],
                end=group[-1]["end"])


def get_tag(label):
    if label.startswith("B-"):
        return "B", label[2:]
    if label.startswith("I-"):
        return "I", label[2:]
    return "I", label


def group_sub(tok, group):
    return dict(entity_group=group[0]["entity"].split("-")[-1],
                score=sum(e["score"] for e in group) / len(group),
                word=tok.join([e["word"] for e in group]),
                start=group[0]["start"], end=group[-1]["end"])


def group_entities(tok, entities):
    groups, current = [], []
    for e in entities:
        if current:
            bi, tag = get_tag(e["entity"])
            _, last_tag = get_tag(current[-1]["entity"])
            if not (tag == last_tag and bi != "B"):
                groups.append(group_sub(tok, current))
                current = []
        current.append(e)
    if current:
        groups.append(group_sub(tok, current))
    return groups


def postprocess(tok, text, enc, logits, unk_id, strategy, keep_all):
    probs = [softmax(row) for row in logits]
    pre = pre_entities(tok, text, enc, probs, unk_id)
    if strategy in ("none", "simple"):
        ents = []
        for p in pre:
            k = argmax(p["scores"])
            ents.append(dict(entity=TAGS[k], score=p["scores"][k], index=p["index"], word=p["word"],
                             start=p["start"], end=p["end"]))
    else:
        ents, group = [], None
        for p in pre:
            if group is None:
                group = [p]
            elif p["is_subword"]:
                group.append(p)
            else:
                ents.append(aggregate_word(tok, group, strategy))
                group = [p]
        if group:
            ents.append(aggregate_word(tok, group, strategy))
    if strategy != "none":
        ents = group_entities(tok, ents)
    ignore = [] if keep_all else ["O"]
    return [e for e in ents if e.get("entity") not in ignore and e.get("entity_group") not in ignore]


# ---- seqeval (chakki-works/seqeval, metrics/sequence_labeling.py), default mode ----

def seq_entities(seq):
    """get_entities of a flattened sequence (each sentence followed by an O)."""
    prev_tag, prev_type, begin, chunks = "O", "", 0, []
    for i, chunk in enumerate(seq + ["O"]):
        tag, type_ = chunk[0], chunk[1:].split("-", maxsplit=1)[-1] or "_"
        differs = prev_type != type_
        ends = (prev_tag in "ES" or (prev_tag in "BI" and tag in "BSO")
                or (prev_tag not in "O." and differs))
        starts = (tag in "BS" or (prev_tag in "ESO" and tag in "EI")
                  or (tag not in "O." and differs))
        if ends:
            chunks.append((prev_type, begin, i - 1))
        if starts:
            begin = i
        prev_tag, prev_type = tag, type_
    return chunks


def seqeval(y_true, y_pred):
    flat_t = [x for s in y_true for x in s + ["O"]]
    flat_p = [x for s in y_pred for x in s + ["O"]]
    te, pe = set(seq_entities(flat_t)), set(seq_entities(flat_p))
    out = {}
    for ty in sorted({e[0] for e in te} | {e[0] for e in pe}):
        t = {e for e in te if e[0] == ty}
        p = {e for e in pe if e[0] == ty}
        out[ty] = score(len(t & p), len(p), len(t))
    o = score(len(te & pe), len(pe), len(te))
    words_t = [x for s in y_true for x in s]
    words_p = [x for s in y_pred for x in s]
    return {"types": out, "overall_precision": o["precision"], "overall_recall": o["recall"],
            "overall_f1": o["f1"],
            "overall_accuracy": sum(a == b for a, b in zip(words_t, words_p)) / len(words_t)}


def score(correct, pred, true):
    p = correct / pred if pred else 0
    r = correct / true if true else 0
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0,
            "number": true, "found": pred, "correct": correct}


# labelled words for vit eval: each sentence's words and, per word, the label at its first token
SENTENCES = [
    ("John Smith works at Microsoft in Seattle .", "B-PER I-PER O O B-ORG O B-LOC O"),
    ("Angela Merkel met Emmanuel Macron in Zürich and São Paulo",
     "B-PER I-PER O B-PER I-PER O B-LOC O B-LOC I-LOC"),
    ("The European Union and Hewlett-Packard Co. signed in Brussels",
     "O B-ORG I-ORG O B-ORG I-ORG O O B-LOC"),
    ("naïve café owners in 東京 love 😀 emoji", "O O O O B-LOC O O O"),
    (" ".join(["Barack Obama visited Berlin Germany"] * 14),
     " ".join(["B-PER I-PER O B-LOC B-LOC"] * 14)),
]


def eval_case(tok, spec, enc_w, hw, out):
    """eval.conll (the hand labels), eval.jsonl (labels close to the model's own: its
    predictions with every fourth word changed, as ids) and the seqeval scores of each."""
    words = [s.split(" ") for s, _ in SENTENCES]
    gold = [l.split(" ") for _, l in SENTENCES]
    texts = [" ".join(w) for w in words]
    encs = [tok.encode(t, spec["max_len"]) for t in texts]
    h = ter.run(spec, dict(enc_w, **hw), [e["ids"] for e in encs])
    logits = F.linear(h, hw["classifier.weight"], hw["classifier.bias"])
    preds, truth, near = [], [], []
    for i, (ws, enc) in enumerate(zip(words, encs)):
        at, k = [], 0
        for w in ws:
            at.append(k)
            k += len(w) + 1
        p, t, nr = [], [], []
        for j, w in enumerate(ws):
            first = next((x for x in range(1, len(enc["ids"]) - 1)
                          if enc["offsets"][x][1] > at[j] and enc["offsets"][x][0] < at[j] + len(w)), None)
            if first is None:  # cut off: in neither sequence
                continue
            lab = TAGS[argmax(logits[i, first].tolist())]
            p.append(lab)
            t.append(gold[i][j])
            nr.append(lab if j % 4 else TAGS[(TAGS.index(lab) + 1 + j) % len(TAGS)])
        preds.append(p), truth.append(t), near.append(nr)
    with open(os.path.join(out, "eval.conll"), "w") as f:
        f.write("-DOCSTART- -X- O O\n\n")
        for ws, ls in zip(words, gold):
            f.write("".join(f"{w}\t{l}\n" for w, l in zip(ws, ls)) + "\n")
    with open(os.path.join(out, "eval.jsonl"), "w") as f:
        for i, ws in enumerate(words):
            ids, k = [], 0
            for j, w in enumerate(ws):  # near's labels for the words kept, gold's for the cut
                kept = len(near[i]) > j
                ids.append(TAGS.index(near[i][j] if kept else gold[i][j]))
            f.write(json.dumps({"tokens": ws, "ner_tags": ids}, ensure_ascii=False) + "\n")
    return {"eval.conll": seqeval(truth, preds), "eval.jsonl": seqeval(near, preds),
            "kept_words": sum(len(p) for p in preds), "words": sum(len(w) for w in words)}


# ---- the folders ----

def make(spec, folder_files, unk_id):
    out = os.path.join(DATA, spec["name"])
    os.makedirs(out, exist_ok=True)
    folder_files(out)
    enc_w = ter.encoder_weights(spec["kind"], spec["prefix"], spec["vocab"], spec["positions"],
                                spec["seed"]).w
    W = ter.Weights(spec["seed"] + 3)
    W.normal("classifier.weight", len(TAGS), ter.D, std=3 * ter.D ** -0.5)
    W.normal("classifier.bias", len(TAGS), std=0.3)
    hw = W.w
    cfg = {"architectures": [spec["cls"]], "model_type": spec["model_type"]}
    cfg.update(spec["config"])
    cfg["id2label"] = {str(i): t for i, t in enumerate(TAGS)}
    cfg["label2id"] = {t: i for i, t in enumerate(TAGS)}
    cfg["torch_dtype"] = "float32"
    write_json(os.path.join(out, "config.json"), cfg)
    write_safetensors(os.path.join(out, "model.safetensors"), dict(enc_w, **hw))
    tok = Tokens(out)
    encs = [tok.encode(t, spec["max_len"]) for t in TEXTS]
    h = ter.run(spec, dict(enc_w, **hw), [e["ids"] for e in encs])
    logits = F.linear(h, hw["classifier.weight"], hw["classifier.bias"])
    cases = []
    for i, (text, enc) in enumerate(zip(TEXTS, encs)):
        rows = logits[i, :len(enc["ids"])].tolist()
        case = {"text": text, "ids": enc["ids"], "offsets": enc["offsets"], "entities": {}}
        for strategy in STRATEGIES:
            for keep_all in (False, True):
                key = strategy + (" all" if keep_all else "")
                case["entities"][key] = postprocess(tok, text, enc, rows, unk_id, strategy, keep_all)
        cases.append(case)
    scores = eval_case(tok, spec, enc_w, hw, out)
    tok.close()
    write_json(os.path.join(out, "expected_eval.json"), dict(scores, source=
               "tools/token_classification_reference.py: seqeval's get_entities and scores "
               "rewritten, on the float64 forward's label at each word's first token"))
    write_json(os.path.join(out, "expected.json"), {
        "source": "tools/token_classification_reference.py: the npm tokenizers library's ids, "
                  "offsets and decoder, a float64 forward, the pipeline's postprocess in float64",
        "cases": cases})
    print(spec["name"], [len(e["ids"]) for e in encs])


def main():
    common = {"hidden_size": ter.D, "num_hidden_layers": ter.LAYERS, "num_attention_heads": ter.H,
              "intermediate_size": ter.MLP, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
              "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02}
    vocab = open(os.path.join(DATA, "tokenizer-json", "vocab-cased", "vocab.txt")).read().split("\n")[:-1]

    def bert_files(out):
        with open(os.path.join(out, "vocab.txt"), "w") as f:
            f.write("\n".join(vocab) + "\n")
        write_json(os.path.join(out, "tokenizer_config.json"),
                   {"tokenizer_class": "BertTokenizer", "do_lower_case": False, "model_max_length": 64})

    make(dict(name="bert-ner-micro", kind="bert", model_type="bert", prefix="bert.", seed=470,
              cls="BertForTokenClassification",
              config=dict(common, vocab_size=len(vocab), max_position_embeddings=80, type_vocab_size=2,
                          layer_norm_eps=1e-12, pad_token_id=0),
              eps=1e-12, act=F.gelu, pos_pad=None, pad=0, vocab=len(vocab), positions=80, max_len=64),
         bert_files, vocab.index("[UNK]"))

    src = os.path.join(DATA, "tokenizer-json", "roberta-bpe", "tokenizer.json")
    tj = json.load(open(src))
    size = max(max(tj["model"]["vocab"].values()), max(a["id"] for a in tj["added_tokens"])) + 1

    def roberta_files(out):
        with open(src) as f, open(os.path.join(out, "tokenizer.json"), "w") as g:
            g.write(f.read())
        write_json(os.path.join(out, "tokenizer_config.json"),
                   {"tokenizer_class": "RobertaTokenizer", "model_max_length": 62})

    make(dict(name="roberta-ner-micro", kind="roberta", model_type="roberta", prefix="roberta.",
              seed=480, cls="RobertaForTokenClassification",
              config=dict(common, vocab_size=size, max_position_embeddings=64, type_vocab_size=1,
                          layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                          position_embedding_type="absolute"),
              eps=1e-5, act=F.gelu, pos_pad=1, pad=1, vocab=size, positions=64, max_len=62),
         roberta_files, tj["model"]["vocab"]["<unk>"])


if __name__ == "__main__":
    main()
