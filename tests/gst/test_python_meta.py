#!/usr/bin/env python3
"""test_python_meta.py: checks that the documented Python way of reading
gpunetclassify's results (pipelines/read_meta.py, python3-gi introspection) works on
the tiny-a fixture model, and that json-output writes lines Python's json module
reads. Exits 77 (skipped) when python3-gi or Gst is missing."""
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "pipelines"))

try:
    import gi
    gi.require_version("Gst", "1.0")
    from gi.repository import Gst  # noqa: F401
except (ImportError, ValueError) as e:
    print("SKIP: python3-gi / Gst introspection not available: %s" % e)
    sys.exit(77)

import read_meta  # noqa: E402

DATA = os.environ.get("GPUNET_TEST_DATA", os.path.join(HERE, "..", "data"))
MODEL = os.path.join(DATA, "fixtures", "tiny-a.json")
CKPT = os.path.join(DATA, "fixtures", "tiny-a", "tiny-a.pth.tar")

passed = failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok   %s" % name)
    else:
        failed += 1
        print("FAIL %s %s" % (name, detail))


def pipeline(props="", frames=6, caps="video/x-raw,format=NV12,width=64,height=48"):
    return ('videotestsrc num-buffers=%d ! %s ! gpunetclassify name=classify '
            'model="%s" checkpoint="%s" %s ! fakesink' % (frames, caps, MODEL, CKPT, props))


results = read_meta.run(pipeline())
check("one result per frame", len(results) == 6 and all(r is not None for r in results),
      repr(results[:1]))
r = results[0]
check("record fields", r["num-classes"] == 16 and r["roi-id"] == -1 and r["inferred"]
      and r["model"], repr(r))
check("top-5 lists", len(r["ids"]) == 5 and len(r["labels"]) == 5 and len(r["scores"]) == 5,
      repr(r))
check("top-1 is first", r["ids"][0] == r["label-id"] and r["labels"][0] == r["label"]
      and abs(r["scores"][0] - r["confidence"]) < 1e-9, repr(r))
check("scores sorted", all(a >= b for a, b in zip(r["scores"], r["scores"][1:])), repr(r))
check("labels class-<id>", r["labels"] == ["class-%d" % i for i in r["ids"]], repr(r))

results = read_meta.run(pipeline("interval=1 top-k=3"))
check("interval marks carried", [x["inferred"] for x in results] ==
      [True, False, True, False, True, False], repr([x["inferred"] for x in results]))
check("top-k=3", all(len(x["ids"]) == 3 for x in results))

# json-output: one JSON object per record that Python's strict json module reads,
# labels with quotes, backslashes, control characters and UTF-8 as written
with tempfile.TemporaryDirectory() as tmp:
    labels = ['say "hi"', "back\\slash", "tab\there", "caf\u00e9 \u2713", "bell\x07"]
    labels += ["label %d" % i for i in range(len(labels), 16)]
    labels_path = os.path.join(tmp, "labels.txt")
    json_path = os.path.join(tmp, "records.jsonl")
    with open(labels_path, "w", encoding="utf-8") as f:
        f.write("\n".join(labels) + "\n")
    results = read_meta.run(pipeline('top-k=16 interval=1 labels="%s" json-output="%s"'
                                     % (labels_path, json_path)))
    with open(json_path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    try:
        records = [json.loads(line) for line in lines]
    except ValueError as e:
        records = []
        check("json-output parses", False, str(e))
    check("json-output: one line per frame", len(records) == len(results) == 6,
          "%d lines" % len(lines))
    keys = ["pts", "frame", "roi-id", "model", "precision", "label", "label-id", "confidence",
            "ids", "labels", "scores", "inferred"]
    check("json-output fields", all(list(r) == keys for r in records),
          repr(records[:1]))
    check("json-output matches the meta", all(
        r["frame"] == i and r["roi-id"] == -1 and r["label"] == m["label"]
        and r["precision"] == "fp32"
        and r["ids"] == m["ids"] and r["labels"] == m["labels"]
        and r["inferred"] == m["inferred"] and isinstance(r["pts"], int)
        and all(abs(a - b) < 1e-7 for a, b in zip(r["scores"], m["scores"]))
        for i, (r, m) in enumerate(zip(records, results))), repr(records[:1]))
    check("json-output labels escaped", all(sorted(r["labels"]) == sorted(labels)
                                            for r in records), repr(records[:1]))

try:
    read_meta.run('videotestsrc num-buffers=1 ! gpunetclassify name=classify ! fakesink')
    check("missing checkpoint raises", False)
except RuntimeError as e:
    check("missing checkpoint raises", "checkpoint" in str(e), str(e))

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
