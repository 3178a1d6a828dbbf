#!/usr/bin/env python3
"""test_error_texts.py: the error sentences of the decoding tools (issue 43 defect 13).

- an audio-only file is "no video stream in ...", not a missing plug-in (gpunet-run
  --image, gpunet-validate, gpunet-tag);
- internal element names such as "(qtdemux0)" stay out of gpunet-tag's messages;
- gpunet-validate in the C locale prints GLib's quotes as ASCII, not '?';
- a model that fails to load: gpunet-tag prints its error and no "N inputs: ..." summary.
The same four for gpunet-streams, gpunet-cameras and the example app of classify.sh,
where built: each names the input that failed and what to do, no element name
("(qtdemux2)", "uridecodebin0: "), and gpunet-streams runs the good inputs on.

    test_error_texts.py GPUNET_RUN GPUNET_VALIDATE GPUNET_TAG FIXTURES PLUGIN_DIR
        [--streams GPUNET_STREAMS] [--cameras GPUNET_CAMERAS] [--example-app APP]
Exits 77 (skipped) when GStreamer's wavenc / jpegenc / qtmux are missing."""
import os
import re
import shutil
import subprocess
import sys
import random
import tempfile
import time

FAILED = 0
# an element's name as GStreamer makes them: qtdemux2, uridecodebin0, wavparse0
ELEMENT_NAME = re.compile(r"\b(qtdemux|uridecodebin|decodebin|wavparse|typefind|"
                          r"multiqueue|filesrc|urisourcebin)\d+\b|\btypefind\b")


def check(cond, what):
    global FAILED
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED += 1


def launch(desc, cwd):
    return subprocess.run(["gst-launch-1.0", "-q"] + desc.split(), cwd=cwd,
                          capture_output=True).returncode == 0


def check_streams(streams, arch, ckpt, fix, env, tmp):
    """gpunet-streams: each failed input named with what went wrong, the good ones
    run on; a model that does not load: its error alone, exit 2."""
    base = [streams, "--model", arch, "--checkpoint", ckpt, "--n-threads", "1"]
    p = subprocess.run(base + ["clip.mov", "noise.mov", "audio.wav"], capture_output=True,
                       text=True, env=env, cwd=tmp, timeout=120)
    err = p.stderr
    check(p.returncode == 1 and "stream 2 (audio.wav): no video stream" in err
          and "plug-in" not in err, f"gpunet-streams, audio only: {err.strip()}")
    check("stream 1 (noise.mov): " in err and "damaged" in err,
          f"gpunet-streams, damaged file: named, with a hint: {err.strip()}")
    check(not ELEMENT_NAME.search(err), f"gpunet-streams: no element name: {err.strip()}")
    check("stream 0: 5 frames" in p.stdout.splitlines(),
          f"gpunet-streams: the good input runs on: {p.stdout.strip()}")
    p = subprocess.run(base[:2] + [os.path.join(fix, "tiny-d.json")] + base[3:]
                       + ["clip.mov"], capture_output=True, text=True, env=env,
                       cwd=tmp, timeout=120)
    check(p.returncode == 2 and "does not match" in p.stderr and "streams=" not in p.stdout
          and "frames" not in p.stdout and "CRITICAL" not in p.stderr,
          f"gpunet-streams, model fails to load: its error only: "
          f"{p.returncode} {p.stdout.strip()[-200:]} {p.stderr.strip()[-200:]}")
    p = subprocess.run([streams, "--frames=abc"], capture_output=True, text=True, env=env,
                       cwd=tmp, errors="replace")
    check(p.returncode == 2 and '"abc"' in p.stderr,
          f"gpunet-streams, C locale: ASCII quotes: {p.stderr.strip()}")


def check_cameras(cameras, arch, ckpt, fix, env, tmp):
    """gpunet-cameras: an audio-only file is down with 'no video stream', a damaged
    one with no element name; a model that does not load stops it before any
    camera starts."""
    out = os.path.join(tmp, "cameras.jsonl")
    p = subprocess.Popen([cameras, "--model", arch, "--checkpoint", ckpt, "--n-threads", "1",
                          "--max-retries", "1", "--reconnect-min", "0.2", "--stall-timeout", "2",
                          "--json-output", out, "--camera", "audio=file://" + tmp + "/audio.wav",
                          "--camera", "cut=file://" + tmp + "/noise.mov"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env=env, cwd=tmp)
    down = {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(down) < 2:
        time.sleep(0.2)
        if os.path.exists(out):
            for line in open(out):
                # the first failure's reason (a retry may fail another way)
                if re.search(r'"state":"(down|reconnecting)"', line.replace(" ", "")):
                    for cam in ("audio", "cut"):
                        if f'"camera":"{cam}"' in line.replace(" ", ""):
                            down.setdefault(cam, line)
    p.terminate()
    p.communicate(timeout=30)
    check("no video stream" in down.get("audio", "") and "plug-in" not in down.get("audio", ""),
          f"gpunet-cameras, audio only: {down.get('audio')}")
    check("cut" in down and not ELEMENT_NAME.search(down["cut"]) and "damaged" in down["cut"],
          f"gpunet-cameras, damaged file: no element name: {down.get('cut')}")
    try:
        p = subprocess.run([cameras, "--model", os.path.join(fix, "tiny-d.json"),
                            "--checkpoint", ckpt, "--camera", "clip=file://" + tmp + "/clip.mov"],
                           capture_output=True, text=True, env=env, cwd=tmp, timeout=30)
        check(p.returncode == 2 and "does not match" in p.stderr and "started" not in p.stderr,
              f"gpunet-cameras, model fails to load: its error only: {p.returncode} "
              f"{p.stderr.strip()[-300:]}")
    except subprocess.TimeoutExpired:
        check(False, "gpunet-cameras, model fails to load: still running after 30 s")
    p = subprocess.run([cameras, "--n-threads=abc"], capture_output=True, text=True, env=env,
                       cwd=tmp, errors="replace")
    check(p.returncode == 2 and '"abc"' in p.stderr,
          f"gpunet-cameras, C locale: ASCII quotes: {p.stderr.strip()}")


def check_example_app(app, arch, ckpt, fix, env, tmp):
    """The example app classify.sh runs: 'no video stream' for audio only, no
    element names, no frame count after a model that does not load."""
    def run(src, model=arch):
        return subprocess.run([app, "--pipeline", f"{src} ! gpunetclassify name=classify "
                               f"model={model} checkpoint={ckpt} ! fakesink"],
                              capture_output=True, text=True, env=env, cwd=tmp, timeout=60)
    # the source classify.sh builds for --input
    p = run(f"uridecodebin uri=file://{tmp}/audio.wav caps=video/x-raw ! videoconvert")
    check(p.returncode != 0 and "no video stream" in p.stderr and "not-linked" not in p.stderr
          and not ELEMENT_NAME.search(p.stderr),
          f"example app, audio only: {p.stderr.strip()}")
    p = run(f"uridecodebin uri=file://{tmp}/noise.mov caps=video/x-raw ! videoconvert")
    check(p.returncode != 0 and not ELEMENT_NAME.search(p.stderr),
          f"example app, damaged file: no element name: {p.stderr.strip()}")
    p = run("videotestsrc num-buffers=3", os.path.join(fix, "tiny-d.json"))
    check(p.returncode != 0 and "does not match" in p.stderr and "frames" not in p.stdout,
          f"example app, model fails to load: no count: {p.stdout.strip()}")


def main():
    extra = {}
    args = sys.argv[1:]
    for flag in ("--streams", "--cameras", "--example-app"):
        if flag in args:
            i = args.index(flag)
            extra[flag] = os.path.abspath(args[i + 1])
            del args[i:i + 2]
    run, validate, tag, fix, plugin_dir = (os.path.abspath(a) for a in args[0:5])
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
        # bytes no demuxer takes: the damaged input of the tools without an open
        # timeout (decodebin sometimes waits forever on a cut file)
        open(os.path.join(tmp, "noise.mov"), "wb").write(random.Random(43).randbytes(20000))

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

        # --open-timeout 3: decodebin sometimes waits forever on this cut (a GStreamer
        # race); the tool then fails it after the timeout, with no element name either
        p = subprocess.run([tag, "-m", arch, "-c", ckpt, "-o", "out.jsonl", "--open-timeout",
                            "3", "audio.wav", "cut.mov"], capture_output=True, text=True,
                           env=env, cwd=tmp)
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
        if "--streams" in extra:
            check_streams(extra["--streams"], arch, ckpt, fix, env, tmp)
        if "--cameras" in extra:
            check_cameras(extra["--cameras"], arch, ckpt, fix, env, tmp)
        if "--example-app" in extra:
            check_example_app(extra["--example-app"], arch, ckpt, fix, env, tmp)
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
