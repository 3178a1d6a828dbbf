#!/usr/bin/env python3
"""precision=int8 through the tools and the element, on tiny-a and photos made here
(videotestsrc patterns encoded as PNG by GStreamer):
  - gpunet-convert --calibrate: a folder with no readable image (none, broken ones, a
    FIFO), a file or a missing path for the folder: refused in one sentence each, in our
    words, and nothing written; a folder of photos gives a scales file;
  - gpunet-validate --against fp32 --precision int8 --scales: the summary line;
  - gpunet-run: int8 without --scales, and with another checkpoint's scales, refused in
    one sentence;
  - --scales without --precision int8 (none, auto, fp32, or --against's default bf16):
    gpunet-run, gpunet-bench, gpunet-validate and gpunet-tag refuse it in one sentence
    before anything starts (exit 2), never run another precision silently;
  - gpunet-validate without --against runs the --precision asked (int8 without --scales
    is refused, with them it classifies);
  - the element: precision=int8 without int8-scales fails with the sentence before
    PLAYING, and so does int8-scales with precision auto or fp32; with both, every
    record (bus message) says precision int8;
  - gpunet-tag (when built): --precision int8 without --scales refused with the
    sentence (exit 2), with them one photo tagged.
Exit 77 where the CPU or oneDNN cannot run int8."""
import os
import re
import subprocess
import sys
import tempfile

convert, validate, run, data = sys.argv[1:5]
extra = dict(zip(sys.argv[5::2], sys.argv[6::2]))    # --tag PATH, --bench PATH
tag, bench = extra.get("--tag"), extra.get("--bench")
SCALES_REFUSED = ("--scales is read only with --precision int8, which this run does not "
                  "ask for: add --precision int8 to run int8, or drop --scales")
arch = os.path.join(data, "fixtures", "tiny-a.json")
ckpt = os.path.join(data, "fixtures", "tiny-a", "tiny-a.pth.tar")
failures = 0


def sh(*args, timeout=120):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


with tempfile.TemporaryDirectory() as d:
    photos, empty, bad = (os.path.join(d, x) for x in ("photos", "empty", "bad"))
    for x in (photos, empty, bad):
        os.mkdir(x)
    for i, pattern in enumerate(["smpte", "ball", "pinwheel"]):
        subprocess.run(["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=1",
                        f"pattern={pattern}", "!", "video/x-raw,width=160,height=120", "!",
                        "videoconvert", "!", "pngenc", "!", "filesink",
                        f"location={photos}/{i}.png"], check=True, timeout=60)
    with open(os.path.join(bad, "broken.png"), "wb") as f:
        f.write(b"not a picture at all")
    scales = os.path.join(d, "tiny-a.scales")

    # calibration folders with nothing readable: one sentence, no file
    for folder, what in ((empty, "empty"), (bad, "unreadable")):
        rc, out, err = sh(convert, "--calibrate", folder, "--model", arch, "--checkpoint",
                          ckpt, "--output", scales)
        last = err.strip().splitlines()[-1] if err.strip() else ""
        check(rc == 1 and "holds no readable image" in last and not os.path.exists(scales),
              f"{what} calibration folder: rc {rc}, {err!r}")
    # a file given as the folder, a folder that is not there: our words, plain quotes;
    # a FIFO among the photos is skipped as not a picture file, without blocking
    for folder, words in ((os.path.join(photos, "0.png"), "not a folder"),
                          (os.path.join(d, "nowhere"), "no such folder")):
        rc, out, err = sh(convert, "--calibrate", folder, "--model", arch, "--checkpoint",
                          ckpt, "--output", scales)
        check(rc == 1 and words in err and "\u201c" not in err
              and not os.path.exists(scales), f"calibrating '{folder}': rc {rc}, {err!r}")
    fifo_dir = os.path.join(d, "fifo")
    os.mkdir(fifo_dir)
    os.mkfifo(os.path.join(fifo_dir, "pipe.png"))
    rc, out, err = sh(convert, "--calibrate", fifo_dir, "--model", arch, "--checkpoint", ckpt,
                      "--output", scales, timeout=60)
    check(rc == 1 and "not a regular file" in err and "holds no readable image" in err
          and not os.path.exists(scales), f"a FIFO as the only photo: rc {rc}, {err!r}")
    rc, out, err = sh(convert, "--calibrate", photos, "--model", arch, "--checkpoint", ckpt,
                      "--output", scales)
    check(rc == 0 and "from 3 image(s)" in out and os.path.getsize(scales) > 48,
          f"calibration: rc {rc}, {out!r} {err!r}")
    with open(scales, "rb") as f:
        check(f.read(8) == b"GPUNETS8", "the scales file starts with its magic")

    # the accuracy cost
    rc, out, err = sh(validate, "--against", "fp32", "--precision", "int8", "--scales", scales,
                      "--model", arch, "--checkpoint", ckpt, "-q", photos)
    if rc == 2 and ("AVX2" in err or "oneDNN" in err):
        print("SKIP: this CPU or oneDNN cannot run int8:", err.strip())
        sys.exit(77)
    m = re.search(r"against=fp32 precision=int8 images=3 skipped=0 top1_agree=\d/3 .*"
                  r"mean_rel_logit_diff=(\S+) max_rel_logit_diff=(\S+)", out)
    check(rc == 0 and m is not None, f"validate int8: rc {rc}, {out!r} {err!r}")
    if m:
        check(0 < float(m.group(1)) <= float(m.group(2)), f"logit differences {m.groups()}")

    # gpunet-run's refusals
    inp = os.path.join(data, "fixtures", "tiny-a", "input.bin")
    rc, out, err = sh(run, "--model", arch, "--checkpoint", ckpt, "--input", inp,
                      "--batch", "2", "--precision", "int8")
    check(rc != 0 and "needs an int8 scales file" in err and err.count("\n") == 1,
          f"int8 without scales: rc {rc}, {err!r}")
    other = os.path.join(d, "other.safetensors")
    subprocess.run([convert, "--random", arch, "--seed", "5", "--output", other],
                   check=True, capture_output=True, timeout=60)
    rc, out, err = sh(run, "--model", arch, "--checkpoint", other, "--input", inp,
                      "--batch", "2", "--precision", "int8", "--scales", scales)
    check(rc != 0 and "calibrated for another checkpoint" in err and err.count("\n") == 1,
          f"another checkpoint's scales: rc {rc}, {err!r}")
    rc, out, err = sh(run, "--model", arch, "--checkpoint", ckpt, "--input", inp,
                      "--batch", "2", "--precision", "int8", "--scales", scales)
    check(rc == 0, f"gpunet-run int8: rc {rc}, {err!r}")

    # --scales without --precision int8: refused before anything starts, never ignored
    # (each command runs, in fp32, where --scales is ignored)
    val = os.path.join(d, "val")
    for i in range(2):
        os.makedirs(os.path.join(val, str(i)))
        os.link(os.path.join(photos, f"{i}.png"), os.path.join(val, str(i), f"{i}.png"))
    for k, prec in enumerate(([], ["--precision", "auto"], ["--precision", "fp32"])):
        cmds = [("gpunet-run", [run, "--model", arch, "--checkpoint", ckpt, "--input", inp,
                                "--batch", "2"]),
                ("gpunet-validate", [validate, "--model", arch, "--checkpoint", ckpt, "-q",
                                     val])]
        if bench:
            cmds.append(("gpunet-bench", [bench, "--model", arch, "--checkpoint", ckpt,
                                          "--runs", "1", "--no-peak"]))
        if tag:
            cmds.append(("gpunet-tag", [tag, "--model", arch, "--checkpoint", ckpt,
                                        "--output", os.path.join(d, f"t0-{k}.jsonl"),
                                        os.path.join(photos, "0.png")]))
        for name, cmd in cmds:
            rc, out, err = sh(*(cmd + prec + ["--scales", scales]))
            check(rc == 2 and err == f"{name}: {SCALES_REFUSED}\n" and out == "",
                  f"{name} --scales {' '.join(prec) or '(no --precision)'}: rc {rc}, "
                  f"{out[-200:]!r} {err[-300:]!r}")
    rc, out, err = sh(validate, "--against", "fp32", "--scales", scales, "--model", arch,
                      "-q", photos)
    check(rc == 2 and err == f"gpunet-validate: {SCALES_REFUSED}\n",
          f"gpunet-validate --against fp32 (bf16) --scales: rc {rc}, {err!r}")
    # gpunet-validate runs the --precision asked, not only with --against
    rc, out, err = sh(validate, "--model", arch, "--checkpoint", ckpt, "--precision", "int8",
                      "-q", val)
    check(rc == 2 and "needs an int8 scales file" in err,
          f"gpunet-validate --precision int8 without --scales: rc {rc}, {err!r}")
    rc, out, err = sh(validate, "--model", arch, "--checkpoint", ckpt, "--precision", "int8",
                      "--scales", scales, "-q", val)
    check(rc == 0 and "top-1:" in out, f"gpunet-validate --precision int8: rc {rc}, "
          f"{out[-300:]!r} {err[-300:]!r}")

    # the element
    pipe = ["gst-launch-1.0", "-m", "videotestsrc", "num-buffers=3", "!",
            "video/x-raw,width=96,height=96", "!", "gpunetclassify", f"model={arch}",
            f"checkpoint={ckpt}", "backend=cpu", "precision=int8", "post-messages=true"]
    rc, out, err = sh(*pipe, "!", "fakesink")
    text = out + err
    check(rc != 0 and "precision=int8 needs an int8 scales file" in text
          and "Setting pipeline to PLAYING" not in text,
          f"element without int8-scales: rc {rc}, {text[-600:]!r}")
    # int8-scales with another precision: the element does not start
    for prec in ("auto", "fp32"):
        other = [x if x != "precision=int8" else f"precision={prec}" for x in pipe]
        rc, out, err = sh(*(other + [f"int8-scales={scales}"]), "!", "fakesink")
        text = out + err
        check(rc != 0 and f"int8-scales is set, but precision is {prec}: the scales file is "
              "read only with precision=int8" in text
              and "Setting pipeline to PLAYING" not in text and "precision=(string)" not in text,
              f"element with int8-scales and precision={prec}: rc {rc}, {text[-600:]!r}")
    rc, out, err = sh(*(pipe + [f"int8-scales={scales}"]), "!", "fakesink")
    recs = re.findall(r"precision=\(string\)(\w+)", out)
    check(rc == 0 and len(recs) == 3 and set(recs) == {"int8"},
          f"element with int8-scales: rc {rc}, records {recs}, {err[-400:]!r}")

    if tag:
        photo = os.path.join(photos, "0.png")
        base = [tag, "--model", arch, "--checkpoint", ckpt, "--backend", "cpu",
                "--precision", "int8"]
        rc, out, err = sh(*base, "--output", os.path.join(d, "t1.jsonl"), photo)
        check(rc == 2 and "precision=int8 needs an int8 scales file" in err,
              f"gpunet-tag without --scales: rc {rc}, {err!r}")
        rc, out, err = sh(*base, "--scales", scales, "--output", os.path.join(d, "t2.jsonl"),
                          photo)
        check(rc == 0 and "1 ok" in err, f"gpunet-tag int8: rc {rc}, {err!r}")

print("FAILED" if failures else "passed")
sys.exit(1 if failures else 0)
