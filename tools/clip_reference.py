#!/usr/bin/python3
"""Writes the CLIP and SigLIP micro models and their float64 goldens (run by hand; the project never
runs it).

Random-weight models in exact Hugging Face layout, each a folder under tests/data/, with goldens
computed by a float64 forward written here from transformers' modeling_clip.py and
modeling_siglip.py (no transformers import):

  clip-micro       CLIPModel, quick_gelu, towers of different widths (vision 32, text 24),
                   projection 20; the legacy config (eos_token_id 2: the text is pooled where the
                   largest id stands, as transformers does for configs older than its PR #24773)
  clip-micro-gelu  CLIPModel, gelu, vision 48 / text 32, projection 28, eos_token_id the real end
                   token (pooled at its first occurrence)
  siglip-micro     SiglipModel, gelu_pytorch_tanh, no CLS token, the attention-pooling head
                   (torch.nn.MultiheadAttention's packed in_proj), a bidirectional text tower pooled
                   at the last position of a text padded to max_length, logit_scale and logit_bias

CLIP folders get a small byte-level BPE vocabulary (vocab.json, merges.txt: every byte symbol,
merges for a few words, the two special tokens) tokenized here as CLIPTokenizerFast does (NFC,
white space runs to one space, per-character lower case, CLIP's pattern, GPT-2's byte symbols with
</w>, merges by rank); this tokenizer is first checked against the 26 texts of
../shared/data/clip/tokenizer-golden.json (OpenAI's ids) with CLIP's real vocabulary. siglip-micro
gets tests/data/spm-micro's SentencePiece model and settings (model_max_length set to its 16
positions), its texts tokenized by tools/spm_reference.py's SiglipTokenizer and padded to
max_length.
The images are three of tests/data/golden-images (tools/vit_reference.py writes them).

Each folder: config.json, preprocessor_config.json, model.safetensors (F32, names as
save_pretrained writes them), golden.safetensors and golden.json:
  image/<name>/pixels [3, S, S]   the preprocessed image (Pillow, as the slow image processors)
  image/<name>/embeds [P]         the image embedding before normalisation
  text/<i>/ids [T]                the text's token ids (float32 holding integers)
  text/<i>/embeds [P]             the text embedding before normalisation
  logits_per_image [images, texts]
golden.json lists the images, the texts and the float32 PyTorch forward's largest difference from
the float64 one (the size of the rounding a float32 engine is up against).

usage: /usr/bin/python3 tools/clip_reference.py [SHARED]   (SHARED: ../shared by default)
"""

import json
import os
import sys
import unicodedata

import numpy as np
import regex
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_reference import preprocess, write_safetensors  # noqa: E402
from spm_reference import Siglip  # noqa: E402

SPM_MICRO = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests",
                         "data", "spm-micro")  # tools/spm_reference.py's SentencePiece model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared")
IMAGE_DIR = os.path.join(ROOT, "tests", "data", "golden-images")  # tools/vit_reference.py's
IMAGES = ["rgb_64x48.png", "tall_40x400.jpg", "palette_120x90.png"]
TEXTS = ["a photo of a cat", "A Photo of the DOG's photo!", "", "cat dog cat dog cat dog cat dog "
         "cat dog cat dog cat dog cat dog", "the photo 12 of a bird \u00e9t\u00e9"]
CLIP_MEAN, CLIP_STD = [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]
WORDS = ["the", "photo", "cat", "dog", "of", "a", "bird", "'s", "ing", "an"]

MODELS = {
    "clip-micro": dict(kind="clip", seed=21, act="quick_gelu", projection=20, legacy_eos=True,
                       vision=dict(hidden=32, layers=2, heads=4, mlp=64, image=32, patch=8),
                       text=dict(hidden=24, layers=2, heads=2, mlp=48, positions=16),
                       eps=1e-5, resize=36),
    "clip-micro-gelu": dict(kind="clip", seed=22, act="gelu", projection=28, legacy_eos=False,
                            vision=dict(hidden=48, layers=2, heads=4, mlp=96, image=40, patch=10),
                            text=dict(hidden=32, layers=3, heads=4, mlp=64, positions=20),
                            eps=1e-5, resize=44),
    "siglip-micro": dict(kind="siglip", seed=23, act="gelu_pytorch_tanh",
                         vision=dict(hidden=32, layers=2, heads=4, mlp=64, image=32, patch=8),
                         text=dict(hidden=32, layers=2, heads=4, mlp=64, positions=16),
                         eps=1e-6, resize=32),
}


# ---- CLIP's tokenizer, as CLIPTokenizerFast ----

def bytes_to_unicode():
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_SYMBOL = bytes_to_unicode()
PATTERN = regex.compile(r"""<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|"""
                        r"""[\p{N}]|[^\s\p{L}\p{N}]+""", regex.IGNORECASE)


class ClipTokenizer:
    def __init__(self, vocab, merges):
        self.vocab = vocab
        self.ranks = {tuple(m.split(" ")): i for i, m in enumerate(merges)}
        self.bos, self.eos = vocab["<|startoftext|>"], vocab["<|endoftext|>"]

    def bpe(self, piece):
        word = [BYTE_SYMBOL[b] for b in piece.encode("utf-8")]
        word[-1] += "</w>"
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

    def encode(self, text, max_len):
        text = unicodedata.normalize("NFC", text)
        text = regex.sub(r"\s+", " ", text)
        text = "".join(c.lower() for c in text)  # per character: no final-sigma rule
        ids = []
        for piece in PATTERN.findall(text):
            if piece in ("<|startoftext|>", "<|endoftext|>"):
                ids.append(self.vocab[piece])
            else:
                ids += [self.vocab[s] for s in self.bpe(piece)]
        return [self.bos] + ids[:max_len - 2] + [self.eos]


def check_tokenizer():
    folder = os.path.join(SHARED, "data", "clip")
    with open(os.path.join(folder, "vocab.json")) as f:
        vocab = json.load(f)
    with open(os.path.join(folder, "merges.txt")) as f:
        merges = [m for m in f.read().split("\n")[1:] if m]
    tok = ClipTokenizer(vocab, merges)
    with open(os.path.join(folder, "tokenizer-golden.json")) as f:
        golden = json.load(f)
    for case in golden["cases"]:
        assert tok.encode(case["text"], 10 ** 6) == case["ids"], case["text"]
        assert tok.encode(case["text"], 77) == case["ids_77"], case["text"]
    print(f"the reference tokenizer gives OpenAI's ids for all {len(golden['cases'])} texts")
    return tok


# Beyond OpenAI's 26: what CLIPTokenizerFast's normaliser and pattern do that the golden texts
# do not reach (NFC composition, Unicode white space, per-character lower case, scripts, numbers,
# special tokens in capitals, a long text cut to the 77-token context).
HARD_TEXTS = [
    "cafe\u0301 na\u0308ive", "\u00c5ngstr\u00f6m \u212bngstr\u00f6m", "\u0130stanbul \u0049STANBUL",
    "\u039f\u0394\u039f\u03a3 \u03bf\u03b4\u03bf\u03c2", "a\u00a0b\u3000c\u2028d\u2003e\t\n\r f",
    "\uff21\uff22\uff23 \uff11\uff12\uff13", "\u0661\u0662\u0663 \u00bd \u2168 \u00b2",
    "don\u2019t it\u2019s rock\u2019n\u2019roll", "\U0001f468\u200d\U0001f469\u200d\U0001f467 family",
    "<|ENDOFTEXT|> <|startoftext|>x<|endoftext|>", "x" * 300, "ab" * 1000,
    " ".join(["word%d" % i for i in range(200)]), "\u0915\u094d\u0937 \u0e01\u0e33 \ud55c\uad6d\uc5b4",
    "''s ''t '' ' s", "C++/C# && $100.00 @user #tag", "",
]


def write_hard_tokenizer_set(tok):
    cases = [{"text": t, "ids_77": tok.encode(t, 77)} for t in HARD_TEXTS]
    with open(os.path.join(ROOT, "tests", "data", "clip-tokenizer-hard.json"), "w") as f:
        json.dump({"tokenizer": "tools/clip_reference.py ClipTokenizer (CLIPTokenizerFast's "
                   "normaliser, pattern and BPE) with ../shared/data/clip's vocabulary",
                   "cases": cases}, f, indent=1, ensure_ascii=False)
    print(f"tests/data/clip-tokenizer-hard.json: {len(cases)} texts")


def micro_vocabulary():
    """Every byte symbol, alone and with </w>; each word's merges left to right; the specials."""
    vocab, merges = {}, []
    for suffix in ("", "</w>"):
        for b in range(256):
            vocab[BYTE_SYMBOL[b] + suffix] = len(vocab)
    for word in WORDS:
        symbols = [BYTE_SYMBOL[b] for b in word.encode()]
        for k in range(1, len(symbols)):
            end = "</w>" if k + 1 == len(symbols) else ""
            merge = "".join(symbols[:k]) + " " + symbols[k] + end
            if merge not in merges:
                merges.append(merge)
                vocab["".join(symbols[:k + 1]) + end] = len(vocab)
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    return vocab, merges


# ---- weights ----

def linear(g, w, name, n_out, n_in, bias=True):
    w[name + ".weight"] = torch.randn(n_out, n_in, generator=g, dtype=torch.float64) * n_in ** -0.5
    if bias:
        w[name + ".bias"] = torch.randn(n_out, generator=g, dtype=torch.float64) * 0.1


def layer_norm(g, w, name, n):
    w[name + ".weight"] = 1 + torch.randn(n, generator=g, dtype=torch.float64) * 0.1
    w[name + ".bias"] = torch.randn(n, generator=g, dtype=torch.float64) * 0.1


def encoder(g, w, prefix, t):
    for i in range(t["layers"]):
        p = f"{prefix}.encoder.layers.{i}."
        layer_norm(g, w, p + "layer_norm1", t["hidden"])
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            linear(g, w, p + "self_attn." + proj, t["hidden"], t["hidden"])
        layer_norm(g, w, p + "layer_norm2", t["hidden"])
        linear(g, w, p + "mlp.fc1", t["mlp"], t["hidden"])
        linear(g, w, p + "mlp.fc2", t["hidden"], t["mlp"])


def random_weights(spec, vocab_size):
    g = torch.Generator().manual_seed(spec["seed"])
    v, t, w = spec["vision"], spec["text"], {}
    clip = spec["kind"] == "clip"
    grid = v["image"] // v["patch"]
    w["vision_model.embeddings.patch_embedding.weight"] = torch.randn(
        v["hidden"], 3, v["patch"], v["patch"], generator=g, dtype=torch.float64) * 0.1
    if clip:
        w["vision_model.embeddings.class_embedding"] = torch.randn(v["hidden"], generator=g,
                                                                   dtype=torch.float64)
        layer_norm(g, w, "vision_model.pre_layrnorm", v["hidden"])
    else:
        w["vision_model.embeddings.patch_embedding.bias"] = torch.randn(
            v["hidden"], generator=g, dtype=torch.float64) * 0.1
    w["vision_model.embeddings.position_embedding.weight"] = torch.randn(
        grid * grid + clip, v["hidden"], generator=g, dtype=torch.float64) * 0.5
    encoder(g, w, "vision_model", v)
    layer_norm(g, w, "vision_model.post_layernorm", v["hidden"])
    w["text_model.embeddings.token_embedding.weight"] = torch.randn(
        vocab_size, t["hidden"], generator=g, dtype=torch.float64)
    w["text_model.embeddings.position_embedding.weight"] = torch.randn(
        t["positions"], t["hidden"], generator=g, dtype=torch.float64) * 0.5
    encoder(g, w, "text_model", t)
    layer_norm(g, w, "text_model.final_layer_norm", t["hidden"])
    if clip:
        linear(g, w, "visual_projection", spec["projection"], v["hidden"], bias=False)
        linear(g, w, "text_projection", spec["projection"], t["hidden"], bias=False)
        w["logit_scale"] = torch.tensor(2.6592, dtype=torch.float64)
    else:
        h = "vision_model.head."
        w[h + "probe"] = torch.randn(1, 1, v["hidden"], generator=g, dtype=torch.float64)
        w[h + "attention.in_proj_weight"] = torch.randn(
            3 * v["hidden"], v["hidden"], generator=g, dtype=torch.float64) * v["hidden"] ** -0.5
        w[h + "attention.in_proj_bias"] = torch.randn(3 * v["hidden"], generator=g,
                                                      dtype=torch.float64) * 0.1
        linear(g, w, h + "attention.out_proj", v["hidden"], v["hidden"])
        layer_norm(g, w, h + "layernorm", v["hidden"])
        linear(g, w, h + "mlp.fc1", v["mlp"], v["hidden"])
        linear(g, w, h + "mlp.fc2", v["hidden"], v["mlp"])
        linear(g, w, "text_model.head", t["hidden"], t["hidden"])
        w["logit_scale"] = torch.tensor([2.3], dtype=torch.float64)
        w["logit_bias"] = torch.tensor([-1.7], dtype=torch.float64)
    # weights are float32 in the file: the reference computes with exactly those values
    return {k: x.to(torch.float32).to(torch.float64) for k, x in w.items()}


# ---- the forward, in the dtype of its inputs ----

def activation(name, x):
    if name == "quick_gelu":
        return x * torch.sigmoid(1.702 * x)
    if name == "gelu":
        return F.gelu(x)
    return F.gelu(x, approximate="tanh")


def ln(w, name, x, eps):
    return F.layer_norm(x, x.shape[-1:], w[name + ".weight"], w[name + ".bias"], eps)


def lin(w, name, x):
    return F.linear(x, w[name + ".weight"], w.get(name + ".bias"))


def attention(q, k, v, heads, mask=None):
    B, Tq, D = q.shape
    hd = D // heads
    q = q.view(B, Tq, heads, hd).transpose(1, 2)
    k = k.view(B, -1, heads, hd).transpose(1, 2)
    v = v.view(B, -1, heads, hd).transpose(1, 2)
    scores = q @ k.transpose(-1, -2) * hd ** -0.5
    if mask is not None:
        scores = scores + mask
    return (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(B, Tq, D)


def run_encoder(w, prefix, cfg, act, eps, h, mask=None):
    for i in range(cfg["layers"]):
        p = f"{prefix}.encoder.layers.{i}."
        x = ln(w, p + "layer_norm1", h, eps)
        a = attention(lin(w, p + "self_attn.q_proj", x), lin(w, p + "self_attn.k_proj", x),
                      lin(w, p + "self_attn.v_proj", x), cfg["heads"], mask)
        h = h + lin(w, p + "self_attn.out_proj", a)
        x = ln(w, p + "layer_norm2", h, eps)
        h = h + lin(w, p + "mlp.fc2", activation(act, lin(w, p + "mlp.fc1", x)))
    return h


def attention_pool(w, v, act, eps, h):
    """SiglipMultiheadAttentionPoolingHead: the probe attends to every token."""
    p, D = "vision_model.head.", v["hidden"]
    wq, wk, wv = w[p + "attention.in_proj_weight"].split(D)
    bq, bk, bv = w[p + "attention.in_proj_bias"].split(D)
    probe = w[p + "probe"].to(h.dtype).expand(h.shape[0], 1, D)
    a = attention(F.linear(probe, wq.to(h.dtype), bq.to(h.dtype)),
                  F.linear(h, wk.to(h.dtype), bk.to(h.dtype)),
                  F.linear(h, wv.to(h.dtype), bv.to(h.dtype)), v["heads"])
    a = lin(w, p + "attention.out_proj", a)
    x = ln(w, p + "layernorm", a, eps)
    return (a + lin(w, p + "mlp.fc2", activation(act, lin(w, p + "mlp.fc1", x))))[:, 0]


def check_attention_pool(w, spec):
    """The probe's attention read as torch.nn.MultiheadAttention reads its packed weights."""
    v = spec["vision"]
    mha = torch.nn.MultiheadAttention(v["hidden"], v["heads"], batch_first=True).double()
    p = "vision_model.head.attention."
    with torch.no_grad():
        mha.in_proj_weight.copy_(w[p + "in_proj_weight"])
        mha.in_proj_bias.copy_(w[p + "in_proj_bias"])
        mha.out_proj.weight.copy_(w[p + "out_proj.weight"])
        mha.out_proj.bias.copy_(w[p + "out_proj.bias"])
    h = torch.randn(2, 5, v["hidden"], dtype=torch.float64)
    probe = w["vision_model.head.probe"].expand(2, 1, -1)
    want = mha(probe, h, h)[0]
    D = v["hidden"]
    wq, wk, wv = w[p + "in_proj_weight"].split(D)
    bq, bk, bv = w[p + "in_proj_bias"].split(D)
    got = lin(w, p + "out_proj", attention(F.linear(probe, wq, bq), F.linear(h, wk, bk),
                                            F.linear(h, wv, bv), v["heads"]))
    assert (got - want).abs().max().item() < 1e-12


def image_embeds(w, spec, pixels):
    v, eps, clip = spec["vision"], spec["eps"], spec["kind"] == "clip"
    x = F.conv2d(pixels, w["vision_model.embeddings.patch_embedding.weight"],
                 w.get("vision_model.embeddings.patch_embedding.bias"), stride=v["patch"])
    h = x.flatten(2).transpose(1, 2)
    if clip:
        cls = w["vision_model.embeddings.class_embedding"].expand(h.shape[0], 1, -1)
        h = torch.cat([cls, h], 1)
    h = h + w["vision_model.embeddings.position_embedding.weight"]
    if clip:
        h = ln(w, "vision_model.pre_layrnorm", h, eps)
    h = run_encoder(w, "vision_model", v, spec["act"], eps, h)
    if clip:
        return lin(w, "visual_projection", ln(w, "vision_model.post_layernorm", h[:, 0], eps))
    return attention_pool(w, v, spec["act"], eps, ln(w, "vision_model.post_layernorm", h, eps))


def text_embeds(w, spec, ids, eos_token_id):
    t, eps, clip = spec["text"], spec["eps"], spec["kind"] == "clip"
    T = ids.shape[1]
    h = w["text_model.embeddings.token_embedding.weight"][ids]
    h = h + w["text_model.embeddings.position_embedding.weight"][:T]
    mask = None
    if clip:  # causal: a position sees itself and the ones before it
        mask = torch.full((T, T), float("-inf"), dtype=h.dtype).triu(1)
    h = ln(w, "text_model.final_layer_norm",
           run_encoder(w, "text_model", t, spec["act"], eps, h, mask), eps)
    if not clip:
        return lin(w, "text_model.head", h[:, -1])
    rows = torch.arange(ids.shape[0])
    if eos_token_id == 2:  # legacy configs: the end token is the largest id
        return lin(w, "text_projection", h[rows, ids.argmax(-1)])
    return lin(w, "text_projection", h[rows, (ids == eos_token_id).int().argmax(-1)])


# ---- preprocessing: hf_reference.preprocess on the processor config written here ----

def preprocessor_config(spec):
    S = spec["vision"]["image"]
    if spec["kind"] == "clip":
        return {"crop_size": {"height": S, "width": S}, "do_center_crop": True,
                "do_convert_rgb": True, "do_normalize": True, "do_rescale": True,
                "do_resize": True, "image_mean": CLIP_MEAN, "image_processor_type":
                "CLIPImageProcessor", "image_std": CLIP_STD, "resample": 3,
                "rescale_factor": 1 / 255, "size": {"shortest_edge": spec["resize"]}}
    return {"do_convert_rgb": None, "do_normalize": True, "do_rescale": True, "do_resize": True,
            "image_mean": [0.5] * 3, "image_processor_type": "SiglipImageProcessor",
            "image_std": [0.5] * 3, "processor_class": "SiglipProcessor", "resample": 3,
            "rescale_factor": 1 / 255, "size": {"height": S, "width": S}}


# ---- config.json as save_pretrained writes it ----

def tower_config(spec, tower, vocab_size, eos):
    c, kind = spec[tower], spec["kind"]
    out = {"model_type": f"{kind}_{tower}_model", "hidden_size": c["hidden"],
           "intermediate_size": c["mlp"], "num_attention_heads": c["heads"],
           "num_hidden_layers": c["layers"], "hidden_act": spec["act"],
           "layer_norm_eps": spec["eps"], "attention_dropout": 0.0}
    if kind == "clip":
        out["projection_dim"] = spec["projection"]
    if tower == "vision":
        out.update(image_size=c["image"], patch_size=c["patch"], num_channels=3)
    else:
        out.update(vocab_size=vocab_size, max_position_embeddings=c["positions"],
                   eos_token_id=eos, bos_token_id=0 if eos == 2 else eos - 1, pad_token_id=1)
    return out


def config_json(spec, vocab_size, eos):
    kind = spec["kind"]
    out = {"architectures": ["CLIPModel" if kind == "clip" else "SiglipModel"],
           "model_type": kind, "initializer_factor": 1.0, "torch_dtype": "float32",
           "transformers_version": "4.46.0",
           "text_config": tower_config(spec, "text", vocab_size, eos),
           "vision_config": tower_config(spec, "vision", vocab_size, eos)}
    if kind == "clip":
        out.update(projection_dim=spec["projection"], logit_scale_init_value=2.6592)
    return out


# ---- files ----

def f32(t):
    return t.detach().to(torch.float32).numpy()


def write_tokenizer(out, spec):
    vocab, merges = micro_vocabulary()
    with open(os.path.join(out, "vocab.json"), "w") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(out, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n" + "\n".join(merges) + "\n")
    positions = spec["text"]["positions"]
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "CLIPTokenizer", "model_max_length": positions,
                   "bos_token": "<|startoftext|>", "eos_token": "<|endoftext|>",
                   "pad_token": "<|endoftext|>", "unk_token": "<|endoftext|>",
                   "do_lower_case": True, "errors": "replace"}, f, indent=2)
    return ClipTokenizer(vocab, merges)


def siglip_tokenizer(out, positions):
    """tests/data/spm-micro's SentencePiece model and settings copied into the folder (the
    tokenizer's model_max_length set to the model's positions), and the reference SiglipTokenizer
    over them."""
    files = {}
    for name in ("spiece.model", "tokenizer_config.json", "special_tokens_map.json"):
        with open(os.path.join(SPM_MICRO, name), "rb") as f:
            files[name] = f.read()
        if name == "tokenizer_config.json":
            config = json.loads(files[name])
            config["model_max_length"] = positions
            files[name] = (json.dumps(config, indent=2, ensure_ascii=False) + "\n").encode()
        with open(os.path.join(out, name), "wb") as f:
            f.write(files[name])
    return Siglip(files["spiece.model"], json.loads(files["tokenizer_config.json"]),
                  json.loads(files["special_tokens_map.json"]))


def token_ids(spec, tok):
    """Each text's ids: CLIP's cut to the positions; SigLIP's padded to max_length (the positions)
    with its pad token, as SiglipTokenizer with padding="max_length" gives them."""
    T = spec["text"]["positions"]
    if spec["kind"] == "clip":
        return [tok.encode(text, T) for text in TEXTS]
    return [tok(text, T)[0] for text in TEXTS]


def write_model(name, spec):
    out = os.path.join(ROOT, "tests", "data", name)
    os.makedirs(out, exist_ok=True)
    clip = spec["kind"] == "clip"
    tok = write_tokenizer(out, spec) if clip else siglip_tokenizer(out, spec["text"]["positions"])
    vocab_size = len(tok.vocab) if clip else tok.sp.vocab_size()
    eos = (2 if spec["legacy_eos"] else tok.eos) if clip else tok.eos_id
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config_json(spec, vocab_size, eos), f, indent=2)
    with open(os.path.join(out, "preprocessor_config.json"), "w") as f:
        json.dump(preprocessor_config(spec), f, indent=2)
    w = random_weights(spec, vocab_size)
    write_safetensors(os.path.join(out, "model.safetensors"), {k: f32(x) for k, x in w.items()})
    if not clip:
        check_attention_pool(w, spec)
    w32 = {k: x.to(torch.float32) for k, x in w.items()}
    tensors, worst32, img64, img32, txt64, txt32 = {}, 0.0, [], [], [], []
    for image in IMAGES:
        pixels = preprocess(os.path.join(IMAGE_DIR, image), preprocessor_config(spec),
                            spec["vision"]["image"])
        tensors[f"image/{image}/pixels"] = pixels.numpy()
        e64 = image_embeds(w, spec, pixels[None].double())[0]
        e32 = image_embeds(w32, spec, pixels[None])[0]
        tensors[f"image/{image}/embeds"] = f32(e64)
        worst32 = max(worst32, (e32.double() - e64).abs().max().item())
        img64.append(e64)
        img32.append(e32)
    ids_list = token_ids(spec, tok)
    for i, ids in enumerate(ids_list):
        ids_t = torch.tensor([ids])
        e64 = text_embeds(w, spec, ids_t, eos)[0]
        e32 = text_embeds(w32, spec, ids_t, eos)[0]
        tensors[f"text/{i}/ids"] = np.array(ids, np.float32)
        tensors[f"text/{i}/embeds"] = f32(e64)
        worst32 = max(worst32, (e32.double() - e64).abs().max().item())
        txt64.append(e64)
        txt32.append(e32)

    def logits(img, txt, dtype):
        i = torch.stack(img)
        t = torch.stack(txt)
        i = i / i.norm(dim=-1, keepdim=True)
        t = t / t.norm(dim=-1, keepdim=True)
        s = i @ t.T * w["logit_scale"].to(dtype).exp()
        return s + w["logit_bias"].to(dtype) if "logit_bias" in w else s

    l64 = logits(img64, txt64, torch.float64)
    worst32 = max(worst32, (logits(img32, txt32, torch.float32).double() - l64).abs().max().item())
    tensors["logits_per_image"] = f32(l64)
    write_safetensors(os.path.join(out, "golden.safetensors"), tensors)
    with open(os.path.join(out, "golden.json"), "w") as f:
        json.dump({"model": name, "images": IMAGES, "texts": TEXTS,
                   "ids": ids_list, "float32_vs_float64_max_abs": worst32}, f, indent=1)
    print(f"{name}: {len(IMAGES)} images x {len(ids_list)} texts, float32 PyTorch vs float64 "
          f"max |d| {worst32:.3g} (embeddings and logits)")


if __name__ == "__main__":
    torch.set_num_threads(1)
    write_hard_tokenizer_set(check_tokenizer())
    for name, spec in MODELS.items():
        write_model(name, spec)
