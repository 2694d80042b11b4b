#!/usr/bin/python3
"""The SentencePiece fixture tests/data/spm-micro and its goldens (run by hand; the project never
runs it).

  tools/spm_reference.py train [SHARED]   trains spiece.model with Debian's spm_train on the first
                                          4,000 sentences of SHARED/data/sst2/train.tsv (the text
                                          column only; SHARED: ../shared by default) and writes
                                          tokenizer_config.json and special_tokens_map.json as
                                          SiglipTokenizer.save_pretrained writes them
  tools/spm_reference.py                  writes tests/data/spm-micro/golden.json from that model

The model is laid out as SigLIP's spiece.model as far as its published ids tell: a unigram model,
<pad> 0, </s> 1 (SigLIP's end and padding token), <unk> 2, no start token, and 256 byte pieces
after them (SigLIP's commonest pieces have ids from 259 up: transformers' integration test has
"the real mountain view" -> 260 638 3293 870), so byte fallback; the library's default nmt_nfkc
normalisation. 512 pieces: the 259 reserved ones and 253 learned.

Needs Debian's sentencepiece (spm_train), python3-sentencepiece and python3-protobuf (for
sentencepiece_model_pb2: the model is loaded with add_dummy_prefix false as transformers does it,
by ModelProto.MergeFrom, independently of the C shim's way).

The goldens come from Debian's python3-sentencepiece (the same libsentencepiece the C shim wraps)
and a SiglipTokenizer written here from transformers' tokenization_siglip.py and the
PreTrainedTokenizer code it runs on (tokenize, the added-token split, prepare_for_model's
truncation and padding, _decode), with no transformers import:

  - the text gets "\u2581" in front, each "\u2581" in it becoming a space;
  - with do_lower_case, every character but those of the special tokens is lower-cased on its
    own (str.lower: U+0130 becomes "i" and a combining dot);
  - the text is split at the special tokens (leftmost, longest first); a token with rstrip/lstrip
    strips the white space of the text beside it;
  - each piece of text between them has ASCII punctuation removed, white space runs made one
    space, the ends stripped (str.isspace white space), then goes to the model (loaded with
    add_dummy_prefix false) behind the unk token, whose pieces are dropped again;
  - a lone leading "\u2581" piece before a special token goes;
  - the pieces become ids (piece_to_id; the special tokens by their ids), cut to max_length - 1
    when they do not fit with the end token, which is added unless the last id already is it;
    then padding to max_length with the pad token.

golden.json holds the configurations (each case's tokenizer_config.json and
special_tokens_map.json, written beside the model by the test), and the texts as UTF-8 hex (some
are not valid UTF-8; Python reads those with errors="replace", as vit does):
  spm     ids of the model's own Encode of the bytes (with and without the dummy prefix) and
          its Decode of them
  siglip  ids as SiglipTokenizer(text, padding="max_length", truncation=True, max_length=L)
          gives them, the unpadded length, and decode(ids, skip_special_tokens=True); and
          (decode_only) the decoding of the model's own ids of texts with punctuation
"""

import copy
import json
import os
import re
import string
import subprocess
import sys
import tempfile

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "spm-micro")
UNDERLINE = "\u2581"
SENTENCES = 4000

TRAIN_FLAGS = ["--model_type=unigram", "--vocab_size=512", "--byte_fallback=true",
               "--pad_id=0", "--eos_id=1", "--unk_id=2", "--bos_id=-1",
               "--num_threads=1", "--random_seed=1", "--minloglevel=1"]

# What SiglipTokenizer(vocab_file).save_pretrained writes (transformers 4.4x).
TOKEN_FLAGS = {"lstrip": True, "normalized": False, "rstrip": True, "single_word": False}
TOKENIZER_CONFIG = {
    "added_tokens_decoder": {
        "1": dict(content="</s>", **TOKEN_FLAGS, special=True),
        "2": dict(content="<unk>", **TOKEN_FLAGS, special=True),
    },
    "additional_special_tokens": [],
    "clean_up_tokenization_spaces": True,
    "do_lower_case": True,
    "eos_token": "</s>",
    "model_input_names": ["input_ids"],
    "model_max_length": 64,
    "pad_token": "</s>",
    "processor_class": "SiglipProcessor",
    "sp_model_kwargs": {},
    "tokenizer_class": "SiglipTokenizer",
    "unk_token": "<unk>",
}
SPECIAL_TOKENS_MAP = {
    "eos_token": dict(content="</s>", **TOKEN_FLAGS),
    "pad_token": dict(content="</s>", **TOKEN_FLAGS),
    "unk_token": dict(content="<unk>", **TOKEN_FLAGS),
}


def train(shared):
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(shared, "data", "sst2", "train.tsv"), encoding="utf-8") as f:
            rows = [line.rstrip("\n").split("\t")[0] for line in f][1:SENTENCES + 1]
        # a fixed name: the trainer records its input's path in the model
        with open(os.path.join(tmp, "sst2-train-4000.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(rows) + "\n")
        subprocess.run(["spm_train", "--input=sst2-train-4000.txt", "--model_prefix=spiece"]
                       + TRAIN_FLAGS, cwd=tmp, check=True)
        with open(os.path.join(tmp, "spiece.model"), "rb") as f:
            model = f.read()
    with open(os.path.join(OUT, "spiece.model"), "wb") as f:
        f.write(model)
    write_json(os.path.join(OUT, "tokenizer_config.json"), TOKENIZER_CONFIG)
    write_json(os.path.join(OUT, "special_tokens_map.json"), SPECIAL_TOKENS_MAP)


def write_json(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, ensure_ascii=False)
        f.write("\n")


# ---- SiglipTokenizer ----

def token_content(value):
    return value["content"] if isinstance(value, dict) else value


class Siglip:
    def __init__(self, model_bytes, config, special_map):
        # from_pretrained: special_tokens_map.json's entries override tokenizer_config.json's
        merged = dict(config)
        merged.update(special_map)
        self.do_lower_case = merged.get("do_lower_case", True)
        self.clean_up = merged.get("clean_up_tokenization_spaces", False)
        # SiglipTokenizer.__init__: the three tokens as AddedToken(lstrip=True, rstrip=True)
        # unless given as AddedToken dicts; added_tokens_decoder's entries win (they are loaded
        # first and a token already added keeps its flags)
        tokens = {}  # content -> (id or None, lstrip, rstrip)
        for key, value in merged.get("added_tokens_decoder", {}).items():
            tokens[value["content"]] = (int(key), value.get("lstrip", False),
                                        value.get("rstrip", False))
        names = []
        for attr, default in (("eos_token", "</s>"), ("unk_token", "<unk>"),
                              ("pad_token", "</s>")):
            value = merged.get(attr, default)
            content = token_content(value)
            setattr(self, attr, content)
            names.append(content)
            if content not in tokens:
                flags = value if isinstance(value, dict) else {"lstrip": True, "rstrip": True}
                tokens[content] = (None, flags.get("lstrip", False), flags.get("rstrip", False))
        for value in merged.get("additional_special_tokens", []):
            content = token_content(value)
            names.append(content)
            if content not in tokens:
                flags = value if isinstance(value, dict) else {}
                tokens[content] = (None, flags.get("lstrip", False), flags.get("rstrip", False))
        # all_special_tokens: eos, unk, pad, additional (SPECIAL_TOKENS_ATTRIBUTES' order), once
        self.all_special_tokens = list(dict.fromkeys(names))

        proto = sentencepiece_model_pb2.ModelProto.FromString(model_bytes)
        normalizer = sentencepiece_model_pb2.NormalizerSpec()
        normalizer.add_dummy_prefix = False
        proto.normalizer_spec.MergeFrom(normalizer)
        self.sp = spm.SentencePieceProcessor()
        self.sp.LoadFromSerializedProto(proto.SerializeToString())

        self.added = {}
        for content, (tid, lstrip, rstrip) in tokens.items():
            if tid is None:
                tid = self.sp.piece_to_id(content)
                assert self.sp.id_to_piece(tid) == content, content
            self.added[content] = (tid, lstrip, rstrip)
        self.eos_id = self.added[self.eos_token][0]
        self.pad_id = self.added[self.pad_token][0]
        self.special_ids = {self.added[t][0] for t in self.all_special_tokens}
        self.unk_length = len(self.sp.encode(self.unk_token))

    def split(self, text):
        """The text cut at the added tokens: at each position the earliest-starting, then the
        longest, match (Trie.split)."""
        out, start, i = [], 0, 0
        while i < len(text):
            best = max((t for t in self.added if text.startswith(t, i)), key=len, default=None)
            if best is None:
                i += 1
                continue
            if i > start:
                out.append(text[start:i])
            out.append(best)
            i += len(best)
            start = i
        if start < len(text):
            out.append(text[start:])
        return out

    def canonicalize(self, text):
        text = text.translate(str.maketrans("", "", string.punctuation))
        return re.sub(r"\s+", " ", text).strip()

    def _tokenize(self, text):
        text = self.canonicalize(text)
        pieces = self.sp.encode(self.unk_token + text, out_type=str)
        return pieces[self.unk_length:] if len(pieces) >= self.unk_length else pieces

    def tokenize(self, text):
        text = UNDERLINE + text.replace(UNDERLINE, " ")
        if self.do_lower_case:
            pattern = ("(" + "|".join(re.escape(t) for t in self.all_special_tokens) + ")|(.+?)")
            text = re.sub(pattern, lambda m: m.groups()[0] or m.groups()[1].lower(), text)
        parts = self.split(text)
        for i, part in enumerate(parts):
            if part not in self.added:
                continue
            _, lstrip, rstrip = self.added[part]
            if rstrip and i + 1 < len(parts) and parts[i + 1]:
                parts[i + 1] = parts[i + 1].lstrip()
            if lstrip and i > 0 and parts[i - 1]:
                parts[i - 1] = parts[i - 1].rstrip()
        tokens = []
        for part in parts:
            if not part:
                continue
            if part in self.added:
                tokens.append(part)
            else:
                tokens.extend(self._tokenize(part))
        if len(tokens) > 1 and tokens[0] == UNDERLINE and tokens[1] in self.all_special_tokens:
            tokens = tokens[1:]
        return tokens

    def token_id(self, token):
        return self.added[token][0] if token in self.added else self.sp.piece_to_id(token)

    def __call__(self, text, max_length):
        ids = [self.token_id(t) for t in self.tokenize(text)]
        if len(ids) + 1 > max_length:  # the end token counts as one special token to add
            ids = ids[:max_length - 1]
        if not ids or ids[-1] != self.eos_id:
            ids = ids + [self.eos_id]
        return ids + [self.pad_id] * (max_length - len(ids)), len(ids)

    def decode(self, ids):
        pieces = [self.sp.id_to_piece(i) for i in ids if i not in self.special_ids]
        text = self.sp.decode(pieces).strip()
        if self.clean_up:
            for a, b in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"),
                         (" n't", "n't"), (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"),
                         (" 're", "'re")):
                text = text.replace(a, b)
        return text


# ---- the texts ----

LONG = ("this film is a long meditation on the nature of memory and loss , told with wit and a "
        "patience that rewards the viewer who stays with it until the final scene ")
TEXTS = [
    # plain, and transformers' own examples
    "a photo of a cat", "This is a test", "A long paragraph for summarization.",
    "I was born in 92000, and this is falsé.", "the real mountain view", "Zürich",
    "San Francisco", "a picture of a laptop with the lockscreen on, a cup of cappucino, salt and "
    "pepper grinders. The view through the window reveals lake Zürich and the Alps in the "
    "background of the city.",
    # punctuation: ASCII removed, the rest kept
    "Hello, World!!!", "it's a dog's life -- isn't it?", "e-mail: someone@example.com #1 50%",
    "(parenthesised) [bracketed] {braced} <angled> a_b a/b a\\b a|b a~b a^b a`b",
    "\u00bfQu\u00e9? \u00a1S\u00ed! \u00abguillemets\u00bb",
    "\u201ccurly quotes\u201d and \u2018single\u2019 \u2014 dashes\u2026 \u2013 \u00b7",
    "!!!", "...", "a.b.c", "3.14 $5 \u20ac7 \u00a310",
    # white space
    "", " ", "\t\n", "  leading", "trailing   ", "tabs\tand\nnew\r\nlines",
    "no-break\u00a0space", "ideographic\u3000space", "line\u2028separator", "zero\u200bwidth",
    "next\u0085line", "\x1c\x1d\x1e\x1finfo separators", "\x0b\x0cvertical tab, form feed",
    "en\u2002em\u2003thin\u2009hair\u200anarrow\u202fmath\u205fogham\u1680space",
    "a \u00a0\u3000 b", "word\u00adhyphen",
    # Unicode: the model's NFKC, lower-casing
    "CAFÉ caf\u00e9 cafe\u0301", "\ufb01ne \ufb02ow ligatures", "full-width \uff21\uff22\uff23"
    "\uff11\uff12\uff13", "\u0130stanbul \u0131", "\u03a3\u038a\u03a3\u03a5\u03a6\u039f\u03a3",
    "stra\u00dfe STRASSE \u1e9e", "\u01c4 \u01c5 \u01c6", "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad"
    "\u30b9\u30c8", "emoji \U0001f431\U0001f436 \u2764\ufe0f", "\u2126 ohm \u03a9 omega",
    "\u210c\U0001d522\U0001d529\U0001d529\U0001d52c math", "\u00bd \u2153 \u00b2 \u2460",
    "\u0645\u0631\u062d\u0628\u0627 \u05e9\u05dc\u05d5\u05dd", "\u0915\u094d\u0937 \u0e01\u0e33",
    "A\u0308\u0304 combining", "\ufeffbom", "\U0010ffff\ue000 private",
    # the word-start mark itself
    UNDERLINE, " " + UNDERLINE, "a" + UNDERLINE + "b", UNDERLINE * 2 + "hello",
    UNDERLINE + "He is not", UNDERLINE + "He is not             " + UNDERLINE + "He",
    # the special tokens written in the text
    "hi</s>", "</s>", "</s>>", "A long paragraph for summarization. </s>", "<unk> in text",
    "</S> upper", "x </s>   y", "</s></s>", "<unk>", "  </s>  ", "<pad> is not special",
    "</s\u00a0> almost", "<</s>>", "a</s>b<unk>c", "\u00a0</s>\u00a0", "\u3000<unk>\u3000x",
    "</s>hello", "  </s>hello", "<0xAB> and <0xab>, <0XAB> <0xABİ>",
    # long texts: cut at max_length keeping the end token
    LONG, LONG * 3, "a " * 62, "a " * 63, "a " * 64, "a " * 200, "x" * 300,
    "a " * 62 + "</s>", "a " * 63 + "</s>", "a " * 40 + "</s> " + "b " * 40,
]
# bytes that are not UTF-8 (read with errors="replace"), and a NUL
RAW = [b"caf\xe9", b"ab\xff\xfe c\xe2\x82 d\xc3", b"\xe2\x82A", b"\xf0\x90\x80 x",
       b"\xe0\x80\x80 \xed\xa0\x80 \xc0\xaf \xf4\x90\x80\x80", b"a\x00b", b"\x80\xbf tail",
       b"</s\xff>", b"<unk\xc3"]
MAX_LENGTHS = [64, 8, 1]
# Decoding ids that are not SiglipTokenizer's own (the model's Encode of text with punctuation,
# which SigLIP's canonicalisation would have removed): what the clean-up is for.
DECODE_TEXTS = ["it 's a hit , is n't it ? yes !", "i 'm sure they 're good . we 've seen ' em",
                " spaced   out  ", "caf\u00e9 \U0001f431 . ,", "</s> <unk> ."]

CONFIGS = {
    "siglip": (TOKENIZER_CONFIG, SPECIAL_TOKENS_MAP),
    # do_lower_case false: case kept (the model itself does not fold case)
    "cased": (dict(TOKENIZER_CONFIG, do_lower_case=False), SPECIAL_TOKENS_MAP),
    # additional special tokens (pieces of the model: its <pad>, and a byte piece, whose upper
    # case the lower-casing must leave alone), no strips; eos without strips either
    # (special_tokens_map.json's flags, added_tokens_decoder not naming it)
    "extra": (dict({k: v for k, v in TOKENIZER_CONFIG.items() if k != "added_tokens_decoder"},
                   additional_special_tokens=["<pad>", "<0xAB>"],
                   clean_up_tokenization_spaces=False, model_max_length=16),
              dict(SPECIAL_TOKENS_MAP, additional_special_tokens=["<pad>", "<0xAB>"],
                   eos_token=dict(SPECIAL_TOKENS_MAP["eos_token"], lstrip=False, rstrip=False))),
}


def main():
    with open(os.path.join(OUT, "spiece.model"), "rb") as f:
        model = f.read()
    texts = [t.encode("utf-8") for t in TEXTS] + RAW

    plain = spm.SentencePieceProcessor(model_proto=model)
    proto = sentencepiece_model_pb2.ModelProto.FromString(model)
    proto.normalizer_spec.add_dummy_prefix = False
    no_dummy = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())
    spm_cases = []
    for raw in texts:
        # the bytes as they are: the library reads each invalid byte as U+FFFD and keeps it
        # (while a U+FFFD written in the text is taken out by its NFKC rules)
        ids = plain.encode(raw)
        spm_cases.append(dict(text=raw.decode("utf-8", "replace"), hex=raw.hex(), ids=ids,
                              ids_no_dummy=no_dummy.encode(raw),
                              decoded=plain.decode(ids).encode("utf-8").hex()))

    siglip_cases = []
    for name, (config, special_map) in CONFIGS.items():
        tok = Siglip(model, config, special_map)
        for raw in texts:
            text = raw.decode("utf-8", "replace")
            for max_length in MAX_LENGTHS if name == "siglip" else [config["model_max_length"]]:
                ids, length = tok(text, max_length)
                siglip_cases.append(dict(config=name, text=text, hex=raw.hex(),
                                         max_length=max_length, ids=ids, length=length,
                                         decoded=tok.decode(ids).encode("utf-8").hex()))
    for name in ("siglip", "extra"):
        tok = Siglip(model, *CONFIGS[name])
        for text in DECODE_TEXTS:
            ids = plain.encode(text) + [tok.eos_id, tok.pad_id]
            siglip_cases.append(dict(config=name, text=text, decode_only=True, ids=ids,
                                     decoded=tok.decode(ids).encode("utf-8").hex()))
    golden = dict(
        vocab_size=plain.get_piece_size(), unk_id=plain.unk_id(), bos_id=plain.bos_id(),
        eos_id=plain.eos_id(), pad_id=plain.pad_id(),
        pieces=[plain.id_to_piece(i) for i in range(plain.get_piece_size())],
        configs={name: dict(tokenizer_config=c, special_tokens_map=s)
                 for name, (c, s) in CONFIGS.items()},
        spm=spm_cases, siglip=siglip_cases)
    with open(os.path.join(OUT, "golden.json"), "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"{OUT}/golden.json: {len(spm_cases)} spm cases, {len(siglip_cases)} SigLIP cases")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "train":
        train(sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "..", "shared"))
    else:
        main()
