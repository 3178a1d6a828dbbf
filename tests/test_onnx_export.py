#!/usr/bin/env python3
"""gpunet-convert --onnx: ONNX Runtime (from PyPI, in a venv made once in a cache directory,
tools/runtime_venv.py) runs the exported model and gives our logits.

  test_onnx_export.py CONVERT RUN DATA errors   the tool's refusals (no venv needed)
  test_onnx_export.py CONVERT RUN DATA fixtures the three fixture models, their checkpoints
  test_onnx_export.py CONVERT RUN DATA full     the seven GPUNets, seeded random weights

Exit 77 (skipped) when the build has no ONNX export or PyPI cannot be reached to make the
venv; prints "N passed, N failed"."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import runtime_venv  # noqa: E402

convert, run, data, mode = sys.argv[1:5]
passed = failed = 0
TOL = 1e-4   # max |ours - ORT| over max |ours|: float32 summation order only

ORT_SCRIPT = r"""
import sys, numpy as np, onnxruntime as ort
model, inp, out, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
o = ort.SessionOptions(); o.intra_op_num_threads = 2
s = ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])
shape = s.get_inputs()[0].shape
x = np.fromfile(inp, dtype=np.float32).reshape(n, shape[1], shape[2], shape[3])
names = [i.name for i in s.get_inputs()] + [i.name for i in s.get_outputs()]
assert names == ["input", "logits"], names
s.run(None, {"input": x})[0].astype(np.float32).tofile(out)
"""


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAILED:", what, file=sys.stderr)


def floats(path):
    from array import array
    a = array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    return a


def sh(*args):
    return subprocess.run(list(args), capture_output=True, text=True)


def finish():
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


probe = sh(convert, "--onnx", os.devnull, "--model", os.path.join(data, "fixtures", "tiny-a.json"))
if "no ONNX export" in probe.stderr:
    print("skipped: this build of gpunet-convert has no ONNX export (protobuf-c missing)")
    sys.exit(77)

if mode == "errors":
    tiny = os.path.join(data, "fixtures", "tiny-a.json")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "m.onnx")
        for args, says in (
                (["--onnx", out], "needs --model ARCH"),
                (["--onnx", out, "--model", tiny, "--output", out + ".st"], "needs --model ARCH"),
                (["--onnx", out, "--model", tiny, "--random", tiny], "needs --model ARCH"),
                (["--model", tiny, "--output", out], "--model is for --onnx"),
                (["--onnx", out, "--model", "gpunet-9"], "gpunet-9"),
                (["--onnx", out, "--model", tiny, "--checkpoint", os.path.join(tmp, "none.pth")],
                 "none.pth"),
                (["--onnx", out, "--model", tiny, "--checkpoint",
                  os.path.join(data, "fixtures", "tiny-d", "tiny-d.pth.tar")], "does not match"),
                (["--onnx", os.path.join(tmp, "no", "dir", "m.onnx"), "--model", tiny],
                 "cannot write")):
            p = sh(convert, *args)
            check(p.returncode != 0, "%s: exit 0" % args)
            check(says in p.stderr, "%s: stderr %r does not say %r" % (args, p.stderr, says))
            check("Traceback" not in p.stderr and p.returncode in (1, 2),
                  "%s: exit %d" % (args, p.returncode))
        check(not os.path.exists(out), "a refused export left %s" % out)
    finish()

try:
    py = runtime_venv.ensure_venv(["onnxruntime", "numpy"])
except runtime_venv.Unreachable as e:
    print("skipped: %s" % e)
    sys.exit(77)

with tempfile.TemporaryDirectory() as tmp:
    script = os.path.join(tmp, "ort_run.py")
    with open(script, "w") as f:
        f.write(ORT_SCRIPT)
    if mode == "fixtures":
        cases = []
        for name in ("tiny-a", "tiny-d", "tiny-dl"):
            fx = os.path.join(data, "fixtures", name)
            cases.append((name, os.path.join(data, "fixtures", name + ".json"),
                          os.path.join(fx, name + ".pth.tar"), os.path.join(fx, "input.bin"), 2))
    else:
        import random
        cases = []
        for name, res in (("gpunet-0", 320), ("gpunet-1", 288), ("gpunet-2", 384),
                          ("gpunet-p0", 224), ("gpunet-p1", 224), ("gpunet-d1", 456),
                          ("gpunet-d2", 528)):
            ck = os.path.join(tmp, name + ".safetensors")
            p = sh(convert, "--random", name, "--output", ck)
            check(p.returncode == 0, "%s: random weights: %s" % (name, p.stderr))
            inp = os.path.join(tmp, name + ".in")
            rnd = random.Random(7)
            from array import array
            array("f", (rnd.gauss(0, 1) for _ in range(3 * res * res))).tofile(open(inp, "wb"))
            cases.append((name, name, ck, inp, 1))
    for name, arch, ck, inp, n in cases:
        onnx = os.path.join(tmp, name + ".onnx")
        ours, theirs = os.path.join(tmp, name + ".ours"), os.path.join(tmp, name + ".ort")
        p = sh(convert, "--onnx", onnx, "--model", arch, "--checkpoint", ck)
        check(p.returncode == 0 and "opset 13" in p.stdout, "%s: export: %s" % (name, p.stderr))
        p = sh(run, "--model", arch, "--checkpoint", ck, "--input", inp, "--batch", str(n),
               "--output", ours, "--backend", "cpu")
        check(p.returncode == 0, "%s: gpunet-run: %s" % (name, p.stderr))
        p = sh(py, script, onnx, inp, theirs, str(n))
        check(p.returncode == 0, "%s: ONNX Runtime: %s" % (name, p.stderr[-1500:]))
        if failed:
            continue
        a, b = floats(ours), floats(theirs)
        check(len(a) == len(b) and len(a) > 0, "%s: %d logits against %d" % (name, len(a), len(b)))
        scale = max(abs(v) for v in a)
        err = max(abs(x - y) for x, y in zip(a, b)) / scale
        check(err <= TOL, "%s: max |ours - ORT| / max |ours| = %.3g > %g" % (name, err, TOL))
        print("%s: ONNX Runtime against ours: relative error %.3g over %d logits"
              % (name, err, len(a)))
finish()
