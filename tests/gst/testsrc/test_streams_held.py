"""gpunet-streams when the pipeline does not reach, or leaves, PLAYING while its
streams run (tests/gst/testsrc's gpunettestsrc forces each state on purpose):

  - late error: one input fails, and a second error of it reaches the pipeline
    after its source left (a streaming thread that had taken the bus first), while
    another input's source is still prerolling.  GStreamer's bin then abandons the
    pipeline's change to PLAYING for good, and its EOS, posted only in PLAYING,
    never comes: the tool hung (about one run in a thousand of error-texts on
    GStreamer 1.26 under load).  Now every input error, said or not, asks for
    PLAYING again: the run ends by the pipeline's own EOS, at once, the good
    input's frames all classified.
  - held, then stalled: an input gives frames, the pipeline loses PLAYING (an
    element re-prerolls and never finishes) and the input gives nothing more.  The
    stall check ran only while the pipeline played: the tool hung.  Now it runs
    whatever the pipeline's state: the stream ends after --stall-timeout with a
    sentence that names the state, the other stream runs to its end.
  - held, then ended: every stream's end of stream left its element, but the
    pipeline is not PLAYING, so its EOS never comes: the tool hung.  Now the run
    ends after --stall-timeout, and says why.

  - gpunet-tag: an input that fails while its source prerolls left the pipeline in
    PAUSED, and the next input, a live one, was synced to PAUSED and gave nothing
    until --stall-timeout (300 s by default); now it plays at once.

    test_streams_held.py GPUNET_STREAMS DATA_DIR TEST_PLUGIN_DIR [GPUNET_TAG]"""
import os
import re
import subprocess
import sys
import tempfile
import time

tool, data, plugin_dir = (os.path.abspath(a) for a in sys.argv[1:4])
tag = os.path.abspath(sys.argv[4]) if len(sys.argv) > 4 else None
model = ["--model", f"{data}/fixtures/tiny-a.json",
         "--checkpoint", f"{data}/fixtures/tiny-a/tiny-a.pth.tar", "--n-threads", "1"]
BOUND = 20          # seconds: each case takes 1-3 s; the rest is a loaded machine's margin
failed = 0


def check(cond, what):
    global failed
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failed += 1


def run(args, env):
    t0 = time.monotonic()
    p = subprocess.Popen([tool] + model + args, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    try:
        out, err = p.communicate(timeout=BOUND)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        err += f"\n(killed after {BOUND} s: the tool hung)"
    return p.returncode, out, err, time.monotonic() - t0


with tempfile.TemporaryDirectory() as tmp:
    env = dict(os.environ, GST_REGISTRY_1_0=os.path.join(tmp, "registry.bin"))
    env["GST_PLUGIN_PATH_1_0"] = os.pathsep.join(
        [plugin_dir] + [p for p in [os.environ.get("GST_PLUGIN_PATH_1_0")] if p])

    # the late error, beside a source that prerolls for 1 s
    rc, out, err, dt = run(["gpunet-test://?frames=5&preroll-ms=1000",
                            "gpunet-test://?error=late"], env)
    lines = out.splitlines()
    check(rc == 1 and dt < BOUND and "stream 0: 5 frames" in lines
          and "stream 1: 0 frames (its input failed, see above)" in lines
          and lines[-1].startswith("streams=2 "),
          f"late error: the run ends, the good input's 5 frames counted: rc {rc}, "
          f"{dt:.1f} s, {lines} {err.strip()[-400:]}")
    check(re.search(r"stream 1 \([^)]*\): gpunet-test: the first error", err) is not None
          and "later error" not in err and "every stream ended" not in err
          and "no frame for" not in err,
          f"late error: said once; the pipeline's own EOS ended the run: {err.strip()}")

    # frames, then the pipeline held in PAUSED and the input silent
    rc, out, err, dt = run(["--stall-timeout", "1", "gpunet-test://?frames=3&lose-state=1&end=block",
                            "gpunet-test://?frames=5"], env)
    lines = out.splitlines()
    check(rc == 1 and dt < BOUND and re.search(
              r"stream 0 \([^)]*\): no frame for 1 s after 3 frames, the pipeline stuck in "
              r"PAUSED( \(PLAYING pending\))? instead of PLAYING", err) is not None,
          f"held in PAUSED, stalled: named with the state after --stall-timeout: rc {rc}, "
          f"{dt:.1f} s, {err.strip()}")
    check("stream 0: 3 frames (its input failed, see above)" in lines
          and "stream 1: 5 frames" in lines and "CRITICAL" not in err,
          f"held in PAUSED, stalled: the other stream ran to its end: {lines}")

    # frames and end of stream, the pipeline held in PAUSED: its EOS never comes
    rc, out, err, dt = run(["--stall-timeout", "1", "gpunet-test://?frames=3&lose-state=1"],
                           env)
    lines = out.splitlines()
    check(rc == 0 and dt < BOUND and "stream 0: 3 frames" in lines
          and "every stream ended, but the pipeline did not for 1 s (it is PAUSED" in err,
          f"held in PAUSED, ended: the run ends after --stall-timeout, and says why: "
          f"rc {rc}, {dt:.1f} s, {lines} {err.strip()}")
    # gpunet-tag: an input that fails while its source prerolls, then a live one
    if tag:
        out_file = os.path.join(tmp, "tag.jsonl")
        t0 = time.monotonic()
        p = subprocess.run([tag, "-m", model[1], "-c", model[3], "--threads", "1",
                            "--open-timeout", "5", "--stall-timeout", "5", "-o", out_file,
                            "gpunet-test://?preroll-ms=100000&error=early",
                            "gpunet-test://?frames=5&live=1"],
                           capture_output=True, text=True, env=env, timeout=60)
        dt = time.monotonic() - t0
        check(p.returncode != 0 and "[2/2] gpunet-test://?frames=5&live=1: FAILED" not in p.stderr
              and re.search(r"2 inputs: 1 ok, 0 partial, 1 failed", p.stderr) is not None
              and dt < 5, f"gpunet-tag: a live input after one that failed while prerolling "
              f"plays at once: rc {p.returncode}, {dt:.1f} s, {p.stderr.strip()[-500:]}")
print(f"{failed} failed")
sys.exit(1 if failed else 0)
