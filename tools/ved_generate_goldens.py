#!/usr/bin/python3
"""Writes tests/data/ved-*/generate.json: greedy and beam search on the VisionEncoderDecoder micro
models, as transformers' generate would give them (run by hand; the project never runs it).

The model is tools/ved_reference.py's float64 forward (a full recompute of every row at every
step, no cache: an independent path from the C decoder's cache), generation is
tools/generate_reference.py's float64 port of transformers' generate. Each case runs on the golden
images' preprocessed pixels (golden.safetensors image/<name>/pixels), one image at a time and the
three as one batch, with the folder's generation_config.json and the case's options over it:

  greedy                    the folder's settings
  greedy-max4               max_new_tokens 4 (the length limit, not the end token, stops it)
  beams-N[-lpX][-ngN][-es]  num_beams N = 1..4; length_penalty X (1.0 when absent: 0.5, 2.0);
                            no_repeat_ngram_size; early_stopping True (else False)
  beams-3-never             early_stopping "never"
  beams-2-min8              min_length 8: the end token barred before it

Every token choice of a case is recorded with the smallest gap between a chosen and a rejected
value (generate_reference.Margins); golden.json-style field min_margin lets the C test require
identical ids only where float32 rounding cannot swap a choice (gap > 1e-4).

generate.json: {"images": [...], "cases": [{"name", "options", "batch": [image indices], "results":
[{"ids", "score"}], "min_margin"}]}

usage: /usr/bin/python3 tools/ved_generate_goldens.py
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate_reference as gen  # noqa: E402
import ved_reference as ved  # noqa: E402
from hf_reference import read_safetensors  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ["ved-trocr-vit", "ved-trocr-sin-deit", "ved-gpt2-vit"]
IMAGES = ["rgb_64x48.png", "tall_40x400.jpg", "palette_120x90.png"]


def cases():
    out = [("greedy", {}), ("greedy-max4", {"max_new_tokens": 4})]
    for beams in range(1, 5):
        for lp in (1.0, 0.5, 2.0):
            for ngram in (0, 2):
                name = f"beams-{beams}" + ("" if lp == 1.0 else f"-lp{lp}") + \
                    (f"-ng{ngram}" if ngram else "")
                out.append((name, {"num_beams": beams, "length_penalty": lp,
                                   "no_repeat_ngram_size": ngram}))
        out.append((f"beams-{beams}-es", {"num_beams": beams, "early_stopping": True}))
    out.append(("beams-3-never", {"num_beams": 3, "early_stopping": "never"}))
    out.append(("beams-2-min8", {"num_beams": 2, "min_length": 8}))
    return out


def folder_settings(folder):
    """The generation_config.json keys generate_reference knows."""
    with open(os.path.join(folder, "generation_config.json")) as f:
        cfg = json.load(f)
    return {k: v for k, v in cfg.items() if k in gen.DEFAULTS}


def run(model, cross, batch, cfg, beams):
    def next_logits(seqs):
        rows = len(seqs)
        ids = torch.tensor(seqs, dtype=torch.int64)
        image_of_row = [batch[r // beams] for r in range(rows)]
        return ved.decoder_logits(model, cross, ids, image_of_row)[:, -1, :].numpy()

    margins = gen.Margins()
    results = gen.generate(next_logits, len(batch), cfg, margins)
    return [{"ids": ids, "score": float(score)} for ids, score in results], margins.smallest


def write(name):
    folder = os.path.join(ROOT, "tests", "data", name)
    model = ved.load(folder)
    golden, _ = read_safetensors(os.path.join(folder, "golden.safetensors"))
    pixels = torch.stack([golden[f"image/{i}/pixels"] for i in IMAGES]).to(torch.float64)
    cross = ved.cross_states(model, ved.encode(model, pixels))
    base = folder_settings(folder)
    out = {"model": name, "images": IMAGES, "settings": base, "cases": []}
    for case, options in cases():
        cfg = dict(base, **options)
        beams = cfg.get("num_beams", 1)
        for batch in ([0], [1], [2], [0, 1, 2]):
            results, margin = run(model, cross, batch, cfg, beams)
            out["cases"].append({"name": case, "options": options, "batch": batch,
                                 "results": results, "min_margin": margin})
    clear = sum(c["min_margin"] > 1e-4 for c in out["cases"])
    print(f"{name}: {len(out['cases'])} runs, {clear} with every choice clear by 1e-4")
    with open(os.path.join(folder, "generate.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


def main():
    for name in MODELS:
        write(name)


if __name__ == "__main__":
    main()
