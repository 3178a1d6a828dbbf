#!/usr/bin/env python3
"""test_overlay_demo.py: pipelines/overlay_demo.py (the script that made
docs/overlay-regions.png) runs: objectdetectionoverlay draws gpunetclassify's label
on each injected box and a PNG is written.  Exits 77 (skipped) where the script says
GstAnalytics or objectdetectionoverlay is missing (GStreamer 1.22)."""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "pipelines", "overlay_demo.py")
DATA = os.environ.get("GPUNET_TEST_DATA", os.path.join(HERE, "..", "data"))

with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "frame.png")
    r = subprocess.run([sys.executable, SCRIPT,
                        "--model", os.path.join(DATA, "fixtures", "tiny-a.json"),
                        "--checkpoint", os.path.join(DATA, "fixtures", "tiny-a",
                                                     "tiny-a.pth.tar"),
                        "--out", out], capture_output=True, text=True, timeout=120)
    if r.returncode == 3:
        print("SKIP: %s" % r.stderr.strip())
        sys.exit(77)
    lines = r.stdout.splitlines()
    boxes = [l for l in lines if re.match(r"^(thing|other) box at \d+,\d+ \d+x\d+: "
                                          r"class-\d+ [01]\.\d{3}$", l)]
    ok = (r.returncode == 0 and len(boxes) == 2 and os.path.isfile(out)
          and open(out, "rb").read(8) == b"\x89PNG\r\n\x1a\n")
    print(("ok" if ok else "FAIL") + " overlay_demo.py: exit %d, %s %s"
          % (r.returncode, lines, r.stderr))
    sys.exit(0 if ok else 1)
