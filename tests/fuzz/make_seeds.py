#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/): small valid inputs of
every format plus a few near misses, so the fuzzers start inside the formats. Deterministic; rerun
after changing it and commit the files. Inputs the fuzzers found (regressions) are committed beside
them by hand and are not written here."""
import gzip
import json
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def idx(dims, values):
    return struct.pack(">I", 0x800 + len(dims)) + b"".join(struct.pack(">I", n) for n in dims) + bytes(values)


def safetensors(tensors, metadata):
    """tensors: name -> (dtype, shape, raw bytes); the reference layout (metadata first, compact JSON,
    header padded with spaces to 8 bytes)."""
    header, offset, blobs = {}, 0, []
    if metadata:
        header["__metadata__"] = metadata
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def f32(*values):
    return struct.pack("<%df" % len(values), *values)


labels = idx([3], [0, 1, 9])
images = idx([2, 2, 2], [0, 255, 7, 8, 1, 2, 3, 4])
put("fuzz_idx", "labels.idx1", labels)
put("fuzz_idx", "images.idx3", images)
put("fuzz_idx", "labels.idx1.gz", gzip.compress(labels, mtime=0))
put("fuzz_idx", "images.idx3.gz", gzip.compress(images, mtime=0))
put("fuzz_idx", "truncated.idx3", images[:-3])
put("fuzz_idx_gz", "labels.idx1", labels)
put("fuzz_idx_gz", "images.idx3", images)
put("fuzz_idx_gz", "matrix.idx2", idx([2, 3], range(6)))

record10 = lambda label: bytes([label]) + bytes((i * 7 + label) % 256 for i in range(3072))
record100 = lambda coarse, fine: bytes([coarse, fine]) + bytes((i * 5 + fine) % 256 for i in range(3072))
put("fuzz_cifar", "cifar10-two-records", b"\x00" + record10(3) + record10(9))
put("fuzz_cifar", "cifar100-one-record", b"\x01" + record100(19, 99))
put("fuzz_cifar", "cifar100-coarse", b"\x03" + record100(4, 42))
put("fuzz_cifar", "cifar10-short", b"\x00" + record10(1)[:100])

weights = {"fc.weight": ("F32", [2, 2], f32(1, -2, 3.5, 0)), "fc.bias": ("F32", [2], f32(0.25, -1)),
           "steps": ("I64", [1], struct.pack("<q", 7)), "half": ("F16", [3], struct.pack("<3e", 1, -0.5, 65504)),
           "mask": ("BOOL", [2], b"\x01\x00"), "empty": ("F32", [0, 3], b"")}
put("fuzz_safetensors", "weights.safetensors", safetensors(weights, {"format": "pt"}))
put("fuzz_safetensors", "no-metadata.safetensors", safetensors({"x": ("BF16", [2], b"\x80\x3f\x00\x40")}, None))
put("fuzz_safetensors", "header-only.safetensors", safetensors({}, {"a": "b"}))

checkpoint = {"model.fc.weight": ("F32", [2, 2], f32(1, 2, 3, 4)), "model.fc.bias": ("F32", [2], f32(0, 0)),
              "optim.state.0.momentum_buffer": ("F32", [2, 2], f32(0.5, 0.5, 0.5, 0.5)),
              "rng": ("I64", [2], struct.pack("<2q", 1, -1))}
meta = {"model": '"mlp"', "dataset": '"fashion-mnist"', "step": "12", "loader_epoch": "1", "loader_batch": "3",
        "rng": "[1,2]", "history": '[{"epoch":1,"train_loss":0.5}]', "scaler": '{"scale":65536.0}',
        "optim": '{"param_groups":[{"lr":0.05,"momentum":0.9,"params":[0,1]}],"state":{"0":{"step":3}}}',
        "format": "pt"}
put("fuzz_checkpoint", "train.safetensors", safetensors(checkpoint, meta))
put("fuzz_checkpoint", "weights-only.safetensors", safetensors({"fc.weight": ("F32", [1], f32(1))}, None))

for name, text in {"object": '{"a":1,"b":[true,false,null],"c":{"d":-1.5e-3,"e":"x\\u00e9\\n"}}',
                   "numbers": "[0,-0,1e308,-9223372036854775808,9223372036854775807,18446744073709551615,0.1]",
                   "nested": "[[[[{\"k\":[]}]]]]", "string": '"\\ud83d\\ude00 \\" \\\\ \\/ \\b\\f\\r\\t"',
                   "bad": '{"a":1,}'}.items():
    put("fuzz_json", name + ".json", text.encode())

flags = [["--model", "lenet", "--epochs", "2", "--batch-size", "64", "--lr", "0.1", "--amp", "fp16"],
         ["--dataset=cifar10", "--model=cnn", "--optimizer=adamw", "--weight-decay=0.01", "--seed=7"],
         ["--workers", "4", "--limit-train", "100", "--max-steps", "5", "--nan-policy", "skip", "--no-progress",
          "--detect-anomaly", "--device", "cpu", "--momentum", "0"],
         ["--checkpoint", "ck.safetensors", "--resume", "ck.safetensors", "--metrics", "m.csv", "--json", "s.json",
          "--precision-report", "p.txt", "--data", "data/x"],
         ["--batch-size", "9223372036854775807"], ["--lr", "nan"], ["--help"]]
for i, args in enumerate(flags):
    put("fuzz_train_flags", "args%d" % i, b"\0".join(a.encode() for a in args))
