#!/usr/bin/env python3
"""gpunet-run end to end: fixture inputs give the golden logits file and top-5 printout
(on the cpu and cpu-ref backends),
and bad invocations fail with a sentence on stderr and a non-zero exit code; gpunet-convert
writes safetensors (from a checkpoint, or random weights) that gpunet-run loads."""
import json, os, subprocess, sys, tempfile
from array import array

run, data, convert = sys.argv[1], sys.argv[2], sys.argv[3]
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
    for name, classes, backend in (("tiny-a", 16, "cpu"), ("tiny-d", 10, "cpu"),
                                   ("tiny-dl", 12, "cpu"), ("tiny-a", 16, "cpu-ref"),
                                   ("tiny-dl", 12, "cpu-ref")):
        fx = os.path.join(data, "fixtures", name)
        out = os.path.join(tmp, name + ".bin")
        p = subprocess.run([run, "--model", os.path.join(data, "fixtures", name + ".json"),
                            "--checkpoint", os.path.join(fx, name + ".pth.tar"),
                            "--input", os.path.join(fx, "input.bin"), "--batch", "2",
                            "--output", out, "--top-k", "5", "--backend", backend],
                           capture_output=True, text=True)
        check(p.returncode == 0, f"{name} on {backend}: exit {p.returncode}: {p.stderr}")
        if p.returncode:
            continue
        got, ref = floats(out), floats(os.path.join(fx, "logits.bin"))
        check(len(got) == 2 * classes, f"{name}: {len(got)} logits")
        scale = max(1.0, max(abs(x) for x in ref))
        err = max(abs(a - b) for a, b in zip(got, ref)) / scale
        check(err <= 1e-4, f"{name} on {backend}: relative error {err}")
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
        ([run, "--model", a_json, "--checkpoint", a_ckpt, "--input", a_in, "--batch", "2",
          "--backend", "gpu"], "auto, cpu, cuda, cpu-ref"),
    ]
    for argv, needle in bad:
        p = subprocess.run(argv, capture_output=True, text=True)
        check(p.returncode != 0 and needle in p.stderr,
              f"{argv[1:]}: exit {p.returncode}, stderr {p.stderr!r} lacks {needle!r}")

    # gpunet-convert: the checkpoint as safetensors gives the same logits file
    st = os.path.join(tmp, "tiny-a.safetensors")
    p = subprocess.run([convert, "--checkpoint", a_ckpt, "--output", st], capture_output=True, text=True)
    check(p.returncode == 0 and "state_dict_ema" in p.stdout, f"convert: {p.stdout} {p.stderr}")
    outs = []
    for w in (a_ckpt, st):
        out = os.path.join(tmp, "conv.bin")
        p = subprocess.run([run, "--model", a_json, "--checkpoint", w, "--input", a_in, "--batch", "2",
                            "--output", out], capture_output=True, text=True)
        check(p.returncode == 0, f"run with {w}: {p.stderr}")
        outs.append(open(out, "rb").read() if p.returncode == 0 else b"")
    check(outs[0] == outs[1] and outs[0], "safetensors logits differ from the checkpoint's")
    # random weights for an architecture load as a checkpoint of that architecture
    rnd = os.path.join(tmp, "random.safetensors")
    p = subprocess.run([convert, "--random", a_json, "--seed", "3", "--output", rnd],
                       capture_output=True, text=True)
    check(p.returncode == 0, f"convert --random: {p.stderr}")
    # a seed strtoull would take as another number ("-1" as 2^64 - 1) is refused
    for bad in ("-1", "+3", " 3", "18446744073709551616", "abc"):
        p = subprocess.run([convert, "--random", a_json, "--seed", bad, "--output",
                            os.path.join(tmp, "bad.safetensors")], capture_output=True, text=True)
        check(p.returncode == 2 and "--seed needs a whole number" in p.stderr
              and not os.path.exists(os.path.join(tmp, "bad.safetensors")),
              f"convert --seed {bad!r}: {p.returncode} {p.stderr}")
    p = subprocess.run([run, "--model", a_json, "--checkpoint", rnd, "--input", a_in, "--batch", "2"],
                       capture_output=True, text=True)
    check(p.returncode == 0 and p.stdout.count("image ") == 2, f"run random: {p.stdout} {p.stderr}")
    p = subprocess.run([run, "--model", os.path.join(data, "fixtures", "tiny-d.json"), "--checkpoint",
                        rnd, "--input", a_in], capture_output=True, text=True)
    check(p.returncode != 0 and "does not match" in p.stderr, f"random tiny-a as tiny-d: {p.stderr}")
    p = subprocess.run([convert, "--checkpoint", "/nonexistent.pth", "--output", rnd],
                       capture_output=True, text=True)
    check(p.returncode == 1 and "/nonexistent.pth" in p.stderr, f"convert missing: {p.stderr}")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
