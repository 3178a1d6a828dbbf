#!/usr/bin/env python3
"""gpunet-run end to end: fixture inputs give the golden logits file and top-5 printout,
and bad invocations fail with a sentence on stderr and a non-zero exit code."""
import json, os, subprocess, sys, tempfile
from array import array

run, data = sys.argv[1], sys.argv[2]
passed = failed = 0

def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAILED:", what, file=sys.stderr)

def floats(path):
    a = array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    return a

with tempfile.TemporaryDirectory() as tmp:
    for name, classes in (("tiny-a", 16), ("tiny-d", 10), ("tiny-dl", 12)):
        fx = os.path.join(data, "fixtures", name)
        out = os.path.join(tmp, name + ".bin")
        p = subprocess.run([run, "--model", os.path.join(data, "fixtures", name + ".json"),
                            "--checkpoint", os.path.join(fx, name + ".pth.tar"),
                            "--input", os.path.join(fx, "input.bin"), "--batch", "2",
                            "--output", out, "--top-k", "5", "--backend", "cpu"],
                           capture_output=True, text=True)
        check(p.returncode == 0, f"{name}: exit {p.returncode}: {p.stderr}")
        if p.returncode:
            continue
        got, ref = floats(out), floats(os.path.join(fx, "logits.bin"))
        check(len(got) == 2 * classes, f"{name}: {len(got)} logits")
        scale = max(1.0, max(abs(x) for x in ref))
        err = max(abs(a - b) for a, b in zip(got, ref)) / scale
        check(err <= 1e-4, f"{name}: relative error {err}")
        golden = json.load(open(os.path.join(fx, "golden.json")))["top5_golden"]
        lines = [l for l in p.stdout.splitlines() if l.startswith("image ")]
        check(len(lines) == 2, f"{name}: printout {p.stdout!r}")
        for i, line in enumerate(lines):
            ids = [int(tok.split(":")[0]) for tok in line.split()[2:7]]
            want = golden[i] if isinstance(golden, list) else golden[f"image{i}"]
            check(ids == want, f"{name} image {i}: top-5 {ids}, golden {want}")

    a_json = os.path.join(data, "fixtures", "tiny-a.json")
    a_ckpt = os.path.join(data, "fixtures", "tiny-a", "tiny-a.pth.tar")
    a_in = os.path.join(data, "fixtures", "tiny-a", "input.bin")
    bad = [
        ([run, "--model", a_json, "--checkpoint", "/nonexistent.pth", "--input", a_in, "--batch", "2"],
         "/nonexistent.pth"),
        ([run, "--model", a_json, "--checkpoint", a_ckpt, "--input", a_in, "--batch", "3"],
         "--batch"),
        ([run, "--model", "gpunet-42", "--checkpoint", a_ckpt, "--input", a_in], "gpunet-0"),
        ([run, "--model", a_json, "--checkpoint", a_ckpt], "--input"),
        ([run, "--model", a_json, "--checkpoint", a_ckpt, "--input", a_in, "--top-k", "x"], "--top-k"),
        ([run, "--model", a_json, "--checkpoint", a_ckpt, "--input", a_in, "--batch", "2",
          "--backend", "cuda"], "CUDA"),
    ]
    for argv, needle in bad:
        p = subprocess.run(argv, capture_output=True, text=True)
        check(p.returncode != 0 and needle in p.stderr,
              f"{argv[1:]}: exit {p.returncode}, stderr {p.stderr!r} lacks {needle!r}")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
