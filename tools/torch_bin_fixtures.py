#!/usr/bin/env python3
"""tests/data/torch-bin: the weights of two micro folders in the layouts people have, written by
torch.save and by the save_pretrained sharding scheme (issue 41), for tests/test_torch_bin.c.

From tests/data/vit-base-micro (ViTModel) and tests/data/bert-base-micro (BertModel):
  vit-zip          pytorch_model.bin, PyTorch's zip format (torch.save's default since 1.6)
  vit-legacy       pytorch_model.bin, the legacy format (_use_new_zipfile_serialization=False)
  vit-shards       model.safetensors.index.json + 3 safetensors shards (save_pretrained's names)
  vit-bin-shards   pytorch_model.bin.index.json + 3 .bin shards (legacy and zip mixed)
  vit-f16-strided  pytorch_model.bin in float16, its query weights saved as transposed views
                   (non-contiguous, storage offsets) and the key weights two views of one storage
  vit-bf16         pytorch_model.bin in bfloat16
  bert-gamma       pytorch_model.bin with the LayerNorm parameters named *.gamma / *.beta, as
                   bert-base-uncased's own file has them
From tests/data/timm-vit-micro and tests/data/ved-trocr-vit (write_family_bins):
  timm-vit-zip     a timm folder as the Hub often has them: config.json and pytorch_model.bin
  ved-trocr-zip    a VisionEncoderDecoder as pytorch_model.bin, with the encoder's pooler the
                   model does not hold (the trainer keeps it on save)
and hostile or broken state dicts in pickles/ (each refused by the reader, named in the test),
and the seeds of tests/fuzz/fuzz_torch_pickle.c.
The folders' other files are the source folder's. Run from the project root:
  python3 tools/torch_bin_fixtures.py
Run again, the legacy files' bytes differ (torch names their storages by object id) but not
their tensors. Nothing here is read by vit at run time; the test compares the loaded weights bit for bit with
the safetensors folder (and, for f16/bf16, with vit convert's rounding of it: torch's .half() and
.bfloat16() round to nearest even as vit does).
"""
import collections
import io
import json
import os
import pickle
import shutil
import struct
import zipfile

import torch

OUT = "tests/data/torch-bin"
STAMP = (2020, 1, 1, 0, 0, 0)  # the zips this writes itself come out the same each run


def read_safetensors(path):
    """A safetensors file as an OrderedDict of float32 tensors (F32 only: the micro folders')."""
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8 : 8 + n])
    out = collections.OrderedDict()
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", name
        a, b = info["data_offsets"]
        buf = bytearray(data[8 + n + a : 8 + n + b])
        out[name] = torch.frombuffer(buf, dtype=torch.float32).reshape(info["shape"]).clone()
    return out


def write_safetensors(path, tensors):
    """F32 tensors as safetensors with {"format": "pt"} (the layout safetensors.torch writes)."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        b = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def shards(tensors, max_bytes):
    """save_pretrained's split: tensors in order, a new shard when the next would pass max_bytes."""
    out, current, size = [], collections.OrderedDict(), 0
    for name, t in tensors.items():
        n = t.numel() * t.element_size()
        if current and size + n > max_bytes:
            out.append(current)
            current, size = collections.OrderedDict(), 0
        current[name] = t
        size += n
    out.append(current)
    return out


def folder(name, source, files=("config.json", "preprocessor_config.json")):
    path = os.path.join(OUT, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    for f in files:
        if os.path.exists(os.path.join(source, f)):
            shutil.copy(os.path.join(source, f), path)
    return path


def write_sharded(path, tensors, kind):
    parts = shards(tensors, 20000)
    ext = "safetensors" if kind == "st" else "bin"
    prefix = "model" if kind == "st" else "pytorch_model"
    weight_map, total = {}, 0
    for i, part in enumerate(parts):
        file = f"{prefix}-{i + 1:05d}-of-{len(parts):05d}.{ext}"
        if kind == "st":
            write_safetensors(os.path.join(path, file), part)
        else:  # both torch formats, one shard each way
            torch.save(part, os.path.join(path, file), _use_new_zipfile_serialization=i % 2 == 0)
        for n, t in part.items():
            weight_map[n] = file
            total += t.numel() * t.element_size()
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    with open(os.path.join(path, f"{prefix}.{ext}.index.json"), "w") as f:
        json.dump(index, f, indent=2, sort_keys=True)
        f.write("\n")


def strided(tensors, dtype):
    """tensors as dtype; query weights stored as transposed views (non-contiguous, an offset into
    a larger storage), each layer's key weight and bias as two views of one shared storage."""
    out = collections.OrderedDict()
    for name, t in tensors.items():
        out[name] = t.to(dtype)
    for name in list(out):
        if name.endswith("query.weight"):
            big = torch.zeros(out[name].shape[1] + 1, out[name].shape[0], dtype=dtype)
            big[1:] = out[name].t()
            out[name] = big[1:].t()  # values unchanged, strides (1, rows), storage offset
            assert not out[name].is_contiguous()
        if name.endswith("key.weight"):
            bias_name = name[: -len("weight")] + "bias"
            w, b = out[name], out[bias_name]
            flat = torch.cat([w.reshape(-1), b])
            out[name] = flat[: w.numel()].view(w.shape)
            out[bias_name] = flat[w.numel() :]
    return out


def hostile_pickle(module, name, arg):
    """protocol 2: module.name(arg) (what `os.system('...')` pickles as), inside a dict."""
    body = b"\x80\x02}q\x00X\x01\x00\x00\x00aq\x01c" + f"{module}\n{name}\n".encode()
    body += b"X" + struct.pack("<I", len(arg)) + arg.encode() + b"\x85R" + b"s."
    return body


def torch_zip(path, pkl):
    """A zip laid out as torch.save's: archive/data.pkl stored, archive/version."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr(zipfile.ZipInfo("archive/data.pkl", STAMP), pkl)
        z.writestr(zipfile.ZipInfo("archive/version", STAMP), "3\n")


def write_pickles():
    path = os.path.join(OUT, "pickles")
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    torch_zip(os.path.join(path, "os-system.bin"), hostile_pickle("os", "system", "touch /tmp/x"))
    torch_zip(os.path.join(path, "builtins-eval.bin"), hostile_pickle("builtins", "eval", "1+1"))
    torch_zip(os.path.join(path, "unknown-global.bin"), hostile_pickle("numpy.core.multiarray", "_reconstruct", "x"))
    # STACK_GLOBAL (protocol 4) naming posix.system
    body = b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00}\x8c\x01a\x8c\x05posix\x8c\x06system\x93\x8c\x02id\x85Rs."
    torch_zip(os.path.join(path, "stack-global.bin"), body)
    with open(os.path.join(path, "legacy-os-system.bin"), "wb") as f:  # the legacy format's header
        f.write(pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2))
        f.write(pickle.dumps(1001, protocol=2))
        f.write(pickle.dumps({"protocol_version": 1001, "little_endian": True}, protocol=2))
        f.write(hostile_pickle("os", "system", "touch /tmp/x"))
    # a state dict holding something other than tensors: an int
    buf = io.BytesIO()
    torch.save({"a": torch.ones(2), "epoch": 3}, buf)
    with open(os.path.join(path, "not-a-tensor.bin"), "wb") as f:
        f.write(buf.getvalue())
    # compressed entries (a zip re-packed with deflate)
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    with zipfile.ZipFile(os.path.join(path, "deflated.bin"), "w", compression=zipfile.ZIP_DEFLATED) as z:
        for info in src.infolist():
            z.writestr(zipfile.ZipInfo(info.filename, STAMP), src.read(info.filename),
                       compress_type=zipfile.ZIP_DEFLATED)
    # a complex64 tensor: a storage class that is not read
    buf = io.BytesIO()
    torch.save({"a": torch.ones(2, dtype=torch.complex64)}, buf)
    with open(os.path.join(path, "complex.bin"), "wb") as f:
        f.write(buf.getvalue())


def write_fuzz_seeds():
    """tests/fuzz/corpus/fuzz_torch_pickle: small state dicts in both formats (strided, shared,
    float16, bfloat16, int64), a module's state_dict (its _metadata: BUILD), a protocol-4 pickle
    of plain values, a bare data.pkl, and the hostile files."""
    d = "tests/fuzz/corpus/fuzz_torch_pickle"
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    sd = collections.OrderedDict()
    sd["a.weight"] = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    sd["a.bias"] = sd["a.weight"].t()
    sd["b"] = torch.arange(4, dtype=torch.float16)
    sd["c"] = torch.arange(3, dtype=torch.int64)
    big = torch.arange(8, dtype=torch.bfloat16)
    sd["d"], sd["e"] = big[2:6], big[1:3]
    torch.save(sd, f"{d}/zip.bin")
    torch.save(sd, f"{d}/legacy.bin", _use_new_zipfile_serialization=False)
    z = zipfile.ZipFile(f"{d}/zip.bin")
    with open(f"{d}/data.pkl", "wb") as f:
        f.write(z.read([n for n in z.namelist() if n.endswith("data.pkl")][0]))
    m = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.LayerNorm(2))
    torch.save(m.state_dict(), f"{d}/module.bin")
    with open(f"{d}/proto4.pkl", "wb") as f:
        f.write(pickle.dumps({"a": [1, 2.5, None, True, "x", (1,), -7, 2**70]}, protocol=4))
    for f in sorted(os.listdir(os.path.join(OUT, "pickles"))):
        shutil.copy(os.path.join(OUT, "pickles", f), f"{d}/hostile-{f}")


def write_family_bins():
    """The folders of families beyond ViT and BERT in .bin form (their other files copied)."""
    timm_src, ved_src = "tests/data/timm-vit-micro", "tests/data/ved-trocr-vit"
    timm = read_safetensors(os.path.join(timm_src, "model.safetensors"))
    torch.save(timm, os.path.join(folder("timm-vit-zip", timm_src, ("config.json",)), "pytorch_model.bin"))
    ved = read_safetensors(os.path.join(ved_src, "model.safetensors"))
    assert "encoder.pooler.dense.weight" in ved
    files = ("config.json", "generation_config.json", "preprocessor_config.json", "merges.txt", "vocab.json",
             "special_tokens_map.json", "tokenizer_config.json")
    torch.save(ved, os.path.join(folder("ved-trocr-zip", ved_src, files), "pytorch_model.bin"))


def main():
    torch.manual_seed(0)
    vit_src, bert_src = "tests/data/vit-base-micro", "tests/data/bert-base-micro"
    vit = read_safetensors(os.path.join(vit_src, "model.safetensors"))
    bert = read_safetensors(os.path.join(bert_src, "model.safetensors"))
    os.makedirs(OUT, exist_ok=True)
    torch.save(vit, os.path.join(folder("vit-zip", vit_src), "pytorch_model.bin"))
    torch.save(vit, os.path.join(folder("vit-legacy", vit_src), "pytorch_model.bin"),
               _use_new_zipfile_serialization=False)
    write_sharded(folder("vit-shards", vit_src), vit, "st")
    write_sharded(folder("vit-bin-shards", vit_src), vit, "bin")
    torch.save(strided(vit, torch.float16), os.path.join(folder("vit-f16-strided", vit_src), "pytorch_model.bin"))
    torch.save(collections.OrderedDict((n, t.bfloat16()) for n, t in vit.items()),
               os.path.join(folder("vit-bf16", vit_src), "pytorch_model.bin"))
    renamed = collections.OrderedDict()
    for n, t in bert.items():
        n = n.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
        renamed[n] = t
    assert any(n.endswith("LayerNorm.gamma") for n in renamed)
    bert_dir = folder("bert-gamma", bert_src, ("config.json", "tokenizer_config.json", "vocab.txt"))
    torch.save(renamed, os.path.join(bert_dir, "pytorch_model.bin"), _use_new_zipfile_serialization=False)
    write_family_bins()
    write_pickles()
    write_fuzz_seeds()


if __name__ == "__main__":
    main()
