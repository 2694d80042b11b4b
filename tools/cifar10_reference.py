#!/usr/bin/python3
"""The float64 reference predictions of an image classifier folder on an ImageFolder, for
tests/test_eval_cli.c's check of the shipped models/vit-tiny-cifar10:

  /usr/bin/python3 tools/cifar10_reference.py MODEL_DIR DATA_DIR OUT.tsv

DATA_DIR/<class>/*.jpg (the class folders named as the model's labels); OUT.tsv gets one line per
image, `class/file<TAB>true<TAB>predicted<TAB>probability<TAB>gap` (probability: the predicted
class's softmax, gap: its logit's lead over the second's), sorted by path. The preprocessing and
the forward are tools/hf_reference.py's (Pillow, then float64 from the float32 pixels)."""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_reference as ref  # noqa: E402


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    model_dir, data_dir, out_path = sys.argv[1:]
    cfg, w = ref.load_model(model_dir)
    with open(f"{model_dir}/preprocessor_config.json") as f:
        pp = json.load(f)
    labels = [cfg["id2label"][str(i)] for i in range(len(cfg["id2label"]))]
    files = sorted(f"{c}/{n}" for c in os.listdir(data_dir) if os.path.isdir(f"{data_dir}/{c}")
                   for n in os.listdir(f"{data_dir}/{c}"))
    rows, right, least_gap = [], 0, float("inf")
    for start in range(0, len(files), 50):
        batch = files[start:start + 50]
        pixels = torch.stack([ref.preprocess(f"{data_dir}/{p}", pp, cfg["image_size"])
                              for p in batch]).double()
        logits = ref.forward(w, cfg, pixels)["logits"]
        probs = torch.softmax(logits, dim=-1)
        for p, z, pr in zip(batch, logits, probs):
            truth = labels.index(p.split("/")[0])
            top2 = torch.topk(z, 2)
            pred = int(top2.indices[0])
            gap = float(top2.values[0] - top2.values[1])
            least_gap = min(least_gap, gap)
            right += pred == truth
            rows.append(f"{p}\t{truth}\t{pred}\t{float(pr[pred]):.9f}\t{gap:.6f}")
    with open(out_path, "w") as f:
        f.write("\n".join(rows) + "\n")
    print(f"{len(rows)} images, top-1 {right / len(rows):.4f}, smallest top-2 logit gap "
          f"{least_gap:.2e}", file=sys.stderr)


if __name__ == "__main__":
    main()
