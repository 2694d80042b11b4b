#!/usr/bin/python3
"""Training goldens of the VisionEncoderDecoder micro models (run by hand; the project never runs
it): the teacher-forced loss and its gradients by float64 PyTorch autograd through
tools/ved_reference.py's forward (written from transformers' code; no transformers import).

For each of tests/data/ved-trocr-vit, ved-trocr-sin-deit and ved-gpt2-vit: the three golden
images' pixels (golden.safetensors image/<name>/pixels) and fixed labels [3, 7] with -100 where a
row ends, as VisionEncoderDecoderModel.forward(pixel_values, labels) computes it:

  decoder_input_ids = shift_tokens_right(labels, config.pad_token_id,
                                         config.decoder_start_token_id)
  logits = decoder(decoder_input_ids, encoder_hidden_states = enc_to_dec_proj(encoder(pixels)))
  loss = CrossEntropyLoss(ignore_index=-100, label_smoothing=eps)(logits, labels)  (mean)

once with eps 0 (the model's own loss) and once with eps 0.1 (transformers' Trainer with
label_smoothing_factor 0.1: its LabelSmoother gives the same number), and the gradient of the
smoothed loss wrt every weight. Written to tests/data/<model>/train-golden.safetensors (F32):

  labels [3, 7]          the labels (float32 integers, -100 ignored)
  loss, loss_smooth [1]  the two losses
  index/<name> [k]       up to 24 element indices (flat, float32 integers) of weight <name>,
                         spread over the tensor (the whole tensor when smaller), and for the
                         token and position tables the elements of the rows the batch reads
                         (TrOCR's padding row too: its share comes from the tied output projection
                         alone, the pads standing only after the counted positions; so
                         nn.Embedding's padding_idx, which keeps the lookup's gradient out of that
                         row, changes nothing here and is not imitated)
  grad/<name> [k]        d loss_smooth / d <name> at those elements

Weights the model does not train (the encoder's pooler, TrOCR's saved `_float_tensor` buffer)
have no gradient and are left out. Names and indices are the file's: GPT-2's Conv1D weights in
their stored [in, out] layout.

usage: /usr/bin/python3 tools/ved_train_reference.py
"""

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_reference as ref  # noqa: E402
import ved_reference as ved  # noqa: E402

MODELS = ["ved-trocr-vit", "ved-trocr-sin-deit", "ved-gpt2-vit"]
SMOOTHING = 0.1
PER_TENSOR = 24


def labels_of(folder, golden):
    """[3, 7]: the golden decoder input's words and end token, cut at different lengths."""
    g = golden["decoder_input_ids"][1:]
    other = golden["batch"]["ids"][1][1:]
    eos = golden["config"]["eos_token_id"]
    return [g[:7], other[:5] + [-100] * 2, g[:3] + [eos] + [-100] * 3]


def shift_right(labels, pad, start):
    """shift_tokens_right: start first, the labels moved one place right, -100 -> pad."""
    out = [[start] + row[:-1] for row in labels]
    return [[pad if t == -100 else t for t in row] for row in out]


def sample(name, numel, shape, rows_read):
    """Flat indices of up to PER_TENSOR elements spread over the tensor, plus the elements of
    the rows read by the batch for the embedding tables."""
    k = min(PER_TENSOR, numel)
    idx = sorted({(i * numel) // k + (i * 7919) % max(numel // k, 1) for i in range(k)})
    for row in rows_read.get(name, []):
        width = shape[-1]
        idx += [row * width + j for j in range(0, width, max(width // 8, 1))]
    return sorted(set(idx))


def table_rows(model, ids, labels):
    """The rows of the token and position tables the batch reads (two of each, and TrOCR's padding
    row)."""
    T = len(ids[0])
    if model.kind == "trocr":
        p = "decoder.model.decoder."
        rows = {p + "embed_tokens.weight": [ids[0][0], labels[0][1], model.dec_cfg["pad_token_id"]]}
        if model.dec_cfg["use_learned_position_embeddings"]:
            rows[p + "embed_positions.weight"] = [2, 2 + T - 1]
        return rows
    p = "decoder.transformer."
    return {p + "wte.weight": [ids[0][0], labels[0][1]], p + "wpe.weight": [0, T - 1]}


def trained(name):
    return "pooler" not in name and not name.endswith("_float_tensor")


def loss_of(model, pixels, ids, labels, eps):
    enc = ved.encode(model, pixels)
    logits = ved.decoder_logits(model, ved.cross_states(model, enc), ids)
    V = logits.shape[-1]
    target = torch.tensor(labels, dtype=torch.long).reshape(-1)
    return F.cross_entropy(logits.reshape(-1, V), target, ignore_index=-100, label_smoothing=eps)


def run(name):
    import json
    folder = os.path.join(ved.DATA, name)
    with open(os.path.join(folder, "golden.json")) as f:
        golden = json.load(f)
    g, _ = ref.read_safetensors(os.path.join(folder, "golden.safetensors"))
    pixels = torch.stack([g[f"image/{i}/pixels"] for i in golden["images"]]).double()
    model = ved.load(folder)
    top = model.config
    labels = labels_of(folder, golden)
    ids = shift_right(labels, top["pad_token_id"], top["decoder_start_token_id"])
    for k, v in model.w.items():
        v.requires_grad_(trained(k))
    leaves = dict(model.w)
    with torch.no_grad():
        plain = loss_of(model, pixels, ids, labels, 0.0)
    smooth = loss_of(model, pixels, ids, labels, SMOOTHING)
    smooth.backward()
    out = {"labels": torch.tensor(labels, dtype=torch.float64),
           "loss": plain.detach().reshape(1), "loss_smooth": smooth.detach().reshape(1)}
    rows = table_rows(model, ids, labels)
    for k, v in sorted(leaves.items()):
        if not trained(k):
            continue
        idx = sample(k, v.numel(), list(v.shape), rows)
        out[f"index/{k}"] = torch.tensor(idx, dtype=torch.float64)
        out[f"grad/{k}"] = v.grad.reshape(-1)[idx]
    ref.write_safetensors(os.path.join(folder, "train-golden.safetensors"), out)
    size = os.path.getsize(os.path.join(folder, "train-golden.safetensors"))
    print(f"{name}: loss {plain.item():.6f}, smoothed {smooth.item():.6f}; "
          f"{sum(1 for k in out if k.startswith('grad/'))} tensors sampled, {size // 1024} KiB")


if __name__ == "__main__":
    torch.set_num_threads(1)
    for m in MODELS:
        run(m)
