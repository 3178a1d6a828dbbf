#!/usr/bin/python3
"""compare_preprocess.py: the engine's fused preprocess against torchvision's evaluation
transform (timm: Resize(floor(R / crop_pct), BICUBIC) on a PIL image, CenterCrop(R),
ToTensor, Normalize) on real photos, per GPUNet input resolution; prints max/mean abs
differences of the network input.

Needs python3-torchvision, python3-pil, python3-numpy (Debian) and, for the default
photos, python3-skimage; runs tests/dump_preprocess (built next to the tests) and, with
--gpunet-run, tools/gpunet-run --dump-input on the tiny-a fixture (R = 96).

  /usr/bin/python3 tools/compare_preprocess.py --dump build/tests/dump_preprocess \
      [--gpunet-run build/tools/gpunet-run --data tests/data] [photo.jpg ...]
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from PIL import Image
from torchvision import transforms

# (model, R, crop_pct) of the built-in GPUNets
RESOLUTIONS = [("gpunet-p0/p1", 224, 0.875), ("gpunet-1", 288, 1.0), ("gpunet-0", 320, 1.0),
               ("gpunet-2", 384, 1.0), ("gpunet-d1", 456, 1.0), ("gpunet-d2", 528, 1.0)]
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def torchvision_input(img, R, crop_pct, mode):
    if mode == "center-crop":
        t = [transforms.Resize(int(math.floor(R / crop_pct)),
                               interpolation=transforms.InterpolationMode.BICUBIC),
             transforms.CenterCrop(R)]
    else:
        t = [transforms.Resize((R, R), interpolation=transforms.InterpolationMode.BICUBIC)]
    t += [transforms.ToTensor(), transforms.Normalize(MEAN, STD)]
    return transforms.Compose(t)(img).numpy()


def nv12_bytes(rgb):
    """BT.601 limited-range NV12 of an RGB array, chroma sited as the engine decodes it
    (co-sited horizontally, between two rows vertically)."""
    h, w, _ = rgb.shape
    f = rgb.astype(np.float64)
    y = 0.299 * f[..., 0] + 0.587 * f[..., 1] + 0.114 * f[..., 2]
    cb = (f[..., 2] - y) / 1.772
    cr = (f[..., 0] - y) / 1.402
    Y = np.clip(np.rint(16 + y * 219 / 255), 0, 255).astype(np.uint8)
    ch, cw = (h + 1) // 2, (w + 1) // 2
    rows0 = np.arange(ch) * 2
    rows1 = np.minimum(rows0 + 1, h - 1)
    cols = np.arange(cw) * 2

    def sub(c):
        v = 0.5 * (c[rows0][:, cols] + c[rows1][:, cols])
        return np.clip(np.rint(128 + v * 224 / 255), 0, 255).astype(np.uint8)

    uv = np.stack([sub(cb), sub(cr)], axis=-1).reshape(ch, cw * 2)
    return Y.tobytes() + uv.tobytes()


def run_dump(dump, fmt, w, h, data, R, mode, crop_pct, tmp):
    src, dst = os.path.join(tmp, "in.raw"), os.path.join(tmp, "out.bin")
    with open(src, "wb") as f:
        f.write(data)
    subprocess.run([dump, fmt, str(w), str(h), src, str(R), mode, repr(crop_pct), dst],
                   check=True)
    return np.fromfile(dst, dtype=np.float32).reshape(3, R, R)


def photos(paths):
    if paths:
        return [(os.path.basename(p), Image.open(p).convert("RGB")) for p in paths]
    from skimage import data
    names = ["astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry", "retina"]
    return [(n, Image.fromarray(getattr(data, n)()).convert("RGB")) for n in names]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True, help="path of the built tests/dump_preprocess")
    ap.add_argument("--gpunet-run", help="path of the built tools/gpunet-run (tiny-a, R = 96)")
    ap.add_argument("--data", default="tests/data")
    ap.add_argument("photos", nargs="*")
    args = ap.parse_args()
    imgs = photos(args.photos)
    print("photos: " + ", ".join("%s %dx%d" % (n, im.width, im.height) for n, im in imgs))
    print("%-14s %4s %5s %-11s %-5s %9s %9s" % ("model", "R", "crop", "mode", "input",
                                               "max|d|", "mean|d|"))
    rows = [(m, R, p, "center-crop") for m, R, p in RESOLUTIONS]
    rows.append(("gpunet-0", 320, 1.0, "stretch"))
    with tempfile.TemporaryDirectory() as tmp:
        for model, R, pct, mode in rows:
            for fmt in ("RGB", "NV12"):
                mx, means = 0.0, []
                for _, im in imgs:
                    ref = torchvision_input(im, R, pct, mode)
                    arr = np.asarray(im)
                    if fmt == "RGB":
                        raw = arr.tobytes()
                    else:
                        raw = nv12_bytes(arr)
                    ours = run_dump(args.dump, fmt, im.width, im.height, raw, R, mode, pct, tmp)
                    d = np.abs(ours.astype(np.float64) - ref)
                    mx = max(mx, float(d.max()))
                    means.append(float(d.mean()))
                print("%-14s %4d %5.3f %-11s %-5s %9.4f %9.4f" % (model, R, pct, mode, fmt, mx,
                                                                 float(np.mean(means))))
        if args.gpunet_run:
            # the engine path end to end: gpunet_preprocess_image through gpunet-run
            mx, means = 0.0, []
            for _, im in imgs:
                src, dst = os.path.join(tmp, "frame.rgb"), os.path.join(tmp, "in.bin")
                np.asarray(im).tofile(src)
                subprocess.run([args.gpunet_run, "--model",
                                os.path.join(args.data, "fixtures/tiny-a.json"), "--checkpoint",
                                os.path.join(args.data, "fixtures/tiny-a/tiny-a.pth.tar"),
                                "--frame", src, "--format", "RGB", "--width", str(im.width),
                                "--height", str(im.height), "--resize-mode", "center-crop",
                                "--crop-pct", "1.0", "--dump-input", dst],
                               check=True, stdout=subprocess.DEVNULL)
                ours = np.fromfile(dst, dtype=np.float32)[:3 * 96 * 96].reshape(3, 96, 96)
                d = np.abs(ours - torchvision_input(im, 96, 1.0, "center-crop"))
                mx = max(mx, float(d.max()))
                means.append(float(d.mean()))
            print("%-14s %4d %5.3f %-11s %-5s %9.4f %9.4f" % ("tiny-a (run)", 96, 1.0,
                                                             "center-crop", "RGB", mx,
                                                             float(np.mean(means))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
