#!/usr/bin/python3
"""Random-weight DINOv2 and BEiT folders of real sizes, for `vit bench` against a ViT of the same
width and depth (run by hand; the project never runs it). Written with the layouts of
tools/dinov2_reference.py and tools/beit_reference.py, so vit loads them as it loads the Hub's.

  OUT/dinov2-s14       Dinov2ForImageClassification, ViT-S width (384, 12 layers, 6 heads), patch 14,
                       image_size 518 (the Hub's) run at the processor's 224 crop: 1 + 256 tokens
  OUT/dinov2-reg-s14   the same with 4 register tokens (dinov2_with_registers): 1 + 4 + 256 tokens
  OUT/dinov2-swiglu-s14  the same with the SwiGLU feed-forward
  OUT/beit-b16         BeitForImageClassification, ViT-B (768, 12, 12), patch 16 at 224, a
                       relative position bias per layer, layer scale, mean pooling: 1 + 196
  OUT/vit-s16, vit-b16 come from bench/compare/models.py (the ViTs it writes for ONNX Runtime)

usage: /usr/bin/python3 tools/backbone_bench_models.py OUT
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import beit_reference as beit  # noqa: E402
import dinov2_reference as dino  # noqa: E402

LABELS = [f"class {i}" for i in range(1000)]


def dinov2(name, registers=0, swiglu=False):
    return dict(kind="dinov2_with_registers" if registers else "dinov2",
                arch="Dinov2WithRegistersForImageClassification" if registers
                else "Dinov2ForImageClassification", seed=7, image=518, hidden=384, layers=12,
                heads=6, mlp_ratio=4, swiglu=swiglu, registers=registers, labels=LABELS,
                preprocessor=dino.bit_processor(224, 256), other=224)


BEIT = dict(kind="beit", arch="BeitForImageClassification", seed=8, image=224, patch=16,
            hidden=768, heads=12, layers=12, mlp=3072, rel=True, shared=False, absolute=False,
            layer_scale=0.1, mean_pool=True, eps=1e-12, labels=LABELS,
            preprocessor=beit.beit_processor(224, 224), other=224, index_buffers=False)


def write(out, name, module, spec, writer):
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    w = module.random_weights(spec)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(module.config_json(spec), f, indent=1)
    with open(os.path.join(folder, "preprocessor_config.json"), "w") as f:
        json.dump(spec["preprocessor"], f, indent=1)
    writer(os.path.join(folder, "model.safetensors"), w)
    print(folder)


def main():
    out = sys.argv[1]
    for name, kw in (("dinov2-s14", {}), ("dinov2-reg-s14", {"registers": 4}),
                     ("dinov2-swiglu-s14", {"swiglu": True})):
        write(out, name, dino, dinov2(name, **kw), dino.ref.write_safetensors)
    write(out, "beit-b16", beit, BEIT, lambda p, w: beit.write_safetensors(p, w, {}))


if __name__ == "__main__":
    main()
