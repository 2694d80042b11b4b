#!/usr/bin/python3
"""Checks that bin/vit and the PyTorch module of models.py compute the same network.

Writes one random 224x224 RGB PNG, asks bin/vit for its preprocessed pixels
(vit preprocess) and its logits (vit classify --json --logits), runs the PyTorch module
on the same pixels, and prints the largest |logit difference|. With --ort it also runs the
exported OUT/onnx/MODEL.onnx through ONNX Runtime (ort_bench.js --logits, needs node and
onnxruntime-node as the driver installs it) on the same pixels and compares that too.

With --int8 both engines run in int8 (vit --precision int8, ONNX Runtime the MODEL-int8.onnx
quantize.py writes) and their logits are compared with PyTorch's fp32 ones: reported, and failed
only above --int8-tol (quantisation moves logits far more than 1e-4).

usage: check_logits.py [--vit bin/vit] [--out DIR] [--model vit-ti16] [--tol 1e-4] [--ort]
                       [--int8] [--int8-tol 0.1]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from PIL import Image

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vit", default="bin/vit")
    ap.add_argument("--out", default=os.path.expanduser("~/.cache/vit-bench"))
    ap.add_argument("--model", default="vit-ti16", choices=list(models.SHAPES))
    ap.add_argument("--tol", type=float, default=1e-4, help="fail above this max |delta logit|")
    ap.add_argument("--ort", action="store_true", help="also compare ONNX Runtime's logits")
    ap.add_argument("--int8", action="store_true", help="both engines in int8")
    ap.add_argument("--int8-tol", type=float, default=0.1, help="with --int8: fail above this")
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("THREADS", "2")))

    model_dir = os.path.join(args.out, "models", args.model)
    if not os.path.exists(os.path.join(model_dir, "model.safetensors")):
        sys.exit(f"check_logits.py: no model in {model_dir}; run models.py --out {args.out} first")
    module = models.build(args.model)
    # the weights bin/vit reads, not a rebuild: a stale or mismatched file shows up here
    state = {k: torch.from_numpy(v.copy()) for k, v in
             models.read_safetensors(os.path.join(model_dir, "model.safetensors")).items()}
    module.load_state_dict(state, strict=True)

    with tempfile.TemporaryDirectory() as tmp:
        img = os.path.join(tmp, "img.png")
        rng = np.random.default_rng(1234)
        Image.fromarray(rng.integers(0, 256, (224, 224, 3), dtype=np.uint8), "RGB").save(img)
        px_path = os.path.join(tmp, "px.safetensors")
        subprocess.run([args.vit, "preprocess", "-m", model_dir, img, "-o", px_path], check=True,
                       stdout=subprocess.DEVNULL)
        precision = ["--precision", "int8"] if args.int8 else []
        out = subprocess.run([args.vit, "classify", "-m", model_dir, "--json", "--logits", "-k", "1", img]
                             + precision, check=True, capture_output=True, text=True).stdout
        vit_logits = np.array(json.loads(out.strip().splitlines()[0])["logits"], dtype=np.float64)
        px = models.read_safetensors(px_path)["pixels"]  # [C,H,W]
        ort_logits = None
        if args.ort:
            raw = os.path.join(tmp, "px.f32")
            np.ascontiguousarray(px, dtype="<f4").tofile(raw)
            onnx_path = os.path.join(args.out, "onnx", args.model + ("-int8" if args.int8 else "") + ".onnx")
            js = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ort_bench.js")
            out = subprocess.run(["node", js, onnx_path, "-t", os.environ.get("THREADS", "2"), "--logits", raw],
                                 check=True, capture_output=True, text=True).stdout
            ort_logits = np.array(json.loads(out)["logits"], dtype=np.float64)

    with torch.no_grad():
        ref = module(torch.from_numpy(px.copy())[None]).double().numpy()[0]
    delta = np.abs(vit_logits - ref)
    report = {"model": args.model, "precision": "int8" if args.int8 else "fp32",
              "pixels_shape": list(px.shape),
                      "pixel_range": [float(px.min()), float(px.max())],
                      "max_abs_logit": float(np.abs(ref).max()),
                      "max_abs_delta_logit": float(delta.max()),
                      "mean_abs_delta_logit": float(delta.mean()),
                      "argmax_vit": int(vit_logits.argmax()), "argmax_torch": int(ref.argmax())}
    worst = delta.max()
    if ort_logits is not None:
        d_ort, d_vo = np.abs(ort_logits - ref), np.abs(ort_logits - vit_logits)
        report.update({"max_abs_delta_logit_ort_torch": float(d_ort.max()),
                       "max_abs_delta_logit_vit_ort": float(d_vo.max()), "argmax_ort": int(ort_logits.argmax())})
        worst = max(worst, d_ort.max(), d_vo.max())
    if ort_logits is not None:
        report["mean_abs_delta_logit_ort_torch"] = float(d_ort.mean())
    print(json.dumps(report))
    tol = args.int8_tol if args.int8 else args.tol
    if worst > tol:
        sys.exit(f"check_logits.py: max |delta logit| {worst:.3g} > {tol:g}")


if __name__ == "__main__":
    main()
