#!/usr/bin/env python3
"""gpu_check_element.py: the element checks of scripts/gpu-check.sh that gst-launch cannot
express, through python3-gi.

  regions --model M --checkpoint C [--memory cuda|system] [--backend B] [--frames N]
      two regions of interest (GstVideoRegionOfInterestMeta, added in an identity handoff)
      on every frame, roi-mode=both: every frame gives one full-frame record and two region
      records (roi-id 0 and 1), all finite; with --memory cuda the frames reach the element
      as video/x-raw(memory:CUDAMemory) (after cudaupload).
  cycles --model M --checkpoint C [--memory cuda|system] [--backend B] [--cycles 50]
      the same pipeline brought to PLAYING, run until 3 frames were classified, and back to
      NULL, 50 times: no error, every cycle classifies.

The last line is "detail: ..." (what gpu-check.sh puts in its table).  Exit 0 ok, 1 a
check failed, 77 without python3-gi (or, with --memory cuda, without cudaupload)."""
import argparse
import json
import os
import sys
import tempfile
import time

try:
    import gi
    gi.require_version("Gst", "1.0")
    gi.require_version("GstVideo", "1.0")
    from gi.repository import GLib, Gst, GstVideo
except (ImportError, ValueError) as e:
    print(f"detail: skipped: python3-gi with Gst and GstVideo introspection is needed ({e})")
    sys.exit(77)


def pipeline_desc(a, json_path, extra):
    upload = "cudaupload ! " if a.memory == "cuda" else ""
    return (f"videotestsrc pattern=ball num-buffers={a.frames} ! "
            f"video/x-raw,format=NV12,width=640,height=480,framerate=30/1 ! {upload}"
            f"identity name=roi signal-handoffs=true ! "
            f"gpunetclassify name=cls model={a.model} checkpoint={a.checkpoint} "
            f"backend={a.backend} top-k=3 json-output={json_path} {extra} ! "
            f"fakesink name=sink signal-handoffs=true")


def add_rois(identity, buf):
    # the handoff buffer is the one flowing on (in place): two fixed regions
    for i, (x, y, w, h) in enumerate(((40, 30, 200, 160), (320, 200, 240, 240))):
        meta = GstVideo.buffer_add_video_region_of_interest_meta(buf, "face", x, y, w, h)
        meta.id = i


def run_until(pipe, done, timeout_s):
    """PLAYING until done() or EOS/error/timeout; returns an error sentence or None."""
    bus = pipe.get_bus()
    if pipe.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
        m = bus.pop_filtered(Gst.MessageType.ERROR)
        return m.parse_error()[0].message if m else "cannot go to PLAYING"
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        m = bus.timed_pop_filtered(20 * Gst.MSECOND, Gst.MessageType.ERROR | Gst.MessageType.EOS)
        if m and m.type == Gst.MessageType.ERROR:
            return m.parse_error()[0].message
        if (m and m.type == Gst.MessageType.EOS) or done():
            return None
    return f"no progress within {timeout_s} s"


def regions(a):
    tmp = tempfile.mkdtemp(prefix="gpu-check-regions-")
    path = os.path.join(tmp, "regions.jsonl")
    pipe = Gst.parse_launch(pipeline_desc(a, path, "roi-mode=both"))
    pipe.get_by_name("roi").connect("handoff", add_rois)
    err = run_until(pipe, lambda: False, 120)
    caps = pipe.get_by_name("cls").get_static_pad("sink").get_current_caps()
    pipe.set_state(Gst.State.NULL)
    if err:
        print(f"detail: FAIL: {err}")
        return 1
    recs = [json.loads(l) for l in open(path)]
    full = [r for r in recs if r["roi-id"] == -1]
    rois = [r for r in recs if r["roi-id"] >= 0]
    bad = []
    if len(full) != a.frames:
        bad.append(f"{len(full)} full-frame records for {a.frames} frames")
    if len(rois) != 2 * a.frames or sorted({r["roi-id"] for r in rois}) != [0, 1]:
        bad.append(f"{len(rois)} region records (roi-ids {sorted({r['roi-id'] for r in rois})}) "
                   f"for 2 regions x {a.frames} frames")
    if any(not all(abs(s) <= 1 for s in r["scores"]) for r in recs):
        bad.append("a score outside [0, 1]")
    cuda = caps is not None and caps.get_features(0).contains("memory:CUDAMemory")
    if (a.memory == "cuda") != cuda:
        bad.append(f"caps on gpunetclassify's sink pad: {caps.to_string() if caps else None}")
    print(f"{len(full)} full-frame and {len(rois)} region records; sink caps "
          f"{caps.to_string() if caps else None}")
    print(f"detail: {'FAIL: ' + '; '.join(bad) if bad else 'ok'}: {a.frames} frames x 2 "
          f"regions on {a.memory} memory")
    return 1 if bad else 0


def cycles(a):
    tmp = tempfile.mkdtemp(prefix="gpu-check-cycles-")
    a.frames = 100000   # the source never ends within a cycle
    pipe = Gst.parse_launch(pipeline_desc(a, os.path.join(tmp, "cycles.jsonl"), ""))
    count = [0]
    pipe.get_by_name("sink").connect("handoff", lambda *args: count.__setitem__(0, count[0] + 1))
    failures = []
    for i in range(a.cycles):
        count[0] = 0
        err = run_until(pipe, lambda: count[0] >= 3, 30)
        if pipe.set_state(Gst.State.NULL) == Gst.StateChangeReturn.FAILURE:
            err = err or "cannot go back to NULL"
        if err or count[0] < 3:
            failures.append(f"cycle {i + 1}: {err or f'{count[0]} frames'}")
    print("\n".join(failures[:5]))
    print(f"detail: {'FAIL: ' if failures else 'ok: '}{a.cycles - len(failures)}/{a.cycles} "
          f"PLAYING->NULL cycles classified frames on {a.memory} memory")
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["regions", "cycles"])
    ap.add_argument("--model", required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--memory", choices=["cuda", "system"], default="cuda")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--cycles", type=int, default=50)
    a = ap.parse_args()
    Gst.init(None)
    if a.memory == "cuda" and Gst.ElementFactory.find("cudaupload") is None:
        print("detail: skipped: no cudaupload (GStreamer's nvcodec plugin, a GPU)")
        return 77
    return regions(a) if a.what == "regions" else cycles(a)


if __name__ == "__main__":
    sys.exit(main())
