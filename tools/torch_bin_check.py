#!/usr/bin/env python3
"""Every model folder of tests/data as a pytorch_model.bin, in PyTorch's zip and legacy formats
(torch.save of its model.safetensors' tensors, dtypes kept), then through bin/vit: `vit convert
--dtype f32` must give the folder's tensors (the same bytes for float32 and integer tensors, the
exact float32 values of float16 / bfloat16 ones) and `vit info` the same text as the folder's.
A check of vit's .bin reader against torch itself over every family (issue 41); needs torch, so
it is not part of make test (tests/test_torch_bin.c reads the committed tests/data/torch-bin).
Run from the project root after make:  python3 tools/torch_bin_check.py [WORK_DIR]
(WORK_DIR, which must not exist, keeps the folders; without it a temporary one is removed.)"""
import collections
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import torch

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64,
          "I64": torch.int64, "I32": torch.int32}


def read_safetensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    out = collections.OrderedDict()
    for name, info in json.loads(data[8 : 8 + n]).items():
        if name != "__metadata__":
            a, b = info["data_offsets"]
            out[name] = (info["dtype"], info["shape"], data[8 + n + a : 8 + n + b])
    return out


def as_torch(dtype, shape, raw):
    if not raw:
        return torch.zeros(shape, dtype=DTYPES[dtype])
    return torch.frombuffer(bytearray(raw), dtype=DTYPES[dtype]).reshape(shape).clone()


def same_tensors(want, got):
    if set(want) != set(got):
        return False
    for name, (dtype, shape, raw) in want.items():
        if dtype in ("F16", "BF16"):  # vit convert --dtype f32 widens them
            if not torch.equal(as_torch(*got[name]), as_torch(dtype, shape, raw).float()):
                return False
        elif got[name][2] != raw:
            return False
    return True


def info(folder):
    r = subprocess.run(["bin/vit", "info", "-m", folder], capture_output=True, text=True)
    return r.returncode, r.stdout.replace(folder, "FOLDER")


def check(src, work, fmt):
    tensors = read_safetensors(os.path.join(src, "model.safetensors"))
    out = os.path.join(work, f"{os.path.basename(src)}-{fmt}")
    os.makedirs(out)
    for f in os.listdir(src):
        if f != "model.safetensors":
            os.symlink(os.path.abspath(os.path.join(src, f)), os.path.join(out, f))
    state = collections.OrderedDict((k, as_torch(*v)) for k, v in tensors.items())
    torch.save(state, os.path.join(out, "pytorch_model.bin"), _use_new_zipfile_serialization=fmt == "zip")
    converted = out + "-converted"
    r = subprocess.run(["bin/vit", "convert", "--dtype", "f32", out, converted], capture_output=True, text=True)
    if r.returncode != 0:
        return "vit convert failed: " + r.stderr.strip()
    if not same_tensors(tensors, read_safetensors(os.path.join(converted, "model.safetensors"))):
        return "tensors differ"
    if info(out) != info(src):
        return "vit info differs"
    return None


def main():
    own = len(sys.argv) < 2  # a WORK_DIR given must not exist yet, and is kept
    work = tempfile.mkdtemp(prefix="torch-bin-check-") if own else sys.argv[1]
    if not own:
        os.makedirs(work)
    failures = checked = 0
    for name in sorted(os.listdir("tests/data")):
        src = os.path.join("tests/data", name)
        if not os.path.exists(os.path.join(src, "model.safetensors")):
            continue
        for fmt in ("zip", "legacy"):
            why = check(src, work, fmt)
            checked += 1
            if why:
                failures += 1
                print(f"{src} ({fmt}): {why}")
    print(f"{checked - failures} of {checked} folders (zip and legacy) read as torch wrote them")
    if own:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
