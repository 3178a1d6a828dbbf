"""gpunet-tag swapping sources after inputs that fail while they preroll
(tests/gst/testsrc's gpunettestsrc: error=early posts an error instead of its first
frame, while the pipeline waits for the source's preroll).

The pipeline's own change back to PLAYING runs in GStreamer's thread pool and sets
every child's state under the pipeline's state lock.  gpunet-tag stopped and removed
the failed input's source without that lock, so the pool's pass could take the
source just before it was stopped and set it PLAYING again just after: the source
ran on outside the pipeline and was disposed, still PLAYING, by the pool thread.
On GStreamer 1.22 about one run of 800 such inputs in two printed GStreamer-CRITICALs
(gst_element_set_state / gst_bin_remove on a freed element, "Trying to dispose
element source, but it is in PLAYING") and about one in three crashed.  Now every
run ends normally, without a CRITICAL, and every input has its own summary.

    test_tag_swap.py GPUNET_TAG DATA_DIR TEST_PLUGIN_DIR"""
import json
import os
import subprocess
import sys
import tempfile

tag, data, plugin_dir = (os.path.abspath(a) for a in sys.argv[1:4])
PAIRS = 400         # a failing input and a good one each: about 1.5 s a run here
RUNS = 3            # the old code failed 5 runs in 6
failed = 0


def check(cond, what):
    global failed
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failed += 1


with tempfile.TemporaryDirectory() as tmp:
    env = dict(os.environ, GST_REGISTRY_1_0=os.path.join(tmp, "registry.bin"))
    env["GST_PLUGIN_PATH_1_0"] = os.pathsep.join(
        [plugin_dir] + [p for p in [os.environ.get("GST_PLUGIN_PATH_1_0")] if p])
    out = os.path.join(tmp, "tags.jsonl")
    for run in range(RUNS):
        inputs = []
        for i in range(PAIRS):
            inputs += [f"gpunet-test://?error=early&run={run}&i={i}",
                       f"gpunet-test://?frames=2&run={run}&i={i}"]
        try:
            p = subprocess.run([tag, "-m", f"{data}/fixtures/tiny-a.json",
                                "-c", f"{data}/fixtures/tiny-a/tiny-a.pth.tar",
                                "--threads", "1", "-q", "--overwrite", "-o", out] + inputs,
                               capture_output=True, text=True, env=env, timeout=120)
            rc, err = p.returncode, p.stderr
        except subprocess.TimeoutExpired:
            rc, err = None, "(killed after 120 s: the tool hung)"
        bad_lines = [l for l in err.splitlines()
                     if "CRITICAL" in l or "dispose element" in l or "killed" in l]
        check(rc == 1 and not bad_lines,
              f"run {run}: {2 * PAIRS} inputs, half failing while prerolling: exit 1 "
              f"(some inputs failed), no GStreamer-CRITICAL: rc {rc}, {bad_lines[:4]}")
        sums = {}
        if rc == 1:
            with open(out) as f:
                for line in f:
                    r = json.loads(line)
                    if r["type"] == "summary":
                        sums.setdefault(r["input"], []).append(r)
        wrong = []
        for name in inputs:
            s = sums.get(name, [])
            if "error=early" in name:
                good = (len(s) == 1 and s[0]["status"] == "error"
                        and s[0]["message"] == "gpunet-test: an error")
            else:
                good = (len(s) == 1 and s[0]["status"] == "ok"
                        and s[0]["frames"] == 2 and s[0]["classified"] == 2)
            if not good:
                wrong.append((name, s[:1]))
        check(rc == 1 and not wrong, f"run {run}: each input one summary of its own "
              f"(failed: its error; good: ok, 2 frames classified): {wrong[:2]}")
        if failed:
            break
print(f"{failed} failed")
sys.exit(1 if failed else 0)
