#!/usr/bin/python3
"""Random-weight ViTs for the vit / ONNX Runtime comparison (run with Debian's /usr/bin/python3).

For each shape it writes, under OUT:
  OUT/models/NAME/   a Hugging Face layout model directory that bin/vit loads
                     (config.json, preprocessor_config.json, model.safetensors, F32)
  OUT/onnx/NAME.onnx the same network exported from PyTorch (opset 17, dynamic batch axis,
                     input pixel_values [B,3,224,224] float32, output logits [B,1000])
  OUT/onnx/NAME-int8.onnx  that file with its weight MatMuls in int8, as onnxruntime's
                     quantize_dynamic writes them (quantize.py)

The PyTorch module below mirrors transformers' ViTForImageClassification: pre-LayerNorm
blocks, exact (erf) GELU, a conv patch embedding, a CLS token, learned position embeddings,
a final LayerNorm and a classifier on token 0. Its parameter names are HF's, so its state
dict is written to model.safetensors as it is.

usage: models.py [--out DIR] [--only NAME[,NAME...]] [--force]
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch
from torch import nn

IMAGE_SIZE, PATCH, CHANNELS, LABELS = 224, 16, 3, 1000

# name: (hidden, layers, heads, mlp)
SHAPES = {
    "vit-ti16": (192, 12, 3, 768),
    "vit-s16": (384, 12, 6, 1536),
    "vit-b16": (768, 12, 12, 3072),
}


class PatchEmbeddings(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.projection = nn.Conv2d(CHANNELS, d, kernel_size=PATCH, stride=PATCH)

    def forward(self, x):  # [B,3,H,W] -> [B,N,D]
        return self.projection(x).flatten(2).transpose(1, 2)


class Embeddings(nn.Module):
    def __init__(self, d):
        super().__init__()
        n = (IMAGE_SIZE // PATCH) ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.position_embeddings = nn.Parameter(torch.zeros(1, n + 1, d))
        self.patch_embeddings = PatchEmbeddings(d)

    def forward(self, x):
        p = self.patch_embeddings(x)
        cls = self.cls_token.expand(p.shape[0], -1, -1)
        return torch.cat([cls, p], dim=1) + self.position_embeddings


class SelfAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.head_dim = heads, d // heads
        self.query = nn.Linear(d, d)
        self.key = nn.Linear(d, d)
        self.value = nn.Linear(d, d)

    def split(self, t):  # [B,T,D] -> [B,H,T,Dh]
        return t.view(t.shape[0], t.shape[1], self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        ctx = torch.matmul(scores.softmax(dim=-1), v).permute(0, 2, 1, 3)
        return ctx.reshape(x.shape[0], x.shape[1], self.heads * self.head_dim)


class SelfOutput(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.dense = nn.Linear(d, d)


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.attention = SelfAttention(d, heads)
        self.output = SelfOutput(d)

    def forward(self, x):
        return self.output.dense(self.attention(x))


class Intermediate(nn.Module):
    def __init__(self, d, i):
        super().__init__()
        self.dense = nn.Linear(d, i)


class Output(nn.Module):
    def __init__(self, i, d):
        super().__init__()
        self.dense = nn.Linear(i, d)


class Layer(nn.Module):
    def __init__(self, d, heads, mlp, eps):
        super().__init__()
        self.layernorm_before = nn.LayerNorm(d, eps=eps)
        self.attention = Attention(d, heads)
        self.layernorm_after = nn.LayerNorm(d, eps=eps)
        self.intermediate = Intermediate(d, mlp)
        self.output = Output(mlp, d)

    def forward(self, x):
        x = x + self.attention(self.layernorm_before(x))
        h = nn.functional.gelu(self.intermediate.dense(self.layernorm_after(x)))  # exact erf GELU
        return x + self.output.dense(h)


class Encoder(nn.Module):
    def __init__(self, d, layers, heads, mlp, eps):
        super().__init__()
        self.layer = nn.ModuleList([Layer(d, heads, mlp, eps) for _ in range(layers)])

    def forward(self, x):
        for layer in self.layer:
            x = layer(x)
        return x


class ViTModel(nn.Module):
    def __init__(self, d, layers, heads, mlp, eps):
        super().__init__()
        self.embeddings = Embeddings(d)
        self.encoder = Encoder(d, layers, heads, mlp, eps)
        self.layernorm = nn.LayerNorm(d, eps=eps)

    def forward(self, x):
        return self.layernorm(self.encoder(self.embeddings(x)))


class ViTForImageClassification(nn.Module):
    def __init__(self, d, layers, heads, mlp, eps=1e-12):
        super().__init__()
        self.vit = ViTModel(d, layers, heads, mlp, eps)
        self.classifier = nn.Linear(d, LABELS)

    def forward(self, pixel_values):
        return self.classifier(self.vit(pixel_values)[:, 0, :])


def build(name, seed=0):
    """The module for a shape, with small random weights (normal, std 0.02), LayerNorm weights 1
    and small random biases (normal, std 0.01)."""
    d, layers, heads, mlp = SHAPES[name]
    return random_weights(ViTForImageClassification(d, layers, heads, mlp).eval(), seed)


def random_weights(model, seed):
    """model's parameters drawn from seed: LayerNorm weights 1 (a parameter named layernorm or
    LayerNorm), biases normal with std 0.01 (not zero, so that a dropped bias shows), the rest
    normal with std 0.02 (initializer_range)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if "layernorm" in pname.lower() and pname.endswith(".weight"):
                p.fill_(1.0)
            elif pname.endswith(".bias"):
                p.copy_(torch.randn(p.shape, generator=g) * 0.01)
            else:
                p.copy_(torch.randn(p.shape, generator=g) * 0.02)
    return model


def hf_config(name):
    d, layers, heads, mlp = SHAPES[name]
    return {
        "model_type": "vit",
        "architectures": ["ViTForImageClassification"],
        "image_size": IMAGE_SIZE,
        "patch_size": PATCH,
        "num_channels": CHANNELS,
        "hidden_size": d,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": mlp,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0,
        "initializer_range": 0.02,
        "layer_norm_eps": 1e-12,
        "qkv_bias": True,
        "id2label": {str(i): str(i) for i in range(LABELS)},
        "label2id": {str(i): i for i in range(LABELS)},
    }


PREPROCESSOR_CONFIG = {
    "image_processor_type": "ViTImageProcessor",
    "do_resize": True,
    "size": {"height": IMAGE_SIZE, "width": IMAGE_SIZE},
    "resample": 2,
    "do_rescale": True,
    "rescale_factor": 1 / 255,
    "do_normalize": True,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
}


def write_safetensors(path, tensors):
    """F32 safetensors by hand: u64 little-endian header length, JSON header, raw data."""
    header, arrays, offset = {}, [], 0
    for name, t in tensors.items():
        a = np.ascontiguousarray(t.detach().cpu().numpy(), dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        arrays.append(a)
        offset += a.nbytes
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)  # keep the data 8-byte aligned
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for a in arrays:
            f.write(a.tobytes())
    os.replace(tmp, path)


def read_safetensors(path):
    """name -> numpy array, for the F32 files that bin/vit writes and reads."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise ValueError(f"{path}: {name} is {info['dtype']}, expected F32")
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype="<f4").reshape(info["shape"])
    return out


def write_model_dir(model, name, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(hf_config(name), f, indent=2)
    with open(os.path.join(out_dir, "preprocessor_config.json"), "w") as f:
        json.dump(PREPROCESSOR_CONFIG, f, indent=2)
    # model.safetensors last: its presence marks a complete directory
    write_safetensors(os.path.join(out_dir, "model.safetensors"), model.state_dict())


def export_onnx(model, path):
    x = torch.zeros(1, CHANNELS, IMAGE_SIZE, IMAGE_SIZE)
    tmp = path + ".tmp"
    torch.onnx.export(model, (x,), tmp, opset_version=17, input_names=["pixel_values"],
                      output_names=["logits"], do_constant_folding=True,
                      dynamic_axes={"pixel_values": {0: "batch"}, "logits": {0: "batch"}})
    import onnx
    onnx.checker.check_model(tmp)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.expanduser("~/.cache/vit-bench"))
    ap.add_argument("--only", default=",".join(SHAPES), help="comma-separated names: " + ", ".join(SHAPES))
    ap.add_argument("--force", action="store_true", help="rewrite files that exist")
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("THREADS", "2")))
    for name in args.only.split(","):
        if name not in SHAPES:
            sys.exit(f"models.py: unknown model {name!r} (known: {', '.join(SHAPES)})")
        model_dir = os.path.join(args.out, "models", name)
        onnx_path = os.path.join(args.out, "onnx", name + ".onnx")
        have_dir = os.path.exists(os.path.join(model_dir, "model.safetensors"))
        int8_path = os.path.join(args.out, "onnx", name + "-int8.onnx")
        have_onnx = os.path.exists(onnx_path)
        have_int8 = os.path.exists(int8_path)
        if have_dir and have_onnx and have_int8 and not args.force:
            print(f"{name}: up to date ({model_dir}, {onnx_path})")
            continue
        model = build(name)
        if not have_dir or args.force:
            write_model_dir(model, name, model_dir)
            print(f"{name}: wrote {model_dir}")
        if not have_onnx or args.force:
            os.makedirs(os.path.dirname(onnx_path), exist_ok=True)
            export_onnx(model, onnx_path)
            print(f"{name}: wrote {onnx_path}")
        if not have_int8 or not have_onnx or args.force:
            import onnx
            sys.dont_write_bytecode = True  # no __pycache__ in the checkout
            import quantize
            q = onnx.load(onnx_path)
            n = quantize.quantize_model(q)
            onnx.checker.check_model(q)
            onnx.save(q, int8_path + ".tmp")
            os.replace(int8_path + ".tmp", int8_path)
            print(f"{name}: wrote {int8_path} ({n} MatMuls in int8)")


if __name__ == "__main__":
    main()
