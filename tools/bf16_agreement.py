#!/usr/bin/python3
"""bf16_agreement.py: how often bf16 keeps f32's answer, ours against OpenVINO's, on the
same input tensors and the same weights.

For each model: seeded random weights (gpunet-convert --random, seed --seed, 1 by
default) exported to ONNX from our own graph (gpunet-convert --onnx, as
tools/compare_runtimes.py does); each photo
decoded by GStreamer into a 640x480 RGB frame and preprocessed by our engine
(gpunet-run --frame ... --dump-input), so both engines read the same normalised tensors.
Ours runs them in fp32 and bf16 (gpunet-run --input --output), OpenVINO (PyPI, the venv
of tools/runtime_venv.py) with INFERENCE_PRECISION_HINT=f32 and with its default (bf16 on
CPUs with AVX-512 BF16 or AMX).  Prints per model and engine the top-1 and top-5
agreement of the low precision with its own f32 (top-5: the same five ids, order aside),
the mean of |low - f32| / max|f32 logit| per image, and which inputs changed top-1.
With --flip every photo is also given mirrored (GStreamer's videoflip): twice the inputs;
with --crops also its four corners, each a 640x480 crop of the photo scaled to 800x600
(GStreamer's videocrop): five times the inputs (ten with --flip).  Also prints how many
inputs are near ties: their two largest f32 logits (ours) lie closer than the larger of
the two engines' mean movement times 5, where a flip of top-1 says more about chance
than about the arithmetic.

  python3 tools/bf16_agreement.py --build build [--models all] [--seed N] [--flip] [--crops]
      PHOTO...
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

MODELS = ["gpunet-0", "gpunet-1", "gpunet-2", "gpunet-p0", "gpunet-p1", "gpunet-d1",
          "gpunet-d2"]

OV = r"""
import sys, numpy as np, openvino as ov
onnx, inp, n, r, out_f32, out_def = sys.argv[1:7]
n, r = int(n), int(r)
x = np.fromfile(inp, dtype=np.float32).reshape(n, 3, r, r)
core = ov.Core()
for hint, path in (("f32", out_f32), (None, out_def)):
    m = core.read_model(onnx)
    m.reshape({0: [1, 3, r, r]})
    cfg = {"INFERENCE_NUM_THREADS": 2}
    if hint:
        cfg["INFERENCE_PRECISION_HINT"] = hint
    c = core.compile_model(m, "CPU", cfg)
    if not hint:
        print("openvino", ov.__version__, "default precision",
              c.get_property("INFERENCE_PRECISION_HINT"), file=sys.stderr)
    np.concatenate([c(x[i:i + 1])[0] for i in range(n)]).astype(np.float32).tofile(path)
"""

AGREE = r"""
import sys, numpy as np
n, k = int(sys.argv[1]), int(sys.argv[2])
ref = np.fromfile(sys.argv[3], dtype=np.float32).reshape(n, k)
low = np.fromfile(sys.argv[4], dtype=np.float32).reshape(n, k)
t1 = int(sum(ref[i].argmax() == low[i].argmax() for i in range(n)))
t5 = int(sum(set(np.argsort(-ref[i])[:5]) == set(np.argsort(-low[i])[:5]) for i in range(n)))
rel = np.mean([np.abs(low[i] - ref[i]).mean() / np.abs(ref[i]).max() for i in range(n)])
print("top1_agree=%d/%d top5_agree=%d/%d mean_rel_logit_diff=%.3g" % (t1, n, t5, n, rel))
print("changed=" + ",".join(str(i) for i in range(n) if ref[i].argmax() != low[i].argmax()))
if len(sys.argv) > 6:
    # near ties: the two largest logits of sys.argv[5] (ours f32) closer than the level
    # sys.argv[6] (relative to the largest |logit|)
    f32 = np.fromfile(sys.argv[5], dtype=np.float32).reshape(n, k)
    lvl = float(sys.argv[6])
    gaps = [np.diff(np.sort(f32[i])[-2:])[0] / np.abs(f32[i]).max() for i in range(n)]
    print("near_ties=%d/%d (top-2 gap under %.3g of the largest logit)"
          % (sum(g < lvl for g in gaps), n, lvl))
"""


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--models", default="all")
    ap.add_argument("--flip", action="store_true",
                    help="also every photo mirrored left to right (twice the inputs)")
    ap.add_argument("--crops", action="store_true",
                    help="also the four corners of every photo scaled to 125 %% (five times "
                    "the inputs)")
    ap.add_argument("--seed", type=int, default=1,
                    help="the random weights' seed (gpunet-convert --random --seed)")
    ap.add_argument("photos", nargs="+")
    a = ap.parse_args()
    models = MODELS if a.models == "all" else a.models.split(",")
    import runtime_venv
    py = runtime_venv.ensure_venv(["onnxruntime", "openvino", "numpy"])
    tool = lambda name: os.path.join(a.build, "tools", name)
    w, h = 640, 480
    with tempfile.TemporaryDirectory() as tmp:
        frames, names = [], []
        flips = [[]] + ([["videoflip", "method=horizontal-flip", "!"]] if a.flip else [])
        # the whole photo, then (--crops) a 640x480 corner of it scaled to 800x600
        cw, ch = w * 5 // 4, h * 5 // 4
        crops = [[]] + ([["video/x-raw,width=%d,height=%d" % (cw, ch), "!", "videocrop",
                          "left=%d" % x, "right=%d" % (cw - w - x), "top=%d" % y,
                          "bottom=%d" % (ch - h - y), "!", "videoscale", "!"]
                         for y in (0, ch - h) for x in (0, cw - w)] if a.crops else [])
        for i, p in enumerate(a.photos):
            for v, (crop, flip) in enumerate((c, f) for c in crops for f in flips):
                f = os.path.join(tmp, "%d-%d.rgb" % (i, v))
                run(["gst-launch-1.0", "-q", "filesrc", "location=" + p, "!", "decodebin", "!",
                     "videoconvert", "!", "videoscale", "!"] + crop + flip +
                    ["video/x-raw,format=RGB,width=%d,height=%d" % (w, h), "!", "filesink",
                     "location=" + f])
                frames.append(f)
                names.append("%s%s%s" % (os.path.basename(p), "" if not crop else
                                         " corner %d" % crops.index(crop), " flipped" if flip else ""))
        ov_py, agree_py = os.path.join(tmp, "ov.py"), os.path.join(tmp, "agree.py")
        with open(ov_py, "w") as f:
            f.write(OV)
        with open(agree_py, "w") as f:
            f.write(AGREE)
        n = len(frames)
        for m in models:
            ck, onnx = os.path.join(tmp, m + ".safetensors"), os.path.join(tmp, m + ".onnx")
            run([tool("gpunet-convert"), "--random", m, "--seed", str(a.seed), "--output", ck])
            run([tool("gpunet-convert"), "--onnx", onnx, "--model", m, "--checkpoint", ck])
            batch = os.path.join(tmp, m + ".bin")
            with open(batch, "wb") as out:
                for i, f in enumerate(frames):
                    one = os.path.join(tmp, "%s-%d.bin" % (m, i))
                    run([tool("gpunet-run"), "--model", m, "--checkpoint", ck, "--frame", f,
                         "--format", "RGB", "--width", str(w), "--height", str(h),
                         "--dump-input", one, "--top-k", "1"])
                    with open(one, "rb") as src:
                        out.write(src.read())
            r = int(round((os.path.getsize(batch) / (4 * 3 * n)) ** 0.5))
            logits = {}
            image_bytes = 4 * 3 * r * r
            for prec in ("fp32", "bf16"):
                # batches of at most 16 (the largest models' activations at batch 132
                # would take gigabytes)
                logits[prec] = os.path.join(tmp, "%s-ours-%s.out" % (m, prec))
                with open(batch, "rb") as src, open(logits[prec], "wb") as dst:
                    for c0 in range(0, n, 16):
                        cn = min(16, n - c0)
                        part_in = os.path.join(tmp, "part.bin")
                        part_out = os.path.join(tmp, "part.out")
                        with open(part_in, "wb") as pf:
                            pf.write(src.read(cn * image_bytes))
                        run([tool("gpunet-run"), "--model", m, "--checkpoint", ck, "--input",
                             part_in, "--batch", str(cn), "--precision", prec, "--output",
                             part_out, "--threads", "2", "--top-k", "1"])
                        with open(part_out, "rb") as pf:
                            dst.write(pf.read())
            ov_f32 = os.path.join(tmp, m + "-ov-f32.out")
            ov_def = os.path.join(tmp, m + "-ov-default.out")
            note = run([py, ov_py, onnx, batch, str(n), str(r), ov_f32, ov_def]).stderr.strip()
            k = os.path.getsize(logits["fp32"]) // (4 * n)
            ours = run([py, agree_py, str(n), str(k), logits["fp32"], logits["bf16"]]).stdout
            theirs = run([py, agree_py, str(n), str(k), ov_f32, ov_def]).stdout
            level = 5 * max(float(re.search(r"mean_rel_logit_diff=(\S+)", t).group(1))
                            for t in (ours, theirs))
            ties = run([py, agree_py, str(n), str(k), logits["fp32"], logits["bf16"],
                        logits["fp32"], "%g" % level]).stdout.strip().splitlines()[-1]
            def split(out):
                lines = out.strip().splitlines()
                changed = [int(i) for i in lines[1].split("=")[1].split(",") if i]
                return lines[0], ", ".join(names[i] for i in changed)
            (o_line, o_changed), (t_line, t_changed) = split(ours), split(theirs)
            print("%s ours-bf16-vs-f32 %s" % (m, o_line))
            print("%s openvino-default-vs-f32 %s (%s)" % (m, t_line, note))
            print("%s top-1 changed: ours [%s], openvino [%s]" % (m, o_changed, t_changed))
            print("%s %s" % (m, ties))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
