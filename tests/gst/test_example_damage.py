#!/usr/bin/env python3
"""test_example_damage.py EXAMPLE_APP ARCH CHECKPOINT: a clip with a damaged stretch
decodes without an error but with frames missing (issue 43, defect 12); the example
application (what scripts/classify.sh runs) names how many of the frames the clip's
duration promises never arrived, and says nothing for an intact clip.  Exits 77
without openh264enc, mp4mux or an H.264 decoder."""
import re
import subprocess
import sys
import tempfile

app, arch, ckpt = sys.argv[1:4]
FAILED = 0


def check(cond, what):
    global FAILED
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED += 1


for e in ("openh264enc", "mp4mux", "h264parse", "qtdemux"):
    if subprocess.run(["gst-inspect-1.0", "--exists", e]).returncode != 0:
        print(f"SKIP: no {e}")
        sys.exit(77)
if all(subprocess.run(["gst-inspect-1.0", "--exists", d]).returncode != 0
       for d in ("openh264dec", "avdec_h264")):
    print("SKIP: no H.264 decoder")
    sys.exit(77)

with tempfile.TemporaryDirectory() as tmp:
    clip, bad = f"{tmp}/c.mp4", f"{tmp}/d.mp4"
    subprocess.run(["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=300", "!",
                    "video/x-raw,width=320,height=240,framerate=30/1", "!", "openh264enc",
                    "!", "h264parse", "!", "mp4mux", "!", "filesink", f"location={clip}"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    data = bytearray(open(clip, "rb").read())
    n = len(data)
    data[n // 3: n // 3 + n // 5] = bytes(n // 5)    # a stretch of the frames zeroed
    open(bad, "wb").write(data)

    def run(path):
        desc = (f'filesrc location="{path}" ! decodebin ! videoconvert ! '
                f'gpunetclassify name=classify model="{arch}" checkpoint="{ckpt}" ! fakesink')
        return subprocess.run([app, "--pipeline", desc], capture_output=True, text=True)

    p = run(clip)
    check(p.returncode == 0 and p.stdout.strip().endswith("300 frames")
          and "lost" not in p.stdout + p.stderr, f"intact clip: {p.stdout[-60:]!r} {p.stderr[-200:]}")
    p = run(bad)
    m = re.search(r"(\d+) frames \((\d+) of 300 lost\)\s*$", p.stdout)
    check(m is not None and int(m.group(1)) + int(m.group(2)) == 300 and int(m.group(2)) > 0
          and "were lost" in p.stderr, f"damaged clip: {p.stdout[-60:]!r} {p.stderr[-300:]}")
sys.exit(1 if FAILED else 0)
