#!/usr/bin/env python3
"""test_python_analytics.py: pipelines/read_meta.py reads gpunetclassify's GstAnalytics
output through gi.repository.GstAnalytics (GStreamer 1.24+): the frame's ClsMtd and,
with roi-mode=regions on detector boxes (ODMtd, added in Python to the buffers an
appsrc pushes), each box's ClsMtd related to it; labels and scores equal to our own
meta's record.  Exits 77 (skipped) where python3-gi or the GstAnalytics
introspection data is missing (GStreamer 1.22), or the plugin was built without it."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "pipelines"))

try:
    import gi
    gi.require_version("Gst", "1.0")
    gi.require_version("GstAnalytics", "1.0")
    from gi.repository import GLib, Gst, GstAnalytics
except (ImportError, ValueError) as e:
    print("SKIP: python3-gi with GstAnalytics introspection (GStreamer 1.24+) not "
          "available: %s" % e)
    sys.exit(77)

import read_meta  # noqa: E402

DATA = os.environ.get("GPUNET_TEST_DATA", os.path.join(HERE, "..", "data"))
MODEL = os.path.join(DATA, "fixtures", "tiny-a.json")
CKPT = os.path.join(DATA, "fixtures", "tiny-a", "tiny-a.pth.tar")
W, H = 64, 48

Gst.init(None)
el = Gst.ElementFactory.make("gpunetclassify", None)
if el is None:
    print("FAIL gpunetclassify not found")
    sys.exit(1)
if not el.get_property("analytics-meta"):
    print("SKIP: this build of the plugin has no GstAnalytics")
    sys.exit(77)

passed = failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok   %s" % name)
    else:
        failed += 1
        print("FAIL %s %s" % (name, detail))


def same(rec, cls):
    """our record and a read ClsMtd hold the same classes, best first"""
    return (cls["labels"] == rec["labels"]
            and all(abs(a - b) < 1e-6 for a, b in zip(cls["scores"], rec["scores"]))
            and len(cls["scores"]) == len(rec["scores"]))


# frames: one ClsMtd each, no box, our record's classes
res = read_meta.run_all(
    'videotestsrc num-buffers=3 ! video/x-raw,format=RGBA,width=%d,height=%d ! '
    'gpunetclassify name=classify model="%s" checkpoint="%s" top-k=3 ! fakesink'
    % (W, H, MODEL, CKPT))
check("one entry per frame", len(res) == 3, repr(res))
for i, r in enumerate(res):
    a = r["analytics"]
    check("frame %d: one ClsMtd, no box" % i, a is not None and len(a) == 1
          and a[0]["box"] is None, repr(a))
    if a:
        check("frame %d: ClsMtd is our record" % i, same(r["result"], a[0]),
              "%r %r" % (r["result"], a[0]))
    check("frame %d: scores best first" % i,
          a and all(x >= y for x, y in zip(a[0]["scores"], a[0]["scores"][1:])))

# regions: boxes given as ODMtd; each one's ClsMtd related to it
BOXES = [("car", 2, 3, 30, 20), ("person", 36, 10, 25, 30)]


def feed(pipeline):
    src = pipeline.get_by_name("src")
    for n in range(2):
        data = bytes(((i * 7 + n * 31 + (i // 97) * 13) & 0xff) for i in range(W * H * 4))
        buf = Gst.Buffer.new_wrapped(data)
        buf.pts = n * Gst.SECOND // 25
        rmeta = GstAnalytics.buffer_add_analytics_relation_meta(buf)
        for t, x, y, w, h in BOXES:
            rmeta.add_od_mtd(GLib.quark_from_string(t), x, y, w, h, 0.8)
        src.emit("push-buffer", buf)
    src.emit("end-of-stream")


res = read_meta.run_all(
    'appsrc name=src format=time caps=video/x-raw,format=RGBA,width=%d,height=%d,'
    'framerate=25/1 ! gpunetclassify name=classify roi-mode=regions model="%s" '
    'checkpoint="%s" ! fakesink' % (W, H, MODEL, CKPT), setup=feed)
check("two region frames", len(res) == 2, repr(res))
for i, r in enumerate(res):
    a = r["analytics"] or []
    got = sorted((c["box"]["type"], c["box"]["x"], c["box"]["y"], c["box"]["w"],
                  c["box"]["h"]) for c in a if c["box"])
    check("frame %d: a ClsMtd related to each box" % i, len(a) == 2 and
          got == sorted(BOXES), repr(a))
    check("frame %d: box labels are class names" % i,
          all(c["labels"] and c["labels"][0].startswith("class-") for c in a), repr(a))

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
