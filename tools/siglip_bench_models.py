#!/usr/bin/python3
"""Random-weight SigLIP-B/16 image towers, for `vit bench` of the tanh GELU against quick_gelu on
the same shapes (run by hand; the project never runs it). The layout is the one SiglipVisionModel's
save_pretrained writes (tests/data/siglip-micro's vision tower, tools/clip_reference.py), so vit
loads them as it loads the Hub's.

  OUT/siglip-b16        siglip_vision_model, google/siglip-base-patch16-224's shape: width 768,
                        12 layers, 12 heads, MLP 3072, patch 16 at 224 (196 tokens, no CLS), the
                        attention-pooling head; hidden_act gelu_pytorch_tanh
  OUT/siglip-b16-quick  the same weights (a symbolic link to the first's) with quick_gelu

usage: /usr/bin/python3 tools/siglip_bench_models.py OUT
"""
import json
import os
import struct
import sys

import numpy as np

D, LAYERS, HEADS, MLP, IMAGE, PATCH = 768, 12, 12, 3072, 224, 16


def write_safetensors(path, tensors):
    """As tools/hf_reference.py writes them (F32, name order, header padded to 8 bytes), without
    its torch import."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name in sorted(tensors):
        n = tensors[name].nbytes
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for name in sorted(tensors):
            f.write(np.ascontiguousarray(tensors[name], dtype="<f4").tobytes())


def weights(seed=40):
    rng = np.random.default_rng(seed)
    w = {}

    def linear(name, out, inp):
        w[name + ".weight"] = rng.normal(0, 0.02, (out, inp)).astype(np.float32)
        w[name + ".bias"] = np.zeros(out, np.float32)

    def norm(name):
        w[name + ".weight"] = np.ones(D, np.float32)
        w[name + ".bias"] = np.zeros(D, np.float32)

    v = "vision_model."
    w[v + "embeddings.patch_embedding.weight"] = rng.normal(0, 0.02, (D, 3, PATCH, PATCH)).astype(
        np.float32)
    w[v + "embeddings.patch_embedding.bias"] = np.zeros(D, np.float32)
    w[v + "embeddings.position_embedding.weight"] = rng.normal(
        0, 0.02, ((IMAGE // PATCH) ** 2, D)).astype(np.float32)
    for i in range(LAYERS):
        p = f"{v}encoder.layers.{i}."
        norm(p + "layer_norm1")
        norm(p + "layer_norm2")
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            linear(p + "self_attn." + proj, D, D)
        linear(p + "mlp.fc1", MLP, D)
        linear(p + "mlp.fc2", D, MLP)
    norm(v + "post_layernorm")
    h = v + "head."
    w[h + "probe"] = rng.normal(0, 0.02, (1, 1, D)).astype(np.float32)
    w[h + "attention.in_proj_weight"] = rng.normal(0, 0.02, (3 * D, D)).astype(np.float32)
    w[h + "attention.in_proj_bias"] = np.zeros(3 * D, np.float32)
    linear(h + "attention.out_proj", D, D)
    norm(h + "layernorm")
    linear(h + "mlp.fc1", MLP, D)
    linear(h + "mlp.fc2", D, MLP)
    return w


def config(act):
    return {"architectures": ["SiglipVisionModel"], "model_type": "siglip_vision_model",
            "torch_dtype": "float32", "hidden_size": D, "intermediate_size": MLP,
            "num_attention_heads": HEADS, "num_hidden_layers": LAYERS, "hidden_act": act,
            "layer_norm_eps": 1e-6, "attention_dropout": 0.0, "image_size": IMAGE,
            "patch_size": PATCH, "num_channels": 3}


PREPROCESSOR = {"do_normalize": True, "do_rescale": True, "do_resize": True,
                "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
                "image_processor_type": "SiglipImageProcessor", "resample": 3,
                "rescale_factor": 1 / 255, "size": {"height": IMAGE, "width": IMAGE}}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    out = sys.argv[1]
    for name, act in (("siglip-b16", "gelu_pytorch_tanh"), ("siglip-b16-quick", "quick_gelu")):
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(config(act), f, indent=2)
        with open(os.path.join(d, "preprocessor_config.json"), "w") as f:
            json.dump(PREPROCESSOR, f, indent=2)
        st = os.path.join(d, "model.safetensors")
        if act == "gelu_pytorch_tanh":
            write_safetensors(st, weights())
        elif not os.path.exists(st):
            os.symlink(os.path.join("..", "siglip-b16", "model.safetensors"), st)
        print(d)


if __name__ == "__main__":
    main()
