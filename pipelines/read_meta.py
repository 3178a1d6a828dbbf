#!/usr/bin/env python3
"""read_meta.py: reads gpunetclassify's results from Python through GObject
introspection (Debian: python3-gi, gir1.2-gstreamer-1.0; gst-python is not needed).

Two carriers, read here both ways:
- GStreamer 1.24+ with GstAnalytics (Debian 13: gir1.2-gst-plugins-bad-1.0): every
  record is also a GstAnalyticsClsMtd in the buffer's GstAnalyticsRelationMeta, a
  region's related (RELATE_TO) to its GstAnalyticsODMtd box: buffer_analytics() reads
  them through gi.repository.GstAnalytics (labels, scores, the box), as any analytics
  consumer (objectdetectionoverlay, trackers) would;
- everywhere (1.22 too): our own meta, with the fields analytics meta has no place for
  (model, ids, num-classes, roi-id, inferred): buffer_results().

The element attaches a GstCustomMeta named "GstGpunetClassificationMeta"; with
GStreamer 1.22's introspection data, Gst.Buffer.get_custom_meta(name) returns it and
meta.get_structure() its Gst.Structure. Scalars read with get_string/get_int/
get_double/get_boolean; the list fields (ids, labels, scores) are GstValueArrays,
which plain PyGObject cannot convert with get_value() ("unknown type GstValueArray")
but Gst.Structure.get_array(field) returns as a GObject.ValueArray.

    read_meta.py CHECKPOINT [MODEL [NUM_FRAMES]]
    read_meta.py --pipeline 'DESCRIPTION with gpunetclassify name=classify'

Prints one JSON line per frame: {"frame", "result": our meta's record, and where this
Python has GstAnalytics, "analytics": [{"labels", "scores", "box"}, ...]}.

Run under a Python that has PyGObject ("gi") and GStreamer's introspection data; when
started by another one (a pyenv or virtualenv python3 first on PATH), the script runs
itself again under the first of $GPUNET_PYTHON (only it, when set), /usr/bin/python3 and
the python3 programs on PATH that has them, or says what to install.
"""
import json
import os
import shutil
import subprocess
import sys
import warnings

GI_PROBE = "import gi; gi.require_version('Gst', '1.0'); from gi.repository import Gst"
GI_HINT = ("install PyGObject and GStreamer's introspection data for it (Debian/Ubuntu: "
           "sudo apt install python3-gi gir1.2-gstreamer-1.0) and run this script with that "
           "Python (Debian: /usr/bin/python3), or set GPUNET_PYTHON to a Python that has them")


def _python_with_gi():
    """The first Python other than this one whose `gi` loads Gst 1.0, or None."""
    if os.environ.get("GPUNET_PYTHON"):
        candidates = [os.environ["GPUNET_PYTHON"]]
    else:
        candidates = ["/usr/bin/python3"]
        for d in os.environ.get("PATH", "").split(os.pathsep):
            p = shutil.which("python3", path=d) if d else None
            if p:
                candidates.append(p)
    for c in candidates:
        try:
            if subprocess.run([c, "-c", GI_PROBE], capture_output=True,
                              timeout=30).returncode == 0:
                return c
        except (OSError, subprocess.SubprocessError):
            pass
    return None


try:
    import gi

    gi.require_version("Gst", "1.0")
    from gi.repository import GLib, Gst  # noqa: E402
except (ImportError, ValueError) as _gi_error:
    _why = ("this Python (%s) cannot load GStreamer through PyGObject (%s)"
            % (sys.executable, _gi_error))
    if __name__ != "__main__":
        raise ImportError("read_meta: %s; %s" % (_why, GI_HINT)) from _gi_error
    # once only: the Python found must not hand over again (GPUNET_READ_META_REEXEC)
    _other = None if os.environ.get("GPUNET_READ_META_REEXEC") else _python_with_gi()
    if _other:
        os.environ["GPUNET_READ_META_REEXEC"] = "1"
        os.execv(_other, [_other, os.path.abspath(__file__)] + sys.argv[1:])
    print("read_meta.py: %s, and no other Python here can; %s." % (_why, GI_HINT),
          file=sys.stderr)
    sys.exit(3)

META_NAME = "GstGpunetClassificationMeta"

# GstAnalytics (GStreamer 1.24+ and its introspection data): None where missing
try:
    gi.require_version("GstAnalytics", "1.0")
    from gi.repository import GstAnalytics  # noqa: E402
except (ImportError, ValueError):
    GstAnalytics = None


def _array(structure, field):
    ok, arr = structure.get_array(field)
    if not ok or arr is None:
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return [arr.get_nth(i) for i in range(arr.n_values)]


def structure_to_dict(s):
    """The classification record of a meta (or bus message) structure as a dict."""
    return {
        "model": s.get_string("model"),
        "label": s.get_string("label"),
        "label-id": s.get_int("label-id")[1],
        "confidence": s.get_double("confidence")[1],
        "ids": _array(s, "ids"),
        "labels": _array(s, "labels"),
        "scores": _array(s, "scores"),
        "num-classes": s.get_int("num-classes")[1],
        "roi-id": s.get_int("roi-id")[1],
        "inferred": s.get_boolean("inferred")[1],
    }


def buffer_results(buf):
    """The classification of a buffer as a dict, or None when it has none."""
    meta = buf.get_custom_meta(META_NAME)
    if meta is None:
        return None
    return structure_to_dict(meta.get_structure())


def buffer_analytics(buf):
    """The buffer's GstAnalyticsClsMtds as a list of dicts, best class first:
    {"labels": [...], "scores": [...], "box": None for the frame's own, else the
    related ODMtd box {"type", "x", "y", "w", "h", "confidence"}}.  [] when the buffer
    has no analytics meta; None where this Python has no GstAnalytics (< 1.24)."""
    if GstAnalytics is None:
        return None
    rmeta = GstAnalytics.buffer_get_analytics_relation_meta(buf)
    if rmeta is None:
        return []
    n = GstAnalytics.relation_get_length(rmeta)
    boxes = {}
    for i in range(n):
        ok, od = rmeta.get_od_mtd(i)
        if ok:
            boxes[i] = od
    out = []
    for i in range(n):
        ok, cls = rmeta.get_cls_mtd(i)
        if not ok:
            continue
        k = cls.get_length()
        rec = {"labels": [GLib.quark_to_string(cls.get_quark(j)) for j in range(k)],
               "scores": [cls.get_level(j) for j in range(k)],
               "box": None}
        # the box the class relates to (box -> class, as objectdetectionoverlay reads)
        for b, od in boxes.items():
            if rmeta.get_relation(b, i) & GstAnalytics.RelTypes.RELATE_TO:
                _, x, y, w, h, conf = od.get_location()
                rec["box"] = {"type": GLib.quark_to_string(od.get_obj_type()),
                              "x": x, "y": y, "w": w, "h": h, "confidence": conf}
                break
        out.append(rec)
    return out


def _load_build_plugin():
    """From a source checkout, use the plugin of its build tree (BUILD_DIR, default
    build/) so no GST_PLUGIN_PATH is needed; otherwise the installed plugin."""
    here = os.path.dirname(os.path.abspath(__file__))
    build = os.environ.get("BUILD_DIR", os.path.join(here, "..", "build"))
    so = os.path.join(build, "gst", "libgstgpunet.so")
    if os.path.isfile(so) and Gst.ElementFactory.find("gpunetclassify") is None:
        try:
            Gst.Plugin.load_file(so)
        except GLib.Error as e:
            print("warning: cannot load %s: %s" % (so, e.message), file=sys.stderr)


def run(description, element_name="classify", timeout_s=120):
    """Runs a pipeline to EOS and returns one result dict (or None) per buffer
    leaving the element named `element_name`. Raises RuntimeError on errors."""
    return [r["result"] for r in run_all(description, element_name, timeout_s)]


def run_all(description, element_name="classify", timeout_s=120, setup=None):
    """As run(), each buffer as {"result": buffer_results(), "analytics":
    buffer_analytics()} (the latter None without GstAnalytics).  `setup`, when
    given, is called with the pipeline before it starts (to feed an appsrc)."""
    Gst.init(None)
    _load_build_plugin()
    pipeline = Gst.parse_launch(description)
    if setup is not None:
        setup(pipeline)
    element = pipeline.get_by_name(element_name)
    if element is None:
        raise RuntimeError("no element named '%s' in the pipeline" % element_name)
    results = []

    def probe(pad, info):
        buf = info.get_buffer()
        results.append({"result": buffer_results(buf),
                        "analytics": buffer_analytics(buf)})
        return Gst.PadProbeReturn.OK

    element.get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, probe)
    try:
        if pipeline.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
            msg = pipeline.get_bus().pop_filtered(Gst.MessageType.ERROR)
            raise RuntimeError(msg.parse_error()[0].message if msg else "state change failed")
        msg = pipeline.get_bus().timed_pop_filtered(
            timeout_s * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
        if msg is None:
            raise RuntimeError("timed out")
        if msg.type == Gst.MessageType.ERROR:
            raise RuntimeError(msg.parse_error()[0].message)
    finally:
        pipeline.set_state(Gst.State.NULL)
    return results


def main(argv):
    if len(argv) == 3 and argv[1] == "--pipeline":
        description = argv[2]
    elif 2 <= len(argv) <= 4 and not argv[1].startswith("-"):
        # a whole number of frames: "-5" went into num-buffers as -1 (no end)
        frames = argv[3] if len(argv) > 3 else "10"
        if not (frames.isascii() and frames.isdigit() and 0 < int(frames) <= 2**31 - 1):
            print("read_meta.py: NUM_FRAMES needs a positive integer, got '%s'" % frames,
                  file=sys.stderr)
            return 2
        description = (
            "videotestsrc num-buffers=%s ! videoconvert ! gpunetclassify name=classify "
            'checkpoint="%s" model="%s" ! fakesink'
            % (frames, argv[1], argv[2] if len(argv) > 2 else "gpunet-0"))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        for i, r in enumerate(run_all(description)):
            line = {"frame": i, "result": r["result"]}
            if r["analytics"] is not None:
                line["analytics"] = r["analytics"]
            print(json.dumps(line))
    except RuntimeError as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
