#!/usr/bin/env python3
"""make_seeds.py OUTDIR: small, valid seed files for the fuzzers (scripts/fuzz.sh).

The fixtures' checkpoints are 0.15-1.1 MB, mostly tensor bytes, which makes each fuzzer
execution slow and most mutations land in data nobody parses. These are a few hundred
bytes with the same structure: torch.save-style zip archives (a timm training dict with
state_dict_ema, state_dict and an argparse.Namespace; a bare state dict), their pickles,
and safetensors files.  Written with the standard library only (stand-in torch classes
pickled by name), no torch needed.
"""
import collections
import io
import json
import os
import pickle
import struct
import sys
import types
import zipfile
import zlib

torch = types.ModuleType("torch")
torch_utils = types.ModuleType("torch._utils")
argparse_mod = sys.modules.get("argparse") or types.ModuleType("argparse")
sys.modules["torch"] = torch
sys.modules["torch._utils"] = torch_utils


def _storage_class(name):
    cls = type(name, (), {})
    cls.__module__ = "torch"
    setattr(torch, name, cls)
    return cls


FloatStorage = _storage_class("FloatStorage")
HalfStorage = _storage_class("HalfStorage")
LongStorage = _storage_class("LongStorage")


def _rebuild_tensor_v2(*args):
    raise RuntimeError("never called")


_rebuild_tensor_v2.__module__ = "torch._utils"
torch_utils._rebuild_tensor_v2 = _rebuild_tensor_v2
torch._utils = torch_utils


class Storage:
    def __init__(self, key, cls, data, numel):
        self.key, self.cls, self.data, self.numel = key, cls, data, numel


class Tensor:
    def __init__(self, storage, shape, offset=0):
        self.storage, self.shape, self.offset = storage, tuple(shape), offset

    def __reduce__(self):
        stride, s = [], 1
        for d in reversed(self.shape):
            stride.insert(0, s)
            s *= d
        return (_rebuild_tensor_v2, (self.storage, self.offset, self.shape, tuple(stride),
                                     False, collections.OrderedDict()))


class TorchPickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, Storage):
            return ("storage", obj.cls, obj.key, "cpu", obj.numel)
        return None


def state_dict(storages):
    def f32(key, values):
        st = Storage(key, FloatStorage, struct.pack("<%df" % len(values), *values), len(values))
        storages.append(st)
        return st
    w = f32("0", [0.5, -1.0, 2.0, 0.25, 1.5, -0.75])
    b = f32("1", [0.1, 0.2])
    n = Storage("2", LongStorage, struct.pack("<q", 7), 1)
    storages.append(n)
    h = Storage("3", HalfStorage, struct.pack("<2H", 0x3C00, 0xC000), 2)
    storages.append(h)
    return collections.OrderedDict([
        ("module.conv.weight", Tensor(w, [2, 3, 1, 1])),
        ("module.conv.bias", Tensor(b, [2])),
        ("module.bn.num_batches_tracked", Tensor(n, [])),
        ("module.fc.weight", Tensor(h, [1, 2])),
        ("module.view", Tensor(w, [2, 2], offset=2)),
    ])


def write_pth(path, obj_fn, prefix="archive"):
    storages = []
    obj = obj_fn(storages)
    buf = io.BytesIO()
    TorchPickler(buf, protocol=2).dump(obj)
    pkl = buf.getvalue()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr(prefix + "/data.pkl", pkl)
        z.writestr(prefix + "/byteorder", b"little")
        for st in storages:
            z.writestr(prefix + "/data/" + st.key, st.data)
        z.writestr(prefix + "/version", b"3\n")
    return pkl


def training_dict(storages):
    Namespace = type("Namespace", (), {})
    Namespace.__module__ = "argparse"
    argparse_mod.Namespace = Namespace
    sys.modules["argparse"] = argparse_mod
    args = Namespace()
    args.model = "gpunet"
    args.lr = 0.1
    sd = state_dict(storages)
    return {"epoch": 3, "arch": "gpunet", "state_dict": sd, "state_dict_ema": sd,
            "optimizer": {"state": {}, "param_groups": [{"lr": 0.1, "params": [0, 1]}]},
            "args": args, "version": 2, "set": {1, 2}, "bytes": b"\x00\x01", "none": None,
            "flag": True, "big": 1 << 70, "neg": -5}


def safetensors(path, tensors, metadata=None, crc=False):
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = dict(metadata)
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if crc:   # as gpunet_safetensors_write records it
        header.setdefault("__metadata__", {})["gpunet_data_crc32"] = "%08x" % zlib.crc32(data)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    pkl = write_pth(os.path.join(out, "small-train.pth.tar"), training_dict)
    with open(os.path.join(out, "small-train.pkl"), "wb") as f:
        f.write(pkl)
    pkl = write_pth(os.path.join(out, "small-bare.pth"), state_dict, prefix="small-bare")
    with open(os.path.join(out, "small-bare.pkl"), "wb") as f:
        f.write(pkl)
    safetensors(os.path.join(out, "small.safetensors"), [
        ("conv.weight", "F32", [2, 3, 1, 1], struct.pack("<6f", *range(6))),
        ("conv.bias", "F16", [2], struct.pack("<2H", 0x3C00, 0x4000)),
        ("bn.num_batches_tracked", "I64", [], struct.pack("<q", 1)),
        ("empty", "BF16", [0, 4], b""),
    ], metadata={"format": "pt"})
    safetensors(os.path.join(out, "small-crc.safetensors"), [
        ("conv.weight", "F32", [2, 3, 1, 1], struct.pack("<6f", *range(6))),
        ("conv.bias", "F16", [2], struct.pack("<2H", 0x3C00, 0x4000)),
    ], crc=True)


if __name__ == "__main__":
    main()
