#!/usr/bin/env python3
"""overlay_demo.py: one frame through gpunetclassify and objectdetectionoverlay, the
classifier's label drawn on a detector's box, written as a PNG (GStreamer 1.24+ with
GstAnalytics and objectdetectionoverlay; Debian 13: python3-gi,
gir1.2-gst-plugins-bad-1.0, gstreamer1.0-plugins-bad).

The boxes are not a detector's: this script makes a videotestsrc frame and adds to it
the GstAnalyticsODMtd boxes a detector (onnxinference ! ssdobjectdetector, or any
element producing ODMtd) would add, at fixed places, then runs

    appsrc ! gpunetclassify roi-mode=regions ! videoconvert ! objectdetectionoverlay
      ! videoconvert ! pngenc ! filesink

gpunetclassify classifies each box's crop and relates a GstAnalyticsClsMtd to it;
objectdetectionoverlay draws each box with that class's label and score.

    overlay_demo.py --checkpoint CKPT [--model MODEL] [--labels FILE] [--out PNG]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import read_meta  # noqa: E402  (PyGObject checks and the build tree's plugin)

from gi.repository import GLib, Gst  # noqa: E402

# (type, x, y, w, h) in a 320x240 frame
BOXES = [("thing", 64, 50, 100, 100), ("other", 190, 100, 110, 110)]
W, H = 320, 240


def test_frame():
    """One writable RGBA videotestsrc frame with the boxes as ODMtd."""
    pipe = Gst.parse_launch(
        "videotestsrc num-buffers=1 pattern=smpte ! video/x-raw,format=RGBA,"
        "width=%d,height=%d ! appsink name=sink" % (W, H))
    pipe.set_state(Gst.State.PLAYING)
    sample = pipe.get_by_name("sink").emit("pull-sample")
    pipe.set_state(Gst.State.NULL)
    if sample is None:
        raise RuntimeError("videotestsrc gave no frame")
    buf = sample.get_buffer().copy_deep()
    rmeta = read_meta.GstAnalytics.buffer_add_analytics_relation_meta(buf)
    for t, x, y, w, h in BOXES:
        rmeta.add_od_mtd(GLib.quark_from_string(t), x, y, w, h, 0.9)
    return buf


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--model", default="gpunet-0")
    ap.add_argument("--labels")
    ap.add_argument("--out", default="overlay.png")
    a = ap.parse_args()
    if read_meta.GstAnalytics is None:
        print("overlay_demo.py: no GstAnalytics in this Python's GStreamer (1.24+ "
              "needed; Debian 13: gir1.2-gst-plugins-bad-1.0)", file=sys.stderr)
        return 3
    Gst.init(None)
    if Gst.ElementFactory.find("objectdetectionoverlay") is None:
        print("overlay_demo.py: no objectdetectionoverlay (gst-plugins-bad 1.24+)",
              file=sys.stderr)
        return 3
    frame = test_frame()
    labels = ' labels="%s"' % a.labels if a.labels else ""

    def feed(pipeline):
        src = pipeline.get_by_name("src")
        src.emit("push-buffer", frame)
        src.emit("end-of-stream")

    results = read_meta.run_all(
        'appsrc name=src format=time caps=video/x-raw,format=RGBA,width=%d,height=%d,'
        'framerate=1/1 ! gpunetclassify name=classify roi-mode=regions model="%s" '
        'checkpoint="%s"%s ! videoconvert ! objectdetectionoverlay '
        'labels-color=0xff000000 object-detection-outline-color=0xffff0000 ! '
        'videoconvert ! pngenc ! filesink location="%s"'
        % (W, H, a.model, a.checkpoint, labels, a.out),
        setup=feed)
    for c in results[0]["analytics"] if results else []:
        if c["box"]:
            print("%s box at %d,%d %dx%d: %s %.3f" % (
                c["box"]["type"], c["box"]["x"], c["box"]["y"], c["box"]["w"],
                c["box"]["h"], c["labels"][0], c["scores"][0]))
    print("wrote %s" % a.out)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RuntimeError as e:
        print("overlay_demo.py: %s" % e, file=sys.stderr)
        sys.exit(1)
