#!/usr/bin/python3
"""Goldens of timm folders run at another input size (run by hand; the project never runs it):
tests/data/<folder>/golden-size<N>.safetensors with pixels.<i> (timm's eval transform at N x N)
and output.<i> (the float64 forward of tools/timm_reference.py with pos_embed resampled).

timm resamples absolute positions for another size in one way, whether the model was built with
dynamic_img_size (VisionTransformer._pos_embed) or with create_model(img_size=N) over a
checkpoint (checkpoint_filter_fn): layers/pos_embed.py resample_abs_pos_embed, the prefix rows
(num_prefix_tokens, 0 with no_embed_class) kept as they are, the grid [1, D, h, w] through
F.interpolate(size=(N/P, N/P), mode='bicubic', antialias=True) (align_corners False). timm casts
to float32 for the interpolation; here it runs in float64 (the reference's precision)."""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_reference import read_safetensors, write_safetensors  # noqa: E402
from timm_reference import IMAGES, REPO, ROOT, SPECS, forward, preprocess  # noqa: E402

RUNS = [("timm-vit-micro", 48), ("timm-gap-reg-micro", 42), ("timm-so150m-reg-micro", 40)]


def resample(pos, prefix, old, new):
    grid = pos[:, prefix:].reshape(1, old, old, -1).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=(new, new), mode="bicubic", antialias=True)
    return torch.cat([pos[:, :prefix], grid.permute(0, 2, 3, 1).reshape(1, new * new, -1)], 1)


def main():
    for name, size in RUNS:
        s = dict(next(x for x in SPECS if x["dir"] == name))
        tensors, _ = read_safetensors(os.path.join(ROOT, name, "model.safetensors"))
        w = {k: v.double() for k, v in tensors.items()}
        prefix = 0 if s["nec"] else int(s["cls"]) + s["reg"]
        w["pos_embed"] = resample(w["pos_embed"], prefix, s["size"] // s["P"], size // s["P"])
        s["size"] = size
        golden = {}
        for i, image in enumerate(IMAGES[:3]):
            px = preprocess(os.path.join(REPO, image), s)
            golden["pixels.%d" % i] = px
            golden["output.%d" % i] = forward(w, s, torch.from_numpy(px).double()[None])[0]
        out = os.path.join(ROOT, name, "golden-size%d.safetensors" % size)
        write_safetensors(out, golden, {"images": ",".join(IMAGES[:3]),
                                        "source": "tools/timm_resize_reference.py"})
        print(out)


if __name__ == "__main__":
    main()
