#!/usr/bin/python3
"""compare_opencv.py: gst-gpunet's CPU engine against OpenCV DNN on NVIDIA's GPUNet models.

For each of NVIDIA's seven architecture configs this script builds the model with NVIDIA's
`GPUNet_Builder().get_model(config)` (from a checkout of NVIDIA's GPUNet directory that the
user provides; no NVIDIA code is kept in this repository), gives it the same seeded random
weights and realistic BatchNorm statistics as tools/compare_pytorch.py, and then

  * exports it in eval mode to ONNX (torch.onnx.export, batch 1, fixed input size) in a
    temporary directory and loads that with cv2.dnn.readNetFromONNX, backend
    DNN_BACKEND_OPENCV, target DNN_TARGET_CPU, cv2.setNumThreads(T);
  * compares OpenCV's logits with PyTorch float32's on one seeded random input (max |diff|);
  * benchmarks OpenCV (batch 1, warmup 5, median and min of 30 runs) against
    tools/gpunet-bench on the saved state_dict with the same threads, interleaved
    (OpenCV, ours, OpenCV, ours, ...) for --rounds rounds in one session; ours is planned
    once per model and kept between rounds (gpunet-bench --stdin-runs, as in
    tools/compare_pytorch.py).

It prints a markdown table.  Needs torch, numpy and cv2 (Debian: python3-opencv) for
/usr/bin/python3; NVIDIA's code needs a small `timm` shim on PYTHONPATH where timm is not
installed (see tools/compare_pytorch.py).

  PYTHONPATH=/path/to/shim /usr/bin/python3 tools/compare_opencv.py \\
      --nvidia-code ~/DeepLearningExamples/PyTorch/Classification/GPUNet \\
      --configs /path/to/gpunet-configs --build build [--threads 2] [--rounds 3]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import torch
import cv2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_pytorch import MODELS, load_json, randomise, OursServer  # noqa: E402


def export_onnx(model, res, path, opset):
    x = torch.zeros((1, 3, res, res))
    with torch.no_grad():
        torch.onnx.export(model, x, path, opset_version=opset, input_names=["input"],
                          output_names=["logits"], do_constant_folding=True,
                          training=torch.onnx.TrainingMode.EVAL)


def load_opencv(path):
    net = cv2.dnn.readNetFromONNX(path)
    net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
    net.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)
    return net


def forward_opencv(net, x):
    net.setInput(x)
    return net.forward()


def bench_opencv(net, x, runs, warmup):
    for _ in range(warmup):
        forward_opencv(net, x)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        forward_opencv(net, x)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nvidia-code", required=True,
                    help="NVIDIA's GPUNet directory (contains models/gpunet_builder.py)")
    ap.add_argument("--configs", required=True, help="directory with NVIDIA's seven JSON configs")
    ap.add_argument("--build", required=True, help="meson build directory of gst-gpunet")
    ap.add_argument("--models", default="", help="comma-separated subset of built-in names")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3,
                    help="interleaved benchmark rounds (OpenCV then ours) per model")
    ap.add_argument("--opset", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()

    sys.path.insert(0, os.path.abspath(args.nvidia_code))
    from models.gpunet_builder import GPUNet_Builder  # NVIDIA's code, from the user's checkout

    wanted = set(filter(None, args.models.split(",")))
    torch.set_num_threads(args.threads)
    cv2.setNumThreads(args.threads)
    rows = []
    session_t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gpunet-ocv-") as tmp:
        for i, (cfg_file, name) in enumerate(MODELS):
            if wanted and name not in wanted:
                continue
            cfg = load_json(os.path.join(args.configs, cfg_file))
            res = cfg[0]["img_resolution"]
            torch.manual_seed(args.seed + i)
            model = GPUNet_Builder().get_model(cfg)
            randomise(model, res, args.seed + i)
            ckpt = os.path.join(tmp, name + ".pth")
            torch.save(model.state_dict(), ckpt)
            onnx_path = os.path.join(tmp, name + ".onnx")
            export_onnx(model, res, onnx_path, args.opset)
            net = load_opencv(onnx_path)

            x = np.random.default_rng(args.seed + i).standard_normal((1, 3, res, res)).astype(np.float32)
            with torch.no_grad():
                y_torch = model(torch.from_numpy(x)).numpy()
            y_ocv = forward_opencv(net, x).reshape(y_torch.shape)
            row = {"name": name, "res": res,
                   "ocv_max_abs_diff": float(np.max(np.abs(y_ocv - y_torch))),
                   "logits_absmax": float(np.max(np.abs(y_torch))),
                   "top1_same": bool(np.argmax(y_ocv) == np.argmax(y_torch))}

            om, omin, um, umin = [], [], [], []
            ours = OursServer(args.build, name, ckpt, args.threads, args.warmup)
            try:
                for r in range(args.rounds):
                    a, b = bench_opencv(net, x, args.runs, args.warmup)
                    om.append(a)
                    omin.append(b)
                    t = ours.run(args.runs)
                    um.append(statistics.median(t))
                    umin.append(min(t))
            finally:
                ours.close()
            row.update({"ocv_ms": statistics.median(om), "ocv_min_ms": min(omin),
                        "ours_ms": statistics.median(um), "ours_min_ms": min(umin),
                        "ocv_rounds": om, "ours_rounds": um})
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
            del net, model

    print("\nOpenCV DNN %s (DNN_BACKEND_OPENCV, CPU) vs gst-gpunet CPU (%d threads, batch 1, "
          "ONNX opset %d)\n" % (cv2.__version__, args.threads, args.opset))
    print("| model | OpenCV median (min) ms | ours median (min) ms | ours / OpenCV "
          "| OpenCV max abs diff vs PyTorch (max abs logit) |")
    print("|---|---|---|---|---|")
    for r in rows:
        print("| %s | %.1f (%.1f) | %.1f (%.1f) | %.2f | %.1e (%.1f) |" % (
            r["name"], r["ocv_ms"], r["ocv_min_ms"], r["ours_ms"], r["ours_min_ms"],
            r["ours_ms"] / r["ocv_ms"], r["ocv_max_abs_diff"], r["logits_absmax"]))
    print("\nmedian of the %d round medians, fastest single run in brackets; ours / OpenCV < 1: "
          "ours is faster." % args.rounds)
    print("session wall time: %.0f s" % (time.monotonic() - session_t0))


if __name__ == "__main__":
    main()
