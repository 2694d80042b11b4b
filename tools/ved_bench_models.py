#!/usr/bin/python3
"""Writes random-weight VisionEncoderDecoderModel folders of the real checkpoints' sizes, for
bench/generate_bench.c (run by hand; the weights are hundreds of MB: write them outside the
repository, never commit them).

  trocr-small  microsoft/trocr-small-*'s shape: DeiTModel encoder (384 px, patch 16, hidden 384,
               12 layers, 6 heads, mlp 1536; CLS + distillation token = 578 states; no pooler) +
               TrOCRForCausalLM (d_model 256, 6 layers, 8 heads, ffn 1024, relu, 512 learned
               positions, scale_embedding, layernorm_embedding, cross_attention_hidden_size 384,
               untied output_projection, vocab 64044): 61.6M parameters
  trocr-base   microsoft/trocr-base-*'s shape: ViTModel encoder (384 px, patch 16, hidden 768, 12
               layers, 12 heads, mlp 3072; 577 states; no pooler) + TrOCRForCausalLM (d_model 1024,
               12 layers, 16 heads, ffn 4096, gelu, 512 learned positions, no embedding scale,
               layernorm_embedding, output projection tied, vocab 50265): 334M parameters
  vit-gpt2     nlpconnect/vit-gpt2-image-captioning's shape: ViTModel (224 px, patch 16, hidden
               768, 12 layers, with pooler; 197 states) + GPT2LMHeadModel with cross-attention
               (n_embd 768, 12 layers, 12 heads, n_positions 1024, gelu_new, vocab 50257, tied):
               239M parameters

The layout is the one tools/ved_reference.py's micro models have (tests/data/ved-*), i.e. what
transformers 4.46's save_pretrained writes: config.json with every PretrainedConfig field,
generation_config.json as GenerationConfig.from_model_config makes it, F32 model.safetensors in
name order (a tied projection stored once, under the embedding's name), ViTImageProcessor's
preprocessor_config.json. The tokenizer is a byte-level BPE of the real vocabulary size (RoBERTa's
<s> <pad> </s> <unk> first and <mask> last, or GPT-2's <|endoftext|> last; the 256 byte symbols;
dummy tokens " t0", " t1", ... in between; one merge): vit decodes any generated id to text with
it. trocr-small's own tokenizer is XLM-R's SentencePiece; a byte-level one of the same size costs
the same to decode, which is all a benchmark asks of it.

Weights: normal draws with transformers' init std 0.02, LayerNorms at weight 1 and bias 0 as
_init_weights leaves them; the timings do not depend on the values (bench/generate_bench.c sets
min_length so that no sequence ends early).

usage: /usr/bin/python3 tools/ved_bench_models.py OUT_DIR [NAME...]
       writes OUT_DIR/NAME for each NAME (default: all three)
"""

import json
import os
import struct
import sys

import numpy as np

VERSION = "4.46.0"

MODELS = {
    "trocr-small": dict(
        decoder="trocr",
        encoder=dict(kind="deit", image=384, patch=16, hidden=384, layers=12, heads=6, mlp=1536,
                     pooler=False),
        dec=dict(d_model=256, layers=6, heads=8, ffn=1024, act="relu", scale=True, tied=False,
                 cross_hidden=384, positions=512, vocab=64044)),
    "trocr-base": dict(
        decoder="trocr",
        encoder=dict(kind="vit", image=384, patch=16, hidden=768, layers=12, heads=12, mlp=3072,
                     pooler=False),
        dec=dict(d_model=1024, layers=12, heads=16, ffn=4096, act="gelu", scale=False, tied=True,
                 cross_hidden=768, positions=512, vocab=50265)),
    "vit-gpt2": dict(
        decoder="gpt2",
        encoder=dict(kind="vit", image=224, patch=16, hidden=768, layers=12, heads=12, mlp=3072,
                     pooler=True),
        dec=dict(d_model=768, layers=12, heads=12, positions=1024, vocab=50257)),
}


# ---- tokenizer: a byte-level BPE padded to the model's vocabulary ----

def byte_symbols():
    """GPT-2's byte symbols in the order of its first 256 ids."""
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def padded_vocab(first, last, size):
    """first + the byte symbols + "\u0120t" and dummies "\u0120t0", ... + last: size tokens."""
    tokens = first + byte_symbols() + ["\u0120t"]
    tokens += ["\u0120t%d" % i for i in range(size - len(tokens) - len(last))] + last
    assert len(tokens) == len(set(tokens)) == size
    return {t: i for i, t in enumerate(tokens)}


def special(content, lstrip=False, normalized=True):
    return {"content": content, "lstrip": lstrip, "normalized": normalized, "rstrip": False,
            "single_word": False, "special": True}


def roberta_tokenizer(size):
    """(vocab, tokenizer_config, special_tokens_map) as RobertaTokenizer.save_pretrained."""
    vocab = padded_vocab(["<s>", "<pad>", "</s>", "<unk>"], ["<mask>"], size)
    added = {str(vocab[t]): special(t) for t in ("<s>", "<pad>", "</s>", "<unk>")}
    added[str(vocab["<mask>"])] = special("<mask>", True, False)
    config = {"add_prefix_space": False, "added_tokens_decoder": added, "bos_token": "<s>",
              "clean_up_tokenization_spaces": False, "cls_token": "<s>", "eos_token": "</s>",
              "errors": "replace", "mask_token": "<mask>", "model_max_length": 512,
              "pad_token": "<pad>", "processor_class": "TrOCRProcessor", "sep_token": "</s>",
              "tokenizer_class": "RobertaTokenizer", "trim_offsets": True, "unk_token": "<unk>"}
    mask = {k: v for k, v in special("<mask>", True, False).items() if k != "special"}
    smap = {"bos_token": "<s>", "cls_token": "<s>", "eos_token": "</s>", "mask_token": mask,
            "pad_token": "<pad>", "sep_token": "</s>", "unk_token": "<unk>"}
    return vocab, config, smap


def gpt2_tokenizer(size):
    end = "<|endoftext|>"
    vocab = padded_vocab([], [end], size)
    config = {"add_bos_token": False, "add_prefix_space": False,
              "added_tokens_decoder": {str(vocab[end]): special(end)}, "bos_token": end,
              "clean_up_tokenization_spaces": True, "eos_token": end, "errors": "replace",
              "model_max_length": 1024, "pad_token": end, "tokenizer_class": "GPT2Tokenizer",
              "unk_token": end}
    return vocab, config, {"bos_token": end, "eos_token": end, "pad_token": end, "unk_token": end}


# ---- config.json: PretrainedConfig.to_dict of transformers 4.46 ----

def pretrained_defaults():
    """Every attribute PretrainedConfig.__init__ sets, at its default (to_dict writes them all)."""
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
             layer_norm_eps=1e-12, image_size=e["image"], patch_size=e["patch"], num_channels=3,
             qkv_bias=True, encoder_stride=16, pooler_output_size=e["hidden"], pooler_act="tanh")
    return c


def trocr_config(d, vocab):
    c = pretrained_defaults()
    c.update(model_type="trocr", vocab_size=d["vocab"], d_model=d["d_model"],
             decoder_layers=d["layers"], decoder_attention_heads=d["heads"],
             decoder_ffn_dim=d["ffn"], activation_function=d["act"],
             max_position_embeddings=d["positions"], dropout=0.1, attention_dropout=0.0,
             activation_dropout=0.0, classifier_dropout=0.0, init_std=0.02,
             decoder_layerdrop=0.0, use_cache=False, scale_embedding=d["scale"],
             use_learned_position_embeddings=True, layernorm_embedding=True,
             tie_word_embeddings=d["tied"], cross_attention_hidden_size=d["cross_hidden"],
             is_decoder=True, add_cross_attention=True, bos_token_id=vocab["<s>"],
             pad_token_id=vocab["<pad>"], eos_token_id=vocab["</s>"],
             decoder_start_token_id=vocab["</s>"])
    return c


def gpt2_config(d, end):
    c = pretrained_defaults()
    c.update(model_type="gpt2", architectures=["GPT2LMHeadModel"], vocab_size=d["vocab"],
             n_positions=d["positions"], n_embd=d["d_model"], n_layer=d["layers"],
             n_head=d["heads"], n_inner=None, activation_function="gelu_new", resid_pdrop=0.1,
             embd_pdrop=0.1, attn_pdrop=0.1, layer_norm_epsilon=1e-5, initializer_range=0.02,
             summary_type="cls_index", summary_use_proj=True, summary_activation=None,
             summary_proj_to_labels=True, summary_first_dropout=0.1, scale_attn_weights=True,
             use_cache=True, scale_attn_by_inverse_layer_idx=False,
             reorder_and_upcast_attn=False, is_decoder=True, add_cross_attention=True,
             bos_token_id=end, eos_token_id=end, pad_token_id=end, decoder_start_token_id=end)
    return c


def configs(spec, vocab):
    """(config.json, generation_config.json) of a model and its tokenizer's vocabulary."""
    if spec["decoder"] == "trocr":
        dec = trocr_config(spec["dec"], vocab)
        ids = {"decoder_start_token_id": vocab["</s>"], "eos_token_id": vocab["</s>"],
               "pad_token_id": vocab["<pad>"]}
    else:
        end = vocab["<|endoftext|>"]
        dec = gpt2_config(spec["dec"], end)
        ids = {"bos_token_id": end, "decoder_start_token_id": end, "eos_token_id": end,
               "pad_token_id": end}
    config = {"architectures": ["VisionEncoderDecoderModel"], "decoder": dec,
              "encoder": encoder_config(spec["encoder"]), "is_encoder_decoder": True,
              "model_type": "vision-encoder-decoder", "tie_word_embeddings": False,
              "torch_dtype": "float32", "transformers_version": VERSION, **ids}
    generation = {"_from_model_config": True, **ids, "transformers_version": VERSION}
    if spec["decoder"] == "trocr":  # what TrOCR's decoder config adds over the defaults
        generation.update(bos_token_id=vocab["<s>"], use_cache=False)
    return config, generation


def preprocessor(spec):
    size = spec["encoder"]["image"]
    return {"do_normalize": True, "do_rescale": True, "do_resize": True,
            "image_mean": [0.5] * 3, "image_processor_type": "ViTImageProcessor",
            "image_std": [0.5] * 3, "resample": 2, "rescale_factor": 1 / 255,
            "size": {"height": size, "width": size}}


# ---- the tensors: name -> (shape, kind) in save_pretrained's names ----

def linear(t, name, n_out, n_in):
    t[name + ".weight"] = ((n_out, n_in), "w")
    t[name + ".bias"] = ((n_out,), "b")


def conv1d(t, name, n_in, n_out):
    """GPT-2's Conv1D stores its weight [in, out]."""
    t[name + ".weight"] = ((n_in, n_out), "w")
    t[name + ".bias"] = ((n_out,), "b")


def layer_norm(t, name, n):
    t[name + ".weight"] = ((n,), "one")
    t[name + ".bias"] = ((n,), "zero")


def encoder_tensors(e):
    t, D, p = {}, e["hidden"], "encoder."
    extra = 2 if e["kind"] == "deit" else 1
    t[p + "embeddings.cls_token"] = ((1, 1, D), "w")
    if e["kind"] == "deit":
        t[p + "embeddings.distillation_token"] = ((1, 1, D), "w")
    t[p + "embeddings.patch_embeddings.projection.weight"] = ((D, 3, e["patch"], e["patch"]), "w")
    t[p + "embeddings.patch_embeddings.projection.bias"] = ((D,), "b")
    t[p + "embeddings.position_embeddings"] = ((1, (e["image"] // e["patch"]) ** 2 + extra, D),
                                               "w")
    for i in range(e["layers"]):
        q = f"{p}encoder.layer.{i}."
        for n in ("query", "key", "value"):
            linear(t, q + "attention.attention." + n, D, D)
        linear(t, q + "attention.output.dense", D, D)
        layer_norm(t, q + "layernorm_before", D)
        layer_norm(t, q + "layernorm_after", D)
        linear(t, q + "intermediate.dense", e["mlp"], D)
        linear(t, q + "output.dense", D, e["mlp"])
    layer_norm(t, p + "layernorm", D)
    if e["pooler"]:
        linear(t, p + "pooler.dense", D, D)
    return t


def trocr_tensors(d):
    t, D, p = {}, d["d_model"], "decoder.model.decoder."
    t[p + "embed_tokens.weight"] = ((d["vocab"], D), "emb")
    t[p + "embed_positions.weight"] = ((d["positions"] + 2, D), "w")  # TrOCR's offset of 2
    layer_norm(t, p + "layernorm_embedding", D)
    for i in range(d["layers"]):
        q = f"{p}layers.{i}."
        for n in ("q_proj", "k_proj", "v_proj", "out_proj"):
            linear(t, q + "self_attn." + n, D, D)
        layer_norm(t, q + "self_attn_layer_norm", D)
        linear(t, q + "encoder_attn.q_proj", D, D)
        linear(t, q + "encoder_attn.k_proj", D, d["cross_hidden"])
        linear(t, q + "encoder_attn.v_proj", D, d["cross_hidden"])
        linear(t, q + "encoder_attn.out_proj", D, D)
        layer_norm(t, q + "encoder_attn_layer_norm", D)
        linear(t, q + "fc1", d["ffn"], D)
        linear(t, q + "fc2", D, d["ffn"])
        layer_norm(t, q + "final_layer_norm", D)
    if not d["tied"]:
        t["decoder.output_projection.weight"] = ((d["vocab"], D), "w")
    return t


def gpt2_tensors(d, enc_hidden):
    t, D, p = {}, d["d_model"], "decoder.transformer."
    t[p + "wte.weight"] = ((d["vocab"], D), "w")
    t[p + "wpe.weight"] = ((d["positions"], D), "w")
    for i in range(d["layers"]):
        q = f"{p}h.{i}."
        layer_norm(t, q + "ln_1", D)
        conv1d(t, q + "attn.c_attn", D, 3 * D)
        conv1d(t, q + "attn.c_proj", D, D)
        layer_norm(t, q + "ln_cross_attn", D)
        conv1d(t, q + "crossattention.c_attn", D, 2 * D)
        conv1d(t, q + "crossattention.q_attn", D, D)
        conv1d(t, q + "crossattention.c_proj", D, D)
        layer_norm(t, q + "ln_2", D)
        conv1d(t, q + "mlp.c_fc", D, 4 * D)
        conv1d(t, q + "mlp.c_proj", 4 * D, D)
    layer_norm(t, p + "ln_f", D)
    if enc_hidden != D:  # VisionEncoderDecoderModel adds the projection only then
        linear(t, "enc_to_dec_proj", D, enc_hidden)
    return t


def tensors(spec):
    t = encoder_tensors(spec["encoder"])
    if spec["decoder"] == "trocr":
        t.update(trocr_tensors(spec["dec"]))
    else:
        t.update(gpt2_tensors(spec["dec"], spec["encoder"]["hidden"]))
    return t


def values(shape, kind, rng, pad):
    """A tensor's float32 values: init-std normals, LayerNorm ones and zeros; TrOCR's embedding
    with its padding row zeroed as its init does."""
    if kind in ("one", "zero"):
        return np.full(shape, 1.0 if kind == "one" else 0.0, np.float32)
    a = rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)
    if kind == "emb":
        a[pad] = 0
    return a


def write_safetensors(path, table, rng, pad):
    """F32 tensors in name order, the header padded to 8 bytes with spaces (as the safetensors
    library writes it), each tensor drawn as it is written: a 1.3 GB model never sits in memory
    twice."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name in sorted(table):
        shape = table[name][0]
        size = 4 * int(np.prod(shape))
        header[name] = {"dtype": "F32", "shape": list(shape),
                        "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for name in sorted(table):
            shape, kind = table[name]
            f.write(values(shape, kind, rng, pad).astype("<f4").tobytes())
    return sum(int(np.prod(s)) for s, _ in table.values())


def dump_json(path, obj):
    """As transformers' to_json_file: indent 2, sorted keys, a final newline."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def write_model(out, spec, seed):
    size = spec["dec"]["vocab"]
    tok = roberta_tokenizer(size) if spec["decoder"] == "trocr" else gpt2_tokenizer(size)
    vocab, tok_config, smap = tok
    config, generation = configs(spec, vocab)
    os.makedirs(out, exist_ok=True)
    dump_json(os.path.join(out, "config.json"), config)
    dump_json(os.path.join(out, "generation_config.json"), generation)
    dump_json(os.path.join(out, "preprocessor_config.json"), preprocessor(spec))
    dump_json(os.path.join(out, "vocab.json"), vocab)
    with open(os.path.join(out, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n\u0120 t\n")
    dump_json(os.path.join(out, "tokenizer_config.json"), tok_config)
    dump_json(os.path.join(out, "special_tokens_map.json"), smap)
    pad = config["pad_token_id"]
    return write_safetensors(os.path.join(out, "model.safetensors"), tensors(spec),
                             np.random.default_rng(seed), pad)


def main(argv):
    if not argv or argv[0].startswith("-") or any(n not in MODELS for n in argv[1:]):
        sys.exit(f"usage: {sys.argv[0]} OUT_DIR [{'|'.join(MODELS)}...]")
    root = os.path.abspath(argv[0])
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if os.path.commonpath([root, repo]) == repo:
        sys.exit(f"{root}: inside the repository; these weights are hundreds of MB, write them "
                 "elsewhere (e.g. /tmp/ved-bench)")
    for seed, name in enumerate(argv[1:] or MODELS):
        n = write_model(os.path.join(root, name), MODELS[name], seed)
        print(f"{root}/{name}: {n / 1e6:.1f}M parameters")


if __name__ == "__main__":
    main(sys.argv[1:])
