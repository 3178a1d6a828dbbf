"""gpunet-streams with a live RTSP camera (gst-rtsp-server on loopback) beside a clip:
the camera's frames flow (a live source opened in its own thread joins the pipeline's
clock), and once its server stops answering (SIGSTOP: no close, no end of stream) the
stream is ended by --stall-timeout with its sentence, while the clip's frames are all
classified and the tool exits 1 within a bound derived from the timeout.

    test_streams_rtsp.py GPUNET_STREAMS DATA_DIR
Exits 77 (skipped) without python3-gi's RTSP server or an H.264 encoder."""
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cameras"))
import camlib  # noqa: E402

tool, data = (os.path.abspath(a) for a in sys.argv[1:3])
STALL = 1.5
BOUND = STALL + 25              # after the stop; the margin: two shared, loaded cores
failed = 0


def check(cond, what):
    global failed
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failed += 1


camlib.need_rtsp()
server = camlib.Rtsp(drop=0.0).start()
try:
    with tempfile.TemporaryDirectory() as tmp:
        if subprocess.run(["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=10", "!",
                           "video/x-raw,width=64,height=48,framerate=10/1", "!", "jpegenc",
                           "!", "matroskamux", "!", "filesink", "location=good.mkv"],
                          cwd=tmp, capture_output=True).returncode != 0:
            camlib.skip("jpegenc or matroskamux missing")
        p = subprocess.Popen([tool, "--model", f"{data}/fixtures/tiny-a.json", "--checkpoint",
                              f"{data}/fixtures/tiny-a/tiny-a.pth.tar", "--n-threads", "1",
                              "--stall-timeout", str(STALL), "--stats-interval", "200",
                              "good.mkv", server.url("cam")], cwd=tmp,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines, flowing = [], threading.Event()

        def read():
            for line in p.stdout:
                lines.append(line.rstrip("\n"))
                m = re.match(r"t=\S+ stream 1 \(cam\) stats: in=(\d+) ", line)
                if m and int(m.group(1)) >= 3:
                    flowing.set()

        reader = threading.Thread(target=read)
        reader.start()
        check(flowing.wait(30), f"the camera's frames flow: {lines[-4:]}")
        os.kill(server.p.pid, signal.SIGSTOP)
        t0 = time.monotonic()
        try:
            p.wait(timeout=BOUND)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        dt = time.monotonic() - t0
        reader.join()
        err = p.stderr.read()
        check(p.returncode == 1 and dt < BOUND, f"ends within {BOUND} s of the server's stop "
              f"(stall {STALL} + margin), exit 1: rc {p.returncode}, {dt:.1f} s")
        m = re.search(r"stream 1 \(cam\): no frame for 1.5 s after (\d+) frames and no end "
                      r"of stream .*raise --stall-timeout if it is only slow", err)
        check(m is not None and int(m.group(1)) >= 3,
              f"the stalled camera is named, with its frames and what to do: {err.strip()}")
        final = [l for l in lines if not l.startswith("t=")]
        check("stream 0: 10 frames" in final
              and any(re.match(r"stream 0 \(good\.mkv\) stats: in=10 classified=10 carried=0 "
                               r"skipped=0 failed=0 dropped=0 ", l) for l in final),
              f"the clip's frames are all classified: {final}")
        check("CRITICAL" not in err, f"no GStreamer warning: {err.strip()[-600:]}")
finally:
    if server.p and server.p.poll() is None:
        os.kill(server.p.pid, signal.SIGCONT)
    server.kill()
print(f"{failed} failed")
sys.exit(1 if failed else 0)
