#!/usr/bin/env python3
"""test_error_texts.py: the error sentences of the decoding tools (issue 43 defect 13).

- an audio-only file is "no video stream in ...", not a missing plug-in (gpunet-run
  --image, gpunet-validate, gpunet-tag);
- internal element names such as "(qtdemux0)" stay out of gpunet-tag's messages;
- gpunet-validate in the C locale prints GLib's quotes as ASCII, not '?';
- a model that fails to load: gpunet-tag prints its error and no "N inputs: ..." summary.

    test_error_texts.py GPUNET_RUN GPUNET_VALIDATE GPUNET_TAG FIXTURES PLUGIN_DIR
Exits 77 (skipped) when GStreamer's wavenc / jpegenc / qtmux are missing."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

FAILED = 0


def check(cond, what):
    global FAILED
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED += 1


def launch(desc, cwd):
    return subprocess.run(["gst-launch-1.0", "-q"] + desc.split(), cwd=cwd,
                          capture_output=True).returncode == 0


def main():
    run, validate, tag, fix, plugin_dir = (os.path.abspath(a) for a in sys.argv[1:6])
    if shutil.which("gst-launch-1.0") is None:
        print("SKIP: no gst-launch-1.0")
        return 77
    arch = os.path.join(fix, "tiny-a.json")
    ckpt = os.path.join(fix, "tiny-a", "tiny-a.pth.tar")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, GST_PLUGIN_PATH_1_0=plugin_dir,
                   GST_REGISTRY_1_0=os.path.join(tmp, "registry.bin"), LC_ALL="C")
        if not (launch("audiotestsrc num-buffers=20 ! wavenc ! filesink location=audio.wav", tmp)
                and launch("videotestsrc num-buffers=5 ! video/x-raw,width=64,height=64 ! "
                           "jpegenc ! qtmux ! filesink location=clip.mov", tmp)):
            print("SKIP: wavenc, jpegenc or qtmux missing")
            return 77
        data = open(os.path.join(tmp, "clip.mov"), "rb").read()
        open(os.path.join(tmp, "cut.mov"), "wb").write(data[:len(data) // 2])

        p = subprocess.run([run, "--model", arch, "--checkpoint", ckpt, "--image", "audio.wav"],
                           capture_output=True, text=True, env=env, cwd=tmp)
        check(p.returncode != 0 and "no video stream in 'audio.wav'" in p.stderr
              and "plug-in" not in p.stderr, f"gpunet-run, audio only: {p.stderr.strip()}")

        os.makedirs(os.path.join(tmp, "val", "0"))
        shutil.copy(os.path.join(tmp, "audio.wav"), os.path.join(tmp, "val", "0", "a.jpg"))
        p = subprocess.run([validate, "-m", arch, "-c", ckpt, "val"], capture_output=True,
                           text=True, env=env, cwd=tmp)
        check("no video stream in" in p.stderr and "plug-in" not in p.stderr,
              f"gpunet-validate, audio only: {p.stderr.strip()[:300]}")
        p = subprocess.run([validate, "--limit=abc", "val"], capture_output=True, text=True,
                           env=env, cwd=tmp, errors="replace")
        check(p.returncode != 0 and '"abc"' in p.stderr and "?" not in p.stderr,
              f"gpunet-validate, C locale: ASCII quotes: {p.stderr.strip()}")

        p = subprocess.run([tag, "-m", arch, "-c", ckpt, "-o", "out.jsonl", "audio.wav",
                            "cut.mov"], capture_output=True, text=True, env=env, cwd=tmp)
        lines = p.stderr.splitlines()
        audio = [l for l in lines if "audio.wav" in l and "FAILED" in l]
        check(len(audio) == 1 and "no video stream" in audio[0] and "plug-in" not in audio[0],
              f"gpunet-tag, audio only: {audio}")
        cut = [l for l in lines if "cut.mov" in l and "FAILED" in l]
        check(len(cut) == 1 and not re.search(r"\([a-z0-9_-]*[a-z]\d+\)", cut[0]),
              f"gpunet-tag, damaged file: no element name: {cut}")

        p = subprocess.run([tag, "-m", os.path.join(fix, "tiny-d.json"), "-c", ckpt,
                            "-o", "out2.jsonl", "audio.wav"], capture_output=True, text=True,
                           env=env, cwd=tmp)
        check(p.returncode == 2 and "does not match" in p.stderr
              and "inputs:" not in p.stderr,
              f"gpunet-tag, model fails to load: its error only: {p.stderr.strip()[-300:]}")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
