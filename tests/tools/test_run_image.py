#!/usr/bin/env python3
"""test_run_image.py GPUNET_RUN FIXTURES: gpunet-run --image (issue 31) on a PNG and
a JPEG made here with videotestsrc: the top-5 printed with labels equals, id for id
and score for score, what the same decoded RGB picture gives through --frame (the
element's preprocess and the whole network); --labels names the classes; a missing
file fails with a sentence while the other photos are still classified; a truncated JPEG
or PNG (which decoders complete without a word) is named as damaged, exit 1."""
import os
import re
import subprocess
import sys
import tempfile

FAILED = 0


def check(cond, what):
    global FAILED
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED += 1


def launch(*desc):
    subprocess.run(["gst-launch-1.0", "-q"] + list(desc), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def parse_image_output(text):
    """{photo: [(id, label, score), ...]} from gpunet-run --image."""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^(\S.*) \((\d+)x(\d+)\):$", line)
        if m:
            cur = out.setdefault(m.group(1), [])
            continue
        m = re.match(r"^\s+\d+\. (.+?)\s+(\d+)\s+([0-9.]+)$", line)
        if m and cur is not None:
            cur.append((int(m.group(2)), m.group(1), float(m.group(3))))
    return out


def main():
    run, fixtures = (os.path.abspath(a) for a in sys.argv[1:3])
    for e in ("pngenc", "jpegenc", "pngdec", "jpegdec"):
        if subprocess.run(["gst-inspect-1.0", "--exists", e]).returncode != 0:
            print(f"SKIP: no {e}")
            return 77
    base = [run, "--model", os.path.join(fixtures, "tiny-a.json"), "--checkpoint",
            os.path.join(fixtures, "tiny-a", "tiny-a.pth.tar"), "--threads", "1"]
    with tempfile.TemporaryDirectory() as tmp:
        png, jpg = os.path.join(tmp, "smpte.png"), os.path.join(tmp, "ball.jpg")
        launch("videotestsrc", "num-buffers=1", "pattern=smpte", "!",
               "video/x-raw,width=301,height=203", "!", "pngenc", "!", "filesink",
               f"location={png}")
        launch("videotestsrc", "num-buffers=1", "pattern=ball", "!",
               "video/x-raw,width=640,height=480", "!", "jpegenc", "!", "filesink",
               f"location={jpg}")
        p = subprocess.run(base + ["--image", png, jpg], capture_output=True, text=True)
        res = parse_image_output(p.stdout)
        check(p.returncode == 0 and sorted(res) == sorted([png, jpg])
              and all(len(v) == 5 for v in res.values()),
              f"two photos, top-5 each: {p.returncode} {p.stderr.strip()}")
        check(all(l == f"class-{i}" for v in res.values() for i, l, _ in v),
              "16-class model: class-ID labels")
        check(res.get(png, [(None,)])[0][0] != res.get(jpg, [(None,)])[0][0],
              "different pictures, different top-1")

        # the same pictures decoded to raw RGB by gst-launch, through --frame
        for photo, w, h, dec in ((png, 301, 203, "pngdec"), (jpg, 640, 480, "jpegdec")):
            raw = photo + ".rgb"
            launch("filesrc", f"location={photo}", "!", dec, "!", "videoconvert", "!",
                   "video/x-raw,format=RGB", "!", "filesink", f"location={raw}")
            stride = (w * 3 + 3) & ~3
            q = subprocess.run(base + ["--frame", raw, "--format", "RGB", "--width", str(w),
                                       "--height", str(h), "--stride", str(stride)],
                               capture_output=True, text=True)
            ref = [(int(a), float(b)) for a, b in re.findall(r"(\d+):([0-9.]+)", q.stdout)]
            got = [(i, s) for i, _, s in res.get(photo, [])]
            check(q.returncode == 0 and len(ref) == 5 and [i for i, _ in ref] == [i for i, _ in got]
                  and all(abs(a[1] - b[1]) < 2e-4 for a, b in zip(ref, got)),
                  f"{os.path.basename(photo)}: --image equals --frame on the decoded RGB "
                  f"({got} vs {ref})")

        labels = os.path.join(tmp, "labels.txt")
        with open(labels, "w") as f:
            f.write("".join(f"thing number {i}\n" for i in range(16)))
        p = subprocess.run(base + ["--image", png, "--labels", labels], capture_output=True,
                           text=True)
        res = parse_image_output(p.stdout)
        check(p.returncode == 0 and res.get(png) and
              all(l == f"thing number {i}" for i, l, _ in res[png]), "--labels names classes")

        p = subprocess.run(base + ["--image", os.path.join(tmp, "nothere.jpg"), png],
                           capture_output=True, text=True)
        check(p.returncode == 1 and "nothere.jpg': no such file" in p.stderr
              and png in parse_image_output(p.stdout), "a missing photo fails, the rest run")
        bad = os.path.join(tmp, "bad.jpg")
        open(bad, "wb").write(b"not a picture at all" * 10)
        p = subprocess.run(base + ["--image", bad], capture_output=True, text=True)
        check(p.returncode == 1 and "cannot decode" in p.stderr, f"a non-picture fails: {p.stderr.strip()}")

        # a truncated JPEG and PNG decode (the decoder fills in the rest) but are named
        # as damaged, exit 1, and the intact pictures carry no such warning
        for photo in (jpg, png):
            data = open(photo, "rb").read()
            cut = photo + ".cut" + os.path.splitext(photo)[1]
            open(cut, "wb").write(data[: len(data) * 2 // 3])
            p = subprocess.run(base + ["--image", cut, photo], capture_output=True, text=True)
            res = parse_image_output(p.stdout)
            # (pngdec refuses a truncated PNG itself; jpegdec completes a JPEG silently)
            check(p.returncode == 1 and ("truncated" in p.stderr or "cannot decode" in p.stderr)
                  and os.path.basename(cut) in p.stderr
                  and photo not in p.stderr.replace(cut, ""),
                  f"a truncated {os.path.splitext(photo)[1]} is named: {p.returncode} {p.stderr.strip()}")
        p = subprocess.run(base + ["--image", jpg, png], capture_output=True, text=True)
        check(p.returncode == 0 and "warning" not in p.stderr, f"intact photos: no warning: {p.stderr.strip()}")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
