#!/usr/bin/env python3
"""test_pytorch_baseline.py: tools/pytorch_baseline.py builds GPUNet with torch.nn the way
NVIDIA's builder does.  Checked on the CPU: the three fixture models (non-distilled tiny-a,
distilled tiny-d, distilled with head_large tiny-dl) load their checkpoints with strict
module names and give the fixtures' logits (made with NVIDIA's own code) within 1e-4 of the
largest; the seven architectures it reads from models/zoo.c have the parameter counts of
docs/models.md.  Exit 77 without torch (not a dependency of the project).
Usage: test_pytorch_baseline.py SOURCE_ROOT"""
import importlib.util
import json
import os
import re
import sys

root = sys.argv[1]
try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"SKIP: {e} (the baseline script needs torch and numpy)")
    sys.exit(77)

spec = importlib.util.spec_from_file_location(
    "pytorch_baseline", os.path.join(root, "tools", "pytorch_baseline.py"))
pb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pb)
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


fixtures = os.path.join(root, "tests", "data", "fixtures")
for name in ("tiny-a", "tiny-d", "tiny-dl"):
    with open(os.path.join(fixtures, name + ".json")) as f:
        config = json.load(f)
    with open(os.path.join(fixtures, name, "golden.json")) as f:
        golden = json.load(f)
    model, res = pb.build(config)
    ckpt = torch.load(os.path.join(fixtures, name, name + ".pth.tar"), map_location="cpu")
    sd = ckpt.get("state_dict_ema") or ckpt["state_dict"]
    sd = {k[len("module."):] if k.startswith("module.") else k: v for k, v in sd.items()}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    check(not missing and not unexpected,
          f"{name}: NVIDIA's names: missing {missing[:3]}, unexpected {unexpected[:3]}")
    n, classes = golden["batch"], golden["num_classes"]
    x = np.fromfile(os.path.join(fixtures, name, "input.bin"), dtype="<f4").reshape(n, 3, res, res)
    ref = np.fromfile(os.path.join(fixtures, name, "logits.bin"), dtype="<f4").reshape(n, classes)
    with torch.no_grad():
        y = model(torch.from_numpy(x.copy())).numpy()
    err = float(np.abs(y - ref).max() / max(1.0, np.abs(ref).max()))
    check(err < 1e-4, f"{name}: logits within 1e-4 of the fixture's (NVIDIA's code): {err:.2e}")
    print(f"{name}: logits rel err {err:.2e}")

# the seven built-in architectures, read from models/zoo.c, against docs/models.md
docs = open(os.path.join(root, "docs", "models.md"), encoding="utf-8").read()
expected = {m.group(1): int(m.group(2).replace(",", ""))
            for m in re.finditer(r"^\| (gpunet-\w+) \| [^|]+\| \d+ \| [\d.]+ \| ([\d,]+) \|", docs, re.M)}
check(len(expected) == 7, f"docs/models.md lists 7 parameter counts: {expected}")
zoo = pb.zoo_configs(os.path.join(root, "models", "zoo.c"))
check(sorted(zoo) == sorted(pb.CONFIGS), f"models/zoo.c gives the seven models: {sorted(zoo)}")
for m, config in zoo.items():
    model, res = pb.build(config)
    count = sum(p.numel() for p in model.parameters())
    check(count == expected.get(m), f"{m}: {count} parameters, docs/models.md {expected.get(m)}")

# the command line: --self-check on one model, and a bad model name
import subprocess
cmd = [sys.executable, os.path.join(root, "tools", "pytorch_baseline.py")]
p = subprocess.run(cmd + ["--self-check", "--models", "gpunet-p0"], capture_output=True, text=True)
check(p.returncode == 0 and "gpunet-p0 params=22815080" in p.stdout and p.stdout.rstrip().endswith("ok"),
      f"--self-check: {p.returncode} {p.stdout!r} {p.stderr[-300:]!r}")
p = subprocess.run(cmd + ["--models", "gpunet-9"], capture_output=True, text=True)
check(p.returncode == 2 and "unknown model" in p.stdout, f"unknown model: exit 2: {p.stdout!r}")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
