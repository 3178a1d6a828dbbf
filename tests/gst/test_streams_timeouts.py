"""gpunet-streams with inputs that hang instead of failing, beside a good one.  Three
FIFOs given as file:// URIs are the hanging inputs, real file objects in the states a
damaged file or a dead server leaves decodebin in:
  - partial: the first half of a streamable Matroska clip written, the writer kept
    open: frames, then none and no end of stream (--stall-timeout);
  - silent: a writer keeps it open and writes nothing: it opens, no frame ever
    comes (--open-timeout, "no video frame");
  - nowriter: no writer at all: filesrc's open() blocks, as on a hung mount
    (--open-timeout, "did not open").
Each is named with one sentence that says what to do, the good input's frames are
all classified, the exit status is 1, and the tool ends within a bound derived from
the timeouts (open + stall + a margin for a loaded machine; before the timeouts
existed it never ended).  A live source slower than --stall-timeout is not a stall
(three frame durations at least).

    test_streams_timeouts.py GPUNET_STREAMS DATA_DIR
Exits 77 (skipped) when jpegenc or matroskamux is missing."""
import os
import re
import subprocess
import sys
import tempfile
import time

tool, data = (os.path.abspath(a) for a in sys.argv[1:3])
model = ["--model", f"{data}/fixtures/tiny-a.json",
         "--checkpoint", f"{data}/fixtures/tiny-a/tiny-a.pth.tar", "--n-threads", "1"]
OPEN, STALL = 2, 1.5
BOUND = OPEN + STALL + 25       # the margin: start-up on two shared, loaded cores
ELEMENT_NAME = re.compile(r"\b(qtdemux|matroskademux|uridecodebin|decodebin|typefind|"
                          r"filesrc|jpegdec)\d*\b|\b[sck]\d+\b")
failed = 0


def check(cond, what):
    global failed
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failed += 1


def launch(desc, cwd):
    return subprocess.run(["gst-launch-1.0", "-q"] + desc.split(), cwd=cwd,
                          capture_output=True).returncode == 0


with tempfile.TemporaryDirectory() as tmp:
    if not (launch("videotestsrc num-buffers=10 ! video/x-raw,width=64,height=48,"
                   "framerate=10/1 ! jpegenc ! matroskamux ! filesink location=good.mkv", tmp)
            and launch("videotestsrc num-buffers=20 pattern=ball ! video/x-raw,width=64,"
                       "height=48,framerate=10/1 ! jpegenc ! matroskamux streamable=true ! "
                       "filesink location=stream.mkv", tmp)):
        print("SKIP: jpegenc or matroskamux missing")
        sys.exit(77)
    fifos = {}
    for name in ("partial", "silent", "nowriter"):
        fifos[name] = os.path.join(tmp, name)
        os.mkfifo(fifos[name])
    # O_RDWR: a writer that never blocks and keeps the FIFO open (no end of file);
    # half a clip is about 22 KB, within the pipe's buffer
    partial = os.open(fifos["partial"], os.O_RDWR)
    silent = os.open(fifos["silent"], os.O_RDWR)
    clip = open(os.path.join(tmp, "stream.mkv"), "rb").read()
    os.write(partial, clip[:len(clip) // 2])

    t0 = time.monotonic()
    p = subprocess.Popen([tool] + model + ["--open-timeout", str(OPEN), "--stall-timeout",
                                           str(STALL), "good.mkv"]
                         + ["file://" + fifos[n] for n in ("partial", "silent", "nowriter")],
                         cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=BOUND)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    dt = time.monotonic() - t0
    os.close(partial)
    os.close(silent)
    lines = out.splitlines()
    check(p.returncode == 1 and dt < BOUND,
          f"ends within {BOUND} s (open {OPEN} + stall {STALL} + margin), exit 1: "
          f"rc {p.returncode}, {dt:.1f} s")
    m = re.search(r"stream 1 \(partial\): no frame for 1.5 s after (\d+) frames and no end of "
                  r"stream .*raise --stall-timeout if it is only slow", err)
    check(m is not None and int(m.group(1)) > 0,
          f"the stalled input is named, with its frames and what to do: {err.strip()}")
    check(re.search(r"stream 2 \(silent\): no video frame within 2 s of opening .*raise "
                    r"--open-timeout if it is only slow", err) is not None,
          f"the silent input is named, with what to do: {err.strip()}")
    check(re.search(r"stream 3 \(nowriter\): the source did not open within 2 s .*raise "
                    r"--open-timeout if it is only slow", err) is not None,
          f"the input blocked in open() is named, with what to do: {err.strip()}")
    said = [l for l in err.splitlines() if l.startswith("gpunet-streams: stream")]
    check(len(said) == 3 and not any(ELEMENT_NAME.search(l) for l in said),
          f"one sentence per hanging input, no element name: {said}")
    check("CRITICAL" not in err and "WARNING **" not in err,
          f"no GLib or GStreamer warning (an element left running): {err.strip()[-600:]}")
    check("stream 0: 10 frames" in lines
          and any(re.match(r"stream 0 \(good\.mkv\) stats: in=10 classified=10 carried=0 "
                           r"skipped=0 failed=0 dropped=0 ", l) for l in lines),
          f"the good input's frames are all classified: {lines}")
    check(m is not None and f"stream 1: {m.group(1)} frames (its input failed, see above)"
          in lines and "stream 2: 0 frames (its input failed, see above)" in lines
          and "stream 3: 0 frames (its input failed, see above)" in lines
          and lines[-1].startswith("streams=4 "), f"the counts and the last line: {lines}")

# a live source at 4 frames/s is not stalled by --stall-timeout 0.2: its limit is
# three frame durations
r = subprocess.run([tool] + model + ["--streams", "1", "--frames", "3", "--width", "64",
                                     "--height", "48", "--live", "--fps", "4",
                                     "--stall-timeout", "0.2"],
                   capture_output=True, text=True, timeout=60)
check(r.returncode == 0 and "stream 0: 3 frames" in r.stdout.splitlines()
      and "gpunet-streams:" not in r.stderr,
      f"--live --fps 4 --stall-timeout 0.2: no stall, nothing said: {r.returncode} "
      f"{r.stderr.strip()}")
for bad in (["--open-timeout", "0"], ["--stall-timeout", "-1"]):
    r = subprocess.run([tool] + model + bad, capture_output=True, text=True, timeout=60)
    check(r.returncode == 2 and "--open-timeout must be more than 0 seconds" in r.stderr,
          f"{' '.join(bad)} refused: {r.returncode} {r.stderr.strip()}")
print(f"{failed} failed")
sys.exit(1 if failed else 0)
