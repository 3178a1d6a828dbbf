#!/usr/bin/env python3
"""test_no_env.py EXAMPLE_APP SOURCE_ROOT: the metadata readers of pipelines/ run from
the build tree with no GST_PLUGIN_PATH and an empty registry cache (issue 31, point
1): the C example app (built next to the plugin) and read_meta.py under Debian's
/usr/bin/python3 (skipped when its gi module is missing). Also the app's --frames N
(classify.sh --input --frames N) prints exactly N frames of a longer clip."""
import json
import os
import subprocess
import sys
import tempfile

FAILED = 0


def check(cond, what):
    global FAILED
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED += 1


def main():
    app, root = (os.path.abspath(a) for a in sys.argv[1:3])
    fx = os.path.join(root, "tests", "data", "fixtures")
    ckpt, arch = os.path.join(fx, "tiny-a", "tiny-a.pth.tar"), os.path.join(fx, "tiny-a.json")
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GST_PLUGIN")}
        env["GST_REGISTRY_1_0"] = os.path.join(tmp, "registry.bin")
        p = subprocess.run([app, ckpt, arch, "3"], capture_output=True, text=True, env=env,
                           cwd=tmp)
        frames = [l for l in p.stdout.splitlines() if l.startswith("frame ")]
        check(p.returncode == 0 and len(frames) == 3 and "class-" in frames[0],
              f"example app, no GST_PLUGIN_PATH: {p.returncode} {p.stderr.strip()[-300:]}")
        # --frames N (what classify.sh --input --frames N uses): exactly N frames
        clip = os.path.join(tmp, "c.webm")
        subprocess.run(["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=20", "pattern=ball",
                        "!", "vp8enc", "!", "webmmux", "!", "filesink", f"location={clip}"],
                       check=True)
        for n in (1, 7):
            p = subprocess.run([app, "--frames", str(n), "--pipeline",
                                f'filesrc location="{clip}" ! decodebin ! videoconvert ! '
                                f'gpunetclassify name=classify model="{arch}" '
                                f'checkpoint="{ckpt}" ! fakesink'],
                               capture_output=True, text=True, env=env, cwd=tmp)
            frames = [l for l in p.stdout.splitlines() if l.startswith("frame ")]
            check(p.returncode == 0 and len(frames) == n and p.stdout.endswith(f"{n} frames\n"),
                  f"--frames {n} of a 20-frame clip: {len(frames)} {p.stderr.strip()[-200:]}")
        py = "/usr/bin/python3"
        if subprocess.run([py, "-c", "import gi; gi.require_version('Gst', '1.0')"],
                          capture_output=True).returncode != 0:
            print("SKIP read_meta.py: /usr/bin/python3 has no gi")
            return 1 if FAILED else 0
        env["GST_REGISTRY_1_0"] = os.path.join(tmp, "registry2.bin")
        # the plugin of this build (the app's), not build/ of the checkout: a second build
        # directory (scripts/test-distro.sh's, another release's) must test its own
        env["BUILD_DIR"] = os.path.dirname(os.path.dirname(app))
        p = subprocess.run([py, os.path.join(root, "pipelines", "read_meta.py"), ckpt, arch, "3"],
                           capture_output=True, text=True, env=env, cwd=tmp)
        recs = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
        check(p.returncode == 0 and len(recs) == 3 and recs[0]["result"]["model"] == "tiny-a",
              f"read_meta.py, no GST_PLUGIN_PATH: {p.returncode} {p.stderr.strip()[-300:]}")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
