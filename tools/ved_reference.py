#!/usr/bin/python3
"""Writes the VisionEncoderDecoder micro models and their float64 goldens (run by hand; the project
never runs it), and is the float64 forward the generation references import.

Three random-weight VisionEncoderDecoderModel folders in exact Hugging Face layout under
tests/data/, each with goldens from a float64 forward written here from transformers' code (no
transformers import):

  ved-trocr-vit       ViTModel encoder (32x32, patch 8, hidden 32, 2 layers, 2 heads, mlp 64, with
                      its pooler) + TrOCRForCausalLM (d_model 32, 2 layers, 2 heads, ffn 64, gelu,
                      learned positions, scale_embedding, layernorm_embedding, output projection
                      tied to embed_tokens); no enc_to_dec_proj; decoder_start_token_id 2 = </s>
                      = eos, as Microsoft's TrOCR checkpoints
  ved-trocr-sin-deit  DeiTModel encoder (CLS + distillation token; 32x32, patch 8, hidden 48, 3
                      heads, 2 layers, mlp 96, no pooler: TrOCR's conversion builds it with
                      add_pooling_layer=False) + TrOCRForCausalLM (d_model 32, 2 heads, 2 layers,
                      relu, sinusoidal positions, no embedding scale, no layernorm_embedding,
                      untied output_projection, cross_attention_hidden_size 48: the cross-attention
                      k/v projections take the encoder's width, as trocr-small's); start token <s>
  ved-gpt2-vit        ViTModel encoder (hidden 48, 3 heads of 16, with pooler) + GPT2LMHeadModel
                      with add_cross_attention (n_embd 32, 2 heads, 2 layers, n_positions 32,
                      n_inner null = 128, gelu_new): enc_to_dec_proj [32, 48]; <|endoftext|> is
                      bos, eos, pad and decoder start, as the ViT-GPT2 captioning checkpoints
  ved-gpt2-scaled     ved-gpt2-vit's spec and seed with scale_attn_by_inverse_layer_idx and
                      reorder_and_upcast_attn on: layer l's self- and cross-attention scores
                      divided by l + 1 as well (the upcast is fp32 maths, the same in float64)

Read from huggingface/transformers through the code index (the stored versions; the behaviour
used here is the same in all of them unless said): vision_encoder_decoder/
modeling_vision_encoder_decoder.py (00e21f51, 3fe39a4b) and configuration_vision_encoder_decoder.py
(0166003b), trocr/modeling_trocr.py (00b676f8, 4.5x) and configuration_trocr.py (0ea01089),
gpt2/modeling_gpt2.py (0010f602, 4.2x: attn.bias and attn.masked_bias are persistent buffers
there; from 4.31 they are persistent=False and not saved), the save_pretrained shared-tensor code
of modeling_utils.py; the ViT/DeiT forward is tools/hf_reference.py's. The files imitate what
transformers 4.46 writes (config.json sub-configs in full, keys sorted; generation_config.json
from GenerationConfig.from_model_config; no GPT-2 buffers; a tied output projection saved once,
under the embedding's name; TrOCR's sinusoidal `_float_tensor` buffer saved, its table never).

The forward, for the lead's and the generation helper's tests (rows = beams or batch entries):
  load(folder) -> Model
  encode(model, pixels [B, 3, S, S], dtype=float64) -> the encoder's last_hidden_state [B, N, De]
  cross_states(model, enc) -> enc_to_dec_proj(enc) when the model has one, else enc
  decoder_logits(model, cross, ids [rows, t], image_of_row=None, dtype=float64) -> [rows, t, V]
      a full causal recompute of each row's sequence against cross[image_of_row[r]]
TrOCR's sinusoidal positions follow its full forward: positions = cumsum(id != pad) * (id != pad)
+ pad, the table computed in float32 as transformers does (then widened); the cached generation
path gives the same positions unless a pad id stands inside the sequence.

Each folder: config.json, generation_config.json, preprocessor_config.json (ViTImageProcessor),
tokenizer files (RobertaTokenizer or GPT2Tokenizer: vocab.json, merges.txt, tokenizer_config.json,
special_tokens_map.json of a micro byte-level BPE: the 256 byte symbols in GPT-2's order, 39 merges
for ten English words with and without the leading "\u0120"; RoBERTa's <s> <pad> </s> <unk> first
and <mask> last, GPT-2's <|endoftext|> last), model.safetensors (F32),
golden.safetensors and golden.json:
  image/<name>/pixels [3, S, S]       the preprocessed image (tools/hf_reference.py preprocess)
  image/<name>/encoder [N, De]        the encoder's last_hidden_state (after its final LayerNorm)
  image/<name>/cross [N, Dd]          enc_to_dec_proj's output (ved-gpt2-vit only)
  image/<name>/logits [t, V]          decoder logits for decoder_input_ids
  decoder_input_ids [t]               decoder_start_token_id and 7 fixed ids (float32 integers)
  batch/ids [rows, t], batch/image_of_row [rows], batch/logits [rows, t, V]
                                      rows 0 and 1 share image 0 with different ids, row 2 image 1
golden.json: the images, the ids, the config facts, the greedy ids (max_length 20) of the golden
images with the smallest top-2 logit gap along them, every name and shape in model.safetensors,
and the float32 PyTorch forward's largest differences from the float64 one (encoder states and
logits).

The random weights are shaped so that generation is not trivial, and say so nowhere in the files:
learned position tables carry a linear trend along one direction (a position signal), the
LayerNorm before a tied output projection has its weight and bias negated (else the input token's
own embedding makes repeating it the likeliest next token), and the end token's output row is
fitted (Adam, float64) so that along the decoder's own greedy and sampled paths logit(end) minus
the logsumexp of the others rises linearly with the position: greedy search then ends after 3 to
19 steps on most of the 15 golden images and never on a few, and a 3-beam search leaves the
greedy path on most.

usage: /usr/bin/python3 tools/ved_reference.py [NAME...]  write the folders (or those named)
       /usr/bin/python3 tools/ved_reference.py --tune [NAME LO RISE...]
           greedy and beam statistics over every golden image for the specs' end-token targets,
           or for one model with other targets (how the specs' were chosen)
"""

import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_reference as ref  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
IMAGE_DIR = os.path.join(DATA, "golden-images")  # tools/vit_reference.py's
IMAGES = ["rgb_64x48.png", "tall_40x400.jpg", "palette_120x90.png"]
TUNE_IMAGES = sorted(os.listdir(IMAGE_DIR))
VERSION = "4.46.0"
WORDS = ["the", "a", "cat", "dog", "sat", "on", "mat", "red", "in", "of"]
GOLDEN_WORDS = ["\u0120the", "\u0120cat", "\u0120sat", "\u0120on", "\u0120the", "\u0120mat", "."]
MAX_NEW = 20  # generate's default max_length

MODELS = {
    "ved-trocr-vit": dict(
        seed=41, decoder="trocr", start="</s>",
        encoder=dict(kind="vit", image=32, patch=8, hidden=32, layers=2, heads=2, mlp=64,
                     eps=1e-12, qkv_bias=True, pooler=True),
        dec=dict(d_model=32, layers=2, heads=2, ffn=64, act="gelu", learned=True, scale=True,
                 ln_embedding=True, tied=True, cross_hidden=None, positions=32),
        emb_std=0.5, pos_std=0.5, pos_trend=6.0, eos_target=(-8.0, 0.55),
        preprocessor={"do_normalize": True, "do_rescale": True, "do_resize": True,
                      "image_mean": [0.5] * 3, "image_processor_type": "ViTImageProcessor",
                      "image_std": [0.5] * 3, "processor_class": "TrOCRProcessor", "resample": 2,
                      "rescale_factor": 1 / 255, "size": {"height": 32, "width": 32}}),
    "ved-trocr-sin-deit": dict(
        seed=42, decoder="trocr", start="<s>",
        encoder=dict(kind="deit", image=32, patch=8, hidden=48, layers=2, heads=3, mlp=96,
                     eps=1e-12, qkv_bias=True, pooler=False),
        dec=dict(d_model=32, layers=2, heads=2, ffn=64, act="relu", learned=False, scale=False,
                 ln_embedding=False, tied=False, cross_hidden=48, positions=32),
        emb_std=1.5, pos_std=None, eos_target=(-5.0, 0.5),
        preprocessor={"do_normalize": True, "do_resize": True,
                      "feature_extractor_type": "ViTFeatureExtractor", "image_mean": [0.5] * 3,
                      "image_std": [0.5] * 3, "resample": 3, "size": 32}),
    "ved-gpt2-vit": dict(
        seed=43, decoder="gpt2", start="<|endoftext|>",
        encoder=dict(kind="vit", image=32, patch=8, hidden=48, layers=2, heads=3, mlp=96,
                     eps=1e-12, qkv_bias=True, pooler=True),
        dec=dict(d_model=32, layers=2, heads=2, inner=None, act="gelu_new", positions=32),
        emb_std=0.5, pos_std=0.3, pos_trend=4.0, eos_target=(-6.0, 0.5),
        preprocessor={"do_normalize": True, "do_rescale": True, "do_resize": True,
                      "image_mean": [0.5] * 3, "image_processor_type": "ViTImageProcessor",
                      "image_std": [0.5] * 3, "resample": 2, "rescale_factor": 1 / 255,
                      "size": {"height": 32, "width": 32}}),
}
# ved-gpt2-vit's shapes and weights (the same seed) with both of GPT-2's attention switches on:
# scale_attn_by_inverse_layer_idx (layer l's scores / (l + 1)) and reorder_and_upcast_attn
MODELS["ved-gpt2-scaled"] = dict(MODELS["ved-gpt2-vit"],
                                 dec=dict(MODELS["ved-gpt2-vit"]["dec"], by_layer=True,
                                          upcast=True))


# ---- the micro byte-level BPE ----

def bytes_to_unicode():
    """GPT-2's byte symbols, in the order of GPT-2's first 256 ids."""
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_SYMBOL = bytes_to_unicode()


def micro_vocabulary(first, last):
    """The special tokens `first`, the byte symbols, each word's merges left to right (without and
    with the leading space symbol), the special tokens `last`: (vocab, merges)."""
    vocab = {t: i for i, t in enumerate(first)}
    for s in BYTE_SYMBOL.values():
        vocab[s] = len(vocab)
    merges = []
    for word in WORDS:
        for lead in ([], [BYTE_SYMBOL[32]]):
            symbols = lead + [BYTE_SYMBOL[b] for b in word.encode()]
            for k in range(1, len(symbols)):
                left = "".join(symbols[:k])
                if left + " " + symbols[k] not in merges:
                    merges.append(left + " " + symbols[k])
                    vocab[left + symbols[k]] = len(vocab)
    for t in last:
        vocab[t] = len(vocab)
    return vocab, merges


def added_token(content, lstrip=False, normalized=True):
    return {"content": content, "lstrip": lstrip, "normalized": normalized, "rstrip": False,
            "single_word": False, "special": True}


def tokenizer_files(kind):
    """(vocab, merges, tokenizer_config, special_tokens_map) as RobertaTokenizer (TrOCR) or
    GPT2Tokenizer (ViT-GPT2) save_pretrained writes them."""
    if kind == "trocr":
        vocab, merges = micro_vocabulary(["<s>", "<pad>", "</s>", "<unk>"], ["<mask>"])
        mask = {"content": "<mask>", "lstrip": True, "normalized": False, "rstrip": False,
                "single_word": False}
        decoder = {str(vocab[t]): added_token(t) for t in ("<s>", "<pad>", "</s>", "<unk>")}
        decoder[str(vocab["<mask>"])] = added_token("<mask>", True, False)
        config = {"add_prefix_space": False, "added_tokens_decoder": decoder,
                  "bos_token": "<s>", "clean_up_tokenization_spaces": False, "cls_token": "<s>",
                  "eos_token": "</s>", "errors": "replace", "mask_token": "<mask>",
                  "model_max_length": 512, "pad_token": "<pad>",
                  "processor_class": "TrOCRProcessor", "sep_token": "</s>",
                  "tokenizer_class": "RobertaTokenizer", "trim_offsets": True,
                  "unk_token": "<unk>"}
        special = {"bos_token": "<s>", "cls_token": "<s>", "eos_token": "</s>",
                   "mask_token": mask, "pad_token": "<pad>", "sep_token": "</s>",
                   "unk_token": "<unk>"}
        return vocab, merges, config, special
    vocab, merges = micro_vocabulary([], ["<|endoftext|>"])
    end = "<|endoftext|>"
    config = {"add_bos_token": False, "add_prefix_space": False,
              "added_tokens_decoder": {str(vocab[end]): added_token(end)}, "bos_token": end,
              "clean_up_tokenization_spaces": True, "eos_token": end, "errors": "replace",
              "model_max_length": 1024, "pad_token": end, "tokenizer_class": "GPT2Tokenizer",
              "unk_token": end}
    special = {"bos_token": end, "eos_token": end, "pad_token": end, "unk_token": end}
    return vocab, merges, config, special


# ---- config.json: PretrainedConfig.to_dict of transformers 4.46 ----

def pretrained_defaults():
    """Every attribute PretrainedConfig.__init__ sets (to_dict writes them all), at its default."""
    return {
        "_name_or_path": "", "add_cross_attention": False, "architectures": None,
        "bad_words_ids": None, "begin_suppress_tokens": None, "bos_token_id": None,
        "chunk_size_feed_forward": 0, "cross_attention_hidden_size": None,
        "decoder_start_token_id": None, "diversity_penalty": 0.0, "do_sample": False,
        "early_stopping": False, "encoder_no_repeat_ngram_size": 0, "eos_token_id": None,
        "exponential_decay_length_penalty": None, "finetuning_task": None,
        "forced_bos_token_id": None, "forced_eos_token_id": None,
        "id2label": {"0": "LABEL_0", "1": "LABEL_1"}, "is_decoder": False,
        "is_encoder_decoder": False, "label2id": {"LABEL_0": 0, "LABEL_1": 1},
        "length_penalty": 1.0, "max_length": 20, "min_length": 0, "no_repeat_ngram_size": 0,
        "num_beam_groups": 1, "num_beams": 1, "num_return_sequences": 1,
        "output_attentions": False, "output_hidden_states": False, "output_scores": False,
        "pad_token_id": None, "prefix": None, "problem_type": None, "pruned_heads": {},
        "remove_invalid_values": False, "repetition_penalty": 1.0, "return_dict": True,
        "return_dict_in_generate": False, "sep_token_id": None, "suppress_tokens": None,
        "task_specific_params": None, "temperature": 1.0, "tf_legacy_loss": False,
        "tie_encoder_decoder": False, "tie_word_embeddings": True, "tokenizer_class": None,
        "top_k": 50, "top_p": 1.0, "torch_dtype": None, "torchscript": False,
        "transformers_version": VERSION, "typical_p": 1.0, "use_bfloat16": False}


def encoder_config(e):
    c = pretrained_defaults()
    c.update(model_type=e["kind"], hidden_size=e["hidden"], num_hidden_layers=e["layers"],
             num_attention_heads=e["heads"], intermediate_size=e["mlp"], hidden_act="gelu",
             hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, initializer_range=0.02,
             layer_norm_eps=e["eps"], image_size=e["image"], patch_size=e["patch"],
             num_channels=3, qkv_bias=e["qkv_bias"], encoder_stride=16,
             pooler_output_size=e["hidden"], pooler_act="tanh")
    return c


def trocr_config(d, vocab_size, ids):
    c = pretrained_defaults()
    c.update(model_type="trocr", vocab_size=vocab_size, d_model=d["d_model"],
             decoder_layers=d["layers"], decoder_attention_heads=d["heads"],
             decoder_ffn_dim=d["ffn"], activation_function=d["act"],
             max_position_embeddings=d["positions"], dropout=0.1, attention_dropout=0.0,
             activation_dropout=0.0, classifier_dropout=0.0, init_std=0.02,
             decoder_layerdrop=0.0, use_cache=False, scale_embedding=d["scale"],
             use_learned_position_embeddings=d["learned"], layernorm_embedding=d["ln_embedding"],
             tie_word_embeddings=d["tied"], cross_attention_hidden_size=d["cross_hidden"],
             is_decoder=True, add_cross_attention=True, bos_token_id=ids["<s>"],
             pad_token_id=ids["<pad>"], eos_token_id=ids["</s>"], decoder_start_token_id=2)
    return c


def gpt2_config(d, vocab_size, end):
    c = pretrained_defaults()
    c.update(model_type="gpt2", architectures=["GPT2LMHeadModel"], vocab_size=vocab_size,
             n_positions=d["positions"], n_embd=d["d_model"], n_layer=d["layers"],
             n_head=d["heads"], n_inner=d["inner"], activation_function=d["act"],
             resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1, layer_norm_epsilon=1e-5,
             initializer_range=0.02, summary_type="cls_index", summary_use_proj=True,
             summary_activation=None, summary_proj_to_labels=True, summary_first_dropout=0.1,
             scale_attn_weights=True, use_cache=True,
             scale_attn_by_inverse_layer_idx=d.get("by_layer", False),
             reorder_and_upcast_attn=d.get("upcast", False), is_decoder=True, add_cross_attention=True,
             bos_token_id=end, eos_token_id=end, pad_token_id=end, decoder_start_token_id=end)
    return c


def model_config(spec, vocab):
    """(config.json, generation_config.json) dicts."""
    if spec["decoder"] == "trocr":
        dec = trocr_config(spec["dec"], len(vocab), vocab)
        ids = {"decoder_start_token_id": vocab[spec["start"]], "eos_token_id": vocab["</s>"],
               "pad_token_id": vocab["<pad>"]}
    else:
        end = vocab["<|endoftext|>"]
        dec = gpt2_config(spec["dec"], len(vocab), end)
        ids = {"bos_token_id": end, "decoder_start_token_id": end, "eos_token_id": end,
               "pad_token_id": end}
    config = {"architectures": ["VisionEncoderDecoderModel"], "decoder": dec,
              "encoder": encoder_config(spec["encoder"]), "is_encoder_decoder": True,
              "model_type": "vision-encoder-decoder", "tie_word_embeddings": False,
              "torch_dtype": "float32", "transformers_version": VERSION, **ids}
    # from_model_config: the top level's token ids, then what the decoder sets that the
    # generation config leaves at its default (TrOCR's bos_token_id and use_cache false)
    generation = {"_from_model_config": True, **ids, "transformers_version": VERSION}
    if spec["decoder"] == "trocr":
        generation.update(bos_token_id=vocab["<s>"], use_cache=False)
    return config, generation


# ---- random weights, in save_pretrained's names ----

class Draw:
    """Normal draws from one seeded generator, rounded to float32 (what is stored is what the
    reference computes with)."""

    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(seed)

    def __call__(self, *shape, std=1.0, mean=0.0):
        t = torch.randn(*shape, generator=self.g, dtype=torch.float64) * std + mean
        return t.float().double()

    def linear(self, w, name, n_out, n_in):
        w[name + ".weight"] = self(n_out, n_in, std=n_in ** -0.5)
        w[name + ".bias"] = self(n_out, std=0.1)

    def conv1d(self, w, name, n_in, n_out):
        """GPT-2's Conv1D: the weight stored [in, out], y = x W + b."""
        w[name + ".weight"] = self(n_in, n_out, std=n_in ** -0.5)
        w[name + ".bias"] = self(n_out, std=0.1)

    def layer_norm(self, w, name, n):
        w[name + ".weight"] = self(n, std=0.1, mean=1.0)
        w[name + ".bias"] = self(n, std=0.1)


def encoder_weights(spec):
    """hf_reference's random ViT/DeiT under "encoder." (no head), plus the pooler when the encoder
    is built as AutoModel.from_config builds it."""
    e = spec["encoder"]
    s = dict(kind=e["kind"], arch="", seed=spec["seed"], image=e["image"], patch=e["patch"],
             hidden=e["hidden"], layers=e["layers"], heads=e["heads"], mlp=e["mlp"],
             qkv_bias=e["qkv_bias"], labels=["x"])
    w = {}
    for k, v in ref.random_weights(s).items():
        if k.startswith(e["kind"] + "."):
            w["encoder." + k[len(e["kind"]) + 1:]] = v
    if e["pooler"]:
        Draw(spec["seed"] + 500).linear(w, "encoder.pooler.dense", e["hidden"], e["hidden"])
    return w


def position_trend(draw, table, size):
    """Adds size * (t - 8) / 8 along one random unit direction to position row t: a signal of the
    position the end token's row can read (random tables alone carry too little of it through
    the layers)."""
    u = draw(table.shape[1])
    u = u / u.norm()
    t = torch.arange(table.shape[0], dtype=torch.float64)
    return (table + size * (t[:, None] - 8) / 8 * u).float().double()


def flip(w, name):
    """Negates a LayerNorm's weight and bias. The last one before a tied output projection: the
    input token's own embedding, still present in the final hidden state, would otherwise make
    repeating it the likeliest next token."""
    w[name + ".weight"] = -w[name + ".weight"]
    w[name + ".bias"] = -w[name + ".bias"]


def trocr_weights(spec, vocab_size, pad):
    d, draw, w = spec["dec"], Draw(spec["seed"] + 1000), {}
    D, F_, p = d["d_model"], d["ffn"], "decoder.model.decoder."
    kv = d["cross_hidden"] or D
    emb = draw(vocab_size, D, std=spec["emb_std"])
    emb[pad] = 0  # TrOCR's init zeroes the padding row
    w[p + "embed_tokens.weight"] = emb
    if d["learned"]:
        table = draw(d["positions"] + 2, D, std=spec["pos_std"])
        w[p + "embed_positions.weight"] = torch.cat([table[:2], position_trend(
            draw, table[2:], spec["pos_trend"])])  # rows 0 and 1 are never read (offset 2)
    else:  # a persistent buffer, saved uninitialised by transformers; the table is not saved
        w[p + "embed_positions._float_tensor"] = torch.zeros(1, dtype=torch.float64)
    if d["ln_embedding"]:
        draw.layer_norm(w, p + "layernorm_embedding", D)
    for i in range(d["layers"]):
        q = f"{p}layers.{i}."
        for proj in ("k_proj", "v_proj", "q_proj"):
            draw.linear(w, q + "self_attn." + proj, D, D)
        draw.linear(w, q + "self_attn.out_proj", D, D)
        draw.layer_norm(w, q + "self_attn_layer_norm", D)
        draw.linear(w, q + "encoder_attn.k_proj", D, kv)
        draw.linear(w, q + "encoder_attn.v_proj", D, kv)
        draw.linear(w, q + "encoder_attn.q_proj", D, D)
        draw.linear(w, q + "encoder_attn.out_proj", D, D)
        draw.layer_norm(w, q + "encoder_attn_layer_norm", D)
        draw.linear(w, q + "fc1", F_, D)
        draw.linear(w, q + "fc2", D, F_)
        draw.layer_norm(w, q + "final_layer_norm", D)
    if not d["tied"]:
        w["decoder.output_projection.weight"] = draw(vocab_size, D, std=spec["emb_std"])
    else:
        flip(w, f"{p}layers.{d['layers'] - 1}.final_layer_norm")
    return w


def gpt2_weights(spec, vocab_size, enc_hidden):
    d, draw, w = spec["dec"], Draw(spec["seed"] + 1000), {}
    D, p = d["d_model"], "decoder.transformer."
    inner = d["inner"] or 4 * D
    w[p + "wte.weight"] = draw(vocab_size, D, std=spec["emb_std"])
    w[p + "wpe.weight"] = position_trend(draw, draw(d["positions"], D, std=spec["pos_std"]),
                                         spec["pos_trend"])
    for i in range(d["layers"]):
        q = f"{p}h.{i}."
        draw.layer_norm(w, q + "ln_1", D)
        draw.conv1d(w, q + "attn.c_attn", D, 3 * D)
        draw.conv1d(w, q + "attn.c_proj", D, D)
        draw.layer_norm(w, q + "ln_cross_attn", D)
        draw.conv1d(w, q + "crossattention.c_attn", D, 2 * D)
        draw.conv1d(w, q + "crossattention.q_attn", D, D)
        draw.conv1d(w, q + "crossattention.c_proj", D, D)
        draw.layer_norm(w, q + "ln_2", D)
        draw.conv1d(w, q + "mlp.c_fc", D, inner)
        draw.conv1d(w, q + "mlp.c_proj", inner, D)
    draw.layer_norm(w, p + "ln_f", D)
    flip(w, p + "ln_f")
    draw.linear(w, "enc_to_dec_proj", D, enc_hidden)
    return w


# ---- the model and its forward ----

class Model:
    """config.json's dicts and the float64 weights under their file names."""

    def __init__(self, config, w):
        self.config, self.w = config, w
        self.enc_cfg, self.dec_cfg = config["encoder"], config["decoder"]
        self.kind = self.dec_cfg["model_type"]
        n = len("encoder.")
        self.enc_w = {k[n:]: v for k, v in w.items() if k.startswith("encoder.")}


def load(folder):
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    w, _ = ref.read_safetensors(os.path.join(folder, "model.safetensors"))
    return Model(config, {k: v.double() for k, v in w.items()})


def encode(model, pixels, dtype=torch.float64):
    """ViTModel / DeiTModel's last_hidden_state: every token (CLS, a DeiT's distillation token,
    the patches) after the final LayerNorm; the pooler is not applied."""
    out = ref.forward(model.enc_w, model.enc_cfg, pixels.to(dtype))
    return out["states"]["layernorm"]


def cross_states(model, enc):
    """What the decoder's cross-attention reads: enc_to_dec_proj(enc) when the encoder's
    hidden_size differs from the decoder's and the decoder has no cross_attention_hidden_size
    (the model then has the layer), else enc itself."""
    if "enc_to_dec_proj.weight" not in model.w:
        return enc
    return F.linear(enc, model.w["enc_to_dec_proj.weight"].to(enc.dtype),
                    model.w["enc_to_dec_proj.bias"].to(enc.dtype))


def attention(q, k, v, heads, causal, scale_query, layer_divisor=1.0):
    """softmax(q k^T / sqrt(d)) v per head. TrOCR scales q before the product, GPT-2 divides the
    scores: the same in float64, kept apart for the float32 comparison. layer_divisor: GPT-2's
    scale_attn_by_inverse_layer_idx divides layer l's scores by l + 1 as well (its _attn, and
    _upcast_and_reordered_attn's alpha = 1 / sqrt(d) / (l + 1) with reorder_and_upcast_attn)."""
    B, T, D = q.shape
    d = D // heads
    q = q.view(B, T, heads, d).transpose(1, 2)
    k = k.reshape(B, -1, heads, d).transpose(1, 2)
    v = v.reshape(B, -1, heads, d).transpose(1, 2)
    if scale_query:
        scores = (q * d ** -0.5) @ k.transpose(-1, -2)
    else:
        scores = (q @ k.transpose(-1, -2)) / d ** 0.5
    scores = scores / layer_divisor
    if causal:
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    return (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(B, T, D)


def sinusoidal_table(n, dim, pad):
    """TrOCRSinusoidalPositionalEmbedding.get_embedding, in float32 as transformers computes it:
    row i = [sin(i f_0..f_h-1), cos(i f_0..f_h-1)], f_j = exp(-j ln(10000) / (h - 1)),
    h = dim // 2, a zero column when dim is odd, row pad zero."""
    half = dim // 2
    step = math.log(10000) / (half - 1)
    freq = torch.exp(torch.arange(half, dtype=torch.int64).float() * -step)
    arg = torch.arange(n, dtype=torch.int64).float().unsqueeze(1) * freq.unsqueeze(0)
    emb = torch.cat([torch.sin(arg), torch.cos(arg)], dim=1).view(n, -1)
    if dim % 2 == 1:
        emb = torch.cat([emb, torch.zeros(n, 1)], dim=1)
    emb[pad, :] = 0
    return emb


def trocr_positions(W, c, ids, dt):
    T = ids.shape[1]
    if c["use_learned_position_embeddings"]:  # offset 2: rows 0 and 1 are never read
        return W["decoder.model.decoder.embed_positions.weight"][torch.arange(T) + 2]
    pad = c["pad_token_id"]
    mask = (ids != pad).long()
    positions = torch.cumsum(mask, 1) * mask + pad
    n = max(c["max_position_embeddings"] + pad + 1, pad + 1 + T)
    return sinusoidal_table(n, c["d_model"], pad).to(dt)[positions]


def trocr_hidden(model, cross, ids, dt):
    """TrOCRDecoder, post-LN: the last hidden state [rows, t, D]."""
    W, c, p = {k: v.to(dt) for k, v in model.w.items()}, model.dec_cfg, "decoder.model.decoder."
    D, H = c["d_model"], c["decoder_attention_heads"]
    act = ref.ACTIVATIONS[c["activation_function"]]
    ln = lambda x, n: F.layer_norm(x, (D,), W[p + n + ".weight"], W[p + n + ".bias"], 1e-5)
    lin = lambda x, n: F.linear(x, W[p + n + ".weight"], W[p + n + ".bias"])
    scale = math.sqrt(D) if c["scale_embedding"] else 1.0
    h = W[p + "embed_tokens.weight"][ids] * scale + trocr_positions(W, c, ids, dt)
    if c["layernorm_embedding"]:
        h = ln(h, "layernorm_embedding")
    for i in range(c["decoder_layers"]):
        q = f"layers.{i}."
        a = attention(lin(h, q + "self_attn.q_proj"), lin(h, q + "self_attn.k_proj"),
                      lin(h, q + "self_attn.v_proj"), H, True, True)
        h = ln(h + lin(a, q + "self_attn.out_proj"), q + "self_attn_layer_norm")
        a = attention(lin(h, q + "encoder_attn.q_proj"), lin(cross, q + "encoder_attn.k_proj"),
                      lin(cross, q + "encoder_attn.v_proj"), H, False, True)
        h = ln(h + lin(a, q + "encoder_attn.out_proj"), q + "encoder_attn_layer_norm")
        h = ln(h + lin(act(lin(h, q + "fc1")), q + "fc2"), q + "final_layer_norm")
    return h


def gpt2_hidden(model, cross, ids, dt):
    """GPT2Model with cross-attention, pre-LN: ln_f's output [rows, t, D]."""
    W, c, p = {k: v.to(dt) for k, v in model.w.items()}, model.dec_cfg, "decoder.transformer."
    D, H, eps = c["n_embd"], c["n_head"], c["layer_norm_epsilon"]
    act = ref.ACTIVATIONS[c["activation_function"]]
    ln = lambda x, n: F.layer_norm(x, (D,), W[p + n + ".weight"], W[p + n + ".bias"], eps)
    conv = lambda x, n: x @ W[p + n + ".weight"] + W[p + n + ".bias"]
    T = ids.shape[1]
    h = W[p + "wte.weight"][ids] + W[p + "wpe.weight"][:T]
    for i in range(c["n_layer"]):
        q = f"h.{i}."
        div = float(i + 1) if c.get("scale_attn_by_inverse_layer_idx") else 1.0
        qkv = conv(ln(h, q + "ln_1"), q + "attn.c_attn").split(D, dim=-1)
        h = h + conv(attention(*qkv, H, True, False, div), q + "attn.c_proj")
        query = conv(ln(h, q + "ln_cross_attn"), q + "crossattention.q_attn")
        k, v = conv(cross, q + "crossattention.c_attn").split(D, dim=-1)
        h = h + conv(attention(query, k, v, H, False, False, div), q + "crossattention.c_proj")
        h = h + conv(act(conv(ln(h, q + "ln_2"), q + "mlp.c_fc")), q + "mlp.c_proj")
    return ln(h, "ln_f")


def output_weight(model, dt):
    """The output projection: the token embedding when the decoder's tie_word_embeddings (default
    true) holds, else the separate matrix."""
    tied = model.dec_cfg.get("tie_word_embeddings", True)
    if model.kind == "trocr":
        name = "decoder.model.decoder.embed_tokens.weight" if tied else \
            "decoder.output_projection.weight"
    else:
        name = "decoder.transformer.wte.weight" if tied else "decoder.lm_head.weight"
    return model.w[name].to(dt)


def decoder_hidden(model, cross, ids, image_of_row=None, dtype=torch.float64):
    ids = torch.as_tensor(ids, dtype=torch.long)
    if image_of_row is None:
        image_of_row = list(range(ids.shape[0]))
    c = cross.to(dtype)[torch.as_tensor(image_of_row, dtype=torch.long)]
    return (trocr_hidden if model.kind == "trocr" else gpt2_hidden)(model, c, ids, dtype)


def decoder_logits(model, cross, ids, image_of_row=None, dtype=torch.float64):
    """Logits [rows, t, V] of each row's ids (a full causal recompute) against the cross states
    of its image, cross[image_of_row[r]] (row r's own image when image_of_row is None)."""
    h = decoder_hidden(model, cross, ids, image_of_row, dtype)
    return h @ output_weight(model, dtype).T


# ---- building a micro model ----

def build(spec):
    """(Model, vocab, merges, tokenizer_config, special_tokens_map, generation_config) with the
    random weights before the end token is shaped."""
    vocab, merges, tok_config, special = tokenizer_files(spec["decoder"])
    config, generation = model_config(spec, vocab)
    w = encoder_weights(spec)
    if spec["decoder"] == "trocr":
        w.update(trocr_weights(spec, len(vocab), vocab["<pad>"]))
    else:
        w.update(gpt2_weights(spec, len(vocab), spec["encoder"]["hidden"]))
    return Model(config, w), vocab, merges, tok_config, special, generation


def image_pixels(spec, names):
    """[images, 3, S, S] float32, as ViTImageProcessor gives them."""
    S = spec["encoder"]["image"]
    return torch.stack([ref.preprocess(os.path.join(IMAGE_DIR, n), spec["preprocessor"], S)
                        for n in names])


def end_row_name(model):
    """The stored matrix whose row is the end token's output embedding."""
    if model.kind == "gpt2":
        return "decoder.transformer.wte.weight"
    if model.dec_cfg["tie_word_embeddings"]:
        return "decoder.model.decoder.embed_tokens.weight"
    return "decoder.output_projection.weight"


def paths(model, cross, start, eos, pad, seed, length=20, samples=3):
    """Token sequences the decoder itself would follow, the end token and pad left out: each
    image's greedy path, and `samples` paths drawn from its softmax, each beginning with start."""
    g = torch.Generator().manual_seed(seed)
    n = cross.shape[0]
    image_of_row = [r % n for r in range(n * (samples + 1))]
    ids = torch.full((len(image_of_row), 1), start, dtype=torch.long)
    with torch.no_grad():
        for _ in range(length - 1):
            logits = decoder_logits(model, cross, ids, image_of_row)[:, -1]
            logits[:, [eos, pad]] = float("-inf")
            drawn = torch.multinomial(torch.softmax(logits, -1), 1, generator=g)[:, 0]
            nxt = torch.where(torch.arange(len(image_of_row)) < n, logits.argmax(-1), drawn)
            ids = torch.cat([ids, nxt[:, None]], 1)
    return ids, image_of_row


def shape_end_token(model, cross, start, eos, pad, spec):
    """Fits the end token's output row (for a tied decoder also its input embedding) so that
    along the decoder's own paths logit(end) - logsumexp(other logits) follows
    spec["eos_target"] = (value at position 0, rise per position): generation then ends after a
    few steps on some images and later, or never, on others. Three rounds of paths and 150 Adam
    steps each, on float64."""
    name = end_row_name(model)
    table = model.w[name]
    row = table[eos].clone().requires_grad_()
    opt = torch.optim.Adam([row], lr=0.05)
    lo, rise = spec["eos_target"]
    for round_ in range(3):
        model.w[name] = table
        ids, image_of_row = paths(model, cross, start, eos, pad, spec["seed"] + 2000 + round_)
        target = lo + rise * torch.arange(ids.shape[1], dtype=torch.float64)
        weight = 1 + 4 * (torch.arange(ids.shape[1]) < 2)  # ending at once: the case to avoid
        for _ in range(150):
            model.w[name] = torch.cat([table[:eos], row[None], table[eos + 1:]])
            logits = decoder_logits(model, cross, ids, image_of_row)
            others = torch.cat([logits[..., :eos], logits[..., eos + 1:]], -1)
            gap = logits[..., eos] - torch.logsumexp(others, -1)
            loss = ((gap - target) ** 2 * weight).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        table = torch.cat([table[:eos], row.detach()[None].float().double(), table[eos + 1:]])
    model.w[name] = table
    return loss.item()


def greedy(model, cross, start, eos, max_length=MAX_NEW):
    """Argmax decoding of every image as transformers' greedy search with max_length counting the
    start token: (ids per image up to and with the first end token, the smallest gap between the
    top two logits on that path, the mean top-1 probability)."""
    B = cross.shape[0]
    ids = torch.full((B, 1), start, dtype=torch.long)
    out, gaps, tops = [None] * B, [float("inf")] * B, []
    for _ in range(max_length - 1):
        logits = decoder_logits(model, cross, ids)[:, -1]
        top2 = torch.topk(logits, 2).values
        nxt = logits.argmax(-1)
        tops.append(torch.softmax(logits, -1).max(-1).values.mean().item())
        ids = torch.cat([ids, nxt[:, None]], 1)
        for b in range(B):
            if out[b] is None:
                gaps[b] = min(gaps[b], (top2[b, 0] - top2[b, 1]).item())
                if nxt[b] == eos:
                    out[b] = ids[b].tolist()
    return [o or ids[b].tolist() for b, o in enumerate(out)], gaps, sum(tops) / len(tops)


def beam(model, cross, image, start, eos, beams=3, max_length=MAX_NEW):
    """A plain beam search (length penalty 1: sum of log-probabilities over the generated length),
    only to see whether it leaves the greedy path; tools/generate_reference.py has the exact
    one."""
    alive, done = [([start], 0.0)], []
    for _ in range(max_length - 1):
        ids = torch.tensor([a[0] for a in alive])
        lp = torch.log_softmax(decoder_logits(model, cross, ids, [image] * len(alive))[:, -1], -1)
        cand = []
        for i, (seq, score) in enumerate(alive):
            v, t = torch.topk(lp[i], 2 * beams)
            cand += [(score + v[j].item(), i, t[j].item()) for j in range(2 * beams)]
        alive = []
        for score, i, t in sorted(cand, reverse=True):
            seq = ids[i].tolist() + [t]
            if t == eos:
                done.append((score / (len(seq) - 1), seq))
            elif len(alive) < beams:
                alive.append((seq, score))
            if len(alive) == beams:
                break
        if len(done) >= beams and max(s for _, s in alive) / len(alive[0][0]) < \
                sorted(done, reverse=True)[beams - 1][0]:
            break
    if done:
        return max(done)[1]
    return max(alive, key=lambda a: a[1])[0]


def statistics(model, spec, cross, start, eos):
    seqs, gaps, top = greedy(model, cross, start, eos)
    lengths = [len(s) - 1 if s[-1] == eos else None for s in seqs]
    differ = sum(beam(model, cross, i, start, eos) != s for i, s in enumerate(seqs))
    body = [s[1:-1] if s[-1] == eos else s[1:] for s in seqs]
    variety = sum(len(set(b)) for b in body) / max(sum(len(b) for b in body), 1)
    return lengths, min(gaps), top, differ, variety


# ---- files ----

def dump_json(path, obj, ascii=True):
    """As transformers' to_json_file: indent 2, sorted keys, a final newline."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=ascii) + "\n")


def write_folder(out, model, spec, tokenizer, generation):
    vocab, merges, tok_config, special = tokenizer
    os.makedirs(out, exist_ok=True)
    dump_json(os.path.join(out, "config.json"), model.config)
    dump_json(os.path.join(out, "generation_config.json"), generation)
    dump_json(os.path.join(out, "preprocessor_config.json"), spec["preprocessor"])
    dump_json(os.path.join(out, "vocab.json"), vocab, ascii=False)
    with open(os.path.join(out, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(m + "\n" for m in merges))
    dump_json(os.path.join(out, "tokenizer_config.json"), tok_config, ascii=False)
    dump_json(os.path.join(out, "special_tokens_map.json"), special, ascii=False)
    ref.write_safetensors(os.path.join(out, "model.safetensors"), model.w)


def config_facts(model, spec, ids):
    d, e = model.dec_cfg, model.enc_cfg
    facts = {"encoder": e["model_type"], "encoder_tokens": (e["image_size"] // e["patch_size"]) ** 2
             + (2 if e["model_type"] == "deit" else 1), "encoder_hidden": e["hidden_size"],
             "encoder_pooler_saved": spec["encoder"]["pooler"], "decoder": model.kind,
             "vocab_size": d["vocab_size"], "enc_to_dec_proj": "enc_to_dec_proj.weight" in model.w,
             "tied_output": d["tie_word_embeddings"], **ids}
    if model.kind == "trocr":
        facts.update(d_model=d["d_model"], positions="learned" if
                     d["use_learned_position_embeddings"] else "sinusoidal",
                     scale_embedding=d["scale_embedding"],
                     layernorm_embedding=d["layernorm_embedding"],
                     cross_attention_hidden_size=d["cross_attention_hidden_size"],
                     activation=d["activation_function"])
    else:
        facts.update(d_model=d["n_embd"], positions="learned", activation=d["activation_function"])
    return facts


def golden_tensors(model, pixels, rows_ids, image_of_row, dtype):
    enc = encode(model, pixels, dtype)
    cross = cross_states(model, enc)
    return enc, cross, decoder_logits(model, cross, rows_ids, image_of_row, dtype)


def write_goldens(out, name, model, spec, vocab, ids):
    start = ids["decoder_start_token_id"]
    golden = [start] + [vocab[t] for t in GOLDEN_WORDS]
    other = [start] + [vocab[t] for t in ["\u0120a", "\u0120red", "\u0120dog", "\u0120in",
                                             "\u0120the", "\u0120cat", "!"]]
    n = len(IMAGES)
    rows = [golden] * n + [golden, other, other]
    image_of_row = list(range(n)) + [0, 0, 1]
    pixels = image_pixels(spec, IMAGES)
    enc, cross, logits = golden_tensors(model, pixels.double(), rows, image_of_row, torch.float64)
    enc32, _, logits32 = golden_tensors(model, pixels, rows, image_of_row, torch.float32)
    t = {"decoder_input_ids": np.array(golden, np.float32),
         "batch/ids": np.array(rows[n:], np.float32),
         "batch/image_of_row": np.array(image_of_row[n:], np.float32), "batch/logits": logits[n:]}
    for i, image in enumerate(IMAGES):
        t[f"image/{image}/pixels"] = pixels[i]
        t[f"image/{image}/encoder"] = enc[i]
        if cross is not enc:
            t[f"image/{image}/cross"] = cross[i]
        t[f"image/{image}/logits"] = logits[i]
    ref.write_safetensors(os.path.join(out, "golden.safetensors"), t)
    seqs, gaps, _ = greedy(model, cross, start, ids["eos_token_id"])
    worst = {"encoder": (enc32.double() - enc).abs().max().item(),
             "logits": (logits32.double() - logits).abs().max().item()}
    with open(os.path.join(out, "golden.json"), "w") as f:
        json.dump({"model": name, "images": IMAGES, "decoder_input_ids": golden,
                   "batch": {"ids": rows[n:], "image_of_row": image_of_row[n:]},
                   "config": config_facts(model, spec, ids),
                   "greedy_max_length_20": dict(zip(IMAGES, seqs)),
                   "greedy_smallest_top2_logit_gap": min(gaps),
                   "model_tensors": {k: list(v.shape) for k, v in sorted(model.w.items())},
                   "float32_vs_float64_max_abs": worst}, f, indent=1)
    return worst, seqs


# ---- checks of the forward against other computations of the same thing ----

def mha_reference(model, layer, h, cross):
    """Layer `layer`'s cross-attention (with its output projection) on queries h [1, t, D] and
    cross [1, N, Dc], by torch.nn.MultiheadAttention loaded with the stored weights: TrOCR's
    separate q/k/v (kdim = vdim = the cross width), GPT-2's Conv1D weights transposed, k and v
    split from the fused c_attn."""
    D, c = h.shape[-1], model.dec_cfg
    heads = c["decoder_attention_heads"] if model.kind == "trocr" else c["n_head"]
    mha = torch.nn.MultiheadAttention(D, heads, kdim=cross.shape[-1], vdim=cross.shape[-1],
                                      batch_first=True).double()
    W = model.w
    if model.kind == "trocr":
        p = f"decoder.model.decoder.layers.{layer}.encoder_attn."
        q, k, v = (W[p + n + ".weight"] for n in ("q_proj", "k_proj", "v_proj"))
        bias = torch.cat([W[p + n + ".bias"] for n in ("q_proj", "k_proj", "v_proj")])
        out_w, out_b = W[p + "out_proj.weight"], W[p + "out_proj.bias"]
    else:
        p = f"decoder.transformer.h.{layer}.crossattention."
        q, (k, v) = W[p + "q_attn.weight"].T, W[p + "c_attn.weight"].T.split(D)
        bias = torch.cat([W[p + "q_attn.bias"], W[p + "c_attn.bias"]])
        out_w, out_b = W[p + "c_proj.weight"].T, W[p + "c_proj.bias"]
    pairs = [(mha.in_proj_bias, bias), (mha.out_proj.weight, out_w), (mha.out_proj.bias, out_b)]
    if mha.in_proj_weight is not None:  # kdim = vdim = D: the packed layout
        pairs.append((mha.in_proj_weight, torch.cat([q, k, v])))
    else:
        pairs += [(mha.q_proj_weight, q), (mha.k_proj_weight, k), (mha.v_proj_weight, v)]
    with torch.no_grad():
        for dst, src in pairs:
            dst.copy_(src)
        return mha(h, cross, cross, need_weights=False)[0]


def mha_ours(model, layer, h, cross):
    W, D = model.w, h.shape[-1]
    if model.kind == "trocr":
        p = f"decoder.model.decoder.layers.{layer}.encoder_attn."
        lin = lambda x, n: F.linear(x, W[p + n + ".weight"], W[p + n + ".bias"])
        a = attention(lin(h, "q_proj"), lin(cross, "k_proj"), lin(cross, "v_proj"),
                      model.dec_cfg["decoder_attention_heads"], False, True)
        return lin(a, "out_proj")
    p = f"decoder.transformer.h.{layer}.crossattention."
    conv = lambda x, n: x @ W[p + n + ".weight"] + W[p + n + ".bias"]
    k, v = conv(cross, "c_attn").split(D, dim=-1)
    return conv(attention(conv(h, "q_attn"), k, v, model.dec_cfg["n_head"], False, False),
                "c_proj")


def self_check(model, cross, start):
    """The forward is causal (a prefix's logits are the full sequence's first rows), rows read
    their own image, and the cross-attention agrees with torch.nn.MultiheadAttention."""
    g = torch.Generator().manual_seed(7)
    ids = torch.randint(3, model.dec_cfg["vocab_size"], (3, 9), generator=g)
    ids[:, 0] = start
    full = decoder_logits(model, cross, ids, [2, 0, 2])
    for k in (1, 4):
        prefix = decoder_logits(model, cross, ids[:, :k], [2, 0, 2])
        assert (prefix - full[:, :k]).abs().max() < 1e-12
    assert (decoder_logits(model, cross[2:3], ids[2:], [0]) - full[2:]).abs().max() < 1e-12
    D = model.dec_cfg.get("d_model", model.dec_cfg.get("n_embd"))
    h = torch.randn(1, 5, D, generator=g, dtype=torch.float64)
    for layer in range(2):
        err = (mha_reference(model, layer, h, cross[:1]) - mha_ours(model, layer, h, cross[:1]))
        assert err.abs().max() < 1e-12, err.abs().max()


# ---- main ----

def make(spec):
    """The model with its end token shaped, its tokenizer, generation config and token ids, and
    the cross states of every tuning image."""
    model, vocab, merges, tok_config, special, generation = build(spec)
    ids = {k: v for k, v in model.config.items() if k.endswith("token_id")}
    start, eos = ids["decoder_start_token_id"], ids["eos_token_id"]
    pad = ids["pad_token_id"]
    cross = cross_states(model, encode(model, image_pixels(spec, TUNE_IMAGES).double()))
    shape_end_token(model, cross, start, eos, pad, spec)
    cross = cross_states(model, encode(model, image_pixels(spec, TUNE_IMAGES).double()))
    return model, (vocab, merges, tok_config, special), generation, ids, cross


def tune(args):
    """Greedy and beam statistics on every golden image for end-token targets: the specs' own, or
    `NAME LO RISE...` (one model, each LO with each RISE)."""
    models = {args[0]: MODELS[args[0]]} if args else MODELS
    for name, spec in models.items():
        los = [float(a) for a in args[1:2]] or [spec["eos_target"][0]]
        rises = [float(a) for a in args[2:]] or [spec["eos_target"][1]]
        for lo in los:
            for rise in rises:
                spec = dict(spec, eos_target=(lo, rise))
                model, _, _, ids, cross = make(spec)
                lengths, gap, top, differ, variety = statistics(model, spec, cross,
                                                       ids["decoder_start_token_id"],
                                                       ids["eos_token_id"])
                print(f"{name} target {lo} + {rise} t: lengths "
                      f"{' '.join(str(x) if x else '-' for x in lengths)}; min gap {gap:.3g}, "
                      f"mean top-1 p {top:.2f}, beam != greedy on {differ}/{len(lengths)}, "
                      f"distinct/generated {variety:.2f}")


def main(names):
    for name, spec in MODELS.items():
        if names and name not in names:
            continue
        model, tokenizer, generation, ids, cross = make(spec)
        out = os.path.join(DATA, name)
        write_folder(out, model, spec, tokenizer, generation)
        again = load(out)
        assert all(torch.equal(again.w[k], v) for k, v in model.w.items())
        self_check(again, cross, ids["decoder_start_token_id"])
        worst, seqs = write_goldens(out, name, again, spec, tokenizer[0], ids)
        lengths, gap, top, differ, variety = statistics(again, spec, cross,
                                                        ids["decoder_start_token_id"],
                                               ids["eos_token_id"])
        size = os.path.getsize(os.path.join(out, "model.safetensors"))
        print(f"{name}: {len(model.w)} tensors, {size // 1024} KiB; float32 vs float64 max |d| "
              f"encoder {worst['encoder']:.3g}, logits {worst['logits']:.3g}; greedy lengths on "
              f"{len(lengths)} images {' '.join(str(x) if x else '-' for x in lengths)}, min gap "
              f"{gap:.3g}, mean top-1 p {top:.2f}, beam(3) != greedy on {differ}")


if __name__ == "__main__":
    torch.set_num_threads(1)
    if sys.argv[1:2] == ["--tune"]:
        tune(sys.argv[2:])
    else:
        main(sys.argv[1:])
