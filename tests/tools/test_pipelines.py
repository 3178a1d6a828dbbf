#!/usr/bin/env python3
"""test_pipelines.py SOURCE_ROOT BUILD_ROOT: the recipes of pipelines/ with a model and a
checkpoint whose paths hold spaces (env.sh's CLASSIFY is split into gst-launch's
arguments): testsrc.sh and file.sh classify their frames and post their messages; a path
that cannot be passed (two spaces in a row) is refused with a sentence."""
import os
import shutil
import subprocess
import sys
import tempfile

root, build = sys.argv[1], os.path.abspath(sys.argv[2])
fixtures = os.path.join(root, "tests", "data", "fixtures")
failed = 0


def check(cond, what):
    global failed
    print(("ok   " if cond else "FAIL ") + what)
    failed += 0 if cond else 1


with tempfile.TemporaryDirectory() as tmp:
    d = os.path.join(tmp, "my models", "tiny a")
    os.makedirs(d)
    model = os.path.join(d, "tiny a.json")
    ckpt = os.path.join(d, "tiny a.pth.tar")
    shutil.copy(os.path.join(fixtures, "tiny-a.json"), model)
    shutil.copy(os.path.join(fixtures, "tiny-a", "tiny-a.pth.tar"), ckpt)
    env = dict(os.environ, BUILD_DIR=build, MODEL=model, CHECKPOINT=ckpt, FRAMES="3",
               GST_REGISTRY_1_0=os.path.join(tmp, "registry.bin"))
    env.pop("GST_PLUGIN_PATH_1_0", None)
    p = subprocess.run(["sh", os.path.join(root, "pipelines", "testsrc.sh")], env=env,
                       capture_output=True, text=True, timeout=120)
    msgs = p.stdout.count("gpunetclassify")
    check(p.returncode == 0 and msgs >= 3,
          f"testsrc.sh with spaces in MODEL and CHECKPOINT: rc {p.returncode}, "
          f"{msgs} messages; {p.stderr.strip()[-300:]!r}")
    clip = os.path.join(tmp, "a clip.mkv")
    subprocess.run(["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=4", "!",
                    "video/x-raw,width=64,height=48", "!", "matroskamux", "!", "filesink",
                    f"location={clip}"], check=True, capture_output=True, timeout=60)
    p = subprocess.run(["sh", os.path.join(root, "pipelines", "file.sh"), clip], env=env,
                       capture_output=True, text=True, timeout=120)
    msgs = p.stdout.count("gpunetclassify")
    check(p.returncode == 0 and msgs >= 4,
          f"file.sh on a clip with a space, model paths with spaces: rc {p.returncode}, "
          f"{msgs} messages; {p.stderr.strip()[-300:]!r}")
    # what gst-launch's argument joining cannot carry is refused with a sentence
    odd = os.path.join(tmp, "two  spaces.pth.tar")
    shutil.copy(ckpt, odd)
    p = subprocess.run(["sh", os.path.join(root, "pipelines", "testsrc.sh")],
                       env=dict(env, CHECKPOINT=odd), capture_output=True, text=True,
                       timeout=60)
    check(p.returncode == 2 and "two spaces in a row" in p.stderr,
          f"a checkpoint path with two spaces in a row: rc {p.returncode}, {p.stderr.strip()!r}")
sys.exit(1 if failed else 0)
