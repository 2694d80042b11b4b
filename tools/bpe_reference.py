#!/usr/bin/python3
"""The byte-level BPE and XLM-R tokenizer fixtures and their goldens (run by hand; the project
never runs it):

  tests/data/gpt2-micro     vocab.json, merges.txt, tokenizer_config.json (GPT2Tokenizer),
                            special_tokens_map.json, golden.json
  tests/data/roberta-micro  the same for RobertaTokenizer
  tests/data/xlmr-micro     sentencepiece.bpe.model (trained here with Debian's spm_train),
                            tokenizer_config.json (XLMRobertaTokenizer), special_tokens_map.json,
                            golden.json
  tests/data/clip-micro/decode.json   decodings of id lists with clip-micro's vocabulary
  tests/data/spm-micro/decode.json    SiglipTokenizer's decodings of id lists, the special tokens
                                      kept and left out (tools/spm_reference.py's model, settings
                                      and SiglipTokenizer; its convert_tokens_to_string here)

usage: /usr/bin/python3 tools/bpe_reference.py

Written from transformers' tokenization_gpt2.py, tokenization_roberta.py,
tokenization_xlm_roberta.py, tokenization_clip.py and the slow PreTrainedTokenizer code they run
on (tokenization_utils.py: tokenize with its Trie split of the added tokens and their lstrip and
rstrip, _decode; tokenization_utils_base.py at commit 598a3dc3, a 4.5x release: decode,
clean_up_tokenization, and the default clean_up_tokenization_spaces=False, which none of these
classes overrides), with no transformers import. What each does:

  - the text (bytes) is read as UTF-8 with errors="replace";
  - prepare_for_tokenization: with add_prefix_space, GPT2Tokenizer puts " " in front of any text,
    RobertaTokenizer only in front of one that does not start with white space (str.isspace);
  - the added tokens (every special token: bos, eos, unk, sep, pad, cls, mask, the additional
    ones, and added_tokens_decoder's) are cut out of the text with transformers' Trie; a token
    with rstrip (lstrip) strips the white space (str.isspace) of the text after (before) it;
  - byte-level BPE (GPT-2, RoBERTa): each stretch of text between them splits by GPT-2's pattern
    's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+ (the regex
    module), each piece's UTF-8 bytes become GPT-2's byte symbols (no "</w>") and merge by rank;
    XLM-R: each stretch goes to the SentencePiece model (its own normaliser and dummy prefix),
    whose piece ids shift by one behind fairseq's <s>=0 <pad>=1 </s>=2 <unk>=3 (the model's unk,
    id 0, becomes 3) and <mask> is the last id;
  - the special tokens around the text: RoBERTa and XLM-R <s> ... </s>, GPT-2 none (bos in front
    with add_bos_token); truncation to max_length keeps room for them;
  - decode(ids, skip_special_tokens): each id's token (the added token's text, else the
    vocabulary's; an id of neither is an error), special ones left out when asked; the tokens
    joined by the class's convert_tokens_to_string (byte-level: the byte symbols back to bytes,
    decoded as UTF-8 with errors="replace"; XLM-R: "\\u2581" to " ", stripped; CLIP: bytes, then
    "</w>" to " ", stripped); additional special tokens with ids past the vocabulary stand apart,
    joined with single spaces (spaces_between_special_tokens); then clean_up_tokenization when
    the settings ask for it.

One departure from the slow classes, where they would raise: a token with characters that are not
byte symbols (a special token such as "<\\u2713>") decodes to its own UTF-8 bytes, as the fast
tokenizers' ByteLevel decoder does; the micro vocabularies have none.

golden.json: the configurations (tokenizer_config.json and special_tokens_map.json of each; the
first is the folder's own files), "encode" cases (the text as UTF-8 hex, max_length or null, the
ids) and "decode" cases (ids, skip_special_tokens, the text as UTF-8 hex).
"""

import json
import os
import subprocess
import sys
import tempfile
from collections import Counter

import regex
import sentencepiece as spm

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
UNDERLINE = "\u2581"

# ---- shared pieces of PreTrainedTokenizer ----


def bytes_to_unicode():
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


BYTE_ENCODER = bytes_to_unicode()
BYTE_DECODER = {v: k for k, v in BYTE_ENCODER.items()}
GPT2_PATTERN = regex.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
SPECIAL_ATTRIBUTES = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                      "cls_token", "mask_token"]


def clean_up_tokenization(text):
    for a, b in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"),
                 (" n't", "n't"), (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")):
        text = text.replace(a, b)
    return text


def trie_split(tokens, text):
    """transformers' Trie.split: the text cut at the added tokens it holds (at each point the
    earliest match found while scanning, extended by its lookahead to the longest)."""
    root = {}
    for token in tokens:
        node = root
        for ch in token:
            node = node.setdefault(ch, {})
        node[""] = 1
    states, offsets, skip = {}, [0], 0
    for current, ch in enumerate(text):
        if skip and current < skip:
            continue
        to_remove, reset = set(), False
        for start, node in states.items():
            if "" in node:
                for lookstart, looknode in states.items():
                    if lookstart > start:
                        break
                    if lookstart < start:
                        lookahead = end = current + 1
                    else:
                        lookahead = end = current
                    nxt = text[lookahead] if lookahead < len(text) else None
                    if "" in looknode:
                        start, end, skip = lookstart, lookahead, lookahead
                    while nxt in looknode:
                        looknode = looknode[nxt]
                        lookahead += 1
                        if "" in looknode:
                            start, end, skip = lookstart, lookahead, lookahead
                        if lookahead == len(text):
                            break
                        nxt = text[lookahead]
                offsets += [start, end]
                reset = True
                break
            if ch in node:
                states[start] = node[ch]
            else:
                to_remove.add(start)
        if reset:
            states = {}
        else:
            for start in to_remove:
                del states[start]
        if current >= skip and ch in root:
            states[current] = root[ch]
    for start, node in states.items():
        if "" in node:
            offsets += [start, len(text)]
            break
    offsets.append(len(text))
    parts, start = [], 0
    for end in offsets:
        if start >= end:
            continue
        parts.append(text[start:end])
        start = end
    return parts


def token_content(value):
    return value["content"] if isinstance(value, dict) else value


class Tokenizer:
    """What the slow classes share: the added tokens, tokenize, truncation, _decode. A subclass
    gives the defaults and the model: vocab_size, lookup (content -> id or None),
    id_to_token, _tokenize, convert_tokens_to_string, the special tokens around a text."""

    DEFAULTS = {}   # attribute -> content (None: unset)
    FLAGS = {}      # attribute -> (lstrip, rstrip) of a token given as a string

    def setup(self, config, special_map):
        merged = dict(config)
        for key, value in special_map.items():  # from_pretrained: the map's entries win
            if key == "additional_special_tokens":
                extra = list(merged.get(key) or [])
                extra += [v for v in value if token_content(v) not in map(token_content, extra)]
                value = extra
            merged[key] = value
        self.config = merged
        self.clean_up = merged.get("clean_up_tokenization_spaces", False)
        self.added = {}  # content -> [id, lstrip, rstrip]
        for key, value in merged.get("added_tokens_decoder", {}).items():
            self.added[value["content"]] = [int(key), value.get("lstrip", False),
                                            value.get("rstrip", False)]
        names = []
        for attr in SPECIAL_ATTRIBUTES:
            value = merged.get(attr, self.DEFAULTS.get(attr))
            if value is None:
                continue
            names.append(token_content(value))
            flags = value if isinstance(value, dict) else dict(
                zip(("lstrip", "rstrip"), self.FLAGS.get(attr, (False, False))))
            self.add(value, flags)
            setattr(self, attr, token_content(value))
        self.additional = []
        for value in merged.get("additional_special_tokens") or []:
            names.append(token_content(value))
            self.additional.append(token_content(value))
            self.add(value, value if isinstance(value, dict) else {})
        self.all_special_tokens = list(dict.fromkeys(names))
        self.special_ids = {self.added[t][0] for t in self.all_special_tokens}
        self.by_id = {v[0]: k for k, v in self.added.items()}

    def add(self, value, flags):
        content = token_content(value)
        if content in self.added:
            return
        tid = self.lookup(content)
        if tid is None:  # _add_tokens: a new id after the vocabulary and the tokens added so far
            tid = max([self.vocab_size - 1] + [v[0] for v in self.added.values()]) + 1
        self.added[content] = [tid, flags.get("lstrip", False), flags.get("rstrip", False)]

    def prepare(self, text):
        return text

    def tokenize(self, text):
        text = self.prepare(text)
        parts = trie_split(self.added, text)
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
            tokens.extend([part] if part in self.added else self._tokenize(part))
        return tokens

    def token_to_id(self, token):
        return self.added[token][0] if token in self.added else self.model_id(token)

    def encode(self, text, max_length=None):
        ids = [self.token_to_id(t) for t in self.tokenize(text)]
        front, back = self.around()
        if max_length is not None and len(ids) + len(front) + len(back) > max_length:
            ids = ids[:max(0, max_length - len(front) - len(back))]
        return front + ids + back

    def decode(self, ids, skip_special_tokens):
        tokens = []
        for i in ids:
            if skip_special_tokens and i in self.special_ids:
                continue
            tokens.append(self.by_id[i] if i in self.by_id else self.id_to_token(i))
        legacy = {t for t in self.additional if self.added[t][0] >= self.vocab_size}
        sub_texts, current = [], []
        for token in tokens:
            if token in legacy:
                if current:
                    string = self.convert_tokens_to_string(current)
                    if string:
                        sub_texts.append(string)
                    current = []
                sub_texts.append(token)
            else:
                current.append(token)
        if current:
            sub_texts.append(self.convert_tokens_to_string(current))
        text = " ".join(sub_texts)
        return clean_up_tokenization(text) if self.clean_up else text


# ---- byte-level BPE: GPT2Tokenizer, RobertaTokenizer ----


class ByteLevel(Tokenizer):
    def __init__(self, vocab, merges_text, config, special_map):
        self.encoder = vocab
        self.decoder = {v: k for k, v in vocab.items()}
        self.vocab_size = len(vocab)
        lines = merges_text.split("\n")[1:-1]
        self.ranks = {tuple(m.split()): i for i, m in enumerate(lines)}
        self.add_prefix_space = config.get("add_prefix_space", False)
        assert config.get("errors", "replace") == "replace"
        self.setup(config, special_map)

    def lookup(self, content):
        return self.encoder.get(content)

    def model_id(self, token):
        return self.encoder.get(token, self.encoder.get(self.unk_token))

    def id_to_token(self, i):
        return self.decoder[i]  # KeyError: an id out of range

    def bpe(self, piece):
        word = list(piece)
        while len(word) > 1:
            pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
            best = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if best not in self.ranks:
                break
            merged, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    merged.append(word[i] + word[i + 1])
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = merged
        return word

    def _tokenize(self, text):
        tokens = []
        for piece in GPT2_PATTERN.findall(text):
            tokens += self.bpe("".join(BYTE_ENCODER[b] for b in piece.encode("utf-8")))
        return tokens

    def convert_tokens_to_string(self, tokens):
        raw = bytearray()
        for token in tokens:
            if all(c in BYTE_DECODER for c in token):
                raw += bytes(BYTE_DECODER[c] for c in token)
            else:  # see the module's docstring
                raw += token.encode("utf-8")
        return raw.decode("utf-8", errors="replace")


class GPT2(ByteLevel):
    DEFAULTS = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                "unk_token": "<|endoftext|>"}

    def __init__(self, *args):
        super().__init__(*args)
        self.add_bos_token = self.config.get("add_bos_token", False)

    def prepare(self, text):
        return " " + text if self.add_prefix_space else text

    def around(self):
        return ([self.added[self.bos_token][0]] if self.add_bos_token else []), []


class Roberta(ByteLevel):
    DEFAULTS = {"bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>", "cls_token": "<s>",
                "unk_token": "<unk>", "pad_token": "<pad>", "mask_token": "<mask>"}
    FLAGS = {"mask_token": (True, False)}

    def prepare(self, text):
        if self.add_prefix_space and text and not text[0].isspace():
            return " " + text
        return text

    def around(self):
        return [self.added[self.cls_token][0]], [self.added[self.sep_token][0]]


# ---- XLMRobertaTokenizer ----


class XLMR(Tokenizer):
    DEFAULTS = Roberta.DEFAULTS
    FLAGS = Roberta.FLAGS
    FAIRSEQ = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}

    def __init__(self, model_bytes, config, special_map):
        self.sp = spm.SentencePieceProcessor(model_proto=model_bytes)
        self.mask_id = self.sp.get_piece_size() + 1
        self.vocab_size = self.sp.get_piece_size() + 2
        self.setup(config, special_map)

    def lookup(self, content):  # get_vocab(): fairseq's four, the pieces shifted, <mask>
        if content in self.FAIRSEQ:
            return self.FAIRSEQ[content]
        if content == "<mask>":
            return self.mask_id
        i = self.sp.piece_to_id(content)
        ok = i >= 3 and self.sp.id_to_piece(i) == content
        return i + 1 if ok else None

    def model_id(self, token):
        if token in self.FAIRSEQ:
            return self.FAIRSEQ[token]
        i = self.sp.PieceToId(token)
        return i + 1 if i else self.added[self.unk_token][0]

    def id_to_token(self, i):
        names = {v: k for k, v in self.FAIRSEQ.items()}
        names[self.mask_id] = "<mask>"
        if i in names:
            return names[i]
        if not 1 <= i <= self.sp.get_piece_size():
            raise IndexError(i)
        return self.sp.IdToPiece(i - 1)

    def _tokenize(self, text):
        return self.sp.encode(text, out_type=str)

    def convert_tokens_to_string(self, tokens):
        return "".join(tokens).replace(UNDERLINE, " ").strip()

    def around(self):
        return [self.added[self.cls_token][0]], [self.added[self.sep_token][0]]


# ---- CLIPTokenizer's decode (clip-micro's vocabulary) ----


class ClipDecode(ByteLevel):
    DEFAULTS = {"bos_token": "<|startoftext|>", "eos_token": "<|endoftext|>",
                "unk_token": "<|endoftext|>"}

    def convert_tokens_to_string(self, tokens):
        text = super().convert_tokens_to_string(tokens)
        return text.replace("</w>", " ").strip()


# ---- the fixtures ----

# A small text the merges and the SentencePiece model are learned from.
CORPUS = """The quick brown fox jumps over the lazy dog. It's the dog's day, isn't it?
I'm sure they're here; we've seen them, and they'll come. You'd think so!
The weather in Zürich was cold: 12 degrees at 3.14 pm on 2024-01-05, café au lait for 4,50 €.
Naïve façades, résumé and coöperate; the Ångström unit and the straße near the Rhône.
There are 1000 words in the text and 250 of them are the, of, and, to, in, is, it, that.
Handwriting recognition turns the images of text lines into the words they show.
The model reads the image and writes the text one token at a time, then stops at the end.
This is a test of the tokenizer: numbers 0123456789, dates 1999-12-31, prices $5.00 and 7%.
日本語のテキストと中文的文本，还有한국어 텍스트.
Emoji too: 🐱 🐶 ❤️ 👍🏽 and symbols like © ® ™ ± × ÷.
"We don't know," she said, "whether it'll work." He's reading; she's writing.
   Indented lines, tabs\tand\nnew lines, multiple   spaces    everywhere.
"""
SENTENCES = [line for line in CORPUS.split("\n") if line.strip()]

# Texts to encode: contractions, white space runs, tabs and new lines, accents, CJK, emoji,
# digits, the special tokens written in them, invalid UTF-8.
TEXTS = [
    "Hello world", " Hello world", "Hello  world", "The quick brown fox.",
    "It's the dog's day, isn't it? I'm sure they're here; we've seen them, they'll come, you'd "
    "see.", "IT'S DON'T 'S 'T 're 'RE ''s 's's", "don't' 'll ' d 'd",
    "a  b   c    d", "trailing   ", "   leading", "a \t b\n\nc\r\nd", "\t\n", " ", "", "  x  ",
    "caf\u00e9 cafe\u0301 na\u00efve Z\u00fcrich \u00c5ngstr\u00f6m stra\u00dfe",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 \u4e2d\u6587 \ud55c\uad6d\uc5b4",
    "emoji \U0001f431\U0001f436 \u2764\ufe0f \U0001f44d\U0001f3fd",
    "0123456789 3.14 1,000 2024-01-05 $5.00 7% \u00bd \u2167 \u0663",
    "x\u00a0y\u3000z\u2028w \u2003 v", "a\x1cb\x1fc", "word\u00adhyphen \u200bzero",
    "C++/C# && @user #tag ... --> <-- !!!", "\U0010ffff\ue000 private", "A\u0308\u0304 marks",
    # the special tokens written in the text
    "<|endoftext|>", "Hello<|endoftext|>world", "a <|endoftext|> b", "<|endoftext|><|endoftext|>",
    "<s>hello</s>", "<s> hello </s>", "a <mask> b", "a   <mask>   b", "<mask>", " <mask>",
    "<unk> <pad> x", "</s></s>", "<s", "< s>", "<|endoftext|", "<pad>  <mask>",
    "\u3000<mask>\u3000", "<<s>>", "<|pad|> extra <|sep|>",
]
RAW = [b"caf\xe9", b"ab\xff\xfe c\xe2\x82 d\xc3", b"\xe2\x82A", b"\xf0\x90\x80 x", b"a\x00b",
       b"\x80\xbf tail", b"<s\xff>"]
LONG = "The model reads the image and writes the text one token at a time. " * 4
MAX_LENGTHS = [None, 8, 3]  # not below 3: transformers does not cut at all when max_length
# leaves no room for a text token beside the two special ones


def train_merges(count):
    """The commonest adjacent symbols of the corpus's GPT-2 pieces, merged `count` times (ties to
    the smallest pair)."""
    words = Counter()
    for line in SENTENCES:
        for piece in GPT2_PATTERN.findall(line):
            words[tuple(BYTE_ENCODER[b] for b in piece.encode("utf-8"))] += 1
    merges = []
    for _ in range(count):
        pairs = Counter()
        for word, n in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += n
        best = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        merges.append(best)
        merged = Counter()
        for word, n in words.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] += n
        words = merged
    return merges


def byte_level_files(out, first, last):
    """vocab.json: `first` tokens, the 256 byte symbols (GPT-2's order), each merge's result,
    `last` tokens; merges.txt with its version line."""
    merges = train_merges(60)
    vocab = {}
    for token in first:
        vocab[token] = len(vocab)
    for b in sorted(BYTE_ENCODER, key=lambda b: ord(BYTE_ENCODER[b])):
        vocab[BYTE_ENCODER[b]] = len(vocab)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    for token in last:
        vocab[token] = len(vocab)
    merges_text = "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges)
    os.makedirs(out, exist_ok=True)
    write_json(os.path.join(out, "vocab.json"), vocab)
    with open(os.path.join(out, "merges.txt"), "w", encoding="utf-8") as f:
        f.write(merges_text)
    return vocab, merges_text


def write_json(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, ensure_ascii=False)
        f.write("\n")


def flags(content, lstrip=False, rstrip=False, normalized=True, special=True):
    return dict(content=content, lstrip=lstrip, normalized=normalized, rstrip=rstrip,
                single_word=False, special=special)


def byte_symbol_ids(tok, raw):
    return [tok.encoder[BYTE_ENCODER[b]] for b in raw]


BROKEN = [b"\xc3", b"\xc3\xa9", b"\xe2\x82", b"\xe2\x82A", b"\xe6\x97\xa5\xe6", b"\xf0\x9f\x90",
          b"\xa9\xc3", b"\xff\xfe", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"a\xc3 b"]
CLEAN_UP_TEXTS = ["it 's a hit , is n't it ? yes ! no .", "i 'm sure they 're good . we 've "
                  "seen ' em", " spaced   out  ", "a ' b ' c", "n't 's"]


def golden_cases(tok_for, configs, texts, id_lists_for):
    encode, decode = [], []
    for name in configs:
        tok = tok_for(name)
        for raw in texts:
            text = raw.decode("utf-8", "replace")
            for max_length in MAX_LENGTHS:
                encode.append(dict(config=name, text=text, hex=raw.hex(), max_length=max_length,
                                   ids=tok.encode(text, max_length)))
        for ids in id_lists_for(tok):
            for skip in (True, False):
                decode.append(dict(config=name, ids=ids, skip_special_tokens=skip,
                                   hex=tok.decode(ids, skip).encode("utf-8").hex()))
    return encode, decode


def write_golden(out, configs, encode, decode, **extra):
    golden = dict(extra, configs={name: dict(tokenizer_config=c, special_tokens_map=s)
                                  for name, (c, s) in configs.items()},
                  encode=encode, decode=decode)
    with open(os.path.join(out, "golden.json"), "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"{out}/golden.json: {len(encode)} encodings, {len(decode)} decodings")


def all_texts():
    return [t.encode("utf-8") for t in TEXTS + [LONG]] + RAW


def byte_level_id_lists(tok, special):
    lists = [tok.encode(t.decode("utf-8", "replace")) for t in all_texts()]
    lists = [ids for ids in lists if ids]
    lists.append(special + tok.encode("Hello world") + special[::-1])
    lists += [byte_symbol_ids(tok, raw) for raw in BROKEN]
    lists.append(tok.encode("caf\u00e9")[:-1])  # the last byte of é cut off
    lists += [tok.encode(t) for t in CLEAN_UP_TEXTS]
    return lists


def write_gpt2():
    out = os.path.join(DATA, "gpt2-micro")
    vocab, merges = byte_level_files(out, [], ["<|endoftext|>"])
    eot = str(vocab["<|endoftext|>"])
    # what GPT2Tokenizer.save_pretrained writes (transformers 4.4x)
    base = {"add_bos_token": False, "add_prefix_space": False,
            "added_tokens_decoder": {eot: flags("<|endoftext|>")},
            "bos_token": "<|endoftext|>", "clean_up_tokenization_spaces": False,
            "eos_token": "<|endoftext|>", "errors": "replace", "model_max_length": 1024,
            "pad_token": None, "tokenizer_class": "GPT2Tokenizer", "unk_token": "<|endoftext|>"}
    smap = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
            "unk_token": "<|endoftext|>"}
    n = len(vocab)
    configs = {
        "gpt2": (base, smap),
        # prefix space, bos in front, the clean-up, a pad token and additional special tokens
        # past the vocabulary (new ids), one with strips; the class from the fast name
        "gpt2-extra": (dict(base, add_prefix_space=True, add_bos_token=True,
                            clean_up_tokenization_spaces=True, tokenizer_class="GPT2TokenizerFast",
                            pad_token="<|pad|>",
                            additional_special_tokens=["<|sep|>"],
                            added_tokens_decoder={eot: flags("<|endoftext|>"),
                                                  str(n): flags("<|pad|>"),
                                                  str(n + 1): flags("<|sep|>", True, True)}),
                       dict(smap, pad_token="<|pad|>", additional_special_tokens=["<|sep|>"])),
        # no tokenizer_config.json at all: the class's defaults
        "gpt2-bare": ({}, {}),
    }
    toks = {name: GPT2(vocab, merges, c, s) for name, (c, s) in configs.items()}
    enc, dec = golden_cases(lambda name: toks[name], configs, all_texts(),
                            lambda tok: byte_level_id_lists(tok, [vocab["<|endoftext|>"]]))
    extra_ids = [toks["gpt2-extra"].added[t][0] for t in ("<|pad|>", "<|sep|>")]
    for skip in (True, False):  # the additional token past the vocabulary stands apart
        ids = toks["gpt2-extra"].encode("a<|sep|>b <|pad|>c. <|sep|>")
        dec.append(dict(config="gpt2-extra", ids=ids, skip_special_tokens=skip,
                        hex=toks["gpt2-extra"].decode(ids, skip).encode().hex()))
    write_json(os.path.join(out, "tokenizer_config.json"), base)
    write_json(os.path.join(out, "special_tokens_map.json"), smap)
    write_golden(out, configs, enc, dec, vocab_size=n, extra_ids=extra_ids)


def write_roberta():
    out = os.path.join(DATA, "roberta-micro")
    vocab, merges = byte_level_files(out, ["<s>", "<pad>", "</s>", "<unk>"], ["<mask>"])
    dec_tokens = {str(vocab[t]): flags(t) for t in ("<s>", "<pad>", "</s>", "<unk>")}
    dec_tokens[str(vocab["<mask>"])] = flags("<mask>", lstrip=True, normalized=False)
    # what RobertaTokenizer.save_pretrained writes (transformers 4.4x)
    base = {"add_prefix_space": False, "added_tokens_decoder": dec_tokens, "bos_token": "<s>",
            "clean_up_tokenization_spaces": True, "cls_token": "<s>", "eos_token": "</s>",
            "errors": "replace", "mask_token": "<mask>", "model_max_length": 512,
            "pad_token": "<pad>", "sep_token": "</s>", "tokenizer_class": "RobertaTokenizer",
            "trim_offsets": True, "unk_token": "<unk>"}
    smap = {"bos_token": "<s>", "cls_token": "<s>", "eos_token": "</s>",
            "mask_token": flags("<mask>", lstrip=True, normalized=False), "pad_token": "<pad>",
            "sep_token": "</s>", "unk_token": "<unk>"}
    for value in smap.values():
        if isinstance(value, dict):
            value.pop("special")
    configs = {
        "roberta": (base, smap),
        "roberta-prefix": (dict(base, add_prefix_space=True, clean_up_tokenization_spaces=False,
                                tokenizer_class="RobertaTokenizerFast"), smap),
        # strings only, no added_tokens_decoder: the class's flags (<mask> lstrip)
        "roberta-plain": ({"tokenizer_class": "RobertaTokenizer", "model_max_length": 512}, {}),
    }
    toks = {name: Roberta(vocab, merges, c, s) for name, (c, s) in configs.items()}
    special = [vocab["<s>"], vocab["<pad>"], vocab["</s>"], vocab["<unk>"], vocab["<mask>"]]
    enc, dec = golden_cases(lambda name: toks[name], configs, all_texts(),
                            lambda tok: byte_level_id_lists(tok, special))
    write_json(os.path.join(out, "tokenizer_config.json"), base)
    write_json(os.path.join(out, "special_tokens_map.json"), smap)
    write_golden(out, configs, enc, dec, vocab_size=len(vocab))


def train_xlmr_model():
    with tempfile.TemporaryDirectory() as tmp:
        # a fixed name: the trainer records its input's path in the model
        with open(os.path.join(tmp, "xlmr-corpus.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(SENTENCES * 3) + "\n")
        subprocess.run(["spm_train", "--input=xlmr-corpus.txt", "--model_prefix=xlmr",
                        "--model_type=bpe", "--vocab_size=300", "--character_coverage=0.98",
                        "--num_threads=1", "--minloglevel=1"], cwd=tmp, check=True)
        with open(os.path.join(tmp, "xlmr.model"), "rb") as f:
            return f.read()


def write_xlmr():
    out = os.path.join(DATA, "xlmr-micro")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "sentencepiece.bpe.model")
    if not os.path.exists(path):  # trained once: later runs keep the committed model
        with open(path, "wb") as f:
            f.write(train_xlmr_model())
    with open(path, "rb") as f:
        model = f.read()
    size = spm.SentencePieceProcessor(model_proto=model).get_piece_size()
    mask = size + 1
    dec_tokens = {"0": flags("<s>"), "1": flags("<pad>"), "2": flags("</s>"), "3": flags("<unk>"),
                  str(mask): flags("<mask>", lstrip=True, normalized=False)}
    # what XLMRobertaTokenizer.save_pretrained writes (transformers 4.4x), as trocr-small's
    base = {"added_tokens_decoder": dec_tokens, "bos_token": "<s>",
            "clean_up_tokenization_spaces": True, "cls_token": "<s>", "eos_token": "</s>",
            "mask_token": "<mask>", "model_max_length": 512, "pad_token": "<pad>",
            "sep_token": "</s>", "sp_model_kwargs": {}, "tokenizer_class": "XLMRobertaTokenizer",
            "unk_token": "<unk>"}
    smap = {"bos_token": "<s>", "cls_token": "<s>", "eos_token": "</s>",
            "mask_token": {"content": "<mask>", "lstrip": True, "normalized": False,
                           "rstrip": False, "single_word": False},
            "pad_token": "<pad>", "sep_token": "</s>", "unk_token": "<unk>"}
    configs = {"xlmr": (base, smap),
               "xlmr-plain": ({"tokenizer_class": "XLMRobertaTokenizer"}, {})}
    toks = {name: XLMR(model, c, s) for name, (c, s) in configs.items()}

    def id_lists(tok):
        lists = [tok.encode(t.decode("utf-8", "replace")) for t in all_texts()]
        lists.append([0, 1, 2, 3, mask] + tok.encode("Hello world") + [1, 1])
        lists.append(list(range(size + 2)))  # every id once
        sp = tok.sp
        lists += [[0] + [i + 1 if i else 3 for i in sp.encode(t)] + [2, 1] for t in CLEAN_UP_TEXTS]
        lists.append([4, 5, 6, 3, 3, 7])
        return lists

    enc, dec = golden_cases(lambda name: toks[name], configs, all_texts(), id_lists)
    write_json(os.path.join(out, "tokenizer_config.json"), base)
    write_json(os.path.join(out, "special_tokens_map.json"), smap)
    write_golden(out, configs, enc, dec, vocab_size=size + 2, pieces=size)


def write_clip_decode():
    folder = os.path.join(DATA, "clip-micro")
    with open(os.path.join(folder, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    with open(os.path.join(folder, "merges.txt"), encoding="utf-8") as f:
        merges = f.read()
    with open(os.path.join(folder, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    tok = ClipDecode(vocab, merges, config, {})
    eow = {b: vocab[BYTE_ENCODER[b] + "</w>"] for b in range(256)}
    plain = {b: vocab[BYTE_ENCODER[b]] for b in range(256)}
    word = [vocab[w] for w in ("a</w>", "photo</w>", "of</w>", "the</w>", "cat</w>")]
    lists = [[vocab["<|startoftext|>"]] + word + [vocab["<|endoftext|>"]] * 3, word,
             [plain[0xc3], eow[0xa9], plain[0xe2], plain[0x82], eow[ord(".")]],
             [eow[ord(" ")], eow[ord(" ")], plain[ord("x")], eow[0x09]],
             [plain[ord("<")], plain[ord("/")], plain[ord("w")], eow[ord(">")], word[1]],
             [eow[ord(c)] for c in "it's,.!"] + [plain[ord("n")], eow[ord("'")], eow[ord("t")]]]
    cases = [dict(ids=ids, skip_special_tokens=skip, hex=tok.decode(ids, skip).encode().hex())
             for ids in lists for skip in (True, False)]
    with open(os.path.join(folder, "decode.json"), "w", encoding="utf-8") as f:
        json.dump({"tokenizer": "tools/bpe_reference.py ClipDecode (CLIPTokenizer.decode)",
                   "cases": cases}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{folder}/decode.json: {len(cases)} decodings")


def siglip_decode(tok, ids, skip):
    """SiglipTokenizer.decode (T5Tokenizer's convert_tokens_to_string): the runs of ordinary
    pieces through the model's Decode, each special token as it is with a space before the first
    of a row of them, stripped; then the clean-up."""
    tokens = [tok.sp.id_to_piece(i) for i in ids if not (skip and i in tok.special_ids)]
    out, current, prev_special = "", [], False
    for token in tokens:
        if token in tok.all_special_tokens:
            if not prev_special:
                out += " "
            out += tok.sp.decode(current) + token
            prev_special, current = True, []
        else:
            current.append(token)
            prev_special = False
    out = (out + tok.sp.decode(current)).strip()
    return clean_up_tokenization(out) if tok.clean_up else out


def write_siglip_decode():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from spm_reference import Siglip  # noqa: E402
    folder = os.path.join(DATA, "spm-micro")
    with open(os.path.join(folder, "spiece.model"), "rb") as f:
        model = f.read()
    with open(os.path.join(folder, "golden.json"), encoding="utf-8") as f:
        configs = json.load(f)["configs"]
    cases = []
    for name, files in configs.items():
        tok = Siglip(model, files["tokenizer_config"], files["special_tokens_map"])
        eos, pad, unk = tok.eos_id, tok.pad_id, tok.added[tok.unk_token][0]
        plain = spm.SentencePieceProcessor(model_proto=model)
        lists = [tok(t, 16)[0] for t in ("a photo of a cat", "hi</s>", "x </s>   y", "")]
        lists += [[unk, eos, pad], [eos] + plain.encode("it 's a hit , is n't it ?") + [unk],
                  plain.encode("the cat") + [eos, eos] + plain.encode(" . dog") + [pad, unk],
                  [3, 4, 5, 260, eos, 7, unk, 8, pad, pad]]
        cases += [dict(config=name, ids=ids, skip_special_tokens=skip,
                       hex=siglip_decode(tok, ids, skip).encode().hex())
                  for ids in lists for skip in (True, False)]
    with open(os.path.join(folder, "decode.json"), "w", encoding="utf-8") as f:
        json.dump({"tokenizer": "tools/bpe_reference.py siglip_decode (SiglipTokenizer.decode)",
                   "cases": cases}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{folder}/decode.json: {len(cases)} decodings")


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    write_gpt2()
    write_roberta()
    write_xlmr()
    write_clip_decode()
    write_siglip_decode()
