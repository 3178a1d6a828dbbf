#!/usr/bin/env python3
"""test_tag_open.py: gpunet-tag while a source blocks in its state change (issue 43
defect 3): --open-timeout fails that input and the run goes on, and the first SIGTERM
stops the run.  The blocking source is a FIFO given as a file:// URI (no writer:
filesrc's open() waits for one, as on a hung mount or a stalled network source).

    test_tag_open.py GPUNET_TAG FIXTURES
Exits 77 (skipped) when jpegenc or qtmux is missing."""
import os
import signal
import subprocess
import sys
import tempfile
import time

FAILED = 0


def check(cond, what):
    global FAILED
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED += 1


def run(cmd, cwd, term_after=None, limit=30):
    """(returncode or None when it had to be killed, stderr, seconds)"""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    if term_after is not None:
        time.sleep(term_after)
        p.send_signal(signal.SIGTERM)
    try:
        _, err = p.communicate(timeout=limit)
        return p.returncode, err, time.monotonic() - t0
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
        return None, err, time.monotonic() - t0


def main():
    tag, fix = (os.path.abspath(a) for a in sys.argv[1:3])
    model = ["-m", os.path.join(fix, "tiny-a.json"),
             "-c", os.path.join(fix, "tiny-a", "tiny-a.pth.tar")]
    with tempfile.TemporaryDirectory() as tmp:
        if subprocess.run(["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=5", "!",
                           "video/x-raw,width=64,height=64", "!", "jpegenc", "!", "qtmux",
                           "!", "filesink", "location=clip.mov"], cwd=tmp,
                          capture_output=True).returncode != 0:
            print("SKIP: jpegenc or qtmux missing")
            return 77
        fifo = os.path.join(tmp, "stalled")
        os.mkfifo(fifo)
        uri = "file://" + fifo

        rc, err, dt = run([tag] + model + ["--open-timeout", "2", "-o", "a.jsonl", uri,
                                           "clip.mov"], tmp)
        check(rc == 1 and "did not open within 2 s" in err and "clip.mov: ok" in err
              and dt < 20, f"--open-timeout 2 fires on a source blocked in open(), the "
              f"next input runs: rc {rc}, {dt:.1f} s: {err.strip()[-400:]}")

        rc, err, dt = run([tag] + model + ["--open-timeout", "60", "-o", "b.jsonl", uri,
                                           "clip.mov"], tmp, term_after=2.0, limit=15)
        check(rc == 130 and dt < 10, f"the first SIGTERM stops the run while a source "
              f"opens: rc {rc}, {dt:.1f} s: {err.strip()[-300:]}")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
